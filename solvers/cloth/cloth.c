/* One cloth partition (wfc_part, cloth_internal.h): the whole cloth on one device, or one
 * device's share of a cloth over several (cloth_parts.h). Creation (grid and mesh), validation,
 * pins and attachments, colliders, the parameter block, the substep pipeline and its captured
 * frame, and readback.
 *
 * The substep, all on the solver's stream, nothing waits for the host:
 *
 *   mass-spring:  [GRID  SELF_COLLISION  PARTICLE_COUPLING  APPLY]  SPRINGS             [CONTACT]
 *                                                                     one kernel per vertex:
 *                                                                     gather springs and
 *                                                                     aerodynamics, semi-implicit
 *                                                                     Euler, colliders; state
 *                                                                     half s%2 -> (s+1)%2
 *
 *   XPBD:         PREDICT    CONSTRAINTS           [GRID  SELF_COLLISION  PARTICLE_COUPLING  APPLY]
 *                 pred =     iterations x colours  [CONTACT]
 *                 dt v'      (one launch each; pred is the step from x, cloth_math.h)
 *                 FINALIZE: x += pred, colliders, v = v' + (pred - dt v') / dt
 *
 * CONTACT runs only with desc.contact (cloth_contact.h: vertex–triangle and edge–edge contact
 * from the substep's start to the end guess, with friction and the motion bound that keeps
 * triangles from passing through each other). The other bracketed stages run only with
 * self-collision or coupling. GRID: the points q where the
 * vertices will be at the end of the substep as far as known (XPBD: the prediction after the
 * constraints; springs: x + dt (v + dt g)) are sorted into a uniform grid by cell key with the
 * particle solver's kernels (coupling.h). SELF_COLLISION: each vertex gathers its repulsions
 * (pairs closer than thickness, not neighbours at rest) into delta. PARTICLE_COUPLING (inside
 * the particle solver's substep, between its grid build and its contacts): each vertex adds its
 * contacts with particles to delta, each particle adds its contacts with vertices to its velocity
 * (the same pair function on the same bits on both sides: equal and opposite). APPLY: XPBD
 * pred += delta; springs v += delta / dt. A coupled cloth's substeps are run by the particle
 * solver's substep hooks (begin at WFP_HOOK_GRID, end at WFP_HOOK_SUBSTEP).
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
 *  - A per-frame readback (wf_cloth_set_frame_readback) is baked into the captured frame: the
 *    one-launch frame writes the positions into the pinned buffer itself, any other frame ends
 *    with a copy of half 0 into it. Changing it drops the graph.
 *  - Each kernel writes disjoint data per element (vertex, or constraint of one colour) and reads
 *    the clock of its input half; one element writes the clock of its output. Results are bitwise
 *    reproducible and equal on both backends.
 */
#include "weft/cloth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_contact_topo.h"
#include "cloth_energy.h"
#include "cloth_fast.h"
#include "cloth_internal.h"
#include "cloth_kernels.h"
#include "cloth_mesh.h"
#include "cloth_xpbd_frame.h"
#include "coupling.h"
#include "internal/error.h"
#include "solvers/particle/collider.h"
#include "weft/particles.h" /* wf_collider_desc, WF_COLLIDER_* */

enum {
  B_POS0,
  B_VEL0,
  B_CLOCK0,
  B_POS1, /* springs: positions of half 1; XPBD: predicted steps (pred - x) */
  B_VEL1, /* springs: velocities of half 1; XPBD: predicted velocities */
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
  B_Q,     /* grid points */
  B_DELTA, /* self-collision + coupling corrections */
  B_REST,  /* rest positions */
  B_KEYS,  /* grid: keys, vertex ids, sorted keys, sorted ids, cell tables, CUDA sort scratch */
  B_VALS,
  B_KEYS_OUT,
  B_VALS_OUT,
  B_CSTART,
  B_CEND,
  B_TEMP,
  B_GRID_REST, /* springs on a grid: rest lengths per vertex (cloth_fast.h) */
  B_SYNC,      /* resident one-launch frames (XPBD: GRID): a barrier counter per block */
  B_XBAND,     /* XPBD, the one-launch GRID frame: its bands (cloth_xpbd_frame.h) */
  B_FORCE,     /* the frame's impulses on the colliders (collider_force.h), zeroed as it begins */
  B_CC_EDGES,  /* cloth contact (cloth_contact.h): edges, vertex -> edges, owned triangles and
                  edges, the corrected end positions */
  B_CC_VE_START,
  B_CC_VE,
  B_CC_OT_START,
  B_CC_OT,
  B_CC_OE_START,
  B_CC_OE,
  B_CC_OUT,
  B_CC_PIECE,
  B_CC_TRIS, /* a partition of a split cloth (cloth_parts.h): the whole cloth's triangles and
                vertex -> triangle lists, its start positions and end guesses (global order),
                the other partitions' owned ones as the transport brings them (in the
                concatenation of every partition's owned vertices) and that concatenation's
                global ids */
  B_CC_VT_START,
  B_CC_VT,
  B_CC_X0,
  B_CC_X1,
  B_CC_CAT0,
  B_CC_CAT1,
  B_CC_GID,
  B_CC_MAX,    /* the substep's largest displacement and longest edge, as float bits */
  B_CC_CSTART, /* the contact grid's cell tables (wfcc_grid_table cells) and sort scratch */
  B_CC_CEND,
  B_CC_TEMP,
  B_COUNT
};

struct wfc_part {
  /* the last frame's collider impulses as read (wfc_part_forces), and its substeps */
  unsigned long long force_host[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS];
  int force_substeps;
  bool forces_on; /* the kernels sum the impulses (wfc_part_measure_forces); off: no adds, no clear
                   */
  char name[64];
  wf_device *dev;
  wf_stream *stream;
  bool own_stream;
  wf_cloth_desc desc; /* desc.name points at name */
  wfc_topology topo;  /* rest positions, triangles, grid size */
  double spacing;     /* the whole cloth's mesh spacing (wfc_mesh_spacing): the material's scale */
  bool grid_lattice;  /* the whole cloth is a grid (its springs: axis, diagonal, bend) */
  uint32_t nv, nt, springs, constraints, colours;
  uint32_t n_update; /* vertices the per-vertex kernels update: nv, or a partition's owned ones */
  uint32_t *colour_start;
  uint8_t *pinned; /* per vertex */
  uint32_t n_pinned;
  wf_buffer *buf[B_COUNT];
  wf_graph *graph;
  uint64_t captures;   /* frames captured into c->graph so far (wf_cloth_info.captures) */
  uint32_t table;      /* cells of the vertex grid's box (0: no grid buffers yet) */
  int bits;            /* key bits of the vertex grid */
  wf_particles *ps;    /* coupled particle solver, or NULL */
  float ps_radius;     /* its largest particle radius when coupled (the grid's cell) */
  int sub_in_frame;    /* coupled springs: substeps recorded since the frame began */
  bool fast_off;       /* tuning.one_launch OFF or a partition: no one-launch frames */
  wfc_frame_plan plan; /* springs: how a one-launch frame spreads over the device */
  bool xpbd_fast;      /* XPBD: the one-launch frame applies (cloth_xpbd_frame.h) */
  wfc_xpbd_plan xplan; /* XPBD: how it spreads over the device */
  uint32_t *xband;     /* XPBD, GRID: the bands until they are uploaded */
  uint32_t barrier;    /* WFC_BARRIER_* of resident frames (tuning.grid_sync) */
  uint32_t reach;      /* largest |i - j| over the vertices j that vertex i reads */
  wf_buffer *rb;       /* per-frame readback destination (wf_cloth_set_frame_readback), or NULL */
  size_t rb_off;
  wf_cloth_layout rb_layout; /* WF_CLOTH_XYZW or packed WF_CLOTH_XYZ */
  wfc_params params;
  wfp_collider colliders[WFC_MAX_COLLIDERS];
  wf_buffer *energy[3]; /* wfc_part_energy's rows and XPBD lists, made at its first call */
  wfx_dev collider_dev[WFC_MAX_COLLIDERS]; /* keyframes and meshes on this partition's device */
  float longest_edge;                      /* contact: the longest rest edge, m */
  const void *group; /* the contact group stepping this cloth (cloth_group.c), or NULL */
  uint32_t epoch;    /* counts the changes that drop a captured frame (a contact group's too) */
  uint32_t cc_table; /* cells of the contact grid's box (wfcc_grid_table) */
  int cc_bits;       /* its key bits */
  /* contact in a partition of a split cloth: the whole cloth's vertices, where this partition's
   * owned ones start in the concatenation (B_CC_GID); while it is made, the whole topology and
   * that concatenation (wfc_local), else NULL */
  uint32_t cc_nv, cc_first;
  const wfc_topology *cc_whole;
  const uint32_t *cc_cat_gid;
};

static void *ptr(const wfc_part *c, int b) { return wf_buffer_ptr(c->buf[b]); }
static wfc_energy *ptr_energy(const wfc_part *c) { return wf_buffer_ptr(c->energy[0]); }

