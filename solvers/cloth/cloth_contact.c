/* Cloth contact, CPU side (cloth_contact.h): the kernels' loops and wf_kernel objects, and the
 * contact topology built once on the host (edges and the lists of what each vertex has and
 * owns). The stage itself is enqueued by cloth.c (stage_contact). */
#include "cloth_contact_topo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef WEFT_HAVE_CUDA
#define WFCC_CUDA(f) f
#else
#define WFCC_CUDA(f) NULL
#endif

static void disp_cpu(const void *args, size_t begin, size_t end) {
  const wfcc_disp_args *a = args;
  uint32_t best[2] = {0u, 0u};
  for (size_t i = begin; i < end; i++) {
    uint32_t b = wfcc_disp_bits(a, (uint32_t)i), e = wfcc_edge_bits(a, (uint32_t)i);
    best[0] = b > best[0] ? b : best[0];
    best[1] = e > best[1] ? e : best[1];
  }
  /* integer maxima: the same result whatever the order (the loop may be split over threads) */
  for (int k = 0; k < 2; k++) {
    uint32_t cur = __atomic_load_n(&a->max_bits[k], __ATOMIC_RELAXED);
    while (best[k] > cur && !__atomic_compare_exchange_n(&a->max_bits[k], &cur, best[k], true,
                                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
  }
}

static void reach_cpu(const void *args, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++)
    wfcc_reach_elem(args, (uint32_t)i);
}

static void keys_cpu(const void *args, size_t begin, size_t end) {
  const wfcc_keys_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfcc_keys_elem(a, (uint32_t)i);
}

static void gather_cpu(const void *args, size_t begin, size_t end) {
  const wfcc_gather_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfcc_gather_elem(a, (uint32_t)i);
}

static void scatter_cpu(const void *args, size_t begin, size_t end) {
  const wfcc_scatter_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfcc_scatter_elem(a, (uint32_t)i);
}

static void apply_cpu(const void *args, size_t begin, size_t end) {
  const wfcc_apply_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfcc_apply_elem(a, (uint32_t)i);
}

const wf_kernel wfcc_disp = {"cloth_contact_disp", disp_cpu, WFCC_CUDA(wfcc_disp_cuda),
                             WF_GRAIN_LIGHT};
const wf_kernel wfcc_reach = {"cloth_contact_reach", reach_cpu, WFCC_CUDA(wfcc_reach_cuda), 0};
const wf_kernel wfcc_keys = {"cloth_contact_keys", keys_cpu, WFCC_CUDA(wfcc_keys_cuda),
                             WF_GRAIN_LIGHT};
const wf_kernel wfcc_gather = {"cloth_contact_gather", gather_cpu, WFCC_CUDA(wfcc_gather_cuda),
                               WF_GRAIN_HEAVY};
const wf_kernel wfcc_scatter = {"cloth_contact_scatter", scatter_cpu, WFCC_CUDA(wfcc_scatter_cuda),
                                WF_GRAIN_LIGHT};
const wf_kernel wfcc_apply = {"cloth_contact_apply", apply_cpu, WFCC_CUDA(wfcc_apply_cuda),
                              WF_GRAIN_LIGHT};

void wfcc_host_free(wfcc_host *h) {
  free(h->edges), free(h->ve_start), free(h->ve_list);
  free(h->own_t_start), free(h->own_t), free(h->own_e_start), free(h->own_e), free(h->piece);
  memset(h, 0, sizeof *h);
}

/* A CSR of nv rows from `count` items, item k in the rows row[k * stride + 0 .. per - 1]. */
static int csr(uint32_t nv, uint32_t count, const uint32_t *row, int stride, int per,
               uint32_t **start_out, uint32_t **list_out) {
  uint32_t *start = calloc((size_t)nv + 1, sizeof *start);
  uint32_t *list = malloc(((size_t)count * per + 1) * sizeof *list);
  uint32_t *fill = calloc((size_t)nv + 1, sizeof *fill);
  if (!start || !list || !fill) {
    free(start), free(list), free(fill);
    return 0;
  }
  for (uint32_t k = 0; k < count; k++)
    for (int j = 0; j < per; j++)
      start[row[(size_t)k * stride + j] + 1]++;
  for (uint32_t v = 0; v < nv; v++)
    start[v + 1] += start[v];
  for (uint32_t k = 0; k < count; k++) /* in item order: a fixed order */
    for (int j = 0; j < per; j++) {
      uint32_t v = row[(size_t)k * stride + j];
      list[start[v] + fill[v]++] = k;
    }
  free(fill);
  *start_out = start, *list_out = list;
  return 1;
}

int wfcc_host_build(const wfc_topology *t, wfcc_host *h, float *longest) {
  memset(h, 0, sizeof *h);
  h->ne = t->ne;
  h->edges = malloc(((size_t)t->ne * 2 + 1) * sizeof *h->edges);
  uint32_t *lowest_t = malloc(((size_t)t->nt + 1) * sizeof *lowest_t);
  uint32_t *lower_e = malloc(((size_t)t->ne + 1) * sizeof *lower_e);
  int ok = h->edges && lowest_t && lower_e;
  float l2 = 0.0f;
  for (uint32_t e = 0; ok && e < t->ne; e++) {
    uint32_t a = t->edges[e].a, b = t->edges[e].b;
    h->edges[2 * e] = a, h->edges[2 * e + 1] = b;
    lower_e[e] = a < b ? a : b;
    float d2 = 0.0f;
    for (int k = 0; k < 3; k++)
      d2 += (t->x[a][k] - t->x[b][k]) * (t->x[a][k] - t->x[b][k]);
    if (d2 > l2) l2 = d2;
  }
  for (uint32_t q = 0; ok && q < t->nt; q++) {
    const uint32_t *v = t->tris + 3 * (size_t)q;
    uint32_t lo = v[0] < v[1] ? v[0] : v[1];
    lowest_t[q] = lo < v[2] ? lo : v[2];
  }
  ok = ok && csr(t->nv, t->ne, h->edges, 2, 2, &h->ve_start, &h->ve_list) &&
       csr(t->nv, t->nt, lowest_t, 1, 1, &h->own_t_start, &h->own_t) &&
       csr(t->nv, t->ne, lower_e, 1, 1, &h->own_e_start, &h->own_e);
  free(lowest_t), free(lower_e);
  /* pieces: union-find over the edges, each labelled by its lowest vertex */
  h->piece = ok ? malloc(((size_t)t->nv + 1) * sizeof *h->piece) : NULL;
  ok = ok && h->piece;
  for (uint32_t v = 0; ok && v < t->nv; v++)
    h->piece[v] = v;
  for (uint32_t e = 0; ok && e < t->ne; e++) {
    uint32_t a = t->edges[e].a, b = t->edges[e].b;
    while (h->piece[a] != a)
      a = h->piece[a] = h->piece[h->piece[a]];
    while (h->piece[b] != b)
      b = h->piece[b] = h->piece[h->piece[b]];
    if (a != b) h->piece[a > b ? a : b] = a < b ? a : b;
  }
  for (uint32_t v = 0; ok && v < t->nv; v++) { /* roots are the lowest: resolve in order */
    uint32_t r = v;
    while (h->piece[r] != r)
      r = h->piece[r];
    h->piece[v] = r;
  }
  if (!ok) wfcc_host_free(h);
  *longest = sqrtf(l2);
  return ok;
}
