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
 * scene order, so attachment indices are scene collider indices). A cloth's vertices have one
 * order everywhere: the scene's pin indices, the solver's (weft/cloth.h), downloads and the output
 * files. A grid's vertex (column i, row j) is j * nx + i, row 0 its top edge, column 0 its left
 * edge; a mesh's vertices are in the OBJ file's order.
 *
 * Devices: "cpu" -> cpu:0, "cuda"/"cuda:N", "auto" (or the scene's default) -> cuda:0 when one is
 * usable, else cpu:0, "all" -> every CUDA device (with none, every CPU device wf_init made). A
 * world on several devices (a list in simulation.devices, "all" with several, or a comma list in
 * wf_world_desc.device) splits its particles over them (one wf_particles, weft/particles.h)
 * and every cloth over them too (one wf_cloth, weft/cloth.h), with contact too, except a cloth
 * with self_collision and the cloths of a contact group (simulation.cloth_collision), which
 * cannot be split and stay whole on the first device. The state
 * after N frames is bitwise that of one device of the same kind. The first device also holds the
 * health check, the readback ring and a copy of each split cloth's state (refreshed after every
 * frame); the particles are gathered there on the devices for the check and the readback. A split
 * frame waits for the frame before it (the split solver repartitions on the host between frames),
 * so wf_world_step returns when the last frame is enqueued, the others done. Cloths coupled to
 * particles (simulation.coupling) need one device: a coupled scene on several fails to create,
 * naming simulation.coupling and simulation.devices. wf_world_placement_get says which device runs
 * what.
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

#include "weft/cloth.h"
#include "weft/export.h"
#include "weft/gpu.h"
#include "weft/particles.h"
#include "weft/scene.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A scene's objects on the solvers of one device, stepped together (wf_world_create). */
typedef struct wf_world wf_world;

/** Overrides of the scene. Start from wf_world_desc_default(). */
typedef struct wf_world_desc {
  const char *device; /* NULL: the scene's simulation.devices; else a device name, "auto", "all"
                         or names separated by commas ("cpu:0,cpu:1": particles split over them) */
  int frames;         /* > 0: replaces simulation.frames (wf_world_frames); 0: the scene's */
  /* NULL: one process. Else a pointer to an MPI_Comm (after MPI_Init) whose ranks each create
   * this world from the same scene and devices: the particles' partitions (one a device) are
   * shared by the ranks in blocks (wf_particles_desc.mpi_comm), and so are those of every cloth
   * the devices split (wf_cloth_desc.mpi_comm; a cloth that is not split, or every cloth when the
   * ranks outnumber the devices, runs whole on each rank's first device), and every rank steps,
   * reads and checks the world at the same points
   * (each call is collective). A check that fails on one rank fails wf_world_step on every rank,
   * naming the rank. Bitwise the state of one process with the same devices. */
  const void *mpi_comm;
  int mpi_halo; /* with mpi_comm: wf_mpi_halo (wf_particles_desc.mpi_halo); 0: AUTO */
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
 *  (inverse mass > 0) of every object. The energies are wf_world_energy_get's totals. */
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
  double elastic_energy;    /* springs, XPBD constraints and contact springs, J */
  double total_energy;      /* kinetic + rotational + potential + elastic, J */
  double rotational_energy; /* particles: Σ ½ I ω² (I = 2/5 m r²), J */
} wf_world_stats;

/** The energies of one object or of the whole world, J (wf_world_energy_get). */
typedef struct wf_world_energy {
  double kinetic;   /* Σ ½ m v² over dynamic points (inverse mass > 0: pinned cloth vertices and
                       kinematic particles are left out) */
  double potential; /* Σ −m g·x over dynamic points: zero at the origin (m g y for gravity
                       (0, −g, 0)) */
  double elastic; /* cloth: springs ½ k (|d| − L)² or XPBD constraints C² / (2 α) (rigid ones,
                     α = 0, hold none); particles: the normal springs of their contacts, ½ k δ²
                     a contact (Hertz: 8/15 E* sqrt(R*) δ^(5/2)), the tangential and rolling
                     springs of the contact history (a contact between two emitters' particles
                     gives each half) and with colliders (wf_particles_energy). Projections
                     (cloth colliders, self-collision, coupling) store none. */
  double total;   /* kinetic + rotational + potential + elastic */
  double rotational; /* particles: Σ ½ I ω² over dynamic particles (I = 2/5 m r²); cloth: 0 */
} wf_world_energy;

