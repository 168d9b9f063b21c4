/* The world (weft/world.h): every bundled scene creates a world and steps; free fall of particles
 * and a cloth against the analytic momentum and energy; checkpoints restore bitwise (run 6 frames
 * vs 3 + save + load + 3: the state, and the forces on the colliders); a checkpoint of another
 * scene is refused naming the key that differs, and, with the change accepted, the section that
 * does not fit.
 *
 * WEFT_SOURCE_DIR (a compile definition) locates scenes/ and assets/. Runs on cpu:0.
 */
#include "harness.h"

#include <dirent.h>

#include "weft/io.h"
#include "weft/scene.h"
#include "weft/world.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

static wf_status parse_with(const char *text, const char *const *sets, int n, wf_scene **out) {
  wf_scene_overrides ov = {sets, n};
  return wf_scene_parse(text, strlen(text), "t.json", WEFT_SOURCE_DIR "/scenes", &ov, out);
}

static wf_world_desc cpu_desc(void) {
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu";
  return d;
}

/* Every scene in scenes/: the world has one object per emitter and cloth with the counts the scene
 * implies, and steps 2 frames (4 substeps each, to stay fast). Scenes tuned for their own substep
 * count may become unstable at 4: that is reported by wf_world_check as a non-finite state (a
 * WF_ERR_INVALID naming the object), which is accepted here; anything else fails. */
TEST(every_scene_steps) {
  DIR *d = opendir(WEFT_SOURCE_DIR "/scenes");
  REQUIRE(d);
  struct dirent *e;
  int scenes = 0;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/scenes/%s", WEFT_SOURCE_DIR, e->d_name);
    const char *sets[] = {"simulation.substeps=4"};
    wf_scene_overrides ov = {sets, 1};
    wf_scene *sc = NULL;
    wf_status st = wf_scene_load(path, &ov, &sc);
    if (st != WF_OK) {
      TH_FAIL("%s: %s", path, wf_scene_errors());
      continue;
    }
    scenes++;
    wf_world_desc wd = cpu_desc();
    wf_world *w = NULL;
    st = wf_world_create(sc, &wd, &w);
    if (st != WF_OK) {
      TH_FAIL("%s: wf_world_create: %s", path, wf_last_error());
      wf_scene_destroy(sc);
      continue;
    }
    CHECK_EQ_INT(wf_world_object_count(w), sc->emitter_count + sc->cloth_count);
    uint64_t particles = 0;
    for (int i = 0; i < wf_world_object_count(w); i++) {
      wf_world_object o;
      CHECK(wf_world_object_get(w, i, &o) == WF_OK);
      if (i < sc->emitter_count) {
        CHECK(o.kind == WF_WORLD_PARTICLES);
        CHECK(strcmp(o.name, sc->emitters[i].name) == 0);
        CHECK_EQ_INT(o.first, particles);
        CHECK(o.point_count > 0);
        particles += o.point_count;
      } else {
        const wf_scene_cloth *c = &sc->cloths[i - sc->emitter_count];
        CHECK(o.kind == WF_WORLD_CLOTH);
        CHECK(strcmp(o.name, c->name) == 0);
        if (c->is_mesh) {
          CHECK_EQ_INT(o.point_count, c->mesh_vertices);
        } else {
          CHECK_EQ_INT(o.point_count, c->resolution[0] * c->resolution[1]);
          CHECK_EQ_INT(o.triangle_count, 2 * (c->resolution[0] - 1) * (c->resolution[1] - 1));
        }
        CHECK(o.triangles != NULL);
      }
    }
    st = wf_world_step(w, 2); /* the health check may stop it at an unhealthy frame */
    if (st == WF_OK) {
      CHECK_EQ_INT(wf_world_frame(w), 2);
      st = wf_world_check(w);
    }
    if (st != WF_OK) {
      CHECK_EQ_INT(st, WF_ERR_INVALID);
      CHECK(strstr(wf_last_error(), "NaN") || strstr(wf_last_error(), "watchdog"));
      printf("  note: %s at 4 substeps: %s\n", e->d_name, wf_last_error());
    } else {
      wf_world_stats s;
      CHECK(wf_world_stats_get(w, &s) == WF_OK);
      CHECK_EQ_INT(s.particle_count, particles);
      CHECK_NEAR(s.time, 2.0 / sc->simulation.fps, 1e-12);
    }
    wf_world_destroy(w);
    wf_scene_destroy(sc);
  }
  closedir(d);
  CHECK(scenes >= 5);
}

