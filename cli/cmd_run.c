/* `weft run SCENE`: a headless simulation. Loads the scene (with --set overrides), creates the
 * world (on one device or several), steps the frames and hands each one to the engine's run
 * outputs (weft/outputs.h), which decide what is written when and under which name: frame 0 (the
 * initial state, before the first step), then every `outputs.every` frames and the last, the
 * formats the scene asks for (PLY per object, VTP per object with one .pvd collection each and
 * scene.pvd over all, stats.csv), checkpoints every `outputs.checkpoint_every` frames and after
 * the last one. This file parses the options, drives the world, times the frames for stats.csv,
 * draws pictures (--render or "png" in outputs.formats: the library cannot, it does not link the
 * viewer), numbered consecutively from 0, and reports progress.
 *
 * On several devices (--device cpu:0,cpu:1, or the scene's list) the runtime is restarted with the
 * CPU devices the list names before the world is made, and the devices' shares are printed at the
 * end.
 *
 * Invariants: the output directory is created and checked before any simulation; --resume
 * continues from a checkpoint's frame with the rows and collection entries of the earlier frames
 * kept, and gives bitwise the state of an uninterrupted run. Exit 0 ok, 1 runtime failure, 2 bad
 * usage or an invalid scene.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "render_frames.h"
#include "run_guard.h"
#include "weft/weft.h"

void wf_cmd_run_usage(FILE *f) {
  fputs(
      "usage: weft run SCENE [--frames N] [--out DIR] [--device D[,D...]]\n"
      "                [--set key.path=value ...] [--every N] [--resume CHECKPOINT]\n"
      "                [--resume-with-changes CHECKPOINT] [--render]\n"
      "                [--video FILE] [--quiet]\n"
      "\n"
      "Runs a scene headless and writes its outputs (the scene's `outputs`: PLY, VTK .vtp/.pvd,\n"
      "stats.csv, PNG, checkpoints) into the output directory, from frame 0 (the initial state).\n"
      "\n"
      "options:\n"
      "  --frames N          frames to simulate in all (default: simulation.frames)\n"
      "  --out DIR           output directory (default: outputs.dir), created if needed\n"
      "  --device D[,D...]   cpu, cpu:N, cuda, cuda:N, auto or all (default: simulation.devices);\n"
      "                      several (cuda:0,cuda:1 or all): the particles are split over them\n"
      "  --set key.path=V    override a scene value, e.g. --set simulation.substeps=16\n"
      "                      (repeatable; V is JSON, or a string when it is not)\n"
      "  --every N           write outputs every N frames (default: outputs.every)\n"
      "  --resume CKPT       continue from a checkpoint written by `weft run` of this scene;\n"
      "                      refused (exit 2, nothing written) when its scene differs in\n"
      "                      anything that changes the physics, naming each difference\n"
      "  --resume-with-changes CKPT\n"
      "                      the same, accepting the differences (listed on stderr, in\n"
      "                      <out>/resume_log.txt and in <out>/run.json)\n"
      "  --render            also draw PNG frames <out>/render/frame_NNNNNN.png, numbered 0, 1,\n"
      "                      2, ... (frame 0, then every N frames; ffmpeg -i frame_%%06d.png),\n"
      "                      headless through EGL with the viewer's renderer; Mesa without a GPU.\n"
      "                      \"png\" in outputs.formats does the same\n"
      "  --color-by MODE[:MAX] colour the pictures by object, speed, strain (cloth) or\n"
      "                      contact_force (particles), the ramp's top at MAX (m/s, strain, N)\n"
      "  --video FILE        also encode those pictures into a video (H.264 when FFmpeg has\n"
      "                      libx264, else MPEG-4 part 2; yuv420p; container from the name:\n"
      "                      .mp4, .mkv, .mov, .avi) at fps / every frames per second; kept\n"
      "                      only when the run ends well\n"
      "  --quiet             no progress output\n"
      "  -h, --help          show this help\n"
      "\n"
      "Exit status: 0 ok, 1 runtime failure, 2 bad usage or invalid scene, 130/143 stopped by\n"
      "SIGINT/SIGTERM after finishing the frame and writing checkpoint_<frame>.wfck. A frame the\n"
      "device-side health check finds unhealthy (NaN/inf, simulation.max_speed,\n"
      "simulation.max_penetration) stops the run with status 1, naming the object, the particle\n"
      "or vertex, the frame and the quantity, after writing the state of the last healthy frame\n"
      "as checkpoint_last_good_<frame>.wfck. A rule of simulation.stop_when that is met ends the\n"
      "run after that frame (status 0), saying which; <out>/run.json records it.\n",
      f);
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

/* The closing line: what the run wrote, where, and how fast it stepped. */
static void show_written(const char *dir, unsigned formats, int64_t ran, double seconds,
                         long frames_out, long checkpoints, long pictures) {
  char what[256] = "";
  size_t at = 0;
  static const struct {
    unsigned bit;
    const char *name;
  } kinds[] = {{WF_SCENE_OUT_PLY, "PLY"},
               {WF_SCENE_OUT_VTK, "VTK .vtp + .pvd"},
               {WF_SCENE_OUT_CSV, "stats.csv rows"}};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    if (formats & kinds[k].bit)
      at += (size_t)snprintf(what + at, sizeof what - at, "%s%s", at ? ", " : "", kinds[k].name);
  fprintf(stderr, "weft run: done: %lld frame%s stepped in %.2f s (%.2f frames/s); wrote ",
          (long long)ran, ran == 1 ? "" : "s", seconds, seconds > 0 ? (double)ran / seconds : 0.0);
  if (frames_out)
    fprintf(stderr, "%ld frame%s (%s)", frames_out, frames_out == 1 ? "" : "s",
            at ? what : "no per-frame format");
  if (checkpoints)
    fprintf(stderr, "%s%ld checkpoint%s", frames_out ? ", " : "", checkpoints,
            checkpoints == 1 ? "" : "s");
  if (pictures)
    fprintf(stderr, "%s%ld picture%s (render/)", frames_out || checkpoints ? ", " : "", pictures,
            pictures == 1 ? "" : "s");
  if (!frames_out && !checkpoints && !pictures) fputs("nothing", stderr);
  fprintf(stderr, " to %s/\n", dir);
}

