/* The particles' energies (wf_particles_energy_get, particle_energy.h): one kernel a particle,
 * its neighbours found through a hashed cell grid of the energy pass's own, and the rows summed
 * exactly (internal/xsum.h), so the sums do not depend on the order of the rows or on how the
 * system is split.
 *
 * One process: the kernels run on the first partition's device over the state in global-id
 * order: with one partition the solver's own buffers (nothing of the state crosses to the host,
 * only the rows come back), with several the master copy the solver gathers (its download),
 * uploaded there. Over MPI ranks (once distributed) each rank runs them on its own partitions'
 * arrays (ranked_sums): nothing of the state leaves its rank, and the sums add over the ranks as
 * integers. The grid is the energy pass's own, not the solver's: the solver's grids are refitted
 * between frames and sized by the skin, while every row must depend on the state only (the same
 * bits for 1..N partitions and ranks). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "internal/xsum.h"
#include "particle_energy.h"
#include "particle_kernels.h"
#include "particles_impl.h"
#include "solvers/partition/ranks.h"

#ifdef WEFT_HAVE_CUDA
#define WFP_CUDA(f) f
#else
#define WFP_CUDA(f) NULL
#endif

static void energy_cpu(const void *args, size_t begin, size_t end) {
  const wfp_energy_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfp_energy_elem(a, (uint32_t)i);
}

static void rmax_cpu(const void *args, size_t begin, size_t end) {
  for (size_t c = begin; c < end; c++)
    wfp_energy_rmax_part(args, (uint32_t)c);
}

static void inv_cpu(const void *args, size_t begin, size_t end) {
  if (begin == 0 && end > 0) wfp_energy_rmax_final(args);
}

static void keys_cpu(const void *args, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++)
    wfp_energy_keys_elem(args, (uint32_t)i);
}

static void starts_cpu(const void *args, size_t begin, size_t end) {
  for (size_t s = begin; s < end; s++)
    wfp_energy_starts_elem(args, (uint32_t)s);
}

const wf_kernel wfp_energy_kernel = {"particle_energy", energy_cpu, WFP_CUDA(wfp_energy_cuda),
                                     WF_GRAIN_HEAVY};
const wf_kernel wfp_energy_rmax_kernel = {"particle_energy_rmax", rmax_cpu,
                                          WFP_CUDA(wfp_energy_rmax_cuda), 16};
const wf_kernel wfp_energy_inv_kernel = {"particle_energy_inv_cell", inv_cpu,
                                         WFP_CUDA(wfp_energy_inv_cuda), 0};
const wf_kernel wfp_energy_keys_kernel = {"particle_energy_keys", keys_cpu,
                                          WFP_CUDA(wfp_energy_keys_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_energy_starts_kernel = {"particle_energy_starts", starts_cpu,
                                            WFP_CUDA(wfp_energy_starts_cuda), WF_GRAIN_LIGHT};

/* The device buffers of one call. */
enum {
  E_POS, /* E_POS .. E_HIST: the uploaded state (several partitions only) */
  E_VEL,
  E_MAT,
  E_OMEGA,
  E_HIST,
  E_KEYS,
  E_VALS,
  E_SORTED,
  E_ORDER,
  E_START,
  E_PARTIAL,
  E_INV,
  E_TEMP,
  E_ROWS,
  E_COUNT
};

typedef struct ework {
  uint32_t n, table;
  wfp_energy *rows; /* host */
  wf_buffer *buf[E_COUNT];
} ework;

static void ework_free(ework *w, wf_stream *s) {
  for (int b = 0; b < E_COUNT; b++)
    if (w->buf[b]) wf_buffer_destroy(w->buf[b], s);
  free(w->rows);
}

/* Over distributed MPI ranks each rank computes the rows of the particles its partitions own,
 * on their devices, from the partitions' arrays (owned particles and ghosts, global-id order):
 * an owned particle's neighbours within contact range are all there, the grid has the one
 * process's cell (the largest radius over the ranks) and table (from the particle count), so
 * each slot lists the one process's particles of that slot that are here, in the same order, and
 * the ones missing are out of range (they would add exactly +0.0). The rows are then the one
 * process's bits, and the sums (exact, internal/xsum.h) add over the ranks as integers: nothing
 * of the state leaves its rank. */
