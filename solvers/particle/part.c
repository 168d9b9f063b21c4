/* One partition of the particle solver (part.h, wfp_part): device buffers, validation,
 * emitters, colliders and the step on one device. The public wf_particles (particles.c) owns one
 * per device; with one device every call goes straight here.
 *
 * Invariants
 *  - Particles live in local order = global-id order (ids are handed out in the order particles
 *    are added, and nothing reorders the state arrays). Sorted copies exist only inside a substep.
 *  - All device work is on one stream (ps->stream); host-side mirrors of the parameter block,
 *    materials and colliders are uploaded on it, so a change lands between two frames.
 *  - The captured frame (ps->graph) bakes in the particle count; adding particles drops it and the
 *    next step recaptures. Parameters, materials and colliders are read from device memory and
 *    need no recapture.
 *
 * Device memory per particle (capacity C; cell table T = max(64, C) entries):
 *     state      pos 16 + vel 16 + gid 4 + material 2                =  38 B
 *     granular   omega 16 + contact history 8 slots · 32             = 272 B
 *     sorted     spos 16 + svel 16 + somega 16 + smat 2              =  50 B
 *     ordering   keys 4 + arrival, then sorted index 4 + arrival order 4 = 12 B
 *     grid       cell start + cell count 2 · 4 (T + 1 entries)       =   8 B
 *                                                                     ------
 *                                                                     380 B
 * (the sorted index shares the arrival's buffer, B_VALS: the scatter reads the last arrival
 * before the placement writes the first sorted index, and the next substep's keys write the
 * arrivals after the contacts read the last index)
 * plus a fixed part (parameter block, 256 materials, 64 colliders, clock: ~16 KiB) and, on CUDA
 * devices, CUB's temporary storage for the scan. wfp_part_device_bytes() reports it all.
 *
 * The grid is built by counting, every substep (enqueue_substep): keys with integer-atomic
 * counts per cell, an exclusive scan into a dense start table (every cell, empty or not, and one
 * past the last: a row of three cells is two loads), each particle scattered into its cell's
 * range, then ordered within the cell by local index. That is the order of a stable sort by key
 * (which this replaced: CUB's radix sort took three passes over 22-bit keys for 2M particles),
 * and the order the contacts sum in, so results do not depend on the atomics' order.
 *
 * A substep's launches (one partition; a captured frame replays them as graph nodes):
 *     1  keys       wfp_keys          cell key, count per cell (atomic), extent, flags
 *     2  scan       wfp_scan          CUB DeviceScan: 2 kernels (tile-state init, scan)
 *     3  scatter    wfp_scatter       slot in the cell by arrival; thread 0 advances the clock
 *     4  place      wfp_place         rank in the cell by local index, sorted copies; clears the
 *                                     counts for the next substep (the scan has read them)
 *     5  contacts   wfp_contacts_*    pairs, colliders, history, integration (one kernel)
 * 6 kernel nodes. Before: 8 (a memset of the counts ahead of the keys and a one-thread clock
 * kernel after the contacts, now folded into place and scatter: the contacts read the substep's
 * start time from wfp_clock.start). A frame adds 3 nodes (collider forces cleared, extent reset,
 * clock copied out). The split solver adds its halo kernels (particles.c); coupled solvers'
 * hooks add theirs.
 *
 * The grid's box (wfp_params.dims) is refitted between frames without waiting: each frame ends
 * with a copy of the clock (which holds the frame's extent in cells) into pinned memory and an
 * event; the next step reads it if that event has completed and uploads new dimensions if the
 * particles have outgrown the box. Results do not depend on the box (see wfp_params).
 */
#include "part.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collider.h"
#include "hooks.h" /* wfp_view_get, wfp_hook_*: what a coupled solver may reach */
#include "internal/error.h"
#include "part.h"
#include "particle_internal.h"
#include "particle_kernels.h"

#define WFP_PI 3.14159265358979323846

/* ---- errors ------------------------------------------------------------------------------------
 */

/* Messages start with the solver's name ("particles 'sand': emitter 'hopper': spacing ..."). */
#define fail(st, ...) wf__error(st, NULL, __VA_ARGS__)

/* A GPU-layer call failed: keep its message, with what the solver was doing. */
static wf_status fail_gpu(wf_status st, const char *what) {
  char inner[768];
  snprintf(inner, sizeof inner, "%s", wf_last_error());
  return wf__error(st, NULL, "particles: %s: %s (%s)", what, inner, wf_status_str(st));
}

#define TRY(call, what)                                                                            \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return fail_gpu(st_, what);                                                  \
  } while (0)

