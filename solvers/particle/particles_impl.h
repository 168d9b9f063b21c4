/* The wf_particles object and what its two files share. Internal to libweft (no WF_API).
 *
 * particles.c holds the public API and the frame over every partition (on the partition module,
 * solvers/partition: links, transport, capture, overlap measure, gather); repartition.c holds
 * where the particles go: slabs and cuts, the distribution from the host, the repartition on the
 * devices, the drift flags and the rerun. particles.c's opening comment explains why the result
 * does not depend on the partitioning.
 *
 * Invariants
 *  - halos[l] is the solver's side of the module's link set->links[l]: its count, launch size and
 *    index lists. Like the link, an entry keeps its buffers while it joins the same pair.
 *  - With one partition nothing here is used but parts[0].ps (every call goes straight to it).
 *  - set->mode is WFPT_FULL outside a frame's enqueue; stamping() reads it.
 */
#ifndef WEFT_PARTICLE_PARTICLES_IMPL_H
#define WEFT_PARTICLE_PARTICLES_IMPL_H

#include "particle_internal.h"
#include "solvers/partition/frame.h"
#include "solvers/partition/gather.h"
#include "solvers/partition/partition.h"

#define MAXP WFP_SPLIT_MAXP
/* Whether this process holds partition p (over MPI ranks, another rank's has no solver here). */
#define MINE(sp, p) ((sp)->parts[p].ps != NULL)
#define LEAD(sp)    ((sp)->parts[(sp)->lead].ps)
#define HIST_BYTES  (WFP_HIST_SLOTS * sizeof(wfp_hist)) /* one particle's history */
/* What a halo exchange carries a ghost: position, velocity and angular velocity. */
#define HALO_BYTES 48

/* A growable device buffer. */
typedef struct dbuf {
  wf_buffer *b;
  size_t cap;
} dbuf;

/* The ghosts partition `to` receives from partition `from` (the link set->links[l]). */
typedef struct halo {
  int from, to;
  uint32_t n;
  uint32_t launch; /* >= n: what the frame's packs, copy and unpacks cover (launch_for) */
  dbuf src_idx;    /* on from's device: n, then n from-local indices in global-id order */
  dbuf dst_idx;    /* on to's device: n, then the n to-local ghost slots */
} halo;

/* What partition q sends partition d at a repartition, on q's device: the indices of the
 * particles (q-local, global-id order) and their data. */
typedef struct outbox {
  dbuf idx, pos, vel, gid, mat, omega, hist;
} outbox;

typedef struct part {
  wfp_part *ps;
  wf_device *dev;
  uint32_t n_local, n_owned;
  uint32_t launch; /* the solver's launch size (wfp_part_set_launch), see launch_for */
  float lo, hi;    /* slab along the axis */
  dbuf anchor;     /* on the device: the axis coordinate of every owned particle at the
                    * repartition; NaN for a ghost */
  wf_buffer *flag; /* on the device, a wfp_drift_ctl: the flag set when a particle moved more
                    * than skin/2, the limit and the axis */
  /* the repartition on the device (repartition.c) */
  dbuf tag, counts, snap_pos, snap_vel, snap_omega, snap_hist;
  dbuf stamps; /* the device clock (ns) before and after each substep (stamping) */
  /* the partition view (wf_particles_partition_view): the owned rows gathered on the device */
  dbuf view_idx, view_pos, view_vel, view_gid, view_mat;
  dbuf in_pos, in_vel, in_gid, in_mat, in_omega, in_hist; /* received particles, by sender */
  dbuf keys, vals, keys_out, vals_out, sort_temp, select_temp;
  outbox out[MAXP];
} part;

struct wf_particles {
  char name[64];
  wf_particles_desc desc;
  int np;
  part parts[MAXP]; /* over MPI ranks, another rank's partition has no ps (and no buffers) */
  /* The first partition this process holds: 0, but over MPI ranks (desc.mpi_comm) the first of
   * this rank's block. Before the first distribution (and after particles are added) it holds
   * the whole system; over ranks every rank's lead does, the same (every rank makes the same
   * calls), so the master copy is the same on every rank. */
  int lead;
  bool ranks;       /* over MPI ranks (desc.mpi_comm; repartition.c: the migration over ranks) */
  wfpt_set *set;    /* the partitions' streams, copy streams and links */
  wfpt_frame frame; /* the frame over every partition, its graph and key */
  halo *halos;      /* [cap_halos], halos[l] beside set->links[l] */
  int cap_halos;
  uint32_t count;
  /* the point in the world every partition's positions are relative to (docs/precision.md);
   * fixed: given, or picked at the first particles */
  double origin[3];
  bool origin_fixed;
  bool distributed; /* false: every particle is in partition 0, local = global order */
  /* master state in global-id order, as of the last repartition (the snapshot a rerun starts
   * from) and its clock */
  wfp_f4 *pos, *vel;
  uint16_t *mat;
  wfp_f4 *omega; /* the granular state (WFP_HIST_SLOTS history slots a particle) */
  wfp_hist *hist;
  /* the rows the master copy has room for (wf_particles_info.host_bytes). Over MPI ranks it is
   * held only while the system is not distributed (from adding particles, set_state or a
   * granular state to the next frame's distribution), then freed (wfp_master_release): a rank
   * holds its share on its devices, and the reads gather only what they return. */
  uint32_t master_n;
  double snap_time;
  uint64_t snap_substeps;
  int frames_since; /* frames run since the last repartition */
  bool exact;       /* no particle outran the skin in those frames (checked since) */
  bool forces_in_0; /* the last step ran in partition 0 alone (step_substeps): its forces only */
  /* Over MPI ranks the measuring of the collider forces is agreed, not switched by each rank:
   * forces_want is this rank's last word (wf_particles_measure_collider_forces), and the next
   * step turns measuring on on every rank when any rank wants it (wfp_forces_agree). The frames
   * then sum every rank's tables into force_sum (an allreduce inside the step, which every rank
   * makes), so reading a force is not a collective and no rank can leave another waiting. */
  /* Over MPI ranks: the global ids of the particles this rank's partitions owned at the last
   * gather of the state (gather_ranks, ascending), for wf_particles_owned_ids; owned_valid
   * false from a repartition until the next gather. */
  uint32_t *owned_ids, n_owned_ids;
  bool owned_valid;
  bool forces_want;
  unsigned long long force_sum[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS];
  double force_seconds;
  int axis;
  bool have_cuts;
  float cuts[MAXP];  /* np - 1 slab boundaries */
  float skin;        /* in use */
  float skin_factor; /* doubled by every rerun */
  float cell;        /* the grid's cell size, fixed for every partition */
  float rmax;        /* the largest radius */
  float vmax;        /* the largest speed at the last repartition */
  wf_particles_info info;
  /* wf_particles_copy_state of several partitions: the gather on gather_stream's device, and
   * rows in global-id order when the destination is not two buffers at offset 0 */
  wfpt_gather *gather;
  wf_stream *gather_stream;
  uint32_t gather_rows;
  dbuf gather_pos, gather_vel;
};

