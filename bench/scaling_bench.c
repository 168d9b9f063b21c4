/* `weft bench scaling`: how the particle solver over several devices (wf_particles,
 * weft/particles.h)
 * scales over the first k devices of one kind (cuda:0..k-1, or cpu:0..k-1 of the four CPU devices
 * the runtime is started with).
 *
 * The scene is `weft bench particles`' column, built with the wf_particles_* API: particles
 * of radius 0.1 on a cubic lattice of spacing 0.2 with a seeded jitter of up to 0.01 per axis (the
 * same formula of the global id, so both benchmarks simulate the same particles), a square
 * cross-section and a height of about four widths, falling onto the plane y = 0; DEM contacts with
 * stiffness 8000 N/m, damping 2 N·s/m, friction 1 (against the ground too); 64 substeps per frame
 * at 60 frames/s.
 *
 *   strong scaling: a fixed N on k = 1, 2, 4, ... devices; speed-up t1/tk, efficiency t1/(k tk).
 *   weak scaling:   N = per-device count x k on k devices; efficiency t1/tk.
 * The one-device baseline is always measured (added to --gpus when missing): it is the solver
 * with one partition, which has no halo and no repartition (the split's own costs are not in t1).
 *
 * Timing: after two warm-up frames (capture, first repartition), each of `--frames` frames is
 * timed by the host's clock around wf_particles_step_frames(1) and a synchronization of
 * every device in use. Device events alone would miss the host-side repartition between frames,
 * which is part of what a frame costs; the median is reported. The halo traffic, the repartition
 * time and the reruns (frames run again because the skin was too thin) come from
 * wf_particles_info, the last two as differences over the timed frames. After the timed
 * frames, wf_particles_overlap_measure times (with --frames frames of each kind) a frame
 * without the halo copies and the copies of a frame alone: the hidden fraction is the part of the
 * copies' time that does not lengthen the frame. The split cloth's table (cloth_run, --only
 * cloth) prints the same from wf_cloth_overlap_measure.
 *
 * Device counts beyond what exists are skipped with a line saying so. On CPU devices all
 * partitions share the host's cores, so the CPU figures exercise the code path (CI runs
 * `--device cpu --quick`); they are not a measurement of scaling.
 */
#define _POSIX_C_SOURCE 200809L

#include "scaling_bench.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "scaling_mpi.h"
#include "tuning_env.h"
#include "weft/weft.h"

#define MAX_COUNTS  16 /* entries of --gpus */
#define MAX_DEVICES 16 /* partitions of a split solver */
#define CPU_DEVICES 4  /* CPU devices the runtime is started with */
#define MAX_ROWS    320
#define SUBSTEPS    64

enum { MODE_STRONG, MODE_WEAK };
static const char *const mode_names[] = {"strong", "weak"};

typedef struct sb_opts {
  const char *kind; /* "cuda", "cpu", or NULL: cuda when a CUDA device is usable */
  const char *csv, *machine;
  int counts[MAX_COUNTS]; /* device counts, ascending, distinct, starting with 1 */
  int n_counts;
  uint64_t particles, per_device; /* 0: the defaults */
  int frames;
  bool quick;
  bool no_particles, no_cloth;      /* --only cloth / --only particles */
  uint64_t cloth, cloth_per_device; /* grid sides (strong; weak per device); 0: the defaults */
  bool balance_count;               /* --balance count (default: time) */
  bool mpi;                         /* --mpi: over the ranks of the MPI job (scaling_mpi.c) */
  bool cloth_contact;               /* --cloth-contact: the cloth with contact (desc.contact) */
} sb_opts;

typedef struct sb_ctx {
  sb_opts o;
  FILE *out;
  wf_device *devs[MAX_DEVICES];
  int n_devs; /* devices of the chosen kind that exist */
  bench_row rows[MAX_ROWS];
  int n_rows;
  /* --mpi: the job's communicator (measure() splits over its ranks when set), this rank, the
   * ranks, this rank's index on its node (its device: devs[local % n_devs]) */
  const void *comm;
  int rank, ranks, local;
} sb_ctx;

/* What one configuration measured. */
typedef struct sb_result {
  double ms;                     /* median ms/frame */
  uint64_t halo_bytes;           /* per frame, as of the last repartition */
  double repartition_ms;         /* host repartition time per timed frame */
  double capture_ms;             /* host time capturing the frame graph, per timed frame */
  uint64_t reruns;               /* during the timed frames */
  uint64_t reruns_total;         /* since creation (warm-up included) */
  bool peer;                     /* every pair of devices has peer access */
  int mpi_halo;                  /* over ranks: the halo path (wf_particles_info.mpi_halo) */
  uint32_t owned_min, owned_max; /* particles per partition, as of the last repartition */
  wf_overlap ov;                 /* more than one device: the halo copies' overlap */
  double row_bytes;              /* a particle's bytes in the repartition over MPI ranks */
} sb_result;

static void add_row(sb_ctx *c, const char *bench, const char *metric, double v, const char *unit) {
  bench_row_add(c->rows, &c->n_rows, MAX_ROWS, bench, metric, v, unit);
}

static void fail_call(const char *what, wf_status st) { bench_fail("scaling", what, st); }

#define CHECK(call) BENCH_CHECK("scaling", call)

/* The column of `weft bench particles` (bench_column), of material `material`. */
typedef struct split_target {
  wf_particles *sp;
  uint32_t material;
} split_target;

static wf_status add_to_split(void *t, uint32_t n, const float (*p)[4], const float (*v)[4]) {
  split_target *s = t;
  wf_status st = wf_particles_add(s->sp, n, p, v, s->material, NULL);
  if (st != WF_OK) fail_call("adding the column (wf_particles_add)", st);
  return st;
}

static wf_status build_column(wf_particles *sp, uint64_t n, uint32_t material) {
  split_target t = {sp, material};
  return bench_column("scaling", n, add_to_split, &t);
}

/* Waits for every device of the first k: each partition's work runs on streams of its own. Over
 * MPI ranks: this rank's device. */
