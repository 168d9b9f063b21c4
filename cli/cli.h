/* The `weft` command's subcommands. Each takes its own argv (argv[0] is the subcommand's name)
 * and returns the process exit code: 0 ok, 1 runtime failure, 2 bad usage or input. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

#include <stdbool.h>
#include <stdio.h>

enum { WF_EXIT_OK = 0, WF_EXIT_FAILURE = 1, WF_EXIT_USAGE = 2 };

int wf_cmd_info(int argc, char **argv);
void wf_cmd_info_usage(FILE *f);
int wf_cmd_bench(int argc, char **argv);
void wf_cmd_bench_usage(FILE *f);
int wf_cmd_validate(int argc, char **argv);
void wf_cmd_validate_usage(FILE *f);
int wf_cmd_run(int argc, char **argv);
void wf_cmd_run_usage(FILE *f);
int wf_cmd_soak(int argc, char **argv);
void wf_cmd_soak_usage(FILE *f);
int wf_cmd_batch(int argc, char **argv);
void wf_cmd_batch_usage(FILE *f);
int wf_cmd_view(int argc, char **argv);
void wf_cmd_view_usage(FILE *f);
/* Shared helpers (cli_util.c). */
double wf_cli_now_s(void); /* monotonic seconds */
/* Whole string as an integer / a number in [lo, hi]; false otherwise (*out unchanged). */
bool wf_cli_parse_long(const char *s, long lo, long hi, long *out);
bool wf_cli_parse_double(const char *s, double lo, double hi, double *out);
/* wf_init log callback: "<user or weft>: error|warning: message" on stderr (user: a prefix). */
void wf_cli_log(int level, const char *message, void *user);

/* A command's scene path and its --set overrides. */
#define WF_CLI_MAX_SETS 256
typedef struct wf_cli_scene_args {
  const char *cmd;        /* message prefix, e.g. "weft run" */
  void (*usage)(FILE *f); /* printed after an unknown option */
  const char *path;       /* the scene, or NULL */
  const char *sets[WF_CLI_MAX_SETS];
  int n_sets;
} wf_cli_scene_args;
/* For an argument the command's own options did not take: `--set V` (advances *i), an unknown
 * option (error), or the scene path (a second one is an error). Returns WF_EXIT_OK or
 * WF_EXIT_USAGE after printing why. */
int wf_cli_scene_arg(wf_cli_scene_args *sa, int argc, char **argv, int *i);
/* WF_EXIT_OK when a scene was given, else prints why (and the usage) and returns WF_EXIT_USAGE. */
int wf_cli_scene_args_done(const wf_cli_scene_args *sa);

/* Prints the last failed scene load's messages (wf_scene_errors) to stderr, one per line. */
void wf_cli_print_scene_errors(const char *path);

#endif
