/* The `weft` command end to end: the program named by $WEFT_CLI runs on the CPU backend on the
 * bundled scenes (shrunk with --set) and on small scenes written to a temporary directory; the
 * files it writes are parsed back and checked against analytic values, exit codes and messages
 * against what `weft <command> --help` and docs/cli.md promise.
 *
 * Each test is its own ctest entry (`test_cli --device cpu <test>`), so they run in parallel and
 * fail one by one. Every test works in its own directory under one mkdtemp directory, removed at
 * the end. readonly_out skips (exit 77) when run as root, for whom permissions do not apply.
 */
#include "harness.h"

#include "cli/cli_proc.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "weft/scene.h"
#include "weft/world.h"

#ifndef WEFT_SOURCE_DIR
#error "WEFT_SOURCE_DIR must name the source tree (scenes/)"
#endif

static char tmp[512];
static const char *cli;

/* ---- helpers ----------------------------------------------------------------------------------
 */

static int is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* A directory of this test's own under tmp. */
static void test_dir(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmp, name);
  mkdir(out, 0777);
}

/* Starts `weft ARGS...` (NULL-terminated) in the test's directory, stdout and stderr into files
 * of dir (cli_proc.h); returns the child's pid or -1. */
static pid_t cli_spawn(const char *dir, const char *const *args) {
  return cli_spawn_in(cli, dir, CLI_CWD_KEEP, args);
}

#define CLI(dir, ...) cli_wait(cli_spawn(dir, (const char *const[]){__VA_ARGS__, NULL}), 90)

/* The text weft printed in its last run in dir ("stdout.txt" or "stderr.txt"); never NULL. */
static char *output_of(const char *dir, const char *which) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", dir, which);
  char *t = th_read_file(p, NULL);
  return t ? t : calloc(1, 1);
}

static int count_of(const char *text, const char *word) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
    n++;
  return n;
}

static int same_file(const char *a, const char *b) {
  size_t na, nb;
  char *ta = th_read_file(a, &na), *tb = th_read_file(b, &nb);
  int same = ta && tb && na == nb && na > 0 && memcmp(ta, tb, na) == 0;
  free(ta), free(tb);
  return same;
}

