/* Emitters' particles made on the host (emit.h, wf_scene_emitter_points): cubic lattices in a
 * cylinder or with a distribution of radii, random packings, and files.
 *
 * Determinism: every random number comes from splitmix64 streams keyed by the emitter's seed and
 * what the number is for (a particle's radius: its index; a lattice point's jitter: its global id,
 * as the solver's lattice does; the random packing: one stream for all its attempts), and
 * positions are computed with IEEE basic operations only, so a scene gives the same bits on any
 * machine; log-normal radii also call the C library's exp and log.
 *
 * Random packing is random sequential addition (RSA): the radii are drawn until their volume
 * reaches the target fraction of the region's, then placed largest first, each at uniformly
 * random points of the region (shrunk by its radius, so every sphere lies inside) until one
 * overlaps no particle placed before; a grid of cells 2 r_max wide holds the placed particles,
 * so a try looks at 27 cells. After UNIFORM_TRIES failures (and for every particle after that
 * of about the same radius) the tries go to voxels of side r_max / 2 that are still open: a
 * voxel is left out when the list is made, or closes when a failed try finds it, wholly ruled out
 * (outside the region, or within r + r_j of one placed centre from all its corners), or after
 * CELL_FAILS failed tries. The voids that remain near jamming are then found in far fewer tries
 * than uniform sampling needs (Zhang and Torquato, Phys. Rev. E 88, 053312, 2013, do the same with
 * exact voxel coverage); placement is uniform over the open voxels rather than over the region. RSA
 * of equal spheres jams at 0.383 in the bulk (Torquato, Uche and Stillinger, Phys. Rev. E 74,
 * 061308, 2006), and walls lower it; WF_SCENE_RANDOM_PACKING_MAX is what the scene accepts, and a
 * packing that still jams (a particle finds no room: every cell closed, or MAX_TRIES) fails naming
 * the emitter and the fraction it reached. Denser packings come from letting the particles settle
 * under gravity.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "internal/error.h"

#define WFE_PI 3.14159265358979323846

enum {
  MAX_TRIES = 2000000,    /* a particle that finds no room in this many tries jams the packing */
  UNIFORM_TRIES = 300,    /* tries anywhere in the region before trying the open voxels */
  CELL_FAILS = 300,       /* tries without room that close a voxel */
  MAX_POUR_TRIES = 100000 /* a pour's particle that finds no room in this many tries fails */
};

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
/* Uniform in [0, 1) with 53 random bits: exact in double. */
static double u01(uint64_t *s) {
  *s = splitmix64(*s);
  return (double)(*s >> 11) * (1.0 / 9007199254740992.0);
}
/* Streams of an emitter's numbers, one per purpose. */
enum { TAG_RADIUS = 1, TAG_PLACE = 2 };
static uint64_t stream(uint64_t seed, uint64_t tag, uint64_t index) {
  return splitmix64(splitmix64(seed ^ (tag << 56)) ^ splitmix64(index));
}

bool wfe_solver_lattice(const wf_scene_emitter *e) {
  return (e->shape == WF_SCENE_SHAPE_BOX || e->shape == WF_SCENE_SHAPE_SPHERE) &&
         e->packing == WF_SCENE_PACK_LATTICE && e->radius_distribution == WF_SCENE_RADII_FIXED;
}

/* Half extents of the region's bounding box. */
static void bound_half(const wf_scene_emitter *e, double h[3]) {
  switch (e->shape) {
  case WF_SCENE_SHAPE_BOX: memcpy(h, e->half_extents, sizeof(double) * 3); break;
  case WF_SCENE_SHAPE_SPHERE: h[0] = h[1] = h[2] = e->sphere_radius; break;
  case WF_SCENE_SHAPE_CYLINDER: h[0] = h[2] = e->cylinder_radius, h[1] = 0.5 * e->height; break;
  default: h[0] = h[1] = h[2] = 0.0;
  }
}

