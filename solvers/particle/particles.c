/* The particle solver over 1..N devices (wf_particles_* in weft/particles.h).
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
 * the caller reads the state; repartitions run on the devices (device_repartition).
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
 * a ghost). The contact kernel checks that for every particle it integrates (wfp_drift_flag;
 * a separate pass read every particle once more per substep) and raises a per-partition flag; at
 * the next repartition (or download) a raised flag sends the system back to the state of the last
 * repartition, which is rerun with twice the skin. The second holds because after every substep
 * each ghost is overwritten with its owner's state (the halo exchange). Ghosts are integrated by
 * their partition like any other particle — with missing neighbours, so wrongly — and that work
 * is thrown away by the exchange; it costs little and keeps the single-device kernels unchanged.
 *
 * The halo exchange, for every ordered pair (q -> p) of partitions with ghosts: a pack kernel on
 * q's stream gathers the owned particles p needs (src indices, global-id order) into a send
 * buffer; q's copy stream, once that is done and p has read its receive buffer for the last time
 * (an event p records after its unpack of the exchange before, or at the frame's start, before
 * its substep 0), copies it into p's receive buffer (a peer copy between GPUs; staged through
 * the host by the GPU layer where peer access is missing); p's stream waits for the copy and
 * scatters it into the ghost slots. Only that unpack reads the receive buffer, so the copy does
 * not wait for p's substep: it runs while p computes, off the frame's critical path. A
 * partition's next pack waits for its copy stream, so a send buffer is never overwritten while
 * read. Captured, the events are edges between the frame's streams, and the launches of the
 * frame graph run one after another on partition 0's stream, so a frame's first copy still comes
 * after the unpacks of the frame before.
 *
 * A frame — every partition's begin, K substeps each followed by the exchange, end — is captured
 * once into one graph on partition 0's stream (the other streams fork from it and join back) and
 * launched with one call. A repartition changes the partitions' particle and ghost counts, but
 * the frame does not bake them in: its kernels and copies cover launch sizes with some slack
 * (launch_for), and read the counts on the device (a partition's from its parameter block, a
 * link's from the head of its index lists, written by the selection that makes them), as they
 * read the drift limit and axis (wfp_drift_ctl). So the graph is captured again only when a
 * count outgrows its launch size (or shrinks far below it), a buffer is replaced or the links
 * change (graph_key), not at every repartition: recording and updating a graph of a few thousand
 * nodes took 4 to 14 ms of host time a frame at 4 GPUs, while the GPUs waited. When it is
 * captured again, the GPU layer updates the executable graph in place where its shape did not
 * change (wf_capture_end_update).
 *
 * A repartition, between frames: the host waits for the frame, reads the drift flags (a rerun
 * first if one is raised) and each partition's counts from a classify kernel (which partitions
 * will hold each owned particle under the new slabs); that is its only wait. The rest is queued:
 * packs of what every partition sends every other (CUB select + gather), copies to the receivers,
 * a CUB radix sort by global id there into the new arrays, anchors, tags and the snapshot a rerun
 * restores, and the halo lists selected from the tags on both sides of each pair.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal/error.h"
#include "particle_internal.h"
#include "particle_kernels.h"
#include "solvers/split_measure.h"

#define MAXP WFP_SPLIT_MAXP
/* words of a graph key: per partition 5, per link 6 (at most MAXP * (MAXP - 1) links), and 2 */
#define GRAPH_KEY_MAX (MAXP * 5 + MAXP * (MAXP - 1) * 6 + 2)

/* What enqueue_frame enqueues (run_frames' mode = FRAME_*, the measure's kind of frame): the
 * frame; the frame without the halo copies (every wait and event stays, so the frame's shape is
 * the same; the ghosts go stale); only the halo copies with their waits; the frame with time
 * stamps around every partition's substeps (as with WF_BALANCE_TIME). The last three exist for
 * wf_particles_overlap_measure. */
enum { FRAME_FULL = 0, FRAME_NO_COPY = 1, FRAME_COPIES = 2, FRAME_STAMPED = 3 };

/* How far (a share of the skin) a particle may move along the axis between repartitions: half
 * the skin, less a margin for XPBD's predicted positions (they reach h·v beyond the state). */
#define WFP_DRIFT_SHARE 0.4f

#define fail(st, ...) wf__error(st, NULL, __VA_ARGS__)

static wf_status fail_gpu(const char *name, wf_status st, const char *what) {
  char inner[768];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "particles '%s': %s: %s (%s)", name, what, inner,
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
  uint32_t launch; /* >= n: what the frame's packs, copy and unpacks cover (see launch_for) */
  dbuf src_idx;    /* on from's device: n, then n from-local indices in global-id order */
  dbuf send;       /* on from's device: launch positions, then launch velocities */
  dbuf recv;       /* on to's device: the same */
  dbuf dst_idx;    /* on to's device: n, then the n to-local ghost slots */
} link;

/* What partition q sends partition d at a repartition, on q's device: the indices of the
 * particles (q-local, global-id order) and their data. */
typedef struct outbox {
  dbuf idx, pos, vel, gid, mat;
} outbox;

typedef struct part {
  wfp_part *ps;
  wf_device *dev;
  wf_stream *copy; /* halo copies out of this partition */
  /* per sender q, on this device: recorded on this partition's stream at a frame's start and
   * after each unpack of the link q -> this, the last read of its receive buffer; the next copy
   * into that buffer waits for it. Created with the first such link, kept until the end, so a
   * captured frame never holds a replaced one. */
  wf_event *recv_free[MAXP];
  uint32_t n_local, n_owned;
  uint32_t launch; /* the solver's launch size (wfp_part_set_launch), see launch_for */
  float lo, hi;    /* slab along the axis */
  dbuf anchor;     /* on the device: the axis coordinate of every owned particle at the
                    * repartition; NaN for a ghost */
  wf_buffer *flag; /* on the device, a wfp_drift_ctl: the flag set when a particle moved more
                    * than skin/2, the limit and the axis */
  /* the repartition on the device (see device_repartition) */
  dbuf tag, counts, snap_pos, snap_vel;
  dbuf stamps; /* the device clock (ns) before and after each substep (stamping) */
  /* the partition view (wf_particles_partition_view): the owned rows gathered on the device */
  dbuf view_idx, view_pos, view_vel, view_gid, view_mat;
  dbuf in_pos, in_vel, in_gid, in_mat; /* received particles, by sender */
  dbuf keys, vals, keys_out, vals_out, sort_temp, select_temp;
  outbox out[MAXP];
} part;

struct wf_particles {
  char name[64];
  wf_particles_desc desc;
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
  bool exact;       /* no particle outran the skin in those frames (checked since) */
  int axis;
  bool have_cuts;
  float cuts[MAXP];  /* np - 1 slab boundaries */
  float skin;        /* in use */
  float skin_factor; /* doubled by every rerun */
  float cell;        /* the grid's cell size, fixed for every partition */
  float rmax;        /* the largest radius */
  float vmax;        /* the largest speed at the last repartition */
  wf_graph *graph;
  bool graph_stale; /* something the frame reads changed since the graph was captured */
  /* what the graph was captured with (graph_key): launch sizes, buffers, links */
  uint64_t key[GRAPH_KEY_MAX];
  size_t key_n;
  int mode; /* FRAME_*: what enqueue_frame enqueues (the overlap measure) */
  wf_particles_info info;
  /* wf_particles_copy_state of several partitions: every partition's owned rows (positions,
   * then velocities) and their global ids, on stage_dev */
  wf_device *stage_dev;
  wf_stream *stage_stream; /* the stream the staging buffers were allocated on */
  dbuf stage, stage_gid;
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static wf_status dbuf_reserve(wf_particles *sp, dbuf *d, wf_device *dev, wf_stream *s,
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

/* Device memory of partition pt: its solver's and the buffers of this file it owns (halo links
 * are counted with their sender). */
static size_t part_bytes(const part *pt) {
  const dbuf *own[] = {&pt->anchor,   &pt->tag,       &pt->counts,      &pt->snap_pos,
                       &pt->snap_vel, &pt->in_pos,    &pt->in_vel,      &pt->in_gid,
                       &pt->in_mat,   &pt->keys,      &pt->vals,        &pt->keys_out,
                       &pt->vals_out, &pt->sort_temp, &pt->select_temp, &pt->stamps,
                       &pt->view_idx, &pt->view_pos,  &pt->view_vel,    &pt->view_gid,
                       &pt->view_mat};
  size_t bytes = wfp_part_device_bytes(pt->ps);
  for (size_t b = 0; b < sizeof own / sizeof own[0]; b++)
    bytes += own[b]->cap;
  for (int d = 0; d < MAXP; d++) {
    const outbox *o = &pt->out[d];
    bytes += o->idx.cap + o->pos.cap + o->vel.cap + o->gid.cap + o->mat.cap;
  }
  return bytes;
}

/* The frame graph no longer matches the partitions: the next frame captures it again. */
static void drop_graph(wf_particles *sp) { sp->graph_stale = true; }

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

/* Clears a partition's drift flag and sets the limit and the axis its frames check (they are
 * read on the device, so the captured frame follows the repartitions). */
static wf_status drift_arm(wf_particles *sp, part *pt) {
  wfp_drift_ctl c = {0u, WFP_DRIFT_SHARE * sp->skin, sp->axis, 0u};
  TRY(wf_upload(pt->flag, 0, &c, sizeof c, wfp_part_stream(pt->ps)), "arming the drift check");
  return WF_OK;
}

/* Everything a captured frame holds that a repartition may change: the partitions' launch sizes
 * and buffers, the links with their launch sizes and buffers. The frame is captured again when
 * this changes (run_frames), not at every repartition. (The halo events, part.recv_free, are
 * one per pair of partitions and never replaced: the links' ends name them.) */
static size_t graph_key(const wf_particles *sp, uint64_t *key) {
  size_t n = 0;
  key[n++] = (uint64_t)sp->np;
  key[n++] = (uint64_t)sp->n_links;
  for (int p = 0; p < sp->np; p++) {
    const part *pt = &sp->parts[p];
    key[n++] = pt->launch;
    key[n++] = wfp_part_generation(pt->ps);
    key[n++] = (uint64_t)(uintptr_t)pt->anchor.b;
    key[n++] = (uint64_t)(uintptr_t)pt->flag;
    key[n++] = (uint64_t)(uintptr_t)pt->stamps.b;
  }
  for (int l = 0; l < sp->n_links; l++) {
    const link *k = &sp->links[l];
    key[n++] = (uint64_t)k->from << 32 | (uint32_t)k->to;
    key[n++] = k->launch;
    key[n++] = (uint64_t)(uintptr_t)k->src_idx.b;
    key[n++] = (uint64_t)(uintptr_t)k->send.b;
    key[n++] = (uint64_t)(uintptr_t)k->recv.b;
    key[n++] = (uint64_t)(uintptr_t)k->dst_idx.b;
  }
  return n;
}

static bool graph_matches(const wf_particles *sp) {
  uint64_t key[GRAPH_KEY_MAX];
  size_t n = graph_key(sp, key);
  return n == sp->key_n && !memcmp(key, sp->key, n * sizeof key[0]);
}

void wf_particles_destroy(wf_particles *sp) {
  if (!sp) return;
  if (sp->graph) {
    wf_stream_synchronize(wfp_part_stream(sp->parts[0].ps));
    wf_graph_destroy(sp->graph);
  }
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].ps) wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps));
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].copy) wf_stream_synchronize(sp->parts[p].copy);
  for (int l = 0; l < sp->cap_links; l++) { /* unused slots may still hold buffers */
    link *k = &sp->links[l];
    wf_stream *sf = wfp_part_stream(sp->parts[k->from].ps);
    wf_stream *st = wfp_part_stream(sp->parts[k->to].ps);
    dbuf_free(&k->src_idx, sf), dbuf_free(&k->send, sf);
    dbuf_free(&k->recv, st), dbuf_free(&k->dst_idx, st);
  }
  free(sp->links);
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    wf_stream *s = pt->ps ? wfp_part_stream(pt->ps) : NULL;
    dbuf *own[] = {&pt->anchor,   &pt->tag,       &pt->counts,      &pt->snap_pos,
                   &pt->snap_vel, &pt->in_pos,    &pt->in_vel,      &pt->in_gid,
                   &pt->in_mat,   &pt->keys,      &pt->vals,        &pt->keys_out,
                   &pt->vals_out, &pt->sort_temp, &pt->select_temp, &pt->stamps,
                   &pt->view_idx, &pt->view_pos,  &pt->view_vel,    &pt->view_gid,
                   &pt->view_mat};
    for (size_t b = 0; b < sizeof own / sizeof own[0]; b++)
      dbuf_free(own[b], s);
    for (int d = 0; d < MAXP; d++) {
      outbox *o = &pt->out[d];
      dbuf_free(&o->idx, s), dbuf_free(&o->pos, s), dbuf_free(&o->vel, s);
      dbuf_free(&o->gid, s), dbuf_free(&o->mat, s);
    }
    if (pt->flag) wf_buffer_destroy(pt->flag, s);
    for (int q = 0; q < MAXP; q++)
      wf_event_destroy(pt->recv_free[q]);
    if (pt->copy) wf_stream_destroy(pt->copy);
    wfp_part_destroy(pt->ps);
  }
  if (sp->stage_stream) wf_stream_synchronize(sp->stage_stream);
  dbuf_free(&sp->stage, sp->stage_stream), dbuf_free(&sp->stage_gid, sp->stage_stream);
  free(sp->pos), free(sp->vel), free(sp->mat);
  free(sp);
}

