/* Frames over every partition (frame.h): fork and join on partition 0's stream, the capture with
 * its key, and running frames from the graph or stage by stage. */
#include "frame.h"

#include <string.h>

#include "internal/error.h"
#include "measure.h"

void wfpt_frame_init(wfpt_frame *f, wfpt_set *s, const wfpt_frame_ops *ops, bool no_graph) {
  memset(f, 0, sizeof *f);
  f->set = s, f->ops = *ops, f->no_graph = no_graph;
}

void wfpt_frame_release(wfpt_frame *f) {
  if (f->graph) {
    wf_stream_synchronize(f->set->part[f->set->lead].stream);
    wf_graph_destroy(f->graph);
  }
  f->graph = NULL;
  wfpt_key_free(&f->key);
  wfpt_key_free(&f->scratch);
}

void wfpt_frame_stale(wfpt_frame *f) { f->stale = true; }

/* The key the frame would be captured with now. */
static void key_now(const wfpt_frame *f, wfpt_key *k) {
  k->n = 0, k->lost = false;
  wfpt_key_links(f->set, k);
  if (f->ops.key) f->ops.key(f->ops.ctx, k);
}

bool wfpt_frame_current(wfpt_frame *f) {
  if (!f->graph || f->stale || f->key.lost) return false;
  key_now(f, &f->scratch);
  return !f->scratch.lost && f->scratch.n == f->key.n &&
         !memcmp(f->scratch.w, f->key.w, f->key.n * sizeof *f->key.w);
}

wf_status wfpt_fork(wfpt_set *s) {
  wf_stream *s0 = s->part[s->lead].stream;
  for (int p = 0; p < s->n; p++) {
    if (!wfpt_local(s, p)) continue;
    wf_status st = p != s->lead ? wf_stream_wait_stream(s->part[p].stream, s0) : WF_OK;
    if (st == WF_OK && s->part[p].copy) st = wf_stream_wait_stream(s->part[p].copy, s0);
    if (st != WF_OK) return wfpt_fail(s, st, "forking a frame");
  }
  return WF_OK;
}

wf_status wfpt_join(wfpt_set *s) {
  wf_stream *s0 = s->part[s->lead].stream;
  for (int p = 0; p < s->n; p++) {
    if (!wfpt_local(s, p)) continue;
    wf_status st = p != s->lead ? wf_stream_wait_stream(s0, s->part[p].stream) : WF_OK;
    if (st == WF_OK && s->part[p].copy) st = wf_stream_wait_stream(s0, s->part[p].copy);
    if (st != WF_OK) return wfpt_fail(s, st, "joining a frame");
  }
  return WF_OK;
}

/* fork, the solver's frame of kind mode, join */
static wf_status enqueue(wfpt_frame *f, wfpt_mode mode) {
  wf_status st = wfpt_fork(f->set);
  f->set->mode = mode;
  if (st == WF_OK) st = f->ops.enqueue(f->ops.ctx, mode);
  f->set->mode = WFPT_FULL;
  return st == WF_OK ? wfpt_join(f->set) : st;
}

wf_status wfpt_capture(wfpt_frame *f, wfpt_mode mode, wf_graph **g) {
  double t0 = wfpt_now_ms();
  wfpt_set *s = f->set;
  wf_stream *s0 = s->part[s->lead].stream;
  wf_status st;
  if (s->mpi) /* (transport.h: MPI waits are the host's, so frames run stage by stage) */
    return wf__error(WF_ERR_UNSUPPORTED, NULL,
                     "%s: a frame over MPI ranks runs stage by stage and is not captured", s->what);
  /* the graph replaced must have finished (wf_capture_end_update) */
  if (mode == WFPT_FULL && f->graph && (st = wf_stream_synchronize(s0)) != WF_OK)
    return wfpt_fail(s, st, "waiting for a frame");
  if ((st = wf_capture_begin(s0)) != WF_OK) return wfpt_fail(s, st, "beginning the frame capture");
  st = enqueue(f, mode);
  if (st != WF_OK) { /* end the capture and drop what it recorded: s0 is usable again */
    wf_graph *dropped = NULL;
    if (wf_capture_end(s0, &dropped) == WF_OK) wf_graph_destroy(dropped);
    return st;
  }
  if (mode != WFPT_FULL) {
    st = wf_capture_end(s0, g);
    return st == WF_OK ? WF_OK : wfpt_fail(s, st, "ending the frame capture");
  }
  if ((st = wf_capture_end_update(s0, &f->graph)) != WF_OK)
    return wfpt_fail(s, st, "ending the frame capture");
  f->stale = false;
  key_now(f, &f->key);
  f->captures++;
  f->capture_ms += wfpt_now_ms() - t0;
  return WF_OK;
}

wf_status wfpt_run_frames(wfpt_frame *f, int frames, wfpt_mode mode, wf_graph *g) {
  wfpt_set *s = f->set;
  wf_stream *s0 = s->part[s->lead].stream;
  wf_status st = wfpt_join(s); /* after whatever is queued on the other streams */
  if (st != WF_OK) return st;
  bool graphed = g || (!f->no_graph && !s->mpi && mode == WFPT_FULL);
  if (graphed && !g && !wfpt_frame_current(f) && (st = wfpt_capture(f, WFPT_FULL, NULL)) != WF_OK)
    return st;
  for (int i = 0; i < frames; i++) {
    if (!graphed)
      st = enqueue(f, mode);
    else if ((st = wf_graph_launch(g ? g : f->graph, s0)) != WF_OK)
      st = wfpt_fail(s, st, "launching a frame");
    if (st != WF_OK) return st;
  }
  for (int p = 0; p < s->n; p++)
    if (p != s->lead && wfpt_local(s, p) &&
        (st = wf_stream_wait_stream(s->part[p].stream, s0)) != WF_OK)
      return wfpt_fail(s, st, "ordering after the frames");
  return f->ops.launched ? f->ops.launched(f->ops.ctx) : WF_OK;
}