static bool ranked(const wf_particles *sp) { return sp->ranks && sp->distributed; }

/* The grid's table: a power of two of at least 64 slots and 2 n, capped at 2^22 (16 MB of
 * starts) past 2M particles; n the solver's particle count (over ranks: the whole system's, so
 * every rank hashes cells to the same slots). */
static uint32_t table_for(uint32_t n) {
  int bits = 6;
  while (bits < 22 && (1u << bits) < 2u * n)
    bits++;
  return 1u << bits;
}

static int sort_bits(uint32_t table) {
  int bits = 1;
  while ((1u << bits) < table)
    bits++;
  return bits;
}

/* The state in global-id order on partition 0's device: with one partition the solver's own
 * buffers (after a wait that reports its flags, as a download does), else the master copy
 * gathered by the download and uploaded into w's buffers. */
static wf_status state_on_device(wf_particles *sp, ework *w, wfp_energy_args *a) {
  wfp_part *p0 = sp->parts[sp->lead].ps;
  wf_stream *s = wfp_part_stream(p0);
  wf_device *dev = wfp_part_device(p0);
  if (sp->np == 1) {
    wf_status st = wfp_part_check(p0);
    if (st != WF_OK) return st;
    wfp_arrays d = wfp_part_arrays(p0);
    a->pos = d.pos, a->vel = d.vel, a->mat = d.mat, a->omega = d.omega, a->hist = d.hist;
    return WF_OK;
  }
  size_t n = w->n;
  wfp_f4 *pos = malloc(n * 16), *vel = malloc(n * 16);
  /* the solver's own positions: the colliders in the tables are in its frame */
  wf_status st = pos && vel ? wf_particles_download_local(sp, (float(*)[4])pos, (float(*)[4])vel)
                            : wf__error(WF_ERR_OUT_OF_MEMORY, "wf_particles_energy_get",
                                        "particles '%s': out of host memory", sp->name);
  /* the download gathered the master copy, material, omega and history beside pos and vel */
  const void *data[5] = {pos, vel, sp->mat, sp->omega, sp->hist};
  const size_t bytes[5] = {n * 16, n * 16, n * 2, n * 16, n * HIST_BYTES};
  for (int b = 0; b < 5 && st == WF_OK; b++) {
    st = wf_buffer_create(dev, bytes[b], 0, s, &w->buf[E_POS + b]);
    if (st == WF_OK) st = wf_upload(w->buf[E_POS + b], 0, data[b], bytes[b], s);
    if (st != WF_OK) wfp_fail_gpu(sp->name, st, "uploading the state for the energies");
  }
  free(pos), free(vel);
  if (st != WF_OK) return st;
  a->pos = wf_buffer_ptr(w->buf[E_POS]), a->vel = wf_buffer_ptr(w->buf[E_VEL]);
  a->mat = wf_buffer_ptr(w->buf[E_MAT]), a->omega = wf_buffer_ptr(w->buf[E_OMEGA]);
  a->hist = wf_buffer_ptr(w->buf[E_HIST]);
  return WF_OK;
}

/* The grid's buffers for w->n particles of a->pos on dev, and its largest-radius pass (the
 * cell, *inv_cell on the device); a's grid, tables and gravity set. */
