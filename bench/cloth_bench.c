/* `weft bench cloth`: what the cloth solver costs per frame on this machine.
 *
 * The classic setup, for each size N in --sizes (N x N vertices) and each integrator:
 *   a square grid cloth, particle spacing 0.1 m, particle mass 0.1 kg, stretch, shear and bend
 *   springs (bend between vertices two apart) of stiffness 1000 N/m and damping 10 N·s/m (XPBD:
 *   compliance 1/1000 and the same damping, dihedral bending, 1 iteration), the two corners of the
 *   first row pinned, gravity -9.81 m/s², 60 frames/s with 16 substeps a frame, and every frame
 *   all positions copied to a pinned host buffer (asynchronous copy, wait at the frame's end).
 *
 * Three readbacks for the mass-spring integrator: "springs" enqueues wf_cloth_copy_positions
 * after each frame (a copy node after the frame); "springs-rb" registers the pinned buffer once
 * with wf_cloth_set_frame_readback, and the one-launch frame writes the positions (xyz + inverse
 * mass, 16 bytes a vertex) from its last substep straight into it; "springs-xyz" does the same
 * with wf_cloth_set_frame_readback_as(WF_CLOTH_XYZ): x, y, z packed, 12 bytes a vertex, as the
 * positions of the classic benchmark are read back. All wait for the stream every frame, so all
 * measure the frame up to the positions being in host memory. The "kernel" column says how the
 * frame ran (res/L<n>: a resident frame, n threads a vertex holding its state in registers, "/sm":
 * neighbours staged in shared memory; stride: a grid-stride loop; substep: one launch per substep).
 *
 * XPBD runs three ways: "xpbd" (1 iteration, copy after the frame: the earlier rows),
 * "xpbd4-rb" (4 iterations, tuning.one_launch ON, wf_cloth_set_frame_readback: the issue-29
 * target's setup; ON so that a CPU device runs the one-launch frame too, which it does only when
 * asked) and "xpbd4-stg" (4 iterations with tuning.one_launch OFF: the staged frame, a launch
 * per stage, as the baseline of the same run). Their kernel column: "block" (the one-launch frame
 * in one block), "stride" (the one-launch grid-stride frame), "stages" (a launch per stage);
 * cloth_xpbd_frame.h describes them.
 *
 * --profile separates, per size, the fixed per-frame cost from the per-substep cost of the
 * mass-spring frame: the median of a bare stream synchronize, of copy + synchronize, of frames of
 * S = 1, 2, 4, 8, 16 substeps (the substep dt kept at 1/960 s) without readback, fitted by least
 * squares as fixed + S x per-substep, and the 16-substep frame with each readback.
 *
 * Reported per run: ms/frame (median of the measured frames after a warm-up, host wall time from
 * the frame's launch to the end of its readback), vertex-substeps per second, the bytes a substep
 * moves by this model, and that traffic as a fraction of the device memory bandwidth measured
 * with a large device-to-device copy:
 *   mass-spring  per vertex: read pos + vel (32 B), write pos + vel (32 B), CSR start (4 B) and
 *                8 B per incident spring; neighbour positions/velocities are assumed to come from
 *                cache (they are the same rows a block reads anyway).
 *   XPBD         predict: read pos + vel, write pred (48 B a vertex); each distance constraint
 *                reads its record (24 B) and pos (for damping) and reads + writes pred of its 2
 *                vertices (24 + 2 x 48 B), each bending constraint the same for 4 vertices
 *                (24 + 4 x 48 B); finalize: read pos + pred, write pos + vel (64 B a vertex).
 */
#define _POSIX_C_SOURCE 200809L

#include "cloth_bench.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tuning_env.h"
#include "weft/weft.h"

#define MAX_SIZES 16
#define MAX_ROWS  256
#define MIB       ((size_t)1 << 20)

typedef struct cloth_opts {
  const char *device, *csv, *machine, *sizes;
  int frames;
  bool quick, profile, contact;
} cloth_opts;

