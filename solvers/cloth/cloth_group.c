/* Contact groups (wf_cloth_group, weft/cloth.h): contact between separate cloths.
 *
 * The group runs cloth contact's stage (cloth_contact.h) once a substep over the vertices of all
 * its cloths, as if they were the pieces of one mesh: the vertices of cloth k are the group's
 * [first[k], first[k] + nv_k), its triangles and edges are re-indexed by first[k], and the
 * pieces (connected parts) of different cloths are different pieces, so every pair of cloths
 * collides, and each cloth with itself as desc.contact would. The cloths keep their own buffers,
 * integrators, colliders and pins; a substep of the group is, on the group's stream between
 * waits on the cloths' streams:
 *
 *   every cloth: its substep up to the end guess (wfc_enqueue_substep_pre)
 *   the group:   copy every cloth's start x0 and end guess x1 into the group's arrays at first[k]
 *                (plain copies: the same bits), DISP, REACH, KEYS, sort, cells, GATHER over all
 *                the group's vertices, then APPLY per cloth from the group's output into the
 *                cloth's own x1 (and springs' velocities)
 *   every cloth: the rest of its substep (XPBD's finalize: wfc_enqueue_substep_post)
 *
 * Why it is exact as within one cloth: the positions are compared as the solvers hold them,
 * relative to one origin (the group refuses cloths of different origins), and the stage is the
 * single-cloth stage on the concatenation, so its promises (no pass-through, friction,
 * determinism: every vertex gathers its pairs in the grid's sorted order and writes only
 * itself) carry over unchanged; the order of the cloths in the group fixes the numbering.
 * Deterministic and the same bits on both backends as the single-cloth stage; a group of one
 * cloth computes what that cloth's desc.contact computes, bit for bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_contact_topo.h"
#include "cloth_parts.h"
#include "coupling.h"
#include "internal/error.h"

enum {
  G_PARAMS,
  G_X0,
  G_X1,
  G_OUT,
  G_REST,
  G_TRIS,
  G_VT_START,
  G_VT,
  G_EDGES,
  G_VE_START,
  G_VE,
  G_OT_START,
  G_OT,
  G_OE_START,
  G_OE,
  G_PIECE,
  G_MAX,
  G_KEYS,
  G_VALS,
  G_KEYS_OUT,
  G_VALS_OUT,
  G_CSTART,
  G_CEND,
  G_TEMP,
  G_COUNT
};

struct wf_cloth_group {
  wf_cloth_group_desc desc;
  uint32_t n;        /* cloths */
  wf_cloth **cloths; /* n */
  wfc_part **parts;  /* n: each cloth's one partition */
  uint32_t *first;   /* n + 1: the group's first vertex of each cloth */
  uint32_t nv, nt;
  uint32_t *tris; /* the group's triangles (host: wf_cloth_group_intersections) */
  bool springs;
  int substeps;
  wf_device *dev;
  wf_stream *stream;
  uint32_t table;
  int bits;
  wfc_params params;
  wf_buffer *buf[G_COUNT];
  wf_graph *graph;  /* the captured frame, or NULL */
  uint32_t *epochs; /* n: each cloth's wfc_part_epoch when it was captured */
};

wf_cloth_group_desc wf_cloth_group_desc_default(void) {
  return (wf_cloth_group_desc){.static_friction = 0.5f, .dynamic_friction = 0.4f};
}

static void *gptr(const wf_cloth_group *g, int b) { return wf_buffer_ptr(g->buf[b]); }

static wf_status gfail(wf_status st, const char *fn, const char *what) {
  char why[768];
  snprintf(why, sizeof why, "%s", wf_last_error());
  return wf__error(st, fn, "cloth group: %s: %s", what, why);
}

#define GTRY(call, what)                                                                           \
  do {                                                                                             \
    wf_status st_ = (call);                                                                        \
    if (st_ != WF_OK) return gfail(st_, fn, what);                                                 \
  } while (0)

