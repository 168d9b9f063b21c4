/* Host side of the cloth's use of the particle solver's grid (see coupling.h): the grid
 * parameters, and the particle solver's sort and cell kernels launched on cloth vertices.
 * Nothing here knows about cloth physics; it only adapts the particle solver's kernels.
 */
#include "coupling.h"

#include <math.h>
#include <string.h>

#include "internal/error.h"
#include "solvers/particle/particle_kernels.h"
#include "weft/particles.h"

void wfc_particles_origin(const wf_particles *ps, double out[3]) {
  out[0] = out[1] = out[2] = 0.0; /* the seam (coupling.h): where the particles' frame sits */
  if (ps) wf_particles_origin(ps, out);
}

void wfc_grid_params_init(wfc_grid_params *g, float cell, uint32_t table, int *bits) {
  memset(g, 0, sizeof *g);
  g->cell = cell;
  g->inv_cell = 1.0f / cell;
  /* a cube of d^3 <= table cells (at least 4 a side); space wraps around it, so a large cloth
   * only makes distant cells share keys (more distance tests, never a missed neighbour) */
  int32_t d = 4;
  while ((uint64_t)(d + 1) * (uint64_t)(d + 1) * (uint64_t)(d + 1) <= table)
    d++;
  g->dims[0] = g->dims[1] = g->dims[2] = d;
  uint64_t cells = (uint64_t)d * (uint64_t)d * (uint64_t)d;
  int b = 1;
  while (b < 32 && (1ull << b) < cells)
    b++;
  *bits = b;
}

size_t wfc_grid_sort_temp_bytes(wf_device *dev, uint32_t n, int bits) {
  return wfp_sort_temp_bytes(dev, n, bits);
}

wf_status wfc_grid_sort(wf_stream *s, uint32_t *keys, uint32_t *vals, uint32_t *keys_out,
                        uint32_t *vals_out, uint32_t n, int bits, void *temp, size_t temp_bytes) {
  wfp_sort_args a = {.keys = keys,
                     .vals = vals,
                     .keys_out = keys_out,
                     .vals_out = vals_out,
                     .n = n,
                     .bits = bits,
                     .temp = temp,
                     .temp_bytes = temp_bytes};
  return wf_launch(&wfp_sort, 1, &a, sizeof a, s);
}

wf_status wfc_grid_cells(wf_stream *s, wf_buffer *cell_start, wf_buffer *cell_end,
                         const uint32_t *sorted_keys, uint32_t n, uint32_t table) {
  wf_status st = wf_memset(cell_start, 0xff, 0, (size_t)table * 4, s);
  if (st != WF_OK) return st;
  wfp_cells_args a = {.keys = sorted_keys,
                      .cell_start = wf_buffer_ptr(cell_start),
                      .cell_end = wf_buffer_ptr(cell_end),
                      .n = n};
  return wf_launch(&wfp_cells, n, &a, sizeof a, s);
}
