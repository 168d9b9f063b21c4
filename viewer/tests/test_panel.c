/* The panel's actions (viewer/panel.h) driven programmatically in a real window (ctest runs this
 * under `xvfb-run -a`; skipped, 77, without an X display), with a frame source that records what
 * reaches it. The scene: two single spheres (objects 0 and 1) and a triangle (object 2) seen by
 * a camera on +z looking at the origin, so where each lands on screen is known from the camera
 * matrices alone.
 *
 * Checked, each from the frame after the action: hiding object 1 leaves the background where its
 * centre projects and object 0 still drawn; the parameters go to the source and come back;
 * pause / step / reset reach the source; a pick at sphere 0's projected centre finds object 0
 * point 0, and a drag to another screen point sends the source a target that projects back to
 * that point within 0.5 pixel at the picked depth (the sphere's centre depth: z = 0); the release
 * ends the drag; the reload button and a change of the watched file's modification time call
 * source.reload; the plots keep the energies the source reports, oldest first; and, when built
 * with Dear ImGui, the panel changes the window's pixels where it is drawn.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cglm/cglm.h>
#include <epoxy/gl.h>
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>

#include "gl_pin.h"
#include "harness.h"
#include "panel.h"
#include "viewer.h"

enum { W = 640, H = 480 };

static char g_watch[300];

typedef struct source {
  wf_render_points pts[2];
  wf_render_mesh mesh;
  float xyzr[2][4];
  float tri[3][4];
  uint32_t idx[3];
  wf_render_scene scene;
  bool handed;
  /* what reached the source */
  wf_viewer_params params;
  int params_sets, paused_calls, steps, resets, reloads, drags;
  bool paused, drag_active;
  int drag_object;
  uint32_t drag_point;
  float drag_target[3];
  uint64_t energy_frame;
} source;

static bool src_latest(void *user, wf_render_scene *out) {
  source *s = user;
  if (s->handed) return false;
  *out = s->scene;
  s->handed = true;
  return true;
}
static void src_paused(void *user, bool p) {
  source *s = user;
  s->paused = p, s->paused_calls++;
}
static void src_step(void *user) { ((source *)user)->steps++; }
static void src_reset(void *user) { ((source *)user)->resets++; }
static void src_reload(void *user) { ((source *)user)->reloads++; }
static bool src_params_get(void *user, wf_viewer_params *out) {
  *out = ((source *)user)->params;
  return true;
}
static void src_params_set(void *user, const wf_viewer_params *p) {
  source *s = user;
  s->params = *p, s->params_sets++;
}
static void src_drag(void *user, int object, uint32_t point, const float t[3], bool active) {
  source *s = user;
  s->drags++, s->drag_active = active, s->drag_object = object, s->drag_point = point;
  memcpy(s->drag_target, t, sizeof s->drag_target);
}
/* energies 10 J + frame, speeds frame / 10 m/s: a new frame at every call */
static void src_stats(void *user, wf_viewer_sim_stats *out) {
  source *s = user;
  s->energy_frame++;
  *out = (wf_viewer_sim_stats){.frame = s->energy_frame,
                               .has_energy = true,
                               .total_energy = 10.0 + (double)s->energy_frame,
                               .max_speed = (double)s->energy_frame / 10.0,
                               .energy_frame = s->energy_frame};
}

static void source_init(source *s) {
  memset(s, 0, sizeof *s);
  float a[2][4] = {{-1.0f, 0.0f, 0.0f, 0.3f}, {1.0f, 0.0f, 0.0f, 0.3f}};
  memcpy(s->xyzr, a, sizeof a);
  for (int i = 0; i < 2; i++) {
    s->pts[i] = (wf_render_points){.xyzr = s->xyzr[i], .count = 1, .name = i ? "right" : "left"};
    s->pts[i].color[0] = 1.0f, s->pts[i].color[1] = i ? 0.2f : 0.8f, s->pts[i].color[3] = 1.0f;
  }
  float t[3][4] = {{-0.3f, 1.2f, 0.0f, 1.0f}, {0.3f, 1.2f, 0.0f, 1.0f}, {0.0f, 1.6f, 0.0f, 1.0f}};
  memcpy(s->tri, t, sizeof t);
  s->idx[0] = 0, s->idx[1] = 1, s->idx[2] = 2;
  s->mesh = (wf_render_mesh){.positions = &s->tri[0][0],
                             .stride = 4,
                             .vertex_count = 3,
                             .indices = s->idx,
                             .triangle_count = 1,
                             .name = "sheet"};
  s->scene = (wf_render_scene){.points = s->pts,
                               .point_set_count = 2,
                               .meshes = &s->mesh,
                               .mesh_count = 1,
                               .camera = {{0, 0, 5}, {0, 0, 0}, {0, 1, 0}, 45, 0, 0},
                               .background = {0.0f, 0.0f, 0.0f, 1.0f}};
  s->params = (wf_viewer_params){.gravity = {0, -9.81f, 0}, .damping = 0.0f};
}

