/* Changing a running world between frames (weft/world.h: wf_world_params_*, wf_world_drag_*,
 * engine/world_interact.c), on cpu:0.
 *
 * - params: gravity set to the Moon's between frames: a free particle's velocity after the next
 *   frame is 1.62 m/s² x 1/60 s (symplectic Euler with constant gravity is exact for velocity;
 *   float accumulation over 8 substeps: 1e-5 relative); bad values are refused naming the field.
 * - drag of a particle (in the captured frame): a free particle (gravity 0, no contacts) pulled by
 *   the default spring (2 Hz on its own mass, critically damped) follows semi-implicit Euler of
 *   the spring-damper substep by substep (h = 1/480 s),
 *     v' = v + h (ω² (t − x) − 2 ω v),  x' = x + h v',
 *   computed here in double: 30 frames within 1e-4 m (the solver keeps x near y = 5 m in float,
 *   3e-7 m a rounding, over 240 substeps of a 1 m move); the other objects of the world (an
 *   emitter falling beside it, a cloth) are bitwise those of a run without the drag; and the
 *   dragged run on two devices (particles split) is bitwise the one on one.
 * - the host path (a particle under XPBD contacts) follows the backward-Euler recurrence of
 *   world_interact.c over the frame, v' = (v + h ω² (t − x)) / (1 + 2 h ω + h² ω²), x' = x + h v'
 *   (h = 1/60 s), 30 frames within 1e-5 m.
 * - a pinned cloth vertex does not move when dragged; a free one moves towards the target.
 * - a cloth vertex's drag is in the captured frame (wf_cloth_drag_set): with a target moving every
 *   frame the world on two devices (the cloth split in two) is bitwise the world on one, the
 *   dragged vertex moves towards the target, and the other objects are bitwise those of an
 *   undragged run; moving the drag from a particle to a cloth vertex ends the particle's spring
 *   (it coasts: x' = x + v / 60 within 1e-6 m, gravity 0).
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

static wf_world *make_world_on(const char *device, const char *set) {
  wf_scene *sc = NULL;
  const char *sets[] = {set};
  wf_scene_overrides ov = {sets, 1};
  if (wf_scene_parse(scene_text, strlen(scene_text), "t.json", WEFT_SOURCE_DIR "/scenes",
                     set ? &ov : NULL, &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = device;
  wf_world *w = NULL;
  if (wf_world_create(sc, &d, &w) != WF_OK) TH_FAIL("world: %s", wf_last_error());
  wf_scene_destroy(sc);
  return w;
}

static wf_world *make_world(void) { return make_world_on("cpu", NULL); }

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

/* Drags particle 0 of object 0 for 30 frames towards (x0 + (0, 1, 0.5)) with gravity 0; returns
 * the worst distance from the recurrence (substep: per substep; else per frame) and leaves the
 * world stepped. ref, when given, steps along undragged. */
static void drag_run(wf_world *w, wf_world *ref, bool substep, double *worst_out) {
  wf_world_params p = {{0, 0, 0}, 0};
  CHECK_OK(wf_world_params_set(w, &p));
  if (ref) CHECK_OK(wf_world_params_set(ref, &p));
  float x0[4];
  CHECK_OK(wf_world_object_download(w, 0, &x0, NULL));
  wf_world_drag d = {.object = 0, .point = 0, .target = {x0[0], x0[1] + 1.0, x0[2] + 0.5}};
  CHECK_OK(wf_world_drag_set(w, &d));
  double om = 2.0 * 3.14159265358979323846 * 2.0;
  double x[3] = {x0[0], x0[1], x0[2]}, v[3] = {0, 0, 0};
  double worst = 0.0;
  for (int f = 0; f < 30; f++) {
    CHECK_OK(wf_world_step(w, 1));
    if (ref) CHECK_OK(wf_world_step(ref, 1));
    for (int k = 0; k < 3; k++) {
      if (substep) {
        double h = 1.0 / 480.0;
        for (int s = 0; s < 8; s++) {
          v[k] += h * (om * om * (d.target[k] - x[k]) - 2.0 * om * v[k]);
          x[k] += h * v[k];
        }
      } else {
        double h = 1.0 / 60.0;
        v[k] = (v[k] + h * om * om * (d.target[k] - x[k])) / (1.0 + 2.0 * h * om + h * h * om * om);
        x[k] += h * v[k];
      }
    }
    float got[4];
    CHECK_OK(wf_world_object_download(w, 0, &got, NULL));
    for (int k = 0; k < 3; k++)
      worst = fmax(worst, fabs(got[k] - x[k]));
  }
  printf("  dragged particle (%s) vs the recurrence: worst %.3g m over 30 frames; at (%.4f %.4f "
         "%.4f), target (%.4f %.4f %.4f)\n",
         substep ? "in the frame" : "host", worst, x[0], x[1], x[2], d.target[0], d.target[1],
         d.target[2]);
  CHECK(x[1] - x0[1] > 0.5); /* it did move most of the way */
  *worst_out = worst;
}

