/* Contact groups (wf_cloth_group): contact between separate cloths.
 *  - a group of two cloths computes what one cloth made of the same two pieces computes with
 *    desc.contact, bit for bit (the group's stage is the single cloth's on the concatenation);
 *  - two cloths stacked, the upper one thrown sideways over the lower (pinned): no intersecting
 *    triangle pair (exact count, both cloths as one set) at the end of any substep, and it slows
 *    as Coulomb's law says, v0 t - ½ μk g t², not the frictionless v0 t; without the group it
 *    falls through the lower cloth;
 *  - friction between cloths on a slope: a sheet on another holds below the friction angle
 *    (tan θ < μs) and slides above it as ½ g (sin θ - μk cos θ) t²;
 *  - bitwise run to run, captured or not, and a checkpoint (each cloth's state) resumed into new
 *    cloths and a new group continues bitwise; CPU and CUDA give the same bits (run on a GPU by
 *    the integrator);
 *  - errors: cloths of different origins, substeps or devices, a cloth given twice, stepping a
 *    grouped cloth on its own. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

enum { MAXV = 600, MAXT = 1100 };

#include "cloth_pieces.h" /* mesh, add_grid */

/* A failed call in a function that returns a value: fail the test, go on. */
#define OK(e)                                                                                      \
  do {                                                                                             \
    if ((e) != WF_OK) TH_FAIL("%s: %s", #e, wf_last_error());                                      \
  } while (0)

static wf_device *g_dev;      /* the device the cloths run on; NULL: th_dev0 */
static bool g_group_no_graph; /* heap_run: the group's frames enqueued stage by stage */

/* A light cotton (0.15 kg/m²) 5 mm thick, every cloth of these tests at the origin (0, 0, 0). */
static wf_cloth_desc desc_of(int integrator, const char *name) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = name;
  d.no_graph = true;
  d.devices[0] = g_dev ? g_dev : th_dev0;
  d.device_count = 1;
  d.integrator = integrator;
  d.iterations = integrator == WF_CLOTH_XPBD ? 4 : 1;
  d.substeps = integrator == WF_CLOTH_XPBD ? 16 : 32;
  d.damping = 0.0f;
  d.origin_given = true;
  pieces_cotton(&d.material);
  return d;
}

static const float X[3] = {1, 0, 0}, Z[3] = {0, 0, 1};

/* The two sheets of these tests: a 16 x 16 one (0.75 m) at y = 0 and a 5 x 5 one (0.2 m) at
 * height h above it. */
static void sheets(mesh *lo, mesh *up, float h) {
  lo->nv = lo->nt = up->nv = up->nt = 0;
  add_grid(lo, 16, 16, 0.05f, (const float[3]){0, 0, 0}, X, Z);
  add_grid(up, 5, 5, 0.05f, (const float[3]){0, h, 0}, X, Z);
}

/* ---- a group computes what one cloth of several pieces computes ---------------------------- */

/* The two sheets as one mesh of two pieces, the upper 3 cm above the lower (whose border is
 * pinned), damped (0.5 /s) so that it settles. */
static wf_status make_both(int integrator, bool contact, wf_cloth **out) {
  static mesh both;
  both.nv = both.nt = 0;
  add_grid(&both, 16, 16, 0.05f, (const float[3]){0, 0, 0}, X, Z);
  add_grid(&both, 5, 5, 0.05f, (const float[3]){0, 0.03f, 0}, X, Z);
  wf_cloth_desc d = desc_of(integrator, "both");
  d.contact = contact;
  d.damping = 0.5f;
  wf_status st = pieces_create(&d, &both, out);
  for (uint32_t j = 0; j < 16 && st == WF_OK; j++)
    for (uint32_t i = 0; i < 16 && st == WF_OK; i++)
      if (i == 0 || j == 0 || i == 15 || j == 15) st = wf_cloth_pin(*out, j * 16 + i);
  return st;
}

/* A group of one cloth (its own desc.contact off) computes what the cloth computes alone with
 * desc.contact, bit for bit: the group's stage is the cloth's, on the same arrays. 20 frames: the
 * upper piece lands on the lower one (after ~0.08 s). */
