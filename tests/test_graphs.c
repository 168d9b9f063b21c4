/* Graph capture: record once, replay many times; fork/join onto other streams and the second
 * device; an unjoined fork fails the capture; pinned host copies replay with fresh host data; every
 * call that cannot be captured returns WF_ERR_CAPTURE without spoiling the capture; graphs keep
 * their buffers alive; a host program's cudaStream_t captured together with weft's work.
 *
 * Kernels are opaque to weft, so the tests synchronize the launch stream before reading results.
 * Every value is a small integer, exact in float: comparisons are exact. */
#include "harness.h"

#include "test_kernels.h"
#include "test_native.h"

enum { N = 4096 };
#define NB (N * sizeof(float))

static wf_status add_one(wf_buffer *b, wf_stream *s) {
  tk_add_one_args a = {wf_buffer_ptr(b)};
  return wf_launch(&tk_add_one, N, &a, sizeof a, s);
}

static wf_status axpy(wf_buffer *y, float alpha, wf_buffer *x, wf_stream *s) {
  tk_axpy_args a = {wf_buffer_ptr(y), wf_buffer_ptr(x), alpha};
  return wf_launch(&tk_axpy, N, &a, sizeof a, s);
}

static wf_status scale_add(wf_buffer *b, float mul, float add, wf_stream *s) {
  tk_scale_add_args a = {wf_buffer_ptr(b), mul, add};
  return wf_launch(&tk_scale_add, N, &a, sizeof a, s);
}

/* A failed step inside a capture ends the capture before the test returns, so the thread is not
 * left capturing (which would fail the following tests' allocations). */
#define CAP_OK(s, e)                                                                               \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    if (st_ != WF_OK) {                                                                            \
      TH_FAIL("%s -> %s: %s", #e, wf_status_str(st_), wf_last_error());                            \
      wf_graph *g_ = NULL;                                                                         \
      if (wf_capture_end((s), &g_) == WF_OK) wf_graph_destroy(g_);                                 \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

/* Reads b after synchronizing s and checks every element is `want`. */
#define CHECK_BUFFER(b, want)                                                                      \
  do {                                                                                             \
    float h_[N];                                                                                   \
    CHECK_OK(wf_download(h_, (b), 0, NB));                                                         \
    CHECK_ALL_EQ(h_, N, (want));                                                                   \
  } while (0)

TEST(capture_replay_accumulates) {
  wf_stream *s = NULL;
  wf_buffer *x = NULL, *y = NULL;
  wf_graph *g = NULL, *g2 = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &x));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &y));
  CHECK(!wf_stream_is_capturing(s));

  CHECK_OK(wf_capture_begin(s));
  CHECK(wf_stream_is_capturing(s));
  CHECK(!wf_stream_is_capturing(wf_device_stream(th_dev0)));
  CAP_OK(s, add_one(x, s));       /* x += 1 */
  CAP_OK(s, axpy(y, 2.0f, x, s)); /* y += 2x */
  CHECK_OK(wf_capture_end(s, &g));
  REQUIRE(g != NULL);
  CHECK(!wf_stream_is_capturing(s));
  CHECK_EQ_INT(wf_graph_node_count(g), 2); /* two kernels */

  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 0.0f); /* captured, not run */

  for (int i = 0; i < 100; i++)
    CHECK_OK(wf_graph_launch(g, i % 2 ? s : NULL)); /* NULL: origin */
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 100.0f);
  CHECK_BUFFER(y, 10100.0f); /* 2 * (1 + 2 + ... + 100) */

  /* a second graph with a memset node, launched on another stream */
  wf_stream *other = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &other));
  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, wf_memset(y, 0, 0, NB, s));
  CAP_OK(s, add_one(y, s));
  CHECK_OK(wf_capture_end(s, &g2));
  CHECK_EQ_INT(wf_graph_node_count(g2), 2); /* a memset and a kernel */
  CHECK_OK(wf_stream_wait_stream(other, s));
  for (int i = 0; i < 3; i++)
    CHECK_OK(wf_graph_launch(g2, other));
  CHECK_OK(wf_stream_synchronize(other));
  CHECK_BUFFER(y, 1.0f);

  wf_graph_destroy(g);
  wf_graph_destroy(g2);
  wf_buffer_destroy(x, s);
  wf_buffer_destroy(y, s);
  wf_stream_destroy(other);
  wf_stream_destroy(s);
}

