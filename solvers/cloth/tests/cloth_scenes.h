/* Scene builders and helpers shared by the cloth tests (physics, determinism, API, parity).
 * Every builder returns WF_OK or the failing status with wf_last_error() set. */
#ifndef WEFT_CLOTH_TEST_SCENES_H
#define WEFT_CLOTH_TEST_SCENES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/cloth.h"
#include "weft/particles.h"

/* A vertical chain of n vertices (a 1 x n grid), spacing `spacing`, hanging from its top vertex
 * at (0, top, 0), every vertex of mass `mass`; only stretch springs / distance constraints. */
static inline wf_status scene_chain(wf_device *dev, int integrator, int n, float spacing,
                                    float mass, int substeps, int iterations, float stiffness,
                                    float damping, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "chain";
  d.integrator = integrator;
  d.substeps = substeps;
  d.iterations = iterations;
  d.damping = damping;
  d.material.particle_mass = mass;
  d.material.stretch_stiffness = stiffness;
  d.material.shear_stiffness = 0.0f;
  d.material.bend_stiffness = 0.0f;
  d.material.stretch_compliance = stiffness > 0.0f ? 1.0f / stiffness : 0.0f;
  d.material.damping = 0.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 1, g.resolution[1] = n;
  g.size[0] = 0.0f, g.size[1] = spacing * (float)(n - 1);
  g.center[0] = 0.0f, g.center[1] = 1.0f, g.center[2] = 0.0f;
  g.v_axis[0] = 0.0f, g.v_axis[1] = 1.0f, g.v_axis[2] = 0.0f;
  wf_status st = wf_cloth_create_grid(dev, &d, &g, out);
  if (st != WF_OK) return st;
  return wf_cloth_pin_named(*out, "top", NULL);
}

static inline wf_collider_desc scene_sphere(float x, float y, float z, float r) {
  wf_collider_desc c;
  memset(&c, 0, sizeof c);
  c.name = "sphere";
  c.type = WF_COLLIDER_SPHERE;
  c.center[0] = x, c.center[1] = y, c.center[2] = z;
  c.radius = r;
  c.friction = 0.5f;
  return c;
}

static inline wf_collider_desc scene_ground(float y) {
  wf_collider_desc c;
  memset(&c, 0, sizeof c);
  c.name = "ground";
  c.type = WF_COLLIDER_PLANE;
  c.normal[1] = 1.0f;
  c.offset = y;
  c.friction = 0.5f;
  return c;
}

/* Everything at once, for the bitwise tests: a 12 x 10 flat sheet falling in wind (drag and lift)
 * onto a sphere, a box and a capsule above the ground, two corners attached to a moving box and a
 * region pinned. */
static inline wf_status scene_busy(wf_device *dev, int integrator, bool no_graph, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "busy";
  d.integrator = integrator;
  d.substeps = 8;
  d.iterations = integrator == WF_CLOTH_XPBD ? 3 : 1;
  d.no_graph = no_graph;
  d.wind[0] = 3.0f, d.wind[2] = 1.0f;
  d.damping = 0.1f;
  d.material.drag = 1.0f;
  d.material.lift = 0.5f;
  d.material.thickness = 0.01f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 12, g.resolution[1] = 10;
  g.size[0] = 1.1f, g.size[1] = 0.9f;
  g.center[1] = 0.7f;
  wf_status st = wf_cloth_create_grid(dev, &d, &g, out);
  if (st != WF_OK) return st;
  wf_cloth *c = *out;
  wf_collider_desc s = scene_sphere(0.1f, 0.2f, 0.0f, 0.3f), ground = scene_ground(-0.4f);
  wf_collider_desc box, cap;
  memset(&box, 0, sizeof box), memset(&cap, 0, sizeof cap);
  box.name = "box", box.type = WF_COLLIDER_BOX, box.friction = 0.3f;
  box.center[0] = -0.4f, box.center[1] = 0.1f, box.half_extents[0] = box.half_extents[1] = 0.1f;
  box.half_extents[2] = 0.3f;
  cap.name = "capsule", cap.type = WF_COLLIDER_CAPSULE, cap.friction = 0.8f, cap.radius = 0.05f;
  cap.p0[0] = 0.3f, cap.p0[1] = 0.3f, cap.p0[2] = -0.4f, cap.p1[0] = 0.3f, cap.p1[1] = 0.3f;
  cap.p1[2] = 0.4f;
  wf_collider_desc mover;
  memset(&mover, 0, sizeof mover);
  mover.name = "mover", mover.type = WF_COLLIDER_BOX, mover.friction = 0.5f;
  mover.center[1] = 3.0f, mover.half_extents[0] = mover.half_extents[1] = 0.05f;
  mover.half_extents[2] = 0.05f, mover.velocity[1] = 0.2f, mover.velocity[0] = 0.1f;
  uint32_t mi = 0;
  float lo[3] = {-0.2f, 0.6f, 0.3f}, hi[3] = {0.2f, 0.8f, 0.5f};
  if ((st = wf_cloth_add_collider(c, &s, NULL)) != WF_OK ||
      (st = wf_cloth_add_collider(c, &ground, NULL)) != WF_OK ||
      (st = wf_cloth_add_collider(c, &box, NULL)) != WF_OK ||
      (st = wf_cloth_add_collider(c, &cap, NULL)) != WF_OK ||
      (st = wf_cloth_add_collider(c, &mover, &mi)) != WF_OK ||
      (st = wf_cloth_attach(c, 0, mi)) != WF_OK || (st = wf_cloth_attach(c, 11, mi)) != WF_OK ||
      (st = wf_cloth_pin_region(c, lo, hi, NULL)) != WF_OK) {
    wf_cloth_destroy(c);
    *out = NULL;
  }
  return st;
}

/* Positions and velocities after the cloth's work, in one array (8 floats a vertex). */
static inline float *scene_state(wf_cloth *c, uint32_t *n) {
  wf_cloth_info info;
  if (wf_cloth_info_get(c, &info) != WF_OK) return NULL;
  float *s = malloc((size_t)info.vertices * 32);
  if (!s) return NULL;
  if (wf_cloth_download(c, (float(*)[4])s, (float(*)[4])(s + 4 * (size_t)info.vertices)) != WF_OK) {
    free(s);
    return NULL;
  }
  *n = info.vertices;
  return s;
}

/* Index of the first float that differs bitwise, or -1. */
static inline long scene_first_diff(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0) return (long)i;
  return -1;
}

#endif
