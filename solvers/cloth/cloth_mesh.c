/* Cloth topology on the host: the grid generator, the OBJ reader, validation, the vertex ->
 * triangle CSR, unique edges, springs (CSR), XPBD constraints with a greedy colouring, and masses.
 *
 * Everything here runs once, at creation, and every output is in a fixed order that depends only
 * on the input: triangles in input order, edges in the order of their first triangle, springs in
 * generation order, each vertex's links in spring order, constraints in generation order within a
 * colour. Errors name the cloth and field, or the OBJ file and line. */
#include "cloth_mesh.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"

#define NONE UINT32_MAX

static wf_status oom(const char *fn, const char *name) {
  return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth '%s': out of host memory", name);
}

void wfc_topology_free(wfc_topology *t) {
  free(t->x), free(t->tris), free(t->tri_line), free(t->vt_start), free(t->vt_list), free(t->edges);
  memset(t, 0, sizeof *t);
}

void wfc_springs_free(wfc_springs *s) {
  free(s->adj_start), free(s->adj);
  memset(s, 0, sizeof *s);
}

void wfc_constraints_free(wfc_constraints *c) {
  free(c->cons), free(c->colour_start);
  memset(c, 0, sizeof *c);
}

static bool finite3(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* ---- grid -------------------------------------------------------------------------------------
 */

static bool unit(const float in[3], double out[3]) {
  double l = sqrt((double)in[0] * in[0] + (double)in[1] * in[1] + (double)in[2] * in[2]);
  if (!(l > 0.0) || !isfinite(l)) return false;
  for (int k = 0; k < 3; k++)
    out[k] = in[k] / l;
  return true;
}

/* ---- the origin ------------------------------------------------------------------------------
 */

/* The bounding box of world positions, grown by x. */
static void box_grow(double lo[3], double hi[3], const double x[3]) {
  for (int k = 0; k < 3; k++)
    lo[k] = x[k] < lo[k] ? x[k] : lo[k], hi[k] = x[k] > hi[k] ? x[k] : hi[k];
}

/* The origin: the given one, or the box's centre rounded to whole metres (exact in float up to
 * 2^24 m, so that a collider's or a position's offset from it is computed without rounding
 * where the offset is small). */
static void origin_pick(const double lo[3], const double hi[3], const double *given,
                        double out[3]) {
  for (int k = 0; k < 3; k++)
    out[k] = given ? given[k] : floor(0.5 * (lo[k] + hi[k]) + 0.5);
}

static bool finite3d(const double *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

wf_status wfc_grid_build(const char *fn, const char *name, const wf_cloth_grid *g,
                         const double *origin, wfc_topology *t) {
  memset(t, 0, sizeof *t);
  for (int k = 0; k < 2; k++) {
    if (g->resolution[k] <= 0)
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': grid.resolution[%d] is %d: must be >= 1 (zero resolution)",
                       name, k, g->resolution[k]);
    if (!(g->size[k] >= 0.0f) || !isfinite(g->size[k]))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': grid.size[%d] %g must be a finite number >= 0", name, k,
                       (double)g->size[k]);
  }
  uint64_t nu = (uint64_t)g->resolution[0], nv = (uint64_t)g->resolution[1];
  if (nu * nv < 2)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': grid.resolution %d x %d has fewer than 2 vertices", name,
                     g->resolution[0], g->resolution[1]);
  if (nu * nv > WFC_MAX_VERTICES / 2)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': grid.resolution %d x %d: too many vertices",
                     name, g->resolution[0], g->resolution[1]);
  if ((nu > 1 && !(g->size[0] > 0.0f)) || (nv > 1 && !(g->size[1] > 0.0f)))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': grid.size %g x %g must be > 0 along each axis with more than one "
                     "vertex",
                     name, (double)g->size[0], (double)g->size[1]);
  double u[3], v[3];
  if (!finite3(g->center))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': grid.center is not finite", name);
  if (!unit(g->u_axis, u) || !unit(g->v_axis, v))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': grid.u_axis and grid.v_axis must be finite and non-zero", name);
  double cr[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
  if (sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]) < 1e-6)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': grid.u_axis and grid.v_axis are parallel",
                     name);
  t->nv = (uint32_t)(nu * nv);
  t->nt = (uint32_t)(2 * (nu - 1) * (nv - 1));
  t->grid[0] = (uint32_t)nu, t->grid[1] = (uint32_t)nv;
  t->x = malloc((size_t)t->nv * sizeof *t->x);
  t->tris = malloc((size_t)t->nt * 3 * sizeof *t->tris + 4);
  if (!t->x || !t->tris) {
    wfc_topology_free(t);
    return oom(fn, name);
  }
  /* the world positions in double, twice: for the box, then relative to the origin */
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) origin_pick(lo, hi, origin, t->origin);
    for (uint64_t j = 0; j < nv; j++)
      for (uint64_t i = 0; i < nu; i++) {
        double a = nu > 1 ? ((double)i / (double)(nu - 1) - 0.5) * g->size[0] : 0.0;
        double b = nv > 1 ? (0.5 - (double)j / (double)(nv - 1)) * g->size[1] : 0.0;
        double x[3];
        for (int k = 0; k < 3; k++)
          x[k] = g->center[k] + a * u[k] + b * v[k];
        if (pass == 0) box_grow(lo, hi, x);
        for (int k = 0; pass == 1 && k < 3; k++)
          t->x[j * nu + i][k] = (float)(x[k] - t->origin[k]);
      }
  }
  /* two triangles per quad, split along (i, j) - (i+1, j+1), wound (i,j) -> (i+1,j) -> ... */
  size_t n = 0;
  for (uint64_t j = 0; j + 1 < nv; j++)
    for (uint64_t i = 0; i + 1 < nu; i++) {
      uint32_t a = (uint32_t)(j * nu + i), b = a + 1, c = (uint32_t)((j + 1) * nu + i + 1),
               d = c - 1;
      uint32_t q[6] = {a, d, c, a, c, b};
      memcpy(t->tris + n, q, sizeof q);
      n += 6;
    }
  return WF_OK;
}

