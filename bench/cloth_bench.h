/* `weft bench cloth`: the classic cloth benchmark — square grid cloths of 32² to 2048² vertices,
 * mass-spring and XPBD, 16 substeps a frame at 60 frames/s, positions read back every frame. */
#ifndef WEFT_BENCH_CLOTH_BENCH_H
#define WEFT_BENCH_CLOTH_BENCH_H

#include <stdio.h>

/** Runs the benchmark. argv[0] is the subcommand's name ("cloth"), options follow (see --help).
 *  Tables go to stdout, errors to stderr. Returns the exit code: 0 ok, 1 runtime failure, 2 bad
 *  usage. Starts the weft runtime and shuts it down before returning. */
int wf_bench_cloth(int argc, char **argv);

/** Prints the usage of `weft bench cloth`. */
void wf_bench_cloth_usage(FILE *f);

#endif
