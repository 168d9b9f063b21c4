/* CPU side of the mass-spring fast path (cloth_fast.h): the frame kernel as a loop over substeps
 * around the loop over vertices, and the grid rest table, copied from the CSR springs so that
 * the grid path uses the very same rest lengths. */
#include "cloth_fast.h"

#include <stdlib.h>

#ifdef WEFT_HAVE_CUDA
#define WFC_FAST_CUDA(f) f
#else
#define WFC_FAST_CUDA(f) NULL
#endif

/* The CPU backend runs a launch as one call over all elements, so the substeps are ordered. */
static void spring_frame_cpu(const void *args, size_t begin, size_t end) {
  const wfc_frame_args *a = args;
  for (uint32_t s = 0; s < a->substeps; s++)
    for (size_t i = begin; i < end; i++) {
      uint32_t fl = wfc_frame_elem(a, s, (uint32_t)i);
      if (fl) {
        wfc_flags *f = a->half[s & 1u].flags;
        __atomic_fetch_or(&f->flags, fl, __ATOMIC_RELAXED);
        uint32_t cur = __atomic_load_n(&f->first_bad, __ATOMIC_RELAXED);
        while ((uint32_t)i < cur &&
               !__atomic_compare_exchange_n(&f->first_bad, &cur, (uint32_t)i, true,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
      }
    }
}

const wf_kernel wfc_spring_frame = {"cloth_spring_frame", spring_frame_cpu,
                                    WFC_FAST_CUDA(wfc_spring_frame_cuda)};

/* Which slot of vertex a's row holds the spring (a, b) of `kind`, or -1. */
static int slot_of(uint32_t a, uint32_t b, uint32_t kind, uint32_t nu) {
  if (kind == WFC_STRETCH && b == a + 1) return WFC_R_X;
  if (kind == WFC_STRETCH && b == a + nu) return WFC_R_Y;
  if (kind == WFC_SHEAR && b == a + nu + 1) return WFC_R_DIAG;
  if (kind == WFC_BEND && b == a + 2) return WFC_R_BEND_X;
  if (kind == WFC_BEND && b == a + 2 * nu) return WFC_R_BEND_Y;
  return -1;
}

wf_status wfc_grid_rest_build(const wfc_topology *t, const wfc_springs *sp, float **out) {
  *out = NULL;
  uint32_t nu = t->grid[0], nr = t->grid[1];
  if (nu < 2 || nr < 2 || (uint64_t)nu * nr != t->nv) return WF_ERR_INVALID;
  float *r = calloc((size_t)t->nv * WFC_R_COUNT, sizeof *r);
  if (!r) return WF_ERR_OUT_OF_MEMORY;
  size_t found = 0;
  for (uint32_t a = 0; a < t->nv; a++)
    for (uint32_t k = sp->adj_start[a]; k < sp->adj_start[a + 1]; k++) {
      uint32_t b = sp->adj[k].other_kind & WFC_LINK_INDEX_MASK, kind = sp->adj[k].other_kind >> 30;
      int q = b > a ? slot_of(a, b, kind, nu) : -1;
      /* the anti-diagonal (a+1, a+nu) is stored at a: seen from a+1 it goes to a+nu */
      if (q < 0 && kind == WFC_SHEAR && a >= 1 && b == a - 1 + nu && b > a) {
        r[(size_t)(a - 1) * WFC_R_COUNT + WFC_R_ANTI] = sp->adj[k].rest;
        found++;
        continue;
      }
      if (q < 0) continue;
      r[(size_t)a * WFC_R_COUNT + (size_t)q] = sp->adj[k].rest;
      found++;
    }
  /* every spring seen once from its lower-index end */
  if (found != sp->count) {
    free(r);
    return WF_ERR_INVALID;
  }
  *out = r;
  return WF_OK;
}
