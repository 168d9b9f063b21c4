/* The window path: wf_viewer_run under Xvfb (ctest runs it through `xvfb-run -a`; the GL is Mesa's
 * llvmpipe through GLX), with a fixed frame source that hands out the known scene of
 * test_scene.h once.
 *
 * Checked: the source protocol (latest until a frame comes, release of the held frame at the
 * end), the keyboard actions reaching the source (pause, step, speed, reset), the key bindings,
 * that the framebuffer has the requested size, and the screenshot: the same per-pixel reference
 * as the headless test (3 of 255), and against the headless rendering of the same scene: at most
 * 2 of 255 per channel on any pixel (both are llvmpipe running the same shaders into the same
 * kind of framebuffer, so they should agree to rounding; the window's context is GLX, the other
 * EGL). Without an X display this program is skipped (77) with the reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <epoxy/gl.h>
#define GLFW_INCLUDE_NONE /* GL comes from libepoxy */
#include <GLFW/glfw3.h>

#include "gl_pin.h"
#include "harness.h"
#include "test_scene.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

static char g_tmp[256];

/* The fixed frame source: one frame, then nothing newer. Counts every callback. */
typedef struct source {
  vt_scene v;
  int latest_calls, handed, released, paused_calls, steps, resets, speed_calls;
  bool paused;
  double speed;
  const wf_render_scene *released_ptr_check;
} source;

static bool src_latest(void *user, wf_render_scene *out) {
  source *s = user;
  s->latest_calls++;
  if (s->handed) return false;
  *out = s->v.scene;
  s->handed++;
  return true;
}
static void src_release(void *user, const wf_render_scene *f) {
  source *s = user;
  if (f->points == s->v.scene.points) s->released++;
}
static void src_paused(void *user, bool p) {
  source *s = user;
  s->paused = p, s->paused_calls++;
}
static void src_step(void *user) { ((source *)user)->steps++; }
static void src_reset(void *user) { ((source *)user)->resets++; }
static void src_speed(void *user, double sp) {
  source *s = user;
  s->speed = sp, s->speed_calls++;
}
static void src_stats(void *user, wf_viewer_sim_stats *out) {
  *out = (wf_viewer_sim_stats){.sim_ms = 1.5, .frame = 1, .devices = "cpu:0 (test source)"};
}

typedef struct run_state {
  source *src;
  char shot[512];
  wf_status shot_status;
  char shot_error[512];
  wf_viewer_stats stats;
  uint8_t window[VT_W * VT_H * 4]; /* the window's back buffer at frame 2: scene + overlay */
  bool window_read;
  int records; /* calls of desc.record (the O key) */
} run_state;

static void on_record(void *user, wf_viewer *v, char *msg, size_t n) {
  (void)v;
  ((run_state *)user)->records++;
  snprintf(msg, n, "recording (test)");
}

static bool on_frame(void *user, wf_viewer *v, long frame) {
  run_state *rs = user;
  if (frame == 0) vt_pin_gl_drivers();
  if (frame == 2) {
    rs->shot_status = wf_viewer_screenshot(v, rs->shot);
    snprintf(rs->shot_error, sizeof rs->shot_error, "%s", wf_render_last_error());
    wf_viewer_stats_get(v, &rs->stats);
    /* on_frame runs before the swap: the back buffer holds the frame with its overlay */
    if (rs->stats.framebuffer_width == VT_W && rs->stats.framebuffer_height == VT_H) {
      glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
      glReadBuffer(GL_BACK);
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadPixels(0, 0, VT_W, VT_H, GL_RGBA, GL_UNSIGNED_BYTE, rs->window);
      rs->window_read = glGetError() == GL_NO_ERROR;
    }
  }
  if (frame == 3) { /* the keys' actions, after the screenshot so they cannot change it */
    wf_viewer_apply(v, WF_VIEWER_PAUSE);
    wf_viewer_apply(v, WF_VIEWER_STEP);
    wf_viewer_apply(v, WF_VIEWER_FASTER);
    wf_viewer_apply(v, WF_VIEWER_FASTER);
    wf_viewer_apply(v, WF_VIEWER_SLOWER);
    wf_viewer_apply(v, WF_VIEWER_RESET);
    wf_viewer_apply(v, WF_VIEWER_WIREFRAME);
    wf_viewer_apply(v, WF_VIEWER_HELP);
    wf_viewer_apply(v, WF_VIEWER_RECORD);
  }
  return true;
}

