/* Reproducibility and pins: pinned vertices hold exactly, attached ones move with their
 * collider, two runs are bitwise identical, and the captured frame equals the uncaptured path
 * bitwise (including batches of an odd number of substeps). Tolerance: none, except the
 * attachment's path (see there). */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

static const char *iname(int integrator) {
  return integrator == WF_CLOTH_XPBD ? "xpbd" : "springs";
}

/* A vertical 8 x 8 sheet pinned at the top corners and in a region around the middle of the left
 * edge: after 30 frames those vertices have exactly their initial coordinates and inverse mass 0;
 * the others have moved. */
static void pins_hold(int integrator) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.integrator = integrator;
  d.name = "hanging";
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 8;
  g.v_axis[1] = 1.0f, g.v_axis[2] = 0.0f;
  wf_cloth *c;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
  uint32_t n1 = 0, n2 = 0, nr = 0;
  CHECK_OK(wf_cloth_pin_named(c, "top-left", &n1));
  CHECK_OK(wf_cloth_pin_named(c, "top-right", &n2));
  float lo[3] = {-0.6f, 0.9f, -0.1f}, hi[3] = {-0.4f, 1.1f, 0.1f}; /* left edge, rows 3-4 */
  CHECK_OK(wf_cloth_pin_region(c, lo, hi, &nr));
  CHECK_EQ_INT(n1, 1);
  CHECK_EQ_INT(n2, 1);
  CHECK_EQ_INT(nr, 2);
  float(*p0)[4] = malloc(64 * 16), (*p1)[4] = malloc(64 * 16);
  REQUIRE(p0 && p1);
  CHECK_OK(wf_cloth_download(c, p0, NULL));
  CHECK_OK(wf_cloth_step_frames(c, 30));
  CHECK_OK(wf_cloth_download(c, p1, NULL));
  int pinned = 0, moved = 0;
  for (int i = 0; i < 64; i++) {
    if (p0[i][3] == 0.0f) {
      pinned++;
      if (memcmp(p0[i], p1[i], 12) != 0 || p1[i][3] != 0.0f)
        TH_FAIL("%s: pinned vertex %d moved: (%.9g %.9g %.9g) -> (%.9g %.9g %.9g)",
                iname(integrator), i, p0[i][0], p0[i][1], p0[i][2], p1[i][0], p1[i][1], p1[i][2]);
    } else {
      moved += p1[i][1] < p0[i][1];
    }
  }
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(c, &info));
  CHECK_EQ_INT(pinned, 4);
  CHECK_EQ_INT(info.pinned, 4);
  CHECK_EQ_INT(moved, 60);
  free(p0), free(p1);
  wf_cloth_destroy(c);
}

TEST(pins_hold_exactly_springs) { pins_hold(WF_CLOTH_SPRINGS); }
TEST(pins_hold_exactly_xpbd) { pins_hold(WF_CLOTH_XPBD); }

/* The top row attached to a kinematic box moving at (0.5, 0, -0.25) m/s: after 1 s each attached
 * vertex is at its start + v t. Each substep adds dt v in float (960 additions, each rounded to
 * half an ulp of ~1, 6e-8 m): tolerance 1e-4 m. */
TEST(attachment_moves_with_collider) {
  for (int integrator = 0; integrator < 2; integrator++) {
    wf_cloth_desc d = wf_cloth_desc_default();
    d.integrator = integrator;
    wf_cloth_grid g = wf_cloth_grid_default();
    g.resolution[0] = g.resolution[1] = 6;
    g.v_axis[1] = 1.0f, g.v_axis[2] = 0.0f;
    wf_cloth *c;
    d.devices[0] = th_dev0;
    CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
    wf_collider_desc box;
    memset(&box, 0, sizeof box);
    box.name = "hanger", box.type = WF_COLLIDER_BOX;
    box.center[1] = 5.0f, box.half_extents[0] = box.half_extents[1] = box.half_extents[2] = 0.1f;
    box.velocity[0] = 0.5f, box.velocity[2] = -0.25f;
    uint32_t bi = 99, n = 0;
    CHECK_OK(wf_cloth_add_collider(c, &box, &bi));
    CHECK_EQ_INT(bi, 0);
    float lo[3] = {-1.0f, 1.45f, -1.0f}, hi[3] = {1.0f, 1.55f, 1.0f};
    CHECK_OK(wf_cloth_attach_region(c, lo, hi, bi, &n));
    CHECK_EQ_INT(n, 6);
    float p0[36][4], p1[36][4];
    CHECK_OK(wf_cloth_download(c, p0, NULL));
    CHECK_OK(wf_cloth_step_frames(c, 60));
    CHECK_OK(wf_cloth_download(c, p1, NULL));
    double t = 0.0;
    CHECK_OK(wf_cloth_time(c, &t, NULL));
    CHECK_NEAR(t, 1.0, 1e-6); /* 960 substeps of the float dt = (1/60)/16 */
    for (int i = 0; i < 6; i++) {
      CHECK_NEAR(p1[i][0], p0[i][0] + 0.5 * t, 1e-4);
      CHECK_NEAR(p1[i][1], p0[i][1], 0.0);
      CHECK_NEAR(p1[i][2], p0[i][2] - 0.25 * t, 1e-4);
    }
    wf_cloth_destroy(c);
  }
}

