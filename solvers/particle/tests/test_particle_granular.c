/* The granular contact model (rotation, contact history, static friction, rolling resistance,
 * linear and Hertz-Mindlin normal forces) against closed forms, each tolerance stated where it
 * is checked; and its promises of reproducibility: bitwise equal for 1 to 4 partitions and after
 * a checkpoint restore (set_state + granular_state_set).
 *
 * The bead: a glass sphere of radius 1 cm (density 2500 kg/m³, m = 10.47 g) with a reduced linear
 * stiffness kn = 1000 N/m (normal contact 10 ms) or E = 5e7 Pa (Hertz), substeps of 0.25 ms:
 * 40 a normal contact, 24 a tangential half period. Every case runs < 1 s of CPU here. */
#include "harness.h"
#include "weft/particles.h"

#define R_BEAD 0.01f
/* Young's modulus of the Hertz tests: soft enough for 40 substeps a contact at 0.25 ms */
#define HERTZ_E 2e5f

/* CHECK_OK for functions that return a value: reports and goes on. */
#define OKV(e)                                                                                     \
  do {                                                                                             \
    if ((e) != WF_OK) TH_FAIL("%s: %s", #e, wf_last_error());                                      \
  } while (0)
#define PI_D 3.14159265358979323846

static double bead_mass(void) { return 2500.0 * 4.0 / 3.0 * PI_D * R_BEAD * R_BEAD * R_BEAD; }

typedef struct rig {
  wf_particles *ps;
  double dt;
} rig;

/* A solver of the model with one material m, gravity g, dt = 0.25 ms (frames of 10 substeps). */
static bool rig_make(rig *r, int model, const wf_particle_material *m, const float g[3],
                     wf_device **devs, int ndev) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "granular";
  d.substeps = 10;
  d.frame_dt = 0.0025f;
  d.contact_model = model;
  memcpy(d.gravity, g, sizeof d.gravity);
  if (devs) {
    for (int i = 0; i < ndev; i++)
      d.devices[i] = devs[i];
    d.device_count = ndev;
  } else {
    d.devices[0] = th_dev0;
  }
  r->dt = (double)(d.frame_dt / (float)d.substeps);
  if (wf_particles_create(&d, &r->ps) != WF_OK) {
    TH_FAIL("create: %s", wf_last_error());
    return false;
  }
  if (wf_particles_set_material(r->ps, 0, m) != WF_OK) {
    TH_FAIL("material: %s", wf_last_error());
    return false;
  }
  return true;
}

static wf_particle_material bead_material(void) {
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1000.0f;
  m.rolling_friction = 0.0f;
  return m;
}

static void add_bead(rig *r, float x, float y, float z, float vx, float vy, float vz) {
  float p[1][4] = {{x, y, z, R_BEAD}}, v[1][4] = {{vx, vy, vz, (float)(1.0 / bead_mass())}};
  CHECK_OK(wf_particles_add(r->ps, 1, p, v, 0, NULL));
}

static void add_ground(rig *r, float friction, float restitution) {
  wf_collider_desc c = wf_collider_desc_default();
  c.name = "ground";
  c.friction = friction;
  c.restitution = restitution;
  CHECK_OK(wf_particles_add_collider(r->ps, &c, NULL));
}

/* Steps n substeps (frames of 10). */
static void run(rig *r, int substeps) { CHECK_OK(wf_particles_step_frames(r->ps, substeps / 10)); }

static void state(rig *r, float (*p)[4], float (*v)[4], float (*w)[4]) {
  CHECK_OK(wf_particles_download(r->ps, p, v));
  if (w) CHECK_OK(wf_particles_download_omega(r->ps, w));
}

/* Equilibrium overlap on the ground under a normal load mg cos θ: y = r - m g cos θ / kn. */
static float rest_height(double g_normal, double kn) {
  return (float)(R_BEAD - bead_mass() * g_normal / kn);
}

/* A sphere on a slope θ (gravity tilted: the ground stays y = 0) with μ >= 2/7 tan θ rolls
 * without slipping at a = 5/7 g sin θ, ω r = v. Tolerance 1%: semi-implicit Euler's error is
 * O(dt / T) = 0.25 ms / 1 s, the tangential spring holds the friction force with a constant
 * deflection (no effect on the acceleration), and the start-up transient of that spring (a few ms)
 * shifts v by < 0.5%. */
