/* weft: physics simulation (granular particles and cloth) on CPU and CUDA devices, as a C library.
 *
 * Guide
 *
 * What it is. libweft holds a GPU layer (devices, streams, buffers, graphs), a particle solver, a
 * cloth solver, scene files, a "world" that maps a scene onto the solvers, and checkpoint and
 * output writers. #include <weft/weft.h> gives all of it; link with find_package(weft) and
 * weft::weft, or `pkg-config --cflags --libs weft`. Programs need neither nvcc nor the CUDA
 * toolkit: the CUDA backend is inside libweft. The version is in weft/version.h.
 *
 * The objects, by header:
 *  - weft/gpu.h        wf_device ("cpu:0", "cuda:1"; owned by the library), wf_stream (an
 *                      in-order queue of work; wf_stream_wrap adopts a program's cudaStream_t),
 *                      wf_event, wf_buffer (device memory that orders its own copies and frees),
 *                      wf_graph (captured work, replayed with one launch), wf_ring (readback
 *                      without waiting), wf_kernel/wf_launch (one kernel for both backends, with
 *                      weft/hd.h).
 *  - weft/particles.h  wf_particles: DEM or XPBD granular particles, emitters, colliders, on one
 *                      device or split over several (one partition each, bitwise the same).
 *  - weft/cloth.h      wf_cloth: mass-spring or XPBD cloth from a grid or a triangle mesh, pins,
 *                      attachments, wind, colliders, coupling with particles.
 *  - weft/scene.h      wf_scene: a JSON scene file, parsed and validated (docs/scenes.md).
 *  - weft/world.h      wf_world: a scene on the solvers of one device, stepped as a whole, with
 *                      statistics, checkpoints (refused when the scene's physics changed), a
 *                      readback ring, per-frame health checks and stop rules.
 *  - weft/io.h         checkpoints (versioned, checksummed, written atomically), PLY, VTK, CSV.
 *  - weft/outputs.h    wf_run_outputs: the files a run of a world writes (names, formats, when,
 *                      checkpoints, stats.csv kept across a resume), as `weft run` writes them.
 * Objects are made from definition structs: take wf_<object>_desc_default() (or _default() of
 * the struct), change what matters, pass it to wf_<object>_create; destroy with _destroy.
 *
 * A typical embedding:
 *
 *     wf_device *dev = wf_device_default();           // cuda:0 if usable, else cpu:0
 *     wf_cloth_desc d = wf_cloth_desc_default();      // defaults first, then what differs
 *     d.integrator = WF_CLOTH_XPBD;
 *     wf_cloth_grid g = wf_cloth_grid_default();      // 1 m x 1 m, 16 x 16 vertices
 *     d.devices[0] = dev;                             // or several: d.device_count = n
 *     wf_cloth *cloth;
 *     if (wf_cloth_create_grid(&d, &g, &cloth) != WF_OK) {
 *       fprintf(stderr, "%s\n", wf_last_error());     // what failed, where, what to do
 *       return 1;
 *     }
 *     wf_cloth_pin_named(cloth, "top-left", NULL);
 *     wf_cloth_pin_named(cloth, "top-right", NULL);
 *     wf_collider_desc ball = wf_collider_desc_default();
 *     ball.type = WF_COLLIDER_SPHERE, ball.center[1] = 0.5f, ball.radius = 0.3f;
 *     wf_cloth_add_collider(cloth, &ball, NULL);
 *     wf_cloth_step_frames(cloth, 60);                // returns at once: the frames are queued
 *     do_other_work();                                // the solver runs meanwhile
 *     static float pos[16 * 16][4];
 *     wf_cloth_download(cloth, pos, NULL);            // waits; xyz + inverse mass per vertex
 *     wf_cloth_destroy(cloth);
 *     wf_shutdown();
 *
 * or from a scene file: wf_scene_load(path, NULL, &scene), wf_world_create(scene, NULL, &world),
 * wf_world_step(world, frames), wf_world_stats_get / wf_world_object_download / wf_world_save.
 * examples/ holds complete programs (embed_cloth, embed_pkgconfig, external_stream).
 *
 * Errors. Every fallible call returns a wf_status: WF_OK (0), a negative WF_ERR_* on failure, or
 * WF_NOT_READY (positive) from queries whose work is not finished. After a failure,
 * wf_last_error() holds this thread's message: what failed, where (object name, field or key
 * path, file:line:col) and what to do; it stays valid until the thread's next weft call. A
 * create call that fails sets its out-handle to NULL.
 *
 * Asynchrony and threads. wf_init is optional (the first call starts weft with defaults); call
 * wf_shutdown last, after destroying your handles. Work on streams runs asynchronously to the
 * host, on CUDA devices and on CPU devices alike (each CPU stream is a worker thread): step_frames,
 * copies and launches enqueue and return; downloads, stats, checks and synchronize calls wait.
 * Solvers and worlds keep their own streams ordered, so a download after a step always sees the
 * step. Objects are not locked against concurrent calls: drive each solver, world, stream and
 * device stream stack from one thread at a time. The exceptions are documented where they apply
 * (wf_last_error is per thread; a world readback ring may be read from another thread).
 *
 * No printing, no exit. The library never writes to stdout or stderr and never exits or aborts
 * on bad input: failures come back as statuses and messages, and warnings go to the log callback
 * given to wf_init (wf_init_desc.log), or nowhere.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H
#include "weft/cloth.h"
#include "weft/collider.h"
#include "weft/gpu.h"
#include "weft/io.h"
#include "weft/outputs.h"
#include "weft/particles.h"
#include "weft/partition.h"
#include "weft/scene.h"
#include "weft/version.h"
#include "weft/world.h"
#endif
