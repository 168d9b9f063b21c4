/* Cloth solver math, written once for both backends (DESIGN.md, "one math, two backends").
 *
 * This header holds the device-side data layout (structs living in device buffers), one argument
 * struct per kernel, and the per-element functions (WF_HD static inline) that the CPU loops in
 * cloth_kernels.c and the __global__ kernels in cloth_kernels.cu both call.
 *
 * Determinism: only +, -, *, /, fmaf, sqrtf, fabsf, fminf/fmaxf (correctly rounded or exact in
 * IEEE single precision on both compilers; the dihedral angle uses wfc_atan2, a polynomial made of
 * those, not the libm/CUDA atan2f, which differ; the springs' wfc_rsqrt adds integer operations
 * on the bits). With FMA contraction off (-ffp-contract=off, -fmad=false; a fused multiply-add is
 * written out as fmaf where one is meant) the CPU and CUDA backends compute bit-identical states.
 * Every vertex gathers its springs and triangles in a fixed (CSR) order and writes only itself;
 * every XPBD constraint of a colour writes only its own vertices, which no other constraint of
 * the colour touches. No floating-point atomics anywhere.
 *
 * Frame: every position here (state, rest positions, colliders, the vertex grid) is relative to the
 * cloth's origin (docs/precision.md), kept in double on the host; a spring or constraint reads
 * differences of such positions, so it does not depend on where the cloth sits in the world.
 * Particles (coupling) are moved into this frame by params.particle_shift.
 *
 * State layout: pos[i] = xyz + inverse mass (0: pinned/kinematic), vel[i] = xyz + 0. The clock
 * (time, substep count) lives beside the state it belongs to, so a kernel reads the clock of its
 * input and one thread writes the clock of its output: no thread reads what another writes.
 */
#ifndef WEFT_CLOTH_MATH_H
#define WEFT_CLOTH_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "coupling.h" /* the particle solver's grid and state, for self-collision and coupling */
#include "solvers/particle/particle_math.h" /* wfp_f4, wfp_collider, wfp_collider_sdf */
#include "weft/hd.h"

#define WFC_MAX_COLLIDERS WFP_MAX_COLLIDERS

/* Spring / constraint kinds: index into the stiffness and compliance tables. */
enum { WFC_STRETCH = 0, WFC_SHEAR = 1, WFC_BEND = 2 };

/* A CSR link: the other vertex (low 30 bits) and the kind (high 2 bits), and the rest length. */
#define WFC_LINK_INDEX_MASK 0x3fffffffu
#define WFC_MAX_VERTICES    (1u << 30)
typedef struct wfc_link {
  uint32_t other_kind;
  float rest;
} wfc_link;

/* An XPBD constraint. Distance: v[0], v[1]. Dihedral bend: v[0], v[1] the vertices opposite the
 * shared edge, v[2] -> v[3] the edge; rest = rest angle (rad). */
typedef struct wfc_constraint {
  uint32_t v[4];
  float rest;
  uint32_t kind;
} wfc_constraint;

/* Device flags (wfc_flags.flags), set with integer OR and read back with the frame. */
#define WFC_FLAG_NONFINITE 1u

typedef struct wfc_flags {
  uint32_t flags;
  uint32_t first_bad; /* smallest vertex index with a non-finite state, or UINT32_MAX */
} wfc_flags;

typedef struct wfc_clock {
  double time;
  uint64_t substeps;
} wfc_clock;

/* Cloth contact (cloth_contact.h): vertex–triangle and edge–edge, with friction. */
typedef struct wfcc_params {
  float thickness;  /* distance kept between primitives, m */
  float reach;      /* pairs closer than this at the start of a substep are candidates, m: set
                       every substep on the device (cloth_contact.h: wfcc_reach_elem) */
  float reach_min;  /* the least reach, m */
  float bound;      /* a vertex moves at most bound x (its nearest pair's distance, at most reach)
                       a substep: < 1/2 keeps every pair apart (cloth_contact.h) */
  float rest_skip;  /* pairs closer than this in the rest mesh never push (neighbours) */
  float edge_cap;   /* longest edge the grid walk allows for, m (set every substep) */
  float mu_s, mu_k; /* static and dynamic friction coefficients between layers */
  uint32_t on;
  wfc_grid_params grid; /* vertex grid at the substep's start: cell >= reach + 2 edge_cap */
} wfcc_params;

/* The parameter block, read by every kernel from device memory (changes need no recapture). */
typedef struct wfc_params {
  wfp_f4 gravity; /* xyz */
  wfp_f4 wind;    /* xyz */
  float dt, inv_dt;
  float damp;        /* velocity factor per substep: 1 / (1 + damping dt) */
  float spring_c;    /* spring dashpot, N·s/m */
  float spring_k[3]; /* per kind, N/m */
  float alpha[3];    /* XPBD: compliance / dt² per kind */
  float gamma[3];    /* XPBD damping: compliance * damping / dt per kind */
  float drag_coef;   /* ½ ρ C_d */
  float lift_coef;   /* ½ ρ C_l */
  float thickness;
  float friction;
  uint32_t n_colliders;
  uint32_t aero;        /* non-zero: drag or lift is on */
  float self_dist;      /* self-collision: distance kept between vertices (0: off) */
  wfc_grid_params grid; /* the vertex grid of self-collision and coupling (cell, box) */
  /* coupling: the particles' origin less the cloth's, xyz (m): a particle at x (its solver's
   * frame) is at x + particle_shift in the cloth's (coupling.h: wfc_particles_origin) */
  wfp_f4 particle_shift;
  wfcc_params contact; /* cloth contact (wf_cloth_desc.contact) */
  /* a drag (wf_cloth_drag_set): vertex drag_vertex (this partition's local index; only the
   * partition that owns it has drag_on) pulled towards drag_target (the cloth's frame) by a
   * spring drag_k (N/m) and a dashpot drag_c (N·s/m) in every substep; drag_on 0: none */
  wfp_f4 drag_target;
  float drag_k, drag_c;
  uint32_t drag_on, drag_vertex;
} wfc_params;

/* Shared inputs of the per-vertex kernels. */
typedef struct wfc_mesh_view {
  const uint32_t *tri_start; /* vertex -> triangle CSR (n + 1) */
  const uint32_t *tri_list;  /* triangle indices */
  const uint32_t *tris;      /* 3 vertex indices per triangle */
} wfc_mesh_view;

/* ---- kernel argument structs ------------------------------------------------------------------
 */

typedef struct wfc_spring_args { /* per vertex: forces, integration, colliders; half in -> out */
  const wfc_params *params;
  const wfp_collider *colliders;
  const wfc_clock *clock_in;
  wfc_clock *clock_out;
  wfc_flags *flags;
  const wfp_f4 *pos_in, *vel_in;
  wfp_f4 *pos_out, *vel_out;
  const uint32_t *adj_start; /* n + 1 */
  const wfc_link *adj;
  wfc_mesh_view mesh;
  uint32_t n;
  /* the frame's impulses on the colliders (collider_force.h), from the owned vertices; NULL: not
   * accumulated */
  unsigned long long *forces;
} wfc_spring_args;

typedef struct wfc_predict_args { /* per vertex: vpred = v + dt a, pred = dt vpred (a step) */
  const wfc_params *params;
  const wfc_clock *clock_in;
  wfc_clock *clock_out;
  const wfp_f4 *pos, *vel;
  wfp_f4 *pred;  /* the step from pos (xyz) + inverse mass, not a position: see wfc_predict_elem */
  wfp_f4 *vpred; /* the predicted velocity (finalize rebuilds v from it, not from positions) */
  wfc_mesh_view mesh;
  uint32_t n;
} wfc_predict_args;

