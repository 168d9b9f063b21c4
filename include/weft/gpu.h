/* weft GPU layer: devices, streams, events, stream-ordered buffers, copies, graph capture,
 * transfer rings and kernels, on a CPU backend (always present) and a CUDA backend.
 *
 * The semantics are CUDA's, made safe by default:
 *  - Work is asynchronous to the host. Each stream runs its work in order; different streams and
 *    devices run concurrently. On CPU devices every stream is a worker thread, so a missing wait
 *    between two CPU streams is a real race there too.
 *  - A buffer remembers the stream that last used it through weft (allocation, copy, memset,
 * upload, download, wf_buffer_touch). wf_copy, wf_memset, wf_upload and wf_buffer_destroy on
 * another stream or device first make their stream wait for that one, so no copy reads stale data
 * and no free overtakes a pending copy. Kernels are opaque: a kernel that writes a buffer another
 * stream will use must be ordered with wf_stream_wait_stream / events, or marked with
 * wf_buffer_touch.
 *  - Nothing uses CUDA's legacy default stream.
 *  - While a stream is captured (wf_capture_begin), anything that cannot be captured returns
 *    WF_ERR_CAPTURE with a message naming what to use instead: synchronization, pageable host
 *    copies, wf_download, pinned allocation.
 *
 * Every function returns a wf_status (or a value) and never prints or exits; wf_last_error() holds
 * this thread's last failure as text. Messages of interest go to the log callback of wf_init.
 */
#ifndef WEFT_GPU_H
#define WEFT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Result of every fallible call. Negative values are errors. */
typedef enum wf_status {
  WF_OK = 0,
  WF_NOT_READY = 1,          /* a query: the work is not finished yet */
  WF_ERR_INVALID = -1,       /* bad argument */
  WF_ERR_DEVICE = -2,        /* no such device, or the device failed */
  WF_ERR_OUT_OF_MEMORY = -3, /* host or device memory exhausted */
  WF_ERR_CAPTURE = -4,       /* not allowed while the stream is being captured */
  WF_ERR_BACKEND = -5,       /* CUDA (or other backend) error; wf_last_error() has the details */
  WF_ERR_IO = -6,            /* a file could not be read or written; the message has the path */
  WF_ERR_PARSE = -7,         /* malformed input (scene, checkpoint); the message says where */
  WF_ERR_UNSUPPORTED = -8,   /* not possible on this device, hardware or build */
} wf_status;

/** Short constant name of a status ("WF_ERR_DEVICE"); never NULL. */
WF_API const char *wf_status_str(wf_status s);
/** This thread's last failure: what failed, where (function, device), why (backend error name) and
 *  what to do. Empty string when nothing failed yet. Valid until this thread's next weft call. */
WF_API const char *wf_last_error(void);
/** Clears this thread's last error. */
WF_API void wf_clear_error(void);

/** A device, "cpu:N" or "cuda:N". Owned by the library and valid until wf_shutdown; never freed
 *  by the caller. */
typedef struct wf_device wf_device;
/** An in-order queue of work on one device: wf_stream_create, wf_stream_wrap (a host program's
 *  cudaStream_t), or a device's default stream (wf_device_stream). */
typedef struct wf_stream wf_stream;
/** A marker in a stream's work, to wait for, to query or to time (wf_event_create). */
typedef struct wf_event wf_event;
/** Memory on one device that remembers its last user stream (wf_buffer_create, wf_buffer_wrap). */
typedef struct wf_buffer wf_buffer;
/** Work recorded by a capture, replayed with one launch (wf_capture_end, wf_graph_launch). */
typedef struct wf_graph wf_graph;
/** Pinned host slots for device-to-host readback without waiting (wf_ring_create). */
typedef struct wf_ring wf_ring;

/** Log levels for wf_init_desc.log_level and the callback. */
enum { WF_LOG_ERROR = 0, WF_LOG_WARN = 1, WF_LOG_INFO = 2, WF_LOG_DEBUG = 3 };