void wf_bench_cloth_usage(FILE *f) {
  fputs("usage: weft bench cloth [--device NAME] [--sizes N,N,...] [--frames N] [--csv FILE]\n"
        "                        [--machine NAME] [--quick] [--profile] [--contact]\n"
        "\n"
        "The classic cloth benchmark: N x N grid cloths (spacing 0.1 m, mass 0.1 kg, springs of\n"
        "stiffness 1000 and damping 10, two corners pinned, 60 frames/s, 16 substeps a frame,\n"
        "positions read back every frame), with the mass-spring and XPBD integrators. Prints\n"
        "ms/frame, vertex-substeps/s, modelled bytes per substep and the fraction of the measured\n"
        "device memory bandwidth. Mass-spring runs twice: springs (wf_cloth_copy_positions after\n"
        "each frame), springs-rb (wf_cloth_set_frame_readback: the frame kernel writes the\n"
        "positions, 16 bytes a vertex, into the pinned buffer itself) and springs-xyz (the same\n"
        "as packed x, y, z: 12 bytes a vertex). XPBD runs xpbd (1 iteration), xpbd4-rb\n"
        "(4 iterations, the one-launch frame, frame readback) and xpbd4-stg (4 iterations, a\n"
        "launch per stage: the baseline).\n"
        "\n"
        "options:\n"
        "  --device NAME   cpu, cpu:N, cuda, cuda:N (default: cuda:0 when usable, else cpu:0)\n"
        "  --sizes LIST    grid sides, comma separated (default: 32,64,...,2048 on a GPU,\n"
        "                  32,64,128,256 on a CPU)\n"
        "  --frames N      measured frames per run, after 5 warm-up frames (default 60)\n"
        "  --csv FILE      append results as machine,date,benchmark,metric,value,unit rows\n"
        "  --machine NAME  machine name for the CSV (default: hostname and device product)\n"
        "  --quick         sizes up to 256 on a GPU (64 on a CPU) and 10 frames (for CI)\n"
        "  --profile       also split the mass-spring frame into fixed and per-substep cost:\n"
        "                  synchronize alone, copy + synchronize, frames of 1..16 substeps\n"
        "  --contact       also run \"xpbd-contact\": XPBD with cloth contact on\n"
        "                  (wf_cloth_desc.contact; the sheet hangs, no layers touch: the cost of\n"
        "                  the contact stage's grid, walk and motion bound)\n"
        "  -h, --help      show this help\n",
        f);
}

/* Parses options; returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, cloth_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      wf_bench_cloth_usage(stdout);
      return 0;
    }
    if (strcmp(a, "--quick") == 0) {
      o->quick = true;
      continue;
    }
    if (strcmp(a, "--profile") == 0) {
      o->profile = true;
      continue;
    }
    if (strcmp(a, "--contact") == 0) {
      o->contact = true;
      continue;
    }
    static const char *const names[] = {"--device", "--csv", "--machine", "--sizes", "--frames"};
    const char *value = NULL;
    int which = -1;
    for (int k = 0; k < 5 && which < 0; k++) {
      size_t len = strlen(names[k]);
      if (strncmp(a, names[k], len) != 0 || (a[len] != '\0' && a[len] != '=')) continue;
      which = k;
      if (a[len] == '=')
        value = a + len + 1;
      else if (i + 1 < argc)
        value = argv[++i];
    }
    if (which < 0) {
      fprintf(stderr, "weft bench cloth: unknown option '%s'\n", a);
      wf_bench_cloth_usage(stderr);
      return 2;
    }
    if (!value || !*value) {
      fprintf(stderr, "weft bench cloth: %s needs a value\n", names[which]);
      return 2;
    }
    if (which == 0) o->device = value;
    if (which == 1) o->csv = value;
    if (which == 2) o->machine = value;
    if (which == 3) o->sizes = value;
    if (which == 4) {
      char *end;
      long n = strtol(value, &end, 10);
      if (*end || n < 1 || n > 100000) {
        fprintf(stderr, "weft bench cloth: --frames '%s' is not a count in [1, 100000]\n", value);
        return 2;
      }
      o->frames = (int)n;
    }
  }
  if (o->device && !bench_device_name_valid(o->device)) {
    fprintf(stderr, "weft bench cloth: '%s' is not a device name (cpu, cpu:N, cuda, cuda:N)\n",
            o->device);
    return 2;
  }
  return -1;
}

static int parse_sizes(const char *s, int *sizes) {
  int n = 0;
  while (*s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 2 || v > 8192 || n == MAX_SIZES) return -1;
    sizes[n++] = (int)v;
    s = end;
    if (*s == ',')
      s++;
    else if (*s)
      return -1;
  }
  return n;
}

typedef struct run_result {
  double ms, vss, bytes, gbs;
} run_result;

/* Bytes one substep moves, by the model in the file comment (XPBD: the constraints' share once
 * an iteration). */
