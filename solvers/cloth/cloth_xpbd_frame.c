/* CPU side of the XPBD one-launch frame (cloth_xpbd_frame.h): the stages of every substep as
 * loops over all elements, in the order of the staged path, and the plan. */
#include "cloth_xpbd_frame.h"

#include <stdbool.h>

#ifdef WEFT_HAVE_CUDA
#define WFC_XF_CUDA(f) f
#else
#define WFC_XF_CUDA(f) NULL
#endif

static void flag_vertex(wfc_flags *f, uint32_t fl, uint32_t i) {
  __atomic_fetch_or(&f->flags, fl, __ATOMIC_RELAXED);
  uint32_t cur = __atomic_load_n(&f->first_bad, __ATOMIC_RELAXED);
  while (i < cur && !__atomic_compare_exchange_n(&f->first_bad, &cur, i, true, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
}

/* The kernel's cpu_grain is 0: the backend calls it once over [0, n), so the stages below are
 * ordered as the barriers of the CUDA kernel order them. The collider impulses of a substep go
 * into a table of the call's, added to the cloth's after each finalize (integer sums: the
 * order of the additions does not matter). */
static void xpbd_frame_cpu(const void *args, size_t begin, size_t end) {
  const wfc_xpbd_frame_args *a = args;
  (void)begin, (void)end;
  unsigned long long table[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS]; /* collider_force.h */
  wfx_forces F = {a->finalize.forces ? table : NULL, 0};
  for (uint32_t s = 0; s < a->substeps; s++) {
    const bool last = s + 1 == a->substeps;
    for (uint32_t i = 0; i < a->n; i++)
      wfc_predict_elem(&a->predict, i);
    if (a->solve.lambda)
      for (uint32_t k = 0; k < a->constraints; k++)
        a->solve.lambda[k] = 0.0f;
    for (uint32_t it = 0; it < a->iterations; it++)
      for (uint32_t q = 0; q < a->colours; q++) {
        wfc_solve_args sa = wfc_xpbd_colour_args(a, q);
        uint32_t m = a->colour_start[q + 1] - a->colour_start[q];
        for (uint32_t k = 0; k < m; k++)
          wfc_solve_elem(&sa, k);
      }
    for (uint32_t i = 0; i < a->n; i++) {
      uint32_t fl = wfc_finalize_elem(&a->finalize, i, &F);
      if (last && a->host_pos) wfc_xpbd_put(a, i, a->finalize.pos[i]);
      if (fl) flag_vertex(a->finalize.flags, fl, i);
    }
    wfx_forces_flush(&F, a->finalize.forces);
    F.touched = 0;
  }
}

const wf_kernel wfc_xpbd_frame = {"cloth_xpbd_frame", xpbd_frame_cpu,
                                  WFC_XF_CUDA(wfc_xpbd_frame_cuda), 0};

void wfc_xpbd_frame_plan(int ordinal, uint32_t n, uint32_t widest, uint32_t block, bool resident,
                         wfc_xpbd_plan *out) {
#ifdef WEFT_HAVE_CUDA
  if (ordinal >= 0) {
    wfc_xpbd_frame_plan_cuda(ordinal, n, widest, block, resident, out);
    return;
  }
#else
  (void)ordinal;
#endif
  /* the CPU backend runs both modes as the same loops; the plan is what a GPU's would be,
   * without its occupancy (GRID: a block for every `block` elements of the widest stage) */
  const uint64_t most = n > widest ? n : widest;
  uint32_t b = block ? block : WFC_XPBD_BLOCK_THREADS;
  out->mode = resident && n <= WFC_XPBD_BLOCK_MAX ? WFC_XPBD_BLOCK : WFC_XPBD_GRID;
  if (out->mode == WFC_XPBD_GRID && !block) b = WFC_XPBD_GRID_THREADS;
  if (out->mode == WFC_XPBD_BLOCK && !block && most < b) b = (uint32_t)((most + 31) / 32 * 32);
  b = b < 32 ? 32 : b > WFC_XPBD_BLOCK_THREADS ? WFC_XPBD_BLOCK_THREADS : b / 32 * 32;
  out->block = b;
  const uint64_t blocks = (most + b - 1) / b;
  out->blocks = out->mode == WFC_XPBD_BLOCK || blocks == 0 ? 1u : (uint32_t)blocks;
}
