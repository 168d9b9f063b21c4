/* Headless renderer tests (EGL; Mesa's llvmpipe where there is no GPU).
 *
 * The known scene of test_scene.h is rendered and every pixel away from object edges is compared
 * with an independent double-precision ray tracer that shades with the model documented in
 * viewer.h. Tolerance: 3 of 255 per channel. Sources of difference: 8-bit rounding (0.5), float
 * vs double shading and pow() in the highlight (about 1), the GPU's interpolation of the impostor
 * quad's view-space position (a fraction of 1); edges are excluded, so nothing larger is expected.
 * Colliders, speed colours, wireframe, the grid, PNG round trips, shader loading and error
 * messages are checked as well. A machine where no EGL context can be made skips (77) with the
 * reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "gl_pin.h"
#include "harness.h"
#include "test_scene.h"
#include "viewer_internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

static char g_tmp[256]; /* a directory of this run's files */

#include "known_scene.h"

/* A headless renderer, or SKIP with the reason when this machine has no EGL/GL. */
#define HEADLESS(r, w, h)                                                                          \
  wf_render *r = NULL;                                                                             \
  do {                                                                                             \
    wf_status hs_ = wf_render_headless_create(w, h, &r);                                           \
    if (hs_ == WF_ERR_UNSUPPORTED) SKIP("no headless OpenGL: %s", wf_render_last_error());         \
    CHECK_R(hs_);                                                                                  \
  } while (0)

TEST(known_scene_matches_reference) { known_scene_with(-1, WF_RENDER_LARGE_AUTO); }

TEST(png_round_trip) {
  HEADLESS(r, VT_W, VT_H);
  vt_scene v;
  vt_scene_build(&v);
  CHECK_R(wf_render_draw(r, &v.scene));
  CHECK_R(wf_render_read_rgba(r, g_px, sizeof g_px));
  char path[512], tmp[520];
  snprintf(path, sizeof path, "%s/frame.png", g_tmp);
  wf_status st = wf_render_write_png(r, path);
  if (st != WF_OK) TH_FAIL("write: %s", wf_render_last_error());
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  CHECK(access(tmp, F_OK) != 0); /* renamed, not left behind */
  int w = 0, h = 0, n = 0;
  uint8_t *img = stbi_load(path, &w, &h, &n, 4);
  REQUIRE(img != NULL);
  CHECK_EQ_INT(w, VT_W);
  CHECK_EQ_INT(h, VT_H);
  CHECK(memcmp(img, g_px, sizeof g_px) == 0); /* lossless, rows in the same order */
  stbi_image_free(img);
  FILE *f = fopen(path, "rb");
  uint8_t sig[8] = {0};
  if (f) {
    CHECK_EQ_INT(fread(sig, 1, 8, f), 8);
    fclose(f);
  }
  CHECK(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0);

  /* a directory that does not exist: WF_ERR_IO naming the path */
  snprintf(path, sizeof path, "%s/no/such/dir/frame.png", g_tmp);
  CHECK_STATUS(wf_render_write_png(r, path), WF_ERR_IO);
  CHECK(strstr(wf_render_last_error(), path) != NULL);
  wf_render_destroy(r);
}

TEST(shaders_from_directory_and_built_in_agree) {
  HEADLESS(r, VT_W, VT_H);
  vt_scene v;
  vt_scene_build(&v);
  CHECK_R(wf_render_draw(r, &v.scene));
  CHECK_R(wf_render_read_rgba(r, g_px, sizeof g_px));
  CHECK(strcmp(wf_render_shader_origin(r), "built-in") == 0);
  wf_render_destroy(r);

  wf_render *r2 = NULL;
  CHECK_R(wf_render_headless_create_desc(
      &(wf_render_desc){.width = VT_W, .height = VT_H, .shader_dir = WEFT_TEST_SHADER_DIR}, &r2));
  CHECK(strcmp(wf_render_shader_origin(r2), WEFT_TEST_SHADER_DIR) == 0);
  static uint8_t px2[VT_W * VT_H * 4];
  CHECK_R(wf_render_draw(r2, &v.scene));
  CHECK_R(wf_render_read_rgba(r2, px2, sizeof px2));
  CHECK(memcmp(px2, g_px, sizeof px2) == 0);
  wf_render_destroy(r2);

  /* a directory without the shaders: the error names it and the missing file */
  wf_render *r3 = NULL;
  CHECK_STATUS(wf_render_headless_create_desc(
                   &(wf_render_desc){.width = 8, .height = 8, .shader_dir = g_tmp}, &r3),
               WF_ERR_IO);
  CHECK(r3 == NULL);
  CHECK(strstr(wf_render_last_error(), g_tmp) != NULL);
  CHECK(strstr(wf_render_last_error(), ".glsl") != NULL);
}

