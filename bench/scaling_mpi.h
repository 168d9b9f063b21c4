/* The MPI side of `weft bench scaling --mpi` (scaling_mpi.c): the job's ranks, a barrier, a
 * maximum over the ranks and the measured link between ranks 0 and 1. Without MPI in the build
 * (or outside an MPI job: MPI not initialized) sb_mpi_job reports one rank and no communicator. */
#ifndef WEFT_BENCH_SCALING_MPI_H
#define WEFT_BENCH_SCALING_MPI_H

#include <stdbool.h>
#include <stddef.h>

/* false when MPI is absent or not initialized; else this rank, the ranks, the rank on its node
 * (to pick its GPU) and a pointer to MPI_COMM_WORLD. */
bool sb_mpi_job(int *rank, int *ranks, int *local_rank, const void **comm);
void sb_mpi_barrier(void);
/* Every rank waits here without spinning (a nonblocking barrier polled every millisecond), so
 * that rank 0's one-process baseline has the cores to itself. */
void sb_mpi_idle_barrier(void);
/* The largest v over the ranks, on every rank. */
double sb_mpi_max(double v);
/* v of rank 0 on every rank. */
double sb_mpi_bcast(double v);
/* Ranks 0 and 1 (the others wait): a ping-pong of `bytes` (median of `reps` round trips) and of
 * 8 bytes; *rate in bytes/s one way, *latency_s one way. Every rank gets rank 0's figures. */
void sb_mpi_link(size_t bytes, int reps, double *rate, double *latency_s);

#endif
