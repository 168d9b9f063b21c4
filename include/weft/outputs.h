/* weft outputs: the files a run of a world writes, named and written as `weft run` writes them,
 * for any program that steps a world.
 *
 * Guide
 *
 *     wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(scene);  // dir, formats, every, ...
 *     d.dir = "out/flag";                                              // or the defaults
 *     wf_run_outputs *o;
 *     if (wf_run_outputs_create(world, &d, &o) != WF_OK) puts(wf_last_error());
 *     if (wf_world_frame(world) == 0) wf_run_outputs_write_frame(o, 0, 0.0); // the initial state
 *     for (int64_t f = wf_world_frame(world) + 1; f <= wf_world_frames(world); f++) {
 *       wf_world_step(world, 1);
 *       unsigned due = wf_run_outputs_due(o, f);
 *       if (due & WF_RUN_OUTPUTS_FRAME) wf_run_outputs_write_frame(o, f, ms_per_frame);
 *       if (due & WF_RUN_OUTPUTS_CHECKPOINT) wf_run_outputs_write_checkpoint(o, f);
 *     }
 *     wf_run_outputs_close(o);                                         // flushes stats.csv
 *
 * Frames written: 0 (the initial state, when the caller writes it as above: `weft run` does), every
 * `every`-th frame and the last one. The files, in the output directory (created with its parents,
 * wf_dir_create), frame numbers zero-padded to 6 digits (wf_run_outputs_path gives every name):
 *  - <object>_<frame>.ply   WF_SCENE_OUT_PLY: binary little-endian PLY. Particles: points with
 *                           the float properties x y z radius vx vy vz wx wy wz (angular velocity,
 *                           rad/s) and uint id (global id). Cloths: triangle meshes (element face,
 *                           list uchar int vertex_indices) whose vertices carry x y z, nx ny nz
 *                           (unit normals, area-weighted over the vertex's triangles) and vx vy vz.
 *  - <object>_<frame>.vtp   WF_SCENE_OUT_VTK: VTK XML PolyData (binary). Particles: vertex cells
 *                           with point data velocity, radius, id, angular_velocity; cloths:
 *                           triangles with velocity and normal.
 *    <object>.pvd           a ParaView collection per object listing its frames at their
 *                           simulated time (frame / fps, s),
 *    scene.pvd              and one for the scene: at each time every object's .vtp, part i and
 *                           name="<object>" for object i, which ParaView opens as one multiblock
 *                           data set per time step (so the name "scene" is reserved for objects).
 * A cloth's vertices are in the scene's vertex order (docs/scenes.md: a grid's vertex (column c,
 * row r) is r * nx + c, row 0 the top edge; a mesh's, the OBJ file's), the order its pin indices
 * use; an emitter's particles in global-id order. Vectors are in the axes up_axis asks for
 * (WF_SCENE_UP_Z: (x, y, z) written as (x, -z, y)); stats.csv and checkpoints stay as simulated.
 *  - stats.csv              WF_SCENE_OUT_CSV: one row per written frame: frame, time,
 *                           kinetic_energy, potential_energy, momentum x y z, max speed, particle
 *                           and vertex counts, ms per frame (the caller's measure; 0 for frame 0),
 *                           elastic_energy, total_energy, rotational_energy, then for each
 *                           object in object order <name>.kinetic, <name>.potential,
 *                           <name>.elastic, <name>.rotational (J; wf_world_energy_get: the
 *                           totals are the objects' sums; docs/cli.md lists the columns).
 *  - checkpoint_<frame>.wfck every checkpoint_every frames and after the last frame, whatever the
 *                           formats (so a run can always be resumed); never at frame 0.
 *  - checkpoint_last_good_<frame>.wfck  the name for wf_world_save_last_good's state.
 *  - run.json               always, at wf_run_outputs_close: the run summary: the frames it ran
 *                           (first_frame, last_frame, frames asked for, time), "stopped_by" (the
 *                           stop rule that ended it, weft/world.h wf_world_stop_reason: rule key
 *                           path, kind, threshold, frames, frame, time, measured value, text; null
 *                           when none) and "resume" (null for a fresh run; else the checkpoint,
 *                           its frame, whether its scene was checked and the accepted
 *                           "scene_changes": path, checkpoint, scene).
 *  - stats.csv's last line  when a stop rule ended the run, one comment line after the rows:
 *                           "# stopped: <wf_world_stop.text>" (CSV readers skip it with their
 *                           comment option, e.g. pandas comment='#'; a resume drops it).
 *  - resume_log.txt         appended at create when the world was restored from a checkpoint whose
 *                           scene differed (wf_world_load_checkpoint_with_changes) or could not be
 *                           checked: the checkpoint, its frame and each accepted change.
 *  - scene.usda             WF_SCENE_OUT_USD: an ASCII USD stage over the whole run (Houdini,
 *    usd/static.usda        Omniverse, usdview, Blender): /World/objects/<name> a Points prim per
 *    usd/manifest.usda      emitter (points, widths = 2 radius, velocities) and a Mesh per cloth
 *    usd/frame_<frame>.usda (points, normals, velocities, topology, primvars:st for a grid),
 *                           /World/colliders/<name> an Xform per collider (translate, orient
 *                           and visibility over time; its shape as the child "shape": Sphere,
 *                           Cube, Capsule, a quad for a plane, the triangles of a mesh). Time
 *                           code = frame number, timeCodesPerSecond = fps, upAxis "Y" (or "Z":
 *                           /World turned a quarter about +x), metersPerUnit 1. Each written
 *                           frame is a layer of its own under usd/, which scene.usda lists as
 *                           value clips; scene.usda is replaced after each frame, so it always
 *                           opens and lists the frames written (a resume keeps the earlier ones).
 *                           Needs desc.scene for colliders and texture coordinates.
 * WF_SCENE_OUT_PNG is not written here: pictures need the viewer's renderer, which the library does
 * not link. `weft run` draws them (render/frame_<n>.png, n = 0, 1, 2, ... in order).
 *
 * Resuming: with resume_frame > 0 (the frame of the checkpoint loaded into the world), the rows of
 * an earlier stats.csv for frames <= resume_frame are kept and each collection lists the earlier
 * frames' .vtp files that are there (frame 0 and every `every`-th); rows and files of later frames
 * are replaced as they are written again. Every file but stats.csv is written whole through
 * weft/io.h (temporary file and rename), so a failure never leaves a half-written file under a
 * final name.
 *
 * Errors: every call returns a wf_status, and wf_last_error() names the path that failed and the
 * OS error. Nothing is printed.
 */
