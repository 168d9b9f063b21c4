/* Cloth contact (wf_cloth_desc.contact): vertex–triangle and edge–edge contact between layers.
 *  - a long strip dropped on the ground piles into folds on itself: no intersecting triangle
 *    pair (wf_cloth_intersections, exact) at the end of any frame, both integrators; without
 *    contact the pile does intersect (so the check can fail);
 *  - a small sheet thrown fast (6 m/s) at a thin pinned sheet does not pass through: no
 *    intersection at any frame end and every vertex of it ends above the thin sheet; without
 *    contact it passes through;
 *  - a sheet dropped across a thin pole folds over it without intersecting itself;
 *  - friction: a sheet lying on a fixed sheet under gravity tilted by θ (a slope of angle θ)
 *    stays put for tan θ < μs and slides for tan θ > μs, with an acceleration between the
 *    frictionless g sin θ and Coulomb's g (sin θ - μk cos θ) less a margin (see the test);
 *  - results are bitwise reproducible run to run, captured or not.
 * Meshes are built as one cloth of several pieces (grids), which is how separate cloths collide. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

enum { MAXV = 1200, MAXT = 2200 };

#include "cloth_pieces.h" /* mesh, add_grid */

static bool g_no_graph;  /* contact_bitwise: frames without a graph */
static wf_device *g_dev; /* the device the cloths run on; NULL: th_dev0 */

static wf_cloth_desc layer_desc(int integrator, bool contact) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.no_graph = g_no_graph;
  d.name = "layers";
  d.devices[0] = g_dev ? g_dev : th_dev0;
  d.integrator = integrator;
  d.iterations = integrator == WF_CLOTH_XPBD ? 4 : 1;
  d.substeps = integrator == WF_CLOTH_XPBD ? 16 : 32;
  d.contact = contact;
  d.damping = 0.5f;
  /* a light cotton, 0.15 kg/m², stiff enough in mass-spring for the substep */
  pieces_cotton(&d.material);
  return d;
}

static const float X[3] = {1, 0, 0}, Y[3] = {0, 1, 0}, Z[3] = {0, 0, 1};

/* ---- folds ---------------------------------------------------------------------------------- */

/* A 4 x 32 strip 2.4 cm apart (0.74 m), hanging with its low end 2 cm above the ground, falls and
 * piles up: returns the largest count of intersecting pairs over the frames' ends. */
static uint64_t fold_run(int integrator, bool contact, int frames, float (*end)[4]) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c[3] = {0.0f, 0.02f + 0.5f * 31 * 0.024f, 0.0f};
  add_grid(&m, 4, 32, 0.024f, c, X, Y);
  /* a small tilt so it folds rather than standing: the top leans 5 cm along z */
  for (uint32_t i = 0; i < m.nv; i++)
    m.v[i][2] += 0.05f * m.v[i][1];
  wf_cloth_desc d = layer_desc(integrator, contact);
  wf_cloth *cl;
  wf_status st = pieces_create(&d, &m, &cl);
  if (st != WF_OK) {
    TH_FAIL("fold: %s", wf_last_error());
    return UINT64_MAX;
  }
  wf_collider_desc g = scene_ground(0.0f);
  uint64_t worst = 0;
  if (wf_cloth_add_collider(cl, &g, NULL) != WF_OK) TH_FAIL("%s", wf_last_error());
  for (int f = 0; f < frames; f++) {
    uint64_t n = 0;
    if (wf_cloth_step_frames(cl, 1) != WF_OK || wf_cloth_intersections(cl, &n) != WF_OK) {
      TH_FAIL("fold: %s", wf_last_error());
      break;
    }
    if (n > worst) worst = n;
  }
  if (end && wf_cloth_download_local(cl, end, NULL) != WF_OK) TH_FAIL("%s", wf_last_error());
  wf_cloth_destroy(cl);
  return worst;
}

static void folds(int integrator) {
  static float a[MAXV][4];
  uint64_t with = fold_run(integrator, true, 24, a);
  CHECK_EQ_INT(with, 0);
  /* it did fall and pile: the top end came down below half its starting height (0.76 m) */
  CHECK(a[128 - 1][1] < 0.35f);
  uint64_t without = fold_run(integrator, false, 24, NULL);
  CHECK(without > 0);
}

