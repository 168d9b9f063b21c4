/* The world's reliability: the per-frame health check on the device, the last-good snapshot, and
 * the advice given when a world does not fit in memory (weft/world.h, "health").
 *
 * After each frame (wfw_health_after_frame) the health stream waits for every solver stream and
 * runs the kernels of health_kernels.h: CHECK + DETAIL per object into a device record, VERDICT
 * into the gate, COMMIT of each solver buffer (positions, velocities, the clock's time and
 * substeps) into its snapshot when the gate says so, then copies the records and the gate into
 * the frame's pinned slot and records the slot's event. Every solver stream then waits for the
 * health stream, so the next frame cannot overwrite the state while it is being read or copied.
 *
 * Why a device-side snapshot gated by the device's verdict: the host learns of a bad frame one or
 * more frames late (it never waits for the GPU to find out), and by then the solvers have moved
 * on; checkpoints every N frames would lose up to N frames and cost a download each. Copying the
 * checked state on the device, only while every frame so far was healthy, keeps exactly the frame
 * before the first unhealthy one, at the cost of one device copy of the state per frame (32 bytes
 * per point, ~1/3 of a DEM substep's traffic for one of 48-64 substeps) and one snapshot's memory.
 * The snapshot holds the bits of the solvers' own buffers, clocks included, so a checkpoint
 * written from it resumes bitwise identically, as any other checkpoint does.
 *
 * The particles are read partition by partition on the devices (wf_particles_partition_view):
 * one partition's own buffers directly, as before; several partitions' owned rows gathered by
 * wf_particles_copy_state (peer copies and a scatter by global id) into buffers of the check's on
 * the first device, with partition 0's clock, so the checks, the verdict and the snapshot see one
 * state in global-id order and nothing travels through the host.
 *
 * Invariants
 *  - Slot f % WF_WORLD_HEALTH_DEPTH holds frame f's records; h->next is the oldest frame whose
 *    record the host has not read. Records are read in frame order, so the first unhealthy frame
 *    read is the first unhealthy frame.
 *  - The gate's `tripped` is sticky on the device: after the first unhealthy frame no snapshot
 *    is taken, so the snapshot holds gate.good_frame = the frame before it.
 *  - A restore (checkpoint load) waits for the checks in flight, forgets every verdict and
 *    snapshots the restored state unconditionally.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "health_kernels.h"
#include "solvers/particle/collider.h"
#include "weft/world.h"

#include "world_internal.h"

enum { SLOTS = WF_WORLD_HEALTH_DEPTH, MAX_SRC = 3 };

typedef struct wfw_health wfw_health;

typedef struct hslot {
  wf_buffer *mirror; /* pinned: the records, then the gate */
  wf_event *done;
  int64_t frame;
  bool pending;
} hslot;

/* A solver buffer and its snapshot; the buffer is looked up again at every use. */
typedef struct hsrc {
  int solver; /* -1: the particle solver; i >= 0: cloth i */
  int which;  /* 0 pos, 1 vel, 2 clock */
  size_t bytes;
  wf_buffer *snap;
} hsrc;

struct wfw_health {
  wf_stream *stream;
  wf_buffer *colliders; /* wfp_collider[n_colliders] (at least one element) */
  uint32_t n_colliders;
  char (*collider_names)[WF_SCENE_NAME_MAX];
  float *thickness;   /* per cloth */
  wf_buffer *records; /* wfh_record[n_objects], then the gate at gate_off */
  size_t gate_off, record_bytes;
  hslot slots[SLOTS];
  hsrc *src;
  int n_src;
  wf_buffer *ppos, *pvel, *pclock; /* several partitions: the particles gathered, global order */
  float max_speed2, max_penetration;
  double max_speed, max_pen;
  int64_t next;        /* the oldest frame whose record is not read */
  int64_t checked;     /* the latest frame whose record was read */
  int64_t last_good;   /* the latest frame read as healthy */
  wf_world_health bad; /* quantity != WF_HEALTH_OK once a frame was unhealthy */
  char object_name[WF_SCENE_NAME_MAX];
  char collider_name[WF_SCENE_NAME_MAX];
  char message[1024];
};

