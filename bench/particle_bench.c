/* `weft bench particles`: the particle solver's throughput on one device.
 *
 * The scene (issue "particle solver"): a column of particles of radius 0.1 on a cubic lattice of
 * spacing 2r = 0.2 with a small seeded jitter (0.01 per axis), falling onto the plane y = 0;
 * 64 substeps per frame at 60 frames/s; DEM contacts with stiffness 8000 N/m, damping 2 N·s/m,
 * restitution 1 (the dashpot is the damping alone), friction 1, the granular model's defaults
 * otherwise (rolling resistance 0.01, contact history, rotation); the Hertz model with the
 * default glass-bead moduli (E = 50 MPa, ν = 0.25). The column's cross-section is square and its
 * height about four times its width. `--model` picks linear (dem), hertz or xpbd; the default
 * runs linear and hertz one after the other, so the two granular models are reported side by
 * side. The old linear model without rotation or contact history is gone from the code (merged
 * over by the granular model); `--baseline FILE` prints its recorded rows from an earlier run's
 * CSV (bench/results/nvidia-h200.csv, 2026-11-21) beside each size, with the speed ratio.
 *
 * Bytes per particle: the device's bytes (wf_particles_device_bytes) over N, split into the state
 * (38: position + radius, velocity + inverse mass, global id, material), the granular state (272:
 * angular velocity 16 and 8 history slots of 32, allocated for every model) and the grid (the
 * rest: sorted copies, ordering arrays, cell table, scan storage); the header of the output names
 * every byte.
 *
 * For each size N: the frame is captured and warmed up (2 frames), then `--frames` frames are
 * launched one by one, each timed by a pair of events; the median is reported as ms/frame, with
 * particle-substeps per second, the device bytes per particle, a model of the bytes moved per
 * substep and that traffic as a fraction of the device's measured memory bandwidth (a large
 * on-device copy, read + write). `--profile` adds one uncaptured substep-by-substep run with
 * events between the stages: where the substep's time goes (the measurement behind rebuilding
 * the grid every substep rather than keeping a Verlet list).
 *
 * Traffic model per particle and substep (each array read or written once from DRAM; neighbour
 * reads are assumed to hit the cache, which the x-contiguous cell order makes likely):
 *   counts cleared 4 T/N; keys 32 (pos 16 in, key + arrival 8 out, the count's atomic 8); scan
 *   8 T/N (counts in, starts out); scatter 16 (key, arrival, start in; slot out); place 88
 *   (slot, key, two starts, pos 16, vel 16, material 2 in; index 4, pos, vel, material out);
 *   contacts 70 + 4 T/N (sorted pos, vel, material, index, cell starts in; pos and vel out);
 *   T = table entries. The granular state adds (DEM and Hertz): place 32 (omega in, sorted
 *   omega out); contacts 32 (sorted omega in, omega out) and the contact history. A particle's
 *   held contacts sit packed in its first slots (32 B each) and their keys are read in rounds
 *   that stop at a free slot: slot 0, then slots 1 to 3, then 4 to 7. So a particle holding m
 *   contacts reads r(m) = 1, 4 or 8 slots (m = 0, 1 to 3, 4 or more) and writes m: 32 (r(m) +
 *   m) bytes, averaged over the particles as they are at the end of the timed frames (read from
 *   the granular blob; printed as "history"). Before e9a72d9 the search read one slot after
 *   another up to the first free one, min(m + 1, 8), which the rows recorded up to f485320
 *   count; before the slots were packed it read all 8, counted 2 x 256. XPBD moves no granular
 *   state. */
#define _POSIX_C_SOURCE 200809L

#include "particle_bench.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tuning_env.h"
#include "weft/weft.h"

#define MAX_SIZES 16
#define MAX_ROWS  256

typedef struct pb_opts {
  const char *device, *csv, *machine;
  const char *baseline; /* an earlier run's CSV: the old linear model's rows */
  uint64_t sizes[MAX_SIZES];
  int n_sizes;
  int frames;
  int model;
  bool profile, quick;
} pb_opts;

