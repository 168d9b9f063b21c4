/* CPU side of the health kernels: loops over [begin, end) calling the shared math in
 * health_kernels.h, and the wf_kernel objects. The key minimum is an integer atomic, so the
 * loop stays correct if the backend ever splits a launch over threads. */
#include "health_kernels.h"

#ifdef WEFT_HAVE_CUDA
#define WFH_CUDA(f) f
#else
#define WFH_CUDA(f) NULL
#endif

static void check_cpu(const void *args, size_t begin, size_t end) {
  const wfh_check_args *a = args;
  uint64_t key = WFH_NO_KEY; /* rows need not be in global-id order: look at all of them */
  for (size_t i = begin; i < end; i++) {
    float value;
    uint32_t collider;
    uint64_t k = wfh_key(a, (uint32_t)i);
    if (k < key && wfh_point(a, (uint32_t)i, &value, &collider) != WFH_OK) key = k;
  }
  if (key == WFH_NO_KEY) return;
  uint64_t cur = __atomic_load_n(&a->rec->key, __ATOMIC_RELAXED);
  while (key < cur && !__atomic_compare_exchange_n(&a->rec->key, &cur, key, true, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
  }
}

static void detail_cpu(const void *args, size_t begin, size_t end) {
  if (begin < end) wfh_detail(args);
}

static void verdict_cpu(const void *args, size_t begin, size_t end) {
  if (begin < end) wfh_verdict(args);
}

static void commit_cpu(const void *args, size_t begin, size_t end) {
  const wfh_commit_args *a = args;
  if (!a->gate->ok) return;
  for (size_t i = begin; i < end; i++)
    wfh_commit(a, (uint32_t)i);
}

const wf_kernel wfh_check_kernel = {"health_check", check_cpu, WFH_CUDA(wfh_check_cuda),
                                    WF_GRAIN_LIGHT};
const wf_kernel wfh_detail_kernel = {"health_detail", detail_cpu, WFH_CUDA(wfh_detail_cuda), 0};
const wf_kernel wfh_verdict_kernel = {"health_verdict", verdict_cpu, WFH_CUDA(wfh_verdict_cuda), 0};
const wf_kernel wfh_commit_kernel = {"health_commit", commit_cpu, WFH_CUDA(wfh_commit_cuda),
                                     WF_GRAIN_LIGHT};
