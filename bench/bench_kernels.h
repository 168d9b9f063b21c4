/* Kernels of the GPU benchmark, written once for both backends (DESIGN.md, "one math, two
 * backends"): each kernel is one argument struct, its per-element math here (WF_HD, read by the C
 * compiler and by nvcc), a CPU loop in bench_kernels.c and a __global__ wrapper in
 * bench_kernels.cu.
 *
 *  - tiny: every element adds 1 to its own float. Launched over one block's worth of elements it
 *    does next to nothing, so its time is the cost of a launch.
 *  - busy: keeps its stream occupied for a given number of microseconds (CUDA: threads sleep on
 *    the GPU's global timer; CPU: the worker thread sleeps), so other streams can be watched
 *    running beside it. Each element writes how many times it waited, so the work is observable.
 */
#ifndef WEFT_BENCH_KERNELS_H
#define WEFT_BENCH_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/gpu.h"
#include "weft/hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One block's worth of elements: what a launch-cost measurement launches. */
#define WF_BENCH_TINY_N 256

typedef struct wf_bench_tiny_args {
  float *x; /* n floats on the launch device */
} wf_bench_tiny_args;

WF_HD static inline void wf_bench_tiny_elem(const wf_bench_tiny_args *a, size_t i) {
  a->x[i] += 1.0f;
}

typedef struct wf_bench_busy_args {
  uint64_t *spins;      /* n counters on the launch device, or NULL */
  uint64_t duration_ns; /* how long the kernel keeps its stream busy */
} wf_bench_busy_args;

/** The time at which an element that started at start_ns may finish. */
WF_HD static inline uint64_t wf_bench_busy_deadline(const wf_bench_busy_args *a,
                                                    uint64_t start_ns) {
  return start_ns + a->duration_ns;
}

WF_HD static inline void wf_bench_busy_finish(const wf_bench_busy_args *a, size_t i,
                                              uint64_t spins) {
  if (a->spins) a->spins[i] = spins;
}

/* CUDA wrappers (bench_kernels.cu): enqueue n elements on the cudaStream_t native_stream. */
void wf_bench_tiny_cuda(const void *args, size_t n, void *native_stream);
void wf_bench_busy_cuda(const void *args, size_t n, void *native_stream);

/** CPU devices only: every element keeps its thread busy for ns nanoseconds (no sleeping), and
 *  the kernel's grain is 1, so n elements are n pieces of the same work for the worker pool. */
typedef struct wf_bench_work_args {
  uint64_t ns;
} wf_bench_work_args;

/* The kernels for wf_launch; .cuda is NULL when weft_bench is built without CUDA. */
extern const wf_kernel wf_bench_tiny_kernel;
extern const wf_kernel wf_bench_tiny_split_kernel;
extern const wf_kernel wf_bench_busy_kernel;
extern const wf_kernel wf_bench_work_kernel; /* CPU only */

#ifdef __cplusplus
}
#endif
#endif
