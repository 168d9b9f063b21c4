/* weft.Device: a handle the library owns (valid until shutdown), so the object only points at
 * it. Equal devices compare equal and hash alike. */
#include "wfpy.h"

PyObject *wfpy_device_new(wf_device *d) {
  wfpy_Device *o = PyObject_New(wfpy_Device, &wfpy_DeviceType);
  if (o) o->dev = d;
  return (PyObject *)o;
}

static PyObject *device_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
  PyObject *name = Py_None;
  static char *kws[] = {"name", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kws, &name)) return NULL;
  wf_device *d = wfpy_device_arg(name);
  return d ? wfpy_device_new(d) : NULL;
}

static void device_dealloc(PyObject *self) { PyObject_Free(self); }

static PyObject *device_repr(PyObject *self) {
  return PyUnicode_FromFormat("weft.Device('%s')", wf_device_name(((wfpy_Device *)self)->dev));
}
static PyObject *device_str(PyObject *self) {
  return PyUnicode_FromString(wf_device_name(((wfpy_Device *)self)->dev));
}
static Py_hash_t device_hash(PyObject *self) { return _Py_HashPointer(((wfpy_Device *)self)->dev); }
static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, &wfpy_DeviceType) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  int eq = ((wfpy_Device *)a)->dev == ((wfpy_Device *)b)->dev;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *device_get_name(PyObject *self, void *c) { return device_str(self); }
static PyObject *device_get_is_cuda(PyObject *self, void *c) {
  return PyBool_FromLong(wf_device_is_cuda(((wfpy_Device *)self)->dev));
}
static PyObject *device_get_ordinal(PyObject *self, void *c) {
  return PyLong_FromLong(wf_device_ordinal(((wfpy_Device *)self)->dev));
}
static PyObject *device_get_stream(PyObject *self, void *c) {
  return wfpy_stream_borrowed(wf_device_stream(((wfpy_Device *)self)->dev));
}

static PyObject *device_synchronize(PyObject *self, PyObject *unused) {
  wf_status st;
  wf_device *d = ((wfpy_Device *)self)->dev;
  Py_BEGIN_ALLOW_THREADS st = wf_device_synchronize(d);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *device_info(PyObject *self, PyObject *unused) {
  wf_device_info in;
  wf_status st = wf_device_info_get(((wfpy_Device *)self)->dev, &in);
  if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("{s:s,s:s,s:O,s:i,s:(ii),s:i,s:n,s:n,s:n}", "name", in.name, "product",
                       in.product, "is_cuda", in.is_cuda ? Py_True : Py_False, "ordinal",
                       in.ordinal, "compute_capability", in.cc_major, in.cc_minor,
                       "multiprocessors", in.multiprocessors, "total_memory",
                       (Py_ssize_t)in.total_memory, "free_memory", (Py_ssize_t)in.free_memory,
                       "allocated", (Py_ssize_t)in.allocated);
}

static PyObject *device_set_stream(PyObject *self, PyObject *arg) {
  wf_stream *s;
  if (wfpy_stream_arg(arg, &s) < 0) return NULL;
  wf_status st = wf_device_set_stream(((wfpy_Device *)self)->dev, s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyMethodDef device_methods[] = {
    {"synchronize", device_synchronize, METH_NOARGS, "Waits for every stream of the device."},
    {"info", device_info, METH_NOARGS, "A dict of wf_device_info's facts."},
    {"set_stream", device_set_stream, METH_O,
     "Makes a weft.Stream the device's current stream (None: the default one)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef device_getset[] = {
    {"name", device_get_name, NULL, "'cpu:0', 'cuda:1', ...", NULL},
    {"is_cuda", device_get_is_cuda, NULL, "True for a CUDA device", NULL},
    {"ordinal", device_get_ordinal, NULL, "N of cpu:N / cuda:N", NULL},
    {"stream", device_get_stream, NULL, "the device's current stream (not owned)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_DeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Device",
    .tp_basicsize = sizeof(wfpy_Device),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device(name=None): a weft device, 'cpu:N' or 'cuda:N' (None: the default one).",
    .tp_new = device_new,
    .tp_dealloc = device_dealloc,
    .tp_repr = device_repr,
    .tp_str = device_str,
    .tp_hash = device_hash,
    .tp_richcompare = device_richcompare,
    .tp_methods = device_methods,
    .tp_getset = device_getset,
};
