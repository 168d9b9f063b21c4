/* A world far from the origin (docs/precision.md): cloths and particles keep their positions
 * relative to their own origins, and the engine keeps it so. Every case runs on two scenes: cloths
 * (far_scene) and a granular pile (far_grains: particles of two emitters on a ground and a
 * sphere, with friction and rolling resistance).
 *
 *  - checkpoint: a scene at (1000, 50, -1000) resumes bitwise (6 frames vs 3 + save + load + 3):
 *    the checkpoint holds each solver's positions relative to its origin and the origin; world
 *    positions rounded to float (6e-5 m there) would not. A checkpoint whose origin differs from
 *    the world's cloth (or particles) is refused.
 *  - health: the penetration check compares each partition's positions with the colliders in its
 *    frame. The scene's ground plane at y = 50 is 51 m below the cloth's origin; compared with
 *    the cloth's local positions untransformed it would report every vertex 50 m deep.
 *  - readback: the ring hands out world positions, bitwise those of wf_world_object_download.
 *  - split: the same scene over 3 CPU devices gives the bits of one.
 *
 * Runs on cpu:0 (and cpu:0..2).
 */
#include "harness.h"

#include "weft/io.h"
#include "weft/scene.h"
#include "weft/world.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

/* A sheet dropped on a sphere over a ground plane, and a flag attached to a moving sphere, all
 * around (1000, 50, -1000); max_penetration on. */
static const char far_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 6, \"devices\": \"cpu\","
    "  \"max_penetration\": 0.02},"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\", \"offset\": 50},"
    "  {\"name\": \"ball\", \"type\": \"sphere\", \"center\": [1000, 50.5, -1000],"
    "   \"radius\": 0.25, \"friction\": 0.5},"
    "  {\"name\": \"hand\", \"type\": \"sphere\", \"center\": [1002, 51.5, -1000],"
    "   \"radius\": 0.05, \"velocity\": [0, 0, 0.5]}],"
    " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.6, 0.6], \"resolution\": [7, 7]},"
    "  \"center\": [1000, 50.8, -1000], \"material\": {\"mass\": 0.01}},"
    "  {\"name\": \"flag\", \"grid\": {\"size\": [0.5, 0.5], \"resolution\": [6, 6]},"
    "  \"center\": [1002, 51.2, -1000], \"integrator\": \"xpbd\","
    "  \"attachments\": [{\"collider\": \"hand\", \"pins\": [\"top-left\"]}],"
    "  \"pins\": [\"top-right\"]}],"
    " \"forces\": {\"wind\": {\"velocity\": [1, 0, 0], \"gust_amplitude\": 0.5,"
    "  \"gust_frequency\": 2}}}";

/* Grains poured from two emitters onto a ground plane at y = 50 and a sphere, around
 * (1000, 50, -1000): DEM with friction, rolling resistance and contact history. */
