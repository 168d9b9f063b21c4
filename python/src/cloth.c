/* weft.Cloth: the cloth solver built in code (weft/cloth.h): Cloth.grid(...) or Cloth.mesh(...)
 * with the settings of wf_cloth_desc as keywords (material: a dict of wf_cloth_material, or a
 * preset name such as "cotton"), pins, colliders and their poses between frames. */
#include "fields.h"

typedef struct {
  PyObject_HEAD wf_cloth *c;
  PyObject *stream;
} wfpy_Cloth;

#define CL(self) (((wfpy_Cloth *)(self))->c)

static const char *const integrators[] = {"springs", "xpbd", NULL};

#define D(k, t, n) WFPY_F(wf_cloth_desc, k, t, n)
static const wfpy_field desc_fields[] = {D(name, 's', 1),
                                         WFPY_E(wf_cloth_desc, integrator, integrators),
                                         D(substeps, 'i', 1),
                                         D(iterations, 'i', 1),
                                         D(frame_dt, 'f', 1),
                                         D(gravity, 'f', 3),
                                         D(wind, 'f', 3),
                                         D(air_density, 'f', 1),
                                         D(damping, 'f', 1),
                                         D(no_graph, 'b', 1),
                                         D(self_collision, 'b', 1),
                                         D(contact, 'b', 1),
                                         D(contact_static_friction, 'f', 1),
                                         D(contact_dynamic_friction, 'f', 1),
                                         D(seed, 'i', 1),
                                         D(imbalance, 'f', 1),
                                         D(origin_given, 'b', 1),
                                         D(origin, 'd', 3),
                                         {NULL, 0, 0, 0, NULL}};
#undef D

#define M(k, t) WFPY_F(wf_cloth_material, k, t, 1)
static const wfpy_field material_fields[] = {M(density, 'f'),
                                             M(particle_mass, 'f'),
                                             M(thickness, 'f'),
                                             M(stretch_modulus, 'f'),
                                             M(shear_modulus, 'f'),
                                             M(bend_rigidity, 'f'),
                                             M(damping_time, 'f'),
                                             M(drag, 'f'),
                                             M(lift, 'f'),
                                             M(friction, 'f'),
                                             M(coefficients, 'b'),
                                             M(stretch_stiffness, 'f'),
                                             M(shear_stiffness, 'f'),
                                             M(bend_stiffness, 'f'),
                                             M(stretch_compliance, 'f'),
                                             M(shear_compliance, 'f'),
                                             M(bend_compliance, 'f'),
                                             M(damping, 'f'),
                                             {NULL, 0, 0, 0, NULL}};
#undef M

#define G(k, t, n) WFPY_F(wf_cloth_grid, k, t, n)
static const wfpy_field grid_fields[] = {G(size, 'f', 2),   G(resolution, 'i', 2),
                                         G(center, 'f', 3), G(u_axis, 'f', 3),
                                         G(v_axis, 'f', 3), {NULL, 0, 0, 0, NULL}};
#undef G

/* Splits keywords into the desc's (incl. device, stream, material) and the rest (shape). */
static int desc_from_kw(PyObject *kw, const wfpy_field *shape_fields, void *shape, wf_cloth_desc *d,
                        PyObject **stream_obj) {
  *d = wf_cloth_desc_default();
  *stream_obj = NULL;
  PyObject *own = PyDict_New(), *rest = PyDict_New();
  int r = own && rest ? 0 : -1;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (r == 0 && kw && PyDict_Next(kw, &pos, &k, &v)) {
    const char *key = PyUnicode_AsUTF8(k);
    if (!key) {
      r = -1;
    } else if (!strcmp(key, "device")) {
      r = wfpy_devices_arg(v, d->devices, WF_MAX_DEVICES, &d->device_count);
    } else if (!strcmp(key, "stream")) {
      r = wfpy_stream_arg(v, &d->stream);
      if (r == 0 && d->stream) *stream_obj = v;
    } else if (!strcmp(key, "material")) {
      if (PyUnicode_Check(v)) {
        wf_status st = wf_cloth_material_preset(PyUnicode_AsUTF8(v), &d->material);
        if (st < 0) {
          wfpy_raise(st);
          r = -1;
        }
      } else {
        r = wfpy_fields_set(&d->material, material_fields, v, "cloth material");
      }
    } else {
      const wfpy_field *f = shape_fields;
      while (f->key && strcmp(f->key, key))
        f++;
      r = PyDict_SetItem(f->key ? rest : own, k, v);
    }
  }
  if (r == 0) r = wfpy_fields_set(d, desc_fields, own, "Cloth");
  if (r == 0) r = wfpy_fields_set(shape, shape_fields, rest, "Cloth shape");
  Py_XDECREF(own);
  Py_XDECREF(rest);
  return r;
}

