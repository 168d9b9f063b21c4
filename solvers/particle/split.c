/* One particle system over several devices (wf_particles_split_* in weft/particles.h).
 *
 * Each device holds a partition: an ordinary wf_particles whose particles are the ones it owns
 * (those in its slab of space along the split axis) and ghosts (everyone else's particles within
 * w = contact range + skin of the slab), all in ascending global-id order. The host keeps a
 * master copy of the state only at repartitions.
 *
 * Why the result does not depend on the split: a particle's substep reads only particles within
 * the contact range (the cell size, the largest diameter), visits them in an order fixed by
 * their cells and global ids (particle_math.h, WFP_FOR_NEIGHBOURS), and writes only itself. A
 * partition has the same cells (the cell size is fixed by the split from the whole system) and
 * its local order is global-id order, so an owned particle sees exactly the neighbours, in
 * exactly the order, it would see in one solver — as long as every particle within range of it
 * is local, and each ghost holds its owner's state of the same substep. The first holds while no
 * particle moves further than skin/2 along the axis from where it was at the repartition (then a
 * particle within range of an owned one was within range + skin of the slab at the repartition:
 * a ghost). A kernel after every substep checks that and raises a per-partition flag; at the
 * next repartition (or download) a raised flag sends the system back to the state of the last
 * repartition, which is rerun with twice the skin. The second holds because after every substep
 * each ghost is overwritten with its owner's state (the halo exchange). Ghosts are integrated by
 * their partition like any other particle — with missing neighbours, so wrongly — and that work
 * is thrown away by the exchange; it costs little and keeps the single-device kernels unchanged.
 *
 * The halo exchange, for every ordered pair (q -> p) of partitions with ghosts: a pack kernel on
 * q's stream gathers the owned particles p needs (src indices, global-id order) into a send
 * buffer; q's copy stream, once that and p's substep are done, copies it into p's receive buffer
 * (a peer copy between GPUs; staged through the host by the GPU layer where peer access is
 * missing); p's stream waits for the copy and scatters it into the ghost slots. A partition's
 * next pack waits for its copy stream, so a send buffer is never overwritten while read.
 *
 * A frame — every partition's begin, K substeps each followed by the exchange, end — is captured
 * once into one graph on partition 0's stream (the other streams fork from it and join back) and
 * launched with one call. A repartition changes the partitions' particle counts, so it drops the
 * graph and the next frame recaptures it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_internal.h"
#include "particle_internal.h"
#include "particle_kernels.h"

#define MAXP 16

/* How far (a share of the skin) a particle may move along the axis between repartitions: half
 * the skin, less a margin for XPBD's predicted positions (they reach h·v beyond the state). */
#define WFP_DRIFT_SHARE 0.4f

#define fail(st, ...) wf__error(st, NULL, __VA_ARGS__)

static wf_status fail_gpu(const char *name, wf_status st, const char *what) {
  char inner[768];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "particles '%s' (split): %s: %s (%s)", name, what, inner,
                   wf_status_str(st));
}

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return fail_gpu(sp->name, st_, what);                                        \
  } while (0)

/* A growable device buffer. */
typedef struct dbuf {
  wf_buffer *b;
  size_t cap;
} dbuf;

/* The ghosts partition `to` receives from partition `from`. */
typedef struct link {
  int from, to;
  uint32_t n;
  dbuf src_idx; /* on from's device: from-local indices, global-id order */
  dbuf send;    /* on from's device: n positions, then n velocities */
  dbuf recv;    /* on to's device: the same */
  dbuf dst_idx; /* on to's device: to-local ghost slots */
} link;

typedef struct part {
  wf_particles *ps;
  wf_device *dev;
  wf_stream *copy; /* halo copies out of this partition */
  uint32_t n_local, n_owned;
  uint32_t *gid;  /* local -> global id */
  uint8_t *owned; /* local particle owned here (else a ghost) */
  float lo, hi;   /* slab along the axis */
  dbuf anchor; /* on the device: the axis coordinate of every local particle at the repartition */
  wf_buffer *flag; /* on the device: set when a particle moved more than skin/2 */
} part;