static int fail_runtime(const char *what) {
  fprintf(stderr, "\nweft run: %s: %s\n", what, wf_last_error());
  return WF_EXIT_FAILURE;
}

/* ---- resuming ------------------------------------------------------------------------------- */

/* Compares the checkpoint's scene with this one before anything is restored or written: each
 * difference in what changes the physics is printed (key path, the checkpoint's value, this
 * scene's); without accept they refuse the resume (exit 2), as does a checkpoint written before
 * checkpoints recorded their scene (it cannot be checked). */
static int check_resume(wf_world *w, const char *ckpt, bool accept) {
  wf_scene_change ch[WF_WORLD_MAX_CHANGES];
  int n = 0;
  bool checked = false;
  if (wf_world_checkpoint_changes(w, ckpt, ch, WF_WORLD_MAX_CHANGES, &n, &checked) != WF_OK)
    return fail_runtime("resuming");
  const char *head = accept ? "weft run: warning" : "weft run";
  if (!checked) {
    fprintf(stderr,
            "%s: %s was written before checkpoints recorded their scene's physics: it cannot be "
            "checked against %s\n",
            head, ckpt, "this scene");
    if (!accept)
      fputs("weft run: if it is from this scene, resume with --resume-with-changes; else run "
            "the scene from the start (nothing was written)\n",
            stderr);
    return accept ? WF_EXIT_OK : WF_EXIT_USAGE;
  }
  if (n == 0) return WF_EXIT_OK;
  fprintf(stderr,
          "%s: the scene differs from checkpoint %s in %d value%s that change%s the "
          "physics:\n",
          head, ckpt, n, n == 1 ? "" : "s", n == 1 ? "s" : "");
  for (int i = 0; i < n && i < WF_WORLD_MAX_CHANGES; i++)
    fprintf(stderr, "  %s: %s in the checkpoint, %s in this scene\n", ch[i].path, ch[i].checkpoint,
            ch[i].scene);
  if (n > WF_WORLD_MAX_CHANGES) fprintf(stderr, "  ... and %d more\n", n - WF_WORLD_MAX_CHANGES);
  if (accept) return WF_EXIT_OK;
  fputs("weft run: refusing to resume (nothing was written): undo the changes, run the scene "
        "from the start, or accept them with --resume-with-changes\n",
        stderr);
  return WF_EXIT_USAGE;
}

/* An output failed on this rank. One process: the run guard's stop (the last good state kept).
 * Over MPI ranks only this rank failed, and the guard's reads of the state would wait for the
 * others: the message, and the ranks agree to stop (wf_cli_mpi_agree). */
static int failed(wf_world *w, const char *dir, const char *what) {
  if (wf_cli_mpi_ranks() > 1) return fail_runtime(what);
  return wf_run_guard_failed(w, dir, "run", what);
}

/* ---- the command ---------------------------------------------------------------------------- */

