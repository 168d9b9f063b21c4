/* weft viewer: the renderer (OpenGL 3.3 core through libepoxy) and the GLFW window application.
 *
 * The renderer draws a wf_render_scene — plain arrays the caller owns: point sets (sphere
 * impostors), triangle meshes (cloth; smooth normals computed here, lit on both sides), colliders
 * (plane, sphere, box, capsule), a camera, lights and a ground grid. It knows nothing of the
 * simulation. The same renderer draws
 *  - headless: wf_render_headless_create makes its own EGL context (an EGL device, else Mesa's
 *    surfaceless platform, else the default display; Mesa's llvmpipe where there is no GPU), or
 *  - into a window: wf_viewer_run opens a GLFW window and takes frames from a wf_viewer_source,
 *    a set of callbacks that hand over the newest finished frame without ever blocking (the
 *    simulation side implements them with wf_ring_latest / wf_ring_release).
 * Either way the scene is drawn into the renderer's own multisampled framebuffer and resolved, so
 * a window screenshot and a headless frame of one scene are the same image.
 *
 * Shading (documented because tests recompute it): with the albedo a, the unit normal n facing the
 * viewer, the view direction v and for each light the unit direction l towards it and colour c,
 *   colour = a * (ambient + sum_i c_i * max(n.l_i, 0)) + sum_i c_i * 0.25 * max(n.h_i, 0)^48
 * (h_i = normalize(l_i + v); the specular term only where n.l_i > 0; with scene.shadows, the first
 * light's terms times the lit fraction of a 3x3 PCF shadow-map lookup), clamped to [0, 1] and
 * written without gamma conversion. The grid is blended on top of what lies under it.
 *
 * Conventions: zero means "default" in every description struct (sokol style); a colour whose four
 * components are all zero is "unset" and gets the default (write {0, 0, 0, 1} for black). Matrices
 * are column-major float[16] (cglm / OpenGL). Every function returns a wf_status; on failure
 * wf_render_last_error() holds what failed and where (file, field, GL error). Nothing here prints
 * or exits. A renderer is used on one thread at a time, the thread whose GL context it lives in.
 *
 * Not installed with the library: viewer/ is for the `weft` program and its tests.
 */
#ifndef WEFT_VIEWER_H
#define WEFT_VIEWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/gpu.h" /* wf_status */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the scene: plain data the caller owns, read only during wf_render_draw -------------------
 */

enum { WF_RENDER_MAX_LIGHTS = 4 };

/** How particles and meshes are coloured. */
typedef enum wf_render_color_mode {
  WF_COLOR_BY_OBJECT = 0, /* each object's colour */
  WF_COLOR_BY_SPEED = 1,  /* a blue-to-red ramp of speed / speed_max, where speeds are given */
  WF_COLOR_BY_STRAIN = 2, /* the same ramp of mesh strain / strain_max (meshes with strain) */
  WF_COLOR_BY_FORCE = 3,  /* the same ramp of point force / force_max (points with force) */
} wf_render_color_mode;
/* Objects without the mode's values are drawn in their own colour. */

/** A set of spheres, drawn as ray-cast impostors with exact depth. */
typedef struct wf_render_points {
  const float *xyzr;  /* count x (x, y, z, radius) */
  const float *speed; /* optional: count speeds (m/s) for WF_COLOR_BY_SPEED */
  const float *force; /* optional: count contact forces (N) for WF_COLOR_BY_FORCE */
  size_t count;
  float color[4];   /* rgba in [0,1]; unset: a palette colour by index */
  const char *name; /* optional: the object's name (the panel's object list) */
} wf_render_points;

/** A triangle mesh (cloth). Normals are computed per vertex (area-weighted, smooth); both sides are
 *  lit, the back with back_color. */
typedef struct wf_render_mesh {
  const float *positions; /* vertex_count x stride floats: x, y, z (a 4th float is ignored) */
  int stride;             /* floats per vertex: 3 or 4; 0 means 4 (the solvers' float4) */
  size_t vertex_count;
  const uint32_t *indices; /* triangle_count x 3 vertex indices */
  size_t triangle_count;
  const float *speed;  /* optional: vertex_count speeds for WF_COLOR_BY_SPEED */
  const float *strain; /* optional: vertex_count strains (dimensionless) for WF_COLOR_BY_STRAIN */
  float color[4];      /* front side; unset: a palette colour by index */
  float back_color[4]; /* back side; unset: color darkened by 0.7 */
  const char *name;    /* optional: the object's name (the panel's object list) */
} wf_render_mesh;