struct wf_particles_split {
  char name[64];
  wf_particles_split_desc desc;
  int np;
  part parts[MAXP];
  link *links;
  int n_links, cap_links;
  uint32_t count;
  bool distributed; /* false: every particle is in partition 0, local = global order */
  /* master state in global-id order, as of the last repartition (the snapshot a rerun starts
   * from) and its clock */
  wfp_f4 *pos, *vel;
  uint16_t *mat;
  double snap_time;
  uint64_t snap_substeps;
  int frames_since; /* frames run since the last repartition */
  int axis;
  bool have_cuts;
  float cuts[MAXP];  /* np - 1 slab boundaries */
  float skin;        /* in use */
  float skin_factor; /* doubled by every rerun */
  float cell;        /* the grid's cell size, fixed for every partition */
  wf_graph *graph;
  wf_particles_split_info info;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static wf_status dbuf_reserve(wf_particles_split *sp, dbuf *d, wf_device *dev, wf_stream *s,
                              size_t bytes) {
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

static void dbuf_free(dbuf *d, wf_stream *s) {
  if (d->b) wf_buffer_destroy(d->b, s);
  d->b = NULL, d->cap = 0;
}

static void drop_graph(wf_particles_split *sp) {
  if (!sp->graph) return;
  wf_stream_synchronize(wf_particles_stream(sp->parts[0].ps));
  wf_graph_destroy(sp->graph);
  sp->graph = NULL;
}

wf_particles_split_desc wf_particles_split_desc_default(void) {
  return (wf_particles_split_desc){.solver = wf_particles_desc_default(),
                                   .skin = 0.0f,
                                   .imbalance = 0.1f,
                                   .repartition_frames = 1};
}

void wf_particles_split_destroy(wf_particles_split *sp) {
  if (!sp) return;
  drop_graph(sp);
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].ps) wf_stream_synchronize(wf_particles_stream(sp->parts[p].ps));
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].copy) wf_stream_synchronize(sp->parts[p].copy);
  for (int l = 0; l < sp->cap_links; l++) { /* unused slots may still hold buffers */
    link *k = &sp->links[l];
    wf_stream *sf = wf_particles_stream(sp->parts[k->from].ps);
    wf_stream *st = wf_particles_stream(sp->parts[k->to].ps);
    dbuf_free(&k->src_idx, sf), dbuf_free(&k->send, sf);
    dbuf_free(&k->recv, st), dbuf_free(&k->dst_idx, st);
  }
  free(sp->links);
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    wf_stream *s = pt->ps ? wf_particles_stream(pt->ps) : NULL;
    dbuf_free(&pt->anchor, s);
    if (pt->flag) wf_buffer_destroy(pt->flag, s);
    if (pt->copy) wf_stream_destroy(pt->copy);
    wf_particles_destroy(pt->ps);
    free(pt->gid), free(pt->owned);
  }
  free(sp->pos), free(sp->vel), free(sp->mat);
  free(sp);
}

static wf_status master_reserve(wf_particles_split *sp, uint32_t n) {
  wfp_f4 *p = realloc(sp->pos, (size_t)(n ? n : 1) * sizeof *p);
  if (p) sp->pos = p;
  wfp_f4 *v = realloc(sp->vel, (size_t)(n ? n : 1) * sizeof *v);
  if (v) sp->vel = v;
  uint16_t *m = realloc(sp->mat, (size_t)(n ? n : 1) * sizeof *m);
  if (m) sp->mat = m;
  if (!p || !v || !m)
    return fail(WF_ERR_OUT_OF_MEMORY,
                "particles '%s' (split): out of host memory for %u "
                "particles",
                sp->name, n);
  return WF_OK;
}

wf_status wf_particles_split_create(wf_device *const *devices, int n,
                                    const wf_particles_split_desc *desc, wf_particles_split **out) {
  if (!out) return fail(WF_ERR_INVALID, "particles (split): out is NULL");
  *out = NULL;
  if (!devices || !desc) return fail(WF_ERR_INVALID, "particles (split): devices or desc is NULL");
  const char *name = desc->solver.name ? desc->solver.name : "particles";
  if (n < 1 || n > MAXP)
    return fail(WF_ERR_INVALID, "particles '%s' (split): %d devices; 1 to %d are supported", name,
                n, MAXP);
  for (int i = 0; i < n; i++) {
    if (!devices[i])
      return fail(WF_ERR_INVALID, "particles '%s' (split): device %d is NULL", name, i);
    if (wf_device_is_cuda(devices[i]) != wf_device_is_cuda(devices[0]))
      return fail(WF_ERR_INVALID,
                  "particles '%s' (split): devices '%s' and '%s' are of different kinds (CUDA "
                  "and CPU): one frame graph cannot span both",
                  name, wf_device_name(devices[0]), wf_device_name(devices[i]));
  }
  if (!(desc->skin >= 0.0f) || !isfinite(desc->skin))
    return fail(WF_ERR_INVALID, "particles '%s' (split): skin %g must be >= 0 (0: automatic)", name,
                (double)desc->skin);
  if (!(desc->imbalance >= 0.0f) || !isfinite(desc->imbalance))
    return fail(WF_ERR_INVALID, "particles '%s' (split): imbalance %g must be >= 0", name,
                (double)desc->imbalance);
  if (desc->repartition_frames < 1)
    return fail(WF_ERR_INVALID, "particles '%s' (split): repartition_frames %d must be >= 1", name,
                desc->repartition_frames);
  wf_particles_split *sp = calloc(1, sizeof *sp);
  if (!sp) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", name);
  snprintf(sp->name, sizeof sp->name, "%s", name);
  sp->desc = *desc;
  sp->desc.solver.name = sp->name;
  sp->desc.solver.stream = NULL;
  sp->np = n;
  sp->skin_factor = 1.0f;
  sp->info.partitions = n;
  sp->info.peer = true;
  wf_status st = WF_OK;
  for (int p = 0; p < n && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    pt->dev = devices[p];
    wf_particles_desc d = sp->desc.solver;
    d.capacity = 0;
    st = wf_particles_create(pt->dev, &d, &pt->ps);
    wf_stream *s = pt->ps ? wf_particles_stream(pt->ps) : NULL;
    if (st == WF_OK && (st = wf_stream_create(pt->dev, 0, &pt->copy)) != WF_OK)
      fail_gpu(sp->name, st, "creating a copy stream");
    if (st == WF_OK && (st = wf_buffer_create(pt->dev, 4, WF_BUFFER_ZERO, s, &pt->flag)) != WF_OK)
      fail_gpu(sp->name, st, "allocating a flag");
    for (int q = 0; q < p && st == WF_OK; q++)
      if (devices[q] != devices[p] && (!wf_device_can_access_peer(devices[p], devices[q]) ||
                                       !wf_device_can_access_peer(devices[q], devices[p])))
        sp->info.peer = false;
  }
  if (st == WF_OK) st = master_reserve(sp, 0);
  if (st != WF_OK) {
    wf_particles_split_destroy(sp);
    return st;
  }
  *out = sp;
  return WF_OK;
}

