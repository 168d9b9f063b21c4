/* The public cloth solver (wf_cloth, weft/cloth.h): one cloth over 1..N devices, a partition
 * (wfc_part, cloth.c) per device.
 *
 * One device: the partition is the whole cloth, made from the grid or mesh as given, and every
 * call goes straight to it (whole()): no halo, no gather, the single-device fast path unchanged
 * (tiled frame kernels, per-frame readback), and self-collision and coupling available.
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
 * The halo exchange of every ghost, for every ordered pair (q -> p) with ghosts: once q has
 * computed its send set and p is done with its previous substep (which read the ghost slots
 * about to be written), q's copy stream copies the link's runs of each exchanged state buffer
 * straight from q's send set into p's ghost range of the same buffer (peer copies between GPUs;
 * the GPU layer stages them through pinned host memory where peers are unreachable, with one
 * warning) and records the link's event, which p's stream waits for. There is no pack or unpack
 * kernel. A partition's next stage waits for its copy stream, so a run is never overwritten
 * while it is read.
 *
 * Overlap. The per-vertex stages (a mass-spring substep, XPBD's predict and finalize) run as two
 * launches: the send set; then the copies start, and the interior runs on the partition's stream
 * while they move on its copy stream. A vertex reads ghosts only from the stage's input half,
 * which the exchange does not write, so which launch computes a vertex does not change its bits.
 *
 * The XPBD colour passes' exchanges (the ghosts a pass left stale, scattered through the ghost
 * range) go through index lists: a pack kernel on q's stream gathers them into a send buffer,
 * q's copy stream copies it into p's receive buffer, and an unpack kernel on p's stream scatters
 * it. They do not overlap (each pass needs the previous one's ghosts).
 *
 * Measurement (wf_cloth_overlap_measure): enqueue_frame can leave the copies out (mode
 * FRAME_NO_COPY: every wait and event stays, so the frame's shape is the same) or enqueue only
 * the copies with their waits (FRAME_COPIES); each kind is captured into a graph of its own. It
 * can also record timing events around each stretch of a partition's kernels (cs->marks), which
 * time the frame's compute.
 *
 * A frame of all partitions is captured once into one graph on partition 0's stream (the others
 * fork from it and join back) and launched with one call. Nothing changes the counts after
 * creation, so the graph is never recaptured.
 */
#include <math.h>
#include <metis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cloth_internal.h"
#include "cloth_kernels.h"
#include "internal/error.h"
#include "solvers/split_measure.h"

#define MAXP 16
#define NONE UINT32_MAX

typedef struct link {
  int from, to;
  uint32_t n;     /* ghosts of the link (slot 0) */
  uint32_t first; /* to-local index of the first of them: they are to's ghosts [first, first + n) */
  uint32_t n_runs;
  uint32_t *runs;      /* n_runs x {from-local start, offset into the ghosts, count}: the link's
                          vertices as runs of consecutive vertices of from's send set */
  wf_buffer *ghost[4]; /* views of to's state buffers (WFC_BUF_*) over [first, first + n) */
  uint32_t *off;       /* slot s: index list entries [off[s], off[s + 1]) */
  wf_buffer *src_idx;  /* XPBD colour slots, on from's device: from-local indices to send */
  wf_buffer *send;     /* on from's device: n of the first array, then n of the second */
  wf_buffer *recv;     /* on to's device: the same */
  wf_buffer *dst_idx;  /* on to's device: to-local ghost slots */
  wf_event *copied;    /* on from's device: recorded on from's copy stream after each copy */
} link;

/* The gather of the positions onto one device (wf_cloth_copy_positions_on): every partition's
 * owned rows, one partition after the other, into stage; a scatter by global id (the halo
 * unpack kernel) into out, or straight into a destination on that device. */
typedef struct gather {
  wf_device *dev;
  wf_buffer *stage, *gid, *out; /* nv rows; gid: stage row -> global id */
} gather;

typedef struct part {
  wfc_part *c;
  wf_device *dev;
  wf_stream *copy; /* halo copies out of this partition */
  uint32_t n_local, n_owned;
  uint32_t n_send;    /* owned vertices [0, n_send) are ghosts elsewhere (the send set) */
  uint32_t *gid;      /* local -> global vertex id */
  uint32_t *send_gid; /* the send set's global ids (gid's first n_send, known before gid) */
  wf_buffer *ids;     /* on dev: gid's first n_owned (wf_cloth_partition_view) */
  wf_buffer *sent[4]; /* views of the state buffers (WFC_BUF_*) over the send set */
} part;

struct wf_cloth {
  char name[64];
  wf_cloth_desc desc; /* desc.name points at name */
  int np;
  part parts[MAXP];
  link *links;
  int n_links;
  int n_slots; /* index lists per link: every ghost, then (XPBD) one per colour */
  uint32_t nv, nt;
  uint32_t *tris;     /* the whole cloth's triangles, 3 each (wf_cloth_triangles) */
  uint32_t springs, constraints, colours; /* the whole cloth's */
  uint32_t grid[2];
  float (*rest)[3];   /* rest positions, global order */
  int8_t *owner;      /* per global vertex */
  uint32_t *ghost_in; /* per global vertex: bit p when partition p holds it as a ghost */
  uint32_t *lid;      /* [p * nv + g]: local index of g in partition p, or NONE */
  uint8_t *pinned;    /* per global vertex */
  wf_graph *graph;
  int mode; /* what enqueue_frame enqueues: FRAME_* */
  /* the measure's compute marks: NULL, or per partition mark_cap pairs of timing events around
   * its kernels (start, end), mark_n[p] of them recorded in the frame */
  wf_event **marks;
  uint32_t mark_cap, mark_n[MAXP];
  wf_cloth_info info;
  gather gather; /* wf_cloth_copy_positions_on's, built at its first call */
};

/* What enqueue_frame enqueues: the frame (FULL); the frame without the halo copies (NO_COPY: the
 * ghosts go stale, for timing only); the halo copies of a frame alone (COPIES). */
enum { FRAME_FULL, FRAME_NO_COPY, FRAME_COPIES };

static wf_status oom(const char *fn, const char *name) {
  return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth '%s': out of host memory", name);
}

/* A GPU-layer call failed: keep its message (copied: wf__error rewrites the same text). */
static wf_status fail_gpu(wf_status st, const char *fn, const wf_cloth *cs,
                          const char *what) {
  char why[768];
  snprintf(why, sizeof why, "%s", wf_last_error());
  return wf__error(st, fn, "cloth '%s': %s: %s", cs->name, what, why);
}

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return fail_gpu(st_, fn, cs, what);                                          \
  } while (0)

static wf_stream *stream_of(const wf_cloth *cs, int p) {
  return wfc_part_stream(cs->parts[p].c);
}

/* The whole cloth's only partition with one device; NULL with several. */
static wfc_part *whole(const wf_cloth *cs) { return cs->np == 1 ? cs->parts[0].c : NULL; }

static void gather_free(wf_cloth *cs) {
  gather *g = &cs->gather;
  wf_buffer *b[] = {g->stage, g->gid, g->out};
  for (size_t k = 0; k < sizeof b / sizeof *b; k++)
    if (b[k]) wf_buffer_destroy(b[k], NULL);
  memset(g, 0, sizeof *g);
}

void wf_cloth_destroy(wf_cloth *cs) {
  if (!cs) return;
  for (int p = 0; p < cs->np; p++)
    if (cs->parts[p].c) wf_stream_synchronize(stream_of(cs, p));
  for (int p = 0; p < cs->np; p++)
    if (cs->parts[p].copy) wf_stream_synchronize(cs->parts[p].copy);
  if (cs->graph) wf_graph_destroy(cs->graph);
  gather_free(cs);
  for (int l = 0; l < cs->n_links; l++) {
    link *k = &cs->links[l];
    wf_stream *sf = stream_of(cs, k->from), *sto = stream_of(cs, k->to);
    for (int w = 0; w < 4; w++)
      if (k->ghost[w]) wf_buffer_destroy(k->ghost[w], sto);
    free(k->runs);
    if (k->src_idx) wf_buffer_destroy(k->src_idx, sf);
    if (k->send) wf_buffer_destroy(k->send, sf);
    if (k->recv) wf_buffer_destroy(k->recv, sto);
    if (k->dst_idx) wf_buffer_destroy(k->dst_idx, sto);
    wf_event_destroy(k->copied);
    free(k->off);
  }
  free(cs->links);
  for (int p = 0; p < cs->np; p++) {
    part *pt = &cs->parts[p];
    for (int w = 0; w < 4; w++)
      if (pt->sent[w]) wf_buffer_destroy(pt->sent[w], stream_of(cs, p));
    if (pt->ids) wf_buffer_destroy(pt->ids, stream_of(cs, p));
    if (pt->copy) wf_stream_destroy(pt->copy);
    wfc_part_destroy(pt->c);
    free(pt->gid), free(pt->send_gid);
  }
  free(cs->tris);
  free(cs->rest), free(cs->owner), free(cs->ghost_in), free(cs->lid), free(cs->pinned);
  free(cs);
}

/* ---- partitioning ---------------------------------------------------------------------------- */

/* The pairs of vertices that read each other: springs (mass-spring) or constraints (XPBD), and
 * the corners of every triangle. Deduplicated CSR for METIS. */
static wf_status vertex_graph(const char *fn, const wf_cloth *cs, const wfc_topology *t,
                              const wfc_springs *sp, const wfc_constraints *cons, idx_t **xadj_out,
                              idx_t **adj_out) {
  uint32_t nv = t->nv;
  size_t pairs = (size_t)t->nt * 6;
  if (sp) pairs += (size_t)sp->count * 2;
  if (cons) pairs += (size_t)cons->count * 12;
  idx_t *xadj = calloc((size_t)nv + 1, sizeof *xadj);
  idx_t *adj = malloc((pairs ? pairs : 1) * sizeof *adj);
  idx_t *fill = malloc(((size_t)nv + 1) * sizeof *fill);
  if (!xadj || !adj || !fill) {
    free(xadj), free(adj), free(fill);
    return oom(fn, cs->name);
  }
  /* two passes over the same pairs: count, then fill */
  for (int pass = 0; pass < 2; pass++) {
#define PAIR(a, b)                                                                                 \
  do {                                                                                             \
    if ((a) != (b)) {                                                                              \
      if (pass == 0)                                                                               \
        xadj[(a) + 1]++, xadj[(b) + 1]++;                                                          \
      else                                                                                         \
        adj[fill[a]++] = (idx_t)(b), adj[fill[b]++] = (idx_t)(a);                                  \
    }                                                                                              \
  } while (0)
    for (uint32_t k = 0; k < t->nt; k++) {
      const uint32_t *q = t->tris + 3 * (size_t)k;
      PAIR(q[0], q[1]);
      PAIR(q[1], q[2]);
      PAIR(q[2], q[0]);
    }
    if (sp)
      for (uint32_t i = 0; i < nv; i++)
        for (uint32_t k = sp->adj_start[i]; k < sp->adj_start[i + 1]; k++) {
          uint32_t j = sp->adj[k].other_kind & WFC_LINK_INDEX_MASK;
          if (i < j) PAIR(i, j);
        }
    if (cons)
      for (uint32_t k = 0; k < cons->count; k++) {
        const wfc_constraint *c = &cons->cons[k];
        int m = c->kind == WFC_BEND ? 4 : 2;
        for (int a = 0; a < m; a++)
          for (int b = a + 1; b < m; b++)
            PAIR(c->v[a], c->v[b]);
      }
#undef PAIR
    if (pass == 0) {
      for (uint32_t i = 0; i < nv; i++)
        xadj[i + 1] += xadj[i];
      memcpy(fill, xadj, ((size_t)nv + 1) * sizeof *fill);
    }
  }
  /* sort each row and drop repeats, compacting in place */
  idx_t out = 0;
  for (uint32_t i = 0; i < nv; i++) {
    idx_t b = xadj[i], e = xadj[i + 1];
    for (idx_t x = b + 1; x < e; x++) /* insertion sort: rows are short */
      for (idx_t y = x; y > b && adj[y - 1] > adj[y]; y--) {
        idx_t tmp = adj[y];
        adj[y] = adj[y - 1], adj[y - 1] = tmp;
      }
    xadj[i] = out;
    for (idx_t x = b; x < e; x++)
      if (x == b || adj[x] != adj[x - 1]) adj[out++] = adj[x];
  }
  xadj[nv] = out;
  free(fill);
  *xadj_out = xadj, *adj_out = adj;
  return WF_OK;
}

