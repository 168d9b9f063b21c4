/* The module `weft._weft`: its exception type, the status -> exception mapping, and the helpers
 * for arguments that name devices and streams. The Python package `weft` (weft/__init__.py)
 * re-exports it and adds the pure-Python parts (the capture context, conveniences). */
#include "wfpy.h"

PyObject *wfpy_Error;

PyObject *wfpy_raise_msg(wf_status st, const char *msg) {
  PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  PyObject *exc = text ? PyObject_CallOneArg(wfpy_Error, text) : NULL;
  Py_XDECREF(text);
  if (!exc) return NULL;
  PyObject *code = PyLong_FromLong((long)st);
  PyObject *name = PyUnicode_FromString(wf_status_str(st));
  if (code && name) {
    PyObject_SetAttrString(exc, "status", code);
    PyObject_SetAttrString(exc, "status_name", name);
  }
  Py_XDECREF(code);
  Py_XDECREF(name);
  PyErr_SetObject(wfpy_Error, exc);
  Py_DECREF(exc);
  return NULL;
}

PyObject *wfpy_raise(wf_status st) {
  const char *msg = wf_last_error();
  if (!msg || !*msg) msg = wf_status_str(st);
  return wfpy_raise_msg(st, msg);
}

wf_device *wfpy_device_arg(PyObject *obj) {
  if (!obj || obj == Py_None) {
    wf_device *d = wf_device_default();
    if (!d) wfpy_raise(WF_ERR_DEVICE);
    return d;
  }
  if (PyObject_TypeCheck(obj, &wfpy_DeviceType)) return ((wfpy_Device *)obj)->dev;
  if (PyUnicode_Check(obj)) {
    const char *name = PyUnicode_AsUTF8(obj);
    if (!name) return NULL;
    wf_device *d = NULL;
    wf_status st = wf_device_get(name, &d);
    if (st != WF_OK) {
      wfpy_raise(st);
      return NULL;
    }
    return d;
  }
  PyErr_Format(PyExc_TypeError, "device: expected a weft.Device or a name like \"cpu:0\", got %s",
               Py_TYPE(obj)->tp_name);
  return NULL;
}

int wfpy_stream_arg(PyObject *obj, wf_stream **out) {
  *out = NULL;
  if (!obj || obj == Py_None) return 0;
  if (PyObject_TypeCheck(obj, &wfpy_StreamType)) {
    *out = ((wfpy_Stream *)obj)->s;
    if (!*out) {
      PyErr_SetString(PyExc_ValueError, "stream: the weft.Stream was destroyed");
      return -1;
    }
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "stream: expected a weft.Stream or None, got %s",
               Py_TYPE(obj)->tp_name);
  return -1;
}

int wfpy_floats(PyObject *seq, float *out, int n, const char *what) {
  PyObject *fast = PySequence_Fast(seq, what);
  if (!fast) return -1;
  if (PySequence_Fast_GET_SIZE(fast) != n) {
    PyErr_Format(PyExc_ValueError, "%s: expected %d numbers, got %zd", what, n,
                 PySequence_Fast_GET_SIZE(fast));
    Py_DECREF(fast);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    if (v == -1.0 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
    out[i] = (float)v;
  }
  Py_DECREF(fast);
  return 0;
}

PyObject *wfpy_numpy_empty(Py_ssize_t rows, Py_ssize_t cols, const char *dtype, void **data) {
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np) return NULL;
  PyObject *arr = PyObject_CallMethod(np, "empty", "((nn)s)", rows, cols, dtype);
  Py_DECREF(np);
  if (!arr) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  *data = view.buf; /* the array owns the memory; the view is only to find it */
  PyBuffer_Release(&view);
  return arr;
}

int wfpy_float_rows(PyObject *obj, int cols, Py_buffer *view, Py_ssize_t *rows) {
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
  const char *f = view->format ? view->format : "B";
  if (view->itemsize != 4 ||
      (strcmp(f, "f") != 0 && strcmp(f, "<f") != 0 && strcmp(f, "=f") != 0)) {
    PyErr_Format(PyExc_TypeError, "expected a C-contiguous float32 array, got format '%s'", f);
    PyBuffer_Release(view);
    return -1;
  }
  Py_ssize_t n = view->len / 4;
  if (n % cols) {
    PyErr_Format(PyExc_ValueError, "expected rows of %d float32 values, got %zd values", cols, n);
    PyBuffer_Release(view);
    return -1;
  }
  *rows = n / cols;
  return 0;
}

/* ---- module-level functions ---- */

