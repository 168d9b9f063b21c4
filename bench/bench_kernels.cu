/* CUDA side of the benchmark kernels: __global__ kernels over the per-element math of
 * bench_kernels.h, and the wrappers wf_launch calls with the stream's cudaStream_t. */
#include "bench_kernels.h"

#include <cuda_runtime.h>

#define WF_BENCH_BLOCK 256

static unsigned wf_bench_blocks(size_t n) {
  return (unsigned)((n + WF_BENCH_BLOCK - 1) / WF_BENCH_BLOCK);
}

__global__ void wf_bench_tiny_global(wf_bench_tiny_args a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) wf_bench_tiny_elem(&a, i);
}

/* %globaltimer counts nanoseconds whatever the SM clock does (clock64 counts cycles, whose rate
 * changes with boost), so the kernel lasts the asked time on any GPU. __nanosleep keeps the
 * waiting threads off the issue slots. */
static __device__ __forceinline__ uint64_t wf_bench_globaltimer(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void wf_bench_busy_global(wf_bench_busy_args a, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t deadline = wf_bench_busy_deadline(&a, wf_bench_globaltimer());
  uint64_t spins = 0;
  while (wf_bench_globaltimer() < deadline) {
    __nanosleep(1000);
    spins++;
  }
  wf_bench_busy_finish(&a, i, spins);
}

extern "C" void wf_bench_tiny_cuda(const void *args, size_t n, void *native_stream) {
  if (n == 0) return;
  wf_bench_tiny_global<<<wf_bench_blocks(n), WF_BENCH_BLOCK, 0, (cudaStream_t)native_stream>>>(
      *(const wf_bench_tiny_args *)args, n);
}

extern "C" void wf_bench_busy_cuda(const void *args, size_t n, void *native_stream) {
  if (n == 0) return;
  wf_bench_busy_global<<<wf_bench_blocks(n), WF_BENCH_BLOCK, 0, (cudaStream_t)native_stream>>>(
      *(const wf_bench_busy_args *)args, n);
}