wf_particles *wf_particles_split_partition(const wf_particles_split *sp, int i) {
  return sp && i >= 0 && i < sp->np ? sp->parts[i].ps : NULL;
}

uint32_t wf_particles_split_count(const wf_particles_split *sp) { return sp ? sp->count : 0; }

/* ---- gathering the state ------------------------------------------------------------------- */

/* Current state of every particle into pos/vel/mat (global-id order); `moved` (may be NULL)
 * receives whether any partition raised its drift flag since the repartition. */
static wf_status gather(wf_particles_split *sp, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat,
                        bool *moved) {
  if (moved) *moved = false;
  if (!sp->distributed) {
    return wfp_particles_get(sp->parts[0].ps, pos, vel, mat);
  }
  size_t most = 1;
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].n_local > most) most = sp->parts[p].n_local;
  wfp_f4 *lp = malloc(most * sizeof *lp), *lv = malloc(most * sizeof *lv);
  uint16_t *lm = malloc(most * sizeof *lm);
  wf_status st = (lp && lv && lm) ? WF_OK
                                  : fail(WF_ERR_OUT_OF_MEMORY,
                                         "particles '%s' (split): out of host memory", sp->name);
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    st = wfp_particles_get(pt->ps, lp, lv, lm);
    if (st != WF_OK) break;
    for (uint32_t i = 0; i < pt->n_local; i++) {
      if (!pt->owned[i]) continue;
      uint32_t g = pt->gid[i];
      if (pos) pos[g] = lp[i];
      if (vel) vel[g] = lv[i];
      if (mat) mat[g] = lm[i];
    }
    if (moved) {
      uint32_t f = 0;
      st = wf_download(&f, pt->flag, 0, 4);
      if (st != WF_OK) fail_gpu(sp->name, st, "reading the drift flag");
      if (f) *moved = true;
    }
  }
  free(lp), free(lv), free(lm);
  return st;
}

/* ---- repartition ----------------------------------------------------------------------------
 */

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

static int owner_of(const wf_particles_split *sp, float x) {
  int p = 0;
  while (p < sp->np - 1 && x >= sp->cuts[p])
    p++;
  return p;
}

