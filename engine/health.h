/* The world's health check (engine/health.c), as the world sees it: a narrow interface. The world
 * describes what to check (the solvers, the objects they hold, the scene's limits and colliders)
 * once, then calls in after every frame, around restores and when asked. health.c never sees
 * struct wf_world, and nothing here calls back into the world. Not a public header.
 */
#ifndef WEFT_ENGINE_HEALTH_H
#define WEFT_ENGINE_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/cloth.h"
#include "weft/particles.h"
#include "weft/scene.h"
#include "weft/world.h"

typedef struct wfw_health wfw_health;

/* A solver's clock as checkpoints store it (section "<solver>/clock") and as the solvers keep it
 * in a partition view's clock buffer. */
typedef struct wfw_clock {
  double time;
  uint64_t substeps;
} wfw_clock;

/* One solver the check reads, partition by partition (wf_*_partition_view). Its points have the
 * global ids 0 .. count-1. */
typedef struct wfw_health_source {
  wf_particles *ps; /* one of ps and cloth */
  wf_cloth *cloth;
  uint32_t count;
  float thickness; /* cloth: the collision radius (m) */
} wfw_health_source;

/* One object of the world, in the world's order: a range of one source's global ids. A source's
 * objects must come in ascending, disjoint ranges (emitters in scene order; a cloth is one). */
typedef struct wfw_health_object {
  const char *name;
  int source;
  uint32_t first, count;
} wfw_health_object;

typedef struct wfw_health_desc {
  wf_device *device;     /* the world's first device: the verdict, the records the host reads */
  const wf_scene *scene; /* limits (simulation.max_speed, max_penetration) and colliders */
  double fps;
  int64_t frame; /* the frame the solvers hold now (snapshotted as the last good one) */
  int n_sources;
  const wfw_health_source *sources;
  int n_objects;
  const wfw_health_object *objects;
  /* the world's MPI communicator (a pointer to an MPI_Comm), or NULL: each rank checks its own
   * partitions and the ranks agree on every frame's verdict before any snapshot is taken */
  const void *mpi_comm;
} wfw_health_desc;

/* A scene collider as the solvers are given it (engine/world.c); the check converts the scene's
 * colliders with it, as the solvers did. */
wf_collider_desc wfw_collider_of(const wf_scene_collider *c);

/* The penetration watchdog's limit (simulation.max_penetration, m; 0: off). While it is on, the
 * check holds its own copies of the scene's colliders and cannot follow a pose the host sets. */
double wfw_health_max_penetration(const wfw_health *h);

/* Creates the check (copying what it needs from d) and snapshots the current state as the last
 * good one. */
wf_status wfw_health_create(const wfw_health_desc *d, wfw_health **out);
/* Waits for the health streams and frees everything. NULL is ignored. */
void wfw_health_destroy(wfw_health *h);
/* After frame `frame` has been enqueued: enqueues its check and snapshot, then reads the records
 * of finished frames without blocking (blocking only when every slot is in flight). The error of
 * the first unhealthy frame once it has been read, then on every call. */
wf_status wfw_health_after_frame(wfw_health *h, int64_t frame);
/* Reads the records of frames up to `frame`: wait, or only those already there. The error of the
 * first unhealthy frame, if any. */
wf_status wfw_health_read(wfw_health *h, int64_t frame, bool wait);
/* Before a checkpoint is restored: waits for the checks in flight. After (the solvers now hold
 * frame `frame`): forgets the verdicts and snapshots the restored state as the last good one. */
wf_status wfw_health_before_restore(wfw_health *h, int64_t frame);
wf_status wfw_health_after_restore(wfw_health *h, int64_t frame);
/* The health as far as read (wf_world_health_get), after reading the records up to `frame`. */
wf_status wfw_health_get(wfw_health *h, int64_t frame, bool wait, wf_world_health *out);
/* Waits for every check and copies the last-good snapshot into host arrays in global-id order:
 * pos[s] and vel[s] of count rows and clock[s] for each source s; *frame: the frame it holds. */
wf_status wfw_health_last_good(wfw_health *h, int64_t now, float (**pos)[4], float (**vel)[4],
                               wfw_clock *clock, int64_t *frame);
/* Rewrites the out-of-memory error of a world creation for scene sc on `device` (one name, or the
 * list of a split world: split is true): what was asked and what is free (the allocator's words),
 * the objects that take the memory and the scene keys that size them. Returns
 * WF_ERR_OUT_OF_MEMORY. */
wf_status wfw_oom_advice(const wf_scene *sc, const char *device, bool split);

#endif
