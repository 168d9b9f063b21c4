/* weft.Scene: a validated scene file (weft/scene.h). A scene that fails to load raises
 * weft.Error carrying every message of wf_scene_errors(), one per line, exactly as `weft
 * validate` prints them (file:line:column: key.path: what is wrong). */
#include "wfpy.h"

typedef struct {
  PyObject_HEAD wf_scene *sc;
} wfpy_Scene;

wf_scene *wfpy_scene_get(PyObject *obj) {
  if (!PyObject_TypeCheck(obj, &wfpy_SceneType)) {
    PyErr_Format(PyExc_TypeError, "expected a weft.Scene, got %s", Py_TYPE(obj)->tp_name);
    return NULL;
  }
  return ((wfpy_Scene *)obj)->sc;
}

static PyObject *scene_error(wf_status st) {
  const char *all = wf_scene_errors();
  return all && *all ? wfpy_raise_msg(st, all) : wfpy_raise(st);
}

/* overrides: a list of "key.path=value" strings, or a dict {key.path: value} (values as JSON) */
static int overrides_parse(PyObject *ov, PyObject **keep, const char ***set, int *count) {
  *keep = NULL;
  *set = NULL;
  *count = 0;
  if (!ov || ov == Py_None) return 0;
  PyObject *list;
  if (PyDict_Check(ov)) {
    PyObject *json = PyImport_ImportModule("json");
    if (!json) return -1;
    list = PyList_New(0);
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (list && PyDict_Next(ov, &pos, &k, &v)) {
      PyObject *js = PyUnicode_Check(v) ? Py_NewRef(v) : PyObject_CallMethod(json, "dumps", "O", v);
      PyObject *item = js ? PyUnicode_FromFormat("%S=%S", k, js) : NULL;
      Py_XDECREF(js);
      if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
      Py_XDECREF(item);
    }
    Py_DECREF(json);
  } else {
    list = PySequence_List(ov);
  }
  if (!list) return -1;
  Py_ssize_t n = PyList_GET_SIZE(list);
  *set = PyMem_Calloc((size_t)n + 1, sizeof(char *));
  for (Py_ssize_t i = 0; *set && i < n; i++) {
    (*set)[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i));
    if (!(*set)[i]) {
      PyMem_Free(*set);
      *set = NULL;
      Py_DECREF(list);
      return -1;
    }
  }
  if (!*set) {
    Py_DECREF(list);
    PyErr_NoMemory();
    return -1;
  }
  *keep = list;
  *count = (int)n;
  return 0;
}

static PyObject *scene_wrap(wf_scene *sc) {
  wfpy_Scene *o = PyObject_New(wfpy_Scene, &wfpy_SceneType);
  if (!o) {
    wf_scene_destroy(sc);
    return NULL;
  }
  o->sc = sc;
  return (PyObject *)o;
}

static PyObject *scene_load(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kws[] = {"path", "overrides", NULL};
  PyObject *path, *ov = Py_None, *keep;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O", kws, PyUnicode_FSConverter, &path, &ov))
    return NULL;
  const char **set;
  int count;
  if (overrides_parse(ov, &keep, &set, &count) < 0) {
    Py_DECREF(path);
    return NULL;
  }
  wf_scene_overrides o = {set, count};
  wf_scene *sc = NULL;
  wf_status st;
  const char *p = PyBytes_AS_STRING(path);
  Py_BEGIN_ALLOW_THREADS st = wf_scene_load(p, count ? &o : NULL, &sc);
  Py_END_ALLOW_THREADS PyMem_Free(set);
  Py_XDECREF(keep);
  Py_DECREF(path);
  if (st < 0) return scene_error(st);
  return scene_wrap(sc);
}

static PyObject *scene_parse(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kws[] = {"text", "name", "base_dir", "overrides", NULL};
  const char *text, *name = NULL, *base = NULL;
  Py_ssize_t len;
  PyObject *ov = Py_None, *keep;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|zzO", kws, &text, &len, &name, &base, &ov))
    return NULL;
  const char **set;
  int count;
  if (overrides_parse(ov, &keep, &set, &count) < 0) return NULL;
  wf_scene_overrides o = {set, count};
  wf_scene *sc = NULL;
  wf_status st = wf_scene_parse(text, (size_t)len, name, base, count ? &o : NULL, &sc);
  PyMem_Free(set);
  Py_XDECREF(keep);
  if (st < 0) return scene_error(st);
  return scene_wrap(sc);
}

static void scene_dealloc(PyObject *self) {
  wf_scene_destroy(((wfpy_Scene *)self)->sc);
  PyObject_Free(self);
}

static PyObject *scene_to_json(PyObject *self, PyObject *unused) {
  char *js = wf_scene_to_json(((wfpy_Scene *)self)->sc);
  if (!js) return PyErr_NoMemory();
  PyObject *r = PyUnicode_FromString(js);
  free(js);
  return r;
}

static PyObject *scene_get(PyObject *self, void *which) {
  const wf_scene *sc = ((wfpy_Scene *)self)->sc;
  switch ((intptr_t)which) {
  case 0: return PyLong_FromLong(sc->emitter_count);
  case 1: return PyLong_FromLong(sc->cloth_count);
  case 2: return PyLong_FromLong(sc->collider_count);
  case 3: return PyLong_FromLong(sc->material_count);
  case 4: return PyFloat_FromDouble(sc->simulation.fps);
  case 5: return PyLong_FromLong(sc->simulation.substeps);
  case 6: return PyLong_FromLong(sc->simulation.frames);
  default: Py_RETURN_NONE;
  }
}

static PyMethodDef scene_methods[] = {
    {"load", (PyCFunction)(void (*)(void))scene_load, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Scene.load(path, overrides=None): read and validate a scene file. overrides: a list of "
     "'key.path=value' strings or a dict {key.path: value}. Raises weft.Error with every "
     "message."},
    {"parse", (PyCFunction)(void (*)(void))scene_parse, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Scene.parse(text, name=None, base_dir=None, overrides=None): the same from a string."},
    {"to_json", scene_to_json, METH_NOARGS, "The canonical JSON, every default filled in."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef scene_getset[] = {
    {"emitter_count", scene_get, NULL, "particle emitters", (void *)0},
    {"cloth_count", scene_get, NULL, "cloths", (void *)1},
    {"collider_count", scene_get, NULL, "colliders", (void *)2},
    {"material_count", scene_get, NULL, "materials", (void *)3},
    {"fps", scene_get, NULL, "simulation.fps", (void *)4},
    {"substeps", scene_get, NULL, "simulation.substeps", (void *)5},
    {"frames", scene_get, NULL, "simulation.frames", (void *)6},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_SceneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Scene",
    .tp_basicsize = sizeof(wfpy_Scene),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A validated scene: Scene.load(path) or Scene.parse(text).",
    .tp_dealloc = scene_dealloc,
    .tp_methods = scene_methods,
    .tp_getset = scene_getset,
};