double wfe_region_volume(const wf_scene_emitter *e) {
  double h[3];
  bound_half(e, h);
  switch (e->shape) {
  case WF_SCENE_SHAPE_BOX: return 8.0 * h[0] * h[1] * h[2];
  case WF_SCENE_SHAPE_SPHERE: return 4.0 / 3.0 * WFE_PI * h[0] * h[0] * h[0];
  case WF_SCENE_SHAPE_CYLINDER: return WFE_PI * h[0] * h[0] * e->height;
  default: return 0.0;
  }
}

/* Particle i's radius (its own stream: the same whatever else the emitter draws). Log-normal:
 * z standard normal by Marsaglia's polar method, redrawn while ln r falls outside the
 * truncation. */
static double radius_of(const wf_scene_emitter *e, uint64_t i) {
  if (e->radius_distribution == WF_SCENE_RADII_FIXED) return e->radius;
  uint64_t s = stream(e->seed, TAG_RADIUS, i);
  if (e->radius_distribution == WF_SCENE_RADII_UNIFORM)
    return e->radius_min + (e->radius_max - e->radius_min) * u01(&s);
  for (;;) {
    double a = 2.0 * u01(&s) - 1.0, b = 2.0 * u01(&s) - 1.0, q = a * a + b * b;
    if (q >= 1.0 || q == 0.0) continue;
    double z = a * sqrt(-2.0 * log(q) / q);
    double r = e->radius * exp(e->radius_sigma * z);
    if (r >= e->radius_min && r <= e->radius_max) return r;
  }
}

static double largest_radius(const wf_scene_emitter *e) {
  return e->radius_distribution == WF_SCENE_RADII_FIXED ? e->radius : e->radius_max;
}

/* ---- lattices --------------------------------------------------------------------------------
 */

static void lattice_cells(const wf_scene_emitter *e, uint64_t cells[3]) {
  double h[3];
  bound_half(e, h);
  for (int k = 0; k < 3; k++) {
    /* from the float values the solver's lattice gets (part.c), so that both count alike */
    double c = floor(2.0 * (double)(float)h[k] / (double)(float)e->spacing + 1e-6);
    cells[k] = c < 4e9 ? (uint64_t)c : UINT64_MAX;
  }
}

/* The offset of lattice point (ix, iy, iz) from the centre, in the float arithmetic of the
 * solver's lattice (solvers/particle/part.c), and whether the region holds it. */
static bool lattice_point(const wf_scene_emitter *e, const uint64_t cells[3], uint64_t ix,
                          uint64_t iy, uint64_t iz, float d[3]) {
  float sp = (float)e->spacing;
  d[0] = ((float)ix + 0.5f) * sp - 0.5f * (float)cells[0] * sp;
  d[1] = ((float)iy + 0.5f) * sp - 0.5f * (float)cells[1] * sp;
  d[2] = ((float)iz + 0.5f) * sp - 0.5f * (float)cells[2] * sp;
  if (e->shape == WF_SCENE_SHAPE_SPHERE) {
    float r = (float)e->sphere_radius;
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= r * r;
  }
  if (e->shape == WF_SCENE_SHAPE_CYLINDER) {
    float r = (float)e->cylinder_radius;
    return d[0] * d[0] + d[2] * d[2] <= r * r;
  }
  return true;
}

/* Lattice points of a cylinder: the disc's points (x, z) times the layers along y. */
static uint64_t cylinder_lattice_count(const wf_scene_emitter *e, const uint64_t cells[3]) {
  if (cells[0] * cells[2] > 100000000ull) /* beyond counting one by one: the area ratio */
    return (uint64_t)((double)cells[0] * (double)cells[1] * (double)cells[2] * WFE_PI / 4.0);
  uint64_t disc = 0;
  float d[3];
  for (uint64_t iz = 0; iz < cells[2]; iz++)
    for (uint64_t ix = 0; ix < cells[0]; ix++)
      disc += lattice_point(e, cells, ix, 0, iz, d);
  return disc * cells[1];
}

/* The solver's jitter: uniform in [-1, 1) from the particle's global id (part.c's unit_jitter). */
static float unit_jitter(uint64_t *state) {
  *state = splitmix64(*state);
  return (float)((double)(*state >> 40) / (double)(1ull << 23) - 1.0);
}