static bool same_object(wf_world *a, wf_world *b, int i) {
  wf_world_object oi;
  if (wf_world_object_get(a, i, &oi) != WF_OK) return false;
  size_t bytes = (size_t)oi.point_count * 16;
  float(*pa)[4] = malloc(bytes), (*pb)[4] = malloc(bytes), (*va)[4] = malloc(bytes),
  (*vb)[4] = malloc(bytes);
  bool same = pa && pb && va && vb && wf_world_object_download(a, i, pa, va) == WF_OK &&
              wf_world_object_download(b, i, pb, vb) == WF_OK && memcmp(pa, pb, bytes) == 0 &&
              memcmp(va, vb, bytes) == 0;
  free(pa), free(pb), free(va), free(vb);
  return same;
}

TEST(drag_in_the_frame_follows_the_spring) {
  wf_world *w = make_world(), *ref = make_world();
  REQUIRE(w && ref);
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  REQUIRE(o.point_count == 1);
  double worst = 1.0;
  drag_run(w, ref, true, &worst);
  CHECK(worst <= 1e-4);
  for (int i = 1; i < wf_world_object_count(w); i++) /* the rest: as without the drag */
    CHECK(same_object(w, ref, i));
  wf_world_drag_clear(w);
  float before[4], after[4], vel[4];
  CHECK_OK(wf_world_object_download(w, 0, &before, &vel));
  CHECK_OK(wf_world_step(w, 1));
  CHECK_OK(wf_world_object_download(w, 0, &after, NULL));
  CHECK_NEAR(after[1], before[1] + vel[1] / 60.0f, 1e-6f); /* coasting, no more spring */
  wf_world_destroy(w);
  wf_world_destroy(ref);
}

TEST(drag_bitwise_on_two_devices) {
  const char *uncoupled = "simulation.coupling=false"; /* a coupled scene needs one device */
  wf_world *one = make_world_on("cpu:0", uncoupled), *two = make_world_on("cpu:0,cpu:1", uncoupled);
  REQUIRE(one && two);
  REQUIRE(wf_world_device_count(two) == 2);
  double worst;
  drag_run(one, NULL, true, &worst);
  drag_run(two, NULL, true, &worst);
  for (int i = 0; i < wf_world_object_count(one); i++)
    CHECK(same_object(one, two, i));
  wf_world_destroy(one);
  wf_world_destroy(two);
}