static bool finite3(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

/* ---- the solver object -------------------------------------------------------------------------
 */

/* Buffers sized by the capacity (B_POS .. B_TEMP), then the fixed ones. */
enum {
  B_POS,
  B_VEL,
  B_GID,
  B_MAT,
  B_OMEGA, /* angular velocities (the granular state: omega and the contact history) */
  B_HIST,
  B_SPOS,
  B_SVEL,
  B_SOMEGA,
  B_SMAT,
  B_KEYS,
  B_VALS,
  B_KEYS_OUT,
  B_CELLS,
  B_COUNTS,
  B_TEMP,
  B_SIZED, /* the count of capacity-sized buffers */
  B_PARAMS = B_SIZED,
  B_MATS,
  B_COLLIDERS,
  B_CLOCK,
  B_FORCE,   /* the frame's impulses on the colliders (collider_force.h), zeroed as it begins */
  B_PARTIAL, /* the one-launch frame's scan: a sum per block (wfp_frame_run_args.partial) */
  B_MIRROR,  /* pinned host copy of the clock, written at the end of every frame */
  B_COUNT
};

struct wfp_part {
  char name[64];
  wf_device *dev;
  wf_stream *stream;
  bool own_stream;
  wf_particles_desc desc;
  uint32_t capacity, count, table;
  uint32_t launch;           /* 0, or the size the substep's kernels are launched over (wfp_live) */
  int32_t min_blocks;        /* tuning.contact_min_blocks: 3 to 8, -1 no cap, 0 automatic */
  int sms;                   /* CUDA: the device's multiprocessors (0: CPU, or unknown) */
  int one_launch;            /* wf_particles_tuning.one_launch: -1 off, 0 automatic, 1 on */
  uint32_t frame_blocks;     /* CUDA: the one-launch frame's most blocks (0: CPU, or unknown) */
  uint32_t generation;       /* counts the times the buffers were replaced (grow) */
  const float *drift_anchor; /* the split's drift check (wfp_part_set_drift), or NULL */
  wfp_drift_ctl *drift_ctl;
  int bits;
  wf_buffer *buf[B_COUNT];
  wf_graph *graph;
  wf_event *frame_done; /* recorded after the last frame launched */
  bool frame_pending;
  float max_radius;
  int32_t lo[3], hi[3]; /* cell extent the box was last fitted to */
  bool have_extent;
  wfp_params params;
  /* the point in the world the positions are relative to (docs/precision.md; the public layer
   * picks it, wfp_part_origin_set): emitters, added particles and colliders are moved into this
   * frame on the host, in double, rounded once */
  double origin[3];
  wfp_material mats[WFP_MAX_MATERIALS];
  uint32_t n_mats;
  /* the stability check (wfp_part_stability_check): each material as given, the smallest
   * radius and mass of its dynamic particles (0: none yet), and whether to check again */
  wf_particle_material given[WFP_MAX_MATERIALS];
  float rmin[WFP_MAX_MATERIALS], mmin[WFP_MAX_MATERIALS];
  bool recheck;
  wfp_collider colliders[WFP_MAX_COLLIDERS];
  wfx_dev collider_dev[WFP_MAX_COLLIDERS]; /* keyframes and meshes on this partition's device */
  /* the last frame's collider impulses as read (wfp_part_forces), and the seconds that frame
   * (or run of substeps) spanned */
  unsigned long long force_host[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS];
  double force_seconds;
  bool forces_on; /* the kernels sum the impulses (wfp_part_measure_forces); off: no adds, no clear
                   */
  struct {
    wfp_hook_fn fn;
    void *user;
  } hooks[WFP_MAX_HOOKS]; /* coupled solvers, called inside every substep (coupling.h) */
  int n_hooks;
};

static void *ptr(wfp_part *ps, int b) { return wf_buffer_ptr(ps->buf[b]); }

#define HIST_BYTES (WFP_HIST_SLOTS * sizeof(wfp_hist)) /* one particle's history */

wf_particles_desc wf_particles_desc_default(void) {
  return (wf_particles_desc){.name = "particles",
                             .capacity = 0,
                             .substeps = 64,
                             .frame_dt = 1.0f / 60.0f,
                             .gravity = {0.0f, -9.81f, 0.0f},
                             .contact_model = WF_CONTACT_DEM,
                             .relaxation = 1.5f,
                             .imbalance = 0.01f,
                             .repartition_frames = 1};
}

wf_particle_material wf_particle_material_default(void) {
  /* glass beads with a reduced stiffness (weft/particles.h, wf_particle_material) */
  return (wf_particle_material){.stiffness = 1e4f,
                                .restitution = 0.9f,
                                .friction = 0.5f,
                                .rolling_friction = 0.01f,
                                .young = 5e7f,
                                .poisson = 0.25f};
}

wf_particles_emitter wf_particles_emitter_default(void) {
  return (wf_particles_emitter){.name = "emitter",
                                .shape = WF_EMIT_BOX,
                                .center = {0.0f, 1.0f, 0.0f},
                                .half_extents = {0.5f, 0.5f, 0.5f},
                                .sphere_radius = 0.5f,
                                .radius = 0.05f,
                                .spacing = 0.1f,
                                .density = 1000.0f};
}

wf_collider_desc wf_collider_desc_default(void) {
  return (wf_collider_desc){.name = "collider",
                            .type = WF_COLLIDER_PLANE,
                            .normal = {0.0f, 1.0f, 0.0f},
                            .friction = 0.5f,
                            .restitution = 0.5f};
}

double wf_particles_zeta_for_restitution(double e) {
  if (e <= 0.0) return 1.0; /* critical damping: no rebound */
  if (e >= 1.0) return 0.0;
  double l = log(e);
  return -l / sqrt(WFP_PI * WFP_PI + l * l);
}

/* ---- uploads of the host mirrors ---------------------------------------------------------------
 */

static wf_status upload_params(wfp_part *ps) {
  ps->params.count = ps->count;
  /* mesh colliders look for triangles within a cell (>= the largest particle's diameter) */
  TRY(wfx_sync_reach(ps->colliders, ps->params.n_colliders, ps->params.cell, 0.0f,
                     ps->buf[B_COLLIDERS], ps->stream),
      "uploading a collider");
  TRY(wf_upload(ps->buf[B_PARAMS], 0, &ps->params, sizeof ps->params, ps->stream),
      "uploading the parameter block");
  return WF_OK;
}

static void params_from(wfp_part *ps, const wf_particles_params *p) {
  float dt = p->frame_dt / (float)ps->desc.substeps;
  ps->params.gravity = (wfp_f4){p->gravity[0], p->gravity[1], p->gravity[2], 0.0f};
  ps->params.dt = dt;
  ps->params.damp = 1.0f / (1.0f + p->damping * dt);
  ps->desc.frame_dt = p->frame_dt;
  memcpy(ps->desc.gravity, p->gravity, sizeof ps->desc.gravity);
  ps->desc.damping = p->damping;
}

static wf_status check_params(const char *name, const wf_particles_params *p) {
  if (!(p->frame_dt > 0.0f) || !isfinite(p->frame_dt))
    return fail(WF_ERR_INVALID, "particles '%s': frame_dt %g must be a finite number > 0", name,
                (double)p->frame_dt);
  if (!finite3(p->gravity))
    return fail(WF_ERR_INVALID, "particles '%s': gravity must be finite", name);
  if (!(p->damping >= 0.0f) || !isfinite(p->damping))
    return fail(WF_ERR_INVALID, "particles '%s': damping %g must be a finite number >= 0", name,
                (double)p->damping);
  return WF_OK;
}

/* ---- create / destroy --------------------------------------------------------------------------
 */

/* Allocates the capacity-sized buffers for `capacity` particles into buf (NULLs on failure). */
static wf_status alloc_sized(wfp_part *ps, uint32_t capacity, wf_buffer **buf, uint32_t *table,
                             int *bits) {
  /* the cell table has one entry per particle of capacity (the box needs no power of two) */
  uint32_t T = capacity > 64 ? capacity : 64;
  int nb = 6;
  while (nb < 32 && (1ull << nb) < T)
    nb++;
  size_t C = capacity;
  size_t bytes[B_SIZED] = {[B_POS] = C * sizeof(wfp_f4),
                           [B_VEL] = C * sizeof(wfp_f4),
                           [B_GID] = C * 4,
                           [B_MAT] = C * 2,
                           [B_OMEGA] = C * sizeof(wfp_f4),
                           [B_HIST] = C * WFP_HIST_SLOTS * sizeof(wfp_hist),
                           [B_SPOS] = C * sizeof(wfp_f4),
                           [B_SVEL] = C * sizeof(wfp_f4),
                           [B_SOMEGA] = C * sizeof(wfp_f4),
                           [B_SMAT] = C * 2,
                           [B_KEYS] = C * 4,
                           [B_VALS] = C * 4,
                           [B_KEYS_OUT] = C * 4,
                           [B_CELLS] = ((size_t)T + 1) * 4,
                           [B_COUNTS] = ((size_t)T + 1) * 4,
                           [B_TEMP] = 0};
  bytes[B_TEMP] = wfp_scan_temp_bytes(ps->dev, T + 1);
  if (wf_device_is_cuda(ps->dev) && !bytes[B_TEMP])
    return fail(WF_ERR_BACKEND, "particles '%s': cannot size CUB's scan storage", ps->name);
  for (int b = 0; b < B_SIZED; b++) {
    buf[b] = NULL;
    if (!bytes[b]) continue;
    wf_status st = wf_buffer_create(ps->dev, bytes[b], WF_BUFFER_ZERO, ps->stream, &buf[b]);
    if (st != WF_OK) {
      char what[160];
      snprintf(what, sizeof what,
               "allocating %zu bytes of device memory for %u particles (lower the particle "
               "count or the capacity)",
               bytes[b], capacity);
      fail_gpu(st, what);
      for (int k = 0; k < b; k++)
        if (buf[k]) wf_buffer_destroy(buf[k], ps->stream), buf[k] = NULL;
      return st;
    }
  }
  *table = T, *bits = nb;
  return WF_OK;
}

/* Fits the grid's periodic box to the cell extent lo..hi (plus one cell of margin each side):
 * at least 4 cells per axis, product at most the table; when the particles spread over more
 * cells than the table holds, the longest axes shrink (distant cells then share keys). */
static void fit_box(wfp_part *ps, const int32_t *lo, const int32_t *hi) {
  int64_t d[3];
  for (int k = 0; k < 3; k++) {
    d[k] = (int64_t)hi[k] - lo[k] + 3;
    if (d[k] < 4) d[k] = 4;
    if (d[k] > ps->table) d[k] = ps->table;
    ps->lo[k] = lo[k], ps->hi[k] = hi[k];
  }
  for (int guard = 0; guard < 64 && d[0] * d[1] * d[2] > (int64_t)ps->table; guard++) {
    int m = d[0] >= d[1] && d[0] >= d[2] ? 0 : d[1] >= d[2] ? 1 : 2;
    int64_t rest = d[(m + 1) % 3] * d[(m + 2) % 3];
    int64_t fit = (int64_t)ps->table / rest;
    d[m] = fit < d[m] ? fit : d[m] - 1;
    if (d[m] < 4) d[m] = 4;
  }
  for (int k = 0; k < 3; k++)
    ps->params.dims[k] = (int32_t)d[k];
  ps->have_extent = true;
}

static bool box_covers(const wfp_part *ps, const int32_t *lo, const int32_t *hi) {
  for (int k = 0; k < 3; k++)
    if ((int64_t)hi[k] - lo[k] + 3 > ps->params.dims[k]) return false;
  return true;
}

/* The parameters a desc starts with (wf_particles_params_get's view of it). */
static wf_particles_params params_of(const wf_particles_desc *d) {
  return (wf_particles_params){.frame_dt = d->frame_dt,
                               .gravity = {d->gravity[0], d->gravity[1], d->gravity[2]},
                               .damping = d->damping};
}

/* Validation: every desc field a partition uses, each in its range. */
static wf_status check_desc(const wf_particles_desc *desc, const char *name) {
  if (desc->capacity > (1u << 30))
    return fail(WF_ERR_INVALID, "particles '%s': capacity %u exceeds 2^30", name, desc->capacity);
  if (desc->substeps <= 0)
    return fail(WF_ERR_INVALID, "particles '%s': substeps %d must be > 0", name, desc->substeps);
  if (!(desc->cell_size >= 0.0f) || !isfinite(desc->cell_size))
    return fail(WF_ERR_INVALID, "particles '%s': cell_size %g must be >= 0 (0: automatic)", name,
                (double)desc->cell_size);
  if (desc->contact_model != WF_CONTACT_DEM && desc->contact_model != WF_CONTACT_XPBD &&
      desc->contact_model != WF_CONTACT_HERTZ)
    return fail(WF_ERR_INVALID,
                "particles '%s': contact_model %d is not WF_CONTACT_DEM, WF_CONTACT_XPBD or "
                "WF_CONTACT_HERTZ",
                name, desc->contact_model);
  if (!(desc->relaxation > 0.0f && desc->relaxation <= 2.0f))
    return fail(WF_ERR_INVALID, "particles '%s': relaxation %g must be in (0, 2]", name,
                (double)desc->relaxation);
  int mb = desc->tuning.contact_min_blocks;
  if (mb != 0 && mb != -1 && (mb < 3 || mb > 8))
    return fail(WF_ERR_INVALID,
                "particles '%s': tuning.contact_min_blocks %d must be 3 to 8, or -1 (no cap; 0: "
                "automatic)",
                name, mb);
  int ol = desc->tuning.one_launch;
  if (ol < -1 || ol > 1)
    return fail(WF_ERR_INVALID,
                "particles '%s': tuning.one_launch %d must be -1 (off), 0 (automatic) or 1 (on)",
                name, ol);
  wf_particles_params p0 = params_of(desc);
  return check_params(name, &p0);
}

/* The object: its name, desc, capacity, the contact kernels' variant and its stream. */
static wf_status part_new(wf_device *dev, const wf_particles_desc *desc, const char *name,
                          wfp_part **out) {
  wfp_part *ps = calloc(1, sizeof *ps);
  if (!ps) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", name);
  snprintf(ps->name, sizeof ps->name, "%s", name);
  ps->dev = dev;
  ps->desc = *desc;
  ps->desc.name = ps->name;
  ps->capacity = desc->capacity ? desc->capacity : 1024;
  ps->min_blocks = desc->tuning.contact_min_blocks; /* resolved a launch: contact_blocks */
  wf_device_info info;
  if (wf_device_is_cuda(dev) && wf_device_info_get(dev, &info) == WF_OK)
    ps->sms = info.multiprocessors;
  ps->one_launch = desc->tuning.one_launch;
  ps->frame_blocks = wfp_frame_blocks(dev, desc->contact_model == WF_CONTACT_XPBD);
  if (desc->stream) {
    ps->stream = desc->stream;
  } else {
    wf_status st = wf_stream_create(dev, 0, &ps->stream);
    if (st != WF_OK) {
      free(ps);
      return fail_gpu(st, "creating the solver's stream");
    }
    ps->own_stream = true;
  }
  *out = ps;
  return WF_OK;
}

/* Buffers: the capacity-sized ones, the fixed tables, the pinned clock mirror, the frame event. */
static wf_status alloc_buffers(wfp_part *ps) {
  wf_status st = alloc_sized(ps, ps->capacity, ps->buf, &ps->table, &ps->bits);
  size_t fixed[B_COUNT - B_SIZED] = {sizeof(wfp_params),   sizeof ps->mats,
                                     sizeof ps->colliders, sizeof(wfp_clock),
                                     WFX_FORCE_BYTES,      ((size_t)ps->frame_blocks + 1) * 4,
                                     sizeof(wfp_clock)};
  wf_device *host = NULL; /* pinned buffers live on a CPU device */
  if (st == WF_OK && (st = wf_device_get("cpu", &host)) != WF_OK) fail_gpu(st, "finding cpu:0");
  for (int b = B_SIZED; b < B_COUNT && st == WF_OK; b++) {
    st = wf_buffer_create(b == B_MIRROR ? host : ps->dev, fixed[b - B_SIZED],
                          b == B_MIRROR ? WF_BUFFER_PINNED | WF_BUFFER_ZERO : WF_BUFFER_ZERO,
                          b == B_MIRROR ? NULL : ps->stream, &ps->buf[b]);
    if (st != WF_OK) fail_gpu(st, "allocating the solver's tables");
  }
  if (st == WF_OK) {
    st = wf_event_create(ps->dev, 0, &ps->frame_done);
    if (st != WF_OK) fail_gpu(st, "creating an event");
  }
  return st;
}

/* Upload: the parameter block, the grid's first box, the clock and the default material. */
static wf_status upload_initial(wfp_part *ps) {
  const wf_particles_desc *desc = &ps->desc;
  ps->params.cell = desc->cell_size;
  ps->params.inv_cell = desc->cell_size > 0.0f ? 1.0f / desc->cell_size : 1.0f;
  ps->params.model = (uint32_t)desc->contact_model;
  ps->params.relaxation = desc->relaxation;
  int32_t zero[3] = {0, 0, 0};
  fit_box(ps, zero, zero);
  ps->have_extent = false;
  wf_particles_params p0 = params_of(desc);
  params_from(ps, &p0);
  wfp_clock clock = {.time = 0.0, .substeps = 0, .flags = 0, .first_bad = UINT32_MAX};
  wf_particle_material m = wf_particle_material_default();
  wf_status st = wf_upload(ps->buf[B_CLOCK], 0, &clock, sizeof clock, ps->stream);
  if (st != WF_OK) fail_gpu(st, "uploading the clock");
  if (st == WF_OK) st = upload_params(ps);
  if (st == WF_OK) st = wfp_part_add_material(ps, &m, NULL);
  return st;
}

wf_status wfp_part_create(wf_device *dev, const wf_particles_desc *desc, wfp_part **out) {
  if (!out) return fail(WF_ERR_INVALID, "particles: out is NULL");
  *out = NULL;
  if (!dev || !desc) return fail(WF_ERR_INVALID, "particles: device or desc is NULL");
  const char *name = desc->name ? desc->name : "particles";
  wfp_part *ps = NULL;
  wf_status st = check_desc(desc, name);
  if (st == WF_OK) st = part_new(dev, desc, name, &ps);
  if (st != WF_OK) return st;
  st = alloc_buffers(ps);
  if (st == WF_OK) st = upload_initial(ps);
  if (st != WF_OK) {
    wfp_part_destroy(ps);
    return st;
  }
  *out = ps;
  return WF_OK;
}

void wfp_part_destroy(wfp_part *ps) {
  if (!ps) return;
  if (ps->stream) wf_stream_synchronize(ps->stream);
  for (int h = 0; h < ps->n_hooks; h++) /* coupled solvers forget this one */
    ps->hooks[h].fn(ps->hooks[h].user, WFP_HOOK_DETACH);
  if (ps->graph) wf_graph_destroy(ps->graph);
  if (ps->frame_done) wf_event_destroy(ps->frame_done);
  for (uint32_t k = 0; k < ps->params.n_colliders; k++)
    wfx_dev_release(&ps->collider_dev[k], ps->stream);
  for (int b = 0; b < B_COUNT; b++)
    if (ps->buf[b]) wf_buffer_destroy(ps->buf[b], b == B_MIRROR ? NULL : ps->stream);
  if (ps->own_stream) wf_stream_destroy(ps->stream);
  free(ps);
}

uint32_t wfp_part_capacity(const wfp_part *ps) { return ps ? ps->capacity : 0; }

/* ---- materials ---------------------------------------------------------------------------------
 */

static wf_status material_convert(const wfp_part *ps, uint32_t index, const wf_particle_material *m,
                                  wfp_material *out) {
  const char *fields[] = {"stiffness",  "damping",  "restitution",     "friction",
                          "tangential", "cohesion", "static_friction", "rolling_friction",
                          "young",      "poisson",  "tangential_ratio"};
  const float vals[] = {m->stiffness,  m->damping,  m->restitution,     m->friction,
                        m->tangential, m->cohesion, m->static_friction, m->rolling_friction,
                        m->young,      m->poisson,  m->tangential_ratio};
  for (int i = 0; i < 11; i++)
    if (!(vals[i] >= 0.0f) || !isfinite(vals[i]))
      return fail(WF_ERR_INVALID, "particles '%s': material %u: %s %g must be a finite number >= 0",
                  ps->name, index, fields[i], (double)vals[i]);
  if (!(m->stiffness > 0.0f))
    return fail(WF_ERR_INVALID, "particles '%s': material %u: stiffness must be > 0 (N/m)",
                ps->name, index);
  if (m->restitution > 1.0f)
    return fail(WF_ERR_INVALID, "particles '%s': material %u: restitution %g must be in [0, 1]",
                ps->name, index, (double)m->restitution);
  if (!(m->young > 0.0f))
    return fail(WF_ERR_INVALID,
                "particles '%s': material %u: young %g must be > 0 (Young's modulus, Pa)", ps->name,
                index, (double)m->young);
  if (!(m->poisson < 0.5f))
    return fail(WF_ERR_INVALID, "particles '%s': material %u: poisson %g must be in [0, 0.5)",
                ps->name, index, (double)m->poisson);
  if (m->static_friction > 0.0f && m->static_friction < m->friction)
    return fail(WF_ERR_INVALID,
                "particles '%s': material %u: static_friction %g is below friction %g (0: the "
                "same as friction)",
                ps->name, index, (double)m->static_friction, (double)m->friction);
  if (m->tangential_ratio > 10.0f)
    return fail(WF_ERR_INVALID,
                "particles '%s': material %u: tangential_ratio %g must be in (0, 10] (0: "
                "2(1-nu)/(2-nu))",
                ps->name, index, (double)m->tangential_ratio);
  double nu = m->poisson, E = m->young;
  *out = (wfp_material){
      .stiffness = m->stiffness,
      .damping = m->damping,
      .zeta = (float)wf_particles_zeta_for_restitution(m->restitution),
      .friction = m->friction,
      .tangential = m->tangential,
      .cohesion = m->cohesion,
      .static_friction = m->static_friction > 0.0f ? m->static_friction : m->friction,
      .rolling = m->rolling_friction,
      .young_term = (float)((1.0 - nu * nu) / E),
      .shear_term = (float)(2.0 * (2.0 - nu) * (1.0 + nu) / E),
      .kt_ratio = m->tangential_ratio > 0.0f ? m->tangential_ratio
                                             : (float)(2.0 * (1.0 - nu) / (2.0 - nu))};
  return WF_OK;
}

wf_status wfp_part_set_material(wfp_part *ps, uint32_t index, const wf_particle_material *m) {
  if (!ps || !m) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (index >= ps->n_mats)
    return fail(WF_ERR_INVALID, "particles '%s': material %u does not exist (%u materials)",
                ps->name, index, ps->n_mats);
  wf_status st = material_convert(ps, index, m, &ps->mats[index]);
  if (st != WF_OK) return st;
  ps->given[index] = *m;
  ps->recheck = true;
  TRY(wf_upload(ps->buf[B_MATS], index * sizeof(wfp_material), &ps->mats[index],
                sizeof(wfp_material), ps->stream),
      "uploading a material");
  return WF_OK;
}

wf_status wfp_part_add_material(wfp_part *ps, const wf_particle_material *m, uint32_t *index) {
  if (!ps || !m) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (ps->n_mats >= WFP_MAX_MATERIALS)
    return fail(WF_ERR_INVALID, "particles '%s': at most %d materials", ps->name,
                WFP_MAX_MATERIALS);
  ps->n_mats++;
  wf_status st = wfp_part_set_material(ps, ps->n_mats - 1, m);
  if (st != WF_OK) {
    ps->n_mats--;
    return st;
  }
  if (index) *index = ps->n_mats - 1;
  return WF_OK;
}

/* ---- adding particles --------------------------------------------------------------------------
 */

/* Adding particles changes the count baked into the captured frame: drop it. */
static void drop_graph(wfp_part *ps) {
  if (!ps->graph) return;
  wf_stream_synchronize(ps->stream);
  wf_graph_destroy(ps->graph);
  ps->graph = NULL;
}

/* Room for `need` particles: every capacity-sized buffer is reallocated (x1.5 at least) and the
 * state copied over, in stream order. */
static wf_status grow(wfp_part *ps, uint64_t need) {
  if (need > (1u << 30))
    return fail(WF_ERR_INVALID, "particles '%s': %llu particles exceed the limit of 2^30", ps->name,
                (unsigned long long)need);
  uint64_t cap = (uint64_t)ps->capacity + ps->capacity / 2;
  if (cap < need) cap = need;
  if (cap > (1u << 30)) cap = 1u << 30;
  wf_buffer *nb[B_SIZED];
  uint32_t table;
  int bits;
  wf_status st = alloc_sized(ps, (uint32_t)cap, nb, &table, &bits);
  if (st != WF_OK) return st;
  drop_graph(ps);
  ps->generation++;
  size_t n = ps->count;
  size_t elem[] = {[B_POS] = 16, [B_VEL] = 16,   [B_GID] = 4,
                   [B_MAT] = 2,  [B_OMEGA] = 16, [B_HIST] = WFP_HIST_SLOTS * sizeof(wfp_hist)};
  for (int b = B_POS; b <= B_HIST && st == WF_OK && n; b++)
    st = wf_copy(nb[b], 0, ps->buf[b], 0, n * elem[b], ps->stream);
  if (st != WF_OK) {
    fail_gpu(st, "copying particles into grown buffers");
    for (int b = 0; b < B_SIZED; b++)
      if (nb[b]) wf_buffer_destroy(nb[b], ps->stream);
    return st;
  }
  for (int b = 0; b < B_SIZED; b++) {
    if (ps->buf[b]) wf_buffer_destroy(ps->buf[b], ps->stream);
    ps->buf[b] = nb[b];
  }
  ps->capacity = (uint32_t)cap;
  ps->table = table, ps->bits = bits;
  if (ps->have_extent) fit_box(ps, ps->lo, ps->hi);
  return upload_params(ps);
}

/* Validated particles of one batch, already converted. */
static wf_status append(wfp_part *ps, uint32_t n, const wfp_f4 *pos, const wfp_f4 *vel,
                        const float *birth, uint16_t material, const char *what) {
  float rmax = ps->max_radius;
  for (uint32_t i = 0; i < n; i++)
    rmax = fmaxf(rmax, pos[i].w);
  if (ps->desc.cell_size > 0.0f && ps->desc.cell_size < 2.0f * rmax)
    return fail(WF_ERR_INVALID,
                "particles '%s': %s: particle radius %g needs cell_size >= %g, but cell_size is %g",
                ps->name, what, (double)rmax, 2.0 * rmax, (double)ps->desc.cell_size);
  wf_status st = WF_OK;
  if ((uint64_t)ps->count + n > ps->capacity && (st = grow(ps, (uint64_t)ps->count + n)) != WF_OK)
    return st;
  uint32_t *gid = malloc((size_t)n * 4);
  uint16_t *mat = malloc((size_t)n * 2);
  wfp_f4 *om = birth ? calloc(n, sizeof *om) : NULL; /* omega.w: the birth time */
  if (!gid || !mat || (birth && !om)) {
    free(gid), free(mat), free(om);
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", ps->name);
  }
  for (uint32_t i = 0; om && i < n; i++)
    om[i].w = birth[i];
  for (uint32_t i = 0; i < n; i++)
    gid[i] = ps->count + i, mat[i] = material;
  for (uint32_t i = 0; i < n; i++) { /* the smallest particles set the substep */
    if (vel[i].w == 0.0f) continue;  /* kinematic (negative: not born yet, see wfp_awake) */
    float r = pos[i].w, mass = 1.0f / fabsf(vel[i].w);
    if (ps->rmin[material] == 0.0f || r < ps->rmin[material]) ps->rmin[material] = r;
    if (ps->mmin[material] == 0.0f || mass < ps->mmin[material]) ps->mmin[material] = mass;
    ps->recheck = true;
  }
  size_t at = ps->count;
  drop_graph(ps);
  if ((st = wf_upload(ps->buf[B_POS], at * 16, pos, (size_t)n * 16, ps->stream)) == WF_OK &&
      (st = wf_upload(ps->buf[B_VEL], at * 16, vel, (size_t)n * 16, ps->stream)) == WF_OK &&
      (st = wf_upload(ps->buf[B_GID], at * 4, gid, (size_t)n * 4, ps->stream)) == WF_OK &&
      (st = wf_upload(ps->buf[B_MAT], at * 2, mat, (size_t)n * 2, ps->stream)) == WF_OK &&
      (st = om ? wf_upload(ps->buf[B_OMEGA], at * 16, om, (size_t)n * 16, ps->stream)
               : wf_memset(ps->buf[B_OMEGA], 0, at * 16, (size_t)n * 16, ps->stream)) == WF_OK)
    st = wf_memset(ps->buf[B_HIST], 0, at * HIST_BYTES, (size_t)n * HIST_BYTES, ps->stream);
  free(gid), free(mat), free(om);
  if (st != WF_OK) return fail_gpu(st, "uploading particles");
  ps->count += n;
  if (rmax > ps->max_radius && ps->desc.cell_size == 0.0f) {
    ps->params.cell = 2.0f * rmax;
    ps->params.inv_cell = 1.0f / ps->params.cell;
    ps->have_extent = false; /* the extent in cells changed meaning: refit from the particles */
  }
  ps->max_radius = rmax;
  /* the box must cover the new particles too */
  int32_t lo[3], hi[3];
  for (int k = 0; k < 3; k++)
    lo[k] = ps->have_extent ? ps->lo[k] : INT32_MAX,
    hi[k] = ps->have_extent ? ps->hi[k] : INT32_MIN;
  for (uint32_t i = 0; i < n; i++) {
    int bad = 0;
    float x[3] = {pos[i].x, pos[i].y, pos[i].z};
    for (int k = 0; k < 3; k++) {
      int32_t c = wfp_cell_coord(x[k], ps->params.inv_cell, &bad);
      lo[k] = c < lo[k] ? c : lo[k], hi[k] = c > hi[k] ? c : hi[k];
    }
  }
  if (!ps->have_extent || !box_covers(ps, lo, hi)) fit_box(ps, lo, hi);
  return upload_params(ps);
}

wf_status wfp_part_add(wfp_part *ps, const double *from, uint32_t n, const float (*pos)[4],
                       const float (*vel)[4], const float *birth, uint32_t material,
                       uint32_t *first) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (n == 0) return fail(WF_ERR_INVALID, "particles '%s': n is 0 (zero particles)", ps->name);
  if (!pos) return fail(WF_ERR_INVALID, "particles '%s': pos is NULL", ps->name);
  if (material >= ps->n_mats)
    return fail(WF_ERR_INVALID, "particles '%s': material %u does not exist", ps->name, material);
  for (uint32_t i = 0; i < n; i++) {
    if (!finite3(pos[i]))
      return fail(WF_ERR_INVALID,
                  "particles '%s': pos[%u] is not finite (NaN or "
                  "inf position)",
                  ps->name, i);
    if (!(pos[i][3] > 0.0f) || !isfinite(pos[i][3]))
      return fail(WF_ERR_INVALID, "particles '%s': pos[%u].w (radius) is %g; it must be > 0",
                  ps->name, i, (double)pos[i][3]);
    if (vel && (!finite3(vel[i]) || !(vel[i][3] >= 0.0f) || !isfinite(vel[i][3])))
      return fail(WF_ERR_INVALID,
                  "particles '%s': vel[%u] must be finite with .w (inverse "
                  "mass) >= 0",
                  ps->name, i);
    if (birth && !(birth[i] >= 0.0f && birth[i] < 3e38f))
      return fail(WF_ERR_INVALID, "particles '%s': birth[%u] is %g; it must be a time >= 0 (s)",
                  ps->name, i, (double)birth[i]);
    if (birth && birth[i] > 0.0f && !(vel && vel[i][3] > 0.0f))
      return fail(WF_ERR_INVALID,
                  "particles '%s': particle %u is born at %g s but is kinematic (inverse mass 0): "
                  "only dynamic particles can wait for their birth",
                  ps->name, i, (double)birth[i]);
  }
  wfp_f4 *p = malloc((size_t)n * sizeof *p), *v = calloc(n, sizeof *v);
  if (!p || !v) {
    free(p), free(v);
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", ps->name);
  }
  /* positions relative to `from` (NULL: world positions) into the solver's frame, in double,
   * rounded once; relative to the solver's own origin they are taken as they are */
  static const double world[3] = {0.0, 0.0, 0.0};
  const double *f = from ? from : world, *o = ps->origin;
  double sh[3] = {f[0] - o[0], f[1] - o[1], f[2] - o[2]};
  for (uint32_t i = 0; i < n; i++) {
    p[i] = (wfp_f4){sh[0] == 0.0 ? pos[i][0] : (float)((double)pos[i][0] + sh[0]),
                    sh[1] == 0.0 ? pos[i][1] : (float)((double)pos[i][1] + sh[1]),
                    sh[2] == 0.0 ? pos[i][2] : (float)((double)pos[i][2] + sh[2]), pos[i][3]};
    if (vel)
      v[i] = (wfp_f4){vel[i][0], vel[i][1], vel[i][2], vel[i][3]};
    else
      v[i].w = 1.0f;
  }
  for (uint32_t i = 0; birth && i < n; i++) /* not born yet: a negative inverse mass */
    if (birth[i] > 0.0f) v[i].w = -v[i].w;
  uint32_t at = ps->count;
  wf_status st = append(ps, n, p, v, birth, (uint16_t)material, "wfp_part_add");
  free(p), free(v);
  if (st == WF_OK && first) *first = at;
  return st;
}

