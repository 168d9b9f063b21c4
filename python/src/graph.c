/* weft.Graph and the capture functions under `with weft.capture(stream) as g:` (weft/__init__.py).
 * A graph keeps its origin stream's object alive, and the objects given to Graph.keep (buffers
 * whose memory its work uses: weft keeps its own buffers alive, not a wrapped array's owner). */
#include "wfpy.h"

static PyObject *graph_alloc(wf_graph *g, PyObject *stream) {
  wfpy_Graph *o = PyObject_GC_New(wfpy_Graph, &wfpy_GraphType);
  if (!o) return NULL;
  o->g = g;
  o->stream = Py_NewRef(stream);
  o->keep = PyList_New(0);
  if (!o->keep) {
    Py_DECREF(o);
    return NULL;
  }
  PyObject_GC_Track(o);
  return (PyObject *)o;
}

static PyObject *py_capture_begin(PyObject *self, PyObject *arg) {
  wf_stream *s;
  if (wfpy_stream_arg(arg, &s) < 0) return NULL;
  if (!s) return PyErr_Format(PyExc_TypeError, "capture_begin: expected a weft.Stream");
  wf_status st = wf_capture_begin(s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_capture_end(PyObject *self, PyObject *arg) {
  wf_stream *s;
  if (wfpy_stream_arg(arg, &s) < 0) return NULL;
  if (!s) return PyErr_Format(PyExc_TypeError, "capture_end: expected a weft.Stream");
  wf_graph *g = NULL;
  wf_status st = wf_capture_end(s, &g);
  if (st < 0) return wfpy_raise(st);
  PyObject *o = graph_alloc(g, arg);
  if (!o) wf_graph_destroy(g);
  return o;
}

PyMethodDef wfpy_graph_functions[] = {
    {"capture_begin", py_capture_begin, METH_O,
     "capture_begin(stream): record the work queued on stream instead of running it."},
    {"capture_end", py_capture_end, METH_O, "capture_end(stream) -> weft.Graph."},
    {NULL, NULL, 0, NULL}};

static int graph_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((wfpy_Graph *)self)->stream);
  Py_VISIT(((wfpy_Graph *)self)->keep);
  return 0;
}

static int graph_clear(PyObject *self) {
  Py_CLEAR(((wfpy_Graph *)self)->keep);
  return 0;
}

static void graph_dealloc(PyObject *self) {
  wfpy_Graph *o = (wfpy_Graph *)self;
  PyObject_GC_UnTrack(self);
  wf_graph_destroy(o->g); /* before the stream and the kept buffers go */
  o->g = NULL;
  Py_CLEAR(o->keep);
  Py_CLEAR(o->stream);
  PyObject_GC_Del(self);
}

static PyObject *graph_launch(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kws[] = {"stream", "count", NULL};
  PyObject *so = Py_None;
  int count = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oi", kws, &so, &count)) return NULL;
  wfpy_Graph *o = (wfpy_Graph *)self;
  wf_stream *s;
  if (wfpy_stream_arg(so, &s) < 0) return NULL;
  if (!o->g) return PyErr_Format(PyExc_ValueError, "Graph.launch: the graph was closed");
  wf_status st = WF_OK;
  for (int i = 0; i < count && st >= 0; i++)
    st = wf_graph_launch(o->g, s);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject *graph_keep(PyObject *self, PyObject *obj) {
  wfpy_Graph *o = (wfpy_Graph *)self;
  if (!o->keep || PyList_Append(o->keep, obj) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *graph_close(PyObject *self, PyObject *unused) {
  wfpy_Graph *o = (wfpy_Graph *)self;
  wf_graph_destroy(o->g);
  o->g = NULL;
  Py_RETURN_NONE;
}

static PyObject *graph_get_nodes(PyObject *self, void *c) {
  return PyLong_FromSize_t(wf_graph_node_count(((wfpy_Graph *)self)->g));
}
static PyObject *graph_get_stream(PyObject *self, void *c) {
  return Py_NewRef(((wfpy_Graph *)self)->stream);
}

static PyMethodDef graph_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))graph_launch, METH_VARARGS | METH_KEYWORDS,
     "launch(stream=None, count=1): replay the captured work (None: the origin stream)."},
    {"keep", graph_keep, METH_O,
     "keep(obj): hold obj (e.g. a wrapped Buffer) while the graph lives."},
    {"close", graph_close, METH_NOARGS, "Frees the graph now."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef graph_getset[] = {
    {"node_count", graph_get_nodes, NULL, "work items recorded", NULL},
    {"stream", graph_get_stream, NULL, "the capture's origin stream", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject wfpy_GraphType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "weft.Graph",
    .tp_basicsize = sizeof(wfpy_Graph),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Captured work, replayed with launch(). Made by weft.capture(stream).",
    .tp_dealloc = graph_dealloc,
    .tp_traverse = graph_traverse,
    .tp_clear = graph_clear,
    .tp_methods = graph_methods,
    .tp_getset = graph_getset,
};