/** Runtime options. Zero in every field means "default". */
typedef struct wf_init_desc {
  int cpu_devices; /* CPU devices cpu:0..N-1 to start with; 0 means 1 (at most 16; more can be
                      added later with wf_cpu_devices_ensure) */
  int log_level;   /* 0 errors … 3 debug: messages above it are not passed to log */
  void (*log)(int level, const char *message, void *user); /* NULL: the library stays silent */
  void *log_user;                                          /* passed to log as `user` */
  bool no_cuda; /* true: do not touch CUDA even if a GPU is present */
  bool no_peer; /* true: never enable peer access; cross-GPU copies are staged through host */
  /* A cap on the bytes weft holds on each CPU device (buffers, pinned or not); an allocation past
     it fails with WF_ERR_OUT_OF_MEMORY, and wf_device_info_get reports the cap as total_memory.
     0: no cap. For reproducible out-of-memory paths and runs within a budget. The library never
     reads the environment; the weft command sets this from WEFT_CPU_MEMORY_LIMIT. */
  size_t cpu_memory_limit;
  /* Threads a CPU device runs a kernel on: the kernels that allow it (wf_kernel.cpu_grain) run
     their range in pieces on a worker pool shared by every CPU device, plus the stream's own
     thread. 0: the cores the process may use (its CPU affinity); 1: no pool, every kernel on its
     stream's thread. Results do not depend on it (the pieces' elements are independent). The
     weft command sets it from WEFT_CPU_THREADS. */
  int cpu_threads;
} wf_init_desc;

/** Starts the runtime. Optional: any other call starts it with defaults. Calling it again after
 *  the runtime is up returns WF_ERR_INVALID unless wf_shutdown came first. */
WF_API wf_status wf_init(const wf_init_desc *desc);
/** Waits for all work, destroys the default streams and frees every deferred allocation. Handles
 *  created by the caller must be destroyed before. */
WF_API void wf_shutdown(void);
/** Waits for every stream of every device. */
WF_API wf_status wf_synchronize(void);

/** Number of devices: the CPU devices of wf_init first (cpu:0…), then the usable CUDA devices
 *  (cuda:0…), then any CPU devices wf_cpu_devices_ensure added later. */
WF_API int wf_device_count(void);
/** Makes sure the running runtime has at least `count` CPU devices, cpu:0..count-1 (1 to 16),
 *  adding the missing ones without a restart (starting the runtime with defaults if it is not up).
 *  Added devices go at the end of the table: every device index and pointer handed out before
 *  stays valid, and nothing else changes. They last until wf_shutdown; a later wf_init starts
 *  again from wf_init_desc.cpu_devices. WF_ERR_INVALID outside 1..16. Safe to call from any
 *  thread, also while other threads use devices. */
WF_API wf_status wf_cpu_devices_ensure(int count);
/** Device at index [0, wf_device_count()), or NULL. */
WF_API wf_device *wf_device_at(int index);
/** Looks a device up by name: "cpu", "cpu:1", "cuda", "cuda:1". An unknown name returns
 *  WF_ERR_DEVICE and wf_last_error() lists the devices that exist. */
WF_API wf_status wf_device_get(const char *name, wf_device **out);
/** The default device: cuda:0 if a usable CUDA device exists, else cpu:0. */
WF_API wf_device *wf_device_default(void);
/** "cpu:0", "cuda:1", … */
WF_API const char *wf_device_name(const wf_device *d);
/** N of "cpu:N" or "cuda:N" (-1 for NULL): the CUDA device ordinal of a CUDA device. */
WF_API int wf_device_ordinal(const wf_device *d);
/** True for a CUDA device, false for a CPU device (or NULL). */
WF_API bool wf_device_is_cuda(const wf_device *d);
/** Waits for every stream of the device. */
WF_API wf_status wf_device_synchronize(wf_device *d);
/** The device's current stream: the top of its push/pop stack, else its default stream. */
WF_API wf_stream *wf_device_stream(wf_device *d);
/** Replaces the device's current stream (the top of the stack). NULL restores the default one. */
WF_API wf_status wf_device_set_stream(wf_device *d, wf_stream *s);

/** Facts about a device, filled by wf_device_info. */
typedef struct wf_device_info {
  char name[64];     /* "cuda:0" */
  char product[256]; /* "NVIDIA H200", or the CPU model */
  bool is_cuda;
  int ordinal;            /* N in cuda:N or cpu:N */
  int cc_major, cc_minor; /* compute capability (CUDA) */
  int multiprocessors;    /* SMs (CUDA) or hardware threads (CPU) */
  size_t total_memory;    /* bytes */
  size_t free_memory;     /* bytes, at the time of the call */
  size_t allocated;       /* bytes weft holds on this device now */
  int pci_bus;            /* CUDA: PCI bus id, else -1 */
} wf_device_info;
/** Fills *out with the facts about d; free_memory and allocated are as of this call. */
WF_API wf_status wf_device_info_get(wf_device *d, wf_device_info *out);
/** Waits for the device, then hands the memory its pool keeps for reuse (freed buffers) back to
 *  the driver, so that wf_device_info_get's free_memory counts it as free again (after a failed
 *  large allocation, or before leaving a shared GPU to other processes). CPU devices: waits. */