/* A GPU-layer call failed: keep its message (copied: wf__error rewrites the same text). */
static wf_status fail_gpu(wf_status st, const char *fn, const wfc_part *c, const char *what) {
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

wf_cloth_desc wf_cloth_desc_default(void) {
  return (wf_cloth_desc){.name = "cloth",
                         .integrator = WF_CLOTH_SPRINGS,
                         .substeps = 16,
                         .iterations = 1,
                         .frame_dt = 1.0f / 60.0f,
                         .gravity = {0.0f, -9.81f, 0.0f},
                         .air_density = 1.2f,
                         .contact_static_friction = 0.5f,
                         .contact_dynamic_friction = 0.4f,
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
                          "stretch_modulus",
                          "shear_modulus",
                          "bend_rigidity",
                          "damping_time",
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
                        m->stretch_modulus,
                        m->shear_modulus,
                        m->bend_rigidity,
                        m->damping_time,
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
static void params_build(wfc_part *c) {
  const wf_cloth_desc *d = &c->desc;
  const wf_cloth_material *m = &d->material;
  wfc_params *p = &c->params;
  float dt = d->frame_dt / (float)d->substeps;
  p->gravity = (wfp_f4){d->gravity[0], d->gravity[1], d->gravity[2], 0.0f};
  p->wind = (wfp_f4){d->wind[0], d->wind[1], d->wind[2], 0.0f};
  p->dt = dt;
  p->inv_dt = 1.0f / dt;
  p->damp = 1.0f / (1.0f + d->damping * dt);
  /* the material's moduli as coefficients of this mesh (cloth_material.c; the whole cloth's
   * spacing, so that every partition gets the same bits) */
  wfc_coeffs co;
  wfc_material_coeffs(m, c->spacing, c->grid_lattice, &co);
  p->spring_c = co.c;
  for (int k = 0; k < 3; k++) {
    p->spring_k[k] = co.k[k];
    p->alpha[k] = co.compliance[k] / (dt * dt);
    p->gamma[k] = co.beta[k] / dt;
  }
  p->drag_coef = 0.5f * d->air_density * m->drag;
  p->lift_coef = 0.5f * d->air_density * m->lift;
  p->aero = (m->drag > 0.0f || m->lift > 0.0f) && c->nt > 0;
  p->thickness = m->thickness;
  p->friction = m->friction;
  /* the vertex grid's cell covers the largest interaction: self-collision (thickness) and a
   * particle contact (radius + thickness), with 2% to spare for the rounding of x / cell */
  p->self_dist = d->self_collision ? m->thickness : 0.0f;
  float reach = p->self_dist;
  if (c->ps) reach = fmaxf(reach, c->ps_radius + m->thickness);
  /* coupling: where the particles' frame sits in the cloth's (the origins' difference, in
   * double, rounded once: exact for whole-metre origins) */
  double po[3] = {0.0, 0.0, 0.0};
  if (c->ps) wfc_particles_origin(c->ps, po);
  p->particle_shift =
      (wfp_f4){(float)(po[0] - c->topo.origin[0]), (float)(po[1] - c->topo.origin[1]),
               (float)(po[2] - c->topo.origin[2]), 0.0f};
  if (c->table) {
    int bits;
    wfc_grid_params_init(&p->grid, reach > 0.0f ? reach / 0.98f : 1.0f, c->table, &bits);
  }
  /* cloth contact (cloth_contact.h): candidates within at least 2.5 thicknesses (more where the
   * cloth moves fast: the device sets the reach every substep), each vertex moving at most 0.4
   * of its nearest pair's distance a substep */
  wfcc_params *cc = &p->contact;
  memset(cc, 0, sizeof *cc);
  if (d->contact) {
    cc->on = 1u;
    cc->thickness = m->thickness;
    cc->reach_min = 2.5f * m->thickness;
    cc->reach = cc->reach_min; /* the device sets it every substep */
    cc->bound = 0.4f;
    cc->rest_skip = 2.0f * m->thickness;
    cc->edge_cap = 1.25f * c->longest_edge; /* the device sets it every substep */
    cc->mu_s = d->contact_static_friction;
    cc->mu_k = d->contact_dynamic_friction;
    if (c->cc_table) {
      int bits;
      wfc_grid_params_init(&cc->grid, (cc->reach + 2.0f * cc->edge_cap) / 0.98f, c->cc_table,
                           &bits);
    }
  }
}

static wf_status upload_params(wfc_part *c, const char *fn) {
  params_build(c);
  /* mesh colliders look for triangles within twice the thickness and 1 cm (a vertex's travel in a
   * few substeps); each vertex keeps its candidate triangles (mesh_query.h, wfm_cache) while it
   * moves less than a quarter of that, at most 1 mm (bench/collider_bench.c measured the lists'
   * cost against the skin) */
  float reach = 2.0f * c->params.thickness + 0.01f;
  TRY(wfx_sync_reach(c->colliders, c->params.n_colliders, reach, fminf(0.001f, 0.25f * reach),
                     c->buf[B_COLLIDERS], c->stream),
      "uploading a collider");
  TRY(wf_upload(c->buf[B_PARAMS], 0, &c->params, sizeof c->params, c->stream),
      "uploading the parameter block");
  return WF_OK;
}

/* ---- create / destroy -------------------------------------------------------------------------
 */

static wf_status couple_hook(void *user, int event);

void wfc_part_destroy(wfc_part *c) {
  if (!c) return;
  if (c->ps) wfp_hook_remove(c->ps, couple_hook, c);
  if (c->stream) wf_stream_synchronize(c->stream);
  if (c->graph) wf_graph_destroy(c->graph);
  for (uint32_t k = 0; k < c->params.n_colliders; k++)
    wfx_dev_release(&c->collider_dev[k], c->stream);
  for (int b = 0; b < B_COUNT; b++)
    if (c->buf[b]) wf_buffer_destroy(c->buf[b], c->stream);
  for (int b = 0; b < 3; b++)
    if (c->energy[b]) wf_buffer_destroy(c->energy[b], c->stream);
  if (c->own_stream && c->stream) wf_stream_destroy(c->stream);
  wfc_topology_free(&c->topo);
  free(c->colour_start);
  free(c->pinned);
  free(c->xband);
  free(c);
}

/* The one-launch frames' tuning (weft/cloth.h: wf_cloth_tuning): each field in its range. */
static wf_status check_tuning(const char *fn, const char *name, const wf_cloth_tuning *t) {
  const struct {
    const char *field;
    int v;
  } sw[] = {{"one_launch", t->one_launch},
            {"resident", t->resident},
            {"grid_sync", t->grid_sync},
            {"smem", t->smem},
            {"tiles", t->tiles}};
  for (size_t k = 0; k < sizeof sw / sizeof sw[0]; k++)
    if (sw[k].v < WF_CLOTH_TUNE_AUTO || sw[k].v > WF_CLOTH_TUNE_OFF)
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': tuning.%s %d must be WF_CLOTH_TUNE_AUTO (0), _ON (1) or "
                       "_OFF (2)",
                       name, sw[k].field, sw[k].v);
  if (t->block > 1024)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': tuning.block %u must be 1 to 1024 threads (0: automatic)", name,
                     t->block);
  if (t->lanes != 0 && t->lanes != 1 && t->lanes != 2 && t->lanes != 4)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': tuning.lanes %u must be 1, 2 or 4 (0: automatic)", name,
                     t->lanes);
  if (t->tile_steps > 2)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': tuning.tile_steps %u must be 1 or 2 (0: automatic)", name,
                     t->tile_steps);
  if ((t->tile[0] || t->tile[1]) && t->tiles != WF_CLOTH_TUNE_ON)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': tuning.tile %u x %u is given but tuning.tiles is not "
                     "WF_CLOTH_TUNE_ON",
                     name, t->tile[0], t->tile[1]);
  if ((t->tile[0] || t->tile[1]) && (t->tile[0] < WFC_TILE_REACH || t->tile[1] < WFC_TILE_REACH))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': tuning.tile %u x %u: columns and rows must each be >= %u "
                     "(0 x 0: automatic)",
                     name, t->tile[0], t->tile[1], WFC_TILE_REACH);
  return WF_OK;
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
  if (d->origin_given &&
      !(isfinite(d->origin[0]) && isfinite(d->origin[1]) && isfinite(d->origin[2])))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': origin (%g, %g, %g) must be finite", name,
                     d->origin[0], d->origin[1], d->origin[2]);
  if (!(d->contact_static_friction >= 0.0f) || !isfinite(d->contact_static_friction) ||
      !(d->contact_dynamic_friction >= 0.0f) || !isfinite(d->contact_dynamic_friction))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': contact_static_friction %g and contact_dynamic_friction %g must "
                     "be finite numbers >= 0",
                     name, (double)d->contact_static_friction, (double)d->contact_dynamic_friction);
  wf_cloth_params p = params_of(d);
  wf_status st = check_params(fn, name, &p);
  if (st == WF_OK) st = check_material(fn, name, &d->material);
  return st != WF_OK ? st : check_tuning(fn, name, &d->tuning);
}

static wf_status make_buffer(wfc_part *c, const char *fn, int b, size_t bytes, const void *data) {
  size_t alloc = bytes < 16 ? 16 : bytes;
  TRY(wf_buffer_create(c->dev, alloc, WF_BUFFER_ZERO, c->stream, &c->buf[b]),
      "allocating device buffers");
  if (data && bytes) TRY(wf_upload(c->buf[b], 0, data, bytes, c->stream), "uploading the cloth");
  return WF_OK;
}

/* The vertex grid's buffers (self-collision, coupling), once. */
/* The topology cloth contact runs over: the cloth's own, or in a partition of a split cloth
 * (while it is made) the whole cloth's: its contact stage gathers over every vertex. */
static const wfc_topology *contact_topo(const wfc_part *c) {
  return c->cc_whole ? c->cc_whole : &c->topo;
}

static wf_status grid_alloc(wfc_part *c, const char *fn) {
  if (c->table) return WF_OK;
  /* a partition has no self-collision or coupling: the grid is contact's, over the whole cloth */
  const wfc_topology *t = contact_topo(c);
  size_t nv = t->nv;
  uint32_t table = t->nv > 64 ? t->nv : 64;
  wfc_grid_params g;
  int bits;
  wfc_grid_params_init(&g, 1.0f, table, &bits);
  wfp_f4 *rest = malloc(nv * sizeof *rest);
  if (!rest) return wfc_oom(fn, c->name);
  for (uint32_t i = 0; i < t->nv; i++)
    rest[i] = (wfp_f4){t->x[i][0], t->x[i][1], t->x[i][2], 0.0f};
  size_t bytes[] = {nv * sizeof(wfp_f4),
                    nv * sizeof(wfp_f4),
                    nv * sizeof(wfp_f4),
                    nv * 4,
                    nv * 4,
                    nv * 4,
                    nv * 4,
                    (size_t)table * 4,
                    (size_t)table * 4,
                    wfc_grid_sort_temp_bytes(c->dev, t->nv, bits)};
  wf_status st = WF_OK;
  for (int b = B_Q; b <= B_TEMP && st == WF_OK; b++)
    if (bytes[b - B_Q]) st = make_buffer(c, fn, b, bytes[b - B_Q], b == B_REST ? rest : NULL);
  free(rest);
  if (st != WF_OK) return st;
  c->table = table, c->bits = bits;
  return WF_OK;
}

/* Cloth contact's topology and output buffer (cloth_contact.h), once. */
static wf_status contact_alloc(wfc_part *c, const char *fn) {
  const wfc_topology *t = contact_topo(c);
  bool split = c->cc_whole != NULL;
  wfcc_host h;
  if (!wfcc_host_build(t, &h, &c->longest_edge)) return wfc_oom(fn, c->name);
  size_t nv = t->nv, ne = h.ne, nt = t->nt, v4 = nv * sizeof(wfp_f4);
  struct {
    int b;
    size_t bytes;
    const void *data;
  } spec[] = {{B_CC_EDGES, ne * 8, h.edges},
              {B_CC_VE_START, (nv + 1) * 4, h.ve_start},
              {B_CC_VE, ne * 8, h.ve_list},
              {B_CC_OT_START, (nv + 1) * 4, h.own_t_start},
              {B_CC_OT, nt * 4, h.own_t},
              {B_CC_OE_START, (nv + 1) * 4, h.own_e_start},
              {B_CC_OE, ne * 4, h.own_e},
              {B_CC_OUT, (size_t)c->nv * sizeof(wfp_f4), NULL},
              {B_CC_PIECE, nv * 4, h.piece},
              {B_CC_MAX, 8, NULL},
              /* a partition's: the whole cloth's arrays (cloth_parts.h, "Contact") */
              {split ? B_CC_TRIS : -1, nt * 12, t->tris},
              {split ? B_CC_VT_START : -1, (nv + 1) * 4, t->vt_start},
              {split ? B_CC_VT : -1, nt * 12, t->vt_list},
              {split ? B_CC_X0 : -1, v4, NULL},
              {split ? B_CC_X1 : -1, v4, NULL},
              {split ? B_CC_CAT0 : -1, v4, NULL},
              {split ? B_CC_CAT1 : -1, v4, NULL},
              {split ? B_CC_GID : -1, nv * 4, c->cc_cat_gid}};
  wf_status st = WF_OK;
  wfc_grid_params g;
  c->cc_nv = t->nv;
  c->cc_table = wfcc_grid_table(t->nv);
  wfc_grid_params_init(&g, 1.0f, c->cc_table, &c->cc_bits);
  size_t temp = wfc_grid_sort_temp_bytes(c->dev, t->nv, c->cc_bits);
  if ((st = make_buffer(c, fn, B_CC_CSTART, (size_t)c->cc_table * 4, NULL)) != WF_OK ||
      (st = make_buffer(c, fn, B_CC_CEND, (size_t)c->cc_table * 4, NULL)) != WF_OK ||
      (temp && (st = make_buffer(c, fn, B_CC_TEMP, temp, NULL)) != WF_OK)) {
    wfcc_host_free(&h);
    return st;
  }
  for (size_t k = 0; k < sizeof spec / sizeof spec[0] && st == WF_OK; k++)
    if (spec[k].b >= 0) st = make_buffer(c, fn, spec[k].b, spec[k].bytes, spec[k].data);
  wfcc_host_free(&h);
  return st;
}

/* The largest |i - j| over the vertices j that a vertex i reads: its springs' other ends and
 * (aerodynamics) the vertices of its triangles. */
static uint32_t read_reach(const wfc_part *c, const wfc_springs *sp) {
  uint32_t reach = 0;
  for (uint32_t a = 0; a < c->nv; a++)
    for (uint32_t k = sp->adj_start[a]; k < sp->adj_start[a + 1]; k++) {
      uint32_t b = sp->adj[k].other_kind & WFC_LINK_INDEX_MASK, d = b > a ? b - a : a - b;
      if (d > reach) reach = d;
    }
  for (uint32_t t = 0; t < c->nt; t++) {
    const uint32_t *v = c->topo.tris + 3 * (size_t)t;
    uint32_t lo = v[0], hi = v[0];
    for (int k = 1; k < 3; k++)
      lo = v[k] < lo ? v[k] : lo, hi = v[k] > hi ? v[k] : hi;
    if (hi - lo > reach) reach = hi - lo;
  }
  return reach;
}

/* What the desc's tuning (checked: check_tuning) asks of the plan (cloth_fast.h). */
static wfc_frame_want frame_want(const wfc_part *c, uint32_t reach, bool grid) {
  const wf_cloth_tuning *t = &c->desc.tuning;
  bool tiles_on = t->tiles == WF_CLOTH_TUNE_ON, sized = t->tile[0] && t->tile[1];
  return (wfc_frame_want){.block = t->block,
                          .lanes = t->lanes,
                          .smem = t->smem == WF_CLOTH_TUNE_ON    ? 1u
                                  : t->smem == WF_CLOTH_TUNE_OFF ? 0u
                                                                 : 2u,
                          .reach = reach,
                          .grid = grid,
                          .tile = tiles_on                        ? 2u
                                  : t->tiles == WF_CLOTH_TUNE_OFF ? 0u
                                                                  : 1u,
                          .tile_w = tiles_on ? (sized ? t->tile[0] : WFC_TILE_AUTO_W) : 0u,
                          .tile_h = tiles_on ? (sized ? t->tile[1] : WFC_TILE_AUTO_H) : 0u,
                          .nu = c->topo.grid[0],
                          .nr = c->topo.grid[1],
                          .steps = t->tile_steps};
}

