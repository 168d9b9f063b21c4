/* Building the cloth over several devices (cloth_parts.h has the picture): the whole mesh built
 * once on the host, its vertex graph cut (partition_cut.c), every partition's vertices numbered
 * (send set, interior, ghosts), each partition's local topology and solver, and the links between
 * them with their slots' segments and index lists. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_parts.h"
#include "internal/error.h"

/* The whole cloth on the host, and scratch the build shares. */
typedef struct model {
  wfc_topology t;
  wfc_springs sp_store;
  wfc_constraints cons_store;
  const wfc_springs *sp;       /* &sp_store (mass-spring) or NULL */
  const wfc_constraints *cons; /* &cons_store (XPBD) or NULL */
  float *inv_mass;
  uint8_t *in;    /* one byte per vertex (mark_members) */
  uint32_t *ltri; /* per triangle: its local index in the partition being built, or WFC_NONE */
  /* contact: every partition's owned vertices (global ids), partition p's in its local order
   * from cat_first[p] (cloth_parts.h, "Contact"); NULL without contact */
  uint32_t *cat_gid;
  uint32_t cat_first[WFPT_MAX + 1];
} model;

static void model_free(model *m) {
  wfc_topology_free(&m->t);
  wfc_springs_free(&m->sp_store);
  wfc_constraints_free(&m->cons_store);
  free(m->inv_mass), free(m->in), free(m->ltri), free(m->cat_gid);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* ---- numbering --------------------------------------------------------------------------------
 */

/* Whether constraint c touches a vertex partition p owns. */
static bool cons_mine(const wf_cloth *cs, int p, const wfc_constraint *c) {
  int m = c->kind == WFC_BEND ? 4 : 2;
  for (int a = 0; a < m; a++)
    if (cs->owner[c->v[a]] == p) return true;
  return false;
}

/* Marks in md->in (one byte per global vertex) every vertex partition p needs: its owned ones
 * and everything they read. Returns the number marked. */
static uint32_t mark_members(const wf_cloth *cs, int p, const model *md) {
  const wfc_topology *t = &md->t;
  uint32_t nv = t->nv;
  uint8_t *in = md->in;
  memset(in, 0, nv);
  for (uint32_t g = 0; g < nv; g++) {
    if (cs->owner[g] != p) continue;
    in[g] = 1;
    for (uint32_t k = t->vt_start[g]; k < t->vt_start[g + 1]; k++) {
      const uint32_t *q = t->tris + 3 * (size_t)t->vt_list[k];
      in[q[0]] = in[q[1]] = in[q[2]] = 1;
    }
    if (md->sp)
      for (uint32_t k = md->sp->adj_start[g]; k < md->sp->adj_start[g + 1]; k++)
        in[md->sp->adj[k].other_kind & WFC_LINK_INDEX_MASK] = 1;
  }
  if (md->cons)
    for (uint32_t k = 0; k < md->cons->count; k++) {
      const wfc_constraint *c = &md->cons->cons[k];
      if (!cons_mine(cs, p, c)) continue;
      for (int a = 0; a < (c->kind == WFC_BEND ? 4 : 2); a++)
        in[c->v[a]] = 1;
    }
  uint32_t n = 0;
  for (uint32_t g = 0; g < nv; g++)
    n += in[g];
  return n;
}

/* ghost_in for every vertex: each partition's members that it does not own. */
static void mark_ghosts(wf_cloth *cs, const model *md) {
  for (int p = 0; p < cs->np; p++) {
    mark_members(cs, p, md);
    for (uint32_t g = 0; g < md->t.nv; g++)
      if (md->in[g] && cs->owner[g] != p) cs->ghost_in[g] |= 1u << p;
  }
}

/* The position of mask m in the binary reflected Gray code (its inverse). */
static uint32_t gray_rank(uint32_t m) {
  m ^= m >> 1, m ^= m >> 2, m ^= m >> 4, m ^= m >> 8, m ^= m >> 16;
  return m;
}

/* Partition p's owned vertices, numbered (lid, n_send, n_owned, send_gid): the send set first,
 * then the interior. The send set is grouped by the set of partitions that hold the vertex as a
 * ghost, the groups in Gray-code order of that set (neighbouring groups differ in one partition,
 * so each receiver's vertices come in few runs); the interior and each group in global order. */
static wf_status number_owned(const char *fn, wf_cloth *cs, int p) {
  uint32_t nv = cs->nv;
  wfc_piece *pt = &cs->parts[p];
  uint32_t *lid = cs->lid + (size_t)p * nv, ns = 0, n;
  for (uint32_t g = 0; g < nv; g++)
    ns += cs->owner[g] == p && cs->ghost_in[g];
  uint64_t *key = malloc(((size_t)ns + 1) * sizeof *key);
  pt->send_gid = malloc(((size_t)ns + 1) * sizeof *pt->send_gid);
  if (!key || !pt->send_gid) {
    free(key);
    return wfc_oom(fn, cs->name);
  }
  ns = 0;
  for (uint32_t g = 0; g < nv; g++)
    if (cs->owner[g] == p && cs->ghost_in[g])
      key[ns++] = (uint64_t)gray_rank(cs->ghost_in[g]) << 32 | g;
  qsort(key, ns, sizeof *key, cmp_u64);
  for (uint32_t i = 0; i < ns; i++) {
    uint32_t g = (uint32_t)key[i];
    lid[g] = i;
    pt->send_gid[i] = g;
  }
  free(key);
  n = ns;
  for (uint32_t g = 0; g < nv; g++)
    if (cs->owner[g] == p && !cs->ghost_in[g]) lid[g] = n++;
  pt->n_send = ns, pt->n_owned = n;
  return WF_OK;
}

/* Partition p's local numbering (gid, lid, n_local): the owned vertices as number_owned put
 * them; then the ghosts, by owner, each owner's in its own numbering: a link's ghosts are one
 * range, in the order of its sender's send set. */
static wf_status number_local(const char *fn, wf_cloth *cs, int p, const model *md) {
  wfc_piece *pt = &cs->parts[p];
  uint32_t nv = md->t.nv, *lid = cs->lid + (size_t)p * nv;
  uint32_t m = mark_members(cs, p, md);
  pt->gid = malloc((size_t)m * sizeof *pt->gid);
  uint64_t *key = malloc(((size_t)(m - pt->n_owned) + 1) * sizeof *key);
  if (!pt->gid || !key) {
    free(key);
    return wfc_oom(fn, cs->name);
  }
  uint32_t ng = 0;
  for (uint32_t g = 0; g < nv; g++) {
    if (!md->in[g]) continue;
    int q = cs->owner[g];
    if (q == p)
      pt->gid[lid[g]] = g;
    else
      key[ng++] = (uint64_t)q << 32 | cs->lid[(size_t)q * nv + g];
  }
  qsort(key, ng, sizeof *key, cmp_u64);
  for (uint32_t i = 0; i < ng; i++) {
    int q = (int)(key[i] >> 32);
    uint32_t g = cs->parts[q].send_gid[(uint32_t)key[i]];
    lid[g] = pt->n_owned + i;
    pt->gid[pt->n_owned + i] = g;
  }
  free(key);
  pt->n_local = m;
  return WF_OK;
}

/* Contact: the concatenation of every partition's owned vertices (md->cat_gid, cat_first), each
 * partition's in its local order: the contact copies' layout on every device. */
static wf_status concat_owned(const char *fn, wf_cloth *cs, model *md) {
  md->cat_first[0] = 0;
  for (int p = 0; p < cs->np; p++)
    md->cat_first[p + 1] = md->cat_first[p] + cs->parts[p].n_owned;
  if (!cs->desc.contact) return WF_OK;
  if (!(md->cat_gid = malloc(((size_t)cs->nv + 1) * sizeof *md->cat_gid)))
    return wfc_oom(fn, cs->name);
  for (uint32_t g = 0; g < cs->nv; g++) {
    int q = cs->owner[g];
    md->cat_gid[md->cat_first[q] + cs->lid[(size_t)q * cs->nv + g]] = g;
  }
  return WF_OK;
}

/* ---- a partition's local model ----------------------------------------------------------------
 */

/* Positions and masses of partition p's vertices; its triangles (those with an owned corner, in
 * global order) and each owned vertex's triangle list, in global order. */
static wf_status local_topology(const char *fn, wf_cloth *cs, int p, const model *md,
                                wfc_topology *lt, float *lmass) {
  const wfc_topology *t = &md->t;
  const wfc_piece *pt = &cs->parts[p];
  const uint32_t *lid = cs->lid + (size_t)p * t->nv;
  uint32_t m = pt->n_local, nt = 0, *ltri = md->ltri;
  lt->nv = m;
  memcpy(lt->origin, t->origin, sizeof lt->origin); /* one origin for every partition */
  lt->x = malloc((size_t)m * sizeof *lt->x);
  lt->vt_start = calloc((size_t)m + 1, sizeof *lt->vt_start);
  if (!lt->x || !lt->vt_start) return wfc_oom(fn, cs->name);
  for (uint32_t i = 0; i < m; i++) {
    memcpy(lt->x[i], t->x[pt->gid[i]], sizeof lt->x[i]);
    lmass[i] = md->inv_mass[pt->gid[i]];
  }
  for (uint32_t k = 0; k < t->nt; k++) {
    const uint32_t *q = t->tris + 3 * (size_t)k;
    bool mine = cs->owner[q[0]] == p || cs->owner[q[1]] == p || cs->owner[q[2]] == p;
    ltri[k] = mine ? nt++ : WFC_NONE;
  }
  lt->nt = nt;
  lt->tris = malloc(((size_t)nt * 3 + 1) * sizeof *lt->tris);
  /* the cloth uploads 3 entries a triangle (ghosts list none, so the tail stays zero) */
  lt->vt_list = calloc((size_t)nt * 3 + 1, sizeof *lt->vt_list);
  if (!lt->tris || !lt->vt_list) return wfc_oom(fn, cs->name);
  for (uint32_t k = 0; k < t->nt; k++)
    if (ltri[k] != WFC_NONE)
      for (int c = 0; c < 3; c++)
        lt->tris[3 * (size_t)ltri[k] + c] = lid[t->tris[3 * (size_t)k + c]];
  size_t nvt = 0;
  for (uint32_t i = 0; i < m; i++) {
    uint32_t g = pt->gid[i];
    if (i < pt->n_owned)
      for (uint32_t k = t->vt_start[g]; k < t->vt_start[g + 1]; k++)
        lt->vt_list[nvt++] = ltri[t->vt_list[k]];
    lt->vt_start[i + 1] = (uint32_t)nvt;
  }
  return WF_OK;
}

/* Each owned vertex's CSR spring list, re-indexed; ghosts have none. */
static wf_status local_springs(const char *fn, wf_cloth *cs, int p, const wfc_springs *sp,
                               wfc_springs *ls) {
  const wfc_piece *pt = &cs->parts[p];
  const uint32_t *lid = cs->lid + (size_t)p * cs->nv;
  size_t links = 0;
  for (uint32_t i = 0; i < pt->n_owned; i++)
    links += sp->adj_start[pt->gid[i] + 1] - sp->adj_start[pt->gid[i]];
  ls->count = (uint32_t)((links + 1) / 2);
  ls->adj_start = calloc((size_t)pt->n_local + 1, sizeof *ls->adj_start);
  ls->adj = calloc((size_t)ls->count * 2 + 1, sizeof *ls->adj);
  if (!ls->adj_start || !ls->adj) return wfc_oom(fn, cs->name);
  links = 0;
  for (uint32_t i = 0; i < pt->n_local; i++) {
    uint32_t g = pt->gid[i];
    if (i < pt->n_owned)
      for (uint32_t k = sp->adj_start[g]; k < sp->adj_start[g + 1]; k++) {
        wfc_link l = sp->adj[k];
        uint32_t j = lid[l.other_kind & WFC_LINK_INDEX_MASK];
        ls->adj[links++] = (wfc_link){j | (l.other_kind & ~WFC_LINK_INDEX_MASK), l.rest};
      }
    ls->adj_start[i + 1] = (uint32_t)links;
  }
  return WF_OK;
}

/* The constraints touching an owned vertex, by global colour, in global order, re-indexed. */
static wf_status local_constraints(const char *fn, wf_cloth *cs, int p, const wfc_constraints *cons,
                                   wfc_constraints *lc) {
  const uint32_t *lid = cs->lid + (size_t)p * cs->nv;
  lc->colours = cons->colours;
  lc->colour_start = calloc((size_t)cons->colours + 1, sizeof *lc->colour_start);
  lc->cons = malloc(((size_t)cons->count + 1) * sizeof *lc->cons);
  if (!lc->colour_start || !lc->cons) return wfc_oom(fn, cs->name);
  uint32_t k = 0;
  for (uint32_t q = 0; q < cons->colours; q++) {
    for (uint32_t s = cons->colour_start[q]; s < cons->colour_start[q + 1]; s++) {
      wfc_constraint c = cons->cons[s];
      if (!cons_mine(cs, p, &c)) continue;
      for (int a = 0; a < (c.kind == WFC_BEND ? 4 : 2); a++)
        c.v[a] = lid[c.v[a]];
      lc->cons[k++] = c;
    }
    lc->colour_start[q + 1] = k;
  }
  lc->count = k;
  return WF_OK;
}

/* Partition p's local model and solver (number_local first). */
static wf_status build_part(const char *fn, wf_cloth *cs, int p, const model *md) {
  wfc_piece *pt = &cs->parts[p];
  wf_status st = WF_OK;
  wfc_topology lt;
  memset(&lt, 0, sizeof lt);
  wfc_springs ls = {0};
  wfc_constraints lc = {0};
  float *lmass = malloc(((size_t)pt->n_local + 1) * sizeof *lmass);
  st = lmass ? local_topology(fn, cs, p, md, &lt, lmass) : wfc_oom(fn, cs->name);
  if (st == WF_OK && md->sp) st = local_springs(fn, cs, p, md->sp, &ls);
  if (st == WF_OK && md->cons) st = local_constraints(fn, cs, p, md->cons, &lc);
  if (st == WF_OK) {
    wf_cloth_desc d = cs->desc;
    d.stream = NULL;
    wfc_local local = {.n_update = pt->n_owned,
                       .inv_mass = lmass,
                       .springs = md->sp ? &ls : NULL,
                       .cons = md->cons ? &lc : NULL,
                       .spacing = wfc_mesh_spacing(&md->t),
                       .grid = md->t.grid[0] > 0};
    if (cs->desc.contact) /* the whole cloth's contact stage (cloth_parts.h, "Contact") */
      local.whole = &md->t, local.cat_gid = md->cat_gid, local.cat_first = md->cat_first[p];
    st = wfc_cloth_create_local(fn, pt->dev, &d, &lt, &local, &pt->c); /* takes lt */
  }
  wfc_topology_free(&lt);
  wfc_springs_free(&ls);
  wfc_constraints_free(&lc);
  free(lmass);
  return st;
}

/* ---- links ------------------------------------------------------------------------------------
 */

/* The ghosts of partition p that a colour's pass leaves stale: those touched by a constraint of
 * the colour that p does not project (its owner does). Ghosts touched by one that p projects
 * get the owner's bits anyway; ghosts no constraint of the colour touches keep them. As CSR by
 * colour (global ids): list[start[q] .. start[q + 1]). Each vertex is in a colour at most once. */
static wf_status stale_ghosts(const char *fn, const wf_cloth *cs, int p,
                              const wfc_constraints *cons, uint32_t **start_out,
                              uint32_t **list_out) {
  uint32_t colours = cons->colours, *lid = cs->lid + (size_t)p * cs->nv;
  uint32_t *start = calloc((size_t)colours + 1, sizeof *start);
  uint32_t *list = NULL;
  if (!start) return wfc_oom(fn, cs->name);
  for (int pass = 0; pass < 2; pass++) {
    uint32_t n = 0;
    for (uint32_t q = 0; q < colours; q++) {
      if (pass == 1) start[q] = n;
      for (uint32_t k = cons->colour_start[q]; k < cons->colour_start[q + 1]; k++) {
        const wfc_constraint *c = &cons->cons[k];
        if (cons_mine(cs, p, c)) continue;
        for (int a = 0; a < (c->kind == WFC_BEND ? 4 : 2); a++)
          if (lid[c->v[a]] != WFC_NONE && cs->owner[c->v[a]] != p) {
            if (pass == 1) list[n] = c->v[a];
            n++;
          }
      }
    }
    if (pass == 0 && !(list = malloc(((size_t)n + 1) * sizeof *list))) {
      free(start);
      return wfc_oom(fn, cs->name);
    }
    if (pass == 1) start[colours] = n;
  }
  *start_out = start, *list_out = list;
  return WF_OK;
}

/* A view of partition p's state buffer w (WFC_BUF_*) over vertices [first, first + n), or NULL
 * where the cloth has no such buffer (cloth_parts.h: why views). */
static wf_status state_view(wf_cloth *cs, const char *fn, int p, int w, uint32_t first, uint32_t n,
                            wf_buffer **out) {
  *out = NULL;
  if (!cs->parts[p].c) return WF_OK; /* another MPI rank's: its side of the segments is there */
  wf_buffer *b = wfc_buffer(cs->parts[p].c, w);
  if (!b) return WF_OK;
  wf_status st = wf_buffer_wrap(cs->parts[p].dev, (char *)wf_buffer_ptr(b) + (size_t)first * 16,
                                (size_t)n * 16, out);
  return st == WF_OK ? WF_OK : wfc_fail(cs, fn, st, "making a view of the state");
}

/* The ghost slots of link l (q -> p) whose sources are q-local src[0..m) (p's ghosts
 * [first, first + m), in q's send-set order): per run of consecutive sources one segment per
 * buffer of the slot, from q's send set straight into p's ghost range. Only the slots the
 * integrator exchanges are filled. */
static wf_status ghost_slots(wf_cloth *cs, const char *fn, int l, const uint32_t *src, uint32_t m) {
  static const int bufs[3][2] = {[WFC_SLOT_V1] = {WFC_BUF_POS1, WFC_BUF_VEL1},
                                 [WFC_SLOT_V0] = {WFC_BUF_POS0, WFC_BUF_VEL0},
                                 [WFC_SLOT_P1] = {WFC_BUF_POS1, -1}};
  wfpt_link *k = &cs->set->links[l];
  wfc_halo_link *cl = &cs->links[l];
  const wfc_piece *from = &cs->parts[k->from];
  bool springs = cs->desc.integrator == WF_CLOTH_SPRINGS;
  wf_status st = WF_OK;
  for (int w = 0; w < 4 && st == WF_OK; w++)
    st = state_view(cs, fn, k->to, w, cl->first, cl->n, &cl->ghost[w]);
  for (int s = 0; s < 3 && st == WF_OK; s++) {
    if (s == (springs ? WFC_SLOT_P1 : WFC_SLOT_V1)) continue;
    for (uint32_t i = 0, j; i < m && st == WF_OK; i = j) {
      for (j = i + 1; j < m && src[j] == src[j - 1] + 1;)
        j++;
      for (int h = 0; h < 2 && st == WF_OK; h++) {
        int w = bufs[s][h];
        if (w >= 0)
          st = wfpt_slot_add(cs->set, k, s, cl->ghost[w], (size_t)i * 16, from->sent[w],
                             (size_t)src[i] * 16, (size_t)(j - i) * 16);
      }
    }
  }
  return st;
}

/* The colour slots of link l: index lists (from-local sources, to-local ghost slots) of the
 * stale ghosts p takes from q after each colour's pass, on the devices, and per colour one
 * segment from the link's staging send buffer into its recv buffer. */
static wf_status colour_slots(wf_cloth *cs, const char *fn, int l, uint32_t colours,
                              const uint32_t *cstart, const uint32_t *clist, uint32_t *src,
                              uint32_t *dst) {
  wfpt_link *k = &cs->set->links[l];
  wfc_halo_link *cl = &cs->links[l];
  int q = k->from, p = k->to;
  const uint32_t *lq = cs->lid + (size_t)q * cs->nv, *lp = cs->lid + (size_t)p * cs->nv;
  if (!(cl->off = calloc((size_t)colours + 1, sizeof *cl->off))) return wfc_oom(fn, cs->name);
  uint32_t m = 0;
  for (uint32_t c = 0; c < colours; c++) {
    cl->off[c] = m;
    for (uint32_t e = cstart[c]; e < cstart[c + 1]; e++)
      if (cs->owner[clist[e]] == q) src[m] = lq[clist[e]], dst[m++] = lp[clist[e]];
  }
  cl->off[colours] = m;
  if (!m) return WF_OK; /* no colour slot */
  wf_stream *sq = wfc_stream_of(cs, q), *sp = wfc_stream_of(cs, p);
  wf_status st = wfpt_link_reserve(cs->set, k, (size_t)cl->n * 32);
  if (st != WF_OK) return st;
  /* over MPI ranks each end makes its own list (the other rank's end has none here) */
  if ((wfc_mine(cs, q) &&
       (st = wf_buffer_create(cs->parts[q].dev, (size_t)m * 4, 0, sq, &cl->src_idx)) != WF_OK) ||
      (wfc_mine(cs, p) &&
       (st = wf_buffer_create(cs->parts[p].dev, (size_t)m * 4, 0, sp, &cl->dst_idx)) != WF_OK))
    return wfc_fail(cs, fn, st, "allocating halo index lists");
  if ((cl->src_idx && (st = wf_upload(cl->src_idx, 0, src, (size_t)m * 4, sq)) != WF_OK) ||
      (cl->dst_idx && (st = wf_upload(cl->dst_idx, 0, dst, (size_t)m * 4, sp)) != WF_OK))
    return wfc_fail(cs, fn, st, "uploading halo index lists");
  for (uint32_t c = 0; c < colours && st == WF_OK; c++)
    if (cl->off[c + 1] > cl->off[c])
      st = wfpt_slot_add(cs->set, k, WFC_SLOT_COLOUR0 + (int)c, k->recv, 0, k->send, 0,
                         (size_t)(cl->off[c + 1] - cl->off[c]) * 16);
  return st;
}

/* Contact: link l's slots CC0 and CC1, the sender's owned POS0 and POS1 into the receiver's
 * contact copies (wfc_contact_cat) at the sender's place in the concatenation, cat_first: CC0
 * (XPBD, and mass-spring substeps from half 0) x0 = POS0, x1 = POS1; CC1 (mass-spring from half
 * 1) x0 = POS1, x1 = POS0. */
static wf_status contact_slots(wf_cloth *cs, const char *fn, int l, uint32_t cat_first) {
  wfpt_link *k = &cs->set->links[l];
  wfc_halo_link *cl = &cs->links[l];
  const wfc_piece *from = &cs->parts[k->from];
  bool springs = cs->desc.integrator == WF_CLOTH_SPRINGS;
  size_t bytes = (size_t)from->n_owned * 16;
  wf_status st = WF_OK;
  for (int w = 0; w < 2 && st == WF_OK && wfc_mine(cs, k->to); w++) {
    char *cat = wf_buffer_ptr(wfc_contact_cat(cs->parts[k->to].c, w));
    st = wf_buffer_wrap(cs->parts[k->to].dev, cat + (size_t)cat_first * 16, bytes, &cl->cat[w]);
    if (st != WF_OK) return wfc_fail(cs, fn, st, "making a view of the contact copies");
  }
  for (int w = 0; w < 2 && st == WF_OK; w++) {
    st = wfpt_slot_add(cs->set, k, WFC_SLOT_CC0, cl->cat[w], 0, from->owned[w], 0, bytes);
    if (st == WF_OK && springs)
      st = wfpt_slot_add(cs->set, k, WFC_SLOT_CC1, cl->cat[w], 0, from->owned[1 - w], 0, bytes);
  }
  return st;
}

/* The links into partition p, by sender, with their slots; src, dst: room for p's ghosts and
 * stale-ghost entries. */
static wf_status links_into(wf_cloth *cs, const char *fn, int p, const model *md, uint32_t *src,
                            uint32_t *dst, const uint32_t *cstart, const uint32_t *clist) {
  const wfc_constraints *cons = md->cons;
  const wfc_piece *pt = &cs->parts[p];
  wf_status st = WF_OK;
  for (int q = 0; q < cs->np && st == WF_OK; q++) {
    const uint32_t *lq = cs->lid + (size_t)q * cs->nv;
    uint32_t m = 0, first = WFC_NONE;
    for (uint32_t i = pt->n_owned; i < pt->n_local; i++)
      if (cs->owner[pt->gid[i]] == q) {
        src[m++] = lq[pt->gid[i]];
        if (first == WFC_NONE) first = i; /* number_local put them in one range */
      }
    /* contact: every other partition sends its owned vertices, ghosts or not */
    if (q == p || (!m && !cs->desc.contact)) continue;
    wfpt_link *k = NULL;
    uint32_t colours = cons ? cons->colours : 0;
    if ((st = wfpt_link_add(cs->set, q, p, WFC_SLOT_COLOUR0 + (int)colours, &k)) != WF_OK) break;
    int l = cs->set->n_links - 1;
    cs->links[l].n = m, cs->links[l].first = first;
    if (m) st = ghost_slots(cs, fn, l, src, m);
    if (st == WF_OK && cons) st = colour_slots(cs, fn, l, colours, cstart, clist, src, dst);
    if (st == WF_OK && cs->desc.contact) st = contact_slots(cs, fn, l, md->cat_first[q]);
  }
  return st;
}

/* The halo links (q -> p for every ghost of p owned by q), in the order: receiver, then
 * sender. */
static wf_status build_links(const char *fn, wf_cloth *cs, const model *md) {
  const wfc_constraints *cons = md->cons;
  wf_status st = WF_OK;
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    for (int w = 0; w < 4 && st == WF_OK && cs->parts[p].n_send; w++)
      st = state_view(cs, fn, p, w, 0, cs->parts[p].n_send, &cs->parts[p].sent[w]);
  for (int p = 0; p < cs->np && st == WF_OK && cs->desc.contact; p++)
    for (int w = 0; w < 2 && st == WF_OK; w++)
      st = state_view(cs, fn, p, w ? WFC_BUF_POS1 : WFC_BUF_POS0, 0, cs->parts[p].n_owned,
                      &cs->parts[p].owned[w]);
  if (st != WF_OK) return st;
  if (!(cs->links = calloc((size_t)cs->np * (size_t)cs->np, sizeof *cs->links)))
    return wfc_oom(fn, cs->name);
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    const wfc_piece *pt = &cs->parts[p];
    uint32_t *cstart = NULL, *clist = NULL;
    if (cons && (st = stale_ghosts(fn, cs, p, cons, &cstart, &clist)) != WF_OK) break;
    size_t cap = (size_t)pt->n_local + (cons ? cstart[cons->colours] : 0) + 1;
    uint32_t *src = malloc(cap * 4), *dst = malloc(cap * 4);
    st = src && dst ? links_into(cs, fn, p, md, src, dst, cstart, clist) : wfc_oom(fn, cs->name);
    free(src), free(dst), free(cstart), free(clist);
  }
  return st;
}

