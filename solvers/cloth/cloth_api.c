/* The public cloth (weft/cloth.h): every wf_cloth_* function. The setup calls (pins, colliders,
 * material, parameters) loop over the partitions, one or several alike. The calls of every frame
 * (stepping, copying or reading back the positions, the state) go straight to the one partition
 * with one device (whole()), with nothing added on the way; with several they work over the
 * partitions (cloth_parts.h has the picture; the build, the frame and the state live in
 * partition_build.c, halo.c and partition_state.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloth_parts.h"
#include "internal/error.h"
#include "solvers/partition/measure.h"

wf_status wfc_oom(const char *fn, const char *name) {
  return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "cloth '%s': out of host memory", name);
}

/* A GPU-layer call failed: keep its message (copied: wf__error rewrites the same text). */
wf_status wfc_fail(const wf_cloth *cs, const char *fn, wf_status st, const char *what) {
  char why[768];
  snprintf(why, sizeof why, "%s", wf_last_error());
  return wf__error(st, fn, "cloth '%s': %s: %s", cs->name, what, why);
}

/* The whole cloth's only partition with one device; NULL with several. */
static wfc_part *whole(const wf_cloth *cs) { return cs->np == 1 ? cs->parts[0].c : NULL; }

void wf_cloth_destroy(wf_cloth *cs) {
  if (!cs) return;
  if (whole(cs)) cs->rest = NULL, cs->tris = NULL; /* the partition's (create_whole) */
  wfc_gather_free(cs);
  wfc_free_parts(cs);
  free(cs);
}

/* One device: its partition is the whole cloth, built from the grid or mesh as given (the
 * single-device solver, desc->stream honoured). The cloth's rest positions and triangles are the
 * partition's; it has no local numbering (lid: a vertex is its own local index). */
static wf_status create_whole(const char *fn, wf_device *dev, const wf_cloth_desc *desc,
                              const wf_cloth_grid *grid, const wf_cloth_mesh_desc *mesh,
                              wf_cloth *cs) {
  wfc_piece *pt = &cs->parts[0];
  pt->dev = dev;
  wf_status st = grid ? wfc_part_create_grid(dev, desc, grid, &pt->c)
                      : wfc_part_create_mesh(dev, desc, mesh, &pt->c);
  const wfc_topology *t = st == WF_OK ? wfc_part_topology(pt->c) : NULL;
  if (t) {
    cs->nv = pt->n_local = pt->n_owned = t->nv;
    cs->nt = t->nt, cs->tris = t->tris, cs->rest = t->x;
    memcpy(cs->origin, t->origin, sizeof cs->origin);
    cs->grid[0] = t->grid[0], cs->grid[1] = t->grid[1];
    if (!(cs->pinned = calloc(cs->nv, 1))) st = wfc_oom(fn, cs->name);
  }
  return st;
}

/* The devices desc names (none, or a NULL first one: the default device; device_count 0 with
 * devices[0] set: that device) into devs; their number, or 0 after an error. */
static int devices_of(const char *fn, const wf_cloth_desc *desc, wf_device *devs[WFPT_MAX]) {
  const char *name = desc->name ? desc->name : "cloth";
  int n = desc->device_count < 1 ? 1 : desc->device_count;
  if (n > WFPT_MAX) {
    wf__error(WF_ERR_INVALID, fn, "cloth '%s': device_count %d; 1 to %d are supported", name, n,
              WFPT_MAX);
    return 0;
  }
  for (int i = 0; i < n; i++) /* device_count 0: one, devices[0] (as wf_particles) */
    devs[i] = desc->devices[i];
  if (!devs[0]) devs[0] = desc->stream ? wf_stream_device(desc->stream) : wf_device_default();
  if (!devs[0]) {
    wf__error(WF_ERR_INVALID, fn, "cloth '%s': no default device (wf_init failed?)", name);
    return 0;
  }
  return n;
}

