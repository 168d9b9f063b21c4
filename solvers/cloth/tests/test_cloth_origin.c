/* Translation invariance of the cloth (docs/precision.md): a scene moved by (20, 0, 0) m or
 * (1000, 50, -1000) m behaves as at the world's origin.
 *
 * The solver keeps every position relative to the cloth's origin (by default the centre of its
 * bounding box rounded to whole metres), in float; the origin is a double. Trajectories are
 * compared in the world, in double: wf_cloth_download_local + wf_cloth_origin, less the shift (a
 * float world position at 1000 m is itself rounded to 6e-5 m, more than the tolerance). Cases:
 *
 *  - springs and XPBD sheets pinned at two corners, swinging for 600 frames (10 s): positions
 *    relative to the shift within 1e-5 of the sheet's extent (the bound) of the run at
 *    the origin. A whole-metre shift moves the origin by the shift exactly and leaves the local
 *    state the same, so the runs agree to the bit; the tolerance is the issue's, and the control
 *    (origin forced to the world's, positions as float world coordinates as before the origins)
 *    shows what it guards against.
 *  - an undamped, nearly inextensible mass-spring strip swinging from a pin: the gain of its
 *    energy (kinetic + gravity + springs, in double from the downloaded state) over 12 s at 20 m
 *    is at most that at the origin plus 1% of its swing energy. 1%: the integrator's own drift
 *    here is 0.6% of the swing energy and does not depend on where the strip is; with positions
 *    in float world coordinates (the control: origin forced to the world's) the spring lengths,
 *    differences of float world positions, are rounded to ulp(20 m) = 2e-6 m, a quarter of a
 *    link's stretch, and the strip gained 1.0% at 2 m and 8.3% at 20 m (the issue measured 2.4%
 *    and 134% on its strip), so 1% separates the two. The control must exceed the bound.
 *  - a sheet dropped on a sphere with friction 0.5 (and a ground plane): the same relative
 *    trajectories (1e-5 of the extent), and friction acted the same (the tangential speed of the
 *    vertices on the sphere, compared).
 *  - a shifted cloth split over 2 and 3 partitions: bitwise the state of one.
 *  - the local state round trip: wf_cloth_download_local, wf_cloth_set_state_local into a fresh
 *    cloth, more frames: bitwise an uninterrupted run; wf_cloth_download / wf_cloth_set_state
 *    convert through the origin in double.
 *  - coupling with particles (which have no origin yet: coupling.h's seam): a ball resting on a
 *    net gives the same result, to float rounding, whatever the net's origin (0, the automatic
 *    one, or a far given one), so the particles are moved into the cloth's frame correctly.
 */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

static const double shifts[3][3] = {{0.0, 0.0, 0.0}, {20.0, 0.0, 0.0}, {1000.0, 50.0, -1000.0}};

/* The state in the world, in double: local + origin (pos xyz, then vel xyz, 6 a vertex). */
static double *world_state(wf_cloth *c) {
  uint32_t n = wf_cloth_count(c);
  float(*p)[4] = malloc((size_t)n * 16 + 16), (*v)[4] = malloc((size_t)n * 16 + 16);
  double *s = malloc((size_t)n * 6 * sizeof *s + 8), o[3];
  wf_status st = p && v && s ? wf_cloth_download_local(c, p, v) : WF_ERR_OUT_OF_MEMORY;
  if (st == WF_OK) st = wf_cloth_origin(c, o);
  for (uint32_t i = 0; st == WF_OK && i < n; i++)
    for (int k = 0; k < 3; k++)
      s[6 * i + k] = (double)p[i][k] + o[k], s[6 * i + 3 + k] = v[i][k];
  if (st != WF_OK) {
    TH_FAIL("download: %s", wf_last_error());
    free(s), s = NULL;
  }
  free(p), free(v);
  return s;
}

