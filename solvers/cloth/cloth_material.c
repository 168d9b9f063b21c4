/* Cloth materials in physical terms (weft/cloth.h: wf_cloth_material): the presets, the
 * conversion of moduli to the solver's per-kind coefficients from the mesh's spacing, and the
 * explicit step's stability limit of a mass-spring cloth.
 *
 * Everything here runs on the host at creation (and on wf_cloth_set_material), in double, from
 * the whole cloth's topology: every partition of a split cloth gets the same coefficients, so the
 * states stay bitwise those of one device. */
#include "cloth_material.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_internal.h"
#include "internal/error.h"

/* The radius of curvature at which a mass-spring bend spring's energy equals the plate's (see
 * weft/cloth.h). */
#define BEND_MATCH_RADIUS 0.02
/* Substeps are chosen so that dt <= dt_max / SAFETY: the bound is for small motions about the
 * rest shape; stretched springs, contacts and pins take some of the margin. */
#define SAFETY 1.25
/* XPBD compliance of a kind whose modulus is 0 (off): large enough that a constraint moves
 * nothing, small enough that compliance / dt² stays finite for dt >= 1e-5 s. */
#define OFF_COMPLIANCE 1e20

/* ---- presets ----------------------------------------------------------------------------------
 */

/* Values and their sources are in docs/scenes.md ("Cloth materials"). Fabric values are
 * estimates within the ranges published for KES-F measurements and in the cloth-estimation
 * literature; the rubber sheet's follow from E ≈ 2 MPa, ν = 0.5, 1 mm thick. */
static const struct {
  const char *name;
  float density, stretch, shear, bend, friction;
} presets[] = {
    {"default", 0.2f, 30.0f, 10.0f, 1e-5f, 0.5f},
    {"cotton", 0.15f, 3000.0f, 50.0f, 1e-5f, 0.5f},
    {"silk", 0.05f, 1000.0f, 15.0f, 2e-6f, 0.3f},
    {"denim", 0.40f, 8000.0f, 150.0f, 2e-4f, 0.6f},
    {"rubber", 1.1f, 2000.0f, 670.0f, 2.2e-4f, 0.9f},
};
#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

static wf_cloth_material preset_of(int i) {
  return (wf_cloth_material){.density = presets[i].density,
                             .thickness = 0.005f,
                             .stretch_modulus = presets[i].stretch,
                             .shear_modulus = presets[i].shear,
                             .bend_rigidity = presets[i].bend,
                             .damping_time = 1e-5f,
                             .friction = presets[i].friction,
                             /* the raw coefficients (coefficients = true): the solver's
                              * defaults before materials were physical */
                             .stretch_stiffness = 50.0f,
                             .shear_stiffness = 20.0f,
                             .bend_stiffness = 2.0f,
                             .stretch_compliance = 0.0f,
                             .shear_compliance = 1e-4f,
                             .bend_compliance = 1.0f,
                             .damping = 0.05f};
}

wf_cloth_material wf_cloth_material_default(void) { return preset_of(0); }

const char *wf_cloth_material_preset_name(int i) {
  return i >= 0 && i < N_PRESETS ? presets[i].name : NULL;
}

wf_status wf_cloth_material_preset(const char *name, wf_cloth_material *out) {
  static const char fn[] = "wf_cloth_material_preset";
  if (!name || !out) return wf__error(WF_ERR_INVALID, fn, "name or out is NULL");
  for (int i = 0; i < N_PRESETS; i++)
    if (strcmp(name, presets[i].name) == 0) {
      *out = preset_of(i);
      return WF_OK;
    }
  return wf__error(WF_ERR_INVALID, fn,
                   "no cloth material preset '%s' (presets: default, cotton, silk, denim, rubber)",
                   name);
}

/* ---- conversion -------------------------------------------------------------------------------
 */

double wfc_mesh_spacing(const wfc_topology *t) {
  double area = 0.0;
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    double e1[3], e2[3];
    for (int d = 0; d < 3; d++)
      e1[d] = (double)t->x[q[1]][d] - t->x[q[0]][d], e2[d] = (double)t->x[q[2]][d] - t->x[q[0]][d];
    double cr[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                    e1[0] * e2[1] - e1[1] * e2[0]};
    area += 0.5 * sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
  }
  return t->nt ? sqrt(2.0 * area / t->nt) : 0.0;
}

