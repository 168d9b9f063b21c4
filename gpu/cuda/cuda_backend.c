/* The CUDA backend: non-blocking streams only (never the legacy default stream), stream-ordered
 * allocation from each device's memory pool, cudaMemcpyPeerAsync between devices, graphs from
 * stream capture in thread-local mode.
 *
 * Every entry point selects the device first (cudaSetDevice is per host thread). CUDA errors are
 * turned into a wf_status and a last-error text with the device, the CUDA error name and a hint. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"

int wf__cuda_probe(int device);

typedef struct cuda_dev {
  cudaMemPool_t pool;
  int prio_least, prio_greatest;
} cuda_dev;

static cuda_dev cdev[WF_GPU_MAX_DEVICES];

static const char *hint(cudaError_t e) {
  switch (e) {
  case cudaErrorMemoryAllocation: return "; free buffers or lower the problem size";
  case cudaErrorNoKernelImageForDevice:
  case cudaErrorInvalidDeviceFunction:
    return "; this binary has no code for the GPU: reconfigure with "
           "-DCMAKE_CUDA_ARCHITECTURES=<the GPU's compute capability, e.g. 90>";
  case cudaErrorStreamCaptureUnsupported:
  case cudaErrorStreamCaptureInvalidated:
  case cudaErrorStreamCaptureImplicit:
    return "; something in the capture cannot be captured (synchronization, pageable copies)";
  case cudaErrorStreamCaptureUnjoined:
    return "; a stream forked into the capture was not joined back: call "
           "wf_stream_wait_stream(origin, forked) before wf_capture_end";
  default: return "";
  }
}

static wf_status fail(cudaError_t e, const char *func, const wf_device *d, const char *what) {
  wf_status st = WF_ERR_BACKEND;
  if (e == cudaErrorMemoryAllocation) st = WF_ERR_OUT_OF_MEMORY;
  if (e == cudaErrorStreamCaptureUnsupported || e == cudaErrorStreamCaptureInvalidated ||
      e == cudaErrorStreamCaptureUnjoined || e == cudaErrorStreamCaptureImplicit ||
      e == cudaErrorStreamCaptureUnmatched || e == cudaErrorStreamCaptureIsolation)
    st = WF_ERR_CAPTURE;
  if (e != cudaErrorNotReady) cudaGetLastError(); /* clear a non-sticky error */
  return wf__error(st, func, "%s on %s failed: %s (%s)%s", what, d ? d->name : "?",
                   cudaGetErrorName(e), cudaGetErrorString(e), hint(e));
}

#define CK(call, func, dev, what)                                                                  \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) return fail(e_, func, dev, what);                                       \
  } while (0)

static inline cudaStream_t CS(const wf_stream *s) { return (cudaStream_t)s->native; }
static inline cudaEvent_t CE(const wf_event *e) { return (cudaEvent_t)e->native; }
static inline void use(const wf_device *d) { cudaSetDevice(d->ordinal); }

/* ---- discovery ---- */

