/* Particle solver math, written once for both backends (DESIGN.md, "one math, two backends").
 *
 * This header holds the device-side data layout (the structs that live in device buffers), one
 * argument struct per kernel, and the per-element functions (WF_HD static inline) that the CPU
 * loops in particle_kernels.c and the __global__ kernels in particle_kernels.cu both call.
 *
 * Determinism: the functions use only +, -, *, /, sqrtf, floorf, fminf/fmaxf and integer
 * operations, all of which are correctly rounded (or exact) in IEEE single precision on both
 * compilers. With FMA contraction off (-ffp-contract=off for C, -fmad=false for nvcc) the CPU and
 * CUDA backends therefore compute bit-identical states. Each particle gathers its neighbours in a
 * fixed order and writes only itself: no floating-point atomics anywhere.
 */
#ifndef WEFT_PARTICLE_MATH_H
#define WEFT_PARTICLE_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/hd.h"

#ifdef __cplusplus
#define WFP_ALIGN16 alignas(16)
#else
#define WFP_ALIGN16 _Alignas(16)
#endif

/* Maximum sizes of the small device tables. */
#define WFP_MAX_MATERIALS 256 /* material index is stored as uint16 */
#define WFP_MAX_COLLIDERS 64

/* Device-side flags (wfp_status.flags), set by kernels with integer OR, read with the frame. */
#define WFP_FLAG_NONFINITE 1u /* a position or velocity became NaN/inf */
#define WFP_FLAG_CELL_RANGE                                                                        \
  2u /* a position is beyond the grid's integer cell range (|x/h| > 2^30) */

/* xyz + w: position (w = radius) or velocity (w = inverse mass; 0 = kinematic). */
typedef struct wfp_f4 {
  WFP_ALIGN16 float x;
  float y, z, w;
} wfp_f4;

/* Material, as the kernels see it (host values converted once: zeta from restitution). */
typedef struct wfp_material {
  float stiffness;  /* normal spring k, N/m */
  float damping;    /* absolute normal dashpot c, N·s/m */
  float zeta;       /* damping ratio from restitution: adds 2·zeta·sqrt(k·m_eff) to c */
  float friction;   /* Coulomb coefficient mu */
  float tangential; /* viscous tangential coefficient kt, N·s/m (regularizes Coulomb) */
  float cohesion;   /* attractive force per contact, N */
  float pad[2];
} wfp_material;

enum { WFP_PLANE = 0, WFP_SPHERE = 1, WFP_BOX = 2, WFP_CAPSULE = 3 };

/* Collider. Position at time t is the stored one plus vel·t (kinematic; vel 0 = static).
 *  plane:   a = unit normal (xyz), offset in a.w  (points x with dot(n, x) = a.w)
 *  sphere:  a = centre, a.w = radius
 *  box:     a = centre, b = half extents (axis aligned)
 *  capsule: a = end 0, b = end 1 - end 0 (axis), a.w = radius */
typedef struct wfp_collider {
  wfp_f4 a, b, vel;
  uint32_t type;
  float friction;
  float zeta; /* from restitution */
  float stiffness;
} wfp_collider;

/* The parameter block, read by every kernel from a device buffer so that changing it needs no
 * recapture. */
typedef struct wfp_params {
  wfp_f4 gravity;     /* xyz */
  float dt;           /* substep */
  float damp;         /* velocity factor per substep: 1 / (1 + damping·dt) */
  float cell;         /* grid cell size h (>= the largest particle diameter) */
  float inv_cell;     /* 1 / h */
  uint32_t hash_mask; /* table size - 1 (a power of two minus one) */
  uint32_t n_colliders;
  uint32_t pad[2];
} wfp_params;

/* Written by the kernels: simulated time and the overflow / error flags. */
typedef struct wfp_clock {
  double time;
  uint64_t substeps;
  uint32_t flags;
  uint32_t first_bad; /* smallest local index with a non-finite state, or UINT32_MAX */
} wfp_clock;

/* ---- kernel argument structs ------------------------------------------------------------------
 */

typedef struct wfp_keys_args { /* per particle i: key = cell hash of pos[i], val = i */
  const wfp_params *params;
  const wfp_f4 *pos;
  uint32_t *keys, *vals;
  wfp_clock *clock;
} wfp_keys_args;

typedef struct wfp_sort_args { /* one element: sorts (keys, vals) by key, stable; result in *_out */
  uint32_t *keys, *vals;       /* input; clobbered */
  uint32_t *keys_out, *vals_out; /* sorted */
  uint32_t n;
  int bits;   /* key bits [0, bits) */
  void *temp; /* CUDA: CUB temporary storage */
  size_t temp_bytes;
} wfp_sort_args;

