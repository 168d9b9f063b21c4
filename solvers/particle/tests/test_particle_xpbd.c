/* XPBD contacts: analytic references for friction on an incline (static: no creep below
 * tan θ = μs; dynamic: a = g (sin θ − μk cos θ)), restitution against a plane, free fall, and
 * stability at a large time step (one substep per 60 Hz frame) where the explicit DEM model with
 * the same stiffness is far past its stability limit. Also: two runs bitwise identical, graph
 * replay equal to the uncaptured path. */
#include "harness.h"
#include "scenes.h"
#include "weft/particles.h"

#define PI 3.14159265358979323846

static wf_particles *make(int substeps, float gravity_y) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "xpbd";
  d.capacity = 16;
  d.substeps = substeps;
  d.gravity[1] = gravity_y;
  d.contact_model = WF_CONTACT_XPBD;
  wf_particles *ps = NULL;
  d.devices[0] = th_dev0;
  if (wf_particles_create(&d, &ps) != WF_OK) TH_FAIL("create: %s", wf_last_error());
  return ps;
}

/* A single particle at rest on a plane inclined by theta about z, touching it; its material's
 * rolling resistance mu_r. */
static wf_particles *incline(double theta, float mu_s, float mu_k, float mu_r) {
  wf_particles *ps = make(16, -9.81f);
  if (!ps) return NULL;
  wf_particle_material m = wf_particle_material_default();
  m.rolling_friction = mu_r;
  if (wf_particles_set_material(ps, 0, &m) != WF_OK) TH_FAIL("material: %s", wf_last_error());
  wf_collider_desc c = wf_collider_desc_default();
  c.name = "incline";
  c.normal[0] = (float)-sin(theta), c.normal[1] = (float)cos(theta), c.normal[2] = 0.0f;
  c.friction = mu_k, c.static_friction = mu_s, c.restitution = 0.0f;
  float r = 0.05f;
  float p[1][4] = {{c.normal[0] * r, c.normal[1] * r, 0.0f, r}};
  float v[1][4] = {{0, 0, 0, 1.0f}};
  if (wf_particles_add_collider(ps, &c, NULL) != WF_OK ||
      wf_particles_add(ps, 1, p, v, 0, NULL) != WF_OK) {
    TH_FAIL("incline: %s", wf_last_error());
    wf_particles_destroy(ps);
    return NULL;
  }
  return ps;
}

/* tan 20° = 0.364 < μs = 0.5 and < μr = 0.5 (a free sphere on a slope rolls: rolling resistance
 * is what holds it, DEM's rests_on_a_slope test): the particle does not creep over 2 s: less than
 * 1e-6 m. Static friction and the rolling limit stop the contact point's slip and the rotation on
 * velocities each substep (nothing is left to round away), so the only motion is the float
 * rounding of the collider projection along the normal. */
TEST(static_friction_holds) {
  wf_particles *ps = incline(20.0 * PI / 180.0, 0.5f, 0.3f, 0.5f);
  REQUIRE(ps);
  float p0[1][4], p1[1][4], v[1][4], w[1][4];
  CHECK_OK(wf_particles_step_frames(ps, 6)); /* settling onto the incline (0.1 s) */
  CHECK_OK(wf_particles_download(ps, p0, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 120));
  CHECK_OK(wf_particles_download(ps, p1, v));
  CHECK_OK(wf_particles_download_omega(ps, w));
  double d = sqrt(pow(p1[0][0] - p0[0][0], 2) + pow(p1[0][1] - p0[0][1], 2));
  printf("  moved %.3g m in 2 s at 20 degrees (mu_s 0.5, mu_r 0.5), omega %.3g rad/s\n", d,
         (double)w[0][2]);
  CHECK(d < 1e-6);
  CHECK(fabsf(v[0][0]) < 1e-4f && fabsf(v[0][1]) < 1e-4f && fabsf(w[0][2]) < 1e-3f);
  wf_particles_destroy(ps);
}

/* tan 30° = 0.577 > μs = 0.5: it slides with a = g (sin θ − μk cos θ) = 2.356 m/s² for μk = 0.3;
 * rolling resistance μr = 0.5 >= μk holds its rotation (the friction torque μk r N is within
 * μr r N), so it slides like a block. Friction acts on the velocity: each substep takes exactly
 * h μk g cos θ off it, so after 1 s, v = a; 1% allowed (float rounding of the velocity sums). */
