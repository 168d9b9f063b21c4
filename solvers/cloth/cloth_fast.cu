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
 * (its threads' stores happen before) and thread 0 runs a release store (st.release.gpu) of
 * base + s + 1; before substep s + 1 the block's threads acquire-load (ld.acquire.gpu) the
 * counters of its neighbour blocks until each reaches base + s + 1, then __syncthreads(). The
 * release is cumulative in the PTX memory model: the block's stores precede it through the
 * bar.sync, so a block that acquires the counter sees them; no separate fence is needed (one
 * cost ~5% of a substep). This is the pattern of cooperative groups' grid.sync (bar.sync,
 * release; acquire, bar.sync), restricted to the blocks that share data:
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

/* The resident barrier among neighbouring blocks (see the top of the file): publish substep
 * want, wait for the blocks lo_b..hi_b to have published it. */
__device__ __forceinline__ void neighbour_barrier(const wfc_frame_args &a, unsigned want,
                                                  uint32_t lo_b, uint32_t hi_b) {
  __syncthreads();
  if (threadIdx.x == 0) store_release(&a.sync[blockIdx.x], want);
  for (uint32_t b = lo_b + threadIdx.x; b <= hi_b; b += blockDim.x)
    if (b != blockIdx.x)
      while ((int)(load_acquire(&a.sync[b]) - want) < 0) {
      }
  __syncthreads();
}

/* The end of substep s of a resident frame, after the block's writes: the clock's writer thread
 * publishes the clock (time after the substep, substeps so far); unless it was the last substep,
 * the barrier (grid-wide or among neighbour blocks) before the next one. */
__device__ __forceinline__ void substep_end(const wfc_frame_args &a, const wfc_spring_args *h,
                                            bool writer, double time, unsigned long long subs,
                                            bool last, bool grid_barrier, unsigned want,
                                            uint32_t lo_b, uint32_t hi_b) {
  if (writer) {
    wfc_clock c;
    c.time = time;
    c.substeps = subs;
    *h->clock_out = c;
  }
  if (last) return;
  if (grid_barrier)
    cg::this_grid().sync();
  else
    neighbour_barrier(a, want, lo_b, hi_b);
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
    substep_end(a, h, i == 0, time, subs, last, grid_barrier, base + s + 1, lo_b, hi_b);
  }
}

/* The lanes' partial sums combined in the canonical shape (cloth_math.h): L = 1: the tree
 * itself; L = 2: lane l holds s_l, s_{l+2}: one butterfly each, then their sum; L = 4: lane l
 * holds s_l: butterflies over 1 then 2. Both partners of a butterfly get the same sum (float
 * addition commutes). mask: the vertex's lanes in the warp. */
template <int L> __device__ __forceinline__ wfc_v3 shfl_xor3(wfc_v3 a, int m, unsigned mask) {
  wfc_v3 r;
  r.x = __shfl_xor_sync(mask, a.x, m, L);
  r.y = __shfl_xor_sync(mask, a.y, m, L);
  r.z = __shfl_xor_sync(mask, a.z, m, L);
  return r;
}

template <int L> __device__ __forceinline__ wfc_v3 lanes_combine(const wfc_v3 *acc, unsigned mask) {
  if constexpr (L == 1) {
    return wfc_tree4(acc[0], acc[1], acc[2], acc[3]);
  } else if constexpr (L == 2) {
    wfc_v3 b0 = wfc_add(acc[0], shfl_xor3<L>(acc[0], 1, mask));
    wfc_v3 b1 = wfc_add(acc[1], shfl_xor3<L>(acc[1], 1, mask));
    return wfc_add(b0, b1);
  } else {
    wfc_v3 x = wfc_add(acc[0], shfl_xor3<L>(acc[0], 1, mask));
    return wfc_add(x, shfl_xor3<L>(x, 2, mask));
  }
}

/* The resident frame of a grid cloth: L threads a vertex (a block of B threads owns the
 * B / L vertices [first, first + B / L)), lane l holding in registers the springs at list
 * positions l, l + L, ... (wfc_lane_springs, from the CSR list once a frame). SMEM: after the
 * barrier the block copies the positions and velocities of [first - reach, first + B / L - 1 +
 * reach] (clipped to the cloth) into shared memory, coalesced, and the gather reads them there;
 * these are the vertices of the blocks it waits for, so the barrier covers the copy as it covered
 * the direct reads. Every lane runs wfc_spring_finish on the same values (the same result); lane
 * 0 writes. */