/* owner[g] for every vertex: METIS k-way on the vertex graph (every vertex in part 0 for n 1). */
static wf_status cut(const char *fn, wf_cloth *cs, const wf_cloth_desc *sd,
                     const wfc_topology *t, const wfc_springs *sp, const wfc_constraints *cons) {
  uint32_t nv = t->nv;
  if (cs->np == 1) {
    memset(cs->owner, 0, nv);
    return WF_OK;
  }
  idx_t *xadj = NULL, *adj = NULL;
  wf_status st = vertex_graph(fn, cs, t, sp, cons, &xadj, &adj);
  if (st != WF_OK) return st;
  idx_t *where = malloc((size_t)nv * sizeof *where);
  if (!where) {
    free(xadj), free(adj);
    return oom(fn, cs->name);
  }
  idx_t n = (idx_t)nv, ncon = 1, nparts = cs->np, objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = sd->seed;
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_UFACTOR] = (idx_t)lroundf(sd->imbalance * 1000.0f);
  if (options[METIS_OPTION_UFACTOR] < 1) options[METIS_OPTION_UFACTOR] = 1;
  int r = METIS_PartGraphKway(&n, &ncon, xadj, adj, NULL, NULL, NULL, &nparts, NULL, NULL, options,
                              &objval, where);
  free(xadj), free(adj);
  if (r != METIS_OK) {
    free(where);
    return wf__error(WF_ERR_BACKEND, fn,
                     "cloth '%s': METIS_PartGraphKway failed (%d) cutting %u vertices "
                     "into %d parts",
                     cs->name, r, nv, cs->np);
  }
  uint32_t count[MAXP] = {0};
  for (uint32_t i = 0; i < nv; i++) {
    cs->owner[i] = (int8_t)where[i];
    count[where[i]]++;
  }
  free(where);
  for (int p = 0; p < cs->np; p++)
    if (!count[p])
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': METIS left partition %d with no vertex: %u vertices "
                       "are too few for %d partitions",
                       cs->name, p, nv, cs->np);
  return WF_OK;
}

/* ---- building the partitions ----------------------------------------------------------------- */

/* Marks in `in` (one byte per global vertex) every vertex partition p needs: its owned ones and
 * everything they read. Returns the number marked. */
static uint32_t mark_members(const wf_cloth *cs, int p, const wfc_topology *t,
                             const wfc_springs *sp, const wfc_constraints *cons, uint8_t *in) {
  uint32_t nv = t->nv;
  memset(in, 0, nv);
  for (uint32_t g = 0; g < nv; g++) {
    if (cs->owner[g] != p) continue;
    in[g] = 1;
    for (uint32_t k = t->vt_start[g]; k < t->vt_start[g + 1]; k++) {
      const uint32_t *q = t->tris + 3 * (size_t)t->vt_list[k];
      in[q[0]] = in[q[1]] = in[q[2]] = 1;
    }
    if (sp)
      for (uint32_t k = sp->adj_start[g]; k < sp->adj_start[g + 1]; k++)
        in[sp->adj[k].other_kind & WFC_LINK_INDEX_MASK] = 1;
  }
  if (cons)
    for (uint32_t k = 0; k < cons->count; k++) {
      const wfc_constraint *c = &cons->cons[k];
      int m = c->kind == WFC_BEND ? 4 : 2, mine = 0;
      for (int a = 0; a < m; a++)
        mine |= cs->owner[c->v[a]] == p;
      if (mine)
        for (int a = 0; a < m; a++)
          in[c->v[a]] = 1;
    }
  uint32_t n = 0;
  for (uint32_t g = 0; g < nv; g++)
    n += in[g];
  return n;
}

/* ghost_in for every vertex: each partition's members that it does not own. */
static void mark_ghosts(wf_cloth *cs, const wfc_topology *t, const wfc_springs *sp,
                        const wfc_constraints *cons, uint8_t *in) {
  for (int p = 0; p < cs->np; p++) {
    mark_members(cs, p, t, sp, cons, in);
    for (uint32_t g = 0; g < t->nv; g++)
      if (in[g] && cs->owner[g] != p) cs->ghost_in[g] |= 1u << p;
  }
}

/* Whether constraint c touches a vertex partition p owns. */
static bool cons_mine(const wf_cloth *cs, int p, const wfc_constraint *c) {
  int m = c->kind == WFC_BEND ? 4 : 2;
  for (int a = 0; a < m; a++)
    if (cs->owner[c->v[a]] == p) return true;
  return false;
}

/* The position of mask m in the binary reflected Gray code (its inverse). */
static uint32_t gray_rank(uint32_t m) {
  m ^= m >> 1, m ^= m >> 2, m ^= m >> 4, m ^= m >> 8, m ^= m >> 16;
  return m;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Every partition's owned vertices, numbered (lid, n_send, n_owned, send_gid): the send set
 * first, then the interior. The send set is grouped by the set of partitions that hold the
 * vertex as a ghost, the groups in Gray-code order of that set (neighbouring groups differ in
 * one partition, so each receiver's vertices come in few runs); the interior and each group in
 * global order. The numbering changes nothing in the math, which gathers in global order. */
static wf_status number_owned(const char *fn, wf_cloth *cs) {
  uint32_t nv = cs->nv;
  for (int p = 0; p < cs->np; p++) {
    part *pt = &cs->parts[p];
    uint32_t *lid = cs->lid + (size_t)p * nv, ns = 0, n;
    for (uint32_t g = 0; g < nv; g++)
      ns += cs->owner[g] == p && cs->ghost_in[g];
    uint64_t *key = malloc(((size_t)ns + 1) * sizeof *key);
    pt->send_gid = malloc(((size_t)ns + 1) * sizeof *pt->send_gid);
    if (!key || !pt->send_gid) {
      free(key);
      return oom(fn, cs->name);
    }
    ns = 0;
    for (uint32_t g = 0; g < nv; g++)
      if (cs->owner[g] == p && cs->ghost_in[g])
        key[ns++] = (uint64_t)gray_rank(cs->ghost_in[g]) << 32 | g;
    qsort(key, ns, sizeof *key, cmp_u64);
    for (uint32_t i = 0; i < ns; i++) {
      uint32_t g = (uint32_t)key[i];
      lid[g] = i;
      pt->send_gid[i] = g;
    }
    free(key);
    n = ns;
    for (uint32_t g = 0; g < nv; g++)
      if (cs->owner[g] == p && !cs->ghost_in[g]) lid[g] = n++;
    pt->n_send = ns, pt->n_owned = n;
  }
  return WF_OK;
}

/* Partition p's local topology, masses, springs or constraints, and its cloth. */
static wf_status build_part(const char *fn, wf_cloth *cs, int p, const wfc_topology *t,
                            const float *inv_mass, const wfc_springs *sp,
                            const wfc_constraints *cons, uint8_t *in, uint32_t *ltri) {
  part *pt = &cs->parts[p];
  uint32_t nv = t->nv, *lid = cs->lid + (size_t)p * nv;
  uint32_t m = mark_members(cs, p, t, sp, cons, in);
  pt->gid = malloc((size_t)m * sizeof *pt->gid);
  uint64_t *key = malloc(((size_t)(m - pt->n_owned) + 1) * sizeof *key);
  if (!pt->gid || !key) {
    free(key);
    return oom(fn, cs->name);
  }
  /* the owned vertices as number_owned put them; then the ghosts, by owner, each owner's in its
   * own numbering: a link's ghosts are one range, in the order of its sender's send set */
  uint32_t ng = 0;
  for (uint32_t g = 0; g < nv; g++) {
    if (!in[g]) continue;
    int q = cs->owner[g];
    if (q == p)
      pt->gid[lid[g]] = g;
    else
      key[ng++] = (uint64_t)q << 32 | cs->lid[(size_t)q * nv + g];
  }
  qsort(key, ng, sizeof *key, cmp_u64);
  for (uint32_t i = 0; i < ng; i++) {
    int q = (int)(key[i] >> 32);
    uint32_t g = cs->parts[q].send_gid[(uint32_t)key[i]];
    lid[g] = pt->n_owned + i;
    pt->gid[pt->n_owned + i] = g;
  }
  free(key);
  pt->n_local = m;

  wfc_topology lt;
  memset(&lt, 0, sizeof lt);
  wfc_springs ls = {0};
  wfc_constraints lc = {0};
  float *lmass = malloc((size_t)m * sizeof *lmass);
  lt.nv = m;
  lt.x = malloc((size_t)m * sizeof *lt.x);
  lt.vt_start = calloc((size_t)m + 1, sizeof *lt.vt_start);
  wf_status st = WF_OK;
  if (!lmass || !lt.x || !lt.vt_start) {
    st = oom(fn, cs->name);
    goto done;
  }
  for (uint32_t i = 0; i < m; i++) {
    memcpy(lt.x[i], t->x[pt->gid[i]], sizeof lt.x[i]);
    lmass[i] = inv_mass[pt->gid[i]];
  }
  /* triangles with an owned corner, in global order; owned vertices list theirs in global order */
  uint32_t nt = 0;
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    bool mine = cs->owner[q[0]] == p || cs->owner[q[1]] == p || cs->owner[q[2]] == p;
    ltri[k] = mine ? nt++ : NONE;
  }
  lt.nt = nt;
  lt.tris = malloc(((size_t)nt * 3 + 1) * sizeof *lt.tris);
  size_t nvt = 0;
  /* the cloth uploads 3 entries a triangle (ghosts list none, so the tail stays zero) */
  lt.vt_list = calloc((size_t)nt * 3 + 1, sizeof *lt.vt_list);
  if (!lt.tris || !lt.vt_list) {
    st = oom(fn, cs->name);
    goto done;
  }
  for (uint32_t k = 0; k < t->nt; k++)
    if (ltri[k] != NONE)
      for (int c = 0; c < 3; c++)
        lt.tris[3 * (size_t)ltri[k] + c] = lid[t->tris[3 * (size_t)k + c]];
  nvt = 0;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t g = pt->gid[i];
    if (i < pt->n_owned)
      for (uint32_t k = t->vt_start[g]; k < t->vt_start[g + 1]; k++)
        lt.vt_list[nvt++] = ltri[t->vt_list[k]];
    lt.vt_start[i + 1] = (uint32_t)nvt;
  }

  if (sp) { /* each owned vertex's CSR list, re-indexed; ghosts have none */
    size_t links = 0;
    for (uint32_t i = 0; i < pt->n_owned; i++)
      links += sp->adj_start[pt->gid[i] + 1] - sp->adj_start[pt->gid[i]];
    ls.count = (uint32_t)((links + 1) / 2);
    ls.adj_start = calloc((size_t)m + 1, sizeof *ls.adj_start);
    ls.adj = calloc((size_t)ls.count * 2 + 1, sizeof *ls.adj);
    if (!ls.adj_start || !ls.adj) {
      st = oom(fn, cs->name);
      goto done;
    }
    links = 0;
    for (uint32_t i = 0; i < m; i++) {
      uint32_t g = pt->gid[i];
      if (i < pt->n_owned)
        for (uint32_t k = sp->adj_start[g]; k < sp->adj_start[g + 1]; k++) {
          wfc_link l = sp->adj[k];
          uint32_t j = lid[l.other_kind & WFC_LINK_INDEX_MASK];
          ls.adj[links++] = (wfc_link){j | (l.other_kind & ~WFC_LINK_INDEX_MASK), l.rest};
        }
      ls.adj_start[i + 1] = (uint32_t)links;
    }
  }
  if (cons) { /* the constraints touching an owned vertex, by global colour, in global order */
    lc.colours = cons->colours;
    lc.colour_start = calloc((size_t)cons->colours + 1, sizeof *lc.colour_start);
    lc.cons = malloc(((size_t)cons->count + 1) * sizeof *lc.cons);
    if (!lc.colour_start || !lc.cons) {
      st = oom(fn, cs->name);
      goto done;
    }
    uint32_t k = 0;
    for (uint32_t q = 0; q < cons->colours; q++) {
      for (uint32_t s = cons->colour_start[q]; s < cons->colour_start[q + 1]; s++) {
        wfc_constraint c = cons->cons[s];
        if (!cons_mine(cs, p, &c)) continue;
        int mv = c.kind == WFC_BEND ? 4 : 2;
        for (int a = 0; a < mv; a++)
          c.v[a] = lid[c.v[a]];
        lc.cons[k++] = c;
      }
      lc.colour_start[q + 1] = k;
    }
    lc.count = k;
  }

  {
    wf_cloth_desc d = cs->desc;
    d.stream = NULL;
    wfc_local local = {pt->n_owned, lmass, sp ? &ls : NULL, cons ? &lc : NULL};
    st = wfc_cloth_create_local(fn, pt->dev, &d, &lt, &local, &pt->c); /* takes lt */
  }
done:
  wfc_topology_free(&lt);
  wfc_springs_free(&ls);
  wfc_constraints_free(&lc);
  free(lmass);
  return st;
}