TEST(rolls_without_slipping_at_five_sevenths) {
  const double th = 20.0 * PI_D / 180.0, g = 9.81;
  float gv[3] = {(float)(g * sin(th)), (float)(-g * cos(th)), 0.0f};
  wf_particle_material m = bead_material();
  rig r;
  REQUIRE(rig_make(&r, WF_CONTACT_DEM, &m, gv, NULL, 0));
  add_ground(&r, 0.5f, 0.5f);
  add_bead(&r, 0.0f, rest_height(g * cos(th), 1000.0), 0.0f, 0.0f, 0.0f, 0.0f);
  run(&r, 4000); /* 1 s */
  float p[1][4], v[1][4], w[1][4];
  state(&r, p, v, w);
  double a = v[0][0] / 1.0, want = 5.0 / 7.0 * g * sin(th);
  printf("  a = %.4f m/s² (5/7 g sin θ = %.4f), ω r = %.4f, v = %.4f m/s\n", a, want,
         -w[0][2] * R_BEAD, v[0][0]);
  CHECK_NEAR(a, want, 0.01 * want);
  CHECK_NEAR(-w[0][2] * R_BEAD, v[0][0], 0.01 * v[0][0]); /* rolling: ω_z = -v / r */
  wf_particles_destroy(r.ps);
}

/* Below μ = 2/7 tan θ the sphere slides: a = g (sin θ - μ cos θ), and friction spins it up at
 * α = 5/2 μ g cos θ / r. Tolerance 1% (as above; sliding has no spring transient beyond the
 * first substeps). */
TEST(slides_when_friction_is_low) {
  const double th = 30.0 * PI_D / 180.0, g = 9.81, mu = 0.1;
  float gv[3] = {(float)(g * sin(th)), (float)(-g * cos(th)), 0.0f};
  wf_particle_material m = bead_material();
  m.friction = (float)mu;
  rig r;
  REQUIRE(rig_make(&r, WF_CONTACT_DEM, &m, gv, NULL, 0));
  add_ground(&r, (float)mu, 0.5f);
  add_bead(&r, 0.0f, rest_height(g * cos(th), 1000.0), 0.0f, 0.0f, 0.0f, 0.0f);
  run(&r, 2000); /* 0.5 s */
  float p[1][4], v[1][4], w[1][4];
  state(&r, p, v, w);
  double t = 0.5, a = v[0][0] / t, want = g * (sin(th) - mu * cos(th));
  double wz = -w[0][2], want_w = 2.5 * mu * g * cos(th) / R_BEAD * t;
  printf("  a = %.4f m/s² (g (sin θ - μ cos θ) = %.4f), ω = %.3f rad/s (%.3f)\n", a, want, wz,
         want_w);
  CHECK_NEAR(a, want, 0.01 * want);
  CHECK_NEAR(wz, want_w, 0.01 * want_w);
  CHECK(wz * R_BEAD < v[0][0]); /* still slipping */
  wf_particles_destroy(r.ps);
}

/* Below the friction angle (tan θ < μ) and the rolling-resistance angle (tan θ < μr) a sphere
 * stays put: after 0.25 s of settling into its springs it moves less than 1e-6 m in the next
 * 2.75 s (3 s rather than 10 s to keep the case within CI's time; the springs are static, so
 * nothing accumulates with time: the bound is the float resolution of x near 0, ~1e-9 m, times
 * any residual oscillation). Constant-torque rolling resistance would creep here. */
TEST(rests_on_a_slope_below_friction_and_rolling_angles) {
  const double th = 10.0 * PI_D / 180.0, g = 9.81;
  float gv[3] = {(float)(g * sin(th)), (float)(-g * cos(th)), 0.0f};
  wf_particle_material m = bead_material();
  m.rolling_friction = 0.3f; /* tan 10° = 0.176 */
  rig r;
  REQUIRE(rig_make(&r, WF_CONTACT_DEM, &m, gv, NULL, 0));
  add_ground(&r, 0.5f, 0.5f);
  add_bead(&r, 0.0f, rest_height(g * cos(th), 1000.0), 0.0f, 0.0f, 0.0f, 0.0f);
  run(&r, 1000);
  float p0[1][4], p1[1][4], v[1][4];
  state(&r, p0, v, NULL);
  run(&r, 11000);
  state(&r, p1, v, NULL);
  double dx = fabs((double)p1[0][0] - p0[0][0]);
  printf("  settled at x = %.3g m; moved %.3g m in 2.75 s\n", p0[0][0], dx);
  CHECK(dx < 1e-6);
  CHECK(fabs(p0[0][0]) < 1e-3); /* the settling itself is elastic, sub-millimetre */
  wf_particles_destroy(r.ps);
}

