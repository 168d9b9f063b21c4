/* The partition set's objects (partition.h): partitions with their copy streams, links with
 * their slots, segments and staging buffers, the per-pair events, and the messages that name
 * them. The ordering of transfers is the transport's (transport.h). */
#include "partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "ranks.h"
#include "transport.h"

wf_status wfpt_fail(const wfpt_set *s, wf_status st, const char *doing) {
  char why[768];
  snprintf(why, sizeof why, "%s", wf_last_error()); /* wf__error rewrites that text */
  return wf__error(st, NULL, "%s: %s: %s (%s)", s->what, doing, why, wf_status_str(st));
}

wf_status wfpt_fail_link(const wfpt_set *s, const wfpt_link *k, int slot, wf_status st,
                         const char *doing) {
  char where[64];
  if (slot >= 0)
    snprintf(where, sizeof where, "link %d -> %d (slot %d)", k->from, k->to, slot);
  else
    snprintf(where, sizeof where, "link %d -> %d", k->from, k->to);
  char why[768];
  snprintf(why, sizeof why, "%s", wf_last_error());
  return wf__error(st, NULL, "%s: %s: %s: %s (%s)", s->what, where, doing, why, wf_status_str(st));
}

static wf_status oom(const wfpt_set *s) {
  return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", s->what);
}

/* Over ranks: whether MPI takes each local partition's buffers itself (wf_mpi_halo). A CPU
 * device's memory is host memory, which any MPI reads; a CUDA device's needs a CUDA-aware one. */
static wf_status halo_paths(wfpt_set *s, const wfpt_set_desc *d) {
  if (d->mpi_halo < WF_MPI_HALO_AUTO || d->mpi_halo > WF_MPI_HALO_DIRECT)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s: mpi_halo %d is not a wf_mpi_halo (0 auto, 1 staged, "
                     "2 direct)",
                     s->what, d->mpi_halo);
  bool aware = false;
  wf_mpi_available(&aware, NULL, 0);
  for (int p = 0; p < d->n; p++) {
    if (!wfpt_local(s, p)) continue;
    bool takes = !wf_device_is_cuda(d->devices[p]) || aware;
    if (d->mpi_halo == WF_MPI_HALO_DIRECT && !takes)
      return wf__error(WF_ERR_UNSUPPORTED, NULL,
                       "%s: rank %d: mpi_halo direct needs a CUDA-aware MPI for device '%s', and "
                       "this MPI is not one (wf_mpi_available): use staged or auto",
                       s->what, s->rank, wf_device_name(d->devices[p]));
    s->direct[p] = d->mpi_halo == WF_MPI_HALO_DIRECT || (d->mpi_halo == WF_MPI_HALO_AUTO && takes);
  }
  return WF_OK;
}

wf_status wfpt_set_create(const wfpt_set_desc *d, wfpt_set **out) {
  if (!out) return wf__error(WF_ERR_INVALID, NULL, "partitions: out is NULL");
  *out = NULL;
  const char *what = d && d->what ? d->what : "partitions";
  if (!d || !d->devices || !d->streams)
    return wf__error(WF_ERR_INVALID, NULL, "%s: desc, devices or streams is NULL", what);
  if (d->n < 1 || d->n > WFPT_MAX)
    return wf__error(WF_ERR_INVALID, NULL, "%s: %d partitions; 1 to %d are supported", what, d->n,
                     WFPT_MAX);
  wfpt_set *s = calloc(1, sizeof *s);
  if (!s) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", what);
  snprintf(s->what, sizeof s->what, "%s", what);
  s->n = d->n;
  wf_status st = wfpt_ranks_open(s, d->mpi_comm);
  if (st != WF_OK) {
    free(s);
    return st;
  }
  for (int p = 0; p < d->n && st == WF_OK; p++) {
    if (!wfpt_local(s, p)) continue; /* another rank's */
    if (!d->devices[p] || !d->streams[p])
      st = wf__error(WF_ERR_INVALID, NULL, "%s: partition %d has no device or stream", what, p);
    /* one frame graph spans every partition's streams */
    else if (wf_device_is_cuda(d->devices[p]) != wf_device_is_cuda(d->devices[s->lead]))
      st = wf__error(WF_ERR_INVALID, NULL,
                     "%s: devices '%s' and '%s' are of different kinds (CUDA and CPU): one frame "
                     "graph cannot span both",
                     what, wf_device_name(d->devices[s->lead]), wf_device_name(d->devices[p]));
  }
  if (st != WF_OK) {
    wfpt_ranks_close(s);
    free(s);
    return st;
  }
  if (s->mpi) st = halo_paths(s, d);
  if (st != WF_OK) {
    wfpt_ranks_close(s);
    free(s);
    return st;
  }
  s->tr = d->transport ? d->transport : s->mpi ? &wfpt_transport_mpi : &wfpt_transport_peer;
  s->mode = WFPT_FULL;
  for (int p = 0; p < d->n && st == WF_OK; p++) {
    if (!wfpt_local(s, p)) continue;
    s->part[p].dev = d->devices[p];
    s->part[p].stream = d->streams[p];
    if (d->n > 1 && (st = wf_stream_create(d->devices[p], 0, &s->part[p].copy)) != WF_OK)
      st = wfpt_fail(s, st, "creating a copy stream");
  }
  if (st != WF_OK) {
    wfpt_set_destroy(s);
    return st;
  }
  *out = s;
  return WF_OK;
}