TEST(dynamic_friction_slides) {
  double th = 30.0 * PI / 180.0;
  wf_particles *ps = incline(th, 0.5f, 0.3f, 0.5f);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 60));
  float p[1][4], v[1][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  double a = 9.81 * (sin(th) - 0.3 * cos(th));
  double speed = sqrt((double)v[0][0] * v[0][0] + (double)v[0][1] * v[0][1]);
  double vn = -sin(th) * v[0][0] + cos(th) * v[0][1]; /* along the normal: none */
  printf("  speed after 1 s %.5f m/s, analytic %.5f\n", speed, a);
  CHECK_NEAR(speed, a, 1e-2 * a);
  CHECK(fabs(vn) < 1e-3);
  wf_particles_destroy(ps);
}

/* A free sphere (μr = 0) on 30° with μ = 0.1 < 2/7 tan θ = 0.165 slides and spins up: a = g (sin θ
 * − μ cos θ) = 4.055 m/s², angular acceleration 5/2 μ g cos θ / r = 42.5 rad/s² (r = 0.05); 1%. */
TEST(sliding_sphere_spins_up) {
  double th = 30.0 * PI / 180.0, mu = 0.1, g = 9.81, r = 0.05;
  wf_particles *ps = incline(th, (float)mu, (float)mu, 0.0f);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 60));
  float p[1][4], v[1][4], w[1][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  CHECK_OK(wf_particles_download_omega(ps, w));
  double a = g * (sin(th) - mu * cos(th)), alpha = 2.5 * mu * g * cos(th) / r;
  double speed = sqrt((double)v[0][0] * v[0][0] + (double)v[0][1] * v[0][1]);
  double spin = fabs((double)w[0][2]);
  printf("  speed after 1 s %.5f m/s (%.5f), spin %.4f rad/s (%.4f)\n", speed, a, spin, alpha);
  CHECK_NEAR(speed, a, 1e-2 * a);
  CHECK_NEAR(spin, alpha, 1e-2 * alpha);
  CHECK(spin * r < speed); /* still slipping */
  wf_particles_destroy(ps);
}

/* μ = 0.5 >= 2/7 tan 20° = 0.104 (μr = 0): the sphere rolls without slipping at a = 5/7 g sin θ =
 * 2.397 m/s², ω r = v; 1% (the first substep slips while the contact forms). */
TEST(rolls_without_slipping_at_five_sevenths) {
  double th = 20.0 * PI / 180.0, g = 9.81, r = 0.05;
  wf_particles *ps = incline(th, 0.5f, 0.5f, 0.0f);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 60));
  float p[1][4], v[1][4], w[1][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  CHECK_OK(wf_particles_download_omega(ps, w));
  double a = 5.0 / 7.0 * g * sin(th);
  double speed = sqrt((double)v[0][0] * v[0][0] + (double)v[0][1] * v[0][1]);
  double wr = fabs((double)w[0][2]) * r;
  printf("  speed after 1 s %.5f m/s (5/7 g sin θ · 1 s = %.5f), ω r = %.5f\n", speed, a, wr);
  CHECK_NEAR(speed, a, 1e-2 * a);
  CHECK_NEAR(wr, speed, 1e-3 * speed);
  wf_particles_destroy(ps);
}

/* A sphere rolling at 1 m/s on level ground with rolling resistance μr = 0.05 slows at 5/7 μr g
 * (the rolling limit μr r m g acting on the rolling sphere, I = 2/5 m r²): after 0.5 s,
 * v = 1 − 0.5 · 5/7 · 0.05 · 9.81 = 0.8248 m/s; 1% of the change; it keeps rolling (ω r = v). */