TEST(colliders_are_drawn) {
  /* looking down -z at a box, a sphere and a capsule with one light from the camera side */
  HEADLESS(r, 200, 100);
  wf_render_collider c[3] = {{.type = WF_RENDER_BOX,
                              .center = {-2.0f, 0, 0},
                              .half_extents = {0.5f, 0.5f, 0.5f},
                              .color = {0.8f, 0.3f, 0.1f, 1}},
                             {.type = WF_RENDER_SPHERE,
                              .center = {0, 0, 0},
                              .radius = 0.6f,
                              .color = {0.1f, 0.7f, 0.3f, 1}},
                             {.type = WF_RENDER_CAPSULE,
                              .p0 = {1.6f, -0.5f, 0},
                              .p1 = {2.4f, 0.5f, 0},
                              .radius = 0.25f,
                              .color = {0.2f, 0.4f, 0.9f, 1}}};
  wf_render_scene s = {.colliders = c,
                       .collider_count = 3,
                       .camera = {.position = {0, 0, 8}, .target = {0, 0, 0}, .fov_y_deg = 40},
                       .lights = {{{0, 0, 1}, {0.6f, 0.6f, 0.6f}}},
                       .light_count = 1,
                       .ambient = {0.2f, 0.2f, 0.2f},
                       .background = {0, 0, 0, 1}};
  CHECK_R(wf_render_draw(r, &s));
  static uint8_t img[200 * 100 * 4];
  CHECK_R(wf_render_read_rgba(r, img, sizeof img));
  float view[16], proj[16];
  wf_render_camera_matrices(&s.camera, 2.0f, view, proj);
  /* the box's front face (z = 0.5) faces the camera: normal (0, 0, 1) */
  const float face[3] = {-2.0f, 0.0f, 0.5f};
  vt_scene dummy;
  vt_scene_build(&dummy);
  dummy.scene.camera = s.camera;
  double x, y;
  vt_project(&dummy, 200, 100, face, &x, &y);
  const uint8_t *p = px_at(img, 200, x, y);
  double n[3] = {0, 0, 1}, a[3] = {0.8, 0.3, 0.1}, out[3];
  double e[3] = {0 - face[0], 0 - face[1], 8 - face[2]},
         el = sqrt(e[0] * e[0] + e[1] * e[1] + e[2] * e[2]);
  double vv[3] = {e[0] / el, e[1] / el, e[2] / el};
  vt_shade(&s, a, n, vv, out);
  for (int k = 0; k < 3; k++)
    CHECK_NEAR(p[k], lround(out[k] * 255), TOL);
  /* the sphere collider: green-dominated at its centre, background well outside it */
  const float sc[3] = {0, 0, 0.6f}, out1[3] = {0, 1.0f, 0};
  vt_project(&dummy, 200, 100, sc, &x, &y);
  p = px_at(img, 200, x, y);
  CHECK(p[1] > p[0] + 60 && p[1] > p[2] + 60);
  vt_project(&dummy, 200, 100, out1, &x, &y);
  p = px_at(img, 200, x, y);
  CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0);
  /* the capsule: its middle, its end caps (0.15 beyond p1 along the axis is inside the cap) and
     nothing 0.5 beyond */
  const float mid[3] = {2.0f, 0.0f, 0.25f};
  const float cap[3] = {2.4f + 0.15f * 0.6f, 0.5f + 0.15f * 0.8f, 0.0f};
  const float past[3] = {2.4f + 0.5f * 0.6f, 0.5f + 0.5f * 0.8f, 0.0f};
  vt_project(&dummy, 200, 100, mid, &x, &y);
  p = px_at(img, 200, x, y);
  CHECK(p[2] > p[0] + 60 && p[2] > p[1] + 30);
  vt_project(&dummy, 200, 100, cap, &x, &y);
  p = px_at(img, 200, x, y);
  CHECK(p[2] > p[0] + 30);
  vt_project(&dummy, 200, 100, past, &x, &y);
  p = px_at(img, 200, x, y);
  CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0);
  wf_render_destroy(r);
}

