/* `weft run` and `weft validate` end to end: the program named by $WEFT_CLI runs on small scenes
 * written to a temporary directory; the files it writes are parsed back (PLY header counts, CSV
 * header and rows, the .pvd's frames), exit codes and messages are checked, and a run of 6 frames
 * is compared byte for byte with a run of 3 frames resumed for 3 more, and runs on several CPU
 * devices (--device cpu:0,cpu:1, a scene listing three; scenes/split_mixed.json with split cloths
 * on three) with a run on cpu:0. CPU only.
 */
#include "harness.h"

#include <sys/stat.h>
#include <sys/wait.h>

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

static char tmp[512];
static const char *cli;

/* A scene with one emitter (a 3x3x3 lattice: 27 particles, as a box of 3 spacings a side holds) and
 * one 4x4 spring cloth. */
static const char scene_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 6, \"devices\": \"cpu\"},\n"
    " \"particles\": [{\"name\": \"grains\", \"center\": [0, 0.3, 0], \"half_extents\": [0.15, "
    "0.15, "
    "0.15],\n"
    "   \"radius\": 0.03, \"spacing\": 0.1, \"jitter\": 0.001, \"seed\": 2}],\n"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"},\n"
    "   {\"name\": \"hand\", \"type\": \"sphere\", \"center\": [0, 1.5, 0], \"radius\": 0.05,\n"
    "    \"velocity\": [0.5, 0, 0]}],\n"
    " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.4, 0.4], \"resolution\": [4, "
    "4]},\n"
    "   \"center\": [0, 1.2, 0], \"integrator\": \"spring\", \"material\": {\"mass\": 0.01, "
    "\"damping_time\": 1e-4},\n"
    "   \"attachments\": [{\"collider\": \"hand\", \"pins\": [\"top-left\"]}]}],\n"
    " \"outputs\": {\"every\": 1, \"formats\": [\"ply\", \"vtk\", \"csv\"]}}\n";

/* Runs `weft ARGS` with stdout/stderr into tmp/out.txt and tmp/err.txt; returns the exit code. */
static int run(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out.txt' 2>'%s/err.txt'", cli, args, tmp, tmp);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *err_text(void) {
  char p[600];
  snprintf(p, sizeof p, "%s/err.txt", tmp);
  char *t = th_read_file(p, NULL);
  return t ? t : calloc(1, 1);
}

static long ply_vertices(const char *path) {
  char *t = th_read_file(path, NULL);
  if (!t) return -1;
  const char *v = strstr(t, "element vertex ");
  long n = v && strstr(t, "end_header") > v ? strtol(v + 15, NULL, 10) : -1;
  free(t);
  return n;
}

static int count_of(const char *text, const char *word) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
    n++;
  return n;
}

