/* The outputs of a run (weft/outputs.h): which files a run of a world writes, under which names,
 * when, and how a resumed run keeps what the earlier one wrote. The writers themselves (PLY, VTK,
 * CSV, atomic files) are output.c's; checkpoints are the world's.
 *
 * Invariants
 *  - Every path comes from wf_run_outputs_path: one place names the files, so `weft run`, its
 *    signal and health handling, and embedders agree on them.
 *  - The directory is made and checked before anything is written, so a bad one fails at create
 *    with nothing on disk.
 *  - A frame's files are written only after its health check passed, in object order, and the
 *    first failure stops the frame (later objects are not written).
 *  - A resume keeps the stats.csv rows of frames <= resume_frame by rewriting them into a fresh
 *    file; if that fails, the earlier file is put back as it was.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/error.h"
#include "weft/io.h"
#include "weft/outputs.h"

/* ---- names and directories ---------------------------------------------------------------- */

size_t wf_run_outputs_path(char *buf, size_t n, const char *dir, wf_run_file file,
                           const char *object, int64_t frame) {
  long long f = (long long)frame;
  const char *o = object ? object : "";
  int len = -1;
  switch (file) {
  case WF_RUN_FILE_PLY: len = snprintf(buf, n, "%s/%s_%06lld.ply", dir, o, f); break;
  case WF_RUN_FILE_VTP: len = snprintf(buf, n, "%s/%s_%06lld.vtp", dir, o, f); break;
  case WF_RUN_FILE_PVD: len = snprintf(buf, n, "%s/%s.pvd", dir, o); break;
  case WF_RUN_FILE_CSV: len = snprintf(buf, n, "%s/stats.csv", dir); break;
  case WF_RUN_FILE_CHECKPOINT: len = snprintf(buf, n, "%s/checkpoint_%06lld.wfck", dir, f); break;
  case WF_RUN_FILE_LAST_GOOD:
    len = snprintf(buf, n, "%s/checkpoint_last_good_%06lld.wfck", dir, f);
    break;
  }
  if (len < 0 || (size_t)len >= n) {
    wf__error(WF_ERR_INVALID, __func__, "a path in '%s' is too long, or file %d is unknown", dir,
              (int)file);
    return len < 0 ? n : (size_t)len;
  }
  return (size_t)len;
}

wf_status wf_dir_create(const char *dir) {
  if (!dir || !*dir) return wf__error(WF_ERR_INVALID, __func__, "the directory is NULL or empty");
  size_t len = strlen(dir);
  char *p = malloc(len + 1);
  if (!p) return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for the path '%s'", dir);
  memcpy(p, dir, len + 1);
  wf_status st = WF_OK;
  for (char *s = p + 1; st == WF_OK; s++) {
    if (*s != '/' && *s != '\0') continue;
    char c = *s;
    *s = '\0';
    struct stat sb;
    errno = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      st = wf__error(WF_ERR_IO, NULL, "cannot create the directory '%s': '%s': %s", dir, p,
                     strerror(errno));
    else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
      st = wf__error(WF_ERR_IO, NULL, "cannot create the directory '%s': '%s': %s", dir, p,
                     strerror(errno && errno != EEXIST ? errno : ENOTDIR));
    *s = c;
    if (c == '\0') break;
  }
  free(p);
  if (st == WF_OK && access(dir, W_OK | X_OK) != 0)
    st = wf__error(WF_ERR_IO, NULL, "the directory '%s' is not writable: %s", dir, strerror(errno));
  return st;
}

/* ---- the object --------------------------------------------------------------------------- */

struct wf_run_outputs {
  wf_world *w;
  char *dir;
  unsigned formats;
  int every, checkpoint_every;
  int n_objects;
  wf_pvd **pvd;            /* per object, VTK only */
  wf_csv *csv;             /* CSV only */
  int csv_n;               /* its columns */
  double *row;             /* csv_n values */
  wf_world_energy *energy; /* per object */
  float (*pos)[4], (*vel)[4];
  float *xyz, *v3, *radius;
  uint32_t *id;
  char path[4096];
};