TEST(colour_by_speed_and_wireframe) {
  HEADLESS(r, VT_W, VT_H);
  vt_scene v;
  vt_scene_build(&v);
  /* speed colours on the big sphere: 0 of 4 m/s is the bottom of the ramp (0.1, 0.2, 0.9) */
  const float speed0[1] = {0.0f}, speed1[1] = {4.0f};
  v.points[0].speed = speed0;
  v.points[1].speed = speed1;
  v.scene.color_mode = WF_COLOR_BY_SPEED;
  CHECK_R(wf_render_draw(r, &v.scene));
  CHECK_R(wf_render_read_rgba(r, g_px, sizeof g_px));
  vt_ref ref;
  vt_ref_init(&ref, &v, VT_W, VT_H);
  double x, y, n[3], a[3], t, d[3], vv[3], c[3];
  vt_project(&v, VT_W, VT_H, vt_big, &x, &y);
  REQUIRE(vt_cast(&ref, (int)x, (int)y, &t, n, a) == VT_BIG);
  vt_ray(&ref, (int)x, (int)y, d);
  for (int k = 0; k < 3; k++)
    vv[k] = -d[k];
  const double blue[3] = {0.1, 0.2, 0.9}, red[3] = {0.9, 0.15, 0.1};
  vt_shade(&v.scene, blue, n, vv, c);
  const uint8_t *p = px_at(g_px, VT_W, x, y);
  for (int k = 0; k < 3; k++)
    CHECK_NEAR(p[k], lround(c[k] * 255), TOL);
  /* the small sphere at the top speed (speed_max 0: the largest, 4) is the top: red */
  vt_project(&v, VT_W, VT_H, vt_small, &x, &y);
  REQUIRE(vt_cast(&ref, (int)x, (int)y, &t, n, a) == VT_SMALL);
  vt_ray(&ref, (int)x, (int)y, d);
  for (int k = 0; k < 3; k++)
    vv[k] = -d[k];
  vt_shade(&v.scene, red, n, vv, c);
  p = px_at(g_px, VT_W, x, y);
  for (int k = 0; k < 3; k++)
    CHECK_NEAR(p[k], lround(c[k] * 255), TOL);

  /* wireframe: the quad's inside shows what is behind it (the ground or the background), its
     edges stay red */
  v.scene.color_mode = WF_COLOR_BY_OBJECT;
  v.scene.wireframe = true;
  CHECK_R(wf_render_draw(r, &v.scene));
  CHECK_R(wf_render_read_rgba(r, g_px, sizeof g_px));
  const float inside[3] = {2.0f, 0.5f, 0.0f};
  vt_project(&v, VT_W, VT_H, inside, &x, &y);
  p = px_at(g_px, VT_W, x, y);
  CHECK(!(p[0] > p[1] + 80 && p[0] > p[2] + 80));
  int red_px = 0;
  for (int i = 0; i < VT_W * VT_H; i++)
    red_px += g_px[i * 4] > g_px[i * 4 + 1] + 80 && g_px[i * 4] > g_px[i * 4 + 2] + 80;
  CHECK(red_px > 100); /* the outline: some hundreds of pixels, not thousands */
  CHECK(red_px < 2000);
  wf_render_destroy(r);
}

