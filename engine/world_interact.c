/* Changing a running world between frames, for interactive tools (the viewer's panel): the
 * parameters every solver shares (gravity, damping) and a drag, a spring that pulls one point of
 * an object towards a target (weft/world.h: wf_world_params_*, wf_world_drag_*).
 *
 * A drag of a cloth vertex, or of a particle (DEM and Hertz contact models), lives in that
 * solver's parameter block (wf_cloth_drag_set, wf_particles_drag_set): a spring k (t − x) − c v
 * added to the point's force in every substep of the captured frame, nothing on the host per
 * frame, no recapture when the target moves. The default stiffness needs the point's mass,
 * downloaded once per picked point. Particles under the XPBD model take the host path below.
 *
 * The host path is applied before each frame while it is active: the particles' state is
 * downloaded (waiting for the solver), the point's velocity gets the spring's impulse over the
 * frame, and the state is put back exactly as it was otherwise (positions relative to the
 * solver's origin, the clock, and the granular state: angular velocities and the contact
 * history), so the other points continue bitwise as they would have. The impulse is the
 * backward-Euler step of a spring-damper on the point alone (force k (t − x) − c v, evaluated
 * at the end of the frame, x' = x + h v'):
 *     v' = (v + h m⁻¹ k (t − x)) / (1 + h m⁻¹ c + h² m⁻¹ k),
 * h the frame time, m⁻¹ the inverse mass, k the stiffness (N/m), c the damping (N·s/m), t the
 * target and x the position (stiffness 0: k = m ω², c = 2 m ω (critical) with ω = 2π × 2 Hz,
 * whatever the point's mass m): stable for any k and h (a stiff spring brings the point to the
 * target at most, it does not overshoot in one frame). Pinned vertices and kinematic particles
 * (inverse mass 0) do not move. A drag is not part of checkpoints: it is a hand on the simulation,
 * not the scene's physics.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "weft/world.h"
#include "world_internal.h"

#define WFW_DRAG_DEFAULT_HZ 2.0

wf_status wf_world_params_get(const wf_world *w, wf_world_params *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_params_get", "NULL argument");
  memset(out, 0, sizeof *out);
  if (w->ps) {
    wf_particles_params p = wf_particles_params_get(w->ps);
    for (int k = 0; k < 3; k++)
      out->gravity[k] = p.gravity[k];
    out->damping = p.damping;
  } else if (w->n_cloths > 0) {
    wf_cloth_params p = wf_cloth_params_get(w->cloths[0]);
    for (int k = 0; k < 3; k++)
      out->gravity[k] = p.gravity[k];
    out->damping = p.damping;
  } else {
    for (int k = 0; k < 3; k++)
      out->gravity[k] = (float)w->gravity[k];
  }
  return WF_OK;
}

wf_status wf_world_params_set(wf_world *w, const wf_world_params *p) {
  if (!w || !p) return wf__error(WF_ERR_INVALID, "wf_world_params_set", "NULL argument");
  for (int k = 0; k < 3; k++)
    if (!isfinite(p->gravity[k]))
      return wf__error(WF_ERR_INVALID, "wf_world_params_set", "gravity[%d] = %g is not finite", k,
                       (double)p->gravity[k]);
  if (!(p->damping >= 0.0f) || !isfinite(p->damping))
    return wf__error(WF_ERR_INVALID, "wf_world_params_set",
                     "damping = %g 1/s: expected a finite value >= 0", (double)p->damping);
  wf_status st;
  if (w->ps) {
    wf_particles_params q = wf_particles_params_get(w->ps);
    for (int k = 0; k < 3; k++)
      q.gravity[k] = p->gravity[k];
    q.damping = p->damping;
    if ((st = wf_particles_params_set(w->ps, &q)) != WF_OK) return st;
  }
  for (int i = 0; i < w->n_cloths; i++) {
    wf_cloth_params q = wf_cloth_params_get(w->cloths[i]);
    for (int k = 0; k < 3; k++)
      q.gravity[k] = p->gravity[k];
    q.damping = p->damping;
    if ((st = wf_cloth_params_set(w->cloths[i], &q)) != WF_OK) return st;
  }
  for (int k = 0; k < 3; k++)
    w->gravity[k] = p->gravity[k];
  return WF_OK;
}

int wf_world_particle_material_count(const wf_world *w) { return w && w->ps ? w->n_pmats : 0; }

const char *wf_world_particle_material_name(const wf_world *w, int i) {
  return w && w->ps && i >= 0 && i < w->n_pmats ? w->pmat_names[i] : NULL;
}

wf_status wf_world_particle_material_get(const wf_world *w, int i, wf_particle_material *out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, "wf_world_particle_material_get", "NULL");
  if (!w->ps || i < 0 || i >= w->n_pmats)
    return wf__error(WF_ERR_INVALID, "wf_world_particle_material_get",
                     "materials[%d]: the world has %d particle materials", i,
                     w->ps ? w->n_pmats : 0);
  *out = w->pmats[i];
  return WF_OK;
}

wf_status wf_world_particle_material_set(wf_world *w, int i, const wf_particle_material *m) {
  if (!w || !m) return wf__error(WF_ERR_INVALID, "wf_world_particle_material_set", "NULL");
  if (!w->ps || i < 0 || i >= w->n_pmats)
    return wf__error(WF_ERR_INVALID, "wf_world_particle_material_set",
                     "materials[%d]: the world has %d particle materials", i,
                     w->ps ? w->n_pmats : 0);
  wf_status st = wf_particles_set_material(w->ps, (uint32_t)i, m);
  if (st != WF_OK) {
    char inner[900];
    snprintf(inner, sizeof inner, "%s", wf_last_error());
    return wf__error(st, NULL, "materials[%d] '%s': %s", i, w->pmat_names[i], inner);
  }
  w->pmats[i] = *m;
  return WF_OK;
}

wf_status wf_world_drag_set(wf_world *w, const wf_world_drag *d) {
  if (!w || !d) return wf__error(WF_ERR_INVALID, "wf_world_drag_set", "NULL argument");
  /* a drag is one viewer's hand: set on one rank it would turn on reads of the state that are
   * collectives over the ranks (the host path) for that rank alone */
  if (w->mpi_comm)
    return wf__error(WF_ERR_UNSUPPORTED, "wf_world_drag_set",
                     "a drag is not supported over MPI ranks (an interactive tool of one process)");
  if (d->object < 0 || d->object >= w->n_objects)
    return wf__error(WF_ERR_INVALID, "wf_world_drag_set", "object %d: the world has %d", d->object,
                     w->n_objects);
  const wfw_object *o = &w->objects[d->object];
  if (d->point >= o->count)
    return wf__error(WF_ERR_INVALID, "wf_world_drag_set", "object %d '%s': point %u of %u",
                     d->object, o->name, d->point, o->count);
  if (!(d->stiffness >= 0.0) || !isfinite(d->stiffness) || !(d->damping >= 0.0) ||
      !isfinite(d->damping))
    return wf__error(WF_ERR_INVALID, "wf_world_drag_set",
                     "object %d '%s': stiffness %g N/m and damping %g N*s/m must be >= 0",
                     d->object, o->name, d->stiffness, d->damping);
  for (int k = 0; k < 3; k++)
    if (!isfinite(d->target[k]))
      return wf__error(WF_ERR_INVALID, "wf_world_drag_set", "object %d '%s': target[%d] = %g",
                       d->object, o->name, k, d->target[k]);
  bool cloth = o->kind == WF_WORLD_CLOTH;
  if (cloth || (o->kind == WF_WORLD_PARTICLES && w->ps)) { /* in the captured frame */
    if (!w->drag.im_known || w->drag.im_object != d->object || w->drag.im_point != d->point) {
      float(*vel)[4] = malloc((size_t)o->count * 16 + 16);
      float(*pos)[4] = cloth ? malloc((size_t)o->count * 16 + 16) : NULL;
      wf_status st = vel && (pos || !cloth) ? wf_world_object_download(w, d->object, pos, vel)
                                            : WF_ERR_OUT_OF_MEMORY;
      /* the inverse mass: a cloth's in pos.w, a particle's in vel.w */
      if (st == WF_OK) w->drag.inv_mass = cloth ? pos[d->point][3] : vel[d->point][3];
      free(vel), free(pos);
      if (st != WF_OK) return st;
      w->drag.im_known = true, w->drag.im_object = d->object, w->drag.im_point = d->point;
    }
    double k = d->stiffness, c = d->damping, im = w->drag.inv_mass;
    if (k == 0.0 && im > 0.0) {
      double omega = 2.0 * WFW_PI * WFW_DRAG_DEFAULT_HZ;
      k = omega * omega / im;
      if (c == 0.0) c = 2.0 * omega / im;
    }
    /* another object held the drag: end it there first (one drag a world) */
    if (w->drag.device && w->drag.object != d->object) wf_world_drag_clear(w);
    wf_status st =
        cloth ? wf_cloth_drag_set(w->cloths[o->cloth], d->point, d->target, (float)k, (float)c)
              : wf_particles_drag_set(w->ps, o->first + d->point, d->target, (float)k, (float)c);
    if (st == WF_OK) {
      w->drag.active = false, w->drag.device = true; /* nothing for the host to do per frame */
      w->drag.object = d->object, w->drag.point = d->point;
      return WF_OK;
    }
    if (cloth || st != WF_ERR_UNSUPPORTED) return st;
    wf_clear_error(); /* XPBD particles: the host path below */
  }
  if (w->drag.device) wf_world_drag_clear(w);
  w->drag.active = true;
  w->drag.object = d->object;
  w->drag.point = d->point;
  for (int k = 0; k < 3; k++)
    w->drag.target[k] = d->target[k];
  w->drag.stiffness = d->stiffness;
  w->drag.damping = d->damping;
  return WF_OK;
}