/* ---- the whole cloth --------------------------------------------------------------------------
 */

/* Partition p's owned rows' global ids on its device (wf_cloth_partition_view, the gather). */
static wf_status upload_ids(const char *fn, wf_cloth *cs, int p) {
  wfc_piece *pt = &cs->parts[p];
  if (!pt->c) return WF_OK;
  size_t bytes = (size_t)pt->n_owned * sizeof *pt->gid;
  wf_status st = wf_buffer_create(pt->dev, bytes ? bytes : 4, 0, wfc_stream_of(cs, p), &pt->ids);
  if (st == WF_OK && bytes) st = wf_upload(pt->ids, 0, pt->gid, bytes, wfc_stream_of(cs, p));
  return st == WF_OK ? WF_OK : wfc_fail(cs, fn, st, "uploading a partition's ids");
}

/* The whole cloth's triangles and counts (wf_cloth_triangles, wf_cloth_info_get). */
static wf_status whole_counts(const char *fn, wf_cloth *cs, const model *md) {
  cs->nt = md->t.nt;
  cs->tris = malloc(((size_t)md->t.nt * 3 + 1) * sizeof *cs->tris);
  if (!cs->tris) return wfc_oom(fn, cs->name);
  memcpy(cs->tris, md->t.tris, (size_t)md->t.nt * 3 * sizeof *cs->tris);
  cs->springs = md->sp ? md->sp->count : 0;
  cs->constraints = md->cons ? md->cons->count : 0;
  cs->colours = md->cons ? md->cons->colours : 0;
  return WF_OK;
}