static wf_status make_buf(wf_cloth_group *g, const char *fn, int b, size_t bytes,
                          const void *data) {
  size_t alloc = bytes < 16 ? 16 : bytes;
  GTRY(wf_buffer_create(g->dev, alloc, WF_BUFFER_ZERO, g->stream, &g->buf[b]),
       "allocating device buffers");
  if (data && bytes) GTRY(wf_upload(g->buf[b], 0, data, bytes, g->stream), "uploading");
  return WF_OK;
}

void wf_cloth_group_destroy(wf_cloth_group *g) {
  if (!g) return;
  if (g->stream) wf_stream_synchronize(g->stream);
  if (g->graph) wf_graph_destroy(g->graph);
  for (int b = 0; b < G_COUNT; b++)
    if (g->buf[b]) wf_buffer_destroy(g->buf[b], g->stream);
  for (uint32_t k = 0; k < g->n && g->parts; k++)
    if (g->parts[k] && wfc_part_group(g->parts[k]) == g) wfc_part_set_group(g->parts[k], NULL);
  if (g->stream) wf_stream_destroy(g->stream);
  free(g->cloths), free(g->parts), free(g->first), free(g->tris), free(g->epochs);
  free(g);
}

/* Checks cloth k against cloth 0 (the group's device, integrator, substep and origin). */
static wf_status check_member(const char *fn, wf_cloth *const *cl, uint32_t k) {
  wf_cloth *c = cl[k];
  if (!c) return wf__error(WF_ERR_INVALID, fn, "cloths[%u] is NULL", k);
  if (c->ranks > 1)
    return wf__error(WF_ERR_UNSUPPORTED, fn,
                     "cloth '%s' (MPI rank %d) is split over %d MPI ranks: a contact group needs "
                     "every cloth whole on one device (create it without desc.mpi_comm; every "
                     "rank then runs it whole)",
                     c->name, c->rank, c->ranks);
  if (c->np != 1)
    return wf__error(WF_ERR_UNSUPPORTED, fn,
                     "cloth '%s' runs over %d devices: a contact group needs every cloth on one "
                     "device (create it with device_count 1, or give it desc.contact alone: a "
                     "split cloth collides with itself)",
                     c->name, c->np);
  wfc_part *p = c->parts[0].c, *p0 = cl[0]->parts[0].c;
  if (wfc_part_group(p))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s' is already in a contact group", c->name);
  for (uint32_t j = 0; j < k; j++)
    if (cl[j] == c)
      return wf__error(WF_ERR_INVALID, fn, "cloth '%s' is given twice (cloths[%u], cloths[%u])",
                       c->name, j, k);
  if (wfc_part_coupled(p))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s' is coupled to particles: a contact group cannot step it", c->name);
  const wf_cloth_desc *d = wfc_part_desc(p), *d0 = wfc_part_desc(p0);
  if (wfc_part_device(p) != wfc_part_device(p0))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s' runs on %s, cloth '%s' on %s: a contact group needs one device",
                     c->name, wf_device_name(wfc_part_device(p)), cl[0]->name,
                     wf_device_name(wfc_part_device(p0)));
  if (d->integrator != d0->integrator || d->substeps != d0->substeps || d->frame_dt != d0->frame_dt)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s' and cloth '%s' must have the same integrator, substeps and "
                     "frame_dt to collide (%d, %d, %g vs %d, %d, %g)",
                     c->name, cl[0]->name, (int)d->integrator, d->substeps, (double)d->frame_dt,
                     (int)d0->integrator, d0->substeps, (double)d0->frame_dt);
  const double *o = wfc_part_topology(p)->origin, *o0 = wfc_part_topology(p0)->origin;
  if (o[0] != o0[0] || o[1] != o0[1] || o[2] != o0[2])
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s' has origin (%g, %g, %g), cloth '%s' (%g, %g, %g): the cloths of "
                     "a contact group must share one origin (give them the same desc.origin)",
                     c->name, o[0], o[1], o[2], cl[0]->name, o0[0], o0[1], o0[2]);
  return WF_OK;
}

/* The group's topology on the host: the cloths' concatenated (rest positions, triangles,
 * vertex -> triangle lists, edges), re-indexed by first[k]. */
