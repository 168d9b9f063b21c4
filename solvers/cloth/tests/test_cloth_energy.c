/* The cloth's energies (wf_cloth_energy_get) against closed forms:
 *  - a mass hanging at rest from two (nearly vertical) springs of constant k stores the elastic
 *    energy (m g)² / (2 k_eff), k_eff = 2 k: mass-spring and XPBD (compliance α = 1/k);
 *  - an undamped mass-spring system conserves kinetic + potential + elastic energy up to the
 *    error of symplectic Euler, which is first order: halving dt halves the largest deviation;
 *  - the energies are bitwise the same on 1 and 2 partitions (CPU devices), mass-spring and XPBD.
 */
#include "harness.h"

#include "weft/cloth.h"

/* The test system: a triangle whose top two corners (0, 1) are pinned 2 eps apart and whose
 * third corner (2) hangs l below them, each free spring of constant k (raw coefficients: no
 * shear or bend springs; the springs' rest lengths are the initial ones). */
static wf_status hanging(int integrator, float eps, float l, float m, float k, float damping,
                         int substeps, int iterations, wf_device *dev, wf_cloth **out) {
  static float v[3][3];
  static const uint32_t t[1][3] = {{0, 2, 1}};
  v[0][0] = -eps, v[0][1] = 0.0f, v[0][2] = 0.0f;
  v[1][0] = eps, v[1][1] = 0.0f, v[1][2] = 0.0f;
  v[2][0] = 0.0f, v[2][1] = -l, v[2][2] = 0.0f;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "hanging";
  d.integrator = integrator;
  d.substeps = substeps;
  d.iterations = iterations;
  d.damping = damping;
  d.devices[0] = dev, d.device_count = 1;
  d.material.particle_mass = m;
  d.material.coefficients = true;
  d.material.stretch_stiffness = k, d.material.shear_stiffness = 0.0f;
  d.material.bend_stiffness = 0.0f;
  d.material.stretch_compliance = 1.0f / k, d.material.shear_compliance = 0.0f;
  d.material.bend_compliance = 0.0f;
  d.material.damping = 0.0f;
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.vertices = (const float(*)[3])v, md.vertex_count = 3;
  md.triangles = t, md.triangle_count = 1;
  wf_status st = wf_cloth_create_mesh(&d, &md, out);
  if (st == WF_OK) st = wf_cloth_pin(*out, 0);
  if (st == WF_OK) st = wf_cloth_pin(*out, 1);
  return st;
}

/* At rest the free vertex has sunk by δ = m g / k_eff and the springs hold ½ k_eff δ². The
 * springs lean by eps / l = 1e-3 from the vertical, which changes k_eff by a relative 1e-6; the
 * float state resolves δ (~1e-2 m at y ~ 1 m, spacing 6e-8) to ~1e-5, so its square to ~2e-5:
 * tolerance 1e-3 relative. Global damping 20/s takes the initial bounce down by e^-20 in 2 s. */
static void rest_energy(int integrator, int iterations) {
  const float m = 0.1f, k = 50.0f, g = 9.81f;
  wf_cloth *c;
  CHECK_OK(hanging(integrator, 1e-3f, 1.0f, m, k, 20.0f, 16, iterations, th_dev0, &c));
  CHECK_OK(wf_cloth_step_frames(c, 120));
  wf_cloth_energy e;
  CHECK_OK(wf_cloth_energy_get(c, &e));
  double want = (double)(m * g) * (m * g) / (2.0 * 2.0 * k);
  printf("  %s: elastic %.9g J, closed form %.9g J (rel %.2g), kinetic %.3g J\n",
         integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", e.elastic, want,
         fabs(e.elastic - want) / want, e.kinetic);
  CHECK_NEAR(e.elastic, want, 1e-3 * want);
  CHECK_NEAR(e.stretch, e.elastic, 0.0); /* only stretch springs / constraints here */
  /* at rest, but for the float state's rounding: y (~1 m, spacing 6e-8 m) rounded every substep
   * (1e-3 s) is a jitter of ~6e-5 m/s, ½ m v² ~ 2e-10 J; bound 1e-8 J */
  CHECK(e.kinetic < 1e-8);
  /* the potential is that of the free vertex only (pinned ones have no finite mass) */
  float pos[3][4];
  CHECK_OK(wf_cloth_download(c, pos, NULL));
  /* to the float mass's rounding (1 / (1 / m) in float): 1e-6 relative */
  CHECK_NEAR(e.potential, (double)m * g * pos[2][1], 1e-6 * fabs((double)m * g * pos[2][1]));
  CHECK_NEAR(e.total, e.kinetic + e.potential + e.elastic, 1e-15);
  wf_cloth_destroy(c);
}

TEST(hanging_spring_at_rest) { rest_energy(WF_CLOTH_SPRINGS, 1); }
/* XPBD's static solution is exact once the Gauss–Seidel sweeps converge (C = α m g / 2 on each
 * constraint): 20 sweeps over two constraints. */
