/* Cloth contact (wf_cloth_desc.contact): vertex–triangle and edge–edge proximity contact with a
 * thickness and friction, within a cloth and between its disconnected pieces, with a bound on
 * every vertex's motion that keeps triangles from passing through each other. The per-element
 * math, read by both backends (cloth_contact.c: CPU loops and the stage; cloth_contact.cu: CUDA).
 *
 * A substep's CONTACT stage runs after the integrator has a guess x1 of where every vertex ends
 * (springs: after the spring step; XPBD: after the constraints, before finalize), from the
 * positions x0 at the start of the substep, which hold no intersection:
 *
 *   0. REACH: the largest displacement D of a free vertex over the substep (x1 - x0), by an
 *      integer max of the float bits (order-free: the same bits on any backend), sets the reach
 *      of the substep, max(reach_min, D / bound): a vertex far from everything moves freely;
 *   1. a uniform grid of the vertices at x0 (keys, the particle solver's stable radix sort, cell
 *      tables: coupling.h), cell >= reach + 2 edge_cap;
 *   2. GATHER, per vertex i, in the grid's fixed order: every pair i belongs to (i against a
 *      triangle; a triangle of i against another vertex; an edge of i against another edge, no
 *      vertex shared) whose partner is in the 27 cells around i. For each pair:
 *        - its distance d0 at x0 lowers i's bound m_i = min(reach, d0);
 *        - if d0 < reach and its distance d1 at x1 is below thickness (and the pair is not
 *          within rest_skip in the rest mesh within one piece: mesh neighbours), i takes its share
 * of the pair's correction: the separation s = Σ c_k x_k (c: 1 and minus the barycentric weights of
 * the closest points) is pushed out to thickness along its direction (the side it had at x0), and
 * the pair's tangential relative motion over the substep is cancelled when smaller than mu_s x the
 * penetration (static friction) or reduced by mu_k x the penetration (dynamic), each shared by c_k
 * w_k / Σ c_j² w_j (Macklin et al. 2014's position-based friction). Shares are averaged over i's
 * active pairs (Jacobi);
 *        - then i's displacement over the substep, x1 + correction - x0, is shortened to at most
 *          bound x m_i.
 *   3. APPLY: the corrected positions replace x1 (springs: v += (x - x1) / dt; XPBD: the step).
 *
 * Why no pass-through: two primitives of a pair (vertex–triangle, or edges sharing no vertex)
 * that are d0 apart at x0 move linearly over the substep, every point of each by at most the
 * largest displacement of its vertices; with every displacement <= bound d0 (bound < 1/2) they
 * end at least (1 - 2 bound) d0 > 0 apart and never met on the way. Triangles that do not
 * intersect at x0 can only come to intersect through such a pair meeting (the first contact of
 * two triangles is a vertex on a triangle or an edge on an edge), so a state without
 * intersections stays without, whatever the integrator did. Pairs not found by the walk are
 * farther than reach apart; every vertex then moves at most bound x reach. Pinned and attached
 * vertices (inverse mass 0) move as they are told and are not bounded. Triangles sharing a vertex
 * are no pair: the cloth's own stiffness keeps neighbours from folding through each other.
 *
 * The walk finds every pair closer than reach because no edge is longer than edge_cap: the REACH
 * step sets it to the longest edge at x0 (another integer max, over the vertices' edges). The
 * bound slows a vertex near anything to bound x distance per substep (in a flat sheet, the
 * nearest primitives sharing no vertex with it are a ring away): a fast fall onto a layer is
 * stopped over a few substeps instead of passing through.
 *
 * Determinism: every pair is evaluated by the same function on the same bits by each of its
 * vertices (edge pairs in edge-index order), sums run in the grid's sorted order, and every
 * vertex writes only itself: the same bits on both backends, run to run.
 */
#ifndef WEFT_CLOTH_CONTACT_H
#define WEFT_CLOTH_CONTACT_H

#include "cloth_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wfcc_topo {             /* device topology of the contact (built once at creation) */
  const uint32_t *tris;                /* 3 per triangle */
  const uint32_t *vt_start, *vt_list;  /* vertex -> triangles with it */
  const uint32_t *edges;               /* 2 per edge */
  const uint32_t *ve_start, *ve_list;  /* vertex -> edges with it */
  const uint32_t *own_t_start, *own_t; /* vertex -> triangles whose lowest vertex it is */
  const uint32_t *own_e_start, *own_e; /* vertex -> edges whose lower vertex it is */
  const uint32_t *piece;               /* vertex -> its connected piece of the mesh */
} wfcc_topo;