TEST(folds_no_intersection_xpbd) { folds(WF_CLOTH_XPBD); }
TEST(folds_no_intersection_springs) { folds(WF_CLOTH_SPRINGS); }

/* ---- fast fall onto a thin sheet ------------------------------------------------------------ */

/* A 12 x 12 sheet (0.55 m) at y = 0 pinned on its border, and a 6 x 6 one (0.25 m) 5 cm above
 * it moving down at 6 m/s. */
static void fast_fall(int integrator, bool contact, uint64_t *worst, float *lowest) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c0[3] = {0, 0, 0}, c1[3] = {0.01f, 0.05f, 0.013f};
  add_grid(&m, 12, 12, 0.05f, c0, X, Z);
  add_grid(&m, 6, 6, 0.05f, c1, X, Z);
  wf_cloth_desc d = layer_desc(integrator, contact);
  wf_cloth *cl;
  *worst = UINT64_MAX;
  CHECK_OK(pieces_create(&d, &m, &cl));
  for (int j = 0; j < 12; j++)
    for (int i = 0; i < 12; i++)
      if (i == 0 || j == 0 || i == 11 || j == 11)
        CHECK_OK(wf_cloth_pin(cl, (uint32_t)(j * 12 + i)));
  static float p[MAXV][4], v[MAXV][4];
  CHECK_OK(wf_cloth_download(cl, p, v));
  for (uint32_t i = 144; i < m.nv; i++)
    v[i][1] = -6.0f;
  CHECK_OK(wf_cloth_set_state(cl, (const float(*)[4])p, (const float(*)[4])v, 0.0, 0));
  *worst = 0;
  for (int f = 0; f < 20; f++) {
    uint64_t n = 0;
    CHECK_OK(wf_cloth_step_frames(cl, 1));
    CHECK_OK(wf_cloth_intersections(cl, &n));
    if (n > *worst) *worst = n;
  }
  CHECK_OK(wf_cloth_download(cl, p, NULL));
  /* the height of the small sheet above the thin one at its own x, z: the thin sheet's lowest
   * vertex bounds it from below well enough (it sags, the small one rests on its middle) */
  float low_thin = 1e9f, low_small = 1e9f;
  for (uint32_t i = 0; i < 144; i++)
    low_thin = fminf(low_thin, p[i][1]);
  for (uint32_t i = 144; i < m.nv; i++)
    low_small = fminf(low_small, p[i][1]);
  *lowest = low_small - low_thin;
  wf_cloth_destroy(cl);
}

static void no_pass_through(int integrator) {
  uint64_t worst;
  float gap;
  fast_fall(integrator, true, &worst, &gap);
  CHECK_EQ_INT(worst, 0);
  /* every vertex of the small sheet stays above the thin sheet's lowest point (it rests on it) */
  CHECK(gap > 0.0f);
  fast_fall(integrator, false, &worst, &gap);
  CHECK(gap < -0.1f); /* without contact it fell through and on */
}

TEST(fast_sheet_does_not_pass_xpbd) { no_pass_through(WF_CLOTH_XPBD); }
TEST(fast_sheet_does_not_pass_springs) { no_pass_through(WF_CLOTH_SPRINGS); }

/* ---- a sheet dropped across a thin pole ----------------------------------------------------- */

/* A 14 x 14 sheet (0.52 m) falls across a capsule 1 cm thick and folds over it, its two halves
 * hanging down on either side and onto the ground, where they fold onto themselves: no
 * intersecting pair at any frame end, and it did drape (vertices far below the pole on both
 * sides of it). */
