/* Forces on colliders: what the particles and cloths exert on each collider, summed over a frame
 * in 64-bit fixed point, written once for both backends (DESIGN.md, "one math, two backends").
 *
 * Every contact with a collider adds the impulse J (N·s) the collider received over the substep
 * (minus the one it gave the particle or vertex: its momentum change from that contact) and the
 * moment r x J about the collider's reference point (its pivot where its pose puts it at that
 * time, wfx_collider_ref). The host divides the frame's sums by the frame's time: the frame
 * average of the force and torque, not the last substep's.
 *
 * Determinism: floating-point sums depend on their order; integer sums do not. Each component
 * of each contribution (a float) is split exactly into two integers
 *     hi = floor(J 2^40)            (units of 2^-40 N·s, signed)
 *     lo = (J 2^40 - hi) 2^24       (units of 2^-64 N·s, in [0, 2^24))
 * (both exact in double: a float has 24 significant bits; bits below 2^-64 N·s are dropped), and
 * the hi and lo parts are summed in separate 64-bit integers (modulo 2^64: wrap-around cannot
 * depend on the order either). So the sums, and the forces, are bitwise the same whatever order
 * the contacts are added in: over 1..N partitions (each adds its own particles' contacts; the
 * host adds the partitions' integers), on the CPU and CUDA backends, with or without the warp
 * aggregation below. Range: |sum of J over a frame| < 2^23 N·s (8.4e6 N·s: 5e8 N at 60 frames a
 * second) per component, one contribution |J| < 2^22 N·s (larger ones are clamped), at most 2^40
 * contributions a frame per collider (the lo sums); resolution 2^-64 N·s (5.4e-20) per
 * contribution, so a 0.1 mm grain's weight over a 10 µs substep (1.4e-13 N·s) keeps ~22 bits.
 *
 * CUDA: contacts with one collider from the lanes of a warp are summed first (the lanes that
 * reach the add together, grouped by collider with __match_any_sync, each part reduced with
 * __reduce_add_sync), and one lane adds the warp's sum with one 64-bit atomic per word: millions
 * of particles resting on one floor make 1/32 of the atomics on its 12 words. CPU: each kernel
 * call sums into a table of its own and adds it to the device table at its end (wfx_forces_flush).
 *
 * Only while measured (wf_*_measure_collider_forces; the solvers pass a NULL table otherwise, and
 * the frame has no clear). Cost when on (the worst case is a single layer, where every
 * particle touches a collider, and there it is ~25 ns a contact on the CPU): a layer of 4096
 * grains resting on a floor, CPU, 32 substeps, median of 5 runs, per particle and substep: DEM
 * 252 ns with vs 222 ns without (+13%), XPBD 283 vs 256 ns (+10%); in a pile only the bottom
 * layer touches the floor, so a pile of L layers pays ~12% / L (granular_column.json, 50 layers:
 * ~0.3%). On a GPU the contact kernels wait on memory; the add is ~40 arithmetic instructions a
 * contact (double precision for the split, 1/2 rate on H100) plus, per warp and collider, one
 * __match_any_sync, 30 __reduce_add_sync and 12 atomics from one lane, so no address sees more
 * than one atomic per warp and substep (not measured here: no GPU).
 */
#ifndef WEFT_COLLIDER_FORCE_H
#define WEFT_COLLIDER_FORCE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "solvers/collider/collider_math.h"
#include "weft/hd.h"

#define WFX_MAX_COLLIDERS 64
/* Words per collider: hi parts of force x, y, z, torque x, y, z, then their lo parts. */
#define WFX_FORCE_WORDS 12
#define WFX_FORCE_BYTES ((size_t)WFX_MAX_COLLIDERS * WFX_FORCE_WORDS * 8u)
#define WFX_FORCE_HI    1099511627776.0 /* 2^40 */
#define WFX_FORCE_LO    16777216.0      /* 2^24 */

/* Where a kernel adds its contacts' impulses: CUDA, the device table (WFX_FORCE_WORDS per
 * collider); CPU, a table of the call's own (sum, touched: colliders whose rows are in use, the
 * rest unset), added to the device table by wfx_forces_flush. sum NULL: not accumulated. */
typedef struct wfx_forces {
  unsigned long long *sum;
  uint64_t touched;
} wfx_forces;

/* The reference point of collider c at time t in the solver's frame: the pivot where the pose
 * puts it, plus c->ref (the shift of an analytic collider's shape into the solver's frame,
 * which its pose does not carry: particle/collider.h, wfp_collider_to_frame). */
WF_HD static inline void wfx_collider_ref(const wfp_collider *c, float t, float *r) {
  wfx_pose P = wfx_collider_pose(c, t);
  r[0] = P.p[0] + c->ref.x, r[1] = P.p[1] + c->ref.y, r[2] = P.p[2] + c->ref.z;
}

/* The two integer parts of one component (see above). */
WF_HD static inline void wfx_fixed(float j, unsigned long long *hi, unsigned long long *lo) {
  if (!(j == j)) j = 0.0f; /* NaN: the solver flags it; the sums stay finite */
  j = j < -4194304.0f ? -4194304.0f : j > 4194304.0f ? 4194304.0f : j; /* (no libm calls) */
  double f = (double)j * WFX_FORCE_HI;
  long long t = (long long)f; /* toward zero (|f| < 2^63); floor without a library call */
  t -= (double)t > f;
  *hi = (unsigned long long)t;
  *lo = (unsigned long long)(long long)((f - (double)t) * WFX_FORCE_LO);
}

