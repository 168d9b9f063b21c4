/* Where the particles of a wf_particles over several devices go (particles_impl.h): the slabs
 * along the split axis and their cuts, the distribution of the master copy from the host, the
 * repartition on the devices, the drift flags and the rerun.
 *
 * Slabs: partition p owns the particles in [cuts[p - 1], cuts[p]) along the axis and holds as
 * ghosts everyone else's within w = contact range + skin of its slab. The cuts sit at the count
 * quantiles (or, balanced by time, at the quantiles of the measured work), from the master copy
 * at the first distribution and from the devices' histograms after; they move only when the
 * largest partition is more than desc.imbalance over the mean.
 *
 * The skin holds while no particle moves further than skin/2 along the axis from where it was at
 * the repartition (its anchor): then every particle within range of an owned one is a ghost. The
 * contact kernels raise a partition's drift flag when one does (wfp_drift_ctl); at the next
 * repartition (or download) a raised flag sends the system back to the snapshot of the last
 * repartition, which is rerun with twice the skin (rerun_if_moved).
 *
 * A repartition on the devices, between frames: the host waits for the frame, reads the drift
 * flags (a rerun first if one is raised) and each partition's counts from a classify kernel
 * (which partitions will hold each owned particle under the new slabs); that is its only wait.
 * The rest is queued: packs of what every partition sends every other (CUB select + gather),
 * copies to the receivers, a CUB radix sort by global id there into the new arrays, anchors, tags
 * and the snapshot a rerun restores, and the halo lists selected from the tags on both sides of
 * each pair. The frame's links (the partition module's) are rebuilt every time; the captured
 * frame survives it while the launch sizes and buffers stay (wfp_launch_for).
 *
 * Over MPI ranks the same phases run on each rank's own partitions: the classification's counts
 * and histograms and the last frame's extent are summed (or maximised) over the ranks, so every
 * rank plans the same cuts and moves, and the rows a partition sends to one on another rank
 * (what crosses a slab boundary and the ghosts near one, 312 bytes a particle) travel in one
 * all-to-all through the hosts (exchange_moves) and are uploaded on the receiver's stream. The
 * state itself stays on the devices: a repartition costs what migrates, not the whole state
 * round-tripping through the hosts, and its layout is the one process's with as many
 * partitions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "particle_kernels.h"
#include "particles_impl.h"
#include "solvers/partition/measure.h"
#include "solvers/partition/ranks.h"

/* How far (a share of the skin) a particle may move along the axis between repartitions: half
 * the skin, less a margin for XPBD's predicted positions (they reach h·v beyond the state). */
#define WFP_DRIFT_SHARE 0.4f

#define fail(st, ...) wf__error(st, NULL, __VA_ARGS__)

/* ---- launch sizes, links, the drift check ------------------------------------------------- */

/* The size a frame's kernels (and a link's copy) cover for n elements, given the size in use:
 * kept while it holds n and wastes at most `keep` times the slack, so the captured frame survives
 * the changes of counts from one repartition to the next (its kernels read the counts on the
 * device, wfp_live); else n plus the slack, n >> shift and 1024. 0 for none: an empty partition
 * or link has no kernels in the frame.
 *
 * Partitions take a sixteenth (shift 4; their counts move little, and a thread past the count
 * only exits); balanced by time, the slabs follow the measured work, which moves while a pile
 * settles and with the clocks' noise, and partitions take a quarter (shift 2). Both keep 2.
 * Links take as much again and keep 4 (from 2n + 1024 down to about 2n / 5): a link's ghosts are
 * the sender's particles within reach of the boundary, and where the particles lie in layers (a
 * lattice, a settling pile) that is one layer or two as the boundary moves by less than a
 * particle. With a half and 2, 4 H200s captured the frame again in most frames of a settling
 * 16M-particle column, 4 to 6 ms of host time each; with as much again and 2, still in one frame
 * of ten where a count fell from two layers to one. A link's copy covers its launch size, so the
 * slack costs copy time, which the frame hides. */
static uint32_t launch_for(uint32_t n, uint32_t cur, unsigned shift, unsigned keep) {
  if (!n) return 0;
  uint64_t slack = ((uint64_t)n >> shift) + 1024;
  if (cur >= n && cur - n <= keep * slack) return cur;
  return n + slack > UINT32_MAX ? UINT32_MAX : (uint32_t)(n + slack);
}

/* A partition about to hold m particles: sets its launch size; returns the elements (at least
 * 1) its per-particle buffers make room for, the launch size or m. */
static size_t set_launch(const wf_particles *sp, part *pt, uint32_t m) {
  pt->launch = launch_for(m, pt->launch, sp->desc.balance == WF_BALANCE_TIME ? 2 : 4, 2);
  wfp_part_set_launch(pt->ps, pt->launch);
  return pt->launch > m ? pt->launch : m ? m : 1;
}

/* Link l of the frame, for n ghosts from q to p: the module's link with one slot, the staging
 * buffers' whole launch size (positions, then velocities), and the index lists. Both keep their
 * buffers while slot l joins the same pair (the graph key then stays). */
static wf_status halo_add(wf_particles *sp, int q, int p, uint32_t n, halo **out) {
  int l = sp->set->n_links;
  if (l == sp->cap_halos) {
    int cap = sp->cap_halos ? sp->cap_halos * 2 : 8;
    halo *nh = realloc(sp->halos, (size_t)cap * sizeof *nh);
    if (!nh) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
    memset(nh + sp->cap_halos, 0, (size_t)(cap - sp->cap_halos) * sizeof *nh);
    sp->halos = nh, sp->cap_halos = cap;
  }
  halo *h = &sp->halos[l];
  if (h->from != q || h->to != p) {
    wfp_dbuf_free(&h->src_idx, wfp_part_stream(sp->parts[h->from].ps));
    wfp_dbuf_free(&h->dst_idx, wfp_part_stream(sp->parts[h->to].ps));
    h->launch = 0;
  }
  /* (over MPI ranks each rank keeps the link list of every pair, its side's buffers only) */
  h->from = q, h->to = p, h->n = n;
  h->launch = launch_for(n, h->launch, 0, 4);
  size_t m = h->launch;
  part *from = &sp->parts[q], *to = &sp->parts[p];
  wfpt_link *k = NULL;
  wf_status st = wfpt_link_add(sp->set, q, p, 1, &k);
  if (st == WF_OK) st = wfpt_link_reserve(sp->set, k, m * HALO_BYTES);
  if (st == WF_OK) st = wfpt_slot_add(sp->set, k, 0, k->recv, 0, k->send, 0, m * HALO_BYTES);
  if (st == WF_OK && from->ps)
    st = wfp_dbuf_reserve(sp, &h->src_idx, from->dev, wfp_part_stream(from->ps), (m + 1) * 4);
  if (st == WF_OK && to->ps)
    st = wfp_dbuf_reserve(sp, &h->dst_idx, to->dev, wfp_part_stream(to->ps), (m + 1) * 4);
  *out = h;
  return st;
}

/* Clears a partition's drift flag and sets the limit and the axis its frames check (they are
 * read on the device, so the captured frame follows the repartitions). */
static wf_status drift_arm(wf_particles *sp, part *pt) {
  wfp_drift_ctl c = {0u, WFP_DRIFT_SHARE * sp->skin, sp->axis, 0u};
  TRY(wf_upload(pt->flag, 0, &c, sizeof c, wfp_part_stream(pt->ps)), "arming the drift check");
  return WF_OK;
}

/* Waits for every partition; *moved: whether a particle moved further than the skin allows
 * since the last repartition (any partition's drift flag). */
static wf_status drift_flags(wf_particles *sp, bool *moved) {
  *moved = false;
  for (int p = 0; p < sp->np; p++) {
    uint32_t f = 0;
    if (!MINE(sp, p)) continue;
    TRY(wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps)), "waiting for a partition");
    TRY(wf_download(&f, sp->parts[p].flag, 0, 4), "reading the drift flag");
    if (f) *moved = true;
  }
  return sp->ranks ? wfpt_ranks_any(sp->set, moved) : WF_OK; /* every rank reruns, or none */
}

