/* CUDA side of the mass-spring fast path (cloth_fast.h): one cooperative launch per frame, its
 * blocks all resident (as many as the occupancy allows, at most one thread per vertex), a
 * grid-stride loop over the vertices per substep and a grid-wide barrier between substeps.
 * Built with -fmad=false like the other cloth kernels. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "cloth_fast.h"

namespace cg = cooperative_groups;

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock) spring_frame_kernel(wfc_frame_args a, size_t n) {
  cg::grid_group g = cg::this_grid();
  for (uint32_t s = 0; s < a.substeps; s++) {
    for (size_t i = g.thread_rank(); i < n; i += g.size()) {
      uint32_t fl = wfc_frame_elem(&a, s, (uint32_t)i);
      if (fl) {
        wfc_flags *f = a.half[s & 1u].flags;
        atomicOr(&f->flags, fl);
        atomicMin(&f->first_bad, (uint32_t)i);
      }
    }
    if (s + 1 < a.substeps) g.sync();
  }
}

} // namespace

extern "C" void wfc_spring_frame_cuda(const void *args, size_t n, void *stream) {
  int dev = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spring_frame_kernel, kBlock, 0);
  size_t want = (n + kBlock - 1) / kBlock, most = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(want < most ? want : most));
  cfg.blockDim = dim3(kBlock);
  cfg.stream = (cudaStream_t)stream;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeCooperative;
  at[0].val.cooperative = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, spring_frame_kernel, *(const wfc_frame_args *)args, n);
}
