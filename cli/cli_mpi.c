/* `weft` under an MPI launcher (mpirun, mpiexec, srun): when the environment says this process is
 * one rank of several, main() initializes MPI and `weft run` hands MPI_COMM_WORLD to the world
 * (wf_world_desc.mpi_comm): every rank loads the same scene and devices, holds its block of the
 * particles' partitions; rank 0 writes the outputs, every rank its pieces of the .vtp files and
 * the checkpoints (cmd_run.c), rank r > 0 a last-good checkpoint to <dir>/ranks/<r>/.
 * Without MPI in the build, or started alone, these are no-ops and nothing changes. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

#ifdef WEFT_HAVE_MPI
#include <mpi.h>

static int ranks_ = 1, rank_ = 0;
static MPI_Comm world_;

/* Open MPI, MPICH/Hydra and PMIx launchers and Slurm set these in every rank's environment. */
static int launched_size(void) {
  const char *keys[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const char *v = getenv(keys[i]);
    if (v && atoi(v) > 1) return atoi(v);
  }
  return 1;
}

void wf_cli_mpi_start(int *argc, char ***argv) {
  if (launched_size() <= 1) return;
  MPI_Init(argc, argv);
  world_ = MPI_COMM_WORLD;
  MPI_Comm_size(world_, &ranks_);
  MPI_Comm_rank(world_, &rank_);
}

int wf_cli_mpi_end(int rc) {
  if (ranks_ <= 1) return rc;
  int worst = rc; /* one status for mpirun: the first failing rank's kind of failure */
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, world_);
  MPI_Finalize();
  return rc ? rc : worst;
}

const void *wf_cli_mpi_comm(void) { return ranks_ > 1 ? &world_ : NULL; }
int wf_cli_mpi_rank(void) { return rank_; }
int wf_cli_mpi_ranks(void) { return ranks_; }

int wf_cli_mpi_agree(int rc, const char *cmd) {
  if (ranks_ <= 1) return rc;
  int mine = rc ? rank_ : 0x7fffffff, lowest = 0x7fffffff;
  MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, world_);
  if (rc || lowest == 0x7fffffff) return rc;
  fprintf(stderr, "\n%s: rank %d: stopping: MPI rank %d failed (its message above)\n", cmd, rank_,
          lowest);
  return WF_EXIT_FAILURE;
}

bool wf_cli_mpi_any(bool flag) {
  if (ranks_ <= 1) return flag;
  int v = flag, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_LOR, world_);
  return all != 0;
}

#else

void wf_cli_mpi_start(int *argc, char ***argv) { (void)argc, (void)argv; }
int wf_cli_mpi_end(int rc) { return rc; }
const void *wf_cli_mpi_comm(void) { return NULL; }
int wf_cli_mpi_rank(void) { return 0; }
int wf_cli_mpi_ranks(void) { return 1; }
bool wf_cli_mpi_any(bool flag) { return flag; }
int wf_cli_mpi_agree(int rc, const char *cmd) { return rc; }

#endif