void wf_world_drag_clear(wf_world *w) {
  if (!w) return;
  w->drag.active = false;
  if (w->drag.device && w->drag.object >= 0 && w->drag.object < w->n_objects) {
    const wfw_object *o = &w->objects[w->drag.object];
    wf_status st = o->kind == WF_WORLD_CLOTH ? wf_cloth_drag_clear(w->cloths[o->cloth])
                   : w->ps                   ? wf_particles_drag_clear(w->ps)
                                             : WF_OK;
    if (st != WF_OK) wf_clear_error();
  }
  w->drag.device = false;
}

/* The implicit spring-damper step of the file comment on one point (local coordinates). */
static void drag_point(const wf_world *w, const double origin[3], float pos[4], float vel[4],
                       float inv_mass) {
  if (!(inv_mass > 0.0f)) return;
  double h = 1.0 / w->fps, k = w->drag.stiffness, c = w->drag.damping, im = inv_mass;
  if (k == 0.0) { /* the default: a 2 Hz spring on the point's own mass, critically damped */
    double omega = 2.0 * WFW_PI * WFW_DRAG_DEFAULT_HZ;
    k = omega * omega / im;
    if (c == 0.0) c = 2.0 * omega / im;
  }
  double den = 1.0 + h * im * c + h * h * im * k;
  for (int j = 0; j < 3; j++) {
    double x = (double)pos[j] + origin[j];
    vel[j] = (float)(((double)vel[j] + h * im * k * (w->drag.target[j] - x)) / den);
  }
}