typedef enum wf_render_collider_type {
  WF_RENDER_PLANE = 1,   /* points x with dot(normal, x) = offset; drawn as a square of half size
                            `extent` (0: 10) centred under the camera target */
  WF_RENDER_SPHERE = 2,  /* center, radius */
  WF_RENDER_BOX = 3,     /* center, half_extents (axis-aligned) */
  WF_RENDER_CAPSULE = 4, /* segment p0-p1, radius */
} wf_render_collider_type;

typedef struct wf_render_collider {
  wf_render_collider_type type;
  float center[3];
  float normal[3]; /* plane: need not be unit length */
  float offset;
  float radius;
  float half_extents[3];
  float p0[3], p1[3];
  float extent;   /* plane: drawn half size */
  float color[4]; /* unset: light grey */
} wf_render_collider;

typedef struct wf_render_camera {
  float position[3];
  float target[3];
  float up[3];     /* unset (zero): +y */
  float fov_y_deg; /* vertical field of view; 0: 45 */
  float z_near;    /* 0: 0.02 */
  float z_far;     /* 0: 500 */
} wf_render_camera;

/** A directional light. */
typedef struct wf_render_light {
  float direction[3]; /* towards the light, world space, need not be unit length */
  float color[3];     /* linear rgb intensity; unset: 0.8 grey */
} wf_render_light;

/** A line grid on the plane y = height, faded towards extent. */
typedef struct wf_render_grid {
  bool enabled;
  float height;
  float spacing;  /* 0: 1 */
  float extent;   /* half size; 0: 20 */
  float color[4]; /* unset: (0.6, 0.6, 0.6, 0.5) */
} wf_render_grid;

typedef struct wf_render_scene {
  const wf_render_points *points;
  int point_set_count;
  const wf_render_mesh *meshes;
  int mesh_count;
  const wf_render_collider *colliders;
  int collider_count;
  wf_render_camera camera;
  wf_render_light lights[WF_RENDER_MAX_LIGHTS];
  int light_count;  /* 0: a key light from (0.4, 1, 0.6) of 0.75 and a fill from (-0.5, 0.3, -0.8)
                       of 0.25 */
  float ambient[3]; /* unset: 0.22 grey */
  float background[4]; /* unset: (0.11, 0.12, 0.14, 1) */
  wf_render_color_mode color_mode;
  float speed_max;  /* top of the speed ramp; 0: the largest speed in the scene */
  float strain_max; /* top of the strain ramp; 0: the largest strain in the scene */
  float force_max;  /* top of the force ramp, N; 0: the largest force in the scene */
  bool wireframe;   /* meshes and colliders as lines */
  bool shadows;     /* the first light casts shadows (a shadow map over the points, meshes and
                       bounded colliders; the planes and the grid receive them) */
  wf_render_grid grid;
} wf_render_scene;

/* ---- the renderer ------------------------------------------------------------------------------
 */

typedef struct wf_render wf_render;

/* How large point sets are drawn (wf_render_desc.large, .large_min; viewer/README.md). */
typedef enum wf_render_large {
  WF_RENDER_LARGE_AUTO = 0, /* compute where the context has GL 4.5, else sprites */
  WF_RENDER_LARGE_SPRITES,  /* point sprites: one vertex a sphere, the square around its outline
                               (a sphere whose centre leaves the window or that the near plane
                               cuts is not drawn) */
  WF_RENDER_LARGE_COMPUTE,  /* compute shaders write the nearest sphere of each pixel (a
                               visibility buffer), one full-screen pass shades it; no MSAA on
                               their edges. wf_render_create refuses it below GL 4.5 */
} wf_render_large;