static int concat_topology(const wf_cloth_group *g, wfc_topology *t) {
  memset(t, 0, sizeof *t);
  uint32_t ne = 0;
  for (uint32_t k = 0; k < g->n; k++)
    ne += wfc_part_topology(g->parts[k])->ne;
  t->nv = g->nv, t->nt = g->nt, t->ne = ne;
  t->x = malloc(((size_t)g->nv + 1) * sizeof *t->x);
  t->tris = malloc(((size_t)g->nt * 3 + 1) * sizeof *t->tris);
  t->vt_start = malloc(((size_t)g->nv + 1) * sizeof *t->vt_start);
  t->vt_list = malloc(((size_t)g->nt * 3 + 1) * sizeof *t->vt_list);
  t->edges = malloc(((size_t)ne + 1) * sizeof *t->edges);
  if (!t->x || !t->tris || !t->vt_start || !t->vt_list || !t->edges) return 0;
  uint32_t tri0 = 0, e0 = 0;
  t->vt_start[0] = 0;
  for (uint32_t k = 0; k < g->n; k++) {
    const wfc_topology *s = wfc_part_topology(g->parts[k]);
    uint32_t v0 = g->first[k];
    memcpy(t->x + v0, s->x, (size_t)s->nv * sizeof *s->x);
    for (size_t q = 0; q < 3 * (size_t)s->nt; q++)
      t->tris[3 * (size_t)tri0 + q] = s->tris[q] + v0;
    /* vt_start counts list entries: cloth k's follow the earlier cloths' */
    uint32_t base = t->vt_start[v0];
    for (uint32_t v = 0; v <= s->nv; v++)
      t->vt_start[v0 + v] = base + s->vt_start[v];
    for (uint32_t q = 0; q < s->vt_start[s->nv]; q++)
      t->vt_list[base + q] = s->vt_list[q] + tri0;
    for (uint32_t e = 0; e < s->ne; e++) {
      t->edges[e0 + e] = s->edges[e];
      t->edges[e0 + e].a += v0, t->edges[e0 + e].b += v0;
    }
    tri0 += s->nt, e0 += s->ne;
  }
  return 1;
}

static void topology_free(wfc_topology *t) {
  free(t->x), free(t->tris), free(t->vt_start), free(t->vt_list), free(t->edges);
  memset(t, 0, sizeof *t);
}

/* The group's parameter block: cloth 0's (dt, inv_dt), with the contact block of the group
 * (cloth.c's params_build for desc.contact, with the largest thickness and the group's
 * friction). */
static void group_params(wf_cloth_group *g, float longest) {
  g->params = *wfc_part_params(g->parts[0]);
  float th = 0.0f;
  for (uint32_t k = 0; k < g->n; k++)
    th = fmaxf(th, wfc_part_desc(g->parts[k])->material.thickness);
  wfcc_params *cc = &g->params.contact;
  memset(cc, 0, sizeof *cc);
  cc->on = 1u;
  cc->thickness = th;
  cc->reach_min = 2.5f * th;
  cc->reach = cc->reach_min;
  cc->bound = 0.4f;
  cc->rest_skip = 2.0f * th;
  cc->edge_cap = 1.25f * longest;
  cc->mu_s = g->desc.static_friction;
  cc->mu_k = g->desc.dynamic_friction;
  int bits;
  wfc_grid_params_init(&cc->grid, (cc->reach + 2.0f * cc->edge_cap) / 0.98f, g->table, &bits);
}

