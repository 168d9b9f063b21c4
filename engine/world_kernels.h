/* Kernels of the world itself (engine/world.c), written once for both backends: the gather of a
 * split cloth's state into its mirror on the world's first device. The CPU loop is in
 * world_kernels.c, the __global__ kernel in world_kernels.cu.
 *
 * SCATTER (n = vertices): the staging buffer holds every partition's owned rows one partition
 * after the other (positions, then n rows later the velocities), row k being global vertex
 * gid[k]; every global vertex appears exactly once, so each element writes its own two rows and
 * the result does not depend on the order of the threads. Plain 16-byte copies: no arithmetic.
 */
#ifndef WEFT_ENGINE_WORLD_KERNELS_H
#define WEFT_ENGINE_WORLD_KERNELS_H

#include <stdint.h>

#include "solvers/particle/particle_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wfw_scatter_args {
  const wfp_f4 *stage; /* 2 n rows: positions, then velocities, partition order */
  const uint32_t *gid; /* n: stage row -> global vertex */
  wfp_f4 *pos, *vel;   /* n rows each, global order */
  uint32_t n;
} wfw_scatter_args;

#ifdef WEFT_HAVE_CUDA
void wfw_scatter_cuda(const void *args, size_t n, void *stream);
#endif

extern const wf_kernel wfw_scatter_kernel; /* n = vertices */

#ifdef __cplusplus
}
#endif
#endif
