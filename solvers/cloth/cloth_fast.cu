/* CUDA side of the mass-spring fast path (cloth_fast.h): one cooperative launch per frame, in one
 * of two modes (wfc_spring_frame_plan). Built with -fmad=false like the other cloth kernels.
 *
 * STRIDE: as many blocks as the occupancy allows (at most one thread per vertex), a grid-stride
 * loop over the vertices per substep, grid.sync() between substeps. Every substep reloads the
 * parameters, the clock, the vertex's own state and its rest lengths from memory.
 *
 * RESIDENT (n <= resident_max: every vertex gets a thread of its own, all blocks resident): each
 * thread loads its vertex's position, velocity, inverse mass, its 12 rest lengths (grid cloths),
 * the parameter block and the clock once, keeps them in registers for the whole frame, and per
 * substep reads only the neighbours' positions and velocities (the input half) and writes its
 * own (the output half). The math is wfc_spring_vertex, the function the per-substep kernel and
 * the CPU backend call, on the same values, so the states are bitwise those of the other paths.
 * The clock advances in a register by the same double addition the per-substep path stores.
 *
 * The resident barrier (WFC_BARRIER_NEIGHBOURS). Block b owns vertices [b B, (b + 1) B) and
 * reads vertices at most `reach` away from its own, so only the blocks owning
 * [b B - reach, (b + 1) B - 1 + reach] matter to it, and the relation is symmetric (b' reads
 * b's vertices iff b reads b''s, since |i - j| <= reach is symmetric). Each block has a counter
 * in global memory: the substeps it has finished. After substep s a block runs __syncthreads()
 * (its threads' stores happen before) and thread 0 runs __threadfence() and a release store of
 * base + s + 1; before substep s + 1 the block's threads acquire-load (ld.acquire.gpu) the
 * counters of its neighbour blocks until each reaches base + s + 1, then __syncthreads(). This
 * is the pattern of cooperative groups' grid.sync (bar.sync, fence, flag; flag, acquire,
 * bar.sync), restricted to the blocks that share data:
 *  - read after write: substep s + 1 reads half (s + 1) % 2, written in substep s by the
 *    neighbours, whose counters say they finished it;
 *  - write after read: substep s + 1 writes half s % 2, read in substep s by the neighbours
 *    only, and they finished substep s (same counters). So no block gets more than one substep
 *    ahead of a neighbour, and two halves suffice;
 *  - stale L1 lines: an acquire at GPU scope invalidates the SM's L1 before the block reads; the
 *    blocks own whole 32-byte sectors (B is a multiple of 32 vertices of 16 bytes), so a line
 *    another block on the same SM loaded earlier holds only vertices of blocks that had
 *    finished with them (the neighbours of their owner, by the argument above).
 * Counters only grow: all blocks of a launch add substeps - 1 to theirs, so at a launch's start
 * they are all equal and each block reads its own as the base (wrap-around is handled by signed
 * differences). The launch is cooperative, so all blocks are resident and a waiting block
 * cannot starve one it waits for. WEFT_CLOTH_BARRIER=grid uses grid.sync() instead.
 *
 * With a per-frame readback into a pinned host buffer (wf_cloth_set_frame_readback), the last
 * substep also writes each position to the host buffer (mapped through unified addressing), so
 * the transfer overlaps the frame's tail and no copy is enqueued after it. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "cloth_fast.h"

namespace cg = cooperative_groups;

namespace {

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    spring_frame_kernel(const __grid_constant__ wfc_frame_args a, size_t n) {
  cg::grid_group g = cg::this_grid();
  for (uint32_t s = 0; s < a.substeps; s++) {
    bool last = s + 1 == a.substeps;
    for (size_t i = g.thread_rank(); i < n; i += g.size()) {
      uint32_t fl = wfc_frame_elem(&a, s, (uint32_t)i);
      if (last && a.host_pos) a.host_pos[i] = a.half[s & 1u].pos_out[i];
      if (fl) {
        wfc_flags *f = a.half[s & 1u].flags;
        atomicOr(&f->flags, fl);
        atomicMin(&f->first_bad, (uint32_t)i);
      }
    }
    if (!last) g.sync();
  }
}

__device__ __forceinline__ unsigned load_acquire(const unsigned *p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release(unsigned *p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__global__ void __launch_bounds__(kBlock)
    spring_resident_kernel(const __grid_constant__ wfc_frame_args a, uint32_t n) {
  __shared__ unsigned base_s;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool mine = i < n;
  const wfc_params p = *a.half[0].params;
  wfp_f4 x4 = {0.0f, 0.0f, 0.0f, 0.0f}, v4 = x4;
  float rl[WFC_GRID_LINKS];
  for (int k = 0; k < WFC_GRID_LINKS; k++)
    rl[k] = 0.0f;
  if (mine) {
    x4 = a.half[0].pos_in[i];
    v4 = a.half[0].vel_in[i];
    if (a.rest6) wfc_grid_rest12(a.rest6, a.nu, a.nr, i, rl);
  }
  double time = a.half[0].clock_in->time;
  unsigned long long subs = a.half[0].clock_in->substeps;
  /* the blocks this one reads from (and that read from it) */
  const uint64_t first = (uint64_t)blockIdx.x * blockDim.x;
  const uint64_t lo_v = first > a.reach ? first - a.reach : 0;
  uint64_t hi_v = first + blockDim.x - 1 + a.reach;
  if (hi_v > n - 1) hi_v = n - 1;
  const uint32_t lo_b = (uint32_t)(lo_v / blockDim.x), hi_b = (uint32_t)(hi_v / blockDim.x);
  const bool grid_barrier = a.barrier == WFC_BARRIER_GRID;
  if (threadIdx.x == 0) base_s = a.sync[blockIdx.x];
  __syncthreads();
  const unsigned base = base_s;
  for (uint32_t s = 0; s < a.substeps; s++) {
    const wfc_spring_args *h = (s & 1u) ? &a.half[1] : &a.half[0];
    const bool last = s + 1 == a.substeps;
    if (mine) {
      /* two calls, so that each inlines with rl known: the rest lengths stay in registers */
      uint32_t fl =
          a.rest6 ? wfc_spring_vertex(&p, h->colliders, h, rl, a.nu, a.nr, i, time, &x4, &v4)
                  : wfc_spring_vertex(&p, h->colliders, h, NULL, a.nu, a.nr, i, time, &x4, &v4);
      h->pos_out[i] = x4;
      h->vel_out[i] = v4;
      if (last && a.host_pos) a.host_pos[i] = x4;
      if (fl) {
        atomicOr(&h->flags->flags, fl);
        atomicMin(&h->flags->first_bad, i);
      }
    }
    time += (double)p.dt;
    subs++;
    if (i == 0) {
      wfc_clock c;
      c.time = time;
      c.substeps = subs;
      *h->clock_out = c;
    }
    if (last) break;
    if (grid_barrier) {
      cg::this_grid().sync();
      continue;
    }
    const unsigned want = base + s + 1;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      store_release(&a.sync[blockIdx.x], want);
    }
    for (uint32_t b = lo_b + threadIdx.x; b <= hi_b; b += blockDim.x)
      if (b != blockIdx.x)
        while ((int)(load_acquire(&a.sync[b]) - want) < 0) {
        }
    __syncthreads();
  }
}

} // namespace

