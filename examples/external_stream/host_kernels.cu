/* The host program's own kernels for external_stream: plain CUDA, launched on the program's own
 * stream. The trail is a per-point exponential average of the cloth's height with a weight that
 * varies from frame to frame, so replaying frames in the wrong order, twice or not at all changes
 * the result: the graph and the eager run agree bit for bit only if every frame ran once, in
 * order. */
#include <cuda_runtime.h>

#include "host_kernels.h"

namespace {

__global__ void trail_kernel(const float4 *pos, float *trail, const unsigned *tick, size_t n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float amplitude = 1.0f + 0.25f * (float)(*tick % 5u);
  trail[i] = 0.9f * trail[i] + amplitude * pos[i].y;
}

__global__ void tick_kernel(unsigned *tick) { ++*tick; }

} // namespace

extern "C" int hk_trail_update(const float *pos, float *trail, unsigned *tick, size_t n,
                               void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (n) {
    unsigned blocks = (unsigned)((n + 255) / 256);
    trail_kernel<<<blocks, 256, 0, s>>>((const float4 *)pos, trail, tick, n);
  }
  tick_kernel<<<1, 1, 0, s>>>(tick);
  return (int)cudaGetLastError();
}
