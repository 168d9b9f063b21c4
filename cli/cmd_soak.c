/* `weft soak SCENE`: a long run that watches memory. Steps the scene for a number of substeps
 * (10^6 by default, in whole frames) with the health check on, and prints the host's resident
 * memory (RSS from /proc/self/statm, peak VmHWM from /proc/self/status) and the device's memory
 * (what weft holds there, and the free memory the device reports) at the start, periodically and
 * at the end.
 *
 * Invariant checked: after the warm-up (the first 10% of the frames, at least 2), host RSS does not
 * grow by more than --host-tolerance MiB, weft's device allocation does not change at all, and on
 * CUDA devices the free memory does not shrink by more than --device-tolerance MiB. A simulation
 * that allocates per frame, or a pool that never reuses, fails it. Exit 0 flat, 1 grown (or a
 * runtime failure, an unhealthy frame), 2 bad usage, 130/143 interrupted.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "run_guard.h"
#include "weft/weft.h"

#define MIB (1024.0 * 1024.0)

void wf_cmd_soak_usage(FILE *f) {
  fputs(
      "usage: weft soak SCENE [--substeps N] [--device D[,D...]] [--set key.path=value ...]\n"
      "                 [--reports N] [--host-tolerance MIB] [--device-tolerance MIB]\n"
      "\n"
      "Runs a scene for N substeps (whole frames of simulation.substeps) and reports host\n"
      "memory (RSS and peak) and device memory (held by weft, free) at the start, N times\n"
      "along the way and at the end. Fails when, after the warm-up (the first 10% of the\n"
      "frames), host RSS grew by more than the host tolerance, weft's device memory changed,\n"
      "or a CUDA device's free memory shrank by more than the device tolerance.\n"
      "\n"
      "options:\n"
      "  --substeps N            substeps in all (default 1000000)\n"
      "  --device D[,D...]       cpu, cpu:N, cuda, cuda:N, auto or all (default:\n"
      "                          simulation.devices); several: the particles are split over them\n"
      "  --set key.path=V        override a scene value (repeatable), as for `weft run`\n"
      "  --reports N             periodic reports (default 10)\n"
      "  --host-tolerance MIB    allowed RSS growth after warm-up (default 8)\n"
      "  --device-tolerance MIB  allowed loss of free device memory after warm-up (default 64)\n"
      "  -h, --help              show this help\n"
      "\n"
      "Exit status: 0 memory flat, 1 memory grew or a runtime failure (an unhealthy frame),\n"
      "2 bad usage or invalid scene, 130/143 interrupted by SIGINT/SIGTERM.\n",
      f);
}

typedef struct mem_sample {
  double rss, peak;           /* bytes */
  double held, free_b, total; /* device: weft's allocation, free, total */
} mem_sample;

static double rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return (double)res * (double)sysconf(_SC_PAGESIZE);
}

static double peak_bytes(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double kib = 0.0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kib = strtod(line + 6, NULL);
  if (f) fclose(f);
  return kib * 1024.0;
}

static mem_sample sample(wf_device *dev) {
  mem_sample m = {rss_bytes(), peak_bytes(), 0, 0, 0};
  wf_device_info info;
  if (wf_device_info_get(dev, &info) == WF_OK)
    m.held = (double)info.allocated, m.free_b = (double)info.free_memory,
    m.total = (double)info.total_memory;
  return m;
}

static void report(const char *when, long long frame, long long substeps, wf_device *dev,
                   const mem_sample *m) {
  printf("weft soak: %-7s frame %lld (substep %lld): host RSS %.1f MiB (peak %.1f MiB); %s: weft "
         "holds %.1f MiB, %.1f MiB free of %.1f MiB\n",
         when, frame, substeps, m->rss / MIB, m->peak / MIB, wf_device_name(dev), m->held / MIB,
         m->free_b / MIB, m->total / MIB);
  fflush(stdout);
}