/* stats.csv: these columns, then elastic_energy and total_energy, then per object (in object
 * order) <name>.kinetic, <name>.potential, <name>.elastic, then per collider (in scene order)
 * the force and torque on it, the frame's average (wf_world_collider_force): <name>.fx, .fy, .fz
 * (N), <name>.tx, .ty, .tz (N·m, about its pivot). */
static const char *const csv_columns[] = {
    "frame",      "time",      "kinetic_energy", "potential_energy", "momentum_x",  "momentum_y",
    "momentum_z", "max_speed", "particles",      "vertices",         "ms_per_frame"};
#define CSV_BASE  ((int)(sizeof csv_columns / sizeof csv_columns[0]))
#define CSV_FIXED (CSV_BASE + 2)
static const char *const csv_energy[] = {"kinetic", "potential", "elastic"};
static const char *const csv_force[] = {"fx", "fy", "fz", "tx", "ty", "tz"};

/* The first column of the colliders' forces. */
static int csv_forces_at(const wf_run_outputs *o) { return CSV_FIXED + 3 * o->n_objects; }

wf_run_outputs_desc wf_run_outputs_desc_default(void) {
  wf_run_outputs_desc d = {"out", WF_SCENE_OUT_VTK | WF_SCENE_OUT_CSV, 1, 0, 0};
  return d;
}

wf_run_outputs_desc wf_run_outputs_desc_from_scene(const wf_scene *sc) {
  wf_run_outputs_desc d = wf_run_outputs_desc_default();
  if (!sc) return d;
  d.dir = sc->outputs.dir;
  d.formats = sc->outputs.formats;
  d.every = sc->outputs.every;
  d.checkpoint_every = sc->outputs.checkpoint_every;
  return d;
}

/* o->path = the path of a file; WF_ERR_INVALID when it does not fit. */
static wf_status name(wf_run_outputs *o, wf_run_file file, const char *object, int64_t frame) {
  size_t n = wf_run_outputs_path(o->path, sizeof o->path, o->dir, file, object, frame);
  return n < sizeof o->path ? WF_OK : WF_ERR_INVALID;
}

/* o->path relative to the output directory: how a collection names its files. */
static const char *in_dir(const wf_run_outputs *o) { return o->path + strlen(o->dir) + 1; }

static wf_status alloc_buffers(wf_run_outputs *o) {
  uint32_t most = 1;
  for (int i = 0; i < o->n_objects; i++) {
    wf_world_object obj;
    wf_world_object_get(o->w, i, &obj);
    if (obj.point_count > most) most = obj.point_count;
  }
  o->pos = malloc((size_t)most * sizeof *o->pos);
  o->vel = malloc((size_t)most * sizeof *o->vel);
  o->xyz = malloc((size_t)most * 3 * sizeof *o->xyz);
  o->v3 = malloc((size_t)most * 3 * sizeof *o->v3);
  o->radius = malloc((size_t)most * sizeof *o->radius);
  o->id = malloc((size_t)most * sizeof *o->id);
  o->pvd = calloc((size_t)o->n_objects + 1, sizeof *o->pvd);
  if (!o->pos || !o->vel || !o->xyz || !o->v3 || !o->radius || !o->id || !o->pvd)
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_create",
                     "no memory for the output buffers (%u points)", most);
  return WF_OK;
}