/* Names in dir that a failed atomic write would leave: "*.tmp.*". */
static int temp_files_in(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

static int entries_in(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

/* ---- a binary PLY read back -------------------------------------------------------------------
 */

typedef struct ply {
  long vertices, faces;
  int stride;          /* bytes per vertex */
  int x, y, z, radius; /* byte offsets of those float properties in a vertex, -1 if absent */
  float *pos;          /* 3 * vertices */
  float *rad;          /* vertices, when there is a radius */
} ply;

static int ply_type_size(const char *t) {
  if (!strcmp(t, "char") || !strcmp(t, "uchar") || !strcmp(t, "int8") || !strcmp(t, "uint8"))
    return 1;
  if (!strcmp(t, "short") || !strcmp(t, "ushort") || !strcmp(t, "int16") || !strcmp(t, "uint16"))
    return 2;
  if (!strcmp(t, "int") || !strcmp(t, "uint") || !strcmp(t, "float") || !strcmp(t, "int32") ||
      !strcmp(t, "uint32") || !strcmp(t, "float32"))
    return 4;
  if (!strcmp(t, "double") || !strcmp(t, "float64")) return 8;
  return 0;
}

/* Parses the header and the vertex block; checks the body's size (exactly the vertices for a
 * point cloud; at least one byte count + 3 indices per face for a mesh). 0 on any error, which
 * it reports. */
static int ply_read(const char *path, ply *p) {
  memset(p, 0, sizeof *p);
  p->x = p->y = p->z = p->radius = -1;
  size_t len;
  char *t = th_read_file(path, &len);
  if (!t) {
    TH_FAIL("%s: cannot read", path);
    return 0;
  }
  char *end = strstr(t, "end_header\n");
  if (strncmp(t, "ply\n", 4) != 0 || !end || !strstr(t, "\nformat binary_little_endian 1.0\n")) {
    TH_FAIL("%s: not a binary little-endian PLY", path);
    free(t);
    return 0;
  }
  size_t body = (size_t)(end - t) + strlen("end_header\n");
  *end = '\0';
  int in_vertex = 0;
  for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
    char a[32], b[32], c[32];
    long n;
    if (sscanf(line, "element %31s %ld", a, &n) == 2) {
      in_vertex = strcmp(a, "vertex") == 0;
      if (in_vertex) p->vertices = n;
      if (strcmp(a, "face") == 0) p->faces = n;
    } else if (in_vertex && sscanf(line, "property %31s %31s %31s", a, b, c) == 2) {
      int size = ply_type_size(a);
      if (!size) {
        TH_FAIL("%s: vertex property type '%s'", path, a);
        free(t);
        return 0;
      }
      int off = p->stride;
      if (!strcmp(a, "float")) {
        if (!strcmp(b, "x")) p->x = off;
        if (!strcmp(b, "y")) p->y = off;
        if (!strcmp(b, "z")) p->z = off;
        if (!strcmp(b, "radius")) p->radius = off;
      }
      p->stride += size;
    }
  }
  int ok = p->vertices > 0 && p->x >= 0 && p->y >= 0 && p->z >= 0;
  size_t need = body + (size_t)p->vertices * (size_t)p->stride;
  if (!ok) TH_FAIL("%s: no vertices with float x y z", path);
  if (ok && p->faces == 0 && len != need) {
    TH_FAIL("%s: %zu bytes, expected %zu (header %zu + %ld vertices x %d)", path, len, need, body,
            p->vertices, p->stride);
    ok = 0;
  }
  if (ok && p->faces > 0 && len < need + (size_t)p->faces * 13) {
    TH_FAIL("%s: %zu bytes, too short for %ld faces", path, len, p->faces);
    ok = 0;
  }
  if (ok) {
    /* the header text was cut by strtok; the body is intact */
    p->pos = malloc((size_t)p->vertices * 3 * sizeof *p->pos);
    p->rad = malloc((size_t)p->vertices * sizeof *p->rad);
    const unsigned char *v = (const unsigned char *)t + body;
    for (long i = 0; i < p->vertices && p->pos && p->rad; i++, v += p->stride) {
      memcpy(&p->pos[3 * i + 0], v + p->x, 4);
      memcpy(&p->pos[3 * i + 1], v + p->y, 4);
      memcpy(&p->pos[3 * i + 2], v + p->z, 4);
      p->rad[i] = 0.0f;
      if (p->radius >= 0) memcpy(&p->rad[i], v + p->radius, 4);
    }
    ok = p->pos && p->rad;
  }
  free(t);
  return ok;
}

static void ply_free(ply *p) { free(p->pos), free(p->rad); }

/* ---- a stats.csv read back --------------------------------------------------------------------
 */

enum { CSV_MAX_ROWS = 64, CSV_MAX_COLS = 32 };
typedef struct csv {
  int rows, cols;
  char names[CSV_MAX_COLS][32];
  double v[CSV_MAX_ROWS][CSV_MAX_COLS];
} csv;

static int csv_read(const char *path, csv *c) {
  memset(c, 0, sizeof *c);
  char *t = th_read_file(path, NULL);
  if (!t) return 0;
  char *save = NULL;
  char *line = strtok_r(t, "\n", &save);
  for (char *s = line; s && *s && c->cols < CSV_MAX_COLS;) {
    size_t n = strcspn(s, ",");
    snprintf(c->names[c->cols++], sizeof c->names[0], "%.*s", (int)n, s);
    s += n + (s[n] == ',');
  }
  while ((line = strtok_r(NULL, "\n", &save)) && c->rows < CSV_MAX_ROWS) {
    char *s = line;
    for (int k = 0; k < c->cols; k++) {
      c->v[c->rows][k] = strtod(s, &s);
      if (*s == ',') s++;
    }
    c->rows++;
  }
  free(t);
  return 1;
}

static int csv_col(const csv *c, const char *name) {
  for (int k = 0; k < c->cols; k++)
    if (strcmp(c->names[k], name) == 0) return k;
  TH_FAIL("stats.csv has no column '%s'", name);
  return 0;
}

/* ---- the bundled granular column, shrunk ------------------------------------------------------
 */

/* scenes/granular_column.json: a box emitter at (0, 0.5, 0), spacing 0.02, radius 0.01, density
 * 2500, jitter 0.001, 60 frames/s, 64 substeps, outputs every 4 frames (ply, csv). Shrunk to
 * half extents 0.06 x 0.1 x 0.06: a lattice of 6 x 10 x 6 = 360 particles whose lowest row is
 * 0.41 m above the ground, so in 12 frames (0.2 s, a fall of 0.196 m) none touches it. */
#define COLUMN_SCENE  WEFT_SOURCE_DIR "/scenes/granular_column.json"
#define COLUMN_SHRINK "particles[0].half_extents=[0.06,0.1,0.06]"
static const double column_half[3] = {0.06, 0.1, 0.06}, column_center[3] = {0, 0.5, 0};
static const double column_spacing = 0.02, column_radius = 0.01, column_density = 2500;
static const double fps = 60, g = 9.81;

static long column_count(void) {
  long n = 1;
  for (int k = 0; k < 3; k++)
    n *= lround(2.0 * column_half[k] / column_spacing);
  return n;
}

/* ---- tests ------------------------------------------------------------------------------------
 */

/* Every command `weft --help` lists (at least info, bench, validate, run, batch) and every
 * benchmark answers --help and -h with its usage on stdout and exit 0; the usage of each states
 * the exit codes. Bad usage exits 2. */
TEST(help_everywhere) {
  char dir[600];
  test_dir(dir, sizeof dir, "help");
  REQUIRE(CLI(dir, "--help") == 0);
  char *top = output_of(dir, "stdout.txt");
  CHECK(strstr(top, "usage: weft") && strstr(top, "Exit status"));
  /* the commands are the indented words after "commands:" */
  char cmds[16][32];
  int n = 0;
  const char *s = strstr(top, "commands:\n");
  for (s = s ? strchr(s, '\n') + 1 : ""; n < 16 && strncmp(s, "  ", 2) == 0;) {
    sscanf(s, "%31s", cmds[n++]);
    s = strchr(s, '\n');
    s = s ? s + 1 : "";
  }
  free(top);
  const char *must[] = {"info", "bench", "validate", "run", "batch"};
  for (int m = 0; m < 5; m++) {
    int found = 0;
    for (int i = 0; i < n; i++)
      found |= strcmp(cmds[i], must[m]) == 0;
    if (!found) TH_FAIL("'weft --help' does not list '%s'", must[m]);
  }
  for (int i = 0; i < n; i++)
    for (int h = 0; h < 2; h++) {
      const char *flag = h ? "-h" : "--help";
      int rc = CLI(dir, cmds[i], flag);
      char *out = output_of(dir, "stdout.txt");
      if (rc != 0) TH_FAIL("weft %s %s: exit %d", cmds[i], flag, rc);
      if (strncmp(out, "usage: weft ", 12) != 0)
        TH_FAIL("weft %s %s: stdout does not start with its usage", cmds[i], flag);
      if (!strstr(out, "Exit status: 0"))
        TH_FAIL("weft %s %s: the usage does not state the exit codes", cmds[i], flag);
      free(out);
    }
  const char *benches[] = {"gpu", "particles", "cloth", "scaling"};
  for (int i = 0; i < 4; i++)
    for (int h = 0; h < 2; h++) {
      const char *flag = h ? "-h" : "--help";
      int rc = CLI(dir, "bench", benches[i], flag);
      char *out = output_of(dir, "stdout.txt");
      if (rc != 0) TH_FAIL("weft bench %s %s: exit %d", benches[i], flag, rc);
      char want[64];
      snprintf(want, sizeof want, "usage: weft bench %s", benches[i]);
      if (!strstr(out, want) || !strstr(out, "Exit status: 0"))
        TH_FAIL("weft bench %s %s: no usage with exit codes: %s", benches[i], flag, out);
      free(out);
    }
  CHECK_EQ_INT(CLI(dir, "--version"), 0);
  char *ver = output_of(dir, "stdout.txt");
  CHECK(strncmp(ver, "weft ", 5) == 0);
  free(ver);
  /* bad usage: 2, with the usage on stderr */
  CHECK_EQ_INT(cli_wait(cli_spawn(dir, (const char *const[]){NULL}), 30), 2);
  CHECK_EQ_INT(CLI(dir, "no-such-command"), 2);
  CHECK_EQ_INT(CLI(dir, "batch"), 2);
  char *err = output_of(dir, "stderr.txt");
  CHECK(strstr(err, "usage: weft batch"));
  free(err);
  CHECK_EQ_INT(CLI(dir, "run", "--frames", "zero", "x.json"), 2);
  CHECK_EQ_INT(CLI(dir, "info", "--bogus"), 2);
  CHECK_EQ_INT(CLI(dir, "bench", "no-such-bench"), 2);
}

/* `weft run` on the bundled granular column: PLY files of frame 0 and every 4 frames with one
 * vertex per particle, positions finite and inside the box the particles can reach, the centroid in
 * free fall; stats.csv with a row per output frame, time = frame / fps, momentum = -M g t. */
TEST(run_outputs) {
  char dir[600], out[700], p[800];
  test_dir(dir, sizeof dir, "run");
  snprintf(out, sizeof out, "%s/out", dir);
  int rc = CLI(dir, "run", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--frames", "12", "--out", out,
               "--device", "cpu", "--quiet");
  if (rc != 0) {
    char *err = output_of(dir, "stderr.txt");
    TH_FAIL("weft run: exit %d: %s", rc, err);
    free(err);
    return;
  }
  long n = column_count();
  CHECK_EQ_INT(n, 360);
  snprintf(p, sizeof p, "%s/stats.csv", out);
  csv c;
  REQUIRE(csv_read(p, &c));
  const int every = 4, frames = 12;
  CHECK_EQ_INT(c.rows, frames / every + 1); /* frame 0 (the initial state), 4, 8, 12 */
  int cf = csv_col(&c, "frame"), ct = csv_col(&c, "time"), cp = csv_col(&c, "particles");
  int cm = csv_col(&c, "momentum_y"), cs = csv_col(&c, "max_speed");
  double m = column_density * 4.0 / 3.0 * 3.14159265358979324 * pow(column_radius, 3); /* a ball */
  double top_speed = 0;
  for (int r = 0; r < c.rows; r++) {
    double frame = every * r, t = frame / fps;
    CHECK_NEAR(c.v[r][cf], frame, 0);
    /* printed with 17 digits: exact to the last bit of a double */
    CHECK_NEAR(c.v[r][ct], t, 1e-15);
    CHECK_NEAR(c.v[r][cp], n, 0);
    /* contacts between jittered neighbours are internal: the total momentum is free fall's,
     * to float rounding of 360 velocities (relative 1e-5) */
    CHECK_NEAR(c.v[r][cm], -(double)n * m * g * t, 1e-5 * n * m * g * t);
    if (c.v[r][cs] > top_speed) top_speed = c.v[r][cs];
  }
  double t_end = frames / fps;
  for (int f = 0; f <= frames; f += every) {
    snprintf(p, sizeof p, "%s/column_%06d.ply", out, f);
    ply pf;
    if (!ply_read(p, &pf)) continue;
    CHECK_EQ_INT(pf.vertices, n);
    CHECK_EQ_INT(pf.faces, 0);
    /* no point moves farther than the top speed seen times the time, from the emitter's box
     * (plus the jitter and a radius) */
    double t = f / fps, reach = top_speed * t + 0.001 + column_radius;
    double sum[3] = {0, 0, 0};
    long outside = 0, bad = 0;
    for (long i = 0; i < pf.vertices; i++) {
      for (int k = 0; k < 3; k++) {
        double x = pf.pos[3 * i + k];
        if (!isfinite(x)) bad++;
        if (fabs(x - column_center[k]) > column_half[k] + reach) outside++;
        sum[k] += x;
      }
      if (pf.pos[3 * i + 1] < 0) outside++; /* the ground plane y = 0 */
      if (pf.radius >= 0 && pf.rad[i] != (float)column_radius) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(outside, 0);
    /* the centroid falls as a free body: y = 0.5 - g t^2 / 2; the semi-implicit integrator is
     * off by g t h / 2 (h = 1/3840 s: 2.6e-4 m at 0.2 s), float positions by 1e-6 */
    CHECK_NEAR(sum[1] / (double)n, column_center[1] - 0.5 * g * t * t, 5e-4);
    CHECK_NEAR(sum[0] / (double)n, 0.0, 1e-3);
    CHECK_NEAR(sum[2] / (double)n, 0.0, 1e-3);
    ply_free(&pf);
  }
  CHECK(top_speed > 0.9 * g * t_end && top_speed < 3 * g * t_end);
  /* the checkpoint after the last frame */
  snprintf(p, sizeof p, "%s/checkpoint_%06d.wfck", out, frames);
  CHECK(exists(p));
  CHECK_EQ_INT(temp_files_in(out), 0);
}

/* `weft validate`: syntax errors with file:line:col, schema errors with line:col and the key
 * path, unknown keys with a did-you-mean; exit 2, and 0 on every bundled scene. */
TEST(validate_errors) {
  char dir[600], syntax[700], schema[700], unknown[700];
  test_dir(dir, sizeof dir, "validate");
  snprintf(syntax, sizeof syntax, "%s/syntax.json", dir);
  snprintf(schema, sizeof schema, "%s/schema.json", dir);
  snprintf(unknown, sizeof unknown, "%s/unknown.json", dir);
  REQUIRE(th_write_file(syntax, "{\n  \"simulation\": {\"fps\": 60,}\n}\n"));
  REQUIRE(th_write_file(schema, "{\n  \"simulation\": {\n    \"substeps\": -3\n  }\n}\n"));
  REQUIRE(th_write_file(unknown, "{\"simulation\": {\"fsp\": 60}}\n"));
  CHECK_EQ_INT(CLI(dir, "validate", syntax), 2);
  char *err = output_of(dir, "stderr.txt");
  char want[800];
  snprintf(want, sizeof want, "%s:2:", syntax);
  if (!strstr(err, want)) TH_FAIL("no '%s' in: %s", want, err);
  free(err);
  CHECK_EQ_INT(CLI(dir, "validate", schema), 2);
  err = output_of(dir, "stderr.txt");
  snprintf(want, sizeof want, "%s:3:5: simulation.substeps", schema);
  if (!strstr(err, want)) TH_FAIL("no '%s' in: %s", want, err);
  free(err);
  CHECK_EQ_INT(CLI(dir, "validate", unknown), 2);
  err = output_of(dir, "stderr.txt");
  if (!strstr(err, "simulation.fsp") || !strstr(err, "did you mean 'fps'"))
    TH_FAIL("no key path with a did-you-mean in: %s", err);
  free(err);
  const char *scenes[] = {"cloth_drape", "cloth_on_particles", "flag", "granular_column",
                          "showcase"};
  for (int i = 0; i < 5; i++) {
    char path[700];
    snprintf(path, sizeof path, "%s/scenes/%s.json", WEFT_SOURCE_DIR, scenes[i]);
    int rc = CLI(dir, "validate", path);
    if (rc != 0) TH_FAIL("weft validate %s: exit %d", path, rc);
  }
  /* a bad --set is the same error, through run: exit 2, nothing written */
  char out[700];
  snprintf(out, sizeof out, "%s/never", dir);
  CHECK_EQ_INT(CLI(dir, "run", COLUMN_SCENE, "--set", "particles[0].radius=-1", "--out", out,
                   "--device", "cpu", "--quiet"),
               2);
  err = output_of(dir, "stderr.txt");
  if (!strstr(err, "particles[0].radius")) TH_FAIL("no key path in: %s", err);
  free(err);
  CHECK(!exists(out));
}

/* `weft validate` on a mass-spring cloth past its explicit step's stability limit (cotton's
 * stretch modulus, 3000 N/m, on a 1 m grid of 32 x 32 vertices at 4 substeps of a 60 fps frame:
 * the limit is ~40 times shorter than the step): the scene stays valid (exit 0, "ok"), and stderr
 * holds one warning naming the file, the cloth and the substeps it needs, the number
 * wf_scene_cloth_stability computes. With that many substeps, or on XPBD, there is no warning. */
TEST(validate_stability_warning) {
  char dir[600], path[700];
  test_dir(dir, sizeof dir, "validate_stability");
  snprintf(path, sizeof path, "%s/stiff.json", dir);
  const char *scene_fmt = "{\"simulation\": {\"substeps\": %d},\n"
                          " \"cloths\": [{\"name\": \"stiff_sheet\", \"integrator\": \"%s\",\n"
                          "  \"grid\": {\"size\": [1, 1], \"resolution\": [32, 32]},\n"
                          "  \"material\": {\"preset\": \"cotton\"}}]}\n";
  char text[600];
  snprintf(text, sizeof text, scene_fmt, 4, "spring");
  REQUIRE(th_write_file(path, text));
  wf_scene *sc = NULL;
  REQUIRE(wf_scene_load(path, NULL, &sc) == WF_OK);
  wf_cloth_stability s;
  char msg[512];
  CHECK_OK(wf_scene_cloth_stability(sc, 0, &s, msg, sizeof msg));
  wf_scene_destroy(sc);
  REQUIRE(!s.stable && s.substeps_needed > 4);
  CHECK_EQ_INT(CLI(dir, "validate", path), 0);
  char *out = output_of(dir, "stdout.txt"), *err = output_of(dir, "stderr.txt");
  char want[800];
  snprintf(want, sizeof want, "%s: ok", path);
  if (!strstr(out, want)) TH_FAIL("no '%s' in stdout: %s", want, out);
  snprintf(want, sizeof want, "weft validate: %s: warning: cloth 'stiff_sheet'", path);
  if (!strstr(err, want)) TH_FAIL("no '%s' in stderr: %s", want, err);
  snprintf(want, sizeof want, "use at least %d substeps per frame (simulation.substeps, now 4)",
           s.substeps_needed);
  if (!strstr(err, want)) TH_FAIL("no '%s' in stderr: %s", want, err);
  CHECK_EQ_INT(count_of(err, "warning"), 1);
  printf("  warning: %s", err);
  free(out), free(err);
  /* the substeps it asked for are enough; XPBD has no such limit */
  const struct {
    int substeps;
    const char *integrator;
  } quiet[] = {{s.substeps_needed, "spring"}, {4, "xpbd"}};
  for (int i = 0; i < 2; i++) {
    snprintf(text, sizeof text, scene_fmt, quiet[i].substeps, quiet[i].integrator);
    REQUIRE(th_write_file(path, text));
    CHECK_EQ_INT(CLI(dir, "validate", path), 0);
    err = output_of(dir, "stderr.txt");
    if (strstr(err, "warning"))
      TH_FAIL("%s at %d substeps: unexpected warning: %s", quiet[i].integrator, quiet[i].substeps,
              err);
    free(err);
  }
}

/* 6 frames with a checkpoint at 3, against 3 frames resumed from that checkpoint: the last PLY
 * and checkpoint are the same bytes. */
TEST(resume_equal) {
  char dir[600], full[700], part[700], ck[800], a[800], b[800];
  test_dir(dir, sizeof dir, "resume");
  snprintf(full, sizeof full, "%s/full", dir);
  snprintf(part, sizeof part, "%s/resumed", dir);
  const char *common_every = "outputs.every=3", *common_ck = "outputs.checkpoint_every=3";
  int rc = CLI(dir, "run", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--set", common_every, "--set",
               common_ck, "--frames", "6", "--out", full, "--device", "cpu", "--quiet");
  REQUIRE(rc == 0);
  snprintf(ck, sizeof ck, "%s/checkpoint_000003.wfck", full);
  REQUIRE(exists(ck));
  rc = CLI(dir, "run", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--set", common_every, "--set",
           common_ck, "--frames", "6", "--out", part, "--device", "cpu", "--quiet", "--resume", ck);
  if (rc != 0) {
    char *err = output_of(dir, "stderr.txt");
    TH_FAIL("resume: exit %d: %s", rc, err);
    free(err);
    return;
  }
  /* the resumed run wrote only frames 4..6 */
  snprintf(b, sizeof b, "%s/column_000003.ply", part);
  CHECK(!exists(b));
  const char *files[] = {"column_000006.ply", "checkpoint_000006.wfck"};
  for (int i = 0; i < 2; i++) {
    snprintf(a, sizeof a, "%s/%s", full, files[i]);
    snprintf(b, sizeof b, "%s/%s", part, files[i]);
    if (!same_file(a, b)) TH_FAIL("%s differs between the full and the resumed run", files[i]);
  }
  /* not vacuous: the particles moved between frames 3 and 6 */
  snprintf(a, sizeof a, "%s/column_000003.ply", full);
  snprintf(b, sizeof b, "%s/column_000006.ply", full);
  CHECK(!same_file(a, b));
}

/* WEFT_CPU_THREADS: a scene with particles, cloth and their coupling gives the same bits on one
 * thread and on three (the kernels that run in pieces have independent elements), in every file
 * it writes; stats.csv differs only in its timing column. So does a cloth on the one-launch
 * frame, whose substeps split over the threads stage by stage. */
TEST(cpu_threads_bitwise) {
  char dir[600], out[2][700], a[1000], b[1000];
  test_dir(dir, sizeof dir, "threads");
  const char *threads[2] = {"1", "3"};
  for (int t = 0; t < 2; t++) {
    snprintf(out[t], sizeof out[t], "%s/t%s", dir, threads[t]);
    setenv("WEFT_CPU_THREADS", threads[t], 1);
    int rc = CLI(dir, "run", WEFT_SOURCE_DIR "/scenes/cloth_on_particles.json", "--set",
                 "outputs.every=2", "--set", "outputs.checkpoint_every=2", "--frames", "2", "--out",
                 out[t], "--device", "cpu", "--quiet");
    unsetenv("WEFT_CPU_THREADS");
    REQUIRE(rc == 0);
  }
  const char *files[] = {"bed_000002.vtp", "blanket_000002.vtp", "checkpoint_000002.wfck"};
  for (int i = 0; i < 3; i++) {
    snprintf(a, sizeof a, "%s/%s", out[0], files[i]);
    snprintf(b, sizeof b, "%s/%s", out[1], files[i]);
    REQUIRE(exists(a));
    if (!same_file(a, b)) TH_FAIL("%s differs between 1 and 3 CPU threads", files[i]);
  }
  static csv c[2];
  for (int t = 0; t < 2; t++) {
    snprintf(a, sizeof a, "%s/stats.csv", out[t]);
    REQUIRE(csv_read(a, &c[t]));
  }
  int timing = csv_col(&c[0], "ms_per_frame"), kin = csv_col(&c[0], "kinetic_energy");
  REQUIRE(timing >= 0 && kin >= 0 && c[0].cols == c[1].cols && c[0].rows == c[1].rows);
  for (int r = 0; r < c[0].rows; r++)
    for (int k = 0; k < c[0].cols; k++)
      if (k != timing && c[0].v[r][k] != c[1].v[r][k])
        TH_FAIL("stats.csv row %d column %d differs between 1 and 3 CPU threads", r, k);
  CHECK(c[0].v[c[0].rows - 1][kin] > 0.0); /* not vacuous: things move */
  /* the mass-spring one-launch frame (flag.json: one uncoupled grid cloth) splits its substeps
     over the threads: the same bits */
  for (int t = 0; t < 2; t++) {
    snprintf(out[t], sizeof out[t], "%s/flag_t%s", dir, threads[t]);
    setenv("WEFT_CPU_THREADS", threads[t], 1);
    int rc = CLI(dir, "run", WEFT_SOURCE_DIR "/scenes/flag.json", "--set", "outputs.every=2",
                 "--frames", "2", "--out", out[t], "--device", "cpu", "--quiet");
    unsetenv("WEFT_CPU_THREADS");
    REQUIRE(rc == 0);
  }
  snprintf(a, sizeof a, "%s/flag_000002.vtp", out[0]);
  snprintf(b, sizeof b, "%s/flag_000002.vtp", out[1]);
  REQUIRE(exists(a));
  if (!same_file(a, b)) TH_FAIL("flag_000002.vtp differs between 1 and 3 CPU threads");
  /* a malformed value is refused by name */
  setenv("WEFT_CPU_THREADS", "two", 1);
  int rc = CLI(dir, "run", WEFT_SOURCE_DIR "/scenes/cloth_on_particles.json", "--frames", "1",
               "--out", out[0], "--device", "cpu", "--quiet");
  unsetenv("WEFT_CPU_THREADS");
  CHECK(rc == 2);
  char *err = output_of(dir, "stderr.txt");
  CHECK(strstr(err, "WEFT_CPU_THREADS") != NULL);
  free(err);
}

/* Output paths that cannot be written: a clear error naming the path, exit 1 (a runtime
 * failure), nothing run and no half-written file under a final name. */
TEST(unwritable_out) {
  char dir[600], file[700], out[800], p[900];
  test_dir(dir, sizeof dir, "unwritable");
  snprintf(file, sizeof file, "%s/plain_file", dir);
  REQUIRE(th_write_file(file, "not a directory\n"));
  snprintf(out, sizeof out, "%s/sub/out", file);
  CHECK_EQ_INT(CLI(dir, "run", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--frames", "2", "--out", out,
                   "--device", "cpu", "--quiet"),
               1);
  char *err = output_of(dir, "stderr.txt");
  if (!strstr(err, file) || !strstr(err, "Not a directory")) TH_FAIL("stderr: %s", err);
  free(err);
  CHECK_EQ_INT(CLI(dir, "batch", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--frames", "2", "--out",
                   out, "--device", "cpu", "--quiet"),
               1);
  err = output_of(dir, "stderr.txt");
  if (!strstr(err, file) || !strstr(err, "Not a directory")) TH_FAIL("stderr: %s", err);
  free(err);
  struct stat sb;
  CHECK(stat(file, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 16);

  /* a writable directory whose frame-4 PLY name is taken by a directory: the write of that
   * file fails, the run stops with exit 1 naming it, and no temporary file is left */
  snprintf(out, sizeof out, "%s/blocked", dir);
  mkdir(out, 0777);
  snprintf(p, sizeof p, "%s/column_000004.ply", out);
  REQUIRE(mkdir(p, 0777) == 0);
  snprintf(p, sizeof p, "%s/column_000004.ply/keep", out);
  REQUIRE(th_write_file(p, "x"));
  CHECK_EQ_INT(CLI(dir, "run", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--frames", "8", "--out", out,
                   "--device", "cpu", "--quiet"),
               1);
  err = output_of(dir, "stderr.txt");
  if (!strstr(err, "column_000004.ply")) TH_FAIL("stderr does not name the file: %s", err);
  free(err);
  snprintf(p, sizeof p, "%s/column_000004.ply", out);
  CHECK(is_dir(p));
  CHECK_EQ_INT(temp_files_in(out), 0);
  snprintf(p, sizeof p, "%s/column_000008.ply", out);
  CHECK(!exists(p)); /* it stopped at the failure */
}

/* A read-only output directory (not for root, who may write anyway). */
TEST(readonly_out) {
  if (geteuid() == 0) SKIP("running as root: permission checks do not apply");
  char dir[600], out[700], sub[800];
  test_dir(dir, sizeof dir, "readonly");
  snprintf(out, sizeof out, "%s/ro", dir);
  REQUIRE(mkdir(out, 0555) == 0 || chmod(out, 0555) == 0);
  CHECK_EQ_INT(CLI(dir, "run", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--frames", "2", "--out", out,
                   "--device", "cpu", "--quiet"),
               1);
  char *err = output_of(dir, "stderr.txt");
  if (!strstr(err, out) || !strstr(err, "not writable")) TH_FAIL("stderr: %s", err);
  free(err);
  CHECK_EQ_INT(entries_in(out), 0);
  /* a directory to be made inside it */
  snprintf(sub, sizeof sub, "%s/sub", out);
  CHECK_EQ_INT(CLI(dir, "batch", COLUMN_SCENE, "--set", COLUMN_SHRINK, "--frames", "2", "--out",
                   sub, "--device", "cpu", "--quiet"),
               1);
  err = output_of(dir, "stderr.txt");
  if (!strstr(err, sub) || !strstr(err, "Permission denied")) TH_FAIL("stderr: %s", err);
  free(err);
  CHECK_EQ_INT(entries_in(out), 0);
  chmod(out, 0755);
}

/* Two scenes x a 3-value sweep of simulation.max_speed (the watchdog): the falling scene goes
 * faster than 0.5 m/s after frame 4 (9.81 * 4/60 = 0.65 m/s), so exactly that job fails at run
 * time; the others succeed with their outputs. */
static const char drop_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 6},\n"
    " \"particles\": [{\"name\": \"grains\", \"center\": [0, 5, 0], \"half_extents\": [0.1, 0.1, "
    "0.1],\n"
    "   \"radius\": 0.05, \"spacing\": 0.1}],\n"
    " \"outputs\": {\"every\": 1, \"formats\": [\"ply\", \"csv\"]}}\n";
/* a cloth at rest in zero gravity: it stays there (its springs' forces are rounding errors; 0.1 kg
 * a vertex keeps the step stable, which the default 0.2 kg/m2 over 16 vertices would not be) */
static const char still_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 6, \"gravity\": [0, 0, 0]},\n"
    " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.4, 0.4], \"resolution\": [4, "
    "4]},\n"
    "   \"center\": [0, 1, 0], \"integrator\": \"spring\", \"material\": {\"mass\": 0.1}}],\n"
    " \"outputs\": {\"every\": 1, \"formats\": [\"ply\", \"csv\"]}}\n";

static cJSON *read_json(const char *path) {
  char *t = th_read_file(path, NULL);
  cJSON *j = t ? cJSON_Parse(t) : NULL;
  free(t);
  return j;
}

static double json_num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *json_str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

TEST(batch_failing_job) {
  char dir[600], drop[700], still[700], out[700], p[1200];
  test_dir(dir, sizeof dir, "batch");
  snprintf(drop, sizeof drop, "%s/drop.json", dir);
  snprintf(still, sizeof still, "%s/still.json", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  REQUIRE(th_write_file(drop, drop_scene) && th_write_file(still, still_scene));
  int rc = CLI(dir, "batch", drop, still, "--sweep", "simulation.max_speed=0.5:50.5:3", "--jobs",
               "2", "--out", out, "--device", "cpu");
  CHECK_EQ_INT(rc, 1);
  char *table = output_of(dir, "stdout.txt");
  CHECK(count_of(table, " ok ") == 5 && count_of(table, " failed ") == 1);
  free(table);
  snprintf(p, sizeof p, "%s/summary.json", out);
  cJSON *sum = read_json(p);
  REQUIRE(sum);
  const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(sum, "jobs");
  CHECK_EQ_INT(cJSON_GetArraySize(jobs), 6);
  const cJSON *counts = cJSON_GetObjectItemCaseSensitive(sum, "counts");
  CHECK_EQ_INT(json_num(counts, "ok"), 5);
  CHECK_EQ_INT(json_num(counts, "failed"), 1);
  const double speeds[3] = {0.5, 25.5, 50.5};
  int idx = 0;
  for (const cJSON *j = jobs ? jobs->child : NULL; j; j = j->next, idx++) {
    const char *scene = json_str(j, "scene"), *status = json_str(j, "status");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "parameters");
    const cJSON *speed = cJSON_GetObjectItemCaseSensitive(params, "simulation.max_speed");
    bool is_drop = strcmp(scene, drop) == 0;
    /* scene-major order, the sweep's values from a to b */
    CHECK(is_drop == (idx < 3));
    CHECK(cJSON_IsNumber(speed) && speed->valuedouble == speeds[idx % 3]);
    CHECK(strcmp(json_str(j, "device"), "cpu:0") == 0);
    CHECK_EQ_INT(json_num(j, "frames"), 6);
    const char *jdir = json_str(j, "dir");
    char log[1100];
    snprintf(log, sizeof log, "%s/log.txt", jdir);
    CHECK(exists(log));
    if (is_drop && idx == 0) {
      if (strcmp(status, "failed") != 0) TH_FAIL("job 1: status '%s', expected failed", status);
      CHECK_EQ_INT(json_num(j, "exit_code"), 1);
      if (!strstr(json_str(j, "message"), "max_speed"))
        TH_FAIL("job 1: message '%s' does not give the cause", json_str(j, "message"));
      char *l = th_read_file(log, NULL);
      CHECK(l && strstr(l, "max_speed"));
      free(l);
      continue;
    }
    if (strcmp(status, "ok") != 0) TH_FAIL("job %d: status '%s', expected ok", idx + 1, status);
    CHECK_EQ_INT(json_num(j, "exit_code"), 0);
    const cJSON *fps_j = cJSON_GetObjectItemCaseSensitive(j, "frames_per_s");
    const cJSON *wall = cJSON_GetObjectItemCaseSensitive(j, "wall_s");
    CHECK(cJSON_IsNumber(fps_j) && cJSON_IsNumber(wall) && wall->valuedouble > 0);
    if (cJSON_IsNumber(fps_j) && cJSON_IsNumber(wall))
      CHECK_NEAR(fps_j->valuedouble * wall->valuedouble, 6, 1e-6);
    /* the job's own outputs: its directory under OUT, 6 frames of the right object */
    CHECK(strncmp(jdir, out, strlen(out)) == 0);
    snprintf(p, sizeof p, "%s/%s_000006.ply", jdir, is_drop ? "grains" : "sheet");
    ply pf;
    if (ply_read(p, &pf)) {
      CHECK_EQ_INT(pf.vertices, is_drop ? 8 : 16);
      ply_free(&pf);
    }
    snprintf(p, sizeof p, "%s/stats.csv", jdir);
    csv c;
    CHECK(csv_read(p, &c) && c.rows == 7); /* frames 0..6 */
  }
  cJSON_Delete(sum);
  snprintf(p, sizeof p, "%s/summary.csv", out);
  char *csvt = th_read_file(p, NULL);
  CHECK(csvt && count_of(csvt, "\n") == 7 && count_of(csvt, ",failed,") == 1);
  free(csvt);
  CHECK_EQ_INT(temp_files_in(out), 0);
}

/* Bad sweeps are rejected before anything runs: exit 2, the key path in the message, no output
 * directory made. */
TEST(batch_rejects_bad_input) {
  char dir[600], drop[700], out[700];
  test_dir(dir, sizeof dir, "batch_bad");
  snprintf(drop, sizeof drop, "%s/drop.json", dir);
  snprintf(out, sizeof out, "%s/out", dir);
  REQUIRE(th_write_file(drop, drop_scene));
  /* a value out of range, only in the second of the sweep's values */
  CHECK_EQ_INT(CLI(dir, "batch", drop, "--sweep", "simulation.max_speed=0.5,-1", "--out", out,
                   "--device", "cpu"),
               2);
  char *err = output_of(dir, "stderr.txt");
  if (!strstr(err, "simulation.max_speed") || !strstr(err, "-1")) TH_FAIL("stderr: %s", err);
  free(err);
  CHECK(!exists(out));
  /* a misspelt key */
  CHECK_EQ_INT(CLI(dir, "batch", drop, "--sweep", "simulation.max_sped=1,2", "--out", out), 2);
  err = output_of(dir, "stderr.txt");
  if (!strstr(err, "did you mean 'max_speed'")) TH_FAIL("stderr: %s", err);
  free(err);
  /* malformed sweeps, an unknown device, a missing scene */
  CHECK_EQ_INT(CLI(dir, "batch", drop, "--sweep", "simulation.fps=1:2:0", "--out", out), 2);
  CHECK_EQ_INT(CLI(dir, "batch", drop, "--sweep", "simulation.fps", "--out", out), 2);
  CHECK_EQ_INT(CLI(dir, "batch", drop, "--device", "cpu:7", "--out", out), 2);
  CHECK_EQ_INT(CLI(dir, "batch", drop, "missing.json", "--out", out), 2);
  err = output_of(dir, "stderr.txt");
  CHECK(strstr(err, "missing.json"));
  free(err);
  CHECK(!exists(out));
}

/* SIGINT to a batch: passed on to the running job, which stops; the next job never starts; the
 * summary lists both, and the batch exits 1. */
TEST(batch_interrupt) {
  char dir[600], out[700], log[800], p[800];
  test_dir(dir, sizeof dir, "batch_int");
  snprintf(out, sizeof out, "%s/out", dir);
  pid_t pid = cli_spawn(dir, (const char *const[]){"batch", COLUMN_SCENE, COLUMN_SCENE, "--set",
                                                   COLUMN_SHRINK, "--frames", "1000000", "--out",
                                                   out, "--device", "cpu", NULL});
  REQUIRE(pid > 0);
  snprintf(log, sizeof log, "%s/granular_column/log.txt", out);
  for (int i = 0; i < 2000 && !exists(log); i++)
    th_sleep_ms(10);
  if (!exists(log)) {
    kill(pid, SIGKILL);
    cli_wait(pid, 10);
    TH_FAIL("the first job did not start in 20 s");
    return;
  }
  th_sleep_ms(300);
  kill(pid, SIGINT);
  int rc = cli_wait(pid, 60);
  CHECK_EQ_INT(rc, 1);
  snprintf(p, sizeof p, "%s/summary.json", out);
  cJSON *sum = read_json(p);
  REQUIRE(sum);
  const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(sum, "jobs");
  REQUIRE(cJSON_GetArraySize(jobs) == 2);
  CHECK(strcmp(json_str(sum, "interrupted_by"), "SIGINT") == 0);
  CHECK(strcmp(json_str(cJSON_GetArrayItem(jobs, 0), "status"), "interrupted") == 0);
  CHECK(strcmp(json_str(cJSON_GetArrayItem(jobs, 1), "status"), "not started") == 0);
  /* the same scene twice: two directories */
  CHECK(strcmp(json_str(cJSON_GetArrayItem(jobs, 1), "name"), "granular_column-2") == 0);
  cJSON_Delete(sum);
  snprintf(p, sizeof p, "%s/granular_column-2", out);
  CHECK(!exists(p));
  snprintf(p, sizeof p, "%s/summary.csv", out);
  CHECK(exists(p));
}

/* `weft bench scaling --device cpu --quick` (the split particle solver on cpu:0..3): exit 0; a
 * strong row (8192 particles) and a weak row (4096 per device) for 1, 2 and 4 devices; each row's
 * speed-up and efficiency recomputed from the printed ms/frame (tolerance 0.002: both are printed
 * to three decimals and the times to 1 us of >= 1 ms); no halo traffic on one device, some on
 * more, more with four slabs than with two (three boundaries instead of one); the line saying the
 * hidden halo fraction is not measured; CSV rows under the documented names whose ms/frame is
 * the printed one (to the 6 significant digits of the CSV). Bad device counts are usage errors. */
TEST(bench_scaling) {
  char dir[600], csv_path[700];
  test_dir(dir, sizeof dir, "bench_scaling");
  snprintf(csv_path, sizeof csv_path, "%s/scaling.csv", dir);
  int rc = cli_wait(
      cli_spawn(dir, (const char *const[]){"bench", "scaling", "--device", "cpu", "--quick",
                                           "--csv", csv_path, "--machine", "ci", NULL}),
      600);
  if (rc != 0) {
    char *err = output_of(dir, "stderr.txt");
    TH_FAIL("weft bench scaling: exit %d: %s", rc, err);
    free(err);
    return;
  }
  char *out = output_of(dir, "stdout.txt");
  static const char *const modes[2] = {"strong", "weak"};
  double ms[2][5] = {{0}}, halo[2][5] = {{0}};
  for (int m = 0; m < 2; m++)
    for (int k = 1; k <= 4; k *= 2) {
      char head[32];
      snprintf(head, sizeof head, "\n%s ", modes[m]);
      const char *row = NULL;
      for (const char *p = strstr(out, head); p && !row; p = strstr(p + 1, head)) {
        int dk = 0;
        if (sscanf(p + strlen(head), "%d", &dk) == 1 && dk == k) row = p + 1;
      }
      if (!row) {
        TH_FAIL("no %s row for %d devices in:\n%s", modes[m], k, out);
        continue;
      }
      char mode[16], speedup[16], peer[8], ov_ms[16], no_halo[16], compute[16], halo_ms[16],
          hidden[16];
      int devices = 0;
      unsigned long long n = 0, reruns = 0;
      double t = 0, eff = 0, rate = 0, mb = 0, repart = 0, capture = 0;
      int got =
          sscanf(row, "%15s %d %llu %lf %15s %lf %lf %lf %lf %lf %llu %15s %15s %15s %15s %15s %7s",
                 mode, &devices, &n, &t, speedup, &eff, &rate, &mb, &repart, &capture, &reruns,
                 ov_ms, no_halo, compute, halo_ms, hidden, peer);
      if (got != 17) {
        TH_FAIL("%s row for %d devices: %d fields read: %.160s", modes[m], k, got, row);
        continue;
      }
      CHECK_EQ_INT(n, m == 0 ? 8192 : 4096 * k);
      CHECK(t > 0 && isfinite(t));
      /* printed to 4 digits, from a time printed to 0.001 ms */
      CHECK_NEAR(rate, (double)n * 64 / (t * 1e-3), (6e-4 + 6e-4 / t) * rate);
      CHECK(repart >= 0);
      CHECK(capture >= 0 && capture < t);
      ms[m][k] = t, halo[m][k] = mb;
      double ratio = ms[m][1] / t;
      if (m == 0) {
        CHECK_NEAR(atof(speedup), ratio, 0.002);
        CHECK_NEAR(eff, ratio / k, 0.002);
      } else {
        CHECK(strcmp(speedup, "-") == 0);
        CHECK_NEAR(eff, ratio, 0.002);
      }
      if (k == 1) {
        CHECK(mb == 0);
        CHECK(strcmp(peer, "-") == 0);
        CHECK(!strcmp(ov_ms, "-") && !strcmp(no_halo, "-") && !strcmp(compute, "-") &&
              !strcmp(halo_ms, "-"));
        CHECK(strcmp(hidden, "-") == 0);
      } else {
        CHECK(mb > 0);
        CHECK(strcmp(peer, "yes") == 0); /* CPU devices share the host's memory */
        /* the overlap measure: a frame without copies, the compute, the copies alone, a
         * fraction of the copies hidden behind the compute */
        double om = atof(ov_ms), nh = atof(no_halo), cm = atof(compute), hm = atof(halo_ms),
               hf = atof(hidden);
        CHECK(om > 0 && isfinite(om));
        CHECK(nh > 0 && isfinite(nh));
        CHECK(cm > 0 && isfinite(cm));
        CHECK(hm > 0 && isfinite(hm));
        CHECK(hf >= 0 && hf <= 1);
        /* the printed figures round to 3 decimals */
        double want = hm > 0 ? 1.0 - (om - cm) / hm : 1.0;
        want = want < 0 ? 0 : want > 1 ? 1 : want;
        if (hm > 0.05) CHECK_NEAR(hf, want, 0.01 + 0.002 / hm);
      }
    }
  CHECK(halo[0][4] > halo[0][2]);
  CHECK(halo[1][4] > halo[1][2]);
  CHECK(strstr(out, "hidden = 1 - (ov ms - compute ms) / halo ms"));
  CHECK(strstr(out, "slabs balanced by compute time (WF_BALANCE_TIME, imbalance 0.03"));
  free(out);
  char *rows = th_read_file(csv_path, NULL);
  REQUIRE(rows);
  CHECK(strncmp(rows, "machine,date,benchmark,metric,value,unit\n", 41) == 0);
  for (int m = 0; m < 2; m++)
    for (int k = 1; k <= 4; k *= 2) {
      char key[96];
      snprintf(key, sizeof key, ",scaling_%s_p%d_gpus%d,ms_per_frame,", modes[m],
               m == 0 ? 8192 : 4096 * k, k);
      const char *p = strstr(rows, key);
      if (!p) {
        TH_FAIL("no '%s' row in %s", key, csv_path);
        continue;
      }
      CHECK_NEAR(atof(p + strlen(key)), ms[m][k], 1e-5 * ms[m][k] + 1e-3);
    }
  CHECK(strstr(rows, ",scaling_strong_p8192_gpus4,speedup,"));
  CHECK(strstr(rows, ",scaling_weak_p16384_gpus4,efficiency,"));
  CHECK(strstr(rows, ",scaling_strong_p8192_gpus2,halo_bytes_per_frame,"));
  CHECK(strstr(rows, ",scaling_weak_p8192_gpus2,repartition_ms_per_frame,"));
  CHECK(strstr(rows, ",scaling_strong_p8192_gpus4,halo_hidden_fraction,"));
  CHECK(strstr(rows, ",scaling_weak_p16384_gpus4,compute_ms_per_frame,"));
  CHECK(!strstr(rows, ",scaling_strong_p8192_gpus1,halo_hidden_fraction,"));
  free(rows);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--gpus", "0"), 2);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--gpus", "1,17"), 2);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--device", "cuda:1"), 2);
}

