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

#include "solvers/collider/collider_math.h" /* wfp_f4, wfp_collider, wfp_collider_sdf */
#include "weft/hd.h"

/* Maximum sizes of the small device tables. */
#define WFP_MAX_MATERIALS 256 /* material index is stored as uint16 */
#define WFP_MAX_COLLIDERS 64

/* Device-side flags (wfp_clock.flags), set by kernels with integer OR, read with the frame. */
#define WFP_FLAG_NONFINITE 1u /* a position or velocity became NaN/inf */
#define WFP_FLAG_CELL_RANGE                                                                        \
  2u /* a position is beyond the grid's integer cell range (|x/h| > 2^30) */
/* Returned by the contact math only, never stored in the clock: the split's drift check
 * tripped for the particle (wfp_drift_flag); the kernel raises wfp_drift_ctl.flag. */
#define WFP_FLAG_DRIFT 0x80000000u

/* Contact models (wfp_params.model). */
enum { WFP_DEM = 0, WFP_XPBD = 1 };

/* Sentinel of an empty cell in the cell-start table. */
#define WFP_EMPTY 0xffffffffu

/* Full unrolling of a loop with a constant trip count on CUDA devices (registers for its arrays).
 */
#if defined(__CUDA_ARCH__)
#define WFP_UNROLL _Pragma("unroll")
#else
#define WFP_UNROLL
#endif

/* Material, as the kernels see it (host values converted once: zeta from restitution). */
typedef struct wfp_material {
  float stiffness;       /* normal spring k, N/m (XPBD: compliance 1/k) */
  float damping;         /* absolute normal dashpot c, N·s/m */
  float zeta;            /* damping ratio from restitution: adds 2·zeta·sqrt(k·m_eff) to c */
  float friction;        /* Coulomb coefficient mu (XPBD: dynamic) */
  float tangential;      /* viscous tangential coefficient kt, N·s/m (regularizes Coulomb) */
  float cohesion;        /* attractive force per contact, N */
  float static_friction; /* XPBD static coefficient mu_s */
  float pad;
} wfp_material;

/* Colliders (wfp_collider, its pose, signed distance and surface velocity): solvers/collider. */

/* The parameter block, read by every kernel from a device buffer so that changing it needs no
 * recapture.
 *
 * The grid: cell (ix, iy, iz) of size h has key  mod(ix, Dx) + Dx (mod(iy, Dy) + Dy mod(iz, Dz)):
 * a dense box of D cells per axis (at least 4), repeated periodically over space. Cells that are
 * neighbours in space are neighbours in key order (x fastest), so the sorted particles of the 3
 * cells of a row in x are one contiguous range, and the particles a block of threads reads are
 * close in memory. Cells a box apart share a key; that costs only distance tests (never a wrong
 * force), and the host refits the box to the particles' extent between frames. */
typedef struct wfp_params {
  wfp_f4 gravity;  /* xyz */
  float dt;        /* substep */
  float damp;      /* velocity factor per substep: 1 / (1 + damping·dt) */
  float cell;      /* grid cell size h (>= the largest particle diameter) */
  float inv_cell;  /* 1 / h */
  int32_t dims[3]; /* the box, cells per axis (product <= the cell table) */
  uint32_t count;  /* particles in use: the kernels' launches may cover more (see wfp_live) */
  uint32_t n_colliders;
  uint32_t model;   /* WFP_DEM or WFP_XPBD */
  float relaxation; /* XPBD: Jacobi averaging factor omega */
} wfp_params;

/* Written by the kernels: simulated time, the error flags, and the extent (in cells) of the
 * particles over the frame, which the host uses to refit the grid's box between frames. */
typedef struct wfp_clock {
  double time;
  uint64_t substeps;
  uint32_t flags;
  uint32_t first_bad; /* smallest local index with a non-finite state, or UINT32_MAX */
  int32_t lo[3], hi[3];
} wfp_clock;

/* How many of the n elements a launch covers are in use: a frame captured into a graph launches
 * its kernels over a size fixed at the capture (at least the count, with some slack) and reads
 * the count on the device (live: NULL means all n), so the graph stays valid while counts move
 * within the slack (the split solver's repartitions). */
WF_HD static inline size_t wfp_live(const uint32_t *live, size_t n) {
  return live && *live < n ? *live : n;
}

/* ---- kernel argument structs ------------------------------------------------------------------
 */

typedef struct wfp_keys_args { /* per particle i: key = cell key of pos[i]; extent; counting */
  const wfp_params *params;
  const wfp_f4 *pos;
  uint32_t *keys;
  uint32_t *vals;  /* with count: the particle's arrival in its cell (any order); else i */
  uint32_t *count; /* NULL, or particles per cell (zeroed before), by integer atomics */
  wfp_clock *clock;
  /* NULL, or: the particles i whose skip[i] is NaN get no key here (the split solver's ghosts,
   * keyed when they arrive: wfp_halo_keys_args) */
  const float *skip;
} wfp_keys_args;

typedef struct wfp_sort_args { /* one element: sorts (keys, vals) by key, stable; result in *_out */
  uint32_t *keys, *vals;       /* input; clobbered */
  uint32_t *keys_out, *vals_out; /* sorted */
  uint32_t n;
  int bits;   /* key bits [0, bits) */
  void *temp; /* CUDA: CUB temporary storage */
  size_t temp_bytes;
} wfp_sort_args;

