/* How well the halo transfers hide behind the compute (wf_overlap in weft/partition.h), for both
 * solvers: the driver and the arithmetic it rests on.
 *
 * The driver (wfpt_overlap_measure) times the four kinds of frame (wfpt_mode), interleaved frame
 * by frame so that a drift of the clocks hits all alike, after one warm-up frame each: the
 * ordinary frame, the frame without the transfers and the transfers alone by the host's clock
 * around the frame and a wait for it; the compute (WFPT_COMPUTE) from the solver's marks in that
 * frame (ops.compute_ms: the particles take the critical path through their substeps' time
 * stamps, the cloth the longest partition's sum of its kernels' events). The medians go to the
 * wf_overlap; hidden_fraction = 1 - (frame - compute) / transfers, clamped to [0, 1], and 1
 * without links (one kind of frame only, which stands for the others). The state is not given
 * back: the solver keeps what it needs to restore (ops.before restores it before each frame, when
 * stale ghosts would otherwise change the work from frame to frame).
 */
#ifndef WEFT_SOLVERS_PARTITION_MEASURE_H
#define WEFT_SOLVERS_PARTITION_MEASURE_H

#include "frame.h"

typedef struct wfpt_measure_ops {
  void *ctx;
  /* Optional, not timed: before every frame (the particles restore their repartition's snapshot).
   * The driver then waits for every partition. */
  wf_status (*before)(void *ctx);
  /* Required: the compute of the WFPT_COMPUTE frame that was just waited for, ms. */
  wf_status (*compute_ms)(void *ctx, double *ms);
  /* true: the WFPT_COMPUTE frame is captured like the others (the particles' stamps are kernels);
   * false: it runs stage by stage (the cloth records timing events between its kernels). */
  bool compute_captured;
} wfpt_measure_ops;

/* Measures over `frames` frames (>= 1) of each kind; out->halo_bytes_per_frame = halo_bytes. */
wf_status wfpt_overlap_measure(wfpt_frame *f, const wfpt_measure_ops *ops, int frames,
                               uint64_t halo_bytes, wf_overlap *out);

/* The host's monotonic clock, ms (the solvers' repartition and capture times). */
double wfpt_now_ms(void);
/* The median of v[0..n) (n >= 1; sorts v). */
double wfpt_median(double *v, int n);
/* n timing events, per_part of them on each device devs[i / per_part]; on failure the ones made
 * are destroyed and the entries NULL. */
wf_status wfpt_events_create(wf_device *const *devs, size_t per_part, size_t n, wf_event **ev);
void wfpt_events_destroy(wf_event **ev, size_t n);
/* The longest partition's compute of a frame that was waited for: partition p recorded pairs[p]
 * stretches (start, end) at ev[2 (p * stride + i)], i < pairs[p]; the largest sum over p, ms. */
wf_status wfpt_longest(wf_event **ev, int np, size_t stride, const uint32_t *pairs, double *ms);
/* The longest path through the substeps of partitions that wait for each other's ghosts at every
 * substep: partition p's substep k takes before[i] (NULL: 0) without the ghosts, then after[i]
 * with them, i = p * steps + k; adj[q * np + p] nonzero where p takes ghosts from q. after is
 * replaced by the longest path ending with each substep,
 *   L[p][k] = after[p][k] + max(L[p][k - 1] + before[p][k], max over q -> p of L[q][k - 1]),
 * and the largest L[p][steps - 1] returned. (Against the longest partition's sum, the
 * partitions' waits for each other's jitter would count as transfer time not hidden.) */
double wfpt_critical_path(const double *before, double *after, int np, int steps,
                          const uint8_t *adj);
/* 1 - (frame_ms - frame_no_halo_ms) / halo_ms, clamped to [0, 1]; 1 when halo_ms is 0. */
double wfpt_hidden_fraction(double frame_ms, double frame_no_halo_ms, double halo_ms);

#endif
