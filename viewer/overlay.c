/* The text overlay of the window: stb_easy_font turns text into quads (in its own vertex format:
 * x, y, z floats and 4 colour bytes), which are queued with translucent boxes and drawn in one
 * call per frame in framebuffer pixels, scaled by the HiDPI content scale. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer_internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

typedef struct vertex {
  float x, y, z;
  uint8_t rgba[4];
} vertex;

struct wf__overlay {
  GLuint prog, vao, vbo, ebo;
  GLint u_screen, u_scale;
  vertex *verts; /* 4 per quad */
  size_t quads, cap;
};

wf_status wf__overlay_create(const char *origin, wf__overlay **out) {
  wf__overlay *o = calloc(1, sizeof *o);
  if (!o) return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_viewer_run", "overlay");
  wf_status st = wf__program_build(origin, "text.vert.glsl", "text.frag.glsl", 0, &o->prog);
  if (st != WF_OK) {
    free(o);
    return st;
  }
  o->u_screen = glGetUniformLocation(o->prog, "u_screen");
  o->u_scale = glGetUniformLocation(o->prog, "u_scale");
  glGenVertexArrays(1, &o->vao);
  glBindVertexArray(o->vao);
  glGenBuffers(1, &o->vbo);
  glBindBuffer(GL_ARRAY_BUFFER, o->vbo);
  glGenBuffers(1, &o->ebo);
  glBindBuffer(GL_ELEMENT_ARRAY_BUFFER, o->ebo);
  glEnableVertexAttribArray(0);
  glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, sizeof(vertex), (void *)0);
  glEnableVertexAttribArray(1);
  glVertexAttribPointer(1, 4, GL_UNSIGNED_BYTE, GL_TRUE, sizeof(vertex), (void *)12);
  glBindVertexArray(0);
  *out = o;
  return WF_OK;
}

void wf__overlay_destroy(wf__overlay *o) {
  if (!o) return;
  glDeleteProgram(o->prog);
  GLuint b[2] = {o->vbo, o->ebo};
  glDeleteBuffers(2, b);
  glDeleteVertexArrays(1, &o->vao);
  free(o->verts);
  free(o);
}

static vertex *reserve(wf__overlay *o, size_t quads) {
  if (o->quads + quads > o->cap) {
    size_t cap = o->cap ? o->cap : 1024;
    while (cap < o->quads + quads)
      cap *= 2;
    vertex *v = realloc(o->verts, cap * 4 * sizeof(vertex));
    if (!v) return NULL;
    o->verts = v, o->cap = cap;
  }
  return o->verts + o->quads * 4;
}

void wf__overlay_box(wf__overlay *o, float x, float y, float w, float h, const uint8_t rgba[4]) {
  vertex *v = reserve(o, 1);
  if (!v) return;
  const float xs[4] = {x, x + w, x + w, x}, ys[4] = {y, y, y + h, y + h};
  for (int k = 0; k < 4; k++) {
    v[k].x = xs[k], v[k].y = ys[k], v[k].z = 0.0f;
    memcpy(v[k].rgba, rgba, 4);
  }
  o->quads++;
}

void wf__overlay_gradient(wf__overlay *o, float x, float y, float w, float h, const uint8_t left[4],
                          const uint8_t right[4]) {
  vertex *v = reserve(o, 1);
  if (!v) return;
  const float xs[4] = {x, x + w, x + w, x}, ys[4] = {y, y, y + h, y + h};
  for (int k = 0; k < 4; k++) {
    v[k].x = xs[k], v[k].y = ys[k], v[k].z = 0.0f;
    memcpy(v[k].rgba, k == 1 || k == 2 ? right : left, 4);
  }
  o->quads++;
}

/* Monospace: every character in a cell WF__OVERLAY_CHAR_W wide, centred by its own advance, so
 * columns line up (stb_easy_font's glyphs are proportional). */
void wf__overlay_text(wf__overlay *o, float x, float y, const char *text, const uint8_t rgba[4]) {
  unsigned char col[4] = {rgba[0], rgba[1], rgba[2], rgba[3]};
  float cx = x, cy = y;
  for (const char *p = text; *p; p++) {
    if (*p == '\n') {
      cx = x, cy += WF__OVERLAY_LINE_H;
      continue;
    }
    char one[2] = {*p, '\0'};
    float gw = (float)stb_easy_font_width(one);
    vertex *v = reserve(o, 24); /* a glyph is a few strokes, well under 24 quads */
    if (!v) return;
    int n = stb_easy_font_print(cx + 0.5f * (WF__OVERLAY_CHAR_W - gw), cy, one, col, v,
                                (int)(24 * 4 * sizeof(vertex)));
    o->quads += (size_t)n;
    cx += WF__OVERLAY_CHAR_W;
  }
}

