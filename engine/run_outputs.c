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
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "internal/error.h"
#include "output_usd.h"
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
  case WF_RUN_FILE_SCENE_PVD: len = snprintf(buf, n, "%s/scene.pvd", dir); break;
  case WF_RUN_FILE_CSV: len = snprintf(buf, n, "%s/stats.csv", dir); break;
  case WF_RUN_FILE_CHECKPOINT: len = snprintf(buf, n, "%s/checkpoint_%06lld.wfck", dir, f); break;
  case WF_RUN_FILE_LAST_GOOD:
    len = snprintf(buf, n, "%s/checkpoint_last_good_%06lld.wfck", dir, f);
    break;
  case WF_RUN_FILE_SUMMARY: len = snprintf(buf, n, "%s/run.json", dir); break;
  case WF_RUN_FILE_RESUME_LOG: len = snprintf(buf, n, "%s/resume_log.txt", dir); break;
  case WF_RUN_FILE_USD: len = snprintf(buf, n, "%s/scene.usda", dir); break;
  case WF_RUN_FILE_USD_FRAME: len = snprintf(buf, n, "%s/usd/frame_%06lld.usda", dir, f); break;
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
  wf_pvd **pvd;          /* per object, VTK only */
  wf_pvd *scene_pvd;     /* every object's .vtp per frame, VTK only */
  wf_pvd_entry *entries; /* per object: this frame's entry of scene.pvd */
  char (*rel)[96];       /* per object: the file those entries name */
  wf_scene_up_axis up_axis;
  wfo_usd *usd;            /* USD only */
  wf_csv *csv;             /* CSV only */
  int csv_n;               /* its columns */
  double *row;             /* csv_n values */
  wf_world_energy *energy; /* per object */
  float (*pos)[4], (*vel)[4];
  float (*omega)[4];
  float *xyz, *v3, *w3, *normal, *radius;
  uint32_t *id;
  int64_t first_frame; /* the frame the run started from (resume_frame) */
  bool discard;        /* wf_run_outputs_desc.discard: the world's calls, no files but pieces */
  int piece, pieces;   /* wf_run_outputs_desc's: this run's piece of `pieces` (> 1), or none */
  char *piece_dir;     /* where the pieces and the .pvtp go */
  wf_pvd **piece_pvd;  /* per object, piece 0 only: <object>_pieces.pvd */
  bool opened;         /* create succeeded: close writes run.json */
  char path[4096];
};

/* stats.csv: these columns, then csv_totals, then per object (in object order) <name>.<e> for
 * each e of csv_energy, then per collider (in scene order) the force and torque on it, the
 * frame's average (wf_world_collider_force): <name>.fx, .fy, .fz (N), <name>.tx, .ty, .tz (N·m,
 * about its pivot). */
static const char *const csv_columns[] = {
    "frame",      "time",      "kinetic_energy", "potential_energy", "momentum_x",  "momentum_y",
    "momentum_z", "max_speed", "particles",      "vertices",         "ms_per_frame"};
static const char *const csv_totals[] = {"elastic_energy", "total_energy", "rotational_energy"};
#define CSV_BASE  ((int)(sizeof csv_columns / sizeof csv_columns[0]))
#define CSV_FIXED (CSV_BASE + (int)(sizeof csv_totals / sizeof csv_totals[0]))
static const char *const csv_energy[] = {"kinetic", "potential", "elastic", "rotational"};
#define CSV_PER ((int)(sizeof csv_energy / sizeof csv_energy[0])) /* columns per object */
static const char *const csv_force[] = {"fx", "fy", "fz", "tx", "ty", "tz"};

/* The first column of the colliders' forces. */
static int csv_forces_at(const wf_run_outputs *o) { return CSV_FIXED + CSV_PER * o->n_objects; }

wf_run_outputs_desc wf_run_outputs_desc_default(void) {
  wf_run_outputs_desc d = {
      "out", WF_SCENE_OUT_VTK | WF_SCENE_OUT_CSV, 1, 0, 0, WF_SCENE_UP_Y, NULL, 0, 0, NULL, false};
  return d;
}