/* The ghosts of partition p that a colour's pass leaves stale: those touched by a constraint of
 * the colour that p does not project (its owner does). Ghosts touched by one that p projects
 * get the owner's bits anyway; ghosts no constraint of the colour touches keep them. As CSR by
 * colour (global ids): list[start[q] .. start[q + 1]). Each vertex is in a colour at most once. */
static wf_status stale_ghosts(const char *fn, const wf_cloth *cs, int p,
                              const wfc_constraints *cons, uint32_t **start_out,
                              uint32_t **list_out) {
  uint32_t colours = cons->colours, *lid = cs->lid + (size_t)p * cs->nv;
  uint32_t *start = calloc((size_t)colours + 1, sizeof *start);
  uint32_t *list = NULL;
  if (!start) return oom(fn, cs->name);
  for (int pass = 0; pass < 2; pass++) {
    uint32_t n = 0;
    for (uint32_t q = 0; q < colours; q++) {
      if (pass == 1) start[q] = n;
      for (uint32_t k = cons->colour_start[q]; k < cons->colour_start[q + 1]; k++) {
        const wfc_constraint *c = &cons->cons[k];
        if (cons_mine(cs, p, c)) continue;
        int m = c->kind == WFC_BEND ? 4 : 2;
        for (int a = 0; a < m; a++)
          if (lid[c->v[a]] != NONE && cs->owner[c->v[a]] != p) {
            if (pass == 1) list[n] = c->v[a];
            n++;
          }
      }
    }
    if (pass == 0) {
      list = malloc(((size_t)n + 1) * sizeof *list);
      if (!list) {
        free(start);
        return oom(fn, cs->name);
      }
    } else {
      start[colours] = n;
    }
  }
  *start_out = start, *list_out = list;
  return WF_OK;
}

/* A view of partition p's state buffer w (WFC_BUF_*) over vertices [first, first + n), or NULL
 * where the cloth has no such buffer. Copies into and out of it are ordered by its own last
 * user, not the whole buffer's: the kernels are ordered by the frame's waits. */
static wf_status state_view(wf_cloth *cs, const char *fn, int p, int w, uint32_t first,
                            uint32_t n, wf_buffer **out) {
  wf_buffer *b = wfc_buffer(cs->parts[p].c, w);
  *out = NULL;
  if (!b) return WF_OK;
  TRY(wf_buffer_wrap(cs->parts[p].dev, (char *)wf_buffer_ptr(b) + (size_t)first * 16,
                     (size_t)n * 16, out),
      "making a view of the state");
  return WF_OK;
}

/* The halo links (q -> p for every ghost of p owned by q) and their index lists: slot 0 every
 * ghost of the link, slot 1 + c (XPBD) the ghosts the pass of colour c leaves stale. */
static wf_status build_links(const char *fn, wf_cloth *cs, const wfc_constraints *cons) {
  int np = cs->np;
  uint32_t colours = cons ? cons->colours : 0;
  cs->n_slots = 1 + colours;
  uint32_t count[MAXP][MAXP] = {{0}};
  for (int p = 0; p < np; p++) {
    part *pt = &cs->parts[p];
    for (uint32_t i = pt->n_owned; i < pt->n_local; i++)
      count[cs->owner[pt->gid[i]]][p]++;
  }
  int n = 0;
  for (int q = 0; q < np; q++)
    for (int p = 0; p < np; p++)
      n += count[q][p] > 0;
  cs->links = calloc((size_t)(n ? n : 1), sizeof *cs->links);
  if (!cs->links) return oom(fn, cs->name);
  wf_status st = WF_OK;
  for (int p = 0; p < np && st == WF_OK; p++) { /* links into p, by sender */
    part *pt = &cs->parts[p];
    uint32_t *cstart = NULL, *clist = NULL;
    if (cons && (st = stale_ghosts(fn, cs, p, cons, &cstart, &clist)) != WF_OK) break;
    size_t cap = (size_t)pt->n_local + (cons ? cstart[colours] : 0) + 1;
    uint32_t *src = malloc(cap * 4), *dst = malloc(cap * 4);
    if (!src || !dst) st = oom(fn, cs->name);
    for (int q = 0; q < np && st == WF_OK; q++) {
      if (!count[q][p]) continue;
      link *k = &cs->links[cs->n_links++];
      k->from = q, k->to = p;
      k->off = calloc((size_t)cs->n_slots + 1, sizeof *k->off);
      if (!k->off) {
        st = oom(fn, cs->name);
        break;
      }
      const uint32_t *lq = cs->lid + (size_t)q * cs->nv, *lp = cs->lid + (size_t)p * cs->nv;
      uint32_t m = 0;
      for (uint32_t i = pt->n_owned; i < pt->n_local; i++) {
        uint32_t g = pt->gid[i];
        if (cs->owner[g] != q) continue;
        src[m] = lq[g], dst[m++] = i;
      }
      k->n = m, k->first = dst[0]; /* build_part put them in one range, by q's numbering */
      k->runs = malloc((size_t)m * 3 * sizeof *k->runs);
      if (!k->runs) {
        st = oom(fn, cs->name);
        break;
      }
      for (uint32_t i = 0; i < m; i++) {
        if (i && src[i] == src[i - 1] + 1) {
          k->runs[3 * k->n_runs - 1]++;
          continue;
        }
        uint32_t *r = k->runs + 3 * k->n_runs++;
        r[0] = src[i], r[1] = i, r[2] = 1;
      }
      for (uint32_t c = 0; c < colours; c++) {
        k->off[1 + c] = m;
        for (uint32_t e = cstart[c]; e < cstart[c + 1]; e++)
          if (cs->owner[clist[e]] == q) src[m] = lq[clist[e]], dst[m++] = lp[clist[e]];
      }
      k->off[cs->n_slots] = m;
      wf_stream *sq = stream_of(cs, q), *sp_ = stream_of(cs, p);
      wf_device *dq = cs->parts[q].dev, *dp = pt->dev;
      for (int w = 0; w < 4 && st == WF_OK; w++)
        st = state_view(cs, fn, p, w, k->first, k->n, &k->ghost[w]);
      if (st != WF_OK) break;
      if ((st = wf_event_create(dq, 0, &k->copied)) != WF_OK) {
        st = fail_gpu(st, fn, cs, "creating a halo event");
        break;
      }
      if (m == k->n) continue; /* no colour slot: every exchange copies straight into the ghosts */
      size_t bytes = (size_t)k->n * 32;
      if ((st = wf_buffer_create(dq, (size_t)m * 4, 0, sq, &k->src_idx)) != WF_OK ||
          (st = wf_buffer_create(dq, bytes, WF_BUFFER_ZERO, sq, &k->send)) != WF_OK ||
          (st = wf_buffer_create(dp, bytes, WF_BUFFER_ZERO, sp_, &k->recv)) != WF_OK ||
          (st = wf_buffer_create(dp, (size_t)m * 4, 0, sp_, &k->dst_idx)) != WF_OK) {
        st = fail_gpu(st, fn, cs, "allocating halo buffers");
        break;
      }
      if ((st = wf_upload(k->src_idx, 0, src, (size_t)m * 4, sq)) != WF_OK ||
          (st = wf_upload(k->dst_idx, 0, dst, (size_t)m * 4, sp_)) != WF_OK)
        st = fail_gpu(st, fn, cs, "uploading halo lists");
    }
    free(src), free(dst), free(cstart), free(clist);
  }
  for (int p = 0; p < np && st == WF_OK; p++)
    for (int w = 0; w < 4 && st == WF_OK && cs->parts[p].n_send; w++)
      st = state_view(cs, fn, p, w, 0, cs->parts[p].n_send, &cs->parts[p].sent[w]);
  return st;
}

/* Elements of slot `slot` of link k. */
static uint32_t slot_count(const link *k, int slot) { return k->off[slot + 1] - k->off[slot]; }

/* The whole cloth's triangles and counts (wf_cloth_triangles, wf_cloth_info_get). */
static wf_status whole_counts(const char *fn, wf_cloth *cs, const wfc_topology *t,
                              const wfc_springs *sp, const wfc_constraints *cons) {
  cs->nt = t->nt;
  cs->tris = malloc(((size_t)t->nt * 3 + 1) * sizeof *cs->tris);
  if (!cs->tris) return oom(fn, cs->name);
  memcpy(cs->tris, t->tris, (size_t)t->nt * 3 * sizeof *cs->tris);
  cs->springs = sp ? sp->count : 0;
  cs->constraints = cons ? cons->count : 0;
  cs->colours = cons ? cons->colours : 0;
  return WF_OK;
}

