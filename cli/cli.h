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
/* Command-line forgiveness (cli_suggest.c). Returns the argument count with every `--opt=value`
 * after argv[0] split into `--opt` and `value` (*out: argv itself when none is, else a new array
 * that lives as long as the process). */
int wf_cli_split_equals(int argc, char **argv, char ***out);
/* The candidate nearest to word (edit distance within a third of its length, at least 2; or the
 * one candidate word is the start of), or NULL. */
const char *wf_cli_closest(const char *word, const char *const *cands, int n);
/* Prints one line for an option cmd does not take: "needs a value" for one of usage's options,
 * else a did-you-mean among usage's `--words` when one is near, and where to find --help. */
void wf_cli_unknown_option(const char *cmd, const char *arg, void (*usage)(FILE *f));
/* wf_init log callback: "<user or weft>: error|warning: message" on stderr (user: a prefix). */
void wf_cli_log(int level, const char *message, void *user);

/* A command's scene path and its --set overrides, and the options run, soak and view share. */
#define WF_CLI_MAX_SETS 256
typedef struct wf_cli_scene_args {
  const char *cmd;        /* message prefix, e.g. "weft run" */
  void (*usage)(FILE *f); /* printed for --help and after an unknown option */
  bool takes_frames;      /* the command has --frames (wf_cli_common_arg) */
  const char *path;       /* the scene, or NULL */
  const char *sets[WF_CLI_MAX_SETS];
  int n_sets;
  const char *device;      /* --device D[,D...], or NULL: the scene's */
  long frames;             /* --frames N, or 0: the scene's */
  char color_sets[2][128]; /* --color-by MODE[:MAX] as render.color_by and render.*_max sets */
} wf_cli_scene_args;
/* For an argument the command's own options did not take: `--set V` (advances *i),
 * `--color-by MODE[:MAX]` (render.color_by=MODE and the top of its ramp, render.speed_max,
 * strain_max or force_max = MAX; advances *i), an unknown
 * option (error), or the scene path (a second one is an error). Returns WF_EXIT_OK or
 * WF_EXIT_USAGE after printing why. */
int wf_cli_scene_arg(wf_cli_scene_args *sa, int argc, char **argv, int *i);
/* WF_EXIT_OK when a scene was given, else prints why (and the usage) and returns WF_EXIT_USAGE. */
int wf_cli_scene_args_done(const wf_cli_scene_args *sa);

/* Prints the last failed scene load's messages (wf_scene_errors) to stderr, one per line. */
void wf_cli_print_scene_errors(const char *path);

/* Fills the *init fields the environment sets (WEFT_CPU_THREADS: cpu_threads,
 * WEFT_CPU_MEMORY_LIMIT: cpu_memory_limit). Returns
 * WF_EXIT_OK, or WF_EXIT_USAGE after printing why (prefixed by cmd) for a malformed value. */
struct wf_init_desc;
int wf_cli_init_from_env(struct wf_init_desc *init, const char *cmd);

/* CPU devices a world needs for a --device list ("cpu:0,cpu:2" needs 3) or, without one, for the
 * scene's simulation.devices (sc may be NULL): at least 1, at most 16. */
struct wf_scene;
int wf_cli_cpu_devices_needed(const char *device, const struct wf_scene *sc);
/* Adds to the running runtime the CPU devices the world will need (wf_cli_cpu_devices_needed),
 * so that `--device cpu:0,cpu:1` and scenes listing CPU devices find them; no restart, so
 * everything made so far stays valid. Returns wf_cpu_devices_ensure's status. */
int wf_cli_runtime_for_devices(const char *device, const struct wf_scene *sc);
/* Starts the runtime with *init, loads sa's scene with its --set overrides into *sc and adds the
 * CPU devices the world will need (wf_cli_runtime_for_devices). Returns
 * WF_EXIT_OK, or the exit code after printing why (prefixed by sa->cmd); on failure nothing is
 * left to free or shut down. */
int wf_cli_start_scene(struct wf_init_desc *init, const wf_cli_scene_args *sa, const char *device,
                       struct wf_scene **sc);
/* "cpu:0" for a world on one device; "cpu:0 + cpu:1 (particles split over 2 devices, cloths on
 * cpu:0)" for one on several. */
struct wf_world;
void wf_cli_world_devices(const struct wf_world *w, char *out, size_t n);

/* Start-up shared by run, soak and view (cli_start.c). */
/* wf_cli_common_arg's "the argument was taken: go on with the next". */
enum { WF_CLI_NEXT = -1 };
/* For an argument the command's own options did not take: -h/--help (the usage on stdout, then
 * exit 0), --device D, --frames N (when sa->takes_frames), then wf_cli_scene_arg. Returns
 * WF_CLI_NEXT (with *i advanced past a value), or the exit code after printing why. */
int wf_cli_common_arg(wf_cli_scene_args *sa, int argc, char **argv, int *i);
/* wf_cli_start_scene with *init (NULL: warnings and errors to stderr through wf_cli_log), then the
 * world of the scene on sa->device with sa->frames. Returns WF_EXIT_OK with *sc and *w to destroy
 * (and the runtime to shut down), or the exit code after printing why, with nothing left. */
/* cli_mpi.c: MPI when launched as one rank of several (mpirun, srun), else nothing. start
 * before the command, end after it (returns the exit status, the worst of the ranks' when this
 * rank's is 0); comm: MPI_COMM_WORLD's address over several ranks, else NULL; any: the OR of
 * every rank's flag (a collective). */
void wf_cli_mpi_start(int *argc, char ***argv);
int wf_cli_mpi_end(int rc);
const void *wf_cli_mpi_comm(void);
int wf_cli_mpi_rank(void);
int wf_cli_mpi_ranks(void);
bool wf_cli_mpi_any(bool flag);
/* Over several ranks, every rank's exit status so far: rc when this rank failed, else
 * WF_EXIT_FAILURE (saying which rank) when another did, else 0. A collective: the ranks call it
 * at the same points, so a failure on one rank stops them all there. */
int wf_cli_mpi_agree(int rc, const char *cmd);

int wf_cli_start_world(const wf_cli_scene_args *sa, struct wf_init_desc *init, struct wf_scene **sc,
                       struct wf_world **w);

#endif