/* splitmix64: the jitter of a particle depends only on (seed, global id). */
static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static float unit_jitter(uint64_t *state) { /* uniform in [-1, 1) */
  *state = splitmix64(*state);
  return (float)((double)(*state >> 40) / (double)(1ull << 23) - 1.0);
}

#define EBAD(...) fail(WF_ERR_INVALID, "particles '%s': emitter '%s': " __VA_ARGS__)

/* Validation of an emitter; half receives its region's half extents. */
static wf_status check_emitter(const wfp_part *ps, const wf_particles_emitter *e, const char *nm,
                               float half[3]) {
  if (e->shape != WF_EMIT_BOX && e->shape != WF_EMIT_SPHERE)
    return EBAD("shape %d is not WF_EMIT_BOX or WF_EMIT_SPHERE", ps->name, nm, e->shape);
  if (!finite3(e->center)) return EBAD("center is not finite (NaN position)", ps->name, nm);
  if (!finite3(e->velocity)) return EBAD("velocity is not finite", ps->name, nm);
  if (!(e->radius > 0.0f) || !isfinite(e->radius))
    return EBAD("radius %g must be > 0", ps->name, nm, (double)e->radius);
  if (!(e->spacing > 0.0f) || !isfinite(e->spacing))
    return EBAD("spacing %g must be > 0", ps->name, nm, (double)e->spacing);
  if (e->spacing < 2.0f * e->radius)
    return EBAD("spacing %g is less than 2 * radius %g: particles would overlap", ps->name, nm,
                (double)e->spacing, 2.0 * e->radius);
  if (!(e->jitter >= 0.0f) || !(e->jitter < 0.5f * e->spacing))
    return EBAD("jitter %g must be in [0, spacing / 2 = %g)", ps->name, nm, (double)e->jitter,
                0.5 * e->spacing);
  if (e->material >= ps->n_mats)
    return EBAD("material %u does not exist (%u materials)", ps->name, nm, e->material, ps->n_mats);
  if (!e->kinematic && !(e->mass > 0.0f) && !(e->density > 0.0f))
    return EBAD("density %g must be > 0 (or give mass)", ps->name, nm, (double)e->density);
  if (!(e->mass >= 0.0f) || !isfinite(e->mass) || !isfinite(e->density))
    return EBAD("mass %g must be a finite number >= 0", ps->name, nm, (double)e->mass);
  if (e->shape == WF_EMIT_SPHERE) {
    if (!(e->sphere_radius >= 0.0f) || !isfinite(e->sphere_radius))
      return EBAD("sphere_radius %g must be >= 0", ps->name, nm, (double)e->sphere_radius);
    half[0] = half[1] = half[2] = e->sphere_radius;
    return WF_OK;
  }
  for (int k = 0; k < 3; k++) {
    if (!(e->half_extents[k] >= 0.0f) || !isfinite(e->half_extents[k]))
      return EBAD("half_extents[%d] %g must be >= 0", ps->name, nm, k, (double)e->half_extents[k]);
    half[k] = e->half_extents[k];
  }
  return WF_OK;
}