/* Free fall with no colliders: particles (no contacts: spacing > 2 radius) and a spring cloth (a
 * rigid motion leaves every spring at rest length) gain momentum M g t and kinetic energy
 * ½ M (g t)²; the solvers accumulate in float over 10 x 8 substeps, so 1e-4 relative.
 * (An XPBD cloth gains ~0.4% more speed than g t in free fall: reported to the cloth solver's
 * owner; not asserted here.) */
static const char free_fall[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 10, \"devices\": \"cpu\"},"
    " \"particles\": [{\"name\": \"p\", \"center\": [0, 5, 0], \"half_extents\": [0.1, 0.1, 0.1],"
    "  \"radius\": 0.02, \"spacing\": 0.1, \"mass\": 0.5}],"
    " \"cloths\": [{\"name\": \"c\", \"grid\": {\"size\": [1, 1], \"resolution\": [4, 4]},"
    "  \"center\": [0, 8, 0], \"integrator\": \"spring\","
    "  \"material\": {\"mass\": 0.25}}]}";

TEST(free_fall_matches_analytic) {
  wf_scene *sc;
  CHECK_OK(parse_with(free_fall, NULL, 0, &sc));
  wf_world_desc wd = cpu_desc();
  wf_world *w;
  CHECK_OK(wf_world_create(sc, &wd, &w));
  wf_scene_destroy(sc);
  wf_world_stats s0, s;
  CHECK_OK(wf_world_stats_get(w, &s0));
  CHECK_NEAR(s0.kinetic_energy, 0.0, 0.0);
  uint64_t np = s0.particle_count;
  CHECK(np > 0);
  CHECK_EQ_INT(s0.vertex_count, 16);
  double M = 0.5 * (double)np + 0.25 * 16.0;
  CHECK_OK(wf_world_step(w, 10));
  CHECK_OK(wf_world_stats_get(w, &s));
  double t = 10.0 / 60.0, g = 9.81;
  CHECK_NEAR(s.time, t, 1e-12);
  CHECK_NEAR(s.momentum[1], -M * g * t, 1e-4 * M * g * t);
  CHECK_NEAR(s.momentum[0], 0.0, 1e-4 * M * g * t);
  CHECK_NEAR(s.kinetic_energy, 0.5 * M * g * g * t * t, 1e-4 * 0.5 * M * g * g * t * t);
  CHECK_NEAR(s.max_speed, g * t, 1e-4 * g * t);
  /* energy is conserved up to the symplectic integrator's O(dt) drift: dt g² t M per unit */
  double e0 = s0.kinetic_energy + s0.potential_energy, e1 = s.kinetic_energy + s.potential_energy;
  CHECK_NEAR(e1, e0, M * g * g * t / (60.0 * 8.0) * 1.01);
  wf_world_destroy(w);
}

/* Particles on a ground plane next to a kinematic box, and a spring cloth attached to a moving
 * sphere: every kind of state a checkpoint must carry (positions, velocities, clocks that move
 * the colliders). */
static const char resume_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 6, \"frames\": 6, \"devices\": \"cpu\"},"
    " \"materials\": [{\"name\": \"m\", \"stiffness\": 2000, \"restitution\": 0.3}],"
    " \"particles\": [{\"name\": \"pile\", \"center\": [0, 0.2, 0],"
    "  \"half_extents\": [0.1, 0.1, 0.1], \"radius\": 0.02, \"jitter\": 0.002, \"seed\": 3,"
    "  \"material\": \"m\"}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"},"
    "  {\"name\": \"pusher\", \"type\": \"box\", \"center\": [-0.3, 0.1, 0],"
    "   \"half_extents\": [0.05, 0.1, 0.2], \"velocity\": [1, 0, 0]},"
    "  {\"name\": \"hand\", \"type\": \"sphere\", \"center\": [0, 1.6, 0], \"radius\": 0.05,"
    "   \"velocity\": [0, 0, 0.5]}],"
    " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.5, 0.5], \"resolution\": [6, 6]},"
    "  \"center\": [0, 1.2, 0], \"integrator\": \"spring\", \"material\": {\"mass\": 0.01,"
    "  \"stretch_modulus\": 50, \"shear_modulus\": 20, \"bend_rigidity\": 1e-4},"
    "  \"attachments\": [{\"collider\": \"hand\", \"pins\": [\"top-left\"]}], \"pins\": "
    "[\"top-right\"]},"
    "  {\"name\": \"drop\", \"grid\": {\"size\": [0.3, 0.3], \"resolution\": [5, 5]},"
    "  \"center\": [0.5, 0.5, 0], \"rotation\": [-90, 0, 0]}],"
    " \"forces\": {\"wind\": {\"velocity\": [1, 0, 0], \"gust_amplitude\": 0.5,"
    "  \"gust_frequency\": 2}, \"lift\": 0.2}}";

