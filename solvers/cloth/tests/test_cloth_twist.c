/* Cloth contact (wf_cloth_desc.contact) under the hard cases of issue 28, checked at the end of
 * every substep (wf_cloth_step_substeps, then the exact count wf_cloth_intersections):
 *  - a strip twisted by two clamps turning in opposite directions about its long axis (its end
 *    columns held by them): it winds into a helix and then onto itself, and no two triangles
 *    ever intersect; without contact they do (so the count can fail), and the ends did turn as
 *    the colliders say;
 *  - a sheet dropped on a thin pole (a capsule 1 cm thick): it folds over it with no
 *    intersection, its halves hanging on both sides.
 */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

enum { MAXV = 400, MAXT = 800 };

#define PI 3.14159265358979323846

#include "cloth_pieces.h" /* mesh, add_grid */

/* An nu x nw grid, alone in m (vertex j * nu + i). */
static void grid(mesh *m, int nu, int nw, float h, const float c[3], const float u[3],
                 const float w[3]) {
  m->nv = m->nt = 0;
  add_grid(m, nu, nw, h, c, u, w);
}

static const float X[3] = {1, 0, 0}, Z[3] = {0, 0, 1};

/* A light cotton (0.15 kg/m²), 5 mm thick, XPBD with 4 iterations and 16 substeps. */
static wf_cloth_desc desc_of(bool contact) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "twist";
  d.integrator = WF_CLOTH_XPBD;
  d.iterations = 4;
  d.substeps = 16;
  d.contact = contact;
  d.damping = 0.5f;
  pieces_cotton(&d.material);
  return d;
}

/* Steps `substeps` one at a time; returns the most intersecting pairs at a substep's end. */
static uint64_t run_checked(wf_cloth *c, int substeps) {
  uint64_t worst = 0;
  for (int s = 0; s < substeps; s++) {
    uint64_t n = 0;
    if (wf_cloth_step_substeps(c, 1) != WF_OK || wf_cloth_intersections(c, &n) != WF_OK) {
      TH_FAIL("substep %d: %s", s, wf_last_error());
      return UINT64_MAX;
    }
    worst = n > worst ? n : worst;
  }
  return worst;
}

/* ---- the twist ------------------------------------------------------------------------------ */

enum { TW = 6, TL = 30 };      /* the strip: TW vertices across (z), TL along (x) */
static const float TH = 0.02f; /* its spacing: 0.10 x 0.58 m */

/* Where a point at rest at (y, z) about the strip's axis (y = 0.5, z = 0) is after turning by a
 * about +x: R_x(a) (0, y - 0.5, z) + (0, 0.5, 0); its velocity turning at w rad/s. */
static void turned(const float rest[3], double a, double w, float pos[3], float vel[3]) {
  double y = rest[1] - 0.5, z = rest[2], c = cos(a), s = sin(a);
  double ty = c * y - s * z, tz = s * y + c * z;
  pos[0] = rest[0], pos[1] = (float)(0.5 + ty), pos[2] = (float)tz;
  vel[0] = 0.0f, vel[1] = (float)(-w * tz), vel[2] = (float)(w * ty);
}

/* Twists the strip for `frames` frames (8 substeps each) with its end columns held by two clamps
 * turning at +omega (left, x < 0) and -omega (right) about the strip's axis; the end positions
 * into p. The clamps' motion is given to the end columns at every substep (pinned vertices set
 * to the clamp's pose at the substep's start, moving with its velocity there over the substep:
 * wf_cloth_attach follows a collider's linear velocity only), and two plates turning so stand
 * beyond the ends as colliders. Returns the most intersecting pairs at a substep's end. */
static uint64_t twist(bool contact, float omega, int frames, float (*p)[4]) {
  static mesh m;
  grid(&m, TL, TW, TH, (const float[3]){0.0f, 0.5f, 0.0f}, X, Z);
  wf_cloth_desc d = desc_of(contact);
  d.gravity[1] = 0.0f; /* the twist alone */
  d.substeps = 8;
  d.origin_given = true; /* at (0, 0, 0): local positions are the world's */
  wf_cloth *c;
  if (pieces_create(&d, &m, &c) != WF_OK) {
    TH_FAIL("%s", wf_last_error());
    return UINT64_MAX;
  }
  float half = 0.5f * (TL - 1) * TH;
  for (int e = 0; e < 2; e++) {
    wf_collider_desc h;
    memset(&h, 0, sizeof h);
    h.name = e ? "right" : "left";
    h.type = WF_COLLIDER_BOX;
    float x = (e ? 1.0f : -1.0f) * (half + 0.03f);
    h.center[0] = x, h.center[1] = 0.5f;
    h.half_extents[0] = 0.01f, h.half_extents[1] = 0.08f, h.half_extents[2] = 0.08f;
    h.pivot[0] = x, h.pivot[1] = 0.5f;
    h.angular_velocity[0] = e ? -omega : omega;
    if (wf_cloth_add_collider(c, &h, NULL) != WF_OK) TH_FAIL("%s", wf_last_error());
  }
  for (uint32_t j = 0; j < TW; j++)
    if (wf_cloth_pin(c, j * TL) != WF_OK || wf_cloth_pin(c, j * TL + TL - 1) != WF_OK)
      TH_FAIL("%s", wf_last_error());
  static float v[MAXV][4];
  uint64_t worst = 0;
  for (int s = 0; s < frames * d.substeps; s++) {
    double t;
    uint64_t k, n = 0;
    if (wf_cloth_download_local(c, p, v) != WF_OK || wf_cloth_time(c, &t, &k) != WF_OK) break;
    for (uint32_t j = 0; j < TW; j++)
      for (int e = 0; e < 2; e++) {
        uint32_t q = j * TL + (e ? TL - 1 : 0);
        double w = e ? -omega : omega;
        turned(m.v[q], w * t, w, p[q], v[q]);
      }
    if (wf_cloth_set_state_local(c, (const float(*)[4])p, (const float(*)[4])v, t, k) != WF_OK ||
        wf_cloth_step_substeps(c, 1) != WF_OK || wf_cloth_intersections(c, &n) != WF_OK) {
      TH_FAIL("substep %d: %s", s, wf_last_error());
      break;
    }
    worst = n > worst ? n : worst;
  }
  if (wf_cloth_download_local(c, p, NULL) != WF_OK) TH_FAIL("%s", wf_last_error());
  wf_cloth_destroy(c);
  return worst;
}

