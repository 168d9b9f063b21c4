/* weft particle solver: granular matter with DEM or XPBD contacts, on one or more CPU or CUDA
 * devices.
 *
 * Use: fill a wf_particles_desc from wf_particles_desc_default(), name the devices (none: the
 * default device), create the solver, add materials, emitters (or explicit particles) and
 * colliders, then step whole frames.
 *
 *     wf_particles_desc d = wf_particles_desc_default();
 *     d.capacity = 100000;                                       // optional: grows as needed
 *     d.devices[0] = dev, d.device_count = 1;                    // optional: more split the work
 *     wf_particles *ps;
 *     wf_particles_create(&d, &ps);
 *     wf_particles_emitter e = wf_particles_emitter_default();   // a box of particles
 *     wf_particles_emit(ps, &e, NULL, NULL);
 *     wf_collider_desc ground = wf_collider_desc_default();     // the plane y = 0
 *     wf_particles_add_collider(ps, &ground, NULL);
 *     wf_particles_step_frames(ps, 60);                          // one second
 *     wf_particles_download(ps, pos, vel);
 *
 * A substep (all on the solver's stream, nothing waits for the host):
 *
 *     pos,vel ─► KEYS ─► SORT ─► CELLS ─► REORDER ─► CONTACTS+INTEGRATE ─► pos,vel ─► ADVANCE
 *     (local    cell     stable   cell     sorted      gather 27 cells, DEM      scattered   clock
 *      order)   key      by key   starts   copies      or XPBD, colliders        back
 *
 * The grid is rebuilt every substep rather than kept as a Verlet list: a neighbour list of ~24
 * entries would cost ~96 bytes per particle, and `weft bench particles --profile` shows the
 * rebuild is a minority of the substep.
 *
 * Device memory per particle (wf_particles_device_bytes; 380 B, about 200M particles on 80 GB):
 *     state        position + radius 16, velocity + inverse mass 16, global id 4, material 2
 *     granular     angular velocity 16, contact history 8 slots x 32 (tangential spring 12,
 *                  partner's id 4, rolling spring 12, spare 4) = 256
 *     sorted       the sorted copies of position, velocity, angular velocity (16 each), material 2
 *     ordering     cell key, arrival in the cell (then the sorted index, in the same array),
 *                  arrival order (4 each)
 *     grid         cell start and cell count (4 each, one entry per particle of capacity)
 * The granular state is two thirds of it: 6 history slots would fit 316 B (more contacts then go
 * without history in dense packings: each is counted in stats.history_overflows).
 *
 * The grid is a periodic box of cells refitted to the particles between frames
 * (no recapture); it has no fixed per-cell capacity, so nothing can overflow or be truncated.
 * Adding particles beyond the capacity grows every buffer (x1.5) and recaptures the frame.
 *
 * A frame is K substeps, captured once into a graph and replayed (desc.no_graph: enqueued one by
 * one, for debugging; both give bit-identical states). Parameters (gravity, dt, damping, colliders)
 * live in a device-side block, so changing them needs no recapture; adding particles does.
 *
 * Particles are kept in global-id order (id = the order in which they were added). Each particle
 * gathers its neighbours in a fixed order and writes only itself, so runs are bitwise
 * reproducible, and the CPU and CUDA backends agree bit for bit.
 *
 * Several devices (wf_particles_desc.devices): the solver owns one partition per device, each a
 * slab of space along the longest axis of the particles' bounds, balanced by particle count (or
 * measured time). A partition holds the particles it owns and ghosts: copies of the other
 * partitions' particles within the contact range plus a skin of its slab, sent to it by
 * device-to-device (peer) copies after every substep. Ownership, ghosts and slab boundaries are
 * recomputed between frames (a repartition). Every particle gathers the same neighbours in the
 * same order as on one device, so the state after N frames is bitwise that of one partition on
 * the same backend, for any number of partitions; a substep that finds a particle moved further
 * than half the skin since the last repartition makes the frames since then run again with a
 * wider skin. A frame of all partitions (substeps and halo copies, each partition with a copy
 * stream of its own) is one captured graph launched with one call. All devices must be of one
 * kind (all CUDA or all CPU); a device may appear more than once. One device is one partition
 * with no halo and no repartition: every call goes straight to it.
 *
 * Engine code that reads the state between frames with its own kernels loops over the partitions
 * (wf_particles_partition_count, wf_particles_partition_view: each partition's owned rows on its
 * own device, with their global ids; weft/partition.h); wf_particles_copy_state gathers them on
 * the destination's device.
 *
 * Errors: functions return a wf_status; on failure wf_last_error() says which object and field
 * were wrong ("emitter 'pile': spacing 0.15 is less than 2 * radius 0.2: particles would
 * overlap"). The solver never prints.
 */
#ifndef WEFT_PARTICLES_H
#define WEFT_PARTICLES_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/collider.h"
#include "weft/export.h"
#include "weft/gpu.h"
#include "weft/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A particle solver: particles, materials and colliders over one or more devices (one partition
 *  each), running on its own streams or, on one device, on wf_particles_desc.stream. Created by
 *  wf_particles_create. */
typedef struct wf_particles wf_particles;