/* Partitions, exchanges per frame and the bytes they move (one substep's exchanges, as halo.c
 * makes them). */
static void fill_info(wf_cloth *cs) {
  wf_cloth_info *in = &cs->info;
  in->partitions = cs->np;
  in->vertices = cs->nv;
  in->links = (uint32_t)cs->set->n_links;
  int lead = cs->set->lead;
  if (cs->set->mpi) in->mpi_halo = cs->set->direct[lead] ? WF_MPI_HALO_DIRECT : WF_MPI_HALO_STAGED;
  for (int p = 0; p < cs->np; p++) {
    in->owned[p] = cs->parts[p].n_owned;
    in->ghosts[p] = cs->parts[p].n_local - cs->parts[p].n_owned;
  }
  uint64_t count = 0, bytes = 0, b;
#define ADD(slot) (b = wfpt_slot_bytes(cs->set, (slot)), count += b > 0, bytes += b)
  if (cs->desc.contact) ADD(WFC_SLOT_CC0); /* springs: CC0 or CC1, the same bytes */
  if (cs->desc.integrator == WF_CLOTH_SPRINGS) {
    ADD(WFC_SLOT_V1);
  } else {
    uint32_t colours = cs->colours;
    ADD(WFC_SLOT_P1);
    for (int it = 0; it < cs->desc.iterations; it++)
      for (uint32_t q = 0; q < colours; q++)
        if (!(it == cs->desc.iterations - 1 && q == colours - 1)) ADD(WFC_SLOT_COLOUR0 + (int)q);
    ADD(WFC_SLOT_V0);
  }
#undef ADD
  in->exchanges_per_frame = (uint32_t)(count * (uint64_t)cs->desc.substeps);
  in->halo_bytes_per_frame = bytes * (uint64_t)cs->desc.substeps;
}