/* ---- OBJ and arrays ---------------------------------------------------------------------------
 */

typedef struct growing {
  void *data;
  size_t count, cap, elem;
} growing;

static bool grow_push(growing *g, const void *item) {
  if (g->count == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 256;
    void *d = realloc(g->data, cap * g->elem);
    if (!d) return false;
    g->data = d, g->cap = cap;
  }
  memcpy((char *)g->data + g->count * g->elem, item, g->elem);
  g->count++;
  return true;
}

/* Reads one face corner "i", "i/t", "i//n" or "i/t/n"; returns the 0-based vertex or -1. */
static long parse_corner(const char **p, size_t nverts, bool *bad) {
  char *end;
  errno = 0;
  long i = strtol(*p, &end, 10);
  if (end == *p || errno) {
    *bad = true;
    return -1;
  }
  const char *q = end;
  while (*q && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n')
    q++; /* skip /t/n */
  *p = q;
  if (i > 0) return i - 1;
  if (i < 0) return (long)nverts + i;
  return -1;
}

static wf_status obj_read(const char *fn, const char *name, const char *path, growing *verts,
                          growing *tris, growing *lines) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return wf__error(WF_ERR_IO, fn, "cloth '%s': cannot open OBJ file %s: %s", name, path,
                     strerror(errno));
  char buf[4096];
  int line = 0;
  wf_status st = WF_OK;
  long *poly = NULL;
  size_t poly_cap = 0;
  while (st == WF_OK && fgets(buf, sizeof buf, f)) {
    line++;
    size_t len = strlen(buf);
    if (len == sizeof buf - 1 && buf[len - 1] != '\n' && !feof(f)) {
      st = wf__error(WF_ERR_PARSE, fn, "%s:%d: line longer than %zu characters", path, line,
                     sizeof buf - 2);
      break;
    }
    const char *p = buf;
    while (*p == ' ' || *p == '\t')
      p++;
    if (p[0] == 'v' && (p[1] == ' ' || p[1] == '\t')) {
      float v[3];
      p += 2;
      for (int k = 0; k < 3; k++) {
        char *end;
        v[k] = strtof(p, &end);
        if (end == p || !isfinite(v[k])) {
          st = wf__error(WF_ERR_PARSE, fn, "%s:%d: vertex needs 3 finite coordinates", path, line);
          break;
        }
        p = end;
      }
      if (st == WF_OK && !grow_push(verts, v)) st = oom(fn, name);
    } else if (p[0] == 'f' && (p[1] == ' ' || p[1] == '\t')) {
      p += 2;
      size_t n = 0;
      for (;;) {
        while (*p == ' ' || *p == '\t')
          p++;
        if (!*p || *p == '\r' || *p == '\n' || *p == '#') break;
        bool bad = false;
        long i = parse_corner(&p, verts->count, &bad);
        if (bad) {
          st = wf__error(WF_ERR_PARSE, fn, "%s:%d: face corner %zu is not a vertex index", path,
                         line, n + 1);
          break;
        }
        if (i < 0 || (size_t)i >= verts->count) {
          st = wf__error(WF_ERR_PARSE, fn,
                         "%s:%d: face corner %zu refers to vertex %ld, but %zu vertices are "
                         "defined so far",
                         path, line, n + 1, i < 0 ? i : i + 1, verts->count);
          break;
        }
        if (n == poly_cap) {
          poly_cap = poly_cap ? 2 * poly_cap : 16;
          long *np = realloc(poly, poly_cap * sizeof *poly);
          if (!np) {
            st = oom(fn, name);
            break;
          }
          poly = np;
        }
        poly[n++] = i;
      }
      if (st != WF_OK) break;
      if (n < 3) {
        st = wf__error(WF_ERR_PARSE, fn,
                       "%s:%d: a face needs at least 3 vertices, this one has %zu", path, line, n);
        break;
      }
      for (size_t k = 1; k + 1 < n && st == WF_OK; k++) { /* a fan around the first corner */
        uint32_t tri[3] = {(uint32_t)poly[0], (uint32_t)poly[k], (uint32_t)poly[k + 1]};
        if (!grow_push(tris, tri) || !grow_push(lines, &line)) st = oom(fn, name);
      }
    }
  }
  if (st == WF_OK && ferror(f))
    st = wf__error(WF_ERR_IO, fn, "cloth '%s': reading %s failed", name, path);
  free(poly);
  fclose(f);
  return st;
}

