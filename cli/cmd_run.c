/* `weft run SCENE`: a headless simulation. Loads the scene (with --set overrides), creates the
 * world (on one device or several), steps the frames and writes, every `outputs.every` frames, the
 * formats the scene asks for: PLY per object (<name>_<frame>.ply), VTP per object with one
 * <name>.pvd collection each, and stats.csv; checkpoints every `outputs.checkpoint_every` frames
 * and after the last one (checkpoint_<frame>.wfck). Every file goes through weft/io.h (atomic
 * writes).
 *
 * On several devices (--device cpu:0,cpu:1, or the scene's list) the runtime is restarted with the
 * CPU devices the list names before the world is made, and the devices' shares are printed at the
 * end.
 *
 * Invariants: the output directory is created and checked before any simulation; frame numbers
 * in file names are zero-padded to 6 digits; --resume continues from a checkpoint's frame with
 * the rows and collection entries of the earlier frames kept, and gives bitwise the state of an
 * uninterrupted run. Exit 0 ok, 1 runtime failure, 2 bad usage or an invalid scene.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "render_frames.h"
#include "run_guard.h"
#include "weft/weft.h"

#define PATH_MAX_LEN 4096

void wf_cmd_run_usage(FILE *f) {
  fputs(
      "usage: weft run SCENE [--frames N] [--out DIR] [--device D[,D...]]\n"
      "                [--set key.path=value ...] [--every N] [--resume CHECKPOINT] [--render]\n"
      "                [--quiet]\n"
      "\n"
      "Runs a scene headless and writes its outputs (the scene's `outputs`: PLY, VTK .vtp/.pvd,\n"
      "stats.csv, checkpoints) into the output directory.\n"
      "\n"
      "options:\n"
      "  --frames N          frames to simulate in all (default: simulation.frames)\n"
      "  --out DIR           output directory (default: outputs.dir), created if needed\n"
      "  --device D[,D...]   cpu, cpu:N, cuda, cuda:N, auto or all (default: simulation.devices);\n"
      "                      several (cuda:0,cuda:1 or all): the particles are split over them\n"
      "  --set key.path=V    override a scene value, e.g. --set simulation.substeps=16\n"
      "                      (repeatable; V is JSON, or a string when it is not)\n"
      "  --every N           write outputs every N frames (default: outputs.every)\n"
      "  --resume CKPT       continue from a checkpoint written by `weft run` of this scene\n"
      "  --render            also draw PNG frames <out>/render/frame_NNNNNN.png (every N frames,\n"
      "                      headless through EGL with the viewer's renderer; Mesa without a GPU)\n"
      "  --quiet             no progress output\n"
      "  -h, --help          show this help\n"
      "\n"
      "Exit status: 0 ok, 1 runtime failure, 2 bad usage or invalid scene, 130/143 stopped by\n"
      "SIGINT/SIGTERM after finishing the frame and writing checkpoint_<frame>.wfck. A frame the\n"
      "device-side health check finds unhealthy (NaN/inf, simulation.max_speed,\n"
      "simulation.max_penetration) stops the run with status 1, naming the object, the particle\n"
      "or vertex, the frame and the quantity, after writing the state of the last healthy frame\n"
      "as checkpoint_last_good_<frame>.wfck.\n",
      f);
}

/* mkdir -p; on failure errno is set and the path that failed is in `failed`. */
static int make_dirs(const char *dir, char *failed, size_t n) {
  char p[PATH_MAX_LEN];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
    errno = ENAMETOOLONG;
    snprintf(failed, n, "%s", dir);
    return -1;
  }
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) {
        snprintf(failed, n, "%s", p);
        return -1;
      }
      struct stat sb;
      if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        if (errno == 0 || S_ISREG(sb.st_mode)) errno = ENOTDIR;
        snprintf(failed, n, "%s", p);
        return -1;
      }
      *s = c;
      if (c == '\0') break;
    }
  }
  return 0;
}

/* ---- outputs -------------------------------------------------------------------------------- */

typedef struct run_out {
  const char *dir;
  unsigned formats;
  wf_world *w;
  int n_objects;
  wf_pvd **pvd; /* per object, VTK only */
  wf_csv *csv;  /* CSV only */
  float (*pos)[4], (*vel)[4];
  float *xyz, *v3, *radius;
  uint32_t *id;
} run_out;

