/* A weft.Buffer seen by other libraries without a copy: NumPy's __array_interface__ (CPU
 * devices: their memory is host memory), the CUDA array interface v3 and DLPack.
 *
 * Ordering, per protocol:
 *  - __array_interface__ has no stream: the getter waits on the host for the buffer's pending
 *    weft work, so an array made from it reads what weft wrote. Work enqueued after that is not
 *    waited for by the array: call Buffer.synchronize() (or take the array again) before reading.
 *  - __cuda_array_interface__: "stream" is the device's current weft stream, which has been made
 *    to wait for the buffer's last user; the consumer orders itself after it (CAI v3).
 *  - __dlpack__(stream=s): CUDA: the consumer's stream s waits for the buffer's last user (no
 *    host wait); s None, 1 or 2 (the legacy streams): a host wait; -1: none. CPU: a host wait.
 * The exported tensor holds a reference to the Buffer, so the memory lives as long as any
 * array, tensor or capsule made from it. */
#include "wfpy.h"

static PyObject *no_attr(const char *what, const wfpy_Buffer *b, const char *instead) {
  return PyErr_Format(PyExc_AttributeError, "%s: the buffer lives on %s; %s", what,
                      wf_device_name(wf_buffer_device(b->b)), instead);
}

static PyObject *interface_dict(wfpy_Buffer *b) {
  PyObject *shape = PyObject_GetAttrString((PyObject *)b, "shape");
  PyObject *ts = wfpy_buffer_typestr(b);
  /* data: (address, read-only flag) */
  PyObject *d = shape && ts ? Py_BuildValue("{s:O,s:O,s:(NO),s:i,s:O}", "shape", shape, "typestr",
                                            ts, "data", PyLong_FromVoidPtr(wf_buffer_ptr(b->b)),
                                            Py_False, "version", 3, "strides", Py_None)
                            : NULL;
  Py_XDECREF(shape);
  Py_XDECREF(ts);
  return d;
}

PyObject *wfpy_buffer_array_interface(PyObject *self, void *closure) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  if (wf_device_is_cuda(wf_buffer_device(b->b)))
    return no_attr("__array_interface__", b,
                   "use __cuda_array_interface__ / DLPack, or download() for a host copy");
  if (wfpy_buffer_host_sync(b) < 0) return NULL;
  return interface_dict(b);
}

PyObject *wfpy_buffer_cuda_array_interface(PyObject *self, void *closure) {
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  wf_device *d = wf_buffer_device(b->b);
  if (!wf_device_is_cuda(d))
    return no_attr("__cuda_array_interface__", b, "use __array_interface__ or DLPack");
  wf_stream *cur = wf_device_stream(d);
  wf_status st = wf_buffer_touch(b->b, cur);
  if (st < 0) return wfpy_raise(st);
  PyObject *dict = interface_dict(b);
  PyObject *sv = dict ? PyLong_FromVoidPtr(wf_stream_native(cur)) : NULL;
  if (!sv || PyDict_SetItemString(dict, "stream", sv) < 0) Py_CLEAR(dict);
  Py_XDECREF(sv);
  return dict;
}

/* ---- DLPack ---- */

typedef struct {
  DLManagedTensor m;
  int64_t shape[WFPY_MAX_DIMS];
} dl_export;

static void dl_deleter(DLManagedTensor *m) {
  /* Consumers may call this from any thread, with or without the GIL. */
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF((PyObject *)m->manager_ctx);
  PyMem_RawFree(m);
  PyGILState_Release(g);
}

static void capsule_destructor(PyObject *cap) {
  /* Still named "dltensor": never consumed, so the producer frees it. */
  if (!PyCapsule_IsValid(cap, "dltensor")) return;
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter) m->deleter(m);
}

static uint8_t dl_code(char kind) {
  return kind == 'f' ? kDLFloat : kind == 'i' ? kDLInt : kind == 'u' ? kDLUInt : kDLBool;
}

static int order_for_consumer(wfpy_Buffer *b, PyObject *stream) {
  wf_device *d = wf_buffer_device(b->b);
  if (!wf_device_is_cuda(d)) {
    if (stream != Py_None) {
      PyErr_SetString(PyExc_BufferError, "__dlpack__: stream must be None for a CPU buffer");
      return -1;
    }
    return wfpy_buffer_host_sync(b);
  }
  long long s = -2;
  if (stream != Py_None) {
    s = PyLong_AsLongLong(stream);
    if (s == -1 && PyErr_Occurred()) return -1;
  }
  if (s == -1) return 0; /* the consumer orders it itself */
  if (s == -2 || s == 0 || s == 1 || s == 2) return wfpy_buffer_host_sync(b);
  wf_stream *cur = wf_device_stream(d), *w = NULL;
  wf_status st = wf_buffer_touch(b->b, cur);
  if (st == WF_OK) st = wf_stream_wrap(d, (void *)(uintptr_t)s, &w);
  if (st == WF_OK) st = wf_stream_wait_stream(w, cur);
  wf_stream_destroy(w);
  if (st < 0) {
    wfpy_raise(st);
    return -1;
  }
  return 0;
}

PyObject *wfpy_buffer_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO", kws, &stream, &max_version, &dl_device,
                                   &copy))
    return NULL;
  wfpy_Buffer *b = (wfpy_Buffer *)self;
  if (copy == Py_True) {
    PyErr_SetString(PyExc_BufferError, "__dlpack__: weft buffers are exported without a copy");
    return NULL;
  }
  PyObject *mine = wfpy_buffer_dlpack_device(self, NULL);
  if (!mine) return NULL;
  int other = dl_device != Py_None && PyObject_RichCompareBool(dl_device, mine, Py_NE) == 1;
  Py_DECREF(mine);
  if (other) {
    PyErr_SetString(PyExc_BufferError, "__dlpack__: dl_device differs from the buffer's device");
    return NULL;
  }
  if (order_for_consumer(b, stream) < 0) return NULL;
  dl_export *e = PyMem_RawCalloc(1, sizeof *e);
  if (!e) return PyErr_NoMemory();
  wf_device *d = wf_buffer_device(b->b);
  DLTensor *t = &e->m.dl_tensor;
  t->data = wf_buffer_ptr(b->b);
  t->device.device_type = wf_device_is_cuda(d) ? kDLCUDA : kDLCPU;
  t->device.device_id = wf_device_is_cuda(d) ? wf_device_ordinal(d) : 0;
  t->ndim = b->ndim;
  t->dtype.code = dl_code(b->kind);
  t->dtype.bits = (uint8_t)(8 * b->itemsize);
  t->dtype.lanes = 1;
  for (int i = 0; i < b->ndim; i++)
    e->shape[i] = b->shape[i];
  t->shape = e->shape;
  t->strides = NULL;
  t->byte_offset = 0;
  e->m.manager_ctx = Py_NewRef(self);
  e->m.deleter = dl_deleter;
  PyObject *cap = PyCapsule_New(&e->m, "dltensor", capsule_destructor);
  if (!cap) dl_deleter(&e->m);
  return cap;
}

PyObject *wfpy_buffer_dlpack_device(PyObject *self, PyObject *unused) {
  wf_device *d = wf_buffer_device(((wfpy_Buffer *)self)->b);
  if (wf_device_is_cuda(d)) return Py_BuildValue("(ii)", (int)kDLCUDA, wf_device_ordinal(d));
  return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}
