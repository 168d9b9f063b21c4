/* The start and end the tests run under mpirun share (label mpi): each rank runs every case,
 * and the program's exit status is the worst over the ranks, so a case failing on one rank fails
 * the test whichever rank's status ctest reads. */
#ifndef WEFT_TESTS_MPI_HARNESS_H
#define WEFT_TESTS_MPI_HARNESS_H

#include <mpi.h>

#include "harness.h"
#include "weft/partition.h"

static int rank_, ranks_;
static MPI_Comm world_;

/* Whether MPI may read and write the memory of the devices under test (mpi_halo DIRECT): host
 * memory always; CUDA memory only with a CUDA-aware MPI. */
static inline bool th_mpi_direct_ok(void) {
  bool aware = false;
  wf_mpi_available(&aware, NULL, 0);
  return !th_is_cuda() || aware;
}

/* MPI_Init, rank_ / ranks_ / world_ (MPI_COMM_WORLD), the cases, MPI_Finalize. */
static inline int th_mpi_main(int argc, char **argv, const th_test *tests, int n) {
  MPI_Init(&argc, &argv);
  world_ = MPI_COMM_WORLD;
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &ranks_);
  int rc = th_main(argc, argv, tests, n);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, world_);
  MPI_Finalize();
  return worst;
}

#endif
