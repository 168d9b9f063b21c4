/* Particle files for `particles[i].shape = "file"` (emit.h): PLY point clouds (the ones
 * wf_ply_write_points writes: binary little-endian float x y z [radius] [vx vy vz] [id]; ASCII
 * PLY and double properties too) and CSV with a header naming its columns.
 *
 * Every value is checked (finite; radius > 0) and a bad one is reported with the file and the
 * line it is on ("pile.csv:7: column 'radius': expected a number > 0, got '-1'"); binary PLY data
 * has no lines, so its messages name the vertex instead. One pass reads and checks; with rows
 * NULL nothing is kept (the scene reader's validation and count).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emit.h"

enum { LINE_MAX_CHARS = 4096 };

void wfe_rows_free(wfe_rows *r) {
  if (!r) return;
  free(r->xyz), free(r->radius), free(r->vel);
  memset(r, 0, sizeof *r);
}

/* Columns a file may carry, in the order of wfe_rows. */
enum { C_X, C_Y, C_Z, C_R, C_VX, C_VY, C_VZ, C_ID, C_N };
static const char *const col_names[C_N] = {"x", "y", "z", "radius", "vx", "vy", "vz", "id"};

typedef struct reader {
  const char *path;
  char *msg;
  size_t size;
  wfe_rows *rows;
  uint64_t n, cap;
  bool has_r, has_v;
} reader;

static int failf(reader *rd, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(reader *rd, long line, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (line > 0)
    snprintf(rd->msg, rd->size, "%.300s:%ld: %s", rd->path, line, what);
  else
    snprintf(rd->msg, rd->size, "%.300s: %s", rd->path, what);
  return -1;
}

/* Checks one row's values (v indexed by C_*) and appends it when rows are kept. */
static int add_row(reader *rd, long line, const double v[C_N], const char *where) {
  static const int need[] = {C_X, C_Y, C_Z, C_VX, C_VY, C_VZ};
  for (int k = 0; k < 6; k++) {
    if (need[k] >= C_VX && !rd->has_v) break;
    if (!isfinite(v[need[k]]) || fabs(v[need[k]]) > 3e38)
      return failf(rd, line, "%scolumn '%s': %g is not a finite number", where, col_names[need[k]],
                   v[need[k]]);
  }
  if (rd->has_r && !(v[C_R] > 0.0 && v[C_R] < 3e38))
    return failf(rd, line, "%scolumn 'radius': expected a number > 0, got %g", where, v[C_R]);
  if (rd->n >= (1u << 30))
    return failf(rd, line, "more than 2^30 particles: the limit of one emitter");
  if (rd->rows) {
    if (rd->n == rd->cap) {
      uint64_t cap = rd->cap ? rd->cap * 2 : 1024;
      void *a = realloc(rd->rows->xyz, cap * sizeof *rd->rows->xyz);
      if (a) rd->rows->xyz = a;
      void *b = rd->has_r ? realloc(rd->rows->radius, cap * sizeof *rd->rows->radius) : (void *)1;
      if (rd->has_r && b) rd->rows->radius = b;
      void *c = rd->has_v ? realloc(rd->rows->vel, cap * sizeof *rd->rows->vel) : (void *)1;
      if (rd->has_v && c) rd->rows->vel = c;
      if (!a || !b || !c) return failf(rd, 0, "out of host memory");
      rd->cap = cap;
    }
    for (int k = 0; k < 3; k++)
      rd->rows->xyz[rd->n][k] = v[C_X + k];
    if (rd->has_r) rd->rows->radius[rd->n] = (float)v[C_R];
    if (rd->has_v)
      for (int k = 0; k < 3; k++)
        rd->rows->vel[rd->n][k] = (float)v[C_VX + k];
  }
  rd->n++;
  return 0;
}

/* The columns found: x, y, z required; vx, vy, vz all or none. */
static int check_columns(reader *rd, long line, const int at[C_N]) {
  for (int k = C_X; k <= C_Z; k++)
    if (at[k] < 0) return failf(rd, line, "no column '%s' (x, y and z are required)", col_names[k]);
  int nv = (at[C_VX] >= 0) + (at[C_VY] >= 0) + (at[C_VZ] >= 0);
  if (nv != 0 && nv != 3) return failf(rd, line, "velocity needs all three columns vx, vy, vz");
  rd->has_r = at[C_R] >= 0, rd->has_v = nv == 3;
  return 0;
}

/* Reads a line; 0 at the end of the file, -1 when too long (*line counts lines). */
static int next_line(FILE *f, char *buf, long *line) {
  if (!fgets(buf, LINE_MAX_CHARS, f)) return 0;
  (*line)++;
  size_t n = strlen(buf);
  if (n == LINE_MAX_CHARS - 1 && buf[n - 1] != '\n' && !feof(f)) return -1;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = '\0';
  return 1;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  return s;
}

/* ---- CSV ---------------------------------------------------------------------------------- */

static int read_csv(reader *rd, FILE *f, char *buf) {
  long line = 0;
  int at[C_N], ncol = 0, col_of[64], r;
  for (int k = 0; k < C_N; k++)
    at[k] = -1;
  bool header = false;
  while ((r = next_line(f, buf, &line)) != 0) {
    if (r < 0) return failf(rd, line, "a line longer than %d characters", LINE_MAX_CHARS - 2);
    char *s = trim(buf);
    if (!*s || *s == '#') continue;
    char *cells[64];
    int n = 0;
    for (char *c = s;; n++) {
      if (n == 64) return failf(rd, line, "more than 64 columns");
      char *comma = strchr(c, ',');
      if (comma) *comma = '\0';
      cells[n] = trim(c);
      if (!comma) {
        n++;
        break;
      }
      c = comma + 1;
    }
    if (!header) {
      for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < C_N && strcmp(cells[i], col_names[k]) != 0)
          k++;
        if (k == C_N)
          return failf(rd, line,
                       "unknown column '%.40s' (columns: x, y, z, radius, vx, vy, vz, id; the "
                       "first line must name them)",
                       cells[i]);
        if (at[k] >= 0) return failf(rd, line, "column '%s' is named twice", col_names[k]);
        at[k] = i, col_of[i] = k;
      }
      ncol = n;
      if (check_columns(rd, line, at) != 0) return -1;
      header = true;
      continue;
    }
    if (n != ncol) return failf(rd, line, "%d values; the header names %d columns", n, ncol);
    double v[C_N] = {0};
    for (int i = 0; i < n; i++) {
      char *end;
      errno = 0;
      double x = strtod(cells[i], &end);
      if (end == cells[i] || *end)
        return failf(rd, line, "column '%s': expected a number, got '%.40s'", col_names[col_of[i]],
                     cells[i]);
      v[col_of[i]] = x;
    }
    if (add_row(rd, line, v, "") != 0) return -1;
  }
  if (!header) return failf(rd, 0, "no header line (x,y,z[,radius][,vx,vy,vz])");
  return 0;
}