/* The largest |a - (b - shift)| over positions, and over velocities in *dv. */
static double max_dev(const double *a, const double *b, uint32_t n, const double shift[3],
                      double *dv) {
  double dp = 0.0;
  *dv = 0.0;
  for (uint32_t i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) {
      dp = fmax(dp, fabs(a[6 * i + k] - (b[6 * i + k] - shift[k])));
      *dv = fmax(*dv, fabs(a[6 * i + 3 + k] - b[6 * i + 3 + k]));
    }
  return dp;
}

/* A 0.6 m sheet of 9 x 9 vertices at height 1 m (+ shift), pinned at its top corners; with
 * `ball` free, over a sphere of radius 0.25 at 0.5 m and a ground plane (friction 0.5). origin:
 * NULL = automatic. */
static wf_status sheet(int integrator, const double shift[3], bool ball, const double *origin,
                       int devices, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  d.integrator = integrator;
  d.iterations = integrator == WF_CLOTH_XPBD ? 2 : 1;
  d.material.damping_time = 1e-4f;
  d.material.friction = 0.5f;
  if (origin) {
    d.origin_given = true;
    memcpy(d.origin, origin, sizeof d.origin);
  }
  for (int i = 0; i < devices; i++)
    d.devices[i] = th_dev0; /* a device may hold several partitions */
  d.device_count = devices;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.size[0] = g.size[1] = 0.6f;
  g.resolution[0] = g.resolution[1] = 9;
  for (int k = 0; k < 3; k++) /* whole metres: exact in float at these distances */
    g.center[k] = (float)((k == 1 ? 1.0 : 0.0) + shift[k]);
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st == WF_OK && !ball) st = wf_cloth_pin_named(*out, "top-left", NULL);
  if (st == WF_OK && !ball) st = wf_cloth_pin_named(*out, "top-right", NULL);
  if (st == WF_OK && ball) {
    /* 0.5 and 0.25: the same floats at every shift (50.5 is exact, 50.6 would not be) */
    wf_collider_desc s =
        scene_sphere((float)shift[0], (float)(0.5 + shift[1]), (float)shift[2], 0.25f);
    s.friction = 0.5f;
    wf_collider_desc pl = {.name = "ground",
                           .type = WF_COLLIDER_PLANE,
                           .normal = {0.0f, 1.0f, 0.0f},
                           .offset = (float)shift[1],
                           .friction = 0.5f};
    st = wf_cloth_add_collider(*out, &s, NULL);
    if (st == WF_OK) st = wf_cloth_add_collider(*out, &pl, NULL);
  }
  return st;
}

/* Runs the sheet at every shift for `frames` frames and compares with the run at the origin. */
static void shifted_runs(int integrator, bool ball, int frames) {
  const char *what = integrator == WF_CLOTH_XPBD ? "xpbd" : "springs";
  double *ref = NULL;
  uint32_t n = 0;
  for (int s = 0; s < 3; s++) {
    wf_cloth *c = NULL;
    wf_status st = sheet(integrator, shifts[s], ball, NULL, 1, &c);
    if (st == WF_OK) st = wf_cloth_step_frames(c, frames);
    if (st != WF_OK) {
      TH_FAIL("%s, shift %d: %s", what, s, wf_last_error());
      wf_cloth_destroy(c);
      break;
    }
    n = wf_cloth_count(c);
    double o[3];
    CHECK_OK(wf_cloth_origin(c, o));
    double *got = world_state(c);
    wf_cloth_destroy(c);
    if (!got) break;
    if (s == 0) {
      ref = got;
      continue;
    }
    double dv, dp = max_dev(ref, got, n, shifts[s], &dv);
    printf("  %s%s, shift (%g, %g, %g), origin (%g, %g, %g): after %d frames positions within "
           "%.3g m, velocities within %.3g m/s of the run at the origin\n",
           what, ball ? " on a sphere" : "", shifts[s][0], shifts[s][1], shifts[s][2], o[0], o[1],
           o[2], frames, dp, dv);
    CHECK(dp <= 1e-5 * 0.6);        /* the bound: 1e-5 of the scene's extent */
    CHECK(dv <= 1e-5 * 0.6 * 60.0); /* the same over a frame */
    free(got);
  }
  if (ball && ref) { /* friction acted: the sheet rests on the sphere, not slid off */
    double top = 0.0;
    for (uint32_t i = 0; i < n; i++)
      top = fmax(top, ref[6 * i + 1]);
    printf("  the sheet's highest vertex at y %.4f (sphere top 0.75)\n", top);
    CHECK(top > 0.75);
  }
  free(ref);
}

