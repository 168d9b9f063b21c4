/* CUDA side of the cloth kernels: __global__ kernels calling the shared math in cloth_math.h, and
 * the launch wrappers wf_launch calls with the stream's cudaStream_t. One thread per element, 256
 * a block. Built with -fmad=false so the results equal the CPU backend's bit for bit. */
#include <cuda_runtime.h>

#include "cloth_kernels.h"

namespace {

constexpr unsigned kBlock = 256;

unsigned grid_for(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

__device__ size_t index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }

__device__ void raise_flags(wfc_flags *f, uint32_t flags, uint32_t i) {
  atomicOr(&f->flags, flags);
  atomicMin(&f->first_bad, i);
}

__global__ void spring_kernel(wfc_spring_args a, size_t n) {
  size_t i = index();
  if (i >= n) return;
  uint32_t fl = wfc_spring_elem(&a, (uint32_t)i);
  if (fl) raise_flags(a.flags, fl, (uint32_t)i);
}

__global__ void predict_kernel(wfc_predict_args a, size_t n) {
  size_t i = index();
  if (i < n) wfc_predict_elem(&a, (uint32_t)i);
}

__global__ void solve_kernel(wfc_solve_args a, size_t n) {
  size_t s = index();
  if (s < n) wfc_solve_elem(&a, (uint32_t)s);
}

__global__ void finalize_kernel(wfc_finalize_args a, size_t n) {
  size_t i = index();
  if (i >= n) return;
  uint32_t fl = wfc_finalize_elem(&a, (uint32_t)i);
  if (fl) raise_flags(a.flags, fl, (uint32_t)i);
}

} // namespace

extern "C" void wfc_spring_step_cuda(const void *args, size_t n, void *stream) {
  spring_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfc_spring_args *)args,
                                                                  n);
}

extern "C" void wfc_xpbd_predict_cuda(const void *args, size_t n, void *stream) {
  predict_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfc_predict_args *)args,
                                                                   n);
}

extern "C" void wfc_xpbd_solve_cuda(const void *args, size_t n, void *stream) {
  solve_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfc_solve_args *)args, n);
}

extern "C" void wfc_xpbd_finalize_cuda(const void *args, size_t n, void *stream) {
  finalize_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(
      *(const wfc_finalize_args *)args, n);
}
