/* One partition of a particle solver (part.c): the particles, materials, colliders and grid of
 * one device, with its stream and its captured frame. Internal to libweft (no WF_API): the public
 * wf_particles (particles.c, weft/particles.h) owns one per device and, with one device, hands
 * every call straight to it; with several it enqueues their substeps itself, between halo
 * exchanges (particle_internal.h).
 *
 * Each function does what the public one of the same verb did for a one-device solver (see the
 * field and function comments in weft/particles.h): wfp_part_create takes the device explicitly
 * and ignores desc->devices and the split settings.
 */
#ifndef WEFT_PARTICLE_PART_H
#define WEFT_PARTICLE_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/xsum.h"
#include "weft/particles.h"

typedef struct wfp_part wfp_part;

wf_status wfp_part_create(wf_device *dev, const wf_particles_desc *desc, wfp_part **out);
void wfp_part_destroy(wfp_part *ps);
wf_status wfp_part_add_material(wfp_part *ps, const wf_particle_material *m, uint32_t *index);
wf_status wfp_part_set_material(wfp_part *ps, uint32_t index, const wf_particle_material *m);
wf_status wfp_part_emit(wfp_part *ps, const wf_particles_emitter *e, uint32_t *first,
                        uint32_t *count);
/* pos relative to `from` (NULL: world positions), moved into the solver's frame in double. */
wf_status wfp_part_add(wfp_part *ps, const double *from, uint32_t n, const float (*pos)[4],
                       const float (*vel)[4], const float *birth, uint32_t material,
                       uint32_t *first);
wf_status wfp_part_add_collider(wfp_part *ps, const wf_collider_desc *c, uint32_t *index);
wf_status wfp_part_set_collider_pose(wfp_part *ps, uint32_t k, const wf_collider_pose *pose);
wf_particles_params wfp_part_params_get(const wfp_part *ps);
wf_status wfp_part_params_set(wfp_part *ps, const wf_particles_params *p);
/* The drag of wf_particles_drag_set in this partition's parameter block (target in the world). */
wf_status wfp_part_drag_set(wfp_part *ps, bool on, uint32_t gid, const double target[3],
                            float stiffness, float damping);
wf_status wfp_part_step_frames(wfp_part *ps, int frames);
wf_status wfp_part_step_substeps(wfp_part *ps, int n);
uint32_t wfp_part_count(const wfp_part *ps);
wf_status wfp_part_download(wfp_part *ps, float (*pos)[4], float (*vel)[4]);
wf_status wfp_part_copy_state(wfp_part *ps, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                              size_t vel_off, wf_stream *s);
wf_stream *wfp_part_stream(const wfp_part *ps);
/* The partition's device, and its state buffers: pos and vel hold wfp_part_capacity() rows of
 * 16 bytes, the first wfp_part_count() being its particles in local order; clock begins with the
 * simulated seconds (double) and the substep count (uint64). Any output may be NULL. */
wf_device *wfp_part_device(const wfp_part *ps);
wf_status wfp_part_state_buffers(wfp_part *ps, wf_buffer **pos, wf_buffer **vel, wf_buffer **clock);
wf_status wfp_part_set_state(wfp_part *ps, const float (*pos)[4], const float (*vel)[4],
                             double time, uint64_t substeps);
wf_status wfp_part_check(wfp_part *ps);
/* The origin the partition's positions are relative to (docs/precision.md): emitters, added
 * particles and colliders are moved into its frame in double, rounded once; downloads, set_state
 * and the views are in that frame. Set before any particle (the colliders added before move into
 * the new frame). */
wf_status wfp_part_origin_set(wfp_part *ps, const double origin[3]);
void wfp_part_origin(const wfp_part *ps, double out[3]);
wf_status wfp_part_stats_get(wfp_part *ps, wf_particles_stats *out);
size_t wfp_part_device_bytes(const wfp_part *ps);
wf_status wfp_part_profile(wfp_part *ps, int substeps, wf_particles_profile_result *out);
uint32_t wfp_part_capacity(const wfp_part *ps);
/* Waits for the partition's frames, then: the last frame's (or run of substeps') sums of the
 * impulses on its colliders, WFX_FORCE_WORDS per collider (collider_force.h), in *table (the
 * partition's own copy, valid until the next call), and the seconds they were summed over. */
wf_status wfp_part_forces(wfp_part *ps, const unsigned long long **table, double *seconds);
/* Whether the kernels sum the impulses on the colliders (off at creation: the sums cost ~10% of a
 * substep where every particle touches a collider). Turning it on or off drops the captured frame
 * and zeroes the sums; the frames after it sum them. Results are bitwise the same either way. */
wf_status wfp_part_measure_forces(wfp_part *ps, bool on);
bool wfp_part_measuring_forces(const wfp_part *ps);
uint32_t wfp_part_collider_count(const wfp_part *ps);
wf_status wfp_part_download_omega(wfp_part *ps, float (*omega)[4]);
/* Logs a warning for each material whose smallest particles need more substeps than the desc
 * has (wf_particles_stability), once after particles were added or a material changed. */
void wfp_part_stability_check(wfp_part *ps);
/* The statistics' sums, exact (internal/xsum.h): the same bits in any order and however the
 * particles are split over partitions and ranks. */
typedef struct wfp_stats_acc {
  wf_xsum sum[5]; /* kinetic, rotational, momentum x, y, z */
  double max_speed;
} wfp_stats_acc;
void wfp_stats_init(wfp_stats_acc *a);
/* Adds n particles' energies, momenta and speeds (pos, vel, omega rows; skip: rows to leave out,
 * a NaN there, or NULL) to a. */
void wfp_stats_add(wfp_stats_acc *a, size_t n, const float (*x)[4], const float (*v)[4],
                   const float (*w)[4], const float *skip);
/* The sums into out's kinetic and rotational energy, momentum and largest speed. */
void wfp_stats_out(wfp_stats_acc *a, wf_particles_stats *out);

#endif
