/* Emitters made on the host (engine/emit.c, weft/scene.h: wf_scene_emitter_points): cylinder
 * lattices, random packings at a target packing fraction, uniform and log-normal radii against
 * their closed-form moments, contacts between particles of different radii in the solver's grid,
 * particle files (PLY and CSV) written and read back bit for bit, bad files failing validation
 * with file:line, and worlds of such emitters bitwise equal on 1 to 4 CPU partitions.
 *
 * Statistical tolerances: a sample mean of N values of standard deviation σ has standard error
 * σ / sqrt(N); the tests allow 4 standard errors (a false failure once in ~16000 seeds, and the
 * seeds are fixed, so a pass is a pass for good). The variance's standard error is
 * sqrt((μ4 - σ⁴) / N), μ4 the fourth central moment, computed from the closed-form raw moments.
 */
#define _XOPEN_SOURCE 700
#include <stdint.h>

#include "harness.h"
#include "tmp_root.h"
#include "weft/io.h"
#include "weft/particles.h"
#include "weft/scene.h"
#include "weft/world.h"

#define WORLD_SCENE_NAME "emit.json"
#include "world_split_util.h"

static const double PI = 3.14159265358979323846;

/* A scene of one emitter `emitter_json` (the inside of its object). */
static wf_scene *scene_of(const char *emitter_json, const char *base_dir) {
  char text[4096];
  snprintf(text, sizeof text,
           "{\"simulation\": {\"devices\": \"cpu\", \"deterministic\": true, \"substeps\": 8},"
           " \"particles\": [{\"name\": \"grains\", %s}]}",
           emitter_json);
  wf_scene *sc = NULL;
  if (wf_scene_parse(text, strlen(text), "emit.json", base_dir, NULL, &sc) != WF_OK)
    TH_FAIL("scene: %s", wf_scene_errors());
  return sc;
}

/* The particles of the scene's emitter 0, malloc'ed (pos then vel, n rows each). */
static float (*points_of(const wf_scene *sc, uint64_t *n))[4] {
  *n = wf_scene_emitter_count(&sc->emitters[0]);
  if (*n == 0 || *n > 10000000) {
    TH_FAIL("count %llu", (unsigned long long)*n);
    return NULL;
  }
  float(*p)[4] = malloc((size_t)*n * 32);
  if (wf_scene_emitter_points(&sc->emitters[0], 0, p, p + *n, NULL, *n) != WF_OK) {
    TH_FAIL("points: %s", wf_last_error());
    free(p);
    return NULL;
  }
  return p;
}

/* Expects the scene to fail validation with a message holding each string. */
static void expect_scene_error(const char *emitter_json, const char *base_dir, const char *a,
                               const char *b) {
  char text[4096];
  snprintf(text, sizeof text, "{\"particles\": [{\"name\": \"grains\", %s}]}", emitter_json);
  wf_scene *sc = NULL;
  wf_status st = wf_scene_parse(text, strlen(text), "emit.json", base_dir, NULL, &sc);
  if (st != WF_ERR_PARSE)
    TH_FAIL("%s: status %s, expected WF_ERR_PARSE", emitter_json, wf_status_str(st));
  const char *m = wf_scene_errors();
  if (a && !strstr(m, a)) TH_FAIL("%s: message \"%s\" lacks \"%s\"", emitter_json, m, a);
  if (b && !strstr(m, b)) TH_FAIL("%s: message \"%s\" lacks \"%s\"", emitter_json, m, b);
  wf_scene_destroy(sc);
}

/* A box lattice counts as the solver makes it: half extents 0.399 m at spacing 0.0105 m are 76
 * spacings in real numbers but 75.99999 in the float values the solver's lattice gets, and the
 * scene's count (wf_scene_emitter_count, also the capacity reserved) must say the same. */
TEST(box_lattice_count_matches_the_solver) {
  wf_scene *sc = scene_of("\"shape\": \"box\", \"center\": [0, 0.5, 0], "
                          "\"half_extents\": [0.02, 0.399, 0.02], \"spacing\": 0.0105, "
                          "\"radius\": 0.005",
                          NULL);
  REQUIRE(sc);
  uint64_t n = wf_scene_emitter_count(&sc->emitters[0]);
  wf_world *w = NULL;
  CHECK_OK(wf_world_create(sc, NULL, &w));
  wf_scene_destroy(sc);
  REQUIRE(w);
  wf_world_stats st;
  CHECK_OK(wf_world_stats_get(w, &st));
  CHECK_EQ_INT(st.particle_count, n);
  CHECK_EQ_INT(n, 3 * 76 * 3 - 3 * 3); /* 75 rows: 0.798 / 0.0105 rounds below 76 in float */
  wf_world_destroy(w);
}

/* ---- cylinder ------------------------------------------------------------------------------ */

/* A cylinder lattice holds the lattice points whose centres are within its radius, every layer
 * alike: counted here independently (in double), and its area fraction of the bounding square
 * tends to π/4 (a lattice of 200 x 200 points misses the circle's area by O(perimeter) points:
 * the Gauss circle error, under 1% here). */
TEST(cylinder_lattice) {
  wf_scene *sc = scene_of("\"shape\": \"cylinder\", \"center\": [1, 2, 3], \"cylinder_radius\": "
                          "0.25, \"height\": 0.2, \"radius\": 0.01",
                          NULL);
  REQUIRE(sc);
  uint64_t n = 0;
  float(*p)[4] = points_of(sc, &n);
  REQUIRE(p);
  uint64_t disc = 0; /* 25 x 25 cells of 0.02, centres at (i + 0.5) 0.02 - 0.25 */
  for (int i = 0; i < 25; i++)
    for (int k = 0; k < 25; k++) {
      double x = (i + 0.5) * 0.02 - 0.25, z = (k + 0.5) * 0.02 - 0.25;
      disc += x * x + z * z <= 0.0625 + 1e-12;
    }
  CHECK_EQ_INT(n, disc * 10);
  for (uint64_t i = 0; i < n; i++) {
    double dx = p[i][0] - 1.0, dy = p[i][1] - 2.0, dz = p[i][2] - 3.0;
    if (!(dx * dx + dz * dz <= 0.0625 * (1 + 1e-6) && fabs(dy) < 0.1 && p[i][3] == 0.01f)) {
      TH_FAIL("particle %llu at (%g, %g, %g) r %g is outside", (unsigned long long)i, p[i][0],
              p[i][1], p[i][2], p[i][3]);
      break;
    }
  }
  free(p);
  wf_scene_destroy(sc);
  sc = scene_of("\"shape\": \"cylinder\", \"cylinder_radius\": 2, \"height\": 0.02, "
                "\"radius\": 0.01",
                NULL);
  REQUIRE(sc);
  double frac = (double)wf_scene_emitter_count(&sc->emitters[0]) / (200.0 * 200.0);
  CHECK_NEAR(frac, PI / 4, 0.01 * PI / 4);
  wf_scene_destroy(sc);
}

/* ---- random packing ------------------------------------------------------------------------ */

/* No two particles overlap (beyond float rounding of the positions: 1e-6 of a radius) and every
 * sphere lies inside the region (the same slack); returns the volume fraction. */
