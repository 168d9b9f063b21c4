/* The particles' energies (wf_particles_energy_get), per particle on the device, written once for
 * both backends like particle_math.h. Kept apart from the contact kernels: it reads the state, the
 * materials and the colliders, and finds its neighbours through a grid of its own.
 *
 * Each particle i writes its own wfp_energy row:
 *   kinetic    ½ m v² (dynamic particles: inverse mass > 0; kinematic ones have no finite mass)
 *   potential  -m g·x (dynamic particles; zero at the origin: m g y for g = (0, -g, 0))
 *   contact    half of the energy of each particle contact it is in (each pair counted once
 *              in the sum over both particles), the normal spring's wfp_contact_energy
 *   collider   the energy of its contacts with colliders (dynamic particles, as the forces)
 * Dashpots, friction and cohesion are not potentials: they are left out.
 *
 * The neighbours: a grid of cells of side `cell` (at least the largest diameter, so a touching
 * pair is in the same or adjacent cells) hashed into a table of `table` (a power of two) slots,
 * built on the host from the state in global-id order (wfp_energy_key): order[] holds the
 * particles sorted by slot, each slot's in global-id order, slot s being order[start[s] ..
 * start[s + 1]). A particle visits its 27 cells' slots in a fixed order, each distinct slot once.
 * Every row depends only on the state, not on how the solver is split: the host sums the rows in
 * global-id order in double, so the totals are bitwise the same for 1..N partitions and, with
 * -ffp-contract=off / -fmad=false, on the CPU and CUDA backends. */
#ifndef WEFT_PARTICLE_ENERGY_H
#define WEFT_PARTICLE_ENERGY_H

#include "particle_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wfp_energy {
  double kinetic, potential, contact, collider;
} wfp_energy;

typedef struct wfp_energy_args {
  const wfp_f4 *pos, *vel; /* global-id order */
  const uint16_t *mat;
  const uint32_t *order, *start; /* the grid (above) */
  const wfp_material *mats;
  const wfp_collider *colliders;
  const wfp_clock *clock; /* the colliders' time */
  wfp_energy *out;
  float gravity[3];
  float inv_cell;
  uint32_t table; /* slots, a power of two */
  uint32_t n_colliders;
} wfp_energy_args;

/* THE SEAM: the elastic energy stored in a contact's normal spring of stiffness k at overlap
 * delta > 0. The linear spring-dashpot (wfp_contact_force: F = k delta) stores ½ k delta². A
 * Hertz contact (F = k_n delta^(3/2), k_n = 4/3 E* sqrt(R*)) stores the integral of its force,
 * 2/5 k_n delta^(5/2) = 8/15 E* sqrt(R*) delta^(5/2): replace this function (and its k) with the
 * contact model. */
WF_HD static inline double wfp_contact_energy(float k, float delta) {
  return 0.5 * (double)k * (double)delta * (double)delta;
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

/* Half the contact energy of the pair (i at pi, vi, material mi; j): the overlap and the spring
 * constant of wfp_pair (the mean of the two materials'); none for two kinematic particles, which
 * exert no force on each other. */
WF_HD static inline double wfp_pair_energy(const wfp_energy_args *a, wfp_f4 pi, float wi,
                                           const wfp_material *mi, uint32_t j) {
  wfp_f4 pj = a->pos[j];
  float dx = pi.x - pj.x, dy = pi.y - pj.y, dz = pi.z - pj.z;
  float d2 = wfp_dot3(dx, dy, dz, dx, dy, dz);
  float R = pi.w + pj.w;
  if (!(d2 < R * R) || d2 == 0.0f) return 0.0;
  if (wi + a->vel[j].w == 0.0f) return 0.0;
  if (wi < 0.0f || a->vel[j].w < 0.0f) return 0.0; /* not born yet: touches nothing */
  float k = 0.5f * (mi->stiffness + a->mats[a->mat[j]].stiffness);
  return 0.5 * wfp_contact_energy(k, R - sqrtf(d2));
}

WF_HD static inline void wfp_energy_elem(const wfp_energy_args *a, uint32_t i) {
  wfp_f4 x = a->pos[i], v = a->vel[i];
  const wfp_material *m = &a->mats[a->mat[i]];
  wfp_energy e;
  e.kinetic = 0.0, e.potential = 0.0, e.contact = 0.0, e.collider = 0.0;
  if (v.w > 0.0f) {
    double mass = 1.0 / (double)v.w;
    e.kinetic = 0.5 * mass * ((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
    e.potential = -mass * ((double)a->gravity[0] * x.x + (double)a->gravity[1] * x.y +
                           (double)a->gravity[2] * x.z);
  }
  int32_t c[3] = {wfp_energy_cell(x.x, a->inv_cell), wfp_energy_cell(x.y, a->inv_cell),
                  wfp_energy_cell(x.z, a->inv_cell)};
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
          if (a->order[t] != i) e.contact += wfp_pair_energy(a, x, v.w, m, a->order[t]);
      }
  if (v.w > 0.0f) {
    float time = (float)a->clock->time;
    for (uint32_t k = 0; k < a->n_colliders; k++) {
      const wfp_collider *col = &a->colliders[k];
      float n[3];
      float delta = x.w - wfp_collider_sdf(col, time, x.x, x.y, x.z, n);
      if (!(delta > 0.0f)) continue;
      e.collider +=
          wfp_contact_energy(col->stiffness > 0.0f ? col->stiffness : m->stiffness, delta);
    }
  }
  a->out[i] = e;
}

extern const wf_kernel wfp_energy_kernel; /* n = particles */
#ifdef WEFT_HAVE_CUDA
void wfp_energy_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
