/* The gather's kernel (gather.h), written once for both backends: the CPU loop is in
 * gather_kernels.c, the __global__ kernel in gather_kernels.cu.
 *
 * SCATTER (n = one partition's rows): row k of the partition's slice of the staging buffer is
 * global row gid[k] (gid NULL: first + k). Every global row is owned by exactly one partition, so
 * each element writes its own rows and the result does not depend on the order of the threads.
 * Plain 16-byte copies, no arithmetic; a row id at or past `rows` is skipped (a partition's ids
 * are the solver's to keep right; a bad one must not write past the destination). */
#ifndef WEFT_SOLVERS_PARTITION_GATHER_KERNELS_H
#define WEFT_SOLVERS_PARTITION_GATHER_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "weft/gpu.h"
#include "weft/hd.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wfpt_row {
  float v[4];
} wfpt_row;

typedef struct wfpt_scatter_args {
  const wfpt_row *spos, *svel; /* the partition's staged rows; svel NULL: positions only */
  const uint32_t *gid;         /* n global ids, or NULL */
  uint32_t first;              /* with gid NULL: the global id of row 0 */
  uint32_t rows;               /* the destination's rows */
  wfpt_row *pos, *vel;         /* destination, global order */
} wfpt_scatter_args;

WF_HD static inline void wfpt_scatter_row(const wfpt_scatter_args *a, size_t k) {
  uint32_t g = a->gid ? a->gid[k] : a->first + (uint32_t)k;
  if (g >= a->rows) return;
  a->pos[g] = a->spos[k];
  if (a->svel) a->vel[g] = a->svel[k];
}

#ifdef WEFT_HAVE_CUDA
void wfpt_scatter_cuda(const void *args, size_t n, void *stream);
#endif

extern const wf_kernel wfpt_scatter_kernel; /* n = the partition's rows */

#ifdef __cplusplus
}
#endif
#endif