static wf_status master_reserve(wf_particles *sp, uint32_t n) {
  wfp_f4 *p = realloc(sp->pos, (size_t)(n ? n : 1) * sizeof *p);
  if (p) sp->pos = p;
  wfp_f4 *v = realloc(sp->vel, (size_t)(n ? n : 1) * sizeof *v);
  if (v) sp->vel = v;
  uint16_t *m = realloc(sp->mat, (size_t)(n ? n : 1) * sizeof *m);
  if (m) sp->mat = m;
  if (!p || !v || !m)
    return fail(WF_ERR_OUT_OF_MEMORY,
                "particles '%s': out of host memory for %u "
                "particles",
                sp->name, n);
  return WF_OK;
}

/* The desc's devices (none: the default device) into devices[0..*n), checked. */
static wf_status devices_of(const wf_particles_desc *desc, const char *name, wf_device **devices,
                            int *n) {
  *n = desc->device_count > 0 && desc->devices[0] ? desc->device_count : 1;
  if (*n > MAXP)
    return fail(WF_ERR_INVALID, "particles '%s': device_count %d; 1 to %d are supported", name,
                desc->device_count, MAXP);
  devices[0] = desc->devices[0] ? desc->devices[0] : wf_device_default();
  if (!devices[0]) return fail(WF_ERR_DEVICE, "particles '%s': no default device", name);
  for (int i = 1; i < *n; i++) {
    devices[i] = desc->devices[i];
    if (!devices[i]) return fail(WF_ERR_INVALID, "particles '%s': devices[%d] is NULL", name, i);
    if (wf_device_is_cuda(devices[i]) != wf_device_is_cuda(devices[0]))
      return fail(WF_ERR_INVALID,
                  "particles '%s': devices '%s' and '%s' are of different kinds (CUDA "
                  "and CPU): one frame graph cannot span both",
                  name, wf_device_name(devices[0]), wf_device_name(devices[i]));
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
    return fail(WF_ERR_INVALID, "particles '%s': repartition_frames %d must be >= 0 (0: 1)",
                name, d->repartition_frames);
  if (d->imbalance == 0.0f) d->imbalance = 0.01f;
  if (d->repartition_frames == 0) d->repartition_frames = 1;
  return WF_OK;
}

/* Partition p on dev: its solver, and with several partitions its copy stream and drift flag. */
static wf_status part_create(wf_particles *sp, int p, wf_device *dev, const wf_stream *own) {
  part *pt = &sp->parts[p];
  pt->dev = dev;
  wf_particles_desc d = sp->desc;
  d.stream = (wf_stream *)own;
  if (sp->np > 1) d.capacity = 0; /* the repartitions size them */
  wf_status st = wfp_part_create(dev, &d, &pt->ps);
  if (st != WF_OK || sp->np == 1) return st;
  TRY(wf_stream_create(dev, 0, &pt->copy), "creating a copy stream");
  TRY(wf_buffer_create(dev, sizeof(wfp_drift_ctl), WF_BUFFER_ZERO, wfp_part_stream(pt->ps),
                       &pt->flag),
      "allocating a flag");
  for (int q = 0; q < p; q++)
    if (sp->parts[q].dev != dev && (!wf_device_can_access_peer(dev, sp->parts[q].dev) ||
                                    !wf_device_can_access_peer(sp->parts[q].dev, dev)))
      sp->info.peer = false;
  return WF_OK;
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
  for (int p = 0; p < n && st == WF_OK; p++)
    st = part_create(sp, p, devices[p], n == 1 ? desc->stream : NULL);
  if (st == WF_OK && n > 1) st = master_reserve(sp, 0);
  if (st != WF_OK) {
    wf_particles_destroy(sp);
    return st;
  }
  *out = sp;
  return WF_OK;
}

int wf_particles_partition_count(const wf_particles *sp) { return sp ? sp->np : 0; }

uint32_t wf_particles_count(const wf_particles *sp) {
  if (!sp) return 0;
  return sp->np == 1 ? wfp_part_count(sp->parts[0].ps) : sp->count;
}

/* ---- gathering the state ------------------------------------------------------------------- */

/* Current state of every particle into pos/vel/mat (global-id order): each partition's owned
 * particles (those with an anchor) by their global ids. */
static wf_status gather(wf_particles *sp, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat) {
  if (!sp->distributed) return wfp_part_get(sp->parts[0].ps, pos, vel, mat, NULL);
  size_t most = 1;
  for (int p = 0; p < sp->np; p++)
    if (sp->parts[p].n_local > most) most = sp->parts[p].n_local;
  wfp_f4 *lp = malloc(most * sizeof *lp), *lv = malloc(most * sizeof *lv);
  uint16_t *lm = malloc(most * sizeof *lm);
  uint32_t *lg = malloc(most * sizeof *lg);
  float *la = malloc(most * sizeof *la);
  wf_status st =
      (lp && lv && lm && lg && la)
          ? WF_OK
          : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    if (!pt->n_local) continue;
    st = wfp_part_get(pt->ps, lp, lv, lm, lg);
    if (st != WF_OK) break;
    if ((st = wf_download(la, pt->anchor.b, 0, (size_t)pt->n_local * 4)) != WF_OK) {
      fail_gpu(sp->name, st, "reading the owners");
      break;
    }
    for (uint32_t i = 0; i < pt->n_local; i++) {
      if (la[i] != la[i]) continue; /* a ghost */
      uint32_t g = lg[i];
      if (pos) pos[g] = lp[i];
      if (vel) vel[g] = lv[i];
      if (mat) mat[g] = lm[i];
    }
  }
  free(lp), free(lv), free(lm), free(lg), free(la);
  return st;
}

/* Waits for every partition; *moved: whether a particle moved further than the skin allows
 * since the last repartition (any partition's drift flag). */
static wf_status drift_flags(wf_particles *sp, bool *moved) {
  *moved = false;
  for (int p = 0; p < sp->np; p++) {
    uint32_t f = 0;
    TRY(wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps)), "waiting for a partition");
    TRY(wf_download(&f, sp->parts[p].flag, 0, 4), "reading the drift flag");
    if (f) *moved = true;
  }
  return WF_OK;
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

/* The next link slot, for n ghosts from q to p, with its buffers reserved. A slot keeps its
 * buffers across repartitions; they are freed when the slot now joins other partitions. */
static wf_status add_link(wf_particles *sp, int q, int p, uint32_t n, link **out) {
  if (sp->n_links == sp->cap_links) {
    int cap = sp->cap_links ? sp->cap_links * 2 : 8;
    link *nl = realloc(sp->links, (size_t)cap * sizeof *nl);
    if (!nl)
      return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
    memset(nl + sp->cap_links, 0, (size_t)(cap - sp->cap_links) * sizeof *nl);
    sp->links = nl, sp->cap_links = cap;
  }
  link *k = &sp->links[sp->n_links];
  if (k->from != q || k->to != p) {
    wf_stream *sf = wfp_part_stream(sp->parts[k->from].ps);
    wf_stream *sto = wfp_part_stream(sp->parts[k->to].ps);
    dbuf_free(&k->src_idx, sf), dbuf_free(&k->send, sf);
    dbuf_free(&k->recv, sto), dbuf_free(&k->dst_idx, sto);
  }
  if (k->from != q || k->to != p) k->launch = 0;
  k->from = q, k->to = p, k->n = n;
  k->launch = launch_for(n, k->launch, 0, 4);
  sp->n_links++;
  part *from = &sp->parts[q], *to = &sp->parts[p];
  wf_stream *sq = wfp_part_stream(from->ps), *s = wfp_part_stream(to->ps);
  size_t m = k->launch;
  wf_status st;
  if (!to->recv_free[q]) TRY(wf_event_create(to->dev, 0, &to->recv_free[q]), "creating an event");
  if ((st = dbuf_reserve(sp, &k->src_idx, from->dev, sq, (m + 1) * 4)) != WF_OK ||
      (st = dbuf_reserve(sp, &k->send, from->dev, sq, m * 32)) != WF_OK ||
      (st = dbuf_reserve(sp, &k->recv, to->dev, s, m * 32)) != WF_OK ||
      (st = dbuf_reserve(sp, &k->dst_idx, to->dev, s, (m + 1) * 4)) != WF_OK)
    return st;
  *out = k;
  return WF_OK;
}