TEST(springs_sheet_shifted) { shifted_runs(WF_CLOTH_SPRINGS, false, 600); }
TEST(xpbd_sheet_shifted) { shifted_runs(WF_CLOTH_XPBD, false, 600); }
TEST(springs_on_sphere_shifted) { shifted_runs(WF_CLOTH_SPRINGS, true, 120); }
TEST(xpbd_on_sphere_shifted) { shifted_runs(WF_CLOTH_XPBD, true, 120); }

/* The control of the trajectories: the sheet at (1000, 50, -1000) with its origin forced to the
 * world's keeps float world positions (ulp 6e-5 m) and leaves the bound far behind. */
TEST(springs_sheet_world_frame_control) {
  static const double zero[3] = {0.0, 0.0, 0.0};
  double *st[2] = {NULL, NULL};
  uint32_t n = 0;
  for (int s = 0; s < 2; s++) {
    wf_cloth *c = NULL;
    wf_status r = sheet(WF_CLOTH_SPRINGS, shifts[2 * s], false, s ? zero : NULL, 1, &c);
    if (r == WF_OK) r = wf_cloth_step_frames(c, 60);
    if (r == WF_OK)
      st[s] = world_state(c), n = wf_cloth_count(c);
    else
      TH_FAIL("%s", wf_last_error());
    wf_cloth_destroy(c);
  }
  if (st[0] && st[1]) {
    double dv, dp = max_dev(st[0], st[1], n, shifts[2], &dv);
    printf("  origin at the world's, shift (1000, 50, -1000): positions off by %.3g m after 60 "
           "frames\n",
           dp);
    CHECK(dp > 1e-5 * 0.6);
  }
  free(st[0]), free(st[1]);
}

/* ---- the undamped strip's energy ------------------------------------------------------------ */

enum { STRIP_N = 17 };
static const double strip_k = 2e5, strip_m = 0.01, strip_len = 1.0, strip_amp = 0.05;

/* A 1 m strip of 17 vertices (10 g each, stretch springs of 2e5 N/m only: a nearly inextensible
 * chain, each link stretched by at most 8e-6 m by the weight below it; no damping of any kind, no
 * air; 128 substeps) hanging from its pin at (x0, 1, 0): created along x (rest length 1/16 m a
 * link), then
 * set to its static equilibrium (each link stretched by the weight below it over k) with the
 * free end pulled 5 cm sideways (x_k = A k / 16) and released from rest. The state is computed in
 * double in the world and set relative to the cloth's origin (wf_cloth_set_state_local), so that
 * every placement starts from the same physical state. *e_rest: the equilibrium's energy. */
static wf_status strip(double x0, const double *origin, wf_cloth **out, double *e_rest) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "strip";
  d.substeps = 128; /* the explicit limit is 81 at this stiffness */
  d.material.particle_mass = (float)strip_m;
  d.material.coefficients = true;
  d.material.stretch_stiffness = (float)strip_k;
  d.material.shear_stiffness = 0.0f;
  d.material.bend_stiffness = 0.0f;
  d.material.damping = 0.0f;
  d.damping = 0.0f;
  d.air_density = 0.0f;
  if (origin) {
    d.origin_given = true;
    memcpy(d.origin, origin, sizeof d.origin);
  }
  d.devices[0] = th_dev0;
  d.device_count = 1;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = STRIP_N, g.resolution[1] = 1;
  g.size[0] = (float)strip_len;
  g.center[0] = (float)(x0 + 0.5 * strip_len), g.center[1] = 1.0f, g.center[2] = 0.0f;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "left", NULL);
  float p[STRIP_N][4], v[STRIP_N][4];
  double o[3];
  if (st == WF_OK) st = wf_cloth_download_local(*out, p, v);
  if (st == WF_OK) st = wf_cloth_origin(*out, o);
  if (st != WF_OK) return st;
  double h = strip_len / (STRIP_N - 1), y = 1.0;
  *e_rest = 0.0;
  for (int k = 0; k < STRIP_N; k++) {
    double w[3] = {x0 + strip_amp * k / (STRIP_N - 1), y, 0.0};
    for (int q = 0; q < 3; q++)
      p[k][q] = (float)(w[q] - o[q]), v[k][q] = 0.0f;
    double t = 9.81 * strip_m * (STRIP_N - 1 - k); /* the tension of the link below k */
    if (k > 0) *e_rest += strip_m * 9.81 * y;
    if (k + 1 < STRIP_N) *e_rest += 0.5 * t * t / strip_k;
    y -= h + t / strip_k;
  }
  return wf_cloth_set_state_local(*out, (const float(*)[4])p, (const float(*)[4])v, 0.0, 0);
}

