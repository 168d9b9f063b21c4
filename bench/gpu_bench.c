/* `weft bench gpu`: what the GPU layer costs and delivers on this machine.
 *
 * Four sections, each on the device given by --device (default: the default device):
 *   launch    K tiny kernels issued one wf_launch at a time vs. the same K captured into a graph
 *             and replayed; device time per kernel from timing events, host time per call.
 *   transfer  host<->device bandwidth: pinned host buffers with wf_copy timed by events on the
 *             copy stream, pageable memory with wf_upload/wf_download and wf_copy of a wrapped
 *             buffer timed on the host (those copies are synchronous by design).
 *   copy      device-to-device copies within each device (read + write bytes: the "measured
 *             memory bandwidth" other benchmarks compare against) and the peer-copy matrix between
 *             CUDA devices.
 *   ring      a 3-slot transfer ring fed by a copy stream while a busy kernel runs on a compute
 *             stream; the host consumes with wf_ring_latest. Push throughput, frames delivered and
 *             dropped, and whether the kernel got slower (the compute stream must never wait).
 *
 * Every measurement is warmed up first and repeated; the median is reported. Every call is
 * checked; the first error prints wf_last_error() and the program exits with 1. Data moved by the
 * benchmark is checked afterwards, so a fast but wrong copy does not pass as a result.
 */
#define _POSIX_C_SOURCE 200809L

#include "gpu_bench.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

#include "bench_kernels.h"
#include "bench_util.h"
#include "weft/weft.h"

#define MIB      ((size_t)1 << 20)
#define GIB      ((size_t)1 << 30)
#define MAX_ROWS 256
#define MAX_DEVS 32
#define BUSY_N   256

typedef struct bench_opts {
  const char *device;  /* NULL: the default device */
  const char *csv;     /* NULL: no CSV */
  const char *machine; /* NULL: hostname + product */
  bool quick;
} bench_opts;

typedef struct bench_ctx {
  bench_opts o;
  FILE *out;
  wf_device *dev;
  wf_device *host; /* cpu:0, where host buffers live */
  wf_device_info info;
  int reps;          /* repetitions of each timing (median reported) */
  int launches;      /* kernels per launch-cost repetition */
  size_t xfer_bytes; /* host<->device, device<->device and peer transfers */
  size_t ring_bytes; /* one ring slot */
  int ring_pushes;
  double pinned_d2h_gbs; /* from the transfer section, sizes the ring's busy kernel */
  bench_row rows[MAX_ROWS];
  int n_rows;
} bench_ctx;

/* ---- helpers ----------------------------------------------------------------------------------
 */

/* Runs a weft call; on an error says which call failed and why, then jumps to the section's
 * cleanup. WF_NOT_READY is not an error. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    wf_status check_st_ = (call);                                                                  \
    if (check_st_ < 0) {                                                                           \
      bench_error(#call, check_st_);                                                               \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

static void bench_error(const char *call, wf_status st) {
  const char *why = wf_last_error();
  fprintf(stderr, "weft bench gpu: %s failed: %s\n", call, wf_status_str(st));
  if (why && why[0]) fprintf(stderr, "  %s\n", why);
}

static void bench_fail_msg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("weft bench gpu: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static double gbs(size_t bytes, double seconds) {
  return seconds > 0 ? (double)bytes / seconds * 1e-9 : 0.0;
}

static void add_row(bench_ctx *c, const char *benchmark, const char *metric, double value,
                    const char *unit) {
  if (c->n_rows >= MAX_ROWS) return;
  bench_row *r = &c->rows[c->n_rows++];
  snprintf(r->benchmark, sizeof r->benchmark, "%s", benchmark);
  snprintf(r->metric, sizeof r->metric, "%s", metric);
  r->value = value;
  r->unit = unit;
}

/* Seconds between two recordings, once the second one is done. */
static wf_status event_seconds(wf_event *a, wf_event *b, double *out) {
  wf_status st = wf_event_synchronize(b);
  if (st < 0) return st;
  float ms = 0;
  st = wf_event_elapsed_ms(a, b, &ms);
  *out = (double)ms * 1e-3;
  return st;
}

static const char *size_str(size_t bytes, char *buf, size_t n) {
  if (bytes >= GIB && bytes % GIB == 0)
    snprintf(buf, n, "%zu GiB", bytes / GIB);
  else if (bytes >= MIB)
    snprintf(buf, n, "%zu MiB", bytes / MIB);
  else
    snprintf(buf, n, "%zu KiB", bytes / 1024);
  return buf;
}

/* ---- launch cost ------------------------------------------------------------------------------
 */

static int cpu_threads(void) {
  wf_runtime_info rt;
  wf_runtime_info_get(&rt);
  return rt.cpu_threads;
}

