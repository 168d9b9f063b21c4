/* The public cloth (wf_cloth, weft/cloth.h): one cloth over 1..N devices, a partition (wfc_part,
 * cloth.c) per device. This header is the object the files behind it share:
 *
 *   cloth_api.c        the public functions: straight to the one partition, or over N
 *   partition_cut.c    the vertex graph and its METIS cut
 *   partition_build.c  the numbering, the partitions and their links
 *   partition_state.c  reading and writing the state of N partitions, the gather
 *   halo.c             the frame of N partitions with its halo exchanges, the overlap measure
 *
 * and solvers/partition/ (partition sets, links, transport, frame capture, measure, gather) the
 * machinery under them.
 *
 * One device: the partition is the whole cloth, made from the grid or mesh as given: no halo,
 * no gather, no partition set, no local numbering; the calls of every frame go straight to it
 * (whole()), the single-device fast path unchanged (tiled frame kernels, per-frame readback),
 * and self-collision and coupling available. The setup calls loop over the partitions as with
 * several.
 *
 * Several devices:
 * At creation the whole mesh is built once on the host (topology, masses, springs or coloured
 * XPBD constraints, exactly as one wfc_part builds them) and its vertex graph is cut into n parts
 * by METIS (k-way, fixed seed). Partition p is an ordinary wfc_part made from local topology
 * (cloth_internal.h): the vertices it owns (those other partitions read first: see Overlap),
 * then its ghosts, each group in ascending global order; the springs, constraints and triangles
 * that touch an owned vertex, in global order, re-indexed. Its per-vertex kernels update the owned
 * vertices only.
 *
 * Why the result does not depend on the split:
 *  - Mass-spring: a vertex's substep reads its springs' other ends and its triangles' corners
 *    (aerodynamics) from the substep's input state and writes only itself. Those vertices are
 *    local (owned or ghost), its CSR list and triangle list are the global ones in the global
 *    order, and after every substep each ghost is overwritten with its owner's output (the halo
 *    exchange). So it computes on the same bits in the same order as in one solver.
 *  - XPBD: predict and finalize are per vertex, as above. The constraint passes run colour by
 *    colour, in the global colour order, each constraint writing only its own vertices. Every
 *    partition projects every constraint that touches one of its owned vertices — a constraint
 *    across a boundary is projected by both sides, on the same bits, with the same result —
 *    and after each pass the ghosts are refreshed from their owners, which projected every
 *    constraint on them. By induction over the passes every owned and ghost value equals the
 *    single solver's. A pass needs to refresh only the ghosts it left stale: those touched by a
 *    constraint of its colour that the partition does not project (a ghost touched by one it
 *    projects got the owner's bits already; one the colour does not touch did not change).
 *    The pass after the last colour needs no exchange (finalize reads owned vertices only, and
 *    the next predict's exchange overwrites every ghost); the end of the substep exchanges
 *    positions and velocities (the constraints' damping and the aerodynamics read the ghosts'
 *    state). Multipliers belong to a constraint and are computed alike.
 *  - Pins (inverse mass 0, in pos.w) are written in every partition holding the vertex, and
 *    travel with the exchanged state anyway. Colliders, material and parameters are given to
 *    every partition; each reads them from its own device block.
 *
 * Numbering. A partition's owned vertices come first: the send set (those some other partition
 * holds as ghosts), grouped by the set of partitions that hold them, then the interior; then its
 * ghosts, by owner, each owner's in that owner's numbering. So a link's ghosts are one range of
 * the receiver's arrays, and its sources a few runs of the sender's send set. The numbering
 * changes nothing in the math, which gathers in global order.
 *
 * Links (solvers/partition): one per ordered pair (q -> p) with ghosts, with these slots:
 *
 *   WFC_SLOT_V1       every ghost's POS1 and VEL1 (mass-spring substeps from half 0)
 *   WFC_SLOT_V0       every ghost's POS0 and VEL0 (mass-spring from half 1; XPBD finalize)
 *   WFC_SLOT_P1       every ghost's POS1 (XPBD predict)
 *   WFC_SLOT_CC0      contact: from's owned POS0 and POS1 (the substep's start and end guess:
 *                     XPBD, and mass-spring substeps from half 0) into to's contact copies
 *   WFC_SLOT_CC1      contact: from's owned POS1 and POS0 (mass-spring from half 1)
 *   WFC_SLOT_COLOUR0 + c   the ghosts XPBD colour c's pass leaves stale, POS1
 *
 * A ghost slot has one segment per run of the link's sources and buffer, from a view of q's
 * send set (sent[w]) straight into a view of p's ghost range (ghost[w]): no pack or unpack
 * kernel. The views, not the whole state buffers, are the segments' buffers: a copy is then
 * ordered by its view's last user (the copy stream), not made to wait for the last kernel on the
 * whole buffer; the kernels are ordered by the frame's waits. A colour slot is one segment from
 * the link's staging send buffer into its recv buffer: a pack kernel on q's stream gathers the
 * stale ghosts' owners by index list, an unpack on p's stream scatters them.
 *
 * Overlap. The per-vertex stages (a mass-spring substep, XPBD's predict and finalize) run as two
 * launches: the send set; then the transfers start, and the interior runs on the partition's
 * stream while they move on its copy stream. A vertex reads ghosts only from the stage's input
 * half, which the exchange does not write, so which launch computes a vertex does not change its
 * bits. The colour passes' exchanges do not overlap (each pass needs the previous one's ghosts).
 *
 * Contact (desc.contact; cloth_contact.h). Contact partners are spatial and change every substep,
 * so a topological halo cannot hold them. Each partition holds the whole cloth's contact
 * topology (edges, triangles, the lists of what each vertex has and owns, rest positions) and,
 * each substep, read-only copies of every vertex's start position and end guess: after the
 * integrator's end guess (springs: the spring step; XPBD: the last colour pass) every partition
 * sends its owned vertices' two positions to every other (slot CC0 or CC1: two segments a link,
 * straight from its state into the receiver's copies, B_CC_CAT0/1, at the sender's place in the
 * concatenation of the partitions' owned vertices: so there is a link for every ordered pair).
 * Each partition then runs the one-device stage on the whole cloth's arrays: SCATTER puts each
 * copy at its global index (the partition's own owned vertices from its state), then REACH
 * (maxima over every vertex), the grid (keys over every vertex in global order, the stable sort:
 * cells list their vertices in global order, as on one device), and GATHER and APPLY over its
 * owned vertices only. So each owned vertex gathers the same pairs in the same order from the
 * same bits as on one device, and writes only itself: the result is one device's, bit for bit.
 * The ghost exchange after the stage (springs: V0/V1; XPBD: finalize's V0) carries the corrected
 * positions and velocities. The cost: per substep each partition receives 32 bytes per vertex it
 * does not own and sorts the whole cloth's grid (the gather, the heavy part, stays per owned
 * vertex); memory: the whole contact topology and four vertex arrays per partition.
 *
 * A frame of all partitions is captured once into one graph on partition 0's stream (wfpt_frame)
 * and launched with one call. Nothing changes the counts after creation, so the frame has no key
 * of its own and is never recaptured.
 */