static wf_status upload_all(wf_cloth_group *g, const char *fn) {
  wfc_topology t;
  wfcc_host h;
  float longest = 0.0f;
  if (!concat_topology(g, &t)) {
    topology_free(&t);
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth group: out of host memory");
  }
  if (!wfcc_host_build(&t, &h, &longest)) {
    topology_free(&t);
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth group: out of host memory");
  }
  size_t nv = g->nv, nt = g->nt, ne = h.ne;
  g->table = wfcc_grid_table(g->nv);
  wfc_grid_params gp;
  wfc_grid_params_init(&gp, 1.0f, g->table, &g->bits);
  group_params(g, longest);
  wfp_f4 *rest = malloc((nv + 1) * sizeof *rest);
  g->tris = malloc((nt * 3 + 1) * sizeof *g->tris);
  wf_status st = WF_OK;
  if (!rest || !g->tris) st = wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth group: out of memory");
  for (size_t i = 0; st == WF_OK && i < nv; i++)
    rest[i] = (wfp_f4){t.x[i][0], t.x[i][1], t.x[i][2], 0.0f};
  if (st == WF_OK) memcpy(g->tris, t.tris, nt * 3 * sizeof *g->tris);
  struct {
    int b;
    size_t bytes;
    const void *data;
  } spec[] = {{G_PARAMS, sizeof g->params, &g->params},
              {G_X0, nv * sizeof(wfp_f4), NULL},
              {G_X1, nv * sizeof(wfp_f4), NULL},
              {G_OUT, nv * sizeof(wfp_f4), NULL},
              {G_REST, nv * sizeof(wfp_f4), rest},
              {G_TRIS, nt * 12, t.tris},
              {G_VT_START, (nv + 1) * 4, t.vt_start},
              {G_VT, nt * 12, t.vt_list},
              {G_EDGES, ne * 8, h.edges},
              {G_VE_START, (nv + 1) * 4, h.ve_start},
              {G_VE, ne * 8, h.ve_list},
              {G_OT_START, (nv + 1) * 4, h.own_t_start},
              {G_OT, nt * 4, h.own_t},
              {G_OE_START, (nv + 1) * 4, h.own_e_start},
              {G_OE, ne * 4, h.own_e},
              {G_PIECE, nv * 4, h.piece},
              {G_MAX, 8, NULL},
              {G_KEYS, nv * 4, NULL},
              {G_VALS, nv * 4, NULL},
              {G_KEYS_OUT, nv * 4, NULL},
              {G_VALS_OUT, nv * 4, NULL},
              {G_CSTART, (size_t)g->table * 4, NULL},
              {G_CEND, (size_t)g->table * 4, NULL},
              {G_TEMP, wfc_grid_sort_temp_bytes(g->dev, g->nv, g->bits), NULL}};
  for (size_t k = 0; k < sizeof spec / sizeof spec[0] && st == WF_OK; k++)
    if (spec[k].bytes || spec[k].b != G_TEMP)
      st = make_buf(g, fn, spec[k].b, spec[k].bytes, spec[k].data);
  /* the uploads read host memory freed below: let them finish */
  if (st == WF_OK && wf_stream_synchronize(g->stream) != WF_OK)
    st = gfail(WF_ERR_INVALID, fn, "uploading");
  free(rest);
  wfcc_host_free(&h);
  topology_free(&t);
  return st;
}