/* The settings a cloth over several devices refuses, with the METIS defaults filled in. */
static wf_status check_parts_desc(const char *fn, wf_device *const *devices, int n, int rank,
                                  int ranks, const wf_cloth_desc *desc, wf_cloth_desc *sd) {
  const char *name = desc->name ? desc->name : "cloth";
  *sd = *desc;
  if (sd->seed == 0) sd->seed = 1;
  if (sd->imbalance == 0.0f) sd->imbalance = 0.03f;
  int first = -1; /* over MPI ranks only this rank's partitions' devices are read */
  for (int i = 0; i < n; i++) {
    if (ranks > 1 && wfpt_rank_of(i, n, ranks) != rank) continue;
    if (!devices[i]) return wf__error(WF_ERR_INVALID, fn, "cloth '%s': device %d is NULL", name, i);
    if (first < 0) first = i;
    if (wf_device_is_cuda(devices[i]) != wf_device_is_cuda(devices[first]))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': devices '%s' and '%s' are of different kinds (CUDA "
                       "and CPU): one frame graph cannot span both",
                       name, wf_device_name(devices[first]), wf_device_name(devices[i]));
  }
  if (desc->self_collision)
    return wf__error(WF_ERR_UNSUPPORTED, fn,
                     "cloth '%s': self_collision is not supported across devices (its "
                     "vertex grid spans the whole cloth): run it on one device",
                     name);
  if (!(sd->imbalance > 0.0f) || !isfinite(sd->imbalance))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': imbalance %g must be > 0", name,
                     (double)sd->imbalance);
  return wfc_check_desc(fn, desc, name);
}