static double check_packing(float (*p)[4], uint64_t n, const double c[3], int shape,
                            const double h[3]) {
  double vol = 0.0;
  for (uint64_t i = 0; i < n; i++) {
    double r = p[i][3], d[3] = {p[i][0] - c[0], p[i][1] - c[1], p[i][2] - c[2]};
    double slack = 1e-6 * r;
    bool in = shape == 0 ? fabs(d[0]) + r <= h[0] + slack && fabs(d[1]) + r <= h[1] + slack &&
                               fabs(d[2]) + r <= h[2] + slack
              : shape == 1 ? sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) + r <= h[0] + slack
                           : sqrt(d[0] * d[0] + d[2] * d[2]) + r <= h[0] + slack &&
                                 fabs(d[1]) + r <= h[1] + slack;
    if (!in) {
      TH_FAIL("particle %llu (r %g) sticks out of the region", (unsigned long long)i, r);
      return NAN;
    }
    vol += 4.0 / 3.0 * PI * r * r * r;
    for (uint64_t j = 0; j < i; j++) {
      double e[3] = {p[i][0] - p[j][0], p[i][1] - p[j][1], p[i][2] - p[j][2]};
      double rr = r + p[j][3];
      if (e[0] * e[0] + e[1] * e[1] + e[2] * e[2] < rr * rr * (1 - 2e-6)) {
        TH_FAIL("particles %llu and %llu overlap", (unsigned long long)i, (unsigned long long)j);
        return NAN;
      }
    }
  }
  return vol;
}

/* A random packing reaches its target: the volume of its spheres over the region's is the target
 * plus less than one particle's volume (the radii are drawn until the target is reached), with
 * no overlap and every sphere inside; in a box, a sphere and a cylinder; at 0.34, the highest
 * target accepted. The same seed gives the same bits; another seed other positions. */
TEST(random_packing_reaches_the_target) {
  struct {
    const char *json;
    int shape;
    double h[3], volume, rmax;
  } cases[] = {
      {"\"shape\": \"box\", \"half_extents\": [0.2, 0.15, 0.1], \"packing\": \"random\", "
       "\"packing_fraction\": 0.3, \"radius\": 0.01, \"seed\": 5",
       0,
       {0.2, 0.15, 0.1},
       0.4 * 0.3 * 0.2,
       0.01},
      {"\"shape\": \"sphere\", \"sphere_radius\": 0.15, \"packing\": \"random\", "
       "\"packing_fraction\": 0.34, \"radius\": 0.01",
       1,
       {0.15, 0.15, 0.15},
       4.0 / 3.0 * PI * 0.15 * 0.15 * 0.15,
       0.01},
      {"\"shape\": \"cylinder\", \"cylinder_radius\": 0.12, \"height\": 0.3, \"packing\": "
       "\"random\", \"packing_fraction\": 0.3, \"radius_distribution\": \"uniform\", "
       "\"radius_min\": 0.006, \"radius_max\": 0.012",
       2,
       {0.12, 0.15, 0.12},
       PI * 0.12 * 0.12 * 0.3,
       0.012},
  };
  for (int k = 0; k < 3; k++) {
    wf_scene *sc = scene_of(cases[k].json, NULL);
    REQUIRE(sc);
    double target = sc->emitters[0].packing_fraction, c[3] = {0, 1, 0};
    uint64_t n = 0;
    float(*p)[4] = points_of(sc, &n);
    REQUIRE(p);
    double phi = check_packing(p, n, c, cases[k].shape, cases[k].h) / cases[k].volume;
    /* spread evenly: each octant of the region (all symmetric about the centre) holds n/8 of
     * the centres within 4 binomial standard deviations, sqrt(n/8 · 7/8) (a packing is more
     * even than independent points, so this is loose, but a placement favouring a side, as a
     * biased search for room would, fails it) */
    int oct[8] = {0};
    for (uint64_t i = 0; i < n; i++)
      oct[(p[i][0] > c[0]) | (p[i][1] > c[1]) << 1 | (p[i][2] > c[2]) << 2]++;
    for (int o = 0; o < 8; o++)
      CHECK_NEAR(oct[o], n / 8.0, 4.0 * sqrt(n / 8.0 * 7.0 / 8.0));
    double vmax = 4.0 / 3.0 * PI * pow(cases[k].rmax, 3) / cases[k].volume;
    if (!(phi >= target * (1 - 1e-6) && phi < target + vmax * (1 + 1e-6)))
      TH_FAIL("case %d: packing fraction %.5f, target %.3f (+ %.2g)", k, phi, target, vmax);
    /* the same scene again: the same bits */
    uint64_t n2 = 0;
    float(*q)[4] = points_of(sc, &n2);
    CHECK(q && n2 == n && memcmp(p, q, (size_t)n * 32) == 0);
    free(q);
    free(p);
    wf_scene_destroy(sc);
  }
  wf_scene *a = scene_of("\"packing\": \"random\", \"half_extents\": [0.1, 0.1, 0.1], \"seed\": 1, "
                         "\"radius\": 0.01",
                         NULL);
  wf_scene *b = scene_of("\"packing\": \"random\", \"half_extents\": [0.1, 0.1, 0.1], \"seed\": 2, "
                         "\"radius\": 0.01",
                         NULL);
  REQUIRE(a && b);
  uint64_t na, nb;
  float(*pa)[4] = points_of(a, &na), (*pb)[4] = points_of(b, &nb);
  CHECK(pa && pb && na == nb && memcmp(pa, pb, (size_t)na * 16) != 0);
  free(pa), free(pb);
  wf_scene_destroy(a), wf_scene_destroy(b);
}

/* A target random sequential addition cannot reach is refused: above 0.34 by the scene (naming
 * the key), and a region too tight for its particles at run time, naming the emitter and the
 * fraction it reached. */
TEST(random_packing_errors) {
  expect_scene_error("\"packing\": \"random\", \"packing_fraction\": 0.5", NULL,
                     "particles[0].packing_fraction", "0.34");
  expect_scene_error("\"packing\": \"random\", \"spacing\": 0.2", NULL, "particles[0].spacing",
                     "does not apply to a random packing");
  expect_scene_error("\"packing\": \"random\", \"half_extents\": [0.01, 1, 1], \"radius\": 0.02",
                     NULL, "particles[0]", "too small");
  /* 0.34 of a box 2.6 diameters wide: walls leave too little room (it jams near 0.3) */
  wf_scene *sc = scene_of("\"packing\": \"random\", \"packing_fraction\": 0.34, "
                          "\"half_extents\": [0.026, 0.026, 0.026], \"radius\": 0.01",
                          NULL);
  REQUIRE(sc);
  uint64_t n = wf_scene_emitter_count(&sc->emitters[0]);
  float(*p)[4] = malloc((size_t)n * 32);
  CHECK_ERROR(wf_scene_emitter_points(&sc->emitters[0], 0, p, p + n, NULL, n), WF_ERR_INVALID,
              "emitter 'grains'", "jammed at packing fraction", "lower packing_fraction");
  free(p);
  wf_world *w = NULL;
  CHECK_ERROR(wf_world_create(sc, NULL, &w), WF_ERR_INVALID, "particles[0] 'grains'", "jammed");
  CHECK(w == NULL);
  wf_scene_destroy(sc);
}

/* ---- radius distributions ------------------------------------------------------------------ */

static double phi_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* Raw moment E[r^k] of ln r ~ N(mu, s²) truncated to [a, b]. */
static double trunc_lognormal_moment(int k, double mu, double s, double a, double b) {
  double al = (log(a) - mu) / s, be = (log(b) - mu) / s;
  return exp(k * mu + 0.5 * k * k * s * s) * (phi_cdf(be - k * s) - phi_cdf(al - k * s)) /
         (phi_cdf(be) - phi_cdf(al));
}

/* Sample mean and variance of the radii against the distribution's mean and variance (from raw
 * moments m1..m4), within 4 standard errors; the masses follow density 4/3 π r³. */
