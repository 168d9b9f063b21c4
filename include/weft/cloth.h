/* weft cloth solver: triangle-mesh cloth on a CPU or CUDA device, integrated with mass-spring
 * (semi-implicit Euler) or XPBD (graph-coloured Gauss–Seidel).
 *
 * Guide
 *
 *     wf_cloth_desc d = wf_cloth_desc_default();          // 16 substeps at 60 frames/s
 *     d.integrator = WF_CLOTH_SPRINGS;                    // or WF_CLOTH_XPBD
 *     wf_cloth_material_preset("cotton", &d.material);    // or set moduli (N/m, N·m)
 *     wf_cloth_grid g = wf_cloth_grid_default();          // 1 m x 1 m, 16 x 16 vertices
 *     wf_cloth *c;                                         // d.devices / device_count: 0 =
 *     if (wf_cloth_create_grid(&d, &g, &c) != WF_OK)      // the default device; several: split
 *       puts(wf_last_error());
 *     wf_cloth_pin_named(c, "top-left", NULL);            // or by index, region, collider
 *     wf_cloth_pin_named(c, "top-right", NULL);
 *     wf_cloth_add_collider(c, &sphere, NULL);            // a wf_collider_desc
 *     wf_cloth_step_frames(c, 60);                        // asynchronous
 *     wf_cloth_download(c, pos, NULL);                    // waits; xyz + inverse mass
 *     wf_cloth_destroy(c);
 *
 * Positions: the solver keeps them relative to the cloth's origin (a double; by default the centre
 * of the mesh's box rounded to whole metres), so a cloth behaves the same wherever it sits
 * (docs/precision.md). wf_cloth_download / set_state speak world positions; the _local calls and
 * the copies / readbacks give the solver's own.
 *
 * Meshes come from OBJ files or arrays (wf_cloth_mesh_desc); grids from wf_cloth_grid. A grid's
 * vertex (i, j) (column i along the u axis, row j from the top) has index j * resolution[0] + i;
 * row 0 is the "top" edge (at +v/2), column 0 the "left" edge (at -u/2).
 *
 * Topology, built once at creation:
 *   mass-spring  stretch springs (grid neighbours / mesh edges), shear springs (grid diagonals),
 *                bend springs (grid vertices two apart / across mesh edges: the two vertices
 *                opposite a shared edge). Each vertex gathers its springs from a CSR list.
 *   XPBD         distance constraints (stretch, shear) and dihedral bending constraints on every
 *                edge shared by two triangles, coloured greedily so no two constraints of a
 *                colour share a vertex; one launch per colour and iteration.
 *
 * A frame is `substeps` substeps, captured once into a graph and replayed (desc.no_graph: enqueued
 * one by one; both give bit-identical states). Gravity, wind, stiffness, damping, colliders and a
 * drag on one vertex (wf_cloth_drag_set: a mouse spring) live in a device-side parameter block:
 * changing them needs no recapture. Results are bitwise
 * reproducible run to run and equal on the CPU and CUDA backends (no atomics on floats, fixed
 * gather orders, no FMA contraction).
 *
 * Colliders are the particle solver's wf_collider_desc (plane, sphere, box, capsule, triangle mesh;
 * static, moving, turning, keyframed or posed between frames: weft/collider.h). Vertices are pushed
 * out to the collider's surface + thickness at the end of every substep, with Coulomb friction
 * against the velocity of the collider's surface there.
 *
 * Self-collision (desc.self_collision): vertices keep material.thickness apart, through a uniform
 * grid over the vertices rebuilt every substep; vertex pairs closer than 2 thickness in the rest
 * mesh (edges, diagonals) are neighbours and never repel. It is vertex–vertex only: for a layer
 * not to slip through another between its vertices, thickness must be at least ~0.75 of the edge
 * length (a vertex crossing the middle of a square of side L passes L/√2 from its corners).
 *
 * Cloth contact (desc.contact): vertex–triangle and edge–edge proximity contact with a thickness
 * (material.thickness), within the cloth and between its disconnected pieces (give several
 * cloths as one mesh of several pieces, or separate cloths in a contact group: wf_cloth_group),
 * with static and dynamic friction
 * between layers. Every substep, each vertex's motion is bounded by 0.4 of the distance from its
 * primitives to the nearest primitive sharing no vertex with them, at the substep's start, so a
 * state without intersecting triangles (wf_cloth_intersections) stays without: layers never pass
 * through each other. The price: a vertex closes at most 40% of a gap a substep (it is slowed
 * over the last few substeps before it touches), and in a flat sheet the nearest such primitive
 * is about 0.7 edge away, so a vertex moves at most ~0.28 edge a substep (2.7 m/s for 1 cm edges
 * at 16 substeps of 1/60 s). Deterministic (fixed gather order, no atomics on floats): bitwise
 * run to run and on both backends, and over several devices bitwise one device's
 * (docs/cloth_contact.md).
 *
 * Coupling with particles (wf_cloth_couple): cloth vertices and particles collide, each vertex a
 * point kept material.thickness from the particles' surfaces, with equal and opposite impulses
 * (momentum is exchanged, not created). The particle solver's frames then step the cloth too,
 * substep by substep, in one captured frame: see wf_cloth_couple.
 *
 * Errors: every function returns a wf_status; wf_last_error() says what was wrong and where: the
 * cloth's name and the field ("cloth 'sheet': material.stretch_stiffness -3 must be >= 0"), or the
 * OBJ file and line ("shirt.obj:17: edge (4, 9) is shared by more than two triangles"). The solver
 * never prints.
 */
