/* The renderer: draws a wf_render_scene with OpenGL 3.3 core into its own framebuffer.
 *
 * A frame is: clear to the background; colliders and meshes through the mesh program (the
 * colliders are unit shapes placed by a model matrix); point sets as instanced sphere impostors
 * (a quad per sphere, ray-cast in the fragment shader, exact gl_FragDepth); the grid blended on
 * top (depth-tested, not depth-writing); then the multisampled image is resolved into fbo_resolve,
 * which is what wf_render_read_rgba, wf_render_write_png and wf_render_present read. The scene is
 * re-uploaded every frame (streamed buffers): the simulation changes it every frame anyway, and
 * the renderer then holds no pointer into the caller's data after wf_render_draw returns.
 *
 * Lighting happens in view space: light directions are turned into view space here, once a frame.
 * GL errors are checked after each draw call group (glGetError, cheap) and, with debug output
 * (builds without NDEBUG, or desc.debug), counted by the debug callback and passed to the log. */
#include <cglm/cglm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "viewer_internal.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void GLAPIENTRY debug_message(GLenum source, GLenum type, GLuint id, GLenum severity,
                                     GLsizei length, const GLchar *message, const void *user) {
  wf_render *r = (wf_render *)user;
  int level;
  if (type == GL_DEBUG_TYPE_ERROR) {
    r->stats.gl_errors++;
    snprintf(r->debug_msg, sizeof r->debug_msg, "%s", message);
    level = WF_LOG_ERROR;
  } else if (severity == GL_DEBUG_SEVERITY_HIGH || severity == GL_DEBUG_SEVERITY_MEDIUM) {
    level = WF_LOG_WARN;
  } else {
    level = WF_LOG_DEBUG;
  }
  if (r->log) {
    char msg[640];
    snprintf(msg, sizeof msg, "GL debug (id %u): %s", id, message);
    r->log(level, msg, r->log_user);
  }
}

/* WF_OK, or the GL error of the step just done (with the debug text when there is one). */
static wf_status gl_check(const wf_render *r, const char *func, const char *what,
                          uint64_t errors_before) {
  GLenum e = glGetError();
  if (e == GL_NO_ERROR && r->stats.gl_errors == errors_before) return WF_OK;
  while (glGetError() != GL_NO_ERROR) {
  }
  return wf__render_error(WF_ERR_BACKEND, func, "OpenGL error %s (0x%04x) while %s%s%s",
                          wf__gl_error_name(e), (unsigned)e, what,
                          r->stats.gl_errors != errors_before ? "; GL debug: " : "",
                          r->stats.gl_errors != errors_before ? r->debug_msg : "");
}

static void delete_readers(wf_render *r);

static wf_status make_current(wf_render *r) {
  return r->headless ? wf__headless_make_current(r->headless) : WF_OK;
}

static void delete_targets(wf_render *r) {
  if (r->fbo_draw && r->fbo_draw != r->fbo_resolve) glDeleteFramebuffers(1, &r->fbo_draw);
  if (r->fbo_resolve) glDeleteFramebuffers(1, &r->fbo_resolve);
  GLuint rbs[4] = {r->rb_color, r->rb_depth, r->rb_resolve, r->rb_rdepth};
  glDeleteRenderbuffers(4, rbs);
  r->fbo_draw = r->fbo_resolve = r->rb_color = r->rb_depth = r->rb_resolve = r->rb_rdepth = 0;
}

static GLuint renderbuffer(int samples, GLenum format, int w, int h) {
  GLuint rb;
  glGenRenderbuffers(1, &rb);
  glBindRenderbuffer(GL_RENDERBUFFER, rb);
  if (samples > 1)
    glRenderbufferStorageMultisample(GL_RENDERBUFFER, samples, format, w, h);
  else
    glRenderbufferStorage(GL_RENDERBUFFER, format, w, h);
  return rb;
}

static wf_status create_targets(wf_render *r, const char *func) {
  delete_targets(r);
  uint64_t errs = r->stats.gl_errors;
  glGenFramebuffers(1, &r->fbo_resolve);
  glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_resolve);
  r->rb_resolve = renderbuffer(1, GL_RGBA8, r->width, r->height);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, r->rb_resolve);
  if (r->samples <= 1) { /* draw straight into the resolve target */
    r->rb_rdepth = renderbuffer(1, GL_DEPTH_COMPONENT24, r->width, r->height);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, r->rb_rdepth);
    r->fbo_draw = r->fbo_resolve;
  } else {
    glGenFramebuffers(1, &r->fbo_draw);
    glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_draw);
    r->rb_color = renderbuffer(r->samples, GL_RGBA8, r->width, r->height);
    r->rb_depth = renderbuffer(r->samples, GL_DEPTH_COMPONENT24, r->width, r->height);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, r->rb_color);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_RENDERBUFFER, r->rb_depth);
  }
  GLenum fs = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (fs != GL_FRAMEBUFFER_COMPLETE)
    return wf__render_error(WF_ERR_BACKEND, func,
                            "framebuffer of %d x %d pixels with %d samples is incomplete (0x%04x)",
                            r->width, r->height, r->samples, (unsigned)fs);
  return gl_check(r, func, "creating the framebuffers", errs);
}

static void upload_shape(wf__gpu_shape *g, const wf__shape *s) {
  glGenVertexArrays(1, &g->vao);
  glBindVertexArray(g->vao);
  glGenBuffers(1, &g->vbo);
  glBindBuffer(GL_ARRAY_BUFFER, g->vbo);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(s->vertex_count * 7 * sizeof(float)), s->vertices,
               GL_STATIC_DRAW);
  glGenBuffers(1, &g->ebo);
  glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, g->ebo);
  glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(s->index_count * sizeof(uint32_t)), s->indices,
               GL_STATIC_DRAW);
  for (GLuint a = 0; a < 3; a++)
    glEnableVertexAttribArray(a);
  glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 28, (void *)0);
  glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, 28, (void *)12);
  glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, 28, (void *)24);
  g->index_count = (GLsizei)s->index_count;
}

static void sphere_uniforms(GLuint p, wf__sphere_uniforms *u) {
#define U(name) glGetUniformLocation(p, name)
  u->view = U("u_view"), u->proj = U("u_proj"), u->color = U("u_color");
  u->by_speed = U("u_by_speed"), u->speed_max = U("u_speed_max");
  u->light_dir = U("u_light_dir"), u->light_color = U("u_light_color");
  u->light_count = U("u_light_count"), u->ambient = U("u_ambient");
  wf__shadow_locs_get(p, &u->shadow);
  u->depth_only = U("u_depth_only"), u->sprite = U("u_sprite"), u->viewport = U("u_viewport");
  u->point_max = U("u_point_max");
#undef U
}

