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

#include "solvers/collider/collider_force.h" /* forces on colliders (wfx_forces) */
#include "solvers/collider/collider_math.h"  /* wfp_f4, wfp_collider, wfp_collider_sdf */
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

/* Contact models (wfp_params.model): the public WF_CONTACT_* values. */
enum { WFP_DEM = 0, WFP_XPBD = 1, WFP_HERTZ = 2 };

/* Contact history (Cundall-Strack): per particle WFP_HIST_SLOTS slots, each the state of one
 * contact the particle takes part in, keyed by the partner's global id + 1 (or WFP_HIST_COLLIDER
 * + the collider's index). A particle reads and writes only its own slots; the two sides of a pair
 * compute the same update from the same inputs with the signs flipped, so their histories stay
 * exact negatives of each other without ever being exchanged. */
#define WFP_HIST_SLOTS 8
#define WFP_HIST_EMPTY                                                                             \
  0u /* a free slot's key (so zeroed memory is free slots); particles: gid + 1 */
#define WFP_HIST_COLLIDER 0x80000000u

/* Sentinel of an empty cell in the cell-start table. */
#define WFP_EMPTY 0xffffffffu

/* Full unrolling of a loop with a constant trip count on CUDA devices (registers for its arrays).
 */
#if defined(__CUDA_ARCH__)
#define WFP_UNROLL _Pragma("unroll")
#else
#define WFP_UNROLL
#endif

/* Material, as the kernels see it (host values converted once: zeta from restitution, the
 * elastic terms from Young's modulus and Poisson's ratio). */
typedef struct wfp_material {
  float stiffness;       /* linear normal spring k, N/m (XPBD: compliance 1/k) */
  float damping;         /* absolute normal dashpot c, N·s/m */
  float zeta;            /* damping ratio from restitution (wf_particles_zeta_for_restitution) */
  float friction;        /* sliding (dynamic) Coulomb coefficient mu */
  float tangential;      /* extra absolute tangential dashpot, N·s/m */
  float cohesion;        /* attractive force per contact, N */
  float static_friction; /* static coefficient mu_s (>= 0; the host puts mu where it was 0) */
  float rolling;         /* rolling resistance coefficient mu_r (dimensionless) */
  float young_term;      /* (1 - nu^2) / E, 1/Pa: E* = 1 / (a_i + a_j) */
  float shear_term;      /* 2 (2 - nu)(1 + nu) / E, 1/Pa: G* = 1 / (b_i + b_j) */
  float kt_ratio;        /* linear model: tangential / normal stiffness */
  float pad;
} wfp_material;

/* One contact's history (WFP_HIST_SLOTS per particle): the tangential spring's displacement t
 * (m, in the current tangent plane), the partner's key, and the rolling spring's torque r (N·m). */
typedef struct wfp_hist {
  WFP_ALIGN16 float tx;
  float ty, tz;
  uint32_t key; /* partner's global id + 1, WFP_HIST_COLLIDER + index, or WFP_HIST_EMPTY (a
                   free slot: everything else is 0 too) */
  float rx, ry, rz, pad;
} wfp_hist;

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
  uint32_t model;   /* WFP_DEM, WFP_HERTZ or WFP_XPBD */
  float relaxation; /* XPBD: Jacobi averaging factor omega */
  /* a drag (wf_particles_drag_set): the particle of global id drag_gid pulled towards
   * drag_target (the partition's local coordinates) by a spring drag_k (N/m) and a dashpot
   * drag_c (N·s/m) in every substep; drag_on 0: none */
  uint32_t drag_on, drag_gid;
  float drag_k, drag_c;
  wfp_f4 drag_target;
} wfp_params;

/* Written by the kernels: simulated time, the error flags, and the extent (in cells) of the
 * particles over the frame, which the host uses to refit the grid's box between frames. */
typedef struct wfp_clock {
  double time;
  uint64_t substeps;
  uint32_t flags;
  uint32_t first_bad; /* smallest local index with a non-finite state, or UINT32_MAX */
  int32_t lo[3], hi[3];
  uint32_t overflows; /* contacts computed without a history slot (all full), since creation */
  uint32_t pad;
  /* the running substep's start, the contact kernels' "now": the substep's scatter advances the
   * clock (wfp_clock_advance) before the contacts read it, which saves the substep a launch */
  double start;
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
  /* NULL, or the substep's clock: element 0 advances it (wfp_clock_advance), launch or not */
  wfp_clock *clock;
  const wfp_params *params;
} wfp_scatter_args;

typedef struct wfp_place_args { /* per slot s: the particle tmp[s], ranked in its cell */
  const uint32_t *tmp, *keys, *start;
  uint32_t *vals; /* sorted slot -> local index */
  const wfp_f4 *pos, *vel, *omega;
  const uint16_t *mat;
  wfp_f4 *spos, *svel, *somega;
  uint16_t *smat;
  const uint32_t *live; /* the particles in use (wfp_live) */
  /* the substep's start (wfp_clock.start, advanced by the scatter): who is born by then */
  const wfp_clock *clock;
  /* NULL, or the cell counts (count_n entries), which the scan has consumed: cleared here, over
   * the whole launch, for the next substep's keys (which saves the substep a memset) */
  uint32_t *count;
  uint32_t count_n;
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
  wfp_f4 *pos, *vel;    /* slots s < params->count (wfp_live) */
  const wfp_f4 *somega; /* sorted angular velocities (xyz, rad/s) */
  wfp_f4 *omega;        /* angular velocities by local index */
  wfp_hist *hist;       /* WFP_HIST_SLOTS per local index */
  const uint32_t *gid;  /* global ids by local index (the history's keys) */
  const float *anchor;  /* NULL, or the split's drift check (wfp_drift_ctl): the anchors */
  wfp_drift_ctl *drift;
  /* the launch, not the kernel: blocks a multiprocessor the CUDA variant is compiled for (0: no
   * cap, 3 to 8; wf_particles_tuning.contact_min_blocks resolved) */
  int32_t min_blocks;
  /* the frame's impulses on the colliders (collider_force.h: WFX_FORCE_WORDS per collider),
   * added by the particles this partition owns; NULL: not accumulated */
  unsigned long long *forces;
} wfp_collide_args;

/* The split solver's halo (split.c): pack, per element j, dst[j] = src[idx[j]]; unpack,
 * dst[idx[j]] = src[j]; positions and velocities alike. */
typedef struct wfp_halo_args {
  const uint32_t *idx;
  const wfp_f4 *src_pos, *src_vel, *src_omega;
  wfp_f4 *dst_pos, *dst_vel, *dst_omega;
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
  const wfp_f4 *omega; /* NULL (a partition view): no granular state */
  const wfp_hist *hist;
  wfp_f4 *oomega;
  wfp_hist *ohist;
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
  const wfp_f4 *iomega; /* the granular state: received, the arrays and the snapshot */
  const wfp_hist *ihist;
  wfp_f4 *omega, *snap_omega;
  wfp_hist *hist, *snap_hist;
} wfp_migrate_args;

typedef struct wfp_frame_args { /* one element: resets the frame's extent */
  const wfp_params *params;
  wfp_clock *clock;
} wfp_frame_args;

/* The one-launch frame (wfp_frame): `substeps` substeps of one partition without hooks, each the
 * substep's stages in order (keys, scan, scatter, place, contacts) over these very arguments and
 * the same per-element functions, so the states are bitwise those of the kernel-per-stage path.
 * CUDA: one cooperative launch, a grid-stride loop a stage and grid.sync() between stages, the
 * scan done by the blocks (a sum per block into `partial`, then each block's share scanned from
 * the sum of those before it). CPU: the stages' loops one after another, on one thread. */
typedef struct wfp_frame_run_args {
  wfp_keys_args keys; /* (skip NULL) */
  wfp_scan_args scan;
  wfp_scatter_args scatter;
  wfp_place_args place;
  wfp_collide_args collide;
  uint32_t substeps;
  uint32_t launch;    /* the per-particle stages' size (wfp_live's n): at least the count */
  uint32_t xpbd;      /* the XPBD contacts, else DEM (linear or Hertz) */
  uint32_t partial_n; /* CUDA: entries of partial, an upper bound on the blocks */
  uint32_t *partial;  /* CUDA: one sum a block for the scan */
} wfp_frame_run_args;

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