static int bench_launch(bench_ctx *c) {
  int rc = 1;
  const int K = c->launches, R = c->reps;
  wf_stream *s = NULL;
  wf_buffer *x = NULL;
  wf_event *e0 = NULL, *e1 = NULL;
  wf_graph *g = NULL;
  float *host = NULL;
  double stream_dev[256], stream_host[256], graph_dev[256], graph_host[256];
  double raw_dev[256], raw_host[256], split_dev[256], share_dev[256];
  bool cpu = !wf_device_is_cuda(c->dev);
  void *native = NULL;
  uint64_t expected = 0; /* how many times every element has been incremented */

  CHECK(wf_stream_create(c->dev, 0, &s));
  CHECK(wf_buffer_create(c->dev, WF_BENCH_TINY_N * sizeof(float), WF_BUFFER_ZERO, s, &x));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e0));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e1));
  wf_bench_tiny_args a = {(float *)wf_buffer_ptr(x)};

  /* Warm-up: module load, first-launch costs, worker wake-up. */
  for (int k = 0; k < K; k++)
    CHECK(wf_launch(&wf_bench_tiny_kernel, WF_BENCH_TINY_N, &a, sizeof a, s));
  expected += (uint64_t)K;
  CHECK(wf_stream_synchronize(s));

  for (int r = 0; r < R; r++) {
    CHECK(wf_event_record(e0, s));
    double t0 = bench_now_s();
    for (int k = 0; k < K; k++)
      CHECK(wf_launch(&wf_bench_tiny_kernel, WF_BENCH_TINY_N, &a, sizeof a, s));
    double t1 = bench_now_s();
    CHECK(wf_event_record(e1, s));
    double sec;
    CHECK(event_seconds(e0, e1, &sec));
    stream_dev[r] = sec * 1e6 / K;
    stream_host[r] = (t1 - t0) * 1e6 / K;
    expected += (uint64_t)K;
  }

  /* On a CPU device, the same kernels in two pieces on the worker pool (wf_kernel.cpu_grain):
   * the difference from the one-call launches above is the pool's hand-over a kernel. */
  for (int r = 0; cpu && r < R; r++) {
    CHECK(wf_event_record(e0, s));
    for (int k = 0; k < K; k++)
      CHECK(wf_launch(&wf_bench_tiny_split_kernel, WF_BENCH_TINY_N, &a, sizeof a, s));
    CHECK(wf_event_record(e1, s));
    double sec;
    CHECK(event_seconds(e0, e1, &sec));
    split_dev[r] = sec * 1e6 / K;
    expected += (uint64_t)K;
  }

  /* On a CPU device, kernels that keep every thread busy: one piece of SHARE_US each, as many
   * pieces as threads. Spread perfectly a kernel lasts SHARE_US; what it takes beyond that is
   * the hand-over (posting the job, the pool's threads taking their pieces, the launcher waiting
   * for them), paid by every split kernel and every stage of a one-launch frame. */
  enum { SHARE_US = 20 };
  const wf_bench_work_args wa = {SHARE_US * 1000u};
  const int threads = cpu_threads(), KS = K / 5 > 0 ? K / 5 : 1;
  for (int r = 0; cpu && r < R; r++) {
    CHECK(wf_event_record(e0, s));
    for (int k = 0; k < KS; k++)
      CHECK(wf_launch(&wf_bench_work_kernel, (size_t)threads, &wa, sizeof wa, s));
    CHECK(wf_event_record(e1, s));
    double sec;
    CHECK(event_seconds(e0, e1, &sec));
    share_dev[r] = sec * 1e6 / KS - SHARE_US;
  }

  /* On CUDA, the same kernels launched straight on the cudaStream_t, without wf_launch: the
   * difference is what the layer adds per launch. */
  native = wf_stream_native(s);
  if (native && wf_bench_tiny_kernel.cuda) {
    for (int r = 0; r < R; r++) {
      CHECK(wf_event_record(e0, s));
      double t0 = bench_now_s();
      for (int k = 0; k < K; k++)
        wf_bench_tiny_kernel.cuda(&a, WF_BENCH_TINY_N, native);
      double t1 = bench_now_s();
      CHECK(wf_event_record(e1, s));
      double sec;
      CHECK(event_seconds(e0, e1, &sec));
      raw_dev[r] = sec * 1e6 / K;
      raw_host[r] = (t1 - t0) * 1e6 / K;
      expected += (uint64_t)K;
    }
  } else {
    native = NULL;
  }

  /* The same K kernels as one graph. */
  CHECK(wf_capture_begin(s));
  for (int k = 0; k < K; k++) {
    wf_status st = wf_launch(&wf_bench_tiny_kernel, WF_BENCH_TINY_N, &a, sizeof a, s);
    if (st < 0) {
      bench_error("wf_launch (during capture)", st);
      wf_graph *broken = NULL;
      if (wf_capture_end(s, &broken) == WF_OK) wf_graph_destroy(broken);
      goto fail;
    }
  }
  CHECK(wf_capture_end(s, &g));
  size_t nodes = wf_graph_node_count(g);
  CHECK(wf_graph_launch(g, s)); /* warm-up: graph upload */
  expected += (uint64_t)K;
  CHECK(wf_stream_synchronize(s));
  for (int r = 0; r < R; r++) {
    CHECK(wf_event_record(e0, s));
    double t0 = bench_now_s();
    CHECK(wf_graph_launch(g, s));
    double t1 = bench_now_s();
    CHECK(wf_event_record(e1, s));
    double sec;
    CHECK(event_seconds(e0, e1, &sec));
    graph_dev[r] = sec * 1e6 / K;
    graph_host[r] = (t1 - t0) * 1e6;
    expected += (uint64_t)K;
  }

  /* Every launch and every replay must have run exactly once on every element. */
  host = malloc(WF_BENCH_TINY_N * sizeof *host);
  if (!host) {
    bench_fail_msg("out of host memory");
    goto fail;
  }
  CHECK(wf_download(host, x, 0, WF_BENCH_TINY_N * sizeof *host));
  for (int i = 0; i < WF_BENCH_TINY_N; i++) {
    if (host[i] != (float)expected) {
      bench_fail_msg("launch check: element %d is %.0f after %llu launches (expected %llu): "
                     "kernels were lost or run twice",
                     i, (double)host[i], (unsigned long long)expected,
                     (unsigned long long)expected);
      goto fail;
    }
  }

  double sd = bench_median(stream_dev, R), sh = bench_median(stream_host, R);
  double gd = bench_median(graph_dev, R), gh = bench_median(graph_host, R);
  fprintf(c->out, "\nlaunch cost  (%d kernels of %d elements, median of %d)\n", K, WF_BENCH_TINY_N,
          R);
  fprintf(c->out, "  %-16s %12s %24s\n", "", "device", "host");
  fprintf(c->out, "  %-16s %9.3f us/kernel %12.3f us/wf_launch\n", "stream launches", sd, sh);
  if (cpu)
    fprintf(c->out, "  %-16s %9.3f us/kernel  (in 2 pieces on %d threads: the pool adds %.3f us)\n",
            "split launches", bench_median(split_dev, R), cpu_threads(),
            bench_median(split_dev, R) - sd);
  if (cpu)
    fprintf(c->out,
            "  %-16s %9.3f us/kernel  (hand-over of a kernel of %d pieces of %d us on %d "
            "threads: its time beyond %d us)\n",
            "shared launches", bench_median(share_dev, R), threads, SHARE_US, threads, SHARE_US);
  if (native)
    fprintf(c->out,
            "  %-16s %9.3f us/kernel %12.3f us/launch  (kernel<<<>>> on the native stream, "
            "no wf_launch)\n",
            "raw CUDA", bench_median(raw_dev, R), bench_median(raw_host, R));
  fprintf(c->out, "  %-16s %9.3f us/kernel %12.2f us/wf_graph_launch (%zu nodes)\n", "graph replay",
          gd, gh, nodes);
  if (sd < 1.1 * sh)
    fprintf(c->out, "  stream launches are host-bound: the device waits for the next wf_launch\n");
  if (gd > 0)
    fprintf(c->out, "  graph replay is %.1fx the stream launch rate on the device\n", sd / gd);
  if (nodes != (size_t)K)
    fprintf(c->out, "  note: the graph holds %zu nodes for %d launches\n", nodes, K);
  fprintf(c->out, "  check: every element = %llu, as expected\n", (unsigned long long)expected);
  add_row(c, "launch", "stream_device_per_kernel", sd, "us");
  add_row(c, "launch", "stream_host_per_launch", sh, "us");
  if (cpu) {
    add_row(c, "launch", "split_device_per_kernel", bench_median(split_dev, R), "us");
    add_row(c, "launch", "split_pool_cost_per_kernel", bench_median(split_dev, R) - sd, "us");
    add_row(c, "launch", "shared_handover_per_kernel", bench_median(share_dev, R), "us");
  }
  if (native) {
    add_row(c, "launch", "raw_cuda_device_per_kernel", bench_median(raw_dev, R), "us");
    add_row(c, "launch", "raw_cuda_host_per_launch", bench_median(raw_host, R), "us");
  }
  add_row(c, "launch", "graph_device_per_kernel", gd, "us");
  add_row(c, "launch", "graph_host_per_graph_launch", gh, "us");
  rc = 0;