/** Waits and computes the energies of every object (objects: wf_world_object_count entries, in
 *  object order; may be NULL) and their sums in that order (total; may be NULL). Each solver
 *  computes its terms on its devices and sums them in global-id order, so the results are bitwise
 *  the same for any number of devices. stats.csv writes them (weft/outputs.h). */
WF_API wf_status wf_world_energy_get(wf_world *w, wf_world_energy *objects, wf_world_energy *total);

/** Default overrides: none. */
WF_API wf_world_desc wf_world_desc_default(void);
/** The explicit step's stability of scene cloth i as the world would make it (weft/cloth.h:
 *  wf_cloth_stability; host only, no device): out->stable false for a mass-spring cloth past its
 *  limit, and then msg (size bytes, may be NULL) says so, naming the cloth and the substeps it
 *  needs; else msg is "". `weft validate` and `weft run` print it. */
WF_API wf_status wf_scene_cloth_stability(const wf_scene *sc, int i, wf_cloth_stability *out,
                                          char *msg, size_t size);
/** The contact step's stability of scene emitter i's particles (weft/particles.h:
 *  wf_particles_stability with the emitter's radius, mass and material and the scene's contact
 *  model and substeps; host only): out->ok false when a contact is resolved in fewer than 10
 *  substeps, and then msg (may be NULL) names the emitter, the material and the substeps needed;
 *  else msg is "". `weft validate` prints it; `weft run` logs the solver's own warning. */
WF_API wf_status wf_scene_particle_stability(const wf_scene *sc, int i,
                                             wf_particles_stability_result *out, char *msg,
                                             size_t size);
/** Creates the solvers for scene on one device and fills them. desc may be NULL (defaults). The
 *  scene is not kept: it may be destroyed afterwards. On failure *out is NULL. */
WF_API wf_status wf_world_create(const wf_scene *scene, const wf_world_desc *desc, wf_world **out);
/** Waits for the solvers and frees everything. NULL is ignored. */
WF_API void wf_world_destroy(wf_world *w);
/** Enqueues `frames` frames (every solver one frame at a time, wind gusts updated per frame);
 *  returns without waiting for them. Each frame's device-side health check is enqueued with it
 *  and the finished ones are read without waiting (see "health" below): once a frame is found
 *  unhealthy, WF_ERR_INVALID naming the object, point, frame and quantity. */
WF_API wf_status wf_world_step(wf_world *w, int frames);
/** Waits for the health checks of every frame enqueued so far and reports the first unhealthy
 *  one: a non-finite state, or the scene's max_speed / max_penetration watchdogs (WF_ERR_INVALID
 *  naming the object, the particle or vertex, the frame and the quantity). */
WF_API wf_status wf_world_check(wf_world *w);
/** Waits and computes the statistics of the current state. */
WF_API wf_status wf_world_stats_get(wf_world *w, wf_world_stats *out);

/* ---- stop rules (engine/world_stop.c): simulation.stop_when ------------------------------------
 *
 * After every frame wf_world_step evaluates the scene's stop rules in order: "time" (the frame's
 * time frame / fps >= the rule's time), "kinetic_energy_below" (wf_world_stats_get's
 * kinetic_energy < J) and "max_speed_below" (max_speed < m/s), the last two for `frames`
 * consecutive frames. The first rule met stops the world: that frame is its last, wf_world_step
 * steps no further frames (it returns WF_OK having stepped fewer, or none), and
 * wf_world_stop_reason says which rule, at which frame. The "below" rules download the state
 * after every frame (wf_world_stats_get waits for it); a world with only "time" rules, or none,
 * never waits. Their counts of consecutive frames are checkpointed, so a resumed run stops where
 * an uninterrupted one does. */

