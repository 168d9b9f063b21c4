/* The window application: a GLFW window with an orbit camera, keyboard commands and a text
 * overlay, drawing the newest frame of a wf_viewer_source with the renderer.
 *
 * The loop never waits for the simulation: each iteration polls events, asks the source for a
 * newer frame (non-blocking), releases the frame it held once it has a newer one, draws what it
 * holds into the renderer's framebuffer, copies that to the window, draws the overlay on top and
 * swaps (the only wait: vsync, when on). So the frame rate is the renderer's, and a slow
 * simulation shows as a lower "sim" figure, not a frozen window. The camera, wireframe and colour
 * mode belong to the viewer: they start from the first frame (or desc.camera) and the user
 * changes them. GLFW must be used from the main thread, so wf_viewer_run must be too. */
#define GLFW_INCLUDE_NONE /* GL comes from libepoxy */
#include <GLFW/glfw3.h>
#include <cglm/cglm.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "viewer_app.h"
#include "viewer_internal.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static _Thread_local char g_glfw_error[512];
static void glfw_error(int code, const char *desc) {
  snprintf(g_glfw_error, sizeof g_glfw_error, "GLFW error 0x%x: %s", code, desc);
}

static void say(wf_viewer *v, double seconds, const char *fmt, const char *arg) {
  int n = snprintf(v->message, sizeof v->message, fmt, arg);
  (void)n; /* a long message is cut short */
  v->message_until = now_s() + seconds;
}

/* ---- camera -------------------------------------------------------------------------------- */

static void camera_defaults(wf_render_camera *c) {
  if (!c->up[0] && !c->up[1] && !c->up[2]) c->up[1] = 1.0f;
  glm_vec3_normalize(c->up);
}

/* Turns the eye around the target: dx around the up axis, dy over it (never past the poles). */
static void camera_orbit(wf_render_camera *c, float dx, float dy) {
  vec3 off, up = {c->up[0], c->up[1], c->up[2]};
  glm_vec3_sub(c->position, c->target, off);
  glm_vec3_rotate(off, -dx, up);
  vec3 right;
  glm_vec3_cross(up, off, right);
  if (glm_vec3_norm(right) > 1e-9f) {
    glm_vec3_normalize(right);
    float len = glm_vec3_norm(off);
    float ang = acosf(glm_clamp(glm_vec3_dot(off, up) / len, -1.0f, 1.0f)); /* from up */
    float want = glm_clamp(ang + dy, 0.02f, GLM_PIf - 0.02f);
    glm_vec3_rotate(off, want - ang, right);
  }
  glm_vec3_add(c->target, off, c->position);
}

/* Moves eye and target in the view plane by (dx, dy) window pixels of a window height px high. */
static void camera_pan(wf_render_camera *c, float dx, float dy, float height) {
  vec3 fwd, right, up;
  glm_vec3_sub(c->target, c->position, fwd);
  float dist = glm_vec3_norm(fwd);
  glm_vec3_normalize(fwd);
  glm_vec3_cross(fwd, c->up, right);
  if (glm_vec3_norm(right) < 1e-9f) return;
  glm_vec3_normalize(right);
  glm_vec3_cross(right, fwd, up);
  float fov = c->fov_y_deg > 0.0f ? c->fov_y_deg : 45.0f;
  float per_px = 2.0f * dist * tanf(glm_rad(fov) * 0.5f) / (height > 1.0f ? height : 1.0f);
  vec3 d;
  glm_vec3_scale(right, -dx * per_px, d);
  glm_vec3_muladds(up, dy * per_px, d);
  glm_vec3_add(c->position, d, c->position);
  glm_vec3_add(c->target, d, c->target);
}

static void camera_zoom(wf_render_camera *c, float steps) {
  vec3 off;
  glm_vec3_sub(c->position, c->target, off);
  float s = powf(0.85f, steps);
  if (glm_vec3_norm(off) * s < 1e-3f) return;
  glm_vec3_scale(off, s, off);
  glm_vec3_add(c->target, off, c->position);
}

/* ---- actions ------------------------------------------------------------------------------- */