static void check_moments(float (*p)[4], uint64_t n, const double m[5], double density) {
  double mean = 0, var = 0;
  for (uint64_t i = 0; i < n; i++)
    mean += p[i][3];
  mean /= (double)n;
  for (uint64_t i = 0; i < n; i++)
    var += (p[i][3] - mean) * (p[i][3] - mean);
  var /= (double)(n - 1);
  double mu = m[1], sig2 = m[2] - mu * mu;
  double mu4 = m[4] - 4 * mu * m[3] + 6 * mu * mu * m[2] - 3 * mu * mu * mu * mu;
  CHECK_NEAR(mean, mu, 4 * sqrt(sig2 / (double)n));
  CHECK_NEAR(var, sig2, 4 * sqrt((mu4 - sig2 * sig2) / (double)n));
  float(*v)[4] = p + n;
  for (uint64_t i = 0; i < n; i++) {
    double r = p[i][3], m_i = density * 4.0 / 3.0 * PI * r * r * r;
    if (fabs(v[i][3] * m_i - 1.0) > 1e-6) { /* float rounding of 1/m */
      TH_FAIL("particle %llu: inverse mass %g, expected 1/%g", (unsigned long long)i, v[i][3], m_i);
      break;
    }
  }
}

/* Uniform radii in [a, b]: mean (a+b)/2, variance (b-a)²/12, raw moments (b^(k+1) -
 * a^(k+1)) / ((k+1)(b-a)); log-normal with median 0.01, σ 0.25, truncated at ±3σ (the default),
 * against the truncated closed form. ~8000 particles each (lattice packing). */
TEST(radius_distributions) {
  wf_scene *sc = scene_of("\"half_extents\": [0.5, 0.5, 0.5], \"radius_distribution\": "
                          "\"uniform\", \"radius_min\": 0.01, \"radius_max\": 0.03, "
                          "\"density\": 2500, \"seed\": 3",
                          NULL);
  REQUIRE(sc);
  uint64_t n = 0;
  float(*p)[4] = points_of(sc, &n);
  REQUIRE(p);
  CHECK_EQ_INT(n, 16 * 16 * 16); /* spacing 2 radius_max = 0.06 */
  double a = 0.01, b = 0.03, m[5] = {1};
  for (int k = 1; k <= 4; k++)
    m[k] = (pow(b, k + 1) - pow(a, k + 1)) / ((k + 1) * (b - a));
  check_moments(p, n, m, 2500);
  for (uint64_t i = 0; i < n; i++)
    if (!(p[i][3] >= 0.01f && p[i][3] <= 0.03f)) {
      TH_FAIL("radius %g outside [0.01, 0.03]", p[i][3]);
      break;
    }
  free(p);
  wf_scene_destroy(sc);

  sc = scene_of("\"half_extents\": [0.4, 0.4, 0.4], \"radius_distribution\": \"lognormal\", "
                "\"radius\": 0.01, \"radius_sigma\": 0.25, \"seed\": 9",
                NULL);
  REQUIRE(sc);
  const wf_scene_emitter *e = &sc->emitters[0];
  CHECK_NEAR(e->radius_max, 0.01 * exp(0.75), 1e-15);
  p = points_of(sc, &n);
  REQUIRE(p);
  CHECK(n > 5000);
  for (int k = 1; k <= 4; k++)
    m[k] = trunc_lognormal_moment(k, log(0.01), 0.25, e->radius_min, e->radius_max);
  check_moments(p, n, m, 1000);
  free(p);
  wf_scene_destroy(sc);

  expect_scene_error("\"radius_distribution\": \"uniform\", \"radius_min\": 0.01", NULL,
                     "particles[0]", "radius_min and radius_max");
  expect_scene_error("\"radius_distribution\": \"uniform\", \"radius_min\": 0.03, "
                     "\"radius_max\": 0.01",
                     NULL, "particles[0].radius_max", "less than radius_min");
  expect_scene_error("\"radius_distribution\": \"lognormal\", \"mass\": 0.1", NULL,
                     "particles[0].mass", "density");
  expect_scene_error("\"radius_sigma\": 0.1", NULL, "particles[0].radius_sigma",
                     "does not apply to a fixed radius distribution");
  expect_scene_error("\"radius_distribution\": \"gaussian\"", NULL,
                     "particles[0].radius_distribution", "lognormal");
  expect_scene_error("\"radius_distribution\": \"uniform\", \"radius_min\": 0.01, "
                     "\"radius_max\": 0.03, \"spacing\": 0.05",
                     NULL, "particles[0].spacing", "radius_max");
}

/* Contacts between radii 5x apart: a big sphere (r 0.05) with 26 small ones (r 0.01) around it,
 * one in each direction of the grid's neighbourhood, each overlapping it by δ = 1 mm. The grid's
 * cell is twice the largest radius, so every pair is found wherever the cell boundaries fall.
 * Elastic (restitution 1: no dashpot), no gravity: after one substep of symplectic Euler each
 * small particle moves away radially at kn δ dt / m (kn = 1e4 N/m) and the big one, pushed
 * equally from all sides, stays at rest (to float rounding of the 26 forces: 1e-6 of one). */
TEST(contact_between_radii) {
  wf_particles_desc d = wf_particles_desc_default();
  d.substeps = 1;
  d.frame_dt = 1e-4f;
  d.gravity[1] = 0.0f;
  d.devices[0] = th_dev0;
  wf_particles *ps = NULL;
  CHECK_OK(wf_particles_create(&d, &ps));
  wf_particle_material mat = wf_particle_material_default();
  mat.restitution = 1.0f;
  mat.rolling_friction = 0.0f;
  CHECK_OK(wf_particles_set_material(ps, 0, &mat));
  float pos[27][4], vel[27][4];
  double small_m = 1000.0 * 4.0 / 3.0 * PI * 1e-6, big_m = 1000.0 * 4.0 / 3.0 * PI * 1.25e-4;
  pos[0][0] = 0.013f, pos[0][1] = 0.521f, pos[0][2] = -0.007f, pos[0][3] = 0.05f;
  memset(vel, 0, sizeof vel);
  vel[0][3] = (float)(1.0 / big_m);
  int n = 1;
  for (int dz = -1; dz <= 1; dz++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dx = -1; dx <= 1; dx++) {
        if (!dx && !dy && !dz) continue;
        double l = sqrt((double)(dx * dx + dy * dy + dz * dz)), dist = 0.06 - 0.001;
        pos[n][0] = (float)(pos[0][0] + dx / l * dist),
        pos[n][1] = (float)(pos[0][1] + dy / l * dist);
        pos[n][2] = (float)(pos[0][2] + dz / l * dist), pos[n][3] = 0.01f;
        vel[n][3] = (float)(1.0 / small_m);
        n++;
      }
  CHECK_OK(wf_particles_add(ps, 27, (const float(*)[4])pos, (const float(*)[4])vel, 0, NULL));
  CHECK_OK(wf_particles_step_substeps(ps, 1));
  float p1[27][4], v1[27][4];
  CHECK_OK(wf_particles_download(ps, p1, v1));
  for (int i = 1; i < 27; i++) {
    double e[3] = {pos[i][0] - pos[0][0], pos[i][1] - pos[0][1], pos[i][2] - pos[0][2]};
    double dist = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]), delta = 0.06 - dist;
    double want = 1e4 * delta * 1e-4 / small_m, along = 0;
    for (int k = 0; k < 3; k++)
      along += v1[i][k] * e[k] / dist;
    /* 1e-3: the overlap is a difference of float positions (~1e-7 m in 1e-3 m) */
    CHECK_NEAR(along, want, 1e-3 * want);
  }
  double big = sqrt(v1[0][0] * v1[0][0] + v1[0][1] * v1[0][1] + v1[0][2] * v1[0][2]);
  CHECK(big < 1e-3 * 1e4 * 1e-3 * 1e-4 / big_m * 26);
  wf_particles_destroy(ps);
}

/* ---- files --------------------------------------------------------------------------------- */

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) {
    TH_FAIL("cannot write %s", path);
    return;
  }
  fputs(text, f);
  fclose(f);
}

/* A previous run's PLY output (wf_ply_write_points: positions, radii, velocities, ids) read back
 * by a file emitter gives the same floats; so does a CSV written with 9 significant digits (a
 * float's round trip); a CSV of positions alone takes the emitter's radius and velocity. */
