/* `weft bench scaling`: strong and weak scaling of the particle solver (wf_particles)
 * over 1, 2, 4, ... devices of one kind (see scaling_bench.c). */
#ifndef WEFT_BENCH_SCALING_BENCH_H
#define WEFT_BENCH_SCALING_BENCH_H

#include <stdio.h>

/** Runs the benchmark. argv[0] is the subcommand's name ("scaling"), options follow (see
 *  --help). The table goes to out, errors to stderr. Returns the exit code: 0 ok, 1 runtime
 *  failure, 2 bad usage. Starts the weft runtime (four CPU devices) and shuts it down before
 *  returning. */
int wf_bench_scaling(int argc, char **argv, FILE *out);

/** Prints the usage of `weft bench scaling`. */
void wf_bench_scaling_usage(FILE *f);

#endif
