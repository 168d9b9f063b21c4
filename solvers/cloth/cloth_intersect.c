/* Counting intersecting triangle pairs of a cloth state, exactly (wf_cloth_intersections_count,
 * weft/cloth.h). The contact tests' measure of "no pass-through", and a tool for users.
 *
 * Exact: every decision is the sign of a polynomial in the float coordinates (orientations of
 * four points in 3D, of three points in a coordinate plane), evaluated first in double with an
 * error bound far above double's rounding, and where that bound cannot decide, exactly, as a sum
 * of doubles turned into a nonoverlapping expansion (Priest; Shewchuk 1997, "Adaptive precision
 * floating-point arithmetic and fast robust geometric predicates": a float difference is two
 * doubles, a product of doubles is two, and a sum of doubles grown into an expansion one at a
 * time has the sign of its largest part). So no rounding can hide or invent an intersection.
 *
 * What counts (closed triangles; touching counts as intersecting):
 *  - two triangles sharing no vertex: they intersect;
 *  - sharing one vertex s: they meet somewhere other than s. Their intersection is convex and
 *    holds s, so it is more than s exactly when the edge opposite s of one meets the other;
 *  - sharing an edge: they are coplanar and on the same side of it (folded flat on each other);
 *  - triangles of zero area, and pairs sharing all three vertices, are not counted.
 * Broad phase: the triangles' boxes sorted by their low x and swept (box tests on the floats
 * themselves are exact). Host code only: a state is downloaded first (wf_cloth_intersections).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "weft/cloth.h"

/* ---- exact signs -------------------------------------------------------------------------- */

enum { EXP_MAX = 256 };

static void two_sum(double a, double b, double *x, double *y) {
  double s = a + b, bv = s - a, av = s - bv;
  *x = s;
  *y = (a - av) + (b - bv);
}

/* a * b = *x + *y exactly (fma is exact by definition; no underflow for cloth coordinates) */
static void two_prod(double a, double b, double *x, double *y) {
  *x = a * b;
  *y = fma(a, b, -*x);
}

/* Adds b to the nonoverlapping expansion e[0..n) (increasing magnitude, no zeros); returns the
 * new length. In place: e[m] is written only after e[i >= m] was read. */
static int grow(double *e, int n, double b) {
  double q = b;
  int m = 0;
  for (int i = 0; i < n; i++) {
    double hi, lo;
    two_sum(q, e[i], &hi, &lo);
    if (lo != 0.0) e[m++] = lo;
    q = hi;
  }
  if (q != 0.0) e[m++] = q;
  return m;
}

/* The sign of the sum of terms t[0..n) (each a double), exactly. */
static int sign_of_sum(const double *t, int n) {
  double e[EXP_MAX + 1];
  int m = 0;
  for (int i = 0; i < n; i++)
    m = grow(e, m, t[i]);
  return m == 0 ? 0 : (e[m - 1] > 0.0 ? 1 : -1);
}

/* A float difference a - b as two doubles whose sum is exact. */
typedef struct dd {
  double v[2];
} dd;
static dd diff(float a, float b) {
  dd r;
  two_sum((double)a, -(double)b, &r.v[0], &r.v[1]);
  return r;
}

/* Appends s * x * y * z exactly (8 triple products, 4 doubles each) to t; returns the new n. */
static int put3(double *t, int n, double s, dd x, dd y, dd z) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 2; k++) {
        double p, e, a, b;
        two_prod(x.v[i], y.v[j], &p, &e);
        two_prod(p, s * z.v[k], &a, &b);
        t[n++] = a, t[n++] = b;
        two_prod(e, s * z.v[k], &a, &b);
        t[n++] = a, t[n++] = b;
      }
  return n;
}

/* Appends s * x * y exactly to t. */
static int put2(double *t, int n, double s, dd x, dd y) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double p, e;
      two_prod(x.v[i], s * y.v[j], &p, &e);
      t[n++] = p, t[n++] = e;
    }
  return n;
}

/* The filter: a double evaluation is trusted when it exceeds 1e-12 of the permanent (the sum of
 * the terms' magnitudes). Its rounding error is below ~10 units of 2^-53 (1.1e-16) of the
 * permanent: a thousand times smaller. */
