/* `weft bench cloth`: what the cloth solver costs per frame on this machine.
 *
 * The classic setup, for each size N in --sizes (N x N vertices) and each integrator:
 *   a square grid cloth, particle spacing 0.1 m, particle mass 0.1 kg, stretch, shear and bend
 *   springs (bend between vertices two apart) of stiffness 1000 N/m and damping 10 N·s/m (XPBD:
 *   compliance 1/1000 and the same damping, dihedral bending, 1 iteration), the two corners of the
 *   first row pinned, gravity -9.81 m/s², 60 frames/s with 16 substeps a frame, and every frame
 *   all positions copied to a pinned host buffer (asynchronous copy, wait at the frame's end).
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
#include "weft/weft.h"

#define MAX_SIZES 16
#define MAX_ROWS  256
#define MIB       ((size_t)1 << 20)

typedef struct cloth_opts {
  const char *device, *csv, *machine, *sizes;
  int frames;
  bool quick;
} cloth_opts;

void wf_bench_cloth_usage(FILE *f) {
  fputs("usage: weft bench cloth [--device NAME] [--sizes N,N,...] [--frames N] [--csv FILE]\n"
        "                        [--machine NAME] [--quick]\n"
        "\n"
        "The classic cloth benchmark: N x N grid cloths (spacing 0.1 m, mass 0.1 kg, springs of\n"
        "stiffness 1000 and damping 10, two corners pinned, 60 frames/s, 16 substeps a frame,\n"
        "positions read back every frame), with the mass-spring and XPBD integrators. Prints\n"
        "ms/frame, vertex-substeps/s, modelled bytes per substep and the fraction of the measured\n"
        "device memory bandwidth.\n"
        "\n"
        "options:\n"
        "  --device NAME   cpu, cpu:N, cuda, cuda:N (default: cuda:0 when usable, else cpu:0)\n"
        "  --sizes LIST    grid sides, comma separated (default: 32,64,...,2048 on a GPU,\n"
        "                  32,64,128,256 on a CPU)\n"
        "  --frames N      measured frames per run, after 5 warm-up frames (default 60)\n"
        "  --csv FILE      append results as machine,date,benchmark,metric,value,unit rows\n"
        "  --machine NAME  machine name for the CSV (default: hostname and device product)\n"
        "  --quick         sizes up to 256 on a GPU (64 on a CPU) and 10 frames (for CI)\n"
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

/* Bytes one substep moves, by the model in the file comment. */
static double model_bytes(int integrator, double N, const wf_cloth_info *info) {
  double nv = N * N;
  if (integrator == WF_CLOTH_SPRINGS) return nv * (68.0) + 2.0 * info->springs * 8.0;
  double distance = 2.0 * N * (N - 1) + 2.0 * (N - 1) * (N - 1);
  double bend = (double)info->constraints - distance;
  return nv * 48.0 + distance * (24.0 + 2 * 48.0) + bend * (24.0 + 4 * 48.0) + nv * 64.0;
}

