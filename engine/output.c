/* Output files: whole-file atomic writes (temporary file + fsync + rename), binary PLY point
 * clouds and meshes, VTK XML PolyData (.vtp) and ParaView collections (.pvd), and the statistics
 * CSV.
 *
 * Invariants
 *  - Every writer but the CSV's rows goes through wf_atomic_file: readers of <path> (ParaView
 *    watching a .pvd, a script tailing outputs) see the old file or the complete new one, never a
 *    partial one, and a failed write leaves no temporary file behind.
 *  - A wf_atomic_file's first failure is sticky and kept with its message, so writers can issue
 *    their writes unchecked and learn the outcome, with the step that failed, from _commit.
 *  - Binary numbers are encoded little-endian byte by byte, whatever the host's byte order.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/error.h"
#include "weft/io.h"
#include "weft/version.h"

/* ---- atomic files ------------------------------------------------------------------------- */

struct wf_atomic_file {
  FILE *f;
  char *path, *tmp;
  wf_status st;     /* first failure, sticky */
  const char *func; /* where it happened */
  char msg[768];    /* its message */
};

static wf_status af_fail(wf_atomic_file *f, const char *func, const char *step, int err) {
  if (f->st == WF_OK) {
    f->st = WF_ERR_IO;
    f->func = func;
    snprintf(f->msg, sizeof f->msg, "cannot %s '%s' (temporary file '%s'): %s", step, f->path,
             f->tmp, strerror(err));
  }
  return wf__error(f->st, f->func, "%s", f->msg);
}