static const char *const csv_columns[] = {
    "frame",      "time",      "kinetic_energy", "potential_energy", "momentum_x",  "momentum_y",
    "momentum_z", "max_speed", "particles",      "vertices",         "ms_per_frame"};
#define CSV_N ((int)(sizeof csv_columns / sizeof csv_columns[0]))

static void join(char *dst, size_t n, const char *dir, const char *file) {
  snprintf(dst, n, "%s/%s", dir, file);
}

/* Rows of an earlier run's stats.csv with frame <= upto, re-appended after a resume. */
static wf_status csv_keep_rows(run_out *o, const char *path, int64_t upto) {
  FILE *f = fopen(path, "r");
  if (!f) return WF_OK;
  char line[4096];
  wf_status st = WF_OK;
  bool header = true;
  while (st == WF_OK && fgets(line, sizeof line, f)) {
    if (header) {
      header = false;
      continue;
    }
    double v[CSV_N];
    char *s = line, *end;
    int k = 0;
    for (; k < CSV_N; k++) {
      v[k] = strtod(s, &end);
      if (end == s) break;
      s = end;
      if (*s == ',') s++;
    }
    if (k == CSV_N && v[0] <= (double)upto) st = wf_csv_append(o->csv, v);
  }
  fclose(f);
  return st;
}

static wf_status outputs_open(run_out *o, int64_t start, int every) {
  char path[PATH_MAX_LEN], file[512];
  o->n_objects = wf_world_object_count(o->w);
  uint32_t most = 1;
  for (int i = 0; i < o->n_objects; i++) {
    wf_world_object obj;
    wf_world_object_get(o->w, i, &obj);
    if (obj.point_count > most) most = obj.point_count;
  }
  o->pos = malloc((size_t)most * 16);
  o->vel = malloc((size_t)most * 16);
  o->xyz = malloc((size_t)most * 12);
  o->v3 = malloc((size_t)most * 12);
  o->radius = malloc((size_t)most * 4);
  o->id = malloc((size_t)most * 4);
  o->pvd = calloc((size_t)o->n_objects + 1, sizeof *o->pvd);
  if (!o->pos || !o->vel || !o->xyz || !o->v3 || !o->radius || !o->id || !o->pvd) {
    fputs("weft run: out of memory\n", stderr);
    return WF_ERR_OUT_OF_MEMORY;
  }
  wf_status st = WF_OK;
  if (o->formats & WF_SCENE_OUT_VTK)
    for (int i = 0; i < o->n_objects && st == WF_OK; i++) {
      wf_world_object obj;
      wf_world_object_get(o->w, i, &obj);
      snprintf(file, sizeof file, "%s.pvd", obj.name);
      join(path, sizeof path, o->dir, file);
      st = wf_pvd_create(path, &o->pvd[i]);
      /* after a resume, list the earlier frames' files that are there */
      for (int64_t f = every; st == WF_OK && f <= start; f += every) {
        snprintf(file, sizeof file, "%s_%06lld.vtp", obj.name, (long long)f);
        join(path, sizeof path, o->dir, file);
        if (access(path, R_OK) == 0)
          st = wf_pvd_add(o->pvd[i], (double)f * wf_world_frame_dt(o->w), 0, file);
      }
    }
  if (st == WF_OK && (o->formats & WF_SCENE_OUT_CSV)) {
    join(path, sizeof path, o->dir, "stats.csv");
    char old[PATH_MAX_LEN + 8];
    snprintf(old, sizeof old, "%s.old", path);
    bool keep = start > 0 && rename(path, old) == 0;
    st = wf_csv_open(path, csv_columns, CSV_N, &o->csv);
    if (st == WF_OK && keep) st = csv_keep_rows(o, old, start);
    if (keep) remove(old);
  }
  return st;
}

static wf_status outputs_close(run_out *o) {
  wf_status st = WF_OK;
  for (int i = 0; o->pvd && i < o->n_objects; i++)
    wf_pvd_destroy(o->pvd[i]);
  if (o->csv) st = wf_csv_close(o->csv);
  free(o->pvd), free(o->pos), free(o->vel), free(o->xyz), free(o->v3), free(o->radius), free(o->id);
  return st;
}

