/* The world's colliders: forces on them and poses set by the host. The scene's colliders are given
 * to every solver in scene order (world.c), so collider k of the world is collider k of the
 * particles and of every cloth: a pose goes to each of them, and the force is the sum of theirs,
 * in that fixed order (particles, then cloths in scene order). Each
 * solver's is exact integer sums converted once (solvers/collider/collider_force.h), so the sum
 * does not depend on the devices either. */
#include <stdio.h>

#include "internal/error.h"
#include "world_internal.h"

int wf_world_collider_count(const wf_world *w) { return w ? w->n_colliders : 0; }

const char *wf_world_collider_name(const wf_world *w, int k) {
  return w && k >= 0 && k < w->n_colliders ? w->collider_names[k] : NULL;
}

wf_status wf_world_measure_collider_forces(wf_world *w, bool on) {
  if (!w) return wf__error(WF_ERR_INVALID, "wf_world_measure_collider_forces", "world is NULL");
  if (w->ps) {
    wf_status st = wf_particles_measure_collider_forces(w->ps, on);
    if (st != WF_OK) return st;
  }
  for (int i = 0; i < w->n_cloths; i++) {
    wf_status st = wf_cloth_measure_collider_forces(w->cloths[i], on);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_world_collider_force(wf_world *w, int k, double force[3], double torque[3]) {
  static const char fn[] = "wf_world_collider_force";
  if (!w || !force || !torque) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  if (k < 0 || k >= w->n_colliders)
    return wf__error(WF_ERR_INVALID, fn, "collider %d out of range (%d colliders)", k,
                     w->n_colliders);
  for (int j = 0; j < 3; j++)
    force[j] = torque[j] = 0.0;
  double f[3], t[3];
  if (w->ps) {
    wf_status st = wf_particles_collider_force(w->ps, (uint32_t)k, f, t);
    if (st != WF_OK) return st;
    for (int j = 0; j < 3; j++)
      force[j] += f[j], torque[j] += t[j];
  }
  for (int i = 0; i < w->n_cloths; i++) {
    wf_status st = wf_cloth_collider_force(w->cloths[i], (uint32_t)k, f, t);
    if (st != WF_OK) return st;
    for (int j = 0; j < 3; j++)
      force[j] += f[j], torque[j] += t[j];
  }
  return WF_OK;
}

wf_status wf_world_set_collider_pose(wf_world *w, int k, const wf_collider_pose *pose) {
  static const char fn[] = "wf_world_set_collider_pose";
  if (!w || !pose) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  if (k < 0 || k >= w->n_colliders)
    return wf__error(WF_ERR_INVALID, fn, "collider %d out of range (%d colliders)", k,
                     w->n_colliders);
  double limit = wfw_health_max_penetration(w->health);
  if (limit > 0.0)
    return wf__error(WF_ERR_UNSUPPORTED, fn,
                     "collider %d '%s': the health check watches penetration "
                     "(simulation.max_penetration %g m) against the scene's colliders and cannot "
                     "follow a pose set by the host; set simulation.max_penetration to 0 to pose "
                     "colliders between frames",
                     k, w->collider_names[k], limit);
  if (w->ps) {
    wf_status st = wf_particles_set_collider_pose(w->ps, (uint32_t)k, pose);
    if (st != WF_OK) return st;
  }
  for (int i = 0; i < w->n_cloths; i++) {
    wf_status st = wf_cloth_set_collider_pose(w->cloths[i], (uint32_t)k, pose);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}
