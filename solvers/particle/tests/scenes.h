/* Scene builders shared by the particle tests (and, later, the benchmark): small, deterministic
 * set-ups whose physics the tests check. Each returns WF_OK or the failing status, with
 * wf_last_error() set. */
#ifndef WEFT_PARTICLE_TEST_SCENES_H
#define WEFT_PARTICLE_TEST_SCENES_H

#include "weft/particles.h"

/* Overrides for the builders below: the contact model, and the substeps per frame (0: the
 * builder's own) and material stiffness (0: the builder's own). */
static int scene_contact_model = WF_CONTACT_DEM;
static int scene_substeps = 0;
static float scene_stiffness = 0.0f;
static float scene_relaxation = 0.0f; /* 0: the default */
static int scene_one_launch = 0;      /* wf_particles_tuning.one_launch (0: automatic) */

static inline void scene_apply(wf_particles_desc *d, wf_particle_material *m) {
  d->contact_model = scene_contact_model;
  d->tuning.one_launch = scene_one_launch;
  if (scene_relaxation > 0.0f) d->relaxation = scene_relaxation;
  if (scene_substeps > 0) d->substeps = scene_substeps;
  if (m && scene_stiffness > 0.0f) m->stiffness = scene_stiffness;
}

/* A jittered box of n x layers x n particles (radius 0.05, spacing 0.11) dropped onto the plane y =
 * 0 between four walls, with a friction and restitution that let it come to rest. */
static inline wf_status scene_pile(wf_device *dev, int n, int layers, bool no_graph,
                                   wf_particles **out) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "pile";
  d.capacity = (uint32_t)(n * n * layers);
  d.substeps = 32;
  d.no_graph = no_graph;
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1e4f;
  m.restitution = 0.3f;
  m.friction = 0.5f;
  scene_apply(&d, &m);
  d.devices[0] = dev;
  wf_status st = wf_particles_create(&d, out);
  if (st != WF_OK) return st;
  if ((st = wf_particles_set_material(*out, 0, &m)) != WF_OK) return st;
  wf_particles_emitter e = wf_particles_emitter_default();
  e.name = "pile";
  e.radius = 0.05f;
  e.spacing = 0.11f;
  e.jitter = 0.004f;
  e.seed = 42;
  float h = 0.5f * 0.11f * (float)n;
  e.half_extents[0] = e.half_extents[2] = h;
  e.half_extents[1] = 0.5f * 0.11f * (float)layers;
  e.center[1] = e.half_extents[1] + 0.06f;
  if ((st = wf_particles_emit(*out, &e, NULL, NULL)) != WF_OK) return st;
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "ground";
  g.restitution = 0.3f;
  g.friction = 0.5f;
  if ((st = wf_particles_add_collider(*out, &g, NULL)) != WF_OK) return st;
  /* four walls just outside the lattice: a cubic packing in the open would slowly collapse */
  for (int k = 0; k < 4; k++) {
    g.name = "wall";
    float s = k % 2 ? -1.0f : 1.0f;
    g.normal[0] = k < 2 ? s : 0.0f, g.normal[1] = 0.0f, g.normal[2] = k < 2 ? 0.0f : s;
    g.offset = -(h + 0.01f);
    if ((st = wf_particles_add_collider(*out, &g, NULL)) != WF_OK) return st;
  }
  return WF_OK;
}

/* A square pyramid of touching particles (radius 0.05): layer k holds (n-k)² particles sitting in
 * the hollows of layer k-1 (a close packing), dropped from `drop` above the plane, the bottom layer
 * held by four walls. Stable without
 * static friction, so it can come to rest under the viscous-regularized Coulomb friction. */
static inline wf_status scene_pyramid(wf_device *dev, int n, float drop, wf_particles **out) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "pyramid";
  d.capacity = (uint32_t)(n * (n + 1) * (2 * n + 1) / 6);
  d.substeps = 32;
  d.devices[0] = dev;
  wf_status st = wf_particles_create(&d, out);
  if (st != WF_OK) return st;
  wf_particle_material m = wf_particle_material_default();
  m.restitution = 0.3f;
  if ((st = wf_particles_set_material(*out, 0, &m)) != WF_OK) return st;
  for (int k = 0; k < n; k++) {
    wf_particles_emitter e = wf_particles_emitter_default();
    e.name = "layer";
    e.radius = 0.05f;
    e.spacing = 0.1f;
    e.half_extents[0] = e.half_extents[2] = 0.05f * (float)(n - k);
    e.half_extents[1] = 0.05f;
    e.center[1] = 0.0505f + (float)k * 0.0707107f + drop;
    if ((st = wf_particles_emit(*out, &e, NULL, NULL)) != WF_OK) return st;
  }
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "ground";
  g.restitution = 0.3f;
  if ((st = wf_particles_add_collider(*out, &g, NULL)) != WF_OK) return st;
  for (int k = 0; k < 4; k++) {
    g.name = "wall";
    float s = k % 2 ? -1.0f : 1.0f;
    g.normal[0] = k < 2 ? s : 0.0f, g.normal[1] = 0.0f, g.normal[2] = k < 2 ? 0.0f : s;
    g.offset = -(0.05f * (float)n + 0.001f);
    if ((st = wf_particles_add_collider(*out, &g, NULL)) != WF_OK) return st;
  }
  return WF_OK;
}

/* Every collider kind, a kinematic one among them, and a jittered cloud raining onto them. */
static inline wf_status scene_colliders(wf_device *dev, bool no_graph, wf_particles **out) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "colliders";
  d.capacity = 600;
  d.substeps = 16;
  d.no_graph = no_graph;
  wf_particle_material m = wf_particle_material_default();
  m.restitution = 0.5f;
  m.cohesion = 0.1f;
  scene_apply(&d, &m);
  d.devices[0] = dev;
  wf_status st = wf_particles_create(&d, out);
  if (st != WF_OK) return st;
  uint32_t mi;
  if ((st = wf_particles_add_material(*out, &m, &mi)) != WF_OK) return st;
  wf_particles_emitter e = wf_particles_emitter_default();
  e.shape = WF_EMIT_SPHERE;
  e.sphere_radius = 0.5f;
  e.center[1] = 1.2f;
  e.jitter = 0.01f;
  e.seed = 7;
  e.velocity[0] = 0.3f;
  e.material = mi;
  if ((st = wf_particles_emit(*out, &e, NULL, NULL)) != WF_OK) return st;
  wf_collider_desc c = wf_collider_desc_default();
  if ((st = wf_particles_add_collider(*out, &c, NULL)) != WF_OK) return st;
  c.type = WF_COLLIDER_SPHERE;
  c.center[0] = 0.2f, c.center[1] = 0.3f, c.radius = 0.25f;
  if ((st = wf_particles_add_collider(*out, &c, NULL)) != WF_OK) return st;
  c.type = WF_COLLIDER_BOX;
  c.center[0] = -0.3f, c.center[1] = 0.1f;
  c.half_extents[0] = 0.2f, c.half_extents[1] = 0.1f, c.half_extents[2] = 0.3f;
  c.velocity[0] = 0.5f; /* kinematic */
  if ((st = wf_particles_add_collider(*out, &c, NULL)) != WF_OK) return st;
  c.type = WF_COLLIDER_CAPSULE;
  c.velocity[0] = 0.0f;
  c.p0[0] = -0.5f, c.p0[1] = 0.6f, c.p0[2] = 0.2f;
  c.p1[0] = 0.5f, c.p1[1] = 0.5f, c.p1[2] = -0.2f;
  c.radius = 0.08f;
  return wf_particles_add_collider(*out, &c, NULL);
}

#endif
