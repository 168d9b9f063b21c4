/* The methods weft.Particles and weft.Cloth share (colliders, their poses and forces, stepping):
 * one body each, called with the type's table of libweft calls (wfpy_solver_ops), so the
 * argument parsing, the released GIL and the error paths are written once for both solvers. */
#include "wfpy.h"

/* A dict argument or keyword arguments, not both: the one given (new reference; None if neither).
 */
PyObject *wfpy_dict_or_kw(PyObject *dict, PyObject *kw, const char *what) {
  int has_kw = kw && PyDict_Size(kw) > 0;
  if (has_kw && dict != Py_None)
    return PyErr_Format(PyExc_TypeError, "%s: give a dict or keyword arguments, not both", what);
  return Py_NewRef(has_kw ? kw : dict);
}

PyObject *wfpy_solver_add_collider(const wfpy_solver_ops *ops, void *h, PyObject *args,
                                   PyObject *kw) {
  PyObject *dict = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &dict)) return NULL;
  PyObject *d = wfpy_dict_or_kw(dict, kw, "add_collider");
  wf_collider_desc c;
  wfpy_collider_extra extra;
  int bad = !d || wfpy_collider_desc(d, &c, &extra) < 0;
  uint32_t index = 0;
  wf_status st = bad ? WF_OK : ops->add_collider(h, &c, &index);
  if (!bad) wfpy_collider_extra_free(&extra);
  Py_XDECREF(d);
  if (bad) return NULL;
  if (st < 0) return wfpy_raise(st);
  return PyLong_FromUnsignedLong(index);
}

PyObject *wfpy_solver_set_collider_pose(const wfpy_solver_ops *ops, void *h, PyObject *args,
                                        PyObject *kw) {
  unsigned index;
  PyObject *dict = Py_None;
  if (!PyArg_ParseTuple(args, "I|O", &index, &dict)) return NULL;
  PyObject *d = wfpy_dict_or_kw(dict, kw, "set_collider_pose");
  wf_collider_pose p;
  int bad = !d || wfpy_collider_pose(d, &p) < 0;
  Py_XDECREF(d);
  if (bad) return NULL;
  wf_status st = ops->set_collider_pose(h, index, &p);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

/* (force N, torque N·m) on collider `arg` over the last frame; waits for it (GIL released) */
PyObject *wfpy_solver_collider_force(const wfpy_solver_ops *ops, void *h, PyObject *arg) {
  unsigned long k = PyLong_AsUnsignedLong(arg);
  if (PyErr_Occurred()) return NULL;
  double f[3], t[3];
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = ops->collider_force(h, (uint32_t)k, f, t);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  return Py_BuildValue("((ddd)(ddd))", f[0], f[1], f[2], t[0], t[1], t[2]);
}

/* step(frames=1): the GIL is released, since a frame on a CPU device may run on this thread */
PyObject *wfpy_solver_step(const wfpy_solver_ops *ops, void *h, PyObject *args) {
  int frames = 1;
  if (!PyArg_ParseTuple(args, "|i", &frames)) return NULL;
  wf_status st;
  Py_BEGIN_ALLOW_THREADS st = ops->step_frames(h, frames);
  Py_END_ALLOW_THREADS if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}

/* step_substeps(n=1): kernel by kernel, so that it can be captured; the GIL stays held (the
 * launches only enqueue) */
PyObject *wfpy_solver_step_substeps(const wfpy_solver_ops *ops, void *h, PyObject *args) {
  int n = 1;
  if (!PyArg_ParseTuple(args, "|i", &n)) return NULL;
  wf_status st = ops->step_substeps(h, n);
  if (st < 0) return wfpy_raise(st);
  Py_RETURN_NONE;
}