static wf_status create(const char *fn, const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                        const wf_cloth_mesh_desc *mesh, wf_cloth **out) {
  if (!out) return wf__error(WF_ERR_INVALID, fn, "out is NULL");
  *out = NULL;
  if (!desc || (!grid && !mesh))
    return wf__error(WF_ERR_INVALID, fn, "desc or %s is NULL", grid ? "grid" : "mesh");
  wf_device *devs[WFPT_MAX];
  int n = devices_of(fn, desc, devs);
  if (n == 0) return WF_ERR_INVALID;
  wf_cloth *cs = calloc(1, sizeof *cs);
  if (!cs) return wfc_oom(fn, desc->name ? desc->name : "cloth");
  snprintf(cs->name, sizeof cs->name, "%s", desc->name ? desc->name : "cloth");
  cs->desc = *desc;
  cs->desc.name = cs->name;
  cs->np = n;
  if (n > 1 && desc->tuning.one_launch != WF_CLOTH_TUNE_OFF) /* cloth_xpbd_frame.h, cloth_fast.h */
    wf__log(WF_LOG_INFO,
            "cloth '%s': over %d partitions the frame runs kernels per substep or stage (the "
            "one-launch frames are for one partition)",
            cs->name, n);
  /* over MPI ranks every rank takes part in the split (one rank alone: the one-process cloth) */
  int ranks = 1, rank = 0;
  wf_status st = desc->mpi_comm ? wfpt_comm_size(desc->mpi_comm, &ranks, &rank) : WF_OK;
  if (st == WF_OK)
    st = n == 1 && ranks == 1 ? create_whole(fn, devs[0], desc, grid, mesh, cs)
                              : wfc_create_parts(fn, devs, desc, grid, mesh, cs);
  if (st != WF_OK) wf_cloth_destroy(cs);
  if (st == WF_OK) *out = cs;
  return st;
}

wf_status wf_cloth_create_grid(const wf_cloth_desc *desc, const wf_cloth_grid *grid,
                               wf_cloth **out) {
  static const char fn[] = "wf_cloth_create_grid";
  if (!grid) {
    if (out) *out = NULL;
    return wf__error(WF_ERR_INVALID, fn, "grid is NULL");
  }
  return create(fn, desc, grid, NULL, out);
}

wf_status wf_cloth_create_mesh(const wf_cloth_desc *desc, const wf_cloth_mesh_desc *mesh,
                               wf_cloth **out) {
  static const char fn[] = "wf_cloth_create_mesh";
  if (!mesh) {
    if (out) *out = NULL;
    return wf__error(WF_ERR_INVALID, fn, "mesh is NULL");
  }
  return create(fn, desc, NULL, mesh, out);
}

/* A capability of one device only, asked of a cloth over several. */
static wf_status one_device_only(const wf_cloth *cs, const char *fn, const char *what) {
  return wf__error(WF_ERR_UNSUPPORTED, fn,
                   "cloth '%s' runs over %d devices: %s needs the cloth on one device (create it "
                   "with desc.device_count 1)",
                   cs->name, cs->np, what);
}

/* ---- pins, colliders, material, parameters -------------------------------------------------- */

/* Pins (collider == WFC_NONE) or attaches global vertex v in every partition that holds it. */
static wf_status pin_global(wf_cloth *cs, uint32_t v, uint32_t collider) {
  for (int p = 0; p < cs->np; p++) {
    uint32_t l = cs->lid ? cs->lid[(size_t)p * cs->nv + v] : v;
    if (l == WFC_NONE || !cs->parts[p].c) continue; /* (another MPI rank's partition) */
    wf_status st = collider == WFC_NONE ? wfc_part_pin(cs->parts[p].c, l)
                                        : wfc_part_attach(cs->parts[p].c, l, collider);
    if (st != WF_OK) return st;
  }
  if (!cs->pinned[v]) cs->pinned[v] = 1, cs->info.pinned++;
  return WF_OK;
}

static wf_status check_vertex(const wf_cloth *cs, const char *fn, uint32_t v) {
  if (v < cs->nv) return WF_OK;
  return wf__error(WF_ERR_INVALID, fn, "cloth '%s': vertex %u is out of range (%u vertices)",
                   cs->name, v, cs->nv);
}

wf_status wf_cloth_pin(wf_cloth *cs, uint32_t vertex) {
  static const char fn[] = "wf_cloth_pin";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  wf_status st = check_vertex(cs, fn, vertex);
  return st != WF_OK ? st : pin_global(cs, vertex, WFC_NONE);
}

wf_status wf_cloth_attach(wf_cloth *cs, uint32_t vertex, uint32_t collider) {
  static const char fn[] = "wf_cloth_attach";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  wf_status st = check_vertex(cs, fn, vertex);
  if (st != WF_OK) return st;
  if (collider == WFC_NONE)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider %u does not exist", cs->name,
                     collider);
  return pin_global(cs, vertex, collider);
}

