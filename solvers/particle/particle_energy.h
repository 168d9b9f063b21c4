/* The particles' energies (wf_particles_energy_get), per particle on the device, written once for
 * both backends like particle_math.h. Kept apart from the contact kernels: it reads the state, the
 * contact history, the materials and the colliders, and finds its neighbours through a grid of
 * its own.
 *
 * Each particle i writes its own wfp_energy row:
 *   kinetic    ½ m v² (dynamic particles: inverse mass > 0; kinematic ones have no finite mass)
 *   rotational ½ I ω², I = 2/5 m r² (dynamic particles)
 *   potential  -m g·x (dynamic particles; zero at the origin: m g y for g = (0, -g, 0))
 *   contact    half of the energy of each particle contact it is in (each pair counted once
 *              in the sum over both particles): the normal spring's (wfp_normal_energy) and the
 *              tangential and rolling springs' held in the contact history (wfp_history_energy)
 *   collider   the energy of its contacts with colliders (dynamic particles, as the forces), the
 *              same three springs
 *   shear      the tangential and rolling springs' part of contact + collider
 * Dashpots, friction and cohesion are not potentials: they are left out.
 *
 * The history: a contact's tangential spring holds its displacement xi and its rolling spring
 * its torque M in the slot of each dynamic side keyed by the partner's global id + 1
 * (particle_math.h); the two sides' slots are exact negatives, so either gives the same energy.
 * A row reads only its own particle's slots: two dynamic particles each count half of the
 * springs' energy from their own slot; with a kinematic partner (which keeps no history) the
 * dynamic one counts all of it. Only contacts that touch in the current state count, like the
 * normal spring.
 *
 * The neighbours: a grid of cells of side `cell` (twice the largest radius, so a touching pair
 * is in the same or adjacent cells) hashed into a table of `table` (a power of two) slots, built
 * on the device from the state in global-id order (wfp_energy_grid_args): the largest radius
 * (a max, exact in any order), each particle's slot (wfp_energy_key), a stable sort of (slot,
 * global id) pairs, and each slot's first entry by binary search. order[] holds the particles
 * sorted by slot, each slot's in global-id order, slot s being order[start[s] .. start[s + 1]).
 * A particle visits its 27 cells' slots in a fixed order, each distinct slot once. The table
 * depends on the whole system's particle count only, so a partition's grid over its own
 * particles and ghosts (gid: their global ids) lists, in each slot, the whole system's particles
 * of that slot that are there, in the same order; those missing are out of contact range and
 * would add exactly +0.0. Every row therefore depends only on the state, not on how the solver
 * is split; the host sums the rows exactly, so the totals are bitwise the same for 1..N
 * partitions and ranks and, with -ffp-contract=off / -fmad=false, on the CPU and CUDA backends. */
#ifndef WEFT_PARTICLE_ENERGY_H
#define WEFT_PARTICLE_ENERGY_H

#include "particle_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wfp_energy {
  double kinetic, rotational, potential, contact, collider, shear;
} wfp_energy;

typedef struct wfp_energy_args {
  const wfp_f4 *pos, *vel; /* global-id order */
  const wfp_f4 *omega;     /* angular velocities, global-id order */
  const wfp_hist *hist;    /* WFP_HIST_SLOTS a particle, global-id order; NULL: no history */
  const uint32_t *gid;     /* each row's global id (a partition's arrays); NULL: its index */
  const uint16_t *mat;
  const uint32_t *order, *start; /* the grid (above) */
  const float *inv_cell;         /* 1 / cell, on the device (wfp_energy_grid_args) */
  const wfp_material *mats;
  const wfp_collider *colliders;
  const wfp_clock *clock; /* the colliders' time */
  wfp_energy *out;
  float gravity[3];
  double g_origin; /* gravity · the solver's origin (positions are relative to it), m²/s² */
  uint32_t table;  /* slots, a power of two */
  uint32_t n_colliders;
  uint32_t model; /* WFP_DEM, WFP_HERTZ or WFP_XPBD */
} wfp_energy_args;

