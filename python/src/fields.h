/* Table-driven mapping of Python dicts (or keyword arguments) onto the C API's description
 * structs: each table lists a struct's keys with their C type and offset, so an unknown key or a
 * value of the wrong kind raises naming the object and the key. */
#ifndef WFPY_FIELDS_H
#define WFPY_FIELDS_H

#include <stddef.h>

#include "wfpy.h"

typedef struct wfpy_field {
  const char *key;
  char type; /* 'f' float[n], 'd' double[n], 'i' int, 'u' uint32, 'U' uint64, 'b' bool,
                's' const char * (valid while the dict lives), 'e' int from names[] */
  size_t off;
  int n;                    /* numbers: how many */
  const char *const *names; /* 'e': the names of 0, 1, 2, ... (NULL-terminated) */
} wfpy_field;

#define WFPY_F(T, k, t, n)                                                                         \
  { #k, t, offsetof(T, k), n, NULL }
#define WFPY_E(T, k, names)                                                                        \
  { #k, 'e', offsetof(T, k), 1, names }

/* Sets base's fields from dict (NULL or None: nothing). what names the object in messages. */
int wfpy_fields_set(void *base, const wfpy_field *fields, PyObject *dict, const char *what);

#endif