static double model_bytes(int integrator, int iterations, double N, const wf_cloth_info *info) {
  double nv = N * N;
  if (integrator == WF_CLOTH_SPRINGS) return nv * (68.0) + 2.0 * info->springs * 8.0;
  double distance = 2.0 * N * (N - 1) + 2.0 * (N - 1) * (N - 1);
  double bend = (double)info->constraints - distance;
  return nv * 48.0 + iterations * (distance * (24.0 + 2 * 48.0) + bend * (24.0 + 4 * 48.0)) +
         nv * 64.0;
}

/* Readback of a measured frame. */
enum { RB_NONE, RB_COPY, RB_FRAME, RB_FRAME_XYZ };

typedef struct run_cfg {
  int N, integrator, substeps, frames, readback;
  bool step;      /* false: no frame, only the readback and the wait */
  bool contact;   /* cloth contact on (wf_cloth_desc.contact) */
  int iterations; /* XPBD: iterations a substep (0: 1) */
  int one_launch; /* tuning.one_launch (WF_CLOTH_TUNE_*; OFF: kernels per substep or stage) */
} run_cfg;

/* Median ms of cfg->frames measured frames after 5 warm-up frames: [step a frame] [read back]
 * wait for the stream. Fills *info and *kernel (the frame kernel's name). */
static int run_cfg_ms(wf_device *dev, wf_device *host, const run_cfg *cfg, double *out,
                      wf_cloth_info *info) {
  int rc = 1, N = cfg->N, frames = cfg->frames;
  wf_cloth *c = NULL;
  wf_buffer *pinned = NULL;
  double *ms = malloc((size_t)frames * sizeof *ms);
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "bench";
  d.integrator = cfg->integrator;
  d.substeps = cfg->substeps;
  d.frame_dt = (float)cfg->substeps / 960.0f; /* 1/60 s at 16 substeps; dt is always 1/960 s */
  d.iterations = cfg->iterations > 0 ? cfg->iterations : 1;
  d.material.particle_mass = 0.1f;
  d.material.coefficients = true; /* the measured setup: fixed per-spring coefficients */
  d.material.stretch_stiffness = d.material.shear_stiffness = d.material.bend_stiffness = 1000.0f;
  d.material.stretch_compliance = d.material.shear_compliance = 1e-3f;
  d.material.bend_compliance = 1e-3f;
  d.material.damping = 10.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = N;
  g.size[0] = g.size[1] = 0.1f * (float)(N - 1);
  g.center[1] = 0.0f;
  d.devices[0] = dev;
  d.contact = cfg->contact;
  d.tuning.one_launch = cfg->one_launch; /* the variant's; the environment's over it */
  if (bench_cloth_tuning_env("cloth", &d.tuning)) goto done;
  wf_status st = ms ? wf_cloth_create_grid(&d, &g, &c) : WF_ERR_OUT_OF_MEMORY;
  if (st == WF_OK) st = wf_cloth_pin_named(c, "top-left", NULL);
  if (st == WF_OK) st = wf_cloth_pin_named(c, "top-right", NULL);
  if (st == WF_OK) st = wf_buffer_create(host, (size_t)N * N * 16, WF_BUFFER_PINNED, NULL, &pinned);
  if (st == WF_OK && cfg->readback == RB_FRAME) st = wf_cloth_set_frame_readback(c, pinned, 0);
  if (st == WF_OK && cfg->readback == RB_FRAME_XYZ)
    st = wf_cloth_set_frame_readback_as(c, pinned, 0, WF_CLOTH_XYZ);
  /* warm-up: capture, first launches, caches */
  for (int f = 0; f < 5 + frames && st == WF_OK; f++) {
    double t0 = bench_now_s();
    if (cfg->step) st = wf_cloth_step_frames(c, 1);
    if (st == WF_OK && cfg->readback == RB_COPY) st = wf_cloth_copy_positions(c, pinned, 0);
    if (st == WF_OK) st = wf_stream_synchronize(wf_cloth_stream(c));
    if (f >= 5) ms[f - 5] = (bench_now_s() - t0) * 1e3;
  }
  if (st == WF_OK) st = wf_cloth_check(c);
  if (st == WF_OK) st = wf_cloth_info_get(c, info);
  if (st != WF_OK) {
    fprintf(stderr, "weft bench cloth: %dx%d %s: %s: %s\n", N, N,
            cfg->integrator ? "xpbd" : "springs", wf_status_str(st), wf_last_error());
    goto done;
  }
  /* the readback must hold the cloth: finite */
  const float *p = wf_buffer_ptr(pinned);
  const size_t stride = cfg->readback == RB_FRAME_XYZ ? 3 : 4;
  for (size_t i = 0; cfg->readback != RB_NONE && i < (size_t)N * N; i++)
    if (!(p[stride * i + 1] == p[stride * i + 1])) {
      fprintf(stderr, "weft bench cloth: readback holds NaN at vertex %zu\n", i);
      goto done;
    }
  *out = bench_median(ms, frames);
  rc = 0;
done:
  if (c) wf_cloth_set_frame_readback(c, NULL, 0);
  if (pinned) wf_buffer_destroy(pinned, NULL);
  wf_cloth_destroy(c);
  free(ms);
  return rc;
}