wf_viewer_action wf_viewer_action_for_key(int key, unsigned codepoint) {
  if (key == 0) {
    switch (codepoint) {
    case '+':
    case '=': return WF_VIEWER_FASTER;
    case '-': return WF_VIEWER_SLOWER;
    case '.': return WF_VIEWER_STEP;
    default: return WF_VIEWER_NONE;
    }
  }
  switch (key) {
  case GLFW_KEY_SPACE: return WF_VIEWER_PAUSE;
  case GLFW_KEY_N: return WF_VIEWER_STEP;
  case GLFW_KEY_R: return WF_VIEWER_RESET;
  case GLFW_KEY_KP_ADD: return WF_VIEWER_FASTER;
  case GLFW_KEY_KP_SUBTRACT: return WF_VIEWER_SLOWER;
  case GLFW_KEY_W: return WF_VIEWER_WIREFRAME;
  case GLFW_KEY_C: return WF_VIEWER_COLOR_MODE;
  case GLFW_KEY_P: return WF_VIEWER_SCREENSHOT;
  case GLFW_KEY_H:
  case GLFW_KEY_F1: return WF_VIEWER_HELP;
  case GLFW_KEY_V: return WF_VIEWER_VSYNC;
  case GLFW_KEY_O: return WF_VIEWER_RECORD;
  case GLFW_KEY_TAB: return WF_VIEWER_PANEL;
  case GLFW_KEY_ESCAPE: return WF_VIEWER_QUIT;
  default: return WF_VIEWER_NONE;
  }
}

static void set_paused(wf_viewer *v, bool paused) {
  v->paused = paused;
  if (v->desc.source.set_paused) v->desc.source.set_paused(v->desc.source.user, paused);
}

static void set_speed(wf_viewer *v, double speed) {
  v->speed = glm_clamp(speed, 1.0 / 64.0, 64.0);
  if (v->desc.source.set_speed) v->desc.source.set_speed(v->desc.source.user, v->speed);
}

static void screenshot_next(wf_viewer *v) {
  const char *dir = v->desc.screenshot_dir ? v->desc.screenshot_dir : ".";
  char path[4096];
  for (;; v->shot_next++) { /* the first free number: never overwrite an earlier screenshot */
    snprintf(path, sizeof path, "%s/weft_%04d.png", dir, v->shot_next);
    if (access(path, F_OK) != 0 || v->shot_next >= 9999) break;
  }
  v->shot_next++;
  if (wf_render_write_png(v->r, path) == WF_OK)
    say(v, 3.0, "saved %s", path);
  else
    say(v, 6.0, "%s", wf_render_last_error());
}

void wf_viewer_apply(wf_viewer *v, wf_viewer_action a) {
  if (!v) return;
  switch (a) {
  case WF_VIEWER_NONE: break;
  case WF_VIEWER_PAUSE: set_paused(v, !v->paused); break;
  case WF_VIEWER_STEP:
    if (!v->paused) set_paused(v, true);
    if (v->desc.source.step) v->desc.source.step(v->desc.source.user);
    break;
  case WF_VIEWER_RESET:
    if (v->desc.source.reset) v->desc.source.reset(v->desc.source.user);
    if (v->have_cam) v->cam = v->cam_initial;
    break;
  case WF_VIEWER_FASTER: set_speed(v, v->speed * 2.0); break;
  case WF_VIEWER_SLOWER: set_speed(v, v->speed * 0.5); break;
  case WF_VIEWER_WIREFRAME: v->wireframe = !v->wireframe; break;
  case WF_VIEWER_COLOR_MODE: /* object, speed, strain, contact force, in turn */
    v->color_mode = (wf_render_color_mode)(((int)v->color_mode + 1) % 4);
    break;
  case WF_VIEWER_SCREENSHOT: screenshot_next(v); break;
  case WF_VIEWER_HELP: v->help = !v->help; break;
  case WF_VIEWER_VSYNC:
    v->vsync = !v->vsync;
    glfwSwapInterval(v->vsync ? 1 : 0);
    break;
  case WF_VIEWER_QUIT: glfwSetWindowShouldClose(v->win, GLFW_TRUE); break;
  case WF_VIEWER_PANEL:
    v->panel = !v->panel;
    if (v->panel && !v->gui)
      say(v, 4.0, "%s", "this weft was built without Dear ImGui: no panel (viewer/README.md)");
    break;
  case WF_VIEWER_RECORD: {
    char msg[4200] = "this program cannot record video";
    if (v->desc.record) v->desc.record(v->desc.record_user, v, msg, sizeof msg);
    say(v, 4.0, "%s", msg);
    break;
  }
  }
}

