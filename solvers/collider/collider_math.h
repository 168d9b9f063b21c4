/* Colliders as both solvers' kernels see them, written once for both backends (DESIGN.md, "one
 * math, two backends"): the device-side collider (wfp_collider), its pose at a time (constant
 * motion, a rotation rate about a pivot, or keyframes), the time window in which it exists, its
 * signed distance with the outward normal (analytic shapes and triangle meshes, mesh_query.h), and
 * the velocity of its surface at a point (v + w x r), which the contacts' friction and restitution
 * are relative to.
 *
 * The pose maps a point x of the shape as given (scene coordinates at rest) to
 *     X(t) = p(t) + R(t) (x - pivot)
 * so p is where the pivot is and R how the collider has turned; at rest p = pivot, R = 1. Motion:
 *  - constant (no keyframes): p(t) = pos + vel (t - t0), R(t) = exp([omega] (t - t0)) rot, with
 *    (pos, rot, t0) = (pivot, 1, 0) from the desc or what wf_*_set_collider_pose last set;
 *  - keyframes: p linear and R slerped between keys, held at the first and the last key.
 * A collider exists for t_on <= t < t_off; outside that window it is infinitely far.
 *
 * Determinism: only +, -, *, /, sqrtf, floorf, fminf/fmaxf. sin and cos (of the rotation angles)
 * are wfx_sincos, a polynomial of our own, not the math library's (whose last bits differ between
 * the C library and CUDA). The slerp's axis and angle per segment come from the host. A collider
 * that never turns skips the rotation entirely, so the translating analytic shapes give the bits
 * they gave before poses existed. */
#ifndef WEFT_COLLIDER_MATH_H
#define WEFT_COLLIDER_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "solvers/collider/mesh_query.h"
#include "weft/hd.h"

#ifdef __cplusplus
#define WFP_ALIGN16 alignas(16)
#else
#define WFP_ALIGN16 _Alignas(16)
#endif

/* xyz + w: position (w = radius) or velocity (w = inverse mass; 0 = kinematic). */
typedef struct wfp_f4 {
  WFP_ALIGN16 float x;
  float y, z, w;
} wfp_f4;

enum { WFP_PLANE = 0, WFP_SPHERE = 1, WFP_BOX = 2, WFP_CAPSULE = 3, WFP_MESH = 4 };

/* wfp_collider.flags */
#define WFX_TURNS 1u /* the rotation may differ from 1: rotate queries */

#define WFX_FAR 1e30f /* the distance to a collider that does not exist now */

/* A keyframe: where the pivot is and how the collider is turned at time pos.w, and the motion to
 * the next key (host-computed: the relative rotation's axis and angle, the velocities). */
typedef struct wfx_key {
  wfp_f4 pos; /* xyz: the pivot's position; w: the key's time, s */
  wfp_f4 rot; /* unit quaternion (x, y, z, w) */
  wfp_f4
      turn; /* to the next key: R_next = R exp(angle · axis), axis in the body (xyz), angle (w) */
  wfp_f4 vel;   /* to the next key: linear velocity (xyz); w: 1 / (t_next - t) */
  wfp_f4 omega; /* to the next key: angular velocity, world frame, rad/s */
} wfx_key;

/* Collider.
 *  plane:   a = unit normal (xyz), offset in a.w  (points x with dot(n, x) = a.w)
 *  sphere:  a = centre, a.w = radius
 *  box:     a = centre, b = half extents (axis aligned at rest)
 *  capsule: a = end 0, b = end 1 - end 0 (axis), a.w = radius
 *  mesh:    nodes, tris (mesh_query.h), in scene coordinates at rest; pivot.w = shell thickness
 *           (0: a closed solid) */
typedef struct wfp_collider {
  wfp_f4 a, b;
  wfp_f4 vel;   /* linear velocity of the pivot (constant motion) */
  wfp_f4 omega; /* angular velocity, world frame, rad/s (constant motion) */
  wfp_f4 pivot; /* xyz: the pivot at rest; w: the mesh's shell thickness */
  wfp_f4 pos;   /* xyz: where the pivot is at time pos.w (constant motion) */
  wfp_f4 rot;   /* the rotation at time pos.w (constant motion) */
  uint32_t type;
  float friction;
  float zeta; /* from restitution */
  float stiffness;
  float restitution;     /* XPBD: normal velocity after an impact = -e · before */
  float static_friction; /* XPBD */
  float t_on, t_off;     /* exists for t_on <= t < t_off */
  uint32_t n_keys, flags;
  const wfx_key *keys; /* device memory of the solver's partition: n_keys keyframes */
  const wfm_node *nodes;
  const wfm_tri *tris;
  float reach; /* mesh: triangles farther than this are not looked for (INFINITY: all) */
  float skin;  /* mesh with a cache: how far a point moves before its list is made again, m */
  /* mesh: one candidate list per point of the solver's partition (mesh_query.h, wfm_cache), or
   * NULL; used by the queries that pass a point's index (wfx_collider_sdf_at) */
  wfm_cache *cache;
  /* xyz: the shift of an analytic shape into the solver's frame that the pose does not carry
   * (the reference point of its force and torque is the posed pivot + ref: collider_force.h) */
  wfp_f4 ref;
} wfp_collider;

