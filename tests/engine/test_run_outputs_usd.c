/* The USD output of a run (weft/outputs.h, "usd" in outputs.formats), read back structurally:
 * scene.usda's stage metadata (time codes per second = fps, start and end time codes, up axis,
 * metres per unit) and value clips listing every written frame's layer; each frame layer's point
 * count, positions, velocities and widths equal the world's state exactly (floats are written
 * with 9 significant digits, which round-trip a float); the static layer's topology and grid
 * texture coordinates; a kinematic collider's translation is its closed-form position
 * x0 + v t, a turning one's orientation the closed-form quaternion (w, x, y, z) =
 * (cos(w t / 2), 0, sin(w t / 2), 0) for w rad/s about +y; an interrupted run (outputs reopened at
 * a resume frame) lists only the frames up to it, then the frames written again; a mesh collider
 * is its 192 triangles at rest.
 *
 * No USD library is packaged for Debian 12 (no python3-pxr / usd-tools), so no real reader here;
 * the syntax follows the USD ASCII format as documented by Pixar.
 *
 * WEFT_SOURCE_DIR (a compile definition) locates scenes/. Runs on cpu:0 under $TMPDIR (or /tmp).
 */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <sys/stat.h>

#include "harness.h"
#include "tmp_root.h"
#include "weft/collider.h"
#include "weft/outputs.h"
#include "weft/scene.h"
#include "weft/world.h"

/* The cloth-on-particles scene shrunk: 18 particles, a 4 x 3 cloth, wall_left moving at
 * 0.5 m/s along x, wall_right turning at 2 rad/s about +y (through the origin), 2 frames; *scp gets
 * the scene (the caller destroys it). */
static wf_world *small_world(wf_scene **scp) {
  static const char *const sets[] = {"particles[0].half_extents=[0.06,0.04,0.06]",
                                     "cloths[0].grid.resolution=[4,3]",
                                     "simulation.substeps=4",
                                     "simulation.frames=2",
                                     "colliders[1].velocity=[0.5,0,0]",
                                     "colliders[2].rotation_rate=2",
                                     "colliders[2].rotation_axis=[0,1,0]",
                                     "outputs.formats=[\"usd\"]",
                                     "outputs.every=1"};
  wf_scene_overrides ov = {sets, TH_COUNT(sets)};
  wf_scene *sc = NULL;
  wf_world *w = NULL;
  *scp = NULL;
  if (wf_scene_load(WEFT_SOURCE_DIR "/scenes/cloth_on_particles.json", &ov, &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu";
  if (wf_world_create(sc, &wd, &w) != WF_OK) TH_FAIL("world: %s", wf_last_error());
  *scp = sc;
  return w;
}

static char *read_in(const char *dir, const char *file) {
  char p[800];
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return th_read_file(p, NULL);
}

/* Occurrences of s in text. */
static int count_of(const char *text, const char *s) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, s)); p += strlen(s))
    n++;
  return n;
}

/* The value after `key = ` in text, or NAN. */
static double value_of(const char *text, const char *key) {
  char k[128];
  snprintf(k, sizeof k, "%s = ", key);
  const char *p = text ? strstr(text, k) : NULL;
  return p ? strtod(p + strlen(k), NULL) : NAN;
}

/* The tuples of `attr`'s time sample at `frame` inside prim `prim` of a frame layer: up to max
 * tuples of `dim` floats into v (or scalars when dim is 1); returns how many, -1 when absent. */
static int samples(const char *text, const char *prim, const char *attr, int frame, int dim,
                   float *v, int max) {
  char k[160];
  snprintf(k, sizeof k, "over \"%s\"", prim);
  const char *p = strstr(text, k);
  snprintf(k, sizeof k, " %s.timeSamples = {", attr);
  if (p) p = strstr(p, k);
  snprintf(k, sizeof k, "%d: ", frame);
  if (p) p = strstr(p, k);
  if (!p) return -1;
  p += strlen(k);
  bool array = *p == '[';
  if (array) p++;
  int n = 0;
  while (*p && *p != ']' && n < max) {
    while (*p == ' ' || *p == ',' || *p == '(')
      p++;
    if (*p == ']' || *p == '\n') break;
    for (int c = 0; c < dim; c++) {
      char *end;
      v[n * dim + c] = strtof(p, &end);
      if (end == p) return n;
      p = end;
      while (*p == ',' || *p == ' ')
        p++;
    }
    if (*p == ')') p++;
    n++;
    if (!array) break;
  }
  return n;
}

