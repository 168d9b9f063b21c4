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

/* The spring force of vertex i as a resident grid frame computes it with `lanes` threads a
 * vertex: each lane's springs (wfc_lane_springs) and partial sums (wfc_lane_gather), reading the
 * neighbours from P, V at li + offset, put together as s_{l + lanes q} = lane l's acc[q] and
 * summed in the canonical shape (on the device: the shuffles of cloth_fast.cu). */
static wfc_v3 lanes_force(const wfc_params *p, const wfc_spring_args *h, uint32_t lanes,
                          const wfp_f4 *P, const wfp_f4 *V, uint32_t li, uint32_t i, wfc_v3 x,
                          wfc_v3 v) {
  wfc_v3 s[4];
  for (int q = 0; q < 4; q++)
    s[q] = wfc_v(0.0f, 0.0f, 0.0f);
  for (uint32_t l = 0; l < lanes; l++) {
    int32_t dk[WFC_GRID_LINKS];
    float rest[WFC_GRID_LINKS];
    wfc_v3 acc[4];
    for (int q = 0; q < 4; q++)
      acc[q] = wfc_v(0.0f, 0.0f, 0.0f);
    uint32_t nl = wfc_lane_springs(h, i, l, lanes, dk, rest);
    wfc_lane_gather(p, P, V, li, x, v, lanes, nl, dk, rest, acc);
    for (uint32_t q = 0; q < 4 / lanes; q++)
      s[l + lanes * q] = acc[q];
  }
  return wfc_tree4(s[0], s[1], s[2], s[3]);
}

/* One substep of the frame over the vertices [lo + begin, lo + end): a stage of
 * wf_cpu_parallel_for. Each vertex reads only the input half and writes only its own slots of
 * the output half (flags and collider impulses are integer sums), so the pieces may run in any
 * order on any thread with the same result bit for bit. */
typedef struct spring_stage {
  const wfc_frame_args *a;
  uint32_t s;  /* the substep */
  size_t lo;   /* the launch's first vertex */
  double time; /* the clock at the substep's start */
} spring_stage;

/* Resident mode runs what a CUDA thread of the resident frame runs, vertex by vertex: its own
 * state comes from the input half (on the device it is in registers, and equal: it is what the
 * thread wrote there), the clock from a local double that advances by dt each substep (the clock
 * the per-substep path stores and reloads). Grid cloths go block by block (block / lanes
 * vertices), with the lanes emulated (lanes_force) and, with staging, the block's neighbourhood
 * copied first into a buffer the gather reads (as the shared memory on the device; a piece that
 * starts inside a block stages that block's). */
static void spring_substep_cpu(const void *args, size_t begin, size_t end) {
  const spring_stage *st = args;
  const wfc_frame_args *a = st->a;
  const uint32_t s = st->s;
  const double time = st->time;
  begin += st->lo, end += st->lo;
  const bool resident = a->plan.mode == WFC_FRAME_RESIDENT;
  const bool lanes = resident && a->rest6;
  const uint32_t L = lanes ? a->plan.lanes : 1, vpb = lanes ? a->plan.block / L : 1;
  const uint32_t n = a->half[0].n;
  wfp_f4 *stage = lanes && a->plan.smem ? malloc((size_t)a->plan.span * 2 * sizeof *stage) : NULL;
  unsigned long long table[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS]; /* collider_force.h */
  wfx_forces F = {a->half[0].forces ? table : NULL, 0};
  const wfc_spring_args *h = &a->half[s & 1u];
  const wfc_params *p = h->params;
  bool last = s + 1 == a->substeps;
  uint32_t lo_v = 0, hi_v = 0; /* the staged vertices of the current block */
  for (size_t i = begin; i < end; i++) {
    uint32_t fl;
    if (lanes) {
      const wfp_f4 *P = h->pos_in, *V = h->vel_in;
      uint32_t li = (uint32_t)i;
      uint32_t first = (uint32_t)i / vpb * vpb;
      if (stage) {
        if (i == begin || (uint32_t)i == first) { /* a new block: stage its neighbourhood */
          lo_v = first > a->reach ? first - a->reach : 0;
          uint64_t hv = (uint64_t)first + vpb - 1 + a->reach;
          hi_v = hv > n - 1 ? n - 1 : (uint32_t)hv;
          for (uint32_t t = 0; t <= hi_v - lo_v; t++) {
            stage[t] = h->pos_in[lo_v + t];
            stage[a->plan.span + t] = h->vel_in[lo_v + t];
          }
        }
        P = stage, V = stage + a->plan.span, li = (uint32_t)i - lo_v;
      }
      wfp_f4 x4 = h->pos_in[i], v4 = h->vel_in[i];
      wfc_v3 f = wfc_v(0.0f, 0.0f, 0.0f);
      if (x4.w > 0.0f) f = lanes_force(p, h, L, P, V, li, (uint32_t)i, wfc_xyz(x4), wfc_xyz(v4));
      fl = wfc_spring_finish(p, h->colliders, h, (uint32_t)i, time, f, &x4, &v4, &F);
      h->pos_out[i] = x4;
      h->vel_out[i] = v4;
    } else if (resident) {
      wfp_f4 x4 = h->pos_in[i], v4 = h->vel_in[i];
      fl = wfc_spring_vertex(p, h->colliders, h, NULL, a->nu, a->nr, (uint32_t)i, time, &x4, &v4,
                             &F);
      h->pos_out[i] = x4;
      h->vel_out[i] = v4;
    } else {
      fl = wfc_frame_elem(a, s, (uint32_t)i, &F);
    }
    if (last && a->host_pos) wfc_frame_put(a, i, h->pos_out[i]);
    if (fl) flag_vertex(h->flags, fl, (uint32_t)i);
  }
  wfx_forces_flush(&F, h->forces);
  free(stage);
}