/* The whole cloth on the host, built and checked as one wfc_part builds it, and the cloth's
 * per-vertex arrays. */
static wf_status build_model(const char *fn, wf_cloth *cs, const wf_cloth_grid *grid,
                             const wf_cloth_mesh_desc *mesh, model *md) {
  const char *name = cs->name;
  wf_status st = grid ? wfc_grid_build(fn, name, grid, wfc_desc_origin(&cs->desc), &md->t)
                      : wfc_mesh_build(fn, name, mesh, wfc_desc_origin(&cs->desc), &md->t);
  if (st != WF_OK) return st;
  if ((st = wfc_topology_finish(fn, name, &md->t)) != WF_OK) return st;
  uint32_t nv = md->t.nv;
  cs->nv = nv;
  cs->grid[0] = md->t.grid[0], cs->grid[1] = md->t.grid[1];
  md->inv_mass = malloc((size_t)nv * sizeof *md->inv_mass);
  md->in = malloc(nv);
  md->ltri = malloc(((size_t)md->t.nt + 1) * sizeof *md->ltri);
  cs->rest = malloc((size_t)nv * sizeof *cs->rest);
  cs->owner = malloc(nv);
  cs->ghost_in = calloc(nv, sizeof *cs->ghost_in);
  cs->lid = malloc((size_t)cs->np * nv * sizeof *cs->lid);
  cs->pinned = calloc(nv, 1);
  if (!md->inv_mass || !md->in || !md->ltri || !cs->rest || !cs->owner || !cs->ghost_in ||
      !cs->lid || !cs->pinned)
    return wfc_oom(fn, name);
  memcpy(cs->rest, md->t.x, (size_t)nv * sizeof *cs->rest);
  memcpy(cs->origin, md->t.origin, sizeof cs->origin);
  memset(cs->lid, 0xff, (size_t)cs->np * nv * sizeof *cs->lid);
  if ((st = wfc_inverse_masses(fn, name, &md->t, &cs->desc.material, md->inv_mass)) != WF_OK)
    return st;
  if (cs->desc.integrator == WF_CLOTH_SPRINGS) {
    md->sp = &md->sp_store;
    if ((st = wfc_springs_build(fn, name, &md->t, &md->sp_store)) != WF_OK) return st;
    wf_cloth_stability stab;
    wfc_stability_compute(&cs->desc, &md->t, md->sp, md->inv_mass, wfc_mesh_spacing(&md->t),
                          md->t.grid[0] > 0, &stab);
    wfc_stability_warn(name, &cs->desc, &stab);
    return WF_OK;
  }
  md->cons = &md->cons_store;
  return wfc_constraints_build(fn, name, &md->t, &md->cons_store);
}

