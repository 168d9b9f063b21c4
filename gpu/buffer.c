/* Buffers, copies, memsets, uploads, downloads and kernel launches: everything that queues work.
 *
 * Safety by default: before an operation on stream s touches buffer b, s waits for b's last user
 * (wf__buffer_use), then s becomes the last user. Frees are ordered the same way, so a free never
 * overtakes a pending copy. Inside a capture the ordering is done between the captured streams,
 * and the graph keeps the buffer alive and orders itself after the buffer's last user at launch. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;

static bool range_ok(size_t off, size_t bytes, size_t size) {
  return off <= size && bytes <= size - off;
}

wf_status wf__buffer_use(wf_buffer *b, wf_stream *s) {
  wf_capture *c = s->capture;
  if (c) {
    bool first = b->cap_id != c->id;
    wf_status st = WF_OK;
    if (!first && b->cap_last && b->cap_last != s) st = wf__stream_after(s, b->cap_last);
    b->cap_id = c->id;
    b->cap_last = s;
    if (first && st == WF_OK) st = wf__capture_add_buffer(c, b);
    return st;
  }
  wf_stream *last = b->last;
  if (last == s) return WF_OK; /* before asking the driver: a frame touches every buffer */
  if (s->dev->be->stream_is_capturing(s)) return WF_OK; /* the host program's own capture */
  if (last) {
    wf_status st = wf__stream_after(s, last);
    if (st != WF_OK) return st;
  }
  wf__stream_retain(s);
  b->last = s;
  wf__stream_release(last);
  return WF_OK;
}

void wf__buffer_retain(wf_buffer *b) { atomic_fetch_add(&b->refs, 1); }

void wf__buffer_release(wf_buffer *b, wf_stream *s) {
  if (atomic_fetch_sub(&b->refs, 1) != 1) return;
  if (b->owned && b->ptr) {
    if (!s || wf__stream_capturing(s))
      s = b->last && !wf__stream_capturing(b->last) ? b->last : NULL;
    if (!s || wf__stream_capturing(s)) s = b->dev->default_stream;
    if (!s || wf__stream_capturing(s)) {
      wf__log(WF_LOG_ERROR,
              "wf_buffer_destroy: every stream of %s is being captured; %zu bytes leaked (free "
              "buffers outside captures)",
              b->dev->name, b->size);
    } else {
      if (b->last && b->last != s) wf__stream_after(s, b->last);
      b->dev->be->free(b, s);
      atomic_fetch_sub(&b->dev->allocated, b->size);
    }
  }
  wf__stream_release(b->last);
  free(b);
}

wf_status wf_buffer_create(wf_device *d, size_t bytes, unsigned flags, wf_stream *s,
                           wf_buffer **out) {
  static const char *fn = "wf_buffer_create";
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!d) return wf__error(WF_ERR_INVALID, fn, "device is NULL");
  if (flags & ~(unsigned)(WF_BUFFER_PINNED | WF_BUFFER_ZERO))
    return wf__error(WF_ERR_INVALID, fn, "unknown flags 0x%x", flags);
  if ((flags & WF_BUFFER_PINNED) && d->is_cuda)
    return wf__error(WF_ERR_INVALID, fn,
                     "WF_BUFFER_PINNED is for host buffers: create the buffer on a CPU device "
                     "(\"cpu\"), not on %s",
                     d->name);
  if (!s) s = wf__current(d);
  if (s->dev != d)
    return wf__error(WF_ERR_INVALID, fn, "buffer of %s ordered on a stream of %s", d->name,
                     s->dev->name);
  if ((flags & WF_BUFFER_PINNED) && (wf__thread_captures() > 0 || wf__stream_capturing(s)))
    return wf__error(WF_ERR_CAPTURE, fn,
                     "pinned host memory cannot be allocated during a graph capture: create pinned "
                     "buffers before wf_capture_begin");
  wf__pinned_drain();
  wf_buffer *b = calloc(1, sizeof *b);
  if (!b) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  b->dev = d;
  b->size = bytes;
  b->flags = flags;
  b->owned = true;
  atomic_init(&b->refs, 1);
  if (bytes) {
    st = d->be->alloc(d, bytes, flags, s, &b->ptr, &b->pinned);
    if (st != WF_OK) {
      free(b);
      return st;
    }
    atomic_fetch_add(&d->allocated, bytes);
  }
  wf__stream_retain(s);
  b->last = s;
  if ((flags & WF_BUFFER_ZERO) && bytes) {
    wf__note_node(s);
    st = d->be->memset(b->ptr, 0, bytes, s);
    if (st != WF_OK) {
      wf__buffer_release(b, s);
      return st;
    }
  }
  if (s->capture) wf__buffer_use(b, s);
  *out = b;
  return WF_OK;
}