/* Kinetic + gravitational + elastic energy, in double from the world state. */
static double strip_energy(const double *s) {
  double e = 0.0, h = strip_len / (STRIP_N - 1);
  for (int i = 1; i < STRIP_N; i++) { /* vertex 0 is pinned */
    const double *v = s + 6 * i + 3;
    e += 0.5 * strip_m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) + strip_m * 9.81 * s[6 * i + 1];
  }
  for (int i = 0; i + 1 < STRIP_N; i++) {
    double l = 0.0;
    for (int k = 0; k < 3; k++)
      l += (s[6 * (i + 1) + k] - s[6 * i + k]) * (s[6 * (i + 1) + k] - s[6 * i + k]);
    e += 0.5 * strip_k * (sqrt(l) - h) * (sqrt(l) - h);
  }
  return e;
}

/* The gain of energy over 12 s, in units of the swing energy E(0) - E(rest): the mean over the
 * last second less the mean over the first (sampled every frame; the means take out the
 * symplectic integrator's bounded oscillation of the energy, which is not a gain). */
static double strip_gain(double x0, const double *origin) {
  wf_cloth *c = NULL;
  double gain = 1e9, e_rest = 0.0, swing = 1.0, first = 0.0, last = 0.0;
  if (strip(x0, origin, &c, &e_rest) != WF_OK) {
    TH_FAIL("strip: %s", wf_last_error());
    wf_cloth_destroy(c);
    return 1e9;
  }
  for (int f = 0; f <= 720; f++) {
    if (f && wf_cloth_step_frames(c, 1) != WF_OK) {
      TH_FAIL("step: %s", wf_last_error());
      break;
    }
    double *s = world_state(c);
    if (!s) break;
    double e = strip_energy(s);
    free(s);
    if (f == 0) swing = e - e_rest;
    if (f < 60) first += e / 60.0;
    if (f > 660) last += e / 60.0;
  }
  gain = (last - first) / swing;
  wf_cloth_destroy(c);
  return gain;
}

TEST(undamped_strip_energy_at_20m) {
  static const double zero[3] = {0.0, 0.0, 0.0};
  double g0 = strip_gain(0.0, NULL), g20 = strip_gain(20.0, NULL);
  printf("  energy gain over 12 s, in swing energies: pin at 0 m %.4f%%, at 20 m %.4f%%\n",
         100.0 * g0, 100.0 * g20);
  CHECK(g20 <= g0 + 0.01);
  double c20 = strip_gain(20.0, zero); /* the control: float world coordinates */
  printf("  the control, origin forced to the world's, at 20 m: %.2f%%\n", 100.0 * c20);
  CHECK(c20 > g0 + 0.01);
}

/* ---- partitions, state round trips, the origin itself --------------------------------------- */

/* A shifted cloth over 2 and 3 partitions: bitwise the state of one (all partitions share the
 * cloth's origin). */