/* The partitions' solvers, whether their devices reach each other, and their set. */
static wf_status build_parts(const char *fn, wf_cloth *cs, wf_device *const *devices,
                             const model *md) {
  wf_status st = WF_OK;
  cs->info.peer = true;
  /* every rank numbers every partition (the links and the gathers need the others' numbering);
   * each builds the solvers of its own */
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    st = number_local(fn, cs, p, md);
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    if (!wfc_mine(cs, p)) continue;
    cs->parts[p].dev = devices[p];
    st = build_part(fn, cs, p, md);
    for (int q = 0; q < p; q++)
      if (wfc_mine(cs, q) && devices[q] != devices[p] &&
          (!wf_device_can_access_peer(devices[p], devices[q]) ||
           !wf_device_can_access_peer(devices[q], devices[p])))
        cs->info.peer = false;
  }
  if (st != WF_OK) return st;
  char what[96];
  snprintf(what, sizeof what, "cloth '%s'", cs->name);
  wf_stream *streams[WFPT_MAX];
  wf_device *devs[WFPT_MAX];
  for (int p = 0; p < cs->np; p++)
    streams[p] = wfc_stream_of(cs, p), devs[p] = cs->parts[p].dev;
  wfpt_set_desc sd = {.what = what,
                      .n = cs->np,
                      .devices = devs,
                      .streams = streams,
                      .mpi_comm = cs->desc.mpi_comm,
                      .mpi_halo = cs->desc.mpi_halo};
  return wfpt_set_create(&sd, &cs->set);
}