wf_status wfc_mesh_build(const char *fn, const char *name, const wf_cloth_mesh_desc *m,
                         const double *origin, wfc_topology *t) {
  memset(t, 0, sizeof *t);
  if (!(m->scale > 0.0f) || !isfinite(m->scale))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': mesh.scale %g must be a finite number > 0",
                     name, (double)m->scale);
  if (!finite3(m->translate))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': mesh.translate is not finite", name);
  if (m->path) {
    growing verts = {.elem = sizeof(float[3])}, tris = {.elem = sizeof(uint32_t[3])},
            lines = {.elem = sizeof(int)};
    wf_status st = obj_read(fn, name, m->path, &verts, &tris, &lines);
    if (st == WF_OK && tris.count == 0)
      st = wf__error(WF_ERR_PARSE, fn, "%s: the OBJ file has no faces (empty mesh)", m->path);
    if (st == WF_OK && verts.count > WFC_MAX_VERTICES / 2)
      st = wf__error(WF_ERR_INVALID, fn, "%s: %zu vertices are too many", m->path, verts.count);
    if (st != WF_OK) {
      free(verts.data), free(tris.data), free(lines.data);
      return st;
    }
    t->nv = (uint32_t)verts.count, t->nt = (uint32_t)tris.count;
    t->x = verts.data, t->tris = tris.data, t->tri_line = lines.data;
    t->path = m->path;
  } else {
    if (!m->vertices || !m->triangles || m->triangle_count == 0 || m->vertex_count == 0)
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': mesh has no path and no vertices/triangles (empty mesh)", name);
    if (m->vertex_count > WFC_MAX_VERTICES / 2)
      return wf__error(WF_ERR_INVALID, fn, "cloth '%s': mesh.vertex_count %u is too many", name,
                       m->vertex_count);
    t->nv = m->vertex_count, t->nt = m->triangle_count;
    t->x = malloc((size_t)t->nv * sizeof *t->x);
    t->tris = malloc((size_t)t->nt * 3 * sizeof *t->tris);
    if (!t->x || !t->tris) {
      wfc_topology_free(t);
      return oom(fn, name);
    }
    for (uint32_t i = 0; i < t->nv; i++) {
      if (!finite3(m->vertices[i])) {
        wfc_topology_free(t);
        return wf__error(WF_ERR_INVALID, fn, "cloth '%s': mesh.vertices[%u] is not finite", name,
                         i);
      }
      memcpy(t->x[i], m->vertices[i], sizeof t->x[i]);
    }
    for (uint32_t k = 0; k < t->nt; k++)
      for (int c = 0; c < 3; c++) {
        if (m->triangles[k][c] >= t->nv) {
          uint32_t bad = m->triangles[k][c];
          wfc_topology_free(t);
          return wf__error(WF_ERR_INVALID, fn,
                           "cloth '%s': mesh.triangles[%u] refers to vertex %u of %u", name, k, bad,
                           m->vertex_count);
        }
        t->tris[3 * k + c] = m->triangles[k][c];
      }
  }
  bool rotate = false;
  for (int r = 0; r < 9; r++)
    rotate = rotate || m->rotation[r / 3][r % 3] != 0.0;
  /* the world positions in double (as a scene's rotation is given), twice: for the box, then
   * relative to the origin (a vertex's own input is read before it is overwritten) */
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) origin_pick(lo, hi, origin, t->origin);
    for (uint32_t i = 0; i < t->nv; i++) {
      float x[3];
      double w[3];
      for (int k = 0; k < 3; k++)
        x[k] = t->x[i][k] * m->scale;
      for (int k = 0; k < 3; k++)
        w[k] = rotate ? m->rotation[k][0] * x[0] + m->rotation[k][1] * x[1] +
                            m->rotation[k][2] * x[2] + (double)m->translate[k]
                      : (double)x[k] + (double)m->translate[k];
      if (pass == 0) box_grow(lo, hi, w);
      for (int k = 0; pass == 1 && k < 3; k++)
        t->x[i][k] = (float)(w[k] - t->origin[k]);
    }
  }
  if (!finite3d(t->origin)) {
    wfc_topology_free(t);
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': the mesh's origin is not finite", name);
  }
  return WF_OK;
}

