/* Forces of cloth on colliders (wf_cloth_collider_force): a cloth draped over a sphere rests its
 * weight on it (mass-spring and XPBD); a cloth lying on an off-centre table gives the torque
 * r x F about the table's pivot; 1..4 partitions give bitwise the same forces. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "harness.h"
#include "weft/cloth.h"
#include "weft/particles.h"

#define G 9.81

static wf_device *dev_of(int i) {
  char name[32];
  wf_device *d = NULL;
  snprintf(name, sizeof name, "%s:%d", th_kind, i);
  if (wf_device_get(name, &d) != WF_OK) d = th_dev0;
  wf_clear_error();
  return d;
}

/* A 1 m cloth of 16 x 16 vertices, flat at height y over (cx, cz), with damping 2/s so that it
 * settles in a second; on `devices` partitions (0: th_dev0). */
static wf_cloth *sheet(int integrator, float cx, float y, float cz, float size, int devices) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  d.integrator = integrator;
  d.damping = 2.0f;
  if (devices > 0) {
    for (int i = 0; i < devices; i++)
      d.devices[i] = dev_of(i);
    d.device_count = devices;
  } else {
    d.devices[0] = th_dev0;
  }
  wf_cloth_grid g = wf_cloth_grid_default();
  g.size[0] = g.size[1] = size;
  g.center[0] = cx, g.center[1] = y, g.center[2] = cz;
  wf_cloth *c = NULL;
  if (wf_cloth_create_grid(&d, &g, &c) != WF_OK) TH_FAIL("create: %s", wf_last_error());
  if (c && wf_cloth_measure_collider_forces(c, true) != WF_OK) TH_FAIL("%s", wf_last_error());
  return c;
}

static double cloth_mass(wf_cloth *c, double cm[3]) {
  uint32_t n = wf_cloth_count(c);
  float(*x)[4] = malloc((size_t)n * sizeof *x);
  double m = 0.0;
  cm[0] = cm[1] = cm[2] = 0.0;
  if (x && wf_cloth_download(c, x, NULL) == WF_OK)
    for (uint32_t i = 0; i < n; i++) {
      double mi = x[i][3] > 0.0f ? 1.0 / x[i][3] : 0.0;
      m += mi;
      for (int j = 0; j < 3; j++)
        cm[j] += mi * x[i][j];
    }
  for (int j = 0; j < 3; j++)
    cm[j] /= m;
  free(x);
  return m;
}

/* Draped over a sphere of radius 0.3 (friction 0.5 holds it): after 2 s the sphere carries the
 * weight. Tolerance 0.5% of W: the frame average differs from W by the rate of change of the
 * cloth's momentum, which its damping (2/s) has brought well below that. */
static void drape_on_sphere(int integrator) {
  wf_cloth *c = sheet(integrator, 0.0f, 0.36f, 0.0f, 1.0f, 0);
  REQUIRE(c);
  wf_collider_desc s = wf_collider_desc_default();
  s.name = "ball", s.type = WF_COLLIDER_SPHERE, s.radius = 0.3f;
  CHECK_OK(wf_cloth_add_collider(c, &s, NULL));
  CHECK_OK(wf_cloth_step_frames(c, 120));
  double cm[3], M = cloth_mass(c, cm), f[3], t[3];
  CHECK_OK(wf_cloth_collider_force(c, 0, f, t));
  double W = M * G;
  printf("  %s drape: fy / W = %.5f; torque (%.5f, %.5f) vs r x F (%.5f, %.5f) N m\n",
         integrator ? "xpbd" : "springs", f[1] / W, t[0], t[2], cm[2] * W, -cm[0] * W);
  CHECK(cm[1] < 0.2); /* it draped: the sides hang down */
  CHECK_NEAR(f[1] / W, -1.0, 5e-3);
  CHECK(fabs(f[0]) < 5e-3 * W && fabs(f[2]) < 5e-3 * W);
  /* the weight through the centre of mass balances the sphere's torque about its centre (its
   * pivot): t = r x (0, -W, 0) = (r_z W, 0, -r_x W), the drape being a little off-centre;
   * tolerance 0.5% of W R */
  CHECK_NEAR(t[0], cm[2] * W, 5e-3 * W * 0.3);
  CHECK_NEAR(t[2], -cm[0] * W, 5e-3 * W * 0.3);
  wf_cloth_destroy(c);
}

