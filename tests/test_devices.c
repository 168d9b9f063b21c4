/* Devices: enumeration order, lookup by name, the default device, device facts, peer access,
 * runtime facts, wf_init options (cpu_devices, no_cuda, cpu_memory_limit) and CPU devices added
 * to a running runtime (wf_cpu_devices_ensure). */
#include "harness.h" /* first: it sets _POSIX_C_SOURCE */

#include <pthread.h>
#include <stdatomic.h>

#include "test_kernels.h"

static int count_cuda(void) {
  int n = 0;
  for (int i = 0; i < wf_device_count(); i++)
    n += wf_device_is_cuda(wf_device_at(i));
  return n;
}

TEST(enumeration_cpu_first_then_cuda) {
  int n = wf_device_count();
  CHECK(n >= 4);
  for (int i = 0; i < 4 && i < n; i++) {
    wf_device *d = wf_device_at(i);
    REQUIRE(d != NULL);
    char want[16];
    snprintf(want, sizeof want, "cpu:%d", i);
    if (strcmp(wf_device_name(d), want) != 0)
      TH_FAIL("device %d is %s, expected %s", i, wf_device_name(d), want);
    CHECK(!wf_device_is_cuda(d));
  }
  for (int i = 4; i < n; i++) {
    wf_device *d = wf_device_at(i);
    REQUIRE(d != NULL);
    char want[16];
    snprintf(want, sizeof want, "cuda:%d", i - 4);
    if (strcmp(wf_device_name(d), want) != 0)
      TH_FAIL("device %d is %s, expected %s", i, wf_device_name(d), want);
    CHECK(wf_device_is_cuda(d));
  }
  CHECK(wf_device_at(n) == NULL);
  CHECK(wf_device_at(-1) == NULL);
  CHECK(wf_device_at(1000) == NULL);
}

TEST(lookup_by_name) {
  wf_device *d = NULL;
  CHECK_OK(wf_device_get("cpu", &d));
  CHECK(d == wf_device_at(0));
  CHECK_OK(wf_device_get("cpu:2", &d));
  CHECK(d == wf_device_at(2));
  CHECK(strcmp(wf_device_name(d), "cpu:2") == 0);
  if (th_is_cuda()) {
    wf_device *c0 = NULL;
    CHECK_OK(wf_device_get("cuda", &d));
    CHECK_OK(wf_device_get("cuda:0", &c0));
    CHECK(d == c0);
    CHECK(d == wf_device_at(4));
    CHECK(wf_device_is_cuda(d));
    CHECK(strcmp(wf_device_name(d), "cuda:0") == 0);
    CHECK(th_dev0 == c0);
  } else {
    CHECK(th_dev0 == wf_device_at(0));
    CHECK(th_dev1 == wf_device_at(1));
  }
}

TEST(default_device) {
  wf_device *d = wf_device_default();
  REQUIRE(d != NULL);
  wf_device *cuda = NULL;
  if (wf_device_get("cuda", &cuda) == WF_OK)
    CHECK(d == cuda); /* cuda:0 when there is one */
  else
    CHECK(d == wf_device_at(0)); /* else cpu:0 */
  wf_clear_error();
}

TEST(device_info) {
  for (int i = 0; i < wf_device_count(); i++) {
    wf_device *d = wf_device_at(i);
    wf_device_info info;
    memset(&info, 0x7f, sizeof info);
    CHECK_OK(wf_device_info_get(d, &info));
    CHECK(strcmp(info.name, wf_device_name(d)) == 0);
    CHECK(info.is_cuda == wf_device_is_cuda(d));
    CHECK(strlen(info.product) > 0 && strlen(info.product) < sizeof info.product);
    CHECK(info.total_memory > 0);
    CHECK(info.free_memory <= info.total_memory);
    CHECK(info.multiprocessors > 0);
    if (info.is_cuda) {
      CHECK_EQ_INT(info.ordinal, i - (wf_device_count() - count_cuda()));
      CHECK(info.cc_major >= 3);
      CHECK(info.pci_bus >= 0);
    } else {
      CHECK_EQ_INT(info.ordinal, i);
      CHECK_EQ_INT(info.pci_bus, -1);
    }
  }
}

