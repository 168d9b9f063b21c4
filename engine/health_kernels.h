/* The world's per-frame health check, written once for both backends (DESIGN.md, "one math, two
 * backends"): the device-side records, one argument struct per kernel, the per-element math
 * (WF_HD static inline) and the wf_kernel objects. The CPU loops are in health_kernels.c, the
 * __global__ kernels in health_kernels.cu; engine/health.c enqueues them after every frame.
 *
 * A frame's check, per partition of every solver on the partition's own device (its lane's
 * stream), then the verdict on the world's first device:
 *
 *   memset(records, 0xff)            every record "healthy" (key = WFH_NONE)
 *   CHECK   per partition, n = rows  each unhealthy row: integer atomicMin(key, gid << 32 | row)
 *   DETAIL  per partition, n = 1     the row of `key`: its quantity, value and collider
 *   (copy)                           records of other devices -> the first device's
 *   VERDICT n = 1                    gate.ok = no record is bad and nothing was bad before;
 *                                    the first bad frame trips the gate for good
 *   (copy)                           gate -> every other device's copy of it
 *   COMMIT  per partition, n = rows  if gate.ok: snapshot <- the partition's rows, ids, clock
 *
 * Determinism: the only atomic is an integer minimum whose key starts with the global id, so the
 * reported point is the smallest global id of the partition whatever the thread order, and its
 * quantity and value are recomputed by one thread from the same data. The host takes the smallest
 * over a solver's partitions, so the answer does not depend on the partition count either. No
 * floating-point atomics.
 */
#ifndef WEFT_ENGINE_HEALTH_KERNELS_H
#define WEFT_ENGINE_HEALTH_KERNELS_H

#include <stdint.h>

#include "solvers/particle/particle_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WFH_NONE   0xffffffffu
#define WFH_NO_KEY 0xffffffffffffffffull

/* What is wrong with a point (wfh_record.quantity); the values of wf_world_health_quantity. */
enum {
  WFH_OK = 0,
  WFH_POSITION_NONFINITE = 1,
  WFH_VELOCITY_NONFINITE = 2,
  WFH_SPEED = 3,
  WFH_PENETRATION = 4
};

/* One partition's verdict for one frame. */
typedef struct wfh_record {
  uint64_t key;      /* global id << 32 | row of the smallest unhealthy global id, or WFH_NO_KEY */
  uint32_t quantity; /* WFH_* of that point */
  uint32_t collider; /* WFH_PENETRATION: the collider (scene order) */
  float value;       /* the offending value: speed (m/s), depth (m), or the non-finite component */
  uint32_t unused;
} wfh_record;

/* The snapshot gate, carried from frame to frame on the device. */
typedef struct wfh_gate {
  uint32_t ok;        /* this frame is healthy and no earlier one was not: commit it */
  uint32_t tripped;   /* a frame was unhealthy: never commit again (until a reset) */
  int64_t good_frame; /* the frame the last-good snapshot holds */
  int64_t bad_frame;  /* the first unhealthy frame, or -1 */
} wfh_gate;

/* CHECK and DETAIL: the owned rows of one partition. Particles: pos.w = radius, vel.w = inverse
 * mass; cloth: pos.w = inverse mass, the collision radius is the cloth's thickness. Points with
 * inverse mass 0 (kinematic particles, pinned vertices) do not respond to colliders and are not
 * checked for penetration. A limit of 0 turns its check off. */
typedef struct wfh_check_args {
  const wfp_f4 *pos, *vel;
  const uint32_t *ids; /* global id of each row; NULL: row i is global id first + i */
  const wfp_collider *colliders;
  wfh_record *rec;
  uint32_t first;
  uint32_t n; /* rows */
  uint32_t n_colliders;
  uint32_t cloth;
  float thickness;       /* cloth: collision radius, m */
  float max_speed2;      /* (m/s)², 0: off */
  float max_penetration; /* m, 0: off */
  float time;            /* simulated seconds at the end of the frame (kinematic colliders) */
} wfh_check_args;

typedef struct wfh_verdict_args {
  const wfh_record *rec;
  uint32_t n_records;
  wfh_gate *gate;
  int64_t frame;
} wfh_verdict_args;

/* What a partition's snapshot holds besides its rows: how many, whose, and the clock. */
typedef struct wfh_snap_meta {
  uint64_t clock[2]; /* the partition's clock buffer, bit for bit: double seconds, u64 substeps */
  uint32_t rows;
  uint32_t first;   /* without ids: the global id of row 0 */
  uint32_t has_ids; /* the snapshot's ids hold the global id of each row */
  uint32_t unused;
} wfh_snap_meta;

/* COMMIT: n = max(rows, 1) elements; when gate->ok copies the rows (and their ids, if any) and,
 * at element 0, the meta and the clock. */