/* Positions relative to o: the centre (as the solver's lattice takes it, a float) plus the offset,
 * in double, minus o, rounded once (solvers/particle/part.c, lattice_points). */
static uint64_t lattice_fill(const wf_scene_emitter *e, uint32_t first_id, const double o[3],
                             float (*pos)[4], uint64_t count) {
  uint64_t cells[3], n = 0;
  lattice_cells(e, cells);
  for (uint64_t iz = 0; iz < cells[2]; iz++)
    for (uint64_t iy = 0; iy < cells[1]; iy++)
      for (uint64_t ix = 0; ix < cells[0]; ix++) {
        float d[3];
        if (!lattice_point(e, cells, ix, iy, iz, d)) continue;
        if (n == count) return count + 1;
        uint64_t rng = e->seed ^ splitmix64(first_id + n);
        for (int k = 0; k < 3; k++)
          d[k] += (float)e->jitter * unit_jitter(&rng);
        for (int k = 0; k < 3; k++)
          pos[n][k] = (float)((double)(float)e->center[k] + (double)d[k] - o[k]);
        pos[n][3] = (float)radius_of(e, n);
        n++;
      }
  return n;
}

/* ---- random packing -------------------------------------------------------------------------
 */

/* Particles of a random packing: radii drawn until their volume reaches the target. */
static uint64_t random_count(const wf_scene_emitter *e) {
  double target = e->packing_fraction * wfe_region_volume(e), v = 0.0;
  double rmin = e->radius_distribution == WF_SCENE_RADII_FIXED ? e->radius : e->radius_min;
  if (!(rmin > 0) || target / (4.0 / 3.0 * WFE_PI * rmin * rmin * rmin) > 2e9) return UINT64_MAX;
  uint64_t n = 0;
  while (v < target) {
    double r = radius_of(e, n++);
    v += 4.0 / 3.0 * WFE_PI * r * r * r;
  }
  return n;
}

typedef struct rsa_grid {
  double lo[3], inv;
  int64_t dims[3];
  int32_t *head, *next;
} rsa_grid;

static int64_t cell_of(const rsa_grid *g, const double x[3], int64_t c[3]) {
  for (int k = 0; k < 3; k++) {
    c[k] = (int64_t)floor((x[k] - g->lo[k]) * g->inv);
    c[k] = c[k] < 0 ? 0 : c[k] >= g->dims[k] ? g->dims[k] - 1 : c[k];
  }
  return (c[2] * g->dims[1] + c[1]) * g->dims[0] + c[0];
}