wf_status wf_buffer_wrap(wf_device *d, void *ptr, size_t bytes, wf_buffer **out) {
  if (!out) return wf__error(WF_ERR_INVALID, "wf_buffer_wrap", "out is NULL");
  *out = NULL;
  wf_status st = wf__ensure_init();
  if (st != WF_OK) return st;
  if (!d) return wf__error(WF_ERR_INVALID, "wf_buffer_wrap", "device is NULL");
  if (!ptr && bytes) return wf__error(WF_ERR_INVALID, "wf_buffer_wrap", "ptr is NULL");
  wf_buffer *b = calloc(1, sizeof *b);
  if (!b) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_buffer_wrap", "out of host memory");
  b->dev = d;
  b->ptr = ptr;
  b->size = bytes;
  b->owned = false;
  atomic_init(&b->refs, 1);
  *out = b;
  return WF_OK;
}

void wf_buffer_destroy(wf_buffer *b, wf_stream *s) {
  if (!b) return;
  if (s && s->dev != b->dev && (s->dev->is_cuda || b->dev->is_cuda)) s = NULL;
  if (!s) s = wf__current(b->dev);
  wf__buffer_release(b, s);
}

void *wf_buffer_ptr(const wf_buffer *b) { return b ? b->ptr : NULL; }
size_t wf_buffer_size(const wf_buffer *b) { return b ? b->size : 0; }
wf_device *wf_buffer_device(const wf_buffer *b) { return b ? b->dev : NULL; }
unsigned wf_buffer_flags(const wf_buffer *b) { return b ? b->flags : 0; }

wf_status wf_buffer_touch(wf_buffer *b, wf_stream *s) {
  if (!b || !s) return wf__error(WF_ERR_INVALID, "wf_buffer_touch", "NULL buffer or stream");
  return wf__buffer_use(b, s);
}

/* ---- peers ---- */

void wf__peer_prepare(wf_device *a, wf_device *b, bool *staged) {
  *staged = false;
  pthread_mutex_lock(&peer_lock);
  if (!a->peer_enabled[b->index]) {
    /* tried once (at start-up); a pair that failed stays staged */
    bool ok = false;
    const wf_init_desc *desc = wf__init_desc();
    if (!(desc && desc->no_peer) && !a->peer_warned[b->index] && a->be == b->be &&
        a->be->peer_enable)
      ok = a->be->peer_enable(a, b) == WF_OK;
    if (ok) {
      a->peer_enabled[b->index] = b->peer_enabled[a->index] = true;
    } else {
      *staged = true;
      if (!a->peer_warned[b->index]) {
        a->peer_warned[b->index] = b->peer_warned[a->index] = true;
        wf__log(WF_LOG_WARN,
                "no peer access between %s and %s: copies between them are staged through pinned "
                "host memory (slower)",
                a->name, b->name);
      }
    }
  }
  pthread_mutex_unlock(&peer_lock);
}

wf_status wf_peer_access_enable(wf_device *d, wf_device *peer) {
  static const char *fn = "wf_peer_access_enable";
  if (!d || !peer) return wf__error(WF_ERR_INVALID, fn, "device is NULL");
  if (d == peer || (!d->is_cuda && !peer->is_cuda)) return WF_OK;
  if (d->is_cuda != peer->is_cuda)
    return wf__error(WF_ERR_INVALID, fn,
                     "%s and %s are of different kinds; peer access is between "
                     "CUDA devices",
                     d->name, peer->name);
  bool staged;
  wf__peer_prepare(d, peer, &staged);
  if (staged)
    return wf__error(
        WF_ERR_UNSUPPORTED, fn,
        "%s and %s cannot access each other's memory%s; copies between them are staged "
        "through host memory",
        d->name, peer->name,
        wf__init_desc() && wf__init_desc()->no_peer ? " (disabled by wf_init no_peer)" : "");
  return WF_OK;
}

/* ---- copies ---- */