TEST(sheet_on_thin_pole_xpbd) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c[3] = {0.0f, 0.35f, 0.02f};
  add_grid(&m, 14, 14, 0.04f, c, X, Z);
  wf_cloth_desc d = layer_desc(WF_CLOTH_XPBD, true);
  wf_cloth *cl;
  CHECK_OK(pieces_create(&d, &m, &cl));
  wf_collider_desc pole;
  memset(&pole, 0, sizeof pole);
  pole.name = "pole", pole.type = WF_COLLIDER_CAPSULE, pole.radius = 0.01f, pole.friction = 0.5f;
  pole.p0[0] = -0.5f, pole.p0[1] = 0.3f, pole.p1[0] = 0.5f, pole.p1[1] = 0.3f;
  wf_collider_desc g = scene_ground(0.0f);
  CHECK_OK(wf_cloth_add_collider(cl, &pole, NULL));
  CHECK_OK(wf_cloth_add_collider(cl, &g, NULL));
  uint64_t worst = 0;
  for (int f = 0; f < 30; f++) {
    uint64_t n = 0;
    CHECK_OK(wf_cloth_step_frames(cl, 1));
    CHECK_OK(wf_cloth_intersections(cl, &n));
    if (n > worst) worst = n;
  }
  CHECK_EQ_INT(worst, 0);
  static float p[MAXV][4];
  CHECK_OK(wf_cloth_download(cl, p, NULL));
  float front = 1.0f, back = 1.0f; /* the lowest vertex on each side of the pole (z) */
  for (uint32_t i = 0; i < m.nv; i++) {
    if (p[i][2] > 0.0f) front = fminf(front, p[i][1]);
    if (p[i][2] < 0.0f) back = fminf(back, p[i][1]);
  }
  CHECK(front < 0.15f && back < 0.15f); /* both halves hang well below the pole (y = 0.3) */
  wf_cloth_destroy(cl);
}

/* ---- attachments --------------------------------------------------------------------------- */

/* A 10 x 10 sheet (0.45 m) held at two corners by a small box moving down at 0.5 m/s onto the
 * ground: the sheet lands and the held corners are lowered onto the pile it makes, folding it
 * over itself. No intersecting pair at any frame end (the attached corners move as told, the
 * rest is bounded). */
TEST(attached_corners_lowered_xpbd) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c[3] = {0.0f, 0.3f, 0.0f};
  add_grid(&m, 10, 10, 0.05f, c, X, Y); /* hanging: rows along y */
  wf_cloth_desc d = layer_desc(WF_CLOTH_XPBD, true);
  wf_cloth *cl;
  CHECK_OK(pieces_create(&d, &m, &cl));
  wf_collider_desc hand;
  memset(&hand, 0, sizeof hand);
  hand.name = "hand", hand.type = WF_COLLIDER_BOX;
  hand.center[1] = 0.6f, hand.half_extents[0] = 0.3f, hand.half_extents[1] = 0.01f;
  hand.half_extents[2] = 0.01f, hand.velocity[1] = -0.5f;
  wf_collider_desc g = scene_ground(0.0f);
  uint32_t k_hand;
  CHECK_OK(wf_cloth_add_collider(cl, &hand, &k_hand));
  CHECK_OK(wf_cloth_add_collider(cl, &g, NULL));
  CHECK_OK(wf_cloth_attach(cl, 90, k_hand)); /* the top row's two ends */
  CHECK_OK(wf_cloth_attach(cl, 99, k_hand));
  uint64_t worst = 0;
  for (int f = 0; f < 36; f++) {
    uint64_t n = 0;
    CHECK_OK(wf_cloth_step_frames(cl, 1));
    CHECK_OK(wf_cloth_intersections(cl, &n));
    if (n > worst) worst = n;
  }
  static float p[MAXV][4];
  CHECK_OK(wf_cloth_download(cl, p, NULL));
  CHECK_EQ_INT(worst, 0);
  CHECK(p[90][1] < 0.35f); /* the hand came down 0.3 m with the corners */
  wf_cloth_destroy(cl);
}

/* ---- free fall is not slowed ---------------------------------------------------------------- */

/* A flat 8 x 8 sheet (10 cm edges) falls freely for 1 s with contact on: the motion bound follows
 * the speed (the reach grows with the substep's largest displacement), so nothing near it means
 * no slowing: its velocity is g t = 9.81 m/s to 0.1% (the integrator's own error is far below:
 * every vertex moves alike, the sheet keeps its shape). A fixed reach of 2.5 thicknesses would
 * have held it at 0.4 x 12.5 mm a substep = 4.8 m/s. */
