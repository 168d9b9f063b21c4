/* Reproducibility of the particle solver: two runs are bitwise identical, the captured frame and
 * the substep-by-substep path are bitwise identical, and parameters change without recapture. */
#include "harness.h"
#include "scenes.h"
#include "weft/particles.h"

typedef wf_status (*scene_fn)(wf_device *, bool, wf_particles **);

static wf_status pile4(wf_device *d, bool no_graph, wf_particles **out) {
  return scene_pile(d, 4, 4, no_graph, out);
}

/* Runs a scene for `frames` frames and returns its state (pos then vel, 32 bytes a particle). */
static float *run(scene_fn scene, bool no_graph, int frames, uint32_t *count) {
  wf_particles *ps;
  if (scene(th_dev0, no_graph, &ps) != WF_OK) {
    TH_FAIL("scene: %s", wf_last_error());
    return NULL;
  }
  uint32_t n = wf_particles_count(ps);
  float *state = malloc((size_t)n * 32);
  wf_status st = wf_particles_step_frames(ps, frames);
  if (st == WF_OK) st = wf_particles_download(ps, (float(*)[4])state, (float(*)[4])(state + 4 * n));
  if (st != WF_OK) TH_FAIL("run: %s", wf_last_error());
  wf_particles_destroy(ps);
  *count = n;
  return state;
}

static void compare(const float *a, const float *b, uint32_t n, const char *what) {
  if (memcmp(a, b, (size_t)n * 32) == 0) return;
  for (uint32_t i = 0; i < 8 * n; i++)
    if (memcmp(&a[i], &b[i], 4) != 0) {
      TH_FAIL("%s: first difference at float %u (particle %u): %.9g vs %.9g", what, i, (i / 4) % n,
              a[i], b[i]);
      return;
    }
}

/* Contact-heavy scenes run twice: the states must be equal byte for byte (no float atomics, fixed
 * gather order). Tolerance: none. */
TEST(two_runs_bitwise) {
  scene_fn scenes[] = {pile4, scene_colliders};
  for (int k = 0; k < 2; k++) {
    uint32_t n1, n2;
    float *a = run(scenes[k], false, 30, &n1), *b = run(scenes[k], false, 30, &n2);
    REQUIRE(a && b && n1 == n2 && n1 > 0);
    compare(a, b, n1, k ? "colliders" : "pile");
    free(a), free(b);
  }
}

/* The captured frame replays the very same kernels with the same arguments as the direct path:
 * bitwise equal. Tolerance: none. */
TEST(graph_vs_direct_bitwise) {
  scene_fn scenes[] = {pile4, scene_colliders};
  for (int k = 0; k < 2; k++) {
    uint32_t n1, n2;
    float *a = run(scenes[k], false, 20, &n1), *b = run(scenes[k], true, 20, &n2);
    REQUIRE(a && b && n1 == n2);
    compare(a, b, n1, k ? "colliders" : "pile");
    free(a), free(b);
  }
}

/* The one-launch frame (wf_particles_tuning.one_launch) runs the stages of every substep over the
 * same arguments with the same per-element functions as the launch-a-stage path: the states, the
 * clock and the history overflows are bitwise equal, captured or not. On CUDA this compares the
 * cooperative kernel (grid-wide scan, grid.sync() between stages) with the stage kernels.
 * Tolerance: none. */
static void one_launch_bitwise(int model) {
  const int frames = 8;
  scene_fn scenes[] = {pile4, scene_colliders};
  scene_contact_model = model;
  for (int k = 0; k < 2; k++)
    for (int direct = 0; direct < 2; direct++) {
      float *st[2] = {NULL, NULL};
      uint32_t n[2] = {0, 0};
      wf_particles_stats stats[2];
      for (int one = 0; one < 2; one++) {
        scene_one_launch = one ? 1 : -1;
        wf_particles *ps;
        if (scenes[k](th_dev0, direct != 0, &ps) != WF_OK) {
          TH_FAIL("scene: %s", wf_last_error());
          break;
        }
        n[one] = wf_particles_count(ps);
        st[one] = malloc((size_t)n[one] * 32);
        CHECK_OK(wf_particles_step_frames(ps, frames));
        CHECK_OK(
            wf_particles_download(ps, (float(*)[4])st[one], (float(*)[4])(st[one] + 4 * n[one])));
        CHECK_OK(wf_particles_stats_get(ps, &stats[one]));
        wf_particles_destroy(ps);
      }
      scene_one_launch = 0;
      if (st[0] && st[1] && n[0] == n[1] && n[0] > 0) {
        compare(st[0], st[1], n[0], k ? "colliders, one launch" : "pile, one launch");
        CHECK(stats[0].time == stats[1].time && stats[0].substeps == stats[1].substeps);
        CHECK(stats[0].history_overflows == stats[1].history_overflows);
        CHECK(stats[1].substeps > 0);
      } else {
        TH_FAIL("scene %d: no state", k);
      }
      free(st[0]), free(st[1]);
    }
  scene_contact_model = WF_CONTACT_DEM;
}

