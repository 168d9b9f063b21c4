/* Geometry on the host: smooth vertex normals of user meshes, the unit shapes that colliders are
 * drawn with (scaled and placed by a model matrix), and the camera matrices.
 *
 * Every vertex uploaded to the mesh program is 7 floats: position, normal, speed. Normals of user
 * meshes are the normalised sum of the (unnormalised, hence area-weighted) normals of the
 * triangles around the vertex, oriented by the winding (counter-clockwise = front); a vertex with
 * no area around it gets +y. */
#include <cglm/cglm.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viewer_internal.h"

static const float k_pi = 3.14159265358979f;

wf_status wf__mesh_vertices(const wf_render_mesh *m, int index, float *out) {
  int stride = m->stride ? m->stride : 4;
  if (stride != 3 && stride != 4)
    return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                            "scene.meshes[%d].stride = %d: expected 3 or 4 (0 means 4)", index,
                            m->stride);
  if (m->vertex_count && !m->positions)
    return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                            "scene.meshes[%d].positions is NULL with vertex_count %zu", index,
                            m->vertex_count);
  if (m->triangle_count && !m->indices)
    return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                            "scene.meshes[%d].indices is NULL with triangle_count %zu", index,
                            m->triangle_count);
  for (size_t v = 0; v < m->vertex_count; v++) {
    float *o = out + v * 7;
    const float *p = m->positions + v * (size_t)stride;
    o[0] = p[0], o[1] = p[1], o[2] = p[2];
    o[3] = o[4] = o[5] = 0.0f;
    o[6] = m->speed ? m->speed[v] : 0.0f;
  }
  for (size_t t = 0; t < m->triangle_count; t++) {
    const uint32_t *tri = m->indices + 3 * t;
    for (int k = 0; k < 3; k++)
      if (tri[k] >= m->vertex_count)
        return wf__render_error(WF_ERR_INVALID, "wf_render_draw",
                                "scene.meshes[%d].indices[%zu] = %u is out of range (vertex_count "
                                "%zu)",
                                index, 3 * t + (size_t)k, tri[k], m->vertex_count);
    float *a = out + tri[0] * 7, *b = out + tri[1] * 7, *c = out + tri[2] * 7;
    float e1[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float e2[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    float n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                  e1[0] * e2[1] - e1[1] * e2[0]};
    for (int k = 0; k < 3; k++) {
      float *o = out + tri[k] * 7 + 3;
      o[0] += n[0], o[1] += n[1], o[2] += n[2];
    }
  }
  for (size_t v = 0; v < m->vertex_count; v++) {
    float *n = out + v * 7 + 3;
    float len = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (len > 0.0f && isfinite(len))
      n[0] /= len, n[1] /= len, n[2] /= len;
    else
      n[0] = 0.0f, n[1] = 1.0f, n[2] = 0.0f;
  }
  return WF_OK;
}

static void put(float *v, float px, float py, float pz, float nx, float ny, float nz) {
  v[0] = px, v[1] = py, v[2] = pz, v[3] = nx, v[4] = ny, v[5] = nz, v[6] = 0.0f;
}

static wf_status shape_alloc(wf__shape *s, size_t nv, size_t ni) {
  s->vertices = calloc(nv * 7, sizeof(float));
  s->indices = calloc(ni, sizeof(uint32_t));
  s->vertex_count = nv;
  s->index_count = ni;
  if (!s->vertices || !s->indices) {
    wf__shape_free(s);
    return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_create", "collider shapes");
  }
  return WF_OK;
}

/* A (rows+1) x (cols+1) vertex grid as triangles, counter-clockwise seen from outside. */
static void grid_indices(uint32_t *idx, uint32_t rows, uint32_t cols) {
  for (uint32_t i = 0; i < rows; i++)
    for (uint32_t j = 0; j < cols; j++) {
      uint32_t a = i * (cols + 1) + j, b = a + 1, c = a + cols + 1, d = c + 1;
      *idx++ = a, *idx++ = c, *idx++ = b;
      *idx++ = b, *idx++ = c, *idx++ = d;
    }
}