static PyObject *cloth_wrap(PyTypeObject *t, wf_cloth *c, PyObject *stream) {
  wfpy_Cloth *o = (wfpy_Cloth *)t->tp_alloc(t, 0);
  if (!o) {
    wf_cloth_destroy(c);
    return NULL;
  }
  o->c = c;
  o->stream = stream ? Py_NewRef(stream) : NULL;
  return (PyObject *)o;
}

static PyObject *cloth_grid(PyObject *cls, PyObject *args, PyObject *kw) {
  if (PyTuple_GET_SIZE(args)) return PyErr_Format(PyExc_TypeError, "Cloth.grid: keywords only");
  wf_cloth_desc d;
  wf_cloth_grid g = wf_cloth_grid_default();
  PyObject *so;
  if (desc_from_kw(kw, grid_fields, &g, &d, &so) < 0) return NULL;
  wf_cloth *c = NULL;
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_cloth_create_grid(&d, &g, &c);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  return cloth_wrap((PyTypeObject *)cls, c, so);
}

static PyObject *cloth_mesh(PyObject *cls, PyObject *args, PyObject *kw) {
  PyObject *vo, *to;
  if (!PyArg_ParseTuple(args, "OO", &vo, &to))
    return NULL; /* Cloth.mesh(vertices (n,3) float32, triangles (t,3) uint32, **settings) */
  static const wfpy_field mesh_fields[] = {WFPY_F(wf_cloth_mesh_desc, scale, 'f', 1),
                                           WFPY_F(wf_cloth_mesh_desc, translate, 'f', 3),
                                           {NULL, 0, 0, 0, NULL}};
  wf_cloth_desc d;
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  PyObject *so;
  if (desc_from_kw(kw, mesh_fields, &m, &d, &so) < 0) return NULL;
  Py_buffer vv, tv;
  Py_ssize_t nv;
  if (wfpy_float_rows(vo, 3, &vv, &nv) < 0) return NULL;
  if (PyObject_GetBuffer(to, &tv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    PyBuffer_Release(&vv);
    return NULL;
  }
  if (tv.itemsize != 4 || (tv.len / 4) % 3 || !tv.format ||
      !strchr("IiLl", tv.format[strlen(tv.format) - 1])) {
    PyBuffer_Release(&vv);
    PyBuffer_Release(&tv);
    return PyErr_Format(PyExc_TypeError,
                        "Cloth.mesh: triangles must be C-contiguous (t, 3) uint32");
  }
  m.vertices = vv.buf;
  m.vertex_count = (uint32_t)nv;
  m.triangles = tv.buf;
  m.triangle_count = (uint32_t)(tv.len / 12);
  wf_cloth *c = NULL;
  wf_status st = wf_cloth_create_mesh(&d, &m, &c);
  PyBuffer_Release(&vv);
  PyBuffer_Release(&tv);
  if (st < 0) return wfpy_raise(st);
  return cloth_wrap((PyTypeObject *)cls, c, so);
}

static void cloth_dealloc(PyObject *self) {
  wf_cloth *c = CL(self);
  Py_BEGIN_ALLOW_THREADS wf_cloth_destroy(c);
  Py_END_ALLOW_THREADS Py_XDECREF(((wfpy_Cloth *)self)->stream);
  Py_TYPE(self)->tp_free(self);
}

static PyObject *cloth_pin(PyObject *self, PyObject *arg) {
  wf_status st;
  uint32_t count = 1;
  if (PyUnicode_Check(arg)) {
    st = wf_cloth_pin_named(CL(self), PyUnicode_AsUTF8(arg), &count);
  } else {
    unsigned long v = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    st = wf_cloth_pin(CL(self), (uint32_t)v);
  }
  if (st < 0) return wfpy_raise(st);
  return PyLong_FromUnsignedLong(count);
}

static PyObject *cloth_pin_region(PyObject *self, PyObject *args) {
  PyObject *lo_o, *hi_o;
  if (!PyArg_ParseTuple(args, "OO", &lo_o, &hi_o)) return NULL;
  float lo[3], hi[3];
  if (wfpy_floats(lo_o, lo, 3, "lo") < 0 || wfpy_floats(hi_o, hi, 3, "hi") < 0) return NULL;
  uint32_t count;
  wf_status st = wf_cloth_pin_region(CL(self), lo, hi, &count);
  if (st < 0) return wfpy_raise(st);
  return PyLong_FromUnsignedLong(count);
}

/* the solver's calls for the methods both solvers share (solver.c) */
static wf_status add_collider_(void *h, const wf_collider_desc *d, uint32_t *i) {
  return wf_cloth_add_collider(h, d, i);
}
static wf_status set_collider_pose_(void *h, uint32_t i, const wf_collider_pose *p) {
  return wf_cloth_set_collider_pose(h, i, p);
}
static wf_status collider_force_(void *h, uint32_t i, double f[3], double t[3]) {
  return wf_cloth_collider_force(h, i, f, t);
}
static wf_status step_frames_(void *h, int n) { return wf_cloth_step_frames(h, n); }
static wf_status step_substeps_(void *h, int n) { return wf_cloth_step_substeps(h, n); }
static const wfpy_solver_ops ops = {add_collider_, set_collider_pose_, collider_force_,
                                    step_frames_, step_substeps_};

static PyObject *cloth_add_collider(PyObject *self, PyObject *args, PyObject *kw) {
  return wfpy_solver_add_collider(&ops, CL(self), args, kw);
}
static PyObject *cloth_set_collider_pose(PyObject *self, PyObject *args, PyObject *kw) {
  return wfpy_solver_set_collider_pose(&ops, CL(self), args, kw);
}
static PyObject *cloth_collider_force(PyObject *self, PyObject *arg) {
  return wfpy_solver_collider_force(&ops, CL(self), arg);
}
static PyObject *cloth_step(PyObject *self, PyObject *args) {
  return wfpy_solver_step(&ops, CL(self), args);
}
static PyObject *cloth_step_substeps(PyObject *self, PyObject *args) {
  return wfpy_solver_step_substeps(&ops, CL(self), args);
}

static PyObject *cloth_download(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"local", NULL};
  int local = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kws, &local)) return NULL;
  uint32_t n = wf_cloth_count(CL(self));
  void *p, *v;
  PyObject *pos = wfpy_numpy_empty(n, 4, "float32", &p);
  PyObject *vel = pos ? wfpy_numpy_empty(n, 4, "float32", &v) : NULL;
  if (!vel) {
    Py_XDECREF(pos);
    return NULL;
  }
  wf_cloth *c = CL(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = local ? wf_cloth_download_local(c, p, v) : wf_cloth_download(c, p, v);
  Py_END_ALLOW_THREADS if (st < 0) {
    Py_DECREF(pos);
    Py_DECREF(vel);
    return wfpy_raise(st);
  }
  return Py_BuildValue("(NN)", pos, vel);
}