#ifndef WEFT_CLOTH_H
#define WEFT_CLOTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/collider.h"
#include "weft/export.h"
#include "weft/gpu.h"
#include "weft/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A cloth solver: one mesh (grid or triangles) over one or more devices (wf_cloth_desc.devices),
 *  one partition per device. Created by wf_cloth_create_grid / wf_cloth_create_mesh.
 *
 *  One device: one partition holding the whole cloth, running on its own stream or on
 *  wf_cloth_desc.stream, with no halo: the fastest frame kernels, per-frame readback,
 *  self-collision and coupling with particles.
 *
 *  Several devices: the mesh's vertex graph is cut into one part per device by METIS (k-way, fixed
 *  seed: the same parts every run). A partition holds the vertices it owns and ghosts: copies of
 *  the other partitions' vertices that its owned vertices read (their springs' or constraints'
 *  other ends, their triangles' corners). After every stage that changes vertices another
 *  partition reads (mass-spring: every substep; XPBD: the prediction, every colour pass but the
 *  last, the end of the substep) each ghost is overwritten with its owner's value (the halo
 *  exchange: peer copies between GPUs, staged through pinned host memory where peers are not
 *  reachable). An XPBD constraint across a boundary is projected by both sides from the same
 *  bits, in its colour's pass. So the state after N frames is bitwise that of one device on the
 *  same backend, for any number of partitions. The copies overlap interior work: a partition
 *  computes the vertices others read first, starts their copies, then computes the rest. A frame
 *  of all partitions is one graph on partition 0's stream, forking to the others and joining
 *  back (desc.no_graph: stage by stage). All devices must be of one kind; a device may appear more
 *  than once; desc.stream is ignored (every partition has a stream of its own). Self-collision,
 *  coupling, per-frame readback and wf_cloth_step_substeps need one device (WF_ERR_UNSUPPORTED
 *  names the cloth). Vertex ids are always the whole cloth's. */
typedef struct wf_cloth wf_cloth;
/* A collider, declared in weft/particles.h (plane, sphere, box, capsule with name, type,
 * normal/offset, center, radius, half_extents, p0/p1, velocity, friction). */
typedef struct wf_collider_desc wf_collider_desc;
/* The particle solver (weft/particles.h). */
typedef struct wf_particles wf_particles;

/** Integrators (wf_cloth_desc.integrator). */
enum { WF_CLOTH_SPRINGS = 0, WF_CLOTH_XPBD = 1 };

/** Material of one cloth, in physical terms. Start from wf_cloth_material_default() or
 *  wf_cloth_material_preset().
 *
 *  A sheet's in-plane and bending behaviour is given as properties of the material, not of the
 *  mesh; the solver turns them into per-spring / per-constraint coefficients from the mesh's mean
 *  edge length h (regular grids: the exact small-strain match; other meshes: the same formulas,
 *  so a uniformly refined mesh of the same material behaves the same):
 *
 *    quantity            mass-spring (spring constant)     XPBD (compliance)
 *    stretch  E2 (N/m)   k = E2 - G2 - 4 k_bend (grid)     1 / (E2 - G2) (grid), m/N
 *    shear    G2 (N/m)   k = G2 (diagonal springs)         1 / G2   (m/N)
 *    bending  B  (N·m)   k = 16 B R0² / h⁴, R0 = 2 cm      1 / B    (1/(N·m), per radian²)
 *    damping  τ  (s)     c = τ E2 on every spring          γ = τ / dt per constraint
 *
 *  Why: a square lattice of axis springs k has a 2D Young's modulus k (a row of springs 1/h per
 *  metre, each carrying k ε h), and its diagonals give a shear modulus k; so E2, G2 map to
 *  spring constants independent of h (on a grid the diagonals and the bend springs also resist
 *  stretch along an axis, by k_shear and 4 k_bend: the axis springs get the rest of E2, at
 *  least 0; on other meshes every edge gets E2). A grid's dihedral hinge across an edge bends by θ
 * = κ h for curvature κ; one hinge per h² of area with energy ½ θ²/α gives ½ κ²/α per m², the
 * plate's ½ B κ² when α = 1/B, again independent of h. A bend spring across two edges (the
 * mass-spring bend) shortens by h θ²/4 only, so its energy grows with κ⁴, not κ²: its k ∝ h⁻⁴ keeps
 * the energy per area independent of h, and R0 is the radius of curvature at which its energy
 *  equals the plate's (stiffer than the plate below R0, softer above). τ is the Kelvin–Voigt
 *  time: stress = E2 (ε + τ dε/dt).
 *
 *  coefficients = true skips all this and uses the raw per-spring fields below as given
 *  (resolution-dependent; for tests and exact reproductions of older setups). */
typedef struct wf_cloth_material {
  float density;         /* ρ_A, kg/m²: each vertex gets a third of its triangles' mass;
                            default 0.2 */
  float particle_mass;   /* > 0: every vertex has this mass (kg), overriding density; default 0 */
  float thickness;       /* m: distance kept from colliders; default 0.005 */
  float stretch_modulus; /* E2, N/m: in-plane Young's modulus times thickness (0: off);
                            default 30 */
  float shear_modulus;   /* G2, N/m: in-plane shear modulus times thickness (0: off);
                            default 10 */
  float bend_rigidity;   /* B, N·m: flexural rigidity, bending moment per unit width per unit
                            curvature (0: off); default 1e-5 (a light cotton) */
  float damping_time;    /* τ, s: Kelvin–Voigt damping time; default 1e-5 */
  float drag;     /* aerodynamic drag coefficient (normal to each triangle); default 0: off */
  float lift;     /* aerodynamic lift coefficient; default 0: off */
  float friction; /* Coulomb coefficient against colliders (the smaller of this and the
                     collider's friction applies); default 0.5 */
  /* Advanced: raw coefficients, used instead of the moduli above when coefficients is true. */
  bool coefficients;
  /* mass-spring: spring constants, N/m (0 turns a kind off); defaults 50, 20, 2 */
  float stretch_stiffness, shear_stiffness, bend_stiffness;
  /* XPBD: compliance (inverse stiffness): distance m/N, bending rad/(N·m); 0 = rigid;
   * defaults 0, 1e-4, 1 */
  float stretch_compliance, shear_compliance, bend_compliance;
  float damping; /* dashpot along each spring/constraint, N·s/m (XPBD: β = damping, the
                    constraint-space damping of Macklin et al. 2016); default 0.05 */
} wf_cloth_material;

/** How a mass-spring cloth stands against its explicit step's stability limit
 *  (wf_cloth_stability_grid / _mesh; wf_cloth_create_* logs a WF_LOG_WARN when it is not stable).
 *
 *  Symplectic Euler on a vertex of mass m moving against its neighbours is stable for
 *      K dt² + 2 C dt < 4,   K = 2 λmax(Σ k_j d_j d_jᵀ) / m,   C = 2 λmax(Σ c d_j d_jᵀ) / m
 *  (the sums over the vertex's springs, d_j their rest directions, c the spring damping): the
 *  oscillator x'' = -K x - C x' stepped by symplectic Euler is stable exactly when K dt² + 2 C dt
 *  < 4, and a vertex moving against neighbours that move the opposite way sees twice its springs'
 *  stiffness (on a regular grid this is the lattice's highest mode). dt_max is the smallest
 *  root over the free vertices. XPBD is implicit in the constraints: always stable. */
