/* The world: a wf_scene mapped onto one particle solver and one cloth solver per cloth, stepped
 * together frame by frame, with statistics and checkpoints (weft/world.h). On several devices the
 * particle solver runs over all of them (one partition each), and so does every cloth but those
 * with self-collision, which stay whole on the first device.
 *
 * Invariants
 *  - Objects are the emitters (ranges of the single particle solver, in scene order) followed by
 *    the cloths. The particle solver (w->ps, over every device) exists only when the scene has
 *    emitters. The rest of the world reads its state on the devices, partition by partition
 *    (wf_particles_partition_view, wf_particles_copy_state): nothing goes through the host.
 *  - devices[0] == dev holds the health check's verdict and the readback ring; nothing else of
 *    the world's lives there on purpose. A solver's state, and its last-good snapshot, stay in its
 *    partitions on their own devices: health reads them through the partition views, readback
 *    gathers them on the devices (wf_particles_copy_state, wf_cloth_copy_positions_on).
 *  - health.c sees the world only through the description health_create fills (the solvers,
 *    the objects as ranges of their global ids, the scene): it never reaches into wf_world.
 *  - Every solver gets the same fps, substeps, gravity, damping and colliders (scene order), so
 *    collider indices of cloth attachments are scene indices.
 *  - w->frame counts frames enqueued. Host copies of the state (cache) are refreshed on demand
 *    and are valid while cache_frame == frame.
 *  - A checkpoint holds the frame, the particle state and clock and each cloth's state and clock:
 *    with those restored the following frames are bitwise those of an uninterrupted run (the
 *    solvers are deterministic and the wind gust is a function of the frame number). The
 *    particles' and each cloth's positions are stored as their solver holds them, relative to its
 *    origin (docs/precision.md), with the origin beside them: world positions rounded to float
 *    would not resume bitwise for a scene away from the world's origin. The host copies (ppos,
 *    cpos) hold world positions.
 *  - Over MPI ranks a checkpoint is one, at rank 0's path: with particles each rank's rows go to
 *    a piece of its own and rank 0 writes the rest as the manifest (world_checkpoint_pieces.c);
 *    a load puts the pieces' rows where a one-file checkpoint holds them, so both restore alike.
 */
#include "weft/world.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "weft/cloth.h"
#include "weft/io.h"
#include "weft/particles.h"

#include "emit.h"
#include "solvers/partition/ranks.h"
#include "world_internal.h"

/* A solver call failed: keep its message, prefixed with the object ("cloths[1] 'flag': ..."). */
static wf_status fail_object(wf_status st, const char *list, int index, const char *name) {
  char inner[900];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "%s[%d] '%s': %s", list, index, name, inner);
}

wf_world_desc wf_world_desc_default(void) {
  return (wf_world_desc){.device = NULL, .frames = 0, .mpi_comm = NULL};
}

/* ---- devices -------------------------------------------------------------------------------- */

static wf_status auto_device(wf_device **out) {
  if (wf_device_get("cuda:0", out) == WF_OK) return WF_OK;
  wf_clear_error();
  return wf_device_get("cpu:0", out);
}

/* Appends one name's devices to w->devices: "auto" one, "all" every CUDA device (else every CPU
 * device the runtime has), any other name the device it names. `where` says where the name came
 * from, for messages. */
static wf_status add_devices(wf_world *w, const char *name, const char *where) {
  wf_device *found[WFW_MAX_DEVICES];
  int n = 0;
  wf_status st = WF_OK;
  if (strcmp(name, "auto") == 0) {
    st = auto_device(&found[n++]);
  } else if (strcmp(name, "all") == 0) {
    int cuda = 0;
    for (int i = 0; i < wf_device_count(); i++)
      cuda += wf_device_is_cuda(wf_device_at(i));
    for (int i = 0; i < wf_device_count() && n < WFW_MAX_DEVICES; i++)
      if (wf_device_is_cuda(wf_device_at(i)) == (cuda > 0)) found[n++] = wf_device_at(i);
    if (n == 0) st = auto_device(&found[n++]);
  } else {
    st = wf_device_get(name, &found[n++]);
  }
  if (st != WF_OK) {
    char inner[900];
    snprintf(inner, sizeof inner, "%s", wf_last_error());
    return wf__error(st, NULL, "%s: device '%s' is not available: %s", where, name, inner);
  }
  for (int i = 0; i < n; i++) {
    if (w->n_devices == WFW_MAX_DEVICES)
      return wf__error(WF_ERR_INVALID, NULL,
                       "%s: more than %d devices: a world's particles are split over at most %d",
                       where, WFW_MAX_DEVICES, WFW_MAX_DEVICES);
    w->devices[w->n_devices++] = found[i];
  }
  return WF_OK;
}

/* The world's devices: the override (a name, "auto", "all" or a comma-separated list of names),
 * else the scene's simulation.devices, else "auto". */
static wf_status pick_devices(wf_world *w, const wf_scene *sc, const char *override) {
  w->n_devices = 0;
  wf_status st = WF_OK;
  const char *where = "simulation.devices";
  if (override) {
    where = "the device list given instead of simulation.devices";
    for (const char *p = override; st == WF_OK;) {
      size_t len = strcspn(p, ",");
      char name[64];
      if (len == 0 || len >= sizeof name)
        return wf__error(WF_ERR_INVALID, NULL,
                         "%s: '%s': expected device names separated by commas (cpu, cpu:N, cuda, "
                         "cuda:N, auto or all)",
                         where, override);
      memcpy(name, p, len);
      name[len] = '\0';
      st = add_devices(w, name, where);
      if (!p[len]) break;
      p += len + 1;
    }
  } else if (sc->simulation.device_count == 0) {
    st = add_devices(w, "auto", where);
  } else {
    for (int i = 0; i < sc->simulation.device_count && st == WF_OK; i++)
      st = add_devices(w, sc->simulation.devices[i], where);
  }
  if (st != WF_OK) return st;
  for (int i = 1; i < w->n_devices; i++)
    if (wf_device_is_cuda(w->devices[i]) != wf_device_is_cuda(w->devices[0]))
      return wf__error(WF_ERR_INVALID, NULL,
                       "%s: '%s' and '%s' are of different kinds (CPU and CUDA): the devices a "
                       "scene is split over must be all CUDA or all CPU",
                       where, wf_device_name(w->devices[0]), wf_device_name(w->devices[i]));
  w->dev = w->devices[0];
  return WF_OK;
}

/* "cpu:0 + cpu:1": the world's devices, for messages. */
static void device_list(const wf_world *w, char *out, size_t n) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < w->n_devices && at < n; i++)
    at += (size_t)snprintf(out + at, n - at, "%s%s", i ? " + " : "", wf_device_name(w->devices[i]));
}

/* ---- mapping the scene onto solver descriptions -------------------------------------------- */

static void f3(float *dst, const double *src) {
  for (int k = 0; k < 3; k++)
    dst[k] = (float)src[k];
}

wf_collider_desc wfw_collider_of(const wf_scene_collider *c) {
  wf_collider_desc d = wf_collider_desc_default();
  d.name = c->name;
  d.type = (int)c->type;
  double n =
      sqrt(c->normal[0] * c->normal[0] + c->normal[1] * c->normal[1] + c->normal[2] * c->normal[2]);
  if (!(n > 0.0)) n = 1.0;
  /* the scene's plane normal need not be unit length: dot(n, x) = offset scales with it */
  for (int k = 0; k < 3; k++)
    d.normal[k] = (float)(c->normal[k] / n);
  d.offset = (float)(c->offset / n);
  f3(d.center, c->center);
  d.radius = (float)c->radius;
  f3(d.half_extents, c->half_extents);
  f3(d.p0, c->p0);
  f3(d.p1, c->p1);
  f3(d.velocity, c->velocity);
  d.friction = (float)c->friction;
  d.restitution = (float)c->restitution;
  d.stiffness = (float)c->stiffness;
  d.mesh = c->mesh_data;
  d.thickness = (float)c->thickness;
  f3(d.pivot, c->pivot);
  double a =
      sqrt(c->rotation_axis[0] * c->rotation_axis[0] + c->rotation_axis[1] * c->rotation_axis[1] +
           c->rotation_axis[2] * c->rotation_axis[2]);
  if (!(a > 0.0)) a = 1.0;
  for (int k = 0; k < 3; k++)
    d.angular_velocity[k] = (float)(c->rotation_rate * c->rotation_axis[k] / a);
  d.keys = c->keys;
  d.key_count = (uint32_t)c->key_count;
  d.active_from = (float)c->active_from;
  d.active_until = isfinite(c->active_until) ? (float)c->active_until : 0.0f;
  return d;
}

static int contact_model_of(const wf_scene *sc) {
  switch (sc->simulation.contact_model) {
  case WF_SCENE_CONTACT_XPBD: return WF_CONTACT_XPBD;
  case WF_SCENE_CONTACT_HERTZ: return WF_CONTACT_HERTZ;
  default: return WF_CONTACT_DEM;
  }
}

static wf_particle_material material_of(const wf_scene_material *m) {
  wf_particle_material p = wf_particle_material_default();
  p.stiffness = (float)m->stiffness;
  p.damping = (float)m->damping;
  p.restitution = (float)m->restitution;
  p.friction = (float)m->friction;
  p.tangential = (float)m->tangential;
  p.cohesion = (float)m->cohesion;
  p.static_friction = (float)m->static_friction;
  p.rolling_friction = (float)m->rolling_friction;
  p.young = (float)m->young;
  p.poisson = (float)m->poisson;
  p.tangential_ratio = (float)m->tangential_ratio;
  return p;
}

