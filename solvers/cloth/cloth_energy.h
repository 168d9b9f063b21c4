/* The cloth's energies (wf_cloth_energy_get), per vertex on the device, written once for both
 * backends like cloth_math.h. Internal to the solver.
 *
 * Each owned vertex i writes its own wfc_energy row:
 *   kinetic    ½ m v² (free vertices only: a pinned or attached vertex, inverse mass 0, has no
 *              finite mass and holds none)
 *   potential  -m g·x (free vertices only; zero at the origin, so with g = (0, -g, 0) it is
 *              m g y: the height above y = 0)
 *   elastic    per kind (stretch, shear, bend), the vertex's share of the energy of the springs
 *              or XPBD constraints it belongs to: a spring ½ k (|d| - L)² gives half to each end,
 *              an XPBD constraint C² / (2 α) (α its compliance, not divided by dt²) gives 1/2 to
 *              each end of a distance constraint and 1/4 to each vertex of a dihedral hinge. A
 *              constraint of compliance 0 is rigid: it holds no energy (its force is a Lagrange
 *              multiplier, not the gradient of a potential) and adds 0.
 * Colliders and self-collision push vertices out by projection, not with a spring: they store no
 * energy. Spring dashpots and XPBD damping dissipate; they are not energies either.
 *
 * Why a vertex's share and not a spring's or a constraint's row: every partition holds the
 * springs and constraints of its owned vertices in the global order (cloth_parts.h), so a
 * vertex's row is computed from the same bits in the same order however the cloth is split. The
 * host sums the rows in global vertex order in double: the totals are bitwise equal for 1..N
 * partitions and, with -ffp-contract=off / -fmad=false, on the CPU and CUDA backends.
 *
 * The arithmetic is double (from the float state): |d| - L of a stiff spring is a small
 * difference of two lengths, which float would leave with few correct digits. */
#ifndef WEFT_CLOTH_ENERGY_H
#define WEFT_CLOTH_ENERGY_H

#include "cloth_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One vertex's energies, J. */
typedef struct wfc_energy {
  double kinetic, potential;
  double elastic[3]; /* WFC_STRETCH, WFC_SHEAR, WFC_BEND */
  double mass;       /* free vertices: m (the host adds -m g·origin to the potential) */
} wfc_energy;

typedef struct wfc_energy_args {
  const wfp_f4 *pos, *vel;   /* state half 0 (owned vertices and ghosts) */
  const uint32_t *adj_start; /* mass-spring: the vertex's springs (CSR), else NULL */
  const wfc_link *adj;
  const uint32_t *con_start; /* XPBD: the constraints each owned vertex belongs to (CSR of */
  const uint32_t *con_list;  /* indices into cons, ascending), else NULL */
  const wfc_constraint *cons;
  wfc_energy *out; /* one row per owned vertex */
  float gravity[3];
  float k[3];          /* spring constants per kind, N/m */
  float compliance[3]; /* XPBD compliance per kind (distance m/N, bending 1/(N·m)) */
  uint32_t n;          /* owned vertices */
} wfc_energy_args;

/* ½ k (|pj - xi| - L)², in double. */
WF_HD static inline double wfc_spring_energy(wfp_f4 xi, wfp_f4 xj, float rest, float k) {
  double dx = (double)xj.x - xi.x, dy = (double)xj.y - xi.y, dz = (double)xj.z - xi.z;
  double s = sqrt(dx * dx + dy * dy + dz * dz) - (double)rest;
  return 0.5 * (double)k * s * s;
}

/* C² / (2 α) of XPBD constraint c (0 for α = 0 and for a degenerate hinge). C is the solver's
 * (wfc_solve_elem): |x0 - x1| - L for distance, the dihedral angle minus its rest angle (wrapped
 * to [-π, π]) for bending. */
WF_HD static inline double wfc_constraint_energy(const wfp_f4 *pos, wfc_constraint c,
                                                 float compliance) {
  if (!(compliance > 0.0f)) return 0.0;
  double C;
  if (c.kind != WFC_BEND) {
    wfp_f4 a = pos[c.v[0]], b = pos[c.v[1]];
    double dx = (double)a.x - b.x, dy = (double)a.y - b.y, dz = (double)a.z - b.z;
    C = sqrt(dx * dx + dy * dy + dz * dz) - (double)c.rest;
  } else {
    wfc_v3 r[4];
    wfc_v3 o = wfc_xyz(pos[c.v[2]]);
    for (int k = 0; k < 4; k++)
      r[k] = k == 2 ? wfc_v(0.0f, 0.0f, 0.0f) : wfc_sub(wfc_xyz(pos[c.v[k]]), o);
    float theta;
    wfc_v3 g[4];
    if (!wfc_dihedral(r[0], r[1], r[2], r[3], &theta, g)) return 0.0;
    C = (double)theta - (double)c.rest;
    if (C > 3.14159265358979323846) C -= 6.28318530717958647692;
    if (C < -3.14159265358979323846) C += 6.28318530717958647692;
  }
  return C * C / (2.0 * (double)compliance);
}

WF_HD static inline void wfc_energy_elem(const wfc_energy_args *a, uint32_t i) {
  wfc_energy e;
  wfp_f4 x = a->pos[i], v = a->vel[i];
  e.kinetic = 0.0, e.potential = 0.0, e.mass = 0.0;
  e.elastic[0] = 0.0, e.elastic[1] = 0.0, e.elastic[2] = 0.0;
  if (x.w > 0.0f) {
    double m = 1.0 / (double)x.w;
    e.mass = m;
    e.kinetic = 0.5 * m * ((double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z);
    e.potential = -m * ((double)a->gravity[0] * x.x + (double)a->gravity[1] * x.y +
                        (double)a->gravity[2] * x.z);
  }
  if (a->adj_start) /* half of each spring */
    for (uint32_t s = a->adj_start[i]; s < a->adj_start[i + 1]; s++) {
      wfc_link l = a->adj[s];
      uint32_t kind = l.other_kind >> 30;
      e.elastic[kind] += 0.5 * wfc_spring_energy(x, a->pos[l.other_kind & WFC_LINK_INDEX_MASK],
                                                 l.rest, a->k[kind]);
    }
  if (a->con_start) /* a share of each constraint */
    for (uint32_t s = a->con_start[i]; s < a->con_start[i + 1]; s++) {
      wfc_constraint c = a->cons[a->con_list[s]];
      double share = c.kind == WFC_BEND ? 0.25 : 0.5;
      e.elastic[c.kind] += share * wfc_constraint_energy(a->pos, c, a->compliance[c.kind]);
    }
  a->out[i] = e;
}

extern const wf_kernel wfc_energy_kernel; /* n = owned vertices */
#ifdef WEFT_HAVE_CUDA
void wfc_energy_cuda(const void *args, size_t n, void *stream);
#endif

/* The XPBD constraint lists of vertices [0, n) (cloth_energy.c): con_start (n + 1) and con_list
 * (malloc'd, the caller frees both) from the constraints (count of them), each vertex's in
 * ascending order. WF_ERR_OUT_OF_MEMORY on failure. */
wf_status wfc_energy_lists(const wfc_constraint *cons, uint32_t count, uint32_t n,
                           uint32_t **con_start, uint32_t **con_list);

#ifdef __cplusplus
}
#endif
#endif