TEST(shifted_partitions_bitwise) {
  for (int integrator = 0; integrator < 2; integrator++) {
    float(*ref)[4] = NULL;
    uint32_t n = 0;
    for (int np = 1; np <= 3; np++) {
      wf_cloth *c = NULL;
      CHECK_OK(sheet(integrator, shifts[2], true, NULL, np, &c));
      n = wf_cloth_count(c);
      float(*s)[4] = malloc((size_t)n * 32);
      REQUIRE(s);
      wf_partition_view v;
      CHECK_OK(wf_cloth_partition_view(c, np - 1, &v));
      CHECK(v.origin[0] == 1000.0 && v.origin[1] == 51.0 && v.origin[2] == -1000.0);
      CHECK_OK(wf_cloth_step_frames(c, 20));
      CHECK_OK(wf_cloth_download_local(c, s, s + n));
      wf_cloth_destroy(c);
      if (np == 1) {
        ref = s;
        continue;
      }
      int at = scene_first_diff(&ref[0][0], &s[0][0], (size_t)n * 8);
      if (at >= 0)
        TH_FAIL("%s, %d partitions: differs from one at float %d", integrator ? "xpbd" : "springs",
                np, at);
      free(s);
    }
    free(ref);
  }
}

/* Checkpoint round trip: the local state after 10 frames into a fresh cloth, 10 more frames:
 * bitwise 20 frames of one run. The world state converts through the origin. */
TEST(local_state_round_trip_bitwise) {
  for (int integrator = 0; integrator < 2; integrator++) {
    wf_cloth *a = NULL, *b = NULL;
    CHECK_OK(sheet(integrator, shifts[2], true, NULL, 1, &a));
    CHECK_OK(sheet(integrator, shifts[2], true, NULL, 1, &b));
    uint32_t n = wf_cloth_count(a);
    float(*mid)[4] = malloc((size_t)n * 32), (*end)[4] = malloc((size_t)n * 32),
    (*got)[4] = malloc((size_t)n * 32), (*world)[4] = malloc((size_t)n * 16);
    REQUIRE(mid && end && got && world);
    double t = 0.0;
    uint64_t k = 0;
    CHECK_OK(wf_cloth_step_frames(a, 10));
    CHECK_OK(wf_cloth_download_local(a, mid, mid + n));
    CHECK_OK(wf_cloth_time(a, &t, &k));
    CHECK_OK(wf_cloth_step_frames(a, 10));
    CHECK_OK(wf_cloth_download_local(a, end, end + n));
    CHECK_OK(
        wf_cloth_set_state_local(b, (const float(*)[4])mid, (const float(*)[4])(mid + n), t, k));
    CHECK_OK(wf_cloth_step_frames(b, 10));
    CHECK_OK(wf_cloth_download_local(b, got, got + n));
    CHECK(scene_first_diff(&end[0][0], &got[0][0], (size_t)n * 8) < 0);
    /* world positions: local + origin in double, rounded once; set_state takes them back */
    CHECK_OK(wf_cloth_download(b, world, NULL));
    double o[3];
    CHECK_OK(wf_cloth_origin(b, o));
    int bad = 0;
    for (uint32_t i = 0; i < n; i++)
      for (int q = 0; q < 4; q++)
        bad += q < 3 ? world[i][q] != (float)((double)got[i][q] + o[q]) : world[i][q] != got[i][q];
    CHECK_EQ_INT(bad, 0);
    CHECK_OK(wf_cloth_set_state(b, (const float(*)[4])world, (const float(*)[4])(got + n), t, k));
    CHECK_OK(wf_cloth_download_local(b, mid, mid + n));
    double worst = 0.0; /* a world position at 1000 m is good to half its ulp, 3e-5 m */
    for (uint32_t i = 0; i < n; i++)
      for (int q = 0; q < 3; q++)
        worst = fmax(worst, fabs((double)mid[i][q] - got[i][q]));
    CHECK(worst <= 0.5 * 6.103515625e-05);
    free(mid), free(end), free(got), free(world);
    wf_cloth_destroy(a), wf_cloth_destroy(b);
  }
}

/* The automatic origin (the box's centre rounded to whole metres), a given one, pins by region in
 * world coordinates, and the desc's check. */