typedef struct wfcc_disp_args { /* per vertex: max_bits[0] = max(bits of |x1 - x0|) of the free
                                   ones, max_bits[1] = max(bits of the edge lengths at x0) */
  const wfp_f4 *x0, *x1;
  const uint32_t *ve_start, *ve_list, *edges;
  uint32_t *max_bits;
  uint32_t step;
} wfcc_disp_args;

typedef struct wfcc_reach_args { /* one element: the substep's reach and grid cell */
  wfc_params *params;
  uint32_t *max_bits; /* [2], read, then cleared for the next substep */
} wfcc_reach_args;

typedef struct wfcc_keys_args { /* per vertex: key of x0[i] in the contact grid, vals[i] = i */
  const wfc_params *params;
  const wfp_f4 *x0;
  uint32_t *keys, *vals;
} wfcc_keys_args;

typedef struct wfcc_gather_args { /* per element k: out[k] = the corrected, bounded end position
                                     of vertex ids[k] (ids NULL: of vertex k) */
  const wfc_params *params;
  wfc_cgrid grid;   /* over x0 (its params: &params->contact.grid) */
  const wfp_f4 *x0; /* start of the substep (w: inverse mass) */
  const wfp_f4 *x1; /* end guess, or the step x1 - x0 when step != 0 (XPBD) */
  const wfp_f4 *rest;
  wfcc_topo topo;
  const uint32_t *ids; /* a partition of a split cloth: its owned vertices' global ids */
  wfp_f4 *out;
  uint32_t step;
} wfcc_gather_args;

/* A partition of a split cloth (cloth_parts.h): per element k of the concatenation of every
 * partition's owned vertices (partition q's in its local order, at cat_first[q]), the start x0
 * and end guess x1 of global vertex gid[k] into the whole cloth's arrays x0, x1, from the copies
 * the transport brought (cat0, cat1) or, for the partition's own range [own_first, own_first +
 * own_n), from its own state (own0, own1). Plain copies: the bits of one device's arrays. */
typedef struct wfcc_scatter_args {
  const wfp_f4 *cat0, *cat1, *own0, *own1;
  const uint32_t *gid;
  uint32_t own_first, own_n;
  wfp_f4 *x0, *x1;
} wfcc_scatter_args;

typedef struct wfcc_apply_args { /* per vertex: x1 (or the step) from out; springs: velocity */
  const wfc_params *params;
  const wfp_f4 *out, *x0;
  wfp_f4 *x1;  /* end positions, or the step (step != 0) */
  wfp_f4 *vel; /* springs: the end velocities (v += (out - x1) / dt); NULL for XPBD */
  uint32_t step;
} wfcc_apply_args;

/* The bits of vertex i's displacement over the substep (0 for pinned ones and non-finite ones:
 * those are reported by the integrator's flags). Non-negative floats order as their bits. */
WF_HD static inline uint32_t wfcc_disp_bits(const wfcc_disp_args *a, uint32_t i) {
  wfp_f4 x0 = a->x0[i], x1 = a->x1[i];
  if (!(x0.w > 0.0f)) return 0u;
  wfc_v3 d = a->step ? wfc_xyz(x1) : wfc_sub(wfc_xyz(x1), wfc_xyz(x0));
  float len = wfc_len(d);
  if (!(len <= 1e30f)) return 0u;
  uint32_t b;
  memcpy(&b, &len, sizeof b);
  return b;
}

/* The bits of the longest edge of vertex i at x0 (non-finite: 0, as above). */
WF_HD static inline uint32_t wfcc_edge_bits(const wfcc_disp_args *a, uint32_t i) {
  float best = 0.0f;
  wfc_v3 p = wfc_xyz(a->x0[i]);
  for (uint32_t q = a->ve_start[i]; q < a->ve_start[i + 1u]; q++) {
    const uint32_t *e = a->edges + 2u * a->ve_list[q];
    float len = wfc_len(wfc_sub(wfc_xyz(a->x0[e[0] == i ? e[1] : e[0]]), p));
    best = len > best ? len : best;
  }
  if (!(best <= 1e30f)) return 0u;
  uint32_t b;
  memcpy(&b, &best, sizeof b);
  return b;
}

