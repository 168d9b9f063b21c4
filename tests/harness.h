/* The test harness: a list of test functions, non-fatal CHECKs, fatal REQUIREs and a runner.
 *
 * A test program lists its tests and hands them to th_main, which parses `--device cpu|cuda`
 * (default cpu; an optional further argument runs only the test of that name), starts weft with
 * four CPU devices and resolves th_dev0/th_dev1 (cpu:0/cpu:1 or cuda:0/cuda:1; th_dev1 is NULL when
 * there is only one) and th_host (cpu:0). With `--device cuda` and no CUDA device it prints "SKIP:
 * no CUDA device (...)" and exits with 77, which ctest reads as skipped. The last line printed is
 * "N passed, M failed, K skipped"; the exit code is 1 if anything failed.
 */
#ifndef WEFT_TESTS_HARNESS_H
#define WEFT_TESTS_HARNESS_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft/gpu.h"

typedef struct th_test {
  const char *name;
  void (*fn)(void);
} th_test;

static const char *th_kind = "cpu";            /* the device kind under test */
static wf_device *th_dev0, *th_dev1, *th_host; /* <kind>:0, <kind>:1 or NULL, cpu:0 */
static int th_fails, th_skipped;               /* for the test that runs now */
static char th_skip_msg[256];

#define TEST(name) static void name(void)
#define TH_TEST(name)                                                                              \
  { #name, name }
#define TH_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define TH_FAIL(...)                                                                               \
  do {                                                                                             \
    th_fails++;                                                                                    \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                              \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    fputc('\n', stderr);                                                                           \
  } while (0)
#define CHECK(c)                                                                                   \
  do {                                                                                             \
    if (!(c)) TH_FAIL("CHECK(%s) failed", #c);                                                     \
  } while (0)
#define REQUIRE(c)                                                                                 \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      TH_FAIL("REQUIRE(%s) failed", #c);                                                           \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
#define CHECK_EQ_INT(a, b)                                                                         \
  do {                                                                                             \
    long long a_ = (long long)(a), b_ = (long long)(b);                                            \
    if (a_ != b_) TH_FAIL("%s == %s: %lld != %lld", #a, #b, a_, b_);                               \
  } while (0)
#define CHECK_NEAR(a, b, tol)                                                                      \
  do {                                                                                             \
    double a_ = (double)(a), b_ = (double)(b);                                                     \
    if (!(fabs(a_ - b_) <= (double)(tol)))                                                         \
      TH_FAIL("%s ~ %s: %.9g vs %.9g (tolerance %g)", #a, #b, a_, b_, (double)(tol));              \
  } while (0)
/* A failed status ends the test: the handles it was to produce are not there. CHECK_OK_FROM
 * names the call that says why (wf_last_error, or a module's own, e.g. wf_render_last_error). */
#define CHECK_OK_FROM(e, last_error)                                                               \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    if (st_ != WF_OK) {                                                                            \
      TH_FAIL("%s -> %s: %s", #e, wf_status_str(st_), last_error());                               \
      return;                                                                                      \
    }                                                                                              \
  } while (0)
#define CHECK_OK(e) CHECK_OK_FROM(e, wf_last_error)
#define CHECK_STATUS(e, want)                                                                      \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    if (st_ != (want))                                                                             \
      TH_FAIL("%s -> %s, expected %s (%s)", #e, wf_status_str(st_), wf_status_str(want),           \
              wf_last_error());                                                                    \
  } while (0)
/* Expects status `want` and a message containing each of the given strings. */
#define CHECK_ERROR(e, want, ...)                                                                  \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    const char *subs_[] = {__VA_ARGS__};                                                           \
    if (st_ != (want))                                                                             \
      TH_FAIL("%s -> %s, expected %s", #e, wf_status_str(st_), wf_status_str(want));               \
    for (size_t k_ = 0; k_ < sizeof subs_ / sizeof subs_[0]; k_++)                                 \
      if (!strstr(wf_last_error(), subs_[k_]))                                                     \
        TH_FAIL("%s: message \"%s\" lacks \"%s\"", #e, wf_last_error(), subs_[k_]);                \
  } while (0)
#define SKIP(...)                                                                                  \
  do {                                                                                             \
    snprintf(th_skip_msg, sizeof th_skip_msg, __VA_ARGS__);                                        \
    th_skipped = 1;                                                                                \
    return;                                                                                        \
  } while (0)
#define NEED_TWO_DEVICES()                                                                         \
  do {                                                                                             \
    if (!th_dev1) SKIP("needs %s:1", th_kind);                                                     \
  } while (0)
#define CPU_ONLY(why)                                                                              \
  do {                                                                                             \
    if (th_is_cuda()) SKIP("cpu only: %s", why);                                                   \
  } while (0)
#define CUDA_ONLY(why)                                                                             \
  do {                                                                                             \
    if (!th_is_cuda()) SKIP("cuda only: %s", why);                                                 \
  } while (0)
/* Every element of got[0..n) equals want exactly (values the tests use are exact in float). */
#define CHECK_ALL_EQ(got, n, want) th_check_all_eq((got), (n), (want), #got, __FILE__, __LINE__)

/* True under a tool that makes every kernel launch wait for the kernel (compute-sanitizer does:
 * scripts/gpu-check.sh sets TH_SERIALIZED_LAUNCHES=1 there). Checks that something returned
 * before a slow kernel finished cannot hold then; such a test skips that one check and says so. */
static inline int th_launches_serialized(void) {
  const char *e = getenv("TH_SERIALIZED_LAUNCHES");
  return e && strcmp(e, "1") == 0;
}

static inline int th_is_cuda(void) { return strcmp(th_kind, "cuda") == 0; }

/* Case-insensitive substring test, for messages ("pinned" matches WF_BUFFER_PINNED). */
static inline int th_contains(const char *text, const char *word) {
  for (size_t n = strlen(word); *text; text++) {
    size_t i = 0;
    while (i < n && tolower((unsigned char)text[i]) == tolower((unsigned char)word[i]))
      i++;
    if (i == n) return 1;
  }
  return 0;
}

/* A test that hangs (a deadlock in the library) fails the program with its name, rather than
 * running into ctest's timeout with no word of where it stopped. The limit is 30 s per test
 * (240 s in a sanitizer build: CMake defines WEFT_SANITIZED);
 * the environment variable TH_WATCHDOG_S changes it (0: no limit), for runs under tools that
 * slow everything down (scripts/gpu-check.sh's sanitizer runs). */
#ifdef WEFT_SANITIZED
enum { TH_WATCHDOG_S = 240 }; /* a sanitizer build runs the CPU kernels 10-25x slower */
#else
enum { TH_WATCHDOG_S = 30 };
#endif
static const char *th_current;
static unsigned th_watchdog_s; /* this run's limit a case (0: none) */
/* A case known to take longer than the limit: this case's limit becomes s seconds from now
 * (nothing where the watchdog is off). Say in the case why it is slow. */
static inline void th_allow_seconds(unsigned s) {
  if (th_watchdog_s && s > th_watchdog_s) alarm(s);
}
static void th_watchdog(int sig) {
  static const char msg[] = "\n[ FAIL ] watchdog: this test hung past its time limit: ";
  ssize_t w = write(2, msg, sizeof msg - 1);
  if (th_current) w = write(2, th_current, strlen(th_current));
  w = write(2, "\n", 1);
  (void)w;
  (void)sig;
  _exit(1);
}

static inline void th_check_all_eq(const float *got, size_t n, float want, const char *what,
                                   const char *file, int line) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (got[i] != want && bad++ < 3)
      fprintf(stderr, "  %s:%d: %s[%zu] = %.9g, expected %.9g\n", file, line, what, i, got[i],
              want);
  }
  if (bad) {
    th_fails++;
    fprintf(stderr, "  %s:%d: %zu of %zu elements of %s differ\n", file, line, bad, n, what);
  }
}

/* Writes text to path; 1 on success. */
static inline int th_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return 0;
  fputs(text, f);
  return fclose(f) == 0;
}

