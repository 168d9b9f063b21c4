/* Runtime start-up, the device table and whole-runtime synchronization.
 *
 * Devices are discovered at start-up: CPU devices cpu:0..N-1 first, then the CUDA devices this
 * build can run on. A CUDA device the binary was not compiled for is left out of the table and the
 * reason (with the CMake option to change) is kept for wf_device_get and `weft info`.
 * wf_cpu_devices_ensure adds CPU devices to a running runtime; they go after the CUDA devices.
 *
 * The table only grows while the runtime is up: a device is filled in completely, then published
 * by raising R.count (an atomic store under R.lock; readers load it without the lock). So the index
 * and the pointer of every device handed out stay valid until wf_shutdown, whatever is added. The
 * CUDA devices take at most WF_GPU_MAX_DEVICES - WF_MAX_CPU_DEVICES slots, which leaves a slot for
 * every CPU device the limit allows. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_internal.h"

static struct {
  pthread_mutex_t lock;
  _Atomic bool up;
  wf_init_desc desc;
  bool have_desc;
  wf_device devices[WF_GPU_MAX_DEVICES];
  _Atomic int count; /* published devices: written under lock, after the device is filled */
  int cpu_count;     /* CPU devices among them (cpu:0..cpu_count-1); under lock */
  char cpu_product[256];
  wf_runtime_info info;
  pthread_mutex_t reg_lock;
  wf_stream *streams;
} R = {.lock = PTHREAD_MUTEX_INITIALIZER, .reg_lock = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int tls_captures;

int wf__thread_captures(void) { return tls_captures; }
void wf__thread_captures_add(int delta) { tls_captures += delta; }
const wf_init_desc *wf__init_desc(void) { return R.have_desc ? &R.desc : NULL; }
wf_device *wf__device_at(int i) { return (i >= 0 && i < R.count) ? &R.devices[i] : NULL; }
int wf__device_count(void) { return R.count; }

static void cpu_product(char *out, size_t n) {
  snprintf(out, n, "CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *p = strchr(line, ':');
      if (p) {
        p++;
        while (*p == ' ')
          p++;
        p[strcspn(p, "\n")] = '\0';
        snprintf(out, n, "%s", p);
      }
      break;
    }
  }
  fclose(f);
}

/* Fills the table's next slot as CPU device cpu:ordinal and publishes it. Under R.lock. */
static void cpu_device_add(int ordinal) {
  int index = atomic_load(&R.count);
  wf_device *d = &R.devices[index];
  memset(d, 0, sizeof *d);
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  d->index = index;
  d->ordinal = ordinal;
  d->is_cuda = false;
  snprintf(d->name, sizeof d->name, "cpu:%d", ordinal);
  snprintf(d->product, sizeof d->product, "%s", R.cpu_product);
  d->be = &wf__cpu_backend;
  d->multiprocessors = (int)sysconf(_SC_NPROCESSORS_ONLN);
  d->pci_bus = -1;
  d->total_memory = (pages > 0 && psize > 0) ? (size_t)pages * (size_t)psize : 0;
  pthread_mutex_init(&d->lock, NULL);
  R.cpu_count = ordinal + 1;
  atomic_store_explicit(&R.count, index + 1, memory_order_release);
}

