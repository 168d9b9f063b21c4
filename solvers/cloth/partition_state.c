/* The state of a cloth over several devices: downloads in global order with the search for the
 * first non-finite vertex, set_state into every partition (ghosts included), and the gather of
 * the positions onto one device (solvers/partition/gather.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_parts.h"
#include "internal/error.h"

static bool finite4(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

static uint32_t most_local(const wf_cloth *cs) {
  uint32_t most = 1;
  for (int p = 0; p < cs->np; p++)
    most = cs->parts[p].n_local > most ? cs->parts[p].n_local : most;
  return most;
}

/* Lowers *bad_g to the smallest global id of partition p's owned vertices with a non-finite state.
 * The device flags name the smallest local index `first`, and the local order is not the global
 * one (the send set comes first), so the state is searched too. buf holds n_local entries. */
static wf_status first_bad(wf_cloth *cs, const char *fn, int p, float (*buf)[4], uint32_t first,
                           uint32_t *bad_g) {
  wfc_piece *pt = &cs->parts[p];
  if (first < pt->n_local && pt->gid[first] < *bad_g) *bad_g = pt->gid[first];
  for (int w = 0; w < 2; w++) {
    wf_status st = wf_download(buf, wfc_buffer(pt->c, w ? WFC_BUF_VEL0 : WFC_BUF_POS0), 0,
                               (size_t)pt->n_local * 16);
    if (st != WF_OK) return wfc_fail(cs, fn, st, "downloading the state");
    for (uint32_t i = 0; i < pt->n_owned; i++)
      if (!finite4(buf[i]) && pt->gid[i] < *bad_g) *bad_g = pt->gid[i];
  }
  return WF_OK;
}

/* Partition p's owned rows of positions and velocities (either NULL: skipped) into pos and vel
 * by global id; lowers *bad_g (first_bad) when its flags say a vertex went bad. */
static wf_status download_part(wf_cloth *cs, const char *fn, int p, float (*buf)[4],
                               float (*pos)[4], float (*vel)[4], uint32_t *bad_g) {
  wfc_piece *pt = &cs->parts[p];
  uint32_t bad = 0, first = WFC_NONE;
  wf_status st = wfc_flags_get(pt->c, fn, &bad, &first);
  if (st == WF_OK && bad) st = first_bad(cs, fn, p, buf, first, bad_g);
  for (int w = 0; w < 2 && st == WF_OK; w++) {
    float(*dst)[4] = w ? vel : pos;
    if (!dst) continue;
    st = wf_download(buf, wfc_buffer(pt->c, w ? WFC_BUF_VEL0 : WFC_BUF_POS0), 0,
                     (size_t)pt->n_local * 16);
    if (st != WF_OK) return wfc_fail(cs, fn, st, "downloading the state");
    for (uint32_t i = 0; i < pt->n_owned; i++)
      memcpy(dst[pt->gid[i]], buf[i], 16);
  }
  return st;
}

wf_status wfc_download_parts(wf_cloth *cs, const char *fn, float (*pos)[4], float (*vel)[4]) {
  float(*buf)[4] = malloc((size_t)most_local(cs) * 16);
  if (!buf) return wfc_oom(fn, cs->name);
  wf_status st = WF_OK;
  uint32_t bad_g = WFC_NONE;
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    if (cs->parts[p].c) st = download_part(cs, fn, p, buf, pos, vel, &bad_g);
  free(buf);
  /* over MPI ranks: the other ranks' rows (a collective, entered also after a failure) */
  if (cs->ranks > 1) st = wfc_ranks_gather_rows(cs, fn, pos, vel, &bad_g, st);
  if (st != WF_OK || bad_g == WFC_NONE) return st;
  uint64_t k = 0;
  wfc_part_time(wfc_lead_part(cs), NULL, &k);
  return wf__error(WF_ERR_INVALID, fn,
                   "cloth '%s': vertex %u became NaN/inf by substep %llu: the time step "
                   "is too large for the stiffness (more substeps, or softer springs / XPBD)",
                   cs->name, bad_g, (unsigned long long)k);
}

