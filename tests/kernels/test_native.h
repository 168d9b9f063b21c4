/* A stand-in for a host program's own CUDA code, for the wrapped-stream tests: it creates its own
 * non-blocking cudaStream_t, launches a plain __global__ kernel on it and captures it itself.
 * Built only with CUDA (WEFT_HAVE_CUDA); each function returns 0 or a cudaError_t value. */
#ifndef WEFT_TESTS_TEST_NATIVE_H
#define WEFT_TESTS_TEST_NATIVE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef WEFT_HAVE_CUDA
/* cudaStreamCreateWithFlags(cudaStreamNonBlocking) on CUDA device `ordinal`. */
int tn_stream_create(int ordinal, void **stream);
int tn_stream_destroy(void *stream);
int tn_stream_synchronize(void *stream);
/* A plain kernel of the host program: p[i] = p[i] * mul + add over n elements, on `stream`. */
int tn_scale_add(float *p, size_t n, float mul, float add, void *stream);
/* The host program's own capture (thread-local mode), ended and discarded by tn_capture_discard. */
int tn_capture_begin(void *stream);
int tn_capture_discard(void *stream);
const char *tn_error_string(int err);
#endif

#ifdef __cplusplus
}
#endif
#endif