/* The one-launch frame's plan (cloth_fast.h) from the desc's tuning, with its barrier and the
 * reach of a vertex's reads. grid: a grid cloth (lanes, staging, tiles). */
static void frame_plan(wfc_part *c, const wfc_springs *sp, bool grid) {
  const wf_cloth_tuning *t = &c->desc.tuning;
  c->reach = read_reach(c, sp);
  wfc_frame_want want = frame_want(c, c->reach, grid);
  wfc_spring_frame_plan(wf_device_is_cuda(c->dev) ? wf_device_ordinal(c->dev) : -1, c->nv, &want,
                        &c->plan);
  if (t->resident == WF_CLOTH_TUNE_OFF) c->plan.mode = WFC_FRAME_STRIDE;
  c->barrier = t->grid_sync == WF_CLOTH_TUNE_ON ? WFC_BARRIER_GRID : WFC_BARRIER_NEIGHBOURS;
}

/* The host lists a partition's buffers are filled from. A whole cloth's are built here and
 * freed after the upload; a split partition's (cloth_internal.h: wfc_local) are the caller's. */
typedef struct host_lists {
  const float *inv_mass; /* per vertex */
  wfc_springs sp;        /* springs: the CSR springs */
  wfc_constraints cons;  /* XPBD: the coloured constraints */
  float *grid_rest;      /* springs on a grid: the rest table (cloth_fast.h), or NULL */
  float *own_mass;       /* inv_mass when built here */
  bool own;              /* sp and cons built here */
} host_lists;

static void lists_free(host_lists *L) {
  free(L->own_mass), free(L->grid_rest);
  if (L->own) {
    wfc_springs_free(&L->sp);
    wfc_constraints_free(&L->cons);
  }
}

/* The object, holding the desc and the topology (taken: freed here on failure). */
static wf_status part_new(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                          const char *name, wfc_topology *topo, wfc_part **out) {
  wfc_part *c = calloc(1, sizeof *c);
  if (!c) {
    wfc_topology_free(topo);
    return wfc_oom(fn, name);
  }
  snprintf(c->name, sizeof c->name, "%s", name);
  c->dev = dev;
  c->desc = *desc;
  c->desc.name = c->name;
  c->topo = *topo;
  memset(topo, 0, sizeof *topo);
  c->nv = c->n_update = c->topo.nv, c->nt = c->topo.nt;
  c->pinned = calloc(c->nv, 1);
  *out = c;
  return c->pinned ? WF_OK : wfc_oom(fn, name);
}

/* Topology of a whole cloth: masses, springs (and a grid's rest table) or constraints. */
static wf_status lists_build(const char *fn, wfc_part *c, host_lists *L) {
  const wf_cloth_desc *d = &c->desc;
  bool springs = d->integrator == WF_CLOTH_SPRINGS;
  L->own = true;
  L->inv_mass = L->own_mass = malloc((size_t)c->nv * sizeof *L->own_mass);
  if (!L->own_mass) return wfc_oom(fn, c->name);
  wf_status st = wfc_inverse_masses(fn, c->name, &c->topo, &d->material, L->own_mass);
  if (st == WF_OK && springs) st = wfc_springs_build(fn, c->name, &c->topo, &L->sp);
  if (st == WF_OK && springs && c->topo.grid[0] &&
      wfc_grid_rest_build(&c->topo, &L->sp, &L->grid_rest) == WF_ERR_OUT_OF_MEMORY)
    st = wfc_oom(fn, c->name);
  if (st == WF_OK && !springs) st = wfc_constraints_build(fn, c->name, &c->topo, &L->cons);
  if (st != WF_OK) return st;
  c->spacing = wfc_mesh_spacing(&c->topo);
  c->grid_lattice = c->topo.grid[0] > 0;
  wf_cloth_stability stab;
  wfc_stability_compute(d, &c->topo, springs ? &L->sp : NULL, L->inv_mass, c->spacing,
                        c->grid_lattice, &stab);
  wfc_stability_warn(c->name, d, &stab);
  c->colour_start = L->cons.colour_start; /* taken */
  L->cons.colour_start = NULL;
  return WF_OK;
}

/* Topology of a split partition: the caller's masses, springs or constraints (a copy of the
 * colour table, which the partition keeps). */
static wf_status lists_of_partition(const char *fn, wfc_part *c, const wfc_local *local,
                                    host_lists *L) {
  L->own = false;
  L->inv_mass = local->inv_mass;
  c->spacing = local->spacing;
  c->grid_lattice = local->grid;
  if (c->desc.integrator == WF_CLOTH_SPRINGS)
    L->sp = *local->springs;
  else
    L->cons = *local->cons;
  size_t colours = (size_t)L->cons.colours + 1;
  c->colour_start = malloc(colours * sizeof *c->colour_start);
  if (!c->colour_start) return wfc_oom(fn, c->name);
  if (L->cons.colour_start)
    memcpy(c->colour_start, L->cons.colour_start, colours * sizeof(uint32_t));
  else
    c->colour_start[0] = 0;
  return WF_OK;
}

/* XPBD: whether the one-launch frame (cloth_xpbd_frame.h) can run this cloth, and its plan;
 * otherwise one log line that says why its frames run stage by stage (a split over partitions
 * says so once, in cloth_api.c; tuning.one_launch OFF is asked for, so it is not logged). On a
 * CPU device the one-launch frame runs only when asked (tuning.one_launch ON): it is one call
 * on one thread, where the staged frame's solve kernels split over the CPU backend's worker
 * pool (cpu_grain), which is worth more than the launches it saves. On a CUDA device, unless
 * asked (tuning.one_launch or tuning.resident ON), only where one block takes the cloth
 * (WFC_XPBD_BLOCK_MAX): above, the banded frame was slower than the staged one on an H200 at
 * every size measured (cloth_xpbd_frame.h). */
static wf_status xpbd_frame_setup(const char *fn, wfc_part *c, const wfc_constraints *cons) {
  const wf_cloth_desc *d = &c->desc;
  if (!wf_device_is_cuda(c->dev) && d->tuning.one_launch != WF_CLOTH_TUNE_ON) {
    c->xpbd_fast = false;
    return WF_OK;
  }
  if (d->tuning.one_launch != WF_CLOTH_TUNE_ON && d->tuning.resident != WF_CLOTH_TUNE_ON &&
      c->nv > WFC_XPBD_BLOCK_MAX) {
    c->xpbd_fast = false;
    return WF_OK;
  }
  const char *why = d->self_collision ? "self-collision sorts a vertex grid between stages"
                    : d->contact      ? "cloth contact sorts a vertex grid between stages"
                    : c->colours > WFC_XPBD_FRAME_COLOURS
                        ? "its constraints need more colours than the one-launch frame takes"
                        : NULL;
  c->xpbd_fast = !why;
  if (why) {
    wf__log(WF_LOG_INFO, "cloth '%s': the XPBD frame runs stage by stage: %s", c->name, why);
    return WF_OK;
  }
  uint32_t reach = wfc_xpbd_reach(cons->cons, cons->count, c->topo.tris, c->nt);
  wfc_xpbd_frame_plan(wf_device_is_cuda(c->dev) ? wf_device_ordinal(c->dev) : -1, c->nv, reach,
                      d->tuning.block,
                      d->tuning.resident == WF_CLOTH_TUNE_OFF  ? 0u
                      : d->tuning.resident == WF_CLOTH_TUNE_ON ? WFC_XPBD_BLOCK_MAX_ASKED
                                                               : WFC_XPBD_BLOCK_MAX,
                      d->tuning.grid_sync == WF_CLOTH_TUNE_ON,
                      d->tuning.smem == WF_CLOTH_TUNE_ON    ? 0u
                      : d->tuning.smem == WF_CLOTH_TUNE_OFF ? UINT32_MAX
                                                            : WFC_XPBD_SHARED_MIN,
                      &c->xplan);
  if (c->xplan.mode != WFC_XPBD_GRID) return WF_OK;
  c->xband = wfc_xpbd_bands_build(cons->cons, cons->count, c->colour_start, c->colours, &c->xplan);
  return c->xband ? WF_OK : wfc_oom(fn, c->name);
}

/* Plan: the counts, and how a frame runs (the one-launch frame's plan; a partition has none:
 * its frames update owned vertices only). */
static wf_status frame_setup(const char *fn, wfc_part *c, const host_lists *L, bool partition) {
  c->springs = L->sp.count;
  c->constraints = L->cons.count;
  c->colours = L->cons.colours;
  c->fast_off = partition || c->desc.tuning.one_launch == WF_CLOTH_TUNE_OFF;
  if (!partition && c->desc.integrator == WF_CLOTH_SPRINGS)
    frame_plan(c, &L->sp, L->grid_rest != NULL);
  if (!c->fast_off && c->desc.integrator == WF_CLOTH_XPBD) return xpbd_frame_setup(fn, c, &L->cons);
  return WF_OK;
}

/* The solver's stream: the desc's, or one of its own. */
static wf_status stream_open(const char *fn, wfc_part *c) {
  if (c->desc.stream) {
    c->stream = c->desc.stream;
    return WF_OK;
  }
  wf_status st = wf_stream_create(c->dev, 0, &c->stream);
  if (st != WF_OK) return fail_gpu(st, fn, c, "creating the solver's stream");
  c->own_stream = true;
  return WF_OK;
}

/* The barrier counters a resident one-launch frame needs: a block's. */
static size_t sync_blocks(const wfc_part *c) {
  if (c->desc.integrator == WF_CLOTH_SPRINGS)
    return c->plan.mode == WFC_FRAME_RESIDENT ? c->plan.blocks : 0;
  return c->xpbd_fast && c->xplan.mode == WFC_XPBD_GRID ? c->xplan.blocks : 0;
}

/* Buffers and upload: every buffer the integrator uses, filled from the lists (both state halves
 * start at the rest positions; wf_upload copies before returning, so the caller may free the
 * lists), the vertex grid's with self-collision, and the parameter block. */
static wf_status buffers_upload(const char *fn, wfc_part *c, const host_lists *L) {
  wfp_f4 *x = malloc((size_t)c->nv * sizeof *x);
  if (!x) return wfc_oom(fn, c->name);
  for (uint32_t i = 0; i < c->nv; i++)
    x[i] = (wfp_f4){c->topo.x[i][0], c->topo.x[i][1], c->topo.x[i][2], L->inv_mass[i]};
  size_t nv = c->nv, nt = c->nt;
  wfc_clock clock0 = {.time = 0.0, .substeps = 0};
  wfc_flags flags0 = {.flags = 0u, .first_bad = UINT32_MAX};
  bool springs = c->desc.integrator == WF_CLOTH_SPRINGS;
  bool lambda = !springs && c->desc.iterations > 1;
  struct {
    size_t bytes;
    const void *data;
  } spec[B_COUNT] = {
      [B_POS0] = {nv * sizeof(wfp_f4), x},
      [B_VEL0] = {nv * sizeof(wfp_f4), NULL},
      [B_CLOCK0] = {sizeof(wfc_clock), &clock0},
      [B_POS1] = {nv * sizeof(wfp_f4), x},
      [B_VEL1] = {nv * sizeof(wfp_f4), NULL},
      [B_CLOCK1] = {sizeof(wfc_clock), &clock0},
      [B_FLAGS] = {sizeof(wfc_flags), &flags0},
      [B_PARAMS] = {sizeof(wfc_params), NULL},
      [B_COLLIDERS] = {sizeof c->colliders, NULL},
      [B_ADJ_START] = {springs ? (nv + 1) * 4 : 0, L->sp.adj_start},
      [B_ADJ] = {(size_t)L->sp.count * 2 * sizeof(wfc_link), L->sp.adj},
      [B_TRI_START] = {(nv + 1) * 4, c->topo.vt_start},
      [B_TRI_LIST] = {nt * 3 * 4, c->topo.vt_list},
      [B_TRIS] = {nt * 3 * 4, c->topo.tris},
      [B_CONS] = {(size_t)L->cons.count * sizeof(wfc_constraint), L->cons.cons},
      [B_LAMBDA] = {lambda ? (size_t)L->cons.count * 4 : 0, NULL},
      [B_GRID_REST] = {L->grid_rest ? nv * WFC_R_COUNT * sizeof(float) : 0, L->grid_rest},
      [B_SYNC] = {sync_blocks(c) * 4, NULL},
      [B_XBAND] = {c->xband
                       ? ((size_t)c->constraints + (size_t)c->colours * (c->xplan.blocks + 1)) * 4
                       : 0,
                   c->xband},
      [B_FORCE] = {WFX_FORCE_BYTES, NULL},
  };
  wf_status st = WF_OK;
  for (int b = 0; b < B_COUNT && st == WF_OK; b++) {
    if (b >= B_Q && b <= B_TEMP) continue; /* the vertex grid's: grid_alloc, when needed */
    if (b >= B_CC_EDGES && b <= B_CC_TEMP) continue; /* cloth contact's: contact_alloc */
    if (!spec[b].bytes && (b == B_ADJ_START || b == B_ADJ || b == B_CONS || b == B_LAMBDA ||
                           b == B_GRID_REST || b == B_SYNC || b == B_XBAND))
      continue; /* not used by this integrator */
    st = make_buffer(c, fn, b, spec[b].bytes, spec[b].data);
  }
  free(x);
  free(c->xband); /* uploaded */
  c->xband = NULL;
  if (st == WF_OK && (c->desc.self_collision || c->desc.contact)) st = grid_alloc(c, fn);
  if (st == WF_OK && c->desc.contact) st = contact_alloc(c, fn);
  return st != WF_OK ? st : upload_params(c, fn);
}