TEST(file_round_trip) {
  enum { N = 500 };
  float xyz[N][3], rad[N], v[N][3];
  uint32_t id[N];
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < 3; k++)
      xyz[i][k] = (float)sin(1.3 * i + k) * 0.7f, v[i][k] = (float)cos(0.7 * i - k);
    rad[i] = 0.004f + 0.001f * (float)(i % 7), id[i] = (uint32_t)i;
  }
  char ply[512], csv[512], csv2[512];
  snprintf(ply, sizeof ply, "%s/pile.ply", tmp_root);
  snprintf(csv, sizeof csv, "%s/pile.csv", tmp_root);
  snprintf(csv2, sizeof csv2, "%s/bare.csv", tmp_root);
  wf_ply_points pp = {N, &xyz[0][0], rad, &v[0][0], id, NULL};
  CHECK_OK(wf_ply_write_points(ply, &pp));
  FILE *f = fopen(csv, "w");
  REQUIRE(f);
  fprintf(f, "# a comment\nid, x,y,z,radius,vx,vy,vz\n");
  for (int i = 0; i < N; i++)
    fprintf(f, "%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", i, xyz[i][0], xyz[i][1], xyz[i][2],
            rad[i], v[i][0], v[i][1], v[i][2]);
  fclose(f);
  write_text(csv2, "x,y,z\n0,1,2\n\n3,4,5\r\n");
  const char *files[] = {"pile.ply", "pile.csv"};
  for (int c = 0; c < 2; c++) {
    char js[256];
    snprintf(js, sizeof js, "\"shape\": \"file\", \"file\": \"%s\", \"density\": 2000", files[c]);
    wf_scene *sc = scene_of(js, tmp_root);
    REQUIRE(sc);
    uint64_t n = 0;
    float(*p)[4] = points_of(sc, &n);
    REQUIRE(p);
    CHECK_EQ_INT(n, N);
    int bad = 0;
    for (int i = 0; i < N && !bad; i++) {
      for (int k = 0; k < 3; k++)
        bad |= p[i][k] != xyz[i][k] || p[N + i][k] != v[i][k];
      bad |= p[i][3] != rad[i];
      bad |= fabs(p[N + i][3] * (2000.0 * 4.0 / 3.0 * PI * pow(rad[i], 3)) - 1.0) > 1e-6;
      if (bad) TH_FAIL("%s: row %d differs", files[c], i);
    }
    free(p);
    wf_scene_destroy(sc);
  }
  wf_scene *sc = scene_of("\"shape\": \"file\", \"file\": \"bare.csv\", \"radius\": 0.2, "
                          "\"velocity\": [0, -1, 0], \"kinematic\": true",
                          tmp_root);
  REQUIRE(sc);
  uint64_t n = 0;
  float(*p)[4] = points_of(sc, &n);
  REQUIRE(p);
  CHECK_EQ_INT(n, 2);
  CHECK(p[1][0] == 3 && p[1][1] == 4 && p[1][2] == 5 && p[1][3] == 0.2f);
  CHECK(p[2][1] == -1 && p[2][3] == 0 && p[3][3] == 0);
  free(p);
  /* the world makes them too (the scene's round trip keeps the file) */
  wf_world *w = NULL;
  CHECK_OK(wf_world_create(sc, NULL, &w));
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  CHECK_EQ_INT(o.point_count, 2);
  wf_world_destroy(w);
  char *json = wf_scene_to_json(sc);
  CHECK(json && strstr(json, "\"file\": \"bare.csv\"") && !strstr(json, "packing"));
  free(json);
  wf_scene_destroy(sc);
}