TEST(run_writes_outputs) {
  char scene[600], out[600], p[700];
  snprintf(scene, sizeof scene, "%s/small.json", tmp);
  snprintf(out, sizeof out, "%s/run1", tmp);
  REQUIRE(th_write_file(scene, scene_text));
  char args[2048];
  snprintf(args, sizeof args, "run '%s' --frames 3 --out '%s' --quiet", scene, out);
  int rc = run(args);
  char *err = err_text();
  if (rc != 0) TH_FAIL("exit %d: %s", rc, err);
  free(err);
  REQUIRE(rc == 0);
  for (int f = 0; f <= 3; f++) { /* frame 0: the initial state */
    snprintf(p, sizeof p, "%s/grains_%06d.ply", out, f);
    CHECK_EQ_INT(ply_vertices(p), 27);
    snprintf(p, sizeof p, "%s/sheet_%06d.ply", out, f);
    CHECK_EQ_INT(ply_vertices(p), 16);
  }
  snprintf(p, sizeof p, "%s/stats.csv", out);
  char *csv = th_read_file(p, NULL);
  REQUIRE(csv);
  CHECK(strncmp(csv, "frame,time,kinetic_energy,potential_energy,momentum_x,", 54) == 0);
  CHECK_EQ_INT(count_of(csv, "\n"), 5); /* header + frames 0..3 */
  CHECK(strstr(csv, "\n0,0,") != NULL);
  /* row of frame 3: t = 3/60, 27 particles, 16 vertices */
  const char *row = csv;
  for (int i = 0; i < 4; i++)
    row = strchr(row, '\n') + 1;
  double v[11];
  char *s = (char *)row;
  for (int k = 0; k < 11; k++) {
    v[k] = strtod(s, &s);
    if (*s == ',') s++;
  }
  CHECK_NEAR(v[0], 3, 0);
  CHECK_NEAR(v[1], 3.0 / 60.0, 1e-15);
  CHECK_NEAR(v[8], 27, 0);
  CHECK_NEAR(v[9], 16, 0);
  free(csv);
  snprintf(p, sizeof p, "%s/sheet.pvd", out);
  char *pvd = th_read_file(p, NULL);
  REQUIRE(pvd);
  CHECK_EQ_INT(count_of(pvd, "<DataSet"), 4);
  CHECK(strstr(pvd, "file=\"sheet_000000.vtp\"") && strstr(pvd, "file=\"sheet_000003.vtp\""));
  free(pvd);
  /* scene.pvd: both objects at each of the 4 times */
  snprintf(p, sizeof p, "%s/scene.pvd", out);
  pvd = th_read_file(p, NULL);
  REQUIRE(pvd);
  CHECK_EQ_INT(count_of(pvd, "<DataSet"), 8);
  CHECK(strstr(pvd, "name=\"grains\" file=\"grains_000003.vtp\""));
  free(pvd);
  snprintf(p, sizeof p, "%s/sheet_000002.vtp", out);
  char *vtp = th_read_file(p, NULL);
  CHECK(vtp && strstr(vtp, "NumberOfPoints=\"16\""));
  free(vtp);
  snprintf(p, sizeof p, "%s/checkpoint_000003.wfck", out);
  struct stat sb;
  CHECK(stat(p, &sb) == 0 && sb.st_size > 0);
}

TEST(validate_reports_line_and_column) {
  char bad[600], good[600], args[1400];
  snprintf(bad, sizeof bad, "%s/bad.json", tmp);
  snprintf(good, sizeof good, "%s/small.json", tmp);
  REQUIRE(th_write_file(good, scene_text));
  REQUIRE(th_write_file(bad, "{\n  \"simulation\": {\"substeps\": -3}\n}\n"));
  snprintf(args, sizeof args, "validate '%s' '%s'", good, bad);
  CHECK_EQ_INT(run(args), 2);
  char *err = err_text();
  if (!strstr(err, "bad.json:2:18: simulation.substeps")) TH_FAIL("stderr: %s", err);
  /* the good scene has no error (file:line:col); a stability warning may name it */
  for (const char *at = err; (at = strstr(at, "small.json:")) != NULL; at++)
    CHECK(!(at[11] >= '0' && at[11] <= '9'));
  free(err);
  snprintf(args, sizeof args, "validate '%s'", good);
  CHECK_EQ_INT(run(args), 0);
  snprintf(args, sizeof args, "validate --print '%s'", good);
  CHECK_EQ_INT(run(args), 0);
  char p[600];
  snprintf(p, sizeof p, "%s/out.txt", tmp);
  char *json = th_read_file(p, NULL);
  CHECK(json && strstr(json, "\"grains\"") && strstr(json, "\"substeps\": 8"));
  free(json);
  /* run on an invalid scene: exit 2 with the same message */
  snprintf(args, sizeof args, "run '%s' --quiet --out '%s/never'", bad, tmp);
  CHECK_EQ_INT(run(args), 2);
  err = err_text();
  CHECK(strstr(err, "bad.json:2:18"));
  free(err);
}