static void group_of_one(int integrator) {
  {
    wf_cloth *one, *a;
    wf_cloth_group *g;
    CHECK_OK(make_both(integrator, true, &one));
    CHECK_OK(make_both(integrator, false, &a));
    CHECK_OK(wf_cloth_group_create(&a, 1, NULL, &g));
    CHECK_OK(wf_cloth_step_frames(one, 14));
    CHECK_OK(wf_cloth_group_step_frames(g, 14));
    static float p1[MAXV][4], pa[MAXV][4];
    CHECK_OK(wf_cloth_download_local(one, p1, NULL));
    CHECK_OK(wf_cloth_download_local(a, pa, NULL));
    CHECK(memcmp(p1, pa, sizeof(float[4]) * wf_cloth_count(a)) == 0);
    /* the upper piece's centre (vertex 256 + 12) is still above the lower piece's four centre
     * vertices (7/8, 7/8), by more than half a thickness (the lower sheet, a trampoline of
     * light cotton, throws the upper one up again as it rebounds: no finer claim here) */
    double low =
        (pa[7 * 16 + 7][1] + pa[7 * 16 + 8][1] + pa[8 * 16 + 7][1] + pa[8 * 16 + 8][1]) / 4;
    printf("  upper centre %.5f m, lower centre %.5f m\n", (double)pa[256 + 12][1], low);
    CHECK(pa[256 + 12][1] - low > 0.0025);
    uint64_t n = 1;
    CHECK_OK(wf_cloth_group_intersections(g, &n));
    CHECK_EQ_INT(n, 0);
    wf_cloth_group_destroy(g);
    wf_cloth_destroy(one), wf_cloth_destroy(a);
  }
}

TEST(group_of_one_is_contact_xpbd) { group_of_one(WF_CLOTH_XPBD); }
TEST(group_of_one_is_contact_springs) { group_of_one(WF_CLOTH_SPRINGS); }

/* Two separate cloths in a group compute what one cloth of the same two pieces computes, bit for
 * bit (XPBD: its constraints and masses per piece are the same; mass-spring coefficients come
 * from the whole mesh's mean spacing, which differs between the two by rounding, so the check
 * is XPBD's). */
TEST(group_equals_pieces_xpbd) {
  static mesh lo, up;
  sheets(&lo, &up, 0.03f);
  wf_cloth_desc d = desc_of(WF_CLOTH_XPBD, "lower");
  d.damping = 0.5f;
  wf_cloth *one, *a, *b;
  wf_cloth_group *g;
  CHECK_OK(make_both(WF_CLOTH_XPBD, true, &one));
  CHECK_OK(pieces_create(&d, &lo, &a));
  d.name = "upper";
  CHECK_OK(pieces_create(&d, &up, &b));
  for (uint32_t j = 0; j < 16; j++)
    for (uint32_t i = 0; i < 16; i++)
      if (i == 0 || j == 0 || i == 15 || j == 15) CHECK_OK(wf_cloth_pin(a, j * 16 + i));
  wf_cloth *pair[2] = {a, b};
  CHECK_OK(wf_cloth_group_create(pair, 2, NULL, &g));
  CHECK_OK(wf_cloth_step_frames(one, 14));
  CHECK_OK(wf_cloth_group_step_frames(g, 14));
  static float p1[MAXV][4], pa[MAXV][4];
  CHECK_OK(wf_cloth_download_local(one, p1, NULL));
  CHECK_OK(wf_cloth_download_local(a, pa, NULL));
  CHECK_OK(wf_cloth_download_local(b, pa + lo.nv, NULL));
  CHECK(memcmp(p1, pa, sizeof(float[4]) * (lo.nv + up.nv)) == 0);
  wf_cloth_group_destroy(g);
  wf_cloth_destroy(one), wf_cloth_destroy(a), wf_cloth_destroy(b);
}

/* ---- sliding one cloth over another ---------------------------------------------------------- */

/* The upper sheet one thickness above the lower (every vertex of which is pinned), thrown along x
 * at v0 = 1 m/s; frames of 1/60 s, checked at every substep end. Returns the upper sheet's mean
 * displacement along x after `frames` frames; *worst: the most intersecting pairs seen. */