TEST(device_info_counts_allocations) {
  enum { BYTES = 8 << 20 };
  wf_device_info before, with;
  CHECK_OK(wf_device_synchronize(th_dev0));
  CHECK_OK(wf_device_info_get(th_dev0, &before));
  wf_buffer *b = NULL;
  CHECK_OK(wf_buffer_create(th_dev0, BYTES, 0, NULL, &b));
  CHECK_OK(wf_device_synchronize(th_dev0));
  CHECK_OK(wf_device_info_get(th_dev0, &with));
  /* "bytes weft holds on this device now": at least the new buffer more than before */
  CHECK(with.allocated >= before.allocated + BYTES);
  wf_buffer_destroy(b, NULL);
  CHECK_OK(wf_device_synchronize(th_dev0));
}

TEST(peer_access_of_self) {
  CHECK(wf_device_can_access_peer(th_dev0, th_dev0));
  CHECK(wf_device_can_access_peer(th_host, th_host));
  if (th_dev1) CHECK(wf_device_can_access_peer(th_dev1, th_dev1));
  if (th_is_cuda() && th_dev1) {
    /* WF_OK, or WF_ERR_UNSUPPORTED when the hardware cannot; then access stays false */
    wf_status st = wf_peer_access_enable(th_dev0, th_dev1);
    CHECK(st == WF_OK || st == WF_ERR_UNSUPPORTED);
    if (st == WF_OK)
      CHECK(wf_device_can_access_peer(th_dev0, th_dev1));
    else
      CHECK(!wf_device_can_access_peer(th_dev0, th_dev1));
  }
}

TEST(runtime_info) {
  wf_runtime_info info;
  memset(&info, 0x7f, sizeof info);
  wf_runtime_info_get(&info);
  CHECK(memchr(info.cuda_status, 0, sizeof info.cuda_status) != NULL);
  CHECK(memchr(info.cuda_architectures, 0, sizeof info.cuda_architectures) != NULL);
#ifdef WEFT_HAVE_CUDA
  CHECK(info.cuda_compiled);
#ifdef WEFT_TEST_CUDA_ARCH0
  if (!strstr(info.cuda_architectures, WEFT_TEST_CUDA_ARCH0))
    TH_FAIL("cuda_architectures \"%s\" lacks %s", info.cuda_architectures, WEFT_TEST_CUDA_ARCH0);
#endif
#else
  CHECK(!info.cuda_compiled);
  CHECK_EQ_INT(info.cuda_devices_found, 0);
#endif
  int usable = count_cuda();
  if (usable > 0) {
    CHECK(info.cuda_devices_found >= usable);
    CHECK(info.cuda_driver_version > 0);
    CHECK(info.cuda_runtime_version > 0);
  } else {
    /* "why no CUDA device is usable" */
    if (strlen(info.cuda_status) == 0) TH_FAIL("no usable CUDA device but cuda_status is empty");
  }
}

TEST(current_stream_belongs_to_device) {
  for (int i = 0; i < wf_device_count(); i++) {
    wf_device *d = wf_device_at(i);
    wf_stream *s = wf_device_stream(d);
    REQUIRE(s != NULL);
    CHECK(wf_stream_device(s) == d);
    CHECK(wf_device_is_cuda(d) == (wf_stream_native(s) != NULL));
    CHECK_OK(wf_device_synchronize(d));
  }
  CHECK_OK(wf_synchronize());
}

TEST(init_options) {
  wf_shutdown();
  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 2, .no_cuda = true}));
  CHECK_EQ_INT(wf_device_count(), 2);
  CHECK_EQ_INT(count_cuda(), 0);
  wf_device *d = NULL;
  CHECK_STATUS(wf_device_get("cuda", &d), WF_ERR_DEVICE);
  CHECK_STATUS(wf_device_get("cpu:2", &d), WF_ERR_DEVICE);
  CHECK(wf_device_default() == wf_device_at(0));
  wf_shutdown();

  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 16}));
  int cpus = wf_device_count() - count_cuda();
  CHECK_EQ_INT(cpus, 16);
  CHECK_OK(wf_device_get("cpu:15", &d));
  CHECK(strcmp(wf_device_name(d), "cpu:15") == 0);
  wf_shutdown();
  CHECK_OK(th_init());
}

/* A CPU kernel that notes which thread ran each element: every piece sleeps 1 ms first, so the
 * pool's threads wake and take pieces however loaded the machine is. */
typedef struct who_args {
  uint32_t *seen;   /* per element: times run */
  uint32_t *thread; /* per element: the running thread's number */
} who_args;
static _Atomic uint32_t who_next = 1;
static _Thread_local uint32_t who_me;
/* The running thread's number, after sleeping 1 ms (so the pool's threads take pieces). */
static uint32_t who_am_i_after_a_nap(void) {
  if (!who_me) who_me = atomic_fetch_add(&who_next, 1u);
  struct timespec t = {0, 1000000};
  nanosleep(&t, NULL);
  return who_me;
}
static void who_cpu(const void *args, size_t begin, size_t end) {
  const who_args *a = args;
  who_am_i_after_a_nap();
  for (size_t i = begin; i < end; i++) {
    a->seen[i]++;
    a->thread[i] = who_me;
  }
}

