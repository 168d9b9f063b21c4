/* The particle solver over 1..N devices (wf_particles_* in weft/particles.h): the public API and
 * the frame over every partition.
 *
 * One device is one partition (a wfp_part, part.h) and every call goes straight to it: no master
 * copy on the host, no halo, no repartition, no frame graph of this file's own; the partition
 * captures and launches its frames itself, so one device runs exactly as the partition does
 * (np == 1 in every public function below).
 *
 * With several, each device holds a partition: a wfp_part whose particles are the ones it owns
 * (those in its slab of space along the split axis) and ghosts (everyone else's particles within
 * w = contact range + skin of the slab), all in ascending global-id order. The host holds a copy
 * of the whole state only when it distributes the system (after particles are added) and when
 * the caller reads the state; repartitions run on the devices (repartition.c). Over MPI ranks a
 * rank frees that copy once the system is distributed, and its reads gather only the columns
 * they return (wfp_state_columns): a rank's host need not hold the whole system between calls.
 *
 * Why the result does not depend on the split: a particle's substep reads only particles within
 * the contact range (the cell size, the largest diameter), visits them in an order fixed by
 * their cells and global ids (particle_math.h, WFP_FOR_NEIGHBOURS), and writes only itself. A
 * partition has the same cells (the cell size is fixed by the split from the whole system) and
 * its local order is global-id order, so an owned particle sees exactly the neighbours, in
 * exactly the order, it would see in one solver — as long as every particle within range of it
 * is local, and each ghost holds its owner's state of the same substep. The first holds while no
 * particle outruns the skin, which the contact kernels check (repartition.c reruns the frames
 * when one did). The second holds because after every substep each ghost is overwritten with its
 * owner's state (the halo exchange). Ghosts are integrated by their partition like any other
 * particle — with missing neighbours, so wrongly — and that work is thrown away by the exchange;
 * it costs little and keeps the single-device kernels unchanged.
 *
 * The halo exchange runs over the partition module's links (solvers/partition/transport.h has
 * the ordering rules), one link per ordered pair (q -> p) of partitions with ghosts and one slot
 * per link: a pack kernel on q's stream gathers the owned particles p needs (src indices,
 * global-id order) into the link's send buffer; the transport copies it into p's receive buffer
 * once the pack is done and p has read that buffer for the last time (its unpack of the exchange
 * before, or the frame's start), so the copy runs while p computes; p waits for the copy and
 * scatters it into the ghost slots.
 *
 * A frame — every partition's begin, K substeps each followed by the exchange, end — is captured
 * once into one graph (solvers/partition/frame.h) and launched with one call. A repartition
 * changes the partitions' particle and ghost counts, but the frame does not bake them in: its
 * kernels and copies cover launch sizes with some slack (repartition.c, launch_for), and read the
 * counts on the device (a partition's from its parameter block, a link's from the head of its
 * index lists, written by the selection that makes them), as they read the drift limit and axis
 * (wfp_drift_ctl). So the graph is captured again only when a count outgrows its launch size (or
 * shrinks far below it), a buffer is replaced or the links change (the graph key: the module's
 * words of the links and frame_key's), not at every repartition: recording and updating a graph
 * of a few thousand nodes took 4 to 14 ms of host time a frame at 4 GPUs, while the GPUs waited.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "particle_kernels.h"
#include "particles_impl.h"
#include "solvers/partition/measure.h"
#include "solvers/partition/ranks.h"
#include "solvers/partition/transport.h"

#define fail(st, ...) wf__error(st, NULL, __VA_ARGS__)

wf_status wfp_fail_gpu(const char *name, wf_status st, const char *what) {
  char inner[768];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "particles '%s': %s: %s (%s)", name, what, inner, wf_status_str(st));
}

wf_status wfp_dbuf_reserve(wf_particles *sp, dbuf *d, wf_device *dev, wf_stream *s, size_t bytes) {
  if (d->b && d->cap >= bytes) return WF_OK;
  size_t cap = d->cap + d->cap / 2;
  if (cap < bytes) cap = bytes;
  if (cap < 256) cap = 256;
  wf_buffer *nb = NULL;
  TRY(wf_buffer_create(dev, cap, WF_BUFFER_ZERO, s, &nb), "allocating halo buffers");
  if (d->b) wf_buffer_destroy(d->b, s);
  d->b = nb, d->cap = cap;
  return WF_OK;
}

void wfp_dbuf_free(dbuf *d, wf_stream *s) {
  if (d->b) wf_buffer_destroy(d->b, s);
  d->b = NULL, d->cap = 0;
}

/* The buffers of this file's partition records (the links' staging is the module's). */
#define PART_DBUFS(pt)                                                                             \
  {                                                                                                \
    &(pt)->anchor, &(pt)->tag, &(pt)->counts, &(pt)->snap_pos, &(pt)->snap_vel, &(pt)->in_pos,     \
        &(pt)->snap_omega, &(pt)->snap_hist, &(pt)->in_omega, &(pt)->in_hist, &(pt)->in_vel,       \
        &(pt)->in_gid, &(pt)->in_mat, &(pt)->keys, &(pt)->vals, &(pt)->keys_out, &(pt)->vals_out,  \
        &(pt)->sort_temp, &(pt)->select_temp, &(pt)->stamps, &(pt)->view_idx, &(pt)->view_pos,     \
        &(pt)->view_vel, &(pt)->view_gid, &(pt)->view_mat                                          \
  }

/* Device memory of partition p: its solver's, the buffers of this file it owns and the links it
 * sends on (their staging on both ends and index lists). */
static size_t part_bytes(const wf_particles *sp, int p) {
  const part *pt = &sp->parts[p];
  if (!pt->ps) return 0; /* another rank's */
  const dbuf *own[] = PART_DBUFS(pt);
  size_t bytes = wfp_part_device_bytes(pt->ps);
  for (size_t b = 0; b < sizeof own / sizeof own[0]; b++)
    bytes += own[b]->cap;
  for (int d = 0; d < MAXP; d++) {
    const outbox *o = &pt->out[d];
    bytes +=
        o->idx.cap + o->pos.cap + o->vel.cap + o->gid.cap + o->mat.cap + o->omega.cap + o->hist.cap;
  }
  for (int l = 0; sp->set && l < sp->set->n_links; l++)
    if (sp->set->links[l].from == p)
      bytes += 2 * sp->set->links[l].staged + sp->halos[l].src_idx.cap + sp->halos[l].dst_idx.cap;
  return bytes;
}

void wf_particles_destroy(wf_particles *sp) {
  if (!sp) return;
  wfpt_frame_release(&sp->frame);
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].ps) wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps));
  wfpt_set_destroy(sp->set); /* (before the partitions: it waits for their streams) */
  for (int l = 0; l < sp->cap_halos; l++) { /* unused entries may still hold buffers */
    halo *h = &sp->halos[l];
    wfp_dbuf_free(&h->src_idx, wfp_part_stream(sp->parts[h->from].ps));
    wfp_dbuf_free(&h->dst_idx, wfp_part_stream(sp->parts[h->to].ps));
  }
  free(sp->halos);
  if (sp->gather_stream) wf_stream_synchronize(sp->gather_stream);
  wfpt_gather_destroy(sp->gather);
  wfp_dbuf_free(&sp->gather_pos, sp->gather_stream),
      wfp_dbuf_free(&sp->gather_vel, sp->gather_stream);
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    wf_stream *s = pt->ps ? wfp_part_stream(pt->ps) : NULL;
    dbuf *own[] = PART_DBUFS(pt);
    for (size_t b = 0; b < sizeof own / sizeof own[0]; b++)
      wfp_dbuf_free(own[b], s);
    for (int d = 0; d < MAXP; d++) {
      outbox *o = &pt->out[d];
      wfp_dbuf_free(&o->idx, s), wfp_dbuf_free(&o->pos, s), wfp_dbuf_free(&o->vel, s);
      wfp_dbuf_free(&o->gid, s), wfp_dbuf_free(&o->mat, s);
      wfp_dbuf_free(&o->omega, s), wfp_dbuf_free(&o->hist, s);
    }
    if (pt->flag) wf_buffer_destroy(pt->flag, s);
    wfp_part_destroy(pt->ps);
  }
  free(sp->pos), free(sp->vel), free(sp->mat), free(sp->omega), free(sp->hist);
  free(sp->owned_ids);
  free(sp);
}

static wf_status master_reserve(wf_particles *sp, uint32_t n) {
  wfp_f4 *p = realloc(sp->pos, (size_t)(n ? n : 1) * sizeof *p);
  if (p) sp->pos = p;
  wfp_f4 *v = realloc(sp->vel, (size_t)(n ? n : 1) * sizeof *v);
  if (v) sp->vel = v;
  uint16_t *m = realloc(sp->mat, (size_t)(n ? n : 1) * sizeof *m);
  if (m) sp->mat = m;
  wfp_f4 *w = realloc(sp->omega, (size_t)(n ? n : 1) * sizeof *w);
  if (w) sp->omega = w;
  wfp_hist *h = realloc(sp->hist, (size_t)(n ? n : 1) * HIST_BYTES);
  if (h) sp->hist = h;
  if (!p || !v || !m || !w || !h)
    return fail(WF_ERR_OUT_OF_MEMORY,
                "particles '%s': out of host memory for %u "
                "particles",
                sp->name, n);
  sp->master_n = n ? n : 1;
  return WF_OK;
}

/* The master copy's bytes a particle: position, velocity, material, omega, contact history. */
#define MASTER_ROW ((size_t)16 + 16 + 2 + 16 + HIST_BYTES)

void wfp_master_release(wf_particles *sp) {
  if (!sp->ranks) return; /* one process reads its state through it */
  free(sp->pos), free(sp->vel), free(sp->mat), free(sp->omega), free(sp->hist);
  sp->pos = sp->vel = sp->omega = NULL, sp->mat = NULL, sp->hist = NULL;
  sp->master_n = 0;
}

/* Host bytes this solver holds between calls (wf_particles_info.host_bytes). */
static uint64_t host_bytes(const wf_particles *sp) {
  uint64_t b = sizeof *sp + (uint64_t)sp->cap_halos * sizeof(halo);
  b += (uint64_t)sp->master_n * MASTER_ROW;
  if (sp->owned_ids) b += (uint64_t)(sp->n_owned_ids ? sp->n_owned_ids : 1) * 4;
  return b;
}

/* The desc's devices (none: the default device) into devices[0..*n), checked (their kinds by
 * the partition set). */
static wf_status devices_of(const wf_particles_desc *desc, const char *name, wf_device **devices,
                            int *n) {
  *n = desc->device_count > 0 && desc->devices[0] ? desc->device_count : 1;
  if (*n > MAXP)
    return fail(WF_ERR_INVALID, "particles '%s': device_count %d; 1 to %d are supported", name,
                desc->device_count, MAXP);
  devices[0] = desc->devices[0] ? desc->devices[0]
               : desc->stream   ? wf_stream_device(desc->stream)
                                : wf_device_default();
  if (!devices[0]) return fail(WF_ERR_DEVICE, "particles '%s': no default device", name);
  for (int i = 1; i < *n; i++) {
    devices[i] = desc->devices[i];
    if (!devices[i]) return fail(WF_ERR_INVALID, "particles '%s': devices[%d] is NULL", name, i);
  }
  return WF_OK;
}

/* The split settings, checked; zero ones take their defaults. */
static wf_status split_settings(wf_particles_desc *d, const char *name) {
  if (!(d->skin >= 0.0f) || !isfinite(d->skin))
    return fail(WF_ERR_INVALID, "particles '%s': skin %g must be >= 0 (0: automatic)", name,
                (double)d->skin);
  if (!(d->imbalance >= 0.0f) || !isfinite(d->imbalance))
    return fail(WF_ERR_INVALID, "particles '%s': imbalance %g must be >= 0 (0: 0.01)", name,
                (double)d->imbalance);
  if (d->balance != WF_BALANCE_COUNT && d->balance != WF_BALANCE_TIME)
    return fail(WF_ERR_INVALID,
                "particles '%s': balance %d is neither WF_BALANCE_COUNT (0) nor "
                "WF_BALANCE_TIME (1)",
                name, (int)d->balance);
  if (d->repartition_frames < 0)
    return fail(WF_ERR_INVALID, "particles '%s': repartition_frames %d must be >= 0 (0: 1)", name,
                d->repartition_frames);
  if (d->imbalance == 0.0f) d->imbalance = 0.01f;
  if (d->repartition_frames == 0) d->repartition_frames = 1;
  return WF_OK;
}

/* Partition p on dev: its solver, and with several partitions its copy stream and drift flag. */