/* The partitions' slabs from the cuts. */
static void slab_bounds(wf_particles *sp) {
  for (int p = 0; p < sp->np; p++) {
    sp->parts[p].lo = p == 0 ? -INFINITY : sp->cuts[p - 1];
    sp->parts[p].hi = p == sp->np - 1 ? INFINITY : sp->cuts[p];
  }
}

/* After a repartition: the info block, the drift checks of the partitions' contact kernels. */
static void partitioned(wf_particles *sp, uint64_t bytes) {
  for (int p = 0; p < sp->np; p++) {
    sp->info.owned[p] = sp->parts[p].n_owned;
    sp->info.ghosts[p] = sp->parts[p].n_local - sp->parts[p].n_owned;
    sp->info.slab_lo[p] = sp->parts[p].lo;
    sp->info.slab_hi[p] = sp->parts[p].hi;
  }
  sp->info.axis = sp->axis;
  sp->info.skin = sp->skin;
  sp->info.halo_bytes_per_frame = bytes * (uint64_t)sp->desc.substeps;
  sp->distributed = true;
  sp->frames_since = 0;
  /* the contact kernels check the drift (wfp_drift_ctl); one partition has no boundaries */
  for (int p = 0; p < sp->np; p++)
    if (MINE(sp, p))
      wfp_part_set_drift(sp->parts[p].ps, sp->np > 1 ? wf_buffer_ptr(sp->parts[p].anchor.b) : NULL,
                         wf_buffer_ptr(sp->parts[p].flag));
}

/* ---- slabs and cuts ------------------------------------------------------------------------ */

/* k-th smallest of a[0..n) (a is reordered): quickselect with a three-way partition. */
static float select_kth(float *a, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* the k-th is in [lo, hi) */
  while (hi - lo > 1) {
    float pivot = a[lo + (hi - lo) / 2], t;
    size_t lt = lo, i = lo, gt = hi; /* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
    while (i < gt) {
      if (a[i] < pivot)
        t = a[lt], a[lt++] = a[i], a[i++] = t;
      else if (a[i] > pivot)
        t = a[--gt], a[gt] = a[i], a[i] = t;
      else
        i++;
    }
    if (k < lt)
      hi = lt;
    else if (k >= gt)
      lo = gt;
    else
      return pivot;
  }
  return a[lo];
}

static float axis_of(wfp_f4 x, int axis) { return axis == 0 ? x.x : axis == 1 ? x.y : x.z; }

static int owner_of(const wf_particles *sp, float x) {
  int p = 0;
  while (p < sp->np - 1 && x >= sp->cuts[p])
    p++;
  return p;
}

/* New slab boundaries along `axis` at the count quantiles of c[0..n) (reordered). */
static void cut_at_quantiles(wf_particles *sp, int axis, float *c, size_t n) {
  sp->axis = axis;
  for (int p = 1; p < sp->np; p++)
    sp->cuts[p - 1] = n ? select_kth(c, n, n * (size_t)p / (size_t)sp->np) : 0.0f;
  sp->have_cuts = true;
  sp->info.rebalances++;
}

/* New slab boundaries from the master copy: the longest axis of the bounds, cut at the count
 * quantiles. */
static wf_status rebalance(wf_particles *sp) {
  uint32_t n = sp->count;
  float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (uint32_t i = 0; i < n; i++) {
    float x[3] = {sp->pos[i].x, sp->pos[i].y, sp->pos[i].z};
    for (int k = 0; k < 3; k++)
      lo[k] = fminf(lo[k], x[k]), hi[k] = fmaxf(hi[k], x[k]);
  }
  int axis = 0;
  for (int k = 1; k < 3; k++)
    if (hi[k] - lo[k] > hi[axis] - lo[axis]) axis = k;
  float *c = malloc((size_t)(n ? n : 1) * sizeof *c);
  if (!c) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (uint32_t i = 0; i < n; i++)
    c[i] = axis_of(sp->pos[i], axis);
  cut_at_quantiles(sp, axis, c, n);
  free(c);
  return WF_OK;
}

/* The skin: the desc's, or three times the distance the fastest particle (vmax, plus what gravity
 * adds over the interval) covers between repartitions under gravity, at least a quarter cell;
 * times the rerun factor. */
static float skin_for(const wf_particles *sp, float vmax) {
  float skin = sp->desc.skin;
  if (skin == 0.0f) {
    float T = sp->desc.frame_dt * (float)sp->desc.repartition_frames;
    const float *g = sp->desc.gravity;
    float ga = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    /* vmax may be a repartition old: the particle may have gained g T since */
    skin = 3.0f * ((vmax + ga * T) * T + 0.5f * ga * T * T);
    if (skin < 0.25f * sp->cell) skin = 0.25f * sp->cell;
  }
  return skin * sp->skin_factor;
}

typedef struct grow_list {
  uint32_t *a;
  size_t n, cap;
} grow_list;

static bool list_push(grow_list *l, uint32_t v) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 1024;
    uint32_t *g = realloc(l->a, cap * 4);
    if (!g) return false;
    l->a = g, l->cap = cap;
  }
  l->a[l->n++] = v;
  return true;
}

/* ---- the distribution from the host ------------------------------------------------------- */

/* The largest radius and speed of n rows (the master copy's, or a rank's). */
static void size_scan(const wfp_f4 *pos, const wfp_f4 *vel, size_t stride, size_t n, float *rmax,
                      float *vmax) {
  for (size_t i = 0; i < n; i++) {
    const wfp_f4 *x = (const wfp_f4 *)((const char *)pos + i * stride);
    const wfp_f4 *v = (const wfp_f4 *)((const char *)vel + i * stride);
    *rmax = fmaxf(*rmax, x->w);
    float v2 = v->x * v->x + v->y * v->y + v->z * v->z;
    *vmax = fmaxf(*vmax, sqrtf(v2));
  }
}

/* From the largest radius and speed of every particle: the cell size (the solver's rule, twice
 * the largest radius, unless the desc fixes it) for every partition, the skin; *w the ghosts'
 * reach beyond a slab. */
static wf_status size_from(wf_particles *sp, float rmax, float vmax, float *w) {
  float cell = sp->desc.cell_size > 0.0f ? sp->desc.cell_size : 2.0f * rmax;
  if (cell != sp->cell && cell > 0.0f) {
    for (int p = 0; p < sp->np; p++) {
      if (!MINE(sp, p)) continue;
      wf_status st = wfp_cell_size_set(sp->parts[p].ps, cell);
      if (st != WF_OK) return st;
    }
    sp->cell = cell;
  }
  sp->rmax = rmax, sp->vmax = vmax;
  sp->skin = skin_for(sp, vmax);
  *w = cell + sp->skin;
  return WF_OK;
}

static wf_status size_from_master(wf_particles *sp, float *w) {
  float rmax = 0.0f, vmax = 0.0f;
  size_scan(sp->pos, sp->vel, sizeof(wfp_f4), sp->count, &rmax, &vmax);
  return size_from(sp, rmax, vmax, w);
}

/* The slabs from the master copy: cut at the count quantiles the first time, and again when the
 * largest slab holds more than the imbalance allows. */
static wf_status slabs_from_master(wf_particles *sp) {
  uint32_t n = sp->count;
  wf_status st = WF_OK;
  if (!sp->have_cuts) {
    st = rebalance(sp);
  } else {
    uint32_t cnt[MAXP] = {0}, most = 0;
    for (uint32_t i = 0; i < n; i++)
      cnt[owner_of(sp, axis_of(sp->pos[i], sp->axis))]++;
    for (int p = 0; p < sp->np; p++)
      most = cnt[p] > most ? cnt[p] : most;
    double mean = (double)n / sp->np;
    if (n && (double)most / mean - 1.0 > sp->desc.imbalance) st = rebalance(sp);
  }
  slab_bounds(sp);
  return st;
}