/* A GPU-layer call failed: keep its message, with what the check was doing. */
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

static int first_cloth(const wf_world *w) { return w->n_objects - w->n_cloths; }

static wf_stream *solver_stream(wf_world *w, int solver) {
  return solver < 0 ? wf_particles_stream(w->ps) : wfw_cloth_stream(w, solver);
}

/* The particle state the check reads: one partition's own buffers (its view), or the gathered
 * copy of several (gather_particles). */
static wf_status particle_buffers(wf_world *w, wf_buffer **b) {
  wfw_health *h = w->health;
  if (h->ppos) {
    b[0] = h->ppos, b[1] = h->pvel, b[2] = h->pclock;
    return WF_OK;
  }
  wf_partition_view v;
  wf_status st = wf_particles_partition_view(w->ps, 0, &v);
  b[0] = v.pos, b[1] = v.vel, b[2] = v.clock;
  return st;
}

static wf_status solver_buffers(wf_world *w, int solver, wf_buffer **b) {
  wf_status st = solver < 0 ? particle_buffers(w, b)
                            : wfw_cloth_buffers(w, solver, &b[0], &b[1], &b[2]);
  return st != WF_OK ? fail_gpu(st, "looking up a solver's state") : WF_OK;
}

/* Several partitions: their owned rows gathered on the devices into the check's buffers on the
 * first device (global-id order), and partition 0's clock (every partition keeps the same). */
static wf_status gather_particles(wf_world *w) {
  wfw_health *h = w->health;
  if (!h->ppos) return WF_OK;
  wf_partition_view v;
  TRY(wf_particles_copy_state(w->ps, h->ppos, 0, h->pvel, 0, h->stream), "gathering particles");
  TRY(wf_particles_partition_view(w->ps, 0, &v), "finding the particle clock");
  TRY(wf_copy(h->pclock, 0, v.clock, 0, sizeof(wfw_clock), h->stream), "copying the clock");
  return WF_OK;
}

/* The health stream waits for every solver (before a check), or every solver waits for the
 * health stream (after it: the next frame must not overwrite what is being read). */
static wf_status join_solvers(wf_world *w, bool health_waits) {
  wfw_health *h = w->health;
  for (int s = w->ps ? -1 : 0; s < w->n_cloths; s++) {
    wf_stream *ss = solver_stream(w, s);
    wf_status st =
        health_waits ? wf_stream_wait_stream(h->stream, ss) : wf_stream_wait_stream(ss, h->stream);
    if (st != WF_OK) return fail_gpu(st, "ordering the check with the solvers");
  }
  return WF_OK;
}

/* COMMIT of every solver buffer into its snapshot, gated by the gate on the device. */
static wf_status enqueue_commits(wf_world *w) {
  wfw_health *h = w->health;
  const wfh_gate *gate = (const wfh_gate *)((char *)wf_buffer_ptr(h->records) + h->gate_off);
  for (int i = 0; i < h->n_src; i++) {
    wf_buffer *b[3];
    wf_status st = solver_buffers(w, h->src[i].solver, b);
    if (st != WF_OK) return st;
    wfh_commit_args a = {gate, wf_buffer_ptr(b[h->src[i].which]), wf_buffer_ptr(h->src[i].snap)};
    TRY(wf_launch(&wfh_commit_kernel, h->src[i].bytes / 16, &a, sizeof a, h->stream),
        "launching the snapshot copy");
    TRY(wf_buffer_touch(h->src[i].snap, h->stream), "ordering the snapshot");
  }
  return WF_OK;
}

/* The state now enqueued becomes the last good one, whatever the verdicts so far. */
static wf_status snapshot_now(wf_world *w) {
  wfw_health *h = w->health;
  wf_status st = join_solvers(w, true);
  if (st != WF_OK) return st;
  wfh_gate g = {1u, 0u, w->frame, -1};
  TRY(wf_upload(h->records, h->gate_off, &g, sizeof g, h->stream), "resetting the gate");
  if ((st = gather_particles(w)) != WF_OK || (st = enqueue_commits(w)) != WF_OK) return st;
  h->next = w->frame + 1;
  h->checked = h->last_good = w->frame;
  memset(&h->bad, 0, sizeof h->bad);
  h->message[0] = '\0';
  return join_solvers(w, false);
}

