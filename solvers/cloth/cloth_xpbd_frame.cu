/* CUDA side of the XPBD one-launch frame (cloth_xpbd_frame.h). Built with -fmad=false like the
 * other cloth kernels, so that the per-element math gives the CPU backend's bits.
 *
 * Two kernels run the same stages; only the barrier and the spread of the elements differ:
 *  BLOCK (block_kernel): one block; thread t takes elements t, t + blockDim, ...;
 *    __syncthreads() between stages, which orders the block's global-memory writes before its
 *    reads after it.
 *  GRID (grid_kernel): a cooperative launch (all blocks resident); block b takes its band of
 *    vertices and, of each colour, its band of constraints (cloth_xpbd_frame.h), its threads
 *    striding over them. The barrier: NEIGHBOURS, the counters of the springs' resident frame
 *    (cloth_fast.cu explains the release/acquire pattern): after a stage the block publishes the
 *    count of barriers it passed and waits until blocks b - near .. b + near have published the
 *    same count. Only those can touch a vertex b touches (the bands' reach), the relation is
 *    symmetric, and no block gets more than one stage ahead of a neighbour, so every hazard
 *    below is between two consecutive stages of two neighbours, which the barrier orders; the
 *    acquire at GPU scope invalidates the SM's L1 before the block reads. GRID: grid.sync()
 *    (tuning.grid_sync ON, or too many neighbours).
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

__device__ __forceinline__ void raise_flags(const wfc_xpbd_frame_args &a, uint32_t fl, uint32_t i) {
  atomicOr(&a.finalize.flags->flags, fl);
  atomicMin(&a.finalize.flags->first_bad, i);
}

/* FINALIZE of vertex i (the readback on the last substep). */
__device__ __forceinline__ void finalize_vertex(const wfc_xpbd_frame_args &a, uint32_t i,
                                                bool last) {
  wfx_forces F = {a.finalize.forces, 0};
  const uint32_t fl = wfc_finalize_elem(&a.finalize, i, &F);
  if (last && a.host_pos) wfc_xpbd_put(&a, i, a.finalize.pos[i]);
  if (fl) raise_flags(a, fl, i);
}

__global__ void __launch_bounds__(kMaxBlock)
    xpbd_block_kernel(const __grid_constant__ wfc_xpbd_frame_args a) {
  const uint32_t t0 = threadIdx.x, step = blockDim.x;
  for (uint32_t s = 0; s < a.substeps; s++) {
    const bool last = s + 1 == a.substeps;
    for (uint32_t i = t0; i < a.n; i += step)
      wfc_predict_elem(&a.predict, i);
    if (a.solve.lambda)
      for (uint32_t k = t0; k < a.constraints; k += step)
        a.solve.lambda[k] = 0.0f;
    __syncthreads();
    for (uint32_t it = 0; it < a.iterations; it++)
      for (uint32_t q = 0; q < a.colours; q++) {
        const wfc_solve_args sa = wfc_xpbd_colour_args(&a, q);
        const uint32_t m = a.colour_start[q + 1] - a.colour_start[q];
        for (uint32_t k = t0; k < m; k += step)
          wfc_solve_elem(&sa, k);
        __syncthreads();
      }
    for (uint32_t i = t0; i < a.n; i += step)
      finalize_vertex(a, i, last);
    if (!last) __syncthreads();
  }
}

/* SHARED: BLOCK with the positions and steps in the block's shared memory (plan.shared). A stage
 * of BLOCK is a chain of dependent loads (the constraint, then its vertices) that L1 cannot hold
 * for a 64 x 64 cloth (its constraints alone are 670 kB), so each stage waited on L2 twice, some
 * microseconds, 1472 times a frame. Here:
 *  - pos and pred live in shared memory for the whole frame (32 bytes a vertex; read from and
 *    written back to their buffers at the ends), and the parameters too;
 *  - a thread's constraints of the next colour, and their multipliers, are loaded while it solves
 *    the current colour (pre below): they never change during the frame, and each multiplier is
 *    read and written only by the thread that solves its constraint, so the load is early but
 *    not stale. The one exception, a single colour, takes the new multiplier from the solve;
 *  - the first iteration of a substep solves with multiplier 0, which is what the staged frame's
 *    clear gives, and every solve writes its multiplier back, so the clear is not needed.
 * Same element functions, same values, same order: the bits of BLOCK and of the staged frame. */
struct pre {
  wfc_constraint c;
  float lambda;
};