/** Why a world stopped before its last frame. */
typedef struct wf_world_stop {
  int rule;                /* index in simulation.stop_when; -1: no rule has fired */
  wf_scene_stop_kind kind; /* the rule's kind */
  double threshold;        /* the rule's value: s, J or m/s */
  int frames;              /* the rule's consecutive frames */
  int64_t frame;           /* the frame it fired after (the world's last) */
  double time;             /* that frame's simulated time, s */
  double value;            /* what was measured then: the time (s), the kinetic energy (J) or
                              the largest speed (m/s) */
  char text[192]; /* "simulation.stop_when[0] (kinetic_energy_below 0.001 J for 10 frames) met
                     at frame 57, t = 0.95 s: 0.00093 J"; "" when none fired */
} wf_world_stop;

/** True when a stop rule has fired (then *out, which may be NULL, says which); false, with
 *  out->rule = -1, when none has. */
WF_API bool wf_world_stop_reason(const wf_world *w, wf_world_stop *out);
/** The frame after which the run ends: the stop rule's frame once one fired, else
 *  wf_world_frames. */
WF_API int64_t wf_world_last_frame(const wf_world *w);

/** Frames stepped so far (restored by wf_world_load_checkpoint). */
WF_API int64_t wf_world_frame(const wf_world *w);
/** Frames of a run: wf_world_desc.frames when > 0, else the scene's simulation.frames. */
WF_API int wf_world_frames(const wf_world *w);
/** Simulated seconds per frame (1 / fps). */
WF_API double wf_world_frame_dt(const wf_world *w);
/** The device the world runs on: the first of its devices (the cloths, the health check and the
 *  readback ring are there). */
WF_API wf_device *wf_world_device(const wf_world *w);
/** Number of devices the world runs on: 1, or the devices its particles are split over. */
WF_API int wf_world_device_count(const wf_world *w);
/** Device i of the world, 0 <= i < wf_world_device_count (0: wf_world_device); else NULL. */
WF_API wf_device *wf_world_device_at(const wf_world *w, int i);

/** What one device of the world runs (wf_world_placement_get). */
typedef struct wf_world_placement {
  wf_device *device;
  bool split;            /* the world's particles are split over its devices */
  uint32_t particles;    /* split: particles this device owns, as of the last repartition (all on
                            device 0 before the first frame); else every particle on device 0 */
  uint32_t ghosts;       /* split: copies of neighbouring devices' particles it holds; else 0 */
  int cloths;            /* cloths with vertices on this device: split ones that own vertices
                            here, and on device 0 the cloths kept whole */
  uint64_t vertices;     /* cloth vertices this device owns (all of a whole cloth's) */
  size_t device_bytes;   /* device memory of the particle solver (or partition) on it, bytes */
  int whole_cloths;      /* of `cloths`, those kept whole here (device 0 only): on several devices,
                            a cloth with self_collision or in a contact group, which cannot be
                            split */
  uint64_t cloth_ghosts; /* split cloths: ghost vertices (copies of other devices') held here */
  size_t cloth_bytes;    /* device memory of the cloths (or cloth partitions) on it, bytes */
} wf_world_placement;

/** Fills *out with what device i of the world runs. WF_ERR_INVALID when i is out of range. */
WF_API wf_status wf_world_placement_get(const wf_world *w, int i, wf_world_placement *out);

/** Number of objects (emitters, then cloths). */
WF_API int wf_world_object_count(const wf_world *w);
/** Object `index`; WF_ERR_INVALID when out of range. */
WF_API wf_status wf_world_object_get(const wf_world *w, int index, wf_world_object *out);
/** Waits and copies object `index`'s state: pos[i] = xyz + radius (particles) or inverse mass
 *  (cloth), vel[i] = xyz + inverse mass (particles) or 0 (cloth); point_count entries each.
 *  Either pointer may be NULL. */
WF_API wf_status wf_world_object_download(wf_world *w, int index, float (*pos)[4], float (*vel)[4]);
/** Waits and copies the angular velocities of particle object `index` (xyz rad/s, w 0;
 *  point_count rows in the object's order, as wf_particles_download_omega gives them). All zero
 *  where the contact model does not turn the particles. WF_ERR_INVALID for a cloth. */