/* Bad files fail validation naming the key and file:line (or the vertex of binary PLY). */
TEST(file_errors) {
  struct {
    const char *name, *text, *want;
  } bad[] = {
      {"a.csv", "x,y,z,radius\n0,0,0,0.1\n1,1,1,-2\n", "a.csv:3: column 'radius'"},
      {"b.csv", "x,y,z\n0,0,0\n1,1\n", "b.csv:3: 2 values; the header names 3"},
      {"c.csv", "x,y,raduis,z\n", "c.csv:1: unknown column 'raduis'"},
      {"d.csv", "x,y\n1,2\n", "d.csv:1: no column 'z'"},
      {"e.csv", "x,y,z\n1,2,abc\n", "e.csv:2: column 'z': expected a number, got 'abc'"},
      {"f.csv", "x,y,z,vx\n", "velocity needs all three"},
      {"g.csv", "x,y,z\n", "no particles"},
      {"h.ply",
       "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
       "property float z\nend_header\n0 0 0\n1 nan 1\n",
       "h.ply:9: column 'y'"},
      {"i.ply",
       "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
       "property float y\nproperty float z\nend_header\n0123456789AB",
       "vertex 1 of 3: the file ends early"},
      {"j.ply", "ply\nformat binary_big_endian 1.0\n", "j.ply:2: format 'binary_big_endian'"},
      {"k.txt", "x,y,z\n", "not a .ply or .csv file"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[512], js[256];
    snprintf(path, sizeof path, "%s/%s", tmp_root, bad[i].name);
    write_text(path, bad[i].text);
    snprintf(js, sizeof js, "\"shape\": \"file\", \"file\": \"%s\"", bad[i].name);
    expect_scene_error(js, tmp_root, "particles[0].file", bad[i].want);
  }
  expect_scene_error("\"shape\": \"file\", \"file\": \"missing.csv\"", tmp_root,
                     "particles[0].file", "missing.csv");
  expect_scene_error("\"shape\": \"file\"", tmp_root, "particles[0]", "needs \"file\"");
  expect_scene_error("\"file\": \"a.csv\"", tmp_root, "particles[0].file", "does not apply");
  expect_scene_error("\"shape\": \"file\", \"file\": \"bare.csv\", \"packing\": \"random\"",
                     tmp_root, "particles[0].packing", "does not apply to a file emitter");
  expect_scene_error("\"shape\": \"file\", \"file\": \"bare.csv\", \"center\": [0, 0, 0]", tmp_root,
                     "particles[0].center", "does not apply to a file emitter");
}

/* Every new kind of emitter prints as canonical JSON that reads back to the same emitter. */
TEST(round_trip) {
  const char *kinds[] = {
      "\"shape\": \"cylinder\", \"cylinder_radius\": 0.3, \"height\": 0.1, \"jitter\": 0.001",
      "\"shape\": \"sphere\", \"packing\": \"random\", \"packing_fraction\": 0.2, \"seed\": 7",
      "\"radius_distribution\": \"uniform\", \"radius_min\": 0.01, \"radius_max\": 0.02",
      "\"radius_distribution\": \"lognormal\", \"radius_sigma\": 0.3, \"radius_max\": 0.08",
      "\"shape\": \"disc\", \"velocity\": [0, -2, 0], \"rate\": 30, \"start\": 0.5, \"end\": 2, "
      "\"radius_distribution\": \"uniform\", \"radius_min\": 0.01, \"radius_max\": 0.02",
  };
  for (int k = 0; k < 5; k++) {
    wf_scene *a = scene_of(kinds[k], NULL);
    REQUIRE(a);
    char *json = wf_scene_to_json(a);
    wf_scene *b = NULL;
    CHECK_OK(wf_scene_parse(json, strlen(json), "canonical.json", NULL, NULL, &b));
    const wf_scene_emitter *x = &a->emitters[0], *y = &b->emitters[0];
    bool same = x->shape == y->shape && x->packing == y->packing &&
                x->radius_distribution == y->radius_distribution && x->radius == y->radius &&
                x->radius_min == y->radius_min && x->radius_max == y->radius_max &&
                x->radius_sigma == y->radius_sigma && x->packing_fraction == y->packing_fraction &&
                x->spacing == y->spacing && x->jitter == y->jitter &&
                x->cylinder_radius == y->cylinder_radius && x->height == y->height &&
                x->seed == y->seed && x->disc_radius == y->disc_radius && x->rate == y->rate &&
                x->start == y->start && x->end == y->end;
    if (!same) TH_FAIL("%s: round trip differs:\n%s", kinds[k], json);
    CHECK(wf_scene_emitter_count(x) == wf_scene_emitter_count(y));
    free(json);
    wf_scene_destroy(a), wf_scene_destroy(b);
  }
}

/* ---- continuous emitters ------------------------------------------------------------------- */

static const char pour_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"devices\": \"cpu\", \"deterministic\": "
    "true},"
    " \"particles\": [{\"name\": \"tap\", \"shape\": \"disc\", \"center\": [0, 0.5, 0],"
    "  \"disc_radius\": 0.05, \"velocity\": [0, -1, 0], \"rate\": 600, \"start\": 0.05,"
    "  \"end\": 0.25, \"radius\": 0.004, \"seed\": 11}]}";

/* Particles born so far: those with a positive inverse mass. */
static int born(wf_world *w, float (*p)[4], float (*v)[4]) {
  if (wf_world_object_download(w, 0, p, v) != WF_OK) return -1;
  int n = 0;
  for (int i = 0; i < 120; i++)
    n += v[i][3] > 0.0f;
  return n;
}

/* A pour of 600 particles/s over [0.05, 0.25) s: 120 particles, particle k born at
 * 0.05 + k / 600 s, at the first substep that starts at or after then. After frame F (the last
 * substep started at F/60 - dt, dt = 1/960 s) floor((F/60 - dt - 0.05) 600) + 1 are born (0 to
 * 120); ±1 where the birth and the clock, rounded to float, fall within a rounding of each other.
 * Unborn particles wait on the feed line above the inlet (v points down), born ones are at or
 * below it; the first one falls freely from the inlet at 1 m/s: y = 0.5 - τ - g τ²/2 at age τ,
 * within 3 mm (semi-implicit Euler's g dt τ / 2 = 1.5 mm, and a birth up to one substep late:
 * 1 mm). The count and the frame graph stay as they are. DEM and XPBD contacts alike. */
static void pour_count(const char *model) {
  const char *sets[] = {model};
  wf_world *w = NULL;
  if (make_world(pour_text, sets, 1, "cpu:0", &w) != WF_OK) return;
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  CHECK_EQ_INT(o.point_count, 120);
  float p[120][4], v[120][4];
  double dt = 1.0 / 960.0;
  for (int f = 1; f <= 20; f++) {
    CHECK_OK(wf_world_step(w, 1));
    int n = born(w, p, v);
    double t_last = f / 60.0 - dt;
    double want = floor((t_last - 0.05) * 600.0 + 1e-9) + 1;
    want = want < 0 ? 0 : want > 120 ? 120 : want;
    if (fabs(n - want) > 1) TH_FAIL("frame %d: %d born, expected %g", f, n, want);
    for (int i = 0; i < 120; i++) {
      bool b = v[i][3] > 0.0f;
      if (b ? p[i][1] > 0.5f + 1e-4f : p[i][1] < 0.5f - 1e-4f) {
        TH_FAIL("frame %d: particle %d (%s) at y = %g", f, i, b ? "born" : "unborn", p[i][1]);
        break;
      }
    }
    if (f == 12) { /* the first one, born at 0.05 s, at 0.2 s */
      double tau = 0.2 - 0.05, y = 0.5 - tau - 0.5 * 9.81 * tau * tau;
      CHECK_NEAR(p[0][1], y, 3e-3);
    }
  }
  CHECK_EQ_INT(born(w, p, v), 120);
  wf_world_destroy(w);
}

TEST(pour_count_vs_time) { /* both kinds of contact: the births are the same code */
  pour_count("simulation.contact_model=dem");
  pour_count("simulation.contact_model=xpbd");
}

/* A checkpoint in the middle of the pour resumes it bitwise (the births are in the saved state),
 * on one partition and on two; so does a last-good checkpoint, which holds no granular state:
 * the world gives the births back from the scene (the falling particles never touch, so the
 * rotation and contact history it also lacks are zero anyway). */
TEST(pour_checkpoint_resume) {
  char path[512];
  snprintf(path, sizeof path, "%s/pour.wfck", tmp_root);
  wf_world *a = NULL;
  if (make_world(pour_text, NULL, 0, "cpu:0", &a) != WF_OK) return;
  if (step(a, 7) != WF_OK) return;
  CHECK_OK(wf_world_save(a, path));
  char good[512];
  snprintf(good, sizeof good, "%s/pour_last_good.wfck", tmp_root);
  int64_t good_frame = -1;
  CHECK_OK(wf_world_save_last_good(a, good, &good_frame));
  CHECK_EQ_INT(good_frame, 7);
  if (step(a, 9) != WF_OK) return;
  size_t bytes = 0;
  float *ref = world_state(a, &bytes);
  wf_world_destroy(a);
  REQUIRE(ref);
  const char *devs[] = {"cpu:0", "cpu:0,cpu:1", "cpu:0"};
  for (int k = 0; k < 3; k++) {
    wf_world *b = NULL;
    if (make_world(pour_text, NULL, 0, devs[k], &b) != WF_OK) break;
    CHECK_OK(wf_world_load_checkpoint(b, k < 2 ? path : good));
    size_t b2 = 0;
    float *s = step(b, 9) == WF_OK ? world_state(b, &b2) : NULL;
    CHECK(s && b2 == bytes);
    if (s) same_state(ref, s, bytes, devs[k]);
    free(s);
    wf_world_destroy(b);
  }
  free(ref);
}

/* Bad pours are refused naming the key. */
TEST(pour_errors) {
  expect_scene_error("\"shape\": \"disc\"", NULL, "particles[0].velocity", "non-zero velocity");
  expect_scene_error("\"shape\": \"disc\", \"velocity\": [0, -1, 0], \"kinematic\": true", NULL,
                     "particles[0].kinematic", "dynamic");
  expect_scene_error("\"shape\": \"disc\", \"velocity\": [0, -1, 0], \"start\": 2", NULL,
                     "particles[0].end", "after start");
  expect_scene_error("\"shape\": \"disc\", \"velocity\": [0, -1, 0], \"rate\": 1e5", NULL,
                     "particles[0].rate", "at most 0.3");
  expect_scene_error("\"shape\": \"disc\", \"velocity\": [0, -1, 0], \"packing\": \"random\"", NULL,
                     "particles[0].packing", "does not apply to a disc");
  expect_scene_error("\"shape\": \"disc\", \"velocity\": [0, -1, 0], \"disc_radius\": 0.04", NULL,
                     "particles[0].disc_radius", "too small");
  expect_scene_error("\"rate\": 5", NULL, "particles[0].rate", "does not apply to a box");
}

/* ---- inlet shapes ----------------------------------------------------------------------------
 */

/* Pours of `rate` = 2000 particles/s over [0.1, 0.6) s: 1000 particles, particle k born at
 * 0.1 + k / 2000 s (float), each on its feed line so that pos + v birth is its inlet point (in
 * the inlet's plane through the centre, to 2e-5 m: pos is a float near 1.5 m, 1.2e-7 m, plus
 * v birth in float), with the whole sphere inside the inlet (to the same 2e-5 m), and no two
 * overlapping on the line (to 1e-5 m, float positions). The points are uniform over the inlet:
 * a rectangle's mean offset along each side is 0 within 4 standard errors (side half-width a:
 * σ = a / sqrt(3)); an annulus's points fall within the median radius sqrt((a² + b²) / 2) (half
 * the area between a = inner + r and b = outer - r) with probability 1/2, within 4 standard
 * errors (sqrt(1/4 / N)). Velocity (0, -2, 0): u = x, w = z; velocity (0, 0, -1): u = x,
 * w = -y (docs/scenes.md). */
typedef struct inlet_case {
  const char *json;
  double v[3], u[3], w[3];
  int shape;   /* WF_SCENE_SHAPE_* */
  double a, b; /* rectangle: half sides; annulus: inner and outer radius */
} inlet_case;

TEST(inlet_shapes) {
  const inlet_case cases[] = {
      {"\"shape\": \"rectangle\", \"inlet_size\": [0.3, 0.12], \"velocity\": [0, -2, 0]",
       {0, -2, 0},
       {1, 0, 0},
       {0, 0, 1},
       WF_SCENE_SHAPE_RECTANGLE,
       0.15,
       0.06},
      {"\"shape\": \"rectangle\", \"inlet_size\": [0.4, 0.1], \"velocity\": [0, 0, -1]",
       {0, 0, -1},
       {1, 0, 0},
       {0, -1, 0},
       WF_SCENE_SHAPE_RECTANGLE,
       0.2,
       0.05},
      {"\"shape\": \"annulus\", \"disc_radius\": 0.12, \"inner_radius\": 0.07, "
       "\"velocity\": [0, -2, 0]",
       {0, -2, 0},
       {1, 0, 0},
       {0, 0, 1},
       WF_SCENE_SHAPE_ANNULUS,
       0.07,
       0.12},
  };
  const double c[3] = {0.25, 1.5, -0.5}, r = 0.004;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const inlet_case *ic = &cases[ci];
    char js[512];
    snprintf(js, sizeof js,
             "\"center\": [0.25, 1.5, -0.5], \"radius\": 0.004, \"rate\": 2000, \"start\": 0.1, "
             "\"end\": 0.6, \"seed\": 5, %s",
             ic->json);
    wf_scene *sc = scene_of(js, NULL);
    REQUIRE(sc);
    const wf_scene_emitter *e = &sc->emitters[0];
    CHECK_EQ_INT((int)e->shape, ic->shape);
    uint64_t n = wf_scene_emitter_count(e);
    CHECK_EQ_INT(n, 1000);
    float(*p)[4] = malloc((size_t)n * 32);
    float *birth = malloc((size_t)n * sizeof *birth);
    REQUIRE(p && birth);
    CHECK_OK(wf_scene_emitter_points(e, 0, p, p + n, birth, n));
    double off = 0.0, offq = 0.0, inside_median = 0.0, worst_plane = 0.0, worst_edge = -1.0;
    int bad_birth = 0;
    for (uint64_t k = 0; k < n; k++) {
      if ((float)(0.1 + (double)k / 2000.0) != birth[k]) bad_birth++;
      double y[3], pu = 0.0, pw = 0.0, pv = 0.0;
      for (int j = 0; j < 3; j++) {
        y[j] = (double)p[k][j] + ic->v[j] * birth[k] - c[j];
        pu += y[j] * ic->u[j], pw += y[j] * ic->w[j], pv += y[j] * ic->v[j];
      }
      worst_plane = fmax(worst_plane, fabs(pv));
      if (ic->shape == WF_SCENE_SHAPE_RECTANGLE) {
        worst_edge = fmax(worst_edge, fmax(fabs(pu) - (ic->a - r), fabs(pw) - (ic->b - r)));
        off += pu, offq += pw;
      } else {
        double d = sqrt(pu * pu + pw * pw), lo = ic->a + r, hi = ic->b - r;
        worst_edge = fmax(worst_edge, fmax(lo - d, d - hi));
        inside_median += d * d < 0.5 * (lo * lo + hi * hi);
      }
    }
    CHECK_EQ_INT(bad_birth, 0);
    CHECK(worst_plane < 2e-5);
    CHECK(worst_edge < 2e-5);
    CHECK(worst_edge > -1e-3); /* and they reach the edge: the whole inlet is used */
    if (ic->shape == WF_SCENE_SHAPE_RECTANGLE) {
      double se_u = (ic->a - r) / sqrt(3.0 * n), se_w = (ic->b - r) / sqrt(3.0 * n);
      CHECK(fabs(off / n) < 4.0 * se_u);
      CHECK(fabs(offq / n) < 4.0 * se_w);
    } else {
      CHECK(fabs(inside_median / n - 0.5) < 4.0 * sqrt(0.25 / n));
    }
    int overlaps = 0;
    for (uint64_t i = 0; i < n; i++)
      for (uint64_t j = i + 1; j < n; j++) {
        double d2 = 0.0;
        for (int q = 0; q < 3; q++)
          d2 += ((double)p[i][q] - p[j][q]) * ((double)p[i][q] - p[j][q]);
        overlaps += d2 < (2.0 * r - 1e-5) * (2.0 * r - 1e-5);
      }
    CHECK_EQ_INT(overlaps, 0);
    printf("  %s: %llu particles, births k/2000 s, inlet plane within %.1e m, edge margin %.1e m\n",
           ic->json, (unsigned long long)n, worst_plane, worst_edge);
    free(p), free(birth);
    wf_scene_destroy(sc);
  }
}