/** Contact models (wf_particles_desc.contact_model), one per solver.
 *
 *  WF_CONTACT_DEM: the linear spring-dashpot: normal force kn δ - cn vn (kn = material
 *  stiffness), a tangential spring kt = tangential_ratio · kn with dashpot and contact history
 *  (static friction, Cundall-Strack), rolling resistance, cohesion, and rotation.
 *  WF_CONTACT_HERTZ: the same with the Hertz-Mindlin springs from the materials' Young's modulus
 *  and Poisson's ratio (normal 4/3 E* sqrt(R*) δ^3/2, tangential St = 8 G* sqrt(R* δ)) and the
 *  dashpots of Tsuji et al. 1992 as LIGGGHTS writes them.
 *  Both are explicit: a substep needs to be well below the contact duration
 *  (wf_particles_stability says how many substeps).
 *  WF_CONTACT_XPBD: compliant position constraints (compliance 1/stiffness) for the normal
 *  contact, solved once per substep (stable at large substeps; particle pairs are inelastic,
 *  colliders have their restitution). Its particles rotate (I = 2/5 m r²), with friction and
 *  rolling resistance on velocities after the position solve (docs/scenes.md): per contact, the
 *  tangential impulse P at the contact point and the rolling impulse L on the relative rotation
 *  are solved together to stop the slip and the rotation while |P| <= static_friction Pn and
 *  |L| <= rolling_friction R* Pn (Pn: the contact's normal impulse in the substep); beyond the
 *  rolling limit L stays at it; beyond the static limit |P| = friction Pn. No contact history.
 *
 *  The granular model of the DEM and Hertz contacts (all forces act at the contact point of
 *  solid spheres, I = 2/5 m r²), per contact of particle i with j (a particle, or a collider:
 *  a non-rotating wall of i's own material with the collider's stiffness, friction and
 *  restitution), n the unit normal towards i, δ the overlap, m* = mi mj / (mi + mj) (a collider:
 *  mi), R* = ri rj / (ri + rj) (a collider: ri), E* = 1 / ((1-νi²)/Ei + (1-νj²)/Ej),
 *  G* = 1 / (2(2-νi)(1+νi)/Ei + 2(2-νj)(1+νj)/Ej), the other coefficients the means of the two
 *  materials':
 *
 *    restitution e → ζ = -ln e / sqrt(π² + ln² e)      (e = 0: ζ = 1, critical: no rebound;
 *                                                        e = 1: ζ = 0, elastic)
 *    linear  fn = kn δ - (2 ζ sqrt(kn m*) + c) vn       (c: material damping, N·s/m)
 *            kt = tangential_ratio kn,  ct = 2 ζ sqrt(kt m*)
 *            The coefficient of restitution of a normal impact is exactly e
 *            (e = exp(-π ζ / sqrt(1 - ζ²))), duration π / sqrt(kn/m* (1 - ζ²)).
 *    Hertz   Sn = 2 E* sqrt(R* δ),  fn = 2/3 Sn δ - (2 sqrt(5/6) ζ sqrt(Sn m*) + c) vn
 *            St = 8 G* sqrt(R* δ),  ct = 2 sqrt(5/6) ζ sqrt(St m*)
 *            Elastic duration 2.87 (m*² / (R* E*² v))^(1/5) at impact speed v. The restitution
 *            does not depend on the speed and is e (0.499 for e = 0.5 in the tests, against an
 *            independent RK4 integration of the same law).
 *    tangential  Ft = -kt ξ - (ct + tangential) vt, ξ the tangential spring's displacement (the
 *            contact history), rotated into the tangent plane every substep. Sticking while
 *            |Ft| <= static_friction fn; beyond, sliding at |Ft| = friction fn with ξ reset to
 *            the spring carrying that force (Coulomb, with static and dynamic coefficients).
 *    rolling the elastic-plastic spring-dashpot of Ai et al. 2011 ("model C"): a torque spring
 *            kr = 2.25 kn μr² R*² (Hertz: kn = Sn) on the relative rotation (twist included: the
 *            only torsional resistance), limited to μr R* fn, with a dashpot at 0.3 of critical
 *            while below the limit (spring and dashpot together within the limit). Chosen over a
 *            constant torque ("model A") because it holds a sphere at rest on a slope up to
 *            tan θ = μr and lets a heap stand still, without the torque flipping sign each
 *            substep; at full mobilization it is the constant torque: a rolling sphere slows at
 *            5/7 μr g.
 *    torque on i: (-ri n) × Ft + Mr (the lever is the full radius).
 *
 *  The normal force is not clamped at zero (near the end of a damped contact it pulls a little)
 *  so that the linear restitution is exact; the friction and rolling caps use max(fn, 0).
 *
 *  Contact history: each particle keeps 8 contacts (WFP_HIST_SLOTS), keyed by the partner's
 *  global id (or the collider's index); a contact beyond that gets no history (no static
 *  friction or rolling spring for it) and is counted in wf_particles_stats.history_overflows.
 *
 *  What the model does not do: no plastic or adhesive (JKR) contact, no torsional friction of its
 *  own (the rolling spring resists twist with the same μr), no non-spherical shapes, no collider
 *  rotation (kinematic colliders translate), no heat; the lever of the tangential force is the
 *  radius, not the radius less half the overlap. */
enum { WF_CONTACT_DEM = 0, WF_CONTACT_XPBD = 1, WF_CONTACT_HERTZ = 2 };

/** How a solver over several devices balances its slabs (wf_particles_desc.balance). */
typedef enum wf_particles_balance {
  /* equal particle counts: rebalanced when max/mean count - 1 exceeds the imbalance */
  WF_BALANCE_COUNT = 0,
  /* equal compute time: each partition's substeps are timed on its device in every frame, and
   * the slabs are rebalanced when max/mean time - 1 exceeds the imbalance, with each
   * partition's particles weighted by its time per particle (for work that differs across the
   * scene, e.g. a deep pile's compressed bottom); counts until a frame was timed */
  WF_BALANCE_TIME = 1
} wf_particles_balance;

/** Solver settings. Start from wf_particles_desc_default(). */
/** Tuning of the particle kernels, for measurements and A/B runs. All zero (the default) is the
 *  automatic choice, the one to keep unless a measurement says otherwise; results do not depend
 *  on it. A value out of range fails creation with WF_ERR_INVALID naming the field. */
typedef struct wf_particles_tuning {
  int contact_min_blocks; /* CUDA: blocks of 256 threads a multiprocessor should hold at once in
                             the contact kernels, which caps their registers: 3 to 8; -1: no cap
                             (the compiler's choice, ~110 registers: two blocks); 0: automatic,
                             for DEM and Hertz 3 when a launch has more blocks than two a
                             multiprocessor, else no cap (XPBD: no cap). The CPU backend ignores
                             it. */
  int one_launch;         /* a frame's substeps in one launch (one partition, no coupled
                             solvers; CUDA, or the CPU running the stages on one thread: for
                             tests): 1 on, -1 off (a launch a stage of every substep), 0
                             automatic: off for now, the one launch being slower than the
                             stages on an H200 at 65k and 262k grains (part.c). The same bits
                             either way. */
} wf_particles_tuning;