/* The whole file, NUL-terminated (its size in *len when len is not NULL), or NULL; free() it. */
static inline char *th_read_file(const char *path, size_t *len) {
  if (len) *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (n < 0) n = 0;
  char *b = malloc((size_t)n + 1);
  if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (b) b[n] = '\0';
  fclose(f);
  if (len) *len = (size_t)n;
  return b;
}

static inline double th_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static inline void th_sleep_ms(double ms) {
  struct timespec t = {(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)};
  while (nanosleep(&t, &t) != 0) {
  }
}

/* Looks up the devices under test; 0 when <kind>:0 is missing. */
static inline int th_resolve(void) {
  char name[32];
  snprintf(name, sizeof name, "%s:0", th_kind);
  if (wf_device_get(name, &th_dev0) != WF_OK) return 0;
  snprintf(name, sizeof name, "%s:1", th_kind);
  if (wf_device_get(name, &th_dev1) != WF_OK) th_dev1 = NULL;
  if (wf_device_get("cpu:0", &th_host) != WF_OK) return 0;
  wf_clear_error();
  return 1;
}

/* The standard runtime: four CPU devices, so cpu:0/cpu:1 exist for two-device tests, CPU
 * kernels on WEFT_CPU_THREADS threads (default 1), and the CPU memory cap of WEFT_CPU_MEMORY_LIMIT
 * (bytes, K/M/G suffix; ctest sets it for test_oom) as the weft command reads it: the library
 * itself reads no environment. */
