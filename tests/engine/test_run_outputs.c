/* The outputs of a run (weft/outputs.h): two frames of a shrunk bundled scene (particles and a
 * cloth) in every format give the files `weft run` writes, under the same names; stats.csv has
 * its header and one row per frame; a resume from frame 1 keeps the earlier run's row 1 byte for
 * byte; a directory that cannot be made fails at create, naming the path, with nothing written.
 *
 * WEFT_SOURCE_DIR (a compile definition) locates scenes/. Runs on cpu:0 and writes under $TMPDIR
 * (or /tmp), removing what it made.
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <sys/stat.h>

#include "harness.h"
#include "tmp_root.h"
#include "weft/outputs.h"
#include "weft/scene.h"
#include "weft/world.h"

static bool exists(const char *dir, const char *file) {
  char p[800];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

/* Entries of dir whose name contains `part` ("" counts them all). */
static int entries_with(const char *dir, const char *part) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strstr(e->d_name, part)) n++;
  if (d) closedir(d);
  return n;
}

/* Lines of a text file, or -1 when it cannot be read; *line2 gets a copy of line 2 (row 1). */
static int lines_of(const char *dir, const char *file, char *line2, size_t n) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  char *text = th_read_file(p, NULL);
  if (!text) return -1;
  int lines = 0;
  for (char *s = text, *nl; *s; s = nl + 1, lines++) {
    nl = strchr(s, '\n');
    if (!nl) nl = s + strlen(s) - 1;
    if (lines == 1 && line2) snprintf(line2, n, "%.*s", (int)(nl - s), s);
  }
  free(text);
  return lines;
}

/* True when dir/file holds both a and b. */
static bool file_has(const char *dir, const char *file, const char *a, const char *b) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  char *text = th_read_file(p, NULL);
  bool has = text && strstr(text, a) && strstr(text, b);
  free(text);
  return has;
}