/* ---- create / destroy ----------------------------------------------------------------------- */

static wf_status add_src(wfw_health *h, wf_device *dev, int solver, int which, size_t bytes) {
  hsrc *s = &h->src[h->n_src];
  s->solver = solver, s->which = which, s->bytes = bytes;
  wf_status st =
      wf_buffer_create(dev, bytes < 16 ? 16 : bytes, WF_BUFFER_ZERO, h->stream, &s->snap);
  if (st != WF_OK) return st; /* the allocator's message says what and how much */
  h->n_src++;
  return WF_OK;
}

/* The gathered particle state of several partitions, on the first device. */
static wf_status gather_create(wf_world *w) {
  wfw_health *h = w->health;
  size_t bytes = (size_t)(w->n_particles ? w->n_particles : 1) * 16;
  wf_status st = wf_buffer_create(w->dev, bytes, WF_BUFFER_ZERO, h->stream, &h->ppos);
  if (st == WF_OK) st = wf_buffer_create(w->dev, bytes, WF_BUFFER_ZERO, h->stream, &h->pvel);
  if (st == WF_OK)
    st = wf_buffer_create(w->dev, sizeof(wfw_clock), WF_BUFFER_ZERO, h->stream, &h->pclock);
  return st;
}

wf_status wfw_health_create(wf_world *w, const wf_scene *sc) {
  wfw_health *h = calloc(1, sizeof *h);
  if (!h) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  w->health = h;
  h->n_colliders = (uint32_t)sc->collider_count;
  h->collider_names = calloc((size_t)sc->collider_count + 1, sizeof *h->collider_names);
  h->thickness = calloc((size_t)w->n_cloths + 1, sizeof *h->thickness);
  h->src = calloc((size_t)(w->n_cloths + 1) * MAX_SRC, sizeof *h->src);
  wfp_collider *cols = calloc((size_t)sc->collider_count + 1, sizeof *cols);
  wf_status st = WF_OK;
  if (!h->collider_names || !h->thickness || !h->src || !cols)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  /* the same conversion the solvers made of the scene's colliders (engine/world.c) */
  for (int i = 0; i < sc->collider_count && st == WF_OK; i++) {
    const wf_scene_collider *c = &sc->colliders[i];
    snprintf(h->collider_names[i], sizeof h->collider_names[i], "%s", c->name);
    wf_collider_desc d = wf_collider_desc_default();
    d.name = c->name;
    d.type = (int)c->type;
    double n = sqrt(c->normal[0] * c->normal[0] + c->normal[1] * c->normal[1] +
                    c->normal[2] * c->normal[2]);
    if (!(n > 0.0)) n = 1.0;
    for (int k = 0; k < 3; k++) {
      d.normal[k] = (float)(c->normal[k] / n);
      d.center[k] = (float)c->center[k], d.half_extents[k] = (float)c->half_extents[k];
      d.p0[k] = (float)c->p0[k], d.p1[k] = (float)c->p1[k];
      d.velocity[k] = (float)c->velocity[k];
    }
    d.offset = (float)(c->offset / n);
    d.radius = (float)c->radius;
    st = wfp_collider_from_desc("wf_world_create", "world health check", &d, &cols[i]);
  }
  for (int i = 0; i < w->n_cloths; i++)
    h->thickness[i] = (float)sc->cloths[i].material.thickness;
  h->max_speed = sc->simulation.max_speed;
  h->max_pen = sc->simulation.max_penetration;
  h->max_speed2 = h->max_speed > 0.0 ? (float)(h->max_speed * h->max_speed) : 0.0f;
  h->max_penetration = (float)h->max_pen;
  h->record_bytes = (size_t)w->n_objects * sizeof(wfh_record);
  h->gate_off = (h->record_bytes + 15) & ~(size_t)15;
  size_t total = h->gate_off + ((sizeof(wfh_gate) + 15) & ~(size_t)15);
  wf_device *host = NULL;
  if (st == WF_OK && (st = wf_stream_create(w->dev, 0, &h->stream)) != WF_OK)
    fail_gpu(st, "creating the health stream");
  if (st == WF_OK && (st = wf_device_get("cpu", &host)) != WF_OK) fail_gpu(st, "finding cpu:0");
  if (st == WF_OK) {
    st = wf_buffer_create(w->dev, total, WF_BUFFER_ZERO, h->stream, &h->records);
    if (st == WF_OK)
      st = wf_buffer_create(w->dev, (size_t)(h->n_colliders + 1) * sizeof(wfp_collider),
                            WF_BUFFER_ZERO, h->stream, &h->colliders);
    if (st == WF_OK && h->n_colliders)
      st = wf_upload(h->colliders, 0, cols, h->n_colliders * sizeof(wfp_collider), h->stream);
  }
  for (int i = 0; i < SLOTS && st == WF_OK; i++) {
    st =
        wf_buffer_create(host, total, WF_BUFFER_PINNED | WF_BUFFER_ZERO, NULL, &h->slots[i].mirror);
    if (st == WF_OK) st = wf_event_create(w->dev, 0, &h->slots[i].done);
  }
  free(cols);
  /* the snapshot: one buffer per solver buffer, sized like the state it keeps */
  if (st == WF_OK && w->ps && wf_particles_partition_count(w->ps) > 1)
    st = gather_create(w);
  if (st == WF_OK && w->ps) {
    size_t bytes = (size_t)w->n_particles * 16;
    for (int k = 0; k < 2 && st == WF_OK; k++)
      st = add_src(h, w->dev, -1, k, bytes);
    if (st == WF_OK) st = add_src(h, w->dev, -1, 2, sizeof(wfw_clock));
  }
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++) {
    size_t bytes = (size_t)w->objects[first_cloth(w) + i].count * 16;
    for (int k = 0; k < 2 && st == WF_OK; k++)
      st = add_src(h, w->dev, i, k, bytes);
    if (st == WF_OK) st = add_src(h, w->dev, i, 2, sizeof(wfw_clock));
  }
  if (st == WF_OK) st = snapshot_now(w);
  return st; /* on failure the caller destroys the world, and with it this */
}