typedef struct wfp_bounds_args { /* per slot s in [0, n]: fills cell_start for keys in (key[s-1],
                                    key[s]] */
  const uint32_t *keys;          /* sorted */
  uint32_t *cell_start;          /* hash_mask + 2 entries: start[h] .. start[h+1] is cell h */
  uint32_t n, table;             /* table = hash_mask + 1 */
} wfp_bounds_args;

typedef struct wfp_reorder_args { /* per slot s: sorted copies of particle vals[s] */
  const uint32_t *vals;
  const wfp_f4 *pos, *vel;
  const uint16_t *mat;
  wfp_f4 *spos, *svel;
  uint16_t *smat;
} wfp_reorder_args;

typedef struct wfp_collide_args { /* per slot s: forces, colliders, integration; writes vals[s] */
  const wfp_params *params;
  const wfp_material *mats;
  const wfp_collider *colliders;
  wfp_clock *clock;
  const wfp_f4 *spos, *svel;
  const uint16_t *smat;
  const uint32_t *keys, *vals, *cell_start;
  wfp_f4 *pos, *vel;
  uint32_t n;
} wfp_collide_args;

typedef struct wfp_advance_args { /* one element: time += dt, substeps++ */
  const wfp_params *params;
  wfp_clock *clock;
} wfp_advance_args;

/* ---- per-element math -------------------------------------------------------------------------
 */

WF_HD static inline int wfp_finite(float v) { return v == v && v - v == 0.0f; }

/* Integer cell coordinate of one axis, clamped to +-2^30 (range flag set by the caller). */
WF_HD static inline int32_t wfp_cell_coord(float x, float inv_cell, int *out_of_range) {
  float c = floorf(x * inv_cell);
  if (!(c > -1073741824.0f && c < 1073741824.0f)) { /* also catches NaN */
    *out_of_range = 1;
    return c > 0.0f ? 1073741823 : -1073741823;
  }
  return (int32_t)c;
}

/* Spatial hash of a cell (Teschner et al. 2003), masked to the table size. */
WF_HD static inline uint32_t wfp_hash(int32_t ix, int32_t iy, int32_t iz, uint32_t mask) {
  uint32_t h = ((uint32_t)ix * 73856093u) ^ ((uint32_t)iy * 19349663u) ^ ((uint32_t)iz * 83492791u);
  h ^= h >> 16; /* mix the high bits into the masked low bits */
  h *= 0x7feb352du;
  h ^= h >> 15;
  return h & mask;
}

/* Key of particle i; returns flags (WFP_FLAG_*). */
WF_HD static inline uint32_t wfp_key_elem(const wfp_params *p, wfp_f4 x, uint32_t *key) {
  int bad = 0;
  int32_t ix = wfp_cell_coord(x.x, p->inv_cell, &bad);
  int32_t iy = wfp_cell_coord(x.y, p->inv_cell, &bad);
  int32_t iz = wfp_cell_coord(x.z, p->inv_cell, &bad);
  *key = wfp_hash(ix, iy, iz, p->hash_mask);
  uint32_t flags = bad ? WFP_FLAG_CELL_RANGE : 0u;
  if (!(wfp_finite(x.x) && wfp_finite(x.y) && wfp_finite(x.z))) flags |= WFP_FLAG_NONFINITE;
  return flags;
}

/* Cell-start table entries written by slot s of n sorted keys: every h in (key[s-1], key[s]]
 * gets start s (with key[-1] = -1 and key[n] = table), so each entry is written exactly once. */
WF_HD static inline void wfp_bounds_elem(const wfp_bounds_args *a, uint32_t s) {
  uint32_t lo = s == 0 ? 0u : a->keys[s - 1] + 1u;
  uint32_t hi = s == a->n ? a->table : a->keys[s];
  for (uint32_t h = lo; h <= hi; h++)
    a->cell_start[h] = s;
}

WF_HD static inline float wfp_dot3(float ax, float ay, float az, float bx, float by, float bz) {
  return ax * bx + ay * by + az * bz;
}

/* Force on particle i from a contact along unit normal (nx,ny,nz) (pointing towards i) with
 * overlap delta and relative velocity vr = v_i - v_other. k, c: normal spring and dashpot; mu,
 * kt: Coulomb coefficient and tangential viscosity; coh: cohesion. Adds to f.
 *
 * The normal force k·delta - c·vn is not clamped at zero: near the end of a contact the dashpot
 * may pull a little, as in the textbook linear model, so the restitution is exactly
 * e = exp(-π ζ / sqrt(1 - ζ²)) (clamping would end contacts early and raise e by ~10% at e = 0.5).
 * The Coulomb cap uses the compressive part only.
 *
 * The expression is odd in (n, vr): swapping i and j negates it bit for bit, so pair forces
 * cancel exactly (IEEE rounding is sign-symmetric). */
