/* Triangle-mesh collider queries, written once for both backends (DESIGN.md, "one math, two
 * backends"): the closest point of a mesh to a point through a bounding volume hierarchy, and the
 * signed distance and normal the solvers' contacts use.
 *
 * Layout (built on the host by mesh.c, uploaded unchanged to every partition's device):
 *  - wfm_node: an axis-aligned box; an inner node's children are nodes `first` and `first + 1`,
 *    a leaf (count > 0) holds triangles [first, first + count). Node 0 is the root.
 *  - wfm_tri: the three vertices; their w components hold the unit face normal (counter-clockwise
 *    winding seen from outside: the outward normal of a closed mesh).
 *
 * Which triangle answers (wfm_key): the one of least key d² (1 + tie (1 - cos²)), d the distance
 * to it and cos that of the angle between the offset and its normal, ties of the key by the
 * lower index, among those with key <= reach². The key is d² but for a relative 1e-5 that
 * prefers, where the closest point is on an edge or a vertex and several triangles tie, the one
 * whose plane the point is most squarely in front of. It is a function of the triangles within
 * reach alone, not of the order they are looked at in: the tree walk (wfm_pick, nearest box
 * first, pruning boxes whose distance exceeds the best key: key >= d² >= the box's), a list of
 * candidates (wfm_cache below) and any number of partitions give the same triangle, and the CPU
 * and CUDA backends round the same operations (no FMA contraction on either side): bitwise equal
 * results.
 *
 * Sign (closed meshes): the side of the chosen triangle's plane, which on edges and on convex or
 * concave vertices is the right one (the classic weak spot is saddle vertices of very coarse
 * meshes). Shells (thickness > 0, open or closed): the unsigned distance minus half the
 * thickness, the normal pointing from the surface to the point.
 *
 * Candidate cache (wfm_cache, wfm_distance_cached): a caller that queries the same moving point
 * substep after substep (a cloth vertex) keeps, per point, the triangles that can answer for any
 * point within `skin` of where the list was made: with D the distance there, a triangle can be
 * the answer at a point b within skin only if its distance from b is at most sqrt(1 + tie) (D +
 * skin), so from the list's point at most that + skin (and at most reach + skin: beyond reach
 * nothing answers). The list is made again (two tree walks) when the point has moved more than
 * skin, the reach changed or the list was not made; while it holds, a query tests the few listed
 * triangles instead of walking the tree. A list that would exceed WFM_CACHE_TRIS triangles is
 * marked full and the query walks the tree; so does a point that moves about a skin a query
 * (wfm_cache). Either way the answer is the key's, so the cache changes the cost, never the
 * bits. */
#ifndef WEFT_COLLIDER_MESH_QUERY_H
#define WEFT_COLLIDER_MESH_QUERY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/hd.h"

#define WFM_STACK 64 /* the builder keeps the tree's depth below this (mesh.c) */
#define WFM_LEAF  4  /* triangles per leaf at most */

typedef struct wfm_node {
  float lo[3];
  uint32_t first;
  float hi[3];
  uint32_t count; /* 0: inner node */
} wfm_node;

typedef struct wfm_v4 {
#ifdef __cplusplus
  alignas(16) float x;
#else
  _Alignas(16) float x;
#endif
  float y, z, w;
} wfm_v4;

typedef struct wfm_tri {
  wfm_v4 a, b, c; /* vertices; (a.w, b.w, c.w): the unit face normal */
} wfm_tri;

WF_HD static inline float wfm_dot(const float *a, const float *b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Squared distance from x to the node's box (0 inside). */
WF_HD static inline float wfm_box_d2(const wfm_node *nd, const float *x) {
  float d2 = 0.0f;
  for (int k = 0; k < 3; k++) {
    float e = fmaxf(fmaxf(nd->lo[k] - x[k], x[k] - nd->hi[k]), 0.0f);
    d2 += e * e;
  }
  return d2;
}

/* Closest point cp of triangle t to x (by the Voronoi regions of its vertices, edges and face);
 * returns the squared distance. */
WF_HD static inline float wfm_closest(const wfm_tri *t, const float *x, float *cp) {
  const float a[3] = {t->a.x, t->a.y, t->a.z}, b[3] = {t->b.x, t->b.y, t->b.z},
              c[3] = {t->c.x, t->c.y, t->c.z};
  float ab[3], ac[3], ap[3], bp[3], cq[3];
  for (int k = 0; k < 3; k++)
    ab[k] = b[k] - a[k], ac[k] = c[k] - a[k], ap[k] = x[k] - a[k], bp[k] = x[k] - b[k],
    cq[k] = x[k] - c[k];
  float d1 = wfm_dot(ab, ap), d2 = wfm_dot(ac, ap);
  float d3 = wfm_dot(ab, bp), d4 = wfm_dot(ac, bp);
  float d5 = wfm_dot(ab, cq), d6 = wfm_dot(ac, cq);
  float vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
  float s = 0.0f, u = 0.0f; /* cp = a + s ab + u ac */
  if (d1 <= 0.0f && d2 <= 0.0f) {
    /* vertex a */
  } else if (d3 >= 0.0f && d4 <= d3) {
    s = 1.0f; /* vertex b */
  } else if (d6 >= 0.0f && d5 <= d6) {
    u = 1.0f; /* vertex c */
  } else if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
    s = d1 / (d1 - d3); /* edge ab */
  } else if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
    u = d2 / (d2 - d6); /* edge ac */
  } else if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
    u = (d4 - d3) / ((d4 - d3) + (d5 - d6)); /* edge bc: b + u (c - b) */
    s = 1.0f - u;
  } else {
    float den = 1.0f / (va + vb + vc); /* inside the face */
    s = vb * den, u = vc * den;
  }
  float d2sum = 0.0f;
  for (int k = 0; k < 3; k++) {
    cp[k] = a[k] + ab[k] * s + ac[k] * u;
    float e = x[k] - cp[k];
    d2sum += e * e;
  }
  return d2sum;
}

