/* Physics of the particle solver against analytic references, each with a stated tolerance:
 * free fall (semi-implicit Euler's exact first-order error), bounce heights against restitution,
 * momentum conservation in a zero-gravity cloud, a pile that comes to rest, particles resting on
 * each collider kind, a kinematic collider, and no tunnelling through a plane. */
#include "harness.h"
#include "scenes.h"
#include "weft/particles.h"

static wf_particles *one_particle(int substeps, float frame_dt, const float g[3], const float p[4],
                                  const float v[4]) {
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 1;
  d.substeps = substeps;
  d.frame_dt = frame_dt;
  memcpy(d.gravity, g, sizeof d.gravity);
  wf_particles *ps = NULL;
  d.devices[0] = th_dev0;
  if (wf_particles_create(&d, &ps) != WF_OK) return NULL;
  if (wf_particles_add(ps, 1, (const float(*)[4])p, (const float(*)[4])v, 0, NULL) != WF_OK) {
    wf_particles_destroy(ps);
    return NULL;
  }
  return ps;
}

/* Semi-implicit Euler under constant g gives x_n = x0 + v0 t + ½ g t² + ½ g dt t exactly (in
 * exact arithmetic): v_k = v0 + k g dt, x_n = x0 + dt Σ_{k=1..n} v_k. So the error against the
 * continuous solution must be ½ g dt t = -0.0204 m here (dt = 1/240 s, t = 1 s), and what is left
 * is float round-off: per step at most half an ulp of |x| <= 3 (1.8e-7) in x and of |v| <= 8
 * (4.8e-7) in v, i.e. <= 240 · 1.8e-7 + 1 s · 240 · 4.8e-7 / 2 ≈ 1e-4 m; the tolerance is 2e-4 m,
 * a hundred times smaller than the discretisation error it checks. */
TEST(free_fall) {
  const float g[3] = {0.0f, -9.81f, 0.0f}, p0[4] = {0.5f, 0.0f, -0.25f, 0.05f},
              v0[4] = {1.0f, 2.0f, 0.5f, 1.0f};
  wf_particles *ps = one_particle(4, 1.0f / 60.0f, g, p0, v0);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 60));
  float p[1][4], v[1][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  double dt = (double)((1.0f / 60.0f) / 4.0f), t = 240 * dt;
  double y_cont = p0[1] + v0[1] * t + 0.5 * g[1] * t * t;
  double disc = 0.5 * g[1] * dt * t;
  CHECK_NEAR(p[0][1] - y_cont, disc, 2e-4);
  CHECK_NEAR((p[0][1] - y_cont) / disc, 1.0, 0.01);
  CHECK_NEAR(p[0][0], p0[0] + v0[0] * t, 5e-5); /* no force: linear, round-off only */
  CHECK_NEAR(p[0][2], p0[2] + v0[2] * t, 5e-5);
  CHECK_NEAR(v[0][1], v0[1] + g[1] * t, 2e-4);
  wf_particles_stats s;
  CHECK_OK(wf_particles_stats_get(ps, &s));
  CHECK_NEAR(s.time, t, 1e-9);
  CHECK(s.substeps == 240);
  wf_particles_destroy(ps);
}

/* Restitution without gravity: particles hit the plane at 2 m/s and leave at e · 2 m/s, e = 0.5,
 * through the dashpot c = 2 ζ sqrt(k m), ζ = -ln e / sqrt(π² + ln² e) (exact for the linear
 * spring-dashpot in continuous time). Eight particles start at slightly different heights, so each
 * enters contact at a different point inside a substep; that entry error is O(ω dt) = 0.036 here
 * (k = 1e4, m = 0.52 kg, dt = 1/3840 s), and the same integrator in double precision gives e within
 * [0.491, 0.500] over those phases. Tolerance: 0.02 on e. */
TEST(restitution_zero_gravity) {
  const float e = 0.5f;
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 8;
  d.gravity[1] = 0.0f;
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  float p0[8][4], v0[8][4];
  for (int i = 0; i < 8; i++) {
    p0[i][0] = (float)i, p0[i][1] = 0.1f + 0.0001f * (float)i, p0[i][2] = 0.0f, p0[i][3] = 0.05f;
    v0[i][0] = v0[i][2] = 0.0f, v0[i][1] = -2.0f, v0[i][3] = 1.0f / 0.5236f;
  }
  CHECK_OK(wf_particles_add(ps, 8, p0, v0, 0, NULL));
  wf_collider_desc c = wf_collider_desc_default();
  c.restitution = e;
  c.friction = 0.0f;
  c.stiffness = 1e4f;
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 12)); /* 0.2 s: contact ends after ~0.05 s */
  float p[8][4], v[8][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  for (int i = 0; i < 8; i++) {
    CHECK(p[i][1] > 0.05f);
    CHECK_NEAR(v[i][1] / 2.0f, e, 0.02);
  }
  wf_particles_destroy(ps);
}

