/* Colliders and poses from dicts: the keys are wf_collider_desc's and wf_collider_pose's field
 * names (weft/particles.h, weft/collider.h), "type" one of plane, sphere, box, capsule, mesh.
 * Besides them: "vertices" ((n, 3) float32) and "triangles" ((t, 3) uint32) give a mesh collider
 * (wf_collider_mesh_create; the solver copies it, so it is freed after the add), and "keys" a
 * list of keyframes {time, position, rotation} (copied by the solver too). */
#include "fields.h"

static const char *const collider_types[] = {"plane", "sphere", "box", "capsule", "mesh", NULL};

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

static int mesh_from(PyObject *vo, PyObject *to, const char *name, wf_collider_mesh **out) {
  Py_buffer vv, tv;
  Py_ssize_t nv;
  if (wfpy_float_rows(vo, 3, &vv, &nv) < 0) return -1;
  if (PyObject_GetBuffer(to, &tv, PyBUF_C_CONTIGUOUS) < 0) {
    PyBuffer_Release(&vv);
    return -1;
  }
  int ok = tv.itemsize == 4 && (tv.len / 4) % 3 == 0;
  wf_status st =
      ok ? wf_collider_mesh_create(name, vv.buf, (uint32_t)nv, tv.buf, (uint32_t)(tv.len / 12), out)
         : WF_OK;
  PyBuffer_Release(&vv);
  PyBuffer_Release(&tv);
  if (!ok) {
    PyErr_SetString(PyExc_TypeError, "collider: triangles must be C-contiguous (t, 3) uint32");
    return -1;
  }
  if (st < 0) {
    wfpy_raise(st);
    return -1;
  }
  return 0;
}

static int keys_from(PyObject *list, wfpy_collider_extra *x) {
  PyObject *fast = PySequence_Fast(list, "collider: keys must be a list of dicts");
  if (!fast) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  x->keys = PyMem_Calloc((size_t)n + 1, sizeof *x->keys);
  if (!x->keys) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  static const wfpy_field key_fields[] = {WFPY_F(wf_collider_key, time, 'f', 1),
                                          WFPY_F(wf_collider_key, position, 'f', 3),
                                          WFPY_F(wf_collider_key, rotation, 'f', 4),
                                          {NULL, 0, 0, 0, NULL}};
  for (Py_ssize_t i = 0; i < n; i++) {
    x->keys[i].rotation[3] = 1.0f; /* identity unless given */
    if (wfpy_fields_set(&x->keys[i], key_fields, PySequence_Fast_GET_ITEM(fast, i),
                        "collider key") < 0) {
      Py_DECREF(fast);
      return -1;
    }
  }
  Py_DECREF(fast);
  x->key_count = (uint32_t)n;
  return 0;
}

int wfpy_collider_desc(PyObject *dict, wf_collider_desc *out, wfpy_collider_extra *x) {
  memset(x, 0, sizeof *x);
  *out = wf_collider_desc_default();
  if (dict == Py_None) return 0;
  if (!PyDict_Check(dict)) {
    PyErr_Format(PyExc_TypeError, "collider: expected a dict, got %s", Py_TYPE(dict)->tp_name);
    return -1;
  }
  PyObject *rest = PyDict_Copy(dict);
  if (!rest) return -1;
  PyObject *vo = PyDict_GetItemString(dict, "vertices");
  PyObject *to = PyDict_GetItemString(dict, "triangles");
  PyObject *ko = PyDict_GetItemString(dict, "keys");
  if (vo) PyDict_DelItemString(rest, "vertices");
  if (to) PyDict_DelItemString(rest, "triangles");
  if (ko) PyDict_DelItemString(rest, "keys");
  int r = wfpy_fields_set(out, collider_fields, rest, "collider");
  Py_DECREF(rest);
  if (r == 0 && (vo || to)) {
    if (!vo || !to) {
      PyErr_SetString(PyExc_TypeError, "collider: a mesh needs both vertices and triangles");
      r = -1;
    } else {
      r = mesh_from(vo, to, out->name, &x->mesh);
      out->type = WF_COLLIDER_MESH;
      out->mesh = x->mesh;
    }
  }
  if (r == 0 && ko) {
    r = keys_from(ko, x);
    out->keys = x->keys;
    out->key_count = x->key_count;
  }
  if (r < 0) wfpy_collider_extra_free(x);
  return r;
}

void wfpy_collider_extra_free(wfpy_collider_extra *x) {
  wf_collider_mesh_destroy(x->mesh);
  PyMem_Free(x->keys);
  memset(x, 0, sizeof *x);
}

int wfpy_collider_pose(PyObject *dict, wf_collider_pose *out) {
  memset(out, 0, sizeof *out);
  return wfpy_fields_set(out, pose_fields, dict, "collider pose");
}
