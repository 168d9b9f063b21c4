/* The mass-spring integrator's fast path: a whole frame of substeps in one launch, and grid
 * cloths without an adjacency list.
 *
 * One launch per frame. `wfc_spring_frame` runs `substeps` substeps starting from half 0
 * (half 0 -> 1 -> 0 ...), every vertex of a substep before any vertex of the next one: on CUDA
 * devices a cooperative launch whose blocks are all resident and meet at a grid-wide barrier
 * between substeps; on the CPU backend a loop over substeps around the loop over vertices. The
 * per-vertex math is exactly that of `wfc_spring_step`, so a frame gives bitwise the state of
 * `substeps` separate launches. It replaces 16 kernel nodes (and their launch gaps) by one, which
 * is what small cloths pay for.
 *
 * Two modes (wfc_frame_plan, chosen at creation): RESIDENT when every vertex can have a thread of
 * its own with all blocks resident at once (n <= resident_max: SMs x blocks a SM x 256 by the
 * kernel's occupancy; small cloths spread one block per SM, as few threads a block as that
 * takes): each thread keeps its vertex's state, rest lengths, the parameters and the clock in
 * registers for the whole frame and reads only its neighbours' state per substep, with a barrier
 * among neighbouring blocks only (cloth_fast.cu says why it is correct). STRIDE otherwise: a
 * grid-stride loop per substep and grid.sync(). Both call wfc_spring_vertex (cloth_math.h), the
 * per-vertex function of the per-substep kernel, on the same values. The CPU backend runs both
 * modes as loops (RESIDENT up to WFC_CPU_RESIDENT_MAX, so tests reach both and the boundary).
 * The desc's tuning (wf_cloth_tuning, applied at creation): resident OFF forces STRIDE, grid_sync
 * ON makes RESIDENT use grid.sync(), and block sets its threads a block.
 *
 * RESIDENT grid cloths (cloth_fast.cu: spring_grid_kernel) spread a vertex over L = 1, 2 or 4
 * threads (the most that stay resident; tuning.lanes caps it), each lane summing a fixed
 * share of the springs, combined by shuffles in the canonical order of cloth_math.h (four
 * partial sums over list positions mod 4, (s0 + s1) + (s2 + s3)), which every path uses, so the
 * results stay bitwise equal whatever L. They may stage their block's neighbourhood
 * [first - reach, last + reach] in shared memory once a substep (tuning.smem; automatic: with 1
 * lane). The CPU backend emulates both (lanes: resident up to 4096 threads).
 *
 * TILED grid cloths (cloth_fast.cu: spring_tile_kernel; plan.tile_w x plan.tile_h > 0): a block
 * owns a tile of columns x rows (32 x 16 by default, one block a SM at 256 x 256) and keeps the
 * tile and the two rows and columns around it (what its vertices read: bend springs reach 2) in
 * shared memory, two copies by substep parity. Each substep computes the tile's BOUNDARY
 * vertices first (within 2 of a side that has a neighbour tile: the only ones the neighbours
 * read; 2 threads a vertex, so that this is short), publishes them (the neighbour barrier's
 * counter), then computes the INTERIOR (a thread a vertex) while the block's remaining warps
 * wait for the neighbours' boundaries and copy them in: the barrier's round trips overlap the
 * interior's arithmetic instead of following it. Same per-vertex math (wfc_lane_gather,
 * lanes_combine, wfc_spring_finish) on the same values as every other path, so bitwise equal.
 * That is a stage of one substep (plan.tile_steps 1). In stages of two (tile_steps 2,
 * cloth_fast.cu: spring_tile2_kernel) a block stages a ring of 4 around its tile and has a
 * thread for each vertex of the tile and of the ring of 2 around it: it computes the first
 * substep on the tile and that ring (the ring's vertices as their own tiles do), the second on
 * the tile, and only then meets its neighbours and copies the ring of 4 in: one exchange every
 * two substeps, for 720 vertices computed instead of 512 a substep pair at 32 x 16. Stages of
 * two where they fit (shared memory beyond 48 KiB, 736 threads a block), else of one;
 * tuning.tile_steps 1 or 2 asks for either. Chosen automatically where 1 lane a vertex is all
 * that stays resident and the tiles do (32 x 16: 256 x 256 on a GPU of 128 SMs or more), unless
 * lanes or staging are asked for. tuning.tiles OFF turns it off, ON asks for tuning.tile. The
 * CPU backend has no tiled plan (it never needs one: it runs the same loop whatever the plan).
 *
 * Per-frame readback (wf_cloth_set_frame_readback): with host_pos set, the last substep also
 * writes each vertex's position there (pinned host memory, mapped by unified addressing on CUDA),
 * as xyzw or packed xyz (host_xyz; wfc_frame_put), so the frame needs no copy after it.
 *
 * Grid cloths. A grid's springs follow from the vertex's row and column: stretch to the 4
 * neighbours, shear to the 4 diagonals, bend to the vertices two apart. The CSR adjacency
 * (8 B per incident spring, ~100 B a vertex every substep) is replaced by six rest lengths per
 * vertex for the springs it starts (+x, +y, the diagonal (a, a+nu+1), the diagonal (a+1, a+nu),
 * +2x, +2y), 24 B. `wfc_grid_gather` (cloth_math.h) visits a vertex's springs in exactly the order
 * (and sums them in the shape) of its CSR list (the order cloth_mesh.c lists the springs: by
 * starting vertex, then in the order above) with the same rest lengths (copied from that list), so
 * it too is bitwise equal to `wfc_spring_elem`.
 */
