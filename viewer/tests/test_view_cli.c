/* `weft view --screenshot` and `weft run --render` end to end (the program as $WEFT_CLI), on the
 * CPU backend with Mesa: ctest runs this under `xvfb-run -a` for the window.
 *
 * Scene (view_scene.json): three balls on the ground and a cloth hanging from its top edge, seen
 * from the front. The test steps the same scene itself (cpu:0; the solvers are deterministic, so
 * its frame 10 is bitwise the frame the programs draw) and checks:
 *  - the window's screenshot of frame 10 where each ball's centre and each cloth triangle's
 *    centroid project: the pixel there is that object, shaded as viewer.h documents (object i has
 *    colour wf_cli_palette[i] of cli/render_frames.h: orange balls, a blue cloth; the scene's one
 *    light shines along (-0.3, -0.6, -1), ambient 0.22), recomputed here by casting the pixel's ray
 *    against the balls, the cloth's triangles and the ground: within 4 of 255 per channel (the
 *    viewer's own tests hold the renderer to 3 of 255 against a ray tracer; one more for the
 *    cloth's smooth normals, which on a cloth that has barely swung differ from the face normal by
 *    well under a degree). Pixels whose 3x3 neighbourhood sees another object are not used. The
 *    image's top corners are the scene's background (0.1, 0.1, 0.12) within 2 of 255;
 *  - `weft run --render --every 5` of the same scene: frame_000000.png, frame_000001.png and
 *    frame_000002.png (frames 0, 5 and 10: pictures are numbered consecutively) exist, decode as
 *    320 x 240 (render.width x height) and are not blank (over 5% of the pixels differ from the
 *    background); its frame 10 equals the window's screenshot within 3 of 255 on every pixel
 *    (both are llvmpipe running the same shaders into the same kind of multisampled framebuffer;
 *    only the context differs, GLX and EGL).
 * Without a display (and so without xvfb-run) the program is skipped (77).
 */
#define _POSIX_C_SOURCE 200809L
#include <cglm/cglm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "viewer.h"
#include "weft/scene.h"
#include "weft/world.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

#ifndef WEFT_VIEW_SCENE
#define WEFT_VIEW_SCENE "view_scene.json"
#endif

enum { W = 320, H = 240, FRAMES = 10 };
/* cli/render_frames.h: wf_cli_palette[0] (object 0, the balls) and [1] (object 1, the cloth) */
static const double ball_color[3] = {0.90, 0.55, 0.15}, cloth_color[3] = {0.25, 0.55, 0.90};
static const double background[3] = {0.1, 0.1, 0.12};
static const double light_dir[3] = {0.3, 0.6, 1.0}; /* towards the light: minus its direction */
static const double ambient = 0.22;

static char g_dir[256], g_shot[512], g_run[512];
static int g_view_rc = -1, g_run_rc = -1;

/* The test's own frame 10 of the scene. */
static struct {
  bool ok;
  wf_render_camera cam;
  uint32_t n_balls, n_verts, n_tris;
  float (*balls)[4], (*verts)[4];
  const uint32_t *tris;
  wf_world *w;
} g;

static void state_make(void) {
  wf_scene *sc;
  if (wf_scene_load(WEFT_VIEW_SCENE, NULL, &sc) != WF_OK) {
    fprintf(stderr, "%s\n", wf_scene_errors());
    return;
  }
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu:0";
  wf_status st = wf_world_create(sc, &wd, &g.w);
  for (int k = 0; k < 3; k++) {
    g.cam.position[k] = (float)sc->camera.position[k];
    g.cam.target[k] = (float)sc->camera.target[k];
    g.cam.up[k] = (float)sc->camera.up[k];
  }
  g.cam.fov_y_deg = (float)sc->camera.fov_deg;
  wf_scene_destroy(sc);
  if (st != WF_OK) return;
  wf_world_object b, c;
  if (wf_world_step(g.w, FRAMES) != WF_OK || wf_world_object_get(g.w, 0, &b) != WF_OK ||
      wf_world_object_get(g.w, 1, &c) != WF_OK)
    return;
  g.n_balls = b.point_count, g.n_verts = c.point_count, g.n_tris = c.triangle_count;
  g.tris = c.triangles;
  g.balls = malloc((size_t)b.point_count * 16);
  g.verts = malloc((size_t)c.point_count * 16);
  g.ok = g.balls && g.verts && wf_world_object_download(g.w, 0, g.balls, NULL) == WF_OK &&
         wf_world_object_download(g.w, 1, g.verts, NULL) == WF_OK;
}