WF_API wf_status wf_device_trim(wf_device *d);
/** True when kernels on d can read and write peer's memory directly: the same device, two CPU
 *  devices, or two CUDA devices whose peer access weft enabled (it does so at start-up for every
 *  pair the hardware allows, unless wf_init_desc.no_peer). */
WF_API bool wf_device_can_access_peer(const wf_device *d, const wf_device *peer);

/** Runtime facts for `weft info`. */
typedef struct wf_runtime_info {
  bool cuda_compiled;           /* built with the CUDA backend */
  int cuda_driver_version;      /* e.g. 13000, 0 if no driver */
  int cuda_runtime_version;     /* e.g. 13000, 0 without the CUDA backend */
  int cuda_devices_found;       /* including ones this build cannot run on */
  char cuda_status[512];        /* why no CUDA device is usable, or "" */
  char cuda_architectures[128]; /* the architectures this build was compiled for, "90" */
  int cpu_threads;              /* threads a CPU device runs a kernel on (wf_init_desc) */
} wf_runtime_info;
/** Fills *out with the runtime facts (starting the runtime with defaults if it is not up). */
WF_API void wf_runtime_info_get(wf_runtime_info *out);

/* ---- streams ------------------------------------------------------------------------------- */

/** Creates a stream on d. priority: 0 normal, negative higher (CUDA's convention). */
WF_API wf_status wf_stream_create(wf_device *d, int priority, wf_stream **out);
/** Adopts a host program's cudaStream_t (not owned: wf_stream_destroy leaves it alive). */
WF_API wf_status wf_stream_wrap(wf_device *d, void *native_stream, wf_stream **out);
/** Releases the stream once its queued work is done; buffers that remember it keep it alive. */
WF_API void wf_stream_destroy(wf_stream *s);
/** The device s runs on. */
WF_API wf_device *wf_stream_device(const wf_stream *s);
/** The cudaStream_t of a CUDA stream; NULL on CPU devices. */
WF_API void *wf_stream_native(wf_stream *s);
/** Waits on the host until all work queued on s is done. WF_ERR_CAPTURE while s is captured. */
WF_API wf_status wf_stream_synchronize(wf_stream *s);
/** WF_OK when all queued work is done, else WF_NOT_READY. */
WF_API wf_status wf_stream_query(wf_stream *s);
/** Work queued on s after this call waits for e's last recording. */
WF_API wf_status wf_stream_wait_event(wf_stream *s, wf_event *e);
/** Work queued on waiter after this call waits for all work queued on other so far. While other is
 *  captured this forks waiter into the capture; waiting the origin on a forked stream joins it. */
WF_API wf_status wf_stream_wait_stream(wf_stream *waiter, wf_stream *other);
/** s becomes current on its device after waiting on the old current stream. */
WF_API wf_status wf_stream_push(wf_stream *s);
/** Restores the previous current stream of d; the restored stream waits on the popped one. */
WF_API wf_status wf_stream_pop(wf_device *d);

/* ---- events -------------------------------------------------------------------------------- */

/** Flags of wf_event_create: WF_EVENT_TIMING lets the event be used with wf_event_elapsed_ms. */
enum { WF_EVENT_TIMING = 1 };
/** Creates an event on d; flags is 0 or WF_EVENT_TIMING. */
WF_API wf_status wf_event_create(wf_device *d, unsigned flags, wf_event **out);
/** Frees the event. NULL is ignored. */
WF_API void wf_event_destroy(wf_event *e);
/** Marks the point in s after all work queued so far. s NULL: the event device's current stream. */
WF_API wf_status wf_event_record(wf_event *e, wf_stream *s);
/** WF_OK when the recorded work is done (or never recorded), else WF_NOT_READY. */
WF_API wf_status wf_event_query(wf_event *e);
/** Waits on the host until the work before e's last recording is done. */
WF_API wf_status wf_event_synchronize(wf_event *e);
/** Milliseconds between two completed recordings; both events need WF_EVENT_TIMING. */
WF_API wf_status wf_event_elapsed_ms(wf_event *start, wf_event *end, float *ms);

/* ---- buffers and copies -------------------------------------------------------------------- */

/** Flags of wf_buffer_create: WF_BUFFER_PINNED (page-locked host memory on a CPU device, for
 *  asynchronous copies with CUDA devices), WF_BUFFER_ZERO (filled with zeros on the stream). */