fail:
  free(host);
  if (g) wf_graph_destroy(g);
  if (x) wf_buffer_destroy(x, s);
  if (s) wf_stream_synchronize(s);
  if (e0) wf_event_destroy(e0);
  if (e1) wf_event_destroy(e1);
  if (s) wf_stream_destroy(s);
  return rc;
}

/* ---- host <-> device transfers ----------------------------------------------------------------
 */

enum { XFER_PINNED, XFER_PAGEABLE_API, XFER_PAGEABLE_COPY, XFER_METHODS };

static int bench_transfer(bench_ctx *c) {
  int rc = 1;
  const size_t bytes = c->xfer_bytes;
  const int R = c->reps;
  wf_stream *cs = NULL;
  wf_buffer *d = NULL, *pinned = NULL, *wrapped = NULL;
  wf_event *e0 = NULL, *e1 = NULL;
  unsigned char *pageable = NULL;
  double t[2][XFER_METHODS][256];
  double res[2][XFER_METHODS];

  CHECK(wf_stream_create(c->dev, 0, &cs));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e0));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e1));
  CHECK(wf_buffer_create(c->dev, bytes, 0, cs, &d));
  CHECK(wf_buffer_create(c->host, bytes, WF_BUFFER_PINNED, NULL, &pinned));
  pageable = malloc(bytes);
  if (!pageable) {
    bench_fail_msg("cannot allocate %zu bytes of pageable host memory", bytes);
    goto fail;
  }
  CHECK(wf_buffer_wrap(c->host, pageable, bytes, &wrapped));
  CHECK(wf_device_synchronize(c->host));
  CHECK(wf_stream_synchronize(cs));
  /* Touch every page so first-touch faults are not timed. */
  memset(wf_buffer_ptr(pinned), 0x11, bytes);
  memset(pageable, 0x22, bytes);

  for (int dir = 0; dir < 2; dir++) {
    bool h2d = dir == 0;
    for (int r = -1; r < R; r++) { /* r == -1: warm-up */
      double sec;
      /* pinned: asynchronous, timed on the copy stream */
      CHECK(wf_event_record(e0, cs));
      if (h2d)
        CHECK(wf_copy(d, 0, pinned, 0, bytes, cs));
      else
        CHECK(wf_copy(pinned, 0, d, 0, bytes, cs));
      CHECK(wf_event_record(e1, cs));
      CHECK(event_seconds(e0, e1, &sec));
      if (r >= 0) t[dir][XFER_PINNED][r] = sec;

      /* pageable through wf_upload / wf_download, timed on the host until the data is there */
      double t0 = bench_now_s();
      if (h2d) {
        CHECK(wf_upload(d, 0, pageable, bytes, cs));
        CHECK(wf_stream_synchronize(cs));
      } else {
        CHECK(wf_download(pageable, d, 0, bytes));
      }
      if (r >= 0) t[dir][XFER_PAGEABLE_API][r] = bench_now_s() - t0;

      /* pageable through wf_copy of a wrapped host buffer */
      t0 = bench_now_s();
      if (h2d)
        CHECK(wf_copy(d, 0, wrapped, 0, bytes, cs));
      else
        CHECK(wf_copy(wrapped, 0, d, 0, bytes, cs));
      CHECK(wf_stream_synchronize(cs));
      if (r >= 0) t[dir][XFER_PAGEABLE_COPY][r] = bench_now_s() - t0;
    }
    for (int m = 0; m < XFER_METHODS; m++)
      res[dir][m] = gbs(bytes, bench_median(t[dir][m], R));
  }

  /* Round trip: pinned -> device -> pageable must give back the pattern. */
  unsigned char *pin = wf_buffer_ptr(pinned);
  for (size_t i = 0; i < bytes; i++)
    pin[i] = (unsigned char)(i * 131u + 7u);
  CHECK(wf_copy(d, 0, pinned, 0, bytes, cs));
  memset(pageable, 0, bytes);
  CHECK(wf_download(pageable, d, 0, bytes));
  if (memcmp(pin, pageable, bytes) != 0) {
    size_t i = 0;
    while (pin[i] == pageable[i])
      i++;
    bench_fail_msg("transfer check: byte %zu came back as 0x%02x, sent 0x%02x", i, pageable[i],
                   pin[i]);
    goto fail;
  }

  char sz[32];
  fprintf(c->out, "\nhost <-> device  (%s, %s <-> %s, GB/s = 1e9 bytes/s, median of %d)\n",
          size_str(bytes, sz, sizeof sz), wf_device_name(c->host), wf_device_name(c->dev), R);
  fprintf(c->out, "  %-10s %14s %26s %20s\n", "", "pinned", "pageable", "pageable");
  fprintf(c->out, "  %-10s %14s %26s %20s\n", "", "wf_copy", "wf_upload/wf_download",
          "wf_copy (wrapped)");
  static const char *dir_name[2] = {"H2D", "D2H"};
  static const char *metric[2][XFER_METHODS] = {
      {"h2d_pinned", "h2d_pageable_upload", "h2d_pageable_copy"},
      {"d2h_pinned", "d2h_pageable_download", "d2h_pageable_copy"}};
  for (int dir = 0; dir < 2; dir++) {
    fprintf(c->out, "  %-10s %9.2f GB/s %21.2f GB/s %15.2f GB/s\n", dir_name[dir],
            res[dir][XFER_PINNED], res[dir][XFER_PAGEABLE_API], res[dir][XFER_PAGEABLE_COPY]);
    for (int m = 0; m < XFER_METHODS; m++)
      add_row(c, "transfer", metric[dir][m], res[dir][m], "GB/s");
  }
  fprintf(c->out, "  pinned timed by events on the copy stream; pageable timed on the host\n");
  fprintf(c->out, "  check: %s round trip pinned -> %s -> pageable intact\n",
          size_str(bytes, sz, sizeof sz), wf_device_name(c->dev));
  c->pinned_d2h_gbs = res[1][XFER_PINNED];
  rc = 0;