/* The elastic energy stored in a contact's normal spring at overlap delta > 0 (coefficients c,
 * effective radius rstar). The linear spring-dashpot (and XPBD's compliance 1/kn) F = kn delta
 * stores ½ kn delta². The Hertz spring F = 4/3 E* sqrt(R*) delta^(3/2) (wfp_granular: 2/3 Sn
 * delta) stores the integral of its force, 8/15 E* sqrt(R*) delta^(5/2) = 2/5 F delta. */
WF_HD static inline double wfp_normal_energy(uint32_t model, const wfp_coef *c, float rstar,
                                             float delta) {
  double d = (double)delta;
  if (model == WFP_HERTZ) return (8.0 / 15.0) * (double)c->estar * sqrt((double)rstar * d) * d * d;
  return 0.5 * (double)c->kn * d * d;
}

/* The energy held in a contact's history h at overlap delta > 0: the tangential spring's
 * ½ kt |xi|² and the rolling spring's |M|² / (2 kr), with wfp_granular's stiffnesses (Hertz:
 * Mindlin's kt = 8 G* sqrt(R* delta); linear: ratio kn; kr = 2.25 kn mu_r² R*², kn the normal
 * stiffness, Sn for Hertz). */
WF_HD static inline double wfp_history_energy(uint32_t model, const wfp_coef *c, float rstar,
                                              float delta, const wfp_hist *h) {
  float kt, kr_n;
  if (model == WFP_HERTZ) {
    float sq = sqrtf(rstar * delta);
    kt = 8.0f * c->gstar * sq;
    kr_n = 2.0f * c->estar * sq;
  } else {
    kt = c->ratio * c->kn;
    kr_n = c->kn;
  }
  double xi2 = (double)h->tx * h->tx + (double)h->ty * h->ty + (double)h->tz * h->tz;
  double e = 0.5 * (double)kt * xi2;
  float kr = 2.25f * kr_n * c->mu_r * c->mu_r * rstar * rstar;
  if (c->mu_r > 0.0f && kr > 0.0f) {
    double m2 = (double)h->rx * h->rx + (double)h->ry * h->ry + (double)h->rz * h->rz;
    e += m2 / (2.0 * (double)kr);
  }
  return e;
}

/* Particle i's history slot keyed by key, or NULL (no history, or no such contact). */
WF_HD static inline const wfp_hist *wfp_energy_slot_of(const wfp_energy_args *a, uint32_t i,
                                                       uint32_t key) {
  if (!a->hist) return NULL;
  const wfp_hist *h = a->hist + (size_t)i * WFP_HIST_SLOTS;
  for (int k = 0; k < WFP_HIST_SLOTS; k++)
    if (h[k].key == key) return &h[k];
  return NULL;
}

/* The hashed slot of cell (ix, iy, iz). */
WF_HD static inline uint32_t wfp_energy_slot(int32_t ix, int32_t iy, int32_t iz, uint32_t table) {
  uint32_t h = (uint32_t)ix * 73856093u ^ (uint32_t)iy * 19349663u ^ (uint32_t)iz * 83492791u;
  return h & (table - 1u);
}

/* The cell of x (floor(x / cell), clamped far beyond any simulated extent). */
WF_HD static inline int32_t wfp_energy_cell(float x, float inv_cell) {
  float c = floorf(x * inv_cell);
  c = fminf(fmaxf(c, -1e9f), 1e9f);
  return (int32_t)c;
}

/* The slot of particle position p. */
WF_HD static inline uint32_t wfp_energy_key(wfp_f4 p, float inv_cell, uint32_t table) {
  return wfp_energy_slot(wfp_energy_cell(p.x, inv_cell), wfp_energy_cell(p.y, inv_cell),
                         wfp_energy_cell(p.z, inv_cell), table);
}

/* The grid's four kernels (one struct: they fill the grid's arrays in turn, on one stream):
 *   rmax_part  n = chunks:   partial[c] = the largest radius of particles [c CHUNK, (c+1) CHUNK)
 *   rmax_final n = 1:        *inv_cell = 1 / (2 max partial) (1 with no radius)
 *   keys       n = count:    keys[i] = the slot of particle i, vals[i] = i
 *   starts     n = table+1:  start[s] = the first sorted position whose slot is >= s
 * with the solver's stable sort (wfp_sort) of (keys, vals) into (sorted, order) between keys and
 * starts. Maxima and integer work only: the same bits on every backend. */