static wf_particles_emitter emitter_of(const wf_scene_emitter *e) {
  wf_particles_emitter p = wf_particles_emitter_default();
  p.name = e->name;
  p.shape = e->shape == WF_SCENE_SHAPE_SPHERE ? WF_EMIT_SPHERE : WF_EMIT_BOX;
  f3(p.center, e->center);
  f3(p.half_extents, e->half_extents);
  p.sphere_radius = (float)e->sphere_radius;
  p.radius = (float)e->radius;
  p.spacing = (float)e->spacing;
  p.jitter = (float)e->jitter;
  p.seed = e->seed;
  f3(p.velocity, e->velocity);
  p.density = (float)e->density;
  p.mass = (float)e->mass;
  p.kinematic = e->kinematic;
  p.material = e->material;
  return p;
}

/* R = Rz Ry Rx (degrees): about x first, then y, then z. */
static void rotation_matrix(const double deg[3], double r[3][3]) {
  double a = deg[0] * WFW_PI / 180.0, b = deg[1] * WFW_PI / 180.0, c = deg[2] * WFW_PI / 180.0;
  double ca = cos(a), sa = sin(a), cb = cos(b), sb = sin(b), cc = cos(c), sc = sin(c);
  double rx[3][3] = {{1, 0, 0}, {0, ca, -sa}, {0, sa, ca}};
  double ry[3][3] = {{cb, 0, sb}, {0, 1, 0}, {-sb, 0, cb}};
  double rz[3][3] = {{cc, -sc, 0}, {sc, cc, 0}, {0, 0, 1}};
  double t[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      t[i][j] = 0.0;
      for (int k = 0; k < 3; k++)
        t[i][j] += ry[i][k] * rx[k][j];
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      r[i][j] = 0.0;
      for (int k = 0; k < 3; k++)
        r[i][j] += rz[i][k] * t[k][j];
    }
}

/* A scene cloth's solver settings (the world's stream and devices are the caller's to add). */
static wf_cloth_desc cloth_desc_of(const wf_scene *sc, const wf_scene_cloth *c) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = c->name;
  d.integrator = c->integrator == WF_SCENE_CLOTH_SPRING ? WF_CLOTH_SPRINGS : WF_CLOTH_XPBD;
  d.substeps = sc->simulation.substeps;
  d.iterations = c->iterations;
  d.frame_dt = (float)(1.0 / sc->simulation.fps);
  f3(d.gravity, sc->simulation.gravity);
  f3(d.wind, sc->forces.wind);
  d.air_density = (float)sc->forces.air_density;
  d.damping = (float)sc->simulation.damping;
  d.self_collision = c->self_collision;
  d.contact = c->contact;
  d.contact_static_friction = (float)c->contact_static_friction;
  d.contact_dynamic_friction = (float)c->contact_dynamic_friction;
  wf_cloth_material m = wf_cloth_material_default();
  const wf_scene_cloth_material *s = &c->material;
  m.density = (float)s->density;
  m.particle_mass = (float)s->mass;
  m.thickness = (float)s->thickness;
  m.stretch_modulus = (float)s->stretch_modulus;
  m.shear_modulus = (float)s->shear_modulus;
  m.bend_rigidity = (float)s->bend_rigidity;
  m.damping_time = (float)s->damping_time;
  m.friction = (float)s->friction;
  m.drag = (float)sc->forces.drag;
  m.lift = (float)sc->forces.lift;
  d.material = m;
  return d;
}

static const char *const pin_names[] = {"top-left", "top-right", "bottom-left", "bottom-right",
                                        "top",      "bottom",    "left",        "right"};

/* Attaches the vertices of a named part of a grid cloth (solver numbering) to a collider. */
static wf_status attach_named(wf_cloth *cl, const wf_scene_cloth *c, wf_scene_pin_name name,
                              uint32_t collider) {
  uint32_t nu = (uint32_t)c->resolution[0], nv = (uint32_t)c->resolution[1];
  uint32_t i0 = 0, i1 = nu - 1, j0 = 0, j1 = nv - 1; /* rows j: 0 = top */
  switch (name) {
  case WF_SCENE_PIN_TOP_LEFT: i1 = 0, j1 = 0; break;
  case WF_SCENE_PIN_TOP_RIGHT: i0 = nu - 1, j1 = 0; break;
  case WF_SCENE_PIN_BOTTOM_LEFT: i1 = 0, j0 = nv - 1; break;
  case WF_SCENE_PIN_BOTTOM_RIGHT: i0 = nu - 1, j0 = nv - 1; break;
  case WF_SCENE_PIN_TOP: j1 = 0; break;
  case WF_SCENE_PIN_BOTTOM: j0 = nv - 1; break;
  case WF_SCENE_PIN_LEFT: i1 = 0; break;
  case WF_SCENE_PIN_RIGHT: i0 = nu - 1; break;
  }
  for (uint32_t j = j0; j <= j1; j++)
    for (uint32_t i = i0; i <= i1; i++) {
      wf_status st = wf_cloth_attach(cl, j * nu + i, collider);
      if (st != WF_OK) return st;
    }
  return WF_OK;
}

static wf_status apply_pin(wf_cloth *cl, const wf_scene_cloth *c, const wf_scene_pin *p,
                           bool attach, uint32_t collider) {
  float lo[3], hi[3];
  switch (p->kind) {
  case WF_SCENE_PIN_VERTEX:
    /* the scene's vertex order is the solver's and the outputs' (docs/scenes.md) */
    return attach ? wf_cloth_attach(cl, p->vertex, collider) : wf_cloth_pin(cl, p->vertex);
  case WF_SCENE_PIN_NAMED:
    if (attach) {
      if (c->is_mesh)
        return wf__error(WF_ERR_INVALID, NULL, "named pins need a grid cloth (this one is a mesh)");
      return attach_named(cl, c, p->name, collider);
    }
    return wf_cloth_pin_named(cl, pin_names[p->name], NULL);
  case WF_SCENE_PIN_REGION:
    f3(lo, p->min);
    f3(hi, p->max);
    return attach ? wf_cloth_attach_region(cl, lo, hi, collider, NULL)
                  : wf_cloth_pin_region(cl, lo, hi, NULL);
  }
  return wf__error(WF_ERR_INVALID, NULL, "unknown pin kind %d", (int)p->kind);
}

/* A scene grid cloth as the solver's grid: size, resolution, center, rotation. */
static wf_cloth_grid grid_of(const wf_scene_cloth *c) {
  double r[3][3];
  rotation_matrix(c->rotation, r);
  wf_cloth_grid g = wf_cloth_grid_default();
  g.size[0] = (float)c->size[0], g.size[1] = (float)c->size[1];
  g.resolution[0] = c->resolution[0], g.resolution[1] = c->resolution[1];
  f3(g.center, c->center);
  for (int k = 0; k < 3; k++)
    g.u_axis[k] = (float)r[k][0], g.v_axis[k] = (float)r[k][1];
  return g;
}

/* A scene mesh cloth as the solver's mesh: the OBJ rotated, then moved to the center. */
static wf_cloth_mesh_desc mesh_of(const wf_scene_cloth *c) {
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.path = c->mesh_path;
  rotation_matrix(c->rotation, md.rotation);
  f3(md.translate, c->center);
  return md;
}

/* ---- cloths: where they run ------------------------------------------------------------------
 * Every cloth is one wf_cloth: over all the world's devices (with `contact` too: each partition
 * then sees every vertex's positions, cloth_parts.h), except a cloth with self-collision, whose
 * vertex grid spans the whole cloth, and the cloths of a contact group, which runs on one
 * device: those run whole on the first (cloth_devices decides). The rest of the world reads a
 * cloth through its partition views (health) or gathers it on the devices
 * (wf_cloth_copy_positions_on, readback), as it does the particles. */

/* The cloths of the contact group (simulation.cloth_collision): those with `contact`. */
static bool grouped(const wf_scene *sc, int i) {
  return sc->simulation.cloth_collision && sc->cloths[i].contact;
}

/* Over MPI ranks a split cloth's partitions (the world's devices) are shared by the ranks as the
 * particles' are (wf_cloth_desc.mpi_comm). A cloth that is not split runs whole on every rank
 * (the same bits on every rank), and so does every cloth when the ranks outnumber the devices
 * (each rank needs a partition). */
static int cloth_devices(const wf_world *w, const wf_scene *sc, int i) {
  if (sc->cloths[i].self_collision || grouped(sc, i)) return 1;
  int ranks = 1, rank = 0;
  if (w->mpi_comm && wfpt_comm_size(w->mpi_comm, &ranks, &rank) != WF_OK) ranks = w->n_devices + 1;
  return ranks > w->n_devices ? 1 : w->n_devices;
}

static const char *cloth_name(const wf_world *w, int i) {
  return w->objects[w->n_objects - w->n_cloths + i].name;
}

/* The solver of scene cloth i over its devices (the first cloth_devices of the world's). The
 * cloths of a contact group share the first one's origin (wf_cloth_group_create needs it). */
static wf_status cloth_solver(wf_world *w, const wf_scene *sc, int i) {
  const wf_scene_cloth *c = &sc->cloths[i];
  wf_cloth_desc d = cloth_desc_of(sc, c);
  for (int j = 0; j < i && grouped(sc, i); j++)
    if (grouped(sc, j)) {
      wf_status st = wf_cloth_origin(w->cloths[j], d.origin);
      if (st != WF_OK) return st;
      d.origin_given = true;
      break;
    }
  d.stream = w->stream; /* shared with the particle solver when coupled, else NULL */
  d.device_count = cloth_devices(w, sc, i);
  for (int k = 0; k < d.device_count; k++)
    d.devices[k] = w->devices[k];
  if (d.device_count > 1) d.mpi_comm = w->mpi_comm, d.mpi_halo = w->mpi_halo;
  if (!c->is_mesh) {
    wf_cloth_grid g = grid_of(c);
    return wf_cloth_create_grid(&d, &g, &w->cloths[i]);
  }
  wf_cloth_mesh_desc md = mesh_of(c);
  return wf_cloth_create_mesh(&d, &md, &w->cloths[i]);
}