/* Partition p on dev: its solver, and with several partitions its drift flag. */
static wf_status part_create(wf_particles *sp, int p, wf_device *dev, const wf_stream *own) {
  part *pt = &sp->parts[p];
  pt->dev = dev;
  wf_particles_desc d = sp->desc;
  d.stream = (wf_stream *)own;
  if (sp->np > 1) d.capacity = 0; /* the repartitions size them */
  wf_status st = wfp_part_create(dev, &d, &pt->ps);
  if (st != WF_OK || sp->np == 1) return st;
  TRY(wf_buffer_create(dev, sizeof(wfp_drift_ctl), WF_BUFFER_ZERO, wfp_part_stream(pt->ps),
                       &pt->flag),
      "allocating a flag");
  for (int q = 0; q < p; q++)
    if (MINE(sp, q) && sp->parts[q].dev != dev &&
        (!wf_device_can_access_peer(dev, sp->parts[q].dev) ||
         !wf_device_can_access_peer(sp->parts[q].dev, dev)))
      sp->info.peer = false;
  return WF_OK;
}

/* Over MPI ranks (desc.mpi_comm): this rank and the number of ranks, and the lead partition;
 * what a split over ranks does not do yet is refused here. */
static wf_status ranks_of(wf_particles *sp, int *rank, int *ranks) {
  wf_status st = wfpt_comm_size(sp->desc.mpi_comm, ranks, rank);
  if (st != WF_OK) return st;
  if (sp->np < *ranks)
    return fail(WF_ERR_INVALID,
                "particles '%s': %d partitions over %d MPI ranks: every rank needs one (give at "
                "least %d devices)",
                sp->name, sp->np, *ranks, *ranks);
  if (sp->desc.balance == WF_BALANCE_TIME && *ranks > 1)
    return fail(WF_ERR_UNSUPPORTED,
                "particles '%s': balance WF_BALANCE_TIME over MPI ranks is not supported yet "
                "(use WF_BALANCE_COUNT)",
                sp->name);
  if (sp->np == 1) return WF_OK; /* one partition: nothing is split */
  sp->ranks = true;
  sp->desc.no_graph = true; /* (transport.h: the MPI waits are the host's) */
  for (int p = sp->np - 1; p >= 0; p--)
    if (wfpt_rank_of(p, sp->np, *ranks) == *rank) sp->lead = p;
  return WF_OK;
}

static wf_status frame_enqueue(void *ctx, wfpt_mode mode);
static void frame_key(void *ctx, wfpt_key *key);
static wf_status frames_launched(void *ctx);

/* The partition set over the partitions' streams (it checks that the devices are of one kind)
 * and the frame over it. */
static wf_status set_create(wf_particles *sp) {
  wf_device *devs[MAXP];
  wf_stream *streams[MAXP];
  for (int p = 0; p < sp->np; p++)
    devs[p] = sp->parts[p].dev, streams[p] = wfp_part_stream(sp->parts[p].ps);
  char what[96];
  snprintf(what, sizeof what, "particles '%s'", sp->name);
  wfpt_set_desc d = {.what = what,
                     .n = sp->np,
                     .devices = devs,
                     .streams = streams,
                     .mpi_comm = sp->ranks ? sp->desc.mpi_comm : NULL,
                     .mpi_halo = sp->desc.mpi_halo};
  wf_status st = wfpt_set_create(&d, &sp->set);
  if (st != WF_OK) return st;
  wfpt_frame_ops ops = {
      .ctx = sp, .enqueue = frame_enqueue, .key = frame_key, .launched = frames_launched};
  wfpt_frame_init(&sp->frame, sp->set, &ops, sp->desc.no_graph);
  return WF_OK;
}

/* The origin, once, in every partition (before any particle: the colliders added so far move into
 * its frame). */
static wf_status origin_fix(wf_particles *sp, const double origin[3]) {
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_status st = wfp_part_origin_set(sp->parts[p].ps, origin);
    if (st != WF_OK) return st;
  }
  memcpy(sp->origin, origin, sizeof sp->origin);
  sp->origin_fixed = true;
  return WF_OK;
}

/* The automatic origin (wf_particles_desc.origin_given false): the centre of the first
 * particles' box, rounded to whole metres (exact in float up to 2^24 m, so a scene moved by
 * whole metres keeps its local bits). */
static wf_status origin_auto(wf_particles *sp, const double lo[3], const double hi[3]) {
  if (sp->origin_fixed) return WF_OK;
  double o[3];
  for (int k = 0; k < 3; k++)
    o[k] = round(0.5 * (lo[k] + hi[k]));
  return origin_fix(sp, o);
}

/* The first particles were refused (a bad emitter): the automatic origin they fixed is undone,
 * so that the next ones pick it. st: the refusal, returned. */
static wf_status origin_undo(wf_particles *sp, bool was_fixed, wf_status st) {
  if (was_fixed || sp->desc.origin_given || wf_particles_count(sp) > 0) return st;
  static const double zero[3] = {0.0, 0.0, 0.0};
  char msg[1024]; /* keep the refusal's message */
  snprintf(msg, sizeof msg, "%s", wf_last_error());
  if (origin_fix(sp, zero) == WF_OK) sp->origin_fixed = false;
  wf__error(st, NULL, "%s", msg);
  return st;
}

wf_status wf_particles_create(const wf_particles_desc *desc, wf_particles **out) {
  if (!out) return fail(WF_ERR_INVALID, "particles: out is NULL");
  *out = NULL;
  if (!desc) return fail(WF_ERR_INVALID, "particles: desc is NULL");
  const char *name = desc->name ? desc->name : "particles";
  wf_device *devices[MAXP];
  int n = 0;
  wf_particles_desc d = *desc;
  wf_status st = devices_of(desc, name, devices, &n);
  if (st == WF_OK) st = split_settings(&d, name);
  if (st != WF_OK) return st;
  if (desc->origin_given &&
      !(isfinite(desc->origin[0]) && isfinite(desc->origin[1]) && isfinite(desc->origin[2])))
    return fail(WF_ERR_INVALID, "particles '%s': origin (%g, %g, %g) must be finite", name,
                desc->origin[0], desc->origin[1], desc->origin[2]);
  wf_particles *sp = calloc(1, sizeof *sp);
  if (!sp) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", name);
  snprintf(sp->name, sizeof sp->name, "%s", name);
  sp->desc = d;
  sp->desc.name = sp->name;
  sp->desc.stream = NULL;
  sp->np = n;
  sp->skin_factor = 1.0f;
  sp->info.partitions = n;
  sp->info.peer = true;
  int rank = 0, ranks = 1;
  if (desc->mpi_comm) st = ranks_of(sp, &rank, &ranks);
  for (int p = 0; p < n && st == WF_OK; p++)
    if (wfpt_rank_of(p, n, ranks) == rank)
      st = part_create(sp, p, devices[p], n == 1 ? desc->stream : NULL);
  if (st == WF_OK) st = set_create(sp);
  if (st == WF_OK && n > 1) st = master_reserve(sp, 0);
  if (st == WF_OK && desc->origin_given) st = origin_fix(sp, desc->origin);
  if (st != WF_OK) {
    wf_particles_destroy(sp);
    return st;
  }
  *out = sp;
  return WF_OK;
}

int wf_particles_partition_count(const wf_particles *sp) { return sp ? sp->np : 0; }

bool wf_particles_partition_is_local(const wf_particles *sp, int i) {
  return sp && i >= 0 && i < sp->np && MINE(sp, i);
}

uint32_t wf_particles_count(const wf_particles *sp) {
  if (!sp) return 0;
  return sp->np == 1 ? wfp_part_count(LEAD(sp)) : sp->count;
}

/* ---- gathering the state ------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The ids of the rows this rank gives to a gather, ascending (wf_particles_owned_ids). */
static wf_status owned_record(wf_particles *sp, const wfp_rank_row *rows, size_t n) {
  uint32_t *ids = realloc(sp->owned_ids, (n ? n : 1) * sizeof *ids);
  if (!ids) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (size_t i = 0; i < n; i++)
    ids[i] = rows[i].gid;
  qsort(ids, n, sizeof *ids, cmp_u32); /* partitions each in id order: a merge would do */
  sp->owned_ids = ids, sp->n_owned_ids = (uint32_t)n, sp->owned_valid = true;
  return WF_OK;
}

wf_status wf_particles_owned_ids(wf_particles *sp, uint32_t *ids, uint32_t *n) {
  static const char fn[] = "wf_particles_owned_ids";
  if (!sp || !n) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  *n = 0;
  uint32_t count = wf_particles_count(sp);
  /* one process owns every particle; over ranks, before the first distribution (and after
   * particles are added) every rank's lead holds them all, and rank 0 is their owner */
  if (!sp->ranks || !sp->distributed) {
    if (sp->ranks && !MINE(sp, 0)) return WF_OK;
    for (uint32_t i = 0; ids && i < count; i++)
      ids[i] = i;
    *n = count;
    return WF_OK;
  }
  if (!sp->owned_valid)
    return wf__error(WF_ERR_INVALID, fn,
                     "particles '%s': rank %d: the state was not read since the last "
                     "repartition (read it first: wf_particles_download on every rank)",
                     sp->name, sp->set->rank);
  if (ids) memcpy(ids, sp->owned_ids, (size_t)sp->n_owned_ids * sizeof *ids);
  *n = sp->n_owned_ids;
  return WF_OK;
}

/* Over MPI ranks: this rank's partitions' owned rows (ghosts left out), partition by partition,
 * into *out (malloc'ed, *n of them; the caller frees it, also on failure). */
wf_status wfp_ranks_local_rows(wf_particles *sp, wfp_rank_row **out, size_t *n) {
  size_t most = 1, owned = 0;
  for (int p = 0; p < sp->np; p++)
    if (MINE(sp, p)) {
      if (sp->parts[p].n_local > most) most = sp->parts[p].n_local;
      owned += sp->parts[p].n_owned;
    }
  wfp_f4 *lp = malloc(most * sizeof *lp), *lv = malloc(most * sizeof *lv);
  uint16_t *lm = malloc(most * sizeof *lm);
  uint32_t *lg = malloc(most * sizeof *lg);
  float *la = malloc(most * sizeof *la);
  wfp_f4 *lw = malloc(most * sizeof *lw);
  wfp_hist *lh = malloc(most * HIST_BYTES);
  wfp_rank_row *rows = calloc(owned ? owned : 1, sizeof *rows);
  wf_status st = (lp && lv && lm && lg && la && lw && lh && rows)
                     ? WF_OK
                     : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  size_t r = 0;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    if (!MINE(sp, p) || !pt->n_local) continue;
    st = wfp_part_get_all(pt->ps, lp, lv, lm, lg, lw, lh);
    if (st != WF_OK) break;
    if ((st = wf_download(la, pt->anchor.b, 0, (size_t)pt->n_local * 4)) != WF_OK) {
      wfp_fail_gpu(sp->name, st, "reading the owners");
      break;
    }
    for (uint32_t i = 0; i < pt->n_local && r < owned; i++) {
      if (la[i] != la[i]) continue; /* a ghost */
      wfp_rank_row *w = &rows[r++];
      w->gid = lg[i], w->mat = lm[i], w->pos = lp[i], w->vel = lv[i], w->omega = lw[i];
      memcpy(w->hist, &lh[(size_t)i * WFP_HIST_SLOTS], HIST_BYTES);
    }
  }
  free(lp), free(lv), free(lm), free(lg), free(la), free(lw), free(lh);
  *out = rows, *n = r;
  return st;
}

/* Every rank's `bytes` at `mine` to every rank (root < 0), or to rank `root` alone (the others
 * receive nothing), in rank order. */
static wf_status ranks_collect(wf_particles *sp, int root, const void *mine, size_t bytes,
                               void **all, size_t *total) {
  if (root < 0) return wfpt_ranks_allgather(sp->set, mine, bytes, all, total);
  size_t to[MAXP] = {0}; /* (ranks <= partitions) */
  to[root] = bytes;
  return wfpt_ranks_alltoallv(sp->set, mine, to, all, total);
}

/* gather over MPI ranks: each rank's partitions' owned rows by global id to every rank (root
 * < 0) or to rank `root` alone, the columns in `cols` only, into the arrays given (NULL: not
 * kept; the other ranks' are not read when root >= 0). The ids go first (4 bytes a particle),
 * then one column at a time, so besides the caller's arrays a receiving rank holds the ids and
 * one column of the whole system, never its 312-byte rows. */