#ifndef WEFT_CLOTH_FAST_H
#define WEFT_CLOTH_FAST_H

#include "cloth_math.h"
#include "cloth_mesh.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rest lengths a grid vertex stores (for the springs it starts). */
enum {
  WFC_R_X = 0,      /* stretch (a, a+1) */
  WFC_R_Y = 1,      /* stretch (a, a+nu) */
  WFC_R_DIAG = 2,   /* shear (a, a+nu+1) */
  WFC_R_ANTI = 3,   /* shear (a+1, a+nu) */
  WFC_R_BEND_X = 4, /* bend (a, a+2) */
  WFC_R_BEND_Y = 5, /* bend (a, a+2nu) */
  WFC_R_COUNT = 6
};

/* How a one-launch frame spreads over the device (wfc_spring_frame_plan). */
enum {
  WFC_FRAME_STRIDE = 0,   /* grid-stride loop over the vertices per substep, grid-wide barrier */
  WFC_FRAME_RESIDENT = 1, /* one vertex a thread, its state in registers for the whole frame */
};

/* Barriers of the resident frame. */
enum {
  WFC_BARRIER_NEIGHBOURS = 0, /* each block waits for the blocks whose vertices it reads */
  WFC_BARRIER_GRID = 1,       /* cooperative groups' grid.sync() (tuning.grid_sync) */
};

typedef struct wfc_frame_plan {
  uint32_t mode;         /* WFC_FRAME_* */
  uint32_t block;        /* threads a block (resident: `lanes` threads a vertex) */
  uint32_t blocks;       /* resident: blocks of the launch (all resident at once) */
  uint32_t resident_max; /* the most vertices the resident frame takes on this device (lanes 1) */
  uint32_t lanes;        /* resident grid cloths: threads a vertex (1, 2 or 4); otherwise 1 */
  uint32_t smem; /* resident grid cloths: 1 = the neighbourhood is staged in shared memory */
  uint32_t span; /* smem: vertices a block stages at most (block / lanes + 2 reach, <= n) */
  uint32_t tile_w, tile_h; /* tiled grid frame: a block's tile of columns x rows; 0: not tiled */
  uint32_t tile_steps;     /* tiled: substeps a stage, between exchanges (1 or 2); else 0 */
} wfc_frame_plan;

/* What the caller asks of a plan (wfc_spring_frame_plan). */
typedef struct wfc_frame_want {
  uint32_t block; /* threads a block; 0: automatic (tuning.block) */
  uint32_t lanes; /* 1, 2, 4: at most this many threads a vertex; 0: automatic (tuning.lanes) */
  uint32_t smem;  /* 0: off, 1: on where it fits, 2: automatic (tuning.smem) */
  uint32_t reach; /* largest |i - j| over the vertices j that vertex i reads */
  uint32_t grid;  /* 1: a grid cloth (the lanes and staging apply); 0: CSR springs of a mesh */
  uint32_t tile;  /* grid cloths: 0: no tiles, 1: automatic, 2: tiles of tile_w x tile_h */
  uint32_t tile_w, tile_h; /* tile 2: the tile asked for (each >= WFC_TILE_REACH) */
  uint32_t nu, nr;         /* grid cloths: columns and rows */
  uint32_t steps;          /* tiles: substeps a stage, 1 or 2; 0: automatic (2 where it fits) */
} wfc_frame_want;