WF_HD static inline void wfp_contact_force(float nx, float ny, float nz, float delta, float vrx,
                                           float vry, float vrz, float k, float c, float mu,
                                           float kt, float coh, float *f) {
  float vn = wfp_dot3(vrx, vry, vrz, nx, ny, nz);
  float fn = k * delta - c * vn;
  float fnet = fn - coh;
  f[0] += nx * fnet;
  f[1] += ny * fnet;
  f[2] += nz * fnet;
  float tx = vrx - nx * vn, ty = vry - ny * vn, tz = vrz - nz * vn;
  float vt = sqrtf(wfp_dot3(tx, ty, tz, tx, ty, tz));
  if (vt > 0.0f) {
    float ft = fminf(kt * vt, mu * fmaxf(fn, 0.0f)); /* viscous below the Coulomb cap */
    float s = ft / vt;
    f[0] -= tx * s;
    f[1] -= ty * s;
    f[2] -= tz * s;
  }
}

/* Pair force on particle i (pi, vi, material mi) from j. */
WF_HD static inline void wfp_pair(wfp_f4 pi, wfp_f4 vi, const wfp_material *mi, wfp_f4 pj,
                                  wfp_f4 vj, const wfp_material *mj, float *f) {
  float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
  float d2 = wfp_dot3(dx, dy, dz, dx, dy, dz);
  float R = pi.w + pj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return;
  float d = sqrtf(d2);
  float inv = 1.0f / d;
  float wsum = vi.w + vj.w;
  if (wsum == 0.0f) return; /* two kinematic particles */
  float k = 0.5f * (mi->stiffness + mj->stiffness);
  float zeta = 0.5f * (mi->zeta + mj->zeta);
  float c = 0.5f * (mi->damping + mj->damping) + 2.0f * zeta * sqrtf(k / wsum);
  wfp_contact_force(dx * inv, dy * inv, dz * inv, R - d, vi.x - vj.x, vi.y - vj.y, vi.z - vj.z, k,
                    c, 0.5f * (mi->friction + mj->friction),
                    0.5f * (mi->tangential + mj->tangential), 0.5f * (mi->cohesion + mj->cohesion),
                    f);
}

/* Signed distance from x to collider c at time t, with the outward unit normal. */
WF_HD static inline float wfp_collider_sdf(const wfp_collider *c, float t, float x, float y,
                                           float z, float *n) {
  float ox = c->vel.x * t, oy = c->vel.y * t, oz = c->vel.z * t; /* kinematic offset */
  float px = x - ox, py = y - oy, pz = z - oz;
  switch (c->type) {
  case WFP_PLANE:
    n[0] = c->a.x, n[1] = c->a.y, n[2] = c->a.z;
    return wfp_dot3(px, py, pz, c->a.x, c->a.y, c->a.z) - c->a.w;
  case WFP_BOX: {
    float lx = px - c->a.x, ly = py - c->a.y, lz = pz - c->a.z;
    float qx = fabsf(lx) - c->b.x, qy = fabsf(ly) - c->b.y, qz = fabsf(lz) - c->b.z;
    float sx = lx < 0.0f ? -1.0f : 1.0f, sy = ly < 0.0f ? -1.0f : 1.0f,
          sz = lz < 0.0f ? -1.0f : 1.0f;
    if (qx > 0.0f || qy > 0.0f || qz > 0.0f) {
      float ex = fmaxf(qx, 0.0f), ey = fmaxf(qy, 0.0f), ez = fmaxf(qz, 0.0f);
      float d = sqrtf(wfp_dot3(ex, ey, ez, ex, ey, ez));
      n[0] = sx * ex / d, n[1] = sy * ey / d, n[2] = sz * ez / d;
      return d;
    }
    /* inside: push out through the nearest face */
    n[0] = n[1] = n[2] = 0.0f;
    if (qx >= qy && qx >= qz) return n[0] = sx, qx;
    if (qy >= qz) return n[1] = sy, qy;
    return n[2] = sz, qz;
  }
  default: { /* sphere, capsule: distance to a point / segment minus the radius */
    float cx = c->a.x, cy = c->a.y, cz = c->a.z;
    if (c->type == WFP_CAPSULE) {
      float ab2 = wfp_dot3(c->b.x, c->b.y, c->b.z, c->b.x, c->b.y, c->b.z);
      float s =
          ab2 > 0.0f ? wfp_dot3(px - cx, py - cy, pz - cz, c->b.x, c->b.y, c->b.z) / ab2 : 0.0f;
      s = fminf(fmaxf(s, 0.0f), 1.0f);
      cx += c->b.x * s, cy += c->b.y * s, cz += c->b.z * s;
    }
    float dx = px - cx, dy = py - cy, dz = pz - cz;
    float d = sqrtf(wfp_dot3(dx, dy, dz, dx, dy, dz));
    if (d > 0.0f)
      n[0] = dx / d, n[1] = dy / d, n[2] = dz / d;
    else
      n[0] = 0.0f, n[1] = 1.0f, n[2] = 0.0f;
    return d - c->a.w;
  }
  }
}