#define WFP_ENERGY_CHUNK 1024u
typedef struct wfp_energy_grid_args {
  const wfp_f4 *pos; /* global-id order */
  uint32_t n, chunks, table;
  float *partial;        /* chunks */
  float *inv_cell;       /* one */
  uint32_t *keys, *vals; /* n each */
  const uint32_t *sorted;
  uint32_t *start; /* table + 1 */
} wfp_energy_grid_args;

WF_HD static inline void wfp_energy_rmax_part(const wfp_energy_grid_args *a, uint32_t c) {
  uint32_t lo = c * WFP_ENERGY_CHUNK,
           hi = lo + WFP_ENERGY_CHUNK < a->n ? lo + WFP_ENERGY_CHUNK : a->n;
  float r = 0.0f;
  for (uint32_t i = lo; i < hi; i++)
    r = fmaxf(r, a->pos[i].w);
  a->partial[c] = r;
}

WF_HD static inline void wfp_energy_rmax_final(const wfp_energy_grid_args *a) {
  float r = 0.0f;
  for (uint32_t c = 0; c < a->chunks; c++)
    r = fmaxf(r, a->partial[c]);
  *a->inv_cell = r > 0.0f ? 1.0f / (2.0f * r) : 1.0f;
}

WF_HD static inline void wfp_energy_keys_elem(const wfp_energy_grid_args *a, uint32_t i) {
  a->keys[i] = wfp_energy_key(a->pos[i], *a->inv_cell, a->table);
  a->vals[i] = i;
}

WF_HD static inline void wfp_energy_starts_elem(const wfp_energy_grid_args *a, uint32_t s) {
  uint32_t lo = 0, hi = a->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2u;
    if (a->sorted[mid] < s)
      lo = mid + 1u;
    else
      hi = mid;
  }
  a->start[s] = lo;
}

/* Half the contact energy of the pair (i at pi, inverse mass wi, material mi; j): the overlap and
 * the coefficients of wfp_pair (the means of the two materials'); none for two kinematic
 * particles, which exert no force on each other. *shear gets half the history's part. */
WF_HD static inline double wfp_pair_energy(const wfp_energy_args *a, uint32_t i, wfp_f4 pi,
                                           float wi, const wfp_material *mi, uint32_t j,
                                           double *shear) {
  wfp_f4 pj = a->pos[j];
  float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
  float d2 = wfp_dot3(dx, dy, dz, dx, dy, dz);
  float R = pi.w + pj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return 0.0;
  if (wi + a->vel[j].w == 0.0f) return 0.0;
  if (wi < 0.0f || a->vel[j].w < 0.0f) return 0.0; /* not born yet: touches nothing */
  wfp_coef c = wfp_pair_coef(mi, &a->mats[a->mat[j]]);
  float delta = R - sqrtf(d2), rstar = pi.w * pj.w / R;
  double e = wfp_normal_energy(a->model, &c, rstar, delta);
  if (!(wi > 0.0f)) return 0.5 * e; /* kinematic: its dynamic partner counts the history */
  const wfp_hist *h = wfp_energy_slot_of(a, i, (a->gid ? a->gid[j] : j) + 1u);
  double s = h ? wfp_history_energy(a->model, &c, rstar, delta, h) : 0.0;
  double share = a->vel[j].w > 0.0f ? 0.5 : 1.0; /* two dynamic sides: each its own slot's half */
  *shear += share * s;
  return 0.5 * e + share * s;
}

/* The energy of a dynamic particle's contact with collider k (x, material m), as
 * wfp_collider_force sees it: a wall of the particle's material with the collider's stiffness
 * (0: the material's). *shear gets the history's part. */