void wfc_material_coeffs(const wf_cloth_material *m, double h, bool grid, wfc_coeffs *out) {
  if (m->coefficients) {
    *out = (wfc_coeffs){{m->stretch_stiffness, m->shear_stiffness, m->bend_stiffness},
                        {m->stretch_compliance, m->shear_compliance, m->bend_compliance},
                        m->damping,
                        {0}};
    for (int k = 0; k < 3; k++)
      out->beta[k] = out->compliance[k] * m->damping;
    return;
  }
  double e = m->stretch_modulus, g = m->shear_modulus, b = m->bend_rigidity;
  double h4 = h * h * h * h;
  double kb = h4 > 0.0 ? 16.0 * b * BEND_MATCH_RADIUS * BEND_MATCH_RADIUS / h4 : 0.0;
  /* On a grid every spring along an axis adds to the sheet's stiffness under stretch along it:
   * the axis springs k_s, the diagonals k_d (each carries half its strain, at 45°) and the bend
   * springs, which span two cells (two of them cross any cut of a row: 4 k_b). The axis springs
   * take what is left of E2, so that k_s + k_d + 4 k_b = E2 at any h (0 where the others already
   * exceed it: the sheet is then stiffer than asked). XPBD's distance constraints are the same
   * lattice without bend springs (its bending is the hinges). A mesh's edges triangulate it: no
   * shear springs, k = E2 on every edge. */
  double ks = grid ? fmax(0.0, e - g) : e;
  double ks_springs = grid ? fmax(0.0, e - g - 4.0 * kb) : e;
  const double mod[3] = {ks, g, b};
  out->k[0] = (float)ks_springs, out->k[1] = (float)g, out->k[2] = (float)kb;
  for (int k = 0; k < 3; k++) {
    out->compliance[k] = mod[k] > 0.0 ? (float)(1.0 / mod[k]) : (float)OFF_COMPLIANCE;
    out->beta[k] = mod[k] > 0.0 ? m->damping_time : 0.0f;
  }
  out->c = (float)(m->damping_time * e);
}

/* ---- stability --------------------------------------------------------------------------------
 */

/* The largest eigenvalue of the symmetric 3 x 3 matrix a (xx, yy, zz, xy, xz, yz). */
static double sym3_max_eig(const double a[6]) {
  double p1 = a[3] * a[3] + a[4] * a[4] + a[5] * a[5];
  double q = (a[0] + a[1] + a[2]) / 3.0;
  if (p1 <= 1e-30 * (q * q + 1e-300)) return fmax(a[0], fmax(a[1], a[2]));
  double p2 = (a[0] - q) * (a[0] - q) + (a[1] - q) * (a[1] - q) + (a[2] - q) * (a[2] - q) + 2 * p1;
  double p = sqrt(p2 / 6.0);
  double b[6] = {(a[0] - q) / p, (a[1] - q) / p, (a[2] - q) / p, a[3] / p, a[4] / p, a[5] / p};
  double det = b[0] * (b[1] * b[2] - b[5] * b[5]) - b[3] * (b[3] * b[2] - b[5] * b[4]) +
               b[4] * (b[3] * b[5] - b[1] * b[4]);
  double r = fmin(1.0, fmax(-1.0, det / 2.0));
  return q + 2.0 * p * cos(acos(r) / 3.0);
}

