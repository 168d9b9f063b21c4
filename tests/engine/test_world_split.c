/* A world on several devices (weft/world.h: a device list splits the particles and the cloths
 * over the devices): through the world API the state after N frames is bitwise that
 * of the same scene on cpu:0, for 2, 3 and 4 partitions; with particles and a cloth; across a
 * checkpoint saved on 3 devices and resumed on 3 or on 1; the health watchdog names the same
 * particle, frame and value as on one device, and the last-good checkpoints are the same bytes;
 * the readback ring delivers what the downloads return; device lists that name no device fail
 * naming it. Tolerance everywhere: none (memcmp), since the split solver keeps every particle's
 * neighbour order (docs/multi-device.md).
 *
 * The scenes have a moving (kinematic) collider, whose position follows the solver's clock, so a
 * partition with a wrong clock shows up in the state. CPU devices only (cpu:0..3 of the harness),
 * so it runs in CI. WEFT_SOURCE_DIR (a compile definition) locates scenes/.
 */
#include "harness.h"

#include "weft/io.h"
#include "weft/scene.h"
#include "weft/world.h"

#define WORLD_SCENE_NAME "split.json"
#include "world_split_util.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

/* Two blocks of grains thrown at each other over the ground while a sphere sweeps through them:
 * ~800 particles, contacts across every slab boundary. */
static const char particles_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 12, \"devices\": \"cpu\","
    "  \"deterministic\": true},"
    " \"materials\": [{\"name\": \"sand\", \"stiffness\": 20000, \"restitution\": 0.3,"
    "  \"friction\": 0.5}],"
    " \"particles\": ["
    "  {\"name\": \"left\", \"center\": [-0.3, 0.25, 0], \"half_extents\": [0.25, 0.1, 0.1],"
    "   \"radius\": 0.02, \"spacing\": 0.04, \"jitter\": 0.002, \"seed\": 1,"
    "   \"velocity\": [1, 0, 0], \"material\": \"sand\"},"
    "  {\"name\": \"right\", \"center\": [0.3, 0.25, 0], \"half_extents\": [0.25, 0.1, 0.1],"
    "   \"radius\": 0.02, \"spacing\": 0.04, \"jitter\": 0.002, \"seed\": 2,"
    "   \"velocity\": [-1, 0, 0], \"material\": \"sand\"}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"},"
    "  {\"name\": \"paddle\", \"type\": \"sphere\", \"center\": [0, 0.1, -0.3], \"radius\": 0.1,"
    "   \"velocity\": [0, 0, 1.5]}]}";

/* The same grains and a spring cloth in gusty wind, not coupled to them. */
static const char mixed_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 12, \"devices\": \"cpu\","
    "  \"deterministic\": true, \"coupling\": false},"
    " \"forces\": {\"wind\": {\"velocity\": [2, 0, 0], \"gust_amplitude\": 1,"
    "  \"gust_frequency\": 2}},"
    " \"particles\": ["
    "  {\"name\": \"left\", \"center\": [-0.3, 0.25, 0], \"half_extents\": [0.25, 0.1, 0.1],"
    "   \"radius\": 0.02, \"spacing\": 0.04, \"jitter\": 0.002, \"seed\": 1,"
    "   \"velocity\": [1, 0, 0]},"
    "  {\"name\": \"right\", \"center\": [0.3, 0.25, 0], \"half_extents\": [0.25, 0.1, 0.1],"
    "   \"radius\": 0.02, \"spacing\": 0.04, \"jitter\": 0.002, \"seed\": 2,"
    "   \"velocity\": [-1, 0, 0]}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"},"
    "  {\"name\": \"paddle\", \"type\": \"sphere\", \"center\": [0, 0.1, -0.3], \"radius\": 0.1,"
    "   \"velocity\": [0, 0, 1.5]}],"
    " \"cloths\": [{\"name\": \"flag\", \"grid\": {\"size\": [0.4, 0.3], \"resolution\": [8, 6]},"
    "  \"center\": [0, 0.8, 0.5], \"pins\": [\"left\"]}]}";