wf_status wf_atomic_file_open(const char *path, wf_atomic_file **out) {
  if (!path || !out || !*path)
    return wf__error(WF_ERR_INVALID, __func__, "path or out is NULL, or path is empty");
  *out = NULL;
  wf_atomic_file *f = calloc(1, sizeof *f);
  size_t n = strlen(path);
  if (f) f->path = malloc(n + 1), f->tmp = malloc(n + 32);
  if (!f || !f->path || !f->tmp) {
    if (f) free(f->path), free(f->tmp);
    free(f);
    return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory to write '%s'", path);
  }
  memcpy(f->path, path, n + 1);
  snprintf(f->tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  int err = errno;
  if (fd >= 0 && !(f->f = fdopen(fd, "wb"))) {
    err = errno;
    close(fd);
    unlink(f->tmp);
  }
  if (!f->f) {
    wf_status st = wf__error(WF_ERR_IO, __func__, "cannot create '%s' (temporary file '%s'): %s",
                             path, f->tmp, strerror(err));
    free(f->path), free(f->tmp), free(f);
    return st;
  }
  *out = f;
  return WF_OK;
}

wf_status wf_atomic_file_write(wf_atomic_file *f, const void *data, size_t bytes) {
  if (!f) return wf__error(WF_ERR_INVALID, __func__, "file is NULL");
  if (f->st != WF_OK) return f->st;
  if (bytes == 0) return WF_OK;
  if (fwrite(data, 1, bytes, f->f) != bytes) return af_fail(f, __func__, "write", errno);
  return WF_OK;
}

wf_status wf_atomic_file_printf(wf_atomic_file *f, const char *fmt, ...) {
  if (!f) return wf__error(WF_ERR_INVALID, __func__, "file is NULL");
  if (f->st != WF_OK) return f->st;
  va_list ap;
  va_start(ap, fmt);
  int n = vfprintf(f->f, fmt, ap);
  int err = errno;
  va_end(ap);
  return n < 0 ? af_fail(f, __func__, "write", err) : WF_OK;
}

static void af_free(wf_atomic_file *f) {
  free(f->path);
  free(f->tmp);
  free(f);
}

/* After the rename, make the directory entry durable too. Best effort: the file is complete
 * under its name already, and some file systems refuse to sync a directory. */
static void af_sync_dir(const char *path) {
  char *copy = strdup(path);
  if (!copy) return;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(copy);
}

wf_status wf_atomic_file_commit(wf_atomic_file *f) {
  if (!f) return wf__error(WF_ERR_INVALID, __func__, "file is NULL");
  if (f->st == WF_OK && fflush(f->f) != 0) af_fail(f, __func__, "write", errno);
  /* EINVAL: the file system does not support fsync; the data went through anyway. */
  if (f->st == WF_OK && fsync(fileno(f->f)) != 0 && errno != EINVAL)
    af_fail(f, __func__, "sync", errno);
  int closed = fclose(f->f);
  if (f->st == WF_OK && closed != 0) af_fail(f, __func__, "close", errno);
  if (f->st == WF_OK && rename(f->tmp, f->path) != 0) af_fail(f, __func__, "rename to", errno);
  if (f->st != WF_OK) {
    unlink(f->tmp);
    wf_status st = wf__error(f->st, f->func, "%s", f->msg);
    af_free(f);
    return st;
  }
  af_sync_dir(f->path);
  af_free(f);
  return WF_OK;
}

void wf_atomic_file_abort(wf_atomic_file *f) {
  if (!f) return;
  fclose(f->f);
  unlink(f->tmp);
  af_free(f);
}

/* ---- a little-endian encoder in front of an atomic file ---------------------------------- */

typedef struct obuf {
  wf_atomic_file *f;
  size_t n;
  unsigned char b[1 << 15];
} obuf;

static void ob_flush(obuf *o) {
  wf_atomic_file_write(o->f, o->b, o->n); /* a failure is kept by the file */
  o->n = 0;
}
static inline void ob_room(obuf *o, size_t n) {
  if (o->n + n > sizeof o->b) ob_flush(o);
}
static inline void ob_u8(obuf *o, uint8_t v) {
  ob_room(o, 1);
  o->b[o->n++] = v;
}
static inline void ob_u32(obuf *o, uint32_t v) {
  ob_room(o, 4);
  for (int i = 0; i < 4; i++)
    o->b[o->n++] = (unsigned char)(v >> (8 * i));
}
static inline void ob_f32(obuf *o, float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  ob_u32(o, u);
}

static obuf *ob_new(wf_atomic_file *f, const char *func) {
  obuf *o = malloc(sizeof *o);
  if (!o) {
    wf_atomic_file_abort(f);
    wf__error(WF_ERR_OUT_OF_MEMORY, func, "no memory for an output buffer");
    return NULL;
  }
  o->f = f, o->n = 0;
  return o;
}

/* Flushes and frees the encoder and commits its file. */
static wf_status ob_finish(obuf *o) {
  ob_flush(o);
  wf_atomic_file *f = o->f;
  free(o);
  return wf_atomic_file_commit(f);
}

/* ---- PLY ---------------------------------------------------------------------------------- */

wf_status wf_ply_write_points(const char *path, const wf_ply_points *p) {
  if (!path || !p || (p->count && !p->pos))
    return wf__error(WF_ERR_INVALID, __func__, "path or points is NULL, or pos is NULL");
  wf_atomic_file *f;
  wf_status st = wf_atomic_file_open(path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f,
                        "ply\nformat binary_little_endian 1.0\ncomment weft %s\n"
                        "element vertex %zu\nproperty float x\nproperty float y\n"
                        "property float z\n",
                        WF_VERSION_STRING, p->count);
  if (p->radius) wf_atomic_file_printf(f, "property float radius\n");
  if (p->vel) wf_atomic_file_printf(f, "property float vx\nproperty float vy\nproperty float vz\n");
  if (p->omega)
    wf_atomic_file_printf(f, "property float wx\nproperty float wy\nproperty float wz\n");
  if (p->id) wf_atomic_file_printf(f, "property uint id\n");
  wf_atomic_file_printf(f, "end_header\n");
  obuf *o = ob_new(f, __func__);
  if (!o) return WF_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < p->count; i++) {
    for (int k = 0; k < 3; k++)
      ob_f32(o, p->pos[3 * i + k]);
    if (p->radius) ob_f32(o, p->radius[i]);
    if (p->vel)
      for (int k = 0; k < 3; k++)
        ob_f32(o, p->vel[3 * i + k]);
    if (p->omega)
      for (int k = 0; k < 3; k++)
        ob_f32(o, p->omega[3 * i + k]);
    if (p->id) ob_u32(o, p->id[i]);
  }
  return ob_finish(o);
}

