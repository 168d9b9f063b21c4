/* Headless tests of large point sets (EGL; Mesa's llvmpipe where there is no GPU): the ways
 * wf_render_desc.large draws them (quads, point sprites, compute: render_splat.c) agree in a pile
 * with shadows, and the upload of a large frame (render_upload.c: chunks, helper threads, GPU
 * copies as the chunks are written) is exact, and the known scene drawn as sprites and by
 * compute matches the ray tracer as the quads do (test_viewer_render); and the asynchronous
 * pixel readback (wf_render_read_rgba_async) hands back the previous frame exactly. A machine where
 * no EGL context can be made skips (77). (A program of its own: one process compiling the shaders
 * of many renderers outgrows ThreadSanitizer's lock bookkeeping inside Mesa's shader compiler.)
 */
#include <stdlib.h>

#include "gl_pin.h"
#include "harness.h"
#include "test_scene.h"
#include "viewer_internal.h"

#include "known_scene.h"

TEST(known_scene_as_point_sprites_matches_reference) {
  known_scene_with(1, WF_RENDER_LARGE_SPRITES);
}

TEST(known_scene_by_compute_matches_reference) { known_scene_with(1, WF_RENDER_LARGE_COMPUTE); }

/* A pile of small spheres in two sets (one coloured by speed) beside the known scene's spheres,
 * on the plane, with shadows, drawn as quads, as point sprites and by compute (samples 1: the
 * quads' MSAA would differ at every edge). The three pictures agree up to edge pixels: at most
 * 0.75 % of the pixels differ by more than 40 of 255 in a channel (a sphere's rim pixel going to
 * a neighbour: ray-cast depths from gl_FragCoord or an interpolated quad point round differently
 * where spheres touch; the compute sets' shadows are compared texel by texel, not filtered), the
 * mean difference under 0.6. Measured: 0.14-0.27 %, 0.15-0.39 (llvmpipe, an H200); the compute
 * sets casting no shadow gives 1.5 % and 1.09. The piles cover a good part of the picture
 * and cast shadows (not vacuous: a picture without them differs in over 5 % of the pixels). */
static int pile_draw(wf_render_large large, int large_min, bool piles, uint8_t *out) {
  enum { N = 24 }; /* N x N x 3 spheres a set */
  static float a[N * N * 3][4], b[N * N * 3][4], speed[N * N * 3];
  for (int k = 0; k < N * N * 3; k++) {
    int x = k % N, z = (k / N) % N, y = k / (N * N);
    float j = 0.013f * (float)((k * 7919) % 11); /* no two rows alike */
    a[k][0] = -2.2f + 0.09f * (float)x + j, a[k][1] = 0.05f + 0.09f * (float)y;
    a[k][2] = -1.0f + 0.09f * (float)z, a[k][3] = 0.045f;
    memcpy(b[k], a[k], sizeof b[k]);
    b[k][0] += 2.6f, b[k][2] += 0.4f * j;
    speed[k] = (float)(k % 17) / 16.0f;
  }
  vt_scene v;
  vt_scene_build(&v);
  wf_render_points sets[5] = {v.points[0], v.points[1], v.points[2]};
  sets[3] =
      (wf_render_points){.xyzr = &a[0][0], .count = N * N * 3, .color = {0.8f, 0.5f, 0.2f, 1}};
  sets[4] = (wf_render_points){.xyzr = &b[0][0], .count = N * N * 3, .speed = speed};
  v.scene.points = sets;
  v.scene.point_set_count = piles ? 5 : 3;
  v.scene.shadows = true;
  v.scene.color_mode = WF_COLOR_BY_SPEED;
  v.scene.speed_max = 1.0f;
  wf_render *r = NULL;
  wf_status st = wf_render_headless_create_desc(
      &(wf_render_desc){
          .width = VT_W, .height = VT_H, .samples = 1, .large_min = large_min, .large = large},
      &r);
  if (st == WF_OK) st = wf_render_draw(r, &v.scene);
  if (st == WF_OK) st = wf_render_read_rgba(r, out, (size_t)VT_W * VT_H * 4);
  if (st != WF_OK) printf("  drawing: %s\n", wf_render_last_error());
  wf_render_destroy(r);
  return st == WF_OK ? 0 : st == WF_ERR_UNSUPPORTED ? 77 : 1;
}

