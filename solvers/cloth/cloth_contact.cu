/* Cloth contact, CUDA side (cloth_contact.h): __global__ kernels calling the shared math, one
 * thread a vertex, 256 a block. Built with -fmad=false: the CPU backend's bits. */
#include <cuda_runtime.h>

#include "cloth_contact.h"

namespace {

constexpr unsigned kBlock = 256;

unsigned grid_for(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

__device__ size_t index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void disp_kernel(wfcc_disp_args a, size_t n) {
  size_t i = index();
  if (i >= n) return;
  uint32_t b = wfcc_disp_bits(&a, (uint32_t)i), e = wfcc_edge_bits(&a, (uint32_t)i);
  if (b) atomicMax(&a.max_bits[0], b); /* integer maxima: order-free, the CPU's result */
  if (e) atomicMax(&a.max_bits[1], e);
}

#define WFCC_KERNEL(name, args_t, elem)                                                            \
  __global__ void name(args_t a, size_t n) {                                                       \
    size_t i = index();                                                                            \
    if (i < n) elem(&a, (uint32_t)i);                                                              \
  }
WFCC_KERNEL(reach_kernel, wfcc_reach_args, wfcc_reach_elem)
WFCC_KERNEL(keys_kernel, wfcc_keys_args, wfcc_keys_elem)
WFCC_KERNEL(gather_kernel, wfcc_gather_args, wfcc_gather_elem)
WFCC_KERNEL(apply_kernel, wfcc_apply_args, wfcc_apply_elem)
WFCC_KERNEL(scatter_kernel, wfcc_scatter_args, wfcc_scatter_elem)
#undef WFCC_KERNEL

} // namespace

#define WFCC_WRAPPER(name, kernel, args_t)                                                         \
  extern "C" void name(const void *args, size_t n, void *stream) {                                 \
    if (!n) return;                                                                                \
    kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const args_t *)args, n);            \
  }
WFCC_WRAPPER(wfcc_disp_cuda, disp_kernel, wfcc_disp_args)
WFCC_WRAPPER(wfcc_reach_cuda, reach_kernel, wfcc_reach_args)
WFCC_WRAPPER(wfcc_keys_cuda, keys_kernel, wfcc_keys_args)
WFCC_WRAPPER(wfcc_gather_cuda, gather_kernel, wfcc_gather_args)
WFCC_WRAPPER(wfcc_apply_cuda, apply_kernel, wfcc_apply_args)
WFCC_WRAPPER(wfcc_scatter_cuda, scatter_kernel, wfcc_scatter_args)
#undef WFCC_WRAPPER
