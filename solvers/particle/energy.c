/* The particles' energies (wf_particles_energy_get, particle_energy.h): one kernel a particle on
 * the first partition's device over the state in global-id order, its neighbours found through a
 * hashed cell grid built there too, and the rows summed on the host in global-id order in double.
 *
 * With one partition the kernels read the solver's own buffers (its particles are in global-id
 * order): nothing of the state crosses to the host, only the rows come back. With several, the
 * state is the master copy the solver gathers in global-id order (its download), uploaded to
 * partition 0's device. Over MPI ranks (once distributed, when no rank keeps a master copy) the
 * state is gathered on rank 0 alone for the call, rank 0 computes the rows and sums them as one
 * process does, and broadcasts the sums: the same bits on every rank, and the whole state held
 * by one rank only while it computes. The grid is the energy pass's own, not the solver's: the
 * solver's grids are per partition, in local order, with ghosts, and their cells are refitted
 * between frames, while every row must depend on the whole state only (the same bits for 1..N
 * partitions). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
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

#define ALL_COLUMNS (WFP_COL_POS | WFP_COL_VEL | WFP_COL_MAT | WFP_COL_OMEGA | WFP_COL_HIST)

/* Over distributed MPI ranks the energies are computed on rank 0 alone, from the whole state
 * gathered there for the call (every row depends on the whole state, and the sums run in
 * global-id order), and rank 0 broadcasts the sums: a rank r > 0 only sends its rows. */
static bool on_rank_0(const wf_particles *sp) { return sp->ranks && sp->distributed; }

/* A rank r > 0's part: the check and the gather rank 0 makes (the same collectives). */
static wf_status rows_send(wf_particles *sp) {
  wf_status st = wf_particles_check(sp);
  if (st != WF_OK) return st; /* (agreed: rank 0 stops too) */
  return wfp_state_columns(sp, ALL_COLUMNS, 0, NULL, NULL, NULL, NULL, NULL);
}

/* Rank 0's status, then (when it is WF_OK) its sums out[0..n), to every rank; st is this rank's
 * own, which comes first. */
static wf_status sums_share(wf_particles *sp, wf_status st, int n, wf_particles_energy *out) {
  int64_t code = st;
  wf_status st2 = wfpt_ranks_bcast(sp->set, &code, sizeof code, 0);
  if (st2 == WF_OK && code == WF_OK)
    st2 = wfpt_ranks_bcast(sp->set, out, (size_t)n * sizeof *out, 0);
  if (st != WF_OK) return st;
  if (st2 != WF_OK) return st2;
  if (code != WF_OK)
    return wf__error((wf_status)code, "wf_particles_energy_get",
                     "particles '%s': rank 0 failed to compute the energies (this is rank %d)",
                     sp->name, sp->set->rank);
  return WF_OK;
}

/* The state in global-id order on partition 0's device: with one partition the solver's own
 * buffers (after a wait that reports its flags, as a download does), else the master copy
 * gathered by the download (over distributed ranks: the columns gathered on rank 0) and
 * uploaded into w's buffers. */
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
  wfp_f4 *pos = NULL, *vel = NULL, *omega = NULL;
  uint16_t *mat = NULL;
  wfp_hist *hist = NULL;
  wf_status st;
  if (sp->ranks && sp->distributed) { /* rank 0 (rows_compute): every column gathered here */
    if ((st = wf_particles_check(sp)) != WF_OK) return st; /* (agreed: on every rank) */
    pos = malloc(n * 16), vel = malloc(n * 16), omega = malloc(n * 16);
    mat = malloc(n * 2), hist = malloc(n * HIST_BYTES);
    st = wfp_state_columns(sp, ALL_COLUMNS, 0, pos, vel, mat, omega, hist);
    if (st == WF_OK && (!pos || !vel || !mat || !omega || !hist))
      st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_particles_energy_get",
                     "particles '%s': rank 0: out of host memory for the energies of %zu "
                     "particles",
                     sp->name, n);
  } else {
    pos = malloc(n * 16), vel = malloc(n * 16);
    /* the solver's own positions: the colliders in the tables are in its frame */
    st = pos && vel ? wf_particles_download_local(sp, (float(*)[4])pos, (float(*)[4])vel)
                    : wf__error(WF_ERR_OUT_OF_MEMORY, "wf_particles_energy_get",
                                "particles '%s': out of host memory", sp->name);
  }
  /* one process: the download gathered the master copy, material, omega and history beside pos
   * and vel */
  const void *data[5] = {pos, vel, mat ? mat : sp->mat, omega ? omega : sp->omega,
                         hist ? hist : sp->hist};
  const size_t bytes[5] = {n * 16, n * 16, n * 2, n * 16, n * HIST_BYTES};
  for (int b = 0; b < 5 && st == WF_OK; b++) {
    st = wf_buffer_create(dev, bytes[b], 0, s, &w->buf[E_POS + b]);
    if (st == WF_OK) st = wf_upload(w->buf[E_POS + b], 0, data[b], bytes[b], s);
    if (st != WF_OK) wfp_fail_gpu(sp->name, st, "uploading the state for the energies");
  }
  free(pos), free(vel), free(mat), free(omega), free(hist);
  if (st != WF_OK) return st;
  a->pos = wf_buffer_ptr(w->buf[E_POS]), a->vel = wf_buffer_ptr(w->buf[E_VEL]);
  a->mat = wf_buffer_ptr(w->buf[E_MAT]), a->omega = wf_buffer_ptr(w->buf[E_OMEGA]);
  a->hist = wf_buffer_ptr(w->buf[E_HIST]);
  return WF_OK;
}