#ifndef WEFT_CLOTH_PARTS_H
#define WEFT_CLOTH_PARTS_H

#include "cloth_internal.h"
#include "solvers/partition/frame.h"
#include "solvers/partition/gather.h"
#include "solvers/partition/ranks.h"

#define WFC_NONE UINT32_MAX

enum { WFC_SLOT_V1, WFC_SLOT_V0, WFC_SLOT_P1, WFC_SLOT_CC0, WFC_SLOT_CC1, WFC_SLOT_COLOUR0 };

/* The cloth's side of link l (cs->set->links[l]). */
typedef struct wfc_halo_link {
  uint32_t n;          /* ghosts of the link */
  uint32_t first;      /* to-local index of the first: they are to's ghosts [first, first + n) */
  wf_buffer *ghost[4]; /* views of to's state buffers (WFC_BUF_*) over [first, first + n) */
  wf_buffer *cat[2];   /* contact: views of to's wfc_contact_cat over from's owned range */
  uint32_t *off;       /* colour c: index list entries [off[c], off[c + 1]) */
  wf_buffer *src_idx;  /* on from's device: from-local indices to send, or NULL (no colour) */
  wf_buffer *dst_idx;  /* on to's device: to-local ghost slots */
} wfc_halo_link;

/* Partition p as the whole cloth sees it. */
typedef struct wfc_piece {
  wfc_part *c;
  wf_device *dev;
  uint32_t n_local, n_owned;
  uint32_t n_send;     /* owned vertices [0, n_send) are ghosts elsewhere (the send set) */
  uint32_t *gid;       /* local -> global vertex id */
  uint32_t *send_gid;  /* the send set's global ids (gid's first n_send, known before gid) */
  wf_buffer *ids;      /* on dev: gid's first n_owned (wf_cloth_partition_view, the gather) */
  wf_buffer *sent[4];  /* views of the state buffers (WFC_BUF_*) over the send set */
  wf_buffer *owned[2]; /* contact: views of POS0 and POS1 over the owned vertices */
} wfc_piece;