static void link_free(wfpt_set *s, wfpt_link *k) {
  if (k->send) wf_buffer_destroy(k->send, s->part[k->from].stream);
  if (k->recv) wf_buffer_destroy(k->recv, s->part[k->to].stream);
  wfpt_mpi_link_free(s, k);
  k->send = k->recv = NULL, k->staged = 0;
}

void wfpt_set_destroy(wfpt_set *s) {
  if (!s) return;
  for (int p = 0; p < s->n; p++) {
    if (s->part[p].stream) wf_stream_synchronize(s->part[p].stream);
    if (s->part[p].copy) wf_stream_synchronize(s->part[p].copy);
  }
  for (int l = 0; l < s->cap_links; l++) { /* unused slots may still hold buffers */
    wfpt_link *k = &s->links[l];
    link_free(s, k);
    for (int i = 0; i < k->cap_slots; i++)
      free(k->slot[i].seg);
    free(k->slot);
  }
  free(s->links);
  for (int a = 0; a < WFPT_MAX; a++)
    for (int b = 0; b < WFPT_MAX; b++) {
      wf_event_destroy(s->recv_free[a][b]);
      wf_event_destroy(s->copied[a][b]);
    }
  for (int p = 0; p < s->n; p++)
    if (s->part[p].copy) wf_stream_destroy(s->part[p].copy);
  wfpt_ranks_close(s);
  free(s);
}

void wfpt_links_clear(wfpt_set *s) { s->n_links = 0; }

/* The pair's events, made on first use and kept (partition.h: a captured frame names them). */
static wf_status pair_events(wfpt_set *s, wfpt_link *k) {
  wf_status st = WF_OK;
  if (wfpt_local(s, k->to) && !s->recv_free[k->to][k->from] &&
      (st = wf_event_create(s->part[k->to].dev, 0, &s->recv_free[k->to][k->from])) != WF_OK)
    return wfpt_fail_link(s, k, -1, st, "creating an event");
  if (wfpt_local(s, k->from) && !s->copied[k->from][k->to] &&
      (st = wf_event_create(s->part[k->from].dev, 0, &s->copied[k->from][k->to])) != WF_OK)
    return wfpt_fail_link(s, k, -1, st, "creating an event");
  return WF_OK;
}

wf_status wfpt_link_add(wfpt_set *s, int from, int to, int n_slots, wfpt_link **out) {
  *out = NULL;
  if (from < 0 || from >= s->n || to < 0 || to >= s->n || from == to)
    return wf__error(WF_ERR_INVALID, NULL,
                     "%s: link %d -> %d: partitions 0 to %d, and a link joins two of them", s->what,
                     from, to, s->n - 1);
  if (n_slots < 1)
    return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d: %d slots; at least 1", s->what, from,
                     to, n_slots);
  if (s->n_links == s->cap_links) {
    int cap = s->cap_links ? s->cap_links * 2 : 8;
    wfpt_link *nl = realloc(s->links, (size_t)cap * sizeof *nl);
    if (!nl) return oom(s);
    memset(nl + s->cap_links, 0, (size_t)(cap - s->cap_links) * sizeof *nl);
    s->links = nl, s->cap_links = cap;
  }
  wfpt_link *k = &s->links[s->n_links];
  if (k->from != from || k->to != to) link_free(s, k); /* (a zeroed slot has no buffers) */
  if (n_slots > k->cap_slots) {
    wfpt_slot *ns = realloc(k->slot, (size_t)n_slots * sizeof *ns);
    if (!ns) return oom(s);
    memset(ns + k->cap_slots, 0, (size_t)(n_slots - k->cap_slots) * sizeof *ns);
    k->slot = ns, k->cap_slots = n_slots;
  }
  k->from = from, k->to = to, k->n_slots = n_slots;
  for (int i = 0; i < n_slots; i++)
    wfpt_slot_clear(k, i);
  wf_status st = pair_events(s, k);
  if (st != WF_OK) return st;
  s->n_links++;
  *out = k;
  return WF_OK;
}