#if defined(__CUDA_ARCH__)
/* The warp's contacts with collider k among the lanes that got here together, one atomic a word
 * (see above). Parts of <= 22 bits keep each warp sum below 2^32. */
__device__ static inline void wfx_forces_add_warp(unsigned long long *sum, uint32_t k,
                                                  const unsigned long long *hi,
                                                  const unsigned long long *lo) {
  unsigned peers = __match_any_sync(__activemask(), k);
  int leader = __ffs(peers) - 1;
  bool lead = (int)(threadIdx.x & 31u) == leader;
  unsigned long long *row = sum + (size_t)k * WFX_FORCE_WORDS;
  for (int w = 0; w < 6; w++) {
    unsigned long long h = hi[w];
    unsigned a = __reduce_add_sync(peers, (unsigned)(h & 0x3fffffu));
    unsigned b = __reduce_add_sync(peers, (unsigned)((h >> 22) & 0x3fffffu));
    unsigned c = __reduce_add_sync(peers, (unsigned)(h >> 44));
    unsigned d = __reduce_add_sync(peers, (unsigned)(lo[w] & 0x3fffffu));
    unsigned e = __reduce_add_sync(peers, (unsigned)(lo[w] >> 22));
    if (lead) {
      atomicAdd(&row[w], (unsigned long long)a + ((unsigned long long)b << 22) +
                             ((unsigned long long)c << 44));
      atomicAdd(&row[6 + w], (unsigned long long)d + ((unsigned long long)e << 22));
    }
  }
}
#endif

/* Adds the impulse J (N·s, on the collider) at point x (the solver's frame) on collider k (c) at
 * time t, and its moment about the collider's reference point; tau (N·m·s, may be NULL) is a
 * couple added besides (a particle's contact torque). */
WF_HD static inline void wfx_forces_add(wfx_forces *F, const wfp_collider *c, uint32_t k, float t,
                                        const float *x, const float *J, const float *tau) {
  if (!F || !F->sum) return;
  float r0[3];
  wfx_collider_ref(c, t, r0);
  float rx = x[0] - r0[0], ry = x[1] - r0[1], rz = x[2] - r0[2];
  float v[6] = {
      J[0], J[1], J[2], ry * J[2] - rz * J[1], rz * J[0] - rx * J[2], rx * J[1] - ry * J[0]};
  if (tau) v[3] += tau[0], v[4] += tau[1], v[5] += tau[2];
  unsigned long long hi[6], lo[6];
  for (int w = 0; w < 6; w++)
    wfx_fixed(v[w], &hi[w], &lo[w]);
#if defined(__CUDA_ARCH__)
  wfx_forces_add_warp(F->sum, k, hi, lo);
#else
  unsigned long long *row = F->sum + (size_t)k * WFX_FORCE_WORDS;
  if (!(F->touched & (1ull << k))) {
    F->touched |= 1ull << k;
    memset(row, 0, WFX_FORCE_WORDS * sizeof *row);
  }
  for (int w = 0; w < 6; w++)
    row[w] += hi[w], row[6 + w] += lo[w];
#endif
}

#if !defined(__CUDACC__)
/* CPU: adds a call's own table (F, WFX_FORCE_WORDS per collider) to the device table dst. */
static inline void wfx_forces_flush(const wfx_forces *F, unsigned long long *dst) {
  if (!dst) return;
  for (uint32_t k = 0; k < WFX_MAX_COLLIDERS; k++) {
    if (!(F->touched & (1ull << k))) continue;
    for (int w = 0; w < WFX_FORCE_WORDS; w++) {
      unsigned long long v = F->sum[(size_t)k * WFX_FORCE_WORDS + w];
      if (v) __atomic_fetch_add(&dst[(size_t)k * WFX_FORCE_WORDS + w], v, __ATOMIC_RELAXED);
    }
  }
}
#endif

/* The sum of n tables (each WFX_FORCE_WORDS words of collider k) into force (N) and torque
 * (N·m), divided by the time they were summed over (s). */
static inline void wfx_forces_read(const unsigned long long *const *tables, int n, uint32_t k,
                                   double seconds, double force[3], double torque[3]) {
  unsigned long long s[WFX_FORCE_WORDS] = {0};
  for (int i = 0; i < n; i++)
    for (int w = 0; w < WFX_FORCE_WORDS; w++)
      s[w] += tables[i][(size_t)k * WFX_FORCE_WORDS + w];
  double out[6];
  for (int w = 0; w < 6; w++)
    out[w] = seconds > 0.0 ? ((double)(long long)s[w] / WFX_FORCE_HI +
                              (double)s[6 + w] / (WFX_FORCE_HI * WFX_FORCE_LO)) /
                                 seconds
                           : 0.0;
  for (int w = 0; w < 3; w++)
    force[w] = out[w], torque[w] = out[3 + w];
}

#endif