typedef struct wf_render_desc {
  int width, height; /* framebuffer size in pixels; 0: 640 x 480 */
  int samples;       /* MSAA samples: 0 means 4, 1 means none; capped at GL_MAX_SAMPLES */
  int large_min;     /* point sets of at least this many spheres are drawn the large way (a 1M-grain
                        pile draws several times faster on GPUs with little raster hardware, such as
                        the H100/H200): 0: 100000; < 0: never (every set as quads) */
  wf_render_large large;  /* how: WF_RENDER_LARGE_AUTO (0) is compute where the context has
                             GL 4.5, else point sprites */
  const char *shader_dir; /* directory of the *.glsl files; NULL: $WEFT_SHADER_DIR, then
                             <executable>/../share/weft/shaders, <executable>/assets/shaders, then
                             the copies built into the library */
  bool debug;             /* GL debug output (always on in builds without NDEBUG) */
  void (*log)(int level, const char *message, void *user); /* GL debug messages (WF_LOG_*) */
  void *log_user;
} wf_render_desc;

/** Per-frame figures of the last wf_render_draw. */
typedef struct wf_render_stats {
  double draw_ms; /* host time of the last draw (with llvmpipe that is the rendering) */
  double gpu_ms;  /* GL time (timestamps) of an earlier frame; -1 while none is available */
  /* that frame's GL time by phase (timestamps; -1 while none): the point upload, the shadow
     map, the scene (colliders, meshes, points), the rest (grid, MSAA resolve) */
  double gpu_upload_ms, gpu_shadow_ms, gpu_scene_ms, gpu_rest_ms;
  double cpu_bounds_ms, cpu_upload_ms; /* host time of the shadow map's bounds and of uploads */
  size_t points, triangles, colliders;
  uint64_t frames;    /* draws so far */
  uint64_t gl_errors; /* errors reported through the GL debug output so far */
} wf_render_stats;

/** Creates a renderer in the OpenGL (>= 3.3 core) context current on this thread. */
wf_status wf_render_create(const wf_render_desc *desc, wf_render **out);
/** Creates a renderer with its own headless EGL context, width x height pixels. */
wf_status wf_render_headless_create(int width, int height, wf_render **out);
/** The same with every option of wf_render_desc. */
wf_status wf_render_headless_create_desc(const wf_render_desc *desc, wf_render **out);
/** Frees the GL objects (and the EGL context of a headless renderer). NULL is ignored. */
void wf_render_destroy(wf_render *r);

/** Changes the framebuffer size. */
wf_status wf_render_resize(wf_render *r, int width, int height);
void wf_render_size(const wf_render *r, int *width, int *height);
/** Draws the scene into the renderer's framebuffer (not the window: see wf_render_present). */
wf_status wf_render_draw(wf_render *r, const wf_render_scene *scene);
/** Copies the last drawn frame into framebuffer fb (0: the window) scaled to width x height. */
wf_status wf_render_present(wf_render *r, unsigned fb, int width, int height);
/** The last drawn frame as width*height*4 bytes RGBA, first row at the top. bytes must be at least
 *  that. */
wf_status wf_render_read_rgba(wf_render *r, uint8_t *rgba, size_t bytes);
/** The same without waiting for the GPU: starts copying the last drawn frame into one of two
 *  pixel buffers, and fills rgba with the frame the previous call started (*got true; false on
 *  the first call after creation or a resize, rgba untouched). A frame's pixels come back one
 *  call later, as a window's presentation does not wait for the GPU either (weft view --bench,
 *  video). */
wf_status wf_render_read_rgba_async(wf_render *r, uint8_t *rgba, size_t bytes, bool *got);
/** The colour bar of the ramp of colour mode `mode` (not WF_COLOR_BY_OBJECT): as
 *  wf_render_draw_speed_bar with the mode's unit ("m/s", "strain", "N") after the top value. */
wf_status wf_render_draw_color_bar(wf_render *r, wf_render_color_mode mode, float top);
/** Draws the colour bar of the speed ramp (0, speed_max / 2 and speed_max m/s under it) over the
 *  bottom-left corner of the last drawn frame, as the window's overlay does, so pictures coloured
 *  by speed say what the colours mean. Text at 1x up to 720 rows, larger above. */
wf_status wf_render_draw_speed_bar(wf_render *r, float speed_max);
/** Writes the last drawn frame as a PNG (to path.tmp, then renamed to path). */
wf_status wf_render_write_png(wf_render *r, const char *path);
void wf_render_stats_get(const wf_render *r, wf_render_stats *out);
/** "llvmpipe (LLVM 15.0.6, 256 bits), GL 4.5 (Core Profile) Mesa 22.3.6, EGL surfaceless". */
const char *wf_render_info(const wf_render *r);
/** Where the shaders came from: their directory, or "built-in". */
const char *wf_render_shader_origin(const wf_render *r);

