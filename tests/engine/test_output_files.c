/* The contents of a run's files (weft/outputs.h), read back: frame 0 is the initial state; the
 * scene-level collection scene.pvd names every object's existing .vtp at its simulated time; a
 * particle PLY carries radius, velocity, angular velocity and id, equal bit for bit to the
 * world's state; outputs.up_axis "z" writes (x, -z, y) of the simulated (x, y, z), exactly; the
 * name "scene" and a wrong up_axis are refused by the scene loader, naming the key.
 *
 * Runs on cpu:0 and writes under $TMPDIR (or /tmp), removing what it made.
 */
#define _XOPEN_SOURCE 700
#include <sys/stat.h>

#include "harness.h"
#include "tmp_root.h"
#include "weft/outputs.h"
#include "weft/scene.h"
#include "weft/world.h"

/* A ball of radius 5 cm sliding at 1 m/s along +x on a ground with friction 0.5, and a small
 * hanging cloth: both kinds of object, and a particle that turns. */
static const char scene_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 20, \"devices\": \"cpu\"},"
    " \"materials\": [{\"name\": \"rubber\", \"friction\": 0.5}],"
    " \"particles\": [{\"name\": \"ball\", \"center\": [0, 0.05, 0],"
    "   \"half_extents\": [0.05, 0.05, 0.05], \"radius\": 0.05, \"velocity\": [1, 0, 0],"
    "   \"material\": \"rubber\"}],"
    " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.5, 0.5], \"resolution\": [4, 3]},"
    "   \"center\": [0, 1, 0], \"pins\": [0, 3]}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\", \"friction\": 0.5}],"
    " \"outputs\": {\"every\": 2, \"formats\": [\"ply\", \"vtk\", \"csv\"]}}";

static wf_world *make_world(wf_scene **keep) {
  wf_scene *sc = NULL;
  if (wf_scene_parse(scene_text, strlen(scene_text), "outputs.json", ".", NULL, &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu";
  wf_world *w = NULL;
  if (wf_world_create(sc, &wd, &w) != WF_OK) TH_FAIL("world: %s", wf_last_error());
  if (keep)
    *keep = sc;
  else
    wf_scene_destroy(sc);
  return w;
}

/* A binary PLY read back: the vertex properties' names (all 4-byte float or uint here) and the
 * vertex rows. */
typedef struct ply {
  char *text;
  int nprops;
  char names[16][16];
  size_t count;
  const unsigned char *rows;
} ply;

static bool ply_read(const char *dir, const char *file, ply *p) {
  char path[800];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  memset(p, 0, sizeof *p);
  size_t len = 0;
  p->text = th_read_file(path, &len);
  if (!p->text) return false;
  char *end = strstr(p->text, "end_header\n");
  char *vert = strstr(p->text, "element vertex ");
  if (!end || !vert) return false;
  p->count = strtoul(vert + 15, NULL, 10);
  for (char *line = strchr(vert, '\n') + 1; line < end && strncmp(line, "property ", 9) == 0;
       line = strchr(line, '\n') + 1) {
    if (strncmp(line, "property list", 13) == 0 || p->nprops == 16) break;
    char type[16];
    if (sscanf(line, "property %15s %15s", type, p->names[p->nprops]) != 2) return false;
    p->nprops++;
  }
  p->rows = (const unsigned char *)end + strlen("end_header\n");
  return (size_t)(p->rows - (unsigned char *)p->text) + p->count * 4 * (size_t)p->nprops <= len;
}

/* Property k of row i, as float (uint properties: use ply_u32). */
static float ply_f(const ply *p, size_t i, int k) {
  float v;
  memcpy(&v, p->rows + (i * (size_t)p->nprops + (size_t)k) * 4, 4);
  return v;
}
static uint32_t ply_u32(const ply *p, size_t i, int k) {
  uint32_t v;
  memcpy(&v, p->rows + (i * (size_t)p->nprops + (size_t)k) * 4, 4);
  return v;
}

static bool exists(const char *dir, const char *file) {
  char p[800];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, file);
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

/* Frame 0, written before any step, is the state the world starts from: the PLY's positions and
 * velocities are the downloaded ones bit for bit, and stats.csv's first row is frame 0 at t = 0. */
TEST(frame_zero_is_the_initial_state) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/zero", tmp_root);
  wf_scene *sc = NULL;
  wf_world *w = make_world(&sc);
  REQUIRE(w);
  wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(sc);
  d.dir = dir;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  CHECK_EQ_INT(wf_world_frame(w), 0);
  CHECK_OK(wf_run_outputs_write_frame(o, 0, 0.0));
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object obj;
    CHECK_OK(wf_world_object_get(w, i, &obj));
    float(*pos)[4] = calloc(obj.point_count, 16), (*vel)[4] = calloc(obj.point_count, 16);
    REQUIRE(pos && vel);
    CHECK_OK(wf_world_object_download(w, i, pos, vel));
    char file[128];
    snprintf(file, sizeof file, "%s_000000.ply", obj.name);
    ply p;
    if (!ply_read(dir, file, &p)) TH_FAIL("%s/%s: not a PLY this test reads", dir, file);
    CHECK_EQ_INT(p.count, obj.point_count);
    int vx = obj.kind == WF_WORLD_CLOTH ? 6 : 4; /* after x y z [nx ny nz | radius] */
    for (size_t j = 0; j < p.count && j < obj.point_count; j++)
      for (int k = 0; k < 3; k++) {
        CHECK(ply_f(&p, j, k) == pos[j][k]);
        CHECK(ply_f(&p, j, vx + k) == vel[j][k]);
      }
    free(p.text), free(pos), free(vel);
  }
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_destroy(w);
  wf_scene_destroy(sc);
  char path[600];
  snprintf(path, sizeof path, "%s/stats.csv", dir);
  char *text = th_read_file(path, NULL);
  REQUIRE(text);
  char *row = strchr(text, '\n');
  CHECK(row && strncmp(row + 1, "0,0,", 4) == 0);
  free(text);
}