wf_status wf_cloth_pin_named(wf_cloth *cs, const char *where, uint32_t *count) {
  static const char fn[] = "wf_cloth_pin_named";
  if (!cs || !where) return wf__error(WF_ERR_INVALID, fn, "cloth or name is NULL");
  uint32_t r[4], n = 0;
  wf_status st = wfc_pin_named_range(fn, cs->name, cs->grid, where, r);
  for (uint32_t j = r[2]; st == WF_OK && j <= r[3]; j++)
    for (uint32_t i = r[0]; st == WF_OK && i <= r[1]; i++, n++)
      st = pin_global(cs, j * cs->grid[0] + i, WFC_NONE);
  if (st == WF_OK && count) *count = n;
  return st;
}

/* Pins (collider WFC_NONE) or attaches every vertex whose rest position lies in [lo, hi]. */
static wf_status pin_region(wf_cloth *cs, const char *fn, const float lo[3], const float hi[3],
                            uint32_t collider, uint32_t *count) {
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (!lo || !hi || !isfinite(lo[0]) || !isfinite(lo[1]) || !isfinite(lo[2]) || !isfinite(hi[0]) ||
      !isfinite(hi[1]) || !isfinite(hi[2]))
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': region bounds are NULL or not finite",
                     cs->name);
  uint32_t n = 0;
  for (uint32_t i = 0; i < cs->nv; i++) {
    float x[3]; /* in the world, as wf_cloth_download reports it */
    for (int k = 0; k < 3; k++)
      x[k] = (float)((double)cs->rest[i][k] + cs->origin[k]);
    if (x[0] < lo[0] || x[1] < lo[1] || x[2] < lo[2] || x[0] > hi[0] || x[1] > hi[1] ||
        x[2] > hi[2])
      continue;
    wf_status st = pin_global(cs, i, collider);
    if (st != WF_OK) return st;
    n++;
  }
  if (count) *count = n;
  if (!n)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': the region [%g %g %g] - [%g %g %g] holds no vertex", cs->name,
                     (double)lo[0], (double)lo[1], (double)lo[2], (double)hi[0], (double)hi[1],
                     (double)hi[2]);
  return WF_OK;
}

wf_status wf_cloth_pin_region(wf_cloth *cs, const float lo[3], const float hi[3], uint32_t *count) {
  return pin_region(cs, "wf_cloth_pin_region", lo, hi, WFC_NONE, count);
}

/* Partition 0 goes first: a bad argument is refused there, before any partition changed. */
wf_status wf_cloth_add_collider(wf_cloth *cs, const wf_collider_desc *desc, uint32_t *index) {
  static const char fn[] = "wf_cloth_add_collider";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's: it makes the same call */
    wf_status st = wfc_part_add_collider(cs->parts[p].c, desc, index);
    if (st != WF_OK) return st;
  }
  if (!whole(cs)) wfpt_frame_stale(&cs->frame); /* the first one adds the forces' clear */
  return WF_OK;
}

