/* Cloth topology built on the host at creation (cloth_mesh.c): grid and OBJ/array meshes,
 * validation, the vertex -> triangle CSR, unique edges, springs in CSR form, XPBD constraints and
 * their greedy colouring, and lumped masses. Internal to the solver.
 *
 * Invariants: every list is produced in a fixed order that depends only on the input (triangle
 * order, then edge order within a triangle), so the device data and therefore the simulation are
 * the same on every run and backend. */
#ifndef WEFT_CLOTH_MESH_H
#define WEFT_CLOTH_MESH_H

#include <stdint.h>

#include "cloth_math.h"
#include "weft/cloth.h"

typedef struct wfc_edge {
  uint32_t a, b;   /* in the winding of triangle t0 */
  uint32_t t0, t1; /* t1 = UINT32_MAX on a boundary */
  uint32_t o0, o1; /* vertices opposite the edge in t0 and t1 */
} wfc_edge;

typedef struct wfc_topology {
  uint32_t nv, nt, ne;
  double origin[3];   /* the cloth's origin in the world (docs/precision.md) */
  float (*x)[3];      /* rest positions, relative to origin */
  uint32_t *tris;     /* 3 per triangle */
  int *tri_line;      /* OBJ line of each triangle, or NULL */
  const char *path;   /* OBJ path, or NULL */
  uint32_t grid[2];   /* grid resolution; 0 x 0 for meshes */
  uint32_t *vt_start; /* vertex -> triangle CSR: nv + 1 */
  uint32_t *vt_list;
  wfc_edge *edges;
} wfc_topology;

/* The springs or constraints, ready for upload. */
typedef struct wfc_springs {
  uint32_t count;      /* springs */
  uint32_t *adj_start; /* nv + 1 */
  wfc_link *adj;       /* 2 per spring */
} wfc_springs;

typedef struct wfc_constraints {
  uint32_t count, colours;
  wfc_constraint *cons;   /* sorted by colour */
  uint32_t *colour_start; /* colours + 1 */
} wfc_constraints;

/* The origin a desc gives (desc.origin_given), or NULL: automatic. */
static inline const double *wfc_desc_origin(const wf_cloth_desc *d) {
  return d->origin_given ? d->origin : (const double *)0;
}

/* Each returns WF_OK or a wf__error naming `fn`, the cloth and the field / file and line.
 * The positions are computed in double in the world, then stored relative to the cloth's origin
 * (t->origin): `origin` when given, else the centre of their bounding box rounded to whole
 * metres (wf_cloth_desc.origin_given). */
wf_status wfc_grid_build(const char *fn, const char *name, const wf_cloth_grid *g,
                         const double *origin, wfc_topology *t);
wf_status wfc_mesh_build(const char *fn, const char *name, const wf_cloth_mesh_desc *m,
                         const double *origin, wfc_topology *t);
/* Validates triangles (degenerate, non-manifold) and builds the vertex -> triangle CSR and edges.
 */
wf_status wfc_topology_finish(const char *fn, const char *name, wfc_topology *t);
wf_status wfc_springs_build(const char *fn, const char *name, const wfc_topology *t,
                            wfc_springs *s);
wf_status wfc_constraints_build(const char *fn, const char *name, const wfc_topology *t,
                                wfc_constraints *c);
/* Inverse masses from material.particle_mass or density (a third of each triangle's area). */
wf_status wfc_inverse_masses(const char *fn, const char *name, const wfc_topology *t,
                             const wf_cloth_material *m, float *inv_mass);
void wfc_topology_free(wfc_topology *t);
void wfc_springs_free(wfc_springs *s);
void wfc_constraints_free(wfc_constraints *c);

#endif