static int run_one(wf_device *dev, wf_device *host, int N, int integrator, int frames,
                   run_result *r) {
  int rc = 1;
  wf_cloth *c = NULL;
  wf_buffer *pinned = NULL;
  double *ms = malloc((size_t)frames * sizeof *ms);
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "bench";
  d.integrator = integrator;
  d.substeps = 16;
  d.iterations = 1;
  d.material.particle_mass = 0.1f;
  d.material.stretch_stiffness = d.material.shear_stiffness = d.material.bend_stiffness = 1000.0f;
  d.material.stretch_compliance = d.material.shear_compliance = 1e-3f;
  d.material.bend_compliance = 1e-3f;
  d.material.damping = 10.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = N;
  g.size[0] = g.size[1] = 0.1f * (float)(N - 1);
  g.center[1] = 0.0f;
  wf_cloth_info info;
  wf_status st = ms ? wf_cloth_create_grid(dev, &d, &g, &c) : WF_ERR_OUT_OF_MEMORY;
  if (st == WF_OK) st = wf_cloth_pin_named(c, "top-left", NULL);
  if (st == WF_OK) st = wf_cloth_pin_named(c, "top-right", NULL);
  if (st == WF_OK) st = wf_cloth_info_get(c, &info);
  if (st == WF_OK) st = wf_buffer_create(host, (size_t)N * N * 16, WF_BUFFER_PINNED, NULL, &pinned);
  /* warm-up: capture, first launches, caches */
  for (int f = 0; f < 5 && st == WF_OK; f++) {
    st = wf_cloth_step_frames(c, 1);
    if (st == WF_OK) st = wf_cloth_copy_positions(c, pinned, 0);
    if (st == WF_OK) st = wf_stream_synchronize(wf_cloth_stream(c));
  }
  for (int f = 0; f < frames && st == WF_OK; f++) {
    double t0 = bench_now_s();
    st = wf_cloth_step_frames(c, 1);
    if (st == WF_OK) st = wf_cloth_copy_positions(c, pinned, 0);
    if (st == WF_OK) st = wf_stream_synchronize(wf_cloth_stream(c));
    ms[f] = (bench_now_s() - t0) * 1e3;
  }
  if (st == WF_OK) st = wf_cloth_check(c);
  if (st != WF_OK) {
    fprintf(stderr, "weft bench cloth: %dx%d %s: %s: %s\n", N, N, integrator ? "xpbd" : "springs",
            wf_status_str(st), wf_last_error());
    goto done;
  }
  /* the readback must hold the cloth: a pinned corner where it started, the rest finite */
  const float *p = wf_buffer_ptr(pinned);
  for (size_t i = 0; i < (size_t)N * N; i++)
    if (!(p[4 * i + 1] == p[4 * i + 1])) {
      fprintf(stderr, "weft bench cloth: readback holds NaN at vertex %zu\n", i);
      goto done;
    }
  r->ms = bench_median(ms, frames);
  r->vss = (double)N * N * d.substeps / (r->ms * 1e-3);
  r->bytes = model_bytes(integrator, N, &info);
  r->gbs = r->bytes * d.substeps / (r->ms * 1e-3) * 1e-9;
  rc = 0;
done:
  if (pinned) wf_buffer_destroy(pinned, NULL);
  wf_cloth_destroy(c);
  free(ms);
  return rc;
}

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
  printf("%-8s %-10s %10s %12s %16s %14s %10s %8s\n", "integr.", "size", "vertices", "ms/frame",
         "vertex-substep/s", "MB/substep", "GB/s", "of bw");
  add_row(rows, &n_rows, "device_bandwidth", bw, "GB/s");
  for (int integrator = 0; integrator < 2; integrator++)
    for (int k = 0; k < n_sizes; k++) {
      run_result r;
      if (run_one(dev, host, sizes[k], integrator, frames, &r)) goto fail;
      const char *iname = integrator ? "xpbd" : "springs";
      char sz[32], metric[64];
      snprintf(sz, sizeof sz, "%dx%d", sizes[k], sizes[k]);
      printf("%-8s %-10s %10d %12.4f %16.4g %14.3f %10.1f %7.1f%%\n", iname, sz,
             sizes[k] * sizes[k], r.ms, r.vss, r.bytes * 1e-6, r.gbs,
             bw > 0 ? 100.0 * r.gbs / bw : 0.0);
      fflush(stdout);
      snprintf(metric, sizeof metric, "%s_%s_ms_per_frame", iname, sz);
      add_row(rows, &n_rows, metric, r.ms, "ms");
      snprintf(metric, sizeof metric, "%s_%s_vertex_substeps_per_s", iname, sz);
      add_row(rows, &n_rows, metric, r.vss, "1/s");
      snprintf(metric, sizeof metric, "%s_%s_bytes_per_substep", iname, sz);
      add_row(rows, &n_rows, metric, r.bytes, "B");
      snprintf(metric, sizeof metric, "%s_%s_bandwidth_fraction", iname, sz);
      add_row(rows, &n_rows, metric, bw > 0 ? r.gbs / bw : 0.0, "1");
    }
  if (o.csv && bench_csv_append(o.csv, machine, rows, n_rows, stdout)) goto fail;
  rc = 0;
fail:
  fflush(stdout);
  wf_shutdown();
  return rc;
}