static double slide(int integrator, bool grouped, float mu, int frames, uint64_t *worst,
                    float *lowest) {
  static mesh lo, up;
  sheets(&lo, &up, 0.005f);
  wf_cloth_desc d = desc_of(integrator, "lower");
  wf_cloth *a = NULL, *b = NULL;
  wf_cloth_group *g = NULL;
  *worst = 0, *lowest = 1.0f;
  if (pieces_create(&d, &lo, &a) != WF_OK ||
      (d.name = "upper", pieces_create(&d, &up, &b)) != WF_OK) {
    TH_FAIL("%s", wf_last_error());
    wf_cloth_destroy(a);
    return NAN;
  }
  for (uint32_t i = 0; i < lo.nv; i++)
    OK(wf_cloth_pin(a, i));
  static float p[MAXV][4], v[MAXV][4];
  OK(wf_cloth_download_local(b, p, v));
  for (uint32_t i = 0; i < up.nv; i++)
    v[i][0] = 1.0f;
  OK(wf_cloth_set_state_local(b, (const float(*)[4])p, (const float(*)[4])v, 0.0, 0));
  double x0 = 0.0, x1 = 0.0;
  for (uint32_t i = 0; i < up.nv; i++)
    x0 += p[i][0];
  wf_cloth_group_desc gd = wf_cloth_group_desc_default();
  gd.static_friction = mu * 1.25f, gd.dynamic_friction = mu;
  wf_cloth *pair[2] = {a, b};
  if (grouped) OK(wf_cloth_group_create(pair, 2, &gd, &g));
  int substeps = d.substeps;
  for (int s = 0; s < frames * substeps; s++) {
    uint64_t n = 0;
    if (grouped) {
      OK(wf_cloth_group_step_substeps(g, 1));
      OK(wf_cloth_group_intersections(g, &n));
    } else {
      static float q[MAXV][4];
      static uint32_t tris[MAXT][3];
      OK(wf_cloth_step_substeps(b, 1));
      OK(wf_cloth_download_local(a, q, NULL));
      OK(wf_cloth_download_local(b, q + lo.nv, NULL));
      memcpy(tris, lo.t, sizeof(uint32_t[3]) * lo.nt);
      for (uint32_t t = 0; t < up.nt; t++)
        for (int k = 0; k < 3; k++)
          tris[lo.nt + t][k] = up.t[t][k] + lo.nv;
      OK(wf_cloth_intersections_count(&q[0][0], 4, lo.nv + up.nv, &tris[0][0], lo.nt + up.nt, &n));
    }
    if (n > *worst) *worst = n;
  }
  OK(wf_cloth_download_local(b, p, NULL));
  for (uint32_t i = 0; i < up.nv; i++)
    x1 += p[i][0], *lowest = fminf(*lowest, p[i][1]);
  wf_cloth_group_destroy(g);
  wf_cloth_destroy(a), wf_cloth_destroy(b);
  return (x1 - x0) / (double)up.nv;
}

/* 9 frames (0.15 s) with μk 0.4: Coulomb's v0 t - ½ μk g t² = 10.6 cm (the sheet stays in
 * contact: it starts resting one thickness up). Frictionless it would go 15 cm. Tolerance 10%:
 * position-based friction removes, each substep, the tangential motion up to μk x the
 * penetration gravity made in it (Coulomb's impulse), up to the first substeps before the sheet
 * presses the lower one and the Jacobi averaging of the pairs' shares (measured: see the output).
 * Then without the group (each cloth alone, no contact between them) the sheet falls through the
 * lower one and ends below it. */
static void slide_over(int integrator) {
  const int frames = 9;
  const double t = frames / 60.0, g = 9.81, v0 = 1.0, mu = 0.4;
  uint64_t worst;
  float lowest;
  double x = slide(integrator, true, (float)mu, frames, &worst, &lowest);
  double coulomb = v0 * t - 0.5 * mu * g * t * t;
  printf("  slid %.4f m (Coulomb %.4f, frictionless %.4f), lowest %.4f m, worst %llu\n", x, coulomb,
         v0 * t, (double)lowest, (unsigned long long)worst);
  CHECK_EQ_INT(worst, 0);
  CHECK_NEAR(x, coulomb, 0.1 * coulomb);
  CHECK(lowest > 0.0f);              /* still above the lower sheet (at y = 0) */
  if (integrator == WF_CLOTH_XPBD) { /* frictionless: it glides (one integrator: time) */
    double x_free = slide(integrator, true, 0.0f, frames, &worst, &lowest);
    printf("  frictionless: slid %.4f m\n", x_free);
    CHECK_EQ_INT(worst, 0);
    CHECK_NEAR(x_free, v0 * t, 0.05 * v0 * t);
  }
  /* without the group: the flat sheet falls flat through the flat lower one (so parallel that
   * no substep ends with triangles across: the count cannot see it; its height does) */
  slide(integrator, false, (float)mu, 6, &worst, &lowest);
  CHECK(lowest < -0.01f);
}

