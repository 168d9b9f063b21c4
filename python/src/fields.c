/* Dicts onto description structs (fields.h). */
#include "fields.h"

static int set_one(void *base, const wfpy_field *f, PyObject *v, const char *what) {
  char *p = (char *)base + f->off;
  switch (f->type) {
  case 'f':
  case 'd': {
    double tmp[16];
    if (f->n == 1) {
      tmp[0] = PyFloat_AsDouble(v);
      if (tmp[0] == -1.0 && PyErr_Occurred()) goto bad;
    } else {
      PyObject *fast = PySequence_Fast(v, "");
      if (!fast) goto bad;
      if (PySequence_Fast_GET_SIZE(fast) != f->n) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: %s expects %d numbers", what, f->key, f->n);
        return -1;
      }
      for (int i = 0; i < f->n; i++)
        tmp[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
      Py_DECREF(fast);
      if (PyErr_Occurred()) goto bad;
    }
    for (int i = 0; i < f->n; i++) {
      if (f->type == 'f')
        ((float *)p)[i] = (float)tmp[i];
      else
        ((double *)p)[i] = tmp[i];
    }
    return 0;
  }
  case 'i':
  case 'u':
  case 'U': {
    long long tmp[16];
    if (f->n == 1) {
      tmp[0] = PyLong_AsLongLong(v);
    } else {
      PyObject *fast = PySequence_Fast(v, "");
      if (!fast) goto bad;
      if (PySequence_Fast_GET_SIZE(fast) != f->n) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: %s expects %d integers", what, f->key, f->n);
        return -1;
      }
      for (int i = 0; i < f->n; i++)
        tmp[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
      Py_DECREF(fast);
    }
    if (PyErr_Occurred()) goto bad;
    for (int i = 0; i < f->n; i++) {
      if (f->type == 'i')
        ((int *)p)[i] = (int)tmp[i];
      else if (f->type == 'u')
        ((uint32_t *)p)[i] = (uint32_t)tmp[i];
      else
        ((uint64_t *)p)[i] = (uint64_t)tmp[i];
    }
    return 0;
  }
  case 'b': {
    int x = PyObject_IsTrue(v);
    if (x < 0) goto bad;
    *(bool *)p = x != 0;
    return 0;
  }
  case 's': {
    const char *s = PyUnicode_AsUTF8(v);
    if (!s) goto bad;
    *(const char **)p = s;
    return 0;
  }
  case 'e': {
    if (PyLong_Check(v)) {
      *(int *)p = (int)PyLong_AsLong(v);
      return PyErr_Occurred() ? -1 : 0;
    }
    const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    for (int i = 0; s && f->names[i]; i++)
      if (!strcmp(s, f->names[i])) {
        *(int *)p = i;
        return 0;
      }
    PyErr_Clear();
    PyObject *choices = PyUnicode_FromString("");
    for (int i = 0; choices && f->names[i]; i++) {
      PyObject *c = PyUnicode_FromFormat("%U%s'%s'", choices, i ? ", " : "", f->names[i]);
      Py_SETREF(choices, c);
    }
    PyErr_Format(PyExc_ValueError, "%s: %s: expected one of %U, got %R", what, f->key, choices, v);
    Py_XDECREF(choices);
    return -1;
  }
  }
bad:
  PyErr_Clear();
  PyErr_Format(PyExc_TypeError, "%s: %s: expected %s, got %R", what, f->key,
               f->type == 's'           ? "a string"
               : f->type == 'b'         ? "a bool"
               : strchr("iuU", f->type) ? (f->n == 1 ? "an integer" : "a sequence of integers")
               : f->n == 1              ? "a number"
                                        : "a sequence of numbers",
               v);
  return -1;
}

int wfpy_fields_set(void *base, const wfpy_field *fields, PyObject *dict, const char *what) {
  if (!dict || dict == Py_None) return 0;
  if (!PyDict_Check(dict)) {
    PyErr_Format(PyExc_TypeError, "%s: expected a dict, got %s", what, Py_TYPE(dict)->tp_name);
    return -1;
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    const char *key = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    if (!key) {
      PyErr_Format(PyExc_TypeError, "%s: keys must be strings", what);
      return -1;
    }
    const wfpy_field *f = fields;
    while (f->key && strcmp(f->key, key))
      f++;
    if (!f->key) {
      PyObject *known = PyUnicode_FromString("");
      for (const wfpy_field *g = fields; known && g->key; g++) {
        PyObject *c = PyUnicode_FromFormat("%U%s%s", known, g == fields ? "" : ", ", g->key);
        Py_SETREF(known, c);
      }
      PyErr_Format(PyExc_KeyError, "%s: unknown key '%s' (known: %U)", what, key, known);
      Py_XDECREF(known);
      return -1;
    }
    if (set_one(base, f, v, what) < 0) return -1;
  }
  return 0;
}
