/* Large point sets drawn by compute (wf_render_desc.large = WF_RENDER_LARGE_COMPUTE; GL 4.5).
 *
 * A GPU built for compute (H100, H200) has little raster hardware: a million sphere impostors
 * cost there tens of milliseconds a pass whatever the window size, in primitive setup and
 * fragments. Compute shaders run on every SM instead. Per pass:
 *  1. the pass's R32UI depth image is cleared to "nothing" (0xFFFFFFFF);
 *  2. splat.comp.glsl, pass 0: a thread a sphere keeps, at each pixel of its outline, the
 *     nearest ray-cast depth (atomic minimum);
 *  3. pass 1 (lit pass only): where its depth is the minimum, the sphere writes its index + 1
 *     into the R32UI id image (equal depths: either sphere);
 *  4. lit pass: splat.frag.glsl over the viewport (one triangle; scissored to where the
 *     spheres can be) shades each pixel's sphere as sphere.frag.glsl does and writes its depth.
 *     The shadow pass stops at 2: its depth image is a second shadow map, which lighting.glsl
 *     reads beside the meshes' (no full-screen pass over 2048^2 texels).
 * The depth test against what is already in the framebuffer (meshes, colliders, smaller point
 * sets) then works as for impostors. The shading is per pixel: no MSAA on these spheres' edges.
 */
#include <math.h>
#include <string.h>

#include "viewer_internal.h"

enum { GROUP = 128 }; /* splat.comp.glsl's local_size_x */

wf_status wf__splat_init(wf_render *r) {
  wf__splat *s = &r->splat;
  wf_status st = wf__compute_build(r->shader_origin, "splat.comp.glsl", WF__SHADER_SPHERE_BOUNDS,
                                   &s->prog_comp);
  if (st == WF_OK)
    st = wf__program_build(r->shader_origin, "splat.vert.glsl", "splat.frag.glsl",
                           WF__SHADER_LIGHTING, &s->prog_resolve);
  if (st != WF_OK) return st;
#define U(p, name) glGetUniformLocation(p, name)
  GLuint p = s->prog_comp;
  s->uc.view = U(p, "u_view"), s->uc.proj = U(p, "u_proj"), s->uc.size = U(p, "u_size");
  s->uc.first = U(p, "u_first"), s->uc.count = U(p, "u_count"), s->uc.pass = U(p, "u_pass");
  p = s->prog_resolve;
  s->ur.ids = U(p, "u_ids"), s->ur.spheres = U(p, "u_spheres");
  s->ur.speeds = U(p, "u_speeds"), s->ur.view = U(p, "u_view"), s->ur.proj = U(p, "u_proj");
  s->ur.viewport = U(p, "u_viewport");
  s->ur.sets = U(p, "u_sets"), s->ur.set_end = U(p, "u_set_end");
  s->ur.set_color = U(p, "u_set_color"), s->ur.set_by_speed = U(p, "u_set_by_speed");
  s->ur.speed_max = U(p, "u_speed_max"), s->ur.light_dir = U(p, "u_light_dir");
  s->ur.light_color = U(p, "u_light_color"), s->ur.light_count = U(p, "u_light_count");
  s->ur.ambient = U(p, "u_ambient");
  wf__shadow_locs_get(p, &s->ur.shadow);
#undef U
  glGenTextures(1, &s->tex_sphere);
  glGenTextures(1, &s->tex_speed);
  return WF_OK;
}

static void delete_images(wf__splat_images *m) {
  GLuint t[2] = {m->depth, m->id};
  glDeleteTextures(2, t);
  m->depth = m->id = 0, m->w = m->h = 0;
}

void wf__splat_destroy(wf_render *r) {
  wf__splat *s = &r->splat;
  delete_images(&s->img[0]), delete_images(&s->img[1]);
  GLuint t[2] = {s->tex_sphere, s->tex_speed};
  glDeleteTextures(2, t);
  if (s->prog_comp) glDeleteProgram(s->prog_comp);
  if (s->prog_resolve) glDeleteProgram(s->prog_resolve);
  memset(s, 0, sizeof *s);
}