void wfc_stability_compute(const wf_cloth_desc *d, const wfc_topology *t, const wfc_springs *sp,
                           const float *inv_mass, double h, bool grid, wf_cloth_stability *out) {
  *out = (wf_cloth_stability){.dt = d->frame_dt / (float)d->substeps,
                              .dt_max = INFINITY,
                              .substeps_needed = 1,
                              .vertex = UINT32_MAX,
                              .stable = true};
  if (d->integrator != WF_CLOTH_SPRINGS || !sp) return;
  wfc_coeffs co;
  wfc_material_coeffs(&d->material, h, grid, &co);
  double best = INFINITY;
  for (uint32_t i = 0; i < t->nv; i++) {
    if (!(inv_mass[i] > 0.0f)) continue;
    double ak[6] = {0}, ad[6] = {0};
    for (uint32_t s = sp->adj_start[i]; s < sp->adj_start[i + 1]; s++) {
      wfc_link l = sp->adj[s];
      uint32_t j = l.other_kind & 0x3fffffffu, kind = l.other_kind >> 30;
      double v[3], len = 0.0;
      for (int q = 0; q < 3; q++)
        v[q] = (double)t->x[j][q] - t->x[i][q], len += v[q] * v[q];
      if (!(len > 0.0)) continue;
      len = sqrt(len);
      for (int q = 0; q < 3; q++)
        v[q] /= len;
      const double dd[6] = {v[0] * v[0], v[1] * v[1], v[2] * v[2],
                            v[0] * v[1], v[0] * v[2], v[1] * v[2]};
      for (int q = 0; q < 6; q++)
        ak[q] += co.k[kind] * dd[q], ad[q] += co.c * dd[q];
    }
    double K = 2.0 * sym3_max_eig(ak) * inv_mass[i], C = 2.0 * sym3_max_eig(ad) * inv_mass[i];
    if (!(K > 0.0) && !(C > 0.0)) continue;
    /* the positive root of K dt² + 2 C dt - 4 = 0 */
    double dt = K > 0.0 ? (-C + sqrt(C * C + 4.0 * K)) / K : 2.0 / C;
    if (dt < best) best = dt, out->vertex = i;
  }
  if (!isfinite(best)) return;
  out->dt_max = (float)best;
  double need = ceil((double)d->frame_dt * SAFETY / best - 1e-9);
  out->substeps_needed = need > 1e9 ? 1000000000 : (int)fmax(1.0, need);
  out->stable = d->substeps >= out->substeps_needed;
}

int wfc_stability_message(const char *name, const wf_cloth_desc *d, const wf_cloth_stability *s,
                          char *buf, size_t size) {
  return snprintf(buf, size,
                  "cloth '%s': the mass-spring step %.3g s is past the explicit stability limit "
                  "%.3g s (set by vertex %u): use at least %d substeps per frame (now %d), or "
                  "softer moduli, or the XPBD integrator",
                  name, (double)s->dt, (double)s->dt_max, s->vertex, s->substeps_needed,
                  d->substeps);
}

void wfc_stability_warn(const char *name, const wf_cloth_desc *d, const wf_cloth_stability *s) {
  if (s->stable) return;
  char msg[512];
  wfc_stability_message(name, d, s, msg, sizeof msg);
  wf__log(WF_LOG_WARN, "%s", msg);
}

/* ---- the public check, on the host --------------------------------------------------------- */

static wf_status stability_of(const char *fn, const wf_cloth_desc *d, wfc_topology *t,
                              wf_cloth_stability *out) {
  const char *name = d->name ? d->name : "cloth";
  wf_status st = wfc_topology_finish(fn, name, t);
  float *inv_mass = st == WF_OK ? malloc((size_t)t->nv * sizeof *inv_mass + 4) : NULL;
  if (st == WF_OK && !inv_mass)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth '%s': out of host memory", name);
  wfc_springs sp = {0};
  bool springs = d->integrator == WF_CLOTH_SPRINGS;
  if (st == WF_OK) st = wfc_inverse_masses(fn, name, t, &d->material, inv_mass);
  if (st == WF_OK && springs) st = wfc_springs_build(fn, name, t, &sp);
  if (st == WF_OK)
    wfc_stability_compute(d, t, springs ? &sp : NULL, inv_mass, wfc_mesh_spacing(t), t->grid[0] > 0,
                          out);
  wfc_springs_free(&sp);
  free(inv_mass);
  wfc_topology_free(t);
  return st;
}

wf_status wf_cloth_stability_grid(const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                                  wf_cloth_stability *out) {
  static const char fn[] = "wf_cloth_stability_grid";
  if (!desc || !grid || !out) return wf__error(WF_ERR_INVALID, fn, "desc, grid or out is NULL");
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = wfc_check_desc(fn, desc, name);
  wfc_topology t;
  if (st == WF_OK) st = wfc_grid_build(fn, name, grid, wfc_desc_origin(desc), &t);
  return st != WF_OK ? st : stability_of(fn, desc, &t, out);
}

wf_status wf_cloth_stability_mesh(const wf_cloth_desc *desc, const wf_cloth_mesh_desc *mesh,
                                  wf_cloth_stability *out) {
  static const char fn[] = "wf_cloth_stability_mesh";
  if (!desc || !mesh || !out) return wf__error(WF_ERR_INVALID, fn, "desc, mesh or out is NULL");
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = wfc_check_desc(fn, desc, name);
  wfc_topology t;
  if (st == WF_OK) st = wfc_mesh_build(fn, name, mesh, wfc_desc_origin(desc), &t);
  return st != WF_OK ? st : stability_of(fn, desc, &t, out);
}
