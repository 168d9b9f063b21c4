/* The transport's rule points over a set's links (transport.h): which links take part in an
 * exchange of a slot, on which partition's stream each point is enqueued. The transport itself
 * (transport_peer.c, transport_mpi.c) does the ordering of one link. Over MPI ranks a rank
 * enqueues only the points of its own partitions: the sender's side of a link on the sender's
 * rank, the receiver's on the receiver's (frame_start and frame_end go to the transport for
 * every link; it knows which side is here). */
#include "transport.h"

static bool in_slot(const wfpt_link *k, int slot) {
  if (slot < 0) return true;
  return slot < k->n_slots && k->slot[slot].n > 0;
}

wf_status wfpt_frame_start(wfpt_set *s) {
  for (int l = 0; l < s->n_links; l++) {
    wf_status st = s->tr->frame_start(s, &s->links[l]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wfpt_release(wfpt_set *s, int to, int slot) {
  for (int l = 0; l < s->n_links; l++) {
    wfpt_link *k = &s->links[l];
    if ((to >= 0 && k->to != to) || !in_slot(k, slot) || !wfpt_local(s, k->to)) continue;
    wf_status st = s->tr->release(s, k, slot, s->part[k->to].stream);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wfpt_send_reuse(wfpt_set *s, int p, int slot) {
  for (int q = p < 0 ? 0 : p; q < (p < 0 ? s->n : p + 1); q++) {
    if (!wfpt_local(s, q) || !wfpt_sends(s, q, slot)) continue;
    wf_status st = s->tr->send_reuse(s, q, s->part[q].stream);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wfpt_post_send(wfpt_set *s, wfpt_link *k, int slot) {
  if (!wfpt_local(s, k->from)) return WF_OK;
  return s->tr->post_send(s, k, slot, s->part[k->from].stream);
}

wf_status wfpt_post_recv(wfpt_set *s, wfpt_link *k, int slot) {
  if (!wfpt_local(s, k->to)) return WF_OK;
  return s->tr->post_recv(s, k, slot, s->part[k->to].stream);
}

wf_status wfpt_wait(wfpt_set *s, wfpt_link *k, int slot) {
  if (!wfpt_local(s, k->to)) return WF_OK;
  return s->tr->wait(s, k, slot, s->part[k->to].stream);
}

/* Receives are posted before the sends (an MPI rank then never has a send without its receive). */
wf_status wfpt_send(wfpt_set *s, int slot) {
  wf_status st = WF_OK;
  for (int l = 0; l < s->n_links && st == WF_OK; l++)
    if (in_slot(&s->links[l], slot)) st = wfpt_post_recv(s, &s->links[l], slot);
  for (int l = 0; l < s->n_links && st == WF_OK; l++)
    if (in_slot(&s->links[l], slot)) st = wfpt_post_send(s, &s->links[l], slot);
  return st;
}

wf_status wfpt_recv_wait(wfpt_set *s, int to, int slot) {
  for (int l = 0; l < s->n_links; l++) {
    wfpt_link *k = &s->links[l];
    if ((to >= 0 && k->to != to) || !in_slot(k, slot)) continue;
    wf_status st = wfpt_wait(s, k, slot);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wfpt_frame_end(wfpt_set *s) {
  for (int l = 0; l < s->n_links; l++) {
    wf_status st = s->tr->frame_end(s, &s->links[l]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}