/* After a repartition: the info block, a fresh graph at the next frame. */
static void partitioned(wf_particles *sp, uint64_t halo) {
  for (int p = 0; p < sp->np; p++) {
    sp->info.owned[p] = sp->parts[p].n_owned;
    sp->info.ghosts[p] = sp->parts[p].n_local - sp->parts[p].n_owned;
    sp->info.slab_lo[p] = sp->parts[p].lo;
    sp->info.slab_hi[p] = sp->parts[p].hi;
  }
  sp->info.axis = sp->axis;
  sp->info.skin = sp->skin;
  sp->info.halo_bytes_per_frame = halo * (uint64_t)sp->desc.substeps;
  sp->distributed = true;
  sp->frames_since = 0;
  /* the contact kernels check the drift (wfp_drift_ctl); one partition has no boundaries */
  for (int p = 0; p < sp->np; p++)
    wfp_part_set_drift(sp->parts[p].ps,
                            sp->np > 1 ? wf_buffer_ptr(sp->parts[p].anchor.b) : NULL,
                            wf_buffer_ptr(sp->parts[p].flag));
}

/* Distributes the master state (sp->pos/vel/mat, global-id order) over the partitions: owners by
 * slab, ghosts within w of each slab, the links and their index lists. */
static wf_status distribute(wf_particles *sp) {
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
  float cell = sp->desc.cell_size > 0.0f ? sp->desc.cell_size : 2.0f * rmax;
  if (cell != sp->cell && cell > 0.0f) {
    for (int p = 0; p < np; p++) {
      wf_status st = wfp_cell_size_set(sp->parts[p].ps, cell);
      if (st != WF_OK) return st;
    }
    sp->cell = cell;
  }
  sp->rmax = rmax, sp->vmax = vmax;
  float skin = skin_for(sp, vmax);
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
          : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
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
      st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  }
  /* the partitions' particles; ghost slots of each partition by global id */
  uint32_t *slot_of = malloc((size_t)(n ? n : 1) * 4); /* per `to`, reused: ghost slot */
  if (st == WF_OK && !slot_of)
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  size_t most = 1;
  for (int p = 0; p < np; p++)
    most = members[p].n > most ? members[p].n : most;
  wfp_f4 *lp = st == WF_OK ? malloc(most * sizeof *lp) : NULL;
  wfp_f4 *lv = st == WF_OK ? malloc(most * sizeof *lv) : NULL;
  uint16_t *lm = st == WF_OK ? malloc(most * sizeof *lm) : NULL;
  float *la = st == WF_OK ? malloc(most * sizeof *la) : NULL;
  uint32_t *idx = st == WF_OK ? malloc((most + 1) * 4) : NULL;
  if (st == WF_OK && (!lp || !lv || !lm || !la || !idx))
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  uint32_t *gid = st == WF_OK ? malloc(most * 4) : NULL;
  if (st == WF_OK && !gid)
    st = fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  sp->n_links = 0;
  uint64_t halo = 0;
  for (int p = 0; p < np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    size_t m = members[p].n;
    for (size_t j = 0; j < m; j++) {
      uint32_t e = members[p].a[j], g = e & 0x7fffffffu;
      bool owned = !(e & 0x80000000u);
      gid[j] = g;
      if (!owned) slot_of[g] = (uint32_t)j;
      lp[j] = sp->pos[g], lv[j] = sp->vel[g], lm[j] = sp->mat[g];
      /* ghosts get no anchor (NaN never compares as moved): their owner checks them */
      la[j] = owned ? axis_of(sp->pos[g], sp->axis) : NAN;
    }
    pt->n_local = (uint32_t)m;
    pt->n_owned = owned_count[p];
    wf_stream *s = wfp_part_stream(pt->ps);
    size_t mm = set_launch(sp, pt, (uint32_t)m);
    st = wfp_part_replace(pt->ps, (uint32_t)m, lp, lv, lm, gid);
    if (st == WF_OK) st = dbuf_reserve(sp, &pt->anchor, pt->dev, s, mm * 4);
    if (st == WF_OK && m && (st = wf_upload(pt->anchor.b, 0, la, m * 4, s)) != WF_OK)
      fail_gpu(sp->name, st, "uploading anchors");
    /* the snapshot a rerun starts from */
    if (st == WF_OK) st = dbuf_reserve(sp, &pt->snap_pos, pt->dev, s, mm * 16);
    if (st == WF_OK) st = dbuf_reserve(sp, &pt->snap_vel, pt->dev, s, mm * 16);
    if (st == WF_OK && m && (st = wf_upload(pt->snap_pos.b, 0, lp, m * 16, s)) == WF_OK)
      st = wf_upload(pt->snap_vel.b, 0, lv, m * 16, s);
    if (st != WF_OK) break;
    if (st == WF_OK) st = drift_arm(sp, pt);
    /* the links into p */
    for (int q = 0; q < np && st == WF_OK; q++) {
      grow_list *gs = &ghost_src[q][p];
      if (!gs->n) continue;
      link *k = NULL;
      size_t c = gs->n;
      if ((st = add_link(sp, q, p, (uint32_t)c, &k)) != WF_OK) break;
      wf_stream *sq = wfp_part_stream(sp->parts[q].ps);
      idx[0] = (uint32_t)c; /* the count first (see link) */
      for (size_t j = 0; j < c; j++)
        idx[1 + j] = loc[gs->a[j]];
      if ((st = wf_upload(k->src_idx.b, 0, idx, (c + 1) * 4, sq)) != WF_OK) break;
      for (size_t j = 0; j < c; j++)
        idx[1 + j] = slot_of[gs->a[j]];
      if ((st = wf_upload(k->dst_idx.b, 0, idx, (c + 1) * 4, s)) != WF_OK) break;
      halo += (uint64_t)c * 32;
    }
  }
  for (int q = 0; q < np; q++) {
    free(members[q].a);
    for (int p = 0; p < np; p++)
      free(ghost_src[q][p].a);
  }
  free(loc), free(slot_of), free(lp), free(lv), free(lm), free(la), free(idx), free(gid);
  if (st != WF_OK) return st;
  for (int p = 0; p < np; p++)
    TRY(wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps)), "uploading halo lists");
  partitioned(sp, halo);
  return WF_OK;
}

/* The clock of the system (partition 0's; every partition keeps the same one): the simulated
 * seconds and the substep count at the start of the solver's clock block. */
static wf_status clock_get(wf_particles *sp, double *time, uint64_t *substeps) {
  wf_buffer *clock;
  wfp_part *ps = sp->parts[0].ps;
  TRY(wfp_part_state_buffers(ps, NULL, NULL, &clock), "finding the clock");
  TRY(wf_stream_synchronize(wfp_part_stream(ps)), "waiting for the solver");
  TRY(wf_download(time, clock, 0, 8), "reading the clock");
  TRY(wf_download(substeps, clock, 8, 8), "reading the clock");
  return WF_OK;
}

static wf_status launch_frames(wf_particles *sp, int frames);
static wf_status state_of(wf_particles *sp, float (*pos)[4], float (*vel)[4]);

/* Every partition back to the snapshot of the last repartition, state and clock; the layout,
 * anchors and links are still that repartition's. */
static wf_status restore(wf_particles *sp) {
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    wf_stream *s = wfp_part_stream(pt->ps);
    wf_buffer *pos, *vel;
    TRY(wfp_part_state_buffers(pt->ps, &pos, &vel, NULL), "finding the state buffers");
    size_t m = pt->n_local;
    if (m) TRY(wf_copy(pos, 0, pt->snap_pos.b, 0, m * 16, s), "restoring the snapshot");
    if (m) TRY(wf_copy(vel, 0, pt->snap_vel.b, 0, m * 16, s), "restoring the snapshot");
    wf_status st = wfp_clock_set(pt->ps, sp->snap_time, sp->snap_substeps);
    if (st != WF_OK) return st;
    if ((st = drift_arm(sp, pt)) != WF_OK) return st;
  }
  sp->frames_since = 0;
  return WF_OK;
}

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
    if (!wfp_extent_get(sp->parts[p].ps, l, h)) continue;
    any = true;
    for (int k = 0; k < 3; k++)
      lo[k] = l[k] < lo[k] ? l[k] : lo[k], hi[k] = h[k] > hi[k] ? h[k] : hi[k];
  }
  return any;
}

static size_t counts_len(int np) { return (size_t)np * (size_t)np + 1 + WFP_HIST_BINS; }

/* Classifies every partition's owned particles for the slabs `sl` (tags on the devices) and
 * returns the counts: counts[q * counts_len + o * np + d] = particles q owns now that o will own
 * and d will hold; counts[q * counts_len + np * np] = the largest speed in q (float bits). With
 * `hist` the devices also count q's owned particles in WFP_HIST_BINS bins of their coordinate
 * along the slab axis (from hist_lo, hist_scale bins per metre; else zeros), which
 * read_histograms puts from counts[q * counts_len + np * np + 1]. */