enum { WF_BUFFER_PINNED = 1, WF_BUFFER_ZERO = 2 };
/** Allocates bytes on d, ordered on stream s (NULL: the device's current stream); on CUDA devices
 *  from the device's memory pool. Host buffers live on a CPU device; PINNED makes them
 *  page-locked for asynchronous transfers with CUDA devices. ZERO fills with zeros on s. */
WF_API wf_status wf_buffer_create(wf_device *d, size_t bytes, unsigned flags, wf_stream *s,
                                  wf_buffer **out);
/** Wraps memory the caller owns (host memory on a CPU device, device memory on a CUDA device). */
WF_API wf_status wf_buffer_wrap(wf_device *d, void *ptr, size_t bytes, wf_buffer **out);
/** Frees the buffer after its pending work, ordered on s (NULL: the device's current stream). */
WF_API void wf_buffer_destroy(wf_buffer *b, wf_stream *s);
/** The buffer's address on its device: host memory on a CPU device, a device pointer (not for
 *  the host to dereference) on a CUDA device. */
WF_API void *wf_buffer_ptr(const wf_buffer *b);
/** Size in bytes. */
WF_API size_t wf_buffer_size(const wf_buffer *b);
/** The device the buffer lives on. */
WF_API wf_device *wf_buffer_device(const wf_buffer *b);
/** The WF_BUFFER_* flags it was created with (0 for wrapped memory). */
WF_API unsigned wf_buffer_flags(const wf_buffer *b);
/** Records that work queued on s (a kernel) uses b, so later copies and frees on other streams
 *  wait for it. Inside a capture it also makes the graph keep b alive. */
WF_API wf_status wf_buffer_touch(wf_buffer *b, wf_stream *s);

/** Copies bytes from src+src_off to dst+dst_off. s == NULL: the destination device's current stream
 *  if it is a CUDA device, else the source's. Ordering against the buffers' previous users on other
 *  streams and devices is handled here. Copies between a pageable host buffer and a CUDA device are
 *  synchronous to the host; all others are asynchronous. */
WF_API wf_status wf_copy(wf_buffer *dst, size_t dst_off, const wf_buffer *src, size_t src_off,
                         size_t bytes, wf_stream *s);
/** Sets bytes of b from off to the byte value, ordered on s (NULL: b's device's current stream). */
WF_API wf_status wf_memset(wf_buffer *b, int value, size_t off, size_t bytes, wf_stream *s);
/** Copies from caller memory into dst. The caller's memory may be reused as soon as this returns.
 */
WF_API wf_status wf_upload(wf_buffer *dst, size_t dst_off, const void *host, size_t bytes,
                           wf_stream *s);
/** Copies from src into caller memory and waits for it (after src's pending work). */
WF_API wf_status wf_download(void *host, const wf_buffer *src, size_t src_off, size_t bytes);

/** Enables peer access and memory-pool access between two CUDA devices, both directions where
 *  supported. WF_ERR_UNSUPPORTED when the hardware cannot (copies then go through host memory,
 *  with one warning in the log). weft already does this for every pair at start-up. */
WF_API wf_status wf_peer_access_enable(wf_device *d, wf_device *peer);

/* ---- graphs -------------------------------------------------------------------------------- */

/** Starts recording the work queued on s (and on streams forked from it) instead of running it. */
WF_API wf_status wf_capture_begin(wf_stream *s);
/** Ends the capture begun on s and returns an executable graph. Every forked stream must have been
 *  joined back (wf_stream_wait_stream(s, forked)); otherwise WF_ERR_CAPTURE and no graph. */
WF_API wf_status wf_capture_end(wf_stream *s, wf_graph **out);
/** Ends the capture begun on s like wf_capture_end and replaces *g (a graph captured on s before,
 *  or NULL) with it. Where the backend can, the new graph takes over the old one's executable form
 *  updated in place, which costs far less than a new one (CUDA: when only kernel parameters,
 *  sizes and addresses changed, not the nodes and their order). The old graph is destroyed; it
 *  must not be running any more. On failure *g is left as it was. */
WF_API wf_status wf_capture_end_update(wf_stream *s, wf_graph **g);
/** True while s is being captured (by weft, or by the host program on a wrapped stream). */
WF_API bool wf_stream_is_capturing(const wf_stream *s);
/** Runs the captured work once, ordered on s (NULL: the capture's origin stream). */
WF_API wf_status wf_graph_launch(wf_graph *g, wf_stream *s);
/** Number of work items (kernels, copies, memsets) recorded in the graph. */
WF_API size_t wf_graph_node_count(const wf_graph *g);
/** Frees the graph and releases the buffers it kept alive. NULL is ignored. */
WF_API void wf_graph_destroy(wf_graph *g);