static wf_status gather_ranks(wf_particles *sp, unsigned cols, int root, wfp_f4 *pos, wfp_f4 *vel,
                              uint16_t *mat, wfp_f4 *omega, wfp_hist *hist) {
  static const size_t width[5] = {16, 16, 2, 16, HIST_BYTES};
  static const size_t at[5] = {offsetof(wfp_rank_row, pos), offsetof(wfp_rank_row, vel),
                               offsetof(wfp_rank_row, mat), offsetof(wfp_rank_row, omega),
                               offsetof(wfp_rank_row, hist)};
  unsigned char *dst[5] = {(unsigned char *)pos, (unsigned char *)vel, (unsigned char *)mat,
                           (unsigned char *)omega, (unsigned char *)hist};
  wfp_rank_row *rows = NULL;
  size_t r = 0;
  wf_status st = wfp_ranks_local_rows(sp, &rows, &r);
  if (st == WF_OK) st = owned_record(sp, rows, r);
  /* every rank enters every collective, also one that failed (with nothing to give) */
  unsigned char *col = malloc((r ? r : 1) * HIST_BYTES);
  if (st == WF_OK && !col)
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (size_t i = 0; i < r && st == WF_OK; i++)
    memcpy(col + i * 4, &rows[i].gid, 4);
  void *ids = NULL;
  size_t total = 0;
  wf_status st2 = ranks_collect(sp, root, col, st == WF_OK ? r * 4 : 0, &ids, &total);
  if (st == WF_OK) st = st2;
  bool keep = root < 0 || sp->set->rank == root; /* a receiver */
  size_t n = total / 4;
  if (st == WF_OK && keep && n != sp->count)
    st = fail(WF_ERR_INVALID, "particles '%s': rank %d gathered %zu particles of %u", sp->name,
              sp->set->rank, n, sp->count);
  const uint32_t *g = ids;
  for (size_t i = 0; i < n && st == WF_OK; i++)
    if (g[i] >= sp->count)
      st = fail(WF_ERR_INVALID, "particles '%s': gathered global id %u of %u", sp->name, g[i],
                sp->count);
  for (int c = 0; c < 5; c++) {
    if (!(cols & (1u << c))) continue;
    for (size_t i = 0; i < r && st == WF_OK; i++)
      memcpy(col + i * width[c], (const unsigned char *)&rows[i] + at[c], width[c]);
    void *all = NULL;
    st2 = ranks_collect(sp, root, col, st == WF_OK ? r * width[c] : 0, &all, &total);
    if (st == WF_OK) st = st2;
    if (st == WF_OK && total != n * width[c])
      st = fail(WF_ERR_INVALID, "particles '%s': rank %d gathered %zu bytes of a column, not %zu",
                sp->name, sp->set->rank, total, n * width[c]);
    for (size_t i = 0; i < n && st == WF_OK && dst[c]; i++)
      memcpy(dst[c] + (size_t)g[i] * width[c], (const unsigned char *)all + i * width[c], width[c]);
    free(all);
  }
  free(ids), free(col), free(rows);
  return st;
}

/* Current state of every particle into pos/vel/mat (global-id order): each partition's owned
 * particles (those with an anchor) by their global ids. */
static wf_status gather(wf_particles *sp, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat, wfp_f4 *omega,
                        wfp_hist *hist) {
  if (!sp->distributed) return wfp_part_get_all(LEAD(sp), pos, vel, mat, NULL, omega, hist);
  if (sp->ranks) {
    unsigned cols = (pos ? WFP_COL_POS : 0) | (vel ? WFP_COL_VEL : 0) | (mat ? WFP_COL_MAT : 0) |
                    (omega ? WFP_COL_OMEGA : 0) | (hist ? WFP_COL_HIST : 0);
    return gather_ranks(sp, cols, -1, pos, vel, mat, omega, hist);
  }
  size_t most = 1;
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].n_local > most) most = sp->parts[p].n_local;
  wfp_f4 *lp = malloc(most * sizeof *lp), *lv = malloc(most * sizeof *lv);
  uint16_t *lm = malloc(most * sizeof *lm);
  uint32_t *lg = malloc(most * sizeof *lg);
  float *la = malloc(most * sizeof *la);
  wfp_f4 *lw = malloc(most * sizeof *lw);
  wfp_hist *lh = malloc(most * HIST_BYTES);
  wf_status st = (lp && lv && lm && lg && la && lw && lh)
                     ? WF_OK
                     : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    if (!pt->n_local) continue;
    st = wfp_part_get_all(pt->ps, lp, lv, lm, lg, lw, lh);
    if (st != WF_OK) break;
    if ((st = wf_download(la, pt->anchor.b, 0, (size_t)pt->n_local * 4)) != WF_OK) {
      wfp_fail_gpu(sp->name, st, "reading the owners");
      break;
    }
    for (uint32_t i = 0; i < pt->n_local; i++) {
      if (la[i] != la[i]) continue; /* a ghost */
      uint32_t g = lg[i];
      if (pos) pos[g] = lp[i];
      if (vel) vel[g] = lv[i];
      if (mat) mat[g] = lm[i];
      if (omega) omega[g] = lw[i];
      if (hist)
        memcpy(&hist[(size_t)g * WFP_HIST_SLOTS], &lh[(size_t)i * WFP_HIST_SLOTS], HIST_BYTES);
    }
  }
  free(lp), free(lv), free(lm), free(lg), free(la), free(lw), free(lh);
  return st;
}

/* Over distributed MPI ranks the reads gather only the columns they return (wfp_state_columns),
 * and the master copy exists only to undistribute the system. */
static bool ranked(const wf_particles *sp) { return sp->ranks && sp->distributed; }

/* The frames since the last repartition made exact (rerun while a particle outran the skin). */
static wf_status exact(wf_particles *sp) {
  return sp->distributed && sp->frames_since > 0 ? wfp_rerun_if_moved(sp) : WF_OK;
}

/* Brings the master copy (sp->pos/vel/mat) up to date with the partitions. */
static wf_status settle(wf_particles *sp) {
  wf_status st = exact(sp);
  if (st != WF_OK) return st;
  if (ranked(sp) && (st = master_reserve(sp, sp->count)) != WF_OK) return st;
  return gather(sp, sp->pos, sp->vel, sp->mat, sp->omega, sp->hist);
}

wf_status wfp_state_columns(wf_particles *sp, unsigned cols, int root, wfp_f4 *pos, wfp_f4 *vel,
                            uint16_t *mat, wfp_f4 *omega, wfp_hist *hist) {
  wf_status st = exact(sp);
  if (st != WF_OK) return st;
  if (ranked(sp)) return gather_ranks(sp, cols, root, pos, vel, mat, omega, hist);
  if ((st = gather(sp, sp->pos, sp->vel, sp->mat, sp->omega, sp->hist)) != WF_OK) return st;
  size_t n = sp->count;
  if (pos && (cols & WFP_COL_POS) && n) memcpy(pos, sp->pos, n * 16);
  if (vel && (cols & WFP_COL_VEL) && n) memcpy(vel, sp->vel, n * 16);
  if (mat && (cols & WFP_COL_MAT) && n) memcpy(mat, sp->mat, n * 2);
  if (omega && (cols & WFP_COL_OMEGA) && n) memcpy(omega, sp->omega, n * 16);
  if (hist && (cols & WFP_COL_HIST) && n) memcpy(hist, sp->hist, n * HIST_BYTES);
  return WF_OK;
}

/* The clock of the system (partition 0's; every partition keeps the same one): the simulated
 * seconds and the substep count at the start of the solver's clock block. */
wf_status wfp_clock_get(wf_particles *sp, double *time, uint64_t *substeps) {
  wf_buffer *clock;
  wfp_part *ps = LEAD(sp);
  TRY(wfp_part_state_buffers(ps, NULL, NULL, &clock), "finding the clock");
  TRY(wf_stream_synchronize(wfp_part_stream(ps)), "waiting for the solver");
  TRY(wf_download(time, clock, 0, 8), "reading the clock");
  TRY(wf_download(substeps, clock, 8, 8), "reading the clock");
  return WF_OK;
}

/* ---- the frame ------------------------------------------------------------------------------ */

bool wfp_stamping(const wf_particles *sp) {
  return sp->np > 1 && (sp->desc.balance == WF_BALANCE_TIME || sp->set->mode == WFPT_COMPUTE);
}