static wf_status classify_all(wf_particles *sp, const wfp_slabs *sl, uint32_t *counts,
                              bool hist, float hist_lo, float hist_scale) {
  int np = sp->np;
  size_t len = counts_len(np);
  for (int p = 0; p < np; p++) {
    part *pt = &sp->parts[p];
    wf_stream *s = wfp_part_stream(pt->ps);
    wf_status st;
    if ((st = dbuf_reserve(sp, &pt->counts, pt->dev, s, len * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->tag, pt->dev, s, ((size_t)pt->n_local + 1) * 4)) != WF_OK)
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
  for (int p = 0; p < np; p++)
    TRY(wf_download(counts + (size_t)p * len, sp->parts[p].counts.b, 0, head * 4),
        "reading the counts");
  return WF_OK;
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

/* New slab boundaries along the current axis at the quantiles of the classification's
 * histograms (cnt as classify_all returns it), partition q's particles weighing cost[q] each
 * (NULL: 1), interpolated within a bin as if its weight were spread evenly. False (nothing
 * changed) when the histograms are empty. */
/* Completes cnt (as classify_all returned it, the frames waited for) with every partition's
 * histogram. */
static wf_status read_histograms(wf_particles *sp, uint32_t *cnt) {
  size_t len = counts_len(sp->np), head = (size_t)sp->np * sp->np + 1;
  for (int p = 0; p < sp->np; p++)
    TRY(wf_download(cnt + (size_t)p * len + head, sp->parts[p].counts.b, head * 4,
                    (size_t)WFP_HIST_BINS * 4),
        "reading the histograms");
  return WF_OK;
}

static bool cut_at_histogram(wf_particles *sp, const uint32_t *cnt, const double *cost,
                             float lo, float scale) {
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
  wf_status st =
      c && la && (axis == sp->axis || lp)
          ? WF_OK
          : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  size_t k = 0;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    part *pt = &sp->parts[p];
    if (!pt->n_local) continue;
    if (lp && (st = wfp_part_get(pt->ps, lp, NULL, NULL, NULL)) != WF_OK) break;
    if ((st = wf_download(la, pt->anchor.b, 0, (size_t)pt->n_local * 4)) != WF_OK) {
      fail_gpu(sp->name, st, "reading the anchors");
      break;
    }
    for (uint32_t i = 0; i < pt->n_local && k < total; i++)
      if (la[i] == la[i]) c[k++] = lp ? axis_of(lp[i], axis) : la[i];
  }
  if (st == WF_OK) cut_at_quantiles(sp, axis, c, k);
  free(c), free(la), free(lp);
  return st;
}

/* Whether the frame being enqueued times every partition's substeps (more than one, and
 * WF_BALANCE_TIME or the measure's FRAME_STAMPED). */
static bool stamping(const wf_particles *sp) {
  return sp->np > 1 && (sp->desc.balance == WF_BALANCE_TIME || sp->mode == FRAME_STAMPED);
}

/* Room for every partition's stamps (once: a captured frame holds the address). */
static wf_status stamps_reserve(wf_particles *sp) {
  for (int p = 0; p < sp->np; p++) {
    part *pt = &sp->parts[p];
    size_t bytes = 4 * (size_t)sp->desc.substeps * 8;
    wf_status st = dbuf_reserve(sp, &pt->stamps, pt->dev, wfp_part_stream(pt->ps), bytes);
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

/* The stamped frame that was waited for: partition p's substep k in before and after
 * [p * substeps + k] (substep_times; the stamps of one device's clock, so no clocks are
 * compared). *ok false when a partition has no stamps or they are not usable; the status is
 * that of the downloads. */
static wf_status stamped_times(wf_particles *sp, double *before, double *after, bool *ok) {
  const int K = sp->desc.substeps;
  *ok = true;
  uint64_t *ns = malloc(4 * (size_t)K * sizeof *ns);
  if (!ns)
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  wf_status st = WF_OK;
  for (int p = 0; p < sp->np && *ok; p++) {
    size_t at = (size_t)p * (size_t)K;
    if (!sp->parts[p].stamps.b)
      *ok = false;
    else if ((st = wf_download(ns, sp->parts[p].stamps.b, 0, 4 * (size_t)K * 8)) != WF_OK) {
      st = fail_gpu(sp->name, st, "reading the time stamps");
      break;
    } else
      *ok = substep_times(ns, K, before + at, after + at);
  }
  free(ns);
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
  if (!dt)
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  bool ok = false;
  wf_status st = stamped_times(sp, dt, dt + n, &ok);
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

/* The indices i < n of partition pt with tag[i] & bit, on its stream: at out[0..), or with
 * `counted` their count at out[0] and the indices from out[1] (a link's lists). */
static wf_status select_tagged(wf_particles *sp, part *pt, uint32_t n, uint32_t bit,
                               dbuf *out, bool counted) {
  wf_stream *s = wfp_part_stream(pt->ps);
  size_t tb = (wfp_select_temp_bytes(pt->dev, n) + 15) / 16 * 16; /* the count after it, aligned */
  wf_status st;
  if ((st = dbuf_reserve(sp, &pt->select_temp, pt->dev, s, tb + 16)) != WF_OK) return st;
  uint32_t *count = (uint32_t *)((char *)wf_buffer_ptr(pt->select_temp.b) + tb);
  uint32_t *idx = wf_buffer_ptr(out->b);
  wfp_select_args a = {wf_buffer_ptr(pt->tag.b),
                       bit,
                       NULL,
                       counted ? idx + 1 : idx,
                       counted ? idx : count,
                       n,
                       tb ? wf_buffer_ptr(pt->select_temp.b) : NULL,
                       tb};
  TRY(wf_launch(&wfp_select, 1, &a, sizeof a, s), "launching a selection");
  TRY(wf_buffer_touch(out->b, s), "ordering a selection");
  return WF_OK;
}

/* The owned particles' indices (anchor not NaN: after a distribution from the host as after one
 * on the devices) at out[0..n_owned), on pt's stream. */
static wf_status select_owned(wf_particles *sp, part *pt, dbuf *out) {
  wf_stream *s = wfp_part_stream(pt->ps);
  size_t tb = (wfp_select_temp_bytes(pt->dev, pt->n_local) + 15) / 16 * 16;
  wf_status st = dbuf_reserve(sp, &pt->select_temp, pt->dev, s, tb + 16);
  if (st != WF_OK) return st;
  uint32_t *count = (uint32_t *)((char *)wf_buffer_ptr(pt->select_temp.b) + tb);
  wfp_select_args a = {.tag = NULL,
                       .bit = 0u,
                       .anchor = wf_buffer_ptr(pt->anchor.b),
                       .out = wf_buffer_ptr(out->b),
                       .count = count,
                       .n = pt->n_local,
                       .temp = tb ? wf_buffer_ptr(pt->select_temp.b) : NULL,
                       .temp_bytes = tb};
  TRY(wf_launch(&wfp_select, 1, &a, sizeof a, s), "selecting the owned particles");
  TRY(wf_buffer_touch(out->b, s), "ordering a selection");
  return WF_OK;
}

/* The repartition on the devices, from the partitions' current state (which must be exact: no
 * drift flag raised). Each partition classifies its owned particles by the new slabs; the host
 * reads the counts (its one wait), rebalances the slabs if needed, and then, without waiting:
 * each partition packs what every partition (itself included) will hold of its particles and
 * sends it; each receiver sorts what it got by global id into its new arrays (and snapshot,
 * anchors and tags); each pair's halo lists are selected from the tags on both sides. */
static wf_status device_repartition(wf_particles *sp) {
  int np = sp->np;
  size_t len = counts_len(np);
  uint32_t *cnt = malloc((size_t)np * len * 4);
  if (!cnt)
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  sp->skin = skin_for(sp, sp->vmax);
  wf_status st = WF_OK;
  uint32_t owned[MAXP];
  double cost[MAXP];
  bool timed = false;
  float hist_lo = 0.0f, hist_scale = 0.0f;
  bool hist = hist_range(sp, &hist_lo, &hist_scale);
  for (bool rebalanced = false;;) {
    wfp_slabs sl = slabs_of(sp);
    /* the histograms only where they may be used: not after a rebalance */
    if ((st = classify_all(sp, &sl, cnt, hist && !rebalanced, hist_lo, hist_scale)) != WF_OK) break;
    uint32_t most = 0;
    for (int o = 0; o < np; o++) {
      owned[o] = 0;
      for (int q = 0; q < np; q++)
        owned[o] += cnt[(size_t)q * len + (size_t)o * np + o];
      most = owned[o] > most ? owned[o] : most;
    }
    double mean = (double)sp->count / np;
    /* balance by time: the partitions' compute in the last frame, read once the classification
     * (after the frame) was waited for */
    if (!rebalanced && stamping(sp) && (st = frame_costs(sp, cost, &timed)) != WF_OK) break;
    double over = (double)most / mean - 1.0;
    if (timed) {
      double tmax = 0.0, tsum = 0.0;
      for (int p = 0; p < np; p++)
        tmax = fmax(tmax, sp->info.compute_ms[p]), tsum += sp->info.compute_ms[p];
      over = tmax * np / tsum - 1.0;
    }
    if (rebalanced || !sp->count || over <= sp->desc.imbalance) break;
    if ((st = rebalance_device(sp, hist ? cnt : NULL, timed ? cost : NULL, hist_lo, hist_scale)) !=
        WF_OK)
      break;
    rebalanced = true;
  }
  if (st != WF_OK) {
    free(cnt);
    return st;
  }
  sp->vmax = 0.0f;
  for (int q = 0; q < np; q++) {
    float v;
    memcpy(&v, &cnt[(size_t)q * len + (size_t)np * np], 4);
    sp->vmax = v > sp->vmax ? v : sp->vmax;
  }
  wfp_slabs sl = slabs_of(sp);
  for (int p = 0; p < np; p++) {
    sp->parts[p].lo = p == 0 ? -INFINITY : sp->cuts[p - 1];
    sp->parts[p].hi = p == np - 1 ? INFINITY : sp->cuts[p];
  }
  /* sends[q][d]: what q sends d; received[d] = the sum over q */
  uint32_t sends[MAXP][MAXP], received[MAXP] = {0};
  for (int q = 0; q < np; q++)
    for (int d = 0; d < np; d++) {
      uint32_t n = 0;
      for (int o = 0; o < np; o++)
        n += cnt[(size_t)q * len + (size_t)o * np + d];
      sends[q][d] = n;
      received[d] += n;
    }
  /* pack on the senders */
  for (int q = 0; q < np && st == WF_OK; q++) {
    part *pt = &sp->parts[q];
    wf_stream *s = wfp_part_stream(pt->ps);
    wfp_arrays a = wfp_part_arrays(pt->ps);
    for (int d = 0; d < np && st == WF_OK; d++) {
      uint32_t n = sends[q][d];
      if (!n) continue;
      outbox *o = &pt->out[d];
      if ((st = dbuf_reserve(sp, &o->idx, pt->dev, s, (size_t)n * 4)) != WF_OK ||
          (st = dbuf_reserve(sp, &o->pos, pt->dev, s, (size_t)n * 16)) != WF_OK ||
          (st = dbuf_reserve(sp, &o->vel, pt->dev, s, (size_t)n * 16)) != WF_OK ||
          (st = dbuf_reserve(sp, &o->gid, pt->dev, s, (size_t)n * 4)) != WF_OK ||
          (st = dbuf_reserve(sp, &o->mat, pt->dev, s, (size_t)n * 2)) != WF_OK ||
          (st = select_tagged(sp, pt, pt->n_local, 1u << d, &o->idx, false)) != WF_OK)
        break;
      wfp_migrate_pack_args pa = {wf_buffer_ptr(o->idx.b),
                                  a.pos,
                                  a.vel,
                                  a.gid,
                                  a.mat,
                                  wf_buffer_ptr(o->pos.b),
                                  wf_buffer_ptr(o->vel.b),
                                  wf_buffer_ptr(o->gid.b),
                                  wf_buffer_ptr(o->mat.b)};
      if ((st = wf_launch(&wfp_migrate_pack, n, &pa, sizeof pa, s)) != WF_OK) {
        fail_gpu(sp->name, st, "launching a migration pack");
        break;
      }
      dbuf *bufs[] = {&o->pos, &o->vel, &o->gid, &o->mat};
      for (int b = 0; b < 4 && st == WF_OK; b++)
        if ((st = wf_buffer_touch(bufs[b]->b, s)) != WF_OK) fail_gpu(sp->name, st, "ordering");
    }
    /* the packs read the arrays a resize or a released graph may free on another stream */
    if (st == WF_OK && (st = wfp_part_touch(pt->ps)) != WF_OK)
      fail_gpu(sp->name, st, "ordering the particle arrays");
  }
  /* send: every receiver gets its senders' particles one after the other, by sender */
  for (int d = 0; d < np && st == WF_OK; d++) {
    part *pt = &sp->parts[d];
    wf_stream *s = wfp_part_stream(pt->ps);
    size_t m = received[d] ? received[d] : 1;
    if ((st = dbuf_reserve(sp, &pt->in_pos, pt->dev, s, m * 16)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->in_vel, pt->dev, s, m * 16)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->in_gid, pt->dev, s, m * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->in_mat, pt->dev, s, m * 2)) != WF_OK)
      break;
    size_t at = 0;
    for (int q = 0; q < np && st == WF_OK; q++) {
      uint32_t n = sends[q][d];
      if (!n) continue;
      outbox *o = &sp->parts[q].out[d];
      wf_stream *c = sp->parts[q].copy;
      if ((st = wf_copy(pt->in_pos.b, at * 16, o->pos.b, 0, (size_t)n * 16, c)) != WF_OK ||
          (st = wf_copy(pt->in_vel.b, at * 16, o->vel.b, 0, (size_t)n * 16, c)) != WF_OK ||
          (st = wf_copy(pt->in_gid.b, at * 4, o->gid.b, 0, (size_t)n * 4, c)) != WF_OK ||
          (st = wf_copy(pt->in_mat.b, at * 2, o->mat.b, 0, (size_t)n * 2, c)) != WF_OK) {
        fail_gpu(sp->name, st, "sending migrating particles");
        break;
      }
      at += n;
    }
  }
  /* receive: sort by global id into the new arrays */
  int32_t glo[3], ghi[3];
  bool have_extent = extent_union(sp, glo, ghi);
  int bits = key_bits(sp->count);
  for (int d = 0; d < np && st == WF_OK; d++) {
    part *pt = &sp->parts[d];
    wf_stream *s = wfp_part_stream(pt->ps);
    for (int q = 0; q < np && st == WF_OK; q++)
      if (sends[q][d] && (st = wf_stream_wait_stream(s, sp->parts[q].copy)) != WF_OK)
        fail_gpu(sp->name, st, "waiting for migrating particles");
    uint32_t m = received[d];
    /* the grid's box: the last frame's extent, along the axis only the slab and its ghosts */
    int32_t lo[3], hi[3];
    for (int k = 0; k < 3; k++)
      lo[k] = have_extent ? glo[k] : 1, hi[k] = have_extent ? ghi[k] : 0;
    if (have_extent) {
      int bad = 0;
      float inv = 1.0f / sp->cell;
      if (isfinite(pt->lo)) {
        int32_t c = wfp_cell_coord(pt->lo - sl.w, inv, &bad);
        lo[sp->axis] = c > lo[sp->axis] ? c : lo[sp->axis];
      }
      if (isfinite(pt->hi)) {
        int32_t c = wfp_cell_coord(pt->hi + sl.w, inv, &bad);
        hi[sp->axis] = c < hi[sp->axis] ? c : hi[sp->axis];
      }
      if (lo[sp->axis] > hi[sp->axis]) lo[sp->axis] = hi[sp->axis] = glo[sp->axis];
    }
    size_t mm = set_launch(sp, pt, m);
    size_t tb = wfp_sort_temp_bytes(pt->dev, m, bits);
    if ((st = wfp_part_resize(pt->ps, m, sp->rmax, lo, hi)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->keys, pt->dev, s, mm * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->vals, pt->dev, s, mm * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->keys_out, pt->dev, s, mm * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->vals_out, pt->dev, s, mm * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->sort_temp, pt->dev, s, tb)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->anchor, pt->dev, s, mm * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->tag, pt->dev, s, mm * 4)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->snap_pos, pt->dev, s, mm * 16)) != WF_OK ||
        (st = dbuf_reserve(sp, &pt->snap_vel, pt->dev, s, mm * 16)) != WF_OK)
      break;
    pt->n_local = m;
    pt->n_owned = owned[d];
    if (!m) continue;
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
    wfp_migrate_args ma = {sl,
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
                           wf_buffer_ptr(pt->tag.b)};
    if ((st = wf_launch(&wfp_migrate_keys, m, &ka, sizeof ka, s)) != WF_OK ||
        (st = wf_launch(&wfp_sort, 1, &sa, sizeof sa, s)) != WF_OK ||
        (st = wf_launch(&wfp_migrate, m, &ma, sizeof ma, s)) != WF_OK)
      fail_gpu(sp->name, st, "launching the migration");
    if (st == WF_OK && (st = wfp_part_touch(pt->ps)) != WF_OK)
      fail_gpu(sp->name, st, "ordering the particle arrays");
  }
  /* the halo lists: r -> d carries the particles r owns that d holds as ghosts */
  sp->n_links = 0;
  uint64_t halo = 0;
  for (int d = 0; d < np && st == WF_OK; d++)
    for (int r = 0; r < np && st == WF_OK; r++) {
      if (r == d) continue;
      uint32_t n = 0;
      for (int q = 0; q < np; q++)
        n += cnt[(size_t)q * len + (size_t)r * np + d];
      if (!n) continue;
      link *k = NULL;
      if ((st = add_link(sp, r, d, n, &k)) != WF_OK ||
          (st = select_tagged(sp, &sp->parts[r], sp->parts[r].n_local, 1u << d, &k->src_idx,
                              true)) != WF_OK ||
          (st = select_tagged(sp, &sp->parts[d], sp->parts[d].n_local, 1u << (16 + r), &k->dst_idx,
                              true)) != WF_OK)
        break;
      halo += (uint64_t)n * 32;
    }
  for (int p = 0; p < np && st == WF_OK; p++)
    st = drift_arm(sp, &sp->parts[p]);
  free(cnt);
  if (st == WF_OK) partitioned(sp, halo);
  return st;
}