/* A sphere rolling on level ground with rolling resistance μr slows at 5/7 μr g (the rolling
 * spring at its limit μr r m g: m a r = -(Mr + I α) with α = a / r). v0 = 1 m/s, 0.5 s:
 * v = 1 - 0.5 · 5/7 · 0.05 · 9.81 = 0.8248 m/s; tolerance 1% of the change (the spring reaches
 * its limit in ~1 ms, 0.2% of the time). */
TEST(rolling_resistance_decelerates_at_five_sevenths_mu_r_g) {
  float gv[3] = {0.0f, -9.81f, 0.0f};
  wf_particle_material m = bead_material();
  m.rolling_friction = 0.05f;
  rig r;
  REQUIRE(rig_make(&r, WF_CONTACT_DEM, &m, gv, NULL, 0));
  add_ground(&r, 0.5f, 0.5f);
  add_bead(&r, 0.0f, rest_height(9.81, 1000.0), 0.0f, 1.0f, 0.0f, 0.0f);
  float w0[1][4] = {{0.0f, 0.0f, -1.0f / R_BEAD, 0.0f}};
  (void)w0;
  /* start it rolling: no API sets omega alone; the granular state carries it */
  size_t gb = wf_particles_granular_state_bytes(r.ps);
  unsigned char *blob = calloc(1, gb);
  REQUIRE(blob);
  CHECK_OK(wf_particles_granular_state_get(r.ps, blob, gb));
  memcpy(blob + gb - 16 - 8 * 32, w0, 16); /* the one particle's omega, before its 8 slots */
  CHECK_OK(wf_particles_granular_state_set(r.ps, blob, gb));
  free(blob);
  run(&r, 2000);
  float p[1][4], v[1][4], w[1][4];
  state(&r, p, v, w);
  double want = 1.0 - 0.5 * 5.0 / 7.0 * 0.05 * 9.81;
  printf("  v = %.4f m/s (1 - 5/7 μr g t = %.4f), ω r = %.4f\n", v[0][0], want, -w[0][2] * R_BEAD);
  CHECK_NEAR(v[0][0], want, 0.01 * (1.0 - want));
  CHECK_NEAR(-w[0][2] * R_BEAD, v[0][0], 0.005);
  wf_particles_destroy(r.ps);
}

/* A normal impact without gravity at speed v: the rebound speed over v (the restitution) and the
 * time in contact. `pair`: two equal beads head on (each at v, m* = m/2); else one on the
 * ground (m* = m). */
static void impact(int model, float e, float v, bool pair, double *e_out, double *tc_out) {
  float g0[3] = {0.0f, 0.0f, 0.0f};
  wf_particle_material m = bead_material();
  m.restitution = e;
  m.young = HERTZ_E;
  rig r;
  *e_out = *tc_out = NAN;
  if (!rig_make(&r, model, &m, g0, NULL, 0)) return;
  if (pair) {
    add_bead(&r, -R_BEAD - 1e-5f, 0.5f, 0.0f, v, 0.0f, 0.0f);
    add_bead(&r, R_BEAD + 1e-5f, 0.5f, 0.0f, -v, 0.0f, 0.0f);
  } else {
    add_ground(&r, 0.5f, e);
    add_bead(&r, 0.0f, R_BEAD + 1e-5f, 0.0f, 0.0f, -v, 0.0f);
  }
  int in = 0, steps = 0;
  float p[2][4], vv[2][4];
  for (; steps < 2000; steps++) {
    CHECK_OK(wf_particles_step_substeps(r.ps, 1));
    CHECK_OK(wf_particles_download(r.ps, p, vv));
    bool touching = pair ? p[1][0] - p[0][0] < 2.0f * R_BEAD : p[0][1] < R_BEAD;
    if (touching) in++;
    if (!touching && in > 0) break;
  }
  double out = pair ? (vv[1][0] - vv[0][0]) / 2.0 : vv[0][1];
  *e_out = out / v;
  *tc_out = in * r.dt;
  wf_particles_destroy(r.ps);
}

