/* The world's readback ring (weft/world.h): after each frame, a copy stream of its own copies every
 * object's positions into a pinned host slot, and a consumer on another thread (the viewer, PNG
 * frames) takes the newest finished slot without waiting for anything.
 *
 *     solver streams   ─ frame N ─┬──────────────────── frame N+1 ─┬──
 *                                 end_j (event)                    end_j
 *     copy stream                 └─ wait ─ copy_start ─ copies ─ copy_end
 *     consumer                                       latest() sees copy_end done ─ draws ─ release
 *
 * Invariants
 *  - Slot life: FREE → (push) IN FLIGHT → (latest: copy done, newest) HELD → (release) FREE; an
 *    in-flight slot that finished but is older than a delivered one is made FREE by latest (stale).
 *    push only takes a FREE slot; with none it skips the frame and counts it, so the simulation
 *    never waits for the consumer. A slot is handed out at most once per push.
 *  - The copy stream waits on events recorded at the end of the frame on every solver stream; the
 *    solvers' copy functions make the solver streams wait for the copies before their next frame
 *    (which would otherwise overwrite what is being read). So the simulation waits for the copy of
 *    the previous frame at most, never for a consumer.
 *  - Pinned slots live on cpu:0 and are allocated on its current stream (pinned memory must be a
 *    CPU device's); events and the copy stream live on the world's device.
 *  - Timing: each slot carries, per solver stream, the end of the previous frame, the start of its
 *    frame (wf_world_readback_begin_frame) and its end, plus the copy's start and end, all
 *    WF_EVENT_TIMING. The previous-end and start events are recorded into a staging set and
 *    swapped into the slot the frame is pushed to, so every interval is read from one slot.
 *  - One mutex guards the slot states: push and begin_frame run on the thread that steps the
 *    world, latest/release/timing on any thread.
 *  - The copies hold the solvers' positions, relative to each solver's origin (the particles',
 *    each cloth's: docs/precision.md); latest adds the origin (in double, rounded once:
 *    wf_particles_download's and wf_cloth_download's world positions, bit for bit) on the
 * consumer's thread, once per delivered slot, after the slot is HELD and so touched by no one else.
 * The GPU's copies and the solvers' fast paths stay plain copies.
 *  - Every push (skipped or not) also records the frame's end into a small ring of event sets
 *    (pending), which only the producer's thread touches: wf_world_readback_wait_frames lets a
 *    producer keep at most N frames queued on the device by waiting on its own frames' ends.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "weft/world.h"
#include "world_internal.h"

enum { SLOT_FREE, SLOT_IN_FLIGHT, SLOT_HELD };
enum { PENDING_MAX = 8 };

/* Events of one frame that are recorded before its push: per solver stream, the end of the
 * previous frame and the start of this one. */
typedef struct frame_marks {
  wf_event **prev_end, **begin;
  bool has_prev, has_begin;
} frame_marks;

typedef struct slot {
  int state;
  uint64_t seq;
  int64_t frame;
  wf_buffer *buf;
  const float (**pos)[4]; /* per object, into buf */
  const float (**vel)[4];
  frame_marks marks;
  wf_event **end; /* per solver stream */
  wf_event *copy_start, *copy_end;
} slot;

struct wf_world_readback {
  wf_world *w;
  wf_device *dev;
  wf_stream *copy;
  int n_streams;
  wf_stream **streams; /* solver streams: particles first, then each cloth's */
  int n_slots;
  slot *slots;
  frame_marks staging;
  bool velocities;
  size_t bytes, vel_off;
  size_t *cloth_off;         /* byte offset of each cloth's positions in a slot */
  double (*cloth_origin)[3]; /* each cloth's origin (its positions in a slot are relative to it) */
  double particle_origin[3]; /* the particles' (likewise) */
  /* end-of-frame events of the frames pushed (or skipped) and perhaps still running, oldest
     first, for wf_world_readback_wait_frames; only the producer's thread touches them */
  wf_event **pending[PENDING_MAX];
  int pending_head, pending_count;
  uint64_t next_seq, delivered_seq;
  wf_world_readback_stats stats;
  pthread_mutex_t lock;
};

static const char *const fn_create = "wf_world_readback_create";