wf_status wf__shape_make(int which, wf__shape *s) {
  memset(s, 0, sizeof *s);
  wf_status st;
  switch (which) {
  case WF__SHAPE_SPHERE: {
    const uint32_t rows = 18, cols = 36; /* latitude from the top, longitude */
    if ((st = shape_alloc(s, (rows + 1) * (cols + 1), rows * cols * 6)) != WF_OK) return st;
    for (uint32_t i = 0; i <= rows; i++)
      for (uint32_t j = 0; j <= cols; j++) {
        float th = k_pi * (float)i / (float)rows, ph = 2.0f * k_pi * (float)j / (float)cols;
        float x = sinf(th) * cosf(ph), y = cosf(th), z = -sinf(th) * sinf(ph);
        put(s->vertices + (i * (cols + 1) + j) * 7, x, y, z, x, y, z);
      }
    grid_indices(s->indices, rows, cols);
    return WF_OK;
  }
  case WF__SHAPE_CYLINDER: {
    const uint32_t cols = 36; /* side only: the capsule's caps are spheres */
    if ((st = shape_alloc(s, 2 * (cols + 1), cols * 6)) != WF_OK) return st;
    for (uint32_t i = 0; i <= 1; i++)
      for (uint32_t j = 0; j <= cols; j++) {
        float ph = 2.0f * k_pi * (float)j / (float)cols, x = cosf(ph), y = sinf(ph);
        put(s->vertices + (i * (cols + 1) + j) * 7, x, y, (float)(1 - i), x, y, 0.0f);
      }
    grid_indices(s->indices, 1, cols);
    return WF_OK;
  }
  case WF__SHAPE_CUBE: {
    if ((st = shape_alloc(s, 24, 36)) != WF_OK) return st;
    for (int f = 0; f < 6; f++) {
      int axis = f / 2;
      float sign = (f % 2) ? -1.0f : 1.0f;
      float n[3] = {0, 0, 0}, u[3] = {0, 0, 0}, v[3] = {0, 0, 0};
      n[axis] = sign;
      u[(axis + 1) % 3] = 1.0f;
      v[(axis + 2) % 3] = sign; /* u x v = n: counter-clockwise seen from outside */
      for (int k = 0; k < 4; k++) {
        float a = (k == 1 || k == 2) ? 1.0f : -1.0f, b = (k >= 2) ? 1.0f : -1.0f;
        put(s->vertices + (size_t)(f * 4 + k) * 7, n[0] + a * u[0] + b * v[0],
            n[1] + a * u[1] + b * v[1], n[2] + a * u[2] + b * v[2], n[0], n[1], n[2]);
      }
      uint32_t o = (uint32_t)f * 4, *idx = s->indices + f * 6;
      idx[0] = o, idx[1] = o + 1, idx[2] = o + 2, idx[3] = o, idx[4] = o + 2, idx[5] = o + 3;
    }
    return WF_OK;
  }
  case WF__SHAPE_SQUARE: {
    if ((st = shape_alloc(s, 4, 6)) != WF_OK) return st;
    put(s->vertices + 0, -1, 0, -1, 0, 1, 0);
    put(s->vertices + 7, -1, 0, 1, 0, 1, 0);
    put(s->vertices + 14, 1, 0, 1, 0, 1, 0);
    put(s->vertices + 21, 1, 0, -1, 0, 1, 0);
    static const uint32_t idx[6] = {0, 1, 2, 0, 2, 3};
    memcpy(s->indices, idx, sizeof idx);
    return WF_OK;
  }
  }
  return wf__render_error(WF_ERR_INVALID, __func__, "unknown shape %d", which);
}

void wf__shape_free(wf__shape *s) {
  free(s->vertices);
  free(s->indices);
  memset(s, 0, sizeof *s);
}

void wf_render_camera_matrices(const wf_render_camera *c, float aspect, float view[16],
                               float proj[16]) {
  vec3 eye = {c->position[0], c->position[1], c->position[2]};
  vec3 at = {c->target[0], c->target[1], c->target[2]};
  vec3 up = {c->up[0], c->up[1], c->up[2]};
  if (up[0] == 0.0f && up[1] == 0.0f && up[2] == 0.0f) up[1] = 1.0f;
  float fov = c->fov_y_deg > 0.0f ? c->fov_y_deg : 45.0f;
  float zn = c->z_near > 0.0f ? c->z_near : 0.02f;
  float zf = c->z_far > zn ? c->z_far : 500.0f;
  mat4 v, p;
  glm_lookat(eye, at, up, v);
  glm_perspective(glm_rad(fov), aspect > 0.0f ? aspect : 1.0f, zn, zf, p);
  memcpy(view, v, sizeof v);
  memcpy(proj, p, sizeof p);
}