typedef struct wfc_frame_args {
  wfc_spring_args half[2]; /* [0]: half 0 -> 1, [1]: half 1 -> 0 */
  const float *rest6;      /* grid: WFC_R_COUNT per vertex; NULL: the CSR adjacency */
  uint32_t nu, nr;         /* grid columns and rows */
  uint32_t substeps;
  wfc_frame_plan plan;
  uint32_t barrier; /* WFC_BARRIER_* (resident) */
  uint32_t reach; /* largest |i - j| over the vertices j that vertex i reads (springs, triangles) */
  uint32_t *sync; /* resident: one counter a block (substeps it has published; zero at first) */
  void *host_pos; /* NULL, or where the last substep also writes the positions (host memory) */
  uint32_t host_xyz; /* 0: host_pos holds xyzw (16 bytes a vertex), 1: packed xyz (12 bytes) */
} wfc_frame_args;

/* The readback of vertex i's position x (the last substep; host_pos is set). */
WF_HD static inline void wfc_frame_put(const wfc_frame_args *a, uint32_t i, wfp_f4 x) {
  if (a->host_xyz)
    wfc_put_xyz((float *)a->host_pos, i, x);
  else
    ((wfp_f4 *)a->host_pos)[i] = x;
}

/* One vertex of one substep on whichever path the frame uses. */
WF_HD static inline uint32_t wfc_frame_elem(const wfc_frame_args *a, uint32_t s, uint32_t i,
                                            wfx_forces *F) {
  const wfc_spring_args *h = &a->half[s & 1u];
  return wfc_spring_elem_on(h, a->rest6, a->nu, a->nr, i, F);
}

/* n = vertices: args->substeps mass-spring substeps from half 0 (see above). */
extern const wf_kernel wfc_spring_frame;

/* The plan of a one-launch frame over n vertices on a CUDA device (ordinal >= 0; its occupancy)
 * or on the CPU backend (ordinal < 0: resident up to WFC_CPU_RESIDENT_MAX threads, a limit that
 * exists so that the tests reach both modes and their boundary cheaply; on the CPU the resident
 * mode emulates the lanes and the staging, vertex by vertex). Resident when the n vertices fit
 * with one thread each (n <= resident_max); a grid cloth then gets the most lanes (4, 2, 1; at
 * most want->lanes) whose lanes x n threads are still resident, and the staging (automatic: with
 * 1 lane, where the cloth is bandwidth-bound rather than latency-bound) where it fits. */
void wfc_spring_frame_plan(int ordinal, uint32_t n, const wfc_frame_want *want,
                           wfc_frame_plan *out);
#define WFC_CPU_RESIDENT_MAX 4096u
/* The tiled grid frame: how far (rows, columns) a vertex reads (bend springs), the most threads
 * a tile's block has, and the tile the automatic choice tries first. */
#define WFC_TILE_REACH        2u
#define WFC_TILE_MAX_THREADS  512u
#define WFC_TILE2_MAX_THREADS 736u /* stages of two substeps: the tile and its ring of reach */
#define WFC_TILE_AUTO_W       32u
#define WFC_TILE_AUTO_H       16u
/* Shared memory a block may stage (the default limit of a launch, no opt-in). */
#define WFC_SMEM_MAX (48u * 1024u)

/* The grid rest table (WFC_R_COUNT floats per vertex, 0 where a spring does not exist) from a
 * grid topology's CSR springs; malloc'd into *out. WF_ERR_INVALID when t is not a grid or the
 * springs are not the grid's (then use the CSR path). */
wf_status wfc_grid_rest_build(const wfc_topology *t, const wfc_springs *sp, float **out);

#ifdef WEFT_HAVE_CUDA
void wfc_spring_frame_cuda(const void *args, size_t n, void *stream);
void wfc_spring_frame_plan_cuda(int ordinal, uint32_t n, const wfc_frame_want *want,
                                wfc_frame_plan *out);
#endif

#ifdef __cplusplus
}
#endif
#endif
