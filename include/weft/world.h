/* weft world: a validated scene (weft/scene.h) mapped onto the solvers of one device.
 *
 * Guide
 *
 *     wf_scene *sc;
 *     wf_scene_load("scenes/flag.json", NULL, &sc);
 *     wf_world_desc d = wf_world_desc_default();     // d.device = "cpu" to override the scene
 *     wf_world *w;
 *     if (wf_world_create(sc, &d, &w) != WF_OK) puts(wf_last_error());
 *     wf_world_step(w, 10);                           // asynchronous: enqueues 10 frames
 *     wf_world_stats s;
 *     wf_world_stats_get(w, &s);                      // waits; energies, momentum, counts
 *     wf_world_save(w, "out/checkpoint_10.wfck");     // io.h checkpoint, written atomically
 *     wf_world_destroy(w);
 *
 * Objects: one per particle emitter (scene order; a range of the single particle solver), then
 * one per cloth (scene order; a cloth solver each). All share one fps and substep count, the
 * gravity, the damping and the collider list (given to the particle solver and to every cloth in
 * scene order, so attachment indices are scene collider indices). Grid cloths are built in the
 * cloth solver's vertex order (row 0 at the top edge), which differs from the scene's numbering
 * (row 0 at the bottom): vertex-index pins are converted; downloads are in the solver's order.
 *
 * Devices: "cpu" -> cpu:0, "cuda"/"cuda:N", "auto" (or the scene's default) -> cuda:0 when one is
 * usable, else cpu:0. A list of several devices (or "all" with several GPUs) uses the first and
 * logs a warning (WF_LOG_WARN through wf_init's callback): splitting a scene over devices is not
 * implemented yet.
 *
 * Checkpoints hold everything needed to continue bitwise identically: the frame number, the
 * particle state and clock, and each cloth's state and clock, plus the scene's canonical JSON for
 * reference. wf_world_load_checkpoint restores them into a world created from the same scene.
 *
 * Errors: functions return a wf_status; wf_last_error() names the object
 * ("cloths[1] 'flag': ...", "particles[0] 'column': ..."). Nothing is printed.
 */
#ifndef WEFT_WORLD_H
#define WEFT_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/export.h"
#include "weft/gpu.h"
#include "weft/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wf_world wf_world;

/** Overrides of the scene. Start from wf_world_desc_default(). */
typedef struct wf_world_desc {
  const char *device; /* NULL: the scene's simulation.devices; else a device name or "auto" */
  int frames;         /* > 0: replaces simulation.frames (wf_world_frames); 0: the scene's */
} wf_world_desc;

/** Kinds of objects. */
typedef enum wf_world_object_kind {
  WF_WORLD_PARTICLES = 0,
  WF_WORLD_CLOTH = 1
} wf_world_object_kind;

/** One object of the world. Pointers stay valid until wf_world_destroy. */
typedef struct wf_world_object {
  const char *name;
  wf_world_object_kind kind;
  uint32_t point_count;      /* particles of the emitter, or vertices of the cloth */
  uint32_t first;            /* particles: global id of the first particle; cloth: 0 */
  uint32_t triangle_count;   /* cloth: triangles; particles: 0 */
  const uint32_t *triangles; /* cloth: 3 vertex indices per triangle; particles: NULL */
} wf_world_object;

/** Statistics of the state after the frames stepped so far. Sums are over dynamic points
 *  (inverse mass > 0) of every object. */
typedef struct wf_world_stats {
  int64_t frame;           /* frames stepped */
  double time;             /* simulated seconds: frame / fps */
  double kinetic_energy;   /* Σ ½ m v², J */
  double potential_energy; /* Σ −m g·x (zero at the origin), J */
  double momentum[3];      /* Σ m v, kg·m/s */
  double max_speed;        /* m/s, over all points */
  uint64_t particle_count;
  uint64_t vertex_count;
  int object_count;
} wf_world_stats;

/** Default overrides: none. */
WF_API wf_world_desc wf_world_desc_default(void);
/** Creates the solvers for scene on one device and fills them. desc may be NULL (defaults). The
 *  scene is not kept: it may be destroyed afterwards. On failure *out is NULL. */
WF_API wf_status wf_world_create(const wf_scene *scene, const wf_world_desc *desc, wf_world **out);
/** Waits for the solvers and frees everything. NULL is ignored. */
WF_API void wf_world_destroy(wf_world *w);
/** Enqueues `frames` frames (every solver one frame at a time, wind gusts updated per frame);
 *  returns without waiting for them. */
WF_API wf_status wf_world_step(wf_world *w, int frames);
/** Waits for every solver and reports a solver's non-finite state or the scene's max_speed
 *  watchdog (WF_ERR_INVALID naming the object). */
WF_API wf_status wf_world_check(wf_world *w);
/** Waits and computes the statistics of the current state. */
WF_API wf_status wf_world_stats_get(wf_world *w, wf_world_stats *out);

/** Frames stepped so far (restored by wf_world_load_checkpoint). */
WF_API int64_t wf_world_frame(const wf_world *w);
/** Frames of a run: wf_world_desc.frames when > 0, else the scene's simulation.frames. */
WF_API int wf_world_frames(const wf_world *w);
/** Simulated seconds per frame (1 / fps). */
WF_API double wf_world_frame_dt(const wf_world *w);
/** The device the world runs on. */
WF_API wf_device *wf_world_device(const wf_world *w);

/** Number of objects (emitters, then cloths). */
WF_API int wf_world_object_count(const wf_world *w);
/** Object `index`; WF_ERR_INVALID when out of range. */
WF_API wf_status wf_world_object_get(const wf_world *w, int index, wf_world_object *out);
/** Waits and copies object `index`'s state: pos[i] = xyz + radius (particles) or inverse mass
 *  (cloth), vel[i] = xyz + inverse mass (particles) or 0 (cloth); point_count entries each.
 *  Either pointer may be NULL. */
WF_API wf_status wf_world_object_download(wf_world *w, int index, float (*pos)[4], float (*vel)[4]);

/** Writes a checkpoint of the current state to path (atomically, weft/io.h). */
WF_API wf_status wf_world_save(wf_world *w, const char *path);
/** Restores a checkpoint written by wf_world_save from a world made from the same scene (same
 *  objects and counts, fps and substeps; WF_ERR_INVALID naming the mismatch otherwise). */
WF_API wf_status wf_world_load_checkpoint(wf_world *w, const char *path);

#ifdef __cplusplus
}
#endif
#endif