static const double FILTER = 1e-12;

/* sign of det [a - d; b - d; c - d]: > 0 when d is below the plane of a, b, c (a, b, c seen
 * counter-clockwise from above). */
static int orient3d(const float *a, const float *b, const float *c, const float *d) {
  double ax = (double)a[0] - d[0], ay = (double)a[1] - d[1], az = (double)a[2] - d[2];
  double bx = (double)b[0] - d[0], by = (double)b[1] - d[1], bz = (double)b[2] - d[2];
  double cx = (double)c[0] - d[0], cy = (double)c[1] - d[1], cz = (double)c[2] - d[2];
  double det = ax * (by * cz - bz * cy) + bx * (cy * az - cz * ay) + cx * (ay * bz - az * by);
  double perm = fabs(ax) * (fabs(by * cz) + fabs(bz * cy)) +
                fabs(bx) * (fabs(cy * az) + fabs(cz * ay)) +
                fabs(cx) * (fabs(ay * bz) + fabs(az * by));
  if (det > FILTER * perm) return 1;
  if (-det > FILTER * perm) return -1;
  if (perm == 0.0) return 0;
  dd X[3] = {diff(a[0], d[0]), diff(b[0], d[0]), diff(c[0], d[0])};
  dd Y[3] = {diff(a[1], d[1]), diff(b[1], d[1]), diff(c[1], d[1])};
  dd Z[3] = {diff(a[2], d[2]), diff(b[2], d[2]), diff(c[2], d[2])};
  double t[EXP_MAX];
  int n = 0;
  n = put3(t, n, 1.0, X[0], Y[1], Z[2]), n = put3(t, n, -1.0, X[0], Z[1], Y[2]);
  n = put3(t, n, 1.0, X[1], Y[2], Z[0]), n = put3(t, n, -1.0, X[1], Z[2], Y[0]);
  n = put3(t, n, 1.0, X[2], Y[0], Z[1]), n = put3(t, n, -1.0, X[2], Z[0], Y[1]);
  return sign_of_sum(t, n);
}

/* sign of the 2D orientation of a, b, c projected on coordinates (i, j). */
static int orient2d(const float *a, const float *b, const float *c, int i, int j) {
  double ax = (double)a[i] - c[i], ay = (double)a[j] - c[j];
  double bx = (double)b[i] - c[i], by = (double)b[j] - c[j];
  double det = ax * by - ay * bx, perm = fabs(ax * by) + fabs(ay * bx);
  if (det > FILTER * perm) return 1;
  if (-det > FILTER * perm) return -1;
  if (perm == 0.0) return 0;
  double t[32];
  int n = put2(t, 0, 1.0, diff(a[i], c[i]), diff(b[j], c[j]));
  n = put2(t, n, -1.0, diff(a[j], c[j]), diff(b[i], c[i]));
  return sign_of_sum(t, n);
}

/* ---- closed segments and triangles ---------------------------------------------------------- */

/* A coordinate plane (i, j) on which triangle abc projects with non-zero area, and the sign of
 * that area; 0 when the triangle has zero area. */
static int projection(const float *a, const float *b, const float *c, int *i, int *j) {
  static const int ax[3][2] = {{0, 1}, {1, 2}, {2, 0}};
  for (int k = 0; k < 3; k++) {
    int s = orient2d(a, b, c, ax[k][0], ax[k][1]);
    if (s) {
      *i = ax[k][0], *j = ax[k][1];
      return s;
    }
  }
  return 0;
}

/* p on the closed segment ab, given that the three are collinear (coordinate ranges). */
static int on_segment(const float *a, const float *b, const float *p) {
  for (int k = 0; k < 3; k++)
    if (p[k] < fminf(a[k], b[k]) || p[k] > fmaxf(a[k], b[k])) return 0;
  return 1;
}