/* The cloth-on-particles scene shrunk to a few dozen particles and a 4 x 4 cloth, 2 frames. */
static wf_world *small_world(void) {
  static const char *const sets[] = {"particles[0].half_extents=[0.06,0.04,0.06]",
                                     "cloths[0].grid.resolution=[4,4]", "simulation.substeps=4",
                                     "simulation.frames=2"};
  wf_scene_overrides ov = {sets, 4};
  wf_scene *sc = NULL;
  wf_world *w = NULL;
  if (wf_scene_load(WEFT_SOURCE_DIR "/scenes/cloth_on_particles.json", &ov, &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu";
  if (wf_world_create(sc, &wd, &w) != WF_OK) TH_FAIL("world: %s", wf_last_error());
  wf_scene_destroy(sc);
  return w;
}

static wf_run_outputs_desc all_formats(const char *dir) {
  wf_run_outputs_desc d = wf_run_outputs_desc_default();
  d.dir = dir;
  d.formats = WF_SCENE_OUT_PLY | WF_SCENE_OUT_VTK | WF_SCENE_OUT_CSV;
  d.checkpoint_every = 1;
  return d;
}

/* Steps w to its last frame, writing what is due after each frame. */
static void run_to_end(wf_world *w, wf_run_outputs *o) {
  for (int64_t f = wf_world_frame(w) + 1; f <= wf_world_frames(w); f++) {
    CHECK_OK(wf_world_step(w, 1));
    unsigned due = wf_run_outputs_due(o, f);
    CHECK(due & WF_RUN_OUTPUTS_FRAME);
    if (due & WF_RUN_OUTPUTS_FRAME) CHECK_OK(wf_run_outputs_write_frame(o, f, 1.5));
    if (due & WF_RUN_OUTPUTS_CHECKPOINT) CHECK_OK(wf_run_outputs_write_checkpoint(o, f));
  }
}

TEST(two_frames_in_every_format) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/two/frames/", tmp_root); /* made with its parent; '/' dropped */
  wf_world *w = small_world();
  REQUIRE(w);
  wf_run_outputs_desc d = all_formats(dir);
  d.checkpoint_every = 0; /* a checkpoint after the last frame only */
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  dir[strlen(dir) - 1] = '\0';
  CHECK(strcmp(wf_run_outputs_dir(o), dir) == 0);
  CHECK_EQ_INT(wf_run_outputs_due(o, 0), WF_RUN_OUTPUTS_FRAME); /* never a checkpoint */
  CHECK_EQ_INT(wf_run_outputs_due(o, 1), WF_RUN_OUTPUTS_FRAME);
  CHECK_EQ_INT(wf_run_outputs_due(o, 2), WF_RUN_OUTPUTS_FRAME | WF_RUN_OUTPUTS_CHECKPOINT);
  CHECK_OK(wf_run_outputs_write_frame(o, 0, 0.0)); /* the initial state */
  run_to_end(w, o);
  CHECK_OK(wf_run_outputs_close(o));
  static const char *const files[] = {"bed_000000.ply",
                                      "bed_000001.ply",
                                      "bed_000002.ply",
                                      "blanket_000000.ply",
                                      "blanket_000001.ply",
                                      "blanket_000002.ply",
                                      "bed_000000.vtp",
                                      "bed_000001.vtp",
                                      "bed_000002.vtp",
                                      "blanket_000000.vtp",
                                      "blanket_000001.vtp",
                                      "blanket_000002.vtp",
                                      "bed.pvd",
                                      "blanket.pvd",
                                      "scene.pvd",
                                      "stats.csv",
                                      "checkpoint_000002.wfck",
                                      "run.json"};
  for (int i = 0; i < TH_COUNT(files); i++)
    if (!exists(dir, files[i])) TH_FAIL("%s/%s is missing or empty", dir, files[i]);
  CHECK_EQ_INT(entries_with(dir, ""), TH_COUNT(files)); /* nothing else: no .tmp., no .old */
  char row1[512] = "";
  CHECK_EQ_INT(lines_of(dir, "stats.csv", row1, sizeof row1), 4); /* header + 3 rows */
  CHECK(strncmp(row1, "0,0,", 4) == 0);
  CHECK(file_has(dir, "stats.csv", "frame,time,kinetic_energy,potential_energy,", "\n2,"));
  CHECK(file_has(dir, "blanket.pvd", "\"blanket_000000.vtp\"", "\"blanket_000002.vtp\""));
  CHECK(file_has(dir, "scene.pvd", "name=\"bed\" file=\"bed_000000.vtp\"",
                 "part=\"1\" name=\"blanket\" file=\"blanket_000002.vtp\""));
  wf_world_destroy(w);
}

/* A run of 2 frames, then a run resumed from its frame-1 checkpoint into the same directory that
 * writes frame 2 again: the earlier row 1 is kept as it was, row 2 is the new one (its ms
 * column), the collections list both frames, and the temporary .old copy is gone. */
TEST(resume_keeps_the_earlier_rows) {
  char dir[400], first_row[2048] = "", row[2048] = "", ck[600];
  snprintf(dir, sizeof dir, "%s/resume", tmp_root);
  wf_world *w = small_world();
  REQUIRE(w);
  wf_run_outputs_desc d = all_formats(dir);
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  run_to_end(w, o);
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_destroy(w);
  CHECK(exists(dir, "checkpoint_000001.wfck") && exists(dir, "checkpoint_000002.wfck"));
  CHECK_EQ_INT(lines_of(dir, "stats.csv", first_row, sizeof first_row), 3);

  w = small_world();
  REQUIRE(w);
  CHECK_EQ_INT(wf_run_outputs_path(ck, sizeof ck, dir, WF_RUN_FILE_CHECKPOINT, NULL, 1),
               strlen(dir) + strlen("/checkpoint_000001.wfck"));
  CHECK_OK(wf_world_load_checkpoint(w, ck));
  d.resume_frame = wf_world_frame(w);
  CHECK_EQ_INT(d.resume_frame, 1);
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  CHECK_OK(wf_world_step(w, 1));
  CHECK_OK(wf_run_outputs_write_frame(o, 2, 99.0));
  CHECK_OK(wf_run_outputs_close(o));
  CHECK_EQ_INT(lines_of(dir, "stats.csv", row, sizeof row), 3);
  CHECK(row[0] && strcmp(row, first_row) == 0);
  CHECK(file_has(dir, "stats.csv", "\n2,", ",99,")); /* ms_per_frame, then elastic_energy */
  CHECK_EQ_INT(entries_with(dir, ".old"), 0);
  CHECK(file_has(dir, "bed.pvd", "\"bed_000001.vtp\"", "\"bed_000002.vtp\""));
  wf_world_destroy(w);
}

/* The values of a CSV line (at most n) into v; returns how many. */
static int csv_values(const char *line, double *v, int n) {
  int k = 0;
  for (char *end; k < n && *line; k++) {
    v[k] = strtod(line, &end);
    if (end == line) break;
    if (*end != ',') {
      k++;
      break;
    } /* the line's last value */
    line = end + 1;
  }
  return k;
}

/* stats.csv's energy columns: elastic_energy, total_energy and rotational_energy after the earlier
 * columns, then <object>.kinetic, .potential, .elastic, .rotational for the particles ("bed") and
 * the cloth ("blanket"), then the 5 colliders' forces (6 columns each:
 * stats_csv_has_collider_forces); in every row the objects' columns add up to the totals (the
 * totals are the objects' sums in object order, printed with 17 digits: equal to 1e-12 relative,
 * the rounding of two additions), the total is kinetic + rotational + potential + elastic, and the
 * falling cloth's constraints hold energy (the bed's particles only just touch in 2 frames: none,
 * and never below 0); a cloth has no rotational energy. */
TEST(stats_csv_has_energies_per_object) {
  char dir[400], p[600];
  snprintf(dir, sizeof dir, "%s/energy", tmp_root);
  wf_world *w = small_world();
  REQUIRE(w);
  wf_run_outputs_desc d = all_formats(dir);
  d.formats = WF_SCENE_OUT_CSV;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  run_to_end(w, o);
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_destroy(w);
  snprintf(p, sizeof p, "%s/stats.csv", dir);
  char *text = th_read_file(p, NULL);
  REQUIRE(text);
  static const char header[] =
      "frame,time,kinetic_energy,potential_energy,momentum_x,momentum_y,momentum_z,max_speed,"
      "particles,vertices,ms_per_frame,elastic_energy,total_energy,rotational_energy,"
      "bed.kinetic,bed.potential,bed.elastic,bed.rotational,blanket.kinetic,blanket.potential,"
      "blanket.elastic,blanket.rotational,ground.fx,ground.fy,ground.fz,ground.tx,ground.ty,"
      "ground.tz,wall_left.fx,";
  CHECK(strncmp(text, header, strlen(header)) == 0);
  int rows = 0;
  for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
    double v[64];
    CHECK_EQ_INT(csv_values(line + 1, v, 64), 22 + 5 * 6);
    double ke = v[14] + v[18], pe = v[15] + v[19], el = v[16] + v[20], re = v[17] + v[21];
    CHECK_NEAR(ke, v[2], 1e-12 * fabs(v[2]));
    CHECK_NEAR(pe, v[3], 1e-12 * fabs(v[3]));
    CHECK_NEAR(el, v[11], 1e-12 * fabs(v[11]));
    CHECK_NEAR(re, v[13], 1e-12 * fabs(v[13]));
    double sum = v[2] + v[13] + v[3] + v[11];
    CHECK_NEAR(sum, v[12], 1e-12 * (fabs(v[2]) + fabs(v[13]) + fabs(v[3]) + fabs(v[11])));
    CHECK(v[16] >= 0.0 && v[20] > 0.0 && v[17] >= 0.0 && v[21] == 0.0);
    rows++;
  }
  CHECK_EQ_INT(rows, 2);
  free(text);
}