typedef struct wf_cloth_stability {
  float dt;            /* the substep: frame_dt / substeps, s */
  float dt_max;        /* mass-spring: the explicit limit, s; XPBD: INFINITY */
  int substeps_needed; /* the fewest substeps a frame with dt <= 0.8 dt_max (1 for XPBD) */
  uint32_t vertex;     /* the vertex that sets dt_max (UINT32_MAX: none) */
  bool stable;         /* desc.substeps >= substeps_needed */
} wf_cloth_stability;

/** A tuning choice (wf_cloth_tuning's switches): zero is the automatic one. */
enum { WF_CLOTH_TUNE_AUTO = 0, WF_CLOTH_TUNE_ON = 1, WF_CLOTH_TUNE_OFF = 2 };

/** How the one-launch frames (wf_cloth_info.frame_kernel) spread over the device: for
 *  measurements and A/B runs. All zero (the default) is the automatic choice, which is the one to
 *  keep unless a measurement says otherwise. Every choice gives bitwise the same states; only the
 *  speed changes. XPBD cloths use one_launch, resident (OFF: the grid-stride frame) and block;
 *  cloths with self-collision, coupling or contact, and cloths over several devices run kernels
 *  per substep and ignore it (the values are still checked). A value out of
 *  range fails creation with WF_ERR_INVALID naming the field. wf_cloth_info's frame_* fields
 *  report what was chosen. */
typedef struct wf_cloth_tuning {
  int one_launch;   /* WF_CLOTH_TUNE_*: OFF runs kernels per substep (the general path); AUTO and ON
                       run a mass-spring or XPBD frame in one launch (XPBD on a CPU device: only
                       ON; AUTO keeps the staged frame, whose kernels use the CPU worker pool;
                       XPBD on CUDA: AUTO only up to 2304 vertices, one block, the staged frame
                       being faster above) */
  int resident;     /* WF_CLOTH_TUNE_*: OFF runs one-launch frames as a grid-stride loop; AUTO and
                       ON keep a thread a vertex resident where every vertex fits at once (XPBD:
                       one block up to 2304 vertices, ON: up to 65536) */
  int grid_sync;    /* WF_CLOTH_TUNE_*: ON makes resident frames meet at grid.sync() between
                       substeps (XPBD: the grid-stride frame between stages); AUTO and OFF: each
                       block waits for its neighbours only */
  uint32_t block;   /* threads a block of resident frames, 1 to 1024, rounded by the device to
                       whole warps it can run (32 to 256 on CUDA; XPBD's frames 32 to 512, its
                       one block in shared memory 32 to 1024); 0:
                       automatic (the vertices spread over the multiprocessors, at most 256 a
                       block; XPBD: 512 in one block, 256 grid-stride) */
  uint32_t lanes;   /* resident grid cloths: at most this many threads a vertex, 1, 2 or 4; 0:
                       automatic (the most that stay resident) */
  int smem;         /* WF_CLOTH_TUNE_*: resident grid cloths stage their neighbourhood in shared
                       memory: ON where it fits, OFF never, AUTO with 1 lane a vertex. XPBD's
                       one block on CUDA keeps positions and steps there: ON where they fit
                       (~7000 vertices), OFF never, AUTO from 2048 vertices */
  int tiles;        /* WF_CLOTH_TUNE_*: resident grid cloths on CUDA in 2D tiles: ON asks for tiles
                       of tile[0] x tile[1] (used where they fit), OFF never, AUTO 32 x 16 tiles
                       where 1 lane a vertex is all that stays resident and lanes and smem are
                       automatic */
  uint32_t tile[2]; /* tiles ON: columns x rows of a tile, each >= 2 (0 x 0: 32 x 16); must be
                       0 x 0 unless tiles is ON */
  uint32_t tile_steps; /* tiled frames: substeps between the tiles' exchanges, 1 or 2; 0:
                          automatic (2 where they fit, else 1) */
} wf_cloth_tuning;