TEST(rolling_resistance_decelerates) {
  wf_particles *ps = make(16, -9.81f);
  REQUIRE(ps);
  wf_particle_material m = wf_particle_material_default();
  m.rolling_friction = 0.05f;
  CHECK_OK(wf_particles_set_material(ps, 0, &m));
  wf_collider_desc c = wf_collider_desc_default();
  c.restitution = 0.0f;
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  float r = 0.05f, p[1][4] = {{0, r, 0, r}}, v[1][4] = {{1.0f, 0, 0, 1}};
  CHECK_OK(wf_particles_add(ps, 1, p, v, 0, NULL));
  size_t gb = wf_particles_granular_state_bytes(ps); /* the spin: in the granular state */
  unsigned char *blob = calloc(1, gb);
  REQUIRE(blob);
  CHECK_OK(wf_particles_granular_state_get(ps, blob, gb));
  float w0[4] = {0.0f, 0.0f, -1.0f / r, 0.0f};
  memcpy(blob + gb - 16 - 8 * 32, w0, 16); /* the one particle's omega, before its 8 slots */
  CHECK_OK(wf_particles_granular_state_set(ps, blob, gb));
  free(blob);
  CHECK_OK(wf_particles_step_frames(ps, 30));
  float q[1][4], u[1][4], w[1][4];
  CHECK_OK(wf_particles_download(ps, q, u));
  CHECK_OK(wf_particles_download_omega(ps, w));
  double want = 1.0 - 0.5 * 5.0 / 7.0 * 0.05 * 9.81;
  printf("  v = %.5f m/s (1 - 5/7 μr g t = %.5f), ω r = %.5f\n", u[0][0], want, -w[0][2] * r);
  CHECK_NEAR(u[0][0], want, 0.01 * (1.0 - want));
  CHECK_NEAR(-w[0][2] * r, u[0][0], 1e-3);
  wf_particles_destroy(ps);
}

/* Dropped from 1 m onto a plane with restitution e = 0.5: the first rebound rises to e² of the
 * fall height. Tolerance 3%: the impact is resolved at substep resolution (h = 1/960 s, at
 * 4.4 m/s about 5 mm of the 1 m). */
TEST(bounce_restitution) {
  wf_particles *ps = make(16, -9.81f);
  REQUIRE(ps);
  wf_collider_desc c = wf_collider_desc_default();
  c.restitution = 0.5f;
  CHECK_OK(wf_particles_add_collider(ps, &c, NULL));
  float r = 0.05f, h0 = 1.0f;
  float p[1][4] = {{0, r + h0, 0, r}}, v[1][4] = {{0, 0, 0, 1}};
  CHECK_OK(wf_particles_add(ps, 1, p, v, 0, NULL));
  double peak = 0.0;
  int bounced = 0;
  for (int f = 0; f < 120; f++) {
    CHECK_OK(wf_particles_step_frames(ps, 1));
    float q[1][4], w[1][4];
    CHECK_OK(wf_particles_download(ps, q, w));
    if (w[0][1] > 0.0f) bounced = 1;
    if (bounced) peak = fmax(peak, q[0][1] - r);
    if (bounced && w[0][1] < 0.0f && peak > 0.0) break;
  }
  printf("  rebound %.4f m, e^2 h0 = %.4f m\n", peak, 0.25 * h0);
  CHECK(bounced);
  CHECK_NEAR(peak, 0.25 * h0, 0.03 * 0.25 * h0);
  wf_particles_destroy(ps);
}

/* Free fall: the predicted position x + h(v + h g) is semi-implicit Euler, so after n substeps
 * y = y0 + v0 t + ½ g t² + ½ g h t exactly (first-order error ½ g h t); float rounding over 960
 * substeps stays below 1e-5 m. */
TEST(free_fall) {
  wf_particles *ps = make(16, -9.81f);
  REQUIRE(ps);
  float p[1][4] = {{0, 10, 0, 0.05f}}, v[1][4] = {{0, 2, 0, 1}};
  CHECK_OK(wf_particles_add(ps, 1, p, v, 0, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 60));
  float q[1][4];
  CHECK_OK(wf_particles_download(ps, q, NULL));
  double t = 1.0, h = 1.0 / 960.0;
  double want = 10.0 + 2.0 * t - 0.5 * 9.81 * t * t - 0.5 * 9.81 * h * t;
  CHECK_NEAR(q[0][1], want, 1e-4);
  wf_particles_destroy(ps);
}

/* A particle born touching another: from the substep of its birth on the two get equal and
 * opposite corrections, so the momentum they share stays zero. Two equal particles without
 * gravity, one at rest from the start, the other born at 3.5 substeps (so in the 4th)
 * overlapping it by 0.1 mm, at rest. After a frame their velocities are exact negatives (the
 * pair's corrections are odd in the normal: no tolerance), and not zero. Until 2026-11-29 the
 * older particle read the newborn's stored inverse mass, still negated at its birth substep, and
 * took no correction there. */