extern "C" void wfc_spring_frame_plan_cuda(int ordinal, uint32_t n, uint32_t block,
                                           wfc_frame_plan *out) {
  int old = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&old);
  cudaSetDevice(ordinal);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spring_resident_kernel, kBlock, 0);
  if (sms < 1) sms = 1;
  uint64_t most = (uint64_t)sms * (uint64_t)(per_sm > 0 ? per_sm : 0) * kBlock;
  out->resident_max = most > 0xffffffffu ? 0xffffffffu : (uint32_t)most;
  /* spread small cloths over the SMs: one block per SM, as few threads a block as that takes */
  uint32_t b = block;
  if (b == 0) {
    uint64_t per = ((uint64_t)n + (uint64_t)sms - 1) / (uint64_t)sms;
    b = (uint32_t)((per + 31) / 32 * 32);
    if (b < 32) b = 32;
    if (b > kBlock) b = kBlock;
  }
  if (b < 32) b = 32;
  if (b > kBlock) b = kBlock;
  b = b / 32 * 32;
  out->block = b;
  out->blocks = (uint32_t)(((uint64_t)n + b - 1) / b);
  int fit = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, spring_resident_kernel, (int)b, 0);
  out->mode = n > 0 && (uint64_t)out->blocks <= (uint64_t)sms * (uint64_t)fit ? WFC_FRAME_RESIDENT
                                                                              : WFC_FRAME_STRIDE;
  cudaGetLastError();
  cudaSetDevice(old);
}

extern "C" void wfc_spring_frame_cuda(const void *args, size_t n, void *stream) {
  const wfc_frame_args *fa = (const wfc_frame_args *)args;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeCooperative;
  at[0].val.cooperative = 1;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  cfg.stream = (cudaStream_t)stream;
  if (fa->plan.mode == WFC_FRAME_RESIDENT) {
    cfg.gridDim = dim3(fa->plan.blocks);
    cfg.blockDim = dim3(fa->plan.block);
    cudaLaunchKernelEx(&cfg, spring_resident_kernel, *fa, (uint32_t)n);
    return;
  }
  int dev = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spring_frame_kernel, kBlock, 0);
  size_t want = (n + kBlock - 1) / kBlock, most = (size_t)sms * (size_t)(per_sm > 0 ? per_sm : 1);
  cfg.gridDim = dim3((unsigned)(want < most ? want : most));
  cfg.blockDim = dim3(kBlock);
  cudaLaunchKernelEx(&cfg, spring_frame_kernel, *fa, n);
}
