/* Internals of the world (engine/world.c), shared by the engine's other world files (readback,
 * health, ...). Not a public header: nothing outside engine/ includes it.
 */
#ifndef WEFT_ENGINE_WORLD_INTERNAL_H
#define WEFT_ENGINE_WORLD_INTERNAL_H

#include <stdint.h>

#include "weft/cloth.h"
#include "weft/particles.h"
#include "weft/world.h"

#define WFW_PI           3.14159265358979323846
#define WFW_CKPT_VERSION 1u

typedef struct wfw_object {
  char name[WF_SCENE_NAME_MAX];
  wf_world_object_kind kind;
  uint32_t first, count; /* particles: range of the solver; cloth: 0, vertices */
  int cloth;             /* index into w->cloths, or -1 */
} wfw_object;

struct wf_world {
  wf_device *dev;
  double fps;
  int substeps, frames;
  double gravity[3];
  double wind[3], gust_amplitude, gust_frequency;
  double max_speed;
  int64_t frame;
  wf_particles *ps;
  uint32_t n_particles;
  int n_cloths;
  wf_cloth **cloths;
  int n_objects;
  wfw_object *objects;
  char *scene_json;
  /* host copies of the state */
  int64_t cache_frame;
  float (*ppos)[4], (*pvel)[4];
  float (**cpos)[4], (**cvel)[4];
};

#endif
