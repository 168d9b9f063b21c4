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
 * cannot starve one it waits for. tuning.grid_sync ON uses grid.sync() instead.
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
      wfx_forces F = {a.half[0].forces, 0};
      uint32_t fl = wfc_frame_elem(&a, s, (uint32_t)i, &F);
      if (last && a.host_pos) wfc_frame_put(&a, i, a.half[s & 1u].pos_out[i]);
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
__device__ __forceinline__ void publish_clock(const wfc_spring_args *h, bool writer, double time,
                                              unsigned long long subs) {
  if (!writer) return;
  wfc_clock c;
  c.time = time;
  c.substeps = subs;
  *h->clock_out = c;
}

__device__ __forceinline__ void substep_end(const wfc_frame_args &a, const wfc_spring_args *h,
                                            bool writer, double time, unsigned long long subs,
                                            bool last, bool grid_barrier, unsigned want,
                                            uint32_t lo_b, uint32_t hi_b) {
  publish_clock(h, writer, time, subs);
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
      wfx_forces F = {h->forces, 0};
      uint32_t fl =
          a.rest6 ? wfc_spring_vertex(&p, h->colliders, h, rl, a.nu, a.nr, i, time, &x4, &v4, &F)
                  : wfc_spring_vertex(&p, h->colliders, h, NULL, a.nu, a.nr, i, time, &x4, &v4, &F);
      h->pos_out[i] = x4;
      h->vel_out[i] = v4;
      if (last && a.host_pos) wfc_frame_put(&a, i, x4);
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

/* PACKED XYZ READBACK (WF_CLOTH_XYZ) in 16-byte stores: 4-byte stores of 12-byte vertices to
 * host memory cost more bus time than the 16-byte xyzw ones, so the kernels that can write 16
 * aligned bytes at a time do. rows_xyz_ok: the destination is 16-byte aligned (a run of packed
 * vertices starting at a multiple of 4 then starts on a float4). */
__device__ __forceinline__ bool rows_xyz_ok(const wfc_frame_args &a) {
  return a.host_pos && a.host_xyz && ((uintptr_t)a.host_pos & 15u) == 0;
}

/* The tiled kernels' rows (tile_rows_xyz) start on a float4 where 4 | nu and 4 | TW (so 4 | c0
 * and 4 | w). */
__device__ __forceinline__ bool tile_rows_ok(const wfc_frame_args &a) {
  return rows_xyz_ok(a) && (a.nu & 3u) == 0 && (a.plan.tile_w & 3u) == 0;
}

/* A tile's rows of packed xyz from the box P (SW wide, the tile at column and row `ring` of it):
 * row r holds vertices (r0 + r) nu + c0 + [0, w), 3 w / 4 float4s (4 | w and 4 | nu c0 + ...,
 * see the callers). The block's threads share the stores. */
__device__ __forceinline__ void tile_rows_xyz(const wfc_frame_args &a, const wfp_f4 *P, uint32_t SW,
                                              uint32_t ring, uint32_t r0, uint32_t c0, uint32_t w,
                                              uint32_t h) {
  const uint32_t q4 = 3u * w / 4u; /* float4s a row */
  for (uint32_t q = threadIdx.x; q < q4 * h; q += blockDim.x) {
    const uint32_t r = q / q4, k = q % q4;
    float f[4];
#pragma unroll
    for (uint32_t m = 0; m < 4; m++) {
      const uint32_t fl = 4u * k + m, comp = fl % 3u;
      const wfp_f4 x = P[(r + ring) * SW + fl / 3u + ring];
      f[m] = comp == 0 ? x.x : comp == 1 ? x.y : x.z;
    }
    float *row = (float *)a.host_pos + 3 * ((size_t)(r0 + r) * a.nu + c0);
    reinterpret_cast<float4 *>(row)[k] = make_float4(f[0], f[1], f[2], f[3]);
  }
}

/* A warp's 32 / L consecutive vertices from vertex `first` (4 | first), lane v L holding vertex
 * first + v in x4, as 3 (32 / L) / 4 float4s of packed xyz, one a lane (shuffles; the whole warp
 * calls it). */
template <int L>
__device__ __forceinline__ void warp_xyz(const wfc_frame_args &a, uint32_t first, wfp_f4 x4) {
  constexpr uint32_t vw = 32u / L, nq = 3u * vw / 4u;
  const uint32_t wl = threadIdx.x & 31u;
  float f[4];
#pragma unroll
  for (uint32_t m = 0; m < 4; m++) {
    const uint32_t fl = 4u * wl + m, v = fl / 3u, comp = fl % 3u;
    const int src = (int)((v < vw ? v : 0u) * L);
    const float cx = __shfl_sync(~0u, x4.x, src), cy = __shfl_sync(~0u, x4.y, src),
                cz = __shfl_sync(~0u, x4.z, src);
    f[m] = comp == 0 ? cx : comp == 1 ? cy : cz;
  }
  if (wl < nq)
    reinterpret_cast<float4 *>((float *)a.host_pos + 3 * (size_t)first)[wl] =
        make_float4(f[0], f[1], f[2], f[3]);
}

/* The spring force of a vertex at x4, v4 (its lanes' springs dk, rest: nl of them), reading
 * the neighbours from P, V at li + offset, summed over its L lanes (mask) in the canonical shape;
 * 0 for a pinned vertex. */
template <int L>
__device__ __forceinline__ wfc_v3 lanes_force(const wfc_params &p, const wfp_f4 *P, const wfp_f4 *V,
                                              uint32_t li, wfp_f4 x4, wfp_f4 v4, uint32_t nl,
                                              const int32_t *dk, const float *rest, unsigned mask) {
  if (!(x4.w > 0.0f)) return wfc_v(0.0f, 0.0f, 0.0f);
  wfc_v3 acc[4];
#pragma unroll
  for (int q = 0; q < 4; q++)
    acc[q] = wfc_v(0.0f, 0.0f, 0.0f);
  wfc_lane_gather(&p, P, V, li, wfc_xyz(x4), wfc_xyz(v4), L, nl, dk, rest, acc);
  return lanes_combine<L>(acc, mask);
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
  /* packed xyz by warps (warp_xyz) where the warp's vertices all exist; 4 | the first of them,
   * as blocks are whole warps and L <= 4 */
  const uint32_t w_first = first + (threadIdx.x & ~31u) / L;
  const bool by_warp = rows_xyz_ok(a) && w_first + 32u / L <= n;
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
      (void)NP;
      wfc_v3 f = lanes_force<L>(p, P, V, li, x4, v4, nl, dk, rest, mask);
      wfx_forces F = {lane == 0 ? h->forces : NULL, 0}; /* the lanes compute the same: one adds */
      uint32_t fl = wfc_spring_finish(&p, h->colliders, h, i, time, f, &x4, &v4, &F);
      if (lane == 0) {
        h->pos_out[i] = x4;
        h->vel_out[i] = v4;
        if (last && a.host_pos && !by_warp) wfc_frame_put(&a, i, x4);
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
  if (by_warp) warp_xyz<L>(a, w_first, x4);
}

/* The tiled frame of a grid cloth (cloth_fast.h: TILED). Block b owns the tile (tx, ty) =
 * (b % tiles_x, b / tiles_x): columns [c0, c0 + w), rows [r0, r0 + h). Shared memory holds two
 * copies (substep parity) of the positions and velocities of the tile and the ring of width
 * WFC_TILE_REACH around it, SW = tile_w + 4 wide. The tile's cells are ranked once: the
 * boundary vertices (within the reach of a side with a neighbour tile: the only ones the
 * neighbours read), then the interior ones, each in row-major order. Substep s (state s in copy
 * s % 2):
 *  1. BOUNDARY: kLanesB threads a boundary vertex (more than the interior's, so that this, which
 *     the neighbours wait for, is short) compute it; lane 0 writes it to the other copy and to the
 * output half;
 *  2. __syncthreads(), then thread 0 publishes s + 1 (st.release.gpu: the boundary's stores
 *     precede it through the barrier, as in neighbour_barrier);
 *  3. INTERIOR: kLanesI threads an interior vertex compute it (it reads only the tile's own
 *     state in shared memory and, with aerodynamics, the tile's own vertices in the input
 *     half), while the warps left over (at least one) wait for the up to 8 neighbour tiles to
 *     publish s + 1 (ld.acquire.gpu, then a named barrier among those warps) and copy the
 *     neighbours' boundaries (the ring) from the output half into the other copy: the
 *     barrier's round trips overlap the interior's arithmetic instead of following it;
 *  4. __syncthreads().
 * A vertex's own state comes from the shared copy (what its thread wrote there), the lanes sum
 * in the canonical shape (lanes_combine), so the math is that of every other path. The
 * neighbours read only a tile's boundary (in 3, and in their aerodynamics of 1: triangles reach
 * 1), all written before its release; a tile writes an output half again two substeps later,
 * after its neighbours published the substep in between, which they do after their ring copy
 * and their boundary's reads of that half: no block gets more than one substep ahead of a
 * neighbour, as with the other resident kernels. The ring is read with ld.global.cg (L2). */
constexpr int kTileBlock = (int)WFC_TILE_MAX_THREADS; /* the most threads a tile's block has */

__device__ __forceinline__ void named_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ wfp_f4 load_cg(const wfp_f4 *p) {
  float4 v = __ldcg(reinterpret_cast<const float4 *>(p));
  wfp_f4 r = {v.x, v.y, v.z, v.w};
  return r;
}

/* The cells of the ring `width` wide around a w x h tile (ring_cell numbers them). */
__host__ __device__ __forceinline__ uint32_t ring_cells(uint32_t width, uint32_t w, uint32_t h) {
  return 2 * width * (w + 2 * width) + 2 * width * h;
}

/* Cell q of the ring `width` wide around the w x h tile at row r0, column c0: `width` rows above
 * and below (w + 2 width wide), then `width` columns left and right (h high); its grid row and
 * column (outside the cloth where the tile is at its edge). */
__device__ __forceinline__ void ring_cell(uint32_t q, uint32_t width, uint32_t r0, uint32_t c0,
                                          uint32_t w, uint32_t h, int32_t *gr, int32_t *gc) {
  const uint32_t rw = w + 2 * width;
  if (q < 2 * width * rw) { /* above, below */
    const uint32_t row = q / rw;
    *gr = row < width ? (int32_t)(r0 + row) - (int32_t)width : (int32_t)(r0 + h + row - width);
    *gc = (int32_t)(c0 + q % rw) - (int32_t)width;
  } else { /* left, right */
    const uint32_t u = q - 2 * width * rw, col = u % (2 * width);
    *gr = (int32_t)(r0 + u / (2 * width));
    *gc = col < width ? (int32_t)(c0 + col) - (int32_t)width : (int32_t)(c0 + w + col - width);
  }
}

/* Copies the positions and velocities of the ring `width` wide around the tile from P, V (the
 * grid, read through L2) into NP, NV (a staged box SW wide with a ring of `width`); threads
 * first, first + stride, ... */
__device__ __forceinline__ void ring_copy(uint32_t first, uint32_t stride, uint32_t width,
                                          uint32_t r0, uint32_t c0, uint32_t w, uint32_t h,
                                          uint32_t nu, uint32_t nr, uint32_t SW, const wfp_f4 *P,
                                          const wfp_f4 *V, wfp_f4 *NP, wfp_f4 *NV) {
  for (uint32_t q = first; q < ring_cells(width, w, h); q += stride) {
    int32_t gr, gc;
    ring_cell(q, width, r0, c0, w, h, &gr, &gc);
    if (gr >= 0 && gr < (int32_t)nr && gc >= 0 && gc < (int32_t)nu) {
      const size_t g = (size_t)gr * nu + (size_t)gc;
      const uint32_t sl = (uint32_t)(gr - (int32_t)r0 + (int32_t)width) * SW +
                          (uint32_t)(gc - (int32_t)c0 + (int32_t)width);
      NP[sl] = load_cg(P + g);
      NV[sl] = load_cg(V + g);
    }
  }
}

/* Loads the box of the frame's first state (positions, velocities: the tile at r0, c0 and a ring
 * `ring` wide, SW x SA / SW, clipped to the cloth) into copy 0 of the stage; all threads. */
__device__ __forceinline__ void box_load(const wfc_frame_args &a, uint32_t ring, uint32_t r0,
                                         uint32_t c0, uint32_t SW, uint32_t SA, wfp_f4 *stage) {
  for (uint32_t q = threadIdx.x; q < SA; q += blockDim.x) {
    const int32_t gr = (int32_t)(r0 + q / SW) - (int32_t)ring;
    const int32_t gc = (int32_t)(c0 + q % SW) - (int32_t)ring;
    if (gr >= 0 && gr < (int32_t)a.nr && gc >= 0 && gc < (int32_t)a.nu) {
      const size_t g = (size_t)gr * a.nu + (size_t)gc;
      stage[q] = a.half[0].pos_in[g];
      stage[SA + q] = a.half[0].vel_in[g];
    }
  }
}

/* A vertex of the tile as one of its L lanes sees it: global index, index in the staged box,
 * its springs (offsets in the box). */
template <int L> struct tile_vertex {
  uint32_t i, li, nl, lane;
  bool on;
  int32_t dk[WFC_GRID_LINKS / L];
  float rest[WFC_GRID_LINKS / L];
};

/* Vertex (mr, mc) of the grid, at li in a staged box SW wide, as its lane `lane` of L sees it
 * (on: a vertex of the cloth this thread computes). */
template <int L>
__device__ __forceinline__ void box_vertex_init(tile_vertex<L> &t, const wfc_frame_args &a, bool on,
                                                uint32_t mr, uint32_t mc, uint32_t li,
                                                uint32_t lane, uint32_t SW) {
  constexpr int NJ = WFC_GRID_LINKS / L;
  t.on = on, t.lane = lane, t.nl = 0;
  t.i = on ? mr * a.nu + mc : 0;
  t.li = on ? li : 0;
#pragma unroll
  for (int j = 0; j < NJ; j++)
    t.dk[j] = 0, t.rest[j] = 0.0f;
  if (!on) return;
  t.nl = wfc_lane_springs(&a.half[0], t.i, lane, L, t.dk, t.rest);
#pragma unroll
  for (int j = 0; j < NJ; j++) { /* offsets in the grid -> in the staged box */
    uint32_t jv = (uint32_t)((int32_t)t.i + wfc_lane_offset(t.dk[j]));
    int32_t dr = (int32_t)(jv / a.nu) - (int32_t)mr, dc = (int32_t)(jv % a.nu) - (int32_t)mc;
    if ((uint32_t)j < t.nl) t.dk[j] = wfc_lane_pack(dr * (int32_t)SW + dc, (uint32_t)t.dk[j] & 3u);
  }
}

/* Cell `cell` (row-major in the w-wide tile at c0, r0) of a box with a ring of WFC_TILE_REACH. */
template <int L>
__device__ __forceinline__ void tile_vertex_init(tile_vertex<L> &t, const wfc_frame_args &a,
                                                 bool on, uint32_t cell, uint32_t lane, uint32_t c0,
                                                 uint32_t r0, uint32_t w, uint32_t SW) {
  box_vertex_init<L>(t, a, on, r0 + cell / w, c0 + cell % w,
                     (cell / w + WFC_TILE_REACH) * SW + cell % w + WFC_TILE_REACH, lane, SW);
}

/* Substep s of vertex t (all its lanes): from the shared copy P, V into NP, NV and the output
 * half. */
template <int L>
__device__ __forceinline__ void tile_vertex_step(const tile_vertex<L> &t, const wfc_frame_args &a,
                                                 const wfc_params &p, const wfc_spring_args *hf,
                                                 const wfp_f4 *P, const wfp_f4 *V, wfp_f4 *NP,
                                                 wfp_f4 *NV, double time, bool last) {
  const unsigned mask = L == 1 ? 1u : (((1u << L) - 1u) << ((threadIdx.x & 31u) & ~(L - 1u)));
  wfp_f4 x4 = P[t.li], v4 = V[t.li];
  wfc_v3 f = lanes_force<L>(p, P, V, t.li, x4, v4, t.nl, t.dk, t.rest, mask);
  wfx_forces F = {t.lane == 0 ? hf->forces : NULL, 0}; /* the lanes compute the same: one adds */
  uint32_t fl = wfc_spring_finish(&p, hf->colliders, hf, t.i, time, f, &x4, &v4, &F);
  if (t.lane == 0) {
    NP[t.li] = x4;
    NV[t.li] = v4;
    hf->pos_out[t.i] = x4;
    hf->vel_out[t.i] = v4;
    if (last && a.host_pos) wfc_frame_put(&a, t.i, x4);
    if (fl) {
      atomicOr(&hf->flags->flags, fl);
      atomicMin(&hf->flags->first_bad, t.i);
    }
  }
}

template <int kLanesB, int kLanesI>
__global__ void __launch_bounds__(kTileBlock, 1)
    spring_tile_kernel(const __grid_constant__ wfc_frame_args a, uint32_t n) {
  extern __shared__ wfp_f4 stage[];
  __shared__ uint16_t order[kTileBlock];
  __shared__ uint32_t warp_b[kTileBlock / 32], warp_i[kTileBlock / 32];
  __shared__ unsigned base_s;
  constexpr int R = (int)WFC_TILE_REACH;
  const uint32_t nu = a.nu, nr = a.nr, TW = a.plan.tile_w, TH = a.plan.tile_h;
  const uint32_t SW = TW + 2 * R, SA = SW * (TH + 2 * R);
  const uint32_t tiles_x = (nu + TW - 1) / TW, tiles_y = (nr + TH - 1) / TH;
  const uint32_t tx = blockIdx.x % tiles_x, ty = blockIdx.x / tiles_x;
  const uint32_t c0 = tx * TW, r0 = ty * TH;
  const uint32_t w = min(TW, nu - c0), h = min(TH, nr - r0);
  const bool has_l = tx > 0, has_r = tx + 1 < tiles_x, has_u = ty > 0, has_d = ty + 1 < tiles_y;
  const bool rows_xyz = tile_rows_ok(a); /* packed xyz readback in rows (tile_rows_xyz) */
  /* rank the tile's cells (w h <= blockDim.x, see tile_plan): boundary first, then interior */
  const uint32_t lane = threadIdx.x & 31u, wid = threadIdx.x >> 5;
  uint32_t nb = 0, ni = 0; /* the tile's boundary and interior vertices */
  {
    const uint32_t k = threadIdx.x;
    const bool valid = k < w * h;
    const uint32_t lc = valid ? k % w : 0, lr = valid ? k / w : 0;
    const bool bnd = valid && ((has_l && lc < (uint32_t)R) || (has_r && lc + R >= w) ||
                               (has_u && lr < (uint32_t)R) || (has_d && lr + R >= h));
    const unsigned bb = __ballot_sync(~0u, bnd), ib = __ballot_sync(~0u, valid && !bnd);
    if (lane == 0) warp_b[wid] = (uint32_t)__popc(bb), warp_i[wid] = (uint32_t)__popc(ib);
    if (threadIdx.x == 0) base_s = a.sync[blockIdx.x];
    __syncthreads();
    uint32_t bb_before = 0, ib_before = 0;
    for (uint32_t q = 0; q < blockDim.x / 32; q++) {
      if (q < wid) bb_before += warp_b[q], ib_before += warp_i[q];
      nb += warp_b[q], ni += warp_i[q];
    }
    const unsigned below = (1u << lane) - 1u;
    if (bnd) order[bb_before + (uint32_t)__popc(bb & below)] = (uint16_t)k;
    if (valid && !bnd) order[nb + ib_before + (uint32_t)__popc(ib & below)] = (uint16_t)k;
    __syncthreads();
  }
  /* roles: boundary vertex t / kLanesB, interior vertex t / kLanesI, or the exchange */
  const uint32_t vb = threadIdx.x / kLanesB, vi = threadIdx.x / kLanesI;
  tile_vertex<kLanesB> bv;
  tile_vertex<kLanesI> iv;
  tile_vertex_init<kLanesB>(bv, a, vb < nb, vb < nb ? order[vb] : 0u, threadIdx.x % kLanesB, c0, r0,
                            w, SW);
  tile_vertex_init<kLanesI>(iv, a, vi < ni, vi < ni ? order[nb + vi] : 0u, threadIdx.x % kLanesI,
                            c0, r0, w, SW);
  const uint32_t x_first = (ni * kLanesI + 31u) / 32u * 32u; /* the exchange's threads */
  const bool exchange = threadIdx.x >= x_first;
  const uint32_t x_threads = blockDim.x - x_first, xt = threadIdx.x - x_first;
  const wfc_params p = *a.half[0].params;
  box_load(a, R, r0, c0, SW, SA, stage); /* the box of state 0: tile and ring */
  double time = a.half[0].clock_in->time;
  unsigned long long subs = a.half[0].clock_in->substeps;
  const unsigned base = base_s;
  __syncthreads();
  for (uint32_t s = 0; s < a.substeps; s++) {
    const wfc_spring_args *hf = (s & 1u) ? &a.half[1] : &a.half[0];
    const bool last = s + 1 == a.substeps;
    const wfp_f4 *P = stage + (size_t)(s & 1u) * 2 * SA, *V = P + SA;
    wfp_f4 *NP = stage + (size_t)((s + 1) & 1u) * 2 * SA, *NV = NP + SA;
    if (bv.on) tile_vertex_step<kLanesB>(bv, a, p, hf, P, V, NP, NV, time, last && !rows_xyz);
    __syncthreads(); /* the boundary's stores, then its release */
    if (threadIdx.x == 0 && !last) store_release(&a.sync[blockIdx.x], base + s + 1);
    if (iv.on) tile_vertex_step<kLanesI>(iv, a, p, hf, P, V, NP, NV, time, last && !rows_xyz);
    if (!last && exchange) {
      if (xt < 9u && xt != 4u) { /* the neighbour tile (dx, dy) */
        int32_t ntx = (int32_t)tx + (int32_t)(xt % 3u) - 1;
        int32_t nty = (int32_t)ty + (int32_t)(xt / 3u) - 1;
        if (ntx >= 0 && ntx < (int32_t)tiles_x && nty >= 0 && nty < (int32_t)tiles_y) {
          const unsigned *c = &a.sync[(uint32_t)nty * tiles_x + (uint32_t)ntx];
          while ((int)(load_acquire(c) - (base + s + 1)) < 0) {
          }
        }
      }
      named_sync(1, x_threads);
      ring_copy(xt, x_threads, R, r0, c0, w, h, nu, nr, SW, hf->pos_out, hf->vel_out, NP, NV);
    }
    time += (double)p.dt;
    subs++;
    publish_clock(hf, blockIdx.x == 0 && threadIdx.x == 0, time, subs);
    if (!last) __syncthreads();
  }
  if (rows_xyz) { /* the last substep's state, in copy substeps % 2 */
    __syncthreads();
    tile_rows_xyz(a, stage + (size_t)(a.substeps & 1u) * 2 * SA, SW, R, r0, c0, w, h);
  }
  (void)n;
}

/* The tiled frame in stages of two substeps (cloth_fast.h: tile_steps 2). Block b owns the tile
 * (tx, ty) as in spring_tile_kernel, but stages a ring of 2 WFC_TILE_REACH (RK) around it, two
 * copies by parity, and its threads own a vertex each: the tile's cells first (row-major), then
 * the ring of WFC_TILE_REACH around the tile (the cells of the neighbour tiles that the tile's
 * second substep reads). A stage of two substeps from state s (in the box, ring included):
 *  1. every thread computes its vertex (tile and ring of R) from the box into the other copy:
 *     state s + 1 wherever the tile's next substep reads it, the ring's vertices as their own
 *     tiles compute them (the same function of the same values: bitwise the same);
 *  2. the tile's threads compute state s + 2 of the tile from that copy, into the first copy and
 *     the global buffer of the stage;
 *  3. unless it was the last stage, the exchange: __syncthreads(), thread 0 publishes the stage
 *     (st.release.gpu, as in neighbour_barrier), threads wait for every tile the box overlaps
 *     (ld.acquire.gpu; the 8 neighbours for tiles of at least RK a side), __syncthreads(), and the
 *     block copies the box's ring (RK wide) from the global buffer (ld.global.cg) at state s + 2.
 * So a tile meets its neighbours once every two substeps instead of every substep, for the cost
 * of computing a ring of R around the tile once more (720 vertices instead of 512 at 32 x 16).
 * Stage e writes global buffer (e + 1) % 2 (buffer 0: half 0's input, buffer 1: half 0's output):
 * a tile writes a buffer again two stages later, after every tile that reads it published the
 * stage in between, which it does after its ring copy of that buffer; and the first stage writes
 * buffer 1, which no tile reads at the start. The stages are as many as make the last one write
 * the buffer the frame's state belongs in (substeps % 2): a few stages of one substep first
 * (phase 2 only) where the count of substeps needs it (odd counts, or an odd count of pairs), and
 * only stages of one substep with aerodynamics, which read the input half in global memory at
 * every substep. Only a tile's own vertices write the global buffers, flags and the readback.
 * The clock is published once, at the last substep, by block 0's thread 0. */
constexpr int kTile2Block = (int)WFC_TILE2_MAX_THREADS;

__global__ void __launch_bounds__(kTile2Block, 1)
    spring_tile2_kernel(const __grid_constant__ wfc_frame_args a, uint32_t n) {
  extern __shared__ wfp_f4 stage[];
  __shared__ unsigned base_s;
  constexpr int R = (int)WFC_TILE_REACH, RK = 2 * R;
  const uint32_t nu = a.nu, nr = a.nr, TW = a.plan.tile_w, TH = a.plan.tile_h;
  const uint32_t SW = TW + 2 * RK, SA = SW * (TH + 2 * RK);
  const uint32_t tiles_x = (nu + TW - 1) / TW;
  const uint32_t tx = blockIdx.x % tiles_x, ty = blockIdx.x / tiles_x;
  const uint32_t c0 = tx * TW, r0 = ty * TH;
  const uint32_t w = min(TW, nu - c0), h = min(TH, nr - r0);
  /* this thread's vertex: a tile cell, or a cell of the ring of R (in the cloth) */
  const uint32_t t = threadIdx.x, wh = w * h;
  const bool own = t < wh;
  int32_t lr = 0, lc = 0;
  bool on = own;
  if (own) {
    lr = (int32_t)(t / w), lc = (int32_t)(t % w);
  } else if (t - wh < ring_cells(R, w, h)) {
    int32_t gr, gc;
    ring_cell(t - wh, R, r0, c0, w, h, &gr, &gc);
    lr = gr - (int32_t)r0, lc = gc - (int32_t)c0;
    on = gr >= 0 && gr < (int32_t)nr && gc >= 0 && gc < (int32_t)nu;
  }
  tile_vertex<1> v;
  box_vertex_init<1>(v, a, on, (uint32_t)((int32_t)r0 + lr), (uint32_t)((int32_t)c0 + lc),
                     (uint32_t)(lr + RK) * SW + (uint32_t)(lc + RK), 0u, SW);
  if (t == 0) base_s = a.sync[blockIdx.x];
  const wfc_params p = *a.half[0].params;
  box_load(a, RK, r0, c0, SW, SA, stage); /* the box of state 0 into copy 0 */
  /* the tiles the box overlaps (they read this tile's box as it reads theirs) */
  const uint32_t bx_lo = c0 >= (uint32_t)RK ? (c0 - RK) / TW : 0;
  const uint32_t bx_hi = min(nu - 1, c0 + w - 1 + RK) / TW;
  const uint32_t by_lo = r0 >= (uint32_t)RK ? (r0 - RK) / TH : 0;
  const uint32_t by_hi = min(nr - 1, r0 + h - 1 + RK) / TH;
  const uint32_t nbx = bx_hi - bx_lo + 1, nwait = nbx * (by_hi - by_lo + 1);
  const bool rows_xyz = tile_rows_ok(a); /* packed xyz readback in rows (tile_rows_xyz) */
  /* stages: `ones` of one substep, then stages of two (see above) */
  const uint32_t S = a.substeps;
  uint32_t nst = S, ones = S;
  if (!p.aero) {
    nst = (S + 1) / 2;
    if ((nst & 1u) != (S & 1u)) nst++;
    ones = 2 * nst - S;
  }
  double time = a.half[0].clock_in->time;
  unsigned long long subs = a.half[0].clock_in->substeps;
  __syncthreads();
  const unsigned base = base_s; /* after the barrier: thread 0 wrote it */
  uint32_t s = 0, cur = 0;      /* the substep, the copy holding its state */
  for (uint32_t e = 0; e < nst; e++) {
    const uint32_t k = e < ones ? 1u : 2u;
    /* the stage's global buffer (see above): 0 is half 0's input, 1 its output */
    wfp_f4 *const oP = (e & 1u) ? a.half[1].pos_out : a.half[0].pos_out;
    wfp_f4 *const oV = (e & 1u) ? a.half[1].vel_out : a.half[0].vel_out;
    for (uint32_t j = 0; j < k; j++, s++) {
      const wfc_spring_args *hf = (s & 1u) ? &a.half[1] : &a.half[0];
      const bool end = j + 1 == k, last = s + 1 == S;
      const wfp_f4 *P = stage + (size_t)cur * 2 * SA, *V = P + SA;
      wfp_f4 *NP = stage + (size_t)(cur ^ 1u) * 2 * SA, *NV = NP + SA;
      if (v.on && (own || !end)) {
        wfp_f4 x4 = P[v.li], v4 = V[v.li];
        wfc_v3 f = lanes_force<1>(p, P, V, v.li, x4, v4, v.nl, v.dk, v.rest, 1u);
        wfx_forces F = {own ? hf->forces : NULL, 0}; /* the ring's copies do not add */
        uint32_t fl = wfc_spring_finish(&p, hf->colliders, hf, v.i, time, f, &x4, &v4, &F);
        NP[v.li] = x4;
        NV[v.li] = v4;
        if (own) {
          if (end) {
            oP[v.i] = x4;
            oV[v.i] = v4;
          }
          if (last && a.host_pos && !rows_xyz) wfc_frame_put(&a, v.i, x4);
          if (fl) {
            atomicOr(&hf->flags->flags, fl);
            atomicMin(&hf->flags->first_bad, v.i);
          }
        }
      }
      time += (double)p.dt;
      subs++;
      if (last) publish_clock(hf, blockIdx.x == 0 && t == 0, time, subs);
      cur ^= 1u;
      __syncthreads();
    }
    if (e + 1 == nst) break;
    /* the exchange: publish the stage, wait for the tiles around, copy their part of the ring */
    if (t == 0) store_release(&a.sync[blockIdx.x], base + e + 1);
    for (uint32_t q = t; q < nwait; q += blockDim.x) {
      const uint32_t b = (by_lo + q / nbx) * tiles_x + bx_lo + q % nbx;
      if (b != blockIdx.x)
        while ((int)(load_acquire(&a.sync[b]) - (base + e + 1)) < 0) {
        }
    }
    __syncthreads();
    wfp_f4 *NP = stage + (size_t)cur * 2 * SA, *NV = NP + SA;
    ring_copy(t, blockDim.x, RK, r0, c0, w, h, nu, nr, SW, oP, oV, NP, NV);
    __syncthreads();
  }
  if (rows_xyz) tile_rows_xyz(a, stage + (size_t)cur * 2 * SA, SW, RK, r0, c0, w, h);
  (void)n;
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

/* Shared memory of the tiled kernels: two copies of positions and velocities of the box (the tile
 * and a ring of WFC_TILE_REACH a substep of a stage). */
static size_t tile_smem(uint32_t tw, uint32_t th, uint32_t steps) {
  const uint32_t rk = WFC_TILE_REACH * steps;
  return (size_t)4 * (tw + 2 * rk) * (th + 2 * rk) * sizeof(wfp_f4);
}

/* Boundary and interior vertices of the tile (tx, ty) of tw x th tiles over nu x nr (the
 * kernel's classification). */
static void tile_counts(uint32_t nu, uint32_t nr, uint32_t tw, uint32_t th, uint32_t tx,
                        uint32_t ty, uint32_t *nb, uint32_t *ni) {
  const uint32_t R = WFC_TILE_REACH, tiles_x = (nu + tw - 1) / tw, tiles_y = (nr + th - 1) / th;
  uint32_t w = nu - tx * tw < tw ? nu - tx * tw : tw, h = nr - ty * th < th ? nr - ty * th : th;
  uint32_t l = tx > 0 ? R : 0, r = tx + 1 < tiles_x ? R : 0;
  uint32_t u = ty > 0 ? R : 0, d = ty + 1 < tiles_y ? R : 0;
  uint32_t iw = w > l + r ? w - l - r : 0, ih = h > u + d ? h - u - d : 0;
  *ni = iw * ih;
  *nb = w * h - *ni;
}

/* The tiled kernel: 2 threads a boundary vertex, 1 an interior one, blocks of at most 512
 * threads (128 registers). 4 and 2 (blocks of 1024 threads at 64 registers, which spill) took
 * 5.4 us a substep at 256 x 256 on an H200, 2 and 1 4.5 us, the 1D blocks of 1 lane 5.2 us. */
constexpr uint32_t kTileLanesB = 2, kTileLanesI = 1;
#define TILE_KERNEL spring_tile_kernel<kTileLanesB, kTileLanesI>

/* The tiled plan (tw x th tiles) of an nu x nr grid cloth in stages of `steps` substeps, if its
 * blocks are all resident. Stages of 1 (spring_tile_kernel): a block has kTileLanesB threads a
 * boundary vertex and kTileLanesI an interior vertex plus at least a warp for the exchange, in
 * the tile with the most of each (and at least one a cell, for the ranking). Stages of 2
 * (spring_tile2_kernel): a thread for each cell of the tile and of the ring of WFC_TILE_REACH
 * around it, and shared memory beyond the default 48 KiB where the device allows it. */
static bool tile_plan(uint32_t n, const wfc_frame_want *want, uint32_t tw, uint32_t th,
                      uint32_t steps, int ordinal, int sms, wfc_frame_plan *out) {
  if (!want->grid || want->nu < 1 || want->nr < 1 || (uint64_t)want->nu * want->nr != n)
    return false;
  if (tw < WFC_TILE_REACH || th < WFC_TILE_REACH || (uint64_t)tw * th > kTileBlock) return false;
  size_t bytes = tile_smem(tw, th, steps);
  const uint32_t tiles_x = (want->nu + tw - 1) / tw, tiles_y = (want->nr + th - 1) / th;
  uint64_t threads = (uint64_t)tw * th;
  /* the tile kinds: first, middle and last of each direction */
  const uint32_t xs[3] = {0, tiles_x / 2, tiles_x - 1}, ys[3] = {0, tiles_y / 2, tiles_y - 1};
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      uint32_t nb = 0, ni = 0;
      tile_counts(want->nu, want->nr, tw, th, xs[a], ys[b], &nb, &ni);
      if (steps == 2) { /* the tile and its ring */
        const uint32_t w = nb + ni, R = WFC_TILE_REACH;
        const uint32_t cw = want->nu - xs[a] * tw < tw ? want->nu - xs[a] * tw : tw;
        const uint64_t need = (uint64_t)w + ring_cells(R, cw, w / cw);
        threads = need > threads ? need : threads;
        continue;
      }
      uint64_t need_b = (uint64_t)nb * kTileLanesB;
      uint64_t need_i = ((uint64_t)ni * kTileLanesI + 31) / 32 * 32 + 32;
      threads = need_b > threads ? need_b : threads;
      threads = need_i > threads ? need_i : threads;
    }
  uint32_t block = (uint32_t)((threads + 31) / 32 * 32);
  if (block > (uint32_t)(steps == 2 ? kTile2Block : kTileBlock)) return false;
  uint64_t tiles = (uint64_t)tiles_x * tiles_y;
  int fit = 0;
  if (steps == 2) {
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal);
    if (bytes > (size_t)(optin > 0 ? optin : 0)) return false;
    if (bytes > WFC_SMEM_MAX &&
        cudaFuncSetAttribute(spring_tile2_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)bytes) != cudaSuccess)
      return false;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, spring_tile2_kernel, (int)block, bytes);
  } else {
    if (bytes > WFC_SMEM_MAX) return false;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, TILE_KERNEL, (int)block, bytes);
  }
  if (tiles > (uint64_t)sms * (uint64_t)fit) return false;
  out->mode = WFC_FRAME_RESIDENT;
  out->lanes = steps == 2 ? 1 : kTileLanesB, out->smem = 1, out->span = 0;
  out->block = block, out->blocks = (uint32_t)tiles;
  out->tile_w = tw, out->tile_h = th, out->tile_steps = steps;
  return true;
}