/* Pixels differing by more than 40 in a channel, and the mean difference over all channels. */
static int pile_diff(const uint8_t *x, const uint8_t *y, double *mean) {
  int bad = 0;
  double sum = 0.0;
  for (int i = 0; i < VT_W * VT_H; i++) {
    int worst = 0;
    for (int c = 0; c < 3; c++) {
      int d = abs((int)x[4 * i + c] - (int)y[4 * i + c]);
      sum += d;
      worst = d > worst ? d : worst;
    }
    bad += worst > 40;
  }
  *mean = sum / (3.0 * VT_W * VT_H);
  return bad;
}

TEST(large_sets_agree_with_quads_in_a_pile_with_shadows) {
  static uint8_t quads[VT_W * VT_H * 4], other[VT_W * VT_H * 4], bare[VT_W * VT_H * 4];
  int rc = pile_draw(WF_RENDER_LARGE_AUTO, -1, true, quads);
  if (rc == 77) SKIP("no headless OpenGL");
  REQUIRE(rc == 0);
  REQUIRE(pile_draw(WF_RENDER_LARGE_AUTO, -1, false, bare) == 0);
  double mean;
  int n = pile_diff(quads, bare, &mean);
  printf("  piles against none: %d pixels (%.1f %%) differ by > 40\n", n,
         100.0 * n / (VT_W * VT_H));
  CHECK(n > VT_W * VT_H * 5 / 100);
  wf_render_large ways[2] = {WF_RENDER_LARGE_SPRITES, WF_RENDER_LARGE_COMPUTE};
  for (int w = 0; w < 2; w++) {
    rc = pile_draw(ways[w], 100, true, other);
    if (rc == 77) {
      printf("  %s: not available here (GL < 4.5)\n", w ? "compute" : "sprites");
      continue;
    }
    REQUIRE(rc == 0);
    n = pile_diff(quads, other, &mean);
    printf("  %s against quads: %d pixels (%.2f %%) differ by > 40, mean difference %.3f\n",
           w ? "compute" : "sprites", n, 100.0 * n / (VT_W * VT_H), mean);
    CHECK(n <= VT_W * VT_H * 3 / 400);
    CHECK(mean < 0.6);
  }
}

/* The upload of a large frame (render_upload.c: chunks written by helper threads, each copied on
 * the GPU as soon as it and those before it are written): 300,000 spheres with speeds in one set
 * against the same spheres as six sets of 50,000 (written by the calling thread alone), drawn
 * with shadows as quads and by compute. The pictures are the same bit for bit, and the spheres
 * change over 10 % of the picture. */
static void carpet_scene(int sets, wf_render_points all[9], vt_scene *v) {
  enum { NX = 600, NZ = 500, N = NX * NZ };
  static float xyzr[N][4], speed[N];
  for (int k = 0; k < N; k++) {
    xyzr[k][0] = -3.0f + 0.01f * (float)(k % NX), xyzr[k][1] = 0.004f;
    xyzr[k][2] = -2.5f + 0.01f * (float)(k / NX), xyzr[k][3] = 0.0045f;
    speed[k] = (float)(k % 997) / 996.0f;
  }
  vt_scene_build(v);
  all[0] = v->points[0], all[1] = v->points[1], all[2] = v->points[2];
  for (int i = 0; i < sets; i++) {
    size_t n = N / (size_t)sets;
    all[3 + i] =
        (wf_render_points){.xyzr = xyzr[n * (size_t)i], .count = n, .speed = speed + n * (size_t)i};
  }
  v->scene.points = all;
  v->scene.point_set_count = 3 + sets;
  v->scene.shadows = true;
  v->scene.color_mode = WF_COLOR_BY_SPEED;
  v->scene.speed_max = 1.0f;
}

/* Draws the carpet as `sets` sets (0: none) with r; 0 or 1 after printing why. */
static int carpet_draw(wf_render *r, int sets, uint8_t *out) {
  vt_scene v;
  wf_render_points all[9];
  carpet_scene(sets, all, &v);
  wf_status st = wf_render_draw(r, &v.scene);
  if (st == WF_OK) st = wf_render_read_rgba(r, out, (size_t)VT_W * VT_H * 4);
  if (st != WF_OK) printf("  drawing: %s\n", wf_render_last_error());
  return st == WF_OK ? 0 : 1;
}