/* Partition p's owned rows' global ids on its device (wf_cloth_partition_view). */
static wf_status upload_ids(const char *fn, wf_cloth *cs, int p) {
  part *pt = &cs->parts[p];
  size_t bytes = (size_t)pt->n_owned * sizeof *pt->gid;
  TRY(wf_buffer_create(pt->dev, bytes ? bytes : 4, 0, stream_of(cs, p), &pt->ids),
      "allocating a partition's ids");
  if (bytes) TRY(wf_upload(pt->ids, 0, pt->gid, bytes, stream_of(cs, p)), "uploading ids");
  return WF_OK;
}

/* Exchanges per frame and the bytes they move. */
static void fill_info(wf_cloth *cs) {
  wf_cloth_info *in = &cs->info;
  in->partitions = cs->np;
  in->vertices = cs->nv;
  in->links = (uint32_t)cs->n_links;
  for (int p = 0; p < cs->np; p++) {
    in->owned[p] = cs->parts[p].n_owned;
    in->ghosts[p] = cs->parts[p].n_local - cs->parts[p].n_owned;
  }
  /* one substep's exchanges, as enqueue_frame makes them */
  uint64_t count = 0, bytes = 0;
#define ADD(slot, item)                                                                            \
  do {                                                                                             \
    uint64_t n_ = 0;                                                                               \
    for (int l = 0; l < cs->n_links; l++)                                                          \
      n_ += slot_count(&cs->links[l], (slot));                                                     \
    count += n_ > 0, bytes += n_ * (item);                                                         \
  } while (0)
  if (cs->desc.integrator == WF_CLOTH_SPRINGS) {
    ADD(0, 32);
  } else {
    uint32_t colours = wfc_colours(cs->parts[0].c);
    ADD(0, 16);
    for (int it = 0; it < cs->desc.iterations; it++)
      for (uint32_t q = 0; q < colours; q++)
        if (!(it == cs->desc.iterations - 1 && q == colours - 1)) ADD(1 + (int)q, 16);
    ADD(0, 32);
  }
#undef ADD
  in->exchanges_per_frame = (uint32_t)(count * (uint64_t)cs->desc.substeps);
  in->halo_bytes_per_frame = bytes * (uint64_t)cs->desc.substeps;
}

/* One device: its partition is the whole cloth, built from the grid or mesh as given (the
 * single-device solver, desc->stream honoured). */
static wf_status create_whole(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                              const wf_cloth_grid *grid, const wf_cloth_mesh_desc *mesh,
                              wf_cloth **out) {
  const char *name = desc->name ? desc->name : "cloth";
  wf_cloth *cs = calloc(1, sizeof *cs);
  if (!cs) return oom(fn, name);
  snprintf(cs->name, sizeof cs->name, "%s", name);
  cs->desc = *desc;
  cs->desc.name = cs->name;
  cs->np = 1;
  part *pt = &cs->parts[0];
  pt->dev = dev;
  wf_status st = grid ? wfc_part_create_grid(dev, desc, grid, &pt->c)
                      : wfc_part_create_mesh(dev, desc, mesh, &pt->c);
  if (st != WF_OK) {
    free(cs);
    return st;
  }
  wf_cloth_info in;
  wfc_part_info_get(pt->c, &in);
  cs->nv = pt->n_local = pt->n_owned = in.vertices;
  cs->grid[0] = in.grid[0], cs->grid[1] = in.grid[1];
  *out = cs;
  return WF_OK;
}

/* The devices desc names (none, or a NULL first one: the default device) into devs; their
 * number, or 0 after an error. */
static int devices_of(const char *fn, const wf_cloth_desc *desc, wf_device *devs[MAXP]) {
  const char *name = desc->name ? desc->name : "cloth";
  int n = desc->device_count < 1 ? 1 : desc->device_count;
  if (n > MAXP) {
    wf__error(WF_ERR_INVALID, fn, "cloth '%s': device_count %d; 1 to %d are supported", name, n,
              MAXP);
    return 0;
  }
  for (int i = 0; i < n; i++)
    devs[i] = desc->device_count < 1 ? NULL : desc->devices[i];
  if (!devs[0]) devs[0] = wf_device_default();
  if (!devs[0]) {
    wf__error(WF_ERR_INVALID, fn, "cloth '%s': no default device (wf_init failed?)", name);
    return 0;
  }
  return n;
}

static wf_status create_split(const char *fn, wf_device *const *devices, int n,
                              const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                              const wf_cloth_mesh_desc *mesh, wf_cloth **out);

static wf_status create(const char *fn, const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                        const wf_cloth_mesh_desc *mesh, wf_cloth **out) {
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  if (!desc || (!grid && !mesh))
    return wf__error(WF_ERR_INVALID, fn, "desc or %s is NULL", grid ? "grid" : "mesh");
  wf_device *devs[MAXP];
  int n = devices_of(fn, desc, devs);
  if (n == 0) return WF_ERR_INVALID;
  return n == 1 ? create_whole(fn, devs[0], desc, grid, mesh, out)
                : create_split(fn, devs, n, desc, grid, mesh, out);
}

/* Several devices: the whole cloth built once on the host, cut by METIS into partitions. */
static wf_status create_split(const char *fn, wf_device *const *devices, int n,
                              const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                              const wf_cloth_mesh_desc *mesh, wf_cloth **out) {
  const char *name = desc->name ? desc->name : "cloth";
  wf_cloth_desc sd = *desc;
  if (sd.seed == 0) sd.seed = 1;
  if (sd.imbalance == 0.0f) sd.imbalance = 0.03f;
  for (int i = 0; i < n; i++) {
    if (!devices[i])
      return wf__error(WF_ERR_INVALID, fn, "cloth '%s': device %d is NULL", name, i);
    if (wf_device_is_cuda(devices[i]) != wf_device_is_cuda(devices[0]))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': devices '%s' and '%s' are of different kinds (CUDA "
                       "and CPU): one frame graph cannot span both",
                       name, wf_device_name(devices[0]), wf_device_name(devices[i]));
  }
  if (desc->self_collision)
    return wf__error(WF_ERR_UNSUPPORTED, fn,
                     "cloth '%s': self_collision is not supported across devices (its "
                     "vertex grid spans the whole cloth): run it on one device",
                     name);
  if (!(sd.imbalance > 0.0f) || !isfinite(sd.imbalance))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': imbalance %g must be > 0", name,
                     (double)sd.imbalance);

  /* the whole cloth, built and checked as one wfc_part builds it */
  wf_status st = wfc_check_desc(fn, desc, name);
  if (st != WF_OK) return st;
  wfc_topology t;
  st = grid ? wfc_grid_build(fn, name, grid, &t) : wfc_mesh_build(fn, name, mesh, &t);
  if (st != WF_OK) return st;
  wfc_springs sp = {0};
  wfc_constraints cons = {0};
  float *inv_mass = NULL;
  uint8_t *in = NULL;
  uint32_t *ltri = NULL;
  wf_cloth *cs = calloc(1, sizeof *cs);
  if (!cs) {
    wfc_topology_free(&t);
    return oom(fn, name);
  }
  snprintf(cs->name, sizeof cs->name, "%s", name);
  cs->desc = *desc;
  cs->desc.name = cs->name;
  cs->desc.stream = NULL;
  cs->np = n;
  if ((st = wfc_topology_finish(fn, name, &t)) != WF_OK) goto done;
  cs->nv = t.nv;
  cs->grid[0] = t.grid[0], cs->grid[1] = t.grid[1];
  inv_mass = malloc((size_t)t.nv * sizeof *inv_mass);
  in = malloc(t.nv);
  ltri = malloc(((size_t)t.nt + 1) * sizeof *ltri);
  cs->rest = malloc((size_t)t.nv * sizeof *cs->rest);
  cs->owner = malloc(t.nv);
  cs->ghost_in = calloc(t.nv, sizeof *cs->ghost_in);
  cs->lid = malloc((size_t)n * t.nv * sizeof *cs->lid);
  cs->pinned = calloc(t.nv, 1);
  if (!inv_mass || !in || !ltri || !cs->rest || !cs->owner || !cs->ghost_in || !cs->lid ||
      !cs->pinned) {
    st = oom(fn, name);
    goto done;
  }
  memcpy(cs->rest, t.x, (size_t)t.nv * sizeof *cs->rest);
  memset(cs->lid, 0xff, (size_t)n * t.nv * sizeof *cs->lid);
  bool springs = desc->integrator == WF_CLOTH_SPRINGS;
  if ((st = wfc_inverse_masses(fn, name, &t, &desc->material, inv_mass)) != WF_OK) goto done;
  st = springs ? wfc_springs_build(fn, name, &t, &sp) : wfc_constraints_build(fn, name, &t, &cons);
  if (st != WF_OK) goto done;
  if ((st = cut(fn, cs, &sd, &t, springs ? &sp : NULL, springs ? NULL : &cons)) != WF_OK) goto done;
  cs->info.peer = true;
  mark_ghosts(cs, &t, springs ? &sp : NULL, springs ? NULL : &cons, in);
  if ((st = number_owned(fn, cs)) != WF_OK) goto done;
  for (int p = 0; p < n && st == WF_OK; p++) {
    part *pt = &cs->parts[p];
    pt->dev = devices[p];
    st =
        build_part(fn, cs, p, &t, inv_mass, springs ? &sp : NULL, springs ? NULL : &cons, in, ltri);
    if (st == WF_OK && (st = wf_stream_create(pt->dev, 0, &pt->copy)) != WF_OK)
      st = fail_gpu(st, fn, cs, "creating a copy stream");
    for (int q = 0; q < p; q++)
      if (devices[q] != devices[p] && (!wf_device_can_access_peer(devices[p], devices[q]) ||
                                       !wf_device_can_access_peer(devices[q], devices[p])))
        cs->info.peer = false;
  }
  if (st == WF_OK) st = build_links(fn, cs, springs ? NULL : &cons);
  for (int p = 0; p < n && st == WF_OK; p++)
    if ((st = wf_stream_synchronize(stream_of(cs, p))) != WF_OK)
      st = fail_gpu(st, fn, cs, "uploading the partitions");
  if (st == WF_OK) st = whole_counts(fn, cs, &t, springs ? &sp : NULL, springs ? NULL : &cons);
  for (int p = 0; p < n && st == WF_OK; p++) st = upload_ids(fn, cs, p);
  if (st == WF_OK) fill_info(cs);
done:
  wfc_topology_free(&t);
  wfc_springs_free(&sp);
  wfc_constraints_free(&cons);
  free(inv_mass), free(in), free(ltri);
  if (st != WF_OK) {
    wf_cloth_destroy(cs);
    return st;
  }
  *out = cs;
  return WF_OK;
}

wf_status wf_cloth_create_grid(const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                               wf_cloth **out) {
  static const char fn[] = "wf_cloth_create_grid";
  if (!grid) {
    if (out) *out = NULL;
    return wf__error(WF_ERR_INVALID, fn, "grid is NULL");
  }
  return create(fn, desc, grid, NULL, out);
}