static wf_status write_object(run_out *o, int i, int64_t frame) {
  char path[PATH_MAX_LEN], file[512];
  wf_world_object obj;
  wf_status st = wf_world_object_get(o->w, i, &obj);
  if (st == WF_OK) st = wf_world_object_download(o->w, i, o->pos, o->vel);
  if (st != WF_OK) return st;
  size_t n = obj.point_count;
  bool cloth = obj.kind == WF_WORLD_CLOTH;
  for (size_t j = 0; j < n; j++) {
    for (int k = 0; k < 3; k++)
      o->xyz[3 * j + k] = o->pos[j][k], o->v3[3 * j + k] = o->vel[j][k];
    o->radius[j] = o->pos[j][3];
    o->id[j] = obj.first + (uint32_t)j;
  }
  if (o->formats & WF_SCENE_OUT_PLY) {
    snprintf(file, sizeof file, "%s_%06lld.ply", obj.name, (long long)frame);
    join(path, sizeof path, o->dir, file);
    if (cloth) {
      wf_ply_mesh m = {n, o->xyz, NULL, obj.triangle_count, obj.triangles};
      st = wf_ply_write_mesh(path, &m);
    } else {
      wf_ply_points p = {n, o->xyz, o->radius, o->v3, o->id};
      st = wf_ply_write_points(path, &p);
    }
    if (st != WF_OK) return st;
  }
  if (o->formats & WF_SCENE_OUT_VTK) {
    snprintf(file, sizeof file, "%s_%06lld.vtp", obj.name, (long long)frame);
    join(path, sizeof path, o->dir, file);
    wf_vtk_array arrays[3] = {{"velocity", WF_VTK_FLOAT32, 3, o->v3},
                              {"radius", WF_VTK_FLOAT32, 1, o->radius},
                              {"id", WF_VTK_UINT32, 1, o->id}};
    wf_vtp_desc d = {n,
                     o->xyz,
                     cloth ? obj.triangle_count : 0,
                     cloth ? obj.triangles : NULL,
                     arrays,
                     cloth ? 1 : 3,
                     true};
    st = wf_vtp_write(path, &d);
    if (st == WF_OK) st = wf_pvd_add(o->pvd[i], (double)frame * wf_world_frame_dt(o->w), 0, file);
  }
  return st;
}

static wf_status write_frame(run_out *o, int64_t frame, double ms_per_frame) {
  wf_status st = wf_world_check(o->w);
  for (int i = 0; i < o->n_objects && st == WF_OK; i++)
    if (o->formats & (WF_SCENE_OUT_PLY | WF_SCENE_OUT_VTK)) st = write_object(o, i, frame);
  if (st == WF_OK && o->csv) {
    wf_world_stats s;
    st = wf_world_stats_get(o->w, &s);
    double row[CSV_N] = {(double)s.frame,        s.time,        s.kinetic_energy,
                         s.potential_energy,     s.momentum[0], s.momentum[1],
                         s.momentum[2],          s.max_speed,   (double)s.particle_count,
                         (double)s.vertex_count, ms_per_frame};
    if (st == WF_OK) st = wf_csv_append(o->csv, row);
  }
  return st;
}

static wf_status write_checkpoint(run_out *o, int64_t frame) {
  char path[PATH_MAX_LEN], file[64];
  snprintf(file, sizeof file, "checkpoint_%06lld.wfck", (long long)frame);
  join(path, sizeof path, o->dir, file);
  wf_status st = wf_world_check(o->w); /* never a checkpoint of an unhealthy frame */
  return st != WF_OK ? st : wf_world_save(o->w, path);
}

/* ---- progress ------------------------------------------------------------------------------- */

typedef struct progress {
  bool quiet, tty;
  int64_t start, total, last_pct;
  double t0, dt;
  wf_device *dev;
} progress;

