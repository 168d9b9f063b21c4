/* weft scene files: a JSON description of a simulation (SI units), parsed and validated into a
 * plain struct.
 *
 * Guide
 *  - wf_scene_load("scenes/flag.json", NULL, &scene) reads, parses and validates a file;
 *    wf_scene_parse does the same from memory. Either returns WF_OK and a wf_scene whose every
 * field is filled (defaults included) and checked, or an error status, *out left NULL and nothing
 *    leaked. The keys, defaults, ranges and units are documented in docs/scenes.md.
 *  - No solver object is created here: the engine maps a wf_scene onto solvers. The struct holds
 *    doubles, fixed-size names and arrays the scene owns; wf_scene_destroy frees it all.
 *  - Overrides (the CLI's `--set key.path=value`) are applied to the JSON tree before validation,
 *    so an overridden value is checked like one written in the file.
 *  - wf_scene_to_json prints the canonical JSON of a scene (all defaults filled in): parsing it
 *    again gives an equal scene.
 *
 * Errors: the status is WF_ERR_PARSE for syntax and schema errors and WF_ERR_IO for files that
 * cannot be read. Messages name the file and line:column (syntax errors, and values whose place
 * in the text is known) and the key path:
 *     scene.json:12:7: expected ',' or '}' after an object member
 *     scene.json:9:7: cloths[0].material.bend: expected a number >= 0, got -1
 *     scene.json:4:5: particles[0].radus: unknown key (did you mean 'radius'?)
 * Up to WF_SCENE_MAX_ERRORS errors are collected; wf_last_error() holds as many as fit, one per
 * line, and wf_scene_errors() all of them.
 */
#ifndef WEFT_SCENE_H
#define WEFT_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/collider.h"
#include "weft/export.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Limits of a scene. */
enum {
  WF_SCENE_NAME_MAX = 64, /* names are 1..63 characters of [A-Za-z0-9_.-] */
  WF_SCENE_MAX_DEVICES = 32,
  WF_SCENE_MAX_OBJECTS = 1024, /* per list (materials, particles, cloths, colliders, lights) */
  WF_SCENE_MAX_ERRORS = 20,
};

/** simulation.contact_model: "dem" (spring-dashpot) or "xpbd" (position constraints). */
typedef enum wf_scene_contact_model {
  WF_SCENE_CONTACT_DEM = 0,
  WF_SCENE_CONTACT_XPBD = 1,
  WF_SCENE_CONTACT_HERTZ = 2 /* Hertz–Mindlin normal and tangential springs (WF_CONTACT_HERTZ) */
} wf_scene_contact_model;
/** particles[i].shape: the region an emitter fills ("box", "sphere", "cylinder"), "file": the
 *  particles a PLY or CSV file lists, or an inlet that pours particles over a time window:
 *  "disc", "rectangle" or "annulus" (perpendicular to the velocity). */
typedef enum wf_scene_shape {
  WF_SCENE_SHAPE_BOX = 0,
  WF_SCENE_SHAPE_SPHERE = 1,
  WF_SCENE_SHAPE_CYLINDER = 2, /* axis along y */
  WF_SCENE_SHAPE_FILE = 3,
  WF_SCENE_SHAPE_DISC = 4,      /* a continuous emitter: a disc inlet pouring `rate` particles/s */
  WF_SCENE_SHAPE_RECTANGLE = 5, /* ... through a rectangle (inlet_size) */
  WF_SCENE_SHAPE_ANNULUS = 6    /* ... through a ring (inner_radius to disc_radius) */
} wf_scene_shape;
/** particles[i].packing: a cubic "lattice" or a seeded "random" packing (random sequential
 *  addition to a target packing fraction). */
typedef enum wf_scene_packing {
  WF_SCENE_PACK_LATTICE = 0,
  WF_SCENE_PACK_RANDOM = 1
} wf_scene_packing;
/** particles[i].radius_distribution: one radius ("fixed"), uniform in [radius_min, radius_max],
 *  or log-normal (median `radius`, σ of ln r `radius_sigma`, truncated to [radius_min,
 *  radius_max]). */
typedef enum wf_scene_radii {
  WF_SCENE_RADII_FIXED = 0,
  WF_SCENE_RADII_UNIFORM = 1,
  WF_SCENE_RADII_LOGNORMAL = 2
} wf_scene_radii;
/** The highest packing_fraction a random packing accepts: random sequential addition of equal
 *  spheres jams at 0.383 in the bulk (Torquato et al. 2006), and walls and the attempt budget
 *  bring that down; beyond this value the emitter is refused. */