#define WFM_TIE 1e-5f /* relative: the key's preference for the squarest of tied triangles */

/* The key of triangle t at x (see above); d2 receives the squared distance. */
WF_HD static inline float wfm_key(const wfm_tri *t, const float *x, float *d2) {
  float cp[3];
  float dd = wfm_closest(t, x, cp);
  float e[3] = {x[0] - cp[0], x[1] - cp[1], x[2] - cp[2]};
  float fn[3] = {t->a.w, t->b.w, t->c.w};
  float en = wfm_dot(e, fn);
  float c2 = dd > 0.0f ? en * en / dd : 1.0f; /* cos² of the offset to the normal */
  c2 = c2 > 1.0f ? 1.0f : c2;
  *d2 = dd;
  return dd + dd * (WFM_TIE * (1.0f - c2));
}

/* Whether (key k, triangle i) comes before the best so far (bk, bt; bt < 0: none). */
WF_HD static inline int wfm_better(float k, uint32_t i, float bk, int32_t bt) {
  return k < bk || (k == bk && (bt < 0 || i < (uint32_t)bt));
}

#define WFM_NO_SEED 0xffffffffu /* wfm_pick without a first candidate */

/* The tree walk: the answering triangle among those with key <= lim (-1: none) and its key.
 * seed: a triangle to start from (WFM_NO_SEED: none), where the point's last answer is known: a
 * candidate within lim starts the walk at its key, so boxes farther than that are never entered.
 * The answer is the least (key, index) among the triangles of key <= lim whatever the seed: every
 * box nearer than the best key so far is still entered (box d² <= d² <= key), ties included. */
WF_HD static inline int32_t wfm_pick(const wfm_node *nodes, const wfm_tri *tris, const float *x,
                                     float lim, uint32_t seed, float *key) {
  float best = lim;
  int32_t bt = -1;
  if (seed != WFM_NO_SEED) {
    float d2, k = wfm_key(&tris[seed], x, &d2);
    if (k <= lim) best = k, bt = (int32_t)seed;
  }
  uint32_t stack[WFM_STACK];
  int sp = 0;
  if (nodes && wfm_box_d2(&nodes[0], x) <= best) stack[sp++] = 0u;
  while (sp > 0) {
    const wfm_node *nd = &nodes[stack[--sp]];
    if (wfm_box_d2(nd, x) > best) continue;
    if (nd->count > 0u) {
      for (uint32_t i = nd->first; i < nd->first + nd->count; i++) {
        float d2, k = wfm_key(&tris[i], x, &d2);
        if (k <= lim && wfm_better(k, i, best, bt)) bt = (int32_t)i, best = k;
      }
    } else {
      uint32_t l = nd->first, r = nd->first + 1u;
      float dl = wfm_box_d2(&nodes[l], x), dr = wfm_box_d2(&nodes[r], x);
      /* the nearer child is popped first */
      uint32_t near_ = dl <= dr ? l : r, far_ = dl <= dr ? r : l;
      float dn = dl <= dr ? dl : dr, df = dl <= dr ? dr : dl;
      if (df <= best && sp < WFM_STACK) stack[sp++] = far_;
      if (dn <= best && sp < WFM_STACK) stack[sp++] = near_;
    }
  }
  *key = best;
  return bt;
}