TEST(stacked_slide_xpbd) { slide_over(WF_CLOTH_XPBD); }
TEST(stacked_slide_springs) { slide_over(WF_CLOTH_SPRINGS); }

/* ---- friction on a slope, between two cloths ---------------------------------------------- */

/* The upper sheet resting one thickness above the lower one (pinned), gravity tilted by theta
 * about z. Returns the upper sheet's mean displacement along x after `frames` frames. */
static double slope_slide(int integrator, double theta_deg, int frames) {
  static mesh lo, up;
  sheets(&lo, &up, 0.005f);
  wf_cloth_desc d = desc_of(integrator, "lower");
  double th = theta_deg * 3.14159265358979 / 180.0;
  d.gravity[0] = (float)(9.81 * sin(th)), d.gravity[1] = (float)(-9.81 * cos(th)), d.gravity[2] = 0;
  wf_cloth *a, *b;
  wf_cloth_group *g;
  OK(pieces_create(&d, &lo, &a));
  d.name = "upper";
  OK(pieces_create(&d, &up, &b));
  for (uint32_t i = 0; i < lo.nv; i++)
    OK(wf_cloth_pin(a, i));
  wf_cloth *pair[2] = {a, b};
  wf_cloth_group_desc gd = wf_cloth_group_desc_default(); /* μs 0.5, μk 0.4 */
  OK(wf_cloth_group_create(pair, 2, &gd, &g));
  static float p[MAXV][4];
  double x0 = 0.0, x1 = 0.0;
  OK(wf_cloth_download_local(b, p, NULL));
  for (uint32_t i = 0; i < up.nv; i++)
    x0 += p[i][0];
  uint64_t n = 1;
  OK(wf_cloth_group_step_frames(g, frames));
  OK(wf_cloth_download_local(b, p, NULL));
  OK(wf_cloth_group_intersections(g, &n));
  CHECK_EQ_INT(n, 0);
  for (uint32_t i = 0; i < up.nv; i++)
    x1 += p[i][0];
  wf_cloth_group_destroy(g);
  wf_cloth_destroy(a), wf_cloth_destroy(b);
  return (x1 - x0) / (double)up.nv;
}

/* 15 frames (0.25 s). Below the friction angle (tan 15° = 0.27 < μs = 0.5) the stack holds:
 * frictionless it would slide g sin 15° t² / 2 = 7.9 cm; held, it creeps well under 1 mm (the
 * first substeps, before gravity presses the layers, move it by ~g sin θ dt² each). Above it
 * (40°, tan 40° = 0.84) it slides as Coulomb says, ½ g (sin θ - μk cos θ) t² = 10.3 cm (the
 * frictionless 19.7 cm would be far off), within 15% as the single-cloth test. */
static void slope(int integrator) {
  const int frames = 15;
  const double t = frames / 60.0, g = 9.81;
  double held = slope_slide(integrator, 15.0, frames);
  CHECK(fabs(held) < 1e-3);
  double th = 40.0 * 3.14159265358979 / 180.0;
  double coulomb = 0.5 * g * (sin(th) - 0.4 * cos(th)) * t * t;
  double slid = slope_slide(integrator, 40.0, frames);
  printf("  slope between cloths: held %.6f m, slid %.4f m (Coulomb %.4f)\n", held, slid, coulomb);
  CHECK_NEAR(slid, coulomb, 0.15 * coulomb);
}

TEST(friction_slope_between_cloths_xpbd) { slope(WF_CLOTH_XPBD); }
TEST(friction_slope_between_cloths_springs) { slope(WF_CLOTH_SPRINGS); }

/* ---- determinism, checkpoints, backends -------------------------------------------------- */

/* Three cloths: the lower sheet (border pinned) and two small ones falling onto it, one over the
 * other; `frames` frames from the state (pos, vel, t, k) when given. The end positions of all
 * three into out (rows in group order). */
