/* Changing a running world between frames (weft/world.h: wf_world_params_*, wf_world_drag_*,
 * engine/world_interact.c), on cpu:0.
 *
 * - params: gravity set to the Moon's between frames: a free particle's velocity after the next
 *   frame is 1.62 m/s² x 1/60 s (symplectic Euler with constant gravity is exact for velocity;
 *   float accumulation over 8 substeps: 1e-5 relative); bad values are refused naming the field.
 * - drag: a free particle (gravity 0, no contacts) pulled by the default spring (2 Hz on its own
 *   mass, critically damped) follows the backward-Euler recurrence of world_interact.c,
 *     v' = (v + h ω² (t − x)) / (1 + 2 h ω + h² ω²),  x' = x + h v',
 *   computed here in double: 30 frames within 1e-5 m (the solver keeps x and v in float, ~1e-7
 *   relative a frame over 30 frames of a 1 m move), and the other objects of the world (an
 *   emitter falling beside it, a cloth) are bitwise those of a run without the drag.
 * - a pinned cloth vertex does not move when dragged; a free one moves towards the target.
 */
#include "harness.h"

#include <math.h>

#include "weft/scene.h"
#include "weft/world.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

static const char scene_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 100, \"devices\": \"cpu\"},"
    " \"particles\": [{\"name\": \"p\", \"center\": [0, 5, 0], \"half_extents\": [0.05, 0.05, "
    "0.05], \"radius\": 0.02, \"spacing\": 0.1, \"mass\": 0.5},"
    "  {\"name\": \"q\", \"center\": [2, 5, 0], \"half_extents\": [0.1, 0.1, 0.1],"
    "   \"radius\": 0.02, \"spacing\": 0.1, \"mass\": 0.5}],"
    " \"cloths\": [{\"name\": \"c\", \"grid\": {\"size\": [1, 1], \"resolution\": [4, 4]},"
    "  \"center\": [0, 8, 0], \"integrator\": \"spring\", \"pins\": [\"top-left\"],"
    "  \"material\": {\"mass\": 0.25}}]}";

