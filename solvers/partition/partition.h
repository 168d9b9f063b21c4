/* Partitions: what the particle and cloth solvers share about running over 1..N devices.
 * Internal to libweft (no WF_API); the public side is include/weft/partition.h.
 *
 * A partition set holds, per partition, its device, its compute stream (the solver's: a
 * wf_particles' or wf_cloth's stream) and, with more than one partition, a copy stream of its own
 * that carries the halo transfers out of it. Links join an ordered pair of partitions (from ->
 * to): the ghosts `to` holds of rows `from` owns. A link has slots, one per kind of exchange a
 * frame makes over it (the particles: one; the cloth: every ghost, then one per XPBD colour);
 * a slot is a list of segments, each a contiguous region of a buffer on the sender's device to be
 * moved into a region of a buffer on the receiver's. A segment's regions may be the solver's own
 * state (the cloth copies its send set straight into the receiver's ghost range) or the link's
 * staging buffers (send on the sender's device, recv on the receiver's, filled and emptied by the
 * solver's pack and unpack kernels).
 *
 *   partition 0          partition 1           from's stream:  ... pack ─┐
 *   ┌────────────┐ link  ┌────────────┐        from's copy:            transfer ──(copied)──┐
 *   │ owned│send ├──────>│ recv│ghosts│        to's stream:   ... unpack ─(recv_free)─ ... wait
 *   └────────────┘       └────────────┘
 *
 * How a transfer is ordered (transport.h) does not depend on what moves: every transfer waits for
 * the sender's work so far (its pack) and for the receiver's last read of what it overwrites
 * (recv_free); the receiver's next read waits for the transfer (copied); the sender's next pack
 * waits for its transfers so far (send_reuse). The transport (peer copies here, MPI ranks next)
 * implements those four points; partition.c owns the objects.
 *
 * Invariants
 *  - recv_free[to][from] and copied[from][to] are made once per ordered pair, on first use, and
 *    kept until the set is destroyed: a captured frame names them, and links are rebuilt at
 *    every repartition while the graph may survive it.
 *  - A link slot (links[i]) keeps its staging buffers while it joins the same pair; the buffers
 *    only grow (wfpt_link_reserve), so their addresses change only when a count outgrows them.
 *  - mode is WFPT_FULL outside wfpt_run_frames and wfpt_capture; the transport reads it to leave
 *    the copies out (WFPT_NO_COPY) and the solver to leave its kernels out (WFPT_COPIES).
 */
#ifndef WEFT_SOLVERS_PARTITION_H
#define WEFT_SOLVERS_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/gpu.h"
#include "weft/partition.h"

#define WFPT_MAX WF_MAX_DEVICES

/* What a frame enqueues (wfpt_run_frames' mode; the overlap measure's kinds of frame, in its
 * order): the frame; the frame without the transfers (every wait and event stays, so the frame
 * has the same shape; the ghosts go stale); the transfers alone, with their waits; the ordinary
 * frame with the solver's compute marks (the particles' time stamps, the cloth's events). */
typedef enum wfpt_mode { WFPT_FULL, WFPT_NO_COPY, WFPT_COPIES, WFPT_COMPUTE } wfpt_mode;
#define WFPT_MODES 4

/* dst[dst_off, + bytes) on the receiver's device takes src[src_off, + bytes) on the sender's. */
typedef struct wfpt_seg {
  wf_buffer *dst, *src;
  size_t dst_off, src_off, bytes;
} wfpt_seg;

typedef struct wfpt_slot {
  wfpt_seg *seg;
  uint32_t n, cap;
  size_t bytes; /* the segments' sum: what one exchange of the slot moves */
} wfpt_slot;

typedef struct wfpt_link {
  int from, to;
  int n_slots, cap_slots;
  wfpt_slot *slot;
  wf_buffer *send; /* staging on from's device, or NULL (wfpt_link_reserve) */
  wf_buffer *recv; /* staging on to's device, the same size */
  size_t staged;   /* the staging buffers' size */
  void *tr;        /* the transport's state of the link (MPI: its requests); NULL for peers */
} wfpt_link;

typedef struct wfpt_part {
  wf_device *dev;
  wf_stream *stream; /* the solver's; not owned */
  wf_stream *copy;   /* transfers out of this partition; owned; NULL with one partition */
} wfpt_part;

typedef struct wfpt_transport wfpt_transport;

