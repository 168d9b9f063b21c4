/* `weft`: the command-line program. main() only dispatches to a subcommand (cmd_*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "weft/version.h"

typedef struct wf_cli_command {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} wf_cli_command;

static const wf_cli_command commands[] = {
    {"info", "show the version, the backends and the devices of this machine", wf_cmd_info},
    {"bench", "run a benchmark (bench gpu: the GPU layer on this machine)", wf_cmd_bench},
    {"validate", "check scene files and print every error (--print: canonical JSON)",
     wf_cmd_validate},
    {"run", "run a scene headless, writing PLY/VTK/CSV outputs and checkpoints", wf_cmd_run},
    {"soak", "run a scene for 10^6 substeps and check that host and device memory stay flat",
     wf_cmd_soak},
    {"batch", "run many scenes or a parameter sweep as jobs spread over the devices", wf_cmd_batch},
    {"view", "show a scene running live in a window (--bench: timings, headless if need be)",
     wf_cmd_view},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
  fputs("usage: weft [--version] [--help] <command> [options]\n\ncommands:\n", f);
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fputs("\n'weft <command> --help' describes a command.\n"
        "Exit status: 0 ok, 1 runtime failure, 2 bad usage or input.\n",
        f);
}

static int weft_main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return WF_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return WF_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
    printf("weft %s\n", WF_VERSION_STRING);
    return WF_EXIT_OK;
  }
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  if (cmd[0] == '-') {
    const char *opts[] = {"--help", "--version"};
    const char *near = wf_cli_closest(cmd, opts, 2);
    fprintf(stderr, "weft: unknown option '%s'%s%s%s (weft --help for more)\n", cmd,
            near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    return WF_EXIT_USAGE;
  }
  const char *names[N_COMMANDS];
  for (size_t i = 0; i < N_COMMANDS; i++)
    names[i] = commands[i].name;
  const char *near = wf_cli_closest(cmd, names, (int)N_COMMANDS);
  if (near)
    fprintf(stderr, "weft: unknown command '%s'; did you mean '%s'? (weft --help for more)\n", cmd,
            near);
  else
    fprintf(stderr, "weft: unknown command '%s' (weft --help lists the commands)\n", cmd);
  return WF_EXIT_USAGE;
}

int main(int argc, char **argv) {
  wf_cli_mpi_start(&argc, &argv); /* one rank of several (mpirun): cli_mpi.c */
  char **args;
  int n = wf_cli_split_equals(argc, argv, &args); /* --frames=2 is --frames 2 everywhere */
  int rc = weft_main(n, args);
  if (args != argv) free(args);
  return wf_cli_mpi_end(rc);
}
