/* The viewer tests' known scene and an independent reference for its pixels.
 *
 * The scene (y up): a ground plane (blue), a big green sphere left of centre, a red cloth quad on
 * the right in the plane z = 0, a small yellow sphere in front of the quad (it must occlude it)
 * and a magenta sphere whose centre lies 0.5 r behind the quad, so only a disc of radius
 * 0.87 r pokes through (impostor depth must be exact per pixel: a flat billboard would show all
 * of it or none of it).
 *
 * The reference is a small ray tracer in double precision: for a pixel it casts the ray through the
 * pixel centre with the inverse of the camera matrices, finds the nearest object and shades it
 * with the model documented in viewer.h. Pixels whose 3x3 neighbourhood sees more than one object
 * are edges (antialiasing, rasterization rules) and are not compared.
 */
#ifndef WEFT_VIEWER_TEST_SCENE_H
#define WEFT_VIEWER_TEST_SCENE_H

#include <cglm/cglm.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viewer.h"

enum { VT_W = 320, VT_H = 240 };
enum { VT_NONE = -1, VT_PLANE = 0, VT_BIG = 1, VT_QUAD = 2, VT_SMALL = 3, VT_POKE = 4 };

static const float vt_quad_pos[4 * 4] = {0.4f, 0.3f, 0.0f, 0.0f, 2.2f, 0.3f, 0.0f, 0.0f,
                                         2.2f, 1.7f, 0.0f, 0.0f, 0.4f, 1.7f, 0.0f, 0.0f};
static const uint32_t vt_quad_idx[6] = {0, 1, 2, 0, 2, 3};
static const float vt_big[4] = {-1.3f, 1.0f, 0.0f, 0.8f};
static const float vt_small[4] = {1.0f, 1.2f, 0.5f, 0.25f};
static const float vt_poke[4] = {1.7f, 0.7f, -0.15f, 0.3f};

typedef struct vt_scene {
  wf_render_points points[3];
  wf_render_mesh mesh;
  wf_render_collider plane;
  wf_render_scene scene;
} vt_scene;

static inline void vt_scene_build(vt_scene *v) {
  memset(v, 0, sizeof *v);
  v->points[0] = (wf_render_points){.xyzr = vt_big, .count = 1, .color = {0.15f, 0.8f, 0.2f, 1}};
  v->points[1] = (wf_render_points){.xyzr = vt_small, .count = 1, .color = {0.9f, 0.8f, 0.1f, 1}};
  v->points[2] = (wf_render_points){.xyzr = vt_poke, .count = 1, .color = {0.8f, 0.2f, 0.8f, 1}};
  v->mesh = (wf_render_mesh){.positions = vt_quad_pos,
                             .stride = 4,
                             .vertex_count = 4,
                             .indices = vt_quad_idx,
                             .triangle_count = 2,
                             .color = {0.9f, 0.1f, 0.1f, 1}};
  v->plane = (wf_render_collider){.type = WF_RENDER_PLANE,
                                  .normal = {0, 1, 0},
                                  .offset = 0.0f,
                                  .extent = 10.0f,
                                  .color = {0.2f, 0.3f, 0.8f, 1}};
  wf_render_scene *s = &v->scene;
  s->points = v->points;
  s->point_set_count = 3;
  s->meshes = &v->mesh;
  s->mesh_count = 1;
  s->colliders = &v->plane;
  s->collider_count = 1;
  s->camera = (wf_render_camera){.position = {0.0f, 1.5f, 6.0f},
                                 .target = {0.0f, 0.8f, 0.0f},
                                 .up = {0, 1, 0},
                                 .fov_y_deg = 45.0f,
                                 .z_near = 0.1f,
                                 .z_far = 100.0f};
  s->lights[0] = (wf_render_light){{0.3f, 1.0f, 0.8f}, {0.7f, 0.7f, 0.7f}};
  s->lights[1] = (wf_render_light){{-0.6f, 0.4f, 0.5f}, {0.3f, 0.3f, 0.3f}};
  s->light_count = 2;
  s->ambient[0] = s->ambient[1] = s->ambient[2] = 0.2f;
  s->background[0] = s->background[1] = s->background[2] = 0.05f;
  s->background[3] = 1.0f;
}

/* ---- the reference ------------------------------------------------------------------------- */

typedef struct vt_ref {
  mat4 inv; /* inverse(proj * view) */
  double eye[3];
  int w, h;
  const vt_scene *v;
} vt_ref;