/* A rectangle's pour in a world: every particle is born (count by inverse mass) by the end of
 * the window, at the rate, and the scene round-trips through its canonical JSON. */
TEST(inlet_rectangle_world) {
  const char *text =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"devices\": \"cpu\", \"deterministic\": "
      "true}, \"particles\": [{\"name\": \"slot\", \"shape\": \"rectangle\", \"center\": [0, 0.5, "
      "0], \"inlet_size\": [0.2, 0.05], \"velocity\": [0, -1, 0], \"rate\": 600, \"start\": "
      "0.05, \"end\": 0.25, \"radius\": 0.004, \"seed\": 3}]}";
  wf_world *w = NULL;
  if (make_world(text, NULL, 0, "cpu:0", &w) != WF_OK) return;
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  CHECK_EQ_INT(o.point_count, 120);
  float p[120][4], v[120][4];
  CHECK_OK(wf_world_step(w, 9)); /* t = 0.15 s: floor((0.15 - 1/960 - 0.05) 600) + 1 = 60 */
  int n = born(w, p, v);
  CHECK(abs(n - 60) <= 1);
  CHECK_OK(wf_world_step(w, 7));
  CHECK_EQ_INT(born(w, p, v), 120);
  wf_world_destroy(w);
  wf_scene *sc = NULL;
  CHECK_OK(wf_scene_parse(text, strlen(text), "slot.json", NULL, NULL, &sc));
  REQUIRE(sc);
  char *json = wf_scene_to_json(sc);
  CHECK(json && strstr(json, "\"inlet_size\"") && strstr(json, "\"rectangle\"") &&
        !strstr(json, "disc_radius"));
  wf_scene *b = NULL;
  CHECK_OK(wf_scene_parse(json, strlen(json), "canonical.json", NULL, NULL, &b));
  if (b) {
    CHECK(b->emitters[0].inlet_size[0] == 0.2 && b->emitters[0].inlet_size[1] == 0.05);
    wf_scene_destroy(b);
  }
  free(json);
  wf_scene_destroy(sc);
}

TEST(inlet_errors) {
  expect_scene_error("\"shape\": \"annulus\", \"velocity\": [0, -1, 0], \"inner_radius\": 0.095",
                     NULL, "particles[0].inner_radius", "too narrow");
  expect_scene_error("\"shape\": \"rectangle\", \"velocity\": [0, -1, 0], \"inlet_size\": [0.5, "
                     "0.09]",
                     NULL, "particles[0].inlet_size", "too small");
  expect_scene_error("\"shape\": \"rectangle\", \"velocity\": [0, -1, 0], \"disc_radius\": 0.2",
                     NULL, "particles[0].disc_radius", "does not apply to a rectangle");
  expect_scene_error("\"shape\": \"disc\", \"velocity\": [0, -1, 0], \"inlet_size\": [1, 1]", NULL,
                     "particles[0].inlet_size", "does not apply to a disc");
  expect_scene_error(
      "\"shape\": \"annulus\", \"velocity\": [0, -1, 0], \"radius\": 0.01, \"rate\": 1e5", NULL,
      "particles[0].rate", "at most 0.3");
  expect_scene_error("\"shape\": \"rectangle\"", NULL, "particles[0].velocity",
                     "non-zero velocity");
}