wf_run_outputs_desc wf_run_outputs_desc_from_scene(const wf_scene *sc) {
  wf_run_outputs_desc d = wf_run_outputs_desc_default();
  if (!sc) return d;
  d.dir = sc->outputs.dir;
  d.formats = sc->outputs.formats;
  d.every = sc->outputs.every;
  d.checkpoint_every = sc->outputs.checkpoint_every;
  d.up_axis = sc->outputs.up_axis;
  d.scene = sc;
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
  o->omega = malloc((size_t)most * sizeof *o->omega);
  o->w3 = malloc((size_t)most * 3 * sizeof *o->w3);
  o->normal = malloc((size_t)most * 3 * sizeof *o->normal);
  o->radius = malloc((size_t)most * sizeof *o->radius);
  o->id = malloc((size_t)most * sizeof *o->id);
  o->pvd = calloc((size_t)o->n_objects + 1, sizeof *o->pvd);
  o->entries = calloc((size_t)o->n_objects + 1, sizeof *o->entries);
  o->rel = calloc((size_t)o->n_objects + 1, sizeof *o->rel);
  if (!o->pos || !o->vel || !o->xyz || !o->v3 || !o->radius || !o->id || !o->pvd || !o->omega ||
      !o->w3 || !o->normal || !o->entries || !o->rel)
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_create",
                     "no memory for the output buffers (%u points)", most);
  return WF_OK;
}

/* Object i's .vtp of `frame` as scene.pvd names it: o->rel[i] and o->entries[i]; o->path is its
 * full path. */
static wf_status scene_entry(wf_run_outputs *o, int i, const char *object, int64_t frame) {
  wf_status st = name(o, WF_RUN_FILE_VTP, object, frame);
  if (st != WF_OK) return st;
  snprintf(o->rel[i], sizeof o->rel[i], "%s", in_dir(o));
  o->entries[i] = (wf_pvd_entry){(double)frame * wf_world_frame_dt(o->w), i, object, o->rel[i]};
  return WF_OK;
}

/* One collection per object and scene.pvd over all of them (entries of one time, one part per
 * object: ParaView reads them as one multiblock data set per time step). After a resume they
 * list the earlier frames' files that are there, frame 0 and the resume frame included. */