fail:
  if (cs) wf_stream_synchronize(cs);
  if (wrapped) wf_buffer_destroy(wrapped, cs);
  if (pinned) wf_buffer_destroy(pinned, cs);
  if (d) wf_buffer_destroy(d, cs);
  if (cs) wf_stream_synchronize(cs);
  if (c->host) wf_device_synchronize(c->host);
  free(pageable); /* after the wrapping buffer is gone and every copy is done */
  if (e0) wf_event_destroy(e0);
  if (e1) wf_event_destroy(e1);
  if (cs) wf_stream_destroy(cs);
  return rc;
}

/* ---- device-to-device and peer copies ---------------------------------------------------------
 */

static int bench_copies(bench_ctx *c) {
  int rc = 1;
  const size_t bytes = c->xfer_bytes;
  const int R = c->reps;
  wf_device *devs[MAX_DEVS];
  wf_stream *s[MAX_DEVS] = {0};
  wf_buffer *src[MAX_DEVS] = {0}, *dst[MAX_DEVS] = {0};
  wf_event *e0[MAX_DEVS] = {0}, *e1[MAX_DEVS] = {0};
  double d2d[MAX_DEVS];
  static double peer[MAX_DEVS][MAX_DEVS];
  static bool staged[MAX_DEVS][MAX_DEVS];
  double samples[256];
  int n = 0;

  /* On a CUDA device: every CUDA device (the peer matrix needs them all). On a CPU device: only
   * that one; CPU devices share host memory, so a "peer" copy among them is a memcpy. */
  if (wf_device_is_cuda(c->dev)) {
    for (int i = 0; i < wf_device_count() && n < MAX_DEVS; i++) {
      wf_device *d = wf_device_at(i);
      if (d && wf_device_is_cuda(d)) devs[n++] = d;
    }
  } else {
    devs[n++] = c->dev;
  }

  for (int i = 0; i < n; i++) {
    CHECK(wf_stream_create(devs[i], 0, &s[i]));
    CHECK(wf_event_create(devs[i], WF_EVENT_TIMING, &e0[i]));
    CHECK(wf_event_create(devs[i], WF_EVENT_TIMING, &e1[i]));
    CHECK(wf_buffer_create(devs[i], bytes, 0, s[i], &src[i]));
    CHECK(wf_buffer_create(devs[i], bytes, 0, s[i], &dst[i]));
    CHECK(wf_memset(src[i], 0x40 + i, 0, bytes, s[i]));
    CHECK(wf_memset(dst[i], 0, 0, bytes, s[i]));
  }

  /* Within each device: a copy reads and writes every byte once. */
  for (int i = 0; i < n; i++) {
    for (int r = -1; r < R; r++) {
      double sec;
      CHECK(wf_event_record(e0[i], s[i]));
      CHECK(wf_copy(dst[i], 0, src[i], 0, bytes, s[i]));
      CHECK(wf_event_record(e1[i], s[i]));
      CHECK(event_seconds(e0[i], e1[i], &sec));
      if (r >= 0) samples[r] = sec;
    }
    d2d[i] = gbs(2 * bytes, bench_median(samples, R));
  }

  /* Between devices: row = source, column = destination; the copy runs on the destination's
   * stream and the library orders it after the source's memset. */
  bool any_staged = false;
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      if (i == j) continue;
      wf_status st = wf_peer_access_enable(devs[i], devs[j]);
      if (st == WF_ERR_UNSUPPORTED) {
        staged[i][j] = any_staged = true;
        wf_clear_error();
      } else {
        CHECK(st);
      }
      for (int r = -1; r < R; r++) {
        double sec;
        CHECK(wf_event_record(e0[j], s[j]));
        CHECK(wf_copy(dst[j], 0, src[i], 0, bytes, s[j]));
        CHECK(wf_event_record(e1[j], s[j]));
        CHECK(event_seconds(e0[j], e1[j], &sec));
        if (r >= 0) samples[r] = sec;
      }
      peer[i][j] = gbs(bytes, bench_median(samples, R));
      /* the last copy must have brought i's byte pattern */
      unsigned char probe[2];
      CHECK(wf_download(&probe[0], dst[j], 0, 1));
      CHECK(wf_download(&probe[1], dst[j], bytes - 1, 1));
      if (probe[0] != 0x40 + i || probe[1] != 0x40 + i) {
        bench_fail_msg("peer check: %s -> %s delivered 0x%02x/0x%02x, expected 0x%02x",
                       wf_device_name(devs[i]), wf_device_name(devs[j]), probe[0], probe[1],
                       0x40 + i);
        goto fail;
      }
    }
  }

  char sz[32];
  fprintf(c->out, "\ndevice copies  (%s per copy, median of %d)\n", size_str(bytes, sz, sizeof sz),
          R);
  for (int i = 0; i < n; i++) {
    char metric[64];
    fprintf(c->out,
            "  %-8s within the device  %9.2f GB/s  (read + write bytes: 2 x size / time;"
            " the measured memory bandwidth)\n",
            wf_device_name(devs[i]), d2d[i]);
    snprintf(metric, sizeof metric, "d2d_rw_%s", wf_device_name(devs[i]));
    add_row(c, "copy", metric, d2d[i], "GB/s");
  }
  if (!wf_device_is_cuda(c->dev)) {
    fprintf(c->out,
            "  peer matrix: skipped on %s (CPU devices share host memory; a copy between "
            "them is a memcpy)\n",
            wf_device_name(c->dev));
  } else if (n < 2) {
    fprintf(c->out, "  peer matrix: one CUDA device, no pairs to measure\n");
  } else {
    fprintf(c->out, "  peer copies, GB/s (bytes / time), row = source, column = destination:\n");
    fprintf(c->out, "  %-8s", "");
    for (int j = 0; j < n; j++)
      fprintf(c->out, " %10s", wf_device_name(devs[j]));
    fputc('\n', c->out);
    for (int i = 0; i < n; i++) {
      fprintf(c->out, "  %-8s", wf_device_name(devs[i]));
      for (int j = 0; j < n; j++) {
        if (i == j)
          fprintf(c->out, " %10s", "-");
        else
          fprintf(c->out, " %9.2f%c", peer[i][j], staged[i][j] ? '*' : ' ');
        if (i != j) {
          char metric[64];
          snprintf(metric, sizeof metric, "peer_%s_to_%s%s", wf_device_name(devs[i]),
                   wf_device_name(devs[j]), staged[i][j] ? "_staged" : "");
          add_row(c, "copy", metric, peer[i][j], "GB/s");
        }
      }
      fputc('\n', c->out);
    }
    if (any_staged)
      fprintf(c->out, "  * no peer access between these devices: copies staged through host "
                      "memory\n");
  }
  rc = 0;