TEST(unwritable_out_fails_first) {
  char file[600], out[700], scene[600], args[2048];
  snprintf(file, sizeof file, "%s/plain_file", tmp);
  snprintf(out, sizeof out, "%s/sub/dir", file);
  snprintf(scene, sizeof scene, "%s/small.json", tmp);
  REQUIRE(th_write_file(scene, scene_text));
  REQUIRE(th_write_file(file, "not a directory\n"));
  snprintf(args, sizeof args, "run '%s' --out '%s' --quiet", scene, out);
  CHECK_EQ_INT(run(args), 1);
  char *err = err_text();
  if (!strstr(err, out)) TH_FAIL("stderr lacks the path: %s", err);
  free(err);
  struct stat sb;
  CHECK(stat(file, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 16);
}

/* A run's PLY output read back by a file emitter (`"shape": "file"`): the next run starts from
 * the 27 grains where the first left them; a CSV with a bad row fails validation and the run
 * with exit 2, naming the file and line, and writes nothing. */
TEST(file_emitter_from_a_run) {
  char scene[600], out[600], next[700], args[2048], text[1400];
  snprintf(scene, sizeof scene, "%s/small.json", tmp);
  snprintf(out, sizeof out, "%s/first", tmp);
  REQUIRE(th_write_file(scene, scene_text));
  snprintf(args, sizeof args, "run '%s' --frames 2 --out '%s' --quiet", scene, out);
  REQUIRE(run(args) == 0);
  snprintf(next, sizeof next, "%s/next.json", tmp);
  snprintf(text, sizeof text,
           "{\"simulation\": {\"frames\": 1, \"substeps\": 8, \"devices\": \"cpu\"},"
           " \"particles\": [{\"name\": \"again\", \"shape\": \"file\", \"file\": "
           "\"first/grains_000002.ply\"}],"
           " \"outputs\": {\"every\": 1, \"formats\": [\"ply\"]}}");
  REQUIRE(th_write_file(next, text));
  snprintf(args, sizeof args, "run '%s' --out '%s/second' --quiet", next, tmp);
  CHECK_EQ_INT(run(args), 0);
  char p[700];
  snprintf(p, sizeof p, "%s/second/again_000001.ply", tmp);
  CHECK_EQ_INT(ply_vertices(p), 27);
  char csv[600];
  snprintf(csv, sizeof csv, "%s/bad_rows.csv", tmp);
  REQUIRE(th_write_file(csv, "x,y,z,radius\n0,1,0,0.02\n0,1.1,0,0.02\n0,1.2,zero,0.02\n"));
  snprintf(text, sizeof text,
           "{\"particles\": [{\"name\": \"bad\", \"shape\": \"file\", \"file\": "
           "\"bad_rows.csv\"}]}");
  REQUIRE(th_write_file(next, text));
  snprintf(args, sizeof args, "validate '%s'", next);
  CHECK_EQ_INT(run(args), 2);
  snprintf(args, sizeof args, "run '%s' --quiet --out '%s/never_file'", next, tmp);
  CHECK_EQ_INT(run(args), 2);
  char *err = err_text();
  if (!strstr(err, "particles[0].file") || !strstr(err, "bad_rows.csv:4:"))
    TH_FAIL("stderr: %s", err);
  free(err);
  struct stat sb;
  snprintf(p, sizeof p, "%s/never_file", tmp);
  CHECK(stat(p, &sb) != 0);
}

static int same_file(const char *a, const char *b) {
  size_t na, nb;
  char *ta = th_read_file(a, &na), *tb = th_read_file(b, &nb);
  int same = ta && tb && na == nb && na > 0 && memcmp(ta, tb, na) == 0;
  free(ta), free(tb);
  return same;
}

TEST(resume_is_bitwise) {
  char scene[600], a[600], b[600], args[2048], pa[700], pb[700];
  snprintf(scene, sizeof scene, "%s/small.json", tmp);
  snprintf(a, sizeof a, "%s/full", tmp);
  snprintf(b, sizeof b, "%s/split", tmp);
  REQUIRE(th_write_file(scene, scene_text));
  snprintf(args, sizeof args, "run '%s' --frames 6 --out '%s' --quiet", scene, a);
  REQUIRE(run(args) == 0);
  snprintf(args, sizeof args, "run '%s' --frames 3 --out '%s' --quiet", scene, b);
  REQUIRE(run(args) == 0);
  snprintf(args, sizeof args,
           "run '%s' --frames 6 --out '%s' --quiet --resume '%s/checkpoint_000003.wfck'", scene, b,
           b);
  int rc = run(args);
  if (rc != 0) {
    char *err = err_text();
    TH_FAIL("resume exit %d: %s", rc, err);
    free(err);
    return;
  }
  const char *files[] = {"grains_000006.ply", "sheet_000006.ply", "grains_000004.ply",
                         "checkpoint_000006.wfck"};
  for (int i = 0; i < 4; i++) {
    snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
    snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
    if (!same_file(pa, pb)) TH_FAIL("%s differs between the full and the resumed run", files[i]);
  }
  /* not vacuous: frames 3 and 6 differ */
  snprintf(pa, sizeof pa, "%s/grains_000003.ply", a);
  snprintf(pb, sizeof pb, "%s/grains_000006.ply", a);
  CHECK(!same_file(pa, pb));
  /* the resumed CSV keeps the first run's rows: header + frames 0..6 */
  snprintf(pb, sizeof pb, "%s/stats.csv", b);
  char *csv = th_read_file(pb, NULL);
  CHECK(csv && count_of(csv, "\n") == 8);
  free(csv);
  snprintf(pb, sizeof pb, "%s/sheet.pvd", b);
  char *pvd = th_read_file(pb, NULL);
  CHECK(pvd && count_of(pvd, "<DataSet") == 7);
  free(pvd);
  /* and scene.pvd is the uninterrupted run's */
  snprintf(pa, sizeof pa, "%s/scene.pvd", a);
  snprintf(pb, sizeof pb, "%s/scene.pvd", b);
  if (!same_file(pa, pb)) TH_FAIL("scene.pvd differs between the full and the resumed run");
}

/* CSV text without its timing column (ms_per_frame: wall time, different in every run). */
static char *csv_without_timing(const char *path) {
  /* ms_per_frame is column 11 (index 10): energies and per-object columns follow it */
  char *t = th_read_file(path, NULL);
  if (!t) return NULL;
  char *out = malloc(strlen(t) + 1), *o = out;
  int field = 0;
  for (const char *c = t; *c; c++) {
    if (*c == '\n') {
      field = 0;
      *o++ = '\n';
      continue;
    }
    if (*c == ',') field++;
    if (field != 10) *o++ = *c; /* the comma before column 10 goes with it */
  }
  *o = '\0';
  free(t);
  return out;
}

/* `--device cpu:0,cpu:1` splits the particles over two CPU devices (the runtime is started with
 * them), and a scene listing three CPU devices runs on three: every PLY, VTP and checkpoint is
 * byte for byte that of a run on cpu:0 (but the checkpoint of the scene changed by --set, which
 * holds the changed scene), and stats.csv too but for the timing column: the energies, totals and
 * per-object columns of a split run are bitwise those of one device. */
TEST(split_run_equals_one_device) {
  static const char *const variants[][2] = {
      {"--device cpu:0,cpu:1", "cpu:0 + cpu:1"},
      {"--set 'simulation.devices=[\"cpu:0\",\"cpu:1\",\"cpu:2\"]'", "cpu:0 + cpu:1 + cpu:2"}};
  char scene[600], one[600], many[600], args[2048], pa[700], pb[700];
  snprintf(scene, sizeof scene, "%s/split.json", tmp);
  snprintf(one, sizeof one, "%s/one", tmp);
  /* the small scene without coupling: coupled cloths need one device */
  char text[sizeof scene_text + 64];
  const char *dev = strstr(scene_text, "\"devices\": \"cpu\"");
  REQUIRE(dev);
  snprintf(text, sizeof text, "%.*s\"coupling\": false%s", (int)(dev - scene_text), scene_text,
           dev + strlen("\"devices\": \"cpu\""));
  REQUIRE(th_write_file(scene, text));
  snprintf(args, sizeof args, "run '%s' --frames 6 --out '%s' --quiet --device cpu:0", scene, one);
  REQUIRE(run(args) == 0);
  for (int v = 0; v < 2; v++) {
    snprintf(many, sizeof many, "%s/many%d", tmp, v);
    snprintf(args, sizeof args, "run '%s' --frames 6 --out '%s' %s", scene, many, variants[v][0]);
    int rc = run(args);
    char *err = err_text();
    if (rc != 0) TH_FAIL("%s: exit %d: %s", variants[v][0], rc, err);
    if (!strstr(err, variants[v][1]) || !strstr(err, "particles split over"))
      TH_FAIL("%s: stderr does not say where it ran: %s", variants[v][0], err);
    free(err);
    if (rc != 0) continue;
    const char *files[] = {"grains_000001.ply", "grains_000006.ply", "sheet_000006.ply",
                           "grains_000006.vtp", "sheet_000003.vtp",  "grains.pvd",
                           "scene.pvd",         "grains_000000.ply", "checkpoint_000006.wfck"};
    /* the checkpoint holds the scene's text, which the --set changes */
    for (int i = 0; i < (v == 0 ? 9 : 8); i++) {
      snprintf(pa, sizeof pa, "%s/%s", one, files[i]);
      snprintf(pb, sizeof pb, "%s/%s", many, files[i]);
      if (!same_file(pa, pb))
        TH_FAIL("%s: %s differs from the run on cpu:0", variants[v][0], files[i]);
    }
    snprintf(pa, sizeof pa, "%s/stats.csv", one);
    snprintf(pb, sizeof pb, "%s/stats.csv", many);
    char *ca = csv_without_timing(pa), *cb = csv_without_timing(pb);
    CHECK(ca && cb && count_of(ca, "\n") == 8 && strcmp(ca, cb) == 0);
    free(ca), free(cb);
  }
  /* not vacuous: the grains moved */
  snprintf(pa, sizeof pa, "%s/grains_000001.ply", one);
  snprintf(pb, sizeof pb, "%s/grains_000006.ply", one);
  CHECK(!same_file(pa, pb));
  /* a device that is not there is named, exit 1 before anything runs */
  snprintf(args, sizeof args, "run '%s' --frames 2 --out '%s/bad' --quiet --device cpu:0,cuda:5",
           scene, tmp);
  CHECK(run(args) != 0);
  char *err = err_text();
  CHECK(strstr(err, "'cuda:5'") != NULL);
  free(err);
}

/* The bundled mixed scene (particles and two split cloths) on three CPU devices writes the same
 * PLY, VTK, PNG and checkpoint files as on cpu:0, and says where its objects ran. */
TEST(split_mixed_scene_equals_one_device) {
  static const char *const devs[] = {"cpu:0", "cpu:0,cpu:1,cpu:2"};
  char out[2][600], args[2048], pa[700], pb[700];
  for (int k = 0; k < 2; k++) {
    snprintf(out[k], sizeof out[k], "%s/mixed%d", tmp, k);
    snprintf(args, sizeof args,
             "run '%s/scenes/split_mixed.json' --frames 4 --out '%s' --device %s --render "
             "--set outputs.every=2 --set 'outputs.formats=[\"ply\",\"vtk\",\"csv\",\"png\","
             "\"checkpoint\"]' --set render.width=96 --set render.height=64",
             WEFT_SOURCE_DIR, out[k], devs[k]);
    int rc = run(args);
    char *err = err_text();
    if (rc != 0) TH_FAIL("%s: exit %d: %s", devs[k], rc, err);
    if (k == 1 &&
        (!strstr(err, "cloths too") || !strstr(err, "cpu:2    ") || !strstr(err, "2 cloths (")))
      TH_FAIL("stderr does not say where the objects ran: %s", err);
    free(err);
    REQUIRE(rc == 0);
  }
  const char *files[] = {"sand_000002.ply",  "sheet_000002.ply",        "flag_000004.ply",
                         "sheet_000004.vtp", "flag_000004.vtp",         "sheet.pvd",
                         "sand_000004.vtp",  "render/frame_000002.png", "checkpoint_000004.wfck"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    snprintf(pa, sizeof pa, "%s/%s", out[0], files[i]);
    snprintf(pb, sizeof pb, "%s/%s", out[1], files[i]);
    if (!same_file(pa, pb)) TH_FAIL("%s differs from the run on cpu:0 (or is missing)", files[i]);
  }
  /* not vacuous: the sheet moved */
  snprintf(pa, sizeof pa, "%s/sheet_000002.ply", out[0]);
  snprintf(pb, sizeof pb, "%s/sheet_000004.ply", out[0]);
  CHECK(!same_file(pa, pb));
}

/* "png" in outputs.formats (no --render) draws pictures, numbered 0, 1, 2, ... in order: frames
 * 0, 2, 4 and the last, 5, written every 2, are frame_000000.png .. frame_000003.png and nothing
 * else (ffmpeg -i frame_%06d.png reads them all). Skipped where weft has no viewer. */
TEST(png_format_renders_numbered_frames) {
  char scene[600], out[600], args[2048], p[700];
  snprintf(scene, sizeof scene, "%s/png.json", tmp);
  snprintf(out, sizeof out, "%s/png", tmp);
  REQUIRE(th_write_file(scene, scene_text));
  snprintf(args, sizeof args,
           "run '%s' --frames 5 --out '%s' --quiet --set outputs.every=2 "
           "--set 'outputs.formats=[\"png\"]' --set render.width=64 --set render.height=48",
           scene, out);
  int rc = run(args);
  char *err = err_text();
  if (rc == 2 && strstr(err, "without it")) {
    CHECK(strstr(err, "outputs.formats") != NULL); /* says where the png came from */
    free(err);
    SKIP("weft was built without the viewer");
  }
  if (rc != 0) TH_FAIL("exit %d: %s", rc, err);
  free(err);
  for (int n = 0; n < 6; n++) {
    snprintf(p, sizeof p, "%s/render/frame_%06d.png", out, n);
    struct stat sb;
    bool there = stat(p, &sb) == 0 && sb.st_size > 0;
    if (there != (n < 4)) TH_FAIL("%s is %s", p, there ? "there" : "missing");
  }
  snprintf(p, sizeof p, "%s/grains_000000.vtp", out); /* png alone: no other files */
  CHECK(access(p, F_OK) != 0);
}

int main(int argc, char **argv) {
  cli = getenv("WEFT_CLI");
  if (!cli || !*cli) {
    fprintf(stderr, "SKIP: WEFT_CLI is not set\n");
    return 77;
  }
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(tmp, sizeof tmp, "%s/weft_cli_XXXXXX", base);
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  static const th_test tests[] = {TH_TEST(run_writes_outputs),
                                  TH_TEST(validate_reports_line_and_column),
                                  TH_TEST(unwritable_out_fails_first),
                                  TH_TEST(resume_is_bitwise),
                                  TH_TEST(split_run_equals_one_device),
                                  TH_TEST(split_mixed_scene_equals_one_device),
                                  TH_TEST(png_format_renders_numbered_frames),
                                  TH_TEST(file_emitter_from_a_run)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return rc;
}
