/* The peer transport (transport.h): the devices of one process. A transfer is a wf_copy per
 * segment on the sender's copy stream, after the sender's pack and the receiver's last read
 * (recv_free), recording `copied` for the receiver to wait on. Between CUDA devices without peer
 * access the GPU layer stages the copies through pinned host memory (with one warning). */
#include <stdio.h>

#include "internal/error.h"
#include "transport.h"

/* The first transfer of a frame into k waits for the receiver's work so far; the copy stream
 * becomes the receive buffer's last user, so a copy enqueued stage by stage is not held back by
 * the GPU layer's ordering of wf_copy behind the receiver's first substep. */
static wf_status peer_frame_start(wfpt_set *s, wfpt_link *k) {
  wf_status st = wf_event_record(s->recv_free[k->to][k->from], s->part[k->to].stream);
  if (st == WF_OK && k->recv) st = wf_buffer_touch(k->recv, s->part[k->from].copy);
  return st == WF_OK ? WF_OK : wfpt_fail_link(s, k, -1, st, "starting a frame's exchanges");
}

static wf_status peer_release(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  wf_status st = wf_event_record(s->recv_free[k->to][k->from], stream);
  return st == WF_OK ? WF_OK : wfpt_fail_link(s, k, slot, st, "releasing the receive regions");
}

/* A segment whose regions are not on the link's devices, or run past their buffers, would copy
 * the wrong memory (or fail inside a captured frame with no word of which link): refused here,
 * naming it. */
static wf_status check_seg(const wfpt_set *s, const wfpt_link *k, int slot, uint32_t i) {
  const wfpt_seg *g = &k->slot[slot].seg[i];
  const char *bad = NULL;
  char why[160];
  if (!g->src || !g->dst)
    bad = "a NULL buffer";
  else if (wf_buffer_device(g->src) != s->part[k->from].dev ||
           wf_buffer_device(g->dst) != s->part[k->to].dev) {
    snprintf(why, sizeof why, "source on %s and destination on %s, not %s and %s",
             wf_device_name(wf_buffer_device(g->src)), wf_device_name(wf_buffer_device(g->dst)),
             wf_device_name(s->part[k->from].dev), wf_device_name(s->part[k->to].dev));
    bad = why;
  } else if (g->src_off + g->bytes > wf_buffer_size(g->src) ||
             g->dst_off + g->bytes > wf_buffer_size(g->dst))
    bad = "a region past the end of its buffer";
  if (!bad) return WF_OK;
  return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d (slot %d): segment %u has %s", s->what,
                   k->from, k->to, slot, i, bad);
}

static wf_status peer_post_send(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  const wfpt_slot *sl = &k->slot[slot];
  for (uint32_t i = 0; i < sl->n; i++) {
    wf_status st = check_seg(s, k, slot, i);
    if (st != WF_OK) return st;
  }
  wf_stream *c = s->part[k->from].copy;
  wf_status st = wf_stream_wait_stream(c, stream);
  if (st == WF_OK) st = wf_stream_wait_event(c, s->recv_free[k->to][k->from]);
  if (st != WF_OK) return wfpt_fail_link(s, k, slot, st, "ordering a transfer");
  for (uint32_t i = 0; i < sl->n && s->mode != WFPT_NO_COPY; i++) {
    const wfpt_seg *g = &sl->seg[i];
    if (!g->bytes) continue;
    if ((st = wf_copy(g->dst, g->dst_off, g->src, g->src_off, g->bytes, c)) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, "copying a halo");
  }
  if ((st = wf_event_record(s->copied[k->from][k->to], c)) != WF_OK)
    return wfpt_fail_link(s, k, slot, st, "recording a transfer");
  return WF_OK;
}

/* The sender's copy writes the receiver's regions: nothing to post. */
static wf_status peer_post_recv(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  return WF_OK;
}

static wf_status peer_wait(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  wf_status st = wf_stream_wait_event(stream, s->copied[k->from][k->to]);
  return st == WF_OK ? WF_OK : wfpt_fail_link(s, k, slot, st, "waiting for a transfer");
}

static wf_status peer_send_reuse(wfpt_set *s, int p, wf_stream *stream) {
  wf_status st = wf_stream_wait_stream(stream, s->part[p].copy);
  return st == WF_OK ? WF_OK : wfpt_fail(s, st, "ordering a pack after the transfers");
}

static wf_status peer_frame_end(wfpt_set *s, wfpt_link *k) {
  wf_status st = WF_OK;
  if (k->send) st = wf_buffer_touch(k->send, s->part[k->from].stream);
  if (st == WF_OK && k->recv) st = wf_buffer_touch(k->recv, s->part[k->to].stream);
  return st == WF_OK ? WF_OK : wfpt_fail_link(s, k, -1, st, "ordering staging buffers");
}

const wfpt_transport wfpt_transport_peer = {
    .name = "peer",
    .frame_start = peer_frame_start,
    .release = peer_release,
    .post_send = peer_post_send,
    .post_recv = peer_post_recv,
    .wait = peer_wait,
    .send_reuse = peer_send_reuse,
    .frame_end = peer_frame_end,
};