wf_status wfc_set_state_parts(wf_cloth *cs, const float (*pos)[4], const float (*vel)[4],
                              double time, uint64_t substeps) {
  uint32_t most = most_local(cs);
  float(*lp)[4] = malloc((size_t)most * 16), (*lv)[4] = malloc((size_t)most * 16);
  wf_status st = lp && lv ? WF_OK : wfc_oom("wf_cloth_set_state", cs->name);
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    wfc_piece *pt = &cs->parts[p];
    if (!pt->c) continue; /* another MPI rank's: it sets its own from the same arrays */
    for (uint32_t i = 0; i < pt->n_local; i++) {
      memcpy(lp[i], pos[pt->gid[i]], 16);
      memcpy(lv[i], vel[pt->gid[i]], 16);
    }
    st = wfc_part_set_state(pt->c, (const float(*)[4])lp, (const float(*)[4])lv, time, substeps);
  }
  free(lp), free(lv);
  return st;
}

void wfc_gather_free(wf_cloth *cs) {
  wfpt_gather_destroy(cs->gather);
  if (cs->gather_out) wf_buffer_destroy(cs->gather_out, cs->gather_stream);
  cs->gather = NULL, cs->gather_out = NULL, cs->gather_stream = NULL;
}

/* The gather on stream s (made again when s changes). */
static wf_status gather_on(wf_cloth *cs, const char *fn, wf_stream *s) {
  if (cs->gather && cs->gather_stream == s) return WF_OK;
  wfc_gather_free(cs);
  wf_status st = wfpt_gather_create(wf_stream_device(s), s, cs->nv, &cs->gather);
  if (st != WF_OK) return wfc_fail(cs, fn, st, "allocating the gather");
  cs->gather_stream = s;
  return WF_OK;
}

/* Where the scatter writes: dst itself on the gather's device (a view of it past `off`), else
 * a buffer of the gather's, copied into dst after. *view, if made, is the caller's to destroy. */
static wf_status gather_target(wf_cloth *cs, const char *fn, wf_buffer *dst, size_t off,
                               wf_buffer **to, wf_buffer **view) {
  wf_stream *s = cs->gather_stream;
  wf_device *d = wf_stream_device(s);
  size_t bytes = (size_t)cs->nv * 16;
  wf_status st = WF_OK;
  *view = NULL;
  if (wf_buffer_device(dst) != d) {
    if (!cs->gather_out) st = wf_buffer_create(d, bytes, 0, s, &cs->gather_out);
    *to = cs->gather_out;
  } else if (off) {
    st = wf_buffer_wrap(d, (char *)wf_buffer_ptr(dst) + off, bytes, view);
    *to = *view;
  } else {
    *to = dst;
  }
  return st == WF_OK ? WF_OK : wfc_fail(cs, fn, st, "allocating the gather");
}

/* Every partition's owned rows copied (peer to peer) onto s's device and scattered by global id
 * into dst (solvers/partition/gather.h). */
wf_status wfc_copy_positions_parts(wf_cloth *cs, const char *fn, wf_buffer *dst, size_t off,
                                   wf_stream *s) {
  wf_status st = gather_on(cs, fn, s);
  wf_buffer *to = NULL, *view = NULL;
  if (st == WF_OK) st = gather_target(cs, fn, dst, off, &to, &view);
  if (st != WF_OK) return st;
  wf_partition_view views[WFPT_MAX];
  for (int p = 0; p < cs->np && st == WF_OK; p++)
    st = wf_cloth_partition_view(cs, p, &views[p]);
  if (st == WF_OK &&
      (st = wfpt_gather_enqueue(cs->gather, views, cs->np, to, NULL, cs->nv)) != WF_OK)
    st = wfc_fail(cs, fn, st, "gathering positions");
  if (st == WF_OK && to == cs->gather_out &&
      (st = wf_copy(dst, off, to, 0, (size_t)cs->nv * 16, s)) != WF_OK)
    st = wfc_fail(cs, fn, st, "copying positions");
  if (st == WF_OK && view && (st = wf_buffer_touch(dst, s)) != WF_OK)
    st = wfc_fail(cs, fn, st, "ordering the gather");
  if (view) wf_buffer_destroy(view, s);
  return st;
}
