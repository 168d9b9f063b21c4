/* MPI ranks of a partition set (ranks.h): the duplicated communicator, the block assignment of
 * partitions to ranks and the collectives between frames. Without MPI only one process exists:
 * a communicator is refused and the collectives are the identity. */
#include "ranks.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"

#include "weft/partition.h"

#ifdef WEFT_HAVE_MPI
#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI's extensions: MPIX_Query_cuda_support */
#endif
#endif
#endif

#include <stdio.h>

static void assign(wfpt_set *s) {
  s->lead = -1;
  for (int p = 0; p < s->n; p++) {
    s->rank_of[p] = wfpt_rank_of(p, s->n, s->ranks);
    if (s->lead < 0 && s->rank_of[p] == s->rank) s->lead = p;
  }
}

#ifdef WEFT_HAVE_MPI

typedef struct ranks_state {
  MPI_Comm comm;
} ranks_state;

static MPI_Comm comm_of(const wfpt_set *s) { return ((const ranks_state *)s->mpi)->comm; }

const void *wfpt_ranks_comm(const wfpt_set *s) {
  return s->mpi ? &((const ranks_state *)s->mpi)->comm : NULL;
}

/* An MPI call failed: its message, naming the set and this rank. */
static wf_status mpi_fail(const wfpt_set *s, int err, const char *doing) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(err, text, &len);
  return wf__error(WF_ERR_BACKEND, NULL, "%s: rank %d of %d: %s: %s", s->what, s->rank, s->ranks,
                   doing, text);
}

/* An MPI call on the application's communicator failed: its message after `doing`. */
static wf_status comm_fail(int err, const char *doing) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(err, text, &len);
  return wf__error(WF_ERR_BACKEND, NULL, "%s: %s", doing, text);
}

bool wfpt_mpi_built(void) { return true; }

/* CUDA-aware: Open MPI says at compile time whether the extension exists (MPIX_CUDA_AWARE_SUPPORT
 * defined, 0 or 1) and at run time whether the library it runs with supports it. */
bool wf_mpi_available(bool *cuda_aware, char *version, size_t version_bytes) {
  if (cuda_aware) {
    *cuda_aware = false;
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    *cuda_aware = MPIX_Query_cuda_support() != 0;
#endif
  }
  if (version && version_bytes) {
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(text, &len);
    for (int i = 0; i < len; i++) /* the first line */
      if (text[i] == '\n' || text[i] == ',') {
        text[i] = '\0';
        break;
      }
    snprintf(version, version_bytes, "%s", text);
  }
  return true;
}

wf_status wfpt_comm_size(const void *comm, int *size, int *rank) {
  int init = 0;
  MPI_Initialized(&init);
  if (!init)
    return wf__error(WF_ERR_INVALID, NULL,
                     "an MPI communicator was given but MPI is not initialized (call MPI_Init "
                     "first)");
  MPI_Comm_size(*(const MPI_Comm *)comm, size);
  MPI_Comm_rank(*(const MPI_Comm *)comm, rank);
  return WF_OK;
}

wf_status wfpt_comm_agree(const void *comm, bool failed, int *failed_rank) {
  *failed_rank = -1;
  if (!comm) return WF_OK;
  int rank = 0, lowest = 0;
  MPI_Comm c = *(const MPI_Comm *)comm;
  MPI_Comm_rank(c, &rank);
  int mine = failed ? rank : 0x7fffffff;
  int err = MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, c);
  if (err != MPI_SUCCESS)
    return wf__error(WF_ERR_BACKEND, NULL, "rank %d: agreeing on a status: MPI error %d", rank,
                     err);
  *failed_rank = lowest == 0x7fffffff ? -1 : lowest;
  return WF_OK;
}

wf_status wfpt_ranks_open(wfpt_set *s, const void *comm) {
  s->rank = 0, s->ranks = 1;
  if (!comm) {
    assign(s);
    return WF_OK;
  }
  wf_status st = wfpt_comm_size(comm, &s->ranks, &s->rank);
  if (st != WF_OK) return st;
  if (s->n < s->ranks)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s: %d partitions over %d MPI ranks: every rank needs at least one "
                     "partition (give at least %d devices)",
                     s->what, s->n, s->ranks, s->ranks);
  ranks_state *r = calloc(1, sizeof *r);
  if (!r) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  int err = MPI_Comm_dup(*(const MPI_Comm *)comm, &r->comm);
  if (err != MPI_SUCCESS) {
    free(r);
    return mpi_fail(s, err, "duplicating the communicator");
  }
  MPI_Comm_set_errhandler(r->comm, MPI_ERRORS_RETURN);
  s->mpi = r;
  assign(s);
  return WF_OK;
}