/* ---- GLFW callbacks ------------------------------------------------------------------------ */

static void on_key(GLFWwindow *w, int key, int scancode, int action, int mods) {
  if (action != GLFW_PRESS) return;
  wf_viewer *v = glfwGetWindowUserPointer(w);
  if (wf__panel_gui_wants_keyboard(v)) return;
  wf_viewer_apply(glfwGetWindowUserPointer(w), wf_viewer_action_for_key(key, 0));
}

static void on_char(GLFWwindow *w, unsigned codepoint) {
  if (wf__panel_gui_wants_keyboard(glfwGetWindowUserPointer(w))) return;
  wf_viewer_apply(glfwGetWindowUserPointer(w), wf_viewer_action_for_key(0, codepoint));
}

static void on_button(GLFWwindow *w, int button, int action, int mods) {
  wf_viewer *v = glfwGetWindowUserPointer(w);
  glfwGetCursorPos(w, &v->mouse_x, &v->mouse_y);
  if (action == GLFW_RELEASE && button == GLFW_MOUSE_BUTTON_LEFT) wf_panel_drag_end(v);
  if (action == GLFW_PRESS && wf__panel_gui_wants_mouse(v)) return;
  if (action == GLFW_PRESS && button == GLFW_MOUSE_BUTTON_LEFT && (mods & GLFW_MOD_CONTROL)) {
    /* Ctrl + left: pick a particle or vertex and drag it by a spring */
    wf_panel_pick_result r;
    if (wf_panel_pick(v, v->mouse_x, v->mouse_y, &r)) {
      char what[200];
      snprintf(what, sizeof what, "dragging %s, point %u", wf_panel_object_name(v, r.object),
               r.point);
      say(v, 2.0, "%s", what);
    }
    return;
  }
  if (button >= 0 && button < 3) v->drag[button] = action == GLFW_PRESS;
}

static void on_cursor(GLFWwindow *w, double x, double y) {
  wf_viewer *v = glfwGetWindowUserPointer(w);
  float dx = (float)(x - v->mouse_x), dy = (float)(y - v->mouse_y);
  v->mouse_x = x, v->mouse_y = y;
  if (wf_panel_drag_to(v, x, y, NULL)) return;
  if (!v->have_cam) return;
  int ww, wh;
  glfwGetWindowSize(w, &ww, &wh);
  if (v->drag[GLFW_MOUSE_BUTTON_LEFT])
    camera_orbit(&v->cam, dx * 0.008f, dy * 0.008f);
  else if (v->drag[GLFW_MOUSE_BUTTON_RIGHT] || v->drag[GLFW_MOUSE_BUTTON_MIDDLE])
    camera_pan(&v->cam, dx, dy, (float)wh);
}

static void on_scroll(GLFWwindow *w, double xoff, double yoff) {
  wf_viewer *v = glfwGetWindowUserPointer(w);
  if (wf__panel_gui_wants_mouse(v)) return;
  if (v->have_cam) camera_zoom(&v->cam, (float)yoff);
}

/* ---- the loop ------------------------------------------------------------------------------ */