void wf__overlay_measure(const char *text, float *w, float *h) {
  int cols = 0, most = 0, lines = 1;
  for (const char *p = text; *p; p++) {
    if (*p == '\n') {
      lines++, cols = 0;
      continue;
    }
    most = ++cols > most ? cols : most;
  }
  *w = (float)most * WF__OVERLAY_CHAR_W;
  *h = (float)lines * WF__OVERLAY_LINE_H;
}

int wf__overlay_wrap(const char *text, int cols, int (*pieces)[2], int max) {
  int n = 0, len = (int)strlen(text), at = 0;
  if (cols < 8) cols = 8;
  while (at < len && n < max) {
    int take = len - at;
    if (take > cols) { /* break at the last space that fits, else mid-word */
      take = cols;
      for (int k = cols; k > cols / 2; k--)
        if (text[at + k] == ' ') {
          take = k;
          break;
        }
    }
    pieces[n][0] = at, pieces[n][1] = take;
    n++;
    at += take;
    while (at < len && text[at] == ' ')
      at++;
  }
  return n;
}

void wf__overlay_flush(wf__overlay *o, int fb_w, int fb_h, float scale) {
  if (!o->quads) return;
  /* quads to triangles: 0 1 2, 0 2 3 */
  uint32_t *idx = malloc(o->quads * 6 * sizeof *idx);
  if (!idx) {
    o->quads = 0;
    return;
  }
  for (uint32_t q = 0; q < (uint32_t)o->quads; q++) {
    uint32_t b = q * 4, *t = idx + q * 6;
    t[0] = b, t[1] = b + 1, t[2] = b + 2, t[3] = b, t[4] = b + 2, t[5] = b + 3;
  }
  glViewport(0, 0, fb_w, fb_h);
  glDisable(GL_DEPTH_TEST);
  glDisable(GL_CULL_FACE);
  glEnable(GL_BLEND);
  glBlendFuncSeparate(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA, GL_ZERO, GL_ONE);
  glUseProgram(o->prog);
  glUniform2f(o->u_screen, (float)fb_w, (float)fb_h);
  glUniform1f(o->u_scale, scale);
  glBindVertexArray(o->vao);
  glBindBuffer(GL_ARRAY_BUFFER, o->vbo);
  glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(o->quads * 4 * sizeof(vertex)), o->verts,
               GL_STREAM_DRAW);
  glBufferData(GL_ELEMENT_ARRAY_BUFFER, (GLsizeiptr)(o->quads * 6 * sizeof *idx), idx,
               GL_STREAM_DRAW);
  glDrawElements(GL_TRIANGLES, (GLsizei)(o->quads * 6), GL_UNSIGNED_INT, (void *)0);
  glBindVertexArray(0);
  glDisable(GL_BLEND);
  free(idx);
  o->quads = 0;
}

int wf__overlay_layout(const char *const *lines, int n_lines, const char *help, float width,
                       float height, wf__overlay_row *rows, int max_rows, wf__overlay_row *help_box,
                       wf__overlay_row *bar) {
  const float pad = 3.0f, margin = 2.0f;
  int cols = (int)((width - 2.0f * (margin + pad)) / WF__OVERLAY_CHAR_W);
  int n = 0;
  float y = margin, right = 0.0f;
  for (int i = 0; i < n_lines && n < max_rows; i++) {
    if (!lines[i] || !lines[i][0]) continue;
    int pieces[64][2];
    int k = wf__overlay_wrap(lines[i], cols, pieces, max_rows - n < 64 ? max_rows - n : 64);
    for (int j = 0; j < k; j++) {
      wf__overlay_row *r = &rows[n++];
      r->text = lines[i] + pieces[j][0];
      r->len = pieces[j][1];
      r->source = i;
      r->x = margin, r->y = y;
      r->w = (float)r->len * WF__OVERLAY_CHAR_W + 2.0f * pad;
      r->h = WF__OVERLAY_LINE_H;
      y += WF__OVERLAY_LINE_H;
      right = r->x + r->w > right ? r->x + r->w : right;
    }
  }
  memset(help_box, 0, sizeof *help_box);
  if (help) { /* top right; below the status rows when they would overlap */
    float w, h;
    wf__overlay_measure(help, &w, &h);
    help_box->text = help, help_box->len = (int)strlen(help), help_box->source = -1;
    help_box->w = w + 4.0f * pad, help_box->h = h + 2.0f * pad;
    help_box->x = width - help_box->w - margin;
    if (help_box->x < margin) help_box->x = margin;
    help_box->y = help_box->x < right + 4.0f ? y + 4.0f : margin;
  }
  /* the colour bar: bottom left, 160 units of ramp over a row of numbers */
  memset(bar, 0, sizeof *bar);
  bar->x = margin + pad, bar->w = 160.0f, bar->h = 8.0f;
  bar->y = height - margin - WF__OVERLAY_LINE_H - bar->h - 2.0f * pad;
  /* room on its right for the top's label, "12.3 m/s" and a space (9 characters) */
  float label = 6.0f + 9.0f * WF__OVERLAY_CHAR_W + margin;
  if (bar->x + bar->w + label > width) bar->w = width - bar->x - label;
  if (bar->w < 40.0f) bar->w = 40.0f;
  return n;
}