int wf__cuda_discover(wf_device *devs, int first, int max, wf_runtime_info *info) {
  cudaDriverGetVersion(&info->cuda_driver_version);
  cudaRuntimeGetVersion(&info->cuda_runtime_version);
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    snprintf(info->cuda_status, sizeof info->cuda_status, "no CUDA device (%s: %s)",
             cudaGetErrorName(e), cudaGetErrorString(e));
    return 0;
  }
  info->cuda_devices_found = n;
  if (n == 0) snprintf(info->cuda_status, sizeof info->cuda_status, "no CUDA device found");
  int added = 0;
  size_t used = 0;
  for (int i = 0; i < n && added < max; i++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    int pe = wf__cuda_probe(i);
    if (pe != cudaSuccess) {
      cudaGetLastError();
      int w = snprintf(info->cuda_status + used, sizeof info->cuda_status - used,
                       "%scuda:%d (%s, compute capability %d.%d) cannot run this build, compiled "
                       "for CUDA architectures %s (%s): reconfigure with "
                       "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                       used ? "; " : "", i, p.name, p.major, p.minor, WEFT_CUDA_ARCHS,
                       cudaGetErrorName((cudaError_t)pe), p.major, p.minor);
      if (w > 0 && used + (size_t)w < sizeof info->cuda_status) used += (size_t)w;
      continue;
    }
    wf_device *d = &devs[first + added];
    memset(d, 0, sizeof *d);
    d->index = first + added;
    d->ordinal = i;
    d->is_cuda = true;
    snprintf(d->name, sizeof d->name, "cuda:%d", i);
    snprintf(d->product, sizeof d->product, "%s", p.name);
    d->be = &wf__cuda_backend;
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->multiprocessors = p.multiProcessorCount;
    d->total_memory = p.totalGlobalMem;
    d->pci_bus = p.pciBusID;
    cuda_dev *cd = &cdev[d->index];
    cudaSetDevice(i);
    cudaDeviceGetDefaultMemPool(&cd->pool, i);
    /* keep freed memory in the pool: stream-ordered reuse without returning to the driver */
    uint64_t threshold = UINT64_MAX;
    cudaMemPoolSetAttribute(cd->pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    cudaDeviceGetStreamPriorityRange(&cd->prio_least, &cd->prio_greatest);
    d->be_data = cd;
    added++;
  }
  return added;
}

static bool can_access_peer(const wf_device *a, const wf_device *b) {
  int can = 0;
  return cudaDeviceCanAccessPeer(&can, a->ordinal, b->ordinal) == cudaSuccess && can;
}

/* Peer access lives as long as the CUDA context, across wf_shutdown/wf_init: remember it rather
   than provoke cudaErrorPeerAccessAlreadyEnabled. */
static bool peer_on[WF_GPU_MAX_DEVICES][WF_GPU_MAX_DEVICES];

static wf_status enable_one(wf_device *a, wf_device *b) {
  use(a);
  if (!peer_on[a->ordinal][b->ordinal]) {
    cudaError_t e = cudaDeviceEnablePeerAccess(b->ordinal, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled)
      cudaGetLastError();
    else if (e != cudaSuccess)
      return fail(e, "wf_peer_access_enable", a, "cudaDeviceEnablePeerAccess");
    peer_on[a->ordinal][b->ordinal] = true;
  }
  /* let b read and write memory from a's pool (stream-ordered allocations) */
  struct cudaMemAccessDesc acc = {.location = {.type = cudaMemLocationTypeDevice, .id = b->ordinal},
                                  .flags = cudaMemAccessFlagsProtReadWrite};
  CK(cudaMemPoolSetAccess(((cuda_dev *)a->be_data)->pool, &acc, 1), "wf_peer_access_enable", a,
     "cudaMemPoolSetAccess");
  return WF_OK;
}

static wf_status cu_peer_enable(wf_device *a, wf_device *b) {
  if (!can_access_peer(a, b) || !can_access_peer(b, a))
    return wf__error(WF_ERR_UNSUPPORTED, "wf_peer_access_enable",
                     "%s and %s cannot access each other's memory", a->name, b->name);
  wf_status st = enable_one(a, b);
  return st != WF_OK ? st : enable_one(b, a);
}

/* portable: page-locked for every CUDA device, whichever is current */
static void *cu_host_alloc(size_t bytes) {
  void *p = NULL;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return p;
}

static void cu_host_free(void *p) { cudaFreeHost(p); }

/* ---- streams ---- */

static wf_status cu_stream_create(wf_stream *s, int priority) {
  cuda_dev *cd = s->dev->be_data;
  if (priority < cd->prio_greatest) priority = cd->prio_greatest;
  if (priority > cd->prio_least) priority = cd->prio_least;
  use(s->dev);
  cudaStream_t cs;
  CK(cudaStreamCreateWithPriority(&cs, cudaStreamNonBlocking, priority), "wf_stream_create", s->dev,
     "cudaStreamCreateWithPriority");
  s->native = cs;
  return WF_OK;
}