/* ---- PLY ---------------------------------------------------------------------------------- */

typedef struct ply_prop {
  int col;  /* C_* or -1: ignored */
  int type; /* index into ply_types */
} ply_prop;

static const struct {
  const char *name;
  int bytes;
} ply_types[] = {{"char", 1},  {"uchar", 1},  {"short", 2},   {"ushort", 2},
                 {"int", 4},   {"uint", 4},   {"float", 4},   {"double", 8},
                 {"int8", 1},  {"uint8", 1},  {"int16", 2},   {"uint16", 2},
                 {"int32", 4}, {"uint32", 4}, {"float32", 4}, {"float64", 8}};
enum { N_PLY_TYPES = (int)(sizeof ply_types / sizeof ply_types[0]) };

/* A little-endian value of ply type t at p. */
static double ply_value(int t, const unsigned char *p) {
  const char *n = ply_types[t].name;
  unsigned char b[8] = {0};
  memcpy(b, p, (size_t)ply_types[t].bytes);
  uint64_t u = 0;
  for (int i = ply_types[t].bytes - 1; i >= 0; i--)
    u = u << 8 | b[i];
  if (!strcmp(n, "float") || !strcmp(n, "float32")) {
    uint32_t w = (uint32_t)u;
    float x;
    memcpy(&x, &w, 4);
    return x;
  }
  if (!strcmp(n, "double") || !strcmp(n, "float64")) {
    double x;
    memcpy(&x, &u, 8);
    return x;
  }
  bool sign = n[0] != 'u';
  int bits = ply_types[t].bytes * 8;
  if (sign && bits < 64 && (u >> (bits - 1)) & 1) return (double)(int64_t)(u | (~0ull << bits));
  return (double)u;
}

