/* Contact of cloth with itself and with particles:
 *  - self-collision: a sheet dropped onto another sheet of the same cloth (held by its border)
 *    rests on it: no vertex pair that is not a rest-mesh neighbour ends closer than 0.8 thickness
 *    and no upper vertex ends below the lower sheet (by the side of the lower triangle under it);
 *    without self-collision it falls through (so the checks can fail);
 *  - coupling: a heavy particle dropped on a pinned cloth stops above it and the cloth deflects
 *    (uncoupled, it falls through); in zero gravity a particle thrown at a free cloth gives it
 *    momentum and the pair's total momentum is conserved to round-off; coupled runs are bitwise
 *    reproducible, captured or not. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

enum { SN = SCENE_STACK_N, SM = SCENE_STACK_N - 2, SV = SN * SN + SM * SM };

typedef struct stack_result {
  double min_pair;  /* smallest distance of a non-neighbour pair (rest distance >= 2 thickness) */
  double min_above; /* smallest height of an upper vertex above the lower triangle under it */
  int below;        /* upper vertices below the lower sheet */
} stack_result;

/* Height of (x, z) above the lower sheet's triangle under it (its plane), or NAN. */
static double above_lower(const float (*p)[4], double x, double y, double z) {
  for (int j = 0; j + 1 < SN; j++)
    for (int i = 0; i + 1 < SN; i++) {
      int a = j * SN + i, tri[2][3] = {{a, a + SN, a + 1}, {a + 1, a + SN, a + SN + 1}};
      for (int t = 0; t < 2; t++) {
        const float *A = p[tri[t][0]], *B = p[tri[t][1]], *C = p[tri[t][2]];
        double d = (B[2] - C[2]) * (A[0] - C[0]) + (C[0] - B[0]) * (A[2] - C[2]);
        double l0 = ((B[2] - C[2]) * (x - C[0]) + (C[0] - B[0]) * (z - C[2])) / d;
        double l1 = ((C[2] - A[2]) * (x - C[0]) + (A[0] - C[0]) * (z - C[2])) / d;
        double l2 = 1.0 - l0 - l1;
        if (l0 < -1e-9 || l1 < -1e-9 || l2 < -1e-9) continue;
        return y - (l0 * A[1] + l1 * B[1] + l2 * C[1]);
      }
    }
  return NAN;
}

static int run_stack(int integrator, bool self, bool no_graph, int frames, stack_result *r,
                     float (*out)[4]) {
  wf_cloth *c;
  if (scene_stacked(th_dev0, integrator, self, no_graph, &c) != WF_OK) {
    TH_FAIL("stack: %s", wf_last_error());
    return 0;
  }
  static float rest[SV][4], p[SV][4];
  int ok = wf_cloth_download(c, rest, NULL) == WF_OK && wf_cloth_step_frames(c, frames) == WF_OK &&
           wf_cloth_download(c, p, NULL) == WF_OK;
  if (!ok) TH_FAIL("stack: %s", wf_last_error());
  wf_cloth_destroy(c);
  if (!ok) return 0;
  const double th = 0.05;
  r->min_pair = 1e9, r->min_above = 1e9, r->below = 0;
  for (int i = 0; i < SV; i++)
    for (int j = i + 1; j < SV; j++) {
      double rd = 0.0, d = 0.0;
      for (int k = 0; k < 3; k++)
        rd += (rest[i][k] - (double)rest[j][k]) * (rest[i][k] - (double)rest[j][k]),
            d += (p[i][k] - (double)p[j][k]) * (p[i][k] - (double)p[j][k]);
      if (rd >= 4.0 * th * th * (1.0 - 1e-6)) r->min_pair = fmin(r->min_pair, sqrt(d));
    }
  for (int u = SN * SN; u < SV; u++) {
    double h = above_lower(p, p[u][0], p[u][1], p[u][2]);
    if (isnan(h)) h = -1.0; /* outside the lower sheet: it fell off or through */
    r->min_above = fmin(r->min_above, h);
    r->below += h < 0.0;
  }
  if (out) memcpy(out, p, sizeof p);
  return 1;
}

/* 1.5 s: the upper sheet (0.15 m above) lands after ~0.17 s and settles. Tolerances: the
 * repulsion is one Jacobi projection a substep after the constraints; what the next substep's
 * gravity and constraints move back in before it is projected again is ~g dt² plus the pull of
 * the stretched lower sheet, a few percent of the thickness: pairs end >= 0.8 thickness apart
 * and every upper vertex above the lower sheet by >= 0.5 thickness. */