TEST(free_fall_not_slowed_xpbd) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c[3] = {0, 10, 0};
  add_grid(&m, 8, 8, 0.1f, c, X, Z);
  wf_cloth_desc d = layer_desc(WF_CLOTH_XPBD, true);
  d.damping = 0.0f;
  wf_cloth *cl;
  CHECK_OK(pieces_create(&d, &m, &cl));
  CHECK_OK(wf_cloth_step_frames(cl, 60));
  static float v[MAXV][4];
  CHECK_OK(wf_cloth_download(cl, NULL, v));
  double mean = 0.0;
  for (uint32_t i = 0; i < m.nv; i++)
    mean += v[i][1] / (double)m.nv;
  CHECK_NEAR(mean, -9.81, 9.81e-3);
  wf_cloth_destroy(cl);
}

/* ---- with particle coupling and a moving attachment ------------------------------------------ */

/* Two pieces, a 12 x 12 sheet pinned on its border and a free 8 x 8 one 3 cm above it, coupled
 * with a 0.2 kg ball (radius 0.06) dropped onto them: the frames run through the particle
 * solver (wf_particles_step_frames steps the cloth substep by substep, contact included). The
 * ball presses the upper sheet onto the lower: no intersecting pair at any frame end, both sag,
 * and the ball rests in them (coupling holds it). */
TEST(coupled_ball_presses_layers_xpbd) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c0[3] = {0, 0.5f, 0}, c1[3] = {0.011f, 0.53f, 0.007f};
  add_grid(&m, 12, 12, 0.05f, c0, X, Z);
  add_grid(&m, 8, 8, 0.05f, c1, X, Z);
  wf_stream *s;
  CHECK_OK(wf_stream_create(th_dev0, 0, &s));
  wf_particles_desc pd = wf_particles_desc_default();
  pd.name = "ball";
  pd.substeps = 16;
  pd.stream = s;
  pd.devices[0] = th_dev0;
  wf_particles *ps = NULL;
  wf_cloth *cl = NULL;
  wf_cloth_desc d = layer_desc(WF_CLOTH_XPBD, true);
  d.stream = s;
  d.material.thickness = 0.01f;
  const float bp[1][4] = {{0.0f, 0.65f, 0.0f, 0.06f}}, bv[1][4] = {{0, 0, 0, 1.0f / 0.2f}};
  wf_status st = wf_particles_create(&pd, &ps);
  if (st == WF_OK) st = wf_particles_add(ps, 1, bp, bv, 0, NULL);
  if (st == WF_OK) st = pieces_create(&d, &m, &cl);
  for (int j = 0; j < 12 && st == WF_OK; j++)
    for (int i = 0; i < 12 && st == WF_OK; i++)
      if (i == 0 || j == 0 || i == 11 || j == 11) st = wf_cloth_pin(cl, (uint32_t)(j * 12 + i));
  if (st == WF_OK) st = wf_cloth_couple(cl, ps);
  uint64_t worst = 0;
  for (int f = 0; f < 30 && st == WF_OK; f++) {
    uint64_t n = 0;
    st = wf_particles_step_frames(ps, 1);
    if (st == WF_OK) st = wf_cloth_intersections(cl, &n);
    if (n > worst) worst = n;
  }
  float p[1][4];
  static float x[MAXV][4];
  if (st == WF_OK) st = wf_particles_download(ps, p, NULL);
  if (st == WF_OK) st = wf_cloth_download(cl, x, NULL);
  if (st != WF_OK) TH_FAIL("%s", wf_last_error());
  CHECK_EQ_INT(worst, 0);
  /* the lowest vertex of each sheet: both sag under the ball, the lower one lowest, and the
   * ball rests in them (uncoupled it would fall through and on: 2.2 m in 0.5 s) */
  float upper = 1e9f, lower = 1e9f;
  for (uint32_t i = 0; i < m.nv; i++)
    if (i < 144)
      lower = fminf(lower, x[i][1]);
    else
      upper = fminf(upper, x[i][1]);
  printf("  ball bottom %.4f, upper sheet %.4f, lower sheet %.4f\n", p[0][1] - 0.06f, upper, lower);
  CHECK(upper < 0.5f && lower < upper && p[0][1] > 0.3f);
  wf_cloth_destroy(cl);
  wf_particles_destroy(ps);
  wf_stream_destroy(s);
}

/* ---- friction on a slope -------------------------------------------------------------------- */

