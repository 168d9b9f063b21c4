/* What the split solver (split.c: one particle solver per device, with halos) needs from a
 * single-device solver, beyond the public API. Internal to libweft (no WF_API).
 *
 * A partition is an ordinary wfp_part holding the particles it owns and its ghosts, all in
 * ascending global-id order. The split solver replaces that set at every repartition
 * (wfp_part_replace), fixes the grid's cell size for all partitions (wfp_cell_size_set: the
 * neighbour visiting order depends on the cell of each particle, so every partition must use the
 * cells the whole particle set would), and enqueues the partitions' frames itself, substep by
 * substep, so that it can put the halo exchange between substeps and capture the frames of all
 * devices into one graph.
 */
#ifndef WEFT_PARTICLE_INTERNAL_H
#define WEFT_PARTICLE_INTERNAL_H

#include "hooks.h"
#include "part.h"
#include "particle_math.h"
#include "weft/particles.h"

/* Enqueue a frame on the solver's stream in three parts: begin, one substep (call K times,
 * wf_particles_desc.substeps), end (publishes the clock). Nothing is captured here: the caller
 * captures, or not. */
wf_status wfp_frame_enqueue_begin(wfp_part *ps);
wf_status wfp_substep_enqueue(wfp_part *ps);
/* The substep in two parts (the split solver's ghosts arrive between them): the cell counts
 * cleared and the keys of the particles whose skip is not NaN (skip NULL: all), then the rest;
 * together, wfp_substep_enqueue when every particle got its key in between (the ghosts by
 * wfp_halo_unpack_keys with wfp_part_keys_args). */
wf_status wfp_substep_enqueue_keys(wfp_part *ps, const float *skip);
wf_status wfp_substep_enqueue_rest(wfp_part *ps);
wfp_keys_args wfp_part_keys_args(wfp_part *ps);
wf_status wfp_frame_enqueue_end(wfp_part *ps);
/* After the caller launched frames that include this solver's work: orders later users of its
 * buffers after them and remembers the frame for the box refit. */
wf_status wfp_frames_launched(wfp_part *ps);

/* The cloth coupling's access (coupling.h's wfp_view_get, wfp_hook_*), on one partition. */
wf_status wfp_part_view_get(wfp_part *ps, wfp_view *out);
wf_status wfp_part_hook_add(wfp_part *ps, wfp_hook_fn fn, void *user);
void wfp_part_hook_remove(wfp_part *ps, wfp_hook_fn fn, void *user);

/* Waits for the solver and copies its particles (local order) into pos, vel, mat, gid (any
 * NULL). */
wf_status wfp_part_get(wfp_part *ps, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat, uint32_t *gid);
/* The same with the granular state: angular velocities and WFP_HIST_SLOTS history slots a
 * particle (any NULL). */
wf_status wfp_part_get_all(wfp_part *ps, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat, uint32_t *gid,
                           wfp_f4 *omega, wfp_hist *hist);

/* The device tables the kernels read (materials, colliders, the clock) and the colliders' count,
 * for kernels of other files (energy.c). */
typedef struct wfp_tables {
  const wfp_material *mats;
  const wfp_collider *colliders;
  const wfp_clock *clock;
  uint32_t n_colliders;
} wfp_tables;
wfp_tables wfp_part_tables(wfp_part *ps);

/* The device arrays of the particles (valid until the next resize, replace or add). */
typedef struct wfp_arrays {
  wfp_f4 *pos, *vel;
  uint32_t *gid;
  uint16_t *mat;
  wfp_f4 *omega;  /* angular velocities */
  wfp_hist *hist; /* WFP_HIST_SLOTS a particle */
} wfp_arrays;
wfp_arrays wfp_part_arrays(wfp_part *ps);
/* Records that work the caller queued on the solver's stream (kernels on wfp_part_arrays)
 * uses every buffer of the solver: a later free or copy ordered on another stream (a graph's
 * release, a copy out to another device) then waits for that work. */
wf_status wfp_part_touch(wfp_part *ps);
/* The size the substep's per-particle kernels are launched over: at least the count (0: the
 * count). They read the count on the device, so a frame captured with a launch size stays valid
 * while the count changes up to it (see wfp_live); the solver's own captured frame is dropped
 * when the size changes. */
void wfp_part_set_launch(wfp_part *ps, uint32_t launch);
/* Changes whenever the solver's buffers are replaced (they grew): a frame captured before then
 * points at freed memory. */
uint32_t wfp_part_generation(const wfp_part *ps);
/* The split solver's drift check in the solver's contact kernels (wfp_drift_ctl): anchors per
 * local particle and the control block, on the solver's device; NULL: none. */
void wfp_part_set_drift(wfp_part *ps, const float *anchor, wfp_drift_ctl *ctl);

/* Makes the solver hold n particles whose data the caller then writes on the solver's stream
 * (wfp_part_arrays), without waiting: grows the buffers in stream order when needed
 * (their contents are not kept), records the largest radius and fits the grid's box to the cell
 * extent lo..hi (an empty extent, lo > hi: the box stays). */
wf_status wfp_part_resize(wfp_part *ps, uint32_t n, float max_radius, const int32_t lo[3],
                          const int32_t hi[3]);
/* Sets the clock (simulated seconds, substeps) on the solver's stream, flags cleared. */
wf_status wfp_clock_set(wfp_part *ps, double time, uint64_t substeps);
/* The cell extent the last finished frame saw (valid once the caller has waited for it); false
 * when there is none. */
bool wfp_extent_get(const wfp_part *ps, int32_t lo[3], int32_t hi[3]);
/* Replaces every particle by the n given ones (local order; gid: their global ids, the contact
 * history's keys), growing the buffers when needed; the clock and the materials stay. omega and
 * hist (WFP_HIST_SLOTS a particle) may be NULL: zeros (at rest, no contacts remembered). Drops
 * the captured frame. */
wf_status wfp_part_replace(wfp_part *ps, uint32_t n, const wfp_f4 *pos, const wfp_f4 *vel,
                           const uint16_t *mat, const uint32_t *gid, const wfp_f4 *omega,
                           const wfp_hist *hist);
/* The granular state's buffers (omega: capacity x 16 bytes; hist: capacity x WFP_HIST_SLOTS
 * slots), local order. */
wf_status wfp_part_granular_buffers(wfp_part *ps, wf_buffer **omega, wf_buffer **hist);
/* The global ids' buffer (wfp_arrays.gid). */
wf_buffer *wfp_part_gid_buffer(wfp_part *ps);
/* Uploads the granular state (omega, WFP_HIST_SLOTS history slots a particle) of every particle
 * in local order, and waits. */
wf_status wfp_part_granular_set(wfp_part *ps, const wfp_f4 *omega, const wfp_hist *hist);
/* Fixes the grid's cell size (> 0; every particle's diameter must stay at most that), or makes
 * it automatic again (0: twice the largest radius). */
wf_status wfp_cell_size_set(wfp_part *ps, float cell);
/* The largest radius of the particles added so far. */
float wfp_max_radius(const wfp_part *ps);

#endif
