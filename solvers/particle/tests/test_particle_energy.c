/* The particles' energies (wf_particles_energy_get, the linear DEM spring's ½ k δ²) against closed
 * forms:
 *  - a particle resting on a plane, or on a kinematic particle, stores (m g)² / (2 k): the
 *    collider's spring, or the pair's spring counted once (half in each particle's row);
 *  - two particles colliding head on without damping conserve kinetic + contact energy up to the
 *    first-order error of symplectic Euler: halving dt halves the largest deviation;
 *  - the energies are bitwise the same on 1 and 2 partitions (CPU devices), and the ranges of an
 *    energy split add up to the whole;
 *  - Hertz (WF_CONTACT_HERTZ): a pair and a plane contact pressed by a known overlap store
 *    8/15 E* sqrt(R*) δ^(5/2), and contact histories set by hand add ½ kt |ξ|² and |M|² / (2 kr)
 *    (both models); an elastic Hertz collision conserves kinetic + contact energy to first order
 *    in dt; an oblique sticking collision conserves kinetic + rotational + contact energy only
 *    with the tangential spring's energy counted.
 */
#include "harness.h"

#include "solvers/particle/particle_math.h" /* wfp_hist: the granular blob's history slots */
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

/* ---- Hertz and the contact history ---------------------------------------------------------- */

#define HZ_E  1e6f  /* Pa: soft, so the Hertz collision below lasts 9 ms */
#define HZ_NU 0.25f /* glass */

/* A solver of the contact model with one material (friction mu, rolling resistance mu_r, elastic:
 * restitution 1, no dashpot), no gravity, frames of 1 ms. */
static wf_particles *energy_solver(int model, int substeps, float mu, float mu_r) {
  wf_particles_desc d = desc_on(substeps, 1e-3f, 0.0f);
  d.contact_model = model;
  wf_particles *ps = NULL;
  if (wf_particles_create(&d, &ps) != WF_OK) return NULL;
  wf_particle_material mat = wf_particle_material_default();
  mat.stiffness = 1e4f, mat.restitution = 1.0f, mat.damping = 0.0f;
  mat.young = HZ_E, mat.poisson = HZ_NU;
  mat.friction = mu, mat.static_friction = mu, mat.rolling_friction = mu_r;
  if (wf_particles_set_material(ps, 0, &mat) != WF_OK) {
    wf_particles_destroy(ps);
    return NULL;
  }
  return ps;
}

/* E* of two spheres of the material (or a sphere and a wall of it): E / (2 (1 - ν²)). */
static double hz_estar(void) { return HZ_E / (2.0 * (1.0 - (double)HZ_NU * HZ_NU)); }
static double hz_energy(double rstar, double delta) {
  return 8.0 / 15.0 * hz_estar() * sqrt(rstar) * pow(delta, 2.5);
}

/* Two spheres (r = 0.05 m) pressed by δ = 1 mm, and a third pressed 0.5 mm into the plane y = 0,
 * at rest, not stepped: contact 8/15 E* sqrt(R*) δ^(5/2) with R* = r/2 (the pair, counted once)
 * and collider the same with R* = r (a wall of the sphere's material). The particles' positions
 * are floats: δ is resolved to ~4e-9 m of 1e-3 (the energy goes as δ^2.5: 1e-5); E* is stored
 * as float (1e-7): tolerance 1e-4 relative. 1/2 k δ² (the linear spring with k = 1e4) would give
 * 5e-3 J against 1.4e-4 J: the test tells the two apart. */