static wf_status open_collections(wf_run_outputs *o, int64_t resume) {
  wf_status st = name(o, WF_RUN_FILE_SCENE_PVD, NULL, 0);
  if (st == WF_OK) st = wf_pvd_create(o->path, &o->scene_pvd);
  for (int i = 0; i < o->n_objects && st == WF_OK; i++) {
    wf_world_object obj;
    wf_world_object_get(o->w, i, &obj);
    if ((st = name(o, WF_RUN_FILE_PVD, obj.name, 0)) == WF_OK)
      st = wf_pvd_create(o->path, &o->pvd[i]);
  }
  /* frames 0, every, 2 every, ... and the resume frame itself (the last frame of the earlier run,
   * when it was not a multiple of every) */
  for (int64_t f = 0; st == WF_OK && resume > 0 && f <= resume;
       f = f < resume && f + o->every > resume ? resume : f + o->every) {
    size_t n = 0;
    for (int i = 0; i < o->n_objects && st == WF_OK; i++) {
      wf_world_object obj;
      wf_world_object_get(o->w, i, &obj);
      if ((st = scene_entry(o, i, obj.name, f)) != WF_OK || access(o->path, R_OK) != 0) continue;
      o->entries[n] = o->entries[i], o->entries[n].part = i; /* n <= i */
      n++;
      st = wf_pvd_add(o->pvd[i], o->entries[n - 1].time, 0, o->rel[i]);
    }
    if (st == WF_OK && n) st = wf_pvd_add_entries(o->scene_pvd, o->entries, n);
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
  if (o->discard) { /* the row is computed (the same world calls), never written */
    free(cols), free(names);
    /* no measuring of its own: over MPI ranks the solvers agree on it at the next step (the
     * rank that writes stats.csv turned it on), and their force reads are not collectives */
    return WF_OK;
  }
  for (int k = 0; k < CSV_BASE; k++)
    cols[k] = csv_columns[k];
  for (int k = CSV_BASE; k < CSV_FIXED; k++)
    cols[k] = csv_totals[k - CSV_BASE];
  for (int i = 0; i < o->n_objects; i++) {
    wf_world_object obj;
    wf_world_object_get(o->w, i, &obj);
    for (int q = 0; q < CSV_PER; q++) {
      char *c = names + (size_t)(CSV_PER * i + q) * (WF_SCENE_NAME_MAX + 16);
      snprintf(c, WF_SCENE_NAME_MAX + 16, "%s.%s", obj.name, csv_energy[q]);
      cols[CSV_FIXED + CSV_PER * i + q] = c;
    }
  }
  for (int k = 0; k < n_col; k++)
    for (int q = 0; q < 6; q++) {
      int at = csv_forces_at(o) + 6 * k + q;
      char *c = names + (size_t)at * (WF_SCENE_NAME_MAX + 16);
      snprintf(c, WF_SCENE_NAME_MAX + 16, "%s.%s", wf_world_collider_name(o->w, k), csv_force[q]);
      cols[at] = c;
    }
  /* the force columns are read every written frame: the solvers sum them from the first */
  st = n_col > 0 ? wf_world_measure_collider_forces(o->w, true) : WF_OK;
  if (st != WF_OK) {
    free(cols), free(names);
    return st;
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

/* Appends one formatted line to a file of the run (created if missing). */
static wf_status append_line(wf_run_outputs *o, wf_run_file file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static wf_status append_line(wf_run_outputs *o, wf_run_file file, const char *fmt, ...) {
  wf_status st = name(o, file, NULL, 0);
  if (st != WF_OK) return st;
  FILE *f = fopen(o->path, "a");
  if (!f) return wf__error(WF_ERR_IO, NULL, "cannot open '%s': %s", o->path, strerror(errno));
  va_list ap;
  va_start(ap, fmt);
  int bad = vfprintf(f, fmt, ap) < 0;
  va_end(ap);
  bad |= fclose(f) != 0;
  return bad ? wf__error(WF_ERR_IO, NULL, "cannot write '%s': %s", o->path, strerror(errno))
             : WF_OK;
}

/* resume_log.txt: a restore that accepted scene changes (or could not check the scene). */
static wf_status write_resume_log(wf_run_outputs *o) {
  wf_world_resume r;
  wf_world_resume_get(o->w, &r);
  if (!r.resumed || (r.scene_checked && r.change_count == 0)) return WF_OK;
  wf_status st = append_line(
      o, WF_RUN_FILE_RESUME_LOG, "resumed at frame %lld from %s: %s\n", (long long)r.frame, r.path,
      !r.scene_checked ? "its scene could not be checked (the checkpoint predates the record of "
                         "its physics)"
                       : "its scene differs in what changes the physics; accepted:");
  for (int i = 0; st == WF_OK && i < r.change_count && i < WF_WORLD_MAX_CHANGES; i++)
    st = append_line(o, WF_RUN_FILE_RESUME_LOG, "  %s: %s in the checkpoint, %s in this run\n",
                     r.changes[i].path, r.changes[i].checkpoint, r.changes[i].scene);
  if (st == WF_OK && r.change_count > WF_WORLD_MAX_CHANGES)
    st = append_line(o, WF_RUN_FILE_RESUME_LOG, "  ... and %d more\n",
                     r.change_count - WF_WORLD_MAX_CHANGES);
  return st;
}

/* run.json: the run summary (weft/outputs.h), written whole through weft/io.h. */
static wf_status write_summary(wf_run_outputs *o) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "no memory for run.json");
  cJSON_AddNumberToObject(root, "first_frame", (double)o->first_frame);
  cJSON_AddNumberToObject(root, "last_frame", (double)wf_world_frame(o->w));
  cJSON_AddNumberToObject(root, "frames", wf_world_frames(o->w));
  cJSON_AddNumberToObject(root, "time", (double)wf_world_frame(o->w) * wf_world_frame_dt(o->w));
  wf_world_stop s;
  if (wf_world_stop_reason(o->w, &s)) {
    static const char *const kinds[] = {"time", "kinetic_energy_below", "max_speed_below"};
    char rule[48];
    snprintf(rule, sizeof rule, "simulation.stop_when[%d]", s.rule);
    cJSON *j = cJSON_AddObjectToObject(root, "stopped_by");
    cJSON_AddStringToObject(j, "rule", rule);
    cJSON_AddStringToObject(j, "kind", kinds[s.kind]);
    cJSON_AddNumberToObject(j, "threshold", s.threshold);
    cJSON_AddNumberToObject(j, "frames", s.frames);
    cJSON_AddNumberToObject(j, "frame", (double)s.frame);
    cJSON_AddNumberToObject(j, "time", s.time);
    cJSON_AddNumberToObject(j, "value", s.value);
    cJSON_AddStringToObject(j, "text", s.text);
  } else {
    cJSON_AddNullToObject(root, "stopped_by");
  }
  wf_world_resume r;
  wf_world_resume_get(o->w, &r);
  if (r.resumed) {
    cJSON *j = cJSON_AddObjectToObject(root, "resume");
    cJSON_AddStringToObject(j, "checkpoint", r.path);
    cJSON_AddNumberToObject(j, "frame", (double)r.frame);
    cJSON_AddBoolToObject(j, "scene_checked", r.scene_checked);
    cJSON *a = cJSON_AddArrayToObject(j, "scene_changes");
    for (int i = 0; i < r.change_count && i < WF_WORLD_MAX_CHANGES; i++) {
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "path", r.changes[i].path);
      cJSON_AddStringToObject(c, "checkpoint", r.changes[i].checkpoint);
      cJSON_AddStringToObject(c, "scene", r.changes[i].scene);
      cJSON_AddItemToArray(a, c);
    }
  } else {
    cJSON_AddNullToObject(root, "resume");
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "no memory for run.json");
  wf_status st = name(o, WF_RUN_FILE_SUMMARY, NULL, 0);
  wf_atomic_file *f = NULL;
  if (st == WF_OK) st = wf_atomic_file_open(o->path, &f);
  if (st == WF_OK) {
    wf_atomic_file_write(f, text, strlen(text));
    wf_atomic_file_write(f, "\n", 1);
    st = wf_atomic_file_commit(f);
  }
  cJSON_free(text);
  return st;
}

static wf_status open_pieces(wf_run_outputs *o, const wf_run_outputs_desc *d);

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
  o->up_axis = d.up_axis == WF_SCENE_UP_Z ? WF_SCENE_UP_Z : WF_SCENE_UP_Y;
  o->n_objects = wf_world_object_count(w);
  o->discard = d.discard;
  wf_status st = wf_dir_create(o->dir);
  if (st == WF_OK) st = alloc_buffers(o);
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_VTK) && !o->discard)
    st = open_collections(o, d.resume_frame);
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_USD) && !o->discard)
    st = wfo_usd_create(w, d.scene, o->dir, o->every, o->up_axis, d.resume_frame, &o->usd);
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_CSV)) st = open_csv(o, d.resume_frame);
  o->first_frame = d.resume_frame;
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_VTK) && d.pieces > 1) st = open_pieces(o, &d);
  if (st == WF_OK && !o->discard) st = write_resume_log(o);
  if (st != WF_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", wf_last_error());
    wf_run_outputs_close(o);
    return wf__error(st, NULL, "%s", msg);
  }
  o->opened = true;
  *out = o;
  return WF_OK;
}

