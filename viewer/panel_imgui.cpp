// The panel's widgets, drawn with Dear ImGui (its GLFW and OpenGL 3 backends) over the window:
// the project's only C++, behind the C functions of viewer_app.h. Every action goes through
// panel.h (the same functions the tests call) or wf_viewer_apply (the keys' actions), so this
// file holds layout only.
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stdio.h>

extern "C" {
#include "viewer_app.h"
}

extern "C" bool wf_panel_gui_available(void) { return true; }

extern "C" bool wf__panel_gui_init(wf_viewer *v) {
  IMGUI_CHECKVERSION();
  if (!ImGui::CreateContext()) return false;
  ImGuiIO &io = ImGui::GetIO();
  io.IniFilename = nullptr; // no imgui.ini next to the user's files
  ImGui::StyleColorsDark();
  // install_callbacks: ImGui's callbacks call the window's (set before) after its own
  if (!ImGui_ImplGlfw_InitForOpenGL(v->win, true)) {
    ImGui::DestroyContext();
    return false;
  }
  if (!ImGui_ImplOpenGL3_Init("#version 330 core")) {
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    return false;
  }
  return true;
}

extern "C" void wf__panel_gui_shutdown(wf_viewer *v) {
  (void)v;
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
}

extern "C" bool wf__panel_gui_wants_mouse(const wf_viewer *v) {
  return v && v->gui && v->panel && ImGui::GetIO().WantCaptureMouse;
}

extern "C" bool wf__panel_gui_wants_keyboard(const wf_viewer *v) {
  return v && v->gui && v->panel && ImGui::GetIO().WantCaptureKeyboard;
}

static void section_run(wf_viewer *v) {
  wf_viewer_stats s;
  wf_viewer_stats_get(v, &s);
  if (ImGui::Button(s.paused ? "Resume" : "Pause")) wf_viewer_apply(v, WF_VIEWER_PAUSE);
  ImGui::SameLine();
  if (ImGui::Button("Step")) wf_viewer_apply(v, WF_VIEWER_STEP);
  ImGui::SameLine();
  if (ImGui::Button("Reset")) wf_viewer_apply(v, WF_VIEWER_RESET);
  ImGui::SameLine();
  if (ImGui::Button("Reload")) wf_panel_reload(v);
  ImGui::Text("frame %llu   speed x%g", (unsigned long long)v->sim.frame, s.sim_speed);
  int mode = (int)s.color_mode;
  const char *modes[] = {"object", "speed", "strain", "contact force"};
  if (ImGui::Combo("colour by", &mode, modes, 4))
    while ((int)v->color_mode != mode)
      wf_viewer_apply(v, WF_VIEWER_COLOR_MODE);
}

static void section_objects(wf_viewer *v) {
  if (!ImGui::CollapsingHeader("Objects", ImGuiTreeNodeFlags_DefaultOpen)) return;
  int n = wf_panel_object_count(v);
  for (int i = 0; i < n && i < WF_PANEL_MAX_OBJECTS; i++) {
    bool vis = wf_panel_visible(v, i);
    ImGui::PushID(i);
    if (ImGui::Checkbox(wf_panel_object_name(v, i), &vis)) wf_panel_set_visible(v, i, vis);
    ImGui::PopID();
  }
  if (n > WF_PANEL_MAX_OBJECTS) ImGui::Text("(%d more, always shown)", n - WF_PANEL_MAX_OBJECTS);
}

static void section_params(wf_viewer *v) {
  wf_viewer_params p;
  if (!wf_panel_params_get(v, &p)) return;
  if (!ImGui::CollapsingHeader("Parameters", ImGuiTreeNodeFlags_DefaultOpen)) return;
  bool changed = false;
  changed |= ImGui::DragFloat3("gravity m/s2", p.gravity, 0.05f, -100.0f, 100.0f, "%.2f");
  changed |= ImGui::SliderFloat("damping 1/s", &p.damping, 0.0f, 20.0f, "%.3f");
  changed |= ImGui::DragFloat("drag k N/m, 0 auto", &p.drag_stiffness, 1.0f, 0.001f, 1e6f, "%.3g",
                              ImGuiSliderFlags_Logarithmic);
  changed |= ImGui::DragFloat("drag c N s/m", &p.drag_damping, 0.01f, 0.0f, 1e4f, "%.3g");
  for (int m = 0; m < p.material_count && m < WF_VIEWER_MAX_MATERIALS; m++) {
    wf_viewer_material *mt = &p.materials[m];
    ImGui::PushID(100 + m);
    ImGui::Text("material '%s'", mt->name);
    changed |= ImGui::DragFloat("stiffness N/m", &mt->stiffness, mt->stiffness * 0.01f + 1e-3f,
                                1e-3f, 1e9f, "%.4g", ImGuiSliderFlags_Logarithmic);
    changed |= ImGui::SliderFloat("friction", &mt->friction, 0.0f, 2.0f, "%.3f");
    changed |= ImGui::SliderFloat("restitution", &mt->restitution, 0.0f, 1.0f, "%.3f");
    ImGui::PopID();
  }
  if (changed) wf_panel_params_set(v, &p);
  ImGui::TextDisabled("Ctrl + left drag: pull a particle / vertex");
  if (wf_panel_dragging(v))
    ImGui::Text("dragging %s point %u", wf_panel_object_name(v, v->pick.object), v->pick.point);
}

static void section_plots(wf_viewer *v) {
  if (!ImGui::CollapsingHeader("Plots", ImGuiTreeNodeFlags_DefaultOpen)) return;
  static float e[WF_PANEL_HISTORY], s[WF_PANEL_HISTORY];
  int n = wf_panel_history(v, e, s, WF_PANEL_HISTORY);
  if (n == 0) {
    ImGui::TextDisabled("no energies reported yet");
    return;
  }
  char label[64];
  snprintf(label, sizeof label, "%.4g J", e[n - 1]);
  ImGui::PlotLines("total energy", e, n, 0, label, FLT_MAX, FLT_MAX, ImVec2(0, 60));
  snprintf(label, sizeof label, "%.3g m/s", s[n - 1]);
  ImGui::PlotLines("max speed", s, n, 0, label, 0.0f, FLT_MAX, ImVec2(0, 60));
}

extern "C" void wf__panel_gui_frame(wf_viewer *v) {
  if (!v->gui) return;
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  int w, h;
  glfwGetWindowSize(v->win, &w, &h);
  ImGui::SetNextWindowPos(ImVec2((float)w - 390.0f, 10.0f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(ImVec2(380.0f, 580.0f), ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowBgAlpha(0.85f);
  if (ImGui::Begin("weft panel (Tab)")) {
    ImGui::PushItemWidth(ImGui::GetWindowWidth() * 0.5f); /* room for the labels with units */
    section_run(v);
    section_objects(v);
    section_params(v);
    section_plots(v);
    ImGui::PopItemWidth();
  }
  ImGui::End();
  ImGui::Render();
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}