TEST(hertz_static_overlap_closed_form) {
  wf_particles *ps = energy_solver(WF_CONTACT_HERTZ, 8, 0.5f, 0.01f);
  REQUIRE(ps);
  wf_collider_desc c = wf_collider_desc_default();
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  const float r = 0.05f, d = 1e-3f, dw = 5e-4f;
  float p[3][4] = {{-(r - d / 2), 1, 0, r}, {r - d / 2, 1, 0, r}, {0.5f, r - dw, 0, r}};
  float v[3][4] = {{0, 0, 0, 10}, {0, 0, 0, 10}, {0, 0, 0, 10}};
  CHECK_OK(wf_particles_add(ps, 3, (const float(*)[4])p, (const float(*)[4])v, 0, NULL));
  wf_particles_energy e;
  CHECK_OK(wf_particles_energy_get(ps, &e));
  double delta = (double)p[1][0] - p[0][0], gap = 2.0 * r - delta, gw = (double)r - p[2][1];
  double want = hz_energy(r / 2.0, gap), want_w = hz_energy(r, gw);
  printf("  pair: %.9g J, 8/15 E* sqrt(R*) d^2.5 = %.9g J (rel %.2g); plane: %.9g J, %.9g J "
         "(rel %.2g)\n",
         e.contact, want, fabs(e.contact - want) / want, e.collider, want_w,
         fabs(e.collider - want_w) / want_w);
  CHECK_NEAR(e.contact, want, 1e-4 * want);
  CHECK_NEAR(e.collider, want_w, 1e-4 * want_w);
  CHECK(e.shear == 0.0 && e.kinetic == 0.0 && e.rotational == 0.0);
  CHECK(e.total == e.elastic);
  wf_particles_destroy(ps);
}

/* The history's springs: the pair above (0 and 1) and the sphere on the plane (2) with contact
 * histories set through the granular blob (header, 16-byte omega rows, then WFP_HIST_SLOTS
 * wfp_hist a particle): the tangential displacement ξ and rolling torque M in each side's slot
 * keyed by the partner (the pair's two sides negatives of each other, as the solver keeps them),
 * and particle 2 spinning at ω. shear = ½ kt |ξ|² + |M|² / (2 kr) a contact (the pair's once),
 * kt and kr as wfp_granular makes them: Hertz kt = 8 G* sqrt(R* δ), kr = 2.25 Sn μr² R*² with
 * Sn = 2 E* sqrt(R* δ); linear kt = 6/7 kn (Mindlin's ratio at ν = 0.25), kr = 2.25 kn μr² R*²;
 * rotational = ½ (2/5 m r²) ω². Tolerance 1e-4 relative (float stiffnesses and δ, as above). */