static void write_frames(wf_world *w, wf_run_outputs *o) {
  if (wf_world_frame(w) == 0) CHECK_OK(wf_run_outputs_write_frame(o, 0, 0.0));
  for (int64_t f = wf_world_frame(w) + 1; f <= wf_world_frames(w); f++) {
    CHECK_OK(wf_world_step(w, 1));
    if (wf_run_outputs_due(o, f) & WF_RUN_OUTPUTS_FRAME)
      CHECK_OK(wf_run_outputs_write_frame(o, f, 1.0));
  }
}

TEST(stage_and_frames_equal_the_world) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/usd", tmp_root);
  wf_scene *sc = NULL;
  wf_world *w = small_world(&sc);
  REQUIRE(w);
  wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(sc);
  d.dir = dir;
  CHECK(d.formats == WF_SCENE_OUT_USD);
  CHECK(d.scene == sc);
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  write_frames(w, o);
  char *stage = read_in(dir, "scene.usda");
  REQUIRE(stage);
  CHECK(strncmp(stage, "#usda 1.0\n", 10) == 0);
  CHECK(fabs(value_of(stage, "timeCodesPerSecond") - 1.0 / wf_world_frame_dt(w)) < 1e-9);
  CHECK(value_of(stage, "startTimeCode") == 0.0);
  CHECK(value_of(stage, "endTimeCode") == 2.0);
  CHECK(value_of(stage, "metersPerUnit") == 1.0);
  CHECK(th_contains(stage, "upAxis = \"Y\""));
  CHECK(th_contains(stage, "@./usd/static.usda@"));
  CHECK(th_contains(stage, "double2[] active = [(0, 0), (1, 1), (2, 2)]"));
  CHECK_EQ_INT(count_of(stage, "@./usd/frame_"), 3);
  CHECK(th_contains(stage, "asset manifestAssetPath = @./usd/manifest.usda@"));

  /* the last frame's layer against the state the world holds now (frame 2) */
  char *layer = read_in(dir, "usd/frame_000002.usda");
  REQUIRE(layer);
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object obj;
    CHECK_OK(wf_world_object_get(w, i, &obj));
    int n = (int)obj.point_count;
    float(*pos)[4] = malloc((size_t)n * sizeof *pos), (*vel)[4] = malloc((size_t)n * sizeof *vel);
    float *v = malloc((size_t)n * 3 * sizeof *v);
    CHECK_OK(wf_world_object_download(w, i, pos, vel));
    CHECK_EQ_INT(samples(layer, obj.name, "points", 2, 3, v, n), n);
    int bad = 0;
    for (int j = 0; j < n; j++)
      for (int k = 0; k < 3; k++)
        bad += v[3 * j + k] != pos[j][k];
    CHECK_EQ_INT(samples(layer, obj.name, "velocities", 2, 3, v, n), n);
    for (int j = 0; j < n; j++)
      for (int k = 0; k < 3; k++)
        bad += v[3 * j + k] != vel[j][k];
    if (obj.kind == WF_WORLD_CLOTH) {
      CHECK_EQ_INT(samples(layer, obj.name, "normals", 2, 3, v, n), n);
      for (int j = 0; j < n; j++) /* unit normals: |n| = 1 to float rounding */
        bad += fabsf(v[3 * j] * v[3 * j] + v[3 * j + 1] * v[3 * j + 1] +
                     v[3 * j + 2] * v[3 * j + 2] - 1.0f) > 1e-5f;
    } else {
      CHECK_EQ_INT(samples(layer, obj.name, "widths", 2, 1, v, n), n);
      for (int j = 0; j < n; j++)
        bad += v[j] != 2.0f * pos[j][3];
    }
    float ext[6];
    CHECK_EQ_INT(samples(layer, obj.name, "extent", 2, 3, ext, 2), 2);
    for (int j = 0; j < n; j++) /* every point (and particle sphere) inside the extent */
      for (int k = 0; k < 3; k++) {
        float r = obj.kind == WF_WORLD_CLOTH ? 0.0f : pos[j][3];
        bad += pos[j][k] - r < ext[k] || pos[j][k] + r > ext[3 + k];
      }
    if (bad) TH_FAIL("%s: %d values differ from the world's", obj.name, bad);
    free(pos), free(vel), free(v);
  }
  /* wall_left (box, centre x = -0.7) moves at 0.5 m/s: translate - pivot + centre = x0 + v t;
   * float rounding of v t and of the sum: 1e-6 m is a few ulps at |x| < 1 */
  float tr[3];
  CHECK_EQ_INT(samples(layer, "wall_left", "xformOp:translate", 2, 3, tr, 1), 1);
  double t = 2.0 * wf_world_frame_dt(w);
  CHECK(fabs(tr[0] - 0.5 * t) < 1e-6 && fabs(tr[1]) < 1e-6 && fabs(tr[2]) < 1e-6);
  float q[4];
  CHECK_EQ_INT(samples(layer, "wall_left", "xformOp:orient", 2, 4, q, 1), 1);
  CHECK(q[0] == 1.0f && q[1] == 0.0f && q[2] == 0.0f && q[3] == 0.0f); /* (w, x, y, z) */
  /* wall_right: half the angle 2 rad/s x t is t; float rounding of the kernels' pose: 1e-6 */
  CHECK_EQ_INT(samples(layer, "wall_right", "xformOp:orient", 2, 4, q, 1), 1);
  CHECK(fabs(q[0] - cos(t)) < 1e-6 && fabs(q[1]) < 1e-6 && fabs(q[2] - sin(t)) < 1e-6 &&
        fabs(q[3]) < 1e-6);
  CHECK(sin(t) > 1e-2); /* a turn the check can see */

  /* static layer: 5 collider shapes, the cloth's topology and its grid's texture coordinates */
  char *stat = read_in(dir, "usd/static.usda");
  REQUIRE(stat);
  CHECK_EQ_INT(count_of(stat, "def Cube \"shape\""), 4);
  CHECK_EQ_INT(count_of(stat, "def Xform \"ground\""), 1);
  CHECK(th_contains(stat, "def Points \"bed\""));
  CHECK(th_contains(stat, "def Mesh \"blanket\""));
  CHECK(th_contains(stat, "int[] faceVertexCounts = [3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]\n"));
  /* 4 x 3 grid: vertex (c, r) at (c / 3, 1 - r / 2); the last is (1, 0) */
  CHECK(th_contains(stat, "texCoord2f[] primvars:st = [(0, 1), (0.333333333, 1)"));
  CHECK(th_contains(stat, "(0.666666667, 0), (1, 0)]"));
  char *man = read_in(dir, "usd/manifest.usda");
  REQUIRE(man);
  CHECK_EQ_INT(count_of(man, "point3f[] points"), 2);
  CHECK_EQ_INT(count_of(man, "quatf xformOp:orient"), 5);
  free(stage), free(layer), free(stat), free(man);
  CHECK_OK(wf_run_outputs_close(o));

  /* an interrupted run resumed at frame 1: the stage lists frames 0 and 1 only, until frame 2
   * is written again */
  wf_world_destroy(w);
  wf_scene_destroy(sc);
  w = small_world(&sc);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 1)); /* as a checkpoint of frame 1 would restore it */
  d.scene = NULL;                /* no colliders: the structure of the frames alone */
  d.resume_frame = 1;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  stage = read_in(dir, "scene.usda");
  REQUIRE(stage);
  CHECK(th_contains(stage, "double2[] active = [(0, 0), (1, 1)]"));
  CHECK(value_of(stage, "endTimeCode") == 1.0);
  free(stage);
  CHECK_OK(wf_run_outputs_write_frame(o, 2, 1.0));
  stage = read_in(dir, "scene.usda");
  CHECK(stage && th_contains(stage, "double2[] active = [(0, 0), (1, 1), (2, 2)]"));
  free(stage);
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_destroy(w);
  wf_scene_destroy(sc);
}

