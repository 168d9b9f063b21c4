/* weft.Particles: the particle solver built in code (weft/particles.h). Settings, materials,
 * emitters and colliders are dicts (or keyword arguments) whose keys are the C structs' field
 * names; positions and velocities are float32 arrays of rows xyz + radius / xyz + inverse mass. */
#include "fields.h"

typedef struct {
  PyObject_HEAD wf_particles *ps;
  PyObject *stream; /* the weft.Stream it runs on, kept alive (may be NULL) */
} wfpy_Particles;

#define PS(self) (((wfpy_Particles *)(self))->ps)

static const char *const contact_models[] = {"dem", "xpbd", "hertz", NULL};

#define D(k, t, n) WFPY_F(wf_particles_desc, k, t, n)
static const wfpy_field desc_fields[] = {D(name, 's', 1),
                                         D(capacity, 'u', 1),
                                         D(substeps, 'i', 1),
                                         D(frame_dt, 'f', 1),
                                         D(gravity, 'f', 3),
                                         D(damping, 'f', 1),
                                         D(cell_size, 'f', 1),
                                         WFPY_E(wf_particles_desc, contact_model, contact_models),
                                         D(relaxation, 'f', 1),
                                         D(no_graph, 'b', 1),
                                         D(skin, 'f', 1),
                                         D(imbalance, 'f', 1),
                                         D(repartition_frames, 'i', 1),
                                         D(origin_given, 'b', 1),
                                         D(origin, 'd', 3),
                                         {NULL, 0, 0, 0, NULL}};
#undef D

#define M(k) WFPY_F(wf_particle_material, k, 'f', 1)
static const wfpy_field material_fields[] = {
    M(stiffness),  M(damping),  M(restitution),      M(friction),
    M(tangential), M(cohesion), M(static_friction),  M(rolling_friction),
    M(young),      M(poisson),  M(tangential_ratio), {NULL, 0, 0, 0, NULL}};
#undef M

static const char *const emit_shapes[] = {"box", "sphere", NULL};
#define E(k, t, n) WFPY_F(wf_particles_emitter, k, t, n)
static const wfpy_field emitter_fields[] = {
    E(name, 's', 1),          WFPY_E(wf_particles_emitter, shape, emit_shapes),
    E(center, 'f', 3),        E(half_extents, 'f', 3),
    E(sphere_radius, 'f', 1), E(radius, 'f', 1),
    E(spacing, 'f', 1),       E(jitter, 'f', 1),
    E(seed, 'U', 1),          E(velocity, 'f', 3),
    E(density, 'f', 1),       E(mass, 'f', 1),
    E(kinematic, 'b', 1),     E(material, 'u', 1),
    {NULL, 0, 0, 0, NULL}};
#undef E

/* devices: None, a device, a name, or a list of them (one partition each) */
int wfpy_devices_arg(PyObject *obj, wf_device **out, int max, int *count) {
  *count = 0;
  if (!obj || obj == Py_None) return 0;
  if (PyList_Check(obj) || PyTuple_Check(obj)) {
    Py_ssize_t n = PySequence_Size(obj);
    if (n > max) {
      PyErr_Format(PyExc_ValueError, "devices: at most %d", max);
      return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject *it = PySequence_GetItem(obj, i);
      out[i] = it ? wfpy_device_arg(it) : NULL;
      Py_XDECREF(it);
      if (!out[i]) return -1;
    }
    *count = (int)n;
    return 0;
  }
  out[0] = wfpy_device_arg(obj);
  if (!out[0]) return -1;
  *count = 1;
  return 0;
}

static PyObject *particles_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
  PyObject *devs = kw ? PyDict_GetItemString(kw, "device") : NULL;
  PyObject *so = kw ? PyDict_GetItemString(kw, "stream") : NULL;
  if (PyTuple_GET_SIZE(args))
    return PyErr_Format(PyExc_TypeError, "Particles: settings are keyword arguments");
  PyObject *rest = kw ? PyDict_Copy(kw) : PyDict_New();
  if (!rest) return NULL;
  if (devs) PyDict_DelItemString(rest, "device");
  if (so) PyDict_DelItemString(rest, "stream");
  wf_particles_desc d = wf_particles_desc_default();
  wf_stream *s = NULL;
  if (wfpy_fields_set(&d, desc_fields, rest, "Particles") < 0 ||
      wfpy_devices_arg(devs, d.devices, WF_MAX_DEVICES, &d.device_count) < 0 ||
      wfpy_stream_arg(so, &s) < 0) {
    Py_DECREF(rest);
    return NULL;
  }
  d.stream = s;
  wfpy_Particles *o = (wfpy_Particles *)t->tp_alloc(t, 0);
  if (!o) {
    Py_DECREF(rest);
    return NULL;
  }
  wf_status st = wf_particles_create(&d, &o->ps);
  Py_DECREF(rest);
  if (st < 0) {
    Py_DECREF(o);
    return wfpy_raise(st);
  }
  o->stream = s ? Py_NewRef(so) : NULL;
  return (PyObject *)o;
}

