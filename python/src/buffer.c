/* weft.Buffer: memory on one device, with a shape and an element type so that it can be handed
 * to NumPy, CuPy and PyTorch without a copy (buffer_export.c), or made from their arrays without
 * one (buffer_import.c).
 *
 * Ordering: every weft operation on a buffer is ordered after its last user stream (weft/gpu.h).
 * Reading it on the host (download, the array interface, DLPack on a CPU device) first waits for
 * that stream: wfpy_buffer_host_sync makes the device's current stream wait for the buffer's last
 * user (wf_buffer_touch) and synchronises it. */
#include "wfpy.h"

static const struct {
  const char *name;
  char kind;
  int size;
} dtypes[] = {{"float32", 'f', 4}, {"float64", 'f', 8}, {"float16", 'f', 2}, {"int8", 'i', 1},
              {"int16", 'i', 2},   {"int32", 'i', 4},   {"int64", 'i', 8},   {"uint8", 'u', 1},
              {"uint16", 'u', 2},  {"uint32", 'u', 4},  {"uint64", 'u', 8},  {"bool", 'b', 1}};

static const char *dtype_name(char kind, int size) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].kind == kind && dtypes[i].size == size) return dtypes[i].name;
  return "?";
}

int wfpy_dtype_parse(PyObject *dtype, char *kind, int *itemsize) {
  PyObject *s = PyObject_Str(dtype); /* 'float32', numpy.dtype('float32'), torch.float32 */
  if (!s) return -1;
  const char *name = PyUnicode_AsUTF8(s);
  if (!name) {
    Py_DECREF(s);
    return -1;
  }
  if (!strncmp(name, "torch.", 6)) name += 6;
  /* typestr forms: '<f4', 'f4', '|u1' */
  char k = 0;
  int size = 0;
  const char *t = (*name == '<' || *name == '|' || *name == '=') ? name + 1 : name;
  if (strchr("fiub", t[0]) && t[1] >= '1' && t[1] <= '8' && !t[2]) k = t[0], size = t[1] - '0';
  for (size_t i = 0; !k && i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (!strcmp(dtypes[i].name, name)) k = dtypes[i].kind, size = dtypes[i].size;
  if (!k || !strcmp(dtype_name(k, size), "?")) {
    PyErr_Format(PyExc_TypeError,
                 "dtype '%s' is not supported (float16/32/64, int8..64, uint8..64, bool)", name);
    Py_DECREF(s);
    return -1;
  }
  Py_DECREF(s);
  *kind = k;
  *itemsize = size;
  return 0;
}

PyObject *wfpy_buffer_typestr(const wfpy_Buffer *b) {
  return PyUnicode_FromFormat("%c%c%d", b->itemsize == 1 ? '|' : '<', b->kind, b->itemsize);
}

size_t wfpy_buffer_count(const wfpy_Buffer *b) {
  size_t n = 1;
  for (int i = 0; i < b->ndim; i++)
    n *= (size_t)b->shape[i];
  return n;
}

static int parse_shape(PyObject *shape, wfpy_Buffer *b) {
  if (PyLong_Check(shape)) {
    b->ndim = 1;
    b->shape[0] = PyLong_AsSsize_t(shape);
    if (b->shape[0] < 0) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "shape: negative size");
      return -1;
    }
    return 0;
  }
  PyObject *fast = PySequence_Fast(shape, "shape: expected an int or a tuple of ints");
  if (!fast) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > WFPY_MAX_DIMS) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "shape: at most %d dimensions", WFPY_MAX_DIMS);
    return -1;
  }
  b->ndim = (int)n;
  for (Py_ssize_t i = 0; i < n; i++) {
    b->shape[i] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fast, i));
    if (b->shape[i] < 0) {
      Py_DECREF(fast);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "shape: negative size");
      return -1;
    }
  }
  Py_DECREF(fast);
  return 0;
}

