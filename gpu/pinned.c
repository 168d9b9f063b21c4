/* Pinned (page-locked) host memory for CPU-device buffers created with WF_BUFFER_PINNED.
 *
 * A backend that can copy page-locked memory asynchronously offers it through its table
 * (wf_backend.host_alloc/host_free; the CUDA backend does, with portable cudaHostAlloc memory). The
 * first device in the table whose backend offers it provides the memory; with no such device,
 * wf__pinned_alloc returns NULL and the CPU backend falls back to ordinary aligned memory, which
 * is still correct, only copied synchronously.
 *
 * Freeing is deferred. A CPU stream's worker frees its buffers in stream order, but it must not
 * free pinned memory itself: cudaFreeHost synchronizes the GPU, and a CUDA stream may at that
 * moment be waiting (in a host function) for this very worker. The worker hands the pointer over,
 * and a host thread frees it at its next safe point (wf__pinned_drain: buffer creation,
 * synchronization, shutdown), never while it captures.
 *
 * Invariant: every entry on the deferred list keeps the backend that allocated it, so a drain
 * frees each pointer with its own backend's host_free. Workers never read the device table: the
 * backend of the last allocation is kept here (one process has one provider: CUDA). */
#include <stdlib.h>

#include "gpu_internal.h"

typedef struct pinned_entry {
  void *ptr;
  const wf_backend *be;
} pinned_entry;

static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;
static pinned_entry *pinned_list;
static size_t pinned_n, pinned_cap;
static const wf_backend *_Atomic pinned_be; /* the backend that allocated pinned memory last */

static const wf_backend *provider(void) {
  for (int i = 0; i < wf__device_count(); i++) {
    const wf_backend *be = wf__device_at(i)->be;
    if (be->host_alloc && be->host_free) return be;
  }
  return NULL;
}

void *wf__pinned_alloc(size_t bytes) {
  const wf_backend *be = provider();
  if (!be) return NULL;
  atomic_store(&pinned_be, be);
  return be->host_alloc(bytes);
}

static void pinned_defer(void *p) {
  const wf_backend *be = atomic_load(&pinned_be); /* set: p came from wf__pinned_alloc */
  pthread_mutex_lock(&pinned_lock);
  if (pinned_n == pinned_cap) {
    size_t cap = pinned_cap ? pinned_cap * 2 : 16;
    pinned_entry *grown = realloc(pinned_list, cap * sizeof *grown);
    if (grown) {
      pinned_list = grown;
      pinned_cap = cap;
    }
  }
  if (pinned_n < pinned_cap) pinned_list[pinned_n++] = (pinned_entry){p, be};
  pthread_mutex_unlock(&pinned_lock);
}

void wf__pinned_drain(void) {
  if (wf__thread_captures() > 0) return;
  pthread_mutex_lock(&pinned_lock);
  pinned_entry *list = pinned_list;
  size_t n = pinned_n;
  pinned_list = NULL;
  pinned_n = pinned_cap = 0;
  pthread_mutex_unlock(&pinned_lock);
  for (size_t i = 0; i < n; i++)
    list[i].be->host_free(list[i].ptr);
  free(list);
}

void wf__host_free(void *p, bool pinned) {
  if (pinned)
    pinned_defer(p);
  else
    free(p);
}
