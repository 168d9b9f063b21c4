/* The MPI transport (transport.h): partitions held by different ranks of an MPI job. A link
 * between two partitions of this rank is the peer transport's; a link between ranks is owned by
 * both ends, each doing only its side:
 *
 *   sender's rank:    post_send   queues what the message needs after the pack on the sender's
 *                                 stream (staged: the copies into a pinned host buffer) and an
 *                                 event after it; the host does not wait here
 *                     (flush)     at this rank's next wait, send_reuse, frame_end or post_send of
 *                                 the link: waits for that event and MPI_Isend's the slot's
 *                                 segments as one message. So the host queues the partitions'
 *                                 next work (a substep's keys of the owned particles) before it
 *                                 waits for the pack, and the device runs it meanwhile
 *   receiver's rank:  post_recv   MPI_Irecv of that message (staged: into one of two pinned host
 *                                 buffers, once the copy out of it two messages ago is done)
 *                     wait        sends flushed, MPI_Wait, then the message's segments are in
 *                                 place (staged: copied from the pinned buffer on the receiver's
 *                                 stream, asynchronously)
 *                     frame_end   (sender) flushes and completes the link's MPI_Isend
 *
 * Two paths move a message (wf_mpi_halo, resolved per partition at creation: wfpt_set.direct):
 *  - direct: MPI reads and writes the partitions' own buffers. A slot of one segment (the
 *    particles' halo: the pack kernel's staging buffer to the receiver's) is sent from, and
 *    received into, the segment's region itself: no copy. Several segments are gathered on the
 *    device into a buffer of the link's (wf_copy on the stream) and scattered after the receive.
 *    Because MPI then reads the send region until the send completes, the next pack waits for it
 *    (send_reuse), and because it writes the receive region whenever the message lands, the
 *    receive is posted only after the receiver's stream is idle (its last read of the region).
 *    CPU devices' memory is host memory, so any MPI takes it; CUDA memory needs a CUDA-aware MPI.
 *  - staged: each side copies through pinned host buffers of the link's, on the partitions'
 *    streams (device to host after the pack, host to device after the wait).
 *
 * Either way the host waits for MPI, so a frame over ranks runs stage by stage (frame.c refuses
 * to capture it). One message per link and slot, tagged with the pair and the slot; the messages
 * of one pair of ranks are not overtaken (MPI's order), and every rank posts an exchange's
 * receives and sends (wfpt_send) before it waits for any of them, so no rank waits for a message
 * its peer has not sent. The bytes moved are exactly the peer copy's on both paths, so the result
 * is bitwise that of one process.
 */
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "ranks.h"
#include "transport.h"

#ifdef WEFT_HAVE_MPI
#include <mpi.h>

typedef struct mpi_link {
  /* staged: pinned host buffers, what goes and (two, alternating) what came */
  wf_buffer *hout, *hin[2];
  wf_event *in_done[2]; /* the copy out of hin[i] queued (in_used[i]) on the receiver's stream */
  bool in_used[2];
  int in_cur; /* the buffer the posted receive fills */
  /* direct path, several segments: gathered / scattered on the local partition's device */
  wf_buffer *dout, *din;
  MPI_Request send, recv;
  /* a send queued by post_send, posted to MPI by flush once `packed` (recorded after what it
   * reads on the sender's stream) is reached */
  wf_event *packed;
  bool pending;
  const void *send_from;
  int send_bytes, send_tag;
} mpi_link;

static bool between_ranks(const wfpt_set *s, const wfpt_link *k) {
  return !(wfpt_local(s, k->from) && wfpt_local(s, k->to));
}

static MPI_Comm comm(const wfpt_set *s) { return *(const MPI_Comm *)wfpt_ranks_comm(s); }

static int tag_of(const wfpt_link *k, int slot) {
  return (slot * WFPT_MAX + k->from) * WFPT_MAX + k->to; /* < 32768 (MPI's least tag bound) */
}

static wf_status mpi_fail(const wfpt_set *s, const wfpt_link *k, int slot, int err,
                          const char *doing) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(err, text, &len);
  wf__error(WF_ERR_BACKEND, NULL, "rank %d: %s", s->rank, text);
  return wfpt_fail_link(s, k, slot, WF_ERR_BACKEND, doing);
}