/* The phases every partition ends with: stream, buffers and upload; then the lists are freed,
 * and on failure (st, or a phase's) the partition too. */
static wf_status part_finish(const char *fn, wfc_part *c, host_lists *L, wf_status st,
                             wfc_part **out) {
  if (st == WF_OK) st = stream_open(fn, c);
  if (st == WF_OK) st = buffers_upload(fn, c, L);
  lists_free(L);
  if (st != WF_OK) {
    wfc_part_destroy(c);
    return st;
  }
  *out = c;
  return WF_OK;
}

/* A whole cloth from its topology (taken; desc checked): every list built here. */
static wf_status create_whole(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                              const char *name, wfc_topology *topo, wfc_part **out) {
  wf_status st = wfc_topology_finish(fn, name, topo);
  if (st != WF_OK) {
    wfc_topology_free(topo);
    return st;
  }
  wfc_part *c = NULL;
  host_lists L = {0};
  st = part_new(fn, dev, desc, name, topo, &c);
  if (st == WF_OK) st = lists_build(fn, c, &L);
  if (st == WF_OK) st = frame_setup(fn, c, &L, false);
  return part_finish(fn, c, &L, st, out);
}

wf_status wfc_part_create_grid(wf_device *dev, const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                               wfc_part **out) {
  static const char fn[] = "wf_cloth_create_grid";
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = check_desc(fn, desc, name);
  if (st != WF_OK) return st;
  wfc_topology t;
  st = wfc_grid_build(fn, name, grid, wfc_desc_origin(desc), &t);
  return st != WF_OK ? st : create_whole(fn, dev, desc, name, &t, out);
}

wf_status wfc_part_create_mesh(wf_device *dev, const wf_cloth_desc *desc,
                               const wf_cloth_mesh_desc *mesh, wfc_part **out) {
  static const char fn[] = "wf_cloth_create_mesh";
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = check_desc(fn, desc, name);
  if (st != WF_OK) return st;
  wfc_topology t;
  st = wfc_mesh_build(fn, name, mesh, wfc_desc_origin(desc), &t);
  return st != WF_OK ? st : create_whole(fn, dev, desc, name, &t, out);
}

/* ---- pins and attachments ---------------------------------------------------------------------
 */

/* Pins vertex v with velocity vel (the attachment's; zero for a plain pin). */
static wf_status pin_one(wfc_part *c, const char *fn, uint32_t v, const float vel[3]) {
  float w = 0.0f;
  wfp_f4 v4 = {vel[0], vel[1], vel[2], 0.0f};
  TRY(wf_upload(c->buf[B_POS0], (size_t)v * sizeof(wfp_f4) + 12, &w, sizeof w, c->stream),
      "pinning a vertex");
  TRY(wf_upload(c->buf[B_VEL0], (size_t)v * sizeof(wfp_f4), &v4, sizeof v4, c->stream),
      "pinning a vertex");
  if (!c->pinned[v]) c->pinned[v] = 1, c->n_pinned++;
  return WF_OK;
}

wf_status wfc_part_pin(wfc_part *c, uint32_t vertex) {
  static const float zero3[3] = {0.0f, 0.0f, 0.0f};
  return pin_one(c, "wf_cloth_pin", vertex, zero3);
}

wf_status wfc_pin_named_range(const char *fn, const char *name, const uint32_t grid[2],
                              const char *where, uint32_t range[4]) {
  if (!grid[0])
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': pin '%s': named pins need a grid cloth (this one is a mesh): pin "
                     "by index or region",
                     name, where);
  uint32_t nu = grid[0], nv = grid[1];
  /* each name is a range of columns [i0, i1] x rows [j0, j1] */
  static const struct {
    const char *name;
    int i0, i1, j0, j1; /* 0 = first, 1 = last, -1 = all (with the other end) */
  } names[] = {{"top-left", 0, 0, 0, 0},     {"top-right", 1, 1, 0, 0}, {"bottom-left", 0, 0, 1, 1},
               {"bottom-right", 1, 1, 1, 1}, {"top", 0, 1, 0, 0},       {"bottom", 0, 1, 1, 1},
               {"left", 0, 0, 0, 1},         {"right", 1, 1, 0, 1}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    if (strcmp(where, names[k].name) != 0) continue;
    range[0] = names[k].i0 ? nu - 1 : 0, range[1] = names[k].i1 ? nu - 1 : 0;
    range[2] = names[k].j0 ? nv - 1 : 0, range[3] = names[k].j1 ? nv - 1 : 0;
    return WF_OK;
  }
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s': unknown pin name '%s' (top-left, top-right, bottom-left, "
                   "bottom-right, top, bottom, left, right)",
                   name, where);
}

static wf_status collider_velocity(const wfc_part *c, const char *fn, uint32_t collider,
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

wf_status wfc_part_attach(wfc_part *c, uint32_t vertex, uint32_t collider) {
  static const char fn[] = "wf_cloth_attach";
  float vel[3] = {0.0f, 0.0f, 0.0f};
  wf_status st = collider_velocity(c, fn, collider, vel);
  return st != WF_OK ? st : pin_one(c, fn, vertex, vel);
}

/* ---- colliders, material, parameters ----------------------------------------------------------
 */

wf_status wfc_part_add_collider(wfc_part *c, const wf_collider_desc *d, uint32_t *index) {
  static const char fn[] = "wf_cloth_add_collider";
  if (!d) return wf__error(WF_ERR_INVALID, fn, "collider is NULL");
  uint32_t k = c->params.n_colliders;
  if (k >= WFC_MAX_COLLIDERS)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider '%s': at most %d colliders", c->name,
                     d->name ? d->name : "collider", WFC_MAX_COLLIDERS);
  char owner[96];
  snprintf(owner, sizeof owner, "cloth '%s'", c->name);
  wfp_collider w;
  wf_status st0 = wfp_collider_from_desc(fn, owner, d, &w);
  wf_collider_key *keys = NULL; /* keyframes move into the cloth's frame before the upload */
  wf_collider_desc dl = *d;
  if (st0 == WF_OK && d->key_count > 0) {
    keys = malloc(d->key_count * sizeof *keys);
    if (!keys) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "%s: collider keyframes", owner);
    wfp_keys_to_frame(d, c->topo.origin, keys, &dl);
  }
  if (st0 == WF_OK)
    st0 = wfx_dev_upload(fn, owner, &dl, c->dev, c->stream, &w, &c->collider_dev[k]);
  /* a mesh: a candidate list per vertex for the XPBD finalize (wfc_finalize_elem) */
  if (st0 == WF_OK &&
      (st0 = wfx_dev_cache(fn, owner, c->dev, c->stream, c->nv, &w, &c->collider_dev[k])) != WF_OK)
    wfx_dev_release(&c->collider_dev[k], c->stream);
  free(keys);
  if (st0 != WF_OK) return st0;
  wfp_collider_to_frame(&w, c->topo.origin); /* the kernels see positions relative to it */
  c->colliders[k] = w;
  TRY(wf_upload(c->buf[B_COLLIDERS], k * sizeof w, &w, sizeof w, c->stream),
      "uploading a collider");
  c->params.n_colliders = k + 1;
  if (k == 0) c->epoch++;                   /* a group's captured frame is captured again */
  if (k == 0 && c->forces_on && c->graph) { /* the captured frame has no clear of the forces */
    TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
    wf_graph_destroy(c->graph);
    c->graph = NULL;
  }
  wf_status st = upload_params(c, fn);
  if (st == WF_OK && index) *index = k;
  return st;
}

wf_status wfc_part_set_collider_pose(wfc_part *c, uint32_t k, const wf_collider_pose *pose) {
  static const char fn[] = "wf_cloth_set_collider_pose";
  if (k >= c->params.n_colliders)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider %u does not exist (%u added)",
                     c->name, k, c->params.n_colliders);
  char owner[160];
  snprintf(owner, sizeof owner, "cloth '%s': collider %u", c->name, k);
  wfp_collider w = c->colliders[k];
  int was_posed = wfp_collider_posed(&w);
  wf_status st = wfx_collider_set_pose(fn, owner, pose, &w);
  if (st != WF_OK) return st;
  /* the pose is the world's: into the cloth's frame (an analytic collider turned for the first
   * time gives back its shape's shift first, rounded: docs/precision.md) */
  if (!was_posed && wfp_collider_posed(&w)) {
    const double *o = c->topo.origin, back[3] = {-o[0], -o[1], -o[2]};
    w.flags &= ~WFX_TURNS;
    wfp_collider_to_frame(&w, back);
    w.flags |= WFX_TURNS;
  }
  if (wfp_collider_posed(&w)) wfp_collider_to_frame(&w, c->topo.origin); /* else: pos stays */
  c->colliders[k] = w;
  TRY(wf_upload(c->buf[B_COLLIDERS], k * sizeof w, &w, sizeof w, c->stream),
      "uploading a collider's pose");
  return WF_OK;
}

wf_status wfc_part_set_material(wfc_part *c, const wf_cloth_material *m) {
  static const char fn[] = "wf_cloth_set_material";
  if (!m) return wf__error(WF_ERR_INVALID, fn, "material is NULL");
  wf_status st = check_material(fn, c->name, m);
  if (st != WF_OK) return st;
  float density = c->desc.material.density, mass = c->desc.material.particle_mass;
  c->desc.material = *m;
  c->desc.material.density = density, c->desc.material.particle_mass = mass;
  return upload_params(c, fn);
}

wf_cloth_params wfc_part_params_get(const wfc_part *c) {
  return c ? params_of(&c->desc) : (wf_cloth_params){0};
}

wf_status wfc_part_params_set(wfc_part *c, const wf_cloth_params *p) {
  static const char fn[] = "wf_cloth_params_set";
  if (!p) return wf__error(WF_ERR_INVALID, fn, "params is NULL");
  wf_status st = check_params(fn, c->name, p);
  if (st != WF_OK) return st;
  c->desc.frame_dt = p->frame_dt;
  memcpy(c->desc.gravity, p->gravity, sizeof c->desc.gravity);
  memcpy(c->desc.wind, p->wind, sizeof c->desc.wind);
  c->desc.air_density = p->air_density;
  c->desc.damping = p->damping;
  return upload_params(c, fn);
}

/* The drag lives in the parameter block beside the other parameters: the captured frame reads
 * it, so setting, moving or ending it needs no recapture. params_build leaves its fields alone. */
wf_status wfc_part_drag_set(wfc_part *c, bool on, uint32_t vertex, const float target[3],
                            float stiffness, float damping) {
  static const char fn[] = "wf_cloth_drag_set";
  c->params.drag_on = on ? 1u : 0u;
  c->params.drag_vertex = on ? vertex : 0u;
  c->params.drag_k = on ? stiffness : 0.0f, c->params.drag_c = on ? damping : 0.0f;
  c->params.drag_target =
      on ? (wfp_f4){target[0], target[1], target[2], 0.0f} : (wfp_f4){0.0f, 0.0f, 0.0f, 0.0f};
  return upload_params(c, fn);
}

/* ---- the substep ------------------------------------------------------------------------------
 */

static wf_status launch(wfc_part *c, const char *fn, const wf_kernel *k, size_t n, const void *args,
                        size_t size) {
  wf_status st = wf_launch(k, n, args, size, c->stream);
  if (st != WF_OK) return fail_gpu(st, fn, c, k->name);
  return WF_OK;
}

static bool grid_on(const wfc_part *c) { return c->desc.self_collision || c->ps != NULL; }

/* ---- kernel arguments: one builder a struct (cloth_math.h says what each kernel does) ---------
 * `in`: the state half a mass-spring substep reads (it writes the other). */

static wfc_mesh_view mesh_view(const wfc_part *c) {
  return (wfc_mesh_view){
      .tri_start = ptr(c, B_TRI_START), .tri_list = ptr(c, B_TRI_LIST), .tris = ptr(c, B_TRIS)};
}

