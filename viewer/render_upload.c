/* The frame's point sets onto the GPU, once for the shadow and the lit pass (render.c), and their
 * bounds on the way (the shadow map's frustum).
 *
 * GL 4.4 and later: through a persistently mapped staging buffer and copies on the GPU into
 * buffers that stay there. A 1M-sphere frame is 20 MB: written in chunks of 64k spheres (1 MiB)
 * by the calling thread and, for large frames, helper threads that take chunks in turn; the
 * calling thread issues each chunk's GPU copy as soon as that chunk and every one before it are
 * written, so the bus's copies overlap the CPU's writing. Each chunk's bounds are its own and
 * are merged at the end, so the result does not depend on which thread wrote what.
 * GL 3.3: orphan the buffers and fill them with glBufferSubData.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "viewer_internal.h"

enum {
  CHUNK = 65536,           /* spheres a chunk */
  HELPERS = 3,             /* helper threads at most */
  HELPED_FROM = 4 * CHUNK, /* frames smaller than this are written by the calling thread alone */
};

typedef struct bounds {
  float lo[3], hi[3], rmax;
} bounds;

static void bounds_empty(bounds *b) {
  for (int a = 0; a < 3; a++)
    b->lo[a] = 1e30f, b->hi[a] = -1e30f;
  b->rmax = 0.0f;
}

static void bounds_merge(bounds *b, const bounds *o) {
  for (int a = 0; a < 3; a++) {
    b->lo[a] = o->lo[a] < b->lo[a] ? o->lo[a] : b->lo[a];
    b->hi[a] = o->hi[a] > b->hi[a] ? o->hi[a] : b->hi[a];
  }
  b->rmax = o->rmax > b->rmax ? o->rmax : b->rmax;
}

/* n spheres of xyzr into dst (NULL: none) and their bounds into b: one pass over the data,
 * scalars the compiler keeps in registers. */
static void copy_and_bound(const float *p, size_t n, float *dst, bounds *b) {
  float x0 = b->lo[0], y0 = b->lo[1], z0 = b->lo[2], x1 = b->hi[0], y1 = b->hi[1], z1 = b->hi[2];
  float r1 = b->rmax;
  for (size_t k = 0; k < n; k++, p += 4) {
    x0 = p[0] < x0 ? p[0] : x0, x1 = p[0] > x1 ? p[0] : x1;
    y0 = p[1] < y0 ? p[1] : y0, y1 = p[1] > y1 ? p[1] : y1;
    z0 = p[2] < z0 ? p[2] : z0, z1 = p[2] > z1 ? p[2] : z1;
    r1 = p[3] > r1 ? p[3] : r1;
    if (dst) memcpy(dst + 4 * k, p, 4 * sizeof(float));
  }
  b->lo[0] = x0, b->lo[1] = y0, b->lo[2] = z0, b->hi[0] = x1, b->hi[1] = y1, b->hi[2] = z1;
  b->rmax = r1;
}

/* A frame's chunk: n spheres of a set from its `first`, at sphere `at` of the staging buffer and
 * of vbo_sphere (the same place in both). */
struct wf__upload_chunk {
  int set;
  size_t first, n, at;
  bounds b;        /* its spheres' bounds */
  atomic_int done; /* 1 once written */
};
typedef struct wf__upload_chunk chunk;

/* One frame's chunks. */
typedef struct job {
  const wf_render_scene *s;
  float *dst;
  chunk *c;
  size_t count;       /* chunks */
  atomic_size_t next; /* the next chunk to take */
} job;

/* Writes chunk c into the staging buffer and finds its bounds. */
static void write_chunk(job *j, chunk *c) {
  bounds_empty(&c->b);
  copy_and_bound(j->s->points[c->set].xyzr + 4 * c->first, c->n, j->dst + 4 * c->at, &c->b);
  atomic_store_explicit(&c->done, 1, memory_order_release);
}

static void take_chunks(job *j) {
  for (;;) {
    size_t c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
    if (c >= j->count) return;
    write_chunk(j, &j->c[c]);
  }
}