/* The substep begins on the clock: its start is kept for the contact kernels (wfp_clock.start),
 * time moves on by dt, one more substep. The same double addition as ever, so the times are
 * bitwise those of a separate launch. */
WF_HD static inline void wfp_clock_advance(wfp_clock *c, const wfp_params *p) {
  c->start = c->time;
  c->time += (double)p->dt;
  c->substeps++;
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
  wfp_f4 v = a->vel[i], o = a->omega[i];
  /* a particle waiting for its birth keeps its inverse mass negated (and its birth time in
   * omega.w) until its first substep writes it back: the sorted copy, which every reader of the
   * substep sees (contacts of both models, the cloth coupling), has the one it has from the
   * substep that starts at or after its birth on */
  if (v.w < 0.0f && (float)a->clock->start >= o.w) v.w = -v.w;
  a->svel[d] = v;
  a->somega[d] = o;
  a->smat[d] = a->mat[i];
}

WF_HD static inline float wfp_dot3(float ax, float ay, float az, float bx, float by, float bz) {
  return ax * bx + ay * by + az * bz;
}

/* ---- DEM contacts (linear and Hertz-Mindlin) ---------------------------------------------------
 *
 * A contact between particle i and a partner j (another particle, or a collider: a rigid wall of
 * i's own material that does not rotate, rj = 0, wj = 0) along the unit normal n pointing
 * towards i, with overlap delta > 0:
 *
 *   normal     linear: fn = kn delta - cn vn,            cn = 2 zeta sqrt(kn m*)
 *              Hertz:  fn = 2/3 Sn delta - cn vn,        Sn = 2 E* sqrt(R* delta),
 *                                                        cn = 2 sqrt(5/6) zeta sqrt(Sn m*)
 *              (+ the materials' absolute dashpot; - cohesion; not clamped at 0, so that the
 *              linear model's restitution is exactly e)
 *   tangential a spring on the tangential displacement xi of the contact points (the history,
 *              Cundall-Strack), rotated into the current tangent plane every substep, and a
 *              dashpot:  Ft = -kt xi - ct vt;  linear kt = ratio kn, ct = 2 zeta sqrt(kt m*);
 *              Mindlin (no-slip) St = 8 G* sqrt(R* delta), ct = 2 sqrt(5/6) zeta sqrt(St m*).
 *              While |Ft| <= mu_s max(fn, 0) the contact sticks; beyond, it slides at
 *              |Ft| = mu max(fn, 0) and xi is reset to the spring that carries that force.
 *   rolling    the elastic-plastic spring-dashpot (Ai et al. 2011, "model C"): a torque spring
 *              Mr on the relative rotation (twist included: the only torsional resistance),
 *              kr = 2.25 kn mu_r^2 R*^2 (kn: the normal
 *              stiffness, Sn for Hertz), limited to mu_r R* max(fn, 0), with a dashpot at 0.3 of
 *              critical (on the contact's rolling inertia) while below the limit. It holds a
 *              sphere at rest on a slope up to tan(theta) = mu_r, and decelerates a rolling one
 *              at 5/7 mu_r g, without the oscillation of a constant torque at rest.
 *
 * m* = 1 / (wi + wj), R* = ri rj / (ri + rj) (a collider: ri), E* = 1 / (a_i + a_j) with
 * a = (1 - nu^2) / E, G* = 1 / (b_i + b_j) with b = 2 (2 - nu)(1 + nu) / E. Torque on i from the
 * tangential force: (-ri n) x Ft; rolling: Mr. The lever is the full radius.
 *
 * Every expression is odd in (n, relative velocities, history) and symmetric in the pair's
 * scalars (commutative sums and products only), so j's side computes bit for bit the negatives
 * of i's: forces cancel exactly, and the two histories stay negatives of each other. */

/* A contact's coefficients (pair means of the two materials, or the collider's). */
typedef struct wfp_coef {
  float kn;           /* linear normal stiffness, N/m */
  float estar, gstar; /* Hertz: effective moduli, Pa */
  float zeta;         /* damping ratio from restitution */
  float cn, ct;       /* absolute dashpots, N·s/m */
  float ratio;        /* linear: kt / kn */
  float mu_s, mu, mu_r, coh;
} wfp_coef;

/* o = a x b. */
WF_HD static inline void wfp_cross(float ax, float ay, float az, float bx, float by, float bz,
                                   float *o) {
  o[0] = ay * bz - az * by;
  o[1] = az * bx - ax * bz;
  o[2] = ax * by - ay * bx;
}

/* Rotates a history vector h into the plane normal to n, keeping its length. */
WF_HD static inline void wfp_to_plane(float *h, const float *n) {
  float l0 = h[0] * h[0] + h[1] * h[1] + h[2] * h[2];
  if (!(l0 > 0.0f)) return;
  float hn = h[0] * n[0] + h[1] * n[1] + h[2] * n[2];
  h[0] -= n[0] * hn, h[1] -= n[1] * hn, h[2] -= n[2] * hn;
  float l1 = h[0] * h[0] + h[1] * h[1] + h[2] * h[2];
  float s = l1 > 0.0f ? sqrtf(l0 / l1) : 0.0f;
  h[0] *= s, h[1] *= s, h[2] *= s;
}

/* The contact's force (to f) and torque (to tau) on i, its history h updated. vr = vi - vj;
 * lever = ri wi + rj wj (angular velocities; commutative); wr = wi - wj; inv_ir = 1/Ir. */
WF_HD static inline void wfp_granular(const wfp_params *p, const wfp_coef *c, const float *n,
                                      float delta, const float *vr, const float *lever,
                                      const float *wr, float ri, float mstar, float rstar,
                                      float inv_ir, wfp_hist *h, float *f, float *tau) {
  float dt = p->dt;
  float vn = vr[0] * n[0] + vr[1] * n[1] + vr[2] * n[2];
  float kt, ct, fe, cn, kr_n;
  if (p->model == WFP_HERTZ) {
    float sq = sqrtf(rstar * delta);
    float sn = 2.0f * c->estar * sq;
    fe = 0.6666667f * sn * delta;
    cn = 1.8257419f * c->zeta * sqrtf(sn * mstar); /* 2 sqrt(5/6) */
    kt = 8.0f * c->gstar * sq;
    ct = 1.8257419f * c->zeta * sqrtf(kt * mstar);
    kr_n = sn;
  } else {
    fe = c->kn * delta;
    cn = 2.0f * c->zeta * sqrtf(c->kn * mstar);
    kt = c->ratio * c->kn;
    ct = 2.0f * c->zeta * sqrtf(kt * mstar);
    kr_n = c->kn;
  }
  float fn = fe - (cn + c->cn) * vn;
  float fnet = fn - c->coh;
  f[0] += n[0] * fnet, f[1] += n[1] * fnet, f[2] += n[2] * fnet;
  float fc = fmaxf(fn, 0.0f);
  /* the contact points' relative velocity, its tangential part */
  float lx[3];
  wfp_cross(lever[0], lever[1], lever[2], n[0], n[1], n[2], lx);
  float vc[3] = {vr[0] - lx[0], vr[1] - lx[1], vr[2] - lx[2]};
  float vcn = vc[0] * n[0] + vc[1] * n[1] + vc[2] * n[2];
  float vt[3] = {vc[0] - n[0] * vcn, vc[1] - n[1] * vcn, vc[2] - n[2] * vcn};
  /* the tangential spring */
  float xi[3] = {h->tx, h->ty, h->tz};
  wfp_to_plane(xi, n);
  xi[0] += vt[0] * dt, xi[1] += vt[1] * dt, xi[2] += vt[2] * dt;
  float ctt = ct + c->ct;
  float ft[3] = {-kt * xi[0] - ctt * vt[0], -kt * xi[1] - ctt * vt[1], -kt * xi[2] - ctt * vt[2]};
  float ft2 = ft[0] * ft[0] + ft[1] * ft[1] + ft[2] * ft[2];
  float cap_s = c->mu_s * fc;
  if (ft2 > cap_s * cap_s) { /* sliding: the force at the dynamic cap, the spring carrying it */
    float s = c->mu * fc / sqrtf(ft2);
    ft[0] *= s, ft[1] *= s, ft[2] *= s;
    float ik = kt > 0.0f ? -1.0f / kt : 0.0f;
    xi[0] = ft[0] * ik, xi[1] = ft[1] * ik, xi[2] = ft[2] * ik;
  }
  h->tx = xi[0], h->ty = xi[1], h->tz = xi[2];
  f[0] += ft[0], f[1] += ft[1], f[2] += ft[2];
  float nf[3];
  wfp_cross(n[0], n[1], n[2], ft[0], ft[1], ft[2], nf);
  tau[0] -= ri * nf[0], tau[1] -= ri * nf[1], tau[2] -= ri * nf[2];
  /* the rolling spring, on the whole relative rotation: rolling and twist alike (nothing else
   * resists a twist; without it a grain of a heap at rest could spin about its contact normal
   * for ever) */
  if (c->mu_r > 0.0f) {
    const float *w = wr;
    float m[3] = {h->rx, h->ry, h->rz};
    float kr = 2.25f * kr_n * c->mu_r * c->mu_r * rstar * rstar;
    m[0] -= kr * w[0] * dt, m[1] -= kr * w[1] * dt, m[2] -= kr * w[2] * dt;
    float m2 = m[0] * m[0] + m[1] * m[1] + m[2] * m[2];
    float cap = c->mu_r * rstar * fc;
    float tr[3] = {m[0], m[1], m[2]}; /* the torque: spring, and dashpot below the limit */
    if (m2 > cap * cap) {
      float s = cap / sqrtf(m2);
      m[0] *= s, m[1] *= s, m[2] *= s;
      tr[0] = m[0], tr[1] = m[1], tr[2] = m[2];
    } else if (inv_ir > 0.0f) {
      float cr = 0.6f * sqrtf(kr / inv_ir); /* 0.3 of critical: 2 sqrt(Ir kr) */
      tr[0] -= cr * w[0], tr[1] -= cr * w[1], tr[2] -= cr * w[2];
      /* the whole torque stays within the limit too (the dashpot alone would brake a ball
       * that starts rolling far harder than mu_r allows while its spring builds up) */
      float t2 = tr[0] * tr[0] + tr[1] * tr[1] + tr[2] * tr[2];
      if (t2 > cap * cap) {
        float s = cap / sqrtf(t2);
        tr[0] *= s, tr[1] *= s, tr[2] *= s;
      }
    }
    h->rx = m[0], h->ry = m[1], h->rz = m[2];
    tau[0] += tr[0], tau[1] += tr[1], tau[2] += tr[2];
  }
}