typedef struct pb_ctx {
  pb_opts o;
  FILE *out;
  wf_device *dev;
  double bandwidth_gbs;
  bench_row rows[MAX_ROWS];
  int n_rows;
  double last_rate; /* particle-substeps/s of the last run_size */
} pb_ctx;

static void add_row(pb_ctx *c, const char *bench, const char *metric, double v, const char *unit) {
  bench_row_add(c->rows, &c->n_rows, MAX_ROWS, bench, metric, v, unit);
}

static void fail_call(const char *what, wf_status st) { bench_fail("particles", what, st); }

#define CHECK(call) BENCH_CHECK("particles", call)

/* The column (bench_column). */
static wf_status add_to_solver(void *ps, uint32_t n, const float (*p)[4], const float (*v)[4]) {
  wf_status st = wf_particles_add(ps, n, p, v, 0, NULL);
  if (st != WF_OK) fail_call("adding the column", st);
  return st;
}

static wf_status build_column(wf_particles *ps, uint64_t n) {
  return bench_column("particles", n, add_to_solver, ps);
}

/* The contact history's traffic a particle-substep (see the top), and the mean contacts held,
 * from the granular blob (weft/particles.h: a 16-byte header, 16 bytes a particle, then 8 slots
 * of 32 bytes a particle, the partner's key at byte 12 of a slot, 0 for a free one). */
static double history_bytes(wf_particles *ps, double *held) {
  size_t bytes = wf_particles_granular_state_bytes(ps);
  uint32_t n = wf_particles_count(ps);
  unsigned char *blob = malloc(bytes ? bytes : 1);
  *held = 0.0;
  if (!blob || !n || wf_particles_granular_state_get(ps, blob, bytes) != WF_OK) {
    free(blob);
    return 0.0;
  }
  const unsigned char *h = blob + 16 + (size_t)n * 16;
  double sum = 0.0, m_sum = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    int m = 0;
    for (; m < 8; m++) {
      uint32_t key;
      memcpy(&key, h + ((size_t)i * 8 + (size_t)m) * 32 + 12, 4);
      if (!key) break;
    }
    sum += 32.0 * ((m == 0 ? 1 : m <= 3 ? 4 : 8) + m);
    m_sum += m;
  }
  free(blob);
  *held = m_sum / n;
  return sum / n;
}

static double bytes_per_particle_substep(const wf_particles *ps, uint64_t n, int model,
                                         double history) {
  uint64_t table = wf_particles_capacity(ps) > 64 ? wf_particles_capacity(ps) : 64;
  double t = (double)table / (double)n;
  double granular = model == WF_CONTACT_XPBD ? 0.0 : 32.0 + 32.0 + history;
  return 4.0 * t + 32.0 + 8.0 * t + 16.0 + 88.0 + 70.0 + 4.0 * t + granular;
}

static const char *model_name(int model) {
  return model == WF_CONTACT_XPBD ? "xpbd" : model == WF_CONTACT_HERTZ ? "hertz" : "dem";
}

/* Device bytes per particle of the capacity-sized buffers, as weft/particles.h lists them: the
 * state (position + radius 16, velocity + inverse mass 16, global id 4, material 2) and the
 * granular state (angular velocity 16, 8 history slots of 32: tangential spring 12, partner's
 * id 4, rolling spring 12, spare 4; allocated for every model). The rest of the measured bytes
 * is the grid's: sorted copies, ordering arrays, cell table, scan storage. */
#define STATE_BYTES    38.0
#define GRANULAR_BYTES 272.0

/* The first value of `metric` (benchmark "particles") in an earlier run's CSV, with the row's
 * machine and date; false when the file has none. */
static bool baseline_find(const char *path, const char *metric, double *value, char *who,
                          size_t who_n) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    char *field[6], *save = NULL;
    int k = 0;
    for (char *t = strtok_r(line, ",\n", &save); t && k < 6; t = strtok_r(NULL, ",\n", &save))
      field[k++] = t;
    if (k < 5 || strcmp(field[2], "particles") || strcmp(field[3], metric)) continue;
    *value = strtod(field[4], NULL);
    snprintf(who, who_n, "%s %s", field[0], field[1]);
    found = true;
  }
  fclose(f);
  return found;
}

