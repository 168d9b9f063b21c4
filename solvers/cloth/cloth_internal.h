/* A cloth partition (wfc_part, cloth.c): the solver of the vertices one device holds. The public
 * wf_cloth (cloth_parts.h) owns one partition per device. With one device its partition is the
 * whole cloth, built from the grid or mesh as it is given (no halo, the single-device fast path:
 * tiled frame kernels, per-frame readback); every wf_cloth_* call goes straight to it. Internal to
 * libweft (no WF_API).
 *
 * With several devices a partition is made from explicit local topology: its vertices are the
 * ones it owns (first; partition_build.c orders them) and then its ghosts (ascending global order);
 * its springs, XPBD constraints and triangles are the global ones, in global order, re-indexed
 * to local vertices. The per-vertex kernels (springs, XPBD predict and finalize) update only the
 * owned vertices [0, n_update); ghosts change only through XPBD constraint projections and the
 * halo exchange (halo.c). halo.c enqueues the substeps stage by stage, so that it can put the
 * halo exchange between the stages and capture the frames of all devices into one graph.
 */
#ifndef WEFT_CLOTH_INTERNAL_H
#define WEFT_CLOTH_INTERNAL_H

#include "cloth_energy.h"
#include "cloth_material.h"
#include "cloth_math.h"
#include "cloth_mesh.h"
#include "weft/cloth.h"

typedef struct wfc_part wfc_part;

/* The single-device solver, as the public wf_cloth_* functions of the same verb describe them
 * (weft/cloth.h); errors name the public function. The public function checks what it is given
 * first (the cloth, vertex indices, counts and sizes); a partition checks the rest. */
wf_status wfc_part_create_grid(wf_device *dev, const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                               wfc_part **out);
wf_status wfc_part_create_mesh(wf_device *dev, const wf_cloth_desc *desc,
                               const wf_cloth_mesh_desc *mesh, wfc_part **out);
void wfc_part_destroy(wfc_part *c);
wf_status wfc_part_pin(wfc_part *c, uint32_t vertex);
wf_status wfc_part_attach(wfc_part *c, uint32_t vertex, uint32_t collider);
wf_status wfc_part_add_collider(wfc_part *c, const wf_collider_desc *d, uint32_t *index);
wf_status wfc_part_set_collider_pose(wfc_part *c, uint32_t k, const wf_collider_pose *pose);
wf_status wfc_part_set_material(wfc_part *c, const wf_cloth_material *m);
wf_cloth_params wfc_part_params_get(const wfc_part *c);
wf_status wfc_part_params_set(wfc_part *c, const wf_cloth_params *p);
wf_status wfc_part_couple(wfc_part *c, wf_particles *ps);
/* The drag of wf_cloth_drag_set in this partition's parameter block: on, the local vertex it
 * owns, the target in the cloth's frame (relative to its origin); off (on false): none here. */
wf_status wfc_part_drag_set(wfc_part *c, bool on, uint32_t vertex, const float target[3],
                            float stiffness, float damping);
wf_status wfc_part_step_frames(wfc_part *c, int frames);
wf_status wfc_part_step_substeps(wfc_part *c, int n);
wf_status wfc_part_download(wfc_part *c, float (*pos)[4], float (*vel)[4]);
wf_status wfc_part_set_state(wfc_part *c, const float (*pos)[4], const float (*vel)[4], double time,
                             uint64_t substeps);
wf_status wfc_part_copy_positions_on(wfc_part *c, wf_buffer *dst, size_t off, wf_stream *s);
wf_status wfc_part_set_frame_readback_as(wfc_part *c, wf_buffer *dst, size_t off,
                                         wf_cloth_layout layout);
wf_status wfc_part_time(wfc_part *c, double *seconds, uint64_t *substeps);
wf_status wfc_part_info_get(const wfc_part *c, wf_cloth_info *out);
wf_stream *wfc_part_stream(const wfc_part *c);
wf_device *wfc_part_device(const wfc_part *c);
/* Waits and computes the energy rows of the owned vertices [0, n_update) into out (cloth_energy.h;
 * errors name wf_cloth_energy_get). */
wf_status wfc_part_energy(wfc_part *c, wfc_energy *out);
/* The state between frames: pos, vel (vertices x 16 bytes) and the clock; any may be NULL. */
wf_status wfc_part_state_buffers(wfc_part *c, wf_buffer **pos, wf_buffer **vel, wf_buffer **clock);
/* Its topology: the origin, rest positions relative to it, triangles, grid size (a partition's
 * in its local numbering; every partition of a cloth has the cloth's origin). */
const wfc_topology *wfc_part_topology(const wfc_part *c);
/* An error naming the cloth: out of host memory. */
wf_status wfc_oom(const char *fn, const char *name);

/* Explicit local topology. The topology passed beside it (x, tris, vt_start, vt_list, nv, nt;
 * no edges, grid 0 x 0) is taken over by the cloth, as are none of these arrays (copied). */
typedef struct wfc_local {
  uint32_t n_update;           /* owned vertices: [0, n_update) are integrated */
  const float *inv_mass;       /* nv: inverse masses (from the whole mesh) */
  const wfc_springs *springs;  /* mass-spring: CSR over the local vertices (ghosts: empty) */
  const wfc_constraints *cons; /* XPBD: by global colour, global order within a colour */
  double spacing;              /* the whole mesh's spacing (wfc_mesh_spacing) */
  bool grid;                   /* the whole cloth is a grid */
  /* contact (cloth_parts.h, "Contact"): the whole cloth's topology (with its edges) and the
   * concatenation of every partition's owned vertices (global ids, whole->nv of them), this
   * partition's at cat_first; read while the partition is made. NULL without contact. */
  const wfc_topology *whole;
  const uint32_t *cat_gid;
  uint32_t cat_first;
} wfc_local;