fail:
  for (int i = 0; i < n; i++) {
    if (src[i]) wf_buffer_destroy(src[i], s[i]);
    if (dst[i]) wf_buffer_destroy(dst[i], s[i]);
  }
  for (int i = 0; i < n; i++) {
    if (s[i]) wf_stream_synchronize(s[i]);
    if (e0[i]) wf_event_destroy(e0[i]);
    if (e1[i]) wf_event_destroy(e1[i]);
    if (s[i]) wf_stream_destroy(s[i]);
  }
  return rc;
}

/* ---- transfer ring while a kernel runs --------------------------------------------------------
 */

/* Frames are told apart by a header: the first RING_HEADER bytes of the source are set to the
 * frame number before each push; the rest holds RING_PATTERN. */
#define RING_PATTERN 0x5a
#define RING_HEADER  64
#define RING_SLOTS   3

typedef struct ring_consumer {
  uint64_t delivered, corrupt, out_of_order;
  int last_frame;
  size_t bytes;
} ring_consumer;

/* Takes the newest finished frame while there is one, checks it, gives it back. A frame must be
 * whole (one frame number in its header, the pattern after it) and newer than the last one. */
static wf_status ring_consume(wf_ring *ring, ring_consumer *rc) {
  for (;;) {
    int slot = -1;
    const void *data = NULL;
    wf_status st = wf_ring_latest(ring, &slot, &data);
    if (st != WF_OK) return st == WF_NOT_READY ? WF_OK : st;
    const unsigned char *p = data;
    bool ok = p != NULL;
    for (int i = 1; ok && i < RING_HEADER; i++)
      ok = p[i] == p[0];
    ok = ok && p[RING_HEADER] == RING_PATTERN && p[rc->bytes / 2] == RING_PATTERN &&
         p[rc->bytes - 1] == RING_PATTERN;
    if (!ok)
      rc->corrupt++;
    else if (p[0] <= rc->last_frame)
      rc->out_of_order++;
    else
      rc->last_frame = p[0];
    rc->delivered++;
    wf_ring_release(ring, slot);
  }
}

