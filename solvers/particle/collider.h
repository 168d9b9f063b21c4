/* Converting a public wf_collider_desc into the device-side wfp_collider, with the validation both
 * solvers that collide with colliders (particles, cloth) need. Internal to libweft. */
#ifndef WEFT_PARTICLE_COLLIDER_H
#define WEFT_PARTICLE_COLLIDER_H

#include "solvers/particle/particle_math.h"
#include "weft/particles.h"

/* Validates d and fills *out. On failure sets the error text "<func: ><owner>: collider '<name>':
 * <field> ..." (func may be NULL; owner names the solver object, e.g. "cloth 'flag'"). */
wf_status wfp_collider_from_desc(const char *func, const char *owner, const wf_collider_desc *d,
                                 wfp_collider *out);

/* Moves collider c (converted by wfp_collider_from_desc, in the world) into the frame of an object
 * whose positions are relative to `origin` (a cloth's origin, docs/precision.md): its centre or
 * first end relative to the origin, a plane's offset less normal . origin, each computed in double
 * from the stored floats and rounded once. Directions, sizes and velocities do not change. An
 * origin of 0 leaves c as it is. */
static inline void wfp_collider_to_frame(wfp_collider *c, const double origin[3]) {
  if (origin[0] == 0.0 && origin[1] == 0.0 && origin[2] == 0.0) return;
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

#endif