TEST(grid_lines_at_multiples_of_spacing) {
  /* straight down onto the grid: lines at x = k (spacing 1), cells dark */
  HEADLESS(r, 200, 200);
  wf_render_scene s = {
      .camera = {.position = {0.5f, 6, 0.5f},
                 .target = {0.5f, 0, 0.5f},
                 .up = {0, 0, -1},
                 .fov_y_deg = 60},
      .background = {0, 0, 0, 1},
      .grid = {.enabled = true, .spacing = 1.0f, .extent = 50.0f, .color = {1, 1, 1, 1}}};
  CHECK_R(wf_render_draw(r, &s));
  static uint8_t img[200 * 200 * 4];
  CHECK_R(wf_render_read_rgba(r, img, sizeof img));
  vt_scene dummy;
  vt_scene_build(&dummy);
  dummy.scene.camera = s.camera;
  double x, y;
  const float line[3] = {1.0f, 0.0f, 0.5f}, cell[3] = {1.5f, 0.0f, 0.5f};
  vt_project(&dummy, 200, 200, line, &x, &y);
  int best = 0; /* a one-pixel line: the brightest of the pixels next to x */
  for (int dx = -1; dx <= 1; dx++) {
    int v = px_at(img, 200, x + dx, y)[0];
    if (v > best) best = v;
  }
  CHECK(best > 120);
  vt_project(&dummy, 200, 200, cell, &x, &y);
  CHECK(px_at(img, 200, x, y)[0] < 10);
  wf_render_destroy(r);
}

TEST(smooth_normals) {
  /* a tent: two triangles meeting at the ridge x = 0 at 90 degrees; the ridge vertices' normal is
     the normalised sum of the two face normals (equal areas): straight up */
  const float pos[4 * 3] = {-1, 0, 0, 0, 1, 0, 0, 1, -1, 1, 0, 0};
  const uint32_t idx[6] = {0, 1, 2, 1, 3, 2};
  wf_render_mesh m = {
      .positions = pos, .stride = 3, .vertex_count = 4, .indices = idx, .triangle_count = 2};
  float out[4 * 7];
  CHECK_R(wf__mesh_vertices(&m, 0, out));
  const float s = 0.70710678f;
  CHECK_NEAR(out[0 * 7 + 3], -s, 1e-6); /* vertex 0: the left face only, (-1, 1, 0)/sqrt 2 */
  CHECK_NEAR(out[0 * 7 + 4], s, 1e-6);
  CHECK_NEAR(out[1 * 7 + 3], 0, 1e-6); /* ridge */
  CHECK_NEAR(out[1 * 7 + 4], 1, 1e-6);
  CHECK_NEAR(out[1 * 7 + 5], 0, 1e-6);
  CHECK_NEAR(out[3 * 7 + 3], s, 1e-6);
  /* an index out of range names the mesh and the index */
  const uint32_t bad[3] = {0, 1, 7};
  m.indices = bad, m.triangle_count = 1;
  CHECK_STATUS(wf__mesh_vertices(&m, 2, out), WF_ERR_INVALID);
  CHECK(strstr(wf_render_last_error(), "scene.meshes[2].indices[2] = 7") != NULL);
}

TEST(bad_scenes_are_refused_with_the_field) {
  HEADLESS(r, 16, 16);
  vt_scene v;
  vt_scene_build(&v);
  v.plane.type = (wf_render_collider_type)0;
  CHECK_STATUS(wf_render_draw(r, &v.scene), WF_ERR_INVALID);
  CHECK(strstr(wf_render_last_error(), "scene.colliders[0].type") != NULL);
  vt_scene_build(&v);
  v.scene.camera.target[0] = v.scene.camera.position[0];
  v.scene.camera.target[1] = v.scene.camera.position[1];
  v.scene.camera.target[2] = v.scene.camera.position[2];
  CHECK_STATUS(wf_render_draw(r, &v.scene), WF_ERR_INVALID);
  CHECK(strstr(wf_render_last_error(), "camera.position equals camera.target") != NULL);
  vt_scene_build(&v);
  v.mesh.stride = 5;
  CHECK_STATUS(wf_render_draw(r, &v.scene), WF_ERR_INVALID);
  CHECK(strstr(wf_render_last_error(), "scene.meshes[0].stride") != NULL);
  /* reading before anything was drawn, and a short buffer */
  wf_render_destroy(r);
  HEADLESS(r2, 16, 16);
  uint8_t small[16];
  CHECK_STATUS(wf_render_read_rgba(r2, small, sizeof small), WF_ERR_INVALID);
  CHECK(strstr(wf_render_last_error(), "1024") != NULL);
  wf_render_destroy(r2);
}

