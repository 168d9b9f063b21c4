/* Transfer ring: pinned host slots that a producer stream fills and a consumer reads without either
 * waiting on the other (see wf_ring_create in weft/gpu.h for the slot life cycle and the policy
 * when every slot is busy). All ring state is guarded by one mutex; nothing here blocks on a stream
 * except wf_ring_destroy. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

enum { SLOT_FREE, SLOT_IN_FLIGHT, SLOT_HELD };

struct wf_ring {
  wf_device *dev;
  size_t slot_bytes;
  int n;
  wf_buffer **buf;
  wf_event **ev;
  int *state;
  uint64_t *seq;
  uint64_t next_seq;
  uint64_t delivered_seq; /* newest sequence handed to the consumer */
  wf_ring_stats stats;
  pthread_mutex_t lock;
};

wf_status wf_ring_create(wf_device *d, size_t slot_bytes, int slots, wf_ring **out) {
  static const char *fn = "wf_ring_create";
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!d) return wf__error(WF_ERR_INVALID, fn, "device is NULL");
  if (slots < 1 || slots > 64 || slot_bytes == 0)
    return wf__error(WF_ERR_INVALID, fn, "slots = %d (1..64) and slot_bytes = %zu (> 0)", slots,
                     slot_bytes);
  wf_device *host = wf__device_at(0); /* cpu:0 holds the pinned slots */
  wf_ring *r = calloc(1, sizeof *r);
  if (!r) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  r->dev = d;
  r->slot_bytes = slot_bytes;
  r->n = slots;
  r->buf = calloc((size_t)slots, sizeof *r->buf);
  r->ev = calloc((size_t)slots, sizeof *r->ev);
  r->state = calloc((size_t)slots, sizeof *r->state);
  r->seq = calloc((size_t)slots, sizeof *r->seq);
  pthread_mutex_init(&r->lock, NULL);
  if (!r->buf || !r->ev || !r->state || !r->seq) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  } else {
    for (int i = 0; i < slots && st == WF_OK; i++) {
      st = wf_buffer_create(host, slot_bytes, WF_BUFFER_PINNED, NULL, &r->buf[i]);
      if (st == WF_OK) st = wf_event_create(d, 0, &r->ev[i]);
    }
  }
  if (st != WF_OK) {
    wf_ring_destroy(r);
    return st;
  }
  *out = r;
  return WF_OK;
}

wf_status wf_ring_push(wf_ring *r, const wf_buffer *src, size_t src_off, size_t bytes, wf_stream *s,
                       int *slot) {
  static const char *fn = "wf_ring_push";
  if (slot) *slot = -1;
  if (!r || !src) return wf__error(WF_ERR_INVALID, fn, "NULL ring or buffer");
  if (bytes > r->slot_bytes)
    return wf__error(WF_ERR_INVALID, fn, "%zu bytes do not fit a %zu-byte slot", bytes,
                     r->slot_bytes);
  if (!s) s = wf__current(r->dev);
  if (s->dev != r->dev)
    return wf__error(WF_ERR_INVALID, fn, "ring of %s pushed on a stream of %s", r->dev->name,
                     s->dev->name);
  if (wf__stream_capturing(s))
    return wf__error(WF_ERR_CAPTURE, fn,
                     "ring pushes cannot be captured (the ring's slot bookkeeping lives on the "
                     "host); push after launching the graph");
  pthread_mutex_lock(&r->lock);
  int pick = -1;
  for (int i = 0; i < r->n && pick < 0; i++)
    if (r->state[i] == SLOT_FREE) pick = i;
  bool overwrite = false;
  if (pick < 0)
    for (int i = 0; i < r->n; i++)
      if (r->state[i] == SLOT_IN_FLIGHT && (pick < 0 || r->seq[i] < r->seq[pick])) pick = i;
  if (pick < 0) {
    r->stats.refused++;
    pthread_mutex_unlock(&r->lock);
    return WF_NOT_READY; /* every slot is held by the consumer: this frame is dropped */
  }
  overwrite = r->state[pick] == SLOT_IN_FLIGHT;
  wf_status st = wf_copy(r->buf[pick], 0, src, src_off, bytes, s);
  if (st == WF_OK) st = wf_event_record(r->ev[pick], s);
  if (st == WF_OK) {
    if (overwrite) r->stats.overwritten++;
    r->state[pick] = SLOT_IN_FLIGHT;
    r->seq[pick] = ++r->next_seq;
    r->stats.pushed++;
    if (slot) *slot = pick;
  }
  pthread_mutex_unlock(&r->lock);
  return st;
}

wf_status wf_ring_latest(wf_ring *r, int *slot, const void **data) {
  if (slot) *slot = -1;
  if (data) *data = NULL;
  if (!r) return wf__error(WF_ERR_INVALID, "wf_ring_latest", "ring is NULL");
  pthread_mutex_lock(&r->lock);
  /* Newest first: a slot may finish between two queries, so checking in slot order could hand
     out a newer frame and then, on the next call, an older one. Anything older than the frame
     already delivered is stale and never delivered. */
  int order[64], n = 0;
  for (int i = 0; i < r->n; i++)
    if (r->state[i] == SLOT_IN_FLIGHT) order[n++] = i;
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && r->seq[order[b]] > r->seq[order[b - 1]]; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  int best = -1;
  bool done[64];
  for (int k = 0; k < n; k++) { /* one query per slot and call */
    int i = order[k];
    done[k] = r->dev->be->event_query(r->ev[i]) == WF_OK;
    if (best < 0 && done[k] && r->seq[i] >= r->delivered_seq) best = i;
  }
  if (best >= 0) r->delivered_seq = r->seq[best];
  for (int k = 0; k < n; k++) {
    int i = order[k];
    if (done[k] && i != best && r->seq[i] <= r->delivered_seq) {
      r->state[i] = SLOT_FREE; /* an older finished frame nobody will look at */
      r->stats.stale++;
    }
  }
  if (best >= 0) {
    r->state[best] = SLOT_HELD;
    r->stats.delivered++;
    if (slot) *slot = best;
    if (data) *data = wf_buffer_ptr(r->buf[best]);
  }
  pthread_mutex_unlock(&r->lock);
  return best >= 0 ? WF_OK : WF_NOT_READY;
}

void wf_ring_release(wf_ring *r, int slot) {
  if (!r || slot < 0 || slot >= r->n) return;
  pthread_mutex_lock(&r->lock);
  if (r->state[slot] == SLOT_HELD) r->state[slot] = SLOT_FREE;
  pthread_mutex_unlock(&r->lock);
}

void wf_ring_stats_get(const wf_ring *r, wf_ring_stats *out) {
  if (!r || !out) return;
  pthread_mutex_lock((pthread_mutex_t *)&r->lock);
  *out = r->stats;
  pthread_mutex_unlock((pthread_mutex_t *)&r->lock);
}

void wf_ring_destroy(wf_ring *r) {
  if (!r) return;
  for (int i = 0; r->ev && i < r->n; i++)
    if (r->ev[i]) {
      r->dev->be->event_synchronize(r->ev[i]);
      wf_event_destroy(r->ev[i]);
    }
  for (int i = 0; r->buf && i < r->n; i++)
    wf_buffer_destroy(r->buf[i], NULL);
  free(r->buf);
  free(r->ev);
  free(r->state);
  free(r->seq);
  pthread_mutex_destroy(&r->lock);
  free(r);
}
