/* The particles' energies (wf_particles_energy_get, particle_energy.h): the state gathered in
 * global-id order, a hashed cell grid built on the host, one kernel a particle on the first
 * partition's device, and the rows summed on the host in global-id order in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "particle_energy.h"
#include "particles_impl.h"

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

const wf_kernel wfp_energy_kernel = {"particle_energy", energy_cpu, WFP_CUDA(wfp_energy_cuda)};

/* The host side of one call: the state, the grid, and the device buffers they go to. */
typedef struct ework {
  uint32_t n, table;
  wfp_f4 *pos, *vel;
  uint16_t *mat;
  uint32_t *order, *start;
  wfp_energy *rows;
  wf_buffer *buf[6]; /* pos, vel, mat, order, start, rows */
} ework;

static void ework_free(ework *w, wf_stream *s) {
  for (int b = 0; b < 6; b++)
    if (w->buf[b]) wf_buffer_destroy(w->buf[b], s);
  free(w->pos), free(w->vel), free(w->mat), free(w->order), free(w->start), free(w->rows);
}

/* The grid: cells of twice the largest radius, a table of at least 2 n slots, a stable counting
 * sort of the particles by slot. */
static float grid_build(ework *w) {
  float rmax = 0.0f;
  for (uint32_t i = 0; i < w->n; i++)
    rmax = fmaxf(rmax, w->pos[i].w);
  float inv_cell = rmax > 0.0f ? 1.0f / (2.0f * rmax) : 1.0f;
  uint32_t *key = (uint32_t *)w->rows; /* scratch: the rows are downloaded over it later */
  for (uint32_t i = 0; i < w->n; i++)
    w->start[(key[i] = wfp_energy_key(w->pos[i], inv_cell, w->table)) + 1]++;
  for (uint32_t s = 0; s < w->table; s++)
    w->start[s + 1] += w->start[s];
  uint32_t *fill = w->order + w->n; /* table more entries, after the n of order */
  memcpy(fill, w->start, (size_t)w->table * 4);
  for (uint32_t i = 0; i < w->n; i++)
    w->order[fill[key[i]]++] = i;
  return inv_cell;
}

/* The rows of every particle (w->rows), computed on partition 0's device. */
static wf_status rows_compute(wf_particles *sp, ework *w) {
  static const char fn[] = "wf_particles_energy_get";
  uint32_t n = w->n = wf_particles_count(sp);
  wfp_part *p0 = sp->parts[0].ps;
  wf_stream *s = wfp_part_stream(p0);
  wf_device *dev = wfp_part_device(p0);
  w->table = 64;
  while (w->table < 2 * (n ? n : 1))
    w->table *= 2;
  size_t m = n ? n : 1;
  w->pos = malloc(m * 16), w->vel = malloc(m * 16), w->mat = malloc(m * 2);
  w->order = malloc((m + w->table) * 4), w->start = calloc((size_t)w->table + 1, 4);
  w->rows = malloc(m * sizeof *w->rows);
  if (!w->pos || !w->vel || !w->mat || !w->order || !w->start || !w->rows)
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "particles '%s': out of host memory", sp->name);
  /* the solver's own positions: the colliders in the tables are in its frame */
  wf_status st = wf_particles_download_local(sp, (float(*)[4])w->pos, (float(*)[4])w->vel);
  if (st != WF_OK) return st;
  if (n == 0) return WF_OK;
  if (sp->np == 1)
    st = wfp_part_get(p0, NULL, NULL, w->mat, NULL);
  else
    memcpy(w->mat, sp->mat, (size_t)n * 2); /* gathered by the download */
  if (st != WF_OK) return st;
  float inv_cell = grid_build(w);
  const struct {
    size_t bytes;
    const void *data;
  } spec[6] = {{m * 16, w->pos},
               {m * 16, w->vel},
               {m * 2, w->mat},
               {m * 4, w->order},
               {((size_t)w->table + 1) * 4, w->start},
               {m * sizeof *w->rows, NULL}};
  for (int b = 0; b < 6; b++) {
    TRY(wf_buffer_create(dev, spec[b].bytes < 16 ? 16 : spec[b].bytes, 0, s, &w->buf[b]),
        "allocating the energy buffers");
    if (spec[b].data) TRY(wf_upload(w->buf[b], 0, spec[b].data, spec[b].bytes, s), "uploading");
  }
  wfp_tables t = wfp_part_tables(p0);
  wf_particles_params pp = wf_particles_params_get(sp);
  wfp_energy_args a = {.pos = wf_buffer_ptr(w->buf[0]),
                       .vel = wf_buffer_ptr(w->buf[1]),
                       .mat = wf_buffer_ptr(w->buf[2]),
                       .order = wf_buffer_ptr(w->buf[3]),
                       .start = wf_buffer_ptr(w->buf[4]),
                       .mats = t.mats,
                       .colliders = t.colliders,
                       .clock = t.clock,
                       .out = wf_buffer_ptr(w->buf[5]),
                       .inv_cell = inv_cell,
                       .table = w->table,
                       .n_colliders = t.n_colliders};
  for (int k = 0; k < 3; k++)
    a.gravity[k] = pp.gravity[k];
  TRY(wf_launch(&wfp_energy_kernel, n, &a, sizeof a, s), "launching the energy kernel");
  /* a download orders itself after the buffer's last recorded user, which a kernel is not */
  TRY(wf_stream_synchronize(s), "waiting for the energy kernel");
  TRY(wf_download(w->rows, w->buf[5], 0, (size_t)n * sizeof *w->rows), "downloading energies");
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
  /* positions are relative to the origin: a dynamic particle's potential gains -m g·origin */
  double o[3], go = 0.0;
  wf_particles_origin(sp, o);
  wf_particles_params pp = wf_particles_params_get(sp);
  for (int k = 0; k < 3; k++)
    go += (double)pp.gravity[k] * o[k];
  for (uint32_t i = 0; st == WF_OK && go != 0.0 && i < w.n; i++)
    if (w.vel[i].w > 0.0f) w.rows[i].potential -= go / (double)w.vel[i].w;
  for (int r = 0; r < n && st == WF_OK; r++) {
    wf_particles_energy *e = &out[r];
    memset(e, 0, sizeof *e);
    for (uint32_t i = first[r]; i < first[r] + count[r]; i++) {
      e->kinetic += w.rows[i].kinetic;
      e->potential += w.rows[i].potential;
      e->contact += w.rows[i].contact;
      e->collider += w.rows[i].collider;
    }
    e->elastic = e->contact + e->collider;
    e->total = e->kinetic + e->potential + e->elastic;
  }
  ework_free(&w, wfp_part_stream(sp->parts[0].ps));
  return st;
}

wf_status wf_particles_energy_get(wf_particles *sp, wf_particles_energy *out) {
  if (!sp || !out)
    return wf__error(WF_ERR_INVALID, "wf_particles_energy_get", "particles or out is NULL");
  uint32_t first = 0, count = wf_particles_count(sp);
  return wf_particles_energy_ranges(sp, 1, &first, &count, out);
}