WF_HD static inline double wfp_collider_energy(const wfp_energy_args *a, uint32_t i, uint32_t k,
                                               float time, wfp_f4 x, const wfp_material *m,
                                               double *shear) {
  const wfp_collider *col = &a->colliders[k];
  float n[3];
  float delta = x.w - wfp_collider_sdf(col, time, x.x, x.y, x.z, n);
  if (!(delta > 0.0f)) return 0.0;
  wfp_coef c; /* the springs' coefficients; dashpots and friction store nothing */
  c.zeta = 0.0f, c.cn = 0.0f, c.ct = 0.0f, c.mu_s = 0.0f, c.mu = 0.0f, c.coh = 0.0f;
  c.kn = col->stiffness > 0.0f ? col->stiffness : m->stiffness;
  c.estar = 1.0f / (m->young_term + m->young_term);
  c.gstar = 1.0f / (m->shear_term + m->shear_term);
  c.ratio = m->kt_ratio;
  c.mu_r = m->rolling;
  double e = wfp_normal_energy(a->model, &c, x.w, delta);
  const wfp_hist *h = wfp_energy_slot_of(a, i, WFP_HIST_COLLIDER + k);
  double s = h ? wfp_history_energy(a->model, &c, x.w, delta, h) : 0.0;
  *shear += s;
  return e + s;
}

WF_HD static inline void wfp_energy_elem(const wfp_energy_args *a, uint32_t i) {
  wfp_f4 x = a->pos[i], v = a->vel[i];
  const wfp_material *m = &a->mats[a->mat[i]];
  wfp_energy e;
  e.kinetic = 0.0, e.rotational = 0.0, e.potential = 0.0;
  e.contact = 0.0, e.collider = 0.0, e.shear = 0.0;
  if (v.w > 0.0f) {
    double mass = 1.0 / (double)v.w;
    e.kinetic = 0.5 * mass * ((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
    wfp_f4 w = a->omega[i];
    double r = x.w;
    e.rotational =
        0.5 * 0.4 * mass * r * r * ((double)w.x * w.x + (double)w.y * w.y + (double)w.z * w.z);
    e.potential = -mass * ((double)a->gravity[0] * x.x + (double)a->gravity[1] * x.y +
                           (double)a->gravity[2] * x.z + a->g_origin);
  }
  float inv_cell = *a->inv_cell;
  int32_t c[3] = {wfp_energy_cell(x.x, inv_cell), wfp_energy_cell(x.y, inv_cell),
                  wfp_energy_cell(x.z, inv_cell)};
  uint32_t seen[27];
  int n_seen = 0;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        uint32_t s = wfp_energy_slot(c[0] + dx, c[1] + dy, c[2] + dz, a->table);
        int dup = 0;
        for (int q = 0; q < n_seen; q++)
          dup |= seen[q] == s;
        if (dup) continue; /* two cells in one slot: visited once */
        seen[n_seen++] = s;
        for (uint32_t t = a->start[s]; t < a->start[s + 1]; t++)
          if (a->order[t] != i)
            e.contact += wfp_pair_energy(a, i, x, v.w, m, a->order[t], &e.shear);
      }
  if (v.w > 0.0f) {
    float time = (float)a->clock->time;
    for (uint32_t k = 0; k < a->n_colliders; k++)
      e.collider += wfp_collider_energy(a, i, k, time, x, m, &e.shear);
  }
  a->out[i] = e;
}

extern const wf_kernel wfp_energy_kernel;        /* n = particles */
extern const wf_kernel wfp_energy_rmax_kernel;   /* n = chunks (wfp_energy_grid_args) */
extern const wf_kernel wfp_energy_inv_kernel;    /* n = 1 */
extern const wf_kernel wfp_energy_keys_kernel;   /* n = particles */
extern const wf_kernel wfp_energy_starts_kernel; /* n = table + 1 */
#ifdef WEFT_HAVE_CUDA
void wfp_energy_cuda(const void *args, size_t n, void *stream);
void wfp_energy_rmax_cuda(const void *args, size_t n, void *stream);
void wfp_energy_inv_cuda(const void *args, size_t n, void *stream);
void wfp_energy_keys_cuda(const void *args, size_t n, void *stream);
void wfp_energy_starts_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
