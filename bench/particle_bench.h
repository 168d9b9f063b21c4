/* `weft bench particles`: particle solver throughput (see particle_bench.c). */
#ifndef WEFT_BENCH_PARTICLE_BENCH_H
#define WEFT_BENCH_PARTICLE_BENCH_H

#include <stdio.h>

/** argv[0] is "particles"; returns the exit code (0 ok, 1 failure, 2 bad usage). */
int wf_bench_particles(int argc, char **argv, FILE *out);
void wf_bench_particles_usage(FILE *f);

#endif
