/* The cut of a cloth over several devices (cloth_parts.h): its vertex graph (the pairs of
 * vertices that read each other) as deduplicated CSR, cut into the partitions by METIS k-way with
 * the desc's seed and imbalance, so every run of the same cloth gets the same partitions. */
#include <math.h>
#include <metis.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_parts.h"
#include "internal/error.h"

/* ---- the cut ----------------------------------------------------------------------------------
 */

/* Both ends of every pair of vertices that read each other: springs (mass-spring) or
 * constraints (XPBD), and the corners of every triangle; counted (pass 0) or filled (pass 1). */
static void graph_pairs(const wfc_topology *t, const wfc_springs *sp, const wfc_constraints *cons,
                        int pass, idx_t *xadj, idx_t *adj, idx_t *fill) {
#define PAIR(a, b)                                                                                 \
  do {                                                                                             \
    if ((a) != (b)) {                                                                              \
      if (pass == 0)                                                                               \
        xadj[(a) + 1]++, xadj[(b) + 1]++;                                                          \
      else                                                                                         \
        adj[fill[a]++] = (idx_t)(b), adj[fill[b]++] = (idx_t)(a);                                  \
    }                                                                                              \
  } while (0)
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    PAIR(q[0], q[1]);
    PAIR(q[1], q[2]);
    PAIR(q[2], q[0]);
  }
  if (sp)
    for (uint32_t i = 0; i < t->nv; i++)
      for (uint32_t k = sp->adj_start[i]; k < sp->adj_start[i + 1]; k++) {
        uint32_t j = sp->adj[k].other_kind & WFC_LINK_INDEX_MASK;
        if (i < j) PAIR(i, j);
      }
  if (cons)
    for (uint32_t k = 0; k < cons->count; k++) {
      const wfc_constraint *c = &cons->cons[k];
      int m = c->kind == WFC_BEND ? 4 : 2;
      for (int a = 0; a < m; a++)
        for (int b = a + 1; b < m; b++)
          PAIR(c->v[a], c->v[b]);
    }
#undef PAIR
}

/* Sorts each row and drops repeats, compacting in place. */
static void graph_dedup(uint32_t nv, idx_t *xadj, idx_t *adj) {
  idx_t out = 0;
  for (uint32_t i = 0; i < nv; i++) {
    idx_t b = xadj[i], e = xadj[i + 1];
    for (idx_t x = b + 1; x < e; x++) /* insertion sort: rows are short */
      for (idx_t y = x; y > b && adj[y - 1] > adj[y]; y--) {
        idx_t tmp = adj[y];
        adj[y] = adj[y - 1], adj[y - 1] = tmp;
      }
    xadj[i] = out;
    for (idx_t x = b; x < e; x++)
      if (x == b || adj[x] != adj[x - 1]) adj[out++] = adj[x];
  }
  xadj[nv] = out;
}

/* The pairs of vertices that read each other, deduplicated CSR for METIS. */
static wf_status vertex_graph(const char *fn, const wf_cloth *cs, const wfc_topology *t,
                              const wfc_springs *sp, const wfc_constraints *cons, idx_t **xadj_out,
                              idx_t **adj_out) {
  uint32_t nv = t->nv;
  size_t pairs = (size_t)t->nt * 6;
  if (sp) pairs += (size_t)sp->count * 2;
  if (cons) pairs += (size_t)cons->count * 12;
  idx_t *xadj = calloc((size_t)nv + 1, sizeof *xadj);
  idx_t *adj = malloc((pairs ? pairs : 1) * sizeof *adj);
  idx_t *fill = malloc(((size_t)nv + 1) * sizeof *fill);
  if (!xadj || !adj || !fill) {
    free(xadj), free(adj), free(fill);
    return wfc_oom(fn, cs->name);
  }
  graph_pairs(t, sp, cons, 0, xadj, adj, fill);
  for (uint32_t i = 0; i < nv; i++)
    xadj[i + 1] += xadj[i];
  memcpy(fill, xadj, ((size_t)nv + 1) * sizeof *fill);
  graph_pairs(t, sp, cons, 1, xadj, adj, fill);
  graph_dedup(nv, xadj, adj);
  free(fill);
  *xadj_out = xadj, *adj_out = adj;
  return WF_OK;
}

wf_status wfc_cut(const char *fn, wf_cloth *cs, const wf_cloth_desc *sd, const wfc_topology *t,
                  const wfc_springs *sp, const wfc_constraints *cons) {
  uint32_t nv = t->nv;
  idx_t *xadj = NULL, *adj = NULL;
  wf_status st = vertex_graph(fn, cs, t, sp, cons, &xadj, &adj);
  if (st != WF_OK) return st;
  idx_t *where = malloc((size_t)nv * sizeof *where);
  if (!where) {
    free(xadj), free(adj);
    return wfc_oom(fn, cs->name);
  }
  idx_t n = (idx_t)nv, ncon = 1, nparts = cs->np, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = sd->seed;
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_UFACTOR] = (idx_t)lroundf(sd->imbalance * 1000.0f);
  if (options[METIS_OPTION_UFACTOR] < 1) options[METIS_OPTION_UFACTOR] = 1;
  int r = METIS_PartGraphKway(&n, &ncon, xadj, adj, NULL, NULL, NULL, &nparts, NULL, NULL, options,
                              &objval, where);
  free(xadj), free(adj);
  if (r != METIS_OK) {
    free(where);
    return wf__error(WF_ERR_BACKEND, fn,
                     "cloth '%s': METIS_PartGraphKway failed (%d) cutting %u vertices "
                     "into %d parts",
                     cs->name, r, nv, cs->np);
  }
  uint32_t count[WFPT_MAX] = {0};
  for (uint32_t i = 0; i < nv; i++) {
    cs->owner[i] = (int8_t)where[i];
    count[where[i]]++;
  }
  free(where);
  for (int p = 0; p < cs->np; p++)
    if (!count[p])
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': METIS left partition %d with no vertex: %u vertices "
                       "are too few for %d partitions",
                       cs->name, p, nv, cs->np);
  return WF_OK;
}
