/* The world's reliability: the per-frame health check on the devices, the last-good snapshot, and
 * the advice given when a world does not fit in memory (weft/world.h, "health").
 *
 * The world hands over a narrow description (health.h): the solvers (sources), the objects as
 * ranges of a source's global ids, the scene's limits and colliders. The check reads each
 * solver partition by partition where the partition lives (wf_*_partition_view: its owned rows,
 * their global ids, its stream and clock), so no state crosses devices or the host.
 *
 * After each frame (wfw_health_after_frame), per partition, the stream of the partition's device
 * (a lane: one health stream and one copy of the colliders per device) waits for the partition's
 * stream and runs CHECK + DETAIL over its rows into the partition's record (health_kernels.h).
 * The records of other devices are copied to the first device, VERDICT decides the frame there
 * into the gate, the gate is copied back to every other device, and each partition COMMITs its
 * rows into its snapshot when the gate says so. The first device then copies the records and the
 * gate into the frame's pinned slot and records the slot's event. Every partition's stream waits
 * for its lane, so the next frame cannot overwrite the state while it is being read or copied.
 *
 *   partition streams ─ frame ─┬──────────────────────────────────────┬─ next frame
 *   lane d (d > 0)             └ CHECK DETAIL ┐      ┌ gate ─ COMMIT ─┤
 *   lane 0 (first device)      └ CHECK DETAIL ┴ copy ┴ VERDICT ┴ COMMIT ─ records -> slot, event
 *
 * Why a device-side snapshot gated by a device-side verdict: the host learns of a bad frame one
 * or more frames late (it never waits for the GPU to find out), and by then the solvers have
 * moved on; checkpoints every N frames would lose up to N frames and cost a download each.
 * Copying the checked state on the device, only while every frame so far was healthy, keeps
 * exactly the frame before the first unhealthy one, at the cost of one device copy of the state
 * per frame (32 bytes per point, ~1/3 of a DEM substep's traffic for one of 48-64 substeps) and
 * one snapshot's memory, spread over the devices as the partitions are. The snapshot holds the
 * bits of the solvers' own buffers, clocks included, so a checkpoint written from it resumes
 * bitwise identically, as any other checkpoint does.
 *
 * Why the verdict combines the devices on the device, not on the host: a frame is bad if any
 * partition finds a bad point, and every partition must then keep the frame before. Deciding on
 * the host would mean either waiting for each frame's records (a round trip per frame) or keeping
 * a ring of snapshots as deep as the host may lag (WF_WORLD_HEALTH_DEPTH + 1 copies of the
 * state). Combining the records on the first device costs two tiny copies per partition on
 * another device (its record there, the gate back), ordered by events; the devices already meet
 * once a frame (the halo exchange, and the health lanes join every solver). With one device there
 * is one lane and no copy at all: CHECK + DETAIL per partition, VERDICT, one COMMIT per partition
 * (it copies positions, velocities, ids and the clock in one launch).
 *
 * A partition's rows change in number (particles migrate) and its snapshot grows when they do
 * (with a device copy of what it held, which may still be the last good state); it records the
 * row count, the ids (or the first id) and the clock it copied. wf_world_save_last_good then
 * assembles the global order on the host from the partitions' snapshots (wfw_health_last_good),
 * only when it is written.
 *
 * Invariants
 *  - Slot f % WF_WORLD_HEALTH_DEPTH holds frame f's records; h->next is the oldest frame whose
 *    record the host has not read. Records are read in frame order, so the first unhealthy frame
 *    read is the first unhealthy frame.
 *  - Parts are ordered source by source, partition 0 .. n-1; the host combines their records in
 *    that order: per source the smallest global id, then the first object (world order) whose
 *    range holds its source's smallest id. Objects of a source are ascending ranges, so this is
 *    the first unhealthy object and its smallest unhealthy point, whatever the partition count.
 *  - The gate's `tripped` is sticky on the device: after the first unhealthy frame no snapshot
 *    is taken, so every snapshot holds gate.good_frame = the frame before it.
 *  - A snapshot's buffers are used on its lane's stream only, and the host reads them after
 *    synchronizing every lane.
 *  - A restore (checkpoint load) waits for the checks in flight, forgets every verdict and
 *    snapshots the restored state unconditionally.
 *
 * Over MPI ranks (wfw_health_desc.mpi_comm) each rank checks and snapshots only the partitions it
 * holds, and a verdict of its own would let a rank that found a bad point keep the frame before
 * while the others commit the bad frame: the last-good checkpoint would mix two frames. So before
 * VERDICT the host waits for the rank's records (a frame over ranks waits on the host for MPI
 * anyway), and the ranks exchange, per source, their record with the smallest key (one
 * allgather of a record a source a frame); every rank puts the smallest of all in front of its
 * records, and VERDICT, the gate, COMMIT and the host's reading see what one process sees: the
 * same verdict, frame, point and message on every rank. wfw_health_last_good then gathers the
 * snapshots' rows over the ranks (a collective: every rank writes the last-good checkpoint).
 */
#include "health.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health_kernels.h"
#include "internal/error.h"
#include "solvers/collider/collider.h"
#include "solvers/particle/collider.h"
#include "solvers/partition/ranks.h"

enum { SLOTS = WF_WORLD_HEALTH_DEPTH, MAX_LANES = WF_MAX_DEVICES + 1 };

typedef struct hslot {
  wf_buffer *mirror; /* pinned: the records, then the gate */
  wf_event *done;
  int64_t frame;
  bool pending;
} hslot;

/* One device's share of the check: its partitions' records (wfh_record[n_parts]), then a gate at
 * gate_off. Lane 0 is the first device: the verdict's, over every record, and its gate; the other
 * lanes' records are copied to lane 0's, and lane 0's gate to theirs. */
typedef struct lane {
  wf_device *dev;
  wf_stream *stream;
  wf_buffer *records;
  wfx_dev *meshes; /* per collider: a mesh's hierarchy on this device, shared by its parts */
} lane;

/* A partition of a source and its last-good snapshot on the partition's device. Its colliders are
 * the scene's in the partition's frame (wf_partition_view.origin: a cloth's positions are
 * relative to its origin), so that the check compares positions and colliders as the solver does,
 * without adding the origin to a float position. */