wf_status wf_run_outputs_close(wf_run_outputs *o) {
  if (!o) return WF_OK;
  wf_status st = WF_OK;
  for (int i = 0; o->pvd && i < o->n_objects; i++)
    wf_pvd_destroy(o->pvd[i]);
  for (int i = 0; o->piece_pvd && i < o->n_objects; i++)
    wf_pvd_destroy(o->piece_pvd[i]);
  free(o->piece_pvd), free(o->piece_dir);
  wf_pvd_destroy(o->scene_pvd);
  wfo_usd_destroy(o->usd);
  if (o->csv) st = wf_csv_close(o->csv);
  wf_world_stop stop;
  if (o->csv && st == WF_OK && wf_world_stop_reason(o->w, &stop) &&
      stop.frame > o->first_frame) /* the rule fired in this run: say so under its rows */
    st = append_line(o, WF_RUN_FILE_CSV, "# stopped: %s\n", stop.text);
  if (o->opened && !o->discard) {
    wf_status s2 = write_summary(o);
    if (st == WF_OK) st = s2;
  }
  free(o->row), free(o->energy), free(o->entries), free(o->rel);
  free(o->omega), free(o->w3), free(o->normal);
  free(o->pvd), free(o->pos), free(o->vel), free(o->xyz), free(o->v3), free(o->radius);
  free(o->id), free(o->dir), free(o);
  return st;
}

const char *wf_run_outputs_dir(const wf_run_outputs *o) { return o ? o->dir : NULL; }