/* Runs text on `device` (NULL: the scene's devices, with sets) for 12 frames and compares with
 * ref; checks the world's devices and what each runs. */
static void compare_with(const char *text, const char *const *sets, int n_sets, const char *device,
                         int n_devices, const float *ref, size_t ref_bytes,
                         const wf_world_stats *ref_stats) {
  wf_world *w = NULL;
  if (make_world(text, sets, n_sets, device, &w) != WF_OK) return;
  char what[128];
  snprintf(what, sizeof what, "%d devices (%s)", n_devices, device ? device : sets[0]);
  CHECK_EQ_INT(wf_world_device_count(w), n_devices);
  CHECK(wf_world_device(w) == wf_world_device_at(w, 0));
  if (step(w, 12) == WF_OK) {
    size_t bytes = 0;
    float *s = world_state(w, &bytes);
    CHECK_EQ_INT(bytes, ref_bytes);
    if (s && bytes == ref_bytes) same_state(ref, s, bytes, what);
    free(s);
    wf_world_stats st;
    CHECK_OK(wf_world_stats_get(w, &st));
    CHECK(st.frame == 12 && st.particle_count == ref_stats->particle_count);
    /* the same numbers summed in the same order */
    CHECK(memcmp(&st.kinetic_energy, &ref_stats->kinetic_energy, sizeof(double)) == 0);
    CHECK(memcmp(st.momentum, ref_stats->momentum, sizeof st.momentum) == 0);
    /* every device owns particles, the ghosts exist, the counts add up; every cloth is split:
       each device owns some of its vertices and holds ghosts, none is whole */
    uint64_t owned = 0, ghosts = 0, vertices = 0;
    int n_cloths = wf_world_object_count(w) - 2;
    for (int i = 0; i < n_devices; i++) {
      wf_world_placement p;
      CHECK_OK(wf_world_placement_get(w, i, &p));
      CHECK(p.split && p.device == wf_world_device_at(w, i));
      CHECK(p.particles > 0);
      CHECK(p.device_bytes > 0);
      owned += p.particles, ghosts += p.ghosts;
      vertices += p.vertices;
      CHECK_EQ_INT(p.cloths, n_cloths);
      CHECK_EQ_INT(p.whole_cloths, 0);
      CHECK(n_cloths == 0 || (p.cloth_ghosts > 0 && p.cloth_bytes > 0));
    }
    CHECK_EQ_INT(owned, st.particle_count);
    CHECK(ghosts > 0);
    CHECK_EQ_INT(vertices, st.vertex_count);
    wf_world_placement p;
    CHECK_STATUS(wf_world_placement_get(w, n_devices, &p), WF_ERR_INVALID);
  }
  wf_world_destroy(w);
}

static void split_equals_one_device(const char *text) {
  wf_world *ref = NULL;
  if (make_world(text, NULL, 0, "cpu:0", &ref) != WF_OK) return;
  CHECK_EQ_INT(wf_world_device_count(ref), 1);
  size_t bytes = 0;
  float *start = world_state(ref, &bytes);
  if (step(ref, 12) != WF_OK) {
    wf_world_destroy(ref);
    free(start);
    return;
  }
  float *s = world_state(ref, &bytes);
  wf_world_stats rs;
  CHECK_OK(wf_world_stats_get(ref, &rs));
  wf_world_destroy(ref);
  REQUIRE(s && start);
  CHECK(memcmp(s, start, bytes) != 0); /* not vacuous: the grains moved */
  free(start);
  /* a comma list, the scene's list, and "all" (the harness's 4 CPU devices, no CUDA) */
  compare_with(text, NULL, 0, "cpu:0,cpu:1", 2, s, bytes, &rs);
  const char *three[] = {"simulation.devices=[\"cpu:0\", \"cpu:1\", \"cpu:2\"]"};
  compare_with(text, three, 1, NULL, 3, s, bytes, &rs);
  compare_with(text, NULL, 0, "all", 4, s, bytes, &rs);
  free(s);
}

