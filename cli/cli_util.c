/* Helpers every subcommand shares: the clock, number parsing, the runtime's log callback, and the
 * scene argument with its --set overrides (run, view and soak parse them the same way). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "weft/gpu.h"
#include "weft/scene.h"
#include "weft/world.h"

double wf_cli_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

bool wf_cli_parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool wf_cli_parse_double(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

void wf_cli_log(int level, const char *message, void *user) {
  fprintf(stderr, "%s: %s: %s\n", user ? (const char *)user : "weft",
          level <= WF_LOG_ERROR ? "error" : "warning", message);
}

int wf_cli_scene_arg(wf_cli_scene_args *sa, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  if (strcmp(a, "--set") == 0 && *i + 1 < argc) {
    if (sa->n_sets == WF_CLI_MAX_SETS) {
      fprintf(stderr, "%s: more than %d --set options\n", sa->cmd, WF_CLI_MAX_SETS);
      return WF_EXIT_USAGE;
    }
    sa->sets[sa->n_sets++] = argv[++*i];
  } else if (strcmp(a, "--color-by") == 0 && *i + 1 < argc) {
    static const char *const modes[][2] = {{"object", NULL},
                                           {"speed", "speed_max"},
                                           {"strain", "strain_max"},
                                           {"contact_force", "force_max"}};
    const char *v = argv[++*i], *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : strlen(v);
    int m = -1;
    for (int k = 0; k < 4; k++)
      if (strlen(modes[k][0]) == len && strncmp(v, modes[k][0], len) == 0) m = k;
    char *end = NULL;
    double top = colon ? strtod(colon + 1, &end) : 0.0;
    if (m < 0 || (colon && (end == colon + 1 || *end || !(top > 0.0) || !modes[m][1])) ||
        sa->n_sets + 2 > WF_CLI_MAX_SETS) {
      fprintf(stderr,
              "%s: --color-by '%s': expected object, speed, strain or contact_force, optionally "
              "with :MAX (> 0: m/s, strain or N at the top of the colour ramp)\n",
              sa->cmd, v);
      return WF_EXIT_USAGE;
    }
    snprintf(sa->color_sets[0], sizeof sa->color_sets[0], "render.color_by=%s", modes[m][0]);
    sa->sets[sa->n_sets++] = sa->color_sets[0];
    if (colon) {
      snprintf(sa->color_sets[1], sizeof sa->color_sets[1], "render.%s=%.17g", modes[m][1], top);
      sa->sets[sa->n_sets++] = sa->color_sets[1];
    }
  } else if (a[0] == '-' && a[1]) {
    wf_cli_unknown_option(sa->cmd, a, sa->usage);
    return WF_EXIT_USAGE;
  } else if (!sa->path) {
    sa->path = a;
  } else {
    fprintf(stderr, "%s: one scene at a time ('%s' and '%s')\n", sa->cmd, sa->path, a);
    return WF_EXIT_USAGE;
  }
  return WF_EXIT_OK;
}

int wf_cli_scene_args_done(const wf_cli_scene_args *sa) {
  if (sa->path) return WF_EXIT_OK;
  fprintf(stderr, "%s: no scene file given\n\n", sa->cmd);
  sa->usage(stderr);
  return WF_EXIT_USAGE;
}

/* WEFT_CPU_THREADS: threads a CPU device runs a kernel on (0 or unset: the usable cores).
 * WEFT_CPU_MEMORY_LIMIT: bytes, with an optional K, M or G suffix (KiB, MiB, GiB); 0 or unset: no
 * cap. The library reads no environment; this is where the weft command turns it into
 * wf_init_desc.cpu_memory_limit. */