/* Room for every partition's stamps (once: a captured frame holds the address). */
static wf_status stamps_reserve(wf_particles *sp) {
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    if (!MINE(sp, p)) continue;
    size_t bytes = 4 * (size_t)sp->desc.substeps * 8;
    wf_status st = wfp_dbuf_reserve(sp, &pt->stamps, pt->dev, wfp_part_stream(pt->ps), bytes);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* One partition's K substeps from its 4 K stamps (stamp): before[k], the substep's part before
 * its ghosts come in (its own particles' keys), and after[k], the rest with the unpacks and
 * packs (ms); false when a stamp is missing or the stamps run backwards. */
static bool substep_times(const uint64_t *ns, int K, double *before, double *after) {
  for (int k = 0; k < K; k++) {
    const uint64_t *q = ns + 4 * (size_t)k;
    if (!q[0] || q[1] < q[0] || q[2] < q[1] || q[3] < q[2]) return false;
    before[k] = (double)(q[1] - q[0]) * 1e-6, after[k] = (double)(q[3] - q[2]) * 1e-6;
  }
  return true;
}

wf_status wfp_stamped_times(wf_particles *sp, double *before, double *after, bool *ok) {
  const int K = sp->desc.substeps;
  *ok = true;
  uint64_t *ns = malloc(4 * (size_t)K * sizeof *ns);
  if (!ns) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  wf_status st = WF_OK;
  for (int p = 0; p < sp->np && *ok; p++) {
    size_t at = (size_t)p * (size_t)K;
    if (!sp->parts[p].stamps.b)
      *ok = false;
    else if ((st = wf_download(ns, sp->parts[p].stamps.b, 0, 4 * (size_t)K * 8)) != WF_OK) {
      st = wfp_fail_gpu(sp->name, st, "reading the time stamps");
      break;
    } else
      *ok = substep_times(ns, K, before + at, after + at);
  }
  free(ns);
  return st;
}

/* Stamp i of partition p's frame, on its stream: 4k before substep k, 4k + 1 after its keys of
 * the particles it owns, 4k + 2 when the ghosts of the substep before have come in (before their
 * unpack), 4k + 3 after the substep and its packs. So a substep's times hold all of the
 * partition's own work, the halo's packs and unpacks too, and leave out its wait for the copies
 * (the overlap measure's compute; WF_BALANCE_TIME's cost). */
static wf_status stamp(wf_particles *sp, int p, int i) {
  if (!wfp_stamping(sp)) return WF_OK;
  part *pt = &sp->parts[p];
  wf_stream *s = wfp_part_stream(pt->ps);
  wfp_stamp_args a = {(uint64_t *)wf_buffer_ptr(pt->stamps.b) + i};
  TRY(wf_launch(&wfp_stamp, 1, &a, sizeof a, s), "launching a time stamp");
  TRY(wf_buffer_touch(pt->stamps.b, s), "ordering the time stamps");
  return WF_OK;
}

/* Partition p's packs of a halo exchange, after its substep: they wait for its transfers before
 * (the send buffers are reused). A frame of transfers alone has the waits only. */
static wf_status halo_pack(wf_particles *sp, int p) {
  wfpt_set *set = sp->set;
  wf_status st = wfpt_send_reuse(set, p, 0);
  if (st != WF_OK) return st;
  /* (the drift check runs in the partitions' contact kernels, wfp_part_set_drift) */
  for (int l = 0; l < set->n_links && set->mode != WFPT_COPIES; l++) {
    const wfpt_link *k = &set->links[l];
    if (k->from != p) continue;
    const halo *h = &sp->halos[l];
    wfp_arrays a = wfp_part_arrays(sp->parts[p].ps);
    wfp_f4 *send = wf_buffer_ptr(k->send);
    const uint32_t *idx = wf_buffer_ptr(h->src_idx.b);
    wfp_halo_args pa = {
        idx + 1, a.pos, a.vel, a.omega, send, send + h->launch, send + 2 * (size_t)h->launch, idx};
    TRY(wf_launch(&wfp_halo_pack, h->launch, &pa, sizeof pa, wfp_part_stream(sp->parts[p].ps)),
        "launching a halo pack");
  }
  return WF_OK;
}

/* Partition `to` unpacks the transfers into it, once it waited for them (with `keys`, inside a
 * substep after the other particles' keys: the ghosts' keys too); then its receive buffers are
 * free. A frame of transfers alone has no unpack: the receiver is done with the buffers once it
 * waited. */
static wf_status halo_unpack(wf_particles *sp, int to, bool keys) {
  wfpt_set *set = sp->set;
  wf_stream *s = wfp_part_stream(sp->parts[to].ps);
  for (int l = 0; l < set->n_links && set->mode != WFPT_COPIES; l++) {
    const wfpt_link *k = &set->links[l];
    if (k->to != to) continue;
    const halo *h = &sp->halos[l];
    wfp_arrays a = wfp_part_arrays(sp->parts[to].ps);
    wfp_f4 *recv = wf_buffer_ptr(k->recv);
    const uint32_t *idx = wf_buffer_ptr(h->dst_idx.b);
    wfp_halo_keys_args ua = {
        {idx + 1, recv, recv + h->launch, recv + 2 * (size_t)h->launch, a.pos, a.vel, a.omega, idx},
        wfp_part_keys_args(sp->parts[to].ps)};
    if (keys)
      TRY(wf_launch(&wfp_halo_unpack_keys, h->launch, &ua, sizeof ua, s),
          "launching a halo unpack");
    else
      TRY(wf_launch(&wfp_halo_unpack, h->launch, &ua.unpack, sizeof ua.unpack, s),
          "launching a halo unpack");
  }
  return wfpt_release(set, to, 0);
}

/* The frame's last users of what it reads beside the partitions' arrays: the links' staging
 * (the module's) and index lists, the anchors and drift flags. */
static wf_status frame_end(wf_particles *sp) {
  wfpt_set *set = sp->set;
  wf_status st = wfpt_frame_end(set);
  if (st != WF_OK) return st;
  for (int l = 0; l < set->n_links; l++) {
    const halo *h = &sp->halos[l];
    if (MINE(sp, h->from))
      TRY(wf_buffer_touch(h->src_idx.b, wfp_part_stream(sp->parts[h->from].ps)), "ordering");
    if (MINE(sp, h->to))
      TRY(wf_buffer_touch(h->dst_idx.b, wfp_part_stream(sp->parts[h->to].ps)), "ordering");
  }
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_stream *s = wfp_part_stream(sp->parts[p].ps);
    if (sp->parts[p].anchor.b) TRY(wf_buffer_touch(sp->parts[p].anchor.b, s), "ordering");
    TRY(wf_buffer_touch(sp->parts[p].flag, s), "ordering");
  }
  return WF_OK;
}

/* One frame of every partition, of kind mode (ops.enqueue; the module forks and joins the
 * streams around it): K substeps. A partition packs its halo right after its substep, and the
 * transfers follow; from the second substep on, a partition first keys the particles it owns
 * (wfp_substep_enqueue_keys, skipping the ghosts: their anchors are NaN), and only then waits for
 * its ghosts, unpacks and keys them (wfp_halo_unpack_keys) and runs the rest of its substep, so
 * the transfers run while it keys. The exchange after the last substep is unpacked at the
 * frame's end: a frame ends, as it starts, with its ghosts in place. */
static wf_status frame_enqueue(void *ctx, wfpt_mode mode) {
  wf_particles *sp = ctx;
  wf_status st;
  const bool work = mode != WFPT_COPIES;
  for (int p = 0; p < sp->np && work; p++)
    if (MINE(sp, p) && (st = wfp_frame_enqueue_begin(sp->parts[p].ps)) != WF_OK) return st;
  if ((st = wfpt_frame_start(sp->set)) != WF_OK) return st;
  const int K = sp->desc.substeps;
  for (int k = 0; k < K; k++) {
    for (int p = 0; p < sp->np && work; p++) {
      wfp_part *ps = sp->parts[p].ps;
      if (!ps) continue;         /* another rank's */
      const bool ghosts = k > 0; /* the exchange after substep k - 1 comes in */
      const float *skip = ghosts ? wf_buffer_ptr(sp->parts[p].anchor.b) : NULL;
      if ((st = stamp(sp, p, 4 * k)) != WF_OK) return st;
      if ((st = wfp_substep_enqueue_keys(ps, skip)) != WF_OK) return st;
      if ((st = stamp(sp, p, 4 * k + 1)) != WF_OK) return st;
      if (ghosts && (st = wfpt_recv_wait(sp->set, p, 0)) != WF_OK) return st;
      if ((st = stamp(sp, p, 4 * k + 2)) != WF_OK) return st;
      if (ghosts && (st = halo_unpack(sp, p, true)) != WF_OK) return st;
      if ((st = wfp_substep_enqueue_rest(ps)) != WF_OK) return st;
      if ((st = halo_pack(sp, p)) != WF_OK) return st;
      if ((st = stamp(sp, p, 4 * k + 3)) != WF_OK) return st;
    }
    for (int p = 0; p < sp->np && !work; p++) /* (their waits) */
      if (MINE(sp, p) && (st = halo_pack(sp, p)) != WF_OK) return st;
    if ((st = wfpt_send(sp->set, 0)) != WF_OK) return st;
    for (int p = 0; p < sp->np && (!work || k == K - 1); p++)
      if (MINE(sp, p) && ((st = wfpt_recv_wait(sp->set, p, 0)) != WF_OK ||
                          (st = halo_unpack(sp, p, false)) != WF_OK))
        return st;
  }
  for (int p = 0; p < sp->np && work; p++)
    if (MINE(sp, p) && (st = wfp_frame_enqueue_end(sp->parts[p].ps)) != WF_OK) return st;
  return frame_end(sp);
}

/* The solver's words of the graph key (ops.key): what a captured frame holds that a repartition
 * may change beside the links' staging (wfpt_key_links): the partitions' launch sizes and
 * buffers, the links' index lists. Same words, same graph. */
static void frame_key(void *ctx, wfpt_key *key) {
  const wf_particles *sp = ctx;
  for (int p = 0; p < sp->np; p++) {
    const part *pt = &sp->parts[p];
    wfpt_key_put(key, pt->launch);
    wfpt_key_put(key, wfp_part_generation(pt->ps));
    wfpt_key_put(key, (uintptr_t)pt->anchor.b);
    wfpt_key_put(key, (uintptr_t)pt->flag);
    wfpt_key_put(key, (uintptr_t)pt->stamps.b);
  }
  for (int l = 0; l < sp->set->n_links; l++) {
    wfpt_key_put(key, sp->halos[l].launch);
    wfpt_key_put(key, (uintptr_t)sp->halos[l].src_idx.b);
    wfpt_key_put(key, (uintptr_t)sp->halos[l].dst_idx.b);
  }
}

static wf_status frames_launched(void *ctx) {
  wf_particles *sp = ctx;
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_status st = wfp_frames_launched(sp->parts[p].ps);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

static wf_status forces_sum_ranks(wf_particles *sp, wf_status st);

wf_status wfp_launch_frames(wf_particles *sp, int frames) {
  if (frames <= 0) return WF_OK;
  sp->exact = false;
  sp->forces_in_0 = false;
  wf_status st = wfp_stamping(sp) ? stamps_reserve(sp) : WF_OK;
  if (st == WF_OK) st = wfpt_run_frames(&sp->frame, frames, WFPT_FULL, NULL);
  if (st == WF_OK) sp->frames_since += frames;
  return forces_sum_ranks(sp, st);
}

wf_status wf_particles_step_frames(wf_particles *sp, int frames) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wfp_part_stability_check(LEAD(sp)); /* (the lead partition saw every particle added) */
  if (sp->np == 1) return wfp_part_step_frames(LEAD(sp), frames);
  if (frames < 0)
    return fail(WF_ERR_INVALID, "particles '%s': frames %d must be >= 0", sp->name, frames);
  wf_status st = wfp_forces_agree(sp);
  for (int f = 0; f < frames && st == WF_OK; f++) {
    if (!sp->distributed || sp->frames_since >= sp->desc.repartition_frames)
      st = wfp_repartition(sp);
    if (st == WF_OK) st = wfp_launch_frames(sp, 1);
  }
  return st;
}

/* ---- how well the halo copies hide -------------------------------------------------------- */

/* The measure's compute (ops.compute_ms) of the WFPT_COMPUTE frame that was waited for: the
 * longest path through the stamped substeps, each (its packs and unpacks included, its wait for
 * the copies not) after the substep before of its partition and, but for its keys of the
 * particles it owns, of those it takes ghosts from (wfpt_critical_path): what the ordinary frame
 * would take with halo copies that cost nothing. It is the same graph as the ordinary frame but
 * for the stamps (one-thread kernels in the substeps, which would count as copy time not hidden
 * if the ordinary frame carried them). */
typedef struct measure_ctx {
  wf_particles *sp;
  double *times;            /* per partition and substep: before its ghosts come in, then after */
  uint8_t adj[MAXP * MAXP]; /* adj[q * np + p]: p takes ghosts from q */
} measure_ctx;

static wf_status measure_before(void *ctx) { return wfp_restore(((measure_ctx *)ctx)->sp); }

static wf_status measure_compute(void *ctx, double *ms) {
  measure_ctx *m = ctx;
  wf_particles *sp = m->sp;
  const int K = sp->desc.substeps;
  double *after = m->times + (size_t)sp->np * (size_t)K;
  bool ok = false;
  wf_status st = wfp_stamped_times(sp, m->times, after, &ok);
  if (st == WF_OK && !ok)
    return fail(WF_ERR_BACKEND,
                "particles '%s': a partition's substep time stamps are missing or run backwards",
                sp->name);
  if (st == WF_OK) *ms = wfpt_critical_path(m->times, after, sp->np, K, m->adj);
  return st;
}

/* The partition module's measure (measure.h), every frame from the snapshot of the repartition
 * (wfp_restore, not timed): a frame without the copies runs on ghosts that stop moving, and
 * particles pile up against them frame after frame, which would make that kind of frame slower
 * than an ordinary one. The state is not given back. */
static wf_status measure_frames(wf_particles *sp, int frames, wf_overlap *out) {
  measure_ctx m = {.sp = sp};
  m.times = malloc(2 * (size_t)sp->np * (size_t)sp->desc.substeps * sizeof *m.times);
  if (!m.times) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (int l = 0; l < sp->set->n_links; l++)
    m.adj[sp->set->links[l].from * sp->np + sp->set->links[l].to] = 1;
  wf_status st = sp->set->n_links ? stamps_reserve(sp) : WF_OK;
  wfpt_measure_ops ops = {
      .ctx = &m, .before = measure_before, .compute_ms = measure_compute, .compute_captured = true};
  if (st == WF_OK)
    st = wfpt_overlap_measure(&sp->frame, &ops, frames, sp->info.halo_bytes_per_frame, out);
  free(m.times);
  return st;
}

static wf_status state_of(wf_particles *sp, float (*pos)[4], float (*vel)[4]);

/* One partition: `frames` ordinary frames (after a warm-up), each waited for, timed on the
 * host's clock; the median is the frame, its compute and the frame without halo alike. */
static wf_status measure_one(wf_particles *sp, int frames, wf_overlap *out) {
  wfp_part *ps = LEAD(sp);
  double *ms = malloc((size_t)frames * sizeof *ms);
  if (!ms) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  wf_status st = WF_OK;
  for (int f = -1; f < frames && st == WF_OK; f++) {
    double t0 = wfpt_now_ms();
    if ((st = wfp_part_step_frames(ps, 1)) == WF_OK &&
        (st = wf_stream_synchronize(wfp_part_stream(ps))) != WF_OK)
      st = wfp_fail_gpu(sp->name, st, "waiting for a frame");
    if (f >= 0) ms[f] = wfpt_now_ms() - t0;
  }
  if (st == WF_OK) out->frame_ms = wfpt_median(ms, frames);
  out->frame_no_halo_ms = out->compute_ms = out->frame_ms;
  free(ms);
  return st;
}

/* One partition has no repartition snapshot to go back to: the measure keeps a copy of the state
 * and its clock on the host and puts it back after. */
static wf_status overlap_one(wf_particles *sp, int frames, wf_overlap *out) {
  wfp_part *ps = LEAD(sp);
  uint32_t n = wfp_part_count(ps);
  float(*pos)[4] = malloc((size_t)(n ? n : 1) * 16), (*vel)[4] = malloc((size_t)(n ? n : 1) * 16);
  wf_particles_stats stats;
  wf_status st = pos && vel
                     ? wfp_part_stats_get(ps, &stats)
                     : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  size_t gb = wf_particles_granular_state_bytes(sp);
  void *gran = st == WF_OK ? malloc(gb) : NULL;
  if (st == WF_OK && !gran)
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  if (st == WF_OK) st = state_of(sp, pos, vel);
  if (st == WF_OK) st = wf_particles_granular_state_get(sp, gran, gb);
  bool ran = st == WF_OK;
  if (ran) st = measure_one(sp, frames, out);
  if (ran) { /* give the state back even after a failure (its own error comes first) */
    wf_status st2 = wfp_part_set_state(ps, (const float(*)[4])pos, (const float(*)[4])vel,
                                       stats.time, stats.substeps);
    if (st2 == WF_OK) st2 = wf_particles_granular_state_set(sp, gran, gb);
    if (st == WF_OK) st = st2;
  }
  free(pos), free(vel), free(gran);
  out->hidden_fraction = 1.0;
  return st;
}

wf_status wf_particles_overlap_measure(wf_particles *sp, int frames, wf_overlap *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: overlap measure: NULL argument");
  memset(out, 0, sizeof *out);
  if (frames < 1)
    return fail(WF_ERR_INVALID, "particles '%s': overlap measure: frames %d must be >= 1", sp->name,
                frames);
  if (sp->np == 1) return overlap_one(sp, frames, out);
  if (sp->ranks)
    return fail(WF_ERR_UNSUPPORTED,
                "particles '%s': the overlap measure over MPI ranks is not supported yet",
                sp->name);
  /* start at a repartition: its snapshot is the state to give back (wfp_restore) */
  wf_status st = !sp->distributed || sp->frames_since > 0 ? wfp_repartition(sp) : WF_OK;
  bool ran = st == WF_OK;
  if (ran) st = measure_frames(sp, frames, out);
  if (ran) { /* give the state back even after a failure (its own error comes first) */
    wf_status st2 = WF_OK;
    for (int p = 0; p < sp->np && st2 == WF_OK; p++)
      if ((st2 = wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps))) != WF_OK)
        st2 = wfp_fail_gpu(sp->name, st2, "waiting for the measured frames");
    if (st2 == WF_OK) st2 = wfp_restore(sp);
    if (st == WF_OK) st = st2;
  }
  return st;
}