/* A particle dropped from h0 = 1 m onto a plane with restitution e = 0.5: the apex heights above
 * the contact height follow h_n = e^{2n} h0. Two effects move h_n / h_{n-1} away from e² = 0.25:
 * gravity acting during the 7 ms contact (k = 1e5) lowers it by 1.3%, 2.6% and 5.3% for the
 * three bounces (the continuous model: slower impacts feel it more), and the contact entry inside
 * a substep (ω dt = 0.028 at dt = 1/15360 s) moves it by up to ±3% (the same integrator in double
 * precision gives 0.975, 0.974, 0.925 of e²). Tolerance: 9% relative to e², per bounce. */
TEST(bounce_restitution) {
  const float e = 0.5f, r = 0.05f, h0 = 1.0f;
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 1;
  d.substeps = 32;
  d.frame_dt = 32.0f / 15360.0f; /* dt = 1/15360 s; a readback every 2 ms */
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  float p0[1][4] = {{0.0f, r + h0, 0.0f, r}}, v0[1][4] = {{0.0f, 0.0f, 0.0f, 2.0f}};
  CHECK_OK(wf_particles_add(ps, 1, p0, v0, 0, NULL));
  wf_collider_desc c = wf_collider_desc_default();
  c.restitution = e;
  c.friction = 0.0f;
  c.stiffness = 1e5f;
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  double apex[4] = {h0, 0, 0, 0};
  int n = 1;
  float prev_vy = 0.0f;
  for (int f = 0; f < 800 && n < 4; f++) {
    CHECK_OK(wf_particles_step_frames(ps, 1));
    float p[1][4], v[1][4];
    CHECK_OK(wf_particles_download(ps, p, v));
    if (prev_vy > 0.0f && v[0][1] <= 0.0f) apex[n++] = p[0][1] - r; /* top of a flight */
    prev_vy = v[0][1];
  }
  REQUIRE(n == 4);
  for (int k = 1; k < 4; k++) {
    double ratio = apex[k] / apex[k - 1];
    printf("  bounce %d: h = %.5f m, h/h_prev = %.4f (e² = %.4f)\n", k, apex[k], ratio, e * e);
    CHECK_NEAR(ratio / (e * e), 1.0, 0.09);
  }
  wf_particles_destroy(ps);
}

/* Zero gravity, no colliders, a dense jittered cloud with random velocities: particles collide
 * many times (the kinetic energy drops through the dashpots), yet the momentum Σ m v stays. Pair
 * forces are computed by an expression odd in (normal, relative velocity), so f_ij = -f_ji bit for
 * bit; only the rounding of each v += dt F/m (half an ulp of |v| ~ 1, 6e-8, per particle and
 * substep, random in sign) changes the sum: a random walk of sqrt(512 · 320) · 6e-8 · m ~ 3e-5
 * at most, against Σ m |v| ~ 300. Tolerance: 1e-7 of Σ m |v|, under one float ulp of the momentum
 * scale (observed: ~4e-9). */
