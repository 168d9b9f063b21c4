/* The host program's side of the wrapped-stream tests (see test_native.h). */
#include <cuda_runtime.h>

#include "test_native.h"

namespace {
__global__ void plain_scale_add(float *p, size_t n, float mul, float add) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * mul + add;
}
} // namespace

extern "C" {

int tn_stream_create(int ordinal, void **stream) {
  cudaError_t e = cudaSetDevice(ordinal);
  if (e != cudaSuccess) return (int)e;
  cudaStream_t s = nullptr;
  e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  *stream = s;
  return (int)e;
}

int tn_stream_destroy(void *stream) { return (int)cudaStreamDestroy((cudaStream_t)stream); }

int tn_stream_synchronize(void *stream) { return (int)cudaStreamSynchronize((cudaStream_t)stream); }

int tn_scale_add(float *p, size_t n, float mul, float add, void *stream) {
  if (n == 0) return 0;
  plain_scale_add<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(p, n, mul, add);
  return (int)cudaGetLastError();
}

int tn_capture_begin(void *stream) {
  return (int)cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal);
}

int tn_capture_discard(void *stream) {
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture((cudaStream_t)stream, &g);
  if (g) cudaGraphDestroy(g);
  return (int)e;
}

const char *tn_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }

} // extern "C"