int wf_cmd_run(int argc, char **argv) {
  const char *out_dir = NULL, *resume = NULL, *video = NULL;
  wf_cli_scene_args sa = {.cmd = "weft run", .usage = wf_cmd_run_usage, .takes_frames = true};
  long every = 0;
  bool quiet = false, render = false, accept_changes = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool has_value = i + 1 < argc;
    int rc;
    if (strcmp(a, "--render") == 0) {
      render = true;
    } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
      quiet = true;
    } else if (strcmp(a, "--every") == 0 && has_value) {
      if (!wf_cli_parse_long(argv[++i], 1, 1000000000L, &every)) {
        fprintf(stderr, "weft run: --every '%s': expected an integer >= 1\n", argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(a, "--video") == 0 && has_value) {
      video = argv[++i];
    } else if (strcmp(a, "--out") == 0 && has_value) {
      out_dir = argv[++i];
    } else if (strcmp(a, "--resume") == 0 && has_value) {
      resume = argv[++i], accept_changes = false;
    } else if (strcmp(a, "--resume-with-changes") == 0 && has_value) {
      resume = argv[++i], accept_changes = true;
    } else if ((rc = wf_cli_common_arg(&sa, argc, argv, &i)) != WF_CLI_NEXT) {
      return rc;
    }
  }
  if (wf_cli_scene_args_done(&sa) != WF_EXIT_OK) return WF_EXIT_USAGE;

  wf_scene *sc = NULL;
  wf_world *w = NULL;
  wf_run_outputs *o = NULL;
  wf_cli_render *rend = NULL; /* --render (render_frames.c) */
  int rc = wf_cli_start_world(&sa, NULL, &sc, &w);
  if (rc != WF_EXIT_OK) return rc;
  if (resume && (rc = check_resume(w, resume, accept_changes)) != WF_EXIT_OK) goto done;
  if (resume && (accept_changes ? wf_world_load_checkpoint_with_changes(w, resume)
                                : wf_world_load_checkpoint(w, resume)) != WF_OK) {
    rc = fail_runtime("resuming");
    goto done;
  }
  /* which files, named how, and when: the engine's run outputs (weft/outputs.h) */
  wf_run_outputs_desc od = wf_run_outputs_desc_from_scene(sc);
  if (out_dir) od.dir = out_dir;
  /* over MPI ranks every rank reads the state at the same points (collectives); rank 0 writes to
   * the directory, rank r > 0 nothing (outputs.discard) but its piece of each particle object's
   * .vtp (rank 0 the .pvtp over them) and of each checkpoint (wf_world_save: beside rank 0's
   * manifest, in piece_dir); a last-good checkpoint of rank r goes to <dir>/ranks/<r> */
  char rank_dir[4200], piece_dir[4096];
  snprintf(piece_dir, sizeof piece_dir, "%s", od.dir && *od.dir ? od.dir : "out");
  for (size_t n = strlen(piece_dir); n > 1 && piece_dir[n - 1] == '/'; n--)
    piece_dir[n - 1] = '\0'; /* as wf_run_outputs_dir gives rank 0's directory */
  od.piece = wf_cli_mpi_rank(), od.pieces = wf_cli_mpi_ranks(); /* every rank its piece */
  od.piece_dir = piece_dir;
  if (wf_cli_mpi_rank() > 0) {
    snprintf(rank_dir, sizeof rank_dir, "%s/ranks/%d", od.dir && *od.dir ? od.dir : "out",
             wf_cli_mpi_rank());
    od.dir = rank_dir;
    od.discard = true; /* the same reads of the world as rank 0's outputs, no files but pieces */
    quiet = true;
  }
  if (every > 0) od.every = (int)every;
  od.resume_frame = wf_world_frame(w);
  if (wf_run_outputs_create(w, &od, &o) != WF_OK) rc = fail_runtime("opening the outputs");
  if ((rc = wf_cli_mpi_agree(rc, "weft run")) != WF_EXIT_OK) goto done;
  const char *dir = wf_run_outputs_dir(o);
  /* "png" in outputs.formats is --render: pictures need the viewer's renderer, which the library
   * must not link (viewer/ and cli/ sit above engine/), so this program draws them */
  if (od.formats & WF_SCENE_OUT_PNG) render = true;
  if ((render || video) && wf_cli_mpi_ranks() > 1) { /* (every rank would decide alike) */
    fprintf(stderr, "weft run: --render, --video and \"png\" are not supported over MPI ranks "
                    "yet: run without them (the .vtp/.pvtp outputs open in ParaView)\n");
    rc = WF_EXIT_USAGE;
    goto done;
  }
  if ((render || video) &&
      (rc = wf_cli_render_open("weft run", sc, w, render ? dir : NULL, &rend)) != 0) {
    if (rc == WF_EXIT_USAGE && (od.formats & WF_SCENE_OUT_PNG))
      fprintf(stderr, "weft run: (\"png\" is in outputs.formats: remove it, or build weft with "
                      "the viewer)\n");
    goto done;
  }
  /* --video: the same pictures, at the rate they are written (cli/video.h) */
  if (video &&
      (rc = wf_cli_render_video(
           rend, video, 1.0 / wf_world_frame_dt(w) / (double)(od.every > 0 ? od.every : 1))) != 0)
    goto done;
  wf_scene_destroy(sc);
  sc = NULL;
  int64_t start = wf_world_frame(w), total = wf_world_frames(w);
  if (!quiet) {
    char devs[512];
    wf_cli_world_devices(w, devs, sizeof devs);
    fprintf(stderr, "weft run: %s on %s, frames %lld..%lld, output to %s/\n", sa.path, devs,
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
  /* pictures are numbered 0, 1, 2, ... in the order they are drawn: frame f is picture
   * ceil(f / every), so a resumed run continues the numbers and ffmpeg's %06d pattern works */
  int64_t every_out = od.every > 0 ? od.every : 1;
  long n_frames_out = 0, n_checkpoints = 0, n_pictures = 0; /* for the closing line */
  double t_start = wf_cli_now_s();
  if (start == 0) { /* the initial state is frame 0 */
    if (wf_run_outputs_write_frame(o, 0, 0.0) != WF_OK) rc = failed(w, dir, "writing the outputs");
    if ((rc = wf_cli_mpi_agree(rc, "weft run")) != WF_EXIT_OK) goto done;
    n_frames_out++;
    if (rend && wf_cli_render_frame(rend, 0, 0) != 0) {
      rc = WF_EXIT_FAILURE;
      goto done;
    }
    n_pictures += rend != NULL;
  }
  double t_row = wf_cli_now_s();
  int64_t f_row = start;
  for (int64_t f = start + 1; f <= wf_world_last_frame(w); f++) { /* a stop rule shortens it */
    if (wf_world_step(w, 1) != WF_OK) {
      if (wf_cli_mpi_ranks() > 1) /* every rank stops here (the world agreed): say which one */
        fprintf(stderr, "\nweft run: MPI rank %d of %d: stepping frame %lld: %s\n",
                wf_cli_mpi_rank(), wf_cli_mpi_ranks(), (long long)f, wf_last_error());
      rc = wf_run_guard_failed(w, dir, "run", "stepping");
      goto done;
    }
    unsigned due = wf_run_outputs_due(o, f);
    if (due & WF_RUN_OUTPUTS_FRAME) {
      wf_device_synchronize(wf_world_device(w));
      double t = wf_cli_now_s(), ms = 1e3 * (t - t_row) / (double)(f - f_row);
      if (wf_run_outputs_write_frame(o, f, ms) != WF_OK) rc = failed(w, dir, "writing the outputs");
      if ((rc = wf_cli_mpi_agree(rc, "weft run")) != WF_EXIT_OK) goto done;
      t_row = wf_cli_now_s(), f_row = f;
      n_frames_out++;
      if (rend && wf_cli_render_frame(rend, f, (f + every_out - 1) / every_out) != 0) {
        rc = WF_EXIT_FAILURE;
        goto done;
      }
      n_pictures += rend != NULL;
    }
    if (due & WF_RUN_OUTPUTS_CHECKPOINT) {
      if (wf_run_outputs_write_checkpoint(o, f) != WF_OK)
        rc = failed(w, dir, "writing a checkpoint");
      if ((rc = wf_cli_mpi_agree(rc, "weft run")) != WF_EXIT_OK) goto done;
      n_checkpoints++;
    }
    progress_show(&pr, f, f == wf_world_last_frame(w));
    /* over MPI ranks the launcher signals each rank when it gets to it: they agree, and every
     * rank stops after the same frame */
    if (wf_cli_mpi_any(wf_run_guard_signal() != 0) && f < wf_world_last_frame(w)) {
      rc = wf_run_guard_interrupted(w, piece_dir, "run"); /* every rank names rank 0's */
      goto done;
    }
  }
  wf_world_stop stop;
  if (wf_world_stop_reason(w, &stop) && stop.frame > start)
    fprintf(stderr, "weft run: stopped: %s\n", stop.text); /* even --quiet: a result */
  if (start >= total && !quiet)
    fprintf(stderr, "weft run: nothing to do: the world is at frame %lld of %lld\n",
            (long long)start, (long long)total);
  if (!quiet && wf_world_device_count(w) > 1) show_placement(w);
  if (!quiet) {
    wf_device_synchronize(wf_world_device(w));
    show_written(dir, od.formats, wf_world_frame(w) - start, wf_cli_now_s() - t_start, n_frames_out,
                 n_checkpoints, n_pictures);
  }
done:
  if (wf_cli_render_finish(rend, rc == WF_EXIT_OK) != 0 && rc == WF_EXIT_OK) rc = WF_EXIT_FAILURE;
  if (o && wf_run_outputs_close(o) != WF_OK && rc == WF_EXIT_OK)
    rc = fail_runtime("closing the outputs");
  wf_cli_render_close(rend);
  wf_scene_destroy(sc);
  wf_world_destroy(w);
  wf_shutdown();
  return rc;
}