wf_status wf_cloth_set_collider_pose(wf_cloth *cs, uint32_t index, const wf_collider_pose *pose) {
  static const char fn[] = "wf_cloth_set_collider_pose";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's: it makes the same call */
    wf_status st = wfc_part_set_collider_pose(cs->parts[p].c, index, pose);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_cloth_set_material(wf_cloth *cs, const wf_cloth_material *m) {
  static const char fn[] = "wf_cloth_set_material";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's: it makes the same call */
    wf_status st = wfc_part_set_material(cs->parts[p].c, m);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_cloth_params wf_cloth_params_get(const wf_cloth *cs) {
  return cs ? wfc_part_params_get(wfc_lead_part(cs)) : (wf_cloth_params){0};
}

wf_status wf_cloth_params_set(wf_cloth *cs, const wf_cloth_params *prm) {
  static const char fn[] = "wf_cloth_params_set";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's: it makes the same call */
    wf_status st = wfc_part_params_set(cs->parts[p].c, prm);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* Only the partition that owns the vertex applies the spring (the per-vertex stages update owned
 * vertices only; its ghost copies elsewhere get its bits from the halo exchange), at its local
 * index; every other partition's drag is off. The target goes into the cloth's frame in double,
 * rounded once, as every partition has the cloth's origin: the same float target, the same bits
 * as on one device. */
wf_status wf_cloth_drag_set(wf_cloth *cs, uint32_t vertex, const double target[3], float stiffness,
                            float damping) {
  static const char fn[] = "wf_cloth_drag_set";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (vertex >= cs->nv)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': drag of vertex %u: out of range (%u vertices)", cs->name, vertex,
                     cs->nv);
  if (!target)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': drag of vertex %u: target is NULL", cs->name,
                     vertex);
  float local[3];
  for (int k = 0; k < 3; k++) {
    local[k] = (float)(target[k] - cs->origin[k]);
    if (!isfinite(target[k]) || !isfinite(local[k]))
      return wf__error(WF_ERR_INVALID, fn,
                       "cloth '%s': drag of vertex %u: target[%d] = %g is not finite (or not in "
                       "float range of the cloth's origin)",
                       cs->name, vertex, k, target[k]);
  }
  if (!(stiffness >= 0.0f) || !isfinite(stiffness) || !(damping >= 0.0f) || !isfinite(damping))
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': drag of vertex %u: stiffness %g N/m and damping %g N*s/m must "
                     "be finite and >= 0",
                     cs->name, vertex, (double)stiffness, (double)damping);
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's: it makes the same call */
    uint32_t l = cs->lid ? cs->lid[(size_t)p * cs->nv + vertex] : vertex;
    bool own = cs->np == 1 || cs->owner[vertex] == p;
    wf_status st = wfc_part_drag_set(cs->parts[p].c, own, own ? l : 0u, local, stiffness, damping);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

wf_status wf_cloth_drag_clear(wf_cloth *cs) {
  static const char fn[] = "wf_cloth_drag_clear";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  static const float zero[3] = {0.0f, 0.0f, 0.0f};
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's: it makes the same call */
    wf_status st = wfc_part_drag_set(cs->parts[p].c, false, 0u, zero, 0.0f, 0.0f);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

/* ---- frames ---------------------------------------------------------------------------------- */

wf_status wf_cloth_step_frames(wf_cloth *cs, int frames) {
  static const char fn[] = "wf_cloth_step_frames";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (frames < 0)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': frames %d must be >= 0", cs->name, frames);
  if (whole(cs)) return wfc_part_step_frames(whole(cs), frames);
  if (!frames) return WF_OK;
  wf_status st = cs->ranks > 1 ? wfc_ranks_forces_agree(cs, fn) : WF_OK;
  if (st == WF_OK) st = wfpt_run_frames(&cs->frame, frames, WFPT_FULL, NULL);
  return cs->ranks > 1 ? wfc_ranks_forces_sum(cs, fn, st) : st;
}

/* One partition: no halo. Ordinary frames timed on the host's clock (each followed by a wait)
 * stand for all four kinds. The state is not restored. */
static wf_status measure_whole(wf_cloth *cs, const char *fn, int frames, wf_overlap *out) {
  double *ms = malloc((size_t)frames * sizeof *ms);
  wf_status st = ms ? WF_OK : wfc_oom(fn, cs->name);
  for (int f = -1; f < frames && st == WF_OK; f++) {
    double t0 = wfpt_now_ms();
    st = wfc_part_step_frames(whole(cs), 1);
    if (st == WF_OK && (st = wf_stream_synchronize(wfc_stream_of(cs, 0))) != WF_OK)
      st = wfc_fail(cs, fn, st, "waiting for a frame");
    if (f >= 0) ms[f] = wfpt_now_ms() - t0;
  }
  if (st == WF_OK) {
    out->frame_ms = out->frame_no_halo_ms = out->compute_ms = wfpt_median(ms, frames);
    out->hidden_fraction = 1.0;
  }
  free(ms);
  return st;
}

wf_status wf_cloth_overlap_measure(wf_cloth *cs, int frames, wf_overlap *out) {
  static const char fn[] = "wf_cloth_overlap_measure";
  if (!cs || !out) return wf__error(WF_ERR_INVALID, fn, "cloth or out is NULL");
  memset(out, 0, sizeof *out);
  if (frames < 1)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': frames %d must be >= 1", cs->name, frames);
  if (cs->ranks > 1) return wfc_not_over_ranks(cs, fn, "the overlap measure");
  float(*pos)[4] = malloc((size_t)cs->nv * 16), (*vel)[4] = malloc((size_t)cs->nv * 16);
  double time = 0.0;
  uint64_t substeps = 0;
  wf_status st = pos && vel ? WF_OK : wfc_oom(fn, cs->name);
  /* the state to give back, bit for bit; a non-finite one is refused (download's error says
   * where) */
  if (st == WF_OK) st = wf_cloth_download_local(cs, pos, vel);
  if (st == WF_OK) st = wf_cloth_time(cs, &time, &substeps);
  if (st == WF_OK) {
    st = whole(cs) ? measure_whole(cs, fn, frames, out) : wfc_measure_parts(cs, fn, frames, out);
    /* give the state back even after a failure (its own error comes first), after the frames */
    wf_status st2 = WF_OK;
    for (int p = 1; p < cs->np && st2 == WF_OK; p++)
      if ((st2 = wf_stream_wait_stream(wfc_stream_of(cs, p), wfc_stream_of(cs, 0))) != WF_OK)
        st2 = wfc_fail(cs, fn, st2, "ordering after the frames");
    if (st2 == WF_OK)
      st2 = wf_cloth_set_state_local(cs, (const float(*)[4])pos, (const float(*)[4])vel, time,
                                     substeps);
    if (st == WF_OK) st = st2;
  }
  free(pos), free(vel);
  return st;
}

/* ---- reading and writing the state ----------------------------------------------------------- */

/* Each partition's rows (its owned vertices) by global id, then one sum in global order. */
wf_status wf_cloth_energy_get(wf_cloth *cs, wf_cloth_energy *out) {
  static const char fn[] = "wf_cloth_energy_get";
  if (!cs || !out) return wf__error(WF_ERR_INVALID, fn, "cloth or out is NULL");
  memset(out, 0, sizeof *out);
  uint32_t most = 1;
  for (int p = 0; p < cs->np; p++)
    most = cs->parts[p].n_owned > most ? cs->parts[p].n_owned : most;
  int lead = wfc_lead(cs);
  wfc_energy *rows = malloc((size_t)cs->nv * sizeof *rows);
  wfc_energy *buf = cs->np > 1 ? malloc((size_t)most * sizeof *buf) : rows;
  wf_status st = rows && buf ? WF_OK : wfc_oom(fn, cs->name);
  for (int p = 0; p < cs->np && st == WF_OK; p++) {
    wfc_piece *pt = &cs->parts[p];
    if (!pt->c) continue; /* another MPI rank's: its rows come with the gather below */
    if (p != lead &&
        (st = wf_stream_wait_stream(wfc_stream_of(cs, p), wfc_stream_of(cs, lead))) != WF_OK)
      st = wfc_fail(cs, fn, st, "ordering after the frames");
    if (st == WF_OK) st = wfc_part_energy(pt->c, buf);
    for (uint32_t i = 0; i < pt->n_owned && st == WF_OK && cs->np > 1; i++)
      rows[pt->gid[i]] = buf[i];
  }
  if (cs->ranks > 1) st = wfc_ranks_gather_energy(cs, fn, rows, st); /* every rank enters */
  /* positions are relative to the cloth's origin: the potential of the offset is -M g·origin */
  double mass = 0.0;
  for (uint32_t i = 0; i < cs->nv && st == WF_OK; i++) {
    mass += rows[i].mass;
    out->kinetic += rows[i].kinetic;
    out->potential += rows[i].potential;
    out->stretch += rows[i].elastic[WFC_STRETCH];
    out->shear += rows[i].elastic[WFC_SHEAR];
    out->bend += rows[i].elastic[WFC_BEND];
  }
  const float *g = cs->desc.gravity; /* the rows' gravity (fixed at creation) */
  out->potential -= mass * ((double)g[0] * cs->origin[0] + (double)g[1] * cs->origin[1] +
                            (double)g[2] * cs->origin[2]);
  out->elastic = out->stretch + out->shear + out->bend;
  out->total = out->kinetic + out->potential + out->elastic;
  if (buf != rows) free(buf);
  free(rows);
  return st;
}

/* The solver holds positions relative to the cloth's origin (docs/precision.md); the world's are
 * local + origin, added in double and rounded once. A zero component is skipped, so that a cloth
 * at the world's origin gives its bits unchanged (-0 stays -0). */
static void local_to_world(const wf_cloth *cs, float (*pos)[4]) {
  for (int k = 0; k < 3; k++) {
    if (cs->origin[k] == 0.0) continue;
    for (uint32_t i = 0; i < cs->nv; i++)
      pos[i][k] = (float)((double)pos[i][k] + cs->origin[k]);
  }
}

static wf_status download(wf_cloth *cs, const char *fn, float (*pos)[4], float (*vel)[4]) {
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (whole(cs)) return wfc_part_download(whole(cs), pos, vel);
  return wfc_download_parts(cs, fn, pos, vel);
}

wf_status wf_cloth_download_local(wf_cloth *cs, float (*pos)[4], float (*vel)[4]) {
  return download(cs, "wf_cloth_download_local", pos, vel);
}

wf_status wf_cloth_download(wf_cloth *cs, float (*pos)[4], float (*vel)[4]) {
  wf_status st = download(cs, "wf_cloth_download", pos, vel);
  if (pos && cs) local_to_world(cs, pos); /* also after WF_ERR_INVALID: the data is there */
  return st;
}

static wf_status set_state(wf_cloth *cs, const char *fn, const float (*pos)[4],
                           const float (*vel)[4], double time, uint64_t substeps) {
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  if (!pos || !vel)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': pos or vel is NULL", cs->name);
  if (whole(cs)) return wfc_part_set_state(whole(cs), pos, vel, time, substeps);
  return wfc_set_state_parts(cs, pos, vel, time, substeps);
}

wf_status wf_cloth_set_state_local(wf_cloth *cs, const float (*pos)[4], const float (*vel)[4],
                                   double time, uint64_t substeps) {
  return set_state(cs, "wf_cloth_set_state_local", pos, vel, time, substeps);
}

wf_status wf_cloth_set_state(wf_cloth *cs, const float (*pos)[4], const float (*vel)[4],
                             double time, uint64_t substeps) {
  static const char fn[] = "wf_cloth_set_state";
  if (!cs || !pos || !vel) return set_state(cs, fn, pos, vel, time, substeps); /* its errors */
  float(*local)[4] = malloc(((size_t)cs->nv + 1) * sizeof *local);
  if (!local) return wfc_oom(fn, cs->name);
  memcpy(local, pos, (size_t)cs->nv * sizeof *local);
  for (int k = 0; k < 3; k++) /* relative to the origin, in double, rounded once */
    for (uint32_t i = 0; cs->origin[k] != 0.0 && i < cs->nv; i++)
      local[i][k] = (float)((double)pos[i][k] - cs->origin[k]);
  wf_status st = set_state(cs, fn, (const float(*)[4])local, vel, time, substeps);
  free(local);
  return st;
}

wf_status wf_cloth_origin(const wf_cloth *cs, double origin[3]) {
  if (!cs || !origin) return wf__error(WF_ERR_INVALID, "wf_cloth_origin", "cloth or out is NULL");
  memcpy(origin, cs->origin, sizeof cs->origin);
  return WF_OK;
}

wf_status wf_cloth_time(wf_cloth *cs, double *seconds, uint64_t *substeps) {
  if (!cs) return wf__error(WF_ERR_INVALID, "wf_cloth_time", "cloth is NULL");
  return wfc_part_time(wfc_lead_part(cs), seconds, substeps); /* every partition's clock */
}

/* The whole cloth's counts over the partitions' device memory and frame facts. */
static void info_parts(const wf_cloth *cs, wf_cloth_info *out) {
  wf_cloth_info p0;
  wfc_part_info_get(wfc_lead_part(cs), &p0);
  *out = cs->info;
  out->triangles = cs->nt;
  out->springs = cs->springs;
  out->constraints = cs->constraints;
  out->colours = cs->colours;
  out->grid[0] = cs->grid[0], out->grid[1] = cs->grid[1];
  out->frame_kernel = p0.frame_kernel;
  out->resident_max = p0.resident_max;
  out->frame_lanes = p0.frame_lanes;
  out->frame_smem = p0.frame_smem;
  out->graph_nodes = cs->frame.graph ? wf_graph_node_count(cs->frame.graph) : 0;
  out->captures = cs->frame.captures;
  for (int p = 0; p < cs->np; p++) { /* over MPI ranks: this rank's partitions */
    wf_cloth_info pi;
    if (!cs->parts[p].c) continue;
    wfc_part_info_get(cs->parts[p].c, &pi);
    out->device_bytes += pi.device_bytes;
    out->partition_bytes[p] = pi.device_bytes;
  }
}

wf_status wf_cloth_info_get(const wf_cloth *cs, wf_cloth_info *out) {
  if (!cs || !out) return wf__error(WF_ERR_INVALID, "wf_cloth_info_get", "cloth or out is NULL");
  if (!whole(cs)) {
    info_parts(cs, out);
    return WF_OK;
  }
  wf_status st = wfc_part_info_get(whole(cs), out);
  out->partitions = 1;
  out->owned[0] = cs->nv;
  out->partition_bytes[0] = out->device_bytes;
  out->peer = true;
  return st;
}

uint32_t wf_cloth_count(const wf_cloth *cs) { return cs ? cs->nv : 0; }

int wf_cloth_partition_count(const wf_cloth *cs) { return cs ? cs->np : 0; }

bool wf_cloth_partition_is_local(const wf_cloth *cs, int i) {
  return cs && i >= 0 && i < cs->np && cs->parts[i].c;
}

/* The owners are every rank's (the cut is broadcast at creation), so this needs no message. */
wf_status wf_cloth_owned_ids(const wf_cloth *cs, uint32_t *ids, uint32_t *n) {
  if (!cs || !n) return wf__error(WF_ERR_INVALID, "wf_cloth_owned_ids", "cloth or n is NULL");
  uint32_t m = 0;
  for (uint32_t g = 0; g < cs->nv; g++)
    if (cs->ranks <= 1 || wfc_mine(cs, cs->owner[g])) {
      if (ids) ids[m] = g;
      m++;
    }
  *n = m;
  return WF_OK;
}

wf_status wf_cloth_partition_view(const wf_cloth *cs, int i, wf_partition_view *out) {
  static const char fn[] = "wf_cloth_partition_view";
  if (!cs || !out) return wf__error(WF_ERR_INVALID, fn, "cloth or out is NULL");
  memset(out, 0, sizeof *out);
  if (i < 0 || i >= cs->np)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': partition %d out of range [0, %d)", cs->name,
                     i, cs->np);
  const wfc_piece *pt = &cs->parts[i];
  if (!pt->c)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': MPI rank %d: partition %d is rank %d's (see "
                     "wf_cloth_partition_is_local)",
                     cs->name, cs->rank, i, wfpt_rank_of(i, cs->np, cs->ranks));
  out->device = pt->dev;
  out->stream = wfc_stream_of(cs, i);
  out->ids = pt->ids;
  out->rows = pt->n_owned;
  memcpy(out->origin, cs->origin, sizeof out->origin);
  return wfc_part_state_buffers(pt->c, &out->pos, &out->vel, &out->clock);
}

wf_status wf_cloth_measure_collider_forces(wf_cloth *cs, bool on) {
  static const char fn[] = "wf_cloth_measure_collider_forces";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  /* over MPI ranks only the rank's wish: the next step agrees (cloth_ranks.c) */
  cs->forces_want = on;
  return cs->ranks > 1 ? WF_OK : wfc_forces_apply(cs, on);
}

wf_status wfc_forces_apply(wf_cloth *cs, bool on) {
  if (wfc_part_measuring_forces(wfc_lead_part(cs)) == on) return WF_OK;
  for (int p = 0; p < cs->np; p++) {
    if (!cs->parts[p].c) continue; /* another MPI rank's */
    wf_status st = wfc_part_measure_forces(cs->parts[p].c, on);
    if (st != WF_OK) return st;
  }
  if (cs->force_sum) memset(cs->force_sum, 0, WFX_MAX_COLLIDERS * WFX_FORCE_WORDS * 8);
  cs->force_seconds = 0.0;
  if (!whole(cs)) wfpt_frame_stale(&cs->frame); /* the kernels' pointers and the clear changed */
  return WF_OK;
}

/* The partitions' integer sums, in any order (collider_force.h): the same bits for any number of
 * partitions. */
wf_status wf_cloth_collider_force(wf_cloth *cs, uint32_t index, double force[3], double torque[3]) {
  static const char fn[] = "wf_cloth_collider_force";
  if (!cs || !force || !torque) return wf__error(WF_ERR_INVALID, fn, "NULL argument");
  uint32_t n = wfc_part_collider_count(wfc_lead_part(cs));
  if (index >= n)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider %u does not exist (%u added)",
                     cs->name, index, n);
  if (!wfc_part_measuring_forces(wfc_lead_part(cs))) { /* from the next frame on */
    for (int j = 0; j < 3; j++)
      force[j] = torque[j] = 0.0;
    return wf_cloth_measure_collider_forces(cs, true);
  }
  const unsigned long long *tables[WFPT_MAX];
  if (cs->ranks > 1) { /* the sums over the ranks the last frames made: no collective here */
    tables[0] = cs->force_sum;
    if (!cs->force_sum) {
      for (int j = 0; j < 3; j++)
        force[j] = torque[j] = 0.0;
      return WF_OK;
    }
    wfx_forces_read(tables, 1, index, cs->force_seconds, force, torque);
    return WF_OK;
  }
  double seconds = 0.0;
  for (int p = 0; p < cs->np; p++) {
    wf_status st = wfc_part_forces(cs->parts[p].c, &tables[p], &seconds);
    if (st != WF_OK) return st;
  }
  wfx_forces_read(tables, cs->np, index, seconds, force, torque);
  return WF_OK;
}

