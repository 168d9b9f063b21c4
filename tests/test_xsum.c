/* The exact sums of internal/xsum.h, which the particles' energies add over partitions and MPI
 * ranks: the sum is exact (cancellations that lose everything in double), the same bits in any
 * order and however the terms are split between accumulators, and infinities and NaN combine as
 * IEEE addition does in any order. Host only (label unit). */
#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "internal/xsum.h"

static double sum_of(const double *v, int n) {
  wf_xsum x;
  wf_xsum_init(&x);
  for (int i = 0; i < n; i++)
    wf_xsum_add(&x, v[i]);
  return wf_xsum_value(&x);
}

static uint64_t bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* 1e16 + 1 - 1e16 is 0 in double from the left, 1 exactly; so are sums that cancel to a
 * subnormal and to the largest double. */
static void exact_where_double_is_not(void) {
  const double a[] = {1e16, 1.0, -1e16};
  CHECK(sum_of(a, 3) == 1.0);
  const double b[] = {1e308, DBL_MAX, -1e308};
  CHECK(sum_of(b, 3) == DBL_MAX);
  const double c[] = {1.0, 4.9e-324, -1.0};
  CHECK(sum_of(c, 3) == 4.9e-324);
  const double d[] = {0.1, 0.2, -0.3};
  /* the exact sum of the three doubles, 2^-55 + 2^-56 ... rounded once: not double's 5.55e-17 */
  double left = (0.1 + 0.2) - 0.3;
  CHECK(sum_of(d, 3) != 0.0);
  CHECK_NEAR(sum_of(d, 3), 2.7755575615628914e-17, 1e-30);
  CHECK(left != sum_of(d, 3));
  const double e[] = {-2.5, 0.5, -1.0};
  CHECK(sum_of(e, 3) == -3.0);
  CHECK(sum_of(e, 0) == 0.0);
}

static uint64_t rng = 88172645463325252ull;
static double random_term(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  double m = (double)(rng >> 11) / 9007199254740992.0 - 0.5; /* [-0.5, 0.5) */
  int e = (int)(rng % 80) - 40;
  return ldexp(m, e);
}

/* 10000 terms of mixed signs and magnitudes: shuffled, and split over 1..7 accumulators merged
 * in any order, the same bits every time, and near a long double sum. */
static void order_and_split_do_not_matter(void) {
  enum { N = 10000 };
  double *v = malloc(N * sizeof *v);
  for (int i = 0; i < N; i++)
    v[i] = random_term();
  uint64_t want = bits(sum_of(v, N));
  long double ref = 0.0L;
  for (int i = 0; i < N; i++)
    ref += v[i];
  CHECK_NEAR(sum_of(v, N), (double)ref, 1e-9 * fabs((double)ref) + 1e-15);
  for (int trial = 0; trial < 20; trial++) {
    for (int i = N - 1; i > 0; i--) { /* Fisher-Yates */
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      int j = (int)(rng % (uint64_t)(i + 1));
      double t = v[i];
      v[i] = v[j], v[j] = t;
    }
    int parts = 1 + trial % 7;
    wf_xsum acc[7], total;
    for (int p = 0; p < parts; p++)
      wf_xsum_init(&acc[p]);
    for (int i = 0; i < N; i++)
      wf_xsum_add(&acc[i % parts], v[i]);
    wf_xsum_init(&total);
    for (int p = parts - 1; p >= 0; p--)
      wf_xsum_merge(&total, &acc[p]);
    CHECK_EQ_INT(bits(wf_xsum_value(&total)), want);
  }
  free(v);
}

static void infinities_and_nan(void) {
  const double a[] = {1.0, INFINITY, 2.0};
  CHECK(sum_of(a, 3) == INFINITY);
  const double b[] = {-INFINITY, 1.0};
  CHECK(sum_of(b, 2) == -INFINITY);
  const double c[] = {INFINITY, 1.0, -INFINITY};
  CHECK(isnan(sum_of(c, 3)));
  const double d[] = {NAN, 1.0};
  CHECK(isnan(sum_of(d, 2)));
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(exact_where_double_is_not),
      TH_TEST(order_and_split_do_not_matter),
      TH_TEST(infinities_and_nan),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