/* Particles alone on 1, 2, 3 and 4 devices. */
TEST(particles_split_is_bitwise) { split_equals_one_device(particles_text); }

/* Particles and a cloth (in gusty wind) on 1, 2, 3 and 4 devices. */
TEST(particles_and_cloth_split_is_bitwise) { split_equals_one_device(mixed_text); }

/* A checkpoint saved at frame 5 on 3 devices resumes bitwise on 3 devices and on 1, and is the
 * very file a 1-device run saves at frame 5. */
TEST(checkpoint_resume_on_three_devices) {
  char path3[600], path1[600];
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path3, sizeof path3, "%s/weft_split_%d_3.wfck", base, (int)getpid());
  snprintf(path1, sizeof path1, "%s/weft_split_%d_1.wfck", base, (int)getpid());
  const char *three = "cpu:0,cpu:1,cpu:2";
  wf_world *full = NULL, *a = NULL, *b = NULL, *one = NULL;
  if (make_world(mixed_text, NULL, 0, three, &full) != WF_OK) return;
  size_t bytes = 0, nb = 0;
  float *ref = step(full, 12) == WF_OK ? world_state(full, &bytes) : NULL;
  wf_world_destroy(full);
  REQUIRE(ref);
  /* save at 5 on 3 devices, and on 1 */
  if (make_world(mixed_text, NULL, 0, three, &a) == WF_OK && step(a, 5) == WF_OK)
    CHECK_OK(wf_world_save(a, path3));
  if (make_world(mixed_text, NULL, 0, "cpu:0", &one) == WF_OK && step(one, 5) == WF_OK)
    CHECK_OK(wf_world_save(one, path1));
  size_t n3 = 0, n1 = 0;
  char *f3 = th_read_file(path3, &n3), *f1 = th_read_file(path1, &n1);
  CHECK(f3 && f1 && n3 == n1 && n3 > 0 && memcmp(f3, f1, n3) == 0);
  free(f3), free(f1);
  /* the world that saved goes on; a new 3-device world resumes; a 1-device world resumes */
  if (a && step(a, 7) == WF_OK) {
    float *s = world_state(a, &nb);
    CHECK(s && nb == bytes && same_state(ref, s, bytes, "3 devices, saved at 5 and going on"));
    free(s);
  }
  wf_world_destroy(a);
  wf_world_destroy(one);
  const char *who[] = {three, "cpu:0"};
  for (int k = 0; k < 2; k++) {
    if (make_world(mixed_text, NULL, 0, who[k], &b) != WF_OK) continue;
    CHECK(step(b, 2) == WF_OK); /* somewhere else first: the load must replace it all */
    CHECK_OK(wf_world_load_checkpoint(b, path3));
    CHECK_EQ_INT(wf_world_frame(b), 5);
    if (step(b, 7) == WF_OK) {
      float *s = world_state(b, &nb);
      char what[96];
      snprintf(what, sizeof what, "resumed at 5 on %s", who[k]);
      CHECK(s && nb == bytes && same_state(ref, s, bytes, what));
      free(s);
    }
    wf_world_destroy(b);
    b = NULL;
  }
  free(ref);
  remove(path3), remove(path1);
}

/* One grain thrown down in the last slab goes faster than simulation.max_speed: on 3 devices the
 * health check names the same particle (by global id), frame, value and message as on one, and
 * the last-good checkpoints are the same bytes. */