/* A particle's history slots through its substep (wfp_slots_begin .. wfp_slots_end): the keys of
 * its held contacts, read once and then searched in the caller's scratch, the slots held
 * (taken ones, packed: slots 0 .. held - 1) and those used in this substep (bit k: slot k).
 *
 * The slots are kept packed: the held contacts first, free slots after them (wfp_slots_end
 * closes the gaps it leaves; wfp_hist_pack packs a history from elsewhere). So the first free
 * slot is slot `held`, which is the one a new contact claims, and the keys are read in rounds
 * that stop at a free one: slot 0; then 1 to 3; then 4 to 7. A particle with m contacts reads at
 * most 4 keys beyond its m (32-byte slots, each a sector with the contact's state in it). Which
 * slot holds a contact changes nothing else: the set of partners held, and so which contacts find
 * no slot when all are taken, is that of any other placement. */
typedef struct wfp_slots {
  wfp_hist *h;     /* the particle's WFP_HIST_SLOTS slots */
  uint32_t *key;   /* their keys, key[k stride] (WFP_HIST_EMPTY from slot `held` on): scratch of
                      the caller's (on CUDA in shared memory: registers would cost occupancy) */
  uint32_t stride; /* between two keys */
  uint32_t key0;   /* slot 0's key, read by wfp_slots_begin, stored by wfp_slots_load */
  uint32_t held, used;
} wfp_slots;

/* The first round of the keys' reads (slot 0): issued early, before the neighbour scan, so that
 * its latency is hidden behind the scan. key: WFP_HIST_SLOTS entries stride apart. */
WF_HD static inline void wfp_slots_begin(wfp_slots *S, wfp_hist *h, uint32_t *key,
                                         uint32_t stride) {
  S->h = h;
  S->key = key;
  S->stride = stride;
  S->used = 0u, S->held = 0u;
  S->key0 = h[0].key;
}

/* The other rounds, once slot 0's key is needed: then `held`. */
WF_HD static inline void wfp_slots_load(wfp_slots *S) {
  uint32_t k0 = S->key0, st = S->stride, held = 0u;
  uint32_t k[WFP_HIST_SLOTS];
  k[0] = k0;
  WFP_UNROLL
  for (int q = 1; q < WFP_HIST_SLOTS; q++)
    k[q] = WFP_HIST_EMPTY;
  if (k0 != WFP_HIST_EMPTY) {
    WFP_UNROLL
    for (int q = 1; q < 4; q++)
      k[q] = S->h[q].key;
    if (k[3] != WFP_HIST_EMPTY) {
      WFP_UNROLL
      for (int q = 4; q < WFP_HIST_SLOTS; q++)
        k[q] = S->h[q].key;
    }
  }
  WFP_UNROLL
  for (int q = 0; q < WFP_HIST_SLOTS; q++) {
    S->key[q * st] = k[q];
    held += k[q] != WFP_HIST_EMPTY ? 1u : 0u;
  }
  S->held = held;
}

/* The slot of key (never WFP_HIST_EMPTY): the one that holds it, else the first free one, which it
 * claims; -1 when every slot is taken (the contact then has no history: counted). */
WF_HD static inline int wfp_slot(wfp_slots *S, uint32_t key) {
  int k = -1;
  WFP_UNROLL
  for (int q = 0; q < WFP_HIST_SLOTS; q++)
    if (S->key[q * S->stride] == key) k = q;
  if (k < 0 && S->held < WFP_HIST_SLOTS) {
    k = (int)S->held++;
    S->key[k * S->stride] = key;
  }
  if (k >= 0) S->used |= 1u << k;
  return k;
}

/* The end of the substep: the slots not used are freed and the used ones moved down, in order,
 * over the gaps, so the slots stay packed. */
WF_HD static inline void wfp_slots_end(const wfp_slots *S) {
  if (S->used == (1u << S->held) - 1u) return; /* every held slot used: nothing moves */
  wfp_hist *h = S->h;
  int d = 0;
  for (int k = 0; k < (int)S->held; k++)
    if ((S->used >> k) & 1u) {
      if (d != k) h[d] = h[k];
      d++;
    }
  for (; d < (int)S->held; d++) {
    wfp_hist e = {0.0f, 0.0f, 0.0f, WFP_HIST_EMPTY, 0.0f, 0.0f, 0.0f, 0.0f};
    h[d] = e;
  }
}

/* Packs one particle's WFP_HIST_SLOTS slots (see wfp_slot): the held ones first, in their order,
 * then free ones (zeroed). For histories written by earlier versions or by hand, in any
 * placement. */
WF_HD static inline void wfp_hist_pack(wfp_hist *h) {
  int d = 0;
  for (int k = 0; k < WFP_HIST_SLOTS; k++)
    if (h[k].key != WFP_HIST_EMPTY) {
      if (d != k) h[d] = h[k];
      d++;
    }
  for (; d < WFP_HIST_SLOTS; d++) {
    wfp_hist e = {0.0f, 0.0f, 0.0f, WFP_HIST_EMPTY, 0.0f, 0.0f, 0.0f, 0.0f};
    h[d] = e;
  }
}

/* A contact through its slot (or a scratch one when there is none): the slot's state read when
 * the contact was held before (a claimed slot is free, so zeros), updated, and written whole.
 * Returns 1 on overflow. */
WF_HD static inline uint32_t wfp_granular_slot(const wfp_params *p, const wfp_coef *c,
                                               const float *n, float delta, const float *vr,
                                               const float *lever, const float *wr, float ri,
                                               float mstar, float rstar, float inv_ir, wfp_slots *S,
                                               uint32_t key, float *f, float *tau) {
  const int held = (int)S->held;
  int k = wfp_slot(S, key);
  wfp_hist h = {0.0f, 0.0f, 0.0f, key, 0.0f, 0.0f, 0.0f, 0.0f};
  if (k >= 0 && k < held) h = S->h[k];
  wfp_granular(p, c, n, delta, vr, lever, wr, ri, mstar, rstar, inv_ir, &h, f, tau);
  if (k >= 0) S->h[k] = h;
  return k >= 0 ? 0u : 1u;
}

