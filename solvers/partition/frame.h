/* A frame of every partition: enqueued by the solver's callback (wfpt_frame_ops.enqueue), either
 * captured once into one graph on partition 0's stream and launched per frame, or enqueued stage
 * by stage (no_graph), with the same ordering either way:
 *
 *   s0 ──fork──> every partition's stream and copy stream ── enqueue(mode) ──join──> s0
 *
 * The fork makes every stream wait for s0 (inside a capture that forks them into it), the join
 * makes s0 wait for every stream. Before the frames s0 waits for every stream (what the solver
 * queued between frames: a repartition, pins, parameters); after them every stream waits for s0.
 *
 * The graph key: what the captured frame bakes in (launch sizes, buffer addresses, links). The
 * set's links add their words (wfpt_key_links), the solver its own (ops.key); the frame is
 * captured again when the key differs from the one it was captured with, or after
 * wfpt_frame_stale, and the GPU layer updates the executable graph in place where its shape did
 * not change (wf_capture_end_update). A failed capture is ended and its graph dropped, so
 * partition 0's stream is never left capturing.
 */
#ifndef WEFT_SOLVERS_PARTITION_FRAME_H
#define WEFT_SOLVERS_PARTITION_FRAME_H

#include "partition.h"

typedef struct wfpt_frame_ops {
  void *ctx;
  /* Required: one frame of every partition, of kind mode, on the forked streams (set->mode is
   * mode meanwhile, for the transport). */
  wf_status (*enqueue)(void *ctx, wfpt_mode mode);
  /* Optional: puts the solver's words of the graph key (wfpt_key_put): its launch sizes, the
   * addresses of buffers the frame's kernels name. */
  void (*key)(void *ctx, wfpt_key *key);
  /* Optional: after frames were enqueued and every stream ordered after them (the solvers'
   * bookkeeping of their buffers' last users: wfp_frames_launched, wfc_touch). */
  wf_status (*launched)(void *ctx);
} wfpt_frame_ops;

typedef struct wfpt_frame {
  wfpt_set *set;
  wfpt_frame_ops ops;
  bool no_graph;   /* stage by stage, never captured */
  wf_graph *graph; /* the WFPT_FULL frame */
  bool stale;
  wfpt_key key;      /* what f->graph was captured with */
  wfpt_key scratch;  /* the key now, to compare */
  uint64_t captures; /* of the WFPT_FULL frame */
  double capture_ms; /* host time they took */
} wfpt_frame;

void wfpt_frame_init(wfpt_frame *f, wfpt_set *s, const wfpt_frame_ops *ops, bool no_graph);
/* Waits for partition 0's stream and destroys the graph and the keys. */
void wfpt_frame_release(wfpt_frame *f);
/* Something the frame reads changed that the key does not show: capture again next time. */
void wfpt_frame_stale(wfpt_frame *f);
/* Whether the captured WFPT_FULL frame is there and its key still holds. */
bool wfpt_frame_current(wfpt_frame *f);

wf_status wfpt_fork(wfpt_set *s);
wf_status wfpt_join(wfpt_set *s);

/* Captures a frame of kind mode: WFPT_FULL into f->graph (updated in place where it can be; the
 * graph replaced is waited for first), any other kind into a new graph *g the caller destroys. */
wf_status wfpt_capture(wfpt_frame *f, wfpt_mode mode, wf_graph **g);

/* `frames` frames of kind mode after whatever is queued on every stream: g's, if given; else with
 * graphs and mode WFPT_FULL f->graph (captured first unless current); else stage by stage. */
wf_status wfpt_run_frames(wfpt_frame *f, int frames, wfpt_mode mode, wf_graph *g);

#endif