TEST(capture_fork_join_same_device) {
  wf_stream *s = NULL, *s2 = NULL;
  wf_buffer *x = NULL, *y = NULL;
  wf_graph *g = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s2));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &x));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &y));
  CHECK_OK(wf_stream_synchronize(s));

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, add_one(x, s));                /* x += 1 */
  CAP_OK(s, wf_stream_wait_stream(s2, s)); /* fork */
  CHECK(wf_stream_is_capturing(s2));
  CAP_OK(s, scale_add(y, 1.0f, 2.0f, s2)); /* y += 2, beside ... */
  CAP_OK(s, add_one(x, s));                /* ... x += 1 */
  CAP_OK(s, wf_stream_wait_stream(s, s2)); /* join */
  CAP_OK(s, axpy(x, 1.0f, y, s));          /* x += y: needs the join */
  CHECK_OK(wf_capture_end(s, &g));
  REQUIRE(g != NULL);
  CHECK(!wf_stream_is_capturing(s2));
  CHECK_EQ_INT(wf_graph_node_count(g), 4);

  for (int i = 0; i < 10; i++)
    CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  /* launch k: y_k = 2k, x_k = x_{k-1} + 2 + 2k, so x_10 = 20 + 110 */
  CHECK_BUFFER(y, 20.0f);
  CHECK_BUFFER(x, 130.0f);
  wf_graph_destroy(g);
  wf_buffer_destroy(x, s);
  wf_buffer_destroy(y, s);
  wf_stream_destroy(s2);
  wf_stream_destroy(s);
}

/* enable_first: peer access enabled before the capture; else the capture's own cross-device copy is
 * the first between the two devices ("Called automatically by the first copy between two devices"),
 * and enabling it then must not break the capture. */
static void fork_onto_second_device(int enable_first) {
  wf_stream *s = NULL, *t = NULL;
  wf_buffer *x = NULL, *z = NULL, *w = NULL;
  wf_graph *g = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_stream_create(th_dev1, 0, &t));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &x));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &w));
  CHECK_OK(wf_buffer_create(th_dev1, NB, WF_BUFFER_ZERO, t, &z));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(wf_stream_synchronize(t));

  if (enable_first) {
    wf_status st = wf_peer_access_enable(th_dev0, th_dev1);
    CHECK(st == WF_OK || st == WF_ERR_UNSUPPORTED); /* unsupported: copies staged through host */
  }

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, add_one(x, s));
  CAP_OK(s, wf_stream_wait_stream(t, s)); /* fork onto the second device */
  CHECK(wf_stream_is_capturing(t));
  CAP_OK(s, scale_add(z, 1.0f, 3.0f, t)); /* z += 3 on dev1 */
  CAP_OK(s, wf_buffer_touch(z, t));
  CAP_OK(s, wf_stream_wait_stream(s, t)); /* join */
  CAP_OK(s, wf_copy(w, 0, z, 0, NB, s));  /* dev1 -> dev0 inside the graph */
  CHECK_OK(wf_capture_end(s, &g));
  REQUIRE(g != NULL);
  CHECK(!wf_stream_is_capturing(t));

  for (int i = 0; i < 5; i++)
    CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 5.0f);
  CHECK_BUFFER(w, 15.0f);
  CHECK_OK(wf_stream_synchronize(t));
  CHECK_BUFFER(z, 15.0f);
  wf_graph_destroy(g);
  wf_buffer_destroy(x, s);
  wf_buffer_destroy(w, s);
  wf_buffer_destroy(z, t);
  wf_stream_destroy(t);
  wf_stream_destroy(s);
}