WF_API wf_status wf_world_object_download_omega(wf_world *w, int index, float (*omega)[4]);
/** The rows of object `index` (0 .. point_count - 1, ascending) whose points this process owns,
 *  into rows (room for point_count; NULL: only *n), *n of them: every row in one process; over
 *  MPI ranks a particle object's rows that the rank's partitions own (wf_particles_owned_ids: as
 *  of the last read of the state), and a cloth's vertices that the rank's partitions own
 *  (wf_cloth_owned_ids: fixed at creation; a cloth not split over the ranks, which every rank runs
 *  whole, is rank 0's). The ranks' rows of an object are disjoint and cover it. The reads
 *  (wf_world_object_download) still give every row on every rank. */
WF_API wf_status wf_world_object_owned(wf_world *w, int index, uint32_t *rows, uint32_t *n);

/** The parameters every solver of a world shares that can change between frames (no
 *  recapture): wf_world_params_get / _set. */
typedef struct wf_world_params {
  float gravity[3]; /* m/s² */
  float damping;    /* global velocity damping, 1/s (>= 0) */
} wf_world_params;

/** The parameters in effect (the scene's, or what wf_world_params_set last set). */
WF_API wf_status wf_world_params_get(const wf_world *w, wf_world_params *out);
/** Sets gravity and damping of the particles and of every cloth from the next frame enqueued on.
 *  WF_ERR_INVALID naming the field for a non-finite value or a negative damping. */
WF_API wf_status wf_world_params_set(wf_world *w, const wf_world_params *p);

/** The particle materials (the scene's `materials`, in order; one, "default", when it lists none;
 *  0 without particles), their names, and their values as the solver has them. Set replaces
 *  material i from the next frame enqueued on (wf_particles_set_material: stiffness, friction,
 *  restitution, ... ; no recapture); WF_ERR_INVALID naming materials[i] for an index out of range
 *  or a value the solver refuses. Not saved in checkpoints (the scene's values are). */
WF_API int wf_world_particle_material_count(const wf_world *w);
WF_API const char *wf_world_particle_material_name(const wf_world *w, int i);
WF_API wf_status wf_world_particle_material_get(const wf_world *w, int i,
                                                wf_particle_material *out);
WF_API wf_status wf_world_particle_material_set(wf_world *w, int i, const wf_particle_material *m);

/** A drag: a spring-damper pulling one point (a particle of an emitter, a vertex of a cloth)
 *  towards a target, as a mouse does in an interactive viewer (wf_world_drag_set). */
typedef struct wf_world_drag {
  int object;       /* wf_world_object_get index */
  uint32_t point;   /* particle / vertex within the object */
  double target[3]; /* m, world coordinates */
  double stiffness; /* N/m; 0: m ω² with ω = 2π × 2 Hz on the point's mass m (then damping 0:
                       critical, 2 m ω), so one default suits a sand grain and a sheet alike */
  double damping;   /* N·s/m (>= 0) */
} wf_world_drag;

/** Starts (or moves) the drag, from the next frame enqueued on. A cloth vertex, or a particle
 *  (DEM or Hertz contacts): the spring and dashpot act in every substep inside the captured frame
 *  (wf_cloth_drag_set, wf_particles_drag_set: device memory the graph reads, so moving the target
 *  neither recaptures nor waits; bitwise the same on any number of devices and on both backends);
 *  the first call for a point waits to read its mass. A particle under XPBD: before every frame
 *  the point's velocity gets the backward-Euler step of the spring-damper over the frame time
 *  (stable for any stiffness), the rest of the state left bitwise as it was; each such frame
 *  waits for the solver and round-trips the particles' state through the host
 *  (engine/world_interact.c). Pinned vertices and kinematic particles do not move. An
 *  interactive tool, not part of the scene's physics: not saved in checkpoints. WF_ERR_INVALID
 *  naming the object for an index out of range, a negative stiffness or damping, or a
 *  non-finite target; WF_ERR_UNSUPPORTED over MPI ranks (wf_world_desc.mpi_comm). */
WF_API wf_status wf_world_drag_set(wf_world *w, const wf_world_drag *d);
/** Ends the drag (no-op when none is active). */
WF_API void wf_world_drag_clear(wf_world *w);

