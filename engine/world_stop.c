/* The world's stop rules (simulation.stop_when, weft/world.h): evaluated after every frame, the
 * first one met ends the run at that frame.
 *
 * Invariants
 *  - Rules are evaluated in scene order after each frame; the first met is the verdict and it
 *    never changes afterwards (wf_world_step steps no more frames).
 *  - "time" compares the frame's time frame / fps, computed as wf_world_stats_get does, with the
 *    rule's time: it fires at the first frame f with f / fps >= t, with no waiting.
 *  - A "below" rule counts the consecutive frames it held (reset to 0 by a frame where it did
 *    not); the counts travel in checkpoints, so stopping does not depend on where a run was cut.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal/error.h"
#include "world_internal.h"

static const char *const kind_key[] = {"time", "kinetic_energy_below", "max_speed_below"};
static const char *const kind_unit[] = {"s", "J", "m/s"};

static void describe(wf_world *w, int i, double measured) {
  const wf_scene_stop_rule *r = &w->stop_rules[i];
  wf_world_stop *s = &w->stop;
  char frames[48] = "";
  if (r->kind != WF_SCENE_STOP_TIME)
    snprintf(frames, sizeof frames, " for %d frame%s", r->frames, r->frames == 1 ? "" : "s");
  snprintf(s->text, sizeof s->text,
           "simulation.stop_when[%d] (%s %g %s%s) met at frame %lld, t = %g s: %g %s", i,
           kind_key[r->kind], r->value, kind_unit[r->kind], frames, (long long)w->frame,
           (double)w->frame / w->fps, measured, kind_unit[r->kind]);
}

wf_status wfw_stop_after_frame(wf_world *w) {
  if (w->n_stop == 0 || w->stop.rule >= 0) return WF_OK;
  bool need_stats = false;
  for (int i = 0; i < w->n_stop; i++)
    need_stats |= w->stop_rules[i].kind != WF_SCENE_STOP_TIME;
  wf_world_stats st = {0};
  double t = (double)w->frame / w->fps;
  if (need_stats) {
    wf_status s = wf_world_stats_get(w, &st);
    if (s != WF_OK) return s;
  }
  for (int i = 0; i < w->n_stop; i++) {
    const wf_scene_stop_rule *r = &w->stop_rules[i];
    double measured = r->kind == WF_SCENE_STOP_TIME             ? t
                      : r->kind == WF_SCENE_STOP_KINETIC_ENERGY ? st.kinetic_energy
                                                                : st.max_speed;
    bool met = r->kind == WF_SCENE_STOP_TIME ? measured >= r->value : measured < r->value;
    w->stop_run[i] = met ? w->stop_run[i] + 1 : 0;
    if (w->stop.rule < 0 && met && w->stop_run[i] >= r->frames) {
      w->stop = (wf_world_stop){.rule = i,
                                .kind = r->kind,
                                .threshold = r->value,
                                .frames = r->frames,
                                .frame = w->frame,
                                .time = t,
                                .value = measured};
      describe(w, i, measured);
    }
  }
  return WF_OK;
}

bool wf_world_stop_reason(const wf_world *w, wf_world_stop *out) {
  bool fired = w && w->stop.rule >= 0;
  if (out) {
    if (fired)
      *out = w->stop;
    else
      memset(out, 0, sizeof *out), out->rule = -1;
  }
  return fired;
}

int64_t wf_world_last_frame(const wf_world *w) {
  if (!w) return 0;
  return w->stop.rule >= 0 ? w->stop.frame : (int64_t)w->frames;
}

void wfw_stop_save(const wf_world *w, uint64_t out[1 + WF_SCENE_MAX_STOP_RULES]) {
  memset(out, 0, 8 * (1 + WF_SCENE_MAX_STOP_RULES));
  out[0] = (uint64_t)w->n_stop;
  for (int i = 0; i < w->n_stop; i++)
    out[1 + i] = (uint64_t)w->stop_run[i];
}

void wfw_stop_restore(wf_world *w, const void *section, size_t bytes) {
  uint64_t in[1 + WF_SCENE_MAX_STOP_RULES];
  memset(w->stop_run, 0, sizeof w->stop_run);
  w->stop.rule = -1;
  if (!section || bytes != sizeof in) return;
  memcpy(in, section, sizeof in);
  if (in[0] != (uint64_t)w->n_stop) return; /* other rules: their counts mean nothing here */
  for (int i = 0; i < w->n_stop; i++)
    w->stop_run[i] = (int64_t)in[1 + i];
}