int wf_cmd_soak(int argc, char **argv) {
  wf_cli_scene_args sa = {.cmd = "weft soak", .usage = wf_cmd_soak_usage};
  double substeps = 1e6, reports = 10, host_tol = 8, dev_tol = 64;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool v = i + 1 < argc;
    int rc;
    if (strcmp(a, "--substeps") == 0 && v) {
      if (!wf_cli_parse_double(argv[++i], 1, 1e12, &substeps)) {
        fprintf(stderr, "weft soak: --substeps '%s': expected a number >= 1\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--reports") == 0 && v) {
      if (!wf_cli_parse_double(argv[++i], 0, 1e6, &reports)) {
        fprintf(stderr, "weft soak: --reports '%s': expected a number >= 0\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--host-tolerance") == 0 && v) {
      if (!wf_cli_parse_double(argv[++i], 0, 1e9, &host_tol)) {
        fprintf(stderr, "weft soak: --host-tolerance '%s': expected MiB >= 0\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--device-tolerance") == 0 && v) {
      if (!wf_cli_parse_double(argv[++i], 0, 1e9, &dev_tol)) {
        fprintf(stderr, "weft soak: --device-tolerance '%s': expected MiB >= 0\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if ((rc = wf_cli_common_arg(&sa, argc, argv, &i)) != WF_CLI_NEXT) {
      return rc;
    }
  }
  if (wf_cli_scene_args_done(&sa) != WF_EXIT_OK) return WF_EXIT_USAGE;
  wf_scene *sc = NULL;
  wf_world *w = NULL;
  int started = wf_cli_start_world(&sa, NULL, &sc, &w);
  if (started != WF_EXIT_OK) return started;
  long long per_frame = sc->simulation.substeps;
  long long frames = (long long)((substeps + (double)per_frame - 1) / (double)per_frame);
  if (frames > 1000000000LL) frames = 1000000000LL;
  /* the scene's outputs.dir: where an unhealthy frame's last-good checkpoint goes (run_guard.c) */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", sc->outputs.dir ? sc->outputs.dir : ".");
  wf_scene_destroy(sc);
  wf_status st = WF_OK;
  wf_device *dev = wf_world_device(w);
  long long warm = frames / 10 > 2 ? frames / 10 : 2;
  if (warm > frames) warm = frames;
  long long every = reports > 0 ? (long long)((double)frames / reports) : frames + 1;
  if (every < 1) every = 1;
  printf("weft soak: %s on %s: %lld frames of %lld substeps (%lld substeps), warm-up %lld "
         "frames\n",
         sa.path, wf_device_name(dev), frames, per_frame, frames * per_frame, warm);
  mem_sample start = sample(dev), base = start, now = start;
  report("start", 0, 0, dev, &start);
  wf_run_guard_install();
  int rc = WF_EXIT_OK;
  for (long long f = 1; f <= frames; f++) {
    if ((st = wf_world_step(w, 1)) != WF_OK) {
      rc = wf_run_guard_failed(w, dir, "soak", "stepping");
      break;
    }
    bool at_warm = f == warm, at_report = f % every == 0 || f == frames;
    if (at_warm || at_report) {
      if ((st = wf_world_check(w)) != WF_OK) { /* waits: the memory of finished frames */
        rc = wf_run_guard_failed(w, dir, "soak", "checking");
        break;
      }
      now = sample(dev);
      if (at_warm) base = now;
      report(at_warm ? "warm" : f == frames ? "end" : "", f, f * per_frame, dev, &now);
    }
    if (wf_run_guard_signal()) {
      fprintf(stderr, "weft soak: interrupted after frame %lld\n", f);
      rc = wf_run_guard_signal() == SIGINT ? WF_EXIT_SIGINT : WF_EXIT_SIGTERM;
      break;
    }
  }
  if (rc == WF_EXIT_OK) {
    double host = now.rss - base.rss, held = now.held - base.held;
    double lost = wf_device_is_cuda(dev) ? base.free_b - now.free_b : 0.0;
    bool ok = host <= host_tol * MIB && held == 0.0 && lost <= dev_tol * MIB;
    printf("weft soak: %s: after the warm-up host RSS %+.2f MiB (tolerance %.1f MiB), weft's "
           "device memory %+.0f bytes (tolerance 0), device free memory %+.2f MiB%s (tolerance "
           "%.1f MiB); peak RSS %.1f MiB\n",
           ok ? "memory flat" : "FAILED: memory grew", host / MIB, host_tol, held, -lost / MIB,
           wf_device_is_cuda(dev) ? "" : " (not checked on CPU devices: the host's RSS is)",
           dev_tol, now.peak / MIB);
    if (!ok) rc = WF_EXIT_FAILURE;
  }
  wf_world_destroy(w);
  wf_shutdown();
  return rc;
}
