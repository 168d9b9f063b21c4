// A kernel whose only job is to tell whether this binary holds code a device can run.
#include <cuda_runtime.h>

__global__ void wf_probe_kernel(int *p) {
  if (p) *p = 1;
}

extern "C" int wf__cuda_probe(int device) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return (int)e;
  cudaFuncAttributes a;
  return (int)cudaFuncGetAttributes(&a, wf_probe_kernel);
}
