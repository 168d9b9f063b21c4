/* The GPU layer's internals: the objects behind the public handles and the backend table.
 *
 * The core (the files in gpu/) owns object lifetimes, the current-stream stacks, buffer ordering
 * and the capture rules; a backend (gpu/cpu, gpu/cuda) only knows how to queue work on one of its
 * streams.
 *
 * Invariants
 *  - Every stream, event and buffer belongs to exactly one device; its backend is the device's.
 *  - Streams are reference counted: the user's handle, each buffer whose last user it was, and each
 *    device stack entry hold one. The backend stream is torn down when the count reaches zero.
 *  - A buffer's `last` is the stream of the last real (not captured) operation on it. An operation
 *    on another stream first waits for `last`. During a capture, `cap_last` plays that role for
 *    streams of the same capture, and the graph keeps a reference to the buffer; at launch the
 *    graph orders itself after each buffer's `last`.
 */
#ifndef WEFT_GPU_INTERNAL_H
#define WEFT_GPU_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal/error.h" /* wf__error, shared with the other modules */
#include "weft/gpu.h"

/* Only the GPU layer's own sources (gpu/, marked WEFT_GPU_LAYER by CMake) see its internals; the
   solvers and the engine use weft/gpu.h and internal/error.h. */
#ifndef WEFT_GPU_LAYER
#error "gpu_internal.h is private to gpu/: include weft/gpu.h and internal/error.h instead"
#endif

#define WF_GPU_MAX_DEVICES 32
#define WF_MAX_CPU_DEVICES 16
#define WF_MAX_CPU_THREADS 256 /* the CPU backend's worker pool, at most */
#define WF_STREAM_STACK    32

typedef struct wf_backend wf_backend;
typedef struct wf_capture wf_capture;

struct wf_device {
  int index;   /* position in wf_device_at */
  int ordinal; /* N of cpu:N / cuda:N */
  bool is_cuda;
  char name[16];
  char product[256];
  const wf_backend *be;
  int cc_major, cc_minor, multiprocessors, pci_bus;
  size_t total_memory;
  _Atomic size_t allocated;
  pthread_mutex_t lock; /* guards the stream stack */
  wf_stream *default_stream;
  wf_stream *base; /* set by wf_device_set_stream; NULL: the default stream */
  wf_stream *stack[WF_STREAM_STACK];
  int depth;
  void *be_data; /* backend private (CUDA: memory pool) */
  bool peer_enabled[WF_GPU_MAX_DEVICES];
  bool peer_warned[WF_GPU_MAX_DEVICES];
};

struct wf_stream {
  wf_device *dev;
  _Atomic int refs;
  uint64_t id;
  bool is_default;
  bool wrapped;
  void *native;           /* CUDA: cudaStream_t; CPU: the worker queue */
  wf_event *mark;         /* internal event for wait_stream and buffer ordering */
  pthread_mutex_t lock;   /* serializes mark record + wait */
  wf_capture *capture;    /* weft capture this stream belongs to, or NULL */
  uint64_t cap_cmds;      /* commands appended during the capture */
  uint64_t cap_joined;    /* cap_cmds value up to which another member has waited on us */
  struct wf_stream *next; /* registry of live streams */
};

struct wf_event {
  wf_device *dev;
  unsigned flags;
  void *native;
  uint64_t cap_id;       /* id of the capture it was last recorded in, 0 if none */
  wf_stream *rec_stream; /* that capture's member stream which recorded it */
  uint64_t rec_seq;      /* the stream's cap_cmds when recorded */
};

struct wf_buffer {
  wf_device *dev;
  void *ptr;
  size_t size;
  unsigned flags;
  bool owned;
  bool pinned;         /* host memory from wf__pinned_alloc (gpu/pinned.c) */
  _Atomic int refs;    /* the user's handle + graphs that captured it */
  wf_stream *last;     /* holds a reference */
  wf_stream *cap_last; /* during a capture; no reference */
  uint64_t cap_id;
};

