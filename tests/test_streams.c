/* Streams and events: asynchronous execution (query/synchronize), cross-stream ordering by events
 * and wait_stream, the push/pop stack and its implicit waits, set_stream, host functions, event
 * timing, and wf_stream_wrap (rejected on CPU devices; adopted cudaStream_t on CUDA).
 *
 * Kernels are opaque to weft, so tests that read a kernel's result synchronize the kernel's stream
 * before wf_download (which only waits for the buffer's weft-known work). */
#include "harness.h"

#include <stdatomic.h>

#include "test_kernels.h"
#include "test_native.h"

enum { N = 1 << 18, SLOW_MS = 40 };

static wf_status make_buffer(wf_stream *s, wf_buffer **b) {
  return wf_buffer_create(wf_stream_device(s), N * sizeof(float), WF_BUFFER_ZERO, s, b);
}

static wf_status slow_fill(wf_buffer *b, float value, int ms, wf_stream *s) {
  tk_slow_fill_args a = {wf_buffer_ptr(b), value, ms};
  return wf_launch(&tk_slow_fill, N, &a, sizeof a, s);
}

static wf_status copy_kernel(wf_buffer *dst, wf_buffer *src, wf_stream *s) {
  tk_copy_args a = {wf_buffer_ptr(dst), wf_buffer_ptr(src)};
  return wf_launch(&tk_copy, N, &a, sizeof a, s);
}

static float *download_all(wf_buffer *b) {
  float *h = malloc(wf_buffer_size(b));
  if (h && wf_download(h, b, 0, wf_buffer_size(b)) != WF_OK) {
    fprintf(stderr, "  download failed: %s\n", wf_last_error());
    free(h);
    return NULL;
  }
  return h;
}

TEST(create_query_synchronize) {
  wf_stream *s = NULL, *hi = NULL;
  wf_buffer *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_stream_create(th_dev0, -1, &hi)); /* a higher priority is accepted */
  CHECK(wf_stream_device(s) == th_dev0);
  CHECK(s != wf_device_stream(th_dev0));
  CHECK((wf_stream_native(s) != NULL) == th_is_cuda()); /* NULL on CPU devices */
  CHECK_OK(make_buffer(s, &b));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_STATUS(wf_stream_query(s), WF_OK); /* nothing queued */

  CHECK_OK(slow_fill(b, 3.0f, SLOW_MS, s));
  /* the launch returned long before the 40 ms kernel can finish */
  CHECK_STATUS(wf_stream_query(s), WF_NOT_READY);
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_STATUS(wf_stream_query(s), WF_OK);
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 3.0f);
  free(h);

  wf_buffer_destroy(b, s);
  wf_stream_destroy(hi);
  wf_stream_destroy(s);
}

TEST(wait_event_orders_streams) {
  wf_stream *s1 = NULL, *s2 = NULL;
  wf_buffer *a = NULL, *b = NULL;
  wf_event *e = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s1));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s2));
  CHECK_OK(wf_event_create(th_dev0, 0, &e));
  CHECK_STATUS(wf_event_query(e), WF_OK); /* never recorded */
  CHECK_OK(make_buffer(s1, &a));
  CHECK_OK(make_buffer(s2, &b));
  CHECK_OK(wf_stream_synchronize(s2));

  CHECK_OK(slow_fill(a, 7.0f, SLOW_MS, s1));
  CHECK_OK(wf_event_record(e, s1));
  CHECK_STATUS(wf_event_query(e), WF_NOT_READY);
  CHECK_OK(wf_stream_wait_event(s2, e));
  CHECK_OK(copy_kernel(b, a, s2));
  CHECK_OK(wf_stream_synchronize(s2)); /* only s2: the event made it wait for s1 */
  CHECK_STATUS(wf_event_query(e), WF_OK);
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 7.0f);
  free(h);

  /* event_synchronize waits for the recorded point only */
  CHECK_OK(slow_fill(a, 8.0f, SLOW_MS, s1));
  CHECK_OK(wf_event_record(e, s1));
  CHECK_OK(wf_event_synchronize(e));
  CHECK_STATUS(wf_event_query(e), WF_OK);

  /* record with s NULL: the event device's current stream */
  CHECK_OK(wf_event_record(e, NULL));
  CHECK_OK(wf_event_synchronize(e));

  wf_event_destroy(e);
  wf_buffer_destroy(a, s1);
  wf_buffer_destroy(b, s2);
  wf_stream_destroy(s1);
  wf_stream_destroy(s2);
}

