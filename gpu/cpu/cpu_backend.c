/* The CPU backend: the reference, always built.
 *
 * Each stream is a worker thread that runs a FIFO of commands (kernels, copies, memsets, event
 * records and waits, host functions, frees, graph replays). Events are completion counters: a
 * record queues "set done = n", a wait queues "block until done >= n". So CPU streams are as
 * asynchronous as CUDA streams: a missing wait between two of them gives a wrong result here, not
 * only on a GPU.
 *
 * Capture appends commands to the capture's list instead of a queue, in the order the host issued
 * them, which respects every event dependency; replay runs that list on the launching stream's
 * worker. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_internal.h"

typedef struct cpu_event {
  _Atomic int refs;
  pthread_mutex_t m;
  pthread_cond_t cv;
  uint64_t rec, done;
  double t_done; /* seconds, CLOCK_MONOTONIC, when the last recording completed */
} cpu_event;

typedef struct cpu_graph cpu_graph;

typedef enum { C_KERNEL, C_COPY, C_MEMSET, C_RECORD, C_WAIT, C_HOST, C_FREE, C_GRAPH } cmd_kind;

typedef struct cmd {
  cmd_kind kind;
  struct cmd *next;
  union {
    struct {
      void (*fn)(const void *, size_t, size_t);
      void *args;
      size_t n, grain;
    } k;
    struct {
      void *dst;
      const void *src;
      size_t bytes;
      void *owned; /* staged source of an upload */
    } cp;
    struct {
      void *dst;
      int value;
      size_t bytes;
    } ms;
    struct {
      cpu_event *ev;
      uint64_t target;
      uint64_t capture; /* capture id if recorded/waited inside a capture */
    } ev;
    struct {
      void (*fn)(void *);
      void *user;
    } host;
    struct {
      void *ptr;
      bool pinned;
    } fr;
    struct {
      cpu_graph *g;
    } gr;
  } u;
} cmd;

struct cpu_graph {
  _Atomic int refs;
  uint64_t capture_id;
  cmd *head, *tail;
};

typedef struct cpu_queue {
  pthread_t thread;
  pthread_mutex_t m;
  pthread_cond_t work, idle;
  cmd *head, *tail;
  uint64_t enq, done;
  bool stop;
} cpu_queue;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- events ---- */

static void ev_release(cpu_event *e) {
  if (!e || atomic_fetch_sub(&e->refs, 1) != 1) return;
  pthread_mutex_destroy(&e->m);
  pthread_cond_destroy(&e->cv);
  free(e);
}

static void ev_complete(cpu_event *e, uint64_t target) {
  pthread_mutex_lock(&e->m);
  if (target > e->done) {
    e->done = target;
    e->t_done = now_s();
  }
  pthread_cond_broadcast(&e->cv);
  pthread_mutex_unlock(&e->m);
}

static void ev_wait(cpu_event *e, uint64_t target) {
  pthread_mutex_lock(&e->m);
  while (e->done < target)
    pthread_cond_wait(&e->cv, &e->m);
  pthread_mutex_unlock(&e->m);
}

/* ---- commands ---- */

static void cmd_free(cmd *c) {
  switch (c->kind) {
  case C_KERNEL: free(c->u.k.args); break;
  case C_COPY: free(c->u.cp.owned); break;
  case C_RECORD:
  case C_WAIT: ev_release(c->u.ev.ev); break;
  default: break;
  }
  free(c);
}

static void graph_release(cpu_graph *g) {
  if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
  for (cmd *c = g->head, *next; c; c = next) {
    next = c->next;
    cmd_free(c);
  }
  free(g);
}

static void exec(cmd *c, uint64_t in_graph) {
  switch (c->kind) {
  case C_KERNEL: wf__cpu_pool_run(c->u.k.fn, c->u.k.args, c->u.k.n, c->u.k.grain); break;
  case C_COPY: memmove(c->u.cp.dst, c->u.cp.src, c->u.cp.bytes); break;
  case C_MEMSET: memset(c->u.ms.dst, c->u.ms.value, c->u.ms.bytes); break;
  case C_RECORD: ev_complete(c->u.ev.ev, c->u.ev.target); break;
  case C_WAIT:
    /* inside a replay, waits on events recorded by the same capture are already satisfied by
       the list order */
    if (!(in_graph && c->u.ev.capture == in_graph)) ev_wait(c->u.ev.ev, c->u.ev.target);
    break;
  case C_HOST: c->u.host.fn(c->u.host.user); break;
  case C_FREE: wf__host_free(c->u.fr.ptr, c->u.fr.pinned); break;
  case C_GRAPH:
    for (cmd *g = c->u.gr.g->head; g; g = g->next)
      exec(g, c->u.gr.g->capture_id);
    graph_release(c->u.gr.g);
    break;
  }
}

