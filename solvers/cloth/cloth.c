/* The cloth solver: creation (grid and mesh), validation, pins and attachments, colliders, the
 * parameter block, the substep pipeline and its captured frame, and readback.
 *
 * The substep, all on the solver's stream, nothing waits for the host:
 *
 *   mass-spring:  [SELF_COLLISION] [PARTICLE_COUPLING]  SPRINGS
 *                  (hooks, empty)                        one kernel per vertex: gather springs and
 *                                                        aerodynamics, semi-implicit Euler,
 *                                                        colliders; state half s%2 -> (s+1)%2
 *
 *   XPBD:         PREDICT  [SELF_COLLISION] [PARTICLE_COUPLING]  CONSTRAINTS           FINALIZE
 *                 pred =                                         iterations x colours  colliders,
 *                 x + dt v'                                      (one launch each)     v, x
 *
 * Invariants
 *  - Between public calls the state (positions, velocities, clock) is in half 0. A mass-spring
 *    batch of an odd number of substeps ends with a copy of half 1 back to half 0, so a captured
 *    frame always starts and ends in half 0 and can be replayed.
 *  - The captured frame bakes in buffer addresses and counts only; parameters, material
 *    constants, colliders and pins are read from device memory, so changing them needs no
 *    recapture. Nothing changes the counts after creation, so the graph is never dropped.
 *  - Pins and attachments write the pinned vertex's inverse mass (pos.w = 0) and velocity in half
 *    0, ordered on the solver's stream after the frames already enqueued.
 *  - Each kernel writes disjoint data per element (vertex, or constraint of one colour) and reads
 *    the clock of its input half; one element writes the clock of its output. Results are bitwise
 *    reproducible and equal on both backends.
 */
#include "weft/cloth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_kernels.h"
#include "cloth_mesh.h"
#include "gpu_internal.h"
#include "solvers/particle/collider.h"
#include "weft/particles.h" /* wf_collider_desc, WF_COLLIDER_* */

enum {
  B_POS0,
  B_VEL0,
  B_CLOCK0,
  B_POS1, /* springs: positions of half 1; XPBD: predicted positions */
  B_VEL1, /* springs only */
  B_CLOCK1,
  B_FLAGS,
  B_PARAMS,
  B_COLLIDERS,
  B_ADJ_START,
  B_ADJ,
  B_TRI_START,
  B_TRI_LIST,
  B_TRIS,
  B_CONS,
  B_LAMBDA,
  B_COUNT
};

struct wf_cloth {
  char name[64];
  wf_device *dev;
  wf_stream *stream;
  bool own_stream;
  wf_cloth_desc desc; /* desc.name points at name */
  wfc_topology topo;  /* rest positions, triangles, grid size */
  uint32_t nv, nt, springs, constraints, colours;
  uint32_t *colour_start;
  uint8_t *pinned; /* per vertex */
  uint32_t n_pinned;
  wf_buffer *buf[B_COUNT];
  wf_graph *graph;
  wfc_params params;
  wfp_collider colliders[WFC_MAX_COLLIDERS];
};

static void *ptr(const wf_cloth *c, int b) { return wf_buffer_ptr(c->buf[b]); }

/* A GPU-layer call failed: keep its message (copied: wf__error rewrites the same text). */
static wf_status fail_gpu(wf_status st, const char *fn, const wf_cloth *c, const char *what) {
  char why[768];
  snprintf(why, sizeof why, "%s", wf_last_error());
  return wf__error(st, fn, "cloth '%s': %s: %s", c->name, what, why);
}

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return fail_gpu(st_, fn, c, what);                                           \
  } while (0)

