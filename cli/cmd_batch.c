/* `weft batch SCENE... [--sweep key.path=a:b:n | key.path=v1,v2 ...] [--set key.path=V ...]
 * [--jobs N] [--out DIR] [--frames N] [--device D[,D...]] [--quiet]`: many headless runs.
 *
 * The jobs are every scene times the cartesian product of the sweeps. Each job is a child process
 * `weft run SCENE --out DIR --device D --set ... --quiet` (this same program, re-executed through
 * /proc/self/exe) with stdin from /dev/null and stdout+stderr in DIR/log.txt, where DIR is
 * OUT/<scene stem>/<key=value,...> (OUT/<scene stem> without sweeps), made of file-system-safe
 * characters and unique among the jobs. Jobs spread over a pool of devices: every CUDA device (one
 * job per device at a time) or, with none, cpu:0 (--jobs jobs at a time); --device replaces the
 * pool. At the end a table goes to stdout and OUT/summary.json and OUT/summary.csv are written
 * atomically.
 *
 * Invariants: nothing runs unless every scene loads with every combination of overrides and every
 * device of the pool exists (else exit 2, the scene loader's messages on stderr); a failing or
 * crashing job never stops the others; SIGINT and SIGTERM are blocked from the start (so no thread
 * of the runtime takes them) and read with sigtimedwait: the first is forwarded to every running
 * job's process group and no further job starts, a second one kills the running jobs; the summary
 * is written in every case that got past validation. Exit 0 when every job succeeded, 1 when any
 * did not (failed, crashed, interrupted, could not start) or the summary could not be written,
 * 2 on bad usage or an invalid scene, sweep value or device.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "weft/version.h"
#include "weft/weft.h"

extern char **environ;

enum {
  MAX_SCENES = 1024,
  MAX_SWEEPS = 32,
  MAX_SETS = 256,
  MAX_JOBS = 10000,
  MAX_POOL = 64,
  MAX_REPORTED = 10, /* invalid combinations reported in full before "... and N more" */
  NAME_MAX_LEN = 200 /* one path component of a job directory */
};
#define PATH_LEN 4096

void wf_cmd_batch_usage(FILE *f) {
  fputs(
      "usage: weft batch SCENE... [--sweep key.path=a:b:n | key.path=v1,v2,... ...]\n"
      "                  [--set key.path=V ...] [--jobs N] [--out DIR] [--frames N]\n"
      "                  [--device D[,D...]] [--quiet]\n"
      "\n"
      "Runs many `weft run` jobs: every scene with every combination of the sweep values, each\n"
      "job a separate process writing into its own directory OUT/<scene>/<key=value,...>\n"
      "(OUT/<scene> without sweeps), its output captured in log.txt there. Every scene is loaded\n"
      "with every combination before the first job starts: a bad key path or value stops the\n"
      "batch with nothing run. Jobs spread over the devices, one job per GPU at a time; a failing\n"
      "job does not stop the others. At the end a table goes to stdout, and OUT/summary.json and\n"
      "OUT/summary.csv list every job (device, status, exit code, wall time, frames/s, and the\n"
      "simulation.stop_when rule that ended it, if one did: read from the job's run.json).\n"
      "SIGINT (Ctrl-C) or SIGTERM is passed on to the running jobs and no more start; the\n"
      "summary lists them as interrupted. A second one kills the running jobs.\n"
      "\n"
      "options:\n"
      "  --sweep K=a:b:n     n values evenly spaced from a to b, both included (repeatable: the\n"
      "                      jobs are the cartesian product of all sweeps)\n"
      "  --sweep K=v1,v2,... the values listed (each JSON, or a string when it is not)\n"
      "  --set K=V           override a scene value in every job (repeatable)\n"
      "  --frames N          frames per job (default: each scene's simulation.frames)\n"
      "  --out DIR           output directory (default: out/batch), created if needed\n"
      "  --device D[,D...]   devices to spread the jobs over: cpu, cpu:N, cuda, cuda:N or auto\n"
      "                      (default auto: every CUDA device, else cpu:0)\n"
      "  --jobs N            at most N jobs at once; a CPU device runs up to N jobs at a time,\n"
      "                      a CUDA device one (default: one job per device)\n"
      "  --quiet             no progress lines on stderr (the summary table is still printed)\n"
      "  -h, --help          show this help\n"
      "\n"
      "Exit status: 0 all jobs succeeded, 1 a job failed, crashed, was interrupted or could not\n"
      "start (or the summary could not be written), 2 bad usage, an invalid scene, sweep value\n"
      "or device (then no job runs).\n",
      f);
}

/* ---- small helpers ----------------------------------------------------------------------------
 */

