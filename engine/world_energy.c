/* The energies of a world's objects (wf_world_energy_get): each solver computes its own on its
 * devices (wf_particles_energy_ranges over the emitters' ranges, wf_cloth_energy_get per cloth),
 * and the world's totals are the objects' sums in object order. Every solver's sums are bitwise
 * the same for any number of partitions, so the world's are too. */
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "world_internal.h"

wf_status wf_world_energy_get(wf_world *w, wf_world_energy *objects, wf_world_energy *total) {
  static const char fn[] = "wf_world_energy_get";
  if (!w || (!objects && !total)) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  int n = w->n_objects, np = n - w->n_cloths;
  wf_world_energy *e = objects ? objects : calloc((size_t)n + 1, sizeof *e);
  uint32_t *first = calloc((size_t)np + 1, sizeof *first);
  uint32_t *count = calloc((size_t)np + 1, sizeof *count);
  wf_particles_energy *pe = calloc((size_t)np + 1, sizeof *pe);
  wf_status st =
      e && first && count && pe ? WF_OK : wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  if (st == WF_OK && w->ps && np > 0) {
    for (int i = 0; i < np; i++)
      first[i] = w->objects[i].first, count[i] = w->objects[i].count;
    st = wf_particles_energy_ranges(w->ps, np, first, count, pe);
    for (int i = 0; i < np && st == WF_OK; i++)
      e[i] = (wf_world_energy){pe[i].kinetic, pe[i].potential, pe[i].elastic, pe[i].total,
                               pe[i].rotational};
  }
  for (int i = np; i < n && st == WF_OK; i++) {
    wf_cloth_energy ce;
    st = wf_cloth_energy_get(w->cloths[w->objects[i].cloth], &ce);
    if (st != WF_OK)
      st = wf__error(st, fn, "cloths[%d] '%s': %s", w->objects[i].cloth, w->objects[i].name,
                     wf_last_error());
    else
      e[i] = (wf_world_energy){ce.kinetic, ce.potential, ce.elastic, ce.total, 0.0};
  }
  if (st == WF_OK && total) {
    memset(total, 0, sizeof *total);
    for (int i = 0; i < n; i++) {
      total->kinetic += e[i].kinetic;
      total->potential += e[i].potential;
      total->elastic += e[i].elastic;
      total->rotational += e[i].rotational;
    }
    total->total = total->kinetic + total->rotational + total->potential + total->elastic;
  }
  if (e != objects) free(e);
  free(first), free(count), free(pe);
  return st;
}
