/* Where the vertices of a cloth over several devices live, read through the public API (tests of
 * the partitioning: solvers/cloth/tests/test_cloth_split.c, tests/engine/test_world_cloth_split.c).
 *
 * owner[v]: the partition whose rows hold v (wf_cloth_partition_view's ids); every vertex must be
 * owned by exactly one partition, else this fails. near[v]: a bit mask of the partitions other
 * than v's owner that own a vertex sharing a triangle with v. Each of them holds v as a ghost (the
 * aerodynamics of its own vertex read every corner of that vertex's triangles), so near is a
 * subset of the ghosts the solver keeps: its springs and bending constraints may reach further
 * (wf_cloth_info.ghosts counts them all). */
#ifndef WEFT_TESTS_CLOTH_OWNERS_H
#define WEFT_TESTS_CLOTH_OWNERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "weft/cloth.h"

/* owner and near hold wf_cloth_count(cs) entries each (near may be NULL). */
static inline bool cloth_owners(wf_cloth *cs, int *owner, uint32_t *near) {
  uint32_t nv = wf_cloth_count(cs), nt = 0;
  for (uint32_t v = 0; v < nv; v++)
    owner[v] = -1;
  for (int p = 0; p < wf_cloth_partition_count(cs); p++) {
    wf_partition_view view;
    if (wf_cloth_partition_view(cs, p, &view) != WF_OK) return false;
    uint32_t *ids = malloc(((size_t)view.rows + 1) * sizeof *ids);
    bool ok = ids && wf_stream_synchronize(view.stream) == WF_OK;
    if (ok && view.ids)
      ok = wf_download(ids, view.ids, 0, (size_t)view.rows * sizeof *ids) == WF_OK;
    for (uint32_t i = 0; ok && i < view.rows; i++) {
      uint32_t v = view.ids ? ids[i] : view.first + i;
      ok = v < nv && owner[v] < 0;
      if (ok) owner[v] = p;
    }
    free(ids);
    if (!ok) return false;
  }
  for (uint32_t v = 0; v < nv; v++)
    if (owner[v] < 0) return false;
  if (!near) return true;
  for (uint32_t v = 0; v < nv; v++)
    near[v] = 0;
  const uint32_t *tris = wf_cloth_triangles(cs, &nt);
  for (uint32_t k = 0; k < nt; k++)
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        uint32_t u = tris[3 * k + a], w = tris[3 * k + b];
        if (owner[u] != owner[w]) near[u] |= 1u << owner[w];
      }
  return true;
}

#endif
