/* weft partitions: what the particle and cloth solvers share about running over 1..N devices.
 *
 * A solver (wf_particles, wf_cloth) is created over the devices its desc names (zero devices: the
 * default device) and owns one partition per device. One device is one partition with no halo;
 * several split the solver's particles or vertices between them, each partition holding the ones
 * it owns plus ghosts (copies of other partitions' that its own read), refreshed by halo copies
 * inside the captured frame. Results do not depend on the number of partitions: every sum is
 * gathered in global-id order, so the state after N frames is bitwise that of one partition on
 * the same backend.
 *
 * Engine code that reads a solver's state between frames with its own kernels (the world's health
 * check, readback) loops over the partitions through wf_partition_view: each partition's rows on
 * its own device, with the global id of every row, so nothing travels through the host.
 */
#ifndef WEFT_PARTITION_H
#define WEFT_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Devices one solver can run over (the length of the desc's devices[] arrays). */
#define WF_MAX_DEVICES 16

/** One partition's state on its own device (wf_particles_partition_view,
 *  wf_cloth_partition_view). Work that reads it must wait for `stream` first, and `stream` must
 *  wait for that work before the solver's next frame. The buffers stay valid until the next
 *  frame is enqueued (a repartition or a capacity change may replace them). */
typedef struct wf_partition_view {
  wf_device *device; /* the partition's device */
  wf_stream *stream; /* the stream its state is written on */
  wf_buffer *pos;    /* rows of 16 bytes: xyz + radius (particles) or inverse mass (cloth) */
  wf_buffer *vel;    /* rows of 16 bytes: xyz + inverse mass (particles) or w unused (cloth) */
  wf_buffer *ids;    /* uint32 global id of each of the first `rows` rows; NULL: row i is id
                        first + i */
  uint32_t first;    /* with ids NULL: the global id of row 0 */
  uint32_t rows;     /* the rows this partition owns (the first rows of pos and vel) */
  wf_buffer *clock;  /* double simulated seconds, then uint64 substeps */
  /* the point in the world that positions in pos are relative to (world = pos + origin, in
   * double): the solver's origin (wf_cloth_origin, wf_particles_origin; every partition of a
   * solver shares it) */
  double origin[3];
} wf_partition_view;

/** How well the halo copies hide behind the substeps (wf_particles_overlap_measure,
 *  wf_cloth_overlap_measure). Times are medians of per-frame wall times on the host's clock, each
 *  frame followed by a wait. */
typedef struct wf_overlap {
  double frame_ms;         /* an ordinary frame */
  double frame_no_halo_ms; /* the same frame with the halo copies left out (wrong results) */
  double halo_ms;          /* the halo copies of one frame alone, on the same copy streams */
  double compute_ms;       /* the frame's compute, from device time stamps (the solvers' docs
                              say how each measures it): the frame with copies that cost nothing */
  /* 1 - (frame_ms - compute_ms) / halo_ms, clamped to [0, 1]: the part of the copies' time that
   * does not lengthen the frame beyond its compute. 1 when there is no halo (one partition). */
  double hidden_fraction;
  uint64_t halo_bytes_per_frame; /* bytes the halo copies move per frame, all partitions */
} wf_overlap;

/** MPI ranks (docs/multi-device.md, "MPI"): whether this libweft was built with MPI (WEFT_MPI;
 *  then wf_particles_desc.mpi_comm and wf_world_desc.mpi_comm act). *cuda_aware (may be NULL):
 *  whether its MPI takes CUDA device memory (Open MPI's MPIX_Query_cuda_support, as the
 *  library it runs with says; false where the MPI cannot say). `version` (may be NULL) gets the
 *  MPI library's version text. */
WF_API bool wf_mpi_available(bool *cuda_aware, char *version, size_t version_bytes);

/** How halos between MPI ranks travel (wf_particles_desc.mpi_halo, wf_world_desc.mpi_halo).
 *  DIRECT: MPI reads and writes the partitions' own buffers (with one segment a message, as the
 *  particles' halos are, no copy at all; several are gathered on the device first): CPU devices'
 *  memory is host memory, and CUDA device memory needs a CUDA-aware MPI (wf_mpi_available), else
 *  creation fails. STAGED: every message is copied through host memory on both sides. AUTO (0):
 *  DIRECT where the MPI can take the partition's memory (CPU devices; CUDA with a CUDA-aware MPI),
 *  else STAGED. The bytes moved are the same either way: results are bitwise equal. */
typedef enum wf_mpi_halo {
  WF_MPI_HALO_AUTO = 0,
  WF_MPI_HALO_STAGED,
  WF_MPI_HALO_DIRECT
} wf_mpi_halo;

#ifdef __cplusplus
}
#endif
#endif