/* Makes the partitions' state exact: while a particle moved further than the skin allowed since
 * the last repartition, runs the frames since then again from its snapshot with twice the skin. */
static wf_status rerun_if_moved(wf_particles *sp) {
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
    if ((st = restore(sp)) != WF_OK || (st = device_repartition(sp)) != WF_OK ||
        (st = launch_frames(sp, frames)) != WF_OK)
      return st;
  }
}

/* Brings the master copy (sp->pos/vel/mat) up to date with the partitions. */
static wf_status settle(wf_particles *sp) {
  if (sp->distributed && sp->frames_since > 0) {
    wf_status st = rerun_if_moved(sp);
    if (st != WF_OK) return st;
  }
  return gather(sp, sp->pos, sp->vel, sp->mat);
}

/* Between frames: the first distribution from the master copy on the host; later ones on the
 * devices. The clock at the end is the snapshot's. */
static wf_status repartition(wf_particles *sp) {
  double t0 = now_ms();
  wf_status st;
  /* repartition_ms: the host's time in the repartition, not its wait for the frames before */
  if (!sp->distributed) {
    st = distribute(sp);
    if (st == WF_OK) st = clock_get(sp, &sp->snap_time, &sp->snap_substeps);
  } else {
    st = rerun_if_moved(sp);
    t0 = now_ms();
    if (st == WF_OK && sp->skin_factor > 1.0f) /* back towards the automatic skin, slowly */
      sp->skin_factor = fmaxf(1.0f, 0.9f * sp->skin_factor);
    /* the partitions are idle: the clock is read without waiting for the repartition */
    if (st == WF_OK) st = clock_get(sp, &sp->snap_time, &sp->snap_substeps);
    if (st == WF_OK) st = device_repartition(sp);
  }
  sp->info.repartitions++;
  sp->info.repartition_ms += now_ms() - t0;
  return st;
}

/* ---- the frame ------------------------------------------------------------------------------ */

/* Partition p's packs of a halo exchange, after its substep: they wait for its copies before
 * (the send buffers are reused). */
static wf_status halo_pack(wf_particles *sp, int p) {
  wf_stream *s = wfp_part_stream(sp->parts[p].ps);
  bool sends = false;
  for (int l = 0; l < sp->n_links; l++)
    sends |= sp->links[l].from == p;
  if (sends) TRY(wf_stream_wait_stream(s, sp->parts[p].copy), "ordering the packs");
  /* (the drift check runs in the partitions' contact kernels, wfp_part_set_drift) */
  for (int l = 0; l < sp->n_links && sp->mode != FRAME_COPIES; l++) {
    link *k = &sp->links[l];
    if (k->from != p) continue;
    wf_buffer *pos, *vel;
    TRY(wfp_part_state_buffers(sp->parts[p].ps, &pos, &vel, NULL), "state buffers");
    wfp_f4 *send = wf_buffer_ptr(k->send.b);
    const uint32_t *idx = wf_buffer_ptr(k->src_idx.b);
    wfp_halo_args pa = {idx + 1, wf_buffer_ptr(pos), wf_buffer_ptr(vel),
                        send,    send + k->launch,   idx};
    TRY(wf_launch(&wfp_halo_pack, k->launch, &pa, sizeof pa, s), "launching a halo pack");
  }
  return WF_OK;
}

/* The copies of a halo exchange, after every partition's packs. Every copy waits for its pack and
 * for the receiver's last read of the receive buffer (its unpack of the exchange before, or the
 * frame's start), not for the receiver's substep: the copy runs while the receiver computes. */
static wf_status halo_copy(wf_particles *sp) {
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    wf_stream *c = sp->parts[k->from].copy;
    TRY(wf_stream_wait_stream(c, wfp_part_stream(sp->parts[k->from].ps)),
        "ordering a halo copy");
    TRY(wf_stream_wait_event(c, sp->parts[k->to].recv_free[k->from]), "ordering a halo copy");
    if (sp->mode != FRAME_NO_COPY)
      TRY(wf_copy(k->recv.b, 0, k->send.b, 0, (size_t)k->launch * 32, c), "copying a halo");
  }
  return WF_OK;
}

/* Partition `to` waits for the copies into it. */
static wf_status halo_wait(wf_particles *sp, int to) {
  wf_stream *s = wfp_part_stream(sp->parts[to].ps);
  for (int l = 0; l < sp->n_links; l++)
    if (sp->links[l].to == to)
      TRY(wf_stream_wait_stream(s, sp->parts[sp->links[l].from].copy), "waiting for a halo copy");
  return WF_OK;
}

/* ... and unpacks them (with `keys`, inside a substep after the other particles' keys: the
 * ghosts' keys too). */
static wf_status halo_unpack(wf_particles *sp, int to, bool keys) {
  wf_stream *s = wfp_part_stream(sp->parts[to].ps);
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    if (k->to != to) continue;
    if (sp->mode != FRAME_COPIES) {
      wf_buffer *pos, *vel;
      TRY(wfp_part_state_buffers(sp->parts[to].ps, &pos, &vel, NULL), "state buffers");
      wfp_f4 *recv = wf_buffer_ptr(k->recv.b);
      const uint32_t *idx = wf_buffer_ptr(k->dst_idx.b);
      wfp_halo_keys_args ua = {
          {idx + 1, recv, recv + k->launch, wf_buffer_ptr(pos), wf_buffer_ptr(vel), idx},
          wfp_part_keys_args(sp->parts[to].ps)};
      if (keys)
        TRY(wf_launch(&wfp_halo_unpack_keys, k->launch, &ua, sizeof ua, s),
            "launching a halo unpack");
      else
        TRY(wf_launch(&wfp_halo_unpack, k->launch, &ua.unpack, sizeof ua.unpack, s),
            "launching a halo unpack");
    }
    /* (a frame of copies alone has no unpack: the receiver is done with the buffer once it
     * waited for the copy) */
    TRY(wf_event_record(sp->parts[to].recv_free[k->from], s), "ordering a halo copy");
  }
  return WF_OK;
}

/* Before a frame's first substep: the first copy into each receive buffer waits for everything
 * queued on the receiver's stream so far (the unpacks of the frame before among it), recorded in
 * its event. Its copy stream also becomes the buffer's last user (wf_buffer_touch, which orders
 * the same), so the copy's own ordering (wf_copy waits for its buffers' last users) does not make
 * it wait for the receiver's substep 0 after all when frames are launched stage by stage. */