/* ---- far from the world's origin ------------------------------------------------------------
 */

/* The particles' local positions and origin in a world's checkpoint (frame 0). */
static float *local_positions(wf_world *w, const char *tag, double origin[3], size_t *bytes) {
  char path[512];
  snprintf(path, sizeof path, "%s/far_%s.wfck", tmp_root, tag);
  float *out = NULL;
  wf_ckpt_reader *r = NULL;
  const void *d = NULL;
  size_t nb = 0;
  if (wf_world_save(w, path) != WF_OK || wf_ckpt_open_file(path, &r) != WF_OK) {
    TH_FAIL("%s: %s", tag, wf_last_error());
    return NULL;
  }
  if (wf_ckpt_section(r, "particles/origin", &d, &nb) == WF_OK && nb == 24) memcpy(origin, d, 24);
  if (wf_ckpt_section(r, "particles/pos", &d, &nb) == WF_OK && (out = malloc(nb + 1)))
    memcpy(out, d, nb), *bytes = nb;
  wf_ckpt_close(r);
  remove(path);
  if (!out) TH_FAIL("%s: no particles/pos", tag);
  return out;
}

/* Emitters made on the host place their particles relative to the particles' origin in double
 * (docs/precision.md): a scene moved by (1000, 50, -1000) m gives bitwise the same local
 * positions, and an origin moved by exactly that, for a random packing, a jittered cylinder
 * lattice of log-normal radii, a rectangle's pour and a CSV file. (The centres and the file's
 * coordinates are exact in binary, so the moved scene is exactly the scene plus the shift; a
 * decimal centre is itself rounded in double at 1000 m, by 1e-13 m, which can move a float by one
 * ulp in a few cases in a million.) Control: world positions in float there are rounded to
 * 6.1e-5 m, so the old way (float world positions minus the origin) is off by up to 3e-5 m, which
 * the test measures to show that it could fail. */
TEST(far_from_origin_same_packing) {
  char csv[2][512];
  for (int s = 0; s < 2; s++) {
    snprintf(csv[s], sizeof csv[s], "%s/far%d.csv", tmp_root, s);
    FILE *f = fopen(csv[s], "w");
    REQUIRE(f);
    fprintf(f, "x,y,z,radius\n");
    for (int i = 0; i < 64; i++) { /* multiples of 2^-20 m: exact in double at 1000 m */
      double x = 0.3 * (i % 4) + (double)(i * 7919 % 1000) / 1048576.0;
      double y = 1.0 + 0.3 * (i / 4 % 4) + (double)(i * 104729 % 1000) / 1048576.0;
      double z = 0.3 * (i / 16) + (double)(i * 1299709 % 1000) / 1048576.0;
      if (s) x += 1000.0, y += 50.0, z -= 1000.0;
      fprintf(f, "%.17g,%.17g,%.17g,0.1\n", x, y, z);
    }
    fclose(f);
  }
  static const char *const emitters[] = {
      "\"shape\": \"box\", \"center\": [%s], \"half_extents\": [0.3, 0.2, 0.25], \"packing\": "
      "\"random\", \"packing_fraction\": 0.25, \"radius\": 0.02, \"seed\": 9",
      "\"shape\": \"cylinder\", \"center\": [%s], \"cylinder_radius\": 0.2, \"height\": 0.2, "
      "\"radius\": 0.02, \"radius_distribution\": \"lognormal\", \"radius_sigma\": 0.1, "
      "\"spacing\": 0.06, \"jitter\": 0.005, \"seed\": 4",
      "\"shape\": \"rectangle\", \"center\": [%s], \"inlet_size\": [0.2, 0.1], \"velocity\": [0, "
      "-1, 0], \"rate\": 300, \"end\": 0.5, \"radius\": 0.005, \"seed\": 2",
      "\"shape\": \"file\", \"file\": \"%s\"",
  };
  const char *centres[2] = {"0.25, 1.5, -0.375", "1000.25, 51.5, -1000.375"};
  const double shift[3] = {1000.0, 50.0, -1000.0};
  for (size_t k = 0; k < sizeof emitters / sizeof emitters[0]; k++) {
    float *pos[2] = {NULL, NULL};
    double origin[2][3] = {{0}};
    size_t bytes[2] = {0, 0};
    double control = 0.0;
    for (int s = 0; s < 2; s++) {
      char em[512], text[1024];
      snprintf(em, sizeof em, emitters[k], k == 3 ? (s ? "far1.csv" : "far0.csv") : centres[s]);
      snprintf(text, sizeof text,
               "{\"simulation\": {\"devices\": \"cpu\", \"deterministic\": true}, "
               "\"particles\": [{\"name\": \"grains\", %s}]}",
               em);
      wf_scene *sc = NULL;
      if (wf_scene_parse(text, strlen(text), "far.json", tmp_root, NULL, &sc) != WF_OK) {
        TH_FAIL("%zu: %s", k, wf_scene_errors());
        break;
      }
      wf_world_desc d = wf_world_desc_default();
      d.device = "cpu:0";
      wf_world *w = NULL;
      CHECK_OK(wf_world_create(sc, &d, &w));
      wf_scene_destroy(sc);
      if (!w) break;
      pos[s] = local_positions(w, s ? "far" : "near", origin[s], &bytes[s]);
      if (s == 1 && pos[1]) { /* the control: float world positions minus the origin */
        size_t n = bytes[1] / 16;
        float(*wp)[4] = malloc(n * 32 + 32);
        if (wp && wf_world_object_download(w, 0, wp, wp + n) == WF_OK)
          for (size_t i = 0; i < n; i++)
            for (int q = 0; q < 3; q++)
              control = fmax(control, fabs(((double)wp[i][q] - origin[1][q]) - pos[1][4 * i + q]));
        free(wp);
      }
      wf_world_destroy(w);
    }
    if (pos[0] && pos[1]) {
      CHECK(bytes[0] == bytes[1] && bytes[0] > 0);
      for (int q = 0; q < 3; q++)
        CHECK(origin[1][q] - origin[0][q] == shift[q]);
      char what[64];
      snprintf(what, sizeof what, "emitter %zu", k);
      if (bytes[0] == bytes[1]) same_state(pos[0], pos[1], bytes[0], what);
      printf("  emitter %zu: %zu particles, origins (%g, %g, %g) and (%g, %g, %g): local bits "
             "equal; float world positions would be off by %.2e m\n",
             k, bytes[0] / 16, origin[0][0], origin[0][1], origin[0][2], origin[1][0], origin[1][1],
             origin[1][2], control);
      CHECK(control > 1e-6); /* the control can fail */
    }
    free(pos[0]), free(pos[1]);
  }
  remove(csv[0]), remove(csv[1]);
}

/* The solver's births (wf_particles_add_timed) inside the captured frame: a block of grains and
 * 36 particles born in 4 layers falling onto it give bitwise the same state with the frame
 * captured and enqueued one substep at a time (no_graph), and on 1 and 3 partitions; a particle
 * waiting for its birth reports a negative inverse mass and its birth time as omega.w. */