/* When the last thing queued on a stream is an event and the event has completed, all queued work
 * is done: wf_stream_query must say WF_OK at once (CUDA's semantics), not a moment later. Repeated
 * because a bookkeeping lag shows only now and then. */
TEST(stream_idle_once_its_last_event_completed) {
  wf_stream *s = NULL;
  wf_buffer *b = NULL;
  wf_event *e = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_event_create(th_dev0, 0, &e));
  CHECK_OK(make_buffer(s, &b));
  int busy = 0;
  for (int i = 0; i < 200; i++) {
    tk_fill_args a = {wf_buffer_ptr(b), (float)i};
    CHECK_OK(wf_launch(&tk_fill, 1024, &a, sizeof a, s));
    CHECK_OK(wf_event_record(e, s));
    CHECK_OK(wf_event_synchronize(e));
    busy += wf_stream_query(s) != WF_OK;
  }
  if (busy)
    TH_FAIL("wf_stream_query returned WF_NOT_READY %d of 200 times after the stream's last "
            "event completed",
            busy);
  wf_event_destroy(e);
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

TEST(wait_stream_orders_streams) {
  wf_stream *s1 = NULL, *s2 = NULL;
  wf_buffer *a = NULL, *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s1));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s2));
  CHECK_OK(make_buffer(s1, &a));
  CHECK_OK(make_buffer(s2, &b));
  CHECK_OK(wf_stream_synchronize(s2));
  CHECK_OK(slow_fill(a, 5.0f, SLOW_MS, s1));
  CHECK_OK(wf_stream_wait_stream(s2, s1));
  CHECK_OK(copy_kernel(b, a, s2));
  CHECK_OK(wf_stream_synchronize(s2));
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 5.0f);
  free(h);
  wf_buffer_destroy(a, s1);
  wf_buffer_destroy(b, s2);
  wf_stream_destroy(s1);
  wf_stream_destroy(s2);
}

TEST(wait_across_devices) {
  NEED_TWO_DEVICES();
  /* a kernel on dev1 writes, a copy kernel on dev0 reads it through the event: host memory on
   * CPU devices, peer memory on GPUs. A kernel's peer access is the caller's to enable (only copies
   * enable it by themselves); skipped where peers cannot reach each other. */
  if (th_is_cuda() && wf_peer_access_enable(th_dev0, th_dev1) != WF_OK)
    SKIP("cuda:0 cannot access cuda:1 directly: %s", wf_last_error());
  CHECK(wf_device_can_access_peer(th_dev0, th_dev1));
  wf_stream *s1 = NULL, *s0 = NULL;
  wf_buffer *a = NULL, *b = NULL;
  wf_event *e = NULL;
  CHECK_OK(wf_stream_create(th_dev1, 0, &s1));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s0));
  CHECK_OK(wf_event_create(th_dev1, 0, &e));
  CHECK_OK(make_buffer(s1, &a));
  CHECK_OK(make_buffer(s0, &b));
  CHECK_OK(wf_stream_synchronize(s0));
  CHECK_OK(slow_fill(a, 9.0f, SLOW_MS, s1));
  CHECK_OK(wf_event_record(e, s1));
  CHECK_OK(wf_stream_wait_event(s0, e)); /* an event of another device */
  CHECK_OK(copy_kernel(b, a, s0));
  CHECK_OK(wf_stream_synchronize(s0));
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 9.0f);
  free(h);
  wf_event_destroy(e);
  wf_buffer_destroy(a, s1);
  wf_buffer_destroy(b, s0);
  wf_stream_destroy(s1);
  wf_stream_destroy(s0);
}

TEST(push_pop_current_stream) {
  wf_stream *base = wf_device_stream(th_dev0), *s = NULL, *t = NULL;
  REQUIRE(base != NULL);
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_stream_create(th_dev0, 0, &t));
  CHECK_OK(wf_stream_push(s));
  CHECK(wf_device_stream(th_dev0) == s);
  CHECK_OK(wf_stream_push(t));
  CHECK(wf_device_stream(th_dev0) == t);
  CHECK_OK(wf_stream_pop(th_dev0));
  CHECK(wf_device_stream(th_dev0) == s);
  CHECK_OK(wf_stream_pop(th_dev0));
  CHECK(wf_device_stream(th_dev0) == base);
  /* other devices' current streams are not affected */
  if (th_dev1) CHECK(wf_device_stream(th_dev1) != s);
  wf_stream_destroy(t);
  wf_stream_destroy(s);
}