void wfpt_ranks_close(wfpt_set *s) {
  if (!s->mpi) return;
  ranks_state *r = s->mpi;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Comm_free(&r->comm);
  free(r);
  s->mpi = NULL;
}

wf_status wfpt_ranks_any(wfpt_set *s, bool *flag) {
  if (!s->mpi) return WF_OK;
  int v = *flag ? 1 : 0, all = 0;
  int err = MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_LOR, comm_of(s));
  if (err != MPI_SUCCESS) return mpi_fail(s, err, "agreeing on a flag");
  *flag = all != 0;
  return WF_OK;
}

wf_status wfpt_ranks_sum_u64(wfpt_set *s, uint64_t *v, int n) {
  if (!s->mpi || n <= 0) return WF_OK;
  int err = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_SUM, comm_of(s));
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, err, "summing over the ranks");
}

wf_status wfpt_ranks_max_f64(wfpt_set *s, double *v, int n) {
  if (!s->mpi || n <= 0) return WF_OK;
  int err = MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, comm_of(s));
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, err, "the maximum over the ranks");
}

/* Counts and displacements are ints in MPI 3 (Open MPI 4 has no large-count calls), so what a
 * collective moves is limited to 2 GiB a rank. Past that, on weft's own duplicated communicator
 * (no message of the application's can match), the rows go as point-to-point messages of at most
 * P2P_CHUNK bytes, in order between each pair (MPI does not let messages of one pair and tag
 * overtake each other), every receive posted before any send: the same bytes in the same places.
 * The tag is MPI_TAG_UB, above the halo messages' tags (transport_mpi.c, < 32768). */
#ifndef WFPT_P2P_CHUNK /* (the partition tests build this file with small ones: test_ranks_mpi) */
#define WFPT_P2P_CHUNK ((size_t)1 << 30)
#endif
#ifndef WFPT_MPI_LIMIT
#define WFPT_MPI_LIMIT ((size_t)0x7fffffff)
#endif
#define P2P_CHUNK ((size_t)(WFPT_P2P_CHUNK))
#define MPI_LIMIT ((size_t)(WFPT_MPI_LIMIT))

static int p2p_tag(MPI_Comm c) {
  int *ub = NULL, flag = 0;
  MPI_Comm_get_attr(c, MPI_TAG_UB, &ub, &flag);
  return flag && ub ? *ub : 32767;
}

/* Rank r's rows: send[sat[r] .. + scnt[r]) to rank r, recv[rat[r] .. + rcnt[r]) from rank r
 * (the own rows copied). */
