/* The weft extension module's shared declarations: the Python types over libweft's handles and
 * the helpers every file uses (status -> weft.Error, argument parsing of devices and streams).
 *
 * Ownership: a Python object owns the weft handle it created and frees it in its dealloc;
 * objects that depend on another (a stream on its device, a buffer wrapping foreign memory, a
 * graph and the streams it was captured on) hold a reference to it, so Python's collector never
 * frees a handle while something built on it lives. */
#ifndef WFPY_H
#define WFPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <weft/weft.h>

#include "dlpack.h"

enum { WFPY_MAX_DIMS = 8 };

extern PyObject *wfpy_Error; /* weft.Error: .status (int), .status_name, message = wf_last_error */

typedef struct {
  PyObject_HEAD wf_device *dev; /* owned by the library */
} wfpy_Device;

typedef struct {
  PyObject_HEAD wf_stream *s;
  PyObject *device; /* wfpy_Device */
  PyObject *owner;  /* wrapped streams: the Python object that gave the handle (may be NULL) */
  int owned;        /* 1: created or wrapped here, destroyed in dealloc; 0: a device's stream */
} wfpy_Stream;

typedef struct {
  PyObject_HEAD wf_event *e;
  PyObject *device;
} wfpy_Event;

typedef struct {
  PyObject_HEAD wf_buffer *b;
  PyObject *device;
  PyObject *owner;              /* foreign memory: the array/capsule it came from (kept alive) */
  DLManagedTensor *dl_imported; /* foreign DLPack memory: deleter called in dealloc */
  int ndim;
  Py_ssize_t shape[WFPY_MAX_DIMS];
  char kind; /* 'f' float, 'i' int, 'u' unsigned, 'b' bool */
  int itemsize;
  PyObject *weakrefs;
} wfpy_Buffer;

typedef struct {
  PyObject_HEAD wf_graph *g;
  PyObject *stream; /* the capture's origin stream */
  PyObject *keep;   /* list of objects the graph must keep alive (buffers used in it) */
} wfpy_Graph;

extern PyTypeObject wfpy_DeviceType, wfpy_StreamType, wfpy_EventType, wfpy_BufferType,
    wfpy_GraphType, wfpy_SceneType, wfpy_WorldType, wfpy_ParticlesType, wfpy_ClothType;

/* Raises weft.Error for st (< 0) with wf_last_error()'s text (.status, .status_name set) and
 * returns NULL: callers write `if (st < 0) return wfpy_raise(st);`. */
PyObject *wfpy_raise(wf_status st);
/* The same with an explicit message (scene errors, which keep all their lines). */
PyObject *wfpy_raise_msg(wf_status st, const char *msg);
/* The wf_device of obj: a weft.Device, a name ("cpu:0", "cuda"), or None (the default device).
 * Returns NULL with an exception set on failure. */
wf_device *wfpy_device_arg(PyObject *obj);
/* A weft.Device object for d (new reference). */
PyObject *wfpy_device_new(wf_device *d);
/* The wf_stream of obj: a weft.Stream, or None (NULL, no error). -1 with an exception set when
 * obj is neither. */
int wfpy_stream_arg(PyObject *obj, wf_stream **out);
/* A non-owning weft.Stream over s (new reference). */
PyObject *wfpy_stream_borrowed(wf_stream *s);

/* Buffers (buffer.c, buffer_export.c, buffer_import.c). */
int wfpy_dtype_parse(PyObject *dtype, char *kind, int *itemsize);
PyObject *wfpy_buffer_typestr(const wfpy_Buffer *b);
size_t wfpy_buffer_count(const wfpy_Buffer *b);
/* Waits on the host until the work weft queued on b's memory is done (its last user stream). */
int wfpy_buffer_host_sync(wfpy_Buffer *b);
PyObject *wfpy_buffer_array_interface(PyObject *self, void *closure);
PyObject *wfpy_buffer_cuda_array_interface(PyObject *self, void *closure);
PyObject *wfpy_buffer_dlpack(PyObject *self, PyObject *args, PyObject *kw);
PyObject *wfpy_buffer_dlpack_device(PyObject *self, PyObject *unused);
PyObject *wfpy_buffer_from_array(PyObject *cls, PyObject *args, PyObject *kw);

/* Numpy arrays filled from C (numpy is imported at run time: no NumPy C API at build time). */
PyObject *wfpy_numpy_empty(Py_ssize_t rows, Py_ssize_t cols, const char *dtype, void **data);
/* A C-contiguous float32 view of obj with `cols` columns (rows returned), via the buffer
 * protocol; view released by the caller with PyBuffer_Release. */
int wfpy_float_rows(PyObject *obj, int cols, Py_buffer *view, Py_ssize_t *rows);
/* Reads n floats from a sequence into out. */
int wfpy_floats(PyObject *seq, float *out, int n, const char *what);

/* devices: None, a device, a name, or a list of them (one partition each; particles.c) */
int wfpy_devices_arg(PyObject *obj, wf_device **out, int max, int *count);
/* A dict argument or keyword arguments, not both: the one given (new reference; solver.c). */
PyObject *wfpy_dict_or_kw(PyObject *dict, PyObject *kw, const char *what);
/* The wf_scene of a weft.Scene (scene.c); NULL with TypeError for anything else. */
wf_scene *wfpy_scene_get(PyObject *obj);

/* Colliders (collider.c): a dict / keyword mapping onto wf_collider_desc and wf_collider_pose. */
typedef struct {
  wf_collider_mesh *mesh; /* made from "vertices"/"triangles", freed after the add */
  wf_collider_key *keys;  /* from "keys" */
  uint32_t key_count;
} wfpy_collider_extra;
int wfpy_collider_desc(PyObject *dict, wf_collider_desc *out, wfpy_collider_extra *extra);
void wfpy_collider_extra_free(wfpy_collider_extra *extra);
int wfpy_collider_pose(PyObject *dict, wf_collider_pose *out);

/* The methods both solvers' types share (solver.c), over a table of the solver's calls; each
 * entry adapts one libweft function to the solver's handle `h`. */
typedef struct {
  wf_status (*add_collider)(void *h, const wf_collider_desc *desc, uint32_t *index);
  wf_status (*set_collider_pose)(void *h, uint32_t index, const wf_collider_pose *pose);
  wf_status (*collider_force)(void *h, uint32_t index, double force[3], double torque[3]);
  wf_status (*step_frames)(void *h, int frames);
  wf_status (*step_substeps)(void *h, int substeps);
} wfpy_solver_ops;
PyObject *wfpy_solver_add_collider(const wfpy_solver_ops *ops, void *h, PyObject *args,
                                   PyObject *kw);
PyObject *wfpy_solver_set_collider_pose(const wfpy_solver_ops *ops, void *h, PyObject *args,
                                        PyObject *kw);
PyObject *wfpy_solver_collider_force(const wfpy_solver_ops *ops, void *h, PyObject *arg);
PyObject *wfpy_solver_step(const wfpy_solver_ops *ops, void *h, PyObject *args);
PyObject *wfpy_solver_step_substeps(const wfpy_solver_ops *ops, void *h, PyObject *args);

/* Type and function registration of each file. */
int wfpy_add_types(PyObject *m);
extern PyMethodDef wfpy_graph_functions[];

#endif