static GLuint image(int w, int h) {
  GLuint t;
  glGenTextures(1, &t);
  glBindTexture(GL_TEXTURE_2D, t);
  glTexStorage2D(GL_TEXTURE_2D, 1, GL_R32UI, w, h);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(GL_TEXTURE_2D, 0);
  return t;
}

/* The pass's images at its size (remade when it changes). */
static const wf__splat_images *images_for(wf__splat_images *m, int w, int h, bool ids) {
  if (m->w != w || m->h != h) {
    delete_images(m);
    m->depth = image(w, h), m->w = w, m->h = h;
  }
  if (ids && !m->id) m->id = image(w, h);
  return m;
}

/* The viewport's pixels that the point sets' bounds (r->pts_*, every set) can cover: the box
 * grown by the largest radius, its 8 corners projected. False (draw everything) when a corner
 * is not in front of the eye. */
static bool screen_rect(const wf_render *r, const wf__frame *f, int rect[4]) {
  mat4 vp;
  glm_mat4_mul((vec4 *)f->proj, (vec4 *)f->view, vp);
  float lo[2] = {1e30f, 1e30f}, hi[2] = {-1e30f, -1e30f};
  for (int k = 0; k < 8; k++) {
    vec4 p = {k & 1 ? r->pts_hi[0] + r->pts_rmax : r->pts_lo[0] - r->pts_rmax,
              k & 2 ? r->pts_hi[1] + r->pts_rmax : r->pts_lo[1] - r->pts_rmax,
              k & 4 ? r->pts_hi[2] + r->pts_rmax : r->pts_lo[2] - r->pts_rmax, 1.0f};
    vec4 c;
    glm_mat4_mulv(vp, p, c);
    if (!(c[3] > 1e-6f)) return false;
    for (int a = 0; a < 2; a++)
      lo[a] = fminf(lo[a], c[a] / c[3]), hi[a] = fmaxf(hi[a], c[a] / c[3]);
  }
  for (int a = 0; a < 2; a++) {
    float size = f->viewport[2 + a];
    float p0 = floorf((fmaxf(lo[a], -1.0f) + 1.0f) * 0.5f * size) - 1.0f;
    float p1 = ceilf((fminf(hi[a], 1.0f) + 1.0f) * 0.5f * size) + 1.0f;
    rect[a] = (int)fmaxf(p0, 0.0f) + (int)f->viewport[a];
    rect[2 + a] = (int)fmaxf(fminf(p1, size) - fmaxf(p0, 0.0f), 0.0f);
  }
  return true;
}

bool wf__splat_takes(const wf_render *r, const wf_render_scene *s, int i) {
  if (r->large != WF_RENDER_LARGE_COMPUTE || s->points[i].count < r->large_min) return false;
  int before = 0;
  for (int k = 0; k < i; k++)
    before += s->points[k].count >= r->large_min;
  return before < WF__SPLAT_SETS;
}