wf_status wfc_create_parts(const char *fn, wf_device *const *devices, const wf_cloth_desc *desc,
                           const wf_cloth_grid *grid, const wf_cloth_mesh_desc *mesh,
                           wf_cloth *cs) {
  int n = cs->np;
  wf_cloth_desc sd;
  wf_status st = WF_OK;
  cs->rank = 0, cs->ranks = 1;
  if (desc->mpi_comm && (st = wfpt_comm_size(desc->mpi_comm, &cs->ranks, &cs->rank)) != WF_OK)
    return st;
  if (cs->ranks > n)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': %d partitions over %d MPI ranks: every rank needs one (give "
                     "device_count >= the number of ranks)",
                     cs->name, n, cs->ranks);
  if ((st = check_parts_desc(fn, devices, n, cs->rank, cs->ranks, desc, &sd)) != WF_OK) return st;
  cs->desc.stream = NULL;
  model md;
  memset(&md, 0, sizeof md);
  st = build_model(fn, cs, grid, mesh, &md);
  if (st == WF_OK) st = wfc_cut(fn, cs, &sd, &md.t, md.sp, md.cons);
  if (st == WF_OK && cs->ranks > 1) st = wfc_ranks_cut(cs, fn);
  if (st == WF_OK) mark_ghosts(cs, &md);
  for (int p = 0; p < n && st == WF_OK; p++)
    st = number_owned(fn, cs, p);
  if (st == WF_OK) st = concat_owned(fn, cs, &md);
  if (st == WF_OK) st = build_parts(fn, cs, devices, &md);
  if (st == WF_OK) st = build_links(fn, cs, &md);
  for (int p = 0; p < n && st == WF_OK; p++)
    if (cs->parts[p].c && (st = wf_stream_synchronize(wfc_stream_of(cs, p))) != WF_OK)
      st = wfc_fail(cs, fn, st, "uploading the partitions");
  if (st == WF_OK) st = whole_counts(fn, cs, &md);
  for (int p = 0; p < n && st == WF_OK; p++)
    st = upload_ids(fn, cs, p);
  if (st == WF_OK) {
    fill_info(cs);
    wfc_frame_init(cs);
  }
  model_free(&md);
  return st;
}