static bool finite3(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* ---- defaults ---------------------------------------------------------------------------------
 */

wf_cloth_material wf_cloth_material_default(void) {
  return (wf_cloth_material){.density = 0.2f,
                             .thickness = 0.005f,
                             .stretch_stiffness = 50.0f,
                             .shear_stiffness = 20.0f,
                             .bend_stiffness = 2.0f,
                             .stretch_compliance = 0.0f,
                             .shear_compliance = 1e-4f,
                             .bend_compliance = 1.0f,
                             .damping = 0.05f,
                             .friction = 0.5f};
}

wf_cloth_desc wf_cloth_desc_default(void) {
  return (wf_cloth_desc){.name = "cloth",
                         .integrator = WF_CLOTH_SPRINGS,
                         .substeps = 16,
                         .iterations = 1,
                         .frame_dt = 1.0f / 60.0f,
                         .gravity = {0.0f, -9.81f, 0.0f},
                         .air_density = 1.2f,
                         .material = wf_cloth_material_default()};
}

wf_cloth_grid wf_cloth_grid_default(void) {
  return (wf_cloth_grid){.size = {1.0f, 1.0f},
                         .resolution = {16, 16},
                         .center = {0.0f, 1.0f, 0.0f},
                         .u_axis = {1.0f, 0.0f, 0.0f},
                         .v_axis = {0.0f, 0.0f, -1.0f}};
}

wf_cloth_mesh_desc wf_cloth_mesh_desc_default(void) { return (wf_cloth_mesh_desc){.scale = 1.0f}; }

/* ---- validation and the parameter block -------------------------------------------------------
 */

static wf_status check_material(const char *fn, const char *name, const wf_cloth_material *m) {
  const char *fields[] = {"density",
                          "particle_mass",
                          "thickness",
                          "stretch_stiffness",
                          "shear_stiffness",
                          "bend_stiffness",
                          "stretch_compliance",
                          "shear_compliance",
                          "bend_compliance",
                          "damping",
                          "drag",
                          "lift",
                          "friction"};
  const float vals[] = {m->density,
                        m->particle_mass,
                        m->thickness,
                        m->stretch_stiffness,
                        m->shear_stiffness,
                        m->bend_stiffness,
                        m->stretch_compliance,
                        m->shear_compliance,
                        m->bend_compliance,
                        m->damping,
                        m->drag,
                        m->lift,
                        m->friction};
  for (int i = 0; i < (int)(sizeof vals / sizeof vals[0]); i++)
    if (!(vals[i] >= 0.0f) || !isfinite(vals[i]))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': material.%s %g must be a finite number >= 0", name, fields[i],
                       (double)vals[i]);
  if (!(m->particle_mass > 0.0f) && !(m->density > 0.0f))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': material.density and material.particle_mass are both 0: give one",
                     name);
  return WF_OK;
}

static wf_status check_params(const char *fn, const char *name, const wf_cloth_params *p) {
  if (!(p->frame_dt > 0.0f) || !isfinite(p->frame_dt))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': frame_dt %g must be a finite number > 0",
                     name, (double)p->frame_dt);
  if (!finite3(p->gravity))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': gravity must be finite", name);
  if (!finite3(p->wind))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': wind must be finite", name);
  if (!(p->air_density >= 0.0f) || !isfinite(p->air_density))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': air_density %g must be a finite number >= 0",
                     name, (double)p->air_density);
  if (!(p->damping >= 0.0f) || !isfinite(p->damping))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': damping %g must be a finite number >= 0",
                     name, (double)p->damping);
  return WF_OK;
}

static wf_cloth_params params_of(const wf_cloth_desc *d) {
  wf_cloth_params p = {
      .frame_dt = d->frame_dt, .air_density = d->air_density, .damping = d->damping};
  memcpy(p.gravity, d->gravity, sizeof p.gravity);
  memcpy(p.wind, d->wind, sizeof p.wind);
  return p;
}

/* The device parameter block from the settings and material (host mirror; uploaded by caller). */
static void params_build(wf_cloth *c) {
  const wf_cloth_desc *d = &c->desc;
  const wf_cloth_material *m = &d->material;
  wfc_params *p = &c->params;
  float dt = d->frame_dt / (float)d->substeps;
  p->gravity = (wfp_f4){d->gravity[0], d->gravity[1], d->gravity[2], 0.0f};
  p->wind = (wfp_f4){d->wind[0], d->wind[1], d->wind[2], 0.0f};
  p->dt = dt;
  p->inv_dt = 1.0f / dt;
  p->damp = 1.0f / (1.0f + d->damping * dt);
  p->spring_c = m->damping;
  p->spring_k[WFC_STRETCH] = m->stretch_stiffness;
  p->spring_k[WFC_SHEAR] = m->shear_stiffness;
  p->spring_k[WFC_BEND] = m->bend_stiffness;
  const float comp[3] = {m->stretch_compliance, m->shear_compliance, m->bend_compliance};
  for (int k = 0; k < 3; k++) {
    p->alpha[k] = comp[k] / (dt * dt);
    p->gamma[k] = comp[k] * m->damping / dt;
  }
  p->drag_coef = 0.5f * d->air_density * m->drag;
  p->lift_coef = 0.5f * d->air_density * m->lift;
  p->aero = (m->drag > 0.0f || m->lift > 0.0f) && c->nt > 0;
  p->thickness = m->thickness;
  p->friction = m->friction;
}

static wf_status upload_params(wf_cloth *c, const char *fn) {
  params_build(c);
  TRY(wf_upload(c->buf[B_PARAMS], 0, &c->params, sizeof c->params, c->stream),
      "uploading the parameter block");
  return WF_OK;
}

/* ---- create / destroy -------------------------------------------------------------------------
 */

