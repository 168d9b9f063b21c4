/* The gather of partitions' owned rows in global-id order (gather.h). Staging layout: the
 * partitions' position rows one partition after the other from 0, their velocity rows from
 * `cap` rows on, their ids from 2 cap rows on (4 bytes each). */
#include "gather.h"

#include <stdlib.h>

#include "gather_kernels.h"
#include "internal/error.h"

struct wfpt_gather {
  wf_device *dev;
  wf_stream *stream;
  uint32_t cap;     /* rows */
  wf_buffer *stage; /* cap rows of positions, cap of velocities, cap uint32 ids */
};

wf_status wfpt_gather_create(wf_device *dev, wf_stream *stream, uint32_t rows, wfpt_gather **out) {
  *out = NULL;
  wfpt_gather *g = calloc(1, sizeof *g);
  if (!g) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "gather: out of host memory");
  g->dev = dev, g->stream = stream, g->cap = rows ? rows : 1;
  wf_status st = wf_buffer_create(dev, (size_t)g->cap * 36, 0, stream, &g->stage);
  if (st != WF_OK) {
    free(g);
    return st;
  }
  *out = g;
  return WF_OK;
}

void wfpt_gather_destroy(wfpt_gather *g) {
  if (!g) return;
  wf_buffer_destroy(g->stage, g->stream);
  free(g);
}

static wf_status check(const wfpt_gather *g, const wf_partition_view *views, int n, wf_buffer *pos,
                       wf_buffer *vel, uint32_t rows) {
  uint64_t total = 0;
  if (!pos || (size_t)rows * 16 > wf_buffer_size(pos) ||
      (vel && (size_t)rows * 16 > wf_buffer_size(vel)))
    return wf__error(WF_ERR_INVALID, NULL, "gather: the destination holds fewer than %u rows",
                     rows);
  for (int p = 0; p < n; p++) {
    const wf_partition_view *v = &views[p];
    if (!v->stream || (v->rows && (!v->pos || (vel && !v->vel))))
      return wf__error(WF_ERR_INVALID, NULL, "gather: partition %d lacks its stream or buffers", p);
    total += v->rows;
    if (total > g->cap)
      return wf__error(WF_ERR_INVALID, NULL,
                       "gather: partition %d's %u owned rows overrun the staging buffer's %u rows",
                       p, v->rows, g->cap);
  }
  return WF_OK;
}

wf_status wfpt_gather_enqueue(wfpt_gather *g, const wf_partition_view *views, int n, wf_buffer *pos,
                              wf_buffer *vel, uint32_t rows) {
  wf_status st = check(g, views, n, pos, vel, rows);
  wf_stream *s = g->stream;
  for (int p = 0; p < n && st == WF_OK; p++)
    st = wf_stream_wait_stream(s, views[p].stream);
  size_t at = 0, cap = g->cap;
  for (int p = 0; p < n && st == WF_OK; p++) {
    const wf_partition_view *v = &views[p];
    size_t bytes = (size_t)v->rows * 16;
    if (!bytes) continue;
    st = wf_copy(g->stage, at * 16, v->pos, 0, bytes, s);
    if (st == WF_OK && vel) st = wf_copy(g->stage, (cap + at) * 16, v->vel, 0, bytes, s);
    if (st == WF_OK && v->ids)
      st = wf_copy(g->stage, cap * 32 + at * 4, v->ids, 0, (size_t)v->rows * 4, s);
    at += v->rows;
  }
  /* the partitions' next work waits for the copies out of their rows */
  for (int p = 0; p < n && st == WF_OK; p++)
    st = wf_stream_wait_stream(views[p].stream, s);
  char *base = wf_buffer_ptr(g->stage);
  at = 0;
  for (int p = 0; p < n && st == WF_OK; p++) {
    const wf_partition_view *v = &views[p];
    if (!v->rows) continue;
    wfpt_scatter_args a = {(const wfpt_row *)(base + at * 16),
                           vel ? (const wfpt_row *)(base + (cap + at) * 16) : NULL,
                           v->ids ? (const uint32_t *)(base + cap * 32 + at * 4) : NULL,
                           v->first,
                           rows,
                           wf_buffer_ptr(pos),
                           vel ? wf_buffer_ptr(vel) : NULL};
    st = wf_launch(&wfpt_scatter_kernel, v->rows, &a, sizeof a, s);
    at += v->rows;
  }
  if (st == WF_OK) st = wf_buffer_touch(g->stage, s);
  if (st == WF_OK) st = wf_buffer_touch(pos, s);
  if (st == WF_OK && vel) st = wf_buffer_touch(vel, s);
  return st;
}