#define WF_SCENE_RANDOM_PACKING_MAX 0.34
/** cloths[i].integrator: "xpbd" (constraints) or "spring" (mass-spring). */
typedef enum wf_scene_integrator {
  WF_SCENE_CLOTH_XPBD = 0,
  WF_SCENE_CLOTH_SPRING = 1
} wf_scene_integrator;
/** colliders[i].type: "plane", "sphere", "box", "capsule" or "mesh"; the same numbering as the
 *  particle solver's WF_COLLIDER_* values. */
typedef enum wf_scene_collider_type {
  WF_SCENE_PLANE = 0,
  WF_SCENE_SPHERE = 1,
  WF_SCENE_BOX = 2,
  WF_SCENE_CAPSULE = 3,
  WF_SCENE_MESH = 4
} wf_scene_collider_type;
/** render.color_by: one colour per "object", or colour by "speed", "strain" (cloth) or
 *  "contact_force" (particles). */
typedef enum wf_scene_color_by {
  WF_SCENE_COLOR_OBJECT = 0,
  WF_SCENE_COLOR_SPEED = 1,
  WF_SCENE_COLOR_STRAIN = 2,       /* cloth vertices: largest stretch of their edges */
  WF_SCENE_COLOR_CONTACT_FORCE = 3 /* particles: sum of their contacts' normal forces */
} wf_scene_color_by;
/** outputs.up_axis: the axes of the PLY and VTK files. "y": as simulated (weft's scenes are
 *  y-up: gravity along -y); "z": turned a quarter turn about x so that +y becomes +z, each point
 *  (x, y, z) written as (x, -z, y), and velocities, angular velocities and normals alike
 *  (Blender's axes: z up, y forward). */
typedef enum wf_scene_up_axis { WF_SCENE_UP_Y = 0, WF_SCENE_UP_Z = 1 } wf_scene_up_axis;
/** Bits of wf_scene_outputs.formats (outputs.formats: "ply", "vtk", "csv", "png", "checkpoint",
 *  "usd"). */
enum {
  WF_SCENE_OUT_PLY = 1u << 0,
  WF_SCENE_OUT_VTK = 1u << 1,
  WF_SCENE_OUT_CSV = 1u << 2,
  WF_SCENE_OUT_PNG = 1u << 3,
  WF_SCENE_OUT_CHECKPOINT = 1u << 4,
  WF_SCENE_OUT_USD = 1u << 5, /* scene.usda (weft/outputs.h) */
};

/** simulation.stop_when[i]: what ends a run before its last frame (docs/scenes.md). */
typedef enum wf_scene_stop_kind {
  WF_SCENE_STOP_TIME = 0,           /* "time": the simulated time reached `value` s */
  WF_SCENE_STOP_KINETIC_ENERGY = 1, /* "kinetic_energy_below": total kinetic energy < value J */
  WF_SCENE_STOP_MAX_SPEED = 2       /* "max_speed_below": every point slower than value m/s */
} wf_scene_stop_kind;
/** One stop rule; the "below" rules hold for `frames` consecutive frames before they fire. */
typedef struct wf_scene_stop_rule {
  wf_scene_stop_kind kind;
  double value; /* s, J or m/s; > 0 */
  int frames;   /* consecutive frames, [1, 10^9]; default 1; always 1 for "time" */
} wf_scene_stop_rule;
enum { WF_SCENE_MAX_STOP_RULES = 8 };