/* Topology: the lattice points of the emitter's region, cells[0] x cells[1] x cells[2] cells of
 * size `spacing`, a particle at each cell centre the sphere (if one) holds. With p and v NULL
 * only counts them; else fills p and v (seeded jitter, velocity, inverse mass). Returns the
 * count. */
static uint32_t lattice_points(const wfp_part *ps, const wf_particles_emitter *e,
                               const uint64_t cells[3], float inv_mass, wfp_f4 *p, wfp_f4 *v) {
  float r2 = e->sphere_radius * e->sphere_radius;
  uint32_t n = 0;
  for (uint64_t iz = 0; iz < cells[2]; iz++)
    for (uint64_t iy = 0; iy < cells[1]; iy++)
      for (uint64_t ix = 0; ix < cells[0]; ix++) {
        float d[3] = {((float)ix + 0.5f) * e->spacing - 0.5f * (float)cells[0] * e->spacing,
                      ((float)iy + 0.5f) * e->spacing - 0.5f * (float)cells[1] * e->spacing,
                      ((float)iz + 0.5f) * e->spacing - 0.5f * (float)cells[2] * e->spacing};
        if (e->shape == WF_EMIT_SPHERE && d[0] * d[0] + d[1] * d[1] + d[2] * d[2] > r2) continue;
        if (!p) {
          n++;
          continue;
        }
        uint64_t rng = e->seed ^ splitmix64(ps->count + n);
        for (int k = 0; k < 3; k++)
          d[k] += e->jitter * unit_jitter(&rng);
        /* the world position in double, relative to the origin, rounded once */
        const double *o = ps->origin;
        p[n] = (wfp_f4){(float)((double)e->center[0] + (double)d[0] - o[0]),
                        (float)((double)e->center[1] + (double)d[1] - o[1]),
                        (float)((double)e->center[2] + (double)d[2] - o[2]), e->radius};
        v[n] = (wfp_f4){e->velocity[0], e->velocity[1], e->velocity[2], inv_mass};
        n++;
      }
  return n;
}

wf_status wfp_part_emit(wfp_part *ps, const wf_particles_emitter *e, uint32_t *first,
                        uint32_t *count) {
  if (!ps || !e) return fail(WF_ERR_INVALID, "particles: NULL argument");
  const char *nm = e->name ? e->name : "emitter";
  float half[3];
  wf_status st = check_emitter(ps, e, nm, half);
  if (st != WF_OK) return st;
  uint64_t cells[3];
  for (int k = 0; k < 3; k++)
    cells[k] = (uint64_t)floor(2.0 * half[k] / e->spacing + 1e-6);
  uint64_t total = cells[0] * cells[1] * cells[2];
  if (total == 0)
    return EBAD("the region holds no particle at spacing %g (zero particles)", ps->name, nm,
                (double)e->spacing);
  if (total > (1u << 30))
    return EBAD("%llu lattice points are too many", ps->name, nm, (unsigned long long)total);
  double mass = e->mass > 0.0f ? e->mass : e->density * 4.0 / 3.0 * WFP_PI * pow(e->radius, 3);
  float inv_mass = e->kinematic ? 0.0f : (float)(1.0 / mass);
  uint32_t n = lattice_points(ps, e, cells, inv_mass, NULL, NULL);
  if (n == 0) return EBAD("the sphere holds no lattice point (zero particles)", ps->name, nm);
  wfp_f4 *p = malloc((size_t)n * sizeof *p), *v = malloc((size_t)n * sizeof *v);
  if (!p || !v) {
    free(p), free(v);
    return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", ps->name);
  }
  lattice_points(ps, e, cells, inv_mass, p, v);
  st = append(ps, n, p, v, NULL, (uint16_t)e->material, nm);
  free(p), free(v);
  if (st != WF_OK) return st;
  if (first) *first = ps->count - n;
  if (count) *count = n;
  return WF_OK;
}
#undef EBAD

/* ---- colliders ---------------------------------------------------------------------------------
 */

wf_status wfp_part_add_collider(wfp_part *ps, const wf_collider_desc *c, uint32_t *index) {
  if (!ps || !c) return fail(WF_ERR_INVALID, "particles: NULL argument");
  uint32_t k = ps->params.n_colliders;
  if (k >= WFP_MAX_COLLIDERS)
    return fail(WF_ERR_INVALID, "particles '%s': collider '%s': at most %d colliders", ps->name,
                c->name ? c->name : "collider", WFP_MAX_COLLIDERS);
  char owner[96];
  snprintf(owner, sizeof owner, "particles '%s'", ps->name);
  wfp_collider d;
  wf_status st = wfp_collider_from_desc(NULL, owner, c, &d);
  wf_collider_key *keys = NULL; /* keyframes move into the particles' frame before the upload */
  wf_collider_desc dl = *c;
  if (st == WF_OK && c->key_count > 0) {
    keys = malloc(c->key_count * sizeof *keys);
    if (!keys) return fail(WF_ERR_OUT_OF_MEMORY, "%s: collider keyframes", owner);
    wfp_keys_to_frame(c, ps->origin, keys, &dl);
  }
  if (st == WF_OK)
    st = wfx_dev_upload(NULL, owner, &dl, ps->dev, ps->stream, &d, &ps->collider_dev[k]);
  free(keys);
  if (st != WF_OK) return st;
  wfp_collider_to_frame(&d, ps->origin); /* the kernels see positions relative to it */
  ps->colliders[k] = d;
  TRY(wf_upload(ps->buf[B_COLLIDERS], k * sizeof d, &d, sizeof d, ps->stream),
      "uploading a collider");
  ps->params.n_colliders = k + 1;
  st = upload_params(ps);
  if (st == WF_OK && index) *index = k;
  return st;
}

wf_status wfp_part_set_collider_pose(wfp_part *ps, uint32_t k, const wf_collider_pose *pose) {
  static const char fn[] = "wf_particles_set_collider_pose";
  if (!ps) return wf__error(WF_ERR_INVALID, fn, "particles: NULL argument");
  if (k >= ps->params.n_colliders)
    return wf__error(WF_ERR_INVALID, fn, "particles '%s': collider %u does not exist (%u added)",
                     ps->name, k, ps->params.n_colliders);
  char owner[160];
  snprintf(owner, sizeof owner, "particles '%s': collider %u", ps->name, k);
  wfp_collider d = ps->colliders[k];
  int was_posed = wfp_collider_posed(&d);
  wf_status st = wfx_collider_set_pose(fn, owner, pose, &d);
  if (st != WF_OK) return st;
  /* the pose is the world's: into the particles' frame (an analytic collider turned for the
   * first time gives back its shape's shift first, rounded: docs/precision.md) */
  if (!was_posed && wfp_collider_posed(&d)) {
    const double *o = ps->origin, back[3] = {-o[0], -o[1], -o[2]};
    d.flags &= ~WFX_TURNS;
    wfp_collider_to_frame(&d, back);
    d.flags |= WFX_TURNS;
  }
  if (wfp_collider_posed(&d)) wfp_collider_to_frame(&d, ps->origin); /* else: pos stays */
  ps->colliders[k] = d;
  TRY(wf_upload(ps->buf[B_COLLIDERS], k * sizeof d, &d, sizeof d, ps->stream),
      "uploading a collider's pose");
  return WF_OK;
}

/* Only before any particle exists: the colliders added so far move from the old frame into the
 * new one (from the world's origin: as wfp_part_add_collider would have moved them; keyframes on
 * the device: read back, shifted, uploaded again). Whole-metre moves are exact. */