void wf_cloth_destroy(wf_cloth *c) {
  if (!c) return;
  if (c->stream) wf_stream_synchronize(c->stream);
  if (c->graph) wf_graph_destroy(c->graph);
  for (int b = 0; b < B_COUNT; b++)
    if (c->buf[b]) wf_buffer_destroy(c->buf[b], c->stream);
  if (c->own_stream && c->stream) wf_stream_destroy(c->stream);
  wfc_topology_free(&c->topo);
  free(c->colour_start);
  free(c->pinned);
  free(c);
}

static wf_status check_desc(const char *fn, const wf_cloth_desc *d, const char *name) {
  if (d->integrator != WF_CLOTH_SPRINGS && d->integrator != WF_CLOTH_XPBD)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': integrator %d is neither WF_CLOTH_SPRINGS nor WF_CLOTH_XPBD",
                     name, d->integrator);
  if (d->substeps <= 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': substeps %d must be > 0", name, d->substeps);
  if (d->iterations <= 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': iterations %d must be > 0", name,
                     d->iterations);
  wf_cloth_params p = params_of(d);
  wf_status st = check_params(fn, name, &p);
  return st != WF_OK ? st : check_material(fn, name, &d->material);
}

static wf_status make_buffer(wf_cloth *c, const char *fn, int b, size_t bytes, const void *data) {
  size_t alloc = bytes < 16 ? 16 : bytes;
  TRY(wf_buffer_create(c->dev, alloc, WF_BUFFER_ZERO, c->stream, &c->buf[b]),
      "allocating device buffers");
  if (data && bytes) TRY(wf_upload(c->buf[b], 0, data, bytes, c->stream), "uploading the cloth");
  return WF_OK;
}

/* Everything after the topology: topology lists, masses, buffers, uploads. Takes the topology. */
static wf_status create_common(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                               const char *name, wfc_topology *topo, wf_cloth **out) {
  wf_status st = wfc_topology_finish(fn, name, topo);
  if (st != WF_OK) {
    wfc_topology_free(topo);
    return st;
  }
  wf_cloth *c = calloc(1, sizeof *c);
  if (!c) {
    wfc_topology_free(topo);
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth '%s': out of host memory", name);
  }
  snprintf(c->name, sizeof c->name, "%s", name);
  c->dev = dev;
  c->desc = *desc;
  c->desc.name = c->name;
  c->topo = *topo;
  memset(topo, 0, sizeof *topo);
  c->nv = c->topo.nv, c->nt = c->topo.nt;
  c->pinned = calloc(c->nv, 1);
  float *inv_mass = malloc((size_t)c->nv * sizeof *inv_mass);
  wfp_f4 *x = malloc((size_t)c->nv * sizeof *x);
  wfc_springs sp = {0};
  wfc_constraints cons = {0};
  if (!c->pinned || !inv_mass || !x) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth '%s': out of host memory", name);
    goto done;
  }
  st = wfc_inverse_masses(fn, name, &c->topo, &desc->material, inv_mass);
  if (st != WF_OK) goto done;
  if (desc->integrator == WF_CLOTH_SPRINGS)
    st = wfc_springs_build(fn, name, &c->topo, &sp);
  else
    st = wfc_constraints_build(fn, name, &c->topo, &cons);
  if (st != WF_OK) goto done;
  c->springs = sp.count;
  c->constraints = cons.count;
  c->colours = cons.colours;
  c->colour_start = cons.colour_start;
  cons.colour_start = NULL;

  if (desc->stream) {
    c->stream = desc->stream;
  } else {
    st = wf_stream_create(dev, 0, &c->stream);
    if (st != WF_OK) {
      st = fail_gpu(st, fn, c, "creating the solver's stream");
      goto done;
    }
    c->own_stream = true;
  }
  for (uint32_t i = 0; i < c->nv; i++)
    x[i] = (wfp_f4){c->topo.x[i][0], c->topo.x[i][1], c->topo.x[i][2], inv_mass[i]};
  size_t nv = c->nv, nt = c->nt;
  wfc_clock clock0 = {0.0, 0};
  wfc_flags flags0 = {0u, UINT32_MAX};
  bool springs = desc->integrator == WF_CLOTH_SPRINGS;
  bool lambda = !springs && desc->iterations > 1;
  struct {
    size_t bytes;
    const void *data;
  } spec[B_COUNT] = {
      [B_POS0] = {nv * sizeof(wfp_f4), x},
      [B_VEL0] = {nv * sizeof(wfp_f4), NULL},
      [B_CLOCK0] = {sizeof(wfc_clock), &clock0},
      [B_POS1] = {nv * sizeof(wfp_f4), x},
      [B_VEL1] = {springs ? nv * sizeof(wfp_f4) : 0, NULL},
      [B_CLOCK1] = {sizeof(wfc_clock), &clock0},
      [B_FLAGS] = {sizeof(wfc_flags), &flags0},
      [B_PARAMS] = {sizeof(wfc_params), NULL},
      [B_COLLIDERS] = {sizeof c->colliders, NULL},
      [B_ADJ_START] = {springs ? (nv + 1) * 4 : 0, sp.adj_start},
      [B_ADJ] = {(size_t)sp.count * 2 * sizeof(wfc_link), sp.adj},
      [B_TRI_START] = {(nv + 1) * 4, c->topo.vt_start},
      [B_TRI_LIST] = {nt * 3 * 4, c->topo.vt_list},
      [B_TRIS] = {nt * 3 * 4, c->topo.tris},
      [B_CONS] = {(size_t)cons.count * sizeof(wfc_constraint), cons.cons},
      [B_LAMBDA] = {lambda ? (size_t)cons.count * 4 : 0, NULL},
  };
  for (int b = 0; b < B_COUNT && st == WF_OK; b++) {
    if (!spec[b].bytes &&
        (b == B_VEL1 || b == B_ADJ_START || b == B_ADJ || b == B_CONS || b == B_LAMBDA))
      continue; /* not used by this integrator */
    st = make_buffer(c, fn, b, spec[b].bytes, spec[b].data);
  }
  if (st == WF_OK) st = upload_params(c, fn);
  /* the uploads read host arrays freed below: wf_upload copies before returning */