/* New slab boundaries: the longest axis of the bounds, cut at the count quantiles. */
static wf_status rebalance(wf_particles_split *sp) {
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
  sp->axis = axis;
  float *c = malloc((size_t)(n ? n : 1) * sizeof *c);
  if (!c) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  for (uint32_t i = 0; i < n; i++)
    c[i] = axis_of(sp->pos[i], axis);
  for (int p = 1; p < sp->np; p++)
    sp->cuts[p - 1] = n ? select_kth(c, n, (size_t)n * (size_t)p / (size_t)sp->np) : 0.0f;
  free(c);
  sp->have_cuts = true;
  sp->info.rebalances++;
  return WF_OK;
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

/* Distributes the master state (sp->pos/vel/mat, global-id order) over the partitions: owners by
 * slab, ghosts within w of each slab, the links and their index lists. */
static wf_status distribute(wf_particles_split *sp) {
  uint32_t n = sp->count;
  int np = sp->np;
  float rmax = 0.0f, vmax = 0.0f;
  for (uint32_t i = 0; i < n; i++) {
    rmax = fmaxf(rmax, sp->pos[i].w);
    float v2 =
        sp->vel[i].x * sp->vel[i].x + sp->vel[i].y * sp->vel[i].y + sp->vel[i].z * sp->vel[i].z;
    vmax = fmaxf(vmax, sqrtf(v2));
  }
  /* the cell size: the solver's rule (twice the largest radius) unless the desc fixes it */
  float cell = sp->desc.solver.cell_size > 0.0f ? sp->desc.solver.cell_size : 2.0f * rmax;
  if (cell != sp->cell && cell > 0.0f) {
    for (int p = 0; p < np; p++) {
      wf_status st = wfp_cell_size_set(sp->parts[p].ps, cell);
      if (st != WF_OK) return st;
    }
    sp->cell = cell;
  }
  /* the skin: the desc's, or three times the distance the fastest particle covers between
   * repartitions under gravity; doubled by every rerun */
  float skin = sp->desc.skin;
  if (skin == 0.0f) {
    float T = sp->desc.solver.frame_dt * (float)sp->desc.repartition_frames;
    const float *g = sp->desc.solver.gravity;
    float ga = sqrtf(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
    skin = 3.0f * (vmax * T + 0.5f * ga * T * T);
    if (skin < 0.25f * cell) skin = 0.25f * cell;
  }
  skin *= sp->skin_factor;
  sp->skin = skin;
  float w = cell + skin;

  /* slabs */
  if (!sp->have_cuts) {
    wf_status st = rebalance(sp);
    if (st != WF_OK) return st;
  } else {
    uint32_t cnt[MAXP] = {0};
    for (uint32_t i = 0; i < n; i++)
      cnt[owner_of(sp, axis_of(sp->pos[i], sp->axis))]++;
    uint32_t most = 0;
    for (int p = 0; p < np; p++)
      most = cnt[p] > most ? cnt[p] : most;
    double mean = (double)n / np;
    if (n && (double)most / mean - 1.0 > sp->desc.imbalance) {
      wf_status st = rebalance(sp);
      if (st != WF_OK) return st;
    }
  }
  for (int p = 0; p < np; p++) {
    sp->parts[p].lo = p == 0 ? -INFINITY : sp->cuts[p - 1];
    sp->parts[p].hi = p == np - 1 ? INFINITY : sp->cuts[p];
  }

  /* membership: walk the particles in global-id order, so every local list is in that order */
  grow_list members[MAXP] = {{0}};
  grow_list ghost_src[MAXP][MAXP] = {{{0}}};       /* [from][to]: global ids of the ghosts */
  uint32_t *loc = malloc((size_t)(n ? n : 1) * 4); /* local index in the owner */
  wf_status st =
      loc ? WF_OK
          : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  uint32_t owned_count[MAXP] = {0};
  for (uint32_t i = 0; i < n && st == WF_OK; i++) {
    float x = axis_of(sp->pos[i], sp->axis);
    int q = owner_of(sp, x);
    loc[i] = (uint32_t)members[q].n;
    owned_count[q]++;
    bool ok = list_push(&members[q], i);
    for (int p = q - 1; ok && p >= 0 && x < sp->parts[p].hi + w; p--)
      ok = list_push(&members[p], i | 0x80000000u) && list_push(&ghost_src[q][p], i);
    for (int p = q + 1; ok && p < np && x >= sp->parts[p].lo - w; p++)
      ok = list_push(&members[p], i | 0x80000000u) && list_push(&ghost_src[q][p], i);
    if (!ok)
      st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  }
  /* the partitions' particles; ghost slots of each partition by global id */
  uint32_t *slot_of = malloc((size_t)(n ? n : 1) * 4); /* per `to`, reused: ghost slot */
  if (st == WF_OK && !slot_of)
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  size_t most = 1;
  for (int p = 0; p < np; p++)
    most = members[p].n > most ? members[p].n : most;
  wfp_f4 *lp = st == WF_OK ? malloc(most * sizeof *lp) : NULL;
  wfp_f4 *lv = st == WF_OK ? malloc(most * sizeof *lv) : NULL;
  uint16_t *lm = st == WF_OK ? malloc(most * sizeof *lm) : NULL;
  float *la = st == WF_OK ? malloc(most * sizeof *la) : NULL;
  uint32_t *idx = st == WF_OK ? malloc(most * 4) : NULL;
  if (st == WF_OK && (!lp || !lv || !lm || !la || !idx))
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  sp->n_links = 0;
  uint64_t halo = 0;
  for (int p = 0; p < np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    size_t m = members[p].n;
    uint32_t *g2 = realloc(pt->gid, (m ? m : 1) * 4);
    if (g2) pt->gid = g2;
    uint8_t *o2 = realloc(pt->owned, m ? m : 1);
    if (o2) pt->owned = o2;
    if (!g2 || !o2) {
      st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
      break;
    }
    for (size_t j = 0; j < m; j++) {
      uint32_t e = members[p].a[j], g = e & 0x7fffffffu;
      pt->gid[j] = g;
      pt->owned[j] = !(e & 0x80000000u);
      if (!pt->owned[j]) slot_of[g] = (uint32_t)j;
      lp[j] = sp->pos[g], lv[j] = sp->vel[g], lm[j] = sp->mat[g];
      /* ghosts get no anchor (NaN never compares as moved): their owner checks them */
      la[j] = pt->owned[j] ? axis_of(sp->pos[g], sp->axis) : NAN;
    }
    pt->n_local = (uint32_t)m;
    pt->n_owned = owned_count[p];
    wf_stream *s = wf_particles_stream(pt->ps);
    st = wfp_particles_replace(pt->ps, (uint32_t)m, lp, lv, lm, pt->gid);
    if (st == WF_OK) st = dbuf_reserve(sp, &pt->anchor, pt->dev, s, (m ? m : 1) * 4);
    if (st == WF_OK && m && (st = wf_upload(pt->anchor.b, 0, la, m * 4, s)) != WF_OK)
      fail_gpu(sp->name, st, "uploading anchors");
    if (st == WF_OK && (st = wf_memset(pt->flag, 0, 0, 4, s)) != WF_OK)
      fail_gpu(sp->name, st, "clearing the drift flag");
    /* the links into p */
    for (int q = 0; q < np && st == WF_OK; q++) {
      grow_list *gs = &ghost_src[q][p];
      if (!gs->n) continue;
      if (sp->n_links == sp->cap_links) {
        int cap = sp->cap_links ? sp->cap_links * 2 : 8;
        link *nl = realloc(sp->links, (size_t)cap * sizeof *nl);
        if (!nl) {
          st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
          break;
        }
        memset(nl + sp->cap_links, 0, (size_t)(cap - sp->cap_links) * sizeof *nl);
        sp->links = nl, sp->cap_links = cap;
      }
      link *k = &sp->links[sp->n_links];
      /* a link slot keeps its buffers across repartitions; they must be on the right devices */
      if (k->from != q || k->to != p) {
        wf_stream *sf = wf_particles_stream(sp->parts[k->from].ps);
        wf_stream *sto = wf_particles_stream(sp->parts[k->to].ps);
        dbuf_free(&k->src_idx, sf), dbuf_free(&k->send, sf);
        dbuf_free(&k->recv, sto), dbuf_free(&k->dst_idx, sto);
      }
      k->from = q, k->to = p, k->n = (uint32_t)gs->n;
      sp->n_links++;
      wf_stream *sq = wf_particles_stream(sp->parts[q].ps);
      size_t c = gs->n;
      if ((st = dbuf_reserve(sp, &k->src_idx, sp->parts[q].dev, sq, c * 4)) != WF_OK ||
          (st = dbuf_reserve(sp, &k->send, sp->parts[q].dev, sq, c * 32)) != WF_OK ||
          (st = dbuf_reserve(sp, &k->recv, pt->dev, s, c * 32)) != WF_OK ||
          (st = dbuf_reserve(sp, &k->dst_idx, pt->dev, s, c * 4)) != WF_OK)
        break;
      for (size_t j = 0; j < c; j++)
        idx[j] = loc[gs->a[j]];
      if ((st = wf_upload(k->src_idx.b, 0, idx, c * 4, sq)) != WF_OK) break;
      for (size_t j = 0; j < c; j++)
        idx[j] = slot_of[gs->a[j]];
      if ((st = wf_upload(k->dst_idx.b, 0, idx, c * 4, s)) != WF_OK) break;
      halo += (uint64_t)c * 32;
    }
  }
  for (int q = 0; q < np; q++) {
    free(members[q].a);
    for (int p = 0; p < np; p++)
      free(ghost_src[q][p].a);
  }
  free(loc), free(slot_of), free(lp), free(lv), free(lm), free(la), free(idx);
  if (st != WF_OK) return st;
  for (int p = 0; p < np; p++) {
    TRY(wf_stream_synchronize(wf_particles_stream(sp->parts[p].ps)), "uploading halo lists");
    sp->info.owned[p] = sp->parts[p].n_owned;
    sp->info.ghosts[p] = sp->parts[p].n_local - sp->parts[p].n_owned;
    sp->info.slab_lo[p] = sp->parts[p].lo;
    sp->info.slab_hi[p] = sp->parts[p].hi;
  }
  sp->info.axis = sp->axis;
  sp->info.skin = sp->skin;
  sp->info.halo_bytes_per_frame = halo * (uint64_t)sp->desc.solver.substeps;
  sp->distributed = true;
  sp->frames_since = 0;
  drop_graph(sp);
  return WF_OK;
}

/* The clock of the system (partition 0's; every partition keeps the same one): the simulated
 * seconds and the substep count at the start of the solver's clock block. */
static wf_status clock_get(wf_particles_split *sp, double *time, uint64_t *substeps) {
  wf_buffer *clock;
  wf_particles *ps = sp->parts[0].ps;
  TRY(wf_particles_state_buffers(ps, NULL, NULL, &clock), "finding the clock");
  TRY(wf_stream_synchronize(wf_particles_stream(ps)), "waiting for the solver");
  TRY(wf_download(time, clock, 0, 8), "reading the clock");
  TRY(wf_download(substeps, clock, 8, 8), "reading the clock");
  return WF_OK;
}

static wf_status set_clocks(wf_particles_split *sp, double time, uint64_t substeps) {
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    size_t m = pt->n_local;
    float(*lp)[4] = malloc((m ? m : 1) * 16), (*lv)[4] = malloc((m ? m : 1) * 16);
    wf_status st = (lp && lv) ? WF_OK
                              : fail(WF_ERR_OUT_OF_MEMORY,
                                     "particles '%s' (split): out of host memory", sp->name);
    for (size_t j = 0; j < m && st == WF_OK; j++) {
      wfp_f4 a = sp->pos[pt->gid[j]], b = sp->vel[pt->gid[j]];
      lp[j][0] = a.x, lp[j][1] = a.y, lp[j][2] = a.z, lp[j][3] = a.w;
      lv[j][0] = b.x, lv[j][1] = b.y, lv[j][2] = b.z, lv[j][3] = b.w;
    }
    if (st == WF_OK) st = wf_particles_set_state(pt->ps, lp, lv, time, substeps);
    free(lp), free(lv);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

static wf_status launch_frames(wf_particles_split *sp, int frames);

/* Brings the master copy up to date with the frames run since the last repartition; if any
 * particle moved further than the skin allowed, reruns them from the last repartition with a
 * wider skin first. On return sp->pos/vel/mat hold the current state. */
static wf_status settle(wf_particles_split *sp) {
  if (!sp->distributed) return gather(sp, sp->pos, sp->vel, sp->mat, NULL);
  if (sp->frames_since == 0) return WF_OK; /* the master copy is current */
  uint32_t n = sp->count;
  wfp_f4 *np_ = malloc((size_t)(n ? n : 1) * sizeof *np_);
  wfp_f4 *nv = malloc((size_t)(n ? n : 1) * sizeof *nv);
  if (!np_ || !nv) {
    free(np_), free(nv);
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  }
  wf_status st;
  for (int attempt = 0;; attempt++) {
    bool moved = false;
    st = gather(sp, np_, nv, NULL, &moved);
    if (st != WF_OK || !moved) break;
    if (attempt >= 30) {
      st = fail(WF_ERR_INVALID,
                "particles '%s' (split): particles keep moving further than the skin (%g m) "
                "between repartitions",
                sp->name, (double)sp->skin);
      break;
    }
    /* rerun from the snapshot with twice the skin */
    sp->skin_factor *= 2.0f;
    sp->info.reruns += (uint64_t)sp->frames_since;
    int frames = sp->frames_since;
    if ((st = distribute(sp)) != WF_OK) break;
    if ((st = set_clocks(sp, sp->snap_time, sp->snap_substeps)) != WF_OK) break;
    if ((st = launch_frames(sp, frames)) != WF_OK) break;
  }
  if (st == WF_OK && n) {
    memcpy(sp->pos, np_, (size_t)n * sizeof *np_);
    memcpy(sp->vel, nv, (size_t)n * sizeof *nv);
  }
  if (st == WF_OK) sp->frames_since = 0;
  free(np_), free(nv);
  return st;
}

static wf_status repartition(wf_particles_split *sp) {
  double t0 = now_ms();
  wf_status st = settle(sp);
  if (st == WF_OK && sp->skin_factor > 1.0f) /* back towards the automatic skin, slowly */
    sp->skin_factor = fmaxf(1.0f, 0.9f * sp->skin_factor);
  if (st == WF_OK) st = distribute(sp);
  if (st == WF_OK) st = clock_get(sp, &sp->snap_time, &sp->snap_substeps);
  sp->info.repartitions++;
  sp->info.repartition_ms += now_ms() - t0;
  return st;
}

/* ---- the frame ------------------------------------------------------------------------------ */

static wf_status halo_exchange(wf_particles_split *sp) {
  wf_stream *s[MAXP];
  for (int p = 0; p < sp->np; p++)
    s[p] = wf_particles_stream(sp->parts[p].ps);
  /* drift check of every partition after its substep */
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    if (!pt->n_local) continue;
    wf_buffer *pos;
    TRY(wf_particles_state_buffers(pt->ps, &pos, NULL, NULL), "reading the state buffers");
    wfp_drift_args da = {wf_buffer_ptr(pos), wf_buffer_ptr(pt->anchor.b), wf_buffer_ptr(pt->flag),
                         WFP_DRIFT_SHARE * sp->skin, sp->axis};
    TRY(wf_launch(&wfp_drift, pt->n_local, &da, sizeof da, s[p]), "launching the drift check");
  }
  /* a partition's packs wait for its previous copies (the send buffers are reused) */
  bool sends[MAXP] = {false};
  for (int l = 0; l < sp->n_links; l++)
    sends[sp->links[l].from] = true;
  for (int p = 0; p < sp->np; p++)
    if (sends[p]) TRY(wf_stream_wait_stream(s[p], sp->parts[p].copy), "ordering the packs");
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    wf_buffer *pos, *vel;
    TRY(wf_particles_state_buffers(sp->parts[k->from].ps, &pos, &vel, NULL), "state buffers");
    wfp_f4 *send = wf_buffer_ptr(k->send.b);
    wfp_halo_args pa = {wf_buffer_ptr(k->src_idx.b), wf_buffer_ptr(pos), wf_buffer_ptr(vel), send,
                        send + k->n};
    TRY(wf_launch(&wfp_halo_pack, k->n, &pa, sizeof pa, s[k->from]), "launching a halo pack");
  }
  /* every copy waits for its pack and for the receiver's substep */
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    wf_stream *c = sp->parts[k->from].copy;
    TRY(wf_stream_wait_stream(c, s[k->from]), "ordering a halo copy");
    TRY(wf_stream_wait_stream(c, s[k->to]), "ordering a halo copy");
    TRY(wf_copy(k->recv.b, 0, k->send.b, 0, (size_t)k->n * 32, c), "copying a halo");
  }
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    TRY(wf_stream_wait_stream(s[k->to], sp->parts[k->from].copy), "waiting for a halo copy");
    wf_buffer *pos, *vel;
    TRY(wf_particles_state_buffers(sp->parts[k->to].ps, &pos, &vel, NULL), "state buffers");
    wfp_f4 *recv = wf_buffer_ptr(k->recv.b);
    wfp_halo_args ua = {wf_buffer_ptr(k->dst_idx.b), recv, recv + k->n, wf_buffer_ptr(pos),
                        wf_buffer_ptr(vel)};
    TRY(wf_launch(&wfp_halo_unpack, k->n, &ua, sizeof ua, s[k->to]), "launching a halo unpack");
  }
  return WF_OK;
}

