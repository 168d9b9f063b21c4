/* The panel's actions (panel.h): visibility, parameters, picking and dragging, reload, the plots'
 * history and the watched scene file. Plain C on the window's state; the widgets
 * (panel_imgui.cpp) call these. */
#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <cglm/cglm.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "viewer_app.h"

void wf_panel_show(wf_viewer *v, bool show) {
  if (v) v->panel = show;
}
bool wf_panel_shown(const wf_viewer *v) { return v && v->panel; }

int wf_panel_object_count(const wf_viewer *v) {
  return v && v->holding ? v->held.point_set_count + v->held.mesh_count : 0;
}

const char *wf_panel_object_name(const wf_viewer *v, int i) {
  if (!v || i < 0 || i >= wf_panel_object_count(v)) return "";
  int np = v->held.point_set_count;
  const char *n = i < np ? v->held.points[i].name : v->held.meshes[i - np].name;
  if (n && *n) return n;
  if (i >= WF_PANEL_MAX_OBJECTS) return "object";
  wf_viewer *w = (wf_viewer *)v; /* the names are a cache of the viewer's */
  snprintf(w->names[i], sizeof w->names[i], "object %d", i);
  return w->names[i];
}

void wf_panel_set_visible(wf_viewer *v, int i, bool visible) {
  if (!v || i < 0 || i >= WF_PANEL_MAX_OBJECTS) return;
  v->hidden[i] = !visible;
  if (!visible && v->pick.active && v->pick.object == i) wf_panel_drag_end(v);
}

bool wf_panel_visible(const wf_viewer *v, int i) {
  return v && !(i >= 0 && i < WF_PANEL_MAX_OBJECTS && v->hidden[i]);
}

wf_render_scene wf__panel_visible_scene(wf_viewer *v, const wf_render_scene *s) {
  wf_render_scene out = *s;
  int np = s->point_set_count, nm = s->mesh_count;
  if (np + nm > WF_PANEL_MAX_OBJECTS) return out; /* more than the list: all drawn */
  int kp = 0, km = 0;
  for (int i = 0; i < np; i++)
    if (!v->hidden[i]) v->vis_points[kp++] = s->points[i];
  for (int i = 0; i < nm; i++)
    if (!v->hidden[np + i]) v->vis_meshes[km++] = s->meshes[i];
  out.points = v->vis_points, out.point_set_count = kp;
  out.meshes = v->vis_meshes, out.mesh_count = km;
  return out;
}

bool wf_panel_params_get(wf_viewer *v, wf_viewer_params *out) {
  if (!v || !out || !v->desc.source.params_get) return false;
  memset(out, 0, sizeof *out);
  return v->desc.source.params_get(v->desc.source.user, out);
}

bool wf_panel_params_set(wf_viewer *v, const wf_viewer_params *p) {
  if (!v || !p || !v->desc.source.params_set) return false;
  v->desc.source.params_set(v->desc.source.user, p);
  return true;
}

void wf_panel_reload(wf_viewer *v) {
  if (!v) return;
  wf_panel_drag_end(v);
  if (v->desc.source.reload) v->desc.source.reload(v->desc.source.user);
}

/* ---- picking ---------------------------------------------------------------------------------
 * Every visible point is projected with the camera the window draws with (the aspect of the
 * window); the cursor is in screen coordinates, as the projection's window is. */

static void view_proj(const wf_viewer *v, mat4 vp, float *ww, float *wh) {
  int w = 1, h = 1;
  if (v->win) glfwGetWindowSize(v->win, &w, &h);
  *ww = (float)(w > 0 ? w : 1), *wh = (float)(h > 0 ? h : 1);
  float view[16], proj[16];
  wf_render_camera_matrices(&v->cam, *ww / *wh, view, proj);
  mat4 V, P;
  memcpy(V, view, sizeof V), memcpy(P, proj, sizeof P);
  glm_mat4_mul(P, V, vp);
}

typedef struct pick_best {
  int object;
  uint32_t point;
  float d_px, ndc_z;
  float pos[3];
  float p11; /* 1 / tan(fov_y / 2): the projection's vertical scale */
} pick_best;

static void consider(pick_best *b, mat4 vp, float ww, float wh, double x, double y, int object,
                     uint32_t point, const float *p, float radius) {
  vec4 c = {p[0], p[1], p[2], 1.0f}, q;
  glm_mat4_mulv(vp, c, q);
  if (q[3] <= 1e-6f) return; /* behind the camera */
  float nx = q[0] / q[3], ny = q[1] / q[3], nz = q[2] / q[3];
  if (nz < -1.0f || nz > 1.0f) return;
  float sx = (nx * 0.5f + 0.5f) * ww, sy = (0.5f - ny * 0.5f) * wh;
  float d = hypotf(sx - (float)x, sy - (float)y);
  float reach = 12.0f;
  if (radius > 0.0f) /* the sphere's outline: radius / (w tan(fov / 2)) half-heights */
    reach = fmaxf(reach, radius * b->p11 / q[3] * 0.5f * wh);
  if (d > reach) return;
  if (b->object >= 0 && (d > b->d_px + 0.5f || (fabsf(d - b->d_px) <= 0.5f && nz >= b->ndc_z)))
    return;
  b->object = object, b->point = point, b->d_px = d, b->ndc_z = nz;
  memcpy(b->pos, p, sizeof b->pos);
}