/* "tile<W>x<H>/L<lanes>" (resident in tiles of W x H, lanes a boundary vertex), "res/L<lanes>[/sm]"
 * (resident: threads a vertex, neighbours staged in shared memory), "stride" or "substep". Returns
 * a static buffer (the bench is single-threaded). */
static const char *kernel_name(const wf_cloth_info *info, int integrator) {
  static char buf[32];
  if (integrator == WF_CLOTH_XPBD) /* one block, or grid-stride (cloth_xpbd_frame.h) */
    switch (info->frame_kernel) {
    case WF_CLOTH_FRAME_RESIDENT: return info->frame_smem ? "block/sm" : "block";
    case WF_CLOTH_FRAME_STRIDE: return info->frame_grid_sync ? "stride/gs" : "stride";
    default: return "stages";
    }
  switch (info->frame_kernel) {
  case WF_CLOTH_FRAME_RESIDENT:
    if (info->frame_tile[0])
      snprintf(buf, sizeof buf, "tile%ux%u/L%u", info->frame_tile[0], info->frame_tile[1],
               info->frame_lanes);
    else
      snprintf(buf, sizeof buf, "res/L%u%s", info->frame_lanes, info->frame_smem ? "/sm" : "");
    return buf;
  case WF_CLOTH_FRAME_STRIDE: return "stride";
  default: return "substep";
  }
}

static int run_one(wf_device *dev, wf_device *host, int N, int integrator, int readback, int frames,
                   bool contact, int iterations, int one_launch, run_result *r,
                   wf_cloth_info *info) {
  run_cfg cfg = {N, integrator, 16, frames, readback, true, contact, iterations, one_launch};
  if (run_cfg_ms(dev, host, &cfg, &r->ms, info)) return 1;
  r->vss = (double)N * N * 16 / (r->ms * 1e-3);
  r->bytes = model_bytes(integrator, iterations > 0 ? iterations : 1, N, info);
  r->gbs = r->bytes * 16 / (r->ms * 1e-3) * 1e-9;
  return 0;
}

/* --profile for one size (see the file comment). */
static int profile_one(wf_device *dev, wf_device *host, int N, int frames, bench_row *rows,
                       int *n_rows);

static void add_row(bench_row *rows, int *n, const char *metric, double value, const char *unit) {
  if (*n >= MAX_ROWS) return;
  bench_row *r = &rows[(*n)++];
  snprintf(r->benchmark, sizeof r->benchmark, "cloth");
  snprintf(r->metric, sizeof r->metric, "%s", metric);
  r->value = value;
  r->unit = unit;
}