typedef struct wf_particles_desc {
  const char *name;  /* for messages; default "particles" */
  uint32_t capacity; /* particles to allocate for at first (grows by 1.5x when exceeded); 0: 1024 */
  int substeps;      /* per frame; default 64 */
  float frame_dt;    /* seconds per frame; default 1/60 */
  float gravity[3];  /* m/s²; default (0, -9.81, 0) */
  float damping;     /* global velocity damping, 1/s; default 0 */
  float cell_size;   /* grid cell; 0: twice the largest particle radius (the contact range) */
  int contact_model; /* WF_CONTACT_DEM (default), WF_CONTACT_HERTZ or WF_CONTACT_XPBD */
  float relaxation;  /* XPBD: over-relaxation of the averaged Jacobi step, (0, 2); default 1.5 */
  bool no_graph;     /* enqueue substeps one by one instead of replaying a captured frame */
  wf_stream *stream; /* one device: stream to run on (not owned); NULL: the solver creates its
                        own (several devices: every partition has its own) */
  wf_device *devices[WF_MAX_DEVICES]; /* one partition each; none (or devices[0] NULL): the
                                         stream's device when a stream is given, else the
                                         default device (wf_device_default) */
  int device_count;                   /* 0: one, as devices[0] NULL says */
  /* several devices only (one device has no halo and never repartitions): */
  float skin;                   /* halo width beyond the contact range, m; 0: from the fastest
                                   particle (3 x the distance it covers in a frame under gravity) */
  float imbalance;              /* re-balance the slabs when max/mean count (or time) - 1 exceeds
                                   this; 0: 0.01 */
  wf_particles_balance balance; /* WF_BALANCE_COUNT (default) or WF_BALANCE_TIME */
  int repartition_frames;       /* frames between repartitions; 0: 1 (each one may recapture the
                                   frame graph) */
  wf_particles_tuning tuning;   /* kernel tuning; all zero (the default): automatic */
  /* The particles' origin in the world, m (docs/precision.md): the solver keeps every position
   * relative to it, in float, so that a scene behaves the same wherever it sits. origin_given
   * false (the default): the centre of the first particles added (an emitter's centre, or the
   * box of wf_particles_add's positions), rounded to whole metres; true: `origin` as given
   * (finite). Fixed from then on; wf_particles_origin reports it. */
  bool origin_given;
  double origin[3];
  /* MPI ranks (docs/multi-device.md, "MPI"): NULL, one process. Else a pointer to an MPI_Comm
   * (the application's, after MPI_Init; weft duplicates it, so its messages never meet the
   * caller's). The device_count partitions are then shared by the communicator's ranks in
   * blocks (partition p is rank p * ranks / device_count's; device_count >= ranks), each rank
   * creating only its own partitions, on devices[p]; halos between ranks go through MPI. Every
   * rank makes the same calls with the same arguments (the same scene), and the result is
   * bitwise that of one process with the same device_count. A libweft built without MPI refuses
   * it (WF_ERR_UNSUPPORTED). */
  const void *mpi_comm;
  /* with mpi_comm: how halos between ranks travel (wf_mpi_halo; 0: AUTO, direct where the MPI
   * can take the devices' memory) */
  int mpi_halo;
} wf_particles_desc;

/** Contact material. Start from wf_particle_material_default(): glass beads (soda-lime glass:
 *  Poisson 0.25, friction 0.5, rolling 0.01, restitution
 *  0.9), with the stiffness reduced as is standard DEM practice: real glass has E = 63 GPa, which
 *  would need ~17x the substeps of the default E = 50 MPa (the Hertz contact duration goes as
 *  E^(-2/5)); the default linear kn = 1e4 N/m is the solver's historical value. Glass's density
 *  (2500 kg/m³) is the emitter's to set (wf_particles_emitter.density).
 *  Pair values are the means of the two materials' (the elastic moduli combine as E*, G*: see
 *  WF_CONTACT_*). Validated when added: a bad field fails naming the material and the field. */
typedef struct wf_particle_material {
  float stiffness;        /* linear normal spring kn, N/m (WF_CONTACT_DEM; XPBD: 1/compliance);
                             default 1e4 */
  float damping;          /* extra normal dashpot c, N·s/m (particle pairs and colliders);
                             default 0 */
  float restitution;      /* normal coefficient of restitution e in [0, 1]: the dashpot ratio
                             ζ = -ln e / sqrt(π² + ln² e) (see WF_CONTACT_*); 0: no rebound
                             (critical damping), 1: elastic; default 0.9 */
  float friction;         /* sliding (dynamic) Coulomb coefficient μ; default 0.5 */
  float tangential;       /* extra tangential dashpot, N·s/m; default 0 */
  float cohesion;         /* DEM: attractive force per contact, N; default 0 */
  float static_friction;  /* static coefficient μs (>= friction); 0: the same as friction */
  float rolling_friction; /* rolling resistance μr (dimensionless: the torque limit is
                             μr R* fn); default 0.01; 0: none */
  float young;            /* Young's modulus E, Pa (WF_CONTACT_HERTZ); default 5e7 (reduced:
                             see above) */
  float poisson;          /* Poisson's ratio ν in [0, 0.5); default 0.25 */
  float tangential_ratio; /* WF_CONTACT_DEM: kt / kn, > 0; 0: Mindlin's 2(1-ν)/(2-ν) (6/7 at
                             ν = 0.25); Hertz uses Mindlin's St always */
} wf_particle_material;

/** Shapes of an emitter's region (wf_particles_emitter.shape). */
enum { WF_EMIT_BOX = 0, WF_EMIT_SPHERE = 1 };

/** A block of particles on a cubic lattice. Start from wf_particles_emitter_default(). */
typedef struct wf_particles_emitter {
  const char *name;      /* for messages; default "emitter" */
  int shape;             /* WF_EMIT_BOX (default) or WF_EMIT_SPHERE */
  float center[3];       /* default (0, 1, 0) */
  float half_extents[3]; /* box; default 0.5 each */
  float sphere_radius;   /* sphere region; default 0.5 */
  float radius;          /* particle radius; default 0.05 */
  float spacing;         /* lattice spacing, at least 2 * radius; default 0.1 */
  float jitter;          /* random offset per axis in [-jitter, jitter], < spacing / 2; default 0 */
  uint64_t seed;         /* jitter seed; each particle's offset depends on (seed, global id) only */
  float velocity[3];     /* initial velocity */
  float density;         /* kg/m³ (mass = density · 4/3 π r³); default 1000 */
  float mass;            /* > 0: the mass of each particle, overriding density */
  bool kinematic;        /* inverse mass 0: moves with its velocity, ignores forces */
  uint32_t material;     /* material index; default 0 (the solver's default material) */
} wf_particles_emitter;

