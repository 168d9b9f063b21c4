/* Streams, events, the per-device current-stream stack and cross-stream ordering.
 *
 * Ordering between two streams always goes through an event: `waiter` waits for a recording of
 * `other`'s internal mark event. When the two streams belong to different backends (a CUDA stream
 * waiting for a CPU stream, or the reverse) the waiter queues a host function that blocks until a
 * temporary event of the other backend completes. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

static _Atomic uint64_t next_stream_id = 1;

/* ---- events ---- */

wf_event *wf__event_new(wf_device *d, unsigned flags, wf_status *st) {
  wf_event *e = calloc(1, sizeof *e);
  if (!e) {
    *st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_event_create", "out of host memory");
    return NULL;
  }
  e->dev = d;
  e->flags = flags;
  *st = d->be->event_create(e);
  if (*st != WF_OK) {
    free(e);
    return NULL;
  }
  return e;
}

void wf__event_free(wf_event *e) {
  if (!e) return;
  e->dev->be->event_destroy(e);
  free(e);
}

wf_status wf_event_create(wf_device *d, unsigned flags, wf_event **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_event_create", "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!d) return wf__error(WF_ERR_INVALID, "wf_event_create", "device is NULL");
  if (flags & ~(unsigned)WF_EVENT_TIMING)
    return wf__error(WF_ERR_INVALID, "wf_event_create", "unknown flags 0x%x (only WF_EVENT_TIMING)",
                     flags);
  *out = wf__event_new(d, flags, &st);
  return st;
}

void wf_event_destroy(wf_event *e) { wf__event_free(e); }

wf_status wf_event_record(wf_event *e, wf_stream *s) {
  if (!e) return wf__error(WF_ERR_INVALID, "wf_event_record", "event is NULL");
  if (!s) s = wf__current(e->dev);
  if (s->dev != e->dev)
    return wf__error(
        WF_ERR_INVALID, "wf_event_record",
        "event of %s recorded on a stream of %s; record an event of the stream's device",
        e->dev->name, s->dev->name);
  return wf__record(e, s);
}

wf_status wf_event_query(wf_event *e) {
  if (!e) return wf__error(WF_ERR_INVALID, "wf_event_query", "event is NULL");
  if (wf__thread_captures() > 0)
    return wf__error(WF_ERR_CAPTURE, "wf_event_query",
                     "this thread is capturing a graph; querying events cannot be captured");
  return e->dev->be->event_query(e);
}

wf_status wf_event_synchronize(wf_event *e) {
  if (!e) return wf__error(WF_ERR_INVALID, "wf_event_synchronize", "event is NULL");
  wf_status st = wf__check_no_capture("wf_event_synchronize", NULL,
                                      "order the work with wf_stream_wait_event instead");
  return st != WF_OK ? st : e->dev->be->event_synchronize(e);
}

wf_status wf_event_elapsed_ms(wf_event *a, wf_event *b, float *ms) {
  if (!a || !b || !ms) return wf__error(WF_ERR_INVALID, "wf_event_elapsed_ms", "NULL argument");
  if (!(a->flags & WF_EVENT_TIMING) || !(b->flags & WF_EVENT_TIMING))
    return wf__error(WF_ERR_INVALID, "wf_event_elapsed_ms",
                     "both events need WF_EVENT_TIMING (create them with that flag)");
  if (a->dev->be != b->dev->be)
    return wf__error(WF_ERR_INVALID, "wf_event_elapsed_ms",
                     "events of %s and %s cannot be compared", a->dev->name, b->dev->name);
  return a->dev->be->event_elapsed(a, b, ms);
}

/* ---- streams ---- */

static wf_stream *stream_new(wf_device *d) {
  wf_stream *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->dev = d;
  atomic_init(&s->refs, 1);
  s->id = atomic_fetch_add(&next_stream_id, 1);
  pthread_mutex_init(&s->lock, NULL);
  return s;
}

static wf_status stream_finish(wf_stream *s, wf_status st, wf_stream **out) {
  if (st == WF_OK) {
    s->mark = wf__event_new(s->dev, 0, &st);
    if (!s->mark) s->dev->be->stream_release(s);
  }
  if (st != WF_OK) {
    pthread_mutex_destroy(&s->lock);
    free(s);
    return st;
  }
  wf__stream_register(s);
  *out = s;
  return WF_OK;
}

static wf_status stream_create(wf_device *d, int priority, wf_stream **out) {
  wf_stream *s = stream_new(d);
  if (!s) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_stream_create", "out of host memory");
  return stream_finish(s, d->be->stream_create(s, priority), out);
}

wf_status wf_stream_create(wf_device *d, int priority, wf_stream **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_stream_create", "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!d) return wf__error(WF_ERR_INVALID, "wf_stream_create", "device is NULL");
  return stream_create(d, priority, out);
}