wf_status wf_scene_cloth_stability(const wf_scene *sc, int i, wf_cloth_stability *out, char *msg,
                                   size_t size) {
  static const char fn[] = "wf_scene_cloth_stability";
  if (!sc || !out || i < 0 || i >= sc->cloth_count)
    return wf__error(WF_ERR_INVALID, fn, "scene or out is NULL, or cloth %d is not in the scene",
                     i);
  const wf_scene_cloth *c = &sc->cloths[i];
  wf_cloth_desc d = cloth_desc_of(sc, c);
  wf_status st;
  if (!c->is_mesh) {
    wf_cloth_grid g = grid_of(c);
    st = wf_cloth_stability_grid(&d, &g, out);
  } else {
    wf_cloth_mesh_desc md = mesh_of(c);
    st = wf_cloth_stability_mesh(&d, &md, out);
  }
  if (msg && size) msg[0] = 0;
  if (st == WF_OK && !out->stable && msg && size)
    snprintf(msg, size,
             "cloth '%s': the mass-spring step %.3g s is past the explicit stability limit %.3g s "
             "(set by vertex %u): use at least %d substeps per frame (simulation.substeps, now "
             "%d), or softer moduli, or the xpbd integrator",
             c->name, (double)out->dt, (double)out->dt_max, out->vertex, out->substeps_needed,
             d.substeps);
  return st;
}

wf_status wf_scene_particle_stability(const wf_scene *sc, int i, wf_particles_stability_result *out,
                                      char *msg, size_t size) {
  static const char fn[] = "wf_scene_particle_stability";
  if (!sc || !out || i < 0 || i >= sc->emitter_count)
    return wf__error(WF_ERR_INVALID, fn, "scene or out is NULL, or emitter %d is not in the scene",
                     i);
  const wf_scene_emitter *e = &sc->emitters[i];
  const wf_scene_material *sm = &sc->materials[e->material];
  wf_particles_desc d = wf_particles_desc_default();
  d.substeps = sc->simulation.substeps;
  d.frame_dt = (float)(1.0 / sc->simulation.fps);
  d.contact_model = contact_model_of(sc);
  wf_particle_material m = material_of(sm);
  /* the smallest particle has the shortest contact (a file's radii are known at run time only) */
  double r = e->radius_distribution == WF_SCENE_RADII_FIXED ? e->radius : e->radius_min;
  double mass = e->mass > 0 ? e->mass : e->density * 4.0 / 3.0 * M_PI * r * r * r;
  wf_status st = wf_particles_stability(&d, &m, r, mass, 0.0, out);
  if (msg && size) msg[0] = 0;
  if (st == WF_OK && !out->ok && msg && size)
    snprintf(msg, size,
             "particles '%s' (material '%s'): a contact lasts %.3g s (tangential %.3g s), fewer "
             "than 10 substeps of %.3g s: use at least %d substeps per frame (simulation.substeps, "
             "now %d), or a softer material",
             e->name, sm->name, out->contact_time, out->tangential_time,
             (double)d.frame_dt / d.substeps, out->substeps_needed, d.substeps);
  return st;
}

static wf_status group_error(wf_status st) {
  char inner[900];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "simulation.cloth_collision: %s", inner);
}

/* simulation.cloth_collision: the cloths with `contact` in one contact group, with the least
 * friction of theirs (the slipperier surface governs the pair). */
static wf_status create_group(wf_world *w, const wf_scene *sc) {
  if (!sc->simulation.cloth_collision) return WF_OK;
  wf_cloth **members = calloc((size_t)sc->cloth_count + 1, sizeof *members);
  w->in_group = calloc((size_t)sc->cloth_count + 1, sizeof *w->in_group);
  if (!members || !w->in_group) {
    free(members);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  }
  wf_cloth_group_desc gd = wf_cloth_group_desc_default();
  uint32_t n = 0;
  for (int i = 0; i < sc->cloth_count; i++) {
    if (!grouped(sc, i)) continue;
    const wf_scene_cloth *c = &sc->cloths[i];
    if (n == 0 || c->contact_static_friction < gd.static_friction)
      gd.static_friction = (float)c->contact_static_friction;
    if (n == 0 || c->contact_dynamic_friction < gd.dynamic_friction)
      gd.dynamic_friction = (float)c->contact_dynamic_friction;
    members[n++] = w->cloths[i];
    w->in_group[i] = true;
  }
  wf_status st = WF_OK;
  if (n && w->stream)
    st = wf__error(WF_ERR_INVALID, NULL,
                   "cloths in contact with each other cannot also be coupled to particles (the "
                   "particle frames step coupled cloths); set simulation.coupling to false");
  if (st == WF_OK && n) st = wf_cloth_group_create(members, n, &gd, &w->cgroup);
  free(members);
  return st == WF_OK ? WF_OK : group_error(st);
}

static wf_status create_cloth(wf_world *w, const wf_scene *sc, int i) {
  const wf_scene_cloth *c = &sc->cloths[i];
  wf_status st = cloth_solver(w, sc, i);
  if (st != WF_OK) return fail_object(st, "cloths", i, c->name);
  wf_cloth *cl = w->cloths[i];
  for (int k = 0; k < sc->collider_count && st == WF_OK; k++) {
    wf_collider_desc cd = wfw_collider_of(&sc->colliders[k]);
    st = wf_cloth_add_collider(cl, &cd, NULL);
  }
  for (int p = 0; p < c->pin_count && st == WF_OK; p++)
    st = apply_pin(cl, c, &c->pins[p], false, 0);
  for (int a = 0; a < c->attachment_count && st == WF_OK; a++)
    for (int p = 0; p < c->attachments[a].pin_count && st == WF_OK; p++)
      st = apply_pin(cl, c, &c->attachments[a].pins[p], true, c->attachments[a].collider);
  if (st == WF_OK && w->stream && w->ps) st = wf_cloth_couple(cl, w->ps); /* 2-way */
  if (st != WF_OK) return fail_object(st, "cloths", i, c->name);
  return WF_OK;
}

/* ---- the particle side: one solver, or one split over the world's devices ------------------- */

/* An emitter's particles: the solver's own lattice where it makes them (a box or a sphere of one
 * radius), else those engine/emit.c makes on the host (weft/scene.h: wf_scene_emitter_points). */
static wf_status emit(wf_particles *ps, const wf_scene_emitter *se, wfw_object *o) {
  if (wfe_solver_lattice(se)) {
    wf_particles_emitter e = emitter_of(se);
    return wf_particles_emit(ps, &e, &o->first, &o->count);
  }
  uint64_t n = wf_scene_emitter_count(se);
  if (n == 0 || n > (1u << 30))
    return wf__error(WF_ERR_INVALID, NULL, "%llu particles: an emitter makes 1 to 2^30",
                     (unsigned long long)n);
  bool pour = wfe_pours(se);
  float(*pos)[4] = malloc((size_t)n * 16), (*vel)[4] = malloc((size_t)n * 16);
  float *birth = pour ? malloc((size_t)n * sizeof *birth) : NULL;
  /* placed relative to the particles' origin in double (docs/precision.md): the first emitter's
   * picks it (its centre, rounded to whole metres), later ones take the solver's */
  uint32_t have = wf_particles_count(ps);
  double origin[3] = {0.0, 0.0, 0.0};
  wf_status st = have > 0 ? wf_particles_origin(ps, origin) : WF_OK;
  if (st == WF_OK)
    st = pos && vel && (birth || !pour)
             ? wfe_points_at(se, have, have > 0 ? origin : NULL, origin, pos, vel, birth, n)
             : wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "out of host memory");
  /* a pour's particles are all there from the start, waiting on its feed line for their births:
   * the count, and the captured frame, stay as they are while it pours */
  if (st == WF_OK)
    st = wf_particles_add_relative(ps, origin, (uint32_t)n, (const float(*)[4])pos,
                                   (const float(*)[4])vel, birth, se->material, &o->first);
  if (st == WF_OK) o->count = (uint32_t)n;
  if (st == WF_OK && pour) o->pour_start = se->start, o->pour_rate = se->rate;
  free(pos), free(vel), free(birth);
  return st;
}

