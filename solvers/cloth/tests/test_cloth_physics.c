/* Physics of the cloth solver against analytic references:
 *  - a hanging mass-spring chain: the static extension of each spring is (weight below it) / k;
 *  - an XPBD distance-constraint pendulum: small-angle period 2π sqrt(L/g), and the energy lost
 *    per period shrinks as the substep count grows;
 *  - XPBD stiffness does not depend on the iteration count at a fixed total work;
 *  - cloth draped on a sphere (both integrators) stays outside sphere + thickness, with no NaN;
 *  - a free-falling sheet follows semi-implicit Euler's x0 + v0 t + ½ g t² + ½ g h t with both
 *    integrators (the XPBD velocity must not be rebuilt from rounded positions);
 *  - the springs' branch-free 1/sqrt (wfc_rsqrt) is within 4 ulp of the exact value. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include <float.h>

#include "cloth_scenes.h"
#include "harness.h"
#include "solvers/cloth/cloth_math.h"

#define G 9.81

/* Runs `frames` frames and returns the downloaded positions (caller frees), or NULL. */
static float *run_frames(wf_cloth *c, int frames, uint32_t *n) {
  if (wf_cloth_step_frames(c, frames) != WF_OK) return NULL;
  wf_cloth_info info;
  wf_cloth_info_get(c, &info);
  float *p = malloc((size_t)info.vertices * 16);
  if (p && wf_cloth_download(c, (float(*)[4])p, NULL) != WF_OK) {
    free(p);
    return NULL;
  }
  *n = info.vertices;
  return p;
}

/* Segment s (between vertices s-1 and s of a chain of n hanging from vertex 0) carries the weight
 * of the n - s vertices below it, so it stretches by (n - s) m g / k. The discrete equilibrium of
 * semi-implicit Euler with velocity damping is exactly F = 0, so the only errors are float
 * rounding of positions near y = 1 (ulp 1.2e-7 m; a length is a difference of two) and what is
 * left of the motion after 6 s with 6/s velocity damping (amplitude e^-18 of ~1 cm): tolerance
 * 1e-6 m on extensions of 1-9 mm (0.1% of the smallest). */
TEST(spring_chain_static_extension) {
  const int n = 10;
  const float m = 0.1f, k = 1000.0f, spacing = 0.1f;
  wf_cloth *c;
  CHECK_OK(scene_chain(th_dev0, WF_CLOTH_SPRINGS, n, spacing, m, 16, 1, k, 6.0f, &c));
  uint32_t nv = 0;
  float *p = run_frames(c, 360, &nv);
  if (!p) TH_FAIL("stepping: %s", wf_last_error());
  wf_cloth_destroy(c);
  REQUIRE(p && nv == (uint32_t)n);
  double total = 0.0, want_total = 0.0;
  for (int s = 1; s < n; s++) {
    double dx = p[4 * s] - p[4 * (s - 1)], dy = p[4 * s + 1] - p[4 * (s - 1) + 1];
    double ext = sqrt(dx * dx + dy * dy) - spacing, want = (n - s) * m * G / k;
    CHECK_NEAR(ext, want, 1e-6);
    CHECK_NEAR(dx, 0.0, 1e-6); /* hangs straight down */
    total += ext, want_total += want;
  }
  printf("  chain of %d: total extension %.7f m, analytic n(n-1)/2 m g / k = %.7f m\n", n, total,
         want_total);
  CHECK(p[3] == 0.0f); /* the top is pinned */
  free(p);
}

typedef struct pendulum_result {
  double period; /* mean of the periods between upward zero crossings */
  double drift;  /* energy change per period, relative to the initial swing energy */
  int periods;
} pendulum_result;