/** Solver settings. Start from wf_cloth_desc_default(). */
typedef struct wf_cloth_desc {
  const char *name;           /* for messages; default "cloth" */
  int integrator;             /* WF_CLOTH_SPRINGS (default) or WF_CLOTH_XPBD */
  int substeps;               /* per frame; default 16 */
  int iterations;             /* XPBD Gauss–Seidel sweeps per substep; default 1 */
  float frame_dt;             /* seconds per frame; default 1/60 */
  float gravity[3];           /* m/s²; default (0, -9.81, 0) */
  float wind[3];              /* air velocity, m/s (acts through drag and lift); default 0 */
  float air_density;          /* kg/m³; default 1.2 */
  float damping;              /* global velocity damping, 1/s; default 0 */
  wf_cloth_material material; /* default wf_cloth_material_default() */
  bool no_graph;              /* enqueue substeps one by one instead of replaying a graph */
  bool self_collision;        /* vertices keep material.thickness apart; default false */
  /* Cloth contact (vertex–triangle and edge–edge, within the cloth and between its disconnected
   * pieces): layers keep material.thickness apart with friction, and no triangle passes through
   * another (a bound on each vertex's motion a substep; see "Cloth contact" above). Over several
   * devices too (each partition reads every vertex's positions each substep; bitwise one
   * device's); default false. */
  bool contact;
  float contact_static_friction;  /* μs between layers: a layer at rest on another holds while
                                     the tangential pull is below μs x the normal; default 0.5 */
  float contact_dynamic_friction; /* μk while sliding; default 0.4 */
  wf_stream *stream; /* one device: stream to run on (not owned); NULL: the solver makes
                        one. Several: ignored */
  /* the devices, one partition each (devices[0] NULL: the stream's device when a stream is
   * given, else wf_device_default(); device_count 0: one, devices[0], as wf_particles_desc) */
  wf_device *devices[WF_MAX_DEVICES];
  int device_count;
  int seed;               /* several devices: METIS random seed; 0: 1 */
  float imbalance;        /* several devices: METIS load imbalance allowed (max part / mean - 1);
                             0: 0.03 */
  wf_cloth_tuning tuning; /* one-launch frames' tuning; all zero (the default): automatic */
  /* The cloth's origin in the world, m (docs/precision.md): the solver keeps every position
   * relative to it, in float, so that a cloth behaves the same wherever it sits. origin_given
   * false (the default): the centre of the mesh's bounding box at creation, rounded to whole
   * metres; true: `origin` as given (finite). wf_cloth_origin reports it. */
  bool origin_given;
  double origin[3];
  /* MPI ranks (docs/multi-device.md, "MPI"): NULL, one process. Else a pointer to an MPI_Comm
   * (the application's, after MPI_Init; weft duplicates it). The device_count partitions are then
   * shared by the communicator's ranks in blocks (partition p is rank p * ranks / device_count's;
   * device_count >= ranks), each rank creating only its own partitions, on devices[p] (the
   * others' entries are not read); halos between ranks go through MPI and a frame runs stage by
   * stage (not captured). Every rank makes the same calls with the same arguments: pins,
   * colliders, material and parameters are set on every rank alike, and the reads of the whole
   * cloth (wf_cloth_download, wf_cloth_energy_get, wf_cloth_check) are collectives that give the
   * whole cloth on every rank. The result is bitwise that of one process with the same
   * device_count. Not over ranks (WF_ERR_UNSUPPORTED, naming the cloth): contact groups,
   * coupling with particles, self-collision, the overlap measure, wf_cloth_copy_positions and
   * the per-frame readback. A libweft built without MPI refuses it. */
  const void *mpi_comm;
  /* with mpi_comm: how halos between ranks travel (wf_mpi_halo; 0: AUTO) */
  int mpi_halo;
} wf_cloth_desc;

/** A rectangular grid of vertices. Start from wf_cloth_grid_default(). */
typedef struct wf_cloth_grid {
  float size[2];     /* extent along u and v, m; default 1 x 1 */
  int resolution[2]; /* vertices along u and v (>= 1 each, >= 2 vertices); default 16 x 16 */
  float center[3];   /* default (0, 1, 0) */
  float u_axis[3];   /* direction of the rows (normalized here); default (1, 0, 0) */
  float v_axis[3];   /* direction from bottom to top (normalized); default (0, 0, -1): the grid
                        lies flat, its "top" row at -z */
} wf_cloth_grid;

/** A triangle mesh: from an OBJ file (path) or from arrays (path NULL). Start from
 *  wf_cloth_mesh_desc_default(). OBJ: `v x y z` and `f a b c ...` lines (polygons become fans,
 *  `a/t/n`, `a//n` and negative indices accepted); other lines are ignored. */
typedef struct wf_cloth_mesh_desc {
  const char *path;           /* an OBJ file, or NULL: the arrays below */
  const float (*vertices)[3]; /* path NULL: vertex_count positions */
  uint32_t vertex_count;
  const uint32_t (*triangles)[3]; /* path NULL: triangle_count triangles, 0-based */
  uint32_t triangle_count;
  float scale;           /* applied first; default 1 */
  double rotation[3][3]; /* then x' = rotation x (rows); all zero (the default): none */
  float translate[3];    /* then added; default 0 */
} wf_cloth_mesh_desc;

/** Parameters that can change between frames without recapture. */
typedef struct wf_cloth_params {
  float frame_dt;    /* seconds per frame */
  float gravity[3];  /* m/s² */
  float wind[3];     /* air velocity, m/s */
  float air_density; /* kg/m³ */
  float damping;     /* global velocity damping, 1/s */
} wf_cloth_params;

/** How a frame of a cloth runs (wf_cloth_info.frame_kernel). */
enum {
  WF_CLOTH_FRAME_PER_SUBSTEP = 0, /* kernels per substep or stage (self-collision, coupling,
                                     contact, several devices, tuning.one_launch OFF) */
  WF_CLOTH_FRAME_STRIDE = 1,      /* one launch a frame, grid-stride over vertices (XPBD: and
                                     constraints), a grid-wide barrier between substeps (XPBD:
                                     between stages) */
  WF_CLOTH_FRAME_RESIDENT = 2     /* mass-spring: one launch a frame, a thread per vertex holding
                                     its state in registers (vertices <= resident_max); XPBD: one
                                     launch of one block, the whole cloth in one SM (vertices <=
                                     resident_max) */
};

/** Facts about a created cloth. */
typedef struct wf_cloth_info {
  uint32_t vertices, triangles;
  uint32_t springs;      /* mass-spring: springs of all kinds (0 for XPBD) */
  uint32_t constraints;  /* XPBD: distance + bending constraints (0 for mass-spring) */
  uint32_t colours;      /* XPBD: colours of the constraint graph */
  uint32_t pinned;       /* vertices with inverse mass 0 */
  uint32_t grid[2];      /* resolution of a grid cloth; 0 x 0 for meshes */
  size_t device_bytes;   /* device memory held by the solver */
  size_t graph_nodes;    /* nodes of the captured frame (0 before the first frame or no_graph) */
  uint64_t captures;     /* frames captured by wf_cloth_step_frames so far (several devices: of
                            the one graph of all partitions); parameter, pose and drag changes
                            leave it as it is */
  uint32_t frame_kernel; /* WF_CLOTH_FRAME_*: how wf_cloth_step_frames runs a frame */
  uint32_t resident_max; /* the most vertices a resident frame takes on this device (mass-spring
                            on the CPU backend: a fixed 4096; XPBD: 2304); 0 without one */
  uint32_t frame_readback_direct; /* 1: the frame kernel writes the per-frame readback itself */
  uint32_t frame_lanes; /* resident frames: threads a vertex (1, 2, 4; tuning.lanes); else 1 */
  uint32_t frame_smem;  /* resident frames: 1 = neighbours staged in shared memory (tuning.smem) */
  uint32_t frame_tile[2];    /* resident grid frames in tiles: columns x rows a block (CUDA;
                                tuning.tiles); 0 x 0: not tiled */
  uint32_t frame_tile_steps; /* tiled frames: substeps between the tiles' exchanges, 1 or 2
                                (tuning.tile_steps); 0: not tiled */
  uint32_t frame_block;      /* resident frames (XPBD: either one-launch frame): threads a block
                                (tuning.block); else 0 */
  uint32_t frame_grid_sync;  /* resident frames: 1 = grid.sync() between substeps
                                (tuning.grid_sync); else 0 */
  /* the partitioning (the frame_* fields above are partition 0's, over MPI ranks this rank's
   * first; device_bytes and graph_nodes are summed over the partitions, over MPI ranks this
   * rank's, and partition_bytes is 0 for another rank's) */
  uint32_t partitions;                    /* one per device */
  uint32_t owned[WF_MAX_DEVICES];         /* vertices each partition owns */
  uint32_t ghosts[WF_MAX_DEVICES];        /* ghost copies each partition holds */
  size_t partition_bytes[WF_MAX_DEVICES]; /* device memory each partition holds */
  uint32_t links;                         /* ordered pairs of partitions with ghosts to send */
  uint32_t exchanges_per_frame;           /* halo exchanges per frame */
  uint64_t halo_bytes_per_frame;          /* bytes the halo copies move per frame, all partitions */
  bool peer; /* every pair of distinct devices has direct (peer) access (true for one) */
  /* over MPI ranks: how this rank's halos to other ranks travel (WF_MPI_HALO_DIRECT or _STAGED,
   * as desc.mpi_halo resolved); 0 in one process */
  int mpi_halo;
} wf_cloth_info;