static wf_status create_particles(wf_world *w, const wf_scene *sc) {
  uint64_t estimate = 0;
  for (int i = 0; i < sc->emitter_count; i++)
    estimate += wf_scene_emitter_count(&sc->emitters[i]);
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "particles";
  d.capacity = estimate > 0 && estimate < (1u << 30) ? (uint32_t)estimate : 0;
  d.substeps = w->substeps;
  d.frame_dt = (float)(1.0 / w->fps);
  f3(d.gravity, sc->simulation.gravity);
  d.damping = (float)sc->simulation.damping;
  d.contact_model = contact_model_of(sc);
  d.stream = w->stream;
  for (int i = 0; i < w->n_devices; i++)
    d.devices[i] = w->devices[i];
  d.device_count = w->n_devices;
  d.mpi_comm = w->mpi_comm;
  d.mpi_halo = w->mpi_halo;
  wf_status st = wf_particles_create(&d, &w->ps);
  if (st != WF_OK) return st;
  w->n_pmats = sc->material_count > 0 ? sc->material_count : 1;
  w->pmats = calloc((size_t)w->n_pmats, sizeof *w->pmats);
  w->pmat_names = calloc((size_t)w->n_pmats, sizeof *w->pmat_names);
  if (!w->pmats || !w->pmat_names)
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "materials");
  w->pmats[0] = wf_particle_material_default();
  snprintf(w->pmat_names[0], sizeof w->pmat_names[0], "default");
  for (int i = 0; i < sc->material_count && st == WF_OK; i++) {
    wf_particle_material m = material_of(&sc->materials[i]);
    w->pmats[i] = m;
    snprintf(w->pmat_names[i], sizeof w->pmat_names[i], "%s", sc->materials[i].name);
    st = i == 0 ? wf_particles_set_material(w->ps, 0, &m)
                : wf_particles_add_material(w->ps, &m, NULL);
    if (st != WF_OK) return fail_object(st, "materials", i, sc->materials[i].name);
  }
  for (int i = 0; i < sc->collider_count; i++) {
    wf_collider_desc cd = wfw_collider_of(&sc->colliders[i]);
    st = wf_particles_add_collider(w->ps, &cd, NULL);
    if (st != WF_OK) return fail_object(st, "colliders", i, sc->colliders[i].name);
  }
  for (int i = 0; i < sc->emitter_count; i++) {
    st = emit(w->ps, &sc->emitters[i], &w->objects[i]);
    if (st != WF_OK) return fail_object(st, "particles", i, sc->emitters[i].name);
  }
  w->n_particles = wf_particles_count(w->ps);
  return WF_OK;
}

/* ---- health: what the check reads ----------------------------------------------------------- */

/* The health check over the world's solvers (sources: the particles, then each cloth) and
 * objects (in the world's order), starting from frame w->frame. */
static wf_status health_create(wf_world *w, const wf_scene *sc) {
  wfw_health_source *src = calloc((size_t)w->n_cloths + 1, sizeof *src);
  wfw_health_object *obj = calloc((size_t)w->n_objects + 1, sizeof *obj);
  wf_status st = WF_OK;
  if (!src || !obj) st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  int n = 0;
  if (st == WF_OK && w->ps) src[n++] = (wfw_health_source){.ps = w->ps, .count = w->n_particles};
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++)
    src[n++] = (wfw_health_source){.cloth = w->cloths[i],
                                   .count = wf_cloth_count(w->cloths[i]),
                                   .thickness = (float)sc->cloths[i].material.thickness};
  for (int o = 0; o < w->n_objects && st == WF_OK; o++) {
    const wfw_object *ob = &w->objects[o];
    int s = ob->kind == WF_WORLD_CLOTH ? (w->ps ? 1 : 0) + ob->cloth : 0;
    obj[o] = (wfw_health_object){ob->name, s, ob->first, ob->count};
  }
  wfw_health_desc d = {.device = w->dev,
                       .scene = sc,
                       .fps = w->fps,
                       .frame = w->frame,
                       .n_sources = n,
                       .sources = src,
                       .n_objects = w->n_objects,
                       .objects = obj,
                       .mpi_comm = w->mpi_comm};
  if (st == WF_OK) st = wfw_health_create(&d, &w->health);
  free(src), free(obj);
  return st;
}

wf_status wf_world_create(const wf_scene *sc, const wf_world_desc *desc, wf_world **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_world_create", "out is NULL");
  *out = NULL;
  if (!sc) return wf__error(WF_ERR_INVALID, "wf_world_create", "scene is NULL");
  wf_world_desc dd = desc ? *desc : wf_world_desc_default();
  if (dd.frames < 0)
    return wf__error(WF_ERR_INVALID, "wf_world_create", "frames %d must be >= 0", dd.frames);
  wf_world *w = calloc(1, sizeof *w);
  if (!w) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  w->fps = sc->simulation.fps;
  w->substeps = sc->simulation.substeps;
  w->frames = dd.frames > 0 ? dd.frames : sc->simulation.frames;
  for (int k = 0; k < 3; k++)
    w->gravity[k] = sc->simulation.gravity[k], w->wind[k] = sc->forces.wind[k];
  w->gust_amplitude = sc->forces.gust_amplitude;
  w->gust_frequency = sc->forces.gust_frequency;
  w->max_speed = sc->simulation.max_speed;
  w->cache_frame = -1;
  w->mpi_comm = dd.mpi_comm;
  w->mpi_halo = dd.mpi_halo;
  w->n_stop = sc->simulation.stop_count;
  memcpy(w->stop_rules, sc->simulation.stop_when, sizeof w->stop_rules);
  w->stop.rule = -1;
  w->n_cloths = sc->cloth_count;
  w->n_objects = sc->emitter_count + sc->cloth_count;
  w->objects = calloc((size_t)w->n_objects + 1, sizeof *w->objects);
  w->cloths = calloc((size_t)w->n_cloths + 1, sizeof *w->cloths);
  w->cpos = calloc((size_t)w->n_cloths + 1, sizeof *w->cpos);
  w->cvel = calloc((size_t)w->n_cloths + 1, sizeof *w->cvel);
  w->scene_json = wf_scene_to_json(sc);
  w->physics_json = wfw_scene_physics_json(sc);
  w->resume.changes = w->resume_changes;
  w->n_colliders = sc->collider_count;
  w->collider_names = calloc((size_t)sc->collider_count + 1, sizeof *w->collider_names);
  for (int k = 0; w->collider_names && k < sc->collider_count; k++)
    snprintf(w->collider_names[k], sizeof w->collider_names[k], "%s", sc->colliders[k].name);
  wf_status st = WF_OK;
  if (!w->objects || !w->cloths || !w->cpos || !w->cvel || !w->scene_json || !w->physics_json ||
      !w->collider_names)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  if (st == WF_OK) st = pick_devices(w, sc, dd.device);
  char devices[WFW_MAX_DEVICES * 12 + 16] = "the device";
  if (st == WF_OK) device_list(w, devices, sizeof devices);
  bool coupled = sc->simulation.coupling && sc->emitter_count > 0 && sc->cloth_count > 0;
  if (st == WF_OK && coupled && w->n_devices > 1)
    st = wf__error(WF_ERR_INVALID, NULL,
                   "simulation.coupling: cloths and particles cannot be coupled on several "
                   "devices (simulation.devices: %s): the particles and the cloths are split over "
                   "them, each on its own. Set simulation.coupling to false, or run on one device",
                   devices);
  for (int i = 0; i < sc->emitter_count && st == WF_OK; i++) {
    snprintf(w->objects[i].name, sizeof w->objects[i].name, "%s", sc->emitters[i].name);
    w->objects[i].kind = WF_WORLD_PARTICLES;
    w->objects[i].cloth = -1;
  }
  /* cloths and particles coupled: one stream, whose particle frames step the cloths too */
  if (st == WF_OK && coupled) st = wf_stream_create(w->dev, 0, &w->stream);
  if (st == WF_OK && sc->emitter_count > 0) st = create_particles(w, sc);
  for (int i = 0; i < sc->cloth_count && st == WF_OK; i++) {
    st = create_cloth(w, sc, i);
    if (st != WF_OK) break;
    wfw_object *o = &w->objects[sc->emitter_count + i];
    snprintf(o->name, sizeof o->name, "%s", sc->cloths[i].name);
    o->kind = WF_WORLD_CLOTH;
    o->cloth = i;
    o->count = wf_cloth_count(w->cloths[i]);
  }
  if (st == WF_OK && w->n_particles) {
    w->ppos = malloc((size_t)w->n_particles * 16);
    w->pvel = malloc((size_t)w->n_particles * 16);
    if (!w->ppos || !w->pvel)
      st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  }
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++) {
    size_t n = w->objects[sc->emitter_count + i].count;
    w->cpos[i] = malloc(n * 16 + 16);
    w->cvel[i] = malloc(n * 16 + 16);
    if (!w->cpos[i] || !w->cvel[i])
      st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_create", "out of host memory");
  }
  if (st == WF_OK) st = create_group(w, sc);
  if (st == WF_OK) st = health_create(w, sc);
  if (st != WF_OK) {
    wf_device *devs[WFW_MAX_DEVICES];
    int n_devs = w->n_devices;
    memcpy(devs, w->devices, sizeof devs);
    char msg[2048];
    if (st == WF_ERR_OUT_OF_MEMORY) wfw_oom_advice(sc, devices, n_devs > 1);
    snprintf(msg, sizeof msg, "%s", wf_last_error());
    wf_world_destroy(w);
    /* give what the failed creation took back to the driver too, not only to weft's pool */
    for (int i = 0; i < n_devs; i++)
      wf_device_trim(devs[i]);
    return wf__error(st, NULL, "%s", msg);
  }
  *out = w;
  return WF_OK;
}

void wf_world_destroy(wf_world *w) {
  if (!w) return;
  wfw_health_destroy(w->health);     /* first: it reads the solvers' partitions */
  wf_cloth_group_destroy(w->cgroup); /* before its cloths */
  free(w->in_group);
  wf_particles_destroy(w->ps);
  for (int i = 0; i < w->n_cloths; i++) {
    if (w->cloths) wf_cloth_destroy(w->cloths[i]);
    if (w->cpos) free(w->cpos[i]);
    if (w->cvel) free(w->cvel[i]);
  }
  free(w->cloths), free(w->cpos), free(w->cvel);
  if (w->stream) wf_stream_destroy(w->stream); /* after the solvers that ran on it */
  free(w->ppos), free(w->pvel);
  free(w->pmats), free(w->pmat_names);
  free(w->objects);
  free(w->scene_json);
  free(w->physics_json);
  free(w->collider_names);
  free(w);
}

/* ---- stepping ------------------------------------------------------------------------------- */

/* The wind during frame f: the mean plus a sinusoidal gust along the mean direction (+x when the
 * mean is zero), evaluated at the frame's start so that it depends only on the frame number. */
