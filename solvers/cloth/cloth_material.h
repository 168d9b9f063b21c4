/* Cloth materials (cloth_material.c): the conversion of a wf_cloth_material's moduli to the
 * solver's per-kind coefficients from the mesh's spacing, and the mass-spring explicit step's
 * stability limit. Internal to the solver. */
#ifndef WEFT_CLOTH_MATERIAL_H
#define WEFT_CLOTH_MATERIAL_H

#include <stdbool.h>
#include <stddef.h>

#include "cloth_mesh.h"
#include "weft/cloth.h"

/* The coefficients per kind (WFC_STRETCH, WFC_SHEAR, WFC_BEND). */
typedef struct wfc_coeffs {
  float k[3];          /* mass-spring spring constants, N/m */
  float compliance[3]; /* XPBD compliance (distance m/N, bending 1/(N·m)) */
  float c;             /* mass-spring dashpot on every spring, N·s/m */
  float beta[3];       /* XPBD: compliance x damping (s): the substep's γ = beta / dt */
} wfc_coeffs;

/* The mesh's spacing h: sqrt(2 x mean triangle area), a grid's cell side (geometric mean). */
double wfc_mesh_spacing(const wfc_topology *t);
/* The coefficients of material m on a mesh of spacing h, a grid or not (m->coefficients: its raw
 * fields). */
void wfc_material_coeffs(const wf_cloth_material *m, double h, bool grid, wfc_coeffs *out);
/* The explicit step's stability of the cloth desc describes, over its springs sp (NULL or an
 * XPBD desc: always stable) with the given inverse masses (0: pinned, skipped). */
void wfc_stability_compute(const wf_cloth_desc *d, const wfc_topology *t, const wfc_springs *sp,
                           const float *inv_mass, double h, bool grid, wf_cloth_stability *out);
/* The warning's text (snprintf's return); and the warning through the log (WF_LOG_WARN), when
 * s is not stable. */
int wfc_stability_message(const char *name, const wf_cloth_desc *d, const wf_cloth_stability *s,
                          char *buf, size_t size);
void wfc_stability_warn(const char *name, const wf_cloth_desc *d, const wf_cloth_stability *s);

#endif