/* ---- a ray caster for the expected pixels ---------------------------------------------------- */

enum { OBJ_NONE = -1, OBJ_GROUND = 0, OBJ_BALL = 1, OBJ_CLOTH = 2 };

typedef struct ray_ref {
  mat4 inv;
  double eye[3];
} ray_ref;

static void ref_init(ray_ref *r) {
  float view[16], proj[16];
  wf_render_camera_matrices(&g.cam, (float)W / (float)H, view, proj);
  mat4 pv;
  glm_mat4_mul((vec4 *)proj, (vec4 *)view, pv);
  glm_mat4_inv(pv, r->inv);
  for (int k = 0; k < 3; k++)
    r->eye[k] = g.cam.position[k];
}

static void ray_dir(const ray_ref *r, int px, int py, double d[3]) {
  vec4 ndc = {(float)((px + 0.5) / W * 2.0 - 1.0), (float)(1.0 - (py + 0.5) / H * 2.0), 1, 1}, far;
  glm_mat4_mulv((vec4 *)r->inv, ndc, far);
  double len = 0;
  for (int k = 0; k < 3; k++)
    d[k] = far[k] / far[3] - r->eye[k], len += d[k] * d[k];
  for (int k = 0; k < 3; k++)
    d[k] /= sqrt(len);
}