static void draw_overlay(wf_viewer *v, int fb_w, int fb_h, const wf_render_stats *rs) {
  /* stb_easy_font's glyphs doubled, or at their size in a window under 800 wide */
  float cs = v->stats.content_scale > 0 ? v->stats.content_scale : 1.0f;
  float scale = ((float)fb_w / cs >= 800.0f ? 2.0f : 1.0f) * cs;
  float uw = (float)fb_w / scale, uh = (float)fb_h / scale;
  static const uint8_t white[4] = {235, 235, 235, 255}, dim[4] = {170, 175, 185, 255},
                       box[4] = {0, 0, 0, 150}, warn[4] = {255, 200, 90, 255};
  char line[3][512], realtime[48] = "";
  if (v->sim.realtime > 0)
    snprintf(realtime, sizeof realtime, "   real time x%.3g", v->sim.realtime);
  snprintf(line[0], sizeof line[0],
           "%.0f fps   render %.2f ms   sim %.2f ms/frame%s   asked x%g%s%s", v->stats.fps,
           v->stats.render_ms, v->sim.sim_ms, realtime, v->speed, v->paused ? "   PAUSED" : "",
           v->vsync ? "" : "   vsync off");
  snprintf(line[1], sizeof line[1],
           "frame %llu   particles %zu   triangles %zu   colliders %zu   colour: %s%s",
           (unsigned long long)v->sim.frame, rs->points, rs->triangles, rs->colliders,
           v->color_mode == WF_COLOR_BY_SPEED    ? "speed"
           : v->color_mode == WF_COLOR_BY_STRAIN ? "strain"
           : v->color_mode == WF_COLOR_BY_FORCE  ? "contact force"
                                                 : "object",
           v->wireframe ? "   wireframe" : "");
  snprintf(line[2], sizeof line[2], "%s%s%s   |   H: help", v->devices[0] ? v->devices : "",
           v->devices[0] ? "   |   " : "", wf_render_info(v->r));
  const char *lines[6] = {
      line[0],   line[1],
      line[2],   v->seen_frame ? NULL : "waiting for the first frame...",
      v->status, v->message[0] && now_s() < v->message_until ? v->message : NULL};
  static const char help[] = "left drag     orbit\n"
                             "right drag    pan (or middle drag)\n"
                             "wheel         zoom\n"
                             "space         pause / resume\n"
                             ". or N        single step\n"
                             "R             reset simulation and camera\n"
                             "+ / -         simulation speed x2 / /2\n"
                             "W             wireframe\n"
                             "C             colour: object, speed, strain, force\n"
                             "P             screenshot (PNG)\n"
                             "O             record video on / off\n"
                             "Tab           panel on / off\n"
                             "Ctrl+left     drag a particle / vertex\n"
                             "V             vsync on / off\n"
                             "H or F1       this help\n"
                             "Esc           quit";
  wf__overlay_row rows[48], hb, bar;
  int n = wf__overlay_layout(lines, 6, v->help ? help : NULL, uw, uh, rows, 48, &hb, &bar);
  for (int i = 0; i < n; i++) {
    char text[512];
    snprintf(text, sizeof text, "%.*s", rows[i].len, rows[i].text);
    const uint8_t *c = rows[i].source == 0 ? white : rows[i].source >= 3 ? warn : dim;
    if (rows[i].source == 4) c = dim;
    wf__overlay_box(v->ov, rows[i].x, rows[i].y, rows[i].w, rows[i].h, box);
    wf__overlay_text(v->ov, rows[i].x + 3.0f, rows[i].y + 2.0f, text, c);
  }
  if (v->help) {
    wf__overlay_box(v->ov, hb.x, hb.y, hb.w, hb.h, box);
    wf__overlay_text(v->ov, hb.x + 6.0f, hb.y + 4.0f, help, white);
  }
  if (v->color_mode != WF_COLOR_BY_OBJECT) { /* the colour bar: the ramp and its values */
    float top = !v->holding                           ? 0.0f
                : v->color_mode == WF_COLOR_BY_STRAIN ? v->held.strain_max
                : v->color_mode == WF_COLOR_BY_FORCE  ? v->held.force_max
                                                      : v->held.speed_max;
    wf__overlay_color_bar(v->ov, &bar, top, wf__color_mode_unit(v->color_mode));
  }
  wf__overlay_flush(v->ov, fb_w, fb_h, scale);
}

static void take_frame(wf_viewer *v) {
  wf_render_scene next;
  memset(&next, 0, sizeof next);
  if (!v->desc.source.latest(v->desc.source.user, &next)) return;
  if (v->holding && v->desc.source.release) v->desc.source.release(v->desc.source.user, &v->held);
  v->held = next;
  v->holding = true;
  v->stats.frames_received++;
  if (!v->seen_frame) {
    v->seen_frame = true;
    v->wireframe = next.wireframe;
    v->color_mode = next.color_mode;
  }
  if (!v->have_cam) {
    v->cam = v->cam_initial = next.camera;
    camera_defaults(&v->cam);
    camera_defaults(&v->cam_initial);
    v->have_cam = true;
  }
}

