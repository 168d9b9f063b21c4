/* CUDA side of the XPBD one-launch frame (cloth_xpbd_frame.h). Built with -fmad=false like the
 * other cloth kernels, so that the per-element math gives the CPU backend's bits.
 *
 * One body (frame_body) for both modes; only the barrier and the spread of the elements differ:
 *  BLOCK: one block; thread t takes elements t, t + blockDim, ...; __syncthreads() between
 *    stages, which orders the block's global-memory writes before its reads after it.
 *  GRID: a cooperative launch (all blocks resident); thread t of the grid takes t, t + threads,
 *    ...; grid.sync() between stages (a release/acquire at GPU scope around a grid barrier, so
 *    stale L1 lines of another SM are not read after it).
 *
 * Why the barriers suffice (every hazard is between two consecutive stages, which a barrier
 * separates):
 *  - PREDICT writes pred[i], vpred[i] of its own vertex and, for aerodynamics, reads pos, vel of
 *    the vertices of i's triangles, written by the previous substep's FINALIZE (barrier after
 *    FINALIZE). Element 0 writes the clock the FINALIZE reads (clock_in of finalize); all
 *    vertices read it after the barriers of the SOLVE passes.
 *  - The multipliers are cleared in the PREDICT stage: the last SOLVE that read them is before the
 *    previous FINALIZE's barrier, the first that reads them after PREDICT's.
 *  - SOLVE colour q reads pos (fixed during the substep) and reads and writes pred of its
 *    constraints' vertices; the constraints of a colour share no vertex (cloth_mesh.c's
 *    colouring), so within a stage no two threads touch one vertex; colour q + 1 runs after a
 *    barrier, so it reads what colour q wrote, and colour q's reads are done before q + 1 writes.
 *  - FINALIZE reads pos[i], pred[i], vpred[i], vel[i] and writes pos[i], vel[i] of its own vertex
 *    only; the readback writes vertex i's position, which the same thread just stored.
 * Element 0 is the same thread in PREDICT and FINALIZE (t = 0), so the clock it writes in
 * PREDICT and copies in FINALIZE needs no barrier of its own, and it has them anyway. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "cloth_xpbd_frame.h"

namespace cg = cooperative_groups;

namespace {

constexpr uint32_t kMaxBlock = WFC_XPBD_BLOCK_THREADS; /* the launch bounds of both kernels */

template <bool GRID> __device__ __forceinline__ void barrier() {
  if constexpr (GRID)
    cg::this_grid().sync();
  else
    __syncthreads();
}

template <bool GRID> __device__ __forceinline__ void frame_body(const wfc_xpbd_frame_args &a) {
  const uint32_t t0 = GRID ? blockIdx.x * blockDim.x + threadIdx.x : threadIdx.x;
  const uint32_t step = GRID ? gridDim.x * blockDim.x : blockDim.x;
  for (uint32_t s = 0; s < a.substeps; s++) {
    const bool last = s + 1 == a.substeps;
    for (uint32_t i = t0; i < a.n; i += step)
      wfc_predict_elem(&a.predict, i);
    if (a.solve.lambda)
      for (uint32_t k = t0; k < a.constraints; k += step)
        a.solve.lambda[k] = 0.0f;
    barrier<GRID>();
    for (uint32_t it = 0; it < a.iterations; it++)
      for (uint32_t q = 0; q < a.colours; q++) {
        const wfc_solve_args sa = wfc_xpbd_colour_args(&a, q);
        const uint32_t m = a.colour_start[q + 1] - a.colour_start[q];
        for (uint32_t k = t0; k < m; k += step)
          wfc_solve_elem(&sa, k);
        barrier<GRID>();
      }
    for (uint32_t i = t0; i < a.n; i += step) {
      wfx_forces F = {a.finalize.forces, 0};
      const uint32_t fl = wfc_finalize_elem(&a.finalize, i, &F);
      if (last && a.host_pos) wfc_xpbd_put(&a, i, a.finalize.pos[i]);
      if (fl) {
        atomicOr(&a.finalize.flags->flags, fl);
        atomicMin(&a.finalize.flags->first_bad, i);
      }
    }
    if (!last) barrier<GRID>();
  }
}

__global__ void __launch_bounds__(kMaxBlock)
    xpbd_block_kernel(const __grid_constant__ wfc_xpbd_frame_args a) {
  frame_body<false>(a);
}

__global__ void __launch_bounds__(kMaxBlock)
    xpbd_grid_kernel(const __grid_constant__ wfc_xpbd_frame_args a) {
  frame_body<true>(a);
}

/* Whole warps, at least one, at most the launch bounds. */
uint32_t warps_of(uint32_t b) {
  if (b < 32) b = 32;
  if (b > kMaxBlock) b = kMaxBlock;
  return b / 32 * 32;
}

} // namespace

extern "C" void wfc_xpbd_frame_plan_cuda(int ordinal, uint32_t n, uint32_t widest, uint32_t block,
                                         bool resident, wfc_xpbd_plan *out) {
  int old = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&old);
  cudaSetDevice(ordinal);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
  if (sms < 1) sms = 1;
  const uint64_t most = n > widest ? n : widest; /* elements of the widest stage */
  if (resident && n <= WFC_XPBD_BLOCK_MAX) {
    /* one block: no more threads than the widest stage has elements */
    uint32_t b = block ? block : WFC_XPBD_BLOCK_THREADS;
    if (!block && most < b) b = (uint32_t)((most + 31) / 32 * 32);
    out->mode = WFC_XPBD_BLOCK;
    out->block = warps_of(b);
    out->blocks = 1;
  } else {
    const uint32_t b = warps_of(block ? block : WFC_XPBD_GRID_THREADS);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, xpbd_grid_kernel, (int)b, 0);
    const uint64_t want = (most + b - 1) / b;
    const uint64_t cap = (uint64_t)sms * (uint64_t)(per_sm > 0 ? per_sm : 1);
    out->mode = WFC_XPBD_GRID;
    out->block = b;
    out->blocks = (uint32_t)(want < cap ? (want > 0 ? want : 1) : cap);
  }
  cudaGetLastError();
  cudaSetDevice(old);
}

extern "C" void wfc_xpbd_frame_cuda(const void *args, size_t n, void *stream) {
  const wfc_xpbd_frame_args *fa = (const wfc_xpbd_frame_args *)args;
  (void)n;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeCooperative;
  at[0].val.cooperative = 1;
  cfg.stream = (cudaStream_t)stream;
  cfg.gridDim = dim3(fa->plan.blocks);
  cfg.blockDim = dim3(fa->plan.block);
  if (fa->plan.mode == WFC_XPBD_GRID) {
    cfg.attrs = at;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, xpbd_grid_kernel, *fa);
  } else {
    cudaLaunchKernelEx(&cfg, xpbd_block_kernel, *fa);
  }
}