TEST(springs_drape_weight_on_sphere) { drape_on_sphere(WF_CLOTH_SPRINGS); }
TEST(xpbd_drape_weight_on_sphere) { drape_on_sphere(WF_CLOTH_XPBD); }

/* A 0.6 m cloth lying on a table top (a box, 1 m square, centred at (1, 0, -0.5), pivot at the
 * origin): torque = r x (0, -W, 0) = (r_z W, 0, -r_x W), r the cloth's centre of mass; the
 * contacts are at the table's surface, 0.1 m + thickness under the cloth, which adds nothing
 * about x and z for vertical forces. Tolerance 0.5% of |r| W. */
TEST(table_torque_is_r_cross_f) {
  wf_cloth *c = sheet(WF_CLOTH_SPRINGS, 1.0f, 0.12f, -0.5f, 0.6f, 0);
  REQUIRE(c);
  wf_collider_desc b = wf_collider_desc_default();
  b.name = "table", b.type = WF_COLLIDER_BOX;
  b.center[0] = 1.0f, b.center[2] = -0.5f;
  b.half_extents[0] = 0.5f, b.half_extents[1] = 0.1f, b.half_extents[2] = 0.5f;
  CHECK_OK(wf_cloth_add_collider(c, &b, NULL));
  CHECK_OK(wf_cloth_step_frames(c, 60));
  double cm[3], M = cloth_mass(c, cm), f[3], t[3];
  CHECK_OK(wf_cloth_collider_force(c, 0, f, t));
  double W = M * G, r = sqrt(cm[0] * cm[0] + cm[2] * cm[2]);
  printf("  table: fy / W = %.5f; torque (%.5f, %.5f, %.5f) vs r x F (%.5f, 0, %.5f) N m\n",
         f[1] / W, t[0], t[1], t[2], cm[2] * W, -cm[0] * W);
  CHECK_NEAR(f[1] / W, -1.0, 5e-3);
  CHECK_NEAR(t[0], cm[2] * W, 5e-3 * r * W);
  CHECK_NEAR(t[2], -cm[0] * W, 5e-3 * r * W);
  CHECK(fabs(t[1]) < 5e-3 * r * W);
  wf_cloth_destroy(c);
}

/* Integer sums: 1..4 partitions give the same bits (memcmp), while the cloth lands (frame 20). */
static void partitions_bitwise(int integrator) {
  double want[6];
  for (int np = 1; np <= 4; np++) {
    wf_cloth *c = sheet(integrator, 0.0f, 0.36f, 0.0f, 1.0f, np);
    REQUIRE(c);
    wf_collider_desc s = wf_collider_desc_default();
    s.name = "ball", s.type = WF_COLLIDER_SPHERE, s.radius = 0.3f;
    CHECK_OK(wf_cloth_add_collider(c, &s, NULL));
    CHECK_OK(wf_cloth_step_frames(c, 20));
    double got[6];
    CHECK_OK(wf_cloth_collider_force(c, 0, got, got + 3));
    if (np == 1) {
      memcpy(want, got, sizeof want);
      CHECK(fabs(want[1]) > 0.01);
    } else if (memcmp(want, got, sizeof want) != 0) {
      TH_FAIL("%d partitions: force y %.17g vs %.17g", np, got[1], want[1]);
    }
    wf_cloth_destroy(c);
  }
}

/* Positions and velocities (8 floats a vertex) of c. */
static float *cloth_state(wf_cloth *c, uint32_t *n) {
  *n = wf_cloth_count(c);
  float *s = calloc((size_t)*n * 8 + 1, sizeof *s);
  if (s && wf_cloth_download(c, (float(*)[4])s, (float(*)[4])(s + 4 * *n)) != WF_OK) {
    TH_FAIL("download: %s", wf_last_error());
    free(s);
    s = NULL;
  }
  return s;
}