TEST(one_launch_bitwise_linear) { one_launch_bitwise(WF_CONTACT_DEM); }
TEST(one_launch_bitwise_hertz) { one_launch_bitwise(WF_CONTACT_HERTZ); }
TEST(one_launch_bitwise_xpbd) { one_launch_bitwise(WF_CONTACT_XPBD); }

/* Gravity is read from the device parameter block: switching it off between two replays of the
 * same captured frame makes the velocity constant (exactly: v += dt · 0). */
TEST(params_without_recapture) {
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 1;
  d.substeps = 16;
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  float p0[1][4] = {{0, 10, 0, 0.05f}}, v0[1][4] = {{0, 0, 0, 1}};
  CHECK_OK(wf_particles_add(ps, 1, p0, v0, 0, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 3));
  float v1[1][4], v2[1][4];
  CHECK_OK(wf_particles_download(ps, NULL, v1));
  CHECK(v1[0][1] < -0.4f);
  wf_particles_params p = wf_particles_params_get(ps);
  p.gravity[1] = 0.0f;
  CHECK_OK(wf_particles_params_set(ps, &p));
  CHECK_OK(wf_particles_step_frames(ps, 3));
  CHECK_OK(wf_particles_download(ps, NULL, v2));
  CHECK(v2[0][1] == v1[0][1]);
  p.gravity[0] = 1.0f;
  CHECK_OK(wf_particles_params_set(ps, &p));
  CHECK_OK(wf_particles_step_frames(ps, 6)); /* 0.1 s of g_x = 1 */
  CHECK_OK(wf_particles_download(ps, NULL, v2));
  CHECK_NEAR(v2[0][0], 0.1, 1e-6); /* 96 additions of dt = 1/960: round-off ~1e-8 */
  wf_particles_destroy(ps);
}

/* Adding particles after a frame was captured recaptures: the new particle moves too. */
TEST(add_after_capture) {
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 2;
  d.substeps = 8;
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  float p0[1][4] = {{0, 10, 0, 0.05f}}, p1[1][4] = {{5, 10, 0, 0.05f}};
  CHECK_OK(wf_particles_add(ps, 1, p0, NULL, 0, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 2));
  uint32_t first = 99;
  CHECK_OK(wf_particles_add(ps, 1, p1, NULL, 0, &first));
  CHECK(first == 1);
  CHECK_OK(wf_particles_step_frames(ps, 2));
  float v[2][4];
  CHECK_OK(wf_particles_download(ps, NULL, v));
  CHECK(v[0][1] < v[1][1] && v[1][1] < -0.3f); /* both fall; the first one longer */
  wf_particles_destroy(ps);
}

/* Substeps enqueued inside the caller's capture of the solver's stream (as a host program joining
 * them with its own work does; python/ with PyTorch): the step skips the host's refit of the grid
 * box (an event query, which cannot be captured) and the state is bitwise that of the same
 * substeps enqueued directly, with steps before and after the capture. Tolerance: none. */
TEST(substeps_in_caller_capture_bitwise) {
  enum { K = 4, REPLAYS = 5 };
  wf_particles *a, *b;
  REQUIRE(pile4(th_dev0, false, &a) == WF_OK && pile4(th_dev0, false, &b) == WF_OK);
  CHECK_OK(wf_particles_step_substeps(a, 1)); /* a frame event is pending when the capture starts */
  wf_stream *s = wf_particles_stream(a);
  wf_graph *g = NULL;
  CHECK_OK(wf_capture_begin(s));
  for (int k = 0; k < K; k++)
    CHECK_OK(wf_particles_step_substeps(a, 1));
  CHECK_OK(wf_capture_end(s, &g));
  for (int r = 0; r < REPLAYS && g; r++)
    CHECK_OK(wf_graph_launch(g, s));
  CHECK_OK(wf_particles_step_substeps(a, 2));
  CHECK_OK(wf_particles_step_substeps(b, 1 + K * REPLAYS + 2));
  uint32_t n = wf_particles_count(a);
  float *sa = malloc((size_t)n * 64), *sb = sa + 8 * n;
  CHECK_OK(wf_particles_download(a, (float(*)[4])sa, (float(*)[4])(sa + 4 * n)));
  CHECK_OK(wf_particles_download(b, (float(*)[4])sb, (float(*)[4])(sb + 4 * n)));
  compare(sa, sb, n, "captured substeps");
  double ta, tb;
  uint64_t na = 0, nb = 1;
  CHECK_OK(wf_particles_time(a, &ta, &na));
  CHECK_OK(wf_particles_time(b, &tb, &nb));
  CHECK(na == nb && na == 1 + K * REPLAYS + 2);
  free(sa);
  wf_graph_destroy(g);
  wf_particles_destroy(a);
  wf_particles_destroy(b);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(two_runs_bitwise),          TH_TEST(graph_vs_direct_bitwise),
      TH_TEST(params_without_recapture),  TH_TEST(add_after_capture),
      TH_TEST(one_launch_bitwise_linear), TH_TEST(one_launch_bitwise_hertz),
      TH_TEST(one_launch_bitwise_xpbd),   TH_TEST(substeps_in_caller_capture_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
