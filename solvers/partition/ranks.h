/* MPI ranks of a partition set: which rank holds which partition, and the few collectives the
 * solvers need between frames. Internal to libweft; <mpi.h> stays inside ranks.c and
 * transport_mpi.c, so nothing else (and no public header) needs MPI to compile.
 *
 * A set made with wfpt_set_desc.mpi_comm duplicates the communicator (the library's messages never
 * meet the application's) and spreads its n partitions over the ranks in blocks: partition p is
 * rank p * ranks / n's, so every rank computes the same assignment and each holds at least one
 * partition (n >= ranks is required). Every collective below is entered by every rank of the
 * communicator in the same order; one process (no communicator) makes each of them the identity.
 *
 * Built without MPI (WEFT_HAVE_MPI undefined) a set given a communicator is refused with a
 * message that says so.
 */
#ifndef WEFT_SOLVERS_PARTITION_RANKS_H
#define WEFT_SOLVERS_PARTITION_RANKS_H

#include "internal/xsum.h"
#include "partition.h"

/* The rank that holds partition p of n over `ranks` ranks. */
static inline int wfpt_rank_of(int p, int n, int ranks) { return (int)((long long)p * ranks / n); }

/* Whether the library was built with MPI. */
bool wfpt_mpi_built(void);
/* The size of the application's communicator (a pointer to an MPI_Comm); 1 without MPI. */
wf_status wfpt_comm_size(const void *comm, int *size, int *rank);

/* Over the application's communicator (a pointer to an MPI_Comm): *failed_rank becomes the
 * lowest rank whose `failed` is true, or -1 when none is; every rank must call it. */
wf_status wfpt_comm_agree(const void *comm, bool failed, int *failed_rank);

/* Every rank's `bytes` at `mine` over the application's communicator (NULL: this process's
 * alone), concatenated in rank order, into *all (malloc'ed, the caller frees it; *total its
 * size); what names the caller in a message. Every rank must call it. */
wf_status wfpt_comm_allgather(const void *comm, const char *what, const void *mine, size_t bytes,
                              void **all, size_t *total);

/* Rank `root`'s `bytes` at buf to every rank of the application's communicator (NULL: nothing
 * to do); what names the caller in a message. Every rank must call it. */
wf_status wfpt_comm_bcast(const void *comm, const char *what, void *buf, size_t bytes, int root);

/* set_create's part: duplicates the communicator, sets rank, ranks, rank_of and lead. */
wf_status wfpt_ranks_open(wfpt_set *s, const void *comm);
void wfpt_ranks_close(wfpt_set *s);
/* The set's own communicator (a pointer to an MPI_Comm); NULL in one process. */
const void *wfpt_ranks_comm(const wfpt_set *s);

/* *flag becomes the OR of every rank's. */
wf_status wfpt_ranks_any(wfpt_set *s, bool *flag);
/* v[0..n) become the sums over the ranks (integers: the order of the sum does not matter). */
wf_status wfpt_ranks_sum_u64(wfpt_set *s, uint64_t *v, int n);
/* x[0..n) become the exact sums over the ranks (limb by limb, and their infinities and NaN as
 * IEEE addition combines them in any order); *failed becomes the OR of every rank's, in the same
 * collective. Every rank enters it, also one that failed. */
wf_status wfpt_ranks_sum_xsum(wfpt_set *s, wf_xsum *x, int n, bool *failed);
/* The largest of every rank's v[0..n). */
wf_status wfpt_ranks_max_f64(wfpt_set *s, double *v, int n);
/* Every rank's `bytes` at `mine`, concatenated in rank order, into *all (malloc'ed, the caller
 * frees it; *total its size). */
wf_status wfpt_ranks_allgather(wfpt_set *s, const void *mine, size_t bytes, void **all,
                               size_t *total);
/* Each rank sends bytes[r] bytes to rank r, from `send` in rank order, and receives every rank's
 * bytes for it, in rank order, into *recv (malloc'ed, the caller frees it; *total its size). */
wf_status wfpt_ranks_alltoallv(wfpt_set *s, const void *send, const size_t *bytes, void **recv,
                               size_t *total);
/* Rank `root`'s bytes to every rank (buf: root's in, the others' out). */
wf_status wfpt_ranks_bcast(wfpt_set *s, void *buf, size_t bytes, int root);

#endif