static void particles_dealloc(PyObject *self) {
  wf_particles *ps = PS(self);
  Py_BEGIN_ALLOW_THREADS wf_particles_destroy(ps);
  Py_END_ALLOW_THREADS Py_XDECREF(((wfpy_Particles *)self)->stream);
  Py_TYPE(self)->tp_free(self);
}

static PyObject *particles_add_material(PyObject *self, PyObject *args, PyObject *kw) {
  PyObject *dict = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &dict)) return NULL;
  wf_particle_material m = wf_particle_material_default();
  if (wfpy_fields_set(&m, material_fields, dict, "material") < 0 ||
      wfpy_fields_set(&m, material_fields, kw, "material") < 0)
    return NULL;
  uint32_t index;
  wf_status st = wf_particles_add_material(PS(self), &m, &index);
  if (st < 0) return wfpy_raise(st);
  return PyLong_FromUnsignedLong(index);
}

static PyObject *particles_emit(PyObject *self, PyObject *args, PyObject *kw) {
  PyObject *dict = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &dict)) return NULL;
  wf_particles_emitter e = wf_particles_emitter_default();
  if (wfpy_fields_set(&e, emitter_fields, dict, "emitter") < 0 ||
      wfpy_fields_set(&e, emitter_fields, kw, "emitter") < 0)
    return NULL;
  uint32_t first, count;
  wf_status st = wf_particles_emit(PS(self), &e, &first, &count);
  if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("(II)", first, count);
}

static PyObject *particles_add(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"pos", "vel", "material", NULL};
  PyObject *po, *vo;
  unsigned material = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|I", kws, &po, &vo, &material)) return NULL;
  Py_buffer pv, vv;
  Py_ssize_t np_, nv;
  if (wfpy_float_rows(po, 4, &pv, &np_) < 0) return NULL;
  if (wfpy_float_rows(vo, 4, &vv, &nv) < 0) {
    PyBuffer_Release(&pv);
    return NULL;
  }
  wf_status st = WF_ERR_INVALID;
  uint32_t first = 0;
  if (np_ == nv) st = wf_particles_add(PS(self), (uint32_t)np_, pv.buf, vv.buf, material, &first);
  PyBuffer_Release(&pv);
  PyBuffer_Release(&vv);
  if (np_ != nv)
    return PyErr_Format(PyExc_ValueError, "add: %zd positions but %zd velocities", np_, nv);
  if (st < 0) return wfpy_raise(st);
  return PyLong_FromUnsignedLong(first);
}

/* the solver's calls for the methods both solvers share (solver.c) */
static wf_status add_collider_(void *h, const wf_collider_desc *d, uint32_t *i) {
  return wf_particles_add_collider(h, d, i);
}
static wf_status set_collider_pose_(void *h, uint32_t i, const wf_collider_pose *p) {
  return wf_particles_set_collider_pose(h, i, p);
}
static wf_status collider_force_(void *h, uint32_t i, double f[3], double t[3]) {
  return wf_particles_collider_force(h, i, f, t);
}
static wf_status step_frames_(void *h, int n) { return wf_particles_step_frames(h, n); }
static wf_status step_substeps_(void *h, int n) { return wf_particles_step_substeps(h, n); }
static const wfpy_solver_ops ops = {add_collider_, set_collider_pose_, collider_force_,
                                    step_frames_, step_substeps_};

static PyObject *particles_add_collider(PyObject *self, PyObject *args, PyObject *kw) {
  return wfpy_solver_add_collider(&ops, PS(self), args, kw);
}
static PyObject *particles_set_collider_pose(PyObject *self, PyObject *args, PyObject *kw) {
  return wfpy_solver_set_collider_pose(&ops, PS(self), args, kw);
}
static PyObject *particles_collider_force(PyObject *self, PyObject *arg) {
  return wfpy_solver_collider_force(&ops, PS(self), arg);
}
static PyObject *particles_step(PyObject *self, PyObject *args) {
  return wfpy_solver_step(&ops, PS(self), args);
}
static PyObject *particles_step_substeps(PyObject *self, PyObject *args) {
  return wfpy_solver_step_substeps(&ops, PS(self), args);
}

