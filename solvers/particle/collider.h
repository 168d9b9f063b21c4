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

#endif