/* The first triangle with an index >= vertex_count, or tri_count when all are in range. */
static size_t first_bad_tri(const uint32_t *tri, size_t tri_count, size_t vertex_count) {
  for (size_t t = 0; t < tri_count; t++)
    for (int k = 0; k < 3; k++)
      if (tri[3 * t + k] >= vertex_count) return t;
  return tri_count;
}

wf_status wf_ply_write_mesh(const char *path, const wf_ply_mesh *m) {
  if (!path || !m || (m->vertex_count && !m->pos) || (m->tri_count && !m->tri))
    return wf__error(WF_ERR_INVALID, __func__, "path, mesh, pos or tri is NULL");
  if (m->vertex_count > INT32_MAX)
    return wf__error(WF_ERR_INVALID, __func__,
                     "'%s': %zu vertices; PLY int indices reach %d at most", path, m->vertex_count,
                     INT32_MAX);
  size_t bad = first_bad_tri(m->tri, m->tri_count, m->vertex_count);
  if (bad < m->tri_count)
    return wf__error(WF_ERR_INVALID, __func__,
                     "'%s': triangle %zu (%u %u %u) has a vertex index >= the vertex count %zu",
                     path, bad, m->tri[3 * bad], m->tri[3 * bad + 1], m->tri[3 * bad + 2],
                     m->vertex_count);
  wf_atomic_file *f;
  wf_status st = wf_atomic_file_open(path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f,
                        "ply\nformat binary_little_endian 1.0\ncomment weft %s\n"
                        "element vertex %zu\nproperty float x\nproperty float y\n"
                        "property float z\n",
                        WF_VERSION_STRING, m->vertex_count);
  if (m->normal)
    wf_atomic_file_printf(f, "property float nx\nproperty float ny\nproperty float nz\n");
  if (m->vel) wf_atomic_file_printf(f, "property float vx\nproperty float vy\nproperty float vz\n");
  wf_atomic_file_printf(f,
                        "element face %zu\nproperty list uchar int vertex_indices\n"
                        "end_header\n",
                        m->tri_count);
  obuf *o = ob_new(f, __func__);
  if (!o) return WF_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < m->vertex_count; i++) {
    for (int k = 0; k < 3; k++)
      ob_f32(o, m->pos[3 * i + k]);
    if (m->normal)
      for (int k = 0; k < 3; k++)
        ob_f32(o, m->normal[3 * i + k]);
    if (m->vel)
      for (int k = 0; k < 3; k++)
        ob_f32(o, m->vel[3 * i + k]);
  }
  for (size_t t = 0; t < m->tri_count; t++) {
    ob_u8(o, 3);
    for (int k = 0; k < 3; k++)
      ob_u32(o, m->tri[3 * t + k]); /* < 2^31: the same bits as the int */
  }
  return ob_finish(o);
}

/* ---- VTK XML ------------------------------------------------------------------------------ */

/* Writes s with the five XML special characters escaped (for attribute values). */
static void xml_text(wf_atomic_file *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': wf_atomic_file_printf(f, "&amp;"); break;
    case '<': wf_atomic_file_printf(f, "&lt;"); break;
    case '>': wf_atomic_file_printf(f, "&gt;"); break;
    case '"': wf_atomic_file_printf(f, "&quot;"); break;
    case '\'': wf_atomic_file_printf(f, "&apos;"); break;
    default: wf_atomic_file_write(f, s, 1);
    }
  }
}