int wf_cli_init_from_env(struct wf_init_desc *init, const char *cmd) {
  const char *t = getenv("WEFT_CPU_THREADS");
  if (t && *t) {
    char *tend;
    errno = 0;
    long v = strtol(t, &tend, 10);
    if (errno || tend == t || *tend || v < 0 || v > 256) {
      fprintf(stderr,
              "%s: WEFT_CPU_THREADS='%s': expected the number of threads a CPU device runs a "
              "kernel on, 1 to 256, or 0 for the usable cores\n",
              cmd, t);
      return WF_EXIT_USAGE;
    }
    init->cpu_threads = (int)v;
  }
  const char *e = getenv("WEFT_CPU_MEMORY_LIMIT");
  if (!e || !*e) return WF_EXIT_OK;
  char *end;
  errno = 0;
  double v = strtod(e, &end);
  const char *units = "KkMmGg", *u = *end ? strchr(units, *end) : NULL;
  if (u) {
    v *= (double)(1ull << (10 * (1 + (u - units) / 2))); /* K 2^10, M 2^20, G 2^30 */
    end++;
  }
  if (errno || end == e || *end || !(v >= 0.0 && v < 1.8e19)) {
    fprintf(stderr,
            "%s: WEFT_CPU_MEMORY_LIMIT='%s': expected a number of bytes with an optional K, "
            "M or G suffix (64M), or 0 for no cap\n",
            cmd, e);
    return WF_EXIT_USAGE;
  }
  init->cpu_memory_limit = (size_t)v;
  return WF_EXIT_OK;
}

/* CPU devices one device name needs: "cpu" 1, "cpu:N" N + 1, anything else 0. */
static int cpu_needed(const char *name, size_t len) {
  if (len == 3 && strncmp(name, "cpu", 3) == 0) return 1;
  if (len < 5 || strncmp(name, "cpu:", 4) != 0) return 0;
  int n = 0;
  for (size_t i = 4; i < len; i++) {
    if (name[i] < '0' || name[i] > '9' || n > 1000) return 0;
    n = 10 * n + (name[i] - '0');
  }
  return n + 1;
}

int wf_cli_cpu_devices_needed(const char *device, const struct wf_scene *sc) {
  int most = 1;
  if (device) {
    for (const char *p = device;;) {
      size_t len = strcspn(p, ",");
      int n = cpu_needed(p, len);
      most = n > most ? n : most;
      if (!p[len]) break;
      p += len + 1;
    }
  } else if (sc) {
    for (int i = 0; i < sc->simulation.device_count; i++) {
      const char *d = sc->simulation.devices[i];
      int n = cpu_needed(d, strlen(d));
      most = n > most ? n : most;
    }
  }
  return most > 16 ? 16 : most; /* a device beyond the runtime's limit is reported by name later */
}

int wf_cli_runtime_for_devices(const char *device, const struct wf_scene *sc) {
  return wf_cpu_devices_ensure(wf_cli_cpu_devices_needed(device, sc));
}

int wf_cli_start_scene(struct wf_init_desc *init, const wf_cli_scene_args *sa, const char *device,
                       struct wf_scene **sc) {
  *sc = NULL;
  int rc = wf_cli_init_from_env(init, sa->cmd);
  if (rc != WF_EXIT_OK) return rc;
  if (wf_init(init) < 0) {
    fprintf(stderr, "%s: starting the runtime: %s\n", sa->cmd, wf_last_error());
    return WF_EXIT_FAILURE;
  }
  wf_scene_overrides ov = {sa->sets, sa->n_sets};
  if (wf_scene_load(sa->path, &ov, sc) != WF_OK) {
    wf_cli_print_scene_errors(sa->path);
    wf_shutdown();
    return WF_EXIT_USAGE;
  }
  if (wf_cli_runtime_for_devices(device, *sc) < 0) {
    fprintf(stderr, "%s: adding the CPU devices the scene lists: %s\n", sa->cmd, wf_last_error());
    wf_scene_destroy(*sc);
    *sc = NULL;
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }
  return WF_EXIT_OK;
}

void wf_cli_world_devices(const struct wf_world *w, char *out, size_t n) {
  size_t at = 0;
  int count = wf_world_device_count(w);
  out[0] = '\0';
  for (int i = 0; i < count && at < n; i++)
    at += (size_t)snprintf(out + at, n - at, "%s%s", i ? " + " : "",
                           wf_device_name(wf_world_device_at(w, i)));
  if (count > 1 && at < n)
    snprintf(out + at, n - at,
             " (particles split over %d devices, cloths too; self-colliding cloths on %s)", count,
             wf_device_name(wf_world_device(w)));
}