wf_world_readback_desc wf_world_readback_desc_default(void) {
  return (wf_world_readback_desc){.slots = 3, .velocities = false};
}

static wf_status make_events(wf_device *d, int n, wf_event ***out) {
  *out = calloc((size_t)n + 1, sizeof **out);
  if (!*out) return wf__error(WF_ERR_OUT_OF_MEMORY, fn_create, "out of host memory");
  for (int i = 0; i < n; i++) {
    wf_status st = wf_event_create(d, WF_EVENT_TIMING, &(*out)[i]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

static void free_events(wf_event **e, int n) {
  for (int i = 0; e && i < n; i++)
    if (e[i]) wf_event_destroy(e[i]);
  free(e);
}

static wf_status make_marks(wf_world_readback *rb, frame_marks *m) {
  wf_status st = make_events(rb->dev, rb->n_streams, &m->prev_end);
  if (st == WF_OK) st = make_events(rb->dev, rb->n_streams, &m->begin);
  return st;
}

/* Points the slot's per-object arrays into its buffer. */
static void slot_layout(wf_world_readback *rb, slot *s) {
  const wf_world *w = rb->w;
  char *base = wf_buffer_ptr(s->buf);
  for (int i = 0; i < w->n_objects; i++) {
    const wfw_object *o = &w->objects[i];
    if (o->kind == WF_WORLD_CLOTH) {
      s->pos[i] = (const float(*)[4])(base + rb->cloth_off[o->cloth]);
      s->vel[i] = NULL;
    } else {
      s->pos[i] = (const float(*)[4])(base + (size_t)o->first * 16);
      s->vel[i] =
          rb->velocities ? (const float(*)[4])(base + rb->vel_off + (size_t)o->first * 16) : NULL;
    }
  }
}

static wf_status make_slot(wf_world_readback *rb, slot *s) {
  int n = rb->w->n_objects;
  s->pos = calloc((size_t)n + 1, sizeof *s->pos);
  s->vel = calloc((size_t)n + 1, sizeof *s->vel);
  if (!s->pos || !s->vel) return wf__error(WF_ERR_OUT_OF_MEMORY, fn_create, "out of host memory");
  /* pinned host memory belongs to a CPU device and is allocated on its current stream */
  wf_status st = wf_buffer_create(wf_device_at(0), rb->bytes, WF_BUFFER_PINNED, NULL, &s->buf);
  if (st == WF_OK) st = make_marks(rb, &s->marks);
  if (st == WF_OK) st = make_events(rb->dev, rb->n_streams, &s->end);
  if (st == WF_OK) st = wf_event_create(rb->dev, WF_EVENT_TIMING, &s->copy_start);
  if (st == WF_OK) st = wf_event_create(rb->dev, WF_EVENT_TIMING, &s->copy_end);
  if (st == WF_OK) slot_layout(rb, s);
  return st;
}

wf_status wf_world_readback_create(wf_world *w, const wf_world_readback_desc *desc,
                                   wf_world_readback **out) {
  if (!out) return wf__error(WF_ERR_INVALID, fn_create, "out is NULL");
  *out = NULL;
  if (!w) return wf__error(WF_ERR_INVALID, fn_create, "world is NULL");
  wf_world_readback_desc d = desc ? *desc : wf_world_readback_desc_default();
  if (d.slots == 0) d.slots = 3;
  if (d.slots < 3 || d.slots > 64)
    return wf__error(WF_ERR_INVALID, fn_create,
                     "slots = %d: a readback ring needs 3 to 64 slots (one being filled, one "
                     "finished, one held by the consumer)",
                     d.slots);
  wf_world_readback *rb = calloc(1, sizeof *rb);
  if (!rb) return wf__error(WF_ERR_OUT_OF_MEMORY, fn_create, "out of host memory");
  pthread_mutex_init(&rb->lock, NULL);
  rb->w = w;
  rb->dev = w->dev;
  rb->velocities = d.velocities;
  rb->n_slots = d.slots;
  rb->bytes = (size_t)w->n_particles * 16;
  rb->vel_off = rb->bytes;
  if (rb->velocities) rb->bytes += (size_t)w->n_particles * 16;
  rb->cloth_off = calloc((size_t)w->n_cloths + 1, sizeof *rb->cloth_off);
  rb->cloth_origin = calloc((size_t)w->n_cloths + 1, sizeof *rb->cloth_origin);
  rb->streams = calloc((size_t)w->n_cloths + 2, sizeof *rb->streams);
  rb->slots = calloc((size_t)d.slots, sizeof *rb->slots);
  wf_status st = WF_OK;
  if (!rb->cloth_off || !rb->cloth_origin || !rb->streams || !rb->slots)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn_create, "out of host memory");
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++) {
    st = wf_cloth_origin(w->cloths[i], rb->cloth_origin[i]);
    rb->cloth_off[i] = rb->bytes;
    rb->bytes += (size_t)w->objects[w->n_objects - w->n_cloths + i].count * 16;
  }
  if (rb->bytes == 0) rb->bytes = 16; /* a world without points still has slots */
  if (st == WF_OK && w->ps) st = wf_particles_origin(w->ps, rb->particle_origin);
  if (st == WF_OK && w->ps) rb->streams[rb->n_streams++] = wf_particles_stream(w->ps);
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++) {
    wf_stream *s = wf_cloth_stream(w->cloths[i]);
    bool seen = false;
    for (int k = 0; k < rb->n_streams; k++)
      seen = seen || rb->streams[k] == s;
    if (!seen) rb->streams[rb->n_streams++] = s;
  }
  if (st == WF_OK) st = wf_stream_create(rb->dev, 0, &rb->copy);
  if (st == WF_OK) st = make_marks(rb, &rb->staging);
  for (int i = 0; i < d.slots && st == WF_OK; i++)
    st = make_slot(rb, &rb->slots[i]);
  for (int i = 0; i < PENDING_MAX && st == WF_OK; i++)
    st = make_events(rb->dev, rb->n_streams, &rb->pending[i]);
  if (st != WF_OK) {
    wf_world_readback_destroy(rb);
    return st;
  }
  *out = rb;
  return WF_OK;
}

