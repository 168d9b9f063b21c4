/* Colliders and poses from dicts: the keys are wf_collider_desc's and wf_collider_pose's field
 * names (weft/particles.h, weft/collider.h), "type" one of plane, sphere, box, capsule. Meshes
 * and keyframes are not taken from Python yet. */
#include "fields.h"

static const char *const collider_types[] = {"plane", "sphere", "box", "capsule", NULL};

#define C(k, t, n) WFPY_F(wf_collider_desc, k, t, n)
static const wfpy_field collider_fields[] = {C(name, 's', 1),
                                             WFPY_E(wf_collider_desc, type, collider_types),
                                             C(normal, 'f', 3),
                                             C(offset, 'f', 1),
                                             C(center, 'f', 3),
                                             C(radius, 'f', 1),
                                             C(half_extents, 'f', 3),
                                             C(p0, 'f', 3),
                                             C(p1, 'f', 3),
                                             C(velocity, 'f', 3),
                                             C(friction, 'f', 1),
                                             C(restitution, 'f', 1),
                                             C(stiffness, 'f', 1),
                                             C(static_friction, 'f', 1),
                                             C(thickness, 'f', 1),
                                             C(pivot, 'f', 3),
                                             C(angular_velocity, 'f', 3),
                                             C(active_from, 'f', 1),
                                             C(active_until, 'f', 1),
                                             {NULL, 0, 0, 0, NULL}};
#undef C

#define P(k, n) WFPY_F(wf_collider_pose, k, 'f', n)
static const wfpy_field pose_fields[] = {
    P(time, 1),     P(position, 3),         P(rotation, 4),
    P(velocity, 3), P(angular_velocity, 3), {NULL, 0, 0, 0, NULL}};
#undef P

int wfpy_collider_desc(PyObject *dict, wf_collider_desc *out) {
  *out = wf_collider_desc_default();
  return wfpy_fields_set(out, collider_fields, dict, "collider");
}

int wfpy_collider_pose(PyObject *dict, wf_collider_pose *out) {
  memset(out, 0, sizeof *out);
  return wfpy_fields_set(out, pose_fields, dict, "collider pose");
}
