/* The overlap measure's driver and arithmetic (measure.h). */
#include "measure.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal/error.h"

double wfpt_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double wfpt_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

wf_status wfpt_events_create(wf_device *const *devs, size_t per_part, size_t n, wf_event **ev) {
  memset(ev, 0, n * sizeof *ev);
  for (size_t e = 0; e < n; e++) {
    wf_status st = wf_event_create(devs[e / per_part], WF_EVENT_TIMING, &ev[e]);
    if (st != WF_OK) {
      wfpt_events_destroy(ev, e);
      return st;
    }
  }
  return WF_OK;
}

void wfpt_events_destroy(wf_event **ev, size_t n) {
  for (size_t e = 0; ev && e < n; e++) {
    wf_event_destroy(ev[e]);
    ev[e] = NULL;
  }
}

wf_status wfpt_longest(wf_event **ev, int np, size_t stride, const uint32_t *pairs, double *ms) {
  *ms = 0.0;
  for (int p = 0; p < np; p++) {
    double sum = 0.0;
    for (uint32_t i = 0; i < pairs[p]; i++) {
      wf_event **mk = ev + 2 * ((size_t)p * stride + i);
      float t = 0.0f;
      wf_status st = wf_event_elapsed_ms(mk[0], mk[1], &t);
      if (st != WF_OK) return st;
      sum += t;
    }
    *ms = sum > *ms ? sum : *ms;
  }
  return WF_OK;
}

double wfpt_critical_path(const double *before, double *after, int np, int steps,
                          const uint8_t *adj) {
  for (int k = 0; k < steps; k++)
    for (int p = 0; p < np; p++) {
      /* row k - 1 holds L already, row k still the times: p's L[k] reads no other row k */
      size_t i = (size_t)p * (size_t)steps + (size_t)k;
      double ready = (k ? after[i - 1] : 0.0) + (before ? before[i] : 0.0);
      for (int q = 0; q < np && k; q++) {
        double lq = after[(size_t)q * (size_t)steps + (size_t)(k - 1)];
        if (adj[q * np + p] && lq > ready) ready = lq;
      }
      after[i] += ready;
    }
  double ms = 0.0;
  for (int p = 0; p < np && steps > 0; p++) {
    double l = after[(size_t)p * (size_t)steps + (size_t)(steps - 1)];
    ms = l > ms ? l : ms;
  }
  return ms;
}

double wfpt_hidden_fraction(double frame_ms, double frame_no_halo_ms, double halo_ms) {
  double exposed = frame_ms - frame_no_halo_ms;
  double h = halo_ms > 0.0 ? 1.0 - exposed / halo_ms : 1.0;
  return h < 0.0 ? 0.0 : h > 1.0 ? 1.0 : h;
}

/* One frame of kind m (g, or as wfpt_run_frames decides without it) after ops->before and a wait
 * for every partition; the host's clock around the frame and a wait for it, or the compute. */
static wf_status timed_frame(wfpt_frame *f, const wfpt_measure_ops *ops, wfpt_mode m, wf_graph *g,
                             double *ms) {
  wfpt_set *s = f->set;
  wf_status st = ops->before ? ops->before(ops->ctx) : WF_OK;
  for (int p = 0; p < s->n && st == WF_OK; p++)
    if ((st = wf_stream_synchronize(s->part[p].stream)) != WF_OK)
      st = wfpt_fail(s, st, "waiting before a measured frame");
  if (st != WF_OK) return st;
  double t0 = wfpt_now_ms();
  st = wfpt_run_frames(f, 1, m, g);
  if (st == WF_OK && (st = wf_stream_synchronize(s->part[0].stream)) != WF_OK)
    st = wfpt_fail(s, st, "waiting for a measured frame");
  *ms = wfpt_now_ms() - t0;
  if (st == WF_OK && m == WFPT_COMPUTE) st = ops->compute_ms(ops->ctx, ms);
  return st;
}

wf_status wfpt_overlap_measure(wfpt_frame *f, const wfpt_measure_ops *ops, int frames,
                               uint64_t halo_bytes, wf_overlap *out) {
  wfpt_set *s = f->set;
  memset(out, 0, sizeof *out);
  if (frames < 1)
    return wf__error(WF_ERR_INVALID, NULL, "%s: overlap measure: frames %d must be >= 1", s->what,
                     frames);
  if (!ops || !ops->compute_ms)
    return wf__error(WF_ERR_INVALID, NULL, "%s: overlap measure: no compute_ms callback", s->what);
  const int kinds = s->n_links ? WFPT_MODES : 1;      /* no halo: nothing to leave out or compare */
  wf_graph *g[WFPT_MODES] = {NULL, NULL, NULL, NULL}; /* [WFPT_FULL]: f->graph */
  double *ms = malloc((size_t)frames * WFPT_MODES * sizeof *ms);
  if (!ms) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
  wf_status st = WF_OK;
  if (!f->no_graph) {
    if (!wfpt_frame_current(f)) st = wfpt_capture(f, WFPT_FULL, NULL);
    for (int m = 1; m < kinds && st == WF_OK; m++)
      if (m != WFPT_COMPUTE || ops->compute_captured) st = wfpt_capture(f, (wfpt_mode)m, &g[m]);
  }
  for (int i = -1; i < frames && st == WF_OK; i++)
    for (int m = 0; m < kinds && st == WF_OK; m++) {
      double t = 0.0;
      st = timed_frame(f, ops, (wfpt_mode)m, g[m], &t);
      if (i >= 0) ms[m * frames + i] = t;
    }
  if (st == WF_OK) {
    out->frame_ms = wfpt_median(ms, frames);
    out->frame_no_halo_ms = kinds > 1 ? wfpt_median(ms + frames, frames) : out->frame_ms;
    out->halo_ms = kinds > 1 ? wfpt_median(ms + 2 * frames, frames) : 0.0;
    out->compute_ms = kinds > 1 ? wfpt_median(ms + 3 * frames, frames) : out->frame_ms;
    out->hidden_fraction = wfpt_hidden_fraction(out->frame_ms, out->compute_ms, out->halo_ms);
    out->halo_bytes_per_frame = halo_bytes;
  }
  for (int m = 1; m < WFPT_MODES; m++)
    wf_graph_destroy(g[m]);
  free(ms);
  return st;
}