/* The old linear model (no rotation, no history) at size n, from --baseline: its rows were named
 * dem_n<N>_... and n<N>_device_bytes_per_particle. */
static void baseline_row(pb_ctx *c, uint64_t n, double new_rate) {
  char metric[64], who[160] = "";
  double ms = 0, rate = 0, bytes = 0, frac = 0;
  unsigned long long nn = (unsigned long long)n;
  snprintf(metric, sizeof metric, "dem_n%llu_ms_per_frame", nn);
  if (!baseline_find(c->o.baseline, metric, &ms, who, sizeof who)) {
    fprintf(c->out, "%6s %12llu (no %s in %s)\n", "old", nn, metric, c->o.baseline);
    return;
  }
  snprintf(metric, sizeof metric, "dem_n%llu_particle_substeps_per_s", nn);
  baseline_find(c->o.baseline, metric, &rate, who, sizeof who);
  snprintf(metric, sizeof metric, "n%llu_device_bytes_per_particle", nn);
  baseline_find(c->o.baseline, metric, &bytes, who, sizeof who);
  snprintf(metric, sizeof metric, "dem_n%llu_bandwidth_fraction", nn);
  baseline_find(c->o.baseline, metric, &frac, who, sizeof who);
  fprintf(c->out, "%6s %12llu %10.3f %14.3e %6.0f%20s %8s %8.1f%%  recorded: %s; new/old %.2fx\n",
          "old", nn, ms, rate, bytes, "", "", 100.0 * frac, who, rate > 0 ? new_rate / rate : 0.0);
}