int wfpy_buffer_host_sync(wfpy_Buffer *b) {
  wf_stream *cur = wf_device_stream(wf_buffer_device(b->b));
  if (wf_stream_is_capturing(cur)) {
    wfpy_raise_msg(WF_ERR_CAPTURE,
                   "weft.Buffer: reading a buffer on the host waits for the device, which cannot "
                   "happen while its stream is being captured; read it after the capture (after "
                   "Graph.launch), or copy it into a pinned buffer inside the capture");
    return -1;
  }
  wf_status st = wf_buffer_touch(b->b, cur);
  if (st == WF_OK) {
    Py_BEGIN_ALLOW_THREADS st = wf_stream_synchronize(cur);
    Py_END_ALLOW_THREADS
  }
  if (st < 0) {
    wfpy_raise(st);
    return -1;
  }
  return 0;
}

static PyObject *buffer_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
  static char *kws[] = {"shape", "dtype", "device", "stream", "zero", "pinned", NULL};
  PyObject *shape, *dtype = NULL, *dev = Py_None, *so = Py_None;
  int zero = 0, pinned = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOpp", kws, &shape, &dtype, &dev, &so, &zero,
                                   &pinned))
    return NULL;
  wfpy_Buffer *b = (wfpy_Buffer *)t->tp_alloc(t, 0);
  if (!b) return NULL;
  b->kind = 'f';
  b->itemsize = 4;
  wf_device *d;
  wf_stream *s;
  if (parse_shape(shape, b) < 0 || (dtype && wfpy_dtype_parse(dtype, &b->kind, &b->itemsize) < 0) ||
      !(d = wfpy_device_arg(dev)) || wfpy_stream_arg(so, &s) < 0 ||
      !(b->device = wfpy_device_new(d))) {
    Py_DECREF(b);
    return NULL;
  }
  unsigned flags = (zero ? WF_BUFFER_ZERO : 0) | (pinned ? WF_BUFFER_PINNED : 0);
  wf_status st = wf_buffer_create(d, wfpy_buffer_count(b) * (size_t)b->itemsize, flags, s, &b->b);
  if (st < 0) {
    Py_DECREF(b);
    return wfpy_raise(st);
  }
  return (PyObject *)b;
}

static void buffer_dealloc(PyObject *self) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  if (b->weakrefs) PyObject_ClearWeakRefs(self);
  if (b->b) {
    /* Foreign memory: its owner goes below, so weft's pending work on it must be done first. */
    if ((b->owner || b->dl_imported) &&
        !wf_stream_is_capturing(wf_device_stream(wf_buffer_device(b->b)))) {
      wf_stream *cur = wf_device_stream(wf_buffer_device(b->b));
      if (wf_buffer_touch(b->b, cur) == WF_OK) {
        Py_BEGIN_ALLOW_THREADS wf_stream_synchronize(cur);
        Py_END_ALLOW_THREADS
      }
    }
    wf_buffer_destroy(b->b, NULL);
  }
  if (b->dl_imported && b->dl_imported->deleter) b->dl_imported->deleter(b->dl_imported);
  Py_XDECREF(b->owner);
  Py_XDECREF(b->device);
  Py_TYPE(self)->tp_free(self);
}

static PyObject *buffer_repr(PyObject *self) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  PyObject *shape = PyObject_GetAttrString(self, "shape");
  if (!shape) return NULL;
  PyObject *r = PyUnicode_FromFormat(
      "weft.Buffer(shape=%R, dtype=%s, device=%s%s)", shape, dtype_name(b->kind, b->itemsize),
      wf_device_name(wf_buffer_device(b->b)), b->owner || b->dl_imported ? ", wrapped" : "");
  Py_DECREF(shape);
  return r;
}

static PyObject *buffer_upload(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"data", "offset", "stream", NULL};
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  PyObject *data, *so = Py_None;
  Py_ssize_t off = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|nO", kws, &data, &off, &so)) return NULL;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_upload(b->b, (size_t)off, view.buf, (size_t)view.len, s);
  Py_END_ALLOW_THREADS PyBuffer_Release(&view);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *buffer_download(PyObject *self, PyObject *unused) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np) return NULL;
  PyObject *shape = PyObject_GetAttrString(self, "shape");
  PyObject *ts = wfpy_buffer_typestr(b);
  PyObject *arr = shape && ts ? PyObject_CallMethod(np, "empty", "OO", shape, ts) : NULL;
  Py_DECREF(np);
  Py_XDECREF(shape);
  Py_XDECREF(ts);
  if (!arr) return NULL;
  Py_buffer view;
  if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = wf_download(view.buf, b->b, 0, (size_t)view.len);
  Py_END_ALLOW_THREADS PyBuffer_Release(&view);
  if (st < 0) {
    Py_DECREF(arr);
    return wfpy_raise(st);
  }
  return arr;
}