TEST(z_up_turns_the_world) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/usdz", tmp_root);
  wf_scene *sc = NULL;
  wf_world *w = small_world(&sc);
  REQUIRE(w);
  wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(sc);
  d.dir = dir;
  d.up_axis = WF_SCENE_UP_Z;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  wf_scene_destroy(sc); /* read at create only */
  CHECK_OK(wf_run_outputs_write_frame(o, 0, 0.0));
  CHECK_OK(wf_run_outputs_close(o));
  char *stage = read_in(dir, "scene.usda"), *stat = read_in(dir, "usd/static.usda");
  CHECK(stage && th_contains(stage, "upAxis = \"Z\""));
  /* (x, y, z) -> (x, -z, y) is +90 degrees about x */
  CHECK(stat && th_contains(stat, "float xformOp:rotateX = 90"));
  free(stage), free(stat);
  char p[500];
  wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_USD_FRAME, NULL, 7);
  CHECK(strcmp(p, "d/usd/frame_000007.usda") == 0);
  wf_run_outputs_path(p, sizeof p, "d", WF_RUN_FILE_USD, NULL, 7);
  CHECK(strcmp(p, "d/scene.usda") == 0);
  wf_world_destroy(w);
}

/* A mesh collider (assets/meshes/drum.obj, 192 triangles) is drawn as its triangles at rest: a
 * Mesh "shape" of 192 faces and 576 points; a mesh cloth has no primvars:st (no grid). */