typedef struct wfp_cells_args { /* per slot s: where a cell begins and ends in the sorted order */
  const uint32_t *keys;         /* sorted */
  uint32_t *cell_start;         /* one entry per key; WFP_EMPTY (set by a memset) for none */
  uint32_t *cell_end;           /* one past the cell's last slot; valid where cell_start is */
  uint32_t n;
} wfp_cells_args;

/* The counting sort of the particle solver's grid (particle.c): keys with counts per cell
 * (wfp_keys_args.count), an exclusive scan of the counts into the dense start table, a scatter
 * of each particle to its cell's range in arrival order, and the placement, which orders each
 * cell's particles by local index (the order of a stable sort by key) and writes the sorted
 * copies. Cells hold a few particles, so the placement's rank count is short. */
typedef struct wfp_scan_args { /* one element: out[k] = in[0] + ... + in[k - 1], k < n */
  const uint32_t *in;
  uint32_t *out;
  uint32_t n;
  void *temp; /* CUDA: CUB temporary storage */
  size_t temp_bytes;
} wfp_scan_args;

typedef struct wfp_scatter_args { /* per particle i: tmp[start[keys[i]] + arrival[i]] = i */
  const uint32_t *keys, *arrival, *start;
  uint32_t *tmp;
  const uint32_t *live; /* the particles in use (wfp_live) */
} wfp_scatter_args;

typedef struct wfp_place_args { /* per slot s: the particle tmp[s], ranked in its cell */
  const uint32_t *tmp, *keys, *start;
  uint32_t *vals; /* sorted slot -> local index */
  const wfp_f4 *pos, *vel;
  const uint16_t *mat;
  wfp_f4 *spos, *svel;
  uint16_t *smat;
  const uint32_t *live; /* the particles in use (wfp_live) */
} wfp_place_args;

/* The split solver's drift check, on the device: the flag a kernel sets when a particle moved
 * further than limit along the axis from its anchor (the repartition's coordinate; NaN for a
 * ghost: never). The limit and the axis live there too, so a captured frame follows the
 * repartitions. The contact kernels check every particle they integrate (wfp_drift_flag). */
typedef struct wfp_drift_ctl {
  uint32_t flag;
  float limit;
  int32_t axis;
  uint32_t pad;
} wfp_drift_ctl;

typedef struct wfp_collide_args { /* per slot s: contacts, colliders, integration; writes vals[s] */
  const wfp_params *params;
  const wfp_material *mats;
  const wfp_collider *colliders;
  wfp_clock *clock;
  const wfp_f4 *spos, *svel;
  const uint16_t *smat;
  const uint32_t *keys, *vals, *cell_start, *cell_end;
  wfp_f4 *pos, *vel;   /* slots s < params->count (wfp_live) */
  const float *anchor; /* NULL, or the split's drift check (wfp_drift_ctl): the anchors */
  wfp_drift_ctl *drift;
  /* the launch, not the kernel: blocks a multiprocessor the CUDA variant is compiled for (0: no
   * cap, 4 to 8; wf_particles_tuning.contact_min_blocks resolved) */
  int32_t min_blocks;
} wfp_collide_args;

/* The split solver's halo (split.c): pack, per element j, dst[j] = src[idx[j]]; unpack,
 * dst[idx[j]] = src[j]; positions and velocities alike. */
typedef struct wfp_halo_args {
  const uint32_t *idx;
  const wfp_f4 *src_pos, *src_vel;
  wfp_f4 *dst_pos, *dst_vel;
  const uint32_t *live; /* the ghosts in use (wfp_live) */
} wfp_halo_args;

/* The unpack, then each unpacked ghost's key and count as wfp_keys_args would give it (the keys
 * of the rest were taken with skip): the counting sort ranks each cell by local index, so the
 * two passes give the grid one pass would. */
typedef struct wfp_halo_keys_args {
  wfp_halo_args unpack;
  wfp_keys_args keys;
} wfp_halo_keys_args;

/* The split solver's repartition on the devices (split.c). Slabs along `axis`: partition p owns
 * [cuts[p-1], cuts[p]) (unbounded at the ends) and holds as ghosts the particles within w of its
 * slab. A particle's partitions are a contiguous range: its owner and the neighbours within w. */
#define WFP_SPLIT_MAXP 16
typedef struct wfp_slabs {
  float cuts[WFP_SPLIT_MAXP]; /* np - 1 boundaries */
  float w;                    /* contact range + skin */
  int32_t np, axis;
} wfp_slabs;

/* Per particle i of a partition: owned ones (anchor not NaN) get in tag[i] the mask of the
 * partitions that will hold them, and are counted in counts[o * np + d] (o: new owner, d: a
 * partition holding it); ghosts get tag 0. counts[np * np] keeps the largest speed (float bits;
 * speeds are >= 0, so their bits order as integers). With hist, the owned particles are also
 * counted by their coordinate c along the slab axis in WFP_HIST_BINS bins (wfp_hist_bin), from
 * which the host cuts balanced slabs without reading the particles. */
#define WFP_HIST_BINS 4096
typedef struct wfp_classify_args {
  wfp_slabs slabs;
  const wfp_f4 *pos, *vel;
  const float *anchor;
  uint32_t *tag;
  uint32_t *counts;
  uint32_t *hist;            /* NULL, or WFP_HIST_BINS counts */
  float hist_lo, hist_scale; /* bin floor((c - hist_lo) * hist_scale), clamped to the ends */
} wfp_classify_args;

/* One element: out[0..k) = the indices i < n with tag[i] & bit (with anchor set instead: those
 * whose anchor is not NaN, the owned particles), ascending; *count = k. */