TEST(key_bindings) {
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_SPACE, 0), WF_VIEWER_PAUSE);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_N, 0), WF_VIEWER_STEP);
  CHECK_EQ_INT(wf_viewer_action_for_key(0, '.'), WF_VIEWER_STEP);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_R, 0), WF_VIEWER_RESET);
  CHECK_EQ_INT(wf_viewer_action_for_key(0, '+'), WF_VIEWER_FASTER);
  CHECK_EQ_INT(wf_viewer_action_for_key(0, '-'), WF_VIEWER_SLOWER);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_KP_ADD, 0), WF_VIEWER_FASTER);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_W, 0), WF_VIEWER_WIREFRAME);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_C, 0), WF_VIEWER_COLOR_MODE);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_P, 0), WF_VIEWER_SCREENSHOT);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_H, 0), WF_VIEWER_HELP);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_F1, 0), WF_VIEWER_HELP);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_ESCAPE, 0), WF_VIEWER_QUIT);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_O, 0), WF_VIEWER_RECORD);
  CHECK_EQ_INT(wf_viewer_action_for_key(GLFW_KEY_Q, 0), WF_VIEWER_NONE);
  CHECK_EQ_INT(wf_viewer_action_for_key(0, 'w'), WF_VIEWER_NONE); /* letters: key events only */
}