static wf_status render_init(wf_render *r, const wf_render_desc *d, const char *func) {
  if (epoxy_gl_version() < 33)
    return wf__render_error(
        WF_ERR_UNSUPPORTED, func, "OpenGL 3.3 is needed; the context has %d.%d (%s)",
        epoxy_gl_version() / 10, epoxy_gl_version() % 10, (const char *)glGetString(GL_RENDERER));
  char where[sizeof r->info];
  memcpy(where, r->info, sizeof where); /* headless: the EGL display used */
  int n = snprintf(r->info, sizeof r->info, "%s, GL %s%s%s", (const char *)glGetString(GL_RENDERER),
                   (const char *)glGetString(GL_VERSION), where[0] ? ", " : "", where);
  (void)n; /* a long renderer string is cut short, which is fine */
  while (glGetError() != GL_NO_ERROR) {
  }
  if (r->debug && (epoxy_gl_version() >= 43 || epoxy_has_gl_extension("GL_KHR_debug"))) {
    glEnable(GL_DEBUG_OUTPUT);
    glEnable(GL_DEBUG_OUTPUT_SYNCHRONOUS);
    glDebugMessageCallback(debug_message, r);
  }
  GLint max_samples = 1;
  glGetIntegerv(GL_MAX_SAMPLES, &max_samples);
  r->samples = d->samples > 0 ? d->samples : 4;
  if (r->samples > max_samples) r->samples = max_samples > 0 ? max_samples : 1;

  wf_status st = wf__shaders_locate(d->shader_dir, r->shader_origin, sizeof r->shader_origin);
  if (st == WF_OK)
    st = wf__program_build(r->shader_origin, "sphere.vert.glsl", "sphere.frag.glsl",
                           WF__SHADER_LIGHTING, &r->prog_sphere);
  if (st == WF_OK)
    st = wf__program_build(r->shader_origin, "mesh.vert.glsl", "mesh.frag.glsl",
                           WF__SHADER_LIGHTING, &r->prog_mesh);
  if (st == WF_OK)
    st = wf__program_build(r->shader_origin, "grid.vert.glsl", "grid.frag.glsl", 0, &r->prog_grid);
  if (st != WF_OK) return st;
#define U(p, name) glGetUniformLocation(p, name)
  sphere_uniforms(r->prog_sphere, &r->us);
  GLuint p = r->prog_mesh;
  r->um.model = U(p, "u_model"), r->um.view = U(p, "u_view"), r->um.proj = U(p, "u_proj");
  r->um.normal_view = U(p, "u_normal_view"), r->um.color = U(p, "u_color");
  r->um.back_color = U(p, "u_back_color"), r->um.two_sided = U(p, "u_two_sided");
  r->um.by_speed = U(p, "u_by_speed"), r->um.speed_max = U(p, "u_speed_max");
  r->um.light_dir = U(p, "u_light_dir"), r->um.light_color = U(p, "u_light_color");
  r->um.light_count = U(p, "u_light_count"), r->um.ambient = U(p, "u_ambient");
  wf__shadow_locs_get(p, &r->um.shadow);
  p = r->prog_grid;
  r->ug.view = U(p, "u_view"), r->ug.proj = U(p, "u_proj"), r->ug.height = U(p, "u_height");
  r->ug.extent = U(p, "u_extent"), r->ug.spacing = U(p, "u_spacing");
  r->ug.color = U(p, "u_color");
#undef U

  static const float corners[8] = {-1, -1, 1, -1, -1, 1, 1, 1};
  glGenVertexArrays(1, &r->vao_sphere);
  glBindVertexArray(r->vao_sphere);
  glGenBuffers(1, &r->vbo_corner);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_corner);
  glBufferData(GL_ARRAY_BUFFER, sizeof corners, corners, GL_STATIC_DRAW);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, (void *)0);
  glGenBuffers(1, &r->vbo_sphere);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_sphere);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, 0, (void *)0);
  glVertexAttribDivisor(1, 1);
  glGenBuffers(1, &r->vbo_speed);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_speed);
  glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, 0, (void *)0);
  glVertexAttribDivisor(2, 1);
  /* sprites: the same buffers, a vertex a sphere */
  glGenVertexArrays(1, &r->vao_sprite);
  glBindVertexArray(r->vao_sprite);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_sphere);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, 0, (void *)0);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_speed);
  glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, 0, (void *)0);
  GLfloat range[2] = {1.0f, 1.0f};
  glGetFloatv(GL_ALIASED_POINT_SIZE_RANGE, range);
  r->point_max = range[1] > 1.0f ? range[1] : 1.0f;
  r->large_min = d->large_min < 0 ? SIZE_MAX : d->large_min ? (size_t)d->large_min : 100000;
  bool gl45 = epoxy_gl_version() >= 45;
  if (d->large == WF_RENDER_LARGE_COMPUTE && !gl45)
    return wf__render_error(WF_ERR_UNSUPPORTED, func,
                            "large point sets by compute need OpenGL 4.5; this context has %d.%d "
                            "(use WF_RENDER_LARGE_SPRITES or _AUTO)",
                            epoxy_gl_version() / 10, epoxy_gl_version() % 10);
  if (d->large != WF_RENDER_LARGE_AUTO && d->large != WF_RENDER_LARGE_SPRITES &&
      d->large != WF_RENDER_LARGE_COMPUTE)
    return wf__render_error(WF_ERR_INVALID, func, "desc.large = %d is not a wf_render_large",
                            (int)d->large);
  r->large = d->large == WF_RENDER_LARGE_SPRITES || !gl45 ? WF_RENDER_LARGE_SPRITES
                                                          : WF_RENDER_LARGE_COMPUTE;
  /* the sprite and compute programs are built when a large set first comes (draw_points,
     wf__splat_draw): renderers of small scenes never compile them */

  glGenVertexArrays(1, &r->vao_mesh);
  glBindVertexArray(r->vao_mesh);
  glGenBuffers(1, &r->vbo_mesh);
  glBindBuffer(GL_ARRAY_BUFFER, r->vbo_mesh);
  glGenBuffers(1, &r->ebo_mesh);
  glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, r->ebo_mesh);
  for (GLuint a = 0; a < 3; a++)
    glEnableVertexAttribArray(a);
  glVertexAttribPointer(0, 3, GL_FLOAT, GL_FALSE, 28, (void *)0);
  glVertexAttribPointer(1, 3, GL_FLOAT, GL_FALSE, 28, (void *)12);
  glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, 28, (void *)24);

  for (int i = 0; i < WF__SHAPE_COUNT; i++) {
    wf__shape s;
    if ((st = wf__shape_make(i, &s)) != WF_OK) return st;
    upload_shape(&r->shapes[i], &s);
    wf__shape_free(&s);
  }
  glGenVertexArrays(1, &r->vao_empty);
  glBindVertexArray(0);
  glGenQueries(10, &r->stamp[0][0]);
  r->stats.gpu_ms = -1.0;
  r->stats.gpu_upload_ms = r->stats.gpu_shadow_ms = r->stats.gpu_scene_ms = -1.0;
  r->stats.gpu_rest_ms = -1.0;
  if ((st = gl_check(r, func, "creating buffers and shaders", 0)) != WF_OK) return st;
  return create_targets(r, func);
}

static wf_render *render_alloc(const wf_render_desc *d) {
  wf_render *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->width = d->width > 0 ? d->width : 640;
  r->height = d->height > 0 ? d->height : 480;
#ifdef NDEBUG
  r->debug = d->debug;
#else
  r->debug = true;
#endif
  r->log = d->log;
  r->log_user = d->log_user;
  return r;
}

wf_status wf_render_create(const wf_render_desc *desc, wf_render **out) {
  if (!out) return wf__render_error(WF_ERR_INVALID, __func__, "out is NULL");
  *out = NULL;
  wf_render_desc d = desc ? *desc : (wf_render_desc){0};
  wf_render *r = render_alloc(&d);
  if (!r) return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "renderer");
  wf_status st = render_init(r, &d, __func__);
  if (st != WF_OK) {
    wf_render_destroy(r);
    return st;
  }
  *out = r;
  return WF_OK;
}