/* tile_plan in stages of two substeps where asked or automatic (want->steps 0) and it fits,
 * else of one unless two were asked. */
static bool tile_plan_any(uint32_t n, const wfc_frame_want *want, uint32_t tw, uint32_t th,
                          int ordinal, int sms, wfc_frame_plan *out) {
  if (want->steps != 1 && tile_plan(n, want, tw, th, 2, ordinal, sms, out)) return true;
  return want->steps != 2 && tile_plan(n, want, tw, th, 1, ordinal, sms, out);
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
  out->lanes = 1, out->smem = 0, out->span = 0, out->tile_w = out->tile_h = 0;
  out->tile_steps = 0;
  out->block = spread_block(want->block, n, sms);
  out->blocks = (uint32_t)(((uint64_t)n + out->block - 1) / out->block);
  if (n == 0) goto done;
  if (!want->grid) {
    int fit = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, spring_resident_kernel, (int)out->block, 0);
    if ((uint64_t)out->blocks <= (uint64_t)sms * (uint64_t)fit) out->mode = WFC_FRAME_RESIDENT;
    goto done;
  }
  /* grid cloths: tiles where asked (tuning.tiles ON) */
  if (want->tile == 2 && tile_plan_any(n, want, want->tile_w, want->tile_h, ordinal, sms, out))
    goto done;
  /* the most lanes that stay resident; staging where asked (automatic: 1 lane) and it fits, else
   * without */
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
        /* automatic tiles (no lanes or staging asked) where one lane a vertex is all that
         * stays resident */
        if (L == 1 && want->tile == 1 && !want->lanes && want->smem == 2 &&
            tile_plan_any(n, want, WFC_TILE_AUTO_W, WFC_TILE_AUTO_H, ordinal, sms, out))
          goto done;
        out->mode = WFC_FRAME_RESIDENT;
        out->lanes = L, out->smem = (uint32_t)sm, out->span = sm ? (uint32_t)span : 0;
        out->block = b, out->blocks = blocks;
        goto done;
      }
    }
  }
  /* too large for a thread a vertex in 1D blocks: tiles may still fit */
  if (want->tile == 1 && !want->lanes && want->smem == 2 &&
      tile_plan_any(n, want, WFC_TILE_AUTO_W, WFC_TILE_AUTO_H, ordinal, sms, out))
    goto done;
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
    if (fa->rest6 && fa->plan.tile_w) {
      cfg.dynamicSmemBytes = tile_smem(fa->plan.tile_w, fa->plan.tile_h, fa->plan.tile_steps);
      if (fa->plan.tile_steps == 2)
        cudaLaunchKernelEx(&cfg, spring_tile2_kernel, *fa, (uint32_t)n);
      else
        cudaLaunchKernelEx(&cfg, TILE_KERNEL, *fa, (uint32_t)n);
    } else if (fa->rest6) {
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