WF_HD static inline void wfcc_reach_elem(const wfcc_reach_args *a, uint32_t i) {
  (void)i;
  wfcc_params *p = &a->params->contact;
  uint32_t b = a->max_bits[0], be = a->max_bits[1];
  a->max_bits[0] = 0u, a->max_bits[1] = 0u;
  float D, E;
  memcpy(&D, &b, sizeof D);
  memcpy(&E, &be, sizeof E);
  /* the walk allows for the longest edge there is now (so it finds every pair within reach
   * however the cloth stretches), with 0.1% for the rounding of the distances */
  p->edge_cap = E * 1.001f;
  /* 1.001: the fastest vertex's bound stays above its displacement after rounding */
  float r = D * 1.001f / p->bound;
  p->reach = r > p->reach_min ? r : p->reach_min;
  p->grid.cell = (p->reach + 2.0f * p->edge_cap) / 0.98f;
  p->grid.inv_cell = 1.0f / p->grid.cell;
}

WF_HD static inline void wfcc_keys_elem(const wfcc_keys_args *a, uint32_t i) {
  a->keys[i] = wfc_grid_key(&a->params->contact.grid, a->x0[i]);
  a->vals[i] = i;
}

WF_HD static inline float wfcc_min(float a, float b) { return a < b ? a : b; }
WF_HD static inline float wfcc_max(float a, float b) { return a > b ? a : b; }

typedef struct wfcc_box {
  wfc_v3 lo, hi;
} wfcc_box;

WF_HD static inline wfcc_box wfcc_box_of(const wfc_v3 *X, int n) {
  wfcc_box b = {X[0], X[0]};
  for (int j = 1; j < n; j++) {
    b.lo = wfc_v(wfcc_min(b.lo.x, X[j].x), wfcc_min(b.lo.y, X[j].y), wfcc_min(b.lo.z, X[j].z));
    b.hi = wfc_v(wfcc_max(b.hi.x, X[j].x), wfcc_max(b.hi.y, X[j].y), wfcc_max(b.hi.z, X[j].z));
  }
  return b;
}

/* The squared gap between two boxes (0 where they overlap): a lower bound of the squared
 * distance between anything inside them. */
WF_HD static inline float wfcc_box_gap2(const wfcc_box *a, const wfcc_box *b) {
  float gx = wfcc_max(0.0f, wfcc_max(a->lo.x - b->hi.x, b->lo.x - a->hi.x));
  float gy = wfcc_max(0.0f, wfcc_max(a->lo.y - b->hi.y, b->lo.y - a->hi.y));
  float gz = wfcc_max(0.0f, wfcc_max(a->lo.z - b->hi.z, b->lo.z - a->hi.z));
  return gx * gx + gy * gy + gz * gz;
}

WF_HD static inline float wfcc_clamp01(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }

/* Barycentric weights (b[0..2]) of the point of triangle abc closest to p (the regions of
 * Ericson, Real-Time Collision Detection §5.1.5). A degenerate triangle gives its corner a. */
WF_HD static inline void wfcc_closest_tri(wfc_v3 p, wfc_v3 a, wfc_v3 b, wfc_v3 c, float w[3]) {
  wfc_v3 ab = wfc_sub(b, a), ac = wfc_sub(c, a), ap = wfc_sub(p, a);
  float d1 = wfc_dot(ab, ap), d2 = wfc_dot(ac, ap);
  w[0] = 1.0f, w[1] = 0.0f, w[2] = 0.0f;
  if (d1 <= 0.0f && d2 <= 0.0f) return;
  wfc_v3 bp = wfc_sub(p, b);
  float d3 = wfc_dot(ab, bp), d4 = wfc_dot(ac, bp);
  if (d3 >= 0.0f && d4 <= d3) {
    w[0] = 0.0f, w[1] = 1.0f;
    return;
  }
  float vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
    float v = d1 / (d1 - d3);
    w[0] = 1.0f - v, w[1] = v;
    return;
  }
  wfc_v3 cp = wfc_sub(p, c);
  float d5 = wfc_dot(ab, cp), d6 = wfc_dot(ac, cp);
  if (d6 >= 0.0f && d5 <= d6) {
    w[0] = 0.0f, w[2] = 1.0f;
    return;
  }
  float vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
    float t = d2 / (d2 - d6);
    w[0] = 1.0f - t, w[2] = t;
    return;
  }
  float va = d3 * d6 - d5 * d4;
  if (va <= 0.0f && d4 - d3 >= 0.0f && d5 - d6 >= 0.0f) {
    float t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    w[0] = 0.0f, w[1] = 1.0f - t, w[2] = t;
    return;
  }
  float sum = va + vb + vc;
  if (!(sum > 0.0f)) return; /* degenerate: corner a */
  float v = vb / sum, t = vc / sum;
  w[0] = 1.0f - v - t, w[1] = v, w[2] = t;
}

