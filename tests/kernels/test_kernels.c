/* CPU loops of the test kernels over elements [begin, end), and the wf_kernel objects. */
#define _POSIX_C_SOURCE 200809L
#include "test_kernels.h"

#include <time.h>

#ifdef WEFT_HAVE_CUDA
#define TK_CUDA(f) f
#else
#define TK_CUDA(f) NULL
#endif

static void tk_fill_cpu(const void *args, size_t begin, size_t end) {
  const tk_fill_args *a = args;
  for (size_t i = begin; i < end; i++)
    a->p[i] = a->value;
}

static void tk_iota_cpu(const void *args, size_t begin, size_t end) {
  const tk_iota_args *a = args;
  for (size_t i = begin; i < end; i++)
    a->p[i] = tk_iota_elem(i, a->start, a->step);
}

static void tk_axpy_cpu(const void *args, size_t begin, size_t end) {
  const tk_axpy_args *a = args;
  for (size_t i = begin; i < end; i++)
    a->y[i] = tk_axpy_elem(a->y[i], a->a, a->x[i]);
}

static void tk_add_one_cpu(const void *args, size_t begin, size_t end) {
  const tk_add_one_args *a = args;
  for (size_t i = begin; i < end; i++)
    a->p[i] = tk_add_one_elem(a->p[i]);
}

static void tk_copy_cpu(const void *args, size_t begin, size_t end) {
  const tk_copy_args *a = args;
  for (size_t i = begin; i < end; i++)
    a->dst[i] = a->src[i];
}

static void tk_scale_add_cpu(const void *args, size_t begin, size_t end) {
  const tk_scale_add_args *a = args;
  for (size_t i = begin; i < end; i++)
    a->p[i] = tk_scale_add_elem(a->p[i], a->mul, a->add);
}

/* Only the chunk holding element 0 sleeps, so the delay stays `ms` however the backend splits the
 * range over threads, and element 0 is stale for the whole delay. */
static void tk_slow_fill_cpu(const void *args, size_t begin, size_t end) {
  const tk_slow_fill_args *a = args;
  if (begin == 0 && a->ms > 0) {
    struct timespec t = {a->ms / 1000, (long)(a->ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
  }
  for (size_t i = begin; i < end; i++)
    a->p[i] = a->value;
}

const wf_kernel tk_fill = {"tk_fill", tk_fill_cpu, TK_CUDA(tk_fill_cuda), 256};
const wf_kernel tk_iota = {"tk_iota", tk_iota_cpu, TK_CUDA(tk_iota_cuda), 256};
const wf_kernel tk_axpy = {"tk_axpy", tk_axpy_cpu, TK_CUDA(tk_axpy_cuda), 256};
const wf_kernel tk_add_one = {"tk_add_one", tk_add_one_cpu, TK_CUDA(tk_add_one_cuda), 256};
const wf_kernel tk_copy = {"tk_copy", tk_copy_cpu, TK_CUDA(tk_copy_cuda), 256};
const wf_kernel tk_scale_add = {"tk_scale_add", tk_scale_add_cpu, TK_CUDA(tk_scale_add_cuda), 256};
const wf_kernel tk_slow_fill = {"tk_slow_fill", tk_slow_fill_cpu, TK_CUDA(tk_slow_fill_cuda), 0};
const wf_kernel tk_cpu_only = {"tk_cpu_only", tk_fill_cpu, NULL, 0};
const wf_kernel tk_cuda_only = {"tk_cuda_only", NULL, TK_CUDA(tk_fill_cuda), 0};