static wf_status cu_stream_wrap(wf_stream *s, void *native) {
  if (native == (void *)cudaStreamLegacy || native == (void *)cudaStreamPerThread)
    return wf__error(WF_ERR_INVALID, "wf_stream_wrap",
                     "the legacy and per-thread default streams cannot be wrapped; create a stream "
                     "with cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)");
  int dev = -1;
  cudaError_t e = cudaStreamGetDevice((cudaStream_t)native, &dev);
  if (e == cudaSuccess && dev != s->dev->ordinal)
    return wf__error(WF_ERR_INVALID, "wf_stream_wrap", "the stream belongs to cuda:%d, not %s", dev,
                     s->dev->name);
  if (e != cudaSuccess) cudaGetLastError();
  s->native = native;
  return WF_OK;
}

static void cu_stream_release(wf_stream *s) {
  if (!s->native || s->wrapped) return;
  use(s->dev);
  cudaStreamDestroy(CS(s)); /* returns at once; CUDA frees it when its work is done */
  s->native = NULL;
}

static wf_status cu_stream_synchronize(wf_stream *s) {
  use(s->dev);
  CK(cudaStreamSynchronize(CS(s)), "wf_stream_synchronize", s->dev, "cudaStreamSynchronize");
  return WF_OK;
}

static wf_status cu_stream_query(wf_stream *s) {
  use(s->dev);
  cudaError_t e = cudaStreamQuery(CS(s));
  if (e == cudaErrorNotReady) return WF_NOT_READY;
  if (e != cudaSuccess) return fail(e, "wf_stream_query", s->dev, "cudaStreamQuery");
  return WF_OK;
}

static bool cu_stream_is_capturing(const wf_stream *s) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(CS(s), &st) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return st == cudaStreamCaptureStatusActive;
}

/* ---- events ---- */

static wf_status cu_event_create(wf_event *e) {
  use(e->dev);
  cudaEvent_t ce;
  unsigned flags = (e->flags & WF_EVENT_TIMING) ? cudaEventDefault : cudaEventDisableTiming;
  CK(cudaEventCreateWithFlags(&ce, flags), "wf_event_create", e->dev, "cudaEventCreateWithFlags");
  e->native = ce;
  return WF_OK;
}

static void cu_event_destroy(wf_event *e) {
  use(e->dev);
  cudaEventDestroy(CE(e));
}

static wf_status cu_event_record(wf_event *e, wf_stream *s) {
  use(s->dev);
  CK(cudaEventRecord(CE(e), CS(s)), "wf_event_record", s->dev, "cudaEventRecord");
  return WF_OK;
}

static wf_status cu_event_query(wf_event *e) {
  use(e->dev);
  cudaError_t r = cudaEventQuery(CE(e));
  if (r == cudaErrorNotReady) return WF_NOT_READY;
  if (r != cudaSuccess) return fail(r, "wf_event_query", e->dev, "cudaEventQuery");
  return WF_OK;
}

static wf_status cu_event_synchronize(wf_event *e) {
  use(e->dev);
  CK(cudaEventSynchronize(CE(e)), "wf_event_synchronize", e->dev, "cudaEventSynchronize");
  return WF_OK;
}

static wf_status cu_event_elapsed(wf_event *a, wf_event *b, float *ms) {
  use(a->dev);
  cudaError_t r = cudaEventElapsedTime(ms, CE(a), CE(b));
  if (r == cudaErrorNotReady) {
    cudaGetLastError();
    return wf__error(WF_NOT_READY, "wf_event_elapsed_ms", "an event has not completed yet");
  }
  if (r != cudaSuccess) return fail(r, "wf_event_elapsed_ms", a->dev, "cudaEventElapsedTime");
  return WF_OK;
}

static wf_status cu_stream_wait_event(wf_stream *s, wf_event *e) {
  use(s->dev);
  CK(cudaStreamWaitEvent(CS(s), CE(e), 0), "wf_stream_wait_event", s->dev, "cudaStreamWaitEvent");
  return WF_OK;
}