wf_status wf_stream_wrap(wf_device *d, void *native, wf_stream **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_stream_wrap", "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!d) return wf__error(WF_ERR_INVALID, "wf_stream_wrap", "device is NULL");
  if (!d->is_cuda)
    return wf__error(WF_ERR_UNSUPPORTED, "wf_stream_wrap",
                     "%s is a CPU device; only CUDA streams (cudaStream_t) can be wrapped",
                     d->name);
  if (!native)
    return wf__error(WF_ERR_INVALID, "wf_stream_wrap",
                     "native stream is NULL: the legacy default stream cannot be wrapped, create a "
                     "stream with cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)");
  wf_stream *s = stream_new(d);
  if (!s) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_stream_wrap", "out of host memory");
  s->wrapped = true;
  return stream_finish(s, d->be->stream_wrap(s, native), out);
}

void wf__stream_retain(wf_stream *s) { atomic_fetch_add(&s->refs, 1); }

void wf__stream_release(wf_stream *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  wf__stream_unregister(s);
  s->dev->be->stream_release(s);
  wf__event_free(s->mark);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

void wf_stream_destroy(wf_stream *s) {
  if (!s || s->is_default) return;
  if (wf__stream_capturing(s))
    wf__log(WF_LOG_ERROR, "wf_stream_destroy: %s stream is being captured; end the capture first",
            s->dev->name);
  wf__stream_release(s);
}

wf_device *wf_stream_device(const wf_stream *s) { return s ? s->dev : NULL; }
void *wf_stream_native(wf_stream *s) { return s && s->dev->is_cuda ? s->native : NULL; }

bool wf__stream_capturing(const wf_stream *s) {
  return s->capture != NULL || s->dev->be->stream_is_capturing(s);
}

bool wf_stream_is_capturing(const wf_stream *s) { return s && wf__stream_capturing(s); }

wf_status wf__check_no_capture(const char *func, const wf_stream *s, const char *instead) {
  if (wf__thread_captures() > 0 || (s && wf__stream_capturing(s)))
    return wf__error(WF_ERR_CAPTURE, func,
                     "a graph capture is in progress%s%s and this call would block the host, which "
                     "cannot be captured; %s",
                     s ? " on a stream of " : "", s ? s->dev->name : "", instead);
  return WF_OK;
}

wf_status wf_stream_synchronize(wf_stream *s) {
  if (!s) return wf__error(WF_ERR_INVALID, "wf_stream_synchronize", "stream is NULL");
  wf_status st = wf__check_no_capture("wf_stream_synchronize", s,
                                      "end the capture first, or order work with events");
  return st != WF_OK ? st : s->dev->be->stream_synchronize(s);
}

wf_status wf_stream_query(wf_stream *s) {
  if (!s) return wf__error(WF_ERR_INVALID, "wf_stream_query", "stream is NULL");
  if (wf__stream_capturing(s))
    return wf__error(WF_ERR_CAPTURE, "wf_stream_query",
                     "the %s stream is being captured; a captured stream cannot be queried",
                     s->dev->name);
  return s->dev->be->stream_query(s);
}

/* Host function that blocks until an event of another backend completes (and optionally frees it).
 */
typedef struct foreign_wait {
  wf_event *e;
  bool owned;
} foreign_wait;

static void foreign_wait_fn(void *p) {
  foreign_wait *w = p;
  w->e->dev->be->event_synchronize(w->e);
  if (w->owned) wf__event_free(w->e);
  free(w);
}

static wf_status wait_foreign(wf_stream *s, wf_event *e, bool owned) {
  if (wf__stream_capturing(s)) {
    const char *other = e->dev->name; /* the device outlives the event */
    if (owned) wf__event_free(e);
    return wf__error(WF_ERR_CAPTURE, "wf_stream_wait_event",
                     "a captured %s stream cannot wait on work of %s (another backend); order it "
                     "before wf_capture_begin",
                     s->dev->name, other);
  }
  foreign_wait *w = malloc(sizeof *w);
  if (!w) {
    if (owned) wf__event_free(e);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_stream_wait_event", "out of host memory");
  }
  w->e = e;
  w->owned = owned;
  wf_status st = s->dev->be->host_func(s, foreign_wait_fn, w);
  if (st != WF_OK) {
    if (owned) wf__event_free(e);
    free(w);
  }
  return st;
}

wf_status wf__wait_event_any(wf_stream *s, wf_event *e) {
  if (s->dev->be != e->dev->be) return wait_foreign(s, e, false);
  wf__join_capture(s, e); /* a fork: the wait itself belongs to the capture */
  return s->dev->be->stream_wait_event(s, e);
}

wf_status wf_stream_wait_event(wf_stream *s, wf_event *e) {
  if (!s || !e) return wf__error(WF_ERR_INVALID, "wf_stream_wait_event", "NULL stream or event");
  return wf__wait_event_any(s, e);
}

wf_status wf__stream_after(wf_stream *waiter, wf_stream *other) {
  if (waiter == other) return WF_OK;
  if (waiter->dev->be == other->dev->be) {
    pthread_mutex_lock(&other->lock);
    wf_status st = wf__record(other->mark, other);
    if (st == WF_OK) {
      wf__join_capture(waiter, other->mark);
      st = waiter->dev->be->stream_wait_event(waiter, other->mark);
    }
    pthread_mutex_unlock(&other->lock);
    return st;
  }
  wf_status st;
  wf_event *tmp = wf__event_new(other->dev, 0, &st);
  if (!tmp) return st;
  st = other->dev->be->event_record(tmp, other);
  if (st != WF_OK) {
    wf__event_free(tmp);
    return st;
  }
  return wait_foreign(waiter, tmp, true);
}

wf_status wf_stream_wait_stream(wf_stream *waiter, wf_stream *other) {
  if (!waiter || !other) return wf__error(WF_ERR_INVALID, "wf_stream_wait_stream", "NULL stream");
  return wf__stream_after(waiter, other);
}

wf_status wf_stream_host_func(wf_stream *s, void (*fn)(void *), void *user) {
  if (!s || !fn) return wf__error(WF_ERR_INVALID, "wf_stream_host_func", "NULL stream or function");
  wf__note_node(s);
  return s->dev->be->host_func(s, fn, user);
}

/* ---- current stream ---- */

/* Returns the device's current stream without taking a reference; creates the default stream on
 * first use. The default stream is a normal non-blocking stream, never CUDA's legacy stream. */
wf_stream *wf__current(wf_device *d) {
  pthread_mutex_lock(&d->lock);
  wf_stream *s = d->depth > 0 ? d->stack[d->depth - 1] : d->base;
  if (!s) {
    if (!d->default_stream) {
      wf_stream *created = NULL;
      if (stream_create(d, 0, &created) == WF_OK) {
        created->is_default = true;
        d->default_stream = created;
      }
    }
    s = d->default_stream;
  }
  pthread_mutex_unlock(&d->lock);
  return s;
}

wf_stream *wf_device_stream(wf_device *d) {
  if (!d || wf__ensure_init() != WF_OK) return NULL;
  return wf__current(d);
}

wf_status wf_device_set_stream(wf_device *d, wf_stream *s) {
  if (!d) return wf__error(WF_ERR_INVALID, "wf_device_set_stream", "device is NULL");
  if (s && s->dev != d)
    return wf__error(WF_ERR_INVALID, "wf_device_set_stream", "stream of %s set as current on %s",
                     s->dev->name, d->name);
  if (s) wf__stream_retain(s);
  pthread_mutex_lock(&d->lock);
  wf_stream **slot = d->depth > 0 ? &d->stack[d->depth - 1] : &d->base;
  wf_stream *old = *slot;
  *slot = s;
  if (!s && d->depth > 0) { /* NULL on a pushed level: fall back to the default stream */
    *slot = d->default_stream;
    if (*slot) wf__stream_retain(*slot);
  }
  pthread_mutex_unlock(&d->lock);
  wf__stream_release(old);
  return WF_OK;
}

wf_status wf_stream_push(wf_stream *s) {
  if (!s) return wf__error(WF_ERR_INVALID, "wf_stream_push", "stream is NULL");
  wf_device *d = s->dev;
  wf_stream *prev = wf__current(d);
  wf_status st = prev ? wf__stream_after(s, prev) : WF_OK;
  if (st != WF_OK) return st;
  pthread_mutex_lock(&d->lock);
  if (d->depth == WF_STREAM_STACK) {
    pthread_mutex_unlock(&d->lock);
    return wf__error(WF_ERR_INVALID, "wf_stream_push",
                     "%s: more than %d nested pushes (missing wf_stream_pop?)", d->name,
                     WF_STREAM_STACK);
  }
  wf__stream_retain(s);
  d->stack[d->depth++] = s;
  pthread_mutex_unlock(&d->lock);
  return WF_OK;
}

wf_status wf_stream_pop(wf_device *d) {
  if (!d) return wf__error(WF_ERR_INVALID, "wf_stream_pop", "device is NULL");
  pthread_mutex_lock(&d->lock);
  if (d->depth == 0) {
    pthread_mutex_unlock(&d->lock);
    return wf__error(WF_ERR_INVALID, "wf_stream_pop", "%s: pop without a matching wf_stream_push",
                     d->name);
  }
  wf_stream *popped = d->stack[--d->depth];
  pthread_mutex_unlock(&d->lock);
  wf_stream *now = wf__current(d);
  wf_status st = now ? wf__stream_after(now, popped) : WF_OK;
  wf__stream_release(popped);
  return st;
}