static wf_status init_locked(const wf_init_desc *desc) {
  memset(&R.desc, 0, sizeof R.desc);
  if (desc) R.desc = *desc;
  R.have_desc = true;
  int ncpu = R.desc.cpu_devices <= 0 ? 1 : R.desc.cpu_devices;
  if (ncpu > WF_MAX_CPU_DEVICES) {
    R.have_desc = false;
    return wf__error(WF_ERR_INVALID, "wf_init", "cpu_devices = %d, at most %d are supported",
                     R.desc.cpu_devices, WF_MAX_CPU_DEVICES);
  }
  if (R.desc.cpu_threads < 0 || R.desc.cpu_threads > WF_MAX_CPU_THREADS) {
    R.have_desc = false;
    return wf__error(WF_ERR_INVALID, "wf_init",
                     "cpu_threads = %d: expected 0 (the usable cores) "
                     "to %d",
                     R.desc.cpu_threads, WF_MAX_CPU_THREADS);
  }
  memset(R.devices, 0, sizeof R.devices);
  memset(&R.info, 0, sizeof R.info);
  cpu_product(R.cpu_product, sizeof R.cpu_product);
  atomic_store(&R.count, 0);
  for (int i = 0; i < ncpu; i++)
    cpu_device_add(i);
#ifdef WEFT_HAVE_CUDA
  R.info.cuda_compiled = true;
  snprintf(R.info.cuda_architectures, sizeof R.info.cuda_architectures, "%s", WEFT_CUDA_ARCHS);
  if (!R.desc.no_cuda) {
    /* the CUDA devices leave room for every CPU device wf_cpu_devices_ensure may add */
    int first = atomic_load(&R.count);
    int added =
        wf__cuda_discover(R.devices, first, WF_GPU_MAX_DEVICES - WF_MAX_CPU_DEVICES, &R.info);
    for (int i = first; i < first + added; i++)
      pthread_mutex_init(&R.devices[i].lock, NULL);
    atomic_store_explicit(&R.count, first + added, memory_order_release);
    /* peer and memory-pool access between every pair of GPUs, at start-up: enabling it later,
       inside a capture, would invalidate the capture */
    for (int a = 0; a < R.count; a++)
      for (int b = a + 1; b < R.count; b++)
        if (R.devices[a].is_cuda && R.devices[b].is_cuda) {
          bool staged;
          wf__peer_prepare(&R.devices[a], &R.devices[b], &staged);
        }
  } else {
    snprintf(R.info.cuda_status, sizeof R.info.cuda_status, "CUDA disabled by wf_init (no_cuda)");
  }
#else
  snprintf(R.info.cuda_status, sizeof R.info.cuda_status,
           "this build has no CUDA backend (configure with -DWEFT_CUDA=ON and nvcc on PATH)");
#endif
  atomic_store(&R.up, true);
  wf__log(WF_LOG_INFO, "weft runtime up: %d device(s)", atomic_load(&R.count));
  return WF_OK;
}

wf_status wf_cpu_devices_ensure(int count) {
  static const char *fn = "wf_cpu_devices_ensure";
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (count < 1 || count > WF_MAX_CPU_DEVICES)
    return wf__error(WF_ERR_INVALID, fn, "count = %d; a runtime has 1 to %d CPU devices", count,
                     WF_MAX_CPU_DEVICES);
  pthread_mutex_lock(&R.lock);
  if (!atomic_load(&R.up)) {
    pthread_mutex_unlock(&R.lock);
    return wf__error(WF_ERR_INVALID, fn, "the runtime was shut down while devices were added");
  }
  int before = R.cpu_count;
  while (R.cpu_count < count)
    cpu_device_add(R.cpu_count);
  pthread_mutex_unlock(&R.lock);
  if (count > before) wf__log(WF_LOG_INFO, "added CPU devices cpu:%d..cpu:%d", before, count - 1);
  return WF_OK;
}

wf_status wf_init(const wf_init_desc *desc) {
  pthread_mutex_lock(&R.lock);
  wf_status st;
  if (atomic_load(&R.up))
    st = wf__error(WF_ERR_INVALID, "wf_init",
                   "the runtime is already running (started by wf_init or lazily by another call); "
                   "call wf_shutdown first to change its options");
  else
    st = init_locked(desc);
  pthread_mutex_unlock(&R.lock);
  return st;
}

wf_status wf__ensure_init(void) {
  if (atomic_load_explicit(&R.up, memory_order_acquire)) return WF_OK;
  pthread_mutex_lock(&R.lock);
  wf_status st = atomic_load(&R.up) ? WF_OK : init_locked(R.have_desc ? &R.desc : NULL);
  pthread_mutex_unlock(&R.lock);
  return st;
}