static void history_closed_form(int model) {
  const float mu_r = 0.1f;
  wf_particles *ps = energy_solver(model, 8, 0.5f, mu_r);
  REQUIRE(ps);
  wf_collider_desc c = wf_collider_desc_default();
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  const float r = 0.05f, d = 1e-3f, dw = 5e-4f;
  float p[3][4] = {{-(r - d / 2), 1, 0, r}, {r - d / 2, 1, 0, r}, {0.5f, r - dw, 0, r}};
  float v[3][4] = {{0, 0, 0, 10}, {0, 0, 0, 10}, {0, 0, 0, 10}};
  CHECK_OK(wf_particles_add(ps, 3, (const float(*)[4])p, (const float(*)[4])v, 0, NULL));
  size_t bytes = wf_particles_granular_state_bytes(ps);
  REQUIRE(bytes == 16 + 3 * (16 + WFP_HIST_SLOTS * sizeof(wfp_hist)));
  unsigned char *blob = malloc(bytes);
  REQUIRE(blob);
  CHECK_OK(wf_particles_granular_state_get(ps, blob, bytes));
  float(*omega)[4] = (float(*)[4])(blob + 16);
  wfp_hist *h = (wfp_hist *)(blob + 16 + 3 * 16);
  const float xi[3] = {0, 2e-5f, -1e-5f}, m[3] = {1e-5f, 0, 2e-5f};
  const float xw[3] = {3e-5f, 0, 0}, mw[3] = {0, 1e-5f, 0}, w2 = 4.0f;
  for (int s = 0; s < 2; s++) { /* the pair: 0's slot keyed 1 + 1, 1's slot keyed 0 + 1 */
    wfp_hist *hs = &h[(size_t)s * WFP_HIST_SLOTS + 3];
    float sg = s ? -1.0f : 1.0f;
    hs->key = (uint32_t)(1 - s) + 1u;
    hs->tx = sg * xi[0], hs->ty = sg * xi[1], hs->tz = sg * xi[2];
    hs->rx = sg * m[0], hs->ry = sg * m[1], hs->rz = sg * m[2];
  }
  wfp_hist *hw = &h[2 * WFP_HIST_SLOTS];
  hw->key = WFP_HIST_COLLIDER + 0u;
  hw->tx = xw[0], hw->ty = xw[1], hw->tz = xw[2], hw->rx = mw[0], hw->ry = mw[1], hw->rz = mw[2];
  omega[2][2] = w2;
  CHECK_OK(wf_particles_granular_state_set(ps, blob, bytes));
  free(blob);
  wf_particles_energy e;
  CHECK_OK(wf_particles_energy_get(ps, &e));
  double gap = 2.0 * r - ((double)p[1][0] - p[0][0]), gw = (double)r - p[2][1];
  double nu = HZ_NU, gstar = HZ_E / (2.0 * 2.0 * (2.0 - nu) * (1.0 + nu));
  double want = 0.0, rot = 0.5 * 0.4 * 0.1 * (double)r * r * (double)w2 * w2;
  for (int k = 0; k < 2; k++) { /* the pair, then the wall */
    double rs = k ? r : r / 2.0, dl = k ? gw : gap, sq = sqrt(rs * dl), kt, kn;
    if (model == WF_CONTACT_HERTZ)
      kt = 8.0 * gstar * sq, kn = 2.0 * hz_estar() * sq;
    else
      kt = 6.0 / 7.0 * 1e4, kn = 1e4;
    double kr = 2.25 * kn * (double)mu_r * mu_r * rs * rs;
    const float *x = k ? xw : xi, *mm = k ? mw : m;
    double x2 = (double)x[0] * x[0] + (double)x[1] * x[1] + (double)x[2] * x[2];
    double m2 = (double)mm[0] * mm[0] + (double)mm[1] * mm[1] + (double)mm[2] * mm[2];
    want += 0.5 * kt * x2 + m2 / (2.0 * kr);
  }
  printf("  %s: shear %.9g J, closed form %.9g J (rel %.2g); rotational %.9g J, ½ I ω² %.9g J\n",
         model == WF_CONTACT_HERTZ ? "hertz" : "linear", e.shear, want, fabs(e.shear - want) / want,
         e.rotational, rot);
  CHECK_NEAR(e.shear, want, 1e-4 * want);
  CHECK_NEAR(e.rotational, rot, 1e-6 * rot);
  /* the total is the parts' sum as the library groups it (elastic = contact + collider) */
  CHECK_NEAR(e.elastic, e.contact + e.collider, 0.0);
  CHECK_NEAR(e.total, e.kinetic + e.rotational + e.potential + e.elastic, 0.0);
  wf_particles_destroy(ps);
}

TEST(history_springs_closed_form_hertz) { history_closed_form(WF_CONTACT_HERTZ); }
TEST(history_springs_closed_form_linear) { history_closed_form(WF_CONTACT_DEM); }

/* Two spheres (0.1 kg, r = 0.05 m) meeting at v each way, offset across the line of approach by
 * b (0: head on), 20 frames of 1 ms: the largest |E - E0| (E: kinetic + rotational + elastic),
 * the largest elastic energy and the largest shear (tangential spring) energy seen. */