static wf_status halo_frame_start(wf_particles *sp) {
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    TRY(wf_event_record(sp->parts[k->to].recv_free[k->from],
                        wfp_part_stream(sp->parts[k->to].ps)),
        "ordering a halo copy");
    TRY(wf_buffer_touch(k->recv.b, sp->parts[k->from].copy), "ordering a halo copy");
  }
  return WF_OK;
}

static wf_status touch_links(wf_particles *sp) {
  for (int l = 0; l < sp->n_links; l++) {
    link *k = &sp->links[l];
    wf_stream *sf = wfp_part_stream(sp->parts[k->from].ps);
    wf_stream *sto = wfp_part_stream(sp->parts[k->to].ps);
    TRY(wf_buffer_touch(k->src_idx.b, sf), "ordering halo buffers");
    TRY(wf_buffer_touch(k->send.b, sf), "ordering halo buffers");
    TRY(wf_buffer_touch(k->recv.b, sto), "ordering halo buffers");
    TRY(wf_buffer_touch(k->dst_idx.b, sto), "ordering halo buffers");
  }
  for (int p = 0; p < sp->np; p++) {
    wf_stream *s = wfp_part_stream(sp->parts[p].ps);
    if (sp->parts[p].anchor.b) TRY(wf_buffer_touch(sp->parts[p].anchor.b, s), "ordering");
    TRY(wf_buffer_touch(sp->parts[p].flag, s), "ordering");
  }
  return WF_OK;
}

/* Stamp i of partition p's frame, on its stream: 4k before substep k, 4k + 1 after its keys of
 * the particles it owns, 4k + 2 when the ghosts of the substep before have come in (before their
 * unpack), 4k + 3 after the substep and its packs. So a substep's times hold all of the
 * partition's own work, the halo's packs and unpacks too, and leave out its wait for the copies
 * (the overlap measure's compute; WF_BALANCE_TIME's cost). */
static wf_status stamp(wf_particles *sp, int p, int i) {
  if (!stamping(sp)) return WF_OK;
  part *pt = &sp->parts[p];
  wf_stream *s = wfp_part_stream(pt->ps);
  wfp_stamp_args a = {(uint64_t *)wf_buffer_ptr(pt->stamps.b) + i};
  TRY(wf_launch(&wfp_stamp, 1, &a, sizeof a, s), "launching a time stamp");
  TRY(wf_buffer_touch(pt->stamps.b, s), "ordering the time stamps");
  return WF_OK;
}

/* K substeps of every partition. A partition packs its halo right after its substep, and the
 * copies follow; from the second substep on, a partition first keys the particles it owns
 * (wfp_substep_enqueue_keys, skipping the ghosts: their anchors are NaN), and only then waits for
 * its ghosts, unpacks and keys them (wfp_halo_unpack_keys) and runs the rest of its substep, so
 * the copies run while it keys. The exchange after the last substep is unpacked at the frame's
 * end: a frame ends, as it starts, with its ghosts in place. */
static wf_status enqueue_frame(wf_particles *sp) {
  wf_status st;
  const bool work = sp->mode != FRAME_COPIES, split = sp->np > 1;
  for (int p = 0; p < sp->np && work; p++)
    if ((st = wfp_frame_enqueue_begin(sp->parts[p].ps)) != WF_OK) return st;
  if (split && (st = halo_frame_start(sp)) != WF_OK) return st;
  const int K = sp->desc.substeps;
  for (int k = 0; k < K; k++) {
    for (int p = 0; p < sp->np && work; p++) {
      wfp_part *ps = sp->parts[p].ps;
      const bool ghosts = k > 0 && split; /* the exchange after substep k - 1 comes in */
      const float *skip = ghosts ? wf_buffer_ptr(sp->parts[p].anchor.b) : NULL;
      if ((st = stamp(sp, p, 4 * k)) != WF_OK) return st;
      if ((st = wfp_substep_enqueue_keys(ps, skip)) != WF_OK) return st;
      if ((st = stamp(sp, p, 4 * k + 1)) != WF_OK) return st;
      if (ghosts && (st = halo_wait(sp, p)) != WF_OK) return st;
      if ((st = stamp(sp, p, 4 * k + 2)) != WF_OK) return st;
      if (ghosts && (st = halo_unpack(sp, p, true)) != WF_OK) return st;
      if ((st = wfp_substep_enqueue_rest(ps)) != WF_OK) return st;
      if (split && (st = halo_pack(sp, p)) != WF_OK) return st;
      if ((st = stamp(sp, p, 4 * k + 3)) != WF_OK) return st;
    }
    if (!split) continue;
    for (int p = 0; p < sp->np && !work; p++) /* (their waits) */
      if ((st = halo_pack(sp, p)) != WF_OK) return st;
    if ((st = halo_copy(sp)) != WF_OK) return st;
    for (int p = 0; p < sp->np && (!work || k == K - 1); p++)
      if ((st = halo_wait(sp, p)) != WF_OK || (st = halo_unpack(sp, p, false)) != WF_OK) return st;
  }
  for (int p = 0; p < sp->np && work; p++)
    if ((st = wfp_frame_enqueue_end(sp->parts[p].ps)) != WF_OK) return st;
  return touch_links(sp);
}

/* The frame of every partition, captured on partition 0's stream: the others fork from it and
 * join back at the end. The FRAME_FULL graph replaces sp->graph, updated in place where it can be
 * (the same nodes with other counts and addresses), which costs far less than a new one; the
 * other kinds go to a new graph in *g. */
static wf_status capture_mode(wf_particles *sp, int mode, wf_graph **g) {
  double t0 = now_ms();
  wf_stream *s0 = wfp_part_stream(sp->parts[0].ps);
  /* the graph replaced must have finished (after a repartition every frame has) */
  if (mode == FRAME_FULL && sp->graph && sp->frames_since > 0)
    TRY(wf_stream_synchronize(s0), "waiting for a frame");
  TRY(wf_capture_begin(s0), "beginning the frame capture");
  wf_status st = WF_OK;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    wf_stream *s = wfp_part_stream(sp->parts[p].ps);
    if (p > 0) st = wf_stream_wait_stream(s, s0);
    if (st == WF_OK && sp->np > 1) st = wf_stream_wait_stream(sp->parts[p].copy, s0);
  }
  sp->mode = mode;
  if (st == WF_OK) st = enqueue_frame(sp);
  sp->mode = FRAME_FULL;
  for (int p = 0; p < sp->np && st == WF_OK; p++) {
    wf_stream *s = wfp_part_stream(sp->parts[p].ps);
    if (p > 0) st = wf_stream_wait_stream(s0, s);
    if (st == WF_OK && sp->np > 1) st = wf_stream_wait_stream(s0, sp->parts[p].copy);
  }
  if (st != WF_OK) {
    wf_graph *dropped = NULL;
    if (wf_capture_end(s0, &dropped) == WF_OK) wf_graph_destroy(dropped);
    return st;
  }
  if (mode != FRAME_FULL) {
    TRY(wf_capture_end(s0, g), "ending the frame capture");
    return WF_OK;
  }
  TRY(wf_capture_end_update(s0, &sp->graph), "ending the frame capture");
  sp->graph_stale = false;
  sp->key_n = graph_key(sp, sp->key);
  sp->info.captures++;
  sp->info.capture_ms += now_ms() - t0;
  return WF_OK;
}

static wf_status capture(wf_particles *sp) { return capture_mode(sp, FRAME_FULL, NULL); }

/* `frames` frames of kind `mode` after whatever is queued on every stream: with graphs, g's
 * (NULL: the frame graph, captured first if the partitions changed), else stage by stage. */
static wf_status run_frames(wf_particles *sp, int frames, int mode, wf_graph *g) {
  wf_stream *s0 = wfp_part_stream(sp->parts[0].ps);
  wf_status st;
  if (stamping(sp) && (st = stamps_reserve(sp)) != WF_OK) return st;
  /* after whatever the repartition queued on the other streams */
  for (int p = 0; p < sp->np; p++) {
    if (p > 0) TRY(wf_stream_wait_stream(s0, wfp_part_stream(sp->parts[p].ps)), "ordering");
    if (sp->np > 1) TRY(wf_stream_wait_stream(s0, sp->parts[p].copy), "ordering");
  }
  if (sp->desc.no_graph) {
    for (int f = 0; f < frames; f++) {
      for (int p = 0; p < sp->np; p++) /* the frames of all partitions start together */
        TRY(wf_stream_wait_stream(wfp_part_stream(sp->parts[p].ps), s0), "ordering");
      sp->mode = mode;
      st = enqueue_frame(sp);
      sp->mode = FRAME_FULL;
      if (st != WF_OK) return st;
      for (int p = 1; p < sp->np; p++)
        TRY(wf_stream_wait_stream(s0, wfp_part_stream(sp->parts[p].ps)), "ordering");
    }
  } else {
    if (!g && (!sp->graph || sp->graph_stale || !graph_matches(sp)) && (st = capture(sp)) != WF_OK)
      return st;
    for (int f = 0; f < frames; f++)
      TRY(wf_graph_launch(g ? g : sp->graph, s0), "launching a frame");
  }
  for (int p = 0; p < sp->np; p++) {
    wf_stream *s = wfp_part_stream(sp->parts[p].ps);
    if (p > 0) TRY(wf_stream_wait_stream(s, s0), "ordering after the frame");
    if ((st = wfp_frames_launched(sp->parts[p].ps)) != WF_OK) return st;
  }
  return WF_OK;
}

static wf_status launch_frames(wf_particles *sp, int frames) {
  if (frames <= 0) return WF_OK;
  sp->exact = false;
  wf_status st = run_frames(sp, frames, FRAME_FULL, NULL);
  if (st == WF_OK) sp->frames_since += frames;
  return st;
}

wf_status wf_particles_step_frames(wf_particles *sp, int frames) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_step_frames(sp->parts[0].ps, frames);
  if (frames < 0)
    return fail(WF_ERR_INVALID, "particles '%s': frames %d must be >= 0", sp->name, frames);
  wf_status st = WF_OK;
  for (int f = 0; f < frames && st == WF_OK; f++) {
    if (!sp->distributed || sp->frames_since >= sp->desc.repartition_frames)
      st = repartition(sp);
    if (st == WF_OK) st = launch_frames(sp, 1);
  }
  return st;
}

/* ---- how well the halo copies hide -------------------------------------------------------- */

/* The kinds of frame, interleaved frame by frame (a drift of the clocks hits all alike), after
 * one warm-up frame each, each a graph (or, with no_graph, stage by stage) timed by the host's
 * clock around the frame and a wait for it; medians into out. With more than one partition every
 * frame starts from the snapshot of the repartition (restore, not timed): a frame without the
 * copies runs on ghosts that stop moving, and particles pile up against them frame after frame,
 * which would make that kind of frame slower than an ordinary one. The fourth kind is the
 * ordinary frame with time stamps in every partition's substeps (FRAME_STAMPED, stamp): the
 * longest path through them, each substep (its packs and unpacks included, its wait for the
 * copies not) after the substep before of its partition and, but for its keys of the particles
 * it owns, of those it takes ghosts from (wf__split_critical_path), is the frame's compute, what
 * the ordinary frame would take with halo copies that cost nothing. It is the same graph as the
 * ordinary frame but for the stamps (one-thread kernels in the substeps, which would count as copy
 * time not hidden if the ordinary frame carried them). (The frame without copies is no such
 * measure: its stale ghosts change the contacts, and its packs, waits and unpacks stay.) The state
 * is not given back. */