typedef struct hpart {
  int source, index, lane;
  uint32_t cap; /* rows the snapshot buffers hold */
  wf_buffer *pos, *vel, *ids, *meta;
  wf_buffer *colliders; /* wfp_collider[n_colliders] (at least one element) */
  wfx_dev *dev;         /* per collider: its keyframes and mesh on the lane's device, or none */
} hpart;

struct wfw_health {
  int n_sources, n_objects, n_lanes, n_parts;
  wfw_health_source *sources;
  wfw_health_object *objects;
  char (*object_names)[WF_SCENE_NAME_MAX];
  int *source_parts; /* parts of source s: source_parts[s] .. source_parts[s + 1] - 1 */
  hpart *parts;
  wf_partition_view *views; /* this frame's, per part */
  lane lanes[MAX_LANES];
  uint32_t n_colliders;
  char (*collider_names)[WF_SCENE_NAME_MAX];
  size_t gate_off, record_bytes, lane_bytes; /* a lane's records buffer: records, gate */
  hslot slots[SLOTS];
  double fps;
  float max_speed2, max_penetration;
  double max_speed, max_pen;
  int64_t next;        /* the oldest frame whose record is not read */
  int64_t checked;     /* the latest frame whose record was read */
  int64_t last_good;   /* the latest frame read as healthy */
  wf_world_health bad; /* quantity != WF_HEALTH_OK once a frame was unhealthy */
  char object_name[WF_SCENE_NAME_MAX];
  char collider_name[WF_SCENE_NAME_MAX];
  char message[1024];
  const void *comm; /* wfw_health_desc.mpi_comm */
};

/* A GPU-layer or solver call failed: keep its message, with what the check was doing. */
static wf_status fail_gpu(wf_status st, const char *what) {
  char inner[800];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "world health check: %s: %s", what, inner);
}

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return fail_gpu(st_, what);                                                  \
  } while (0)

static void *ptr(const wf_buffer *b) { return b ? wf_buffer_ptr(b) : NULL; }

/* The partitions this process checks: over MPI ranks only its own (each rank checks its block,
 * and the world agrees on the verdicts, world.c). */
static int partitions_all(const wfw_health_source *s) {
  return s->ps ? wf_particles_partition_count(s->ps) : wf_cloth_partition_count(s->cloth);
}

static bool partition_local(const wfw_health_source *s, int i) {
  return s->ps ? wf_particles_partition_is_local(s->ps, i)
               : wf_cloth_partition_is_local(s->cloth, i);
}

static int partition_count(const wfw_health_source *s) {
  int n = 0;
  for (int i = 0; i < partitions_all(s); i++)
    n += partition_local(s, i);
  return n;
}

/* The solver's index of this process's j-th partition. */
static int partition_index(const wfw_health_source *s, int j) {
  for (int i = 0; i < partitions_all(s); i++)
    if (partition_local(s, i) && j-- == 0) return i;
  return -1;
}

/* Whether the source is split over MPI ranks (some partition is another rank's). */
static bool over_ranks(const wfw_health_source *s) {
  return partition_count(s) < partitions_all(s);
}

static wf_status partition_view(const wfw_health_source *s, int i, wf_partition_view *v) {
  return s->ps ? wf_particles_partition_view(s->ps, i, v) : wf_cloth_partition_view(s->cloth, i, v);
}

static lane *lane_of(wfw_health *h, const hpart *p) { return &h->lanes[p->lane]; }

/* Lane l's gate: the verdict's (lane 0), or its copy that COMMIT reads on lane l's device. */
static wfh_gate *gate_of(wfw_health *h, int l) {
  return (wfh_gate *)((char *)wf_buffer_ptr(h->lanes[l].records) + h->gate_off);
}

/* This frame's view of every partition (a particle solver over several devices gathers its
 * owned rows when asked: once per frame). */
static wf_status fetch_views(wfw_health *h) {
  for (int i = 0; i < h->n_parts; i++) {
    const hpart *p = &h->parts[i];
    const wfw_health_source *s = &h->sources[p->source];
    wf_partition_view *v = &h->views[i];
    TRY(partition_view(s, p->index, v), "looking up a partition's state");
    if (v->device != lane_of(h, p)->dev || v->rows > s->count)
      return wf__error(WF_ERR_INVALID, NULL,
                       "world health check: partition %d of a solver moved or holds %u of %u "
                       "points",
                       p->index, v->rows, s->count);
  }
  return WF_OK;
}

/* Each lane waits for its partitions' streams (before a check), or each partition's stream
 * waits for its lane (after it: the next frame must not overwrite what is being read). */
static wf_status join_partitions(wfw_health *h, bool lanes_wait) {
  for (int i = 0; i < h->n_parts; i++) {
    wf_stream *ls = lane_of(h, &h->parts[i])->stream, *ps = h->views[i].stream;
    wf_status st = lanes_wait ? wf_stream_wait_stream(ls, ps) : wf_stream_wait_stream(ps, ls);
    if (st != WF_OK) return fail_gpu(st, "ordering the check with the solvers");
  }
  return WF_OK;
}

/* Room for `rows` rows in part p's snapshot, keeping what it holds (it may be the last good
 * state): new buffers, a device copy, the old ones freed after it, all on the lane's stream. */
static wf_status snapshot_reserve(wfw_health *h, hpart *p, uint32_t rows) {
  if (p->pos && rows <= p->cap) return WF_OK;
  lane *l = lane_of(h, p);
  uint32_t count = h->sources[p->source].count;
  uint64_t want = (uint64_t)rows + rows / 4; /* rows vary with migration: grow ahead */
  uint32_t cap = (uint32_t)(want > count ? count : want);
  if (cap < rows) cap = rows;
  if (cap == 0) cap = 1;
  size_t sizes[3] = {(size_t)cap * 16, (size_t)cap * 16, (size_t)cap * 4};
  wf_buffer **old[3] = {&p->pos, &p->vel, &p->ids};
  for (int k = 0; k < 3; k++) {
    wf_buffer *nb = NULL;
    wf_status st = wf_buffer_create(l->dev, sizes[k], WF_BUFFER_ZERO, l->stream, &nb);
    if (st != WF_OK) return st; /* the allocator's message says what and how much */
    if (*old[k]) {
      st = wf_copy(nb, 0, *old[k], 0, wf_buffer_size(*old[k]), l->stream);
      wf_buffer_destroy(*old[k], l->stream);
      if (st != WF_OK) {
        wf_buffer_destroy(nb, l->stream);
        *old[k] = NULL;
        return fail_gpu(st, "growing the last-good snapshot");
      }
    }
    *old[k] = nb;
  }
  p->cap = cap;
  return WF_OK;
}