static bool parse_double(const char *s, size_t n, double *out) {
  char buf[128];
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (errno || *end || !isfinite(v)) return false;
  *out = v;
  return true;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

/* The shortest %g text that reads back as exactly v. */
static void format_double(double v, char *buf, size_t n) {
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, n, "%.*g", p, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* 64-bit FNV-1a, to keep shortened directory names distinct. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* A file-system-safe path component: [A-Za-z0-9._,=+-] kept, "a[1].b" written "a.1.b", anything
 * else '_'; never "", "." or ".."; longer than NAME_MAX_LEN: cut, with a hash of the whole. */
static void safe_component(const char *in, char *out, size_t n) {
  size_t k = 0;
  for (const char *s = in; *s && k + 1 < n; s++) {
    unsigned char c = (unsigned char)*s;
    size_t digits = c == '[' ? strspn(s + 1, "0123456789") : 0;
    if (digits > 0 && s[1 + digits] == ']') { /* an index: "[12]" -> ".12" */
      out[k++] = '.';
      for (size_t d = 0; d < digits && k + 1 < n; d++)
        out[k++] = s[1 + d];
      s += digits + 1;
      continue;
    }
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ',' || c == '=' || c == '+' || c == '-';
    out[k++] = ok ? (char)c : '_';
  }
  out[k] = '\0';
  if (k == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) snprintf(out, n, "job");
  if (strlen(out) > NAME_MAX_LEN && n > NAME_MAX_LEN) {
    snprintf(out + NAME_MAX_LEN - 17, 18, "~%016llx", (unsigned long long)fnv1a(in));
  }
}

static const char *signal_name(int sig, char *buf, size_t n) {
  static const struct {
    int sig;
    const char *name;
  } names[] = {{SIGINT, "SIGINT"},   {SIGTERM, "SIGTERM"}, {SIGKILL, "SIGKILL"},
               {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},
               {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},   {SIGHUP, "SIGHUP"},
               {SIGPIPE, "SIGPIPE"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) return names[i].name;
  snprintf(buf, n, "signal %d", sig);
  return buf;
}

/* ---- sweeps -----------------------------------------------------------------------------------
 */

typedef struct sweep {
  char *key;
  int count;
  char **values;
} sweep;

static void sweep_free(sweep *s) {
  free(s->key);
  for (int i = 0; i < s->count; i++)
    free(s->values[i]);
  free(s->values);
}

static bool sweep_add_value(sweep *s, const char *v, size_t n) {
  char **grown = realloc(s->values, (size_t)(s->count + 1) * sizeof *grown);
  if (!grown) return false;
  s->values = grown;
  if (!(s->values[s->count] = dup_n(v, n))) return false;
  s->count++;
  return true;
}

/* Parses "key=a:b:n" or "key=v1,v2,..." (commas inside [], {} or "" do not split). Prints what
 * is wrong and returns false on bad input. */
static bool sweep_parse(const char *arg, sweep *s) {
  memset(s, 0, sizeof *s);
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1]) {
    fprintf(stderr,
            "weft batch: --sweep '%s': expected key.path=a:b:n or key.path=v1,v2,... "
            "(e.g. simulation.substeps=16:64:4)\n",
            arg);
    return false;
  }
  if (!(s->key = dup_n(arg, (size_t)(eq - arg)))) goto oom;
  const char *v = eq + 1;
  const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  double a, b;
  if (c1 && c2 && !strchr(c2 + 1, ':') && parse_double(v, (size_t)(c1 - v), &a) &&
      parse_double(c1 + 1, (size_t)(c2 - c1 - 1), &b)) {
    long n;
    if (!wf_cli_parse_long(c2 + 1, 1, MAX_JOBS, &n) || (n == 1 && a != b)) {
      fprintf(stderr,
              "weft batch: --sweep '%s': in a:b:n, n must be an integer in [2, %d] "
              "(or 1 when a equals b)\n",
              arg, MAX_JOBS);
      sweep_free(s);
      return false;
    }
    for (long i = 0; i < n; i++) {
      double x = i == n - 1 ? b : a + (b - a) * (double)i / (double)(n - 1);
      char buf[64];
      format_double(x, buf, sizeof buf);
      if (!sweep_add_value(s, buf, strlen(buf))) goto oom;
    }
    return true;
  }
  int depth = 0;
  bool quoted = false;
  const char *start = v;
  for (const char *p = v;; p++) {
    if (quoted) {
      if (*p == '\\' && p[1])
        p++;
      else if (*p == '"')
        quoted = false;
      if (*p) continue;
    }
    if (*p == '"') quoted = true;
    if (*p == '[' || *p == '{') depth++;
    if ((*p == ']' || *p == '}') && depth > 0) depth--;
    if ((*p == ',' && depth == 0) || *p == '\0') {
      if (p == start) {
        fprintf(stderr, "weft batch: --sweep '%s': an empty value in the list\n", arg);
        sweep_free(s);
        return false;
      }
      if (s->count == MAX_JOBS || !sweep_add_value(s, start, (size_t)(p - start))) goto oom;
      start = p + 1;
    }
    if (*p == '\0') break;
  }
  return true;
oom:
  fprintf(stderr, "weft batch: --sweep '%s': out of memory or too many values\n", arg);
  sweep_free(s);
  return false;
}

/* ---- jobs -------------------------------------------------------------------------------------
 */

typedef enum job_state {
  JOB_PENDING = 0, /* never started (the batch was interrupted first) */
  JOB_RUNNING,
  JOB_OK,
  JOB_FAILED,      /* exit code != 0 */
  JOB_CRASHED,     /* ended by a signal it was not sent by the batch */
  JOB_INTERRUPTED, /* running when the batch was interrupted */
  JOB_ERROR,       /* could not be started (directory, spawn) */
} job_state;

static const char *const state_names[] = {"not started", "running",     "ok",   "failed",
                                          "crashed",     "interrupted", "error"};

typedef struct job {
  const char *scene;
  char *name;  /* relative to OUT: "<stem>" or "<stem>/<key=value,...>" */
  char *dir;   /* OUT/name */
  int *choice; /* per sweep: the index of its value */
  long frames;
  int pool; /* index of its device in the pool */
  pid_t pid;
  double t0, wall;
  job_state state;
  int exit_code; /* -1: none (signal, not started) */
  int signal;    /* 0: none */
  char message[512];
  long frames_run;    /* frames the job stepped (its run.json), or -1: unknown */
  char stop_rule[48]; /* the stop rule that ended it ("simulation.stop_when[0]"), or "" */
  char stop_kind[32]; /* its kind ("time", "kinetic_energy_below", ...) */
  long stop_frame;    /* the frame it ended after */
  double stop_time;   /* and that frame's time, s */
} job;

typedef struct batch {
  const char *out;
  const char *const *sets;
  int n_sets;
  sweep sweeps[MAX_SWEEPS];
  int n_sweeps;
  job *jobs;
  int n_jobs;
  char pool[MAX_POOL][32];
  int capacity[MAX_POOL], busy[MAX_POOL];
  int n_pool, max_running;
  bool quiet;
  char exe[PATH_LEN];
  char out_buf[PATH_LEN];
} batch;

/* The overrides of one job: the --set ones, then "key=value" of each sweep. Strings of the sweep
 * part are malloc'ed into owned[]; free them with free_overrides. */
static bool job_overrides(const batch *b, const job *j, const char **set, char **owned) {
  int n = 0;
  for (int i = 0; i < b->n_sets; i++)
    set[n++] = b->sets[i];
  for (int s = 0; s < b->n_sweeps; s++) {
    const char *k = b->sweeps[s].key, *v = b->sweeps[s].values[j->choice[s]];
    size_t len = strlen(k) + strlen(v) + 2;
    if (!(owned[s] = malloc(len))) return false;
    snprintf(owned[s], len, "%s=%s", k, v);
    set[n++] = owned[s];
  }
  return true;
}

static void free_overrides(const batch *b, char **owned) {
  for (int s = 0; s < b->n_sweeps; s++)
    free(owned[s]), owned[s] = NULL;
}

static void scene_stem(const char *path, char *out, size_t n) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char tmp[PATH_LEN];
  snprintf(tmp, sizeof tmp, "%s", base);
  size_t len = strlen(tmp);
  if (len > 5 && strcmp(tmp + len - 5, ".json") == 0) tmp[len - 5] = '\0';
  safe_component(tmp, out, n);
}

