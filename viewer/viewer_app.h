/* The window application's state (viewer_app.c), shared with the panel's actions (panel.c) and
 * the panel's widgets (panel_imgui.cpp through the functions at the end). Internal to viewer/.
 */
#ifndef WEFT_VIEWER_APP_H
#define WEFT_VIEWER_APP_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "panel.h"
#include "viewer.h"

typedef struct GLFWwindow GLFWwindow;
typedef struct wf__overlay wf__overlay;

struct wf_viewer {
  wf_viewer_desc desc;
  GLFWwindow *win;
  wf_render *r;
  wf__overlay *ov;
  wf_render_camera cam, cam_initial;
  bool have_cam;
  wf_render_scene held;
  bool holding, seen_frame;
  bool paused, wireframe, help, vsync;
  wf_render_color_mode color_mode;
  double speed;
  int shot_next;
  char message[4200]; /* holds a screenshot path (up to 4096) */
  double message_until;
  bool drag[3];
  double mouse_x, mouse_y;
  wf_viewer_stats stats;
  double fps_t0;
  int fps_frames;
  wf_viewer_sim_stats sim;
  char devices[256], status[256];

  /* the panel (panel.c) */
  bool panel, gui;
  bool hidden[WF_PANEL_MAX_OBJECTS];
  char names[WF_PANEL_MAX_OBJECTS][64];
  wf_render_points vis_points[WF_PANEL_MAX_OBJECTS];
  wf_render_mesh vis_meshes[WF_PANEL_MAX_OBJECTS];
  struct {
    bool active;
    int object;
    uint32_t point;
    float ndc_z;
    float target[3];
  } pick;
  float hist_energy[WF_PANEL_HISTORY], hist_speed[WF_PANEL_HISTORY];
  int hist_n, hist_at;
  uint64_t hist_frame;
  bool hist_any;
  double watch_t;
  struct timespec watch_mtime;
  bool watch_have;
};

/* panel.c: the scene as drawn (hidden objects left out; the arrays live in v) */
wf_render_scene wf__panel_visible_scene(wf_viewer *v, const wf_render_scene *s);
/* panel.c: after each source stats call: the plots' history; the watched file's poll */
void wf__panel_after_stats(wf_viewer *v, double now);

/* panel_imgui.cpp (panel_none.c without Dear ImGui): the widgets. init after the window's
 * callbacks are set (it chains to them); frame draws the panel over the window when shown. */
bool wf__panel_gui_init(wf_viewer *v);
void wf__panel_gui_frame(wf_viewer *v);
bool wf__panel_gui_wants_mouse(const wf_viewer *v);
bool wf__panel_gui_wants_keyboard(const wf_viewer *v);
void wf__panel_gui_shutdown(wf_viewer *v);

#endif