/* An XPBD pendulum of length L released at rest at angle theta0, sampled once per frame. */
static int pendulum(int substeps, double theta0, double seconds, pendulum_result *r) {
  const double L = 1.0;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "pendulum";
  d.integrator = WF_CLOTH_XPBD;
  d.substeps = substeps;
  d.material.particle_mass = 1.0f;
  d.material.coefficients = true;
  d.material.stretch_compliance = 0.0f; /* rigid rod */
  d.material.damping = 0.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 1, g.resolution[1] = 2;
  g.size[0] = 0.0f, g.size[1] = (float)L;
  g.center[0] = (float)(-0.5 * L * sin(theta0)); /* the pivot (top) at the origin */
  g.center[1] = (float)(-0.5 * L * cos(theta0));
  g.v_axis[0] = (float)sin(theta0), g.v_axis[1] = (float)cos(theta0), g.v_axis[2] = 0.0f;
  wf_cloth *c;
  d.devices[0] = th_dev0;
  if (wf_cloth_create_grid(&d, &g, &c) != WF_OK ||
      wf_cloth_pin_named(c, "top", NULL) != WF_OK) {
    TH_FAIL("pendulum: %s", wf_last_error());
    return 0;
  }
  int frames = (int)(seconds * 60.0);
  float pos[2][4], vel[2][4];
  double prev_x = 0.0, first_t = -1.0, last_t = -1.0, e0 = 0.0, e_first = 0.0, e_last = 0.0;
  int crossings = 0;
  int ok = 1;
  for (int f = 0; f <= frames && ok; f++) {
    if (f > 0 && wf_cloth_step_frames(c, 1) != WF_OK) ok = 0;
    if (ok && wf_cloth_download(c, pos, vel) != WF_OK) ok = 0;
    if (!ok) break;
    double x = pos[1][0] - pos[0][0], y = pos[1][1] - pos[0][1];
    double e = 0.5 * (vel[1][0] * (double)vel[1][0] + vel[1][1] * (double)vel[1][1]) + G * (y + L);
    if (f == 0) e0 = e;
    double t = f / 60.0;
    if (f > 0 && prev_x < 0.0 && x >= 0.0) { /* upward crossing, linearly interpolated */
      double tc = t - (1.0 / 60.0) * x / (x - prev_x);
      if (crossings == 0) first_t = tc, e_first = e;
      last_t = tc, e_last = e;
      crossings++;
    }
    prev_x = x;
  }
  if (!ok) TH_FAIL("pendulum: %s", wf_last_error());
  wf_cloth_destroy(c);
  if (!ok || crossings < 2) return 0;
  r->periods = crossings - 1;
  r->period = (last_t - first_t) / r->periods;
  r->drift = (e_last - e_first) / r->periods / e0; /* e0 = g L (1 - cos theta0) at rest */
  return 1;
}

/* T = 2π sqrt(L/g) (1 + θ0²/16 + ...) = 2.0073 s for L = 1, θ0 = 0.1 (the amplitude term is
 * 6e-4 of T). Tolerance 0.2% of T, checked at 4 and 16 substeps a frame: the zero crossings are
 * interpolated between 60 Hz samples on a nearly linear stretch of the sine (error ~1e-5 s) and
 * XPBD's period error is O(dt²). Not at 64 substeps: there the step dt·v ~ 4e-5 m is a few
 * hundred ulps of the 1 m coordinates, and float32 rounding of x + dt v and of the corrections
 * shifts the period by ~0.3% (a double-precision replay of the same algorithm gives 2.0073 s at
 * every substep count; a float32 replay reproduces this solver). Energy: XPBD is dissipative to
 * first order in dt, so 4x the substeps must lose clearly less per period (at least 2x less), and
 * 64 substeps less than 2% of the swing energy per period. */
TEST(xpbd_pendulum_period_and_energy) {
  const double theta0 = 0.1;
  const double T = 2.0 * 3.14159265358979323846 * sqrt(1.0 / G) * (1.0 + theta0 * theta0 / 16.0);
  int steps[3] = {4, 16, 64};
  pendulum_result r[3];
  for (int i = 0; i < 3; i++) {
    REQUIRE(pendulum(steps[i], theta0, 9.0, &r[i]));
    printf("  %2d substeps: period %.5f s (analytic %.5f), energy change per period %+.4f%%"
           " over %d periods\n",
           steps[i], r[i].period, T, 100.0 * r[i].drift, r[i].periods);
  }
  CHECK_NEAR(r[0].period, T, 0.002 * T);
  CHECK_NEAR(r[1].period, T, 0.002 * T);
  CHECK(fabs(r[0].drift) > 2.0 * fabs(r[1].drift));
  CHECK(fabs(r[1].drift) > 2.0 * fabs(r[2].drift));
  CHECK(fabs(r[2].drift) < 0.02);
}

/* The static sag of an XPBD chain with compliance α = 1/k at fixed work (substeps x iterations
 * = 16 a frame): 16 x 1, 4 x 4, 1 x 16, against the compliant equilibrium (n(n-1)/2) m g α and
 * each other. Tolerance 2% of the extension: XPBD's multipliers make the answer independent of
 * the iteration count only as far as each substep's Gauss–Seidel solve converges; with one sweep
 * a substep the fixed point of this 9-constraint chain is ~1% softer (a double-precision replay
 * of the algorithm gives +0.9%, so it is the method, not rounding). (Not 64 x 1: at dt = 1/3840 s
 * the gravity step dt² g = 7e-7 m is a few ulps of the coordinates and float32 rounding adds
 * another ~1.5%.) */