static wf_status sync_devices(sb_ctx *c, int k) {
  if (c->comm) return wf_device_synchronize(c->devs[c->local % c->n_devs]);
  for (int i = 0; i < k; i++) {
    wf_status st = wf_device_synchronize(c->devs[i]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* Over MPI ranks: each of the k partitions (one a rank) on its rank's own device. */
static void rank_devices(const sb_ctx *c, int k, wf_device **devices) {
  for (int i = 0; i < k; i++)
    devices[i] = c->devs[c->local % c->n_devs];
}

/* Builds the column of n particles split over the first k devices and times it. 0 or 1. */
static int measure(sb_ctx *c, int k, uint64_t n, sb_result *res) {
  int rc = 1;
  wf_particles *sp = NULL;
  double *ms = calloc((size_t)c->o.frames, sizeof *ms);
  if (!ms) {
    fprintf(stderr, "weft bench scaling: out of host memory\n");
    return 1;
  }
  memset(res, 0, sizeof *res);
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "column";
  d.substeps = SUBSTEPS;
  d.frame_dt = 1.0f / 60.0f;
  d.contact_model = WF_CONTACT_DEM;
  d.balance = c->o.balance_count ? WF_BALANCE_COUNT : WF_BALANCE_TIME;
  /* by time: a looser threshold than for counts, so that the clock's noise and the slow drift
   * of a settling pile do not move the slabs (and so the ghost counts, by a lattice layer, and
   * the frame graph's launch sizes) every frame */
  if (!c->o.balance_count) d.imbalance = 0.03f;
  for (int i = 0; i < k; i++)
    d.devices[i] = c->devs[i % c->n_devs];
  d.device_count = k;
  if (c->comm && k > 1) { /* a partition a rank, on the rank's own device */
    rank_devices(c, k, d.devices);
    d.mpi_comm = c->comm;
    d.balance = WF_BALANCE_COUNT; /* (by time is not supported over ranks yet) */
    d.imbalance = 0.0f;
    if (bench_mpi_halo_env("scaling", &d.mpi_halo)) goto done;
  }
  if (bench_particles_tuning_env("scaling", &d.tuning)) goto done;
  CHECK(wf_particles_create(&d, &sp));
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 8000.0f, m.damping = 2.0f, m.friction = 1.0f,
  m.restitution = 1.0f; /* dashpot: damping */
  uint32_t material = 0;
  CHECK(wf_particles_add_material(sp, &m, &material));
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "ground";
  g.friction = 1.0f;
  CHECK(wf_particles_add_collider(sp, &g, NULL));
  if (build_column(sp, n, material) != WF_OK) goto done;
  if (wf_particles_count(sp) != n) {
    fprintf(stderr, "weft bench scaling: the solver holds %u particles, %llu were added\n",
            wf_particles_count(sp), (unsigned long long)n);
    goto done;
  }
  CHECK(wf_particles_step_frames(sp, 2)); /* capture, first repartitions, warm-up */
  CHECK(sync_devices(c, k));
  wf_particles_info i0, i1;
  CHECK(wf_particles_info_get(sp, &i0));
  for (int f = 0; f < c->o.frames; f++) {
    double t0 = bench_now_s();
    CHECK(wf_particles_step_frames(sp, 1));
    CHECK(sync_devices(c, k));
    ms[f] = (bench_now_s() - t0) * 1e3;
  }
  CHECK(wf_particles_info_get(sp, &i1));
  if (k > 1 && !c->comm) CHECK(wf_particles_overlap_measure(sp, c->o.frames, &res->ov));
  res->row_bytes = 40.0 + (double)wf_particles_granular_state_bytes(sp) / (double)n;
  /* nothing blew up or got lost */
  wf_particles_stats stats;
  CHECK(wf_particles_stats_get(sp, &stats));
  if (stats.count != n || !isfinite(stats.kinetic_energy) || !isfinite(stats.max_speed)) {
    fprintf(stderr,
            "weft bench scaling: after the run on %d device(s): %u particles (expected %llu), "
            "kinetic energy %g J, max speed %g m/s\n",
            k, stats.count, (unsigned long long)n, stats.kinetic_energy, stats.max_speed);
    goto done;
  }
  res->ms = bench_median(ms, c->o.frames);
  res->halo_bytes = i1.halo_bytes_per_frame;
  res->repartition_ms = (i1.repartition_ms - i0.repartition_ms) / c->o.frames;
  res->capture_ms = (i1.capture_ms - i0.capture_ms) / c->o.frames;
  res->reruns = i1.reruns - i0.reruns;
  res->reruns_total = i1.reruns;
  res->peer = i1.peer;
  res->mpi_halo = i1.mpi_halo;
  res->owned_min = UINT32_MAX;
  for (int p = 0; p < i1.partitions && p < MAX_DEVICES; p++) {
    if (i1.owned[p] < res->owned_min) res->owned_min = i1.owned[p];
    if (i1.owned[p] > res->owned_max) res->owned_max = i1.owned[p];
  }
  rc = 0;
done:
  wf_particles_destroy(sp);
  free(ms);
  return rc;
}

static void bench_name(char *buf, size_t size, int mode, uint64_t n, int k) {
  snprintf(buf, size, "scaling_%s_p%llu_gpus%d", mode_names[mode], (unsigned long long)n, k);
}

static uint64_t particles_of(const sb_ctx *c, int mode, int k) {
  return mode == MODE_STRONG ? c->o.particles : c->o.per_device * (uint64_t)k;
}

/* One mode over every device count. 0 or 1. */
static int run_mode(sb_ctx *c, int mode) {
  double t1 = 0.0;
  for (int i = 0; i < c->o.n_counts; i++) {
    int k = c->o.counts[i];
    if (k > c->n_devs) {
      fprintf(c->out, "%-6s %7d   skipped: only %d %s device%s\n", mode_names[mode], k, c->n_devs,
              c->o.kind, c->n_devs == 1 ? "" : "s");
      fflush(c->out);
      continue;
    }
    uint64_t n = particles_of(c, mode, k);
    sb_result r;
    if (measure(c, k, n, &r)) return 1;
    if (k == 1) t1 = r.ms;
    double ratio = t1 > 0.0 && r.ms > 0.0 ? t1 / r.ms : 0.0;
    double eff = mode == MODE_STRONG ? ratio / k : ratio;
    double rate = r.ms > 0.0 ? (double)n * SUBSTEPS / (r.ms * 1e-3) : 0.0;
    char speedup[16];
    if (mode == MODE_STRONG)
      snprintf(speedup, sizeof speedup, "%.3f", ratio);
    else
      snprintf(speedup, sizeof speedup, "-");
    char ov_ms[16] = "-", no_halo[16] = "-", compute[16] = "-", halo[16] = "-", hidden[16] = "-";
    if (k > 1) {
      snprintf(ov_ms, sizeof ov_ms, "%.3f", r.ov.frame_ms);
      snprintf(no_halo, sizeof no_halo, "%.3f", r.ov.frame_no_halo_ms);
      snprintf(compute, sizeof compute, "%.3f", r.ov.compute_ms);
      snprintf(halo, sizeof halo, "%.3f", r.ov.halo_ms);
      snprintf(hidden, sizeof hidden, "%.3f", r.ov.hidden_fraction);
    }
    fprintf(c->out,
            "%-6s %7d %12llu %10.3f %8s %10.3f %13.3e %13.3f %12.3f %12.3f %6llu %9s %10s %10s "
            "%9s %7s %5s\n",
            mode_names[mode], k, (unsigned long long)n, r.ms, speedup, eff, rate,
            (double)r.halo_bytes * 1e-6, r.repartition_ms, r.capture_ms,
            (unsigned long long)r.reruns, ov_ms, no_halo, compute, halo, hidden,
            k == 1   ? "-"
            : r.peer ? "yes"
                     : "no");
    if (r.reruns_total != r.reruns)
      fprintf(c->out, "%-6s %7d   note: %llu frame(s) run again in the warm-up (skin too thin)\n",
              mode_names[mode], k, (unsigned long long)(r.reruns_total - r.reruns));
    if (k > 1 && r.owned_max > 0 && r.owned_min * 2 < r.owned_max)
      fprintf(c->out, "%-6s %7d   note: partitions own %u to %u particles\n", mode_names[mode], k,
              r.owned_min, r.owned_max);
    fflush(c->out);
    char bench[32];
    bench_name(bench, sizeof bench, mode, n, k);
    add_row(c, bench, "ms_per_frame", r.ms, "ms");
    if (mode == MODE_STRONG) add_row(c, bench, "speedup", ratio, "1");
    add_row(c, bench, "efficiency", eff, "1");
    add_row(c, bench, "particle_substeps_per_s", rate, "1/s");
    add_row(c, bench, "halo_bytes_per_frame", (double)r.halo_bytes, "B");
    add_row(c, bench, "repartition_ms_per_frame", r.repartition_ms, "ms");
    add_row(c, bench, "capture_ms_per_frame", r.capture_ms, "ms");
    add_row(c, bench, "reruns", (double)r.reruns, "1");
    if (k > 1) {
      add_row(c, bench, "overlap_frame_ms", r.ov.frame_ms, "ms");
      add_row(c, bench, "no_halo_ms_per_frame", r.ov.frame_no_halo_ms, "ms");
      add_row(c, bench, "compute_ms_per_frame", r.ov.compute_ms, "ms");
      add_row(c, bench, "halo_ms_per_frame", r.ov.halo_ms, "ms");
      add_row(c, bench, "halo_hidden_fraction", r.ov.hidden_fraction, "1");
    }
  }
  return 0;
}

/* ---- cloth ---------------------------------------------------------------------------------
 *
 * The split cloth (wf_cloth, weft/cloth.h) with `weft bench cloth`'s classic settings:
 * mass-spring, spacing 0.1 m, particle mass 0.1 kg, stretch, shear and bend springs of stiffness
 * 1000 N/m and damping 10 N·s/m, the two top corners pinned, 16 substeps a frame at 60 frames/s.
 *   strong scaling: an N x N grid on k devices (N = --cloth, default 4096);
 *   weak scaling:   N x N vertices per device (N = --cloth-per-device, default 2048): the grid
 *                   (a N) x (b N) for k = a b, a >= b, b the largest divisor of k <= sqrt(k)
 *                   (1: N x N, 2: 2N x N, 4: 2N x 2N).
 * Frames are timed as the particles' are (host clock around step + sync, median, after two
 * warm-up frames). Then wf_cloth_overlap_measure times `--frames` frames of each kind
 * (ordinary, without the halo copies, the copies alone) and gives the fraction of the copies'
 * time hidden behind compute; it puts the state back after. */

#define CLOTH_SUBSTEPS 16

typedef struct sb_cloth_result {
  double ms;     /* median ms/frame */
  wf_overlap ov; /* the overlap measurement */
  bool peer;     /* every pair of devices has peer access */
  uint32_t owned_min, owned_max;
  uint64_t halo_bytes; /* per frame, all partitions (wf_cloth_info) */
  int mpi_halo;        /* over ranks: the halo path (wf_cloth_info.mpi_halo) */
} sb_cloth_result;

/* The weak-scaling grid of k devices: (a n) x (b n). */
static void cloth_weak_grid(uint64_t n, int k, uint64_t grid[2]) {
  int b = 1;
  for (int d = 1; d * d <= k; d++)
    if (k % d == 0) b = d;
  grid[0] = n * (uint64_t)(k / b), grid[1] = n * (uint64_t)b;
}

static void cloth_grid_of(const sb_ctx *c, int mode, int k, uint64_t grid[2]) {
  if (mode == MODE_STRONG)
    grid[0] = grid[1] = c->o.cloth;
  else
    cloth_weak_grid(c->o.cloth_per_device, k, grid);
}

/* scaling_<mode>_c<NU>x<NR>[_contact]_gpus<K>; over MPI ranks mpi_<mode>_c..._ranks<K> */
static void cloth_bench_name(const sb_ctx *c, char *buf, size_t size, int mode,
                             const uint64_t grid[2], int k) {
  snprintf(buf, size, "%s_%s_c%llux%llu%s_%s%d", c->o.mpi ? "mpi" : "scaling", mode_names[mode],
           (unsigned long long)grid[0], (unsigned long long)grid[1],
           c->o.cloth_contact ? "_contact" : "", c->o.mpi ? "ranks" : "gpus", k);
}

/* Builds the grid split over the first k devices and times it. 0 or 1. */
static int cloth_measure(sb_ctx *c, int k, const uint64_t grid[2], sb_cloth_result *res) {
  int rc = 1;
  wf_cloth *cs = NULL;
  double *ms = calloc((size_t)c->o.frames, sizeof *ms);
  if (!ms) {
    fprintf(stderr, "weft bench scaling: out of host memory\n");
    return 1;
  }
  memset(res, 0, sizeof *res);
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "scaling";
  d.integrator = WF_CLOTH_SPRINGS;
  d.substeps = CLOTH_SUBSTEPS;
  d.frame_dt = 1.0f / 60.0f;
  d.material.particle_mass = 0.1f;
  d.material.coefficients = true; /* the measured setup: fixed per-spring coefficients */
  d.material.stretch_stiffness = d.material.shear_stiffness = d.material.bend_stiffness = 1000.0f;
  d.material.damping = 10.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = (int)grid[0], g.resolution[1] = (int)grid[1];
  g.size[0] = 0.1f * (float)(grid[0] - 1), g.size[1] = 0.1f * (float)(grid[1] - 1);
  g.center[1] = 0.0f;
  d.contact = c->o.cloth_contact;
  d.device_count = k;
  for (int i = 0; i < k; i++)
    d.devices[i] = c->devs[i];
  if (c->comm && k > 1) { /* a partition a rank, on the rank's own device */
    rank_devices(c, k, d.devices);
    d.mpi_comm = c->comm;
    if (bench_mpi_halo_env("scaling", &d.mpi_halo)) goto done;
  }
  if (bench_cloth_tuning_env("scaling", &d.tuning)) goto done;
  CHECK(wf_cloth_create_grid(&d, &g, &cs));
  CHECK(wf_cloth_pin_named(cs, "top-left", NULL));
  CHECK(wf_cloth_pin_named(cs, "top-right", NULL));
  CHECK(wf_cloth_step_frames(cs, 2)); /* capture, warm-up */
  CHECK(sync_devices(c, k));
  for (int f = 0; f < c->o.frames; f++) {
    double t0 = bench_now_s();
    CHECK(wf_cloth_step_frames(cs, 1));
    CHECK(sync_devices(c, k));
    ms[f] = (bench_now_s() - t0) * 1e3;
  }
  /* refuses a state that is not finite (the cloth blew up), naming the vertex; over ranks the
   * halo goes through MPI and is not measured apart */
  if (!c->comm) CHECK(wf_cloth_overlap_measure(cs, c->o.frames, &res->ov));
  wf_cloth_info info;
  CHECK(wf_cloth_info_get(cs, &info));
  res->ms = bench_median(ms, c->o.frames);
  res->peer = info.peer;
  res->halo_bytes = info.halo_bytes_per_frame;
  res->mpi_halo = info.mpi_halo;
  res->owned_min = UINT32_MAX;
  for (int p = 0; p < (int)info.partitions && p < MAX_DEVICES; p++) {
    if (info.owned[p] < res->owned_min) res->owned_min = info.owned[p];
    if (info.owned[p] > res->owned_max) res->owned_max = info.owned[p];
  }
  rc = 0;
done:
  wf_cloth_destroy(cs);
  free(ms);
  return rc;
}

/* One mode of the cloth over every device count. 0 or 1. */
static int cloth_run_mode(sb_ctx *c, int mode) {
  double t1 = 0.0;
  for (int i = 0; i < c->o.n_counts; i++) {
    int k = c->o.counts[i];
    if (k > c->n_devs) {
      fprintf(c->out, "cloth %-6s %7d   skipped: only %d %s device%s\n", mode_names[mode], k,
              c->n_devs, c->o.kind, c->n_devs == 1 ? "" : "s");
      fflush(c->out);
      continue;
    }
    uint64_t grid[2];
    cloth_grid_of(c, mode, k, grid);
    sb_cloth_result r;
    if (cloth_measure(c, k, grid, &r)) return 1;
    if (k == 1) t1 = r.ms;
    double ratio = t1 > 0.0 && r.ms > 0.0 ? t1 / r.ms : 0.0;
    double eff = mode == MODE_STRONG ? ratio / k : ratio;
    double nv = (double)grid[0] * (double)grid[1];
    double rate = r.ms > 0.0 ? nv * CLOTH_SUBSTEPS / (r.ms * 1e-3) : 0.0;
    char speedup[16], size[32], hidden[16], ov[4][16];
    if (mode == MODE_STRONG)
      snprintf(speedup, sizeof speedup, "%.3f", ratio);
    else
      snprintf(speedup, sizeof speedup, "-");
    snprintf(size, sizeof size, "%llux%llu", (unsigned long long)grid[0],
             (unsigned long long)grid[1]);
    const double ov_ms[4] = {r.ov.frame_ms, r.ov.frame_no_halo_ms, r.ov.compute_ms, r.ov.halo_ms};
    for (int j = 0; j < 4; j++)
      if (k == 1)
        snprintf(ov[j], sizeof ov[j], "-");
      else
        snprintf(ov[j], sizeof ov[j], "%.3f", ov_ms[j]);
    if (k == 1)
      snprintf(hidden, sizeof hidden, "-");
    else
      snprintf(hidden, sizeof hidden, "%.3f", r.ov.hidden_fraction);
    fprintf(c->out,
            "cloth %-6s %7d %12s %10.3f %8s %10.3f %13.3e %13.3f %9s %10s %10s %9s %7s %5s\n",
            mode_names[mode], k, size, r.ms, speedup, eff, rate,
            (double)r.ov.halo_bytes_per_frame * 1e-6, ov[0], ov[1], ov[2], ov[3], hidden,
            k == 1   ? "-"
            : r.peer ? "yes"
                     : "no");
    if (k > 1 && r.owned_max > 0 && r.owned_min * 2 < r.owned_max)
      fprintf(c->out, "cloth %-6s %7d   note: partitions own %u to %u vertices\n", mode_names[mode],
              k, r.owned_min, r.owned_max);
    fflush(c->out);
    char bench[48];
    cloth_bench_name(c, bench, sizeof bench, mode, grid, k);
    add_row(c, bench, "ms_per_frame", r.ms, "ms");
    if (mode == MODE_STRONG) add_row(c, bench, "speedup", ratio, "1");
    add_row(c, bench, "efficiency", eff, "1");
    add_row(c, bench, "vertex_substeps_per_s", rate, "1/s");
    add_row(c, bench, "halo_bytes_per_frame", (double)r.ov.halo_bytes_per_frame, "B");
    add_row(c, bench, "overlap_frame_ms", r.ov.frame_ms, "ms");
    add_row(c, bench, "no_halo_ms_per_frame", r.ov.frame_no_halo_ms, "ms");
    add_row(c, bench, "compute_ms_per_frame", r.ov.compute_ms, "ms");
    add_row(c, bench, "halo_ms_per_frame", r.ov.halo_ms, "ms");
    if (k > 1) add_row(c, bench, "halo_hidden_fraction", r.ov.hidden_fraction, "1");
  }
  return 0;
}

/* The cloth's sizes (defaults by device kind) and a check that its CSV names fit. 0, or 2 after
 * saying why. */
static int cloth_prepare(sb_ctx *c, bool cuda) {
  bool cc = c->o.cloth_contact; /* contact: a whole-cloth grid a partition, so smaller cloths */
  if (!c->o.cloth)
    c->o.cloth = cuda ? (c->o.quick ? 512 : cc ? 1024 : 4096) : (c->o.quick ? 48 : 128);
  if (!c->o.cloth_per_device)
    c->o.cloth_per_device = cuda ? (c->o.quick ? 256 : cc ? 1024 : 2048) : (c->o.quick ? 24 : 64);
  for (int mode = MODE_STRONG; mode <= MODE_WEAK; mode++)
    for (int i = 0; i < c->o.n_counts; i++) {
      uint64_t grid[2];
      cloth_grid_of(c, mode, c->o.counts[i], grid);
      char name[64];
      cloth_bench_name(c, name, sizeof name, mode, grid, c->o.counts[i]);
      if (grid[0] * grid[1] > ((uint64_t)1 << 30) || grid[0] > INT32_MAX || grid[1] > INT32_MAX) {
        fprintf(stderr, "weft bench scaling: a %llux%llu cloth is more than 2^30 vertices\n",
                (unsigned long long)grid[0], (unsigned long long)grid[1]);
        return 2;
      }
      if (strlen(name) >= sizeof((bench_row *)0)->benchmark) {
        fprintf(stderr,
                "weft bench scaling: the CSV name '%s' is too long (at most %zu characters)\n",
                name, sizeof((bench_row *)0)->benchmark - 1);
        return 2;
      }
    }
  return 0;
}

/* The cloth's part of the benchmark: its table, both modes. 0 or 1. */
static int cloth_run(sb_ctx *c, bool cuda) {
  if (!cuda && c->o.no_particles)
    fprintf(c->out, "\nnote: CPU devices share this machine's cores: these figures exercise the "
                    "split solver, they do not measure scaling\n");
  fprintf(c->out,
          "\ncloth: the split cloth, mass-spring, spacing 0.1, mass 0.1, stiffness 1000, damping "
          "10, top corners pinned, %d substeps/frame%s;\nmedian of %d frames after 2 warm-up "
          "frames, host clock around step + sync;\nhalo overlap (more than one device; "
          "wf_cloth_overlap_measure, medians of %d frames of each kind):\nov ms = an "
          "ordinary frame, no-halo ms = the frame without the halo copies, compute ms = the "
          "longest\npartition's kernels (device events), halo ms = the copies of a frame alone; "
          "hidden = 1 - (ov ms - compute ms) / halo ms\n",
          CLOTH_SUBSTEPS,
          c->o.cloth_contact ? ", contact on (vertex-triangle and edge-edge within the cloth)" : "",
          c->o.frames, c->o.frames);
  fprintf(c->out, "\n%-5s %-6s %7s %12s %10s %8s %10s %13s %13s %9s %10s %10s %9s %7s %5s\n", "",
          "mode", "devices", "grid", "ms/frame", "speed-up", "efficiency", "v-substeps/s",
          "halo MB/frame", "ov ms", "no-halo ms", "compute ms", "halo ms", "hidden", "peer");
  for (int mode = MODE_STRONG; mode <= MODE_WEAK; mode++)
    if (cloth_run_mode(c, mode)) return 1;
  return 0;
}

void wf_bench_scaling_usage(FILE *f) {
  fputs("usage: weft bench scaling [--device cuda|cpu] [--gpus K,K,...] [--particles N]\n"
        "                          [--per-device N] [--frames F] [--csv FILE] [--machine NAME]\n"
        "                          [--only particles|cloth] [--cloth SIDE]\n"
        "                          [--cloth-per-device SIDE] [--cloth-contact] [--mpi]\n"
        "                          [--quick]\n"
        "\n"
        "The particle benchmark's column (radius 0.1, spacing 0.2, jitter 0.01, DEM stiffness\n"
        "8000, damping 2, friction 1, 64 substeps per frame at 60 frames/s, the plane y = 0)\n"
        "in the split solver, on the first K devices of one kind. Strong scaling: N particles on\n"
        "K devices; weak scaling: N per device times K. Each frame is timed by the host's clock\n"
        "around the step and a synchronization (the host-side repartition between frames\n"
        "included); the median is reported with the speed-up t1/tK (strong), the efficiency\n"
        "(t1/(K tK) strong, t1/tK weak), particle-substeps/s, halo MB moved per frame, host\n"
        "repartition ms per frame, frames run again (skin too thin), a frame without the halo\n"
        "copies (no-halo ms), the copies of a frame alone (halo ms), the fraction of the\n"
        "copies' time hidden behind compute, and whether the devices have peer access. The\n"
        "one-device baseline is always measured.\n"
        "\n"
        "Then the split cloth (weft bench cloth's classic mass-spring setup: spacing 0.1,\n"
        "mass 0.1, stiffness 1000, damping 10, top corners pinned, 16 substeps per frame):\n"
        "strong scaling of an N x N grid, weak scaling with N x N vertices per device; besides\n"
        "the same columns: an ordinary frame (ov ms), a frame without the halo copies\n"
        "(no-halo ms), the longest partition's kernels timed by device events (compute ms),\n"
        "the halo copies of a frame alone (halo ms) and the fraction of the copies' time hidden\n"
        "behind compute (wf_cloth_overlap_measure). CSV benchmark\n"
        "scaling_<mode>_c<NU>x<NR>[_contact]_gpus<K>.\n"
        "\n"
        "options:\n"
        "  --device KIND     cuda or cpu (default: cuda if usable, else cpu; cpu uses the\n"
        "                    devices cpu:0..3, which share this machine's cores)\n"
        "  --gpus LIST       device counts (default 1,2,4); counts beyond the devices that exist\n"
        "                    are skipped\n"
        "  --particles N     strong scaling: particles (default 16777216 on CUDA, 65536 on CPU;\n"
        "                    --quick: 262144 / 8192)\n"
        "  --per-device N    weak scaling: particles per device (default 16777216 on CUDA, 16384\n"
        "                    on CPU; --quick: 262144 / 4096)\n"
        "  --frames F        timed frames per run, after 2 warm-up frames (default 10; --quick 3)\n"
        "  --csv FILE        append results as machine,date,benchmark,metric,value,unit rows\n"
        "                    (benchmark scaling_<strong|weak>_p<N>_gpus<K>)\n"
        "  --machine NAME    machine name for the CSV (default: hostname and device product)\n"
        "  --only WHAT       particles or cloth (default: both)\n"
        "  --balance HOW     the particle slabs: time (default: equal compute, each partition's\n"
        "                    particles weighted by its measured time per particle) or count\n"
        "                    (equal particle counts)\n"
        "  --cloth N         cloth strong scaling: an N x N grid (default 4096 on CUDA, 128 on\n"
        "                    CPU; --quick: 512 / 48)\n"
        "  --cloth-per-device N\n"
        "                    cloth weak scaling: N x N vertices per device; K devices run an\n"
        "                    (aN) x (bN) grid, K = ab, a >= b (default 2048 on CUDA, 64 on CPU;\n"
        "                    --quick: 256 / 24)\n"
        "  --cloth-contact   the cloth with contact (vertex-triangle and edge-edge within the\n"
        "                    cloth, wf_cloth_desc.contact); grid defaults on CUDA 1024 / 1024\n"
        "  --mpi             under an MPI launcher (mpirun -np R weft bench scaling --mpi): the\n"
        "                    particles and the cloth over the R ranks, a partition a rank,\n"
        "                    against one process on one device (CSV mpi_<mode>_..._ranks<R>);\n"
        "                    the link between ranks 0 and 1 and a model of a particle frame on\n"
        "                    M nodes from the measured figures (docs/multi-device.md)\n"
        "  --quick           small and short (for CI)\n"
        "  -h, --help        show this help\n",
        f);
}

static int parse_count(const char *opt, const char *s, uint64_t *out) {
  char *end;
  unsigned long long n = strtoull(s, &end, 10);
  if (end == s || *end || s[0] == '-' || n < 1 || n > ((uint64_t)1 << 30)) {
    fprintf(stderr, "weft bench scaling: %s '%s' must be a count in [1, 2^30]\n", opt, s);
    return 2;
  }
  *out = n;
  return 0;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static int parse_gpus(const char *arg, sb_opts *o) {
  const char *s = arg;
  o->n_counts = 0;
  while (*s) {
    char *end;
    long k = strtol(s, &end, 10);
    if (end == s || k < 1 || k > MAX_DEVICES || o->n_counts == MAX_COUNTS ||
        (*end && *end != ',')) {
      fprintf(stderr,
              "weft bench scaling: --gpus '%s': expected up to %d device counts in [1, %d] "
              "separated by commas\n",
              arg, MAX_COUNTS, MAX_DEVICES);
      return 2;
    }
    o->counts[o->n_counts++] = (int)k;
    s = *end ? end + 1 : end;
  }
  if (!o->n_counts) {
    fprintf(stderr, "weft bench scaling: --gpus needs at least one device count\n");
    return 2;
  }
  return 0;
}

/* Sorts the device counts, drops repeats and puts the baseline 1 first. */
static void normalize_counts(sb_opts *o) {
  int tmp[MAX_COUNTS + 1], n = 0;
  tmp[n++] = 1;
  for (int i = 0; i < o->n_counts; i++)
    tmp[n++] = o->counts[i];
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_int);
  o->n_counts = 0;
  for (int i = 0; i < n && o->n_counts < MAX_COUNTS; i++)
    if (i == 0 || tmp[i] != tmp[i - 1]) o->counts[o->n_counts++] = tmp[i];
}

/* The cloth's options: --only, --cloth, --cloth-per-device. 0, or 2 after saying why. */
static int cloth_parse(const char *opt, const char *val, sb_opts *o) {
  if (!strcmp(opt, "--only")) {
    o->no_particles = !strcmp(val, "cloth");
    o->no_cloth = !strcmp(val, "particles");
    if (o->no_particles || o->no_cloth) return 0;
    fprintf(stderr, "weft bench scaling: --only '%s' must be particles or cloth\n", val);
    return 2;
  }
  uint64_t *dst = !strcmp(opt, "--cloth") ? &o->cloth : &o->cloth_per_device;
  char *end;
  unsigned long long n = strtoull(val, &end, 10);
  if (end == val || *end || val[0] == '-' || n < 2 || n > 32768) {
    fprintf(stderr, "weft bench scaling: %s '%s' must be a grid side in [2, 32768]\n", opt, val);
    return 2;
  }
  *dst = n;
  return 0;
}

static bool takes_value(const char *opt) {
  static const char *const with_value[] = {
      "--device",  "--gpus", "--particles", "--per-device",       "--frames", "--csv",
      "--machine", "--only", "--cloth",     "--cloth-per-device", "--balance"};
  for (size_t i = 0; i < sizeof with_value / sizeof *with_value; i++)
    if (!strcmp(opt, with_value[i])) return true;
  return false;
}

static int parse(int argc, char **argv, sb_opts *o, FILE *out) {
  o->counts[0] = 1, o->counts[1] = 2, o->counts[2] = 4, o->n_counts = 3;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      wf_bench_scaling_usage(out);
      return 0;
    } else if (!strcmp(a, "--quick")) {
      o->quick = true;
    } else if (!strcmp(a, "--mpi")) {
      o->mpi = true;
    } else if (!strcmp(a, "--cloth-contact")) {
      o->cloth_contact = true;
    } else if (!takes_value(a)) {
      fprintf(stderr, "weft bench scaling: unknown option '%s' (see --help)\n", a);
      return 2;
    } else if (!val) {
      fprintf(stderr, "weft bench scaling: %s needs a value (see --help)\n", a);
      return 2;
    } else if (!strcmp(a, "--device")) {
      o->kind = argv[++i];
      if (strcmp(o->kind, "cuda") && strcmp(o->kind, "cpu")) {
        fprintf(stderr,
                "weft bench scaling: --device '%s' must be cuda or cpu (the first K devices of "
                "that kind are used)\n",
                o->kind);
        return 2;
      }
    } else if (!strcmp(a, "--gpus")) {
      if (parse_gpus(argv[++i], o)) return 2;
    } else if (!strcmp(a, "--balance")) {
      const char *b = argv[++i];
      o->balance_count = !strcmp(b, "count");
      if (!o->balance_count && strcmp(b, "time")) {
        fprintf(stderr, "weft bench scaling: --balance '%s' must be time or count\n", b);
        return 2;
      }
    } else if (!strcmp(a, "--particles")) {
      if (parse_count(a, argv[++i], &o->particles)) return 2;
    } else if (!strcmp(a, "--per-device")) {
      if (parse_count(a, argv[++i], &o->per_device)) return 2;
    } else if (!strcmp(a, "--csv")) {
      o->csv = argv[++i];
    } else if (!strcmp(a, "--machine")) {
      o->machine = argv[++i];
    } else if (!strcmp(a, "--frames")) {
      if (bench_parse_frames("scaling", argv[++i], &o->frames)) return 2;
    } else if (cloth_parse(a, argv[++i], o)) {
      return 2;
    }
  }
  normalize_counts(o);
  /* weak totals must fit the solver's 32-bit counts, names the CSV's benchmark column */
  int kmax = o->counts[o->n_counts - 1];
  if (o->per_device && o->per_device * (uint64_t)kmax > UINT32_MAX) {
    fprintf(stderr,
            "weft bench scaling: --per-device %llu on %d devices is more than 2^32 - 1 "
            "particles\n",
            (unsigned long long)o->per_device, kmax);
    return 2;
  }
  char name[64];
  bench_name(name, sizeof name, MODE_STRONG, o->particles, kmax);
  if (strlen(name) >= sizeof((bench_row *)0)->benchmark) {
    fprintf(stderr, "weft bench scaling: the CSV name '%s' is too long (at most %zu characters)\n",
            name, sizeof((bench_row *)0)->benchmark - 1);
    return 2;
  }
  return -1;
}

/* Starts the runtime with four CPU devices and collects the devices of the chosen kind. 0 or 1;
 * on failure the runtime is shut down. */
static int start(sb_ctx *c) {
  wf_init_desc desc = {.cpu_devices = CPU_DEVICES,
                       .log_level = WF_LOG_WARN,
                       .log = bench_log,
                       .cpu_threads = bench_cpu_threads()};
  /* a CPU run neither needs nor waits for the CUDA driver */
  desc.no_cuda = c->o.kind && !strcmp(c->o.kind, "cpu");
  wf_status st = wf_init(&desc);
  if (st != WF_OK) {
    fprintf(stderr, "weft bench scaling: cannot start the runtime: %s\n  %s\n", wf_status_str(st),
            wf_last_error());
    wf_shutdown();
    return 1;
  }
  if (!c->o.kind) c->o.kind = wf_device_is_cuda(wf_device_default()) ? "cuda" : "cpu";
  int most = strcmp(c->o.kind, "cpu") ? MAX_DEVICES : CPU_DEVICES;
  for (int i = 0; i < most; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", c->o.kind, i);
    if (wf_device_get(name, &c->devs[i]) != WF_OK) break;
    c->n_devs = i + 1;
  }
  if (c->n_devs == 0) {
    fprintf(stderr, "weft bench scaling: no %s device: %s\n", c->o.kind, wf_last_error());
    wf_shutdown();
    return 1;
  }
  return 0;
}

/* ---- over MPI ranks (--mpi) ----------------------------------------------------------------
 *
 * Under mpirun with R ranks: the column split into R partitions, one a rank on the rank's own
 * device (the node's local rank picks it), halos through MPI (staged through host memory: the
 * host waits, nothing of it is hidden behind compute), at every repartition each row sent to the
 * ranks that own it or hold it as a ghost (docs/multi-device.md, "MPI"). Strong scaling: N
 * particles on 1 device (rank 0 alone, one process) and on R ranks; weak: per-device x R. Then the
 * link between ranks 0 and 1 (ping-pong: latency of 8 bytes, rate of 1 MiB one way) and the model
 * of a frame on M nodes of one rank each, from what was measured:
 *
 *   t(M) = t1 / M                                   the one-device frame, split evenly
 *        + K * 2 * (lat + b / rate)                 K substeps, each rank's two halo messages
 *        + 2 * (lat + g * row / rate)               each repartition: a rank's ghost rows from
 *                                                   its two neighbours (and what migrates)
 *
 * with b the bytes of one halo message (measured halo bytes per frame / K / links), g = b / 48
 * the ghost rows of a link (48 bytes a ghost a substep) and row the bytes of a particle in the
 * repartition. Like the halo, g does not grow with M: a slab's boundary is the same plane. Where
 * the nodes' link is slower than this machine's, rate and lat are the only inputs that change. */
enum { HALO_ROW = 48 }; /* a ghost's bytes in a halo message (position, velocity, omega) */

/* The split cloth over the ranks (--mpi, unless --only particles): against rank 0 alone on one
 * device, strong (--cloth) and weak (--cloth-per-device), the slowest rank's median. 0 or 1, the
 * same on every rank. */
static int mpi_cloth(sb_ctx *c, const void *comm, FILE *out) {
  int ranks = c->ranks;
  if (out)
    fprintf(
        out,
        "\ncloth over %d ranks: mass-spring, spacing 0.1, mass 0.1, stiffness 1000, damping 10, "
        "top corners pinned, %d substeps/frame%s; median of %d frames (the slowest rank's)\n"
        "\n%-6s %5s %12s %10s %10s %10s %13s %10s\n",
        ranks, CLOTH_SUBSTEPS, c->o.cloth_contact ? ", contact on" : "", c->o.frames, "mode",
        "ranks", "grid", "t1 ms", "ms/frame", "efficiency", "halo MB/frame", "halo");
  for (int mode = MODE_STRONG; mode <= MODE_WEAK; mode++) {
    uint64_t g1[2], g[2];
    cloth_grid_of(c, mode, 1, g1);
    cloth_grid_of(c, mode, ranks, g);
    sb_cloth_result r1 = {0}, r = {0};
    c->comm = NULL; /* the one-process baseline, rank 0 alone */
    int bad = c->rank == 0 ? cloth_measure(c, 1, g1, &r1) : 0;
    sb_mpi_idle_barrier();
    if (sb_mpi_max(bad)) return 1;
    double t1 = sb_mpi_bcast(r1.ms);
    c->comm = comm;
    bad = cloth_measure(c, ranks, g, &r);
    c->comm = NULL;
    if (sb_mpi_max(bad)) return 1;
    double ms = sb_mpi_max(r.ms);
    double eff = ms > 0.0 ? (mode == MODE_STRONG ? t1 / (ranks * ms) : t1 / ms) : 0.0;
    if (out) {
      char size[32];
      snprintf(size, sizeof size, "%llux%llu", (unsigned long long)g[0], (unsigned long long)g[1]);
      fprintf(out, "%-6s %5d %12s %10.3f %10.3f %10.3f %13.3f %10s\n", mode_names[mode], ranks,
              size, t1, ms, eff, (double)r.halo_bytes * 1e-6,
              r.mpi_halo == WF_MPI_HALO_DIRECT ? "direct" : "staged");
    }
    char bench[48];
    cloth_bench_name(c, bench, sizeof bench, mode, g, ranks);
    add_row(c, bench, "ms_per_frame", ms, "ms");
    add_row(c, bench, "efficiency", eff, "1");
    add_row(c, bench, "halo_bytes_per_frame", (double)r.halo_bytes, "B");
  }
  return 0;
}

static int mpi_main(sb_ctx *c) {
  int rank = 0, ranks = 1, local = 0;
  const void *comm = NULL;
  if (!sb_mpi_job(&rank, &ranks, &local, &comm) || ranks < 2) {
    bool cuda_aware;
    fprintf(stderr,
            "weft bench scaling: --mpi runs under an MPI launcher with 2 or more ranks "
            "(mpirun -np 4 weft bench scaling --mpi)%s\n",
            wf_mpi_available(&cuda_aware, NULL, 0) ? "" : "; this weft was built without MPI");
    return 2;
  }
  c->rank = rank, c->ranks = ranks, c->local = local;
  if (start(c)) return 1;
  bool cuda = wf_device_is_cuda(c->devs[0]);
  if (!c->o.particles)
    c->o.particles = cuda ? (c->o.quick ? 262144 : 16777216) : (c->o.quick ? 8192 : 65536);
  if (!c->o.per_device)
    c->o.per_device = cuda ? (c->o.quick ? 262144 : 16777216) : (c->o.quick ? 4096 : 16384);
  if (!c->o.frames) c->o.frames = c->o.quick ? 3 : 10;
  if (!c->o.no_cloth && cloth_prepare(c, cuda)) {
    sb_mpi_barrier();
    wf_shutdown();
    return 2;
  }
  FILE *out = rank == 0 ? c->out : NULL;
  double rate = 0.0, lat = 0.0;
  sb_mpi_link((size_t)1 << 20, c->o.quick ? 5 : 20, &rate, &lat);
  if (out) {
    fprintf(out,
            "weft %s bench scaling --mpi: over %d MPI ranks, a partition a rank on its %s device\n",
            WF_VERSION_STRING, ranks, c->o.kind);
    if (!c->o.no_particles)
      fprintf(out,
              "particles: the split particle solver, column, DEM, %d substeps/frame, median of %d "
              "frames (the slowest rank's) after 2 warm-up frames; slabs balanced by count\n",
              SUBSTEPS, c->o.frames);
    fprintf(out, "link rank 0 <-> 1: %.3g GB/s, latency %.3g us (ping-pong, 1 MiB and 8 B)\n",
            rate * 1e-9, lat * 1e6);
    if (!cuda)
      fprintf(out, "note: CPU devices share this machine's cores: these figures exercise the "
                   "ranks' split, they do not measure scaling\n");
    if (!c->o.no_particles)
      fprintf(out, "\n%-6s %5s %12s %10s %10s %10s %13s %14s %10s %10s\n", "mode", "ranks",
              "particles", "t1 ms", "ms/frame", "efficiency", "halo MB/frame", "moved MB/rep",
              "model ms", "hidden");
  }
  int rc = 1;
  sb_result strong = {0};
  double t1_strong = 0.0;
  for (int mode = MODE_STRONG; mode <= MODE_WEAK && !c->o.no_particles; mode++) {
    uint64_t n1 = mode == MODE_STRONG ? c->o.particles : c->o.per_device;
    uint64_t n = mode == MODE_STRONG ? n1 : n1 * (uint64_t)ranks;
    sb_result r1 = {0}, r = {0};
    c->comm = NULL; /* the one-process baseline, rank 0 alone */
    int bad = rank == 0 ? measure(c, 1, n1, &r1) : 0;
    sb_mpi_idle_barrier(); /* the other ranks wait without taking rank 0's cores */
    if (sb_mpi_max(bad)) goto done;
    double t1 = sb_mpi_bcast(r1.ms);
    c->comm = comm;
    bad = measure(c, ranks, n, &r);
    c->comm = NULL;
    if (sb_mpi_max(bad)) goto done;
    double ms = sb_mpi_max(r.ms);
    int links = 2 * (ranks - 1);
    double b = links ? (double)r.halo_bytes / SUBSTEPS / links : 0.0;
    double t_halo = rate > 0.0 ? SUBSTEPS * 2.0 * (lat + b / rate) : 0.0;
    double g = b / HALO_ROW; /* ghost rows of a link */
    double moved = links * g * r.row_bytes;
    double t_move = rate > 0.0 ? 2.0 * (lat + g * r.row_bytes / rate) : 0.0;
    double model = (mode == MODE_STRONG ? t1 / ranks : t1) + 1e3 * (t_halo + t_move);
    double eff = ms > 0.0 ? (mode == MODE_STRONG ? t1 / (ranks * ms) : t1 / ms) : 0.0;
    if (mode == MODE_STRONG) strong = r, t1_strong = t1;
    if (out)
      fprintf(out, "%-6s %5d %12llu %10.3f %10.3f %10.3f %13.3f %14.3f %10.3f %10s\n",
              mode_names[mode], ranks, (unsigned long long)n, t1, ms, eff,
              (double)r.halo_bytes * 1e-6, moved * 1e-6, model,
              r.mpi_halo == WF_MPI_HALO_DIRECT ? "0 (direct)" : "0 (staged)");
    char bench[48];
    snprintf(bench, sizeof bench, "mpi_%s_p%llu_ranks%d", mode_names[mode], (unsigned long long)n,
             ranks);
    add_row(c, bench, "ms_per_frame", ms, "ms");
    add_row(c, bench, "efficiency", eff, "1");
    add_row(c, bench, "halo_bytes_per_frame", (double)r.halo_bytes, "B");
    add_row(c, bench, "moved_bytes_per_repartition", moved, "B");
    add_row(c, bench, "model_ms_per_frame", model, "ms");
  }
  if (out && rate > 0.0 && !c->o.no_particles) { /* the model on M nodes, strong scaling */
    double n = (double)c->o.particles;
    int links = 2 * (ranks - 1);
    double b = links ? (double)strong.halo_bytes / SUBSTEPS / links : 0.0;
    fprintf(
        out,
        "\nmodel, strong scaling of %.0f particles on M nodes (a rank each; link %.3g GB/s, "
        "%.3g us; halo message %.0f B, repartition row %.0f B; t1 %.3f ms):\n%6s %12s %12s %12s "
        "%12s %10s\n",
        n, rate * 1e-9, lat * 1e6, b, strong.row_bytes, t1_strong, "M", "compute ms", "halo ms",
        "moved ms", "frame ms", "efficiency");
    static const int nodes[] = {2, 4, 8, 16, 64, 256};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
      int m = nodes[i];
      double tc = t1_strong / m;
      double th = 1e3 * SUBSTEPS * 2.0 * (lat + b / rate);
      double tg = 1e3 * 2.0 * (lat + b / HALO_ROW * strong.row_bytes / rate);
      double t = tc + th + tg;
      fprintf(out, "%6d %12.3f %12.3f %12.3f %12.3f %10.3f\n", m, tc, th, tg, t,
              t > 0.0 ? t1_strong / (m * t) : 0.0);
    }
  }
  if (!c->o.no_cloth && mpi_cloth(c, comm, out)) goto done;
  if (out && c->o.csv) {
    char machine[512];
    if (c->o.machine)
      snprintf(machine, sizeof machine, "%s", c->o.machine);
    else
      bench_machine_name(c->devs[0], machine, sizeof machine);
    if (bench_csv_append(c->o.csv, machine, c->rows, c->n_rows, out)) goto done;
  }
  rc = 0;
done:
  if (out) fflush(out);
  sb_mpi_barrier();
  wf_shutdown();
  return rc;
}