TEST(cpu_threads_split_kernels) {
  /* wf_init_desc.cpu_threads: a kernel with a grain runs in pieces on several threads, each
     element exactly once; grain 0 runs on one thread; 1 thread runs everything on the stream's */
  enum { N = 1 << 14 };
  const int counts[2] = {3, 1};
  for (int c = 0; c < 2; c++) {
    wf_shutdown();
    CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 1, .no_cuda = true, .cpu_threads = counts[c]}));
    wf_device *cpu = wf_device_at(0);
    wf_stream *s = wf_device_stream(cpu);
    for (int grained = 0; grained < 2; grained++) {
      wf_buffer *b = NULL;
      CHECK_OK(wf_buffer_create(cpu, 2 * N * sizeof(uint32_t), WF_BUFFER_ZERO, s, &b));
      uint32_t *p = wf_buffer_ptr(b);
      who_args a = {p, p + N};
      const wf_kernel k = {"who", who_cpu, NULL, grained ? 256 : 0};
      CHECK_OK(wf_launch(&k, N, &a, sizeof a, s));
      CHECK_OK(wf_stream_synchronize(s));
      uint32_t first = p[N], distinct = 1, once = 0;
      for (int i = 0; i < N; i++) {
        once += p[i] == 1u;
        if (p[N + i] != first) distinct = 2;
      }
      CHECK_EQ_INT(once, N);
      CHECK_EQ_INT(distinct, grained && counts[c] > 1 ? 2 : 1);
      wf_buffer_destroy(b, s);
    }
  }
  wf_shutdown();
  CHECK_STATUS(wf_init(&(wf_init_desc){.cpu_threads = -1}), WF_ERR_INVALID);
  CHECK(strstr(wf_last_error(), "cpu_threads") != NULL);
  CHECK_OK(th_init());
}

/* A one-launch kernel (grain 0) of stages split with wf_cpu_parallel_for: stage k writes
 * x[i] = x[i] + x[n - 1 - i] of stage k - 1, so a stage that started before the one before it
 * ended would read a half-updated array. Each stage's pieces sleep (as who_cpu) so the pool's
 * threads take part. */
typedef struct stages_args {
  uint64_t *x, *y; /* the state, and the next stage's */
  uint32_t *thread;
  size_t n;
  int stages;
} stages_args;
static void stage_piece(const void *args, size_t begin, size_t end) {
  const stages_args *a = args;
  who_am_i_after_a_nap();
  for (size_t i = begin; i < end; i++) {
    a->y[i] = a->x[i] + 3u * a->x[a->n - 1 - i] + 1u;
    a->thread[i] = who_me;
  }
}
static void stages_cpu(const void *args, size_t begin, size_t end) {
  const stages_args *a = args;
  (void)begin, (void)end;
  stages_args st = *a;
  for (int k = 0; k < a->stages; k++) {
    wf_cpu_parallel_for(stage_piece, &st, st.n, 64);
    uint64_t *t = st.x;
    st.x = st.y, st.y = t;
  }
}

TEST(cpu_parallel_for_stages) {
  /* the stages of a one-launch kernel on 3 threads: the same bits as on 1, several threads took
     part, and the result is the serial loop's */
  enum { N = 4096, STAGES = 9 };
  static uint64_t x0[N], ref[2][N];
  for (int i = 0; i < N; i++)
    x0[i] = ref[0][i] = (uint64_t)i * 2654435761u;
  for (int k = 0; k < STAGES; k++)
    for (int i = 0; i < N; i++)
      ref[(k + 1) & 1][i] = ref[k & 1][i] + 3u * ref[k & 1][N - 1 - i] + 1u;
  const int counts[2] = {3, 1};
  for (int c = 0; c < 2; c++) {
    wf_shutdown();
    CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 1, .no_cuda = true, .cpu_threads = counts[c]}));
    wf_device *cpu = wf_device_at(0);
    wf_stream *s = wf_device_stream(cpu);
    wf_buffer *b = NULL;
    size_t bytes = 2 * N * sizeof(uint64_t) + N * sizeof(uint32_t);
    CHECK_OK(wf_buffer_create(cpu, bytes, WF_BUFFER_ZERO, s, &b));
    CHECK_OK(wf_upload(b, 0, x0, N * sizeof(uint64_t), s));
    uint64_t *p = wf_buffer_ptr(b);
    stages_args a = {p, p + N, (uint32_t *)(p + 2 * N), N, STAGES};
    const wf_kernel k = {"stages", stages_cpu, NULL, 0};
    CHECK_OK(wf_launch(&k, 1, &a, sizeof a, s));
    CHECK_OK(wf_stream_synchronize(s));
    CHECK(memcmp(p + (STAGES & 1) * N, ref[STAGES & 1], N * sizeof(uint64_t)) == 0);
    uint32_t distinct = 1;
    for (int i = 1; i < N; i++)
      if (a.thread[i] != a.thread[0]) distinct = 2;
    CHECK_EQ_INT(distinct, counts[c] > 1 ? 2 : 1);
    wf_buffer_destroy(b, s);
  }
  wf_shutdown();
  CHECK_OK(th_init());
}