static wf_status drag_particles(wf_world *w, const wfw_object *o) {
  wf_particles *ps = w->ps;
  uint32_t n = wf_particles_count(ps);
  size_t bytes = (size_t)n * 4 * sizeof(float), gbytes = wf_particles_granular_state_bytes(ps);
  float(*pos)[4] = malloc(bytes), (*vel)[4] = malloc(bytes);
  void *gran = malloc(gbytes ? gbytes : 1);
  double t = 0.0, origin[3];
  uint64_t sub = 0;
  wf_status st =
      pos && vel && gran ? WF_OK : wf__error(WF_ERR_OUT_OF_MEMORY, "wf_world_step", "drag");
  if (st == WF_OK) st = wf_particles_download_local(ps, pos, vel);
  if (st == WF_OK) st = wf_particles_granular_state_get(ps, gran, gbytes);
  if (st == WF_OK) st = wf_particles_time(ps, &t, &sub);
  if (st == WF_OK) st = wf_particles_origin(ps, origin);
  if (st == WF_OK) {
    uint32_t i = o->first + w->drag.point;
    drag_point(w, origin, pos[i], vel[i], vel[i][3]);
    st = wf_particles_set_state_local(ps, (const float(*)[4])pos, (const float(*)[4])vel, t, sub);
  }
  if (st == WF_OK) st = wf_particles_granular_state_set(ps, gran, gbytes);
  free(pos), free(vel), free(gran);
  return st;
}

wf_status wfw_drag_apply(wf_world *w) {
  if (!w->drag.active) return WF_OK;
  const wfw_object *o = &w->objects[w->drag.object];
  wf_status st = drag_particles(w, o); /* cloth drags are always in the frame */
  if (st != WF_OK) {
    char inner[900];
    snprintf(inner, sizeof inner, "%s", wf_last_error());
    return wf__error(st, "wf_world_step", "dragging object %d '%s' point %u: %s", w->drag.object,
                     o->name, w->drag.point, inner);
  }
  w->cache_frame = -1; /* the host copies no longer hold the state */
  return WF_OK;
}