/** `simulation`: time stepping, devices and watchdog limits. */
typedef struct wf_scene_simulation {
  double fps;        /* frames per simulated second, > 0; default 60 */
  int substeps;      /* per frame, [1, 4096]; default 64 */
  int frames;        /* length of a `weft run`, >= 1; default 240 */
  double gravity[3]; /* m/s²; default (0, -9.81, 0) */
  double damping;    /* global velocity damping, 1/s, >= 0; default 0 */
  /* Device names as written: "cpu", "cpu:N", "cuda", "cuda:N" or the single word "all".
   * device_count 0 means "auto" (the default: cuda when one is usable at run time, else cpu). */
  int device_count;
  char devices[WF_SCENE_MAX_DEVICES][16];
  bool deterministic; /* no FMA contraction, fixed reduction order; default false */
  uint64_t seed;      /* [0, 2^53]; default 0 */
  wf_scene_contact_model contact_model; /* default DEM */
  double max_speed;                     /* watchdog: m/s, 0 = off */
  double max_penetration;               /* watchdog: m, 0 = off */
  bool coupling; /* cloths and particles collide (two-way) when both exist; default true */
  /* the cloths with `contact` collide with each other too (one contact group, weft/cloth.h:
   * wf_cloth_group); default false */
  bool cloth_collision;
  /* stop_when: a rule or a list of them; the first met ends the run (weft/world.h:
   * wf_world_stop_reason). None by default: a run ends at its last frame. */
  int stop_count;
  wf_scene_stop_rule stop_when[WF_SCENE_MAX_STOP_RULES];
} wf_scene_simulation;

/** `materials[i]`: a particle contact material (see the particle solver's wf_particle_material). */
typedef struct wf_scene_material {
  char name[WF_SCENE_NAME_MAX];
  double stiffness;        /* N/m, > 0; default 1e4 */
  double damping;          /* N·s/m, >= 0; default 0 */
  double restitution;      /* [0, 1]; default 0.5 */
  double friction;         /* >= 0; default 0.5 */
  double tangential;       /* extra tangential dashpot, N·s/m, >= 0; default 0 */
  double cohesion;         /* N, >= 0; default 0 */
  double static_friction;  /* >= 0; 0: the same as friction; default 0 */
  double rolling_friction; /* dimensionless, >= 0; default 0.01 */
  double young;            /* Pa, > 0 (contact_model "hertz"); default 5e7 */
  double poisson;          /* [0, 0.49]; default 0.25 */
  double tangential_ratio; /* kt / kn of the linear model, >= 0; 0: Mindlin's; default 0 */
} wf_scene_material;

/** `particles[i]`: an emitter filling a box, a sphere or a cylinder with a cubic lattice or a
 *  random packing of particles of one radius or a distribution of radii, or reading them from a
 *  PLY or CSV file (engine/emit.c makes them; docs/scenes.md). */
typedef struct wf_scene_emitter {
  char name[WF_SCENE_NAME_MAX];
  wf_scene_shape shape;
  double center[3];       /* m; default (0, 1, 0) (not for files) */
  double half_extents[3]; /* box, m, each > 0; default 0.5 */
  double sphere_radius;   /* sphere, m, > 0; default 0.5 */
  double cylinder_radius; /* cylinder, m, > 0; default 0.5 */
  double height;          /* cylinder, m, > 0 (along y, centred at center); default 1 */
  double radius;          /* particle radius, m, > 0 (log-normal: the median); default 0.05 */
  wf_scene_radii radius_distribution; /* default fixed */
  double radius_min, radius_max;      /* m: uniform: the range (required); log-normal: the
                                         truncation, default radius · exp(∓3 radius_sigma) */
  double radius_sigma;                /* log-normal: σ of ln r, > 0; default 0.1 */
  wf_scene_packing packing;           /* default lattice */
  double packing_fraction;            /* random: target Σ 4/3 π r³ / region volume, in
                                         (0, WF_SCENE_RANDOM_PACKING_MAX]; default 0.3 */
  double spacing;       /* lattice spacing, m, >= 2 * largest radius; default 2 * largest */
  double jitter;        /* lattice, m, [0, spacing / 2); default 0 */
  uint64_t seed;        /* jitter, radii and random packing seed; default 0 */
  double disc_radius;   /* disc, annulus: the inlet's (outer) radius, m, > 0; the inlet is
                           perpendicular to velocity (which must not be zero); default 0.1 */
  double inner_radius;  /* annulus: the hole's radius, m, > 0, < disc_radius; default 0.05 */
  double inlet_size[2]; /* rectangle: its sides, m, each > 0, along u and w (docs/scenes.md: u is
                           the world axis least aligned with velocity made perpendicular to it,
                           w = velocity / |velocity| x u); default 0.2, 0.2 */
  double rate;          /* inlets: particles per second, > 0; default 100 */
  double start, end;    /* inlets: the window, s: particle k is born at start + k / rate while
                           that is before end; defaults 0 and 1 */
  char *file;           /* file: the path as written */
  char *file_path;      /* file: the path that was found (relative to the scene's directory) */
  uint64_t file_rows;   /* file: particles it lists */
  double velocity[3];   /* m/s */
  double density;       /* kg/m³, > 0; default 1000 */
  double mass;          /* kg per particle, >= 0; > 0 overrides density; default 0 */
  bool kinematic;       /* inverse mass 0: moves with its velocity, ignores forces */
  uint32_t material;    /* index into wf_scene.materials */
} wf_scene_emitter;