static int same_state(wf_world *a, wf_world *b) {
  int same = 1;
  for (int i = 0; i < wf_world_object_count(a); i++) {
    wf_world_object o;
    wf_world_object_get(a, i, &o);
    size_t bytes = (size_t)o.point_count * 16;
    float(*pa)[4] = malloc(bytes), (*pb)[4] = malloc(bytes), (*va)[4] = malloc(bytes),
    (*vb)[4] = malloc(bytes);
    if (wf_world_object_download(a, i, pa, va) != WF_OK ||
        wf_world_object_download(b, i, pb, vb) != WF_OK || memcmp(pa, pb, bytes) != 0 ||
        memcmp(va, vb, bytes) != 0) {
      TH_FAIL("object %d '%s' differs after resume", i, o.name);
      same = 0;
    }
    free(pa), free(pb), free(va), free(vb);
  }
  return same;
}

/* The forces on the colliders after a resume: the resume scene with its pile 7 cm lower, so that
 * it lands on the ground within the 6 frames; full 6 frames vs 3 + save + load + 3, the last
 * frame's force and torque on every collider bitwise equal. */
TEST(checkpoint_resume_forces_bitwise) {
  char path[256];
  snprintf(path, sizeof path, "%s/weft_test_world_forces_%d.wfck",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  const char *sets[] = {"particles[0].center=[0, 0.13, 0]"};
  wf_scene *sc;
  CHECK_OK(parse_with(resume_scene, sets, 1, &sc));
  REQUIRE(sc);
  wf_world_desc wd = cpu_desc();
  wf_world *full = NULL, *half = NULL, *resumed = NULL;
  CHECK_OK(wf_world_create(sc, &wd, &full));
  CHECK_OK(wf_world_create(sc, &wd, &half));
  CHECK_OK(wf_world_create(sc, &wd, &resumed));
  wf_scene_destroy(sc);
  REQUIRE(full && half && resumed);
  CHECK_OK(wf_world_measure_collider_forces(full, true));
  CHECK_OK(wf_world_measure_collider_forces(resumed, true));
  CHECK_OK(wf_world_step(full, 6));
  CHECK_OK(wf_world_step(half, 3));
  CHECK_OK(wf_world_save(half, path));
  CHECK_OK(wf_world_load_checkpoint(resumed, path));
  CHECK_OK(wf_world_step(resumed, 3));
  CHECK_EQ_INT(wf_world_collider_count(full), 3);
  for (int k = 0; k < wf_world_collider_count(full); k++) {
    double fa[6], fb[6];
    CHECK_OK(wf_world_collider_force(full, k, fa, fa + 3));
    CHECK_OK(wf_world_collider_force(resumed, k, fb, fb + 3));
    if (memcmp(fa, fb, sizeof fa) != 0)
      TH_FAIL("collider '%s': force differs after resume", wf_world_collider_name(full, k));
    if (k == 0) CHECK(fa[1] < -0.1); /* the pile has landed: not a comparison of zeros */
  }
  remove(path);
  wf_world_destroy(full);
  wf_world_destroy(half);
  wf_world_destroy(resumed);
}

TEST(checkpoint_resume_is_bitwise) {
  char path[256];
  snprintf(path, sizeof path, "%s/weft_test_world_%d.wfck",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  wf_scene *sc;
  CHECK_OK(parse_with(resume_scene, NULL, 0, &sc));
  wf_world_desc wd = cpu_desc();
  wf_world *full, *half, *resumed;
  CHECK_OK(wf_world_create(sc, &wd, &full));
  CHECK_OK(wf_world_create(sc, &wd, &half));
  CHECK_OK(wf_world_create(sc, &wd, &resumed));
  wf_scene_destroy(sc);
  CHECK_OK(wf_world_step(full, 6));
  CHECK_OK(wf_world_step(half, 3));
  CHECK_OK(wf_world_save(half, path));
  CHECK_OK(wf_world_load_checkpoint(resumed, path));
  CHECK_EQ_INT(wf_world_frame(resumed), 3);
  CHECK(same_state(half, resumed));
  CHECK_OK(wf_world_step(resumed, 3));
  CHECK_OK(wf_world_check(full));
  CHECK(same_state(full, resumed));
  /* the state did change over the last 3 frames: the comparison is not vacuous */
  wf_world_stats a, b;
  CHECK_OK(wf_world_stats_get(half, &a));
  CHECK_OK(wf_world_stats_get(full, &b));
  CHECK(a.kinetic_energy != b.kinetic_energy);
  wf_world_destroy(full);
  wf_world_destroy(half);
  wf_world_destroy(resumed);

  /* a world of another scene (one more cloth vertex row) refuses it, naming the mismatch */
  const char *sets[] = {"cloths[0].grid.resolution=[6, 7]"};
  CHECK_OK(parse_with(resume_scene, sets, 1, &sc));
  wf_world *other;
  CHECK_OK(wf_world_create(sc, &wd, &other));
  wf_scene_destroy(sc);
  CHECK_ERROR(wf_world_load_checkpoint(other, path), WF_ERR_INVALID,
              "cloths[0].grid.resolution[1]: 6 in the checkpoint, 7 here", "nothing was restored");
  /* accepting the change cannot make the state fit: the sizes still refuse it */
  CHECK_ERROR(wf_world_load_checkpoint_with_changes(other, path), WF_ERR_INVALID, "cloth/0/pos",
              "not from this scene");
  wf_world_destroy(other);
  remove(path);
}

/* Errors name the object; a device list splits the particles and keeps the cloth on the first
 * device, which coupling (the default) cannot do: that is refused naming both keys. */
TEST(errors_name_the_object) {
  wf_scene *sc;
  const char *sets[] = {"simulation.devices=cuda:7"};
  CHECK_OK(parse_with(free_fall, sets, 1, &sc));
  wf_world *w = (wf_world *)&th_fails;
  CHECK_ERROR(wf_world_create(sc, NULL, &w), WF_ERR_DEVICE, "cuda:7");
  CHECK(w == NULL);
  wf_scene_destroy(sc);
  const char *two[] = {"simulation.devices=[\"cpu:0\", \"cpu:1\"]", "simulation.coupling=false"};
  CHECK_OK(parse_with(free_fall, two, 1, &sc));
  CHECK_ERROR(wf_world_create(sc, NULL, &w), WF_ERR_INVALID, "simulation.coupling",
              "simulation.devices");
  wf_scene_destroy(sc);
  CHECK_OK(parse_with(free_fall, two, 2, &sc));
  CHECK_OK(wf_world_create(sc, NULL, &w));
  CHECK(strcmp(wf_device_name(wf_world_device(w)), "cpu:0") == 0);
  CHECK_EQ_INT(wf_world_device_count(w), 2);
  wf_world_destroy(w);
  wf_scene_destroy(sc);
  /* an XPBD cloth with more than 64 colliders: the cloth solver's limit, named */
  char big[8192];
  int n = snprintf(big, sizeof big, "{\"colliders\": [");
  for (int i = 0; i < 65; i++)
    n += snprintf(big + n, sizeof big - (size_t)n, "%s{\"type\": \"plane\", \"offset\": %d}",
                  i ? "," : "", -i - 1);
  snprintf(big + n, sizeof big - (size_t)n,
           "], \"simulation\": {\"devices\": \"cpu\"}, \"cloths\": [{\"name\": \"flag\"}]}");
  CHECK_OK(parse_with(big, NULL, 0, &sc));
  CHECK_ERROR(wf_world_create(sc, NULL, &w), WF_ERR_INVALID, "cloths[0] 'flag'");
  wf_scene_destroy(sc);
}

/* One grain (0.5 kg: radius 0.05 m, 954.93 kg/m^3) at rest on the ground plane, k = 1e4 N/m. */
static const char grain_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 64, \"frames\": 180, \"devices\": \"cpu\"},"
    " \"materials\": [{\"name\": \"m\", \"stiffness\": 10000, \"restitution\": 0}],"
    " \"particles\": [{\"name\": \"grain\", \"center\": [0, 0.05, 0],"
    "  \"half_extents\": [0.05, 0.05, 0.05], \"radius\": 0.05, \"spacing\": 0.1,"
    "  \"density\": 954.93, \"material\": \"m\"}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\", \"restitution\": 0}]}";

/* The grain's height after 0.5 s, then (lift > 0) the ground posed at y = lift, then 1.5 s. */
static char pose_error[512]; /* the pose's message, before later calls replace it */
static double grain_rest(const char *const *sets, int n, double lift, wf_status *pose_status) {
  wf_scene *sc;
  wf_world *w;
  if (parse_with(grain_scene, sets, n, &sc) != WF_OK) return NAN;
  wf_world_desc wd = cpu_desc();
  wf_status st = wf_world_create(sc, &wd, &w);
  wf_scene_destroy(sc);
  if (st != WF_OK) return NAN;
  float pos[1][4] = {{NAN, NAN, NAN, NAN}};
  st = wf_world_step(w, 30);
  wf_collider_pose pose = {.time = 0.5f, .position = {0, (float)lift, 0}};
  if (st == WF_OK && lift > 0.0) {
    *pose_status = wf_world_set_collider_pose(w, 0, &pose);
    snprintf(pose_error, sizeof pose_error, "%s", *pose_status ? wf_last_error() : "");
  }
  if (st == WF_OK) st = wf_world_step(w, 90);
  if (st == WF_OK) st = wf_world_object_download(w, 0, pos, NULL);
  wf_world_destroy(w);
  return st == WF_OK ? pos[0][1] : NAN;
}

/* A pose set between frames reaches the world's particles: the grain's rest height (r - m g / k,
 * critically damped, settled far below 1e-6 m within 1.5 s) moves by exactly the lift, up to the
 * float rounding of heights (~1e-8 m). With the penetration watchdog on, the pose is refused
 * naming simulation.max_penetration. */
TEST(collider_pose_between_frames) {
  wf_status pst = WF_OK;
  double base = grain_rest(NULL, 0, 0.0, &pst);
  double lifted = grain_rest(NULL, 0, 0.03, &pst);
  CHECK_OK(pst);
  REQUIRE(isfinite(base) && isfinite(lifted)); /* NaN: the scene failed; CHECK_NEAR passes NaN */
  CHECK_NEAR(base, 0.05 - 0.5 * 9.81 / 1e4, 1e-5);
  CHECK_NEAR(lifted - base, 0.03, 1e-6);
  const char *watch[] = {"simulation.max_penetration=0.01"};
  (void)grain_rest(watch, 1, 0.03, &pst);
  CHECK(pst == WF_ERR_UNSUPPORTED);
  CHECK(strstr(pose_error, "simulation.max_penetration") != NULL);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(every_scene_steps),
                                  TH_TEST(free_fall_matches_analytic),
                                  TH_TEST(checkpoint_resume_is_bitwise),
                                  TH_TEST(checkpoint_resume_forces_bitwise),
                                  TH_TEST(errors_name_the_object),
                                  TH_TEST(collider_pose_between_frames)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
