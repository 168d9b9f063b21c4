/* CUDA side of the world's kernels (world_kernels.h): one thread per vertex, 256 a block. */
#include <cuda_runtime.h>

#include "world_kernels.h"

namespace {

constexpr unsigned kBlock = 256;

__global__ void scatter_kernel(wfw_scatter_args a) {
  size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= a.n) return;
  a.pos[a.gid[k]] = a.stage[k];
  a.vel[a.gid[k]] = a.stage[a.n + k];
}

} // namespace

extern "C" void wfw_scatter_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  unsigned grid = (unsigned)((n + kBlock - 1) / kBlock);
  scatter_kernel<<<grid, kBlock, 0, (cudaStream_t)stream>>>(*(const wfw_scatter_args *)args);
}