#ifndef WEFT_OUTPUTS_H
#define WEFT_OUTPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/export.h"
#include "weft/gpu.h"
#include "weft/scene.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The outputs of one run of a world, open for writing (wf_run_outputs_create). */
typedef struct wf_run_outputs wf_run_outputs;

/** What a run writes. Start from wf_run_outputs_desc_default() or _from_scene(). */
typedef struct wf_run_outputs_desc {
  const char *dir;          /* output directory, created with its parents; NULL or "": "out" */
  unsigned formats;         /* WF_SCENE_OUT_* bits (weft/scene.h); default VTK | CSV */
  int every;                /* frames between written frames (and after the last); 0: 1 */
  int checkpoint_every;     /* frames between checkpoints; 0: after the last frame only */
  int64_t resume_frame;     /* > 0: the run continues from this frame; earlier rows and collection
                               entries are kept (see the guide). 0: a fresh run */
  wf_scene_up_axis up_axis; /* axes of the PLY and VTK files (weft/scene.h); default
                               WF_SCENE_UP_Y: as simulated */
  const wf_scene *scene;    /* USD: the colliders and grid sizes (NULL: none); read at create
                               only. wf_run_outputs_desc_from_scene sets it */
  /* Pieces (a world over MPI ranks, weft run under mpirun): with pieces > 1, every VTK frame of an
   * object also goes out as `pieces` files, this run writing piece `piece` as
   * <object>_<frame>_p<piece>.vtp into piece_dir (NULL: dir). Over MPI ranks piece is the rank
   * and pieces the rank count, and a piece holds what the rank's partitions own
   * (wf_world_object_owned): of a particle object those particles, in id order; of a cloth the
   * triangles whose lowest-index vertex the rank owns (so the pieces' triangles are disjoint and
   * cover the mesh) over the points of the vertices it owns and of any other vertex those
   * triangles use, in vertex order, with the point array "vertex" (the cloth's vertex index) to
   * merge the pieces by; a piece without triangles has no points. Piece 0 also writes
   * <object>_<frame>.pvtp there, naming every piece (ParaView and VTK's XMLPPolyDataReader open
   * it as one data set), and the collection <object>_pieces.pvd of those (a resumed run lists
   * the frames it wrote). 0 or 1: no pieces. */
  int piece, pieces;
  const char *piece_dir;
  /* true: make every call the run's outputs make on the world (over MPI ranks they are
   * collectives, so every rank must make them) but write no file but the pieces; a checkpoint
   * over MPI ranks is this rank's piece beside rank 0's (wf_world_save), in one process a
   * temporary file that is removed. The directory is still created (the run guard writes a
   * last-good checkpoint there). weft run sets it on MPI ranks > 0. */
  bool discard;
} wf_run_outputs_desc;