TEST(resize_and_two_renderers) {
  HEADLESS(a, 100, 80);
  HEADLESS(b, 64, 48); /* two contexts on one thread, each made current by its calls */
  vt_scene v;
  vt_scene_build(&v);
  CHECK_R(wf_render_draw(a, &v.scene));
  CHECK_R(wf_render_draw(b, &v.scene));
  CHECK_R(wf_render_resize(a, 64, 48));
  int w, h;
  wf_render_size(a, &w, &h);
  CHECK_EQ_INT(w, 64);
  CHECK_EQ_INT(h, 48);
  CHECK_STATUS(wf_render_read_rgba(a, g_px, sizeof g_px), WF_ERR_INVALID); /* nothing drawn */
  CHECK_R(wf_render_draw(a, &v.scene));
  static uint8_t pa[64 * 48 * 4], pb[64 * 48 * 4];
  CHECK_R(wf_render_read_rgba(a, pa, sizeof pa));
  wf_render_destroy(b); /* the display stays up for a */
  CHECK_R(wf_render_draw(a, &v.scene));
  CHECK_R(wf_render_read_rgba(a, pb, sizeof pb));
  CHECK(memcmp(pa, pb, sizeof pa) == 0);
  double x, y;
  vt_project(&v, 64, 48, vt_big, &x, &y);
  const uint8_t *p = px_at(pa, 64, x, y);
  CHECK(p[1] > p[0] + 60 && p[1] > p[2] + 60);
  wf_render_destroy(a);
}

TEST(gl_errors_are_reported_in_debug_builds) {
  HEADLESS(r, 16, 16);
  vt_scene v;
  vt_scene_build(&v);
  CHECK_R(wf_render_draw(r, &v.scene)); /* leaves the renderer's context current */
  wf_render_stats before, after;
  wf_render_stats_get(r, &before);
  glEnable(0x1234); /* GL_INVALID_ENUM */
  wf_render_stats_get(r, &after);
  CHECK_EQ_INT(glGetError(), GL_INVALID_ENUM);
#ifdef NDEBUG
  CHECK_EQ_INT(after.gl_errors, before.gl_errors); /* no debug output in release builds */
#else
  CHECK_EQ_INT(after.gl_errors, before.gl_errors + 1); /* counted by the debug callback */
#endif
  CHECK_R(wf_render_draw(r, &v.scene)); /* an earlier error is not blamed on the next draw */
  wf_render_destroy(r);
}

int main(int argc, char **argv) {
  snprintf(g_tmp, sizeof g_tmp, "%s/weft_viewer_test_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) {
    printf("cannot create a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  if (!vt_headless_gl()) { /* no EGL/GL here at all: the whole program is skipped */
    rmdir(g_tmp);
    return 77;
  }
  static const th_test tests[] = {TH_TEST(known_scene_matches_reference),
                                  TH_TEST(png_round_trip),
                                  TH_TEST(shaders_from_directory_and_built_in_agree),
                                  TH_TEST(colliders_are_drawn),
                                  TH_TEST(colour_by_speed_and_wireframe),
                                  TH_TEST(grid_lines_at_multiples_of_spacing),
                                  TH_TEST(smooth_normals),
                                  TH_TEST(bad_scenes_are_refused_with_the_field),
                                  TH_TEST(resize_and_two_renderers),
                                  TH_TEST(gl_errors_are_reported_in_debug_builds)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char path[600];
  snprintf(path, sizeof path, "%s/frame.png", g_tmp);
  remove(path);
  rmdir(g_tmp);
  return rc;
}
