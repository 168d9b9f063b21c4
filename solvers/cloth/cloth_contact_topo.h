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

/* Builds h from t; *longest: the longest rest edge (m). 0 when out of memory. */
int wfcc_host_build(const wfc_topology *t, wfcc_host *h, float *longest);
void wfcc_host_free(wfcc_host *h);

#endif