static wf_status measure_frames(wf_particles *sp, int frames,
                                wf_overlap *out) {
  const int kinds = sp->n_links ? 4 : 1; /* no halo: nothing to leave out, copy or compare */
  const int K = sp->desc.substeps;
  wf_graph *g[4] = {NULL, NULL, NULL, NULL};            /* the ordinary frame's is sp->graph */
  double *ms = malloc((size_t)frames * 4 * sizeof *ms); /* the stamped kind's: the compute */
  /* per partition and substep: before its ghosts come in, then after */
  double *times = kinds > 1 ? malloc(2 * (size_t)sp->np * (size_t)K * sizeof *times) : NULL;
  wf_status st =
      ms && (kinds < 2 || times)
          ? WF_OK
          : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  uint8_t adj[MAXP * MAXP] = {0}; /* adj[q * np + p]: p takes ghosts from q */
  for (int l = 0; l < sp->n_links; l++)
    adj[sp->links[l].from * sp->np + sp->links[l].to] = 1;
  if (kinds > 1 && st == WF_OK) st = stamps_reserve(sp);
  if (!sp->desc.no_graph && st == WF_OK) {
    if (!sp->graph || sp->graph_stale || !graph_matches(sp)) st = capture(sp);
    for (int m = 1; m < kinds && st == WF_OK; m++)
      st = capture_mode(sp, m, &g[m]);
  }
  wf_stream *s0 = wfp_part_stream(sp->parts[0].ps);
  for (int f = -1; f < frames && st == WF_OK; f++)
    for (int m = 0; m < kinds && st == WF_OK; m++) {
      if (sp->np > 1 && (st = restore(sp)) == WF_OK)
        for (int p = 0; p < sp->np && st == WF_OK; p++)
          if ((st = wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps))) != WF_OK)
            st = fail_gpu(sp->name, st, "restoring the snapshot");
      if (st != WF_OK) break;
      double t0 = now_ms();
      st = run_frames(sp, 1, m, g[m]);
      if (st == WF_OK && (st = wf_stream_synchronize(s0)) != WF_OK)
        st = fail_gpu(sp->name, st, "waiting for a frame");
      double t = now_ms() - t0;
      if (f < 0 || st != WF_OK) continue;
      if (m < 3)
        ms[m * frames + f] = t;
      else {
        double *after = times + (size_t)sp->np * (size_t)K;
        bool ok = false;
        if ((st = stamped_times(sp, times, after, &ok)) == WF_OK && !ok)
          st = fail(WF_ERR_BACKEND,
                    "particles '%s': a partition's substep time stamps are missing or "
                    "run backwards",
                    sp->name);
        if (st == WF_OK) ms[3 * frames + f] = wf__split_critical_path(times, after, sp->np, K, adj);
      }
    }
  if (st == WF_OK)
    wf__split_medians(ms, frames, kinds, &out->frame_ms, &out->frame_no_halo_ms, &out->halo_ms,
                      &out->compute_ms);
  for (int m = 1; m < 4; m++)
    if (g[m]) wf_graph_destroy(g[m]);
  free(times);
  free(ms);
  return st;
}

/* One partition: `frames` ordinary frames (after a warm-up), each waited for, timed on the
 * host's clock; the median is the frame, its compute and the frame without halo alike. */
static wf_status measure_one(wf_particles *sp, int frames, wf_overlap *out) {
  wfp_part *ps = sp->parts[0].ps;
  double *ms = malloc((size_t)frames * sizeof *ms);
  if (!ms) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  wf_status st = WF_OK;
  for (int f = -1; f < frames && st == WF_OK; f++) {
    double t0 = now_ms();
    if ((st = wfp_part_step_frames(ps, 1)) == WF_OK &&
        (st = wf_stream_synchronize(wfp_part_stream(ps))) != WF_OK)
      st = fail_gpu(sp->name, st, "waiting for a frame");
    if (f >= 0) ms[f] = now_ms() - t0;
  }
  double none = 0.0;
  if (st == WF_OK) wf__split_medians(ms, frames, 1, &out->frame_ms, &none, &none, &none);
  out->frame_no_halo_ms = out->compute_ms = out->frame_ms;
  free(ms);
  return st;
}

/* One partition has no repartition snapshot to go back to: the measure keeps a copy of the state
 * and its clock on the host and puts it back after. */
static wf_status overlap_one(wf_particles *sp, int frames, wf_overlap *out) {
  wfp_part *ps = sp->parts[0].ps;
  uint32_t n = wfp_part_count(ps);
  float(*pos)[4] = malloc((size_t)(n ? n : 1) * 16), (*vel)[4] = malloc((size_t)(n ? n : 1) * 16);
  wf_particles_stats stats;
  wf_status st = pos && vel ? wfp_part_stats_get(ps, &stats)
                            : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory",
                                   sp->name);
  if (st == WF_OK) st = state_of(sp, pos, vel);
  bool ran = st == WF_OK;
  if (ran) st = measure_one(sp, frames, out);
  if (ran) { /* give the state back even after a failure (its own error comes first) */
    wf_status st2 = wfp_part_set_state(ps, (const float(*)[4])pos, (const float(*)[4])vel,
                                       stats.time, stats.substeps);
    if (st == WF_OK) st = st2;
  }
  free(pos), free(vel);
  out->hidden_fraction = 1.0;
  return st;
}

wf_status wf_particles_overlap_measure(wf_particles *sp, int frames, wf_overlap *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: overlap measure: NULL argument");
  memset(out, 0, sizeof *out);
  if (frames < 1)
    return fail(WF_ERR_INVALID, "particles '%s': overlap measure: frames %d must be >= 1",
                sp->name, frames);
  if (sp->np == 1) return overlap_one(sp, frames, out);
  /* start at a repartition: its snapshot is the state to give back (restore) */
  wf_status st = !sp->distributed || sp->frames_since > 0 ? repartition(sp) : WF_OK;
  bool ran = st == WF_OK;
  if (ran) st = measure_frames(sp, frames, out);
  if (ran) { /* give the state back even after a failure (its own error comes first) */
    wf_status st2 = WF_OK;
    for (int p = 0; p < sp->np && st2 == WF_OK; p++)
      if ((st2 = wf_stream_synchronize(wfp_part_stream(sp->parts[p].ps))) != WF_OK)
        st2 = fail_gpu(sp->name, st2, "waiting for the measured frames");
    if (st2 == WF_OK) st2 = restore(sp);
    if (st == WF_OK) st = st2;
  }
  if (st != WF_OK) return st;
  out->halo_bytes_per_frame = sp->info.halo_bytes_per_frame;
  out->hidden_fraction = wf__split_hidden_fraction(out->frame_ms, out->compute_ms, out->halo_ms);
  return WF_OK;
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
  if ((st = clock_get(sp, &t, &k)) != WF_OK) return st;
  uint32_t n = sp->count;
  uint32_t *gid = malloc((size_t)(n ? n : 1) * 4);
  if (!gid)
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", sp->name);
  for (uint32_t i = 0; i < n; i++)
    gid[i] = i;
  /* partition 0 must accept larger particles again: its cell size follows the desc */
  st = wfp_cell_size_set(sp->parts[0].ps, sp->desc.cell_size);
  sp->cell = 0.0f;
  for (int p = 1; p < sp->np && st == WF_OK; p++) {
    sp->parts[p].n_local = sp->parts[p].n_owned = 0;
    st = wfp_part_replace(sp->parts[p].ps, 0, NULL, NULL, NULL, NULL);
  }
  if (st == WF_OK) st = wfp_part_replace(sp->parts[0].ps, n, sp->pos, sp->vel, sp->mat, gid);
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

static wf_status after_add(wf_particles *sp) {
  sp->count = wfp_part_count(sp->parts[0].ps);
  wf_status st = master_reserve(sp, sp->count);
  if (st == WF_OK) st = gather(sp, sp->pos, sp->vel, sp->mat);
  return st;
}

/* Several partitions, after work on partition 0 alone with the whole system gathered there
 * (undistribute: the substeps run one by one, the profile): the master copy from it, and its
 * clock to every other partition, so the next frame distributes the system again. */
static wf_status after_gathered(wf_particles *sp) {
  double t = 0.0;
  uint64_t k = 0;
  wf_status st = after_add(sp);
  if (st == WF_OK) st = clock_get(sp, &t, &k);
  for (int p = 1; p < sp->np && st == WF_OK; p++)
    st = wfp_clock_set(sp->parts[p].ps, t, k);
  return st;
}

wf_status wf_particles_emit(wf_particles *sp, const wf_particles_emitter *e, uint32_t *first,
                            uint32_t *count) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_emit(sp->parts[0].ps, e, first, count);
  wf_status st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_emit(sp->parts[0].ps, e, first, count);
  return st == WF_OK ? after_add(sp) : st;
}

wf_status wf_particles_add(wf_particles *sp, uint32_t n, const float (*pos)[4],
                           const float (*vel)[4], uint32_t material, uint32_t *first) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_add(sp->parts[0].ps, n, pos, vel, material, first);
  wf_status st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_add(sp->parts[0].ps, n, pos, vel, material, first);
  return st == WF_OK ? after_add(sp) : st;
}

wf_status wf_particles_add_material(wf_particles *sp, const wf_particle_material *m,
                                    uint32_t *index) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wfp_part_add_material(sp->parts[p].ps, m, index);
    if (st != WF_OK) return st;
  }
  drop_graph(sp);
  return WF_OK;
}

wf_status wf_particles_set_material(wf_particles *sp, uint32_t index,
                                    const wf_particle_material *m) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wfp_part_set_material(sp->parts[p].ps, index, m);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_particles_add_collider(wf_particles *sp, const wf_collider_desc *c,
                                    uint32_t *index) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  for (int p = 0; p < sp->np; p++) {
    wf_status st = wfp_part_add_collider(sp->parts[p].ps, c, index);
    if (st != WF_OK) return st;
  }
  drop_graph(sp);
  return WF_OK;
}

wf_particles_params wf_particles_params_get(const wf_particles *sp) {
  return sp ? wfp_part_params_get(sp->parts[0].ps) : (wf_particles_params){0};
}

/* Every partition takes the parameters (a device block: no recapture); the desc keeps them for
 * the skin, which follows the frame time and gravity. */
wf_status wf_particles_params_set(wf_particles *sp, const wf_particles_params *p) {
  if (!sp || !p) return fail(WF_ERR_INVALID, "particles: NULL argument");
  for (int i = 0; i < sp->np; i++) {
    wf_status st = wfp_part_params_set(sp->parts[i].ps, p);
    if (st != WF_OK) return st;
  }
  sp->desc.frame_dt = p->frame_dt;
  memcpy(sp->desc.gravity, p->gravity, sizeof sp->desc.gravity);
  sp->desc.damping = p->damping;
  return WF_OK;
}

