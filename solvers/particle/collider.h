/* The particle solver's view of colliders: solvers/collider/collider.h (shared with the cloth). */
#ifndef WEFT_PARTICLE_COLLIDER_H
#define WEFT_PARTICLE_COLLIDER_H

#include "solvers/collider/collider.h"
#include "solvers/particle/particle_math.h"

/* Moves collider c (converted by wfp_collider_from_desc, in the world) into the frame of an object
 * whose positions are relative to `origin` (a cloth's origin, docs/precision.md): its centre or
 * first end relative to the origin, a plane's offset less normal . origin, each computed in double
 * from the stored floats and rounded once. Directions, sizes and velocities do not change. An
 * origin of 0 leaves c as it is. A mesh, turning or keyframed collider (wfp_collider_posed) keeps
 * its shape in its own frame: its pose moves instead (keyframes: shifted by the caller before
 * they are uploaded, wfp_keys_to_frame), so its queries keep world-sized coordinates. */
static inline int wfp_collider_posed(const wfp_collider *c) {
  return c->type == (uint32_t)WFP_MESH || (c->flags & WFX_TURNS) || c->n_keys > 0u;
}

static inline void wfp_collider_to_frame(wfp_collider *c, const double origin[3]) {
  if (origin[0] == 0.0 && origin[1] == 0.0 && origin[2] == 0.0) return;
  if (wfp_collider_posed(c)) { /* its shape lives in its own frame: move its pose instead */
    c->pos.x = (float)((double)c->pos.x - origin[0]);
    c->pos.y = (float)((double)c->pos.y - origin[1]);
    c->pos.z = (float)((double)c->pos.z - origin[2]);
    return;
  }
  /* the pose does not carry the shift: the force's reference point does (collider_force.h) */
  c->ref.x = (float)((double)c->ref.x - origin[0]);
  c->ref.y = (float)((double)c->ref.y - origin[1]);
  c->ref.z = (float)((double)c->ref.z - origin[2]);
  if (c->type == (uint32_t)WF_COLLIDER_PLANE) {
    double no =
        (double)c->a.x * origin[0] + (double)c->a.y * origin[1] + (double)c->a.z * origin[2];
    c->a.w = (float)((double)c->a.w - no);
    return;
  }
  c->a.x = (float)((double)c->a.x - origin[0]);
  c->a.y = (float)((double)c->a.y - origin[1]);
  c->a.z = (float)((double)c->a.z - origin[2]);
}

/* Keyframes of desc d moved into the frame of `origin`, in keys (d->key_count of them), and a copy
 * of d that points at them in *out. */
static inline void wfp_keys_to_frame(const wf_collider_desc *d, const double origin[3],
                                     wf_collider_key *keys, wf_collider_desc *out) {
  *out = *d;
  for (uint32_t i = 0; i < d->key_count; i++) {
    keys[i] = d->keys[i];
    for (int j = 0; j < 3; j++)
      keys[i].position[j] = (float)((double)d->keys[i].position[j] - origin[j]);
  }
  out->keys = keys;
}

#endif
