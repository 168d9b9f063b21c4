/* Shared benchmark helpers (see bench_util.h). */
#define _POSIX_C_SOURCE 200809L

#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

double bench_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(const double *v, int n) {
  static _Thread_local double tmp[4096];
  if (n <= 0) return 0.0;
  if (n > 4096) n = 4096;
  memcpy(tmp, v, (size_t)n * sizeof *tmp);
  qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

bool bench_device_name_valid(const char *s) {
  size_t n;
  if (strncmp(s, "cuda", 4) == 0)
    n = 4;
  else if (strncmp(s, "cpu", 3) == 0)
    n = 3;
  else
    return false;
  if (s[n] == '\0') return true;
  if (s[n] != ':' || s[n + 1] == '\0') return false;
  for (const char *p = s + n + 1; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return true;
}

void bench_log(int level, const char *message, void *user) {
  (void)user;
  fprintf(stderr, "weft: %s: %s\n", level <= WF_LOG_ERROR ? "error" : "warning", message);
}

/* WEFT_CPU_THREADS, as the other commands read it (docs/cli.md); a malformed value is left to
 * them to refuse and means the default here. */
int bench_cpu_threads(void) {
  const char *t = getenv("WEFT_CPU_THREADS");
  char *end;
  long v = t && *t ? strtol(t, &end, 10) : 0;
  return t && *t && !*end && v >= 0 && v <= 256 ? (int)v : 0;
}

int bench_start(const char *bench, const char *device, wf_device **out) {
  wf_init_desc desc = {
      .log_level = WF_LOG_WARN, .log = bench_log, .cpu_threads = bench_cpu_threads()};
  /* A CPU run neither needs nor waits for the CUDA driver. */
  desc.no_cuda = device && strncmp(device, "cpu", 3) == 0;
  *out = NULL;
  wf_status st = wf_init(&desc);
  if (st == WF_OK) {
    if (device)
      st = wf_device_get(device, out);
    else if (!(*out = wf_device_default()))
      st = WF_ERR_DEVICE;
  }
  if (st == WF_OK) return 0;
  fprintf(stderr, "weft bench %s: cannot start on '%s': %s\n  %s\n", bench,
          device ? device : "the default device", wf_status_str(st), wf_last_error());
  wf_shutdown();
  return 1;
}

double bench_device_bandwidth_gbs(wf_device *dev, size_t bytes) {
  wf_stream *s = NULL;
  wf_buffer *a = NULL, *b = NULL;
  wf_event *e0 = NULL, *e1 = NULL;
  double samples[16], result = 0.0;
  int n = 0;
  if (wf_stream_create(dev, 0, &s) != WF_OK || wf_buffer_create(dev, bytes, 0, s, &a) != WF_OK ||
      wf_buffer_create(dev, bytes, 0, s, &b) != WF_OK ||
      wf_event_create(dev, WF_EVENT_TIMING, &e0) != WF_OK ||
      wf_event_create(dev, WF_EVENT_TIMING, &e1) != WF_OK ||
      wf_memset(a, 0x5a, 0, bytes, s) != WF_OK)
    goto done;
  for (int r = -1; r < 16; r++) {
    float ms = 0.0f;
    if (wf_event_record(e0, s) != WF_OK || wf_copy(b, 0, a, 0, bytes, s) != WF_OK ||
        wf_event_record(e1, s) != WF_OK || wf_event_synchronize(e1) != WF_OK ||
        wf_event_elapsed_ms(e0, e1, &ms) != WF_OK)
      goto done;
    if (r >= 0 && ms > 0.0f) samples[n++] = 2.0 * (double)bytes / ((double)ms * 1e-3) * 1e-9;
  }
  result = bench_median(samples, n);
done:
  if (a) wf_buffer_destroy(a, s);
  if (b) wf_buffer_destroy(b, s);
  if (e0) wf_event_destroy(e0);
  if (e1) wf_event_destroy(e1);
  if (s) wf_stream_synchronize(s), wf_stream_destroy(s);
  return result;
}

void bench_machine_name(wf_device *dev, char *buf, size_t n) {
  struct utsname u;
  wf_device_info info;
  memset(&info, 0, sizeof info);
  if (uname(&u) != 0) snprintf(u.nodename, sizeof u.nodename, "unknown");
  wf_device_info_get(dev, &info);
  snprintf(buf, n, "%.64s %.255s", u.nodename, info.product);
}

static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

int bench_csv_append(const char *path, const char *machine, const bench_row *rows, int n,
                     FILE *out) {
  struct stat sb;
  bool fresh = stat(path, &sb) != 0 || sb.st_size == 0;
  FILE *f = fopen(path, "a");
  if (!f) {
    fprintf(stderr, "weft bench: cannot open %s for appending: %s\n", path, strerror(errno));
    return 1;
  }
  char date[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (fresh) fputs("machine,date,benchmark,metric,value,unit\n", f);
  for (int i = 0; i < n; i++) {
    csv_field(f, machine);
    fprintf(f, ",%s,", date);
    csv_field(f, rows[i].benchmark);
    fputc(',', f);
    csv_field(f, rows[i].metric);
    fprintf(f, ",%.6g,", rows[i].value);
    csv_field(f, rows[i].unit);
    fputc('\n', f);
  }
  if (fclose(f) != 0) {
    fprintf(stderr, "weft bench: writing %s failed: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(out, "\n%d rows appended to %s\n", n, path);
  return 0;
}

void bench_row_add(bench_row *rows, int *n, int max, const char *benchmark, const char *metric,
                   double value, const char *unit) {
  if (*n >= max) return;
  bench_row *r = &rows[(*n)++];
  snprintf(r->benchmark, sizeof r->benchmark, "%s", benchmark);
  snprintf(r->metric, sizeof r->metric, "%s", metric);
  r->value = value;
  r->unit = unit;
}

void bench_fail(const char *bench, const char *what, wf_status st) {
  fprintf(stderr, "weft bench %s: %s failed: %s\n  %s\n", bench, what, wf_status_str(st),
          wf_last_error());
}

static uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

wf_status bench_column(const char *bench, uint64_t n, bench_particles_fn add, void *target) {
  const float r = 0.1f, s = 0.2f, jitter = 0.01f;
  uint64_t nx = (uint64_t)ceil(cbrt((double)n / 4.0));
  if (nx < 1) nx = 1;
  float inv_mass = (float)(1.0 / (1000.0 * 4.0 / 3.0 * 3.14159265358979 * r * r * r));
  const uint64_t chunk = (uint64_t)1 << 22;
  float(*p)[4] = malloc(chunk * 16), (*v)[4] = malloc(chunk * 16);
  wf_status st = WF_OK;
  if (!p || !v) {
    fprintf(stderr, "weft bench %s: out of host memory for the column\n", bench);
    st = WF_ERR_OUT_OF_MEMORY;
  }
  for (uint64_t first = 0; first < n && st == WF_OK; first += chunk) {
    uint64_t m = n - first < chunk ? n - first : chunk;
    for (uint64_t k = 0; k < m; k++) {
      uint64_t i = first + k;
      uint64_t ix = i % nx, iz = (i / nx) % nx, iy = i / (nx * nx);
      uint64_t h = splitmix(i ^ 0x5eedull);
      float j[3];
      for (int a = 0; a < 3; a++, h = splitmix(h))
        j[a] = jitter * ((float)(h >> 40) / (float)(1u << 23) - 1.0f);
      p[k][0] = ((float)ix - 0.5f * (float)nx) * s + j[0];
      p[k][1] = r + 0.01f + (float)iy * s + j[1];
      p[k][2] = ((float)iz - 0.5f * (float)nx) * s + j[2];
      p[k][3] = r;
      v[k][0] = v[k][1] = v[k][2] = 0.0f;
      v[k][3] = inv_mass;
    }
    st = add(target, (uint32_t)m, (const float(*)[4])p, (const float(*)[4])v);
  }
  free(p), free(v);
  return st;
}

int bench_parse_frames(const char *bench, const char *s, int *out) {
  char *end;
  long f = strtol(s, &end, 10);
  if (*end || end == s || f < 1 || f > 4096) {
    fprintf(stderr, "weft bench %s: --frames '%s' must be in [1, 4096]\n", bench, s);
    return 2;
  }
  *out = (int)f;
  return 0;
}

int bench_parse_common(const char *bench, int argc, char **argv, bench_common *c,
                       void (*usage)(FILE *), FILE *out, bench_option_fn extra, void *user) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(out);
      return 0;
    }
    if (!strcmp(a, "--quick")) {
      c->quick = true;
      continue;
    }
    const char **text = !strcmp(a, "--device")    ? &c->device
                        : !strcmp(a, "--csv")     ? &c->csv
                        : !strcmp(a, "--machine") ? &c->machine
                                                  : NULL;
    int r = text || !strcmp(a, "--frames") ? BENCH_OPT_VALUE
            : extra                        ? extra(user, a, val)
                                           : BENCH_OPT_UNKNOWN;
    if (r == BENCH_OPT_UNKNOWN) {
      fprintf(stderr, "weft bench %s: unknown option '%s' (see --help)\n", bench, a);
      return 2;
    }
    if (r == BENCH_OPT_BAD) return 2;
    if (r == BENCH_OPT_FLAG) continue;
    if (!val) {
      fprintf(stderr, "weft bench %s: %s needs a value (see --help)\n", bench, a);
      return 2;
    }
    i++;
    if (text) *text = val;
    if (!strcmp(a, "--frames") && bench_parse_frames(bench, val, &c->frames)) return 2;
    if (text == &c->device && !bench_device_name_valid(val)) {
      fprintf(stderr, "weft bench %s: '%s' is not a device name (cpu, cuda:N, ...)\n", bench, val);
      return 2;
    }
  }
  return -1;
}
