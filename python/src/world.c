/* weft.World: a scene on its solvers (weft/world.h). Stepping is asynchronous like the C call;
 * anything that reads the state (stats, download, save) waits for it. */
#include "wfpy.h"

typedef struct {
  PyObject_HEAD wf_world *w;
} wfpy_World;

#define W(self) (((wfpy_World *)(self))->w)

static PyObject *world_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
  static char *kws[] = {"scene", "device", "frames", NULL};
  PyObject *scene, *dev = Py_None;
  int frames = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Oi", kws, &scene, &dev, &frames)) return NULL;
  wf_scene *sc = wfpy_scene_get(scene);
  if (!sc) return NULL;
  wf_world_desc d = wf_world_desc_default();
  d.frames = frames;
  if (PyObject_TypeCheck(dev, &wfpy_DeviceType))
    d.device = wf_device_name(((wfpy_Device *)dev)->dev);
  else if (dev != Py_None && !(d.device = PyUnicode_AsUTF8(dev)))
    return NULL;
  wfpy_World *o = (wfpy_World *)t->tp_alloc(t, 0);
  if (!o) return NULL;
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_world_create(sc, &d, &o->w);
  Py_END_ALLOW_THREADS if (st < 0) {
    Py_DECREF(o);
    return wfpy_raise(st);
  }
  return (PyObject *)o;
}

static void world_dealloc(PyObject *self) {
  wf_world *w = W(self);
  Py_BEGIN_ALLOW_THREADS wf_world_destroy(w);
  Py_END_ALLOW_THREADS Py_TYPE(self)->tp_free(self);
}