static bool is_pageable(const wf_buffer *b) { return !b->dev->is_cuda && !b->pinned; }

wf_status wf_copy(wf_buffer *dst, size_t dst_off, const wf_buffer *src_c, size_t src_off,
                  size_t bytes, wf_stream *s) {
  static const char *fn = "wf_copy";
  wf_buffer *src = (wf_buffer *)src_c; /* tracking state changes; the contents do not */
  if (!dst || !src) return wf__error(WF_ERR_INVALID, fn, "NULL buffer");
  if (!range_ok(dst_off, bytes, dst->size))
    return wf__error(WF_ERR_INVALID, fn,
                     "destination range [%zu, %zu+%zu) is outside the %zu-byte buffer on %s",
                     dst_off, dst_off, bytes, dst->size, dst->dev->name);
  if (!range_ok(src_off, bytes, src->size))
    return wf__error(WF_ERR_INVALID, fn,
                     "source range [%zu, %zu+%zu) is outside the %zu-byte buffer on %s", src_off,
                     src_off, bytes, src->size, src->dev->name);
  if (!bytes) return WF_OK;
  if (!s) s = wf__current(dst->dev->is_cuda ? dst->dev : src->dev);
  bool dcuda = dst->dev->is_cuda, scuda = src->dev->is_cuda;
  if (!s->dev->is_cuda && (dcuda || scuda))
    return wf__error(WF_ERR_INVALID, fn,
                     "a copy involving %s must run on a CUDA stream, not on a stream of %s; pass "
                     "NULL to use the CUDA device's current stream",
                     dcuda ? dst->dev->name : src->dev->name, s->dev->name);
  wf_copy_desc c = {.dst = (char *)dst->ptr + dst_off,
                    .src = (const char *)src->ptr + src_off,
                    .bytes = bytes,
                    .dst_dev = dst->dev,
                    .src_dev = src->dev};
  if (!dcuda && !scuda)
    c.kind = WF_COPY_HOST_HOST;
  else if (dcuda && !scuda)
    c.kind = WF_COPY_H2D, c.pageable = is_pageable(src);
  else if (!dcuda && scuda)
    c.kind = WF_COPY_D2H, c.pageable = is_pageable(dst);
  else if (dst->dev == src->dev)
    c.kind = WF_COPY_D2D;
  else {
    c.kind = WF_COPY_PEER;
    wf__peer_prepare(dst->dev, src->dev, &c.staged);
  }
  if (c.pageable && (wf__thread_captures() > 0 || wf__stream_capturing(s)))
    return wf__error(WF_ERR_CAPTURE, fn,
                     "a copy between pageable host memory and %s cannot be captured (it is "
                     "synchronous): create the host buffer with WF_BUFFER_PINNED and use wf_copy",
                     dcuda ? dst->dev->name : src->dev->name);
  wf_status st = wf__buffer_use(src, s);
  if (st == WF_OK && dst != src) st = wf__buffer_use(dst, s);
  if (st != WF_OK) return st;
  /* CUDA reads pageable host memory on the host when the call is made (it stages it), not when
     the stream gets there; so the ordering just queued must be waited for here. */
  if (s->dev->is_cuda && (c.kind == WF_COPY_HOST_HOST || c.pageable)) {
    st = s->dev->be->stream_synchronize(s);
    if (st != WF_OK) return st;
  }
  wf__note_node(s);
  return s->dev->be->copy(&c, s);
}

wf_status wf_memset(wf_buffer *b, int value, size_t off, size_t bytes, wf_stream *s) {
  static const char *fn = "wf_memset";
  if (!b) return wf__error(WF_ERR_INVALID, fn, "buffer is NULL");
  if (!range_ok(off, bytes, b->size))
    return wf__error(WF_ERR_INVALID, fn,
                     "range [%zu, %zu+%zu) is outside the %zu-byte buffer on %s", off, off, bytes,
                     b->size, b->dev->name);
  if (!s) s = wf__current(b->dev);
  if (s->dev->is_cuda != b->dev->is_cuda)
    return wf__error(WF_ERR_INVALID, fn, "buffer of %s set on a stream of %s", b->dev->name,
                     s->dev->name);
  if (!bytes) return WF_OK;
  wf_status st = wf__buffer_use(b, s);
  if (st != WF_OK) return st;
  wf__note_node(s);
  return s->dev->be->memset((char *)b->ptr + off, value, bytes, s);
}