TEST(mesh_collider_is_its_triangles) {
  if (!wf_collider_mesh_can_load()) SKIP("weft was built without assimp");
  static const char text[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 4, \"frames\": 1, \"devices\": \"cpu\"},"
      " \"particles\": [{\"name\": \"p\", \"center\": [0, 1, 0], \"half_extents\": [0.1, 0.1, "
      "0.1], \"radius\": 0.05, \"spacing\": 0.1}],"
      " \"colliders\": [{\"name\": \"drum-1\", \"type\": \"mesh\", \"mesh\": "
      "\"assets/meshes/drum.obj\"}],"
      " \"cloths\": [{\"name\": \"c\", \"mesh\": \"assets/meshes/sheet_16x16.obj\", \"center\": "
      "[0, 2, 0]}],"
      " \"outputs\": {\"formats\": [\"usd\"]}}";
  wf_scene *sc = NULL;
  if (wf_scene_parse(text, strlen(text), "t.json", WEFT_SOURCE_DIR, NULL, &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return;
  }
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu";
  wf_world *w = NULL;
  CHECK_OK(wf_world_create(sc, &wd, &w));
  REQUIRE(w);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/mesh", tmp_root);
  wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(sc);
  d.dir = dir;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  wf_collider_mesh_info info = wf_collider_mesh_info_get(sc->colliders[0].mesh_data);
  CHECK_EQ_INT((int)info.triangles, 192);
  wf_scene_destroy(sc); /* read at create only */
  CHECK_OK(wf_run_outputs_write_frame(o, 0, 0.0));
  CHECK_OK(wf_run_outputs_close(o));
  char *stat = read_in(dir, "usd/static.usda");
  REQUIRE(stat);
  const char *x = strstr(stat, "def Xform \"drum_1\""); /* the name made a USD identifier */
  REQUIRE(x);
  const char *counts = strstr(x, "faceVertexCounts = ["); /* past "int[]" */
  const char *end = counts ? strchr(counts, ']') : NULL;
  REQUIRE(end);
  int faces = 0;
  for (const char *c = counts; c < end; c++)
    faces += *c == '3';
  CHECK_EQ_INT(faces, 192);
  const char *pts = strstr(x, "points = [");
  end = pts ? strchr(pts, ']') : NULL;
  REQUIRE(end);
  int tuples = 0;
  for (const char *c = pts; c < end; c++)
    tuples += *c == '(';
  CHECK_EQ_INT(tuples, 3 * 192);
  CHECK(!th_contains(stat, "primvars:st"));
  free(stat);
  wf_world_destroy(w);
}

int main(int argc, char **argv) {
  if (!tmp_root_make("weft_test_run_outputs_usd")) return 1;
  static const th_test tests[] = {
      TH_TEST(stage_and_frames_equal_the_world),
      TH_TEST(z_up_turns_the_world),
      TH_TEST(mesh_collider_is_its_triangles),
  };
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