typedef struct by_radius {
  double r;
  uint64_t i;
} by_radius;
static int larger_first(const void *a, const void *b) {
  const by_radius *x = a, *y = b;
  if (x->r != y->r) return x->r > y->r ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* The first centre listed in the cell (dx, dy, dz) away from cell cc, or -1 (none, or outside
 * the grid): where both walks below start. */
static int32_t neighbour_head(const rsa_grid *g, const int64_t cc[3], int64_t dx, int64_t dy,
                              int64_t dz) {
  int64_t q[3] = {cc[0] + dx, cc[1] + dy, cc[2] + dz};
  for (int k = 0; k < 3; k++)
    if (q[k] < 0 || q[k] >= g->dims[k]) return -1;
  return g->head[(q[2] * g->dims[1] + q[1]) * g->dims[0] + q[0]];
}

/* Whether a sphere of radius r at x (from the centre) lies in the region and overlaps no
 * placed one. */
static bool fits(const wf_scene_emitter *e, const rsa_grid *g, const double h[3],
                 const double (*c)[3], const double *rad, const double x[3], double r) {
  for (int k = 0; k < 3; k++)
    if (!(fabs(x[k]) <= h[k] - r)) return false;
  if (e->shape == WF_SCENE_SHAPE_SPHERE &&
      x[0] * x[0] + x[1] * x[1] + x[2] * x[2] > (h[0] - r) * (h[0] - r))
    return false;
  if (e->shape == WF_SCENE_SHAPE_CYLINDER && x[0] * x[0] + x[2] * x[2] > (h[0] - r) * (h[0] - r))
    return false;
  int64_t cc[3];
  cell_of(g, x, cc);
  for (int64_t dz = -1; dz <= 1; dz++)
    for (int64_t dy = -1; dy <= 1; dy++)
      for (int64_t dx = -1; dx <= 1; dx++) {
        for (int32_t j = neighbour_head(g, cc, dx, dy, dz); j >= 0; j = g->next[j]) {
          double d0 = x[0] - c[j][0], d1 = x[1] - c[j][1], d2 = x[2] - c[j][2];
          double rr = r + rad[j];
          if (d0 * d0 + d1 * d1 + d2 * d2 < rr * rr) return false;
        }
      }
  return true;
}

/* Whether every point of voxel v (side a, lower corner lo) is ruled out for the centre of a
 * sphere of radius r: outside the shrunk region (sphere, cylinder: its corners all outside), or
 * within r + r_j of a placed centre j from all its corners. */
static bool voxel_closed(const wf_scene_emitter *e, const rsa_grid *g, const double h[3],
                         const double (*c)[3], const double *rad, const double lo[3], double a,
                         double r) {
  double mid[3], half = 0.5 * a;
  for (int k = 0; k < 3; k++) {
    mid[k] = lo[k] + half;
    if (lo[k] > h[k] - r || lo[k] + a < -(h[k] - r)) return true;
  }
  if (e->shape != WF_SCENE_SHAPE_BOX) { /* nearest point of the voxel to the axis or centre */
    double q = 0.0;
    for (int k = 0; k < 3; k++) {
      if (e->shape == WF_SCENE_SHAPE_CYLINDER && k == 1) continue;
      double d = fabs(mid[k]) - half;
      q += d > 0 ? d * d : 0.0;
    }
    if (q > (h[0] - r) * (h[0] - r)) return true;
  }
  int64_t cc[3];
  cell_of(g, mid, cc);
  for (int64_t dz = -1; dz <= 1; dz++)
    for (int64_t dy = -1; dy <= 1; dy++)
      for (int64_t dx = -1; dx <= 1; dx++) {
        for (int32_t j = neighbour_head(g, cc, dx, dy, dz); j >= 0; j = g->next[j]) {
          double far = 0.0; /* the voxel's farthest point from c_j */
          for (int k = 0; k < 3; k++) {
            double d = fabs(c[j][k] - mid[k]) + half;
            far += d * d;
          }
          double rr = r + rad[j];
          if (far < rr * rr) return true;
        }
      }
  return false;
}

static wf_status random_fill(const wf_scene_emitter *e, const double o[3], float (*pos)[4],
                             uint64_t n) {
  static const char fn[] = "wf_scene_emitter_points";
  double h[3];
  bound_half(e, h);
  double rmax = largest_radius(e);
  rsa_grid g = {.inv = 1.0 / (2.0 * rmax)};
  double cells = 1.0, voxels = 1.0;
  int64_t vd[3]; /* voxels of side rmax / 2 (rmax where that would be too many) */
  double a = 0.5 * rmax;
  for (int k = 0; k < 3; k++)
    voxels *= floor(2.0 * h[k] / a) + 1;
  if (voxels > (double)(1 << 27)) a = rmax, voxels = 1.0;
  for (int k = 0; k < 3; k++) {
    g.lo[k] = -h[k];
    g.dims[k] = (int64_t)floor(2.0 * h[k] * g.inv) + 1;
    cells *= (double)g.dims[k];
    vd[k] = (int64_t)floor(2.0 * h[k] / a) + 1;
    if (a == rmax) voxels *= (double)vd[k];
  }
  if (cells > 1e9 || voxels > (double)(1u << 30))
    return wf__error(WF_ERR_INVALID, fn,
                     "emitter '%s': the random packing's grid would have %.3g cells (region much "
                     "larger than its particles)",
                     e->name, voxels);
  by_radius *order = malloc(n * sizeof *order);
  double(*c)[3] = malloc(n * sizeof *c);
  g.head = malloc((size_t)cells * sizeof *g.head);
  g.next = malloc(n * sizeof *g.next);
  double *rad = malloc(n * sizeof *rad);
  int32_t *open = malloc((size_t)voxels * sizeof *open);
  uint16_t *fails = malloc((size_t)voxels * sizeof *fails);
  int64_t n_open = 0;
  double open_r = INFINITY; /* the radius the open list was made for */
  wf_status st = WF_OK;
  if (!order || !c || !g.head || !g.next || !rad || !open || !fails) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "emitter '%s': out of host memory", e->name);
    goto done;
  }
  memset(g.head, 0xff, (size_t)cells * sizeof *g.head);
  for (uint64_t i = 0; i < n; i++)
    order[i] = (by_radius){radius_of(e, i), i};
  qsort(order, n, sizeof *order, larger_first);
  uint64_t s = stream(e->seed, TAG_PLACE, 0);
  double placed_volume = 0.0, volume = wfe_region_volume(e);
  for (uint64_t p = 0; p < n; p++) {
    double r = order[p].r, x[3];
    bool ok = false;
    /* uniform tries first; then tries in the voxels still open: a voxel closes when a try finds
     * it wholly ruled out, or after CELL_FAILS tries in a row found no room in it. The list is
     * made anew when the radius has shrunk by a tenth since it was made (smaller spheres fit
     * where larger did not). */
    bool voxels_now = open_r < INFINITY && r >= 0.9 * open_r; /* no more uniform tries */
    for (int t = voxels_now ? UNIFORM_TRIES : 0; t < MAX_TRIES && !ok; t++) {
      int64_t ov = -1;
      double lo[3];
      if (t < UNIFORM_TRIES) {
        for (int k = 0; k < 3; k++)
          x[k] = (2.0 * u01(&s) - 1.0) * (h[k] - r);
      } else {
        if (t == UNIFORM_TRIES && r < 0.9 * open_r) { /* the voxels with room, in order */
          n_open = 0, open_r = r;
          for (int64_t i = 0; i < (int64_t)voxels; i++) {
            double vlo[3] = {-h[0] + (double)(i % vd[0]) * a,
                             -h[1] + (double)(i / vd[0] % vd[1]) * a,
                             -h[2] + (double)(i / vd[0] / vd[1]) * a};
            if (!voxel_closed(e, &g, h, c, rad, vlo, a, r))
              open[n_open] = (int32_t)i, fails[n_open++] = 0;
          }
        }
        if (n_open == 0) break;
        ov = (int64_t)(u01(&s) * (double)n_open);
        int64_t v = open[ov];
        int64_t q[3] = {v % vd[0], v / vd[0] % vd[1], v / vd[0] / vd[1]};
        for (int k = 0; k < 3; k++) {
          lo[k] = -h[k] + (double)q[k] * a;
          x[k] = lo[k] + u01(&s) * a;
        }
      }
      ok = fits(e, &g, h, c, rad, x, r);
      if (ov >= 0 && !ok &&
          (++fails[ov] >= CELL_FAILS || voxel_closed(e, &g, h, c, rad, lo, a, r))) {
        n_open--; /* close it: the last open voxel takes its place */
        open[ov] = open[n_open], fails[ov] = fails[n_open];
      }
    }
    if (!ok) {
      st = wf__error(WF_ERR_INVALID, fn,
                     "emitter '%s': the random packing jammed at packing fraction %.3f after %llu "
                     "of %llu particles (target %.3f): no room found for the next one; lower "
                     "packing_fraction (random sequential addition stops near 0.38 in the bulk, "
                     "less against walls), or use a lattice and let the particles settle",
                     e->name, placed_volume / volume, (unsigned long long)p, (unsigned long long)n,
                     e->packing_fraction);
      goto done;
    }
    int64_t cc[3];
    int64_t cell = cell_of(&g, x, cc);
    memcpy(c[p], x, sizeof x);
    rad[p] = r;
    g.next[p] = g.head[cell], g.head[cell] = (int32_t)p;
    placed_volume += 4.0 / 3.0 * WFE_PI * r * r * r;
    for (int k = 0; k < 3; k++) /* x is relative to the centre: the same wherever it is */
      pos[p][k] = (float)((e->center[k] - o[k]) + x[k]);
    pos[p][3] = (float)r;
  }