static PyObject *cloth_copy_positions(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"dst", "offset", "stream", NULL};
  PyObject *dst, *so = Py_None;
  Py_ssize_t off = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|nO", kws, &wfpy_BufferType, &dst, &off, &so))
    return NULL;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  wf_buffer *b = ((wfpy_Buffer *)dst)->b;
  wf_status st = s ? wf_cloth_copy_positions_on(CL(self), b, (size_t)off, s)
                   : wf_cloth_copy_positions(CL(self), b, (size_t)off);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *cloth_triangles(PyObject *self, PyObject *unused) {
  uint32_t n = 0;
  const uint32_t *t = wf_cloth_triangles(CL(self), &n);
  void *data;
  PyObject *arr = wfpy_numpy_empty(n, 3, "uint32", &data);
  if (arr && n) memcpy(data, t, (size_t)n * 3 * sizeof(uint32_t));
  return arr;
}

static PyObject *cloth_energy(PyObject *self, PyObject *unused) {
  wf_cloth_energy e;
  wf_cloth *c = CL(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_cloth_energy_get(c, &e);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("{s:d,s:d,s:d,s:d}", "kinetic", e.kinetic, "potential", e.potential,
                       "elastic", e.elastic, "total", e.total);
}

static PyObject *cloth_set_params(PyObject *self, PyObject *args, PyObject *kw) {
  wf_cloth_params p = wf_cloth_params_get(CL(self));
  static const wfpy_field fields[] = {
      WFPY_F(wf_cloth_params, frame_dt, 'f', 1), WFPY_F(wf_cloth_params, gravity, 'f', 3),
      WFPY_F(wf_cloth_params, wind, 'f', 3),     WFPY_F(wf_cloth_params, air_density, 'f', 1),
      WFPY_F(wf_cloth_params, damping, 'f', 1),  {NULL, 0, 0, 0, NULL}};
  if (wfpy_fields_set(&p, fields, kw, "set_params") < 0) return NULL;
  wf_status st = wf_cloth_params_set(CL(self), &p);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *cloth_set_state(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"pos", "vel", "time", "substeps", "local", NULL};
  PyObject *po, *vo;
  double time = 0;
  unsigned long long substeps = 0;
  int local = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|dKp", kws, &po, &vo, &time, &substeps, &local))
    return NULL;
  Py_buffer pv, vv;
  Py_ssize_t np_, nv;
  if (wfpy_float_rows(po, 4, &pv, &np_) < 0) return NULL;
  if (wfpy_float_rows(vo, 4, &vv, &nv) < 0) {
    PyBuffer_Release(&pv);
    return NULL;
  }
  uint32_t n = wf_cloth_count(CL(self));
  wf_status st = WF_OK;
  if (np_ == n && nv == n)
    st = local ? wf_cloth_set_state_local(CL(self), pv.buf, vv.buf, time, substeps)
               : wf_cloth_set_state(CL(self), pv.buf, vv.buf, time, substeps);
  PyBuffer_Release(&pv);
  PyBuffer_Release(&vv);
  if (np_ != n || nv != n)
    return PyErr_Format(PyExc_ValueError, "set_state: %u vertices, got %zd and %zd rows", n, np_,
                        nv);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *cloth_get(PyObject *self, void *which) {
  switch ((intptr_t)which) {
  case 0: return PyLong_FromUnsignedLong(wf_cloth_count(CL(self)));
  case 1: return wfpy_stream_borrowed(wf_cloth_stream(CL(self)));
  default: Py_RETURN_NONE;
  }
}

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef cloth_methods[] = {
    {"grid", KW(cloth_grid) | METH_CLASS,
     "Cloth.grid(size=, resolution=, center=, u_axis=, v_axis=, device=, stream=, material=, "
     "**wf_cloth_desc fields)."},
    {"mesh", KW(cloth_mesh) | METH_CLASS,
     "Cloth.mesh(vertices (n,3) float32, triangles (t,3) uint32, scale=, translate=, **settings)."},
    {"pin", cloth_pin, METH_O, "pin(vertex index or 'top', 'top-left', ...) -> vertices pinned."},
    {"pin_region", cloth_pin_region, METH_VARARGS, "pin_region(lo, hi) -> vertices pinned."},
    {"add_collider", KW(cloth_add_collider), "add_collider(dict or keywords) -> index."},
    {"set_collider_pose", KW(cloth_set_collider_pose),
     "set_collider_pose(index, pose dict or keywords): between frames, no recapture."},
    {"collider_force", cloth_collider_force, METH_O, "collider_force(index) -> (force, torque)."},
    {"step", cloth_step, METH_VARARGS, "step(frames=1): enqueue frames (asynchronous)."},
    {"step_substeps", cloth_step_substeps, METH_VARARGS,
     "step_substeps(n): enqueue substeps kernel by kernel (capturable into a weft.capture)."},
    {"download", KW(cloth_download),
     "download(local=False) -> (pos, vel): waits; float32 (n, 4); local: relative to the "
     "cloth's origin, as the solver keeps them (bitwise restorable with set_state(local=True))."},
    {"copy_positions", KW(cloth_copy_positions),
     "copy_positions(dst, offset=0, stream=None): xyz + inverse mass rows into a weft.Buffer "
     "(the solver's own positions, relative to its origin)."},
    {"set_params", KW(cloth_set_params),
     "set_params(frame_dt=, gravity=, wind=, air_density=, damping=): between frames, no "
     "recapture."},
    {"set_state", KW(cloth_set_state),
     "set_state(pos, vel, time=0, substeps=0, local=False): (n, 4) float32; local=True with "
     "download(local=True)'s rows continues bitwise."},
    {"triangles", cloth_triangles, METH_NOARGS, "(t, 3) uint32 vertex indices."},
    {"energy", cloth_energy, METH_NOARGS, "Waits; kinetic, potential, elastic, total (J)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef cloth_getset[] = {{"count", cloth_get, NULL, "vertices", (void *)0},
                                     {"stream", cloth_get, NULL, "the solver's stream", (void *)1},
                                     {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_ClothType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Cloth",
    .tp_basicsize = sizeof(wfpy_Cloth),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A cloth solver: Cloth.grid(...) or Cloth.mesh(vertices, triangles, ...).",
    .tp_dealloc = cloth_dealloc,
    .tp_methods = cloth_methods,
    .tp_getset = cloth_getset,
};