/* The rows a distribution places, ascending in global id: the master copy (every particle, row
 * i is global id i). */
typedef struct rows_src {
  uint32_t n;
  const wfp_f4 *pos, *vel, *omega;
  const uint16_t *mat;
  const wfp_hist *hist;
} rows_src;

/* Who holds what (assign_members), and host rows for the largest partition. */
typedef struct layout {
  grow_list members[MAXP];         /* per partition: global ids, ghosts with the top bit set */
  grow_list ghost_src[MAXP][MAXP]; /* [from][to]: global ids of the ghosts */
  uint32_t owned[MAXP];
  uint32_t *loc;     /* per particle: its local index in its owner */
  uint32_t *slot_of; /* per particle: its ghost slot in the partition filled last */
  wfp_f4 *lp, *lv, *lw;
  wfp_hist *lh;
  uint16_t *lm;
  float *la;
  uint32_t *idx, *gid;
} layout;

static void layout_free(layout *lay) {
  for (int q = 0; q < MAXP; q++) {
    free(lay->members[q].a);
    for (int p = 0; p < MAXP; p++)
      free(lay->ghost_src[q][p].a);
  }
  free(lay->loc), free(lay->slot_of), free(lay->lp), free(lay->lv), free(lay->lm);
  free(lay->la), free(lay->idx), free(lay->gid), free(lay->lw), free(lay->lh);
}

/* Membership: the rows in global-id order (so every local list is in that order), each to its
 * owner's list and, as a ghost, to those of the partitions whose slab is within w. Lists, loc and
 * slot_of hold row indices. */
static wf_status assign_members(wf_particles *sp, layout *lay, float w, const rows_src *src) {
  uint32_t n = src->n;
  lay->loc = malloc((size_t)(n ? n : 1) * 4);
  bool ok = lay->loc != NULL;
  for (uint32_t i = 0; i < n && ok; i++) {
    float x = axis_of(src->pos[i], sp->axis);
    int q = owner_of(sp, x);
    grow_list *mine = &lay->members[q];
    lay->loc[i] = (uint32_t)mine->n;
    lay->owned[q]++;
    ok = list_push(mine, i);
    for (int p = q - 1; ok && p >= 0 && x < sp->parts[p].hi + w; p--)
      ok = list_push(&lay->members[p], i | 0x80000000u) && list_push(&lay->ghost_src[q][p], i);
    for (int p = q + 1; ok && p < sp->np && x >= sp->parts[p].lo - w; p++)
      ok = list_push(&lay->members[p], i | 0x80000000u) && list_push(&lay->ghost_src[q][p], i);
  }
  size_t most = 1;
  for (int p = 0; p < sp->np; p++)
    most = lay->members[p].n > most ? lay->members[p].n : most;
  if (ok) {
    lay->slot_of = malloc((size_t)(n ? n : 1) * 4);
    lay->lp = malloc(most * sizeof *lay->lp), lay->lv = malloc(most * sizeof *lay->lv);
    lay->lm = malloc(most * sizeof *lay->lm), lay->la = malloc(most * sizeof *lay->la);
    lay->idx = malloc((most + 1) * 4), lay->gid = malloc(most * 4);
    lay->lw = malloc(most * sizeof *lay->lw), lay->lh = malloc(most * HIST_BYTES);
    ok = lay->slot_of && lay->lp && lay->lv && lay->lm && lay->la && lay->idx && lay->gid &&
         lay->lw && lay->lh;
  }
  return ok ? WF_OK : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
}

/* Partition p's particles (owned and ghosts, global-id order) with their anchors and the
 * snapshot a rerun starts from; its ghosts' slots into lay->slot_of. */
static wf_status fill_partition(wf_particles *sp, layout *lay, int p, const rows_src *src) {
  part *pt = &sp->parts[p];
  size_t m = lay->members[p].n;
  if (!pt->ps) { /* another rank's: its counts only (the info block) */
    pt->n_local = (uint32_t)m;
    pt->n_owned = lay->owned[p];
    return WF_OK;
  }
  for (size_t j = 0; j < m; j++) {
    uint32_t e = lay->members[p].a[j], g = e & 0x7fffffffu;
    bool owned = !(e & 0x80000000u);
    lay->gid[j] = g;
    if (!owned) lay->slot_of[g] = (uint32_t)j;
    lay->lp[j] = src->pos[g], lay->lv[j] = src->vel[g], lay->lm[j] = src->mat[g];
    lay->lw[j] = src->omega[g];
    memcpy(&lay->lh[j * WFP_HIST_SLOTS], &src->hist[(size_t)g * WFP_HIST_SLOTS], HIST_BYTES);
    /* ghosts get no anchor (NaN never compares as moved): their owner checks them */
    lay->la[j] = owned ? axis_of(src->pos[g], sp->axis) : NAN;
  }
  pt->n_local = (uint32_t)m;
  pt->n_owned = lay->owned[p];
  wf_stream *s = wfp_part_stream(pt->ps);
  size_t mm = set_launch(sp, pt, (uint32_t)m);
  wf_status st =
      wfp_part_replace(pt->ps, (uint32_t)m, lay->lp, lay->lv, lay->lm, lay->gid, lay->lw, lay->lh);
  if (st == WF_OK) st = wfp_dbuf_reserve(sp, &pt->anchor, pt->dev, s, mm * 4);
  if (st == WF_OK && m && (st = wf_upload(pt->anchor.b, 0, lay->la, m * 4, s)) != WF_OK)
    wfp_fail_gpu(sp->name, st, "uploading anchors");
  if (st == WF_OK) st = wfp_dbuf_reserve(sp, &pt->snap_pos, pt->dev, s, mm * 16);
  if (st == WF_OK) st = wfp_dbuf_reserve(sp, &pt->snap_vel, pt->dev, s, mm * 16);
  if (st == WF_OK) st = wfp_dbuf_reserve(sp, &pt->snap_omega, pt->dev, s, mm * 16);
  if (st == WF_OK) st = wfp_dbuf_reserve(sp, &pt->snap_hist, pt->dev, s, mm * HIST_BYTES);
  if (st == WF_OK && m && (st = wf_upload(pt->snap_pos.b, 0, lay->lp, m * 16, s)) == WF_OK &&
      (st = wf_upload(pt->snap_vel.b, 0, lay->lv, m * 16, s)) == WF_OK &&
      (st = wf_upload(pt->snap_omega.b, 0, lay->lw, m * 16, s)) == WF_OK)
    st = wf_upload(pt->snap_hist.b, 0, lay->lh, m * HIST_BYTES, s);
  return st;
}

/* The links into p (after fill_partition(p): its ghost slots) with their index lists, counts
 * first; their bytes per substep added to *bytes. */
static wf_status fill_links_into(wf_particles *sp, layout *lay, int p, uint64_t *bytes) {
  wf_status st = WF_OK;
  for (int q = 0; q < sp->np && st == WF_OK; q++) {
    grow_list *gs = &lay->ghost_src[q][p];
    size_t c = gs->n;
    if (!c) continue;
    halo *h = NULL;
    if ((st = halo_add(sp, q, p, (uint32_t)c, &h)) != WF_OK) break;
    uint32_t *idx = lay->idx;
    idx[0] = (uint32_t)c;
    for (size_t j = 0; j < c && MINE(sp, q); j++)
      idx[1 + j] = lay->loc[gs->a[j]];
    if (MINE(sp, q) && (st = wf_upload(h->src_idx.b, 0, idx, (c + 1) * 4,
                                       wfp_part_stream(sp->parts[q].ps))) != WF_OK)
      break;
    for (size_t j = 0; j < c && MINE(sp, p); j++)
      idx[1 + j] = lay->slot_of[gs->a[j]];
    if (MINE(sp, p))
      st = wf_upload(h->dst_idx.b, 0, idx, (c + 1) * 4, wfp_part_stream(sp->parts[p].ps));
    *bytes += (uint64_t)c * HALO_BYTES;
  }
  return st;
}