/* scene.pvd after frames 0..5 written every 2 (0, 2, 4 and the last, 5): one DataSet per object
 * per written frame, parts 0 and 1 named after the objects, each file there, each timestep the
 * frame's simulated time (frame / fps, printed with 17 digits: read back exactly). Reopened to
 * resume from frame 5, the outputs list the same files again. */
TEST(scene_collection_names_every_file) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/collection", tmp_root);
  wf_scene *sc = NULL;
  wf_world *w = make_world(&sc);
  REQUIRE(w);
  wf_run_outputs_desc d = wf_run_outputs_desc_from_scene(sc);
  d.dir = dir;
  d.formats = WF_SCENE_OUT_VTK;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  CHECK_OK(wf_run_outputs_write_frame(o, 0, 0.0));
  static const int64_t last = 5;
  for (int64_t f = 1; f <= last; f++) {
    CHECK_OK(wf_world_step(w, 1));
    if ((wf_run_outputs_due(o, f) & WF_RUN_OUTPUTS_FRAME) || f == last)
      CHECK_OK(wf_run_outputs_write_frame(o, f, 0.0));
  }
  CHECK_OK(wf_run_outputs_close(o));
  char path[600];
  snprintf(path, sizeof path, "%s/scene.pvd", dir);
  char *text = th_read_file(path, NULL);
  REQUIRE(text);
  /* outputs opened again to resume at frame 5 (the last, not a multiple of every) rebuild the
   * collection from the files there: byte for byte the same */
  d.resume_frame = last;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  CHECK_OK(wf_run_outputs_close(o));
  char *again = th_read_file(path, NULL);
  CHECK(again && strcmp(again, text) == 0);
  free(again);
  double dt = wf_world_frame_dt(w);
  wf_world_destroy(w);
  wf_scene_destroy(sc);
  static const char *const objects[] = {"ball", "sheet"};
  static const int64_t frames[] = {0, 2, 4, 5};
  int n = 0;
  for (char *e = strstr(text, "<DataSet "); e; e = strstr(e + 1, "<DataSet "), n++) {
    double t;
    int part;
    char name[64], file[128];
    if (sscanf(
            e,
            "<DataSet timestep=\"%lf\" group=\"\" part=\"%d\" name=\"%63[^\"]\" file=\"%127[^\"]",
            &t, &part, name, file) != 4) {
      TH_FAIL("entry %d does not read: %.80s", n, e);
      continue;
    }
    int64_t f = frames[n / 2 < 4 ? n / 2 : 3];
    char want[128];
    snprintf(want, sizeof want, "%s_%06lld.vtp", objects[n % 2], (long long)f);
    CHECK_EQ_INT(part, n % 2);
    CHECK(strcmp(name, objects[n % 2]) == 0);
    CHECK(strcmp(file, want) == 0);
    CHECK(t == (double)f * dt);
    if (!exists(dir, file)) TH_FAIL("%s names %s, which is not there", path, file);
  }
  CHECK_EQ_INT(n, 8);
  free(text);
}