wf_status wf_render_headless_create_desc(const wf_render_desc *desc, wf_render **out) {
  if (!out) return wf__render_error(WF_ERR_INVALID, __func__, "out is NULL");
  *out = NULL;
  wf_render_desc d = desc ? *desc : (wf_render_desc){0};
  wf_render *r = render_alloc(&d);
  if (!r) return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "renderer");
  wf_status st = wf__headless_open(r->debug, &r->headless, r->info, sizeof r->info);
  if (st == WF_OK) st = render_init(r, &d, "wf_render_headless_create");
  if (st != WF_OK) {
    wf_render_destroy(r);
    return st;
  }
  *out = r;
  return WF_OK;
}

wf_status wf_render_headless_create(int width, int height, wf_render **out) {
  if (width <= 0 || height <= 0)
    return wf__render_error(WF_ERR_INVALID, __func__, "size %d x %d: both must be > 0", width,
                            height);
  return wf_render_headless_create_desc(&(wf_render_desc){.width = width, .height = height}, out);
}

void wf_render_destroy(wf_render *r) {
  if (!r) return;
  free(r->mode_points), free(r->mode_meshes), free(r->point_first), free(r->chunks);
  if (!r->headless || make_current(r) == WF_OK) {
    delete_targets(r);
    delete_readers(r);
    wf__splat_destroy(r);
    wf__upload_destroy(r);
    GLuint progs[4] = {r->prog_sphere, r->prog_mesh, r->prog_grid, r->prog_sprite};
    for (int i = 0; i < 4; i++)
      if (progs[i]) glDeleteProgram(progs[i]);
    GLuint bufs[5] = {r->vbo_corner, r->vbo_sphere, r->vbo_speed, r->vbo_mesh, r->ebo_mesh};
    glDeleteBuffers(5, bufs);
    GLuint vaos[4] = {r->vao_sphere, r->vao_mesh, r->vao_empty, r->vao_sprite};
    glDeleteVertexArrays(4, vaos);
    for (int i = 0; i < WF__SHAPE_COUNT; i++) {
      GLuint b[2] = {r->shapes[i].vbo, r->shapes[i].ebo};
      glDeleteBuffers(2, b);
      glDeleteVertexArrays(1, &r->shapes[i].vao);
    }
    if (r->stamp[0][0]) glDeleteQueries(10, &r->stamp[0][0]);
    wf__overlay_destroy(r->overlay);
    if (r->fbo_shadow) glDeleteFramebuffers(1, &r->fbo_shadow);
    if (r->tex_shadow) glDeleteTextures(1, &r->tex_shadow);
    if (r->debug && (epoxy_gl_version() >= 43 || epoxy_has_gl_extension("GL_KHR_debug")))
      glDebugMessageCallback(NULL, NULL);
  }
  wf__headless_close(r->headless);
  free(r->scratch);
  free(r);
}

wf_status wf_render_resize(wf_render *r, int width, int height) {
  if (!r || width <= 0 || height <= 0)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p, size %d x %d", (void *)r, width,
                            height);
  if (width == r->width && height == r->height) return WF_OK;
  wf_status st = make_current(r);
  if (st != WF_OK) return st;
  r->width = width, r->height = height, r->drawn = false;
  return create_targets(r, __func__);
}

void wf_render_size(const wf_render *r, int *width, int *height) {
  if (width) *width = r ? r->width : 0;
  if (height) *height = r ? r->height : 0;
}

const char *wf_render_info(const wf_render *r) { return r ? r->info : ""; }
const char *wf_render_shader_origin(const wf_render *r) { return r ? r->shader_origin : ""; }

void wf_render_stats_get(const wf_render *r, wf_render_stats *out) {
  if (out) *out = r ? r->stats : (wf_render_stats){.gpu_ms = -1.0};
}

/* ---- drawing ------------------------------------------------------------------------------- */

static bool unset4(const float c[4]) { return !c[0] && !c[1] && !c[2] && !c[3]; }
static bool unset3(const float c[3]) { return !c[0] && !c[1] && !c[2]; }

static void palette(int i, float out[3]) {
  static const float pal[8][3] = {
      {0.90f, 0.55f, 0.15f}, {0.25f, 0.55f, 0.90f}, {0.35f, 0.75f, 0.35f}, {0.85f, 0.30f, 0.35f},
      {0.65f, 0.45f, 0.85f}, {0.20f, 0.75f, 0.75f}, {0.85f, 0.80f, 0.30f}, {0.70f, 0.70f, 0.70f}};
  memcpy(out, pal[((i % 8) + 8) % 8], 3 * sizeof(float));
}

void wf__point_color(const wf_render_points *p, int i, float out[3]) {
  if (unset4(p->color))
    palette(i, out);
  else
    memcpy(out, p->color, 3 * sizeof(float));
}

/* per-frame values shared by the draw calls */
typedef wf__frame frame_ctx;

static void frame_setup(frame_ctx *f, const wf_render_scene *s, float aspect) {
  wf_render_camera_matrices(&s->camera, aspect, (float *)f->view, (float *)f->proj);
  glm_mat4_pick3(f->view, f->view3);
  memcpy(f->target, s->camera.target, sizeof f->target);
  memset(f->light0, 0, sizeof f->light0);
  f->shadow_pass = false, f->shadows = 0, f->point_shadows = 0, f->shadow_offset = 0.0f;
  glm_mat4_identity(f->shadow_matrix);
  static const wf_render_light defaults[2] = {{{0.4f, 1.0f, 0.6f}, {0.75f, 0.75f, 0.75f}},
                                              {{-0.5f, 0.3f, -0.8f}, {0.25f, 0.25f, 0.25f}}};
  int n = s->light_count;
  const wf_render_light *lights = s->lights;
  if (n <= 0) n = 2, lights = defaults;
  if (n > WF_RENDER_MAX_LIGHTS) n = WF_RENDER_MAX_LIGHTS;
  f->light_count = 0;
  for (int i = 0; i < n; i++) {
    vec3 d = {lights[i].direction[0], lights[i].direction[1], lights[i].direction[2]};
    if (glm_vec3_norm(d) <= 0.0f) continue;
    glm_vec3_normalize(d);
    if (f->light_count == 0) memcpy(f->light0, d, sizeof f->light0);
    glm_mat3_mulv(f->view3, d, f->light_dir[f->light_count]);
    if (unset3(lights[i].color))
      f->light_color[f->light_count][0] = f->light_color[f->light_count][1] =
          f->light_color[f->light_count][2] = 0.8f;
    else
      memcpy(f->light_color[f->light_count], lights[i].color, 3 * sizeof(float));
    f->light_count++;
  }
  if (unset3(s->ambient))
    f->ambient[0] = f->ambient[1] = f->ambient[2] = 0.22f;
  else
    memcpy(f->ambient, s->ambient, sizeof f->ambient);
  f->by_speed = s->color_mode == WF_COLOR_BY_SPEED;
  f->speed_max = s->speed_max;
  if (f->by_speed && !(f->speed_max > 0.0f)) {
    float m = 0.0f;
    for (int i = 0; i < s->point_set_count; i++)
      for (size_t k = 0; s->points[i].speed && k < s->points[i].count; k++)
        if (s->points[i].speed[k] > m) m = s->points[i].speed[k];
    for (int i = 0; i < s->mesh_count; i++)
      for (size_t k = 0; s->meshes[i].speed && k < s->meshes[i].vertex_count; k++)
        if (s->meshes[i].speed[k] > m) m = s->meshes[i].speed[k];
    f->speed_max = m;
  }
  if (!(f->speed_max > 0.0f)) f->speed_max = 1.0f;
}