wf_status wfp_part_origin_set(wfp_part *ps, const double new_origin[3]) {
  if (ps->count > 0)
    return fail(WF_ERR_INVALID, "particles '%s': the origin is set before any particle", ps->name);
  double origin[3]; /* the move */
  for (int k = 0; k < 3; k++)
    origin[k] = new_origin[k] - ps->origin[k];
  memcpy(ps->origin, new_origin, sizeof ps->origin);
  for (uint32_t k = 0; k < ps->params.n_colliders; k++) {
    wfp_collider *c = &ps->colliders[k];
    if (c->n_keys > 0u && ps->collider_dev[k].keys) {
      size_t bytes = c->n_keys * sizeof(wfx_key);
      wfx_key *keys = malloc(bytes);
      if (!keys) return fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", ps->name);
      wf_status st = wf_stream_synchronize(ps->stream);
      if (st == WF_OK) st = wf_download(keys, ps->collider_dev[k].keys, 0, bytes);
      for (uint32_t i = 0; i < c->n_keys; i++) {
        keys[i].pos.x = (float)((double)keys[i].pos.x - origin[0]);
        keys[i].pos.y = (float)((double)keys[i].pos.y - origin[1]);
        keys[i].pos.z = (float)((double)keys[i].pos.z - origin[2]);
      }
      if (st == WF_OK) st = wf_upload(ps->collider_dev[k].keys, 0, keys, bytes, ps->stream);
      if (st == WF_OK) st = wf_stream_synchronize(ps->stream);
      free(keys);
      if (st != WF_OK) return fail_gpu(st, "moving a collider's keyframes");
    }
    wfp_collider_to_frame(c, origin);
    TRY(wf_upload(ps->buf[B_COLLIDERS], k * sizeof *c, c, sizeof *c, ps->stream),
        "uploading a collider");
  }
  return WF_OK;
}

void wfp_part_origin(const wfp_part *ps, double out[3]) {
  memcpy(out, ps->origin, sizeof ps->origin);
}

/* ---- parameters --------------------------------------------------------------------------------
 */

wf_particles_params wfp_part_params_get(const wfp_part *ps) { return params_of(&ps->desc); }

wf_status wfp_part_params_set(wfp_part *ps, const wf_particles_params *p) {
  if (!ps || !p) return fail(WF_ERR_INVALID, "particles: NULL argument");
  wf_status st = check_params(ps->name, p);
  if (st != WF_OK) return st;
  params_from(ps, p);
  return upload_params(ps);
}

wf_status wfp_part_drag_set(wfp_part *ps, bool on, uint32_t gid, const double target[3],
                            float stiffness, float damping) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: NULL argument");
  ps->params.drag_on = on ? 1u : 0u;
  ps->params.drag_gid = gid;
  ps->params.drag_k = stiffness, ps->params.drag_c = damping;
  double o[3];
  wfp_part_origin(ps, o);
  ps->params.drag_target = (wfp_f4){(float)(target[0] - o[0]), (float)(target[1] - o[1]),
                                    (float)(target[2] - o[2]), 0.0f};
  return upload_params(ps);
}

/* ---- the step ----------------------------------------------------------------------------------
 */

static wf_status launch(wfp_part *ps, const wf_kernel *k, size_t n, const void *args, size_t size) {
  wf_status st = wf_launch(k, n, args, size, ps->stream);
  if (st != WF_OK)
    return fail(st, "particles '%s': launching %s: %s", ps->name, k->name, wf_last_error());
  return WF_OK;
}

/* Runs the coupled solvers' hooks for one event, in the order they were added. */
static wf_status run_hooks(wfp_part *ps, int event) {
  for (int h = 0; h < ps->n_hooks; h++) {
    wf_status st = ps->hooks[h].fn(ps->hooks[h].user, event);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* Kernel arguments, one builder a struct (particle_math.h says what each kernel does with them).
 * `live`: the particle count on the device (wfp_live). */

/* The key arguments of the substep's grid (skip NULL). */
static wfp_keys_args keys_args(wfp_part *ps) {
  return (wfp_keys_args){.params = ptr(ps, B_PARAMS),
                         .pos = ptr(ps, B_POS),
                         .keys = ptr(ps, B_KEYS),
                         .vals = ptr(ps, B_VALS),
                         .count = ptr(ps, B_COUNTS),
                         .clock = ptr(ps, B_CLOCK),
                         .skip = NULL};
}

static wfp_scan_args scan_args(wfp_part *ps) {
  return (wfp_scan_args){.in = ptr(ps, B_COUNTS),
                         .out = ptr(ps, B_CELLS),
                         .n = ps->table + 1,
                         .temp = ps->buf[B_TEMP] ? ptr(ps, B_TEMP) : NULL,
                         .temp_bytes = ps->buf[B_TEMP] ? wf_buffer_size(ps->buf[B_TEMP]) : 0};
}

static wfp_scatter_args scatter_args(wfp_part *ps, const uint32_t *live) {
  return (wfp_scatter_args){.keys = ptr(ps, B_KEYS),
                            .arrival = ptr(ps, B_VALS),
                            .start = ptr(ps, B_CELLS),
                            .tmp = ptr(ps, B_KEYS_OUT),
                            .live = live,
                            .clock = ptr(ps, B_CLOCK),
                            .params = ptr(ps, B_PARAMS)};
}

static wfp_place_args place_args(wfp_part *ps, const uint32_t *live) {
  return (wfp_place_args){.tmp = ptr(ps, B_KEYS_OUT),
                          .keys = ptr(ps, B_KEYS),
                          .start = ptr(ps, B_CELLS),
                          .vals = ptr(ps, B_VALS), /* over the arrivals: see the top */
                          .pos = ptr(ps, B_POS),
                          .vel = ptr(ps, B_VEL),
                          .omega = ptr(ps, B_OMEGA),
                          .mat = ptr(ps, B_MAT),
                          .spos = ptr(ps, B_SPOS),
                          .svel = ptr(ps, B_SVEL),
                          .somega = ptr(ps, B_SOMEGA),
                          .smat = ptr(ps, B_SMAT),
                          .live = live,
                          .clock = ptr(ps, B_CLOCK),
                          .count = ptr(ps, B_COUNTS),
                          .count_n = ps->table + 1};
}

static wfp_collide_args collide_args(wfp_part *ps) {
  return (wfp_collide_args){.params = ptr(ps, B_PARAMS),
                            .mats = ptr(ps, B_MATS),
                            .colliders = ptr(ps, B_COLLIDERS),
                            .clock = ptr(ps, B_CLOCK),
                            .spos = ptr(ps, B_SPOS),
                            .svel = ptr(ps, B_SVEL),
                            .smat = ptr(ps, B_SMAT),
                            .keys = ptr(ps, B_KEYS_OUT),
                            .vals = ptr(ps, B_VALS),
                            .cell_start = ptr(ps, B_CELLS),
                            .cell_end = NULL, /* the dense table needs no end table */
                            .pos = ptr(ps, B_POS),
                            .vel = ptr(ps, B_VEL),
                            .somega = ptr(ps, B_SOMEGA),
                            .omega = ptr(ps, B_OMEGA),
                            .hist = ptr(ps, B_HIST),
                            .gid = ptr(ps, B_GID),
                            .anchor = ps->drift_anchor,
                            .drift = ps->drift_ctl,
                            .min_blocks = 0, /* set by the launch: contact_blocks */
                            .forces = ps->forces_on ? ptr(ps, B_FORCE) : NULL};
}

static wfp_frame_args frame_args(wfp_part *ps) {
  return (wfp_frame_args){.params = ptr(ps, B_PARAMS), .clock = ptr(ps, B_CLOCK)};
}

#define MARK(i)                                                                                    \
  if (marks) TRY(wf_event_record(marks[i], ps->stream), "recording a profile event")

/* A substep's first part: the grid by counting (particle_math.h, wfp_scan_args) up to the keys
 * and counts per cell, of every particle but those whose skip is NaN (skip NULL: all). The counts
 * are zero here: allocated so, and cleared by the last substep's placement. */
static wf_status substep_keys(wfp_part *ps, wf_event **marks, const float *skip) {
  uint32_t n = ps->count;
  if (n == 0) return WF_OK; /* (substep_rest runs the coupled solvers' hooks) */
  MARK(0);
  n = ps->launch > n ? ps->launch : n; /* the kernels read the count on the device */
  wfp_keys_args ka = keys_args(ps);
  ka.skip = skip;
  return launch(ps, &wfp_keys, n, &ka, sizeof ka);
}

/* The contact kernels' variant (wfp_collide_args.min_blocks) for a launch over n particles: the
 * tuning's; automatically, for DEM and Hertz on a GPU whose multiprocessors would each get more
 * than two blocks of 256, three blocks (80 registers, a few spilled: uncapped, the granular
 * kernel takes ~110, which leaves room for two), else no cap. On an H200 three blocks were 10 %
 * faster at 2M particles and, with fewer blocks than room, 6 % slower at 65k (uncapped: no
 * spills), bench/results/nvidia-h200-wave3.txt. XPBD is left uncapped (not measured). */
static int32_t contact_blocks(const wfp_part *ps, uint32_t n) {
  if (ps->min_blocks != 0) return ps->min_blocks < 0 ? 0 : ps->min_blocks;
  if (ps->params.model == WFP_XPBD || ps->sms <= 0) return 0;
  return ((uint64_t)n + 255u) / 256u > 2u * (uint64_t)ps->sms ? 3 : 0;
}

/* The rest: the start table, arrival order (and the clock's advance), then each cell in
 * local-index order with the sorted copies (and the counts cleared); contacts, colliders and
 * integration. */
static wf_status substep_rest(wfp_part *ps, wf_event **marks) {
  uint32_t n = ps->count;
  if (n == 0) { /* coupled solvers still take their substep */
    wf_status hs = run_hooks(ps, WFP_HOOK_GRID);
    return hs != WF_OK ? hs : run_hooks(ps, WFP_HOOK_SUBSTEP);
  }
  wfp_params *params = ptr(ps, B_PARAMS);
  wf_status st;
  n = ps->launch > n ? ps->launch : n;
  const uint32_t *live = &params->count;
  MARK(1);
  wfp_scan_args sa = scan_args(ps);
  if ((st = launch(ps, &wfp_scan, 1, &sa, sizeof sa)) != WF_OK) return st;
  MARK(2);
  wfp_scatter_args ba = scatter_args(ps, live);
  if ((st = launch(ps, &wfp_scatter, n, &ba, sizeof ba)) != WF_OK) return st;
  MARK(3);
  wfp_place_args ra = place_args(ps, live);
  if ((st = launch(ps, &wfp_place, n, &ra, sizeof ra)) != WF_OK) return st;
  if ((st = run_hooks(ps, WFP_HOOK_GRID)) != WF_OK) return st;
  MARK(4);
  wfp_collide_args ca = collide_args(ps);
  ca.min_blocks = contact_blocks(ps, n);
  const wf_kernel *collide = ps->params.model == WFP_XPBD ? &wfp_contacts_xpbd : &wfp_contacts_dem;
  if ((st = launch(ps, collide, n, &ca, sizeof ca)) != WF_OK) return st;
  MARK(5);
  return run_hooks(ps, WFP_HOOK_SUBSTEP);
}

/* One substep, enqueued on the solver's stream (captured or not: the same calls). With `marks`,
 * an event is recorded after each stage (the profile; never while capturing). */
static wf_status enqueue_substep(wfp_part *ps, wf_event **marks) {
  wf_status st = substep_keys(ps, marks, NULL);
  return st != WF_OK ? st : substep_rest(ps, marks);
}
#undef MARK

/* Kernels are opaque to the GPU layer: mark every buffer as used on the solver's stream, so that
 * downloads and frees on other streams wait for the substeps (and a graph keeps them alive). */
static wf_status touch_all(wfp_part *ps) {
  for (int b = 0; b < B_COUNT; b++)
    if (ps->buf[b] && b != B_MIRROR)
      TRY(wf_buffer_touch(ps->buf[b], ps->stream), "ordering buffers");
  return WF_OK;
}

/* Whether the frame's substeps go in one launch (wfp_frame): never with coupled solvers' hooks
 * (they run inside the substeps) or while profiling; tuning.one_launch ON on any device (the
 * CPU then runs the stages on one thread: for tests), OFF never; automatic on CUDA devices when
 * the particles are few enough that a launch of the most resident blocks gives each thread at
 * most WFP_ONE_LAUNCH_PER_THREAD of them (small scenes, which the per-stage launches' gaps
 * dominate; a large one runs its memory-bound stages better at their own occupancy).
 * Measured on an H100 (weft bench particles, 65536 particles): the one launch took 6.74 ms/frame
 * (DEM) and 5.49 (Hertz) against 4.95 and 3.86 per stage, and on an H200 at f485320 3.22 and
 * 2.89 against 3.08 and 2.71 (262144: 9.94 and 10.28 against 8.81 and 8.11), so automatic is OFF
 * until the one-launch frame beats the stages (WFP_ONE_LAUNCH_AUTO). */
#define WFP_ONE_LAUNCH_PER_THREAD 4u
#define WFP_ONE_LAUNCH_AUTO       0
static bool one_launch(const wfp_part *ps) {
  if (ps->n_hooks > 0 || ps->one_launch < 0) return false;
  /* (a CUDA device whose occupancy could not be read gets no cooperative launch) */
  if (ps->one_launch > 0) return !wf_device_is_cuda(ps->dev) || ps->frame_blocks > 0;
  uint32_t n = ps->launch > ps->count ? ps->launch : ps->count;
  return WFP_ONE_LAUNCH_AUTO && ps->frame_blocks > 0 &&
         (uint64_t)n <= (uint64_t)ps->frame_blocks * 256u * WFP_ONE_LAUNCH_PER_THREAD;
}

/* n substeps in one launch: the stage kernels' arguments, as enqueue_substep would pass them. */
static wf_status enqueue_one_launch(wfp_part *ps, int n) {
  if (ps->count == 0 || n <= 0) return WF_OK; /* (the substeps would launch nothing either) */
  wfp_params *params = ptr(ps, B_PARAMS);
  const uint32_t *live = &params->count;
  wfp_frame_run_args fa = {.keys = keys_args(ps),
                           .scan = scan_args(ps),
                           .scatter = scatter_args(ps, live),
                           .place = place_args(ps, live),
                           .collide = collide_args(ps),
                           .substeps = (uint32_t)n,
                           .launch = ps->launch > ps->count ? ps->launch : ps->count,
                           .xpbd = ps->params.model == WFP_XPBD,
                           .partial_n = ps->frame_blocks,
                           .partial = ptr(ps, B_PARTIAL)};
  return launch(ps, &wfp_frame, 1, &fa, sizeof fa);
}

/* A frame's worth of work: reset the extent, n substeps, then (publish) copy the clock (time,
 * flags, extent) to the pinned mirror, which refit reads once frame_done says the frame ended.
 * Substeps captured into the host program's graph do not publish: that graph's replays are not
 * ordered by frame_done, and their copy would write the mirror while refit reads it. */
static wf_status enqueue_frame_as(wfp_part *ps, int n, wf_event **marks, bool publish) {
  wf_status st = wfp_frame_enqueue_begin(ps);
  if (st == WF_OK && !marks && one_launch(ps))
    st = enqueue_one_launch(ps, n);
  else
    for (int i = 0; i < n && st == WF_OK; i++)
      st = enqueue_substep(ps, marks ? marks + 6 * i : NULL);
  if (st == WF_OK) st = run_hooks(ps, WFP_HOOK_FRAME);
  if (st == WF_OK) st = touch_all(ps);
  if (st == WF_OK && publish) {
    st = wf_copy(ps->buf[B_MIRROR], 0, ps->buf[B_CLOCK], 0, sizeof(wfp_clock), ps->stream);
    if (st != WF_OK) fail_gpu(st, "publishing the frame's clock");
  }
  return st;
}

static wf_status enqueue_frame(wfp_part *ps, int n, wf_event **marks) {
  return enqueue_frame_as(ps, n, marks, true);
}

static wf_status capture_frame(wfp_part *ps) {
  TRY(wf_capture_begin(ps->stream), "beginning the frame capture");
  wf_status st = enqueue_frame(ps, ps->desc.substeps, NULL);
  wf_graph *g = NULL;
  wf_status st2 = wf_capture_end(ps->stream, &g);
  if (st != WF_OK) {
    if (g) wf_graph_destroy(g);
    return st;
  }
  if (st2 != WF_OK) return fail_gpu(st2, "ending the frame capture");
  ps->graph = g;
  return WF_OK;
}

/* Between frames, without waiting: if the last frame has finished, refit the grid's box to the
 * extent it saw (when the particles have outgrown the box). */
static wf_status refit(wfp_part *ps) {
  if (!ps->frame_pending) return WF_OK;
  wf_status q = wf_event_query(ps->frame_done);
  if (q == WF_NOT_READY) return WF_OK;
  if (q != WF_OK) return fail_gpu(q, "querying the last frame");
  ps->frame_pending = false;
  const wfp_clock *c = wf_buffer_ptr(ps->buf[B_MIRROR]);
  if (c->lo[0] > c->hi[0]) return WF_OK; /* no particles */
  if (box_covers(ps, c->lo, c->hi)) return WF_OK;
  fit_box(ps, c->lo, c->hi);
  return upload_params(ps);
}

static wf_status frame_launched(wfp_part *ps) {
  TRY(wf_event_record(ps->frame_done, ps->stream), "recording the frame's event");
  ps->frame_pending = true;
  return WF_OK;
}

wf_status wfp_part_step_frames(wfp_part *ps, int frames) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (frames < 0)
    return fail(WF_ERR_INVALID, "particles '%s': frames %d must be >= 0", ps->name, frames);
  wf_status st = refit(ps);
  for (int f = 0; f < frames && st == WF_OK; f++) {
    if (ps->desc.no_graph) {
      st = enqueue_frame(ps, ps->desc.substeps, NULL);
    } else {
      if (!ps->graph && (st = capture_frame(ps)) != WF_OK) return st;
      st = wf_graph_launch(ps->graph, ps->stream);
      if (st != WF_OK) return fail_gpu(st, "launching a frame");
    }
  }
  if (st == WF_OK && frames > 0) st = touch_all(ps);
  if (st == WF_OK && frames > 0) st = frame_launched(ps);
  if (frames > 0) ps->force_seconds = (double)ps->desc.substeps * (double)ps->params.dt;
  return st;
}

wf_status wfp_part_step_substeps(wfp_part *ps, int n) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (n < 0) return fail(WF_ERR_INVALID, "particles '%s': substeps %d must be >= 0", ps->name, n);
  if (n == 0) return WF_OK;
  /* Inside a capture (weft's, or the host program's on a wrapped stream: PyTorch's joint capture)
     the host must not query the last frame's event, so the box is not refitted (results do not
     depend on it) and no frame event is recorded; the first step after the capture refits. */
  bool capturing = wf_stream_is_capturing(ps->stream);
  wf_status st = capturing ? WF_OK : refit(ps);
  if (st == WF_OK) st = enqueue_frame_as(ps, n, NULL, !capturing);
  if (st == WF_OK && !capturing) st = frame_launched(ps);
  ps->force_seconds = (double)n * (double)ps->params.dt;
  return st;
}