static wf_status touch_links(wf_particles_split *sp) {
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    wf_stream *sf = wf_particles_stream(sp->parts[k->from].ps);
    wf_stream *sto = wf_particles_stream(sp->parts[k->to].ps);
    TRY(wf_buffer_touch(k->src_idx.b, sf), "ordering halo buffers");
    TRY(wf_buffer_touch(k->send.b, sf), "ordering halo buffers");
    TRY(wf_buffer_touch(k->recv.b, sto), "ordering halo buffers");
    TRY(wf_buffer_touch(k->dst_idx.b, sto), "ordering halo buffers");
  }
  for (int p = 0; p < sp->np; p++) {
    wf_stream *s = wf_particles_stream(sp->parts[p].ps);
    if (sp->parts[p].anchor.b) TRY(wf_buffer_touch(sp->parts[p].anchor.b, s), "ordering");
    TRY(wf_buffer_touch(sp->parts[p].flag, s), "ordering");
  }
  return WF_OK;
}

static wf_status enqueue_frame(wf_particles_split *sp) {
  wf_status st;
  for (int p = 0; p < sp->np; p++)
    if ((st = wfp_frame_enqueue_begin(sp->parts[p].ps)) != WF_OK) return st;
  for (int k = 0; k < sp->desc.solver.substeps; k++) {
    for (int p = 0; p < sp->np; p++)
      if ((st = wfp_substep_enqueue(sp->parts[p].ps)) != WF_OK) return st;
    if (sp->np > 1 && (st = halo_exchange(sp)) != WF_OK) return st;
  }
  for (int p = 0; p < sp->np; p++)
    if ((st = wfp_frame_enqueue_end(sp->parts[p].ps)) != WF_OK) return st;
  return touch_links(sp);
}