void wfw_health_destroy(wf_world *w) {
  wfw_health *h = w->health;
  if (!h) return;
  if (h->stream) wf_stream_synchronize(h->stream);
  for (int i = 0; i < SLOTS; i++) {
    if (h->slots[i].done) wf_event_destroy(h->slots[i].done);
    if (h->slots[i].mirror) wf_buffer_destroy(h->slots[i].mirror, NULL);
  }
  for (int i = 0; i < h->n_src; i++)
    wf_buffer_destroy(h->src[i].snap, h->stream);
  wf_buffer *gathered[] = {h->ppos, h->pvel, h->pclock};
  for (int i = 0; i < 3; i++)
    if (gathered[i]) wf_buffer_destroy(gathered[i], h->stream);
  if (h->records) wf_buffer_destroy(h->records, h->stream);
  if (h->colliders) wf_buffer_destroy(h->colliders, h->stream);
  if (h->stream) wf_stream_destroy(h->stream);
  free(h->src), free(h->thickness), free(h->collider_names);
  free(h);
  w->health = NULL;
}

/* ---- the per-frame check ----------------------------------------------------------------------
 */

static wf_status enqueue_check(wf_world *w, hslot *slot) {
  wfw_health *h = w->health;
  wf_status st = join_solvers(w, true);
  if (st == WF_OK) st = gather_particles(w);
  if (st != WF_OK) return st;
  TRY(wf_memset(h->records, 0xff, 0, h->record_bytes, h->stream), "clearing the records");
  wfh_record *rec = wf_buffer_ptr(h->records);
  float time = (float)((double)w->frame / w->fps);
  for (int o = 0; o < w->n_objects; o++) {
    const wfw_object *ob = &w->objects[o];
    if (ob->count == 0) continue;
    bool cloth = ob->kind == WF_WORLD_CLOTH;
    wf_buffer *b[3];
    if ((st = solver_buffers(w, cloth ? ob->cloth : -1, b)) != WF_OK) return st;
    size_t first = cloth ? 0 : ob->first;
    wfh_check_args a = {(const wfp_f4 *)wf_buffer_ptr(b[0]) + first,
                        (const wfp_f4 *)wf_buffer_ptr(b[1]) + first,
                        wf_buffer_ptr(h->colliders),
                        &rec[o],
                        ob->count,
                        h->n_colliders,
                        cloth,
                        cloth ? h->thickness[ob->cloth] : 0.0f,
                        h->max_speed2,
                        h->max_penetration,
                        time};
    TRY(wf_launch(&wfh_check_kernel, ob->count, &a, sizeof a, h->stream), "launching the check");
    TRY(wf_launch(&wfh_detail_kernel, 1, &a, sizeof a, h->stream), "launching the check");
  }
  wfh_verdict_args v = {rec, (uint32_t)w->n_objects,
                        (wfh_gate *)((char *)wf_buffer_ptr(h->records) + h->gate_off), w->frame};
  TRY(wf_launch(&wfh_verdict_kernel, 1, &v, sizeof v, h->stream), "launching the verdict");
  if ((st = enqueue_commits(w)) != WF_OK) return st;
  TRY(wf_buffer_touch(h->records, h->stream), "ordering the records");
  TRY(wf_copy(slot->mirror, 0, h->records, 0, wf_buffer_size(h->records), h->stream),
      "copying the records to the host");
  TRY(wf_event_record(slot->done, h->stream), "recording the frame's event");
  slot->frame = w->frame;
  slot->pending = true;
  return join_solvers(w, false);
}