wf_status wfp_part_profile(wfp_part *ps, int substeps, wf_particles_profile_result *out) {
  if (!ps || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (substeps <= 0 || substeps > 4096)
    return fail(WF_ERR_INVALID, "particles '%s': profile substeps %d must be in [1, 4096]",
                ps->name, substeps);
  memset(out, 0, sizeof *out);
  size_t n_ev = (size_t)substeps * 6;
  wf_event **ev = calloc(n_ev, sizeof *ev);
  if (!ev) return fail(WF_ERR_OUT_OF_MEMORY, "particles: out of host memory");
  wf_status st = refit(ps);
  for (size_t i = 0; i < n_ev && st == WF_OK; i++)
    if ((st = wf_event_create(ps->dev, WF_EVENT_TIMING, &ev[i])) != WF_OK)
      fail_gpu(st, "creating profile events");
  if (st == WF_OK) st = enqueue_frame(ps, substeps, ev);
  if (st == WF_OK) st = frame_launched(ps);
  ps->force_seconds = (double)substeps * (double)ps->params.dt;
  if (st == WF_OK && (st = wf_stream_synchronize(ps->stream)) != WF_OK)
    fail_gpu(st, "waiting for the profiled substeps");
  for (int i = 0; i < substeps && st == WF_OK && ps->count; i++)
    for (int k = 0; k < WF_PSTAGE_COUNT && st == WF_OK; k++) {
      float ms = 0.0f;
      st = wf_event_elapsed_ms(ev[6 * i + k], ev[6 * i + k + 1], &ms);
      if (st != WF_OK) fail_gpu(st, "reading profile events");
      out->stage_ms[k] += ms / substeps;
    }
  for (int k = 0; k < WF_PSTAGE_COUNT; k++)
    out->substep_ms += out->stage_ms[k];
  out->substeps = substeps;
  for (size_t i = 0; i < n_ev; i++)
    if (ev[i]) wf_event_destroy(ev[i]);
  free(ev);
  return st;
}

/* ---- reading back ------------------------------------------------------------------------------
 */

uint32_t wfp_part_count(const wfp_part *ps) { return ps ? ps->count : 0; }

size_t wfp_part_device_bytes(const wfp_part *ps) {
  size_t total = 0;
  for (int b = 0; ps && b < B_COUNT; b++)
    if (ps->buf[b]) total += wf_buffer_size(ps->buf[b]);
  return total;
}

uint32_t wfp_part_collider_count(const wfp_part *ps) { return ps->params.n_colliders; }

wf_status wfp_part_measure_forces(wfp_part *ps, bool on) {
  if (ps->forces_on == on) return WF_OK;
  drop_graph(ps); /* the captured frame has the kernels' table pointer and the clear baked in */
  ps->forces_on = on;
  /* zero until a frame has summed them (the table holds an older frame's, or nothing) */
  TRY(wf_memset(ps->buf[B_FORCE], 0, 0, WFX_FORCE_BYTES, ps->stream),
      "clearing the collider forces");
  return WF_OK;
}

bool wfp_part_measuring_forces(const wfp_part *ps) { return ps->forces_on; }

wf_status wfp_part_forces(wfp_part *ps, const unsigned long long **table, double *seconds) {
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  TRY(wf_download(ps->force_host, ps->buf[B_FORCE], 0, sizeof ps->force_host),
      "reading the collider forces");
  *table = ps->force_host;
  *seconds = ps->force_seconds;
  return WF_OK;
}

static wf_status read_clock(wfp_part *ps, wfp_clock *c) {
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  TRY(wf_download(c, ps->buf[B_CLOCK], 0, sizeof *c), "reading the solver's flags");
  return WF_OK;
}

static wf_status flags_status(wfp_part *ps, const wfp_clock *c) {
  if (!c->flags) return WF_OK;
  uint32_t gid = c->first_bad;
  if (gid < ps->count) wf_download(&gid, ps->buf[B_GID], (size_t)c->first_bad * 4, 4);
  return fail(WF_ERR_INVALID,
              "particles '%s': particle %u (global id) %s after %llu substeps: the time step is "
              "too large for the contact stiffness, or a particle was flung away",
              ps->name, gid,
              (c->flags & WFP_FLAG_NONFINITE) ? "became NaN/inf"
                                              : "left the grid's range (2^30 "
                                                "cells)",
              (unsigned long long)c->substeps);
}

wf_status wfp_part_check(wfp_part *ps) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wfp_clock c;
  wf_status st = read_clock(ps, &c);
  return st != WF_OK ? st : flags_status(ps, &c);
}

wf_status wfp_part_download(wfp_part *ps, float (*pos)[4], float (*vel)[4]) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  wfp_clock c;
  wf_status st = read_clock(ps, &c);
  if (st != WF_OK) return st;
  size_t bytes = (size_t)ps->count * 16;
  if (pos && bytes) TRY(wf_download(pos, ps->buf[B_POS], 0, bytes), "downloading positions");
  if (vel && bytes) TRY(wf_download(vel, ps->buf[B_VEL], 0, bytes), "downloading velocities");
  return flags_status(ps, &c);
}