/* `weft bench scaling --device cpu --quick --only cloth` (the split cloth on cpu:0..3): exit 0;
 * no particle table; a strong row (48x48) and a weak row (24x24 per device: 24x24, 48x24, 48x48)
 * for 1, 2 and 4 devices; speed-up, efficiency and vertex-substeps/s recomputed from the printed
 * ms/frame (tolerances as for the particles); no halo on one device ("-" for the hidden
 * fraction), some on more and more on four than on two, with a hidden fraction in [0, 1]; CSV
 * rows under the documented names. Bad --only and --cloth values are usage errors. */
TEST(bench_scaling_cloth) {
  char dir[600], csv_path[700];
  test_dir(dir, sizeof dir, "bench_scaling_cloth");
  snprintf(csv_path, sizeof csv_path, "%s/scaling.csv", dir);
  int rc = cli_wait(cli_spawn(dir, (const char *const[]){"bench", "scaling", "--device", "cpu",
                                                         "--quick", "--only", "cloth", "--csv",
                                                         csv_path, "--machine", "ci", NULL}),
                    600);
  if (rc != 0) {
    char *err = output_of(dir, "stderr.txt");
    TH_FAIL("weft bench scaling --only cloth: exit %d: %s", rc, err);
    free(err);
    return;
  }
  char *out = output_of(dir, "stdout.txt");
  REQUIRE(out);
  CHECK(!strstr(out, "column, DEM"));
  static const char *const modes[2] = {"strong", "weak"};
  static const char *const grids[2][5] = {{"", "48x48", "48x48", "", "48x48"},
                                          {"", "24x24", "48x24", "", "48x48"}};
  double ms[2][5] = {{0}}, halo[2][5] = {{0}};
  for (int m = 0; m < 2; m++)
    for (int k = 1; k <= 4; k *= 2) {
      char head[32];
      snprintf(head, sizeof head, "\ncloth %s ", modes[m]);
      const char *row = NULL;
      for (const char *p = strstr(out, head); p && !row; p = strstr(p + 1, head)) {
        int dk = 0;
        if (sscanf(p + strlen(head), "%d", &dk) == 1 && dk == k) row = p + 1;
      }
      if (!row) {
        TH_FAIL("no cloth %s row for %d devices in:\n%s", modes[m], k, out);
        continue;
      }
      char solver[16], mode[16], grid[32], speedup[16], hidden[16], peer[8], ov[4][16];
      int devices = 0;
      double t = 0, eff = 0, rate = 0, mb = 0;
      int got = sscanf(row, "%15s %15s %d %31s %lf %15s %lf %lf %lf %15s %15s %15s %15s %15s %7s",
                       solver, mode, &devices, grid, &t, speedup, &eff, &rate, &mb, ov[0], ov[1],
                       ov[2], ov[3], hidden, peer);
      if (got != 15) {
        TH_FAIL("cloth %s row for %d devices: %d fields read: %.160s", modes[m], k, got, row);
        continue;
      }
      CHECK(strcmp(grid, grids[m][k]) == 0);
      int nu = 0, nr = 0;
      CHECK(sscanf(grid, "%dx%d", &nu, &nr) == 2);
      CHECK(t > 0 && isfinite(t));
      /* printed to 4 digits, from a time printed to 0.001 ms (a small cloth takes < 1 ms) */
      CHECK_NEAR(rate, (double)nu * nr * 16 / (t * 1e-3), (6e-4 + 6e-4 / t) * rate);
      ms[m][k] = t, halo[m][k] = mb;
      double ratio = ms[m][1] / t;
      if (m == 0) {
        CHECK_NEAR(atof(speedup), ratio, 0.002);
        CHECK_NEAR(eff, ratio / k, 0.002);
      } else {
        CHECK(strcmp(speedup, "-") == 0);
        CHECK_NEAR(eff, ratio, 0.002);
      }
      if (k == 1) {
        CHECK(mb == 0);
        for (int i = 0; i < 4; i++)
          CHECK(strcmp(ov[i], "-") == 0);
        CHECK(strcmp(hidden, "-") == 0 && strcmp(peer, "-") == 0);
      } else {
        /* ov ms, no-halo ms, compute ms, halo ms: times; the fraction from them (printed to 3
         * decimals) */
        double om = atof(ov[0]), cm = atof(ov[2]), hm = atof(ov[3]), h = atof(hidden);
        for (int i = 0; i < 4; i++)
          CHECK(atof(ov[i]) > 0 && isfinite(atof(ov[i])));
        CHECK(mb > 0);
        CHECK(h >= 0.0 && h <= 1.0);
        double want = 1.0 - (om - cm) / hm;
        want = want < 0 ? 0 : want > 1 ? 1 : want;
        if (hm > 0.05) CHECK_NEAR(h, want, 0.01 + 0.002 / hm);
        CHECK(strcmp(peer, "yes") == 0);
      }
    }
  CHECK(halo[0][4] > halo[0][2]);
  CHECK(halo[1][4] > halo[1][2]);
  free(out);
  char *rows = th_read_file(csv_path, NULL);
  REQUIRE(rows);
  for (int m = 0; m < 2; m++)
    for (int k = 1; k <= 4; k *= 2) {
      char key[96];
      snprintf(key, sizeof key, ",scaling_%s_c%s_gpus%d,ms_per_frame,", modes[m], grids[m][k], k);
      const char *p = strstr(rows, key);
      if (!p) {
        TH_FAIL("no '%s' row in %s", key, csv_path);
        continue;
      }
      CHECK_NEAR(atof(p + strlen(key)), ms[m][k], 1e-5 * ms[m][k] + 1e-3);
    }
  CHECK(strstr(rows, ",scaling_strong_c48x48_gpus4,halo_hidden_fraction,"));
  CHECK(strstr(rows, ",scaling_weak_c48x24_gpus2,halo_bytes_per_frame,"));
  CHECK(!strstr(rows, "_p8192_"));
  free(rows);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--only", "fluid"), 2);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--cloth", "1"), 2);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--balance", "even"), 2);
  CHECK_EQ_INT(CLI(dir, "bench", "scaling", "--cloth-per-device", "x"), 2);
}

int main(int argc, char **argv) {
  cli = getenv("WEFT_CLI");
  if (!cli || !*cli) {
    printf("SKIP: WEFT_CLI is not set (ctest sets it to the weft program)\n");
    return 77;
  }
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "readonly_out") == 0 && geteuid() == 0) {
      printf("SKIP: running as root: permission checks do not apply\n");
      return 77;
    }
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(tmp, sizeof tmp, "%s/weft_test_cli_XXXXXX", base);
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  static const th_test tests[] = {TH_TEST(help_everywhere),    TH_TEST(run_outputs),
                                  TH_TEST(validate_errors),    TH_TEST(validate_stability_warning),
                                  TH_TEST(resume_equal),       TH_TEST(cpu_threads_bitwise),
                                  TH_TEST(unwritable_out),     TH_TEST(readonly_out),
                                  TH_TEST(batch_failing_job),  TH_TEST(batch_rejects_bad_input),
                                  TH_TEST(batch_interrupt),    TH_TEST(bench_scaling),
                                  TH_TEST(bench_scaling_cloth)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", tmp, tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return rc;
}
