/* The particles' energies (wf_particles_energy_get, the linear DEM spring's ½ k δ²) against closed
 * forms:
 *  - a particle resting on a plane, or on a kinematic particle, stores (m g)² / (2 k): the
 *    collider's spring, or the pair's spring counted once (half in each particle's row);
 *  - two particles colliding head on without damping conserve kinetic + contact energy up to the
 *    first-order error of symplectic Euler: halving dt halves the largest deviation;
 *  - the energies are bitwise the same on 1 and 2 partitions (CPU devices), and the ranges of an
 *    energy split add up to the whole.
 */
#include "harness.h"

#include "weft/particles.h"

static wf_particles_desc desc_on(int substeps, float frame_dt, float gravity) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "energy-test";
  d.substeps = substeps;
  d.frame_dt = frame_dt;
  d.gravity[1] = -gravity;
  d.devices[0] = th_dev0, d.device_count = 1;
  return d;
}

/* A particle of mass m = 0.1 kg, radius 0.05 m, k = 1e4 N/m, starting at rest just touching
 * a support below it (the plane y = 0, or a kinematic particle of the same radius at the origin),
 * settles by δ = m g / k ≈ 1e-4 m. The dashpots of restitution 0.5 (ζ ≈ 0.2, ω = 316 rad/s)
 * damp the first bounce by e^-60 in a second. The float state resolves δ to ~4e-9 m (y ≈ 0.05
 * or 0.1), ~4e-5 of it: tolerance 1e-3 relative. */
static void resting(bool on_particle) {
  const float m = 0.1f, k = 1e4f, g = 9.81f, r = 0.05f;
  wf_particles_desc d = desc_on(64, 1.0f / 60.0f, g);
  wf_particles *ps;
  CHECK_OK(wf_particles_create(&d, &ps));
  wf_particle_material mat = wf_particle_material_default();
  mat.stiffness = k, mat.restitution = 0.5f;
  CHECK_OK(wf_particles_set_material(ps, 0, &mat));
  if (on_particle) {
    float p[2][4] = {{0, 0, 0, r}, {0, 2 * r, 0, r}}, v[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 1 / m}};
    CHECK_OK(wf_particles_add(ps, 2, (const float(*)[4])p, (const float(*)[4])v, 0, NULL));
  } else {
    wf_collider_desc c = wf_collider_desc_default();
    CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
    float p[1][4] = {{0, r, 0, r}}, v[1][4] = {{0, 0, 0, 1 / m}};
    CHECK_OK(wf_particles_add(ps, 1, (const float(*)[4])p, (const float(*)[4])v, 0, NULL));
  }
  CHECK_OK(wf_particles_step_frames(ps, 60));
  wf_particles_energy e;
  CHECK_OK(wf_particles_energy_get(ps, &e));
  double want = (double)(m * g) * (m * g) / (2.0 * k);
  printf("  on a %s: elastic %.9g J (contact %.3g, collider %.3g), closed form %.9g J (rel %.2g)\n",
         on_particle ? "particle" : "plane", e.elastic, e.contact, e.collider, want,
         fabs(e.elastic - want) / want);
  CHECK_NEAR(e.elastic, want, 1e-3 * want);
  CHECK_NEAR(on_particle ? e.collider : e.contact, 0.0, 0.0);
  CHECK(e.kinetic < 1e-6 * want); /* at rest: e^-60 of the first bounce */
  /* the stats carry the same energies */
  wf_particles_stats s;
  CHECK_OK(wf_particles_stats_get(ps, &s));
  CHECK(s.elastic_energy == e.elastic && s.potential_energy == e.potential);
  wf_particles_destroy(ps);
}

TEST(resting_on_a_plane) { resting(false); }
TEST(resting_on_a_kinematic_particle) { resting(true); }

/* The largest |E - E0| over 20 frames of 1 ms (sampled each frame) of two particles (0.1 kg, r =
 * 0.05 m, k = 1e4 N/m, no dashpot, no gravity) meeting head on at 1 m/s, and the largest contact
 * energy seen (the collision lasts π / sqrt(2k/m) = 7 ms, from 5 ms on). */