TEST(push_waits_for_previous_current_stream) {
  wf_stream *base = wf_device_stream(th_dev0), *s = NULL;
  wf_buffer *a = NULL, *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(make_buffer(base, &a));
  CHECK_OK(make_buffer(s, &b));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(slow_fill(a, 4.0f, SLOW_MS, base)); /* on the old current stream */
  CHECK_OK(wf_stream_push(s));                 /* s waits for it */
  CHECK(wf_device_stream(th_dev0) == s);
  CHECK_OK(copy_kernel(b, a, wf_device_stream(th_dev0)));
  CHECK_OK(wf_stream_synchronize(s)); /* s only, not base */
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 4.0f);
  free(h);

  /* pop: the restored stream waits for the popped one */
  CHECK_OK(slow_fill(a, 6.0f, SLOW_MS, s));
  CHECK_OK(wf_stream_pop(th_dev0));
  CHECK(wf_device_stream(th_dev0) == base);
  CHECK_OK(copy_kernel(b, a, base));
  CHECK_OK(wf_stream_synchronize(base)); /* base only, not s */
  h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 6.0f);
  free(h);

  CHECK_OK(wf_device_synchronize(th_dev0));
  wf_buffer_destroy(a, NULL);
  wf_buffer_destroy(b, NULL);
  wf_stream_destroy(s);
}

TEST(set_stream_replaces_current) {
  wf_stream *base = wf_device_stream(th_dev0), *s = NULL;
  wf_buffer *b = NULL;
  wf_event *e = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_event_create(th_dev0, 0, &e));
  CHECK_OK(make_buffer(s, &b));
  CHECK_OK(wf_device_set_stream(th_dev0, s));
  CHECK(wf_device_stream(th_dev0) == s);
  /* record(e, NULL) goes to the current stream, s: behind the slow kernel */
  CHECK_OK(slow_fill(b, 2.5f, SLOW_MS, s));
  CHECK_OK(wf_event_record(e, NULL));
  CHECK_STATUS(wf_event_query(e), WF_NOT_READY);
  CHECK_OK(wf_event_synchronize(e));
  CHECK_STATUS(wf_stream_query(s), WF_OK);

  CHECK_OK(wf_device_set_stream(th_dev0, NULL)); /* the default one again */
  CHECK(wf_device_stream(th_dev0) == base);
  CHECK_OK(slow_fill(b, 3.5f, 4 * SLOW_MS, s));
  CHECK_OK(wf_event_record(e, NULL)); /* on base now, which does not wait for s */
  CHECK_OK(wf_event_synchronize(e));
  CHECK_STATUS(wf_stream_query(s), WF_NOT_READY); /* s is still in its 160 ms kernel */
  CHECK_OK(wf_stream_synchronize(s));
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 3.5f);
  free(h);
  wf_event_destroy(e);
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

static atomic_int host_calls;
static float host_seen;
static const float *host_probe;

static void on_host(void *user) {
  if (host_probe) host_seen = host_probe[N - 1]; /* CPU devices: the buffer is host memory */
  atomic_fetch_add(&host_calls, 1);
  (void)user;
}