typedef struct wfh_commit_args {
  const wfh_gate *gate;
  const wfp_f4 *pos, *vel;
  const uint32_t *ids; /* NULL: row i is global id first + i */
  const uint64_t *clock;
  wfp_f4 *snap_pos, *snap_vel;
  uint32_t *snap_ids;
  wfh_snap_meta *meta;
  uint32_t rows, first;
} wfh_commit_args;

WF_HD static inline int wfh_finite3(float x, float y, float z) {
  return wfp_finite(x) && wfp_finite(y) && wfp_finite(z);
}

/* The first non-finite of three components (for the message: nan, inf or -inf). */
WF_HD static inline float wfh_nonfinite_of(float x, float y, float z) {
  return !wfp_finite(x) ? x : !wfp_finite(y) ? y : z;
}

/* The health of point i: WFH_OK or the first failing check in the order position, velocity,
 * speed, penetration (colliders in scene order); *value and *collider describe it. */
WF_HD static inline uint32_t wfh_point(const wfh_check_args *a, uint32_t i, float *value,
                                       uint32_t *collider) {
  wfp_f4 x = a->pos[i], v = a->vel[i];
  *collider = WFH_NONE;
  if (!wfh_finite3(x.x, x.y, x.z)) {
    *value = wfh_nonfinite_of(x.x, x.y, x.z);
    return WFH_POSITION_NONFINITE;
  }
  if (!wfh_finite3(v.x, v.y, v.z)) {
    *value = wfh_nonfinite_of(v.x, v.y, v.z);
    return WFH_VELOCITY_NONFINITE;
  }
  if (a->max_speed2 > 0.0f) {
    float s2 = v.x * v.x + v.y * v.y + v.z * v.z;
    if (s2 > a->max_speed2) {
      *value = sqrtf(s2);
      return WFH_SPEED;
    }
  }
  float inv_mass = a->cloth ? x.w : v.w;
  if (a->max_penetration > 0.0f && inv_mass > 0.0f) {
    float r = a->cloth ? a->thickness : x.w;
    for (uint32_t k = 0; k < a->n_colliders; k++) {
      float n[3];
      float depth = r - wfp_collider_sdf(&a->colliders[k], a->time, x.x, x.y, x.z, n);
      if (depth > a->max_penetration) {
        *value = depth;
        *collider = k;
        return WFH_PENETRATION;
      }
    }
  }
  return WFH_OK;
}

/* CHECK's key of row i: its global id first, so the minimum is the smallest global id. */
WF_HD static inline uint64_t wfh_key(const wfh_check_args *a, uint32_t i) {
  uint32_t gid = a->ids ? a->ids[i] : a->first + i;
  return (uint64_t)gid << 32 | i;
}

/* DETAIL (one element): fills the record of the point CHECK found. */
WF_HD static inline void wfh_detail(const wfh_check_args *a) {
  wfh_record *r = a->rec;
  if (r->key == WFH_NO_KEY) return;
  float value = 0.0f;
  uint32_t collider = WFH_NONE;
  r->quantity = wfh_point(a, (uint32_t)(r->key & 0xffffffffu), &value, &collider);
  r->value = value;
  r->collider = collider;
}

/* VERDICT (one element). */
WF_HD static inline void wfh_verdict(const wfh_verdict_args *a) {
  wfh_gate *g = a->gate;
  uint32_t bad = 0;
  for (uint32_t k = 0; k < a->n_records; k++)
    bad |= a->rec[k].key != WFH_NO_KEY;
  if (g->tripped) {
    g->ok = 0;
  } else if (bad) {
    g->ok = 0;
    g->tripped = 1;
    g->bad_frame = a->frame;
  } else {
    g->ok = 1;
    g->good_frame = a->frame;
  }
}

/* COMMIT of element i (gate->ok already tested). */
WF_HD static inline void wfh_commit(const wfh_commit_args *a, uint32_t i) {
  if (i < a->rows) {
    a->snap_pos[i] = a->pos[i];
    a->snap_vel[i] = a->vel[i];
    if (a->ids) a->snap_ids[i] = a->ids[i];
  }
  if (i == 0) {
    a->meta->clock[0] = a->clock[0];
    a->meta->clock[1] = a->clock[1];
    a->meta->rows = a->rows;
    a->meta->first = a->first;
    a->meta->has_ids = a->ids != 0;
  }
}

extern const wf_kernel wfh_check_kernel;   /* n = rows of the partition */
extern const wf_kernel wfh_detail_kernel;  /* n = 1 */
extern const wf_kernel wfh_verdict_kernel; /* n = 1 */
extern const wf_kernel wfh_commit_kernel;  /* n = max(rows, 1) */

#ifdef WEFT_HAVE_CUDA
void wfh_check_cuda(const void *args, size_t n, void *stream);
void wfh_detail_cuda(const void *args, size_t n, void *stream);
void wfh_verdict_cuda(const void *args, size_t n, void *stream);
void wfh_commit_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