wf_status wf__splat_draw(wf_render *r, const wf__frame *f, const wf_render_scene *s, bool *drew) {
  wf__splat *sp = &r->splat;
  *drew = false;
  int sets = 0, set_end[WF__SPLAT_SETS], by_speed[WF__SPLAT_SETS], which[WF__SPLAT_SETS];
  float color[WF__SPLAT_SETS][3];
  bool any_speed = false;
  for (int i = 0; i < s->point_set_count; i++) {
    if (!s->points[i].count || !wf__splat_takes(r, s, i)) continue;
    which[sets] = i;
    set_end[sets] = (int)(r->point_first[i] + s->points[i].count);
    by_speed[sets] = f->by_speed && s->points[i].speed;
    wf__point_color(&s->points[i], i, color[sets]);
    any_speed = any_speed || by_speed[sets];
    sets++;
  }
  if (!sets) return WF_OK;
  if (!sp->prog_comp) { /* the first large set: the programs */
    wf_status st = wf__splat_init(r);
    if (st != WF_OK) return st;
  }
  int w = (int)f->viewport[2], h = (int)f->viewport[3];
  const wf__splat_images *m = images_for(&sp->img[f->shadow_pass], w, h, !f->shadow_pass);
  const GLuint none = 0xFFFFFFFFu, zero = 0;
  glClearTexImage(m->depth, 0, GL_RED_INTEGER, GL_UNSIGNED_INT, &none);
  if (!f->shadow_pass) glClearTexImage(m->id, 0, GL_RED_INTEGER, GL_UNSIGNED_INT, &zero);

  glUseProgram(sp->prog_comp);
  glUniformMatrix4fv(sp->uc.view, 1, GL_FALSE, (const float *)f->view);
  glUniformMatrix4fv(sp->uc.proj, 1, GL_FALSE, (const float *)f->proj);
  glUniform2i(sp->uc.size, w, h);
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, r->vbo_sphere);
  glBindImageTexture(0, m->depth, 0, GL_FALSE, 0, GL_READ_WRITE, GL_R32UI);
  glBindImageTexture(1, f->shadow_pass ? m->depth : m->id, 0, GL_FALSE, 0, GL_WRITE_ONLY,
                     GL_R32UI); /* the shadow pass has no ids (and pass 1 does not run) */
  *drew = true;
  for (int pass = 0; pass < (f->shadow_pass ? 1 : 2); pass++) {
    glUniform1i(sp->uc.pass, pass);
    for (int k = 0; k < sets; k++) {
      int i = which[k];
      size_t n = s->points[i].count;
      glUniform1ui(sp->uc.first, (GLuint)r->point_first[i]);
      glUniform1ui(sp->uc.count, (GLuint)n);
      glDispatchCompute((GLuint)((n + GROUP - 1) / GROUP), 1, 1);
    }
    /* pass 1 reads the minima; the resolve (or the lit pass's shadow lookups) fetch them */
    glMemoryBarrier(GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_TEXTURE_FETCH_BARRIER_BIT);
  }
  glBindBufferBase(GL_SHADER_STORAGE_BUFFER, 0, 0);
  if (f->shadow_pass) { /* the depths are the points' shadow map: lighting.glsl reads unit 6 */
    glActiveTexture(GL_TEXTURE6);
    glBindTexture(GL_TEXTURE_2D, m->depth);
    glActiveTexture(GL_TEXTURE0);
    return WF_OK;
  }

  glUseProgram(sp->prog_resolve);
  glUniformMatrix4fv(sp->ur.view, 1, GL_FALSE, (const float *)f->view);
  glUniformMatrix4fv(sp->ur.proj, 1, GL_FALSE, (const float *)f->proj);
  glUniform4fv(sp->ur.viewport, 1, f->viewport);
  glUniform1i(sp->ur.sets, sets);
  glUniform1iv(sp->ur.set_end, sets, set_end);
  glUniform3fv(sp->ur.set_color, sets, &color[0][0]);
  glUniform1iv(sp->ur.set_by_speed, sets, by_speed);
  glUniform1f(sp->ur.speed_max, f->speed_max);
  wf__set_lights(sp->ur.light_dir, sp->ur.light_color, sp->ur.light_count, sp->ur.ambient, f);
  wf__set_shadows(&sp->ur.shadow, f);
  /* units: 1 and 6 are the shadow maps; 2, 4 and 5 these */
  glActiveTexture(GL_TEXTURE2);
  glBindTexture(GL_TEXTURE_2D, m->id);
  glActiveTexture(GL_TEXTURE4);
  glBindTexture(GL_TEXTURE_BUFFER, sp->tex_sphere);
  glTexBuffer(GL_TEXTURE_BUFFER, GL_RGBA32F, r->vbo_sphere);
  glActiveTexture(GL_TEXTURE5);
  glBindTexture(GL_TEXTURE_BUFFER, sp->tex_speed);
  glTexBuffer(GL_TEXTURE_BUFFER, GL_R32F, any_speed ? r->vbo_speed : 0);
  glActiveTexture(GL_TEXTURE0);
  glUniform1i(sp->ur.ids, 2);
  glUniform1i(sp->ur.spheres, 4);
  glUniform1i(sp->ur.speeds, 5);
  glBindVertexArray(r->vao_empty);
  int rect[4];
  bool scissor = screen_rect(r, f, rect); /* only where the spheres can be */
  if (scissor) {
    glEnable(GL_SCISSOR_TEST);
    glScissor(rect[0], rect[1], rect[2], rect[3]);
  }
  glDrawArrays(GL_TRIANGLES, 0, 3);
  if (scissor) glDisable(GL_SCISSOR_TEST);
  return WF_OK;
}