wf_status wf_cloth_create_mesh(const wf_cloth_desc *desc, const wf_cloth_mesh_desc *mesh,
                               wf_cloth **out) {
  static const char fn[] = "wf_cloth_create_mesh";
  if (!mesh) {
    if (out) *out = NULL;
    return wf__error(WF_ERR_INVALID, fn, "mesh is NULL");
  }
  return create(fn, desc, NULL, mesh, out);
}

/* A capability of one device only, asked of a cloth over several. */
static wf_status one_device_only(const wf_cloth *cs, const char *fn, const char *what) {
  return wf__error(WF_ERR_UNSUPPORTED, fn,
                   "cloth '%s' runs over %d devices: %s needs the cloth on one device (create it "
                   "with desc.device_count 1)",
                   cs->name, cs->np, what);
}

/* ---- pins, colliders, material, parameters -------------------------------------------------- */

/* Pins (collider == NONE) or attaches global vertex v in every partition that holds it. */
static wf_status pin_global(wf_cloth *cs, uint32_t v, uint32_t collider) {
  for (int p = 0; p < cs->np; p++) {
    uint32_t l = cs->lid[(size_t)p * cs->nv + v];
    if (l == NONE) continue;
    wf_status st = collider == NONE ? wfc_part_pin(cs->parts[p].c, l)
                                    : wfc_part_attach(cs->parts[p].c, l, collider);
    if (st != WF_OK) return st;
  }
  if (!cs->pinned[v]) cs->pinned[v] = 1, cs->info.pinned++;
  return WF_OK;
}

static wf_status check_vertex(const wf_cloth *cs, const char *fn, uint32_t v) {
  if (v < cs->nv) return WF_OK;
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s': vertex %u is out of range (%u vertices)", cs->name, v,
                   cs->nv);
}

wf_status wf_cloth_pin(wf_cloth *cs, uint32_t vertex) {
  static const char fn[] = "wf_cloth_pin";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (whole(cs)) return wfc_part_pin(whole(cs), vertex);
  wf_status st = check_vertex(cs, fn, vertex);
  return st != WF_OK ? st : pin_global(cs, vertex, NONE);
}

wf_status wf_cloth_attach(wf_cloth *cs, uint32_t vertex, uint32_t collider) {
  static const char fn[] = "wf_cloth_attach";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (whole(cs)) return wfc_part_attach(whole(cs), vertex, collider);
  wf_status st = check_vertex(cs, fn, vertex);
  if (st != WF_OK) return st;
  if (collider == NONE)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider %u does not exist", cs->name,
                     collider);
  return pin_global(cs, vertex, collider);
}

wf_status wf_cloth_pin_named(wf_cloth *cs, const char *where, uint32_t *count) {
  static const char fn[] = "wf_cloth_pin_named";
  if (!cs || !where) return wf__error(WF_ERR_INVALID, fn, "cloth or name is NULL");
  if (whole(cs)) return wfc_part_pin_named(whole(cs), where, count);
  uint32_t r[4], n = 0;
  wf_status st = wfc_pin_named_range(fn, cs->name, cs->grid, where, r);
  for (uint32_t j = r[2]; st == WF_OK && j <= r[3]; j++)
    for (uint32_t i = r[0]; st == WF_OK && i <= r[1]; i++, n++)
      st = pin_global(cs, j * cs->grid[0] + i, NONE);
  if (st == WF_OK && count) *count = n;
  return st;
}

/* Pins (collider NONE) or attaches every vertex whose rest position lies in [lo, hi]. */
static wf_status pin_region(wf_cloth *cs, const char *fn, const float lo[3],
                            const float hi[3], uint32_t collider, uint32_t *count) {
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (!lo || !hi || !isfinite(lo[0]) || !isfinite(lo[1]) || !isfinite(lo[2]) || !isfinite(hi[0]) ||
      !isfinite(hi[1]) || !isfinite(hi[2]))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': region bounds are NULL or not finite",
                     cs->name);
  uint32_t n = 0;
  for (uint32_t i = 0; i < cs->nv; i++) {
    const float *x = cs->rest[i];
    if (x[0] < lo[0] || x[1] < lo[1] || x[2] < lo[2] || x[0] > hi[0] || x[1] > hi[1] ||
        x[2] > hi[2])
      continue;
    wf_status st = pin_global(cs, i, collider);
    if (st != WF_OK) return st;
    n++;
  }
  if (count) *count = n;
  if (!n)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': the region [%g %g %g] - [%g %g %g] holds no vertex",
                     cs->name, (double)lo[0], (double)lo[1], (double)lo[2], (double)hi[0],
                     (double)hi[1], (double)hi[2]);
  return WF_OK;
}

wf_status wf_cloth_pin_region(wf_cloth *cs, const float lo[3], const float hi[3],
                                    uint32_t *count) {
  if (cs && whole(cs)) return wfc_part_pin_region(whole(cs), lo, hi, count);
  return pin_region(cs, "wf_cloth_pin_region", lo, hi, NONE, count);
}

