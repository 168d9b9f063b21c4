/* `weft bench <name>`: runs one of the benchmark drivers of bench/. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cloth_bench.h"
#include "gpu_bench.h"
#include "particle_bench.h"

void wf_cmd_bench_usage(FILE *f) {
  fputs(
      "usage: weft bench <benchmark> [options]\n"
      "\n"
      "benchmarks:\n"
      "  gpu        the GPU layer: launch cost, transfers, device and peer copies, readback ring\n"
      "  particles  the particle solver: a falling column at 64K to 16M particles\n"
      "\n"
      "'weft bench <benchmark> --help' lists its options.\n",
      f);
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
  if (strcmp(name, "gpu") == 0) return wf_bench_gpu(argc - 1, argv + 1, stdout);
  if (strcmp(name, "particles") == 0) return wf_bench_particles(argc - 1, argv + 1, stdout);
  if (strcmp(name, "cloth") == 0) return wf_bench_cloth(argc - 1, argv + 1);
  fprintf(stderr, "weft bench: unknown benchmark '%s'\n\n", name);
  wf_cmd_bench_usage(stderr);
  return WF_EXIT_USAGE;
}
