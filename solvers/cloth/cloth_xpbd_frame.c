/* CPU side of the XPBD one-launch frame (cloth_xpbd_frame.h): the stages of every substep as
 * loops over all elements, in the order of the staged path, and the plan. */
#include "cloth_xpbd_frame.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

/* A stage of a substep over the items [begin, end): GRID mode's blocks, otherwise the stage's
 * elements (vertices, or a colour's constraints). The stage function of wf_cpu_parallel_for. */
typedef struct xpbd_stage {
  const wfc_xpbd_frame_args *a;
  wfc_solve_args sa; /* SOLVE: colour q's arguments */
  uint32_t q;        /* SOLVE: the colour */
  bool last;         /* FINALIZE: the frame's last substep (the readback) */
} xpbd_stage;

/* PREDICT, and the multipliers cleared: in GRID mode a block's vertices and its bands; otherwise
 * vertices [begin, end) and the same share of the constraints. */
static void predict_stage(const void *args, size_t begin, size_t end) {
  const xpbd_stage *st = args;
  const wfc_xpbd_frame_args *a = st->a;
  if (a->plan.mode != WFC_XPBD_GRID) {
    for (size_t i = begin; i < end; i++)
      wfc_predict_elem(&a->predict, (uint32_t)i);
    if (!a->solve.lambda) return;
    size_t k0 = a->n ? (size_t)((uint64_t)a->constraints * begin / a->n) : 0;
    size_t k1 = a->n ? (size_t)((uint64_t)a->constraints * end / a->n) : a->constraints;
    for (size_t k = k0; k < k1; k++)
      a->solve.lambda[k] = 0.0f;
    return;
  }
  for (size_t b = begin; b < end; b++) {
    uint32_t lo, hi;
    wfc_xpbd_vertices(a, (uint32_t)b, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++)
      wfc_predict_elem(&a->predict, i);
    if (!a->solve.lambda) continue;
    for (uint32_t q = 0; q < a->colours; q++) {
      uint32_t j0, j1;
      wfc_xpbd_band(a, q, (uint32_t)b, &j0, &j1);
      for (uint32_t j = j0; j < j1; j++)
        a->solve.lambda[a->perm[j]] = 0.0f;
    }
  }
}

/* SOLVE colour q: the constraints of a colour share no vertex. */
static void solve_stage(const void *args, size_t begin, size_t end) {
  const xpbd_stage *st = args;
  const wfc_xpbd_frame_args *a = st->a;
  if (a->plan.mode != WFC_XPBD_GRID) {
    for (size_t k = begin; k < end; k++)
      wfc_solve_elem(&st->sa, (uint32_t)k);
    return;
  }
  const uint32_t c0 = a->colour_start[st->q];
  for (size_t b = begin; b < end; b++) {
    uint32_t j0, j1;
    wfc_xpbd_band(a, st->q, (uint32_t)b, &j0, &j1);
    for (uint32_t j = j0; j < j1; j++)
      wfc_solve_elem(&st->sa, a->perm[j] - c0);
  }
}

/* FINALIZE; the collider impulses go into a table of the piece's, added to the cloth's at its
 * end (integer sums: the order of the additions does not matter). */
static void finalize_stage(const void *args, size_t begin, size_t end) {
  const xpbd_stage *st = args;
  const wfc_xpbd_frame_args *a = st->a;
  unsigned long long table[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS]; /* collider_force.h */
  wfx_forces F = {a->finalize.forces ? table : NULL, 0};
  uint32_t lo = (uint32_t)begin, hi = (uint32_t)end;
  if (a->plan.mode == WFC_XPBD_GRID) {
    uint32_t l2;
    wfc_xpbd_vertices(a, (uint32_t)begin, &lo, &l2);
    wfc_xpbd_vertices(a, (uint32_t)end - 1u, &l2, &hi);
  }
  for (uint32_t i = lo; i < hi; i++) {
    uint32_t fl = wfc_finalize_elem(&a->finalize, i, &F);
    if (st->last && a->host_pos) wfc_xpbd_put(a, i, a->finalize.pos[i]);
    if (fl) flag_vertex(a->finalize.flags, fl, i);
  }
  wfx_forces_flush(&F, a->finalize.forces);
}

/* The kernel's cpu_grain is 0: the backend calls it once over [0, n), and the stages below run
 * in the order the barriers of the CUDA kernel give them, each one split over the CPU worker
 * pool (wf_cpu_parallel_for: every piece of a stage is done before the next stage starts), with
 * the staged kernels' grains. GRID goes by blocks (a block's bands, as the CUDA blocks share the
 * elements); the order within a stage does not change a bit of the result. */
static void xpbd_frame_cpu(const void *args, size_t begin, size_t end) {
  const wfc_xpbd_frame_args *a = args;
  (void)begin, (void)end;
  const bool grid = a->plan.mode == WFC_XPBD_GRID;
  const size_t items = grid ? a->plan.blocks : a->n;
  xpbd_stage st = {.a = a};
  for (uint32_t s = 0; s < a->substeps; s++) {
    wf_cpu_parallel_for(predict_stage, &st, items, grid ? 1 : WF_GRAIN_LIGHT);
    for (uint32_t it = 0; it < a->iterations; it++)
      for (uint32_t q = 0; q < a->colours; q++) {
        st.q = q;
        st.sa = wfc_xpbd_colour_args(a, q);
        size_t m = grid ? a->plan.blocks : a->colour_start[q + 1] - a->colour_start[q];
        wf_cpu_parallel_for(solve_stage, &st, m, grid ? 1 : WF_GRAIN_HEAVY);
      }
    st.last = s + 1 == a->substeps;
    wf_cpu_parallel_for(finalize_stage, &st, items, grid ? 1 : WF_GRAIN_LIGHT);
    st.last = false;
  }
}