/* ---- building the system --------------------------------------------------------------------
 */

/* New particles go to partition 0, which then holds the whole system in global-id order (its
 * local index = global id) until the next frame distributes it. */
static wf_status undistribute(wf_particles *sp) {
  if (!sp->distributed) return WF_OK;
  wf_status st = settle(sp);
  if (st != WF_OK) return st;
  double t;
  uint64_t k;
  if ((st = wfp_clock_get(sp, &t, &k)) != WF_OK) return st;
  uint32_t n = sp->count;
  uint32_t *gid = malloc((size_t)(n ? n : 1) * 4);
  if (!gid) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (uint32_t i = 0; i < n; i++)
    gid[i] = i;
  /* partition 0 must accept larger particles again: its cell size follows the desc */
  st = wfp_cell_size_set(LEAD(sp), sp->desc.cell_size);
  sp->cell = 0.0f;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    if (p == sp->lead) continue;
    sp->parts[p].n_local = sp->parts[p].n_owned = 0;
    if (MINE(sp, p)) st = wfp_part_replace(sp->parts[p].ps, 0, NULL, NULL, NULL, NULL, NULL, NULL);
  }
  if (st == WF_OK)
    st = wfp_part_replace(LEAD(sp), n, sp->pos, sp->vel, sp->mat, gid, sp->omega, sp->hist);
  free(gid);
  if (st != WF_OK) return st;
  sp->parts[sp->lead].n_local = sp->parts[sp->lead].n_owned = n;
  /* partition 0 holds everything, ghosts none: no drift check (its anchors are the last split's;
   * the next repartition sets them again), and every particle's collider contacts count */
  wfp_part_set_drift(LEAD(sp), NULL, NULL);
  wfpt_links_clear(sp->set);
  sp->distributed = false;
  sp->frames_since = 0;
  wfpt_frame_stale(&sp->frame);
  (void)t, (void)k;
  return WF_OK;
}

static wf_status after_add(wf_particles *sp) {
  sp->count = wfp_part_count(LEAD(sp));
  wf_status st = master_reserve(sp, sp->count);
  if (st == WF_OK) st = gather(sp, sp->pos, sp->vel, sp->mat, sp->omega, sp->hist);
  return st;
}

/* Several partitions, after work on partition 0 alone with the whole system gathered there
 * (undistribute: the substeps run one by one, the profile): the master copy from it, and its
 * clock to every other partition, so the next frame distributes the system again. */
static wf_status after_gathered(wf_particles *sp) {
  double t = 0.0;
  uint64_t k = 0;
  wf_status st = after_add(sp);
  if (st == WF_OK) st = wfp_clock_get(sp, &t, &k);
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    if (p != sp->lead && MINE(sp, p)) st = wfp_clock_set(sp->parts[p].ps, t, k);
  return st;
}

wf_status wf_particles_emit(wf_particles *sp, const wf_particles_emitter *e, uint32_t *first,
                            uint32_t *count) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wf_status st = WF_OK;
  bool was_fixed = sp->origin_fixed;
  if (e && !sp->origin_fixed && isfinite(e->center[0]) && isfinite(e->center[1]) &&
      isfinite(e->center[2])) {
    double c[3] = {e->center[0], e->center[1], e->center[2]};
    if ((st = origin_auto(sp, c, c)) != WF_OK) return st;
  }
  if (sp->np == 1) {
    st = wfp_part_emit(LEAD(sp), e, first, count);
    return st == WF_OK ? st : origin_undo(sp, was_fixed, st);
  }
  st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_emit(LEAD(sp), e, first, count);
  return st == WF_OK ? after_add(sp) : origin_undo(sp, was_fixed, st);
}

wf_status wf_particles_add(wf_particles *sp, uint32_t n, const float (*pos)[4],
                           const float (*vel)[4], uint32_t material, uint32_t *first) {
  return wf_particles_add_timed(sp, n, pos, vel, NULL, material, first);
}

wf_status wf_particles_add_relative(wf_particles *sp, const double origin[3], uint32_t n,
                                    const float (*pos)[4], const float (*vel)[4],
                                    const float *birth, uint32_t material, uint32_t *first) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (!origin || !isfinite(origin[0]) || !isfinite(origin[1]) || !isfinite(origin[2]))
    return fail(WF_ERR_INVALID,
                "particles '%s': wf_particles_add_relative: origin is NULL or "
                "not finite",
                sp->name);
  wf_status st = WF_OK;
  bool was_fixed = sp->origin_fixed;
  if (!sp->origin_fixed && (st = origin_fix(sp, origin)) != WF_OK) return st;
  if (sp->np == 1) {
    st = wfp_part_add(LEAD(sp), origin, n, pos, vel, birth, material, first);
    return st == WF_OK ? st : origin_undo(sp, was_fixed, st);
  }
  st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_add(LEAD(sp), origin, n, pos, vel, birth, material, first);
  return st == WF_OK ? after_add(sp) : origin_undo(sp, was_fixed, st);
}

wf_status wf_particles_add_timed(wf_particles *sp, uint32_t n, const float (*pos)[4],
                                 const float (*vel)[4], const float *birth, uint32_t material,
                                 uint32_t *first) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wf_status st = WF_OK;
  bool was_fixed = sp->origin_fixed;
  if (pos && n > 0 && !sp->origin_fixed) { /* the box of the finite positions */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < n; i++)
      for (int k = 0; k < 3; k++)
        if (isfinite(pos[i][k])) lo[k] = fmin(lo[k], pos[i][k]), hi[k] = fmax(hi[k], pos[i][k]);
    if (lo[0] <= hi[0] && lo[1] <= hi[1] && lo[2] <= hi[2] &&
        (st = origin_auto(sp, lo, hi)) != WF_OK)
      return st;
  }
  if (sp->np == 1) {
    st = wfp_part_add(LEAD(sp), NULL, n, pos, vel, birth, material, first);
    return st == WF_OK ? st : origin_undo(sp, was_fixed, st);
  }
  st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_add(LEAD(sp), NULL, n, pos, vel, birth, material, first);
  return st == WF_OK ? after_add(sp) : origin_undo(sp, was_fixed, st);
}

wf_status wf_particles_add_material(wf_particles *sp, const wf_particle_material *m,
                                    uint32_t *index) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_status st = wfp_part_add_material(sp->parts[p].ps, m, index);
    if (st != WF_OK) return st;
  }
  wfpt_frame_stale(&sp->frame);
  return WF_OK;
}

wf_status wf_particles_set_material(wf_particles *sp, uint32_t index,
                                    const wf_particle_material *m) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_status st = wfp_part_set_material(sp->parts[p].ps, index, m);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_particles_add_collider(wf_particles *sp, const wf_collider_desc *c, uint32_t *index) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_status st = wfp_part_add_collider(sp->parts[p].ps, c, index);
    if (st != WF_OK) return st;
  }
  wfpt_frame_stale(&sp->frame);
  return WF_OK;
}

/* Every partition's table takes the pose; the frame reads it from there: no recapture. */
wf_status wf_particles_set_collider_pose(wf_particles *sp, uint32_t index,
                                         const wf_collider_pose *pose) {
  if (!sp) return fail(WF_ERR_INVALID, "wf_particles_set_collider_pose: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue;
    wf_status st = wfp_part_set_collider_pose(sp->parts[p].ps, index, pose);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* Switches the measuring in this process's partitions (the kernels' table pointers and clears
 * are baked into the captured frame: it is captured again). */
static wf_status forces_apply(wf_particles *sp, bool on) {
  if (wfp_part_measuring_forces(LEAD(sp)) == on) return WF_OK;
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) continue; /* another rank's */
    wf_status st = wfp_part_measure_forces(sp->parts[p].ps, on);
    if (st != WF_OK) return st;
  }
  memset(sp->force_sum, 0, sizeof sp->force_sum); /* zero until a frame has summed them */
  sp->force_seconds = 0.0;
  wfpt_frame_stale(&sp->frame);
  return WF_OK;
}

/* Over MPI ranks the switch only records this rank's word: a caller may switch on one rank and
 * not the others (rank 0 writing stats.csv, the others discarding it), and measuring that
 * differs between ranks made the ranks' force reads differ in their collectives (a hang). */
wf_status wf_particles_measure_collider_forces(wf_particles *sp, bool on) {
  if (!sp) return fail(WF_ERR_INVALID, "wf_particles_measure_collider_forces: solver is NULL");
  sp->forces_want = on;
  return sp->ranks ? WF_OK : forces_apply(sp, on);
}

/* Over MPI ranks, before a step (every rank steps, so every rank gets here): measuring is on
 * where any rank wants it (one allreduce of a flag a step call). */
wf_status wfp_forces_agree(wf_particles *sp) {
  if (!sp->ranks) return WF_OK;
  bool on = sp->forces_want;
  wf_status st = wfpt_ranks_any(sp->set, &on);
  return st == WF_OK ? forces_apply(sp, on) : st;
}

/* Over MPI ranks, after frames (every rank, also one whose frames failed: it gives zeros): the
 * sums of every rank's partitions into force_sum, added as integers (any order, the same bits),
 * so that wf_particles_collider_force reads them without a collective. */
static wf_status forces_sum_ranks(wf_particles *sp, wf_status st) {
  if (!sp->ranks || !wfp_part_measuring_forces(LEAD(sp))) return st;
  uint64_t sum[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS] = {0};
  double sec = 0.0;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    const unsigned long long *table = NULL;
    if (!MINE(sp, p)) continue;
    if ((st = wfp_part_forces(sp->parts[p].ps, &table, &sec)) != WF_OK) break;
    for (size_t w = 0; w < WFX_MAX_COLLIDERS * WFX_FORCE_WORDS; w++)
      sum[w] += table[w];
  }
  if (st != WF_OK) memset(sum, 0, sizeof sum);
  wf_status st2 = wfpt_ranks_sum_u64(sp->set, sum, WFX_MAX_COLLIDERS * WFX_FORCE_WORDS);
  if (st != WF_OK || st2 != WF_OK) return st != WF_OK ? st : st2;
  for (size_t w = 0; w < WFX_MAX_COLLIDERS * WFX_FORCE_WORDS; w++)
    sp->force_sum[w] = sum[w];
  sp->force_seconds = sec;
  return WF_OK;
}

/* The partitions' integer sums, added in any order (collider_force.h): the same bits for any
 * number of partitions. Over MPI ranks the sums the last frames made over every rank: no rank
 * waits for another here. */
