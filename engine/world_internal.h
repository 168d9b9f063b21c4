/* Internals of the world (engine/world.c), shared by the engine's other world files (readback,
 * health, ...). Not a public header: nothing outside engine/ includes it.
 */
#ifndef WEFT_ENGINE_WORLD_INTERNAL_H
#define WEFT_ENGINE_WORLD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/cloth.h"
#include "weft/particles.h"
#include "weft/world.h"

#define WFW_PI           3.14159265358979323846
#define WFW_CKPT_VERSION 1u
#define WFW_MAX_DEVICES  16 /* devices a world's particles can be split over */

typedef struct wfw_object {
  char name[WF_SCENE_NAME_MAX];
  wf_world_object_kind kind;
  uint32_t first, count; /* particles: range of the solver; cloth: 0, vertices */
  int cloth;             /* index into w->cloths, or -1 */
} wfw_object;

/* A split cloth's state on the world's first device (wfw_split_cloth.mirror), with `stream`
 * standing for the cloth's stream. */
typedef struct wfw_mirror {
  wf_stream *stream;
  wf_buffer *pos, *vel; /* n_particles rows of 16 bytes, global-id order */
  wf_buffer *clock;     /* wfw_clock: simulated seconds, substeps */
} wfw_mirror;

/* The mirror of a cloth over several devices: its state gathered after every frame and every
 * restore onto the world's first device, in global vertex order, on the devices (each partition
 * view's owned rows and global ids are copied into `stage` and `gid`, then a scatter kernel puts
 * each row at its global index): the health check reads it as it reads a one-device cloth's
 * buffers, with the mirror's stream standing for the cloth's stream. */
typedef struct wfw_cloth_mirror {
  wfw_mirror mirror; /* vertices rows of 16 bytes, global order; clock as a cloth's */
  wf_buffer *stage;  /* on the first device: owned rows of partition 0, 1, ...; pos, then vel */
  wf_buffer *gid;    /* on the first device: stage row -> global vertex id */
} wfw_cloth_mirror;

struct wf_world {
  wf_device *dev; /* the first of devices[]: health check, readback, the mirrors, whole cloths */
  int n_devices;
  wf_device *devices[WFW_MAX_DEVICES];
  double fps;
  int substeps, frames;
  double gravity[3];
  double wind[3], gust_amplitude, gust_frequency;
  double max_speed;
  int64_t frame;
  wf_particles *ps;       /* the particles over devices[0..n_devices) (a partition each), or NULL */
  wf_stream *stream;      /* shared by the particles and the cloths coupled to them, or NULL */
  uint32_t n_particles;
  int n_cloths;
  wf_cloth **cloths;          /* per cloth: its solver, over one device or several */
  wfw_cloth_mirror *cmirror; /* per cloth: the mirror of one over several devices */
  int n_objects;
  wfw_object *objects;
  char *scene_json;
  /* host copies of the state */
  int64_t cache_frame;
  float (*ppos)[4], (*pvel)[4];
  float (**cpos)[4], (**cvel)[4];
  struct wfw_health *health; /* engine/health.c: per-frame device checks, last-good snapshot */
};

/* ---- a cloth, whole or split (engine/world.c) ---------------------------------------------- */

/* The stream cloth i's state is written on: a one-device cloth's, or its mirror's. */
wf_stream *wfw_cloth_stream(const wf_world *w, int i);
/* Cloth i's device state in global vertex order (as partition 0's wf_cloth_partition_view): a one-device cloth's
 * buffers, or the mirror's. */
wf_status wfw_cloth_buffers(wf_world *w, int i, wf_buffer **pos, wf_buffer **vel,
                            wf_buffer **clock);
/* wf_cloth_copy_positions_on (gathered on the device for several partitions). */
wf_status wfw_cloth_copy_positions(wf_world *w, int i, wf_buffer *dst, size_t off, wf_stream *s);

/* ---- health (engine/health.c) -------------------------------------------------------------- */

/* A solver's clock as checkpoints store it (section "<solver>/clock"). */
typedef struct wfw_clock {
  double time;
  uint64_t substeps;
} wfw_clock;

/* Creates the health check of a world whose solvers exist, with the scene's limits and colliders,
 * and snapshots the initial state as the last good one. */
wf_status wfw_health_create(wf_world *w, const wf_scene *sc);
/* Waits for the health stream and frees everything. NULL health is ignored. */
void wfw_health_destroy(wf_world *w);
/* After a frame has been enqueued (w->frame counts it): enqueues its check and snapshot, then
 * reads the records of finished frames without blocking (blocking only when every slot is in
 * flight). The error of the first unhealthy frame once it has been read, then on every call. */
wf_status wfw_health_after_frame(wf_world *w);
/* Waits for every enqueued check; the error of the first unhealthy frame, if any. */
wf_status wfw_health_wait(wf_world *w);
/* Reads the records already there without blocking; the error of the first unhealthy frame. */
wf_status wfw_health_poll(wf_world *w);
/* Before a checkpoint is restored: waits for the checks in flight. After: forgets the verdicts
 * and snapshots the restored state as the last good one. */
wf_status wfw_health_before_restore(wf_world *w);
wf_status wfw_health_after_restore(wf_world *w);
/* Writes a checkpoint of frame `frame` from the host copies (ppos, pvel, cpos, cvel) and clocks
 * (pclock for the particle solver, cclock[i] for cloth i) (engine/world.c). */
wf_status wfw_save_state(wf_world *w, const char *path, int64_t frame, const wfw_clock *pclock,
                         const wfw_clock *cclock);
/* Rewrites the out-of-memory error of a world creation for scene sc on `device` (one name, or the
 * list of a split world: split is true): what was asked and what is free (the allocator's words),
 * the objects that take the memory and the scene keys that size them. Returns
 * WF_ERR_OUT_OF_MEMORY. */
wf_status wfw_oom_advice(const wf_scene *sc, const char *device, bool split);

#endif