/* Parameters s, t of the closest points p1 + s (q1 - p1), p2 + t (q2 - p2) of two segments
 * (Ericson §5.1.9; parallel segments: s = 0). */
WF_HD static inline void wfcc_closest_seg(wfc_v3 p1, wfc_v3 q1, wfc_v3 p2, wfc_v3 q2, float *s,
                                          float *t) {
  const float eps = 1e-20f;
  wfc_v3 d1 = wfc_sub(q1, p1), d2 = wfc_sub(q2, p2), r = wfc_sub(p1, p2);
  float a = wfc_dot(d1, d1), e = wfc_dot(d2, d2), f = wfc_dot(d2, r);
  *s = 0.0f, *t = 0.0f;
  if (a <= eps && e <= eps) return;
  if (a <= eps) {
    *t = wfcc_clamp01(f / e);
    return;
  }
  float c = wfc_dot(d1, r);
  if (e <= eps) {
    *s = wfcc_clamp01(-c / a);
    return;
  }
  float b = wfc_dot(d1, d2), den = a * e - b * b;
  *s = den > 0.0f ? wfcc_clamp01((b * f - c * e) / den) : 0.0f;
  *t = (b * *s + f) / e;
  if (*t < 0.0f) {
    *t = 0.0f, *s = wfcc_clamp01(-c / a);
  } else if (*t > 1.0f) {
    *t = 1.0f, *s = wfcc_clamp01((b - c) / a);
  }
}

enum { WFCC_VT = 0, WFCC_EE = 1 };

/* The separation of a pair at positions X (vertex–triangle: X[0] the vertex; edge–edge: X[0..1]
 * one edge, X[2..3] the other): s = Σ c_k X_k between the closest points, its coefficients c. */
WF_HD static inline wfc_v3 wfcc_sep(int kind, const wfc_v3 X[4], float c[4]) {
  if (kind == WFCC_VT) {
    float w[3];
    wfcc_closest_tri(X[0], X[1], X[2], X[3], w);
    c[0] = 1.0f, c[1] = -w[0], c[2] = -w[1], c[3] = -w[2];
  } else {
    float s, t;
    wfcc_closest_seg(X[0], X[1], X[2], X[3], &s, &t);
    c[0] = 1.0f - s, c[1] = s, c[2] = t - 1.0f, c[3] = -t;
  }
  wfc_v3 r = wfc_scale(X[0], c[0]);
  for (int k = 1; k < 4; k++)
    r = wfc_add(r, wfc_scale(X[k], c[k]));
  return r;
}

WF_HD static inline wfc_v3 wfcc_end(const wfcc_gather_args *a, uint32_t j) {
  wfc_v3 x = wfc_xyz(a->x1[j]);
  return a->step ? wfc_add(wfc_xyz(a->x0[j]), x) : x;
}

/* One pair (vertex ids v, kind) as vertex v[k] sees it: lowers *m to its distance at x0, and when
 * it is in contact adds v[k]'s share of the correction to *acc and counts it in *n. The same
 * bits for each of the pair's vertices (only k differs). */
