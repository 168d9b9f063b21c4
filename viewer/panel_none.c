/* The panel's widgets in a build without Dear ImGui: none (panel.h's actions still work; the Tab
 * key says that the panel is missing). */
#include "viewer_app.h"

bool wf_panel_gui_available(void) { return false; }
bool wf__panel_gui_init(wf_viewer *v) {
  (void)v;
  return false;
}
void wf__panel_gui_frame(wf_viewer *v) { (void)v; }
bool wf__panel_gui_wants_mouse(const wf_viewer *v) {
  (void)v;
  return false;
}
bool wf__panel_gui_wants_keyboard(const wf_viewer *v) {
  (void)v;
  return false;
}
void wf__panel_gui_shutdown(wf_viewer *v) { (void)v; }