void wf__set_lights(GLint dir, GLint color, GLint count, GLint ambient, const wf__frame *f) {
  glUniform3fv(dir, WF_RENDER_MAX_LIGHTS, &f->light_dir[0][0]);
  glUniform3fv(color, WF_RENDER_MAX_LIGHTS, &f->light_color[0][0]);
  glUniform1i(count, f->light_count);
  glUniform3fv(ambient, 1, f->ambient);
}

/* The shadow uniforms of the bound program (its locations: on, matrix, offset, map). */
void wf__shadow_locs_get(GLuint prog, wf__shadow_locs *l) {
  l->on = glGetUniformLocation(prog, "u_shadows");
  l->matrix = glGetUniformLocation(prog, "u_shadow_matrix");
  l->offset = glGetUniformLocation(prog, "u_shadow_offset");
  l->map = glGetUniformLocation(prog, "u_shadow_map");
  l->points_on = glGetUniformLocation(prog, "u_point_shadows");
  l->points_map = glGetUniformLocation(prog, "u_point_shadow_map");
}

void wf__set_shadows(const wf__shadow_locs *l, const wf__frame *f) {
  glUniform1i(l->on, f->shadows && !f->shadow_pass);
  glUniformMatrix4fv(l->matrix, 1, GL_FALSE, (const float *)f->shadow_matrix);
  glUniform1f(l->offset, f->shadow_offset);
  glUniform1i(l->map, 1); /* texture unit 1 */
  glUniform1i(l->points_on, f->shadows && !f->shadow_pass && f->point_shadows);
  glUniform1i(l->points_map, 6); /* unit 6 (render_splat.c) */
}

/* Draws a unit shape (or the bound mesh VAO when shape is NULL) with model matrix m. */
static void draw_mesh_with(const wf_render *r, const frame_ctx *f, const wf__gpu_shape *shape,
                           mat4 m, const float color[3], const float back[3], bool two_sided,
                           bool by_speed, GLsizei index_count) {
  mat3 m3, inv, nv;
  glm_mat4_pick3(m, m3);
  glm_mat3_inv(m3, inv);
  glm_mat3_transpose(inv);
  glm_mat3_mul((vec3 *)f->view3, inv, nv);
  glUniformMatrix4fv(r->um.model, 1, GL_FALSE, (const float *)m);
  glUniformMatrix3fv(r->um.normal_view, 1, GL_FALSE, (const float *)nv);
  glUniform3fv(r->um.color, 1, color);
  glUniform3fv(r->um.back_color, 1, back);
  glUniform1i(r->um.two_sided, two_sided);
  glUniform1i(r->um.by_speed, by_speed);
  if (shape) {
    glBindVertexArray(shape->vao);
    index_count = shape->index_count;
  }
  glDrawElements(GL_TRIANGLES, index_count, GL_UNSIGNED_INT, (void *)0);
}

/* Model matrix with columns x, y, z (already scaled) and translation t. */
static void basis_matrix(const float x[3], const float y[3], const float z[3], const float t[3],
                         mat4 m) {
  glm_mat4_identity(m);
  for (int i = 0; i < 3; i++)
    m[0][i] = x[i], m[1][i] = y[i], m[2][i] = z[i], m[3][i] = t[i];
}

/* A unit vector perpendicular to unit n. */
static void perpendicular(const float n[3], float out[3]) {
  vec3 ref = {1.0f, 0.0f, 0.0f};
  if (fabsf(n[0]) > 0.9f) ref[0] = 0.0f, ref[1] = 1.0f;
  glm_vec3_cross((float *)n, ref, out);
  glm_vec3_normalize(out);
}

static wf_status draw_colliders(wf_render *r, const frame_ctx *f, const wf_render_scene *s) {
  for (int i = 0; i < s->collider_count; i++) {
    const wf_render_collider *c = &s->colliders[i];
    float col[3] = {0.62f, 0.62f, 0.60f}, back[3];
    if (!unset4(c->color)) memcpy(col, c->color, sizeof col);
    for (int k = 0; k < 3; k++)
      back[k] = col[k] * 0.7f;
    mat4 m;
    if (f->shadow_pass && c->type == WF_RENDER_PLANE) continue; /* receives, casts nothing */
    switch (c->type) {
    case WF_RENDER_PLANE: {
      vec3 n = {c->normal[0], c->normal[1], c->normal[2]};
      float len = glm_vec3_norm(n);
      if (!(len > 0.0f))
        return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                                "scene.colliders[%d].normal is zero: a plane needs a normal", i);
      glm_vec3_scale(n, 1.0f / len, n);
      float off = c->offset / len, ext = c->extent > 0.0f ? c->extent : 10.0f;
      /* centred under the camera target, so the visible part is always drawn */
      float h = glm_vec3_dot(n, (float *)f->target) - off;
      float t[3] = {f->target[0] - h * n[0], f->target[1] - h * n[1], f->target[2] - h * n[2]};
      vec3 x, z;
      perpendicular(n, x);
      glm_vec3_cross(x, n, z); /* x, n, z right-handed */
      glm_vec3_scale(x, ext, x);
      glm_vec3_scale(z, ext, z);
      basis_matrix(x, n, z, t, m);
      draw_mesh_with(r, f, &r->shapes[WF__SHAPE_SQUARE], m, col, back, true, false, 0);
      break;
    }
    case WF_RENDER_SPHERE:
    case WF_RENDER_BOX: {
      float rad = c->radius;
      float e[3] = {rad, rad, rad};
      if (c->type == WF_RENDER_BOX) memcpy(e, c->half_extents, sizeof e);
      if (!(e[0] > 0.0f && e[1] > 0.0f && e[2] > 0.0f))
        return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                                "scene.colliders[%d]: %s must be > 0 (got %g, %g, %g)", i,
                                c->type == WF_RENDER_BOX ? "half_extents" : "radius", (double)e[0],
                                (double)e[1], (double)e[2]);
      float x[3] = {e[0], 0, 0}, y[3] = {0, e[1], 0}, z[3] = {0, 0, e[2]};
      basis_matrix(x, y, z, c->center, m);
      draw_mesh_with(r, f, &r->shapes[c->type == WF_RENDER_BOX ? WF__SHAPE_CUBE : WF__SHAPE_SPHERE],
                     m, col, back, false, false, 0);
      break;
    }
    case WF_RENDER_CAPSULE: {
      float rad = c->radius;
      if (!(rad > 0.0f))
        return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                                "scene.colliders[%d].radius must be > 0 (got %g)", i, (double)rad);
      vec3 axis = {c->p1[0] - c->p0[0], c->p1[1] - c->p0[1], c->p1[2] - c->p0[2]};
      float len = glm_vec3_norm(axis);
      if (len > 1e-7f * rad) {
        vec3 z, x, y;
        glm_vec3_scale(axis, 1.0f / len, z);
        perpendicular(z, x);
        glm_vec3_cross(z, x, y);
        glm_vec3_scale(x, rad, x);
        glm_vec3_scale(y, rad, y);
        glm_vec3_scale(z, len, z);
        basis_matrix(x, y, z, c->p0, m);
        draw_mesh_with(r, f, &r->shapes[WF__SHAPE_CYLINDER], m, col, back, false, false, 0);
      }
      for (int end = 0; end < 2; end++) {
        float x[3] = {rad, 0, 0}, y[3] = {0, rad, 0}, z[3] = {0, 0, rad};
        basis_matrix(x, y, z, end ? c->p1 : c->p0, m);
        draw_mesh_with(r, f, &r->shapes[WF__SHAPE_SPHERE], m, col, back, false, false, 0);
      }
      break;
    }
    default:
      return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                              "scene.colliders[%d].type = %d: expected WF_RENDER_PLANE, _SPHERE, "
                              "_BOX or _CAPSULE",
                              i, (int)c->type);
    }
  }
  return WF_OK;
}

