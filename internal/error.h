/* The library's private error helper, for every module of libweft (gpu, solvers, engine).
 *
 * This (and the log) is all that modules outside gpu/ may take from the GPU layer's internals: they report a
 * failure the way the GPU layer does, into this thread's last-error text (wf_last_error), and
 * return the status. gpu/gpu_internal.h stays the GPU layer's own (it refuses to be included from
 * elsewhere), so the objects behind wf_device, wf_stream and wf_buffer are reached through the
 * public calls of weft/gpu.h only.
 *
 * Not installed; the library's sources reach it as "internal/error.h" (the source root is on the
 * library's private include path). */
#ifndef WEFT_INTERNAL_ERROR_H
#define WEFT_INTERNAL_ERROR_H

#include "weft/gpu.h"

/* Sets this thread's error text to "func: message" (func NULL: the message alone), passes it to
 * the log callback at debug level, and returns st, so that a failure reads
 *   return wf__error(WF_ERR_INVALID, "wf_world_create", "dt = %g must be > 0", dt);
 * The message says what failed, why, and what to do instead. Defined in gpu/error.c. */
wf_status wf__error(wf_status st, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Passes a message to the log callback at `level` (WF_LOG_*) when the runtime's log_level lets
 * it through: a module's warnings (the library never prints). Defined in gpu/error.c. */
void wf__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