/** The default material (the defaults in wf_cloth_material's field comments). */
WF_API wf_cloth_material wf_cloth_material_default(void);
/** A named material: "default", "cotton", "silk", "denim", "rubber" (docs/scenes.md lists their
 *  values and sources). WF_ERR_INVALID naming the known presets for any other name. */
WF_API wf_status wf_cloth_material_preset(const char *name, wf_cloth_material *out);
/** The name of preset i (0, 1, ...), or NULL past the last. */
WF_API const char *wf_cloth_material_preset_name(int i);
/** The explicit step's stability for a cloth that would be made from desc and grid / mesh
 *  (host only; no device): see wf_cloth_stability. */
WF_API wf_status wf_cloth_stability_grid(const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                                         wf_cloth_stability *out);
WF_API wf_status wf_cloth_stability_mesh(const wf_cloth_desc *desc, const wf_cloth_mesh_desc *mesh,
                                         wf_cloth_stability *out);
/** The default solver settings: mass-spring, 16 substeps at 60 frames/s, Earth gravity. */
WF_API wf_cloth_desc wf_cloth_desc_default(void);
/** The default grid: 1 m x 1 m, 16 x 16 vertices, flat at y = 1. */
WF_API wf_cloth_grid wf_cloth_grid_default(void);
/** The default mesh description: no file, no arrays, scale 1, no translation. */
WF_API wf_cloth_mesh_desc wf_cloth_mesh_desc_default(void);

/** Creates a grid cloth over desc->devices. Fails when a partition would own no vertex (too few
 *  vertices for the devices), or on self_collision with several devices (WF_ERR_UNSUPPORTED). */
WF_API wf_status wf_cloth_create_grid(const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                                      wf_cloth **out);
/** Creates a cloth from a triangle mesh over desc->devices. Fails on an empty mesh, a degenerate
 *  triangle, or an edge shared by more than two triangles (non-manifold), naming the file and
 *  line. */
WF_API wf_status wf_cloth_create_mesh(const wf_cloth_desc *desc, const wf_cloth_mesh_desc *mesh,
                                      wf_cloth **out);
/** Waits for the solver's work and frees everything. NULL is ignored. */
WF_API void wf_cloth_destroy(wf_cloth *c);

/** Pins vertex `vertex` where it is now (inverse mass 0, velocity 0). */
WF_API wf_status wf_cloth_pin(wf_cloth *c, uint32_t vertex);
/** Pins a named part of a grid cloth: "top-left", "top-right", "bottom-left", "bottom-right",
 *  "top", "bottom", "left", "right". *count (may be NULL) receives the number pinned. */
WF_API wf_status wf_cloth_pin_named(wf_cloth *c, const char *where, uint32_t *count);
/** Pins every vertex whose initial position (in the world, compared in double) lies in the box
 *  [lo, hi]; none inside is an error. */
WF_API wf_status wf_cloth_pin_region(wf_cloth *c, const float lo[3], const float hi[3],
                                     uint32_t *count);
/** Attaches vertex `vertex` to collider `collider` (an index from wf_cloth_add_collider): it is
 *  pinned and moves with the collider's velocity. */
WF_API wf_status wf_cloth_attach(wf_cloth *c, uint32_t vertex, uint32_t collider);
/** Attaches every vertex whose initial position lies in [lo, hi] to collider `collider`. */
WF_API wf_status wf_cloth_attach_region(wf_cloth *c, const float lo[3], const float hi[3],
                                        uint32_t collider, uint32_t *count);

/** Adds a collider (at most 64); *index may be NULL. The desc is the particle solver's, in the
 *  world; the solver moves it into the cloth's frame (its centre, ends and plane offset relative
 *  to wf_cloth_origin, computed in double). */
WF_API wf_status wf_cloth_add_collider(wf_cloth *c, const wf_collider_desc *desc, uint32_t *index);
/** The force (N) and torque (N·m) the cloth exerted on collider `index` over the last frame (or
 *  run of wf_cloth_step_substeps), averaged over it: the momentum each vertex lost to the
 *  collider's response (the normal velocity removed, friction), summed over the substeps and
 *  divided by the frame's time, for both integrators. The torque is about the collider's pivot
 *  where its pose puts it (wf_collider_desc.pivot, default the origin; world coordinates, not
 *  the cloth's origin), each contact at the collider's surface point. A cloth resting on or
 *  hanging from a collider gives its weight: force[1] = -m g. 64-bit fixed point, as
 *  wf_particles_collider_force: bitwise the same for any number of partitions and on the CPU
 *  and CUDA backends. Waits for the frames enqueued; zero before the first. Summed only while
 *  measured (wf_cloth_measure_collider_forces): a cloth that does not measure them reads zero
 *  here, and this first call turns the measuring on from the next frame enqueued on. Over MPI
 *  ranks (desc.mpi_comm) the sums over every rank that the last wf_cloth_step_frames made: no
 *  collective, a read on one rank alone waits for nobody. */