/* The pose and the motion at one time. */
typedef struct wfx_pose {
  float p[3], q[4]; /* pivot position, rotation (x, y, z, w) */
  float v[3], w[3]; /* pivot velocity, angular velocity (world) */
} wfx_pose;

/* sin and cos of a (radians, |a| < 1e5), from our own polynomials: reduction by pi/2 in three
 * parts (Cody and Waite; the first part's few bits make k · part exact), then the minimax
 * polynomials of Cephes' sinf/cosf on [-pi/4, pi/4] (error ~1 ulp there). */
WF_HD static inline void wfx_sincos(float a, float *s, float *c) {
  float k = floorf(a * 0.636619772367581343f + 0.5f);
  float r = ((a - k * 1.5703125f) - k * 4.837512969970703125e-4f) - k * 7.54978995489188216e-8f;
  float z = r * r;
  float sr = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
  float cr =
      1.0f - 0.5f * z +
      z * z * (4.166664568298827e-2f + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
  int q = (int)(k - 4.0f * floorf(k * 0.25f)); /* k mod 4 */
  float ss = q == 0 ? sr : q == 1 ? cr : q == 2 ? -sr : -cr;
  float cc = q == 0 ? cr : q == 1 ? -sr : q == 2 ? -cr : sr;
  *s = ss, *c = cc;
}

/* r = a b (Hamilton product, (x, y, z, w)). */
WF_HD static inline void wfx_qmul(const float *a, const float *b, float *r) {
  float x = a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1];
  float y = a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0];
  float z = a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3];
  float w = a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2];
  r[0] = x, r[1] = y, r[2] = z, r[3] = w;
}

/* The unit quaternion of a turn by angle about the unit axis u. */
WF_HD static inline void wfx_qaxis(float ux, float uy, float uz, float angle, float *q) {
  float s, c;
  wfx_sincos(0.5f * angle, &s, &c);
  q[0] = ux * s, q[1] = uy * s, q[2] = uz * s, q[3] = c;
}

/* r = R(q) v (inv: R(q)^T v), for a unit quaternion q. */
WF_HD static inline void wfx_qrot(const float *q, int inv, const float *v, float *r) {
  float ux = inv ? -q[0] : q[0], uy = inv ? -q[1] : q[1], uz = inv ? -q[2] : q[2], w = q[3];
  float tx = 2.0f * (uy * v[2] - uz * v[1]);
  float ty = 2.0f * (uz * v[0] - ux * v[2]);
  float tz = 2.0f * (ux * v[1] - uy * v[0]);
  r[0] = v[0] + w * tx + (uy * tz - uz * ty);
  r[1] = v[1] + w * ty + (uz * tx - ux * tz);
  r[2] = v[2] + w * tz + (ux * ty - uy * tx);
}