TEST(cpu_memory_limit) {
  wf_shutdown();
  const size_t limit = (size_t)1 << 20;
  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 2, .cpu_memory_limit = limit}));
  wf_device *cpu = wf_device_at(0);
  wf_device_info info;
  CHECK_OK(wf_device_info_get(cpu, &info));
  CHECK_EQ_INT(info.total_memory, limit); /* the cap is what a CPU device reports as its memory */
  wf_buffer *half = NULL, *more = NULL;
  CHECK_OK(wf_buffer_create(cpu, limit / 2, 0, NULL, &half));
  /* the cap is per device and counts what weft holds: half is held, so limit/2 + 1 does not fit */
  CHECK_ERROR(wf_buffer_create(cpu, limit / 2 + 1, 0, NULL, &more), WF_ERR_OUT_OF_MEMORY,
              "cpu_memory_limit", "cpu:0");
  CHECK(more == NULL);
  CHECK_OK(wf_buffer_create(wf_device_at(1), limit / 2 + 1, 0, NULL, &more));
  wf_buffer_destroy(more, NULL);
  wf_buffer_destroy(half, NULL);
  wf_shutdown();
  CHECK_OK(th_init());
}

/* Reads the device table while the main thread adds devices: every device a reader sees is
 * complete (its name matches its ordinal) and a pointer never changes once seen. */
typedef struct table_reader {
  atomic_bool stop;
  wf_device *seen[32];
  atomic_int reads;
  int bad;
} table_reader;

/* Waits (up to 10 s) until the reader has gone over the table `more` more times. */
static void reader_wait(table_reader *r, int more) {
  int until = atomic_load(&r->reads) + more;
  for (int i = 0; i < 10000 && atomic_load(&r->reads) < until; i++)
    th_sleep_ms(1);
}

static void *read_table(void *arg) {
  table_reader *r = arg;
  while (!atomic_load(&r->stop)) {
    int n = wf_device_count();
    for (int i = 0; i < n && i < 32; i++) {
      wf_device *d = wf_device_at(i);
      char want[16];
      snprintf(want, sizeof want, "%s:%d", wf_device_is_cuda(d) ? "cuda" : "cpu",
               wf_device_ordinal(d));
      if (!d || strcmp(wf_device_name(d), want) != 0 || (r->seen[i] && r->seen[i] != d)) r->bad++;
      r->seen[i] = d;
    }
    wf_device *c = NULL;
    if (wf_device_get("cpu:3", &c) == WF_OK && strcmp(wf_device_name(c), "cpu:3") != 0) r->bad++;
    atomic_fetch_add(&r->reads, 1);
  }
  return NULL;
}

