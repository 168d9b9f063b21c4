/* The cloth API: creation from grids, OBJ files and arrays, topology counts, named pins, and the
 * errors for bad input (each message checked for what was wrong and where). */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include <stdio.h>

#include "cloth_scenes.h"
#include "harness.h"

/* status == want and the message holds every word (case-insensitive). */
#define CHECK_ERR(e, want, ...)                                                                    \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    const char *words_[] = {__VA_ARGS__};                                                          \
    if (st_ != (want))                                                                             \
      TH_FAIL("%s -> %s, expected %s (%s)", #e, wf_status_str(st_), wf_status_str(want),           \
              wf_last_error());                                                                    \
    for (size_t k_ = 0; k_ < sizeof words_ / sizeof words_[0]; k_++)                               \
      if (!th_contains(wf_last_error(), words_[k_]))                                               \
        TH_FAIL("%s: message \"%s\" lacks \"%s\"", #e, wf_last_error(), words_[k_]);               \
  } while (0)

/* Writes text to a fresh temporary OBJ file; returns its path (static storage, one at a time). */
static const char *write_obj(const char *text) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/weft_cloth_test_%d.obj", (int)getpid());
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  fputs(text, f);
  fclose(f);
  return path;
}

static wf_status create_obj(const char *text, int integrator, wf_cloth **c) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "obj";
  d.integrator = integrator;
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = write_obj(text);
  d.devices[0] = th_dev0;
  wf_status st = wf_cloth_create_mesh(&d, &m, c);
  remove(m.path);
  return st;
}

/* Spring and constraint counts of an nu x nv grid, from the definitions in weft/cloth.h. */
TEST(grid_topology_counts) {
  const uint32_t nu = 7, nv = 5;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = (int)nu, g.resolution[1] = (int)nv;
  for (int integrator = 0; integrator < 2; integrator++) {
    wf_cloth_desc d = wf_cloth_desc_default();
    d.integrator = integrator;
    wf_cloth *c;
    d.devices[0] = th_dev0;
    CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
    wf_cloth_info info;
    CHECK_OK(wf_cloth_info_get(c, &info));
    uint32_t stretch = (nu - 1) * nv + nu * (nv - 1), shear = 2 * (nu - 1) * (nv - 1);
    uint32_t bend = (nu - 2) * nv + nu * (nv - 2);
    uint32_t interior = (nu - 1) * (nv - 2) + (nu - 2) * (nv - 1) + (nu - 1) * (nv - 1);
    CHECK_EQ_INT(info.vertices, nu * nv);
    CHECK_EQ_INT(info.triangles, 2 * (nu - 1) * (nv - 1));
    CHECK_EQ_INT(info.grid[0], nu);
    CHECK_EQ_INT(info.grid[1], nv);
    if (integrator == WF_CLOTH_SPRINGS) {
      CHECK_EQ_INT(info.springs, stretch + shear + bend);
    } else {
      CHECK_EQ_INT(info.constraints, stretch + shear + interior);
      CHECK(info.colours >= 8 && info.colours < 64); /* a vertex has 8 distance neighbours */
    }
    uint32_t n = 0;
    CHECK_OK(wf_cloth_pin_named(c, "top", &n));
    CHECK_EQ_INT(n, nu);
    CHECK_OK(wf_cloth_pin_named(c, "left", &n));
    CHECK_EQ_INT(n, nv);
    CHECK_OK(wf_cloth_pin_named(c, "bottom-right", &n));
    CHECK_EQ_INT(n, 1);
    CHECK_OK(wf_cloth_info_get(c, &info));
    CHECK_EQ_INT(info.pinned, nu + nv - 1 + 1);
    CHECK(info.device_bytes > nu * nv * 32);
    wf_cloth_destroy(c);
  }
}

/* The sheet under assets/meshes (quads with v/t/n corners): 256 vertices, 450 triangles, edges
 * = 3 T / 2 + boundary / 2 = 705; it simulates without NaN. */