static wf_status run_loop(wf_viewer *v) {
  long frame = 0;
  v->fps_t0 = now_s();
  while (!glfwWindowShouldClose(v->win)) {
    glfwPollEvents();
    int fb_w, fb_h;
    glfwGetFramebufferSize(v->win, &fb_w, &fb_h);
    if (fb_w <= 0 || fb_h <= 0) { /* minimised */
      glfwWaitEventsTimeout(0.05);
      continue;
    }
    double t0 = now_s();
    take_frame(v);
    if (v->desc.source.stats) {
      wf_viewer_sim_stats s = {0};
      v->desc.source.stats(v->desc.source.user, &s);
      snprintf(v->devices, sizeof v->devices, "%s", s.devices ? s.devices : "");
      snprintf(v->status, sizeof v->status, "%s", s.status ? s.status : "");
      v->sim = s;
    }
    wf__panel_after_stats(v, t0);
    float sx = 1.0f, sy = 1.0f;
    glfwGetWindowContentScale(v->win, &sx, &sy);
    v->stats.content_scale = sx > 0.0f ? sx : 1.0f;
    v->stats.framebuffer_width = fb_w, v->stats.framebuffer_height = fb_h;

    wf_render_scene scene;
    if (v->holding) {
      scene = v->held;
    } else { /* nothing yet: the background, the grid and a default view */
      memset(&scene, 0, sizeof scene);
      scene.camera = (wf_render_camera){{4.0f, 3.0f, 6.0f}, {0, 0, 0}, {0, 1, 0}, 45, 0, 0};
      scene.grid.enabled = true;
    }
    if (v->have_cam) scene.camera = v->cam;
    scene.wireframe = v->wireframe;
    scene.color_mode = v->color_mode;
    scene = wf__panel_visible_scene(v, &scene);
    wf_status st = wf_render_resize(v->r, fb_w, fb_h);
    if (st == WF_OK) st = wf_render_draw(v->r, &scene);
    if (st == WF_OK) st = wf_render_present(v->r, 0, fb_w, fb_h);
    if (st != WF_OK) return st;
    wf_render_stats rs;
    wf_render_stats_get(v->r, &rs);
    if (!v->desc.hide_overlay) draw_overlay(v, fb_w, fb_h, &rs);
    if (v->panel) wf__panel_gui_frame(v);
    v->stats.render_ms = (now_s() - t0) * 1e3;
    v->stats.paused = v->paused, v->stats.wireframe = v->wireframe;
    v->stats.color_mode = v->color_mode, v->stats.sim_speed = v->speed;
    v->fps_frames++;
    double t = now_s();
    if (t - v->fps_t0 >= 0.5) {
      v->stats.fps = v->fps_frames / (t - v->fps_t0);
      v->fps_t0 = t, v->fps_frames = 0;
    }
    if (v->desc.on_frame && !v->desc.on_frame(v->desc.on_frame_user, v, frame))
      glfwSetWindowShouldClose(v->win, GLFW_TRUE);
    frame++;
    if (v->desc.max_frames > 0 && frame >= v->desc.max_frames)
      glfwSetWindowShouldClose(v->win, GLFW_TRUE);
    glfwSwapBuffers(v->win);
  }
  return WF_OK;
}

wf_status wf_viewer_run(const wf_viewer_desc *desc) {
  if (!desc || !desc->source.latest)
    return wf__render_error(WF_ERR_INVALID, __func__,
                            "desc%s is NULL: the viewer needs a frame source",
                            desc ? ".source.latest" : "");
  wf_viewer *v = calloc(1, sizeof *v);
  if (!v) return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "viewer");
  v->desc = *desc;
  v->speed = 1.0;
  v->vsync = !desc->no_vsync;
  v->panel = desc->show_panel;
  v->stats.content_scale = 1.0f;
  if (desc->camera) {
    v->cam = v->cam_initial = *desc->camera;
    camera_defaults(&v->cam);
    camera_defaults(&v->cam_initial);
    v->have_cam = true;
  }
  g_glfw_error[0] = '\0';
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    free(v);
    return wf__render_error(WF_ERR_UNSUPPORTED, __func__,
                            "cannot open a window (%s; DISPLAY=%s): on a machine without a "
                            "display use headless rendering (`weft run --render`) or xvfb-run",
                            g_glfw_error[0] ? g_glfw_error : "glfwInit failed",
                            getenv("DISPLAY") ? getenv("DISPLAY") : "(unset)");
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 4); /* 4.5 where there is (render_splat.c) */
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 5);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  glfwWindowHint(GLFW_SAMPLES, 0); /* the renderer multisamples its own framebuffer */
  glfwWindowHint(GLFW_DEPTH_BITS, 0);
#ifndef NDEBUG
  glfwWindowHint(GLFW_OPENGL_DEBUG_CONTEXT, GLFW_TRUE);