/* Readback on another stream: wf_copy orders s after the solver's work (the buffers remember
 * their last user); the solver's stream then waits for s, because kernels are opaque to that
 * tracking and the next frame must not overwrite the state while it is being read. */
wf_status wfp_part_copy_state(wfp_part *ps, wf_buffer *pos, size_t pos_off, wf_buffer *vel,
                              size_t vel_off, wf_stream *s) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (!s) s = ps->stream;
  size_t bytes = (size_t)ps->count * 16;
  wf_buffer *dst[2] = {pos, vel};
  size_t off[2] = {pos_off, vel_off};
  for (int k = 0; k < 2; k++) {
    if (!dst[k] || !bytes) continue;
    if (off[k] > wf_buffer_size(dst[k]) || wf_buffer_size(dst[k]) - off[k] < bytes)
      return fail(WF_ERR_INVALID,
                  "particles '%s': copy_state: the %s buffer holds %zu bytes after offset %zu, "
                  "%u particles need %zu",
                  ps->name, k ? "velocity" : "position",
                  off[k] > wf_buffer_size(dst[k]) ? 0 : wf_buffer_size(dst[k]) - off[k], off[k],
                  ps->count, bytes);
    TRY(wf_copy(dst[k], off[k], ps->buf[k ? B_VEL : B_POS], 0, bytes, s), "copying the state");
  }
  if (s != ps->stream) TRY(wf_stream_wait_stream(ps->stream, s), "ordering after the copy");
  return WF_OK;
}

wf_stream *wfp_part_stream(const wfp_part *ps) { return ps ? ps->stream : NULL; }

wf_device *wfp_part_device(const wfp_part *ps) { return ps ? ps->dev : NULL; }

wf_status wfp_part_state_buffers(wfp_part *ps, wf_buffer **pos, wf_buffer **vel,
                                 wf_buffer **clock) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (pos) *pos = ps->buf[B_POS];
  if (vel) *vel = ps->buf[B_VEL];
  if (clock) *clock = ps->buf[B_CLOCK];
  return WF_OK;
}

/* Checkpoint restore: the state arrays and the clock are everything a frame reads that the
 * solver's creation did not set up; the grid's box is refitted (results do not depend on it). */
wf_status wfp_part_set_state(wfp_part *ps, const float (*pos)[4], const float (*vel)[4],
                             double time, uint64_t substeps) {
  if (!ps) return fail(WF_ERR_INVALID, "particles: solver is NULL");
  if (!pos || !vel)
    return fail(WF_ERR_INVALID, "particles '%s': set_state: pos or vel is NULL", ps->name);
  if (!isfinite(time))
    return fail(WF_ERR_INVALID, "particles '%s': set_state: time is not finite", ps->name);
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  size_t bytes = (size_t)ps->count * 16;
  if (bytes) { /* the granular state starts from rest (wfp_part_granular_set restores it) */
    TRY(wf_upload(ps->buf[B_POS], 0, pos, bytes, ps->stream), "uploading positions");
    TRY(wf_upload(ps->buf[B_VEL], 0, vel, bytes, ps->stream), "uploading velocities");
    TRY(wf_memset(ps->buf[B_OMEGA], 0, 0, bytes, ps->stream), "clearing angular velocities");
    TRY(wf_memset(ps->buf[B_HIST], 0, 0, (size_t)ps->count * HIST_BYTES, ps->stream),
        "clearing the contact history");
  }
  wfp_clock clock = {
      .time = time, .substeps = substeps, .flags = 0, .first_bad = UINT32_MAX, .start = time};
  TRY(wf_upload(ps->buf[B_CLOCK], 0, &clock, sizeof clock, ps->stream), "uploading the clock");
  ps->frame_pending = false;
  if (ps->count) {
    int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    for (uint32_t i = 0; i < ps->count; i++)
      for (int k = 0; k < 3; k++) {
        int bad = 0;
        int32_t c = wfp_cell_coord(pos[i][k], ps->params.inv_cell, &bad);
        lo[k] = c < lo[k] ? c : lo[k], hi[k] = c > hi[k] ? c : hi[k];
      }
    if (!box_covers(ps, lo, hi)) fit_box(ps, lo, hi);
  }
  wf_status st = upload_params(ps);
  if (st == WF_OK) TRY(wf_stream_synchronize(ps->stream), "restoring the state");
  return st;
}

