/* Start-up shared by `weft run`, `weft soak` and `weft view`: the options they all read (--help,
 * --device, --frames, --set, the scene) and the runtime, scene and world they all begin with. A
 * command parses its own options first and hands every other argument to wf_cli_common_arg, so
 * the shared options read and fail the same way in each. */
#include <string.h>

#include "cli.h"
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

int wf_cli_start_world(const wf_cli_scene_args *sa, struct wf_init_desc *init, struct wf_scene **sc,
                       struct wf_world **w) {
  wf_init_desc warn = {.log_level = WF_LOG_WARN, .log = wf_cli_log};
  *w = NULL;
  int rc = wf_cli_start_scene(init ? init : &warn, sa, sa->device, sc);
  if (rc != WF_EXIT_OK) return rc;
  wf_world_desc wd = wf_world_desc_default();
  wd.device = sa->device;
  wd.frames = (int)sa->frames;
  if (wf_world_create(*sc, &wd, w) != WF_OK) {
    fprintf(stderr, "%s: creating the world: %s\n", sa->cmd, wf_last_error());
    wf_scene_destroy(*sc);
    *sc = NULL;
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }
  return WF_EXIT_OK;
}