TEST(hanging_xpbd_at_rest) { rest_energy(WF_CLOTH_XPBD, 20); }

/* The largest |E(frame) - E(0)| over 60 frames of an undamped swing-and-bounce at `substeps` per
 * frame; *exchanged: the largest kinetic energy seen (the scale of what is exchanged). */
static int drift(int substeps, double *out, double *exchanged) {
  wf_cloth *c;
  wf_status st = hanging(WF_CLOTH_SPRINGS, 0.5f, 0.8f, 0.1f, 50.0f, 0.0f, substeps, 1, th_dev0, &c);
  if (st != WF_OK) return 0;
  float pos[3][4], vel[3][4];
  wf_cloth_download(c, pos, vel);
  vel[2][0] = 1.0f, vel[2][2] = 0.5f; /* a sideways push: it swings out of the plane and bounces */
  st = wf_cloth_set_state(c, (const float(*)[4])pos, (const float(*)[4])vel, 0.0, 0);
  wf_cloth_energy e0, e;
  if (st == WF_OK) st = wf_cloth_energy_get(c, &e0);
  *out = 0.0, *exchanged = e0.kinetic;
  for (int f = 0; f < 60 && st == WF_OK; f++) {
    st = wf_cloth_step_frames(c, 1);
    if (st == WF_OK) st = wf_cloth_energy_get(c, &e);
    if (st == WF_OK) *out = fmax(*out, fabs(e.total - e0.total));
    if (st == WF_OK) *exchanged = fmax(*exchanged, e.kinetic);
  }
  wf_cloth_destroy(c);
  return st == WF_OK;
}

/* Symplectic Euler keeps a modified energy within O(dt) of the true one and has no secular drift:
 * the largest deviation over a second is of order ω dt E (ω = sqrt(2k/m) = 32 rad/s; dt = 1/960 s
 * gives ω dt = 0.03). Bounds: below 3% of the energy exchanged at dt = 1/960 s, and a ratio of
 * deviations between 1.6 and 2.4 when dt halves (first order: 2; the float state's rounding,
 * ~1e-7 J, is far below the deviations). */
TEST(undamped_springs_conserve_energy) {
  double d16, d32, x16, x32;
  REQUIRE(drift(16, &d16, &x16));
  REQUIRE(drift(32, &d32, &x32));
  printf("  max |E - E0|: %.4g J at dt = 1/960 s, %.4g J at 1/1920 s (ratio %.3f); exchanged "
         "%.4g J\n",
         d16, d32, d16 / d32, x16);
  CHECK(d16 < 0.03 * x16);
  CHECK(d16 / d32 > 1.6 && d16 / d32 < 2.4);
}

/* A grid (stretch, shear and bend springs, or distance and dihedral constraints) with pins,
 * after some frames: the energies of 1 and 2 partitions are bitwise equal. */
static void partitions_agree(int integrator) {
  NEED_TWO_DEVICES();
  wf_cloth_energy e[2];
  for (int n = 1; n <= 2; n++) {
    wf_cloth_desc d = wf_cloth_desc_default();
    d.integrator = integrator;
    d.substeps = 8;
    d.iterations = 2;
    d.devices[0] = th_dev0, d.devices[1] = th_dev1, d.device_count = n;
    d.material = wf_cloth_material_default();
    d.material.drag = 1.0f;
    d.wind[2] = 4.0f; /* blown out of its plane: the hinges bend */
    wf_cloth_grid g = wf_cloth_grid_default();
    g.resolution[0] = 12, g.resolution[1] = 9;
    g.v_axis[0] = 0.0f, g.v_axis[1] = 1.0f, g.v_axis[2] = 0.0f; /* hanging */
    wf_cloth *c;
    CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
    CHECK_OK(wf_cloth_pin_named(c, "top-left", NULL));
    CHECK_OK(wf_cloth_pin_named(c, "top-right", NULL));
    CHECK_OK(wf_cloth_step_frames(c, 10));
    CHECK_OK(wf_cloth_energy_get(c, &e[n - 1]));
    wf_cloth_destroy(c);
  }
  printf("  kinetic %.9g potential %.9g stretch %.9g shear %.9g bend %.9g\n", e[0].kinetic,
         e[0].potential, e[0].stretch, e[0].shear, e[0].bend);
  CHECK(e[0].kinetic > 0.0 && e[0].stretch > 0.0 && e[0].shear > 0.0 && e[0].bend > 0.0);
  CHECK(memcmp(&e[0], &e[1], sizeof e[0]) == 0);
}

TEST(springs_partitions_bitwise) { partitions_agree(WF_CLOTH_SPRINGS); }
TEST(xpbd_partitions_bitwise) { partitions_agree(WF_CLOTH_XPBD); }

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(hanging_spring_at_rest),           TH_TEST(hanging_xpbd_at_rest),
      TH_TEST(undamped_springs_conserve_energy), TH_TEST(springs_partitions_bitwise),
      TH_TEST(xpbd_partitions_bitwise),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