TEST(health_names_the_particle_on_split) {
  static const char text[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"devices\": \"cpu\", \"max_speed\": 7},"
      " \"particles\": ["
      "  {\"name\": \"bed\", \"center\": [0, 0.1, 0], \"half_extents\": [0.5, 0.06, 0.1],"
      "   \"radius\": 0.02, \"spacing\": 0.04, \"jitter\": 0.002, \"seed\": 4},"
      "  {\"name\": \"bullet\", \"center\": [0.4, 3, 0], \"half_extents\": [0.025, 0.025, 0.025],"
      "   \"radius\": 0.02, \"spacing\": 0.04, \"velocity\": [0, -6, 0]}],"
      " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}]}";
  const char *devs[] = {"cpu:0", "cpu:0,cpu:1,cpu:2"};
  wf_world_health h[2];
  char msg[2][1024], path[2][600];
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  uint32_t bullet = 0;
  for (int k = 0; k < 2; k++) {
    snprintf(path[k], sizeof path[k], "%s/weft_split_good_%d_%d.wfck", base, (int)getpid(), k);
    wf_world *w = NULL;
    if (make_world(text, NULL, 0, devs[k], &w) != WF_OK) return;
    wf_world_object o;
    CHECK_OK(wf_world_object_get(w, 1, &o));
    CHECK_EQ_INT(o.point_count, 1);
    bullet = o.first;
    wf_status st = WF_OK;
    for (int f = 0; f < 60 && st == WF_OK; f++)
      st = wf_world_step(w, 1);
    if (st == WF_OK) st = wf_world_check(w);
    CHECK_ERROR(st, WF_ERR_INVALID, "particles 'bullet'", "faster than", "max_speed");
    CHECK_OK(wf_world_health_get(w, true, &h[k]));
    snprintf(msg[k], sizeof msg[k], "%s", h[k].message);
    h[k].message = msg[k];
    CHECK_EQ_INT(h[k].quantity, WF_HEALTH_SPEED);
    CHECK_EQ_INT(h[k].object, 1);
    CHECK_EQ_INT(h[k].index, bullet);
    CHECK(h[k].value > 7.0);
    int64_t good = -1;
    CHECK_OK(wf_world_save_last_good(w, path[k], &good));
    CHECK_EQ_INT(good, h[k].frame - 1);
    wf_world_destroy(w);
  }
  CHECK_EQ_INT(h[1].frame, h[0].frame);
  CHECK(h[0].frame > 1);
  CHECK(memcmp(&h[1].value, &h[0].value, sizeof(double)) == 0);
  if (strcmp(msg[0], msg[1]) != 0) TH_FAIL("messages differ:\n  %s\n  %s", msg[0], msg[1]);
  size_t n0 = 0, n1 = 0;
  char *f0 = th_read_file(path[0], &n0), *f1 = th_read_file(path[1], &n1);
  CHECK(f0 && f1 && n0 == n1 && n0 > 0 && memcmp(f0, f1, n0) == 0);
  free(f0), free(f1);
  remove(path[0]), remove(path[1]);
}

/* The readback ring of a 2-device world delivers, frame after frame, the positions and velocities
 * the downloads return. */
TEST(readback_on_split) {
  wf_world *w = NULL;
  if (make_world(mixed_text, NULL, 0, "cpu:0,cpu:1", &w) != WF_OK) return;
  wf_world_readback_desc rd = wf_world_readback_desc_default();
  rd.velocities = true;
  wf_world_readback *rb = NULL;
  CHECK_OK(wf_world_readback_create(w, &rd, &rb));
  int n = wf_world_object_count(w);
  for (int f = 1; f <= 4; f++) {
    CHECK_OK(wf_world_readback_begin_frame(rb));
    CHECK_OK(wf_world_step(w, 1));
    CHECK_OK(wf_world_readback_push(rb));
    CHECK_OK(wf_world_readback_wait_frames(rb, 0));
    wf_world_frame_view v;
    wf_status st = WF_NOT_READY;
    for (int tries = 0; tries < 2000 && st == WF_NOT_READY; tries++) {
      st = wf_world_readback_latest(rb, &v);
      if (st == WF_NOT_READY) th_sleep_ms(1);
    }
    CHECK_OK(st);
    CHECK_EQ_INT(v.frame, f);
    CHECK_EQ_INT(v.object_count, n);
    for (int i = 0; i < n; i++) {
      wf_world_object o;
      CHECK_OK(wf_world_object_get(w, i, &o));
      float(*pos)[4] = malloc((size_t)o.point_count * 16 + 16);
      float(*vel)[4] = malloc((size_t)o.point_count * 16 + 16);
      CHECK_OK(wf_world_object_download(w, i, pos, vel));
      char what[64];
      snprintf(what, sizeof what, "frame %d, object %d positions", f, i);
      same_state((const float *)pos, (const float *)v.pos[i], (size_t)o.point_count * 16, what);
      if (o.kind == WF_WORLD_PARTICLES) {
        REQUIRE(v.vel[i]);
        snprintf(what, sizeof what, "frame %d, object %d velocities", f, i);
        same_state((const float *)vel, (const float *)v.vel[i], (size_t)o.point_count * 16, what);
      }
      free(pos), free(vel);
    }
    wf_world_readback_release(rb, v.slot);
  }
  wf_world_readback_destroy(rb);
  wf_world_destroy(w);
}

/* A device list naming a device that does not exist, or malformed, fails naming it. */
TEST(device_lists_name_the_device) {
  wf_world *w = (wf_world *)&th_fails;
  wf_scene *sc = NULL;
  CHECK_OK(wf_scene_parse(particles_text, strlen(particles_text), "t.json", ".", NULL, &sc));
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu:0,cpu:9";
  CHECK_ERROR(wf_world_create(sc, &d, &w), WF_ERR_DEVICE, "'cpu:9'");
  CHECK(w == NULL);
  d.device = "cpu:0,,cpu:1";
  CHECK_ERROR(wf_world_create(sc, &d, &w), WF_ERR_INVALID, "cpu:0,,cpu:1", "commas");
  d.device = "cpu:1,";
  CHECK_ERROR(wf_world_create(sc, &d, &w), WF_ERR_INVALID, "commas");
  wf_scene_destroy(sc);
  const char *sets[] = {"simulation.devices=[\"cpu:0\", \"cpu:7\"]"};
  wf_scene_overrides ov = {sets, 1};
  CHECK_OK(wf_scene_parse(particles_text, strlen(particles_text), "t.json", ".", &ov, &sc));
  CHECK_ERROR(wf_world_create(sc, NULL, &w), WF_ERR_DEVICE, "simulation.devices", "'cpu:7'");
  CHECK(w == NULL);
  wf_scene_destroy(sc);
}

/* The bundled scene that lists two CPU devices runs split, and equals its run on cpu:0. */
TEST(bundled_split_scene) {
  wf_scene *sc = NULL;
  CHECK_OK(wf_scene_load(WEFT_SOURCE_DIR "/scenes/split_pile.json", NULL, &sc));
  REQUIRE(sc);
  CHECK(sc->simulation.device_count > 1);
  wf_world *w[2] = {NULL, NULL};
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu:0";
  wf_status st = wf_world_create(sc, NULL, &w[0]);
  if (st == WF_OK) st = wf_world_create(sc, &d, &w[1]);
  wf_scene_destroy(sc);
  if (st != WF_OK) {
    TH_FAIL("wf_world_create: %s", wf_last_error());
    wf_world_destroy(w[0]);
    return;
  }
  CHECK(wf_world_device_count(w[0]) > 1);
  float *s[2] = {NULL, NULL};
  size_t bytes[2] = {0, 0};
  for (int k = 0; k < 2; k++)
    if (step(w[k], 3) == WF_OK) s[k] = world_state(w[k], &bytes[k]);
  CHECK(s[0] && s[1] && bytes[0] == bytes[1] && same_state(s[1], s[0], bytes[0], "split_pile"));
  free(s[0]), free(s[1]);
  wf_world_destroy(w[0]), wf_world_destroy(w[1]);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(particles_split_is_bitwise),
                                  TH_TEST(particles_and_cloth_split_is_bitwise),
                                  TH_TEST(checkpoint_resume_on_three_devices),
                                  TH_TEST(health_names_the_particle_on_split),
                                  TH_TEST(readback_on_split),
                                  TH_TEST(device_lists_name_the_device),
                                  TH_TEST(bundled_split_scene)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