/* A grain born touching another: from the substep of its birth on the two feel equal and
 * opposite forces, so the momentum they share stays what it was (zero). Two equal beads without
 * gravity: one at rest from the start, the other born at 3.5 substeps (so in the 4th) overlapping
 * it by 0.1 mm, at rest. After a frame their velocities are exact negatives (the pair's math is
 * odd in the normal: no tolerance), and not zero. Until 2026-11-29 the older grain read the
 * newborn's stored inverse mass, still negated at its birth substep, as its own: m* = 1/(w - w),
 * so it took no force there while the newborn did, and the pair gained an impulse. */
TEST(a_grain_born_touching_another_pushes_it_back_at_once) {
  float g0[3] = {0.0f, 0.0f, 0.0f};
  wf_particle_material m = bead_material();
  rig r;
  if (!rig_make(&r, WF_CONTACT_DEM, &m, g0, NULL, 0)) return;
  add_bead(&r, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f);
  float p[1][4] = {{2.0f * R_BEAD - 1e-4f, 0.5f, 0.0f, R_BEAD}};
  float v[1][4] = {{0.0f, 0.0f, 0.0f, (float)(1.0 / bead_mass())}};
  float birth[1] = {(float)(3.5 * r.dt)};
  CHECK_OK(
      wf_particles_add_timed(r.ps, 1, (const float(*)[4])p, (const float(*)[4])v, birth, 0, NULL));
  run(&r, 10);
  float pp[2][4], vv[2][4];
  state(&r, pp, vv, NULL);
  CHECK(vv[0][0] < 0.0f && vv[1][0] > 0.0f);
  for (int k = 0; k < 3; k++)
    if (vv[0][k] != -vv[1][k])
      TH_FAIL("velocity %d: %.9g and %.9g are not exact negatives", k, (double)vv[0][k],
              (double)vv[1][k]);
  wf_particles_destroy(r.ps);
}

/* Linear spring-dashpot: e exactly as given (the dashpot from ζ(e), force not clamped), duration
 * π / sqrt(kn/m* (1 - ζ²)), for pairs and the ground alike; restitution 0: no rebound (critical
 * damping). Tolerances: e 1% (semi-implicit Euler at 40 substeps a contact); duration 2 substeps
 * (the contact is counted in whole substeps). */
TEST(linear_restitution_and_duration_pair_and_ground) {
  for (int k = 0; k < 2; k++) {
    bool pair = k == 0;
    for (int j = 0; j < 2; j++) {
      float e = j ? 0.5f : 0.9f;
      double eo, tc;
      impact(WF_CONTACT_DEM, e, 0.5f, pair, &eo, &tc);
      double z = wf_particles_zeta_for_restitution(e), ms = pair ? bead_mass() / 2 : bead_mass();
      double want_tc = PI_D / sqrt(1000.0 / ms * (1.0 - z * z));
      printf("  %s e = %.2f: rebound %.4f, contact %.3f ms (π / ω_d = %.3f ms)\n",
             pair ? "pair  " : "ground", e, eo, tc * 1e3, want_tc * 1e3);
      CHECK_NEAR(eo, e, 0.01 * e);
      CHECK_NEAR(tc, want_tc, 2.5e-4 * 2);
    }
    double eo, tc;
    impact(WF_CONTACT_DEM, 0.0f, 0.5f, pair, &eo, &tc);
    printf("  %s e = 0: rebound %.2g\n", pair ? "pair  " : "ground", eo);
    CHECK(fabs(eo) < 0.01); /* no rebound: the particle creeps back to the surface at most */
  }
}

/* The Hertz law with the Tsuji dashpot, integrated independently (RK4 in double, 20000 steps a
 * contact) for the closed-form check of the restitution the solver's float semi-implicit Euler
 * gives: m* x'' = -K x^(3/2) - C x^(1/4) x', K = 4/3 E* sqrt(R*), C = 2 sqrt(5/6) ζ sqrt(2 E*
 * sqrt(R*) m*). */