static const char far_grains[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 6, \"devices\": \"cpu\","
    "  \"max_penetration\": 0.05},"
    " \"materials\": [{\"name\": \"grit\", \"friction\": 0.6, \"rolling_friction\": 0.1}],"
    " \"particles\": [{\"name\": \"pile\", \"center\": [1000.25, 50.5, -1000],"
    "   \"half_extents\": [0.25, 0.25, 0.25], \"radius\": 0.05, \"spacing\": 0.125,"
    "   \"jitter\": 0.01, \"seed\": 3, \"material\": \"grit\"},"
    "  {\"name\": \"drop\", \"center\": [999.5, 51.25, -1000], \"half_extents\": [0.125, 0.125, "
    "0.125],"
    "   \"radius\": 0.05, \"spacing\": 0.125, \"velocity\": [1, 0, 0], \"material\": \"grit\"}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\", \"offset\": 50},"
    "  {\"name\": \"ball\", \"type\": \"sphere\", \"center\": [1000, 50.1, -1000.5],"
    "   \"radius\": 0.3, \"friction\": 0.5}]}";

static const char *scene_text = far_scene;

static wf_world *make_world(const char *devices) {
  wf_scene *sc = NULL;
  wf_world *w = NULL;
  if (wf_scene_parse(scene_text, strlen(scene_text), "far.json", WEFT_SOURCE_DIR "/scenes", NULL,
                     &sc) != WF_OK) {
    TH_FAIL("parse: %s", wf_last_error());
    return NULL;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = devices;
  if (wf_world_create(sc, &d, &w) != WF_OK) TH_FAIL("create: %s", wf_last_error());
  wf_scene_destroy(sc);
  return w;
}

/* Every object's state, downloaded (world positions), as one array; *bytes its size. */
static float *world_state(wf_world *w, size_t *bytes) {
  size_t total = 0;
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    total += (size_t)o.point_count * 32;
  }
  float *s = malloc(total + 16);
  size_t at = 0;
  for (int i = 0; s && i < wf_world_object_count(w); i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    float(*p)[4] = (float(*)[4])(s + at / 4);
    if (wf_world_object_download(w, i, p, p + o.point_count) != WF_OK) {
      TH_FAIL("download: %s", wf_last_error());
      free(s);
      return NULL;
    }
    at += (size_t)o.point_count * 32;
  }
  *bytes = total;
  return s;
}

static void checkpoint_case(bool grains) {
  scene_text = grains ? far_grains : far_scene;
  char path[256];
  snprintf(path, sizeof path, "%s/weft_test_origin_%d.wfck",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  wf_world *full = make_world("cpu"), *half = make_world("cpu"), *resumed = make_world("cpu");
  REQUIRE(full && half && resumed);
  CHECK_OK(wf_world_step(full, 6));
  CHECK_OK(wf_world_step(half, 3));
  CHECK_OK(wf_world_save(half, path));
  CHECK_OK(wf_world_load_checkpoint(resumed, path));
  CHECK_OK(wf_world_step(resumed, 3));
  CHECK_OK(wf_world_check(full)); /* healthy: no false penetration of the far ground */
  CHECK_OK(wf_world_check(resumed));
  size_t na = 0, nb = 0, nh = 0;
  float *a = world_state(full, &na), *b = world_state(resumed, &nb), *h = world_state(half, &nh);
  REQUIRE(a && b && h && na == nb && na == nh);
  CHECK(memcmp(a, b, na) == 0);
  CHECK(memcmp(a, h, na) != 0); /* the last 3 frames moved it: the comparison is not vacuous */
  /* world positions: those of a scene at 1000 m (the sheet hangs from y 51.1 and falls; the
   * pile's first grain starts at (1000.0625, 50.3125, -1000.1875)) */
  printf("  the %s's first point at (%.5f, %.5f, %.5f)\n", grains ? "pile" : "sheet", a[0], a[1],
         a[2]);
  CHECK(a[0] > 999.0f && a[0] < 1001.0f && a[1] > 50.0f && a[1] < 51.2f);
  free(a), free(b), free(h);
  wf_world_destroy(full), wf_world_destroy(half), wf_world_destroy(resumed);

  /* a world whose sheet has another origin refuses the checkpoint, naming it */
  wf_scene *sc;
  const char *sets[] = {grains ? "particles[0].center=[1003.25, 50.5, -1000]"
                               : "cloths[0].center=[1003, 50.8, -1000]"};
  wf_scene_overrides ov = {sets, 1};
  CHECK_OK(wf_scene_parse(scene_text, strlen(scene_text), "far.json", WEFT_SOURCE_DIR "/scenes",
                          &ov, &sc));
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu";
  wf_world *other = NULL;
  CHECK_OK(wf_world_create(sc, &d, &other));
  wf_scene_destroy(sc);
  CHECK_ERROR(wf_world_load_checkpoint(other, path), WF_ERR_INVALID,
              grains ? "particles[0].center[0]"
                     : "cloths[0].center[0]: 1000 in the checkpoint, 1003 here");
  /* accepted, the positions still cannot be read relative to another origin */
  CHECK_ERROR(wf_world_load_checkpoint_with_changes(other, path), WF_ERR_INVALID,
              grains ? "particles" : "sheet", "origin", "not from this scene");
  wf_world_destroy(other);
  remove(path);
}

TEST(far_checkpoint_resumes_bitwise) { checkpoint_case(false); }
TEST(far_grains_checkpoint_resumes_bitwise) { checkpoint_case(true); }

/* The readback ring's frames hold world positions, bitwise wf_world_object_download's. */
static void readback_case(bool grains) {
  scene_text = grains ? far_grains : far_scene;
  wf_world *w = make_world("cpu");
  REQUIRE(w);
  wf_world_readback *rb = NULL;
  CHECK_OK(wf_world_readback_create(w, NULL, &rb));
  CHECK_OK(wf_world_step(w, 2));
  CHECK_OK(wf_world_readback_push(rb));
  CHECK_OK(wf_world_readback_wait_frames(rb, 0));
  wf_world_frame_view v;
  wf_status st = WF_NOT_READY;
  for (int tries = 0; tries < 1000 && st == WF_NOT_READY; tries++) {
    st = wf_world_readback_latest(rb, &v);
    if (st == WF_NOT_READY) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  CHECK_OK(st);
  for (int i = 0; i < v.object_count; i++) {
    wf_world_object o;
    CHECK_OK(wf_world_object_get(w, i, &o));
    float(*p)[4] = malloc((size_t)o.point_count * 16);
    REQUIRE(p);
    CHECK_OK(wf_world_object_download(w, i, p, NULL));
    if (memcmp(p, v.pos[i], (size_t)o.point_count * 16) != 0)
      TH_FAIL("object %d '%s': the readback differs from the download", i, o.name);
    free(p);
  }
  wf_world_readback_release(rb, v.slot);
  wf_world_readback_destroy(rb);
  wf_world_destroy(w);
}

TEST(far_readback_world_positions) { readback_case(false); }
TEST(far_grains_readback_world_positions) { readback_case(true); }

/* Over 3 CPU devices (each cloth split in 3): the bits of one device. */
static void split_case(bool grains) {
  scene_text = grains ? far_grains : far_scene;
  wf_world *one = make_world("cpu"), *three = make_world("cpu:0,cpu:1,cpu:2");
  REQUIRE(one && three);
  CHECK_OK(wf_world_step(one, 4));
  CHECK_OK(wf_world_step(three, 4));
  CHECK_OK(wf_world_check(three));
  size_t na = 0, nb = 0;
  float *a = world_state(one, &na), *b = world_state(three, &nb);
  REQUIRE(a && b && na == nb);
  CHECK(memcmp(a, b, na) == 0);
  free(a), free(b);
  wf_world_destroy(one), wf_world_destroy(three);
}

TEST(far_split_bitwise) { split_case(false); }
TEST(far_grains_split_bitwise) { split_case(true); }

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(far_checkpoint_resumes_bitwise),
                                  TH_TEST(far_readback_world_positions),
                                  TH_TEST(far_split_bitwise),
                                  TH_TEST(far_grains_checkpoint_resumes_bitwise),
                                  TH_TEST(far_grains_readback_world_positions),
                                  TH_TEST(far_grains_split_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