static void wind_at(const wf_world *w, int64_t f, float out[3]) {
  double n = sqrt(w->wind[0] * w->wind[0] + w->wind[1] * w->wind[1] + w->wind[2] * w->wind[2]);
  double dir[3] = {1.0, 0.0, 0.0};
  if (n > 0.0)
    for (int k = 0; k < 3; k++)
      dir[k] = w->wind[k] / n;
  double t = (double)f / w->fps;
  double g = w->gust_amplitude * sin(2.0 * WFW_PI * w->gust_frequency * t);
  for (int k = 0; k < 3; k++)
    out[k] = (float)(w->wind[k] + g * dir[k]);
}

/* Over MPI ranks: a status every rank agrees on (one allreduce a frame). A rank that failed keeps
 * its own message; the others fail naming the lowest rank that did, so every rank stops at the
 * same frame, between frames, instead of waiting for a halo that never comes. */
static wf_status agree(wf_world *w, wf_status st) {
  if (!w->mpi_comm) return st;
  int failed = -1;
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", st != WF_OK ? wf_last_error() : "");
  wf_status st2 = wfpt_comm_agree(w->mpi_comm, st != WF_OK, &failed);
  int size = 1, rank = 0;
  wfpt_comm_size(w->mpi_comm, &size, &rank);
  if (st != WF_OK) return wf__error(st, NULL, "MPI rank %d of %d: %s", rank, size, mine);
  if (st2 != WF_OK) return st2;
  if (failed >= 0)
    return wf__error(WF_ERR_DEVICE, NULL,
                     "MPI rank %d failed at frame %lld (see its message); every rank stops", failed,
                     (long long)w->frame);
  return WF_OK;
}

wf_status wf_world_step(wf_world *w, int frames) {
  if (!w) return wf__error(WF_ERR_INVALID, "wf_world_step", "world is NULL");
  if (frames < 0) return wf__error(WF_ERR_INVALID, "wf_world_step", "frames %d < 0", frames);
  bool gusty = w->gust_amplitude > 0.0 && w->gust_frequency > 0.0;
  wf_status st = wfw_health_read(w->health, w->frame, false); /* an unhealthy frame stops it */
  if ((st = agree(w, st)) != WF_OK) return st;
  for (int f = 0; f < frames && w->stop.rule < 0; f++) { /* a stop rule ends the run */
    if (w->drag.active && (st = wfw_drag_apply(w)) != WF_OK) return st;
    for (int i = 0; i < w->n_cloths && gusty; i++) { /* before the frame of coupled cloths */
      wf_cloth_params p = wf_cloth_params_get(w->cloths[i]);
      wind_at(w, w->frame, p.wind);
      if ((st = wf_cloth_params_set(w->cloths[i], &p)) != WF_OK)
        return fail_object(st, "cloths", i, cloth_name(w, i));
    }
    if (w->ps && (st = wf_particles_step_frames(w->ps, 1)) != WF_OK)
      return fail_object(st, "particles", 0, "particles");
    for (int i = 0; i < w->n_cloths && !w->stream; i++) { /* coupled: stepped by the particles */
      if (w->in_group && w->in_group[i]) continue;        /* stepped by the contact group */
      if ((st = wf_cloth_step_frames(w->cloths[i], 1)) != WF_OK)
        return fail_object(st, "cloths", i, cloth_name(w, i));
    }
    if (w->cgroup && (st = wf_cloth_group_step_frames(w->cgroup, 1)) != WF_OK)
      return group_error(st);
    w->frame++;
    st = wfw_health_after_frame(w->health, w->frame);
    if (st == WF_OK) st = wfw_stop_after_frame(w);
    if ((st = agree(w, st)) != WF_OK) return st;
  }
  return WF_OK;
}

/* Downloads every solver's state into the host copies unless they are current. */
static wf_status refresh(wf_world *w) {
  if (w->cache_frame == w->frame) return WF_OK;
  wf_status st;
  if (w->ps && (st = wf_particles_download(w->ps, w->ppos, w->pvel)) != WF_OK)
    return fail_object(st, "particles", 0, "particles");
  int first = w->n_objects - w->n_cloths;
  for (int i = 0; i < w->n_cloths; i++)
    if ((st = wf_cloth_download(w->cloths[i], w->cpos[i], w->cvel[i])) != WF_OK)
      return fail_object(st, "cloths", i, w->objects[first + i].name);
  w->cache_frame = w->frame;
  return WF_OK;
}

wf_status wf_world_stats_get(wf_world *w, wf_world_stats *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_stats_get", "NULL argument");
  memset(out, 0, sizeof *out);
  wf_status st = refresh(w);
  if (st != WF_OK) return st;
  out->frame = w->frame;
  out->time = (double)w->frame / w->fps;
  out->object_count = w->n_objects;
  out->particle_count = w->n_particles;
  for (int i = 0; i < w->n_objects; i++) {
    const wfw_object *o = &w->objects[i];
    const float(*pos)[4] = o->kind == WF_WORLD_CLOTH ? w->cpos[o->cloth] : w->ppos + o->first;
    const float(*vel)[4] = o->kind == WF_WORLD_CLOTH ? w->cvel[o->cloth] : w->pvel + o->first;
    if (o->kind == WF_WORLD_CLOTH) out->vertex_count += o->count;
    for (uint32_t j = 0; j < o->count; j++) {
      /* inverse mass: vel.w for particles, pos.w for cloth vertices */
      float im = o->kind == WF_WORLD_CLOTH ? pos[j][3] : vel[j][3];
      double s2 = 0.0;
      for (int k = 0; k < 3; k++)
        s2 += (double)vel[j][k] * vel[j][k];
      out->max_speed = fmax(out->max_speed, sqrt(s2));
      if (!(im > 0.0f)) continue;
      double m = 1.0 / im;
      for (int k = 0; k < 3; k++)
        out->momentum[k] += m * vel[j][k];
    }
  }
  wf_world_energy e;
  if ((st = wf_world_energy_get(w, NULL, &e)) != WF_OK) return st;
  out->kinetic_energy = e.kinetic, out->potential_energy = e.potential;
  out->elastic_energy = e.elastic, out->total_energy = e.total;
  out->rotational_energy = e.rotational;
  return WF_OK;
}

wf_status wf_world_check(wf_world *w) {
  if (!w) return wf__error(WF_ERR_INVALID, "wf_world_check", "world is NULL");
  return wfw_health_read(w->health, w->frame, true); /* every frame's checks (health.c) */
}

/* ---- accessors ------------------------------------------------------------------------------ */

int64_t wf_world_frame(const wf_world *w) { return w ? w->frame : 0; }
int wf_world_frames(const wf_world *w) { return w ? w->frames : 0; }
double wf_world_frame_dt(const wf_world *w) { return w ? 1.0 / w->fps : 0.0; }
wf_device *wf_world_device(const wf_world *w) { return w ? w->dev : NULL; }
int wf_world_device_count(const wf_world *w) { return w ? w->n_devices : 0; }

wf_device *wf_world_device_at(const wf_world *w, int i) {
  return w && i >= 0 && i < w->n_devices ? w->devices[i] : NULL;
}

wf_status wf_world_placement_get(const wf_world *w, int i, wf_world_placement *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_placement_get", "NULL argument");
  if (i < 0 || i >= w->n_devices)
    return wf__error(WF_ERR_INVALID, "wf_world_placement_get",
                     "device %d out of range (%d devices)", i, w->n_devices);
  memset(out, 0, sizeof *out);
  out->device = w->devices[i];
  out->split = w->ps && wf_particles_partition_count(w->ps) > 1;
  if (w->ps && i < wf_particles_partition_count(w->ps)) {
    wf_particles_info info;
    wf_status st = wf_particles_info_get(w->ps, &info);
    if (st != WF_OK) return st;
    out->particles = info.owned[i]; /* before the first frame: all in partition 0 */
    out->ghosts = info.ghosts[i];
    out->device_bytes = info.device_bytes[i];
  }
  for (int c = 0; c < w->n_cloths; c++) {
    wf_cloth_info ci;
    wf_status st = wf_cloth_info_get(w->cloths[c], &ci);
    if (st != WF_OK) return st;
    if ((int)ci.partitions <= i) continue; /* a one-device cloth is on the first device */
    out->cloths += ci.owned[i] > 0;
    out->whole_cloths += ci.partitions == 1;
    out->vertices += ci.owned[i];
    out->cloth_ghosts += ci.ghosts[i];
    out->cloth_bytes += ci.partition_bytes[i];
  }
  return WF_OK;
}
int wf_world_object_count(const wf_world *w) { return w ? w->n_objects : 0; }

wf_status wf_world_object_get(const wf_world *w, int index, wf_world_object *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_object_get", "NULL argument");
  if (index < 0 || index >= w->n_objects)
    return wf__error(WF_ERR_INVALID, "wf_world_object_get", "object %d out of range (%d objects)",
                     index, w->n_objects);
  const wfw_object *o = &w->objects[index];
  memset(out, 0, sizeof *out);
  out->name = o->name;
  out->kind = o->kind;
  out->point_count = o->count;
  out->first = o->first;
  if (o->kind == WF_WORLD_CLOTH) {
    out->triangles = wf_cloth_triangles(w->cloths[o->cloth], &out->triangle_count);
  }
  return WF_OK;
}

