/* weft.Stream and weft.Event. A Stream made here (Stream(device)) or adopted from another
 * library's CUDA stream (Stream.wrap(device, handle, owner=...)) is destroyed with its object;
 * a device's own stream (Device.stream) is only borrowed. A wrapped stream keeps `owner` (e.g.
 * the torch.cuda.Stream) alive, since weft may wait on the handle until the object goes. */
#include "wfpy.h"

PyObject *wfpy_stream_borrowed(wf_stream *s) {
  wfpy_Stream *o = PyObject_New(wfpy_Stream, &wfpy_StreamType);
  if (!o) return NULL;
  o->s = s;
  o->device = wfpy_device_new(wf_stream_device(s));
  o->owner = NULL;
  o->owned = 0;
  if (!o->device) {
    Py_DECREF(o);
    return NULL;
  }
  return (PyObject *)o;
}

static PyObject *stream_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
  static char *kws[] = {"device", "priority", NULL};
  PyObject *dev = Py_None;
  int priority = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oi", kws, &dev, &priority)) return NULL;
  wf_device *d = wfpy_device_arg(dev);
  if (!d) return NULL;
  wf_stream *s = NULL;
  wf_status st = wf_stream_create(d, priority, &s);
  if (st < 0) return wfpy_raise(st);
  wfpy_Stream *o = (wfpy_Stream *)wfpy_stream_borrowed(s);
  if (!o) {
    wf_stream_destroy(s);
    return NULL;
  }
  o->owned = 1;
  return (PyObject *)o;
}

static PyObject *stream_wrap(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kws[] = {"device", "handle", "owner", NULL};
  PyObject *dev, *owner = Py_None;
  unsigned long long handle;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OK|O", kws, &dev, &handle, &owner)) return NULL;
  wf_device *d = wfpy_device_arg(dev);
  if (!d) return NULL;
  wf_stream *s = NULL;
  wf_status st = wf_stream_wrap(d, (void *)(uintptr_t)handle, &s);
  if (st < 0) return wfpy_raise(st);
  wfpy_Stream *o = (wfpy_Stream *)wfpy_stream_borrowed(s);
  if (!o) {
    wf_stream_destroy(s);
    return NULL;
  }
  o->owned = 1;
  if (owner != Py_None) o->owner = Py_NewRef(owner);
  return (PyObject *)o;
}

static void stream_dealloc(PyObject *self) {
  wfpy_Stream *o = (wfpy_Stream *)self;
  if (o->owned && o->s) wf_stream_destroy(o->s);
  Py_XDECREF(o->device);
  Py_XDECREF(o->owner);
  PyObject_Free(self);
}

static PyObject *stream_repr(PyObject *self) {
  wfpy_Stream *o = (wfpy_Stream *)self;
  return PyUnicode_FromFormat("weft.Stream(%s, %p%s)", wf_device_name(wf_stream_device(o->s)),
                              (void *)o->s, o->owned ? "" : ", borrowed");
}