wf_status wfp_fail_gpu(const char *name, wf_status st, const char *what);

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return wfp_fail_gpu(sp->name, st_, what);                                    \
  } while (0)

wf_status wfp_dbuf_reserve(wf_particles *sp, dbuf *d, wf_device *dev, wf_stream *s, size_t bytes);
void wfp_dbuf_free(dbuf *d, wf_stream *s);

/* One particle's row moved between MPI ranks (the gather of the state, the repartition). */
typedef struct wfp_rank_row {
  uint32_t gid;
  uint16_t mat, pad;
  wfp_f4 pos, vel, omega;
  wfp_hist hist[WFP_HIST_SLOTS];
} wfp_rank_row;

/* particles.c: over MPI ranks, this rank's partitions' owned rows (*out malloc'ed, *n rows; the
 * caller frees it, also on failure). Not a collective. */
wf_status wfp_ranks_local_rows(wf_particles *sp, wfp_rank_row **out, size_t *n);

/* particles.c: the frame */
wf_status wfp_launch_frames(wf_particles *sp, int frames);
/* Over MPI ranks, before stepping: the measuring of the collider forces agreed (forces_want). */
wf_status wfp_forces_agree(wf_particles *sp);
/* Whether the frame being enqueued times every partition's substeps (more than one, and
 * WF_BALANCE_TIME or the overlap measure's WFPT_COMPUTE frame). */
bool wfp_stamping(const wf_particles *sp);
/* The stamped frame that was waited for: partition p's substep k in before and after
 * [p * substeps + k]: before its ghosts come in, then the rest with the unpacks and packs (ms;
 * the stamps of one device's clock, so no clocks are compared). *ok false when a partition has
 * no stamps or they are not usable; the status is that of the downloads. */
wf_status wfp_stamped_times(wf_particles *sp, double *before, double *after, bool *ok);
/* The system's clock (partition 0's; every partition keeps the same one), after a wait. */
wf_status wfp_clock_get(wf_particles *sp, double *time, uint64_t *substeps);

/* repartition.c */
/* Between frames: the first distribution from the master copy on the host; later ones on the
 * devices. The clock at the end is the snapshot's. */
wf_status wfp_repartition(wf_particles *sp);
/* Makes the partitions' state exact: while a particle moved further than the skin allowed since
 * the last repartition, runs the frames since then again from its snapshot with twice the skin. */
wf_status wfp_rerun_if_moved(wf_particles *sp);
/* Every partition back to the snapshot of the last repartition, state and clock. */
wf_status wfp_restore(wf_particles *sp);
/* The indices i < pt->n_local on pt's stream of the particles whose tag has `bit` (bit 0: the
 * owned ones, anchor not NaN) at out[0..), or with `counted` their count at out[0] and the
 * indices from out[1] (a link's lists). */
/* particles.c: over MPI ranks, the master copy freed once the system is distributed (nothing in
 * one process, which keeps it). */
void wfp_master_release(wf_particles *sp);
/* particles.c: the columns of the whole state wanted (WFP_COL_*) in global-id order into the
 * arrays given (NULL: gathered, not kept), after the frames are made exact: from the master copy,
 * or over distributed ranks gathered a column at a time, on every rank (root < 0) or on rank
 * `root` alone (the others' arrays are not written). A collective over ranks: `cols` and `root`
 * (not which arrays are NULL) say which collectives it makes. */
enum { WFP_COL_POS = 1, WFP_COL_VEL = 2, WFP_COL_MAT = 4, WFP_COL_OMEGA = 8, WFP_COL_HIST = 16 };
wf_status wfp_state_columns(wf_particles *sp, unsigned cols, int root, wfp_f4 *pos, wfp_f4 *vel,
                            uint16_t *mat, wfp_f4 *omega, wfp_hist *hist);
wf_status wfp_select_local(wf_particles *sp, part *pt, uint32_t bit, dbuf *out, bool counted);

#endif