wf_status wf_particles_collider_force(wf_particles *sp, uint32_t index, double force[3],
                                      double torque[3]) {
  static const char fn[] = "wf_particles_collider_force";
  if (!sp || !force || !torque) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  uint32_t n = wfp_part_collider_count(LEAD(sp));
  if (index >= n)
    return wf__error(WF_ERR_INVALID, fn, "particles '%s': collider %u does not exist (%u added)",
                     sp->name, index, n);
  if (!wfp_part_measuring_forces(LEAD(sp))) { /* from the next frame on */
    for (int j = 0; j < 3; j++)
      force[j] = torque[j] = 0.0;
    return wf_particles_measure_collider_forces(sp, true);
  }
  const unsigned long long *tables[MAXP];
  if (sp->ranks && !sp->forces_in_0) {
    tables[0] = sp->force_sum;
    wfx_forces_read(tables, 1, index, sp->force_seconds, force, torque);
    return WF_OK;
  }
  double seconds = 0.0;
  int np = sp->forces_in_0 ? 1 : sp->np;
  for (int p = 0; p < np; p++) {
    int q = sp->forces_in_0 ? sp->lead : p;
    wf_status st = wfp_part_forces(sp->parts[q].ps, &tables[p], &seconds);
    if (st != WF_OK) return st;
  }
  wfx_forces_read(tables, np, index, seconds, force, torque);
  return WF_OK;
}

wf_particles_params wf_particles_params_get(const wf_particles *sp) {
  return sp ? wfp_part_params_get(LEAD(sp)) : (wf_particles_params){0};
}

/* Every partition takes the parameters (a device block: no recapture); the desc keeps them for
 * the skin, which follows the frame time and gravity. */
wf_status wf_particles_params_set(wf_particles *sp, const wf_particles_params *p) {
  if (!sp || !p) return fail(WF_ERR_INVALID, "particles: NULL argument");
  for (int i = 0; i < sp->np; i++) {
    if (!MINE(sp, i)) continue;
    wf_status st = wfp_part_params_set(sp->parts[i].ps, p);
    if (st != WF_OK) return st;
  }
  sp->desc.frame_dt = p->frame_dt;
  memcpy(sp->desc.gravity, p->gravity, sizeof sp->desc.gravity);
  sp->desc.damping = p->damping;
  return WF_OK;
}

wf_status wf_particles_drag_set(wf_particles *sp, uint32_t gid, const double target[3],
                                float stiffness, float damping) {
  if (!sp || !target) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (sp->desc.contact_model == WF_CONTACT_XPBD)
    return fail(WF_ERR_UNSUPPORTED, "particles: a drag needs a force-based contact model (DEM or "
                                    "Hertz), not XPBD");
  if (gid >= wf_particles_count(sp))
    return fail(WF_ERR_INVALID, "particles: drag of particle %u of %u", gid,
                wf_particles_count(sp));
  if (!(stiffness >= 0.0f) || !isfinite(stiffness) || !(damping >= 0.0f) || !isfinite(damping) ||
      !isfinite(target[0]) || !isfinite(target[1]) || !isfinite(target[2]))
    return fail(WF_ERR_INVALID,
                "particles: drag of particle %u: stiffness %g N/m and damping %g "
                "N*s/m must be finite and >= 0, the target finite",
                gid, (double)stiffness, (double)damping);
  for (int i = 0; i < sp->np; i++) {
    wf_status st = wfp_part_drag_set(sp->parts[i].ps, true, gid, target, stiffness, damping);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_particles_drag_clear(wf_particles *sp) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: NULL argument");
  static const double zero[3] = {0, 0, 0};
  for (int i = 0; i < sp->np; i++) {
    wf_status st = wfp_part_drag_set(sp->parts[i].ps, false, 0, zero, 0.0f, 0.0f);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_particles_step_substeps(wf_particles *sp, int n) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_step_substeps(LEAD(sp), n);
  wf_status st = wfp_forces_agree(sp);
  if (st == WF_OK) st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_step_substeps(LEAD(sp), n);
  if (st == WF_OK) sp->forces_in_0 = true; /* the others hold an older frame's */
  return st == WF_OK ? after_gathered(sp) : st;
}

wf_status wf_particles_profile(wf_particles *sp, int substeps, wf_particles_profile_result *out) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_profile(LEAD(sp), substeps, out);
  wf_status st = wfp_forces_agree(sp);
  if (st == WF_OK) st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_profile(LEAD(sp), substeps, out);
  if (st == WF_OK) sp->forces_in_0 = true;
  return st == WF_OK ? after_gathered(sp) : st;
}

wf_stream *wf_particles_stream(const wf_particles *sp) {
  return sp ? wfp_part_stream(LEAD(sp)) : NULL;
}

size_t wf_particles_device_bytes(const wf_particles *sp) {
  size_t bytes = 0;
  for (int p = 0; sp && p < sp->np; p++)
    bytes += part_bytes(sp, p);
  return bytes;
}

uint32_t wf_particles_capacity(const wf_particles *sp) {
  uint32_t n = 0;
  for (int p = 0; sp && p < sp->np; p++)
    n += wfp_part_capacity(sp->parts[p].ps);
  return n;
}

/* ---- reading the state ---------------------------------------------------------------------- */

/* The state in global-id order into pos, vel (either NULL), as it is: no flags reported. */
static wf_status state_of(wf_particles *sp, float (*pos)[4], float (*vel)[4]) {
  if (sp->np == 1) return wfp_part_get(LEAD(sp), (wfp_f4 *)pos, (wfp_f4 *)vel, NULL, NULL);
  if (ranked(sp)) /* two columns into the caller's arrays: 32 bytes a particle (and its id) */
    return wfp_state_columns(sp, WFP_COL_POS | WFP_COL_VEL, -1, (wfp_f4 *)pos, (wfp_f4 *)vel, NULL,
                             NULL, NULL);
  wf_status st = settle(sp);
  if (st != WF_OK) return st;
  if (pos && sp->count) memcpy(pos, sp->pos, (size_t)sp->count * 16);
  if (vel && sp->count) memcpy(vel, sp->vel, (size_t)sp->count * 16);
  return WF_OK;
}

/* Over MPI ranks, a check that failed on one rank fails on every rank (an agreed stop: each
 * rank's flag, OR-ed over the ranks), the others naming the rank that failed. Every rank calls
 * it at the same points (check, download), so none is left waiting in a collective. */
static wf_status agree(wf_particles *sp, wf_status st) {
  if (!sp->ranks || !sp->set) return st;
  uint64_t bad[WF_MAX_DEVICES] = {0}; /* (ranks <= partitions) */
  if (st != WF_OK) bad[sp->set->rank] = 1;
  wf_status st2 = wfpt_ranks_sum_u64(sp->set, bad, sp->set->ranks);
  if (st != WF_OK) return st;
  if (st2 != WF_OK) return st2;
  for (int r = 0; r < sp->set->ranks; r++)
    if (bad[r])
      return fail(WF_ERR_DEVICE, "particles '%s': rank %d failed (this is rank %d); stopping",
                  sp->name, r, sp->set->rank);
  return WF_OK;
}

wf_status wf_particles_check(wf_particles *sp) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wf_status st =
      sp->np > 1 && sp->distributed && sp->frames_since > 0 ? wfp_rerun_if_moved(sp) : WF_OK;
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    if (MINE(sp, p)) st = wfp_part_check(sp->parts[p].ps);
  return agree(sp, st);
}

/* The solver holds positions relative to the origin (docs/precision.md); the world's are
 * local + origin, added in double and rounded once. A zero component is skipped, so that
 * particles at the world's origin give their bits unchanged (-0 stays -0). */
static void to_world(const wf_particles *sp, float (*pos)[4], uint32_t n) {
  for (int k = 0; pos && k < 3; k++) {
    if (sp->origin[k] == 0.0) continue;
    for (uint32_t i = 0; i < n; i++)
      pos[i][k] = (float)((double)pos[i][k] + sp->origin[k]);
  }
}

wf_status wf_particles_origin(const wf_particles *sp, double origin[3]) {
  if (!sp || !origin) return fail(WF_ERR_INVALID, "wf_particles_origin: particles or out is NULL");
  memcpy(origin, sp->origin, sizeof sp->origin);
  return WF_OK;
}

wf_status wf_particles_download(wf_particles *sp, float (*pos)[4], float (*vel)[4]) {
  wf_status st = wf_particles_download_local(sp, pos, vel);
  if (sp && (st == WF_OK || st == WF_ERR_INVALID)) to_world(sp, pos, wf_particles_count(sp));
  return st;
}

wf_status wf_particles_download_local(wf_particles *sp, float (*pos)[4], float (*vel)[4]) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_download(LEAD(sp), pos, vel);
  wf_status st = ranked(sp) ? exact(sp) : settle(sp);
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    if (MINE(sp, p)) st = wfp_part_check(sp->parts[p].ps);
  st = agree(sp, st);
  return st == WF_OK ? state_of(sp, pos, vel) : st;
}

static int cmp_row_gid(const void *a, const void *b) {
  return cmp_u32(&((const wfp_rank_row *)a)->gid, &((const wfp_rank_row *)b)->gid);
}

uint32_t wf_particles_owned_count(const wf_particles *sp) {
  if (!sp) return 0;
  if (!sp->ranks) return wf_particles_count(sp);
  if (!sp->distributed) return MINE(sp, 0) ? wf_particles_count(sp) : 0;
  uint32_t n = 0;
  for (int p = 0; p < sp->np; p++)
    if (MINE(sp, p)) n += sp->parts[p].n_owned;
  return n;
}

/* Over distributed ranks: the rank's own partitions' owned rows, read from its devices and
 * sorted by id; nothing of the state crosses between ranks. Before the first distribution rank
 * 0 owns every particle (wf_particles_owned_ids) and reads them from its lead partition. At most
 * `room` rows are written (the caller's arrays); more is an error. omega and hist: the granular
 * columns of the same rows, or NULL. */
static wf_status owned_rows_out(wf_particles *sp, uint32_t room, uint32_t *ids, float (*pos)[4],
                                float (*vel)[4], float (*omega)[4], void *hist, uint32_t *n) {
  static const char fn[] = "wf_particles_download_owned";
  if (!sp->distributed) {
    if (!MINE(sp, 0)) return WF_OK;
    uint32_t count = wf_particles_count(sp);
    if (count > room)
      return wf__error(WF_ERR_INVALID, fn, "particles '%s': rank %d owns %u particles, room for %u",
                       sp->name, sp->set->rank, count, room);
    wf_status st = wfp_part_get_all(LEAD(sp), (wfp_f4 *)pos, (wfp_f4 *)vel, NULL, NULL,
                                    (wfp_f4 *)omega, (wfp_hist *)hist);
    for (uint32_t i = 0; st == WF_OK && ids && i < count; i++)
      ids[i] = i;
    if (st == WF_OK) *n = count;
    return st;
  }
  wfp_rank_row *rows = NULL;
  size_t r = 0;
  wf_status st = wfp_ranks_local_rows(sp, &rows, &r);
  if (st == WF_OK) st = owned_record(sp, rows, r);
  if (st == WF_OK && r > room)
    st = wf__error(WF_ERR_INVALID, fn, "particles '%s': rank %d owns %zu particles, room for %u",
                   sp->name, sp->set->rank, r, room);
  if (st == WF_OK) qsort(rows, r, sizeof *rows, cmp_row_gid);
  for (size_t i = 0; i < r && st == WF_OK; i++) {
    if (ids) ids[i] = rows[i].gid;
    if (pos) memcpy(pos[i], &rows[i].pos, 16);
    if (vel) memcpy(vel[i], &rows[i].vel, 16);
    if (omega) memcpy(omega[i], &rows[i].omega, 16);
    if (hist) memcpy((unsigned char *)hist + i * HIST_BYTES, rows[i].hist, HIST_BYTES);
  }
  if (st == WF_OK) *n = (uint32_t)r;
  free(rows);
  return st;
}

/* download_owned_local's rows, positions moved into the world. */
wf_status wf_particles_download_owned(wf_particles *sp, uint32_t *ids, float (*pos)[4],
                                      float (*vel)[4], uint32_t *n) {
  wf_status st = wf_particles_download_owned_local(sp, UINT32_MAX, ids, pos, vel, NULL, NULL, n);
  if (st == WF_OK) to_world(sp, pos, *n);
  return st;
}

static wf_status granular_columns(wf_particles *sp, wfp_f4 *w, wfp_hist *hi);

wf_status wf_particles_download_owned_local(wf_particles *sp, uint32_t room, uint32_t *ids,
                                            float (*pos)[4], float (*vel)[4], float (*omega)[4],
                                            void *hist, uint32_t *n) {
  static const char fn[] = "wf_particles_download_owned_local";
  if (!sp || !n) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  *n = 0;
  if (!sp->ranks) { /* one process owns every particle */
    uint32_t count = wf_particles_count(sp);
    if (count > room)
      return wf__error(WF_ERR_INVALID, fn, "particles '%s': %u particles, room for %u", sp->name,
                       count, room);
    wf_status st = pos || vel ? wf_particles_download_local(sp, pos, vel) : WF_OK;
    if (st == WF_OK && (omega || hist))
      st = granular_columns(sp, (wfp_f4 *)omega, (wfp_hist *)hist);
    for (uint32_t i = 0; st == WF_OK && ids && i < count; i++)
      ids[i] = i;
    if (st == WF_OK) *n = count;
    return st;
  }
  wf_status st = wf_particles_check(sp); /* as download_owned: exact, checked, agreed */
  if (st == WF_OK) st = owned_rows_out(sp, room, ids, pos, vel, omega, hist, n);
  return st;
}