/* Loads of data no kernel writes while it reads them: on CUDA devices through the read-only
 * data cache (the compiler cannot prove that by itself: the written arrays are in the same
 * argument struct). A translation unit whose kernel writes these arrays and reads them again
 * later in the same launch (the one-launch frame, particle_frame.cu) defines WFP_PLAIN_LOADS
 * before including this header: the read-only path is not coherent within a launch, so it loads
 * them plainly (the functions are static: each unit has its own). */
#if defined(__CUDA_ARCH__) && !defined(WFP_PLAIN_LOADS)
#define WFP_LDG 1
#else
#define WFP_LDG 0
#endif
WF_HD static inline wfp_f4 wfp_ld4(const wfp_f4 *p) {
#if WFP_LDG
  float4 v = __ldg((const float4 *)p);
  wfp_f4 r;
  r.x = v.x, r.y = v.y, r.z = v.z, r.w = v.w;
  return r;
#else
  return *p;
#endif
}

WF_HD static inline uint32_t wfp_ld32(const uint32_t *p) {
#if WFP_LDG
  return __ldg((const unsigned int *)p);
#else
  return *p;
#endif
}

WF_HD static inline uint16_t wfp_ld16(const uint16_t *p) {
#if WFP_LDG
  return __ldg((const unsigned short *)p);
#else
  return *p;
#endif
}

/* The pair coefficients of materials mi, mj: means (commutative: the same bits from both
 * sides). */
WF_HD static inline wfp_coef wfp_pair_coef(const wfp_material *mi, const wfp_material *mj) {
  wfp_coef c;
  c.kn = 0.5f * (mi->stiffness + mj->stiffness);
  c.estar = 1.0f / (mi->young_term + mj->young_term);
  c.gstar = 1.0f / (mi->shear_term + mj->shear_term);
  c.zeta = 0.5f * (mi->zeta + mj->zeta);
  c.cn = 0.5f * (mi->damping + mj->damping);
  c.ct = 0.5f * (mi->tangential + mj->tangential);
  c.ratio = 0.5f * (mi->kt_ratio + mj->kt_ratio);
  c.mu_s = 0.5f * (mi->static_friction + mj->static_friction);
  c.mu = 0.5f * (mi->friction + mj->friction);
  c.mu_r = 0.5f * (mi->rolling + mj->rolling);
  c.coh = 0.5f * (mi->cohesion + mj->cohesion);
  return c;
}

/* 1 / (the relative rolling inertia about the contact): 5/7 (w / r^2) per sphere. */
WF_HD static inline float wfp_inv_roll_inertia(float wi, float ri, float wj, float rj) {
  float a = wi / (ri * ri), b = rj > 0.0f ? wj / (rj * rj) : 0.0f;
  return 0.71428573f * (a + b);
}

/* Pair contact of particle i (pi, vi, wi = angular velocity, material mi; dynamic) with the
 * particle in sorted slot t of the collide arguments: force to f, torque to tau, history in i's
 * slots. Only the position is loaded until the pair is known to touch. Returns 1 on a history
 * overflow. */
WF_HD static inline uint32_t wfp_pair(const wfp_collide_args *a, wfp_f4 pi, wfp_f4 vi, wfp_f4 wi,
                                      const wfp_material *mi, uint32_t t, wfp_slots *S, float *f,
                                      float *tau) {
  wfp_f4 pj = wfp_ld4(&a->spos[t]);
  float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
  float d2 = wfp_dot3(dx, dy, dz, dx, dy, dz);
  float R = pi.w + pj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return 0u;
  wfp_f4 vj = wfp_ld4(&a->svel[t]);
  if (vj.w < 0.0f) return 0u; /* not born yet (wfp_awake) */
  wfp_f4 wj = wfp_ld4(&a->somega[t]);
  float wsum = vi.w + vj.w; /* > 0: i is dynamic */
  const wfp_material *mj = &a->mats[wfp_ld16(&a->smat[t])];
  uint32_t key = wfp_ld32(&a->gid[wfp_ld32(&a->vals[t])]) + 1u;
  float d = sqrtf(d2);
  float inv = 1.0f / d;
  float n[3] = {dx * inv, dy * inv, dz * inv};
  wfp_coef c = wfp_pair_coef(mi, mj);
  float vr[3] = {vi.x - vj.x, vi.y - vj.y, vi.z - vj.z};
  float lever[3] = {pi.w * wi.x + pj.w * wj.x, pi.w * wi.y + pj.w * wj.y,
                    pi.w * wi.z + pj.w * wj.z};
  float wr[3] = {wi.x - wj.x, wi.y - wj.y, wi.z - wj.z};
  float rstar = pi.w * pj.w / R;
  return wfp_granular_slot(a->params, &c, n, R - d, vr, lever, wr, pi.w, 1.0f / wsum, rstar,
                           wfp_inv_roll_inertia(vi.w, pi.w, vj.w, pj.w), S, key, f, tau);
}

/* Contact of a dynamic particle (x, v, angular velocity w, material m) with collider k (c) at
 * time t: a wall of the particle's own material that does not rotate, with the collider's
 * stiffness (0: the material's), friction and restitution, and the material's dashpots, rolling
 * resistance and elastic moduli. Returns 1 on a history overflow. */
WF_HD static inline uint32_t wfp_collider_force(const wfp_params *p, const wfp_collider *c,
                                                uint32_t k, float t, wfp_f4 x, wfp_f4 v, wfp_f4 w,
                                                const wfp_material *m, wfp_slots *S, float *f,
                                                float *tau, wfx_forces *F) {
  float n[3];
  float phi = wfp_collider_sdf(c, t, x.x, x.y, x.z, n);
  float delta = x.w - phi;
  if (!(delta > 0.0f)) return 0u;
  wfp_coef cf;
  cf.kn = c->stiffness > 0.0f ? c->stiffness : m->stiffness;
  cf.estar = 1.0f / (m->young_term + m->young_term);
  cf.gstar = 1.0f / (m->shear_term + m->shear_term);
  cf.zeta = c->zeta;
  cf.cn = m->damping;
  cf.ct = m->tangential;
  cf.ratio = m->kt_ratio;
  cf.mu_s = c->static_friction;
  cf.mu = c->friction;
  cf.mu_r = m->rolling;
  cf.coh = 0.0f;
  float cv[3]; /* the surface's velocity at the contact point */
  wfp_collider_velocity_at(c, t, x.x - n[0] * phi, x.y - n[1] * phi, x.z - n[2] * phi, cv);
  float vr[3] = {v.x - cv[0], v.y - cv[1], v.z - cv[2]};
  float lever[3] = {x.w * w.x, x.w * w.y, x.w * w.z};
  float wr[3] = {w.x, w.y, w.z};
  /* the contact's own force and torque (about the centre), added to the particle's after */
  float fc[3] = {0.0f, 0.0f, 0.0f}, tc[3] = {0.0f, 0.0f, 0.0f};
  uint32_t over = wfp_granular_slot(p, &cf, n, delta, vr, lever, wr, x.w, 1.0f / v.w, x.w,
                                    wfp_inv_roll_inertia(v.w, x.w, 0.0f, 0.0f), S,
                                    WFP_HIST_COLLIDER + k, fc, tc);
  f[0] += fc[0], f[1] += fc[1], f[2] += fc[2];
  tau[0] += tc[0], tau[1] += tc[1], tau[2] += tc[2];
  /* the collider gets -fc through the centre and -tc: the angular momentum the particle gains
   * about the collider's reference point, (x - ref) x fc + tc, is what the collider loses */
  float h = p->dt, xc[3] = {x.x, x.y, x.z};
  float J[3] = {-fc[0] * h, -fc[1] * h, -fc[2] * h}, T[3] = {-tc[0] * h, -tc[1] * h, -tc[2] * h};
  wfx_forces_add(F, c, k, t, xc, J, T);
  return over;
}