/* The collider's pose and motion at time t. */
WF_HD static inline wfx_pose wfx_collider_pose(const wfp_collider *c, float t) {
  wfx_pose P;
  if (c->n_keys > 0u) {
    const wfx_key *k0 = &c->keys[0], *kl = &c->keys[c->n_keys - 1u];
    const wfx_key *k = t <= k0->pos.w ? k0 : kl;
    int inside = t > k0->pos.w && t < kl->pos.w;
    if (inside) { /* the segment [k, k + 1] holding t: keys are few, a linear walk */
      uint32_t i = 0;
      while (i + 2u < c->n_keys && !(t < c->keys[i + 1u].pos.w))
        i++;
      k = &c->keys[i];
    }
    float s = inside ? (t - k->pos.w) * k->vel.w : 0.0f;
    const wfx_key *kn = inside ? k + 1 : k;
    P.p[0] = k->pos.x + (kn->pos.x - k->pos.x) * s;
    P.p[1] = k->pos.y + (kn->pos.y - k->pos.y) * s;
    P.p[2] = k->pos.z + (kn->pos.z - k->pos.z) * s;
    float r0[4] = {k->rot.x, k->rot.y, k->rot.z, k->rot.w}, dq[4];
    wfx_qaxis(k->turn.x, k->turn.y, k->turn.z, k->turn.w * s, dq);
    wfx_qmul(r0, dq, P.q);
    P.v[0] = inside ? k->vel.x : 0.0f, P.v[1] = inside ? k->vel.y : 0.0f;
    P.v[2] = inside ? k->vel.z : 0.0f;
    P.w[0] = inside ? k->omega.x : 0.0f, P.w[1] = inside ? k->omega.y : 0.0f;
    P.w[2] = inside ? k->omega.z : 0.0f;
    return P;
  }
  float dt = t - c->pos.w;
  P.p[0] = c->pos.x + c->vel.x * dt;
  P.p[1] = c->pos.y + c->vel.y * dt;
  P.p[2] = c->pos.z + c->vel.z * dt;
  P.v[0] = c->vel.x, P.v[1] = c->vel.y, P.v[2] = c->vel.z;
  P.w[0] = c->omega.x, P.w[1] = c->omega.y, P.w[2] = c->omega.z;
  P.q[0] = c->rot.x, P.q[1] = c->rot.y, P.q[2] = c->rot.z, P.q[3] = c->rot.w;
  float wl = sqrtf(P.w[0] * P.w[0] + P.w[1] * P.w[1] + P.w[2] * P.w[2]);
  if (wl > 0.0f) {
    float dq[4], r0[4] = {P.q[0], P.q[1], P.q[2], P.q[3]};
    wfx_qaxis(P.w[0] / wl, P.w[1] / wl, P.w[2] / wl, wl * dt, dq);
    wfx_qmul(dq, r0, P.q); /* world-frame angular velocity: the turn is applied after rot */
  }
  return P;
}

WF_HD static inline int wfx_collider_active(const wfp_collider *c, float t) {
  return t >= c->t_on && t < c->t_off;
}

#define WFX_NO_CACHE 0xffffffffu /* a point index that uses no candidate cache */

/* Signed distance from the shape-frame point (px, py, pz) to the shape, with the normal n in the
 * shape frame; ref: a shell's earlier point (mesh_query.h), or NULL; idx: the point's entry in
 * a mesh's candidate cache (c->cache), or WFX_NO_CACHE. The result does not depend on the cache. */
WF_HD static inline float wfx_shape_sdf(const wfp_collider *c, float px, float py, float pz,
                                        const float *ref, uint32_t idx, float *n) {
  switch (c->type) {
  case WFP_PLANE:
    n[0] = c->a.x, n[1] = c->a.y, n[2] = c->a.z;
    return px * c->a.x + py * c->a.y + pz * c->a.z - c->a.w;
  case WFP_BOX: {
    float lx = px - c->a.x, ly = py - c->a.y, lz = pz - c->a.z;
    float qx = fabsf(lx) - c->b.x, qy = fabsf(ly) - c->b.y, qz = fabsf(lz) - c->b.z;
    float sx = lx < 0.0f ? -1.0f : 1.0f, sy = ly < 0.0f ? -1.0f : 1.0f,
          sz = lz < 0.0f ? -1.0f : 1.0f;
    if (qx > 0.0f || qy > 0.0f || qz > 0.0f) {
      float ex = fmaxf(qx, 0.0f), ey = fmaxf(qy, 0.0f), ez = fmaxf(qz, 0.0f);
      float d = sqrtf(ex * ex + ey * ey + ez * ez);
      n[0] = sx * ex / d, n[1] = sy * ey / d, n[2] = sz * ez / d;
      return d;
    }
    /* inside: push out through the nearest face */
    n[0] = n[1] = n[2] = 0.0f;
    if (qx >= qy && qx >= qz) return n[0] = sx, qx;
    if (qy >= qz) return n[1] = sy, qy;
    return n[2] = sz, qz;
  }
  case WFP_MESH: {
    float x[3] = {px, py, pz};
    float r2 = c->reach < 1e30f ? c->reach * c->reach : INFINITY;
    if (c->cache && idx != WFX_NO_CACHE && c->skin > 0.0f)
      return wfm_distance_cached(c->nodes, c->tris, x, c->pivot.w, r2, ref, c->skin, &c->cache[idx],
                                 n);
    return wfm_distance(c->nodes, c->tris, x, c->pivot.w, r2, ref, n);
  }
  default: { /* sphere, capsule: distance to a point / segment minus the radius */
    float cx = c->a.x, cy = c->a.y, cz = c->a.z;
    if (c->type == WFP_CAPSULE) {
      float ab2 = c->b.x * c->b.x + c->b.y * c->b.y + c->b.z * c->b.z;
      float s =
          ab2 > 0.0f ? ((px - cx) * c->b.x + (py - cy) * c->b.y + (pz - cz) * c->b.z) / ab2 : 0.0f;
      s = fminf(fmaxf(s, 0.0f), 1.0f);
      cx += c->b.x * s, cy += c->b.y * s, cz += c->b.z * s;
    }
    float dx = px - cx, dy = py - cy, dz = pz - cz;
    float d = sqrtf(dx * dx + dy * dy + dz * dz);
    if (d > 0.0f)
      n[0] = dx / d, n[1] = dy / d, n[2] = dz / d;
    else
      n[0] = 0.0f, n[1] = 1.0f, n[2] = 0.0f;
    return d - c->a.w;
  }
  }
}