TEST(obj_asset_loads) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = WEFT_ASSETS_DIR "/meshes/sheet_16x16.obj";
  m.translate[1] = 1.0f;
  wf_cloth *c;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_mesh(&d, &m, &c));
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(c, &info));
  CHECK_EQ_INT(info.vertices, 256);
  CHECK_EQ_INT(info.triangles, 450);
  CHECK_EQ_INT(info.grid[0], 0);
  /* springs: 705 edges (stretch) + 645 interior edges (bend across each) */
  CHECK_EQ_INT(info.springs, 705 + 645);
  CHECK_OK(wf_cloth_pin(c, 0));
  CHECK_OK(wf_cloth_step_frames(c, 10));
  CHECK_OK(wf_cloth_check(c));
  CHECK_ERR(wf_cloth_pin_named(c, "top", NULL), WF_ERR_INVALID, "sheet", "grid");
  wf_cloth_destroy(c);
}

/* Polygons become fans; "i", "i/t", "i//n", "i/t/n" and negative indices all name vertices. */
TEST(obj_forms_and_fans) {
  wf_cloth *c;
  CHECK_OK(create_obj("# a pentagon and a triangle\n"
                      "v 0 0 0\nv 1 0 0\nv 1.5 0 1\nv 0.5 0 1.8\nv -0.5 0 1\n"
                      "vt 0 0\nvn 0 1 0\n"
                      "f 1 2/1 3//1 4/1/1 5\n"
                      "v 0.5 0 -1\n"
                      "f -1 -5 -6\n",
                      WF_CLOTH_SPRINGS, &c));
  uint32_t nt = 0;
  const uint32_t *t = wf_cloth_triangles(c, &nt);
  REQUIRE(t && nt == 4);
  const uint32_t want[12] = {0, 1, 2, 0, 2, 3, 0, 3, 4, 5, 1, 0};
  for (int k = 0; k < 12; k++)
    CHECK_EQ_INT(t[k], want[k]);
  wf_cloth_destroy(c);
}

TEST(obj_errors) {
  wf_cloth *c = NULL;
  CHECK_ERR(create_obj("# nothing\nv 0 0 0\n", WF_CLOTH_SPRINGS, &c), WF_ERR_PARSE, "no faces",
            "empty");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 1 1 1\n"
                       "f 1 2 3\nf 2 1 4\nf 1 2 5\n",
                       WF_CLOTH_SPRINGS, &c),
            WF_ERR_INVALID, ":8:", "non-manifold", "edge (", ":6", ":7");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n", WF_CLOTH_XPBD, &c), WF_ERR_INVALID,
            ":4:", "degenerate", "zero area");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 2\n", WF_CLOTH_SPRINGS, &c),
            WF_ERR_INVALID, ":4:", "degenerate");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 2 7\n", WF_CLOTH_SPRINGS, &c),
            WF_ERR_PARSE, ":5:", "vertex 7", "3 vertices");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 -4 2\n", WF_CLOTH_SPRINGS, &c), WF_ERR_PARSE,
            ":4:");
  CHECK_ERR(create_obj("v 0 0\nf 1 2 3\n", WF_CLOTH_SPRINGS, &c), WF_ERR_PARSE,
            ":1:", "3 finite coordinates");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nf 1 2\n", WF_CLOTH_SPRINGS, &c), WF_ERR_PARSE,
            ":3:", "at least 3");
  CHECK_ERR(create_obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 x 3\n", WF_CLOTH_SPRINGS, &c), WF_ERR_PARSE,
            ":4:", "corner 2");
  CHECK(c == NULL);
  wf_cloth_desc d = wf_cloth_desc_default();
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = "/nonexistent/shirt.obj";
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_mesh(&d, &m, &c), WF_ERR_IO, "/nonexistent/shirt.obj");
  /* arrays: a triangle index out of range, and an empty mesh */
  const float v[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  const uint32_t t[1][3] = {{0, 1, 3}};
  m = wf_cloth_mesh_desc_default();
  m.vertices = v, m.vertex_count = 3, m.triangles = t, m.triangle_count = 1;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_mesh(&d, &m, &c), WF_ERR_INVALID, "triangles[0]", "vertex 3");
  m.triangle_count = 0;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_mesh(&d, &m, &c), WF_ERR_INVALID, "empty");
  /* density with a vertex in no triangle: no mass */
  const float v4[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {5, 5, 5}};
  const uint32_t t4[1][3] = {{0, 1, 2}};
  m.vertices = v4, m.vertex_count = 4, m.triangles = t4, m.triangle_count = 1;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_mesh(&d, &m, &c), WF_ERR_INVALID, "vertex 3", "particle_mass");
}