/* Runs before any other cross-device work of this program, so the graph's copy is the first. */
TEST(capture_fork_onto_second_device) {
  NEED_TWO_DEVICES();
  fork_onto_second_device(0);
}

TEST(capture_fork_onto_second_device_peer_enabled_first) {
  NEED_TWO_DEVICES();
  fork_onto_second_device(1);
}

/* Buffers used through weft on a forked stream (touch, then a copy on the origin after the join):
 * the capture orders them between the capture's streams. */
TEST(capture_fork_join_with_buffer_ordering) {
  wf_stream *s = NULL, *s2 = NULL;
  wf_buffer *z = NULL, *w = NULL;
  wf_graph *g = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s2));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &w));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s2, &z));
  CHECK_OK(wf_synchronize());

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, wf_stream_wait_stream(s2, s)); /* fork */
  CAP_OK(s, scale_add(z, 1.0f, 3.0f, s2)); /* z += 3 */
  CAP_OK(s, wf_buffer_touch(z, s2));
  CAP_OK(s, wf_stream_wait_stream(s, s2)); /* join */
  CAP_OK(s, wf_copy(w, 0, z, 0, NB, s));
  CHECK_OK(wf_capture_end(s, &g));
  REQUIRE(g != NULL);
  CHECK_EQ_INT(wf_graph_node_count(g), 2);
  for (int i = 0; i < 4; i++)
    CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(w, 12.0f);
  CHECK_BUFFER(z, 12.0f);
  wf_graph_destroy(g);
  wf_buffer_destroy(z, s);
  wf_buffer_destroy(w, s);
  wf_stream_destroy(s2);
  wf_stream_destroy(s);
}

TEST(capture_unjoined_fork_fails) {
  wf_stream *s = NULL, *s2 = NULL;
  wf_buffer *x = NULL, *y = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_stream_create(th_dev0, 0, &s2));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &x));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &y));
  CHECK_OK(wf_stream_synchronize(s));

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, add_one(x, s));
  CAP_OK(s, wf_stream_wait_stream(s2, s)); /* fork ... */
  CAP_OK(s, add_one(y, s2));               /* ... never joined */
  wf_graph *g = NULL;
  CHECK_STATUS(wf_capture_end(s, &g), WF_ERR_CAPTURE);
  CHECK(g == NULL);
  CHECK(strlen(wf_last_error()) > 0);
  CHECK(!wf_stream_is_capturing(s));

  /* the origin stream works normally afterwards, and nothing captured ran */
  CHECK_OK(add_one(x, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 1.0f);
  CHECK_BUFFER(y, 0.0f);
  /* ending a capture that is not there is an error too */
  CHECK(wf_capture_end(s, &g) < 0);
  CHECK(g == NULL);
  wf_buffer_destroy(x, s);
  wf_buffer_destroy(y, s);
  wf_stream_destroy(s2);
  wf_stream_destroy(s);
}