static wf_status state_of(wfpt_set *s, wfpt_link *k, mpi_link **out) {
  if (!k->tr) {
    mpi_link *m = calloc(1, sizeof *m);
    if (!m) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
    m->send = m->recv = MPI_REQUEST_NULL;
    k->tr = m;
  }
  *out = k->tr;
  return WF_OK;
}

/* A pinned host buffer of at least `bytes` (grown by half again), freed after the work queued
 * on it so far. */
static wf_status grow_host(wfpt_set *s, wf_buffer **b, size_t bytes) {
  if (*b && wf_buffer_size(*b) >= bytes) return WF_OK;
  wf_device *host = NULL;
  wf_status st = wf_device_get("cpu", &host);
  if (*b) wf_buffer_destroy(*b, NULL);
  *b = NULL;
  if (st == WF_OK) st = wf_buffer_create(host, bytes + bytes / 2 + 16, WF_BUFFER_PINNED, NULL, b);
  return st == WF_OK ? WF_OK : wfpt_fail(s, st, "allocating an MPI staging buffer");
}

/* The queued send of link k (post_send), posted: its pack and copies done, MPI_Isend. */
static wf_status flush_link(wfpt_set *s, wfpt_link *k) {
  mpi_link *m = k->tr;
  if (!m || !m->pending) return WF_OK;
  m->pending = false;
  wf_status st = wf_event_synchronize(m->packed);
  if (st != WF_OK) return wfpt_fail_link(s, k, -1, st, "waiting for the pack");
  int err = MPI_Isend(m->send_from, m->send_bytes, MPI_BYTE, s->rank_of[k->to], m->send_tag,
                      comm(s), &m->send);
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, k, -1, err, "sending a halo");
}

/* Every queued send of this rank's partitions (all of them before any receive is waited for:
 * no rank waits for a message its peer has not posted). */
static wf_status flush_all(wfpt_set *s) {
  for (int l = 0; l < s->n_links; l++) {
    wf_status st = flush_link(s, &s->links[l]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

void wfpt_mpi_link_free(wfpt_set *s, wfpt_link *k) {
  mpi_link *m = k->tr;
  if (!m) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) {
    /* a send still queued (a frame that failed after its pack) is posted, as the peer may wait
     * for it; quietly, so the failure's own message stays the last error */
    if (m->pending && m->send == MPI_REQUEST_NULL) {
      m->pending = false;
      (void)wf_event_synchronize(m->packed);
      MPI_Isend(m->send_from, m->send_bytes, MPI_BYTE, s->rank_of[k->to], m->send_tag, comm(s),
                &m->send);
    }
    MPI_Wait(&m->send, MPI_STATUS_IGNORE);
    if (m->recv != MPI_REQUEST_NULL) { /* posted, never waited for (a failed frame) */
      MPI_Cancel(&m->recv);
      MPI_Wait(&m->recv, MPI_STATUS_IGNORE);
    }
  }
  if (m->dout) wf_buffer_destroy(m->dout, s->part[k->from].stream);
  if (m->din) wf_buffer_destroy(m->din, s->part[k->to].stream);
  if (m->hout) wf_buffer_destroy(m->hout, s->part[k->from].stream);
  for (int i = 0; i < 2; i++) {
    if (m->hin[i]) wf_buffer_destroy(m->hin[i], s->part[k->to].stream);
    if (m->in_done[i]) wf_event_destroy(m->in_done[i]);
  }
  if (m->packed) wf_event_destroy(m->packed);
  free(m);
  k->tr = NULL;
}

/* A device buffer of the link's of at least `bytes` on partition p's device (grown by half
 * again: its address changes only when a count outgrows it). */
static wf_status grow_dev(wfpt_set *s, int p, wf_buffer **b, size_t bytes) {
  if (*b && wf_buffer_size(*b) >= bytes) return WF_OK;
  wf_stream *stream = s->part[p].stream;
  if (*b) wf_buffer_destroy(*b, stream);
  *b = NULL;
  wf_status st = wf_buffer_create(s->part[p].dev, bytes + bytes / 2 + 16, 0, stream, b);
  return st == WF_OK ? WF_OK : wfpt_fail(s, st, "allocating an MPI message buffer");
}

/* The segments of a slot checked against their buffers (dst: the receiving side's regions). */
static wf_status check_segs(const wfpt_set *s, const wfpt_link *k, int slot, bool dst) {
  const wfpt_slot *sl = &k->slot[slot];
  for (uint32_t i = 0; i < sl->n; i++) {
    const wfpt_seg *g = &sl->seg[i];
    const wf_buffer *b = dst ? g->dst : g->src;
    size_t off = dst ? g->dst_off : g->src_off;
    if (!b || off + g->bytes > wf_buffer_size(b))
      return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d (slot %d): segment %u has %s",
                       s->what, k->from, k->to, slot, i,
                       b ? "a region past the end of its buffer" : "a NULL buffer");
  }
  return WF_OK;
}

static wf_status mpi_frame_start(wfpt_set *s, wfpt_link *k) {
  return between_ranks(s, k) ? WF_OK : wfpt_transport_peer.frame_start(s, k);
}

static wf_status mpi_release(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  return between_ranks(s, k) ? WF_OK : wfpt_transport_peer.release(s, k, slot, stream);
}

static wf_status mpi_post_recv(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.post_recv(s, k, slot, stream);
  mpi_link *m = NULL;
  wf_status st = state_of(s, k, &m);
  if (st != WF_OK) return st;
  const wfpt_slot *sl = &k->slot[slot];
  size_t bytes = sl->bytes;
  if (bytes > (size_t)0x7fffffff)
    return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d: %zu bytes in one message", s->what,
                     k->from, k->to, bytes);
  void *into;
  if (s->direct[k->to]) {
    /* MPI writes the region when the message lands: the stream's reads of it must be done */
    if ((st = wf_stream_synchronize(stream)) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, "waiting for the last read of a receive region");
    bool in_place = sl->n == 1 && s->mode != WFPT_NO_COPY;
    if (in_place && (st = check_segs(s, k, slot, true)) != WF_OK) return st;
    if (!in_place && (st = grow_dev(s, k->to, &m->din, bytes ? bytes : 1)) != WF_OK) return st;
    into = in_place ? (char *)wf_buffer_ptr(sl->seg[0].dst) + sl->seg[0].dst_off
                    : wf_buffer_ptr(m->din);
  } else {
    /* the other pinned buffer: MPI may write it once its copy to the device (queued two
     * messages ago) is done, which it almost always is */
    int i = m->in_cur ^= 1;
    if (m->in_used[i] && (st = wf_event_synchronize(m->in_done[i])) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, "waiting for a staged receive's copy");
    m->in_used[i] = false;
    if ((st = grow_host(s, &m->hin[i], bytes ? bytes : 1)) != WF_OK) return st;
    into = wf_buffer_ptr(m->hin[i]);
  }
  int err = MPI_Irecv(into, (int)bytes, MPI_BYTE, s->rank_of[k->from], tag_of(k, slot), comm(s),
                      &m->recv);
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, k, slot, err, "posting a receive");
}

