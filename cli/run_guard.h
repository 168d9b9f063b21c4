/* How `weft run` and `weft soak` stop early: on SIGINT/SIGTERM (finish the frame, write a
 * checkpoint, exit 130/143) and on an unhealthy frame (name it, write the last-good checkpoint,
 * exit 1). See run_guard.c. */
#ifndef WEFT_CLI_RUN_GUARD_H
#define WEFT_CLI_RUN_GUARD_H

#include "weft/world.h"

/* Exit codes of an interrupted run: 128 + the signal number, as shells report it. */
enum { WF_EXIT_SIGINT = 130, WF_EXIT_SIGTERM = 143 };

/* Installs SIGINT and SIGTERM handlers that only record the signal. */
void wf_run_guard_install(void);
/* The signal received since wf_run_guard_install, or 0. */
int wf_run_guard_signal(void);
/* A signal arrived: waits for the frames enqueued so far, writes DIR/checkpoint_<frame>.wfck,
 * prints where to stderr ("weft <cmd>: interrupted by SIGTERM after frame F: ...") and returns
 * the exit code (130 or 143; 1 if the checkpoint cannot be written, or the last-good path's
 * code when the finished frame turns out unhealthy). */
int wf_run_guard_interrupted(wf_world *w, const char *dir, const char *cmd);
/* A world call failed while running (`what` says which): when the health check stopped the
 * world, prints its message and writes DIR/checkpoint_last_good_<frame>.wfck; otherwise prints
 * the error. Returns 1. */
int wf_run_guard_failed(wf_world *w, const char *dir, const char *cmd, const char *what);

#endif