/* Streaming base64 (RFC 4648, padded) into an obuf: 3 bytes in, 4 characters out. */
typedef struct b64 {
  obuf *o;
  unsigned char carry[3];
  int n;
} b64;

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_quad(b64 *e, int have) {
  unsigned v = (unsigned)e->carry[0] << 16 | (unsigned)e->carry[1] << 8 | e->carry[2];
  ob_room(e->o, 4);
  for (int i = 0; i < 4; i++)
    e->o->b[e->o->n++] = i <= have ? (unsigned char)b64_chars[(v >> (18 - 6 * i)) & 63] : '=';
}
static void b64_put(b64 *e, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    e->carry[e->n++] = p[i];
    if (e->n == 3) b64_quad(e, 3), e->n = 0;
  }
}
static void b64_end(b64 *e) {
  if (e->n == 0) return;
  for (int i = e->n; i < 3; i++)
    e->carry[i] = 0;
  b64_quad(e, e->n);
  e->n = 0;
}
static void b64_u32(b64 *e, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++)
    b[i] = (unsigned char)(v >> (8 * i));
  b64_put(e, b, 4);
}
static void b64_u64(b64 *e, uint64_t v) {
  b64_u32(e, (uint32_t)v);
  b64_u32(e, (uint32_t)(v >> 32));
}

typedef enum { VA_F32, VA_U32, VA_I64_INDEX, VA_I64_SEQ } va_kind;

/* One DataArray: `count` values of kind `kind`. VA_I64_INDEX widens a uint32 index list;
 * VA_I64_SEQ has no data, its value i is (i + seq_first) * seq_step (cell offsets, identity
 * connectivity). */
typedef struct va_desc {
  const char *name; /* NULL: no Name attribute */
  va_kind kind;
  int components;
  size_t count; /* values, not tuples */
  const void *data;
  uint64_t seq_first, seq_step;
} va_desc;

static void vtp_array(obuf *o, const va_desc *a, bool binary) {
  static const char *types[] = {"Float32", "UInt32", "Int64", "Int64"};
  static const size_t sizes[] = {4, 4, 8, 8};
  wf_atomic_file *f = o->f;
  ob_flush(o);
  wf_atomic_file_printf(f, "        <DataArray type=\"%s\"", types[a->kind]);
  if (a->name) {
    wf_atomic_file_printf(f, " Name=\"");
    xml_text(f, a->name);
    wf_atomic_file_printf(f, "\"");
  }
  if (a->components > 1) wf_atomic_file_printf(f, " NumberOfComponents=\"%d\"", a->components);
  wf_atomic_file_printf(f, " format=\"%s\">\n", binary ? "binary" : "ascii");
  const float *fv = a->data;
  const uint32_t *uv = a->data;
  if (binary) {
    /* format 1.0, header_type UInt64, no compressor: the byte count and the data form one
     * base64 stream */
    b64 e = {.o = o};
    b64_u64(&e, (uint64_t)a->count * sizes[a->kind]);
    for (size_t i = 0; i < a->count; i++) {
      uint32_t u;
      switch (a->kind) {
      case VA_F32: memcpy(&u, &fv[i], 4), b64_u32(&e, u); break;
      case VA_U32: b64_u32(&e, uv[i]); break;
      case VA_I64_INDEX: b64_u64(&e, uv[i]); break;
      case VA_I64_SEQ: b64_u64(&e, (i + a->seq_first) * a->seq_step); break;
      }
    }
    b64_end(&e);
    ob_flush(o);
    wf_atomic_file_printf(f, "\n");
  } else {
    int per_line = a->components > 1 ? a->components : 3;
    char num[40];
    for (size_t i = 0; i < a->count; i++) {
      int n = 0;
      switch (a->kind) {
      case VA_F32: n = snprintf(num, sizeof num, "%.9g", (double)fv[i]); break;
      case VA_U32: n = snprintf(num, sizeof num, "%u", uv[i]); break;
      case VA_I64_INDEX: n = snprintf(num, sizeof num, "%u", uv[i]); break;
      case VA_I64_SEQ:
        n = snprintf(num, sizeof num, "%llu",
                     (unsigned long long)((i + a->seq_first) * a->seq_step));
        break;
      }
      ob_room(o, (size_t)n + 1);
      memcpy(o->b + o->n, num, (size_t)n);
      o->n += (size_t)n;
      o->b[o->n++] = (i + 1) % (size_t)per_line == 0 || i + 1 == a->count ? '\n' : ' ';
    }
    ob_flush(o);
  }
  wf_atomic_file_printf(f, "        </DataArray>\n");
}