TEST(momentum_zero_gravity) {
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 512;
  d.substeps = 32;
  d.gravity[1] = 0.0f;
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  wf_particle_material m = wf_particle_material_default();
  m.restitution = 0.6f;
  m.friction = 0.4f;
  CHECK_OK(wf_particles_set_material(ps, 0, &m));
  float(*p)[4] = malloc(512 * sizeof *p), (*v)[4] = malloc(512 * sizeof *v);
  uint64_t s = 12345;
  for (int i = 0; i < 512; i++) {
    int x = i % 8, y = (i / 8) % 8, z = i / 64;
    float u[6];
    for (int k = 0; k < 6; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      u[k] = (float)((s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
    }
    p[i][0] = 0.102f * x + 0.001f * u[0], p[i][1] = 0.102f * y + 0.001f * u[1];
    p[i][2] = 0.102f * z + 0.001f * u[2], p[i][3] = 0.05f;
    v[i][0] = 2.0f * u[3], v[i][1] = 2.0f * u[4], v[i][2] = 2.0f * u[5];
    v[i][3] = 1.0f + (float)(i % 3); /* three masses */
  }
  CHECK_OK(wf_particles_add(ps, 512, p, v, 0, NULL));
  wf_particles_stats a, b;
  CHECK_OK(wf_particles_stats_get(ps, &a));
  CHECK_OK(wf_particles_step_frames(ps, 10));
  CHECK_OK(wf_particles_stats_get(ps, &b));
  double scale = 0.0;
  for (int i = 0; i < 512; i++)
    scale += sqrt(v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2]) / v[i][3];
  printf("  KE %.4f -> %.4f J; |dp| = %.3g, %.3g, %.3g (scale %.1f)\n", a.kinetic_energy,
         b.kinetic_energy, b.momentum[0] - a.momentum[0], b.momentum[1] - a.momentum[1],
         b.momentum[2] - a.momentum[2], scale);
  printf("  history overflows %llu\n", (unsigned long long)b.history_overflows);
  CHECK(b.kinetic_energy < 0.9 * a.kinetic_energy); /* collisions happened */
  for (int k = 0; k < 3; k++)
    CHECK_NEAR(b.momentum[k], a.momentum[k], 1e-7 * scale);
  free(p), free(v);
  wf_particles_destroy(ps);
}

/* A pyramid of 55 particles (5 layers, close packed, bottom layer between walls) dropped 10 cm
 * lands (kinetic energy ~10 J) and comes to rest: after 3 s the kinetic energy is below 1e-7 J and
 * one second later it still is, with no particle faster than 1e-4 m/s. What remains (~4e-9 J,
 * 3e-5 m/s) is a round-off limit cycle of the force balance, v += dt (g + F/m) with |F/m| = g:
 * bounded, not growing. */
TEST(resting_pile) {
  wf_particles *ps;
  CHECK_OK(scene_pyramid(th_dev0, 5, 0.1f, &ps));
  wf_particles_stats s0, s1, s2;
  double peak = 0.0;
  for (int f = 0; f < 30; f += 5) {
    CHECK_OK(wf_particles_step_frames(ps, 5));
    CHECK_OK(wf_particles_stats_get(ps, &s0));
    peak = fmax(peak, s0.kinetic_energy);
  }
  CHECK_OK(wf_particles_step_frames(ps, 150));
  CHECK_OK(wf_particles_stats_get(ps, &s1));
  CHECK_OK(wf_particles_step_frames(ps, 60));
  CHECK_OK(wf_particles_stats_get(ps, &s2));
  printf("  KE peak %.3g J, after 3 s: %.3g J, after 4 s: %.3g J, max speed %.3g m/s\n", peak,
         s1.kinetic_energy, s2.kinetic_energy, s2.max_speed);
  CHECK(peak > 0.5);
  CHECK(s1.kinetic_energy < 1e-7);
  CHECK(s2.kinetic_energy < 1e-7);
  CHECK(s2.max_speed < 1e-4);
  /* nobody fell through the floor or penetrates it beyond the static sag */
  float p[55][4];
  CHECK_OK(wf_particles_download(ps, p, NULL));
  float ymin = 1e9f;
  for (int i = 0; i < 55; i++)
    ymin = fminf(ymin, p[i][1]);
  CHECK(ymin > 0.045f);
  wf_particles_destroy(ps);
}

/* One particle dropped onto each collider kind with restitution 0 comes to rest on top. Rest
 * height = surface + r - sag, sag = m g / k = 0.52 · 9.81 / 1e5 = 5e-5 m; tolerance 2e-4 m. */
TEST(rest_on_colliders) {
  const float r = 0.05f;
  struct {
    const char *name;
    int type;
    float top;
  } cases[] = {{"plane", WF_COLLIDER_PLANE, 0.0f},
               {"sphere", WF_COLLIDER_SPHERE, 0.5f},
               {"box", WF_COLLIDER_BOX, 0.25f},
               {"capsule", WF_COLLIDER_CAPSULE, 0.2f}};
  for (int k = 0; k < 4; k++) {
    wf_particles_desc d = wf_particles_desc_default();
    d.capacity = 1;
    d.substeps = 64;
    wf_particles *ps;
    d.devices[0] = th_dev0;
    CHECK_OK(wf_particles_create(&d, &ps));
    float p0[1][4] = {{0.0f, cases[k].top + 0.3f, 0.0f, r}}, v0[1][4] = {{0, 0, 0, 1.9f}};
    CHECK_OK(wf_particles_add(ps, 1, p0, v0, 0, NULL));
    wf_collider_desc c = wf_collider_desc_default();
    c.name = cases[k].name;
    c.type = cases[k].type;
    c.restitution = 0.0f;
    c.stiffness = 1e5f;
    c.radius = cases[k].type == WF_COLLIDER_SPHERE ? 0.5f : 0.2f;
    c.half_extents[0] = 0.5f, c.half_extents[1] = 0.25f, c.half_extents[2] = 0.5f;
    c.p0[0] = -0.5f, c.p1[0] = 0.5f;
    CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
    CHECK_OK(wf_particles_step_frames(ps, 60));
    float p[1][4], v[1][4];
    CHECK_OK(wf_particles_download(ps, p, v));
    printf("  %-8s rest height %.6f (surface + r = %.6f)\n", cases[k].name, p[0][1],
           cases[k].top + r);
    CHECK_NEAR(p[0][1], cases[k].top + r, 2e-4);
    CHECK_NEAR(p[0][0], 0.0, 1e-6);
    CHECK_NEAR(v[0][1], 0.0, 1e-3);
    wf_particles_destroy(ps);
  }
}

/* A kinematic plane rising at 0.2 m/s carries a resting particle: after 1 s the particle moves
 * with it (v_y = 0.2 within 1e-3: the dashpot is critical, transients decay in ~10 ms) and sits
 * on its surface (y = 0.2 + r, within the 2e-4 m sag tolerance of rest_on_colliders). */
TEST(kinematic_plane) {
  const float g[3] = {0.0f, -9.81f, 0.0f}, p0[4] = {0.0f, 0.05f, 0.0f, 0.05f},
              v0[4] = {0.0f, 0.0f, 0.0f, 1.9f};
  wf_particles *ps = one_particle(64, 1.0f / 60.0f, g, p0, v0);
  REQUIRE(ps);
  wf_collider_desc c = wf_collider_desc_default();
  c.restitution = 0.0f;
  c.stiffness = 1e5f;
  c.velocity[1] = 0.2f;
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 60));
  float p[1][4], v[1][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  CHECK_NEAR(v[0][1], 0.2, 1e-3);
  CHECK_NEAR(p[0][1], 0.2 + 0.05, 2e-4);
  wf_particles_destroy(ps);
}