template <int L, bool SMEM>
__global__ void __launch_bounds__(kBlock)
    spring_grid_kernel(const __grid_constant__ wfc_frame_args a, uint32_t n) {
  extern __shared__ wfp_f4 stage[];
  __shared__ unsigned base_s;
  constexpr int NJ = WFC_GRID_LINKS / L, NP = 4 / L;
  const uint32_t vpb = blockDim.x / L, lane = threadIdx.x % L;
  const uint32_t first = blockIdx.x * vpb;
  const uint32_t i = first + threadIdx.x / L;
  const bool mine = i < n;
  const unsigned mask = L == 1 ? 1u : (((1u << L) - 1u) << ((threadIdx.x & 31u) & ~(L - 1u)));
  const wfc_params p = *a.half[0].params;
  wfp_f4 x4 = {0.0f, 0.0f, 0.0f, 0.0f}, v4 = x4;
  int32_t dk[NJ];
  float rest[NJ];
  uint32_t nl = 0;
#pragma unroll
  for (int j = 0; j < NJ; j++)
    dk[j] = 0, rest[j] = 0.0f;
  if (mine) {
    x4 = a.half[0].pos_in[i];
    v4 = a.half[0].vel_in[i];
    nl = wfc_lane_springs(&a.half[0], i, lane, L, dk, rest);
  }
  double time = a.half[0].clock_in->time;
  unsigned long long subs = a.half[0].clock_in->substeps;
  const uint32_t lo_v = first > a.reach ? first - a.reach : 0;
  uint64_t hv = (uint64_t)first + vpb - 1 + a.reach;
  const uint32_t hi_v = hv > n - 1 ? n - 1 : (uint32_t)hv;
  const uint32_t lo_b = lo_v / vpb, hi_b = hi_v / vpb;
  const uint32_t span = a.plan.span;
  const bool grid_barrier = a.barrier == WFC_BARRIER_GRID;
  if (threadIdx.x == 0) base_s = a.sync[blockIdx.x];
  __syncthreads();
  const unsigned base = base_s;
  for (uint32_t s = 0; s < a.substeps; s++) {
    const wfc_spring_args *h = (s & 1u) ? &a.half[1] : &a.half[0];
    const bool last = s + 1 == a.substeps;
    const wfp_f4 *P = h->pos_in, *V = h->vel_in;
    uint32_t li = i;
    if constexpr (SMEM) {
      for (uint32_t t = threadIdx.x; t <= hi_v - lo_v; t += blockDim.x) {
        stage[t] = P[lo_v + t];
        stage[span + t] = V[lo_v + t];
      }
      __syncthreads();
      P = stage, V = stage + span, li = i - lo_v;
    }
    if (mine) {
      wfc_v3 f = wfc_v(0.0f, 0.0f, 0.0f);
      if (x4.w > 0.0f) {
        wfc_v3 acc[4];
#pragma unroll
        for (int q = 0; q < 4; q++)
          acc[q] = wfc_v(0.0f, 0.0f, 0.0f);
        wfc_lane_gather(&p, P, V, li, wfc_xyz(x4), wfc_xyz(v4), L, nl, dk, rest, acc);
        (void)NP;
        f = lanes_combine<L>(acc, mask);
      }
      uint32_t fl = wfc_spring_finish(&p, h->colliders, h, i, time, f, &x4, &v4);
      if (lane == 0) {
        h->pos_out[i] = x4;
        h->vel_out[i] = v4;
        if (last && a.host_pos) a.host_pos[i] = x4;
        if (fl) {
          atomicOr(&h->flags->flags, fl);
          atomicMin(&h->flags->first_bad, i);
        }
      }
    }
    time += (double)p.dt;
    subs++;
    substep_end(a, h, blockIdx.x == 0 && threadIdx.x == 0, time, subs, last, grid_barrier,
                base + s + 1, lo_b, hi_b);
  }
}

