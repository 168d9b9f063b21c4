/* A cloth over MPI ranks (wf_cloth_desc.mpi_comm): what the ranks agree on and gather, beside the
 * frame (halo.c, whose exchanges between ranks go through the MPI transport) and the build
 * (partition_build.c, which makes only this rank's partitions).
 *
 * Every rank builds the same whole mesh and numbers every partition, so every rank knows every
 * partition's owned vertices in its local order (parts[p].gid, n_owned) without a message; only
 * rank 0's METIS cut is used (broadcast once at creation: METIS with a fixed seed gives the same
 * cut on one build, but the ranks of a job may run on different machines or libraries).
 *
 * The reads of the whole cloth are collectives that give it to every rank: each rank sends its
 * partitions' owned rows in their local order (an allgather), and every rank puts every row at
 * its global id. No arithmetic happens on the way, so the rows are the bits one process reads.
 * The energy's per-vertex rows travel the same way and are then summed in global order, as in one
 * process. Collider force tables are 64-bit integer sums: the ranks' sums are added as integers
 * (any order, the same bits) after every step, so wf_cloth_collider_force reads them without a
 * collective; the switch that turns measuring on is agreed before each step (a caller may switch
 * it on one rank only: rank 0 writing stats.csv).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_parts.h"
#include "internal/error.h"

wf_status wfc_not_over_ranks(const wf_cloth *cs, const char *fn, const char *what) {
  return wf__error(WF_ERR_UNSUPPORTED, fn,
                   "cloth '%s' (MPI rank %d of %d): %s is not supported over MPI ranks (create "
                   "the cloth without desc.mpi_comm: every rank then runs it whole)",
                   cs->name, cs->rank, cs->ranks, what);
}

wf_status wfc_ranks_cut(wf_cloth *cs, const char *fn) {
  char what[128];
  snprintf(what, sizeof what, "%s: cloth '%s': rank %d: broadcasting the partitioning", fn,
           cs->name, cs->rank);
  return wfpt_comm_bcast(cs->desc.mpi_comm, what, cs->owner, cs->nv, 0);
}

/* Rows this rank owns (its partitions', in partition and local order). */
static size_t rows_mine(const wf_cloth *cs) {
  size_t n = 0;
  for (int p = 0; p < cs->np; p++)
    if (cs->parts[p].c) n += cs->parts[p].n_owned;
  return n;
}

/* What leads every rank's block of a gather. */
typedef struct block_head {
  uint32_t failed; /* the rank's own read failed: its block holds no rows */
  uint32_t bad_g;  /* its smallest non-finite vertex, or WFC_NONE */
} block_head;

/* Every rank's block (a head, then `row` bytes for each of its owned rows, or none after a
 * failure), gathered; *failed_rank the lowest rank that failed, or -1. `put(ctx, g, row)` is
 * called for every row of every rank (this one's too) with its global id. */
static wf_status gather_blocks(wf_cloth *cs, const char *fn, size_t row, block_head head,
                               void (*pack)(void *ctx, uint32_t g, void *row), void *ctx,
                               void (*put)(void *ctx, uint32_t g, const void *row),
                               uint32_t *bad_g) {
  size_t n = head.failed ? 0 : rows_mine(cs);
  char *mine = malloc(sizeof head + n * row + 1);
  if (!mine) return wfc_oom(fn, cs->name);
  memcpy(mine, &head, sizeof head);
  size_t at = sizeof head;
  for (int p = 0; p < cs->np && n; p++)
    for (uint32_t i = 0; cs->parts[p].c && i < cs->parts[p].n_owned; i++, at += row)
      pack(ctx, cs->parts[p].gid[i], mine + at);
  void *all = NULL;
  size_t total = 0;
  wf_status st = wfpt_ranks_allgather(cs->set, mine, at, &all, &total);
  free(mine);
  if (st != WF_OK) return wfc_fail(cs, fn, st, "gathering the rows over the MPI ranks");
  const char *a = all, *end = a + total;
  int failed = -1;
  for (int r = 0, p = 0; r < cs->ranks && st == WF_OK; r++) {
    block_head h;
    if ((size_t)(end - a) < sizeof h) {
      st = wf__error(WF_ERR_BACKEND, fn, "cloth '%s': MPI rank %d: a short gather from rank %d",
                     cs->name, cs->rank, r);
      break;
    }
    memcpy(&h, a, sizeof h);
    a += sizeof h;
    if (h.bad_g < *bad_g) *bad_g = h.bad_g;
    if (h.failed && failed < 0) failed = r;
    for (; p < cs->np && wfpt_rank_of(p, cs->np, cs->ranks) == r; p++)
      for (uint32_t i = 0; !h.failed && i < cs->parts[p].n_owned; i++, a += row)
        put(ctx, cs->parts[p].gid[i], a);
  }
  if (st == WF_OK && a != end)
    st = wf__error(WF_ERR_BACKEND, fn, "cloth '%s': MPI rank %d: the gather holds %zu bytes more",
                   cs->name, cs->rank, (size_t)(end - a));
  free(all);
  if (st == WF_OK && failed >= 0 && !head.failed)
    st = wf__error(WF_ERR_BACKEND, fn,
                   "cloth '%s': MPI rank %d: rank %d failed reading its partitions (see its "
                   "message)",
                   cs->name, cs->rank, failed);
  return st;
}