WF_API wf_status wf_cloth_collider_force(wf_cloth *c, uint32_t index, double force[3],
                                         double torque[3]);
/** Whether the frames sum the impulses on the colliders (wf_cloth_collider_force). Off when the
 *  cloth is created: a mass-spring frame with colliders then stays one launch (no clear before
 *  it) and the contacts add nothing. Turning it on or off takes effect from the next frame
 *  enqueued (the captured frame is recorded again) and zeroes the sums; the cloth's motion is
 *  bitwise the same either way. Over MPI ranks it records this rank's wish: the next
 *  wf_cloth_step_frames turns measuring on on every rank when any rank asked (so one rank, e.g.
 *  the one writing statistics, may ask alone). */
WF_API wf_status wf_cloth_measure_collider_forces(wf_cloth *c, bool on);
/** Sets collider `index`'s pose and velocities from pose->time on (weft/collider.h), in every
 *  partition's device-side table; no recapture. Attached vertices keep the linear velocity only. */
WF_API wf_status wf_cloth_set_collider_pose(wf_cloth *c, uint32_t index,
                                            const wf_collider_pose *pose);
/** Replaces the material's stiffness, compliance, damping, thickness, friction, drag and lift
 *  (mass and density are fixed at creation and ignored here). No recapture. */
WF_API wf_status wf_cloth_set_material(wf_cloth *c, const wf_cloth_material *m);
/** The parameters in effect (the desc's, or what wf_cloth_params_set last set). */
WF_API wf_cloth_params wf_cloth_params_get(const wf_cloth *c);
/** Changes time step, gravity, wind, air density and damping. No recapture. */
WF_API wf_status wf_cloth_params_set(wf_cloth *c, const wf_cloth_params *p);
/** Pulls vertex `vertex` towards target (m, in the world) by a spring of stiffness (N/m) and a
 *  dashpot of damping (N·s/m), k (t − x) − c v added to its force in every substep, from the next
 *  frame enqueued on (a mouse drag: call it at every move). The drag lives in the parameter block
 *  the captured frame reads: no recapture, no wait. The target is put into the cloth's frame
 *  (relative to wf_cloth_origin, in double, rounded once: docs/precision.md). Mass-spring: added
 *  to the vertex's spring force; XPBD: an external force in the prediction (not a constraint), so
 *  both integrators and every frame path (one-launch or per substep, contact groups, coupling)
 *  take it, and a cloth without a drag computes the same bits as one that never had one. Several
 *  devices: only the partition owning the vertex applies it; the result is bitwise the one-device
 *  result, and the same on the CPU and CUDA backends. Explicit within the substep, with k capped at
 *  1 / (2 w h²) and c at 1 / (2 w h) (w the vertex's inverse mass, h the substep) for stability, as
 *  wf_particles_drag_set. A pinned or attached vertex (inverse mass 0) is not moved: the call is
 *  accepted and the spring does nothing. One drag a cloth: a call replaces the previous one. Not
 *  part of the state (checkpoints, wf_cloth_set_state keep it as it is). WF_ERR_INVALID naming
 *  the cloth and the vertex for a vertex out of range, a non-finite target, or a negative or
 *  non-finite stiffness or damping. */
WF_API wf_status wf_cloth_drag_set(wf_cloth *c, uint32_t vertex, const double target[3],
                                   float stiffness, float damping);
/** Ends the drag (no-op when none is set). No recapture. */
WF_API wf_status wf_cloth_drag_clear(wf_cloth *c);

/** Couples the cloth with a particle solver, two-way: each cloth vertex is kept material.thickness
 *  from every particle's surface, the correction shared by inverse mass between the vertex and
 *  the particle (equal and opposite impulses; each side gathers its own in a fixed order, so the
 *  coupled pair stays deterministic and bitwise equal on CPU and CUDA devices).
 *
 *  Both solvers must run on one device and one stream (create them with the same desc.stream)
 *  with the same substep (frame_dt / substeps), and the particles must be added first: the
 *  cloth's grid is sized for the largest particle radius (a frame with larger particles fails
 *  with WF_ERR_INVALID; couple again). From then on wf_particles_step_frames (and _substeps)
 *  steps the cloth as well: in every substep the particle solver builds its grid, the cloth
 *  predicts and solves its constraints, the contacts between the two are resolved, then both
 *  finish the substep; a frame of both is one captured graph. wf_cloth_step_frames on a coupled
 *  cloth is an error. ps NULL uncouples. Destroying either solver uncouples them. Reach: a
 *  contact is seen only while the particle is within one particle-grid cell (2 radii by
 *  default) of the vertex, so keep thickness below the particle radius (or raise cell_size).
 *  Cloth–particle contacts are frictionless. */
WF_API wf_status wf_cloth_couple(wf_cloth *c, wf_particles *ps);

/** Enqueues `frames` frames (substeps each); returns without waiting. */
WF_API wf_status wf_cloth_step_frames(wf_cloth *c, int frames);
/** Enqueues n substeps without capture (the debugging path). */
WF_API wf_status wf_cloth_step_substeps(wf_cloth *c, int n);

/** Waits for the solver and copies the state: pos[i] = xyz + inverse mass (0: pinned),
 *  vel[i] = xyz + 0. Positions are in the world: the solver's own (relative to wf_cloth_origin)
 *  plus the origin, added in double and rounded to float. Either pointer may be NULL.
 *  WF_ERR_INVALID (data still copied) when a vertex became NaN/inf; the message names the first
 *  one. Over MPI ranks a collective (every rank calls it) that gives the whole cloth on every
 *  rank, gathered in vertex order. */
WF_API wf_status wf_cloth_download(wf_cloth *c, float (*pos)[4], float (*vel)[4]);
/** Replaces the state of every vertex (pos: xyz + inverse mass, vel: xyz + 0, as wf_cloth_download
 *  returns them: world positions, made relative to the origin in double) and the solver's clock
 *  (as wf_cloth_time reports it), clearing the error flags. The world positions of a cloth away
 *  from its origin are rounded (to float at their distance from the world's origin), so for a
 *  restore that is bitwise (checkpoints) use wf_cloth_download_local / wf_cloth_set_state_local.
 *  Waits for the solver first. */
