/* CUDA side of the test kernels: __global__ kernels calling the shared WF_HD math, and the launch
 * wrappers that wf_launch calls with the stream's cudaStream_t. One thread per element, 256 threads
 * a block, grid = ceil(n / 256); tk_slow_fill alone uses a small grid-stride grid (below). */
#include <cuda_runtime.h>

#include "test_kernels.h"

namespace {

constexpr unsigned kBlock = 256;

unsigned grid_for(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

__device__ size_t index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void fill_kernel(tk_fill_args a, size_t n) {
  size_t i = index();
  if (i < n) a.p[i] = a.value;
}

__global__ void iota_kernel(tk_iota_args a, size_t n) {
  size_t i = index();
  if (i < n) a.p[i] = tk_iota_elem(i, a.start, a.step);
}

__global__ void axpy_kernel(tk_axpy_args a, size_t n) {
  size_t i = index();
  if (i < n) a.y[i] = tk_axpy_elem(a.y[i], a.a, a.x[i]);
}

__global__ void add_one_kernel(tk_add_one_args a, size_t n) {
  size_t i = index();
  if (i < n) a.p[i] = tk_add_one_elem(a.p[i]);
}

__global__ void copy_kernel(tk_copy_args a, size_t n) {
  size_t i = index();
  if (i < n) a.dst[i] = a.src[i];
}

__global__ void scale_add_kernel(tk_scale_add_args a, size_t n) {
  size_t i = index();
  if (i < n) a.p[i] = tk_scale_add_elem(a.p[i], a.mul, a.add);
}

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Each block's first thread spins for ms before the block writes. The grid is capped so that every
 * block is resident at once (a wave of spinning blocks per ms otherwise) and covers n by striding.
 */
constexpr unsigned kSlowBlocks = 128;

__global__ void slow_fill_kernel(tk_slow_fill_args a, size_t n) {
  if (threadIdx.x == 0) {
    unsigned long long t0 = global_ns(), wait = (unsigned long long)a.ms * 1000000ull;
    while (global_ns() - t0 < wait)
      __nanosleep(1000);
  }
  __syncthreads();
  for (size_t i = index(); i < n; i += (size_t)gridDim.x * blockDim.x)
    a.p[i] = a.value;
}

template <typename Args, typename Kernel>
void launch(Kernel kernel, const void *args, size_t n, void *stream) {
  if (n == 0) return;
  kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const Args *)args, n);
}

} // namespace

extern "C" {

void tk_fill_cuda(const void *args, size_t n, void *s) {
  launch<tk_fill_args>(fill_kernel, args, n, s);
}
void tk_iota_cuda(const void *args, size_t n, void *s) {
  launch<tk_iota_args>(iota_kernel, args, n, s);
}
void tk_axpy_cuda(const void *args, size_t n, void *s) {
  launch<tk_axpy_args>(axpy_kernel, args, n, s);
}
void tk_add_one_cuda(const void *args, size_t n, void *s) {
  launch<tk_add_one_args>(add_one_kernel, args, n, s);
}
void tk_copy_cuda(const void *args, size_t n, void *s) {
  launch<tk_copy_args>(copy_kernel, args, n, s);
}
void tk_scale_add_cuda(const void *args, size_t n, void *s) {
  launch<tk_scale_add_args>(scale_add_kernel, args, n, s);
}
void tk_slow_fill_cuda(const void *args, size_t n, void *s) {
  if (n == 0) return;
  unsigned grid = grid_for(n) < kSlowBlocks ? grid_for(n) : kSlowBlocks;
  slow_fill_kernel<<<grid, kBlock, 0, (cudaStream_t)s>>>(*(const tk_slow_fill_args *)args, n);
}

} // extern "C"