/* The grid kernel of (lanes, smem). */
typedef void (*grid_kernel_fn)(wfc_frame_args, uint32_t);
grid_kernel_fn grid_kernel(uint32_t lanes, uint32_t smem) {
  if (lanes == 4) return smem ? spring_grid_kernel<4, true> : spring_grid_kernel<4, false>;
  if (lanes == 2) return smem ? spring_grid_kernel<2, true> : spring_grid_kernel<2, false>;
  return smem ? spring_grid_kernel<1, true> : spring_grid_kernel<1, false>;
}

} // namespace

/* Threads a block that spread `threads` over the SMs (one block a SM where that takes at most
 * kBlock threads), or the asked block size; whole warps. */
static uint32_t spread_block(uint32_t asked, uint64_t threads, int sms) {
  uint32_t b = asked;
  if (b == 0) {
    uint64_t per = (threads + (uint64_t)sms - 1) / (uint64_t)sms;
    b = (uint32_t)((per + 31) / 32 * 32);
  }
  if (b < 32) b = 32;
  if (b > kBlock) b = kBlock;
  return b / 32 * 32;
}

extern "C" void wfc_spring_frame_plan_cuda(int ordinal, uint32_t n, const wfc_frame_want *want,
                                           wfc_frame_plan *out) {
  int old = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&old);
  cudaSetDevice(ordinal);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
  if (sms < 1) sms = 1;
  /* resident_max: one thread a vertex, no staging, full blocks */
  if (want->grid)
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_kernel(1, 0), kBlock, 0);
  else
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spring_resident_kernel, kBlock, 0);
  uint64_t most = (uint64_t)sms * (uint64_t)(per_sm > 0 ? per_sm : 0) * kBlock;
  out->resident_max = most > 0xffffffffu ? 0xffffffffu : (uint32_t)most;
  out->mode = WFC_FRAME_STRIDE;
  out->lanes = 1, out->smem = 0, out->span = 0;
  out->block = spread_block(want->block, n, sms);
  out->blocks = (uint32_t)(((uint64_t)n + out->block - 1) / out->block);
  if (n == 0) goto done;
  if (!want->grid) {
    int fit = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, spring_resident_kernel, (int)out->block, 0);
    if ((uint64_t)out->blocks <= (uint64_t)sms * (uint64_t)fit) out->mode = WFC_FRAME_RESIDENT;
    goto done;
  }
  /* grid cloths: the most lanes that stay resident; staging where asked (automatic: 1 lane) and
   * it fits, else without */
  for (uint32_t L = want->lanes ? want->lanes : 4; L >= 1; L /= 2) {
    uint32_t b = spread_block(want->block, (uint64_t)n * L, sms);
    uint32_t vpb = b / L;
    uint32_t blocks = (uint32_t)(((uint64_t)n + vpb - 1) / vpb);
    uint64_t span = (uint64_t)vpb + 2 * (uint64_t)want->reach;
    if (span > n) span = n;
    size_t bytes = (size_t)span * 2 * sizeof(wfp_f4);
    bool try_smem = (want->smem == 2 ? L == 1 : want->smem == 1) && bytes <= WFC_SMEM_MAX;
    for (int sm = try_smem ? 1 : 0; sm >= 0; sm--) {
      int fit = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, grid_kernel(L, (uint32_t)sm), (int)b,
                                                    sm ? bytes : 0);
      if ((uint64_t)blocks <= (uint64_t)sms * (uint64_t)fit) {
        out->mode = WFC_FRAME_RESIDENT;
        out->lanes = L, out->smem = (uint32_t)sm, out->span = sm ? (uint32_t)span : 0;
        out->block = b, out->blocks = blocks;
        goto done;
      }
    }
  }
done:
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
    if (fa->rest6) {
      cfg.dynamicSmemBytes = fa->plan.smem ? (size_t)fa->plan.span * 2 * sizeof(wfp_f4) : 0;
      cudaLaunchKernelEx(&cfg, grid_kernel(fa->plan.lanes, fa->plan.smem), *fa, (uint32_t)n);
    } else {
      cudaLaunchKernelEx(&cfg, spring_resident_kernel, *fa, (uint32_t)n);
    }
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