TEST(cpu_devices_added_at_runtime) {
  wf_shutdown();
  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 1}));
  int n0 = wf_device_count();
  wf_device *cpu0 = wf_device_at(0), *last = wf_device_at(n0 - 1), *d3 = NULL;
  CHECK_ERROR(wf_device_get("cpu:3", &d3), WF_ERR_DEVICE, "no device 'cpu:3'",
              "wf_cpu_devices_ensure");
  /* work in flight on cpu:0 (and a stream made before) while devices are added */
  const size_t n = 1 << 16;
  wf_stream *s0 = NULL;
  wf_buffer *b0 = NULL;
  CHECK_OK(wf_stream_create(cpu0, 0, &s0));
  CHECK_OK(wf_buffer_create(cpu0, n * sizeof(float), 0, s0, &b0));
  tk_iota_args iota = {wf_buffer_ptr(b0), 1.0f, 1.0f};
  CHECK_OK(wf_launch(&tk_iota, n, &iota, sizeof iota, s0));

  table_reader reader = {0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, read_table, &reader) == 0);
  reader_wait(&reader, 1);
  CHECK_OK(wf_cpu_devices_ensure(2));
  reader_wait(&reader, 1);
  CHECK_OK(wf_cpu_devices_ensure(4));
  reader_wait(&reader, 2); /* one pass that began after cpu:3 was added */
  atomic_store(&reader.stop, true);
  pthread_join(t, NULL);
  CHECK(reader.seen[n0 + 2] != NULL && reader.seen[n0 + 2] == wf_device_at(n0 + 2));
  CHECK_EQ_INT(reader.bad, 0);

  /* appended after what was there: nothing handed out before moved */
  CHECK_EQ_INT(wf_device_count(), n0 + 3);
  CHECK(wf_device_at(0) == cpu0);
  CHECK(wf_device_at(n0 - 1) == last);
  CHECK(strcmp(wf_device_name(cpu0), "cpu:0") == 0);
  CHECK_OK(wf_device_get("cpu:3", &d3));
  CHECK(d3 == wf_device_at(n0 + 2));
  CHECK_EQ_INT(wf_device_ordinal(d3), 3);
  CHECK(!wf_device_is_cuda(d3));
  /* asking for fewer, or as many, changes nothing; outside 1..16 is an error */
  CHECK_OK(wf_cpu_devices_ensure(3));
  CHECK_OK(wf_cpu_devices_ensure(4));
  CHECK_EQ_INT(wf_device_count(), n0 + 3);
  CHECK_ERROR(wf_cpu_devices_ensure(0), WF_ERR_INVALID, "1 to 16");
  CHECK_ERROR(wf_cpu_devices_ensure(17), WF_ERR_INVALID, "1 to 16");

  /* cpu:3 works: its own stream and buffer, a kernel, copies both ways with cpu:0 */
  wf_stream *s3 = NULL;
  wf_buffer *b3 = NULL;
  float *host = malloc(n * sizeof *host);
  REQUIRE(host != NULL);
  CHECK_OK(wf_stream_create(d3, 0, &s3));
  CHECK_OK(wf_buffer_create(d3, n * sizeof(float), 0, s3, &b3));
  CHECK_OK(wf_copy(b3, 0, b0, 0, n * sizeof(float), s3)); /* waits for the iota on s0 */
  tk_scale_add_args sa = {wf_buffer_ptr(b3), 2.0f, 0.5f};
  CHECK_OK(wf_launch(&tk_scale_add, n, &sa, sizeof sa, s3));
  CHECK_OK(wf_copy(b0, 0, b3, 0, n * sizeof(float), s0)); /* waits for the kernel on s3 */
  CHECK_OK(wf_download(host, b0, 0, n * sizeof(float)));
  /* exact: (1 + i) * 2 + 0.5 for i < 2^16 is a float with 18 significant bits at most */
  int wrong = 0;
  for (size_t i = 0; i < n; i++)
    wrong += host[i] != (float)(1 + i) * 2.0f + 0.5f;
  CHECK_EQ_INT(wrong, 0);
  CHECK(wf_stream_device(wf_device_stream(d3)) == d3);
  CHECK_OK(wf_device_synchronize(d3));
  CHECK_OK(wf_synchronize());
  free(host);
  wf_buffer_destroy(b3, s3);
  wf_buffer_destroy(b0, s0);
  wf_stream_destroy(s3);
  wf_stream_destroy(s0);

  /* a restart begins again from wf_init_desc.cpu_devices */
  wf_shutdown();
  CHECK_OK(wf_init(&(wf_init_desc){.cpu_devices = 1}));
  CHECK_STATUS(wf_device_get("cpu:1", &d3), WF_ERR_DEVICE);
  wf_clear_error();
  wf_shutdown();
  CHECK_OK(th_init());
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(enumeration_cpu_first_then_cuda),
      TH_TEST(lookup_by_name),
      TH_TEST(default_device),
      TH_TEST(device_info),
      TH_TEST(device_info_counts_allocations),
      TH_TEST(peer_access_of_self),
      TH_TEST(runtime_info),
      TH_TEST(current_stream_belongs_to_device),
      TH_TEST(init_options),
      TH_TEST(cpu_memory_limit),
      TH_TEST(cpu_threads_split_kernels),
      TH_TEST(cpu_parallel_for_stages),
      TH_TEST(cpu_devices_added_at_runtime),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