static int read_ply(reader *rd, FILE *f, char *buf) {
  long line = 0;
  int r = next_line(f, buf, &line);
  if (r <= 0 || strcmp(trim(buf), "ply") != 0)
    return failf(rd, 1, "not a PLY file (the first line must be 'ply')");
  int format = -1; /* 0 binary little-endian, 1 ascii */
  uint64_t count = 0;
  bool in_vertex = false, seen_vertex = false;
  ply_prop props[64];
  int np = 0, at[C_N], stride = 0;
  for (int k = 0; k < C_N; k++)
    at[k] = -1;
  for (;;) {
    if ((r = next_line(f, buf, &line)) <= 0)
      return failf(rd, line, r < 0 ? "a header line is too long" : "the header has no end_header");
    char *s = trim(buf), *w[4] = {0};
    int nw = 0;
    for (char *sv = NULL, *t = strtok_r(s, " \t", &sv); t && nw < 4; t = strtok_r(NULL, " \t", &sv))
      w[nw++] = t;
    if (nw == 0 || !strcmp(w[0], "comment") || !strcmp(w[0], "obj_info")) continue;
    if (!strcmp(w[0], "end_header")) break;
    if (!strcmp(w[0], "format")) {
      if (nw >= 2 && !strcmp(w[1], "binary_little_endian"))
        format = 0;
      else if (nw >= 2 && !strcmp(w[1], "ascii"))
        format = 1;
      else
        return failf(rd, line, "format '%.40s' is not supported (binary_little_endian or ascii)",
                     nw >= 2 ? w[1] : "");
    } else if (!strcmp(w[0], "element")) {
      if (in_vertex || seen_vertex) { /* elements after the vertices are not read */
        in_vertex = false;
        continue;
      }
      if (nw < 3 || strcmp(w[1], "vertex") != 0)
        return failf(rd, line, "the first element must be 'vertex', not '%.40s'",
                     nw >= 2 ? w[1] : "");
      char *end;
      count = strtoull(w[2], &end, 10);
      if (*end || w[2][0] == '-') return failf(rd, line, "bad vertex count '%.40s'", w[2]);
      in_vertex = seen_vertex = true;
    } else if (!strcmp(w[0], "property")) {
      if (!in_vertex) continue;
      if (nw >= 2 && !strcmp(w[1], "list"))
        return failf(rd, line, "list properties of vertices are not supported");
      if (nw < 3) return failf(rd, line, "a property needs a type and a name");
      int t = 0;
      while (t < N_PLY_TYPES && strcmp(w[1], ply_types[t].name) != 0)
        t++;
      if (t == N_PLY_TYPES) return failf(rd, line, "unknown property type '%.40s'", w[1]);
      if (np == 64) return failf(rd, line, "more than 64 vertex properties");
      int col = -1;
      for (int k = 0; k < C_N; k++)
        if (!strcmp(w[2], col_names[k])) col = k;
      if (col >= 0 && at[col] >= 0) return failf(rd, line, "property '%s' twice", col_names[col]);
      if (col >= 0) at[col] = np;
      props[np++] = (ply_prop){col, t};
      stride += ply_types[t].bytes;
    } else {
      return failf(rd, line, "unknown header line '%.40s'", w[0]);
    }
  }
  if (format < 0) return failf(rd, line, "the header has no format line");
  if (!seen_vertex) return failf(rd, line, "no vertex element");
  if (check_columns(rd, line, at) != 0) return -1;
  if (count > (1u << 30))
    return failf(rd, line, "%llu vertices: more than 2^30", (unsigned long long)count);
  unsigned char rec[64 * 8];
  for (uint64_t i = 0; i < count; i++) {
    double v[C_N] = {0};
    char where[64] = "";
    long at_line = 0;
    if (format == 0) {
      if (fread(rec, 1, (size_t)stride, f) != (size_t)stride)
        return failf(rd, 0, "vertex %llu of %llu: the file ends early", (unsigned long long)i,
                     (unsigned long long)count);
      int off = 0;
      for (int p = 0; p < np; p++) {
        if (props[p].col >= 0) v[props[p].col] = ply_value(props[p].type, rec + off);
        off += ply_types[props[p].type].bytes;
      }
      snprintf(where, sizeof where, "vertex %llu: ", (unsigned long long)i);
    } else {
      if ((r = next_line(f, buf, &line)) <= 0)
        return failf(rd, line, "vertex %llu of %llu: the file ends early", (unsigned long long)i,
                     (unsigned long long)count);
      at_line = line;
      char *s = buf;
      for (int p = 0; p < np; p++) {
        char *end;
        while (isspace((unsigned char)*s))
          s++;
        double x = strtod(s, &end);
        if (end == s) return failf(rd, line, "%d values; the header names %d properties", p, np);
        if (props[p].col >= 0) v[props[p].col] = x;
        s = end;
      }
      if (*trim(s)) return failf(rd, line, "more values than the %d properties", np);
    }
    if (add_row(rd, at_line, v, where) != 0) return -1;
  }
  return 0;
}

int wfe_file_read(const char *path, wfe_rows *rows, uint64_t *count, char *msg, size_t size) {
  reader rd = {.path = path, .msg = msg, .size = size, .rows = rows};
  if (rows) memset(rows, 0, sizeof *rows);
  size_t len = strlen(path);
  bool ply = len >= 4 && !strcasecmp(path + len - 4, ".ply");
  bool csv = len >= 4 && !strcasecmp(path + len - 4, ".csv");
  if (!ply && !csv) return failf(&rd, 0, "not a .ply or .csv file");
  FILE *f = fopen(path, "rb");
  if (!f) return failf(&rd, 0, "cannot read: %s", strerror(errno));
  char *buf = malloc(LINE_MAX_CHARS);
  int r = buf ? (ply ? read_ply(&rd, f, buf) : read_csv(&rd, f, buf))
              : failf(&rd, 0, "out of host memory");
  free(buf);
  fclose(f);
  if (r == 0 && rd.n == 0) r = failf(&rd, 0, "no particles");
  if (r != 0) {
    wfe_rows_free(rows);
    return -1;
  }
  if (rows) rows->count = rd.n;
  if (count) *count = rd.n;
  return 0;
}