static wf_status draw_meshes(wf_render *r, const frame_ctx *f, const wf_render_scene *s) {
  glBindVertexArray(r->vao_mesh);
  for (int i = 0; i < s->mesh_count; i++) {
    const wf_render_mesh *m = &s->meshes[i];
    if (!m->vertex_count || !m->triangle_count) continue;
    if (m->triangle_count > (size_t)INT32_MAX / 3)
      return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                              "scene.meshes[%d].triangle_count = %zu is too large to draw", i,
                              m->triangle_count);
    size_t need = m->vertex_count * 7;
    if (need > r->scratch_floats) {
      float *p = realloc(r->scratch, need * sizeof(float));
      if (!p)
        return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_draw",
                                "scene.meshes[%d]: %zu vertices", i, m->vertex_count);
      r->scratch = p, r->scratch_floats = need;
    }
    wf_status st = wf__mesh_vertices(m, i, r->scratch);
    if (st != WF_OK) return st;
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_mesh);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(need * sizeof(float)), r->scratch, GL_STREAM_DRAW);
    glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(m->triangle_count * 3 * sizeof(uint32_t)),
                 m->indices, GL_STREAM_DRAW);
    float col[3], back[3];
    if (unset4(m->color))
      palette(i, col);
    else
      memcpy(col, m->color, sizeof col);
    if (unset4(m->back_color))
      for (int k = 0; k < 3; k++)
        back[k] = col[k] * 0.7f;
    else
      memcpy(back, m->back_color, sizeof back);
    mat4 id = GLM_MAT4_IDENTITY_INIT;
    draw_mesh_with(r, f, NULL, id, col, back, true, f->by_speed && m->speed,
                   (GLsizei)(m->triangle_count * 3));
  }
  return WF_OK;
}

/* The uniforms of a sphere program (quads or sprites) for this pass. */
static void sphere_pass(wf_render *r, const wf__sphere_uniforms *u, GLuint prog,
                        const frame_ctx *f) {
  glUseProgram(prog);
  glUniformMatrix4fv(u->view, 1, GL_FALSE, (const float *)f->view);
  glUniformMatrix4fv(u->proj, 1, GL_FALSE, (const float *)f->proj);
  glUniform1f(u->speed_max, f->speed_max);
  glUniform1i(u->depth_only, f->shadow_pass);
  glUniform1i(u->sprite, prog == r->prog_sprite);
  glUniform4fv(u->viewport, 1, f->viewport);
  glUniform1f(u->point_max, r->point_max);
  wf__set_lights(u->light_dir, u->light_color, u->light_count, u->ambient, f);
  wf__set_shadows(&u->shadow, f);
}

/* The point sets upload_points put in the buffers: quads, or point sprites for sets of
 * r->large_min spheres or more, except those render_splat.c draws. The shadow pass writes depth
 * only. */
static wf_status draw_points(wf_render *r, const frame_ctx *f, const wf_render_scene *s) {
  GLuint bound = 0;
  for (int i = 0; i < s->point_set_count; i++) {
    const wf_render_points *p = &s->points[i];
    if (!p->count) continue;
    if (wf__splat_takes(r, s, i)) continue; /* wf__splat_draw */
    bool sprites = p->count >= r->large_min;
    if (sprites && !r->prog_sprite) { /* the first large set: its program */
      wf_status st =
          wf__program_build(r->shader_origin, "sphere_point.vert.glsl", "sphere.frag.glsl",
                            WF__SHADER_LIGHTING | WF__SHADER_SPHERE_BOUNDS, &r->prog_sprite);
      if (st != WF_OK) return st;
      sphere_uniforms(r->prog_sprite, &r->usp);
    }
    const wf__sphere_uniforms *u = sprites ? &r->usp : &r->us;
    GLuint prog = sprites ? r->prog_sprite : r->prog_sphere;
    if (prog != bound) {
      sphere_pass(r, u, prog, f);
      glBindVertexArray(sprites ? r->vao_sprite : r->vao_sphere);
      bound = prog;
    }
    float col[3];
    wf__point_color(p, i, col);
    glUniform3fv(u->color, 1, col);
    glUniform1i(u->by_speed, f->by_speed && p->speed);
    size_t first = r->point_first[i];
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_sphere);
    glVertexAttribPointer(1, 4, GL_FLOAT, GL_FALSE, 0, (void *)(first * 4 * sizeof(float)));
    if (p->speed) {
      glBindBuffer(GL_ARRAY_BUFFER, r->vbo_speed);
      glVertexAttribPointer(2, 1, GL_FLOAT, GL_FALSE, 0, (void *)(first * sizeof(float)));
      glEnableVertexAttribArray(2);
    } else {
      glDisableVertexAttribArray(2);
      glVertexAttrib1f(2, 0.0f);
    }
    if (sprites) {
      glEnable(GL_PROGRAM_POINT_SIZE);
      glDrawArrays(GL_POINTS, 0, (GLsizei)p->count);
      glDisable(GL_PROGRAM_POINT_SIZE);
    } else {
      glDrawArraysInstanced(GL_TRIANGLE_STRIP, 0, 4, (GLsizei)p->count);
    }
  }
  return WF_OK;
}

static void draw_grid(wf_render *r, const frame_ctx *f, const wf_render_grid *g) {
  float col[4] = {0.6f, 0.6f, 0.6f, 0.5f};
  if (!unset4(g->color)) memcpy(col, g->color, sizeof col);
  glUseProgram(r->prog_grid);
  glUniformMatrix4fv(r->ug.view, 1, GL_FALSE, (const float *)f->view);
  glUniformMatrix4fv(r->ug.proj, 1, GL_FALSE, (const float *)f->proj);
  glUniform1f(r->ug.height, g->height);
  glUniform1f(r->ug.extent, g->extent > 0.0f ? g->extent : 20.0f);
  glUniform1f(r->ug.spacing, g->spacing > 0.0f ? g->spacing : 1.0f);
  glUniform4fv(r->ug.color, 1, col);
  glEnable(GL_BLEND);
  /* colour blends; destination alpha stays 1 so read-back images are opaque */
  glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ZERO, GL_ONE);
  glDepthMask(GL_FALSE);
  glDepthFunc(GL_LEQUAL);
  glEnable(GL_POLYGON_OFFSET_FILL); /* on top of a ground plane at the same height */
  glPolygonOffset(-1.0f, -4.0f);
  glBindVertexArray(r->vao_empty);
  glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
  glDisable(GL_POLYGON_OFFSET_FILL);
  glDepthFunc(GL_LESS);
  glDepthMask(GL_TRUE);
  glDisable(GL_BLEND);
}

/* ---- shadows: the first light's depth map ---------------------------------------------------- */

enum { SHADOW_SIZE = 2048 };