WF_API wf_status wf_cloth_set_state(wf_cloth *c, const float (*pos)[4], const float (*vel)[4],
                                    double time, uint64_t substeps);
/** The cloth's origin in the world (wf_cloth_desc.origin_given), m. */
WF_API wf_status wf_cloth_origin(const wf_cloth *c, double origin[3]);
/** wf_cloth_download without the origin: the positions exactly as the solver holds them,
 *  relative to wf_cloth_origin (world = local + origin). */
WF_API wf_status wf_cloth_download_local(wf_cloth *c, float (*pos)[4], float (*vel)[4]);
/** wf_cloth_set_state with positions relative to wf_cloth_origin, as wf_cloth_download_local
 *  returns them. With the state downloaded after frame F, the frames that follow are bitwise
 *  those of the original run (checkpoint restore). */
WF_API wf_status wf_cloth_set_state_local(wf_cloth *c, const float (*pos)[4], const float (*vel)[4],
                                          double time, uint64_t substeps);
/** Enqueues an asynchronous copy of the positions (vertices x 16 bytes, xyz + inverse mass) into
 *  dst at byte offset off, on the solver's stream after the frames enqueued so far. With a pinned
 *  host buffer this is the readback path that does not stall the solver. The positions are the
 *  solver's own, relative to wf_cloth_origin (as wf_cloth_download_local gives them; add the
 *  origin for the world's), and so are those of the per-frame readback below. */
WF_API wf_status wf_cloth_copy_positions(wf_cloth *c, wf_buffer *dst, size_t off);
/** The same on stream s (NULL: the solver's stream): s waits for the solver's work first, and the
 *  solver's later work waits for the copy. A stream of its own keeps the copy off the solver's
 *  stream (weft/world.h's readback ring). */
WF_API wf_status wf_cloth_copy_positions_on(wf_cloth *c, wf_buffer *dst, size_t off, wf_stream *s);
/** Reads the positions back every frame: from the next wf_cloth_step_frames on, every frame
 *  ends with the positions (vertices x 16 bytes, as wf_cloth_copy_positions writes them) in dst
 *  at byte offset off, on the solver's stream, as if wf_cloth_copy_positions followed each frame.
 *  Wait for the stream (wf_stream_synchronize(wf_cloth_stream(c))) before reading; the next frame
 *  writes dst again. A host dst of a cloth on a CUDA device must be WF_BUFFER_PINNED; then the
 *  one-launch mass-spring frames write the positions from their last substep straight into it
 *  (mapped pinned memory; wf_cloth_info.frame_readback_direct), so no copy follows the frame;
 *  other frames copy. dst must live until it is replaced. NULL stops the readback. Waits for
 *  the solver, and the captured frame is captured again at the next frame. Frames of a coupled
 *  cloth (stepped by wf_particles_step_frames) do not read back. */
WF_API wf_status wf_cloth_set_frame_readback(wf_cloth *c, wf_buffer *dst, size_t off);
/** The layout of positions in a per-frame readback (wf_cloth_set_frame_readback_as). */
typedef enum wf_cloth_layout {
  WF_CLOTH_XYZW = 0, /**< 16 bytes a vertex: x, y, z and the inverse mass (wf_cloth_download's) */
  WF_CLOTH_XYZ = 1   /**< 12 bytes a vertex: x, y, z, packed (float[3] a vertex, a vertex buffer) */
} wf_cloth_layout;
/** wf_cloth_set_frame_readback in the given layout. WF_CLOTH_XYZW is wf_cloth_set_frame_readback;
 *  WF_CLOTH_XYZ writes vertices x 12 bytes (3/4 of the bytes over the bus), at an offset that is a
 *  multiple of 4, into memory the solver's device writes itself: host memory (WF_BUFFER_PINNED for
 *  a cloth on a CUDA device) or a buffer on the cloth's own device. Frames that do not write it
 *  from their last substep pack the positions into dst with a kernel after the frame. */
WF_API wf_status wf_cloth_set_frame_readback_as(wf_cloth *c, wf_buffer *dst, size_t off,
                                                wf_cloth_layout layout);
/** Waits for the solver and reports its device flags (non-finite state), as download does. */
WF_API wf_status wf_cloth_check(wf_cloth *c);
/** The energies of a cloth's state (wf_cloth_energy_get), J. */
typedef struct wf_cloth_energy {
  double kinetic;   /* Σ ½ m v² over the free vertices (inverse mass > 0); pinned and attached
                       vertices (inverse mass 0) are excluded */
  double potential; /* Σ −m g·x over the free vertices: zero at the origin, so with gravity
                       (0, −g, 0) it is Σ m g y, the height above y = 0 */
  double elastic;   /* stretch + shear + bend */
  double stretch, shear, bend; /* by kind. Mass-spring: Σ ½ k (|d| − L)² over the springs of the
                                  kind. XPBD: Σ C² / (2 α) over the constraints of the kind, α
                                  their compliance (C: distance − rest length, or dihedral angle
                                  − rest angle); a kind of compliance 0 is rigid and holds no
                                  energy (0). Colliders and self-collision act by projection:
                                  no energy. */
  double total;                /* kinetic + potential + elastic */
} wf_cloth_energy;

/** Waits and computes the energies of the current state (wf_cloth_energy). Each vertex's terms
 *  are computed on the device (its share of the springs and constraints it belongs to), then
 *  summed on the host in vertex order in double: the result is bitwise the same for any number
 *  of partitions, and on the CPU and CUDA backends. WF_ERR_INVALID when a vertex is NaN/inf. */
WF_API wf_status wf_cloth_energy_get(wf_cloth *c, wf_cloth_energy *out);
/** Simulated seconds and substeps so far (waits for the solver). */
WF_API wf_status wf_cloth_time(wf_cloth *c, double *seconds, uint64_t *substeps);
/** Fills *out with the cloth's counts, pins, device memory and graph size. */
WF_API wf_status wf_cloth_info_get(const wf_cloth *c, wf_cloth_info *out);
/** The stream the solver runs on. */
WF_API wf_stream *wf_cloth_stream(const wf_cloth *c);
/** Triangles (0-based vertex indices, 3 per triangle) of the cloth; NULL if it has none. */
WF_API const uint32_t *wf_cloth_triangles(const wf_cloth *c, uint32_t *count);