static void sub(const float *a, const float *b, double o[3]) {
  for (int k = 0; k < 3; k++)
    o[k] = (double)a[k] - b[k];
}
static void cross(const double a[3], const double b[3], double o[3]) {
  o[0] = a[1] * b[2] - a[2] * b[1], o[1] = a[2] * b[0] - a[0] * b[2],
  o[2] = a[0] * b[1] - a[1] * b[0];
}
static double dot(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Nearest object on the ray through pixel (px, py): its kind, index (ball or triangle), the unit
 * normal facing the eye and the albedo (the cloth's back is 0.7 x its colour). */
static int cast(const ray_ref *r, int px, int py, int *index, double n[3], double albedo[3]) {
  double d[3], best = INFINITY;
  ray_dir(r, px, py, d);
  const double *o = r->eye;
  int kind = OBJ_NONE;
  if (d[1] < 0) { /* ground y = 0 */
    double t = -o[1] / d[1];
    if (t < best) best = t, kind = OBJ_GROUND, *index = 0;
  }
  for (uint32_t i = 0; i < g.n_balls; i++) {
    const float *s = g.balls[i];
    double oc[3] = {o[0] - s[0], o[1] - s[1], o[2] - s[2]};
    double b = dot(oc, d), h = b * b - (dot(oc, oc) - (double)s[3] * s[3]);
    double t = h >= 0 ? -b - sqrt(h) : INFINITY;
    if (t > 0 && t < best) best = t, kind = OBJ_BALL, *index = (int)i;
  }
  for (uint32_t i = 0; i < g.n_tris; i++) { /* Moeller-Trumbore */
    const float *a = g.verts[g.tris[3 * i]], *b = g.verts[g.tris[3 * i + 1]],
                *c = g.verts[g.tris[3 * i + 2]];
    double e1[3], e2[3], p[3], q[3], s[3];
    sub(b, a, e1), sub(c, a, e2), cross(d, e2, p);
    double det = dot(e1, p);
    if (fabs(det) < 1e-12) continue;
    for (int k = 0; k < 3; k++)
      s[k] = o[k] - a[k];
    double u = dot(s, p) / det;
    cross(s, e1, q);
    double v = dot(d, q) / det, t = dot(e2, q) / det;
    if (u >= 0 && v >= 0 && u + v <= 1 && t > 0 && t < best)
      best = t, kind = OBJ_CLOTH, *index = (int)i;
  }
  if (kind == OBJ_NONE || !n) return kind;
  double hit[3] = {o[0] + best * d[0], o[1] + best * d[1], o[2] + best * d[2]};
  if (kind == OBJ_BALL) {
    const float *s = g.balls[*index];
    for (int k = 0; k < 3; k++)
      n[k] = (hit[k] - s[k]) / s[3], albedo[k] = ball_color[k];
  } else if (kind == OBJ_CLOTH) {
    const uint32_t *t = &g.tris[3 * *index];
    double e1[3], e2[3];
    sub(g.verts[t[1]], g.verts[t[0]], e1), sub(g.verts[t[2]], g.verts[t[0]], e2), cross(e1, e2, n);
    double len = sqrt(dot(n, n)), back = dot(n, d) > 0 ? -1.0 : 1.0; /* front: counter-clockwise */
    for (int k = 0; k < 3; k++)
      n[k] *= back / len, albedo[k] = cloth_color[k] * (back < 0 ? 0.7 : 1.0);
  } else {
    n[0] = 0, n[1] = 1, n[2] = 0;
    albedo[0] = albedo[1] = albedo[2] = 0;
  }
  return kind;
}

/* viewer.h's shading, in world space, as 8-bit values: the scene's light (colour 1) and the fill
 * light cli/render_frames.c adds to a scene's lights (0.3 of it, from (-x, |y| / 2, -z)). */
static void shade(const double albedo[3], const double n[3], const double v[3], int rgb[3]) {
  const double fill_dir[3] = {-light_dir[0], 0.5 * fabs(light_dir[1]), -light_dir[2]};
  const double *dirs[2] = {light_dir, fill_dir}, colour[2] = {1.0, 0.3};
  double diff = ambient, spec = 0;
  for (int i = 0; i < 2; i++) {
    double len = sqrt(dot(dirs[i], dirs[i])), l[3], h[3];
    for (int k = 0; k < 3; k++)
      l[k] = dirs[i][k] / len, h[k] = l[k] + v[k];
    double nl = dot(n, l), hn = sqrt(dot(h, h)), nh = dot(n, h) / hn;
    diff += colour[i] * (nl > 0 ? nl : 0);
    spec += nl > 0 ? colour[i] * 0.25 * pow(nh > 0 ? nh : 0, 48) : 0;
  }
  for (int k = 0; k < 3; k++) {
    double c = albedo[k] * diff + spec;
    rgb[k] = (int)lround((c < 0 ? 0 : c > 1 ? 1 : c) * 255.0);
  }
}

/* Checks pixel (px, py) of img against the expected object and colour; false when the pixel is
 * not usable (another object in its 3x3 neighbourhood, or not the object wanted). */
static bool check_pixel(const ray_ref *r, const uint8_t *img, int px, int py, int want, int tol,
                        int *worst) {
  if (px < 1 || py < 1 || px >= W - 1 || py >= H - 1) return false;
  int idx, idx2;
  double n[3], a[3];
  int kind = cast(r, px, py, &idx, n, a);
  if (kind != want) return false;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      if (cast(r, px + dx, py + dy, &idx2, NULL, NULL) != kind) return false;
  double d[3], v[3];
  ray_dir(r, px, py, d);
  for (int k = 0; k < 3; k++)
    v[k] = -d[k];
  int rgb[3];
  shade(a, n, v, rgb);
  const uint8_t *p = &img[4 * (py * W + px)];
  for (int k = 0; k < 3; k++) {
    int e = abs(p[k] - rgb[k]);
    if (e > *worst) *worst = e;
    if (e > tol)
      TH_FAIL("pixel (%d, %d) of object %d: (%d, %d, %d), expected (%d, %d, %d) +- %d", px, py,
              want, p[0], p[1], p[2], rgb[0], rgb[1], rgb[2], tol);
  }
  return true;
}

static void project(const float p[3], int *px, int *py) {
  float view[16], proj[16];
  wf_render_camera_matrices(&g.cam, (float)W / (float)H, view, proj);
  vec4 wp = {p[0], p[1], p[2], 1.0f}, e, c;
  glm_mat4_mulv((vec4 *)view, wp, e);
  glm_mat4_mulv((vec4 *)proj, e, c);
  *px = (int)floor((c[0] / c[3] * 0.5 + 0.5) * W);
  *py = (int)floor((0.5 - c[1] / c[3] * 0.5) * H);
}

static uint8_t *load_png(const char *path, int *w, int *h) {
  int comp = 0;
  return stbi_load(path, w, h, &comp, 4);
}

/* ---- tests ----------------------------------------------------------------------------------- */

static void screenshot_checks(void) {
  int w = 0, h = 0;
  uint8_t *img = load_png(g_shot, &w, &h);
  REQUIRE(img);
  CHECK_EQ_INT(w, W);
  CHECK_EQ_INT(h, H);
  if (w != W || h != H) {
    stbi_image_free(img);
    return;
  }
  ray_ref r;
  ref_init(&r);
  int worst = 0, balls = 0, cloth = 0;
  for (uint32_t i = 0; i < g.n_balls; i++) {
    int px, py;
    project(g.balls[i], &px, &py);
    balls += check_pixel(&r, img, px, py, OBJ_BALL, 4, &worst);
  }
  for (uint32_t i = 0; i < g.n_tris; i++) {
    float c[3];
    for (int k = 0; k < 3; k++)
      c[k] = (g.verts[g.tris[3 * i]][k] + g.verts[g.tris[3 * i + 1]][k] +
              g.verts[g.tris[3 * i + 2]][k]) /
             3.0f;
    int px, py;
    project(c, &px, &py);
    cloth += check_pixel(&r, img, px, py, OBJ_CLOTH, 4, &worst);
  }
  /* every ball, and most of the cloth's triangles (small ones have a neighbour's edge nearby) */
  CHECK_EQ_INT(balls, g.n_balls);
  CHECK(cloth >= (int)g.n_tris / 2);
  int corners[2][2] = {{2, 2}, {W - 3, 2}};
  for (int i = 0; i < 2; i++) {
    REQUIRE(cast(&r, corners[i][0], corners[i][1], &(int){0}, NULL, NULL) == OBJ_NONE);
    const uint8_t *p = &img[4 * (corners[i][1] * W + corners[i][0])];
    for (int k = 0; k < 3; k++)
      CHECK_NEAR(p[k], lround(background[k] * 255.0), 2);
  }
  printf("  %d balls and %d cloth pixels checked, worst error %d of 255\n", balls, cloth, worst);
  stbi_image_free(img);
}

static void state_free(void) {
  wf_world_destroy(g.w);
  free(g.balls), free(g.verts);
  memset(&g, 0, sizeof g);
}

TEST(view_screenshot_shows_the_objects) {
  CHECK_EQ_INT(g_view_rc, 0);
  state_make();
  if (!g.ok) {
    TH_FAIL("stepping the scene here: %s", wf_last_error());
    state_free();
    return;
  }
  screenshot_checks();
  state_free();
}
TEST(run_render_writes_png_frames) {
  CHECK_EQ_INT(g_run_rc, 0);
  int bg[3];
  for (int k = 0; k < 3; k++)
    bg[k] = (int)lround(background[k] * 255.0);
  for (int n = 0; n <= FRAMES / 5; n++) { /* frames 0, 5, 10 */
    char path[600];
    snprintf(path, sizeof path, "%s/render/frame_%06d.png", g_run, n);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size > 100);
    int w = 0, h = 0;
    uint8_t *img = load_png(path, &w, &h);
    if (!img) {
      TH_FAIL("%s does not decode: %s", path, stbi_failure_reason());
      continue;
    }
    CHECK_EQ_INT(w, W);
    CHECK_EQ_INT(h, H);
    long drawn = 0;
    for (long i = 0; i < (long)w * h; i++)
      drawn +=
          abs(img[4 * i] - bg[0]) + abs(img[4 * i + 1] - bg[1]) + abs(img[4 * i + 2] - bg[2]) > 6;
    CHECK(drawn > (long)w * h / 20);
    stbi_image_free(img);
  }
  /* no temporary files left behind */
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s/render/frame_%06d.png.tmp", g_run, FRAMES / 5);
  CHECK(access(tmp, F_OK) != 0);
}

TEST(headless_frame_equals_window) {
  char path[600];
  snprintf(path, sizeof path, "%s/render/frame_%06d.png", g_run, FRAMES / 5); /* frame 10 */
  int w1 = 0, h1 = 0, w2 = 0, h2 = 0;
  uint8_t *a = load_png(g_shot, &w1, &h1), *b = load_png(path, &w2, &h2);
  if (a && b && w1 == w2 && h1 == h2) {
    int worst = 0;
    long over = 0;
    for (long i = 0; i < (long)w1 * h1 * 4; i++) {
      int e = abs(a[i] - b[i]);
      worst = e > worst ? e : worst;
      over += e > 3;
    }
    printf("  window vs headless: worst difference %d of 255\n", worst);
    CHECK_EQ_INT(over, 0);
  } else {
    TH_FAIL("cannot compare %s (%dx%d) with %s (%dx%d)", g_shot, w1, h1, path, w2, h2);
  }
  if (a) stbi_image_free(a);
  if (b) stbi_image_free(b);
}

TEST(view_without_display_says_so) {
  const char *cli = getenv("WEFT_CLI");
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "env -u DISPLAY -u WAYLAND_DISPLAY %s view %s 2>%s/nodisplay.txt", cli,
           WEFT_VIEW_SCENE, g_dir);
  int rc = system(cmd);
  CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
  char path[300], text[1000] = "";
  snprintf(path, sizeof path, "%s/nodisplay.txt", g_dir);
  FILE *f = fopen(path, "r");
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
  }
  CHECK(strstr(text, "no display") != NULL);
  remove(path);
}