/* The device buffers the halo exchanges. */
enum { WFC_BUF_POS0, WFC_BUF_VEL0, WFC_BUF_POS1, WFC_BUF_VEL1 };

/* Checks the settings as wf_cloth_create_* does (errors name fn and the cloth). */
wf_status wfc_check_desc(const char *fn, const wf_cloth_desc *desc, const char *name);
/* Creates a cloth from local topology (takes *topo, also on failure). desc->self_collision must
 * be false. */
wf_status wfc_cloth_create_local(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                                 wfc_topology *topo, const wfc_local *local, wfc_part **out);

/* The columns [range[0], range[1]] x rows [range[2], range[3]] of a named part of a grid
 * ("top-left", "top", ...; wf_cloth_pin_named); an error naming the cloth for a mesh (grid 0 x 0)
 * or an unknown name. */
wf_status wfc_pin_named_range(const char *fn, const char *name, const uint32_t grid[2],
                              const char *where, uint32_t range[4]);

/* The stages of a substep, on the cloth's stream, as halo.c enqueues them. The per-vertex ones
 * (a mass-spring substep from state half `in` to the other, XPBD's predict and finalize) run over
 * owned vertices [begin, end) only (halo.c's overlap: the vertices other partitions read first,
 * then the rest); pieces covering [0, n_update) compute what the whole stage computes, bit for
 * bit. XPBD: predict, clear_multipliers, colour(q) for every iteration and colour in order,
 * finalize. After the frame's substeps, frame_end: a mass-spring frame of an odd number of
 * substeps copies half 1 back to half 0; every buffer is marked as used on the cloth's stream. */
wf_status wfc_enqueue_colour(wfc_part *c, const char *fn, uint32_t colour);
/* A frame of `substeps` begins: the collider impulses (collider_force.h) start from zero. */
wf_status wfc_enqueue_frame_begin(wfc_part *c, const char *fn, int substeps);
/* Waits for the cloth, then: the last frame's sums of the impulses on its colliders
 * (WFX_FORCE_WORDS per collider, the partition's own copy) and the seconds they span. */
wf_status wfc_part_forces(wfc_part *c, const unsigned long long **table, double *seconds);
/* Whether the kernels sum the impulses on the colliders (off at creation). Turning it on or off
 * drops the captured frame and zeroes the sums; the motion is bitwise the same either way. */
wf_status wfc_part_measure_forces(wfc_part *c, bool on);
bool wfc_part_measuring_forces(const wfc_part *c);
uint32_t wfc_part_collider_count(const wfc_part *c);
wf_status wfc_enqueue_frame_end(wfc_part *c, const char *fn, int substeps);
wf_status wfc_enqueue_springs_range(wfc_part *c, const char *fn, int in, uint32_t begin,
                                    uint32_t end);
wf_status wfc_enqueue_predict_range(wfc_part *c, const char *fn, uint32_t begin, uint32_t end);
wf_status wfc_enqueue_clear_multipliers(wfc_part *c, const char *fn);
wf_status wfc_enqueue_finalize_range(wfc_part *c, const char *fn, uint32_t begin, uint32_t end);
/* Marks every buffer as used on the cloth's stream (after frames launched by someone else). */
wf_status wfc_touch(wfc_part *c, const char *fn);
/* A partition's contact stage (cloth_contact.h) after the end guess (springs: of the substep
 * from half `in`; XPBD: after the constraints), over the whole cloth's positions: its own owned
 * vertices and the others' copied into wfc_contact_cat (which 0: the start positions, 1: the end
 * guesses) before it; it corrects the owned vertices only. Nothing without contact. */
wf_status wfc_enqueue_contact(wfc_part *c, const char *fn, int in);
wf_buffer *wfc_contact_cat(const wfc_part *c, int which);

/* XPBD colours (0 for mass-spring); the buffer `which` (WFC_BUF_*). */
uint32_t wfc_colours(const wfc_part *c);
wf_buffer *wfc_buffer(const wfc_part *c, int which);
/* Waits for the cloth and reads its device flags: *bad non-zero when a vertex became NaN/inf,
 * *first_bad its local index. */
wf_status wfc_flags_get(wfc_part *c, const char *fn, uint32_t *bad, uint32_t *first_bad);

/* Contact groups (cloth_group.c): the substep of a cloth of a group in two parts around the
 * group's contact stage. pre: everything up to the end guess (XPBD: predict and constraints;
 * springs: the spring step into the other half), the cloth's own contact stage left out; post:
 * XPBD's finalize (springs: nothing). The end guess and the start of the substep are in the
 * buffers wfc_contact_buffers gives (x1: XPBD's step; vel: springs' end velocities, else NULL). */
wf_status wfc_enqueue_substep_pre(wfc_part *c, const char *fn, int in);
wf_status wfc_enqueue_substep_post(wfc_part *c, const char *fn);
void wfc_contact_buffers(const wfc_part *c, int in, wf_buffer **x0, wf_buffer **x1,
                         wf_buffer **vel);
/* The per-frame readback after a frame stepped by someone else (nothing without one). */
wf_status wfc_enqueue_readback(wfc_part *c, const char *fn);
const wfc_params *wfc_part_params(const wfc_part *c);
const wf_cloth_desc *wfc_part_desc(const wfc_part *c);
/* The group stepping the cloth (its own step calls are refused while set), or NULL. */
const void *wfc_part_group(const wfc_part *c);
void wfc_part_set_group(wfc_part *c, const void *group);
bool wfc_part_coupled(const wfc_part *c);
/* Changes whenever what a captured frame bakes in changes (the first collider, the per-frame
 * readback): a group's captured frame is captured again. */
uint32_t wfc_part_epoch(const wfc_part *c);

#endif
