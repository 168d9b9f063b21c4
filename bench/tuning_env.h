/* The solvers' tuning knobs from the environment: the one place they are read. The library reads
 * no environment (its tuning is desc fields, zero = automatic: wf_cloth_tuning,
 * wf_particles_tuning); the benchmarks fill those fields from these variables, so that an A/B
 * run of `weft bench` needs no rebuild:
 *
 *   WEFT_CLOTH_FAST=0|1          one_launch OFF (kernels per substep) | resident OFF (grid-stride)
 *   WEFT_CLOTH_BARRIER=grid      grid_sync ON (resident frames meet at grid.sync())
 *   WEFT_CLOTH_BLOCK=N           block N (threads a block of resident frames)
 *   WEFT_CLOTH_LANES=N           lanes N (threads a vertex, at most)
 *   WEFT_CLOTH_SMEM=0|1          smem OFF | ON
 *   WEFT_CLOTH_TILE=0|WxH        tiles OFF | ON with tile W x H
 *   WEFT_CLOTH_TILE_STEPS=N      tile_steps N
 *   WEFT_PARTICLE_MINBLOCKS=N    contact_min_blocks N (0: -1, no register cap)
 *   WEFT_PARTICLE_ONE_LAUNCH=0|1 one_launch off (-1) or on (1); unset: automatic
 *   WEFT_MPI_HALO=auto|staged|direct  mpi_halo over MPI ranks (wf_mpi_halo)
 *
 * Unset or empty: automatic. A value not of the form shown makes them print why (as
 * "weft bench <bench>: ...") and return 2; a number is passed on as it is, and creation rejects
 * one out of range (WF_ERR_INVALID names the field and its range). */
#ifndef WEFT_BENCH_TUNING_ENV_H
#define WEFT_BENCH_TUNING_ENV_H

#include "weft/cloth.h"
#include "weft/particles.h"

/** Fills *t from the WEFT_CLOTH_* variables (the fields of unset ones are left as they are).
 *  Returns 0, or 2 after printing why. */
int bench_cloth_tuning_env(const char *bench, wf_cloth_tuning *t);
/** Fills *t from WEFT_PARTICLE_MINBLOCKS and WEFT_PARTICLE_ONE_LAUNCH. Returns 0, or 2 after
 * printing why. */
int bench_particles_tuning_env(const char *bench, wf_particles_tuning *t);
/** *halo from WEFT_MPI_HALO (a wf_mpi_halo; unset: left as it is). Returns 0, or 2 after printing
 *  why. */
int bench_mpi_halo_env(const char *bench, int *halo);
/** The wf_mpi_halo named "auto", "staged" or "direct" (WEFT_MPI_HALO's values; the weft command
 *  reads them too), or -1. */
int bench_mpi_halo_of(const char *name);

#endif