/* The shape-frame point of world point X at time t: pivot + R^T (X - p). */
WF_HD static inline void wfx_to_shape(const wfp_collider *c, const wfx_pose *P, float x, float y,
                                      float z, float *b) {
  float r[3] = {x - P->p[0], y - P->p[1], z - P->p[2]};
  if (c->flags & WFX_TURNS)
    wfx_qrot(P->q, 1, r, b);
  else
    b[0] = r[0], b[1] = r[1], b[2] = r[2];
  b[0] += c->pivot.x, b[1] += c->pivot.y, b[2] += c->pivot.z;
}

/* Signed distance from the world point (x, y, z) to collider c at time t, with the outward unit
 * normal n (world frame). Not existing at t: WFX_FAR. With from (may be NULL): the point was at
 * from->xyz at time t0, which decides the side of a shell it has crossed (mesh_query.h). */
WF_HD static inline float wfx_collider_sdf(const wfp_collider *c, float t, float x, float y,
                                           float z, float t0, const wfp_f4 *from, uint32_t idx,
                                           float *n) {
  if (!wfx_collider_active(c, t)) {
    n[0] = 0.0f, n[1] = 1.0f, n[2] = 0.0f;
    return WFX_FAR;
  }
  wfx_pose P = wfx_collider_pose(c, t);
  float b[3], rb[3], nb[3];
  wfx_to_shape(c, &P, x, y, z, b);
  const float *ref = NULL;
  if (from && c->type == WFP_MESH && c->pivot.w > 0.0f) {
    wfx_pose P0 = wfx_collider_pose(c, t0);
    wfx_to_shape(c, &P0, from->x, from->y, from->z, rb);
    ref = rb;
  }
  float phi = wfx_shape_sdf(c, b[0], b[1], b[2], ref, idx, nb);
  if (c->flags & WFX_TURNS)
    wfx_qrot(P.q, 0, nb, n);
  else
    n[0] = nb[0], n[1] = nb[1], n[2] = nb[2];
  return phi;
}

WF_HD static inline float wfp_collider_sdf(const wfp_collider *c, float t, float x, float y,
                                           float z, float *n) {
  return wfx_collider_sdf(c, t, x, y, z, t, NULL, WFX_NO_CACHE, n);
}

/* wfp_collider_sdf for point idx of the solver's partition, through a mesh's candidate cache
 * where it has one (c->cache): the same result, cheaper where the point moves little. Each index
 * must be queried by one thread at a time (the cache entry is read and written). */
WF_HD static inline float wfx_collider_sdf_at(const wfp_collider *c, float t, float x, float y,
                                              float z, uint32_t idx, float *n) {
  return wfx_collider_sdf(c, t, x, y, z, t, NULL, idx, n);
}

/* The same for a point that was at x0 at time t0 (a substep before): shells keep it on its side. */
WF_HD static inline float wfp_collider_sdf_from(const wfp_collider *c, float t, float x, float y,
                                                float z, float t0, wfp_f4 x0, float *n) {
  return wfx_collider_sdf(c, t, x, y, z, t0, &x0, WFX_NO_CACHE, n);
}

/* The velocity of collider c's surface at the world point (x, y, z) at time t: v + w x r, r from
 * the pivot. This is what contacts take relative velocities against. */
WF_HD static inline void wfp_collider_velocity_at(const wfp_collider *c, float t, float x, float y,
                                                  float z, float *v) {
  if (!(c->flags & WFX_TURNS) && c->n_keys == 0u) { /* translating: the same velocity everywhere */
    v[0] = c->vel.x, v[1] = c->vel.y, v[2] = c->vel.z;
    return;
  }
  wfx_pose P = wfx_collider_pose(c, t);
  float rx = x - P.p[0], ry = y - P.p[1], rz = z - P.p[2];
  v[0] = P.v[0] + (P.w[1] * rz - P.w[2] * ry);
  v[1] = P.v[1] + (P.w[2] * rx - P.w[0] * rz);
  v[2] = P.v[2] + (P.w[0] * ry - P.w[1] * rx);
}

#endif