static double hertz_reference_e(double es, double rs, double ms, double zeta, double v) {
  double K = 4.0 / 3.0 * es * sqrt(rs),
         C = 1.8257418583505538 * zeta * sqrt(2.0 * es * sqrt(rs) * ms);
  double x = 0.0, u = v, h = 2.87 * pow(ms * ms / (rs * es * es * v), 0.2) / 20000.0;
#define ACC(x_, u_) ((-K * pow(fmax(x_, 0.0), 1.5) - C * pow(fmax(x_, 0.0), 0.25) * (u_)) / ms)
  for (int i = 0; i < 200000 && x >= 0.0; i++) {
    double k1x = u, k1u = ACC(x, u);
    double k2x = u + 0.5 * h * k1u, k2u = ACC(x + 0.5 * h * k1x, u + 0.5 * h * k1u);
    double k3x = u + 0.5 * h * k2u, k3u = ACC(x + 0.5 * h * k2x, u + 0.5 * h * k2u);
    double k4x = u + h * k3u, k4u = ACC(x + h * k3x, u + h * k3u);
    x += h / 6.0 * (k1x + 2 * k2x + 2 * k3x + k4x);
    u += h / 6.0 * (k1u + 2 * k2u + 2 * k3u + k4u);
  }
#undef ACC
  return -u / v;
}

/* Hertz: elastic duration 2.87 (m*² / (R* E*² v))^(1/5) (Johnson's 2.868, rounded: tolerance 2%,
 * plus the substep count); rebound 1 within 0.5%; with e = 0.5 the restitution is velocity
 * independent (within 1% between 0.25 and 1 m/s) and equals the independent integration of the
 * same law within 1%; e = 0: no rebound beyond 0.05. Pair (R* = r/2, m* = m/2, E* = E/(2(1-ν²)))
 * and ground (R* = r, m* = m, a wall of the bead's material, same E*). */
TEST(hertz_duration_and_restitution_pair_and_ground) {
  wf_particle_material m = bead_material();
  double nu = m.poisson, es = HERTZ_E / (2.0 * (1.0 - nu * nu));
  for (int k = 0; k < 2; k++) {
    bool pair = k == 0;
    double ms = pair ? bead_mass() / 2 : bead_mass(), rs = pair ? R_BEAD / 2.0 : R_BEAD;
    double eo, tc;
    impact(WF_CONTACT_HERTZ, 1.0f, 0.5f, pair, &eo, &tc);
    double vrel = pair ? 1.0 : 0.5; /* the approach speed */
    double want = 2.87 * pow(ms * ms / (rs * es * es * vrel), 0.2);
    printf("  %s e = 1: rebound %.4f, contact %.3f ms (2.87 (m*²/(R* E*² v))^1/5 = %.3f ms)\n",
           pair ? "pair  " : "ground", eo, tc * 1e3, want * 1e3);
    CHECK_NEAR(eo, 1.0, 0.005);
    CHECK_NEAR(tc, want, 0.02 * want + 2.5e-4);
    double e1, e2, t1, t2;
    impact(WF_CONTACT_HERTZ, 0.5f, 0.25f, pair, &e1, &t1);
    impact(WF_CONTACT_HERTZ, 0.5f, 1.0f, pair, &e2, &t2);
    double ref = hertz_reference_e(es, rs, ms, wf_particles_zeta_for_restitution(0.5), 1.0);
    printf("  %s e = 0.5: rebound %.4f at 0.25 m/s, %.4f at 1 m/s; RK4 of the law %.4f\n",
           pair ? "pair  " : "ground", e1, e2, ref);
    CHECK_NEAR(e1, e2, 0.01);
    CHECK_NEAR(e2, ref, 0.01);
    impact(WF_CONTACT_HERTZ, 0.0f, 0.5f, pair, &eo, &tc);
    printf("  %s e = 0: rebound %.3g\n", pair ? "pair  " : "ground", eo);
    CHECK(fabs(eo) < 0.05);
  }
}

/* An oblique impact on the ground without gravity, no spin before. Angular momentum about the
 * contact point is conserved (the only forces act there): ω' r = 5/2 (vt - vt'), in every regime
 * (tolerance 0.5%). Gross sliding (vt / vn large: the contact point never stops): the rigid-body
 * closed form Δvt = -μ (1 + e) vn (tolerance 2%: the friction cap uses max(fn, 0), so the small
 * pull of the dashpot at the end of the contact is not subtracted; e = 0.9 keeps it small).
 * Sticking (small vt / vn): the contact point's tangential speed after is at most its speed
 * before (the spring gives back no more than it took) and the sphere leaves spinning forward. */
