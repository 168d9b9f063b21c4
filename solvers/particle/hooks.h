/* What the particle solver lets a coupled solver (the cloth, solvers/cloth/coupling.h) reach:
 * a view of its sorted state and cell tables during a substep, and hooks its substeps call at
 * fixed points, so that one captured particle frame steps the coupled cloths substep by substep.
 * The particle solver owns this header; the coupling depends on it, not the other way round.
 * Internal to libweft (no WF_API).
 *
 * Invariants: inside a substep, between the grid build and the contacts (WFP_HOOK_GRID), the
 * sorted copies spos/svel hold every particle's state at the start of the substep, ordered by
 * cell key, and cell_start indexes them; the contact kernel then integrates from spos/svel, so a
 * velocity added to svel there is integrated like any other. Hooks run on the particle solver's
 * stream, in the order they were added. One partition only (a coupled solver needs one device).
 */
#ifndef WEFT_PARTICLE_HOOKS_H
#define WEFT_PARTICLE_HOOKS_H

#include <stdint.h>

#include "particle_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The particle solver's state during a substep, as the coupling kernels read and write it.
 * cell_start is the solver's dense start table (WFP_FOR_NEIGHBOURS_DENSE); cell_end is unused. */
typedef struct wfp_grid_view {
  const wfp_params *params; /* the device parameter block: dt, gravity, damping, cell, box */
  const uint32_t *cell_start, *cell_end;
  const wfp_f4 *spos; /* sorted by cell key: xyz + radius */
  wfp_f4 *svel;       /* sorted: xyz + inverse mass (0: kinematic); the coupling adds to xyz */
  uint32_t n;         /* particles */
} wfp_grid_view;

typedef struct wf_particles wf_particles;

/* Points in a substep where hooks run (all on the particle solver's stream). */
enum {
  WFP_HOOK_GRID = 0,    /* after the grid build and sorted copies, before the contacts */
  WFP_HOOK_SUBSTEP = 1, /* after the substep (contacts, integration, clock) */
  WFP_HOOK_FRAME = 2,   /* after a batch of substeps (a frame), before the buffers are marked */
  WFP_HOOK_DETACH = 3   /* the particle solver is being destroyed: forget it */
};
typedef wf_status (*wfp_hook_fn)(void *user, int event);

/* What the coupling needs of a particle solver. grid's pointers are valid until the solver's
 * buffers grow (adding particles beyond the capacity), which also drops its captured frame, so
 * a hook that reads them again at WFP_HOOK_GRID always sees the current ones. */
typedef struct wfp_view {
  const char *name;
  wf_device *dev;
  wf_stream *stream;
  float frame_dt;
  int substeps;
  float max_radius;
  wfp_grid_view grid; /* .n = the particle count */
} wfp_view;

wf_status wfp_view_get(wf_particles *ps, wfp_view *out);
/* Adds a hook (at most WFP_MAX_HOOKS); drops the captured frame so the next one records it. */
#define WFP_MAX_HOOKS 16
wf_status wfp_hook_add(wf_particles *ps, wfp_hook_fn fn, void *user);
void wfp_hook_remove(wf_particles *ps, wfp_hook_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
