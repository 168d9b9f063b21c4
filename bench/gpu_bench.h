/* `weft bench gpu`: measures the GPU layer on the machine it runs on — launch cost of streams vs.
 * graphs, host<->device bandwidth (pinned vs pageable), peer and on-device copy bandwidth, and
 * transfer-ring readback while a kernel runs. Runs on CUDA devices and on the CPU backend. */
#ifndef WEFT_BENCH_GPU_BENCH_H
#define WEFT_BENCH_GPU_BENCH_H

#include <stdio.h>

/** Runs the benchmark. argv[0] is the subcommand's name ("gpu"), options follow (see --help).
 *  Tables go to out, errors to stderr. Returns the exit code: 0 ok, 1 runtime failure, 2 bad
 *  usage. Starts the weft runtime and shuts it down before returning. */
int wf_bench_gpu(int argc, char **argv, FILE *out);

/** Prints the usage of `weft bench gpu`. */
void wf_bench_gpu_usage(FILE *f);

#endif