/* ---- validation, vertex -> triangle CSR, edges ------------------------------------------------
 */

/* "shirt.obj:12" or "triangle 12", for messages about triangle k. */
static const char *tri_where(const wfc_topology *t, uint32_t k, char *buf, size_t n) {
  if (t->tri_line)
    snprintf(buf, n, "%s:%d", t->path, t->tri_line[k]);
  else
    snprintf(buf, n, "triangle %u", k);
  return buf;
}

static bool tri_has(const uint32_t *tri, uint32_t v) {
  return tri[0] == v || tri[1] == v || tri[2] == v;
}

wf_status wfc_topology_finish(const char *fn, const char *name, wfc_topology *t) {
  char w0[600], w1[600], w2[600];
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    if (q[0] == q[1] || q[1] == q[2] || q[0] == q[2])
      return wf__error(
          WF_ERR_INVALID, fn, "%s: degenerate triangle (vertex %u repeated) in cloth '%s'",
          tri_where(t, k, w0, sizeof w0), q[0] == q[1] || q[0] == q[2] ? q[0] : q[1], name);
    double e[3][3], lmax = 0.0;
    for (int c = 0; c < 3; c++) {
      double l = 0.0;
      for (int d = 0; d < 3; d++)
        e[c][d] = (double)t->x[q[(c + 1) % 3]][d] - (double)t->x[q[c]][d], l += e[c][d] * e[c][d];
      lmax = fmax(lmax, l);
    }
    double cr[3] = {e[0][1] * e[1][2] - e[0][2] * e[1][1], e[0][2] * e[1][0] - e[0][0] * e[1][2],
                    e[0][0] * e[1][1] - e[0][1] * e[1][0]};
    double area2 = sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
    if (!(area2 > 1e-6 * lmax))
      return wf__error(WF_ERR_INVALID, fn,
                       "%s: degenerate triangle (vertices %u, %u, %u have zero area) in cloth '%s'",
                       tri_where(t, k, w0, sizeof w0), q[0], q[1], q[2], name);
  }
  t->vt_start = calloc((size_t)t->nv + 1, sizeof *t->vt_start);
  t->vt_list = malloc((size_t)t->nt * 3 * sizeof *t->vt_list + 4);
  if (!t->vt_start || !t->vt_list) return oom(fn, name);
  for (size_t k = 0; k < 3 * (size_t)t->nt; k++)
    t->vt_start[t->tris[k] + 1]++;
  for (uint32_t i = 0; i < t->nv; i++)
    t->vt_start[i + 1] += t->vt_start[i];
  uint32_t *fill = malloc((size_t)t->nv * sizeof *fill + 4);
  if (!fill) return oom(fn, name);
  memcpy(fill, t->vt_start, (size_t)t->nv * sizeof *fill);
  for (uint32_t k = 0; k < t->nt; k++)
    for (int c = 0; c < 3; c++)
      t->vt_list[fill[t->tris[3 * (size_t)k + c]]++] = k;
  free(fill);

  /* Unique edges in the order of their first triangle; an edge in more than two is an error. */
  t->edges = malloc((size_t)t->nt * 3 * sizeof *t->edges + sizeof *t->edges);
  if (!t->edges) return oom(fn, name);
  t->ne = 0;
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    for (int c = 0; c < 3; c++) {
      uint32_t a = q[c], b = q[(c + 1) % 3];
      uint32_t found[3], nf = 0;
      for (uint32_t s = t->vt_start[a]; s < t->vt_start[a + 1]; s++) {
        uint32_t o = t->vt_list[s];
        if (tri_has(t->tris + 3 * (size_t)o, b)) {
          if (nf == 3) break;
          found[nf++] = o;
        }
      }
      if (nf > 2)
        return wf__error(WF_ERR_INVALID, fn,
                         "%s: edge (%u, %u) is shared by more than two triangles (non-manifold; "
                         "also %s and %s) in cloth '%s'",
                         tri_where(t, found[2], w0, sizeof w0), a, b,
                         tri_where(t, found[0], w1, sizeof w1),
                         tri_where(t, found[1], w2, sizeof w2), name);
      if (found[0] != k) continue; /* listed by its first triangle */
      wfc_edge e = {a, b, k, NONE, NONE, NONE};
      for (int d = 0; d < 3; d++)
        if (q[d] != a && q[d] != b) e.o0 = q[d];
      if (nf == 2) {
        const uint32_t *r = t->tris + 3 * (size_t)found[1];
        e.t1 = found[1];
        for (int d = 0; d < 3; d++)
          if (r[d] != a && r[d] != b) e.o1 = r[d];
      }
      t->edges[t->ne++] = e;
    }
  }
  return WF_OK;
}