static void progress_show(progress *p, int64_t frame, bool done) {
  if (p->quiet) return;
  int64_t pct = p->total > 0 ? 100 * frame / p->total : 100;
  if (!p->tty && !done && pct / 10 <= p->last_pct / 10) return;
  wf_device_synchronize(p->dev); /* frames/s of finished frames, not of enqueued ones */
  double el = wf_cli_now_s() - p->t0;
  int64_t ran = frame - p->start, left = p->total - frame;
  double fps = el > 0.0 ? (double)ran / el : 0.0;
  double eta = fps > 0.0 ? (double)left / fps : 0.0;
  if (p->tty) {
    int width = 24, fill = p->total > 0 ? (int)(width * frame / p->total) : width;
    char bar[32];
    for (int i = 0; i < width; i++)
      bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] frame %lld/%lld  t=%.3f s  %.2f frames/s  ETA %.0f s   ", bar,
            (long long)frame, (long long)p->total, (double)frame * p->dt, fps, eta);
    if (done) fputc('\n', stderr);
    fflush(stderr);
    return;
  }
  p->last_pct = pct;
  fprintf(stderr, "weft run: frame %lld/%lld (%lld%%)  t=%.3f s  %.2f frames/s  ETA %.0f s\n",
          (long long)frame, (long long)p->total, (long long)pct, (double)frame * p->dt, fps, eta);
}

/* Which device ran what, after a run on several devices. */
static void show_placement(wf_world *w) {
  for (int i = 0; i < wf_world_device_count(w); i++) {
    wf_world_placement p;
    if (wf_world_placement_get(w, i, &p) != WF_OK) return;
    char whole[48] = "";
    if (p.whole_cloths) snprintf(whole, sizeof whole, ", %d whole", p.whole_cloths);
    fprintf(stderr,
            "weft run:   %-8s %u particles (+%u ghosts), %d cloths (%llu vertices +%llu ghosts%s), "
            "%.1f MiB\n",
            wf_device_name(p.device), p.particles, p.ghosts, p.cloths,
            (unsigned long long)p.vertices, (unsigned long long)p.cloth_ghosts, whole,
            (double)(p.device_bytes + p.cloth_bytes) / (1024.0 * 1024.0));
  }
}

/* ---- the command ---------------------------------------------------------------------------- */

static int fail_runtime(const char *what) {
  fprintf(stderr, "\nweft run: %s: %s\n", what, wf_last_error());
  return WF_EXIT_FAILURE;
}

