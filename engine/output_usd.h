/* The USD output of a run (weft/outputs.h, WF_SCENE_OUT_USD): scene.usda and its layers under
 * usd/. Engine-internal: wf_run_outputs drives it.
 *
 * Layout (ASCII USD, written by hand: no USD library is needed):
 *  - usd/static.usda    what does not change: the prims (/World/objects/<name>: Points for an
 *                       emitter, Mesh for a cloth with its topology and, for a grid, primvars:st;
 *                       /World/colliders/<name>: an Xform whose child "shape" is a Sphere, Cube,
 *                       Capsule or Mesh (a plane: a 2 x 2 km quad; a mesh collider: its triangles
 *                       at rest)), and /World's quarter turn about +x when up_axis is "z".
 *  - usd/manifest.usda  the attributes the frames animate (the value clips' manifest).
 *  - usd/frame_<n>.usda one written frame: time samples at time code n (frame number) of points,
 *                       widths (2 radius), velocities and extent of particles; points,
 *                       normals, velocities and extent of cloths; translate, orient and
 *                       visibility of colliders.
 *  - scene.usda         the stage: metadata (timeCodesPerSecond = fps, start and end time
 *                       codes, upAxis, metersPerUnit 1), static.usda as a sublayer, and value
 *                       clips on /World listing every frame layer written so far.
 * Each file is written whole through weft/io.h (temporary file and rename) and scene.usda is
 * rewritten after each frame's layer is in place, so an interrupted run leaves a stage that
 * opens and lists exactly the frames that were written; a resume lists the earlier frames'
 * layers that are there (frames 0, every, 2 every, ... up to the resume frame) and goes on.
 * Positions and vectors are as simulated (y up); up_axis "z" turns /World instead.
 */
#ifndef WEFT_ENGINE_OUTPUT_USD_H
#define WEFT_ENGINE_OUTPUT_USD_H

#include <stddef.h>
#include <stdint.h>

#include "weft/outputs.h"
#include "weft/scene.h"
#include "weft/world.h"

typedef struct wfo_usd wfo_usd;

/* Opens the USD output of world w in dir (which exists): writes usd/static.usda and
 * usd/manifest.usda and, after a resume (resume > 0), scene.usda listing the earlier frames'
 * layers. sc (may be NULL: no colliders, no texture coordinates) is read here only. */
wf_status wfo_usd_create(wf_world *w, const wf_scene *sc, const char *dir, int every,
                         wf_scene_up_axis up, int64_t resume, wfo_usd **out);
/* Writes usd/frame_<frame>.usda from the world's state, then scene.usda. */
wf_status wfo_usd_write_frame(wfo_usd *u, int64_t frame);
void wfo_usd_destroy(wfo_usd *u);

/* Area-weighted unit vertex normals of a triangle mesh (run_outputs.c). */
void wfo_vertex_normals(const float *xyz, size_t count, const uint32_t *tri, size_t tris, float *n);

#endif