/** The camera's view and projection matrices (column-major) for a viewport of this aspect
 *  (width / height), with the defaults of wf_render_camera applied. */
void wf_render_camera_matrices(const wf_render_camera *camera, float aspect, float view[16],
                               float proj[16]);
/** Writes rgba (width*height*4 bytes, first row at the top) as a PNG through a temporary file. */
wf_status wf_png_write_rgba(const char *path, int width, int height, const uint8_t *rgba);
/** This thread's last viewer/renderer failure ("" when none). */
const char *wf_render_last_error(void);

/* ---- the window application ---------------------------------------------------------------- */

/** What the simulation side reports for the overlay. */
typedef struct wf_viewer_sim_stats {
  double sim_ms;       /* simulation time per frame */
  uint64_t frame;      /* simulation frame number */
  const char *devices; /* "cuda:0 NVIDIA H200, cuda:1 ..." (copied) */
  const char *status;  /* optional one-line status (copied) */
  double realtime;     /* simulated seconds per wall-clock second lately; 0: unknown */
  bool has_energy;     /* total_energy and max_speed below are set (the panel's plots) */
  double total_energy; /* J, of frame energy_frame */
  double max_speed;    /* m/s, of frame energy_frame */
  uint64_t energy_frame;
} wf_viewer_sim_stats;

enum { WF_VIEWER_MAX_MATERIALS = 8 };
/** A contact material the panel shows and changes (particles: weft/particles.h). */
typedef struct wf_viewer_material {
  char name[32];
  float stiffness;   /* N/m (linear contacts; XPBD: 1 / compliance) */
  float friction;    /* Coulomb coefficient */
  float restitution; /* [0, 1] */
} wf_viewer_material;

/** The simulation's parameters the panel shows and changes (wf_viewer_source.params_*). */
typedef struct wf_viewer_params {
  float gravity[3];     /* m/s² */
  float damping;        /* global velocity damping, 1/s */
  float drag_stiffness; /* N/m of the mouse spring (wf_panel_pick); 0: the source's default */
  float drag_damping;   /* N·s/m of the mouse spring */
  int material_count;   /* the first WF_VIEWER_MAX_MATERIALS materials */
  wf_viewer_material materials[WF_VIEWER_MAX_MATERIALS];
} wf_viewer_params;

/** The frame source: how the window gets frames and sends commands. Every callback is called on
 *  the window's thread and must not block. Only `latest` is required. */
typedef struct wf_viewer_source {
  void *user;
  /** Newest finished frame not handed out before: fill *out (pointers valid until release) and
   *  return true; false when there is nothing newer (the viewer keeps drawing what it holds). */
  bool (*latest)(void *user, wf_render_scene *out);
  /** Gives back a frame from latest. The viewer holds at most one frame between draws (so a
   *  wf_ring needs 3 slots or more) and releases it as soon as it has a newer one. */
  void (*release)(void *user, const wf_render_scene *frame);
  void (*set_paused)(void *user, bool paused);
  void (*step)(void *user);                    /* one frame, while paused */
  void (*reset)(void *user);                   /* back to the initial state */
  void (*set_speed)(void *user, double speed); /* simulated time per frame, x1 = real time */
  void (*stats)(void *user, wf_viewer_sim_stats *out);
  /* optional, for the panel (viewer/panel.h): */
  bool (*params_get)(void *user, wf_viewer_params *out);
  void (*params_set)(void *user, const wf_viewer_params *p);
  /** Pulls point `point` of object `object` (the frame's point sets, then its meshes: the world's
   *  objects in order) towards target (m, world) by a spring; active false ends the drag. */
  void (*drag)(void *user, int object, uint32_t point, const float target[3], bool active);
  /** Loads the scene file again (the panel's button, or the watched file changed). */
  void (*reload)(void *user);
} wf_viewer_source;

typedef struct wf_viewer wf_viewer;