static int p2p_exchange(MPI_Comm c, const char *send, const size_t *scnt, const size_t *sat,
                        char *recv, const size_t *rcnt, const size_t *rat) {
  int n = 1, me = 0, err = MPI_SUCCESS;
  MPI_Comm_size(c, &n);
  MPI_Comm_rank(c, &me);
  size_t msgs = 0;
  for (int r = 0; r < n; r++)
    if (r != me)
      msgs += (scnt[r] + P2P_CHUNK - 1) / P2P_CHUNK + (rcnt[r] + P2P_CHUNK - 1) / P2P_CHUNK;
  MPI_Request *req = malloc((msgs ? msgs : 1) * sizeof *req);
  if (!req) return MPI_ERR_NO_MEM;
  int tag = p2p_tag(c);
  size_t q = 0;
  for (int pass = 0; pass < 2 && err == MPI_SUCCESS; pass++) /* receives, then sends */
    for (int r = 0; r < n && err == MPI_SUCCESS; r++) {
      if (r == me) continue;
      size_t cnt = pass ? scnt[r] : rcnt[r];
      for (size_t at = 0; at < cnt && err == MPI_SUCCESS; at += P2P_CHUNK) {
        int len = (int)(cnt - at < P2P_CHUNK ? cnt - at : P2P_CHUNK);
        err = pass ? MPI_Isend(send + sat[r] + at, len, MPI_BYTE, r, tag, c, &req[q++])
                   : MPI_Irecv(recv + rat[r] + at, len, MPI_BYTE, r, tag, c, &req[q++]);
      }
    }
  if (scnt[me]) memcpy(recv + rat[me], send + sat[me], scnt[me]);
  int werr = q ? MPI_Waitall((int)q, req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
  free(req);
  return err != MPI_SUCCESS ? err : werr;
}

/* A rank's share and the total (collectives' counts are ints: to 2 GiB, past that point to point
 * on weft's own communicator, `own`; the application's are refused). what: the set or the caller
 * named in a message. */
static wf_status allgather_on(MPI_Comm c, bool own, const char *what, const void *mine,
                              size_t bytes, void **all, size_t *total) {
  int n = 1, rank = 0;
  MPI_Comm_size(c, &n);
  MPI_Comm_rank(c, &rank);
  size_t *cnt = malloc((size_t)n * 3 * sizeof *cnt), *at = cnt ? cnt + n : NULL,
         *mine_n = cnt ? cnt + 2 * n : NULL;
  int *icnt = malloc((size_t)n * 2 * sizeof *icnt), *iat = icnt ? icnt + n : NULL;
  if (!cnt || !icnt) {
    free(cnt), free(icnt);
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
  }
  _Static_assert(sizeof(size_t) == sizeof(uint64_t), "sizes travel as MPI_UINT64_T");
  uint64_t me = bytes;
  int err = MPI_Allgather(&me, 1, MPI_UINT64_T, cnt, 1, MPI_UINT64_T, c);
  size_t sum = 0;
  for (int r = 0; r < n && err == MPI_SUCCESS; r++)
    at[r] = sum, sum += cnt[r], mine_n[r] = bytes;
  bool large = sum > MPI_LIMIT;
  wf_status st = WF_OK;
  char doing[160];
  if (err != MPI_SUCCESS) {
    snprintf(doing, sizeof doing, "%s: rank %d: gathering the sizes", what, rank);
    st = comm_fail(err, doing);
  } else if (large && !own) {
    st = wf__error(WF_ERR_INVALID, NULL, "%s: %zu bytes to gather; MPI counts stop at 2 GiB", what,
                   sum);
  } else if (!(*all = malloc(sum ? sum : 1))) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
  }
  snprintf(doing, sizeof doing, "%s: rank %d: gathering the state", what, rank);
  if (st == WF_OK && large) { /* my rows to every rank, at offset 0 of mine */
    size_t *zero = calloc((size_t)n, sizeof *zero);
    err = zero ? p2p_exchange(c, mine, mine_n, zero, *all, cnt, at) : MPI_ERR_NO_MEM;
    free(zero);
    if (err != MPI_SUCCESS) st = comm_fail(err, doing);
  } else if (st == WF_OK) {
    for (int r = 0; r < n; r++)
      icnt[r] = (int)cnt[r], iat[r] = (int)at[r];
    err = MPI_Allgatherv(mine, (int)bytes, MPI_BYTE, *all, icnt, iat, MPI_BYTE, c);
    if (err != MPI_SUCCESS) st = comm_fail(err, doing);
  }
  if (st != WF_OK)
    free(*all), *all = NULL;
  else
    *total = sum;
  free(cnt), free(icnt);
  return st;
}

wf_status wfpt_ranks_allgather(wfpt_set *s, const void *mine, size_t bytes, void **all,
                               size_t *total) {
  *all = NULL, *total = 0;
  if (!s->mpi) {
    *all = malloc(bytes ? bytes : 1);
    if (!*all) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
    if (bytes) memcpy(*all, mine, bytes);
    *total = bytes;
    return WF_OK;
  }
  return allgather_on(comm_of(s), true, s->what, mine, bytes, all, total);
}