int wf_bench_scaling(int argc, char **argv, FILE *out) {
  static sb_ctx ctx;
  sb_ctx *c = &ctx;
  memset(c, 0, sizeof *c);
  c->out = out;
  int rc = parse(argc, argv, &c->o, out);
  if (rc >= 0) return rc;
  if (c->o.mpi) return mpi_main(c);
  if (start(c)) return 1;
  rc = 1;
  bool cuda = wf_device_is_cuda(c->devs[0]);
  if (!c->o.particles)
    c->o.particles = cuda ? (c->o.quick ? 262144 : 16777216) : (c->o.quick ? 8192 : 65536);
  if (!c->o.per_device)
    c->o.per_device = cuda ? (c->o.quick ? 262144 : 16777216) : (c->o.quick ? 4096 : 16384);
  if (!c->o.frames) c->o.frames = c->o.quick ? 3 : 10;
  if (!c->o.no_cloth && cloth_prepare(c, cuda)) {
    wf_shutdown();
    return 2;
  }
  char machine[512];
  if (c->o.machine)
    snprintf(machine, sizeof machine, "%s", c->o.machine);
  else
    bench_machine_name(c->devs[0], machine, sizeof machine);

  fprintf(out,
          "weft %s bench scaling: the split particle solver on %d %s device%s:", WF_VERSION_STRING,
          c->n_devs, c->o.kind, c->n_devs == 1 ? "" : "s");
  for (int i = 0; i < c->n_devs; i++) {
    wf_device_info info;
    CHECK(wf_device_info_get(c->devs[i], &info));
    fprintf(out, "%s %s (%s)", i ? "," : "", wf_device_name(c->devs[i]), info.product);
  }
  if (c->o.no_particles) goto cloth;
  fprintf(out,
          "\ncolumn, DEM, %d substeps/frame; median of %d frames after 2 warm-up frames, "
          "host clock around step + sync;\nslabs balanced by %s\n",
          SUBSTEPS, c->o.frames,
          c->o.balance_count
              ? "particle count (--balance count)"
              : "compute time (WF_BALANCE_TIME, imbalance 0.03; --balance count for counts)");
  if (!cuda)
    fprintf(out, "note: CPU devices share this machine's cores: these figures exercise the split "
                 "solver, they do not measure scaling\n");
  fprintf(out,
          "halo overlap (more than one device; wf_particles_overlap_measure, medians of %d\n"
          "frames of each kind, each from the same repartition, no repartition or capture timed):\n"
          "ov ms = an ordinary frame, no-halo ms = the frame without the halo copies, compute ms\n"
          "= the critical path through the partitions' substeps (device time stamps around them\n"
          "in ordinary frames), halo ms = the copies of a frame alone;\n"
          "hidden = 1 - (ov ms - compute ms) / halo ms\n",
          c->o.frames);
  fprintf(out, "\n%-6s %7s %12s %10s %8s %10s %13s %13s %12s %12s %6s %9s %10s %10s %9s %7s %5s\n",
          "mode", "devices", "particles", "ms/frame", "speed-up", "efficiency", "p-substeps/s",
          "halo MB/frame", "repart ms/fr", "capture ms/fr", "reruns", "ov ms", "no-halo ms",
          "compute ms", "halo ms", "hidden", "peer");
  for (int mode = MODE_STRONG; mode <= MODE_WEAK; mode++)
    if (run_mode(c, mode)) goto done;
cloth:
  if (!c->o.no_cloth && cloth_run(c, cuda)) goto done;
  if (c->o.csv && bench_csv_append(c->o.csv, machine, c->rows, c->n_rows, out)) goto done;
  rc = 0;
done:
  fflush(out);
  wf_shutdown();
  return rc;
}