/* The benchmark's settings (dt = 1/3840 s, particle stiffness 8000, r = 0.1, density 1000, so
 * m = 4.2 kg) and a particle thrown at the plane at 20 m/s: it penetrates deep (v sqrt(m/k) ~ 0.46
 * m, more than its radius) but the plane is a half-space, so it is pushed back out and ends resting
 * on top: y = r - m g / k (the sag, 5 mm) within 1 mm. */
TEST(no_tunnelling) {
  wf_particles_desc d = wf_particles_desc_default();
  d.capacity = 1;
  d.substeps = 64;
  wf_particles *ps;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_particles_create(&d, &ps));
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 8000.0f;
  m.damping = 2.0f;
  m.friction = 1.0f;
  CHECK_OK(wf_particles_set_material(ps, 0, &m));
  float mass = 1000.0f * 4.0f / 3.0f * 3.14159265f * 0.001f;
  float p0[1][4] = {{0.0f, 0.5f, 0.0f, 0.1f}}, v0[1][4] = {{0.0f, -20.0f, 0.0f, 1.0f / mass}};
  CHECK_OK(wf_particles_add(ps, 1, p0, v0, 0, NULL));
  wf_collider_desc c = wf_collider_desc_default();
  c.restitution = 0.2f;
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  float ymin = 1e9f;
  for (int f = 0; f < 120; f++) {
    CHECK_OK(wf_particles_step_frames(ps, 1));
    float p[1][4];
    CHECK_OK(wf_particles_download(ps, p, NULL));
    ymin = fminf(ymin, p[0][1]);
  }
  float p[1][4];
  CHECK_OK(wf_particles_download(ps, p, NULL));
  printf("  deepest centre height %.3f m, final %.4f m\n", ymin, p[0][1]);
  CHECK_NEAR(p[0][1], 0.1 - mass * 9.81 / 8000.0, 1e-3);
  wf_particles_destroy(ps);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(free_fall),          TH_TEST(restitution_zero_gravity),
                                  TH_TEST(bounce_restitution), TH_TEST(momentum_zero_gravity),
                                  TH_TEST(resting_pile),       TH_TEST(rest_on_colliders),
                                  TH_TEST(kinematic_plane),    TH_TEST(no_tunnelling)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