TEST(origin_choice) {
  wf_cloth *c = NULL;
  double o[3];
  CHECK_OK(sheet(WF_CLOTH_SPRINGS, shifts[1], false, NULL, 1, &c));
  CHECK_OK(wf_cloth_origin(c, o));
  CHECK(o[0] == 20.0 && o[1] == 1.0 && o[2] == 0.0);
  float p[81][4];
  CHECK_OK(wf_cloth_download(c, p, NULL));
  CHECK(p[0][0] == 19.7f && p[0][1] == 1.0f && p[0][2] == -0.3f); /* the top-left corner */
  const float lo[3] = {20.29f, 0.9f, -0.31f}, hi[3] = {20.31f, 1.1f, 0.31f};
  uint32_t count = 0;
  CHECK_OK(wf_cloth_pin_region(c, lo, hi, &count)); /* the right column, in the world */
  CHECK_EQ_INT(count, 9);
  wf_cloth_destroy(c);
  static const double given[3] = {3.25, -7.0, 1e6};
  CHECK_OK(sheet(WF_CLOTH_XPBD, shifts[0], false, given, 1, &c));
  CHECK_OK(wf_cloth_origin(c, o));
  CHECK(o[0] == 3.25 && o[1] == -7.0 && o[2] == 1e6);
  wf_cloth_destroy(c);
  static const double bad[3] = {0.0, NAN, 0.0};
  c = NULL;
  CHECK_ERROR(sheet(WF_CLOTH_SPRINGS, shifts[0], false, bad, 1, &c), WF_ERR_INVALID, "origin");
  wf_cloth_destroy(c);
}

/* Coupling: particles have no origin (coupling.h's seam); they are moved into the net's frame by
 * the origins' difference. The ball comes to rest on the net at the same height whatever the
 * net's origin, to float rounding (positions near the net are rounded to ~1e-7 m at either
 * origin; over 1 s of contacts that grows to well under 0.1 mm: tolerance 1e-4 m). */
TEST(coupled_ball_any_origin) {
  static const double origins[3][3] = {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {-3.0, 2.0, 5.0}};
  const float pos[1][3] = {{0.01f, 0.8f, -0.02f}}, vel[1][3] = {{0.0f, 0.0f, 0.0f}};
  double y[3] = {0.0, 0.0, 0.0};
  for (int i = 0; i < 3; i++) {
    wf_stream *s = NULL;
    wf_cloth *c = NULL;
    wf_particles *ps = NULL;
    wf_status st = scene_coupled_at(th_dev0, WF_CLOTH_XPBD, true, false, -9.81f, 1, pos, vel, 0.3f,
                                    origins[i], &s, &c, &ps);
    if (st == WF_OK) st = wf_particles_step_frames(ps, 60);
    float pp[1][4];
    if (st == WF_OK) st = wf_particles_download(ps, pp, NULL);
    if (st != WF_OK) TH_FAIL("origin %d: %s", i, wf_last_error());
    y[i] = pp[0][1];
    wf_particles_destroy(ps);
    wf_cloth_destroy(c);
    if (s) wf_stream_destroy(s);
  }
  printf("  ball on the net after 1 s: y %.6f (net origin 0), %.6f (0, 1, 0), %.6f (-3, 2, 5)\n",
         y[0], y[1], y[2]);
  CHECK(y[0] > 0.5 && y[0] < 0.8); /* on the net (at 0.5, sagging), not through it */
  CHECK_NEAR(y[1], y[0], 1e-4);
  CHECK_NEAR(y[2], y[0], 1e-4);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(springs_sheet_shifted),
                                  TH_TEST(xpbd_sheet_shifted),
                                  TH_TEST(springs_on_sphere_shifted),
                                  TH_TEST(xpbd_on_sphere_shifted),
                                  TH_TEST(springs_sheet_world_frame_control),
                                  TH_TEST(undamped_strip_energy_at_20m),
                                  TH_TEST(shifted_partitions_bitwise),
                                  TH_TEST(local_state_round_trip_bitwise),
                                  TH_TEST(origin_choice),
                                  TH_TEST(coupled_ball_any_origin)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
