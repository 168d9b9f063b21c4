/* The `weft` command's subcommands. Each takes its own argv (argv[0] is the subcommand's name)
 * and returns the process exit code: 0 ok, 1 runtime failure, 2 bad usage or input. */
#ifndef WEFT_CLI_H
#define WEFT_CLI_H

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
/* Prints the last failed scene load's messages (wf_scene_errors) to stderr, one per line. */
void wf_cli_print_scene_errors(const char *path);

#endif