done:
  free(order), free(c), free(g.head), free(g.next), free(rad), free(open), free(fails);
  return st;
}

/* ---- continuous emitters (an inlet: a disc, a rectangle, an annulus) ---------------------------
 */

bool wfe_pours(const wf_scene_emitter *e) {
  return e->shape == WF_SCENE_SHAPE_DISC || e->shape == WF_SCENE_SHAPE_RECTANGLE ||
         e->shape == WF_SCENE_SHAPE_ANNULUS;
}

double wfe_inlet_area(const wf_scene_emitter *e, double rmax) {
  double ro = e->disc_radius - rmax, ri = e->inner_radius + rmax;
  switch (e->shape) {
  case WF_SCENE_SHAPE_DISC: return WFE_PI * ro * ro;
  case WF_SCENE_SHAPE_ANNULUS: return WFE_PI * (ro * ro - ri * ri);
  case WF_SCENE_SHAPE_RECTANGLE:
    return (e->inlet_size[0] - 2.0 * rmax) * (e->inlet_size[1] - 2.0 * rmax);
  default: return 0.0;
  }
}

/* A uniformly random point (p, q) of the inlet, in its coordinates along u and w, where a sphere
 * of radius r lies wholly inside it; false when the draw fell outside (drawn again). */
static bool inlet_point(const wf_scene_emitter *e, double r, uint64_t *s, double *p, double *q) {
  if (e->shape == WF_SCENE_SHAPE_RECTANGLE) {
    *p = (2.0 * u01(s) - 1.0) * (0.5 * e->inlet_size[0] - r);
    *q = (2.0 * u01(s) - 1.0) * (0.5 * e->inlet_size[1] - r);
    return true;
  }
  double R = e->disc_radius - r; /* a disc, or an annulus's outer edge: the square around it */
  *p = (2.0 * u01(s) - 1.0) * R, *q = (2.0 * u01(s) - 1.0) * R;
  double d2 = *p * *p + *q * *q;
  if (d2 > R * R) return false;
  if (e->shape == WF_SCENE_SHAPE_ANNULUS) {
    double ri = e->inner_radius + r;
    if (d2 < ri * ri) return false;
  }
  return true;
}