/* COMMIT of every partition into its snapshot, gated by its device's gate. */
static wf_status enqueue_commits(wfw_health *h) {
  for (int i = 0; i < h->n_parts; i++) {
    hpart *p = &h->parts[i];
    const wf_partition_view *v = &h->views[i];
    wf_status st = snapshot_reserve(h, p, v->rows);
    if (st != WF_OK) return st;
    wfh_commit_args a = {.gate = gate_of(h, p->lane),
                         .pos = ptr(v->pos),
                         .vel = ptr(v->vel),
                         .ids = ptr(v->ids),
                         .clock = ptr(v->clock),
                         .snap_pos = wf_buffer_ptr(p->pos),
                         .snap_vel = wf_buffer_ptr(p->vel),
                         .snap_ids = wf_buffer_ptr(p->ids),
                         .meta = wf_buffer_ptr(p->meta),
                         .rows = v->rows,
                         .first = v->first};
    size_t n = v->rows ? v->rows : 1;
    TRY(wf_launch(&wfh_commit_kernel, n, &a, sizeof a, lane_of(h, p)->stream),
        "launching the snapshot copy");
  }
  return WF_OK;
}

/* The gate of the first device copied to every other device. */
static wf_status broadcast_gate(wfw_health *h) {
  for (int l = 1; l < h->n_lanes; l++)
    TRY(wf_copy(h->lanes[l].records, h->gate_off, h->lanes[0].records, h->gate_off,
                sizeof(wfh_gate), h->lanes[l].stream),
        "copying the verdict to a device");
  return WF_OK;
}

/* The state now enqueued (frame `frame`) becomes the last good one, whatever the verdicts so
 * far. */
static wf_status snapshot_now(wfw_health *h, int64_t frame) {
  wf_status st = fetch_views(h);
  if (st == WF_OK) st = join_partitions(h, true);
  if (st != WF_OK) return st;
  wfh_gate g = {1u, 0u, frame, -1};
  TRY(wf_upload(h->lanes[0].records, h->gate_off, &g, sizeof g, h->lanes[0].stream),
      "resetting the gate");
  if ((st = broadcast_gate(h)) != WF_OK || (st = enqueue_commits(h)) != WF_OK) return st;
  h->next = frame + 1;
  h->checked = h->last_good = frame;
  memset(&h->bad, 0, sizeof h->bad);
  h->message[0] = '\0';
  return join_partitions(h, false);
}

/* ---- create / destroy ----------------------------------------------------------------------- */

/* The lane of device dev, made on first use. */
static wf_status lane_for(wfw_health *h, wf_device *dev, int *out) {
  for (int l = 0; l < h->n_lanes; l++)
    if (h->lanes[l].dev == dev) return *out = l, WF_OK;
  if (h->n_lanes == MAX_LANES)
    return wf__error(WF_ERR_INVALID, NULL, "world health check: more than %d devices", MAX_LANES);
  lane *l = &h->lanes[h->n_lanes];
  l->dev = dev;
  TRY(wf_stream_create(dev, 0, &l->stream), "creating a health stream");
  *out = h->n_lanes++;
  return WF_OK;
}

