/* The viewer's internals: the renderer object, shader loading, the headless EGL context, unit
 * geometry and the error text.
 *
 * Invariants
 *  - Every GL call on a renderer happens with its context current: a window's (the caller makes
 *    it current) or its own EGL context (wf__headless_make_current before each call).
 *  - The scene is drawn into fbo_draw (multisampled unless samples == 1) and resolved into
 *    fbo_resolve; reading pixels, PNGs and presenting all use fbo_resolve, so what a window shows
 *    and what a headless renderer writes are the same pixels.
 */
#ifndef WEFT_VIEWER_INTERNAL_H
#define WEFT_VIEWER_INTERNAL_H

#include <cglm/cglm.h>
#include <epoxy/gl.h>
#include <stdarg.h>

#include "viewer.h"

/* ---- errors (error.c) ---- */
wf_status wf__render_error(wf_status st, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
const char *wf__gl_error_name(GLenum e);

/* ---- shaders (shaders.c) ---- */
/* Chooses where the shaders come from: dir (must hold them all), else the search of
 * wf_render_desc.shader_dir, else the built-in copies. origin receives the directory or
 * "built-in". */
wf_status wf__shaders_locate(const char *dir, char *origin, size_t origin_size);
/* What goes in front of a program's files (after the #version line): lighting.glsl before the
 * fragment shader (lit programs), sphere_bounds.glsl before the vertex or compute shader. */
enum { WF__SHADER_LIGHTING = 1u, WF__SHADER_SPHERE_BOUNDS = 2u };
/* Builds a compute program from cs, prefixed with "#version 450 core" (render_splat.c). */
wf_status wf__compute_build(const char *origin, const char *cs, unsigned with, GLuint *out);
/* Builds a program from vs and fs (file names such as "mesh.vert.glsl"), each prefixed with
 * "#version 330 core" and what `with` (WF__SHADER_*) asks for. */
wf_status wf__program_build(const char *origin, const char *vs, const char *fs, unsigned with,
                            GLuint *out);

/* ---- the built-in shader copies (generated: shaders_embedded.c) ---- */
typedef struct wf__embedded_file {
  const char *name;
  const unsigned char *data;
  size_t size;
} wf__embedded_file;
extern const wf__embedded_file wf__embedded_shaders[];
extern const size_t wf__embedded_shader_count;

/* ---- headless EGL (headless.c) ---- */
typedef struct wf__headless wf__headless;
wf_status wf__headless_open(bool debug, wf__headless **out, char *info, size_t info_size);
wf_status wf__headless_make_current(wf__headless *h);
void wf__headless_close(wf__headless *h);

/* ---- the text overlay (overlay.c) ---- */
typedef struct wf__overlay wf__overlay;
wf_status wf__overlay_create(const char *shader_origin, wf__overlay **out);
void wf__overlay_destroy(wf__overlay *o);
/* Queues a translucent box / a line of text at (x, y) in overlay units (framebuffer pixels /
 * scale, origin top left); '\n' starts a new line. */
void wf__overlay_box(wf__overlay *o, float x, float y, float w, float h, const uint8_t rgba[4]);
void wf__overlay_text(wf__overlay *o, float x, float y, const char *text, const uint8_t rgba[4]);
/* Text is monospace: WF__OVERLAY_CHAR_W units a character, WF__OVERLAY_LINE_H a line. */
#define WF__OVERLAY_CHAR_W 6.0f
#define WF__OVERLAY_LINE_H 11.0f
/* A box shaded from the colour `left` to `right`. */
void wf__overlay_gradient(wf__overlay *o, float x, float y, float w, float h, const uint8_t left[4],
                          const uint8_t right[4]);
/* Size of text in overlay units. */
void wf__overlay_measure(const char *text, float *w, float *h);
/* Splits text into pieces of at most cols characters (at spaces when one is in the second half
 * of the line, else mid-word; the spaces at a break are dropped): (start, length) pairs into
 * pieces, at most max; returns their number. No GL: the layout's tests call it. */
int wf__overlay_wrap(const char *text, int cols, int (*pieces)[2], int max);
/* The overlay's layout in a width x height window (overlay units): lines top left, each wrapped
 * to the width with a box of its own (rows: len characters of text from lines[source]); the help
 * text top right, or under the rows when it would overlap them (help_box; zero when help is
 * NULL); the colour bar's ramp bottom left (bar). Returns the number of rows. No GL. */
typedef struct wf__overlay_row {
  const char *text;
  int len, source;
  float x, y, w, h;
} wf__overlay_row;
int wf__overlay_layout(const char *const *lines, int n_lines, const char *help, float width,
                       float height, wf__overlay_row *rows, int max_rows, wf__overlay_row *help_box,
                       wf__overlay_row *bar);
/* Queues the colour bar of the speed ramp at bar (from wf__overlay_layout): a box, the ramp, and
 * 0, top / 2 and top m/s (top <= 0: "max m/s"). */
void wf__overlay_speed_bar(wf__overlay *o, const wf__overlay_row *bar, float top);
/* The same for any ramp, with unit after the top value ("m/s", "strain", "N"). */
void wf__overlay_color_bar(wf__overlay *o, const wf__overlay_row *bar, float top, const char *unit);
/* The unit of colour mode m's ramp ("" for WF_COLOR_BY_OBJECT). */
const char *wf__color_mode_unit(wf_render_color_mode m);
/* Draws what was queued into the bound framebuffer of fb_w x fb_h pixels, scaled by scale. */
void wf__overlay_flush(wf__overlay *o, int fb_w, int fb_h, float scale);

/* ---- unit shapes for colliders (geometry.c) ---- */
/* A mesh of 7 floats per vertex (position, normal, speed 0) and 32-bit indices. */
typedef struct wf__shape {
  float *vertices;
  uint32_t *indices;
  size_t vertex_count, index_count;
} wf__shape;
/* unit sphere (radius 1), cube (half size 1), open cylinder (radius 1, z in [0, 1]), square
 * (x, z in [-1, 1], normal +y) */
enum { WF__SHAPE_SPHERE, WF__SHAPE_CUBE, WF__SHAPE_CYLINDER, WF__SHAPE_SQUARE, WF__SHAPE_COUNT };
wf_status wf__shape_make(int which, wf__shape *out);
void wf__shape_free(wf__shape *s);
/* Fills out (7 floats per vertex) with positions, smooth area-weighted normals and speeds of m.
 * Checks the indices; errors name meshes[index]. */
wf_status wf__mesh_vertices(const wf_render_mesh *m, int index, float *out);

/* ---- the renderer (render.c) ---- */
typedef struct wf__gpu_shape {
  GLuint vao, vbo, ebo;
  GLsizei index_count;
} wf__gpu_shape;

/* What one pass of a frame draws with (render.c: the lit pass and the shadow pass). */
typedef struct wf__frame {
  mat4 view, proj;
  mat3 view3;
  float light_dir[WF_RENDER_MAX_LIGHTS][3], light_color[WF_RENDER_MAX_LIGHTS][3], ambient[3];
  int light_count;
  int by_speed;
  float speed_max;
  float target[3];
  float light0[3];    /* world direction towards the first light; zero: none */
  float viewport[4];  /* x, y, width, height in pixels */
  bool shadow_pass;   /* drawing the shadow map: planes skipped, no shadow lookups */
  int shadows;        /* the lookups are on */
  int point_shadows;  /* ... and the compute path's depth image of the light's view too
                         (render_splat.c; texture unit 6) */
  mat4 shadow_matrix; /* view space to the shadow map's [0, 1]^3 */
  float shadow_offset;
} wf__frame;

/* The colour of point set i (its own, else colour i of the palette; render.c). */
void wf__point_color(const wf_render_points *p, int i, float out[3]);
/* The shadow uniforms of a lit program (lighting.glsl). */
typedef struct wf__shadow_locs {
  GLint on, matrix, offset, map, points_on, points_map;
} wf__shadow_locs;
void wf__shadow_locs_get(GLuint prog, wf__shadow_locs *l);
/* The uniforms of the bound program for lights and shadows (render.c). */
void wf__set_lights(GLint dir, GLint color, GLint count, GLint ambient, const wf__frame *f);
void wf__set_shadows(const wf__shadow_locs *l, const wf__frame *f);

/* ---- the point sets onto the GPU (render_upload.c) ---- */
/* Uploads the frame's point sets into vbo_sphere / vbo_speed (set i from r->point_first[i]) and
 * puts their bounds in r->pts_lo, pts_hi, pts_rmax. */
wf_status wf__upload_points(wf_render *r, const wf_render_scene *s);
/* Frees the staging buffer (the context current). */
void wf__upload_destroy(wf_render *r);

/* ---- large point sets by compute (render_splat.c) ---- */
enum { WF__SPLAT_SETS = 8 }; /* sets one frame's compute path draws; more go as sprites */
typedef struct wf__splat_images {
  GLuint depth, id; /* R32UI at the pass's viewport size; the shadow pass has no id image */
  int w, h;
} wf__splat_images;
typedef struct wf__splat {
  GLuint prog_comp, prog_resolve;
  wf__splat_images img[2];      /* [0]: the lit pass, [1]: the shadow pass */
  GLuint tex_sphere, tex_speed; /* buffer textures over vbo_sphere, vbo_speed */
  struct {
    GLint view, proj, size, first, count, pass;
  } uc;
  struct {
    GLint ids, spheres, speeds, view, proj, viewport, sets, set_end, set_color, set_by_speed,
        speed_max, light_dir, light_color, light_count, ambient;
    wf__shadow_locs shadow;
  } ur;
} wf__splat;

/* Builds the programs (GL 4.5 current; on the first frame with a set to draw). */
wf_status wf__splat_init(wf_render *r);
void wf__splat_destroy(wf_render *r);
/* Whether point set i of s is drawn by compute this frame (the first WF__SPLAT_SETS sets of
 * large_min spheres or more, when r->large is COMPUTE). */
bool wf__splat_takes(const wf_render *r, const wf_render_scene *s, int i);
/* Draws those sets into the bound framebuffer (its viewport f->viewport); the shadow pass
 * leaves their depths in an image bound to texture unit 6 instead (wf__frame.point_shadows).
 * *drew: some set was drawn. The point sets are in vbo_sphere / vbo_speed (wf__upload_points). */
wf_status wf__splat_draw(wf_render *r, const wf__frame *f, const wf_render_scene *s, bool *drew);

/* Uniform locations of a sphere impostor program (quads or point sprites). */
typedef struct wf__sphere_uniforms {
  GLint view, proj, color, by_speed, speed_max, light_dir, light_color, light_count, ambient;
  GLint depth_only, sprite, viewport, point_max;
  wf__shadow_locs shadow;
} wf__sphere_uniforms;

struct wf_render {
  int width, height, samples;
  wf__headless *headless; /* NULL: the caller's context */
  bool debug;
  void (*log)(int level, const char *message, void *user);
  void *log_user;

  GLuint fbo_draw, rb_color, rb_depth;       /* multisampled (or the only one when samples == 1) */
  GLuint fbo_resolve, rb_resolve, rb_rdepth; /* single-sampled copy that is read and presented */

  GLuint prog_sphere, prog_mesh, prog_grid, prog_sprite;
  wf__sphere_uniforms us, usp; /* of prog_sphere (quads) and prog_sprite (points) */
  size_t large_min;            /* wf_render_desc.large_min (SIZE_MAX: never) */
  wf_render_large large;       /* SPRITES or COMPUTE (AUTO resolved at creation) */
  wf__splat splat;             /* the compute path's programs and images (render_splat.c) */
  float point_max;             /* the largest point size */
  struct {
    GLint model, view, proj, normal_view, color, back_color, two_sided, by_speed, speed_max,
        light_dir, light_color, light_count, ambient;
    wf__shadow_locs shadow;
  } um;
  GLuint fbo_shadow, tex_shadow; /* the first light's depth map (render_shadow.c), made on use */
  struct {
    GLint view, proj, height, extent, spacing, color;
  } ug;

  GLuint vao_sphere, vbo_corner, vbo_sphere, vbo_speed, vao_sprite;
  /* the frame's point sets, uploaded once for both passes (wf__upload_points): where each set's
     spheres and speeds start in vbo_sphere / vbo_speed, in instances */
  size_t *point_first;
  int point_first_cap;
  size_t points_cap; /* GL 4.4: spheres vbo_sphere and vbo_speed hold */
  GLuint stage;      /* GL 4.4: persistently mapped staging buffer of the uploads */
  void *stage_ptr;
  size_t stage_bytes;
  GLsync stage_fence;              /* the last copy out of it */
  struct wf__upload_chunk *chunks; /* GL 4.4: the upload's chunk table, kept between frames */
  size_t chunks_cap;
  float pts_lo[3], pts_hi[3], pts_rmax; /* the point sets' bounds (wf__upload_points) */
  GLuint vao_mesh, vbo_mesh, ebo_mesh;
  GLuint vao_empty;
  wf__gpu_shape shapes[WF__SHAPE_COUNT];

  float *scratch; /* mesh vertices for upload */
  size_t scratch_floats;

  GLuint read_pbo[2]; /* wf_render_read_rgba_async: two pixel buffers in turn */
  GLsync read_fence[2];
  int read_w, read_h, read_next, read_queued;
  GLuint stamp[2][5]; /* GL timestamps of a frame's phases (wf_render_stats), two sets in turn */
  bool timer_used[2];
  int timer_next;

  wf__overlay *overlay; /* wf_render_draw_speed_bar's text and boxes, made on first use */
  /* colour by strain / force: the scene's objects with those values in place of the speeds */
  wf_render_points *mode_points;
  wf_render_mesh *mode_meshes;
  int mode_points_cap, mode_meshes_cap;

  wf_render_stats stats;
  bool drawn; /* a frame is in fbo_resolve */
  char info[512];
  char shader_origin[512];
  char
      debug_msg[512]; /* the last GL debug error (the callback runs synchronously, on our thread) */
};

/* Keeps the GL driver modules loaded until exit (gl_pin.c). */
void wfv_pin_gl_drivers(void);

#endif
