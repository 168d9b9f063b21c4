/* The viewer's panel: object list with visibility, the simulation's parameters, pause / step /
 * reset, scene reload (a button, or the scene file's modification time polled), plots of the
 * total energy and the largest speed over the last frames, and picking and dragging a particle or
 * cloth vertex with the mouse (Ctrl + left drag), which pulls it by a spring.
 *
 * Two layers. The actions (this header's wf_panel_* functions, panel.c, plain C) work on a
 * running wf_viewer and are what the tests drive. The widgets (panel_imgui.cpp, the project's
 * only C++, built when Dear ImGui is found; panel_none.c otherwise) draw the panel with Dear ImGui
 * over the window and call the same functions. Everything runs on the window's thread (inside
 * wf_viewer_desc.on_frame, or the callbacks of the window).
 *
 * Objects are numbered as the frames list them: the point sets, then the meshes (for `weft view`,
 * the world's objects: emitters, then cloths).
 */
#ifndef WEFT_VIEWER_PANEL_H
#define WEFT_VIEWER_PANEL_H

#include <stdbool.h>
#include <stdint.h>

#include "viewer.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  WF_PANEL_MAX_OBJECTS = 64, /* objects the list shows (and can hide); more are always drawn */
  WF_PANEL_HISTORY = 240     /* frames the plots hold */
};

/** Whether this build draws the panel (Dear ImGui was found); the actions work either way. */
bool wf_panel_gui_available(void);
/** Shows or hides the panel (Tab). */
void wf_panel_show(wf_viewer *v, bool show);
bool wf_panel_shown(const wf_viewer *v);

/** Objects of the frame the window holds (0 before the first frame), and their names ("object
 *  N" when the frame gives none). */
int wf_panel_object_count(const wf_viewer *v);
const char *wf_panel_object_name(const wf_viewer *v, int object);
/** Hides or shows object `object` from the next draw on (pictures, screenshots and recordings
 *  leave it out too; picking skips it). */
void wf_panel_set_visible(wf_viewer *v, int object, bool visible);
bool wf_panel_visible(const wf_viewer *v, int object);

/** The source's parameters (false when the source has none); setting passes them to the source
 *  (source.params_set), which applies them between frames. */
bool wf_panel_params_get(wf_viewer *v, wf_viewer_params *out);
bool wf_panel_params_set(wf_viewer *v, const wf_viewer_params *p);

/** What a pick found. */
typedef struct wf_panel_pick_result {
  int object;     /* -1: nothing within reach */
  uint32_t point; /* particle / vertex within the object */
  float position[3];
  float distance_px; /* from the cursor to the point's centre on screen */
} wf_panel_pick_result;

/** Picks the point drawn nearest to window position (x, y) (screen coordinates, origin top left,
 *  as GLFW's cursor): the closest on screen whose centre lies within 12 pixels, or within its
 *  sphere's outline, of the cursor (the nearest to the camera among equals). A hit starts a drag:
 *  source.drag pulls the point towards the cursor's ray at the picked depth, until
 *  wf_panel_drag_end. Returns whether something was picked. */
bool wf_panel_pick(wf_viewer *v, double x, double y, wf_panel_pick_result *out);
/** Moves the drag's target under window position (x, y), at the picked depth; target (may be
 *  NULL) receives it. False when no drag is active. */
bool wf_panel_drag_to(wf_viewer *v, double x, double y, float target[3]);
void wf_panel_drag_end(wf_viewer *v);
bool wf_panel_dragging(const wf_viewer *v);

/** Asks the source to load the scene again (source.reload). */
void wf_panel_reload(wf_viewer *v);

/** The plots' data, oldest first: up to max values of the total energy (J) and the largest speed
 *  (m/s) of the frames the source reported (wf_viewer_sim_stats.has_energy). Returns how many. */
int wf_panel_history(const wf_viewer *v, float *energy, float *max_speed, int max);

#ifdef __cplusplus
}
#endif
#endif