wf_status wfp_part_stats_get(wfp_part *ps, wf_particles_stats *out) {
  if (!ps || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  memset(out, 0, sizeof *out);
  size_t n = ps->count;
  float(*v)[4] = malloc(n * 16 + 16), (*x)[4] = malloc(n * 16 + 16), (*w)[4] = malloc(n * 16 + 16);
  wf_status st = v && x && w
                     ? wfp_part_download(ps, x, v)
                     : fail(WF_ERR_OUT_OF_MEMORY, "particles '%s': out of host memory", ps->name);
  if (st == WF_OK && n) TRY(wf_download(w, ps->buf[B_OMEGA], 0, n * 16), "reading omega");
  wfp_clock c;
  if (st == WF_OK) st = read_clock(ps, &c);
  if (st == WF_OK) {
    out->count = ps->count;
    out->time = c.time;
    out->substeps = c.substeps;
    out->history_overflows = c.overflows;
    wfp_stats_acc acc;
    wfp_stats_init(&acc);
    wfp_stats_add(&acc, n, (const float(*)[4])x, (const float(*)[4])v, (const float(*)[4])w, NULL);
    wfp_stats_out(&acc, out);
  }
  free(v), free(x), free(w);
  return st;
}

void wfp_stats_init(wfp_stats_acc *a) {
  for (int k = 0; k < 5; k++)
    wf_xsum_init(&a->sum[k]);
  a->max_speed = 0.0;
}

void wfp_stats_add(wfp_stats_acc *a, size_t n, const float (*x)[4], const float (*v)[4],
                   const float (*w)[4], const float *skip) {
  for (size_t i = 0; i < n; i++) {
    if (skip && skip[i] != skip[i]) continue;
    double s2 = (double)v[i][0] * v[i][0] + (double)v[i][1] * v[i][1] + (double)v[i][2] * v[i][2];
    a->max_speed = fmax(a->max_speed, sqrt(s2));
    if (!(v[i][3] > 0.0f)) continue;
    double m = 1.0 / v[i][3], r = x[i][3];
    for (int k = 0; k < 3; k++)
      wf_xsum_add(&a->sum[2 + k], m * v[i][k]);
    wf_xsum_add(&a->sum[0], 0.5 * m * s2);
    double w2 = (double)w[i][0] * w[i][0] + (double)w[i][1] * w[i][1] + (double)w[i][2] * w[i][2];
    wf_xsum_add(&a->sum[1], 0.5 * 0.4 * m * r * r * w2);
  }
}

void wfp_stats_out(wfp_stats_acc *a, wf_particles_stats *out) {
  out->kinetic_energy = wf_xsum_value(&a->sum[0]);
  out->rotational_energy = wf_xsum_value(&a->sum[1]);
  for (int k = 0; k < 3; k++)
    out->momentum[k] = wf_xsum_value(&a->sum[2 + k]);
  out->max_speed = a->max_speed;
}

wf_status wfp_part_download_omega(wfp_part *ps, float (*omega)[4]) {
  if (!ps || !omega) return fail(WF_ERR_INVALID, "particles: NULL argument");
  wfp_clock c;
  wf_status st = read_clock(ps, &c);
  if (st != WF_OK) return st;
  if (ps->count)
    TRY(wf_download(omega, ps->buf[B_OMEGA], 0, (size_t)ps->count * 16),
        "downloading angular velocities");
  return flags_status(ps, &c);
}

wf_status wfp_part_granular_buffers(wfp_part *ps, wf_buffer **omega, wf_buffer **hist) {
  *omega = ps->buf[B_OMEGA], *hist = ps->buf[B_HIST];
  return WF_OK;
}

wf_buffer *wfp_part_gid_buffer(wfp_part *ps) { return ps->buf[B_GID]; }

wf_status wfp_part_granular_set(wfp_part *ps, const wfp_f4 *omega, const wfp_hist *hist) {
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  size_t n = ps->count;
  if (n) TRY(wf_upload(ps->buf[B_OMEGA], 0, omega, n * 16, ps->stream), "uploading omega");
  if (n) TRY(wf_upload(ps->buf[B_HIST], 0, hist, n * HIST_BYTES, ps->stream), "uploading history");
  TRY(wf_stream_synchronize(ps->stream), "restoring the granular state");
  return WF_OK;
}

/* ---- time-step guidance --------------------------------------------------------------------- */

wf_status wf_particles_stability(const wf_particles_desc *desc, const wf_particle_material *m,
                                 double radius, double mass, double impact_speed,
                                 wf_particles_stability_result *out) {
  if (!desc || !m || !out) return fail(WF_ERR_INVALID, "particles: stability: NULL argument");
  memset(out, 0, sizeof *out);
  if (!(radius > 0.0) || !isfinite(radius))
    return fail(WF_ERR_INVALID, "particles: stability: radius %g must be > 0", radius);
  if (!(mass >= 0.0) || !isfinite(mass) || !(impact_speed >= 0.0) || !isfinite(impact_speed))
    return fail(WF_ERR_INVALID, "particles: stability: mass %g and impact_speed %g must be >= 0",
                mass, impact_speed);
  if (!(desc->frame_dt > 0.0f) || desc->substeps <= 0)
    return fail(WF_ERR_INVALID, "particles: stability: frame_dt and substeps must be > 0");
  if (!(m->young > 0.0f) || !(m->stiffness > 0.0f) || !(m->poisson >= 0.0f && m->poisson < 0.5f))
    return fail(WF_ERR_INVALID,
                "particles: stability: the material needs stiffness > 0, young > 0 and poisson "
                "in [0, 0.5)");
  double M = mass > 0.0 ? mass : 2500.0 * 4.0 / 3.0 * WFP_PI * radius * radius * radius;
  double v = impact_speed > 0.0 ? impact_speed : 1.0;
  double ms = 0.5 * M, rs = 0.5 * radius, nu = m->poisson;
  double zeta = wf_particles_zeta_for_restitution(m->restitution);
  double kn, kt;
  if (desc->contact_model == WF_CONTACT_XPBD) {
    out->ok = true; /* implicit in the constraints: no explicit limit */
    out->substeps_needed = 1;
    out->substep_max = desc->frame_dt;
    return WF_OK;
  }
  if (desc->contact_model == WF_CONTACT_HERTZ) {
    double es = m->young / (2.0 * (1.0 - nu * nu));
    double gs = m->young / (4.0 * (2.0 - nu) * (1.0 + nu));
    out->contact_time = 2.87 * pow(ms * ms / (rs * es * es * v), 0.2);
    double dmax = pow(15.0 * ms * v * v / (16.0 * es * sqrt(rs)), 0.4);
    kn = 2.0 * es * sqrt(rs * dmax);
    kt = 8.0 * gs * sqrt(rs * dmax);
  } else {
    kn = m->stiffness;
    kt = (m->tangential_ratio > 0.0f ? m->tangential_ratio : 2.0 * (1.0 - nu) / (2.0 - nu)) * kn;
    double z = zeta < 1.0 ? zeta : 0.0;
    out->contact_time = WFP_PI / sqrt(kn / ms * (1.0 - z * z));
  }
  out->tangential_time = WFP_PI / sqrt(3.5 * kt / ms);
  double mr = m->rolling_friction;
  if (mr > 0.0) {
    double kr = 2.25 * kn * mr * mr * rs * rs, inv_i = 2.0 * 2.5 / (M * radius * radius);
    out->rolling_time = WFP_PI / sqrt(kr * inv_i);
  }
  double t = fmin(out->contact_time, out->tangential_time);
  if (out->rolling_time > 0.0) t = fmin(t, out->rolling_time);
  out->substep_max = t / 10.0;
  double need = ceil((double)desc->frame_dt / out->substep_max);
  out->substeps_needed = need > 1e9 ? 1000000000 : (int)need;
  out->ok = desc->substeps >= out->substeps_needed;
  return WF_OK;
}

void wfp_part_stability_check(wfp_part *ps) {
  if (!ps->recheck) return;
  ps->recheck = false;
  for (uint32_t k = 0; k < ps->n_mats; k++) {
    if (ps->rmin[k] == 0.0f) continue; /* no dynamic particle of it */
    wf_particles_stability_result r;
    if (wf_particles_stability(&ps->desc, &ps->given[k], ps->rmin[k], ps->mmin[k], 0.0, &r) !=
            WF_OK ||
        r.ok)
      continue;
    wf__log(WF_LOG_WARN,
            "particles '%s': material %u: %d substeps a frame are too few for its contacts "
            "(radius %g m, mass %g kg: contact %.3g s, tangential %.3g s); %d are needed for 10 "
            "substeps a contact (wf_particles_stability)",
            ps->name, k, ps->desc.substeps, (double)ps->rmin[k], (double)ps->mmin[k],
            r.contact_time, r.tangential_time, r.substeps_needed);
  }
}

/* ---- internal access for coupled solvers (solvers/cloth/coupling.h) ---------------------------
 */

wf_status wfp_part_view_get(wfp_part *ps, wfp_view *out) {
  if (!ps || !out) return fail(WF_ERR_INVALID, "particles: NULL argument");
  memset(out, 0, sizeof *out);
  out->name = ps->name;
  out->dev = ps->dev;
  out->stream = ps->stream;
  out->frame_dt = ps->desc.frame_dt;
  out->substeps = ps->desc.substeps;
  out->max_radius = ps->max_radius;
  out->grid = (wfp_grid_view){.params = ptr(ps, B_PARAMS),
                              .cell_start = ptr(ps, B_CELLS),
                              .cell_end = NULL,
                              .spos = ptr(ps, B_SPOS),
                              .svel = ptr(ps, B_SVEL),
                              .n = ps->count};
  return WF_OK;
}

wf_status wfp_part_hook_add(wfp_part *ps, wfp_hook_fn fn, void *user) {
  if (!ps || !fn) return fail(WF_ERR_INVALID, "particles: NULL argument");
  if (ps->n_hooks >= WFP_MAX_HOOKS)
    return fail(WF_ERR_INVALID, "particles '%s': at most %d coupled solvers", ps->name,
                WFP_MAX_HOOKS);
  drop_graph(ps); /* the next frame is recorded with the hook */
  ps->hooks[ps->n_hooks].fn = fn;
  ps->hooks[ps->n_hooks].user = user;
  ps->n_hooks++;
  return WF_OK;
}

void wfp_part_hook_remove(wfp_part *ps, wfp_hook_fn fn, void *user) {
  if (!ps) return;
  for (int h = 0; h < ps->n_hooks; h++) {
    if (ps->hooks[h].fn != fn || ps->hooks[h].user != user) continue;
    drop_graph(ps);
    memmove(&ps->hooks[h], &ps->hooks[h + 1], (size_t)(ps->n_hooks - h - 1) * sizeof ps->hooks[0]);
    ps->n_hooks--;
    return;
  }
}

/* ---- internal access for the split solver (particle_internal.h) -------------------------------
 */

wf_status wfp_frame_enqueue_begin(wfp_part *ps) {
  wfp_frame_args fa = frame_args(ps);
  if (ps->forces_on)
    TRY(wf_memset(ps->buf[B_FORCE], 0, 0, WFX_FORCE_BYTES, ps->stream),
        "clearing the collider forces");
  return launch(ps, &wfp_frame_begin, 1, &fa, sizeof fa);
}

wf_status wfp_substep_enqueue(wfp_part *ps) { return enqueue_substep(ps, NULL); }

wf_status wfp_substep_enqueue_keys(wfp_part *ps, const float *skip) {
  return substep_keys(ps, NULL, skip);
}

wf_status wfp_substep_enqueue_rest(wfp_part *ps) { return substep_rest(ps, NULL); }

wfp_keys_args wfp_part_keys_args(wfp_part *ps) { return keys_args(ps); }

wf_status wfp_frame_enqueue_end(wfp_part *ps) {
  wf_status st = run_hooks(ps, WFP_HOOK_FRAME);
  if (st == WF_OK) st = touch_all(ps);
  if (st == WF_OK) {
    st = wf_copy(ps->buf[B_MIRROR], 0, ps->buf[B_CLOCK], 0, sizeof(wfp_clock), ps->stream);
    if (st != WF_OK) fail_gpu(st, "publishing the frame's clock");
  }
  return st;
}

wf_status wfp_frames_launched(wfp_part *ps) {
  ps->force_seconds = (double)ps->desc.substeps * (double)ps->params.dt;
  wf_status st = touch_all(ps);
  return st == WF_OK ? frame_launched(ps) : st;
}

wf_status wfp_part_get(wfp_part *ps, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat, uint32_t *gid) {
  return wfp_part_get_all(ps, pos, vel, mat, gid, NULL, NULL);
}

wf_status wfp_part_get_all(wfp_part *ps, wfp_f4 *pos, wfp_f4 *vel, uint16_t *mat, uint32_t *gid,
                           wfp_f4 *omega, wfp_hist *hist) {
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  size_t n = ps->count;
  if (omega && n)
    TRY(wf_download(omega, ps->buf[B_OMEGA], 0, n * 16), "downloading angular velocities");
  if (hist && n)
    TRY(wf_download(hist, ps->buf[B_HIST], 0, n * HIST_BYTES), "downloading contact history");
  if (pos && n) TRY(wf_download(pos, ps->buf[B_POS], 0, n * 16), "downloading positions");
  if (vel && n) TRY(wf_download(vel, ps->buf[B_VEL], 0, n * 16), "downloading velocities");
  if (mat && n) TRY(wf_download(mat, ps->buf[B_MAT], 0, n * 2), "downloading materials");
  if (gid && n) TRY(wf_download(gid, ps->buf[B_GID], 0, n * 4), "downloading global ids");
  return WF_OK;
}

wfp_arrays wfp_part_arrays(wfp_part *ps) {
  return (wfp_arrays){.pos = ptr(ps, B_POS),
                      .vel = ptr(ps, B_VEL),
                      .gid = ptr(ps, B_GID),
                      .mat = ptr(ps, B_MAT),
                      .omega = ptr(ps, B_OMEGA),
                      .hist = ptr(ps, B_HIST)};
}

wf_status wfp_part_touch(wfp_part *ps) { return touch_all(ps); }

wfp_tables wfp_part_tables(wfp_part *ps) {
  return (wfp_tables){.mats = ptr(ps, B_MATS),
                      .colliders = ptr(ps, B_COLLIDERS),
                      .clock = ptr(ps, B_CLOCK),
                      .n_colliders = ps->params.n_colliders};
}

void wfp_part_set_launch(wfp_part *ps, uint32_t launch) {
  if (ps->launch != launch) drop_graph(ps);
  ps->launch = launch;
}

uint32_t wfp_part_generation(const wfp_part *ps) { return ps->generation; }

void wfp_part_set_drift(wfp_part *ps, const float *anchor, wfp_drift_ctl *ctl) {
  if (ps->drift_anchor != anchor || ps->drift_ctl != ctl) drop_graph(ps);
  ps->drift_anchor = anchor, ps->drift_ctl = anchor ? ctl : NULL;
}

wf_status wfp_part_resize(wfp_part *ps, uint32_t n, float max_radius, const int32_t lo[3],
                          const int32_t hi[3]) {
  drop_graph(ps);
  ps->count = 0; /* the caller rewrites every particle: nothing to copy if the buffers grow */
  wf_status st;
  uint32_t want = n > ps->launch ? n : ps->launch; /* room for the launch size too */
  if (want > ps->capacity && (st = grow(ps, want)) != WF_OK) return st;
  ps->count = n;
  ps->frame_pending = false;
  ps->max_radius = fmaxf(ps->max_radius, max_radius);
  if (n && lo[0] <= hi[0]) fit_box(ps, lo, hi);
  return upload_params(ps);
}

wf_status wfp_clock_set(wfp_part *ps, double time, uint64_t substeps) {
  wfp_clock clock = {
      .time = time, .substeps = substeps, .flags = 0, .first_bad = UINT32_MAX, .start = time};
  for (int k = 0; k < 3; k++)
    clock.lo[k] = INT32_MAX, clock.hi[k] = INT32_MIN;
  TRY(wf_upload(ps->buf[B_CLOCK], 0, &clock, sizeof clock, ps->stream), "uploading the clock");
  return WF_OK;
}

bool wfp_extent_get(const wfp_part *ps, int32_t lo[3], int32_t hi[3]) {
  const wfp_clock *c = wf_buffer_ptr(ps->buf[B_MIRROR]);
  for (int k = 0; k < 3; k++)
    lo[k] = c->lo[k], hi[k] = c->hi[k];
  return ps->count && c->lo[0] <= c->hi[0];
}

wf_status wfp_part_replace(wfp_part *ps, uint32_t n, const wfp_f4 *pos, const wfp_f4 *vel,
                           const uint16_t *mat, const uint32_t *gid, const wfp_f4 *omega,
                           const wfp_hist *hist) {
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  drop_graph(ps);
  ps->count = 0; /* nothing to copy if the buffers grow */
  wf_status st;
  uint32_t want = n > ps->launch ? n : ps->launch; /* room for the launch size too */
  if (want > ps->capacity && (st = grow(ps, want)) != WF_OK) return st;
  if (n) {
    TRY(wf_upload(ps->buf[B_POS], 0, pos, (size_t)n * 16, ps->stream), "uploading positions");
    TRY(wf_upload(ps->buf[B_VEL], 0, vel, (size_t)n * 16, ps->stream), "uploading velocities");
    TRY(wf_upload(ps->buf[B_MAT], 0, mat, (size_t)n * 2, ps->stream), "uploading materials");
    TRY(wf_upload(ps->buf[B_GID], 0, gid, (size_t)n * 4, ps->stream), "uploading global ids");
    if (omega)
      TRY(wf_upload(ps->buf[B_OMEGA], 0, omega, (size_t)n * 16, ps->stream),
          "uploading angular velocities");
    else
      TRY(wf_memset(ps->buf[B_OMEGA], 0, 0, (size_t)n * 16, ps->stream),
          "clearing angular velocities");
    if (hist)
      TRY(wf_upload(ps->buf[B_HIST], 0, hist, (size_t)n * HIST_BYTES, ps->stream),
          "uploading contact history");
    else
      TRY(wf_memset(ps->buf[B_HIST], 0, 0, (size_t)n * HIST_BYTES, ps->stream),
          "clearing contact history");
  }
  ps->count = n;
  ps->frame_pending = false;
  float rmax = ps->max_radius;
  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  for (uint32_t i = 0; i < n; i++) {
    rmax = fmaxf(rmax, pos[i].w);
    float x[3] = {pos[i].x, pos[i].y, pos[i].z};
    for (int k = 0; k < 3; k++) {
      int bad = 0;
      int32_t c = wfp_cell_coord(x[k], ps->params.inv_cell, &bad);
      lo[k] = c < lo[k] ? c : lo[k], hi[k] = c > hi[k] ? c : hi[k];
    }
  }
  ps->max_radius = rmax;
  if (n) fit_box(ps, lo, hi);
  st = upload_params(ps);
  if (st == WF_OK) TRY(wf_stream_synchronize(ps->stream), "replacing the particles");
  return st;
}

wf_status wfp_cell_size_set(wfp_part *ps, float cell) {
  if (cell == 0.0f) { /* automatic again: twice the largest radius */
    TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
    drop_graph(ps);
    ps->desc.cell_size = 0.0f;
    if (ps->max_radius > 0.0f) {
      ps->params.cell = 2.0f * ps->max_radius;
      ps->params.inv_cell = 1.0f / ps->params.cell;
    }
    ps->have_extent = false;
    return upload_params(ps);
  }
  if (!(cell > 0.0f) || !isfinite(cell) || cell < 2.0f * ps->max_radius)
    return fail(WF_ERR_INVALID, "particles '%s': cell size %g must be >= %g (the largest diameter)",
                ps->name, (double)cell, 2.0 * ps->max_radius);
  TRY(wf_stream_synchronize(ps->stream), "waiting for the solver");
  drop_graph(ps);
  ps->desc.cell_size = cell;
  ps->params.cell = cell;
  ps->params.inv_cell = 1.0f / cell;
  ps->have_extent = false;
  return upload_params(ps);
}

float wfp_max_radius(const wfp_part *ps) { return ps->max_radius; }
