/* The XPBD integrator's one-launch frame: every substep of a frame (prediction, the coloured
 * Gauss–Seidel passes of every iteration, the finalize with colliders) in one kernel launch,
 * with the positions of the last substep written straight into the per-frame readback.
 *
 * The staged XPBD frame (cloth.c: substep_begin, substep_end) launches per substep a predict
 * kernel, a clear of the multipliers, one solve kernel per colour and iteration and a finalize
 * kernel: 16 x (3 + 4 x colours) graph nodes at 16 substeps and 4 iterations, each paying a
 * launch gap. This frame runs the same stages in the same order inside one launch, with a
 * barrier where a kernel boundary was:
 *
 *   substep s:  PREDICT (every vertex; the multipliers cleared)   | barrier
 *               for each iteration, for each colour q:
 *                 SOLVE colour q (each constraint writes only its own vertices) | barrier
 *               FINALIZE (every vertex: x += step, colliders, velocity, damping;
 *                         the last substep also writes the readback)   | barrier (not after
 *                                                                          the last substep)
 *
 * Graph-coloured Gauss–Seidel in the colour order of the staged path: every stage calls the
 * per-element function of the staged kernel (wfc_predict_elem, wfc_solve_elem,
 * wfc_finalize_elem of cloth_math.h) on the same values, and inside a stage the elements are
 * independent (a vertex writes only itself; the constraints of a colour share no vertex), so
 * how the elements spread over threads changes nothing: the frame gives bitwise the state of
 * the staged path, on both backends (tests: test_cloth_xpbd_frame).
 *
 * Two modes (wfc_xpbd_plan.mode, chosen at creation, wf_cloth_info.frame_kernel):
 *  BLOCK (frame_kernel RESIDENT): the whole cloth in one thread block (n <= WFC_XPBD_BLOCK_MAX
 *    vertices): the barriers are __syncthreads(), tens of nanoseconds. For small cloths, where
 *    the staged frame is all launch gaps. On CUDA from WFC_XPBD_SHARED_MIN vertices the
 *    positions and steps stay in the block's shared memory (plan.shared, tuning.smem;
 *    wf_cloth_info.frame_smem), the next colour's constraints loaded while the current one is
 *    solved (the .cu: SHARED).
 *  GRID (frame_kernel STRIDE): a cooperative launch of at most the resident blocks, each owning
 *    a band of consecutive vertices and, of each colour, the constraints whose lowest vertex is
 *    in its band (the bands, below). The barrier: each block waits only for the few blocks whose
 *    bands are within a constraint's reach of its own (the counters of the springs' resident
 *    frame, cloth_fast.cu), or grid.sync() (tuning.grid_sync ON, or a cloth whose constraints
 *    reach too far). 2 + iterations x colours barriers a substep.
 * tuning.resident OFF forces GRID, ON lets BLOCK take up to WFC_XPBD_BLOCK_MAX_ASKED vertices
 * (for measuring); tuning.block sets the threads a block. The CPU backend runs
 * the same stages in the same order, GRID block by block over the bands (so the band tables
 * are exercised by the CPU tests: a constraint missed or solved twice changes the state).
 *
 * Where it runs: by default on CUDA devices. On a CPU device only with tuning.one_launch ON
 * (the tests' way to run its CPU side): there the frame is one call on one thread, while the
 * staged frame's solve kernels split over the CPU backend's worker pool (wf_kernel.cpu_grain),
 * which is worth more than the launch hand-overs the frame saves.
 *
 * Cloths that need more than this frame has fall back to the staged frame (cloth.c:
 * xpbd_fast_ok, with one log line at creation): a split over several partitions (each
 * partition's stages meet the halo exchange between stages), self-collision and particle
 * coupling (the vertex grid's sort between stages), cloth contact, more than
 * WFC_XPBD_FRAME_COLOURS colours, and tuning.one_launch OFF. Pins (inverse mass 0), kinematic
 * attachments, every collider kind (meshes included: wfc_finalize_elem's wfc_collide),
 * aerodynamics (wfc_predict_elem), collider forces and the per-frame readback are in it.
 */
#ifndef WEFT_CLOTH_XPBD_FRAME_H
#define WEFT_CLOTH_XPBD_FRAME_H

#include <stdbool.h>

#include "cloth_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most colours a one-launch XPBD frame takes (their offsets travel in the launch's
 * arguments); a grid cloth has about 20. */