TEST(capture_pinned_host_copies_replay_fresh_data) {
  wf_stream *s = NULL;
  wf_buffer *in = NULL, *out = NULL, *d = NULL;
  wf_graph *g = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_host, NB, WF_BUFFER_PINNED | WF_BUFFER_ZERO, NULL, &in));
  CHECK_OK(wf_buffer_create(th_host, NB, WF_BUFFER_PINNED | WF_BUFFER_ZERO, NULL, &out));
  CHECK_OK(wf_buffer_create(th_dev0, NB, 0, s, &d));
  CHECK_OK(wf_synchronize());

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, wf_copy(d, 0, in, 0, NB, s)); /* pinned host -> device */
  CAP_OK(s, add_one(d, s));
  CAP_OK(s, wf_copy(out, 0, d, 0, NB, s)); /* device -> pinned host */
  CHECK_OK(wf_capture_end(s, &g));
  REQUIRE(g != NULL);
  CHECK_EQ_INT(wf_graph_node_count(g), 3);

  float *hin = wf_buffer_ptr(in);
  const float *hout = wf_buffer_ptr(out);
  for (int round = 1; round <= 5; round++) {
    for (int i = 0; i < N; i++)
      hin[i] = (float)(round * 10000 + i);
    CHECK_OK(wf_graph_launch(g, s));
    CHECK_OK(wf_stream_synchronize(s));
    size_t bad = 0;
    for (int i = 0; i < N; i++)
      bad += hout[i] != (float)(round * 10000 + i + 1);
    if (bad) TH_FAIL("round %d: %zu of %d values wrong (out[0] = %g)", round, bad, N, hout[0]);
  }
  wf_graph_destroy(g);
  wf_buffer_destroy(in, NULL);
  wf_buffer_destroy(out, NULL);
  wf_buffer_destroy(d, s);
  wf_stream_destroy(s);
}

TEST(capture_rejects_uncapturable_calls) {
  wf_stream *s = NULL;
  wf_buffer *d = NULL, *pageable = NULL, *tmp = NULL;
  wf_event *e = NULL;
  wf_graph *g = NULL;
  static float h[N];
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_event_create(th_dev0, 0, &e));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &d));
  CHECK_OK(wf_buffer_create(th_host, NB, WF_BUFFER_ZERO, NULL, &pageable));
  CHECK_OK(wf_synchronize());

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, add_one(d, s));
  wf_clear_error();
  CHECK_STATUS(wf_download(h, d, 0, NB), WF_ERR_CAPTURE);
  if (!th_contains(wf_last_error(), "pinned"))
    TH_FAIL("wf_download's message should point to a pinned buffer and wf_copy: \"%s\"",
            wf_last_error());
  wf_clear_error();
  CHECK_STATUS(wf_stream_synchronize(s), WF_ERR_CAPTURE);
  CHECK(strlen(wf_last_error()) > 0);
  wf_clear_error();
  CHECK_STATUS(wf_device_synchronize(th_dev0), WF_ERR_CAPTURE);
  CHECK(strlen(wf_last_error()) > 0);
  wf_clear_error();
  CHECK_STATUS(wf_synchronize(), WF_ERR_CAPTURE);
  CHECK(strlen(wf_last_error()) > 0);
  CAP_OK(s, wf_event_record(e, s));
  wf_clear_error();
  CHECK_STATUS(wf_event_synchronize(e), WF_ERR_CAPTURE);
  CHECK(strlen(wf_last_error()) > 0);
  if (th_is_cuda()) {
    /* pageable host memory cannot take part in a CUDA graph; neither can upload's caller memory */
    CHECK_STATUS(wf_copy(d, 0, pageable, 0, NB, s), WF_ERR_CAPTURE);
    CHECK(strlen(wf_last_error()) > 0);
    CHECK_STATUS(wf_copy(pageable, 0, d, 0, NB, s), WF_ERR_CAPTURE);
    CHECK_STATUS(wf_upload(d, 0, h, NB, s), WF_ERR_CAPTURE);
    CHECK(strlen(wf_last_error()) > 0);
    CHECK_STATUS(wf_buffer_create(th_host, NB, WF_BUFFER_PINNED, NULL, &tmp), WF_ERR_CAPTURE);
    CHECK(tmp == NULL);
  }
  CHECK(wf_stream_is_capturing(s)); /* the capture survived */
  CAP_OK(s, add_one(d, s));
  CHECK_OK(wf_capture_end(s, &g));
  REQUIRE(g != NULL);
  CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(d, 4.0f); /* two kernels per launch, two launches; nothing else ran */
  wf_graph_destroy(g);
  wf_event_destroy(e);
  wf_buffer_destroy(d, s);
  wf_buffer_destroy(pageable, NULL);
  wf_stream_destroy(s);
}