/* Places the rows over the partitions (the slabs and w set): owners by slab, ghosts within w of
 * each slab, the links and their index lists. Over MPI ranks every rank holds the rows (the
 * master copy of the first distribution) and fills its own partitions. */
static wf_status place(wf_particles *sp, const rows_src *src, float w) {
  layout *lay = calloc(1, sizeof *lay);
  wf_status st =
      lay ? WF_OK : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  if (st == WF_OK) st = assign_members(sp, lay, w, src);
  wfpt_links_clear(sp->set);
  uint64_t bytes = 0;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    st = fill_partition(sp, lay, p, src);
    if (st == WF_OK && MINE(sp, p)) st = drift_arm(sp, &sp->parts[p]);
    if (st == WF_OK) st = fill_links_into(sp, lay, p, &bytes);
  }
  if (lay) layout_free(lay);
  free(lay);
  if (st != WF_OK) return st;
  for (int p = 0; p < sp->np; p++)
    if (MINE(sp, p))
      TRY(wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps)), "uploading halo lists");
  partitioned(sp, bytes);
  return WF_OK;
}

/* Distributes the master state (sp->pos/vel/mat, global-id order) over the partitions. */
static wf_status distribute(wf_particles *sp) {
  float w = 0.0f;
  wf_status st = size_from_master(sp, &w);
  if (st == WF_OK) st = slabs_from_master(sp);
  if (st != WF_OK) return st;
  rows_src m = {sp->count, sp->pos, sp->vel, sp->omega, sp->mat, sp->hist};
  return place(sp, &m, w);
}

/* Every partition back to the snapshot of the last repartition, state and clock; the layout,
 * anchors and links are still that repartition's. */
wf_status wfp_restore(wf_particles *sp) {
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    if (!pt->ps) continue;
    wf_stream *s = wfp_part_stream(pt->ps);
    wf_buffer *pos, *vel, *omega, *hist;
    TRY(wfp_part_state_buffers(pt->ps, &pos, &vel, NULL), "finding the state buffers");
    TRY(wfp_part_granular_buffers(pt->ps, &omega, &hist), "finding the state buffers");
    size_t m = pt->n_local;
    if (m) TRY(wf_copy(pos, 0, pt->snap_pos.b, 0, m * 16, s), "restoring the snapshot");
    if (m) TRY(wf_copy(vel, 0, pt->snap_vel.b, 0, m * 16, s), "restoring the snapshot");
    if (m) TRY(wf_copy(omega, 0, pt->snap_omega.b, 0, m * 16, s), "restoring the snapshot");
    if (m) TRY(wf_copy(hist, 0, pt->snap_hist.b, 0, m * HIST_BYTES, s), "restoring the snapshot");
    wf_status st = wfp_clock_set(pt->ps, sp->snap_time, sp->snap_substeps);
    if (st != WF_OK) return st;
    if ((st = drift_arm(sp, pt)) != WF_OK) return st;
  }
  sp->frames_since = 0;
  return WF_OK;
}

/* ---- the repartition on the devices ------------------------------------------------------- */

static wfp_slabs slabs_of(const wf_particles *sp) {
  wfp_slabs sl;
  memset(&sl, 0, sizeof sl);
  for (int p = 0; p + 1 < sp->np; p++)
    sl.cuts[p] = sp->cuts[p];
  sl.w = sp->cell + sp->skin;
  sl.np = sp->np;
  sl.axis = sp->axis;
  return sl;
}

/* The union of the partitions' cell extents over the last frame (once they were waited for). */
static bool extent_union(const wf_particles *sp, int32_t lo[3], int32_t hi[3]) {
  bool any = false;
  for (int k = 0; k < 3; k++)
    lo[k] = INT32_MAX, hi[k] = INT32_MIN;
  for (int p = 0; p < sp->np; p++) {
    int32_t l[3], h[3];
    if (!MINE(sp, p) || !wfp_extent_get(sp->parts[p].ps, l, h)) continue;
    any = true;
    for (int k = 0; k < 3; k++)
      lo[k] = l[k] < lo[k] ? l[k] : lo[k], hi[k] = h[k] > hi[k] ? h[k] : hi[k];
  }
  if (!sp->ranks) return any;
  /* over MPI ranks the union of every rank's (each calls this at the same point of the
   * repartition); a failed maximum gives none, on every rank, as the failure is agreed */
  double mx[7] = {any ? 1.0 : 0.0, -(double)lo[0], -(double)lo[1], -(double)lo[2],
                  (double)hi[0],   (double)hi[1],  (double)hi[2]};
  if (wfpt_ranks_max_f64(sp->set, mx, 7) != WF_OK) return false;
  for (int k = 0; k < 3; k++)
    lo[k] = (int32_t)-mx[1 + k], hi[k] = (int32_t)mx[4 + k];
  return mx[0] > 0.0;
}

static size_t counts_len(int np) { return (size_t)np * (size_t)np + 1 + WFP_HIST_BINS; }

/* Over MPI ranks: words [at, at + n) of every partition's block of counts_len words, each given
 * by the rank that holds the partition (the others' are zeros), summed over the ranks. */
static wf_status ranks_sum_blocks(wf_particles *sp, uint32_t *counts, size_t at, size_t n) {
  if (!sp->ranks) return WF_OK;
  size_t len = counts_len(sp->np), total = (size_t)sp->np * n;
  uint64_t *w = malloc(total * sizeof *w);
  if (!w) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (int p = 0; p < sp->np; p++)
    for (size_t i = 0; i < n; i++)
      w[(size_t)p * n + i] = counts[(size_t)p * len + at + i];
  wf_status st = wfpt_ranks_sum_u64(sp->set, w, (int)total);
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    for (size_t i = 0; i < n; i++)
      counts[(size_t)p * len + at + i] = (uint32_t)w[(size_t)p * n + i];
  free(w);
  return st;
}

/* Classifies every partition's owned particles for the slabs `sl` (tags on the devices) and
 * returns the counts: counts[q * counts_len + o * np + d] = particles q owns now that o will own
 * and d will hold; counts[q * counts_len + np * np] = the largest speed in q (float bits). With
 * `hist` the devices also count q's owned particles in WFP_HIST_BINS bins of their coordinate
 * along the slab axis (from hist_lo, hist_scale bins per metre; else zeros), which
 * read_histograms puts from counts[q * counts_len + np * np + 1]. */
static wf_status classify_all(wf_particles *sp, const wfp_slabs *sl, uint32_t *counts, bool hist,
                              float hist_lo, float hist_scale) {
  int np = sp->np;
  size_t len = counts_len(np);
  for (int p = 0; p < np; p++) {
    part *pt = &sp->parts[p];
    if (!MINE(sp, p)) continue;
    wf_stream *s = wfp_part_stream(pt->ps);
    wf_status st;
    if ((st = wfp_dbuf_reserve(sp, &pt->counts, pt->dev, s, len * 4)) != WF_OK ||
        (st = wfp_dbuf_reserve(sp, &pt->tag, pt->dev, s, ((size_t)pt->n_local + 1) * 4)) != WF_OK)
      return st;
    TRY(wf_memset(pt->counts.b, 0, 0, len * 4, s), "clearing the counts");
    if (!pt->n_local) continue;
    wfp_arrays a = wfp_part_arrays(pt->ps);
    uint32_t *cb = wf_buffer_ptr(pt->counts.b);
    wfp_classify_args ca = {*sl,
                            a.pos,
                            a.vel,
                            wf_buffer_ptr(pt->anchor.b),
                            wf_buffer_ptr(pt->tag.b),
                            cb,
                            hist ? cb + (size_t)np * np + 1 : NULL,
                            hist_lo,
                            hist_scale};
    TRY(wf_launch(&wfp_classify, pt->n_local, &ca, sizeof ca, s), "launching the classification");
    TRY(wfp_part_touch(pt->ps), "ordering the particle arrays");
    TRY(wf_buffer_touch(pt->counts.b, s), "ordering the counts");
  }
  /* the histograms stay on the devices until a rebalance reads them (read_histograms) */
  size_t head = (size_t)np * np + 1;
  for (int p = 0; p < np; p++) {
    if (!MINE(sp, p)) { /* another rank's: its words come with the sum below */
      memset(counts + (size_t)p * len, 0, head * 4);
      continue;
    }
    TRY(wf_download(counts + (size_t)p * len, sp->parts[p].counts.b, 0, head * 4),
        "reading the counts");
  }
  return ranks_sum_blocks(sp, counts, 0, head);
}