wf_status wf_world_object_download(wf_world *w, int index, float (*pos)[4], float (*vel)[4]) {
  wf_world_object info;
  wf_status st = wf_world_object_get(w, index, &info);
  if (st != WF_OK) return st;
  if ((st = refresh(w)) != WF_OK) return st;
  const wfw_object *o = &w->objects[index];
  size_t bytes = (size_t)o->count * 16;
  if (o->kind == WF_WORLD_CLOTH) {
    if (pos) memcpy(pos, w->cpos[o->cloth], bytes);
    if (vel) memcpy(vel, w->cvel[o->cloth], bytes);
  } else {
    if (pos) memcpy(pos, w->ppos + o->first, bytes);
    if (vel) memcpy(vel, w->pvel + o->first, bytes);
  }
  return WF_OK;
}

wf_status wf_world_object_download_omega(wf_world *w, int index, float (*omega)[4]) {
  wf_world_object info;
  wf_status st = wf_world_object_get(w, index, &info);
  if (st != WF_OK) return st;
  if (!omega) return wf__error(WF_ERR_INVALID, "wf_world_object_download_omega", "omega is NULL");
  if (info.kind != WF_WORLD_PARTICLES || !w->ps)
    return wf__error(WF_ERR_INVALID, "wf_world_object_download_omega",
                     "object '%s' is a cloth: it has no angular velocities", info.name);
  /* the solver gives every particle's; the object is a range of them */
  float(*all)[4] = malloc((size_t)w->n_particles * 16 + 16);
  if (!all)
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_object_download_omega",
                     "no memory for %u angular velocities", w->n_particles);
  st = wf_particles_download_omega(w->ps, all);
  if (st == WF_OK) memcpy(omega, all + info.first, (size_t)info.point_count * 16);
  free(all);
  return st != WF_OK ? fail_object(st, "particles", index, info.name) : WF_OK;
}

/* Whether cloth c runs whole on every rank of a world over MPI ranks (a cloth not split over the
 * ranks, cloth_devices: this process holds every partition) and this is not rank 0, which alone
 * owns such a cloth's vertices (so the ranks' rows stay disjoint). */
static bool cloth_rank0s(const wf_world *w, int c) {
  int ranks = 1, rank = 0;
  if (!w->mpi_comm || wfpt_comm_size(w->mpi_comm, &ranks, &rank) != WF_OK || rank == 0)
    return false;
  for (int p = 0; p < wf_cloth_partition_count(w->cloths[c]); p++)
    if (!wf_cloth_partition_is_local(w->cloths[c], p)) return false;
  return true;
}

/* A particle object's rows are the solver's owned ids within its range (both ascending); a
 * cloth's are its own owned ids (cloth-local already), or none (cloth_rank0s). */
wf_status wf_world_object_owned(wf_world *w, int index, uint32_t *rows, uint32_t *n) {
  static const char fn[] = "wf_world_object_owned";
  wf_world_object info;
  if (!n) return wf__error(WF_ERR_INVALID, fn, "n is NULL");
  *n = 0;
  wf_status st = wf_world_object_get(w, index, &info);
  if (st != WF_OK) return st;
  if (info.kind == WF_WORLD_CLOTH) {
    int c = w->objects[index].cloth;
    if (cloth_rank0s(w, c)) return WF_OK;
    st = wf_cloth_owned_ids(w->cloths[c], rows, n);
    return st != WF_OK ? fail_object(st, "cloths", c, info.name) : WF_OK;
  }
  if (!w->ps) return WF_OK; /* (no particle object without the solver) */
  uint32_t *ids = malloc((size_t)w->n_particles * sizeof *ids + 4), m = 0;
  if (!ids) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "no memory for %u ids", w->n_particles);
  st = wf_particles_owned_ids(w->ps, ids, &m);
  for (uint32_t i = 0; st == WF_OK && i < m; i++)
    if (ids[i] >= info.first && ids[i] - info.first < info.point_count) {
      if (rows) rows[*n] = ids[i] - info.first;
      (*n)++;
    }
  free(ids);
  return st != WF_OK ? fail_object(st, "particles", index, info.name) : WF_OK;
}

/* ---- checkpoints ---------------------------------------------------------------------------- */

/* Section "meta": u64 values, little-endian on the hosts weft supports. */
enum { META_VERSION, META_FRAME, META_PARTICLES, META_CLOTHS, META_SUBSTEPS, META_FPS, META_N };

/* The state's blocks, each a solver's: the particles (if any), then each cloth. Block k's
 * section prefix, host copies and rows; *cloth: its cloth, or -1 for the particles. */
static int state_blocks(const wf_world *w) { return (w->ps ? 1 : 0) + w->n_cloths; }

static size_t state_block(const wf_world *w, int k, char prefix[20], float (**pos)[4],
                          float (**vel)[4], int *cloth) {
  int i = *cloth = k - (w->ps ? 1 : 0);
  snprintf(prefix, 20, i < 0 ? "particles" : "cloth/%d", i);
  *pos = i < 0 ? w->ppos : w->cpos[i], *vel = i < 0 ? w->pvel : w->cvel[i];
  return (size_t)(i < 0 ? w->n_particles : w->objects[w->n_objects - w->n_cloths + i].count) * 16;
}

static wf_status save_state(wf_world *w, const char *path, int64_t frame, const wfw_clock *clock,
                            float (**pos)[4], float (**vel)[4], const void *granular,
                            const void *pieces, size_t pieces_bytes);

/* The state as the solvers hold it, block by block (state_block): the particles' (unless
 * particles is false: pos[0], vel[0] stay NULL) and each cloth's positions relative to their
 * origins into arrays of their own (freed by the caller). */
static wf_status local_state(wf_world *w, float (**pos)[4], float (**vel)[4], bool particles) {
  int k = 0;
  if (w->ps && !particles) {
    k++;
  } else if (w->ps) {
    size_t n = (size_t)w->n_particles;
    pos[k] = malloc(n * 32 + 32);
    if (!pos[k]) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_save", "out of host memory");
    vel[k] = pos[k] + n;
    wf_status st = wf_particles_download_local(w->ps, pos[k], vel[k]);
    k++;
    if (st != WF_OK) return fail_object(st, "particles", 0, "particles");
  }
  for (int i = 0; i < w->n_cloths; i++, k++) {
    size_t n = (size_t)w->objects[w->n_objects - w->n_cloths + i].count;
    pos[k] = malloc(n * 32 + 32);
    if (!pos[k]) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_save", "out of host memory");
    vel[k] = pos[k] + n;
    wf_status st = wf_cloth_download_local(w->cloths[i], pos[k], vel[k]);
    if (st != WF_OK) return fail_object(st, "cloths", i, cloth_name(w, i));
  }
  return WF_OK;
}

wf_status wf_world_save(wf_world *w, const char *path) {
  if (!w || !path) return wf__error(WF_ERR_INVALID, "wf_world_save", "world or path is NULL");
  /* over MPI ranks a collective writing one checkpoint at rank 0's path: with particles a piece
   * a rank beside rank 0's manifest, which holds the rest (world_checkpoint_pieces.c), so that
   * no rank reads the whole particle state; without, rank 0's one file */
  int size = 1, rank = 0;
  if (w->mpi_comm) wfpt_comm_size(w->mpi_comm, &size, &rank);
  bool ranked = size > 1, pieces = ranked && w->ps;
  char common[4096];
  wf_status st = ranked ? wfw_ckpt_path_agree(w, path, common, sizeof common) : WF_OK;
  if (ranked) path = common;
  if (st == WF_OK && !pieces) st = refresh(w);
  if (st != WF_OK) return st;
  int n = state_blocks(w);
  wfw_clock *clock = calloc((size_t)n + 1, sizeof *clock);
  float(**pos)[4] = calloc((size_t)n + 1, sizeof *pos),
  (**vel)[4] = calloc((size_t)n + 1, sizeof *vel);
  if (!clock || !pos || !vel)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_save", "out of host memory");
  if (st == WF_OK && w->ps) st = wf_particles_time(w->ps, &clock[0].time, &clock[0].substeps);
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++) {
    wfw_clock *c = &clock[i + (w->ps ? 1 : 0)];
    st = wf_cloth_time(w->cloths[i], &c->time, &c->substeps);
  }
  if (st == WF_OK) st = local_state(w, pos, vel, !pieces);
  /* the particles' rotation and contact history (wf_particles_granular_state_get) */
  void *granular = NULL;
  if (st == WF_OK && w->ps && !pieces) {
    size_t gb = wf_particles_granular_state_bytes(w->ps);
    granular = malloc(gb ? gb : 1);
    st = granular ? wf_particles_granular_state_get(w->ps, granular, gb)
                  : wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_save", "out of host memory");
  }
  void *table = NULL; /* the manifest's section naming the pieces */
  size_t table_bytes = 0;
  if (pieces) st = wfw_pieces_write(w, path, w->frame, st, &table, &table_bytes);
  bool wrote_piece = pieces && st == WF_OK;
  if (st == WF_OK && rank == 0)
    st = save_state(w, path, w->frame, clock, pos, vel, granular, table, table_bytes);
  if (ranked) st = wfw_ckpt_finish(w, path, st, wrote_piece);
  free(granular), free(table);
  for (int k = 0; pos && k < n; k++)
    free(pos[k]); /* a block's positions and velocities, one array */
  free(clock), free(pos), free(vel);
  return st;
}

/* The checkpoint of frame `frame` from the blocks' state (pos, vel: per block, a cloth's relative
 * to its origin), clocks and the particles' granular state (NULL: none is written, and a restore
 * starts without rotation or contact history). pieces: the particles' rows are in pieces (the
 * manifest of world_checkpoint_pieces.c): this section of pieces_bytes names them, and pos[0],
 * vel[0] and granular are NULL. */
