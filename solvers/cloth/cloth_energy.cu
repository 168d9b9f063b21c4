/* CUDA side of the cloth's energy kernel (cloth_energy.h): a thread per owned vertex. Built with
 * -fmad=false so the rows equal the CPU backend's bit for bit. */
#include <cuda_runtime.h>

#include "cloth_energy.h"

namespace {

__global__ void energy_kernel(wfc_energy_args a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) wfc_energy_elem(&a, (uint32_t)i);
}

} // namespace

extern "C" void wfc_energy_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  unsigned block = 128, grid = (unsigned)((n + block - 1) / block);
  energy_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(*(const wfc_energy_args *)args, n);
}