TEST(drag_on_the_host_under_xpbd) {
  wf_world *w = make_world_on("cpu", "simulation.contact_model=xpbd");
  REQUIRE(w);
  double worst = 1.0;
  drag_run(w, NULL, false, &worst);
  CHECK(worst <= 1e-5);
  wf_world_destroy(w);
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

/* Drags cloth vertex 15 (the free bottom-right corner) 10 frames towards a target moving 5 cm a
 * frame; ref, when given, steps along undragged. */
static void cloth_drag_run(wf_world *w, wf_world *ref, float start[4], float end[4]) {
  float pos[16][4];
  CHECK_OK(wf_world_object_download(w, 2, pos, NULL));
  memcpy(start, pos[15], 16);
  for (int f = 0; f < 10; f++) {
    wf_world_drag d = {.object = 2,
                       .point = 15,
                       .target = {pos[15][0] + 0.5, pos[15][1] + 0.05 * f, pos[15][2] + 0.3}};
    CHECK_OK(wf_world_drag_set(w, &d));
    CHECK_OK(wf_world_step(w, 1));
    if (ref) CHECK_OK(wf_world_step(ref, 1));
  }
  float now[16][4];
  CHECK_OK(wf_world_object_download(w, 2, now, NULL));
  memcpy(end, now[15], 16);
}

TEST(drag_cloth_vertex_in_the_frame) {
  const char *uncoupled = "simulation.coupling=false";
  wf_world *one = make_world_on("cpu:0", uncoupled), *two = make_world_on("cpu:0,cpu:1", uncoupled);
  wf_world *ref = make_world_on("cpu:0", uncoupled);
  REQUIRE(one && two && ref);
  wf_world_placement pl;
  CHECK_OK(wf_world_placement_get(two, 1, &pl));
  printf("  two devices: the cloth's second partition owns %llu of 16 vertices\n",
         (unsigned long long)pl.vertices);
  CHECK(pl.vertices > 0 && pl.vertices < 16); /* the cloth is split */
  float s1[4], e1[4], s2[4], e2[4];
  cloth_drag_run(one, ref, s1, e1);
  cloth_drag_run(two, NULL, s2, e2);
  printf("  dragged cloth corner moved (%.3f %.3f %.3f) m towards (+0.5, +0.45, +0.3)\n",
         e1[0] - s1[0], e1[1] - s1[1], e1[2] - s1[2]);
  CHECK(e1[0] - s1[0] > 0.1f && e1[2] - s1[2] > 0.05f);
  for (int i = 0; i < wf_world_object_count(one); i++) {
    CHECK(same_object(one, two, i));
    if (i != 2) CHECK(same_object(one, ref, i)); /* the particles: untouched */
  }
  CHECK(!same_object(one, ref, 2));
  wf_world_destroy(one);
  wf_world_destroy(two);
  wf_world_destroy(ref);
  /* from a particle to a cloth vertex: the particle's spring ends */
  wf_world *w = make_world();
  REQUIRE(w);
  double worst;
  drag_run(w, NULL, true, &worst);
  wf_world_drag d = {.object = 2, .point = 15, .target = {0.0, 8.0, 0.0}};
  CHECK_OK(wf_world_drag_set(w, &d));
  float before[4], after[4], vel[4];
  CHECK_OK(wf_world_object_download(w, 0, &before, &vel));
  CHECK_OK(wf_world_step(w, 1));
  CHECK_OK(wf_world_object_download(w, 0, &after, NULL));
  CHECK_NEAR(after[1], before[1] + vel[1] / 60.0f, 1e-6f);
  wf_world_drag_clear(w);
  wf_world_destroy(w);
}

/* The particle materials: the scene's default one listed, a change read back, bad indices and
 * values refused naming the material. */
TEST(particle_materials) {
  wf_world *w = make_world();
  REQUIRE(w);
  CHECK_EQ_INT(wf_world_particle_material_count(w), 1);
  CHECK(strcmp(wf_world_particle_material_name(w, 0), "default") == 0);
  CHECK(wf_world_particle_material_name(w, 1) == NULL);
  wf_particle_material m;
  CHECK_OK(wf_world_particle_material_get(w, 0, &m));
  CHECK_NEAR(m.stiffness, wf_particle_material_default().stiffness, 0.0f);
  m.friction = 0.2f, m.stiffness = 500.0f;
  CHECK_OK(wf_world_particle_material_set(w, 0, &m));
  wf_particle_material back;
  CHECK_OK(wf_world_particle_material_get(w, 0, &back));
  CHECK_NEAR(back.friction, 0.2f, 0.0f);
  CHECK_NEAR(back.stiffness, 500.0f, 0.0f);
  CHECK_OK(wf_world_step(w, 1));
  CHECK_ERROR(wf_world_particle_material_get(w, 1, &m), WF_ERR_INVALID, "materials[1]");
  m.stiffness = -1.0f;
  CHECK_ERROR(wf_world_particle_material_set(w, 0, &m), WF_ERR_INVALID, "materials[0] 'default'");
  wf_world_destroy(w);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(params_change_gravity),
                                  TH_TEST(drag_in_the_frame_follows_the_spring),
                                  TH_TEST(drag_bitwise_on_two_devices),
                                  TH_TEST(drag_on_the_host_under_xpbd),
                                  TH_TEST(drag_cloth_vertex_and_errors),
                                  TH_TEST(drag_cloth_vertex_in_the_frame),
                                  TH_TEST(particle_materials)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