wf_status wf_vtp_write(const char *path, const wf_vtp_desc *d) {
  if (!path || !d || (d->point_count && !d->points) || (d->tri_count && !d->tri) ||
      d->array_count < 0 || (d->array_count && !d->arrays))
    return wf__error(WF_ERR_INVALID, __func__,
                     "path or desc is NULL, or points, tri or arrays is NULL with a count");
  for (int i = 0; i < d->array_count; i++) {
    const wf_vtk_array *a = &d->arrays[i];
    if (!a->name || !*a->name || a->components < 1 || a->components > 9 ||
        (a->type != WF_VTK_FLOAT32 && a->type != WF_VTK_UINT32) || (d->point_count && !a->data))
      return wf__error(WF_ERR_INVALID, __func__,
                       "'%s': point-data array %d ('%s') needs a name, 1..9 components, a type "
                       "and data",
                       path, i, a->name ? a->name : "(null)");
  }
  size_t bad = first_bad_tri(d->tri, d->tri_count, d->point_count);
  if (bad < d->tri_count)
    return wf__error(WF_ERR_INVALID, __func__,
                     "'%s': triangle %zu (%u %u %u) has a vertex index >= the point count %zu",
                     path, bad, d->tri[3 * bad], d->tri[3 * bad + 1], d->tri[3 * bad + 2],
                     d->point_count);
  if (d->tri_count == 0 && d->point_count > UINT32_MAX)
    return wf__error(WF_ERR_INVALID, __func__, "'%s': more than 2^32 points", path);
  wf_atomic_file *f;
  wf_status st = wf_atomic_file_open(path, &f);
  if (st != WF_OK) return st;
  obuf *o = ob_new(f, __func__);
  if (!o) return WF_ERR_OUT_OF_MEMORY;
  bool mesh = d->tri_count > 0;
  wf_atomic_file_printf(f,
                        "<?xml version=\"1.0\"?>\n<!-- weft %s -->\n"
                        "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" "
                        "header_type=\"UInt64\">\n  <PolyData>\n"
                        "    <Piece NumberOfPoints=\"%zu\" NumberOfVerts=\"%zu\" "
                        "NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"%zu\">\n"
                        "      <PointData>\n",
                        WF_VERSION_STRING, d->point_count, mesh ? (size_t)0 : d->point_count,
                        d->tri_count);
  for (int i = 0; i < d->array_count; i++) {
    const wf_vtk_array *a = &d->arrays[i];
    va_desc v = {a->name,
                 a->type == WF_VTK_FLOAT32 ? VA_F32 : VA_U32,
                 a->components,
                 d->point_count * (size_t)a->components,
                 a->data,
                 0,
                 0};
    vtp_array(o, &v, d->binary);
  }
  wf_atomic_file_printf(f, "      </PointData>\n      <Points>\n");
  vtp_array(o, &(va_desc){NULL, VA_F32, 3, 3 * d->point_count, d->points, 0, 0}, d->binary);
  wf_atomic_file_printf(f, "      </Points>\n      <%s>\n", mesh ? "Polys" : "Verts");
  if (mesh) {
    vtp_array(o, &(va_desc){"connectivity", VA_I64_INDEX, 1, 3 * d->tri_count, d->tri, 0, 0},
              d->binary);
    vtp_array(o, &(va_desc){"offsets", VA_I64_SEQ, 1, d->tri_count, NULL, 1, 3}, d->binary);
  } else {
    /* one vertex cell per point: connectivity 0..n-1, offsets 1..n */
    vtp_array(o, &(va_desc){"connectivity", VA_I64_SEQ, 1, d->point_count, NULL, 0, 1}, d->binary);
    vtp_array(o, &(va_desc){"offsets", VA_I64_SEQ, 1, d->point_count, NULL, 1, 1}, d->binary);
  }
  wf_atomic_file_printf(f, "      </%s>\n    </Piece>\n  </PolyData>\n</VTKFile>\n",
                        mesh ? "Polys" : "Verts");
  return ob_finish(o);
}