TEST(oblique_impact_sliding_and_sticking) {
  float g0[3] = {0.0f, 0.0f, 0.0f};
  for (int k = 0; k < 2; k++) {
    bool sliding = k == 0;
    wf_particle_material m = bead_material();
    m.restitution = 0.9f;
    rig r;
    REQUIRE(rig_make(&r, WF_CONTACT_DEM, &m, g0, NULL, 0));
    float mu = 0.2f, vn = 0.5f, vt = sliding ? 2.0f : 0.1f;
    add_ground(&r, mu, 0.9f);
    add_bead(&r, 0.0f, R_BEAD + 1e-5f, 0.0f, vt, -vn, 0.0f);
    run(&r, 200); /* 50 ms: the contact lasts ~10 ms */
    float p[1][4], v[1][4], w[1][4];
    state(&r, p, v, w);
    double wr = -w[0][2] * R_BEAD, vt1 = v[0][0];
    printf("  %s: vt %.3f -> %.4f, ω' r = %.4f (5/2 (vt - vt') = %.4f), vn' = %.4f\n",
           sliding ? "sliding " : "sticking", vt, vt1, wr, 2.5 * (vt - vt1), v[0][1]);
    CHECK_NEAR(wr, 2.5 * (vt - vt1), 0.005 * fabs(2.5 * (vt - vt1)) + 1e-5);
    if (sliding) {
      double want = vt - mu * (1.0 + 0.9) * vn;
      CHECK_NEAR(vt1, want, 0.02 * (vt - want));
    } else {
      CHECK(fabs(vt1 - wr) <= vt + 1e-6);
      CHECK(wr > 0.0);
    }
    wf_particles_destroy(r.ps);
  }
}

/* A small heap of glass beads (the default material but kn = 1000 N/m, linear model): with
 * rolling resistance 0.3 it comes to rest (translational and rotational energy < 1e-6 J of the
 * ~0.1 J it falls with: the springs hold it static), and it stands steeper than with 0.05 (its
 * height over its reach grows: the angle of repose grows with rolling friction). 125 beads,
 * 2 s each. */
static double heap(float rolling, double *ke_end) {
  float gv[3] = {0.0f, -9.81f, 0.0f};
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1000.0f;
  m.rolling_friction = rolling;
  rig r;
  if (!rig_make(&r, WF_CONTACT_DEM, &m, gv, NULL, 0)) return NAN;
  add_ground(&r, 0.5f, 0.5f);
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = R_BEAD, e.spacing = 2.1f * R_BEAD, e.jitter = 0.002f, e.seed = 3;
  e.density = 2500.0f;
  e.half_extents[0] = e.half_extents[2] = 2.5f * e.spacing;
  e.half_extents[1] = 2.5f * e.spacing;
  e.center[1] = 0.06f;
  OKV(wf_particles_emit(r.ps, &e, NULL, NULL));
  wf_particles_stats s;
  run(&r, 8000); /* 2 s */
  OKV(wf_particles_stats_get(r.ps, &s));
  *ke_end = s.kinetic_energy + s.rotational_energy;
  uint32_t n = wf_particles_count(r.ps);
  float(*p)[4] = malloc(n * 16);
  OKV(wf_particles_download(r.ps, p, NULL));
  double top = 0.0, reach = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    top = fmax(top, p[i][1]);
    reach = fmax(reach, sqrt((double)p[i][0] * p[i][0] + (double)p[i][2] * p[i][2]));
  }
  free(p);
  wf_particles_destroy(r.ps);
  return top / reach;
}

TEST(heap_rests_and_steepens_with_rolling_friction) {
  double ke0, ke1;
  double s0 = heap(0.05f, &ke0), s1 = heap(0.3f, &ke1);
  printf("  height / reach: %.3f (μr 0.05), %.3f (μr 0.3); energy left %.2g, %.2g J\n", s0, s1, ke0,
         ke1);
  CHECK(s1 > s0);
  CHECK(ke1 < 1e-6);
}

/* The whole model (Hertz, history, rolling, rotation) over 1, 2, 3 and 4 partitions of CPU
 * devices: positions, velocities and angular velocities bitwise those of one solver; then a
 * checkpoint restore (set_state + granular_state_set) onto 3 partitions continues bitwise.
 * Tolerance: none. */