/* ---- springs ----------------------------------------------------------------------------------
 */

typedef struct spring {
  uint32_t a, b, kind;
} spring;

static float dist(const wfc_topology *t, uint32_t a, uint32_t b) {
  float d[3] = {t->x[a][0] - t->x[b][0], t->x[a][1] - t->x[b][1], t->x[a][2] - t->x[b][2]};
  return sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

/* Springs (grid: neighbours, diagonals, two apart; mesh: edges, across edges), or with
 * `distance_only` the XPBD distance constraints (grid: neighbours and diagonals; mesh: edges). */
static spring *list_springs(const wfc_topology *t, bool distance_only, uint32_t *count) {
  size_t cap = t->grid[0] ? (size_t)t->nv * 6 + 8 : (size_t)t->ne * 2 + 8;
  spring *s = malloc(cap * sizeof *s);
  if (!s) return NULL;
  size_t n = 0;
  if (t->grid[0]) {
    uint32_t nu = t->grid[0], nv = t->grid[1];
    for (uint32_t j = 0; j < nv; j++)
      for (uint32_t i = 0; i < nu; i++) {
        uint32_t a = j * nu + i;
        if (i + 1 < nu) s[n++] = (spring){a, a + 1, WFC_STRETCH};
        if (j + 1 < nv) s[n++] = (spring){a, a + nu, WFC_STRETCH};
        if (i + 1 < nu && j + 1 < nv) {
          s[n++] = (spring){a, a + nu + 1, WFC_SHEAR};
          s[n++] = (spring){a + 1, a + nu, WFC_SHEAR};
        }
        if (distance_only) continue;
        if (i + 2 < nu) s[n++] = (spring){a, a + 2, WFC_BEND};
        if (j + 2 < nv) s[n++] = (spring){a, a + 2 * nu, WFC_BEND};
      }
  } else {
    for (uint32_t e = 0; e < t->ne; e++)
      s[n++] = (spring){t->edges[e].a, t->edges[e].b, WFC_STRETCH};
    for (uint32_t e = 0; e < t->ne && !distance_only; e++)
      if (t->edges[e].t1 != NONE) s[n++] = (spring){t->edges[e].o0, t->edges[e].o1, WFC_BEND};
  }
  *count = (uint32_t)n;
  return s;
}

wf_status wfc_springs_build(const char *fn, const char *name, const wfc_topology *t,
                            wfc_springs *out) {
  memset(out, 0, sizeof *out);
  uint32_t n = 0;
  spring *s = list_springs(t, false, &n);
  out->adj_start = calloc((size_t)t->nv + 1, sizeof *out->adj_start);
  out->adj = malloc((size_t)n * 2 * sizeof *out->adj + sizeof *out->adj);
  uint32_t *fill = malloc((size_t)t->nv * sizeof *fill + 4);
  if (!s || !out->adj_start || !out->adj || !fill) {
    free(s), free(fill);
    wfc_springs_free(out);
    return oom(fn, name);
  }
  for (uint32_t k = 0; k < n; k++)
    out->adj_start[s[k].a + 1]++, out->adj_start[s[k].b + 1]++;
  for (uint32_t i = 0; i < t->nv; i++)
    out->adj_start[i + 1] += out->adj_start[i];
  memcpy(fill, out->adj_start, (size_t)t->nv * sizeof *fill);
  for (uint32_t k = 0; k < n; k++) {
    float rest = dist(t, s[k].a, s[k].b);
    out->adj[fill[s[k].a]++] = (wfc_link){s[k].b | (s[k].kind << 30), rest};
    out->adj[fill[s[k].b]++] = (wfc_link){s[k].a | (s[k].kind << 30), rest};
  }
  out->count = n;
  free(s), free(fill);
  return WF_OK;
}

/* ---- XPBD constraints and colouring -----------------------------------------------------------
 */

#define MAX_COLOURS 128

wf_status wfc_constraints_build(const char *fn, const char *name, const wfc_topology *t,
                                wfc_constraints *out) {
  memset(out, 0, sizeof *out);
  uint32_t nd = 0;
  spring *s = list_springs(t, true, &nd);
  size_t nb = 0;
  for (uint32_t e = 0; e < t->ne; e++)
    nb += t->edges[e].t1 != NONE;
  size_t n = nd + nb;
  wfc_constraint *c = malloc(n * sizeof *c + sizeof *c);
  uint8_t *colour = malloc(n + 1);
  uint64_t(*used)[2] = calloc((size_t)t->nv, sizeof *used);
  out->cons = malloc(n * sizeof *out->cons + sizeof *out->cons);
  out->colour_start = calloc(MAX_COLOURS + 1, sizeof *out->colour_start);
  wf_status st = WF_OK;
  if (!s || !c || !colour || !used || !out->cons || !out->colour_start) {
    st = oom(fn, name);
    goto done;
  }
  size_t m = 0;
  for (uint32_t k = 0; k < nd; k++)
    c[m++] = (wfc_constraint){{s[k].a, s[k].b, 0, 0}, dist(t, s[k].a, s[k].b), s[k].kind};
  for (uint32_t e = 0; e < t->ne; e++) {
    const wfc_edge *ed = &t->edges[e];
    if (ed->t1 == NONE) continue;
    wfc_constraint b = {{ed->o0, ed->o1, ed->a, ed->b}, 0.0f, WFC_BEND};
    float theta = 0.0f;
    wfc_v3 g[4];
    wfc_v3 x[4];
    for (int q = 0; q < 4; q++)
      x[q] = wfc_v(t->x[b.v[q]][0], t->x[b.v[q]][1], t->x[b.v[q]][2]);
    if (wfc_dihedral(x[0], x[1], x[2], x[3], &theta, g)) b.rest = theta;
    c[m++] = b;
  }
  /* Greedy colouring in constraint order: the lowest colour none of its vertices has yet. */
  uint32_t colours = 0;
  for (size_t k = 0; k < n; k++) {
    int nvtx = c[k].kind == WFC_BEND ? 4 : 2;
    uint64_t busy[2] = {0, 0};
    for (int q = 0; q < nvtx; q++)
      busy[0] |= used[c[k].v[q]][0], busy[1] |= used[c[k].v[q]][1];
    int col = 0;
    while (col < MAX_COLOURS && (busy[col >> 6] >> (col & 63)) & 1u)
      col++;
    if (col == MAX_COLOURS) {
      st = wf__error(WF_ERR_UNSUPPORTED, fn,
                     "cloth '%s': the XPBD constraint graph needs more than %d colours (a vertex "
                     "with very many neighbours near vertex %u)",
                     name, MAX_COLOURS, c[k].v[0]);
      goto done;
    }
    for (int q = 0; q < nvtx; q++)
      used[c[k].v[q]][col >> 6] |= (uint64_t)1 << (col & 63);
    colour[k] = (uint8_t)col;
    if ((uint32_t)col + 1 > colours) colours = (uint32_t)col + 1;
  }
  /* Counting sort by colour, stable: within a colour the generation order is kept. */
  for (size_t k = 0; k < n; k++)
    out->colour_start[colour[k] + 1]++;
  for (uint32_t q = 0; q < colours; q++)
    out->colour_start[q + 1] += out->colour_start[q];
  uint32_t fill[MAX_COLOURS];
  memcpy(fill, out->colour_start, sizeof fill);
  for (size_t k = 0; k < n; k++)
    out->cons[fill[colour[k]]++] = c[k];
  out->count = (uint32_t)n;
  out->colours = colours;
done:
  free(s), free(c), free(colour), free(used);
  if (st != WF_OK) wfc_constraints_free(out);
  return st;
}

/* ---- masses -----------------------------------------------------------------------------------
 */

wf_status wfc_inverse_masses(const char *fn, const char *name, const wfc_topology *t,
                             const wf_cloth_material *m, float *inv_mass) {
  if (m->particle_mass > 0.0f) {
    for (uint32_t i = 0; i < t->nv; i++)
      inv_mass[i] = 1.0f / m->particle_mass;
    return WF_OK;
  }
  double *mass = calloc((size_t)t->nv, sizeof *mass);
  if (!mass) return oom(fn, name);
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    double e1[3], e2[3];
    for (int d = 0; d < 3; d++)
      e1[d] = (double)t->x[q[1]][d] - t->x[q[0]][d], e2[d] = (double)t->x[q[2]][d] - t->x[q[0]][d];
    double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                    e1[0] * e2[1] - e1[1] * e2[0]};
    double area = 0.5 * sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
    for (int c = 0; c < 3; c++)
      mass[q[c]] += m->density * area / 3.0;
  }
  wf_status st = WF_OK;
  for (uint32_t i = 0; i < t->nv; i++) {
    if (!(mass[i] > 0.0)) {
      st = wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': vertex %u belongs to no triangle, so material.density gives it "
                     "no mass: set material.particle_mass",
                     name, i);
      break;
    }
    inv_mass[i] = (float)(1.0 / mass[i]);
  }
  free(mass);
  return st;
}