done:
  free(inv_mass), free(x);
  wfc_springs_free(&sp);
  wfc_constraints_free(&cons);
  if (st != WF_OK) {
    wf_cloth_destroy(c);
    return st;
  }
  *out = c;
  return WF_OK;
}

wf_status wf_cloth_create_grid(wf_device *dev, const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                               wf_cloth **out) {
  static const char fn[] = "wf_cloth_create_grid";
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  if (!dev || !desc || !grid) return wf__error(WF_ERR_INVALID, fn, "device, desc or grid is NULL");
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = check_desc(fn, desc, name);
  if (st != WF_OK) return st;
  wfc_topology t;
  st = wfc_grid_build(fn, name, grid, &t);
  return st != WF_OK ? st : create_common(fn, dev, desc, name, &t, out);
}

wf_status wf_cloth_create_mesh(wf_device *dev, const wf_cloth_desc *desc,
                               const wf_cloth_mesh_desc *mesh, wf_cloth **out) {
  static const char fn[] = "wf_cloth_create_mesh";
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  if (!dev || !desc || !mesh) return wf__error(WF_ERR_INVALID, fn, "device, desc or mesh is NULL");
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = check_desc(fn, desc, name);
  if (st != WF_OK) return st;
  wfc_topology t;
  st = wfc_mesh_build(fn, name, mesh, &t);
  return st != WF_OK ? st : create_common(fn, dev, desc, name, &t, out);
}

/* ---- pins and attachments ---------------------------------------------------------------------
 */

/* Pins vertex v with velocity vel (the attachment's; zero for a plain pin). */
static wf_status pin_one(wf_cloth *c, const char *fn, uint32_t v, const float vel[3]) {
  float w = 0.0f;
  wfp_f4 v4 = {vel[0], vel[1], vel[2], 0.0f};
  TRY(wf_upload(c->buf[B_POS0], (size_t)v * sizeof(wfp_f4) + 12, &w, sizeof w, c->stream),
      "pinning a vertex");
  TRY(wf_upload(c->buf[B_VEL0], (size_t)v * sizeof(wfp_f4), &v4, sizeof v4, c->stream),
      "pinning a vertex");
  if (!c->pinned[v]) c->pinned[v] = 1, c->n_pinned++;
  return WF_OK;
}

static const float zero3[3] = {0.0f, 0.0f, 0.0f};

wf_status wf_cloth_pin(wf_cloth *c, uint32_t vertex) {
  static const char fn[] = "wf_cloth_pin";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (vertex >= c->nv)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': pin vertex %u is out of range (%u vertices)",
                     c->name, vertex, c->nv);
  return pin_one(c, fn, vertex, zero3);
}