TEST(xpbd_stiffness_independent_of_iterations) {
  const int n = 10;
  const float m = 0.1f, k = 1000.0f, spacing = 0.1f;
  const int cfg[3][2] = {{16, 1}, {4, 4}, {1, 16}};
  const double want = (double)n * (n - 1) / 2.0 * m * G / k;
  double ext[3];
  for (int i = 0; i < 3; i++) {
    wf_cloth *c;
    CHECK_OK(scene_chain(th_dev0, WF_CLOTH_XPBD, n, spacing, m, cfg[i][0], cfg[i][1], k, 6.0f, &c));
    uint32_t nv = 0;
    float *p = run_frames(c, 360, &nv);
    if (!p) TH_FAIL("stepping: %s", wf_last_error());
    wf_cloth_destroy(c);
    REQUIRE(p);
    ext[i] = (p[1] - p[4 * (n - 1) + 1]) - spacing * (n - 1);
    printf("  %2d substeps x %2d iterations: extension %.6f m (analytic %.6f m)\n", cfg[i][0],
           cfg[i][1], ext[i], want);
    free(p);
    CHECK_NEAR(ext[i], want, 0.02 * want);
  }
  CHECK_NEAR(ext[1], ext[0], 0.02 * want);
  CHECK_NEAR(ext[2], ext[0], 0.02 * want);
}

/* A 17 x 17 sheet (default material) dropped onto a sphere above the ground for `seconds`: after
 * every frame each vertex is at least radius + thickness from the centre and above the ground +
 * thickness, to 2e-6 m (the projection lands exactly on the surface in exact arithmetic; float
 * rounding of coordinates ~1 m and of the sqrt leaves a few ulps of 1.2e-7 m). The sheet must
 * come to rest on the sphere: its centre vertex ends on the sphere's cap (within 2 cm of
 * radius + thickness, above y = 0.25). */
static void drape(int integrator) {
  const float R = 0.3f, thick = 0.01f;
  double seconds = 10.0;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  seconds = 4.0; /* the sanitizer builds run slower */
#endif
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "drape";
  d.integrator = integrator;
  d.material.thickness = thick;
  d.damping = 0.5f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 17;
  g.center[1] = 0.6f;
  wf_cloth *c;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
  wf_collider_desc s = scene_sphere(0.0f, 0.0f, 0.0f, R), ground = scene_ground(-0.5f);
  CHECK_OK(wf_cloth_add_collider(c, &s, NULL));
  CHECK_OK(wf_cloth_add_collider(c, &ground, NULL));
  const uint32_t nv = 17 * 17;
  float(*p)[4] = malloc(nv * 16);
  REQUIRE(p);
  int frames = (int)(seconds * 60.0), bad = 0;
  double min_gap = 1e9;
  for (int f = 0; f < frames && !bad; f++) {
    wf_status st = wf_cloth_step_frames(c, 1);
    if (st == WF_OK) st = wf_cloth_download(c, p, NULL);
    if (st != WF_OK) {
      TH_FAIL("frame %d: %s", f, wf_last_error());
      break;
    }
    for (uint32_t i = 0; i < nv; i++) {
      double r =
          sqrt((double)p[i][0] * p[i][0] + (double)p[i][1] * p[i][1] + (double)p[i][2] * p[i][2]);
      min_gap = fmin(min_gap, r - R - thick);
      if (!isfinite(r) || r < R + thick - 2e-6 || p[i][1] < -0.5f + thick - 2e-6) {
        if (bad++ < 3)
          TH_FAIL("frame %d: vertex %u at (%g %g %g) is inside sphere/ground + thickness", f, i,
                  p[i][0], p[i][1], p[i][2]);
      }
    }
  }
  const float *mid = p[8 * 17 + 8];
  double rm = sqrt((double)mid[0] * mid[0] + (double)mid[1] * mid[1] + (double)mid[2] * mid[2]);
  printf("  %s: %.0f s, smallest gap to sphere + thickness %.3g m, centre vertex at (%.4f %.4f "
         "%.4f), %.5f m from the centre\n",
         integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", seconds, min_gap, mid[0], mid[1], mid[2],
         rm);
  CHECK(rm >= R + thick - 2e-6 && rm < R + thick + 0.02 && mid[1] > 0.25f);
  free(p);
  wf_cloth_destroy(c);
}

TEST(drape_on_sphere_springs) { drape(WF_CLOTH_SPRINGS); }
TEST(drape_on_sphere_xpbd) { drape(WF_CLOTH_XPBD); }