static int collide_model(int model, int substeps, float b, float mu, double *dev, double *peak,
                         double *shear, double *e0) {
  wf_particles *ps = energy_solver(model, substeps, mu, 0.0f);
  if (!ps) return 0;
  float p[2][4] = {{-0.0525f, 0.3f - b / 2, 0, 0.05f}, {0.0525f, 0.3f + b / 2, 0, 0.05f}};
  float v[2][4] = {{0.5f, 0, 0, 10.0f}, {-0.5f, 0, 0, 10.0f}};
  wf_status st = wf_particles_add(ps, 2, (const float(*)[4])p, (const float(*)[4])v, 0, NULL);
  wf_particles_energy e;
  if (st == WF_OK) st = wf_particles_energy_get(ps, &e);
  *e0 = e.total, *dev = 0.0, *peak = 0.0, *shear = 0.0;
  for (int f = 0; f < 20 && st == WF_OK; f++) {
    st = wf_particles_step_frames(ps, 1);
    if (st == WF_OK) st = wf_particles_energy_get(ps, &e);
    *dev = fmax(*dev, fabs(e.total - *e0));
    *peak = fmax(*peak, e.elastic);
    *shear = fmax(*shear, e.shear);
  }
  wf_particles_destroy(ps);
  return st == WF_OK;
}

/* Hertz, head on at 1 m/s closing: the contact lasts 2.87 (m*² / (R* E*² v))^(1/5) = 9.2 ms,
 * 74 substeps at 8 a millisecond. Symplectic Euler's energy error is first order in dt, of order
 * ω dt / 2 of the energy in the spring: at the deepest overlap (δ = 3.2 mm) the spring's
 * stiffness Sn = 2 E* sqrt(R* δ) = 9.5e3 N/m gives ω = sqrt(Sn / m*) = 436 rad/s, ω dt / 2 = 2.7%.
 * Bounds: 4% of E0 at dt = 1/8 ms, a ratio of deviations in [1.6, 2.4] when dt halves (2), and a
 * peak contact energy above half of E0 (the collision is seen; at the turning point all of E0 is
 * in the spring). The former ½ kn δ² (kn = 1e4 N/m, the material's linear stiffness, which the
 * Hertz force does not use) gives 0.048 J at the deepest overlap, about twice E0. */
TEST(elastic_hertz_collision_conserves_energy) {
  double d8, d16, p8, p16, s8, s16, e0;
  REQUIRE(collide_model(WF_CONTACT_HERTZ, 8, 0.0f, 0.5f, &d8, &p8, &s8, &e0));
  REQUIRE(collide_model(WF_CONTACT_HERTZ, 16, 0.0f, 0.5f, &d16, &p16, &s16, &e0));
  printf("  E0 %.6g J; max |E - E0| %.4g J at dt = 1/8 ms, %.4g J at 1/16 ms (ratio %.3f); peak "
         "contact %.4g J\n",
         e0, d8, d16, d8 / d16, p8);
  CHECK_NEAR(e0, 2 * 0.5 * 0.1 * 0.25, 1e-9);
  CHECK(p8 > 0.5 * e0 && p16 > 0.5 * e0);
  CHECK(d8 < 0.04 * e0);
  CHECK(d8 / d16 > 1.6 && d8 / d16 < 2.4);
}

/* Linear springs, an oblique impact (offset b = r across the line of approach: the normal at 30°)
 * with friction 10 so that the contact sticks, no dashpots: kinetic + rotational + normal and
 * tangential spring energies are conserved but for the time step's error, which shrinks with dt
 * (bounds: below 2% of E0, and dt halved at least 1.6x less). The tangential spring holds more
 * than 4% of E0 at its peak, so leaving it out would fail the bound. */
TEST(oblique_sticking_collision_conserves_energy) {
  double d8, d16, p8, p16, s8, s16, e0;
  REQUIRE(collide_model(WF_CONTACT_DEM, 8, 0.05f, 10.0f, &d8, &p8, &s8, &e0));
  REQUIRE(collide_model(WF_CONTACT_DEM, 16, 0.05f, 10.0f, &d16, &p16, &s16, &e0));
  printf("  E0 %.6g J; max |E - E0| %.4g J at dt = 1/8 ms, %.4g J at 1/16 ms (ratio %.3f); peak "
         "elastic %.4g J, of it tangential %.4g J\n",
         e0, d8, d16, d8 / d16, p8, s8);
  CHECK(d8 < 0.02 * e0);
  CHECK(d8 / d16 > 1.6);
  CHECK(s8 > 0.04 * e0 && s16 > 0.04 * e0);
}