/* window coordinates of world point p with the scene's camera in a W x H window */
static void project(const source *s, const float p[3], float *x, float *y, float *ndc_z) {
  float view[16], proj[16];
  wf_render_camera_matrices(&s->scene.camera, (float)W / H, view, proj);
  mat4 V, P, VP;
  memcpy(V, view, sizeof V), memcpy(P, proj, sizeof P);
  glm_mat4_mul(P, V, VP);
  vec4 c = {p[0], p[1], p[2], 1.0f}, q;
  glm_mat4_mulv(VP, c, q);
  *x = (q[0] / q[3] * 0.5f + 0.5f) * W, *y = (0.5f - q[1] / q[3] * 0.5f) * H;
  if (ndc_z) *ndc_z = q[2] / q[3];
}

/* the rendered 3-D view's pixel at window point (x, y) (the renderer's framebuffer has the
 * window's size here: no HiDPI scaling under Xvfb) */
static const uint8_t *pixel(const uint8_t *rgba, float x, float y) {
  int ix = (int)x, iy = (int)y;
  return rgba + ((size_t)iy * W + (size_t)ix) * 4;
}

typedef struct script {
  source *s;
  int step;
  uint8_t *rgba;
  float panel_sum_off, panel_sum_on;
} script;

static float window_region_sum(int x0, int y0, int w, int h) {
  static uint8_t buf[200 * 200 * 4];
  glReadBuffer(GL_BACK);
  glReadPixels(x0, H - y0 - h, w, h, GL_RGBA, GL_UNSIGNED_BYTE, buf);
  float sum = 0.0f;
  for (int i = 0; i < w * h * 4; i++)
    sum += buf[i];
  return sum / (float)(w * h);
}

static bool on_frame(void *user, wf_viewer *v, long frame) {
  script *sc = user;
  source *s = sc->s;
  float x0, y0, x1, y1;
  project(s, s->xyzr[0], &x0, &y0, NULL);
  project(s, s->xyzr[1], &x1, &y1, NULL);
  wf_render *r = wf_viewer_renderer(v);
  switch (sc->step++) {
  case 0: return true; /* the frame arrives */
  case 1:
    CHECK_EQ_INT(wf_panel_object_count(v), 3);
    CHECK(strcmp(wf_panel_object_name(v, 0), "left") == 0);
    CHECK(strcmp(wf_panel_object_name(v, 2), "sheet") == 0);
    CHECK(wf_panel_visible(v, 1));
    wf_panel_set_visible(v, 1, false);
    CHECK(!wf_panel_visible(v, 1));
    return true;
  case 2: { /* drawn without object 1 */
    CHECK(wf_render_read_rgba(r, sc->rgba, (size_t)W * H * 4) == WF_OK);
    const uint8_t *p0 = pixel(sc->rgba, x0, y0), *p1 = pixel(sc->rgba, x1, y1);
    printf("  hidden: object 0 centre (%d %d %d), object 1 centre (%d %d %d)\n", p0[0], p0[1],
           p0[2], p1[0], p1[1], p1[2]);
    CHECK(p0[0] > 60);                 /* lit orange-red: drawn */
    CHECK(p1[0] <= 40 && p1[1] <= 40); /* background (black, and the grid is off) */
    wf_panel_set_visible(v, 1, true);
    /* the parameters */
    wf_viewer_params p;
    CHECK(wf_panel_params_get(v, &p));
    CHECK_NEAR(p.gravity[1], -9.81f, 0.0f);
    p.gravity[1] = -1.62f, p.damping = 0.5f; /* the Moon */
    CHECK(wf_panel_params_set(v, &p));
    CHECK_EQ_INT(s->params_sets, 1);
    CHECK(wf_panel_params_get(v, &p));
    CHECK_NEAR(p.gravity[1], -1.62f, 0.0f);
    CHECK_NEAR(p.damping, 0.5f, 0.0f);
    /* pause, step, reset (the panel's buttons call these) */
    wf_viewer_apply(v, WF_VIEWER_PAUSE);
    wf_viewer_apply(v, WF_VIEWER_STEP);
    wf_viewer_apply(v, WF_VIEWER_RESET);
    CHECK(s->paused);
    CHECK_EQ_INT(s->steps, 1);
    CHECK_EQ_INT(s->resets, 1);
    return true;
  }
  case 3: { /* object 1 drawn again; pick and drag */
    CHECK(wf_render_read_rgba(r, sc->rgba, (size_t)W * H * 4) == WF_OK);
    CHECK(pixel(sc->rgba, x1, y1)[0] > 60);
    wf_panel_pick_result pr;
    CHECK(!wf_panel_pick(v, 5.0, 5.0, &pr)); /* a corner: nothing there */
    CHECK_EQ_INT(pr.object, -1);
    CHECK(wf_panel_pick(v, x0 + 3.0, y0 - 2.0, &pr));
    CHECK_EQ_INT(pr.object, 0);
    CHECK_EQ_INT((int)pr.point, 0);
    CHECK(wf_panel_dragging(v));
    CHECK(s->drag_active);
    CHECK_EQ_INT(s->drag_object, 0);
    /* the triangle's apex (object 2, vertex 2) */
    float ax, ay;
    project(s, s->tri[2], &ax, &ay, NULL);
    wf_panel_pick_result pa;
    wf_panel_drag_end(v);
    CHECK(!s->drag_active);
    CHECK(wf_panel_pick(v, ax, ay, &pa));
    CHECK_EQ_INT(pa.object, 2);
    CHECK_EQ_INT((int)pa.point, 2);
    wf_panel_drag_end(v);
    /* drag sphere 0 to window point (400, 100): the target lies on the plane z = 0 (the picked
       depth) and projects back onto (400, 100) */
    CHECK(wf_panel_pick(v, x0, y0, &pr));
    float t[3], tx, ty;
    CHECK(wf_panel_drag_to(v, 400.0, 100.0, t));
    project(s, t, &tx, &ty, NULL);
    printf("  drag target (%.4f %.4f %.4f) projects to (%.2f %.2f)\n", t[0], t[1], t[2], tx, ty);
    CHECK_NEAR(t[2], 0.0f, 1e-3f); /* float NDC depth at 5 m: ~1e-4 m */
    CHECK_NEAR(tx, 400.0f, 0.5f);
    CHECK_NEAR(ty, 100.0f, 0.5f);
    CHECK_NEAR(s->drag_target[0], t[0], 0.0f);
    wf_panel_drag_end(v);
    CHECK(!wf_panel_dragging(v));
    CHECK(!s->drag_active);
    /* hidden objects cannot be picked */
    wf_panel_set_visible(v, 0, false);
    CHECK(!wf_panel_pick(v, x0, y0, &pr) || pr.object != 0);
    wf_panel_drag_end(v);
    wf_panel_set_visible(v, 0, true);
    /* reload: the button, then the watched file */
    wf_panel_reload(v);
    CHECK_EQ_INT(s->reloads, 1);
    return true;
  }
  default: break;
  }
  /* the watched file: touched with a later modification time, polled twice a second */
  if (sc->step == 5) {
    struct timespec ts[2] = {{0, UTIME_OMIT}, {time(NULL) + 5, 0}};
    CHECK(utimensat(AT_FDCWD, g_watch, ts, 0) == 0);
  }
  if (sc->step == 5) {
    sc->panel_sum_off = window_region_sum(W - 300, 20, 150, 150);
    wf_panel_show(v, true);
  }
  if (sc->step == 8) sc->panel_sum_on = window_region_sum(W - 300, 20, 150, 150);
  if (sc->step < 8 || (s->reloads < 2 && frame < 400)) return true;
  CHECK_EQ_INT(s->reloads, 2);
  /* the plots: the energies reported, oldest first, the newest last */
  float e[WF_PANEL_HISTORY], sp[WF_PANEL_HISTORY];
  int n = wf_panel_history(v, e, sp, WF_PANEL_HISTORY);
  CHECK(n >= 8);
  CHECK_NEAR(e[n - 1], 10.0f + (float)s->energy_frame, 0.0f);
  CHECK_NEAR(sp[n - 1], (float)s->energy_frame / 10.0f, 1e-6f);
  CHECK_NEAR(e[n - 1] - e[n - 2], 1.0f, 0.0f);
  printf("  panel region brightness: %.1f hidden, %.1f shown (ImGui %s)\n", sc->panel_sum_off,
         sc->panel_sum_on, wf_panel_gui_available() ? "built" : "not built");
  if (wf_panel_gui_available()) CHECK(fabsf(sc->panel_sum_on - sc->panel_sum_off) > 5.0f);
  return false;
}