wf_status wfpt_link_reserve(wfpt_set *s, wfpt_link *k, size_t bytes) {
  if (k->staged && k->staged >= bytes) return WF_OK;
  size_t cap = k->staged + k->staged / 2;
  if (cap < bytes) cap = bytes;
  if (cap < 256) cap = 256;
  wf_buffer *send = NULL, *recv = NULL;
  wf_status st = WF_OK; /* (each rank makes its own side's) */
  if (wfpt_local(s, k->from))
    st =
        wf_buffer_create(s->part[k->from].dev, cap, WF_BUFFER_ZERO, s->part[k->from].stream, &send);
  if (st == WF_OK && wfpt_local(s, k->to))
    st = wf_buffer_create(s->part[k->to].dev, cap, WF_BUFFER_ZERO, s->part[k->to].stream, &recv);
  if (st != WF_OK) {
    if (send) wf_buffer_destroy(send, s->part[k->from].stream);
    return wfpt_fail_link(s, k, -1, st, "allocating staging buffers");
  }
  link_free(s, k);
  k->send = send, k->recv = recv, k->staged = cap;
  return WF_OK;
}

wf_status wfpt_slot_add(wfpt_set *s, wfpt_link *k, int slot, wf_buffer *dst, size_t dst_off,
                        wf_buffer *src, size_t src_off, size_t bytes) {
  if (slot < 0 || slot >= k->n_slots)
    return wf__error(WF_ERR_INVALID, NULL, "%s: link %d -> %d: slot %d of %d", s->what, k->from,
                     k->to, slot, k->n_slots);
  wfpt_slot *sl = &k->slot[slot];
  if (sl->n == sl->cap) {
    uint32_t cap = sl->cap ? 2 * sl->cap : 4;
    wfpt_seg *ns = realloc(sl->seg, (size_t)cap * sizeof *ns);
    if (!ns) return oom(s);
    sl->seg = ns, sl->cap = cap;
  }
  sl->seg[sl->n++] = (wfpt_seg){dst, src, dst_off, src_off, bytes};
  sl->bytes += bytes;
  return WF_OK;
}

void wfpt_slot_clear(wfpt_link *k, int slot) { k->slot[slot].n = 0, k->slot[slot].bytes = 0; }

static bool has_slot(const wfpt_link *k, int slot) {
  return slot < k->n_slots && k->slot[slot].n > 0;
}

bool wfpt_sends(const wfpt_set *s, int p, int slot) {
  for (int l = 0; l < s->n_links; l++) {
    const wfpt_link *k = &s->links[l];
    if (k->from != p) continue;
    for (int i = slot < 0 ? 0 : slot; i < (slot < 0 ? k->n_slots : slot + 1); i++)
      if (has_slot(k, i)) return true;
  }
  return false;
}

uint64_t wfpt_slot_bytes(const wfpt_set *s, int slot) {
  uint64_t b = 0;
  for (int l = 0; l < s->n_links; l++) {
    const wfpt_link *k = &s->links[l];
    for (int i = 0; i < k->n_slots; i++)
      if (slot < 0 || i == slot) b += k->slot[i].bytes;
  }
  return b;
}

void wfpt_key_put(wfpt_key *k, uint64_t word) {
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 256;
    uint64_t *w = realloc(k->w, cap * sizeof *w);
    if (!w) {
      k->lost = true;
      return;
    }
    k->w = w, k->cap = cap;
  }
  k->w[k->n++] = word;
}

void wfpt_key_free(wfpt_key *k) {
  free(k->w);
  *k = (wfpt_key){0};
}

void wfpt_key_links(const wfpt_set *s, wfpt_key *key) {
  wfpt_key_put(key, (uint64_t)s->n);
  wfpt_key_put(key, (uint64_t)s->n_links);
  for (int l = 0; l < s->n_links; l++) {
    const wfpt_link *k = &s->links[l];
    wfpt_key_put(key, (uint64_t)k->from << 32 | (uint32_t)k->to);
    wfpt_key_put(key, (uint64_t)k->n_slots);
    wfpt_key_put(key, (uintptr_t)k->send);
    wfpt_key_put(key, (uintptr_t)k->recv);
    for (int i = 0; i < k->n_slots; i++) {
      const wfpt_slot *sl = &k->slot[i];
      wfpt_key_put(key, sl->n);
      for (uint32_t j = 0; j < sl->n; j++) {
        const wfpt_seg *g = &sl->seg[j];
        wfpt_key_put(key, (uintptr_t)g->dst);
        wfpt_key_put(key, (uintptr_t)g->src);
        wfpt_key_put(key, g->dst_off);
        wfpt_key_put(key, g->src_off);
        wfpt_key_put(key, g->bytes);
      }
    }
  }
}
