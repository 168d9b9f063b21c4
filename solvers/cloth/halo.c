/* The frame of a cloth over several devices: every partition's substeps stage by stage, with the
 * halo exchanges between the stages composed from the partition module's transport points
 * (solvers/partition/transport.h), and the overlap measure's frames (cloth_parts.h has the
 * picture; set->mode says what a frame leaves out).
 *
 * An exchange of slot s, for every link with something in it:
 *
 *   receiver   wfpt_release: the transfer may overwrite what its work so far read
 *   sender     wfpt_send_reuse: its pack waits for its transfers so far out of the send regions
 *   sender     the pack (colour slots), then wfpt_send: the transfer on its copy stream
 *   receiver   wfpt_wait (then the unpack, colour slots) or wfpt_recv_wait
 *
 * A ghost exchange interleaves those with the stage it overlaps (stage_exchanged); a colour
 * exchange has nothing to overlap (colour_exchange). */
#include <stdlib.h>
#include <string.h>

#include "cloth_kernels.h"
#include "cloth_parts.h"
#include "internal/error.h"
#include "solvers/partition/measure.h"
#include "solvers/partition/transport.h"

static const char fn_step[] = "wf_cloth_step_frames";

static bool kernels_on(const wf_cloth *cs) { return cs->set->mode != WFPT_COPIES; }

/* In the measure's compute frames: the start (end false) or the end of a stretch of partition
 * p's kernels, on its stream, which waits for nothing in between. */
static wf_status mark(wf_cloth *cs, const char *fn, int p, bool end) {
  if (cs->set->mode != WFPT_COMPUTE || !cs->marks || cs->mark_n[p] >= cs->mark_cap) return WF_OK;
  size_t i = (size_t)p * cs->mark_cap + cs->mark_n[p];
  wf_status st = wf_event_record(cs->marks[2 * i + end], wfc_stream_of(cs, p));
  if (st != WF_OK) return wfc_fail(cs, fn, st, "recording a compute mark");
  cs->mark_n[p] += end;
  return WF_OK;
}

/* Link l's pack (unpack false) or unpack of colour c's stale ghosts of state buffer w. */
static wf_status colour_kernel(wf_cloth *cs, const char *fn, int l, uint32_t c, int w,
                               bool unpack) {
  const wfpt_link *k = &cs->set->links[l];
  const wfc_halo_link *cl = &cs->links[l];
  uint32_t n = cl->off[c + 1] - cl->off[c];
  int p = unpack ? k->to : k->from;
  const uint32_t *idx = wf_buffer_ptr(unpack ? cl->dst_idx : cl->src_idx);
  wfp_f4 *state = wf_buffer_ptr(wfc_buffer(cs->parts[p].c, w));
  wfp_f4 *staged = wf_buffer_ptr(unpack ? k->recv : k->send);
  wfc_halo_args a = {idx + cl->off[c], unpack ? staged : state, NULL, unpack ? state : staged,
                     NULL};
  wf_status st =
      wf_launch(unpack ? &wfc_halo_unpack : &wfc_halo_pack, n, &a, sizeof a, wfc_stream_of(cs, p));
  return st == WF_OK
             ? WF_OK
             : wfc_fail(cs, fn, st, unpack ? "launching a halo unpack" : "launching a halo pack");
}

/* The exchange after colour c's pass: the ghosts it left stale, of state buffer w, packed by
 * index list, moved between the staging buffers and unpacked into the ghost slots. */
static wf_status colour_exchange(wf_cloth *cs, const char *fn, uint32_t c, int w) {
  wfpt_set *set = cs->set;
  int slot = WFC_SLOT_COLOUR0 + (int)c;
  wf_status st = wfpt_release(set, -1, slot);
  if (st == WF_OK) st = wfpt_send_reuse(set, -1, slot);
  for (int l = 0; l < set->n_links && st == WF_OK && kernels_on(cs); l++)
    if (cs->links[l].off[c + 1] > cs->links[l].off[c] && cs->links[l].src_idx)
      st = colour_kernel(cs, fn, l, c, w, false); /* (over MPI ranks: the senders here) */
  if (st == WF_OK) st = wfpt_send(set, slot);
  for (int l = 0; l < set->n_links && st == WF_OK; l++) {
    if (cs->links[l].off[c + 1] == cs->links[l].off[c]) continue;
    st = wfpt_wait(set, &set->links[l], slot);
    if (st == WF_OK && kernels_on(cs) && cs->links[l].dst_idx)
      st = colour_kernel(cs, fn, l, c, w, true);
  }
  return st;
}

