/* What the split cloth solver (split.c: one cloth solver per device, with halos) needs from a
 * single-device cloth (cloth.c), beyond the public API. Internal to libweft (no WF_API).
 *
 * A partition is an ordinary wf_cloth made from explicit local topology: its vertices are the
 * ones it owns (first; split.c orders them) and then its ghosts (ascending global order);
 * its springs, XPBD constraints and triangles are the global ones, in global order, re-indexed
 * to local vertices. The per-vertex kernels (springs, XPBD predict and finalize) update only the
 * owned vertices [0, n_update); ghosts change only through XPBD constraint projections and the
 * split's halo exchange. The split enqueues the substeps stage by stage, so that it can put the
 * halo exchange between the stages and capture the frames of all devices into one graph.
 */
#ifndef WEFT_CLOTH_INTERNAL_H
#define WEFT_CLOTH_INTERNAL_H

#include "cloth_math.h"
#include "cloth_mesh.h"
#include "weft/cloth.h"

/* Explicit local topology. The topology passed beside it (x, tris, vt_start, vt_list, nv, nt;
 * no edges, grid 0 x 0) is taken over by the cloth, as are none of these arrays (copied). */
typedef struct wfc_local {
  uint32_t n_update;           /* owned vertices: [0, n_update) are integrated */
  const float *inv_mass;       /* nv: inverse masses (from the whole mesh) */
  const wfc_springs *springs;  /* mass-spring: CSR over the local vertices (ghosts: empty) */
  const wfc_constraints *cons; /* XPBD: by global colour, global order within a colour */
} wfc_local;

/* The device buffers the split exchanges. */
enum { WFC_BUF_POS0, WFC_BUF_VEL0, WFC_BUF_POS1, WFC_BUF_VEL1 };

/* Checks the settings as wf_cloth_create_* does (errors name fn and the cloth). */
wf_status wfc_check_desc(const char *fn, const wf_cloth_desc *desc, const char *name);
/* Creates a cloth from local topology (takes *topo, also on failure). desc->self_collision must
 * be false. */
wf_status wfc_cloth_create_local(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                                 wfc_topology *topo, const wfc_local *local, wf_cloth **out);

/* The columns [range[0], range[1]] x rows [range[2], range[3]] of a named part of a grid
 * ("top-left", "top", ...; wf_cloth_pin_named); an error naming the cloth for a mesh (grid 0 x 0)
 * or an unknown name. */
wf_status wfc_pin_named_range(const char *fn, const char *name, const uint32_t grid[2],
                              const char *where, uint32_t range[4]);

/* The stages of a substep, on the cloth's stream. Mass-spring: one call per substep (state half
 * `in` -> the other). XPBD: predict (also clears the multipliers), colour(q) for every iteration
 * and colour in order, finalize. Then, after the frame's substeps, frame_end: a mass-spring
 * frame of an odd number of substeps copies half 1 back to half 0; every buffer is marked as used
 * on the cloth's stream. */
wf_status wfc_enqueue_springs(wf_cloth *c, const char *fn, int in);
wf_status wfc_enqueue_predict(wf_cloth *c, const char *fn);
wf_status wfc_enqueue_colour(wf_cloth *c, const char *fn, uint32_t colour);
wf_status wfc_enqueue_finalize(wf_cloth *c, const char *fn);
wf_status wfc_enqueue_frame_end(wf_cloth *c, const char *fn, int substeps);
/* The same stages over owned vertices [begin, end) only (split.c's overlap: the vertices other
 * partitions read first, then the rest). Pieces covering [0, n_update) compute what the whole
 * stage computes, bit for bit; the predict piece does not clear the multipliers:
 * clear_multipliers does (before the first colour pass). */
wf_status wfc_enqueue_springs_range(wf_cloth *c, const char *fn, int in, uint32_t begin,
                                    uint32_t end);
wf_status wfc_enqueue_predict_range(wf_cloth *c, const char *fn, uint32_t begin, uint32_t end);
wf_status wfc_enqueue_clear_multipliers(wf_cloth *c, const char *fn);
wf_status wfc_enqueue_finalize_range(wf_cloth *c, const char *fn, uint32_t begin, uint32_t end);
/* Marks every buffer as used on the cloth's stream (after frames launched by someone else). */
wf_status wfc_touch(wf_cloth *c, const char *fn);

/* XPBD colours (0 for mass-spring); the buffer `which` (WFC_BUF_*). */
uint32_t wfc_colours(const wf_cloth *c);
wf_buffer *wfc_buffer(const wf_cloth *c, int which);
/* Waits for the cloth and reads its device flags: *bad non-zero when a vertex became NaN/inf,
 * *first_bad its local index. */
wf_status wfc_flags_get(wf_cloth *c, const char *fn, uint32_t *bad, uint32_t *first_bad);

#endif