struct wf_cloth {
  char name[64];
  wf_cloth_desc desc; /* desc.name points at name */
  int np;
  /* MPI ranks (cloth_ranks.c): this process's rank and the number of ranks sharing the np
   * partitions in blocks (wfpt_rank_of); 0 and 1 in one process. Partition p of another rank has
   * no solver (parts[p].c NULL), device, streams or buffers here; its numbering (gid, n_owned,
   * lid) is known on every rank, which is what the links and the gathers need. */
  int rank, ranks;
  /* over ranks: measuring collider forces as this rank asked (agreed before each step), and the
   * sums of every rank's tables that the last frames made (cloth_ranks.c) */
  bool forces_want;
  unsigned long long *force_sum;
  double force_seconds;
  wfc_piece parts[WFPT_MAX];
  wfpt_set *set; /* several devices only */
  wfpt_frame frame;
  wfc_halo_link *links; /* set->n_links */
  uint32_t nv, nt;
  uint32_t *tris; /* the whole cloth's triangles, 3 each (one device: the partition's) */
  uint32_t springs, constraints, colours; /* the whole cloth's */
  uint32_t grid[2];
  double origin[3];   /* the cloth's origin in the world; every partition's positions are
                         relative to it (docs/precision.md) */
  float (*rest)[3];   /* rest positions relative to origin, global order (one device: the
                         partition's) */
  int8_t *owner;      /* per global vertex */
  uint32_t *ghost_in; /* per global vertex: bit p when partition p holds it as a ghost */
  uint32_t *lid;      /* [p * nv + g]: local index of g in partition p, or WFC_NONE; NULL: g */
  uint8_t *pinned;    /* per global vertex */
  /* the measure's compute marks: NULL, or per partition mark_cap pairs of timing events around
   * its kernels (start, end), mark_n[p] of them recorded in a WFPT_COMPUTE frame */
  wf_event **marks;
  uint32_t mark_cap, mark_n[WFPT_MAX];
  wf_cloth_info info;
  /* wf_cloth_copy_positions_on's, made at its first call and again when its stream changes */
  wfpt_gather *gather;
  wf_stream *gather_stream;
  wf_buffer *gather_out; /* on the gather's device, for a destination elsewhere */
};

static inline wf_stream *wfc_stream_of(const wf_cloth *cs, int p) {
  return cs->parts[p].c ? wfc_part_stream(cs->parts[p].c) : NULL;
}

