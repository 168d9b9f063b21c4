/* weft colliders that are not simple shapes: triangle meshes, keyframed motion, poses set by the
 * host between frames. Both solvers (weft/particles.h, weft/cloth.h) take colliders as a
 * wf_collider_desc; this header holds what such a desc may point to.
 *
 * A mesh collider:
 *
 *     wf_collider_mesh *m;
 *     if (wf_collider_mesh_load("hopper.stl", 1.0f, &m) != WF_OK) puts(wf_last_error());
 *     wf_collider_desc d = wf_collider_desc_default();
 *     d.type = WF_COLLIDER_MESH, d.mesh = m;        // closed: a solid; open: give a thickness
 *     wf_particles_add_collider(ps, &d, NULL);      // each partition copies it to its device
 *     wf_collider_mesh_destroy(m);                  // the solvers keep their own copies
 *
 * OBJ, STL, PLY and glTF (.gltf, .glb) are read through assimp when weft was built with it
 * (wf_collider_mesh_can_load); wf_collider_mesh_create takes vertices and triangles from memory
 * and always works. A mesh is held as a bounding volume hierarchy (built on the host in
 * O(n log n), a Morton-ordered tree of 4-triangle leaves) that the kernels walk for the closest
 * triangle: 10^6 triangles build in about a second and take ~80 MB per device.
 *
 * Motion: the shape as given is at rest; its pose maps a point x to p + R (x - pivot), p being
 * where the pivot is and R how it has turned. A collider moves at a constant velocity and turns
 * at a constant angular velocity about its pivot (a drum), or follows keyframes (linear in
 * position, slerp in rotation, held before the first and after the last key), or is posed by
 * the host between frames (wf_particles_set_collider_pose, wf_cloth_set_collider_pose), which
 * writes the solver's device-side collider table: no recapture. It exists from active_from to
 * active_until (a gate removed at a time). Contacts take the surface's velocity v + w x r at the
 * contact point, so friction drags grains along a belt or round a drum.
 */
#ifndef WEFT_COLLIDER_H
#define WEFT_COLLIDER_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/export.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A triangle mesh prepared for collision queries (host memory; solvers copy it). */
typedef struct wf_collider_mesh wf_collider_mesh;

/** A keyframe: at `time` (s) the pivot is at `position` (m) and the collider is turned by the
 *  unit quaternion `rotation` (x, y, z, w; normalised on use). Keys are in increasing time. */
typedef struct wf_collider_key {
  float time;
  float position[3];
  float rotation[4];
} wf_collider_key;

/** A pose set by the host: from `time` (s) on, the pivot is at position + velocity (t - time) and
 *  the collider is turned by exp([angular_velocity] (t - time)) rotation. */
typedef struct wf_collider_pose {
  float time;
  float position[3];         /* m, where the pivot is at `time` */
  float rotation[4];         /* unit quaternion (x, y, z, w); all zero: no rotation */
  float velocity[3];         /* m/s */
  float angular_velocity[3]; /* rad/s, world frame, about the pivot */
} wf_collider_pose;

/** The pose and velocities of collider d at time t (s), as the solvers' kernels compute it (e.g.
 *  to draw a moving collider). Errors as wf_particles_add_collider's. */
struct wf_collider_desc;
WF_API wf_status wf_collider_pose_at(const struct wf_collider_desc *d, float t,
                                     wf_collider_pose *out);

/** Whether this build reads mesh files (assimp). */
WF_API bool wf_collider_mesh_can_load(void);
/** Reads every triangle of the file's meshes (OBJ, STL, PLY, glTF: by the extension and the
 *  content), scaled by `scale` (> 0; e.g. 0.001 for a file in millimetres). Degenerate triangles
 *  (zero area) are skipped and counted (wf_collider_mesh_info). Errors name the file. */
WF_API wf_status wf_collider_mesh_load(const char *path, float scale, wf_collider_mesh **out);
/** A mesh from memory: nv vertices, nt triangles of vertex indices (counter-clockwise seen from
 *  outside). `name` is used in messages (may be NULL). */
WF_API wf_status wf_collider_mesh_create(const char *name, const float (*vertices)[3], uint32_t nv,
                                         const uint32_t (*triangles)[3], uint32_t nt,
                                         wf_collider_mesh **out);
/** Frees the mesh; solvers that took it keep their copies. NULL is ignored. */
WF_API void wf_collider_mesh_destroy(wf_collider_mesh *m);

/** What a mesh holds. */
typedef struct wf_collider_mesh_info {
  uint32_t triangles;      /* kept */
  uint32_t degenerate;     /* skipped: zero area */
  uint32_t boundary_edges; /* edges with one triangle: 0 for a closed mesh */
  uint32_t nodes;          /* of the hierarchy */
  uint32_t depth;          /* of the hierarchy */
  float lo[3], hi[3];      /* bounds, m */
} wf_collider_mesh_info;
WF_API wf_collider_mesh_info wf_collider_mesh_info_get(const wf_collider_mesh *m);

/** Signed distance (m) from point x to the mesh at rest and the outward normal n (may be NULL),
 *  as the solvers compute it: thickness 0 treats the mesh as a closed solid, > 0 as a shell. */
WF_API float wf_collider_mesh_distance(const wf_collider_mesh *m, float thickness, const float x[3],
                                       float n[3]);

#ifdef __cplusplus
}
#endif
#endif