/* Partition 0 goes first: a bad argument is refused there, before any partition changed. */
wf_status wf_cloth_add_collider(wf_cloth *cs, const wf_collider_desc *desc,
                                      uint32_t *index) {
  static const char fn[] = "wf_cloth_add_collider";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    wf_status st = wfc_part_add_collider(cs->parts[p].c, desc, index);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_cloth_set_material(wf_cloth *cs, const wf_cloth_material *m) {
  static const char fn[] = "wf_cloth_set_material";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    wf_status st = wfc_part_set_material(cs->parts[p].c, m);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_cloth_params wf_cloth_params_get(const wf_cloth *cs) {
  return cs ? wfc_part_params_get(cs->parts[0].c) : (wf_cloth_params){0};
}

wf_status wf_cloth_params_set(wf_cloth *cs, const wf_cloth_params *prm) {
  static const char fn[] = "wf_cloth_params_set";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    wf_status st = wfc_part_params_set(cs->parts[p].c, prm);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* ---- the frame ------------------------------------------------------------------------------- */

static bool kernels_on(const wf_cloth *cs) { return cs->mode != FRAME_COPIES; }
static bool copies_on(const wf_cloth *cs) { return cs->mode != FRAME_NO_COPY; }

/* In the measure's compute frames: the start (end false) or the end of a stretch of partition
 * p's kernels, on its stream, which waits for nothing in between. */
static wf_status mark(wf_cloth *cs, const char *fn, int p, bool end) {
  if (!cs->marks || cs->mark_n[p] >= cs->mark_cap) return WF_OK;
  size_t i = (size_t)p * cs->mark_cap + cs->mark_n[p];
  TRY(wf_event_record(cs->marks[2 * i + end], stream_of(cs, p)), "recording a compute mark");
  cs->mark_n[p] += end;
  return WF_OK;
}

/* An exchange of index list `slot` (0: every ghost) overwrites the ghosts with their owners'
 * values of buffer a (and b unless it is -1), in three parts; links with nothing in the slot take
 * no part.
 *
 * halo_ready: each copy will wait for its receiver's work so far, whose unpacks of the previous
 * exchange read the receive buffer. Called before the senders' work of this exchange is enqueued,
 * so that the copy does not wait for more. */
static wf_status halo_ready(wf_cloth *cs, const char *fn, int slot) {
  for (int l = 0; l < cs->n_links; l++) {
    link *k = &cs->links[l];
    if (slot_count(k, slot))
      TRY(wf_stream_wait_stream(cs->parts[k->from].copy, stream_of(cs, k->to)),
          "ordering a halo copy");
  }
  return WF_OK;
}

/* halo_send: the packs on the senders' streams (after their copies of the previous exchange: the
 * send buffers are reused), then each copy on its sender's copy stream, after its pack; the copy
 * records the link's event. The sender's later work does not wait for the copy. */
static wf_status halo_send(wf_cloth *cs, const char *fn, int slot, int a, int b) {
  bool sends[MAXP] = {false};
  for (int l = 0; l < cs->n_links; l++)
    if (slot_count(&cs->links[l], slot)) sends[cs->links[l].from] = true;
  for (int p = 0; p < cs->np; p++)
    if (sends[p])
      TRY(wf_stream_wait_stream(stream_of(cs, p), cs->parts[p].copy), "ordering the packs");
  size_t item = b < 0 ? 16 : 32;
  for (int l = 0; l < cs->n_links && kernels_on(cs); l++) {
    link *k = &cs->links[l];
    uint32_t n = slot_count(k, slot);
    if (!n) continue;
    wfc_part *c = cs->parts[k->from].c;
    wfp_f4 *send = wf_buffer_ptr(k->send);
    wfc_halo_args pa = {
        (const uint32_t *)wf_buffer_ptr(k->src_idx) + k->off[slot], wf_buffer_ptr(wfc_buffer(c, a)),
        b < 0 ? NULL : wf_buffer_ptr(wfc_buffer(c, b)), send, b < 0 ? NULL : send + n};
    TRY(wf_launch(&wfc_halo_pack, n, &pa, sizeof pa, stream_of(cs, k->from)),
        "launching a halo pack");
  }
  for (int l = 0; l < cs->n_links; l++) {
    link *k = &cs->links[l];
    uint32_t n = slot_count(k, slot);
    if (!n) continue;
    wf_stream *cp = cs->parts[k->from].copy;
    TRY(wf_stream_wait_stream(cp, stream_of(cs, k->from)), "ordering a halo copy");
    if (copies_on(cs)) TRY(wf_copy(k->recv, 0, k->send, 0, (size_t)n * item, cp), "copying a halo");
    TRY(wf_event_record(k->copied, cp), "recording a halo copy");
  }
  return WF_OK;
}

/* halo_recv: each receiver waits for its links' copies (not for its senders' other copies) and
 * scatters them into its ghost slots. */
static wf_status halo_recv(wf_cloth *cs, const char *fn, int slot, int a, int b) {
  for (int l = 0; l < cs->n_links; l++) {
    link *k = &cs->links[l];
    uint32_t n = slot_count(k, slot);
    if (!n) continue;
    wfc_part *c = cs->parts[k->to].c;
    TRY(wf_stream_wait_event(stream_of(cs, k->to), k->copied), "waiting for a halo copy");
    if (!kernels_on(cs)) continue;
    wfp_f4 *recv = wf_buffer_ptr(k->recv);
    wfc_halo_args ua = {(const uint32_t *)wf_buffer_ptr(k->dst_idx) + k->off[slot], recv,
                        b < 0 ? NULL : recv + n, wf_buffer_ptr(wfc_buffer(c, a)),
                        b < 0 ? NULL : wf_buffer_ptr(wfc_buffer(c, b))};
    TRY(wf_launch(&wfc_halo_unpack, n, &ua, sizeof ua, stream_of(cs, k->to)),
        "launching a halo unpack");
  }
  return WF_OK;
}

/* An exchange with nothing to overlap (the XPBD colour passes). */
static wf_status exchange(wf_cloth *cs, const char *fn, int slot, int a, int b) {
  wf_status st = halo_ready(cs, fn, slot);
  if (st == WF_OK) st = halo_send(cs, fn, slot, a, b);
  return st == WF_OK ? halo_recv(cs, fn, slot, a, b) : st;
}

/* The per-vertex stages whose exchange overlaps the interior. */
enum { STAGE_SPRINGS, STAGE_PREDICT, STAGE_FINALIZE };

/* Stage `stage` of partition p over its owned vertices [begin, end) (springs: half in -> out). */
static wf_status stage_range(wf_cloth *cs, const char *fn, int p, int stage, int in,
                             uint32_t begin, uint32_t end) {
  if (!kernels_on(cs)) return WF_OK;
  wfc_part *c = cs->parts[p].c;
  switch (stage) {
  case STAGE_SPRINGS: return wfc_enqueue_springs_range(c, fn, in, begin, end);
  case STAGE_PREDICT: return wfc_enqueue_predict_range(c, fn, begin, end);
  default: return wfc_enqueue_finalize_range(c, fn, begin, end);
  }
}

/* The exchange of every ghost (slot 0) of buffers a and b (unless -1), after the senders' work
 * so far: each link's runs copied from its sender's send set straight into its receiver's ghost
 * range of the same buffer, on the sender's copy stream, which records the link's event. */
static wf_status ghosts_send(wf_cloth *cs, const char *fn, int a, int b) {
  for (int p = 0; p < cs->np; p++)
    if (cs->parts[p].n_send) /* a link starts here */
      TRY(wf_stream_wait_stream(cs->parts[p].copy, stream_of(cs, p)), "ordering a halo copy");
  for (int l = 0; l < cs->n_links; l++) {
    link *k = &cs->links[l];
    const part *from = &cs->parts[k->from];
    for (uint32_t r = 0; r < k->n_runs && copies_on(cs); r++) {
      const uint32_t *run = k->runs + 3 * r;
      for (int h = 0; h < 2; h++) {
        int w = h ? b : a;
        if (w >= 0)
          TRY(wf_copy(k->ghost[w], (size_t)run[1] * 16, from->sent[w], (size_t)run[0] * 16,
                      (size_t)run[2] * 16, from->copy),
              "copying a halo");
      }
    }
    TRY(wf_event_record(k->copied, from->copy), "recording a halo copy");
  }
  return WF_OK;
}

/* Every sender's stream waits for its copy stream: the copies out of its send set so far are
 * done. */
static wf_status senders_wait(wf_cloth *cs, const char *fn) {
  for (int p = 0; p < cs->np; p++)
    if (cs->parts[p].n_send) /* a link starts here */
      TRY(wf_stream_wait_stream(stream_of(cs, p), cs->parts[p].copy), "ordering a stage");
  return WF_OK;
}

/* A per-vertex stage of every partition, then the exchange of every ghost (buffers a, b). The
 * overlap: each partition first computes its send set (owned [0, n_send)) and starts the copies
 * out of it; then computes its interior [n_send, n_owned) while they move; then waits for the
 * copies into it. Every vertex is computed once, by the same math from the same inputs (ghosts
 * are read only from the stage's input, which this exchange does not write), so the result does
 * not depend on which launch computed it.
 *
 * Before the stage a sender waits for its copy stream: the copies of the exchange before last
 * read the half of the state this stage writes. It waits before halo_ready ties the copy streams
 * to the receivers, so that a stage waits for its own device only. */
static wf_status stage_exchanged(wf_cloth *cs, const char *fn, int stage, int in, int a,
                                 int b) {
  wf_status st = senders_wait(cs, fn);
  if (st == WF_OK) st = halo_ready(cs, fn, 0);
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    if ((st = mark(cs, fn, p, false)) == WF_OK)
      st = stage_range(cs, fn, p, stage, in, 0, cs->parts[p].n_send);
  if (st == WF_OK) st = ghosts_send(cs, fn, a, b);
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    if ((st = stage_range(cs, fn, p, stage, in, cs->parts[p].n_send, cs->parts[p].n_owned)) ==
        WF_OK)
      st = mark(cs, fn, p, true);
  for (int l = 0; l < cs->n_links && st == WF_OK; l++)
    if ((st = wf_stream_wait_event(stream_of(cs, cs->links[l].to), cs->links[l].copied)) != WF_OK)
      st = fail_gpu(st, fn, cs, "waiting for a halo copy");
  return st;
}

static wf_status touch_links(wf_cloth *cs, const char *fn) {
  for (int l = 0; l < cs->n_links; l++) {
    link *k = &cs->links[l];
    wf_stream *sf = stream_of(cs, k->from), *sto = stream_of(cs, k->to);
    if (!k->src_idx) continue; /* no colour slot */
    TRY(wf_buffer_touch(k->src_idx, sf), "ordering halo buffers");
    TRY(wf_buffer_touch(k->send, sf), "ordering halo buffers");
    TRY(wf_buffer_touch(k->recv, sto), "ordering halo buffers");
    TRY(wf_buffer_touch(k->dst_idx, sto), "ordering halo buffers");
  }
  return WF_OK;
}

/* Every partition's frame, stage by stage, with the exchanges between the stages (cs->mode says
 * what is left out). */
static wf_status enqueue_frame(wf_cloth *cs, const char *fn) {
  wf_status st = WF_OK;
  int np = cs->np, substeps = cs->desc.substeps;
  if (cs->desc.integrator == WF_CLOTH_SPRINGS) {
    for (int k = 0; k < substeps && st == WF_OK; k++) {
      int in = k & 1; /* state half in -> out */
      st = in ? stage_exchanged(cs, fn, STAGE_SPRINGS, in, WFC_BUF_POS0, WFC_BUF_VEL0)
              : stage_exchanged(cs, fn, STAGE_SPRINGS, in, WFC_BUF_POS1, WFC_BUF_VEL1);
    }
  } else {
    uint32_t colours = wfc_colours(cs->parts[0].c);
    int iterations = cs->desc.iterations;
    for (int k = 0; k < substeps && st == WF_OK; k++) {
      st = stage_exchanged(cs, fn, STAGE_PREDICT, 1, WFC_BUF_POS1, -1);
      /* the colour passes move the predicted positions the copies read */
      if (st == WF_OK) st = senders_wait(cs, fn);
      for (int p = 0; p < np && st == WF_OK && kernels_on(cs); p++)
        st = wfc_enqueue_clear_multipliers(cs->parts[p].c, fn);
      for (int it = 0; it < iterations && st == WF_OK; it++)
        for (uint32_t q = 0; q < colours && st == WF_OK; q++) {
          for (int p = 0; p < np && st == WF_OK && kernels_on(cs); p++)
            if ((st = mark(cs, fn, p, false)) == WF_OK &&
                (st = wfc_enqueue_colour(cs->parts[p].c, fn, q)) == WF_OK)
              st = mark(cs, fn, p, true);
          /* the ghosts the pass left stale; none after the last pass: finalize reads owned
           * vertices only, and the next predict's exchange refreshes every ghost */
          bool last = it == iterations - 1 && q == colours - 1;
          if (st == WF_OK && !last) st = exchange(cs, fn, 1 + (int)q, WFC_BUF_POS1, -1);
        }
      if (st == WF_OK) st = stage_exchanged(cs, fn, STAGE_FINALIZE, 1, WFC_BUF_POS0, WFC_BUF_VEL0);
    }
  }
  for (int p = 0; p < np && st == WF_OK && kernels_on(cs); p++)
    st = wfc_enqueue_frame_end(cs->parts[p].c, fn, substeps);
  return st == WF_OK ? touch_links(cs, fn) : st;
}

/* Forks every partition's stream and copy stream from s0 (or, outside a capture, orders them
 * after it), or joins them back into s0. */
static wf_status fork_join(wf_cloth *cs, const char *fn, bool join) {
  wf_stream *s0 = stream_of(cs, 0);
  for (int p = 0; p < cs->np; p++) {
    wf_stream *s = stream_of(cs, p);
    if (p > 0)
      TRY(join ? wf_stream_wait_stream(s0, s) : wf_stream_wait_stream(s, s0), "ordering a frame");
    if (cs->n_links)
      TRY(join ? wf_stream_wait_stream(s0, cs->parts[p].copy)
               : wf_stream_wait_stream(cs->parts[p].copy, s0),
          "ordering a frame");
  }
  return WF_OK;
}

/* The frame of every partition, captured on partition 0's stream. */
static wf_status capture(wf_cloth *cs, const char *fn) {
  wf_stream *s0 = stream_of(cs, 0);
  TRY(wf_capture_begin(s0), "beginning the frame capture");
  wf_status st = fork_join(cs, fn, false);
  if (st == WF_OK) st = enqueue_frame(cs, fn);
  if (st == WF_OK) st = fork_join(cs, fn, true);
  wf_graph *g = NULL;
  wf_status st2 = wf_capture_end(s0, &g);
  if (st != WF_OK) {
    if (g) wf_graph_destroy(g);
    return st;
  }
  if (st2 != WF_OK) return fail_gpu(st2, fn, cs, "ending the frame capture");
  cs->graph = g;
  return WF_OK;
}

wf_status wf_cloth_step_frames(wf_cloth *cs, int frames) {
  static const char fn[] = "wf_cloth_step_frames";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (frames < 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': frames %d must be >= 0", cs->name,
                     frames);
  if (whole(cs)) return wfc_part_step_frames(whole(cs), frames);
  if (frames == 0) return WF_OK;
  wf_stream *s0 = stream_of(cs, 0);
  /* the frames come after what was enqueued on every partition (pins, colliders, parameters) */
  for (int p = 1; p < cs->np; p++)
    TRY(wf_stream_wait_stream(s0, stream_of(cs, p)), "ordering the frames");
  wf_status st;
  if (cs->desc.no_graph) {
    for (int f = 0; f < frames; f++) {
      if ((st = fork_join(cs, fn, false)) != WF_OK) return st;
      if ((st = enqueue_frame(cs, fn)) != WF_OK) return st;
      if ((st = fork_join(cs, fn, true)) != WF_OK) return st;
    }
  } else {
    if (!cs->graph && (st = capture(cs, fn)) != WF_OK) return st;
    for (int f = 0; f < frames; f++)
      TRY(wf_graph_launch(cs->graph, s0), "launching a frame");
  }
  for (int p = 0; p < cs->np; p++) {
    if (p > 0) TRY(wf_stream_wait_stream(stream_of(cs, p), s0), "ordering after the frames");
    if ((st = wfc_touch(cs->parts[p].c, fn)) != WF_OK) return st;
  }
  return WF_OK;
}

/* ---- measuring the overlap ------------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A frame of mode `mode` (its graph g, or stage by stage without one), and a wait for it; the
 * host's clock around both, in ms. */
static wf_status timed_frame(wf_cloth *cs, const char *fn, int mode, wf_graph *g,
                             double *ms) {
  wf_stream *s0 = stream_of(cs, 0);
  double t0 = now_ms();
  wf_status st = WF_OK;
  cs->mode = mode;
  if (g) {
    TRY(wf_graph_launch(g, s0), "launching a frame");
  } else {
    st = fork_join(cs, fn, false);
    if (st == WF_OK) st = enqueue_frame(cs, fn);
    if (st == WF_OK) st = fork_join(cs, fn, true);
  }
  cs->mode = FRAME_FULL;
  if (st != WF_OK) return st;
  TRY(wf_stream_synchronize(s0), "waiting for a frame");
  *ms = now_ms() - t0;
  return WF_OK;
}

/* The frame graph of mode `mode` (cs->graph for FRAME_FULL, captured here if need be; the others
 * captured into *g, which the caller destroys); NULL without graphs (desc.no_graph). */
static wf_status mode_graph(wf_cloth *cs, const char *fn, int mode, wf_graph **g) {
  *g = NULL;
  if (cs->desc.no_graph) return WF_OK;
  if (mode == FRAME_FULL) {
    if (!cs->graph) {
      wf_status st = capture(cs, fn);
      if (st != WF_OK) return st;
    }
    *g = cs->graph;
    return WF_OK;
  }
  wf_graph *keep = cs->graph;
  cs->graph = NULL;
  cs->mode = mode;
  wf_status st = capture(cs, fn);
  cs->mode = FRAME_FULL;
  *g = cs->graph;
  cs->graph = keep;
  return st;
}

/* The kinds of frame, interleaved frame by frame (so a drift of the clocks hits all alike),
 * after one warm-up frame each; medians into out. Ordinary frames, frames without the halo
 * copies and the copies alone are timed by the host's clock around the frame and a wait. The
 * fourth kind is an ordinary frame launched stage by stage with events around every stretch of
 * a partition's kernels (a stage's send set and interior; an XPBD colour pass): the longest
 * partition's sum of them is the frame's compute, what it would take with no halo exchange at
 * all. The frame without copies is no such measure: its waits and events stay, and its stale
 * ghosts change the work. The state is not restored. */
static wf_status measure_frames(wf_cloth *cs, const char *fn, int frames,
                                wf_overlap *out) {
  int kinds = cs->n_links ? 4 : 1; /* no halo: nothing to leave out, copy or compare */
  uint32_t per_substep = cs->desc.integrator == WF_CLOTH_SPRINGS
                             ? 1
                             : 2 + (uint32_t)cs->desc.iterations * wfc_colours(cs->parts[0].c);
  uint32_t cap = per_substep * (uint32_t)cs->desc.substeps;
  size_t n_marks = kinds > 3 ? 2 * (size_t)cs->np * cap : 0;
  wf_graph *g[3] = {NULL, NULL, NULL};
  double *ms = malloc((size_t)frames * 4 * sizeof *ms);
  wf_event **marks = n_marks ? calloc(n_marks, sizeof *marks) : NULL;
  if (!ms || (n_marks && !marks)) {
    free(ms), free(marks);
    return oom(fn, cs->name);
  }
  wf_status st = WF_OK;
  wf_device *devs[MAXP];
  for (int p = 0; p < cs->np; p++)
    devs[p] = cs->parts[p].dev;
  if (n_marks && (st = wf__split_events_create(devs, 2 * cap, n_marks, marks)) != WF_OK)
    st = fail_gpu(st, fn, cs, "creating timing events");
  for (int m = 0; m < kinds && m < 3 && st == WF_OK; m++)
    st = mode_graph(cs, fn, m, &g[m]);
  for (int f = -1; f < frames && st == WF_OK; f++)
    for (int m = 0; m < kinds && st == WF_OK; m++) {
      double t = 0.0;
      if (m < 3) {
        st = timed_frame(cs, fn, m, g[m], &t);
      } else {
        cs->marks = marks, cs->mark_cap = cap;
        memset(cs->mark_n, 0, sizeof cs->mark_n);
        st = timed_frame(cs, fn, FRAME_FULL, NULL, &t);
        if (st == WF_OK && (st = wf__split_longest(marks, cs->np, cap, cs->mark_n, &t)) != WF_OK)
          st = fail_gpu(st, fn, cs, "timing a partition's kernels");
        cs->marks = NULL;
      }
      if (f >= 0) ms[m * frames + f] = t;
    }
  if (st == WF_OK)
    wf__split_medians(ms, frames, kinds, &out->frame_ms, &out->frame_no_halo_ms, &out->halo_ms,
                      &out->compute_ms);
  for (int m = 1; m < 3; m++) /* g[0] is cs->graph */
    if (g[m]) wf_graph_destroy(g[m]);
  wf__split_events_destroy(marks, n_marks);
  free(marks);
  free(ms);
  return st;
}

/* One partition: no halo. Ordinary frames timed on the host's clock (each followed by a wait)
 * stand for all four kinds; the state is put back after. */
static wf_status measure_whole(wf_cloth *cs, const char *fn, int frames, wf_overlap *out) {
  wfc_part *c = whole(cs);
  float(*pos)[4] = malloc((size_t)cs->nv * 16), (*vel)[4] = malloc((size_t)cs->nv * 16);
  double *ms = malloc((size_t)frames * sizeof *ms), time = 0.0;
  uint64_t substeps = 0;
  wf_status st = pos && vel && ms ? WF_OK : oom(fn, cs->name);
  if (st == WF_OK) st = wfc_part_download(c, pos, vel);
  if (st == WF_OK) st = wfc_part_time(c, &time, &substeps);
  for (int f = -1; f < frames && st == WF_OK; f++) {
    double t0 = now_ms();
    st = wfc_part_step_frames(c, 1);
    if (st == WF_OK && (st = wf_stream_synchronize(stream_of(cs, 0))) != WF_OK)
      st = fail_gpu(st, fn, cs, "waiting for a frame");
    if (f >= 0) ms[f] = now_ms() - t0;
  }
  if (st == WF_OK)
    st = wfc_part_set_state(c, (const float(*)[4])pos, (const float(*)[4])vel, time, substeps);
  if (st == WF_OK) {
    out->frame_ms = out->frame_no_halo_ms = out->compute_ms = wf__split_median(ms, frames);
    out->hidden_fraction = 1.0;
  }
  free(pos), free(vel), free(ms);
  return st;
}

wf_status wf_cloth_overlap_measure(wf_cloth *cs, int frames,
                                         wf_overlap *out) {
  static const char fn[] = "wf_cloth_overlap_measure";
  if (!cs || !out) return wf__error(WF_ERR_INVALID, fn, "cloth or out is NULL");
  memset(out, 0, sizeof *out);
  if (frames < 1)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': frames %d must be >= 1", cs->name,
                     frames);
  if (whole(cs)) return measure_whole(cs, fn, frames, out);
  float(*pos)[4] = malloc((size_t)cs->nv * 16), (*vel)[4] = malloc((size_t)cs->nv * 16);
  double time = 0.0;
  uint64_t substeps = 0;
  wf_status st = pos && vel ? WF_OK : oom(fn, cs->name);
  /* the state to give back; a non-finite one is refused (download's error says where) */
  if (st == WF_OK) st = wf_cloth_download(cs, pos, vel);
  if (st == WF_OK) st = wf_cloth_time(cs, &time, &substeps);
  /* the frames come after what was enqueued on every partition (as in step_frames) */
  for (int p = 1; p < cs->np && st == WF_OK; p++)
    if ((st = wf_stream_wait_stream(stream_of(cs, 0), stream_of(cs, p))) != WF_OK)
      st = fail_gpu(st, fn, cs, "ordering the frames");
  bool ran = false;
  if (st == WF_OK) {
    ran = true;
    st = measure_frames(cs, fn, frames, out);
  }
  if (ran) { /* give the state back even after a failure (its own error comes first) */
    wf_status st2 = WF_OK;
    for (int p = 0; p < cs->np && st2 == WF_OK; p++) {
      if (p > 0 && (st2 = wf_stream_wait_stream(stream_of(cs, p), stream_of(cs, 0))) != WF_OK)
        st2 = fail_gpu(st2, fn, cs, "ordering after the frames");
      if (st2 == WF_OK) st2 = wfc_touch(cs->parts[p].c, fn);
    }
    if (st2 == WF_OK)
      st2 = wf_cloth_set_state(cs, (const float(*)[4])pos, (const float(*)[4])vel, time,
                                     substeps);
    if (st == WF_OK) st = st2;
  }
  free(pos), free(vel);
  if (st != WF_OK) return st;
  out->halo_bytes_per_frame = cs->info.halo_bytes_per_frame;
  out->hidden_fraction = wf__split_hidden_fraction(out->frame_ms, out->compute_ms, out->halo_ms);
  return WF_OK;
}

/* ---- reading and writing the state ----------------------------------------------------------- */

static bool finite4(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* Lowers *bad_g to the smallest global id of partition p's owned vertices with a non-finite state.
 * The device flags name the smallest local index `first`, and the local order is not the global
 * one (the send set comes first), so the state is searched too. buf holds n_local entries. */
static wf_status first_bad(wf_cloth *cs, const char *fn, int p, float (*buf)[4],
                           uint32_t first, uint32_t *bad_g) {
  part *pt = &cs->parts[p];
  if (first < pt->n_local && pt->gid[first] < *bad_g) *bad_g = pt->gid[first];
  for (int w = 0; w < 2; w++) {
    TRY(wf_download(buf, wfc_buffer(pt->c, w ? WFC_BUF_VEL0 : WFC_BUF_POS0), 0,
                    (size_t)pt->n_local * 16),
        "downloading the state");
    for (uint32_t i = 0; i < pt->n_owned; i++)
      if (!finite4(buf[i]) && pt->gid[i] < *bad_g) *bad_g = pt->gid[i];
  }
  return WF_OK;
}

wf_status wf_cloth_download(wf_cloth *cs, float (*pos)[4], float (*vel)[4]) {
  static const char fn[] = "wf_cloth_download";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (whole(cs)) return wfc_part_download(whole(cs), pos, vel);
  uint32_t most = 1;
  for (int p = 0; p < cs->np; p++)
    most = cs->parts[p].n_local > most ? cs->parts[p].n_local : most;
  float(*buf)[4] = malloc((size_t)most * 16);
  if (!buf) return oom(fn, cs->name);
  wf_status st = WF_OK;
  uint32_t bad_g = NONE;
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    part *pt = &cs->parts[p];
    uint32_t bad = 0, first = NONE;
    if ((st = wfc_flags_get(pt->c, fn, &bad, &first)) != WF_OK) break;
    if (bad && (st = first_bad(cs, fn, p, buf, first, &bad_g)) != WF_OK) break;
    for (int w = 0; w < 2 && st == WF_OK; w++) {
      float(*dst)[4] = w ? vel : pos;
      if (!dst) continue;
      st = wf_download(buf, wfc_buffer(pt->c, w ? WFC_BUF_VEL0 : WFC_BUF_POS0), 0,
                       (size_t)pt->n_local * 16);
      if (st != WF_OK) {
        st = fail_gpu(st, fn, cs, "downloading the state");
        break;
      }
      for (uint32_t i = 0; i < pt->n_owned; i++)
        memcpy(dst[pt->gid[i]], buf[i], 16);
    }
  }
  free(buf);
  if (st != WF_OK) return st;
  if (bad_g != NONE) {
    uint64_t k = 0;
    wfc_part_time(cs->parts[0].c, NULL, &k);
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': vertex %u became NaN/inf by substep %llu: the time step "
                     "is too large for the stiffness (more substeps, or softer springs / XPBD)",
                     cs->name, bad_g, (unsigned long long)k);
  }
  return WF_OK;
}

wf_status wf_cloth_set_state(wf_cloth *cs, const float (*pos)[4], const float (*vel)[4],
                                   double time, uint64_t substeps) {
  static const char fn[] = "wf_cloth_set_state";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (whole(cs)) return wfc_part_set_state(whole(cs), pos, vel, time, substeps);
  if (!pos || !vel)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': pos or vel is NULL", cs->name);
  uint32_t most = 1;
  for (int p = 0; p < cs->np; p++)
    most = cs->parts[p].n_local > most ? cs->parts[p].n_local : most;
  float(*lp)[4] = malloc((size_t)most * 16), (*lv)[4] = malloc((size_t)most * 16);
  wf_status st = lp && lv ? WF_OK : oom(fn, cs->name);
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    part *pt = &cs->parts[p];
    for (uint32_t i = 0; i < pt->n_local; i++) {
      memcpy(lp[i], pos[pt->gid[i]], 16);
      memcpy(lv[i], vel[pt->gid[i]], 16);
    }
    st = wfc_part_set_state(pt->c, (const float(*)[4])lp, (const float(*)[4])lv, time, substeps);
  }
  free(lp), free(lv);
  return st;
}