/* Queues what the sender's message is, on its stream after the pack: the one segment's region
 * itself (direct), or the segments gathered into the link's device buffer (direct) or pinned
 * host buffer (staged). */
static wf_status gather(wfpt_set *s, wfpt_link *k, int slot, mpi_link *m, wf_stream *stream,
                        const void **from) {
  const wfpt_slot *sl = &k->slot[slot];
  wf_status st = check_segs(s, k, slot, false);
  if (st != WF_OK) return st;
  bool copy = s->mode != WFPT_NO_COPY, direct = s->direct[k->from];
  if (direct && sl->n == 1 && copy) {
    *from = (const char *)wf_buffer_ptr(sl->seg[0].src) + sl->seg[0].src_off;
    return WF_OK;
  }
  wf_buffer **to = direct ? &m->dout : &m->hout;
  if ((st = direct ? grow_dev(s, k->from, to, sl->bytes ? sl->bytes : 1)
                   : grow_host(s, to, sl->bytes ? sl->bytes : 1)) != WF_OK)
    return st;
  size_t at = 0;
  for (uint32_t i = 0; i < sl->n && copy; i++) {
    const wfpt_seg *g = &sl->seg[i];
    if (g->bytes && (st = wf_copy(*to, at, g->src, g->src_off, g->bytes, stream)) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, direct ? "gathering a halo" : "staging a halo");
    at += g->bytes;
  }
  *from = wf_buffer_ptr(*to);
  return WF_OK;
}

