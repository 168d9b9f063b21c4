/* CPU side of the world's kernels (world_kernels.h): the loop over [begin, end) and the
 * wf_kernel objects. */
#include "world_kernels.h"

#ifdef WEFT_HAVE_CUDA
#define WFW_CUDA(f) f
#else
#define WFW_CUDA(f) NULL
#endif

static void scatter_cpu(const void *args, size_t begin, size_t end) {
  const wfw_scatter_args *a = args;
  for (size_t k = begin; k < end; k++) {
    a->pos[a->gid[k]] = a->stage[k];
    a->vel[a->gid[k]] = a->stage[a->n + k];
  }
}

const wf_kernel wfw_scatter_kernel = {"world_cloth_scatter", scatter_cpu,
                                      WFW_CUDA(wfw_scatter_cuda)};