static wf_status save_state(wf_world *w, const char *path, int64_t frame, const wfw_clock *clock,
                            float (**pos)[4], float (**vel)[4], const void *granular,
                            const void *pieces, size_t pieces_bytes) {
  wf_ckpt_writer *ck;
  wf_status st;
  if ((st = wf_ckpt_writer_create(&ck)) != WF_OK) return st;
  uint64_t meta[META_N] = {WFW_CKPT_VERSION,      (uint64_t)frame,       w->n_particles,
                           (uint64_t)w->n_cloths, (uint64_t)w->substeps, 0};
  memcpy(&meta[META_FPS], &w->fps, sizeof(double));
  st = wf_ckpt_writer_add(ck, "meta", meta, sizeof meta);
  if (st == WF_OK) st = wf_ckpt_writer_add(ck, "scene", w->scene_json, strlen(w->scene_json));
  if (st == WF_OK) st = wf_ckpt_writer_add(ck, "physics", w->physics_json, strlen(w->physics_json));
  uint64_t stop[1 + WF_SCENE_MAX_STOP_RULES];
  wfw_stop_save(w, stop);
  if (st == WF_OK && w->n_stop > 0) st = wf_ckpt_writer_add(ck, "stop", stop, sizeof stop);
  for (int k = 0; k < state_blocks(w) && st == WF_OK; k++) {
    char prefix[20], name[WF_CKPT_NAME_MAX + 1];
    float(*hp)[4], (*hv)[4];
    int cloth;
    size_t bytes = state_block(w, k, prefix, &hp, &hv, &cloth);
    wfw_clock c = clock[k];
    snprintf(name, sizeof name, "%s/pos", prefix);
    if (st == WF_OK && pos[k]) st = wf_ckpt_writer_add(ck, name, pos[k], bytes);
    snprintf(name, sizeof name, "%s/vel", prefix);
    if (st == WF_OK && vel[k]) st = wf_ckpt_writer_add(ck, name, vel[k], bytes);
    snprintf(name, sizeof name, "%s/clock", prefix);
    if (st == WF_OK) st = wf_ckpt_writer_add(ck, name, &c, sizeof c);
    { /* the origin the positions are relative to */
      double origin[3];
      snprintf(name, sizeof name, "%s/origin", prefix);
      if (st == WF_OK)
        st = cloth >= 0 ? wf_cloth_origin(w->cloths[cloth], origin)
                        : wf_particles_origin(w->ps, origin);
      if (st == WF_OK) st = wf_ckpt_writer_add(ck, name, origin, sizeof origin);
    }
    if (cloth < 0 && granular && st == WF_OK)
      st = wf_ckpt_writer_add(ck, "particles/granular", granular,
                              wf_particles_granular_state_bytes(w->ps));
  }
  if (st == WF_OK && pieces) st = wf_ckpt_writer_add(ck, "pieces", pieces, pieces_bytes);
  if (st == WF_OK) st = wf_ckpt_writer_save(ck, path);
  wf_ckpt_writer_destroy(ck);
  return st;
}

wf_status wf_world_health_get(wf_world *w, bool wait, wf_world_health *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_health_get", "NULL argument");
  if (!w->health)
    return wf__error(WF_ERR_INVALID, "wf_world_health_get", "the world has no health check");
  return wfw_health_get(w->health, w->frame, wait, out);
}

/* The last-good snapshot (health.c) assembled into the host copies, written as a checkpoint. */
wf_status wf_world_save_last_good(wf_world *w, const char *path, int64_t *frame) {
  static const char fn[] = "wf_world_save_last_good";
  if (!w || !path) return wf__error(WF_ERR_INVALID, fn, "world or path is NULL");
  if (!w->health) return wf__error(WF_ERR_INVALID, fn, "the world has no health check");
  int n = (w->ps ? 1 : 0) + w->n_cloths;
  float(**pos)[4] = calloc((size_t)n + 1, sizeof *pos),
  (**vel)[4] = calloc((size_t)n + 1, sizeof *vel);
  wfw_clock *clock = calloc((size_t)n + 1, sizeof *clock);
  wf_status st = WF_OK;
  if (!pos || !vel || !clock) st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  int k = 0;
  if (st == WF_OK && w->ps) pos[k] = w->ppos, vel[k++] = w->pvel;
  for (int i = 0; i < w->n_cloths && st == WF_OK; i++)
    pos[k] = w->cpos[i], vel[k++] = w->cvel[i];
  w->cache_frame = -1; /* the host copies now hold the snapshot, not the current state */
  int64_t good = -1;
  /* the snapshot holds the solvers' own bits: a cloth's positions relative to its origin */
  if (st == WF_OK) st = wfw_health_last_good(w->health, w->frame, pos, vel, clock, &good);
  /* the snapshot has no rotation or contact history: the restore starts them at zero */
  if (st == WF_OK) st = save_state(w, path, good, clock, pos, vel, NULL, NULL, 0);
  free(pos), free(vel), free(clock);
  if (st == WF_OK && frame) *frame = good;
  return st;
}

static wf_status section(const wf_ckpt_reader *r, const char *path, const char *name, size_t want,
                         const void **data) {
  size_t bytes = 0;
  wf_status st = wf_ckpt_section(r, name, data, &bytes);
  if (st != WF_OK) return st;
  if (bytes != want)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s: section '%s' holds %zu bytes, this world needs %zu: the checkpoint is "
                     "not from this scene",
                     path, name, bytes, want);
  return WF_OK;
}

/* A block's positions in a checkpoint are relative to the origin saved beside them, which must be
 * this world's solver's (the same scene gives the same origin); i: the cloth, -1 the particles. */
static wf_status check_origin(wf_world *w, const wf_ckpt_reader *r, const char *path,
                              const char *prefix, int i) {
  char name[WF_CKPT_NAME_MAX + 1];
  const void *d;
  double saved[3], mine[3];
  snprintf(name, sizeof name, "%s/origin", prefix);
  wf_status st = section(r, path, name, sizeof saved, &d);
  if (st == WF_OK)
    st = i < 0 ? wf_particles_origin(w->ps, mine) : wf_cloth_origin(w->cloths[i], mine);
  if (st != WF_OK) return st;
  memcpy(saved, d, sizeof saved);
  if (memcmp(saved, mine, sizeof mine) == 0) return WF_OK;
  if (i < 0)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s: the particles were saved relative to origin (%g, %g, %g), this world's "
                     "are relative to (%g, %g, %g): the checkpoint is not from this scene",
                     path, saved[0], saved[1], saved[2], mine[0], mine[1], mine[2]);
  return wf__error(WF_ERR_INVALID, NULL,
                   "%s: cloths[%d] '%s' was saved relative to origin (%g, %g, %g), this world's "
                   "is (%g, %g, %g): the checkpoint is not from this scene",
                   path, i, cloth_name(w, i), saved[0], saved[1], saved[2], mine[0], mine[1],
                   mine[2]);
}

/* The checkpoint's section "meta" into meta, refusing a format version this weft does not read. */
static wf_status read_meta(const wf_ckpt_reader *r, const char *path, uint64_t meta[META_N]) {
  const void *d;
  memset(meta, 0, META_N * sizeof *meta);
  wf_status st = section(r, path, "meta", META_N * sizeof *meta, &d);
  if (st != WF_OK) return st;
  memcpy(meta, d, META_N * sizeof *meta);
  if (meta[META_VERSION] == 1 || meta[META_VERSION] == 2)
    return wf__error(WF_ERR_PARSE, NULL,
                     "%s: world checkpoint version %u (this weft reads %u): version %u stored %s "
                     "positions in the world, this weft stores them relative to each solver's "
                     "origin (docs/precision.md); run the scene again to write a new checkpoint",
                     path, (unsigned)meta[META_VERSION], WFW_CKPT_VERSION,
                     (unsigned)meta[META_VERSION],
                     meta[META_VERSION] == 1 ? "cloth and particle" : "particle");
  if (meta[META_VERSION] != WFW_CKPT_VERSION)
    return wf__error(WF_ERR_PARSE, NULL, "%s: world checkpoint version %llu (this weft reads %u)",
                     path, (unsigned long long)meta[META_VERSION], WFW_CKPT_VERSION);
  return WF_OK;
}

/* The checkpoint's physics against this world's: *count differences (the first max into out),
 * *checked false when it has no "physics" section (written before checkpoints held one). */
static wf_status physics_changes(wf_world *w, const wf_ckpt_reader *r, const char *path,
                                 wf_scene_change *out, int max, int *count, bool *checked) {
  *count = 0, *checked = false;
  if (wf_ckpt_find(r, "physics") < 0) return WF_OK;
  const void *d;
  size_t bytes;
  wf_status st = wf_ckpt_section(r, "physics", &d, &bytes);
  char *text = st == WF_OK ? malloc(bytes + 1) : NULL;
  if (st == WF_OK && !text) st = wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "out of host memory");
  if (st != WF_OK) return st;
  memcpy(text, d, bytes);
  text[bytes] = '\0';
  int n = wfw_scene_physics_diff(text, w->physics_json, out, max);
  free(text);
  if (n < 0)
    return wf__error(WF_ERR_PARSE, NULL, "%s: section 'physics' is not the JSON of a scene", path);
  *count = n, *checked = true;
  return WF_OK;
}

wf_status wf_world_checkpoint_changes(wf_world *w, const char *path, wf_scene_change *changes,
                                      int max, int *count, bool *checked) {
  if (!w || !path || !count || !checked || max < 0 || (max > 0 && !changes))
    return wf__error(WF_ERR_INVALID, "wf_world_checkpoint_changes", "a NULL or negative argument");
  wf_ckpt_reader *r;
  wf_status st = wf_ckpt_open_file(path, &r);
  if (st != WF_OK) return st;
  uint64_t meta[META_N];
  st = read_meta(r, path, meta);
  if (st == WF_OK) st = physics_changes(w, r, path, changes, max, count, checked);
  wf_ckpt_close(r);
  return st;
}

