/* MPI calls of `weft bench scaling --mpi` (scaling_mpi.h). */
#define _POSIX_C_SOURCE 200809L
#include "scaling_mpi.h"

#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

#ifdef WEFT_HAVE_MPI
#include <mpi.h>

bool sb_mpi_job(int *rank, int *ranks, int *local_rank, const void **comm) {
  static MPI_Comm world;
  int init = 0;
  *rank = 0, *ranks = 1, *local_rank = 0, *comm = NULL;
  MPI_Initialized(&init);
  if (!init) return false;
  world = MPI_COMM_WORLD;
  MPI_Comm_rank(world, rank);
  MPI_Comm_size(world, ranks);
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, local_rank);
  MPI_Comm_free(&node);
  *comm = &world;
  return true;
}

void sb_mpi_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

void sb_mpi_idle_barrier(void) {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  for (int done = 0; MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;) {
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
}

double sb_mpi_max(double v) {
  double m = v;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

double sb_mpi_bcast(double v) {
  MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return v;
}

/* median one-way time of `reps` round trips of n bytes between ranks 0 and 1 */
static double one_way(char *buf, size_t n, int reps, int rank) {
  double *t = calloc((size_t)reps, sizeof *t);
  for (int i = 0; i < reps && t; i++) {
    double t0 = bench_now_s();
    if (rank == 0) {
      MPI_Send(buf, (int)n, MPI_BYTE, 1, 77, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)n, MPI_BYTE, 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, (int)n, MPI_BYTE, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)n, MPI_BYTE, 0, 77, MPI_COMM_WORLD);
    }
    t[i] = 0.5 * (bench_now_s() - t0);
  }
  double m = t ? bench_median(t, reps) : 0.0;
  free(t);
  return m;
}

void sb_mpi_link(size_t bytes, int reps, double *rate, double *latency_s) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  *rate = 0.0, *latency_s = 0.0;
  if (ranks < 2) return;
  char *buf = calloc(bytes ? bytes : 8, 1);
  if (buf && rank < 2) {
    one_way(buf, bytes, 2, rank); /* warm-up: connections, registration */
    double lat = one_way(buf, 8, reps, rank);
    double big = one_way(buf, bytes, reps, rank);
    *latency_s = lat;
    *rate = big > lat ? (double)bytes / (big - lat) : 0.0;
  }
  free(buf);
  *rate = sb_mpi_bcast(*rate);
  *latency_s = sb_mpi_bcast(*latency_s);
}

#else

bool sb_mpi_job(int *rank, int *ranks, int *local_rank, const void **comm) {
  *rank = 0, *ranks = 1, *local_rank = 0, *comm = NULL;
  return false;
}
void sb_mpi_barrier(void) {}
void sb_mpi_idle_barrier(void) {}
double sb_mpi_max(double v) { return v; }
double sb_mpi_bcast(double v) { return v; }
void sb_mpi_link(size_t bytes, int reps, double *rate, double *latency_s) {
  (void)bytes, (void)reps;
  *rate = 0.0, *latency_s = 0.0;
}

#endif