/* The value of column `name` in the last row of a stats.csv text, or NAN. */
static double csv_last(const char *text, const char *name) {
  const char *nl = strchr(text, '\n');
  if (!nl) return NAN;
  int col = -1, k = 0;
  size_t len = strlen(name);
  for (const char *c = text; c < nl; k++) {
    const char *e = c;
    while (e < nl && *e != ',')
      e++;
    if ((size_t)(e - c) == len && !strncmp(c, name, len)) col = k;
    c = e + 1;
  }
  const char *last = NULL;
  for (const char *l = nl; l && l[1]; l = strchr(l + 1, '\n'))
    last = l + 1;
  double v[64];
  if (col < 0 || col >= 64 || !last || csv_values(last, v, 64) <= col) return NAN;
  return v[col];
}

/* rotational_energy of a spinning particle: a ball (m = 0.1 kg, r = 0.05 m) set down on a plane
 * at v0 = 1 m/s without spin slides until friction (mu = 0.5) has spun it up to rolling, ω r = v,
 * after t = 2 v0 / (7 mu g) = 0.058 s (the friction impulse takes m (v0 - v) and gives
 * I ω = (2/5) m r v, so v = 5/7 v0), then rolls on (no rolling resistance). At 0.5 s it holds
 * ½ I ω² = ½ (2/5) m v² = (5/49) m v0² = 0.0102 J, and rotational = 2/5 kinetic. Tolerances: the
 * slip ends within a substep (dt = 1/3840 s: mu g dt = 1.3e-3 m/s of v = 0.71 m/s, 0.4% of the
 * energy) and the tangential spring's ringing after the stick is damped (ζ = 0.22 at 548 rad/s:
 * e^-50 by 0.44 s), so 1% on the closed form; ω r = v holds to the spring's last creep, 0.5%. */