static void self_collision(int integrator) {
  stack_result on, off;
  REQUIRE(run_stack(integrator, true, false, 90, &on, NULL));
  REQUIRE(run_stack(integrator, false, false, 90, &off, NULL));
  const char *name = integrator == WF_CLOTH_XPBD ? "xpbd" : "springs";
  printf("  %s, self-collision on: closest non-neighbour pair %.4f m (thickness 0.05), lowest "
         "upper vertex %.4f m above the lower sheet, %d below\n",
         name, on.min_pair, on.min_above, on.below);
  printf("  %s, self-collision off: closest pair %.4f m, %d of %d upper vertices below the lower "
         "sheet\n",
         name, off.min_pair, off.below, SM * SM);
  CHECK(on.min_pair >= 0.8 * 0.05);
  CHECK(on.below == 0 && on.min_above >= 0.5 * 0.05);
  CHECK(off.below > SM * SM / 2); /* the control: without it the sheet falls through */
}

TEST(self_collision_stacked_xpbd) { self_collision(WF_CLOTH_XPBD); }
TEST(self_collision_stacked_springs) { self_collision(WF_CLOTH_SPRINGS); }

/* Self-collision is deterministic: two runs, captured and uncaptured, are bitwise equal. */
TEST(self_collision_bitwise) {
  for (int integrator = 0; integrator < 2; integrator++) {
    static float a[SV][4], b[SV][4];
    stack_result r;
    REQUIRE(run_stack(integrator, true, false, 20, &r, a));
    REQUIRE(run_stack(integrator, true, true, 20, &r, b));
    CHECK(scene_first_diff(&a[0][0], &b[0][0], (size_t)SV * 4) < 0);
  }
}

/* Steps the coupled (or, for the control, uncoupled) pair `frames` frames and downloads both. */
static int run_pair(wf_cloth *c, wf_particles *ps, bool coupled, int frames, float (*cp)[4],
                    float (*cv)[4], float (*pp)[4], float (*pv)[4]) {
  wf_status st = wf_particles_step_frames(ps, frames);
  if (st == WF_OK && !coupled) st = wf_cloth_step_frames(c, frames);
  if (st == WF_OK) st = wf_cloth_download(c, cp, cv);
  if (st == WF_OK) st = wf_particles_download(ps, pp, pv);
  if (st != WF_OK) TH_FAIL("stepping: %s", wf_last_error());
  return st == WF_OK;
}

static void destroy_pair(wf_stream *s, wf_cloth *c, wf_particles *ps) {
  wf_particles_destroy(ps);
  wf_cloth_destroy(c);
  if (s) wf_stream_destroy(s);
}

/* A 0.3 kg ball (radius 0.08, 30 times a vertex's mass) dropped from 0.3 m onto a 17 x 17 net
 * of 10 g vertices (spacing 0.0625) pinned by its edges. After 3 s (XPBD in the
 * sanitizer builds: 2 s) it rests on the net: over
 * the last 0.5 s its height stays within 1 cm (the mass-spring net keeps a small bounce of a
 * few mm), its centre is above the net vertices under it (within half a radius horizontally)
 * by at least half its radius (they touch its lower surface, which is curved), and the net's
 * centre has sagged by more than 1 cm. Uncoupled, the ball falls through the net. */
