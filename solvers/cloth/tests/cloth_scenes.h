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
  d.material.coefficients = true;
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
  d.devices[0] = dev;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
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
static inline wf_status scene_busy_tuned(wf_device *dev, int integrator, bool no_graph,
                                         const wf_cloth_tuning *tuning, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  if (tuning) d.tuning = *tuning;
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
  d.devices[0] = dev;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
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

/* The busy scene with the automatic tuning. */
static inline wf_status scene_busy(wf_device *dev, int integrator, bool no_graph, wf_cloth **out) {
  return scene_busy_tuned(dev, integrator, no_graph, NULL, out);
}

/* Positions and velocities after the cloth's work, in one array (8 floats a vertex). */
static inline float *scene_state(wf_cloth *c, uint32_t *n) {
  wf_cloth_info info;
  if (wf_cloth_info_get(c, &info) != WF_OK) return NULL;
  float *s = malloc((size_t)info.vertices * 32);
  if (!s) return NULL;
  if (wf_cloth_download_local(c, (float(*)[4])s, (float(*)[4])(s + 4 * (size_t)info.vertices)) !=
      WF_OK) {
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

/* Two square sheets in one mesh cloth, for self-collision: a lower n x n sheet (spacing h) at
 * y = 0.5 held by its border, and an upper (n-2) x (n-2) sheet 0.15 m above it, shifted by half
 * a cell in x and z so that no upper vertex sits on a lower one. Vertices 0 .. n²-1 are the
 * lower sheet (row-major, x fastest), the rest the upper sheet. thickness 0.05 > h / √2 with
 * h = 0.05, so a vertex cannot pass between the lower sheet's vertices. */
#define SCENE_STACK_N 9
static inline wf_status scene_stacked(wf_device *dev, int integrator, bool self, bool no_graph,
                                      wf_cloth **out) {
  enum { N = SCENE_STACK_N, M = SCENE_STACK_N - 2 };
  const float h = 0.05f;
  static float v[N * N + M * M][3];
  static uint32_t t[2 * (N - 1) * (N - 1) + 2 * (M - 1) * (M - 1)][3];
  uint32_t nt = 0;
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++)
      v[j * N + i][0] = (i - (N - 1) / 2.0f) * h, v[j * N + i][1] = 0.5f,
                v[j * N + i][2] = (j - (N - 1) / 2.0f) * h;
  for (int j = 0; j < M; j++)
    for (int i = 0; i < M; i++) {
      float *p = v[N * N + j * M + i];
      p[0] = (i - (M - 1) / 2.0f) * h + 0.5f * h, p[1] = 0.65f,
      p[2] = (j - (M - 1) / 2.0f) * h + 0.5f * h;
    }
  for (int s = 0; s < 2; s++) {
    int n = s ? M : N;
    uint32_t base = s ? N * N : 0;
    for (int j = 0; j + 1 < n; j++)
      for (int i = 0; i + 1 < n; i++) {
        uint32_t a = base + (uint32_t)(j * n + i), b = a + 1, c = a + (uint32_t)n, d = c + 1;
        t[nt][0] = a, t[nt][1] = c, t[nt][2] = b, nt++;
        t[nt][0] = b, t[nt][1] = c, t[nt][2] = d, nt++;
      }
  }
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "stack";
  d.integrator = integrator;
  d.iterations = integrator == WF_CLOTH_XPBD ? 4 : 1;
  d.substeps = integrator == WF_CLOTH_XPBD ? 16 : 32;
  d.self_collision = self;
  d.no_graph = no_graph;
  d.damping = 0.2f;
  d.material.particle_mass = 0.01f;
  d.material.thickness = 0.05f;
  d.material.coefficients = true;
  d.material.stretch_stiffness = 2000.0f;
  d.material.shear_stiffness = 500.0f;
  d.material.bend_stiffness = 5.0f;
  d.material.damping = 0.5f;
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.vertices = (const float(*)[3])v;
  md.vertex_count = N * N + M * M;
  md.triangles = (const uint32_t(*)[3])t;
  md.triangle_count = nt;
  d.devices[0] = dev;
  wf_status st = wf_cloth_create_mesh(&d, &md, out);
  for (int j = 0; j < N && st == WF_OK; j++)
    for (int i = 0; i < N && st == WF_OK; i++)
      if (i == 0 || j == 0 || i == N - 1 || j == N - 1)
        st = wf_cloth_pin(*out, (uint32_t)(j * N + i));
  if (st != WF_OK && *out) wf_cloth_destroy(*out), *out = NULL;
  return st;
}

/* A cloth and a particle solver coupled on one stream (*s, created here; destroy it after both):
 * a 17 x 17 sheet (1 m, 10 g a vertex, thickness 0.01) at y = 0.5, all four edges pinned unless
 * `free_cloth`, and `np` particles of radius SCENE_BALL_R (0.08) and mass `pmass` from pos/vel
 * (xyz; the particles' w is set here). Gravity g (y). Both take 16 substeps at 60 frames/s. A
 * pinned net has velocity damping 2/s (to come to rest), a free one none (momentum). */
#ifndef SCENE_BALL_R
#define SCENE_BALL_R 0.08f
#endif
/* The same with the net's origin given (origin NULL: automatic; wf_cloth_desc.origin_given). */
static inline wf_status scene_coupled_at(wf_device *dev, int integrator, bool couple,
                                         bool free_cloth, float g, uint32_t np,
                                         const float (*pos)[3], const float (*vel)[3], float pmass,
                                         const double *origin, wf_stream **s, wf_cloth **c,
                                         wf_particles **ps) {
  *c = NULL, *ps = NULL;
  wf_status st = wf_stream_create(dev, 0, s);
  if (st != WF_OK) return st;
  wf_particles_desc pd = wf_particles_desc_default();
  pd.name = "balls";
  pd.substeps = 16;
  pd.stream = *s;
  pd.gravity[1] = g;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "net";
  d.integrator = integrator;
  d.iterations = integrator == WF_CLOTH_XPBD ? 4 : 1;
  d.stream = *s;
  d.gravity[1] = g;
  d.material.particle_mass = 0.01f;
  d.material.thickness = 0.01f;
  d.material.coefficients = true;
  d.material.stretch_stiffness = 2000.0f;
  d.material.shear_stiffness = 500.0f;
  d.material.damping = 0.2f;
  d.material.shear_compliance = 0.0f;
  d.damping = free_cloth ? 0.0f : 2.0f; /* a pinned net comes to rest; a free one keeps momentum */
  if (origin) {
    d.origin_given = true;
    memcpy(d.origin, origin, sizeof d.origin);
  }
  wf_cloth_grid gr = wf_cloth_grid_default();
  gr.resolution[0] = gr.resolution[1] = 17;
  gr.center[1] = 0.5f;
  pd.devices[0] = dev;
  if ((st = wf_particles_create(&pd, ps)) != WF_OK) return st;
  float(*p4)[4] = malloc(np * 16), (*v4)[4] = malloc(np * 16);
  if (!p4 || !v4) {
    free(p4), free(v4);
    return WF_ERR_OUT_OF_MEMORY;
  }
  for (uint32_t i = 0; i < np; i++) {
    for (int k = 0; k < 3; k++)
      p4[i][k] = pos[i][k], v4[i][k] = vel[i][k];
    p4[i][3] = SCENE_BALL_R, v4[i][3] = 1.0f / pmass;
  }
  st = wf_particles_add(*ps, np, (const float(*)[4])p4, (const float(*)[4])v4, 0, NULL);
  free(p4), free(v4);
  d.devices[0] = dev;
  if (st == WF_OK) st = wf_cloth_create_grid(&d, &gr, c);
  if (st == WF_OK && !free_cloth) {
    const char *edges[] = {"top", "bottom", "left", "right"};
    for (int e = 0; e < 4 && st == WF_OK; e++)
      st = wf_cloth_pin_named(*c, edges[e], NULL);
  }
  if (st == WF_OK && couple) st = wf_cloth_couple(*c, *ps);
  return st;
}

static inline wf_status scene_coupled(wf_device *dev, int integrator, bool couple, bool free_cloth,
                                      float g, uint32_t np, const float (*pos)[3],
                                      const float (*vel)[3], float pmass, wf_stream **s,
                                      wf_cloth **c, wf_particles **ps) {
  return scene_coupled_at(dev, integrator, couple, free_cloth, g, np, pos, vel, pmass, NULL, s, c,
                          ps);
}

#endif