wf_status wfpt_ranks_alltoallv(wfpt_set *s, const void *send, const size_t *bytes, void **recv,
                               size_t *total) {
  *recv = NULL, *total = 0;
  if (!s->mpi) {
    *recv = malloc(bytes[0] ? bytes[0] : 1);
    if (!*recv) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
    if (bytes[0]) memcpy(*recv, send, bytes[0]);
    *total = bytes[0];
    return WF_OK;
  }
  int n = s->ranks;
  MPI_Comm c = comm_of(s);
  size_t *sz =
      calloc((size_t)n * 4, sizeof *sz); /* send counts, offsets; receive counts, offsets */
  int *ic = calloc((size_t)n * 4, sizeof *ic);
  if (!sz || !ic) { /* (the other ranks then wait here: an out-of-memory host is lost anyway) */
    free(sz), free(ic);
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  }
  size_t *sat = sz + n, *rcnt = sz + 2 * n, *rat = sz + 3 * n;
  size_t at = 0, sum = 0;
  for (int r = 0; r < n; r++)
    sz[r] = bytes[r], sat[r] = at, at += bytes[r];
  _Static_assert(sizeof(size_t) == sizeof(uint64_t), "counts travel as MPI_UINT64_T");
  int err = MPI_Alltoall(sz, 1, MPI_UINT64_T, rcnt, 1, MPI_UINT64_T, c);
  for (int r = 0; r < n && err == MPI_SUCCESS; r++)
    rat[r] = sum, sum += rcnt[r];
  void *in = err == MPI_SUCCESS ? malloc(sum ? sum : 1) : NULL;
  /* agreed: past 2 GiB anywhere (point to point), out of memory anywhere (nothing moves) */
  int flags = (at > MPI_LIMIT || sum > MPI_LIMIT ? 1 : 0) | (in ? 0 : 2);
  if (err == MPI_SUCCESS) err = MPI_Allreduce(MPI_IN_PLACE, &flags, 1, MPI_INT, MPI_BOR, c);
  wf_status st = WF_OK;
  if (err != MPI_SUCCESS) {
    st = mpi_fail(s, err, "exchanging the sizes");
  } else if (flags & 2) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: rank %d: out of host memory%s", s->what,
                   s->rank, in ? " on another rank" : "");
  } else if (flags & 1) {
    err = p2p_exchange(c, send, sz, sat, in, rcnt, rat);
    if (err != MPI_SUCCESS) st = mpi_fail(s, err, "exchanging the rows");
  } else {
    int *sc = ic, *sd = ic + n, *rc = ic + 2 * n, *rd = ic + 3 * n;
    for (int r = 0; r < n; r++)
      sc[r] = (int)sz[r], sd[r] = (int)sat[r], rc[r] = (int)rcnt[r], rd[r] = (int)rat[r];
    err = MPI_Alltoallv(send, sc, sd, MPI_BYTE, in, rc, rd, MPI_BYTE, c);
    if (err != MPI_SUCCESS) st = mpi_fail(s, err, "exchanging the rows");
  }
  free(sz), free(ic);
  if (st != WF_OK) {
    free(in);
    return st;
  }
  *recv = in, *total = sum;
  return WF_OK;
}

wf_status wfpt_comm_allgather(const void *comm, const char *what, const void *mine, size_t bytes,
                              void **all, size_t *total) {
  *all = NULL, *total = 0;
  if (!comm) {
    *all = malloc(bytes ? bytes : 1);
    if (!*all) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
    if (bytes) memcpy(*all, mine, bytes);
    *total = bytes;
    return WF_OK;
  }
  return allgather_on(*(const MPI_Comm *)comm, false, what, mine, bytes, all, total);
}

wf_status wfpt_comm_bcast(const void *comm, const char *what, void *buf, size_t bytes, int root) {
  if (!comm || !bytes) return WF_OK;
  if (bytes > (size_t)0x7fffffff)
    return wf__error(WF_ERR_INVALID, NULL, "%s: %zu bytes in one broadcast", what, bytes);
  int err = MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, *(const MPI_Comm *)comm);
  return err == MPI_SUCCESS ? WF_OK : comm_fail(err, what);
}

wf_status wfpt_ranks_bcast(wfpt_set *s, void *buf, size_t bytes, int root) {
  if (!s->mpi || !bytes) return WF_OK;
  int err = MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm_of(s));
  return err == MPI_SUCCESS ? WF_OK : mpi_fail(s, err, "broadcasting");
}

#else /* one process: no MPI */

bool wfpt_mpi_built(void) { return false; }

bool wf_mpi_available(bool *cuda_aware, char *version, size_t version_bytes) {
  if (cuda_aware) *cuda_aware = false;
  if (version && version_bytes) snprintf(version, version_bytes, "none");
  return false;
}

wf_status wfpt_comm_size(const void *comm, int *size, int *rank) {
  *size = 1, *rank = 0;
  return wf__error(WF_ERR_UNSUPPORTED, NULL,
                   "an MPI communicator was given but this libweft was built without MPI "
                   "(configure with -DWEFT_MPI=ON and an MPI installed)");
}