void wfc_free_parts(wf_cloth *cs) {
  for (int p = 0; p < cs->np; p++) {
    if (cs->parts[p].c) wf_stream_synchronize(wfc_stream_of(cs, p));
    if (cs->set && cs->set->part[p].copy) /* it reads the views */
      wf_stream_synchronize(cs->set->part[p].copy);
  }
  wfpt_frame_release(&cs->frame);
  for (int l = 0; cs->set && l < cs->set->n_links; l++) {
    wfc_halo_link *k = &cs->links[l];
    wf_stream *sf = wfc_stream_of(cs, cs->set->links[l].from);
    wf_stream *sto = wfc_stream_of(cs, cs->set->links[l].to);
    for (int w = 0; w < 4; w++)
      if (k->ghost[w]) wf_buffer_destroy(k->ghost[w], sto);
    for (int w = 0; w < 2; w++)
      if (k->cat[w]) wf_buffer_destroy(k->cat[w], sto);
    if (k->src_idx) wf_buffer_destroy(k->src_idx, sf);
    if (k->dst_idx) wf_buffer_destroy(k->dst_idx, sto);
    free(k->off);
  }
  free(cs->links);
  wfpt_set_destroy(cs->set);
  for (int p = 0; p < cs->np; p++) {
    wfc_piece *pt = &cs->parts[p];
    for (int w = 0; w < 4; w++)
      if (pt->sent[w]) wf_buffer_destroy(pt->sent[w], wfc_stream_of(cs, p));
    for (int w = 0; w < 2; w++)
      if (pt->owned[w]) wf_buffer_destroy(pt->owned[w], wfc_stream_of(cs, p));
    if (pt->ids) wf_buffer_destroy(pt->ids, wfc_stream_of(cs, p));
    wfc_part_destroy(pt->c);
    free(pt->gid), free(pt->send_gid);
  }
  free(cs->force_sum);
  free(cs->tris);
  free(cs->rest), free(cs->owner), free(cs->ghost_in), free(cs->lid), free(cs->pinned);
}