static void *helper(void *arg) {
  take_chunks(arg);
  return NULL;
}

/* The GPU copy of a chunk (its spheres only; the buffers bound as copy source and target). */
static void copy_chunk(const chunk *c) {
  GLintptr at = (GLintptr)(c->at * 4 * sizeof(float));
  glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, at, at,
                      (GLsizeiptr)(c->n * 4 * sizeof(float)));
  glFlush(); /* start it now */
}

/* The frame's chunk table in r->chunks (grown as needed, kept between frames): *count chunks. */
static wf_status chunk_table(wf_render *r, const wf_render_scene *s, size_t *count) {
  size_t chunks = 0;
  for (int i = 0; i < s->point_set_count; i++)
    chunks += (s->points[i].count + CHUNK - 1) / CHUNK;
  if (chunks > r->chunks_cap) {
    chunk *t = realloc(r->chunks, chunks * sizeof *t);
    if (!t)
      return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_draw", "%zu upload chunks", chunks);
    r->chunks = t, r->chunks_cap = chunks;
  }
  size_t c = 0;
  for (int i = 0; i < s->point_set_count; i++)
    for (size_t k = 0; k < s->points[i].count; k += CHUNK, c++) {
      chunk *h = &r->chunks[c];
      h->set = i, h->first = k, h->at = r->point_first[i] + k;
      h->n = s->points[i].count - k < CHUNK ? s->points[i].count - k : CHUNK;
      atomic_init(&h->done, 0);
    }
  *count = chunks;
  return WF_OK;
}

static wf_status upload_staged(wf_render *r, const wf_render_scene *s, size_t total, bool speeds,
                               bounds *all) {
  size_t sph = total * 4 * sizeof(float), bytes = sph + (speeds ? total * sizeof(float) : 0);
  if (r->stage_fence) { /* the last frame's copy out of the staging buffer (long done) */
    glClientWaitSync(r->stage_fence, GL_SYNC_FLUSH_COMMANDS_BIT, UINT64_MAX);
    glDeleteSync(r->stage_fence);
    r->stage_fence = 0;
  }
  const GLbitfield map = GL_MAP_WRITE_BIT | GL_MAP_PERSISTENT_BIT | GL_MAP_COHERENT_BIT;
  if (bytes > r->stage_bytes) {
    if (r->stage) glDeleteBuffers(1, &r->stage);
    r->stage_ptr = NULL, r->stage_bytes = 0;
    glGenBuffers(1, &r->stage);
    glBindBuffer(GL_COPY_READ_BUFFER, r->stage);
    glBufferStorage(GL_COPY_READ_BUFFER, (GLsizeiptr)bytes, NULL, map);
    r->stage_ptr = glMapBufferRange(GL_COPY_READ_BUFFER, 0, (GLsizeiptr)bytes, map);
    if (!r->stage_ptr)
      return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_draw",
                              "cannot map a staging buffer of %zu bytes for %zu spheres", bytes,
                              total);
    r->stage_bytes = bytes;
  }
  if (total > r->points_cap) {
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_sphere);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)sph, NULL, GL_DYNAMIC_DRAW);
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_speed);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(total * sizeof(float)), NULL, GL_DYNAMIC_DRAW);
    r->points_cap = total;
  }
  size_t chunks = 0;
  wf_status st = chunk_table(r, s, &chunks);
  if (st != WF_OK) return st;
  job j = {.s = s, .dst = r->stage_ptr, .c = r->chunks, .count = chunks};
  atomic_init(&j.next, 0);
  pthread_t th[HELPERS];
  int helpers = 0;
  if (total >= HELPED_FROM)
    while (helpers < HELPERS && pthread_create(&th[helpers], NULL, helper, &j) == 0)
      helpers++;
  glBindBuffer(GL_COPY_READ_BUFFER, r->stage);
  glBindBuffer(GL_COPY_WRITE_BUFFER, r->vbo_sphere);
  size_t copied = 0; /* chunks [0, copied) have their GPU copy issued */
  for (;;) {
    while (copied < chunks && atomic_load_explicit(&j.c[copied].done, memory_order_acquire))
      copy_chunk(&j.c[copied++]);
    if (copied == chunks) break;
    size_t mine = atomic_fetch_add_explicit(&j.next, 1, memory_order_relaxed);
    if (mine < chunks)
      write_chunk(&j, &j.c[mine]); /* one chunk here too, then issue what is ready */
    else
      sched_yield(); /* every chunk is taken: the helpers finish theirs */
  }
  for (int h = 0; h < helpers; h++)
    pthread_join(th[h], NULL);
  for (size_t c = 0; c < chunks; c++)
    bounds_merge(all, &j.c[c].b);
  if (speeds) {
    float *sp = (float *)r->stage_ptr + 4 * total;
    for (int i = 0; i < s->point_set_count; i++) {
      const wf_render_points *p = &s->points[i];
      if (p->count && p->speed) memcpy(sp + r->point_first[i], p->speed, p->count * sizeof(float));
    }
    glBindBuffer(GL_COPY_WRITE_BUFFER, r->vbo_speed);
    glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, (GLintptr)sph, 0,
                        (GLsizeiptr)(total * sizeof(float)));
  }
  r->stage_fence = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
  return WF_OK;
}

