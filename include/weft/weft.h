/* weft: physics simulation on CPU and CUDA devices.
 *
 * Guide
 *  - The GPU layer (weft/gpu.h) gives devices ("cpu:0", "cuda:1"), asynchronous streams and events,
 *    stream-ordered buffers that order their own copies and frees, graph capture, transfer rings
 * for readback, and kernels written once for both backends (weft/hd.h).
 *  - Every call returns a wf_status; wf_last_error() says what failed and what to do. The library
 *    never prints or exits: pass a log callback to wf_init to see its messages.
 *  - The version is in weft/version.h (WF_VERSION_STRING).
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H
#include "weft/cloth.h"
#include "weft/gpu.h"
#include "weft/io.h"
#include "weft/particles.h"
#include "weft/scene.h"
#include "weft/version.h"
#include "weft/world.h"
#endif