/* Names and directories of every job, unique among them. */
static bool name_jobs(batch *b) {
  for (int i = 0; i < b->n_jobs; i++) {
    job *j = &b->jobs[i];
    char stem[NAME_MAX_LEN + 32], combo[4 * PATH_LEN] = "", safe[NAME_MAX_LEN + 32];
    scene_stem(j->scene, stem, sizeof stem);
    size_t k = 0;
    for (int s = 0; s < b->n_sweeps; s++)
      k += (size_t)snprintf(combo + k, k < sizeof combo ? sizeof combo - k : 0, "%s%s=%s",
                            s ? "," : "", b->sweeps[s].key, b->sweeps[s].values[j->choice[s]]);
    char name[2 * NAME_MAX_LEN + 128];
    if (b->n_sweeps) {
      safe_component(combo, safe, sizeof safe);
      snprintf(name, sizeof name, "%s/%s", stem, safe);
    } else {
      snprintf(name, sizeof name, "%s", stem);
    }
    /* the same scene twice, or values that differ only in unsafe characters */
    char unique[sizeof name + 16];
    snprintf(unique, sizeof unique, "%s", name);
    for (int dup = 2;; dup++) {
      bool taken = false;
      for (int o = 0; o < i && !taken; o++)
        taken = strcmp(b->jobs[o].name, unique) == 0;
      if (!taken) break;
      snprintf(unique, sizeof unique, "%s-%d", name, dup);
    }
    size_t dl = strlen(b->out) + strlen(unique) + 2;
    if (!(j->name = dup_str(unique)) || !(j->dir = malloc(dl))) return false;
    snprintf(j->dir, dl, "%s/%s", b->out, unique);
  }
  return true;
}

/* Loads every scene, then every job's combination; prints the errors. Exit code 0 or 2. */
static int validate_jobs(batch *b, const char *const *scenes, int n_scenes) {
  wf_scene_overrides ov = {b->sets, b->n_sets};
  int bad = 0;
  bool *scene_ok = calloc((size_t)n_scenes, sizeof *scene_ok);
  if (!scene_ok) return WF_EXIT_FAILURE;
  for (int i = 0; i < n_scenes; i++) {
    wf_scene *sc = NULL;
    if (wf_scene_load(scenes[i], &ov, &sc) != WF_OK) {
      wf_cli_print_scene_errors(scenes[i]);
      bad++;
    } else {
      scene_ok[i] = true;
    }
    wf_scene_destroy(sc);
  }
  const char *set[MAX_SETS + MAX_SWEEPS];
  char *owned[MAX_SWEEPS] = {0};
  int reported = 0, unreported = 0;
  for (int i = 0; i < b->n_jobs; i++) {
    job *j = &b->jobs[i];
    int si = 0;
    while (scenes[si] != j->scene)
      si++;
    if (!scene_ok[si]) continue; /* reported once above */
    if (!job_overrides(b, j, set, owned)) {
      free_overrides(b, owned);
      free(scene_ok);
      fputs("weft batch: out of memory\n", stderr);
      return WF_EXIT_FAILURE;
    }
    wf_scene_overrides jo = {set, b->n_sets + b->n_sweeps};
    wf_scene *sc = NULL;
    if (wf_scene_load(j->scene, &jo, &sc) != WF_OK) {
      bad++;
      if (reported++ < MAX_REPORTED) {
        fputs("weft batch: with", stderr);
        for (int s = 0; s < b->n_sweeps; s++)
          fprintf(stderr, " %s", owned[s]);
        fputs(":\n", stderr);
        wf_cli_print_scene_errors(j->scene);
      } else {
        unreported++;
      }
    } else {
      j->frames = j->frames > 0 ? j->frames : sc->simulation.frames;
    }
    wf_scene_destroy(sc);
    free_overrides(b, owned);
  }
  free(scene_ok);
  if (unreported) fprintf(stderr, "weft batch: ... and %d more invalid combinations\n", unreported);
  if (bad) {
    fprintf(stderr, "weft batch: nothing was run: fix the scene or the sweep values above\n");
    return WF_EXIT_USAGE;
  }
  return WF_EXIT_OK;
}

/* The devices jobs run on: --device's list, else every CUDA device, else cpu:0. */
static int make_pool(batch *b, const char *device, long jobs) {
  wf_init_desc init = {0};
  int env = wf_cli_init_from_env(&init, "weft batch");
  if (env != WF_EXIT_OK) return env;
  if (wf_init(&init) < 0) {
    fprintf(stderr, "weft batch: starting the runtime: %s\n", wf_last_error());
    return WF_EXIT_FAILURE;
  }
  int rc = WF_EXIT_OK;
  const char *list = device && strcmp(device, "auto") != 0 ? device : NULL;
  while (list && *list && rc == WF_EXIT_OK) {
    size_t n = strcspn(list, ",");
    char name[64];
    wf_device *d = NULL;
    if (n == 0 || n >= sizeof name) {
      fprintf(stderr, "weft batch: --device '%s': expected a comma list of device names\n", device);
      rc = WF_EXIT_USAGE;
      break;
    }
    memcpy(name, list, n);
    name[n] = '\0';
    list += n + (list[n] == ',');
    if (wf_device_get(name, &d) != WF_OK) {
      fprintf(stderr, "weft batch: --device '%s': %s\n", name, wf_last_error());
      rc = WF_EXIT_USAGE;
      break;
    }
    bool seen = false;
    for (int i = 0; i < b->n_pool && !seen; i++)
      seen = strcmp(b->pool[i], wf_device_name(d)) == 0;
    if (seen) continue;
    if (b->n_pool == MAX_POOL) {
      fprintf(stderr, "weft batch: --device: more than %d devices\n", MAX_POOL);
      rc = WF_EXIT_USAGE;
      break;
    }
    snprintf(b->pool[b->n_pool], sizeof b->pool[0], "%s", wf_device_name(d));
    b->capacity[b->n_pool++] = wf_device_is_cuda(d) ? 1 : (jobs > 0 ? (int)jobs : 1);
  }
  if (!list) {
    for (int i = 0; i < wf_device_count() && b->n_pool < MAX_POOL; i++) {
      wf_device *d = wf_device_at(i);
      if (!d || !wf_device_is_cuda(d)) continue;
      snprintf(b->pool[b->n_pool], sizeof b->pool[0], "%s", wf_device_name(d));
      b->capacity[b->n_pool++] = 1;
    }
    if (b->n_pool == 0) {
      snprintf(b->pool[0], sizeof b->pool[0], "cpu:0");
      b->capacity[b->n_pool++] = jobs > 0 ? (int)jobs : 1;
    }
  }
  int total = 0;
  for (int i = 0; i < b->n_pool; i++)
    total += b->capacity[i];
  b->max_running = jobs > 0 && jobs < total ? (int)jobs : total;
  wf_shutdown();
  return rc;
}