/** Bits of wf_run_outputs_due. */
enum { WF_RUN_OUTPUTS_FRAME = 1u << 0, WF_RUN_OUTPUTS_CHECKPOINT = 1u << 1 };

/** Files of a run, for wf_run_outputs_path. */
typedef enum wf_run_file {
  WF_RUN_FILE_PLY = 0,        /* <object>_<frame>.ply */
  WF_RUN_FILE_VTP = 1,        /* <object>_<frame>.vtp */
  WF_RUN_FILE_PVD = 2,        /* <object>.pvd (frame unused) */
  WF_RUN_FILE_CSV = 3,        /* stats.csv (object and frame unused) */
  WF_RUN_FILE_CHECKPOINT = 4, /* checkpoint_<frame>.wfck (object unused) */
  WF_RUN_FILE_LAST_GOOD = 5,  /* checkpoint_last_good_<frame>.wfck (object unused) */
  WF_RUN_FILE_SCENE_PVD = 6,  /* scene.pvd: every object's .vtp (object and frame unused) */
  WF_RUN_FILE_SUMMARY = 7,    /* run.json (object and frame unused) */
  WF_RUN_FILE_RESUME_LOG = 8, /* resume_log.txt (object and frame unused) */
  WF_RUN_FILE_USD = 9,        /* scene.usda (object and frame unused) */
  WF_RUN_FILE_USD_FRAME = 10  /* usd/frame_<frame>.usda (object unused) */
} wf_run_file;

/** Default: dir "out", VTK and CSV every frame, a checkpoint after the last frame, fresh run. */
WF_API wf_run_outputs_desc wf_run_outputs_desc_default(void);
/** The scene's `outputs` block (dir, formats, every, checkpoint_every); a fresh run. The dir
 *  points into the scene, which must outlive the desc's use. */
WF_API wf_run_outputs_desc wf_run_outputs_desc_from_scene(const wf_scene *scene);

/** Creates the output directory (and its parents), checks that it is writable, and opens the
 *  outputs of w: the .pvd collections (scene.pvd too) and stats.csv (keeping earlier rows and
 *  entries when resuming). WF_ERR_IO naming the directory, the component that could not be made
 *  and the OS error; then nothing has been written. w must outlive the outputs. desc may be
 *  NULL. */
WF_API wf_status wf_run_outputs_create(wf_world *w, const wf_run_outputs_desc *desc,
                                       wf_run_outputs **out);
/** Closes the collections and stats.csv (flushed and synced) and frees o; reports a failure of
 *  any of these. NULL is ignored. */
WF_API wf_status wf_run_outputs_close(wf_run_outputs *o);
/** The output directory as used in paths (the desc's, without trailing slashes). */
WF_API const char *wf_run_outputs_dir(const wf_run_outputs *o);
/** What is due after frame `frame` of the run: WF_RUN_OUTPUTS_FRAME at frame 0 (the initial
 *  state), every `every` frames and at the world's last frame (wf_world_frames),
 *  WF_RUN_OUTPUTS_CHECKPOINT every checkpoint_every frames and at the last frame (not at 0). 0 for
 *  a NULL o. */
WF_API unsigned wf_run_outputs_due(const wf_run_outputs *o, int64_t frame);
/** Waits for the frame's health check (wf_world_check: an unhealthy frame is never written), then
 *  writes the frame's files in the formats asked for and appends its stats.csv row, with
 *  ms_per_frame in the last column. Stops at the first failure, naming its path. */
WF_API wf_status wf_run_outputs_write_frame(wf_run_outputs *o, int64_t frame, double ms_per_frame);
/** Checks the frame's health, then writes the world's state as checkpoint_<frame>.wfck. */
WF_API wf_status wf_run_outputs_write_checkpoint(wf_run_outputs *o, int64_t frame);

/** Writes into buf (n bytes) the path of a run's file in dir (see wf_run_file; object names an
 *  object of the world, frame a frame). Returns the length of the path, as snprintf: >= n when
 *  it did not fit (then WF_ERR_INVALID is set). */
WF_API size_t wf_run_outputs_path(char *buf, size_t n, const char *dir, wf_run_file file,
                                  const char *object, int64_t frame);

/** Creates the directory `dir` and its missing parents (mkdir -p) and checks that it is a
 *  writable directory. WF_ERR_IO naming dir, the component that could not be made or is not a
 *  directory, and the OS error ("Not a directory", "Permission denied"); WF_ERR_INVALID for an
 *  empty or too long path. */
WF_API wf_status wf_dir_create(const char *dir);

#ifdef __cplusplus
}
#endif
#endif
