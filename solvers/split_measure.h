/* What the split solvers' overlap measures share (wf_particles_split_overlap_measure,
 * wf_cloth_split_overlap_measure): the median of the per-frame times and the hidden fraction. */
#ifndef WEFT_SPLIT_MEASURE_H
#define WEFT_SPLIT_MEASURE_H

#include <stdlib.h>

static inline int wf__split_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1; sorts v). */
static inline double wf__split_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, wf__split_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