TEST(a_particle_born_touching_another_pushes_it_back_at_once) {
  wf_particles *ps = make(16, 0.0f);
  REQUIRE(ps);
  float p0[1][4] = {{0, 1, 0, 0.05f}}, v0[1][4] = {{0, 0, 0, 1}};
  CHECK_OK(wf_particles_add(ps, 1, p0, v0, 0, NULL));
  float p1[1][4] = {{0.0999f, 1, 0, 0.05f}}, v1[1][4] = {{0, 0, 0, 1}};
  float birth[1] = {(float)(3.5 / 960.0)};
  CHECK_OK(
      wf_particles_add_timed(ps, 1, (const float(*)[4])p1, (const float(*)[4])v1, birth, 0, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 1));
  float q[2][4], v[2][4];
  CHECK_OK(wf_particles_download(ps, q, v));
  CHECK(v[0][0] < 0.0f && v[1][0] > 0.0f);
  for (int k = 0; k < 3; k++)
    if (v[0][k] != -v[1][k])
      TH_FAIL("velocity %d: %.9g and %.9g are not exact negatives", k, (double)v[0][k],
              (double)v[1][k]);
  wf_particles_destroy(ps);
}

static wf_status pile_run(int model, int substeps, int frames, float *top, float *bottom,
                          wf_particles_stats *s) {
  scene_contact_model = model, scene_substeps = substeps, scene_stiffness = 1e8f;
  wf_particles *ps = NULL;
  wf_status st = scene_pile(th_dev0, 6, 6, false, &ps);
  scene_contact_model = WF_CONTACT_DEM, scene_substeps = 0, scene_stiffness = 0.0f;
  if (st == WF_OK) st = wf_particles_step_frames(ps, frames);
  uint32_t n = wf_particles_count(ps);
  float(*p)[4] = malloc((size_t)n * 16 + 16);
  if (st == WF_OK) st = wf_particles_download(ps, p, NULL);
  if (st == WF_OK) st = wf_particles_stats_get(ps, s);
  *top = 0.0f, *bottom = 1e9f;
  for (uint32_t i = 0; st == WF_OK && i < n; i++)
    *bottom = fminf(*bottom, p[i][1] - p[i][3]), *top = fmaxf(*top, p[i][1]);
  free(p);
  wf_particles_destroy(ps);
  return st;
}

/* Near-rigid contacts (k = 1e8 N/m, m = 0.52 kg): explicit DEM needs h < 2 sqrt(m/k) = 0.14 ms.
 * At 4 substeps per 60 Hz frame (h = 4.2 ms, 30x that limit) DEM blows up, while XPBD settles a
 * 6 x 6 x 6 lattice between walls with nothing below the ground (the collider projection is
 * exact) and its grains at rest. The lattice (columns of spheres on spheres, top centre at
 * 0.55 m) is not a stable packing for spheres that roll: it collapses towards a random close
 * packing (216 spheres at a packing fraction of 0.64 in the 0.66 m box fill 0.41 m: top centre
 * ~0.45 m); the top is checked between those two, 0.40 to 0.58 m. Even at one substep per frame (h
 * = 16.7 ms) XPBD stays bounded: with one Jacobi iteration per substep the pile then compresses
 * (printed, bounded loosely). */
TEST(large_step_stable) {
  float top, bottom;
  wf_particles_stats s;
  CHECK_OK(pile_run(WF_CONTACT_XPBD, 4, 180, &top, &bottom, &s));
  printf("  xpbd, h = 4.2 ms: top %.3f m, lowest bottom %.2g m, max speed %.3g m/s\n", top, bottom,
         s.max_speed);
  CHECK(top > 0.40f && top < 0.58f);
  CHECK(bottom >= -1e-5f);
  CHECK(s.max_speed < 1.0);
  wf_status dem = pile_run(WF_CONTACT_DEM, 4, 30, &top, &bottom, &s);
  printf("  dem,  h = 4.2 ms: %s\n", dem == WF_OK ? "finite" : wf_last_error());
  CHECK(dem != WF_OK || s.max_speed > 100.0);
  wf_clear_error();
  CHECK_OK(pile_run(WF_CONTACT_XPBD, 1, 180, &top, &bottom, &s));
  printf("  xpbd, h = 16.7 ms: top %.3f m, lowest bottom %.2g m, max speed %.3g m/s\n", top, bottom,
         s.max_speed);
  CHECK(top > 0.15f && top < 0.7f);
  CHECK(bottom >= -1e-5f);
  CHECK(s.max_speed < 1.0);
}