WF_HD static inline void wfcc_pair(const wfcc_gather_args *a, int kind, const uint32_t v[4], int k,
                                   float *m, wfc_v3 *acc, uint32_t *n) {
  const wfcc_params *p = &a->params->contact;
  wfc_v3 X0[4], X1[4];
  float W[4], c0[4], c[4];
  for (int j = 0; j < 4; j++) {
    wfp_f4 x = a->x0[v[j]];
    X0[j] = wfc_xyz(x), W[j] = x.w;
  }
  /* the gap between the boxes of the two primitives bounds their distance from below: a pair
   * surely reach apart or more neither bounds nor touches (the same test for every vertex) */
  int na = kind == WFCC_VT ? 1 : 2;
  wfcc_box A = wfcc_box_of(X0, na), B = wfcc_box_of(X0 + na, 4 - na);
  if (!(wfcc_box_gap2(&A, &B) < p->reach * p->reach)) return;
  wfc_v3 s0 = wfcc_sep(kind, X0, c0);
  float d0 = wfc_len(s0);
  if (d0 < *m) *m = d0;
  if (!(d0 < p->reach)) return;
  for (int j = 0; j < 4; j++)
    X1[j] = wfcc_end(a, v[j]);
  wfc_v3 s1 = wfcc_sep(kind, X1, c);
  float d1 = wfc_len(s1);
  if (!(d1 < p->thickness)) return;
  wfc_v3 R[4];
  float cr[4];
  for (int j = 0; j < 4; j++)
    R[j] = wfc_xyz(a->rest[v[j]]);
  /* mesh neighbours: pairs of one piece closer than rest_skip at rest (separate pieces, which
   * may be made touching, always collide) */
  const uint32_t *pc = a->topo.piece;
  if (pc[v[0]] == pc[v[1]] && pc[v[0]] == pc[v[2]] && pc[v[0]] == pc[v[3]] &&
      wfc_len(wfcc_sep(kind, R, cr)) < p->rest_skip)
    return;
  float Wsum = 0.0f;
  for (int j = 0; j < 4; j++)
    Wsum += c[j] * c[j] * W[j];
  if (!(Wsum > 0.0f)) return;
  /* the direction of separation, on the side the pair had at x0 */
  wfc_v3 nrm;
  float sep;
  if (d1 > 1e-12f) {
    nrm = wfc_scale(s1, 1.0f / d1), sep = d1;
    if (wfc_dot(s1, s0) < 0.0f) nrm = wfc_scale(nrm, -1.0f), sep = -d1;
  } else if (d0 > 0.0f) {
    nrm = wfc_scale(s0, 1.0f / d0), sep = 0.0f;
  } else {
    return;
  }
  float pen = p->thickness - sep;
  /* relative motion of the closest points over the substep, its tangential part */
  wfc_v3 du = wfc_v(0.0f, 0.0f, 0.0f);
  for (int j = 0; j < 4; j++)
    du = wfc_add(du, wfc_scale(wfc_sub(X1[j], X0[j]), c[j]));
  wfc_v3 ut = wfc_sub(du, wfc_scale(nrm, wfc_dot(du, nrm)));
  float lt = wfc_len(ut);
  wfc_v3 r = wfc_scale(nrm, pen);
  if (lt > 0.0f) {
    float keep = lt < p->mu_s * pen ? 1.0f : wfcc_min(1.0f, p->mu_k * pen / lt);
    r = wfc_sub(r, wfc_scale(ut, keep));
  }
  *acc = wfc_add(*acc, wfc_scale(r, c[k] * W[k] / Wsum));
  *n += 1u;
}

WF_HD static inline int wfcc_has(const uint32_t *t, int n, uint32_t v) {
  for (int j = 0; j < n; j++)
    if (t[j] == v) return 1;
  return 0;
}

enum { WFCC_RING = 16 }; /* triangles or edges of a vertex whose boxes a gather keeps */

/* What a gather keeps of its vertex i: position, the boxes of its first triangles and edges,
 * and the box of its whole ring (every triangle with i: it holds every edge with i too, the
 * mesh's edges being its triangles'). */
typedef struct wfcc_self {
  uint32_t i;
  wfc_v3 p0;
  wfcc_box tb[WFCC_RING], eb[WFCC_RING];
  wfcc_box ring;
} wfcc_self;

/* The pairs of vertex i with partner vertex w found by the walk: i against the triangles w
 * owns, w against the triangles of i, the edges of i against the edges w owns. Box gaps of reach
 * or more skip a pair before its vertices are read (they cannot bound or touch). */