/** Collider shapes (wf_collider_desc.type). */
enum {
  WF_COLLIDER_PLANE = 0,
  WF_COLLIDER_SPHERE = 1,
  WF_COLLIDER_BOX = 2,
  WF_COLLIDER_CAPSULE = 3,
  WF_COLLIDER_MESH = 4 /* a triangle mesh (weft/collider.h) */
};

/** A static or moving collider (weft/collider.h: meshes, motion). Start from
 *  wf_collider_desc_default(). */
typedef struct wf_collider_desc {
  const char *name;      /* for messages; default "collider" */
  int type;              /* default WF_COLLIDER_PLANE */
  float normal[3];       /* plane: unit normal, solid below; default (0, 1, 0) */
  float offset;          /* plane: the points with dot(normal, x) = offset; default 0 */
  float center[3];       /* sphere, box */
  float radius;          /* sphere, capsule */
  float half_extents[3]; /* box (axis aligned) */
  float p0[3], p1[3];    /* capsule segment ends */
  float velocity[3];     /* kinematic motion; zero: static */
  float friction;        /* sliding Coulomb μ against particles; default 0.5 */
  float restitution;     /* normal coefficient of restitution e in [0, 1] against particles,
                            defined as a material's (0: no rebound, 1: elastic); default 0.5 */
  float stiffness;       /* DEM (linear): N/m; 0: the particle material's stiffness */
  float static_friction; /* static μs; 0: the same as friction */
  /* meshes */
  const wf_collider_mesh *mesh; /* WF_COLLIDER_MESH; the solver copies it */
  float thickness; /* mesh, m: 0 = a closed solid; > 0 = a shell (open or closed) this thick */
  /* motion (weft/collider.h): p + R (x - pivot) */
  float pivot[3];              /* the point it turns about, at rest; default origin */
  float angular_velocity[3];   /* rad/s about the pivot (world frame); zero: no turning */
  const wf_collider_key *keys; /* key_count keyframes (copied); replace velocity and turning */
  uint32_t key_count;
  float active_from, active_until; /* s: exists for from <= t < until; until 0: for ever */
} wf_collider_desc;

/** Stages of a substep, for wf_particles_profile. */
enum {
  WF_PSTAGE_KEYS,     /* cell keys, counts per cell and extent */
  WF_PSTAGE_SCAN,     /* the cell start table: an exclusive sum of the counts */
  WF_PSTAGE_SCATTER,  /* particles into their cells' ranges */
  WF_PSTAGE_PLACE,    /* each cell in global-id order, and the sorted copies */
  WF_PSTAGE_CONTACTS, /* contacts, colliders, integration */
  WF_PSTAGE_COUNT
};

/** Parameters that can change between frames without recapture. */
typedef struct wf_particles_params {
  float frame_dt;   /* seconds per frame */
  float gravity[3]; /* m/s² */
  float damping;    /* global velocity damping, 1/s */
} wf_particles_params;

/** Statistics of the particle state (wf_particles_stats_get). Its sums are exact, rounded once:
 *  the same bits for any number of partitions and MPI ranks. */
typedef struct wf_particles_stats {
  uint32_t count;             /* particles */
  double kinetic_energy;      /* Σ ½ m v² over dynamic particles, J */
  double rotational_energy;   /* Σ ½ I ω² over dynamic particles (I = 2/5 m r²), J */
  uint64_t history_overflows; /* contacts computed without a history slot (all taken), since the
                                 solver was created (one partition: its count; several: the sum
                                 over partitions, ghosts included, so it depends on the split) */
  double momentum[3];         /* Σ m v over dynamic particles */
  double max_speed;           /* m/s, over all particles */
  double time;                /* simulated seconds */
  uint64_t substeps;          /* substeps run so far */
  double potential_energy;    /* Σ −m g·x over dynamic particles (zero at the origin), J */
  double elastic_energy;      /* contact springs, particle pairs and colliders, J
                                 (wf_particles_energy.elastic) */
} wf_particles_stats;

/** The energies of the particles' state (wf_particles_energy_get), J. Each particle's terms are
 *  computed on the device (over MPI ranks, on each rank's own partitions), then summed exactly
 *  and rounded once: bitwise the same for any number of partitions and ranks and on the CPU and
 *  CUDA backends. */
typedef struct wf_particles_energy {
  double kinetic;    /* Σ ½ m v² over dynamic particles (inverse mass > 0) */
  double potential;  /* Σ −m g·x over dynamic particles: zero at the origin, so with gravity
                        (0, −g, 0) it is Σ m g y, the height above y = 0 */
  double contact;    /* the springs of particle–particle contacts, half to each particle (a pair
                        across two ranges gives each range half; the history springs of a pair
                        with a kinematic particle go to the dynamic one): the normal spring's ½ k δ² (δ
                        the overlap, k the mean of the two materials' stiffness; WF_CONTACT_HERTZ:
                        8/15 E* sqrt(R*) δ^(5/2) = 2/5 F δ), and the tangential spring's
                        ½ kt |ξ|² and the rolling spring's |M|² / (2 kr) from the contact history */
  double collider;   /* the same springs of particle–collider contacts (k the collider's
                        stiffness, or the particle material's) */
  double elastic;    /* contact + collider */
  double total;      /* kinetic + rotational + potential + elastic */
  double rotational; /* Σ ½ I ω² over dynamic particles (I = 2/5 m r²) */
  double shear;      /* the tangential and rolling springs' part of elastic */
} wf_particles_energy;

/** Per-stage device time of substeps run one by one with events between the stages. */
typedef struct wf_particles_profile_result {
  double stage_ms[WF_PSTAGE_COUNT]; /* per substep */
  double substep_ms;                /* sum of the stages, per substep */
  int substeps;                     /* substeps measured */
} wf_particles_profile_result;