/* The rows of every particle (w->rows), computed on partition 0's device. */
static wf_status rows_compute(wf_particles *sp, ework *w) {
  static const char fn[] = "wf_particles_energy_get";
  uint32_t n = w->n = wf_particles_count(sp);
  wfp_part *p0 = sp->parts[sp->lead].ps;
  wf_stream *s = wfp_part_stream(p0);
  wf_device *dev = wfp_part_device(p0);
  if (n == 0) return sp->np == 1 ? wfp_part_check(p0) : wf_particles_check(sp);
  if (on_rank_0(sp) && sp->set->rank != 0) return rows_send(sp);
  int bits = 6;
  while ((1u << bits) < 2u * n)
    bits++;
  w->table = 1u << bits; /* at least 64 slots and 2 n */
  wfp_energy_args a;
  memset(&a, 0, sizeof a);
  wf_status st = state_on_device(sp, w, &a); /* (first: over ranks, its collectives) */
  if (st != WF_OK) return st;
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
  wfp_energy_grid_args g = {.pos = a.pos,
                            .n = n,
                            .chunks = chunks,
                            .table = w->table,
                            .partial = wf_buffer_ptr(w->buf[E_PARTIAL]),
                            .inv_cell = wf_buffer_ptr(w->buf[E_INV]),
                            .keys = wf_buffer_ptr(w->buf[E_KEYS]),
                            .vals = wf_buffer_ptr(w->buf[E_VALS]),
                            .sorted = wf_buffer_ptr(w->buf[E_SORTED]),
                            .start = wf_buffer_ptr(w->buf[E_START])};
  wfp_sort_args so = {.keys = g.keys,
                      .vals = g.vals,
                      .keys_out = wf_buffer_ptr(w->buf[E_SORTED]),
                      .vals_out = wf_buffer_ptr(w->buf[E_ORDER]),
                      .n = n,
                      .bits = bits,
                      .temp = w->buf[E_TEMP] ? wf_buffer_ptr(w->buf[E_TEMP]) : NULL,
                      .temp_bytes = temp};
  wfp_tables t = wfp_part_tables(p0);
  wf_particles_params pp = wf_particles_params_get(sp);
  a.order = so.vals_out, a.start = g.start, a.inv_cell = g.inv_cell;
  a.mats = t.mats, a.colliders = t.colliders, a.clock = t.clock;
  a.out = wf_buffer_ptr(w->buf[E_ROWS]);
  a.table = w->table, a.n_colliders = t.n_colliders;
  a.model = (uint32_t)sp->desc.contact_model;
  /* positions are relative to the origin: a dynamic particle's potential gains -m g·origin */
  double o[3];
  wf_particles_origin(sp, o);
  a.g_origin = 0.0;
  for (int k = 0; k < 3; k++) {
    a.gravity[k] = pp.gravity[k];
    a.g_origin += (double)pp.gravity[k] * o[k];
  }
  TRY(wf_launch(&wfp_energy_rmax_kernel, chunks, &g, sizeof g, s), "launching the energy grid");
  TRY(wf_launch(&wfp_energy_inv_kernel, 1, &g, sizeof g, s), "launching the energy grid");
  TRY(wf_launch(&wfp_energy_keys_kernel, n, &g, sizeof g, s), "launching the energy grid");
  TRY(wf_launch(&wfp_sort, 1, &so, sizeof so, s), "sorting the energy grid");
  TRY(wf_launch(&wfp_energy_starts_kernel, (size_t)w->table + 1, &g, sizeof g, s),
      "launching the energy grid");
  TRY(wf_launch(&wfp_energy_kernel, n, &a, sizeof a, s), "launching the energy kernel");
  /* the kernels read the solver's buffers: later frees and copies on other streams wait */
  if (sp->np == 1) TRY(wfp_part_touch(p0), "ordering the solver after the energy kernels");
  /* a download orders itself after the buffer's last recorded user, which a kernel is not */
  TRY(wf_stream_synchronize(s), "waiting for the energy kernel");
  TRY(wf_download(w->rows, w->buf[E_ROWS], 0, (size_t)n * sizeof *w->rows), "downloading energies");
  return WF_OK;
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
  ework w = {0};
  wf_status st = rows_compute(sp, &w);
  bool shared = on_rank_0(sp) && w.n > 0, sums = !shared || sp->set->rank == 0;
  for (int r = 0; r < n && st == WF_OK && sums; r++) {
    wf_particles_energy *e = &out[r];
    memset(e, 0, sizeof *e);
    for (uint32_t i = first[r]; i < first[r] + count[r]; i++) {
      e->kinetic += w.rows[i].kinetic;
      e->rotational += w.rows[i].rotational;
      e->potential += w.rows[i].potential;
      e->contact += w.rows[i].contact;
      e->collider += w.rows[i].collider;
      e->shear += w.rows[i].shear;
    }
    e->elastic = e->contact + e->collider;
    e->total = e->kinetic + e->rotational + e->potential + e->elastic;
  }
  ework_free(&w, wfp_part_stream(sp->parts[sp->lead].ps));
  return shared ? sums_share(sp, st, n, out) : st;
}

wf_status wf_particles_energy_get(wf_particles *sp, wf_particles_energy *out) {
  if (!sp || !out)
    return wf__error(WF_ERR_INVALID, "wf_particles_energy_get", "particles or out is NULL");
  uint32_t first = 0, count = wf_particles_count(sp);
  return wf_particles_energy_ranges(sp, 1, &first, &count, out);
}
