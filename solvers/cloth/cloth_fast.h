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
 * Grid cloths. A grid's springs follow from the vertex's row and column: stretch to the 4
 * neighbours, shear to the 4 diagonals, bend to the vertices two apart. The CSR adjacency
 * (8 B per incident spring, ~100 B a vertex every substep) is replaced by six rest lengths per
 * vertex for the springs it starts (+x, +y, the diagonal (a, a+nu+1), the diagonal (a+1, a+nu),
 * +2x, +2y), 24 B. `wfc_grid_gather` (cloth_math.h) visits a vertex's springs in exactly the order
 * of its CSR list (the order cloth_mesh.c lists the springs: by starting vertex, then in the order
 * above) with the same rest lengths (copied from that list), so it too is bitwise equal to
 * `wfc_spring_elem`.
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

typedef struct wfc_frame_args {
  wfc_spring_args half[2]; /* [0]: half 0 -> 1, [1]: half 1 -> 0 */
  const float *rest6;      /* grid: WFC_R_COUNT per vertex; NULL: the CSR adjacency */
  uint32_t nu, nr;         /* grid columns and rows */
  uint32_t substeps;
} wfc_frame_args;

/* One vertex of one substep on whichever path the frame uses. */
WF_HD static inline uint32_t wfc_frame_elem(const wfc_frame_args *a, uint32_t s, uint32_t i) {
  const wfc_spring_args *h = &a->half[s & 1u];
  return wfc_spring_elem_on(h, a->rest6, a->nu, a->nr, i);
}

/* n = vertices: args->substeps mass-spring substeps from half 0 (see above). */
extern const wf_kernel wfc_spring_frame;

/* The grid rest table (WFC_R_COUNT floats per vertex, 0 where a spring does not exist) from a
 * grid topology's CSR springs; malloc'd into *out. WF_ERR_INVALID when t is not a grid or the
 * springs are not the grid's (then use the CSR path). */
wf_status wfc_grid_rest_build(const wfc_topology *t, const wfc_springs *sp, float **out);

#ifdef WEFT_HAVE_CUDA
void wfc_spring_frame_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
