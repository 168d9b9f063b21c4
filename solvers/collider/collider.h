/* Colliders on the host side, for both solvers (particles, cloth): converting a public
 * wf_collider_desc into the device-side wfp_collider with its validation, copying a collider's
 * keyframes and mesh onto a partition's device, and applying a pose set between frames.
 * Internal to libweft. */
#ifndef WEFT_COLLIDER_COLLIDER_H
#define WEFT_COLLIDER_COLLIDER_H

#include "solvers/collider/collider_math.h"
#include "weft/collider.h"
#include "weft/particles.h"

/* Validates d and fills *out, without device data (keys and mesh pointers NULL, n_keys 0: see
 * wfx_dev_upload). On failure sets the error text "<func: ><owner>: collider '<name>': <field>
 * ..." (func may be NULL; owner names the solver object, e.g. "cloth 'flag'"). */
wf_status wfp_collider_from_desc(const char *func, const char *owner, const wf_collider_desc *d,
                                 wfp_collider *out);

/* One collider's device data in one partition. */
typedef struct wfx_dev {
  wf_buffer *keys, *nodes, *tris;
  wf_buffer *cache; /* a mesh's candidate lists (wfx_dev_cache), or NULL */
} wfx_dev;

/* Copies d's keyframes and mesh onto dev (on stream s) and points c (converted from d) at them.
 * reach: how far from the surface the solver needs distances (INFINITY: everywhere). */
wf_status wfx_dev_upload(const char *func, const char *owner, const wf_collider_desc *d,
                         wf_device *dev, wf_stream *s, wfp_collider *c, wfx_dev *out);
/* Gives mesh collider c (uploaded by wfx_dev_upload into x) a candidate cache of `points` empty
 * lists on dev (mesh_query.h, wfm_cache): the solver's point i queries it through
 * wfx_collider_sdf_at(..., i, ...). Other colliders: nothing. */
wf_status wfx_dev_cache(const char *func, const char *owner, wf_device *dev, wf_stream *s,
                        uint32_t points, wfp_collider *c, wfx_dev *x);
/* Frees what wfx_dev_upload made (stream-ordered on s). */
void wfx_dev_release(wfx_dev *x, wf_stream *s);

/* Sets the reach (how far from a mesh its distances are needed: the solver's contact range) and
 * the candidate caches' skin (mesh_query.h; used only by colliders with a cache) of the mesh
 * colliders among cols[0..n) and uploads those that changed into table (an array of wfp_collider
 * on the device) on stream s. Every partition of a solver must use the same reach (triangles at
 * its edge answer or not by it); the skin changes the cost only. */
wf_status wfx_sync_reach(wfp_collider *cols, uint32_t n, float reach, float skin, wf_buffer *table,
                         wf_stream *s);

/* Validates pose and makes c follow it (constant motion from pose->time; keyframes dropped). */
wf_status wfx_collider_set_pose(const char *func, const char *owner, const wf_collider_pose *pose,
                                wfp_collider *c);

#endif