wf_status wf_cloth_pin_named(wf_cloth *c, const char *where, uint32_t *count) {
  static const char fn[] = "wf_cloth_pin_named";
  if (!c || !where) return wf__error(WF_ERR_INVALID, fn, "cloth or name is NULL");
  if (!c->topo.grid[0])
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': pin '%s': named pins need a grid cloth (this one is a mesh): pin "
                     "by index or region",
                     c->name, where);
  uint32_t nu = c->topo.grid[0], nv = c->topo.grid[1];
  /* each name is a range of columns [i0, i1] x rows [j0, j1] */
  static const struct {
    const char *name;
    int i0, i1, j0, j1; /* 0 = first, 1 = last, -1 = all (with the other end) */
  } names[] = {{"top-left", 0, 0, 0, 0},     {"top-right", 1, 1, 0, 0}, {"bottom-left", 0, 0, 1, 1},
               {"bottom-right", 1, 1, 1, 1}, {"top", 0, 1, 0, 0},       {"bottom", 0, 1, 1, 1},
               {"left", 0, 0, 0, 1},         {"right", 1, 1, 0, 1}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    if (strcmp(where, names[k].name) != 0) continue;
    uint32_t i0 = names[k].i0 ? nu - 1 : 0, i1 = names[k].i1 ? nu - 1 : 0;
    uint32_t j0 = names[k].j0 ? nv - 1 : 0, j1 = names[k].j1 ? nv - 1 : 0;
    uint32_t n = 0;
    for (uint32_t j = j0; j <= j1; j++)
      for (uint32_t i = i0; i <= i1; i++) {
        wf_status st = pin_one(c, fn, j * nu + i, zero3);
        if (st != WF_OK) return st;
        n++;
      }
    if (count) *count = n;
    return WF_OK;
  }
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s': unknown pin name '%s' (top-left, top-right, bottom-left, "
                   "bottom-right, top, bottom, left, right)",
                   c->name, where);
}

static wf_status pin_region(wf_cloth *c, const char *fn, const float lo[3], const float hi[3],
                            const float vel[3], uint32_t *count) {
  if (!lo || !hi || !finite3(lo) || !finite3(hi))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': region bounds are NULL or not finite",
                     c->name);
  uint32_t n = 0;
  for (uint32_t i = 0; i < c->nv; i++) {
    const float *x = c->topo.x[i];
    if (x[0] < lo[0] || x[1] < lo[1] || x[2] < lo[2] || x[0] > hi[0] || x[1] > hi[1] ||
        x[2] > hi[2])
      continue;
    wf_status st = pin_one(c, fn, i, vel);
    if (st != WF_OK) return st;
    n++;
  }
  if (count) *count = n;
  if (!n)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': the region [%g %g %g] - [%g %g %g] holds no vertex", c->name,
                     (double)lo[0], (double)lo[1], (double)lo[2], (double)hi[0], (double)hi[1],
                     (double)hi[2]);
  return WF_OK;
}

wf_status wf_cloth_pin_region(wf_cloth *c, const float lo[3], const float hi[3], uint32_t *count) {
  static const char fn[] = "wf_cloth_pin_region";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return pin_region(c, fn, lo, hi, zero3, count);
}

static wf_status collider_velocity(const wf_cloth *c, const char *fn, uint32_t collider,
                                   float vel[3]) {
  if (collider >= c->params.n_colliders)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': collider %u does not exist (%u colliders added)", c->name,
                     collider, c->params.n_colliders);
  vel[0] = c->colliders[collider].vel.x;
  vel[1] = c->colliders[collider].vel.y;
  vel[2] = c->colliders[collider].vel.z;
  return WF_OK;
}

wf_status wf_cloth_attach(wf_cloth *c, uint32_t vertex, uint32_t collider) {
  static const char fn[] = "wf_cloth_attach";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (vertex >= c->nv)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': attach vertex %u is out of range (%u vertices)", c->name, vertex,
                     c->nv);
  float vel[3];
  wf_status st = collider_velocity(c, fn, collider, vel);
  return st != WF_OK ? st : pin_one(c, fn, vertex, vel);
}

wf_status wf_cloth_attach_region(wf_cloth *c, const float lo[3], const float hi[3],
                                 uint32_t collider, uint32_t *count) {
  static const char fn[] = "wf_cloth_attach_region";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  float vel[3];
  wf_status st = collider_velocity(c, fn, collider, vel);
  return st != WF_OK ? st : pin_region(c, fn, lo, hi, vel, count);
}

/* ---- colliders, material, parameters ----------------------------------------------------------
 */

wf_status wf_cloth_add_collider(wf_cloth *c, const wf_collider_desc *d, uint32_t *index) {
  static const char fn[] = "wf_cloth_add_collider";
  if (!c || !d) return wf__error(WF_ERR_INVALID, fn, "cloth or collider is NULL");
  uint32_t k = c->params.n_colliders;
  if (k >= WFC_MAX_COLLIDERS)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider '%s': at most %d colliders", c->name,
                     d->name ? d->name : "collider", WFC_MAX_COLLIDERS);
  char owner[96];
  snprintf(owner, sizeof owner, "cloth '%s'", c->name);
  wfp_collider w;
  wf_status st0 = wfp_collider_from_desc(fn, owner, d, &w);
  if (st0 != WF_OK) return st0;
  c->colliders[k] = w;
  TRY(wf_upload(c->buf[B_COLLIDERS], k * sizeof w, &w, sizeof w, c->stream),
      "uploading a collider");
  c->params.n_colliders = k + 1;
  wf_status st = upload_params(c, fn);
  if (st == WF_OK && index) *index = k;
  return st;
}

