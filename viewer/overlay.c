/* The text overlay of the window: stb_easy_font turns text into quads (in its own vertex format:
 * x, y, z floats and 4 colour bytes), which are queued with translucent boxes and drawn in one
 * call per frame in framebuffer pixels, scaled by the HiDPI content scale. */
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
  wf_status st = wf__program_build(origin, "text.vert.glsl", "text.frag.glsl", false, &o->prog);
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

void wf__overlay_text(wf__overlay *o, float x, float y, const char *text, const uint8_t rgba[4]) {
  size_t len = strlen(text);
  /* a glyph is a few strokes (well under 20 quads); stb_easy_font stops at the buffer end */
  size_t max_quads = len * 20 + 16;
  vertex *v = reserve(o, max_quads);
  if (!v) return;
  unsigned char col[4] = {rgba[0], rgba[1], rgba[2], rgba[3]};
  int n = stb_easy_font_print(x, y, (char *)text, col, v, (int)(max_quads * 4 * sizeof(vertex)));
  o->quads += (size_t)n;
}

void wf__overlay_measure(const char *text, float *w, float *h) {
  *w = (float)stb_easy_font_width((char *)text);
  *h = (float)stb_easy_font_height((char *)text);
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