/** Counts the pairs of triangles that intersect in a cloth state, exactly: every decision is the
 *  sign of a polynomial in the float coordinates, evaluated in exact arithmetic where double
 *  cannot decide it, so no rounding hides or invents an intersection. Triangles are closed
 *  (touching counts); a pair sharing no vertex counts when they meet, a pair sharing one vertex
 *  when they meet anywhere else, a pair sharing an edge when it is folded flat onto itself
 *  (coplanar, both on one side of the edge). Zero-area triangles are not counted.
 *  xyz: vertex_count vertices, `stride` floats apart (3: packed xyz; 4: wf_cloth_download's
 *  rows); triangles: 3 indices each. Several cloths: give their vertices and triangles as one
 *  set. Host memory; O(n log n + pairs whose boxes overlap). WF_ERR_INVALID for an index out of
 *  range or a non-finite vertex. */
WF_API wf_status wf_cloth_intersections_count(const float *xyz, size_t stride,
                                              uint32_t vertex_count, const uint32_t *triangles,
                                              uint32_t triangle_count, uint64_t *count);
/** wf_cloth_intersections_count of a cloth's current state (waits; the solver's own positions,
 *  wf_cloth_download_local). 0 is what cloth contact (wf_cloth_desc.contact) promises. */
WF_API wf_status wf_cloth_intersections(wf_cloth *c, uint64_t *count);

/* ---- contact groups: contact between separate cloths -------------------------------------- */

/** A contact group: separate cloths that collide with each other and with themselves (vertex–
 *  triangle and edge–edge contact, as desc.contact does within one cloth: the same stage, over
 *  all the group's vertices at once), with friction between the layers of different cloths.
 *  While a cloth is in a group, the group steps it (wf_cloth_step_frames / _step_substeps on it
 *  are refused); destroy the group before its cloths. */
typedef struct wf_cloth_group wf_cloth_group;

typedef struct wf_cloth_group_desc {
  float static_friction;  /* μs between the layers of the group's cloths; default 0.5 (cotton on
                             cotton, ~0.5-0.6) */
  float dynamic_friction; /* μk while sliding; default 0.4 */
  bool no_graph;          /* true: frames enqueued stage by stage, not captured (the same bits) */
} wf_cloth_group_desc;

WF_API wf_cloth_group_desc wf_cloth_group_desc_default(void);
/** Makes a group of `count` (>= 1) cloths. They must run on one device each, the same one, with
 *  the same integrator, frame_dt and substeps, share one origin (wf_cloth_origin: give them the
 *  same desc.origin; positions are compared as the solvers hold them), and not be coupled to
 *  particles or in another group. The thickness kept between layers is the largest
 *  material.thickness of the cloths (read now). Their own desc.contact is not needed: the group
 *  does contact for all of them. WF_ERR_INVALID naming the cloth otherwise. */
WF_API wf_status wf_cloth_group_create(wf_cloth *const *cloths, uint32_t count,
                                       const wf_cloth_group_desc *desc, wf_cloth_group **out);
/** Steps every cloth of the group `frames` frames, substep by substep together (each cloth's
 *  per-frame readback as its own frames do). A frame of the group is captured once into one graph
 *  on the group's stream (the cloths' streams forked into it) and launched with one call;
 *  captured again after a change it bakes in (a cloth's first collider, its per-frame readback). */
WF_API wf_status wf_cloth_group_step_frames(wf_cloth_group *g, int frames);
/** Steps n substeps (>= 0) of every cloth together: the state after each can be read. */
WF_API wf_status wf_cloth_group_step_substeps(wf_cloth_group *g, int n);
/** wf_cloth_intersections_count over all the group's cloths as one set (waits): pairs within a
 *  cloth and between cloths. 0 is what the group promises. */
WF_API wf_status wf_cloth_group_intersections(wf_cloth_group *g, uint64_t *count);
/** Waits for the group and frees it; its cloths are free to step on their own again. */
WF_API void wf_cloth_group_destroy(wf_cloth_group *g);

/** Number of vertices of the whole cloth. */
WF_API uint32_t wf_cloth_count(const wf_cloth *c);
/** Number of partitions (one per device). */
WF_API int wf_cloth_partition_count(const wf_cloth *c);
/** Whether this process holds partition i (always, but over MPI ranks: then only its rank's
 *  block; wf_cloth_partition_view refuses the others). */
WF_API bool wf_cloth_partition_is_local(const wf_cloth *c, int i);
/** The vertices this process owns, ascending, into ids (room for wf_cloth_count; NULL: only
 *  *n), *n of them: every vertex in one process; over MPI ranks those of the rank's partitions
 *  (its block). The ranks' sets are disjoint and cover the cloth, and do not change after
 *  creation. Not a collective. */
WF_API wf_status wf_cloth_owned_ids(const wf_cloth *c, uint32_t *ids, uint32_t *n);
/** Partition i's state on its own device (0 <= i < wf_cloth_partition_count): its owned rows,
 *  their global ids (ids NULL and first 0 with one partition: row i is vertex i), the stream
 *  they are written on, the clock and the origin its positions are relative to (the cloth's,
 *  shared by every partition). For engine code reading the state with its own kernels
 *  (weft/world.h's health check). */
WF_API wf_status wf_cloth_partition_view(const wf_cloth *c, int i, wf_partition_view *out);
/** Measures the overlap of the halo copies with interior work (fills *out). Saves the state,
 *  runs one warm-up and then `frames` (>= 1) timed frames of each of four kinds, interleaved:
 *  ordinary frames, frames with the halo copies left out, the halo copies of a frame alone, and
 *  ordinary frames launched stage by stage with timing events around every partition's kernels
 *  (compute_ms: the longest partition's sum); then puts the state and the clock back
 *  (wf_cloth_set_state), so the frames that follow are bitwise those without the call. Waits;
 *  takes about 4 (frames + 1) frame times. One partition: hidden_fraction 1, no halo. */
WF_API wf_status wf_cloth_overlap_measure(wf_cloth *c, int frames, wf_overlap *out);

#ifdef __cplusplus
}
#endif
#endif