static int collide(int substeps, double *dev, double *peak, double *e0) {
  wf_particles_desc d = desc_on(substeps, 1e-3f, 0.0f);
  wf_particles *ps;
  if (wf_particles_create(&d, &ps) != WF_OK) return 0;
  wf_particle_material mat = wf_particle_material_default();
  mat.stiffness = 1e4f, mat.restitution = 1.0f, mat.damping = 0.0f; /* 1: no dashpot */
  wf_status st = wf_particles_set_material(ps, 0, &mat);
  float p[2][4] = {{-0.0525f, 0.3f, 0, 0.05f}, {0.0525f, 0.3f, 0, 0.05f}};
  float v[2][4] = {{0.5f, 0, 0, 10.0f}, {-0.5f, 0, 0, 10.0f}};
  if (st == WF_OK)
    st = wf_particles_add(ps, 2, (const float(*)[4])p, (const float(*)[4])v, 0, NULL);
  wf_particles_energy e;
  if (st == WF_OK) st = wf_particles_energy_get(ps, &e);
  *e0 = e.total, *dev = 0.0, *peak = 0.0;
  for (int f = 0; f < 20 && st == WF_OK; f++) {
    st = wf_particles_step_frames(ps, 1);
    if (st == WF_OK) st = wf_particles_energy_get(ps, &e);
    *dev = fmax(*dev, fabs(e.total - *e0));
    *peak = fmax(*peak, e.contact);
  }
  wf_particles_destroy(ps);
  return st == WF_OK;
}

/* ω dt = 447 rad/s x 1.25e-4 s = 0.06 at 8 substeps a millisecond: symplectic Euler's energy
 * error of order ω dt / 2 = 3% of the energy in the spring. Bounds: below 5% of E0, a peak
 * contact energy above half of E0 (the test sees the collision), and a ratio of deviations in
 * [1.6, 2.4] when dt halves (first order: 2). */
TEST(undamped_collision_conserves_energy) {
  double d8, d16, p8, p16, e0;
  REQUIRE(collide(8, &d8, &p8, &e0));
  REQUIRE(collide(16, &d16, &p16, &e0));
  printf("  E0 %.6g J; max |E - E0| %.4g J at dt = 1/8 ms, %.4g J at 1/16 ms (ratio %.3f); peak "
         "contact %.4g J\n",
         e0, d8, d16, d8 / d16, p8);
  CHECK_NEAR(e0, 2 * 0.5 * 0.1 * 0.25, 1e-9); /* ½ m v² each */
  CHECK(p8 > 0.5 * e0 && p16 > 0.5 * e0);
  CHECK(d8 < 0.05 * e0);
  CHECK(d8 / d16 > 1.6 && d8 / d16 < 2.4);
}

/* A block of 5 x 8 x 5 particles falling onto a plane, on 1 and 2 partitions: the energies after
 * 20 frames (contacts made) are bitwise equal; the two emitters' ranges add up to the whole. */
TEST(partitions_bitwise) {
  NEED_TWO_DEVICES();
  wf_particles_energy e[2], parts[2];
  for (int n = 1; n <= 2; n++) {
    wf_particles_desc d = desc_on(16, 1.0f / 60.0f, 9.81f);
    d.devices[1] = th_dev1, d.device_count = n;
    wf_particles *ps;
    CHECK_OK(wf_particles_create(&d, &ps));
    wf_collider_desc c = wf_collider_desc_default();
    CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
    wf_particles_emitter em = wf_particles_emitter_default();
    em.half_extents[0] = 0.25f, em.half_extents[1] = 0.2f, em.half_extents[2] = 0.25f;
    em.center[1] = 0.3f;
    uint32_t first[2], count[2];
    CHECK_OK(wf_particles_emit(ps, &em, &first[0], &count[0]));
    em.center[1] = 0.8f;
    CHECK_OK(wf_particles_emit(ps, &em, &first[1], &count[1]));
    CHECK_OK(wf_particles_step_frames(ps, 20));
    CHECK_OK(wf_particles_energy_get(ps, &e[n - 1]));
    CHECK_OK(wf_particles_energy_ranges(ps, 2, first, count, parts));
    wf_particles_destroy(ps);
  }
  printf("  kinetic %.9g potential %.9g contact %.9g collider %.9g\n", e[0].kinetic, e[0].potential,
         e[0].contact, e[0].collider);
  CHECK(e[0].kinetic > 0.0 && e[0].contact > 0.0 && e[0].collider > 0.0);
  CHECK(memcmp(&e[0], &e[1], sizeof e[0]) == 0);
  /* the ranges' sums are grouped differently: equal to rounding (1e-12 relative) */
  CHECK_NEAR(parts[0].total + parts[1].total, e[1].total, 1e-12 * fabs(e[1].total));
  CHECK_NEAR(parts[0].contact + parts[1].contact, e[1].contact, 1e-12 * e[1].contact);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(resting_on_a_plane),
      TH_TEST(resting_on_a_kinematic_particle),
      TH_TEST(undamped_collision_conserves_energy),
      TH_TEST(partitions_bitwise),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