TEST(stats_csv_rotational_energy_of_a_rolling_ball) {
  static const char scene[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 64, \"frames\": 30},"
      " \"materials\": [{\"name\": \"m\", \"friction\": 0.5, \"rolling_friction\": 0}],"
      " \"colliders\": [{\"type\": \"plane\", \"friction\": 0.5}],"
      " \"particles\": [{\"name\": \"ball\", \"center\": [0, 0.05, 0],"
      " \"half_extents\": [0.05, 0.05, 0.05], \"radius\": 0.05, \"mass\": 0.1,"
      " \"velocity\": [1, 0, 0], \"material\": \"m\"}],"
      " \"outputs\": {\"formats\": [\"csv\"]}}";
  wf_scene *sc = NULL;
  wf_world *w = NULL;
  if (wf_scene_parse(scene, strlen(scene), "rolling", NULL, NULL, &sc) != WF_OK)
    TH_FAIL("scene: %s", wf_scene_errors());
  REQUIRE(sc);
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu";
  CHECK_OK(wf_world_create(sc, &wd, &w));
  wf_scene_destroy(sc);
  REQUIRE(w);
  char dir[400], p[600];
  snprintf(dir, sizeof dir, "%s/rolling", tmp_root);
  wf_run_outputs_desc d = all_formats(dir);
  d.formats = WF_SCENE_OUT_CSV;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  run_to_end(w, o);
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_destroy(w);
  snprintf(p, sizeof p, "%s/stats.csv", dir);
  char *text = th_read_file(p, NULL);
  REQUIRE(text);
  double n = csv_last(text, "particles"), rot = csv_last(text, "rotational_energy");
  double ball = csv_last(text, "ball.rotational"), ke = csv_last(text, "ball.kinetic");
  double want = 5.0 / 49.0 * 0.1 * 1.0;
  printf("  rotational %.6g J (ball %.6g), closed form %.6g J (rel %.2g); kinetic %.6g J, "
         "rotational / kinetic %.5f (2/5)\n",
         rot, ball, want, fabs(rot - want) / want, ke, rot / ke);
  CHECK(n == 1.0);
  CHECK(rot == ball);
  CHECK_NEAR(rot, want, 0.01 * want);
  CHECK_NEAR(rot / ke, 0.4, 0.005 * 0.4);
  free(text);
}

/* The scene's pin indices name the output's vertices: a 5 x 4 grid cloth pinned at vertices 7
 * and 12 (column 2 of rows 1 and 2: row 0 is the top edge) hangs for 10 frames; in the PLY the
 * frame writes, vertices 7 and 12 are where the grid put them (x = -0.5 + 0.25 c, y = 1.5 - r / 3:
 * to float rounding, 1e-6 m) with zero velocity, and vertex 2 above them (unpinned, on the top
 * edge) has fallen. The mesh's vertices carry unit normals (nx ny nz: 1e-6, float rounding) and
 * velocities (vx vy vz). */
TEST(pins_are_output_vertices) {
  static const char scene[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 10, \"devices\": \"cpu\"},"
      " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [1, 1], \"resolution\": [5, 4]},"
      "  \"center\": [0, 1, 0], \"pins\": [7, 12]}],"
      " \"outputs\": {\"every\": 10, \"formats\": [\"ply\"]}}";
  char dir[400], p[600];
  snprintf(dir, sizeof dir, "%s/pins", tmp_root);
  wf_scene *sc = NULL;
  if (wf_scene_parse(scene, strlen(scene), "pins.json", ".", NULL, &sc) != WF_OK)
    TH_FAIL("scene: %s", wf_scene_errors());
  REQUIRE(sc);
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu";
  wf_world *w = NULL;
  CHECK_OK(wf_world_create(sc, &wd, &w));
  wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(sc);
  wf_scene_destroy(sc);
  d.dir = dir;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  CHECK_OK(wf_world_step(w, 10));
  CHECK_OK(wf_run_outputs_write_frame(o, 10, 0.0));
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_destroy(w);
  snprintf(p, sizeof p, "%s/sheet_000010.ply", dir);
  size_t len = 0;
  char *text = th_read_file(p, &len);
  REQUIRE(text);
  CHECK(strstr(text, "element vertex 20\nproperty float x\nproperty float y\nproperty float z\n"
                     "property float nx\nproperty float ny\nproperty float nz\n"
                     "property float vx\nproperty float vy\nproperty float vz\nelement face"));
  char *body = strstr(text, "end_header\n");
  REQUIRE(body);
  body += strlen("end_header\n");
  REQUIRE((size_t)(body - text) + 20 * 36 <= len);
  float v[20][9];
  memcpy(v, body, sizeof v); /* little-endian floats, as the hosts weft supports */
  for (int k = 7; k <= 12; k += 5) {
    int c = k % 5, r = k / 5;
    CHECK_NEAR(v[k][0], -0.5 + 0.25 * c, 1e-6);
    CHECK_NEAR(v[k][1], 1.5 - r / 3.0, 1e-6);
    CHECK_NEAR(v[k][2], 0.0, 1e-6);
    CHECK(v[k][6] == 0.0f && v[k][7] == 0.0f && v[k][8] == 0.0f);
  }
  for (int k = 0; k < 20; k++)
    CHECK_NEAR(v[k][3] * v[k][3] + v[k][4] * v[k][4] + v[k][5] * v[k][5], 1.0, 1e-6);
  CHECK(v[2][1] < 1.5 - 0.01); /* fell: not pinned */
  CHECK(v[2][7] != 0.0f);      /* and moves */
  free(text);
}

/* An output directory under a plain file: WF_ERR_IO naming both, no handle, the file untouched
 * and nothing made beside it. */
TEST(bad_directory_fails_at_create) {
  char base[400], file[500], dir[600];
  snprintf(base, sizeof base, "%s/bad", tmp_root);
  REQUIRE(mkdir(base, 0755) == 0);
  snprintf(file, sizeof file, "%s/plain_file", base);
  REQUIRE(th_write_file(file, "not a directory\n"));
  snprintf(dir, sizeof dir, "%s/sub/out", file);
  wf_world *w = small_world();
  REQUIRE(w);
  wf_run_outputs_desc d = all_formats(dir);
  wf_run_outputs *o = (wf_run_outputs *)&th_fails;
  CHECK_STATUS(wf_run_outputs_create(w, &d, &o), WF_ERR_IO);
  CHECK(o == NULL);
  CHECK(th_contains(wf_last_error(), dir));
  CHECK(th_contains(wf_last_error(), file));
  CHECK(th_contains(wf_last_error(), "Not a directory"));
  size_t n = 0;
  char *text = th_read_file(file, &n);
  CHECK(text && n == 16);
  free(text);
  CHECK_EQ_INT(entries_with(base, ""), 1);
  /* wf_dir_create alone says the same */
  CHECK_STATUS(wf_dir_create(dir), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), file));
  wf_world_destroy(w);
}