typedef struct state_ctx {
  float (*pos)[4], (*vel)[4];
} state_ctx;

static void state_pack(void *ctx, uint32_t g, void *row) {
  state_ctx *c = ctx;
  char *o = row;
  if (c->pos) memcpy(o, c->pos[g], 16), o += 16;
  if (c->vel) memcpy(o, c->vel[g], 16);
}

static void state_put(void *ctx, uint32_t g, const void *row) {
  state_ctx *c = ctx;
  const char *i = row;
  if (c->pos) memcpy(c->pos[g], i, 16), i += 16;
  if (c->vel) memcpy(c->vel[g], i, 16);
}

wf_status wfc_ranks_gather_rows(wf_cloth *cs, const char *fn, float (*pos)[4], float (*vel)[4],
                                uint32_t *bad_g, wf_status st) {
  state_ctx c = {pos, vel};
  block_head h = {st != WF_OK, *bad_g};
  size_t row = (pos ? 16u : 0u) + (vel ? 16u : 0u);
  wf_status st2 = gather_blocks(cs, fn, row, h, state_pack, &c, state_put, bad_g);
  return st != WF_OK ? st : st2;
}

static void energy_pack(void *ctx, uint32_t g, void *row) {
  memcpy(row, (const wfc_energy *)ctx + g, sizeof(wfc_energy));
}

static void energy_put(void *ctx, uint32_t g, const void *row) {
  memcpy((wfc_energy *)ctx + g, row, sizeof(wfc_energy));
}

wf_status wfc_ranks_gather_energy(wf_cloth *cs, const char *fn, wfc_energy *rows, wf_status st) {
  block_head h = {st != WF_OK || !rows, WFC_NONE};
  uint32_t bad = WFC_NONE;
  wf_status st2 = gather_blocks(cs, fn, sizeof(wfc_energy), h, energy_pack, rows, energy_put, &bad);
  return st != WF_OK ? st : st2;
}

wf_status wfc_ranks_forces_agree(wf_cloth *cs, const char *fn) {
  bool on = cs->forces_want;
  wf_status st = wfpt_ranks_any(cs->set, &on);
  if (st != WF_OK) return wfc_fail(cs, fn, st, "agreeing on measuring collider forces");
  if (on && !cs->force_sum &&
      !(cs->force_sum = calloc(WFX_MAX_COLLIDERS * WFX_FORCE_WORDS, sizeof *cs->force_sum)))
    return wfc_oom(fn, cs->name);
  return wfc_forces_apply(cs, on);
}

wf_status wfc_ranks_forces_sum(wf_cloth *cs, const char *fn, wf_status st) {
  if (!wfc_part_measuring_forces(wfc_lead_part(cs))) return st;
  uint64_t sum[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS] = {0};
  double sec = 0.0;
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    const unsigned long long *table = NULL;
    if (!cs->parts[p].c) continue;
    if ((st = wfc_part_forces(cs->parts[p].c, &table, &sec)) != WF_OK) break;
    for (size_t w = 0; w < WFX_MAX_COLLIDERS * WFX_FORCE_WORDS; w++)
      sum[w] += table[w];
  }
  if (st != WF_OK) memset(sum, 0, sizeof sum); /* every rank enters the sum, also after this */
  wf_status st2 = wfpt_ranks_sum_u64(cs->set, sum, WFX_MAX_COLLIDERS * WFX_FORCE_WORDS);
  if (st != WF_OK) return st;
  if (st2 != WF_OK) return wfc_fail(cs, fn, st2, "summing collider forces over the MPI ranks");
  memcpy(cs->force_sum, sum, sizeof sum);
  cs->force_seconds = sec;
  return WF_OK;
}