TEST(host_func_runs_after_queued_work) {
  wf_stream *s = NULL;
  wf_buffer *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(make_buffer(s, &b));
  atomic_store(&host_calls, 0);
  host_seen = -1.0f;
  host_probe = th_is_cuda() ? NULL : wf_buffer_ptr(b);
  CHECK_OK(slow_fill(b, 11.0f, SLOW_MS, s));
  CHECK_OK(wf_stream_host_func(s, on_host, NULL));
  CHECK_EQ_INT(atomic_load(&host_calls), 0); /* still behind the 40 ms kernel */
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_EQ_INT(atomic_load(&host_calls), 1);
  if (!th_is_cuda()) CHECK_NEAR(host_seen, 11.0f, 0); /* exact: a stored constant */
  host_probe = NULL;
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

TEST(event_timing) {
  wf_stream *s = NULL;
  wf_buffer *b = NULL;
  wf_event *t0 = NULL, *t1 = NULL, *plain = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(make_buffer(s, &b));
  CHECK_OK(wf_event_create(th_dev0, WF_EVENT_TIMING, &t0));
  CHECK_OK(wf_event_create(th_dev0, WF_EVENT_TIMING, &t1));
  CHECK_OK(wf_event_create(th_dev0, 0, &plain));
  CHECK_OK(wf_event_record(t0, s));
  CHECK_OK(slow_fill(b, 1.0f, SLOW_MS, s));
  CHECK_OK(wf_event_record(t1, s));
  CHECK_OK(wf_event_record(plain, s));
  CHECK_OK(wf_event_synchronize(t1));
  float ms = -1.0f;
  CHECK_OK(wf_event_elapsed_ms(t0, t1, &ms));
  /* The kernel waits at least SLOW_MS (nanosleep never returns early; the CUDA kernel spins on the
   * global timer). 1 ms of slack covers the timer's resolution; the upper bound only catches
   * nonsense such as seconds or microseconds taken for milliseconds. */
  CHECK(ms >= SLOW_MS - 1.0f);
  CHECK(ms < 2000.0f);
  CHECK_OK(wf_event_elapsed_ms(t0, t0, &ms));
  CHECK_NEAR(ms, 0.0, 0.5); /* the same recording: zero up to timer resolution */
  /* both events need WF_EVENT_TIMING */
  CHECK(wf_event_elapsed_ms(t0, plain, &ms) < 0);
  CHECK(wf_event_elapsed_ms(plain, t1, &ms) < 0);
  wf_event_destroy(t0);
  wf_event_destroy(t1);
  wf_event_destroy(plain);
  wf_buffer_destroy(b, s);
  wf_stream_destroy(s);
}

TEST(destroyed_stream_finishes_its_work) {
  /* "Releases the stream once its queued work is done; buffers that remember it keep it alive" */
  wf_stream *s = NULL;
  wf_buffer *b = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(make_buffer(s, &b));
  CHECK_OK(slow_fill(b, 12.0f, SLOW_MS, s));
  CHECK_OK(wf_buffer_touch(b, s)); /* b now remembers s */
  wf_stream_destroy(s);
  float *h = download_all(b); /* waits for b's pending work on the released stream */
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 12.0f);
  free(h);
  wf_buffer_destroy(b, NULL);
}

TEST(wrap_rejected_on_cpu) {
  CPU_ONLY("CUDA devices adopt native streams: wrap_native_stream");
  int fake = 0;
  wf_stream *s = NULL;
  CHECK(wf_stream_wrap(th_dev0, &fake, &s) < 0);
  CHECK(strlen(wf_last_error()) > 0);
  CHECK(s == NULL);
}

TEST(wrap_native_stream) {
  CUDA_ONLY("needs a cudaStream_t");
#ifdef WEFT_HAVE_CUDA
  wf_device_info info;
  CHECK_OK(wf_device_info_get(th_dev0, &info));
  void *native = NULL;
  int err = tn_stream_create(info.ordinal, &native);
  if (err) {
    TH_FAIL("cudaStreamCreateWithFlags: %s", tn_error_string(err));
    return;
  }
  wf_stream *w = NULL;
  wf_buffer *b = NULL;
  CHECK_OK(wf_stream_wrap(th_dev0, native, &w));
  CHECK(wf_stream_native(w) == native);
  CHECK(wf_stream_device(w) == th_dev0);
  CHECK(!wf_stream_is_capturing(w));
  CHECK_OK(make_buffer(w, &b));
  CHECK_OK(slow_fill(b, 13.0f, SLOW_MS, w));
  CHECK_STATUS(wf_stream_query(w), WF_NOT_READY);
  CHECK_OK(wf_stream_synchronize(w));
  /* the host program's kernel on its own stream, ordered after weft's: 13 * 2 + 1 */
  CHECK_EQ_INT(tn_scale_add(wf_buffer_ptr(b), N, 2.0f, 1.0f, native), 0);
  CHECK_EQ_INT(tn_stream_synchronize(native), 0);
  float *h = download_all(b);
  REQUIRE(h);
  CHECK_ALL_EQ(h, N, 27.0f);
  free(h);
  wf_buffer_destroy(b, NULL);
  wf_stream_destroy(w);
  CHECK_OK(wf_device_synchronize(th_dev0));
  /* not owned: the native stream is still alive after wf_stream_destroy */
  CHECK_EQ_INT(tn_stream_synchronize(native), 0);
  CHECK_EQ_INT(tn_stream_destroy(native), 0);
#endif
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(create_query_synchronize),
      TH_TEST(wait_event_orders_streams),
      TH_TEST(stream_idle_once_its_last_event_completed),
      TH_TEST(wait_stream_orders_streams),
      TH_TEST(wait_across_devices),
      TH_TEST(push_pop_current_stream),
      TH_TEST(push_waits_for_previous_current_stream),
      TH_TEST(set_stream_replaces_current),
      TH_TEST(host_func_runs_after_queued_work),
      TH_TEST(event_timing),
      TH_TEST(destroyed_stream_finishes_its_work),
      TH_TEST(wrap_rejected_on_cpu),
      TH_TEST(wrap_native_stream),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
