/* Kernels for the GPU layer's tests, written once for both backends (DESIGN.md, "one math, two
 * backends"): one argument struct per kernel, the per-element math as WF_HD functions that both the
 * C compiler and nvcc read, CPU loops in test_kernels.c and __global__ kernels with their launch
 * wrappers in test_kernels.cu. Buffers travel inside the argument structs as device pointers
 * (wf_buffer_ptr). A kernel's `cuda` member is NULL when the tests are built without CUDA.
 *
 * tk_slow_fill is the slow writer: it waits `ms` milliseconds (CPU: nanosleep in the chunk that
 * starts at element 0; CUDA: every block spins on the global timer) before writing, so work queued
 * after it on the same stream starts late and a missing wait on another stream reads stale values.
 */
#ifndef WEFT_TESTS_TEST_KERNELS_H
#define WEFT_TESTS_TEST_KERNELS_H

#include <stddef.h>

#include "weft/gpu.h"
#include "weft/hd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_fill_args {
  float *p;
  float value;
} tk_fill_args;

typedef struct tk_iota_args {
  float *p;
  float start, step;
} tk_iota_args;

typedef struct tk_axpy_args {
  float *y;
  const float *x;
  float a;
} tk_axpy_args;

typedef struct tk_add_one_args {
  float *p;
} tk_add_one_args;

typedef struct tk_copy_args {
  float *dst;
  const float *src;
} tk_copy_args;

typedef struct tk_scale_add_args {
  float *p;
  float mul, add;
} tk_scale_add_args;

typedef struct tk_slow_fill_args {
  float *p;
  float value;
  int ms;
} tk_slow_fill_args;

WF_HD static inline float tk_iota_elem(size_t i, float start, float step) {
  return start + (float)i * step;
}
WF_HD static inline float tk_axpy_elem(float y, float a, float x) { return y + a * x; }
WF_HD static inline float tk_add_one_elem(float v) { return v + 1.0f; }
WF_HD static inline float tk_scale_add_elem(float v, float mul, float add) { return v * mul + add; }

extern const wf_kernel tk_fill;      /* p[i] = value */
extern const wf_kernel tk_iota;      /* p[i] = start + i * step */
extern const wf_kernel tk_axpy;      /* y[i] += a * x[i] */
extern const wf_kernel tk_add_one;   /* p[i] += 1 */
extern const wf_kernel tk_copy;      /* dst[i] = src[i] */
extern const wf_kernel tk_scale_add; /* p[i] = p[i] * mul + add */
extern const wf_kernel tk_slow_fill; /* waits ms, then p[i] = value */
extern const wf_kernel tk_cpu_only;  /* tk_fill with .cuda = NULL */
extern const wf_kernel tk_cuda_only; /* tk_fill with .cpu = NULL (.cuda NULL too without CUDA) */

#ifdef WEFT_HAVE_CUDA
void tk_fill_cuda(const void *args, size_t n, void *native_stream);
void tk_iota_cuda(const void *args, size_t n, void *native_stream);
void tk_axpy_cuda(const void *args, size_t n, void *native_stream);
void tk_add_one_cuda(const void *args, size_t n, void *native_stream);
void tk_copy_cuda(const void *args, size_t n, void *native_stream);
void tk_scale_add_cuda(const void *args, size_t n, void *native_stream);
void tk_slow_fill_cuda(const void *args, size_t n, void *native_stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