static void heap_run(int integrator, int frames, float (*out)[4], float (*save_p)[4],
                     float (*save_v)[4], double *save_t, uint64_t *save_k, int save_at,
                     const float (*from_p)[4], const float (*from_v)[4], double t, uint64_t k) {
  static mesh m[3];
  sheets(&m[0], &m[1], 0.03f);
  m[2].nv = m[2].nt = 0;
  add_grid(&m[2], 5, 5, 0.05f, (const float[3]){0.05f, 0.06f, 0.03f}, X, Z);
  static const char *names[3] = {"lower", "upper", "top"};
  wf_cloth *c[3];
  wf_cloth_group *g;
  uint32_t first[4] = {0, m[0].nv, m[0].nv + m[1].nv, m[0].nv + m[1].nv + m[2].nv};
  for (int i = 0; i < 3; i++) {
    wf_cloth_desc d = desc_of(integrator, names[i]);
    d.no_graph = false;
    CHECK_OK(pieces_create(&d, &m[i], &c[i]));
    if (from_p)
      CHECK_OK(wf_cloth_set_state_local(c[i], from_p + first[i], from_v + first[i], t, k));
  }
  for (uint32_t j = 0; j < 16; j++)
    for (uint32_t i = 0; i < 16; i++)
      if (i == 0 || j == 0 || i == 15 || j == 15) CHECK_OK(wf_cloth_pin(c[0], j * 16 + i));
  wf_cloth_group_desc gd = wf_cloth_group_desc_default();
  gd.no_graph = g_group_no_graph;
  CHECK_OK(wf_cloth_group_create(c, 3, &gd, &g));
  if (save_p) {
    CHECK_OK(wf_cloth_group_step_frames(g, save_at));
    for (int i = 0; i < 3; i++) {
      CHECK_OK(wf_cloth_download_local(c[i], save_p + first[i], save_v + first[i]));
      CHECK_OK(wf_cloth_time(c[i], save_t, save_k));
    }
    frames -= save_at;
  }
  CHECK_OK(wf_cloth_group_step_frames(g, frames));
  for (int i = 0; i < 3; i++)
    CHECK_OK(wf_cloth_download_local(c[i], out + first[i], NULL));
  uint64_t n = 1;
  CHECK_OK(wf_cloth_group_intersections(g, &n));
  CHECK_EQ_INT(n, 0);
  wf_cloth_group_destroy(g);
  for (int i = 0; i < 3; i++)
    wf_cloth_destroy(c[i]);
}

TEST(group_bitwise_and_checkpoint) {
  static float a[MAXV][4], b[MAXV][4], r[MAXV][4], sp[MAXV][4], sv[MAXV][4];
  double t;
  uint64_t k;
  heap_run(WF_CLOTH_XPBD, 12, a, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0.0, 0);
  heap_run(WF_CLOTH_XPBD, 12, b, sp, sv, &t, &k, 7, NULL, NULL, 0.0, 0);
  CHECK(memcmp(a, b, sizeof a) == 0);
  /* the state saved after 7 frames, restored into new cloths and a new group: 5 more frames */
  heap_run(WF_CLOTH_XPBD, 5, r, NULL, NULL, NULL, NULL, 0, (const float(*)[4])sp,
           (const float(*)[4])sv, t, k);
  CHECK(memcmp(a, r, sizeof a) == 0);
  /* the captured frames and the same frames enqueued stage by stage */
  g_group_no_graph = true;
  heap_run(WF_CLOTH_XPBD, 12, r, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0.0, 0);
  g_group_no_graph = false;
  CHECK(memcmp(a, r, sizeof a) == 0);
}

/* A per-frame readback set on a cloth of a group after the group's frame was captured is baked
 * into the frame captured again (wfc_part_epoch): after 3 more frames the pinned buffer holds
 * the cloth's positions as the solver holds them, bit for bit (without the recapture it would
 * still hold the zeros it was made with). */
TEST(group_recaptures_after_a_readback) {
  static mesh lo, up;
  sheets(&lo, &up, 0.03f);
  wf_cloth_desc d = desc_of(WF_CLOTH_XPBD, "lower");
  wf_cloth *a, *b;
  wf_cloth_group *g;
  wf_buffer *rb;
  CHECK_OK(pieces_create(&d, &lo, &a));
  d.name = "upper";
  CHECK_OK(pieces_create(&d, &up, &b));
  wf_cloth *pair[2] = {a, b};
  CHECK_OK(wf_cloth_group_create(pair, 2, NULL, &g));
  CHECK_OK(wf_cloth_group_step_frames(g, 2));
  size_t bytes = sizeof(float[4]) * up.nv;
  CHECK_OK(wf_buffer_create(th_host, bytes, WF_BUFFER_PINNED | WF_BUFFER_ZERO, NULL, &rb));
  CHECK_OK(wf_cloth_set_frame_readback(b, rb, 0));
  CHECK_OK(wf_cloth_group_step_frames(g, 3));
  static float p[MAXV][4], q[MAXV][4];
  CHECK_OK(wf_cloth_download_local(b, p, NULL));
  CHECK_OK(wf_download(q, rb, 0, bytes));
  CHECK(memcmp(p, q, bytes) == 0);
  CHECK(q[0][1] != 0.0f); /* it was written (the sheet is at about 3 cm) */
  CHECK_OK(wf_cloth_set_frame_readback(b, NULL, 0));
  wf_cloth_group_destroy(g);
  wf_buffer_destroy(rb, NULL);
  wf_cloth_destroy(a), wf_cloth_destroy(b);
}