/** How a cloth pin selects its vertices. */
typedef enum wf_scene_pin_kind {
  WF_SCENE_PIN_VERTEX = 0, /* one vertex by index */
  WF_SCENE_PIN_NAMED = 1,  /* a corner or an edge of a grid cloth */
  WF_SCENE_PIN_REGION = 2, /* every vertex inside an axis-aligned box (initial positions) */
} wf_scene_pin_kind;
/** Named pins of grid cloths (row 0 is the top edge, column 0 the left edge). */
typedef enum wf_scene_pin_name {
  WF_SCENE_PIN_TOP_LEFT = 0,
  WF_SCENE_PIN_TOP_RIGHT,
  WF_SCENE_PIN_BOTTOM_LEFT,
  WF_SCENE_PIN_BOTTOM_RIGHT,
  WF_SCENE_PIN_TOP,
  WF_SCENE_PIN_BOTTOM,
  WF_SCENE_PIN_LEFT,
  WF_SCENE_PIN_RIGHT,
} wf_scene_pin_name;
/** One pin of a cloth (cloths[i].pins[j], or a vertex set of an attachment): a vertex, a named
 *  corner or edge, or a region; `kind` says which field applies. */
typedef struct wf_scene_pin {
  wf_scene_pin_kind kind;
  uint32_t vertex;        /* WF_SCENE_PIN_VERTEX */
  wf_scene_pin_name name; /* WF_SCENE_PIN_NAMED */
  double min[3], max[3];  /* WF_SCENE_PIN_REGION, min <= max */
} wf_scene_pin;
/** Vertices that move with a (kinematic) collider. */
typedef struct wf_scene_attachment {
  uint32_t collider; /* index into wf_scene.colliders */
  int pin_count;
  wf_scene_pin *pins;
} wf_scene_attachment;

/** `cloths[i].material`: a physical material (weft/cloth.h: wf_cloth_material), from a preset
 *  ("default", "cotton", "silk", "denim", "rubber") with any of its values overridden. The same
 *  material drapes the same at any grid resolution and with either integrator. */
typedef struct wf_scene_cloth_material {
  char preset[16];        /* a wf_cloth_material_preset name; default "default" */
  double density;         /* kg/m², > 0; default: the preset's */
  double mass;            /* kg per vertex, >= 0; > 0 overrides density; default 0 */
  double thickness;       /* m, >= 0; collision thickness; default 0.005 */
  double stretch_modulus; /* N/m, >= 0: 2D Young's modulus (E x thickness); default: preset's */
  double shear_modulus;   /* N/m, >= 0: 2D shear modulus; default: the preset's */
  double bend_rigidity;   /* N·m, >= 0: flexural rigidity; default: the preset's */
  double damping_time;    /* s, >= 0: Kelvin–Voigt damping time; default: the preset's */
  double friction;        /* >= 0; default: the preset's */
} wf_scene_cloth_material;

/** `cloths[i]`: a rectangular grid or a triangle mesh from an OBJ file. */
typedef struct wf_scene_cloth {
  char name[WF_SCENE_NAME_MAX];
  bool is_mesh; /* false: a grid (size, resolution); true: the OBJ file `mesh` */
  /* grid: the unrotated sheet lies in the xy-plane (normal +z), width along x, height along y,
   * centred at `center`; `rotation` (degrees) turns it about x, then y, then z. */
  double size[2];         /* m, > 0; default (1, 1) */
  int resolution[2];      /* vertices along width and height, [2, 4096]; default (32, 32) */
  double center[3];       /* m; default (0, 1, 0); meshes are translated by it */
  double rotation[3];     /* degrees; default (0, 0, 0); meshes are rotated by it too */
  char *mesh;             /* mesh: the path as written in the scene */
  char *mesh_path;        /* mesh: the path that was found (relative to the scene's directory) */
  uint32_t mesh_vertices; /* mesh: number of `v` lines in the file */
  wf_scene_integrator integrator; /* default XPBD */
  wf_scene_cloth_material material;
  int iterations; /* XPBD iterations per substep, [1, 1000]; default 4 */
  int pin_count;
  wf_scene_pin *pins;
  int attachment_count;
  wf_scene_attachment *attachments;
  bool self_collision; /* default false */
  /* cloth contact (wf_cloth_desc.contact): vertex–triangle and edge–edge within the cloth and
   * between the pieces of its mesh, with friction; default false */
  bool contact;
  double contact_static_friction;  /* μs between layers, >= 0; default 0.5 */
  double contact_dynamic_friction; /* μk, >= 0; default 0.4 */
} wf_scene_cloth;