/* The launch is one call (cpu_grain 0: a substep needs every vertex of the one before), and each
 * substep a stage split over the CPU worker pool. */
static void spring_frame_cpu(const void *args, size_t begin, size_t end) {
  const wfc_frame_args *a = args;
  spring_stage st = {.a = a, .lo = begin, .time = a->half[0].clock_in->time};
  uint64_t subs = a->half[0].clock_in->substeps;
  const bool resident = a->plan.mode == WFC_FRAME_RESIDENT;
  for (uint32_t s = 0; s < a->substeps; s++) {
    const wfc_spring_args *h = &a->half[s & 1u];
    st.s = s;
    wf_cpu_parallel_for(spring_substep_cpu, &st, end - begin, WF_GRAIN_HEAVY);
    st.time += (double)h->params->dt;
    subs++;
    if (resident && begin == 0 && end > 0) {
      wfc_clock c = {.time = st.time, .substeps = subs};
      *h->clock_out = c;
    }
  }
}

const wf_kernel wfc_spring_frame = {"cloth_spring_frame", spring_frame_cpu,
                                    WFC_FAST_CUDA(wfc_spring_frame_cuda), 0};

void wfc_spring_frame_plan(int ordinal, uint32_t n, const wfc_frame_want *want,
                           wfc_frame_plan *out) {
#ifdef WEFT_HAVE_CUDA
  if (ordinal >= 0) {
    wfc_spring_frame_plan_cuda(ordinal, n, want, out);
    return;
  }
#else
  (void)ordinal;
#endif
  uint32_t b = want->block ? want->block : 256;
  out->resident_max = WFC_CPU_RESIDENT_MAX;
  out->mode = n <= WFC_CPU_RESIDENT_MAX ? WFC_FRAME_RESIDENT : WFC_FRAME_STRIDE;
  out->lanes = 1, out->smem = 0, out->span = 0, out->tile_w = out->tile_h = 0;
  out->tile_steps = 0;
  if (out->mode == WFC_FRAME_RESIDENT && want->grid) {
    uint32_t L = want->lanes ? want->lanes : 4;
    while (L > 1 && (uint64_t)L * n > WFC_CPU_RESIDENT_MAX)
      L /= 2;
    out->lanes = L;
    b = b < 32 ? 32 : b / 32 * 32; /* as on the device: whole warps, a multiple of the lanes */
    uint64_t span = (uint64_t)b / L + 2 * (uint64_t)want->reach;
    out->span = (uint32_t)(span < n ? span : n);
    out->smem = want->smem == 2 ? L == 1 : want->smem == 1;
    if (out->smem && (uint64_t)out->span * 2 * sizeof(wfp_f4) > WFC_SMEM_MAX) out->smem = 0;
    if (!out->smem) out->span = 0;
  }
  out->block = b;
  out->blocks = (uint32_t)(((uint64_t)n * out->lanes + b - 1) / b);
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