/* The frame of every partition, captured on partition 0's stream: the others fork from it and
 * join back at the end. */
static wf_status capture(wf_particles_split *sp) {
  wf_stream *s0 = wf_particles_stream(sp->parts[0].ps);
  TRY(wf_capture_begin(s0), "beginning the frame capture");
  wf_status st = WF_OK;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    wf_stream *s = wf_particles_stream(sp->parts[p].ps);
    if (p > 0) st = wf_stream_wait_stream(s, s0);
    if (st == WF_OK && sp->np > 1) st = wf_stream_wait_stream(sp->parts[p].copy, s0);
  }
  if (st == WF_OK) st = enqueue_frame(sp);
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    wf_stream *s = wf_particles_stream(sp->parts[p].ps);
    if (p > 0) st = wf_stream_wait_stream(s0, s);
    if (st == WF_OK && sp->np > 1) st = wf_stream_wait_stream(s0, sp->parts[p].copy);
  }
  wf_graph *g = NULL;
  wf_status st2 = wf_capture_end(s0, &g);
  if (st != WF_OK) {
    if (g) wf_graph_destroy(g);
    return st;
  }
  if (st2 != WF_OK) return fail_gpu(sp->name, st2, "ending the frame capture");
  sp->graph = g;
  return WF_OK;
}