/* The grid points: XPBD's x + step, or the springs' guess (computed by stage_grid). */
static wfp_f4 *grid_points(const wfc_part *c) { return ptr(c, B_Q); }

static wfc_cgrid cgrid(const wfc_part *c) {
  const wfc_params *p = ptr(c, B_PARAMS);
  return (wfc_cgrid){.params = &p->grid,
                     .cell_start = ptr(c, B_CSTART),
                     .cell_end = ptr(c, B_CEND),
                     .vals = ptr(c, B_VALS_OUT),
                     .q = grid_points(c)};
}

static wfc_spring_args spring_args(const wfc_part *c, int in) {
  return (wfc_spring_args){.params = ptr(c, B_PARAMS),
                           .colliders = ptr(c, B_COLLIDERS),
                           .clock_in = ptr(c, in ? B_CLOCK1 : B_CLOCK0),
                           .clock_out = ptr(c, in ? B_CLOCK0 : B_CLOCK1),
                           .flags = ptr(c, B_FLAGS),
                           .pos_in = ptr(c, in ? B_POS1 : B_POS0),
                           .vel_in = ptr(c, in ? B_VEL1 : B_VEL0),
                           .pos_out = ptr(c, in ? B_POS0 : B_POS1),
                           .vel_out = ptr(c, in ? B_VEL0 : B_VEL1),
                           .adj_start = ptr(c, B_ADJ_START),
                           .adj = ptr(c, B_ADJ),
                           .mesh = mesh_view(c),
                           .n = c->nv,
                           .forces = c->forces_on ? ptr(c, B_FORCE) : NULL};
}

static wfc_predict_args predict_args(const wfc_part *c) {
  return (wfc_predict_args){.params = ptr(c, B_PARAMS),
                            .clock_in = ptr(c, B_CLOCK0),
                            .clock_out = ptr(c, B_CLOCK1),
                            .pos = ptr(c, B_POS0),
                            .vel = ptr(c, B_VEL0),
                            .pred = ptr(c, B_POS1),
                            .vpred = ptr(c, B_VEL1),
                            .mesh = mesh_view(c),
                            .n = c->nv};
}

/* XPBD: the constraints of colour q (s0: its first). */
static wfc_solve_args solve_args(const wfc_part *c, uint32_t s0) {
  float *lambda = c->buf[B_LAMBDA] ? ptr(c, B_LAMBDA) : NULL;
  const wfc_constraint *cons = c->buf[B_CONS] ? ptr(c, B_CONS) : NULL;
  return (wfc_solve_args){.params = ptr(c, B_PARAMS),
                          .cons = cons + s0,
                          .lambda = lambda ? lambda + s0 : NULL,
                          .pos = ptr(c, B_POS0),
                          .pred = ptr(c, B_POS1)};
}

static wfc_finalize_args finalize_args(const wfc_part *c) {
  return (wfc_finalize_args){.params = ptr(c, B_PARAMS),
                             .colliders = ptr(c, B_COLLIDERS),
                             .clock_in = ptr(c, B_CLOCK1),
                             .clock_out = ptr(c, B_CLOCK0),
                             .flags = ptr(c, B_FLAGS),
                             .pos = ptr(c, B_POS0),
                             .vel = ptr(c, B_VEL0),
                             .pred = ptr(c, B_POS1),
                             .vpred = ptr(c, B_VEL1),
                             .n = c->nv,
                             .forces = c->forces_on ? ptr(c, B_FORCE) : NULL};
}

static wfc_q_args q_args(const wfc_part *c, int in) {
  if (c->desc.integrator == WF_CLOTH_XPBD) /* x + the step after the constraints */
    return (wfc_q_args){.params = ptr(c, B_PARAMS),
                        .pos = ptr(c, B_POS0),
                        .q = ptr(c, B_Q),
                        .step = ptr(c, B_POS1)};
  return (wfc_q_args){.params = ptr(c, B_PARAMS),
                      .pos = ptr(c, in ? B_POS1 : B_POS0),
                      .vel = ptr(c, in ? B_VEL1 : B_VEL0),
                      .q = ptr(c, B_Q)};
}

static wfc_keys_args keys_args(const wfc_part *c) {
  return (wfc_keys_args){.params = ptr(c, B_PARAMS),
                         .q = grid_points(c),
                         .keys = ptr(c, B_KEYS),
                         .vals = ptr(c, B_VALS)};
}

static wfc_self_args self_args(const wfc_part *c) {
  return (wfc_self_args){.params = ptr(c, B_PARAMS),
                         .grid = cgrid(c),
                         .rest = ptr(c, B_REST),
                         .delta = ptr(c, B_DELTA)};
}

static wfc_couple_cloth_args couple_cloth_args(const wfc_part *c, wfc_pgrid pgrid) {
  return (wfc_couple_cloth_args){.params = ptr(c, B_PARAMS),
                                 .q = grid_points(c),
                                 .pgrid = pgrid,
                                 .delta = ptr(c, B_DELTA),
                                 .accumulate = c->desc.self_collision ? 1u : 0u};
}

static wfc_couple_particle_args couple_particle_args(const wfc_part *c, wfc_pgrid pgrid) {
  return (wfc_couple_particle_args){.params = ptr(c, B_PARAMS), .grid = cgrid(c), .pgrid = pgrid};
}

static wfc_apply_args apply_args(const wfc_part *c, int in) {
  bool xpbd = c->desc.integrator == WF_CLOTH_XPBD;
  return (wfc_apply_args){.params = ptr(c, B_PARAMS),
                          .delta = ptr(c, B_DELTA),
                          .pred = xpbd ? ptr(c, B_POS1) : NULL,
                          .vel = xpbd ? NULL : ptr(c, in ? B_VEL1 : B_VEL0)};
}

/* Springs: n substeps in one launch (cloth_fast.h); host_pos: where the last one also writes the
 * positions, or NULL. */
static wfc_frame_args frame_args(const wfc_part *c, int n, void *host_pos) {
  return (wfc_frame_args){.half = {spring_args(c, 0), spring_args(c, 1)},
                          .rest6 = c->buf[B_GRID_REST] ? ptr(c, B_GRID_REST) : NULL,
                          .nu = c->topo.grid[0],
                          .nr = c->topo.grid[1],
                          .substeps = (uint32_t)n,
                          .plan = c->plan,
                          .barrier = c->barrier,
                          .reach = c->reach,
                          .sync = c->buf[B_SYNC] ? ptr(c, B_SYNC) : NULL,
                          .host_pos = host_pos,
                          .host_xyz = c->rb_layout == WF_CLOTH_XYZ};
}

static wfc_xyz_args xyz_args(const wfc_part *c) {
  return (wfc_xyz_args){.src = ptr(c, B_POS0),
                        .dst = (float *)(void *)((char *)wf_buffer_ptr(c->rb) + c->rb_off)};
}

/* GRID stage: cell keys of the grid points, a stable sort by key, the cell tables. */
static wf_status stage_grid(wfc_part *c, const char *fn, int in) {
  wf_status st;
  wfc_q_args qa = q_args(c, in);
  if ((st = launch(c, fn, &wfc_grid_q, c->nv, &qa, sizeof qa)) != WF_OK) return st;
  wfc_keys_args ka = keys_args(c);
  if ((st = launch(c, fn, &wfc_grid_keys, c->nv, &ka, sizeof ka)) != WF_OK) return st;
  TRY(wfc_grid_sort(c->stream, ptr(c, B_KEYS), ptr(c, B_VALS), ptr(c, B_KEYS_OUT),
                    ptr(c, B_VALS_OUT), c->nv, c->bits, c->buf[B_TEMP] ? ptr(c, B_TEMP) : NULL,
                    c->buf[B_TEMP] ? wf_buffer_size(c->buf[B_TEMP]) : 0),
      "sorting the vertex grid");
  TRY(wfc_grid_cells(c->stream, c->buf[B_CSTART], c->buf[B_CEND], ptr(c, B_KEYS_OUT), c->nv,
                     c->table),
      "building the vertex grid's cells");
  return WF_OK;
}

/* SELF_COLLISION stage: each vertex gathers its vertex-vertex repulsions into delta. */
static wf_status stage_self_collision(wfc_part *c, const char *fn) {
  if (!c->desc.self_collision) return WF_OK;
  wfc_self_args a = self_args(c);
  return launch(c, fn, &wfc_self_collide, c->nv, &a, sizeof a);
}

/* PARTICLE_COUPLING stage (inside the particle solver's substep, on its stream, after its grid
 * build): the vertices' side into delta, then the particles' side into their sorted velocities.
 * The vertices read the particles' velocities before the particles change them. */
static wf_status stage_particle_coupling(wfc_part *c, const char *fn) {
  if (!c->ps) return WF_OK;
  wfp_view v;
  wf_status st = wfp_view_get(c->ps, &v);
  if (st != WF_OK) return st;
  if (v.max_radius > c->ps_radius)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': particles '%s' now have radius %g, larger than the %g the cloth "
                     "was coupled with: couple again (wf_cloth_couple) after adding particles",
                     c->name, v.name, (double)v.max_radius, (double)c->ps_radius);
  if (v.grid.n == 0) { /* nothing to touch; delta holds self-collision or must be cleared */
    if (!c->desc.self_collision)
      TRY(wf_memset(c->buf[B_DELTA], 0, 0, (size_t)c->nv * sizeof(wfp_f4), c->stream),
          "clearing the corrections");
    return WF_OK;
  }
  wfc_couple_cloth_args ca = couple_cloth_args(c, v.grid);
  if ((st = launch(c, fn, &wfc_couple_cloth, c->nv, &ca, sizeof ca)) != WF_OK) return st;
  wfc_couple_particle_args pa = couple_particle_args(c, v.grid);
  return launch(c, fn, &wfc_couple_particles, v.grid.n, &pa, sizeof pa);
}

/* APPLY stage: XPBD pred += delta; springs v += delta / dt (state half `in`). */
static wf_status stage_apply(wfc_part *c, const char *fn, int in) {
  wfc_apply_args a = apply_args(c, in);
  return launch(c, fn, &wfc_apply, c->nv, &a, sizeof a);
}

/* CONTACT stage (cloth_contact.h): from x0 (buffer b0) and the end guess in b1 (XPBD: the step),
 * the grid over x0, each vertex's corrected and bounded end, written back (springs: and the
 * velocities in bv). In a partition of a split cloth the stage runs over the whole cloth's arrays
 * (cloth_parts.h, "Contact"): SCATTER first puts every vertex's x0 and x1 at its global index,
 * from the partition's own state and the other partitions' owned vertices the transport brought
 * (B_CC_CAT0/1); the grid is the whole cloth's, so every owned vertex gathers the pairs one
 * device gathers, in its order; GATHER and APPLY run over the owned vertices only. */
