/* `weft bench <name>`: runs one of the benchmark drivers of bench/. `--help` of a benchmark is
 * answered here (its usage, then the exit codes) without starting the runtime. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cloth_bench.h"
#include "collider_bench.h"
#include "gpu_bench.h"
#include "particle_bench.h"
#include "scaling_bench.h"

#define BENCH_EXIT_STATUS                                                                          \
  "Exit status: 0 ok, 1 runtime failure (a device or a measurement failed), 2 bad usage.\n"

void wf_cmd_bench_usage(FILE *f) {
  fputs(
      "usage: weft bench <benchmark> [options]\n"
      "\n"
      "benchmarks:\n"
      "  gpu        the GPU layer: launch cost, transfers, device and peer copies, readback ring\n"
      "  particles  the particle solver: a falling column at 64K to 16M particles\n"
      "  cloth      the cloth solver: pinned square cloths, 32^2 to 2048^2 vertices\n"
      "  colliders  a 100k-triangle mesh collider against a box (particles) and a sphere (cloth)\n"
      "  scaling    the split particle solver on 1, 2, 4 devices: strong and weak scaling\n"
      "\n"
      "'weft bench <benchmark> --help' lists its options.\n"
      "\n" BENCH_EXIT_STATUS,
      f);
}

/* `weft bench <name> --help`: the benchmark's own usage, then the exit codes. */
static int sub_help(const char *name, int argc, char **argv) {
  bool help = false;
  for (int i = 1; i < argc; i++)
    help = help || strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
  if (!help) return -1;
  if (strcmp(name, "gpu") == 0)
    wf_bench_gpu_usage(stdout);
  else if (strcmp(name, "particles") == 0)
    wf_bench_particles_usage(stdout);
  else if (strcmp(name, "cloth") == 0)
    wf_bench_cloth_usage(stdout);
  else if (strcmp(name, "scaling") == 0)
    wf_bench_scaling_usage(stdout);
  else if (strcmp(name, "colliders") == 0)
    wf_bench_colliders_usage(stdout);
  else
    return -1;
  fputs("\n" BENCH_EXIT_STATUS, stdout);
  return WF_EXIT_OK;
}

int wf_cmd_bench(int argc, char **argv) {
  if (argc < 2) {
    fputs("weft bench: which benchmark?\n\n", stderr);
    wf_cmd_bench_usage(stderr);
    return WF_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
    wf_cmd_bench_usage(stdout);
    return WF_EXIT_OK;
  }
  int help = sub_help(name, argc - 1, argv + 1);
  if (help >= 0) return help;
  if (strcmp(name, "gpu") == 0) return wf_bench_gpu(argc - 1, argv + 1, stdout);
  if (strcmp(name, "particles") == 0) return wf_bench_particles(argc - 1, argv + 1, stdout);
  if (strcmp(name, "cloth") == 0) return wf_bench_cloth(argc - 1, argv + 1);
  if (strcmp(name, "scaling") == 0) return wf_bench_scaling(argc - 1, argv + 1, stdout);
  if (strcmp(name, "colliders") == 0) return wf_bench_colliders(argc - 1, argv + 1, stdout);
  const char *names[] = {"gpu", "particles", "cloth", "scaling", "colliders"};
  const char *near = wf_cli_closest(name, names, 5);
  fprintf(stderr, "weft bench: unknown benchmark '%s'%s%s%s (weft bench --help lists them)\n", name,
          near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
  return WF_EXIT_USAGE;
}