wf_status wfpt_comm_agree(const void *comm, bool failed, int *failed_rank) {
  *failed_rank = -1;
  if (!comm) return WF_OK;
  int size, rank;
  return wfpt_comm_size(comm, &size, &rank);
}

wf_status wfpt_ranks_open(wfpt_set *s, const void *comm) {
  s->rank = 0, s->ranks = 1;
  if (comm) {
    int size, rank;
    return wfpt_comm_size(comm, &size, &rank);
  }
  assign(s);
  return WF_OK;
}

void wfpt_ranks_close(wfpt_set *s) { (void)s; }

const void *wfpt_ranks_comm(const wfpt_set *s) { return NULL; }

wf_status wfpt_ranks_any(wfpt_set *s, bool *flag) { return WF_OK; }

wf_status wfpt_ranks_sum_u64(wfpt_set *s, uint64_t *v, int n) { return WF_OK; }

wf_status wfpt_ranks_max_f64(wfpt_set *s, double *v, int n) { return WF_OK; }

wf_status wfpt_ranks_allgather(wfpt_set *s, const void *mine, size_t bytes, void **all,
                               size_t *total) {
  *all = malloc(bytes ? bytes : 1);
  if (!*all) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  if (bytes) memcpy(*all, mine, bytes);
  *total = bytes;
  return WF_OK;
}

wf_status wfpt_ranks_bcast(wfpt_set *s, void *buf, size_t bytes, int root) { return WF_OK; }

wf_status wfpt_comm_bcast(const void *comm, const char *what, void *buf, size_t bytes, int root) {
  (void)what, (void)buf, (void)bytes, (void)root;
  if (!comm) return WF_OK;
  int size, rank;
  return wfpt_comm_size(comm, &size, &rank);
}

wf_status wfpt_ranks_alltoallv(wfpt_set *s, const void *send, const size_t *bytes, void **recv,
                               size_t *total) {
  *recv = malloc(bytes[0] ? bytes[0] : 1), *total = 0;
  if (!*recv) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  if (bytes[0]) memcpy(*recv, send, bytes[0]);
  *total = bytes[0];
  return WF_OK;
}

wf_status wfpt_comm_allgather(const void *comm, const char *what, const void *mine, size_t bytes,
                              void **all, size_t *total) {
  *all = NULL, *total = 0;
  if (comm) {
    int size, rank;
    return wfpt_comm_size(comm, &size, &rank);
  }
  *all = malloc(bytes ? bytes : 1);
  if (!*all) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
  if (bytes) memcpy(*all, mine, bytes);
  *total = bytes;
  return WF_OK;
}

#endif

wf_status wfpt_ranks_sum_xsum(wfpt_set *s, wf_xsum *x, int n, bool *failed) {
  size_t words = (size_t)n * (WF_XSUM_LIMBS + 3) + 1; /* limbs, NaN, +inf, -inf; then failed */
  uint64_t *v = calloc(words, sizeof *v);
  if (!v) { /* (the other ranks then wait: an out-of-memory host is lost anyway) */
    *failed = true;
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  }
  size_t at = 0;
  for (int k = 0; k < n; k++) {
    wf_xsum_normalize(&x[k]); /* every limb under 2^32: the sums over the ranks fit */
    for (int l = 0; l < WF_XSUM_LIMBS; l++)
      v[at++] = (uint64_t)x[k].limb[l]; /* (two's complement: int64 sums as uint64) */
    double sp = x[k].special;
    v[at++] = isnan(sp), v[at++] = sp == INFINITY, v[at++] = sp == -INFINITY;
  }
  v[at] = *failed;
  wf_status st = wfpt_ranks_sum_u64(s, v, (int)words);
  at = 0;
  for (int k = 0; k < n && st == WF_OK; k++) {
    for (int l = 0; l < WF_XSUM_LIMBS; l++)
      x[k].limb[l] = (int64_t)v[at++];
    uint64_t nan = v[at++], pos = v[at++], neg = v[at++];
    x[k].special = nan || (pos && neg) ? NAN : pos ? INFINITY : neg ? -INFINITY : 0.0;
  }
  if (st == WF_OK) *failed = v[words - 1] != 0;
  free(v);
  return st;
}