static wf_status launch_frames(wf_particles_split *sp, int frames) {
  if (frames <= 0) return WF_OK;
  wf_stream *s0 = wf_particles_stream(sp->parts[0].ps);
  wf_status st;
  if (sp->desc.solver.no_graph) {
    for (int f = 0; f < frames; f++) {
      for (int p = 0; p < sp->np; p++) /* the frames of all partitions start together */
        TRY(wf_stream_wait_stream(wf_particles_stream(sp->parts[p].ps), s0), "ordering");
      if ((st = enqueue_frame(sp)) != WF_OK) return st;
      for (int p = 1; p < sp->np; p++)
        TRY(wf_stream_wait_stream(s0, wf_particles_stream(sp->parts[p].ps)), "ordering");
    }
  } else {
    if (!sp->graph && (st = capture(sp)) != WF_OK) return st;
    for (int f = 0; f < frames; f++)
      TRY(wf_graph_launch(sp->graph, s0), "launching a frame");
  }
  for (int p = 0; p < sp->np; p++) {
    wf_stream *s = wf_particles_stream(sp->parts[p].ps);
    if (p > 0) TRY(wf_stream_wait_stream(s, s0), "ordering after the frame");
    if ((st = wfp_frames_launched(sp->parts[p].ps)) != WF_OK) return st;
  }
  sp->frames_since += frames;
  return WF_OK;
}

wf_status wf_particles_split_step_frames(wf_particles_split *sp, int frames) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  if (frames < 0)
    return fail(WF_ERR_INVALID, "particles '%s' (split): frames %d must be >= 0", sp->name, frames);
  wf_status st = WF_OK;
  for (int f = 0; f < frames && st == WF_OK; f++) {
    /* one partition has no ghosts and no boundaries: it is distributed once */
    if (!sp->distributed || (sp->np > 1 && sp->frames_since >= sp->desc.repartition_frames))
      st = repartition(sp);
    if (st == WF_OK) st = launch_frames(sp, 1);
  }
  return st;
}

/* ---- building the system --------------------------------------------------------------------
 */

/* New particles go to partition 0, which then holds the whole system in global-id order (its
 * local index = global id) until the next frame distributes it. */
static wf_status undistribute(wf_particles_split *sp) {
  if (!sp->distributed) return WF_OK;
  wf_status st = settle(sp);
  if (st != WF_OK) return st;
  double t;
  uint64_t k;
  if ((st = clock_get(sp, &t, &k)) != WF_OK) return st;
  uint32_t n = sp->count;
  uint32_t *gid = malloc((size_t)(n ? n : 1) * 4);
  if (!gid)
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s' (split): out of host memory", sp->name);
  for (uint32_t i = 0; i < n; i++)
    gid[i] = i;
  /* partition 0 must accept larger particles again: its cell size follows the desc */
  st = wfp_cell_size_set(sp->parts[0].ps, sp->desc.solver.cell_size);
  sp->cell = 0.0f;
  for (int p = 1; p < sp->np && st == WF_OK; p++) {
    sp->parts[p].n_local = sp->parts[p].n_owned = 0;
    st = wfp_particles_replace(sp->parts[p].ps, 0, NULL, NULL, NULL, NULL);
  }
  if (st == WF_OK) st = wfp_particles_replace(sp->parts[0].ps, n, sp->pos, sp->vel, sp->mat, gid);
  free(gid);
  if (st != WF_OK) return st;
  sp->parts[0].n_local = sp->parts[0].n_owned = n;
  sp->n_links = 0;
  sp->distributed = false;
  sp->frames_since = 0;
  drop_graph(sp);
  (void)t, (void)k;
  return WF_OK;
}

static wf_status after_add(wf_particles_split *sp) {
  sp->count = wf_particles_count(sp->parts[0].ps);
  wf_status st = master_reserve(sp, sp->count);
  if (st == WF_OK) st = gather(sp, sp->pos, sp->vel, sp->mat, NULL);
  return st;
}

wf_status wf_particles_split_emit(wf_particles_split *sp, const wf_particles_emitter *e,
                                  uint32_t *first, uint32_t *count) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  wf_status st = undistribute(sp);
  if (st == WF_OK) st = wf_particles_emit(sp->parts[0].ps, e, first, count);
  return st == WF_OK ? after_add(sp) : st;
}

