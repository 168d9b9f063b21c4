/* Building a mesh collider's hierarchy on the host (wf_collider_mesh_create).
 *
 * Why a tree built on the host and uploaded, rather than a signed distance field: a grid fine
 * enough for grains of 1 mm over a 1 m hopper is 10^9 cells (4 GB), and a thin shell needs a grid
 * finer than its thickness; a tree is ~80 B per triangle whatever the scale, exact to the
 * triangle, and is built once (the mesh never deforms: motion is a pose). Built on the host
 * because it is built once, in O(n log n), in about a second for 10^6 triangles, and the
 * same bits then go to every partition's device (the split stays bitwise equal to one device).
 *
 * The tree: triangles ordered by the Morton code of their centroids (ties by index: the order
 * is deterministic), then split top-down where a range's codes first differ (split_of) down to
 * leaves of at most WFM_LEAF triangles; below depth WFM_PREFIX_DEPTH at the middle of the range,
 * so that the depth stays bounded (the query's fixed stack always suffices).
 * Boxes are the float minima and maxima of their triangles' vertices: exact, never too small.
 *
 * Degenerate triangles (zero area: repeated or collinear vertices, or non-finite coordinates)
 * are skipped and counted: files from scanners and CAD exports often hold a few, and they carry
 * no surface. A mesh with none left is an error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "mesh_internal.h"

typedef struct mkey {
  uint64_t code;
  uint32_t tri;
} mkey;

static int mkey_cmp(const void *a, const void *b) {
  const mkey *x = a, *y = b;
  if (x->code != y->code) return x->code < y->code ? -1 : 1;
  return x->tri < y->tri ? -1 : x->tri > y->tri;
}

static uint64_t spread21(uint64_t v) { /* bit i of v to bit 3i */
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffull;
  v = (v | v << 16) & 0x1f0000ff0000ffull;
  v = (v | v << 8) & 0x100f00f00f00f00full;
  v = (v | v << 4) & 0x10c30c30c30c30c3ull;
  v = (v | v << 2) & 0x1249249249249249ull;
  return v;
}

typedef struct builder {
  wfm_node *nodes;
  uint32_t n_nodes, depth;
  const wfm_tri *tris; /* in Morton order */
  const mkey *keys;    /* their codes, sorted */
} builder;

/* Down to this depth a node splits where its range's Morton codes first differ, below it at the
 * middle of the range (so the depth stays under WFM_STACK: at most this + log2(n / WFM_LEAF)). */
#define WFM_PREFIX_DEPTH 32u

/* Where node [lo, hi) splits. The codes of a range share a prefix; the first bit after it splits
 * the range into two Morton cells, each compact in space, so sibling boxes hardly overlap (Karras
 * 2012's linear BVH). Splitting at the middle of the range instead can cut a cell in two and give
 * each half a piece of the other's region: boxes that overlap and queries that visit both. Equal
 * codes, or depth WFM_PREFIX_DEPTH: the middle. The triangles' order is the same either way. */
static uint32_t split_of(const builder *b, uint32_t lo, uint32_t hi, uint32_t depth) {
  const uint32_t mid = lo + (hi - lo) / 2;
  const uint64_t a = b->keys[lo].code, z = b->keys[hi - 1].code;
  if (depth >= WFM_PREFIX_DEPTH || a == z) return mid;
  int bit = 63;
  while (!((a ^ z) >> bit & 1u))
    bit--;
  uint32_t l = lo, h = hi - 1; /* the first index whose code has the bit: in (lo, hi - 1] */
  while (l + 1 < h) {
    const uint32_t m = l + (h - l) / 2;
    if (b->keys[m].code >> bit & 1u)
      h = m;
    else
      l = m;
  }
  return h;
}