static wf_status stage_contact(wfc_part *c, const char *fn, int b0, int b1, int bv) {
  if (!c->desc.contact) return WF_OK;
  const wfc_params *p = ptr(c, B_PARAMS);
  uint32_t step = c->desc.integrator == WF_CLOTH_XPBD ? 1u : 0u;
  bool split = c->buf[B_CC_X0] != NULL;
  uint32_t n = c->cc_nv; /* the vertices of the grid: the whole cloth's */
  void *x0 = split ? ptr(c, B_CC_X0) : ptr(c, b0), *x1 = split ? ptr(c, B_CC_X1) : ptr(c, b1);
  wf_status st;
  if (split) {
    wfcc_scatter_args sa = {.cat0 = ptr(c, B_CC_CAT0),
                            .cat1 = ptr(c, B_CC_CAT1),
                            .own0 = ptr(c, b0),
                            .own1 = ptr(c, b1),
                            .gid = ptr(c, B_CC_GID),
                            .own_first = c->cc_first,
                            .own_n = c->n_update,
                            .x0 = x0,
                            .x1 = x1};
    if ((st = launch(c, fn, &wfcc_scatter, n, &sa, sizeof sa)) != WF_OK) return st;
  }
  wfcc_disp_args da = {.x0 = x0,
                       .x1 = x1,
                       .ve_start = ptr(c, B_CC_VE_START),
                       .ve_list = ptr(c, B_CC_VE),
                       .edges = ptr(c, B_CC_EDGES),
                       .max_bits = ptr(c, B_CC_MAX),
                       .step = step};
  if ((st = launch(c, fn, &wfcc_disp, n, &da, sizeof da)) != WF_OK) return st;
  wfcc_reach_args ra = {.params = ptr(c, B_PARAMS), .max_bits = ptr(c, B_CC_MAX)};
  if ((st = launch(c, fn, &wfcc_reach, 1, &ra, sizeof ra)) != WF_OK) return st;
  wfcc_keys_args ka = {.params = p, .x0 = x0, .keys = ptr(c, B_KEYS), .vals = ptr(c, B_VALS)};
  if ((st = launch(c, fn, &wfcc_keys, n, &ka, sizeof ka)) != WF_OK) return st;
  TRY(wfc_grid_sort(c->stream, ptr(c, B_KEYS), ptr(c, B_VALS), ptr(c, B_KEYS_OUT),
                    ptr(c, B_VALS_OUT), n, c->cc_bits, c->buf[B_CC_TEMP] ? ptr(c, B_CC_TEMP) : NULL,
                    c->buf[B_CC_TEMP] ? wf_buffer_size(c->buf[B_CC_TEMP]) : 0),
      "sorting the contact grid");
  TRY(wfc_grid_cells(c->stream, c->buf[B_CC_CSTART], c->buf[B_CC_CEND], ptr(c, B_KEYS_OUT), n,
                     c->cc_table),
      "building the contact grid's cells");
  wfcc_gather_args ga = {.params = p,
                         .grid = {.params = &p->contact.grid,
                                  .cell_start = ptr(c, B_CC_CSTART),
                                  .cell_end = ptr(c, B_CC_CEND),
                                  .vals = ptr(c, B_VALS_OUT),
                                  .q = x0},
                         .x0 = x0,
                         .x1 = x1,
                         .rest = ptr(c, B_REST),
                         .topo = {.tris = ptr(c, split ? B_CC_TRIS : B_TRIS),
                                  .vt_start = ptr(c, split ? B_CC_VT_START : B_TRI_START),
                                  .vt_list = ptr(c, split ? B_CC_VT : B_TRI_LIST),
                                  .edges = ptr(c, B_CC_EDGES),
                                  .ve_start = ptr(c, B_CC_VE_START),
                                  .ve_list = ptr(c, B_CC_VE),
                                  .own_t_start = ptr(c, B_CC_OT_START),
                                  .own_t = ptr(c, B_CC_OT),
                                  .own_e_start = ptr(c, B_CC_OE_START),
                                  .own_e = ptr(c, B_CC_OE),
                                  .piece = ptr(c, B_CC_PIECE)},
                         .ids = split ? (const uint32_t *)ptr(c, B_CC_GID) + c->cc_first : NULL,
                         .out = ptr(c, B_CC_OUT),
                         .step = step};
  if ((st = launch(c, fn, &wfcc_gather, c->n_update, &ga, sizeof ga)) != WF_OK) return st;
  wfcc_apply_args aa = {.params = p,
                        .out = ptr(c, B_CC_OUT),
                        .x0 = ptr(c, b0),
                        .x1 = ptr(c, b1),
                        .vel = step ? NULL : ptr(c, bv),
                        .step = step};
  return launch(c, fn, &wfcc_apply, c->n_update, &aa, sizeof aa);
}

/* XPBD: one Gauss-Seidel pass over the constraints of colour q. */
static wf_status xpbd_colour(wfc_part *c, const char *fn, uint32_t q) {
  uint32_t s0 = c->colour_start[q], n = c->colour_start[q + 1] - s0;
  if (!n) return WF_OK; /* a partition may have no constraint of a colour */
  wfc_solve_args sa = solve_args(c, s0);
  return launch(c, fn, &wfc_xpbd_solve, n, &sa, sizeof sa);
}

/* The first part of a substep: everything up to the corrections (springs: from half `in`). */
static wf_status substep_begin(wfc_part *c, const char *fn, int in) {
  wf_status st;
  if (c->desc.integrator == WF_CLOTH_XPBD) {
    wfc_predict_args pa = predict_args(c);
    if ((st = launch(c, fn, &wfc_xpbd_predict, c->n_update, &pa, sizeof pa)) != WF_OK ||
        (st = wfc_enqueue_clear_multipliers(c, fn)) != WF_OK)
      return st;
    for (int it = 0; it < c->desc.iterations; it++)
      for (uint32_t q = 0; q < c->colours; q++)
        if ((st = xpbd_colour(c, fn, q)) != WF_OK) return st;
  }
  if (!grid_on(c)) return WF_OK;
  if ((st = stage_grid(c, fn, in)) != WF_OK) return st;
  return stage_self_collision(c, fn);
}

/* The rest of a substep: the corrections, then springs (half in -> out) or XPBD's finalize. */
static wf_status substep_end(wfc_part *c, const char *fn, int in) {
  wf_status st;
  if (grid_on(c) && (st = stage_apply(c, fn, in)) != WF_OK) return st;
  if (c->desc.integrator == WF_CLOTH_XPBD) {
    if ((st = stage_contact(c, fn, B_POS0, B_POS1, -1)) != WF_OK) return st;
    wfc_finalize_args fa = finalize_args(c);
    return launch(c, fn, &wfc_xpbd_finalize, c->n_update, &fa, sizeof fa);
  }
  wfc_spring_args a = spring_args(c, in);
  if ((st = launch(c, fn, &wfc_spring_step, c->n_update, &a, sizeof a)) != WF_OK) return st;
  return stage_contact(c, fn, in ? B_POS1 : B_POS0, in ? B_POS0 : B_POS1, in ? B_VEL0 : B_VEL1);
}

/* One substep of an uncoupled cloth (springs: state half `in` -> the other half). */
static wf_status substep(wfc_part *c, const char *fn, int in) {
  wf_status st = substep_begin(c, fn, in);
  return st != WF_OK ? st : substep_end(c, fn, in);
}

/* Springs: a batch of an odd number of substeps ends in half 1: copy it back to half 0. */
static wf_status springs_back_to_half0(wfc_part *c, const char *fn) {
  size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
  TRY(wf_copy(c->buf[B_POS0], 0, c->buf[B_POS1], 0, bytes, c->stream), "copying the state");
  TRY(wf_copy(c->buf[B_VEL0], 0, c->buf[B_VEL1], 0, bytes, c->stream), "copying the state");
  TRY(wf_copy(c->buf[B_CLOCK0], 0, c->buf[B_CLOCK1], 0, sizeof(wfc_clock), c->stream),
      "copying the state");
  return WF_OK;
}

/* Kernels are opaque to the GPU layer: mark every buffer as used on the solver's stream, so that
 * downloads and frees on other streams wait for the substeps (and a graph keeps them alive). */
static wf_status touch_all(wfc_part *c, const char *fn) {
  for (int b = 0; b < B_COUNT; b++)
    if (c->buf[b]) TRY(wf_buffer_touch(c->buf[b], c->stream), "ordering buffers");
  if (c->rb) TRY(wf_buffer_touch(c->rb, c->stream), "ordering the readback buffer");
  return WF_OK;
}

/* Springs without self-collision or coupling: the whole batch in one launch (cloth_fast.h);
 * host_pos: where the last substep also writes the positions, or NULL. */
static wf_status springs_frame(wfc_part *c, const char *fn, int n, void *host_pos) {
  wfc_frame_args fa = frame_args(c, n, host_pos);
  return launch(c, fn, &wfc_spring_frame, c->nv, &fa, sizeof fa);
}

/* The frame is one launch: springs (cloth_fast.h) or XPBD (cloth_xpbd_frame.h) without the
 * vertex grid's stages (self-collision, coupling) or contact, on one partition. */
static bool one_launch(const wfc_part *c) {
  if (grid_on(c) || c->desc.contact || c->fast_off) return false;
  return c->desc.integrator == WF_CLOTH_SPRINGS || c->xpbd_fast;
}

/* XPBD: n substeps in one launch (cloth_xpbd_frame.h), the stages of substep() in its order;
 * host_pos: where the last one also writes the positions, or NULL. */
static wf_status xpbd_frame(wfc_part *c, const char *fn, int n, void *host_pos) {
  wfc_xpbd_frame_args fa = {.predict = predict_args(c),
                            .solve = solve_args(c, 0),
                            .finalize = finalize_args(c),
                            .n = c->n_update,
                            .constraints = c->constraints,
                            .colours = c->colours,
                            .iterations = (uint32_t)c->desc.iterations,
                            .substeps = (uint32_t)n,
                            .plan = c->xplan,
                            .perm = c->buf[B_XBAND] ? ptr(c, B_XBAND) : NULL,
                            .band = c->buf[B_XBAND] ? (uint32_t *)ptr(c, B_XBAND) + c->constraints
                                                    : NULL,
                            .sync = c->buf[B_SYNC] ? ptr(c, B_SYNC) : NULL,
                            .host_pos = host_pos,
                            .host_xyz = c->rb_layout == WF_CLOTH_XYZ};
  for (uint32_t q = 0; q <= c->colours; q++)
    fa.colour_start[q] = c->colour_start[q];
  return launch(c, fn, &wfc_xpbd_frame, c->nv, &fa, sizeof fa);
}

/* The readback buffer's memory when the frame kernel can write the positions into it itself:
 * host memory the device reaches (the CPU backend's, or pinned memory from a CUDA device:
 * unified addressing maps it), 16-byte aligned for xyzw. NULL: copy (xyzw) or pack (xyz) after
 * the frame instead. */
static void *readback_direct(const wfc_part *c) {
  if (!c->rb || !one_launch(c)) return NULL;
  if (c->rb_layout == WF_CLOTH_XYZW && (c->rb_off & 15u)) return NULL;
  if (wf_device_is_cuda(wf_buffer_device(c->rb))) return NULL; /* device memory: copy */
  if (wf_device_is_cuda(c->dev) && !(wf_buffer_flags(c->rb) & WF_BUFFER_PINNED)) return NULL;
  return (char *)wf_buffer_ptr(c->rb) + c->rb_off;
}

/* The readback after a frame that did not write it itself: a copy (xyzw) or the pack kernel
 * (xyz, into memory the device writes: wf_cloth_set_frame_readback_as checked it). */
static wf_status readback_after(wfc_part *c, const char *fn) {
  if (c->rb_layout == WF_CLOTH_XYZ) {
    wfc_xyz_args xa = xyz_args(c);
    wf_status st = launch(c, fn, &wfc_pack_xyz, c->nv, &xa, sizeof xa);
    if (st != WF_OK) return st;
    TRY(wf_buffer_touch(c->rb, c->stream), "ordering the readback buffer");
    return WF_OK;
  }
  TRY(wf_copy(c->rb, c->rb_off, c->buf[B_POS0], 0, (size_t)c->nv * sizeof(wfp_f4), c->stream),
      "copying positions to the readback buffer");
  return WF_OK;
}

/* A frame (or run of substeps) begins: the collider impulses start from zero. A cloth without
 * colliders, or that does not measure their forces (wfc_part_measure_forces), skips the clear,
 * so that its mass-spring frame stays one launch (cloth_fast.h); the first collider added to a
 * measuring cloth drops the captured frame (wfc_part_add_collider). Measuring with colliders, the
 * clear is one memset node of 6 KiB before the launch. */
static wf_status forces_begin(wfc_part *c, const char *fn, int substeps) {
  c->force_substeps = substeps;
  if (c->params.n_colliders == 0 || !c->forces_on) return WF_OK;
  TRY(wf_memset(c->buf[B_FORCE], 0, 0, WFX_FORCE_BYTES, c->stream), "clearing the collider forces");
  return WF_OK;
}

/* n substeps; frame: they are a frame of wfc_part_step_frames (it ends with the readback). */
static wf_status enqueue_substeps_rb(wfc_part *c, const char *fn, int n, bool frame) {
  bool springs = c->desc.integrator == WF_CLOTH_SPRINGS;
  wf_status st = forces_begin(c, fn, n);
  if (st != WF_OK) return st;
  void *direct = frame ? readback_direct(c) : NULL;
  if (frame && c->rb && !direct) { /* the general path: copy or pack after the frame */
    st = enqueue_substeps_rb(c, fn, n, false);
    return st != WF_OK ? st : readback_after(c, fn);
  }
  if (one_launch(c) && n > 0 && !springs) {
    st = xpbd_frame(c, fn, n, direct);
    return st != WF_OK ? st : touch_all(c, fn);
  }
  if (one_launch(c) && n > 0) {
    st = springs_frame(c, fn, n, direct);
    if (st == WF_OK && (n & 1)) st = springs_back_to_half0(c, fn);
    return st != WF_OK ? st : touch_all(c, fn);
  }
  for (int s = 0; s < n && st == WF_OK; s++)
    st = substep(c, fn, springs ? s & 1 : 1);
  if (st == WF_OK && springs && (n & 1)) st = springs_back_to_half0(c, fn);
  return st != WF_OK ? st : touch_all(c, fn);
}

static wf_status enqueue_substeps(wfc_part *c, const char *fn, int n) {
  return enqueue_substeps_rb(c, fn, n, false);
}