int wf_bench_cloth(int argc, char **argv) {
  cloth_opts o = {.frames = 0};
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0) return rc;
  rc = 1;
  static bench_row rows[MAX_ROWS];
  int n_rows = 0;
  wf_device *dev = NULL, *host = NULL;
  if (bench_start("cloth", o.device, &dev)) return 1;
  if (wf_device_get("cpu:0", &host) != WF_OK) {
    fprintf(stderr, "weft bench cloth: %s\n", wf_last_error());
    wf_shutdown();
    return 1;
  }
  bool cuda = wf_device_is_cuda(dev);
  int sizes[MAX_SIZES], n_sizes = 0;
  if (o.sizes) {
    n_sizes = parse_sizes(o.sizes, sizes);
    if (n_sizes <= 0) {
      fprintf(stderr, "weft bench cloth: --sizes '%s' is not a list of sides in [2, 8192]\n",
              o.sizes);
      wf_shutdown();
      return 2;
    }
  } else {
    int top = cuda ? (o.quick ? 256 : 2048) : (o.quick ? 64 : 256);
    for (int s = 32; s <= top; s *= 2)
      sizes[n_sizes++] = s;
  }
  int frames = o.frames ? o.frames : (o.quick ? 10 : 60);
  wf_device_info info;
  wf_device_info_get(dev, &info);
  char machine[512];
  if (o.machine)
    snprintf(machine, sizeof machine, "%s", o.machine);
  else
    bench_machine_name(dev, machine, sizeof machine);
  double bw = bench_device_bandwidth_gbs(dev, (cuda ? (o.quick ? 64 : 512) : 64) * MIB);
  printf("weft %s bench cloth on %s: %s\nmachine: %s%s\n", WF_VERSION_STRING, wf_device_name(dev),
         info.product, machine, o.quick ? "  (--quick)" : "");
  if (bw > 0)
    printf("measured device memory bandwidth: %.1f GB/s (device-to-device copy, read + write)\n",
           bw);
  else
    printf("device memory bandwidth: not measured (%s)\n", wf_last_error());
  printf("16 substeps a frame, %d measured frames after 5 warm-up; positions read back every "
         "frame\n\n",
         frames);
  printf("%-11s %-10s %10s %9s %12s %16s %14s %10s %8s\n", "variant", "size", "vertices", "kernel",
         "ms/frame", "vertex-substep/s", "MB/substep", "GB/s", "of bw");
  add_row(rows, &n_rows, "device_bandwidth", bw, "GB/s");
  static const struct {
    const char *name, *metric;
    int integrator, readback;
    bool contact;
    int iterations;
    int one_launch; /* tuning.one_launch */
  } variants[] = {
      {"springs", "springs", WF_CLOTH_SPRINGS, RB_COPY, false, 1, WF_CLOTH_TUNE_AUTO},
      {"springs-rb", "springs_rb", WF_CLOTH_SPRINGS, RB_FRAME, false, 1, WF_CLOTH_TUNE_AUTO},
      {"springs-xyz", "springs_xyz", WF_CLOTH_SPRINGS, RB_FRAME_XYZ, false, 1, WF_CLOTH_TUNE_AUTO},
      {"xpbd", "xpbd", WF_CLOTH_XPBD, RB_COPY, false, 1, WF_CLOTH_TUNE_AUTO},
      {"xpbd4-rb", "xpbd4_rb", WF_CLOTH_XPBD, RB_FRAME, false, 4, WF_CLOTH_TUNE_ON},
      {"xpbd4-stg", "xpbd4_staged", WF_CLOTH_XPBD, RB_COPY, false, 4, WF_CLOTH_TUNE_OFF},
      {"xpbd-contact", "xpbd_contact", WF_CLOTH_XPBD, RB_COPY, true, 1, WF_CLOTH_TUNE_AUTO}};
  for (int v = 0; v < (o.contact ? 7 : 6); v++)
    for (int k = 0; k < n_sizes; k++) {
      run_result r;
      wf_cloth_info ci;
      if (run_one(dev, host, sizes[k], variants[v].integrator, variants[v].readback, frames,
                  variants[v].contact, variants[v].iterations, variants[v].one_launch, &r, &ci))
        goto fail;
      char sz[24], metric[64];
      snprintf(sz, sizeof sz, "%dx%d", sizes[k], sizes[k]);
      printf("%-11s %-10s %10d %9s %12.4f %16.4g %14.3f %10.1f %7.1f%%\n", variants[v].name, sz,
             sizes[k] * sizes[k], kernel_name(&ci, variants[v].integrator), r.ms, r.vss,
             r.bytes * 1e-6, r.gbs, bw > 0 ? 100.0 * r.gbs / bw : 0.0);
      fflush(stdout);
      const char *iname = variants[v].metric;
      snprintf(metric, sizeof metric, "%s_%s_ms_per_frame", iname, sz);
      add_row(rows, &n_rows, metric, r.ms, "ms");
      snprintf(metric, sizeof metric, "%s_%s_vertex_substeps_per_s", iname, sz);
      add_row(rows, &n_rows, metric, r.vss, "1/s");
      snprintf(metric, sizeof metric, "%s_%s_bytes_per_substep", iname, sz);
      add_row(rows, &n_rows, metric, r.bytes, "B");
      snprintf(metric, sizeof metric, "%s_%s_bandwidth_fraction", iname, sz);
      add_row(rows, &n_rows, metric, bw > 0 ? r.gbs / bw : 0.0, "1");
    }
  if (o.profile) {
    printf(
        "\nprofile, mass-spring (us; median of %d frames): frame(S) = fixed + S x substep, fitted "
        "over S = 1, 2, 4, 8, 16\n",
        frames);
    printf("%-10s %9s %9s %11s %9s %9s %10s %10s %10s %10s\n", "size", "kernel", "sync",
           "copy+sync", "fixed", "substep", "S=16", "S=16+copy", "S=16+rb", "S=16+xyz");
    for (int k = 0; k < n_sizes; k++)
      if (profile_one(dev, host, sizes[k], frames, rows, &n_rows)) goto fail;
  }
  if (o.csv && bench_csv_append(o.csv, machine, rows, n_rows, stdout)) goto fail;
  rc = 0;