static void ball_on_net(int integrator) {
  int settle = 150; /* frames before the last half second */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  if (integrator == WF_CLOTH_XPBD) settle = 90; /* ~20x slower there; it settles by then */
#endif
  const float pos[1][3] = {{0.01f, 0.8f, -0.02f}}, vel[1][3] = {{0.0f, 0.0f, 0.0f}};
  static float cp[289][4], cv[289][4];
  float pp[1][4], pv[1][4];
  for (int coupled = 1; coupled >= 0; coupled--) {
    wf_stream *s = NULL;
    wf_cloth *c;
    wf_particles *ps;
    wf_status st =
        scene_coupled(th_dev0, integrator, coupled, false, -9.81f, 1, pos, vel, 0.3f, &s, &c, &ps);
    if (st != WF_OK) TH_FAIL("scene: %s", wf_last_error());
    /* the control only has to fall through: 1 s */
    int ok = st == WF_OK && run_pair(c, ps, coupled, coupled ? settle : 30, cp, cv, pp, pv);
    double ylo = 1e9, yhi = -1e9; /* the ball's height over the last half second */
    for (int f = 0; f < 30 && ok; f++) {
      ok = run_pair(c, ps, coupled, 1, cp, cv, pp, pv);
      ylo = fmin(ylo, pp[0][1]), yhi = fmax(yhi, pp[0][1]);
    }
    destroy_pair(s, c, ps);
    REQUIRE(ok);
    double lowest_gap = 1e9; /* ball centre above the vertices within 1.5 radii horizontally */
    for (int i = 0; i < 289; i++) {
      double dx = cp[i][0] - (double)pp[0][0], dz = cp[i][2] - (double)pp[0][2];
      if (dx * dx + dz * dz < 0.5 * SCENE_BALL_R * SCENE_BALL_R)
        lowest_gap = fmin(lowest_gap, pp[0][1] - cp[i][1]);
    }
    double sag = 0.5 - cp[8 * 17 + 8][1];
    printf("  %s, %s: ball at y %.4f (%.4f .. %.4f over the last 0.5 s), %.4f m above the net "
           "under it; net sag %.4f m\n",
           integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", coupled ? "coupled" : "uncoupled",
           pp[0][1], ylo, yhi, lowest_gap, sag);
    if (coupled) {
      CHECK(lowest_gap >= 0.5 * SCENE_BALL_R);
      CHECK(yhi - ylo < 0.01);
      CHECK(sag > 0.01);
    } else {
      CHECK(pp[0][1] < cp[8 * 17 + 8][1] - 0.5); /* the control: it fell through */
    }
  }
}

TEST(ball_stops_on_pinned_net_xpbd) { ball_on_net(WF_CLOTH_XPBD); }
TEST(ball_stops_on_pinned_net_springs) { ball_on_net(WF_CLOTH_SPRINGS); }

/* Σ m v of the net's vertices (m = 1 / pos.w) and of the particles (m = 1 / vel.w), in double. */
static void momentum(const float (*cp)[4], const float (*cv)[4], int nc, const float (*pv)[4],
                     int np, double cloth[3], double total[3]) {
  for (int k = 0; k < 3; k++)
    cloth[k] = 0.0;
  for (int i = 0; i < nc; i++)
    for (int k = 0; k < 3; k++)
      cloth[k] += cv[i][k] / (double)cp[i][3];
  for (int k = 0; k < 3; k++)
    total[k] = cloth[k];
  for (int i = 0; i < np; i++)
    for (int k = 0; k < 3; k++)
      total[k] += pv[i][k] / (double)pv[i][3];
}

/* Zero gravity: two 0.5 kg balls thrown at a free net (2.89 kg) at 2 m/s, one off centre and
 * obliquely. Every exchange is an equal and opposite pair of corrections (m w k on each side,
 * m w = 1 to a rounding), so after 1 s the total momentum equals the initial (0, -2, 0.2) kg m/s
 * up to rounding, and the net must have taken more than 0.5 kg m/s of it (nothing was missed).
 * The rounding differs by integrator. Springs integrate velocities: ~1e-7 relative per substep
 * and vertex, measured 5e-8 kg m/s in all: tolerance 1e-6. XPBD's state is positions: a
 * correction reaches the velocity through the rounded position (ulp(0.5 m) / dt = 6e-5 m/s per
 * substep and vertex), so the XPBD net alone, its vertices given random 1 m/s velocities, already
 * drifts by up to 2e-3 kg m/s in 1 s without any particle: tolerance 1e-3 (measured 1.2e-4). */