TEST(large_upload_in_chunks_and_threads_is_exact) {
  static uint8_t one[VT_W * VT_H * 4], six[VT_W * VT_H * 4], none[VT_W * VT_H * 4];
  for (int way = 0; way < 2; way++) { /* quads, then compute (one renderer each, reused) */
    wf_render *r = NULL;
    wf_status st = wf_render_headless_create_desc(
        &(wf_render_desc){.width = VT_W,
                          .height = VT_H,
                          .samples = 1,
                          .large_min = way ? 1000 : -1,
                          .large = way ? WF_RENDER_LARGE_COMPUTE : WF_RENDER_LARGE_AUTO},
        &r);
    if (st == WF_ERR_UNSUPPORTED && way == 0) SKIP("no headless OpenGL");
    if (st == WF_ERR_UNSUPPORTED) {
      printf("  compute: not available here (GL < 4.5)\n");
      return;
    }
    CHECK_R(st);
    int rc = carpet_draw(r, 1, one) | carpet_draw(r, 6, six) | carpet_draw(r, 1, none);
    CHECK(rc == 0);
    CHECK(memcmp(one, six, sizeof one) == 0);
    CHECK(memcmp(one, none, sizeof one) == 0); /* the same frame again: the staging reused */
    if (way == 0) {
      CHECK(carpet_draw(r, 0, none) == 0);
      double mean;
      int n = pile_diff(one, none, &mean);
      printf("  the spheres change %d pixels (%.1f %%)\n", n, 100.0 * n / (VT_W * VT_H));
      CHECK(n > VT_W * VT_H / 10);
    }
    wf_render_destroy(r);
  }
}

/* wf_render_read_rgba_async hands back the frame the previous call started: nothing on the
 * first call, then the earlier frame bit for bit as the synchronous read gives it (two different
 * frames: the camera moved), and nothing again after a resize. */
TEST(async_readback_returns_the_previous_frame) {
  static uint8_t a_sync[VT_W * VT_H * 4], b_sync[VT_W * VT_H * 4], got_px[VT_W * VT_H * 4];
  wf_render *r = NULL;
  CHECK_R(wf_render_headless_create(VT_W, VT_H, &r));
  vt_scene a, b;
  vt_scene_build(&a);
  vt_scene_build(&b);
  b.scene.camera.position[0] += 1.0f;
  bool got = true;
  CHECK_R(wf_render_draw(r, &a.scene));
  CHECK_R(wf_render_read_rgba(r, a_sync, sizeof a_sync));
  CHECK_R(wf_render_read_rgba_async(r, got_px, sizeof got_px, &got));
  CHECK(!got);
  CHECK_R(wf_render_draw(r, &b.scene));
  CHECK_R(wf_render_read_rgba(r, b_sync, sizeof b_sync));
  CHECK(memcmp(a_sync, b_sync, sizeof a_sync) != 0);
  CHECK_R(wf_render_read_rgba_async(r, got_px, sizeof got_px, &got));
  CHECK(got);
  CHECK(memcmp(got_px, a_sync, sizeof got_px) == 0);
  CHECK_R(wf_render_draw(r, &a.scene));
  CHECK_R(wf_render_read_rgba_async(r, got_px, sizeof got_px, &got));
  CHECK(got);
  CHECK(memcmp(got_px, b_sync, sizeof got_px) == 0);
  CHECK_R(wf_render_resize(r, VT_W / 2, VT_H / 2));
  CHECK_R(wf_render_draw(r, &a.scene));
  CHECK_R(wf_render_read_rgba_async(r, got_px, sizeof got_px, &got));
  CHECK(!got);
  CHECK_STATUS(wf_render_read_rgba_async(r, got_px, 16, &got), WF_ERR_INVALID);
  wf_render_destroy(r);
}

int main(int argc, char **argv) {
  if (!vt_headless_gl()) return 77; /* no EGL/GL here at all: the whole program is skipped */
  static const th_test tests[] = {TH_TEST(known_scene_as_point_sprites_matches_reference),
                                  TH_TEST(known_scene_by_compute_matches_reference),
                                  TH_TEST(large_sets_agree_with_quads_in_a_pile_with_shadows),
                                  TH_TEST(large_upload_in_chunks_and_threads_is_exact),
                                  TH_TEST(async_readback_returns_the_previous_frame)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
