/* Graph capture: begin/end, fork/join bookkeeping, launch and destroy.
 *
 * A capture starts on an origin stream. Another stream joins it when it waits on an event recorded
 * on a member (a fork, usually through wf_stream_wait_stream); it must be joined back, i.e. some
 * member must wait on it after its last captured work, before wf_capture_end. The CUDA backend gets
 * these rules from CUDA itself; the bookkeeping here gives the CPU backend the same ones and lets
 * the core track buffers per capture. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static wf_capture *active[64];
static int n_active;
static _Atomic uint64_t next_capture_id = 1;

static wf_capture *find_active(uint64_t id) {
  for (int i = 0; i < n_active; i++)
    if (active[i]->id == id) return active[i];
  return NULL;
}

wf_status wf__record(wf_event *e, wf_stream *s) {
  wf_capture *c = s->capture;
  e->cap_id = c ? c->id : 0;
  e->rec_stream = c ? s : NULL;
  e->rec_seq = c ? s->cap_cmds : 0;
  return s->dev->be->event_record(e, s);
}

void wf__join_capture(wf_stream *s, wf_event *e) {
  if (!e->cap_id) return;
  pthread_mutex_lock(&cap_lock);
  wf_capture *c = find_active(e->cap_id);
  if (c) {
    if (e->rec_stream && e->rec_stream->capture == c && e->rec_stream != s &&
        e->rec_seq > e->rec_stream->cap_joined)
      e->rec_stream->cap_joined = e->rec_seq;
    if (!s->capture && c->n_members < (int)(sizeof c->members / sizeof c->members[0])) {
      s->capture = c; /* fork: s joins the capture */
      s->cap_cmds = s->cap_joined = 0;
      c->members[c->n_members++] = s;
      wf__stream_retain(s);
    }
  }
  pthread_mutex_unlock(&cap_lock);
}

void wf__note_node(wf_stream *s) {
  if (!s->capture) return;
  s->cap_cmds++;
  s->capture->nodes++;
}

wf_status wf__capture_add_buffer(wf_capture *c, wf_buffer *b) {
  if (c->n_buffers == c->cap_buffers) {
    int cap = c->cap_buffers ? c->cap_buffers * 2 : 16;
    wf_buffer **grown = realloc(c->buffers, (size_t)cap * sizeof *grown);
    if (!grown) return wf__error(WF_ERR_OUT_OF_MEMORY, "capture", "out of host memory");
    c->buffers = grown;
    c->cap_buffers = cap;
  }
  wf__buffer_retain(b);
  c->buffers[c->n_buffers++] = b;
  return WF_OK;
}

wf_status wf_capture_begin(wf_stream *s) {
  static const char *fn = "wf_capture_begin";
  if (!s) return wf__error(WF_ERR_INVALID, fn, "stream is NULL");
  if (wf__stream_capturing(s))
    return wf__error(WF_ERR_CAPTURE, fn, "the %s stream is already being captured", s->dev->name);
  wf_capture *c = calloc(1, sizeof *c);
  if (!c) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  c->id = atomic_fetch_add(&next_capture_id, 1);
  c->origin = s;
  c->be = s->dev->be;
  pthread_mutex_lock(&cap_lock);
  if (n_active == (int)(sizeof active / sizeof active[0])) {
    pthread_mutex_unlock(&cap_lock);
    free(c);
    return wf__error(WF_ERR_CAPTURE, fn, "too many captures in progress");
  }
  wf_status st = s->dev->be->capture_begin(s, c);
  if (st == WF_OK) {
    active[n_active++] = c;
    c->members[c->n_members++] = s;
    wf__stream_retain(s);
    s->capture = c;
    s->cap_cmds = s->cap_joined = 0;
  }
  pthread_mutex_unlock(&cap_lock);
  if (st != WF_OK) {
    free(c);
    return st;
  }
  wf__thread_captures_add(1);
  return WF_OK;
}