/** Number of colliders (the scene's, in scene order; every solver has them all). */
WF_API int wf_world_collider_count(const wf_world *w);
/** Collider k's scene name, or NULL when k is out of range. */
WF_API const char *wf_world_collider_name(const wf_world *w, int k);
/** The force (N) and torque (N·m) everything in the world exerted on collider k over the last
 *  frame, averaged over it: the particles' (wf_particles_collider_force) plus every cloth's
 *  (wf_cloth_collider_force). The torque is about the collider's pivot where its pose puts it
 *  (scene key pivot, default the origin). Waits for the frames enqueued; bitwise the same for any
 *  number of devices and on the CPU and CUDA backends. WF_ERR_INVALID when k is out of range.
 *  The solvers sum these forces only while measured (wf_world_measure_collider_forces; off when
 *  the world is created, on when its run outputs write stats.csv): the first call on a world that
 *  does not measure them reads zero and turns the measuring on from the next frame on. */
WF_API wf_status wf_world_collider_force(wf_world *w, int k, double force[3], double torque[3]);
/** Whether every solver of the world sums the forces on the colliders (wf_world_collider_force),
 *  from the next frame on: wf_particles_measure_collider_forces and
 *  wf_cloth_measure_collider_forces for each. The motion is bitwise the same either way. */
WF_API wf_status wf_world_measure_collider_forces(wf_world *w, bool on);
/** Sets collider k's pose from pose->time on (weft/collider.h) in every solver of the world (the
 *  particles' and every cloth's: wf_particles_set_collider_pose, wf_cloth_set_collider_pose),
 *  replacing its keyframes or constant motion; no recapture. Call between frames. A pose is not
 *  part of a checkpoint: set it again after wf_world_load_checkpoint. WF_ERR_UNSUPPORTED while
 *  the health check watches penetration (simulation.max_penetration > 0: its copies of the
 *  colliders follow the scene only); WF_ERR_INVALID when k is out of range. */
WF_API wf_status wf_world_set_collider_pose(wf_world *w, int k, const wf_collider_pose *pose);

/** Writes a checkpoint of the current state to path (atomically, weft/io.h). Format version 3:
 *  the particles' and each cloth's positions relative to their solver's origin
 *  ("particles/pos", "cloth/N/pos") and the origins ("particles/origin", "cloth/N/origin",
 *  3 doubles each), so that a scene far from the world's origin resumes bitwise
 *  (docs/precision.md).
 *
 *  Over MPI ranks (wf_world_desc.mpi_comm of more than one rank) it is a collective and rank 0's
 *  path names the checkpoint (the other ranks' is not used). With particles, rank r writes the
 *  particles its partitions own as a piece, "<path less .wfck>.p<r>.wfck" beside it, holding
 *  only its own rows (wf_particles_download_owned_local); the ranks agree; then rank 0 writes
 *  the manifest at path: the one-file checkpoint less the particles' rows ("particles/pos",
 *  "/vel", "/granular") plus a section "pieces" naming each piece with its rows and their
 *  checksum (layout: engine/world_checkpoint_pieces.c, docs/multi-device.md). A failure on any
 *  rank leaves no new manifest and no piece of this save, every rank failing with a message that
 *  names the rank and the file. Without particles rank 0 writes the one file. One process (no
 *  communicator, or one rank) always writes the one file. */
WF_API wf_status wf_world_save(wf_world *w, const char *path);
/** Restores a checkpoint written by wf_world_save from a world made from the same scene (same
 *  objects and counts, fps and substeps, origins; WF_ERR_INVALID naming the mismatch
 *  otherwise). Version 1 and 2 checkpoints (cloth, or particle, positions in the world) are
 *  refused (WF_ERR_PARSE, saying so).
 *
 *  A manifest (a checkpoint written over MPI ranks) is read with its pieces, on any number of
 *  ranks or in one process, and the state restored is the one-file checkpoint's, bit for bit.
 *  Every piece is checked (its container; that it is the manifest's: frame, index, count, rows
 *  and their CRC-32; ids in range and in no other piece): a missing or corrupt one is refused
 *  (WF_ERR_IO or WF_ERR_PARSE) naming its file, and nothing is restored. Every rank reads every
 *  piece: loading still needs the whole particle state on each rank's host. Over ranks, every
 *  rank restores or none (the ranks agree on the reading first).
 *
 *  The checkpoint also holds the physics of its scene (section "physics": the canonical scene
 *  less outputs, rendering, run length, devices, watchdogs and stop rules, with each mesh file's
 *  content hash instead of its path; docs/scenes.md "Resuming"). A checkpoint whose physics
 *  differs from this world's in anything (gravity, a material's friction, a collider's pose,
 *  keyframes or mesh file content, an emitter, the integrator, the contact model, substeps, ...)
 *  is refused with WF_ERR_INVALID naming each difference (key path, the checkpoint's value, this
 *  scene's), and so is one written before checkpoints held it (its scene cannot be checked).
 *  Nothing is restored then. wf_world_load_checkpoint_with_changes accepts both. */
