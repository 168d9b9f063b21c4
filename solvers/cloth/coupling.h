/* The one place where the cloth solver touches the particle solver's internals: its grid (keys,
 * sort, cell tables, the 27-cell neighbour walk), its prediction, its device buffers and the
 * substep hooks through which its frames step coupled cloths. Internal to libweft (no WF_API).
 *
 * The particle solver's data layout may change (it is being optimised); everything the cloth
 * kernels and cloth.c need from it goes through this header and coupling.c, so that is all
 * there is to adapt:
 *  - device side (WF_HD, read by cloth_math.h on both backends): wfc_pgrid, a view of the
 *    particle solver's sorted state and cell tables, with the neighbour walk
 *    WFC_PGRID_FOR_NEAR and the prediction wfc_pgrid_predict; wfc_grid_*, the same uniform grid
 *    (key function, cell tables, walk) built over cloth vertices for self-collision and for the
 *    particles' side of the coupling;
 *  - host side: wfc_grid_params_init / wfc_grid_sort / wfc_grid_cells (the particle solver's
 *    key layout, radix sort and cell kernels, launched on cloth data), and the internal API that
 *    solvers/particle/particle.c defines: wfp_view_get (its buffers), wfp_hook_add / remove (a
 *    function its substeps call at fixed points, so a frame of the particle solver — captured
 *    into one graph — steps the coupled cloths substep by substep).
 *
 * Invariants the coupling relies on: inside a particle substep, between the grid build and the
 * contacts (WFP_HOOK_GRID), the sorted copies spos/svel hold every particle's state at the
 * start of the substep, ordered by cell key, and cell_start/cell_end index them; the contact
 * kernel then integrates from spos/svel, so a velocity added to svel there is integrated like
 * any other. Hooks run on the particle solver's stream, in the order they were added.
 */
#ifndef WEFT_CLOTH_COUPLING_H
#define WEFT_CLOTH_COUPLING_H

#include <stddef.h>
#include <stdint.h>

#include "solvers/particle/hooks.h"
#include "solvers/particle/particle_math.h"
#include "weft/gpu.h"
#include "weft/hd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device side: the particle solver's grid -------------------------------------------------
 */

/* The particle solver's state during a substep (solvers/particle/hooks.h). */
typedef wfp_grid_view wfc_pgrid;

/* Where the particle at sorted slot t will be at the end of the substep without contacts. */
WF_HD static inline wfp_f4 wfc_pgrid_predict(const wfc_pgrid *g, wfp_f4 x, wfp_f4 v) {
  return wfp_predict(g->params, x, v);
}

/* The distance within which the 27-cell walk around a point is sure to find a particle (its
 * position at the start of the substep): one cell, less a margin for the rounding of x / h. */
WF_HD static inline float wfc_pgrid_reach(const wfc_pgrid *g) { return 0.99f * g->params->cell; }

WF_HD static inline float wfc_pgrid_dt(const wfc_pgrid *g) { return g->params->dt; }

/* Calls VISIT(t) for each sorted slot t of the particles in the 27 cells around (x, y, z), in
 * the particle solver's fixed order. */
#define WFC_PGRID_FOR_NEAR(g, x, y, z, VISIT)                                                      \
  {                                                                                                \
    const wfp_params *gp_ = (g)->params;                                                           \
    int bad_ = 0;                                                                                  \
    int32_t c_[3] = {wfp_cell_coord((x), gp_->inv_cell, &bad_),                                    \
                     wfp_cell_coord((y), gp_->inv_cell, &bad_),                                    \
                     wfp_cell_coord((z), gp_->inv_cell, &bad_)};                                   \
    WFP_FOR_NEIGHBOURS_DENSE((g), gp_, WFP_EMPTY, c_, VISIT)                                       \
  }

/* ---- device side: the same grid over cloth vertices ------------------------------------------
 */

/* Cell size and periodic box of a cloth's grid (the particle solver's parameter block: only its
 * grid fields are set and read). */
typedef wfp_params wfc_grid_params;

typedef struct wfc_cgrid {
  const wfc_grid_params *params;
  const uint32_t *cell_start, *cell_end; /* by key */
  const uint32_t *vals;                  /* sorted slot -> vertex */
  const wfp_f4 *q;                       /* vertex positions the grid was built from */
} wfc_cgrid;

/* Cell key of a point. */
WF_HD static inline uint32_t wfc_grid_key(const wfc_grid_params *g, wfp_f4 x) {
  uint32_t key;
  int32_t c[3];
  (void)wfp_key_elem(g, x, &key, c);
  return key;
}

WF_HD static inline float wfc_grid_reach(const wfc_grid_params *g) { return 0.99f * g->cell; }

/* Calls VISIT(t) for each sorted slot t of the vertices in the 27 cells around (x, y, z). */
#define WFC_CGRID_FOR_NEAR(g, x, y, z, VISIT)                                                      \
  {                                                                                                \
    const wfc_grid_params *gp_ = (g)->params;                                                      \
    int bad_ = 0;                                                                                  \
    int32_t c_[3] = {wfp_cell_coord((x), gp_->inv_cell, &bad_),                                    \
                     wfp_cell_coord((y), gp_->inv_cell, &bad_),                                    \
                     wfp_cell_coord((z), gp_->inv_cell, &bad_)};                                   \
    WFP_FOR_NEIGHBOURS((g), gp_, WFP_EMPTY, c_, VISIT)                                             \
  }

#ifndef __CUDACC__
/* ---- host side (coupling.c): building a grid over cloth vertices ---------------------------- */

/* THE SEAM BETWEEN THE CLOTH'S FRAME AND THE PARTICLES'. A cloth keeps its positions relative to
 * its origin (docs/precision.md); the coupling kernels move particle positions into the cloth's
 * frame by the difference of the two origins (wfc_params.particle_shift). This returns the
 * particles' (wf_particles_origin; 0 until their first particles fix it: the cloth couples after
 * the particles were added). */
void wfc_particles_origin(const wf_particles *ps, double out[3]);
/* Fills g for cells of size `cell` in a periodic box of at most `table` cells; *bits receives
 * the key bits the sort needs. */
void wfc_grid_params_init(wfc_grid_params *g, float cell, uint32_t table, int *bits);
/* Bytes of device scratch the sort of n keys needs on dev (0 on CPU devices). */
size_t wfc_grid_sort_temp_bytes(wf_device *dev, uint32_t n, int bits);
/* Stable sort of (keys, vals) by key into (keys_out, vals_out); keys and vals are clobbered. */
wf_status wfc_grid_sort(wf_stream *s, uint32_t *keys, uint32_t *vals, uint32_t *keys_out,
                        uint32_t *vals_out, uint32_t n, int bits, void *temp, size_t temp_bytes);
/* Cell tables of the sorted keys (cell_start cleared first; table entries). */
wf_status wfc_grid_cells(wf_stream *s, wf_buffer *cell_start, wf_buffer *cell_end,
                         const uint32_t *sorted_keys, uint32_t n, uint32_t table);

#endif

#ifdef __cplusplus
}
#endif
#endif
