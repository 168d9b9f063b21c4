/* The mass-spring fast path (solvers/cloth/cloth_fast.h): a frame in one launch, and grid cloths
 * without the adjacency list. Both must give bitwise the state of the general path (one launch
 * per substep over the CSR springs), which WEFT_CLOTH_FAST=0 selects for cloths created while it
 * is set. Checked on a busy grid (wind with drag and lift, four colliders, an attachment, pins;
 * not square, so rows and columns cannot be swapped unnoticed), on a rotated grid with an odd
 * number of substeps per frame, and on an OBJ mesh (the one-launch frame over CSR springs).
 * Tolerance: none (bitwise). */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

typedef wf_status (*builder)(wf_cloth **out);

static wf_status build_busy(wf_cloth **out) {
  return scene_busy(th_dev0, WF_CLOTH_SPRINGS, false, out);
}

static wf_status build_rotated(wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "rotated";
  d.substeps = 31;
  d.wind[2] = 2.0f;
  d.material.drag = 0.8f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 9, g.resolution[1] = 13;
  g.size[0] = 0.8f, g.size[1] = 1.2f;
  g.center[1] = 1.0f;
  g.u_axis[0] = 0.8f, g.u_axis[1] = 0.0f, g.u_axis[2] = 0.6f;
  g.v_axis[0] = 0.0f, g.v_axis[1] = 0.6f, g.v_axis[2] = 0.8f;
  wf_status st = wf_cloth_create_grid(th_dev0, &d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top", NULL);
  return st;
}

static wf_status build_mesh(wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  d.substeps = 6;
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = WEFT_ASSETS_DIR "/meshes/sheet_16x16.obj";
  m.translate[1] = 1.0f;
  wf_status st = wf_cloth_create_mesh(th_dev0, &d, &m, out);
  if (st != WF_OK) return st;
  wf_collider_desc s = scene_sphere(0.0f, 0.4f, 0.0f, 0.3f);
  return wf_cloth_add_collider(*out, &s, NULL);
}

/* Runs `frames` frames of the cloth built with the fast path on and with it off; the states
 * must be bitwise equal, and must have moved. */
static void compare(const char *what, builder build, int frames) {
  wf_cloth *fast = NULL, *slow = NULL;
  unsetenv("WEFT_CLOTH_FAST");
  CHECK_OK(build(&fast));
  setenv("WEFT_CLOTH_FAST", "0", 1);
  CHECK_OK(build(&slow));
  unsetenv("WEFT_CLOTH_FAST");
  REQUIRE(fast && slow);
  uint32_t n = 0, n2 = 0;
  float *s0 = scene_state(fast, &n);
  CHECK_OK(wf_cloth_step_frames(fast, frames));
  CHECK_OK(wf_cloth_step_frames(slow, frames));
  float *a = scene_state(fast, &n), *b = scene_state(slow, &n2);
  REQUIRE(s0 && a && b);
  CHECK_EQ_INT(n, n2);
  long d = scene_first_diff(a, b, (size_t)n * 8);
  if (d >= 0)
    TH_FAIL("%s: fast and general paths differ at float %ld (vertex %ld): %.9g vs %.9g", what, d,
            (d % ((long)n * 4)) / 4, a[d], b[d]);
  CHECK(scene_first_diff(s0, a, (size_t)n * 4) >= 0); /* it moved */
  wf_cloth_info ia, ib;
  CHECK_OK(wf_cloth_info_get(fast, &ia));
  CHECK_OK(wf_cloth_info_get(slow, &ib));
  CHECK(ia.graph_nodes < ib.graph_nodes); /* one launch instead of one per substep */
  free(s0), free(a), free(b);
  wf_cloth_destroy(fast), wf_cloth_destroy(slow);
}

TEST(busy_grid_bitwise) { compare("busy grid", build_busy, 25); }
TEST(rotated_grid_odd_substeps_bitwise) { compare("rotated grid", build_rotated, 20); }
TEST(mesh_one_launch_bitwise) { compare("OBJ mesh", build_mesh, 20); }

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(busy_grid_bitwise),
                                  TH_TEST(rotated_grid_odd_substeps_bitwise),
                                  TH_TEST(mesh_one_launch_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