wf_status wf_cloth_time(wf_cloth *cs, double *seconds, uint64_t *substeps) {
  if (!cs) return wf__error(WF_ERR_INVALID, "wf_cloth_time", "cloth is NULL");
  return wfc_part_time(cs->parts[0].c, seconds, substeps);
}

/* The whole cloth's counts over the partitions' device memory and frame facts. */
static void info_split(const wf_cloth *cs, wf_cloth_info *out) {
  wf_cloth_info p0;
  wfc_part_info_get(cs->parts[0].c, &p0);
  *out = cs->info;
  out->triangles = cs->nt;
  out->springs = cs->springs;
  out->constraints = cs->constraints;
  out->colours = cs->colours;
  out->grid[0] = cs->grid[0], out->grid[1] = cs->grid[1];
  out->frame_kernel = p0.frame_kernel;
  out->resident_max = p0.resident_max;
  out->frame_lanes = p0.frame_lanes;
  out->frame_smem = p0.frame_smem;
  out->graph_nodes = cs->graph ? wf_graph_node_count(cs->graph) : 0;
  for (int p = 0; p < cs->np; p++) {
    wf_cloth_info pi;
    wfc_part_info_get(cs->parts[p].c, &pi);
    out->device_bytes += pi.device_bytes;
    out->partition_bytes[p] = pi.device_bytes;
  }
}