/* ---- one device only ------------------------------------------------------------------------ */

wf_status wf_cloth_couple(wf_cloth *cs, wf_particles *ps) {
  static const char fn[] = "wf_cloth_couple";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs) ? wfc_part_couple(whole(cs), ps) : one_device_only(cs, fn, "coupling");
}

wf_status wf_cloth_step_substeps(wf_cloth *cs, int n) {
  static const char fn[] = "wf_cloth_step_substeps";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs) ? wfc_part_step_substeps(whole(cs), n)
                   : one_device_only(cs, fn, "stepping substeps one by one");
}

wf_status wf_cloth_set_frame_readback(wf_cloth *cs, wf_buffer *dst, size_t off) {
  return wf_cloth_set_frame_readback_as(cs, dst, off, WF_CLOTH_XYZW);
}

wf_status wf_cloth_set_frame_readback_as(wf_cloth *cs, wf_buffer *dst, size_t off,
                                         wf_cloth_layout layout) {
  static const char fn[] = "wf_cloth_set_frame_readback_as";
  if (!cs) return wf__error(WF_ERR_INVALID, fn, "cloth is NULL");
  return whole(cs)
             ? wfc_part_set_frame_readback_as(whole(cs), dst, off, layout)
             : one_device_only(cs, fn, "the per-frame readback (use wf_cloth_copy_positions_on)");
}