wf_status wf_cloth_set_material(wf_cloth *c, const wf_cloth_material *m) {
  static const char fn[] = "wf_cloth_set_material";
  if (!c || !m) return wf__error(WF_ERR_INVALID, fn, "cloth or material is NULL");
  wf_status st = check_material(fn, c->name, m);
  if (st != WF_OK) return st;
  float density = c->desc.material.density, mass = c->desc.material.particle_mass;
  c->desc.material = *m;
  c->desc.material.density = density, c->desc.material.particle_mass = mass;
  return upload_params(c, fn);
}

wf_cloth_params wf_cloth_params_get(const wf_cloth *c) {
  return c ? params_of(&c->desc) : (wf_cloth_params){0};
}

wf_status wf_cloth_params_set(wf_cloth *c, const wf_cloth_params *p) {
  static const char fn[] = "wf_cloth_params_set";
  if (!c || !p) return wf__error(WF_ERR_INVALID, fn, "cloth or params is NULL");
  wf_status st = check_params(fn, c->name, p);
  if (st != WF_OK) return st;
  c->desc.frame_dt = p->frame_dt;
  memcpy(c->desc.gravity, p->gravity, sizeof c->desc.gravity);
  memcpy(c->desc.wind, p->wind, sizeof c->desc.wind);
  c->desc.air_density = p->air_density;
  c->desc.damping = p->damping;
  return upload_params(c, fn);
}

/* ---- the substep ------------------------------------------------------------------------------
 */

static wf_status launch(wf_cloth *c, const char *fn, const wf_kernel *k, size_t n, const void *args,
                        size_t size) {
  wf_status st = wf_launch(k, n, args, size, c->stream);
  if (st != WF_OK) return fail_gpu(st, fn, c, k->name);
  return WF_OK;
}

static wfc_mesh_view mesh_view(const wf_cloth *c) {
  return (wfc_mesh_view){ptr(c, B_TRI_START), ptr(c, B_TRI_LIST), ptr(c, B_TRIS)};
}

/* SELF_COLLISION stage: the place for vertex-vertex repulsion through a hash grid (to be added:
 * a grid build over the positions of the stage's input, then a per-vertex gather that adds
 * repulsion to the forces / corrections). Enqueues nothing yet. */
static wf_status stage_self_collision(wf_cloth *c, const char *fn, int half) {
  (void)c, (void)fn, (void)half;
  return WF_OK;
}

/* PARTICLE_COUPLING stage: the place for two-way coupling with a particle solver (to be added).
 * Enqueues nothing yet. */
static wf_status stage_particle_coupling(wf_cloth *c, const char *fn, int half) {
  (void)c, (void)fn, (void)half;
  return WF_OK;
}

/* Mass-spring substep: state half `in` -> the other half. */
static wf_status substep_springs(wf_cloth *c, const char *fn, int in) {
  wf_status st;
  if ((st = stage_self_collision(c, fn, in)) != WF_OK) return st;
  if ((st = stage_particle_coupling(c, fn, in)) != WF_OK) return st;
  int pi = in ? B_POS1 : B_POS0, vi = in ? B_VEL1 : B_VEL0, ci = in ? B_CLOCK1 : B_CLOCK0;
  int po = in ? B_POS0 : B_POS1, vo = in ? B_VEL0 : B_VEL1, co = in ? B_CLOCK0 : B_CLOCK1;
  wfc_spring_args a = {
      ptr(c, B_PARAMS), ptr(c, B_COLLIDERS), ptr(c, ci), ptr(c, co), ptr(c, B_FLAGS),
      ptr(c, pi),       ptr(c, vi),          ptr(c, po), ptr(c, vo), ptr(c, B_ADJ_START),
      ptr(c, B_ADJ),    mesh_view(c),        c->nv};
  return launch(c, fn, &wfc_spring_step, c->nv, &a, sizeof a);
}