TEST(group_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  static float a[MAXV][4], b[MAXV][4];
  for (int integrator = 0; integrator < 2; integrator++) {
    g_dev = th_host;
    heap_run(integrator, 10, a, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0.0, 0);
    g_dev = NULL;
    heap_run(integrator, 10, b, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0.0, 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
  }
}

TEST(group_errors) {
  static mesh lo, up;
  sheets(&lo, &up, 0.03f);
  wf_cloth_desc d = desc_of(WF_CLOTH_XPBD, "lower");
  wf_cloth *a, *b, *c;
  wf_cloth_group *g = NULL;
  CHECK_OK(pieces_create(&d, &lo, &a));
  d.name = "upper";
  d.origin[0] = 1.0;
  CHECK_OK(pieces_create(&d, &up, &b));
  wf_cloth *pair[2] = {a, b};
  CHECK_ERROR(wf_cloth_group_create(pair, 2, NULL, &g), WF_ERR_INVALID, "share one origin");
  wf_cloth_destroy(b);
  d.origin[0] = 0.0, d.substeps = 20;
  CHECK_OK(pieces_create(&d, &up, &b));
  pair[1] = b;
  CHECK_ERROR(wf_cloth_group_create(pair, 2, NULL, &g), WF_ERR_INVALID, "same integrator");
  wf_cloth_destroy(b);
  d.substeps = 16;
  CHECK_OK(pieces_create(&d, &up, &b));
  pair[1] = a;
  CHECK_ERROR(wf_cloth_group_create(pair, 2, NULL, &g), WF_ERR_INVALID, "given twice");
  wf_cloth_group_desc gd = wf_cloth_group_desc_default();
  gd.dynamic_friction = -1.0f;
  pair[1] = b;
  CHECK_ERROR(wf_cloth_group_create(pair, 2, &gd, &g), WF_ERR_INVALID, "dynamic_friction -1");
  CHECK_OK(wf_cloth_group_create(pair, 2, NULL, &g));
  CHECK_ERROR(wf_cloth_step_frames(a, 1), WF_ERR_INVALID, "in a contact group");
  CHECK_ERROR(wf_cloth_step_substeps(b, 1), WF_ERR_INVALID, "in a contact group");
  wf_cloth_group *g2 = NULL;
  CHECK_ERROR(wf_cloth_group_create(pair, 1, NULL, &g2), WF_ERR_INVALID, "already in a contact");
  wf_cloth_group_destroy(g);
  CHECK_OK(wf_cloth_step_frames(a, 1)); /* free again */
  if (th_dev1) {
    d.devices[0] = th_dev1;
    CHECK_OK(pieces_create(&d, &up, &c));
    pair[1] = c;
    CHECK_ERROR(wf_cloth_group_create(pair, 2, NULL, &g), WF_ERR_INVALID, "needs one device");
    wf_cloth_destroy(c);
  }
  wf_cloth_destroy(a), wf_cloth_destroy(b);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(group_of_one_is_contact_xpbd),
                                  TH_TEST(group_of_one_is_contact_springs),
                                  TH_TEST(group_equals_pieces_xpbd),
                                  TH_TEST(stacked_slide_xpbd),
                                  TH_TEST(stacked_slide_springs),
                                  TH_TEST(friction_slope_between_cloths_xpbd),
                                  TH_TEST(friction_slope_between_cloths_springs),
                                  TH_TEST(group_bitwise_and_checkpoint),
                                  TH_TEST(group_recaptures_after_a_readback),
                                  TH_TEST(group_cpu_cuda_bitwise),
                                  TH_TEST(group_errors)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