static wf_status capture_frame(wfc_part *c, const char *fn) {
  TRY(wf_capture_begin(c->stream), "beginning the frame capture");
  wf_status st = enqueue_substeps_rb(c, fn, c->desc.substeps, true);
  wf_graph *g = NULL;
  wf_status st2 = wf_capture_end(c->stream, &g);
  if (st != WF_OK) {
    if (g) wf_graph_destroy(g);
    return st;
  }
  if (st2 != WF_OK) return fail_gpu(st2, fn, c, "ending the frame capture");
  c->graph = g;
  c->captures++;
  return WF_OK;
}

static wf_status coupled_error(const wfc_part *c, const char *fn) {
  wfp_view v;
  const char *ps = wfp_view_get(c->ps, &v) == WF_OK ? v.name : "?";
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s' is coupled to particles '%s': step the particle solver "
                   "(wf_particles_step_frames), which steps the cloth too",
                   c->name, ps);
}

static wf_status grouped_error(const wfc_part *c, const char *fn) {
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s' is in a contact group: step the group (wf_cloth_group_step_frames), "
                   "which steps the cloth too",
                   c->name);
}

/* ---- coupling with a particle solver --------------------------------------------------------- */

/* The particle solver's substep hooks (coupling.h): on its stream, in its substeps, captured
 * into its frame. sub_in_frame counts the substeps recorded since the frame began (the springs'
 * state half); it is a host counter, used while recording only. */
static wf_status couple_hook(void *user, int event) {
  static const char fn[] = "wf_particles_step_frames";
  wfc_part *c = user;
  bool springs = c->desc.integrator == WF_CLOTH_SPRINGS;
  int in = springs ? c->sub_in_frame & 1 : 1;
  wf_status st = WF_OK;
  switch (event) {
  case WFP_HOOK_GRID:
    if (c->sub_in_frame == 0) st = forces_begin(c, fn, 0);
    if (st == WF_OK) st = substep_begin(c, fn, in);
    if (st == WF_OK) st = stage_particle_coupling(c, fn);
    break;
  case WFP_HOOK_SUBSTEP:
    st = substep_end(c, fn, in);
    c->sub_in_frame++;
    break;
  case WFP_HOOK_FRAME:
    c->force_substeps = c->sub_in_frame;
    if (springs && (c->sub_in_frame & 1)) st = springs_back_to_half0(c, fn);
    c->sub_in_frame = 0;
    if (st == WF_OK) st = touch_all(c, fn);
    break;
  case WFP_HOOK_DETACH:
    c->ps = NULL;
    c->sub_in_frame = 0;
    st = upload_params(c, fn);
    break;
  default: break;
  }
  return st;
}

wf_status wfc_part_couple(wfc_part *c, wf_particles *ps) {
  static const char fn[] = "wf_cloth_couple";
  if (c->group && ps) return grouped_error(c, fn);
  if (c->ps) { /* uncouple first (also when coupling again, e.g. after adding particles) */
    wfp_hook_remove(c->ps, couple_hook, c);
    c->ps = NULL;
    c->sub_in_frame = 0;
  }
  if (!ps) return upload_params(c, fn);
  wfp_view v;
  wf_status st = wfp_view_get(ps, &v);
  if (st != WF_OK) return st;
  if (v.dev != c->dev || v.stream != c->stream)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s' and particles '%s' must run on one device and stream (%s, %s): "
                     "create both with the same desc.stream",
                     c->name, v.name, wf_device_name(c->dev), wf_device_name(v.dev));
  float dt_c = c->desc.frame_dt / (float)c->desc.substeps, dt_p = v.frame_dt / (float)v.substeps;
  if (dt_c != dt_p)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s' and particles '%s' must take the same substep: %g s (frame_dt "
                     "%g / %d substeps) vs %g s (%g / %d)",
                     c->name, v.name, (double)dt_c, (double)c->desc.frame_dt, c->desc.substeps,
                     (double)dt_p, (double)v.frame_dt, v.substeps);
  if ((st = grid_alloc(c, fn)) != WF_OK) return st;
  if (c->xpbd_fast)
    wf__log(WF_LOG_INFO,
            "cloth '%s': coupled to particles '%s', its XPBD frame runs stage by stage (inside "
            "the particles' substeps)",
            c->name, v.name);
  c->ps = ps;
  c->ps_radius = v.max_radius;
  c->sub_in_frame = 0;
  if ((st = upload_params(c, fn)) == WF_OK) st = wfp_hook_add(ps, couple_hook, c);
  if (st != WF_OK) c->ps = NULL;
  return st;
}

wf_status wfc_part_step_frames(wfc_part *c, int frames) {
  static const char fn[] = "wf_cloth_step_frames";
  if (c->ps) return coupled_error(c, fn);
  if (c->group) return grouped_error(c, fn);
  if (frames == 0) return WF_OK;
  if (c->desc.no_graph) { /* frame by frame: the collider forces are the last frame's */
    for (int f = 0; f < frames; f++) {
      wf_status st = enqueue_substeps_rb(c, fn, c->desc.substeps, true);
      if (st != WF_OK) return st;
    }
    return WF_OK;
  }
  if (!c->graph) {
    wf_status st = capture_frame(c, fn);
    if (st != WF_OK) return st;
  }
  for (int f = 0; f < frames; f++)
    TRY(wf_graph_launch(c->graph, c->stream), "launching a frame");
  c->force_substeps = c->desc.substeps;
  return touch_all(c, fn);
}

wf_status wfc_part_step_substeps(wfc_part *c, int n) {
  static const char fn[] = "wf_cloth_step_substeps";
  if (n < 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': substeps %d must be >= 0", c->name, n);
  if (c->ps) return coupled_error(c, fn);
  if (c->group) return grouped_error(c, fn);
  return n ? enqueue_substeps(c, fn, n) : WF_OK;
}

/* ---- reading back -----------------------------------------------------------------------------
 */

static wf_status flags_status(wfc_part *c, const char *fn) {
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

wf_status wfc_part_download(wfc_part *c, float (*pos)[4], float (*vel)[4]) {
  static const char fn[] = "wf_cloth_download";
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
  if (pos) TRY(wf_download(pos, c->buf[B_POS0], 0, bytes), "downloading positions");
  if (vel) TRY(wf_download(vel, c->buf[B_VEL0], 0, bytes), "downloading velocities");
  return flags_status(c, fn);
}

/* The energy rows of the owned vertices (cloth_energy.h) into out (n_update rows). The XPBD
 * constraints are read back once to build each vertex's constraint list. */
wf_status wfc_part_energy(wfc_part *c, wfc_energy *out) {
  static const char fn[] = "wf_cloth_energy_get";
  bool xpbd = c->desc.integrator == WF_CLOTH_XPBD;
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  if (!c->energy[0]) {
    TRY(wf_buffer_create(c->dev, (size_t)(c->n_update ? c->n_update : 1) * sizeof(wfc_energy), 0,
                         c->stream, &c->energy[0]),
        "allocating the energy rows");
    if (xpbd && c->constraints) {
      wfc_constraint *cons = malloc((size_t)c->constraints * sizeof *cons);
      if (!cons) return wfc_oom(fn, c->name);
      uint32_t *start = NULL, *list = NULL;
      wf_status st = wf_download(cons, c->buf[B_CONS], 0, (size_t)c->constraints * sizeof *cons);
      if (st == WF_OK) st = wfc_energy_lists(cons, c->constraints, c->n_update, &start, &list);
      free(cons);
      if (st == WF_OK) {
        size_t nl = start[c->n_update] ? start[c->n_update] : 1;
        st = wf_buffer_create(c->dev, ((size_t)c->n_update + 1) * 4, 0, c->stream, &c->energy[1]);
        if (st == WF_OK) st = wf_buffer_create(c->dev, nl * 4, 0, c->stream, &c->energy[2]);
        if (st == WF_OK)
          st = wf_upload(c->energy[1], 0, start, ((size_t)c->n_update + 1) * 4, c->stream);
        if (st == WF_OK) st = wf_upload(c->energy[2], 0, list, nl * 4, c->stream);
      }
      free(start), free(list);
      if (st == WF_OK) st = wf_stream_synchronize(c->stream);
      if (st != WF_OK) return fail_gpu(st, fn, c, "building the constraint lists");
    }
  }
  wfc_coeffs co;
  wfc_material_coeffs(&c->desc.material, c->spacing, c->grid_lattice, &co);
  wfc_energy_args a = {
      .pos = ptr(c, B_POS0), .vel = ptr(c, B_VEL0), .out = ptr_energy(c), .n = c->n_update};
  if (!xpbd && c->buf[B_ADJ]) a.adj_start = ptr(c, B_ADJ_START), a.adj = ptr(c, B_ADJ);
  if (c->energy[1]) {
    a.con_start = wf_buffer_ptr(c->energy[1]), a.con_list = wf_buffer_ptr(c->energy[2]);
    a.cons = ptr(c, B_CONS);
  }
  for (int k = 0; k < 3; k++)
    a.gravity[k] = c->desc.gravity[k], a.k[k] = co.k[k], a.compliance[k] = co.compliance[k];
  if (c->n_update) {
    wf_status st = launch(c, fn, &wfc_energy_kernel, c->n_update, &a, sizeof a);
    if (st != WF_OK) return st;
    /* a download orders itself after the buffer's last recorded user, which a kernel is not */
    TRY(wf_stream_synchronize(c->stream), "waiting for the energy kernel");
    TRY(wf_download(out, c->energy[0], 0, (size_t)c->n_update * sizeof(wfc_energy)),
        "downloading the energies");
  }
  return flags_status(c, fn);
}

/* Checkpoint restore: half 0 of the state, both clocks (a substep copies clock_in forward) and
 * the flags; everything else a frame reads was set up at creation or is rebuilt per substep. */
wf_status wfc_part_set_state(wfc_part *c, const float (*pos)[4], const float (*vel)[4], double time,
                             uint64_t substeps) {
  static const char fn[] = "wf_cloth_set_state";
  if (!isfinite(time))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': time is not finite", c->name);
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  size_t bytes = (size_t)c->nv * sizeof(wfp_f4);
  wfc_clock k = {.time = time, .substeps = substeps};
  wfc_flags f = {.flags = 0, .first_bad = UINT32_MAX};
  TRY(wf_upload(c->buf[B_POS0], 0, pos, bytes, c->stream), "uploading positions");
  TRY(wf_upload(c->buf[B_VEL0], 0, vel, bytes, c->stream), "uploading velocities");
  TRY(wf_upload(c->buf[B_CLOCK0], 0, &k, sizeof k, c->stream), "uploading the clock");
  TRY(wf_upload(c->buf[B_CLOCK1], 0, &k, sizeof k, c->stream), "uploading the clock");
  TRY(wf_upload(c->buf[B_FLAGS], 0, &f, sizeof f, c->stream), "clearing the flags");
  TRY(wf_stream_synchronize(c->stream), "restoring the state");
  return WF_OK;
}

/* On another stream, wf_copy orders s after the solver (the buffer remembers its last user); the
 * solver then waits for s, since its kernels are opaque to that tracking and the next frame must
 * not overwrite the positions while they are read. */
wf_status wfc_part_copy_positions_on(wfc_part *c, wf_buffer *dst, size_t off, wf_stream *s) {
  static const char fn[] = "wf_cloth_copy_positions";
  if (!s) s = c->stream;
  TRY(wf_copy(dst, off, c->buf[B_POS0], 0, (size_t)c->nv * sizeof(wfp_f4), s), "copying positions");
  if (s != c->stream) TRY(wf_stream_wait_stream(c->stream, s), "ordering after the copy");
  return WF_OK;
}

wf_status wfc_part_set_frame_readback_as(wfc_part *c, wf_buffer *dst, size_t off,
                                         wf_cloth_layout layout) {
  static const char fn[] = "wf_cloth_set_frame_readback_as";
  if (layout != WF_CLOTH_XYZW && layout != WF_CLOTH_XYZ)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': layout %d is neither WF_CLOTH_XYZW (0) nor WF_CLOTH_XYZ (1)",
                     c->name, (int)layout);
  if (!dst) layout = WF_CLOTH_XYZW;
  if (dst) {
    const bool xyz = layout == WF_CLOTH_XYZ;
    size_t bytes = (size_t)c->nv * (xyz ? 12 : sizeof(wfp_f4)), size = wf_buffer_size(dst);
    if (off > size || size - off < bytes)
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': destination holds %zu bytes after offset %zu, positions "
                       "need %zu",
                       c->name, off > size ? 0 : size - off, off, bytes);
    wf_device *d = wf_buffer_device(dst);
    if (wf_device_is_cuda(c->dev) && !wf_device_is_cuda(d) &&
        !(wf_buffer_flags(dst) & WF_BUFFER_PINNED))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s' runs on %s: a host destination must be a WF_BUFFER_PINNED "
                       "buffer (a copy into pageable memory would block every frame)",
                       c->name, wf_device_name(c->dev));
    if (xyz && wf_device_is_cuda(d) && d != c->dev)
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s' runs on %s: a WF_CLOTH_XYZ destination on %s cannot be "
                       "written by it (use host memory or a buffer on %s)",
                       c->name, wf_device_name(c->dev), wf_device_name(d), wf_device_name(c->dev));
    if (xyz && (off & 3u))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': offset %zu of a WF_CLOTH_XYZ destination is not a multiple "
                       "of 4 (it holds floats)",
                       c->name, off);
  }
  if (c->rb == dst && c->rb_off == off && c->rb_layout == layout) return WF_OK;
  /* the captured frame bakes in the destination: wait for it, drop it, capture again */
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  if (c->graph) wf_graph_destroy(c->graph);
  c->graph = NULL;
  c->epoch++;
  c->rb = dst;
  c->rb_off = dst ? off : 0;
  c->rb_layout = layout;
  return WF_OK;
}