/* Thread threadIdx.x's r-th constraint of colour q, and its multiplier, into p (if it has one). */
__device__ __forceinline__ void prefetch(const wfc_xpbd_frame_args &a, uint32_t q, uint32_t r,
                                         pre &p) {
  const uint32_t c0 = a.colour_start[q], m = a.colour_start[q + 1] - c0;
  const uint32_t k = threadIdx.x + r * blockDim.x;
  if (k < m) {
    p.c = a.solve.cons[c0 + k];
    p.lambda = a.solve.lambda ? a.solve.lambda[c0 + k] : 0.0f;
  }
}

template <int R, int THREADS>
__global__ void __launch_bounds__(THREADS)
    xpbd_shared_kernel(const __grid_constant__ wfc_xpbd_frame_args a) {
  extern __shared__ float4 smem[];
  wfp_f4 *const pos = (wfp_f4 *)smem, *const pred = pos + a.n;
  wfc_params *const prm = (wfc_params *)(pred + a.n);
  const uint32_t t0 = threadIdx.x, step = blockDim.x;
  for (uint32_t i = t0; i < a.n; i += step)
    pos[i] = a.finalize.pos[i];
  for (uint32_t w = t0; w < sizeof(wfc_params) / 4; w += step)
    ((uint32_t *)prm)[w] = ((const uint32_t *)a.predict.params)[w];
  pre nx[R];
  if (a.colours)
#pragma unroll
    for (int r = 0; r < R; r++)
      prefetch(a, 0, (uint32_t)r, nx[r]);
  __syncthreads();
  for (uint32_t s = 0; s < a.substeps; s++) {
    const bool last = s + 1 == a.substeps;
    for (uint32_t i = t0; i < a.n; i += step) { /* the arguments are rebuilt where used, from the */
      wfc_predict_args pa = a.predict; /* launch's constant bank: kept, they would cost registers */
      pa.params = prm, pa.pos = pos, pa.pred = pred;
      wfc_predict_elem(&pa, i);
    }
    __syncthreads();
    for (uint32_t it = 0; it < a.iterations; it++)
      for (uint32_t q = 0; q < a.colours; q++) {
        const uint32_t c0 = a.colour_start[q], m = a.colour_start[q + 1] - c0;
        const uint32_t qn = q + 1 < a.colours ? q + 1 : 0;
        wfc_solve_args sa = a.solve;
        sa.params = prm, sa.pos = pos, sa.pred = pred;
        sa.cons += c0;
        if (sa.lambda) sa.lambda += c0;
#pragma unroll
        for (int r = 0; r < R; r++) {
          const uint32_t k = t0 + (uint32_t)r * step;
          const pre cur = nx[r];
          prefetch(a, qn, (uint32_t)r, nx[r]);
          if (k < m) {
            const float l = wfc_solve_con(&sa, cur.c, it ? cur.lambda : 0.0f);
            if (sa.lambda) sa.lambda[k] = l;
            if (a.colours == 1) nx[r].lambda = l;
          }
        }
        for (uint32_t k = t0 + (uint32_t)R * step; k < m; k += step) {
          const float l = wfc_solve_con(&sa, sa.cons[k], it && sa.lambda ? sa.lambda[k] : 0.0f);
          if (sa.lambda) sa.lambda[k] = l;
        }
        __syncthreads();
      }
    for (uint32_t i = t0; i < a.n; i += step) {
      wfc_finalize_args fa = a.finalize;
      fa.params = prm, fa.pos = pos, fa.pred = pred;
      wfx_forces F = {fa.forces, 0};
      const uint32_t fl = wfc_finalize_elem(&fa, i, &F);
      if (last && a.host_pos) wfc_xpbd_put(&a, i, pos[i]);
      if (fl) raise_flags(a, fl, i);
    }
    __syncthreads();
  }
  for (uint32_t i = t0; i < a.n; i += step) {
    a.finalize.pos[i] = pos[i];
    a.solve.pred[i] = pred[i];
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

/* The barrier between two stages of GRID (see the top of the file): want is the count of
 * barriers passed, including this one. */
template <bool NEIGHBOURS>
__device__ __forceinline__ void stage_barrier(const wfc_xpbd_frame_args &a, unsigned want,
                                              uint32_t lo_b, uint32_t hi_b) {
  if constexpr (!NEIGHBOURS) {
    cg::this_grid().sync();
  } else {
    __syncthreads();
    if (threadIdx.x == 0) store_release(&a.sync[blockIdx.x], want);
    for (uint32_t b = lo_b + threadIdx.x; b <= hi_b; b += blockDim.x)
      if (b != blockIdx.x)
        while ((int)(load_acquire(&a.sync[b]) - want) < 0) {
        }
    __syncthreads();
  }
}

/* GRID. The clock: in the staged order vertex 0's PREDICT writes the substep's clock and every
 * FINALIZE reads it, but with neighbour barriers a block far from vertex 0's may be stages
 * behind or ahead of it. So every block keeps the clock in its shared memory: read once at the
 * start (then one grid.sync(), so that no block writes the clock before all have read it), moved
 * by thread 0 as PREDICT moves it (the same double addition) and given to the stages' element
 * functions through their clock pointers; block 0 writes the frame's last clock at the end, as
 * the staged frame leaves both halves' clocks. */
template <bool NEIGHBOURS>
__global__ void __launch_bounds__(kMaxBlock)
    xpbd_grid_kernel(const __grid_constant__ wfc_xpbd_frame_args a) {
  __shared__ unsigned base_s;
  __shared__ wfc_clock clk[2]; /* [0]: the substep's start (CLOCK0), [1]: its end (CLOCK1) */
  const uint32_t b = blockIdx.x, t0 = threadIdx.x, step = blockDim.x;
  const uint32_t near = a.plan.near, last_b = a.plan.blocks - 1u;
  const uint32_t lo_b = b > near ? b - near : 0u, hi_b = b + near < last_b ? b + near : last_b;
  uint32_t v0, v1;
  wfc_xpbd_vertices(&a, b, &v0, &v1);
  wfc_predict_args pa = a.predict;
  wfc_finalize_args fa = a.finalize;
  wfc_clock *const clock0 = a.finalize.clock_out, *const clock1 = a.predict.clock_out;
  pa.clock_in = &clk[0], pa.clock_out = &clk[1];
  fa.clock_in = &clk[1], fa.clock_out = &clk[0];
  if (threadIdx.x == 0) {
    if (NEIGHBOURS) base_s = a.sync[b];
    clk[0] = *a.predict.clock_in;
  }
  cg::this_grid().sync();                     /* every block has read the clock (and its counter) */
  unsigned passed = NEIGHBOURS ? base_s : 0u; /* every block's counter is equal at the start */
  for (uint32_t s = 0; s < a.substeps; s++) {
    const bool last = s + 1 == a.substeps;
    if (threadIdx.x == 0) { /* wfc_predict_elem's clock (vertex 0 writes the same again) */
      wfc_clock c = clk[0];
      c.time += (double)pa.params->dt;
      c.substeps++;
      clk[1] = c;
    }
    for (uint32_t i = v0 + t0; i < v1; i += step)
      wfc_predict_elem(&pa, i);
    if (a.solve.lambda) /* the block's own constraints' multipliers */
      for (uint32_t q = 0; q < a.colours; q++) {
        uint32_t j0, j1;
        wfc_xpbd_band(&a, q, b, &j0, &j1);
        for (uint32_t j = j0 + t0; j < j1; j += step)
          a.solve.lambda[a.perm[j]] = 0.0f;
      }
    stage_barrier<NEIGHBOURS>(a, ++passed, lo_b, hi_b);
    for (uint32_t it = 0; it < a.iterations; it++)
      for (uint32_t q = 0; q < a.colours; q++) {
        const wfc_solve_args sa = wfc_xpbd_colour_args(&a, q);
        const uint32_t c0 = a.colour_start[q];
        uint32_t j0, j1;
        wfc_xpbd_band(&a, q, b, &j0, &j1);
        for (uint32_t j = j0 + t0; j < j1; j += step)
          wfc_solve_elem(&sa, a.perm[j] - c0);
        stage_barrier<NEIGHBOURS>(a, ++passed, lo_b, hi_b);
      }
    for (uint32_t i = v0 + t0; i < v1; i += step) {
      wfx_forces F = {fa.forces, 0};
      const uint32_t fl = wfc_finalize_elem(&fa, i, &F);
      if (last && a.host_pos) wfc_xpbd_put(&a, i, fa.pos[i]);
      if (fl) raise_flags(a, fl, i);
    }
    if (threadIdx.x == 0) clk[0] = clk[1]; /* FINALIZE reads clk[1] only */
    if (!last) stage_barrier<NEIGHBOURS>(a, ++passed, lo_b, hi_b);
  }
  if (b == 0 && threadIdx.x == 0) *clock0 = clk[0], *clock1 = clk[1];
}

/* Whole warps, at least one, at most the launch bounds `most`. */
uint32_t warps_of(uint32_t b, uint32_t most = kMaxBlock) {
  if (b < 32) b = 32;
  if (b > most) b = most;
  return b / 32 * 32;
}

} // namespace

extern "C" void wfc_xpbd_frame_plan_cuda(int ordinal, uint32_t n, uint32_t reach, uint32_t block,
                                         uint32_t block_max, bool grid_sync, uint32_t shared_min,
                                         wfc_xpbd_plan *out) {
  int old = 0, sms = 0, per_sm = 0, per_sm_gs = 0;
  cudaGetDevice(&old);
  cudaSetDevice(ordinal);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
  if (sms < 1) sms = 1;
  if (n <= block_max) {
    out->mode = WFC_XPBD_BLOCK;
    out->block = warps_of(block ? block : WFC_XPBD_BLOCK_THREADS);
    out->blocks = 1;
    int optin = 0;
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal);
    const size_t bytes = wfc_xpbd_shared_bytes(n);
    if (n >= shared_min && bytes <= (size_t)optin) {
      out->shared = 1;
      out->block = warps_of(block ? block : WFC_XPBD_BLOCK_THREADS, WFC_XPBD_SHARED_THREADS);
      const int nb = (int)bytes;
      cudaFuncSetAttribute(xpbd_shared_kernel<1, WFC_XPBD_SHARED_THREADS>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, nb);
      cudaFuncSetAttribute(xpbd_shared_kernel<2, WFC_XPBD_SHARED_THREADS>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, nb);
      cudaFuncSetAttribute(xpbd_shared_kernel<2, kMaxBlock>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, nb);
      cudaFuncSetAttribute(xpbd_shared_kernel<4, kMaxBlock>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, nb);
    }
  } else {
    const uint32_t b = warps_of(block ? block : WFC_XPBD_GRID_THREADS);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, xpbd_grid_kernel<true>, (int)b, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_gs, xpbd_grid_kernel<false>, (int)b, 0);
    per_sm = per_sm < per_sm_gs ? per_sm : per_sm_gs; /* either barrier may be chosen below */
    const uint64_t want = ((uint64_t)n + b - 1) / b;
    const uint64_t cap = (uint64_t)sms * (uint64_t)(per_sm > 0 ? per_sm : 1);
    out->mode = WFC_XPBD_GRID;
    out->block = b;
    out->blocks = (uint32_t)(want < cap ? want : cap);
    wfc_xpbd_plan_bands(n, reach, grid_sync, out);
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
  if (fa->plan.mode == WFC_XPBD_BLOCK && fa->plan.shared) {
    uint32_t most = 0; /* the largest colour: the rounds a thread prefetches */
    for (uint32_t q = 0; q < fa->colours; q++) {
      const uint32_t m = fa->colour_start[q + 1] - fa->colour_start[q];
      most = m > most ? m : most;
    }
    cfg.dynamicSmemBytes = wfc_xpbd_shared_bytes(fa->n);
    const uint32_t rounds = (most + fa->plan.block - 1) / fa->plan.block;
    if (fa->plan.block > kMaxBlock) /* the 1024-thread instantiations' launch bounds */
      cudaLaunchKernelEx(&cfg,
                         rounds <= 1 ? xpbd_shared_kernel<1, WFC_XPBD_SHARED_THREADS>
                                     : xpbd_shared_kernel<2, WFC_XPBD_SHARED_THREADS>,
                         *fa);
    else
      cudaLaunchKernelEx(
          &cfg, rounds <= 2 ? xpbd_shared_kernel<2, kMaxBlock> : xpbd_shared_kernel<4, kMaxBlock>,
          *fa);
    return;
  }
  if (fa->plan.mode == WFC_XPBD_BLOCK) {
    cudaLaunchKernelEx(&cfg, xpbd_block_kernel, *fa);
    return;
  }
  cfg.attrs = at; /* all blocks resident: the barriers need it */
  cfg.numAttrs = 1;
  if (fa->plan.barrier == WFC_XPBD_SYNC_NEIGHBOURS)
    cudaLaunchKernelEx(&cfg, xpbd_grid_kernel<true>, *fa);
  else
    cudaLaunchKernelEx(&cfg, xpbd_grid_kernel<false>, *fa);
}
