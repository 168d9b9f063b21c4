/* mpi_particles: one particle system over the ranks of an MPI job.
 *
 * Every rank makes the same calls: a column of glass beads above the ground, split into
 * `partitions` slabs (default 4; at least one a rank) over CPU devices, with the application's
 * communicator in wf_particles_desc.mpi_comm. Each rank creates only its own slabs; the halos
 * between ranks go through MPI. After 30 frames (half a second) rank 0 prints the statistics and
 * every rank checks its result against the same system run in this one process with the same
 * partition count: bitwise equal. It exits 0 only when every rank's check passes.
 *
 *     mpirun -np 2 mpi_particles [partitions]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

enum { FRAMES = 30 };

static wf_particles *column(int partitions, const MPI_Comm *comm) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = comm ? "column over the ranks" : "column in one process";
  d.substeps = 16;
  d.device_count = partitions;
  for (int i = 0; i < partitions; i++) {
    char name[16];
    snprintf(name, sizeof name, "cpu:%d", i % 4);
    if (wf_device_get(name, &d.devices[i]) != WF_OK) return NULL;
  }
  d.mpi_comm = comm; /* a pointer to an MPI_Comm; NULL: this process alone */
  wf_particles *ps = NULL;
  if (wf_particles_create(&d, &ps) != WF_OK) return NULL;
  wf_particles_emitter e = wf_particles_emitter_default(); /* glass beads (the defaults) */
  e.name = "column";
  e.radius = 0.05f, e.spacing = 0.1f, e.jitter = 0.004f, e.seed = 11;
  e.center[1] = 0.9f;
  e.half_extents[0] = e.half_extents[2] = 0.3f, e.half_extents[1] = 0.8f;
  wf_collider_desc ground = wf_collider_desc_default(); /* the plane y = 0 */
  if (wf_particles_emit(ps, &e, NULL, NULL) != WF_OK ||
      wf_particles_add_collider(ps, &ground, NULL) != WF_OK) {
    wf_particles_destroy(ps);
    return NULL;
  }
  return ps;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  int partitions = argc > 1 ? atoi(argv[1]) : 4;
  if (partitions < ranks) partitions = ranks;
  wf_init_desc init = {.cpu_devices = 4, .cpu_threads = 1};
  int ok = wf_init(&init) == WF_OK;
  wf_particles *mpi = ok ? column(partitions, &comm) : NULL;
  wf_particles *one = ok ? column(partitions, NULL) : NULL;
  ok = mpi && one && wf_particles_step_frames(mpi, FRAMES) == WF_OK &&
       wf_particles_step_frames(one, FRAMES) == WF_OK;
  uint32_t n = mpi ? wf_particles_count(mpi) : 0;
  float(*a)[4] = malloc((size_t)n * 32 + 32), (*b)[4] = malloc((size_t)n * 32 + 32);
  ok = ok && a && b && wf_particles_download(mpi, a, a + n) == WF_OK &&
       wf_particles_download(one, b, b + n) == WF_OK;
  int same = ok && memcmp(a, b, (size_t)n * 32) == 0;
  wf_particles_stats st;
  if (ok && wf_particles_stats_get(mpi, &st) == WF_OK && rank == 0)
    printf("mpi_particles: %d ranks, %d partitions, %u beads, t = %.3f s: kinetic %.4g J, "
           "potential %.4g J, top speed %.3g m/s\n",
           ranks, partitions, n, st.time, st.kinetic_energy, st.potential_energy, st.max_speed);
  if (!ok) fprintf(stderr, "mpi_particles: rank %d: %s\n", rank, wf_last_error());
  int all_same = 0;
  MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, comm);
  if (rank == 0)
    printf("mpi_particles: bitwise equal to one process on every rank: %s\n",
           all_same ? "yes" : "NO");
  free(a), free(b);
  wf_particles_destroy(mpi);
  wf_particles_destroy(one);
  wf_shutdown();
  MPI_Finalize();
  return all_same ? 0 : 1;
}