/* One collection per object; after a resume it lists the earlier frames' files that are there. */
static wf_status open_collections(wf_run_outputs *o, int64_t resume) {
  wf_status st = WF_OK;
  for (int i = 0; i < o->n_objects && st == WF_OK; i++) {
    wf_world_object obj;
    wf_world_object_get(o->w, i, &obj);
    if ((st = name(o, WF_RUN_FILE_PVD, obj.name, 0)) == WF_OK)
      st = wf_pvd_create(o->path, &o->pvd[i]);
    for (int64_t f = o->every; st == WF_OK && f <= resume; f += o->every) {
      if ((st = name(o, WF_RUN_FILE_VTP, obj.name, f)) != WF_OK) break;
      if (access(o->path, R_OK) != 0) continue;
      st = wf_pvd_add(o->pvd[i], (double)f * wf_world_frame_dt(o->w), 0, in_dir(o));
    }
  }
  return st;
}

/* Rows of an earlier run's stats.csv (at `old`) with frame <= upto, appended to o->csv. */
static wf_status csv_keep_rows(wf_run_outputs *o, const char *old, int64_t upto) {
  FILE *f = fopen(old, "r");
  if (!f) return WF_OK;
  char *line = NULL;
  size_t cap = 0;
  wf_status st = WF_OK;
  for (bool header = true; st == WF_OK && getline(&line, &cap, f) > 0; header = false) {
    if (header) continue;
    double *v = o->row;
    char *s = line, *end;
    int k = 0;
    for (; k < o->csv_n; k++) {
      v[k] = strtod(s, &end);
      if (end == s) break;
      s = end;
      if (*s == ',') s++;
    }
    if (k == o->csv_n && v[0] <= (double)upto) st = wf_csv_append(o->csv, v);
  }
  free(line);
  fclose(f);
  return st;
}

static wf_status open_csv(wf_run_outputs *o, int64_t resume) {
  wf_status st = name(o, WF_RUN_FILE_CSV, NULL, 0);
  if (st != WF_OK) return st;
  char old[sizeof o->path + 8];
  snprintf(old, sizeof old, "%s.old", o->path);
  int n_col = wf_world_collider_count(o->w);
  o->csv_n = csv_forces_at(o) + 6 * n_col;
  o->row = calloc((size_t)o->csv_n, sizeof *o->row);
  o->energy = calloc((size_t)o->n_objects + 1, sizeof *o->energy);
  const char **cols = calloc((size_t)o->csv_n, sizeof *cols);
  char *names = calloc((size_t)o->csv_n + 1, WF_SCENE_NAME_MAX + 16);
  if (!o->row || !o->energy || !cols || !names) {
    free(cols), free(names);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_create", "no memory for stats.csv");
  }
  for (int k = 0; k < CSV_BASE; k++)
    cols[k] = csv_columns[k];
  cols[CSV_BASE] = "elastic_energy", cols[CSV_BASE + 1] = "total_energy";
  for (int i = 0; i < o->n_objects; i++) {
    wf_world_object obj;
    wf_world_object_get(o->w, i, &obj);
    for (int q = 0; q < 3; q++) {
      char *c = names + (size_t)(3 * i + q) * (WF_SCENE_NAME_MAX + 16);
      snprintf(c, WF_SCENE_NAME_MAX + 16, "%s.%s", obj.name, csv_energy[q]);
      cols[CSV_FIXED + 3 * i + q] = c;
    }
  }
  for (int k = 0; k < n_col; k++)
    for (int q = 0; q < 6; q++) {
      int at = csv_forces_at(o) + 6 * k + q;
      char *c = names + (size_t)at * (WF_SCENE_NAME_MAX + 16);
      snprintf(c, WF_SCENE_NAME_MAX + 16, "%s.%s", wf_world_collider_name(o->w, k), csv_force[q]);
      cols[at] = c;
    }
  bool keep = resume > 0 && rename(o->path, old) == 0;
  st = wf_csv_open(o->path, cols, o->csv_n, &o->csv);
  free(cols), free(names);
  if (st == WF_OK && keep) st = csv_keep_rows(o, old, resume);
  if (keep && st != WF_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", wf_last_error());
    if (o->csv) wf_csv_close(o->csv), o->csv = NULL;
    rename(old, o->path); /* the earlier file, as it was */
    return wf__error(st, NULL, "%s", msg);
  }
  if (keep) remove(old);
  return st;
}