WF_API wf_status wf_world_load_checkpoint(wf_world *w, const char *path);
/** wf_world_load_checkpoint that accepts a checkpoint whose physics differs from this world's
 *  (or cannot be checked); wf_world_resume_get then lists the differences. The counts, fps,
 *  substeps and origins must still match (the state must fit the world). */
WF_API wf_status wf_world_load_checkpoint_with_changes(wf_world *w, const char *path);

/** One difference between a checkpoint's physics and a world's (key path and both values as
 *  compact JSON, cut to fit with "..."; "absent" when one side lacks it). */
typedef struct wf_scene_change {
  char path[128];      /* "simulation.gravity[1]", "materials[0].friction", ... */
  char checkpoint[96]; /* the checkpoint's value */
  char scene[96];      /* this world's scene's value */
} wf_scene_change;

/** Compares the physics of the checkpoint at path with w's, without restoring anything: *count =
 *  the number of differences (the first `max` of them into changes, which may be NULL when max is
 *  0), *checked = false when the checkpoint predates the physics section (then *count is 0 and
 *  nothing could be compared). Errors reading the file as wf_world_load_checkpoint's. */
WF_API wf_status wf_world_checkpoint_changes(wf_world *w, const char *path,
                                             wf_scene_change *changes, int max, int *count,
                                             bool *checked);

/** What the last successful checkpoint restore accepted (wf_world_resume_get). */
typedef struct wf_world_resume {
  bool resumed;       /* a checkpoint was restored into this world */
  int64_t frame;      /* the frame it held */
  char path[256];     /* the checkpoint, as given (cut to fit) */
  bool scene_checked; /* false: it predates the physics section, its scene was not compared */
  int change_count;   /* differences accepted (wf_world_load_checkpoint_with_changes) */
  const wf_scene_change *changes; /* the first min(change_count, WF_WORLD_MAX_CHANGES) of them;
                                     valid until the next restore or wf_world_destroy */
} wf_world_resume;
enum { WF_WORLD_MAX_CHANGES = 64 };
/** Fills *out with the last restore's facts; out->resumed false when none happened. */
WF_API void wf_world_resume_get(const wf_world *w, wf_world_resume *out);

/* ---- readback ring: the newest frame on the host without waiting (engine/world_readback.c) ----
 *
 *     wf_world_readback *rb;
 *     wf_world_readback_create(w, NULL, &rb);            // 3 pinned slots
 *     // simulation thread, per frame:
 *     wf_world_readback_begin_frame(rb);                 // optional: timing events
 *     wf_world_step(w, 1);
 *     wf_world_readback_push(rb);                        // never blocks; WF_NOT_READY: skipped
 *     // consumer (another thread may do this):
 *     wf_world_frame_view v;
 *     if (wf_world_readback_latest(rb, &v) == WF_OK) {   // never blocks
 *       draw(v.pos[0], ...);
 *       wf_world_readback_release(rb, v.slot);
 *     }
 *
 * A push makes a copy stream of the readback wait on an event recorded at the end of the frame on
 * every solver stream, copy every object's positions (and, if asked, the particles' velocities)
 * into a free pinned slot and record the slot's event. With no free slot (the consumer holds or
 * has not yet taken them all) the frame is skipped and counted: the simulation never waits for
 * the consumer. The solvers' next frame waits for the copy of the previous one (it would
 * overwrite what is read), never for the consumer. push and begin_frame are called on the thread
 * that steps the world; latest, release and timing may be called from another thread. The world
 * must outlive the readback. On a world split over several devices the particles are copied from
 * the world's copy of their state on the first device (uploaded after each frame), so the
 * timings of the particles' stream cover that upload, not the partitions' work. */