static wf_status shadow_targets(wf_render *r) {
  if (r->fbo_shadow) return WF_OK;
  glGenTextures(1, &r->tex_shadow);
  glBindTexture(GL_TEXTURE_2D, r->tex_shadow);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_DEPTH_COMPONENT24, SHADOW_SIZE, SHADOW_SIZE, 0,
               GL_DEPTH_COMPONENT, GL_UNSIGNED_INT, NULL);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_COMPARE_MODE, GL_COMPARE_REF_TO_TEXTURE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_COMPARE_FUNC, GL_LEQUAL);
  glGenFramebuffers(1, &r->fbo_shadow);
  glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_shadow);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_DEPTH_ATTACHMENT, GL_TEXTURE_2D, r->tex_shadow, 0);
  glDrawBuffer(GL_NONE);
  glReadBuffer(GL_NONE);
  GLenum fs = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (fs != GL_FRAMEBUFFER_COMPLETE)
    return wf__render_error(WF_ERR_BACKEND, "wf_render_draw",
                            "the shadow map's framebuffer is incomplete (0x%04x)", (unsigned)fs);
  return WF_OK;
}

/* Bounding sphere of what casts shadows: points (their bounds from wf__upload_points), meshes and
 * bounded colliders; false if none. */
static bool caster_bounds(const wf_render *r, const wf_render_scene *s, float centre[3],
                          float *radius) {
  float lo[3], hi[3], rmax = r->pts_rmax;
  memcpy(lo, r->pts_lo, sizeof lo), memcpy(hi, r->pts_hi, sizeof hi);
  for (int i = 0; i < s->mesh_count; i++) {
    const wf_render_mesh *m = &s->meshes[i];
    int stride = m->stride ? m->stride : 4;
    for (size_t k = 0; m->positions && k < m->vertex_count; k++)
      for (int a = 0; a < 3; a++)
        lo[a] = fminf(lo[a], m->positions[stride * k + a]),
        hi[a] = fmaxf(hi[a], m->positions[stride * k + a]);
  }
  for (int i = 0; i < s->collider_count; i++) {
    const wf_render_collider *c = &s->colliders[i];
    float e[3] = {c->radius, c->radius, c->radius};
    if (c->type == WF_RENDER_BOX) memcpy(e, c->half_extents, sizeof e);
    if (c->type == WF_RENDER_SPHERE || c->type == WF_RENDER_BOX)
      for (int a = 0; a < 3; a++)
        lo[a] = fminf(lo[a], c->center[a] - e[a]), hi[a] = fmaxf(hi[a], c->center[a] + e[a]);
    if (c->type == WF_RENDER_CAPSULE)
      for (int a = 0; a < 3; a++)
        lo[a] = fminf(lo[a], fminf(c->p0[a], c->p1[a]) - c->radius),
        hi[a] = fmaxf(hi[a], fmaxf(c->p0[a], c->p1[a]) + c->radius);
  }
  if (!(lo[0] <= hi[0])) return false;
  float r2 = 0.0f;
  for (int a = 0; a < 3; a++) {
    centre[a] = 0.5f * (lo[a] + hi[a]);
    r2 += 0.25f * (hi[a] - lo[a]) * (hi[a] - lo[a]);
  }
  *radius = fmaxf(sqrtf(r2) + rmax, 1e-3f);
  return isfinite(*radius) && *radius < 1e6f;
}

/* Draws the casters' depth as the first light sees them (a perspective from 20 radii away: nearly
 * parallel rays, and the sphere impostors' ray casting works unchanged) into tex_shadow, and sets
 * f's shadow matrix and normal offset for the lit pass. Nothing to cast: shadows stay off. */
static wf_status draw_shadow_map(wf_render *r, frame_ctx *f, const wf_render_scene *s) {
  float c[3], rad;
  double t0 = now_ms();
  bool any = caster_bounds(r, s, c, &rad);
  r->stats.cpu_bounds_ms = now_ms() - t0;
  if (!any) return WF_OK;
  wf_status st = shadow_targets(r);
  if (st != WF_OK) return st;
  glActiveTexture(GL_TEXTURE1); /* not bound for sampling while it is drawn into */
  glBindTexture(GL_TEXTURE_2D, 0);
  glActiveTexture(GL_TEXTURE0);
  float dist = 20.0f * rad;
  vec3 eye = {c[0] + f->light0[0] * dist, c[1] + f->light0[1] * dist, c[2] + f->light0[2] * dist};
  vec3 up = {0.0f, 1.0f, 0.0f};
  if (fabsf(f->light0[1]) > 0.99f) up[0] = 1.0f, up[1] = 0.0f;
  frame_ctx l = *f;
  glm_lookat(eye, c, up, l.view);
  glm_mat4_pick3(l.view, l.view3);
  glm_perspective(2.0f * asinf(1.0f / 20.0f) * 1.05f, 1.0f, dist - 1.5f * rad, dist + 1.5f * rad,
                  l.proj);
  l.shadow_pass = true;
  l.by_speed = 0;
  l.viewport[0] = l.viewport[1] = 0.0f, l.viewport[2] = l.viewport[3] = (float)SHADOW_SIZE;
  glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_shadow);
  glViewport(0, 0, SHADOW_SIZE, SHADOW_SIZE);
  glDisable(GL_BLEND);
  glEnable(GL_DEPTH_TEST);
  glDepthFunc(GL_LESS);
  glDepthMask(GL_TRUE);
  glClearDepth(1.0);
  glClear(GL_DEPTH_BUFFER_BIT);
  glUseProgram(r->prog_mesh);
  glUniformMatrix4fv(r->um.view, 1, GL_FALSE, (const float *)l.view);
  glUniformMatrix4fv(r->um.proj, 1, GL_FALSE, (const float *)l.proj);
  wf__set_lights(r->um.light_dir, r->um.light_color, r->um.light_count, r->um.ambient, &l);
  wf__set_shadows(&r->um.shadow, &l);
  st = draw_colliders(r, &l, s);
  if (st == WF_OK) st = draw_meshes(r, &l, s);
  if (st == WF_OK) st = draw_points(r, &l, s);
  bool drew = false;
  if (st == WF_OK) st = wf__splat_draw(r, &l, s, &drew);
  f->point_shadows = drew;
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (st != WF_OK) return st;
  /* view space -> world -> the light's clip space -> [0, 1]^3 */
  mat4 inv_view, light, bias = GLM_MAT4_IDENTITY_INIT;
  glm_mat4_inv(f->view, inv_view);
  glm_mat4_mul(l.proj, l.view, light);
  bias[0][0] = bias[1][1] = bias[2][2] = 0.5f;
  bias[3][0] = bias[3][1] = bias[3][2] = 0.5f;
  glm_mat4_mul(bias, light, light);
  glm_mat4_mul(light, inv_view, f->shadow_matrix);
  f->shadows = 1;
  /* two texels of the map, in metres, along the normal: no acne on surfaces facing the light */
  f->shadow_offset = 2.0f * (2.0f * rad * 1.05f) / (float)SHADOW_SIZE;
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, r->tex_shadow);
  glActiveTexture(GL_TEXTURE0);
  return WF_OK;
}