wf_status wf_cloth_group_create(wf_cloth *const *cloths, uint32_t count,
                                const wf_cloth_group_desc *desc, wf_cloth_group **out) {
  static const char fn[] = "wf_cloth_group_create";
  if (out) *out = NULL;
  if (!cloths || !out || count == 0)
    return wf__error(WF_ERR_INVALID, fn, "cloths or out is NULL, or count is 0");
  wf_cloth_group_desc d = desc ? *desc : wf_cloth_group_desc_default();
  if (!(d.static_friction >= 0.0f) || !isfinite(d.static_friction) ||
      !(d.dynamic_friction >= 0.0f) || !isfinite(d.dynamic_friction))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth group: static_friction %g and dynamic_friction %g must be finite and "
                     ">= 0",
                     (double)d.static_friction, (double)d.dynamic_friction);
  wf_status st = WF_OK;
  for (uint32_t k = 0; k < count && st == WF_OK; k++)
    st = check_member(fn, cloths, k);
  if (st != WF_OK) return st;
  wf_cloth_group *g = calloc(1, sizeof *g);
  if (!g) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth group: out of host memory");
  g->desc = d;
  g->n = count;
  g->cloths = malloc(count * sizeof *g->cloths);
  g->parts = calloc(count, sizeof *g->parts);
  g->first = malloc((count + 1) * sizeof *g->first);
  g->epochs = calloc(count, sizeof *g->epochs);
  if (!g->cloths || !g->parts || !g->first || !g->epochs) {
    wf_cloth_group_destroy(g);
    return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth group: out of host memory");
  }
  g->first[0] = 0;
  for (uint32_t k = 0; k < count; k++) {
    g->cloths[k] = cloths[k];
    g->parts[k] = cloths[k]->parts[0].c;
    const wfc_topology *t = wfc_part_topology(g->parts[k]);
    g->first[k + 1] = g->first[k] + t->nv;
    g->nt += t->nt;
  }
  g->nv = g->first[count];
  const wf_cloth_desc *d0 = wfc_part_desc(g->parts[0]);
  g->springs = d0->integrator == WF_CLOTH_SPRINGS;
  g->substeps = d0->substeps;
  g->dev = wfc_part_device(g->parts[0]);
  if ((st = wf_stream_create(g->dev, 0, &g->stream)) != WF_OK) {
    st = gfail(st, fn, "creating its stream");
  } else {
    for (uint32_t k = 0; k < count && st == WF_OK; k++) /* the cloths' setup is enqueued */
      if (wf_stream_wait_stream(g->stream, wfc_part_stream(g->parts[k])) != WF_OK)
        st = gfail(WF_ERR_INVALID, fn, "ordering the streams");
  }
  if (st == WF_OK) st = upload_all(g, fn);
  if (st != WF_OK) {
    wf_cloth_group_destroy(g);
    return st;
  }
  for (uint32_t k = 0; k < count; k++)
    wfc_part_set_group(g->parts[k], g);
  *out = g;
  return WF_OK;
}

/* ---- stepping ------------------------------------------------------------------------------- */

static wf_status glaunch(wf_cloth_group *g, const char *fn, const wf_kernel *k, size_t n,
                         const void *args, size_t size) {
  if (!n) return WF_OK;
  GTRY(wf_launch(k, n, args, size, g->stream), k->name);
  return WF_OK;
}

/* The group stream waits for every cloth's (to), or every cloth's for the group's. */
static wf_status join(wf_cloth_group *g, const char *fn, bool to_group) {
  for (uint32_t k = 0; k < g->n; k++) {
    wf_stream *s = wfc_part_stream(g->parts[k]);
    if (s == g->stream) continue;
    GTRY(to_group ? wf_stream_wait_stream(g->stream, s) : wf_stream_wait_stream(s, g->stream),
         "ordering the streams");
  }
  return WF_OK;
}

