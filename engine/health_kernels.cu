/* CUDA side of the health kernels: __global__ kernels calling the shared math in
 * health_kernels.h, and the launch wrappers wf_launch calls with the stream's cudaStream_t. One
 * thread per element, 256 a block. The unhealthy key is reduced per warp (shuffles) and then
 * with one 64-bit integer atomicMin per warp; the single-element kernels run one thread. */
#include <cuda_runtime.h>

#include "health_kernels.h"

namespace {

constexpr unsigned kBlock = 256;

unsigned grid_for(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

__device__ size_t index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void check_kernel(wfh_check_args a, size_t n) {
  size_t i = index();
  unsigned long long bad = WFH_NO_KEY;
  if (i < n) {
    float value;
    uint32_t collider;
    if (wfh_point(&a, (uint32_t)i, &value, &collider) != WFH_OK) bad = wfh_key(&a, (uint32_t)i);
  }
  /* a healthy warp (the usual case) skips the reduction */
  if (!__any_sync(0xffffffffu, bad != WFH_NO_KEY)) return;
  for (int d = 16; d > 0; d >>= 1) {
    unsigned long long o = __shfl_down_sync(0xffffffffu, bad, d);
    bad = o < bad ? o : bad;
  }
  if ((threadIdx.x & 31) == 0 && bad != WFH_NO_KEY)
    atomicMin((unsigned long long *)&a.rec->key, bad);
}

__global__ void detail_kernel(wfh_check_args a) { wfh_detail(&a); }

__global__ void verdict_kernel(wfh_verdict_args a) { wfh_verdict(&a); }

__global__ void commit_kernel(wfh_commit_args a, size_t n) {
  size_t i = index();
  if (i < n && a.gate->ok) wfh_commit(&a, (uint32_t)i);
}

} // namespace

extern "C" void wfh_check_cuda(const void *args, size_t n, void *stream) {
  check_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfh_check_args *)args, n);
}

extern "C" void wfh_detail_cuda(const void *args, size_t n, void *stream) {
  detail_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*(const wfh_check_args *)args);
}

extern "C" void wfh_verdict_cuda(const void *args, size_t n, void *stream) {
  verdict_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*(const wfh_verdict_args *)args);
}

extern "C" void wfh_commit_cuda(const void *args, size_t n, void *stream) {
  commit_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfh_commit_args *)args,
                                                                  n);
}
