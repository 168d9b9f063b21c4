/* Host side of cloth contact (cloth_contact.h): the topology it needs, built once from the mesh
 * (cloth_contact.c) and uploaded by cloth.c. Every list is in a fixed order (edge, triangle
 * order), so the device walk sums in the same order on every run and backend. */
#ifndef WEFT_CLOTH_CONTACT_TOPO_H
#define WEFT_CLOTH_CONTACT_TOPO_H

#include "cloth_contact.h"
#include "cloth_mesh.h"

typedef struct wfcc_host {
  uint32_t ne;
  uint32_t *edges;               /* 2 per edge (the mesh's unique edges) */
  uint32_t *ve_start, *ve_list;  /* vertex -> edges with it (nv + 1, 2 ne) */
  uint32_t *own_t_start, *own_t; /* vertex -> triangles whose lowest vertex it is */
  uint32_t *own_e_start, *own_e; /* vertex -> edges whose lower vertex it is */
  uint32_t *piece;               /* vertex -> its connected piece (lowest vertex of it) */
} wfcc_host;

/* Cells of the contact grid's periodic box for nv vertices: 16 a vertex (at most 2^24). The
 * box is a cube (wfc_grid_params_init); space wraps around it, so cells far apart share keys and
 * the walk visits their vertices too, only to reject them by distance. A sheet spreads its
 * vertices over a surface, some 2.5 edges a cell: with nv cells (the vertex grid's table) a
 * 256 x 256 sheet spans ~100 cells a side in a box of 40, each walk seeing ~6 times the vertices
 * it needs; with 16 nv the box is 101 a side. Costs 8 bytes a cell (start and end tables). */
static inline uint32_t wfcc_grid_table(uint32_t nv) {
  uint64_t t = (uint64_t)nv * 16u;
  return t < 64u ? 64u : t > (1u << 24) ? (1u << 24) : (uint32_t)t;
}

/* Builds h from t; *longest: the longest rest edge (m). 0 when out of memory. */
int wfcc_host_build(const wfc_topology *t, wfcc_host *h, float *longest);
void wfcc_host_free(wfcc_host *h);

#endif