wf_status wf_run_outputs_create(wf_world *w, const wf_run_outputs_desc *desc,
                                wf_run_outputs **out) {
  if (!w || !out) return wf__error(WF_ERR_INVALID, __func__, "w or out is NULL");
  *out = NULL;
  wf_run_outputs_desc d = desc ? *desc : wf_run_outputs_desc_default();
  const char *dir = d.dir && *d.dir ? d.dir : "out";
  size_t dl = strlen(dir);
  while (dl > 1 && dir[dl - 1] == '/')
    dl--;
  wf_run_outputs *o = calloc(1, sizeof *o);
  if (o) o->dir = malloc(dl + 1);
  if (!o || !o->dir) {
    free(o);
    return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for the outputs of '%s'", dir);
  }
  memcpy(o->dir, dir, dl);
  o->dir[dl] = '\0';
  o->w = w;
  o->formats = d.formats;
  o->every = d.every > 0 ? d.every : 1;
  o->checkpoint_every = d.checkpoint_every > 0 ? d.checkpoint_every : 0;
  o->n_objects = wf_world_object_count(w);
  wf_status st = wf_dir_create(o->dir);
  if (st == WF_OK) st = alloc_buffers(o);
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_VTK)) st = open_collections(o, d.resume_frame);
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_CSV)) st = open_csv(o, d.resume_frame);
  if (st != WF_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", wf_last_error());
    wf_run_outputs_close(o);
    return wf__error(st, NULL, "%s", msg);
  }
  *out = o;
  return WF_OK;
}

wf_status wf_run_outputs_close(wf_run_outputs *o) {
  if (!o) return WF_OK;
  wf_status st = WF_OK;
  for (int i = 0; o->pvd && i < o->n_objects; i++)
    wf_pvd_destroy(o->pvd[i]);
  if (o->csv) st = wf_csv_close(o->csv);
  free(o->row), free(o->energy);
  free(o->pvd), free(o->pos), free(o->vel), free(o->xyz), free(o->v3), free(o->radius);
  free(o->id), free(o->dir), free(o);
  return st;
}

const char *wf_run_outputs_dir(const wf_run_outputs *o) { return o ? o->dir : NULL; }