/* The classification's histogram range along the slab axis: the last frame's extent (cells,
 * inclusive), WFP_HIST_BINS bins over it. False when there is none. */
static bool hist_range(const wf_particles *sp, float *lo, float *scale) {
  int32_t clo[3], chi[3];
  if (!extent_union(sp, clo, chi) || !(sp->cell > 0.0f)) return false;
  int a = sp->axis;
  *lo = (float)clo[a] * sp->cell;
  *scale = (float)WFP_HIST_BINS / ((float)((int64_t)chi[a] - clo[a] + 1) * sp->cell);
  return isfinite(*lo) && isfinite(*scale) && *scale > 0.0f;
}

/* Completes cnt (as classify_all returned it, the frames waited for) with every partition's
 * histogram. */
static wf_status read_histograms(wf_particles *sp, uint32_t *cnt) {
  size_t len = counts_len(sp->np), head = (size_t)sp->np * sp->np + 1;
  for (int p = 0; p < sp->np; p++) {
    if (!MINE(sp, p)) {
      memset(cnt + (size_t)p * len + head, 0, (size_t)WFP_HIST_BINS * 4);
      continue;
    }
    TRY(wf_download(cnt + (size_t)p * len + head, sp->parts[p].counts.b, head * 4,
                    (size_t)WFP_HIST_BINS * 4),
        "reading the histograms");
  }
  return ranks_sum_blocks(sp, cnt, head, WFP_HIST_BINS);
}

/* New slab boundaries along the current axis at the quantiles of the classification's
 * histograms (cnt as classify_all returns it), partition q's particles weighing cost[q] each
 * (NULL: 1), interpolated within a bin as if its weight were spread evenly. False (nothing
 * changed) when the histograms are empty. */
static bool cut_at_histogram(wf_particles *sp, const uint32_t *cnt, const double *cost, float lo,
                             float scale) {
  int np = sp->np;
  size_t len = counts_len(np);
  double *h = malloc(WFP_HIST_BINS * sizeof *h), total = 0.0;
  if (!h) return false; /* the other way needs far more memory */
  for (int b = 0; b < WFP_HIST_BINS; b++) {
    h[b] = 0.0;
    for (int q = 0; q < np; q++)
      h[b] += (cost ? cost[q] : 1.0) * cnt[(size_t)q * len + (size_t)np * np + 1 + (size_t)b];
    total += h[b];
  }
  if (!(total > 0.0)) {
    free(h);
    return false;
  }
  double cum = 0.0; /* the weight in bins [0, b) */
  int b = 0;
  for (int p = 1; p < np; p++) {
    double t = total * p / np;
    while (b < WFP_HIST_BINS - 1 && cum + h[b] < t)
      cum += h[b++];
    double f = h[b] > 0.0 ? (t - cum) / h[b] : 0.0;
    f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
    sp->cuts[p - 1] = lo + (float)(((double)b + f) / scale);
  }
  free(h);
  sp->have_cuts = true;
  sp->info.rebalances++;
  return true;
}

/* New slab boundaries from the devices: the longest axis of the last frame's extent (the current
 * one unless another is a quarter longer). On the current axis, from the classification's
 * histograms (cnt; NULL: none), a download of 16 KB per partition; else cut at the quantiles of the
 * owned particles' coordinates (their anchors when the axis stays), read from the devices. */
static wf_status rebalance_device(wf_particles *sp, uint32_t *cnt, const double *cost,
                                  float hist_lo, float hist_scale) {
  int32_t lo[3], hi[3];
  int axis = sp->axis;
  if (extent_union(sp, lo, hi)) { /* a new axis only when clearly longer: it costs a download */
    int64_t len = (int64_t)hi[axis] - lo[axis] + 1;
    for (int k = 0; k < 3; k++)
      if (4 * ((int64_t)hi[k] - lo[k] + 1) > 5 * len) axis = k, len = (int64_t)hi[k] - lo[k] + 1;
  }
  if (axis == sp->axis && cnt) {
    wf_status st = read_histograms(sp, cnt);
    if (st != WF_OK) return st;
    if (cut_at_histogram(sp, cnt, cost, hist_lo, hist_scale)) return WF_OK;
  }
  size_t total = 0, most = 1;
  for (int p = 0; p < sp->np; p++) {
    total += sp->parts[p].n_owned;
    most = sp->parts[p].n_local > most ? sp->parts[p].n_local : most;
  }
  float *c = malloc((total ? total : 1) * sizeof *c), *la = malloc(most * sizeof *la);
  wfp_f4 *lp = axis != sp->axis ? malloc(most * sizeof *lp) : NULL;
  wf_status st = c && la && (axis == sp->axis || lp)
                     ? WF_OK
                     : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  size_t k = 0;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    if (!pt->n_local || !MINE(sp, p)) continue;
    if (lp && (st = wfp_part_get(pt->ps, lp, NULL, NULL, NULL)) != WF_OK) break;
    if ((st = wf_download(la, pt->anchor.b, 0, (size_t)pt->n_local * 4)) != WF_OK) {
      wfp_fail_gpu(sp->name, st, "reading the anchors");
      break;
    }
    for (uint32_t i = 0; i < pt->n_local && k < total; i++)
      if (la[i] == la[i]) c[k++] = lp ? axis_of(lp[i], axis) : la[i];
  }
  if (sp->ranks) { /* every rank's coordinates (the k-th smallest does not depend on the order) */
    void *all = NULL;
    size_t bytes = 0;
    wf_status st2 = wfpt_ranks_allgather(sp->set, c, st == WF_OK ? k * sizeof *c : 0, &all, &bytes);
    if (st == WF_OK) st = st2;
    free(c);
    c = all, k = bytes / sizeof *c;
  }
  if (st == WF_OK) cut_at_quantiles(sp, axis, c, k);
  free(c), free(la), free(lp);
  return st;
}
/* WF_BALANCE_TIME, after the frames were waited for: each partition's compute in the last frame
 * (the sum of its substeps between the stamps, less the waits for ghosts, into info.compute_ms)
 * and its time per owned particle (cost). *timed false when no frame was timed since the last
 * repartition or a time is not usable. */
static wf_status frame_costs(wf_particles *sp, double *cost, bool *timed) {
  const size_t K = (size_t)sp->desc.substeps, n = (size_t)sp->np * K;
  *timed = false;
  if (sp->frames_since <= 0) return WF_OK;
  double *dt = malloc(2 * n * sizeof *dt); /* before, then after */
  if (!dt) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  bool ok = false;
  wf_status st = wfp_stamped_times(sp, dt, dt + n, &ok);
  double sum = 0.0;
  uint64_t owned = 0;
  for (int p = 0; p < sp->np && ok; p++) {
    double ms = 0.0;
    for (size_t k = 0; k < K; k++)
      ms += dt[p * K + k] + dt[n + p * K + k];
    sp->info.compute_ms[p] = ms;
    sum += ms, owned += sp->parts[p].n_owned;
  }
  free(dt);
  if (st != WF_OK || !ok || !(sum > 0.0) || !owned) return st;
  /* an empty partition's particles would cost what the average one does */
  double mean = sum / (double)owned;
  for (int p = 0; p < sp->np; p++)
    cost[p] = sp->parts[p].n_owned ? sp->info.compute_ms[p] / sp->parts[p].n_owned : mean;
  *timed = true;
  return WF_OK;
}

static int key_bits(uint32_t n) {
  int b = 1;
  while (b < 31 && (1u << b) < n)
    b++;
  return b;
}