TEST(parameter_errors) {
  wf_cloth *c = NULL;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[1] = 0;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "sheet",
            "grid.resolution[1]", "zero resolution");
  g = wf_cloth_grid_default();
  g.v_axis[0] = 1.0f, g.v_axis[2] = 0.0f;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "sheet", "parallel");
  g = wf_cloth_grid_default();
  d.material.stretch_stiffness = -3.0f;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "sheet",
            "material.stretch_stiffness", "-3");
  d = wf_cloth_desc_default();
  d.name = "sheet";
  d.material.bend_compliance = -1.0f;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "material.bend_compliance");
  d = wf_cloth_desc_default();
  d.name = "sheet";
  d.substeps = 0;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "sheet", "substeps");
  d.substeps = 4;
  d.frame_dt = 0.0f;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "frame_dt");
  d = wf_cloth_desc_default();
  d.name = "sheet";
  d.material.density = 0.0f;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "density", "particle_mass");
  d.integrator = 7;
  d.devices[0] = th_dev0;
  CHECK_ERR(wf_cloth_create_grid(&d, &g, &c), WF_ERR_INVALID, "integrator");
  CHECK(c == NULL);

  d = wf_cloth_desc_default();
  d.name = "sheet";
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
  CHECK_ERR(wf_cloth_pin(c, 256), WF_ERR_INVALID, "sheet", "vertex 256", "out of range");
  CHECK_ERR(wf_cloth_pin_named(c, "middle", NULL), WF_ERR_INVALID, "sheet", "middle", "top-left");
  float lo[3] = {5, 5, 5}, hi[3] = {6, 6, 6};
  CHECK_ERR(wf_cloth_pin_region(c, lo, hi, NULL), WF_ERR_INVALID, "sheet", "no vertex");
  CHECK_ERR(wf_cloth_attach(c, 0, 0), WF_ERR_INVALID, "collider 0", "does not exist");
  wf_collider_desc s = scene_sphere(0, 0, 0, -1.0f);
  CHECK_ERR(wf_cloth_add_collider(c, &s, NULL), WF_ERR_INVALID, "sheet", "sphere", "radius");
  wf_cloth_material m = wf_cloth_material_default();
  m.friction = -0.5f;
  CHECK_ERR(wf_cloth_set_material(c, &m), WF_ERR_INVALID, "material.friction");
  wf_cloth_params p = wf_cloth_params_get(c);
  CHECK_NEAR(p.frame_dt, 1.0 / 60.0, 1e-9);
  p.damping = -1.0f;
  CHECK_ERR(wf_cloth_params_set(c, &p), WF_ERR_INVALID, "sheet", "damping");
  CHECK_ERR(wf_cloth_step_frames(c, -1), WF_ERR_INVALID, "frames");
  wf_cloth_destroy(c);
}

/* Changing parameters between frames needs no recapture: the graph's node count stays, and
 * turning gravity off stops the fall (velocities stay what they were, no damping). */
TEST(params_change_without_recapture) {
  wf_cloth_desc d = wf_cloth_desc_default();
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 4;
  wf_cloth *c;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
  CHECK_OK(wf_cloth_step_frames(c, 2));
  wf_cloth_info before, after;
  CHECK_OK(wf_cloth_info_get(c, &before));
  wf_cloth_params p = wf_cloth_params_get(c);
  p.gravity[1] = 0.0f;
  CHECK_OK(wf_cloth_params_set(c, &p));
  float v0[16][4], v1[16][4];
  CHECK_OK(wf_cloth_download(c, NULL, v0));
  CHECK_OK(wf_cloth_step_frames(c, 3));
  CHECK_OK(wf_cloth_download(c, NULL, v1));
  CHECK_OK(wf_cloth_info_get(c, &after));
  CHECK_EQ_INT(before.graph_nodes, after.graph_nodes);
  CHECK_EQ_INT(after.graph_nodes, 1); /* springs: the frame is one launch (cloth_fast.h) */
  for (int i = 0; i < 16; i++)        /* a flat sheet falling as one: no spring force, no change */
    CHECK(v1[i][1] == v0[i][1] && v0[i][1] < 0.0f);
  wf_cloth_destroy(c);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(grid_topology_counts), TH_TEST(obj_asset_loads),
      TH_TEST(obj_forms_and_fans),   TH_TEST(obj_errors),
      TH_TEST(parameter_errors),     TH_TEST(params_change_without_recapture)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