static wf_status mpi_post_send(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.post_send(s, k, slot, stream);
  mpi_link *m = NULL;
  wf_status st = state_of(s, k, &m);
  if (st != WF_OK) return st;
  if ((st = flush_link(s, k)) != WF_OK) return st; /* (a rank that received nothing since) */
  int err = MPI_Wait(&m->send, MPI_STATUS_IGNORE); /* the message buffer is free again */
  if (err != MPI_SUCCESS) return mpi_fail(s, k, slot, err, "completing a send");
  if (!m->packed && (st = wf_event_create(s->part[k->from].dev, 0, &m->packed)) != WF_OK)
    return wfpt_fail_link(s, k, slot, st, "creating an event");
  const void *from = NULL;
  if ((st = gather(s, k, slot, m, stream, &from)) != WF_OK) return st;
  if ((st = wf_event_record(m->packed, stream)) != WF_OK)
    return wfpt_fail_link(s, k, slot, st, "marking the pack");
  m->send_from = from, m->send_bytes = (int)k->slot[slot].bytes, m->send_tag = tag_of(k, slot);
  m->pending = true;
  return WF_OK;
}

static wf_status mpi_wait(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.wait(s, k, slot, stream);
  mpi_link *m = k->tr;
  if (!m || m->recv == MPI_REQUEST_NULL)
    return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d (slot %d): wait without a receive",
                     s->what, k->from, k->to, slot);
  wf_status st = flush_all(s);
  if (st != WF_OK) return st;
  int err = MPI_Wait(&m->recv, MPI_STATUS_IGNORE);
  if (err != MPI_SUCCESS) return mpi_fail(s, k, slot, err, "receiving a halo");
  const wfpt_slot *sl = &k->slot[slot];
  bool direct = s->direct[k->to];
  if (s->mode == WFPT_NO_COPY || (direct && sl->n == 1)) return WF_OK; /* in place already */
  if ((st = check_segs(s, k, slot, true)) != WF_OK) return st;
  int i = m->in_cur;
  wf_buffer *in = direct ? m->din : m->hin[i];
  size_t at = 0;
  for (uint32_t j = 0; j < sl->n; j++) {
    const wfpt_seg *g = &sl->seg[j];
    if (g->bytes && (st = wf_copy(g->dst, g->dst_off, in, at, g->bytes, stream)) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, "unstaging a halo");
    at += g->bytes;
  }
  if (direct) return WF_OK;
  if (!m->in_done[i] && (st = wf_event_create(s->part[k->to].dev, 0, &m->in_done[i])) != WF_OK)
    return wfpt_fail_link(s, k, slot, st, "creating an event");
  if ((st = wf_event_record(m->in_done[i], stream)) != WF_OK)
    return wfpt_fail_link(s, k, slot, st, "marking a staged receive's copy");
  m->in_used[i] = true;
  return WF_OK;
}

/* The pack may overwrite the send regions: the peer links' copies are waited for on the stream;
 * the staged links between ranks copied them on this stream before the pack, but a direct link
 * sends from the region itself, so its send must be posted and complete. */
static wf_status mpi_send_reuse(wfpt_set *s, int p, wf_stream *stream) {
  for (int l = 0; l < s->n_links && s->direct[p]; l++) {
    wfpt_link *k = &s->links[l];
    mpi_link *m = k->tr;
    if (k->from != p || !between_ranks(s, k) || !m) continue;
    wf_status st = flush_link(s, k);
    if (st != WF_OK) return st;
    int err = MPI_Wait(&m->send, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS) return mpi_fail(s, k, -1, err, "completing a send");
  }
  return s->part[p].copy ? wfpt_transport_peer.send_reuse(s, p, stream) : WF_OK;
}

static wf_status mpi_frame_end(wfpt_set *s, wfpt_link *k) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.frame_end(s, k);
  mpi_link *m = k->tr;
  if (!m || !wfpt_local(s, k->from)) return WF_OK;
  wf_status st = flush_link(s, k);
  if (st != WF_OK) return st;
  int err = MPI_Wait(&m->send, MPI_STATUS_IGNORE);
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, k, -1, err, "completing a send");
}

const wfpt_transport wfpt_transport_mpi = {
    .name = "mpi",
    .frame_start = mpi_frame_start,
    .release = mpi_release,
    .post_send = mpi_post_send,
    .post_recv = mpi_post_recv,
    .wait = mpi_wait,
    .send_reuse = mpi_send_reuse,
    .frame_end = mpi_frame_end,
};

#else /* without MPI: no set spans ranks, every link is the peer transport's */

void wfpt_mpi_link_free(wfpt_set *s, wfpt_link *k) { (void)s, (void)k; }

const wfpt_transport wfpt_transport_mpi = {
    .name = "mpi (not built)",
    .frame_start = NULL,
};

#endif