/* The contact stage over every cloth's vertices (cloth.c's stage_contact on the concatenation). */
static wf_status group_contact(wf_cloth_group *g, const char *fn, int in) {
  uint32_t step = g->springs ? 0u : 1u;
  wf_status st;
  for (uint32_t k = 0; k < g->n; k++) {
    wf_buffer *x0, *x1, *vel;
    wfc_contact_buffers(g->parts[k], in, &x0, &x1, &vel);
    size_t off = (size_t)g->first[k] * sizeof(wfp_f4);
    size_t bytes = (size_t)(g->first[k + 1] - g->first[k]) * sizeof(wfp_f4);
    if (!bytes) continue;
    GTRY(wf_copy(g->buf[G_X0], off, x0, 0, bytes, g->stream), "gathering the start positions");
    GTRY(wf_copy(g->buf[G_X1], off, x1, 0, bytes, g->stream), "gathering the end guesses");
  }
  const wfc_params *p = gptr(g, G_PARAMS);
  wfcc_disp_args da = {.x0 = gptr(g, G_X0),
                       .x1 = gptr(g, G_X1),
                       .ve_start = gptr(g, G_VE_START),
                       .ve_list = gptr(g, G_VE),
                       .edges = gptr(g, G_EDGES),
                       .max_bits = gptr(g, G_MAX),
                       .step = step};
  if ((st = glaunch(g, fn, &wfcc_disp, g->nv, &da, sizeof da)) != WF_OK) return st;
  wfcc_reach_args ra = {.params = gptr(g, G_PARAMS), .max_bits = gptr(g, G_MAX)};
  if ((st = glaunch(g, fn, &wfcc_reach, 1, &ra, sizeof ra)) != WF_OK) return st;
  wfcc_keys_args ka = {
      .params = p, .x0 = gptr(g, G_X0), .keys = gptr(g, G_KEYS), .vals = gptr(g, G_VALS)};
  if ((st = glaunch(g, fn, &wfcc_keys, g->nv, &ka, sizeof ka)) != WF_OK) return st;
  GTRY(wfc_grid_sort(g->stream, gptr(g, G_KEYS), gptr(g, G_VALS), gptr(g, G_KEYS_OUT),
                     gptr(g, G_VALS_OUT), g->nv, g->bits, g->buf[G_TEMP] ? gptr(g, G_TEMP) : NULL,
                     g->buf[G_TEMP] ? wf_buffer_size(g->buf[G_TEMP]) : 0),
       "sorting the contact grid");
  GTRY(wfc_grid_cells(g->stream, g->buf[G_CSTART], g->buf[G_CEND], gptr(g, G_KEYS_OUT), g->nv,
                      g->table),
       "building the contact grid's cells");
  wfcc_gather_args ga = {.params = p,
                         .grid = {.params = &p->contact.grid,
                                  .cell_start = gptr(g, G_CSTART),
                                  .cell_end = gptr(g, G_CEND),
                                  .vals = gptr(g, G_VALS_OUT),
                                  .q = gptr(g, G_X0)},
                         .x0 = gptr(g, G_X0),
                         .x1 = gptr(g, G_X1),
                         .rest = gptr(g, G_REST),
                         .topo = {.tris = gptr(g, G_TRIS),
                                  .vt_start = gptr(g, G_VT_START),
                                  .vt_list = gptr(g, G_VT),
                                  .edges = gptr(g, G_EDGES),
                                  .ve_start = gptr(g, G_VE_START),
                                  .ve_list = gptr(g, G_VE),
                                  .own_t_start = gptr(g, G_OT_START),
                                  .own_t = gptr(g, G_OT),
                                  .own_e_start = gptr(g, G_OE_START),
                                  .own_e = gptr(g, G_OE),
                                  .piece = gptr(g, G_PIECE)},
                         .out = gptr(g, G_OUT),
                         .step = step};
  if ((st = glaunch(g, fn, &wfcc_gather, g->nv, &ga, sizeof ga)) != WF_OK) return st;
  for (uint32_t k = 0; k < g->n; k++) {
    wf_buffer *x0, *x1, *vel;
    wfc_contact_buffers(g->parts[k], in, &x0, &x1, &vel);
    wfcc_apply_args aa = {.params = p,
                          .out = (const wfp_f4 *)gptr(g, G_OUT) + g->first[k],
                          .x0 = wf_buffer_ptr(x0),
                          .x1 = wf_buffer_ptr(x1),
                          .vel = vel ? wf_buffer_ptr(vel) : NULL,
                          .step = step};
    if ((st = glaunch(g, fn, &wfcc_apply, g->first[k + 1] - g->first[k], &aa, sizeof aa)) != WF_OK)
      return st;
  }
  return WF_OK;
}

static wf_status group_substep(wf_cloth_group *g, const char *fn, int s) {
  int in = g->springs ? s & 1 : 1;
  wf_status st = WF_OK;
  for (uint32_t k = 0; k < g->n && st == WF_OK; k++)
    st = wfc_enqueue_substep_pre(g->parts[k], fn, in);
  if (st == WF_OK) st = join(g, fn, true);
  if (st == WF_OK) st = group_contact(g, fn, in);
  if (st == WF_OK) st = join(g, fn, false);
  for (uint32_t k = 0; k < g->n && st == WF_OK; k++)
    st = wfc_enqueue_substep_post(g->parts[k], fn);
  return st;
}

/* n substeps of every cloth; frame: they are a frame (its per-frame readbacks follow). */
static wf_status group_run(wf_cloth_group *g, const char *fn, int n, bool frame) {
  wf_status st = WF_OK;
  for (uint32_t k = 0; k < g->n && st == WF_OK; k++)
    st = wfc_enqueue_frame_begin(g->parts[k], fn, n);
  for (int s = 0; s < n && st == WF_OK; s++)
    st = group_substep(g, fn, s);
  for (uint32_t k = 0; k < g->n && st == WF_OK; k++) {
    st = wfc_enqueue_frame_end(g->parts[k], fn, n);
    if (st == WF_OK && frame) st = wfc_enqueue_readback(g->parts[k], fn);
  }
  return st;
}