wf_status wfc_part_time(wfc_part *c, double *seconds, uint64_t *substeps) {
  static const char fn[] = "wf_cloth_time";
  wfc_clock k;
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  TRY(wf_download(&k, c->buf[B_CLOCK0], 0, sizeof k), "reading the solver's clock");
  if (seconds) *seconds = k.time;
  if (substeps) *substeps = k.substeps;
  return WF_OK;
}

wf_status wfc_part_info_get(const wfc_part *c, wf_cloth_info *out) {
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
  out->captures = c->captures;
  bool springs = c->desc.integrator == WF_CLOTH_SPRINGS;
  out->frame_kernel = !one_launch(c)                                ? WF_CLOTH_FRAME_PER_SUBSTEP
                      : !springs && c->xplan.mode == WFC_XPBD_BLOCK ? WF_CLOTH_FRAME_RESIDENT
                      : !springs                                    ? WF_CLOTH_FRAME_STRIDE
                      : c->plan.mode == WFC_FRAME_RESIDENT          ? WF_CLOTH_FRAME_RESIDENT
                                                                    : WF_CLOTH_FRAME_STRIDE;
  out->resident_max = springs && !c->fast_off                       ? c->plan.resident_max
                      : !c->xpbd_fast                               ? 0
                      : c->desc.tuning.resident == WF_CLOTH_TUNE_ON ? WFC_XPBD_BLOCK_MAX_ASKED
                                                                    : WFC_XPBD_BLOCK_MAX;
  out->frame_readback_direct = readback_direct(c) != NULL;
  bool res = out->frame_kernel == WF_CLOTH_FRAME_RESIDENT;
  if (!springs) { /* XPBD: one block (resident) or a grid-stride frame, a thread an element */
    out->frame_lanes = 1;
    out->frame_block = one_launch(c) ? c->xplan.block : 0;
    out->frame_smem = one_launch(c) ? c->xplan.shared : 0; /* set in BLOCK mode only */
    out->frame_grid_sync =
        one_launch(c) && c->xplan.mode == WFC_XPBD_GRID && c->xplan.barrier == WFC_XPBD_SYNC_GRID;
    return WF_OK;
  }
  out->frame_lanes = res ? c->plan.lanes : 1;
  out->frame_smem = res ? c->plan.smem : 0;
  out->frame_tile[0] = res ? c->plan.tile_w : 0;
  out->frame_tile[1] = res ? c->plan.tile_h : 0;
  out->frame_tile_steps = res ? c->plan.tile_steps : 0;
  out->frame_block = res ? c->plan.block : 0;
  out->frame_grid_sync = res && c->barrier == WFC_BARRIER_GRID;
  return WF_OK;
}

wf_stream *wfc_part_stream(const wfc_part *c) { return c ? c->stream : NULL; }

wf_device *wfc_part_device(const wfc_part *c) { return c ? c->dev : NULL; }

wf_status wfc_part_state_buffers(wfc_part *c, wf_buffer **pos, wf_buffer **vel, wf_buffer **clock) {
  if (pos) *pos = c->buf[B_POS0];
  if (vel) *vel = c->buf[B_VEL0];
  if (clock) *clock = c->buf[B_CLOCK0];
  return WF_OK;
}

const wfc_topology *wfc_part_topology(const wfc_part *c) { return &c->topo; }

/* ---- the hooks of the cloth over several devices (cloth_internal.h) ------------------------- */

wf_status wfc_cloth_create_local(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                                 wfc_topology *topo, const wfc_local *local, wfc_part **out) {
  *out = NULL;
  const char *name = desc->name ? desc->name : "cloth";
  wf_status st = check_desc(fn, desc, name);
  if (st == WF_OK && desc->self_collision)
    st = wf__error(WF_ERR_UNSUPPORTED, fn, "cloth '%s': a partition cannot self-collide", name);
  if (st != WF_OK) {
    wfc_topology_free(topo);
    return st;
  }
  wfc_part *c = NULL;
  host_lists L = {0};
  st = part_new(fn, dev, desc, name, topo, &c);
  if (st == WF_OK) st = lists_of_partition(fn, c, local, &L);
  if (st == WF_OK) {
    c->n_update = local->n_update;
    c->cc_whole = local->whole, c->cc_cat_gid = local->cat_gid, c->cc_first = local->cat_first;
    st = frame_setup(fn, c, &L, true);
  }
  st = part_finish(fn, c, &L, st, out);
  if (st == WF_OK) (*out)->cc_whole = NULL, (*out)->cc_cat_gid = NULL; /* the caller's */
  return st;
}

wf_status wfc_check_desc(const char *fn, const wf_cloth_desc *desc, const char *name) {
  return check_desc(fn, desc, name);
}

wf_status wfc_enqueue_colour(wfc_part *c, const char *fn, uint32_t colour) {
  return xpbd_colour(c, fn, colour);
}

wf_status wfc_enqueue_frame_begin(wfc_part *c, const char *fn, int substeps) {
  return forces_begin(c, fn, substeps);
}

uint32_t wfc_part_collider_count(const wfc_part *c) { return c->params.n_colliders; }

wf_status wfc_part_measure_forces(wfc_part *c, bool on) {
  static const char fn[] = "wf_cloth_measure_collider_forces";
  if (c->forces_on == on) return WF_OK;
  if (c->graph) { /* it has the kernels' table pointers and the clear (or none) baked in */
    TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
    wf_graph_destroy(c->graph);
    c->graph = NULL;
  }
  c->forces_on = on;
  /* zero until a frame has summed them (the table holds an older frame's, or nothing) */
  TRY(wf_memset(c->buf[B_FORCE], 0, 0, WFX_FORCE_BYTES, c->stream), "clearing the collider forces");
  return WF_OK;
}

bool wfc_part_measuring_forces(const wfc_part *c) { return c->forces_on; }

wf_status wfc_part_forces(wfc_part *c, const unsigned long long **table, double *seconds) {
  static const char fn[] = "wf_cloth_collider_force";
  TRY(wf_stream_synchronize(c->stream), "waiting for the cloth");
  TRY(wf_download(c->force_host, c->buf[B_FORCE], 0, sizeof c->force_host),
      "reading the collider forces");
  *table = c->force_host;
  *seconds = (double)c->force_substeps * (double)c->params.dt;
  return WF_OK;
}

wf_status wfc_enqueue_frame_end(wfc_part *c, const char *fn, int substeps) {
  if (c->desc.integrator == WF_CLOTH_SPRINGS && (substeps & 1)) {
    wf_status st = springs_back_to_half0(c, fn);
    if (st != WF_OK) return st;
  }
  return touch_all(c, fn);
}

/* The split's overlap: the per-vertex kernels over owned vertices [begin, end) only. Over [0,
 * n_update) in pieces they compute what the whole stages of substep() compute (the
 * clock is written by vertex 0's element, in whichever piece holds it). */
wf_status wfc_enqueue_springs_range(wfc_part *c, const char *fn, int in, uint32_t begin,
                                    uint32_t end) {
  if (end <= begin) return WF_OK;
  wfc_spring_range_args r = {.a = spring_args(c, in), .begin = begin};
  return launch(c, fn, &wfc_spring_range, end - begin, &r, sizeof r);
}

wf_status wfc_enqueue_predict_range(wfc_part *c, const char *fn, uint32_t begin, uint32_t end) {
  if (end <= begin) return WF_OK;
  wfc_predict_range_args r = {.a = predict_args(c), .begin = begin};
  return launch(c, fn, &wfc_xpbd_predict_range, end - begin, &r, sizeof r);
}

wf_status wfc_enqueue_clear_multipliers(wfc_part *c, const char *fn) {
  if (c->buf[B_LAMBDA])
    TRY(wf_memset(c->buf[B_LAMBDA], 0, 0, (size_t)c->constraints * 4, c->stream),
        "clearing the multipliers");
  return WF_OK;
}

wf_status wfc_enqueue_finalize_range(wfc_part *c, const char *fn, uint32_t begin, uint32_t end) {
  if (end <= begin) return WF_OK;
  wfc_finalize_range_args r = {.a = finalize_args(c), .begin = begin};
  return launch(c, fn, &wfc_xpbd_finalize_range, end - begin, &r, sizeof r);
}

wf_status wfc_touch(wfc_part *c, const char *fn) { return touch_all(c, fn); }

wf_status wfc_enqueue_contact(wfc_part *c, const char *fn, int in) {
  if (c->desc.integrator == WF_CLOTH_XPBD) return stage_contact(c, fn, B_POS0, B_POS1, -1);
  return stage_contact(c, fn, in ? B_POS1 : B_POS0, in ? B_POS0 : B_POS1, in ? B_VEL0 : B_VEL1);
}

wf_buffer *wfc_contact_cat(const wfc_part *c, int which) {
  return c->buf[which ? B_CC_CAT1 : B_CC_CAT0];
}

uint32_t wfc_colours(const wfc_part *c) { return c->colours; }

wf_buffer *wfc_buffer(const wfc_part *c, int which) {
  static const int map[] = {B_POS0, B_VEL0, B_POS1, B_VEL1};
  return c->buf[map[which]];
}

wf_status wfc_flags_get(wfc_part *c, const char *fn, uint32_t *bad, uint32_t *first_bad) {
  wfc_flags f;
  TRY(wf_stream_synchronize(c->stream), "waiting for the solver");
  TRY(wf_download(&f, c->buf[B_FLAGS], 0, sizeof f), "reading the solver's flags");
  *bad = f.flags;
  *first_bad = f.first_bad;
  return WF_OK;
}

/* ---- contact groups (cloth_group.c) ---------------------------------------------------------- */

wf_status wfc_enqueue_substep_pre(wfc_part *c, const char *fn, int in) {
  wf_status st = substep_begin(c, fn, in);
  if (st != WF_OK) return st;
  if (grid_on(c) && (st = stage_apply(c, fn, in)) != WF_OK) return st;
  if (c->desc.integrator == WF_CLOTH_XPBD) return WF_OK;
  wfc_spring_args a = spring_args(c, in);
  return launch(c, fn, &wfc_spring_step, c->n_update, &a, sizeof a);
}

wf_status wfc_enqueue_substep_post(wfc_part *c, const char *fn) {
  if (c->desc.integrator != WF_CLOTH_XPBD) return WF_OK;
  wfc_finalize_args fa = finalize_args(c);
  return launch(c, fn, &wfc_xpbd_finalize, c->n_update, &fa, sizeof fa);
}

void wfc_contact_buffers(const wfc_part *c, int in, wf_buffer **x0, wf_buffer **x1,
                         wf_buffer **vel) {
  if (c->desc.integrator == WF_CLOTH_XPBD) {
    *x0 = c->buf[B_POS0], *x1 = c->buf[B_POS1], *vel = NULL;
    return;
  }
  *x0 = c->buf[in ? B_POS1 : B_POS0];
  *x1 = c->buf[in ? B_POS0 : B_POS1];
  *vel = c->buf[in ? B_VEL0 : B_VEL1];
}

wf_status wfc_enqueue_readback(wfc_part *c, const char *fn) {
  return c->rb ? readback_after(c, fn) : WF_OK;
}

const wfc_params *wfc_part_params(const wfc_part *c) { return &c->params; }
const wf_cloth_desc *wfc_part_desc(const wfc_part *c) { return &c->desc; }
const void *wfc_part_group(const wfc_part *c) { return c->group; }
bool wfc_part_coupled(const wfc_part *c) { return c->ps != NULL; }
uint32_t wfc_part_epoch(const wfc_part *c) { return c->epoch; }
void wfc_part_set_group(wfc_part *c, const void *group) { c->group = group; }
