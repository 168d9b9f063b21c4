/* MPI ranks of a partition set (ranks.h): the duplicated communicator, the block assignment of
 * partitions to ranks and the collectives between frames. Without MPI only one process exists:
 * a communicator is refused and the collectives are the identity. */
#include "ranks.h"

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

/* Counts and displacements are ints in MPI 3: a rank's share is limited to 2 GiB (the gather of
 * a whole particle state, 312 bytes a particle with its history, up to about 6M particles a
 * rank). what: the set or the caller named in a message. */
static wf_status allgather_on(MPI_Comm c, const char *what, const void *mine, size_t bytes,
                              void **all, size_t *total) {
  int n = 1, rank = 0;
  MPI_Comm_size(c, &n);
  MPI_Comm_rank(c, &rank);
  if (bytes > (size_t)0x7fffffff)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s: rank %d: %zu bytes to gather; MPI counts stop at 2 GiB a rank", what,
                     rank, bytes);
  int *cnt = malloc((size_t)n * sizeof *cnt), *at = malloc((size_t)n * sizeof *at);
  if (!cnt || !at) {
    free(cnt), free(at);
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
  }
  int me = (int)bytes;
  int err = MPI_Allgather(&me, 1, MPI_INT, cnt, 1, MPI_INT, c);
  size_t sum = 0;
  for (int r = 0; r < n && err == MPI_SUCCESS; r++)
    at[r] = (int)sum, sum += (size_t)cnt[r];
  wf_status st = WF_OK;
  char doing[160];
  if (err != MPI_SUCCESS) {
    snprintf(doing, sizeof doing, "%s: rank %d: gathering the sizes", what, rank);
    st = comm_fail(err, doing);
  } else if (sum > (size_t)0x7fffffff) {
    st = wf__error(WF_ERR_INVALID, NULL, "%s: %zu bytes to gather; MPI counts stop at 2 GiB", what,
                   sum);
  } else if (!(*all = malloc(sum ? sum : 1))) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
  }
  if (st == WF_OK) {
    err = MPI_Allgatherv(mine, me, MPI_BYTE, *all, cnt, at, MPI_BYTE, c);
    snprintf(doing, sizeof doing, "%s: rank %d: gathering the state", what, rank);
    if (err != MPI_SUCCESS) st = comm_fail(err, doing);
  }
  if (st != WF_OK)
    free(*all), *all = NULL;
  else
    *total = sum;
  free(cnt), free(at);
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
  return allgather_on(comm_of(s), s->what, mine, bytes, all, total);
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
  int *sc = calloc((size_t)n * 4, sizeof *sc);
  if (!sc) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  int *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
  size_t at = 0;
  wf_status st = WF_OK;
  for (int r = 0; r < n; r++) {
    if (bytes[r] > (size_t)0x7fffffff || at > (size_t)0x7fffffff)
      st = wf__error(WF_ERR_INVALID, NULL,
                     "%s: rank %d: %zu bytes to send; MPI counts stop at 2 GiB a rank", s->what,
                     s->rank, bytes[r]);
    sc[r] = (int)bytes[r], sd[r] = (int)at, at += bytes[r];
  }
  if (st != WF_OK) /* still in the collectives, sending nothing */
    for (int r = 0; r < n; r++)
      sc[r] = 0, sd[r] = 0;
  int err = MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, comm_of(s));
  size_t sum = 0;
  for (int r = 0; r < n && err == MPI_SUCCESS; r++)
    rd[r] = (int)sum, sum += (size_t)rc[r];
  if (err != MPI_SUCCESS) {
    st = mpi_fail(s, err, "exchanging the sizes");
  } else if (sum > (size_t)0x7fffffff) {
    st = wf__error(WF_ERR_INVALID, NULL, "%s: %zu bytes to receive; MPI counts stop at 2 GiB",
                   s->what, sum);
    for (int r = 0; r < n; r++) /* (the exchange below still happens, receiving nothing) */
      rc[r] = 0, rd[r] = 0;
  }
  void *in = err == MPI_SUCCESS ? malloc(sum ? sum : 1) : NULL;
  if (err == MPI_SUCCESS) {
    int e2 = MPI_Alltoallv(send, sc, sd, MPI_BYTE, in, rc, rd, MPI_BYTE, comm_of(s));
    if (e2 != MPI_SUCCESS && st == WF_OK) st = mpi_fail(s, e2, "exchanging the rows");
    if (!in && st == WF_OK)
      st = wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  }
  free(sc);
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
  return allgather_on(*(const MPI_Comm *)comm, what, mine, bytes, all, total);
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