static inline void vt_ref_init(vt_ref *r, const vt_scene *v, int w, int h) {
  float view[16], proj[16];
  wf_render_camera_matrices(&v->scene.camera, (float)w / (float)h, view, proj);
  mat4 pv;
  glm_mat4_mul((vec4 *)proj, (vec4 *)view, pv);
  glm_mat4_inv(pv, r->inv);
  for (int i = 0; i < 3; i++)
    r->eye[i] = v->scene.camera.position[i];
  r->w = w, r->h = h, r->v = v;
}

/* The world ray through pixel (px, py) (py from the top), unit direction. */
static inline void vt_ray(const vt_ref *r, double px, double py, double dir[3]) {
  vec4 ndc = {(float)((px + 0.5) / r->w * 2.0 - 1.0), (float)(1.0 - (py + 0.5) / r->h * 2.0), 1.0f,
              1.0f};
  vec4 far;
  glm_mat4_mulv((vec4 *)r->inv, ndc, far);
  double len = 0;
  for (int i = 0; i < 3; i++) {
    dir[i] = far[i] / far[3] - r->eye[i];
    len += dir[i] * dir[i];
  }
  for (int i = 0; i < 3; i++)
    dir[i] /= sqrt(len);
}

static inline double vt_hit_sphere(const double o[3], const double d[3], const float s[4]) {
  double oc[3] = {o[0] - s[0], o[1] - s[1], o[2] - s[2]};
  double b = oc[0] * d[0] + oc[1] * d[1] + oc[2] * d[2];
  double c = oc[0] * oc[0] + oc[1] * oc[1] + oc[2] * oc[2] - (double)s[3] * s[3];
  double h = b * b - c;
  if (h < 0) return INFINITY;
  double t = -b - sqrt(h);
  return t > 0 ? t : INFINITY;
}

/* Nearest object along the ray through the pixel; t, normal (facing the eye) and albedo. */
static inline int vt_cast(const vt_ref *r, double px, double py, double *t_out, double n[3],
                          double albedo[3]) {
  double d[3];
  vt_ray(r, px, py, d);
  const double *o = r->eye;
  int best = VT_NONE;
  double bt = INFINITY;
  /* ground plane y = 0, drawn as the square |x|, |z| <= 10 around the target's foot (0, 0, 0) */
  if (d[1] < 0) {
    double t = -o[1] / d[1];
    double x = o[0] + t * d[0], z = o[2] + t * d[2];
    if (fabs(x) <= 10 && fabs(z) <= 10 && t < bt) bt = t, best = VT_PLANE;
  }
  /* the quad z = 0, x in [0.4, 2.2], y in [0.3, 1.7] */
  if (d[2] != 0) {
    double t = -o[2] / d[2];
    double x = o[0] + t * d[0], y = o[1] + t * d[1];
    if (t > 0 && x >= 0.4 && x <= 2.2 && y >= 0.3 && y <= 1.7 && t < bt) bt = t, best = VT_QUAD;
  }
  const float *spheres[3] = {vt_big, vt_small, vt_poke};
  const int ids[3] = {VT_BIG, VT_SMALL, VT_POKE};
  for (int i = 0; i < 3; i++) {
    double t = vt_hit_sphere(o, d, spheres[i]);
    if (t < bt) bt = t, best = ids[i];
  }
  if (best == VT_NONE) return best;
  double p[3] = {o[0] + bt * d[0], o[1] + bt * d[1], o[2] + bt * d[2]};
  const float *col = NULL;
  switch (best) {
  case VT_PLANE:
    n[0] = 0, n[1] = 1, n[2] = 0;
    col = r->v->plane.color;
    break;
  case VT_QUAD:
    n[0] = 0, n[1] = 0, n[2] = 1;
    col = r->v->mesh.color;
    break;
  default: { /* spheres[k] and points[k] belong to ids[k] */
    int k = best == VT_BIG ? 0 : best == VT_SMALL ? 1 : 2;
    const float *s = spheres[k];
    for (int i = 0; i < 3; i++)
      n[i] = (p[i] - s[i]) / s[3];
    col = r->v->points[k].color;
  }
  }
  for (int i = 0; i < 3; i++)
    albedo[i] = col[i];
  if (t_out) *t_out = bt;
  return best;
}

