/* Internals of the world (engine/world.c), shared with the engine's other world files, the
 * energies (world_energy.c) and the readback ring (world_readback.c). The health check does not
 * see them: it gets a narrow description (health.h). Not a public header: nothing outside
 * engine/ includes it.
 */
#ifndef WEFT_ENGINE_WORLD_INTERNAL_H
#define WEFT_ENGINE_WORLD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "health.h"
#include "weft/cloth.h"
#include "weft/io.h"
#include "weft/particles.h"
#include "weft/world.h"

#define WFW_PI           3.14159265358979323846
#define WFW_CKPT_VERSION 3u
#define WFW_MAX_DEVICES  WF_MAX_DEVICES /* devices a world's solvers can be split over */

typedef struct wfw_object {
  char name[WF_SCENE_NAME_MAX];
  wf_world_object_kind kind;
  uint32_t first, count; /* particles: range of the solver's global ids; cloth: 0, vertices */
  int cloth;             /* index into w->cloths, or -1 */
  double pour_start, pour_rate; /* a disc emitter's pour (rate 0: none): particle k is born at
                                   start + k / rate (engine/emit.c) */
} wfw_object;

struct wf_world {
  wf_device *dev; /* the first of devices[]: the verdict of the health check, readback */
  int n_devices;
  wf_device *devices[WFW_MAX_DEVICES];
  double fps;
  int substeps, frames;
  double gravity[3];
  double wind[3], gust_amplitude, gust_frequency;
  double max_speed;
  int64_t frame;
  wf_particles *ps;     /* the particles over devices[0..n_devices) (a partition each), or NULL */
  const void *mpi_comm; /* wf_world_desc.mpi_comm: over MPI ranks, or NULL */
  int mpi_halo;         /* wf_world_desc.mpi_halo */
  wf_stream *stream;    /* shared by the particles and the cloths coupled to them, or NULL */
  uint32_t n_particles;
  int n_cloths;
  wf_cloth **cloths; /* per cloth: its solver, over one device or several */
  /* simulation.cloth_collision: the cloths with `contact` in one contact group, stepped by it
   * (in_group[i]), or NULL */
  wf_cloth_group *cgroup;
  bool *in_group;
  int n_objects;
  wfw_object *objects;
  char *scene_json;
  /* host copies of the state */
  int64_t cache_frame;
  float (*ppos)[4], (*pvel)[4];
  float (**cpos)[4], (**cvel)[4];
  wfw_health *health; /* engine/health.c: per-frame device checks, last-good snapshot */
  /* stop rules (world_stop.c): the scene's, the consecutive frames each has held, the verdict */
  int n_stop;
  wf_scene_stop_rule stop_rules[WF_SCENE_MAX_STOP_RULES];
  int64_t stop_run[WF_SCENE_MAX_STOP_RULES];
  wf_world_stop stop; /* stop.rule >= 0 once one fired */
  /* resume check (scene_physics.c): this scene's physics, what the last restore accepted */
  char *physics_json;
  wf_world_resume resume;
  wf_scene_change resume_changes[WF_WORLD_MAX_CHANGES];
  int n_colliders; /* the scene's, given to every solver in scene order (world_forces.c) */
  char (*collider_names)[WF_SCENE_NAME_MAX];
  /* the particle materials as the solver has them (scene order; material 0 the default when the
   * scene lists none), for wf_world_particle_material_get/_set */
  int n_pmats;
  wf_particle_material *pmats;
  char (*pmat_names)[WF_SCENE_NAME_MAX];
  /* an interactive drag (world_interact.c): applied before each frame while active */
  struct {
    bool active;
    int object;
    uint32_t point;
    double target[3], stiffness, damping;
    bool device;   /* in a solver's parameter block (wf_cloth_drag_set, wf_particles_drag_set)
                      for object, point */
    bool im_known; /* inv_mass is that of (im_object, im_point) */
    int im_object;
    uint32_t im_point;
    float inv_mass;
  } drag;
};

/* world_interact.c: the host path's impulse on the dragged particle (XPBD contacts), before the
 * frame w->frame + 1 is enqueued (waits for the solver; a no-op when no such drag is active). */
wf_status wfw_drag_apply(wf_world *w);

/* scene_physics.c: the physics of a scene as compact canonical JSON (malloc'ed; NULL when out of
 * memory), and the differences between two of them (the first max into out; returns how many in
 * all, or -1 when either text is not JSON). */
char *wfw_scene_physics_json(const wf_scene *sc);
int wfw_scene_physics_diff(const char *old_json, const char *new_json, wf_scene_change *out,
                           int max);

/* world_stop.c: after frame w->frame was enqueued, evaluates the stop rules (waiting for the
 * state only when a "below" rule needs it) and records the first one met. */
wf_status wfw_stop_after_frame(wf_world *w);
/* The stop rules' counts for a checkpoint (section "stop": u64 rule count, then int64 per rule)
 * and their restore (a checkpoint with other rules, or none, starts the counts at 0). */
enum { WFW_STOP_SECTION_BYTES = 8 * (1 + WF_SCENE_MAX_STOP_RULES) };
void wfw_stop_save(const wf_world *w, uint64_t out[1 + WF_SCENE_MAX_STOP_RULES]);
void wfw_stop_restore(wf_world *w, const void *section, size_t bytes);

/* world_checkpoint_pieces.c: a checkpoint over MPI ranks as a piece a rank and a manifest (the
 * file's guide), written when the particles run over more than one rank. */
/* The path of piece r of the checkpoint whose manifest is `manifest`: "<stem>.p<r>.wfck". */
wf_status wfw_piece_path(char *buf, size_t n, const char *manifest, int r);
/* Rank 0's path into out (n bytes) on every rank: the manifest every rank's piece lies beside. */
wf_status wfw_ckpt_path_agree(wf_world *w, const char *path, char *out, size_t n);
/* Every rank: agrees on st (the reads before), writes its piece, agrees on the pieces; then
 * *table is the manifest's "pieces" section (malloc'ed, on every rank). On failure no piece of
 * this save is left and the message names the rank and the piece. */
wf_status wfw_pieces_write(wf_world *w, const char *path, int64_t frame, wf_status st, void **table,
                           size_t *table_bytes);
/* Over MPI ranks, after rank 0 wrote the checkpoint (the manifest, or the one file of a world
 * without particles; st: rank 0's result, the others' own): every rank returns rank 0's verdict,
 * and without a manifest removes its piece (wrote_piece: it wrote one). */
wf_status wfw_ckpt_finish(wf_world *w, const char *path, wf_status st, bool wrote_piece);
/* Reads every piece a manifest names into pos, vel (the particles' rows by id) and the rows of
 * the granular blob (gb bytes, its header already made: wf_particles_granular_state_init). */
wf_status wfw_pieces_read(wf_world *w, const wf_ckpt_reader *r, const char *path, uint64_t frame,
                          float (*pos)[4], float (*vel)[4], void *granular, size_t gb);
/* Over MPI ranks: the status of reading a checkpoint agreed before anything is restored. */
wf_status wfw_ckpt_agree_load(wf_world *w, wf_status st, const char *path);

#endif