static void *worker(void *arg) {
  cpu_queue *q = arg;
  pthread_mutex_lock(&q->m);
  for (;;) {
    while (!q->head && !q->stop)
      pthread_cond_wait(&q->work, &q->m);
    if (!q->head) break;
    cmd *c = q->head;
    q->head = c->next;
    if (!q->head) q->tail = NULL;
    if (c->kind == C_RECORD) {
      /* complete the event and the stream together, so a stream whose last event is done never
         reads as busy */
      ev_complete(c->u.ev.ev, c->u.ev.target);
      q->done++;
      pthread_mutex_unlock(&q->m);
      cmd_free(c);
      pthread_mutex_lock(&q->m);
      if (q->done == q->enq) pthread_cond_broadcast(&q->idle);
      continue;
    }
    pthread_mutex_unlock(&q->m);
    exec(c, 0);
    cmd_free(c);
    pthread_mutex_lock(&q->m);
    q->done++;
    if (q->done == q->enq) pthread_cond_broadcast(&q->idle);
  }
  pthread_mutex_unlock(&q->m);
  return NULL;
}

/* Queues c on s, or appends it to the capture s belongs to. */
static wf_status submit(wf_stream *s, cmd *c) {
  c->next = NULL;
  if (s->capture) {
    cpu_graph *g = s->capture->be_data;
    if (g->tail)
      g->tail->next = c;
    else
      g->head = c;
    g->tail = c;
    return WF_OK;
  }
  cpu_queue *q = s->native;
  pthread_mutex_lock(&q->m);
  if (q->tail)
    q->tail->next = c;
  else
    q->head = c;
  q->tail = c;
  q->enq++;
  pthread_cond_signal(&q->work);
  pthread_mutex_unlock(&q->m);
  return WF_OK;
}

static cmd *cmd_new(cmd_kind kind) {
  cmd *c = calloc(1, sizeof *c);
  if (c)
    c->kind = kind;
  else
    wf__error(WF_ERR_OUT_OF_MEMORY, "cpu backend", "out of host memory");
  return c;
}

/* ---- streams ---- */

static wf_status cpu_stream_create(wf_stream *s, int priority) {
  cpu_queue *q = calloc(1, sizeof *q);
  if (!q) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_stream_create", "out of host memory");
  pthread_mutex_init(&q->m, NULL);
  pthread_cond_init(&q->work, NULL);
  pthread_cond_init(&q->idle, NULL);
  int rc = pthread_create(&q->thread, NULL, worker, q);
  if (rc) {
    free(q);
    return wf__error(WF_ERR_DEVICE, "wf_stream_create", "%s: cannot start a worker thread: %s",
                     s->dev->name, strerror(rc));
  }
  s->native = q;
  return WF_OK;
}

static wf_status cpu_stream_wrap(wf_stream *s, void *native) {
  return wf__error(WF_ERR_UNSUPPORTED, "wf_stream_wrap", "CPU streams cannot wrap native streams");
}

static wf_status cpu_stream_synchronize(wf_stream *s) {
  cpu_queue *q = s->native;
  pthread_mutex_lock(&q->m);
  while (q->done != q->enq)
    pthread_cond_wait(&q->idle, &q->m);
  pthread_mutex_unlock(&q->m);
  return WF_OK;
}

static void cpu_stream_release(wf_stream *s) {
  cpu_queue *q = s->native;
  if (!q) return;
  pthread_mutex_lock(&q->m);
  q->stop = true;
  pthread_cond_signal(&q->work);
  pthread_mutex_unlock(&q->m);
  pthread_join(q->thread, NULL);
  pthread_mutex_destroy(&q->m);
  pthread_cond_destroy(&q->work);
  pthread_cond_destroy(&q->idle);
  free(q);
  s->native = NULL;
}

static wf_status cpu_stream_query(wf_stream *s) {
  cpu_queue *q = s->native;
  pthread_mutex_lock(&q->m);
  bool idle = q->done == q->enq;
  pthread_mutex_unlock(&q->m);
  return idle ? WF_OK : WF_NOT_READY;
}

static bool cpu_stream_is_capturing(const wf_stream *s) { return false; }

/* ---- events ---- */

static wf_status cpu_event_create(wf_event *e) {
  cpu_event *ce = calloc(1, sizeof *ce);
  if (!ce) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_event_create", "out of host memory");
  atomic_init(&ce->refs, 1);
  pthread_mutex_init(&ce->m, NULL);
  pthread_cond_init(&ce->cv, NULL);
  e->native = ce;
  return WF_OK;
}

static void cpu_event_destroy(wf_event *e) { ev_release(e->native); }

