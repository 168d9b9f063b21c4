/* The host program's own CUDA work (host_kernels.cu), callable from C. Nothing here knows weft. */
#ifndef EXTERNAL_STREAM_HOST_KERNELS_H
#define EXTERNAL_STREAM_HOST_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Enqueues on `stream` (a cudaStream_t) the program's per-frame kernels: for each of n points,
 *  trail[i] = 0.9 trail[i] + amplitude(tick) * pos[i].y, with pos as 4 floats per point and an
 *  amplitude that changes with the frame counter *tick, then ++*tick. Returns a cudaError_t. */
int hk_trail_update(const float *pos, float *trail, unsigned *tick, size_t n, void *stream);

#ifdef __cplusplus
}
#endif
#endif