wf_status wf_particles_step_substeps(wf_particles *sp, int n) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_step_substeps(sp->parts[0].ps, n);
  wf_status st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_step_substeps(sp->parts[0].ps, n);
  return st == WF_OK ? after_gathered(sp) : st;
}

wf_status wf_particles_profile(wf_particles *sp, int substeps, wf_particles_profile_result *out) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_profile(sp->parts[0].ps, substeps, out);
  wf_status st = undistribute(sp);
  if (st == WF_OK) st = wfp_part_profile(sp->parts[0].ps, substeps, out);
  return st == WF_OK ? after_gathered(sp) : st;
}

wf_stream *wf_particles_stream(const wf_particles *sp) {
  return sp ? wfp_part_stream(sp->parts[0].ps) : NULL;
}

size_t wf_particles_device_bytes(const wf_particles *sp) {
  size_t bytes = 0;
  for (int p = 0; sp && p < sp->np; p++)
    bytes += part_bytes(&sp->parts[p]);
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
  if (sp->np == 1) return wfp_part_get(sp->parts[0].ps, (wfp_f4 *)pos, (wfp_f4 *)vel, NULL, NULL);
  wf_status st = settle(sp);
  if (st != WF_OK) return st;
  if (pos && sp->count) memcpy(pos, sp->pos, (size_t)sp->count * 16);
  if (vel && sp->count) memcpy(vel, sp->vel, (size_t)sp->count * 16);
  return WF_OK;
}

wf_status wf_particles_check(wf_particles *sp) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wf_status st = sp->np > 1 && sp->distributed && sp->frames_since > 0 ? rerun_if_moved(sp) : WF_OK;
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    st = wfp_part_check(sp->parts[p].ps);
  return st;
}

wf_status wf_particles_download(wf_particles *sp, float (*pos)[4], float (*vel)[4]) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_download(sp->parts[0].ps, pos, vel);
  wf_status st = settle(sp);
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    st = wfp_part_check(sp->parts[p].ps);
  return st == WF_OK ? state_of(sp, pos, vel) : st;
}

wf_status wf_particles_stats_get(wf_particles *sp, wf_particles_stats *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (sp->np == 1) return wfp_part_stats_get(sp->parts[0].ps, out);
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

wf_status wf_particles_info_get(const wf_particles *sp, wf_particles_info *out) {
  if (!sp || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  *out = sp->info;
  if (sp->np == 1 || !sp->distributed) { /* everything in partition 0 */
    out->owned[0] = wf_particles_count(sp);
    out->slab_lo[0] = -INFINITY, out->slab_hi[0] = INFINITY;
  }
  for (int p = 0; p < sp->np; p++)
    out->device_bytes[p] = part_bytes(&sp->parts[p]);
  return WF_OK;
}

/* The whole system goes back into partition 0 (global-id order, as after adding particles), takes
 * the given state there, and every partition takes the clock (kinematic colliders move with it);
 * the next frame distributes it again. The result does not depend on the partitioning, so the
 * frames that follow are bitwise those that followed the saved state. */
wf_status wf_particles_set_state(wf_particles *sp, const float (*pos)[4], const float (*vel)[4],
                                 double time, uint64_t substeps) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1) return wfp_part_set_state(sp->parts[0].ps, pos, vel, time, substeps);
  if (!pos || !vel)
    return fail(WF_ERR_INVALID, "particles '%s': set_state: pos or vel is NULL", sp->name);
  wf_status st = undistribute(sp);
  if (st != WF_OK) return st;
  static const float none[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  for (int p = 0; p < sp->np && st == WF_OK; p++)
    st = p == 0 ? wfp_part_set_state(sp->parts[0].ps, pos, vel, time, substeps)
                : wfp_part_set_state(sp->parts[p].ps, none, none, time, substeps);
  if (st != WF_OK) return st;
  if (sp->count) {
    memcpy(sp->pos, pos, (size_t)sp->count * 16);
    memcpy(sp->vel, vel, (size_t)sp->count * 16);
  }
  sp->snap_time = time;
  sp->snap_substeps = substeps;
  return WF_OK;
}

/* ---- partition views and the gather on the device ----------------------------------------- */

/* Partition pt's owned rows (their tag has no ghost bit, 16 + owner) gathered in local order,
 * which is global-id order, into its view buffers, on its stream. */
static wf_status view_gather(wf_particles *sp, part *pt) {
  wf_stream *s = wfp_part_stream(pt->ps);
  size_t m = pt->n_owned ? pt->n_owned : 1;
  wf_status st;
  if ((st = dbuf_reserve(sp, &pt->view_idx, pt->dev, s, (size_t)pt->n_local * 4 + 4)) != WF_OK ||
      (st = dbuf_reserve(sp, &pt->view_pos, pt->dev, s, m * 16)) != WF_OK ||
      (st = dbuf_reserve(sp, &pt->view_vel, pt->dev, s, m * 16)) != WF_OK ||
      (st = dbuf_reserve(sp, &pt->view_gid, pt->dev, s, m * 4)) != WF_OK ||
      (st = dbuf_reserve(sp, &pt->view_mat, pt->dev, s, m * 2)) != WF_OK ||
      (st = select_owned(sp, pt, &pt->view_idx)) != WF_OK)
    return st;
  if (!pt->n_owned) return WF_OK;
  wfp_arrays a = wfp_part_arrays(pt->ps);
  wfp_migrate_pack_args pa = {wf_buffer_ptr(pt->view_idx.b), a.pos, a.vel, a.gid, a.mat,
                              wf_buffer_ptr(pt->view_pos.b), wf_buffer_ptr(pt->view_vel.b),
                              wf_buffer_ptr(pt->view_gid.b), wf_buffer_ptr(pt->view_mat.b)};
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
  out->device = pt->dev;
  out->stream = wfp_part_stream(pt->ps);
  TRY(wfp_part_state_buffers(pt->ps, &out->pos, &out->vel, &out->clock), "finding the state");
  if (sp->np == 1 || !sp->distributed) { /* partition 0 holds everything in global-id order */
    out->rows = i == 0 ? wf_particles_count(sp) : 0;
    return WF_OK;
  }
  /* a rerun first if a particle outran the skin: the partitions' state must be exact (one wait
   * for the frames, at the first view after them) */
  wf_status st = sp->frames_since > 0 && !sp->exact ? rerun_if_moved(sp) : WF_OK;
  sp->exact = st == WF_OK;
  if (st == WF_OK) st = view_gather(sp, pt);
  if (st != WF_OK) return st;
  out->pos = pt->view_pos.b, out->vel = pt->view_vel.b, out->ids = pt->view_gid.b;
  out->rows = pt->n_owned;
  return WF_OK;
}

/* The staging buffers on dev for n rows (positions, velocities, global ids). */
static wf_status stage_reserve(wf_particles *sp, wf_device *dev, wf_stream *s, uint32_t n) {
  if (sp->stage_dev != dev) { /* another destination device: start over */
    if (sp->stage_stream) wf_stream_synchronize(sp->stage_stream);
    dbuf_free(&sp->stage, sp->stage_stream), dbuf_free(&sp->stage_gid, sp->stage_stream);
  }
  sp->stage_dev = dev, sp->stage_stream = s;
  wf_status st = dbuf_reserve(sp, &sp->stage, dev, s, (size_t)(n ? n : 1) * 32);
  return st == WF_OK ? dbuf_reserve(sp, &sp->stage_gid, dev, s, (size_t)(n ? n : 1) * 4) : st;
}

/* Every partition's view copied (peer copies, ordered by the GPU layer) into the staging buffers
 * on s's device, partition after partition: positions from row 0, velocities from row count. */
static wf_status stage_views(wf_particles *sp, wf_stream *s) {
  size_t n = sp->count, at = 0;
  for (int p = 0; p < sp->np; p++) {
    wf_partition_view v;
    wf_status st = wf_particles_partition_view(sp, p, &v);
    if (st != WF_OK) return st;
    if (!v.rows) continue;
    TRY(wf_stream_wait_stream(s, v.stream), "ordering the gather after the frame");
    TRY(wf_copy(sp->stage.b, at * 16, v.pos, 0, (size_t)v.rows * 16, s), "gathering positions");
    TRY(wf_copy(sp->stage.b, (n + at) * 16, v.vel, 0, (size_t)v.rows * 16, s),
        "gathering velocities");
    TRY(wf_copy(sp->stage_gid.b, at * 4, v.ids, 0, (size_t)v.rows * 4, s), "gathering ids");
    at += v.rows;
  }
  return WF_OK;
}

/* Several partitions: the views staged on s's device, then scattered by global id into scratch
 * rows (pos and vel must both be written: the scatter writes pairs), then copied out. */
static wf_status copy_gathered(wf_particles *sp, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                               size_t vel_off, wf_stream *s) {
  uint32_t n = sp->count;
  wf_device *dev = wf_stream_device(s);
  wf_status st = stage_reserve(sp, dev, s, 2 * n);
  if (st == WF_OK) st = stage_views(sp, s);
  if (st != WF_OK || !n) return st;
  wfp_f4 *stage = wf_buffer_ptr(sp->stage.b);
  wfp_gid_scatter_args a = {stage, wf_buffer_ptr(sp->stage_gid.b), stage + 2 * (size_t)n,
                            stage + 3 * (size_t)n, n};
  TRY(wf_launch(&wfp_gid_scatter, n, &a, sizeof a, s), "scattering the state by global id");
  TRY(wf_buffer_touch(sp->stage.b, s), "ordering the gather");
  if (pos) TRY(wf_copy(pos, pos_off, sp->stage.b, (size_t)n * 32, (size_t)n * 16, s), "copying");
  if (vel) TRY(wf_copy(vel, vel_off, sp->stage.b, (size_t)n * 48, (size_t)n * 16, s), "copying");
  /* the next frame (and the next view gather) must not overwrite what is being read */
  for (int p = 0; p < sp->np; p++)
    TRY(wf_stream_wait_stream(wfp_part_stream(sp->parts[p].ps), s), "ordering after the gather");
  return WF_OK;
}

wf_status wf_particles_copy_state(wf_particles *sp, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                                  size_t vel_off, wf_stream *s) {
  if (!sp) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (sp->np == 1 || !sp->distributed)
    return wfp_part_copy_state(sp->parts[0].ps, pos, pos_off, vel, vel_off, s);
  return copy_gathered(sp, pos, pos_off, vel, vel_off, s ? s : wfp_part_stream(sp->parts[0].ps));
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
  return st == WF_OK ? wfp_part_view_get(sp->parts[0].ps, out) : st;
}

wf_status wfp_hook_add(wf_particles *sp, wfp_hook_fn fn, void *user) {
  wf_status st = one_partition(sp, "coupling");
  return st == WF_OK ? wfp_part_hook_add(sp->parts[0].ps, fn, user) : st;
}

void wfp_hook_remove(wf_particles *sp, wfp_hook_fn fn, void *user) {
  if (sp && sp->np == 1) wfp_part_hook_remove(sp->parts[0].ps, fn, user);
}