static wf_status cpu_event_record(wf_event *e, wf_stream *s) {
  cpu_event *ce = e->native;
  cmd *c = cmd_new(C_RECORD);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  pthread_mutex_lock(&ce->m);
  c->u.ev.target = ++ce->rec;
  pthread_mutex_unlock(&ce->m);
  atomic_fetch_add(&ce->refs, 1);
  c->u.ev.ev = ce;
  c->u.ev.capture = s->capture ? s->capture->id : 0;
  return submit(s, c);
}

static wf_status cpu_event_query(wf_event *e) {
  cpu_event *ce = e->native;
  pthread_mutex_lock(&ce->m);
  bool done = ce->done >= ce->rec;
  pthread_mutex_unlock(&ce->m);
  return done ? WF_OK : WF_NOT_READY;
}

static wf_status cpu_event_synchronize(wf_event *e) {
  cpu_event *ce = e->native;
  pthread_mutex_lock(&ce->m);
  uint64_t target = ce->rec;
  pthread_mutex_unlock(&ce->m);
  ev_wait(ce, target);
  return WF_OK;
}

static wf_status cpu_event_elapsed(wf_event *a, wf_event *b, float *ms) {
  cpu_event *ea = a->native, *eb = b->native;
  if (cpu_event_query(a) != WF_OK || cpu_event_query(b) != WF_OK)
    return wf__error(WF_NOT_READY, "wf_event_elapsed_ms", "an event has not completed yet");
  if (ea->rec == 0 || eb->rec == 0)
    return wf__error(WF_ERR_INVALID, "wf_event_elapsed_ms", "an event was never recorded");
  pthread_mutex_lock(&ea->m);
  double ta = ea->t_done;
  pthread_mutex_unlock(&ea->m);
  pthread_mutex_lock(&eb->m);
  double tb = eb->t_done;
  pthread_mutex_unlock(&eb->m);
  *ms = (float)((tb - ta) * 1e3);
  return WF_OK;
}

static wf_status cpu_stream_wait_event(wf_stream *s, wf_event *e) {
  cpu_event *ce = e->native;
  cmd *c = cmd_new(C_WAIT);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  pthread_mutex_lock(&ce->m);
  c->u.ev.target = ce->rec;
  pthread_mutex_unlock(&ce->m);
  atomic_fetch_add(&ce->refs, 1);
  c->u.ev.ev = ce;
  c->u.ev.capture = e->cap_id;
  return submit(s, c);
}

static wf_status cpu_host_func(wf_stream *s, void (*fn)(void *), void *user) {
  cmd *c = cmd_new(C_HOST);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  c->u.host.fn = fn;
  c->u.host.user = user;
  return submit(s, c);
}

/* ---- memory ---- */

/* wf_init_desc.cpu_memory_limit: a cap on the bytes weft holds on each CPU device (0: none). */
static size_t cpu_memory_limit(void) {
  const wf_init_desc *d = wf__init_desc();
  return d ? d->cpu_memory_limit : 0;
}

static wf_status cpu_alloc(wf_device *d, size_t bytes, unsigned flags, wf_stream *s, void **out,
                           bool *pinned) {
  *pinned = false;
  void *p = NULL;
  size_t limit = cpu_memory_limit(), held = atomic_load(&d->allocated);
  if (limit && (held > limit || bytes > limit - held))
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_buffer_create",
                     "%s: cannot allocate %zu bytes (%.2f GiB): the CPU memory limit "
                     "(wf_init_desc.cpu_memory_limit; WEFT_CPU_MEMORY_LIMIT for the weft command) "
                     "is %zu bytes (%.2f GiB), weft holds %zu, so %zu bytes (%.2f GiB) are free",
                     d->name, bytes, (double)bytes / (1 << 30), limit, (double)limit / (1 << 30),
                     held, held < limit ? limit - held : 0,
                     (double)(held < limit ? limit - held : 0) / (1 << 30));
  if (flags & WF_BUFFER_PINNED) { /* page-locked where a backend offers it (gpu/pinned.c) */
    p = wf__pinned_alloc(bytes);
    *pinned = p != NULL;
  }
  size_t rounded = (bytes + 63) & ~(size_t)63;
  if (!p && rounded >= bytes && posix_memalign(&p, 64, rounded) != 0) p = NULL;
  if (!p) {
    long avail = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_buffer_create",
                     "%s: cannot allocate %zu bytes (%.2f GiB) of host memory; about %.2f GiB is "
                     "free. Lower the problem size",
                     d->name, bytes, (double)bytes / (1 << 30),
                     avail > 0 ? (double)avail * (double)psize / (1 << 30) : 0.0);
  }
  *out = p;
  return WF_OK;
}