/* ---- running ----------------------------------------------------------------------------------
 */

/* What went wrong, from a job's log: its first "weft run: " line (with --quiet, `weft run` prints
 * only its errors, the first being the cause), else the last non-empty line (a crash report). */
static void log_message(const job *j, char *out, size_t n) {
  char path[PATH_LEN + 16];
  out[0] = '\0';
  snprintf(path, sizeof path, "%s/log.txt", j->dir);
  FILE *f = fopen(path, "rb");
  if (!f) return;
  char line[2048], last[2048] = "";
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    size_t len = strlen(line);
    bool whole = len > 0 && line[len - 1] == '\n';
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
      line[--len] = '\0';
    found = strncmp(line, "weft run: ", 10) == 0;
    if (len > 0) memcpy(last, line, len + 1);
    /* the rest of a line longer than the buffer is not a line of its own */
    for (int c = 0; !whole && c != '\n' && c != EOF;)
      c = fgetc(f);
  }
  fclose(f);
  snprintf(out, n, "%s", last);
}

/* Sets the job's message (cut to fit). */
static void job_message(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_message(job *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(j->message, sizeof j->message, fmt, ap);
  va_end(ap);
}

static bool job_start(batch *b, job *j, int pool) {
  char log[PATH_LEN + 16], frames[32];
  j->pool = pool;
  if (wf_dir_create(j->dir) != WF_OK) {
    job_message(j, "%s", wf_last_error());
    j->state = JOB_ERROR;
    return false;
  }
  snprintf(log, sizeof log, "%s/log.txt", j->dir);
  snprintf(frames, sizeof frames, "%ld", j->frames);
  const char *set[MAX_SETS + MAX_SWEEPS];
  char *owned[MAX_SWEEPS] = {0};
  const char *argv[16 + 2 * (MAX_SETS + MAX_SWEEPS)];
  int n = 0;
  argv[n++] = b->exe;
  argv[n++] = "run";
  argv[n++] = j->scene;
  argv[n++] = "--out";
  argv[n++] = j->dir;
  argv[n++] = "--device";
  argv[n++] = b->pool[pool];
  argv[n++] = "--frames";
  argv[n++] = frames;
  argv[n++] = "--quiet";
  bool ok = job_overrides(b, j, set, owned);
  for (int i = 0; ok && i < b->n_sets + b->n_sweeps; i++) {
    argv[n++] = "--set";
    argv[n++] = set[i];
  }
  argv[n] = NULL;

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  sigaddset(&dflt, SIGINT);
  sigaddset(&dflt, SIGTERM);
  sigaddset(&dflt, SIGCHLD);
  sigaddset(&dflt, SIGPIPE);
  int err = ok ? 0 : ENOMEM;
  if (!err) err = posix_spawn_file_actions_init(&fa);
  if (!err) {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    err = posix_spawnattr_init(&at);
    if (!err) {
      /* its own process group, so a terminal's Ctrl-C reaches only the batch, which forwards
       * it once; the signals the batch blocks or handles are back to normal in the job */
      posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
      posix_spawnattr_setpgroup(&at, 0);
      posix_spawnattr_setsigmask(&at, &none);
      posix_spawnattr_setsigdefault(&at, &dflt);
      j->t0 = wf_cli_now_s();
      err = posix_spawn(&j->pid, b->exe, &fa, &at, (char *const *)argv, environ);
      posix_spawnattr_destroy(&at);
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  free_overrides(b, owned);
  if (err) {
    job_message(j, "cannot start '%s run' (log %s): %s", b->exe, log, strerror(err));
    j->state = JOB_ERROR;
    return false;
  }
  j->state = JOB_RUNNING;
  b->busy[pool]++;
  return true;
}

/* What the job's run.json (weft/outputs.h) says: the frames it ran and the stop rule that ended
 * it, if any. A job that wrote none (it failed first) leaves them unknown. */
static void job_read_summary(job *j) {
  char path[PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/run.json", j->dir);
  j->frames_run = -1, j->stop_rule[0] = j->stop_kind[0] = '\0';
  FILE *f = fopen(path, "rb");
  if (!f) return;
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  cJSON *root = cJSON_Parse(buf);
  const cJSON *first = cJSON_GetObjectItemCaseSensitive(root, "first_frame");
  const cJSON *last = cJSON_GetObjectItemCaseSensitive(root, "last_frame");
  if (cJSON_IsNumber(first) && cJSON_IsNumber(last))
    j->frames_run = (long)(last->valuedouble - first->valuedouble);
  const cJSON *sb = cJSON_GetObjectItemCaseSensitive(root, "stopped_by");
  const cJSON *rule = cJSON_GetObjectItemCaseSensitive(sb, "rule");
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(sb, "kind");
  const cJSON *fr = cJSON_GetObjectItemCaseSensitive(sb, "frame");
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(sb, "time");
  if (cJSON_IsString(rule) && cJSON_IsString(kind) && cJSON_IsNumber(fr) && cJSON_IsNumber(t)) {
    snprintf(j->stop_rule, sizeof j->stop_rule, "%s", rule->valuestring);
    snprintf(j->stop_kind, sizeof j->stop_kind, "%s", kind->valuestring);
    j->stop_frame = (long)fr->valuedouble, j->stop_time = t->valuedouble;
  }
  cJSON_Delete(root);
}

/* Frames a job stepped: its run.json's count, else the frames it was asked for. */
static long frames_ran(const job *j) { return j->frames_run >= 0 ? j->frames_run : j->frames; }

static void job_report(const batch *b, const job *j) {
  int num = (int)(j - b->jobs) + 1;
  if (b->quiet) return;
  if (j->state == JOB_OK) {
    char stopped[160] = "";
    if (j->stop_rule[0])
      snprintf(stopped, sizeof stopped, ", stopped by %s (%s) at frame %ld", j->stop_rule,
               j->stop_kind, j->stop_frame);
    fprintf(stderr, "weft batch: [%d/%d] %s on %s: ok, %.2f s, %.2f frames/s%s\n", num, b->n_jobs,
            j->name, b->pool[j->pool], j->wall, (double)frames_ran(j) / j->wall, stopped);
    return;
  }
  char buf[32];
  char how[64];
  if (j->signal)
    snprintf(how, sizeof how, "%s", signal_name(j->signal, buf, sizeof buf));
  else
    snprintf(how, sizeof how, "exit %d", j->exit_code);
  fprintf(stderr, "weft batch: [%d/%d] %s on %s: %s (%s) after %.2f s: %s\n", num, b->n_jobs,
          j->name, b->pool[j->pool], j->state == JOB_ERROR ? "ERROR" : state_names[j->state],
          j->state == JOB_ERROR ? "not started" : how, j->wall, j->message);
}

static void job_finish(batch *b, job *j, int ws, bool interrupted) {
  j->wall = wf_cli_now_s() - j->t0;
  b->busy[j->pool]--;
  if (WIFEXITED(ws)) {
    j->exit_code = WEXITSTATUS(ws);
    j->state = interrupted ? JOB_INTERRUPTED : j->exit_code == 0 ? JOB_OK : JOB_FAILED;
  } else {
    j->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    j->state = interrupted ? JOB_INTERRUPTED : JOB_CRASHED;
  }
  if (j->state != JOB_OK) log_message(j, j->message, sizeof j->message);
  job_read_summary(j);
}

static void on_signal(int sig) { (void)sig; }

/* Runs the jobs; returns the signal that interrupted the batch, or 0. SIGINT, SIGTERM and
 * SIGCHLD are blocked by the caller and taken here with sigtimedwait. */
static int run_jobs(batch *b, const sigset_t *wait_set) {
  int next = 0, running = 0, stop = 0;
  for (;;) {
    while (!stop && next < b->n_jobs && running < b->max_running) {
      int pool = -1;
      for (int p = 0; p < b->n_pool && pool < 0; p++)
        if (b->busy[p] < b->capacity[p]) pool = p;
      if (pool < 0) break;
      job *j = &b->jobs[next++];
      if (job_start(b, j, pool)) {
        running++;
        if (!b->quiet)
          fprintf(stderr, "weft batch: [%d/%d] start %s on %s\n", next, b->n_jobs, j->name,
                  b->pool[pool]);
      } else {
        job_report(b, j);
      }
    }
    if (running == 0 && (next >= b->n_jobs || stop)) break;
    struct timespec timeout = {1, 0};
    int sig = sigtimedwait(wait_set, NULL, &timeout);
    if (sig == SIGINT || sig == SIGTERM) {
      bool first = !stop;
      if (first) stop = sig;
      for (int i = 0; i < next; i++) {
        job *j = &b->jobs[i];
        if (j->state != JOB_RUNNING) continue;
        kill(-j->pid, first ? sig : SIGKILL);
      }
      if (!b->quiet) {
        char buf[32];
        if (first)
          fprintf(stderr,
                  "weft batch: %s: passed on to %d running job%s, no more start (again: kill "
                  "them)\n",
                  signal_name(sig, buf, sizeof buf), running, running == 1 ? "" : "s");
        else
          fprintf(stderr, "weft batch: %s again: killing %d running job%s\n",
                  signal_name(sig, buf, sizeof buf), running, running == 1 ? "" : "s");
      }
    }
    for (;;) {
      int ws;
      pid_t pid = waitpid(-1, &ws, WNOHANG);
      if (pid <= 0) break;
      for (int i = 0; i < next; i++) {
        job *j = &b->jobs[i];
        if (j->state != JOB_RUNNING || j->pid != pid) continue;
        job_finish(b, j, ws, stop != 0);
        running--;
        job_report(b, j);
        break;
      }
    }
  }
  return stop;
}

/* ---- summary ----------------------------------------------------------------------------------
 */

static cJSON *value_json(const char *v) {
  cJSON *parsed = cJSON_Parse(v);
  return parsed ? parsed : cJSON_CreateString(v);
}

static wf_status write_text(const char *path, const char *text) {
  wf_atomic_file *f = NULL;
  wf_status st = wf_atomic_file_open(path, &f);
  if (st != WF_OK) return st;
  st = wf_atomic_file_write(f, text, strlen(text));
  if (st != WF_OK) {
    wf_atomic_file_abort(f);
    return st;
  }
  return wf_atomic_file_commit(f);
}

static char *summary_json(const batch *b, int stop, double wall) {
  char buf[32];
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  cJSON_AddStringToObject(root, "weft_version", WF_VERSION_STRING);
  cJSON_AddStringToObject(root, "out", b->out);
  cJSON *devs = cJSON_AddArrayToObject(root, "devices");
  for (int i = 0; devs && i < b->n_pool; i++)
    cJSON_AddItemToArray(devs, cJSON_CreateString(b->pool[i]));
  cJSON *sets = cJSON_AddArrayToObject(root, "sets");
  for (int i = 0; sets && i < b->n_sets; i++)
    cJSON_AddItemToArray(sets, cJSON_CreateString(b->sets[i]));
  cJSON *sweeps = cJSON_AddArrayToObject(root, "sweeps");
  for (int s = 0; sweeps && s < b->n_sweeps; s++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) continue;
    cJSON_AddStringToObject(o, "key", b->sweeps[s].key);
    cJSON *vals = cJSON_AddArrayToObject(o, "values");
    for (int v = 0; vals && v < b->sweeps[s].count; v++)
      cJSON_AddItemToArray(vals, value_json(b->sweeps[s].values[v]));
    cJSON_AddItemToArray(sweeps, o);
  }
  if (stop)
    cJSON_AddStringToObject(root, "interrupted_by", signal_name(stop, buf, sizeof buf));
  else
    cJSON_AddNullToObject(root, "interrupted_by");
  cJSON_AddNumberToObject(root, "wall_s", wall);
  int counts[7] = {0};
  cJSON *jobs = cJSON_AddArrayToObject(root, "jobs");
  for (int i = 0; i < b->n_jobs; i++) {
    const job *j = &b->jobs[i];
    counts[j->state]++;
    cJSON *o = cJSON_CreateObject();
    if (!o) continue;
    cJSON_AddNumberToObject(o, "job", i + 1);
    cJSON_AddStringToObject(o, "name", j->name);
    cJSON_AddStringToObject(o, "scene", j->scene);
    cJSON_AddStringToObject(o, "dir", j->dir);
    char log[PATH_LEN + 16];
    snprintf(log, sizeof log, "%s/log.txt", j->dir);
    cJSON_AddStringToObject(o, "log", log);
    cJSON *params = cJSON_AddObjectToObject(o, "parameters");
    for (int s = 0; params && s < b->n_sweeps; s++)
      cJSON_AddItemToObject(params, b->sweeps[s].key,
                            value_json(b->sweeps[s].values[j->choice[s]]));
    bool started = j->state != JOB_PENDING && j->state != JOB_ERROR;
    if (j->state != JOB_PENDING)
      cJSON_AddStringToObject(o, "device", b->pool[j->pool]);
    else
      cJSON_AddNullToObject(o, "device");
    cJSON_AddStringToObject(o, "status", state_names[j->state]);
    if (started && j->exit_code >= 0)
      cJSON_AddNumberToObject(o, "exit_code", j->exit_code);
    else
      cJSON_AddNullToObject(o, "exit_code");
    if (j->signal)
      cJSON_AddStringToObject(o, "signal", signal_name(j->signal, buf, sizeof buf));
    else
      cJSON_AddNullToObject(o, "signal");
    if (started)
      cJSON_AddNumberToObject(o, "wall_s", j->wall);
    else
      cJSON_AddNullToObject(o, "wall_s");
    cJSON_AddNumberToObject(o, "frames", (double)j->frames);
    if (j->frames_run >= 0)
      cJSON_AddNumberToObject(o, "frames_run", (double)j->frames_run);
    else
      cJSON_AddNullToObject(o, "frames_run");
    if (j->state == JOB_OK && j->wall > 0)
      cJSON_AddNumberToObject(o, "frames_per_s", (double)frames_ran(j) / j->wall);
    else
      cJSON_AddNullToObject(o, "frames_per_s");
    if (j->stop_rule[0]) {
      cJSON *sb = cJSON_AddObjectToObject(o, "stopped_by");
      cJSON_AddStringToObject(sb, "rule", j->stop_rule);
      cJSON_AddStringToObject(sb, "kind", j->stop_kind);
      cJSON_AddNumberToObject(sb, "frame", (double)j->stop_frame);
      cJSON_AddNumberToObject(sb, "time", j->stop_time);
    } else {
      cJSON_AddNullToObject(o, "stopped_by");
    }
    if (j->message[0]) cJSON_AddStringToObject(o, "message", j->message);
    cJSON_AddItemToArray(jobs, o);
  }
  cJSON *c = cJSON_AddObjectToObject(root, "counts");
  if (c) {
    cJSON_AddNumberToObject(c, "total", b->n_jobs);
    cJSON_AddNumberToObject(c, "ok", counts[JOB_OK]);
    cJSON_AddNumberToObject(c, "failed", counts[JOB_FAILED]);
    cJSON_AddNumberToObject(c, "crashed", counts[JOB_CRASHED]);
    cJSON_AddNumberToObject(c, "interrupted", counts[JOB_INTERRUPTED]);
    cJSON_AddNumberToObject(c, "not_started", counts[JOB_PENDING]);
    cJSON_AddNumberToObject(c, "error", counts[JOB_ERROR]);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

/* A growing string. */
typedef struct text {
  char *s;
  size_t len, cap;
  bool oom;
} text;

static void text_add(text *t, const char *s, size_t n) {
  if (t->oom) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1)
      cap *= 2;
    char *g = realloc(t->s, cap);
    if (!g) {
      t->oom = true;
      return;
    }
    t->s = g, t->cap = cap;
  }
  memcpy(t->s + t->len, s, n);
  t->len += n;
  t->s[t->len] = '\0';
}

/* Appends s as one CSV field (quoted when it needs to be), then ',' or the line's end. */
static void csv_field(text *t, const char *s, bool last) {
  if (strpbrk(s, ",\"\n\r")) {
    text_add(t, "\"", 1);
    for (const char *p = s; *p; p++) {
      if (*p == '"')
        text_add(t, "\"\"", 2);
      else
        text_add(t, p, 1);
    }
    text_add(t, "\"", 1);
  } else {
    text_add(t, s, strlen(s));
  }
  text_add(t, last ? "\n" : ",", 1);
}

static char *summary_csv(const batch *b) {
  text t = {0};
  static const char *const cols[] = {
      "job",    "name",   "scene",        "device", "status",     "exit_code", "signal",
      "wall_s", "frames", "frames_per_s", "dir",    "stopped_by", "stop_frame"};
  int nc = (int)(sizeof cols / sizeof cols[0]);
  for (int c = 0; c < nc; c++)
    csv_field(&t, cols[c], c == nc - 1 && b->n_sweeps == 0);
  for (int s = 0; s < b->n_sweeps; s++)
    csv_field(&t, b->sweeps[s].key, s == b->n_sweeps - 1);
  for (int i = 0; i < b->n_jobs; i++) {
    const job *j = &b->jobs[i];
    char num[9][64], buf[32];
    bool started = j->state != JOB_PENDING && j->state != JOB_ERROR;
    snprintf(num[0], sizeof num[0], "%d", i + 1);
    snprintf(num[1], sizeof num[1], "%d", started && j->exit_code >= 0 ? j->exit_code : -1);
    if (!(started && j->exit_code >= 0)) num[1][0] = '\0';
    snprintf(num[2], sizeof num[2], "%s", j->signal ? signal_name(j->signal, buf, sizeof buf) : "");
    if (started)
      snprintf(num[3], sizeof num[3], "%.3f", j->wall);
    else
      num[3][0] = '\0';
    snprintf(num[4], sizeof num[4], "%ld", j->frames);
    if (j->state == JOB_OK && j->wall > 0)
      snprintf(num[5], sizeof num[5], "%.3f", (double)frames_ran(j) / j->wall);
    else
      num[5][0] = '\0';
    if (j->stop_rule[0])
      snprintf(num[6], sizeof num[6], "%ld", j->stop_frame);
    else
      num[6][0] = '\0';
    const char *fields[] = {num[0],
                            j->name,
                            j->scene,
                            j->state != JOB_PENDING ? b->pool[j->pool] : "",
                            state_names[j->state],
                            num[1],
                            num[2],
                            num[3],
                            num[4],
                            num[5],
                            j->dir,
                            j->stop_rule,
                            num[6]};
    for (int c = 0; c < nc; c++)
      csv_field(&t, fields[c], c == nc - 1 && b->n_sweeps == 0);
    for (int s = 0; s < b->n_sweeps; s++)
      csv_field(&t, b->sweeps[s].values[j->choice[s]], s == b->n_sweeps - 1);
  }
  if (t.oom) {
    free(t.s);
    return NULL;
  }
  return t.s;
}

static void print_table(const batch *b, FILE *f) {
  int w = 4;
  for (int i = 0; i < b->n_jobs; i++) {
    int n = (int)strlen(b->jobs[i].name);
    if (n > w) w = n;
  }
  if (w > 72) w = 72;
  int counts[7] = {0};
  fprintf(f, "%4s  %-*s  %-8s  %-11s  %4s  %9s  %9s  %s\n", "job", w, "name", "device", "status",
          "exit", "wall s", "frames/s", "stopped by");
  for (int i = 0; i < b->n_jobs; i++) {
    const job *j = &b->jobs[i];
    counts[j->state]++;
    bool started = j->state != JOB_PENDING && j->state != JOB_ERROR;
    char code[32], wall[32], fps[32], buf[32];
    if (started && j->signal)
      snprintf(code, sizeof code, "%s", signal_name(j->signal, buf, sizeof buf));
    else if (started && j->exit_code >= 0)
      snprintf(code, sizeof code, "%d", j->exit_code);
    else
      snprintf(code, sizeof code, "-");
    if (started)
      snprintf(wall, sizeof wall, "%.2f", j->wall);
    else
      snprintf(wall, sizeof wall, "-");
    if (j->state == JOB_OK && j->wall > 0)
      snprintf(fps, sizeof fps, "%.2f", (double)frames_ran(j) / j->wall);
    else
      snprintf(fps, sizeof fps, "-");
    char stop[96] = "-";
    if (j->stop_rule[0])
      snprintf(stop, sizeof stop, "%s at frame %ld", j->stop_kind, j->stop_frame);
    fprintf(f, "%4d  %-*s  %-8s  %-11s  %4s  %9s  %9s  %s\n", i + 1, w, j->name,
            j->state != JOB_PENDING ? b->pool[j->pool] : "-", state_names[j->state], code, wall,
            fps, stop);
  }
  fprintf(f,
          "%d jobs: %d ok, %d failed, %d crashed, %d interrupted, %d not started, %d could not "
          "start\n",
          b->n_jobs, counts[JOB_OK], counts[JOB_FAILED], counts[JOB_CRASHED],
          counts[JOB_INTERRUPTED], counts[JOB_PENDING], counts[JOB_ERROR]);
}

/* ---- the command ------------------------------------------------------------------------------
 */

static int usage_error(void) {
  fputc('\n', stderr);
  wf_cmd_batch_usage(stderr);
  return WF_EXIT_USAGE;
}

static void batch_free(batch *b) {
  for (int s = 0; s < b->n_sweeps; s++)
    sweep_free(&b->sweeps[s]);
  for (int i = 0; b->jobs && i < b->n_jobs; i++)
    free(b->jobs[i].name), free(b->jobs[i].dir), free(b->jobs[i].choice);
  free(b->jobs);
}

static int batch_main(batch *b, int argc, char **argv, const sigset_t *wait_set) {
  const char *scenes[MAX_SCENES];
  const char *sets[MAX_SETS];
  const char *device = NULL;
  int n_scenes = 0;
  long frames = 0, jobs = 0;
  b->out = "out/batch";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      wf_cmd_batch_usage(stdout);
      return WF_EXIT_OK;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      b->quiet = true;
    } else if (strcmp(a, "--frames") == 0 && has_value) {
      if (!wf_cli_parse_long(argv[++i], 1, 1000000000L, &frames)) {
        fprintf(stderr, "weft batch: --frames '%s': expected an integer in [1, 10^9]\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--jobs") == 0 && has_value) {
      if (!wf_cli_parse_long(argv[++i], 1, 1024, &jobs)) {
        fprintf(stderr, "weft batch: --jobs '%s': expected an integer in [1, 1024]\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--out") == 0 && has_value) {
      size_t n = strlen(argv[++i]);
      while (n > 1 && argv[i][n - 1] == '/')
        n--; /* "out/" -> "out": job directories read "out/<scene>" */
      if (n == 0 || n >= sizeof b->out_buf) {
        fprintf(stderr, "weft batch: --out '%s': an empty or too long path\n", argv[i]);
        return WF_EXIT_USAGE;
      }
      memcpy(b->out_buf, argv[i], n);
      b->out_buf[n] = '\0';
      b->out = b->out_buf;
    } else if (strcmp(a, "--device") == 0 && has_value) {
      device = argv[++i];
    } else if (strcmp(a, "--set") == 0 && has_value) {
      if (b->n_sets == MAX_SETS) {
        fprintf(stderr, "weft batch: more than %d --set options\n", MAX_SETS);
        return WF_EXIT_USAGE;
      }
      sets[b->n_sets++] = argv[++i];
    } else if (strcmp(a, "--sweep") == 0 && has_value) {
      if (b->n_sweeps == MAX_SWEEPS) {
        fprintf(stderr, "weft batch: more than %d --sweep options\n", MAX_SWEEPS);
        return WF_EXIT_USAGE;
      }
      if (!sweep_parse(argv[++i], &b->sweeps[b->n_sweeps])) return WF_EXIT_USAGE;
      b->n_sweeps++;
      for (int s = 0; s < b->n_sweeps - 1; s++)
        if (strcmp(b->sweeps[s].key, b->sweeps[b->n_sweeps - 1].key) == 0) {
          fprintf(stderr, "weft batch: --sweep: '%s' is swept twice\n", b->sweeps[s].key);
          return WF_EXIT_USAGE;
        }
    } else if (a[0] == '-' && a[1]) {
      wf_cli_unknown_option("weft batch", a, wf_cmd_batch_usage);
      return WF_EXIT_USAGE;
    } else {
      if (n_scenes == MAX_SCENES) {
        fprintf(stderr, "weft batch: more than %d scenes\n", MAX_SCENES);
        return WF_EXIT_USAGE;
      }
      scenes[n_scenes++] = a;
    }
  }
  b->sets = sets;
  if (n_scenes == 0) {
    fputs("weft batch: no scene file given\n", stderr);
    return usage_error();
  }
  /* the jobs: scenes x the product of the sweeps, the last sweep varying fastest */
  long combos = 1;
  for (int s = 0; s < b->n_sweeps; s++) {
    combos *= b->sweeps[s].count;
    if (combos * n_scenes > MAX_JOBS) {
      fprintf(stderr, "weft batch: more than %d jobs; split the batch\n", MAX_JOBS);
      return WF_EXIT_USAGE;
    }
  }
  b->n_jobs = (int)(combos * n_scenes);
  if (!(b->jobs = calloc((size_t)b->n_jobs, sizeof *b->jobs))) {
    fputs("weft batch: out of memory\n", stderr);
    return WF_EXIT_FAILURE;
  }
  for (int i = 0; i < b->n_jobs; i++) {
    job *j = &b->jobs[i];
    j->scene = scenes[i / combos];
    j->frames = frames;
    j->exit_code = -1;
    j->frames_run = -1;
    if (!(j->choice = calloc((size_t)b->n_sweeps + 1, sizeof *j->choice))) {
      fputs("weft batch: out of memory\n", stderr);
      return WF_EXIT_FAILURE;
    }
    long r = i % combos;
    for (int s = b->n_sweeps - 1; s >= 0; s--) {
      j->choice[s] = (int)(r % b->sweeps[s].count);
      r /= b->sweeps[s].count;
    }
  }
  if (!name_jobs(b)) {
    fputs("weft batch: out of memory\n", stderr);
    return WF_EXIT_FAILURE;
  }
  int rc = make_pool(b, device, jobs);
  if (rc != WF_EXIT_OK) return rc;
  if ((rc = validate_jobs(b, scenes, n_scenes)) != WF_EXIT_OK) return rc;

  ssize_t n = readlink("/proc/self/exe", b->exe, sizeof b->exe - 1);
  if (n <= 0 || n >= (ssize_t)sizeof b->exe - 1) {
    fprintf(stderr, "weft batch: cannot find this program (/proc/self/exe): %s\n",
            n < 0 ? strerror(errno) : "path too long");
    return WF_EXIT_FAILURE;
  }
  b->exe[n] = '\0';
  if (wf_dir_create(b->out) != WF_OK) {
    fprintf(stderr, "weft batch: %s\n", wf_last_error());
    return WF_EXIT_FAILURE;
  }
  /* a signal that came during validation stops the batch before the first job */
  struct timespec zero = {0, 0};
  int early = sigtimedwait(wait_set, NULL, &zero);
  if (early == SIGINT || early == SIGTERM) {
    fputs("weft batch: interrupted before the first job\n", stderr);
    return WF_EXIT_FAILURE;
  }
  if (!b->quiet) {
    fprintf(stderr, "weft batch: %d job%s (%d scene%s x %ld combination%s) on", b->n_jobs,
            b->n_jobs == 1 ? "" : "s", n_scenes, n_scenes == 1 ? "" : "s", combos,
            combos == 1 ? "" : "s");
    for (int p = 0; p < b->n_pool; p++)
      fprintf(stderr, "%s %s", p ? "," : "", b->pool[p]);
    fprintf(stderr, ", %d at a time, into %s/\n", b->max_running, b->out);
  }
  double t0 = wf_cli_now_s();
  int stop = run_jobs(b, wait_set);
  double wall = wf_cli_now_s() - t0;

  rc = WF_EXIT_OK;
  for (int i = 0; i < b->n_jobs; i++)
    if (b->jobs[i].state != JOB_OK) rc = WF_EXIT_FAILURE;
  print_table(b, stdout);
  fflush(stdout);
  char path[PATH_LEN + 32];
  char *js = summary_json(b, stop, wall), *csv = summary_csv(b);
  const char *names[2] = {"summary.json", "summary.csv"};
  char *texts[2] = {js, csv};
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/%s", b->out, names[k]);
    wf_status st = texts[k] ? write_text(path, texts[k]) : WF_ERR_OUT_OF_MEMORY;
    if (st != WF_OK) {
      fprintf(stderr, "weft batch: writing %s: %s\n", path,
              texts[k] ? wf_last_error() : "out of memory");
      rc = WF_EXIT_FAILURE;
    }
  }
  free(js), free(csv);
  if (!b->quiet)
    fprintf(stderr, "weft batch: summary in %s/summary.json and summary.csv\n", b->out);
  return rc;
}

int wf_cmd_batch(int argc, char **argv) {
  /* Blocked before any thread exists, so that every thread inherits the mask and only
   * sigtimedwait takes these signals. The no-op handlers keep them from being discarded when
   * the batch was started with them ignored. */
  sigset_t wait_set, old_mask;
  sigemptyset(&wait_set);
  sigaddset(&wait_set, SIGINT);
  sigaddset(&wait_set, SIGTERM);
  sigaddset(&wait_set, SIGCHLD);
  struct sigaction sa, old[3];
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  const int sigs[3] = {SIGINT, SIGTERM, SIGCHLD};
  for (int i = 0; i < 3; i++)
    sigaction(sigs[i], &sa, &old[i]);
  sigprocmask(SIG_BLOCK, &wait_set, &old_mask);

  batch *b = calloc(1, sizeof *b);
  int rc = WF_EXIT_FAILURE;
  if (b) {
    rc = batch_main(b, argc, argv, &wait_set);
    batch_free(b);
    free(b);
  } else {
    fputs("weft batch: out of memory\n", stderr);
  }
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  for (int i = 0; i < 3; i++)
    sigaction(sigs[i], &old[i], NULL);
  return rc;
}
