/* Running the `weft` program from the command-line tests (test_cli.c, test_cli_edges.c): start it
 * with stdout and stderr into files of a directory, wait for it with a time limit. Include after
 * harness.h (th_now_ms, th_sleep_ms). */
#ifndef WEFT_TESTS_CLI_PROC_H
#define WEFT_TESTS_CLI_PROC_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* How cli_spawn starts the program. */
typedef enum cli_cwd {
  CLI_CWD_KEEP = 0, /* in the test's working directory (paths in args as the test names them) */
  CLI_CWD_DIR = 1   /* in dir (relative paths in args are dir's) */
} cli_cwd;

/* Starts the program `cli` with ARGS (NULL-terminated), stdin from /dev/null, stdout and stderr
 * into dir/stdout.txt and dir/stderr.txt, SIGINT at its default whatever the test runner set;
 * returns the child's pid or -1. */
static inline pid_t cli_spawn_in(const char *cli, const char *dir, cli_cwd cwd,
                                 const char *const *args) {
  char out[700], err[700];
  snprintf(out, sizeof out, "%s/stdout.txt", dir);
  snprintf(err, sizeof err, "%s/stderr.txt", dir);
  const char *argv[64];
  int n = 0;
  argv[n++] = cli;
  for (int i = 0; args[i] && n < 63; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int in = open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || in < 0) _exit(126);
    if (cwd == CLI_CWD_DIR && chdir(dir) != 0) _exit(126);
    dup2(in, 0), dup2(o, 1), dup2(e, 2);
    signal(SIGINT, SIG_DFL);
    execv(cli, (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* Waits for pid at most timeout_s seconds (then kills it); returns its exit code, or -1 when it
 * ended by a signal (which it prints) or did not end (which it prints too). */
static inline int cli_wait(pid_t pid, double timeout_s) {
  if (pid < 0) return -1;
  double t0 = th_now_ms();
  for (;;) {
    int ws;
    pid_t r = waitpid(pid, &ws, WNOHANG);
    if (r == pid && WIFSIGNALED(ws)) fprintf(stderr, "  weft died by signal %d\n", WTERMSIG(ws));
    if (r == pid) return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (r < 0) return -1;
    if (th_now_ms() - t0 > timeout_s * 1e3) {
      kill(pid, SIGKILL);
      waitpid(pid, &ws, 0);
      fprintf(stderr, "  weft did not finish within %.0f s\n", timeout_s);
      return -1;
    }
    th_sleep_ms(5);
  }
}

#endif