wf_status wf_cloth_info_get(const wf_cloth *cs, wf_cloth_info *out) {
  if (!cs || !out) return wf__error(WF_ERR_INVALID, "wf_cloth_info_get", "cloth or out is NULL");
  if (!whole(cs)) {
    info_split(cs, out);
    return WF_OK;
  }
  wf_status st = wfc_part_info_get(whole(cs), out);
  out->partitions = 1;
  out->owned[0] = cs->nv;
  out->partition_bytes[0] = out->device_bytes;
  out->peer = true;
  return st;
}

/* Where global vertex `vertex` lives (cloth_split.h, for tests). */
wf_status wfc_split_vertex(const wf_cloth *cs, uint32_t vertex, int *owner, uint32_t *ghost_in) {
  static const char fn[] = "wfc_split_vertex";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  wf_status st = check_vertex(cs, fn, vertex);
  if (st != WF_OK) return st;
  if (owner) *owner = whole(cs) ? 0 : cs->owner[vertex];
  if (ghost_in) *ghost_in = whole(cs) ? 0 : cs->ghost_in[vertex];
  return WF_OK;
}

/* Where partition p keeps global vertex `vertex` (cloth_split.h, for tests). */
wf_status wfc_split_local(const wf_cloth *cs, int p, uint32_t vertex, uint32_t *local) {
  static const char fn[] = "wfc_split_local";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  wf_status st = check_vertex(cs, fn, vertex);
  if (st != WF_OK) return st;
  if (p < 0 || p >= cs->np)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': partition %d out of range [0, %d)",
                     cs->name, p, cs->np);
  if (local) *local = whole(cs) ? vertex : cs->lid[(size_t)p * cs->nv + vertex];
  return WF_OK;
}

/* Partition p's solver (cloth_split.h, for tests). */
wfc_part *wfc_split_part(const wf_cloth *cs, int p) {
  return cs && p >= 0 && p < cs->np ? cs->parts[p].c : NULL;
}

uint32_t wf_cloth_count(const wf_cloth *cs) { return cs ? cs->nv : 0; }

int wf_cloth_partition_count(const wf_cloth *cs) { return cs ? cs->np : 0; }

wf_status wf_cloth_partition_view(const wf_cloth *cs, int i, wf_partition_view *out) {
  static const char fn[] = "wf_cloth_partition_view";
  if (!cs || !out) return wf__error(WF_ERR_INVALID, fn, "cloth or out is NULL");
  memset(out, 0, sizeof *out);
  if (i < 0 || i >= cs->np)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': partition %d out of range [0, %d)",
                     cs->name, i, cs->np);
  const part *pt = &cs->parts[i];
  out->device = pt->dev;
  out->stream = stream_of(cs, i);
  out->ids = pt->ids;
  out->rows = pt->n_owned;
  return wfc_part_state_buffers(pt->c, &out->pos, &out->vel, &out->clock);
}

/* ---- one device only ------------------------------------------------------------------------ */

wf_status wf_cloth_couple(wf_cloth *cs, wf_particles *ps) {
  static const char fn[] = "wf_cloth_couple";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs) ? wfc_part_couple(whole(cs), ps) : one_device_only(cs, fn, "coupling");
}

wf_status wf_cloth_step_substeps(wf_cloth *cs, int n) {
  static const char fn[] = "wf_cloth_step_substeps";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs) ? wfc_part_step_substeps(whole(cs), n)
                   : one_device_only(cs, fn, "stepping substeps one by one");
}

wf_status wf_cloth_set_frame_readback(wf_cloth *cs, wf_buffer *dst, size_t off) {
  static const char fn[] = "wf_cloth_set_frame_readback";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs) ? wfc_part_set_frame_readback_as(whole(cs), dst, off, WF_CLOTH_XYZW)
                   : one_device_only(cs, fn, "the per-frame readback (use wf_cloth_copy_positions_on)");
}

wf_status wf_cloth_set_frame_readback_as(wf_cloth *cs, wf_buffer *dst, size_t off,
                                         wf_cloth_layout layout) {
  static const char fn[] = "wf_cloth_set_frame_readback_as";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs) ? wfc_part_set_frame_readback_as(whole(cs), dst, off, layout)
                   : one_device_only(cs, fn, "the per-frame readback (use wf_cloth_copy_positions_on)");
}

/* ---- any number of devices ------------------------------------------------------------------ */

wf_status wf_cloth_check(wf_cloth *cs) {
  if (!cs) return wf__error(WF_ERR_INVALID, "wf_cloth_check", "cloth is NULL");
  return whole(cs) ? wfc_part_check(whole(cs)) : wf_cloth_download(cs, NULL, NULL);
}

/* Frames are launched on partition 0's stream and every other partition's joins it. */
wf_stream *wf_cloth_stream(const wf_cloth *cs) { return cs ? stream_of(cs, 0) : NULL; }

const uint32_t *wf_cloth_triangles(const wf_cloth *cs, uint32_t *count) {
  if (cs && whole(cs)) return wfc_part_triangles(whole(cs), count);
  if (count) *count = cs ? cs->nt : 0;
  return cs && cs->nt ? cs->tris : NULL;
}

/* The gather's buffers on device d (built again when d changes). */
static wf_status gather_on(wf_cloth *cs, const char *fn, wf_device *d, wf_stream *s) {
  gather *g = &cs->gather;
  if (g->dev == d) return WF_OK;
  gather_free(cs);
  size_t rows = (size_t)cs->nv;
  TRY(wf_buffer_create(d, rows * 16, 0, s, &g->stage), "allocating the gather");
  TRY(wf_buffer_create(d, rows * 16, 0, s, &g->out), "allocating the gather");
  TRY(wf_buffer_create(d, rows * 4, 0, s, &g->gid), "allocating the gather");
  size_t at = 0;
  for (int p = 0; p < cs->np; p++) {
    size_t bytes = (size_t)cs->parts[p].n_owned * 4;
    if (bytes) TRY(wf_upload(g->gid, at, cs->parts[p].gid, bytes, s), "uploading the gather ids");
    at += bytes;
  }
  g->dev = d;
  return WF_OK;
}

/* Several partitions: every partition's owned rows copied (peer to peer) onto s's device, one
 * partition after the other, then scattered by global id (the halo unpack kernel) into dst when
 * it is on that device, else into the gather's buffer and copied from there. */
static wf_status copy_split(wf_cloth *cs, const char *fn, wf_buffer *dst, size_t off, wf_stream *s) {
  wf_device *d = wf_stream_device(s);
  wf_status st = gather_on(cs, fn, d, s);
  if (st != WF_OK) return st;
  gather *g = &cs->gather;
  size_t at = 0;
  for (int p = 0; p < cs->np; p++) {
    size_t bytes = (size_t)cs->parts[p].n_owned * 16;
    if (s != stream_of(cs, p)) TRY(wf_stream_wait_stream(s, stream_of(cs, p)), "ordering the copy");
    if (bytes)
      TRY(wf_copy(g->stage, at, wfc_buffer(cs->parts[p].c, WFC_BUF_POS0), 0, bytes, s),
          "gathering positions");
    at += bytes;
  }
  bool direct = wf_buffer_device(dst) == d;
  wf_buffer *to = direct ? dst : g->out;
  wfc_halo_args a = {wf_buffer_ptr(g->gid), wf_buffer_ptr(g->stage), NULL,
                     (wfp_f4 *)((char *)wf_buffer_ptr(to) + (direct ? off : 0)), NULL};
  TRY(wf_launch(&wfc_halo_unpack, cs->nv, &a, sizeof a, s), "scattering positions");
  TRY(wf_buffer_touch(to, s), "ordering the scatter");
  if (!direct) TRY(wf_copy(dst, off, g->out, 0, (size_t)cs->nv * 16, s), "copying positions");
  /* the partitions' next frames must not overwrite their rows while they are read */
  for (int p = 0; p < cs->np; p++)
    if (s != stream_of(cs, p)) TRY(wf_stream_wait_stream(stream_of(cs, p), s), "ordering a frame");
  return WF_OK;
}

wf_status wf_cloth_copy_positions(wf_cloth *cs, wf_buffer *dst, size_t off) {
  return wf_cloth_copy_positions_on(cs, dst, off, NULL);
}

wf_status wf_cloth_copy_positions_on(wf_cloth *cs, wf_buffer *dst, size_t off, wf_stream *s) {
  static const char fn[] = "wf_cloth_copy_positions";
  if (!cs || !dst) return wf__error(WF_ERR_INVALID, fn, "cloth or buffer is NULL");
  if (whole(cs)) return wfc_part_copy_positions_on(whole(cs), dst, off, s);
  size_t bytes = (size_t)cs->nv * 16, size = wf_buffer_size(dst);
  if (off > size || size - off < bytes)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': destination holds %zu bytes after offset %zu, positions need %zu",
                     cs->name, off > size ? 0 : size - off, off, bytes);
  return copy_split(cs, fn, dst, off, s ? s : stream_of(cs, 0));
}

/* ---- additions for the world (engine/world.c) ------------------------------------------------ */

wf_status wf_cloth_attach_region(wf_cloth *cs, const float lo[3], const float hi[3],
                                       uint32_t collider, uint32_t *count) {
  static const char fn[] = "wf_cloth_attach_region";
  if (cs && whole(cs)) return wfc_part_attach_region(whole(cs), lo, hi, collider, count);
  if (cs && collider == NONE)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider %u does not exist", cs->name,
                     collider);
  return pin_region(cs, fn, lo, hi, collider, count);
}