/** The default solver settings: DEM contacts, 64 substeps at 60 frames/s, Earth gravity. */
WF_API wf_particles_desc wf_particles_desc_default(void);
/** The default contact material (the defaults in wf_particle_material's field comments). */
WF_API wf_particle_material wf_particle_material_default(void);
/** The default emitter: a 1 m box of particles of radius 0.05 m centred at (0, 1, 0). */
WF_API wf_particles_emitter wf_particles_emitter_default(void);
/** The default collider: the ground plane y = 0. */
WF_API wf_collider_desc wf_collider_desc_default(void);
/** The dashpot ratio ζ that gives restitution e for a linear spring-dashpot contact. */
WF_API double wf_particles_zeta_for_restitution(double e);

/** Creates a particle solver with no particles over desc->devices (1..WF_MAX_DEVICES; none: the
 *  default device), one partition each (material 0 holds the defaults). */
WF_API wf_status wf_particles_create(const wf_particles_desc *desc, wf_particles **out);
/** Waits for every partition's work and frees everything. NULL is ignored. */
WF_API void wf_particles_destroy(wf_particles *ps);

/** Appends a material; *index (may be NULL) receives its index. Material 0 exists from the start
 *  (the defaults). */
WF_API wf_status wf_particles_add_material(wf_particles *ps, const wf_particle_material *m,
                                           uint32_t *index);
/** Replaces material `index` (0: the default material). No recapture. */
WF_API wf_status wf_particles_set_material(wf_particles *ps, uint32_t index,
                                           const wf_particle_material *m);
/** Adds the emitter's particles; *first (global id of the first) and *count may be NULL. */
WF_API wf_status wf_particles_emit(wf_particles *ps, const wf_particles_emitter *e, uint32_t *first,
                                   uint32_t *count);
/** Adds n particles: pos[i] = xyz + radius, vel[i] = xyz + inverse mass (0: kinematic). */
WF_API wf_status wf_particles_add(wf_particles *ps, uint32_t n, const float (*pos)[4],
                                  const float (*vel)[4], uint32_t material, uint32_t *first);
/** Adds n particles as wf_particles_add does, each born at time birth[i] (simulated seconds,
 *  >= 0; birth NULL: all at once): until the first substep that starts at or after its birth a
 *  particle travels with its velocity, untouched by gravity, contacts and colliders, and touches
 *  nothing (a continuous emitter places it on a feed line that reaches its inlet at its birth).
 *  The count, and so the captured frame, stays as it is while particles are born, on any number
 *  of partitions. A particle not born yet reports a negative inverse mass (vel.w, downloads,
 *  checkpoints); its birth time is the w of its angular velocity (wf_particles_download_omega),
 *  which the granular state carries, so a checkpoint resumes the births bitwise. Particles born
 *  later must be dynamic (inverse mass > 0). */
WF_API wf_status wf_particles_add_timed(wf_particles *ps, uint32_t n, const float (*pos)[4],
                                        const float (*vel)[4], const float *birth,
                                        uint32_t material, uint32_t *first);
/** wf_particles_add_timed with the positions (xyz) relative to `origin`, a point of the world in
 *  double, instead of the world's origin: each is moved into the solver's frame as origin + pos
 *  - wf_particles_origin in double and rounded to float once (taken as it is when `origin` is
 *  the solver's). A solver whose origin is not fixed yet (no particles, no origin_given) takes
 *  `origin` as its own; give whole metres, so that a scene moved by whole metres keeps its bits
 *  (docs/precision.md). The scene's emitters add their particles so. */
WF_API wf_status wf_particles_add_relative(wf_particles *ps, const double origin[3], uint32_t n,
                                           const float (*pos)[4], const float (*vel)[4],
                                           const float *birth, uint32_t material, uint32_t *first);
/** Sets the birth times of particles [first, first + n) (birth[i], s; see
 *  wf_particles_add_timed) without touching anything else: a restore from a checkpoint that lacks
 *  the granular state (which carries them) gives them back. Waits for the solver. */
WF_API wf_status wf_particles_births_set(wf_particles *ps, uint32_t first, uint32_t n,
                                         const float *birth);
/** Adds a collider (at most 64); *index (may be NULL) receives its index. */
WF_API wf_status wf_particles_add_collider(wf_particles *ps, const wf_collider_desc *c,
                                           uint32_t *index);
/** Sets collider `index`'s pose and velocities from pose->time on (weft/collider.h), replacing its
 *  keyframes or constant motion, in every partition's device-side table. Call between frames: the
 *  frames enqueued after it see it, without recapture. */
WF_API wf_status wf_particles_set_collider_pose(wf_particles *ps, uint32_t index,
                                                const wf_collider_pose *pose);
/** The force (N) and torque (N·m) the particles exerted on collider `index` over the last frame
 *  (or run of wf_particles_step_substeps), averaged over it: the impulse the collider received
 *  from every contact, summed over the frame's substeps and divided by the frame's time; DEM: the
 *  contact forces and the stops at the surface, XPBD: the position corrections' impulses
 *  (m dx / dt) and bounces. The torque is about the collider's reference point: its pivot
 *  (wf_collider_desc.pivot, default the origin) where the pose puts it at each substep; about
 *  another point o, add (p - o) x force. Particles pushing on the collider give a force along
 *  its outward normal's opposite (a pile resting on the floor y = 0: force[1] = -m g). Summed in
 *  64-bit fixed point (2^-64 N·s resolution a contact, |impulse| < 2^23 N·s a frame): bitwise the
 *  same for any number of partitions and on the CPU and CUDA backends. Waits for the frames
 *  enqueued. Zero before the first frame.
 *  The sums are made only while measured (wf_particles_measure_collider_forces): a solver that
 *  does not measure them reads zero here, and this first call turns the measuring on from the
 *  next frame enqueued on (so call it, or wf_particles_measure_collider_forces, before the frame
 *  whose forces you want). */
WF_API wf_status wf_particles_collider_force(wf_particles *ps, uint32_t index, double force[3],
                                             double torque[3]);