wf_status wfp_select_local(wf_particles *sp, part *pt, uint32_t bit, dbuf *out, bool counted) {
  wf_stream *s = wfp_part_stream(pt->ps);
  uint32_t n = pt->n_local;
  size_t tb = (wfp_select_temp_bytes(pt->dev, n) + 15) / 16 * 16; /* the count after it, aligned */
  wf_status st = wfp_dbuf_reserve(sp, &pt->select_temp, pt->dev, s, tb + 16);
  if (st != WF_OK) return st;
  uint32_t *count = (uint32_t *)((char *)wf_buffer_ptr(pt->select_temp.b) + tb);
  uint32_t *idx = wf_buffer_ptr(out->b);
  wfp_select_args a = {.tag = bit ? wf_buffer_ptr(pt->tag.b) : NULL,
                       .bit = bit,
                       .anchor = bit ? NULL : wf_buffer_ptr(pt->anchor.b),
                       .out = counted ? idx + 1 : idx,
                       .count = counted ? idx : count,
                       .n = n,
                       .temp = tb ? wf_buffer_ptr(pt->select_temp.b) : NULL,
                       .temp_bytes = tb};
  TRY(wf_launch(&wfp_select, 1, &a, sizeof a, s), "launching a selection");
  TRY(wf_buffer_touch(out->b, s), "ordering a selection");
  return WF_OK;
}

/* What a repartition on the devices moves, from the classification's counts. */
typedef struct migration {
  size_t len;    /* counts_len(np) */
  uint32_t *cnt; /* np blocks of len words (classify_all) */
  uint32_t owned[MAXP];
  uint32_t sends[MAXP][MAXP]; /* [q][d]: what q sends d (itself included) */
  uint32_t received[MAXP];    /* the sum over q */
} migration;

/* Phase 1, the slabs: each partition classifies its owned particles by the current slabs (the
 * host's one wait); when the largest partition (by count, or by its compute in the last frame
 * with WF_BALANCE_TIME) is out of balance, new cuts, classified again. */
static wf_status plan_slabs(wf_particles *sp, migration *mg) {
  int np = sp->np;
  size_t len = mg->len;
  double cost[MAXP];
  bool timed = false;
  float hist_lo = 0.0f, hist_scale = 0.0f;
  bool hist = hist_range(sp, &hist_lo, &hist_scale);
  for (bool rebalanced = false;;) {
    wfp_slabs sl = slabs_of(sp);
    /* the histograms only where they may be used: not after a rebalance */
    wf_status st = classify_all(sp, &sl, mg->cnt, hist && !rebalanced, hist_lo, hist_scale);
    if (st != WF_OK) return st;
    uint32_t most = 0;
    for (int o = 0; o < np; o++) {
      mg->owned[o] = 0;
      for (int q = 0; q < np; q++)
        mg->owned[o] += mg->cnt[(size_t)q * len + (size_t)o * np + o];
      most = mg->owned[o] > most ? mg->owned[o] : most;
    }
    double mean = (double)sp->count / np;
    /* balance by time: the partitions' compute in the last frame, read once the classification
     * (after the frame) was waited for */
    if (!rebalanced && wfp_stamping(sp) && (st = frame_costs(sp, cost, &timed)) != WF_OK) return st;
    double over = (double)most / mean - 1.0;
    if (timed) {
      double tmax = 0.0, tsum = 0.0;
      for (int p = 0; p < np; p++)
        tmax = fmax(tmax, sp->info.compute_ms[p]), tsum += sp->info.compute_ms[p];
      over = tmax * np / tsum - 1.0;
    }
    if (rebalanced || !sp->count || over <= sp->desc.imbalance) return WF_OK;
    st = rebalance_device(sp, hist ? mg->cnt : NULL, timed ? cost : NULL, hist_lo, hist_scale);
    if (st != WF_OK) return st;
    rebalanced = true;
  }
}

/* Phase 2, from the counts: what every pair sends, the slabs' bounds, the largest speed. */
static void plan_moves(wf_particles *sp, migration *mg) {
  int np = sp->np;
  size_t len = mg->len;
  sp->vmax = 0.0f;
  for (int q = 0; q < np; q++) {
    float v;
    memcpy(&v, &mg->cnt[(size_t)q * len + (size_t)np * np], 4);
    sp->vmax = v > sp->vmax ? v : sp->vmax;
  }
  slab_bounds(sp);
  memset(mg->received, 0, sizeof mg->received);
  for (int q = 0; q < np; q++)
    for (int d = 0; d < np; d++) {
      uint32_t n = 0;
      for (int o = 0; o < np; o++)
        n += mg->cnt[(size_t)q * len + (size_t)o * np + d];
      mg->sends[q][d] = n;
      mg->received[d] += n;
    }
}

/* A migrating particle's fields, in outboxes, inboxes and messages between ranks: position,
 * velocity, global id, material, angular velocity, contact history; their bytes. */
enum { MOVE_FIELDS = 6 };
static const size_t move_size[MOVE_FIELDS] = {16, 16, 4, 2, 16, HIST_BYTES};
#define MOVE_BYTES (16 + 16 + 4 + 2 + 16 + HIST_BYTES)

static void outbox_fields(outbox *o, dbuf *f[MOVE_FIELDS]) {
  f[0] = &o->pos, f[1] = &o->vel, f[2] = &o->gid, f[3] = &o->mat, f[4] = &o->omega, f[5] = &o->hist;
}

static void inbox_fields(part *pt, dbuf *f[MOVE_FIELDS]) {
  f[0] = &pt->in_pos, f[1] = &pt->in_vel, f[2] = &pt->in_gid, f[3] = &pt->in_mat,
  f[4] = &pt->in_omega, f[5] = &pt->in_hist;
}

/* Phase 3, on the senders: each partition packs what every partition (itself included) will
 * hold of its particles into its outboxes. */
static wf_status pack_moves(wf_particles *sp, const migration *mg) {
  wf_status st = WF_OK;
  for (int q = 0; q < sp->np && st == WF_OK; q++) {
    part *pt = &sp->parts[q];
    if (!MINE(sp, q)) continue; /* (over MPI ranks: another rank's packs) */
    wf_stream *s = wfp_part_stream(pt->ps);
    wfp_arrays a = wfp_part_arrays(pt->ps);
    for (int d = 0; d < sp->np && st == WF_OK; d++) {
      uint32_t n = mg->sends[q][d];
      if (!n) continue;
      outbox *o = &pt->out[d];
      if ((st = wfp_dbuf_reserve(sp, &o->idx, pt->dev, s, (size_t)n * 4)) != WF_OK ||
          (st = wfp_dbuf_reserve(sp, &o->pos, pt->dev, s, (size_t)n * 16)) != WF_OK ||
          (st = wfp_dbuf_reserve(sp, &o->vel, pt->dev, s, (size_t)n * 16)) != WF_OK ||
          (st = wfp_dbuf_reserve(sp, &o->gid, pt->dev, s, (size_t)n * 4)) != WF_OK ||
          (st = wfp_dbuf_reserve(sp, &o->mat, pt->dev, s, (size_t)n * 2)) != WF_OK ||
          (st = wfp_dbuf_reserve(sp, &o->omega, pt->dev, s, (size_t)n * 16)) != WF_OK ||
          (st = wfp_dbuf_reserve(sp, &o->hist, pt->dev, s, (size_t)n * HIST_BYTES)) != WF_OK ||
          (st = wfp_select_local(sp, pt, 1u << d, &o->idx, false)) != WF_OK)
        break;
      wfp_migrate_pack_args pa = {wf_buffer_ptr(o->idx.b),
                                  a.pos,
                                  a.vel,
                                  a.gid,
                                  a.mat,
                                  wf_buffer_ptr(o->pos.b),
                                  wf_buffer_ptr(o->vel.b),
                                  wf_buffer_ptr(o->gid.b),
                                  wf_buffer_ptr(o->mat.b),
                                  a.omega,
                                  a.hist,
                                  wf_buffer_ptr(o->omega.b),
                                  wf_buffer_ptr(o->hist.b)};
      if ((st = wf_launch(&wfp_migrate_pack, n, &pa, sizeof pa, s)) != WF_OK) {
        wfp_fail_gpu(sp->name, st, "launching a migration pack");
        break;
      }
      dbuf *bufs[MOVE_FIELDS];
      outbox_fields(o, bufs);
      for (int b = 0; b < MOVE_FIELDS && st == WF_OK; b++)
        if ((st = wf_buffer_touch(bufs[b]->b, s)) != WF_OK) wfp_fail_gpu(sp->name, st, "ordering");
    }
    /* the packs read the arrays a resize or a released graph may free on another stream */
    if (st == WF_OK && (st = wfp_part_touch(pt->ps)) != WF_OK)
      wfp_fail_gpu(sp->name, st, "ordering the particle arrays");
  }
  return st;
}

