/* Internals of the scene loader shared by its files: the error list of one parse, the JSON text
 * helpers (a strict syntax check that says what was expected, line:column of a byte offset, the
 * offset of a key path in the text) and the did-you-mean suggestion.
 *
 * Invariants: every message in an error list is complete ("name:line:col: path: what"); the list
 * holds at most WF_SCENE_MAX_ERRORS messages and records how many more there were. The text helpers
 * never read outside text[0, len) and need no terminating NUL.
 */
#ifndef WEFT_ENGINE_SCENE_INTERNAL_H
#define WEFT_ENGINE_SCENE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "weft/scene.h"

enum { WFS_MSG_MAX = 512 };

/* Deepest nesting the syntax check accepts (a scene needs about six levels). */
enum { WFS_MAX_DEPTH = 64 };

/* One override applied to the tree: the canonical path it set and the text the user gave. */
typedef struct wfs_override_mark {
  char path[256];
  const char *text;
} wfs_override_mark;

typedef struct wfs_errors {
  const char *name; /* file name for messages */
  const char *text; /* the scene text, for line:column lookups (may be NULL) */
  size_t len;
  char msgs[WF_SCENE_MAX_ERRORS][WFS_MSG_MAX];
  long pos[WF_SCENE_MAX_ERRORS]; /* byte offset in the text, or LONG_MAX: not located */
  int count;                     /* messages kept */
  int dropped;                   /* messages beyond WF_SCENE_MAX_ERRORS */
  const wfs_override_mark *marks;
  int mark_count;
} wfs_errors;

/* Adds "name:line:col: path: message" (line:col when the path is found in the text and was not
 * set by an override; the override is named instead). path may be NULL or "". */
void wfs_error(wfs_errors *e, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds "name:line:col: message" for a byte offset of the text. */
void wfs_error_at(wfs_errors *e, size_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Orders the messages by their place in the text (stable; unlocated ones last). */
void wfs_sort(wfs_errors *e);
/* True once the list is full: callers stop looking for more. */
int wfs_full(const wfs_errors *e);

/* Strict JSON syntax check (RFC 8259, nesting <= WFS_MAX_DEPTH). Returns 0 when the text is valid;
 * else 1 with *offset at the problem and msg saying what was expected there. */
int wfs_syntax_check(const char *text, size_t len, size_t *offset, char *msg, size_t msg_size);
/* 1-based line and column (in characters) of a byte offset. */
void wfs_line_col(const char *text, size_t len, size_t offset, int *line, int *col);
/* Byte offset of the value (array elements) or key (object members) at a key path such as
 * "cloths[0].material.bend" in valid JSON text, or -1 when it is not there. */
long wfs_locate(const char *text, size_t len, const char *path);
/* Edit distance (Damerau, case-insensitive) with an early cut-off above `max`. */
int wfs_distance(const char *a, const char *b, int max);
/* The candidate closest to word, or NULL when none is close enough to be a likely typo. */
const char *wfs_suggest(const char *word, const char *const *candidates, int n);
/* Copies s for a message: at most 40 characters, non-printable bytes as '?'. */
void wfs_quote(char *dst, size_t size, const char *s);

#endif