static wf_status grid_start(wf_particles *sp, wfp_part *ps, ework *w, wfp_energy_args *a,
                            wfp_energy_grid_args *g, wfp_sort_args *so) {
  static const char fn[] = "wf_particles_energy_get";
  uint32_t n = w->n;
  wf_stream *s = wfp_part_stream(ps);
  wf_device *dev = wfp_part_device(ps);
  w->table = table_for(wf_particles_count(sp));
  int bits = sort_bits(w->table);
  w->rows = malloc((size_t)n * sizeof *w->rows);
  if (!w->rows)
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "particles '%s': out of host memory", sp->name);
  uint32_t chunks = (n + WFP_ENERGY_CHUNK - 1) / WFP_ENERGY_CHUNK;
  size_t temp = wfp_sort_temp_bytes(dev, n, bits);
  const size_t bytes[E_COUNT] = {[E_KEYS] = (size_t)n * 4,
                                 [E_VALS] = (size_t)n * 4,
                                 [E_SORTED] = (size_t)n * 4,
                                 [E_ORDER] = (size_t)n * 4,
                                 [E_START] = ((size_t)w->table + 1) * 4,
                                 [E_PARTIAL] = (size_t)chunks * 4,
                                 [E_INV] = 4,
                                 [E_TEMP] = temp,
                                 [E_ROWS] = (size_t)n * sizeof *w->rows};
  for (int b = E_KEYS; b < E_COUNT; b++)
    if (bytes[b])
      TRY(wf_buffer_create(dev, bytes[b], 0, s, &w->buf[b]), "allocating the energy buffers");
  *g = (wfp_energy_grid_args){.pos = a->pos,
                              .n = n,
                              .chunks = chunks,
                              .table = w->table,
                              .partial = wf_buffer_ptr(w->buf[E_PARTIAL]),
                              .inv_cell = wf_buffer_ptr(w->buf[E_INV]),
                              .keys = wf_buffer_ptr(w->buf[E_KEYS]),
                              .vals = wf_buffer_ptr(w->buf[E_VALS]),
                              .sorted = wf_buffer_ptr(w->buf[E_SORTED]),
                              .start = wf_buffer_ptr(w->buf[E_START])};
  *so = (wfp_sort_args){.keys = g->keys,
                        .vals = g->vals,
                        .keys_out = wf_buffer_ptr(w->buf[E_SORTED]),
                        .vals_out = wf_buffer_ptr(w->buf[E_ORDER]),
                        .n = n,
                        .bits = bits,
                        .temp = w->buf[E_TEMP] ? wf_buffer_ptr(w->buf[E_TEMP]) : NULL,
                        .temp_bytes = temp};
  wfp_tables t = wfp_part_tables(ps);
  wf_particles_params pp = wf_particles_params_get(sp);
  a->order = so->vals_out, a->start = g->start, a->inv_cell = g->inv_cell;
  a->mats = t.mats, a->colliders = t.colliders, a->clock = t.clock;
  a->out = wf_buffer_ptr(w->buf[E_ROWS]);
  a->table = w->table, a->n_colliders = t.n_colliders;
  a->model = (uint32_t)sp->desc.contact_model;
  /* positions are relative to the origin: a dynamic particle's potential gains -m g·origin */
  double o[3];
  wf_particles_origin(sp, o);
  a->g_origin = 0.0;
  for (int k = 0; k < 3; k++) {
    a->gravity[k] = pp.gravity[k];
    a->g_origin += (double)pp.gravity[k] * o[k];
  }
  TRY(wf_launch(&wfp_energy_rmax_kernel, chunks, g, sizeof *g, s), "launching the energy grid");
  TRY(wf_launch(&wfp_energy_inv_kernel, 1, g, sizeof *g, s), "launching the energy grid");
  return WF_OK;
}

/* The rest of the grid and the rows (w->rows, downloaded). inv_cell: the cell to use instead of
 * the one grid_start found here (over ranks: the largest radius over every rank's), or NULL. */
static wf_status grid_finish(wf_particles *sp, wfp_part *ps, ework *w, const wfp_energy_args *a,
                             const wfp_energy_grid_args *g, const wfp_sort_args *so,
                             const float *inv_cell) {
  wf_stream *s = wfp_part_stream(ps);
  if (inv_cell) TRY(wf_upload(w->buf[E_INV], 0, inv_cell, 4, s), "uploading the energy cell");
  TRY(wf_launch(&wfp_energy_keys_kernel, w->n, g, sizeof *g, s), "launching the energy grid");
  TRY(wf_launch(&wfp_sort, 1, so, sizeof *so, s), "sorting the energy grid");
  TRY(wf_launch(&wfp_energy_starts_kernel, (size_t)w->table + 1, g, sizeof *g, s),
      "launching the energy grid");
  TRY(wf_launch(&wfp_energy_kernel, w->n, a, sizeof *a, s), "launching the energy kernel");
  /* the kernels read the solver's buffers: later frees and copies on other streams wait */
  if (!w->buf[E_POS]) TRY(wfp_part_touch(ps), "ordering the solver after the energy kernels");
  /* a download orders itself after the buffer's last recorded user, which a kernel is not */
  TRY(wf_stream_synchronize(s), "waiting for the energy kernel");
  TRY(wf_download(w->rows, w->buf[E_ROWS], 0, (size_t)w->n * sizeof *w->rows),
      "downloading energies");
  return WF_OK;
}