bool wf_panel_pick(wf_viewer *v, double x, double y, wf_panel_pick_result *out) {
  wf_panel_pick_result none = {.object = -1};
  if (out) *out = none;
  if (!v || !v->holding || !v->have_cam) return false;
  mat4 vp;
  float ww, wh;
  view_proj(v, vp, &ww, &wh);
  float fov = v->cam.fov_y_deg > 0.0f ? v->cam.fov_y_deg : 45.0f;
  pick_best b = {.object = -1, .p11 = 1.0f / tanf(glm_rad(fov) * 0.5f)};
  const wf_render_scene *s = &v->held;
  for (int i = 0; i < s->point_set_count; i++) {
    if (!wf_panel_visible(v, i)) continue;
    const wf_render_points *ps = &s->points[i];
    for (size_t j = 0; j < ps->count; j++)
      consider(&b, vp, ww, wh, x, y, i, (uint32_t)j, ps->xyzr + 4 * j, ps->xyzr[4 * j + 3]);
  }
  for (int i = 0; i < s->mesh_count; i++) {
    int o = s->point_set_count + i;
    if (!wf_panel_visible(v, o)) continue;
    const wf_render_mesh *m = &s->meshes[i];
    int stride = m->stride > 0 ? m->stride : 4;
    for (size_t j = 0; j < m->vertex_count; j++)
      consider(&b, vp, ww, wh, x, y, o, (uint32_t)j, m->positions + (size_t)stride * j, 0.0f);
  }
  if (b.object < 0) return false;
  if (out) {
    out->object = b.object, out->point = b.point, out->distance_px = b.d_px;
    memcpy(out->position, b.pos, sizeof out->position);
  }
  v->pick.active = true;
  v->pick.object = b.object, v->pick.point = b.point, v->pick.ndc_z = b.ndc_z;
  memcpy(v->pick.target, b.pos, sizeof b.pos);
  if (v->desc.source.drag)
    v->desc.source.drag(v->desc.source.user, b.object, b.point, v->pick.target, true);
  return true;
}

bool wf_panel_drag_to(wf_viewer *v, double x, double y, float target[3]) {
  if (!v || !v->pick.active) return false;
  mat4 vp, inv;
  float ww, wh;
  view_proj(v, vp, &ww, &wh);
  glm_mat4_inv(vp, inv);
  vec4 n = {(float)(x / ww) * 2.0f - 1.0f, 1.0f - (float)(y / wh) * 2.0f, v->pick.ndc_z, 1.0f}, p;
  glm_mat4_mulv(inv, n, p);
  if (fabsf(p[3]) < 1e-12f) return false;
  for (int k = 0; k < 3; k++)
    v->pick.target[k] = p[k] / p[3];
  if (target) memcpy(target, v->pick.target, sizeof v->pick.target);
  if (v->desc.source.drag)
    v->desc.source.drag(v->desc.source.user, v->pick.object, v->pick.point, v->pick.target, true);
  return true;
}

void wf_panel_drag_end(wf_viewer *v) {
  if (!v || !v->pick.active) return;
  v->pick.active = false;
  if (v->desc.source.drag)
    v->desc.source.drag(v->desc.source.user, v->pick.object, v->pick.point, v->pick.target, false);
}

bool wf_panel_dragging(const wf_viewer *v) { return v && v->pick.active; }

/* ---- the plots and the watched file -------------------------------------------------------- */

int wf_panel_history(const wf_viewer *v, float *energy, float *max_speed, int max) {
  if (!v) return 0;
  int n = v->hist_n < max ? v->hist_n : max;
  int start = (v->hist_at - n + WF_PANEL_HISTORY) % WF_PANEL_HISTORY;
  for (int i = 0; i < n; i++) {
    int k = (start + i) % WF_PANEL_HISTORY;
    if (energy) energy[i] = v->hist_energy[k];
    if (max_speed) max_speed[i] = v->hist_speed[k];
  }
  return n;
}

void wf__panel_after_stats(wf_viewer *v, double now) {
  const wf_viewer_sim_stats *s = &v->sim;
  if (s->has_energy && (!v->hist_any || s->energy_frame != v->hist_frame)) {
    if (v->hist_any && s->energy_frame < v->hist_frame) v->hist_n = 0; /* a reset: start again */
    v->hist_energy[v->hist_at] = (float)s->total_energy;
    v->hist_speed[v->hist_at] = (float)s->max_speed;
    v->hist_at = (v->hist_at + 1) % WF_PANEL_HISTORY;
    if (v->hist_n < WF_PANEL_HISTORY) v->hist_n++;
    v->hist_frame = s->energy_frame, v->hist_any = true;
  }
  if (v->desc.watch_path && now - v->watch_t >= 0.5) {
    v->watch_t = now;
    struct stat st;
    if (stat(v->desc.watch_path, &st) == 0) {
      bool changed = v->watch_have && (st.st_mtim.tv_sec != v->watch_mtime.tv_sec ||
                                       st.st_mtim.tv_nsec != v->watch_mtime.tv_nsec);
      v->watch_mtime = st.st_mtim, v->watch_have = true;
      if (changed) wf_panel_reload(v);
    }
  }
}