/* The signed distance and normal from the answering triangle bt (see wfm_distance). */
WF_HD static inline float wfm_finish(const wfm_tri *tris, int32_t bt, const float *x,
                                     float thickness, float reach2, const float *ref, float *n) {
  if (bt < 0) {
    n[0] = 0.0f, n[1] = 1.0f, n[2] = 0.0f;
    return reach2 < INFINITY ? sqrtf(reach2) : 1e30f;
  }
  const wfm_tri *t = &tris[bt];
  float bcp[3];
  wfm_closest(t, x, bcp);
  float fn[3] = {t->a.w, t->b.w, t->c.w};
  float e[3] = {x[0] - bcp[0], x[1] - bcp[1], x[2] - bcp[2]};
  float d = sqrtf(wfm_dot(e, e));
  if (thickness > 0.0f) { /* shell: either side */
    float se = wfm_dot(e, fn), sr = se;
    if (ref) {
      float er[3] = {ref[0] - bcp[0], ref[1] - bcp[1], ref[2] - bcp[2]};
      sr = wfm_dot(er, fn);
    }
    float flip = (se < 0.0f) != (sr < 0.0f) ? -1.0f : 1.0f; /* crossed since ref */
    if (d > 0.0f)
      n[0] = flip * e[0] / d, n[1] = flip * e[1] / d, n[2] = flip * e[2] / d;
    else
      n[0] = fn[0], n[1] = fn[1], n[2] = fn[2];
    if (!(d > 0.0f) && sr < 0.0f) n[0] = -fn[0], n[1] = -fn[1], n[2] = -fn[2];
    return flip * d - 0.5f * thickness;
  }
  float side = wfm_dot(e, fn) < 0.0f ? -1.0f : 1.0f;
  if (d > 0.0f)
    n[0] = side * e[0] / d, n[1] = side * e[1] / d, n[2] = side * e[2] / d;
  else
    n[0] = fn[0], n[1] = fn[1], n[2] = fn[2];
  return side * d;
}

/* Signed distance from x to the mesh (shell: thickness > 0) with the outward unit normal in n.
 * reach2: only triangles of key <= reach2 (within reach, to the key's 1e-5) answer; with none,
 * returns +reach (or 1e30 for an infinite reach) and n = (0, 1, 0). ref (shells; may be NULL):
 * where the point was a moment before. A point that has crossed the answering triangle's plane
 * since then is inside the shell on ref's side (negative distance, the normal back towards ref),
 * so a particle that moves more than half the thickness in a substep is still put back where it
 * came from. */
WF_HD static inline float wfm_distance(const wfm_node *nodes, const wfm_tri *tris, const float *x,
                                       float thickness, float reach2, const float *ref, float *n) {
  float key;
  int32_t bt = wfm_pick(nodes, tris, x, reach2, WFM_NO_SEED, &key);
  return wfm_finish(tris, bt, x, thickness, reach2, ref, n);
}

/* ---- candidate cache (see above) ---------------------------------------------------------- */

#define WFM_CACHE_TRIS 25          /* triangles a list holds: 128 bytes a point */
#define WFM_CACHE_NONE 0xffffffffu /* count: no list (made at the next query) */
#define WFM_CACHE_FULL 0xfffffffeu /* count: more candidates than fit: walk the tree */
#define WFM_CACHE_WALK 0xfffffffdu /* count: a fast point: walk the tree, ref follows it */

/* One point's list, 128 bytes. Memory set to 0xff bytes is an empty cache (count NONE).
 * A point that outruns its list within two queries (moving about a skin a query, where a list
 * would be made at nearly every query, costing two walks) walks the tree instead (count WALK,
 * ref its last point) until it moves less than a quarter skin in a query, then gets a list
 * again. A walking or full point keeps its last answer in tri[0], where its next walk starts
 * (wfm_pick's seed). Which way a query goes changes its cost only. */
typedef struct wfm_cache {
  float ref[3];   /* the point (mesh frame) the list was made at (WALK: the last query's) */
  uint32_t count; /* listed triangles, or WFM_CACHE_NONE / _FULL / _WALK */
  float reach2;   /* the reach² it was made for */
  float skin;     /* how far the point may move from ref with the list still complete, m */
  uint32_t uses;  /* queries the list answered since it was made */
  uint32_t tri[WFM_CACHE_TRIS];
} wfm_cache;

/* Collects into c the triangles within sqrt(lim2) of x, in the walk's order; count FULL when
 * more than fit. */