/* Whether this process holds partition p (always in one process). */
static inline bool wfc_mine(const wf_cloth *cs, int p) {
  return cs->ranks <= 1 || wfpt_rank_of(p, cs->np, cs->ranks) == cs->rank;
}

/* This process's first partition: the one whose solver answers for the whole cloth's setup
 * (its clock, parameters, colliders: every partition holds the same). */
static inline int wfc_lead(const wf_cloth *cs) {
  for (int p = 0; p < cs->np; p++)
    if (cs->parts[p].c) return p;
  return 0;
}
static inline wfc_part *wfc_lead_part(const wf_cloth *cs) { return cs->parts[wfc_lead(cs)].c; }

/* An error naming the cloth: a GPU-layer call failed with st (its message kept). */
wf_status wfc_fail(const wf_cloth *cs, const char *fn, wf_status st, const char *what);

/* partition_build.c: cs (its name, desc and np >= 2 set) over np devices, ready to step; the
 * caller destroys it on failure. */
wf_status wfc_create_parts(const char *fn, wf_device *const *devices, const wf_cloth_desc *desc,
                           const wf_cloth_grid *grid, const wf_cloth_mesh_desc *mesh, wf_cloth *cs);
/* partition_cut.c: owner[] of every vertex (n = cs->np parts, none empty). */
wf_status wfc_cut(const char *fn, wf_cloth *cs, const wf_cloth_desc *sd, const wfc_topology *t,
                  const wfc_springs *sp, const wfc_constraints *cons);
/* Frees what partition_build.c made (links' views and index lists, the set, the partitions). */
void wfc_free_parts(wf_cloth *cs);

/* halo.c: the frame's callbacks (wfpt_frame_init), and the overlap measure's frames. */
void wfc_frame_init(wf_cloth *cs);
wf_status wfc_measure_parts(wf_cloth *cs, const char *fn, int frames, wf_overlap *out);

/* cloth_ranks.c: over MPI ranks (cs->ranks > 1). */
/* Rank 0's cut (cs->owner) to every rank, so that every rank numbers the same partitions. */
wf_status wfc_ranks_cut(wf_cloth *cs, const char *fn);
/* Every rank's owned rows of pos and vel (either NULL: skipped), gathered into the whole cloth's
 * arrays in global order on every rank; *bad_g lowered to the smallest bad vertex of any rank.
 * A collective: every rank calls it, also one whose own download failed (st: its status). */
wf_status wfc_ranks_gather_rows(wf_cloth *cs, const char *fn, float (*pos)[4], float (*vel)[4],
                                uint32_t *bad_g, wf_status st);
/* The energy rows of every rank's owned vertices, gathered in global order (a collective). */
wf_status wfc_ranks_gather_energy(wf_cloth *cs, const char *fn, wfc_energy *rows, wf_status st);
/* Before a step: measuring collider forces is on where any rank asked for it (a collective). */
wf_status wfc_ranks_forces_agree(wf_cloth *cs, const char *fn);
/* After frames: the sums of every rank's force tables into force_sum (a collective, also after a
 * failed frame, which gives zeros). */
wf_status wfc_ranks_forces_sum(wf_cloth *cs, const char *fn, wf_status st);
/* Switches measuring in this process's partitions. */
wf_status wfc_forces_apply(wf_cloth *cs, bool on);
/* A capability not over MPI ranks. */
wf_status wfc_not_over_ranks(const wf_cloth *cs, const char *fn, const char *what);

/* partition_state.c */
wf_status wfc_download_parts(wf_cloth *cs, const char *fn, float (*pos)[4], float (*vel)[4]);
wf_status wfc_set_state_parts(wf_cloth *cs, const float (*pos)[4], const float (*vel)[4],
                              double time, uint64_t substeps);
wf_status wfc_copy_positions_parts(wf_cloth *cs, const char *fn, wf_buffer *dst, size_t off,
                                   wf_stream *s);
void wfc_gather_free(wf_cloth *cs);

#endif