unsigned wf_run_outputs_due(const wf_run_outputs *o, int64_t frame) {
  if (!o) return 0;
  if (frame == 0) return WF_RUN_OUTPUTS_FRAME;    /* the initial state; never a checkpoint */
  bool last = frame == wf_world_last_frame(o->w); /* a stop rule's frame is the last one */
  unsigned due = 0;
  if (frame % o->every == 0 || last) due |= WF_RUN_OUTPUTS_FRAME;
  if ((o->checkpoint_every > 0 && frame % o->checkpoint_every == 0) || last)
    due |= WF_RUN_OUTPUTS_CHECKPOINT;
  return due;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Area-weighted vertex normals of a triangle mesh (unit length; 0 for a vertex of no triangle
 * with area), from the positions xyz, into n. */
void wfo_vertex_normals(const float *xyz, size_t count, const uint32_t *tri, size_t tris,
                        float *n) {
  memset(n, 0, count * 3 * sizeof *n);
  for (size_t t = 0; t < tris; t++) {
    const float *a = &xyz[3 * tri[3 * t]], *b = &xyz[3 * tri[3 * t + 1]],
                *c = &xyz[3 * tri[3 * t + 2]];
    float e[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float g[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    float x[3] = {e[1] * g[2] - e[2] * g[1], e[2] * g[0] - e[0] * g[2], e[0] * g[1] - e[1] * g[0]};
    for (int v = 0; v < 3; v++)
      for (int k = 0; k < 3; k++)
        n[3 * tri[3 * t + v] + k] += x[k];
  }
  for (size_t j = 0; j < count; j++) {
    float *v = &n[3 * j];
    float len = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    for (int k = 0; k < 3 && len > 0.0f; k++)
      v[k] /= len;
  }
}

/* outputs.up_axis "z": (x, y, z) -> (x, -z, y), a quarter turn about +x (a rotation, so
 * velocities, angular velocities and normals turn alike). */
static void to_z_up(float *v, size_t count) {
  for (size_t j = 0; j < count; j++) {
    float y = v[3 * j + 1], z = v[3 * j + 2];
    v[3 * j + 1] = -z, v[3 * j + 2] = y;
  }
}

/* Object i's state into the buffers: xyz, velocity, radius, angular velocity (particles), normal
 * (cloth) and global id, in the files' axes. */
static wf_status gather(wf_run_outputs *o, int i, wf_world_object *obj) {
  wf_status st = wf_world_object_get(o->w, i, obj);
  if (st == WF_OK) st = wf_world_object_download(o->w, i, o->pos, o->vel);
  bool cloth = obj->kind == WF_WORLD_CLOTH;
  if (st == WF_OK && !cloth) st = wf_world_object_download_omega(o->w, i, o->omega);
  if (st != WF_OK) return st;
  size_t n = obj->point_count;
  for (size_t j = 0; j < n; j++) {
    for (int k = 0; k < 3; k++) {
      o->xyz[3 * j + k] = o->pos[j][k], o->v3[3 * j + k] = o->vel[j][k];
      o->w3[3 * j + k] = cloth ? 0.0f : o->omega[j][k];
    }
    o->radius[j] = o->pos[j][3];
    o->id[j] = obj->first + (uint32_t)j;
  }
  if (cloth) wfo_vertex_normals(o->xyz, n, obj->triangles, obj->triangle_count, o->normal);
  if (o->up_axis == WF_SCENE_UP_Z) {
    to_z_up(o->xyz, n), to_z_up(o->v3, n), to_z_up(o->w3, n);
    if (cloth) to_z_up(o->normal, n);
  }
  return WF_OK;
}

static wf_status write_ply(wf_run_outputs *o, const wf_world_object *obj, int64_t frame) {
  wf_status st = name(o, WF_RUN_FILE_PLY, obj->name, frame);
  if (st != WF_OK) return st;
  if (obj->kind == WF_WORLD_CLOTH) {
    wf_ply_mesh m = {obj->point_count,    o->xyz,         o->normal,
                     obj->triangle_count, obj->triangles, o->v3};
    return wf_ply_write_mesh(o->path, &m);
  }
  wf_ply_points p = {obj->point_count, o->xyz, o->radius, o->v3, o->id, o->w3};
  return wf_ply_write_points(o->path, &p);
}

/* ---- pieces (wf_run_outputs_desc.pieces) ---------------------------------------------------- */

static wf_status open_pieces(wf_run_outputs *o, const wf_run_outputs_desc *d) {
  const char *dir = d->piece_dir && *d->piece_dir ? d->piece_dir : o->dir;
  o->piece = d->piece, o->pieces = d->pieces;
  o->piece_dir = strdup(dir);
  o->piece_pvd = calloc((size_t)o->n_objects + 1, sizeof *o->piece_pvd);
  if (!o->piece_dir || !o->piece_pvd)
    return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for the pieces");
  wf_status st = wf_dir_create(o->piece_dir);
  for (int i = 0; i < o->n_objects && st == WF_OK && o->piece == 0; i++) {
    wf_world_object obj;
    if ((st = wf_world_object_get(o->w, i, &obj)) != WF_OK) continue;
    snprintf(o->path, sizeof o->path, "%s/%s_pieces.pvd", o->piece_dir, obj.name);
    st = wf_pvd_create(o->path, &o->piece_pvd[i]);
  }
  return st;
}

static const char *vtk_type(wf_vtk_type t) { return t == WF_VTK_UINT32 ? "UInt32" : "Float32"; }

/* A cloth's piece from the vertices this rank owns (rows, *m of them, ascending): the triangles
 * whose lowest-index vertex it owns (each triangle has one such vertex and it one owner, so the
 * ranks' triangles are disjoint and cover the mesh) into tris, *nt of them, re-indexed to the
 * piece's points; those points' vertices (the owned ones and the others the triangles use,
 * ascending) into rows, *m of them. No triangles: no points (a mesh piece of bare points would
 * draw them). at: room for point_count. */
enum { PIECE_OUT = UINT32_MAX, PIECE_OWNED = UINT32_MAX - 1, PIECE_USED = UINT32_MAX - 2 };
static void cloth_piece(const wf_world_object *obj, uint32_t *rows, uint32_t *m, uint32_t *tris,
                        size_t *nt, uint32_t *at) {
  const uint32_t *t = obj->triangles;
  for (uint32_t v = 0; v < obj->point_count; v++)
    at[v] = PIECE_OUT;
  for (uint32_t r = 0; r < *m; r++)
    at[rows[r]] = PIECE_OWNED;
  *nt = 0;
  for (size_t k = 0; k < obj->triangle_count; k++, t += 3) {
    uint32_t lo = t[0] < t[1] ? t[0] : t[1];
    if (at[t[2] < lo ? t[2] : lo] != PIECE_OWNED) continue;
    for (int c = 0; c < 3; c++) {
      tris[3 * *nt + c] = t[c];
      if (at[t[c]] == PIECE_OUT) at[t[c]] = PIECE_USED;
    }
    (*nt)++;
  }
  *m = 0;
  for (uint32_t v = 0; v < obj->point_count && *nt; v++)
    if (at[v] != PIECE_OUT) rows[*m] = v, at[v] = (*m)++;
  for (size_t k = 0; k < 3 * *nt; k++)
    tris[k] = at[tris[k]];
}

/* <object>_<frame>.pvtp over every piece, with the point arrays `arrays` (their names, types
 * and components), and its entry in <object>_pieces.pvd: piece 0's. */
static wf_status write_collection(wf_run_outputs *o, int i, const wf_world_object *obj,
                                  const wf_vtk_array *arrays, int n_arrays, int64_t frame) {
  snprintf(o->path, sizeof o->path, "%s/%s_%06lld.pvtp", o->piece_dir, obj->name, (long long)frame);
  wf_atomic_file *f = NULL;
  wf_status st = wf_atomic_file_open(o->path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f, "<?xml version=\"1.0\"?>\n<VTKFile type=\"PPolyData\" version=\"1.0\" "
                           "byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
                           "  <PPolyData GhostLevel=\"0\">\n    <PPointData>\n");
  for (int k = 0; k < n_arrays; k++)
    wf_atomic_file_printf(f,
                          "      <PDataArray type=\"%s\" Name=\"%s\" "
                          "NumberOfComponents=\"%d\"/>\n",
                          vtk_type(arrays[k].type), arrays[k].name, arrays[k].components);
  wf_atomic_file_printf(f, "    </PPointData>\n    <PPoints>\n      <PDataArray type=\"Float32\" "
                           "NumberOfComponents=\"3\"/>\n    </PPoints>\n");
  for (int p = 0; p < o->pieces; p++)
    wf_atomic_file_printf(f, "    <Piece Source=\"%s_%06lld_p%d.vtp\"/>\n", obj->name,
                          (long long)frame, p);
  wf_atomic_file_printf(f, "  </PPolyData>\n</VTKFile>\n");
  if ((st = wf_atomic_file_commit(f)) != WF_OK) return st;
  char rel[160];
  snprintf(rel, sizeof rel, "%s_%06lld.pvtp", obj->name, (long long)frame);
  return o->piece_pvd[i]
             ? wf_pvd_add(o->piece_pvd[i], (double)frame * wf_world_frame_dt(o->w), 0, rel)
             : WF_OK;
}

/* Piece `piece` of object i's frame: the rows of the points and of the arrays write_vtp wrote
 * (n_arrays of them, 4-byte elements) that this rank's partitions own (wf_world_object_owned,
 * in id order; the state was just read, so as of this frame). A particle object's piece is
 * those particles; a cloth's is cloth_piece's, with the point array "vertex" added. Piece 0 also
 * writes the collection over every piece. Each rank writes what it simulates, and the pieces
 * are the whole. */
#define PIECE_ARRAYS 4 /* at most write_vtp's arrays of an object */
static wf_status write_piece(wf_run_outputs *o, int i, const wf_world_object *obj,
                             const wf_vtk_array *arrays, int n_arrays, int64_t frame) {
  bool cloth = obj->kind == WF_WORLD_CLOTH;
  size_t n = obj->point_count ? obj->point_count : 1, per = 3, nt = 0;
  for (int k = 0; k < n_arrays; k++)
    per += (size_t)arrays[k].components;
  uint32_t m = 0, *rows = malloc(n * sizeof *rows), *tris = NULL, *at = NULL;
  float *cols = malloc(n * per * sizeof *cols); /* xyz, then each array's */
  if (cloth) {
    tris = malloc(((size_t)obj->triangle_count * 3 + 1) * sizeof *tris);
    at = malloc(n * sizeof *at);
  }
  wf_status st = rows && cols && (!cloth || (tris && at))
                     ? WF_OK
                     : wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_write_frame",
                                 "no memory for a piece of '%s' (%zu points)", obj->name, n);
  if (st == WF_OK) st = wf_world_object_owned(o->w, i, rows, &m);
  if (st == WF_OK && cloth) cloth_piece(obj, rows, &m, tris, &nt, at);
  wf_vtk_array part[PIECE_ARRAYS + 1];
  float *xyz = cols, *to = cols + 3 * (size_t)m;
  for (int k = 0; k < n_arrays && st == WF_OK; k++) { /* floats and uint32 ids alike */
    int c = arrays[k].components;
    part[k] = arrays[k], part[k].data = to;
    for (uint32_t r = 0; r < m; r++)
      memcpy(to + (size_t)r * c, (const char *)arrays[k].data + (size_t)rows[r] * c * 4,
             (size_t)c * 4);
    to += (size_t)m * c;
  }
  for (uint32_t r = 0; r < m && st == WF_OK; r++)
    memcpy(xyz + 3 * (size_t)r, o->xyz + 3 * (size_t)rows[r], 12);
  int n_part = n_arrays;
  if (cloth) part[n_part++] = (wf_vtk_array){"vertex", WF_VTK_UINT32, 1, rows};
  snprintf(o->path, sizeof o->path, "%s/%s_%06lld_p%d.vtp", o->piece_dir, obj->name,
           (long long)frame, o->piece);
  wf_vtp_desc d = {m, xyz, nt, tris, part, n_part, true};
  if (st == WF_OK) st = wf_vtp_write(o->path, &d);
  if (st == WF_OK && o->piece == 0) st = write_collection(o, i, obj, part, n_part, frame);
  free(rows), free(cols), free(tris), free(at);
  return st;
}

static wf_status write_vtp(wf_run_outputs *o, int i, const wf_world_object *obj, int64_t frame) {
  wf_status st = scene_entry(o, i, obj->name, frame);
  if (st != WF_OK) return st;
  bool cloth = obj->kind == WF_WORLD_CLOTH;
  wf_vtk_array points[4] = {{"velocity", WF_VTK_FLOAT32, 3, o->v3},
                            {"radius", WF_VTK_FLOAT32, 1, o->radius},
                            {"id", WF_VTK_UINT32, 1, o->id},
                            {"angular_velocity", WF_VTK_FLOAT32, 3, o->w3}};
  wf_vtk_array mesh[2] = {{"velocity", WF_VTK_FLOAT32, 3, o->v3},
                          {"normal", WF_VTK_FLOAT32, 3, o->normal}};
  wf_vtp_desc d = {obj->point_count,
                   o->xyz,
                   cloth ? obj->triangle_count : 0,
                   cloth ? obj->triangles : NULL,
                   cloth ? mesh : points,
                   cloth ? 2 : 4,
                   true};
  if (!o->discard) st = wf_vtp_write(o->path, &d);
  if (st == WF_OK && !o->discard) st = wf_pvd_add(o->pvd[i], o->entries[i].time, 0, o->rel[i]);
  if (st == WF_OK && o->pieces > 1) st = write_piece(o, i, obj, d.arrays, d.array_count, frame);
  return st;
}

wf_status wf_run_outputs_write_frame(wf_run_outputs *o, int64_t frame, double ms_per_frame) {
  if (!o) return wf__error(WF_ERR_INVALID, __func__, "o is NULL");
  wf_status st = wf_world_check(o->w);
  /* (discard: the USD writer's reads of the state are the gather's, made here instead) */
  bool points = o->formats & (WF_SCENE_OUT_PLY | WF_SCENE_OUT_VTK) ||
                (o->discard && (o->formats & WF_SCENE_OUT_USD));
  for (int i = 0; points && i < o->n_objects && st == WF_OK; i++) {
    wf_world_object obj;
    st = gather(o, i, &obj);
    if (st == WF_OK && (o->formats & WF_SCENE_OUT_PLY) && !o->discard)
      st = write_ply(o, &obj, frame);
    if (st == WF_OK && (o->formats & WF_SCENE_OUT_VTK)) st = write_vtp(o, i, &obj, frame);
  }
  /* scene.pvd lists the frame once every object's file is there */
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_VTK) && o->n_objects && !o->discard)
    st = wf_pvd_add_entries(o->scene_pvd, o->entries, (size_t)o->n_objects);
  if (st == WF_OK && o->usd) st = wfo_usd_write_frame(o->usd, frame);
  if (st == WF_OK && (o->csv || (o->discard && (o->formats & WF_SCENE_OUT_CSV)))) {
    wf_world_stats s;
    st = wf_world_stats_get(o->w, &s);
    if (st == WF_OK) st = wf_world_energy_get(o->w, o->energy, NULL);
    double base[CSV_FIXED] = {(double)s.frame,
                              s.time,
                              s.kinetic_energy,
                              s.potential_energy,
                              s.momentum[0],
                              s.momentum[1],
                              s.momentum[2],
                              s.max_speed,
                              (double)s.particle_count,
                              (double)s.vertex_count,
                              ms_per_frame,
                              s.elastic_energy,
                              s.total_energy,
                              s.rotational_energy};
    memcpy(o->row, base, sizeof base);
    for (int i = 0; i < o->n_objects; i++) {
      double *r = o->row + CSV_FIXED + CSV_PER * i;
      r[0] = o->energy[i].kinetic, r[1] = o->energy[i].potential;
      r[2] = o->energy[i].elastic, r[3] = o->energy[i].rotational;
    }
    for (int k = 0; st == WF_OK && k < wf_world_collider_count(o->w); k++) {
      double *r = o->row + csv_forces_at(o) + 6 * k;
      st = wf_world_collider_force(o->w, k, r, r + 3);
    }
    if (st == WF_OK && o->csv) st = wf_csv_append(o->csv, o->row);
  }
  return st;
}

wf_status wf_run_outputs_write_checkpoint(wf_run_outputs *o, int64_t frame) {
  if (!o) return wf__error(WF_ERR_INVALID, __func__, "o is NULL");
  wf_status st = wf_world_check(o->w); /* never a checkpoint of an unhealthy frame */
  /* discard: the same world call; over MPI ranks it writes this rank's piece beside rank 0's
   * checkpoint (wf_world_save takes rank 0's path), else a file that is removed after */
  if (st == WF_OK && o->discard) {
    const char *tmp = getenv("TMPDIR");
    snprintf(o->path, sizeof o->path, "%s/weft-discarded-%ld.wfck", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    st = wf_world_save(o->w, o->path);
    remove(o->path);
    return st;
  }
  if (st == WF_OK) st = name(o, WF_RUN_FILE_CHECKPOINT, NULL, frame);
  return st != WF_OK ? st : wf_world_save(o->w, o->path);
}