wf_status wf_upload(wf_buffer *dst, size_t dst_off, const void *host, size_t bytes, wf_stream *s) {
  static const char *fn = "wf_upload";
  if (!dst || (!host && bytes)) return wf__error(WF_ERR_INVALID, fn, "NULL buffer or host pointer");
  if (!range_ok(dst_off, bytes, dst->size))
    return wf__error(WF_ERR_INVALID, fn,
                     "range [%zu, %zu+%zu) is outside the %zu-byte buffer on %s", dst_off, dst_off,
                     bytes, dst->size, dst->dev->name);
  if (!s) s = wf__current(dst->dev);
  if (s->dev->is_cuda != dst->dev->is_cuda)
    return wf__error(WF_ERR_INVALID, fn, "buffer of %s uploaded on a stream of %s", dst->dev->name,
                     s->dev->name);
  if (wf__thread_captures() > 0 || wf__stream_capturing(s))
    return wf__error(WF_ERR_CAPTURE, fn,
                     "wf_upload reads pageable caller memory, which cannot be captured: put the "
                     "data in a WF_BUFFER_PINNED buffer and use wf_copy");
  if (!bytes) return WF_OK;
  wf_status st = wf__buffer_use(dst, s);
  if (st != WF_OK) return st;
  return s->dev->be->upload((char *)dst->ptr + dst_off, host, bytes, s);
}

wf_status wf_download(void *host, const wf_buffer *src_c, size_t src_off, size_t bytes) {
  static const char *fn = "wf_download";
  wf_buffer *src = (wf_buffer *)src_c;
  if (!src || (!host && bytes)) return wf__error(WF_ERR_INVALID, fn, "NULL buffer or host pointer");
  if (!range_ok(src_off, bytes, src->size))
    return wf__error(WF_ERR_INVALID, fn,
                     "range [%zu, %zu+%zu) is outside the %zu-byte buffer on %s", src_off, src_off,
                     bytes, src->size, src->dev->name);
  wf_stream *s = wf__current(src->dev);
  wf_status st = wf__check_no_capture(
      fn, s,
      "wf_download blocks; copy into a WF_BUFFER_PINNED buffer with wf_copy (or push to a "
      "wf_ring) inside the capture and read it after an event");
  if (st != WF_OK) return st;
  if (!bytes) return WF_OK;
  st = wf__buffer_use(src, s);
  if (st != WF_OK) return st;
  wf_copy_desc c = {.dst = host,
                    .src = (const char *)src->ptr + src_off,
                    .bytes = bytes,
                    .kind = src->dev->is_cuda ? WF_COPY_D2H : WF_COPY_HOST_HOST,
                    .pageable = src->dev->is_cuda,
                    .dst_dev = NULL,
                    .src_dev = src->dev};
  st = s->dev->be->copy(&c, s);
  if (st == WF_OK) st = s->dev->be->stream_synchronize(s);
  return st;
}

/* ---- kernels ---- */

wf_status wf_launch(const wf_kernel *k, size_t n, const void *args, size_t args_size,
                    wf_stream *s) {
  static const char *fn = "wf_launch";
  if (!k) return wf__error(WF_ERR_INVALID, fn, "kernel is NULL");
  if (!args && args_size)
    return wf__error(WF_ERR_INVALID, fn, "kernel %s: args is NULL but args_size is %zu",
                     k->name ? k->name : "?", args_size);
  if (!s) {
    wf_device *d = wf_device_default();
    if (!d) return wf__error(WF_ERR_DEVICE, fn, "no device");
    s = wf__current(d);
  }
  const char *name = k->name ? k->name : "(unnamed)";
  if (s->dev->is_cuda && !k->cuda)
    return wf__error(WF_ERR_UNSUPPORTED, fn,
                     "kernel %s has no CUDA version, so it cannot run on %s (was its .cu file "
                     "built? configure with -DWEFT_CUDA=ON)",
                     name, s->dev->name);
  if (!s->dev->is_cuda && !k->cpu)
    return wf__error(WF_ERR_UNSUPPORTED, fn, "kernel %s has no CPU version, so it cannot run on %s",
                     name, s->dev->name);
  if (n == 0) return WF_OK;
  wf__note_node(s);
  return s->dev->be->launch(k, n, args, args_size, s);
}
