/* CPU loops of the benchmark kernels and the wf_kernel objects (math in bench_kernels.h). */
#define _POSIX_C_SOURCE 200809L

#include "bench_kernels.h"

#include <time.h>

static void wf_bench_tiny_cpu(const void *args, size_t begin, size_t end) {
  const wf_bench_tiny_args *a = args;
  for (size_t i = begin; i < end; i++)
    wf_bench_tiny_elem(a, i);
}

static uint64_t wf_bench_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The backend may split [0, n) into chunks, run one after another or side by side. Only the chunk
 * that holds element 0 sleeps, so the kernel lasts the given time however it is split. */
static void wf_bench_busy_cpu(const void *args, size_t begin, size_t end) {
  const wf_bench_busy_args *a = args;
  if (begin == 0) {
    uint64_t deadline = wf_bench_busy_deadline(a, wf_bench_now_ns());
    uint64_t spins = 0;
    for (uint64_t now = wf_bench_now_ns(); now < deadline; now = wf_bench_now_ns()) {
      uint64_t left = deadline - now;
      struct timespec t = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
      nanosleep(&t, NULL);
      spins++;
    }
    wf_bench_busy_finish(a, 0, spins);
    begin = 1;
  }
  for (size_t i = begin; i < end; i++)
    wf_bench_busy_finish(a, i, 0);
}

static void wf_bench_work_cpu(const void *args, size_t begin, size_t end) {
  const wf_bench_work_args *a = args;
  for (size_t i = begin; i < end; i++) {
    uint64_t deadline = wf_bench_now_ns() + a->ns;
    while (wf_bench_now_ns() < deadline) {
    }
  }
}

#ifdef WEFT_HAVE_CUDA
#define WF_BENCH_CUDA(f) f
#else
#define WF_BENCH_CUDA(f) NULL
#endif

const wf_kernel wf_bench_tiny_kernel = {"bench_tiny", wf_bench_tiny_cpu,
                                        WF_BENCH_CUDA(wf_bench_tiny_cuda), 0};
/* The tiny kernel in two pieces on a CPU device's worker pool (the CUDA side is the same). */
const wf_kernel wf_bench_tiny_split_kernel = {
    "bench_tiny_split", wf_bench_tiny_cpu, WF_BENCH_CUDA(wf_bench_tiny_cuda), WF_BENCH_TINY_N / 2};
const wf_kernel wf_bench_busy_kernel = {"bench_busy", wf_bench_busy_cpu,
                                        WF_BENCH_CUDA(wf_bench_busy_cuda), 0};
const wf_kernel wf_bench_work_kernel = {"bench_work", wf_bench_work_cpu, NULL, 1};
