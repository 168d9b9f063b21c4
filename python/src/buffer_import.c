/* Buffer.from_array: a weft.Buffer over another library's memory, without a copy
 * (wf_buffer_wrap). Tried in order: DLPack (__dlpack__: the device comes with it; on CUDA the
 * producer is asked to order its work before the device's current weft stream), the CUDA array
 * interface (its "stream" is made to precede the current weft stream), NumPy's array interface
 * (host memory: a CPU device). Only C-contiguous memory can be wrapped; anything else raises
 * (make it contiguous first: that is the copy).
 *
 * Lifetime: the Buffer holds the source object (and, for DLPack, the managed tensor, released in
 * its dealloc), so the memory lives while the Buffer does. Freeing the Buffer first waits for
 * the weft work still queued on it. A graph that captured work on the buffer does not keep the
 * source alive: keep the Buffer as long as the graph. */
#include "wfpy.h"

static wfpy_Buffer *wrap_new(wf_device *d, void *ptr, char kind, int itemsize, int ndim,
                             const Py_ssize_t *shape, PyObject *owner) {
  wfpy_Buffer *b = (wfpy_Buffer *)wfpy_BufferType.tp_alloc(&wfpy_BufferType, 0);
  if (!b) return NULL;
  b->kind = kind;
  b->itemsize = itemsize;
  b->ndim = ndim;
  for (int i = 0; i < ndim; i++)
    b->shape[i] = shape[i];
  b->owner = Py_NewRef(owner);
  b->device = wfpy_device_new(d);
  if (!b->device) {
    Py_DECREF(b);
    return NULL;
  }
  wf_status st = wf_buffer_wrap(d, ptr, wfpy_buffer_count(b) * (size_t)itemsize, &b->b);
  if (st < 0) {
    Py_DECREF(b);
    wfpy_raise(st);
    return NULL;
  }
  return b;
}

static int contiguous(int ndim, const Py_ssize_t *shape, const int64_t *strides, int itemsize,
                      int strides_in_bytes) {
  if (!strides) return 1;
  int64_t expect = strides_in_bytes ? itemsize : 1;
  for (int i = ndim - 1; i >= 0; i--) {
    if (shape[i] != 1 && strides[i] != expect) return 0;
    expect *= shape[i];
  }
  return 1;
}

static int typestr_parse(PyObject *ts, char *kind, int *size) {
  const char *t = PyUnicode_Check(ts) ? PyUnicode_AsUTF8(ts) : NULL;
  if (!t) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "typestr: expected a string");
    return -1;
  }
  if (t[0] == '>') {
    PyErr_Format(PyExc_TypeError, "typestr '%s': big-endian data is not supported", t);
    return -1;
  }
  PyObject *s = PyUnicode_FromString(t);
  int r = s ? wfpy_dtype_parse(s, kind, size) : -1;
  Py_XDECREF(s);
  return r;
}

/* shape and strides from an interface dict (array interface: strides in bytes) */
static int interface_layout(PyObject *dict, int *ndim, Py_ssize_t *shape, int64_t *strides,
                            int *has_strides, char *kind, int *size, void **ptr) {
  PyObject *sh = PyDict_GetItemString(dict, "shape");
  PyObject *ts = PyDict_GetItemString(dict, "typestr");
  PyObject *data = PyDict_GetItemString(dict, "data");
  PyObject *st = PyDict_GetItemString(dict, "strides");
  if (!sh || !ts || !data || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) < 1) {
    PyErr_SetString(PyExc_TypeError, "array interface: needs shape, typestr and data (ptr, ro)");
    return -1;
  }
  if (PyDict_GetItemString(dict, "mask") && PyDict_GetItemString(dict, "mask") != Py_None) {
    PyErr_SetString(PyExc_TypeError, "array interface: masked arrays cannot be wrapped");
    return -1;
  }
  if (typestr_parse(ts, kind, size) < 0) return -1;
  Py_ssize_t n = PyTuple_Check(sh) ? PyTuple_GET_SIZE(sh) : -1;
  if (n < 0 || n > WFPY_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "array interface: shape must be a tuple of at most %d",
                 WFPY_MAX_DIMS);
    return -1;
  }
  *ndim = (int)n;
  for (Py_ssize_t i = 0; i < n; i++)
    shape[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sh, i));
  *has_strides = st && st != Py_None;
  for (Py_ssize_t i = 0; *has_strides && i < n; i++)
    strides[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(st, i));
  *ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  return PyErr_Occurred() ? -1 : 0;
}

static PyObject *from_interface(PyObject *obj, PyObject *dict, wf_device *d, int cuda) {
  int ndim, has_strides, size;
  Py_ssize_t shape[WFPY_MAX_DIMS];
  int64_t strides[WFPY_MAX_DIMS];
  char kind;
  void *ptr;
  if (interface_layout(dict, &ndim, shape, strides, &has_strides, &kind, &size, &ptr) < 0)
    return NULL;
  if (!contiguous(ndim, shape, has_strides ? strides : NULL, size, 1))
    return PyErr_Format(PyExc_ValueError,
                        "Buffer.from_array: only C-contiguous memory can be wrapped without a "
                        "copy (make the array contiguous first)");
  if (cuda != wf_device_is_cuda(d))
    return PyErr_Format(PyExc_ValueError, "Buffer.from_array: %s memory on device %s",
                        cuda ? "CUDA" : "host", wf_device_name(d));
  PyObject *so = cuda ? PyDict_GetItemString(dict, "stream") : NULL;
  if (so && so != Py_None) {
    /* CAI v3: the producer's work on the data is on that stream; weft's current stream waits. */
    void *handle = PyLong_AsVoidPtr(so);
    if (PyErr_Occurred()) return NULL;
    wf_stream *w = NULL;
    wf_status st = wf_stream_wrap(d, handle, &w);
    if (st == WF_OK) st = wf_stream_wait_stream(wf_device_stream(d), w);
    wf_stream_destroy(w);
    if (st < 0) return wfpy_raise(st);
  }
  return (PyObject *)wrap_new(d, ptr, kind, size, ndim, shape, obj);
}

