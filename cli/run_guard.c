/* Stopping a run early without losing it.
 *
 * Signals: the handler only stores the signal number in a sig_atomic_t (async-signal-safe); the
 * run loop looks at it after each frame, so the frame in flight finishes, its checkpoint is
 * written with the ordinary atomic writer, and the process exits with 128 + the signal (130 for
 * SIGINT, 143 for SIGTERM). A second signal while the checkpoint is written changes nothing: the
 * loop has already stopped.
 *
 * Unhealthy frames: the world's device-side health check (weft/world.h) stops wf_world_step or
 * wf_world_check with a message naming the object, the particle or vertex, the frame and the
 * quantity; the device kept the state of the frame before it, which is written as
 * checkpoint_last_good_<frame>.wfck (an ordinary checkpoint: --resume continues from it).
 */
#define _POSIX_C_SOURCE 200809L
#include "run_guard.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "weft/outputs.h"

static volatile sig_atomic_t received;

static void on_signal(int sig) { received = sig; }

void wf_run_guard_install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

int wf_run_guard_signal(void) { return received; }

/* The particle solver's own stops (solvers/particle/part.c: a particle "left the grid's range"
 * or "became NaN/inf" inside a substep) come from the step, not from the health check, which may
 * still call every frame healthy; they stop the run as its stops do. */
static bool solver_stop(const char *msg) {
  return strstr(msg, "left the grid's range") || strstr(msg, "became NaN/inf");
}

static int write_last_good(wf_world *w, const char *dir, const char *cmd, const char *msg) {
  char path[4200];
  wf_world_health h;
  bool read = wf_world_health_get(w, true, &h) == WF_OK;
  bool write = read && (h.quantity != WF_HEALTH_OK || solver_stop(msg));
  /* over MPI ranks every rank writes it or none: its gather of the snapshot is a collective (the
   * verdicts are agreed, but a solver's stop is this rank's message, the others name the rank) */
  if (wf_cli_mpi_ranks() > 1) write = wf_cli_mpi_any(write);
  if (!write) return -1;
  if (!read) memset(&h, 0, sizeof h), h.message = msg, h.last_good_frame = wf_world_frame(w);
  fprintf(stderr, "\nweft %s: stopped: %s\n", cmd, h.quantity == WF_HEALTH_OK ? msg : h.message);
  int64_t good = h.last_good_frame;
  wf_run_outputs_path(path, sizeof path, dir, WF_RUN_FILE_LAST_GOOD, NULL, good);
  if (wf_world_save_last_good(w, path, &good) != WF_OK) {
    fprintf(stderr, "weft %s: cannot write the last-good checkpoint: %s\n", cmd, wf_last_error());
    return WF_EXIT_FAILURE;
  }
  if (h.quantity == WF_HEALTH_OK) /* the health check passed the frame the solver stopped in */
    fprintf(stderr,
            "weft %s: the last frame the health check passed, %lld, is in %s (it may already "
            "hold the point the solver stopped on: set simulation.max_speed to stop such a run "
            "earlier)\n",
            cmd, (long long)good, path);
  else
    fprintf(stderr,
            "weft %s: the last healthy frame, %lld, is in %s (continue from it with --resume)\n",
            cmd, (long long)good, path);
  return WF_EXIT_FAILURE;
}

int wf_run_guard_failed(wf_world *w, const char *dir, const char *cmd, const char *what) {
  char msg[1200];
  snprintf(msg, sizeof msg, "%s", wf_last_error());
  int rc = w ? write_last_good(w, dir, cmd, msg) : -1;
  if (rc >= 0) return rc;
  fprintf(stderr, "\nweft %s: %s: %s\n", cmd, what, msg);
  return WF_EXIT_FAILURE;
}

int wf_run_guard_interrupted(wf_world *w, const char *dir, const char *cmd) {
  int sig = wf_run_guard_signal();
  const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
  if (wf_world_check(w) != WF_OK) return wf_run_guard_failed(w, dir, cmd, "checking the frame");
  char path[4200];
  long long f = (long long)wf_world_frame(w);
  wf_run_outputs_path(path, sizeof path, dir, WF_RUN_FILE_CHECKPOINT, NULL, f);
  if (wf_world_save(w, path) != WF_OK) {
    fprintf(stderr, "\nweft %s: interrupted by %s after frame %lld: cannot write %s: %s\n", cmd,
            name, f, path, wf_last_error());
    return WF_EXIT_FAILURE;
  }
  fprintf(stderr,
          "\nweft %s: interrupted by %s after frame %lld: checkpoint written to %s (continue with "
          "--resume %s)\n",
          cmd, name, f, path, path);
  return sig == SIGINT ? WF_EXIT_SIGINT : WF_EXIT_SIGTERM;
}