/* XPBD substep: predict into B_POS1, solve by colour, finalize back into half 0. */
static wf_status substep_xpbd(wf_cloth *c, const char *fn) {
  wf_status st;
  wfc_predict_args pa = {ptr(c, B_PARAMS), ptr(c, B_CLOCK0), ptr(c, B_CLOCK1), ptr(c, B_POS0),
                         ptr(c, B_VEL0),   ptr(c, B_POS1),   mesh_view(c),     c->nv};
  if ((st = launch(c, fn, &wfc_xpbd_predict, c->nv, &pa, sizeof pa)) != WF_OK) return st;
  if ((st = stage_self_collision(c, fn, 1)) != WF_OK) return st;
  if ((st = stage_particle_coupling(c, fn, 1)) != WF_OK) return st;
  float *lambda = c->buf[B_LAMBDA] ? ptr(c, B_LAMBDA) : NULL;
  if (lambda)
    TRY(wf_memset(c->buf[B_LAMBDA], 0, 0, (size_t)c->constraints * 4, c->stream),
        "clearing the multipliers");
  const wfc_constraint *cons = ptr(c, B_CONS);
  for (int it = 0; it < c->desc.iterations; it++)
    for (uint32_t q = 0; q < c->colours; q++) {
      uint32_t s0 = c->colour_start[q], n = c->colour_start[q + 1] - s0;
      wfc_solve_args sa = {ptr(c, B_PARAMS), cons + s0, lambda ? lambda + s0 : NULL, ptr(c, B_POS0),
                           ptr(c, B_POS1)};
      if ((st = launch(c, fn, &wfc_xpbd_solve, n, &sa, sizeof sa)) != WF_OK) return st;
    }
  wfc_finalize_args fa = {ptr(c, B_PARAMS), ptr(c, B_COLLIDERS), ptr(c, B_CLOCK1),
                          ptr(c, B_CLOCK0), ptr(c, B_FLAGS),     ptr(c, B_POS0),
                          ptr(c, B_VEL0),   ptr(c, B_POS1),      c->nv};
  return launch(c, fn, &wfc_xpbd_finalize, c->nv, &fa, sizeof fa);
}

/* Kernels are opaque to the GPU layer: mark every buffer as used on the solver's stream, so that
 * downloads and frees on other streams wait for the substeps (and a graph keeps them alive). */
static wf_status touch_all(wf_cloth *c, const char *fn) {
  for (int b = 0; b < B_COUNT; b++)
    if (c->buf[b]) TRY(wf_buffer_touch(c->buf[b], c->stream), "ordering buffers");
  return WF_OK;
}

static wf_status enqueue_substeps(wf_cloth *c, const char *fn, int n) {
  wf_status st = WF_OK;
  if (c->desc.integrator == WF_CLOTH_XPBD) {
    for (int s = 0; s < n && st == WF_OK; s++)
      st = substep_xpbd(c, fn);
  } else {
    for (int s = 0; s < n && st == WF_OK; s++)
      st = substep_springs(c, fn, s & 1);
    if (st == WF_OK && (n & 1)) { /* back to half 0 */
      size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
      TRY(wf_copy(c->buf[B_POS0], 0, c->buf[B_POS1], 0, bytes, c->stream), "copying the state");
      TRY(wf_copy(c->buf[B_VEL0], 0, c->buf[B_VEL1], 0, bytes, c->stream), "copying the state");
      TRY(wf_copy(c->buf[B_CLOCK0], 0, c->buf[B_CLOCK1], 0, sizeof(wfc_clock), c->stream),
          "copying the state");
    }
  }
  return st != WF_OK ? st : touch_all(c, fn);
}

static wf_status capture_frame(wf_cloth *c, const char *fn) {
  TRY(wf_capture_begin(c->stream), "beginning the frame capture");
  wf_status st = enqueue_substeps(c, fn, c->desc.substeps);
  wf_graph *g = NULL;
  wf_status st2 = wf_capture_end(c->stream, &g);
  if (st != WF_OK) {
    if (g) wf_graph_destroy(g);
    return st;
  }
  if (st2 != WF_OK) return fail_gpu(st2, fn, c, "ending the frame capture");
  c->graph = g;
  return WF_OK;
}

