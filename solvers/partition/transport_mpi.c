/* The MPI transport (transport.h): partitions held by different ranks of an MPI job. A link
 * between two partitions of this rank is the peer transport's; a link between ranks is owned by
 * both ends, each doing only its side:
 *
 *   sender's rank:    post_send   waits for the pack (the host waits for the sender's stream),
 *                                 downloads the slot's segments into the link's host buffer (after
 *                                 the link's previous MPI_Isend is complete) and MPI_Isend's it
 *   receiver's rank:  post_recv   MPI_Irecv into the link's other host buffer
 *                     wait        MPI_Wait, then uploads the segments into the receive regions on
 *                                 the receiver's stream (after its last read of them: stream order)
 *                     frame_end   (sender) completes the link's MPI_Isend
 *
 * Staged through host memory and waited for by the host, so a frame over ranks runs stage by
 * stage (frame.c refuses to capture it). One message per link and slot, tagged with the pair
 * and the slot; the messages of one pair of ranks are not overtaken (MPI's order), and every
 * rank posts an exchange's receives and sends (wfpt_send) before it waits for any of them, so no
 * rank waits for a message its peer has not sent. A rank's download waits only for its own
 * sender, an upload only for what came: the bytes moved are exactly the peer copy's, so the result
 * is bitwise that of one process. CUDA-aware MPIs (wf_mpi_available, MPIX_Query_cuda_support in
 * ranks.c) could take device pointers directly and skip both staging copies; that path is not
 * written yet.
 */
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "ranks.h"
#include "transport.h"

#ifdef WEFT_HAVE_MPI
#include <mpi.h>

typedef struct mpi_link {
  void *out, *in; /* host staging: what goes, what came */
  size_t out_cap, in_cap;
  MPI_Request send, recv;
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

static bool grow(void **p, size_t *cap, size_t bytes) {
  if (*cap >= bytes) return true;
  void *n = realloc(*p, bytes);
  if (!n) return false;
  *p = n, *cap = bytes;
  return true;
}

void wfpt_mpi_link_free(wfpt_set *s, wfpt_link *k) {
  mpi_link *m = k->tr;
  if (!m) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) {
    MPI_Wait(&m->send, MPI_STATUS_IGNORE);
    if (m->recv != MPI_REQUEST_NULL) { /* posted, never waited for (a failed frame) */
      MPI_Cancel(&m->recv);
      MPI_Wait(&m->recv, MPI_STATUS_IGNORE);
    }
  }
  free(m->out), free(m->in), free(m);
  k->tr = NULL;
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
  size_t bytes = k->slot[slot].bytes;
  if (bytes > (size_t)0x7fffffff)
    return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d: %zu bytes in one message", s->what,
                     k->from, k->to, bytes);
  if (!grow(&m->in, &m->in_cap, bytes ? bytes : 1))
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  int err = MPI_Irecv(m->in, (int)bytes, MPI_BYTE, s->rank_of[k->from], tag_of(k, slot), comm(s),
                      &m->recv);
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, k, slot, err, "posting a receive");
}

static wf_status mpi_post_send(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.post_send(s, k, slot, stream);
  mpi_link *m = NULL;
  wf_status st = state_of(s, k, &m);
  if (st != WF_OK) return st;
  const wfpt_slot *sl = &k->slot[slot];
  int err = MPI_Wait(&m->send, MPI_STATUS_IGNORE); /* the host buffer is free again */
  if (err != MPI_SUCCESS) return mpi_fail(s, k, slot, err, "completing a send");
  if (!grow(&m->out, &m->out_cap, sl->bytes ? sl->bytes : 1))
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  if ((st = wf_stream_synchronize(stream)) != WF_OK) /* the pack */
    return wfpt_fail_link(s, k, slot, st, "waiting for the pack");
  size_t at = 0;
  for (uint32_t i = 0; i < sl->n; i++) {
    const wfpt_seg *g = &sl->seg[i];
    if (!g->src || g->src_off + g->bytes > wf_buffer_size(g->src))
      return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d (slot %d): segment %u has %s",
                       s->what, k->from, k->to, slot, i,
                       g->src ? "a region past the end of its buffer" : "a NULL buffer");
    if (g->bytes && s->mode != WFPT_NO_COPY &&
        (st = wf_download((char *)m->out + at, g->src, g->src_off, g->bytes)) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, "staging a halo");
    at += g->bytes;
  }
  err = MPI_Isend(m->out, (int)at, MPI_BYTE, s->rank_of[k->to], tag_of(k, slot), comm(s), &m->send);
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, k, slot, err, "sending a halo");
}

static wf_status mpi_wait(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.wait(s, k, slot, stream);
  mpi_link *m = k->tr;
  if (!m || m->recv == MPI_REQUEST_NULL)
    return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d (slot %d): wait without a receive",
                     s->what, k->from, k->to, slot);
  int err = MPI_Wait(&m->recv, MPI_STATUS_IGNORE);
  if (err != MPI_SUCCESS) return mpi_fail(s, k, slot, err, "receiving a halo");
  const wfpt_slot *sl = &k->slot[slot];
  size_t at = 0;
  for (uint32_t i = 0; i < sl->n; i++) {
    const wfpt_seg *g = &sl->seg[i];
    if (!g->dst || g->dst_off + g->bytes > wf_buffer_size(g->dst))
      return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d (slot %d): segment %u has %s",
                       s->what, k->from, k->to, slot, i,
                       g->dst ? "a region past the end of its buffer" : "a NULL buffer");
    wf_status st;
    if (g->bytes && s->mode != WFPT_NO_COPY &&
        (st = wf_upload(g->dst, g->dst_off, (char *)m->in + at, g->bytes, stream)) != WF_OK)
      return wfpt_fail_link(s, k, slot, st, "unstaging a halo");
    at += g->bytes;
  }
  return WF_OK;
}

/* The pack may overwrite the send regions: the peer links' copies are waited for on the stream;
 * the links between ranks read them in post_send, before it returned. */
static wf_status mpi_send_reuse(wfpt_set *s, int p, wf_stream *stream) {
  return s->part[p].copy ? wfpt_transport_peer.send_reuse(s, p, stream) : WF_OK;
}

static wf_status mpi_frame_end(wfpt_set *s, wfpt_link *k) {
  if (!between_ranks(s, k)) return wfpt_transport_peer.frame_end(s, k);
  mpi_link *m = k->tr;
  if (!m || !wfpt_local(s, k->from)) return WF_OK;
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