/** `colliders[i]`: a static or moving shape or triangle mesh (weft/collider.h). */
typedef struct wf_scene_collider {
  char name[WF_SCENE_NAME_MAX];
  wf_scene_collider_type type; /* required */
  double normal[3];       /* plane: solid below, non-zero (not necessarily unit); default (0,1,0) */
  double offset;          /* plane: points x with dot(normal, x) = offset; default 0 */
  double center[3];       /* sphere, box; default (0, 0, 0) */
  double radius;          /* sphere, capsule, > 0; default 0.5 */
  double half_extents[3]; /* box, each > 0; default 0.5 */
  double p0[3], p1[3];    /* capsule segment; default (0,0,0) and (0,1,0) */
  double velocity[3];     /* m/s; non-zero: kinematic */
  double friction;        /* >= 0; default 0.5 */
  double restitution;     /* [0, 1]; default 0.5 */
  double stiffness;       /* N/m, >= 0; 0 = the touching material's stiffness */
  /* mesh */
  char *mesh;                  /* the file as written (OBJ, STL, PLY, glTF) */
  char *mesh_path;             /* resolved against the scene's directory (then its parent) */
  double scale;                /* > 0; default 1 */
  double thickness;            /* m, >= 0; 0 (default): a closed solid; > 0: a shell */
  wf_collider_mesh *mesh_data; /* loaded and checked while parsing; owned by the scene */
  /* motion: p + R (x - pivot) */
  double pivot[3];         /* default (0, 0, 0) */
  double rotation_axis[3]; /* non-zero; default (0, 0, 1) */
  double rotation_rate;    /* rad/s about rotation_axis through pivot; default 0 */
  int key_count;           /* `keyframes`, in increasing time */
  wf_collider_key *keys;
  double active_from;  /* s; default 0 */
  double active_until; /* s, > active_from; default INFINITY (for ever) */
} wf_scene_collider;

/** `forces`: air. */
typedef struct wf_scene_forces {
  double wind[3];        /* m/s; default 0 */
  double gust_amplitude; /* m/s, >= 0; default 0 */
  double gust_frequency; /* Hz, >= 0; default 0 */
  double drag;           /* cloth drag coefficient, >= 0; default 1 */
  double lift;           /* cloth lift coefficient, >= 0; default 0 */
  double air_density;    /* kg/m³, > 0; default 1.2 */
} wf_scene_forces;

/** `outputs`: what `weft run` writes. */
typedef struct wf_scene_outputs {
  char *dir;                /* default "out" (relative to the working directory) */
  int every;                /* frames between outputs, >= 1; default 1 */
  unsigned formats;         /* WF_SCENE_OUT_* bits; default VTK | CSV */
  int checkpoint_every;     /* frames, >= 0; 0 = only after the last frame; default 0 */
  wf_scene_up_axis up_axis; /* PLY and VTK axes; default WF_SCENE_UP_Y (as simulated) */
} wf_scene_outputs;

/** `camera`: the view of rendered frames and of the viewer's first frame. */
typedef struct wf_scene_camera {
  double position[3]; /* default (0, 1.5, 4) */
  double target[3];   /* default (0, 0.5, 0); differs from position */
  double up[3];       /* non-zero; default (0, 1, 0) */
  double fov_deg;     /* vertical, (0, 180); default 45 */
} wf_scene_camera;

/** `lights[i]`: a directional or a point light. */
typedef struct wf_scene_light {
  bool is_point;    /* false: directional (`direction`), true: point (`position`) */
  double vector[3]; /* direction (non-zero) or position */
  double color[3];  /* linear RGB, each in [0, 1]; default (1, 1, 1) */
  double intensity; /* >= 0; default 1 */
} wf_scene_light;