/* A free 4 x 4 sheet falling for 1 s at 64 substeps a frame (h = 1/3840 s), both integrators.
 * Semi-implicit Euler (which XPBD's predict/finalize also is, with no active constraint) gives
 * after n substeps  y - y0 = -g h² n(n+1)/2 = -(½ g t² + ½ g h t)  and  v = -g t, exactly in real
 * arithmetic. Float32 leaves the rounding of 3840 position updates of a coordinate below 5 m
 * (half an ulp is 2.4e-7 m; springs measure 1.2e-4 m in total) and of 3840 velocity updates
 * (springs: 4e-4 m/s): tolerance 1e-4 relative on the fall and 1e-4 relative on the speed. XPBD
 * used to rebuild v = (x_new - x_old) / h from positions rounded to ulp(x) ~ 5e-7 m, a velocity
 * error of ~2e-3 m/s per substep that does not average out (the increments are almost equal, so
 * the rounding is too): it fell 1.5% too far at 64 substeps. */
static void free_fall(int integrator) {
  const int sub = 64;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "fall";
  d.integrator = integrator;
  d.substeps = sub;
  d.iterations = 2;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 4;
  g.center[1] = 0.0f;
  wf_cloth *c;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
  float p0[16][4], p1[16][4], v1[16][4];
  CHECK_OK(wf_cloth_download(c, p0, NULL));
  CHECK_OK(wf_cloth_step_frames(c, 60));
  CHECK_OK(wf_cloth_download(c, p1, v1));
  wf_cloth_destroy(c);
  const double h = 1.0 / 60.0 / sub, n = 60.0 * sub, t = n * h;
  const double want = -G * h * h * n * (n + 1.0) / 2.0, want_v = -G * t;
  double worst = 0.0, worst_v = 0.0;
  for (int i = 0; i < 16; i++) {
    worst = fmax(worst, fabs((p1[i][1] - (double)p0[i][1]) / want - 1.0));
    worst_v = fmax(worst_v, fabs(v1[i][1] / want_v - 1.0));
    CHECK_NEAR(p1[i][0], p0[i][0], 1e-5);
    CHECK_NEAR(p1[i][2], p0[i][2], 1e-5);
  }
  printf("  %s: fell %.7f m (semi-implicit Euler %.7f m, ½gt² %.7f m): worst error %.2e of the "
         "fall, %.2e of the speed\n",
         integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", p1[5][1] - (double)p0[5][1], want,
         -0.5 * G * t * t, worst, worst_v);
  CHECK(worst < 1e-4);
  CHECK(worst_v < 1e-4);
}

TEST(free_fall_springs) { free_fall(WF_CLOTH_SPRINGS); }
TEST(free_fall_xpbd) { free_fall(WF_CLOTH_XPBD); }

/* wfc_rsqrt against 1/sqrt in double over 2^24 arguments spread over every binade from
 * WFC_RSQRT_MIN to FLT_MAX (a stride through the bit patterns), and the length x rsqrt(x) the
 * springs use against sqrtf: both within 4 ulp (of the float result). */
TEST(rsqrt_within_4_ulp) {
  float lo_f = WFC_RSQRT_MIN, hi_f = FLT_MAX;
  uint32_t lo, hi;
  memcpy(&lo, &lo_f, 4), memcpy(&hi, &hi_f, 4);
  const uint32_t stride = (hi - lo) >> 24 | 1u;
  double worst = 0.0, worst_len = 0.0;
  float at = 0.0f;
  for (uint32_t b = lo; b <= hi - stride; b += stride) {
    float x;
    memcpy(&x, &b, 4);
    float y = wfc_rsqrt(x);
    double exact = 1.0 / sqrt((double)x), ulp = nextafterf((float)exact, INFINITY) - (float)exact;
    double e = fabs((double)y - exact) / ulp;
    if (e > worst) worst = e, at = x;
    float l = x * y, s = sqrtf(x);
    double el = fabs((double)l - (double)s) / (double)(nextafterf(s, INFINITY) - s);
    if (el > worst_len) worst_len = el;
  }
  printf("  rsqrt: worst %.2f ulp (at %g); x rsqrt(x) against sqrtf: worst %.2f ulp\n", worst,
         (double)at, worst_len);
  CHECK(worst <= 4.0);
  CHECK(worst_len <= 4.0);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(spring_chain_static_extension),
                                  TH_TEST(xpbd_pendulum_period_and_energy),
                                  TH_TEST(xpbd_stiffness_independent_of_iterations),
                                  TH_TEST(drape_on_sphere_springs),
                                  TH_TEST(drape_on_sphere_xpbd),
                                  TH_TEST(free_fall_springs),
                                  TH_TEST(free_fall_xpbd),
                                  TH_TEST(rsqrt_within_4_ulp)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