/* The sums are made only when measured (wf_cloth_measure_collider_forces), and measuring does
 * not change the motion: a cloth that does not measure them lands on the sphere bitwise as one
 * that does (1 and 2 partitions); its first read is zero and turns the measuring on, and the next
 * frame's force is bitwise the measuring cloth's. */
static void measured_on_demand(int integrator) {
  for (int np = 1; np <= 2; np++) {
    wf_cloth *a = sheet(integrator, 0.0f, 0.36f, 0.0f, 1.0f, np);
    wf_cloth *b = sheet(integrator, 0.0f, 0.36f, 0.0f, 1.0f, np);
    REQUIRE(a && b);
    CHECK_OK(wf_cloth_measure_collider_forces(b, false));
    wf_collider_desc s = wf_collider_desc_default();
    s.name = "ball", s.type = WF_COLLIDER_SPHERE, s.radius = 0.3f;
    CHECK_OK(wf_cloth_add_collider(a, &s, NULL));
    CHECK_OK(wf_cloth_add_collider(b, &s, NULL));
    CHECK_OK(wf_cloth_step_frames(a, 20));
    CHECK_OK(wf_cloth_step_frames(b, 20));
    uint32_t na, nb;
    float *sa = cloth_state(a, &na), *sb = cloth_state(b, &nb);
    REQUIRE(sa && sb && na == nb);
    if (memcmp(sa, sb, (size_t)na * 8 * sizeof *sa) != 0)
      TH_FAIL("%d partitions: measuring the forces changed the motion", np);
    free(sa), free(sb);
    double fa[6], fb[6] = {1, 1, 1, 1, 1, 1};
    CHECK_OK(wf_cloth_collider_force(b, 0, fb, fb + 3)); /* not measured: zero, and on */
    CHECK(fb[0] == 0.0 && fb[1] == 0.0 && fb[5] == 0.0);
    CHECK_OK(wf_cloth_step_frames(a, 1));
    CHECK_OK(wf_cloth_step_frames(b, 1));
    CHECK_OK(wf_cloth_collider_force(a, 0, fa, fa + 3));
    CHECK_OK(wf_cloth_collider_force(b, 0, fb, fb + 3));
    CHECK(fa[1] < -0.01); /* the cloth presses on the ball: not a comparison of zeros */
    if (memcmp(fa, fb, sizeof fa) != 0)
      TH_FAIL("%d partitions: force y %.17g measured from the start, %.17g from frame 20", np,
              fa[1], fb[1]);
    wf_cloth_destroy(a);
    wf_cloth_destroy(b);
  }
}

TEST(springs_measured_on_demand) { measured_on_demand(WF_CLOTH_SPRINGS); }
TEST(xpbd_measured_on_demand) { measured_on_demand(WF_CLOTH_XPBD); }

TEST(springs_forces_bitwise_1_to_4_partitions) { partitions_bitwise(WF_CLOTH_SPRINGS); }
TEST(xpbd_forces_bitwise_1_to_4_partitions) { partitions_bitwise(WF_CLOTH_XPBD); }

TEST(bad_arguments) {
  wf_cloth *c = sheet(WF_CLOTH_SPRINGS, 0.0f, 1.0f, 0.0f, 1.0f, 0);
  REQUIRE(c);
  double f[3], t[3];
  CHECK_ERROR(wf_cloth_collider_force(c, 0, f, t), WF_ERR_INVALID, "collider 0");
  CHECK_STATUS(wf_cloth_collider_force(NULL, 0, f, t), WF_ERR_INVALID);
  wf_cloth_destroy(c);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(springs_drape_weight_on_sphere),
      TH_TEST(xpbd_drape_weight_on_sphere),
      TH_TEST(table_torque_is_r_cross_f),
      TH_TEST(springs_measured_on_demand),
      TH_TEST(xpbd_measured_on_demand),
      TH_TEST(springs_forces_bitwise_1_to_4_partitions),
      TH_TEST(xpbd_forces_bitwise_1_to_4_partitions),
      TH_TEST(bad_arguments),
  };
  return th_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