/* The clamps turn at ±4 rad/s for 1 s: 8 rad (1.3 turns) between the ends. The strip winds into
 * a helix, then its middle buckles and winds onto itself. With contact: no intersecting pair at
 * any of the 480 substep ends, and the strip's long edges, 10 cm apart at rest, came to within
 * 3 cm of each other in its middle (measured: 5 mm, one thickness: it wound onto itself and its
 * layers rest on each other, so the count was tested).
 * The left end turned as its clamp: its direction across the strip is at -4 rad about x (R_x(a)
 * takes +z to (0, -sin a, cos a)), to 1e-3 rad: set exactly at the last substep's start, then
 * moved one substep along the tangent (a chord error of (w dt)² / 2 ~ 3e-5 rad). */
TEST(twisted_strip_xpbd) {
  static float p[MAXV][4];
  const float omega = 4.0f;
  const int frames = 60;
  uint64_t with = twist(true, omega, frames, p);
  double ay = p[(TW - 1) * TL][1] - (double)p[0][1], az = p[(TW - 1) * TL][2] - (double)p[0][2];
  double angle = atan2(-ay, az), want = remainder(omega * frames / 60.0, 2.0 * PI);
  double err = fabs(remainder(angle - want, 2.0 * PI));
  /* how far it wound: the least distance between the middle halves of the two long edges */
  double least = 1e9;
  for (uint32_t i = TL / 4; i < 3 * TL / 4; i++)
    for (uint32_t j = TL / 4; j < 3 * TL / 4; j++) {
      const float *a = p[i], *b = p[(TW - 1) * TL + j];
      double d2 = 0.0;
      for (int q = 0; q < 3; q++)
        d2 += ((double)a[q] - b[q]) * ((double)a[q] - b[q]);
      least = fmin(least, sqrt(d2));
    }
  printf("  twist: %llu intersecting pairs at worst, end angle %.4f rad (want %.4f), long edges "
         "%.4f m apart at the least\n",
         (unsigned long long)with, angle, want, least);
  CHECK_EQ_INT(with, 0);
  CHECK(err < 1e-3);
  CHECK(least < 0.03);
}

/* The same twist without contact: the layers pass through each other (the count sees it). */
TEST(twisted_strip_without_contact_intersects) {
  static float p[MAXV][4];
  uint64_t without = twist(false, 4.0f, 60, p);
  printf("  without contact: %llu at worst\n", (unsigned long long)without);
  CHECK(without > 0);
}

/* ---- a thin pole ------------------------------------------------------------------------------
 */

/* A 12 x 12 sheet (0.44 m) falls 5 cm onto a capsule 1 cm thick across it, slightly off centre,
 * and folds over it, its halves swinging down and towards each other under the pole. 24 frames
 * (0.4 s), checked at each of the 384 substep ends: no intersecting pair; both halves hang well
 * below the pole. */
TEST(thin_pole_every_substep_xpbd) {
  static mesh m;
  grid(&m, 12, 12, 0.04f, (const float[3]){0.0f, 0.35f, 0.02f}, X, Z);
  wf_cloth_desc d = desc_of(true);
  wf_cloth *c;
  CHECK_OK(pieces_create(&d, &m, &c));
  wf_collider_desc pole;
  memset(&pole, 0, sizeof pole);
  pole.name = "pole", pole.type = WF_COLLIDER_CAPSULE, pole.radius = 0.005f, pole.friction = 0.5f;
  pole.p0[0] = -0.5f, pole.p0[1] = 0.3f, pole.p1[0] = 0.5f, pole.p1[1] = 0.3f;
  CHECK_OK(wf_cloth_add_collider(c, &pole, NULL));
  uint64_t worst = run_checked(c, 24 * d.substeps);
  static float p[MAXV][4];
  CHECK_OK(wf_cloth_download(c, p, NULL));
  float front = 1.0f, back = 1.0f;
  for (uint32_t i = 0; i < m.nv; i++) {
    if (p[i][2] > 0.0f) front = fminf(front, p[i][1]);
    if (p[i][2] < 0.0f) back = fminf(back, p[i][1]);
  }
  printf("  pole: %llu at worst, lowest %.3f m (front) %.3f m (back)\n", (unsigned long long)worst,
         (double)front, (double)back);
  CHECK_EQ_INT(worst, 0);
  CHECK(front < 0.2f && back < 0.2f); /* both halves hang below the pole (y = 0.3) */
  wf_cloth_destroy(c);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(twisted_strip_xpbd),
                                  TH_TEST(twisted_strip_without_contact_intersects),
                                  TH_TEST(thin_pole_every_substep_xpbd)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