/** Whether the frames sum the impulses on the colliders (wf_particles_collider_force). Off when
 *  the solver is created: the sums cost up to ~13% of a CPU substep where every particle touches
 *  a collider (a single layer on a floor), nothing where none does. Turning it on or off takes
 *  effect from the next frame enqueued (the captured frame is recorded again) and zeroes the
 *  sums; the particles' motion is bitwise the same either way. Over MPI ranks (desc.mpi_comm)
 *  neither this nor wf_particles_collider_force is a collective: each rank's call records its
 *  wish, the next step measures on every rank when any rank wishes it (one allreduce of a flag
 *  a step), and the frames sum every rank's tables, so a force read on some ranks only waits
 *  for none and gives every rank the same bits. */
WF_API wf_status wf_particles_measure_collider_forces(wf_particles *ps, bool on);

/** Pulls particle `gid` (global id) towards target (m, in the world) by a spring of stiffness
 *  (N/m) and a dashpot of damping (N·s/m) added to its force in every substep, from the next
 *  frame enqueued on: the drag lives in the device parameter block the captured frame reads
 *  (no recapture, no wait), in every partition, and the contact kernel adds it to the particle
 *  whose global id matches, so the result is bitwise the same for any number of partitions and
 *  on the CPU and CUDA backends. Explicit within the substep, with k capped at 1 / (2 w h²) and
 *  c at 1 / (2 w h) (w the inverse mass, h the substep) for stability. Kinematic particles do
 *  not move. Call between frames (a mouse drag: at every move). WF_ERR_UNSUPPORTED with the
 *  XPBD contact model; WF_ERR_INVALID for an id out of range or a negative or non-finite value. */
WF_API wf_status wf_particles_drag_set(wf_particles *ps, uint32_t gid, const double target[3],
                                       float stiffness, float damping);
/** Ends the drag. */
WF_API wf_status wf_particles_drag_clear(wf_particles *ps);
/** The parameters in effect (the desc's, or what wf_particles_params_set last set). */
WF_API wf_particles_params wf_particles_params_get(const wf_particles *ps);
/** Changes time step, gravity and damping. No recapture. */
WF_API wf_status wf_particles_params_set(wf_particles *ps, const wf_particles_params *p);

/** Enqueues `frames` frames (K substeps each); returns without waiting for them. Several
 *  devices: a repartition before each frame as the desc says, which waits for the frames before
 *  it. */
WF_API wf_status wf_particles_step_frames(wf_particles *ps, int frames);
/** Enqueues n substeps without capture (the debugging path). Several devices: they run on the
 *  first partition's device with the whole system gathered there; the next frame distributes it
 *  again. */
WF_API wf_status wf_particles_step_substeps(wf_particles *ps, int n);

/** Number of particles added so far. */
WF_API uint32_t wf_particles_count(const wf_particles *ps);
/** Waits for the solver and copies the state in global-id order; either pointer may be NULL.
 *  Positions are in the world: the solver's own (relative to wf_particles_origin) plus the
 *  origin, added in double and rounded to float once. WF_ERR_INVALID (data still copied) when a
 *  particle became non-finite or left the grid's range: the message names the first such
 *  particle. */
WF_API wf_status wf_particles_download(wf_particles *ps, float (*pos)[4], float (*vel)[4]);
/** Enqueues asynchronous copies of the state after the frames enqueued so far, on stream s (NULL:
 *  the solver's stream): count x 16 bytes of positions (xyz + radius, the solver's own: relative
 *  to wf_particles_origin; add the origin for the world's) into pos at byte offset
 *  pos_off and of velocities (xyz + inverse mass) into vel at vel_off, in global-id order; either
 *  buffer may be NULL. s waits for the solver's work first, and the solver's later work waits for
 *  the copies, so nothing is read half-written. With pinned host buffers and a stream of its own
 *  this is a readback that does not stall the host (weft/world.h's readback ring uses it). */
WF_API wf_status wf_particles_copy_state(wf_particles *ps, wf_buffer *pos, size_t pos_off,
                                         wf_buffer *vel, size_t vel_off, wf_stream *s);
/** The stream the solver's frames are launched on (one device: its stream; several: the first
 *  partition's, which every frame's other streams join at its end). */
WF_API wf_stream *wf_particles_stream(const wf_particles *ps);
/** Replaces the state of all wf_particles_count() particles (pos: xyz + radius in the world, made
 *  relative to the origin in double; vel: xyz + inverse mass, as wf_particles_download returns
 *  them; far from the world's origin a world position in float is itself rounded: resume with
 *  wf_particles_set_state_local for bits) and the solver's clock (simulated seconds and
 *  substeps, as wf_particles_stats_get reports them), clearing the error flags. With the state of
 *  a run downloaded after frame F, the frames that follow are bitwise those of the original run
 *  (checkpoint restore), for any number of partitions. Waits for the solver first. */
WF_API wf_status wf_particles_set_state(wf_particles *ps, const float (*pos)[4],
                                        const float (*vel)[4], double time, uint64_t substeps);
/** The particles' origin in the world (wf_particles_desc.origin_given), m: 0 until it is fixed
 *  (given, or at the first particles). */
WF_API wf_status wf_particles_origin(const wf_particles *ps, double origin[3]);
/** wf_particles_download without the origin: the positions exactly as the solver holds them,
 *  relative to wf_particles_origin (world = local + origin, in double). */
WF_API wf_status wf_particles_download_local(wf_particles *ps, float (*pos)[4], float (*vel)[4]);
/** wf_particles_set_state with positions relative to wf_particles_origin, as
 *  wf_particles_download_local gives them: a state saved and restored with these two resumes
 *  bitwise wherever the scene sits (checkpoint restore). */
WF_API wf_status wf_particles_set_state_local(wf_particles *ps, const float (*pos)[4],
                                              const float (*vel)[4], double time,
                                              uint64_t substeps);
/** Waits for the solver and copies the angular velocities (xyz rad/s, w 0) in global-id order,
 *  count x 16 bytes. Flags as download. */
WF_API wf_status wf_particles_download_omega(wf_particles *ps, float (*omega)[4]);

