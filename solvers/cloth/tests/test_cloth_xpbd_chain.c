/* XPBD with compliance 0 against Bernoulli's hanging chain, across iterations and substeps.
 *
 * A uniform inextensible chain of length L hanging from one end swings in its first mode with
 * ω² = g j² / (4 L), j = 2.404826 the first zero of J0 (D. Bernoulli 1732, Euler 1781): for
 * L = 1 m, T = 4π sqrt(L/g) / j = 1.66837 s. The solver's chain is N = 16 links (17 vertices of a
 * 1 x 17 grid, distance constraints only, compliance 0, no damping) with equal masses m and m/2
 * at the free end (the lumping of a uniform chain). Its linearised first mode (the tridiagonal
 * eigenproblem solved below) is 0.12% slower than Bernoulli's: the discrete-chain offset, O(1/N²)
 * (N = 8: 0.46%, N = 32: 0.03%; with a full mass at the free end it would be O(1/N), 1.5% at
 * N = 16). The chain starts at rest in that discrete mode shape, 5 cm at the free end (the
 * amplitude's own period shift is ~(slope²)/16 ~ 3e-4), so no other mode is excited.
 *
 * Measured over 12 s (7 periods), sampled once a frame at 60 Hz:
 *  - period: mean interval between the first and last upward zero crossings of the free end's
 *    horizontal position (linear interpolation between samples: error ~1e-5 s, a crossing is on
 *    the straight part of the sine). Tolerance: 1.5% of Bernoulli's, the requirement;
 *    the discrete offset takes 0.12% of it, and XPBD's own period error (O(dt), from the
 *    first-order dissipation and the unconverged Gauss–Seidel solve at 1 iteration) the rest.
 *  - energy: kinetic + gravitational of every free vertex (compliance 0: no elastic energy),
 *    relative to the swing energy E(0) - E(rest). XPBD with compliance 0 is implicit Euler on
 *    the constraint manifold: it may only lose energy. Tolerance: at most +1% over 12 s, at any
 *    sample; the decay is printed, not checked (it is the method's first-order damping).
 *
 * xpbd_chain_bernoulli runs a subset that covers both ends of each axis (1 s on a CPU core, 40 s
 * under AddressSanitizer, ~10 s on an H200, where a substep is launch-bound); xpbd_chain_sweep
 * runs the full sweep {1, 4, 16, 64} iterations x {8, 64, 256} substeps (10 s on a CPU core, two
 * minutes on CUDA, the same bits: test_cloth_parity) only with WEFT_TEST_SLOW=1, and prints the
 * table of docs/validation.md as CSV lines ("csv,...", which scripts/validation/xpbd_chain.sh
 * collects). */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "harness.h"
#include "weft/cloth.h"

#define G     9.81
#define PI    3.14159265358979323846
#define LINKS 16
#define NV    (LINKS + 1)

static const double chain_len = 1.0, amplitude = 0.05, seconds = 12.0;

/* Bernoulli's period of the continuous chain. */
static double bernoulli_period(void) { return 4.0 * PI * sqrt(chain_len / G) / 2.404825557695773; }

/* The discrete chain's first mode: masses mass[1..N] at the joints (vertex 0 pinned), links of
 * length a. Linearised, mass[k] x_k'' = (T_k (x_{k-1} - x_k) + T_{k+1} (x_{k+1} - x_k)) / a with
 * T_k = g Σ_{i >= k} mass[i]. Inverse iteration on the symmetric form M^-1/2 K M^-1/2 (Thomas
 * algorithm; the gap λ2/λ1 ~ 5 converges in a few dozen steps) gives ω² = g λ1 / a and the shape
 * x_k (normalised to 1 at the free end). Returns the period. */