static Py_hash_t stream_hash(PyObject *self) { return _Py_HashPointer(((wfpy_Stream *)self)->s); }
static PyObject *stream_richcompare(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, &wfpy_StreamType) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  int eq = ((wfpy_Stream *)a)->s == ((wfpy_Stream *)b)->s;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *stream_synchronize(PyObject *self, PyObject *unused) {
  wf_status st;
  wf_stream *s = ((wfpy_Stream *)self)->s;
  Py_BEGIN_ALLOW_THREADS st = wf_stream_synchronize(s);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *stream_query(PyObject *self, PyObject *unused) {
  wf_status st = wf_stream_query(((wfpy_Stream *)self)->s);
  if (st < 0) return wfpy_raise(st);
  return PyBool_FromLong(st == WF_OK);
}

static PyObject *stream_wait_event(PyObject *self, PyObject *arg) {
  if (!PyObject_TypeCheck(arg, &wfpy_EventType))
    return PyErr_Format(PyExc_TypeError, "wait_event: expected a weft.Event");
  wf_status st = wf_stream_wait_event(((wfpy_Stream *)self)->s, ((wfpy_Event *)arg)->e);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *stream_wait_stream(PyObject *self, PyObject *arg) {
  wf_stream *other;
  if (wfpy_stream_arg(arg, &other) < 0) return NULL;
  if (!other) return PyErr_Format(PyExc_TypeError, "wait_stream: expected a weft.Stream");
  wf_status st = wf_stream_wait_stream(((wfpy_Stream *)self)->s, other);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *stream_push(PyObject *self, PyObject *unused) {
  wf_status st = wf_stream_push(((wfpy_Stream *)self)->s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *stream_pop(PyObject *self, PyObject *unused) {
  wf_status st = wf_stream_pop(wf_stream_device(((wfpy_Stream *)self)->s));
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *stream_get_device(PyObject *self, void *c) {
  return Py_NewRef(((wfpy_Stream *)self)->device);
}
static PyObject *stream_get_native(PyObject *self, void *c) {
  void *h = wf_stream_native(((wfpy_Stream *)self)->s);
  if (!h) Py_RETURN_NONE;
  return PyLong_FromVoidPtr(h);
}
static PyObject *stream_get_capturing(PyObject *self, void *c) {
  return PyBool_FromLong(wf_stream_is_capturing(((wfpy_Stream *)self)->s));
}
static PyObject *stream_get_address(PyObject *self, void *c) {
  return PyLong_FromVoidPtr(((wfpy_Stream *)self)->s);
}

static PyMethodDef stream_methods[] = {
    {"wrap", (PyCFunction)(void (*)(void))stream_wrap, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Stream.wrap(device, handle, owner=None): adopt a cudaStream_t (an int, e.g. "
     "torch.cuda.current_stream().cuda_stream); owner is kept alive as long as the Stream."},
    {"synchronize", stream_synchronize, METH_NOARGS, "Waits until the stream's work is done."},
    {"query", stream_query, METH_NOARGS, "True when the stream's work is done."},
    {"wait_event", stream_wait_event, METH_O, "Later work waits for the event's recording."},
    {"wait_stream", stream_wait_stream, METH_O,
     "Later work waits for the other stream's work so far (forks/joins a capture)."},
    {"push", stream_push, METH_NOARGS, "Makes this the device's current stream (scoped)."},
    {"pop", stream_pop, METH_NOARGS, "Restores the device's previous current stream."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef stream_getset[] = {
    {"device", stream_get_device, NULL, "the weft.Device it runs on", NULL},
    {"native", stream_get_native, NULL, "the cudaStream_t as an int (None on CPU devices)", NULL},
    {"capturing", stream_get_capturing, NULL, "True while captured", NULL},
    {"address", stream_get_address, NULL, "the wf_stream* as an int", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Stream",
    .tp_basicsize = sizeof(wfpy_Stream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Stream(device=None, priority=0): an in-order queue of work on a device.",
    .tp_new = stream_new,
    .tp_dealloc = stream_dealloc,
    .tp_repr = stream_repr,
    .tp_hash = stream_hash,
    .tp_richcompare = stream_richcompare,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

/* ---- events ---- */

static PyObject *event_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
  static char *kws[] = {"device", "timing", NULL};
  PyObject *dev = Py_None;
  int timing = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", kws, &dev, &timing)) return NULL;
  wf_device *d = wfpy_device_arg(dev);
  if (!d) return NULL;
  wfpy_Event *o = PyObject_New(wfpy_Event, &wfpy_EventType);
  if (!o) return NULL;
  o->e = NULL;
  o->device = wfpy_device_new(d);
  wf_status st = wf_event_create(d, timing ? WF_EVENT_TIMING : 0, &o->e);
  if (st < 0 || !o->device) {
    Py_DECREF(o);
    return st < 0 ? wfpy_raise(st) : NULL;
  }
  return (PyObject *)o;
}

static void event_dealloc(PyObject *self) {
  wfpy_Event *o = (wfpy_Event *)self;
  wf_event_destroy(o->e);
  Py_XDECREF(o->device);
  PyObject_Free(self);
}

static PyObject *event_record(PyObject *self, PyObject *args) {
  PyObject *so = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &so)) return NULL;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  wf_status st = wf_event_record(((wfpy_Event *)self)->e, s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *event_query(PyObject *self, PyObject *unused) {
  wf_status st = wf_event_query(((wfpy_Event *)self)->e);
  if (st < 0) return wfpy_raise(st);
  return PyBool_FromLong(st == WF_OK);
}

static PyObject *event_synchronize(PyObject *self, PyObject *unused) {
  wf_status st;
  wf_event *e = ((wfpy_Event *)self)->e;
  Py_BEGIN_ALLOW_THREADS st = wf_event_synchronize(e);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *event_elapsed_ms(PyObject *self, PyObject *arg) {
  if (!PyObject_TypeCheck(arg, &wfpy_EventType))
    return PyErr_Format(PyExc_TypeError, "elapsed_ms: expected a weft.Event");
  float ms = 0;
  wf_status st = wf_event_elapsed_ms(((wfpy_Event *)self)->e, ((wfpy_Event *)arg)->e, &ms);
  if (st < 0) return wfpy_raise(st);
  return PyFloat_FromDouble(ms);
}

static PyMethodDef event_methods[] = {
    {"record", event_record, METH_VARARGS,
     "record(stream=None): mark the point after the work queued so far."},
    {"query", event_query, METH_NOARGS, "True when the recorded work is done."},
    {"synchronize", event_synchronize, METH_NOARGS, "Waits for the recorded work."},
    {"elapsed_ms", event_elapsed_ms, METH_O,
     "start.elapsed_ms(end): milliseconds between two timing events."},
    {NULL, NULL, 0, NULL}};

PyTypeObject wfpy_EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Event",
    .tp_basicsize = sizeof(wfpy_Event),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Event(device=None, timing=False): a marker in a stream's work.",
    .tp_new = event_new,
    .tp_dealloc = event_dealloc,
    .tp_methods = event_methods,
};