typedef struct ring_env {
  wf_stream *sc, *cc; /* compute (busy kernel) and copy (pushes) */
  wf_buffer *src, *spins;
  wf_ring *ring;
  wf_event *b0, *b1, *c0, *c1;
  wf_bench_busy_args busy;
  size_t bytes;
  int pushes;
  ring_consumer consumer;
  uint64_t refused; /* pushes that returned WF_NOT_READY */
} ring_env;

typedef struct ring_result {
  double push_s;    /* first push queued to last push landed, on the copy stream */
  double busy_s;    /* the busy kernel beside the pushes */
  double landed_s;  /* when the last push landed, from the kernel's start */
  wf_ring_stats st; /* this run only */
} ring_result;

/* One busy kernel on the compute stream; meanwhile the copy stream pushes e->pushes frames and
 * the host consumes. interval_s 0: push as fast as the host can (the ring must drop, never block);
 * else one push per interval, like a simulation producing frames at a rate the reader keeps up
 * with. */
static int ring_run(ring_env *e, double interval_s, int first_frame, ring_result *out) {
  wf_ring_stats before, after;
  wf_ring_stats_get(e->ring, &before);
  CHECK(wf_event_record(e->b0, e->sc));
  CHECK(wf_launch(&wf_bench_busy_kernel, BUSY_N, &e->busy, sizeof e->busy, e->sc));
  CHECK(wf_event_record(e->b1, e->sc));
  CHECK(wf_event_record(e->c0, e->cc));
  double next = bench_now_s();
  for (int p = 0; p < e->pushes;) {
    double wait_s = next - bench_now_s();
    if (interval_s > 0 && wait_s > 0) {
      /* between frames: read what has landed, then doze (CI machines have few cores) */
      CHECK(ring_consume(e->ring, &e->consumer));
      if (wait_s > 100e-6) wait_s = 100e-6;
      struct timespec ts = {0, (long)(wait_s * 1e9)};
      nanosleep(&ts, NULL);
      continue;
    }
    int slot = -1;
    CHECK(wf_memset(e->src, (first_frame + p) & 0xff, 0, RING_HEADER, e->cc));
    wf_status st = wf_ring_push(e->ring, e->src, 0, e->bytes, e->cc, &slot);
    CHECK(st);
    if (st == WF_NOT_READY) e->refused++;
    p++;
    next += interval_s;
    CHECK(ring_consume(e->ring, &e->consumer));
  }
  CHECK(wf_event_record(e->c1, e->cc));
  /* Keep consuming until the last push has landed, then take what is left. */
  for (;;) {
    wf_status st = wf_event_query(e->c1);
    CHECK(st);
    CHECK(ring_consume(e->ring, &e->consumer));
    if (st == WF_OK) break;
  }
  CHECK(ring_consume(e->ring, &e->consumer));
  CHECK(event_seconds(e->c0, e->c1, &out->push_s));
  CHECK(event_seconds(e->b0, e->b1, &out->busy_s));
  CHECK(event_seconds(e->b0, e->c1, &out->landed_s));
  wf_ring_stats_get(e->ring, &after);
  out->st.pushed = after.pushed - before.pushed;
  out->st.delivered = after.delivered - before.delivered;
  out->st.overwritten = after.overwritten - before.overwritten;
  out->st.stale = after.stale - before.stale;
  out->st.refused = after.refused - before.refused;
  return 0;
fail:
  return 1;
}