/* Force on a particle (x, v, material m) from collider c at time t. */
WF_HD static inline void wfp_collider_force(const wfp_collider *c, float t, wfp_f4 x, wfp_f4 v,
                                            const wfp_material *m, float *f) {
  if (v.w == 0.0f) return; /* kinematic particles ignore colliders */
  float n[3];
  float phi = wfp_collider_sdf(c, t, x.x, x.y, x.z, n);
  float delta = x.w - phi;
  if (!(delta > 0.0f)) return;
  float k = c->stiffness > 0.0f ? c->stiffness : m->stiffness;
  float cd = 2.0f * c->zeta * sqrtf(k / v.w);
  wfp_contact_force(n[0], n[1], n[2], delta, v.x - c->vel.x, v.y - c->vel.y, v.z - c->vel.z, k, cd,
                    c->friction, m->tangential, 0.0f, f);
}

/* Semi-implicit Euler for one particle: v += dt (g + F w); v *= damp; x += dt v. Returns flags. */
WF_HD static inline uint32_t wfp_integrate(const wfp_params *p, const float *f, wfp_f4 *x,
                                           wfp_f4 *v) {
  if (v->w > 0.0f) {
    float dt = p->dt, w = v->w;
    v->x = (v->x + dt * (p->gravity.x + f[0] * w)) * p->damp;
    v->y = (v->y + dt * (p->gravity.y + f[1] * w)) * p->damp;
    v->z = (v->z + dt * (p->gravity.z + f[2] * w)) * p->damp;
  }
  x->x += p->dt * v->x;
  x->y += p->dt * v->y;
  x->z += p->dt * v->z;
  int ok = wfp_finite(x->x) && wfp_finite(x->y) && wfp_finite(x->z) && wfp_finite(v->x) &&
           wfp_finite(v->y) && wfp_finite(v->z);
  return ok ? 0u : WFP_FLAG_NONFINITE;
}

/* The 27 neighbour cell offsets in the fixed gather order (z slowest, x fastest). */
WF_HD static inline void wfp_neighbour_offset(int q, int *dx, int *dy, int *dz) {
  *dx = q % 3 - 1;
  *dy = (q / 3) % 3 - 1;
  *dz = q / 9 - 1;
}

/* Everything one particle (sorted slot s) does in a substep: gather pair forces over the 27
 * neighbour cells in fixed order (a hashed cell that two offsets share is visited once; within a
 * cell slots are in (key, local index) order, i.e. global-id order), add collider forces in
 * collider order, integrate, and write the particle back at its local index. Returns flags. */
WF_HD static inline uint32_t wfp_collide_elem(const wfp_collide_args *a, uint32_t s) {
  const wfp_params *p = a->params;
  wfp_f4 x = a->spos[s], v = a->svel[s];
  const wfp_material *m = &a->mats[a->smat[s]];
  float f[3] = {0.0f, 0.0f, 0.0f};
  int bad = 0;
  int32_t cx = wfp_cell_coord(x.x, p->inv_cell, &bad);
  int32_t cy = wfp_cell_coord(x.y, p->inv_cell, &bad);
  int32_t cz = wfp_cell_coord(x.z, p->inv_cell, &bad);
  uint32_t seen[27];
  int n_seen = 0;
  for (int q = 0; q < 27; q++) {
    int ox, oy, oz;
    wfp_neighbour_offset(q, &ox, &oy, &oz);
    uint32_t h = wfp_hash(cx + ox, cy + oy, cz + oz, p->hash_mask);
    int dup = 0;
    for (int i = 0; i < n_seen; i++)
      dup |= seen[i] == h;
    if (dup) continue;
    seen[n_seen++] = h;
    uint32_t end = a->cell_start[h + 1];
    for (uint32_t t = a->cell_start[h]; t < end; t++) {
      if (t == s) continue;
      wfp_pair(x, v, m, a->spos[t], a->svel[t], &a->mats[a->smat[t]], f);
    }
  }
  float time = (float)a->clock->time;
  for (uint32_t c = 0; c < p->n_colliders; c++)
    wfp_collider_force(&a->colliders[c], time, x, v, m, f);
  uint32_t flags = wfp_integrate(p, f, &x, &v);
  uint32_t i = a->vals[s];
  a->pos[i] = x;
  a->vel[i] = v;
  return flags;
}

#endif