#define WFC_XPBD_FRAME_COLOURS 64u
/* The most vertices the BLOCK mode takes, and the most a CUDA device runs in one launch unless
 * asked (tuning.one_launch or tuning.resident ON). Measured on an H200 (4 iterations, 16
 * substeps, readback; bench/results/nvidia-h200-wave3.txt), one block against the staged frame,
 * ms a frame: 32 x 32 1.64 / 3.39, 40 x 40 2.56 / 3.44, 48 x 48 3.48 / 3.49, 56 x 56 3.88 / 3.51,
 * 64 x 64 4.42 / 3.51 (a stage is then several projections in a row for each of the block's
 * threads); the banded GRID frame at 256 x 256 4.27 / 4.12, and 11.4 / 6.9 on a 100k-triangle
 * mesh sphere (1 iteration). */
#define WFC_XPBD_BLOCK_MAX 2304u
/* ... and the most it takes when asked (tuning.resident ON), for measuring where one block stops
 * paying (the stages of a 256 x 256 cloth on one SM). */
#define WFC_XPBD_BLOCK_MAX_ASKED 65536u
/* Threads a block: BLOCK mode (the one block), BLOCK with its state in shared memory, and GRID
 * mode. */
#define WFC_XPBD_BLOCK_THREADS  512u
#define WFC_XPBD_SHARED_THREADS 1024u
/* BLOCK's state in shared memory pays from about this many vertices (measured on an H200, 4
 * iterations: 32 x 32 4% slower, 64 x 64 16% faster; bench/results/nvidia-h200-wave3.txt). */
#define WFC_XPBD_SHARED_MIN   2048u
#define WFC_XPBD_GRID_THREADS 256u
/* GRID: the most blocks a block may wait for at a neighbour barrier; beyond (a mesh whose
 * vertex numbering spreads its constraints far apart) grid.sync() is the cheaper barrier. */
#define WFC_XPBD_MAX_NEIGHBOURS 16u

enum {
  WFC_XPBD_BLOCK = 0, /* one block, __syncthreads() between stages */
  WFC_XPBD_GRID = 1,  /* cooperative launch of banded blocks, a barrier between stages */
};

/* GRID mode's barrier (wfc_xpbd_plan.barrier). */
enum {
  WFC_XPBD_SYNC_NEIGHBOURS = 0, /* each block waits for the blocks whose bands overlap its own */
  WFC_XPBD_SYNC_GRID = 1,       /* cooperative groups' grid.sync() (tuning.grid_sync ON) */
};

typedef struct wfc_xpbd_plan {
  uint32_t mode;    /* WFC_XPBD_* */
  uint32_t block;   /* threads a block */
  uint32_t blocks;  /* blocks of the launch (BLOCK: 1) */
  uint32_t vpb;     /* GRID: vertices a block owns, [b vpb, (b + 1) vpb) (the last: fewer) */
  uint32_t barrier; /* GRID: WFC_XPBD_SYNC_* */
  uint32_t near;    /* GRID, neighbour barrier: block b waits for b - near .. b + near */
  uint32_t shared;  /* BLOCK on CUDA: 1 = positions and steps in shared memory (SHARED, the .cu) */
} wfc_xpbd_plan;

/* GRID mode's bands. Block b owns the vertices [b vpb, (b + 1) vpb) and, of every colour, the
 * constraints whose lowest vertex it owns: perm[band[q (blocks + 1) + b] ..
 * band[q (blocks + 1) + b + 1]) lists them (indices into the constraints; each colour's segment of
 * perm is a permutation of that colour, ordered by block). With `reach` the largest span
 * (highest - lowest vertex) of a constraint or triangle, a block reads and writes only vertices in
 * [b vpb - reach, (b + 1) vpb - 1 + reach] in any stage (predict's aerodynamics reads its
 * triangles), so two blocks can touch one vertex only if |b - b'| <= near = (vpb - 1 + 2 reach) /
 * vpb: the neighbour barrier waits for those. The constraints buffer itself keeps its order (the
 * staged frame, the energies and the split read it). */
typedef struct wfc_xpbd_frame_args {
  wfc_predict_args predict;   /* the staged kernels' arguments, as cloth.c builds them */
  wfc_solve_args solve;       /* cons, lambda: of constraint 0 (a colour adds its offset) */
  wfc_finalize_args finalize; /* with forces and flags */
  uint32_t n;                 /* vertices */
  uint32_t constraints;       /* all colours' */
  uint32_t colours, iterations, substeps;
  uint32_t colour_start[WFC_XPBD_FRAME_COLOURS + 1];
  wfc_xpbd_plan plan;
  const uint32_t *perm; /* GRID: the bands (see above) */
  const uint32_t *band;
  uint32_t *sync;    /* GRID, neighbour barrier: a counter a block (barriers passed; 0 at first) */
  void *host_pos;    /* NULL, or where the last substep also writes the positions (host memory) */
  uint32_t host_xyz; /* 0: host_pos holds xyzw (16 bytes a vertex), 1: packed xyz (12 bytes) */
} wfc_xpbd_frame_args;