static PyObject *from_dlpack(PyObject *obj, PyObject *dev_arg) {
  PyObject *dd = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  if (!dd) return NULL;
  int type = 0, id = 0;
  int ok = PyArg_ParseTuple(dd, "ii", &type, &id);
  Py_DECREF(dd);
  if (!ok) return NULL;
  wf_device *d;
  PyObject *cap;
  if (type == kDLCUDA || type == kDLCUDAManaged) {
    char name[32];
    snprintf(name, sizeof name, "cuda:%d", id);
    PyObject *n = PyUnicode_FromString(name);
    d = n ? wfpy_device_arg(n) : NULL;
    Py_XDECREF(n);
    if (!d) return NULL;
    void *native = wf_stream_native(wf_device_stream(d));
    PyObject *kw = Py_BuildValue("{s:N}", "stream", PyLong_FromVoidPtr(native));
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
    PyObject *noargs = PyTuple_New(0);
    cap = kw && meth && noargs ? PyObject_Call(meth, noargs, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(meth);
    Py_XDECREF(noargs);
  } else if (type == kDLCPU || type == kDLCUDAHost) {
    d = dev_arg == Py_None ? NULL : wfpy_device_arg(dev_arg);
    if (!d && dev_arg != Py_None) return NULL;
    if (!d && wf_device_get("cpu:0", &d) != WF_OK) return wfpy_raise(WF_ERR_DEVICE);
    if (wf_device_is_cuda(d))
      return PyErr_Format(PyExc_ValueError, "Buffer.from_array: host memory on device %s",
                          wf_device_name(d));
    cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  } else {
    return PyErr_Format(PyExc_BufferError, "Buffer.from_array: DLPack device type %d", type);
  }
  if (!cap) return NULL;
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  if (!m) {
    Py_DECREF(cap);
    return NULL;
  }
  DLTensor *t = &m->dl_tensor;
  Py_ssize_t shape[WFPY_MAX_DIMS];
  char kind = t->dtype.code == kDLFloat  ? 'f'
              : t->dtype.code == kDLInt  ? 'i'
              : t->dtype.code == kDLUInt ? 'u'
              : t->dtype.code == kDLBool ? 'b'
                                         : 0;
  int size = t->dtype.bits / 8;
  const char *why = NULL;
  if (t->ndim > WFPY_MAX_DIMS)
    why = "too many dimensions";
  else if (!kind || t->dtype.lanes != 1 || t->dtype.bits % 8)
    why = "unsupported dtype";
  for (int i = 0; !why && i < t->ndim; i++)
    shape[i] = (Py_ssize_t)t->shape[i];
  if (!why && !contiguous(t->ndim, shape, t->strides, size, 0))
    why = "only C-contiguous memory can be wrapped without a copy (call .contiguous() first)";
  if (why) {
    Py_DECREF(cap); /* still "dltensor": the capsule's destructor frees it */
    return PyErr_Format(PyExc_ValueError, "Buffer.from_array: %s", why);
  }
  PyCapsule_SetName(cap, "used_dltensor");
  Py_DECREF(cap); /* renamed: its destructor leaves m alone, the Buffer owns it now */
  wfpy_Buffer *b = wrap_new(d, (char *)t->data + t->byte_offset, kind, size, t->ndim, shape, obj);
  if (!b) {
    if (m->deleter) m->deleter(m);
    return NULL;
  }
  b->dl_imported = m;
  return (PyObject *)b;
}

PyObject *wfpy_buffer_from_array(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kws[] = {"obj", "device", NULL};
  PyObject *obj, *dev = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kws, &obj, &dev)) return NULL;
  if (PyObject_TypeCheck(obj, &wfpy_BufferType)) return Py_NewRef(obj);
  if (PyObject_HasAttrString(obj, "__dlpack__") &&
      PyObject_HasAttrString(obj, "__dlpack_device__")) {
    PyObject *r = from_dlpack(obj, dev);
    /* NumPy refuses read-only arrays over DLPack: fall through to the array interface */
    if (r || !PyErr_ExceptionMatches(PyExc_BufferError)) return r;
    PyErr_Clear();
  }
  PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  if (cai) {
    wf_device *d = wfpy_device_arg(dev);
    PyObject *r = d ? from_interface(obj, cai, d, 1) : NULL;
    Py_DECREF(cai);
    return r;
  }
  PyErr_Clear();
  PyObject *ai = PyObject_GetAttrString(obj, "__array_interface__");
  if (ai) {
    wf_device *d = NULL;
    if (dev == Py_None) {
      if (wf_device_get("cpu:0", &d) != WF_OK) d = NULL;
    } else {
      d = wfpy_device_arg(dev);
    }
    PyObject *r = d ? from_interface(obj, ai, d, 0) : NULL;
    Py_DECREF(ai);
    return r;
  }
  PyErr_Clear();
  return PyErr_Format(PyExc_TypeError,
                      "Buffer.from_array: %s has neither __dlpack__, __cuda_array_interface__ nor "
                      "__array_interface__",
                      Py_TYPE(obj)->tp_name);
}