/* The per-vertex stages whose exchange overlaps the interior. */
enum { STAGE_SPRINGS, STAGE_PREDICT, STAGE_FINALIZE };

/* Stage `stage` of partition p over its owned vertices [begin, end) (springs: half in -> out). */
static wf_status stage_range(wf_cloth *cs, const char *fn, int p, int stage, int in, uint32_t begin,
                             uint32_t end) {
  if (!kernels_on(cs)) return WF_OK;
  wfc_part *c = cs->parts[p].c;
  switch (stage) {
  case STAGE_SPRINGS: return wfc_enqueue_springs_range(c, fn, in, begin, end);
  case STAGE_PREDICT: return wfc_enqueue_predict_range(c, fn, begin, end);
  default: return wfc_enqueue_finalize_range(c, fn, begin, end);
  }
}

/* Contact (cloth_parts.h, "Contact"), after the end guess of a substep (springs: from half
 * `in`): every partition's owned start positions and end guesses to every other partition's
 * contact copies, then each partition's contact stage over the whole cloth, which corrects its
 * owned vertices. The transfers follow the senders' work so far (their end guesses) and the
 * receivers' last read of their copies (the stage before: release); the stage waits for the
 * transfers into its partition, and for those out of it (send_reuse), since it writes the end
 * guesses they read. */
static wf_status contact_stage(wf_cloth *cs, const char *fn, int in) {
  if (!cs->desc.contact) return WF_OK;
  wfpt_set *set = cs->set;
  int slot = in ? WFC_SLOT_CC1 : WFC_SLOT_CC0;
  wf_status st = wfpt_release(set, -1, slot);
  if (st == WF_OK) st = wfpt_send(set, slot);
  if (st == WF_OK) st = wfpt_recv_wait(set, -1, slot);
  if (st == WF_OK) st = wfpt_send_reuse(set, -1, slot);
  for (int p = 0; p < cs->np && st == WF_OK && kernels_on(cs); p++)
    if (cs->parts[p].c && (st = mark(cs, fn, p, false)) == WF_OK &&
        (st = wfc_enqueue_contact(cs->parts[p].c, fn, in)) == WF_OK)
      st = mark(cs, fn, p, true);
  return st;
}

/* A per-vertex stage of every partition, then the exchange of every ghost in ghost slot `slot`.
 * The overlap: each partition first computes its send set (owned [0, n_send)) and starts the
 * transfers out of it; then computes its interior [n_send, n_owned) while they move; then waits
 * for the transfers into it. Every vertex is computed once, by the same math from the same inputs
 * (ghosts are read only from the stage's input, which this exchange does not write), so the
 * result does not depend on which launch computed it.
 *
 * Before the stage a sender waits for its transfers so far (send_reuse): those of the exchange
 * before last read the half of the state this stage writes. It waits before release ties the
 * transfers to the receivers, so that a stage waits for its own device only. */
