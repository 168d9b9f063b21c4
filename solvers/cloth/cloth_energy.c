/* CPU side of the cloth's energy kernel (cloth_energy.h) and the host-built lists it reads. */
#include "cloth_energy.h"

#include <stdlib.h>

#include "internal/error.h"

#ifdef WEFT_HAVE_CUDA
#define WFC_CUDA(f) f
#else
#define WFC_CUDA(f) NULL
#endif

static void energy_cpu(const void *args, size_t begin, size_t end) {
  const wfc_energy_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfc_energy_elem(a, (uint32_t)i);
}

const wf_kernel wfc_energy_kernel = {"cloth_energy", energy_cpu, WFC_CUDA(wfc_energy_cuda),
                                     WF_GRAIN_HEAVY};

wf_status wfc_energy_lists(const wfc_constraint *cons, uint32_t count, uint32_t n,
                           uint32_t **con_start, uint32_t **con_list) {
  uint32_t *start = calloc((size_t)n + 1, sizeof *start);
  if (!start) return WF_ERR_OUT_OF_MEMORY;
  /* count, prefix sum, fill: constraint s goes to each of its vertices below n, in order of s */
  for (uint32_t s = 0; s < count; s++)
    for (int k = 0; k < (cons[s].kind == WFC_BEND ? 4 : 2); k++)
      if (cons[s].v[k] < n) start[cons[s].v[k] + 1]++;
  for (uint32_t i = 0; i < n; i++)
    start[i + 1] += start[i];
  uint32_t *list = malloc((size_t)(start[n] ? start[n] : 1) * sizeof *list);
  uint32_t *fill = malloc((size_t)(n ? n : 1) * sizeof *fill);
  if (!list || !fill) {
    free(start), free(list), free(fill);
    return WF_ERR_OUT_OF_MEMORY;
  }
  for (uint32_t i = 0; i < n; i++)
    fill[i] = start[i];
  for (uint32_t s = 0; s < count; s++)
    for (int k = 0; k < (cons[s].kind == WFC_BEND ? 4 : 2); k++)
      if (cons[s].v[k] < n) list[fill[cons[s].v[k]]++] = s;
  free(fill);
  *con_start = start, *con_list = list;
  return WF_OK;
}
