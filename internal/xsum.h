/* Exact sums of doubles, in any order: a fixed-point accumulator wide enough for every finite
 * double (2^-1074 .. 2^1024), in 67 limbs of 32 bits held in int64 (room for 2^30 additions
 * between normalisations). Adding is exact, so the sum does not depend on the order of the terms
 * or on how they were split (over partitions, over MPI ranks: the limbs add as integers); the
 * result is then rounded to a double by one fixed rule. Infinities and NaN are summed apart in
 * double (their sum does not depend on the order either: any NaN, or +inf and -inf, give NaN). */
#ifndef WEFT_INTERNAL_XSUM_H
#define WEFT_INTERNAL_XSUM_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define WF_XSUM_LIMBS 67
#define WF_XSUM_BIAS  1074 /* bit 0 of limb 0 is 2^-1074 */

typedef struct wf_xsum {
  int64_t limb[WF_XSUM_LIMBS];
  double special; /* the sum of the infinities and NaNs */
  uint32_t adds;  /* additions since the last normalisation */
} wf_xsum;

static inline void wf_xsum_init(wf_xsum *x) { memset(x, 0, sizeof *x); }

/* Carries so that every limb but the last is in [0, 2^32); the last holds the sign. */
static inline void wf_xsum_normalize(wf_xsum *x) {
  int64_t carry = 0;
  for (int k = 0; k < WF_XSUM_LIMBS; k++) {
    int64_t v = x->limb[k] + carry;
    if (k == WF_XSUM_LIMBS - 1) {
      x->limb[k] = v;
      break;
    }
    carry = v >> 32; /* arithmetic shift: floor division by 2^32 */
    x->limb[k] = v - carry * ((int64_t)1 << 32);
  }
  x->adds = 0;
}

static inline void wf_xsum_add(wf_xsum *x, double v) {
  uint64_t b;
  memcpy(&b, &v, 8);
  int e = (int)(b >> 52) & 0x7ff;
  if (e == 0x7ff) { /* an infinity or NaN */
    x->special += v;
    return;
  }
  /* |v| = m 2^(p - 1074): m the 53-bit significand (no hidden bit for subnormals), p its bit */
  uint64_t m = b & ((1ull << 52) - 1);
  if (!e && !m) return; /* ±0 */
  int p = e ? e - 1 : 0;
  if (e) m |= 1ull << 52;
  int k = p / 32, s = p % 32;
  uint64_t lo = (m << s) & 0xffffffffu, mid = (m >> (32 - s)) & 0xffffffffu,
           hi = s ? m >> (64 - s) : 0;
  int64_t sign = b >> 63 ? -1 : 1;
  x->limb[k] += sign * (int64_t)lo;
  if (k + 1 < WF_XSUM_LIMBS) x->limb[k + 1] += sign * (int64_t)mid;
  if (k + 2 < WF_XSUM_LIMBS) x->limb[k + 2] += sign * (int64_t)hi;
  if (++x->adds >= (1u << 30)) wf_xsum_normalize(x);
}

/* Adds accumulator b into a (limb by limb: what two ranks' accumulators do under MPI_SUM). */
static inline void wf_xsum_merge(wf_xsum *a, const wf_xsum *b) {
  for (int k = 0; k < WF_XSUM_LIMBS; k++)
    a->limb[k] += b->limb[k];
  a->special += b->special;
  wf_xsum_normalize(a);
}

/* The sum as a double: its magnitude's limbs (normalised, all in [0, 2^32)) added from the
 * most significant down, then the sign. Each step is a fixed function of the exact value, so the
 * result is too. x is left normalised (its value unchanged). */
static inline double wf_xsum_value(wf_xsum *x) {
  wf_xsum_normalize(x);
  if (x->special != 0.0 || isnan(x->special)) return x->special;
  int64_t mag[WF_XSUM_LIMBS];
  bool negative = x->limb[WF_XSUM_LIMBS - 1] < 0;
  memcpy(mag, x->limb, sizeof mag);
  if (negative) { /* -value, normalised: every limb in [0, 2^32) */
    int64_t carry = 0;
    for (int k = 0; k < WF_XSUM_LIMBS; k++) {
      int64_t v = -mag[k] + carry;
      carry = v >> 32;
      mag[k] = v - carry * ((int64_t)1 << 32);
    }
  }
  double r = 0.0;
  for (int k = WF_XSUM_LIMBS - 1; k >= 0; k--)
    if (mag[k]) r += ldexp((double)mag[k], 32 * k - WF_XSUM_BIAS);
  return negative ? -r : r;
}

#endif