uint64_t wfe_pour_count(const wf_scene_emitter *e) {
  double n = ceil(e->rate * (e->end - e->start));
  if (!(n >= 0.0)) return 0;
  return n > 4e9 ? UINT64_MAX : (uint64_t)n;
}

double wfe_pour_birth(const wf_scene_emitter *e, uint64_t k) {
  return e->start + (double)k / e->rate;
}

/* The pour's feed line (wf_particles_add_timed): particle k, born at t_k = start + k / rate at a
 * random point p_k of the inlet (the whole sphere inside it), starts at p_k - v t_k and travels
 * with v until t_k, so it reaches p_k then. Nothing on the line interacts, but the particles are
 * placed so that none overlaps another on the line: they are born apart, and gravity then acts
 * alike on neighbours born close in time. u, w span the inlet (perpendicular to v); the points
 * are computed relative to the centre, so the draws and the overlap tests do not depend on where
 * the inlet is. */
static wf_status pour_fill(const wf_scene_emitter *e, const double o[3], float (*pos)[4],
                           float *birth, uint64_t n) {
  static const char fn[] = "wf_scene_emitter_points";
  double v[3] = {e->velocity[0], e->velocity[1], e->velocity[2]};
  double speed = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  double a[3] = {v[0] / speed, v[1] / speed, v[2] / speed}, u[3], w[3];
  /* u: the unit vector perpendicular to a within the plane of a and the axis a is least
   * aligned with; w = a x u */
  int least = fabs(a[0]) <= fabs(a[1]) && fabs(a[0]) <= fabs(a[2]) ? 0
              : fabs(a[1]) <= fabs(a[2])                           ? 1
                                                                   : 2;
  double ax[3] = {0, 0, 0};
  ax[least] = 1.0;
  double d = a[least];
  for (int k = 0; k < 3; k++)
    u[k] = ax[k] - d * a[k];
  double ul = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  for (int k = 0; k < 3; k++)
    u[k] /= ul;
  w[0] = a[1] * u[2] - a[2] * u[1], w[1] = a[2] * u[0] - a[0] * u[2],
  w[2] = a[0] * u[1] - a[1] * u[0];
  double rmax = largest_radius(e), reach = 2.0 * rmax;
  uint64_t s = stream(e->seed, TAG_PLACE, 0), first = 0; /* first: oldest still within reach */
  double(*y)[3] = malloc(n * sizeof *y);
  if (!y) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "emitter '%s': out of host memory", e->name);
  for (uint64_t k = 0; k < n; k++) {
    double r = radius_of(e, k), t = wfe_pour_birth(e, k);
    while (first < k && (t - wfe_pour_birth(e, first)) * speed >= reach)
      first++;
    bool ok = false;
    for (int tries = 0; tries < MAX_POUR_TRIES && !ok; tries++) {
      double p, q;
      if (!inlet_point(e, r, &s, &p, &q)) continue;
      for (int c = 0; c < 3; c++)
        y[k][c] = p * u[c] + q * w[c] - v[c] * t;
      ok = true;
      for (uint64_t j = first; j < k && ok; j++) {
        double d0 = y[k][0] - y[j][0], d1 = y[k][1] - y[j][1], d2 = y[k][2] - y[j][2];
        double rr = r + pos[j][3];
        ok = d0 * d0 + d1 * d1 + d2 * d2 >= rr * rr;
      }
    }
    if (!ok) {
      free(y);
      return wf__error(WF_ERR_INVALID, fn,
                       "emitter '%s': the pour is too dense for its inlet: particle %llu (born at "
                       "%.6g s) finds no room among those born just before it; lower rate, raise "
                       "the speed or widen the inlet",
                       e->name, (unsigned long long)k, t);
    }
    for (int c = 0; c < 3; c++)
      pos[k][c] = (float)((e->center[c] - o[c]) + y[k][c]);
    pos[k][3] = (float)r;
    birth[k] = (float)t;
  }
  free(y);
  return WF_OK;
}