TEST(names) {
  char p[64];
  CHECK_EQ_INT(wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_PLY, "flag", 7), 17);
  CHECK(strcmp(p, "d/flag_000007.ply") == 0);
  wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_VTP, "flag", 1234567);
  CHECK(strcmp(p, "d/flag_1234567.vtp") == 0);
  wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_PVD, "flag", 3);
  CHECK(strcmp(p, "d/flag.pvd") == 0);
  wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_CSV, NULL, 3);
  CHECK(strcmp(p, "d/stats.csv") == 0);
  wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_LAST_GOOD, NULL, 41);
  CHECK(strcmp(p, "d/checkpoint_last_good_000041.wfck") == 0);
  /* too small a buffer: the length it needs, and an error */
  CHECK_EQ_INT(wf_run_outputs_path(p, 8, "d", WF_RUN_FILE_CHECKPOINT, NULL, 1), 24);
  CHECK(th_contains(wf_last_error(), "too long"));
}

int main(int argc, char **argv) {
  if (!tmp_root_make("weft_test_run_outputs")) return 1;
  static const th_test tests[] = {
      TH_TEST(two_frames_in_every_format),
      TH_TEST(stats_csv_has_energies_per_object),
      TH_TEST(pins_are_output_vertices),
      TH_TEST(resume_keeps_the_earlier_rows),
      TH_TEST(bad_directory_fails_at_create),
      TH_TEST(names),
      TH_TEST(stats_csv_rotational_energy_of_a_rolling_ball),
  };
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