TEST(graph_keeps_its_buffers_alive) {
  enum { BIG = 4 << 20 }; /* large enough that a freed block goes back to the system */
  wf_stream *s = NULL;
  wf_buffer *a = NULL, *k = NULL, *c = NULL, *c2 = NULL;
  wf_graph *g = NULL;
  float *in = malloc(BIG * sizeof(float)), *out = malloc(BIG * sizeof(float));
  REQUIRE(in && out);
  for (int i = 0; i < BIG; i++)
    in[i] = (float)(i & 0xFFFF);
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, BIG * sizeof(float), 0, s, &a));
  CHECK_OK(wf_buffer_create(th_dev0, BIG * sizeof(float), 0, s, &k));
  CHECK_OK(wf_buffer_create(th_dev0, BIG * sizeof(float), WF_BUFFER_ZERO, s, &c));
  CHECK_OK(wf_buffer_create(th_dev0, BIG * sizeof(float), WF_BUFFER_ZERO, s, &c2));
  CHECK_OK(wf_upload(a, 0, in, BIG * sizeof(float), s));
  CHECK_OK(wf_upload(k, 0, in, BIG * sizeof(float), s));
  CHECK_OK(wf_stream_synchronize(s));

  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, wf_copy(c, 0, a, 0, BIG * sizeof(float), s)); /* a copy references a */
  tk_copy_args cp = {wf_buffer_ptr(c2), wf_buffer_ptr(k)};
  CAP_OK(s, wf_launch(&tk_copy, BIG, &cp, sizeof cp, s)); /* a kernel reads k ... */
  CAP_OK(s, wf_buffer_touch(k, s));                       /* ... and touch says so */
  CHECK_OK(wf_capture_end(s, &g));
  wf_buffer_destroy(a, NULL); /* the caller lets go; the graph still holds them */
  wf_buffer_destroy(k, NULL);
  CHECK_OK(wf_synchronize());
  for (int i = 0; i < 3; i++)
    CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_OK(wf_download(out, c, 0, BIG * sizeof(float)));
  CHECK(memcmp(in, out, BIG * sizeof(float)) == 0);
  CHECK_OK(wf_download(out, c2, 0, BIG * sizeof(float)));
  CHECK(memcmp(in, out, BIG * sizeof(float)) == 0);
  wf_graph_destroy(g); /* frees a and k now */
  wf_buffer_destroy(c, s);
  wf_buffer_destroy(c2, s);
  wf_stream_destroy(s);
  free(in);
  free(out);
}

/* A host program's own cudaStream_t, wrapped: its plain kernels and weft's in one graph. */
TEST(capture_external_stream) {
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
  wf_buffer *x = NULL;
  wf_graph *g = NULL;
  CHECK_OK(wf_stream_wrap(th_dev0, native, &w));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, w, &x));
  CHECK_OK(wf_stream_synchronize(w));

  CHECK_OK(wf_capture_begin(w));
  CHECK(wf_stream_is_capturing(w));
  CHECK_EQ_INT(tn_scale_add(wf_buffer_ptr(x), N, 2.0f, 0.0f, native), 0); /* host's: x = 2x */
  CAP_OK(w, add_one(x, w));                                               /* weft's: x += 1 */
  CHECK_OK(wf_capture_end(w, &g));
  REQUIRE(g != NULL);
  CHECK(wf_graph_node_count(g) >= 1);
  for (int i = 0; i < 20; i++)
    CHECK_OK(wf_graph_launch(g, w));
  CHECK_OK(wf_stream_synchronize(w));
  CHECK_BUFFER(x, 1048575.0f); /* x -> 2x + 1 twenty times from 0: 2^20 - 1; order matters */
  wf_graph_destroy(g);

  /* the host program's own capture of the native stream is seen through the wrapper, and weft
   * refuses to synchronize it rather than break the host's capture */
  CHECK_EQ_INT(tn_capture_begin(native), 0);
  CHECK(wf_stream_is_capturing(w));
  CHECK_STATUS(wf_stream_synchronize(w), WF_ERR_CAPTURE);
  CHECK_EQ_INT(tn_capture_discard(native), 0);
  CHECK(!wf_stream_is_capturing(w));

  wf_buffer_destroy(x, w);
  wf_stream_destroy(w);
  CHECK_EQ_INT(tn_stream_synchronize(native), 0);
  CHECK_EQ_INT(tn_stream_destroy(native), 0);