struct wf_capture {
  uint64_t id;
  wf_stream *origin;
  const wf_backend *be;
  wf_stream *members[64];
  int n_members;
  wf_buffer **buffers; /* referenced by the graph being built */
  int n_buffers, cap_buffers;
  size_t nodes;
  void *be_data; /* CPU: the command list being recorded */
};

struct wf_graph {
  wf_stream *origin; /* referenced */
  const wf_backend *be;
  void *native; /* CPU: command list; CUDA: cudaGraphExec_t */
  void *native_graph;
  wf_buffer **buffers;
  int n_buffers;
  size_t nodes;
};

/* Copy classification passed to the backend. */
typedef enum wf_copy_kind {
  WF_COPY_HOST_HOST, /* both sides on CPU devices */
  WF_COPY_H2D,
  WF_COPY_D2H,
  WF_COPY_D2D,  /* same CUDA device */
  WF_COPY_PEER, /* two CUDA devices */
} wf_copy_kind;

typedef struct wf_copy_desc {
  void *dst;
  const void *src;
  size_t bytes;
  wf_copy_kind kind;
  bool pageable; /* a host side is pageable */
  wf_device *dst_dev, *src_dev;
  bool staged; /* PEER without peer access: through host memory */
} wf_copy_desc;

struct wf_backend {
  const char *name;
  wf_status (*stream_create)(wf_stream *s, int priority);
  wf_status (*stream_wrap)(wf_stream *s, void *native);
  void (*stream_release)(wf_stream *s); /* waits for its work, frees the native stream */
  wf_status (*stream_synchronize)(wf_stream *s);
  wf_status (*stream_query)(wf_stream *s);
  bool (*stream_is_capturing)(const wf_stream *s);
  wf_status (*event_create)(wf_event *e);
  void (*event_destroy)(wf_event *e);
  wf_status (*event_record)(wf_event *e, wf_stream *s);
  wf_status (*event_query)(wf_event *e);
  wf_status (*event_synchronize)(wf_event *e);
  wf_status (*event_elapsed)(wf_event *a, wf_event *b, float *ms);
  wf_status (*stream_wait_event)(wf_stream *s, wf_event *e); /* e of the same backend */
  wf_status (*host_func)(wf_stream *s, void (*fn)(void *), void *user);
  wf_status (*alloc)(wf_device *d, size_t bytes, unsigned flags, wf_stream *s, void **out,
                     bool *pinned);
  void (*free)(wf_buffer *b, wf_stream *s);
  wf_status (*copy)(const wf_copy_desc *c, wf_stream *s);
  wf_status (*memset)(void *dst, int value, size_t bytes, wf_stream *s);
  wf_status (*upload)(void *dst, const void *host, size_t bytes, wf_stream *s);
  wf_status (*launch)(const wf_kernel *k, size_t n, const void *args, size_t size, wf_stream *s);
  wf_status (*capture_begin)(wf_stream *s, wf_capture *c);
  /* prev (may be NULL): an earlier graph of the same origin whose executable form g may take
   * over, updated in place (then prev->native becomes NULL) */
  wf_status (*capture_end)(wf_stream *s, wf_capture *c, wf_graph *g, wf_graph *prev);
  void (*capture_abort)(wf_stream *s, wf_capture *c);
  wf_status (*graph_launch)(wf_graph *g, wf_stream *s);
  void (*graph_destroy)(wf_graph *g);
  wf_status (*device_info)(wf_device *d, wf_device_info *out);
  wf_status (*trim)(wf_device *d); /* optional: return pooled free memory to the driver */
  /* optional: direct access between two devices of this backend, both directions (CUDA: peer
     access and memory-pool access); WF_ERR_UNSUPPORTED where the hardware cannot */
  wf_status (*peer_enable)(wf_device *a, wf_device *b);
  /* optional, together: page-locked host memory this backend copies asynchronously (NULL on
     failure), and its release; used by gpu/pinned.c for WF_BUFFER_PINNED buffers */
  void *(*host_alloc)(size_t bytes);
  void (*host_free)(void *p);
};