#endif
  int w = desc->width > 0 ? desc->width : 1280, h = desc->height > 0 ? desc->height : 800;
  v->win = glfwCreateWindow(w, h, desc->title ? desc->title : "weft", NULL, NULL);
  if (!v->win) { /* no 4.5: 3.3 core, which the renderer needs */
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    v->win = glfwCreateWindow(w, h, desc->title ? desc->title : "weft", NULL, NULL);
  }
  if (!v->win) {
    wf_status st = wf__render_error(WF_ERR_UNSUPPORTED, __func__,
                                    "cannot create a %d x %d window with OpenGL 3.3 core: %s", w, h,
                                    g_glfw_error[0] ? g_glfw_error : "unknown reason");
    glfwTerminate();
    free(v);
    return st;
  }
  glfwMakeContextCurrent(v->win);
  wfv_pin_gl_drivers();
  glfwSwapInterval(v->vsync ? 1 : 0);
  glfwSetWindowUserPointer(v->win, v);
  glfwSetKeyCallback(v->win, on_key);
  glfwSetCharCallback(v->win, on_char);
  glfwSetMouseButtonCallback(v->win, on_button);
  glfwSetCursorPosCallback(v->win, on_cursor);
  glfwSetScrollCallback(v->win, on_scroll);
  v->gui = wf__panel_gui_init(v); /* after ours: Dear ImGui's callbacks chain to them */

  int fb_w, fb_h;
  glfwGetFramebufferSize(v->win, &fb_w, &fb_h);
  wf_render_desc rd = {.width = fb_w > 0 ? fb_w : w,
                       .height = fb_h > 0 ? fb_h : h,
                       .samples = desc->samples,
                       .shader_dir = desc->shader_dir,
                       .log = desc->log,
                       .log_user = desc->log_user};
  wf_status st = wf_render_create(&rd, &v->r);
  if (st == WF_OK) st = wf__overlay_create(wf_render_shader_origin(v->r), &v->ov);
  if (st == WF_OK) {
    if (desc->start_paused) set_paused(v, true);
    st = run_loop(v);
  }
  wf_panel_drag_end(v);
  if (v->holding && desc->source.release) desc->source.release(desc->source.user, &v->held);
  if (v->gui) wf__panel_gui_shutdown(v);
  wf__overlay_destroy(v->ov);
  wf_render_destroy(v->r);
  glfwDestroyWindow(v->win);
  glfwTerminate();
  free(v);
  return st;
}

wf_status wf_viewer_screenshot(wf_viewer *v, const char *path) {
  if (!v) return wf__render_error(WF_ERR_INVALID, __func__, "viewer is NULL");
  return wf_render_write_png(v->r, path);
}

wf_status wf_viewer_screenshot_window(wf_viewer *v, const char *path) {
  if (!v) return wf__render_error(WF_ERR_INVALID, __func__, "viewer is NULL");
  int w, h;
  glfwGetFramebufferSize(v->win, &w, &h);
  uint8_t *rgba = malloc((size_t)w * (size_t)h * 4), *row = malloc((size_t)w * 4);
  if (!rgba || !row) {
    free(rgba), free(row);
    return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "%d x %d pixels", w, h);
  }
  glBindFramebuffer(GL_READ_FRAMEBUFFER, 0);
  glReadBuffer(GL_BACK); /* on_frame runs before the swap: the frame being shown next */
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  for (int y = 0; y < h / 2; y++) { /* GL's first row is the bottom */
    memcpy(row, rgba + (size_t)y * w * 4, (size_t)w * 4);
    memcpy(rgba + (size_t)y * w * 4, rgba + (size_t)(h - 1 - y) * w * 4, (size_t)w * 4);
    memcpy(rgba + (size_t)(h - 1 - y) * w * 4, row, (size_t)w * 4);
  }
  for (size_t i = 0; i < (size_t)w * h; i++)
    rgba[4 * i + 3] = 255;
  wf_status st = wf_png_write_rgba(path, w, h, rgba);
  free(rgba), free(row);
  return st;
}

wf_render *wf_viewer_renderer(wf_viewer *v) { return v ? v->r : NULL; }

void wf_viewer_stats_get(const wf_viewer *v, wf_viewer_stats *out) {
  if (v && out) *out = v->stats;
}