static PyObject *buffer_copy_from(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"src", "stream", NULL};
  PyObject *src, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O", kws, &wfpy_BufferType, &src, &so)) return NULL;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  wfpy_Buffer *d = (wfpy_Buffer *)self, *o = (wfpy_Buffer *)src;
  size_t n = wf_buffer_size(o->b);
  if (n != wf_buffer_size(d->b))
    return PyErr_Format(PyExc_ValueError, "copy_from: %zu bytes into a buffer of %zu", n,
                        wf_buffer_size(d->b));
  wf_status st = wf_copy(d->b, 0, o->b, 0, n, s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *buffer_fill_bytes(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"value", "stream", NULL};
  int value = 0;
  PyObject *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|iO", kws, &value, &so)) return NULL;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  wf_status st = wf_memset(b->b, value, 0, wf_buffer_size(b->b), s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *buffer_synchronize(PyObject *self, PyObject *unused) {
  if (wfpy_buffer_host_sync((wfpy_Buffer *)self) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *buffer_touch(PyObject *self, PyObject *arg) {
  wf_stream *s;
  if (wfpy_stream_arg(arg, &s) < 0) return NULL;
  if (!s) return PyErr_Format(PyExc_TypeError, "touch: expected a weft.Stream");
  wf_status st = wf_buffer_touch(((wfpy_Buffer *)self)->b, s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

/* np.asarray reaches this only when __array_interface__ is absent: a CUDA buffer. Without it
 * NumPy would silently make a 0-d object array. */
static PyObject *buffer_array(PyObject *self, PyObject *args, PyObject *kw) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  return PyErr_Format(PyExc_TypeError,
                      "weft.Buffer on %s is device memory, which NumPy cannot view: use "
                      "download() for a host copy (after the buffer's pending work), or CuPy / "
                      "PyTorch through __cuda_array_interface__ or DLPack",
                      wf_device_name(wf_buffer_device(b->b)));
}

static PyObject *buffer_get_ptr(PyObject *self, void *c) {
  return PyLong_FromVoidPtr(wf_buffer_ptr(((wfpy_Buffer *)self)->b));
}
static PyObject *buffer_get_nbytes(PyObject *self, void *c) {
  return PyLong_FromSize_t(wf_buffer_size(((wfpy_Buffer *)self)->b));
}
static PyObject *buffer_get_shape(PyObject *self, void *c) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  PyObject *t = PyTuple_New(b->ndim);
  for (int i = 0; t && i < b->ndim; i++)
    PyTuple_SET_ITEM(t, i, PyLong_FromSsize_t(b->shape[i]));
  return t;
}
static PyObject *buffer_get_dtype(PyObject *self, void *c) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  return PyUnicode_FromString(dtype_name(b->kind, b->itemsize));
}
static PyObject *buffer_get_device(PyObject *self, void *c) {
  return Py_NewRef(((wfpy_Buffer *)self)->device);
}
static PyObject *buffer_get_owner(PyObject *self, void *c) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  return Py_NewRef(b->owner ? b->owner : Py_None);
}