/* The kinetic energy, momentum and speed (stats_kinematic), then the potential and elastic
 * energies (energy.c). */
static wf_status stats_kinematic(wf_particles *sp, wf_particles_stats *out);

wf_status wf_particles_stats_get(wf_particles *sp, wf_particles_stats *out) {
  wf_status st = stats_kinematic(sp, out);
  wf_particles_energy e;
  if (st == WF_OK) st = wf_particles_energy_get(sp, &e);
  if (st == WF_OK) out->potential_energy = e.potential, out->elastic_energy = e.elastic;
  return st;
}

wf_status wf_particles_time(wf_particles *sp, double *seconds, uint64_t *substeps) {
  if (!sp || !seconds || !substeps) return fail(WF_ERR_INVALID, "particles: NULL argument");
  wf_status st = sp->np == 1 ? WF_OK : ranked(sp) ? exact(sp) : settle(sp);
  return st != WF_OK ? st : wfp_clock_get(sp, seconds, substeps);
}

/* Over distributed ranks: each rank adds the particles its partitions own (their ghosts, NaN
 * anchors, left out) to exact sums, read from its own devices (52 bytes a particle there, for
 * the call); the sums add over the ranks as integers and the largest speed is a maximum, so every
 * rank gets the one process's bits and nothing of the state leaves its rank. */
static wf_status stats_ranked(wf_particles *sp, wf_particles_stats *out) {
  wf_status st = wf_particles_check(sp); /* (agreed: a rerun when a particle outran the skin) */
  wfp_stats_acc acc;
  wfp_stats_init(&acc);
  float(*x)[4] = NULL, (*v)[4] = NULL, (*w)[4] = NULL, *anchor = NULL;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    size_t n = pt->n_local;
    if (!MINE(sp, p) || !n) continue;
    wf_buffer *pos, *vel, *clock, *omega, *hist;
    float(*nx)[4] = realloc(x, n * 16), (*nv)[4] = nx ? realloc(v, n * 16) : NULL;
    float(*nw)[4] = nv ? realloc(w, n * 16) : NULL, *na = nw ? realloc(anchor, n * 4) : NULL;
    x = nx ? nx : x, v = nv ? nv : v, w = nw ? nw : w, anchor = na ? na : anchor;
    if (!na) {
      st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
      break;
    }
    wf_stream *s = wfp_part_stream(pt->ps);
    if ((st = wfp_part_state_buffers(pt->ps, &pos, &vel, &clock)) != WF_OK ||
        (st = wfp_part_granular_buffers(pt->ps, &omega, &hist)) != WF_OK)
      break;
    if ((st = wf_stream_synchronize(s)) != WF_OK || (st = wf_download(x, pos, 0, n * 16)) ||
        (st = wf_download(v, vel, 0, n * 16)) || (st = wf_download(w, omega, 0, n * 16)) ||
        (st = wf_download(anchor, pt->anchor.b, 0, n * 4))) {
      wfp_fail_gpu(sp->name, st, "reading the state for the statistics");
      break;
    }
    wfp_stats_add(&acc, n, (const float(*)[4])x, (const float(*)[4])v, (const float(*)[4])w,
                  anchor);
  }
  free(x), free(v), free(w), free(anchor);
  /* every rank enters the sums, also one that failed (its verdict goes with them) */
  bool failed = st != WF_OK;
  wf_status st2 = wfpt_ranks_sum_xsum(sp->set, acc.sum, 5, &failed);
  double mx[1] = {acc.max_speed};
  if (st2 == WF_OK) st2 = wfpt_ranks_max_f64(sp->set, mx, 1);
  if (st == WF_OK) st = st2;
  if (st == WF_OK && failed)
    return fail(WF_ERR_BACKEND,
                "particles '%s': another rank failed to read its statistics (this is rank %d)",
                sp->name, sp->set->rank);
  if (st != WF_OK) return st;
  acc.max_speed = mx[0];
  memset(out, 0, sizeof *out);
  out->count = sp->count;
  wfp_stats_out(&acc, out);
  return WF_OK;
}

static wf_status stats_kinematic(wf_particles *sp, wf_particles_stats *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (sp->np == 1) return wfp_part_stats_get(LEAD(sp), out);
  wf_status st = ranked(sp) ? stats_ranked(sp, out) : settle(sp);
  if (st != WF_OK) return st;
  if (!ranked(sp)) {
    memset(out, 0, sizeof *out);
    out->count = sp->count;
    wfp_stats_acc acc;
    wfp_stats_init(&acc);
    wfp_stats_add(&acc, sp->count, (const float(*)[4])sp->pos, (const float(*)[4])sp->vel,
                  (const float(*)[4])sp->omega, NULL);
    wfp_stats_out(&acc, out);
  }
  uint64_t overflows = 0;
  for (int p = 0; p < sp->np; p++) { /* the overflow counters of every partition */
    wf_buffer *clock;
    uint32_t over = 0;
    if (!MINE(sp, p)) continue;
    TRY(wfp_part_state_buffers(sp->parts[p].ps, NULL, NULL, &clock), "finding the clock");
    TRY(wf_download(&over, clock, offsetof(wfp_clock, overflows), 4), "reading the clock");
    overflows += over;
  }
  if (sp->ranks && (st = wfpt_ranks_sum_u64(sp->set, &overflows, 1)) != WF_OK) return st;
  out->history_overflows += (uint32_t)overflows;
  return wfp_clock_get(sp, &out->time, &out->substeps);
}

wf_status wf_particles_info_get(const wf_particles *sp, wf_particles_info *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  *out = sp->info;
  if (sp->np == 1 || !sp->distributed) { /* everything in partition 0 */
    out->owned[0] = wf_particles_count(sp);
    out->slab_lo[0] = -INFINITY, out->slab_hi[0] = INFINITY;
  }
  for (int p = 0; p < sp->np; p++) { /* in the world: the solver's are relative to the origin */
    double o = sp->origin[out->axis >= 0 && out->axis < 3 ? out->axis : 0];
    if (isfinite(out->slab_lo[p])) out->slab_lo[p] = (float)((double)out->slab_lo[p] + o);
    if (isfinite(out->slab_hi[p])) out->slab_hi[p] = (float)((double)out->slab_hi[p] + o);
  }
  out->captures = sp->frame.captures;
  out->capture_ms = sp->frame.capture_ms;
  out->mpi_halo = 0;
  if (sp->set && sp->set->mpi) /* every local partition resolves alike on one backend */
    out->mpi_halo = sp->set->direct[sp->set->lead] ? WF_MPI_HALO_DIRECT : WF_MPI_HALO_STAGED;
  for (int p = 0; p < sp->np; p++)
    out->device_bytes[p] = part_bytes(sp, p);
  out->host_bytes = host_bytes(sp);
  return WF_OK;
}

/* The whole system goes back into partition 0 (global-id order, as after adding particles), takes
 * the given state there, and every partition takes the clock (kinematic colliders move with it);
 * the next frame distributes it again. The result does not depend on the partitioning, so the
 * frames that follow are bitwise those that followed the saved state. */
wf_status wf_particles_set_state(wf_particles *sp, const float (*pos)[4], const float (*vel)[4],
                                 double time, uint64_t substeps) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (!pos || (sp->origin[0] == 0.0 && sp->origin[1] == 0.0 && sp->origin[2] == 0.0))
    return wf_particles_set_state_local(sp, pos, vel, time, substeps);
  uint32_t n = wf_particles_count(sp);
  float(*local)[4] = malloc((size_t)n * 16 + 16);
  if (!local) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  if (n) memcpy(local, pos, (size_t)n * 16);
  for (int k = 0; k < 3; k++) /* relative to the origin, in double, rounded once */
    for (uint32_t i = 0; sp->origin[k] != 0.0 && i < n; i++)
      local[i][k] = (float)((double)pos[i][k] - sp->origin[k]);
  wf_status st = wf_particles_set_state_local(sp, (const float(*)[4])local, vel, time, substeps);
  free(local);
  return st;
}

wf_status wf_particles_set_state_local(wf_particles *sp, const float (*pos)[4],
                                       const float (*vel)[4], double time, uint64_t substeps) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_set_state(LEAD(sp), pos, vel, time, substeps);
  if (!pos || !vel)
    return fail(WF_ERR_INVALID, "particles '%s': set_state: pos or vel is NULL", sp->name);
  wf_status st = undistribute(sp);
  if (st != WF_OK) return st;
  static const float none[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    st = p == sp->lead ? wfp_part_set_state(LEAD(sp), pos, vel, time, substeps)
         : MINE(sp, p) ? wfp_part_set_state(sp->parts[p].ps, none, none, time, substeps)
                       : WF_OK;
  if (st != WF_OK) return st;
  if (sp->count) {
    memcpy(sp->pos, pos, (size_t)sp->count * 16);
    memcpy(sp->vel, vel, (size_t)sp->count * 16);
    memset(sp->omega, 0, (size_t)sp->count * 16);
    memset(sp->hist, 0, (size_t)sp->count * HIST_BYTES);
  }
  sp->snap_time = time;
  sp->snap_substeps = substeps;
  return WF_OK;
}

/* ---- the granular state --------------------------------------------------------------------- */

wf_status wf_particles_download_omega(wf_particles *sp, float (*omega)[4]) {
  if (!sp || !omega) return fail(WF_ERR_INVALID, "particles: download_omega: NULL argument");
  if (sp->np == 1) return wfp_part_download_omega(LEAD(sp), omega);
  if (ranked(sp)) { /* the gather first, on every rank, as settle's */
    wf_status st =
        wfp_state_columns(sp, WFP_COL_OMEGA, -1, NULL, NULL, NULL, (wfp_f4 *)omega, NULL);
    for (int p = 0; p < sp->np && st == WF_OK; p++)
      if (MINE(sp, p)) st = wfp_part_check(sp->parts[p].ps);
    return st;
  }
  wf_status st = settle(sp);
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    if (MINE(sp, p)) st = wfp_part_check(sp->parts[p].ps);
  if (st == WF_OK && sp->count) memcpy(omega, sp->omega, (size_t)sp->count * 16);
  return st;
}

/* The blob: a header, then omega (16 bytes) and the history slots of every particle. */
typedef struct granular_header {
  char magic[8]; /* "wfgran1" */
  uint32_t count, slots;
} granular_header;

size_t wf_particles_granular_state_bytes(const wf_particles *sp) {
  size_t n = wf_particles_count(sp);
  return sizeof(granular_header) + n * (16 + HIST_BYTES);
}

wf_status wf_particles_granular_state_get(wf_particles *sp, void *blob, size_t bytes) {
  if (!sp || !blob) return fail(WF_ERR_INVALID, "particles: granular_state_get: NULL argument");
  size_t need = wf_particles_granular_state_bytes(sp);
  if (bytes < need)
    return fail(WF_ERR_INVALID,
                "particles '%s': granular_state_get: the blob holds %zu bytes, %zu are needed",
                sp->name, bytes, need);
  uint32_t n = wf_particles_count(sp);
  granular_header h = {"wfgran1", n, WFP_HIST_SLOTS};
  unsigned char *b = blob;
  memcpy(b, &h, sizeof h);
  wfp_f4 *w = (wfp_f4 *)(b + sizeof h);
  wfp_hist *hi = (wfp_hist *)(b + sizeof h + (size_t)n * 16);
  return granular_columns(sp, w, hi);
}

/* Every particle's angular velocity and history slots, global-id order, into w and hi (either
 * may be NULL). */
static wf_status granular_columns(wf_particles *sp, wfp_f4 *w, wfp_hist *hi) {
  uint32_t n = wf_particles_count(sp);
  if (sp->np == 1) return wfp_part_get_all(LEAD(sp), NULL, NULL, NULL, NULL, w, hi);
  if (ranked(sp)) /* straight into the caller's arrays */
    return wfp_state_columns(sp, (w ? WFP_COL_OMEGA : 0) | (hi ? WFP_COL_HIST : 0), -1, NULL, NULL,
                             NULL, w, hi);
  wf_status st = settle(sp);
  if (st == WF_OK && n && w) memcpy(w, sp->omega, (size_t)n * 16);
  if (st == WF_OK && n && hi) memcpy(hi, sp->hist, (size_t)n * HIST_BYTES);
  return st;
}

