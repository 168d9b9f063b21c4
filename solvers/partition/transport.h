/* The transport: how a link's slot gets from its sender's buffers into its receiver's, ordered on
 * the partitions' streams (partition.h has the picture).
 *
 * A solver's frame calls the wrappers below at four points of every exchange, the same for both
 * solvers (their split.c files implemented them twice):
 *
 *   receiver, when it has read what the exchange overwrites:   wfpt_release(s, to, slot)
 *   sender, before its pack writes the send regions again:     wfpt_send_reuse(s, p, slot)
 *   sender, after its pack:                                    wfpt_send(s, slot)
 *   receiver, before its unpack reads what came in:            wfpt_recv_wait(s, to, slot)
 *
 * plus wfpt_frame_start (before a frame's first exchange: every receive region is free, as of
 * the receiver's work so far) and wfpt_frame_end (the staging buffers' last users, for the GPU
 * layer's ordering of later copies and frees).
 *
 * The rules they keep (both solvers' comments give the reasons):
 *  - A transfer waits for the sender's work so far (its pack) and for the receiver's last read of
 *    the regions it writes (recv_free), never for the receiver's compute after that read: it runs
 *    while the receiver computes, off the frame's critical path.
 *  - The receiver waits for its links' transfers (copied), not for its senders' other transfers.
 *  - A sender's next pack waits for its transfers so far: a send region is never overwritten
 *    while read.
 *  - At a frame's start the first transfer into each receive region waits for everything queued
 *    on the receiver before it (the unpacks of the frame before); staged frames make the copy
 *    stream the receive buffer's last user, so the GPU layer's own ordering of wf_copy does not
 *    make the copy wait for the receiver's first substep after all.
 *
 * Peer copies (transport_peer.c): the transfer is a wf_copy per segment on the sender's copy
 * stream, which then records copied; recv_free is an event recorded on the receiver's stream;
 * post_recv has nothing to do. Where peers cannot reach each other the GPU layer stages the copy
 * through pinned host memory.
 *
 * MPI ranks (transport_mpi.c does the staged form of what follows; the device-direct and
 * stream-triggered forms are next): a rank holds some partitions of the set; a link between two of
 * its own partitions stays a peer copy, a link between ranks is owned by both ends, each filling in
 * only its side's buffers. post_send on the sender's rank waits (on the copy stream) for the pack
 * and for a "receive posted" token, then MPI_Isend's each segment's source region (tag: link, slot,
 * segment), from device memory where the MPI is CUDA-aware, else from a pinned host buffer the
 * copy stream filled; the request lives in wfpt_link.tr. post_recv on the receiver's rank posts
 * MPI_Irecv's into the destination regions (or pinned buffers) once recv_free is reached, which
 * is what makes release cheap: it only marks the point. wait makes the receiver's stream wait for
 * the requests' completion (a host function polling MPI_Test in a stream-ordered progress thread,
 * or the MPI's stream-triggered operations where it has them) and, staged, the copy from the
 * pinned buffer. send_reuse waits for the Isend requests. Captured frames cannot hold host waits
 * on MPI; a set with an MPI transport runs its frames stage by stage (wfpt_frame.no_graph), or
 * captures per rank with the MPI calls outside the graph at the exchange points.
 */
#ifndef WEFT_SOLVERS_PARTITION_TRANSPORT_H
#define WEFT_SOLVERS_PARTITION_TRANSPORT_H

#include "partition.h"

/* One implementation of the four points for one link and slot. `stream` is the partition's
 * compute stream at that point: the sender's for post_send, the receiver's for release,
 * post_recv and wait. */
struct wfpt_transport {
  const char *name;
  wf_status (*frame_start)(wfpt_set *s, wfpt_link *k);
  wf_status (*release)(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream);
  wf_status (*post_send)(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream);
  wf_status (*post_recv)(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream);
  wf_status (*wait)(wfpt_set *s, wfpt_link *k, int slot, wf_stream *stream);
  /* partition p's stream waits until its transfers so far no longer read its send regions */
  wf_status (*send_reuse)(wfpt_set *s, int p, wf_stream *stream);
  wf_status (*frame_end)(wfpt_set *s, wfpt_link *k);
};

extern const wfpt_transport wfpt_transport_peer;
/* Links between two partitions of this rank: the peer transport's points; links between ranks:
 * MPI messages staged through host memory (transport_mpi.c). Without MPI it refuses every link
 * between ranks (there are none: a set cannot be made over ranks). */
extern const wfpt_transport wfpt_transport_mpi;
/* The MPI state of link k (its host buffers; requests completed first). */
void wfpt_mpi_link_free(wfpt_set *s, wfpt_link *k);

/* The rule points over every link with something in `slot` (slot -1 for release and recv_wait:
 * every link into `to`, whatever its slots; to -1: every receiver). */
wf_status wfpt_frame_start(wfpt_set *s);
wf_status wfpt_release(wfpt_set *s, int to, int slot);
wf_status wfpt_send_reuse(wfpt_set *s, int p, int slot);
wf_status wfpt_send(wfpt_set *s, int slot);
wf_status wfpt_recv_wait(wfpt_set *s, int to, int slot);
wf_status wfpt_frame_end(wfpt_set *s);

/* One link's points, for a solver that interleaves them with its own kernels per link (the
 * cloth's unpack of one link right after that link's wait). */
wf_status wfpt_post_send(wfpt_set *s, wfpt_link *k, int slot);
wf_status wfpt_post_recv(wfpt_set *s, wfpt_link *k, int slot);
wf_status wfpt_wait(wfpt_set *s, wfpt_link *k, int slot);

#endif