/* ---- transfer ring ------------------------------------------------------------------------- */

/** A ring of `slots` pinned host slots of slot_bytes each, for readback from device d without the
 *  producer ever waiting on the consumer.
 *
 *  Slot life: FREE → (push) IN FLIGHT → (copy done, picked by latest) HELD → (release) FREE.
 *  wf_ring_push takes a FREE slot; when none is free it reuses the oldest IN-FLIGHT slot (that
 * frame is dropped and counted, the copy is ordered after the earlier one on the GPU, the host
 * never blocks). When every slot is HELD by the consumer the push is dropped: it returns
 * WF_NOT_READY, *slot = -1, and the drop is counted. wf_ring_latest returns the newest finished
 * slot and frees the older finished ones (stale frames). */
WF_API wf_status wf_ring_create(wf_device *d, size_t slot_bytes, int slots, wf_ring **out);
/** Enqueues a copy of bytes (at most slot_bytes) of src from src_off into a slot, ordered on s
 *  (NULL: the ring device's current stream), without waiting; *slot receives the slot, or -1
 *  when the push was dropped (see above). */
WF_API wf_status wf_ring_push(wf_ring *r, const wf_buffer *src, size_t src_off, size_t bytes,
                              wf_stream *s, int *slot);
/** Non-blocking. WF_NOT_READY when no pushed slot has finished copying. */
WF_API wf_status wf_ring_latest(wf_ring *r, int *slot, const void **data);
/** Gives a slot from wf_ring_latest back to the ring (HELD -> FREE). */
WF_API void wf_ring_release(wf_ring *r, int slot);
/** Waits for the ring's copies, then frees it. */
WF_API void wf_ring_destroy(wf_ring *r);
/** Counters: frames pushed, delivered by latest, dropped (overwritten, stale or refused). */
typedef struct wf_ring_stats {
  uint64_t pushed, delivered, overwritten, stale, refused;
} wf_ring_stats;
/** Fills *out with the ring's counters. */
WF_API void wf_ring_stats_get(const wf_ring *r, wf_ring_stats *out);

/* ---- kernels ------------------------------------------------------------------------------- */

/** A kernel: per-element math written once in a header (WF_HD functions), a CPU loop over
 *  [begin, end) and a CUDA wrapper that enqueues n elements on the given cudaStream_t. */
typedef struct wf_kernel {
  const char *name;                                              /* for messages */
  void (*cpu)(const void *args, size_t begin, size_t end);       /* elements [begin, end) */
  void (*cuda)(const void *args, size_t n, void *native_stream); /* enqueue n elements */
  /* CPU: 0 runs [0, n) as one call on the stream's thread; G > 0 lets the backend run it in
     pieces of at least G elements on several threads at once (wf_init_desc.cpu_threads), which
     is right only when the elements are independent, as the CUDA launch assumes: no element
     reads what another writes, and shared results are merged with integer atomics. */
  size_t cpu_grain;
} wf_kernel;
/** wf_kernel.cpu_grain for kernels of about a microsecond an element (contacts, constraints) and
 *  for those of nanoseconds an element (keys, copies, packing): a piece takes tens of microseconds,
 *  long beside the pool's hand-over of a few. */
#define WF_GRAIN_HEAVY 64
#define WF_GRAIN_LIGHT 4096
/** For the CPU function of a kernel whose launch must run as one call (cpu_grain 0) because its
 *  stages read each other's results (a one-launch frame: substeps, colours): runs one stage,
 *  fn(args, b, e) over pieces of [0, n), on the CPU worker pool as a launch with cpu_grain =
 *  grain would, and returns when every piece is done, so the next stage sees all of it. The
 *  launch's rule holds for the stage: its elements are independent. With one CPU thread
 *  (wf_init_desc.cpu_threads), grain 0 or n below two grains it is the call fn(args, 0, n). */
WF_API void wf_cpu_parallel_for(void (*fn)(const void *args, size_t begin, size_t end),
                                const void *args, size_t n, size_t grain);
/** Enqueues k over n elements on s (NULL: the default device's current stream). args (args_size
 *  bytes) are copied before the call returns. */
WF_API wf_status wf_launch(const wf_kernel *k, size_t n, const void *args, size_t args_size,
                           wf_stream *s);

/** Enqueues fn(user) on s, run by the host after the work queued before it (CUDA: a host node
 *  in a capture). fn must not call weft or CUDA. */
WF_API wf_status wf_stream_host_func(wf_stream *s, void (*fn)(void *user), void *user);

#ifdef __cplusplus
}
#endif
#endif
