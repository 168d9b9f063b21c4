/* Internals of the world (engine/world.c), shared with the engine's other world files, the
 * energies (world_energy.c) and the readback ring (world_readback.c). The health check does not
 * see them: it gets a narrow description (health.h). Not a public header: nothing outside
 * engine/ includes it.
 */
#ifndef WEFT_ENGINE_WORLD_INTERNAL_H
#define WEFT_ENGINE_WORLD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "health.h"
#include "weft/cloth.h"
#include "weft/particles.h"
#include "weft/world.h"

#define WFW_PI           3.14159265358979323846
#define WFW_CKPT_VERSION 2u
#define WFW_MAX_DEVICES  WF_MAX_DEVICES /* devices a world's solvers can be split over */

typedef struct wfw_object {
  char name[WF_SCENE_NAME_MAX];
  wf_world_object_kind kind;
  uint32_t first, count; /* particles: range of the solver's global ids; cloth: 0, vertices */
  int cloth;             /* index into w->cloths, or -1 */
} wfw_object;

struct wf_world {
  wf_device *dev; /* the first of devices[]: the verdict of the health check, readback */
  int n_devices;
  wf_device *devices[WFW_MAX_DEVICES];
  double fps;
  int substeps, frames;
  double gravity[3];
  double wind[3], gust_amplitude, gust_frequency;
  double max_speed;
  int64_t frame;
  wf_particles *ps;  /* the particles over devices[0..n_devices) (a partition each), or NULL */
  wf_stream *stream; /* shared by the particles and the cloths coupled to them, or NULL */
  uint32_t n_particles;
  int n_cloths;
  wf_cloth **cloths; /* per cloth: its solver, over one device or several */
  int n_objects;
  wfw_object *objects;
  char *scene_json;
  /* host copies of the state */
  int64_t cache_frame;
  float (*ppos)[4], (*pvel)[4];
  float (**cpos)[4], (**cvel)[4];
  wfw_health *health; /* engine/health.c: per-frame device checks, last-good snapshot */
  int n_colliders;    /* the scene's, given to every solver in scene order (world_forces.c) */
  char (*collider_names)[WF_SCENE_NAME_MAX];
};

#endif