WF_HD static inline void wfm_collect(const wfm_node *nodes, const wfm_tri *tris, const float *x,
                                     float lim2, wfm_cache *c) {
  uint32_t stack[WFM_STACK], n = 0;
  int sp = 0;
  if (nodes && wfm_box_d2(&nodes[0], x) <= lim2) stack[sp++] = 0u;
  while (sp > 0 && n != WFM_CACHE_FULL) {
    const wfm_node *nd = &nodes[stack[--sp]];
    if (nd->count > 0u) {
      for (uint32_t i = nd->first; i < nd->first + nd->count && n != WFM_CACHE_FULL; i++) {
        float cp[3];
        if (!(wfm_closest(&tris[i], x, cp) <= lim2)) continue;
        if (n == WFM_CACHE_TRIS)
          n = WFM_CACHE_FULL;
        else
          c->tri[n++] = i;
      }
    } else {
      for (uint32_t k = 0; k < 2u; k++)
        if (wfm_box_d2(&nodes[nd->first + k], x) <= lim2 && sp < WFM_STACK)
          stack[sp++] = nd->first + k;
    }
  }
  c->count = n;
}

/* wfm_distance through point x's cache c (see above): the same result, bit for bit. skin > 0. */
WF_HD static inline float wfm_distance_cached(const wfm_node *nodes, const wfm_tri *tris,
                                              const float *x, float thickness, float reach2,
                                              const float *ref, float skin, wfm_cache *c,
                                              float *n) {
  if (!nodes || !(wfm_box_d2(&nodes[0], x) <= reach2))         /* the mesh's box is beyond reach: */
    return wfm_finish(tris, -1, x, thickness, reach2, ref, n); /* no list read or made */
  float m[3] = {x[0] - c->ref[0], x[1] - c->ref[1], x[2] - c->ref[2]};
  float moved2 = wfm_dot(m, m);
  int same = c->count != WFM_CACHE_NONE && c->reach2 == reach2 && c->skin == skin;
  int walk = 0, fresh = same && c->count != WFM_CACHE_WALK && moved2 <= skin * skin;
  if (same && c->count == WFM_CACHE_WALK) { /* a fast point: walk while it stays fast */
    c->ref[0] = x[0], c->ref[1] = x[1], c->ref[2] = x[2];
    walk = moved2 > 0.0625f * skin * skin;
  } else if (same && !fresh && c->count != WFM_CACHE_FULL && c->uses <= 2u) {
    c->ref[0] = x[0], c->ref[1] = x[1], c->ref[2] = x[2]; /* outran its list: walk */
    c->count = WFM_CACHE_WALK;
    walk = 1;
  }
  /* a walking or full point keeps its last answer in tri[0] (a list's triangle before: an index
   * of this mesh too; a fresh cache holds WFM_NO_SEED) and starts its next walk from it */
  if (walk) {
    float key;
    int32_t b = wfm_pick(nodes, tris, x, reach2, c->tri[0], &key);
    if (b >= 0) c->tri[0] = (uint32_t)b;
    return wfm_finish(tris, b, x, thickness, reach2, ref, n);
  }
  if (fresh) {
    c->uses += c->uses < 0xffffffffu;
  } else { /* make the list at x */
    /* a triangle that can answer within skin of x: within sqrt(1 + tie) (D + skin) of that
     * point, D the distance from x, and within reach of it; so within that + skin of x (a
     * relative 1e-4 and 1e-6 of the coordinates' size added for the rounding of the distances in
     * float). D is looked for only up to reach + 2 skin: none that near, none can answer. */
    float reach = reach2 < INFINITY ? sqrtf(reach2) : INFINITY;
    float pad = 1e-6f * (1.0f + fabsf(x[0]) + fabsf(x[1]) + fabsf(x[2]));
    float far_ = (reach + 2.0f * skin) * 1.0001f + pad, key;
    int32_t b = wfm_pick(nodes, tris, x, far_ < INFINITY ? far_ * far_ : INFINITY, c->tri[0], &key);
    float D = sqrtf(key); /* >= the distance (key >= d²) */
    float lim = fminf(1.000005f * (D + skin), reach) + skin;
    lim = lim * 1.0001f + pad;
    c->ref[0] = x[0], c->ref[1] = x[1], c->ref[2] = x[2];
    c->reach2 = reach2, c->skin = skin, c->uses = 0;
    if (b < 0)
      c->count = 0; /* nothing within reach + 2 skin */
    else if (lim < INFINITY)
      wfm_collect(nodes, tris, x, lim * lim, c);
    else
      c->count = WFM_CACHE_FULL;
  }
  int32_t bt = -1;
  if (c->count == WFM_CACHE_FULL) {
    float key;
    bt = wfm_pick(nodes, tris, x, reach2, c->tri[0], &key);
    if (bt >= 0) c->tri[0] = (uint32_t)bt;
  } else {
    float best = reach2;
    for (uint32_t j = 0; j < c->count; j++) {
      uint32_t i = c->tri[j];
      float d2, k = wfm_key(&tris[i], x, &d2);
      if (k <= reach2 && wfm_better(k, i, best, bt)) bt = (int32_t)i, best = k;
    }
  }
  return wfm_finish(tris, bt, x, thickness, reach2, ref, n);
}

#endif