fail:
  fflush(stdout);
  wf_shutdown();
  return rc;
}

static int profile_one(wf_device *dev, wf_device *host, int N, int frames, bench_row *rows,
                       int *n_rows) {
  static const int S[] = {1, 2, 4, 8, 16};
  double t[5], sync_ms, copy_ms, copy16, rb16, xyz16;
  wf_cloth_info ci;
  run_cfg cfg = {N, WF_CLOTH_SPRINGS, 16, frames, RB_NONE, false, false, 1, 0};
  if (run_cfg_ms(dev, host, &cfg, &sync_ms, &ci)) return 1;
  cfg.readback = RB_COPY;
  if (run_cfg_ms(dev, host, &cfg, &copy_ms, &ci)) return 1;
  cfg.step = true;
  if (run_cfg_ms(dev, host, &cfg, &copy16, &ci)) return 1;
  cfg.readback = RB_FRAME;
  if (run_cfg_ms(dev, host, &cfg, &rb16, &ci)) return 1;
  cfg.readback = RB_FRAME_XYZ;
  if (run_cfg_ms(dev, host, &cfg, &xyz16, &ci)) return 1;
  cfg.readback = RB_NONE;
  for (int k = 0; k < 5; k++) {
    cfg.substeps = S[k];
    if (run_cfg_ms(dev, host, &cfg, &t[k], &ci)) return 1;
  }
  /* least squares t = a + b S */
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int k = 0; k < 5; k++)
    sx += S[k], sy += t[k], sxx += (double)S[k] * S[k], sxy += S[k] * t[k];
  double b = (5 * sxy - sx * sy) / (5 * sxx - sx * sx), a = (sy - b * sx) / 5;
  char sz[24], metric[64];
  snprintf(sz, sizeof sz, "%dx%d", N, N);
  printf("%-10s %9s %9.1f %11.1f %9.1f %9.2f %10.1f %10.1f %10.1f %10.1f\n", sz,
         kernel_name(&ci, WF_CLOTH_SPRINGS), sync_ms * 1e3, copy_ms * 1e3, a * 1e3, b * 1e3,
         t[4] * 1e3, copy16 * 1e3, rb16 * 1e3, xyz16 * 1e3);
  fflush(stdout);
  const struct {
    const char *what;
    double ms;
  } out[] = {{"sync", sync_ms},      {"copy_sync", copy_ms},  {"frame_fixed", a},
             {"substep", b},         {"frame_s16", t[4]},     {"frame_s16_copy", copy16},
             {"frame_s16_rb", rb16}, {"frame_s16_xyz", xyz16}};
  for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
    snprintf(metric, sizeof metric, "springs_%s_profile_%s_us", sz, out[k].what);
    add_row(rows, n_rows, metric, out[k].ms * 1e3, "us");
  }
  return 0;
}