int wf_cmd_run(int argc, char **argv) {
  const char *out_dir = NULL, *device = NULL, *resume = NULL;
  wf_cli_scene_args sa = {.cmd = "weft run", .usage = wf_cmd_run_usage};
  long frames = 0, every = 0;
  bool quiet = false, render = false;
  wf_cli_render *rend = NULL; /* --render (render_frames.c) */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      wf_cmd_run_usage(stdout);
      return WF_EXIT_OK;
    } else if (strcmp(a, "--render") == 0) {
      render = true;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      quiet = true;
    } else if (strcmp(a, "--frames") == 0 && has_value) {
      if (!wf_cli_parse_long(argv[++i], 1, 1000000000L, &frames)) {
        fprintf(stderr, "weft run: --frames '%s': expected an integer in [1, 10^9]\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--every") == 0 && has_value) {
      if (!wf_cli_parse_long(argv[++i], 1, 1000000000L, &every)) {
        fprintf(stderr, "weft run: --every '%s': expected an integer >= 1\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--out") == 0 && has_value) {
      out_dir = argv[++i];
    } else if (strcmp(a, "--device") == 0 && has_value) {
      device = argv[++i];
    } else if (strcmp(a, "--resume") == 0 && has_value) {
      resume = argv[++i];
    } else if (wf_cli_scene_arg(&sa, argc, argv, &i) != WF_EXIT_OK) {
      return WF_EXIT_USAGE;
    }
  }
  if (wf_cli_scene_args_done(&sa) != WF_EXIT_OK) return WF_EXIT_USAGE;
  const char *scene_path = sa.path;

  wf_init_desc init = {0};
  init.log_level = WF_LOG_WARN;
  init.log = wf_cli_log;
  wf_scene *sc = NULL;
  int started = wf_cli_start_scene(&init, &sa, device, &sc);
  if (started != WF_EXIT_OK) return started;
  wf_status st = WF_OK;
  char dir[PATH_MAX_LEN];
  snprintf(dir, sizeof dir, "%s", out_dir ? out_dir : sc->outputs.dir);
  size_t dl = strlen(dir);
  while (dl > 1 && dir[dl - 1] == '/')
    dir[--dl] = '\0';
  char failed[PATH_MAX_LEN];
  if (make_dirs(dir, failed, sizeof failed) != 0) {
    fprintf(stderr, "weft run: cannot create the output directory '%s': '%s': %s\n", dir, failed,
            strerror(errno));
    wf_scene_destroy(sc);
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "weft run: the output directory '%s' is not writable: %s\n", dir,
            strerror(errno));
    wf_scene_destroy(sc);
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }

  wf_world_desc wd = wf_world_desc_default();
  wd.device = device;
  wd.frames = (int)frames;
  wf_world *w = NULL;
  int rc = WF_EXIT_OK;
  run_out o = {0};
  o.dir = dir;
  o.formats = sc->outputs.formats;
  int out_every = every > 0 ? (int)every : sc->outputs.every;
  int ck_every = sc->outputs.checkpoint_every;
  st = wf_world_create(sc, &wd, &w);
  int render_rc = st == WF_OK && render ? wf_cli_render_open("weft run", sc, w, dir, &rend) : 0;
  wf_scene_destroy(sc);
  if (render_rc != 0) {
    rc = render_rc;
    goto done;
  }
  if (st != WF_OK) {
    rc = fail_runtime("creating the world");
    goto done;
  }
  o.w = w;
  if (resume && (st = wf_world_load_checkpoint(w, resume)) != WF_OK) {
    rc = fail_runtime("resuming");
    goto done;
  }
  int64_t start = wf_world_frame(w), total = wf_world_frames(w);
  if ((st = outputs_open(&o, start, out_every)) != WF_OK) {
    rc = fail_runtime("opening the outputs");
    goto done;
  }
  if (!quiet) {
    char devs[512];
    wf_cli_world_devices(w, devs, sizeof devs);
    fprintf(stderr, "weft run: %s on %s, frames %lld..%lld, output to %s/\n", scene_path, devs,
            (long long)start, (long long)total, dir);
  }
  wf_run_guard_install(); /* SIGINT/SIGTERM: finish the frame, checkpoint, exit 130/143 */
  progress pr = {quiet,
                 isatty(2) != 0,
                 start,
                 total,
                 -1,
                 wf_cli_now_s(),
                 wf_world_frame_dt(w),
                 wf_world_device(w)};
  double t_row = wf_cli_now_s();
  int64_t f_row = start;
  for (int64_t f = start + 1; f <= total; f++) {
    if ((st = wf_world_step(w, 1)) != WF_OK) {
      rc = wf_run_guard_failed(w, dir, "run", "stepping");
      goto done;
    }
    bool out = f % out_every == 0 || f == total;
    bool ck = (ck_every > 0 && f % ck_every == 0) || f == total;
    if (out) {
      wf_device_synchronize(wf_world_device(w));
      double t = wf_cli_now_s(), ms = 1e3 * (t - t_row) / (double)(f - f_row);
      if ((st = write_frame(&o, f, ms)) != WF_OK) {
        rc = wf_run_guard_failed(w, dir, "run", "writing the outputs");
        goto done;
      }
      t_row = wf_cli_now_s(), f_row = f;
      if (rend && wf_cli_render_frame(rend, f) != 0) {
        rc = WF_EXIT_FAILURE;
        goto done;
      }
    }
    if (ck && (st = write_checkpoint(&o, f)) != WF_OK) {
      rc = wf_run_guard_failed(w, dir, "run", "writing a checkpoint");
      goto done;
    }
    progress_show(&pr, f, f == total);
    if (wf_run_guard_signal() && f < total) {
      rc = wf_run_guard_interrupted(w, dir, "run");
      goto done;
    }
  }
  if (start >= total && !quiet)
    fprintf(stderr, "weft run: nothing to do: the world is at frame %lld of %lld\n",
            (long long)start, (long long)total);
  if (!quiet && wf_world_device_count(w) > 1) show_placement(w);
done:
  if (o.w || o.pvd) {
    wf_status cs = outputs_close(&o);
    if (cs != WF_OK && rc == WF_EXIT_OK) rc = fail_runtime("closing the outputs");
  }
  wf_cli_render_close(rend);
  wf_world_destroy(w);
  wf_shutdown();
  return rc;
}