/* A 16 x 16 sheet (0.75 m, every vertex pinned) at y = 0 and a 5 x 5 sheet (0.2 m) resting one
 * thickness above it; gravity tilted by theta about z (a slope). Returns the upper sheet's mean
 * displacement along x after `frames` frames. */
static double slope_slide(int integrator, double theta_deg, int frames) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c0[3] = {0, 0, 0}, c1[3] = {0, 0.005f, 0};
  add_grid(&m, 16, 16, 0.05f, c0, X, Z);
  add_grid(&m, 5, 5, 0.05f, c1, X, Z);
  wf_cloth_desc d = layer_desc(integrator, true);
  d.damping = 0.0f;
  double th = theta_deg * 3.14159265358979 / 180.0;
  d.gravity[0] = (float)(9.81 * sin(th)), d.gravity[1] = (float)(-9.81 * cos(th)), d.gravity[2] = 0;
  d.contact_static_friction = 0.5f, d.contact_dynamic_friction = 0.4f;
  wf_cloth *cl;
  if (pieces_create(&d, &m, &cl) != WF_OK) {
    TH_FAIL("%s", wf_last_error());
    return NAN;
  }
  for (uint32_t i = 0; i < 256; i++)
    if (wf_cloth_pin(cl, i) != WF_OK) TH_FAIL("%s", wf_last_error());
  static float p[MAXV][4];
  double x0 = 0.0, x1 = 0.0;
  if (wf_cloth_download(cl, p, NULL) != WF_OK) TH_FAIL("%s", wf_last_error());
  for (uint32_t i = 256; i < m.nv; i++)
    x0 += p[i][0];
  uint64_t n = 1;
  if (wf_cloth_step_frames(cl, frames) != WF_OK || wf_cloth_download(cl, p, NULL) != WF_OK ||
      wf_cloth_intersections(cl, &n) != WF_OK)
    TH_FAIL("%s", wf_last_error());
  CHECK_EQ_INT(n, 0);
  for (uint32_t i = 256; i < m.nv; i++)
    x1 += p[i][0];
  wf_cloth_destroy(cl);
  return (x1 - x0) / (double)(m.nv - 256);
}

static void slope(int integrator) {
  const int frames = 15; /* t = 0.25 s */
  const double t = frames / 60.0, g = 9.81;
  /* below the friction angle (atan 0.5 = 26.6 deg): holds. Frictionless it would slide
   * g sin 15° t² / 2 = 7.9 cm; held, the sheet creeps by well under a millimetre */
  double held = slope_slide(integrator, 15.0, frames);
  CHECK(fabs(held) < 1e-3);
  /* above it (40 deg): slides as Coulomb says, ½ g (sin θ - μk cos θ) t² = 10.3 cm (the
   * frictionless 19.7 cm would be far off), within 15%: position-based friction removes the
   * tangential motion of each substep up to μk x the penetration gravity made in it, which is
   * Coulomb's impulse up to the first substeps of the onset and the Jacobi averaging (measured:
   * within 1% on both integrators) */
  double th = 40.0 * 3.14159265358979 / 180.0;
  double coulomb = 0.5 * g * (sin(th) - 0.4 * cos(th)) * t * t, free = 0.5 * g * sin(th) * t * t;
  double slid = slope_slide(integrator, 40.0, frames);
  printf("  slope: held %.6f m, slid %.4f m (Coulomb %.4f, frictionless %.4f)\n", held, slid,
         coulomb, free);
  CHECK_NEAR(slid, coulomb, 0.15 * coulomb);
}

TEST(friction_slope_xpbd) { slope(WF_CLOTH_XPBD); }
TEST(friction_slope_springs) { slope(WF_CLOTH_SPRINGS); }

/* ---- determinism and errors ----------------------------------------------------------------- */

TEST(contact_bitwise) {
  static float a[MAXV][4], b[MAXV][4], c[MAXV][4];
  fold_run(WF_CLOTH_XPBD, true, 12, a);
  fold_run(WF_CLOTH_XPBD, true, 12, b);
  CHECK(memcmp(a, b, sizeof a) == 0);
  g_no_graph = true; /* the same frames enqueued stage by stage */
  fold_run(WF_CLOTH_XPBD, true, 12, c);
  g_no_graph = false;
  CHECK(memcmp(a, c, sizeof a) == 0);
}