/* ---- ParaView collections ---------------------------------------------------------------- */

typedef struct pvd_entry {
  double time;
  int part;
  char *name; /* NULL: no name attribute */
  char *file;
} pvd_entry;

struct wf_pvd {
  char *path;
  pvd_entry *e;
  size_t count, cap;
};

static wf_status pvd_write(const wf_pvd *p) {
  wf_atomic_file *f;
  wf_status st = wf_atomic_file_open(p->path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f, "<?xml version=\"1.0\"?>\n"
                           "<VTKFile type=\"Collection\" version=\"0.1\" "
                           "byte_order=\"LittleEndian\">\n  <Collection>\n");
  for (size_t i = 0; i < p->count; i++) {
    wf_atomic_file_printf(f, "    <DataSet timestep=\"%.17g\" group=\"\" part=\"%d\" ",
                          p->e[i].time, p->e[i].part);
    if (p->e[i].name) {
      wf_atomic_file_printf(f, "name=\"");
      xml_text(f, p->e[i].name);
      wf_atomic_file_printf(f, "\" ");
    }
    wf_atomic_file_printf(f, "file=\"");
    xml_text(f, p->e[i].file);
    wf_atomic_file_printf(f, "\"/>\n");
  }
  wf_atomic_file_printf(f, "  </Collection>\n</VTKFile>\n");
  return wf_atomic_file_commit(f);
}

wf_status wf_pvd_create(const char *path, wf_pvd **out) {
  if (!path || !out) return wf__error(WF_ERR_INVALID, __func__, "path or out is NULL");
  *out = NULL;
  wf_pvd *p = calloc(1, sizeof *p);
  if (!p || !(p->path = strdup(path))) {
    free(p);
    return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for collection '%s'", path);
  }
  wf_status st = pvd_write(p);
  if (st != WF_OK) {
    wf_pvd_destroy(p);
    return st;
  }
  *out = p;
  return WF_OK;
}

static void pvd_entry_free(pvd_entry *e) {
  free(e->name);
  free(e->file);
}

wf_status wf_pvd_add_entries(wf_pvd *p, const wf_pvd_entry *entries, size_t n) {
  if (!p || (n && !entries))
    return wf__error(WF_ERR_INVALID, __func__, "collection or entries is NULL");
  for (size_t i = 0; i < n; i++)
    if (!entries[i].file || !*entries[i].file)
      return wf__error(WF_ERR_INVALID, __func__, "'%s': entry %zu has no file", p->path, i);
  if (p->count + n > p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 64;
    while (cap < p->count + n)
      cap *= 2;
    pvd_entry *e = realloc(p->e, cap * sizeof *e);
    if (!e) return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for '%s'", p->path);
    p->e = e, p->cap = cap;
  }
  size_t first = p->count;
  wf_status st = WF_OK;
  for (size_t i = 0; i < n && st == WF_OK; i++) {
    pvd_entry *e = &p->e[p->count];
    *e = (pvd_entry){entries[i].time, entries[i].part, NULL, strdup(entries[i].file)};
    if (entries[i].name) e->name = strdup(entries[i].name);
    if (!e->file || (entries[i].name && !e->name)) {
      pvd_entry_free(e);
      st = wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for '%s'", p->path);
    } else {
      p->count++;
    }
  }
  if (st == WF_OK) st = pvd_write(p);
  if (st != WF_OK) /* the file on disk does not list them either */
    while (p->count > first)
      pvd_entry_free(&p->e[--p->count]);
  return st;
}