/* A block of 5 x 8 x 5 particles falling onto a plane, on 1 and 2 partitions, with the linear and
 * the Hertz springs: the energies after 20 frames (contacts made, their histories holding
 * tangential and rolling springs, the grains spinning) are bitwise equal; the two emitters'
 * ranges add up to the whole. */
static void split_bitwise(int model) {
  wf_particles_energy e[2], parts[2];
  for (int n = 1; n <= 2; n++) {
    /* Hertz: the soft E of the tests above (a contact at the 3 m/s of the fall lasts 14 ms),
     * 32 substeps a frame: 27 substeps a contact */
    bool hz = model == WF_CONTACT_HERTZ;
    wf_particles_desc d = desc_on(hz ? 32 : 16, 1.0f / 60.0f, 9.81f);
    d.devices[1] = th_dev1, d.device_count = n;
    d.contact_model = model;
    wf_particles *ps;
    CHECK_OK(wf_particles_create(&d, &ps));
    wf_particle_material mat = wf_particle_material_default();
    mat.young = HZ_E;
    if (hz) CHECK_OK(wf_particles_set_material(ps, 0, &mat));
    wf_collider_desc c = wf_collider_desc_default();
    CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
    wf_particles_emitter em = wf_particles_emitter_default();
    em.half_extents[0] = 0.25f, em.half_extents[1] = 0.2f, em.half_extents[2] = 0.25f;
    em.center[1] = 0.3f, em.jitter = 0.01f; /* jitter: the grains roll and spin */
    uint32_t first[2], count[2];
    CHECK_OK(wf_particles_emit(ps, &em, &first[0], &count[0]));
    em.center[1] = 0.8f;
    CHECK_OK(wf_particles_emit(ps, &em, &first[1], &count[1]));
    CHECK_OK(wf_particles_step_frames(ps, 20));
    CHECK_OK(wf_particles_energy_get(ps, &e[n - 1]));
    CHECK_OK(wf_particles_energy_ranges(ps, 2, first, count, parts));
    wf_particles_destroy(ps);
  }
  printf("  %s: kinetic %.9g rotational %.9g potential %.9g contact %.9g collider %.9g shear "
         "%.9g\n",
         model == WF_CONTACT_HERTZ ? "hertz" : "linear", e[0].kinetic, e[0].rotational,
         e[0].potential, e[0].contact, e[0].collider, e[0].shear);
  CHECK(e[0].kinetic > 0.0 && e[0].contact > 0.0 && e[0].collider > 0.0);
  CHECK(e[0].rotational > 0.0 && e[0].shear > 0.0);
  CHECK(memcmp(&e[0], &e[1], sizeof e[0]) == 0);
  /* the ranges' sums are grouped differently: equal to rounding (1e-12 relative) */
  CHECK_NEAR(parts[0].total + parts[1].total, e[1].total, 1e-12 * fabs(e[1].total));
  CHECK_NEAR(parts[0].contact + parts[1].contact, e[1].contact, 1e-12 * e[1].contact);
  CHECK_NEAR(parts[0].rotational + parts[1].rotational, e[1].rotational, 1e-12 * e[1].rotational);
}

TEST(partitions_bitwise) {
  NEED_TWO_DEVICES();
  split_bitwise(WF_CONTACT_DEM);
}

TEST(partitions_bitwise_hertz) {
  NEED_TWO_DEVICES();
  split_bitwise(WF_CONTACT_HERTZ);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(resting_on_a_plane),
      TH_TEST(resting_on_a_kinematic_particle),
      TH_TEST(undamped_collision_conserves_energy),
      TH_TEST(partitions_bitwise),
      TH_TEST(partitions_bitwise_hertz),
      TH_TEST(hertz_static_overlap_closed_form),
      TH_TEST(history_springs_closed_form_hertz),
      TH_TEST(history_springs_closed_form_linear),
      TH_TEST(elastic_hertz_collision_conserves_energy),
      TH_TEST(oblique_sticking_collision_conserves_energy),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