/* ---- core services (gpu/runtime.c, gpu/error.c) ---- */
wf_status wf__ensure_init(void);
void wf__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const wf_init_desc *wf__init_desc(void);

/* The CPU backend's worker pool (gpu/cpu/cpu_pool.c), shared by every CPU device. Runs
 * fn(args, b, e) over pieces of [0, n) of at least `grain` elements on the calling thread and the
 * pool's threads at once, returning when all are done; grain 0, or n below two grains, is one
 * call fn(args, 0, n) on the calling thread. The pool starts on first use. */
void wf__cpu_pool_run(void (*fn)(const void *, size_t, size_t), const void *args, size_t n,
                      size_t grain);
/* Threads a piecewise kernel runs on (wf_init_desc.cpu_threads, else the usable cores). */
int wf__cpu_pool_threads(void);
/* Joins the pool's threads (wf_shutdown, after every stream is gone). */
void wf__cpu_pool_stop(void);
/* captures begun by this thread and not yet ended (CUDA's thread-local capture mode) */
int wf__thread_captures(void);
void wf__thread_captures_add(int delta);
/* a stream of the host thread's captures, for error messages */

/* registry of live streams (for wf_synchronize) */
void wf__stream_register(wf_stream *s);
void wf__stream_unregister(wf_stream *s);
bool wf__any_stream_capturing(wf_device *d); /* d NULL: any device */
wf_device *wf__device_at(int index);
int wf__device_count(void);

/* ---- stream helpers (gpu/stream.c) ---- */
void wf__stream_retain(wf_stream *s);
void wf__stream_release(wf_stream *s);
bool wf__stream_capturing(const wf_stream *s);
wf_stream *wf__current(wf_device *d); /* never NULL after init */
/* waiter waits for everything queued on other so far (cross-backend aware) */
wf_status wf__stream_after(wf_stream *waiter, wf_stream *other);
wf_status wf__wait_event_any(wf_stream *s, wf_event *e);
wf_event *wf__event_new(wf_device *d, unsigned flags, wf_status *st);
void wf__event_free(wf_event *e);
/* capture guard for blocking calls: WF_ERR_CAPTURE if this thread captures or s is captured */
wf_status wf__check_no_capture(const char *func, const wf_stream *s, const char *instead);

/* ---- capture bookkeeping (gpu/graph.c) ---- */
/* records e on s (same backend) with fork/join bookkeeping */
wf_status wf__record(wf_event *e, wf_stream *s);
/* before s waits on e: if e was recorded in a live capture, s joins it (a fork) and e's stream is
   marked as joined up to that recording */
void wf__join_capture(wf_stream *s, wf_event *e);
/* counts a queued work item on s if it is captured */
void wf__note_node(wf_stream *s);

/* ---- buffer helpers (gpu/buffer.c) ---- */
/* orders s after b's last user and makes s the last user */
wf_status wf__buffer_use(wf_buffer *b, wf_stream *s);
void wf__buffer_retain(wf_buffer *b);
void wf__buffer_release(wf_buffer *b, wf_stream *s);
wf_status wf__capture_add_buffer(wf_capture *c, wf_buffer *b);
void wf__peer_prepare(wf_device *a, wf_device *b, bool *staged);

/* ---- backends ---- */
extern const wf_backend wf__cpu_backend;
#ifdef WEFT_HAVE_CUDA
extern const wf_backend wf__cuda_backend;
/* probes CUDA; fills devices from *count on; returns the number added */
int wf__cuda_discover(wf_device *devs, int first_index, int max, wf_runtime_info *info);
#endif

/* ---- pinned host memory (gpu/pinned.c) ---- */
/* page-locked memory from the first device whose backend offers it; NULL: none does, or failed */
void *wf__pinned_alloc(size_t bytes);
/* frees a CPU-device buffer's memory: pinned memory is deferred to wf__pinned_drain, safe on a
   worker; other memory is freed at once */
void wf__host_free(void *p, bool pinned);
/* frees the deferred pinned memory; called by host threads at safe points (not while capturing) */
void wf__pinned_drain(void);

#endif