static void cpu_free(wf_buffer *b, wf_stream *s) {
  cmd *c = cmd_new(C_FREE);
  if (!c) { /* cannot queue: wait, then free now */
    s->dev->be->stream_synchronize(s);
    wf__host_free(b->ptr, b->pinned);
    return;
  }
  c->u.fr.ptr = b->ptr;
  c->u.fr.pinned = b->pinned;
  submit(s, c); /* the core never frees on a captured stream */
}

static wf_status cpu_copy(const wf_copy_desc *d, wf_stream *s) {
  cmd *c = cmd_new(C_COPY);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  c->u.cp.dst = d->dst;
  c->u.cp.src = d->src;
  c->u.cp.bytes = d->bytes;
  return submit(s, c);
}

static wf_status cpu_memset(void *dst, int value, size_t bytes, wf_stream *s) {
  cmd *c = cmd_new(C_MEMSET);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  c->u.ms.dst = dst;
  c->u.ms.value = value;
  c->u.ms.bytes = bytes;
  return submit(s, c);
}

/* The caller may reuse its memory at once, so the data is staged and the copy stays queued. */
static wf_status cpu_upload(void *dst, const void *host, size_t bytes, wf_stream *s) {
  void *stage = malloc(bytes);
  cmd *c = stage ? cmd_new(C_COPY) : NULL;
  if (!c) {
    free(stage);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_upload", "cannot stage %zu bytes", bytes);
  }
  memcpy(stage, host, bytes);
  c->u.cp.dst = dst;
  c->u.cp.src = stage;
  c->u.cp.bytes = bytes;
  c->u.cp.owned = stage;
  return submit(s, c);
}

static wf_status cpu_launch(const wf_kernel *k, size_t n, const void *args, size_t size,
                            wf_stream *s) {
  cmd *c = cmd_new(C_KERNEL);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  if (size) {
    c->u.k.args = malloc(size);
    if (!c->u.k.args) {
      free(c);
      return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_launch", "out of host memory");
    }
    memcpy(c->u.k.args, args, size);
  }
  c->u.k.fn = k->cpu;
  c->u.k.n = n;
  c->u.k.grain = k->cpu_grain;
  return submit(s, c);
}

/* ---- capture ---- */

static wf_status cpu_capture_begin(wf_stream *s, wf_capture *c) {
  cpu_graph *g = calloc(1, sizeof *g);
  if (!g) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_capture_begin", "out of host memory");
  atomic_init(&g->refs, 1);
  g->capture_id = c->id;
  c->be_data = g;
  return WF_OK;
}

static wf_status cpu_capture_end(wf_stream *s, wf_capture *c, wf_graph *g, wf_graph *prev) {
  g->native = c->be_data;
  c->be_data = NULL;
  return WF_OK;
}

static void cpu_capture_abort(wf_stream *s, wf_capture *c) {
  graph_release(c->be_data);
  c->be_data = NULL;
}

static wf_status cpu_graph_launch(wf_graph *g, wf_stream *s) {
  cmd *c = cmd_new(C_GRAPH);
  if (!c) return WF_ERR_OUT_OF_MEMORY;
  cpu_graph *cg = g->native;
  atomic_fetch_add(&cg->refs, 1);
  c->u.gr.g = cg;
  return submit(s, c);
}

static void cpu_graph_destroy(wf_graph *g) { graph_release(g->native); }

static wf_status cpu_device_info(wf_device *d, wf_device_info *out) {
  long avail = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  out->free_memory = (avail > 0 && psize > 0) ? (size_t)avail * (size_t)psize : 0;
  size_t limit = cpu_memory_limit();
  if (limit) { /* the cap: what weft may still take */
    out->total_memory = limit;
    out->free_memory = out->allocated < limit ? limit - out->allocated : 0;
  }
  return WF_OK;
}

const wf_backend wf__cpu_backend = {
    .name = "cpu",
    .stream_create = cpu_stream_create,
    .stream_wrap = cpu_stream_wrap,
    .stream_release = cpu_stream_release,
    .stream_synchronize = cpu_stream_synchronize,
    .stream_query = cpu_stream_query,
    .stream_is_capturing = cpu_stream_is_capturing,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_query = cpu_event_query,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed = cpu_event_elapsed,
    .stream_wait_event = cpu_stream_wait_event,
    .host_func = cpu_host_func,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .memset = cpu_memset,
    .upload = cpu_upload,
    .launch = cpu_launch,
    .capture_begin = cpu_capture_begin,
    .capture_end = cpu_capture_end,
    .capture_abort = cpu_capture_abort,
    .graph_launch = cpu_graph_launch,
    .graph_destroy = cpu_graph_destroy,
    .device_info = cpu_device_info,
};