static int bench_ring(bench_ctx *c) {
  int rc = 1;
  ring_env e;
  memset(&e, 0, sizeof e);
  e.bytes = c->ring_bytes;
  e.pushes = c->ring_pushes;
  e.consumer.bytes = e.bytes;
  e.consumer.last_frame = -1;
  ring_result flood = {0}, paced = {0};

  CHECK(wf_stream_create(c->dev, 0, &e.sc));
  CHECK(wf_stream_create(c->dev, 0, &e.cc));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e.b0));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e.b1));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e.c0));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e.c1));
  CHECK(wf_buffer_create(c->dev, e.bytes, 0, e.cc, &e.src));
  CHECK(wf_memset(e.src, RING_PATTERN, 0, e.bytes, e.cc));
  CHECK(wf_buffer_create(c->dev, BUSY_N * sizeof(uint64_t), WF_BUFFER_ZERO, e.sc, &e.spins));
  CHECK(wf_ring_create(c->dev, e.bytes, RING_SLOTS, &e.ring));

  /* The kernel must outlast each run: four times the pushes' expected time at the pinned D2H
   * rate (the paced run takes about twice that), within [50 ms, 2 s]. */
  double expect_s =
      c->pinned_d2h_gbs > 0 ? (double)e.bytes * e.pushes / (c->pinned_d2h_gbs * 1e9) : 0.1;
  double busy_s = 4 * expect_s;
  busy_s = busy_s < 0.05 ? 0.05 : busy_s > 2.0 ? 2.0 : busy_s;
  wf_bench_busy_args warm = {(uint64_t *)wf_buffer_ptr(e.spins), 1000000u};
  e.busy = (wf_bench_busy_args){(uint64_t *)wf_buffer_ptr(e.spins), (uint64_t)(busy_s * 1e9)};

  /* The kernel alone, after a 1 ms warm-up launch. */
  CHECK(wf_launch(&wf_bench_busy_kernel, BUSY_N, &warm, sizeof warm, e.sc));
  CHECK(wf_stream_synchronize(e.sc));
  CHECK(wf_stream_synchronize(e.cc));
  double alone_s;
  CHECK(wf_event_record(e.b0, e.sc));
  CHECK(wf_launch(&wf_bench_busy_kernel, BUSY_N, &e.busy, sizeof e.busy, e.sc));
  CHECK(wf_event_record(e.b1, e.sc));
  CHECK(event_seconds(e.b0, e.b1, &alone_s));

  if (ring_run(&e, 0, 0, &flood)) goto fail;
  double interval_s = 2 * flood.push_s / e.pushes;
  if (interval_s < 50e-6) interval_s = 50e-6;
  if (ring_run(&e, interval_s, e.pushes, &paced)) goto fail;

  char sz[32];
  const ring_result *run[2] = {&flood, &paced};
  double change[2];
  for (int i = 0; i < 2; i++)
    change[i] = alone_s > 0 ? (run[i]->busy_s - alone_s) / alone_s * 100.0 : 0.0;
  fprintf(c->out,
          "\nring readback while a kernel runs  (%d slots of %s, %d pushes per run on a "
          "copy stream)\n",
          RING_SLOTS, size_str(e.bytes, sz, sizeof sz), e.pushes);
  fprintf(c->out,
          "  flood: the host pushes as fast as it can (its data rate is the copy "
          "throughput beside the kernel)\n"
          "  paced: one push every %.3f ms, a producer the reader keeps up with\n",
          interval_s * 1e3);
  fprintf(c->out, "  %-22s %14s %14s\n", "", "flood", "paced");
  fprintf(c->out, "  %-22s %9.2f GB/s %9.2f GB/s\n", "data rate, copy stream",
          gbs(e.bytes * (size_t)e.pushes, flood.push_s),
          gbs(e.bytes * (size_t)e.pushes, paced.push_s));
  static const char *names[] = {"frames pushed", "  delivered", "  overwritten", "  stale",
                                "  refused"};
  for (int k = 0; k < 5; k++) {
    uint64_t v[2];
    for (int i = 0; i < 2; i++) {
      const wf_ring_stats *s = &run[i]->st;
      uint64_t all[5] = {s->pushed, s->delivered, s->overwritten, s->stale, s->refused};
      v[i] = all[k];
    }
    fprintf(c->out, "  %-22s %14llu %14llu\n", names[k], (unsigned long long)v[0],
            (unsigned long long)v[1]);
  }
  fprintf(c->out, "  %-22s %11.2f ms %11.2f ms   (alone: %.2f ms)\n", "busy kernel beside it",
          flood.busy_s * 1e3, paced.busy_s * 1e3, alone_s * 1e3);
  fprintf(c->out, "  %-22s %13.2f%% %13.2f%%\n", "  change", change[0], change[1]);
  fprintf(c->out, "  %-22s %11.2f ms %11.2f ms   (from the kernel's start)\n", "last push landed",
          flood.landed_s * 1e3, paced.landed_s * 1e3);
  for (int i = 0; i < 2; i++)
    if (run[i]->landed_s > run[i]->busy_s)
      fprintf(c->out, "  note: the %s pushes outlasted the kernel; part of them ran without it\n",
              i ? "paced" : "flood");

  wf_ring_stats total;
  wf_ring_stats_get(e.ring, &total);
  if (total.delivered != e.consumer.delivered || total.refused != e.refused)
    fprintf(c->out,
            "  note: ring counters (delivered %llu, refused %llu) disagree with what the "
            "host saw (%llu, %llu)\n",
            (unsigned long long)total.delivered, (unsigned long long)total.refused,
            (unsigned long long)e.consumer.delivered, (unsigned long long)e.refused);
  if (e.consumer.corrupt) {
    bench_fail_msg("ring check: %llu of %llu delivered frames were torn or did not hold the pushed "
                   "data",
                   (unsigned long long)e.consumer.corrupt,
                   (unsigned long long)e.consumer.delivered);
    goto fail;
  }
  /* wf_ring_latest promises the newest finished frame; one older than a frame already delivered
   * is a fault of the ring, not of this machine, so it is reported but does not fail the run. */
  if (e.consumer.out_of_order) {
    fprintf(c->out,
            "  WARNING: %llu delivered frames were older than a frame delivered before "
            "them (wf_ring_latest went back in time)\n",
            (unsigned long long)e.consumer.out_of_order);
    fprintf(stderr, "weft bench gpu: warning: wf_ring_latest delivered %llu frames out of order\n",
            (unsigned long long)e.consumer.out_of_order);
  }
  if (flood.st.delivered == 0 || paced.st.delivered == 0) {
    bench_fail_msg("ring check: a run of %d pushes delivered no frame", e.pushes);
    goto fail;
  }
  fprintf(c->out, "  check: %llu delivered frames whole%s\n",
          (unsigned long long)e.consumer.delivered, e.consumer.out_of_order ? "" : " and in order");

  static const char *run_name[2] = {"flood", "paced"};
  for (int i = 0; i < 2; i++) {
    char m[64];
    const wf_ring_stats *s = &run[i]->st;
    snprintf(m, sizeof m, "%s_data_rate", run_name[i]);
    add_row(c, "ring", m, gbs(e.bytes * (size_t)e.pushes, run[i]->push_s), "GB/s");
    snprintf(m, sizeof m, "%s_frames_delivered", run_name[i]);
    add_row(c, "ring", m, (double)s->delivered, "frames");
    snprintf(m, sizeof m, "%s_frames_dropped", run_name[i]);
    add_row(c, "ring", m, (double)(s->overwritten + s->stale + s->refused), "frames");
    snprintf(m, sizeof m, "%s_busy_change", run_name[i]);
    add_row(c, "ring", m, change[i], "%");
  }
  add_row(c, "ring", "frames_out_of_order", (double)e.consumer.out_of_order, "frames");
  add_row(c, "ring", "busy_alone", alone_s * 1e3, "ms");
  rc = 0;
