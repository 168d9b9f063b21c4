/* Forces on the world's colliders: the scene's colliders are given to every solver in scene order
 * (world.c), so collider k of the world is collider k of the particles and of every cloth; its
 * force is the sum of theirs, in that fixed order (particles, then cloths in scene order). Each
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
