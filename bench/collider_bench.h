/* `weft bench colliders`: mesh colliders against analytic shapes (see collider_bench.c). */
#ifndef WEFT_BENCH_COLLIDER_BENCH_H
#define WEFT_BENCH_COLLIDER_BENCH_H

#include <stdio.h>

/** argv[0] is "colliders"; returns the exit code (0 ok, 1 failure, 2 bad usage). */
int wf_bench_colliders(int argc, char **argv, FILE *out);
void wf_bench_colliders_usage(FILE *f);

#endif