static inline wf_init_desc th_init_desc(void) {
  /* One thread a CPU kernel unless WEFT_CPU_THREADS says otherwise: ctest runs two programs at
     once on 2-core CI machines, and a pool in each would oversubscribe the cores. The *_threads
     ctest entries run the split and determinism tests again on 3 threads. */
  wf_init_desc d = {.cpu_devices = 4, .cpu_threads = 1};
  const char *t = getenv("WEFT_CPU_THREADS");
  if (t && *t) d.cpu_threads = atoi(t);
  const char *e = getenv("WEFT_CPU_MEMORY_LIMIT");
  if (e && *e) {
    char *end;
    double v = strtod(e, &end);
    double unit = *end == 'K' || *end == 'k'   ? 1024.0
                  : *end == 'M' || *end == 'm' ? 1048576.0
                  : *end == 'G' || *end == 'g' ? 1073741824.0
                                               : 1.0;
    v *= unit;
    d.cpu_memory_limit = v > 0.0 && v < 1.8e19 ? (size_t)v : 0;
  }
  return d;
}

static inline wf_status th_init(void) {
  wf_init_desc desc = th_init_desc();
  wf_status st = wf_init(&desc);
  return st != WF_OK ? st : (th_resolve() ? WF_OK : WF_ERR_DEVICE);
}

static inline int th_main(int argc, char **argv, const th_test *tests, int n) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      th_kind = argv[++i];
    } else if (strcmp(argv[i], "--list") == 0) { /* the test names, one per line */
      for (int t = 0; t < n; t++)
        printf("%s\n", tests[t].name);
      return 0;
    } else
      only = argv[i];
  }
  if (strcmp(th_kind, "cpu") != 0 && strcmp(th_kind, "cuda") != 0) {
    fprintf(stderr, "usage: %s [--device cpu|cuda] [test] | --list\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, th_watchdog);
  unsigned watchdog_s = TH_WATCHDOG_S;
  const char *watchdog_env = getenv("TH_WATCHDOG_S");
  if (watchdog_env) watchdog_s = (unsigned)strtoul(watchdog_env, NULL, 10);
  th_watchdog_s = watchdog_s;
  wf_init_desc desc = th_init_desc();
  wf_status st = wf_init(&desc);
  if (st == WF_OK && th_is_cuda() && wf_device_get("cuda", &th_dev0) != WF_OK) {
    printf("SKIP: no CUDA device (%s)\n", wf_last_error());
    wf_shutdown();
    return 77;
  }
  if (st != WF_OK || !th_resolve()) {
    printf("cannot start weft on %s: %s: %s\n", th_kind, wf_status_str(st), wf_last_error());
    return 1;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < n; i++) {
    if (only && strcmp(only, tests[i].name) != 0) continue;
    th_fails = th_skipped = 0;
    th_current = tests[i].name;
    printf("[ RUN  ] %s (%s)\n", tests[i].name, th_kind);
    double t0 = th_now_ms();
    alarm(watchdog_s);
    tests[i].fn();
    alarm(0);
    double ms = th_now_ms() - t0;
    fflush(stderr);
    if (th_fails)
      failed++, printf("[ FAIL ] %s (%.0f ms)\n", tests[i].name, ms);
    else if (th_skipped)
      skipped++, printf("[ SKIP ] %s: %s\n", tests[i].name, th_skip_msg);
    else
      passed++, printf("[  OK  ] %s (%.0f ms)\n", tests[i].name, ms);
  }
  wf_shutdown();
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
#endif
