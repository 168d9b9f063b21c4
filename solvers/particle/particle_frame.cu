/* CUDA side of the one-launch frame (wfp_frame_run_args, particle_kernels.h: wfp_frame). Its own
 * translation unit because its contact stage reads, later in the same launch, the sorted copies
 * and the cell table its earlier stages wrote: those loads must not take the read-only data
 * cache (not coherent within a launch), so this unit builds particle_math.h's functions with
 * plain loads (WFP_PLAIN_LOADS). grid.sync() orders plain loads and stores across the grid.
 * Built with -fmad=false like the stage kernels, so the states are bitwise theirs. */
#define WFP_PLAIN_LOADS 1
#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "particle_device.cuh"
#include "particle_kernels.h"

namespace {

using namespace wfp_device;

/* ---- the one-launch frame (wfp_frame_run_args) ------------------------------------------------
 *
 * A cooperative launch (every block resident, at most wfp_frame_blocks_cuda of them) runs the
 * frame's substeps; each stage is a grid-stride loop calling the stage kernel's per-element
 * function, and grid.sync() separates the stages (it orders the memory too: what one stage wrote
 * is what the next reads). A substep's stages:
 *   keys     keys_block per block-wide stride (its block reductions need every thread)
 *   scan     block b scans its share [b c, (b + 1) c) of the counts, c = ceil(entries / blocks):
 *            its sum to partial[b]; grid.sync(); the sum of partial[0 .. b) is its offset, and
 *            its share is scanned in tiles of 256 (cub::BlockScan) carrying the running sum.
 *            Integer sums: the start table is exactly the exclusive scan CUB's would give
 *   scatter  thread 0 of block 0 advances the clock; then wfp_scatter_elem
 *   place    the counts cleared, then wfp_place_elem
 *   contacts wfp_collide_dem / wfp_collide_xpbd, the contact list in shared memory as in the
 *            stage kernels, flags and overflows as they raise them
 * and grid.sync() after the contacts (the next keys read the positions they wrote). The clock is
 * read by the placement (who is born) and the contacts (wfp_clock.start), after the scatter's
 * grid.sync(). */
constexpr unsigned kFrameBlock = kBlock;

template <bool XPBD>
__global__ void __launch_bounds__(kFrameBlock) frame_kernel(wfp_frame_run_args a, size_t n) {
  namespace cg = cooperative_groups;
  using Scan = cub::BlockScan<uint32_t, kFrameBlock>;
  using Reduce = cub::BlockReduce<uint32_t, kFrameBlock>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Reduce::TempStorage reduce;
  } tmp;
  __shared__ uint32_t carry;
  __shared__ uint32_t list[WFP_COLLIDE_SCRATCH * kFrameBlock];
  cg::grid_group grid = cg::this_grid();
  const size_t stride = (size_t)gridDim.x * kFrameBlock;
  const size_t me = (size_t)blockIdx.x * kFrameBlock + threadIdx.x;
  const uint32_t entries = a.scan.n;
  const uint32_t share = (entries + gridDim.x - 1) / gridDim.x;
  const uint32_t lo = min(blockIdx.x * share, entries), hi = min(lo + share, entries);
  for (uint32_t sub = 0; sub < a.substeps; sub++) {
    const size_t live = wfp_live(&a.keys.params->count, n);
    /* keys: every thread of a block takes part in each round (keys_block's reductions) */
    for (size_t base = (size_t)blockIdx.x * kFrameBlock; base < n; base += stride) {
      size_t i = base + threadIdx.x;
      keys_block(a.keys, i < live, (uint32_t)i);
    }
    grid.sync();
    /* scan: this block's sum, then its share from the sum of the blocks before it */
    uint32_t sum = 0;
    for (uint32_t k = lo + threadIdx.x; k < hi; k += kFrameBlock)
      sum += a.scan.in[k];
    sum = Reduce(tmp.reduce).Sum(sum);
    if (threadIdx.x == 0) a.partial[blockIdx.x] = sum;
    grid.sync();
    uint32_t before = 0;
    for (uint32_t b = threadIdx.x; b < blockIdx.x; b += kFrameBlock)
      before += a.partial[b];
    __syncthreads(); /* (tmp is reused) */
    before = Reduce(tmp.reduce).Sum(before);
    if (threadIdx.x == 0) carry = before;
    __syncthreads();
    for (uint32_t t0 = lo; t0 < hi; t0 += kFrameBlock) {
      uint32_t k = t0 + threadIdx.x;
      uint32_t v = k < hi ? a.scan.in[k] : 0u, ex = 0, total = 0;
      Scan(tmp.scan).ExclusiveSum(v, ex, total);
      if (k < hi) a.scan.out[k] = carry + ex;
      __syncthreads();
      if (threadIdx.x == 0) carry += total;
      __syncthreads();
    }
    grid.sync();
    /* scatter, and the clock */
    if (me == 0) wfp_clock_advance(a.scatter.clock, a.scatter.params);
    for (size_t i = me; i < live; i += stride)
      wfp_scatter_elem(&a.scatter, (uint32_t)i);
    grid.sync();
    /* place, and the counts cleared for the next substep */
    for (size_t k = me; k < a.place.count_n; k += stride)
      a.place.count[k] = 0u;
    for (size_t s = me; s < live; s += stride)
      wfp_place_elem(&a.place, (uint32_t)s);
    grid.sync();
    /* contacts, colliders, integration */
    uint32_t over = 0u;
    for (size_t s = me; s < live; s += stride) {
      wfx_forces F = {a.collide.forces, 0};
      uint32_t o = 0u, fl;
      if (XPBD)
        fl = wfp_collide_xpbd(&a.collide, (uint32_t)s, list + threadIdx.x, kFrameBlock, &F);
      else
        fl = wfp_collide_dem(&a.collide, (uint32_t)s, list + threadIdx.x, kFrameBlock, &o, &F);
      if (fl) raise_flags(a.collide, fl, a.collide.vals[s]);
      over += o;
    }
    if (over) atomicAdd(&a.collide.clock->overflows, over);
    grid.sync();
  }
}

} // namespace