static PyObject *particles_download(PyObject *self, PyObject *unused) {
  uint32_t n = wf_particles_count(PS(self));
  void *p, *v;
  PyObject *pos = wfpy_numpy_empty(n, 4, "float32", &p);
  PyObject *vel = pos ? wfpy_numpy_empty(n, 4, "float32", &v) : NULL;
  if (!vel) {
    Py_XDECREF(pos);
    return NULL;
  }
  wf_particles *ps = PS(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_particles_download(ps, p, v);
  Py_END_ALLOW_THREADS if (st < 0) {
    Py_DECREF(pos);
    Py_DECREF(vel);
    return wfpy_raise(st);
  }
  return Py_BuildValue("(NN)", pos, vel);
}

static PyObject *particles_set_state(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"pos", "vel", "time", "substeps", NULL};
  PyObject *po, *vo;
  double time = 0;
  unsigned long long substeps = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|dK", kws, &po, &vo, &time, &substeps)) return NULL;
  Py_buffer pv, vv;
  Py_ssize_t np_, nv;
  if (wfpy_float_rows(po, 4, &pv, &np_) < 0) return NULL;
  if (wfpy_float_rows(vo, 4, &vv, &nv) < 0) {
    PyBuffer_Release(&pv);
    return NULL;
  }
  uint32_t n = wf_particles_count(PS(self));
  wf_status st = WF_OK;
  if (np_ == n && nv == n) st = wf_particles_set_state(PS(self), pv.buf, vv.buf, time, substeps);
  PyBuffer_Release(&pv);
  PyBuffer_Release(&vv);
  if (np_ != n || nv != n)
    return PyErr_Format(PyExc_ValueError, "set_state: %u particles, got %zd and %zd rows", n, np_,
                        nv);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *particles_copy_state(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"pos", "vel", "stream", NULL};
  PyObject *po = Py_None, *vo = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO", kws, &po, &vo, &so)) return NULL;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  wf_buffer *pb = NULL, *vb = NULL;
  if (po != Py_None) {
    if (!PyObject_TypeCheck(po, &wfpy_BufferType))
      return PyErr_Format(PyExc_TypeError, "copy_state: pos must be a weft.Buffer");
    pb = ((wfpy_Buffer *)po)->b;
  }
  if (vo != Py_None) {
    if (!PyObject_TypeCheck(vo, &wfpy_BufferType))
      return PyErr_Format(PyExc_TypeError, "copy_state: vel must be a weft.Buffer");
    vb = ((wfpy_Buffer *)vo)->b;
  }
  wf_status st = wf_particles_copy_state(PS(self), pb, 0, vb, 0, s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

/* A wf_buffer over rows of a partition's state, owned by the solver: a wrap that keeps the solver
 * object alive, so a tensor over it cannot outlive the memory. */
static PyObject *state_rows(PyObject *solver, wf_device *d, wf_buffer *b, uint32_t rows) {
  wfpy_Buffer *o = (wfpy_Buffer *)wfpy_BufferType.tp_alloc(&wfpy_BufferType, 0);
  if (!o) return NULL;
  o->kind = 'f';
  o->itemsize = 4;
  o->ndim = 2;
  o->shape[0] = rows;
  o->shape[1] = 4;
  o->owner = Py_NewRef(solver);
  o->device = wfpy_device_new(d);
  wf_status st = o->device ? wf_buffer_wrap(d, wf_buffer_ptr(b), (size_t)rows * 16, &o->b) : WF_OK;
  if (!o->device || st < 0) {
    Py_DECREF(o);
    return st < 0 ? wfpy_raise(st) : NULL;
  }
  return (PyObject *)o;
}

static PyObject *particles_partition_view(PyObject *self, PyObject *args) {
  int i = 0;
  if (!PyArg_ParseTuple(args, "|i", &i)) return NULL;
  wf_partition_view v;
  wf_status st = wf_particles_partition_view(PS(self), i, &v);
  if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("{s:N,s:N,s:N,s:N,s:I,s:I,s:(ddd)}", "device", wfpy_device_new(v.device),
                       "stream", wfpy_stream_borrowed(v.stream), "pos",
                       state_rows(self, v.device, v.pos, v.rows), "vel",
                       state_rows(self, v.device, v.vel, v.rows), "first", v.first, "rows", v.rows,
                       "origin", v.origin[0], v.origin[1], v.origin[2]);
}

static PyObject *particles_stats(PyObject *self, PyObject *unused) {
  wf_particles_stats s;
  wf_particles *ps = PS(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_particles_stats_get(ps, &s);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("{s:I,s:d,s:d,s:d,s:d,s:(ddd),s:d,s:d,s:K}", "count", s.count,
                       "kinetic_energy", s.kinetic_energy, "rotational_energy", s.rotational_energy,
                       "potential_energy", s.potential_energy, "elastic_energy", s.elastic_energy,
                       "momentum", s.momentum[0], s.momentum[1], s.momentum[2], "max_speed",
                       s.max_speed, "time", s.time, "substeps", (unsigned long long)s.substeps);
}

static PyObject *particles_set_params(PyObject *self, PyObject *args, PyObject *kw) {
  wf_particles_params p = wf_particles_params_get(PS(self));
  static const wfpy_field fields[] = {WFPY_F(wf_particles_params, frame_dt, 'f', 1),
                                      WFPY_F(wf_particles_params, gravity, 'f', 3),
                                      WFPY_F(wf_particles_params, damping, 'f', 1),
                                      {NULL, 0, 0, 0, NULL}};
  if (wfpy_fields_set(&p, fields, kw, "set_params") < 0) return NULL;
  wf_status st = wf_particles_params_set(PS(self), &p);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *particles_get(PyObject *self, void *which) {
  switch ((intptr_t)which) {
  case 0: return PyLong_FromUnsignedLong(wf_particles_count(PS(self)));
  case 1: return wfpy_stream_borrowed(wf_particles_stream(PS(self)));
  default: Py_RETURN_NONE;
  }
}

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS
static PyMethodDef particles_methods[] = {
    {"add_material", KW(particles_add_material),
     "add_material(dict or keywords of wf_particle_material) -> index."},
    {"emit", KW(particles_emit),
     "emit(dict or keywords of wf_particles_emitter) -> (first, count)."},
    {"add", KW(particles_add),
     "add(pos, vel, material=0) -> first id: float32 rows xyz+radius, xyz+inverse mass."},
    {"add_collider", KW(particles_add_collider),
     "add_collider(dict or keywords of wf_collider_desc; type 'plane'|'sphere'|'box'|'capsule') "
     "-> index."},
    {"set_collider_pose", KW(particles_set_collider_pose),
     "set_collider_pose(index, pose dict or keywords: time, position, rotation (xyzw), velocity, "
     "angular_velocity): between frames, no recapture."},
    {"collider_force", particles_collider_force, METH_O,
     "collider_force(index) -> (force N, torque N·m) over the last frame."},
    {"step", particles_step, METH_VARARGS, "step(frames=1): enqueue frames (asynchronous)."},
    {"step_substeps", particles_step_substeps, METH_VARARGS,
     "step_substeps(n): enqueue substeps without the frame graph (capturable)."},
    {"download", particles_download, METH_NOARGS, "Waits; (pos, vel) float32 (n, 4) arrays."},
    {"set_state", KW(particles_set_state),
     "set_state(pos, vel, time=0, substeps=0): replace the state and the clock."},
    {"copy_state", KW(particles_copy_state),
     "copy_state(pos=None, vel=None, stream=None): asynchronous copies into weft.Buffers."},
    {"partition_view", particles_partition_view, METH_VARARGS,
     "partition_view(i=0) -> dict: device, stream, pos and vel (weft.Buffers (rows, 4) over the "
     "solver's own state on its device, zero-copy; positions relative to origin), first, rows, "
     "origin. Valid until particles are added (weft/partition.h); work on them must be ordered "
     "with stream."},
    {"stats", particles_stats, METH_NOARGS, "Waits; a dict of wf_particles_stats."},
    {"set_params", KW(particles_set_params),
     "set_params(frame_dt=, gravity=, damping=): no recapture."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef particles_getset[] = {
    {"count", particles_get, NULL, "particles added so far", (void *)0},
    {"stream", particles_get, NULL, "the solver's stream (borrowed)", (void *)1},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_ParticlesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Particles",
    .tp_basicsize = sizeof(wfpy_Particles),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Particles(device=None, stream=None, **wf_particles_desc fields): a particle "
              "solver.",
    .tp_new = particles_new,
    .tp_dealloc = particles_dealloc,
    .tp_methods = particles_methods,
    .tp_getset = particles_getset,
};
