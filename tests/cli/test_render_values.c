/* The values the pictures are coloured by (cli/render_values.c, compiled into this test):
 *  - strain: a 4 x 4 grid cloth stretched by 5% along x has strain 0.05 at every vertex (the x
 *    edges: |1.05 L - L| / L; the diagonals and y edges stretch less), and 0 unstretched;
 *  - contact force, linear: two particles of stiffness k overlapping by δ each get k δ; one
 *    resting δ into the ground plane gets k δ; one alone in the air, 0;
 *  - the same with the Hertz model: 4/3 E* sqrt(R*) δ^(3/2), E* = E / (2 (1 - ν²)) between two
 *    particles of one material and E / (1 - ν²) against the rigid plane, R* = r / 2 and r.
 * Tolerances: strain 1e-5 (float lengths); forces 1e-3 relative (δ = 2 mm comes from float
 * positions near 1 m, good to ~1e-7 m, and enters as δ or δ^1.5).
 */
#include "harness.h"

#include <math.h>

#include "../../cli/render_values.h"
#include "weft/scene.h"
#include "weft/world.h"

static const char *scene_text(bool hertz) {
  return hertz ? "{\"simulation\": {\"devices\": \"cpu\", \"contact_model\": \"hertz\"},"
                 " \"materials\": [{\"name\": \"m\", \"young\": 1e7, \"poisson\": 0.3}],"
                 " \"particles\": [{\"name\": \"p\", \"center\": [0, 5, 0], \"half_extents\": "
                 "[0.1, 0.05, 0.05], \"radius\": 0.02, \"spacing\": 0.1, \"material\": \"m\"}]}"
               : "{\"simulation\": {\"devices\": \"cpu\"},"
                 " \"materials\": [{\"name\": \"m\", \"stiffness\": 3000}],"
                 " \"particles\": [{\"name\": \"p\", \"center\": [0, 5, 0], \"half_extents\": "
                 "[0.1, 0.05, 0.05], \"radius\": 0.02, \"spacing\": 0.1, \"material\": \"m\"}],"
                 " \"cloths\": [{\"name\": \"c\", \"grid\": {\"size\": [1, 1], \"resolution\": "
                 "[4, 4]}, \"center\": [0, 8, 0]}]}";
}

static wf_world *make(bool hertz, wf_scene **sc) {
  const char *t = scene_text(hertz);
  if (wf_scene_parse(t, strlen(t), "t.json", ".", NULL, sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu";
  wf_world *w = NULL;
  if (wf_world_create(*sc, &d, &w) != WF_OK) TH_FAIL("world: %s", wf_last_error());
  return w;
}

TEST(strain_of_a_stretched_grid) {
  wf_scene *sc = NULL;
  wf_world *w = make(false, &sc);
  REQUIRE(w);
  float p0[2][4], c[16][4];
  CHECK_OK(wf_world_object_download(w, 0, p0, NULL));
  CHECK_OK(wf_world_object_download(w, 1, c, NULL));
  const float(*pos[2])[4] = {p0, c};
  wf_cli_values *v = NULL;
  CHECK_OK(wf_cli_values_create(sc, w, pos, &v));
  float s[16];
  wf_cli_values_strain(v, 1, c, s);
  for (int i = 0; i < 16; i++)
    CHECK_NEAR(s[i], 0.0f, 1e-6f);
  for (int i = 0; i < 16; i++)
    c[i][0] *= 1.05f; /* the grid is centred at x = 0: every x edge 5% longer */
  wf_cli_values_strain(v, 1, c, s);
  for (int i = 0; i < 16; i++)
    CHECK_NEAR(s[i], 0.05f, 1e-5f);
  wf_cli_values_destroy(v);
  wf_world_destroy(w);
  wf_scene_destroy(sc);
}

static void check_forces(bool hertz) {
  wf_scene *sc = NULL;
  wf_world *w = make(hertz, &sc);
  REQUIRE(w);
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  REQUIRE(o.point_count == 2);
  float p[2][4], c[16][4];
  CHECK_OK(wf_world_object_download(w, 0, p, NULL));
  if (wf_world_object_count(w) > 1) CHECK_OK(wf_world_object_download(w, 1, c, NULL));
  const float(*pos[2])[4] = {p, c};
  wf_cli_values *v = NULL;
  CHECK_OK(wf_cli_values_create(sc, w, pos, &v));
  double r = 0.02, delta = 0.002, E = 1e7, nu = 0.3;
  float plane[4] = {0, 1, 0, 0};
  float f[2] = {-1, -1};
  float *out[2] = {f, NULL};
  /* a pair overlapping by delta, 1 m above the ground */
  float q[2][4] = {{0.3f, 1.0f, 0.1f, (float)r},
                   {0.3f + (float)(2 * r - delta), 1.0f, 0.1f, (float)r}};
  const float(*qp[2])[4] = {q, c};
  CHECK_OK(wf_cli_values_force(v, qp, plane, 1, out));
  double pair = hertz ? 4.0 / 3.0 * (E / (2 * (1 - nu * nu))) * sqrt(r / 2) * pow(delta, 1.5)
                      : 3000.0 * delta;
  printf("  %s pair: %.6g and %.6g N, expected %.6g N\n", hertz ? "hertz" : "linear", f[0], f[1],
         pair);
  CHECK_NEAR(f[0], pair, 1e-3 * pair); /* delta from float positions: 1e-7 m of 2e-3 m */
  CHECK_NEAR(f[1], pair, 1e-3 * pair);
  /* one resting delta into the ground, the other far away */
  q[0][1] = (float)(r - delta), q[1][0] = 5.0f;
  CHECK_OK(wf_cli_values_force(v, qp, plane, 1, out));
  double ground =
      hertz ? 4.0 / 3.0 * (E / (1 - nu * nu)) * sqrt(r) * pow(delta, 1.5) : 3000.0 * delta;
  printf("  %s ground: %.6g N, expected %.6g N\n", hertz ? "hertz" : "linear", f[0], ground);
  CHECK_NEAR(f[0], ground, 1e-3 * ground);
  CHECK_NEAR(f[1], 0.0f, 0.0f);
  wf_cli_values_destroy(v);
  wf_world_destroy(w);
  wf_scene_destroy(sc);
}

TEST(contact_force_linear) { check_forces(false); }
TEST(contact_force_hertz) { check_forces(true); }

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(strain_of_a_stretched_grid),
                                  TH_TEST(contact_force_linear), TH_TEST(contact_force_hertz)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