static PyObject *py_init(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"cpu_devices", "no_cuda", "cpu_threads", NULL};
  wf_init_desc d = {0};
  int no_cuda = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|ipi", kws, &d.cpu_devices, &no_cuda, &d.cpu_threads))
    return NULL;
  d.no_cuda = no_cuda;
  wf_status st = wf_init(&d);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_cpu_devices_ensure(PyObject *self, PyObject *arg) {
  long n = PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  wf_status st = wf_cpu_devices_ensure((int)n);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_devices(PyObject *self, PyObject *unused) {
  int n = wf_device_count();
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    PyObject *d = wfpy_device_new(wf_device_at(i));
    if (!d) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, d);
  }
  return list;
}

static PyObject *py_device(PyObject *self, PyObject *args) {
  PyObject *name = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &name)) return NULL;
  wf_device *d = wfpy_device_arg(name);
  return d ? wfpy_device_new(d) : NULL;
}

static PyObject *py_synchronize(PyObject *self, PyObject *unused) {
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_synchronize();
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_last_error(PyObject *self, PyObject *unused) {
  return PyUnicode_FromString(wf_last_error());
}

static PyObject *py_runtime_info(PyObject *self, PyObject *unused) {
  wf_runtime_info ri;
  wf_runtime_info_get(&ri);
  return Py_BuildValue("{s:O,s:i,s:i,s:i,s:s,s:s,s:i}", "cuda_compiled",
                       ri.cuda_compiled ? Py_True : Py_False, "cuda_driver_version",
                       ri.cuda_driver_version, "cuda_runtime_version", ri.cuda_runtime_version,
                       "cuda_devices_found", ri.cuda_devices_found, "cuda_status", ri.cuda_status,
                       "cuda_architectures", ri.cuda_architectures, "cpu_threads", ri.cpu_threads);
}

static PyMethodDef module_methods[] = {
    {"init", (PyCFunction)(void (*)(void))py_init, METH_VARARGS | METH_KEYWORDS,
     "init(cpu_devices=1, no_cuda=False, cpu_threads=0): start the runtime (optional)."},
    {"cpu_devices_ensure", py_cpu_devices_ensure, METH_O,
     "cpu_devices_ensure(n): make sure cpu:0..n-1 exist."},
    {"devices", py_devices, METH_NOARGS, "devices() -> list of weft.Device."},
    {"device", py_device, METH_VARARGS,
     "device(name=None) -> weft.Device: 'cpu:0', 'cuda:1', 'cpu', 'cuda'; None: the default."},
    {"synchronize", py_synchronize, METH_NOARGS, "Waits for every stream of every device."},
    {"last_error", py_last_error, METH_NOARGS, "This thread's wf_last_error() text."},
    {"runtime_info", py_runtime_info, METH_NOARGS, "Facts about the build and the runtime."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_weft",
                                        "libweft's public C API for Python (see docs/python.md).",
                                        -1, module_methods};

PyMODINIT_FUNC PyInit__weft(void);
PyMODINIT_FUNC PyInit__weft(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  wfpy_Error = PyErr_NewExceptionWithDoc(
      "weft.Error",
      "A libweft call failed. str(e) is wf_last_error()'s text; e.status the wf_status code "
      "(negative) and e.status_name its name ('WF_ERR_CAPTURE').",
      NULL, NULL);
  if (!wfpy_Error || PyModule_AddObjectRef(m, "Error", wfpy_Error) < 0) goto fail;
  if (PyModule_AddFunctions(m, wfpy_graph_functions) < 0) goto fail;
  if (wfpy_add_types(m) < 0) goto fail;
  PyModule_AddIntConstant(m, "OK", WF_OK);
  PyModule_AddIntConstant(m, "ERR_INVALID", WF_ERR_INVALID);
  PyModule_AddIntConstant(m, "ERR_DEVICE", WF_ERR_DEVICE);
  PyModule_AddIntConstant(m, "ERR_OUT_OF_MEMORY", WF_ERR_OUT_OF_MEMORY);
  PyModule_AddIntConstant(m, "ERR_CAPTURE", WF_ERR_CAPTURE);
  PyModule_AddIntConstant(m, "ERR_BACKEND", WF_ERR_BACKEND);
  PyModule_AddIntConstant(m, "ERR_IO", WF_ERR_IO);
  PyModule_AddIntConstant(m, "ERR_PARSE", WF_ERR_PARSE);
  PyModule_AddIntConstant(m, "ERR_UNSUPPORTED", WF_ERR_UNSUPPORTED);
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