typedef struct wfp_select_args {
  const uint32_t *tag;
  uint32_t bit;
  const float *anchor; /* NULL: select by tag */
  uint32_t *out, *count;
  uint32_t n;
  void *temp; /* CUDA: CUB temporary storage */
  size_t temp_bytes;
} wfp_select_args;

/* Per element j: the particle idx[j] into slot j of the out arrays (what a partition sends). */
typedef struct wfp_migrate_pack_args {
  const uint32_t *idx;
  const wfp_f4 *pos, *vel;
  const uint32_t *gid;
  const uint16_t *mat;
  wfp_f4 *opos, *ovel;
  uint32_t *ogid;
  uint16_t *omat;
} wfp_migrate_pack_args;

/* Per received particle j: the sort by global id's keys and values (keys[j] = gid[j], vals[j] =
 * j). */
typedef struct wfp_migrate_keys_args {
  const uint32_t *gid;
  uint32_t *keys, *vals;
} wfp_migrate_keys_args;

/* Per slot j of partition `self` after a repartition: the received particle order[j] (sorted by
 * global id) into the partition's arrays and its snapshot; anchor = the axis coordinate for an
 * owned particle, NaN for a ghost; tag = for an owned particle the other partitions that hold
 * it, for a ghost bit 16 + its owner. */
typedef struct wfp_migrate_args {
  wfp_slabs slabs;
  int32_t self;
  const uint32_t *order;
  const wfp_f4 *ipos, *ivel;
  const uint32_t *igid;
  const uint16_t *imat;
  wfp_f4 *pos, *vel, *snap_pos, *snap_vel;
  uint32_t *gid;
  uint16_t *mat;
  float *anchor;
  uint32_t *tag;
} wfp_migrate_args;

typedef struct wfp_frame_args { /* one element: begin = reset the extent; end = time += dt ... */
  const wfp_params *params;
  wfp_clock *clock;
} wfp_frame_args;

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

/* i mod d in [0, d) for any sign of i. */
WF_HD static inline uint32_t wfp_wrap(int32_t i, int32_t d) {
  int32_t r = i % d;
  return (uint32_t)(r < 0 ? r + d : r);
}

/* wfp_wrap of i - 1, i and i + 1 (d >= 1): one division, then compares. */
WF_HD static inline void wfp_wrap3(int32_t i, int32_t d, uint32_t *w) {
  uint32_t m = wfp_wrap(i, d), last = (uint32_t)d - 1u;
  w[0] = m == 0u ? last : m - 1u;
  w[1] = m;
  w[2] = m == last ? 0u : m + 1u;
}

/* Key of cell (ix, iy, iz) in the grid's periodic box. */
WF_HD static inline uint32_t wfp_key(const wfp_params *p, int32_t ix, int32_t iy, int32_t iz) {
  return wfp_wrap(ix, p->dims[0]) +
         (uint32_t)p->dims[0] *
             (wfp_wrap(iy, p->dims[1]) + (uint32_t)p->dims[1] * wfp_wrap(iz, p->dims[2]));
}

/* Cell key of a particle at x, its cell coordinates in c; returns flags (WFP_FLAG_*). */
WF_HD static inline uint32_t wfp_key_elem(const wfp_params *p, wfp_f4 x, uint32_t *key,
                                          int32_t *c) {
  int bad = 0;
  c[0] = wfp_cell_coord(x.x, p->inv_cell, &bad);
  c[1] = wfp_cell_coord(x.y, p->inv_cell, &bad);
  c[2] = wfp_cell_coord(x.z, p->inv_cell, &bad);
  *key = wfp_key(p, c[0], c[1], c[2]);
  uint32_t flags = bad ? WFP_FLAG_CELL_RANGE : 0u;
  if (!(wfp_finite(x.x) && wfp_finite(x.y) && wfp_finite(x.z))) flags |= WFP_FLAG_NONFINITE;
  return flags;
}

/* Slot s of the sorted keys starts its cell when its key differs from the previous one. */
WF_HD static inline void wfp_cells_elem(const wfp_cells_args *a, uint32_t s) {
  uint32_t k = a->keys[s];
  if (s == 0 || a->keys[s - 1] != k) a->cell_start[k] = s;
  if (s + 1 == a->n || a->keys[s + 1] != k) a->cell_end[k] = s + 1;
}

/* The particle's slot in its cell's range, in arrival order. */
WF_HD static inline void wfp_scatter_elem(const wfp_scatter_args *a, uint32_t i) {
  a->tmp[a->start[a->keys[i]] + a->arrival[i]] = i;
}

/* Slot s of the arrival order holds particle i: it goes to its cell's start plus the number of
 * the cell's particles with a smaller local index. */