static wf_particles *column(int model, int ndev) {
  float gv[3] = {0.0f, -9.81f, 0.0f};
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1000.0f;
  m.young = 2e6f;
  m.rolling_friction = 0.1f;
  m.static_friction = 0.6f;
  wf_device *devs[4];
  for (int i = 0; i < ndev; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", th_kind, i);
    if (wf_device_get(name, &devs[i]) != WF_OK) devs[i] = th_dev0;
  }
  wf_clear_error();
  rig r;
  if (!rig_make(&r, model, &m, gv, devs, ndev)) return NULL;
  add_ground(&r, 0.5f, 0.5f);
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = R_BEAD, e.spacing = 2.05f * R_BEAD, e.jitter = 0.003f, e.seed = 5;
  e.density = 2500.0f;
  e.half_extents[0] = e.half_extents[2] = 2.0f * e.spacing;
  e.half_extents[1] = 6.0f * e.spacing;
  e.center[1] = 0.15f;
  e.velocity[0] = 0.2f;
  if (wf_particles_emit(r.ps, &e, NULL, NULL) != WF_OK) {
    TH_FAIL("emit: %s", wf_last_error());
    return NULL;
  }
  return r.ps;
}

static float *snapshot(wf_particles *ps) {
  uint32_t n = wf_particles_count(ps);
  float *s = malloc((size_t)n * 48);
  OKV(wf_particles_download_local(ps, (float(*)[4])s, (float(*)[4])(s + 4 * n)));
  OKV(wf_particles_download_omega(ps, (float(*)[4])(s + 8 * n)));
  return s;
}

static void same(const float *a, const float *b, uint32_t n, const char *what) {
  if (memcmp(a, b, (size_t)n * 48) == 0) return;
  for (uint32_t i = 0; i < 12 * n; i++)
    if (memcmp(&a[i], &b[i], 4) != 0) {
      TH_FAIL("%s: first difference at float %u (particle %u, %s): %.9g vs %.9g", what, i,
              (i / 4) % n,
              i < 4 * n   ? "pos"
              : i < 8 * n ? "vel"
                          : "omega",
              a[i], b[i]);
      return;
    }
}

TEST(hertz_history_rolling_bitwise_1_2_3_4_partitions_and_resume) {
  const int frames = 40, half = 20;
  for (int model = 0; model < 2; model++) {
    int cm = model ? WF_CONTACT_HERTZ : WF_CONTACT_DEM;
    wf_particles *ref = column(cm, 1);
    REQUIRE(ref);
    uint32_t n = wf_particles_count(ref);
    CHECK_OK(wf_particles_step_frames(ref, half));
    /* the checkpoint at frame `half` */
    float *cp = snapshot(ref);
    wf_particles_stats st;
    CHECK_OK(wf_particles_stats_get(ref, &st));
    size_t gb = wf_particles_granular_state_bytes(ref);
    void *gran = malloc(gb);
    CHECK_OK(wf_particles_granular_state_get(ref, gran, gb));
    CHECK_OK(wf_particles_step_frames(ref, frames - half));
    float *want = snapshot(ref);
    CHECK_OK(wf_particles_stats_get(ref, &st));
    printf("  %s: %u beads, rotational energy %.3g J, history overflows %llu\n",
           model ? "Hertz " : "linear", n, st.rotational_energy,
           (unsigned long long)st.history_overflows);
    CHECK(st.rotational_energy > 0.0);
    for (int np = 1; np <= 4; np++) {
      wf_particles *ps = column(cm, np);
      REQUIRE(ps);
      CHECK_OK(wf_particles_step_frames(ps, frames));
      float *got = snapshot(ps);
      char what[96];
      snprintf(what, sizeof what, "%s, %d partitions", model ? "Hertz" : "linear", np);
      same(want, got, n, what);
      free(got);
      wf_particles_destroy(ps);
    }
    for (int np = 1; np <= 3; np += 2) { /* restore onto 1 and 3 partitions */
      wf_particles *ps = column(cm, np);
      REQUIRE(ps);
      wf_particles_stats s0;
      CHECK_OK(wf_particles_step_frames(ps, 3)); /* some other state first */
      CHECK_OK(wf_particles_stats_get(ps, &s0));
      double t = half * 0.0025;
      CHECK_OK(wf_particles_set_state_local(ps, (const float(*)[4])cp,
                                            (const float(*)[4])(cp + 4 * n), (double)(float)t,
                                            (uint64_t)half * 10));
      CHECK_OK(wf_particles_granular_state_set(ps, gran, gb));
      CHECK_OK(wf_particles_step_frames(ps, frames - half));
      float *got = snapshot(ps);
      char what[96];
      snprintf(what, sizeof what, "%s, resumed on %d partitions", model ? "Hertz" : "linear", np);
      (void)s0;
      same(want, got, n, what);
      free(got);
      wf_particles_destroy(ps);
    }
    free(cp), free(want), free(gran);
    wf_particles_destroy(ref);
  }
}