/* After 20 frames the ball rolls. Its PLY has the properties x y z radius vx vy vz wx wy wz id in
 * that order, and the values are the world's (download and download_omega) bit for bit. Not
 * vacuous: the ball turns, about -z as a ball rolling along +x on a y-up ground does. */
TEST(particle_ply_has_radius_velocity_and_spin) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/spin", tmp_root);
  wf_world *w = make_world(NULL);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 20));
  wf_run_outputs_desc d = wf_run_outputs_desc_default();
  d.dir = dir;
  d.formats = WF_SCENE_OUT_PLY;
  wf_run_outputs *o = NULL;
  CHECK_OK(wf_run_outputs_create(w, &d, &o));
  REQUIRE(o);
  CHECK_OK(wf_run_outputs_write_frame(o, 20, 0.0));
  CHECK_OK(wf_run_outputs_close(o));
  wf_world_object obj;
  CHECK_OK(wf_world_object_get(w, 0, &obj));
  REQUIRE(obj.kind == WF_WORLD_PARTICLES && obj.point_count >= 1);
  float(*pos)[4] = calloc(obj.point_count, 16), (*vel)[4] = calloc(obj.point_count, 16),
  (*om)[4] = calloc(obj.point_count, 16);
  REQUIRE(pos && vel && om);
  CHECK_OK(wf_world_object_download(w, 0, pos, vel));
  CHECK_OK(wf_world_object_download_omega(w, 0, om));
  /* a cloth has no angular velocity: said, naming it */
  CHECK_STATUS(wf_world_object_download_omega(w, 1, om), WF_ERR_INVALID);
  CHECK(th_contains(wf_last_error(), "sheet"));
  CHECK_OK(wf_world_object_download_omega(w, 0, om));
  ply p;
  if (!ply_read(dir, "ball_000020.ply", &p)) TH_FAIL("ball_000020.ply does not read");
  static const char *const props[] = {"x",  "y",  "z",  "radius", "vx", "vy",
                                      "vz", "wx", "wy", "wz",     "id"};
  CHECK_EQ_INT(p.nprops, TH_COUNT(props));
  for (int k = 0; k < TH_COUNT(props) && k < p.nprops; k++)
    if (strcmp(p.names[k], props[k]) != 0)
      TH_FAIL("property %d is '%s', not '%s'", k, p.names[k], props[k]);
  CHECK(strstr(p.text, "property uint id\n") != NULL);
  CHECK_EQ_INT(p.count, obj.point_count);
  for (size_t j = 0; j < p.count && j < obj.point_count && p.nprops == 11; j++) {
    for (int k = 0; k < 3; k++) {
      CHECK(ply_f(&p, j, k) == pos[j][k]);
      CHECK(ply_f(&p, j, 4 + k) == vel[j][k]);
      CHECK(ply_f(&p, j, 7 + k) == om[j][k]);
    }
    CHECK(ply_f(&p, j, 3) == pos[j][3]);
    CHECK_EQ_INT(ply_u32(&p, j, 10), obj.first + j);
  }
  /* the ball rolls along +x: spin about -z of v / r once it stops sliding (the sliding phase lasts
   * 2 v0 / (7 mu g) = 58 ms, 4 frames; here measured 0.691 m/s against 0.691 m/s). 1 % covers
   * the stretch of the tangential contact spring; a ball that did not turn fails by 100 % */
  printf("  ball after 20 frames: v_x %.4f m/s, omega_z %.4f rad/s, -omega_z r %.4f m/s\n",
         (double)vel[0][0], (double)om[0][2], -(double)om[0][2] * pos[0][3]);
  CHECK(vel[0][0] > 0.5f);
  CHECK(om[0][2] < 0.0f);
  CHECK_NEAR(-om[0][2] * pos[0][3], vel[0][0], 0.01 * vel[0][0]);
  free(p.text), free(pos), free(vel), free(om);
  wf_world_destroy(w);
}

