/* `weft validate SCENE... [--print]`: loads and checks every scene file, printing all of its
 * errors (file:line:col: key path: what is wrong). Exit 0 when every scene is valid, 2 when any
 * is not (or on bad usage). --print writes each valid scene's canonical JSON (defaults filled)
 * to stdout. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "weft/weft.h"

void wf_cmd_validate_usage(FILE *f) {
  fputs(
      "usage: weft validate SCENE... [--print]\n"
      "\n"
      "Reads each scene file and checks it against the schema (docs/scenes.md). Every error is\n"
      "printed as file:line:col: key path: message. A mass-spring cloth past its explicit\n"
      "step's stability limit is a warning (the scene stays valid) naming the substeps it needs;\n"
      "so are particles whose contacts last fewer than 10 substeps.\n"
      "\n"
      "options:\n"
      "  --print     print each valid scene's canonical JSON, every default filled in\n"
      "  -h, --help  show this help\n"
      "\n"
      "Exit status: 0 all scenes valid, 2 any scene invalid or unreadable, or bad usage\n"
      "(1, a runtime failure, does not occur: validating runs nothing).\n",
      f);
}

/* Prints the scene loader's messages, one per line, each prefixed for the terminal. */
void wf_cli_print_scene_errors(const char *path) {
  const char *e = wf_scene_errors();
  if (!e || !*e) e = wf_last_error();
  fprintf(stderr, "weft: %s is not a valid scene:\n", path);
  while (*e) {
    const char *nl = strchr(e, '\n');
    int n = nl ? (int)(nl - e) : (int)strlen(e);
    if (n > 0) fprintf(stderr, "  %.*s\n", n, e);
    e += n + (nl ? 1 : 0);
  }
}

/* Check k of the scene's stability checks: its cloths' (a mass-spring cloth past its explicit
 * step's limit), then its emitters' (particles whose contacts are resolved in too few substeps).
 * *stable false: msg holds the warning. */
static wf_status stability(const wf_scene *sc, int k, bool *stable, char *msg, size_t n) {
  if (k < sc->cloth_count) {
    wf_cloth_stability s;
    wf_status st = wf_scene_cloth_stability(sc, k, &s, msg, n);
    *stable = st != WF_OK || s.stable;
    return st;
  }
  wf_particles_stability_result s;
  wf_status st = wf_scene_particle_stability(sc, k - sc->cloth_count, &s, msg, n);
  *stable = st != WF_OK || s.ok;
  return st;
}

int wf_cmd_validate(int argc, char **argv) {
  bool print = false;
  int n_files = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      wf_cmd_validate_usage(stdout);
      return WF_EXIT_OK;
    } else if (strcmp(argv[i], "--print") == 0) {
      print = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      wf_cli_unknown_option("weft validate", argv[i], wf_cmd_validate_usage);
      return WF_EXIT_USAGE;
    } else {
      n_files++;
    }
  }
  if (n_files == 0) {
    fputs("weft validate: no scene file given\n\n", stderr);
    wf_cmd_validate_usage(stderr);
    return WF_EXIT_USAGE;
  }
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1]) continue;
    wf_scene *sc = NULL;
    wf_status st = wf_scene_load(argv[i], NULL, &sc);
    if (st != WF_OK) {
      wf_cli_print_scene_errors(argv[i]);
      bad++;
      continue;
    }
    if (print) {
      char *json = wf_scene_to_json(sc);
      if (json) {
        fputs(json, stdout);
        if (json[0] && json[strlen(json) - 1] != '\n') fputc('\n', stdout);
      }
      free(json);
    } else {
      fprintf(stdout, "%s: ok\n", argv[i]);
    }
    /* a model past its step's stability limit: a warning, the scene stays valid */
    for (int k = 0; k < sc->cloth_count + sc->emitter_count; k++) {
      char msg[512];
      bool stable = true;
      if (stability(sc, k, &stable, msg, sizeof msg) != WF_OK)
        fprintf(stderr, "weft validate: %s: %s\n", argv[i], wf_last_error());
      else if (!stable)
        fprintf(stderr, "weft validate: %s: warning: %s\n", argv[i], msg);
    }
    wf_scene_destroy(sc);
  }
  return bad ? WF_EXIT_USAGE : WF_EXIT_OK;
}