wf_status wf_cloth_step_frames(wf_cloth *c, int frames) {
  static const char fn[] = "wf_cloth_step_frames";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (frames < 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': frames %d must be >= 0", c->name, frames);
  if (frames == 0) return WF_OK;
  if (c->desc.no_graph) return enqueue_substeps(c, fn, frames * c->desc.substeps);
  if (!c->graph) {
    wf_status st = capture_frame(c, fn);
    if (st != WF_OK) return st;
  }
  for (int f = 0; f < frames; f++)
    TRY(wf_graph_launch(c->graph, c->stream), "launching a frame");
  return touch_all(c, fn);
}

wf_status wf_cloth_step_substeps(wf_cloth *c, int n) {
  static const char fn[] = "wf_cloth_step_substeps";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (n < 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': substeps %d must be >= 0", c->name, n);
  return n ? enqueue_substeps(c, fn, n) : WF_OK;
}

/* ---- reading back -----------------------------------------------------------------------------
 */

static wf_status flags_status(wf_cloth *c, const char *fn) {
  wfc_flags f;
  wfc_clock k;
  TRY(wf_download(&f, c->buf[B_FLAGS], 0, sizeof f), "reading the solver's flags");
  TRY(wf_download(&k, c->buf[B_CLOCK0], 0, sizeof k), "reading the solver's clock");
  if (!f.flags) return WF_OK;
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s': vertex %u became NaN/inf by substep %llu: the time step is too "
                   "large for the stiffness (more substeps, or softer springs / XPBD)",
                   c->name, f.first_bad, (unsigned long long)k.substeps);
}

wf_status wf_cloth_check(wf_cloth *c) {
  static const char fn[] = "wf_cloth_check";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  return flags_status(c, fn);
}

wf_status wf_cloth_download(wf_cloth *c, float (*pos)[4], float (*vel)[4]) {
  static const char fn[] = "wf_cloth_download";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
  if (pos) TRY(wf_download(pos, c->buf[B_POS0], 0, bytes), "downloading positions");
  if (vel) TRY(wf_download(vel, c->buf[B_VEL0], 0, bytes), "downloading velocities");
  return flags_status(c, fn);
}

/* Checkpoint restore: half 0 of the state, both clocks (a substep copies clock_in forward) and
 * the flags; everything else a frame reads was set up at creation or is rebuilt per substep. */
wf_status wf_cloth_set_state(wf_cloth *c, const float (*pos)[4], const float (*vel)[4], double time,
                             uint64_t substeps) {
  static const char fn[] = "wf_cloth_set_state";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (!pos || !vel) return wf__error(WF_ERR_INVALID, fn, "cloth '%s': pos or vel is NULL", c->name);
  if (!isfinite(time))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': time is not finite", c->name);
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
  wfc_clock k = {time, substeps};
  wfc_flags f = {0, UINT32_MAX};
  TRY(wf_upload(c->buf[B_POS0], 0, pos, bytes, c->stream), "uploading positions");
  TRY(wf_upload(c->buf[B_VEL0], 0, vel, bytes, c->stream), "uploading velocities");
  TRY(wf_upload(c->buf[B_CLOCK0], 0, &k, sizeof k, c->stream), "uploading the clock");
  TRY(wf_upload(c->buf[B_CLOCK1], 0, &k, sizeof k, c->stream), "uploading the clock");
  TRY(wf_upload(c->buf[B_FLAGS], 0, &f, sizeof f, c->stream), "clearing the flags");
  TRY(wf_stream_synchronize(c->stream), "restoring the state");
  return WF_OK;
}

wf_status wf_cloth_copy_positions(wf_cloth *c, wf_buffer *dst, size_t off) {
  static const char fn[] = "wf_cloth_copy_positions";
  if (!c || !dst) return wf__error(WF_ERR_INVALID, fn, "cloth or buffer is NULL");
  size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
  if (off > wf_buffer_size(dst) || wf_buffer_size(dst) - off < bytes)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': destination holds %zu bytes after offset %zu, positions need %zu",
                     c->name, off > wf_buffer_size(dst) ? 0 : wf_buffer_size(dst) - off, off,
                     bytes);
  TRY(wf_copy(dst, off, c->buf[B_POS0], 0, bytes, c->stream), "copying positions");
  return WF_OK;
}

wf_status wf_cloth_time(wf_cloth *c, double *seconds, uint64_t *substeps) {
  static const char fn[] = "wf_cloth_time";
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  wfc_clock k;
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  TRY(wf_download(&k, c->buf[B_CLOCK0], 0, sizeof k), "reading the solver's clock");
  if (seconds) *seconds = k.time;
  if (substeps) *substeps = k.substeps;
  return WF_OK;
}

wf_status wf_cloth_info_get(const wf_cloth *c, wf_cloth_info *out) {
  if (!c || !out) return wf__error(WF_ERR_INVALID, "wf_cloth_info_get", "cloth or out is NULL");
  memset(out, 0, sizeof *out);
  out->vertices = c->nv;
  out->triangles = c->nt;
  out->springs = c->springs;
  out->constraints = c->constraints;
  out->colours = c->colours;
  out->pinned = c->n_pinned;
  out->grid[0] = c->topo.grid[0], out->grid[1] = c->topo.grid[1];
  for (int b = 0; b < B_COUNT; b++)
    if (c->buf[b]) out->device_bytes += wf_buffer_size(c->buf[b]);
  out->graph_nodes = c->graph ? wf_graph_node_count(c->graph) : 0;
  return WF_OK;
}

wf_stream *wf_cloth_stream(const wf_cloth *c) { return c ? c->stream : NULL; }

const uint32_t *wf_cloth_triangles(const wf_cloth *c, uint32_t *count) {
  if (count) *count = c ? c->nt : 0;
  return c && c->nt ? c->topo.tris : NULL;
}