static wf_status check_scene(const wf_render_scene *s) {
  const char *f = "wf_render_draw";
  if (s->point_set_count < 0 || s->mesh_count < 0 || s->collider_count < 0)
    return wf__render_error(WF_ERR_INVALID, f, "scene counts are negative (%d, %d, %d)",
                            s->point_set_count, s->mesh_count, s->collider_count);
  if (s->point_set_count && !s->points)
    return wf__render_error(WF_ERR_INVALID, f, "scene.points is NULL, point_set_count %d",
                            s->point_set_count);
  if (s->mesh_count && !s->meshes)
    return wf__render_error(WF_ERR_INVALID, f, "scene.meshes is NULL, mesh_count %d",
                            s->mesh_count);
  if (s->collider_count && !s->colliders)
    return wf__render_error(WF_ERR_INVALID, f, "scene.colliders is NULL, collider_count %d",
                            s->collider_count);
  for (int i = 0; i < s->point_set_count; i++) {
    if (s->points[i].count && !s->points[i].xyzr)
      return wf__render_error(WF_ERR_INVALID, f, "scene.points[%d].xyzr is NULL, count %zu", i,
                              s->points[i].count);
    if (s->points[i].count > (size_t)INT32_MAX)
      return wf__render_error(WF_ERR_INVALID, f, "scene.points[%d].count = %zu is too large", i,
                              s->points[i].count);
  }
  const float *p = s->camera.position, *t = s->camera.target;
  if (p[0] == t[0] && p[1] == t[1] && p[2] == t[2])
    return wf__render_error(WF_ERR_INVALID, f,
                            "scene.camera.position equals camera.target (%g, %g, %g): the view "
                            "direction is undefined",
                            (double)p[0], (double)p[1], (double)p[2]);
  return WF_OK;
}

/* Colour by strain or force: the scene with those values where the speeds go, on the speed
 * ramp (the shaders know one ramp). Objects without them get no values: their own colour. */
static wf_status value_scene(wf_render *r, const wf_render_scene *s, wf_render_scene *out) {
  *out = *s;
  if (s->color_mode != WF_COLOR_BY_STRAIN && s->color_mode != WF_COLOR_BY_FORCE) return WF_OK;
  if (s->point_set_count > r->mode_points_cap) {
    wf_render_points *p = realloc(r->mode_points, (size_t)s->point_set_count * sizeof *p);
    if (!p) return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_draw", "points");
    r->mode_points = p, r->mode_points_cap = s->point_set_count;
  }
  if (s->mesh_count > r->mode_meshes_cap) {
    wf_render_mesh *m = realloc(r->mode_meshes, (size_t)s->mesh_count * sizeof *m);
    if (!m) return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_draw", "meshes");
    r->mode_meshes = m, r->mode_meshes_cap = s->mesh_count;
  }
  bool strain = s->color_mode == WF_COLOR_BY_STRAIN;
  for (int i = 0; i < s->point_set_count; i++) {
    r->mode_points[i] = s->points[i];
    r->mode_points[i].speed = strain ? NULL : s->points[i].force;
  }
  for (int i = 0; i < s->mesh_count; i++) {
    r->mode_meshes[i] = s->meshes[i];
    r->mode_meshes[i].speed = strain ? s->meshes[i].strain : NULL;
  }
  out->points = r->mode_points, out->meshes = r->mode_meshes;
  out->color_mode = WF_COLOR_BY_SPEED;
  out->speed_max = strain ? s->strain_max : s->force_max;
  return WF_OK;
}

wf_status wf_render_draw(wf_render *r, const wf_render_scene *scene_in) {
  if (!r || !scene_in)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p, scene %p", (void *)r,
                            (const void *)scene_in);
  wf_render_scene mapped;
  wf_status vst = value_scene(r, scene_in, &mapped);
  if (vst != WF_OK) return vst;
  const wf_render_scene *scene = &mapped;
  wf_status st = check_scene(scene);
  if (st == WF_OK) st = make_current(r);
  if (st != WF_OK) return st;
  double t0 = now_ms();
  uint64_t errs = r->stats.gl_errors;
  while (glGetError() != GL_NO_ERROR) {
  }
  /* GPU time: timestamps of the phases, two sets in turn; a set is read one frame later, never
     waited for (a frame whose older set is not ready yet goes untimed) */
  int q = r->timer_next;
  bool timing = true;
  if (r->timer_used[q]) {
    GLint ready = 0;
    glGetQueryObjectiv(r->stamp[q][4], GL_QUERY_RESULT_AVAILABLE, &ready);
    if (ready) {
      GLuint64 t[5] = {0};
      for (int k = 0; k < 5; k++)
        glGetQueryObjectui64v(r->stamp[q][k], GL_QUERY_RESULT, &t[k]);
      r->stats.gpu_ms = (double)(t[4] - t[0]) * 1e-6;
      double *ph[4] = {&r->stats.gpu_upload_ms, &r->stats.gpu_shadow_ms, &r->stats.gpu_scene_ms,
                       &r->stats.gpu_rest_ms};
      for (int k = 0; k < 4; k++)
        *ph[k] = (double)(t[k + 1] - t[k]) * 1e-6;
    } else {
      timing = false;
    }
  }
  if (timing) glQueryCounter(r->stamp[q][0], GL_TIMESTAMP);

  frame_ctx f;
  frame_setup(&f, scene, (float)r->width / (float)r->height);
  f.viewport[0] = f.viewport[1] = 0.0f, f.viewport[2] = (float)r->width;
  f.viewport[3] = (float)r->height;
  double tu = now_ms();
  st = wf__upload_points(r, scene);
  r->stats.cpu_upload_ms = now_ms() - tu;
  if (st == WF_OK) st = gl_check(r, __func__, "uploading the point sets", errs);
  if (st != WF_OK) return st;
  if (timing) glQueryCounter(r->stamp[q][1], GL_TIMESTAMP);
  if (scene->shadows && (f.light0[0] || f.light0[1] || f.light0[2])) {
    st = draw_shadow_map(r, &f, scene);
    if (st == WF_OK) st = gl_check(r, __func__, "drawing the shadow map", errs);
    if (st != WF_OK) return st;
  }
  if (timing) glQueryCounter(r->stamp[q][2], GL_TIMESTAMP);
  float bg[4] = {0.11f, 0.12f, 0.14f, 1.0f};
  if (!unset4(scene->background)) memcpy(bg, scene->background, sizeof bg);
  glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_draw);
  glViewport(0, 0, r->width, r->height);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_CULL_FACE);
  glDisable(GL_BLEND);
  glEnable(GL_DEPTH_TEST);
  glDepthFunc(GL_LESS);
  glDepthMask(GL_TRUE);
  glColorMask(GL_TRUE, GL_TRUE, GL_TRUE, GL_TRUE);
  if (r->samples > 1) glEnable(GL_MULTISAMPLE);
  glClearColor(bg[0], bg[1], bg[2], 1.0f);
  glClearDepth(1.0);
  glClear(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT);

  glUseProgram(r->prog_mesh);
  glUniformMatrix4fv(r->um.view, 1, GL_FALSE, (const float *)f.view);
  glUniformMatrix4fv(r->um.proj, 1, GL_FALSE, (const float *)f.proj);
  glUniform1f(r->um.speed_max, f.speed_max);
  wf__set_lights(r->um.light_dir, r->um.light_color, r->um.light_count, r->um.ambient, &f);
  wf__set_shadows(&r->um.shadow, &f);
  glPolygonMode(GL_FRONT_AND_BACK, scene->wireframe ? GL_LINE : GL_FILL);
  st = draw_colliders(r, &f, scene);
  if (st == WF_OK) st = gl_check(r, __func__, "drawing the colliders", errs);
  if (st == WF_OK) st = draw_meshes(r, &f, scene);
  glPolygonMode(GL_FRONT_AND_BACK, GL_FILL);
  if (st == WF_OK) st = gl_check(r, __func__, "drawing the meshes", errs);
  if (st == WF_OK) {
    bool drew;
    st = draw_points(r, &f, scene);
    if (st == WF_OK) st = wf__splat_draw(r, &f, scene, &drew);
    if (st == WF_OK) st = gl_check(r, __func__, "drawing the point sets", errs);
  }
  if (timing) glQueryCounter(r->stamp[q][3], GL_TIMESTAMP);
  if (st == WF_OK && scene->grid.enabled) {
    draw_grid(r, &f, &scene->grid);
    st = gl_check(r, __func__, "drawing the grid", errs);
  }
  if (st == WF_OK && r->fbo_draw != r->fbo_resolve) {
    glBindFramebuffer(GL_READ_FRAMEBUFFER, r->fbo_draw);
    glBindFramebuffer(GL_DRAW_FRAMEBUFFER, r->fbo_resolve);
    glBlitFramebuffer(0, 0, r->width, r->height, 0, 0, r->width, r->height, GL_COLOR_BUFFER_BIT,
                      GL_NEAREST);
    st = gl_check(r, __func__, "resolving the multisampled image", errs);
  }
  if (timing) {
    glQueryCounter(r->stamp[q][4], GL_TIMESTAMP);
    r->timer_used[q] = true;
    r->timer_next = 1 - q;
  }
  glBindVertexArray(0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (st != WF_OK) return st;

  size_t pts = 0, tris = 0;
  for (int i = 0; i < scene->point_set_count; i++)
    pts += scene->points[i].count;
  for (int i = 0; i < scene->mesh_count; i++)
    tris += scene->meshes[i].triangle_count;
  r->stats.points = pts;
  r->stats.triangles = tris;
  r->stats.colliders = (size_t)scene->collider_count;
  r->stats.frames++;
  r->stats.draw_ms = now_ms() - t0;
  r->drawn = true;
  return WF_OK;
}