static float *timed_run(bool no_graph, int parts, int frames) {
  wf_particles_desc d = wf_particles_desc_default();
  d.substeps = 16;
  d.no_graph = no_graph;
  wf_device *devs[3];
  for (int k = 0; k < parts; k++) {
    char name[16];
    snprintf(name, sizeof name, "cpu:%d", k);
    if (wf_device_get(name, &devs[k]) != WF_OK) return NULL;
    d.devices[k] = devs[k];
  }
  d.device_count = parts;
  wf_particles *ps = NULL;
  if (wf_particles_create(&d, &ps) != WF_OK) return NULL;
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 2000.0f, m.restitution = 0.3f;
  wf_particles_emitter e = wf_particles_emitter_default();
  e.half_extents[0] = e.half_extents[2] = 0.2f, e.half_extents[1] = 0.1f;
  e.center[1] = 0.12f, e.radius = 0.03f, e.spacing = 0.065f, e.jitter = 0.002f;
  wf_collider_desc g = wf_collider_desc_default();
  float pos[36][4], vel[36][4], birth[36];
  for (int i = 0; i < 36; i++) {
    birth[i] = 0.05f + 0.05f * (float)(i / 9);
    pos[i][0] = 0.1f * (float)(i % 3 - 1), pos[i][2] = 0.1f * (float)(i / 3 % 3 - 1);
    pos[i][1] = 0.5f + 2.0f * birth[i], pos[i][3] = 0.03f;
    vel[i][0] = vel[i][2] = 0.0f, vel[i][1] = -2.0f, vel[i][3] = 8.0f;
  }
  float *s = NULL;
  if (wf_particles_set_material(ps, 0, &m) == WF_OK &&
      wf_particles_emit(ps, &e, NULL, NULL) == WF_OK &&
      wf_particles_add_collider(ps, &g, NULL) == WF_OK &&
      wf_particles_add_timed(ps, 36, (const float(*)[4])pos, (const float(*)[4])vel, birth, 0,
                             NULL) == WF_OK &&
      wf_particles_step_frames(ps, frames) == WF_OK) {
    uint32_t n = wf_particles_count(ps);
    s = malloc((size_t)n * 48 + 4);
    memcpy(s, &n, 4);
    if (wf_particles_download(ps, (float(*)[4])(s + 1), (float(*)[4])(s + 1 + 4 * n)) != WF_OK ||
        wf_particles_download_omega(ps, (float(*)[4])(s + 1 + 8 * n)) != WF_OK)
      free(s), s = NULL;
  }
  if (!s) TH_FAIL("timed run (%d partitions): %s", parts, wf_last_error());
  wf_particles_destroy(ps);
  return s;
}

TEST(births_in_the_captured_frame) {
  float *a = timed_run(false, 1, 4); /* 0.067 s: the first layer born, three waiting */
  REQUIRE(a);
  uint32_t n;
  memcpy(&n, a, 4);
  float(*v)[4] = (float(*)[4])(a + 1 + 4 * n), (*w)[4] = (float(*)[4])(a + 1 + 8 * n);
  int waiting = 0;
  for (uint32_t i = n - 36; i < n; i++)
    if (v[i][3] < 0.0f) {
      waiting++;
      CHECK(v[i][3] == -8.0f && w[i][3] > 0.067f);
    }
  CHECK_EQ_INT(waiting, 27);
  free(a);
  a = timed_run(false, 1, 20);
  float *b = timed_run(true, 1, 20), *c = timed_run(false, 3, 20);
  REQUIRE(a && b && c);
  memcpy(&n, a, 4);
  CHECK(memcmp(a, b, (size_t)n * 48 + 4) == 0);
  CHECK(memcmp(a, c, (size_t)n * 48 + 4) == 0);
  v = (float(*)[4])(a + 1 + 4 * n);
  for (uint32_t i = n - 36; i < n; i++)
    CHECK(v[i][3] == 8.0f); /* all born by 0.33 s */
  free(a), free(b), free(c);
}

/* ---- worlds -------------------------------------------------------------------------------- */

/* A random, polydisperse cylinder of grains falling into a lattice of bigger ones while a tap
 * pours more (births in every frame): the world's state after 8 frames is bitwise the same on
 * 1, 2, 3 and 4 CPU partitions, and the object holds the emitter's count. */
static const char world_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"devices\": \"cpu\", \"deterministic\": "
    "true},"
    " \"materials\": [{\"name\": \"soft\", \"stiffness\": 500, \"restitution\": 0.3}],"
    " \"particles\": ["
    "  {\"name\": \"pour\", \"shape\": \"cylinder\", \"center\": [0, 0.3, 0], \"cylinder_radius\":"
    "   0.1, \"height\": 0.2, \"packing\": \"random\", \"packing_fraction\": 0.25,"
    "   \"radius_distribution\": \"lognormal\", \"radius\": 0.008, \"radius_sigma\": 0.2, "
    "   \"density\": 2500, \"seed\": 4},"
    "  {\"name\": \"bed\", \"shape\": \"cylinder\", \"center\": [0, 0.05, 0], \"cylinder_radius\":"
    "   0.15, \"height\": 0.06, \"radius_distribution\": \"uniform\", \"radius_min\": 0.01,"
    "   \"radius_max\": 0.015, \"density\": 2500},"
    "  {\"name\": \"tap\", \"shape\": \"disc\", \"center\": [0.25, 0.2, 0], \"disc_radius\": 0.04,"
    "   \"velocity\": [-1, -0.5, 0], \"rate\": 400, \"start\": 0.02, \"end\": 0.3, \"radius\": "
    "0.005,"
    "   \"radius_distribution\": \"lognormal\", \"radius_sigma\": 0.15, \"density\": 2500}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}]}";

TEST(world_split_bitwise) {
  wf_world *w1 = NULL;
  if (make_world(world_text, NULL, 0, "cpu:0", &w1) != WF_OK) return;
  wf_scene *sc = NULL;
  CHECK_OK(wf_scene_parse(world_text, strlen(world_text), "emit.json", NULL, NULL, &sc));
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w1, 0, &o));
  CHECK_EQ_INT(o.point_count, wf_scene_emitter_count(&sc->emitters[0]));
  wf_scene_destroy(sc);
  if (step(w1, 8) != WF_OK) return;
  size_t bytes = 0;
  float *ref = world_state(w1, &bytes);
  wf_world_destroy(w1);
  REQUIRE(ref);
  static const char *const devs[] = {"cpu:0,cpu:1", "cpu:0,cpu:1,cpu:2", "cpu:0,cpu:1,cpu:2,cpu:3"};
  for (int k = 0; k < 3; k++) {
    wf_world *w = NULL;
    if (make_world(world_text, NULL, 0, devs[k], &w) != WF_OK) break;
    size_t b2 = 0;
    float *s = step(w, 8) == WF_OK ? world_state(w, &b2) : NULL;
    CHECK(s && b2 == bytes);
    if (s) same_state(ref, s, bytes, devs[k]);
    free(s);
    wf_world_destroy(w);
  }
  free(ref);
}

int main(int argc, char **argv) {
  if (!tmp_root_make("weft_test_emit")) return 1;
  static const th_test tests[] = {
      TH_TEST(cylinder_lattice),
      TH_TEST(box_lattice_count_matches_the_solver),
      TH_TEST(random_packing_reaches_the_target),
      TH_TEST(random_packing_errors),
      TH_TEST(radius_distributions),
      TH_TEST(contact_between_radii),
      TH_TEST(file_round_trip),
      TH_TEST(file_errors),
      TH_TEST(round_trip),
      TH_TEST(pour_count_vs_time),
      TH_TEST(pour_checkpoint_resume),
      TH_TEST(pour_errors),
      TH_TEST(inlet_shapes),
      TH_TEST(inlet_rectangle_world),
      TH_TEST(inlet_errors),
      TH_TEST(far_from_origin_same_packing),
      TH_TEST(births_in_the_captured_frame),
      TH_TEST(world_split_bitwise),
  };
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