void wf_shutdown(void) {
  pthread_mutex_lock(&R.lock);
  if (!atomic_load(&R.up)) {
    pthread_mutex_unlock(&R.lock);
    return;
  }
  pthread_mutex_unlock(&R.lock);
  wf_synchronize();
  for (int i = 0; i < R.count; i++) {
    wf_device *d = &R.devices[i];
    pthread_mutex_lock(&d->lock);
    wf_stream *stack[WF_STREAM_STACK];
    int depth = d->depth;
    memcpy(stack, d->stack, sizeof stack);
    wf_stream *def = d->default_stream;
    d->depth = 0;
    d->default_stream = NULL;
    pthread_mutex_unlock(&d->lock);
    for (int k = 0; k < depth; k++)
      wf__stream_release(stack[k]);
    wf__stream_release(def);
  }
  wf__pinned_drain(); /* pinned memory the default streams' workers freed last */
  wf__cpu_pool_stop();
  pthread_mutex_lock(&R.lock);
  for (int i = 0; i < R.count; i++)
    pthread_mutex_destroy(&R.devices[i].lock);
  atomic_store(&R.count, 0);
  R.cpu_count = 0;
  atomic_store(&R.up, false);
  pthread_mutex_unlock(&R.lock);
}

/* ---- live stream registry ---- */

void wf__stream_register(wf_stream *s) {
  pthread_mutex_lock(&R.reg_lock);
  s->next = R.streams;
  R.streams = s;
  pthread_mutex_unlock(&R.reg_lock);
}

void wf__stream_unregister(wf_stream *s) {
  pthread_mutex_lock(&R.reg_lock);
  for (wf_stream **p = &R.streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&R.reg_lock);
}

bool wf__any_stream_capturing(wf_device *d) {
  bool any = false;
  pthread_mutex_lock(&R.reg_lock);
  for (wf_stream *s = R.streams; s && !any; s = s->next)
    if ((!d || s->dev == d) && wf__stream_capturing(s)) any = true;
  pthread_mutex_unlock(&R.reg_lock);
  return any;
}

/* Synchronizes every live stream (of one device, or all). Streams are retained while waited on. */
static wf_status sync_streams(wf_device *d, const char *func) {
  if (wf__thread_captures() > 0 || wf__any_stream_capturing(d))
    return wf__error(WF_ERR_CAPTURE, func,
                     "a stream%s%s is being captured; synchronization cannot be captured: end the "
                     "capture first, or order work with events and wf_stream_wait_stream",
                     d ? " of " : "", d ? d->name : "");
  wf_stream **list = NULL;
  int n = 0, cap = 0;
  pthread_mutex_lock(&R.reg_lock);
  for (wf_stream *s = R.streams; s; s = s->next) {
    if (d && s->dev != d) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      wf_stream **grown = realloc(list, (size_t)cap * sizeof *list);
      if (!grown) break;
      list = grown;
    }
    wf__stream_retain(s);
    list[n++] = s;
  }
  pthread_mutex_unlock(&R.reg_lock);
  wf_status st = WF_OK;
  for (int i = 0; i < n; i++) {
    wf_status r = list[i]->dev->be->stream_synchronize(list[i]);
    if (r != WF_OK && st == WF_OK) st = r;
    wf__stream_release(list[i]);
  }
  free(list);
  wf__pinned_drain();
  return st;
}

wf_status wf_synchronize(void) {
  wf_status st = wf__ensure_init();
  return st != WF_OK ? st : sync_streams(NULL, "wf_synchronize");
}

wf_status wf_device_synchronize(wf_device *d) {
  if (!d) return wf__error(WF_ERR_INVALID, "wf_device_synchronize", "device is NULL");
  return sync_streams(d, "wf_device_synchronize");
}

/* ---- devices ---- */

int wf_device_count(void) { return wf__ensure_init() == WF_OK ? R.count : 0; }

wf_device *wf_device_at(int index) {
  if (wf__ensure_init() != WF_OK) return NULL;
  return wf__device_at(index);
}