WF_HD static inline void wfcc_visit(const wfcc_gather_args *a, const wfcc_self *me, uint32_t w,
                                    float *m, wfc_v3 *acc, uint32_t *n) {
  const wfcc_params *p = &a->params->contact;
  const wfcc_topo *T = &a->topo;
  uint32_t i = me->i;
  float r2 = p->reach * p->reach;
  wfc_v3 xw = wfc_xyz(a->x0[w]);
  float dw = wfc_len(wfc_sub(xw, me->p0));
  if (dw > p->reach + 2.0f * p->edge_cap) return; /* no pair within reach */
  wfcc_box pb = {me->p0, me->p0}, wb = {xw, xw};
  if (dw <= p->reach + p->edge_cap) {
    for (uint32_t q = T->own_t_start[w]; q < T->own_t_start[w + 1u]; q++) {
      const uint32_t *t = T->tris + 3u * T->own_t[q];
      if (wfcc_has(t, 3, i)) continue;
      wfc_v3 tx[3] = {wfc_xyz(a->x0[t[0]]), wfc_xyz(a->x0[t[1]]), wfc_xyz(a->x0[t[2]])};
      wfcc_box tb = wfcc_box_of(tx, 3);
      if (!(wfcc_box_gap2(&tb, &pb) < r2)) continue;
      uint32_t v[4] = {i, t[0], t[1], t[2]};
      wfcc_pair(a, WFCC_VT, v, 0, m, acc, n);
    }
    /* the ring's box is at most as far from w as any of its triangles' (the same floats' min
     * and max): when it is reach away, every pair of this loop would return at its box test */
    for (uint32_t q = T->vt_start[i]; q < T->vt_start[i + 1u] && wfcc_box_gap2(&me->ring, &wb) < r2;
         q++) {
      uint32_t k = q - T->vt_start[i];
      if (k < WFCC_RING && !(wfcc_box_gap2(&me->tb[k], &wb) < r2)) continue;
      const uint32_t *t = T->tris + 3u * T->vt_list[q];
      if (wfcc_has(t, 3, w)) continue;
      uint32_t v[4] = {w, t[0], t[1], t[2]};
      wfcc_pair(a, WFCC_VT, v, t[0] == i ? 1 : t[1] == i ? 2 : 3, m, acc, n);
    }
  }
  for (uint32_t q = T->own_e_start[w]; q < T->own_e_start[w + 1u]; q++) {
    uint32_t f = T->own_e[q];
    const uint32_t *ef = T->edges + 2u * f;
    wfc_v3 fx[2] = {wfc_xyz(a->x0[ef[0]]), wfc_xyz(a->x0[ef[1]])};
    wfcc_box fb = wfcc_box_of(fx, 2);
    if (!(wfcc_box_gap2(&me->ring, &fb) < r2)) continue; /* every edge of i is as far or farther */
    for (uint32_t q2 = T->ve_start[i]; q2 < T->ve_start[i + 1u]; q2++) {
      uint32_t k = q2 - T->ve_start[i];
      if (k < WFCC_RING && !(wfcc_box_gap2(&me->eb[k], &fb) < r2)) continue;
      uint32_t e = T->ve_list[q2];
      const uint32_t *ee = T->edges + 2u * e;
      if (wfcc_has(ef, 2, ee[0]) || wfcc_has(ef, 2, ee[1])) continue;
      const uint32_t *lo = e < f ? ee : ef, *hi = e < f ? ef : ee; /* edge-index order */
      uint32_t v[4] = {lo[0], lo[1], hi[0], hi[1]};
      wfcc_pair(a, WFCC_EE, v, v[0] == i ? 0 : v[1] == i ? 1 : v[2] == i ? 2 : 3, m, acc, n);
    }
  }
}

WF_HD static inline void wfcc_scatter_elem(const wfcc_scatter_args *a, uint32_t k) {
  uint32_t g = a->gid[k], o = k - a->own_first;
  int own = k >= a->own_first && o < a->own_n;
  a->x0[g] = own ? a->own0[o] : a->cat0[k];
  a->x1[g] = own ? a->own1[o] : a->cat1[k];
}