/* Captures a frame into g->graph: the cloths' streams forked from the group's and joined back. */
static wf_status capture(wf_cloth_group *g, const char *fn) {
  GTRY(wf_capture_begin(g->stream), "beginning the frame capture");
  wf_status st = join(g, fn, false);
  if (st == WF_OK) st = group_run(g, fn, g->substeps, true);
  wf_status stj = join(g, fn, true); /* joined back even after a failure: the capture can end */
  if (st == WF_OK) st = stj;
  wf_graph *graph = NULL;
  wf_status st2 = wf_capture_end(g->stream, &graph);
  if (st != WF_OK) {
    if (graph) wf_graph_destroy(graph);
    return st;
  }
  if (st2 != WF_OK) return gfail(st2, fn, "ending the frame capture");
  g->graph = graph;
  for (uint32_t k = 0; k < g->n; k++)
    g->epochs[k] = wfc_part_epoch(g->parts[k]);
  return WF_OK;
}

wf_status wf_cloth_group_step_frames(wf_cloth_group *g, int frames) {
  static const char fn[] = "wf_cloth_group_step_frames";
  if (!g) return wf__error(WF_ERR_INVALID, fn, "group is NULL");
  if (frames < 0) return wf__error(WF_ERR_INVALID, fn, "frames %d must be >= 0", frames);
  wf_status st = WF_OK;
  if (g->desc.no_graph) {
    for (int f = 0; f < frames && st == WF_OK; f++)
      st = group_run(g, fn, g->substeps, true);
    return st;
  }
  if (!frames) return WF_OK;
  bool stale = false;
  for (uint32_t k = 0; k < g->n; k++)
    stale = stale || g->epochs[k] != wfc_part_epoch(g->parts[k]);
  if (g->graph && stale) { /* what it baked in changed: capture again */
    GTRY(wf_stream_synchronize(g->stream), "waiting for the group");
    wf_graph_destroy(g->graph);
    g->graph = NULL;
  }
  if ((st = join(g, fn, true)) != WF_OK) return st; /* after what the cloths have enqueued */
  if (!g->graph && (st = capture(g, fn)) != WF_OK) return st;
  for (int f = 0; f < frames; f++)
    GTRY(wf_graph_launch(g->graph, g->stream), "launching a frame");
  if ((st = join(g, fn, false)) != WF_OK) return st; /* the cloths' next work after the frames */
  for (uint32_t k = 0; k < g->n && st == WF_OK; k++)
    st = wfc_touch(g->parts[k], fn);
  return st;
}

wf_status wf_cloth_group_step_substeps(wf_cloth_group *g, int n) {
  static const char fn[] = "wf_cloth_group_step_substeps";
  if (!g) return wf__error(WF_ERR_INVALID, fn, "group is NULL");
  if (n < 0) return wf__error(WF_ERR_INVALID, fn, "substeps %d must be >= 0", n);
  return n ? group_run(g, fn, n, false) : WF_OK;
}

wf_status wf_cloth_group_intersections(wf_cloth_group *g, uint64_t *count) {
  static const char fn[] = "wf_cloth_group_intersections";
  if (count) *count = 0;
  if (!g || !count) return wf__error(WF_ERR_INVALID, fn, "group or count is NULL");
  float(*pos)[4] = malloc(((size_t)g->nv + 1) * sizeof *pos);
  if (!pos) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "out of host memory");
  wf_status st = WF_OK;
  for (uint32_t k = 0; k < g->n && st == WF_OK; k++)
    st = wf_cloth_download_local(g->cloths[k], pos + g->first[k], NULL);
  if (st == WF_OK) st = wf_cloth_intersections_count(&pos[0][0], 4, g->nv, g->tris, g->nt, count);
  free(pos);
  return st;
}
