/* CPU side of the gather's kernel (gather_kernels.h): the loop over [begin, end). */
#include "gather_kernels.h"

#ifdef WEFT_HAVE_CUDA
#define WFPT_CUDA(f) f
#else
#define WFPT_CUDA(f) NULL
#endif

static void scatter_cpu(const void *args, size_t begin, size_t end) {
  for (size_t k = begin; k < end; k++)
    wfpt_scatter_row(args, k);
}

const wf_kernel wfpt_scatter_kernel = {"partition_scatter", scatter_cpu,
                                       WFPT_CUDA(wfpt_scatter_cuda), WF_GRAIN_HEAVY};