/* The scene's colliders as the solvers converted them (wfw_collider_of). */
static wf_status convert_colliders(wfw_health *h, const wf_scene *sc, wfp_collider *cols) {
  for (int i = 0; i < sc->collider_count; i++) {
    snprintf(h->collider_names[i], sizeof h->collider_names[i], "%s", sc->colliders[i].name);
    wf_collider_desc d = wfw_collider_of(&sc->colliders[i]);
    wf_status st = wfp_collider_from_desc("wf_world_create", "world health check", &d, &cols[i]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* Copies the description: sources, objects (with their names), one part per partition. */
static wf_status copy_desc(wfw_health *h, const wfw_health_desc *d) {
  h->n_sources = d->n_sources, h->n_objects = d->n_objects;
  h->sources = calloc((size_t)d->n_sources + 1, sizeof *h->sources);
  h->source_parts = calloc((size_t)d->n_sources + 1, sizeof *h->source_parts);
  h->objects = calloc((size_t)d->n_objects + 1, sizeof *h->objects);
  h->object_names = calloc((size_t)d->n_objects + 1, sizeof *h->object_names);
  if (!h->sources || !h->source_parts || !h->objects || !h->object_names)
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  memcpy(h->sources, d->sources, (size_t)d->n_sources * sizeof *h->sources);
  for (int o = 0; o < d->n_objects; o++) {
    h->objects[o] = d->objects[o];
    snprintf(h->object_names[o], sizeof h->object_names[o], "%s", d->objects[o].name);
    h->objects[o].name = h->object_names[o];
  }
  for (int s = 0; s < d->n_sources; s++) {
    h->source_parts[s] = h->n_parts;
    h->n_parts += partition_count(&d->sources[s]);
  }
  h->source_parts[d->n_sources] = h->n_parts;
  h->parts = calloc((size_t)h->n_parts + 1, sizeof *h->parts);
  h->views = calloc((size_t)h->n_parts + 1, sizeof *h->views);
  if (!h->parts || !h->views)
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  return WF_OK;
}

/* The device data of collider k for part p, when the penetration check is on (else the
 * colliders are never read). A mesh's hierarchy goes to the part's lane once, shared by the parts
 * on that device (a mesh does not depend on the origin: its pose does); keyframes, moved into the
 * part's frame, go to the part. So the check evaluates a keyframed or turning collider at the
 * frame's time, as the solver did, never at a stale pose. A mesh is queried without a reach: a
 * point deep inside a closed mesh is farther from every triangle than any contact range, and only
 * the exact distance says how deep it is. */
static wf_status collider_data(wfw_health *h, hpart *p, uint32_t k, const wf_collider_desc *d,
                               const double origin[3], wfp_collider *c) {
  static const char fn[] = "wf_world_create", owner[] = "world health check";
  lane *l = lane_of(h, p);
  wf_status st = WF_OK;
  if (d->type == WF_COLLIDER_MESH) {
    if (!l->meshes && !(l->meshes = calloc(h->n_colliders + 1, sizeof *l->meshes)))
      return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    wf_collider_desc dm = *d;
    dm.key_count = 0, dm.keys = NULL; /* the mesh only */
    wfp_collider m = *c;
    if (!l->meshes[k].nodes)
      st = wfx_dev_upload(fn, owner, &dm, l->dev, l->stream, &m, &l->meshes[k]);
    if (st != WF_OK) return st;
    c->nodes = wf_buffer_ptr(l->meshes[k].nodes), c->tris = wf_buffer_ptr(l->meshes[k].tris);
    c->reach = INFINITY;
  }
  if (d->key_count > 0) {
    wf_collider_key *keys = malloc(d->key_count * sizeof *keys);
    if (!keys) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    wf_collider_desc dk;
    wfp_keys_to_frame(d, origin, keys, &dk);
    dk.type = WF_COLLIDER_SPHERE; /* the keyframes only: the mesh is the lane's */
    st = wfx_dev_upload(fn, owner, &dk, l->dev, l->stream, c, &p->dev[k]);
    free(keys);
  }
  return st;
}

double wfw_health_max_penetration(const wfw_health *h) { return h ? h->max_pen : 0.0; }

/* The colliders of part p: the scene's, moved into the frame of its positions (origin), with
 * their device data (collider_data). */
static wf_status part_colliders(wfw_health *h, hpart *p, const wfp_collider *cols,
                                const wf_scene *sc, const double origin[3]) {
  lane *l = lane_of(h, p);
  size_t bytes = (size_t)(h->n_colliders + 1) * sizeof(wfp_collider);
  wfp_collider *local = calloc(h->n_colliders + 1, sizeof *local);
  p->dev = calloc(h->n_colliders + 1, sizeof *p->dev);
  if (!local || !p->dev) {
    free(local);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  }
  wf_status st = WF_OK;
  for (uint32_t k = 0; k < h->n_colliders && st == WF_OK; k++) {
    local[k] = cols[k];
    wf_collider_desc d = wfw_collider_of(&sc->colliders[k]);
    if (h->max_penetration > 0.0f && (d.key_count > 0 || d.type == WF_COLLIDER_MESH))
      st = collider_data(h, p, k, &d, origin, &local[k]);
    wfp_collider_to_frame(&local[k], origin);
  }
  if (st == WF_OK) st = wf_buffer_create(l->dev, bytes, WF_BUFFER_ZERO, l->stream, &p->colliders);
  if (st == WF_OK && h->n_colliders)
    st = wf_upload(p->colliders, 0, local, h->n_colliders * sizeof *local, l->stream);
  free(local);
  return st;
}

/* Per part: its lane, the snapshot's meta and its colliders; per lane (off the first device)
 * the records and the gate's copy. */
static wf_status create_parts(wfw_health *h, const wfp_collider *cols, const wf_scene *sc) {
  wf_status st = WF_OK;
  for (int s = 0; s < h->n_sources && st == WF_OK; s++)
    for (int i = h->source_parts[s]; i < h->source_parts[s + 1] && st == WF_OK; i++) {
      hpart *p = &h->parts[i];
      p->source = s, p->index = partition_index(&h->sources[s], i - h->source_parts[s]);
      wf_partition_view v;
      if ((st = partition_view(&h->sources[s], p->index, &v)) != WF_OK)
        return fail_gpu(st, "looking up a partition");
      if ((st = lane_for(h, v.device, &p->lane)) == WF_OK)
        st = wf_buffer_create(v.device, sizeof(wfh_snap_meta), WF_BUFFER_ZERO,
                              lane_of(h, p)->stream, &p->meta);
      if (st == WF_OK) st = part_colliders(h, p, cols, sc, v.origin);
    }
  for (int l = 0; l < h->n_lanes && st == WF_OK; l++) {
    lane *ln = &h->lanes[l];
    st = wf_buffer_create(ln->dev, h->lane_bytes, WF_BUFFER_ZERO, ln->stream, &ln->records);
  }
  return st;
}

wf_status wfw_health_create(const wfw_health_desc *d, wfw_health **out) {
  *out = NULL;
  wfw_health *h = calloc(1, sizeof *h);
  if (!h) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  *out = h; /* on failure the caller destroys it */
  const wf_scene *sc = d->scene;
  h->fps = d->fps;
  h->comm = d->mpi_comm;
  h->n_colliders = (uint32_t)sc->collider_count;
  h->collider_names = calloc((size_t)sc->collider_count + 1, sizeof *h->collider_names);
  wfp_collider *cols = calloc((size_t)sc->collider_count + 1, sizeof *cols);
  wf_status st = WF_OK;
  if (!h->collider_names || !cols)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  if (st == WF_OK) st = convert_colliders(h, sc, cols);
  if (st == WF_OK) st = copy_desc(h, d);
  h->max_speed = sc->simulation.max_speed;
  h->max_pen = sc->simulation.max_penetration;
  h->max_speed2 = h->max_speed > 0.0 ? (float)(h->max_speed * h->max_speed) : 0.0f;
  h->max_penetration = (float)h->max_pen;
  h->record_bytes = (size_t)(h->n_parts ? h->n_parts : 1) * sizeof(wfh_record);
  h->gate_off = (h->record_bytes + 15) & ~(size_t)15;
  h->lane_bytes = h->gate_off + ((sizeof(wfh_gate) + 15) & ~(size_t)15);
  int first = 0;
  if (st == WF_OK) st = lane_for(h, d->device, &first); /* lane 0: the first device */
  if (st == WF_OK) st = create_parts(h, cols, sc);
  free(cols);
  wf_device *host = NULL;
  if (st == WF_OK && (st = wf_device_get("cpu", &host)) != WF_OK) fail_gpu(st, "finding cpu:0");
  for (int i = 0; i < SLOTS && st == WF_OK; i++) {
    st = wf_buffer_create(host, h->lane_bytes, WF_BUFFER_PINNED | WF_BUFFER_ZERO, NULL,
                          &h->slots[i].mirror);
    if (st == WF_OK) st = wf_event_create(d->device, 0, &h->slots[i].done);
  }
  if (st == WF_OK) st = snapshot_now(h, d->frame);
  return st;
}

void wfw_health_destroy(wfw_health *h) {
  if (!h) return;
  for (int l = 0; l < h->n_lanes; l++)
    wf_stream_synchronize(h->lanes[l].stream);
  for (int i = 0; i < SLOTS; i++) {
    if (h->slots[i].done) wf_event_destroy(h->slots[i].done);
    if (h->slots[i].mirror) wf_buffer_destroy(h->slots[i].mirror, NULL);
  }
  for (int i = 0; h->parts && i < h->n_parts; i++) {
    hpart *p = &h->parts[i];
    wf_buffer *b[] = {p->pos, p->vel, p->ids, p->meta, p->colliders};
    for (int k = 0; k < 5; k++)
      if (b[k]) wf_buffer_destroy(b[k], lane_of(h, p)->stream);
    for (uint32_t k = 0; p->dev && k < h->n_colliders; k++)
      wfx_dev_release(&p->dev[k], lane_of(h, p)->stream);
    free(p->dev);
  }
  for (int l = 0; l < h->n_lanes; l++) {
    lane *ln = &h->lanes[l];
    for (uint32_t k = 0; ln->meshes && k < h->n_colliders; k++)
      wfx_dev_release(&ln->meshes[k], ln->stream);
    free(ln->meshes);
    if (ln->records) wf_buffer_destroy(ln->records, ln->stream);
    wf_stream_destroy(ln->stream);
  }
  free(h->sources), free(h->source_parts), free(h->objects), free(h->object_names);
  free(h->parts), free(h->views), free(h->collider_names);
  free(h);
}

/* ---- the per-frame check -------------------------------------------------------------------- */

/* CHECK + DETAIL of every partition into its record on its own device. */
static wf_status enqueue_partition_checks(wfw_health *h, int64_t frame) {
  float time = (float)((double)frame / h->fps);
  for (int i = 0; i < h->n_parts; i++) {
    const hpart *p = &h->parts[i];
    const wf_partition_view *v = &h->views[i];
    if (v->rows == 0) continue;
    const wfw_health_source *s = &h->sources[p->source];
    lane *l = lane_of(h, p);
    wfh_record *rec = wf_buffer_ptr(l->records);
    wfh_check_args a = {.pos = wf_buffer_ptr(v->pos),
                        .vel = wf_buffer_ptr(v->vel),
                        .ids = ptr(v->ids),
                        .colliders = wf_buffer_ptr(p->colliders),
                        .rec = &rec[i],
                        .first = v->first,
                        .n = v->rows,
                        .n_colliders = h->n_colliders,
                        .cloth = s->cloth != NULL,
                        .thickness = s->cloth ? s->thickness : 0.0f,
                        .max_speed2 = h->max_speed2,
                        .max_penetration = h->max_penetration,
                        .time = time};
    TRY(wf_launch(&wfh_check_kernel, v->rows, &a, sizeof a, l->stream), "launching the check");
    TRY(wf_launch(&wfh_detail_kernel, 1, &a, sizeof a, l->stream), "launching the check");
  }
  return WF_OK;
}

/* The records of partitions off the first device, copied into the first device's. */
static wf_status gather_records(wfw_health *h) {
  for (int l = 1; l < h->n_lanes; l++)
    TRY(wf_buffer_touch(h->lanes[l].records, h->lanes[l].stream), "ordering the records");
  for (int i = 0; i < h->n_parts; i++) {
    const hpart *p = &h->parts[i];
    if (!p->lane) continue;
    size_t off = (size_t)i * sizeof(wfh_record);
    TRY(wf_copy(h->lanes[0].records, off, lane_of(h, p)->records, off, sizeof(wfh_record),
                h->lanes[0].stream),
        "copying a device's records");
  }
  return WF_OK;
}

static const wfh_record *source_worst(const wfw_health *h, int s, const wfh_record *rec);

/* Over MPI ranks, before VERDICT (see the file comment): this rank's records on the first device
 * become every rank's smallest record a source, in front of each source's records (the others
 * "healthy"). Every rank calls it once a frame, also with no point to report. */
static wf_status agree_records(wfw_health *h) {
  wf_stream *first = h->lanes[0].stream;
  wfh_record *rec = malloc(h->record_bytes), *mine = malloc((size_t)h->n_sources * sizeof *mine);
  wf_status st =
      rec && mine ? WF_OK
                  : wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "world health check: out of host memory");
  if (st == WF_OK && (st = wf_stream_synchronize(first)) != WF_OK)
    st = fail_gpu(st, "waiting for the records");
  if (st == WF_OK && (st = wf_download(rec, h->lanes[0].records, 0, h->record_bytes)) != WF_OK)
    st = fail_gpu(st, "reading the records");
  for (int s = 0; s < h->n_sources && rec && mine; s++) {
    const wfh_record *r = st == WF_OK ? source_worst(h, s, rec) : NULL;
    if (r)
      mine[s] = *r;
    else
      memset(&mine[s], 0xff, sizeof mine[s]); /* key WFH_NO_KEY: healthy */
  }
  /* every rank enters the collective, also one that failed above (it reports nothing) */
  void *all = NULL;
  size_t total = 0;
  wf_status st2 = wfpt_comm_allgather(h->comm, "world health check", mine,
                                      mine ? (size_t)h->n_sources * sizeof *mine : 0, &all, &total);
  if (st == WF_OK) st = st2;
  size_t n = total / sizeof(wfh_record);
  const wfh_record *a = all;
  for (int s = 0; s < h->n_sources && st == WF_OK; s++) {
    const wfh_record *best = NULL; /* the smallest key over the ranks (rank order on ties) */
    for (size_t k = (size_t)s; k < n; k += (size_t)h->n_sources)
      if (a[k].key != WFH_NO_KEY && (!best || a[k].key < best->key)) best = &a[k];
    int lo = h->source_parts[s], hi = h->source_parts[s + 1];
    if (lo == hi) {
      st = wf__error(WF_ERR_INVALID, NULL,
                     "world health check: a source has no partition on this MPI rank");
      break;
    }
    memset(&rec[lo], 0xff, (size_t)(hi - lo) * sizeof *rec);
    if (best) rec[lo] = *best;
  }
  if (st == WF_OK && (st = wf_upload(h->lanes[0].records, 0, rec, h->record_bytes, first)) != WF_OK)
    st = fail_gpu(st, "writing the agreed records");
  free(all), free(rec), free(mine);
  return st;
}

static wf_status enqueue_check(wfw_health *h, int64_t frame, hslot *slot) {
  wf_status st = fetch_views(h);
  if (st == WF_OK) st = join_partitions(h, true);
  if (st != WF_OK) return st;
  wf_buffer *records = h->lanes[0].records;
  wf_stream *first = h->lanes[0].stream;
  for (int l = 0; l < h->n_lanes; l++)
    TRY(wf_memset(h->lanes[l].records, 0xff, 0, h->record_bytes, h->lanes[l].stream),
        "clearing the records");
  if ((st = enqueue_partition_checks(h, frame)) != WF_OK || (st = gather_records(h)) != WF_OK)
    return st;
  if (h->comm && (st = agree_records(h)) != WF_OK) return st;
  wfh_verdict_args v = {wf_buffer_ptr(records), (uint32_t)h->n_parts, gate_of(h, 0), frame};
  TRY(wf_launch(&wfh_verdict_kernel, 1, &v, sizeof v, first), "launching the verdict");
  TRY(wf_buffer_touch(records, first), "ordering the records");
  if ((st = broadcast_gate(h)) != WF_OK || (st = enqueue_commits(h)) != WF_OK) return st;
  TRY(wf_copy(slot->mirror, 0, records, 0, h->lane_bytes, first),
      "copying the records to the host");
  TRY(wf_event_record(slot->done, first), "recording the frame's event");
  slot->frame = frame;
  slot->pending = true;
  return join_partitions(h, false);
}

static const char *const quantity_text[] = {"is healthy", "has a non-finite position",
                                            "has a non-finite velocity", "is too fast",
                                            "is too deep in a collider"};

/* Frame `frame`'s records say object o is unhealthy at its point r->key >> 32: fill h->bad and
 * its message. */
static void record_bad(wfw_health *h, int o, const wfh_record *r, int64_t frame) {
  const wfw_health_object *ob = &h->objects[o];
  bool cloth = h->sources[ob->source].cloth != NULL;
  wf_world_health *b = &h->bad;
  uint32_t q = r->quantity <= WFH_PENETRATION ? r->quantity : WFH_POSITION_NONFINITE;
  snprintf(h->object_name, sizeof h->object_name, "%s", ob->name);
  h->collider_name[0] = '\0';
  b->quantity = (wf_world_health_quantity)q;
  b->frame = frame;
  b->object = o;
  b->object_name = h->object_name;
  b->index = (uint32_t)(r->key >> 32); /* particles: global id; cloth: vertex */
  b->value = r->value;
  b->limit = q == WFH_SPEED ? h->max_speed : q == WFH_PENETRATION ? h->max_pen : 0.0;
  b->collider = q == WFH_PENETRATION && r->collider < h->n_colliders ? (int)r->collider : -1;
  if (b->collider >= 0)
    snprintf(h->collider_name, sizeof h->collider_name, "%s", h->collider_names[b->collider]);
  b->collider_name = h->collider_name;
  char who[160], what[320];
  snprintf(who, sizeof who, "%s '%s': %s %u%s", cloth ? "cloth" : "particles", ob->name,
           cloth ? "vertex" : "particle", b->index, cloth ? "" : " (global id)");
  switch (q) {
  case WFH_SPEED:
    snprintf(what, sizeof what,
             "moves at %.6g m/s at frame %lld, faster than simulation.max_speed %.6g m/s "
             "(watchdog)",
             b->value, (long long)frame, b->limit);
    break;
  case WFH_PENETRATION:
    snprintf(what, sizeof what,
             "is %.6g m deep in collider '%s' at frame %lld, deeper than "
             "simulation.max_penetration %.6g m (watchdog)",
             b->value, h->collider_name, (long long)frame, b->limit);
    break;
  default:
    snprintf(what, sizeof what, "%s (%g: NaN or inf) at frame %lld", quantity_text[q], b->value,
             (long long)frame);
  }
  snprintf(h->message, sizeof h->message,
           "%s %s; frame %lld was the last healthy one (the time step may be too large for the "
           "stiffness: more simulation.substeps or softer materials)",
           who, what, (long long)h->last_good);
  b->message = h->message;
}

/* The source's record with the smallest key over its partitions (0 .. n-1), or NULL. */
static const wfh_record *source_worst(const wfw_health *h, int s, const wfh_record *rec) {
  const wfh_record *best = NULL;
  for (int i = h->source_parts[s]; i < h->source_parts[s + 1]; i++)
    if (rec[i].key != WFH_NO_KEY && (!best || rec[i].key < best->key)) best = &rec[i];
  return best;
}

/* One frame's records: the first object (world order) holding its source's smallest unhealthy
 * global id, and that record; -1 when the frame is healthy. */
static int first_bad(const wfw_health *h, const wfh_record *rec, const wfh_record **out) {
  int fallback = -1;
  for (int o = 0; o < h->n_objects; o++) {
    const wfw_health_object *ob = &h->objects[o];
    const wfh_record *r = source_worst(h, ob->source, rec);
    if (!r) continue;
    uint32_t gid = (uint32_t)(r->key >> 32);
    if (fallback < 0) fallback = o, *out = r;
    if (gid >= ob->first && gid - ob->first < ob->count) return *out = r, o;
  }
  return fallback; /* an id outside every object: name its solver's first object */
}

/* Reads the records of frames h->next .. upto in order; block: wait for each, else stop at the
 * first that is not finished. */
static wf_status drain(wfw_health *h, int64_t upto, bool block) {
  for (; h->next <= upto; h->next++) {
    hslot *s = &h->slots[h->next % SLOTS];
    if (!s->pending || s->frame != h->next) continue; /* never enqueued (a failed step) */
    wf_status st = block ? wf_event_synchronize(s->done) : wf_event_query(s->done);
    if (st == WF_NOT_READY) return WF_OK;
    if (st != WF_OK) return fail_gpu(st, "waiting for a frame's record");
    s->pending = false;
    h->checked = s->frame;
    if (h->bad.quantity != WF_HEALTH_OK) continue;
    const wfh_record *r = NULL;
    int bad = first_bad(h, wf_buffer_ptr(s->mirror), &r);
    if (bad >= 0)
      record_bad(h, bad, r, s->frame);
    else
      h->last_good = s->frame;
  }
  return WF_OK;
}

static wf_status health_error(const wfw_health *h) {
  if (h->bad.quantity == WF_HEALTH_OK) return WF_OK;
  return wf__error(WF_ERR_INVALID, NULL, "%s", h->message);
}

wf_status wfw_health_after_frame(wfw_health *h, int64_t frame) {
  if (!h) return WF_OK;
  /* the slot this frame takes held frame - SLOTS: read it (and any older) first */
  wf_status st = drain(h, frame - SLOTS, true);
  if (st == WF_OK) st = enqueue_check(h, frame, &h->slots[frame % SLOTS]);
  /* over MPI ranks the records are agreed already: every rank reads the frame now, so every
   * rank stops at the same frame */
  if (st == WF_OK) st = drain(h, frame, h->comm != NULL);
  return st != WF_OK ? st : health_error(h);
}

wf_status wfw_health_read(wfw_health *h, int64_t frame, bool wait) {
  if (!h) return WF_OK;
  wf_status st = drain(h, frame, wait);
  return st != WF_OK ? st : health_error(h);
}

static wf_status sync_lanes(wfw_health *h) {
  for (int l = 0; l < h->n_lanes; l++)
    TRY(wf_stream_synchronize(h->lanes[l].stream), "waiting for the checks");
  return WF_OK;
}

wf_status wfw_health_before_restore(wfw_health *h, int64_t frame) {
  if (!h) return WF_OK;
  wf_status st = drain(h, frame, true);
  return st == WF_OK ? sync_lanes(h) : st;
}

wf_status wfw_health_after_restore(wfw_health *h, int64_t frame) {
  if (!h) return WF_OK;
  for (int i = 0; i < SLOTS; i++)
    h->slots[i].pending = false;
  return snapshot_now(h, frame);
}

wf_status wfw_health_get(wfw_health *h, int64_t frame, bool wait, wf_world_health *out) {
  wf_status st = drain(h, frame, wait);
  if (st != WF_OK) return st;
  if (h->bad.quantity != WF_HEALTH_OK) {
    *out = h->bad;
  } else {
    memset(out, 0, sizeof *out);
    out->frame = -1;
    out->object = -1;
    out->collider = -1;
    out->object_name = out->collider_name = out->message = "";
  }
  out->checked_frame = h->checked;
  out->last_good_frame = h->last_good;
  return WF_OK;
}

/* ---- the last-good state on the host -------------------------------------------------------- */

/* One row of a snapshot gathered over MPI ranks. */
typedef struct hrow {
  uint32_t id;
  float pos[4], vel[4];
} hrow;

/* Part p's snapshot: into the global-order arrays of its source, or, with rows_out, appended to
 * *rows_out (n_out of them) to be gathered over the ranks; *meta: what it held. */
static wf_status snapshot_read(wfw_health *h, const hpart *p, float (*pos)[4], float (*vel)[4],
                               wfh_snap_meta *meta, void *tmp, hrow *rows_out, size_t *n_out) {
  uint32_t count = h->sources[p->source].count;
  TRY(wf_download(meta, p->meta, 0, sizeof *meta), "reading the last-good snapshot");
  uint32_t rows = meta->rows;
  if (rows == 0) return WF_OK;
  if (rows > p->cap || (!meta->has_ids && (uint64_t)meta->first + rows > count))
    return wf__error(WF_ERR_INVALID, NULL,
                     "world health check: a snapshot holds %u rows from id %u of %u points", rows,
                     meta->first, count);
  float(*sp)[4] = tmp, (*sv)[4] = (float(*)[4])((char *)tmp + (size_t)rows * 16);
  uint32_t *ids = (uint32_t *)((char *)tmp + (size_t)rows * 32);
  TRY(wf_download(sp, p->pos, 0, (size_t)rows * 16), "reading the last-good snapshot");
  TRY(wf_download(sv, p->vel, 0, (size_t)rows * 16), "reading the last-good snapshot");
  if (meta->has_ids) TRY(wf_download(ids, p->ids, 0, (size_t)rows * 4), "reading the snapshot");
  for (uint32_t r = 0; r < rows; r++) {
    uint32_t g = meta->has_ids ? ids[r] : meta->first + r;
    if (g >= count)
      return wf__error(WF_ERR_INVALID, NULL,
                       "world health check: a snapshot row has global id %u of %u", g, count);
    if (rows_out) {
      hrow *o = &rows_out[(*n_out)++];
      o->id = g;
      memcpy(o->pos, sp[r], 16), memcpy(o->vel, sv[r], 16);
      continue;
    }
    memcpy(pos[g], sp[r], 16);
    memcpy(vel[g], sv[r], 16);
  }
  return WF_OK;
}

/* Source s split over MPI ranks (particles): every rank's snapshot rows, gathered (a collective:
 * every rank calls it, also one that failed reading, which gives none) and put in global-id
 * order. Before the first distribution every rank's lead partition holds every particle (the
 * same bits on every rank), so an id may come more than once: counted once. */
static wf_status source_gather(wfw_health *h, int s, float (*pos)[4], float (*vel)[4],
                               wfw_clock *clock, void *tmp, wf_status st) {
  uint32_t count = h->sources[s].count;
  size_t cap = 0, n = 0;
  for (int i = h->source_parts[s]; i < h->source_parts[s + 1]; i++)
    cap += h->parts[i].cap;
  hrow *rows = malloc((cap ? cap : 1) * sizeof *rows);
  uint8_t *seen = calloc((size_t)count / 8 + 1, 1);
  if (st == WF_OK && (!rows || !seen))
    st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_save_last_good", "out of host memory");
  bool clocked = false; /* the clock of the first partition holding rows (before the first
                         * distribution the others have not stepped) */
  for (int i = h->source_parts[s]; i < h->source_parts[s + 1] && st == WF_OK; i++) {
    wfh_snap_meta m;
    st = snapshot_read(h, &h->parts[i], NULL, NULL, &m, tmp, rows, &n);
    if (st == WF_OK && (!clocked || i == h->source_parts[s])) {
      memcpy(&clock[s], m.clock, sizeof clock[s]);
      clocked = m.rows > 0;
    }
  }
  void *all = NULL;
  size_t total = 0;
  wf_status st2 = wfpt_comm_allgather(h->comm, "world health check: the last-good snapshot", rows,
                                      st == WF_OK ? n * sizeof *rows : 0, &all, &total);
  if (st == WF_OK) st = st2;
  const hrow *a = all;
  uint64_t distinct = 0;
  for (size_t k = 0; st == WF_OK && k < total / sizeof *a; k++) {
    uint32_t g = a[k].id;
    if (g >= count) {
      st =
          wf__error(WF_ERR_INVALID, NULL,
                    "world health check: a gathered snapshot row has global id %u of %u", g, count);
      break;
    }
    if (seen[g / 8] & (1u << (g % 8))) continue;
    seen[g / 8] |= (uint8_t)(1u << (g % 8));
    distinct++;
    memcpy(pos[g], a[k].pos, 16), memcpy(vel[g], a[k].vel, 16);
  }
  if (st == WF_OK && distinct != count)
    st = wf__error(WF_ERR_INVALID, NULL,
                   "world health check: the ranks' snapshots hold %llu of %u points",
                   (unsigned long long)distinct, count);
  free(all), free(rows), free(seen);
  return st;
}

wf_status wfw_health_last_good(wfw_health *h, int64_t now, float (**pos)[4], float (**vel)[4],
                               wfw_clock *clock, int64_t *frame) {
  wf_status st = drain(h, now, true);
  if (st == WF_OK) st = sync_lanes(h);
  wfh_gate g = {0};
  if (st == WF_OK && (st = wf_download(&g, h->lanes[0].records, h->gate_off, sizeof g)) != WF_OK)
    st = fail_gpu(st, "reading the gate");
  size_t most = 1;
  for (int i = 0; i < h->n_parts; i++)
    if (h->parts[i].cap > most) most = h->parts[i].cap;
  void *tmp = malloc(most * 36);
  if (!tmp && st == WF_OK)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_save_last_good", "out of host memory");
  for (int s = 0; s < h->n_sources; s++) {
    if (h->comm &&
        over_ranks(&h->sources[s])) { /* split over the ranks: a collective, even after an error */
      st = source_gather(h, s, pos[s], vel[s], clock, tmp, st);
      continue;
    }
    uint64_t rows = 0;
    for (int i = h->source_parts[s]; i < h->source_parts[s + 1] && st == WF_OK; i++) {
      wfh_snap_meta m;
      if ((st = snapshot_read(h, &h->parts[i], pos[s], vel[s], &m, tmp, NULL, NULL)) != WF_OK)
        break;
      rows += m.rows;
      if (i == h->source_parts[s]) memcpy(&clock[s], m.clock, sizeof clock[s]); /* partition 0's */
    }
    if (st == WF_OK && rows != h->sources[s].count)
      st = wf__error(WF_ERR_INVALID, NULL,
                     "world health check: the snapshot's partitions hold %llu of %u points",
                     (unsigned long long)rows, h->sources[s].count);
  }
  free(tmp);
  if (st == WF_OK) *frame = g.good_frame;
  return st;
}

/* ---- out of memory: which scene key to lower ------------------------------------------------ */

/* Rewrites an out-of-memory failure of wf_world_create so that it names the objects that take
 * the memory and the scene keys that size them. */
wf_status wfw_oom_advice(const wf_scene *sc, const char *device, bool split) {
  char inner[900];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  uint64_t particles = 0, big_n = 0, big_v = 0;
  int big = -1, bigc = -1;
  for (int i = 0; i < sc->emitter_count; i++) {
    uint64_t n = wf_scene_emitter_count(&sc->emitters[i]);
    particles += n;
    if (n > big_n) big_n = n, big = i;
  }
  for (int i = 0; i < sc->cloth_count; i++) {
    const wf_scene_cloth *c = &sc->cloths[i];
    uint64_t n = c->is_mesh ? c->mesh_vertices : (uint64_t)c->resolution[0] * c->resolution[1];
    if (n > big_v) big_v = n, bigc = i;
  }
  char advice[700] = "";
  size_t at = 0;
  /* ~96 B per particle (particles.h) against ~200 B per cloth vertex: name the larger first */
  bool particles_first = 96 * big_n >= 200 * big_v;
  for (int pass = 0; pass < 2; pass++) {
    bool p = (pass == 0) == particles_first;
    if (p && big >= 0)
      at += (size_t)snprintf(advice + at, sizeof advice - at,
                             "%sparticles[%d] '%s' holds %llu of the scene's %llu particles: "
                             "lower particles[%d].half_extents (or sphere_radius) or raise "
                             "particles[%d].spacing",
                             at ? "; " : "", big, sc->emitters[big].name, (unsigned long long)big_n,
                             (unsigned long long)particles, big, big);
    if (!p && bigc >= 0 && at < sizeof advice)
      at += (size_t)snprintf(advice + at, sizeof advice - at,
                             "%scloths[%d] '%s' has %llu vertices: lower cloths[%d].%s",
                             at ? "; " : "", bigc, sc->cloths[bigc].name, (unsigned long long)big_v,
                             bigc,
                             sc->cloths[bigc].is_mesh ? "mesh (a coarser OBJ)" : "grid.resolution");
    if (at >= sizeof advice) at = sizeof advice - 1;
  }
  if (split)
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL,
                     "wf_world_create: the scene does not fit in the memory of %s: %s. To fit: %s "
                     "(or list more devices in simulation.devices / --device: the particles and "
                     "the cloths are split over all of them, with the health check's snapshot, "
                     "but cloths with self_collision stay whole on the first)",
                     device, inner, at ? advice : "lower the scene's particle and vertex counts");
  return wf__error(WF_ERR_OUT_OF_MEMORY, NULL,
                   "wf_world_create: the scene does not fit in the memory of %s: %s. To fit: %s "
                   "(or run on a device with more memory, or split the particles over several: "
                   "--device / simulation.devices)",
                   device, inner, at ? advice : "lower the scene's particle and vertex counts");
}