static PyMethodDef buffer_methods[] = {
    {"from_array", (PyCFunction)(void (*)(void))wfpy_buffer_from_array,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Buffer.from_array(obj, device=None): wrap an array's memory without copying (DLPack, "
     "__cuda_array_interface__ or __array_interface__); the Buffer keeps obj alive."},
    {"upload", (PyCFunction)(void (*)(void))buffer_upload, METH_VARARGS | METH_KEYWORDS,
     "upload(data, offset=0, stream=None): copy a C-contiguous host array's bytes in."},
    {"download", buffer_download, METH_NOARGS,
     "download() -> numpy array: a copy, after the buffer's pending work."},
    {"copy_from", (PyCFunction)(void (*)(void))buffer_copy_from, METH_VARARGS | METH_KEYWORDS,
     "copy_from(src, stream=None): wf_copy of every byte (any devices; ordered)."},
    {"fill_bytes", (PyCFunction)(void (*)(void))buffer_fill_bytes, METH_VARARGS | METH_KEYWORDS,
     "fill_bytes(value=0, stream=None): wf_memset of every byte."},
    {"synchronize", buffer_synchronize, METH_NOARGS,
     "Waits on the host for the work weft queued on the buffer."},
    {"touch", buffer_touch, METH_O,
     "touch(stream): work on stream (e.g. a foreign kernel) used the buffer: later weft work on "
     "it waits for that stream."},
    {"__array__", (PyCFunction)(void (*)(void))buffer_array, METH_VARARGS | METH_KEYWORDS,
     "Refuses: reached only for device memory (CPU buffers have __array_interface__)."},
    {"__dlpack__", (PyCFunction)(void (*)(void))wfpy_buffer_dlpack, METH_VARARGS | METH_KEYWORDS,
     "DLPack export (zero-copy)."},
    {"__dlpack_device__", wfpy_buffer_dlpack_device, METH_NOARGS, "(device type, device id)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef buffer_getset[] = {
    {"ptr", buffer_get_ptr, NULL, "the memory's address on its device", NULL},
    {"nbytes", buffer_get_nbytes, NULL, "size in bytes", NULL},
    {"shape", buffer_get_shape, NULL, "tuple of sizes", NULL},
    {"dtype", buffer_get_dtype, NULL, "element type name ('float32')", NULL},
    {"device", buffer_get_device, NULL, "the weft.Device", NULL},
    {"owner", buffer_get_owner, NULL, "the object whose memory a wrapped buffer uses", NULL},
    {"__array_interface__", wfpy_buffer_array_interface, NULL, "NumPy array interface v3", NULL},
    {"__cuda_array_interface__", wfpy_buffer_cuda_array_interface, NULL, "CUDA array interface v3",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* The buffer protocol (memoryview, mpi4py, struct): CPU buffers only, after a host wait, as
 * __array_interface__. */
static int buffer_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  if (wf_device_is_cuda(wf_buffer_device(b->b))) {
    PyErr_Format(PyExc_BufferError,
                 "weft.Buffer on %s is device memory: use __cuda_array_interface__ / DLPack, or "
                 "download()",
                 wf_device_name(wf_buffer_device(b->b)));
    return -1;
  }
  if (wfpy_buffer_host_sync(b) < 0) return -1;
  static const char *const ints[] = {"b", "h", "i", "q"}, *const uints[] = {"B", "H", "I", "Q"},
                           *const floats[] = {"", "e", "f", "d"};
  int lg = b->itemsize == 1 ? 0 : b->itemsize == 2 ? 1 : b->itemsize == 4 ? 2 : 3;
  const char *fmt = b->kind == 'b'   ? "?"
                    : b->kind == 'f' ? floats[lg]
                    : b->kind == 'u' ? uints[lg]
                                     : ints[lg];
  view->buf = wf_buffer_ptr(b->b);
  view->obj = Py_NewRef(self);
  view->len = (Py_ssize_t)(wfpy_buffer_count(b) * (size_t)b->itemsize);
  view->readonly = 0;
  view->itemsize = b->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
  view->ndim = b->ndim;
  view->shape = (flags & PyBUF_ND) ? b->shape : NULL;
  view->strides = NULL; /* C-contiguous */
  view->suboffsets = NULL;
  view->internal = NULL;
  return 0;
}

static PyBufferProcs buffer_as_buffer = {buffer_getbuffer, NULL};

PyTypeObject wfpy_BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Buffer",
    .tp_basicsize = sizeof(wfpy_Buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Buffer(shape, dtype='float32', device=None, stream=None, zero=False, "
              "pinned=False): memory on a weft device, stream-ordered.",
    .tp_new = buffer_new,
    .tp_dealloc = buffer_dealloc,
    .tp_repr = buffer_repr,
    .tp_methods = buffer_methods,
    .tp_getset = buffer_getset,
    .tp_weaklistoffset = offsetof(wfpy_Buffer, weakrefs),
    .tp_as_buffer = &buffer_as_buffer,
};