/* The shading model of viewer.h, in world space. */
static inline void vt_shade(const wf_render_scene *s, const double albedo[3], const double n[3],
                            const double v[3], double out[3]) {
  double diff[3] = {s->ambient[0], s->ambient[1], s->ambient[2]}, spec[3] = {0, 0, 0};
  for (int i = 0; i < s->light_count; i++) {
    const float *ld = s->lights[i].direction;
    double len = sqrt((double)ld[0] * ld[0] + (double)ld[1] * ld[1] + (double)ld[2] * ld[2]);
    double l[3] = {ld[0] / len, ld[1] / len, ld[2] / len};
    double nl = n[0] * l[0] + n[1] * l[1] + n[2] * l[2];
    if (nl <= 0) continue;
    double h[3] = {l[0] + v[0], l[1] + v[1], l[2] + v[2]};
    double hl = sqrt(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]);
    double nh = (n[0] * h[0] + n[1] * h[1] + n[2] * h[2]) / hl;
    double sp = 0.25 * pow(nh > 0 ? nh : 0, 48.0);
    for (int k = 0; k < 3; k++) {
      diff[k] += s->lights[i].color[k] * nl;
      spec[k] += s->lights[i].color[k] * sp;
    }
  }
  for (int k = 0; k < 3; k++) {
    double c = albedo[k] * diff[k] + spec[k];
    out[k] = c < 0 ? 0 : c > 1 ? 1 : c;
  }
}

/* Expected 8-bit colour of pixel (px, py); returns the object or VT_EDGE-like -2 when the 3x3
 * neighbourhood is not one object (then rgb is not set). */
static inline int vt_expect(const vt_ref *r, int px, int py, int rgb[3]) {
  double n[3], a[3], t;
  int id = vt_cast(r, px, py, &t, n, a);
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      double n2[3], a2[3];
      if ((dx || dy) && vt_cast(r, px + dx, py + dy, NULL, n2, a2) != id) return -2;
    }
  const float *bg = r->v->scene.background;
  if (id == VT_NONE) {
    for (int k = 0; k < 3; k++)
      rgb[k] = (int)lround(bg[k] * 255.0);
    return id;
  }
  double d[3], v[3], c[3];
  vt_ray(r, px, py, d);
  for (int k = 0; k < 3; k++)
    v[k] = -d[k];
  vt_shade(&r->v->scene, a, n, v, c);
  for (int k = 0; k < 3; k++)
    rgb[k] = (int)lround(c[k] * 255.0);
  return id;
}

/* Pixel of a world point (x to the right, y down, centre of pixel at +0.5). */
static inline void vt_project(const vt_scene *v, int w, int h, const float p[3], double *px,
                              double *py) {
  float view[16], proj[16];
  wf_render_camera_matrices(&v->scene.camera, (float)w / (float)h, view, proj);
  vec4 wp = {p[0], p[1], p[2], 1.0f}, e, c;
  glm_mat4_mulv((vec4 *)view, wp, e);
  glm_mat4_mulv((vec4 *)proj, e, c);
  *px = (c[0] / c[3] * 0.5 + 0.5) * w;
  *py = (0.5 - c[1] / c[3] * 0.5) * h;
}

typedef struct vt_report {
  int compared, bad, worst, worst_x, worst_y;
  int objects[5]; /* compared pixels per object */
} vt_report;

/* Compares every non-edge pixel with the reference; a pixel is bad if a channel is off by more
 * than tol. */
static inline void vt_compare(const vt_ref *r, const uint8_t *rgba, int tol, vt_report *rep) {
  memset(rep, 0, sizeof *rep);
  for (int y = 0; y < r->h; y++)
    for (int x = 0; x < r->w; x++) {
      int want[3];
      int id = vt_expect(r, x, y, want);
      if (id == -2) continue;
      const uint8_t *p = rgba + ((size_t)y * r->w + x) * 4;
      int diff = 0;
      for (int k = 0; k < 3; k++) {
        int e = abs((int)p[k] - want[k]);
        if (e > diff) diff = e;
      }
      rep->compared++;
      if (id >= 0) rep->objects[id]++;
      if (diff > rep->worst) rep->worst = diff, rep->worst_x = x, rep->worst_y = y;
      if (diff > tol) {
        if (rep->bad < 5)
          fprintf(stderr, "    pixel (%d, %d): got %d %d %d, expected %d %d %d (object %d)\n", x, y,
                  p[0], p[1], p[2], want[0], want[1], want[2], id);
        rep->bad++;
      }
    }
}

#endif