/* wf_particles_stability: the linear contact time is π / sqrt(kn/m* (1 - ζ²)) exactly, the
 * tangential half period π / sqrt(3.5 kt / m*), the Hertz time 2.87 (m*²/(R* E*² v))^(1/5); the
 * substeps needed give >= 10 a contact. Bad material fields fail naming the field. */
TEST(stability_guidance_and_validation) {
  wf_particles_desc d = wf_particles_desc_default();
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1000.0f;
  wf_particles_stability_result r;
  double mass = bead_mass();
  CHECK_OK(wf_particles_stability(&d, &m, R_BEAD, mass, 0.0, &r));
  double z = wf_particles_zeta_for_restitution(m.restitution), ms = mass / 2;
  CHECK_NEAR(r.contact_time, PI_D / sqrt(1000.0 / ms * (1 - z * z)), 1e-12);
  double kt = 2.0 * (1 - 0.25) / (2 - 0.25) * 1000.0;
  CHECK_NEAR(r.tangential_time, PI_D / sqrt(3.5 * kt / ms), 1e-12);
  CHECK(r.substep_max <= r.tangential_time / 10.0 + 1e-15);
  CHECK(r.substeps_needed >= (int)ceil(d.frame_dt / r.substep_max));
  printf("  linear: contact %.3g s, tangential %.3g s, rolling %.3g s: %d substeps a frame\n",
         r.contact_time, r.tangential_time, r.rolling_time, r.substeps_needed);
  d.contact_model = WF_CONTACT_HERTZ;
  CHECK_OK(wf_particles_stability(&d, &m, R_BEAD, mass, 1.0, &r));
  double es = m.young / (2.0 * (1.0 - 0.0625));
  CHECK_NEAR(r.contact_time, 2.87 * pow(ms * ms / (R_BEAD / 2.0 * es * es), 0.2), 1e-12);
  printf("  Hertz: contact %.3g s, tangential %.3g s: %d substeps a frame\n", r.contact_time,
         r.tangential_time, r.substeps_needed);
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  wf_particle_material bad = m;
  bad.poisson = 0.6f;
  CHECK_ERROR(wf_particles_set_material(ps, 0, &bad), WF_ERR_INVALID, "material 0: poisson");
  bad = m, bad.young = 0.0f;
  CHECK_ERROR(wf_particles_set_material(ps, 0, &bad), WF_ERR_INVALID, "material 0: young");
  bad = m, bad.rolling_friction = -1.0f;
  CHECK_ERROR(wf_particles_add_material(ps, &bad, NULL), WF_ERR_INVALID, "rolling_friction");
  bad = m, bad.static_friction = 0.1f;
  CHECK_ERROR(wf_particles_add_material(ps, &bad, NULL), WF_ERR_INVALID, "static_friction");
  wf_particles_destroy(ps);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(rolls_without_slipping_at_five_sevenths),
      TH_TEST(slides_when_friction_is_low),
      TH_TEST(rests_on_a_slope_below_friction_and_rolling_angles),
      TH_TEST(rolling_resistance_decelerates_at_five_sevenths_mu_r_g),
      TH_TEST(linear_restitution_and_duration_pair_and_ground),
      TH_TEST(hertz_duration_and_restitution_pair_and_ground),
      TH_TEST(oblique_impact_sliding_and_sticking),
      TH_TEST(a_grain_born_touching_another_pushes_it_back_at_once),
      TH_TEST(heap_rests_and_steepens_with_rolling_friction),
      TH_TEST(hertz_history_rolling_bitwise_1_2_3_4_partitions_and_resume),
      TH_TEST(stability_guidance_and_validation)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