/* Over MPI ranks, the outboxes of pairs q -> d on different ranks travel through the hosts: one
 * all-to-all of every such pair's rows, by receiving rank, then by d, then by q (both sides list
 * the pairs in that order from the agreed counts), each pair's six arrays one after the other.
 * *in: what this rank received (free it), in the same order. */
static wf_status exchange_moves(wf_particles *sp, const migration *mg, void **in) {
  int np = sp->np, ranks = sp->set->ranks;
  size_t *bytes = calloc((size_t)ranks, sizeof *bytes), total = 0;
  if (!bytes) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (int d = 0; d < np; d++)
    for (int q = 0; q < np; q++)
      if (MINE(sp, q) && !MINE(sp, d))
        bytes[sp->set->rank_of[d]] += (size_t)mg->sends[q][d] * MOVE_BYTES;
  for (int r = 0; r < ranks; r++)
    total += bytes[r];
  char *out = malloc(total ? total : 1);
  wf_status st =
      out ? WF_OK : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (int q = 0; q < np && st == WF_OK; q++) /* the packs are done */
    if (MINE(sp, q) && (st = wf_stream_synchronize(wfp_part_stream(sp->parts[q].ps))) != WF_OK)
      wfp_fail_gpu(sp->name, st, "waiting for a migration pack");
  size_t at = 0;
  for (int r = 0; r < ranks && st == WF_OK; r++)
    for (int d = 0; d < np && st == WF_OK; d++) {
      if (sp->set->rank_of[d] != r || MINE(sp, d)) continue;
      for (int q = 0; q < np && st == WF_OK; q++) {
        size_t n = MINE(sp, q) ? mg->sends[q][d] : 0;
        if (!n) continue;
        dbuf *f[MOVE_FIELDS];
        outbox_fields(&sp->parts[q].out[d], f);
        for (int k = 0; k < MOVE_FIELDS && st == WF_OK; k++) {
          if ((st = wf_download(out + at, f[k]->b, 0, n * move_size[k])) != WF_OK)
            wfp_fail_gpu(sp->name, st, "reading migrating particles");
          at += n * move_size[k];
        }
      }
    }
  size_t got = 0;
  wf_status st2 = wfpt_ranks_alltoallv(sp->set, out, bytes, in, &got); /* (every rank enters) */
  if (st == WF_OK) st = st2;
  free(out), free(bytes);
  return st;
}

/* Phase 4, the sends: every receiver gets its senders' outboxes one after the other, by sender,
 * on the senders' copy streams (over MPI ranks, another rank's from the exchange, uploaded on the
 * receiver's stream). */
static wf_status send_moves(wf_particles *sp, const migration *mg) {
  char *in = NULL;
  wf_status st = sp->ranks ? exchange_moves(sp, mg, (void **)&in) : WF_OK;
  /* where each pair from another rank starts in `in`: by sending rank, then d, then q */
  size_t from[MAXP][MAXP], at = 0;
  for (int r = 0; r < (sp->ranks ? sp->set->ranks : 0); r++)
    for (int d = 0; d < sp->np; d++)
      for (int q = 0; q < sp->np; q++)
        if (MINE(sp, d) && sp->set->rank_of[q] == r && !MINE(sp, q))
          from[q][d] = at, at += (size_t)mg->sends[q][d] * MOVE_BYTES;
  for (int d = 0; d < sp->np && st == WF_OK; d++) {
    part *pt = &sp->parts[d];
    if (!MINE(sp, d)) continue;
    wf_stream *s = wfp_part_stream(pt->ps);
    dbuf *dst[MOVE_FIELDS];
    inbox_fields(pt, dst);
    size_t m = mg->received[d] ? mg->received[d] : 1;
    for (int k = 0; k < MOVE_FIELDS && st == WF_OK; k++)
      st = wfp_dbuf_reserve(sp, dst[k], pt->dev, s, m * move_size[k]);
    size_t to = 0; /* sender q's rows at `to` in d's inbox, by sender */
    for (int q = 0; q < sp->np && st == WF_OK; to += mg->sends[q][d], q++) {
      size_t n = mg->sends[q][d];
      if (!n) continue;
      if (MINE(sp, q)) { /* on the sender's copy stream */
        dbuf *src[MOVE_FIELDS];
        outbox_fields(&sp->parts[q].out[d], src);
        for (int k = 0; k < MOVE_FIELDS && st == WF_OK; k++)
          if ((st = wf_copy(dst[k]->b, to * move_size[k], src[k]->b, 0, n * move_size[k],
                            sp->set->part[q].copy)) != WF_OK)
            wfp_fail_gpu(sp->name, st, "sending migrating particles");
      } else { /* another rank's, from the exchange (wf_upload is done with `in` on return) */
        size_t f = from[q][d];
        for (int k = 0; k < MOVE_FIELDS && st == WF_OK; f += n * move_size[k], k++)
          if ((st = wf_upload(dst[k]->b, to * move_size[k], in + f, n * move_size[k], s)) != WF_OK)
            wfp_fail_gpu(sp->name, st, "receiving migrating particles");
      }
    }
  }
  free(in);
  return st;
}

/* The grid's box of partition pt after the repartition: the last frame's extent (glo..ghi, when
 * have_extent), along the axis only the slab and its ghosts; else empty (the box stays). */
static void grid_box(const wf_particles *sp, const part *pt, bool have_extent, const int32_t *glo,
                     const int32_t *ghi, float w, int32_t lo[3], int32_t hi[3]) {
  for (int k = 0; k < 3; k++)
    lo[k] = have_extent ? glo[k] : 1, hi[k] = have_extent ? ghi[k] : 0;
  if (!have_extent) return;
  int bad = 0, a = sp->axis;
  float inv = 1.0f / sp->cell;
  if (isfinite(pt->lo)) {
    int32_t c = wfp_cell_coord(pt->lo - w, inv, &bad);
    lo[a] = c > lo[a] ? c : lo[a];
  }
  if (isfinite(pt->hi)) {
    int32_t c = wfp_cell_coord(pt->hi + w, inv, &bad);
    hi[a] = c < hi[a] ? c : hi[a];
  }
  if (lo[a] > hi[a]) lo[a] = hi[a] = glo[a];
}

/* Receiver d's new arrays, after its senders' copies: room for what it receives, then the
 * received particles sorted by global id (keys, CUB radix sort, migrate) into its arrays,
 * snapshot, anchors and tags. */