static wf_status stage_exchanged(wf_cloth *cs, const char *fn, int stage, int in, int slot) {
  wfpt_set *set = cs->set;
  wf_status st = wfpt_send_reuse(set, -1, slot);
  if (st == WF_OK) st = wfpt_release(set, -1, slot);
  if (stage == STAGE_SPRINGS && cs->desc.contact) {
    /* the ghosts take the ends the contact stage corrects: the substep, contact, then the
     * transfers (nothing left to overlap them with) */
    for (int p = 0; p < cs->np && st == WF_OK; p++)
      if (cs->parts[p].c && (st = mark(cs, fn, p, false)) == WF_OK &&
          (st = stage_range(cs, fn, p, stage, in, 0, cs->parts[p].n_owned)) == WF_OK)
        st = mark(cs, fn, p, true);
    if (st == WF_OK) st = contact_stage(cs, fn, in);
    if (st == WF_OK) st = wfpt_send(set, slot);
    return st == WF_OK ? wfpt_recv_wait(set, -1, slot) : st;
  }
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    if (cs->parts[p].c && (st = mark(cs, fn, p, false)) == WF_OK)
      st = stage_range(cs, fn, p, stage, in, 0, cs->parts[p].n_send);
  if (st == WF_OK) st = wfpt_send(set, slot);
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    if (cs->parts[p].c && (st = stage_range(cs, fn, p, stage, in, cs->parts[p].n_send,
                                            cs->parts[p].n_owned)) == WF_OK)
      st = mark(cs, fn, p, true);
  return st == WF_OK ? wfpt_recv_wait(set, -1, slot) : st;
}

/* One XPBD substep: predict (exchanging POS1), the colour passes with their exchanges,
 * finalize (exchanging POS0 and VEL0). */
static wf_status xpbd_substep(wf_cloth *cs, const char *fn) {
  uint32_t colours = cs->colours;
  int iterations = cs->desc.iterations;
  wf_status st = stage_exchanged(cs, fn, STAGE_PREDICT, 1, WFC_SLOT_P1);
  /* the colour passes move the predicted positions the transfers read */
  if (st == WF_OK) st = wfpt_send_reuse(cs->set, -1, WFC_SLOT_P1);
  for (int p = 0; p < cs->np && st == WF_OK && kernels_on(cs); p++)
    if (cs->parts[p].c) st = wfc_enqueue_clear_multipliers(cs->parts[p].c, fn);
  for (int it = 0; it < iterations && st == WF_OK; it++)
    for (uint32_t q = 0; q < colours && st == WF_OK; q++) {
      for (int p = 0; p < cs->np && st == WF_OK && kernels_on(cs); p++)
        if (cs->parts[p].c && (st = mark(cs, fn, p, false)) == WF_OK &&
            (st = wfc_enqueue_colour(cs->parts[p].c, fn, q)) == WF_OK)
          st = mark(cs, fn, p, true);
      /* the ghosts the pass left stale; none after the last pass: finalize reads owned
       * vertices only, and the next predict's exchange refreshes every ghost */
      bool last = it == iterations - 1 && q == colours - 1;
      if (st == WF_OK && !last) st = colour_exchange(cs, fn, q, WFC_BUF_POS1);
    }
  if (st == WF_OK) st = contact_stage(cs, fn, 0); /* x0: POS0, x1: the step in POS1 */
  return st == WF_OK ? stage_exchanged(cs, fn, STAGE_FINALIZE, 1, WFC_SLOT_V0) : st;
}

/* The staging and index buffers' last users (the GPU layer orders later copies and frees by
 * them). */
static wf_status touch_links(wf_cloth *cs, const char *fn) {
  wf_status st = wfpt_frame_end(cs->set);
  for (int l = 0; l < cs->set->n_links && st == WF_OK; l++) {
    const wfc_halo_link *k = &cs->links[l];
    /* no colour slot, or (over MPI ranks) another rank's end */
    if (k->src_idx) st = wf_buffer_touch(k->src_idx, wfc_stream_of(cs, cs->set->links[l].from));
    if (st == WF_OK && k->dst_idx)
      st = wf_buffer_touch(k->dst_idx, wfc_stream_of(cs, cs->set->links[l].to));
    if (st != WF_OK) st = wfc_fail(cs, fn, st, "ordering halo buffers");
  }
  return st;
}

/* wfpt_frame_ops.enqueue: every partition's frame, stage by stage, with the exchanges between
 * the stages. */
