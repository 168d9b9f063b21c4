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
 * The query walks the tree nearest box first with a fixed-size stack and prunes boxes farther than
 * the best triangle so far; the order of the walk depends only on the data, so the CPU and CUDA
 * backends visit the same triangles and round the same operations (no FMA contraction on either
 * side): bitwise equal results.
 *
 * Sign (closed meshes): the side of the closest triangle's plane. Where the closest point is on an
 * edge or a vertex several triangles tie; among them the one whose plane the point is farthest
 * from (largest |cos| between the offset and the normal) decides. That is exact on edges and on
 * convex or concave vertices, and is the classic weak spot only on saddle vertices of very coarse
 * meshes. Shells (thickness > 0, open or closed): the unsigned distance minus half the thickness,
 * the normal pointing from the surface to the point. */
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

/* Signed distance from x to the mesh (shell: thickness > 0) with the outward unit normal in n.
 * reach2: only triangles closer than sqrt(reach2) are looked at; with none, returns +reach (or
 * 1e30 for an infinite reach) and n = (0, 1, 0). ref (shells; may be NULL): where the point was
 * a moment before. A point that has crossed the closest triangle's plane since then is inside the
 * shell on ref's side (negative distance, the normal back towards ref), so a particle that moves
 * more than half the thickness in a substep is still put back where it came from. */
WF_HD static inline float wfm_distance(const wfm_node *nodes, const wfm_tri *tris, const float *x,
                                       float thickness, float reach2, const float *ref, float *n) {
  const float tie = 1e-5f; /* relative: squared distances this close are one closest point */
  float best = reach2, best_cos = -1.0f;
  int32_t bt = -1;
  float bcp[3] = {0.0f, 0.0f, 0.0f};
  uint32_t stack[WFM_STACK];
  int sp = 0;
  if (nodes && wfm_box_d2(&nodes[0], x) <= best) stack[sp++] = 0u;
  while (sp > 0) {
    const wfm_node *nd = &nodes[stack[--sp]];
    if (wfm_box_d2(nd, x) > best * (1.0f + tie)) continue;
    if (nd->count > 0u) {
      for (uint32_t i = nd->first; i < nd->first + nd->count; i++) {
        const wfm_tri *t = &tris[i];
        float cp[3];
        float d2 = wfm_closest(t, x, cp);
        if (d2 > best * (1.0f + tie)) continue;
        float e[3] = {x[0] - cp[0], x[1] - cp[1], x[2] - cp[2]};
        float fn[3] = {t->a.w, t->b.w, t->c.w};
        float en = wfm_dot(e, fn);
        float c2 = d2 > 0.0f ? en * en / d2 : 1.0f; /* cos² of the offset to the normal */
        /* strictly nearer, or a tie the point is more squarely in front of */
        if (bt < 0 || d2 < best * (1.0f - tie) || c2 > best_cos) {
          bt = (int32_t)i, best_cos = c2;
          bcp[0] = cp[0], bcp[1] = cp[1], bcp[2] = cp[2];
        }
        if (d2 < best) best = d2;
      }
    } else {
      uint32_t l = nd->first, r = nd->first + 1u;
      float dl = wfm_box_d2(&nodes[l], x), dr = wfm_box_d2(&nodes[r], x);
      float lim = best * (1.0f + tie);
      /* the nearer child is popped first */
      uint32_t near_ = dl <= dr ? l : r, far_ = dl <= dr ? r : l;
      float dn = dl <= dr ? dl : dr, df = dl <= dr ? dr : dl;
      if (df <= lim && sp < WFM_STACK) stack[sp++] = far_;
      if (dn <= lim && sp < WFM_STACK) stack[sp++] = near_;
    }
  }
  if (bt < 0) {
    n[0] = 0.0f, n[1] = 1.0f, n[2] = 0.0f;
    return reach2 < INFINITY ? sqrtf(reach2) : 1e30f;
  }
  const wfm_tri *t = &tris[bt];
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

#endif