TEST(window_matches_headless) {
  static source src;
  memset(&src, 0, sizeof src);
  vt_scene_build(&src.v);
  static run_state rs;
  memset(&rs, 0, sizeof rs);
  rs.src = &src;
  snprintf(rs.shot, sizeof rs.shot, "%s/window.png", g_tmp);
  wf_viewer_desc d = {.title = "weft viewer test",
                      .width = VT_W,
                      .height = VT_H,
                      .no_vsync = true,
                      .source = {.user = &src,
                                 .latest = src_latest,
                                 .release = src_release,
                                 .set_paused = src_paused,
                                 .step = src_step,
                                 .reset = src_reset,
                                 .set_speed = src_speed,
                                 .stats = src_stats},
                      .screenshot_dir = g_tmp,
                      .max_frames = 6,
                      .on_frame = on_frame,
                      .on_frame_user = &rs,
                      .record = on_record,
                      .record_user = &rs};
  wf_status st = wf_viewer_run(&d);
  if (st == WF_ERR_UNSUPPORTED) SKIP("%s", wf_render_last_error());
  if (st != WF_OK) {
    TH_FAIL("wf_viewer_run: %s: %s", wf_status_str(st), wf_render_last_error());
    return;
  }
  /* the source protocol */
  CHECK_EQ_INT(src.handed, 1);
  CHECK(src.latest_calls >= 6); /* asked every frame, never blocked on */
  CHECK_EQ_INT(src.released, 1);
  CHECK_EQ_INT(rs.stats.frames_received, 1);
  /* the actions of frame 3 */
  CHECK(src.paused);
  CHECK_EQ_INT(src.paused_calls, 1); /* pause; step found it paused already */
  CHECK_EQ_INT(src.steps, 1);
  CHECK_EQ_INT(src.resets, 1);
  CHECK_EQ_INT(src.speed_calls, 3);
  CHECK_NEAR(src.speed, 2.0, 0.0);
  CHECK_EQ_INT(rs.records, 1); /* the record key reaches desc.record */
  /* the framebuffer: Xvfb has no HiDPI scaling, so it is the requested size */
  CHECK_EQ_INT(rs.stats.framebuffer_width, VT_W);
  CHECK_EQ_INT(rs.stats.framebuffer_height, VT_H);
  CHECK(rs.stats.render_ms > 0.0);

  if (rs.shot_status != WF_OK) {
    TH_FAIL("screenshot: %s", rs.shot_error);
    return;
  }
  int w = 0, h = 0, n = 0;
  uint8_t *img = stbi_load(rs.shot, &w, &h, &n, 4);
  REQUIRE(img != NULL);
  CHECK_EQ_INT(w, VT_W);
  CHECK_EQ_INT(h, VT_H);
  if (w != VT_W || h != VT_H) {
    stbi_image_free(img);
    return;
  }
  /* the window shows the screenshot, with the text overlay over the top rows (three status
     lines wrapped to the 320-pixel window at scale 1: at most 8 rows of 11 pixels) and nothing
     else drawn over it (colour by object: no colour bar) */
  REQUIRE(rs.window_read);
  int overlay_px = 0, below_differ = 0;
  for (int y = 0; y < VT_H; y++) /* GL rows are bottom-up */
    for (int x = 0; x < VT_W; x++) {
      const uint8_t *a = rs.window + ((size_t)(VT_H - 1 - y) * VT_W + x) * 4;
      const uint8_t *b = img + ((size_t)y * VT_W + x) * 4;
      bool same = a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
      if (y < 90)
        overlay_px += !same;
      else
        below_differ += !same;
    }
  printf("  overlay: %d pixels of the top rows changed, %d below\n", overlay_px, below_differ);
  CHECK(overlay_px > 2000);
  CHECK_EQ_INT(below_differ, 0);

  vt_ref ref;
  vt_ref_init(&ref, &src.v, VT_W, VT_H);
  vt_report rep;
  vt_compare(&ref, img, 3, &rep);
  printf("  window vs reference: %d pixels compared, worst %d, %d off by more than 3\n",
         rep.compared, rep.worst, rep.bad);
  CHECK_EQ_INT(rep.bad, 0);
  CHECK(rep.compared > VT_W * VT_H * 8 / 10);

  /* the headless rendering of the same scene */
  wf_render *r = NULL;
  st = wf_render_headless_create(VT_W, VT_H, &r);
  if (st == WF_ERR_UNSUPPORTED) {
    stbi_image_free(img);
    SKIP("window ok; no headless context to compare with: %s", wf_render_last_error());
  }
  static uint8_t hp[VT_W * VT_H * 4];
  vt_pin_gl_drivers();
  if (st == WF_OK) st = wf_render_draw(r, &src.v.scene);
  if (st == WF_OK) st = wf_render_read_rgba(r, hp, sizeof hp);
  if (st != WF_OK) TH_FAIL("headless: %s", wf_render_last_error());
  wf_render_destroy(r);
  int worst = 0, differ = 0;
  for (size_t i = 0; st == WF_OK && i < sizeof hp; i++) {
    int e = abs((int)hp[i] - (int)img[i]);
    if (e > worst) worst = e;
    differ += e != 0;
  }
  printf("  window vs headless: %d of %zu bytes differ, worst by %d\n", differ, sizeof hp, worst);
  CHECK(worst <= 2);
  stbi_image_free(img);
  remove(rs.shot);
}

TEST(no_source_is_refused) {
  wf_viewer_desc d = {.width = 64, .height = 64};
  CHECK_STATUS(wf_viewer_run(&d), WF_ERR_INVALID);
  CHECK(strstr(wf_render_last_error(), "source.latest") != NULL);
}

int main(int argc, char **argv) {
  const char *display = getenv("DISPLAY");
  if (!display || !*display) {
    printf("SKIP: no X display (DISPLAY is unset); ctest runs this under xvfb-run when it was "
           "found at configure time\n");
    return 77;
  }
  snprintf(g_tmp, sizeof g_tmp, "%s/weft_viewer_window_XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) {
    printf("cannot create a temporary directory: %s\n", strerror(errno));
    return 1;
  }
  static const th_test tests[] = {TH_TEST(key_bindings), TH_TEST(window_matches_headless),
                                  TH_TEST(no_source_is_refused)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rmdir(g_tmp);
  return rc;
}