/* Node `at` over triangles [lo, hi); children are allocated in pairs after the ones so far. */
static void build_node(builder *b, uint32_t at, uint32_t lo, uint32_t hi, uint32_t depth) {
  wfm_node *nd = &b->nodes[at];
  if (depth > b->depth) b->depth = depth;
  if (hi - lo <= WFM_LEAF) {
    nd->first = lo, nd->count = hi - lo;
    for (int k = 0; k < 3; k++)
      nd->lo[k] = INFINITY, nd->hi[k] = -INFINITY;
    for (uint32_t i = lo; i < hi; i++) {
      const wfm_tri *t = &b->tris[i];
      const float v[3][3] = {
          {t->a.x, t->a.y, t->a.z}, {t->b.x, t->b.y, t->b.z}, {t->c.x, t->c.y, t->c.z}};
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 3; k++) {
          nd->lo[k] = fminf(nd->lo[k], v[j][k]);
          nd->hi[k] = fmaxf(nd->hi[k], v[j][k]);
        }
    }
    return;
  }
  uint32_t l = b->n_nodes;
  b->n_nodes += 2;
  nd->first = l, nd->count = 0;
  uint32_t mid = split_of(b, lo, hi, depth);
  build_node(b, l, lo, mid, depth + 1);
  build_node(b, l + 1, mid, hi, depth + 1);
  nd = &b->nodes[at];
  for (int k = 0; k < 3; k++) {
    nd->lo[k] = fminf(b->nodes[l].lo[k], b->nodes[l + 1].lo[k]);
    nd->hi[k] = fmaxf(b->nodes[l].hi[k], b->nodes[l + 1].hi[k]);
  }
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Edges used by exactly one kept triangle (an open mesh's boundary). */
static wf_status count_boundary(const uint32_t (*tri)[3], const uint32_t *kept, uint32_t n,
                                uint32_t *out) {
  uint64_t *e = malloc((size_t)n * 3 * sizeof *e + 1);
  if (!e) return WF_ERR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      uint32_t a = tri[kept[i]][k], b = tri[kept[i]][(k + 1) % 3];
      uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
      e[(size_t)i * 3 + k] = (uint64_t)lo << 32 | hi;
    }
  size_t m = (size_t)n * 3;
  qsort(e, m, sizeof *e, u64_cmp);
  uint32_t once = 0;
  for (size_t i = 0; i < m;) {
    size_t j = i;
    while (j < m && e[j] == e[i])
      j++;
    once += j - i == 1;
    i = j;
  }
  free(e);
  *out = once;
  return WF_OK;
}

void wf_collider_mesh_destroy(wf_collider_mesh *m) {
  if (!m) return;
  free(m->nodes);
  free(m->tris);
  free(m);
}