static wf_status receive_one(wf_particles *sp, int d, const migration *mg, const wfp_slabs *sl,
                             int bits, const int32_t lo[3], const int32_t hi[3]) {
  part *pt = &sp->parts[d];
  wf_stream *s = wfp_part_stream(pt->ps);
  for (int q = 0; q < sp->np; q++) /* (another rank's were uploaded on s) */
    if (mg->sends[q][d] && MINE(sp, q))
      TRY(wf_stream_wait_stream(s, sp->set->part[q].copy), "waiting for migrating particles");
  uint32_t m = mg->received[d];
  size_t mm = set_launch(sp, pt, m);
  size_t tb = wfp_sort_temp_bytes(pt->dev, m, bits);
  wf_status st;
  if ((st = wfp_part_resize(pt->ps, m, sp->rmax, lo, hi)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->keys, pt->dev, s, mm * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->vals, pt->dev, s, mm * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->keys_out, pt->dev, s, mm * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->vals_out, pt->dev, s, mm * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->sort_temp, pt->dev, s, tb)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->anchor, pt->dev, s, mm * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->tag, pt->dev, s, mm * 4)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->snap_pos, pt->dev, s, mm * 16)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->snap_vel, pt->dev, s, mm * 16)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->snap_omega, pt->dev, s, mm * 16)) != WF_OK ||
      (st = wfp_dbuf_reserve(sp, &pt->snap_hist, pt->dev, s, mm * HIST_BYTES)) != WF_OK)
    return st;
  pt->n_local = m;
  pt->n_owned = mg->owned[d];
  if (!m) return WF_OK;
  wfp_migrate_keys_args ka = {wf_buffer_ptr(pt->in_gid.b), wf_buffer_ptr(pt->keys.b),
                              wf_buffer_ptr(pt->vals.b)};
  wfp_sort_args sa = {wf_buffer_ptr(pt->keys.b),
                      wf_buffer_ptr(pt->vals.b),
                      wf_buffer_ptr(pt->keys_out.b),
                      wf_buffer_ptr(pt->vals_out.b),
                      m,
                      bits,
                      tb ? wf_buffer_ptr(pt->sort_temp.b) : NULL,
                      tb};
  wfp_arrays a = wfp_part_arrays(pt->ps);
  wfp_migrate_args ma = {*sl,
                         d,
                         wf_buffer_ptr(pt->vals_out.b),
                         wf_buffer_ptr(pt->in_pos.b),
                         wf_buffer_ptr(pt->in_vel.b),
                         wf_buffer_ptr(pt->in_gid.b),
                         wf_buffer_ptr(pt->in_mat.b),
                         a.pos,
                         a.vel,
                         wf_buffer_ptr(pt->snap_pos.b),
                         wf_buffer_ptr(pt->snap_vel.b),
                         a.gid,
                         a.mat,
                         wf_buffer_ptr(pt->anchor.b),
                         wf_buffer_ptr(pt->tag.b),
                         wf_buffer_ptr(pt->in_omega.b),
                         wf_buffer_ptr(pt->in_hist.b),
                         a.omega,
                         wf_buffer_ptr(pt->snap_omega.b),
                         a.hist,
                         wf_buffer_ptr(pt->snap_hist.b)};
  TRY(wf_launch(&wfp_migrate_keys, m, &ka, sizeof ka, s), "launching the migration");
  TRY(wf_launch(&wfp_sort, 1, &sa, sizeof sa, s), "launching the migration");
  TRY(wf_launch(&wfp_migrate, m, &ma, sizeof ma, s), "launching the migration");
  TRY(wfp_part_touch(pt->ps), "ordering the particle arrays");
  return WF_OK;
}

/* Phase 5, on the receivers: each sorts what it got into its new arrays (receive_one). */
static wf_status receive_moves(wf_particles *sp, const migration *mg) {
  wfp_slabs sl = slabs_of(sp);
  int32_t glo[3], ghi[3];
  bool have_extent = extent_union(sp, glo, ghi);
  int bits = key_bits(sp->count);
  for (int d = 0; d < sp->np; d++) {
    int32_t lo[3], hi[3];
    if (!MINE(sp, d)) { /* another rank's: its counts only (the info block) */
      sp->parts[d].n_local = mg->received[d], sp->parts[d].n_owned = mg->owned[d];
      continue;
    }
    grid_box(sp, &sp->parts[d], have_extent, glo, ghi, sl.w, lo, hi);
    wf_status st = receive_one(sp, d, mg, &sl, bits, lo, hi);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* Phase 6, the frame's links: r -> d carries the particles r owns that d holds as ghosts, its
 * index lists selected from the tags on both sides; their bytes per substep into *bytes. */
static wf_status select_halos(wf_particles *sp, const migration *mg, uint64_t *bytes) {
  int np = sp->np;
  wfpt_links_clear(sp->set);
  for (int d = 0; d < np; d++)
    for (int r = 0; r < np; r++) {
      if (r == d) continue;
      uint32_t n = 0;
      for (int q = 0; q < np; q++)
        n += mg->cnt[(size_t)q * mg->len + (size_t)r * np + d];
      if (!n) continue;
      halo *h = NULL;
      wf_status st;
      if ((st = halo_add(sp, r, d, n, &h)) != WF_OK ||
          (MINE(sp, r) &&
           (st = wfp_select_local(sp, &sp->parts[r], 1u << d, &h->src_idx, true)) != WF_OK) ||
          (MINE(sp, d) &&
           (st = wfp_select_local(sp, &sp->parts[d], 1u << (16 + r), &h->dst_idx, true)) != WF_OK))
        return st;
      *bytes += (uint64_t)n * HALO_BYTES;
    }
  return WF_OK;
}

/* The repartition on the devices, from the partitions' current state (which must be exact: no
 * drift flag raised), in the phases above; only the first waits. */
static wf_status device_repartition(wf_particles *sp) {
  migration mg;
  memset(&mg, 0, sizeof mg);
  mg.len = counts_len(sp->np);
  mg.cnt = malloc((size_t)sp->np * mg.len * 4);
  if (!mg.cnt) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  sp->skin = skin_for(sp, sp->vmax);
  uint64_t bytes = 0;
  wf_status st = plan_slabs(sp, &mg);
  if (st == WF_OK) plan_moves(sp, &mg);
  if (st == WF_OK) st = pack_moves(sp, &mg);
  if (st == WF_OK) st = send_moves(sp, &mg);
  if (st == WF_OK) st = receive_moves(sp, &mg);
  if (st == WF_OK) st = select_halos(sp, &mg, &bytes);
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    if (MINE(sp, p)) st = drift_arm(sp, &sp->parts[p]);
  free(mg.cnt);
  if (st == WF_OK) partitioned(sp, bytes);
  return st;
}

/* ---- drift, rerun and the repartition between frames -------------------------------------- */

wf_status wfp_rerun_if_moved(wf_particles *sp) {
  for (int attempt = 0;; attempt++) {
    bool moved = false;
    wf_status st = drift_flags(sp, &moved);
    if (st != WF_OK || !moved) return st;
    if (attempt >= 30)
      return fail(WF_ERR_INVALID,
                  "particles '%s': particles keep moving further than the skin (%g m) "
                  "between repartitions",
                  sp->name, (double)sp->skin);
    sp->skin_factor *= 2.0f;
    sp->info.reruns += (uint64_t)sp->frames_since;
    int frames = sp->frames_since;
    if ((st = wfp_restore(sp)) != WF_OK || (st = device_repartition(sp)) != WF_OK ||
        (st = wfp_launch_frames(sp, frames)) != WF_OK)
      return st;
  }
}

wf_status wfp_repartition(wf_particles *sp) {
  double t0 = wfpt_now_ms();
  wf_status st;
  sp->owned_valid = false; /* the partitions' particles change: known again at the next gather */
  /* repartition_ms: the host's time in the repartition, not its wait for the frames before */
  if (!sp->distributed) {
    st = distribute(sp);
    if (st == WF_OK) st = wfp_clock_get(sp, &sp->snap_time, &sp->snap_substeps);
    if (st == WF_OK) wfp_master_release(sp); /* over ranks: each holds its share from now on */
  } else {
    st = wfp_rerun_if_moved(sp);
    t0 = wfpt_now_ms();
    if (st == WF_OK && sp->skin_factor > 1.0f) /* back towards the automatic skin, slowly */
      sp->skin_factor = fmaxf(1.0f, 0.9f * sp->skin_factor);
    /* the partitions are idle: the clock is read without waiting for the repartition */
    if (st == WF_OK) st = wfp_clock_get(sp, &sp->snap_time, &sp->snap_substeps);
    if (st == WF_OK) st = device_repartition(sp);
  }
  sp->info.repartitions++;
  sp->info.repartition_ms += wfpt_now_ms() - t0;
  return st;
}