/* The rows of every particle (w->rows, global-id order), computed on partition 0's device. */
static wf_status rows_compute(wf_particles *sp, ework *w) {
  uint32_t n = w->n = wf_particles_count(sp);
  wfp_part *p0 = sp->parts[sp->lead].ps;
  if (n == 0) return sp->np == 1 ? wfp_part_check(p0) : wf_particles_check(sp);
  wfp_energy_args a;
  memset(&a, 0, sizeof a);
  wfp_energy_grid_args g;
  wfp_sort_args so;
  wf_status st = state_on_device(sp, w, &a);
  if (st == WF_OK) st = grid_start(sp, p0, w, &a, &g, &so);
  if (st == WF_OK) st = grid_finish(sp, p0, w, &a, &g, &so, NULL);
  return st;
}

/* Six exact sums a range, esum[0..6): kinetic, rotational, potential, contact, collider,
 * shear. */
enum { ESUMS = 6 };

static void esum_add(wf_xsum *e, const wfp_energy *r) {
  const double v[ESUMS] = {r->kinetic, r->rotational, r->potential,
                           r->contact, r->collider,   r->shear};
  for (int k = 0; k < ESUMS; k++)
    wf_xsum_add(&e[k], v[k]);
}

static void esum_out(wf_xsum *e, wf_particles_energy *out) {
  memset(out, 0, sizeof *out);
  out->kinetic = wf_xsum_value(&e[0]), out->rotational = wf_xsum_value(&e[1]);
  out->potential = wf_xsum_value(&e[2]), out->contact = wf_xsum_value(&e[3]);
  out->collider = wf_xsum_value(&e[4]), out->shear = wf_xsum_value(&e[5]);
  out->elastic = out->contact + out->collider;
  out->total = out->kinetic + out->rotational + out->potential + out->elastic;
}

/* Over ranks: the rows this rank's partitions own, added to sums[r] for the ranges r holding
 * their ids. Each partition's grid starts first; the cell is agreed (the largest radius over the
 * ranks: the smallest 1 / 2r, exact in any order), then the grids finish. */