/** The granular state beside positions and velocities: every particle's angular velocity and
 *  contact history (tangential and rolling springs, keyed by global ids), as one opaque blob in
 *  global-id order that does not depend on the number of partitions. A checkpoint saves it with
 *  wf_particles_download; a restore calls wf_particles_set_state (which clears it: particles at
 *  rest, no contacts remembered) and then wf_particles_granular_state_set with the saved blob;
 *  the frames that follow are then bitwise those of the original run, for any number of
 *  partitions. The blob's size depends on the particle count only (a 16-byte header, the
 *  angular velocities, 16 bytes a particle, then the histories, 256 bytes a particle: 8 slots of
 *  32 bytes, the partner's key a uint32 at byte 12 of a slot, 0 for a free slot; get returns each
 *  particle's held contacts in its first slots, set accepts them in any slots); set checks its
 *  header and size. */
WF_API size_t wf_particles_granular_state_bytes(const wf_particles *ps);
WF_API wf_status wf_particles_granular_state_get(wf_particles *ps, void *blob, size_t bytes);
WF_API wf_status wf_particles_granular_state_set(wf_particles *ps, const void *blob, size_t bytes);
/** Writes into blob (wf_particles_granular_state_bytes) the granular state of this solver's
 *  particle count with every particle at rest and no contact remembered (its header, zero rows),
 *  reading nothing of the solver's state: a blob to fill row by row (particle i's angular
 *  velocity at byte bytes - count * 272 + 16 i, its slots at bytes - count * 256 + 256 i; a
 *  checkpoint assembled from pieces) and give to wf_particles_granular_state_set. */
WF_API wf_status wf_particles_granular_state_init(const wf_particles *ps, void *blob, size_t bytes);

/** Time-step guidance for one material (wf_particles_stability). */
typedef struct wf_particles_stability_result {
  double contact_time;    /* s: duration of a normal impact of two of the particles at
                             impact_speed (linear: π / sqrt(kn/m* (1 - ζ²)); Hertz:
                             2.87 (m*² / (R* E*² v))^(1/5), elastic) */
  double tangential_time; /* s: half period of the tangential spring with both spheres free to
                             roll, π / sqrt(3.5 kt / m*) (Hertz: St at the impact's largest
                             overlap) */
  double rolling_time;    /* s: half period of the rolling spring on the two spheres' rotational
                             inertia, π / sqrt(kr (1/Ii + 1/Ij)); 0: no rolling resistance */
  double substep_max;     /* s: the largest substep giving >= 10 substeps in each of the three
                             times */
  int substeps_needed;    /* per frame of desc->frame_dt with substep_max */
  bool ok;                /* desc->substeps >= substeps_needed */
} wf_particles_stability_result;

/** Substeps a material needs: for particles of radius `radius` (m) and mass `mass` (kg; 0: from
 *  density 2500 kg/m³) colliding at `impact_speed` (m/s; 0: 1 m/s, used by Hertz only), with
 *  the contact model and frame of desc. Explicit integration needs >= 10 substeps per contact,
 *  and as many in the tangential spring's half period, which is shorter (with free rotation kt
 *  acts on 2/7 of the mass: π / sqrt(3.5 kt / m*)). A solver checks every material at its first
 * frame after particles were added, for the smallest radius and mass it holds of that material, and
 * logs a warning (the log callback, wf_init_desc.log) naming the material and the substeps needed
 * when desc.substeps is fewer; it never changes the substeps itself. XPBD: always ok. */
WF_API wf_status wf_particles_stability(const wf_particles_desc *desc,
                                        const wf_particle_material *m, double radius, double mass,
                                        double impact_speed, wf_particles_stability_result *out);

/** Waits for the solver and reports its device flags, as download does. */
WF_API wf_status wf_particles_check(wf_particles *ps);
/** Simulated seconds and substeps so far (waits for the solver; no pass over the particles). */
WF_API wf_status wf_particles_time(wf_particles *ps, double *seconds, uint64_t *substeps);
/** Waits for the solver and computes the statistics of the current state. */
WF_API wf_status wf_particles_stats_get(wf_particles *ps, wf_particles_stats *out);
/** Waits and computes the energies of every particle (wf_particles_energy). Dashpots, friction
 *  and cohesion store no energy and are left out; with the XPBD contact model the material's
 *  stiffness (the inverse compliance) gives the springs. */
WF_API wf_status wf_particles_energy_get(wf_particles *ps, wf_particles_energy *out);
/** The same for n ranges of global ids, [first[r], first[r] + count[r]) into out[r] (an
 *  emitter's particles, weft/world.h's objects), from one pass over the state. */
WF_API wf_status wf_particles_energy_ranges(wf_particles *ps, int n, const uint32_t *first,
                                            const uint32_t *count, wf_particles_energy *out);
/** Device memory the solver holds, bytes, all partitions (state, sort, grid, sorted copies,
 *  tables, halo buffers); per partition in wf_particles_info.device_bytes. */
WF_API size_t wf_particles_device_bytes(const wf_particles *ps);
/** Runs `substeps` substeps one by one (not captured) with events between the stages, waits,
 *  and reports the mean device time of each stage. Advances the simulation like
 *  wf_particles_step_substeps. Several devices: profiles the first partition's device with the
 *  whole system gathered there (as wf_particles_step_substeps). */
WF_API wf_status wf_particles_profile(wf_particles *ps, int substeps,
                                      wf_particles_profile_result *out);
/** Particles the device buffers currently have room for (several devices: all partitions). */
WF_API uint32_t wf_particles_capacity(const wf_particles *ps);

/** What the solver's partitions are doing (wf_particles_info_get). One partition: it owns every
 *  particle, holds no ghosts, its slab is unbounded and nothing is ever repartitioned. */