wf_device *wf_device_default(void) {
  if (wf__ensure_init() != WF_OK) return NULL;
  for (int i = 0; i < R.count; i++)
    if (R.devices[i].is_cuda) return &R.devices[i];
  return &R.devices[0];
}

static void list_devices(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < R.count && len < n; i++) {
    int w = snprintf(buf + len, n - len, "%s%s", i ? ", " : "", R.devices[i].name);
    if (w < 0) break;
    len += (size_t)w;
  }
}

wf_status wf_device_get(const char *name, wf_device **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_device_get", "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!name) return wf__error(WF_ERR_INVALID, "wf_device_get", "device name is NULL");
  bool cuda;
  const char *rest;
  if (strncmp(name, "cuda", 4) == 0) {
    cuda = true;
    rest = name + 4;
  } else if (strncmp(name, "cpu", 3) == 0) {
    cuda = false;
    rest = name + 3;
  } else {
    goto unknown;
  }
  long ordinal = 0;
  if (*rest == ':') {
    char *end;
    if (!isdigit((unsigned char)rest[1])) goto unknown;
    ordinal = strtol(rest + 1, &end, 10);
    if (*end) goto unknown;
  } else if (*rest) {
    goto unknown;
  }
  for (int i = 0; i < R.count; i++)
    if (R.devices[i].is_cuda == cuda && R.devices[i].ordinal == ordinal) {
      *out = &R.devices[i];
      return WF_OK;
    }
unknown:;
  char list[512];
  list_devices(list, sizeof list);
  const char *why =
      R.info.cuda_status[0] && strncmp(name, "cuda", 4) == 0 ? R.info.cuda_status : "";
  const char *more = strncmp(name, "cpu:", 4) == 0 ? " (wf_cpu_devices_ensure adds CPU devices, "
                                                     "up to cpu:15)"
                                                   : "";
  return wf__error(WF_ERR_DEVICE, "wf_device_get",
                   "no device '%s'; the devices here are: %s%s%s%s. Names are \"cpu\", \"cpu:N\", "
                   "\"cuda\", \"cuda:N\"",
                   name, list, more, why[0] ? ". CUDA: " : "", why);
}

const char *wf_device_name(const wf_device *d) { return d ? d->name : "(null)"; }
bool wf_device_is_cuda(const wf_device *d) { return d && d->is_cuda; }
int wf_device_ordinal(const wf_device *d) { return d ? d->ordinal : -1; }

wf_status wf_device_info_get(wf_device *d, wf_device_info *out) {
  if (!d || !out) return wf__error(WF_ERR_INVALID, "wf_device_info_get", "device or out is NULL");
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", d->name);
  snprintf(out->product, sizeof out->product, "%s", d->product);
  out->is_cuda = d->is_cuda;
  out->ordinal = d->ordinal;
  out->cc_major = d->cc_major;
  out->cc_minor = d->cc_minor;
  out->multiprocessors = d->multiprocessors;
  out->total_memory = d->total_memory;
  out->allocated = atomic_load(&d->allocated);
  out->pci_bus = d->pci_bus;
  return d->be->device_info(d, out);
}

wf_status wf_device_trim(wf_device *d) {
  if (!d) return wf__error(WF_ERR_INVALID, "wf_device_trim", "device is NULL");
  wf_status st = wf_device_synchronize(d);
  if (st != WF_OK || !d->be->trim) return st;
  return d->be->trim(d);
}

bool wf_device_can_access_peer(const wf_device *d, const wf_device *peer) {
  if (!d || !peer) return false;
  if (d == peer) return true;
  if (!d->is_cuda && !peer->is_cuda) return true; /* CPU devices share host memory */
  return d->is_cuda && peer->is_cuda && d->peer_enabled[peer->index];
}

void wf_runtime_info_get(wf_runtime_info *out) {
  if (!out) return;
  wf__ensure_init();
  *out = R.info;
  out->cpu_threads = wf__cpu_pool_threads();
}