/* Closed segments pq and ab in a coordinate plane (i, j), all four points in one plane. */
static int segments_2d(const float *p, const float *q, const float *a, const float *b, int i,
                       int j) {
  int d1 = orient2d(p, q, a, i, j), d2 = orient2d(p, q, b, i, j);
  int d3 = orient2d(a, b, p, i, j), d4 = orient2d(a, b, q, i, j);
  if (d1 * d2 < 0 && d3 * d4 < 0) return 1;
  return (d1 == 0 && on_segment(p, q, a)) || (d2 == 0 && on_segment(p, q, b)) ||
         (d3 == 0 && on_segment(a, b, p)) || (d4 == 0 && on_segment(a, b, q));
}

/* Point p in the closed triangle abc (coplanar), on plane (i, j) where abc has orientation s. */
static int in_triangle_2d(const float *p, const float *a, const float *b, const float *c, int s,
                          int i, int j) {
  return s * orient2d(a, b, p, i, j) >= 0 && s * orient2d(b, c, p, i, j) >= 0 &&
         s * orient2d(c, a, p, i, j) >= 0;
}

/* The closed segment pq meets the closed triangle abc (of non-zero area). */
static int segment_triangle(const float *p, const float *q, const float *a, const float *b,
                            const float *c) {
  int o1 = orient3d(a, b, c, p), o2 = orient3d(a, b, c, q);
  if (o1 * o2 > 0) return 0;
  if (o1 == 0 && o2 == 0) { /* in the triangle's plane */
    int i, j, s = projection(a, b, c, &i, &j);
    if (!s) return 0;
    return in_triangle_2d(p, a, b, c, s, i, j) || in_triangle_2d(q, a, b, c, s, i, j) ||
           segments_2d(p, q, a, b, i, j) || segments_2d(p, q, b, c, i, j) ||
           segments_2d(p, q, c, a, i, j);
  }
  /* the segment reaches the plane: the line pq passes through the closed triangle */
  int s1 = orient3d(p, q, a, b), s2 = orient3d(p, q, b, c), s3 = orient3d(p, q, c, a);
  return (s1 >= 0 && s2 >= 0 && s3 >= 0) || (s1 <= 0 && s2 <= 0 && s3 <= 0);
}

static int zero_area(const float *a, const float *b, const float *c) {
  int i, j;
  return projection(a, b, c, &i, &j) == 0;
}

/* Triangles u and v (vertex indices), by the rules at the top. */
static int pair_intersects(const float *x, size_t stride, const uint32_t *u, const uint32_t *v) {
#define P(k) (x + (size_t)(k)*stride)
  int shared = 0, su[3] = {0, 0, 0}, sv[3] = {0, 0, 0};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      if (u[i] == v[j]) shared++, su[i] = 1, sv[j] = 1;
  if (shared == 3) return 0;
  if (zero_area(P(u[0]), P(u[1]), P(u[2])) || zero_area(P(v[0]), P(v[1]), P(v[2]))) return 0;
  if (shared == 0) {
    for (int k = 0; k < 3; k++)
      if (segment_triangle(P(u[k]), P(u[(k + 1) % 3]), P(v[0]), P(v[1]), P(v[2])) ||
          segment_triangle(P(v[k]), P(v[(k + 1) % 3]), P(u[0]), P(u[1]), P(u[2])))
        return 1;
    return 0;
  }
  if (shared == 1) { /* the edge opposite the shared vertex, of each against the other */
    int iu = su[0] ? 0 : su[1] ? 1 : 2, iv = sv[0] ? 0 : sv[1] ? 1 : 2;
    return segment_triangle(P(u[(iu + 1) % 3]), P(u[(iu + 2) % 3]), P(v[0]), P(v[1]), P(v[2])) ||
           segment_triangle(P(v[(iv + 1) % 3]), P(v[(iv + 2) % 3]), P(u[0]), P(u[1]), P(u[2]));
  }
  /* an edge s-t shared: apexes a (of u) and b (of v) coplanar with it, on the same side */
  int iu = !su[0] ? 0 : !su[1] ? 1 : 2, iv = !sv[0] ? 0 : !sv[1] ? 1 : 2;
  const float *a = P(u[iu]), *b = P(v[iv]), *s = P(u[(iu + 1) % 3]), *t = P(u[(iu + 2) % 3]);
  if (orient3d(s, t, a, b) != 0) return 0;
  int i, j, sa = projection(s, t, a, &i, &j);
  return sa != 0 && sa == orient2d(s, t, b, i, j);
#undef P
}

