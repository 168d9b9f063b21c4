/* What the solvers' overlap measures share (wf_particles_overlap_measure,
 * wf_cloth_overlap_measure): the timing events of the cloth's compute frames and the
 * longest partition's compute from them, the particles' compute (the critical path through the
 * substeps' times), the medians of the per-frame times and the hidden fraction. */
#ifndef WEFT_SPLIT_MEASURE_H
#define WEFT_SPLIT_MEASURE_H

#include <stdint.h>
#include <stdlib.h>

#include "weft/gpu.h"

static inline int wf__split_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1; sorts v). */
static inline double wf__split_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, wf__split_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* n timing events, per_part of them (2 a timed stretch) on each device devs[i / per_part]; NULL
 * entries where creating one failed (its status is returned). */
static inline wf_status wf__split_events_create(wf_device *const *devs, size_t per_part, size_t n,
                                                wf_event **ev) {
  for (size_t e = 0; e < n; e++) {
    wf_status st = wf_event_create(devs[e / per_part], WF_EVENT_TIMING, &ev[e]);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

static inline void wf__split_events_destroy(wf_event **ev, size_t n) {
  for (size_t e = 0; ev && e < n; e++)
    if (ev[e]) wf_event_destroy(ev[e]);
}

/* The longest partition's compute of a frame that was waited for: partition p recorded pairs[p]
 * stretches (start, end) at ev[2 (p * stride + i)], i < pairs[p]; the largest sum over p, ms.
 * (The cloth's: its stretches are stages and colour passes, not one per substep; the particles
 * take the critical path, wf__split_critical_path.) */
static inline wf_status wf__split_longest(wf_event **ev, int np, size_t stride,
                                          const uint32_t *pairs, double *ms) {
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

/* The compute of a frame whose partitions wait for each other at every substep: the longest path
 * through the substeps. Partition p's substep k + 1 reads the ghosts its neighbours wrote at their
 * substep k, so the part of it that needs them cannot start before they are done; with jitter
 * between the partitions (one slow in this substep, another in the next) no frame is as short as
 * the longest partition's sum, and against that sum the partitions' waits for each other would
 * count as copy time the frame did not hide. The longest path is the frame a halo exchange that
 * costs nothing would give. Partition p's substep k takes before[i] (NULL: 0) without the ghosts,
 * then after[i] with them, i = p * steps + k; adj[q * np + p] nonzero where p takes ghosts from q
 * (a link q -> p). after is replaced by the longest path that ends with each substep,
 *   L[p][k] = after[p][k] + max(L[p][k - 1] + before[p][k], max over q -> p of L[q][k - 1]),
 * (L[.][-1] = 0) and the largest L[p][steps - 1] is returned. One partition, or none linked: its
 * sum. A pure function, so it can be checked against known times. */
static inline double wf__split_critical_path(const double *before, double *after, int np, int steps,
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

/* The medians of the measure's kinds of frame, ms[kind * frames + f] (sorts ms): an ordinary
 * frame, one without the copies, the copies alone, the compute; with one kind (no halo) the
 * ordinary frame stands for the others and the copies take 0. */
static inline void wf__split_medians(double *ms, int frames, int kinds, double *frame,
                                     double *no_halo, double *halo, double *compute) {
  *frame = wf__split_median(ms, frames);
  *no_halo = kinds > 1 ? wf__split_median(ms + frames, frames) : *frame;
  *halo = kinds > 1 ? wf__split_median(ms + 2 * frames, frames) : 0.0;
  *compute = kinds > 1 ? wf__split_median(ms + 3 * frames, frames) : *frame;
}

/* The part of the halo copies' time (halo_ms, alone) that does not lengthen the frame (frame_ms,
 * against frame_no_halo_ms without the copies): 1 - exposed / halo_ms, clamped to [0, 1]; 1
 * without copies. */
static inline double wf__split_hidden_fraction(double frame_ms, double frame_no_halo_ms,
                                               double halo_ms) {
  double exposed = frame_ms - frame_no_halo_ms;
  double h = halo_ms > 0.0 ? 1.0 - exposed / halo_ms : 1.0;
  return h < 0.0 ? 0.0 : h > 1.0 ? 1.0 : h;
}

#endif