/* ---- the public entry points ----------------------------------------------------------------
 */

uint64_t wf_scene_emitter_count(const wf_scene_emitter *e) {
  if (!e) return 0;
  if (e->shape == WF_SCENE_SHAPE_FILE) return e->file_rows;
  if (wfe_pours(e)) return wfe_pour_count(e);
  if (e->packing == WF_SCENE_PACK_RANDOM) return random_count(e);
  if (!(e->spacing > 0)) return 0;
  uint64_t cells[3];
  lattice_cells(e, cells);
  double total = (double)cells[0] * (double)cells[1] * (double)cells[2];
  if (!(total < 1e15)) return UINT64_MAX;
  if (e->shape == WF_SCENE_SHAPE_BOX || total == 0) return (uint64_t)total;
  if (e->shape == WF_SCENE_SHAPE_CYLINDER) return cylinder_lattice_count(e, cells);
  if (total > 1e5) return (uint64_t)(total * 0.5235987755982988); /* π/6 of the box */
  uint64_t n = 0;
  float d[3];
  for (uint64_t z = 0; z < cells[2]; z++)
    for (uint64_t y = 0; y < cells[1]; y++)
      for (uint64_t x = 0; x < cells[0]; x++)
        n += lattice_point(e, cells, x, y, z, d);
  return n;
}

wf_status wf_scene_emitter_points(const wf_scene_emitter *e, uint32_t first_id, float (*pos)[4],
                                  float (*vel)[4], float *birth, uint64_t count) {
  static const double zero[3] = {0.0, 0.0, 0.0};
  double unused[3];
  return wfe_points_at(e, first_id, zero, unused, pos, vel, birth, count);
}

/* The solver's automatic origin for a box of points (particles.c, origin_auto). */
static void origin_of_box(const double lo[3], const double hi[3], double o[3]) {
  for (int k = 0; k < 3; k++)
    o[k] = round(0.5 * (lo[k] + hi[k]));
}