void wf_world_readback_destroy(wf_world_readback *rb) {
  if (!rb) return;
  if (rb->copy) wf_stream_synchronize(rb->copy);
  for (int i = 0; rb->slots && i < rb->n_slots; i++) {
    slot *s = &rb->slots[i];
    if (s->buf) wf_buffer_destroy(s->buf, NULL);
    free_events(s->marks.prev_end, rb->n_streams);
    free_events(s->marks.begin, rb->n_streams);
    free_events(s->end, rb->n_streams);
    if (s->copy_start) wf_event_destroy(s->copy_start);
    if (s->copy_end) wf_event_destroy(s->copy_end);
    free(s->pos), free(s->vel);
  }
  for (int i = 0; i < PENDING_MAX; i++)
    free_events(rb->pending[i], rb->n_streams);
  free_events(rb->staging.prev_end, rb->n_streams);
  free_events(rb->staging.begin, rb->n_streams);
  if (rb->copy) wf_stream_destroy(rb->copy);
  free(rb->slots), free(rb->streams), free(rb->cloth_off), free(rb->cloth_origin);
  pthread_mutex_destroy(&rb->lock);
  free(rb);
}

static wf_status record_all(wf_event **e, wf_stream **streams, int n) {
  for (int i = 0; i < n; i++) {
    wf_status st = wf_event_record(e[i], streams[i]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_world_readback_begin_frame(wf_world_readback *rb) {
  if (!rb) return wf__error(WF_ERR_INVALID, "wf_world_readback_begin_frame", "readback is NULL");
  wf_status st = record_all(rb->staging.begin, rb->streams, rb->n_streams);
  rb->staging.has_begin = st == WF_OK;
  return st;
}

/* Enqueues the copies of every object into slot s on the copy stream, after the frame's end on
 * every solver stream. */
static wf_status enqueue_copies(wf_world_readback *rb, slot *s) {
  wf_world *w = rb->w;
  wf_status st = WF_OK;
  for (int i = 0; i < rb->n_streams && st == WF_OK; i++)
    st = wf_stream_wait_event(rb->copy, s->end[i]);
  if (st == WF_OK) st = wf_event_record(s->copy_start, rb->copy);
  if (st == WF_OK && w->ps) /* gathered on the copy stream's device from every partition */
    st = wf_particles_copy_state(w->ps, s->buf, 0, rb->velocities ? s->buf : NULL, rb->vel_off,
                                 rb->copy);
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++)
    st = wf_cloth_copy_positions_on(w->cloths[i], s->buf, rb->cloth_off[i], rb->copy);
  if (st == WF_OK) st = wf_event_record(s->copy_end, rb->copy);
  return st;
}

static wf_status pending_pop(wf_world_readback *rb) {
  wf_event **e = rb->pending[rb->pending_head];
  rb->pending_head = (rb->pending_head + 1) % PENDING_MAX;
  rb->pending_count--;
  for (int i = 0; i < rb->n_streams; i++) {
    wf_status st = wf_event_synchronize(e[i]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_world_readback_wait_frames(wf_world_readback *rb, int max_running) {
  if (!rb) return wf__error(WF_ERR_INVALID, "wf_world_readback_wait_frames", "readback is NULL");
  if (max_running < 0) max_running = 0;
  while (rb->pending_count > max_running) {
    wf_status st = pending_pop(rb);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_world_readback_push(wf_world_readback *rb) {
  if (!rb) return wf__error(WF_ERR_INVALID, "wf_world_readback_push", "readback is NULL");
  if (rb->pending_count == PENDING_MAX) {
    wf_status st = pending_pop(rb); /* the oldest frame is done by now, or nearly */
    if (st != WF_OK) return st;
  }
  wf_status stp = record_all(rb->pending[(rb->pending_head + rb->pending_count) % PENDING_MAX],
                             rb->streams, rb->n_streams);
  if (stp != WF_OK) return stp;
  rb->pending_count++;
  pthread_mutex_lock(&rb->lock);
  int pick = -1;
  for (int i = 0; i < rb->n_slots && pick < 0; i++)
    if (rb->slots[i].state == SLOT_FREE) pick = i;
  if (pick < 0) rb->stats.skipped++;
  pthread_mutex_unlock(&rb->lock);

  wf_status st = WF_OK;
  if (pick >= 0) {
    /* the slot is FREE: only this thread touches it until it is marked IN FLIGHT */
    slot *s = &rb->slots[pick];
    frame_marks m = s->marks;
    s->marks = rb->staging;
    rb->staging = m;
    st = record_all(s->end, rb->streams, rb->n_streams);
    if (st == WF_OK) st = enqueue_copies(rb, s);
    s->frame = rb->w->frame;
  }
  /* the next frame's "previous end" is this frame's end (recorded before the copies, so that the
     solvers' wait for the copy shows as idle time of the next frame) */
  rb->staging.has_prev = rb->staging.has_begin = false;
  wf_status st2 = record_all(rb->staging.prev_end, rb->streams, rb->n_streams);
  rb->staging.has_prev = st2 == WF_OK;
  if (pick < 0) return st2 != WF_OK ? st2 : WF_NOT_READY;

  pthread_mutex_lock(&rb->lock);
  slot *s = &rb->slots[pick];
  if (st == WF_OK) {
    s->state = SLOT_IN_FLIGHT;
    s->seq = ++rb->next_seq;
    rb->stats.pushed++;
  }
  pthread_mutex_unlock(&rb->lock);
  return st != WF_OK ? st : st2;
}

/* The positions in held slot s made world positions (see the invariants). */
static void positions_to_world(wf_world_readback *rb, slot *s) {
  const wf_world *w = rb->w;
  char *base = wf_buffer_ptr(s->buf);
  float(*pp)[4] = (float(*)[4])(void *)base; /* the particles first */
  for (int k = 0; k < 3; k++) {
    double o = rb->particle_origin[k];
    for (uint32_t j = 0; o != 0.0 && j < w->n_particles; j++)
      pp[j][k] = (float)((double)pp[j][k] + o);
  }
  for (int i = 0; i < w->n_cloths; i++) {
    float(*p)[4] = (float(*)[4])(void *)(base + rb->cloth_off[i]);
    uint32_t n = w->objects[w->n_objects - w->n_cloths + i].count;
    for (int k = 0; k < 3; k++) {
      double o = rb->cloth_origin[i][k];
      for (uint32_t j = 0; o != 0.0 && j < n; j++)
        p[j][k] = (float)((double)p[j][k] + o);
    }
  }
}

wf_status wf_world_readback_latest(wf_world_readback *rb, wf_world_frame_view *out) {
  if (!rb || !out) return wf__error(WF_ERR_INVALID, "wf_world_readback_latest", "NULL argument");
  memset(out, 0, sizeof *out);
  out->slot = -1;
  pthread_mutex_lock(&rb->lock);
  /* newest first, one query per slot: a slot finishing between two queries must not let an older
     frame be handed out after a newer one */
  int best = -1;
  for (int i = 0; i < rb->n_slots; i++) {
    slot *s = &rb->slots[i];
    if (s->state != SLOT_IN_FLIGHT || s->seq <= rb->delivered_seq) continue;
    if ((best < 0 || s->seq > rb->slots[best].seq) && wf_event_query(s->copy_end) == WF_OK)
      best = i;
  }
  if (best >= 0) {
    rb->delivered_seq = rb->slots[best].seq;
    rb->slots[best].state = SLOT_HELD;
    rb->stats.delivered++;
  }
  /* finished frames older than the newest delivered one will never be shown */
  for (int i = 0; i < rb->n_slots; i++) {
    slot *s = &rb->slots[i];
    if (s->state == SLOT_IN_FLIGHT && s->seq < rb->delivered_seq &&
        wf_event_query(s->copy_end) == WF_OK) {
      s->state = SLOT_FREE;
      rb->stats.stale++;
    }
  }
  pthread_mutex_unlock(&rb->lock);
  if (best < 0) return WF_NOT_READY;
  slot *s = &rb->slots[best];
  positions_to_world(rb, s);
  out->slot = best;
  out->frame = s->frame;
  out->object_count = rb->w->n_objects;
  out->pos = s->pos;
  out->vel = s->vel;
  return WF_OK;
}

void wf_world_readback_release(wf_world_readback *rb, int slot_index) {
  if (!rb || slot_index < 0 || slot_index >= rb->n_slots) return;
  pthread_mutex_lock(&rb->lock);
  if (rb->slots[slot_index].state == SLOT_HELD) rb->slots[slot_index].state = SLOT_FREE;
  pthread_mutex_unlock(&rb->lock);
}

static double elapsed(wf_event *a, wf_event *b) {
  float ms = 0.0f;
  return wf_event_elapsed_ms(a, b, &ms) == WF_OK ? (double)ms : 0.0;
}

wf_status wf_world_readback_timing_get(wf_world_readback *rb, int slot_index,
                                       wf_world_readback_timing *out) {
  static const char fn[] = "wf_world_readback_timing_get";
  if (!rb || !out) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&rb->lock);
  bool held =
      slot_index >= 0 && slot_index < rb->n_slots && rb->slots[slot_index].state == SLOT_HELD;
  pthread_mutex_unlock(&rb->lock);
  if (!held)
    return wf__error(WF_ERR_INVALID, fn,
                     "slot %d is not held: read the timing of a slot between "
                     "wf_world_readback_latest and wf_world_readback_release",
                     slot_index);
  /* a held slot's copy has finished, so every event of its frame has too */
  const slot *s = &rb->slots[slot_index];
  out->has_sim = s->marks.has_begin;
  out->has_idle = s->marks.has_begin && s->marks.has_prev;
  for (int i = 0; i < rb->n_streams; i++) {
    if (out->has_sim) {
      double sim = elapsed(s->marks.begin[i], s->end[i]);
      out->sim_ms = sim > out->sim_ms ? sim : out->sim_ms;
    }
    if (out->has_idle) {
      double idle = elapsed(s->marks.prev_end[i], s->marks.begin[i]);
      out->idle_ms = idle > out->idle_ms ? idle : out->idle_ms;
    }
    /* the copy starts after the last solver's end: the smallest of these */
    double wait = elapsed(s->end[i], s->copy_start);
    out->copy_wait_ms = i == 0 || wait < out->copy_wait_ms ? wait : out->copy_wait_ms;
  }
  out->copy_ms = elapsed(s->copy_start, s->copy_end);
  return WF_OK;
}

void wf_world_readback_stats_get(wf_world_readback *rb, wf_world_readback_stats *out) {
  if (!rb || !out) return;
  pthread_mutex_lock(&rb->lock);
  *out = rb->stats;
  pthread_mutex_unlock(&rb->lock);
}