static int run_cmd(const char *fmt, const char *a, const char *b, const char *c) {
  char cmd[2000];
  snprintf(cmd, sizeof cmd, fmt, a, b, c);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 255;
}

static void remove_tree(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
}

int main(int argc, char **argv) {
  const char *cli = getenv("WEFT_CLI");
  if (!cli) {
    printf("SKIP: WEFT_CLI is not set (ctest sets it to the weft program)\n");
    return 77;
  }
  if (!getenv("DISPLAY") || !*getenv("DISPLAY")) {
    printf("SKIP: no X display (ctest runs this test under xvfb-run when it is installed)\n");
    return 77;
  }
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/weft-test-view-XXXXXX", tmp);
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(g_shot, sizeof g_shot, "%s/shot.png", g_dir);
  snprintf(g_run, sizeof g_run, "%s/run", g_dir);
  g_view_rc = run_cmd("%s view %s --size 320x240 --frames 10 --screenshot %s", cli, WEFT_VIEW_SCENE,
                      g_shot);
  g_run_rc = run_cmd("%s run %s --frames 10 --every 5 --render --quiet --out %s", cli,
                     WEFT_VIEW_SCENE, g_run);
  th_test tests[] = {TH_TEST(view_screenshot_shows_the_objects),
                     TH_TEST(run_render_writes_png_frames), TH_TEST(headless_frame_equals_window),
                     TH_TEST(view_without_display_says_so)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  remove_tree();
  return rc;
}