typedef struct wf_world_readback wf_world_readback;

/** Readback options. Start from wf_world_readback_desc_default(). */
typedef struct wf_world_readback_desc {
  int slots;       /* pinned host slots, 3..64 (one filling, one finished, one held); 0: 3 */
  bool velocities; /* also copy the particles' velocities (colour by speed); default false */
} wf_world_readback_desc;

/** A finished frame handed out by wf_world_readback_latest. Pointers stay valid until the slot is
 *  released. */
typedef struct wf_world_frame_view {
  int slot;      /* give it back with wf_world_readback_release */
  int64_t frame; /* the world's frame number after the step that produced it */
  int object_count;
  /* pos[i]: object i's point_count rows as wf_world_object_download returns them (xyz + radius
   * for particles, xyz + inverse mass for cloth vertices). vel[i]: the particles' xyz + inverse
   * mass when desc.velocities, else NULL; NULL for cloths. */
  const float (*const *pos)[4];
  const float (*const *vel)[4];
} wf_world_frame_view;

/** Device-side timing of a held frame, from WF_EVENT_TIMING events (milliseconds). */
typedef struct wf_world_readback_timing {
  bool has_sim;        /* the frame was begun with wf_world_readback_begin_frame */
  bool has_idle;       /* ... and a frame was pushed or skipped before it */
  double sim_ms;       /* begin_frame to the frame's end, longest over the solver streams */
  double idle_ms;      /* previous frame's end to this frame's begin on the solver streams (their
                          wait for the previous frame's copy, and any time the host was late),
                          longest over the streams */
  double copy_wait_ms; /* the last solver stream's end of the frame to the start of the copy */
  double copy_ms;      /* the copy on the readback's copy stream */
} wf_world_readback_timing;

/** Counters: frames pushed, skipped (no free slot), delivered by latest, and stale (finished but
 *  older than a delivered frame, freed without being shown). */
typedef struct wf_world_readback_stats {
  uint64_t pushed, skipped, delivered, stale;
} wf_world_readback_stats;

/** Default options: 3 slots, positions only. */
WF_API wf_world_readback_desc wf_world_readback_desc_default(void);
/** Creates a readback ring on w (pinned slots sized for every object, a copy stream and events on
 *  the world's device). desc may be NULL (defaults). WF_ERR_INVALID for fewer than 3 slots. */
WF_API wf_status wf_world_readback_create(wf_world *w, const wf_world_readback_desc *desc,
                                          wf_world_readback **out);
/** Waits for the copies in flight and frees everything. Views still held become invalid. NULL is
 *  ignored. */
WF_API void wf_world_readback_destroy(wf_world_readback *rb);
/** Optional, for timing: records the start of the next frame on every solver stream. Call it just
 *  before wf_world_step(w, 1). */
WF_API wf_status wf_world_readback_begin_frame(wf_world_readback *rb);
/** After wf_world_step(w, 1): enqueues the copy of the frame into a free slot and returns without
 *  waiting. WF_NOT_READY when no slot was free: the frame is skipped (and counted). */
WF_API wf_status wf_world_readback_push(wf_world_readback *rb);
/** Blocks the calling (simulation) thread until at most max_running of the frames pushed so far
 *  are still running on the solver streams: keeps a producer from queueing frames far ahead of
 *  the device (0: wait for all). Waits for the simulation only, never for the consumer. */
WF_API wf_status wf_world_readback_wait_frames(wf_world_readback *rb, int max_running);
/** The newest finished frame not handed out before, without waiting; older finished ones are
 *  freed (they will never be shown). WF_NOT_READY when there is none. */
WF_API wf_status wf_world_readback_latest(wf_world_readback *rb, wf_world_frame_view *out);
/** Gives a slot from wf_world_readback_latest back. */
WF_API void wf_world_readback_release(wf_world_readback *rb, int slot);
/** The timing of a held slot (between latest and release). */
WF_API wf_status wf_world_readback_timing_get(wf_world_readback *rb, int slot,
                                              wf_world_readback_timing *out);
/** Fills *out with the readback's counters. */
WF_API void wf_world_readback_stats_get(wf_world_readback *rb, wf_world_readback_stats *out);