/* ---- reading the image --------------------------------------------------------------------- */

/* GL's first row is the bottom one: rows of `row` bytes, top first. */
static void flip_rows(uint8_t *rgba, size_t row, int height) {
  uint8_t tmp[4096];
  for (int y = 0; y < height / 2; y++) {
    uint8_t *a = rgba + (size_t)y * row, *b = rgba + (size_t)(height - 1 - y) * row;
    for (size_t o = 0; o < row; o += sizeof tmp) {
      size_t n = row - o < sizeof tmp ? row - o : sizeof tmp;
      memcpy(tmp, a + o, n);
      memcpy(a + o, b + o, n);
      memcpy(b + o, tmp, n);
    }
  }
}

/* What both reads of the picture check (bytes hold need, a frame is drawn at this size), then
 * the context made current. */
static wf_status read_ready(wf_render *r, const char *func, size_t bytes, size_t need) {
  if (bytes < need)
    return wf__render_error(WF_ERR_INVALID, func, "buffer of %zu bytes; %d x %d RGBA needs %zu",
                            bytes, r->width, r->height, need);
  if (!r->drawn)
    return wf__render_error(WF_ERR_INVALID, func,
                            "nothing drawn at this size yet: call wf_render_draw first");
  return make_current(r);
}

wf_status wf_render_read_rgba(wf_render *r, uint8_t *rgba, size_t bytes) {
  if (!r || !rgba)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p, rgba %p", (void *)r,
                            (void *)rgba);
  size_t row = (size_t)r->width * 4, need = row * (size_t)r->height;
  wf_status st = read_ready(r, __func__, bytes, need);
  if (st != WF_OK) return st;
  uint64_t errs = r->stats.gl_errors;
  glBindFramebuffer(GL_READ_FRAMEBUFFER, r->fbo_resolve);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, r->width, r->height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  if ((st = gl_check(r, __func__, "reading the pixels", errs)) != WF_OK) return st;
  flip_rows(rgba, row, r->height);
  return WF_OK;
}

static void delete_readers(wf_render *r) {
  for (int k = 0; k < 2; k++) {
    if (r->read_fence[k]) glDeleteSync(r->read_fence[k]);
    r->read_fence[k] = 0;
  }
  if (r->read_pbo[0]) glDeleteBuffers(2, r->read_pbo);
  r->read_pbo[0] = r->read_pbo[1] = 0, r->read_w = r->read_h = 0, r->read_queued = 0;
}

wf_status wf_render_read_rgba_async(wf_render *r, uint8_t *rgba, size_t bytes, bool *got) {
  if (got) *got = false;
  if (!r || !rgba || !got)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p, rgba %p, got %p", (void *)r,
                            (void *)rgba, (void *)got);
  size_t row = (size_t)r->width * 4, need = row * (size_t)r->height;
  wf_status st = read_ready(r, __func__, bytes, need);
  if (st != WF_OK) return st;
  uint64_t errs = r->stats.gl_errors;
  if (r->read_w != r->width || r->read_h != r->height) { /* new size: a new pair, none queued */
    delete_readers(r);
    glGenBuffers(2, r->read_pbo);
    for (int k = 0; k < 2; k++) {
      glBindBuffer(GL_PIXEL_PACK_BUFFER, r->read_pbo[k]);
      glBufferData(GL_PIXEL_PACK_BUFFER, (GLsizeiptr)need, NULL, GL_STREAM_READ);
    }
    r->read_w = r->width, r->read_h = r->height, r->read_next = 0;
  }
  int k = r->read_next, prev = 1 - k;
  glBindFramebuffer(GL_READ_FRAMEBUFFER, r->fbo_resolve);
  glBindBuffer(GL_PIXEL_PACK_BUFFER, r->read_pbo[k]);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, r->width, r->height, GL_RGBA, GL_UNSIGNED_BYTE, (void *)0);
  if (r->read_fence[k]) glDeleteSync(r->read_fence[k]);
  r->read_fence[k] = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  if (r->read_queued > 0) { /* the one queued last call: long done, or nearly */
    glClientWaitSync(r->read_fence[prev], GL_SYNC_FLUSH_COMMANDS_BIT, UINT64_MAX);
    glBindBuffer(GL_PIXEL_PACK_BUFFER, r->read_pbo[prev]);
    const void *p = glMapBufferRange(GL_PIXEL_PACK_BUFFER, 0, (GLsizeiptr)need, GL_MAP_READ_BIT);
    if (p) {
      memcpy(rgba, p, need);
      glUnmapBuffer(GL_PIXEL_PACK_BUFFER);
      flip_rows(rgba, row, r->height);
      *got = true;
    }
  }
  glBindBuffer(GL_PIXEL_PACK_BUFFER, 0);
  r->read_queued = 1, r->read_next = prev;
  return gl_check(r, __func__, "reading the pixels", errs);
}

wf_status wf_render_write_png(wf_render *r, const char *path) {
  if (!r || !path)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p, path %p", (void *)r,
                            (const void *)path);
  size_t bytes = (size_t)r->width * (size_t)r->height * 4;
  uint8_t *px = malloc(bytes);
  if (!px) return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "'%s'", path);
  wf_status st = wf_render_read_rgba(r, px, bytes);
  if (st == WF_OK) st = wf_png_write_rgba(path, r->width, r->height, px);
  free(px);
  return st;
}

wf_status wf_render_present(wf_render *r, unsigned fb, int width, int height) {
  if (!r || width <= 0 || height <= 0)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p, size %d x %d", (void *)r, width,
                            height);
  wf_status st = make_current(r);
  if (st != WF_OK) return st;
  uint64_t errs = r->stats.gl_errors;
  glBindFramebuffer(GL_READ_FRAMEBUFFER, r->fbo_resolve);
  glBindFramebuffer(GL_DRAW_FRAMEBUFFER, fb);
  bool same = width == r->width && height == r->height;
  glBlitFramebuffer(0, 0, r->width, r->height, 0, 0, width, height, GL_COLOR_BUFFER_BIT,
                    same ? GL_NEAREST : GL_LINEAR);
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  return gl_check(r, __func__, "copying the image to the window", errs);
}