/* The drag's force on the dragged particle, added to f: k (t - x) - c v, explicit within the
 * substep, with k capped at 1 / (2 w h²) and c at 1 / (2 w h) (w the inverse mass, h the
 * substep) so that a stiff spring on a light grain cannot make the step unstable. */
WF_HD static inline void wfp_drag_force(const wfp_params *p, wfp_f4 x, wfp_f4 v, float *f) {
  float h = p->dt, w = v.w;
  float k = fminf(p->drag_k, 0.5f / (w * h * h)), c = fminf(p->drag_c, 0.5f / (w * h));
  f[0] += k * (p->drag_target.x - x.x) - c * v.x;
  f[1] += k * (p->drag_target.y - x.y) - c * v.y;
  f[2] += k * (p->drag_target.z - x.z) - c * v.z;
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

/* The rotation, like the translation: w += dt tau / I with I = 2/5 m r^2 of a solid sphere, then
 * the global damping. Kinematic particles keep their angular velocity. Returns flags. */
WF_HD static inline uint32_t wfp_integrate_rotation(const wfp_params *p, const float *tau, float r,
                                                    float inv_mass, wfp_f4 *w) {
  if (inv_mass > 0.0f) {
    float s = p->dt * (2.5f * inv_mass / (r * r));
    w->x = (w->x + s * tau[0]) * p->damp;
    w->y = (w->y + s * tau[1]) * p->damp;
    w->z = (w->z + s * tau[2]) * p->damp;
  }
  return wfp_finite(w->x) && wfp_finite(w->y) && wfp_finite(w->z) ? 0u : WFP_FLAG_NONFINITE;
}

/* ---- XPBD contacts ------------------------------------------------------------------------------
 *
 * One Jacobi iteration per substep ("small steps", Macklin et al. 2019), each particle gathering
 * its own correction: predict x* = x + h (v + h g) for itself and, from their sorted copies, for
 * its neighbours; for each overlapping pair the compliant distance constraint C = |xi*-xj*| - R
 * (compliance 1/k, so a soft material stays as soft as in DEM and a stiff one is rigid at any h)
 * gives the pair's normal impulse  lambda = -C / (w_i + w_j + 1/(k h²))  and i's correction
 * dx_i = w_i lambda n. The pair corrections are averaged (times omega) over the particle's
 * contacts, which keeps dense piles stable at large h. Colliders then project the particle out of
 * them exactly (so nothing passes through a plane), their normal impulse the projection's
 * m pen / h, and, for impacts faster than gravity alone gives in two steps, the collider's
 * restitution sets the normal velocity. Particle pairs are inelastic along the normal.
 *
 * Friction and rolling resistance act on velocities (Müller et al. 2020 apply dynamic friction to
 * velocities after the position solve; here static friction does too), never as position
 * corrections: a friction correction of a few ulps of a position would round away (the issue:
 * grains gliding on as on ice), while a velocity is a small number of its own. Per contact, with
 * the normal impulse Pn = lambda / h (a collider: m pen / h), the partners' predicted velocities
 * and angular velocities (spheres, I = 2/5 m r²; a collider neither rotates nor moves but with its
 * surface's velocity), the tangential impulse P at the contact point and the rolling impulse L
 * (an angular impulse on the relative rotation, twist included, as DEM's rolling spring) are
 * solved together (wfp_xpbd_grip):
 *   stick   P and L that stop both the contact points' slip and the relative rotation (a 2x2
 *           block system in 3D: slip K P + b L×n = -u, rotation b n×P + J L = -wr), kept while
 *           |P| <= mu_s Pn and |L| <= mu_r R* Pn;
 *   rolling beyond the rolling limit: L at mu_r R* Pn (the stick direction) and P that stops the
 *           slip with it, while |P| <= mu_s Pn: a sphere rolls without slipping at 5/7 g sin θ,
 *           and rolling resistance decelerates it at 5/7 mu_r g;
 *   sliding beyond the static limit: |P| = mu Pn (dynamic), in the stick impulse's direction, and
 *           L stopping the relative rotation within its limit: a = g (sin θ - mu cos θ).
 * A sphere held by both rests on a slope up to tan θ = min(mu_s, mu_r) (DEM's as well).
 * Impulses change velocities (dv = w P, dw = I^-1 (a × P + L), a the contact point from the
 * centre) and positions by h dv. Pair impulses are averaged over the contacts (no
 * over-relaxation: a stick impulse times 1.5 would reverse the slip); colliders follow one by one.
 * The result does not depend on where the scene sits: it reads velocities, normals and depths. */

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

/* One contact's grip (see above), on i: the contact normal n (towards i), the normal impulse pn
 * (>= 0), the slip u of i's contact point relative to the partner's (tangential part used), the
 * relative angular velocity wr (i's less the partner's), i's radius and inverse mass ri, wi and
 * the partner's rj, wj (a collider: 0, 0), the coefficients mu_s, mu, mu_r and R*. Returns i's
 * velocity change dv and angular velocity change dw (added). */
WF_HD static inline void wfp_xpbd_grip(const float *n, float pn, const float *u, const float *wr,
                                       float ri, float wi, float rj, float wj, float mu_s, float mu,
                                       float mu_r, float rstar, float *dv, float *dw) {
  if (!(pn > 0.0f)) return;
  float un = wfp_dot3(u[0], u[1], u[2], n[0], n[1], n[2]);
  float ut[3] = {u[0] - n[0] * un, u[1] - n[1] * un, u[2] - n[2] * un};
  /* inverse inertias: I^-1 = 5/2 w / r² (0 for a partner that does not rotate) */
  float ii = 2.5f * wi / (ri * ri), ij = rj > 0.0f ? 2.5f * wj / (rj * rj) : 0.0f;
  float K = wi + wj + ii * ri * ri + ij * rj * rj; /* slip per unit tangential impulse */
  float b = ij * rj - ii * ri;                     /* slip per unit rolling impulse (L × n) */
  float J = ii + ij;                               /* relative rotation per unit L */
  float cap_r = mu_r * rstar * pn;
  float P[3], L[3] = {0.0f, 0.0f, 0.0f};
  float wxn[3];
  wfp_cross(wr[0], wr[1], wr[2], n[0], n[1], n[2], wxn);
  if (cap_r > 0.0f && J > 0.0f) { /* stick: both stop */
    float bj = b / J, den = K - b * bj;
    for (int k = 0; k < 3; k++)
      P[k] = (-ut[k] + bj * wxn[k]) / den;
    float nxp[3];
    wfp_cross(n[0], n[1], n[2], P[0], P[1], P[2], nxp);
    for (int k = 0; k < 3; k++)
      L[k] = -(wr[k] + b * nxp[k]) / J;
    float l2 = wfp_dot3(L[0], L[1], L[2], L[0], L[1], L[2]);
    if (l2 > cap_r * cap_r) { /* rolling: L at its limit, P stops the slip with it */
      float sc = cap_r / sqrtf(l2);
      L[0] *= sc, L[1] *= sc, L[2] *= sc;
      float lxn[3];
      wfp_cross(L[0], L[1], L[2], n[0], n[1], n[2], lxn);
      for (int k = 0; k < 3; k++)
        P[k] = -(ut[k] + b * lxn[k]) / K;
    }
  } else { /* no rolling resistance: P stops the slip, the spheres turn freely */
    for (int k = 0; k < 3; k++)
      P[k] = -ut[k] / K;
  }
  float p2 = wfp_dot3(P[0], P[1], P[2], P[0], P[1], P[2]);
  float cap_s = mu_s * pn;
  if (p2 > cap_s * cap_s) { /* sliding: the dynamic limit, L stops the rotation within its own */
    float sc = mu * pn / sqrtf(p2);
    P[0] *= sc, P[1] *= sc, P[2] *= sc;
    L[0] = L[1] = L[2] = 0.0f;
    if (cap_r > 0.0f && J > 0.0f) {
      float nxp[3];
      wfp_cross(n[0], n[1], n[2], P[0], P[1], P[2], nxp);
      for (int k = 0; k < 3; k++)
        L[k] = -(wr[k] + b * nxp[k]) / J;
      float l2 = wfp_dot3(L[0], L[1], L[2], L[0], L[1], L[2]);
      if (l2 > cap_r * cap_r) {
        float s2 = cap_r / sqrtf(l2);
        L[0] *= s2, L[1] *= s2, L[2] *= s2;
      }
    }
  }
  /* on i: dv = wi P, dw = I^-1 ((-ri n) × P + L) = I^-1 (ri P × n + L) */
  float pxn[3];
  wfp_cross(P[0], P[1], P[2], n[0], n[1], n[2], pxn);
  for (int k = 0; k < 3; k++) {
    dv[k] += wi * P[k];
    dw[k] += ii * (ri * pxn[k] + L[k]);
  }
}

/* Contact of particle i (state xi, prediction pi, predicted velocity vi, angular velocity oi,
 * inverse mass wi) with neighbour j: the normal correction to dx, the grip to dv and dw.
 * Returns 1 for a contact. */
WF_HD static inline int wfp_xpbd_pair(const wfp_params *p, wfp_f4 pi, wfp_f4 vi, wfp_f4 oi,
                                      float wi, const wfp_material *mi, wfp_f4 xj, wfp_f4 vj,
                                      wfp_f4 oj, const wfp_material *mj, float *dx, float *dv,
                                      float *dw) {
  wfp_f4 vpj = wfp_predict_velocity(p, vj);
  float h = p->dt;
  wfp_f4 pj = xj;
  pj.x += h * vpj.x, pj.y += h * vpj.y, pj.z += h * vpj.z;
  float ex = pi.x - pj.x, ey = pi.y - pj.y, ez = pi.z - pj.z;
  float d2 = wfp_dot3(ex, ey, ez, ex, ey, ez);
  float R = pi.w + xj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return 0;
  float wsum = wi + vj.w;
  if (wsum == 0.0f) return 0;
  float d = sqrtf(d2);
  float n[3] = {ex / d, ey / d, ez / d};
  float pen = R - d;
  float k = 0.5f * (mi->stiffness + mj->stiffness);
  float lambda = pen / (wsum + 1.0f / (k * h * h));
  float corr = wi * lambda;
  dx[0] += n[0] * corr, dx[1] += n[1] * corr, dx[2] += n[2] * corr;
  /* the contact points' slip: u = vi - vj - (ri oi + rj oj) × n */
  float lev[3] = {pi.w * oi.x + xj.w * oj.x, pi.w * oi.y + xj.w * oj.y, pi.w * oi.z + xj.w * oj.z};
  float lxn[3];
  wfp_cross(lev[0], lev[1], lev[2], n[0], n[1], n[2], lxn);
  float u[3] = {vi.x - vpj.x - lxn[0], vi.y - vpj.y - lxn[1], vi.z - vpj.z - lxn[2]};
  float wr[3] = {oi.x - oj.x, oi.y - oj.y, oi.z - oj.z};
  wfp_xpbd_grip(n, lambda / h, u, wr, pi.w, wi, xj.w, vj.w,
                0.5f * (mi->static_friction + mj->static_friction),
                0.5f * (mi->friction + mj->friction), 0.5f * (mi->rolling + mj->rolling),
                pi.w * xj.w / R, dv, dw);
  return 1;
}

/* Projects the particle (start x, radius x.w, end position x + *disp, inverse mass w, velocity
 * *v, angular velocity *o, material m) out of collider c as it is at time t, then applies the
 * grip against the collider's surface to *v, *o and the displacement. Returns 1 with the contact
 * normal in n when there was a contact. */
WF_HD static inline int wfp_xpbd_collider(const wfp_params *p, const wfp_collider *c, float t,
                                          wfp_f4 x, float *disp, float w, float *v, float *o,
                                          const wfp_material *m, float *n) {
  float qx = x.x + disp[0], qy = x.y + disp[1], qz = x.z + disp[2];
  float phi = wfp_collider_sdf_from(c, t, qx, qy, qz, t - p->dt, x, n) - x.w;
  if (!(phi < 0.0f)) return 0;
  float pen = -phi, h = p->dt;
  disp[0] += n[0] * pen, disp[1] += n[1] * pen, disp[2] += n[2] * pen;
  v[0] += n[0] * pen / h, v[1] += n[1] * pen / h, v[2] += n[2] * pen / h;
  float cv[3];
  wfp_collider_velocity_at(c, t, qx + n[0] * pen - n[0] * x.w, qy + n[1] * pen - n[1] * x.w,
                           qz + n[2] * pen - n[2] * x.w, cv);
  float lxn[3];
  wfp_cross(x.w * o[0], x.w * o[1], x.w * o[2], n[0], n[1], n[2], lxn);
  float u[3] = {v[0] - cv[0] - lxn[0], v[1] - cv[1] - lxn[1], v[2] - cv[2] - lxn[2]};
  float dv[3] = {0.0f, 0.0f, 0.0f}, dw[3] = {0.0f, 0.0f, 0.0f};
  wfp_xpbd_grip(n, pen / (h * w), u, o, x.w, w, 0.0f, 0.0f, c->static_friction, c->friction,
                m->rolling, x.w, dv, dw);
  for (int k = 0; k < 3; k++) {
    v[k] += dv[k], o[k] += dw[k];
    disp[k] += h * dv[k];
  }
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
 * so a run of consecutive keys is one slot range, two loads, and an empty cell needs no test.
 * Same order as above, and one code path for every particle: a row's three cells are one run of
 * keys, or two where the row wraps around the box in x. On a GPU a warp holds consecutive cells
 * along x, so most warps have a lane at the box's edge: a separate path for those lanes had the
 * whole warp walk the rows twice. The first runs of all nine rows are loaded first,
 * independently, so that their latencies overlap; a second run is loaded in its row.
 * RANGE(a, s, lo, hi, VISIT) is called for each run's slot range [lo, hi), in order. */
#define WFP_FOR_NEIGHBOUR_RANGES(a, p, s, c, RANGE, VISIT)                                         \
  {                                                                                                \
    WFP_NEIGHBOUR_AXES(p, c)                                                                       \
    /* the row's first run starts at x_[0] and spans na_ keys; the second (nb_ > 0) at xb_ */      \
    const uint32_t na_ = x_[1] != x_[0] + 1u ? 1u : x_[2] != x_[1] + 1u ? 2u : 3u;                 \
    const uint32_t xb_ = na_ == 1u ? x_[1] : x_[2], nb_ = 3u - na_;                                \
    uint32_t lo_[9], hi_[9];                                                                       \
    WFP_UNROLL                                                                                     \
    for (int r_ = 0; r_ < 9; r_++) {                                                               \
      uint32_t b_ = d0_ * (y_[r_ % 3] + d1_ * z_[r_ / 3]) + x_[0];                                 \
      lo_[r_] = wfp_ld32(&a->cell_start[b_]);                                                      \
      hi_[r_] = wfp_ld32(&a->cell_start[b_ + na_]);                                                \
    }                                                                                              \
    WFP_UNROLL                                                                                     \
    for (int r_ = 0; r_ < 9; r_++) {                                                               \
      RANGE(a, s, lo_[r_], hi_[r_], VISIT)                                                         \
      if (nb_) {                                                                                   \
        uint32_t b_ = d0_ * (y_[r_ % 3] + d1_ * z_[r_ / 3]) + xb_;                                 \
        RANGE(a, s, wfp_ld32(&a->cell_start[b_]), wfp_ld32(&a->cell_start[b_ + nb_]), VISIT)       \
      }                                                                                            \
    }                                                                                              \
  }

/* The slots lo .. hi - 1 but s, one by one: VISIT(t). */
#define WFP_VISIT_RANGE(a, s, lo, hi, VISIT)                                                       \
  {                                                                                                \
    const uint32_t e_ = (hi);                                                                      \
    for (uint32_t t_ = (lo); t_ < e_; t_++)                                                        \
      if (t_ != (s)) VISIT(t_);                                                                    \
  }

/* The slots lo .. hi - 1 but s, in order, two positions loaded at once (the second clamped to
 * the range, so never out of it): VISIT(t, position of t). */
#define WFP_VISIT_RANGE_POS(a, s, lo, hi, VISIT)                                                   \
  {                                                                                                \
    const uint32_t e_ = (hi);                                                                      \
    for (uint32_t t_ = (lo); t_ < e_; t_ += 2u) {                                                  \
      const uint32_t u_ = t_ + 1u < e_ ? t_ + 1u : t_;                                             \
      const wfp_f4 pt_ = wfp_ld4(&a->spos[t_]), pu_ = wfp_ld4(&a->spos[u_]);                       \
      if (t_ != (s)) VISIT(t_, pt_);                                                               \
      if (u_ != t_ && u_ != (s)) VISIT(u_, pu_);                                                   \
    }                                                                                              \
  }

#define WFP_FOR_NEIGHBOURS_DENSE(a, p, s, c, VISIT)                                                \
  WFP_FOR_NEIGHBOUR_RANGES(a, p, s, c, WFP_VISIT_RANGE, VISIT)

/* WFP_FOR_NEIGHBOURS_DENSE with the candidates' positions loaded two at a time (both loads in
 * flight before either is tested): VISIT(t, position of t). Same slots, same order. */
#define WFP_FOR_NEIGHBOURS_DENSE_POS(a, p, s, c, VISIT)                                            \
  WFP_FOR_NEIGHBOUR_RANGES(a, p, s, c, WFP_VISIT_RANGE_POS, VISIT)

/* A particle's contacts are gathered in two passes: the cell scan lists the slots it touches
 * (cheap: a position load and a distance), then the forces are computed from the list in the
 * same order. On a GPU this keeps a warp's lanes together: the expensive force math runs once
 * per listed contact instead of once per candidate that any lane of the warp touches. A list
 * holds WFP_CONTACT_LIST contacts; a particle with more scans again for the next ones (rare:
 * equal spheres touch at most 12), so the forces are always summed in scan order and the result
 * does not depend on the list's length. The list lives in shared memory on CUDA (stride: the
 * block's size), on the stack on the CPU (stride 1). */
#define WFP_CONTACT_LIST 16
/* A contact kernel's scratch a particle (list entries, then DEM's history keys: wfp_slots). */
#define WFP_COLLIDE_SCRATCH (WFP_CONTACT_LIST + WFP_HIST_SLOTS)

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

/* Whether sorted particle t takes part in the substep's contacts: born (a particle waiting for
 * its birth has a negative inverse mass in its sorted copy, wfp_place_elem;
 * wf_particles_add_timed). Both sides of a pair decide alike, so a pair is symmetric. */
WF_HD static inline int wfp_awake(const wfp_collide_args *a, uint32_t t) {
  return !(wfp_ld4(&a->svel[t]).w < 0.0f);
}

/* Whether this partition owns particle i (its contacts with colliders count here): a ghost's
 * anchor is NaN; without a split (anchor NULL) every particle is its own. */
WF_HD static inline int wfp_owned(const wfp_collide_args *a, uint32_t i) {
  return !a->anchor || a->anchor[i] == a->anchor[i];
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
/* DEM (linear or Hertz): gather pair contacts (through the contact list, see above), add
 * collider contacts in collider order, integrate translation and rotation (semi-implicit Euler)
 * and write the particle back at its local index, its history in its own slots. list:
 * WFP_COLLIDE_SCRATCH entries `stride` apart (the contact list, then the history's keys).
 * Returns flags; *overflows: contacts without a history
 * slot. */
WF_HD static inline uint32_t wfp_collide_dem(const wfp_collide_args *a, uint32_t s, uint32_t *list,
                                             uint32_t stride, uint32_t *overflows, wfx_forces *F) {
  const wfp_params *p = a->params;
  wfp_f4 x = a->spos[s], v = a->svel[s], w = a->somega[s];
  uint32_t i = a->vals[s];
  if (!wfp_owned(a, i)) F = NULL; /* a ghost: its owner adds its contacts */
  const wfp_material *m = &a->mats[a->smat[s]];
  float f[3] = {0.0f, 0.0f, 0.0f}, tau[3] = {0.0f, 0.0f, 0.0f};
  uint32_t over = 0u;
  /* kinematic particles (and those not born yet: wfp_place_elem) move with their velocity: no
   * contacts, no history */
  if (v.w > 0.0f) {
    wfp_slots S;
    wfp_slots_begin(&S, &a->hist[(size_t)i * WFP_HIST_SLOTS], list + WFP_CONTACT_LIST * stride,
                    stride);
    int bad = 0;
    int32_t c[3] = {wfp_cell_coord(x.x, p->inv_cell, &bad), wfp_cell_coord(x.y, p->inv_cell, &bad),
                    wfp_cell_coord(x.z, p->inv_cell, &bad)};
    /* the scan lists touching slots; a partner not yet born is listed and skipped by wfp_pair,
     * which loads its velocity anyway (the sum's order is the scan's either way) */
    for (uint32_t skip_ = 0;; skip_ += WFP_CONTACT_LIST) {
      uint32_t seen_ = 0;
#define WFP_DEM_VISIT(t, pt)                                                                       \
  if (wfp_touches(x, pt)) WFP_LIST_CONTACT(t)
      WFP_FOR_NEIGHBOURS_DENSE_POS(a, p, s, c, WFP_DEM_VISIT)
#undef WFP_DEM_VISIT
      if (skip_ == 0) wfp_slots_load(&S);
      uint32_t nc = seen_ - skip_ < WFP_CONTACT_LIST ? seen_ - skip_ : WFP_CONTACT_LIST;
      for (uint32_t l = 0; l < nc; l++)
        over += wfp_pair(a, x, v, w, m, list[l * stride], &S, f, tau);
      if (seen_ - skip_ <= WFP_CONTACT_LIST) break;
    }
    float time = (float)a->clock->start;
    for (uint32_t k = 0; k < p->n_colliders; k++)
      over += wfp_collider_force(p, &a->colliders[k], k, time, x, v, w, m, &S, f, tau, F);
    wfp_slots_end(&S);
  }
  if (p->drag_on && v.w > 0.0f && wfp_ld32(&a->gid[i]) == p->drag_gid) wfp_drag_force(p, x, v, f);
  uint32_t flags = wfp_integrate_rotation(p, tau, x.w, v.w, &w);
  flags |= wfp_integrate(p, f, &x, &v);
  /* The springs let a fast or heavily loaded particle sink into a collider; its centre never
   * crosses the surface: it is put back on it and stops moving inwards (no tunnelling). */
  float time0 = (float)a->clock->start, time1 = time0 + p->dt;
  for (uint32_t k = 0; k < p->n_colliders && v.w > 0.0f; k++) {
    const wfp_collider *col = &a->colliders[k];
    float n[3];
    float phi = wfp_collider_sdf_from(col, time1, x.x, x.y, x.z, time0, a->spos[s], n);
    if (!(phi < 0.0f)) continue;
    x.x -= n[0] * phi, x.y -= n[1] * phi, x.z -= n[2] * phi;
    float cv[3];
    wfp_collider_velocity_at(col, time1, x.x, x.y, x.z, cv);
    float vn = wfp_dot3(v.x - cv[0], v.y - cv[1], v.z - cv[2], n[0], n[1], n[2]);
    if (vn < 0.0f) {
      v.x -= n[0] * vn, v.y -= n[1] * vn, v.z -= n[2] * vn;
      /* the stop is an impulse too: the collider takes m vn n (vn < 0) */
      float mv = vn / v.w, xc[3] = {x.x, x.y, x.z};
      float J[3] = {n[0] * mv, n[1] * mv, n[2] * mv};
      wfx_forces_add(F, col, k, time1, xc, J, NULL);
    }
  }
  a->pos[i] = x;
  a->vel[i] = v;
  a->omega[i] = w;
  *overflows = over;
  return flags | wfp_drift_flag(a, i, x);
}

/* XPBD (see above), with the contact list of DEM. Returns flags. The particle's displacement
 * over the substep is kept apart from its position (small numbers, exact for a free particle),
 * and added once at the end. */
WF_HD static inline uint32_t wfp_collide_xpbd(const wfp_collide_args *a, uint32_t s, uint32_t *list,
                                              uint32_t stride, wfx_forces *F) {
  const wfp_params *p = a->params;
  wfp_f4 x = a->spos[s], v = a->svel[s], om = a->somega[s]; /* (born: wfp_place_elem) */
  if (!wfp_owned(a, a->vals[s])) F = NULL; /* a ghost: its owner adds its contacts */
  float w = v.w, h = p->dt;
  wfp_f4 vp = wfp_predict_velocity(p, v);
  float disp[3] = {h * vp.x, h * vp.y, h * vp.z};
  if (w > 0.0f) {
    wfp_f4 q = x;
    q.x += disp[0], q.y += disp[1], q.z += disp[2];
    const wfp_material *m = &a->mats[a->smat[s]];
    float dx[3] = {0.0f, 0.0f, 0.0f}, dv[3] = {0.0f, 0.0f, 0.0f}, dw[3] = {0.0f, 0.0f, 0.0f};
    int contacts = 0;
    int bad = 0;
    int32_t c[3] = {wfp_cell_coord(x.x, p->inv_cell, &bad), wfp_cell_coord(x.y, p->inv_cell, &bad),
                    wfp_cell_coord(x.z, p->inv_cell, &bad)};
    for (uint32_t skip_ = 0;; skip_ += WFP_CONTACT_LIST) {
      uint32_t seen_ = 0;
#define WFP_XPBD_VISIT(t)                                                                          \
  if (wfp_touches(q, wfp_predict(p, wfp_ld4(&a->spos[t]), wfp_ld4(&a->svel[t]))) &&                \
      wfp_awake(a, t))                                                                             \
  WFP_LIST_CONTACT(t)
      WFP_FOR_NEIGHBOURS_DENSE(a, p, s, c, WFP_XPBD_VISIT)
#undef WFP_XPBD_VISIT
      uint32_t nc = seen_ - skip_ < WFP_CONTACT_LIST ? seen_ - skip_ : WFP_CONTACT_LIST;
      for (uint32_t l = 0; l < nc; l++) {
        uint32_t u = list[l * stride];
        contacts +=
            wfp_xpbd_pair(p, q, vp, om, w, m, wfp_ld4(&a->spos[u]), wfp_ld4(&a->svel[u]),
                          wfp_ld4(&a->somega[u]), &a->mats[wfp_ld16(&a->smat[u])], dx, dv, dw);
      }
      if (seen_ - skip_ <= WFP_CONTACT_LIST) break;
    }
    /* the particle's velocity as the solve goes on: predicted, plus corrections */
    float vc[3] = {vp.x, vp.y, vp.z}, oc[3] = {om.x, om.y, om.z};
    if (contacts > 0) { /* normal corrections over-relaxed, grips averaged */
      float sc = p->relaxation / (float)contacts, sg = 1.0f / (float)contacts;
      for (int k = 0; k < 3; k++) {
        float dk = dx[k] * sc;
        disp[k] += dk + h * (dv[k] * sg);
        vc[k] += dk / h + dv[k] * sg;
        oc[k] += dw[k] * sg;
      }
    }
    /* colliders in order, as they are at the end of the substep; the last impact faster than
     * gravity alone gives in two substeps bounces with the collider's restitution */
    float t1 = (float)a->clock->start + h;
    float g = sqrtf(wfp_dot3(p->gravity.x, p->gravity.y, p->gravity.z, p->gravity.x, p->gravity.y,
                             p->gravity.z));
    float bn[3] = {0.0f, 0.0f, 0.0f}, bounce = 0.0f, bv[3], bcv[3] = {0.0f, 0.0f, 0.0f};
    const wfp_collider *bc = NULL;
    uint32_t bk = 0;
    for (uint32_t k = 0; k < p->n_colliders; k++) {
      const wfp_collider *col = &a->colliders[k];
      float n[3];
      float v0[3] = {vc[0], vc[1], vc[2]};
      if (!wfp_xpbd_collider(p, col, t1, x, disp, w, vc, oc, m, n)) continue;
      float xc[3] = {x.x + disp[0] - n[0] * x.w, x.y + disp[1] - n[1] * x.w,
                     x.z + disp[2] - n[2] * x.w};
      { /* the particle's impulse m dv from the correction and the grip; the collider takes the
         * opposite, at the contact point (the rolling couple is left out) */
        float mass = 1.0f / w;
        float J[3] = {(v0[0] - vc[0]) * mass, (v0[1] - vc[1]) * mass, (v0[2] - vc[2]) * mass};
        wfx_forces_add(F, col, k, t1, xc, J, NULL);
      }
      wfp_collider_velocity_at(col, t1, xc[0], xc[1], xc[2], bv);
      float vn0 = wfp_dot3(v.x - bv[0], v.y - bv[1], v.z - bv[2], n[0], n[1], n[2]);
      if (col->restitution > 0.0f && -vn0 > 2.0f * h * g) {
        bn[0] = n[0], bn[1] = n[1], bn[2] = n[2];
        bounce = -col->restitution * vn0;
        bc = col, bk = k;
        bcv[0] = bv[0], bcv[1] = bv[1], bcv[2] = bv[2];
      }
    }
    v.x = vc[0], v.y = vc[1], v.z = vc[2];
    if (bc) { /* set the normal velocity relative to the collider to -e vn0 */
      float vn1 = wfp_dot3(v.x - bcv[0], v.y - bcv[1], v.z - bcv[2], bn[0], bn[1], bn[2]);
      float dvn = bounce - vn1;
      v.x += bn[0] * dvn, v.y += bn[1] * dvn, v.z += bn[2] * dvn;
      float mdv = -dvn / w;
      float xc[3] = {x.x + disp[0] - bn[0] * x.w, x.y + disp[1] - bn[1] * x.w,
                     x.z + disp[2] - bn[2] * x.w};
      float J[3] = {bn[0] * mdv, bn[1] * mdv, bn[2] * mdv};
      wfx_forces_add(F, bc, bk, t1, xc, J, NULL);
    }
    om.x = oc[0] * p->damp, om.y = oc[1] * p->damp, om.z = oc[2] * p->damp;
  }
  x.x += disp[0], x.y += disp[1], x.z += disp[2];
  uint32_t i = a->vals[s];
  a->pos[i] = x;
  a->vel[i] = v;
  a->omega[i] = om;
  int ok = wfp_finite(x.x) && wfp_finite(x.y) && wfp_finite(x.z) && wfp_finite(v.x) &&
           wfp_finite(v.y) && wfp_finite(v.z) && wfp_finite(om.x) && wfp_finite(om.y) &&
           wfp_finite(om.z);
  return (ok ? 0u : WFP_FLAG_NONFINITE) | wfp_drift_flag(a, i, x);
}

/* ---- the split solver's halo ----------------------------------------------------------------- */

WF_HD static inline void wfp_halo_pack_elem(const wfp_halo_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->dst_pos[j] = a->src_pos[i];
  a->dst_vel[j] = a->src_vel[i];
  a->dst_omega[j] = a->src_omega[i];
}

WF_HD static inline void wfp_halo_unpack_elem(const wfp_halo_args *a, uint32_t j) {
  uint32_t i = a->idx[j];
  a->dst_pos[i] = a->src_pos[j];
  a->dst_vel[i] = a->src_vel[j];
  a->dst_omega[i] = a->src_omega[j];
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
  if (!a->omega) return;
  a->oomega[j] = a->omega[i];
  for (int k = 0; k < WFP_HIST_SLOTS; k++)
    a->ohist[(size_t)j * WFP_HIST_SLOTS + k] = a->hist[(size_t)i * WFP_HIST_SLOTS + k];
}

WF_HD static inline void wfp_migrate_elem(const wfp_migrate_args *a, uint32_t j) {
  uint32_t i = a->order[j];
  wfp_f4 x = a->ipos[i], v = a->ivel[i];
  a->pos[j] = x, a->snap_pos[j] = x;
  a->vel[j] = v, a->snap_vel[j] = v;
  a->gid[j] = a->igid[i];
  a->mat[j] = a->imat[i];
  wfp_f4 w = a->iomega[i];
  a->omega[j] = w, a->snap_omega[j] = w;
  for (int k = 0; k < WFP_HIST_SLOTS; k++) {
    wfp_hist h = a->ihist[(size_t)i * WFP_HIST_SLOTS + k];
    a->hist[(size_t)j * WFP_HIST_SLOTS + k] = h, a->snap_hist[(size_t)j * WFP_HIST_SLOTS + k] = h;
  }
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