/* ---- health: per-frame checks on the device, last-good state (engine/health.c) ---------------
 *
 * After every frame, kernels on a health stream of the world check every point of every object:
 * a non-finite position or velocity, a speed above simulation.max_speed, a penetration deeper
 * than simulation.max_penetration into a collider (the particle's radius or the cloth's thickness
 * overlapping the collider; kinematic particles and pinned vertices are not checked for it);
 * limits of 0 are off. Each object's record names its first unhealthy point by global id (the
 * smallest one, whatever the thread order: an integer minimum, no floating-point atomics). The
 * records are copied into pinned memory with an event per frame, and the host reads them a frame
 * or more later without waiting (wf_world_step polls the events; it blocks only when
 * WF_WORLD_HEALTH_DEPTH frames are in flight, and wf_world_check waits for all).
 *
 * The last-good state: while every frame so far is healthy, the device copies the state it just
 * checked (positions, velocities and clocks of every solver) into a snapshot, deciding on the
 * device from the verdict, so the host never waits for it. The first unhealthy frame stops the
 * copies for good, so the snapshot holds the frame just before it: wf_world_save_last_good
 * writes it as an ordinary checkpoint that resumes bitwise identically from that frame. Costs
 * per frame: one read of the state, one copy of it (32 bytes per particle or vertex) and as much
 * device memory again for the snapshot.
 *
 * Once a frame is unhealthy, wf_world_step and wf_world_check return WF_ERR_INVALID with the
 * message ("particles 'column': particle 1234 (global id) has a non-finite velocity (nan) at
 * frame 57; ...") until a checkpoint is loaded.
 */

/** Frames whose health records may be in flight at once (pinned slots). */
#define WF_WORLD_HEALTH_DEPTH 4

/** What was wrong with the point a health record names. */
typedef enum wf_world_health_quantity {
  WF_HEALTH_OK = 0,
  WF_HEALTH_POSITION_NONFINITE = 1, /* NaN or infinite position */
  WF_HEALTH_VELOCITY_NONFINITE = 2, /* NaN or infinite velocity */
  WF_HEALTH_SPEED = 3,              /* faster than simulation.max_speed */
  WF_HEALTH_PENETRATION = 4         /* deeper than simulation.max_penetration into a collider */
} wf_world_health_quantity;

/** The world's health as far as the host has read it. Pointers stay valid until the next call
 *  on the world. */
typedef struct wf_world_health {
  wf_world_health_quantity quantity; /* WF_HEALTH_OK: every frame read so far was healthy */
  int64_t frame;                     /* the first unhealthy frame; -1 when healthy */
  int64_t checked_frame;             /* the latest frame whose record has been read */
  int64_t last_good_frame;   /* the latest frame known healthy, the one wf_world_save_last_good
                                writes once every check has been read */
  int object;                /* the unhealthy object (wf_world_object_get); -1 when healthy */
  const char *object_name;   /* "" when healthy */
  uint32_t index;            /* particles: global id; cloth: vertex index */
  double value;              /* m/s (speed), m (penetration depth) or the non-finite component */
  double limit;              /* the scene's limit (speed, penetration); 0 for non-finite values */
  int collider;              /* penetration: the collider's scene index; else -1 */
  const char *collider_name; /* "" unless a penetration */
  const char *message;       /* the error text wf_world_step returns; "" when healthy */
} wf_world_health;

/** The health of the frames read so far. wait: first wait for every enqueued frame's record
 *  (else only the records already there are read). Returns WF_OK whether or not a frame was
 *  unhealthy (see out->quantity); an error only when the call itself fails. */
WF_API wf_status wf_world_health_get(wf_world *w, bool wait, wf_world_health *out);
/** Waits for the health checks and writes the last-good state (the latest frame known healthy:
 *  the frame before the first unhealthy one, or the current frame when all are healthy) as a
 *  checkpoint to path. *frame (may be NULL) receives its frame number. The world's own state is
 *  left as it is (load the checkpoint to continue from the last-good frame). */
WF_API wf_status wf_world_save_last_good(wf_world *w, const char *path, int64_t *frame);

#ifdef __cplusplus
}
#endif
#endif