wf_status wf_particles_split_add(wf_particles_split *sp, uint32_t n, const float (*pos)[4],
                                 const float (*vel)[4], uint32_t material, uint32_t *first) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  wf_status st = undistribute(sp);
  if (st == WF_OK) st = wf_particles_add(sp->parts[0].ps, n, pos, vel, material, first);
  return st == WF_OK ? after_add(sp) : st;
}

wf_status wf_particles_split_add_material(wf_particles_split *sp, const wf_particle_material *m,
                                          uint32_t *index) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wf_particles_add_material(sp->parts[p].ps, m, index);
    if (st != WF_OK) return st;
  }
  drop_graph(sp);
  return WF_OK;
}

wf_status wf_particles_split_add_collider(wf_particles_split *sp, const wf_collider_desc *c,
                                          uint32_t *index) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wf_particles_add_collider(sp->parts[p].ps, c, index);
    if (st != WF_OK) return st;
  }
  drop_graph(sp);
  return WF_OK;
}

/* ---- reading the state ---------------------------------------------------------------------- */

wf_status wf_particles_split_download(wf_particles_split *sp, float (*pos)[4], float (*vel)[4]) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  wf_status st = settle(sp);
  if (st != WF_OK) return st;
  for (int p = 0; p < sp->np; p++)
    if ((st = wf_particles_check(sp->parts[p].ps)) != WF_OK) return st;
  if (pos && sp->count) memcpy(pos, sp->pos, (size_t)sp->count * 16);
  if (vel && sp->count) memcpy(vel, sp->vel, (size_t)sp->count * 16);
  return WF_OK;
}

wf_status wf_particles_split_stats_get(wf_particles_split *sp, wf_particles_stats *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles (split): NULL argument");
  wf_status st = settle(sp);
  if (st != WF_OK) return st;
  memset(out, 0, sizeof *out);
  out->count = sp->count;
  for (uint32_t i = 0; i < sp->count; i++) {
    wfp_f4 v = sp->vel[i];
    double sp2 = (double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z;
    if (sqrt(sp2) > out->max_speed) out->max_speed = sqrt(sp2);
    if (v.w > 0.0f) {
      double m = 1.0 / v.w;
      out->kinetic_energy += 0.5 * m * sp2;
      out->momentum[0] += m * v.x, out->momentum[1] += m * v.y, out->momentum[2] += m * v.z;
    }
  }
  return clock_get(sp, &out->time, &out->substeps);
}

wf_status wf_particles_split_info_get(const wf_particles_split *sp, wf_particles_split_info *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles (split): NULL argument");
  *out = sp->info;
  return WF_OK;
}

/* ---- for the world: materials, the state with its clock, restore ------------------------------
 * Added for engine/world.c (a scene on several devices). They use only settle, undistribute,
 * clock_get and the partitions' own solvers, so they hold whatever the repartition does. */

wf_status wf_particles_split_set_material(wf_particles_split *sp, uint32_t index,
                                          const wf_particle_material *m) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wf_particles_set_material(sp->parts[p].ps, index, m);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* A repartition that is due is done here rather than at the next frame: it gathers the state this
 * call must gather anyway, and a settle alone would reset frames_since, so that a caller reading
 * the state after every frame would never repartition again. After a settle the master copy is
 * the current state, so the snapshot's clock must become the current clock too (a rerun starts
 * from both). */
wf_status wf_particles_split_state_get(wf_particles_split *sp, float (*pos)[4], float (*vel)[4],
                                       double *time, uint64_t *substeps) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  bool due = sp->distributed && sp->np > 1 && sp->frames_since >= sp->desc.repartition_frames;
  bool settles = sp->distributed && sp->frames_since > 0;
  wf_status st = due ? repartition(sp) : settle(sp);
  if (st == WF_OK && !due && settles) st = clock_get(sp, &sp->snap_time, &sp->snap_substeps);
  if (st != WF_OK) return st;
  if (pos && sp->count) memcpy(pos, sp->pos, (size_t)sp->count * 16);
  if (vel && sp->count) memcpy(vel, sp->vel, (size_t)sp->count * 16);
  double t = 0.0;
  uint64_t k = 0;
  if ((time || substeps) && (st = clock_get(sp, &t, &k)) != WF_OK) return st;
  if (time) *time = t;
  if (substeps) *substeps = k;
  return WF_OK;
}

/* The whole system goes back into partition 0 (global-id order, as after adding particles), takes
 * the given state there, and every partition takes the clock (kinematic colliders move with it);
 * the next frame distributes it again. The result does not depend on the partitioning, so the
 * frames that follow are bitwise those that followed the saved state. */
wf_status wf_particles_split_set_state(wf_particles_split *sp, const float (*pos)[4],
                                       const float (*vel)[4], double time, uint64_t substeps) {
  if (!sp) return fail(WF_ERR_INVALID, "particles (split): solver is NULL");
  if (!pos || !vel)
    return fail(WF_ERR_INVALID, "particles '%s' (split): set_state: pos or vel is NULL", sp->name);
  wf_status st = undistribute(sp);
  if (st != WF_OK) return st;
  static const float none[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    st = p == 0 ? wf_particles_set_state(sp->parts[0].ps, pos, vel, time, substeps)
                : wf_particles_set_state(sp->parts[p].ps, none, none, time, substeps);
  if (st != WF_OK) return st;
  if (sp->count) {
    memcpy(sp->pos, pos, (size_t)sp->count * 16);
    memcpy(sp->vel, vel, (size_t)sp->count * 16);
  }
  sp->snap_time = time;
  sp->snap_substeps = substeps;
  return WF_OK;
}