typedef struct wf_particles_info {
  int partitions;                  /* devices */
  int axis;                        /* the slab axis (0 x, 1 y, 2 z) */
  float skin;                      /* the skin in use, m (0: one partition) */
  uint32_t owned[WF_MAX_DEVICES];  /* particles each partition owns */
  uint32_t ghosts[WF_MAX_DEVICES]; /* ghost copies each partition holds */
  float slab_lo[WF_MAX_DEVICES], slab_hi[WF_MAX_DEVICES]; /* slab bounds along the axis (+-inf at
                                                              the ends) */
  uint64_t device_bytes[WF_MAX_DEVICES];                  /* device memory each partition holds */
  uint64_t halo_bytes_per_frame; /* bytes the peer copies move per frame, all partitions */
  uint64_t repartitions;         /* so far */
  uint64_t rebalances;           /* repartitions that moved the slab boundaries */
  uint64_t reruns;               /* frames run again because the skin was too thin */
  double repartition_ms;         /* host time in repartitions (not waiting for frames), total */
  bool peer;                     /* every pair of distinct devices has direct (peer) access */
  uint64_t captures;             /* frame graphs of all partitions captured (after repartitions) */
  double capture_ms;             /* host time capturing them (and updating or instantiating) */
  /* WF_BALANCE_TIME: each partition's substeps in the last frame before the last repartition,
   * ms on its device's clock (the halo waits left out); 0 where not measured */
  double compute_ms[WF_MAX_DEVICES];
  /* over MPI ranks: how this rank's partitions send and receive halos between ranks
   * (WF_MPI_HALO_DIRECT or _STAGED, as desc.mpi_halo resolved); 0 in one process */
  int mpi_halo;
  /* host memory the solver holds on this process between calls, bytes: its record, the master
   * copy of the whole state (312 bytes a particle) while it has one, the owned ids. Over MPI
   * ranks the master copy lives only from adding particles (or set_state) to the next
   * distribution, so after a frame a rank holds a few bytes a particle it owns, not the
   * system; the reads allocate what they return for the call only. */
  uint64_t host_bytes;
} wf_particles_info;

/** The partitioning as of the last repartition (before the first frame of several devices, the
 *  whole system sits in partition 0). */
WF_API wf_status wf_particles_info_get(const wf_particles *ps, wf_particles_info *out);
/** Number of partitions (= devices). */
WF_API int wf_particles_partition_count(const wf_particles *ps);
/** Whether this process holds partition i (always, but over MPI ranks: then only its rank's
 *  block; wf_particles_partition_view refuses the others). */
WF_API bool wf_particles_partition_is_local(const wf_particles *ps, int i);
/** Partition i's state on its own device, after the frames enqueued so far (weft/partition.h):
 *  the rows it owns with their global ids (one partition: every particle, ids NULL, first 0, the
 *  solver's own buffers). Several partitions: enqueues, on the partition's stream, a gather of
 *  its owned rows (ghosts left out) into buffers of the view's own; valid until the next frame. */
WF_API wf_status wf_particles_partition_view(wf_particles *ps, int i, wf_partition_view *out);
/** The global ids of the particles this process owns, ascending, into ids (room for
 *  wf_particles_count; NULL: only *n), *n of them. One process owns every particle. Over MPI
 *  ranks a rank owns those of its partitions (its slabs) as of the last read of the whole state
 *  (wf_particles_download and the other reads that gather it, which every rank makes); before
 *  the first distribution rank 0 owns them all. The ranks' sets are disjoint and cover every
 *  particle. Not a collective. WF_ERR_INVALID over ranks when the state was not read since the
 *  last repartition. */
WF_API wf_status wf_particles_owned_ids(wf_particles *ps, uint32_t *ids, uint32_t *n);
/** The particles this process owns (as wf_particles_owned_ids, which it updates), ascending in
 *  global id: their ids, positions (in the world, as wf_particles_download) and velocities into
 *  ids, pos, vel (any may be NULL; room for wf_particles_count), *n of them. Nothing of the state
 *  crosses between MPI ranks, so a rank needs room only for its own rows; over ranks it is still
 *  a collective (the drift check and the health verdict are agreed), which every rank calls. */
WF_API wf_status wf_particles_download_owned(wf_particles *ps, uint32_t *ids, float (*pos)[4],
                                             float (*vel)[4], uint32_t *n);
/** How many particles this process owns now: the rows wf_particles_download_owned and
 *  _download_owned_local give, until the next frame (read it after wf_particles_check, which makes
 *  the frames since the last repartition exact: a frame run again may move the slabs). One
 *  process: every particle; over MPI ranks before the first distribution: rank 0 every particle,
 *  the others none. Not a collective. */
WF_API uint32_t wf_particles_owned_count(const wf_particles *ps);
/** wf_particles_download_owned with everything a checkpoint keeps of those rows: positions
 *  relative to wf_particles_origin (as wf_particles_download_local gives them), velocities and
 *  the rows of the granular state (wf_particles_granular_state_get): omega, the angular
 *  velocities (16 bytes a particle), and hist, the contact-history slots (256 bytes a particle,
 *  as in the blob). Any array may be NULL; each has room for `room` rows, and more owned rows
 *  are WF_ERR_INVALID on this rank (wf_particles_owned_count gives the room needed). Over MPI
 *  ranks a rank needs room for its own rows only (a checkpoint's piece, weft/world.h); it is a
 *  collective, as download_owned. */
WF_API wf_status wf_particles_download_owned_local(wf_particles *ps, uint32_t room, uint32_t *ids,
                                                   float (*pos)[4], float (*vel)[4],
                                                   float (*omega)[4], void *hist, uint32_t *n);

/** Measures the overlap of the halo copies with the substeps (fills *out; weft/partition.h).
 *  Repartitions first (unless a repartition is what came last), runs one warm-up and then
 *  `frames` (>= 1) timed frames of each of four kinds, interleaved: ordinary frames, frames with
 *  the halo copies left out, the halo copies of a frame alone and ordinary frames with time
 *  stamps around every partition's substeps (compute_ms: the longest path through the
 *  substeps' times: a substep's time is its partition's own work, the halo's packs and unpacks
 *  included, less its wait for the copies; the part before that wait follows its own substep
 *  before, the rest also the substeps of the partitions it takes ghosts from), the last three
 *  captured into graphs of their own (destroyed after); then puts the state and the clock back,
 *  so the frames that follow are bitwise those without the call. One partition: no halo, only
 *  ordinary frames are timed (compute_ms = frame_ms, hidden_fraction 1). Waits for every
 *  partition; takes about 4 (frames + 1) frame times. */
WF_API wf_status wf_particles_overlap_measure(wf_particles *ps, int frames, wf_overlap *out);
#ifdef __cplusplus
}
#endif
#endif