wf_status wfe_points_at(const wf_scene_emitter *e, uint32_t first_id, const double *origin,
                        double picked[3], float (*pos)[4], float (*vel)[4], float *birth,
                        uint64_t count) {
  static const char fn[] = "wf_scene_emitter_points";
  if (!e || !pos || !vel || count == 0)
    return wf__error(WF_ERR_INVALID, fn, "emitter, pos or vel is NULL, or count is 0");
  if (wfe_pours(e) && !birth)
    return wf__error(WF_ERR_INVALID, fn, "emitter '%s': an inlet pours: birth must not be NULL",
                     e->name);
  if (birth && !wfe_pours(e)) memset(birth, 0, (size_t)count * sizeof *birth);
  if (count != wf_scene_emitter_count(e))
    return wf__error(WF_ERR_INVALID, fn, "emitter '%s': count %llu is not the emitter's %llu",
                     e->name, (unsigned long long)count,
                     (unsigned long long)wf_scene_emitter_count(e));
  double o[3];
  if (origin) {
    memcpy(o, origin, sizeof o);
  } else if (e->shape != WF_SCENE_SHAPE_FILE) {
    double c[3] = {e->center[0], e->center[1], e->center[2]};
    if (wfe_solver_lattice(e) || (!wfe_pours(e) && e->packing == WF_SCENE_PACK_LATTICE))
      for (int k = 0; k < 3; k++) /* the centre as the lattice takes it */
        c[k] = (double)(float)c[k];
    origin_of_box(c, c, o);
  }
  bool file_vel = false;
  if (e->shape == WF_SCENE_SHAPE_FILE) {
    wfe_rows rows;
    char msg[600];
    uint64_t n = 0;
    if (wfe_file_read(e->file_path ? e->file_path : "", &rows, &n, msg, sizeof msg) != 0)
      return wf__error(WF_ERR_IO, fn, "emitter '%s': %s", e->name, msg);
    if (n != count) {
      wfe_rows_free(&rows);
      return wf__error(WF_ERR_IO, fn,
                       "emitter '%s': '%s' now lists %llu particles, not the %llu it had when the "
                       "scene was read",
                       e->name, e->file_path, (unsigned long long)n, (unsigned long long)count);
    }
    if (!origin) {
      double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
      for (uint64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
          lo[k] = fmin(lo[k], rows.xyz[i][k]), hi[k] = fmax(hi[k], rows.xyz[i][k]);
      origin_of_box(lo, hi, o);
    }
    for (uint64_t i = 0; i < n; i++) {
      for (int k = 0; k < 3; k++) /* the file's value, relative to o in double, rounded once */
        pos[i][k] = (float)(rows.xyz[i][k] - o[k]);
      pos[i][3] = rows.radius ? rows.radius[i] : (float)e->radius;
      for (int k = 0; k < 3; k++)
        vel[i][k] = rows.vel ? rows.vel[i][k] : (float)e->velocity[k];
    }
    file_vel = true;
    wfe_rows_free(&rows);
  } else if (wfe_pours(e)) {
    wf_status st = pour_fill(e, o, pos, birth, count);
    if (st != WF_OK) return st;
  } else if (e->packing == WF_SCENE_PACK_RANDOM) {
    wf_status st = random_fill(e, o, pos, count);
    if (st != WF_OK) return st;
  } else if (lattice_fill(e, first_id, o, pos, count) != count) {
    return wf__error(WF_ERR_INVALID, fn, "emitter '%s': the lattice's count changed", e->name);
  }
  memcpy(picked, o, sizeof o);
  for (uint64_t i = 0; i < count; i++) {
    if (!file_vel)
      for (int k = 0; k < 3; k++)
        vel[i][k] = (float)e->velocity[k];
    double r = pos[i][3];
    double mass = e->mass > 0 ? e->mass : e->density * 4.0 / 3.0 * WFE_PI * r * r * r;
    vel[i][3] = e->kinematic ? 0.0f : (float)(1.0 / mass);
  }
  return WF_OK;
}