static const char *const quantity_text[] = {"is healthy", "has a non-finite position",
                                            "has a non-finite velocity", "is too fast",
                                            "is too deep in a collider"};

/* Frame `frame`'s records say object o is unhealthy: fill h->bad and its message. */
static void record_bad(wf_world *w, int o, const wfh_record *r, int64_t frame) {
  wfw_health *h = w->health;
  const wfw_object *ob = &w->objects[o];
  bool cloth = ob->kind == WF_WORLD_CLOTH;
  wf_world_health *b = &h->bad;
  uint32_t q = r->quantity <= WFH_PENETRATION ? r->quantity : WFH_POSITION_NONFINITE;
  snprintf(h->object_name, sizeof h->object_name, "%s", ob->name);
  h->collider_name[0] = '\0';
  b->quantity = (wf_world_health_quantity)q;
  b->frame = frame;
  b->object = o;
  b->object_name = h->object_name;
  b->index = cloth ? r->first : ob->first + r->first;
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

/* Reads the records of frames h->next .. upto in order; block: wait for each, else stop at the
 * first that is not finished. */
static wf_status drain(wf_world *w, int64_t upto, bool block) {
  wfw_health *h = w->health;
  for (; h->next <= upto; h->next++) {
    hslot *s = &h->slots[h->next % SLOTS];
    if (!s->pending || s->frame != h->next) continue; /* never enqueued (a failed step) */
    wf_status st = block ? wf_event_synchronize(s->done) : wf_event_query(s->done);
    if (st == WF_NOT_READY) return WF_OK;
    if (st != WF_OK) return fail_gpu(st, "waiting for a frame's record");
    s->pending = false;
    h->checked = s->frame;
    if (h->bad.quantity != WF_HEALTH_OK) continue;
    const wfh_record *rec = wf_buffer_ptr(s->mirror);
    int bad = -1;
    for (int o = 0; o < w->n_objects && bad < 0; o++)
      if (rec[o].first != WFH_NONE) bad = o;
    if (bad >= 0)
      record_bad(w, bad, &rec[bad], s->frame);
    else
      h->last_good = s->frame;
  }
  return WF_OK;
}

static wf_status health_error(wf_world *w) {
  wfw_health *h = w->health;
  if (h->bad.quantity == WF_HEALTH_OK) return WF_OK;
  return wf__error(WF_ERR_INVALID, NULL, "%s", h->message);
}

wf_status wfw_health_after_frame(wf_world *w) {
  wfw_health *h = w->health;
  if (!h) return WF_OK;
  /* the slot this frame takes held frame - SLOTS: read it (and any older) first */
  wf_status st = drain(w, w->frame - SLOTS, true);
  if (st == WF_OK) st = enqueue_check(w, &h->slots[w->frame % SLOTS]);
  if (st == WF_OK) st = drain(w, w->frame, false);
  return st != WF_OK ? st : health_error(w);
}

wf_status wfw_health_poll(wf_world *w) {
  if (!w->health) return WF_OK;
  wf_status st = drain(w, w->frame, false);
  return st != WF_OK ? st : health_error(w);
}

wf_status wfw_health_wait(wf_world *w) {
  if (!w->health) return WF_OK;
  wf_status st = drain(w, w->frame, true);
  return st != WF_OK ? st : health_error(w);
}

wf_status wfw_health_before_restore(wf_world *w) {
  if (!w->health) return WF_OK;
  wf_status st = drain(w, w->frame, true);
  if (st == WF_OK && (st = wf_stream_synchronize(w->health->stream)) != WF_OK)
    fail_gpu(st, "waiting for the checks");
  return st;
}

wf_status wfw_health_after_restore(wf_world *w) {
  if (!w->health) return WF_OK;
  for (int i = 0; i < SLOTS; i++)
    w->health->slots[i].pending = false;
  return snapshot_now(w);
}

/* ---- public -------------------------------------------------------------------------------- */

wf_status wf_world_health_get(wf_world *w, bool wait, wf_world_health *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_health_get", "NULL argument");
  wfw_health *h = w->health;
  if (!h) return wf__error(WF_ERR_INVALID, "wf_world_health_get", "the world has no health check");
  wf_status st = drain(w, w->frame, wait);
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

wf_status wf_world_save_last_good(wf_world *w, const char *path, int64_t *frame) {
  static const char fn[] = "wf_world_save_last_good";
  if (!w || !path) return wf__error(WF_ERR_INVALID, fn, "world or path is NULL");
  wfw_health *h = w->health;
  if (!h) return wf__error(WF_ERR_INVALID, fn, "the world has no health check");
  wf_status st = drain(w, w->frame, true);
  if (st != WF_OK) return st;
  TRY(wf_stream_synchronize(h->stream), "waiting for the checks");
  wfh_gate g;
  TRY(wf_download(&g, h->records, h->gate_off, sizeof g), "reading the gate");
  wfw_clock pclock = {0.0, 0}, *cclock = calloc((size_t)w->n_cloths + 1, sizeof *cclock);
  if (!cclock) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  /* the host copies now hold the snapshot, not the current state */
  w->cache_frame = -1;
  for (int i = 0; i < h->n_src && st == WF_OK; i++) {
    const hsrc *s = &h->src[i];
    void *dst;
    if (s->which == 2)
      dst = s->solver < 0 ? &pclock : &cclock[s->solver];
    else if (s->solver < 0)
      dst = s->which ? (void *)w->pvel : (void *)w->ppos;
    else
      dst = s->which ? (void *)w->cvel[s->solver] : (void *)w->cpos[s->solver];
    if (s->bytes && (st = wf_download(dst, s->snap, 0, s->bytes)) != WF_OK)
      fail_gpu(st, "reading the last-good snapshot");
  }
  if (st == WF_OK) st = wfw_save_state(w, path, g.good_frame, &pclock, cclock);
  free(cclock);
  if (st == WF_OK && frame) *frame = g.good_frame;
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
                     "the cloths are split over all of them, but cloths with self_collision, the "
                     "health check's snapshot and a copy of the particle and cloth state stay on "
                     "the first)",
                     device, inner, at ? advice : "lower the scene's particle and vertex counts");
  return wf__error(WF_ERR_OUT_OF_MEMORY, NULL,
                   "wf_world_create: the scene does not fit in the memory of %s: %s. To fit: %s "
                   "(or run on a device with more memory, or split the particles over several: "
                   "--device / simulation.devices)",
                   device, inner, at ? advice : "lower the scene's particle and vertex counts");
}