/** `render`: size and look of rendered frames. */
typedef struct wf_scene_render {
  int width, height;    /* pixels, [1, 16384]; default 1280 x 720 */
  double background[3]; /* RGB in [0, 1]; default (0.1, 0.1, 0.12) */
  wf_scene_color_by color_by;
  bool shadows;      /* the first light casts shadows; default true */
  double speed_max;  /* m/s at the top of the speed colour ramp; 0 (default): fixed at the start
                        from the scene (free fall from the top of the objects to the ground, or
                        the fastest initial speed, whichever is larger) */
  double strain_max; /* strain (|l - L| / L) at the top of the strain ramp; 0 (default): 0.1 */
  double force_max;  /* N at the top of the contact-force ramp; 0 (default): 10 times the weight
                        of the heaviest particle */
} wf_scene_render;

/** A validated scene. Counts are >= 0 and every index refers to an existing element. */
typedef struct wf_scene {
  char *description; /* optional free text; "" when absent */
  wf_scene_simulation simulation;
  int material_count; /* >= 1: when the file has none, one material "default" with defaults */
  wf_scene_material *materials;
  int emitter_count;
  wf_scene_emitter *emitters;
  int cloth_count;
  wf_scene_cloth *cloths;
  int collider_count;
  wf_scene_collider *colliders;
  wf_scene_forces forces;
  wf_scene_outputs outputs;
  wf_scene_camera camera;
  int light_count; /* when the file has no `lights` key: one directional light */
  wf_scene_light *lights;
  wf_scene_render render;
} wf_scene;

/** `--set` overrides: strings "key.path=value", e.g. "simulation.substeps=32",
 *  "cloths[0].material.bend=0.1", "particles[1].velocity=[0,1,0]". The value is read as JSON;
 *  when it is not valid JSON it is taken as a string ("simulation.devices=cpu"). */
typedef struct wf_scene_overrides {
  const char *const *set;
  int count;
} wf_scene_overrides;

/** Reads and validates the scene file at path; asset paths are resolved against its directory.
 *  ov may be NULL. On failure *out is NULL. */
WF_API wf_status wf_scene_load(const char *path, const wf_scene_overrides *ov, wf_scene **out);
/** Parses len bytes of JSON text (no terminating NUL needed). name_for_messages prefixes messages
 *  (NULL: "scene"); base_dir resolves asset paths (NULL: the working directory). */
WF_API wf_status wf_scene_parse(const char *text, size_t len, const char *name_for_messages,
                                const char *base_dir, const wf_scene_overrides *ov, wf_scene **out);
/** Frees a scene. NULL is ignored. */
WF_API void wf_scene_destroy(wf_scene *scene);
/** The canonical JSON of a scene, every default filled in, formatted with two-space indents.
 *  malloc'ed: release with free(). NULL only when out of memory. */
WF_API char *wf_scene_to_json(const wf_scene *scene);
/** Every message of this thread's last failed load or parse, one per line; "" when the last one
 *  succeeded. Valid until this thread's next wf_scene call. */
WF_API const char *wf_scene_errors(void);
/** Particle count of an emitter (the lattice points inside its shape, the particles of a random
 *  packing, the rows of its file); UINT64_MAX when it is beyond counting. */
WF_API uint64_t wf_scene_emitter_count(const wf_scene_emitter *e);
/** The emitter's particles (engine/emit.c), `count` = wf_scene_emitter_count(e) rows: pos =
 *  xyz + radius, vel = xyz + inverse mass (0: kinematic), in the order the solver adds them.
 *  first_id, the global id of the first, seeds a lattice's jitter as wf_particles_emit does.
 *  birth (count floats; may be NULL but for a disc) receives each particle's birth time, s (0:
 *  from the start; a disc: start + k / rate, each particle placed on the feed line upstream of
 *  the inlet that reaches its point of the disc at its birth: wf_particles_add_timed).
 *  Deterministic: the same scene gives the same bits (positions and uniform radii use only
 *  IEEE basic operations; log-normal radii also the C library's exp and log). Fails (naming the
 *  emitter) when a random packing jams before its target, or the file changed since the scene
 *  was read. */
WF_API wf_status wf_scene_emitter_points(const wf_scene_emitter *e, uint32_t first_id,
                                         float (*pos)[4], float (*vel)[4], float *birth,
                                         uint64_t count);

#ifdef __cplusplus
}
#endif
#endif