wf_status wf_particles_granular_state_init(const wf_particles *sp, void *blob, size_t bytes) {
  if (!sp || !blob) return fail(WF_ERR_INVALID, "particles: granular_state_init: NULL argument");
  size_t need = wf_particles_granular_state_bytes(sp);
  if (bytes != need)
    return fail(WF_ERR_INVALID,
                "particles '%s': granular_state_init: the blob holds %zu bytes, %zu are needed",
                sp->name, bytes, need);
  granular_header h = {"wfgran1", wf_particles_count(sp), WFP_HIST_SLOTS};
  memset(blob, 0, bytes);
  memcpy(blob, &h, sizeof h);
  return WF_OK;
}

/* Births live in omega.w (wf_particles_add_timed): patched into the granular state, which both
 * partition layouts already know how to take. */
wf_status wf_particles_births_set(wf_particles *sp, uint32_t first, uint32_t n,
                                  const float *birth) {
  if (!sp || (n && !birth)) return fail(WF_ERR_INVALID, "particles: births_set: NULL argument");
  uint32_t count = wf_particles_count(sp);
  if (first > count || n > count - first)
    return fail(WF_ERR_INVALID, "particles '%s': births_set: [%u, %u) is beyond the %u particles",
                sp->name, first, first + n, count);
  size_t gb = wf_particles_granular_state_bytes(sp);
  unsigned char *blob = malloc(gb ? gb : 1);
  if (!blob) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  wf_status st = wf_particles_granular_state_get(sp, blob, gb);
  wfp_f4 *w = (wfp_f4 *)(blob + sizeof(granular_header));
  for (uint32_t i = 0; st == WF_OK && i < n; i++)
    w[first + i].w = birth[i];
  if (st == WF_OK) st = wf_particles_granular_state_set(sp, blob, gb);
  free(blob);
  return st;
}

wf_status wf_particles_granular_state_set(wf_particles *sp, const void *blob, size_t bytes) {
  if (!sp || !blob) return fail(WF_ERR_INVALID, "particles: granular_state_set: NULL argument");
  uint32_t n = wf_particles_count(sp);
  granular_header h;
  if (bytes < sizeof h)
    return fail(WF_ERR_INVALID,
                "particles '%s': granular_state_set: %zu bytes is no granular state", sp->name,
                bytes);
  memcpy(&h, blob, sizeof h);
  if (memcmp(h.magic, "wfgran1", 8) != 0 || h.slots != WFP_HIST_SLOTS)
    return fail(WF_ERR_INVALID,
                "particles '%s': granular_state_set: not a granular state of this version",
                sp->name);
  if (h.count != n || bytes != wf_particles_granular_state_bytes(sp))
    return fail(WF_ERR_INVALID,
                "particles '%s': granular_state_set: the state holds %u particles (%zu bytes), "
                "the solver %u",
                sp->name, h.count, bytes, n);
  const unsigned char *b = blob;
  const wfp_f4 *w = (const wfp_f4 *)(b + sizeof h);
  /* the solver keeps each particle's slots packed (wfp_slot); a blob may hold them anywhere */
  wfp_hist *hi = malloc((size_t)(n ? n : 1) * HIST_BYTES);
  if (!hi) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  memcpy(hi, b + sizeof h + (size_t)n * 16, (size_t)n * HIST_BYTES);
  for (uint32_t i = 0; i < n; i++)
    wfp_hist_pack(&hi[(size_t)i * WFP_HIST_SLOTS]);
  wf_status st = WF_OK;
  if (sp->np > 1) {
    st = undistribute(sp); /* everything in partition 0, global-id order */
    if (st == WF_OK && n) {
      memcpy(sp->omega, w, (size_t)n * 16);
      memcpy(sp->hist, hi, (size_t)n * HIST_BYTES);
    }
  }
  if (st == WF_OK) st = wfp_part_granular_set(LEAD(sp), w, hi);
  free(hi);
  return st;
}

/* ---- partition views and the gather on the device ----------------------------------------- */

/* Partition pt's owned rows (their tag has no ghost bit, 16 + owner) gathered in local order,
 * which is global-id order, into its view buffers, on its stream. */
static wf_status view_gather(wf_particles *sp, part *pt) {
  wf_stream *s = wfp_part_stream(pt->ps);
  size_t m = pt->n_owned ? pt->n_owned : 1;
  wf_status st;
  if ((st = wfp_dbuf_reserve(sp, &pt->view_idx, pt->dev, s, (size_t)pt->n_local * 4 + 4)) !=
          WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->view_pos, pt->dev, s, m * 16)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->view_vel, pt->dev, s, m * 16)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->view_gid, pt->dev, s, m * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->view_mat, pt->dev, s, m * 2)) != WF_OK ||
      (st = wfp_select_local(sp, pt, 0, &pt->view_idx, false)) != WF_OK)
    return st;
  if (!pt->n_owned) return WF_OK;
  wfp_arrays a = wfp_part_arrays(pt->ps);
  wfp_migrate_pack_args pa = {wf_buffer_ptr(pt->view_idx.b),
                              a.pos,
                              a.vel,
                              a.gid,
                              a.mat,
                              wf_buffer_ptr(pt->view_pos.b),
                              wf_buffer_ptr(pt->view_vel.b),
                              wf_buffer_ptr(pt->view_gid.b),
                              wf_buffer_ptr(pt->view_mat.b),
                              NULL, /* no granular state in a view */
                              NULL,
                              NULL,
                              NULL};
  TRY(wf_launch(&wfp_migrate_pack, pt->n_owned, &pa, sizeof pa, s), "gathering a partition view");
  dbuf *bufs[] = {&pt->view_pos, &pt->view_vel, &pt->view_gid};
  for (int b = 0; b < 3; b++)
    TRY(wf_buffer_touch(bufs[b]->b, s), "ordering a partition view");
  TRY(wfp_part_touch(pt->ps), "ordering the particle arrays");
  return WF_OK;
}

wf_status wf_particles_partition_view(wf_particles *sp, int i, wf_partition_view *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: partition view: NULL argument");
  memset(out, 0, sizeof *out);
  if (i < 0 || i >= sp->np)
    return fail(WF_ERR_INVALID, "particles '%s': partition %d out of range (%d partitions)",
                sp->name, i, sp->np);
  part *pt = &sp->parts[i];
  if (!MINE(sp, i))
    return fail(WF_ERR_INVALID, "particles '%s': partition %d is held by MPI rank %d", sp->name, i,
                sp->set->rank_of[i]);
  out->device = pt->dev;
  out->stream = wfp_part_stream(pt->ps);
  TRY(wfp_part_state_buffers(pt->ps, &out->pos, &out->vel, &out->clock), "finding the state");
  memcpy(out->origin, sp->origin, sizeof out->origin); /* shared by every partition */
  if (sp->np == 1 || !sp->distributed) { /* partition 0 holds everything in global-id order */
    out->rows = i == sp->lead ? wf_particles_count(sp) : 0;
    return WF_OK;
  }
  /* a rerun first if a particle outran the skin: the partitions' state must be exact (one wait
   * for the frames, at the first view after them) */
  wf_status st = sp->frames_since > 0 && !sp->exact ? wfp_rerun_if_moved(sp) : WF_OK;
  sp->exact = st == WF_OK;
  if (st == WF_OK) st = view_gather(sp, pt);
  if (st != WF_OK) return st;
  out->pos = pt->view_pos.b, out->vel = pt->view_vel.b, out->ids = pt->view_gid.b;
  out->rows = pt->n_owned;
  return WF_OK;
}

/* The gather on s (wfpt_gather) for n rows, and with `scratch` rows of positions and velocities
 * on its device; made again when the stream changes or n outgrows it. */
static wf_status gather_reserve(wf_particles *sp, wf_stream *s, uint32_t n, bool scratch) {
  if (!sp->gather || sp->gather_stream != s || sp->gather_rows < n) {
    if (sp->gather_stream) wf_stream_synchronize(sp->gather_stream);
    wfpt_gather_destroy(sp->gather);
    sp->gather = NULL;
    wfp_dbuf_free(&sp->gather_pos, sp->gather_stream);
    wfp_dbuf_free(&sp->gather_vel, sp->gather_stream);
    sp->gather_stream = s, sp->gather_rows = n;
    TRY(wfpt_gather_create(wf_stream_device(s), s, n, &sp->gather), "creating the gather");
  }
  wf_device *dev = wf_stream_device(s);
  wf_status st = WF_OK;
  if (scratch) st = wfp_dbuf_reserve(sp, &sp->gather_pos, dev, s, (size_t)n * 16);
  if (scratch && st == WF_OK) st = wfp_dbuf_reserve(sp, &sp->gather_vel, dev, s, (size_t)n * 16);
  return st;
}

/* Several partitions: every partition's view gathered by global id on s (the partition module's
 * gather: peer copies, then its scatter kernel), straight into pos and vel when they are two
 * buffers at offset 0, else into scratch rows copied out after. */
static wf_status copy_gathered(wf_particles *sp, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                               size_t vel_off, wf_stream *s) {
  uint32_t n = sp->count;
  wf_partition_view views[MAXP];
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wf_particles_partition_view(sp, p, &views[p]);
    if (st != WF_OK) return st;
  }
  if (!n) return WF_OK;
  bool direct = pos && !pos_off && (!vel || (vel != pos && !vel_off));
  wf_status st = gather_reserve(sp, s, n, !direct);
  if (st != WF_OK) return st;
  wf_buffer *gp = direct ? pos : sp->gather_pos.b, *gv = direct ? vel : sp->gather_vel.b;
  if ((st = wfpt_gather_enqueue(sp->gather, views, sp->np, gp, gv, n)) != WF_OK || direct)
    return st;
  if (pos) TRY(wf_copy(pos, pos_off, gp, 0, (size_t)n * 16, s), "copying the gathered state");
  if (vel) TRY(wf_copy(vel, vel_off, gv, 0, (size_t)n * 16, s), "copying the gathered state");
  return WF_OK;
}

/* copy_state over MPI ranks: positions and velocities gathered on every rank's host for this
 * call (a collective), then uploaded (pageable: the upload is done when it returns); not
 * asynchronous (the ranks' gather waits for their frames). */
static wf_status copy_ranks(wf_particles *sp, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                            size_t vel_off, wf_stream *s) {
  size_t n = sp->count ? sp->count : 1;
  wfp_f4 *x = malloc(n * 16), *v = malloc(n * 16);
  wf_status st = wfp_state_columns(sp, WFP_COL_POS | WFP_COL_VEL, -1, x, v, NULL, NULL, NULL);
  if (st == WF_OK && (!x || !v))
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': rank %d: out of host memory", sp->name,
              sp->set->rank);
  if (!s) s = wfp_part_stream(LEAD(sp));
  if (st == WF_OK && pos && sp->count && (st = wf_upload(pos, pos_off, x, n * 16, s)) != WF_OK)
    wfp_fail_gpu(sp->name, st, "copying the state");
  if (st == WF_OK && vel && sp->count && (st = wf_upload(vel, vel_off, v, n * 16, s)) != WF_OK)
    wfp_fail_gpu(sp->name, st, "copying the state");
  free(x), free(v);
  return st;
}

wf_status wf_particles_copy_state(wf_particles *sp, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                                  size_t vel_off, wf_stream *s) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1 || !sp->distributed)
    return wfp_part_copy_state(LEAD(sp), pos, pos_off, vel, vel_off, s);
  if (sp->ranks) return copy_ranks(sp, pos, pos_off, vel, vel_off, s);
  return copy_gathered(sp, pos, pos_off, vel, vel_off, s ? s : wfp_part_stream(LEAD(sp)));
}

/* ---- the cloth coupling's access (solvers/cloth/coupling.h): one partition only ------------- */

static wf_status one_partition(const wf_particles *sp, const char *what) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return WF_OK;
  return fail(WF_ERR_UNSUPPORTED,
              "particles '%s': %s: a cloth can be coupled only with particles on one device (this "
              "solver has %d partitions)",
              sp->name, what, sp->np);
}

wf_status wfp_view_get(wf_particles *sp, wfp_view *out) {
  wf_status st = one_partition(sp, "coupling");
  return st == WF_OK ? wfp_part_view_get(LEAD(sp), out) : st;
}

wf_status wfp_hook_add(wf_particles *sp, wfp_hook_fn fn, void *user) {
  wf_status st = one_partition(sp, "coupling");
  return st == WF_OK ? wfp_part_hook_add(LEAD(sp), fn, user) : st;
}

void wfp_hook_remove(wf_particles *sp, wfp_hook_fn fn, void *user) {
  if (sp && sp->np == 1) wfp_part_hook_remove(LEAD(sp), fn, user);
}