#endif
}

/* wf_capture_end_update: a graph re-captured with other parameters and other buffers (the same
 * shape) replaces the old one and runs the new work; a different shape replaces it too. */
TEST(capture_update_replaces_the_graph) {
  wf_stream *s = NULL;
  wf_buffer *x = NULL, *y = NULL;
  wf_graph *g = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &x));
  CHECK_OK(wf_buffer_create(th_dev0, NB, WF_BUFFER_ZERO, s, &y));
  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, scale_add(x, 1.0f, 1.0f, s)); /* x += 1 */
  CHECK_OK(wf_capture_end_update(s, &g)); /* from nothing: a new graph */
  REQUIRE(g != NULL);
  CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 1.0f);
  /* the same shape: another buffer, other constants */
  wf_graph *before = g;
  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, scale_add(y, 2.0f, 5.0f, s)); /* y = 2y + 5 */
  CHECK_OK(wf_capture_end_update(s, &g));
  CHECK(g != NULL && g != before);
  CHECK_EQ_INT(wf_graph_node_count(g), 1);
  for (int i = 0; i < 2; i++)
    CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 1.0f);  /* the old work no longer runs */
  CHECK_BUFFER(y, 15.0f); /* 0 -> 5 -> 15 */
  /* another shape: two kernels */
  CHECK_OK(wf_capture_begin(s));
  CAP_OK(s, add_one(x, s));
  CAP_OK(s, axpy(y, 1.0f, x, s));
  CHECK_OK(wf_capture_end_update(s, &g));
  CHECK_EQ_INT(wf_graph_node_count(g), 2);
  CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_stream_synchronize(s));
  CHECK_BUFFER(x, 2.0f);
  CHECK_BUFFER(y, 17.0f);
  /* an update on another stream than the graph's is refused, the graph kept */
  wf_stream *other = NULL;
  CHECK_OK(wf_stream_create(th_dev0, 0, &other));
  CHECK_OK(wf_capture_begin(other));
  CAP_OK(other, add_one(x, other));
  wf_graph *kept = g;
  CHECK_STATUS(wf_capture_end_update(other, &g), WF_ERR_INVALID);
  CHECK(g == kept);
  wf_graph *g2 = NULL;
  CHECK_OK(wf_capture_end(other, &g2));
  wf_graph_destroy(g2);
  wf_graph_destroy(g);
  wf_buffer_destroy(x, s);
  wf_buffer_destroy(y, s);
  wf_stream_destroy(other);
  wf_stream_destroy(s);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(capture_replay_accumulates),
      TH_TEST(capture_update_replaces_the_graph),
      TH_TEST(capture_fork_join_same_device),
      TH_TEST(capture_unjoined_fork_fails),
      TH_TEST(capture_pinned_host_copies_replay_fresh_data),
      TH_TEST(capture_rejects_uncapturable_calls),
      TH_TEST(graph_keeps_its_buffers_alive),
      TH_TEST(capture_external_stream),
      TH_TEST(capture_fork_join_with_buffer_ordering),
      TH_TEST(capture_fork_onto_second_device),
      TH_TEST(capture_fork_onto_second_device_peer_enabled_first),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