/* The solve arguments of colour q: the staged path's (cloth.c: solve_args) for that colour. */
WF_HD static inline wfc_solve_args wfc_xpbd_colour_args(const wfc_xpbd_frame_args *a, uint32_t q) {
  wfc_solve_args s = a->solve;
  s.cons += a->colour_start[q];
  if (s.lambda) s.lambda += a->colour_start[q];
  return s;
}

/* GRID: the range of perm holding block b's constraints of colour q. */
WF_HD static inline void wfc_xpbd_band(const wfc_xpbd_frame_args *a, uint32_t q, uint32_t b,
                                       uint32_t *lo, uint32_t *hi) {
  const uint32_t *row = a->band + (size_t)q * (a->plan.blocks + 1u);
  *lo = row[b];
  *hi = row[b + 1u];
}

/* GRID: the vertices block b owns, [*lo, *hi). */
WF_HD static inline void wfc_xpbd_vertices(const wfc_xpbd_frame_args *a, uint32_t b, uint32_t *lo,
                                           uint32_t *hi) {
  uint64_t l = (uint64_t)b * a->plan.vpb, h = l + a->plan.vpb;
  *lo = l < a->n ? (uint32_t)l : a->n;
  *hi = h < a->n ? (uint32_t)h : a->n;
}

/* The readback of vertex i's position x (the last substep; host_pos is set). */
WF_HD static inline void wfc_xpbd_put(const wfc_xpbd_frame_args *a, uint32_t i, wfp_f4 x) {
  if (a->host_xyz)
    wfc_put_xyz((float *)a->host_pos, i, x);
  else
    ((wfp_f4 *)a->host_pos)[i] = x;
}

/* n = vertices: args->substeps XPBD substeps (see above). */
extern const wf_kernel wfc_xpbd_frame;

/* The plan of a one-launch XPBD frame over n vertices whose constraints and triangles span at
 * most `reach` vertices, on a CUDA device (ordinal >= 0: its occupancy) or the CPU backend
 * (ordinal < 0: the blocks a GPU would get without an occupancy limit). block: threads a block
 * asked (0: automatic); block_max: the most vertices BLOCK takes (0: GRID whatever the size;
 * WFC_XPBD_BLOCK_MAX by default); grid_sync: GRID meets at grid.sync() (also where a block would
 * have more than WFC_XPBD_MAX_NEIGHBOURS neighbours); shared_min: BLOCK on CUDA keeps its state in
 * shared memory from this many vertices on, where it fits (tuning.smem: AUTO WFC_XPBD_SHARED_MIN,
 * ON 0, OFF UINT32_MAX). */
void wfc_xpbd_frame_plan(int ordinal, uint32_t n, uint32_t reach, uint32_t block,
                         uint32_t block_max, bool grid_sync, uint32_t shared_min,
                         wfc_xpbd_plan *out);

/* SHARED's shared memory: the positions and steps of n vertices, and the parameters. */
static inline size_t wfc_xpbd_shared_bytes(uint32_t n) {
  return (size_t)n * 2u * sizeof(wfp_f4) + (sizeof(wfc_params) + 15u) / 16u * 16u;
}

/* GRID's bands and barrier once the blocks are chosen (both backends' plans end with it). */
void wfc_xpbd_plan_bands(uint32_t n, uint32_t reach, bool grid_sync, wfc_xpbd_plan *out);

/* The largest span (highest - lowest vertex) of a constraint or triangle (the bands' reach). */
uint32_t wfc_xpbd_reach(const wfc_constraint *cons, uint32_t count, const uint32_t *tris,
                        uint32_t nt);

/* GRID's perm and band tables (see above) for the plan, in one malloc'd array: perm (count
 * entries), then band (colours x (blocks + 1)). NULL when out of memory. */
uint32_t *wfc_xpbd_bands_build(const wfc_constraint *cons, uint32_t count,
                               const uint32_t *colour_start, uint32_t colours,
                               const wfc_xpbd_plan *plan);

#ifdef WEFT_HAVE_CUDA
void wfc_xpbd_frame_cuda(const void *args, size_t n, void *stream);
void wfc_xpbd_frame_plan_cuda(int ordinal, uint32_t n, uint32_t reach, uint32_t block,
                              uint32_t block_max, bool grid_sync, uint32_t shared_min,
                              wfc_xpbd_plan *out);
#endif

#ifdef __cplusplus
}
#endif
#endif