/* ---- any number of devices ------------------------------------------------------------------ */

wf_status wf_cloth_check(wf_cloth *cs) { return wf_cloth_download(cs, NULL, NULL); }

/* Frames are launched on partition 0's stream and every other partition's joins it. */
wf_stream *wf_cloth_stream(const wf_cloth *cs) {
  return cs ? wfc_stream_of(cs, wfc_lead(cs)) : NULL; /* over MPI ranks: this rank's first */
}

const uint32_t *wf_cloth_triangles(const wf_cloth *cs, uint32_t *count) {
  if (count) *count = cs ? cs->nt : 0;
  return cs && cs->nt ? cs->tris : NULL;
}

wf_status wf_cloth_copy_positions(wf_cloth *cs, wf_buffer *dst, size_t off) {
  return wf_cloth_copy_positions_on(cs, dst, off, NULL);
}

wf_status wf_cloth_copy_positions_on(wf_cloth *cs, wf_buffer *dst, size_t off, wf_stream *s) {
  static const char fn[] = "wf_cloth_copy_positions";
  if (!cs || !dst) return wf__error(WF_ERR_INVALID, fn, "cloth or buffer is NULL");
  size_t bytes = (size_t)cs->nv * 16, size = wf_buffer_size(dst);
  if (off > size || size - off < bytes)
    return wf__error(WF_ERR_INVALID, fn,
                     "cloth '%s': destination holds %zu bytes after offset %zu, positions need %zu",
                     cs->name, off > size ? 0 : size - off, off, bytes);
  if (whole(cs)) return wfc_part_copy_positions_on(whole(cs), dst, off, s);
  if (cs->ranks > 1) return wfc_not_over_ranks(cs, fn, "copying the positions onto a device");
  return wfc_copy_positions_parts(cs, fn, dst, off, s ? s : wfc_stream_of(cs, 0));
}

/* ---- additions for the world (engine/world.c) ------------------------------------------------ */

wf_status wf_cloth_attach_region(wf_cloth *cs, const float lo[3], const float hi[3],
                                 uint32_t collider, uint32_t *count) {
  static const char fn[] = "wf_cloth_attach_region";
  if (cs && collider == WFC_NONE)
    return wf__error(WF_ERR_INVALID, fn, "cloth '%s': collider %u does not exist", cs->name,
                     collider);
  return pin_region(cs, fn, lo, hi, collider, count);
}
