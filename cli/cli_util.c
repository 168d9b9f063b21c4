/* Helpers every subcommand shares: the clock, number parsing, the runtime's log callback, and the
 * scene argument with its --set overrides (run, view and soak parse them the same way). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "weft/gpu.h"

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
  } else if (a[0] == '-' && a[1]) {
    fprintf(stderr, "%s: unknown option '%s' (or it needs a value)\n\n", sa->cmd, a);
    sa->usage(stderr);
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