TEST(panel_actions) {
  source s;
  source_init(&s);
  script sc = {.s = &s, .rgba = malloc((size_t)W * H * 4)};
  REQUIRE(sc.rgba);
  wf_viewer_desc d = {.width = W,
                      .height = H,
                      .no_vsync = true,
                      .hide_overlay = true,
                      .on_frame = on_frame,
                      .on_frame_user = &sc,
                      .watch_path = g_watch};
  d.source = (wf_viewer_source){.user = &s,
                                .latest = src_latest,
                                .set_paused = src_paused,
                                .step = src_step,
                                .reset = src_reset,
                                .stats = src_stats,
                                .params_get = src_params_get,
                                .params_set = src_params_set,
                                .drag = src_drag,
                                .reload = src_reload};
  vt_pin_gl_drivers();
  wf_status st = wf_viewer_run(&d);
  free(sc.rgba);
  if (st == WF_ERR_UNSUPPORTED) SKIP("%s", wf_render_last_error());
  CHECK_OK(st);
  CHECK(sc.step >= 8);
}

int main(int argc, char **argv) {
  const char *display = getenv("DISPLAY");
  if (!display || !*display) {
    printf("SKIP: no X display (DISPLAY is unset); ctest runs this under xvfb-run when it was "
           "found at configure time\n");
    return 77;
  }
  snprintf(g_watch, sizeof g_watch, "%s/weft_panel_watch_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  int fd = mkstemp(g_watch);
  if (fd < 0) {
    printf("cannot create a temporary file: %s\n", strerror(errno));
    return 1;
  }
  close(fd);
  static const th_test tests[] = {TH_TEST(panel_actions)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  remove(g_watch);
  return rc;
}