typedef struct wfpt_set {
  char what[96]; /* the solver in messages: "particles 'pile'" */
  int n;
  wfpt_part part[WFPT_MAX];
  wfpt_link *links;
  int n_links, cap_links;
  wf_event *recv_free[WFPT_MAX][WFPT_MAX]; /* [to][from], on to's device */
  wf_event *copied[WFPT_MAX][WFPT_MAX];    /* [from][to], on from's device */
  const wfpt_transport *tr;
  wfpt_mode mode;
  /* MPI ranks (ranks.h): the rank that holds each partition; this process's rank and the number
   * of ranks; lead, the first partition this rank holds (its stream forks and joins the frames).
   * One process: every partition is rank 0's, lead 0, mpi NULL. A partition of another rank has
   * no device, stream or copy stream here. */
  int rank, ranks, lead;
  int rank_of[WFPT_MAX];
  void *mpi; /* ranks.c's state (the set's own communicator); NULL: one process */
  /* over ranks: whether MPI reads and writes partition p's buffers itself (wf_mpi_halo DIRECT,
   * resolved at creation for this rank's partitions) rather than host copies of them */
  bool direct[WFPT_MAX];
} wfpt_set;

/* Whether this process holds partition p (its device, streams and state). */
static inline bool wfpt_local(const wfpt_set *s, int p) { return s->rank_of[p] == s->rank; }

typedef struct wfpt_set_desc {
  const char *what;          /* for messages; NULL: "partitions" */
  int n;                     /* 1 .. WFPT_MAX */
  wf_device *const *devices; /* n */
  wf_stream *const *streams; /* n compute streams, one on each device */
  const wfpt_transport
      *transport; /* NULL: wfpt_transport_peer (with mpi_comm: wfpt_transport_mpi) */
  /* NULL: one process holds every partition. Else it points at an MPI_Comm (ranks.h) whose ranks
   * share the n partitions, in blocks (wfpt_rank_of): devices[p] and streams[p] are read for
   * this rank's partitions only (the others' may be NULL). */
  const void *mpi_comm;
  int mpi_halo; /* with mpi_comm: wf_mpi_halo */
} wfpt_set_desc;

wf_status wfpt_set_create(const wfpt_set_desc *d, wfpt_set **out);
/* Waits for every stream, then frees the links, events and copy streams (not the solver's
 * streams). NULL is ignored. */
void wfpt_set_destroy(wfpt_set *s);

/* Forgets the links (a repartition rebuilds them); their slots keep their buffers. */
void wfpt_links_clear(wfpt_set *s);
/* The next link, from -> to, with n_slots empty slots; fails naming the link when a partition
 * index is out of range or from == to. Buffers of the slot it reuses are kept when the slot
 * joined the same pair before, else freed. */
wf_status wfpt_link_add(wfpt_set *s, int from, int to, int n_slots, wfpt_link **out);
/* Staging buffers of at least `bytes` each (grown by half again, zero-filled when new). */
wf_status wfpt_link_reserve(wfpt_set *s, wfpt_link *k, size_t bytes);
/* Appends a segment to slot `slot` of k (its regions are checked when the frame sends them). */
wf_status wfpt_slot_add(wfpt_set *s, wfpt_link *k, int slot, wf_buffer *dst, size_t dst_off,
                        wf_buffer *src, size_t src_off, size_t bytes);
void wfpt_slot_clear(wfpt_link *k, int slot);
/* Whether partition p sends anything in slot `slot` (-1: in any slot). */
bool wfpt_sends(const wfpt_set *s, int p, int slot);
/* Bytes one exchange of `slot` moves over every link (-1: every slot). */
uint64_t wfpt_slot_bytes(const wfpt_set *s, int slot);

/* A graph key: the words a captured frame bakes in (frame.h). Grows as words are put; a key
 * that ran out of memory (lost) matches no other, so the frame is captured again. */
typedef struct wfpt_key {
  uint64_t *w;
  size_t n, cap;
  bool lost;
} wfpt_key;
void wfpt_key_put(wfpt_key *k, uint64_t word);
void wfpt_key_free(wfpt_key *k);
/* Puts the words of the set's links: pairs, slots, staging and segment addresses and sizes. */
void wfpt_key_links(const wfpt_set *s, wfpt_key *k);

/* A GPU-layer call failed with st: "<what>: <doing>: <its message>"; returns st. */
wf_status wfpt_fail(const wfpt_set *s, wf_status st, const char *doing);
/* The same about link k's slot (slot -1: the link): "<what>: link 0 -> 1 (slot 2): ...". */
wf_status wfpt_fail_link(const wfpt_set *s, const wfpt_link *k, int slot, wf_status st,
                         const char *doing);

#endif
