/* CUDA side of the gather's kernel (gather_kernels.h): one thread per row, 256 a block. */
#include <cuda_runtime.h>

#include "gather_kernels.h"

namespace {

constexpr unsigned kBlock = 256;

__global__ void scatter_kernel(wfpt_scatter_args a, size_t n) {
  size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < n) wfpt_scatter_row(&a, k);
}

} // namespace

extern "C" void wfpt_scatter_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  unsigned grid = (unsigned)((n + kBlock - 1) / kBlock);
  scatter_kernel<<<grid, kBlock, 0, (cudaStream_t)stream>>>(*(const wfpt_scatter_args *)args, n);
}
