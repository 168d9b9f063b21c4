/* Start-up shared by `weft run`, `weft soak` and `weft view`: the options they all read (--help,
 * --device, --frames, --set, the scene) and the runtime, scene and world they all begin with. A
 * command parses its own options first and hands every other argument to wf_cli_common_arg, so
 * the shared options read and fail the same way in each. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tuning_env.h" /* bench_mpi_halo_of */
#include "weft/gpu.h"
#include "weft/scene.h"
#include "weft/world.h"

int wf_cli_common_arg(wf_cli_scene_args *sa, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  bool has_value = *i + 1 < argc;
  if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
    sa->usage(stdout);
    return WF_EXIT_OK;
  }
  if (strcmp(a, "--device") == 0 && has_value) {
    sa->device = argv[++*i];
    return WF_CLI_NEXT;
  }
  if (strcmp(a, "--frames") == 0 && has_value && sa->takes_frames) {
    if (!wf_cli_parse_long(argv[++*i], 1, 1000000000L, &sa->frames)) {
      fprintf(stderr, "%s: --frames '%s': expected an integer in [1, 10^9]\n", sa->cmd, argv[*i]);
      return WF_EXIT_USAGE;
    }
    return WF_CLI_NEXT;
  }
  int rc = wf_cli_scene_arg(sa, argc, argv, i);
  return rc == WF_EXIT_OK ? WF_CLI_NEXT : rc;
}

/* Every device name in the --device list (or, without one, in the scene's simulation.devices)
 * that the runtime does not have: bad input, exit 2 as for any other unknown name, before the
 * world is made. "auto" and "all" always find one. */
static int check_devices(const wf_cli_scene_args *sa, const wf_scene *sc) {
  const char *names[64];
  char buf[1024];
  int n = 0;
  if (sa->device) {
    snprintf(buf, sizeof buf, "%s", sa->device);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < 64;
         t = strtok_r(NULL, ",", &save))
      names[n++] = t;
  } else {
    for (int i = 0; i < sc->simulation.device_count && n < 64; i++)
      names[n++] = sc->simulation.devices[i];
  }
  for (int i = 0; i < n; i++) {
    wf_device *d;
    if (strcmp(names[i], "auto") == 0 || strcmp(names[i], "all") == 0) continue;
    if (wf_device_get(names[i], &d) != WF_OK) {
      fprintf(stderr, "%s: %s '%s': %s\n", sa->cmd, sa->device ? "--device" : "simulation.devices",
              names[i], wf_last_error());
      return WF_EXIT_USAGE;
    }
  }
  return WF_EXIT_OK;
}

/* WEFT_MPI_HALO=auto|staged|direct: how halos between MPI ranks travel (wf_mpi_halo); unset or
 * empty: auto. -1 (after a message) for anything else. */
static int mpi_halo_from_env(const char *cmd) {
  const char *e = getenv("WEFT_MPI_HALO");
  if (!e || !*e) return WF_MPI_HALO_AUTO;
  int h = bench_mpi_halo_of(e);
  if (h < 0) fprintf(stderr, "%s: WEFT_MPI_HALO='%s': expected auto, staged or direct\n", cmd, e);
  return h;
}

int wf_cli_start_world(const wf_cli_scene_args *sa, struct wf_init_desc *init, struct wf_scene **sc,
                       struct wf_world **w) {
  wf_init_desc warn = {.log_level = WF_LOG_WARN, .log = wf_cli_log};
  *w = NULL;
  int rc = wf_cli_start_scene(init ? init : &warn, sa, sa->device, sc);
  if (rc != WF_EXIT_OK) return rc;
  if ((rc = check_devices(sa, *sc)) != WF_EXIT_OK) {
    wf_scene_destroy(*sc);
    *sc = NULL;
    wf_shutdown();
    return rc;
  }
  int halo = mpi_halo_from_env(sa->cmd);
  if (halo < 0) {
    wf_scene_destroy(*sc);
    *sc = NULL;
    wf_shutdown();
    return WF_EXIT_USAGE;
  }
  wf_world_desc wd = wf_world_desc_default();
  wd.mpi_halo = halo;
  wd.device = sa->device;
  wd.frames = (int)sa->frames;
  wd.mpi_comm = wf_cli_mpi_comm(); /* several ranks: the world spans them */
  if (wf_world_create(*sc, &wd, w) != WF_OK) {
    fprintf(stderr, "%s: creating the world: %s\n", sa->cmd, wf_last_error());
    wf_scene_destroy(*sc);
    *sc = NULL;
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }
  return WF_EXIT_OK;
}