static int run_size(pb_ctx *c, uint64_t n, int model) {
  int rc = 1;
  wf_particles *ps = NULL;
  wf_stream *stream = NULL; /* the solver runs on it; the timing events are recorded on it */
  wf_event *e0 = NULL, *e1 = NULL;
  double *ms = calloc((size_t)c->o.frames, sizeof *ms);
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "column";
  d.capacity = (uint32_t)n;
  d.substeps = 64;
  d.frame_dt = 1.0f / 60.0f;
  d.contact_model = model;
  CHECK(wf_stream_create(c->dev, 0, &stream));
  d.stream = stream;
  d.devices[0] = c->dev;
  if (bench_particles_tuning_env("particles", &d.tuning)) goto done;
  CHECK(wf_particles_create(&d, &ps));
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 8000.0f, m.damping = 2.0f, m.friction = 1.0f, m.restitution = 1.0f;
  CHECK(wf_particles_set_material(ps, 0, &m));
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "ground";
  g.friction = 1.0f;
  CHECK(wf_particles_add_collider(ps, &g, NULL));
  if (build_column(ps, n) != WF_OK) goto done;
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e0));
  CHECK(wf_event_create(c->dev, WF_EVENT_TIMING, &e1));
  CHECK(wf_particles_step_frames(ps, 2)); /* capture + warm up */
  CHECK(wf_particles_check(ps));
  for (int f = 0; f < c->o.frames; f++) {
    CHECK(wf_event_record(e0, stream));
    CHECK(wf_particles_step_frames(ps, 1));
    CHECK(wf_event_record(e1, stream));
    float dt = 0.0f;
    CHECK(wf_event_synchronize(e1));
    CHECK(wf_event_elapsed_ms(e0, e1, &dt));
    ms[f] = dt;
  }
  CHECK(wf_particles_check(ps)); /* nothing blew up or left the grid */
  double med = bench_median(ms, c->o.frames);
  double rate = (double)n * 64.0 / (med * 1e-3);
  double held = 0.0, hist_b = model == WF_CONTACT_XPBD ? 0.0 : history_bytes(ps, &held);
  double bpp = bytes_per_particle_substep(ps, n, model, hist_b);
  double gbs = bpp * (double)n * 64.0 / (med * 1e-3) * 1e-9;
  double mem = (double)wf_particles_device_bytes(ps) / (double)n;
  double grid_b = mem - STATE_BYTES - GRANULAR_BYTES;
  fprintf(c->out, "%6s %12llu %10.3f %14.3e %6.0f = %3.0f + %3.0f + %4.0f %10.0f %8.1f %8.1f%%\n",
          model_name(model), (unsigned long long)n, med, rate, mem, STATE_BYTES, GRANULAR_BYTES,
          grid_b, bpp, gbs, c->bandwidth_gbs > 0 ? 100.0 * gbs / c->bandwidth_gbs : 0.0);
  if (model != WF_CONTACT_XPBD)
    fprintf(c->out, "%6s %12s history: %.2f contacts held a particle, %.0f B/p-substep of it\n", "",
            "", held, hist_b);
  c->last_rate = rate;
  fflush(c->out);
  char metric[64];
  snprintf(metric, sizeof metric, "%s_n%llu_ms_per_frame", model_name(model),
           (unsigned long long)n);
  add_row(c, "particles", metric, med, "ms");
  snprintf(metric, sizeof metric, "%s_n%llu_particle_substeps_per_s", model_name(model),
           (unsigned long long)n);
  add_row(c, "particles", metric, rate, "1/s");
  snprintf(metric, sizeof metric, "%s_n%llu_bandwidth_fraction", model_name(model),
           (unsigned long long)n);
  add_row(c, "particles", metric, c->bandwidth_gbs > 0 ? gbs / c->bandwidth_gbs : 0.0, "1");
  snprintf(metric, sizeof metric, "%s_n%llu_device_bytes_per_particle", model_name(model),
           (unsigned long long)n);
  add_row(c, "particles", metric, mem, "B");
  snprintf(metric, sizeof metric, "%s_n%llu_history_contacts_per_particle", model_name(model),
           (unsigned long long)n);
  if (model != WF_CONTACT_XPBD) add_row(c, "particles", metric, held, "1");
  const char *part[3] = {"state", "granular", "grid"};
  const double part_b[3] = {STATE_BYTES, GRANULAR_BYTES, grid_b};
  for (int k = 0; k < 3; k++) {
    snprintf(metric, sizeof metric, "%s_n%llu_%s_bytes_per_particle", model_name(model),
             (unsigned long long)n, part[k]);
    add_row(c, "particles", metric, part_b[k], "B");
  }

  if (c->o.profile) {
    wf_particles_profile_result pr;
    CHECK(wf_particles_profile(ps, 16, &pr));
    static const char *names[WF_PSTAGE_COUNT] = {"keys", "scan", "scatter", "place", "contacts"};
    fprintf(c->out, "             profile (16 uncaptured substeps, per substep): ");
    for (int k = 0; k < WF_PSTAGE_COUNT; k++)
      fprintf(c->out, "%s %.3f ms (%.0f%%)  ", names[k], pr.stage_ms[k],
              100.0 * pr.stage_ms[k] / pr.substep_ms);
    fprintf(c->out, "\n");
    double grid = pr.stage_ms[WF_PSTAGE_KEYS] + pr.stage_ms[WF_PSTAGE_SCAN] +
                  pr.stage_ms[WF_PSTAGE_SCATTER] + pr.stage_ms[WF_PSTAGE_PLACE];
    snprintf(metric, sizeof metric, "n%llu_grid_fraction_of_substep", (unsigned long long)n);
    add_row(c, "particles", metric, grid / pr.substep_ms, "1");
  }
  rc = 0;
done:
  if (e0) wf_event_destroy(e0);
  if (e1) wf_event_destroy(e1);
  wf_particles_destroy(ps);
  if (stream) wf_stream_destroy(stream);
  free(ms);
  return rc;
}