static void momentum_conserved(int integrator) {
  const float pos[2][3] = {{0.0f, 0.7f, 0.0f}, {0.2f, 0.7f, -0.15f}};
  const float vel[2][3] = {{0.0f, -2.0f, 0.0f}, {0.0f, -2.0f, 0.4f}};
  static float cp[289][4], cv[289][4];
  float pp[2][4], pv[2][4];
  wf_stream *s = NULL;
  wf_cloth *c;
  wf_particles *ps;
  wf_status st =
      scene_coupled(th_dev0, integrator, true, true, 0.0f, 2, pos, vel, 0.5f, &s, &c, &ps);
  if (st != WF_OK) TH_FAIL("scene: %s", wf_last_error());
  int ok = st == WF_OK && run_pair(c, ps, true, 60, cp, cv, pp, pv);
  destroy_pair(s, c, ps);
  REQUIRE(ok);
  double cloth[3], total[3], want[3] = {0.0, -2.0, 0.2};
  momentum((const float(*)[4])cp, (const float(*)[4])cv, 289, (const float(*)[4])pv, 2, cloth,
           total);
  printf("  %s: total momentum (%.9f %.9f %.9f), initial (0 -2 0.2); the net's (%.5f %.5f "
         "%.5f)\n",
         integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", total[0], total[1], total[2], cloth[0],
         cloth[1], cloth[2]);
  double tol = integrator == WF_CLOTH_XPBD ? 1e-3 : 1e-6;
  for (int k = 0; k < 3; k++)
    CHECK_NEAR(total[k], want[k], tol);
  CHECK(cloth[1] < -0.5);
}

TEST(coupled_momentum_conserved_xpbd) { momentum_conserved(WF_CLOTH_XPBD); }
TEST(coupled_momentum_conserved_springs) { momentum_conserved(WF_CLOTH_SPRINGS); }

/* Coupled runs repeat bit for bit. */
TEST(coupled_bitwise) {
  const float pos[1][3] = {{0.01f, 0.6f, -0.02f}}, vel[1][3] = {{0.0f, -1.0f, 0.0f}};
  for (int integrator = 0; integrator < 2; integrator++) {
    static float cp[2][289][4], cv[2][289][4];
    float pp[2][1][4], pv[2][1][4];
    for (int r = 0; r < 2; r++) {
      wf_stream *s = NULL;
      wf_cloth *c;
      wf_particles *ps;
      wf_status st =
          scene_coupled(th_dev0, integrator, true, false, -9.81f, 1, pos, vel, 1.0f, &s, &c, &ps);
      if (st != WF_OK) TH_FAIL("scene: %s", wf_last_error());
      int ok = st == WF_OK && run_pair(c, ps, true, 20, cp[r], cv[r], pp[r], pv[r]);
      destroy_pair(s, c, ps);
      REQUIRE(ok);
    }
    CHECK(scene_first_diff(&cp[0][0][0], &cp[1][0][0], 289 * 4) < 0);
    CHECK(scene_first_diff(&cv[0][0][0], &cv[1][0][0], 289 * 4) < 0);
    CHECK(scene_first_diff(&pp[0][0][0], &pp[1][0][0], 4) < 0);
    CHECK(scene_first_diff(&pv[0][0][0], &pv[1][0][0], 4) < 0);
  }
}

/* The coupling's preconditions are checked. */
TEST(couple_errors) {
  wf_stream *s = NULL;
  wf_cloth *c;
  wf_particles *ps;
  const float pos[1][3] = {{0, 1, 0}}, vel[1][3] = {{0, 0, 0}};
  CHECK_OK(
      scene_coupled(th_dev0, WF_CLOTH_XPBD, false, false, -9.81f, 1, pos, vel, 1.0f, &s, &c, &ps));
  wf_cloth_desc d = wf_cloth_desc_default();
  wf_cloth_grid g = wf_cloth_grid_default();
  wf_cloth *other; /* its own stream */
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &other));
  wf_status st = wf_cloth_couple(other, ps);
  CHECK(st == WF_ERR_INVALID && strstr(wf_last_error(), "same desc.stream"));
  wf_cloth_destroy(other);
  CHECK_OK(wf_cloth_couple(c, ps));
  st = wf_cloth_step_frames(c, 1);
  CHECK(st == WF_ERR_INVALID && strstr(wf_last_error(), "coupled to particles 'balls'"));
  CHECK_OK(wf_cloth_couple(c, NULL)); /* uncoupled: it steps on its own again */
  CHECK_OK(wf_cloth_step_frames(c, 1));
  destroy_pair(s, c, ps);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(self_collision_stacked_xpbd),
                                  TH_TEST(self_collision_stacked_springs),
                                  TH_TEST(self_collision_bitwise),
                                  TH_TEST(ball_stops_on_pinned_net_xpbd),
                                  TH_TEST(ball_stops_on_pinned_net_springs),
                                  TH_TEST(coupled_momentum_conserved_xpbd),
                                  TH_TEST(coupled_momentum_conserved_springs),
                                  TH_TEST(coupled_bitwise),
                                  TH_TEST(couple_errors)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