/* The speed ramp of lighting.glsl (wf_speed_ramp) at t = 0, 1/4, ..., 1, in bytes. */
static const uint8_t ramp[5][4] = {{26, 51, 230, 255},
                                   {26, 204, 230, 255},
                                   {51, 217, 51, 255},
                                   {242, 217, 26, 255},
                                   {230, 38, 26, 255}};

const char *wf__color_mode_unit(wf_render_color_mode m) {
  switch (m) {
  case WF_COLOR_BY_SPEED: return "m/s";
  case WF_COLOR_BY_STRAIN: return "strain";
  case WF_COLOR_BY_FORCE: return "N";
  default: return "";
  }
}

void wf__overlay_speed_bar(wf__overlay *o, const wf__overlay_row *bar, float top) {
  wf__overlay_color_bar(o, bar, top, "m/s");
}

void wf__overlay_color_bar(wf__overlay *o, const wf__overlay_row *bar_in, float top,
                           const char *unit) {
  static const uint8_t white[4] = {235, 235, 235, 255}, box[4] = {0, 0, 0, 150};
  char label[48];
  if (top > 0)
    snprintf(label, sizeof label, "%.3g %s", top, unit);
  else
    snprintf(label, sizeof label, "max %s", unit);
  /* the layout leaves room for "12.3 m/s" and a space (9 characters); a longer label ("0.1
   * strain") takes it from the ramp */
  wf__overlay_row b = *bar_in;
  const wf__overlay_row *bar = &b;
  float chars = fmaxf(9.0f, (float)strlen(label) + 1.0f);
  b.w = fmaxf(40.0f, b.w - (chars - 9.0f) * WF__OVERLAY_CHAR_W);
  wf__overlay_box(o, bar->x - 3.0f, bar->y - 3.0f, bar->w + 12.0f + chars * WF__OVERLAY_CHAR_W,
                  bar->h + WF__OVERLAY_LINE_H + 8.0f, box);
  for (int k = 0; k < 4; k++)
    wf__overlay_gradient(o, bar->x + bar->w * (float)k / 4.0f, bar->y, bar->w / 4.0f, bar->h,
                         ramp[k], ramp[k + 1]);
  char num[32];
  float ty = bar->y + bar->h + 3.0f;
  wf__overlay_text(o, bar->x, ty, "0", white);
  if (top > 0) {
    snprintf(num, sizeof num, "%.3g", 0.5 * top);
    wf__overlay_text(o, bar->x + 0.5f * bar->w - 0.5f * WF__OVERLAY_CHAR_W * (float)strlen(num), ty,
                     num, white);
  }
  wf__overlay_text(o, bar->x + bar->w + 6.0f, bar->y - 1.0f, label, white);
}

wf_status wf_render_draw_speed_bar(wf_render *r, float speed_max) {
  return wf_render_draw_color_bar(r, WF_COLOR_BY_SPEED, speed_max);
}

wf_status wf_render_draw_color_bar(wf_render *r, wf_render_color_mode mode, float speed_max) {
  if (!r || !r->drawn)
    return wf__render_error(WF_ERR_INVALID, __func__, "renderer %p has drawn no frame", (void *)r);
  if (!r->overlay) {
    wf_status st = wf__overlay_create(r->shader_origin, &r->overlay);
    if (st != WF_OK) return st;
  }
  /* 1x up to 720 rows, then larger, like the window's text */
  float scale = r->height >= 720 ? (float)r->height / 360.0f : 1.0f;
  float uw = (float)r->width / scale, uh = (float)r->height / scale;
  wf__overlay_row rows[1], hb, bar;
  wf__overlay_layout(NULL, 0, NULL, uw, uh, rows, 1, &hb, &bar);
  wf__overlay_color_bar(r->overlay, &bar, speed_max, wf__color_mode_unit(mode));
  glBindFramebuffer(GL_FRAMEBUFFER, r->fbo_resolve);
  wf__overlay_flush(r->overlay, r->width, r->height, scale);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  GLenum e = glGetError();
  if (e != GL_NO_ERROR)
    return wf__render_error(WF_ERR_BACKEND, __func__, "OpenGL error 0x%04x drawing the bar",
                            (unsigned)e);
  return WF_OK;
}