static wf_status cu_host_func(wf_stream *s, void (*fn)(void *), void *user) {
  use(s->dev);
  CK(cudaLaunchHostFunc(CS(s), fn, user), "wf_stream_host_func", s->dev, "cudaLaunchHostFunc");
  return WF_OK;
}

/* ---- memory ---- */

static wf_status cu_alloc(wf_device *d, size_t bytes, unsigned flags, wf_stream *s, void **out,
                          bool *pinned) {
  *pinned = false;
  use(d);
  cudaError_t e = cudaMallocAsync(out, bytes, CS(s));
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_b = 0, total = 0;
    cudaMemGetInfo(&free_b, &total);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_buffer_create",
                     "%s (%s): cannot allocate %zu bytes (%.2f GiB); %.2f GiB of %.2f GiB are free "
                     "and weft holds %.2f GiB. Lower the problem size (particle count, cloth "
                     "resolution) or use more devices",
                     d->name, d->product, bytes, (double)bytes / (1 << 30),
                     (double)free_b / (1 << 30), (double)total / (1 << 30),
                     (double)atomic_load(&d->allocated) / (1 << 30));
  }
  if (e != cudaSuccess) return fail(e, "wf_buffer_create", d, "cudaMallocAsync");
  return WF_OK;
}

static void cu_free(wf_buffer *b, wf_stream *s) {
  use(s->dev);
  if (cudaFreeAsync(b->ptr, CS(s)) != cudaSuccess) {
    cudaGetLastError();
    cudaStreamSynchronize(CS(s));
    cudaFree(b->ptr);
  }
}

static wf_status cu_copy(const wf_copy_desc *c, wf_stream *s) {
  use(s->dev);
  if (c->kind == WF_COPY_PEER && c->staged) {
    /* no peer access: the driver stages the copy through pinned host memory */
    CK(cudaMemcpyPeerAsync(c->dst, c->dst_dev->ordinal, c->src, c->src_dev->ordinal, c->bytes,
                           CS(s)),
       "wf_copy", s->dev, "cudaMemcpyPeerAsync");
    return WF_OK;
  }
  /* peers with access enabled: a direct copy over the interconnect (and capturable).
     Pageable host memory: CUDA stages H2D before returning and completes D2H before returning. */
  CK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDefault, CS(s)), "wf_copy", s->dev,
     "cudaMemcpyAsync");
  return WF_OK;
}

static wf_status cu_memset(void *dst, int value, size_t bytes, wf_stream *s) {
  use(s->dev);
  CK(cudaMemsetAsync(dst, value, bytes, CS(s)), "wf_memset", s->dev, "cudaMemsetAsync");
  return WF_OK;
}

static wf_status cu_upload(void *dst, const void *host, size_t bytes, wf_stream *s) {
  use(s->dev);
  CK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, CS(s)), "wf_upload", s->dev,
     "cudaMemcpyAsync");
  return WF_OK;
}

static wf_status cu_launch(const wf_kernel *k, size_t n, const void *args, size_t size,
                           wf_stream *s) {
  use(s->dev);
  k->cuda(args, n, s->native);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    char what[160];
    snprintf(what, sizeof what, "launching kernel %s over %zu elements", k->name ? k->name : "?",
             n);
    return fail(e, "wf_launch", s->dev, what);
  }
  return WF_OK;
}

/* ---- capture ---- */

static wf_status cu_capture_begin(wf_stream *s, wf_capture *c) {
  use(s->dev);
  CK(cudaStreamBeginCapture(CS(s), cudaStreamCaptureModeThreadLocal), "wf_capture_begin", s->dev,
     "cudaStreamBeginCapture");
  return WF_OK;
}

/* With prev, the new graph first tries to take over prev's executable graph, updated in place
 * (cudaGraphExecUpdate: same nodes and edges, other parameters, sizes or addresses); a new
 * instantiation is the fallback. */