static wf_status ranked_sums(wf_particles *sp, int n_ranges, const uint32_t *first,
                             const uint32_t *count, wf_xsum *sums) {
  ework w[MAXP];
  wfp_energy_args a[MAXP];
  wfp_energy_grid_args g[MAXP];
  wfp_sort_args so[MAXP];
  memset(w, 0, sizeof w), memset(a, 0, sizeof a);
  wf_status st = wf_particles_check(sp); /* (agreed over the ranks) */
  double inv = INFINITY;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    if (!MINE(sp, p) || !(w[p].n = pt->n_local)) continue;
    wfp_arrays d = wfp_part_arrays(pt->ps);
    a[p].pos = d.pos, a[p].vel = d.vel, a[p].mat = d.mat, a[p].omega = d.omega;
    a[p].hist = d.hist, a[p].gid = d.gid;
    if ((st = grid_start(sp, pt->ps, &w[p], &a[p], &g[p], &so[p])) != WF_OK) break;
    float f = 0.0f;
    if ((st = wf_stream_synchronize(wfp_part_stream(pt->ps))) == WF_OK)
      st = wf_download(&f, w[p].buf[E_INV], 0, 4);
    if (st != WF_OK) wfp_fail_gpu(sp->name, st, "reading the energy cell");
    inv = fmin(inv, (double)f);
  }
  double mx[1] = {-inv}; /* (every rank enters the collectives, also one that failed) */
  wf_status st2 = wfpt_ranks_max_f64(sp->set, mx, 1);
  if (st == WF_OK) st = st2;
  float cell = (float)-mx[0];
  uint32_t *gid = NULL;
  float *anchor = NULL;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    uint32_t n = w[p].n;
    if (!MINE(sp, p) || !n) continue;
    st = grid_finish(sp, pt->ps, &w[p], &a[p], &g[p], &so[p], &cell);
    uint32_t *ng = realloc(gid, (size_t)n * 4);
    float *na = ng ? realloc(anchor, (size_t)n * 4) : NULL;
    if (ng) gid = ng;
    if (na) anchor = na;
    if (st == WF_OK && (!ng || !na))
      st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_particles_energy_get",
                     "particles '%s': out of host memory", sp->name);
    if (st == WF_OK &&
        (st = wf_download(gid, wfp_part_gid_buffer(pt->ps), 0, (size_t)n * 4)) == WF_OK)
      st = wf_download(anchor, pt->anchor.b, 0, (size_t)n * 4);
    if (st != WF_OK) wfp_fail_gpu(sp->name, st, "reading the ids");
    for (uint32_t i = 0; i < n && st == WF_OK; i++) {
      if (anchor[i] != anchor[i]) continue; /* a ghost (NaN anchor): its owner counts it */
      for (int r = 0; r < n_ranges; r++)
        if (gid[i] >= first[r] && gid[i] - first[r] < count[r])
          esum_add(&sums[r * ESUMS], &w[p].rows[i]);
    }
  }
  free(gid), free(anchor);
  for (int p = 0; p < sp->np; p++)
    if (MINE(sp, p)) ework_free(&w[p], wfp_part_stream(sp->parts[p].ps));
  bool failed = st != WF_OK;
  st2 = wfpt_ranks_sum_xsum(sp->set, sums, n_ranges * ESUMS, &failed);
  if (st == WF_OK) st = st2;
  if (st == WF_OK && failed)
    st = wf__error(WF_ERR_BACKEND, "wf_particles_energy_get",
                   "particles '%s': another rank failed to compute the energies (this is rank %d)",
                   sp->name, sp->set->rank);
  return st;
}

wf_status wf_particles_energy_ranges(wf_particles *sp, int n, const uint32_t *first,
                                     const uint32_t *count, wf_particles_energy *out) {
  static const char fn[] = "wf_particles_energy_ranges";
  if (!sp || !out || n < 0 || (n > 0 && (!first || !count)))
    return wf__error(WF_ERR_INVALID, fn, "NULL argument or negative range count");
  uint32_t total = wf_particles_count(sp);
  for (int r = 0; r < n; r++)
    if (first[r] > total || count[r] > total - first[r])
      return wf__error(WF_ERR_INVALID, fn,
                       "particles '%s': range %d [%u, %u + %u) is beyond the %u particles",
                       sp->name, r, first[r], first[r], count[r], total);
  wf_xsum *sums = calloc(n ? (size_t)n * ESUMS : 1, sizeof *sums);
  if (!sums) /* (over ranks the others then stop at the first collective's disagreement) */
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "particles '%s': out of host memory", sp->name);
  wf_status st;
  if (ranked(sp)) {
    st = ranked_sums(sp, n, first, count, sums);
  } else {
    ework w = {0};
    st = rows_compute(sp, &w);
    for (int r = 0; r < n && st == WF_OK; r++)
      for (uint32_t i = first[r]; i < first[r] + count[r]; i++)
        esum_add(&sums[r * ESUMS], &w.rows[i]);
    ework_free(&w, wfp_part_stream(sp->parts[sp->lead].ps));
  }
  for (int r = 0; r < n && st == WF_OK; r++)
    esum_out(&sums[r * ESUMS], &out[r]);
  free(sums);
  return st;
}

wf_status wf_particles_energy_get(wf_particles *sp, wf_particles_energy *out) {
  if (!sp || !out)
    return wf__error(WF_ERR_INVALID, "wf_particles_energy_get", "particles or out is NULL");
  uint32_t first = 0, count = wf_particles_count(sp);
  return wf_particles_energy_ranges(sp, 1, &first, &count, out);
}