static wf_status enqueue_frame(void *ctx, wfpt_mode mode) {
  wf_cloth *cs = ctx;
  const char *fn = fn_step;
  wf_status st = WF_OK;
  int substeps = cs->desc.substeps;
  if (mode == WFPT_COMPUTE) memset(cs->mark_n, 0, sizeof cs->mark_n);
  for (int p = 0; p < cs->np && st == WF_OK && kernels_on(cs); p++)
    if (cs->parts[p].c) st = wfc_enqueue_frame_begin(cs->parts[p].c, fn, substeps);
  for (int k = 0; k < substeps && st == WF_OK; k++) {
    if (cs->desc.integrator == WF_CLOTH_XPBD)
      st = xpbd_substep(cs, fn);
    else /* state half in -> out; the exchange refreshes the ghosts of half out */
      st = stage_exchanged(cs, fn, STAGE_SPRINGS, k & 1, k & 1 ? WFC_SLOT_V0 : WFC_SLOT_V1);
  }
  for (int p = 0; p < cs->np && st == WF_OK && kernels_on(cs); p++)
    if (cs->parts[p].c) st = wfc_enqueue_frame_end(cs->parts[p].c, fn, substeps);
  return st == WF_OK ? touch_links(cs, fn) : st;
}

/* wfpt_frame_ops.launched: every buffer's last user is its partition's stream again. */
static wf_status launched(void *ctx) {
  wf_cloth *cs = ctx;
  wf_status st = WF_OK;
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    if (cs->parts[p].c) st = wfc_touch(cs->parts[p].c, fn_step);
  return st;
}

void wfc_frame_init(wf_cloth *cs) {
  wfpt_frame_ops ops = {.ctx = cs, .enqueue = enqueue_frame, .launched = launched};
  wfpt_frame_init(&cs->frame, cs->set, &ops, cs->desc.no_graph);
}

/* wfpt_measure_ops.compute_ms: the longest partition's sum of its marked kernels. */
static wf_status compute_ms(void *ctx, double *ms) {
  wf_cloth *cs = ctx;
  wf_status st = wfpt_longest(cs->marks, cs->np, cs->mark_cap, cs->mark_n, ms);
  return st == WF_OK ? WF_OK : wfpt_fail(cs->set, st, "timing a partition's kernels");
}

/* The kinds of frame of wfpt_overlap_measure; the compute frame runs stage by stage with timing
 * events around every stretch of a partition's kernels (a stage's send set and interior; an XPBD
 * colour pass): the longest partition's sum of them is the frame's compute, what it would take
 * with no halo exchange at all. (The frame without transfers is no such measure: its waits and
 * events stay, and its stale ghosts change the work.) The state is not restored. */
wf_status wfc_measure_parts(wf_cloth *cs, const char *fn, int frames, wf_overlap *out) {
  uint32_t per_substep =
      cs->desc.integrator == WF_CLOTH_SPRINGS ? 1 : 2 + (uint32_t)cs->desc.iterations * cs->colours;
  per_substep += cs->desc.contact ? 1u : 0u; /* the contact stage's stretch */
  uint32_t cap = per_substep * (uint32_t)cs->desc.substeps;
  size_t n_marks = cs->set->n_links ? 2 * (size_t)cs->np * cap : 0;
  wf_event **marks = n_marks ? calloc(n_marks, sizeof *marks) : NULL;
  if (n_marks && !marks) return wfc_oom(fn, cs->name);
  wf_device *devs[WFPT_MAX];
  for (int p = 0; p < cs->np; p++)
    devs[p] = cs->parts[p].dev;
  wf_status st = WF_OK;
  if (n_marks && (st = wfpt_events_create(devs, 2 * cap, n_marks, marks)) != WF_OK)
    st = wfc_fail(cs, fn, st, "creating timing events");
  cs->marks = marks, cs->mark_cap = cap;
  wfpt_measure_ops ops = {.ctx = cs, .compute_ms = compute_ms, .compute_captured = false};
  if (st == WF_OK)
    st = wfpt_overlap_measure(&cs->frame, &ops, frames, cs->info.halo_bytes_per_frame, out);
  cs->marks = NULL;
  wfpt_events_destroy(marks, n_marks);
  free(marks);
  return st;
}