/* ---- the count ------------------------------------------------------------------------------ */

typedef struct box {
  float lo[3], hi[3];
  uint32_t t;
} box;

static int box_cmp(const void *pa, const void *pb) {
  const box *a = pa, *b = pb;
  if (a->lo[0] != b->lo[0]) return a->lo[0] < b->lo[0] ? -1 : 1;
  return a->t < b->t ? -1 : a->t > b->t;
}

wf_status wf_cloth_intersections_count(const float *xyz, size_t stride, uint32_t vertex_count,
                                       const uint32_t *triangles, uint32_t triangle_count,
                                       uint64_t *count) {
  static const char fn[] = "wf_cloth_intersections_count";
  if (count) *count = 0;
  if (!count || (!xyz && vertex_count) || (!triangles && triangle_count))
    return wf__error(WF_ERR_INVALID, fn, "count, xyz or triangles is NULL");
  if (stride < 3)
    return wf__error(WF_ERR_INVALID, fn, "stride %zu must be >= 3 floats a vertex", stride);
  for (size_t k = 0; k < 3 * (size_t)triangle_count; k++)
    if (triangles[k] >= vertex_count)
      return wf__error(WF_ERR_INVALID, fn, "triangle %zu: vertex %u >= vertex_count %u", k / 3,
                       triangles[k], vertex_count);
  for (size_t k = 0; k < (size_t)vertex_count * stride; k += stride)
    if (!isfinite(xyz[k]) || !isfinite(xyz[k + 1]) || !isfinite(xyz[k + 2]))
      return wf__error(WF_ERR_INVALID, fn, "vertex %zu is not finite", k / stride);
  if (triangle_count < 2) return WF_OK;
  box *b = malloc((size_t)triangle_count * sizeof *b);
  if (!b) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  for (uint32_t t = 0; t < triangle_count; t++) {
    b[t].t = t;
    for (int k = 0; k < 3; k++)
      b[t].lo[k] = INFINITY, b[t].hi[k] = -INFINITY;
    for (int v = 0; v < 3; v++) {
      const float *p = xyz + (size_t)triangles[3 * (size_t)t + v] * stride;
      for (int k = 0; k < 3; k++)
        b[t].lo[k] = fminf(b[t].lo[k], p[k]), b[t].hi[k] = fmaxf(b[t].hi[k], p[k]);
    }
  }
  qsort(b, triangle_count, sizeof *b, box_cmp);
  uint64_t n = 0;
  for (uint32_t i = 0; i < triangle_count; i++)
    for (uint32_t j = i + 1; j < triangle_count && b[j].lo[0] <= b[i].hi[0]; j++) {
      if (b[j].lo[1] > b[i].hi[1] || b[i].lo[1] > b[j].hi[1] || b[j].lo[2] > b[i].hi[2] ||
          b[i].lo[2] > b[j].hi[2])
        continue;
      n += (uint64_t)pair_intersects(xyz, stride, triangles + 3 * (size_t)b[i].t,
                                     triangles + 3 * (size_t)b[j].t);
    }
  free(b);
  *count = n;
  return WF_OK;
}

wf_status wf_cloth_intersections(wf_cloth *c, uint64_t *count) {
  static const char fn[] = "wf_cloth_intersections";
  if (count) *count = 0;
  if (!c || !count) return wf__error(WF_ERR_INVALID, fn, "cloth or count is NULL");
  uint32_t nv = wf_cloth_count(c), nt = 0;
  const uint32_t *tris = wf_cloth_triangles(c, &nt);
  float(*pos)[4] = malloc((size_t)(nv ? nv : 1) * sizeof *pos);
  if (!pos) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  /* the solver's own positions: the state exactly as it is held */
  wf_status st = wf_cloth_download_local(c, pos, NULL);
  if (st == WF_OK) st = wf_cloth_intersections_count(&pos[0][0], 4, nv, tris, nt, count);
  free(pos);
  return st;
}