/* The column collapse: a jittered column of 3 x 12 x 3 grains (radius 0.05, k = 1e4 N/m,
 * μ = 0.5 on a μ = 0.5 ground, μr = 0.2, 8 substeps at 60 Hz) released in the open. Grains run
 * out beyond x = 0.3 m, and after 4 s every grain is at rest: kinetic energy below 1e-6 of
 * m g r per grain, summed, and no grain faster than 1 mm/s (measured: 2e-10 and 3e-5 m/s). With
 * the friction as position corrections (before), grains of this scene still moved at 0.5 to
 * 1.8 m/s after 4 s; on velocities each substep takes h μ g off a slide. */
TEST(column_collapse_comes_to_rest) {
  wf_particles *ps = make(8, -9.81f);
  REQUIRE(ps);
  wf_particle_material m = wf_particle_material_default();
  m.friction = 0.5f, m.rolling_friction = 0.2f;
  CHECK_OK(wf_particles_set_material(ps, 0, &m));
  wf_collider_desc g = wf_collider_desc_default();
  g.friction = 0.5f, g.restitution = 0.0f;
  CHECK_OK(wf_particles_add_collider(ps, &g, NULL));
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = 0.05f, e.spacing = 0.105f, e.jitter = 0.002f, e.seed = 5;
  e.half_extents[0] = e.half_extents[2] = 1.5f * 0.105f, e.half_extents[1] = 6.0f * 0.105f;
  e.center[1] = e.half_extents[1] + 0.01f;
  CHECK_OK(wf_particles_emit(ps, &e, NULL, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 240));
  uint32_t n = wf_particles_count(ps);
  float(*p)[4] = malloc((size_t)n * 16);
  REQUIRE(p);
  CHECK_OK(wf_particles_download(ps, p, NULL));
  float reach = 0.0f;
  for (uint32_t i = 0; i < n; i++)
    reach = fmaxf(reach, fmaxf(fabsf(p[i][0]), fabsf(p[i][2])));
  wf_particles_stats st;
  CHECK_OK(wf_particles_stats_get(ps, &st));
  double mass = 1000.0 * 4.0 / 3.0 * PI * 0.05 * 0.05 * 0.05; /* the emitter's density */
  double scale = n * mass * 9.81 * 0.05;                      /* m g r per grain */
  printf("  %u grains, reach %.3f m; after 4 s: kinetic %.3g J (%.3g of m g r n), max speed %.3g "
         "m/s\n",
         n, reach, st.kinetic_energy + st.rotational_energy,
         (st.kinetic_energy + st.rotational_energy) / scale, st.max_speed);
  CHECK(reach > 0.3f);
  CHECK((st.kinetic_energy + st.rotational_energy) < 1e-6 * scale);
  CHECK(st.max_speed < 1e-3);
  free(p);
  wf_particles_destroy(ps);
}

/* Determinism: the same XPBD scene twice, and captured vs one-by-one, are bitwise identical. */
TEST(bitwise_repeatable) {
  float *out[3] = {NULL, NULL, NULL};
  uint32_t n = 0;
  scene_contact_model = WF_CONTACT_XPBD;
  for (int k = 0; k < 3; k++) {
    wf_particles *ps = NULL;
    if (scene_colliders(th_dev0, k == 2, &ps) != WF_OK) break;
    n = wf_particles_count(ps);
    out[k] = malloc((size_t)n * 32);
    if (wf_particles_step_frames(ps, 20) != WF_OK ||
        wf_particles_download(ps, (float(*)[4])out[k], (float(*)[4])(out[k] + 4 * n)) != WF_OK)
      TH_FAIL("run %d: %s", k, wf_last_error());
    wf_particles_destroy(ps);
  }
  scene_contact_model = WF_CONTACT_DEM;
  REQUIRE(out[0] && out[1] && out[2]);
  CHECK(memcmp(out[0], out[1], (size_t)n * 32) == 0);
  CHECK(memcmp(out[0], out[2], (size_t)n * 32) == 0);
  for (int k = 0; k < 3; k++)
    free(out[k]);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(static_friction_holds),
                                  TH_TEST(dynamic_friction_slides),
                                  TH_TEST(sliding_sphere_spins_up),
                                  TH_TEST(rolls_without_slipping_at_five_sevenths),
                                  TH_TEST(rolling_resistance_decelerates),
                                  TH_TEST(bounce_restitution),
                                  TH_TEST(free_fall),
                                  TH_TEST(a_particle_born_touching_another_pushes_it_back_at_once),
                                  TH_TEST(large_step_stable),
                                  TH_TEST(column_collapse_comes_to_rest),
                                  TH_TEST(bitwise_repeatable)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