/* Removes the capture from the active list and releases its member streams. */
static void capture_close(wf_capture *c) {
  pthread_mutex_lock(&cap_lock);
  for (int i = 0; i < n_active; i++)
    if (active[i] == c) {
      active[i] = active[--n_active];
      break;
    }
  for (int i = 0; i < c->n_members; i++)
    c->members[i]->capture = NULL;
  pthread_mutex_unlock(&cap_lock);
  for (int i = 0; i < c->n_members; i++)
    wf__stream_release(c->members[i]);
  for (int i = 0; i < c->n_buffers; i++)
    c->buffers[i]->cap_id = 0;
  wf__thread_captures_add(-1);
}

static wf_status capture_finish(const char *fn, wf_stream *s, wf_graph *prev, wf_graph **out) {
  if (!s) return wf__error(WF_ERR_INVALID, fn, "stream is NULL");
  wf_capture *c = s->capture;
  if (!c || c->origin != s)
    return wf__error(WF_ERR_CAPTURE, fn,
                     "the %s stream is not the origin of a capture begun with wf_capture_begin",
                     s->dev->name);
  wf_stream *unjoined = NULL;
  for (int i = 1; i < c->n_members && !unjoined; i++)
    if (c->members[i]->cap_joined < c->members[i]->cap_cmds) unjoined = c->members[i];
  wf_graph *g = calloc(1, sizeof *g);
  wf_status st;
  if (!g) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  } else if (unjoined && c->be == &wf__cpu_backend) {
    st = wf__error(WF_ERR_CAPTURE, fn,
                   "a stream of %s forked into the capture was not joined back: call "
                   "wf_stream_wait_stream(origin, forked) after its last work, before "
                   "wf_capture_end",
                   unjoined->dev->name);
  } else {
    g->origin = s;
    g->be = c->be;
    st = c->be->capture_end(s, c, g, prev);
  }
  if (st != WF_OK) c->be->capture_abort(s, c);
  capture_close(c);
  if (st != WF_OK) {
    for (int i = 0; i < c->n_buffers; i++)
      wf__buffer_release(c->buffers[i], NULL);
    free(c->buffers);
    free(c);
    free(g);
    return st;
  }
  wf__stream_retain(s);
  g->buffers = c->buffers;
  g->n_buffers = c->n_buffers;
  g->nodes = c->nodes;
  free(c);
  *out = g;
  return WF_OK;
}

wf_status wf_capture_end(wf_stream *s, wf_graph **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_capture_end", "out is NULL");
  *out = NULL;
  return capture_finish("wf_capture_end", s, NULL, out);
}

wf_status wf_capture_end_update(wf_stream *s, wf_graph **g) {
  static const char *fn = "wf_capture_end_update";
  if (!g) return wf__error(WF_ERR_INVALID, fn, "g is NULL");
  wf_graph *prev = *g;
  if (prev && s && (prev->origin != s || prev->be != s->dev->be))
    return wf__error(WF_ERR_INVALID, fn, "the graph to update was captured on another stream");
  wf_graph *ng = NULL;
  wf_status st = capture_finish(fn, s, prev, &ng);
  if (st != WF_OK) return st;
  wf_graph_destroy(prev);
  *g = ng;
  return WF_OK;
}

wf_status wf_graph_launch(wf_graph *g, wf_stream *s) {
  static const char *fn = "wf_graph_launch";
  if (!g) return wf__error(WF_ERR_INVALID, fn, "graph is NULL");
  if (!s) s = g->origin;
  if (s->dev->be != g->be)
    return wf__error(WF_ERR_INVALID, fn, "a graph captured on %s cannot run on a stream of %s",
                     g->origin->dev->name, s->dev->name);
  if (wf__stream_capturing(s))
    return wf__error(WF_ERR_CAPTURE, fn,
                     "launching a graph into another capture is not supported; launch it after "
                     "wf_capture_end");
  for (int i = 0; i < g->n_buffers; i++) {
    wf_status st = wf__buffer_use(g->buffers[i], s);
    if (st != WF_OK) return st;
  }
  return g->be->graph_launch(g, s);
}

size_t wf_graph_node_count(const wf_graph *g) { return g ? g->nodes : 0; }

void wf_graph_destroy(wf_graph *g) {
  if (!g) return;
  g->be->graph_destroy(g);
  for (int i = 0; i < g->n_buffers; i++)
    wf__buffer_release(g->buffers[i], NULL);
  free(g->buffers);
  wf__stream_release(g->origin);
  free(g);
}