typedef struct wfc_solve_args { /* per constraint of one colour: Gauss–Seidel update of pred */
  const wfc_params *params;
  const wfc_constraint *cons; /* the colour's first constraint */
  float *lambda;              /* the colour's first multiplier; NULL: one iteration (λ = 0) */
  const wfp_f4 *pos;          /* positions at the start of the substep */
  wfp_f4 *pred;               /* the steps from pos */
} wfc_solve_args;

typedef struct wfc_finalize_args { /* per vertex: x += pred, v = vpred + (pred - dt vpred) / dt */
  const wfc_params *params;
  const wfp_collider *colliders;
  const wfc_clock *clock_in; /* the clock the predict kernel wrote (end of the substep) */
  wfc_clock *clock_out;
  wfc_flags *flags;
  wfp_f4 *pos, *vel;
  const wfp_f4 *pred;
  const wfp_f4 *vpred;
  uint32_t n;
  unsigned long long *forces; /* as wfc_spring_args.forces */
} wfc_finalize_args;

/* Self-collision and particle coupling (see cloth.c): the points q the grid is built from are
 * the positions at the end of the substep as far as they are known (XPBD: the prediction after
 * the constraints; springs: x + dt (v + dt g)); each vertex (and each particle) gathers the
 * corrections of its own contacts in the grid's fixed order into its own slot. */

typedef struct wfc_q_args { /* springs, per vertex: q = x + dt (v + dt g) (pinned: x + dt v) */
  const wfc_params *params;
  const wfp_f4 *pos, *vel;
  wfp_f4 *q;
  const wfp_f4 *step; /* XPBD: q = x + step (the step after the constraints; vel unused) */
} wfc_q_args;

typedef struct wfc_keys_args { /* per vertex: cell key of q[i], vals[i] = i */
  const wfc_params *params;
  const wfp_f4 *q;
  uint32_t *keys, *vals;
} wfc_keys_args;

typedef struct wfc_self_args { /* per vertex: delta[i] = self-collision correction of q[i] */
  const wfc_params *params;
  wfc_cgrid grid;
  const wfp_f4 *rest; /* rest positions (pairs closer than 2 self_dist at rest never repel) */
  wfp_f4 *delta;
} wfc_self_args;

typedef struct wfc_couple_cloth_args { /* per vertex: delta[i] (+)= corrections from particles */
  const wfc_params *params;
  const wfp_f4 *q;
  wfc_pgrid pgrid;
  wfp_f4 *delta;
  uint32_t accumulate; /* non-zero: add to delta (self-collision wrote it), else set it */
} wfc_couple_cloth_args;

typedef struct wfc_couple_particle_args { /* per particle slot: svel += impulses from the cloth */
  const wfc_params *params;
  wfc_cgrid grid;
  wfc_pgrid pgrid;
} wfc_couple_particle_args;

typedef struct wfc_apply_args { /* per vertex: pred += delta (XPBD), or vel += delta / dt */
  const wfc_params *params;
  const wfp_f4 *delta;
  wfp_f4 *pred; /* XPBD */
  wfp_f4 *vel;  /* springs (pred NULL) */
} wfc_apply_args;

/* The halo of a cloth over several devices (halo.c): pack, per element j, dst0[j] = src0[idx[j]]
 * (and dst1[j] = src1[idx[j]] when src1 is not NULL); unpack, dst0[idx[j]] = src0[j] (and dst1
 * likewise). */
typedef struct wfc_halo_args {
  const uint32_t *idx;
  const wfp_f4 *src0, *src1;
  wfp_f4 *dst0, *dst1;
} wfc_halo_args;

/* The per-frame readback in the xyz layout (WF_CLOTH_XYZ): dst[3 i + k] = src[i] component k. */
typedef struct wfc_xyz_args {
  const wfp_f4 *src;
  float *dst;
} wfc_xyz_args;

/* The overlap of a cloth over several devices (halo.c): a per-vertex kernel over the vertices
 * [begin, begin + n) of a partition only (element j works on vertex begin + j), so that the
 * vertices other partitions read can be computed and sent before the rest. The math per vertex is
 * the full kernel's. */
typedef struct wfc_spring_range_args {
  wfc_spring_args a;
  uint32_t begin;
} wfc_spring_range_args;

typedef struct wfc_predict_range_args {
  wfc_predict_args a;
  uint32_t begin;
} wfc_predict_range_args;

typedef struct wfc_finalize_range_args {
  wfc_finalize_args a;
  uint32_t begin;
} wfc_finalize_range_args;

/* ---- small vector helpers ---------------------------------------------------------------------
 */

typedef struct wfc_v3 {
  float x, y, z;
} wfc_v3;

