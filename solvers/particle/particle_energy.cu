/* CUDA side of the particles' energy kernels (particle_energy.h): a thread per particle (per
 * chunk, per slot for the grid's). Built with -fmad=false so the rows equal the CPU backend's
 * bit for bit. */
#include <cuda_runtime.h>

#include "particle_energy.h"

namespace {

__global__ void energy_kernel(wfp_energy_args a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) wfp_energy_elem(&a, (uint32_t)i);
}

__global__ void rmax_kernel(wfp_energy_grid_args a, size_t n) {
  size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c < n) wfp_energy_rmax_part(&a, (uint32_t)c);
}

__global__ void inv_kernel(wfp_energy_grid_args a) { wfp_energy_rmax_final(&a); }

__global__ void keys_kernel(wfp_energy_grid_args a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) wfp_energy_keys_elem(&a, (uint32_t)i);
}

__global__ void starts_kernel(wfp_energy_grid_args a, size_t n) {
  size_t s = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (s < n) wfp_energy_starts_elem(&a, (uint32_t)s);
}

unsigned blocks(size_t n, unsigned block) { return (unsigned)((n + block - 1) / block); }

} // namespace

extern "C" void wfp_energy_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  energy_kernel<<<blocks(n, 128), 128, 0, (cudaStream_t)stream>>>(*(const wfp_energy_args *)args,
                                                                  n);
}

extern "C" void wfp_energy_rmax_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  rmax_kernel<<<blocks(n, 128), 128, 0, (cudaStream_t)stream>>>(*(const wfp_energy_grid_args *)args,
                                                                n);
}

extern "C" void wfp_energy_inv_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  inv_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*(const wfp_energy_grid_args *)args);
}

extern "C" void wfp_energy_keys_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  keys_kernel<<<blocks(n, 256), 256, 0, (cudaStream_t)stream>>>(*(const wfp_energy_grid_args *)args,
                                                                n);
}

extern "C" void wfp_energy_starts_cuda(const void *args, size_t n, void *stream) {
  if (n == 0) return;
  starts_kernel<<<blocks(n, 256), 256, 0, (cudaStream_t)stream>>>(
      *(const wfp_energy_grid_args *)args, n);
}