static wf_world *make_world(void) {
  wf_scene *sc = NULL;
  if (wf_scene_parse(scene_text, strlen(scene_text), "t.json", WEFT_SOURCE_DIR "/scenes", NULL,
                     &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu";
  wf_world *w = NULL;
  if (wf_world_create(sc, &d, &w) != WF_OK) TH_FAIL("world: %s", wf_last_error());
  wf_scene_destroy(sc);
  return w;
}

TEST(params_change_gravity) {
  wf_world *w = make_world();
  REQUIRE(w);
  wf_world_params p;
  CHECK_OK(wf_world_params_get(w, &p));
  CHECK_NEAR(p.gravity[1], -9.81f, 1e-6f);
  p.gravity[1] = -1.62f;
  CHECK_OK(wf_world_params_set(w, &p));
  wf_world_params q;
  CHECK_OK(wf_world_params_get(w, &q));
  CHECK_NEAR(q.gravity[1], -1.62f, 0.0f);
  CHECK_OK(wf_world_step(w, 1));
  float pos[4], vel[4];
  CHECK_OK(wf_world_object_download(w, 0, &pos, &vel));
  CHECK_NEAR(vel[1], -1.62 / 60.0, 1e-5 * 1.62 / 60.0);
  p.damping = -1.0f;
  CHECK_ERROR(wf_world_params_set(w, &p), WF_ERR_INVALID, "damping");
  p.damping = 0.0f, p.gravity[2] = NAN;
  CHECK_ERROR(wf_world_params_set(w, &p), WF_ERR_INVALID, "gravity[2]");
  wf_world_destroy(w);
}

TEST(drag_follows_the_implicit_spring) {
  wf_world *w = make_world(), *ref = make_world();
  REQUIRE(w && ref);
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  REQUIRE(o.point_count == 1);
  wf_world_params p = {{0, 0, 0}, 0};
  CHECK_OK(wf_world_params_set(w, &p));
  CHECK_OK(wf_world_params_set(ref, &p));
  float x0[4];
  CHECK_OK(wf_world_object_download(w, 0, &x0, NULL));
  wf_world_drag d = {.object = 0, .point = 0, .target = {x0[0], x0[1] + 1.0, x0[2] + 0.5}};
  CHECK_OK(wf_world_drag_set(w, &d));
  double h = 1.0 / 60.0, om = 2.0 * 3.14159265358979323846 * 2.0;
  double x[3] = {x0[0], x0[1], x0[2]}, v[3] = {0, 0, 0};
  double worst = 0.0;
  for (int f = 0; f < 30; f++) {
    CHECK_OK(wf_world_step(w, 1));
    CHECK_OK(wf_world_step(ref, 1));
    for (int k = 0; k < 3; k++) {
      v[k] = (v[k] + h * om * om * (d.target[k] - x[k])) / (1.0 + 2.0 * h * om + h * h * om * om);
      x[k] += h * v[k];
    }
    float got[4];
    CHECK_OK(wf_world_object_download(w, 0, &got, NULL));
    for (int k = 0; k < 3; k++)
      worst = fmax(worst, fabs(got[k] - x[k]));
  }
  printf("  dragged particle vs the recurrence: worst %.3g m over 30 frames; at (%.4f %.4f %.4f), "
         "target (%.4f %.4f %.4f)\n",
         worst, x[0], x[1], x[2], d.target[0], d.target[1], d.target[2]);
  CHECK(worst <= 1e-5);
  CHECK(x[1] - x0[1] > 0.5); /* it did move most of the way */
  /* the other objects: bitwise those of the run without the drag */
  for (int i = 1; i < wf_world_object_count(w); i++) {
    wf_world_object oi;
    CHECK_OK(wf_world_object_get(w, i, &oi));
    float(*a)[4] = calloc(oi.point_count, sizeof *a), (*b)[4] = calloc(oi.point_count, sizeof *b);
    float(*va)[4] = calloc(oi.point_count, sizeof *va),
    (*vb)[4] = calloc(oi.point_count, sizeof *vb);
    REQUIRE(a && b && va && vb);
    CHECK_OK(wf_world_object_download(w, i, a, va));
    CHECK_OK(wf_world_object_download(ref, i, b, vb));
    CHECK(memcmp(a, b, oi.point_count * sizeof *a) == 0);
    CHECK(memcmp(va, vb, oi.point_count * sizeof *va) == 0);
    free(a), free(b), free(va), free(vb);
  }
  wf_world_drag_clear(w);
  float before[4], after[4];
  CHECK_OK(wf_world_object_download(w, 0, &before, NULL));
  CHECK_OK(wf_world_step(w, 1));
  CHECK_OK(wf_world_object_download(w, 0, &after, NULL));
  float vel[4];
  CHECK_OK(wf_world_object_download(w, 0, NULL, &vel));
  CHECK_NEAR(after[1], before[1] + vel[1] / 60.0f, 1e-6f); /* coasting, no more spring */
  wf_world_destroy(w);
  wf_world_destroy(ref);
}

TEST(drag_cloth_vertex_and_errors) {
  wf_world *w = make_world();
  REQUIRE(w);
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 2, &o));
  REQUIRE(o.kind == WF_WORLD_CLOTH && o.point_count == 16);
  float(*pos)[4] = calloc(16, sizeof *pos);
  REQUIRE(pos);
  CHECK_OK(wf_world_object_download(w, 2, pos, NULL));
  float pinned[4], free0[4];
  memcpy(pinned, pos[0], sizeof pinned); /* vertex 0: the top-left corner, pinned */
  memcpy(free0, pos[15], sizeof free0);
  CHECK_NEAR(pinned[3], 0.0f, 0.0f);
  wf_world_drag d = {.object = 2, .point = 0, .target = {pinned[0], pinned[1] + 1, pinned[2]}};
  CHECK_OK(wf_world_drag_set(w, &d));
  CHECK_OK(wf_world_step(w, 5));
  CHECK_OK(wf_world_object_download(w, 2, pos, NULL));
  CHECK(memcmp(pos[0], pinned, sizeof pinned) == 0);
  /* a free corner pulled 1 m sideways moves that way (the cloth's springs and gravity resist) */
  d.point = 15;
  d.target[0] = free0[0] + 1.0, d.target[1] = free0[1], d.target[2] = free0[2];
  CHECK_OK(wf_world_drag_set(w, &d));
  CHECK_OK(wf_world_step(w, 10));
  CHECK_OK(wf_world_object_download(w, 2, pos, NULL));
  printf("  dragged cloth corner moved %.3f m along x\n", pos[15][0] - free0[0]);
  CHECK(pos[15][0] - free0[0] > 0.1f);
  free(pos);
  d.point = 16;
  CHECK_ERROR(wf_world_drag_set(w, &d), WF_ERR_INVALID, "point 16 of 16");
  d.point = 0, d.object = 3;
  CHECK_ERROR(wf_world_drag_set(w, &d), WF_ERR_INVALID, "object 3");
  d.object = 2, d.stiffness = -1;
  CHECK_ERROR(wf_world_drag_set(w, &d), WF_ERR_INVALID, "stiffness");
  wf_world_destroy(w);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(params_change_gravity),
                                  TH_TEST(drag_follows_the_implicit_spring),
                                  TH_TEST(drag_cloth_vertex_and_errors)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