wf_status wf_pvd_add(wf_pvd *p, double time, int part, const char *file) {
  if (!p || !file || !*file)
    return wf__error(WF_ERR_INVALID, __func__, "collection or file is NULL, or file is empty");
  wf_pvd_entry e = {time, part, NULL, file};
  return wf_pvd_add_entries(p, &e, 1);
}

size_t wf_pvd_count(const wf_pvd *p) { return p ? p->count : 0; }

void wf_pvd_destroy(wf_pvd *p) {
  if (!p) return;
  for (size_t i = 0; i < p->count; i++)
    pvd_entry_free(&p->e[i]);
  free(p->e);
  free(p->path);
  free(p);
}

/* ---- statistics CSV ---------------------------------------------------------------------- */

struct wf_csv {
  FILE *f;
  char *path;
  int columns;
  size_t rows;
};

/* A header field, quoted (RFC 4180) when it holds a comma, a quote or a line break. */
static void csv_field(wf_atomic_file *f, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    wf_atomic_file_printf(f, "%s", s);
    return;
  }
  wf_atomic_file_printf(f, "\"");
  for (; *s; s++)
    wf_atomic_file_printf(f, *s == '"' ? "\"\"" : "%c", *s);
  wf_atomic_file_printf(f, "\"");
}

wf_status wf_csv_open(const char *path, const char *const *columns, int column_count,
                      wf_csv **out) {
  if (!path || !out || !columns || column_count < 1)
    return wf__error(WF_ERR_INVALID, __func__, "path, columns or out is NULL, or no columns");
  *out = NULL;
  for (int i = 0; i < column_count; i++)
    if (!columns[i])
      return wf__error(WF_ERR_INVALID, __func__, "'%s': column %d has no name", path, i);
  wf_atomic_file *af;
  wf_status st = wf_atomic_file_open(path, &af);
  if (st != WF_OK) return st;
  for (int i = 0; i < column_count; i++) {
    if (i) wf_atomic_file_printf(af, ",");
    csv_field(af, columns[i]);
  }
  wf_atomic_file_printf(af, "\n");
  st = wf_atomic_file_commit(af);
  if (st != WF_OK) return st;
  wf_csv *c = calloc(1, sizeof *c);
  if (!c || !(c->path = strdup(path))) {
    free(c);
    return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for '%s'", path);
  }
  int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  int err = errno;
  if (fd >= 0 && !(c->f = fdopen(fd, "ab"))) err = errno, close(fd);
  if (!c->f) {
    free(c->path), free(c);
    return wf__error(WF_ERR_IO, __func__, "cannot open '%s' to append rows: %s", path,
                     strerror(err));
  }
  c->columns = column_count;
  *out = c;
  return WF_OK;
}

wf_status wf_csv_append(wf_csv *c, const double *values) {
  if (!c || !values) return wf__error(WF_ERR_INVALID, __func__, "csv or values is NULL");
  int failed = 0;
  for (int i = 0; i < c->columns && !failed; i++)
    failed = fprintf(c->f, "%s%.17g", i ? "," : "", values[i]) < 0;
  if (!failed) failed = fputc('\n', c->f) == EOF;
  if (!failed) failed = fflush(c->f) != 0;
  if (failed) {
    int err = errno;
    clearerr(c->f);
    return wf__error(WF_ERR_IO, __func__, "cannot append row %zu to '%s': %s", c->rows + 1, c->path,
                     strerror(err));
  }
  c->rows++;
  return WF_OK;
}

wf_status wf_csv_close(wf_csv *c) {
  if (!c) return WF_OK;
  const char *step = NULL;
  int err = 0;
  if (fflush(c->f) != 0) step = "write", err = errno;
  if (!step && fsync(fileno(c->f)) != 0 && errno != EINVAL) step = "sync", err = errno;
  if (fclose(c->f) != 0 && !step) step = "close", err = errno;
  wf_status st =
      step ? wf__error(WF_ERR_IO, __func__, "cannot %s '%s': %s", step, c->path, strerror(err))
           : WF_OK;
  free(c->path);
  free(c);
  return st;
}