/* outputs.up_axis "z": the same state written both ways; every vector of the z-up file is
 * (x, -z, y) of the y-up one, exactly (a negation and a swap: no rounding). Radius and id are as
 * they were, and the cloth's normals turn too. The VTK file says the same in its points. */
TEST(up_axis_z_turns_every_vector) {
  char dy[400], dz[400];
  snprintf(dy, sizeof dy, "%s/yup", tmp_root);
  snprintf(dz, sizeof dz, "%s/zup", tmp_root);
  wf_world *w = make_world(NULL);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 10));
  for (int k = 0; k < 2; k++) {
    wf_run_outputs_desc d = wf_run_outputs_desc_default();
    d.dir = k ? dz : dy;
    d.formats = WF_SCENE_OUT_PLY;
    d.up_axis = k ? WF_SCENE_UP_Z : WF_SCENE_UP_Y;
    wf_run_outputs *o = NULL;
    CHECK_OK(wf_run_outputs_create(w, &d, &o));
    REQUIRE(o);
    CHECK_OK(wf_run_outputs_write_frame(o, 10, 0.0));
    CHECK_OK(wf_run_outputs_close(o));
  }
  wf_world_destroy(w);
  static const char *const files[] = {"ball_000010.ply", "sheet_000010.ply"};
  static const int vectors[2][3] = {{0, 4, 7}, {0, 3, 6}}; /* xyz, v (w), n v: first columns */
  int turned = 0;
  for (int f = 0; f < 2; f++) {
    ply a, b;
    REQUIRE(ply_read(dy, files[f], &a) && ply_read(dz, files[f], &b));
    CHECK_EQ_INT(a.count, b.count);
    CHECK_EQ_INT(a.nprops, b.nprops);
    for (size_t j = 0; j < a.count && j < b.count; j++) {
      for (int v = 0; v < 3; v++) {
        int c = vectors[f][v];
        CHECK(ply_f(&b, j, c) == ply_f(&a, j, c));
        CHECK(ply_f(&b, j, c + 1) == -ply_f(&a, j, c + 2));
        CHECK(ply_f(&b, j, c + 2) == ply_f(&a, j, c + 1));
        turned += ply_f(&a, j, c + 1) != 0.0f;
      }
      if (f == 0)
        CHECK(ply_f(&b, j, 3) == ply_f(&a, j, 3) && ply_u32(&b, j, 10) == ply_u32(&a, j, 10));
    }
    free(a.text), free(b.text);
  }
  CHECK(turned > 0); /* not vacuous: there were y components to move */
}

/* The loader: "scene" is reserved for emitters and cloths (scene.pvd), and outputs.up_axis is
 * "y" or "z", each error naming its key path. */
TEST(scene_keys_are_checked) {
  static const char reserved[] = "{\"cloths\": [{\"name\": \"scene\"}]}";
  static const char axis[] = "{\"outputs\": {\"up_axis\": \"x\"}}";
  static const char good[] = "{\"outputs\": {\"up_axis\": \"z\"}}";
  wf_scene *sc = NULL;
  CHECK(wf_scene_parse(reserved, strlen(reserved), "r.json", ".", NULL, &sc) != WF_OK);
  CHECK(th_contains(wf_scene_errors(), "cloths[0].name"));
  CHECK(th_contains(wf_scene_errors(), "reserved"));
  CHECK(wf_scene_parse(axis, strlen(axis), "a.json", ".", NULL, &sc) != WF_OK);
  CHECK(th_contains(wf_scene_errors(), "outputs.up_axis"));
  CHECK_OK(wf_scene_parse(good, strlen(good), "g.json", ".", NULL, &sc));
  REQUIRE(sc);
  CHECK_EQ_INT(sc->outputs.up_axis, WF_SCENE_UP_Z);
  CHECK_EQ_INT(wf_run_outputs_desc_from_scene(sc).up_axis, WF_SCENE_UP_Z);
  wf_scene_destroy(sc);
}

int main(int argc, char **argv) {
  if (!tmp_root_make("weft_test_output_files")) return 1;
  static const th_test tests[] = {
      TH_TEST(frame_zero_is_the_initial_state),
      TH_TEST(scene_collection_names_every_file),
      TH_TEST(particle_ply_has_radius_velocity_and_spin),
      TH_TEST(up_axis_z_turns_every_vector),
      TH_TEST(scene_keys_are_checked),
  };
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