WF_HD static inline void wfp_place_elem(const wfp_place_args *a, uint32_t s) {
  uint32_t i = a->tmp[s], k = a->keys[i];
  uint32_t b = a->start[k], e = a->start[k + 1u], d = b;
  for (uint32_t j = b; j < e; j++)
    d += a->tmp[j] < i;
  a->vals[d] = i;
  a->spos[d] = a->pos[i];
  a->svel[d] = a->vel[i];
  a->smat[d] = a->mat[i];
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

/* Loads of data no kernel writes while it reads them: on CUDA devices through the read-only
 * data cache (the compiler cannot prove that by itself: the written arrays are in the same
 * argument struct). */
WF_HD static inline wfp_f4 wfp_ld4(const wfp_f4 *p) {
#if defined(__CUDA_ARCH__)
  float4 v = __ldg((const float4 *)p);
  wfp_f4 r;
  r.x = v.x, r.y = v.y, r.z = v.z, r.w = v.w;
  return r;
#else
  return *p;
#endif
}

WF_HD static inline uint32_t wfp_ld32(const uint32_t *p) {
#if defined(__CUDA_ARCH__)
  return __ldg((const unsigned int *)p);
#else
  return *p;
#endif
}

WF_HD static inline uint16_t wfp_ld16(const uint16_t *p) {
#if defined(__CUDA_ARCH__)
  return __ldg((const unsigned short *)p);
#else
  return *p;
#endif
}

/* Pair force on particle i (pi, vi, material mi) from the particle in sorted slot t of
 * (spos, svel, smat). Only the position is loaded until the pair is known to touch: most of
 * the candidates of the 27 cells do not. */
WF_HD static inline void wfp_pair(wfp_f4 pi, wfp_f4 vi, const wfp_material *mi, const wfp_f4 *spos,
                                  const wfp_f4 *svel, const uint16_t *smat,
                                  const wfp_material *mats, uint32_t t, float *f) {
  wfp_f4 pj = wfp_ld4(&spos[t]);
  float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
  float d2 = wfp_dot3(dx, dy, dz, dx, dy, dz);
  float R = pi.w + pj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return;
  wfp_f4 vj = wfp_ld4(&svel[t]);
  const wfp_material *mj = &mats[wfp_ld16(&smat[t])];
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
  float cv[3];
  wfp_collider_velocity_at(c, t, x.x - n[0] * phi, x.y - n[1] * phi, x.z - n[2] * phi, cv);
  wfp_contact_force(n[0], n[1], n[2], delta, v.x - cv[0], v.y - cv[1], v.z - cv[2], k, cd,
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

/* ---- XPBD contacts ------------------------------------------------------------------------------
 *
 * One Jacobi iteration per substep ("small steps", Macklin et al. 2019), each particle gathering
 * its own correction: predict x* = x + h (v + h g) for itself and, from their sorted copies, for
 * its neighbours; for each overlapping pair the compliant distance constraint C = |xi*-xj*| - R
 * (compliance 1/k, so a soft material stays as soft as in DEM and a stiff one is rigid at any h)
 * gives  dx_i = w_i / (w_i + w_j + 1/(k h²)) · (-C) n,  plus friction on the relative tangential
 * displacement (static: cancelled when below mu_s times the penetration, else reduced by mu_k
 * times it; Macklin et al. 2014). The pair corrections are averaged (times omega) over the
 * particle's contacts, which keeps dense piles stable at large h. Colliders then project the
 * particle out of them exactly (so nothing passes through a plane), with friction and, for
 * impacts faster than gravity alone gives in one step, the collider's restitution. The velocity
 * is the position change over h. Particle pairs are inelastic along the normal in this model. */

/* Predicted velocity and position of a particle from its state (kinematic: v unchanged). */
WF_HD static inline wfp_f4 wfp_predict_velocity(const wfp_params *p, wfp_f4 v) {
  if (v.w > 0.0f) {
    float h = p->dt;
    v.x = (v.x + h * p->gravity.x) * p->damp;
    v.y = (v.y + h * p->gravity.y) * p->damp;
    v.z = (v.z + h * p->gravity.z) * p->damp;
  }
  return v;
}

WF_HD static inline wfp_f4 wfp_predict(const wfp_params *p, wfp_f4 x, wfp_f4 v) {
  float h = p->dt;
  v = wfp_predict_velocity(p, v);
  x.x += h * v.x, x.y += h * v.y, x.z += h * v.z;
  return x;
}

/* Tangential friction correction for a displacement d (relative, over the substep) at a contact
 * with normal n and penetration pen; share = the fraction the particle takes. Adds to dx. */
WF_HD static inline void wfp_xpbd_friction(const float *n, float dx_, float dy_, float dz_,
                                           float pen, float mu_s, float mu_k, float share,
                                           float *dx) {
  float dn = wfp_dot3(dx_, dy_, dz_, n[0], n[1], n[2]);
  float tx = dx_ - n[0] * dn, ty = dy_ - n[1] * dn, tz = dz_ - n[2] * dn;
  float t = sqrtf(wfp_dot3(tx, ty, tz, tx, ty, tz));
  if (!(t > 0.0f)) return;
  float f = t < mu_s * pen ? 1.0f : fminf(mu_k * pen / t, 1.0f);
  f *= share;
  dx[0] -= tx * f, dx[1] -= ty * f, dx[2] -= tz * f;
}

/* Correction of particle i (state xi, prediction pi) from neighbour j. Returns 1 for a contact. */
WF_HD static inline int wfp_xpbd_pair(const wfp_params *p, wfp_f4 xi, wfp_f4 pi, float wi,
                                      const wfp_material *mi, wfp_f4 xj, wfp_f4 vj,
                                      const wfp_material *mj, float *dx) {
  wfp_f4 pj = wfp_predict(p, xj, vj);
  float ex = pi.x - pj.x, ey = pi.y - pj.y, ez = pi.z - pj.z;
  float d2 = wfp_dot3(ex, ey, ez, ex, ey, ez);
  float R = xi.w + xj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return 0;
  float wsum = wi + vj.w;
  if (wsum == 0.0f) return 0;
  float d = sqrtf(d2);
  float n[3] = {ex / d, ey / d, ez / d};
  float pen = R - d;
  float k = 0.5f * (mi->stiffness + mj->stiffness);
  float h = p->dt;
  float corr = wi * pen / (wsum + 1.0f / (k * h * h));
  dx[0] += n[0] * corr, dx[1] += n[1] * corr, dx[2] += n[2] * corr;
  float rx = (pi.x - xi.x) - (pj.x - xj.x), ry = (pi.y - xi.y) - (pj.y - xj.y),
        rz = (pi.z - xi.z) - (pj.z - xj.z);
  wfp_xpbd_friction(n, rx, ry, rz, corr / (wi / wsum) /* the pair's resolved depth */,
                    0.5f * (mi->static_friction + mj->static_friction),
                    0.5f * (mi->friction + mj->friction), wi / wsum, dx);
  return 1;
}

/* Projects the particle (start x, radius x.w, end position *q) out of collider c as it is at
 * time t, with friction on the displacement relative to the collider over the substep. Returns
 * 1 with the contact normal in n when there was a contact. */
WF_HD static inline int wfp_xpbd_collider(const wfp_params *p, const wfp_collider *c, float t,
                                          wfp_f4 x, wfp_f4 *q, float *n) {
  float phi = wfp_collider_sdf_from(c, t, q->x, q->y, q->z, t - p->dt, x, n) - x.w;
  if (!(phi < 0.0f)) return 0;
  float pen = -phi, h = p->dt;
  q->x += n[0] * pen, q->y += n[1] * pen, q->z += n[2] * pen;
  float d[3] = {0.0f, 0.0f, 0.0f}, cv[3];
  wfp_collider_velocity_at(c, t, q->x - n[0] * x.w, q->y - n[1] * x.w, q->z - n[2] * x.w, cv);
  wfp_xpbd_friction(n, (q->x - x.x) - cv[0] * h, (q->y - x.y) - cv[1] * h, (q->z - x.z) - cv[2] * h,
                    pen, c->static_friction, c->friction, 1.0f, d);
  q->x += d[0], q->y += d[1], q->z += d[2];
  return 1;
}

/* ---- one particle's substep ---------------------------------------------------------------------
 */

/* The wrapped coordinates x_, y_, z_ of cell c's neighbours along each axis (index 0: c - 1) and
 * the box's first two dimensions d0_, d1_: the start of the neighbour walks below. */
#define WFP_NEIGHBOUR_AXES(p, c)                                                                   \
  uint32_t x_[3], y_[3], z_[3];                                                                    \
  wfp_wrap3(c[0], p->dims[0], x_);                                                                 \
  wfp_wrap3(c[1], p->dims[1], y_);                                                                 \
  wfp_wrap3(c[2], p->dims[2], z_);                                                                 \
  const uint32_t d0_ = (uint32_t)p->dims[0], d1_ = (uint32_t)p->dims[1];

/* Visits the particles of the 27 cells around cell c in the fixed order: rows (dz, dy) slowest,
 * cells x-1, x, x+1 within a row, slots (global-id order) within a cell. A row whose three keys
 * are consecutive is one contiguous slot range of the sorted arrays; when no row wraps around the
 * box in x (the common case) the table entries of all nine rows are loaded first, independently
 * (each cell's start and end at once: an empty cell's end is never used), so their latencies
 * overlap instead of adding up row after row. VISIT(t) is called for each slot t other than s.
 * The neighbours' wrapped coordinates come from the cell's own by a compare (one integer
 * division an axis, not three). */
#define WFP_FOR_NEIGHBOURS(a, p, s, c, VISIT)                                                      \
  {                                                                                                \
    WFP_NEIGHBOUR_AXES(p, c)                                                                       \
    if (x_[2] == x_[0] + 2u) {                                                                     \
      uint32_t lo_[9], hi_[9];                                                                     \
      WFP_UNROLL                                                                                   \
      for (int r_ = 0; r_ < 9; r_++) {                                                             \
        uint32_t b_ = d0_ * (y_[r_ % 3] + d1_ * z_[r_ / 3]) + x_[0];                               \
        uint32_t s0_ = wfp_ld32(&a->cell_start[b_]), s1_ = wfp_ld32(&a->cell_start[b_ + 1u]),      \
                 s2_ = wfp_ld32(&a->cell_start[b_ + 2u]);                                          \
        uint32_t e0_ = wfp_ld32(&a->cell_end[b_]), e1_ = wfp_ld32(&a->cell_end[b_ + 1u]),          \
                 e2_ = wfp_ld32(&a->cell_end[b_ + 2u]);                                            \
        lo_[r_] = s0_ != WFP_EMPTY ? s0_ : s1_ != WFP_EMPTY ? s1_ : s2_;                           \
        hi_[r_] = s2_ != WFP_EMPTY ? e2_ : s1_ != WFP_EMPTY ? e1_ : s0_ != WFP_EMPTY ? e0_ : 0u;   \
      }                                                                                            \
      WFP_UNROLL                                                                                   \
      for (int r_ = 0; r_ < 9; r_++)                                                               \
        for (uint32_t t_ = lo_[r_]; t_ < hi_[r_]; t_++)                                            \
          if (t_ != s) VISIT(t_);                                                                  \
    } else { /* the rows wrap around the box: three cells a row */                                 \
      for (int r_ = 0; r_ < 9; r_++) {                                                             \
        uint32_t b_ = d0_ * (y_[r_ % 3] + d1_ * z_[r_ / 3]);                                       \
        for (int q_ = 0; q_ < 3; q_++) {                                                           \
          uint32_t k_ = b_ + x_[q_];                                                               \
          uint32_t t_ = wfp_ld32(&a->cell_start[k_]);                                              \
          if (t_ == WFP_EMPTY) continue;                                                           \
          uint32_t e_ = wfp_ld32(&a->cell_end[k_]);                                                \
          for (; t_ < e_; t_++)                                                                    \
            if (t_ != s) VISIT(t_);                                                                \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

/* WFP_FOR_NEIGHBOURS over a dense start table (the particle solver's grid, built by counting):
 * cell_start[k] is the first slot of key k or later, for every key of the box and one past it,
 * so a row's range is two loads and an empty cell needs no test. Same order as above. */
#define WFP_FOR_NEIGHBOURS_DENSE(a, p, s, c, VISIT)                                                \
  {                                                                                                \
    WFP_NEIGHBOUR_AXES(p, c)                                                                       \
    if (x_[2] == x_[0] + 2u) {                                                                     \
      uint32_t lo_[9], hi_[9];                                                                     \
      WFP_UNROLL                                                                                   \
      for (int r_ = 0; r_ < 9; r_++) {                                                             \
        uint32_t b_ = d0_ * (y_[r_ % 3] + d1_ * z_[r_ / 3]) + x_[0];                               \
        lo_[r_] = wfp_ld32(&a->cell_start[b_]);                                                    \
        hi_[r_] = wfp_ld32(&a->cell_start[b_ + 3u]);                                               \
      }                                                                                            \
      WFP_UNROLL                                                                                   \
      for (int r_ = 0; r_ < 9; r_++)                                                               \
        for (uint32_t t_ = lo_[r_]; t_ < hi_[r_]; t_++)                                            \
          if (t_ != s) VISIT(t_);                                                                  \
    } else { /* the rows wrap around the box: three cells a row */                                 \
      for (int r_ = 0; r_ < 9; r_++) {                                                             \
        uint32_t b_ = d0_ * (y_[r_ % 3] + d1_ * z_[r_ / 3]);                                       \
        for (int q_ = 0; q_ < 3; q_++) {                                                           \
          uint32_t k_ = b_ + x_[q_];                                                               \
          uint32_t e_ = wfp_ld32(&a->cell_start[k_ + 1u]);                                         \
          for (uint32_t t_ = wfp_ld32(&a->cell_start[k_]); t_ < e_; t_++)                          \
            if (t_ != s) VISIT(t_);                                                                \
        }                                                                                          \
      }                                                                                            \
    }                                                                                              \
  }

/* A particle's contacts are gathered in two passes: the cell scan lists the slots it touches
 * (cheap: a position load and a distance), then the forces are computed from the list in the
 * same order. On a GPU this keeps a warp's lanes together: the expensive force math runs once
 * per listed contact instead of once per candidate that any lane of the warp touches. A list
 * holds WFP_CONTACT_LIST contacts; a particle with more scans again for the next ones (rare:
 * equal spheres touch at most 12), so the forces are always summed in scan order and the result
 * does not depend on the list's length. The list lives in shared memory on CUDA (stride: the
 * block's size), on the stack on the CPU (stride 1). */
#define WFP_CONTACT_LIST 16

/* The scan of the contact list: VISIT lists touching slot t when it is among the chunk's. */
#define WFP_LIST_CONTACT(t)                                                                        \
  {                                                                                                \
    if (seen_ >= skip_ && seen_ - skip_ < WFP_CONTACT_LIST) list[(seen_ - skip_) * stride] = (t);  \
    seen_++;                                                                                       \
  }

/* Whether the particle at pi touches pj (the test of wfp_pair). */
WF_HD static inline int wfp_touches(wfp_f4 pi, wfp_f4 pj) {
  float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
  float d2 = wfp_dot3(dx, dy, dz, dx, dy, dz);
  float R = pi.w + pj.w;
  return d2 < R * R && d2 != 0.0f;
}

/* The split's drift check of particle i at its new position x: WFP_FLAG_DRIFT when it is further
 * than the limit from its anchor along the axis (a NaN anchor, a ghost: never); 0 without it. */
WF_HD static inline uint32_t wfp_drift_flag(const wfp_collide_args *a, uint32_t i, wfp_f4 x) {
  if (!a->anchor) return 0u;
  int axis = a->drift->axis;
  float limit = a->drift->limit;
  float d = (axis == 0 ? x.x : axis == 1 ? x.y : x.z) - a->anchor[i];
  return d > limit || d < -limit ? WFP_FLAG_DRIFT : 0u;
}
/* DEM: gather pair forces (through the contact list, see above), add collider forces in
 * collider order, integrate (semi-implicit Euler) and write the particle back at its local
 * index. list: WFP_CONTACT_LIST entries `stride` apart. Returns flags. */
WF_HD static inline uint32_t wfp_collide_dem(const wfp_collide_args *a, uint32_t s, uint32_t *list,
                                             uint32_t stride) {
  const wfp_params *p = a->params;
  wfp_f4 x = a->spos[s], v = a->svel[s];
  const wfp_material *m = &a->mats[a->smat[s]];
  float f[3] = {0.0f, 0.0f, 0.0f};
  int bad = 0;
  int32_t c[3] = {wfp_cell_coord(x.x, p->inv_cell, &bad), wfp_cell_coord(x.y, p->inv_cell, &bad),
                  wfp_cell_coord(x.z, p->inv_cell, &bad)};
  for (uint32_t skip_ = 0;; skip_ += WFP_CONTACT_LIST) {
    uint32_t seen_ = 0;
#define WFP_DEM_VISIT(t)                                                                           \
  if (wfp_touches(x, wfp_ld4(&a->spos[t]))) WFP_LIST_CONTACT(t)
    WFP_FOR_NEIGHBOURS_DENSE(a, p, s, c, WFP_DEM_VISIT)
#undef WFP_DEM_VISIT
    uint32_t nc = seen_ - skip_ < WFP_CONTACT_LIST ? seen_ - skip_ : WFP_CONTACT_LIST;
    for (uint32_t l = 0; l < nc; l++)
      wfp_pair(x, v, m, a->spos, a->svel, a->smat, a->mats, list[l * stride], f);
    if (seen_ - skip_ <= WFP_CONTACT_LIST) break;
  }
  float time = (float)a->clock->time;
  for (uint32_t k = 0; k < p->n_colliders; k++)
    wfp_collider_force(&a->colliders[k], time, x, v, m, f);
  uint32_t flags = wfp_integrate(p, f, &x, &v);
  /* The springs let a fast or heavily loaded particle sink into a collider; its centre never
   * crosses the surface: it is put back on it and stops moving inwards (no tunnelling). */
  for (uint32_t k = 0; k < p->n_colliders && v.w > 0.0f; k++) {
    const wfp_collider *col = &a->colliders[k];
    float n[3];
    float phi = wfp_collider_sdf_from(col, time + p->dt, x.x, x.y, x.z, time, a->spos[s], n);
    if (!(phi < 0.0f)) continue;
    x.x -= n[0] * phi, x.y -= n[1] * phi, x.z -= n[2] * phi;
    float cv[3];
    wfp_collider_velocity_at(col, time + p->dt, x.x, x.y, x.z, cv);
    float vn = wfp_dot3(v.x - cv[0], v.y - cv[1], v.z - cv[2], n[0], n[1], n[2]);
    if (vn < 0.0f) v.x -= n[0] * vn, v.y -= n[1] * vn, v.z -= n[2] * vn;
  }
  uint32_t i = a->vals[s];
  a->pos[i] = x;
  a->vel[i] = v;
  return flags | wfp_drift_flag(a, i, x);
}

/* XPBD (see above), with the contact list of DEM. Returns flags. */
WF_HD static inline uint32_t wfp_collide_xpbd(const wfp_collide_args *a, uint32_t s, uint32_t *list,
                                              uint32_t stride) {
  const wfp_params *p = a->params;
  wfp_f4 x = a->spos[s], v = a->svel[s];
  float w = v.w, h = p->dt;
  wfp_f4 vp = wfp_predict_velocity(p, v);
  wfp_f4 q = x;
  q.x += h * vp.x, q.y += h * vp.y, q.z += h * vp.z;
  if (w > 0.0f) {
    wfp_f4 qp = q;
    const wfp_material *m = &a->mats[a->smat[s]];
    float dx[3] = {0.0f, 0.0f, 0.0f};
    int contacts = 0;
    int bad = 0;
    int32_t c[3] = {wfp_cell_coord(x.x, p->inv_cell, &bad), wfp_cell_coord(x.y, p->inv_cell, &bad),
                    wfp_cell_coord(x.z, p->inv_cell, &bad)};
    for (uint32_t skip_ = 0;; skip_ += WFP_CONTACT_LIST) {
      uint32_t seen_ = 0;
#define WFP_XPBD_VISIT(t)                                                                          \
  if (wfp_touches(q, wfp_predict(p, wfp_ld4(&a->spos[t]), wfp_ld4(&a->svel[t]))))                  \
  WFP_LIST_CONTACT(t)
      WFP_FOR_NEIGHBOURS_DENSE(a, p, s, c, WFP_XPBD_VISIT)
#undef WFP_XPBD_VISIT
      uint32_t nc = seen_ - skip_ < WFP_CONTACT_LIST ? seen_ - skip_ : WFP_CONTACT_LIST;
      for (uint32_t l = 0; l < nc; l++) {
        uint32_t u = list[l * stride];
        contacts += wfp_xpbd_pair(p, x, q, w, m, wfp_ld4(&a->spos[u]), wfp_ld4(&a->svel[u]),
                                  &a->mats[wfp_ld16(&a->smat[u])], dx);
      }
      if (seen_ - skip_ <= WFP_CONTACT_LIST) break;
    }
    if (contacts > 0) {
      float sc = p->relaxation / (float)contacts;
      q.x += dx[0] * sc, q.y += dx[1] * sc, q.z += dx[2] * sc;
    }
    /* colliders in order, as they are at the end of the substep; the last impact faster than
     * gravity alone gives in two substeps bounces with the collider's restitution */
    float t1 = (float)a->clock->time + h;
    float g = sqrtf(wfp_dot3(p->gravity.x, p->gravity.y, p->gravity.z, p->gravity.x, p->gravity.y,
                             p->gravity.z));
    float bn[3] = {0.0f, 0.0f, 0.0f}, bounce = 0.0f, bv[3], bcv[3] = {0.0f, 0.0f, 0.0f};
    const wfp_collider *bc = NULL;
    for (uint32_t k = 0; k < p->n_colliders; k++) {
      const wfp_collider *col = &a->colliders[k];
      float n[3];
      if (!wfp_xpbd_collider(p, col, t1, x, &q, n)) continue;
      wfp_collider_velocity_at(col, t1, q.x - n[0] * x.w, q.y - n[1] * x.w, q.z - n[2] * x.w, bv);
      float vn0 = wfp_dot3(v.x - bv[0], v.y - bv[1], v.z - bv[2], n[0], n[1], n[2]);
      if (col->restitution > 0.0f && -vn0 > 2.0f * h * g) {
        bn[0] = n[0], bn[1] = n[1], bn[2] = n[2];
        bounce = -col->restitution * vn0;
        bc = col;
        bcv[0] = bv[0], bcv[1] = bv[1], bcv[2] = bv[2];
      }
    }
    /* v = v_predicted + (corrections) / h: the same as (q - x) / h, but free contacts keep the
     * predicted velocity exactly (positions far from the origin would round it) */
    v.x = vp.x + (q.x - qp.x) / h, v.y = vp.y + (q.y - qp.y) / h, v.z = vp.z + (q.z - qp.z) / h;
    if (bc) { /* set the normal velocity relative to the collider to -e vn0 */
      float vn1 = wfp_dot3(v.x - bcv[0], v.y - bcv[1], v.z - bcv[2], bn[0], bn[1], bn[2]);
      float dv = bounce - vn1;
      v.x += bn[0] * dv, v.y += bn[1] * dv, v.z += bn[2] * dv;
    }
  }
  x.x = q.x, x.y = q.y, x.z = q.z;
  uint32_t i = a->vals[s];
  a->pos[i] = x;
  a->vel[i] = v;
  int ok = wfp_finite(x.x) && wfp_finite(x.y) && wfp_finite(x.z) && wfp_finite(v.x) &&
           wfp_finite(v.y) && wfp_finite(v.z);
  return (ok ? 0u : WFP_FLAG_NONFINITE) | wfp_drift_flag(a, i, x);
}

/* ---- the split solver's halo ----------------------------------------------------------------- */

WF_HD static inline void wfp_halo_pack_elem(const wfp_halo_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->dst_pos[j] = a->src_pos[i];
  a->dst_vel[j] = a->src_vel[i];
}

WF_HD static inline void wfp_halo_unpack_elem(const wfp_halo_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->dst_pos[i] = a->src_pos[j];
  a->dst_vel[i] = a->src_vel[j];
}

/* ---- the split solver's repartition ---------------------------------------------------------- */

WF_HD static inline float wfp_axis(wfp_f4 x, int axis) {
  return axis == 0 ? x.x : axis == 1 ? x.y : x.z;
}

WF_HD static inline int wfp_slab_owner(const wfp_slabs *s, float x) {
  int p = 0;
  while (p < s->np - 1 && x >= s->cuts[p])
    p++;
  return p;
}

/* The partitions holding a particle at x owned by o: o and every slab within w of x. */
WF_HD static inline uint32_t wfp_slab_mask(const wfp_slabs *s, float x, int o) {
  uint32_t m = 1u << o;
  for (int p = o - 1; p >= 0 && x < s->cuts[p] + s->w; p--)
    m |= 1u << p;
  for (int p = o + 1; p < s->np && x >= s->cuts[p - 1] - s->w; p++)
    m |= 1u << p;
  return m;
}

/* The split solver's time stamps (balance by time): one thread writes the device's clock, in ns,
 * to *at. */
typedef struct wfp_stamp_args {
  uint64_t *at;
} wfp_stamp_args;

/* The histogram bin of coordinate c (wfp_classify_args.hist); NaN goes to bin 0. */
WF_HD static inline uint32_t wfp_hist_bin(const wfp_classify_args *a, float c) {
  float b = (c - a->hist_lo) * a->hist_scale;
  if (!(b >= 1.0f)) return 0u;
  return b >= (float)(WFP_HIST_BINS - 1) ? WFP_HIST_BINS - 1u : (uint32_t)b;
}

/* Classifies particle i; returns its owner (and the mask in tag[i]), or -1 for a ghost. The
 * speed goes to *speed, the coordinate along the slab axis to *coord. */
WF_HD static inline int wfp_classify_elem(const wfp_classify_args *a, uint32_t i, float *speed,
                                          float *coord) {
  float an = a->anchor[i];
  if (an != an) {
    a->tag[i] = 0u;
    return -1;
  }
  wfp_f4 x = a->pos[i], v = a->vel[i];
  float c = wfp_axis(x, a->slabs.axis);
  *coord = c;
  int o = wfp_slab_owner(&a->slabs, c);
  a->tag[i] = wfp_slab_mask(&a->slabs, c, o);
  float s = sqrtf(v.x * v.x + v.y * v.y + v.z * v.z);
  *speed = s == s ? s : 0.0f;
  return o;
}

WF_HD static inline void wfp_migrate_pack_elem(const wfp_migrate_pack_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->opos[j] = a->pos[i];
  a->ovel[j] = a->vel[i];
  a->ogid[j] = a->gid[i];
  a->omat[j] = a->mat[i];
}

WF_HD static inline void wfp_migrate_elem(const wfp_migrate_args *a, uint32_t j) {
  uint32_t i = a->order[j];
  wfp_f4 x = a->ipos[i], v = a->ivel[i];
  a->pos[j] = x, a->snap_pos[j] = x;
  a->vel[j] = v, a->snap_vel[j] = v;
  a->gid[j] = a->igid[i];
  a->mat[j] = a->imat[i];
  float c = wfp_axis(x, a->slabs.axis);
  int o = wfp_slab_owner(&a->slabs, c);
  if (o == a->self) {
    a->anchor[j] = c;
    a->tag[j] = wfp_slab_mask(&a->slabs, c, o) & ~(1u << o);
  } else {
    a->anchor[j] = NAN;
    a->tag[j] = 1u << (16 + o);
  }
}

#endif