void wf_bench_particles_usage(FILE *f) {
  fputs("usage: weft bench particles [--device NAME] [--sizes N,N,...] [--frames N]\n"
        "                            [--model dem|hertz|xpbd|granular] [--profile]\n"
        "                            [--baseline FILE] [--csv FILE]\n"
        "                            [--machine NAME] [--quick]\n"
        "\n"
        "A column of particles (radius 0.1, spacing 0.2, jitter) falling onto a plane, 64\n"
        "substeps per frame at 60 frames/s, DEM stiffness 8000, damping 2, friction 1,\n"
        "rolling 0.01 (granular: rotation and contact history); Hertz: E 50 MPa, nu 0.25.\n"
        "Prints ms/frame, particle-substeps/s, device bytes per particle (state + granular\n"
        "state + grid, each byte named in the output's header), modelled bytes moved per\n"
        "particle-substep and the fraction of the measured memory bandwidth.\n"
        "\n"
        "options:\n"
        "  --device NAME   cpu, cpu:N, cuda, cuda:N (default: cuda:0 if usable, else cpu:0)\n"
        "  --sizes LIST    particle counts (default 65536,524288,2097152,16777216;\n"
        "                  --quick: 4096 on a CPU, 65536 on a GPU)\n"
        "  --frames N      timed frames per size (default 10; --quick 3)\n"
        "  --model M       contact model: dem (linear), hertz, xpbd, or granular (the\n"
        "                  default: dem then hertz, side by side)\n"
        "  --profile       also time each stage of the substep\n"
        "  --baseline FILE an earlier run's CSV (bench/results/<machine>.csv): after each\n"
        "                  size, the first dem_n<N>_* rows found there, i.e. the old linear\n"
        "                  model without rotation or history (nvidia-h200.csv, 2026-11-21)\n"
        "  --csv FILE      append results as machine,date,benchmark,metric,value,unit rows\n"
        "  --machine NAME  machine name for the CSV (default: hostname and device product)\n"
        "  --quick         small and short (for CI)\n"
        "  -h, --help      show this help\n",
        f);
}

/* The options of this benchmark beyond bench_parse_common's. */
static int option(void *user, const char *opt, const char *val) {
  pb_opts *o = user;
  if (!strcmp(opt, "--profile")) {
    o->profile = true;
    return BENCH_OPT_FLAG;
  }
  if (strcmp(opt, "--model") && strcmp(opt, "--sizes") && strcmp(opt, "--baseline"))
    return BENCH_OPT_UNKNOWN;
  if (!val) return BENCH_OPT_VALUE;
  if (!strcmp(opt, "--baseline")) {
    o->baseline = val;
  } else if (!strcmp(opt, "--model")) {
    if (!strcmp(val, "dem") || !strcmp(val, "linear"))
      o->model = WF_CONTACT_DEM;
    else if (!strcmp(val, "hertz"))
      o->model = WF_CONTACT_HERTZ;
    else if (!strcmp(val, "xpbd"))
      o->model = WF_CONTACT_XPBD;
    else if (!strcmp(val, "granular"))
      o->model = -1;
    else {
      fprintf(stderr, "weft bench particles: --model '%s' must be dem, hertz, xpbd or granular\n",
              val);
      return BENCH_OPT_BAD;
    }
  } else {
    o->n_sizes = 0;
    for (const char *s = val; *s;) {
      char *end;
      unsigned long long n = strtoull(s, &end, 10);
      if (end == s || n == 0 || n > (1ull << 30) || o->n_sizes == MAX_SIZES ||
          (*end && *end != ',')) {
        fprintf(stderr,
                "weft bench particles: --sizes '%s': expected up to %d counts in [1, 2^30] "
                "separated by commas\n",
                val, MAX_SIZES);
        return BENCH_OPT_BAD;
      }
      o->sizes[o->n_sizes++] = n;
      s = *end ? end + 1 : end;
    }
  }
  return BENCH_OPT_VALUE;
}

static int parse(int argc, char **argv, pb_opts *o, FILE *out) {
  bench_common c = {0};
  int rc =
      bench_parse_common("particles", argc, argv, &c, wf_bench_particles_usage, out, option, o);
  o->device = c.device, o->csv = c.csv, o->machine = c.machine;
  o->frames = c.frames, o->quick = c.quick;
  return rc;
}