WF_HD static inline wfc_v3 wfc_v(float x, float y, float z) {
  wfc_v3 r = {x, y, z};
  return r;
}
WF_HD static inline wfc_v3 wfc_xyz(wfp_f4 a) { return wfc_v(a.x, a.y, a.z); }
WF_HD static inline wfc_v3 wfc_add(wfc_v3 a, wfc_v3 b) {
  return wfc_v(a.x + b.x, a.y + b.y, a.z + b.z);
}
WF_HD static inline wfc_v3 wfc_sub(wfc_v3 a, wfc_v3 b) {
  return wfc_v(a.x - b.x, a.y - b.y, a.z - b.z);
}
WF_HD static inline wfc_v3 wfc_scale(wfc_v3 a, float s) { return wfc_v(a.x * s, a.y * s, a.z * s); }
WF_HD static inline float wfc_dot(wfc_v3 a, wfc_v3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
WF_HD static inline wfc_v3 wfc_cross(wfc_v3 a, wfc_v3 b) {
  return wfc_v(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
WF_HD static inline float wfc_len(wfc_v3 a) { return sqrtf(wfc_dot(a, a)); }

/* 1/sqrt(x) for x >= WFC_RSQRT_MIN, from integer operations on the bits and IEEE *, fmaf only:
 * the same bits on both backends, and no branch (a correctly rounded sqrtf and division each
 * carry a slow-path branch on the GPU, which keeps the compiler from overlapping a vertex's
 * springs). The guess halves the exponent (magic constant 0x5f375a86, relative error below
 * 3.5 %); three Newton steps y <- y (3/2 - (x/2) y^2) take that to 1.8e-3, 4.6e-6, then to float
 * rounding (test_cloth_physics checks 4 ulp over 2^24 arguments). (x/2 y) y rather than x/2 (y y):
 * y^2 would go subnormal for x near FLT_MAX. */
#define WFC_RSQRT_MIN 1e-30f
WF_HD static inline float wfc_rsqrt(float x) {
  uint32_t b;
  float y;
  memcpy(&b, &x, sizeof b); /* a register move on both compilers */
  b = 0x5f375a86u - (b >> 1);
  memcpy(&y, &b, sizeof y);
  float hx = 0.5f * x;
  y = y * fmaf(-(hx * y), y, 1.5f);
  y = y * fmaf(-(hx * y), y, 1.5f);
  y = y * fmaf(-(hx * y), y, 1.5f);
  return y;
}
WF_HD static inline int wfc_finite(float v) { return v == v && v - v == 0.0f; }
WF_HD static inline int wfc_finite3(wfc_v3 a) {
  return wfc_finite(a.x) && wfc_finite(a.y) && wfc_finite(a.z);
}

/* atan2 from +, -, *, / only (the same bits on both backends): octant reduction and the
 * polynomial for atan on [0, 1] of Abramowitz & Stegun 4.4.49 (error 2e-8 rad, below float
 * rounding). */
WF_HD static inline float wfc_atan2(float y, float x) {
  float ax = fabsf(x), ay = fabsf(y);
  float hi = fmaxf(ax, ay), lo = fminf(ax, ay);
  if (hi == 0.0f) return 0.0f;
  float a = lo / hi, s = a * a;
  float r = 0.0028662257f;
  r = r * s - 0.0161657367f;
  r = r * s + 0.0429096138f;
  r = r * s - 0.0752896400f;
  r = r * s + 0.1065626393f;
  r = r * s - 0.1420889944f;
  r = r * s + 0.1999355085f;
  r = r * s - 0.3333314528f;
  r = (r * s) * a + a;
  if (ay > ax) r = 1.57079637f - r;
  if (x < 0.0f) r = 3.14159274f - r;
  return y < 0.0f ? -r : r;
}

/* Signed dihedral angle of the hinge (x1, x2 opposite the edge x3 -> x4): 0 when flat, and its
 * gradient (Bridson et al. 2003, "Simulation of clothing with folds and wrinkles"). Returns 0 and
 * leaves g untouched when the hinge is degenerate. */
WF_HD static inline int wfc_dihedral(wfc_v3 x1, wfc_v3 x2, wfc_v3 x3, wfc_v3 x4, float *theta,
                                     wfc_v3 g[4]) {
  wfc_v3 e = wfc_sub(x4, x3);
  float el = wfc_len(e);
  wfc_v3 n1 = wfc_cross(wfc_sub(x1, x3), wfc_sub(x1, x4));
  wfc_v3 n2 = wfc_cross(wfc_sub(x2, x4), wfc_sub(x2, x3));
  float l1 = wfc_dot(n1, n1), l2 = wfc_dot(n2, n2);
  if (!(el > 1e-12f) || !(l1 > 1e-24f) || !(l2 > 1e-24f)) return 0;
  float inv_e = 1.0f / el;
  wfc_v3 m1 = wfc_scale(n1, 1.0f / l1), m2 = wfc_scale(n2, 1.0f / l2);
  float s1 = sqrtf(l1), s2 = sqrtf(l2);
  wfc_v3 u1 = wfc_scale(n1, 1.0f / s1), u2 = wfc_scale(n2, 1.0f / s2);
  float c = wfc_dot(u1, u2);
  float s = wfc_dot(wfc_cross(u2, u1), wfc_scale(e, inv_e));
  *theta = wfc_atan2(s, c);
  g[0] = wfc_scale(m1, el);
  g[1] = wfc_scale(m2, el);
  g[2] = wfc_add(wfc_scale(m1, wfc_dot(wfc_sub(x1, x4), e) * inv_e),
                 wfc_scale(m2, wfc_dot(wfc_sub(x2, x4), e) * inv_e));
  g[3] = wfc_sub(wfc_scale(m1, -wfc_dot(wfc_sub(x1, x3), e) * inv_e),
                 wfc_scale(m2, wfc_dot(wfc_sub(x2, x3), e) * inv_e));
  return 1;
}

/* ---- forces -----------------------------------------------------------------------------------
 */

/* Aerodynamic force on vertex i: a third of each incident triangle's drag and lift, gathered in
 * the vertex's triangle order. Per triangle, with u = mean vertex velocity - wind, n its unit
 * normal, A its area, un = u·n, s = |u|:
 *     drag = -½ρC_d A s un n,     lift = ½ρC_l A (un / s) (un u - s² n)
 * (lift is perpendicular to u, in the plane of u and n; magnitude ½ρC_l A s² cosθ sinθ). */
WF_HD static inline wfc_v3 wfc_aero(const wfc_params *p, const wfc_mesh_view *m, const wfp_f4 *pos,
                                    const wfp_f4 *vel, uint32_t i) {
  wfc_v3 f = wfc_v(0.0f, 0.0f, 0.0f);
  wfc_v3 wind = wfc_xyz(p->wind);
  for (uint32_t k = m->tri_start[i]; k < m->tri_start[i + 1]; k++) {
    const uint32_t *t = m->tris + 3 * (size_t)m->tri_list[k];
    wfc_v3 a = wfc_xyz(pos[t[0]]), b = wfc_xyz(pos[t[1]]), c = wfc_xyz(pos[t[2]]);
    wfc_v3 n = wfc_cross(wfc_sub(b, a), wfc_sub(c, a));
    float nl = wfc_len(n);
    if (!(nl > 0.0f)) continue;
    float area = 0.5f * nl;
    n = wfc_scale(n, 1.0f / nl);
    wfc_v3 u = wfc_add(wfc_add(wfc_xyz(vel[t[0]]), wfc_xyz(vel[t[1]])), wfc_xyz(vel[t[2]]));
    u = wfc_sub(wfc_scale(u, 1.0f / 3.0f), wind);
    float s = wfc_len(u);
    if (!(s > 0.0f)) continue;
    float un = wfc_dot(u, n);
    wfc_v3 tf = wfc_scale(n, -p->drag_coef * area * s * un);
    float lk = p->lift_coef * area * un / s;
    tf = wfc_add(tf, wfc_scale(wfc_sub(wfc_scale(u, un), wfc_scale(n, s * s)), lk));
    f = wfc_add(f, wfc_scale(tf, 1.0f / 3.0f));
  }
  return f;
}

/* Pushes x out of every collider to its surface + thickness (time t, collider order) and fixes
 * the velocity: the approaching normal part (relative to the collider) is removed and the
 * tangential part is reduced by Coulomb friction, at most to zero. The collider takes the
 * opposite of the vertex's momentum change, (v_before - v_after) / w, at its surface point
 * (F: collider_force.h; NULL: not counted; w: the vertex's inverse mass). i: the vertex, whose
 * entry of a mesh collider's candidate cache the query uses (the same result, cheaper), or
 * WFX_NO_CACHE where several threads may run the same vertex (the one-launch frame's lanes). */
WF_HD static inline void wfc_collide(const wfc_params *p, const wfp_collider *cs, float t,
                                     wfc_v3 *x, wfc_v3 *v, float w, uint32_t i, wfx_forces *F) {
  for (uint32_t k = 0; k < p->n_colliders; k++) {
    const wfp_collider *c = &cs[k];
    float n[3];
    float phi = wfx_collider_sdf_at(c, t, x->x, x->y, x->z, i, n);
    if (!(phi < p->thickness)) continue;
    wfc_v3 nn = wfc_v(n[0], n[1], n[2]);
    *x = wfc_add(*x, wfc_scale(nn, p->thickness - phi));
    float cvel[3];
    wfp_collider_velocity_at(c, t, x->x - nn.x * p->thickness, x->y - nn.y * p->thickness,
                             x->z - nn.z * p->thickness, cvel);
    wfc_v3 cv = wfc_v(cvel[0], cvel[1], cvel[2]);
    wfc_v3 vr = wfc_sub(*v, cv);
    float vn = wfc_dot(vr, nn);
    wfc_v3 vt = wfc_sub(vr, wfc_scale(nn, vn));
    float dvn = vn < 0.0f ? -vn : 0.0f;
    float vtl = wfc_len(vt);
    float mu = fminf(p->friction, c->friction);
    if (vtl > 0.0f) vt = wfc_scale(vt, fmaxf(0.0f, 1.0f - mu * dvn / vtl));
    wfc_v3 vb = *v;
    *v = wfc_add(wfc_add(cv, vt), wfc_scale(nn, vn < 0.0f ? 0.0f : vn));
    if (F) {
      float J[3] = {(vb.x - v->x) / w, (vb.y - v->y) / w, (vb.z - v->z) / w};
      float at[3] = {x->x - nn.x * p->thickness, x->y - nn.y * p->thickness,
                     x->z - nn.z * p->thickness};
      wfx_forces_add(F, c, k, t, at, J, NULL);
    }
  }
}

/* The drag's force on vertex i (wf_cloth_drag_set), added to the force f on it: k (t - x) - c v,
 * explicit within the substep, with k capped at 1 / (2 w h²) and c at 1 / (2 w h) (w the inverse
 * mass, h the substep), as the particle solver's drag: alone, the spring-damper on the vertex is
 * then stable (ω h <= 1/√2 and w c h <= 1/2) however stiff the caller asks it to be. Only a free
 * vertex (w > 0) is pulled; an untaken branch otherwise, so that a cloth without a drag computes
 * the same bits as before it existed. Both integrators call it (springs: wfc_spring_finish; XPBD:
 * wfc_predict_elem), and so does every frame path, one-launch or per substep. */
WF_HD static inline wfc_v3 wfc_drag_add(const wfc_params *p, uint32_t i, wfc_v3 x, wfc_v3 v,
                                        float w, wfc_v3 f) {
  if (!p->drag_on || i != p->drag_vertex || !(w > 0.0f)) return f;
  float h = p->dt;
  float k = fminf(p->drag_k, 0.5f / (w * h * h)), c = fminf(p->drag_c, 0.5f / (w * h));
  wfc_v3 d = wfc_sub(wfc_xyz(p->drag_target), x);
  return wfc_add(f, wfc_sub(wfc_scale(d, k), wfc_scale(v, c)));
}

/* ---- per-element kernels ----------------------------------------------------------------------
 */

/* The stiffness of a spring of `kind`: a select, not an index, so that the parameters can stay
 * in registers (the one-launch frame). */
WF_HD static inline float wfc_spring_stiffness(const wfc_params *p, uint32_t kind) {
  return kind == WFC_STRETCH ? p->spring_k[WFC_STRETCH]
         : kind == WFC_SHEAR ? p->spring_k[WFC_SHEAR]
                             : p->spring_k[WFC_BEND];
}

/* s + d g, each component one fused multiply-add (fmaf: exactly rounded on both backends). */
WF_HD static inline wfc_v3 wfc_fma3(wfc_v3 d, float g, wfc_v3 s) {
  return wfc_v(fmaf(d.x, g, s.x), fmaf(d.y, g, s.y), fmaf(d.z, g, s.z));
}

/* One spring (stiffness k, damping c, rest length) on the vertex at x (velocity v) from the
 * vertex at pj (velocity vj): its force is g d with d = pj - x (in *d) and the returned g,
 *   g = (k (|d| - rest) + c (vj - v).d / |d|) / |d|,
 * computed without a branch (1/|d| from wfc_rsqrt, the dot products and sums fused): the GPU can
 * overlap a vertex's springs. g is 0 when `on` is 0 (an empty slot) or the ends coincide (closer
 * than 1e-15): such a spring adds nothing. Callers add g d with wfc_fma3, to a sum that starts
 * at +0, so a spring that adds nothing (d finite, g = 0) leaves the sum's bits as they are:
 * skipping it and adding it are the same. */
WF_HD static inline float wfc_link_scale(float k, float c, float rest, wfc_v3 x, wfc_v3 v,
                                         wfp_f4 pj, wfp_f4 vj, int on, wfc_v3 *d) {
  wfc_v3 e = wfc_sub(wfc_xyz(pj), x), dv = wfc_sub(wfc_xyz(vj), v);
  float d2 = fmaf(e.x, e.x, fmaf(e.y, e.y, e.z * e.z));
  float inv = wfc_rsqrt(d2);
  float len = d2 * inv;
  float rel = fmaf(e.x, dv.x, fmaf(e.y, dv.y, e.z * dv.z)) * inv;
  float g = fmaf(k, len - rest, c * rel) * inv;
  *d = e;
  return on && d2 >= WFC_RSQRT_MIN ? g : 0.0f;
}

/* Spring force on the vertex at x (velocity v) from vertex j (kind, rest length), added to s. */
WF_HD static inline void wfc_link_force(const wfc_params *p, const wfp_f4 *pos, const wfp_f4 *vel,
                                        wfc_v3 x, wfc_v3 v, uint32_t j, uint32_t kind, float rest,
                                        wfc_v3 *s) {
  wfc_v3 d;
  float g =
      wfc_link_scale(wfc_spring_stiffness(p, kind), p->spring_c, rest, x, v, pos[j], vel[j], 1, &d);
  *s = wfc_fma3(d, g, *s);
}

/* THE ORDER OF A VERTEX'S SPRING FORCES (every path, CPU and CUDA, whatever its threads a vertex).
 * The springs of vertex i are its CSR list (cloth_mesh.c; a grid's in the order of
 * wfc_grid_gather12). Four partial sums: s_q, q = 0..3, adds the springs at list positions
 * q, q + 4, q + 8, ... in that order, starting from +0; the force is (s0 + s1) + (s2 + s3). A
 * spring whose ends coincide adds nothing (wfc_link_scale). This is the shape a vertex spread
 * over 4 threads computes (thread q: s_q; two butterfly shuffles), over 2 (thread q: s_q and
 * s_{q+2}) or over 1; float addition being commutative, both partners of a shuffle get the same
 * sum. */
WF_HD static inline wfc_v3 wfc_tree4(wfc_v3 s0, wfc_v3 s1, wfc_v3 s2, wfc_v3 s3) {
  return wfc_add(wfc_add(s0, s1), wfc_add(s2, s3));
}

/* s[q] += d g (wfc_fma3) for a q known only at run time (without indexing, so s stays in
 * registers). */
WF_HD static inline void wfc_acc4(wfc_v3 *s0, wfc_v3 *s1, wfc_v3 *s2, wfc_v3 *s3, uint32_t q,
                                  wfc_v3 d, float g) {
  if (q == 0)
    *s0 = wfc_fma3(d, g, *s0);
  else if (q == 1)
    *s1 = wfc_fma3(d, g, *s1);
  else if (q == 2)
    *s2 = wfc_fma3(d, g, *s2);
  else
    *s3 = wfc_fma3(d, g, *s3);
}

/* The spring force on vertex i over its CSR springs, in the order above. */
WF_HD static inline wfc_v3 wfc_csr_force(const wfc_params *p, const wfc_spring_args *a, uint32_t i,
                                         wfc_v3 x, wfc_v3 v) {
  wfc_v3 s[4];
  for (int q = 0; q < 4; q++)
    s[q] = wfc_v(0.0f, 0.0f, 0.0f);
  uint32_t b = a->adj_start[i], e = a->adj_start[i + 1];
  for (uint32_t k = b; k < e; k += 4)
    for (uint32_t q = 0; q < 4; q++)
      if (k + q < e) {
        wfc_link l = a->adj[k + q];
        wfc_link_force(p, a->pos_in, a->vel_in, x, v, l.other_kind & WFC_LINK_INDEX_MASK,
                       l.other_kind >> 30, l.rest, &s[q]);
      }
  return wfc_tree4(s[0], s[1], s[2], s[3]);
}

/* Springs a grid vertex has at most: stretch to 4 neighbours, shear to 4 diagonals, bend to 4
 * vertices two apart. */
#define WFC_GRID_LINKS 12

/* The rest lengths of the springs of vertex i = row * nu + col of a grid cloth, from the table r
 * of the springs each vertex starts (cloth_fast.h), in the order wfc_grid_gather12 visits them;
 * 0 for springs the vertex does not have. */
WF_HD static inline void wfc_grid_rest12(const float *r, uint32_t nu, uint32_t nr, uint32_t i,
                                         float rl[WFC_GRID_LINKS]) {
  uint32_t col = i % nu, row = i / nu;
  for (int k = 0; k < WFC_GRID_LINKS; k++)
    rl[k] = 0.0f;
  if (row >= 2) rl[0] = r[(i - 2 * nu) * 6 + 5];
  if (row >= 1 && col >= 1) rl[1] = r[(i - nu - 1) * 6 + 2];
  if (row >= 1) {
    rl[2] = r[(i - nu) * 6 + 1];
    if (col + 1 < nu) rl[3] = r[(i - nu) * 6 + 3];
  }
  if (col >= 2) rl[4] = r[(i - 2) * 6 + 4];
  if (col >= 1) {
    rl[5] = r[(i - 1) * 6 + 0];
    if (row + 1 < nr) rl[6] = r[(i - 1) * 6 + 3];
  }
  rl[7] = r[i * 6 + 0];
  rl[8] = r[i * 6 + 1];
  rl[9] = r[i * 6 + 2];
  rl[10] = r[i * 6 + 4];
  rl[11] = r[i * 6 + 5];
}

/* One slot of wfc_grid_gather12: if the spring exists, it is at list position *pos. */
WF_HD static inline void wfc_grid_slot(const wfc_params *p, const wfp_f4 *P, const wfp_f4 *V,
                                       int exists, uint32_t j, uint32_t kind, float rest, wfc_v3 x,
                                       wfc_v3 v, uint32_t *pos, wfc_v3 *s) {
  if (!exists) return;
  wfc_v3 d;
  float g =
      wfc_link_scale(wfc_spring_stiffness(p, kind), p->spring_c, rest, x, v, P[j], V[j], 1, &d);
  wfc_acc4(&s[0], &s[1], &s[2], &s[3], *pos & 3u, d, g);
  (*pos)++;
}

/* The spring force on vertex i = row * nu + col of a grid cloth (position x, velocity v), from
 * its rest lengths rl (wfc_grid_rest12) and the neighbours' positions P and velocities V, in *fo.
 * The slots are visited in the order of the vertex's CSR list (springs started by earlier
 * vertices, then by this one: the order cloth_mesh.c lists them), a missing spring takes no list
 * position, and the sum has the shape above, so it equals wfc_csr_force bitwise. */
WF_HD static inline void wfc_grid_gather12(const wfc_params *p, const wfp_f4 *P, const wfp_f4 *V,
                                           uint32_t nu, uint32_t nr, uint32_t i, wfc_v3 x, wfc_v3 v,
                                           const float rl[WFC_GRID_LINKS], wfc_v3 *fo) {
  uint32_t col = i % nu, row = i / nu, q = 0;
  wfc_v3 s[4];
  for (int k = 0; k < 4; k++)
    s[k] = wfc_v(0.0f, 0.0f, 0.0f);
  const uint32_t S = WFC_STRETCH, H = WFC_SHEAR, B = WFC_BEND;
  int up1 = row >= 1, up2 = row >= 2, lf1 = col >= 1, lf2 = col >= 2;
  int dn1 = row + 1 < nr, dn2 = row + 2 < nr, rt1 = col + 1 < nu, rt2 = col + 2 < nu;
  wfc_grid_slot(p, P, V, up2, i - 2 * nu, B, rl[0], x, v, &q, s);
  wfc_grid_slot(p, P, V, up1 && lf1, i - nu - 1, H, rl[1], x, v, &q, s);
  wfc_grid_slot(p, P, V, up1, i - nu, S, rl[2], x, v, &q, s);
  wfc_grid_slot(p, P, V, up1 && rt1, i - nu + 1, H, rl[3], x, v, &q, s);
  wfc_grid_slot(p, P, V, lf2, i - 2, B, rl[4], x, v, &q, s);
  wfc_grid_slot(p, P, V, lf1, i - 1, S, rl[5], x, v, &q, s);
  wfc_grid_slot(p, P, V, lf1 && dn1, i + nu - 1, H, rl[6], x, v, &q, s);
  wfc_grid_slot(p, P, V, rt1, i + 1, S, rl[7], x, v, &q, s);
  wfc_grid_slot(p, P, V, dn1, i + nu, S, rl[8], x, v, &q, s);
  wfc_grid_slot(p, P, V, rt1 && dn1, i + nu + 1, H, rl[9], x, v, &q, s);
  wfc_grid_slot(p, P, V, rt2, i + 2, B, rl[10], x, v, &q, s);
  wfc_grid_slot(p, P, V, dn2, i + 2 * nu, B, rl[11], x, v, &q, s);
  *fo = wfc_tree4(s[0], s[1], s[2], s[3]);
}

/* The same from the rest table r (cloth_fast.h). */
WF_HD static inline void wfc_grid_gather(const wfc_spring_args *a, const float *r, uint32_t nu,
                                         uint32_t nr, uint32_t i, wfc_v3 x, wfc_v3 v, wfc_v3 *fo) {
  float rl[WFC_GRID_LINKS];
  wfc_grid_rest12(r, nu, nr, i, rl);
  wfc_grid_gather12(a->params, a->pos_in, a->vel_in, nu, nr, i, x, v, rl, fo);
}

/* A lane's spring: the neighbour's offset j - i and the spring's kind (WFC_STRETCH, WFC_SHEAR,
 * WFC_BEND) in one word, offset * 4 + kind, so that a lane keeps two registers a spring (this and
 * the rest length) and picks the stiffness by kind from the parameters. */
WF_HD static inline int32_t wfc_lane_pack(int32_t offset, uint32_t kind) {
  return offset * 4 + (int32_t)kind;
}
WF_HD static inline int32_t wfc_lane_offset(int32_t dk) { return (dk - (dk & 3)) / 4; }

/* Vertex lanes (the resident grid frame, cloth_fast.h): a vertex spread over L = 1, 2 or 4
 * threads. Lane l takes the springs at list positions l, l + L, l + 2L, ... (j = 0, 1, ...:
 * position l + L j), at most WFC_GRID_LINKS / L of them, and adds the one of index j into its
 * partial sum acc[j % (4 / L)]: that is s_{(l + L j) % 4} of the order above, since
 * (l + L j) % 4 = l + L (j % (4 / L)). wfc_lane_springs reads lane l's springs from the CSR list
 * (once a frame): neighbour offsets and kinds (wfc_lane_pack), rest lengths; returns how many
 * exist. wfc_lane_gather adds their forces, reading the neighbours at P[li + d], V[li + d] (li:
 * the vertex's index in P, V: i, or i minus the first staged vertex). The list must have at most
 * WFC_GRID_LINKS springs (grid cloths). */
WF_HD static inline uint32_t wfc_lane_springs(const wfc_spring_args *a, uint32_t i, uint32_t lane,
                                              uint32_t lanes, int32_t *dk, float *rest) {
  uint32_t b = a->adj_start[i], cnt = a->adj_start[i + 1] - b, nl = 0;
  for (uint32_t j = 0; j < WFC_GRID_LINKS / lanes; j++) {
    uint32_t pos = lane + lanes * j;
    dk[j] = 0, rest[j] = 0.0f;
    if (pos < cnt && pos < WFC_GRID_LINKS) {
      wfc_link l = a->adj[b + pos];
      dk[j] =
          wfc_lane_pack((int32_t)((l.other_kind & WFC_LINK_INDEX_MASK) - i), l.other_kind >> 30);
      rest[j] = l.rest;
      nl = j + 1;
    }
  }
  return nl;
}

WF_HD static inline void wfc_lane_gather(const wfc_params *p, const wfp_f4 *P, const wfp_f4 *V,
                                         uint32_t li, wfc_v3 x, wfc_v3 v, uint32_t lanes,
                                         uint32_t nl, const int32_t *dk, const float *rest,
                                         wfc_v3 *acc) {
  const uint32_t np = 4 / lanes;
  for (uint32_t j = 0; j < WFC_GRID_LINKS / lanes; j++) {
    wfc_v3 d;
    uint32_t kind = (uint32_t)dk[j] & 3u;
    uint32_t jj = (uint32_t)((int32_t)li + wfc_lane_offset(dk[j])); /* li itself if j >= nl */
    float g = wfc_link_scale(wfc_spring_stiffness(p, kind), p->spring_c, rest[j], x, v, P[jj],
                             V[jj], j < nl, &d);
    acc[j % np] = wfc_fma3(d, g, acc[j % np]);
  }
}

/* The end of a mass-spring substep of vertex i, given its spring force f (in the order above):
 * aerodynamics, semi-implicit Euler, the colliders at the end time. Own state in *x4, *v4 (in and
 * out), the clock's time at the start of the substep; returns the flags. */
WF_HD static inline uint32_t wfc_spring_finish(const wfc_params *p, const wfp_collider *colliders,
                                               const wfc_spring_args *a, uint32_t i, double time,
                                               wfc_v3 f, wfp_f4 *x4, wfp_f4 *v4, wfx_forces *F) {
  wfc_v3 x = wfc_xyz(*x4), v = wfc_xyz(*v4);
  float w = x4->w, dt = p->dt;
  float t_end = (float)(time + (double)dt);
  if (w > 0.0f) {
    if (p->aero) f = wfc_add(f, wfc_aero(p, &a->mesh, a->pos_in, a->vel_in, i));
    f = wfc_drag_add(p, i, x, v, w, f);
    wfc_v3 acc = wfc_add(wfc_xyz(p->gravity), wfc_scale(f, w));
    v = wfc_scale(wfc_add(v, wfc_scale(acc, dt)), p->damp);
    x = wfc_add(x, wfc_scale(v, dt));
    wfc_collide(p, colliders, t_end, &x, &v, w, WFX_NO_CACHE, F);
  } else {
    x = wfc_add(x, wfc_scale(v, dt)); /* pinned: moves with its (attachment's) velocity */
  }
  wfp_f4 xo = {x.x, x.y, x.z, w}, vo = {v.x, v.y, v.z, 0.0f};
  *x4 = xo;
  *v4 = vo;
  return wfc_finite3(x) && wfc_finite3(v) ? 0u : WFC_FLAG_NONFINITE;
}

/* One mass-spring substep of vertex i from its own state, passed in: position + inverse mass
 * *x4, velocity *v4, the clock's time at the start of the substep, the parameters p, and (grid
 * cloths) its rest lengths rl (wfc_grid_rest12; NULL: the CSR springs of a). Only the
 * neighbours' state is read from memory (a's input half). Gathers the spring forces (CSR or grid,
 * the same order and sum) and finishes (wfc_spring_finish). The one-launch frame keeps these
 * inputs in registers across substeps; the per-substep kernel loads them from memory. */
WF_HD static inline uint32_t wfc_spring_vertex(const wfc_params *p, const wfp_collider *colliders,
                                               const wfc_spring_args *a, const float *rl,
                                               uint32_t nu, uint32_t nr, uint32_t i, double time,
                                               wfp_f4 *x4, wfp_f4 *v4, wfx_forces *F) {
  wfc_v3 x = wfc_xyz(*x4), v = wfc_xyz(*v4);
  wfc_v3 f = wfc_v(0.0f, 0.0f, 0.0f);
  if (x4->w > 0.0f) {
    if (rl)
      wfc_grid_gather12(p, a->pos_in, a->vel_in, nu, nr, i, x, v, rl, &f);
    else
      f = wfc_csr_force(p, a, i, x, v);
  }
  return wfc_spring_finish(p, colliders, a, i, time, f, x4, v4, F);
}

/* One mass-spring substep of vertex i: its state and the clock from a's input half, the spring
 * forces over the CSR springs, or a grid's (grid_rest: the rest table); writes the output half.
 * Returns flags. */
WF_HD static inline uint32_t wfc_spring_elem_on(const wfc_spring_args *a, const float *grid_rest,
                                                uint32_t nu, uint32_t nr, uint32_t i,
                                                wfx_forces *F) {
  wfp_f4 x4 = a->pos_in[i], v4 = a->vel_in[i];
  double time = a->clock_in->time;
  if (i == 0) {
    wfc_clock c = *a->clock_in;
    c.time += (double)a->params->dt;
    c.substeps++;
    *a->clock_out = c;
  }
  float rl[WFC_GRID_LINKS];
  if (grid_rest) wfc_grid_rest12(grid_rest, nu, nr, i, rl);
  uint32_t fl = wfc_spring_vertex(a->params, a->colliders, a, grid_rest ? rl : NULL, nu, nr, i,
                                  time, &x4, &v4, F);
  a->pos_out[i] = x4;
  a->vel_out[i] = v4;
  return fl;
}

/* One mass-spring substep of vertex i over its CSR springs. */
WF_HD static inline uint32_t wfc_spring_elem(const wfc_spring_args *a, uint32_t i, wfx_forces *F) {
  return wfc_spring_elem_on(a, NULL, 0, 0, i, F);
}

/* XPBD in steps. The substep solves for each vertex's step s = pred - x from its position x at
 * the start of the substep, not for the predicted position itself: x stays fixed while the
 * constraints iterate, every constraint reads its vertices' relative position as
 * (x_a - x_b) + (s_a - s_b), and every projection adds its correction to s. A correction is then
 * rounded to the float spacing of s (~dt |v|, 1e-5 m at 64 substeps) and a relative position to
 * that of an edge, where a predicted position held whole is rounded to the spacing of x (6e-8 m
 * at |x| ~ 1 m) at every projection. The velocity rebuilt from the corrections divides that
 * rounding by dt, and Gauss–Seidel, which hardly damps a long chain's slow modes, lets it
 * accumulate over the iterations: with whole positions, a 16-link chain at compliance 0 gained
 * 13% of its swing energy in 12 s at 64 substeps x 32 iterations, 375% at 256 x 16, its period
 * off by -13% (test_cloth_xpbd_chain); a double-precision replay of the old algorithm is exact
 * (+0.13% from Bernoulli's period, energy only lost) at every count, so it was the rounding, not
 * the method. Exact arithmetic gives the same states either way. */

/* XPBD prediction of vertex i: v' = v + dt (g + (F_aero + F_drag) w), step dt v' (pinned: dt v).
 * The drag (wfc_drag_add) is a force here, not a compliant constraint: the prediction is the one
 * per-vertex stage every XPBD path runs on owned vertices only (per substep, the one-launch
 * frames, a partition's overlap ranges), so one line covers them all, and a partition that does
 * not own the vertex never sees it; a constraint would need a place in the colour schedule (and
 * its halo refresh over several devices, and the one-launch frame's bands) and a multiplier, for
 * a stiffness a mouse spring does not need exactly. Capped as in wfc_drag_add, it is stable. */
WF_HD static inline void wfc_predict_elem(const wfc_predict_args *a, uint32_t i) {
  const wfc_params *p = a->params;
  wfp_f4 x4 = a->pos[i], v4 = a->vel[i];
  wfc_v3 v = wfc_xyz(v4);
  if (i == 0) {
    wfc_clock c = *a->clock_in;
    c.time += (double)p->dt;
    c.substeps++;
    *a->clock_out = c;
  }
  if (x4.w > 0.0f) {
    wfc_v3 acc = wfc_xyz(p->gravity);
    if (p->aero) acc = wfc_add(acc, wfc_scale(wfc_aero(p, &a->mesh, a->pos, a->vel, i), x4.w));
    if (p->drag_on && i == p->drag_vertex) /* the other vertices: not even a +0 added */
      acc = wfc_add(
          acc, wfc_scale(wfc_drag_add(p, i, wfc_xyz(x4), v, x4.w, wfc_v(0.0f, 0.0f, 0.0f)), x4.w));
    v = wfc_add(v, wfc_scale(acc, p->dt));
  }
  wfc_v3 s = wfc_scale(v, p->dt);
  wfp_f4 o = {s.x, s.y, s.z, x4.w}, vo = {v.x, v.y, v.z, 0.0f};
  a->pred[i] = o;
  a->vpred[i] = vo;
}

/* Position of vertex b relative to vertex a at the current iterate: (x_b - x_a) + (s_b - s_a). */
WF_HD static inline wfc_v3 wfc_rel(wfp_f4 xa, wfp_f4 sa, wfp_f4 xb, wfp_f4 sb) {
  return wfc_add(wfc_sub(wfc_xyz(xb), wfc_xyz(xa)), wfc_sub(wfc_xyz(sb), wfc_xyz(sa)));
}

/* One XPBD constraint projection (Macklin et al. 2016, eq. 18 with their damping term, eq. 26):
 *     Δλ = (-C - α̃λ - γ ∇C·(pred - x)) / ((1 + γ) Σ w |∇C|² + α̃),   Δx_k = w_k ∇C_k Δλ
 * on the steps s = pred - x (see above); ∇C is evaluated at the current iterate. Constraint c with
 * multiplier lambda; returns the new multiplier (lambda itself where c is degenerate). */
WF_HD static inline float wfc_solve_con(const wfc_solve_args *a, wfc_constraint c, float lambda) {
  const wfc_params *p = a->params;
  float alpha = p->alpha[c.kind], gamma = p->gamma[c.kind];
  if (c.kind != WFC_BEND) {
    wfp_f4 s0 = a->pred[c.v[0]], s1 = a->pred[c.v[1]];
    float wsum = s0.w + s1.w;
    if (!(wsum > 0.0f)) return lambda;
    wfc_v3 d = wfc_rel(a->pos[c.v[1]], s1, a->pos[c.v[0]], s0); /* x0 - x1 */
    float len = wfc_len(d);
    if (!(len > 0.0f)) return lambda;
    wfc_v3 n = wfc_scale(d, 1.0f / len);
    float C = len - c.rest;
    float damp = gamma * wfc_dot(n, wfc_sub(wfc_xyz(s0), wfc_xyz(s1)));
    float dl = (-C - alpha * lambda - damp) / ((1.0f + gamma) * wsum + alpha);
    wfc_v3 q0 = wfc_add(wfc_xyz(s0), wfc_scale(n, s0.w * dl));
    wfc_v3 q1 = wfc_sub(wfc_xyz(s1), wfc_scale(n, s1.w * dl));
    wfp_f4 o0 = {q0.x, q0.y, q0.z, s0.w}, o1 = {q1.x, q1.y, q1.z, s1.w};
    a->pred[c.v[0]] = o0;
    a->pred[c.v[1]] = o1;
    return lambda + dl;
  }
  /* the hinge relative to its edge's first vertex v[2] (the angle and its gradient do not
   * depend on where the origin is) */
  wfp_f4 q[4], x[4];
  float wsum = 0.0f;
  for (int k = 0; k < 4; k++)
    q[k] = a->pred[c.v[k]], x[k] = a->pos[c.v[k]], wsum += q[k].w;
  if (!(wsum > 0.0f)) return lambda;
  wfc_v3 r[4];
  for (int k = 0; k < 4; k++)
    r[k] = k == 2 ? wfc_v(0.0f, 0.0f, 0.0f) : wfc_rel(x[2], q[2], x[k], q[k]);
  float theta;
  wfc_v3 g[4];
  if (!wfc_dihedral(r[0], r[1], r[2], r[3], &theta, g)) return lambda;
  float C = theta - c.rest;
  if (C > 3.14159274f) C -= 6.28318548f;
  if (C < -3.14159274f) C += 6.28318548f;
  float denom = 0.0f, gdx = 0.0f;
  for (int k = 0; k < 4; k++) {
    denom += q[k].w * wfc_dot(g[k], g[k]);
    gdx += wfc_dot(g[k], wfc_xyz(q[k]));
  }
  if (!(denom + alpha > 0.0f)) return lambda;
  float dl = (-C - alpha * lambda - gamma * gdx) / ((1.0f + gamma) * denom + alpha);
  for (int k = 0; k < 4; k++) {
    wfc_v3 u = wfc_add(wfc_xyz(q[k]), wfc_scale(g[k], q[k].w * dl));
    wfp_f4 o = {u.x, u.y, u.z, q[k].w};
    a->pred[c.v[k]] = o;
  }
  return lambda + dl;
}

/* The projection of the colour's constraint s; its multiplier is written back whether it moved
 * or not (a projection skipped for a degenerate constraint writes the value it read). */
WF_HD static inline void wfc_solve_elem(const wfc_solve_args *a, uint32_t s) {
  const float lambda = wfc_solve_con(a, a->cons[s], a->lambda ? a->lambda[s] : 0.0f);
  if (a->lambda) a->lambda[s] = lambda;
}

/* XPBD end of substep for vertex i: the new position x + s, colliders, the new velocity, damping.
 *
 * The velocity is the predicted one plus the corrections over dt: v = vpred + (s - s0) / dt, with
 * s0 = dt vpred recomputed bit for bit as the predict kernel computed it. In exact arithmetic
 * that is s / dt = (x_new - x) / dt, but a vertex no constraint moves keeps vpred exactly, and the
 * position's own rounding (x + s to the spacing of x) stays out of the velocity: rebuilt from
 * rounded positions, the velocity would carry ~ulp(x) / dt per substep, which does not average
 * out in free fall (the increments are nearly equal, so is their rounding) — the sheet fell 1.5%
 * too far in 1 s at 64 substeps. Pinned vertices move by their step dt v, velocity unchanged. */
WF_HD static inline uint32_t wfc_finalize_elem(const wfc_finalize_args *a, uint32_t i,
                                               wfx_forces *F) {
  const wfc_params *p = a->params;
  wfp_f4 x4 = a->pos[i], s4 = a->pred[i];
  wfc_v3 q = wfc_add(wfc_xyz(x4), wfc_xyz(s4)), v;
  if (i == 0) *a->clock_out = *a->clock_in;
  if (x4.w > 0.0f) {
    wfc_v3 vp = wfc_xyz(a->vpred[i]);
    wfc_v3 s0 = wfc_scale(vp, p->dt);
    v = wfc_add(vp, wfc_scale(wfc_sub(wfc_xyz(s4), s0), p->inv_dt));
    wfc_collide(p, a->colliders, (float)a->clock_in->time, &q, &v, x4.w, i, F);
    v = wfc_scale(v, p->damp);
  } else {
    v = wfc_xyz(a->vel[i]);
  }
  wfp_f4 xo = {q.x, q.y, q.z, x4.w}, vo = {v.x, v.y, v.z, 0.0f};
  a->pos[i] = xo;
  a->vel[i] = vo;
  return wfc_finite3(q) && wfc_finite3(v) ? 0u : WFC_FLAG_NONFINITE;
}

/* ---- self-collision and coupling --------------------------------------------------------------
 */

WF_HD static inline void wfc_q_elem(const wfc_q_args *a, uint32_t i) {
  const wfc_params *p = a->params;
  wfp_f4 x4 = a->pos[i];
  if (a->step) { /* XPBD */
    wfc_v3 x = wfc_add(wfc_xyz(x4), wfc_xyz(a->step[i]));
    wfp_f4 o = {x.x, x.y, x.z, x4.w};
    a->q[i] = o;
    return;
  }
  wfc_v3 v = wfc_xyz(a->vel[i]);
  if (x4.w > 0.0f) v = wfc_add(v, wfc_scale(wfc_xyz(p->gravity), p->dt));
  wfc_v3 x = wfc_add(wfc_xyz(x4), wfc_scale(v, p->dt));
  wfp_f4 o = {x.x, x.y, x.z, x4.w};
  a->q[i] = o;
}

WF_HD static inline void wfc_keys_elem(const wfc_keys_args *a, uint32_t i) {
  a->keys[i] = wfc_grid_key(&a->params->grid, a->q[i]);
  a->vals[i] = i;
}

/* Vertex–vertex repulsion of i (point qi, rest ri) from j: when |qi - qj| < D = self_dist, the
 * pair is pushed apart to D, shared by inverse mass (a position constraint, Jacobi: each vertex
 * takes its share and the shares sum over its contacts). k is computed from symmetric inputs
 * (d², w_i + w_j commute), so j's share is exactly opposite in direction and equal in k: the
 * pair's momentum change is zero up to the rounding of m w. Pairs closer than 2 D at rest are
 * neighbours of the mesh (edges, diagonals, the next ring for a thick cloth): they never repel,
 * or the cloth would push itself flat. */
WF_HD static inline void wfc_self_pair(const wfc_params *p, wfp_f4 qi, wfp_f4 ri, wfp_f4 qj,
                                       wfp_f4 rj, wfc_v3 *dq) {
  float D = p->self_dist;
  wfc_v3 e = wfc_sub(wfc_xyz(qi), wfc_xyz(qj));
  float d2 = wfc_dot(e, e);
  if (!(d2 < D * D) || d2 == 0.0f) return;
  wfc_v3 r = wfc_sub(wfc_xyz(ri), wfc_xyz(rj));
  if (wfc_dot(r, r) < 4.0f * D * D) return;
  float wsum = qi.w + qj.w;
  if (!(wsum > 0.0f)) return;
  float d = sqrtf(d2);
  float k = (D - d) / (wsum * d);
  *dq = wfc_add(*dq, wfc_scale(e, qi.w * k));
}

WF_HD static inline void wfc_self_elem(const wfc_self_args *a, uint32_t i) {
  const wfc_params *p = a->params;
  const wfc_cgrid *g = &a->grid;
  wfp_f4 qi = g->q[i], ri = a->rest[i];
  wfc_v3 dq = wfc_v(0.0f, 0.0f, 0.0f);
#define WFC_SELF_VISIT(t)                                                                          \
  {                                                                                                \
    uint32_t j_ = g->vals[t];                                                                      \
    if (j_ != i) wfc_self_pair(p, qi, ri, g->q[j_], a->rest[j_], &dq);                             \
  }
  WFC_CGRID_FOR_NEAR(g, qi.x, qi.y, qi.z, WFC_SELF_VISIT)
#undef WFC_SELF_VISIT
  wfp_f4 o = {dq.x, dq.y, dq.z, 0.0f};
  a->delta[i] = o;
}

/* Contact of cloth point q (xyz + inverse mass) with the particle of sorted state (sx, sv): the
 * point is kept `thickness` from the particle's surface at the end of the substep, where the
 * particle is predicted to be (pp). Returns 1 with e = q - pp and the shared factor k: the
 * point moves by e q.w k, the particle by -e sv.w k (XPBD position constraint, split by inverse
 * mass; both sides evaluate this function on the same bits, so they see the same pairs and the
 * same k, and the momentum exchanged is equal and opposite up to the rounding of m w).
 * A pair also needs the particle's start position within the particle grid's reach of q, so
 * that the cloth's walk over the particle grid finds every pair the particles' walk over the
 * cloth grid finds. */
WF_HD static inline int wfc_couple_pair(const wfc_params *p, const wfc_pgrid *g, wfp_f4 q,
                                        wfp_f4 sx, wfp_f4 sv, wfc_v3 *e, float *k) {
  if (sv.w < 0.0f) return 0; /* not born yet (wf_particles_add_timed): touches nothing */
  float reach = wfc_pgrid_reach(g);
  wfc_v3 sh = wfc_xyz(p->particle_shift); /* the particle's frame -> the cloth's */
  wfc_v3 a0 = wfc_sub(wfc_xyz(q), wfc_add(wfc_xyz(sx), sh));
  if (!(wfc_dot(a0, a0) < reach * reach)) return 0;
  wfp_f4 pp = wfc_pgrid_predict(g, sx, sv); /* in the particle's own frame */
  *e = wfc_sub(wfc_xyz(q), wfc_add(wfc_xyz(pp), sh));
  float d2 = wfc_dot(*e, *e), R = sx.w + p->thickness;
  if (!(d2 < R * R) || d2 == 0.0f) return 0;
  float wsum = q.w + sv.w;
  if (!(wsum > 0.0f)) return 0;
  float d = sqrtf(d2);
  *k = (R - d) / (wsum * d);
  return 1;
}

WF_HD static inline void wfc_couple_cloth_elem(const wfc_couple_cloth_args *a, uint32_t i) {
  const wfc_params *p = a->params;
  const wfc_pgrid *g = &a->pgrid;
  wfp_f4 q = a->q[i];
  wfc_v3 qp = wfc_sub(wfc_xyz(q), wfc_xyz(p->particle_shift)); /* q in the particles' frame */
  wfc_v3 dq = wfc_v(0.0f, 0.0f, 0.0f);
  if (a->accumulate) dq = wfc_xyz(a->delta[i]);
#define WFC_CC_VISIT(t)                                                                            \
  {                                                                                                \
    wfc_v3 pe_;                                                                                    \
    float pk_;                                                                                     \
    if (wfc_couple_pair(p, g, q, g->spos[t], g->svel[t], &pe_, &pk_))                              \
      dq = wfc_add(dq, wfc_scale(pe_, q.w * pk_));                                                 \
  }
  WFC_PGRID_FOR_NEAR(g, qp.x, qp.y, qp.z, WFC_CC_VISIT)
#undef WFC_CC_VISIT
  wfp_f4 o = {dq.x, dq.y, dq.z, 0.0f};
  a->delta[i] = o;
}

/* The particle at sorted slot t gathers its contacts with the cloth (in the cloth grid's order)
 * and adds -(sum of its displacements) / dt to its velocity, which the particle's own substep
 * then integrates: the end position moves by the displacement (times the velocity damping). */
WF_HD static inline void wfc_couple_particle_elem(const wfc_couple_particle_args *a, uint32_t t) {
  const wfc_params *p = a->params;
  const wfc_pgrid *g = &a->pgrid;
  const wfc_cgrid *cg = &a->grid;
  wfp_f4 sx = g->spos[t], sv = g->svel[t];
  if (!(sv.w > 0.0f)) return; /* kinematic: the cloth takes the whole correction */
  wfp_f4 pp = wfc_pgrid_predict(g, sx, sv);
  wfc_v3 pc = wfc_add(wfc_xyz(pp), wfc_xyz(p->particle_shift)); /* in the cloth's frame */
  wfc_v3 dx = wfc_v(0.0f, 0.0f, 0.0f);
#define WFC_CP_VISIT(u)                                                                            \
  {                                                                                                \
    wfc_v3 pe_;                                                                                    \
    float pk_;                                                                                     \
    if (wfc_couple_pair(p, g, cg->q[cg->vals[u]], sx, sv, &pe_, &pk_))                             \
      dx = wfc_add(dx, wfc_scale(pe_, sv.w * pk_));                                                \
  }
  WFC_CGRID_FOR_NEAR(cg, pc.x, pc.y, pc.z, WFC_CP_VISIT)
#undef WFC_CP_VISIT
  float dt = wfc_pgrid_dt(g);
  sv.x -= dx.x / dt, sv.y -= dx.y / dt, sv.z -= dx.z / dt;
  g->svel[t] = sv;
}

WF_HD static inline void wfc_apply_elem(const wfc_apply_args *a, uint32_t i) {
  wfp_f4 d = a->delta[i];
  if (a->pred) {
    wfp_f4 q = a->pred[i];
    q.x += d.x, q.y += d.y, q.z += d.z;
    a->pred[i] = q;
  } else {
    float dt = a->params->dt;
    wfp_f4 v = a->vel[i];
    v.x += d.x / dt, v.y += d.y / dt, v.z += d.z / dt;
    a->vel[i] = v;
  }
}

/* ---- the split solver's halo -----------------------------------------------------------------
 */

WF_HD static inline void wfc_halo_pack_elem(const wfc_halo_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->dst0[j] = a->src0[i];
  if (a->src1) a->dst1[j] = a->src1[i];
}

/* Vertex i's position as 3 packed floats at dst + 3 i (WF_CLOTH_XYZ). */
WF_HD static inline void wfc_put_xyz(float *dst, uint32_t i, wfp_f4 x) {
  dst[3 * (size_t)i] = x.x;
  dst[3 * (size_t)i + 1] = x.y;
  dst[3 * (size_t)i + 2] = x.z;
}

WF_HD static inline void wfc_xyz_elem(const wfc_xyz_args *a, uint32_t i) {
  wfc_put_xyz(a->dst, i, a->src[i]);
}

WF_HD static inline void wfc_halo_unpack_elem(const wfc_halo_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->dst0[i] = a->src0[j];
  if (a->src1) a->dst1[i] = a->src1[j];
}

#endif