static double chain_mode(const double *mass, double *shape) {
  const double a = chain_len / LINKS;
  double T[NV + 1] = {0}, d[NV], o[NV], u[NV], y[NV], cp[NV], dp[NV];
  for (int k = LINKS; k >= 1; k--)
    T[k] = T[k + 1] + mass[k];
  for (int k = 1; k <= LINKS; k++) {
    d[k] = (T[k] + T[k + 1]) / mass[k];
    o[k] = k < LINKS ? -T[k + 1] / sqrt(mass[k] * mass[k + 1]) : 0.0; /* (k, k+1) */
    u[k] = 1.0;
  }
  double lambda = 0.0;
  for (int it = 0; it < 200; it++) {
    /* solve (D + O) y = u */
    cp[1] = o[1] / d[1], dp[1] = u[1] / d[1];
    for (int k = 2; k <= LINKS; k++) {
      double den = d[k] - o[k - 1] * cp[k - 1];
      cp[k] = o[k] / den, dp[k] = (u[k] - o[k - 1] * dp[k - 1]) / den;
    }
    y[LINKS] = dp[LINKS];
    for (int k = LINKS - 1; k >= 1; k--)
      y[k] = dp[k] - cp[k] * y[k + 1];
    double num = 0.0, den = 0.0;
    for (int k = 1; k <= LINKS; k++)
      num += u[k] * y[k], den += y[k] * y[k];
    lambda = num / den; /* y ~ u / λ1, so u·y / y·y -> λ1 */
    double s = sqrt(den);
    for (int k = 1; k <= LINKS; k++)
      u[k] = y[k] / s;
  }
  shape[0] = 0.0;
  for (int k = 1; k <= LINKS; k++)
    shape[k] = u[k] / sqrt(mass[k]);
  for (int k = 1; k <= LINKS; k++)
    shape[k] /= shape[LINKS] != 0.0 ? shape[LINKS] : 1.0;
  double omega2 = G * lambda / a;
  return 2.0 * PI / sqrt(omega2);
}

typedef struct chain_result {
  double period;   /* s */
  double discrete; /* the discrete chain's linear period, s */
  double growth;   /* largest E(t) - E(0) over the run, relative to the swing energy */
  double end;      /* E(12 s) - E(0), relative to the swing energy */
  int periods;
  double ms; /* wall time */
} chain_result;

/* Energy of the free vertices: Σ m (½ v² + g y). */
static double chain_energy(const float (*pos)[4], const float (*vel)[4]) {
  double e = 0.0;
  for (int i = 1; i < NV; i++) {
    double m = 1.0 / pos[i][3];
    double v2 = (double)vel[i][0] * vel[i][0] + (double)vel[i][1] * vel[i][1] +
                (double)vel[i][2] * vel[i][2];
    e += m * (0.5 * v2 + G * pos[i][1]);
  }
  return e;
}

static int chain_run(int substeps, int iterations, chain_result *r) {
  const double a = chain_len / LINKS, m = 0.01;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "bernoulli-chain";
  d.integrator = WF_CLOTH_XPBD;
  d.substeps = substeps;
  d.iterations = iterations;
  d.material.coefficients = true; /* raw per-constraint values: compliance 0 is the point */
  d.material.particle_mass = (float)m;
  d.material.stretch_compliance = 0.0f; /* inextensible */
  d.material.damping = 0.0f;            /* undamped: d.damping is 0 by default too */
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 1, g.resolution[1] = NV;
  g.size[0] = 0.0f, g.size[1] = (float)chain_len;
  g.center[0] = 0.0f, g.center[1] = (float)(-0.5 * chain_len), g.center[2] = 0.0f; /* pivot at 0 */
  g.v_axis[0] = 0.0f, g.v_axis[1] = 1.0f, g.v_axis[2] = 0.0f;
  d.devices[0] = th_dev0;
  d.tuning.one_launch = WF_CLOTH_TUNE_ON; /* the one-launch frame on a CPU device too */
  wf_cloth *c;
  if (wf_cloth_create_grid(&d, &g, &c) != WF_OK || wf_cloth_pin_named(c, "top", NULL) != WF_OK) {
    TH_FAIL("chain: %s", wf_last_error());
    return 0;
  }
  wf_cloth_info ci; /* these results are the one-launch frame's (bitwise the staged frame's) */
  if (wf_cloth_info_get(c, &ci) == WF_OK && ci.frame_kernel != WF_CLOTH_FRAME_RESIDENT)
    TH_FAIL("chain: frame kernel %u, want the one-block XPBD frame", ci.frame_kernel);
  /* m/2 at the free end; the start: the discrete first mode, each link kept at length a */
  double mass[NV], shape[NV];
  for (int k = 0; k < NV; k++)
    mass[k] = k == LINKS ? 0.5 * m : m;
  r->discrete = chain_mode(mass, shape);
  float pos[NV][4], vel[NV][4];
  double x = 0.0, y = 0.0, e_rest = 0.0;
  for (int k = 0; k < NV; k++) {
    if (k > 0) {
      double dx = amplitude * (shape[k] - shape[k - 1]);
      x += dx, y -= sqrt(a * a - dx * dx);
      e_rest += mass[k] * G * -(a * k);
    }
    pos[k][0] = (float)x, pos[k][1] = (float)y, pos[k][2] = 0.0f;
    pos[k][3] = k == 0 ? 0.0f : (float)(1.0 / mass[k]);
    vel[k][0] = vel[k][1] = vel[k][2] = vel[k][3] = 0.0f;
  }
  int ok = wf_cloth_set_state(c, (const float(*)[4])pos, (const float(*)[4])vel, 0.0, 0) == WF_OK;
  double t0 = th_now_ms();
  int frames = (int)(seconds * 60.0 + 0.5);
  double prev_x = 0.0, first_t = -1.0, last_t = -1.0, e0 = 0.0, swing = 1.0, e = 0.0;
  int crossings = 0;
  r->growth = -1e30;
  for (int f = 0; f <= frames && ok; f++) {
    if (f > 0 && wf_cloth_step_frames(c, 1) != WF_OK) ok = 0;
    if (ok && wf_cloth_download(c, pos, vel) != WF_OK) ok = 0;
    if (!ok) break;
    e = chain_energy((const float(*)[4])pos, (const float(*)[4])vel);
    if (f == 0) e0 = e, swing = e - e_rest;
    r->growth = fmax(r->growth, (e - e0) / swing);
    double xe = pos[LINKS][0], t = f / 60.0;
    if (f > 0 && prev_x < 0.0 && xe >= 0.0) { /* upward crossing, linearly interpolated */
      double tc = t - (1.0 / 60.0) * xe / (xe - prev_x);
      if (crossings == 0) first_t = tc;
      last_t = tc;
      crossings++;
    }
    prev_x = xe;
  }
  r->ms = th_now_ms() - t0;
  if (!ok) TH_FAIL("chain (%d substeps, %d iterations): %s", substeps, iterations, wf_last_error());
  wf_cloth_destroy(c);
  if (!ok || crossings < 2) return 0;
  r->periods = crossings - 1;
  r->period = (last_t - first_t) / r->periods;
  r->end = (e - e0) / swing;
  return 1;
}