static PyObject *world_step(PyObject *self, PyObject *args) {
  int frames = 1;
  if (!PyArg_ParseTuple(args, "|i", &frames)) return NULL;
  wf_world *w = W(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_world_step(w, frames);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *world_check(PyObject *self, PyObject *unused) {
  wf_world *w = W(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_world_check(w);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *world_stats(PyObject *self, PyObject *unused) {
  wf_world_stats s;
  wf_world *w = W(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_world_stats_get(w, &s);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  return Py_BuildValue(
      "{s:L,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:(ddd),s:K,s:K,s:i}", "frame", (long long)s.frame, "time",
      s.time, "kinetic_energy", s.kinetic_energy, "potential_energy", s.potential_energy,
      "elastic_energy", s.elastic_energy, "rotational_energy", s.rotational_energy, "total_energy",
      s.total_energy, "max_speed", s.max_speed, "momentum", s.momentum[0], s.momentum[1],
      s.momentum[2], "particle_count", (unsigned long long)s.particle_count, "vertex_count",
      (unsigned long long)s.vertex_count, "object_count", s.object_count);
}

static PyObject *path_call(PyObject *self, PyObject *arg,
                           wf_status (*fn)(wf_world *, const char *)) {
  PyObject *path;
  if (!PyUnicode_FSConverter(arg, &path)) return NULL;
  wf_world *w = W(self);
  const char *p = PyBytes_AS_STRING(path);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = fn(w, p);
  Py_END_ALLOW_THREADS Py_DECREF(path);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *world_save(PyObject *self, PyObject *arg) {
  return path_call(self, arg, wf_world_save);
}

static PyObject *world_load_checkpoint(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"path", "allow_changes", NULL};
  PyObject *path;
  int allow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", kws, &path, &allow)) return NULL;
  return path_call(self, path,
                   allow ? wf_world_load_checkpoint_with_changes : wf_world_load_checkpoint);
}

static PyObject *world_object(PyObject *self, PyObject *arg) {
  int i = (int)PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  wf_world_object ob;
  wf_status st = wf_world_object_get(W(self), i, &ob);
  if (st < 0) return wfpy_raise(st);
  PyObject *tris = Py_None;
  if (ob.triangle_count) {
    void *data;
    tris = wfpy_numpy_empty(ob.triangle_count, 3, "uint32", &data);
    if (!tris) return NULL;
    memcpy(data, ob.triangles, (size_t)ob.triangle_count * 3 * sizeof(uint32_t));
  } else {
    Py_INCREF(tris);
  }
  return Py_BuildValue("{s:s,s:s,s:I,s:I,s:N}", "name", ob.name, "kind",
                       ob.kind == WF_WORLD_CLOTH ? "cloth" : "particles", "point_count",
                       ob.point_count, "first", ob.first, "triangles", tris);
}

static PyObject *world_download(PyObject *self, PyObject *arg) {
  int i = (int)PyLong_AsLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  wf_world_object ob;
  wf_status st = wf_world_object_get(W(self), i, &ob);
  if (st < 0) return wfpy_raise(st);
  void *p, *v;
  PyObject *pos = wfpy_numpy_empty(ob.point_count, 4, "float32", &p);
  PyObject *vel = pos ? wfpy_numpy_empty(ob.point_count, 4, "float32", &v) : NULL;
  if (!vel) {
    Py_XDECREF(pos);
    return NULL;
  }
  wf_world *w = W(self);
  Py_BEGIN_ALLOW_THREADS st = wf_world_object_download(w, i, p, v);
  Py_END_ALLOW_THREADS if (st < 0) {
    Py_DECREF(pos);
    Py_DECREF(vel);
    return wfpy_raise(st);
  }
  return Py_BuildValue("(NN)", pos, vel);
}

static PyObject *world_collider_force(PyObject *self, PyObject *arg) {
  int k = (int)PyLong_AsLong(arg);
  if (k == -1 && PyErr_Occurred()) return NULL;
  double f[3], t[3];
  wf_world *w = W(self);
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_world_collider_force(w, k, f, t);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("((ddd)(ddd))", f[0], f[1], f[2], t[0], t[1], t[2]);
}

static PyObject *world_set_collider_pose(PyObject *self, PyObject *args, PyObject *kw) {
  int k;
  PyObject *dict = Py_None;
  if (!PyArg_ParseTuple(args, "i|O", &k, &dict)) return NULL;
  PyObject *d = wfpy_dict_or_kw(dict, kw, "set_collider_pose");
  wf_collider_pose p;
  int bad = !d || wfpy_collider_pose(d, &p) < 0;
  Py_XDECREF(d);
  if (bad) return NULL;
  wf_status st = wf_world_set_collider_pose(W(self), k, &p);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *world_get(PyObject *self, void *which) {
  wf_world *w = W(self);
  switch ((intptr_t)which) {
  case 0: return PyLong_FromLongLong(wf_world_frame(w));
  case 1: return PyLong_FromLong(wf_world_frames(w));
  case 2: return PyFloat_FromDouble(wf_world_frame_dt(w));
  case 3: return PyLong_FromLong(wf_world_object_count(w));
  case 4: return wfpy_device_new(wf_world_device(w));
  case 5: {
    int n = wf_world_collider_count(w);
    PyObject *l = PyList_New(n);
    for (int k = 0; l && k < n; k++)
      PyList_SET_ITEM(l, k, PyUnicode_FromString(wf_world_collider_name(w, k)));
    return l;
  }
  default: Py_RETURN_NONE;
  }
}

static PyMethodDef world_methods[] = {
    {"step", world_step, METH_VARARGS,
     "step(frames=1): enqueue frames (asynchronous; raises once a frame is found unhealthy)."},
    {"check", world_check, METH_NOARGS,
     "Waits for the health checks; raises on the first bad frame."},
    {"stats", world_stats, METH_NOARGS, "Waits; a dict of wf_world_stats."},
    {"save", world_save, METH_O, "save(path): write a checkpoint (atomically)."},
    {"load_checkpoint", (PyCFunction)(void (*)(void))world_load_checkpoint,
     METH_VARARGS | METH_KEYWORDS,
     "load_checkpoint(path, allow_changes=False): restore a checkpoint of the same scene."},
    {"object", world_object, METH_O,
     "object(i) -> dict: name, kind, point_count, first, triangles."},
    {"download", world_download, METH_O,
     "download(i) -> (pos, vel): float32 arrays (n, 4), as wf_world_object_download gives them."},
    {"set_collider_pose", (PyCFunction)(void (*)(void))world_set_collider_pose,
     METH_VARARGS | METH_KEYWORDS,
     "set_collider_pose(k, pose dict or keywords: time, position, rotation, velocity, "
     "angular_velocity): in every solver, between frames (not checkpointed)."},
    {"collider_force", world_collider_force, METH_O,
     "collider_force(k) -> (force N, torque N·m) over the last frame."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef world_getset[] = {
    {"frame", world_get, NULL, "frames stepped so far", (void *)0},
    {"frames", world_get, NULL, "frames of a run", (void *)1},
    {"frame_dt", world_get, NULL, "seconds per frame", (void *)2},
    {"object_count", world_get, NULL, "emitters, then cloths", (void *)3},
    {"device", world_get, NULL, "the world's (first) device", (void *)4},
    {"collider_names", world_get, NULL, "the colliders' scene names", (void *)5},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_WorldType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.World",
    .tp_basicsize = sizeof(wfpy_World),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "World(scene, device=None, frames=0): a scene on its solvers.",
    .tp_new = world_new,
    .tp_dealloc = world_dealloc,
    .tp_methods = world_methods,
    .tp_getset = world_getset,
};