fail:
  if (e.ring) wf_ring_destroy(e.ring);
  if (e.src) wf_buffer_destroy(e.src, e.cc);
  if (e.spins) wf_buffer_destroy(e.spins, e.sc);
  if (e.sc) wf_stream_synchronize(e.sc);
  if (e.cc) wf_stream_synchronize(e.cc);
  wf_event *ev[] = {e.b0, e.b1, e.c0, e.c1};
  for (int i = 0; i < 4; i++)
    if (ev[i]) wf_event_destroy(ev[i]);
  if (e.sc) wf_stream_destroy(e.sc);
  if (e.cc) wf_stream_destroy(e.cc);
  return rc;
}

/* ---- CSV --------------------------------------------------------------------------------------
 */

/* RFC 4180: quote a field that holds a comma, quote or line break. */
/* ---- driver -----------------------------------------------------------------------------------
 */

void wf_bench_gpu_usage(FILE *f) {
  fputs("usage: weft bench gpu [--device NAME] [--csv FILE] [--machine NAME] [--quick]\n"
        "\n"
        "Measures the GPU layer on this machine: launch cost (stream launches vs. a replayed\n"
        "graph), host<->device bandwidth (pinned vs. pageable), device and peer copy bandwidth,\n"
        "and transfer-ring readback while a kernel runs.\n"
        "\n"
        "options:\n"
        "  --device NAME   device to measure: cpu, cpu:N, cuda, cuda:N (default: cuda:0 when a\n"
        "                  usable GPU exists, else cpu:0)\n"
        "  --csv FILE      append results as machine,date,benchmark,metric,value,unit rows\n"
        "                  (the header is written when the file is new)\n"
        "  --machine NAME  machine name for the CSV (default: hostname and device product)\n"
        "  --quick         smaller transfers and fewer repetitions (for CI)\n"
        "  -h, --help      show this help\n",
        f);
}

/* Parses options; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, bench_opts *o, FILE *out) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **target = NULL;
    const char *name = NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      wf_bench_gpu_usage(out);
      return 0;
    } else if (strcmp(a, "--quick") == 0) {
      o->quick = true;
      continue;
    }
    static const char *const names[] = {"--device", "--csv", "--machine"};
    const char **targets[] = {&o->device, &o->csv, &o->machine};
    for (int k = 0; k < 3; k++) {
      size_t len = strlen(names[k]);
      if (strncmp(a, names[k], len) == 0 && (a[len] == '\0' || a[len] == '=')) {
        name = names[k];
        target = targets[k];
        if (a[len] == '=') {
          *target = a + len + 1;
        } else if (i + 1 < argc) {
          *target = argv[++i];
        } else {
          fprintf(stderr, "weft bench gpu: %s needs a value\n", name);
          wf_bench_gpu_usage(stderr);
          return 2;
        }
        break;
      }
    }
    if (!target) {
      fprintf(stderr, "weft bench gpu: unknown option '%s'\n", a);
      wf_bench_gpu_usage(stderr);
      return 2;
    }
    if (**target == '\0') {
      fprintf(stderr, "weft bench gpu: %s needs a non-empty value\n", name);
      return 2;
    }
  }
  if (o->device && !bench_device_name_valid(o->device)) {
    fprintf(stderr, "weft bench gpu: '%s' is not a device name (cpu, cpu:N, cuda, cuda:N)\n",
            o->device);
    return 2;
  }
  return -1;
}

int wf_bench_gpu(int argc, char **argv, FILE *out) {
  static bench_ctx ctx; /* rows make it large */
  bench_ctx *c = &ctx;
  memset(c, 0, sizeof *c);
  c->out = out;
  int rc = parse_args(argc, argv, &c->o, out);
  if (rc >= 0) return rc;
  rc = 1;

  if (bench_start("gpu", c->o.device, &c->dev)) return 1;
  CHECK(wf_device_get("cpu:0", &c->host));
  CHECK(wf_device_info_get(c->dev, &c->info));

  bool cuda = wf_device_is_cuda(c->dev);
  c->reps = c->o.quick ? 5 : 20;
  c->launches = 1000;
  c->xfer_bytes = c->o.quick ? (cuda ? 64 : 16) * MIB : 256 * MIB;
  c->ring_bytes = c->o.quick && !cuda ? 4 * MIB : 16 * MIB;
  c->ring_pushes = c->o.quick ? 16 : 64;

  char machine[512];
  if (c->o.machine) {
    snprintf(machine, sizeof machine, "%s", c->o.machine);
  } else {
    struct utsname u;
    if (uname(&u) != 0) snprintf(u.nodename, sizeof u.nodename, "unknown");
    snprintf(machine, sizeof machine, "%.64s %.255s", u.nodename, c->info.product);
  }

  fprintf(out, "weft %s bench gpu on %s: %s", WF_VERSION_STRING, wf_device_name(c->dev),
          c->info.product);
  if (cuda)
    fprintf(out, ", cc %d.%d, %d SMs, %.1f GiB", c->info.cc_major, c->info.cc_minor,
            c->info.multiprocessors, (double)c->info.total_memory / (double)GIB);
  else
    fprintf(out, ", %d hardware threads", c->info.multiprocessors);
  fprintf(out, "\nmachine: %s%s\n", machine, c->o.quick ? "  (--quick)" : "");
  fflush(out);

  if (bench_launch(c) || (fflush(out), bench_transfer(c)) || (fflush(out), bench_copies(c)) ||
      (fflush(out), bench_ring(c)))
    goto fail;
  fflush(out);
  if (c->o.csv && bench_csv_append(c->o.csv, machine, c->rows, c->n_rows, out)) goto fail;
  rc = 0;
fail:
  fflush(out);
  wf_shutdown();
  return rc;
}
