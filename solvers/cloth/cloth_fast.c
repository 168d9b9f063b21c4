/* CPU side of the mass-spring fast path (cloth_fast.h): the frame kernel as a loop over substeps
 * around the loop over vertices, and the grid rest table, copied from the CSR springs so that
 * the grid path uses the very same rest lengths. */
#include "cloth_fast.h"

#include <stdbool.h>
#include <stdlib.h>

#ifdef WEFT_HAVE_CUDA
#define WFC_FAST_CUDA(f) f
#else
#define WFC_FAST_CUDA(f) NULL
#endif

static void flag_vertex(wfc_flags *f, uint32_t fl, uint32_t i) {
  __atomic_fetch_or(&f->flags, fl, __ATOMIC_RELAXED);
  uint32_t cur = __atomic_load_n(&f->first_bad, __ATOMIC_RELAXED);
  while (i < cur && !__atomic_compare_exchange_n(&f->first_bad, &cur, i, true, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
}

/* The CPU backend runs a launch as one call over all elements, so the substeps are ordered.
 * Resident mode runs what a CUDA thread of the resident frame runs, vertex by vertex: its own
 * state comes from the input half (on the device it is in registers, and equal: it is what the
 * thread wrote there), its rest lengths from wfc_grid_rest12, the clock from a local double that
 * advances by dt each substep (the clock the per-substep path stores and reloads). */
static void spring_frame_cpu(const void *args, size_t begin, size_t end) {
  const wfc_frame_args *a = args;
  double time = a->half[0].clock_in->time;
  uint64_t subs = a->half[0].clock_in->substeps;
  for (uint32_t s = 0; s < a->substeps; s++) {
    const wfc_spring_args *h = &a->half[s & 1u];
    bool last = s + 1 == a->substeps;
    for (size_t i = begin; i < end; i++) {
      uint32_t fl;
      if (a->plan.mode == WFC_FRAME_RESIDENT) {
        const wfc_params *p = h->params;
        wfp_f4 x4 = h->pos_in[i], v4 = h->vel_in[i];
        float rl[WFC_GRID_LINKS];
        if (a->rest6) wfc_grid_rest12(a->rest6, a->nu, a->nr, (uint32_t)i, rl);
        fl = wfc_spring_vertex(p, h->colliders, h, a->rest6 ? rl : NULL, a->nu, a->nr, (uint32_t)i,
                               time, &x4, &v4);
        h->pos_out[i] = x4;
        h->vel_out[i] = v4;
      } else {
        fl = wfc_frame_elem(a, s, (uint32_t)i);
      }
      if (last && a->host_pos) a->host_pos[i] = h->pos_out[i];
      if (fl) flag_vertex(h->flags, fl, (uint32_t)i);
    }
    time += (double)h->params->dt;
    subs++;
    if (a->plan.mode == WFC_FRAME_RESIDENT && begin == 0 && end > 0) {
      wfc_clock c = {time, subs};
      *h->clock_out = c;
    }
  }
}

const wf_kernel wfc_spring_frame = {"cloth_spring_frame", spring_frame_cpu,
                                    WFC_FAST_CUDA(wfc_spring_frame_cuda)};

void wfc_spring_frame_plan(int ordinal, uint32_t n, uint32_t block, wfc_frame_plan *out) {
#ifdef WEFT_HAVE_CUDA
  if (ordinal >= 0) {
    wfc_spring_frame_plan_cuda(ordinal, n, block, out);
    return;
  }
#else
  (void)ordinal;
#endif
  uint32_t b = block ? block : 256;
  out->block = b;
  out->blocks = (uint32_t)(((uint64_t)n + b - 1) / b);
  out->resident_max = WFC_CPU_RESIDENT_MAX;
  out->mode = n <= WFC_CPU_RESIDENT_MAX ? WFC_FRAME_RESIDENT : WFC_FRAME_STRIDE;
}

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