extern "C" void wfp_frame_cuda(const void *args, size_t n, void *stream) {
  (void)n;
  const wfp_frame_run_args *a = (const wfp_frame_run_args *)args;
  int dev = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (a->xpbd)
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, frame_kernel<true>, kFrameBlock, 0);
  else
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, frame_kernel<false>, kFrameBlock, 0);
  size_t want = ((size_t)a->launch + kFrameBlock - 1) / kFrameBlock;
  size_t most = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1);
  if (most > a->partial_n) most = a->partial_n;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeCooperative;
  at[0].val.cooperative = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  cfg.stream = (cudaStream_t)stream;
  cfg.gridDim = dim3((unsigned)(want < most ? (want ? want : 1) : most));
  cfg.blockDim = dim3(kFrameBlock);
  if (a->xpbd)
    cudaLaunchKernelEx(&cfg, frame_kernel<true>, *a, (size_t)a->launch);
  else
    cudaLaunchKernelEx(&cfg, frame_kernel<false>, *a, (size_t)a->launch);
}

extern "C" uint32_t wfp_frame_blocks_cuda(int ordinal, int multiprocessors, int xpbd) {
  int old = 0, per_sm = 0;
  cudaGetDevice(&old);
  if (cudaSetDevice(ordinal) != cudaSuccess) return 0;
  cudaError_t e = xpbd ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, frame_kernel<true>,
                                                                       kFrameBlock, 0)
                       : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, frame_kernel<false>,
                                                                       kFrameBlock, 0);
  cudaSetDevice(old);
  if (e != cudaSuccess || per_sm <= 0 || multiprocessors <= 0) {
    cudaGetLastError();
    return 0;
  }
  return (uint32_t)multiprocessors * (uint32_t)per_sm;
}