static wf_status cu_capture_end(wf_stream *s, wf_capture *c, wf_graph *g, wf_graph *prev) {
  use(s->dev);
  cudaGraph_t graph = NULL;
  CK(cudaStreamEndCapture(CS(s), &graph), "wf_capture_end", s->dev, "cudaStreamEndCapture");
  if (prev && prev->native) {
    cudaGraphExecUpdateResultInfo info;
    if (cudaGraphExecUpdate((cudaGraphExec_t)prev->native, graph, &info) == cudaSuccess) {
      g->native = prev->native;
      g->native_graph = graph;
      prev->native = NULL;
      return WF_OK;
    }
    cudaGetLastError(); /* not updatable: instantiate anew */
  }
  cudaGraphExec_t exec = NULL;
  cudaError_t e =
      cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  if (e != cudaSuccess) {
    cudaGraphDestroy(graph);
    return fail(e, "wf_capture_end", s->dev, "cudaGraphInstantiateWithFlags");
  }
  g->native = exec;
  g->native_graph = graph;
  return WF_OK;
}

static void cu_capture_abort(wf_stream *s, wf_capture *c) {
  use(s->dev);
  if (!cu_stream_is_capturing(s)) return;
  cudaGraph_t graph = NULL;
  cudaStreamEndCapture(CS(s), &graph);
  cudaGetLastError();
  if (graph) cudaGraphDestroy(graph);
}

static wf_status cu_graph_launch(wf_graph *g, wf_stream *s) {
  use(s->dev);
  CK(cudaGraphLaunch((cudaGraphExec_t)g->native, CS(s)), "wf_graph_launch", s->dev,
     "cudaGraphLaunch");
  return WF_OK;
}

static void cu_graph_destroy(wf_graph *g) {
  if (g->native) cudaGraphExecDestroy((cudaGraphExec_t)g->native);
  if (g->native_graph) cudaGraphDestroy((cudaGraph_t)g->native_graph);
}

static wf_status cu_device_info(wf_device *d, wf_device_info *out) {
  use(d);
  size_t free_b = 0, total = 0;
  CK(cudaMemGetInfo(&free_b, &total), "wf_device_info_get", d, "cudaMemGetInfo");
  out->free_memory = free_b;
  out->total_memory = total;
  return WF_OK;
}

/* The pool keeps freed memory (release threshold UINT64_MAX); trimming returns what no allocation
 * uses to the driver. The device was synchronized by the caller, so every free has completed. */
static wf_status cu_trim(wf_device *d) {
  use(d);
  CK(cudaMemPoolTrimTo(((cuda_dev *)d->be_data)->pool, 0), "wf_device_trim", d,
     "cudaMemPoolTrimTo");
  return WF_OK;
}

const wf_backend wf__cuda_backend = {
    .name = "cuda",
    .stream_create = cu_stream_create,
    .stream_wrap = cu_stream_wrap,
    .stream_release = cu_stream_release,
    .stream_synchronize = cu_stream_synchronize,
    .stream_query = cu_stream_query,
    .stream_is_capturing = cu_stream_is_capturing,
    .event_create = cu_event_create,
    .event_destroy = cu_event_destroy,
    .event_record = cu_event_record,
    .event_query = cu_event_query,
    .event_synchronize = cu_event_synchronize,
    .event_elapsed = cu_event_elapsed,
    .stream_wait_event = cu_stream_wait_event,
    .host_func = cu_host_func,
    .alloc = cu_alloc,
    .free = cu_free,
    .copy = cu_copy,
    .memset = cu_memset,
    .upload = cu_upload,
    .launch = cu_launch,
    .capture_begin = cu_capture_begin,
    .capture_end = cu_capture_end,
    .capture_abort = cu_capture_abort,
    .graph_launch = cu_graph_launch,
    .graph_destroy = cu_graph_destroy,
    .device_info = cu_device_info,
    .trim = cu_trim,
    .peer_enable = cu_peer_enable,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
};