WF_HD static inline void wfcc_gather_elem(const wfcc_gather_args *a, uint32_t k) {
  uint32_t i = a->ids ? a->ids[k] : k;
  const wfcc_params *p = &a->params->contact;
  const wfcc_topo *T = &a->topo;
  const wfc_cgrid *g = &a->grid;
  wfp_f4 xi = a->x0[i];
  wfcc_self me;
  me.i = i, me.p0 = wfc_xyz(xi);
  me.ring.lo = me.p0, me.ring.hi = me.p0;
  for (uint32_t q = T->vt_start[i]; q < T->vt_start[i + 1u]; q++) {
    const uint32_t *t = T->tris + 3u * T->vt_list[q];
    wfc_v3 tx[4] = {me.ring.lo, me.ring.hi, wfc_xyz(a->x0[t[0]]), wfc_xyz(a->x0[t[1]])};
    wfcc_box b = wfcc_box_of(tx, 4);
    wfc_v3 ux[3] = {b.lo, b.hi, wfc_xyz(a->x0[t[2]])};
    me.ring = wfcc_box_of(ux, 3);
  }
  for (uint32_t q = T->vt_start[i]; q < T->vt_start[i + 1u] && q - T->vt_start[i] < WFCC_RING;
       q++) {
    const uint32_t *t = T->tris + 3u * T->vt_list[q];
    wfc_v3 tx[3] = {wfc_xyz(a->x0[t[0]]), wfc_xyz(a->x0[t[1]]), wfc_xyz(a->x0[t[2]])};
    me.tb[q - T->vt_start[i]] = wfcc_box_of(tx, 3);
  }
  for (uint32_t q = T->ve_start[i]; q < T->ve_start[i + 1u] && q - T->ve_start[i] < WFCC_RING;
       q++) {
    const uint32_t *e = T->edges + 2u * T->ve_list[q];
    wfc_v3 ex[2] = {wfc_xyz(a->x0[e[0]]), wfc_xyz(a->x0[e[1]])};
    me.eb[q - T->ve_start[i]] = wfcc_box_of(ex, 2);
  }
  wfc_v3 p1 = wfcc_end(a, i);
  float m = p->reach;
  wfc_v3 acc = wfc_v(0.0f, 0.0f, 0.0f);
  uint32_t n = 0;
#define WFCC_VISIT(slot) wfcc_visit(a, &me, g->vals[slot], &m, &acc, &n);
  WFC_CGRID_FOR_NEAR(g, me.p0.x, me.p0.y, me.p0.z, WFCC_VISIT)
#undef WFCC_VISIT
  wfc_v3 x = p1;
  if (xi.w > 0.0f) {
    if (n) x = wfc_add(x, wfc_scale(acc, 1.0f / (float)n));
    /* the bound less a margin for the rounding of these positions (a few units in the last
     * place of the largest coordinate): a pair squeezed to that scale stops moving (x = x0
     * exactly) instead of crossing by rounding (a coupled ball pressing two layers did) */
    float amax = wfcc_max(fabsf(me.p0.x), wfcc_max(fabsf(me.p0.y), fabsf(me.p0.z)));
    wfc_v3 d = wfc_sub(x, me.p0);
    float len = wfc_len(d), b = p->bound * m;
    if (m < p->reach) b -= 2e-6f * (1.0f + amax); /* nothing within reach: nothing to cross */
    if (!(b > 0.0f))
      x = me.p0;
    else if (len > b)
      x = wfc_add(me.p0, wfc_scale(d, b / len));
  }
  wfp_f4 o = {x.x, x.y, x.z, xi.w};
  a->out[k] = o;
}

WF_HD static inline void wfcc_apply_elem(const wfcc_apply_args *a, uint32_t i) {
  wfp_f4 o = a->out[i], x1 = a->x1[i];
  if (a->step) {
    wfp_f4 x0 = a->x0[i];
    wfp_f4 s = {o.x - x0.x, o.y - x0.y, o.z - x0.z, x1.w};
    a->x1[i] = s;
    return;
  }
  float k = a->params->inv_dt;
  wfp_f4 v = a->vel[i];
  wfp_f4 nv = {v.x + (o.x - x1.x) * k, v.y + (o.y - x1.y) * k, v.z + (o.z - x1.z) * k, v.w};
  a->vel[i] = nv;
  wfp_f4 nx = {o.x, o.y, o.z, x1.w};
  a->x1[i] = nx;
}

extern const wf_kernel wfcc_disp;    /* n = vertices */
extern const wf_kernel wfcc_reach;   /* n = 1 */
extern const wf_kernel wfcc_keys;    /* n = vertices */
extern const wf_kernel wfcc_gather;  /* n = vertices (a partition: its owned ones) */
extern const wf_kernel wfcc_scatter; /* n = the whole cloth's vertices */
extern const wf_kernel wfcc_apply;   /* n = vertices */

#ifdef WEFT_HAVE_CUDA
void wfcc_disp_cuda(const void *args, size_t n, void *stream);
void wfcc_reach_cuda(const void *args, size_t n, void *stream);
void wfcc_keys_cuda(const void *args, size_t n, void *stream);
void wfcc_gather_cuda(const void *args, size_t n, void *stream);
void wfcc_scatter_cuda(const void *args, size_t n, void *stream);
void wfcc_apply_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