const wf_kernel wfc_xpbd_frame = {"cloth_xpbd_frame", xpbd_frame_cpu,
                                  WFC_XF_CUDA(wfc_xpbd_frame_cuda), 0};

/* GRID's bands and barrier once the blocks are known: vpb vertices a block, and the neighbour
 * barrier where a block has at most WFC_XPBD_MAX_NEIGHBOURS neighbours (and grid_sync is not
 * asked for). Shared by both backends' plans. */
void wfc_xpbd_plan_bands(uint32_t n, uint32_t reach, bool grid_sync, wfc_xpbd_plan *out) {
  if (out->blocks == 0) out->blocks = 1;
  uint64_t vpb = ((uint64_t)n + out->blocks - 1) / out->blocks;
  if (vpb == 0) vpb = 1;
  out->vpb = (uint32_t)vpb;
  out->blocks = (uint32_t)(((uint64_t)n + vpb - 1) / vpb); /* none empty */
  if (out->blocks == 0) out->blocks = 1;
  const uint64_t near = (vpb - 1 + 2 * (uint64_t)reach) / vpb;
  out->near = near < out->blocks ? (uint32_t)near : out->blocks;
  out->barrier = grid_sync || 2 * near > WFC_XPBD_MAX_NEIGHBOURS ? WFC_XPBD_SYNC_GRID
                                                                 : WFC_XPBD_SYNC_NEIGHBOURS;
}

void wfc_xpbd_frame_plan(int ordinal, uint32_t n, uint32_t reach, uint32_t block,
                         uint32_t block_max, bool grid_sync, uint32_t shared_min,
                         wfc_xpbd_plan *out) {
  memset(out, 0, sizeof *out);
#ifdef WEFT_HAVE_CUDA
  if (ordinal >= 0) {
    wfc_xpbd_frame_plan_cuda(ordinal, n, reach, block, block_max, grid_sync, shared_min, out);
    return;
  }
#else
  (void)ordinal;
#endif
  (void)shared_min; /* the CPU's BLOCK runs the stages over all elements, cached by the CPU */
  /* the plan a GPU would get, without its occupancy limit */
  uint32_t b = block ? block : WFC_XPBD_BLOCK_THREADS;
  out->mode = n <= block_max ? WFC_XPBD_BLOCK : WFC_XPBD_GRID;
  if (out->mode == WFC_XPBD_GRID && !block) b = WFC_XPBD_GRID_THREADS;
  b = b < 32 ? 32 : b > WFC_XPBD_BLOCK_THREADS ? WFC_XPBD_BLOCK_THREADS : b / 32 * 32;
  out->block = b;
  out->blocks = 1;
  if (out->mode == WFC_XPBD_BLOCK) return;
  out->blocks = (uint32_t)(((uint64_t)n + b - 1) / b);
  wfc_xpbd_plan_bands(n, reach, grid_sync, out);
}

static void span_of(const uint32_t *v, int k, uint32_t *lo, uint32_t *hi) {
  *lo = *hi = v[0];
  for (int q = 1; q < k; q++)
    *lo = v[q] < *lo ? v[q] : *lo, *hi = v[q] > *hi ? v[q] : *hi;
}

uint32_t wfc_xpbd_reach(const wfc_constraint *cons, uint32_t count, const uint32_t *tris,
                        uint32_t nt) {
  uint32_t reach = 0, lo, hi;
  for (uint32_t k = 0; k < count; k++) {
    span_of(cons[k].v, cons[k].kind == WFC_BEND ? 4 : 2, &lo, &hi);
    reach = hi - lo > reach ? hi - lo : reach;
  }
  for (uint32_t t = 0; t < nt; t++) {
    span_of(tris + 3 * (size_t)t, 3, &lo, &hi);
    reach = hi - lo > reach ? hi - lo : reach;
  }
  return reach;
}

uint32_t *wfc_xpbd_bands_build(const wfc_constraint *cons, uint32_t count,
                               const uint32_t *colour_start, uint32_t colours,
                               const wfc_xpbd_plan *plan) {
  const uint32_t B = plan->blocks;
  uint32_t *out = malloc(((size_t)count + (size_t)colours * (B + 1u)) * sizeof *out + 4);
  if (!out) return NULL;
  uint32_t *perm = out, *band = out + count;
  for (uint32_t q = 0; q < colours; q++) {
    uint32_t *row = band + (size_t)q * (B + 1u);
    memset(row, 0, (B + 1u) * sizeof *row);
    const uint32_t c0 = colour_start[q], c1 = colour_start[q + 1];
    uint32_t lo, hi;
    for (uint32_t k = c0; k < c1; k++) { /* a counting sort by the lowest vertex's block */
      span_of(cons[k].v, cons[k].kind == WFC_BEND ? 4 : 2, &lo, &hi);
      row[lo / plan->vpb + 1u]++;
    }
    row[0] = c0;
    for (uint32_t b = 0; b < B; b++)
      row[b + 1] += row[b];
    for (uint32_t k = c0; k < c1; k++) { /* stable: row[b] is block b's next slot meanwhile */
      span_of(cons[k].v, cons[k].kind == WFC_BEND ? 4 : 2, &lo, &hi);
      perm[row[lo / plan->vpb]++] = k;
    }
    for (uint32_t b = B; b > 0; b--) /* back to the starts */
      row[b] = row[b - 1];
    row[0] = c0;
  }
  return out;
}