/** Things a key does; wf_viewer_apply does them as if the key was pressed. */
typedef enum wf_viewer_action {
  WF_VIEWER_NONE = 0,
  WF_VIEWER_PAUSE,      /* space: pause / resume */
  WF_VIEWER_STEP,       /* '.' or N: one step (pauses first) */
  WF_VIEWER_RESET,      /* R: reset the simulation and the camera */
  WF_VIEWER_FASTER,     /* '+': simulation speed x2 (at most 64) */
  WF_VIEWER_SLOWER,     /* '-': simulation speed / 2 (at least 1/64) */
  WF_VIEWER_WIREFRAME,  /* W */
  WF_VIEWER_COLOR_MODE, /* C: by object, speed, strain, contact force, in turn */
  WF_VIEWER_SCREENSHOT, /* P: <screenshot_dir>/weft_NNNN.png */
  WF_VIEWER_HELP,       /* H or F1 */
  WF_VIEWER_VSYNC,      /* V */
  WF_VIEWER_QUIT,       /* Esc */
  WF_VIEWER_RECORD,     /* O: start / stop recording a video (desc.record) */
  WF_VIEWER_PANEL,      /* Tab: the panel on / off (viewer/panel.h) */
} wf_viewer_action;

typedef struct wf_viewer_desc {
  const char *title;      /* NULL: "weft" */
  int width, height;      /* window size in screen coordinates; 0: 1280 x 800 */
  bool no_vsync;          /* vsync is on unless this is set */
  int samples;            /* as wf_render_desc.samples */
  const char *shader_dir; /* as wf_render_desc.shader_dir */
  wf_viewer_source source;
  const wf_render_camera *camera; /* initial camera; NULL: the first frame's */
  const char *screenshot_dir;     /* NULL: the current directory */
  bool start_paused;
  bool hide_overlay;
  long max_frames; /* close after this many drawn frames; 0: when the window is closed */
  /** Called after each drawn frame (frame counts from 0); return false to close the window. */
  bool (*on_frame)(void *user, wf_viewer *v, long frame);
  void *on_frame_user;
  /** The record key (WF_VIEWER_RECORD): starts or stops a recording (the caller encodes the
   *  frames, e.g. in on_frame) and puts a line for the overlay in msg. NULL: the key says that
   *  this program cannot record. */
  void (*record)(void *user, wf_viewer *v, char *msg, size_t msg_size);
  void *record_user;
  void (*log)(int level, const char *message, void *user);
  void *log_user;
  /** The panel (viewer/panel.h; built with Dear ImGui): shown from the start when set (Tab
   *  toggles it). watch_path: a file whose modification time is polled twice a second; a change
   *  calls source.reload. */
  bool show_panel;
  const char *watch_path;
} wf_viewer_desc;

/** Opens the window and runs until it is closed (Esc, the close button, max_frames, on_frame).
 *  WF_ERR_UNSUPPORTED when no display or no GL 3.3 context is available. */
wf_status wf_viewer_run(const wf_viewer_desc *desc);
/** Writes the last drawn 3-D view (without the text overlay) to path as a PNG. */
wf_status wf_viewer_screenshot(wf_viewer *v, const char *path);
/** Writes the whole window as it will be shown (the 3-D view, the overlay and the panel) to path
 *  as a PNG; call from on_frame (before the swap). */
wf_status wf_viewer_screenshot_window(wf_viewer *v, const char *path);
/** Does what a key would (see wf_viewer_action). */
void wf_viewer_apply(wf_viewer *v, wf_viewer_action action);
/** The action bound to a GLFW key (key callback) or, when key is 0, to a typed character. */
wf_viewer_action wf_viewer_action_for_key(int glfw_key, unsigned codepoint);
/** The renderer inside the window (valid during wf_viewer_run). */
wf_render *wf_viewer_renderer(wf_viewer *v);

/** Figures of the window's last frame. */
typedef struct wf_viewer_stats {
  double fps;       /* frames per second over the last half second */
  double render_ms; /* draw + present + overlay of the last frame, host time */
  double sim_speed;
  bool paused, wireframe;
  wf_render_color_mode color_mode;
  uint64_t frames_received; /* frames taken from the source */
  int framebuffer_width, framebuffer_height;
  float content_scale; /* HiDPI: framebuffer pixels per screen coordinate */
} wf_viewer_stats;
void wf_viewer_stats_get(const wf_viewer *v, wf_viewer_stats *out);

#ifdef __cplusplus
}
#endif
#endif
