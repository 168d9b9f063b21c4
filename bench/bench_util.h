/* Pieces the benchmark drivers share: timing, medians, device-name checks, the measured memory
 * bandwidth of a device (the reference the "fraction of bandwidth" figures divide by), and
 * appending result rows to bench/results/<machine>.csv. */
#ifndef WEFT_BENCH_UTIL_H
#define WEFT_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft/gpu.h"

typedef struct bench_row {
  char benchmark[48];
  char metric[64];
  double value;
  const char *unit;
} bench_row;

/** Monotonic seconds. */
double bench_now_s(void);
/** Median of v[0..n) (n <= 4096; v is not modified). */
double bench_median(const double *v, int n);
/** "cpu", "cuda", optionally followed by ":N". */
bool bench_device_name_valid(const char *s);
/** Log callback printing warnings and errors to stderr. */
void bench_log(int level, const char *message, void *user);
/* WEFT_CPU_THREADS for wf_init_desc.cpu_threads (0 when unset or malformed). */
int bench_cpu_threads(void);
/** Starts weft for a benchmark (warnings logged to stderr; no CUDA driver for a "cpu" device) and
 *  resolves `device` (NULL: the default device). Returns 0, or 1 after printing why to stderr
 *  (as "weft bench <bench>: ...") and shutting weft down. */
int bench_start(const char *bench, const char *device, wf_device **out);
/** Device memory bandwidth measured with a large on-device copy (read + write bytes per second,
 *  GB/s, median of several); 0 on failure (wf_last_error() says why). */
double bench_device_bandwidth_gbs(wf_device *dev, size_t bytes);
/** Default machine name: hostname and the device's product name. */
void bench_machine_name(wf_device *dev, char *buf, size_t n);
/** Appends rows as machine,date,benchmark,metric,value,unit (header when the file is new).
 *  Returns 0, or 1 after printing why to stderr. */
int bench_csv_append(const char *path, const char *machine, const bench_row *rows, int n,
                     FILE *out);

/** Parses the value of --frames: an integer in [1, 4096]. Returns 0, or 2 (bad usage) after
 *  printing why as "weft bench <bench>: ...". */
int bench_parse_frames(const char *bench, const char *s, int *out);
/** The options every benchmark driver takes (bench_parse_common). */
typedef struct bench_common {
  const char *device;  /* --device NAME (checked by bench_device_name_valid); NULL: default */
  const char *csv;     /* --csv FILE */
  const char *machine; /* --machine NAME */
  int frames;          /* --frames N in [1, 4096]; 0: not given */
  bool quick;          /* --quick */
} bench_common;

/** What a driver's option callback did with `opt` (its value `val` may be NULL: then it returns
 *  BENCH_OPT_VALUE without reading it, and the parser says the value is missing). */
enum { BENCH_OPT_UNKNOWN = -1, BENCH_OPT_FLAG = 0, BENCH_OPT_VALUE = 1, BENCH_OPT_BAD = 2 };
typedef int (*bench_option_fn)(void *user, const char *opt, const char *val);

/** Parses argv[1..argc) for benchmark `bench`: -h/--help (prints usage to out), --quick,
 *  --device, --csv, --machine and --frames into c; any other option goes to `extra` (may be
 *  NULL). Returns 0 after --help, 2 (bad usage, printed to stderr as "weft bench <bench>: ...")
 *  or -1 when the benchmark should run. */
int bench_parse_common(const char *bench, int argc, char **argv, bench_common *c,
                       void (*usage)(FILE *), FILE *out, bench_option_fn extra, void *user);
/** Appends a row to rows[0..*n) unless max rows are there already. */
void bench_row_add(bench_row *rows, int *n, int max, const char *benchmark, const char *metric,
                   double value, const char *unit);
/** Prints "weft bench <bench>: <what> failed: <status>" and wf_last_error() to stderr. */
void bench_fail(const char *bench, const char *what, wf_status st);
/** In a benchmark function with a `done:` label: on a failed status, bench_fail and goto done. */
#define BENCH_CHECK(bench, call)                                                                   \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ < 0) {                                                                                 \
      bench_fail(bench, #call, st_);                                                               \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
/** Receives particles for bench_column: n rows of xyz + radius and of velocity + inverse mass. */
typedef wf_status (*bench_particles_fn)(void *target, uint32_t n, const float (*pos)[4],
                                        const float (*vel)[4]);
/** The particle benchmarks' column: exactly n particles of radius 0.1 (density 1000) on a cubic
 *  lattice of spacing 0.2, nx = nz sites wide (nx = ceil(cbrt(n / 4))), layers upward from just
 *  above y = 0, x fastest, each offset by a seeded jitter of up to 0.01 per axis that depends on
 *  its index only, at rest. Handed to `add` in chunks of 4M to bound the host memory. Returns
 *  add's first failure, or WF_ERR_OUT_OF_MEMORY (printed as `bench`'s). */
wf_status bench_column(const char *bench, uint64_t n, bench_particles_fn add, void *target);

#endif