wf_status wf__upload_points(wf_render *r, const wf_render_scene *s) {
  if (s->point_set_count > r->point_first_cap) {
    size_t *p = realloc(r->point_first, (size_t)s->point_set_count * sizeof *p);
    if (!p) return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_draw", "point sets");
    r->point_first = p, r->point_first_cap = s->point_set_count;
  }
  bounds all;
  bounds_empty(&all);
  size_t total = 0;
  bool speeds = false;
  for (int i = 0; i < s->point_set_count; i++) {
    r->point_first[i] = total;
    total += s->points[i].count;
    speeds = speeds || (s->points[i].count && s->points[i].speed);
  }
  wf_status st = WF_OK;
  if (total && epoxy_gl_version() >= 44) {
    st = upload_staged(r, s, total, speeds, &all);
  } else if (total) { /* GL 3.3: orphan and fill */
    glBindBuffer(GL_ARRAY_BUFFER, r->vbo_sphere);
    glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(total * 4 * sizeof(float)), NULL, GL_STREAM_DRAW);
    for (int i = 0; i < s->point_set_count; i++) {
      copy_and_bound(s->points[i].xyzr, s->points[i].count, NULL, &all);
      if (s->points[i].count)
        glBufferSubData(GL_ARRAY_BUFFER, (GLintptr)(r->point_first[i] * 4 * sizeof(float)),
                        (GLsizeiptr)(s->points[i].count * 4 * sizeof(float)), s->points[i].xyzr);
    }
    if (speeds) {
      glBindBuffer(GL_ARRAY_BUFFER, r->vbo_speed);
      glBufferData(GL_ARRAY_BUFFER, (GLsizeiptr)(total * sizeof(float)), NULL, GL_STREAM_DRAW);
      for (int i = 0; i < s->point_set_count; i++)
        if (s->points[i].count && s->points[i].speed)
          glBufferSubData(GL_ARRAY_BUFFER, (GLintptr)(r->point_first[i] * sizeof(float)),
                          (GLsizeiptr)(s->points[i].count * sizeof(float)), s->points[i].speed);
    }
  }
  memcpy(r->pts_lo, all.lo, sizeof r->pts_lo), memcpy(r->pts_hi, all.hi, sizeof r->pts_hi);
  r->pts_rmax = all.rmax;
  return st;
}

void wf__upload_destroy(wf_render *r) {
  if (r->stage_fence) glDeleteSync(r->stage_fence);
  if (r->stage) glDeleteBuffers(1, &r->stage); /* unmaps it */
  r->stage_fence = 0, r->stage = 0, r->stage_ptr = NULL, r->stage_bytes = 0;
}
