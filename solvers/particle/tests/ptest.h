/* A small test harness for the particle solver's tests (same conventions as tests/harness.h:
 * `--device cpu|cuda`, exit 77 = skipped when there is no CUDA device, non-fatal CHECKs).
 *
 * A program lists its tests and calls pt_main. pt_dev is the device under test (cpu:0 or
 * cuda:0). The last line printed is "N passed, M failed, K skipped"; exit 1 if anything failed. */
#ifndef WEFT_PARTICLE_PTEST_H
#define WEFT_PARTICLE_PTEST_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "particle.h"
#include "weft/gpu.h"

typedef struct pt_test {
  const char *name;
  void (*fn)(void);
} pt_test;

static const char *pt_kind = "cpu";
static wf_device *pt_dev;
static int pt_fails, pt_skipped;
static char pt_skip_msg[256];

#define TEST(name) static void name(void)
#define PT_TEST(name)                                                                              \
  { #name, name }
#define PT_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define PT_FAIL(...)                                                                               \
  do {                                                                                             \
    pt_fails++;                                                                                    \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                              \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
  } while (0)
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) PT_FAIL("CHECK(%s) failed", #c);                                                     \
  } while (0)
#define REQUIRE(c)                                                                                 \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      PT_FAIL("REQUIRE(%s) failed", #c);                                                           \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
#define CHECK_NEAR(a, b, tol)                                                                      \
  do {                                                                                             \
    double a_ = (double)(a), b_ = (double)(b);                                                     \
    if (!(fabs(a_ - b_) <= (double)(tol)))                                                         \
      PT_FAIL("%s ~ %s: %.9g vs %.9g (diff %.3g, tolerance %.3g)", #a, #b, a_, b_, fabs(a_ - b_),  \
              (double)(tol));                                                                      \
  } while (0)
/* A failed status ends the test. */
#define CHECK_OK(e)                                                                                \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    if (st_ != WF_OK) {                                                                            \
      PT_FAIL("%s -> %s: %s", #e, wf_status_str(st_), wf_particles_last_error());                  \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
/* Expects status `want` and a message containing each of the given strings. */
#define CHECK_ERROR(e, want, ...)                                                                  \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    const char *subs_[] = {__VA_ARGS__};                                                           \
    if (st_ != (want))                                                                             \
      PT_FAIL("%s -> %s, expected %s", #e, wf_status_str(st_), wf_status_str(want));               \
    for (size_t k_ = 0; k_ < sizeof subs_ / sizeof subs_[0]; k_++)                                 \
      if (!strstr(wf_particles_last_error(), subs_[k_]))                                           \
        PT_FAIL("%s: message \"%s\" lacks \"%s\"", #e, wf_particles_last_error(), subs_[k_]);      \
  } while (0)
#define SKIP(...)                                                                                  \
  do {                                                                                             \
    snprintf(pt_skip_msg, sizeof pt_skip_msg, __VA_ARGS__);                                        \
    pt_skipped = 1;                                                                                \
    return;                                                                                        \
  } while (0)

static inline int pt_is_cuda(void) { return strcmp(pt_kind, "cuda") == 0; }

static inline double pt_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* needs_cuda: the program is meaningless without a CUDA device (parity); it skips with 77. */
static inline int pt_main(int argc, char **argv, const pt_test *tests, int n, int needs_cuda) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
      pt_kind = argv[++i];
    else
      only = argv[i];
  }
  if (strcmp(pt_kind, "cpu") != 0 && strcmp(pt_kind, "cuda") != 0) {
    fprintf(stderr, "usage: %s [--device cpu|cuda] [test]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  wf_status st = wf_init(NULL);
  if (st == WF_OK && (pt_is_cuda() || needs_cuda)) {
    wf_device *cuda = NULL;
    if (wf_device_get("cuda", &cuda) != WF_OK) {
      printf("SKIP: no CUDA device (%s)\n", wf_last_error());
      wf_shutdown();
      return 77;
    }
  }
  if (st == WF_OK) st = wf_device_get(pt_is_cuda() ? "cuda:0" : "cpu:0", &pt_dev);
  if (st != WF_OK) {
    printf("cannot start weft on %s: %s: %s\n", pt_kind, wf_status_str(st), wf_last_error());
    return 1;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < n; i++) {
    if (only && strcmp(only, tests[i].name) != 0) continue;
    pt_fails = pt_skipped = 0;
    printf("[ RUN  ] %s (%s)\n", tests[i].name, pt_kind);
    double t0 = pt_now_ms();
    tests[i].fn();
    double ms = pt_now_ms() - t0;
    fflush(stderr);
    if (pt_fails)
      failed++, printf("[ FAIL ] %s (%.0f ms)\n", tests[i].name, ms);
    else if (pt_skipped)
      skipped++, printf("[ SKIP ] %s: %s\n", tests[i].name, pt_skip_msg);
    else
      passed++, printf("[  OK  ] %s (%.0f ms)\n", tests[i].name, ms);
  }
  wf_shutdown();
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
#endif