wf_status wfm_build(const char *fn, const char *name, const float (*v)[3], uint32_t nv,
                    const uint32_t (*tri)[3], uint32_t nt, wf_collider_mesh **out) {
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  const char *nm = name ? name : "mesh";
  if ((nt > 0 && !tri) || (nv > 0 && !v))
    return wf__error(WF_ERR_INVALID, fn, "mesh '%s': NULL vertices or triangles", nm);
  if (nt > 0x3fffffffu)
    return wf__error(WF_ERR_INVALID, fn, "mesh '%s': %u triangles (at most 2^30)", nm, nt);
  for (uint32_t i = 0; i < nt; i++)
    for (int k = 0; k < 3; k++)
      if (tri[i][k] >= nv)
        return wf__error(WF_ERR_INVALID, fn,
                         "mesh '%s': triangle %u uses vertex %u (the mesh has %u vertices)", nm, i,
                         tri[i][k], nv);
  wf_collider_mesh *m = calloc(1, sizeof *m);
  uint32_t *kept = malloc((size_t)nt * sizeof *kept + 1);
  wfm_tri *raw = malloc((size_t)nt * sizeof *raw + 1);
  mkey *keys = malloc((size_t)nt * sizeof *keys + 1);
  wf_status st = WF_OK;
  if (!m || !kept || !raw || !keys) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "mesh '%s': out of host memory", nm);
    goto done;
  }
  snprintf(m->name, sizeof m->name, "%s", nm);
  /* the kept triangles, their normals and the bounds */
  uint32_t n = 0;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (uint32_t i = 0; i < nt; i++) {
    const float *a = v[tri[i][0]], *b = v[tri[i][1]], *c = v[tri[i][2]];
    double e1[3], e2[3], e3[3], cr[3];
    int finite = 1;
    for (int k = 0; k < 3; k++) {
      e1[k] = (double)b[k] - a[k], e2[k] = (double)c[k] - a[k], e3[k] = (double)c[k] - b[k];
      finite &= isfinite(a[k]) && isfinite(b[k]) && isfinite(c[k]);
    }
    cr[0] = e1[1] * e2[2] - e1[2] * e2[1];
    cr[1] = e1[2] * e2[0] - e1[0] * e2[2];
    cr[2] = e1[0] * e2[1] - e1[1] * e2[0];
    double area2 = sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
    double l2 = fmax(fmax(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2],
                          e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]),
                     e3[0] * e3[0] + e3[1] * e3[1] + e3[2] * e3[2]);
    /* zero area, to the precision of float vertices: |e1 x e2| against the longest edge² */
    if (!finite || !(area2 > 1e-6 * l2)) {
      m->info.degenerate++;
      continue;
    }
    wfm_tri t = {{a[0], a[1], a[2], (float)(cr[0] / area2)},
                 {b[0], b[1], b[2], (float)(cr[1] / area2)},
                 {c[0], c[1], c[2], (float)(cr[2] / area2)}};
    raw[n] = t;
    kept[n] = i;
    for (int k = 0; k < 3; k++) {
      lo[k] = fmin(lo[k], fmin(a[k], fmin(b[k], c[k])));
      hi[k] = fmax(hi[k], fmax(a[k], fmax(b[k], c[k])));
    }
    n++;
  }
  if (n == 0) {
    st = wf__error(WF_ERR_INVALID, fn,
                   nt ? "mesh '%s': all %u triangles are degenerate (zero area)"
                      : "mesh '%s': no triangles",
                   nm, nt);
    goto done;
  }
  m->info.triangles = n;
  for (int k = 0; k < 3; k++)
    m->info.lo[k] = (float)lo[k], m->info.hi[k] = (float)hi[k];
  if ((st = count_boundary(tri, kept, n, &m->info.boundary_edges)) != WF_OK) {
    st = wf__error(st, fn, "mesh '%s': out of host memory", nm);
    goto done;
  }
  /* Morton order of the centroids */
  for (uint32_t i = 0; i < n; i++) {
    const wfm_tri *t = &raw[i];
    uint64_t code = 0;
    double cen[3] = {((double)t->a.x + t->b.x + t->c.x) / 3.0,
                     ((double)t->a.y + t->b.y + t->c.y) / 3.0,
                     ((double)t->a.z + t->b.z + t->c.z) / 3.0};
    for (int k = 0; k < 3; k++) {
      double ext = hi[k] - lo[k];
      double q = ext > 0.0 ? (cen[k] - lo[k]) / ext * 2097151.0 : 0.0;
      uint64_t c = (uint64_t)fmin(fmax(q, 0.0), 2097151.0);
      code |= spread21(c) << k;
    }
    keys[i] = (mkey){code, i};
  }
  qsort(keys, n, sizeof *keys, mkey_cmp);
  m->tris = malloc((size_t)n * sizeof *m->tris);
  uint32_t cap = 2 * n + 1; /* halving leaves at most n leaves: 2n - 1 nodes; trimmed after */
  m->nodes = calloc(cap, sizeof *m->nodes);
  if (!m->tris || !m->nodes) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "mesh '%s': out of host memory", nm);
    goto done;
  }
  for (uint32_t i = 0; i < n; i++)
    m->tris[i] = raw[keys[i].tri];
  builder b = {.nodes = m->nodes, .n_nodes = 1, .depth = 0, .tris = m->tris, .keys = keys};
  build_node(&b, 0, 0, n, 0);
  m->info.nodes = b.n_nodes;
  wfm_node *trim = realloc(m->nodes, (size_t)b.n_nodes * sizeof *m->nodes);
  if (trim) m->nodes = trim;
  m->info.depth = b.depth;
  if (b.depth + 2 >= WFM_STACK) { /* 4 · 2^60 triangles: not reachable with 32-bit counts */
    st = wf__error(WF_ERR_INVALID, fn, "mesh '%s': the tree is too deep", nm);
    goto done;
  }
done:
  free(kept);
  free(raw);
  free(keys);
  if (st != WF_OK) {
    wf_collider_mesh_destroy(m);
    return st;
  }
  *out = m;
  return WF_OK;
}

wf_status wf_collider_mesh_create(const char *name, const float (*vertices)[3], uint32_t nv,
                                  const uint32_t (*triangles)[3], uint32_t nt,
                                  wf_collider_mesh **out) {
  return wfm_build("wf_collider_mesh_create", name, vertices, nv, triangles, nt, out);
}

wf_collider_mesh_info wf_collider_mesh_info_get(const wf_collider_mesh *m) {
  wf_collider_mesh_info z = {0};
  return m ? m->info : z;
}

float wf_collider_mesh_distance(const wf_collider_mesh *m, float thickness, const float x[3],
                                float n[3]) {
  float nn[3];
  if (!m || !x) return NAN;
  float d = wfm_distance(m->nodes, m->tris, x, thickness, INFINITY, NULL, nn);
  if (n) n[0] = nn[0], n[1] = nn[1], n[2] = nn[2];
  return d;
}