/* Refuses a checkpoint whose physics differs (or cannot be checked) unless accept; fills *res
 * (res->changes: an array of WF_WORLD_MAX_CHANGES owned by the caller). */
static wf_status check_physics(wf_world *w, const wf_ckpt_reader *r, const char *path, bool accept,
                               wf_world_resume *res) {
  int n;
  bool checked;
  wf_scene_change *ch = (wf_scene_change *)res->changes;
  wf_status st = physics_changes(w, r, path, ch, WF_WORLD_MAX_CHANGES, &n, &checked);
  if (st != WF_OK) return st;
  res->scene_checked = checked, res->change_count = n;
  if (accept) return WF_OK;
  if (!checked)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s was written before checkpoints recorded their scene's physics: it cannot "
                     "be checked against this scene. If it is from this scene, resume it with "
                     "the changes accepted (weft run --resume-with-changes, "
                     "wf_world_load_checkpoint_with_changes); else run the scene from the start",
                     path);
  if (n == 0) return WF_OK;
  char list[700];
  size_t at = 0;
  list[0] = '\0';
  for (int i = 0; i < n && i < WF_WORLD_MAX_CHANGES && at < sizeof list; i++) {
    int k = snprintf(list + at, sizeof list - at, "%s%s: %.40s in the checkpoint, %.40s here",
                     i ? "; " : "", ch[i].path, ch[i].checkpoint, ch[i].scene);
    if (k < 0) break;
    at += (size_t)k;
  }
  if (at >= sizeof list) memcpy(list + sizeof list - 5, " ...", 5);
  return wf__error(WF_ERR_INVALID, NULL,
                   "%s: the checkpoint's scene differs from this one in %d %s the physics (%s); "
                   "nothing was restored. Resume with the changes accepted (weft run "
                   "--resume-with-changes, wf_world_load_checkpoint_with_changes) or run the "
                   "scene from the start",
                   path, n, n == 1 ? "value that changes" : "values that change", list);
}

static wf_status load_checkpoint(wf_world *w, const char *path, bool accept);

/* The birth times of the pours' particles (engine/emit.c's schedule), for a restore from a
 * checkpoint without the granular state that carries them. */
static wf_status pour_births(wf_world *w) {
  wf_status st = WF_OK;
  for (int i = 0; i < w->n_objects && st == WF_OK; i++) {
    const wfw_object *o = &w->objects[i];
    if (o->kind != WF_WORLD_PARTICLES || !(o->pour_rate > 0)) continue;
    float *b = malloc((size_t)o->count * sizeof *b);
    if (!b) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_load_checkpoint", "out of memory");
    for (uint32_t k = 0; k < o->count; k++)
      b[k] = (float)(o->pour_start + (double)k / o->pour_rate);
    st = wf_particles_births_set(w->ps, o->first, o->count, b);
    free(b);
  }
  return st;
}

wf_status wf_world_load_checkpoint(wf_world *w, const char *path) {
  return load_checkpoint(w, path, false);
}

wf_status wf_world_load_checkpoint_with_changes(wf_world *w, const char *path) {
  return load_checkpoint(w, path, true);
}

void wf_world_resume_get(const wf_world *w, wf_world_resume *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (w) *out = w->resume;
}

static wf_status load_checkpoint(wf_world *w, const char *path, bool accept) {
  if (!w || !path)
    return wf__error(WF_ERR_INVALID, "wf_world_load_checkpoint", "world or path is NULL");
  wf_ckpt_reader *r = NULL;
  /* no check may read the state while it changes */
  wf_status st = wfw_health_before_restore(w->health, w->frame);
  if (st == WF_OK) st = wf_ckpt_open_file(path, &r);
  if (st != WF_OK) return wfw_ckpt_agree_load(w, st, path);
  wf_scene_change *changes = calloc(WF_WORLD_MAX_CHANGES, sizeof *changes);
  wf_world_resume res = {.resumed = true, .changes = changes};
  snprintf(res.path, sizeof res.path, "%s", path);
  uint64_t meta[META_N];
  st = changes ? WF_OK : wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "out of host memory");
  if (st == WF_OK) st = read_meta(r, path, meta);
  double fps = 0.0;
  memcpy(&fps, &meta[META_FPS], sizeof fps);
  /* then the scene: a different scene is named by its keys, before any count disagrees */
  if (st == WF_OK) st = check_physics(w, r, path, accept, &res);
  if (st == WF_OK) {
    if (meta[META_PARTICLES] != w->n_particles || meta[META_CLOTHS] != (uint64_t)w->n_cloths)
      st = wf__error(WF_ERR_INVALID, NULL,
                     "%s: the checkpoint has %llu particles and %llu cloths, this world %u and %d: "
                     "it is not from this scene",
                     path, (unsigned long long)meta[META_PARTICLES],
                     (unsigned long long)meta[META_CLOTHS], w->n_particles, w->n_cloths);
    else if (meta[META_SUBSTEPS] != (uint64_t)w->substeps || fps != w->fps)
      st = wf__error(WF_ERR_INVALID, NULL,
                     "%s: the checkpoint was run at %g fps x %llu substeps, this world at %g x %d",
                     path, fps, (unsigned long long)meta[META_SUBSTEPS], w->fps, w->substeps);
  }
  /* a manifest: the particles' rows from its pieces (world_checkpoint_pieces.c), by id into the
   * host copies and the rows of a granular blob, as a one-file checkpoint holds them */
  bool by_pieces = st == WF_OK && wf_ckpt_find(r, "pieces") >= 0;
  void *pieces_gran = NULL;
  size_t pieces_gb = 0;
  if (by_pieces && !w->ps)
    st = wf__error(WF_ERR_INVALID, NULL,
                   "%s: the checkpoint has pieces of particles, this world has none", path);
  if (by_pieces && st == WF_OK) {
    pieces_gb = wf_particles_granular_state_bytes(w->ps);
    pieces_gran = malloc(pieces_gb ? pieces_gb : 1);
    st = pieces_gran ? wf_particles_granular_state_init(w->ps, pieces_gran, pieces_gb)
                     : wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", path);
    if (st == WF_OK)
      st = wfw_pieces_read(w, r, path, meta[META_FRAME], w->ppos, w->pvel, pieces_gran, pieces_gb);
  }
  st = wfw_ckpt_agree_load(w, st, path); /* over ranks: every rank restores, or none */
  for (int k = 0; k < state_blocks(w) && st == WF_OK; k++) {
    const void *pos = NULL, *vel = NULL, *clk = NULL;
    char prefix[20], np[WF_CKPT_NAME_MAX + 1], nv[WF_CKPT_NAME_MAX + 1], nc[WF_CKPT_NAME_MAX + 1];
    float(*hp)[4], (*hv)[4];
    int i;
    size_t bytes = state_block(w, k, prefix, &hp, &hv, &i);
    wfw_clock c;
    snprintf(np, sizeof np, "%s/pos", prefix);
    snprintf(nv, sizeof nv, "%s/vel", prefix);
    snprintf(nc, sizeof nc, "%s/clock", prefix);
    bool rows = !(by_pieces && i < 0); /* else read from the pieces above */
    if ((!rows || (st = section(r, path, np, bytes, &pos)) == WF_OK) &&
        (!rows || (st = section(r, path, nv, bytes, &vel)) == WF_OK) &&
        (st = section(r, path, nc, sizeof c, &clk)) == WF_OK)
      st = check_origin(w, r, path, prefix, i);
    if (st == WF_OK) {
      memcpy(&c, clk, sizeof c);
      /* copies: the sections are 8-byte aligned, the solvers read float[4] rows */
      if (rows) memcpy(hp, pos, bytes);
      if (rows) memcpy(hv, vel, bytes);
      const float(*p4)[4] = (const float(*)[4])hp, (*v4)[4] = (const float(*)[4])hv;
      st = i < 0 ? wf_particles_set_state_local(w->ps, p4, v4, c.time, c.substeps)
                 : wf_cloth_set_state_local(w->cloths[i], p4, v4, c.time, c.substeps);
      const void *g = NULL; /* the rotation and contact history, when the checkpoint has them */
      size_t gb = i < 0 ? wf_particles_granular_state_bytes(w->ps) : 0;
      if (st == WF_OK && i < 0 && by_pieces)
        st = wf_particles_granular_state_set(w->ps, pieces_gran, pieces_gb);
      else if (st == WF_OK && i < 0 && wf_ckpt_find(r, "particles/granular") >= 0 &&
               (st = section(r, path, "particles/granular", gb, &g)) == WF_OK)
        st = wf_particles_granular_state_set(w->ps, g, gb);
      else if (st == WF_OK && i < 0)
        st = pour_births(w); /* a checkpoint without them (last good): from the scene */
      if (st != WF_OK)
        st = i < 0 ? fail_object(st, "particles", 0, "particles")
                   : fail_object(st, "cloths", i, cloth_name(w, i));
    }
  }
  if (st == WF_OK) {
    w->frame = (int64_t)meta[META_FRAME];
    const void *sd = NULL;
    size_t sb = 0;
    if (wf_ckpt_find(r, "stop") >= 0) wf_ckpt_section(r, "stop", &sd, &sb);
    wfw_stop_restore(w, sd, sb);
    res.frame = w->frame;
    memcpy(w->resume_changes, changes, sizeof w->resume_changes);
    w->resume = res;
    w->resume.changes = w->resume_changes;
    /* the host copies hold the positions relative to the origins: download again */
    w->cache_frame = -1;
    st = wfw_health_after_restore(w->health, w->frame);
  } else {
    w->cache_frame = -1;
  }
  free(changes), free(pieces_gran);
  wf_ckpt_close(r);
  return st;
}