/* Runs one configuration, prints its row and checks it. */
static void chain_check(int substeps, int iterations) {
  const double Tb = bernoulli_period();
  chain_result r;
  if (!chain_run(substeps, iterations, &r)) {
    TH_FAIL("chain (%d substeps, %d iterations): no period measured", substeps, iterations);
    return;
  }
  double err = r.period / Tb - 1.0;
  printf("  %3d substeps x %2d iterations: period %.5f s (Bernoulli %.5f, discrete %.5f) "
         "%+.2f%%, energy max %+.3f%% end %+.3f%% of the swing (%.0f ms)\n",
         substeps, iterations, r.period, Tb, r.discrete, 100.0 * err, 100.0 * r.growth,
         100.0 * r.end, r.ms);
  printf("csv,%d,%d,%.6f,%.4f,%.4f,%.4f\n", substeps, iterations, r.period, 100.0 * err,
         100.0 * r.growth, 100.0 * r.end);
  CHECK_NEAR(r.discrete, Tb, 0.002 * Tb); /* the N = 16 offset, 0.12% */
  if (!(fabs(err) <= 0.015))
    TH_FAIL("%d substeps x %d iterations: period %.5f s is %+.2f%% from Bernoulli's %.5f s "
            "(tolerance 1.5%%)",
            substeps, iterations, r.period, 100.0 * err, Tb);
  if (!(r.growth <= 0.01))
    TH_FAIL("%d substeps x %d iterations: energy grew by %+.3f%% of the swing (tolerance +1%%)",
            substeps, iterations, 100.0 * r.growth);
}

/* CI: both ends of each axis and the case (64 substeps, 32 iterations). */
TEST(xpbd_chain_bernoulli) {
  static const int cfg[][2] = {{8, 1}, {8, 64}, {64, 4}, {64, 32}, {256, 1}};
  for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++)
    chain_check(cfg[i][0], cfg[i][1]);
}

/* The full sweep of docs/validation.md. */
TEST(xpbd_chain_sweep) {
  const char *slow = getenv("WEFT_TEST_SLOW");
  if (!slow || strcmp(slow, "1") != 0)
    SKIP("the full sweep (CPU 10 s, CUDA 2 min): set WEFT_TEST_SLOW=1 "
         "(scripts/validation/xpbd_chain.sh)");
  static const int subs[] = {8, 64, 256}, its[] = {1, 4, 16, 64};
  printf("csv,substeps,iterations,period_s,period_err_pct,energy_max_pct,energy_end_pct\n");
  for (int s = 0; s < 3; s++)
    for (int i = 0; i < 4; i++)
      chain_check(subs[s], its[i]);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(xpbd_chain_bernoulli), TH_TEST(xpbd_chain_sweep)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