/* The busy scene (wind, drag, lift, four colliders, attachments, pins) twice: bitwise equal. */
TEST(two_runs_bitwise_identical) {
  for (int integrator = 0; integrator < 2; integrator++) {
    float *s[2] = {NULL, NULL};
    uint32_t n[2] = {0, 0};
    for (int run = 0; run < 2; run++) {
      wf_cloth *c;
      CHECK_OK(scene_busy(th_dev0, integrator, false, &c));
      CHECK_OK(wf_cloth_step_frames(c, 40));
      s[run] = scene_state(c, &n[run]);
      if (!s[run]) TH_FAIL("%s", wf_last_error());
      wf_cloth_destroy(c);
    }
    REQUIRE(s[0] && s[1] && n[0] == n[1]);
    long k = scene_first_diff(s[0], s[1], (size_t)n[0] * 8);
    if (k >= 0) TH_FAIL("%s: runs differ at float %ld", iname(integrator), k);
    free(s[0]), free(s[1]);
  }
}

/* 5 frames replayed from the captured graph; the same 5 frames enqueued one substep at a time
 * (no_graph); and 5 x 8 = 40 substeps in odd batches 7 + 9 + 11 + 13 through step_substeps.
 * All three bitwise equal, and the clocks agree. */
TEST(graph_equals_uncaptured) {
  for (int integrator = 0; integrator < 2; integrator++) {
    wf_cloth *a, *b, *c;
    CHECK_OK(scene_busy(th_dev0, integrator, false, &a));
    CHECK_OK(scene_busy(th_dev0, integrator, true, &b));
    CHECK_OK(scene_busy(th_dev0, integrator, true, &c));
    CHECK_OK(wf_cloth_step_frames(a, 5));
    CHECK_OK(wf_cloth_step_frames(b, 5));
    const int batches[4] = {7, 9, 11, 13};
    for (int k = 0; k < 4; k++)
      CHECK_OK(wf_cloth_step_substeps(c, batches[k]));
    uint32_t n[3] = {0, 0, 0};
    float *s[3] = {scene_state(a, &n[0]), scene_state(b, &n[1]), scene_state(c, &n[2])};
    REQUIRE(s[0] && s[1] && s[2]);
    long k1 = scene_first_diff(s[0], s[1], (size_t)n[0] * 8);
    long k2 = scene_first_diff(s[0], s[2], (size_t)n[0] * 8);
    if (k1 >= 0) TH_FAIL("%s: graph and no_graph differ at float %ld", iname(integrator), k1);
    if (k2 >= 0) TH_FAIL("%s: graph and odd batches differ at float %ld", iname(integrator), k2);
    uint64_t sa = 0, sc = 0;
    double ta = 0, tc = 0;
    CHECK_OK(wf_cloth_time(a, &ta, &sa));
    CHECK_OK(wf_cloth_time(c, &tc, &sc));
    CHECK_EQ_INT(sa, 40);
    CHECK_EQ_INT(sc, 40);
    CHECK(ta == tc);
    wf_cloth_info info;
    CHECK_OK(wf_cloth_info_get(a, &info));
    /* springs: the frame is one launch (cloth_fast.h), colliders or not, while their forces are
     * not measured; measured, the clear of the forces comes before it. XPBD: several kernels per
     * substep */
    if (integrator == WF_CLOTH_SPRINGS) {
      CHECK_EQ_INT(info.graph_nodes, 1);
      CHECK_OK(wf_cloth_measure_collider_forces(a, true));
      CHECK_OK(wf_cloth_step_frames(a, 1));
      CHECK_OK(wf_cloth_info_get(a, &info));
      CHECK_EQ_INT(info.graph_nodes, 2);
    }
    free(s[0]), free(s[1]), free(s[2]);
    wf_cloth_destroy(a), wf_cloth_destroy(b), wf_cloth_destroy(c);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(pins_hold_exactly_springs), TH_TEST(pins_hold_exactly_xpbd),
      TH_TEST(attachment_moves_with_collider), TH_TEST(two_runs_bitwise_identical),
      TH_TEST(graph_equals_uncaptured)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