/* Checkpoint: the state (solver's own positions, velocities, clock) saved after 6 frames and
 * restored into a new cloth continues bitwise as the original (contact keeps no state of its
 * own between substeps). */
TEST(contact_checkpoint_bitwise) {
  static mesh m;
  m.nv = m.nt = 0;
  const float c[3] = {0.0f, 0.02f + 0.5f * 39 * 0.024f, 0.0f};
  add_grid(&m, 4, 40, 0.024f, c, X, Y);
  for (uint32_t i = 0; i < m.nv; i++)
    m.v[i][2] += 0.05f * m.v[i][1];
  wf_cloth_desc d = layer_desc(WF_CLOTH_XPBD, true);
  wf_collider_desc g = scene_ground(0.0f);
  wf_cloth *a, *b;
  static float p[MAXV][4], v[MAXV][4], pa[MAXV][4], pb[MAXV][4];
  double t;
  uint64_t k;
  CHECK_OK(pieces_create(&d, &m, &a));
  CHECK_OK(wf_cloth_add_collider(a, &g, NULL));
  CHECK_OK(wf_cloth_step_frames(a, 14));
  CHECK_OK(wf_cloth_download_local(a, p, v));
  CHECK_OK(wf_cloth_time(a, &t, &k));
  CHECK_OK(wf_cloth_step_frames(a, 6));
  CHECK_OK(wf_cloth_download_local(a, pa, NULL));
  wf_cloth_destroy(a);
  CHECK_OK(pieces_create(&d, &m, &b));
  CHECK_OK(wf_cloth_add_collider(b, &g, NULL));
  CHECK_OK(wf_cloth_set_state_local(b, (const float(*)[4])p, (const float(*)[4])v, t, k));
  CHECK_OK(wf_cloth_step_frames(b, 6));
  CHECK_OK(wf_cloth_download_local(b, pb, NULL));
  wf_cloth_destroy(b);
  CHECK(memcmp(pa, pb, sizeof(float[4]) * m.nv) == 0);
}

/* The CPU and CUDA backends give the same bits (deterministic: no FMA contraction, the same
 * gather order): the folding strip, both integrators. */
TEST(contact_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  static float a[MAXV][4], b[MAXV][4];
  for (int integrator = 0; integrator < 2; integrator++) {
    g_dev = th_host;
    fold_run(integrator, true, 12, a);
    g_dev = NULL;
    fold_run(integrator, true, 12, b);
    CHECK(memcmp(a, b, sizeof a) == 0);
  }
}

/* Contact over several devices is accepted (test_cloth_contact_split.c checks it bitwise). */
TEST(contact_errors) {
  NEED_TWO_DEVICES();
  static mesh m;
  m.nv = m.nt = 0;
  add_grid(&m, 6, 6, 0.05f, (const float[3]){0, 0, 0}, X, Z);
  wf_cloth_desc d = layer_desc(WF_CLOTH_XPBD, true);
  d.devices[1] = th_dev1, d.device_count = 2;
  wf_cloth *cl = NULL;
  CHECK_OK(pieces_create(&d, &m, &cl));
  wf_cloth_destroy(cl);
  d = layer_desc(WF_CLOTH_XPBD, true);
  d.contact_static_friction = -1.0f;
  CHECK_ERROR(pieces_create(&d, &m, &cl), WF_ERR_INVALID, "contact_static_friction -1");
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(folds_no_intersection_xpbd),
                                  TH_TEST(folds_no_intersection_springs),
                                  TH_TEST(fast_sheet_does_not_pass_xpbd),
                                  TH_TEST(fast_sheet_does_not_pass_springs),
                                  TH_TEST(sheet_on_thin_pole_xpbd),
                                  TH_TEST(attached_corners_lowered_xpbd),
                                  TH_TEST(free_fall_not_slowed_xpbd),
                                  TH_TEST(coupled_ball_presses_layers_xpbd),
                                  TH_TEST(friction_slope_xpbd),
                                  TH_TEST(friction_slope_springs),
                                  TH_TEST(contact_bitwise),
                                  TH_TEST(contact_checkpoint_bitwise),
                                  TH_TEST(contact_cpu_cuda_bitwise),
                                  TH_TEST(contact_errors)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