int wf_bench_particles(int argc, char **argv, FILE *out) {
  static pb_ctx ctx;
  pb_ctx *c = &ctx;
  memset(c, 0, sizeof *c);
  c->out = out;
  c->o.model = -1; /* granular: linear and Hertz */
  int rc = parse(argc, argv, &c->o, out);
  if (rc >= 0) return rc;
  rc = 1;
  if (bench_start("particles", c->o.device, &c->dev)) return 1;
  bool cuda = wf_device_is_cuda(c->dev);
  if (!c->o.n_sizes) {
    static const uint64_t full[] = {65536, 524288, 2097152, 16777216};
    if (c->o.quick)
      c->o.sizes[0] = cuda ? 65536 : 4096, c->o.n_sizes = 1;
    else
      memcpy(c->o.sizes, full, sizeof full), c->o.n_sizes = 4;
  }
  if (!c->o.frames) c->o.frames = c->o.quick ? 3 : 10;
  char machine[512];
  if (c->o.machine)
    snprintf(machine, sizeof machine, "%s", c->o.machine);
  else
    bench_machine_name(c->dev, machine, sizeof machine);
  c->bandwidth_gbs = bench_device_bandwidth_gbs(c->dev, cuda ? (size_t)1 << 30 : (size_t)64 << 20);
  wf_device_info info;
  CHECK(wf_device_info_get(c->dev, &info));
  fprintf(out, "weft %s bench particles on %s (%s), %s contacts\n", WF_VERSION_STRING,
          wf_device_name(c->dev), info.product,
          c->o.model < 0 ? "DEM (linear) and Hertz" : model_name(c->o.model));
  fprintf(out, "measured memory bandwidth (on-device copy, read + write): %.0f GB/s\n\n",
          c->bandwidth_gbs);
  fprintf(
      out,
      "B/particle: the device's bytes a particle (measured) = state (position + radius 16,\n"
      "  velocity + inverse mass 16, global id 4, material 2) + granular (angular velocity 16,\n"
      "  contact history 8 slots x 32: tangential spring 12, partner id 4, rolling spring 12,\n"
      "  spare 4; allocated for every model) + grid (the rest: sorted copies of position,\n"
      "  velocity, angular velocity and material, cell key, arrival (then sorted index) and\n"
      "  arrival order,\n"
      "  cell start and count, scan storage). B/p-substp: modelled DRAM traffic a\n"
      "  particle-substep (see bench/particle_bench.c; the history's part from the contacts\n"
      "  held at the end, printed below each row); of bw: that traffic over the measured\n"
      "  bandwidth.%s\n\n",
      c->o.baseline ? " old: the linear model without rotation or history, as recorded in\n"
                      "  --baseline (its code is gone: compare on the machine it names)."
                    : "");
  fprintf(out, "%6s %12s %10s %14s %27s %10s %8s %9s\n", "model", "particles", "ms/frame",
          "p-substeps/s", "B/particle = state+gran+grid", "B/p-substp", "GB/s", "of bw");
  add_row(c, "particles", "measured_bandwidth", c->bandwidth_gbs, "GB/s");
  int models[2] = {c->o.model, c->o.model}, n_models = 1;
  if (c->o.model < 0) models[0] = WF_CONTACT_DEM, models[1] = WF_CONTACT_HERTZ, n_models = 2;
  for (int i = 0; i < c->o.n_sizes; i++) {
    for (int k = 0; k < n_models; k++)
      if (run_size(c, c->o.sizes[i], models[k])) goto done;
    if (c->o.baseline) baseline_row(c, c->o.sizes[i], c->last_rate);
  }
  if (c->o.csv && bench_csv_append(c->o.csv, machine, c->rows, c->n_rows, out)) goto done;
  rc = 0;
done:
  fflush(out);
  wf_shutdown();
  return rc;
}