unsigned wf_run_outputs_due(const wf_run_outputs *o, int64_t frame) {
  if (!o) return 0;
  bool last = frame == (int64_t)wf_world_frames(o->w);
  unsigned due = 0;
  if (frame % o->every == 0 || last) due |= WF_RUN_OUTPUTS_FRAME;
  if ((o->checkpoint_every > 0 && frame % o->checkpoint_every == 0) || last)
    due |= WF_RUN_OUTPUTS_CHECKPOINT;
  return due;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Object i's state into the buffers: xyz, velocity, radius (particles) and global id. */
static wf_status gather(wf_run_outputs *o, int i, wf_world_object *obj) {
  wf_status st = wf_world_object_get(o->w, i, obj);
  if (st == WF_OK) st = wf_world_object_download(o->w, i, o->pos, o->vel);
  if (st != WF_OK) return st;
  for (size_t j = 0; j < obj->point_count; j++) {
    for (int k = 0; k < 3; k++)
      o->xyz[3 * j + k] = o->pos[j][k], o->v3[3 * j + k] = o->vel[j][k];
    o->radius[j] = o->pos[j][3];
    o->id[j] = obj->first + (uint32_t)j;
  }
  return WF_OK;
}

static wf_status write_ply(wf_run_outputs *o, const wf_world_object *obj, int64_t frame) {
  wf_status st = name(o, WF_RUN_FILE_PLY, obj->name, frame);
  if (st != WF_OK) return st;
  if (obj->kind == WF_WORLD_CLOTH) {
    wf_ply_mesh m = {obj->point_count, o->xyz, NULL, obj->triangle_count, obj->triangles, o->v3};
    return wf_ply_write_mesh(o->path, &m);
  }
  wf_ply_points p = {obj->point_count, o->xyz, o->radius, o->v3, o->id};
  return wf_ply_write_points(o->path, &p);
}

static wf_status write_vtp(wf_run_outputs *o, int i, const wf_world_object *obj, int64_t frame) {
  wf_status st = name(o, WF_RUN_FILE_VTP, obj->name, frame);
  if (st != WF_OK) return st;
  bool cloth = obj->kind == WF_WORLD_CLOTH;
  wf_vtk_array arrays[3] = {{"velocity", WF_VTK_FLOAT32, 3, o->v3},
                            {"radius", WF_VTK_FLOAT32, 1, o->radius},
                            {"id", WF_VTK_UINT32, 1, o->id}};
  wf_vtp_desc d = {obj->point_count,
                   o->xyz,
                   cloth ? obj->triangle_count : 0,
                   cloth ? obj->triangles : NULL,
                   arrays,
                   cloth ? 1 : 3,
                   true};
  st = wf_vtp_write(o->path, &d);
  double t = (double)frame * wf_world_frame_dt(o->w);
  return st != WF_OK ? st : wf_pvd_add(o->pvd[i], t, 0, in_dir(o));
}

wf_status wf_run_outputs_write_frame(wf_run_outputs *o, int64_t frame, double ms_per_frame) {
  if (!o) return wf__error(WF_ERR_INVALID, __func__, "o is NULL");
  wf_status st = wf_world_check(o->w);
  bool points = o->formats & (WF_SCENE_OUT_PLY | WF_SCENE_OUT_VTK);
  for (int i = 0; points && i < o->n_objects && st == WF_OK; i++) {
    wf_world_object obj;
    st = gather(o, i, &obj);
    if (st == WF_OK && (o->formats & WF_SCENE_OUT_PLY)) st = write_ply(o, &obj, frame);
    if (st == WF_OK && (o->formats & WF_SCENE_OUT_VTK)) st = write_vtp(o, i, &obj, frame);
  }
  if (st == WF_OK && o->csv) {
    wf_world_stats s;
    st = wf_world_stats_get(o->w, &s);
    if (st == WF_OK) st = wf_world_energy_get(o->w, o->energy, NULL);
    double base[CSV_FIXED] = {(double)s.frame,        s.time,        s.kinetic_energy,
                              s.potential_energy,     s.momentum[0], s.momentum[1],
                              s.momentum[2],          s.max_speed,   (double)s.particle_count,
                              (double)s.vertex_count, ms_per_frame,  s.elastic_energy,
                              s.total_energy};
    memcpy(o->row, base, sizeof base);
    for (int i = 0; i < o->n_objects; i++) {
      o->row[CSV_FIXED + 3 * i] = o->energy[i].kinetic;
      o->row[CSV_FIXED + 3 * i + 1] = o->energy[i].potential;
      o->row[CSV_FIXED + 3 * i + 2] = o->energy[i].elastic;
    }
    for (int k = 0; st == WF_OK && k < wf_world_collider_count(o->w); k++) {
      double *r = o->row + csv_forces_at(o) + 6 * k;
      st = wf_world_collider_force(o->w, k, r, r + 3);
    }
    if (st == WF_OK) st = wf_csv_append(o->csv, o->row);
  }
  return st;
}

wf_status wf_run_outputs_write_checkpoint(wf_run_outputs *o, int64_t frame) {
  if (!o) return wf__error(WF_ERR_INVALID, __func__, "o is NULL");
  wf_status st = wf_world_check(o->w); /* never a checkpoint of an unhealthy frame */
  if (st == WF_OK) st = name(o, WF_RUN_FILE_CHECKPOINT, NULL, frame);
  return st != WF_OK ? st : wf_world_save(o->w, o->path);
}
