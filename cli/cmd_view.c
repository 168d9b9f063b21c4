/* `weft view SCENE`: the scene running live in a window (GLFW, viewer/), or, with --bench and no
 * display, drawn headless through EGL.
 *
 * Design: the simulation runs on a thread of its own, the window on the main thread (GLFW wants
 * the main thread). They share only the world's readback ring (weft/world.h), whose push and
 * latest never wait for each other, and a few flags under a mutex (pause, step, reset, speed,
 * quit). Per frame the simulation thread waits until at most 2 (run ahead) or 1 (paced) of its
 * frames are still running on the device — its own work, so frames do not pile up in the queues —
 * then, paced, sleeps until the frame is due in real time (x speed), begins the frame's timing,
 * steps and pushes. The window takes the newest finished frame whenever it draws. A thread rather
 * than interleaving both on the main thread: a slow simulation frame on the CPU backend (where
 * stepping is host work) or a slow draw then never delays the other side, and the display rate is
 * max(sim, render) rather than their sum.
 *
 * Reset restores a checkpoint of the initial state written at start (to a temporary directory),
 * so the world and the ring stay alive and frames held by the window stay valid.
 *
 * --bench N: the simulation runs N frames ahead of the display; printed are the device-side
 * figures of the delivered frames (weft/world.h's readback timing: simulation per frame, idle time
 * of the solver streams between frames, the copy and its wait), the render and displayed frame
 * times, and the ring's counters. --screenshot PATH --frames N: run N frames, wait until the
 * window shows frame N, save it (the 3-D view without the overlay) and exit.
 *
 * Exit status: 0 ok, 1 runtime failure (including no display), 2 bad usage or invalid scene.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "render_frames.h"
#include "video.h"
#include "weft/weft.h"

void wf_cmd_view_usage(FILE *f) {
  fputs(
      "usage: weft view SCENE [--device D[,D...]] [--set key.path=value ...] [--paced | --ahead]\n"
      "                 [--size WxH] [--frames N] [--bench] [--screenshot PATH]\n"
      "\n"
      "Runs a scene and shows it live in a window. The simulation runs on its own thread and\n"
      "never waits for the display: the window draws the newest finished frame.\n"
      "\n"
      "options:\n"
      "  --device D[,D...]   cpu, cpu:N, cuda, cuda:N, auto or all (default: simulation.devices);\n"
      "                      several: the particles are split over them\n"
      "  --set key.path=V    override a scene value (repeatable), as for `weft run`\n"
      "  --paced             simulated time follows real time (x the speed keys; default)\n"
      "  --ahead             simulate as fast as possible, several frames per displayed one\n"
      "  --size WxH          window (or headless picture) size in pixels (default 1280x800)\n"
      "  --frames N          stop the simulation after frame N (default: never; --bench: 300)\n"
      "  --bench             run N frames ahead of the display and print simulation, render and\n"
      "                      displayed frame times with device event timings; without a display\n"
      "                      it renders headless (EGL) and says so\n"
      "  --screenshot PATH   run --frames N frames, save the window's picture of frame N as a\n"
      "                      PNG and exit\n"
      "  --color-by MODE[:MAX] colour by object, speed, strain (cloth) or contact_force\n"
      "                      (particles), the ramp's top at MAX (m/s, strain, N; default: fixed\n"
      "                      from the scene, see docs/scenes.md render)\n"
      "  --screenshot-window PATH\n"
      "                      the same with the whole window: overlay and panel too\n"
      "  --panel             open with the panel shown (Tab toggles it): objects, parameters,\n"
      "                      pause/step/reset/reload, energy and speed plots\n"
      "  -h, --help          show this help\n"
      "\n"
      "keys: left drag orbit, right/middle drag pan, wheel zoom, space pause, . or N step,\n"
      "R reset, + / - speed, W wireframe, C colour by object / speed, P screenshot, V vsync,\n"
      "O record a video (weft_NNNN.mp4 in the current directory, at simulation.fps),\n"
      "Tab the panel, Ctrl + left drag pulls a particle or cloth vertex by a spring,\n"
      "H help, Esc quit. The scene file is watched: saving it reloads the scene.\n"
      "See viewer/README.md.\n"
      "\n"
      "Exit status: 0 ok, 1 runtime failure (also: no display), 2 bad usage or invalid scene.\n",
      f);
#if defined(WEFT_HAVE_VIEWER) && !defined(WEFT_HAVE_IMGUI)
  fputs(
      "\n(this weft was built without Dear ImGui, libimgui-dev: Tab shows no panel; the keys and\n"
      "Ctrl + left drag work)\n",
      f);
#endif
}

#ifndef WEFT_HAVE_VIEWER

int wf_cmd_view(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      wf_cmd_view_usage(stdout);
      return WF_EXIT_OK;
    }
  fputs("weft view: this weft was built without the viewer (WEFT_VIEWER=OFF: epoxy, EGL, GLFW, "
        "cglm or stb was missing when it was configured; see viewer/README.md)\n",
        stderr);
  return WF_EXIT_USAGE;
}

#else

static void sleep_s(double s) {
  if (s <= 0.0) return;
  struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&t, NULL);
}

/* Sums of the readback timing of the delivered frames. */
typedef struct bench_sums {
  int n_sim, n_idle, n_copy;
  double sim, idle, idle_max, copy, copy_wait;
  int n_render;
  double render;
  int n_gpu;        /* draws whose GL timestamps had results */
  double gpu, draw; /* GL time of the passes; the CPU's part of the draw (submitting, uploads) */
  double gpu_phase[4], cpu_bounds, cpu_upload; /* wf_render_stats' split of those */
} bench_sums;

/* A draw's figures into the sums; the first draw (shader compilation, targets) is not counted. */
static void bench_add_draw(bench_sums *b, double render_ms, const wf_render_stats *rs,
                           long draws_before) {
  if (draws_before == 0) return;
  b->n_render++, b->render += render_ms, b->draw += rs->draw_ms;
  b->cpu_bounds += rs->cpu_bounds_ms, b->cpu_upload += rs->cpu_upload_ms;
  if (rs->gpu_ms < 0.0) return;
  b->n_gpu++, b->gpu += rs->gpu_ms;
  const double ph[4] = {rs->gpu_upload_ms, rs->gpu_shadow_ms, rs->gpu_scene_ms, rs->gpu_rest_ms};
  for (int k = 0; k < 4; k++)
    b->gpu_phase[k] += ph[k];
}

typedef struct view_app {
  wf_world *w;
  wf_world_readback *rb;
  wf_cli_frames *frames;
  char ckpt_dir[512], ckpt[600];
  long target; /* stop the simulation at this frame; 0: never */

  /* shared with the simulation thread, under lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool quit, paused, reset, paced, sim_done;
  int steps;
  double speed;
  wf_status sim_status;
  char sim_error[1024];
  double sim_t0, sim_t1;
  int64_t sim_f0, sim_f1;
  /* the panel (viewer/panel.h): changes the simulation thread applies before its next frame,
     the energies it reports (at most 10 a second), and a reload request */
  wf_world_params params;
  bool params_dirty, energy, reload;
  int n_mats; /* the particle materials the panel shows (at most WF_VIEWER_MAX_MATERIALS) */
  wf_particle_material mats[WF_VIEWER_MAX_MATERIALS];
  char mat_names[WF_VIEWER_MAX_MATERIALS][32];
  bool mats_dirty;
  char param_msg[400]; /* a change the solver refused, for the status line */
  wf_world_drag drag;
  bool drag_on, drag_dirty;
  double energy_t, total_energy, max_speed;
  int64_t energy_frame;
  bool has_energy;

  /* window side (main thread) */
  int64_t shown;          /* frame number of the newest frame taken */
  double dt;              /* simulated seconds a frame */
  double rt_t0, realtime; /* the real-time factor: frames shown since rt_t0 (wall clock) ... */
  int64_t rt_f0;          /* ... and since frame rt_f0, measured every half second */
  double last_sim_ms;
  bench_sums b;
  bool shadows;                         /* render.shadows, for --bench's report */
  size_t drawn_points, drawn_triangles; /* of the last draw, for --bench's report */
  char devices[340], status[300];
} view_app;

/* ---- the simulation thread ------------------------------------------------------------------ */

static void sim_fail(view_app *a, const char *what) {
  pthread_mutex_lock(&a->lock);
  a->sim_status = WF_ERR_INVALID;
  snprintf(a->sim_error, sizeof a->sim_error, "%s: %s", what, wf_last_error());
  a->sim_done = true;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

static void *sim_main(void *arg) {
  view_app *a = arg;
  double pace_t0 = wf_cli_now_s(), pace_speed = 0.0, dt = wf_world_frame_dt(a->w);
  int64_t pace_f0 = wf_world_frame(a->w);
  bool was_paused = true, unpushed = false;
  pthread_mutex_lock(&a->lock);
  a->sim_t0 = wf_cli_now_s(), a->sim_f0 = wf_world_frame(a->w);
  for (;;) {
    int64_t frame = wf_world_frame(a->w);
    /* the last frame, or a simulation.stop_when rule met (the world steps no further) */
    bool at_end = (a->target > 0 && frame >= a->target) || wf_world_stop_reason(a->w, NULL);
    if (at_end && !a->sim_done) {
      a->sim_done = true, a->sim_t1 = wf_cli_now_s(), a->sim_f1 = frame;
      pthread_cond_broadcast(&a->cond);
    }
    if (a->quit) break;
    if (a->reset) {
      a->reset = false;
      pthread_mutex_unlock(&a->lock);
      wf_status st = wf_world_readback_wait_frames(a->rb, 0);
      if (st == WF_OK) st = wf_world_load_checkpoint(a->w, a->ckpt);
      if (st == WF_OK) st = wf_world_readback_push(a->rb);
      if (st < 0) {
        sim_fail(a, "resetting");
        return NULL;
      }
      unpushed = st == WF_NOT_READY;
      pthread_mutex_lock(&a->lock);
      a->sim_done = false;
      was_paused = true;
      continue;
    }
    if (unpushed && (a->paused || at_end)) {
      /* the newest frame found every slot busy: offer it again until the window can take it,
         since nothing newer will come */
      pthread_mutex_unlock(&a->lock);
      sleep_s(0.001);
      wf_status st = wf_world_readback_push(a->rb);
      if (st < 0) {
        sim_fail(a, "reading the frame back");
        return NULL;
      }
      unpushed = st == WF_NOT_READY;
      pthread_mutex_lock(&a->lock);
      continue;
    }
    if ((a->paused && a->steps == 0) || at_end) {
      was_paused = true;
      pthread_cond_wait(&a->cond, &a->lock);
      continue;
    }
    if (a->paused) a->steps--;
    bool paced = a->paced && !a->paused;
    double speed = a->speed;
    bool set_params = a->params_dirty, set_drag = a->drag_dirty, drag_on = a->drag_on;
    bool set_mats = a->mats_dirty;
    wf_world_params params = a->params;
    wf_world_drag drag = a->drag;
    wf_particle_material mats[WF_VIEWER_MAX_MATERIALS];
    memcpy(mats, a->mats, sizeof mats);
    a->params_dirty = a->drag_dirty = a->mats_dirty = false;
    pthread_mutex_unlock(&a->lock);
    for (int m = 0; set_mats && m < a->n_mats; m++)
      if (wf_world_particle_material_set(a->w, m, &mats[m]) != WF_OK) {
        pthread_mutex_lock(&a->lock); /* refused (e.g. friction above static_friction): say so */
        snprintf(a->param_msg, sizeof a->param_msg, "%.390s", wf_last_error());
        pthread_mutex_unlock(&a->lock);
        wf_clear_error();
      }
    if (set_params && wf_world_params_set(a->w, &params) != WF_OK) {
      sim_fail(a, "setting the parameters");
      return NULL;
    }
    if (set_drag && drag_on && wf_world_drag_set(a->w, &drag) != WF_OK) {
      sim_fail(a, "dragging");
      return NULL;
    }
    if (set_drag && !drag_on) wf_world_drag_clear(a->w);

    if (paced) {
      if (was_paused || speed != pace_speed) /* start the clock again from here */
        pace_t0 = wf_cli_now_s(), pace_f0 = frame, pace_speed = speed;
      sleep_s(pace_t0 + (double)(frame + 1 - pace_f0) * dt / speed - wf_cli_now_s());
    }
    was_paused = false;
    wf_status st = wf_world_readback_wait_frames(a->rb, paced ? 1 : 2);
    if (st == WF_OK) st = wf_world_readback_begin_frame(a->rb);
    if (st == WF_OK) st = wf_world_step(a->w, 1);
    if (st != WF_OK) {
      sim_fail(a, "stepping");
      return NULL;
    }
    st = wf_world_readback_push(a->rb); /* WF_NOT_READY: skipped, every slot is busy */
    if (st < 0) {
      sim_fail(a, "reading the frame back");
      return NULL;
    }
    unpushed = st == WF_NOT_READY;
    double now = wf_cli_now_s();
    if (a->energy && now - a->energy_t >= 0.1) { /* the panel's plots: waits for the frame */
      wf_world_stats ws;
      a->energy_t = now;
      if (wf_world_stats_get(a->w, &ws) != WF_OK) {
        sim_fail(a, "computing the energies");
        return NULL;
      }
      pthread_mutex_lock(&a->lock);
      a->has_energy = true, a->total_energy = ws.total_energy, a->max_speed = ws.max_speed;
      a->energy_frame = ws.frame;
      pthread_mutex_unlock(&a->lock);
    }
    pthread_mutex_lock(&a->lock);
  }
  if (!a->sim_done) a->sim_t1 = wf_cli_now_s(), a->sim_f1 = wf_world_frame(a->w);
  pthread_mutex_unlock(&a->lock);
  if (wf_world_readback_wait_frames(a->rb, 0) != WF_OK) sim_fail(a, "finishing");
  return NULL;
}

/* ---- the frame source (window thread) ------------------------------------------------------- */

static void bench_add(view_app *a, int slot) {
  wf_world_readback_timing t;
  if (wf_world_readback_timing_get(a->rb, slot, &t) != WF_OK) return;
  if (t.has_sim) {
    a->b.n_sim++, a->b.sim += t.sim_ms;
    a->last_sim_ms = t.sim_ms;
  }
  if (t.has_idle) {
    a->b.n_idle++, a->b.idle += t.idle_ms;
    a->b.idle_max = fmax(a->b.idle_max, t.idle_ms);
  }
  a->b.n_copy++, a->b.copy += t.copy_ms, a->b.copy_wait += t.copy_wait_ms;
}

static bool src_latest(void *user, wf_render_scene *out) {
  view_app *a = user;
  wf_world_frame_view v;
  if (wf_world_readback_latest(a->rb, &v) != WF_OK) return false;
  bench_add(a, v.slot);
  a->shown = v.frame;
  wf_cli_frames_fill(a->frames, v.slot, v.frame, v.pos, v.vel, out);
  return true;
}

static void src_release(void *user, const wf_render_scene *frame) {
  view_app *a = user;
  wf_world_readback_release(a->rb, wf_cli_frames_buffer_of(a->frames, frame));
}

static void src_paused(void *user, bool paused) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  a->paused = paused, a->steps = 0;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

static void src_step(void *user) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  a->steps++;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

static void src_reset(void *user) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  a->reset = true;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

static void src_speed(void *user, double speed) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  a->speed = speed > 0.0 ? speed : 1.0;
  pthread_mutex_unlock(&a->lock);
}

static void src_stats(void *user, wf_viewer_sim_stats *out) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  if (a->sim_status != WF_OK)
    snprintf(a->status, sizeof a->status, "stopped: %.280s", a->sim_error);
  else if (a->param_msg[0])
    snprintf(a->status, sizeof a->status, "%.290s", a->param_msg);
  else if (a->sim_done)
    snprintf(a->status, sizeof a->status, "finished at frame %ld", a->target);
  else
    snprintf(a->status, sizeof a->status, "%s",
             a->paced ? "paced: at most the asked speed x real time" : "running ahead");
  bool running = !a->paused && !a->sim_done && a->sim_status == WF_OK;
  bool has_energy = a->has_energy;
  double energy = a->total_energy, max_speed = a->max_speed;
  int64_t energy_frame = a->energy_frame;
  pthread_mutex_unlock(&a->lock);
  /* simulated time per wall-clock time, of the frames shown over the last half second or more */
  double now = wf_cli_now_s();
  if (!running || a->shown < a->rt_f0) {
    a->rt_t0 = now, a->rt_f0 = a->shown, a->realtime = running ? a->realtime : 0.0;
  } else if (now - a->rt_t0 >= 0.5) {
    a->realtime = (double)(a->shown - a->rt_f0) * a->dt / (now - a->rt_t0);
    a->rt_t0 = now, a->rt_f0 = a->shown;
  }
  *out = (wf_viewer_sim_stats){.sim_ms = a->last_sim_ms,
                               .frame = (uint64_t)a->shown,
                               .devices = a->devices,
                               .status = a->status,
                               .realtime = a->realtime,
                               .has_energy = has_energy,
                               .total_energy = energy,
                               .max_speed = max_speed,
                               .energy_frame = (uint64_t)energy_frame};
}

static bool src_params_get(void *user, wf_viewer_params *out) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  for (int k = 0; k < 3; k++)
    out->gravity[k] = a->params.gravity[k];
  out->damping = a->params.damping;
  out->drag_stiffness = (float)a->drag.stiffness, out->drag_damping = (float)a->drag.damping;
  out->material_count = a->n_mats;
  for (int m = 0; m < a->n_mats; m++) {
    snprintf(out->materials[m].name, sizeof out->materials[m].name, "%s", a->mat_names[m]);
    out->materials[m].stiffness = a->mats[m].stiffness;
    out->materials[m].friction = a->mats[m].friction;
    out->materials[m].restitution = a->mats[m].restitution;
  }
  pthread_mutex_unlock(&a->lock);
  return true;
}

static void src_params_set(void *user, const wf_viewer_params *p) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  for (int k = 0; k < 3; k++)
    a->params.gravity[k] = p->gravity[k];
  a->params.damping = p->damping > 0.0f ? p->damping : 0.0f;
  a->params_dirty = true;
  a->drag.stiffness = p->drag_stiffness > 0.0f ? p->drag_stiffness : 0.0;
  a->drag.damping = p->drag_damping > 0.0f ? p->drag_damping : 0.0;
  a->drag_dirty = a->drag_on;
  for (int m = 0; m < a->n_mats && m < p->material_count; m++) {
    wf_particle_material *q = &a->mats[m];
    const wf_viewer_material *in = &p->materials[m];
    if (q->stiffness == in->stiffness && q->friction == in->friction &&
        q->restitution == in->restitution)
      continue;
    q->stiffness = in->stiffness, q->friction = in->friction, q->restitution = in->restitution;
    a->mats_dirty = true, a->param_msg[0] = '\0';
  }
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->lock);
}

/* Objects are numbered as the frames list them, point sets then meshes: the world's order. */
static void src_drag(void *user, int object, uint32_t point, const float target[3], bool active) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  a->drag.object = object, a->drag.point = point;
  for (int k = 0; k < 3; k++)
    a->drag.target[k] = target[k];
  a->drag_on = active, a->drag_dirty = true;
  pthread_mutex_unlock(&a->lock);
}

static void src_reload(void *user) {
  view_app *a = user;
  pthread_mutex_lock(&a->lock);
  a->reload = true;
  pthread_mutex_unlock(&a->lock);
}

/* ---- window callbacks for --screenshot and --bench ------------------------------------------ */

typedef struct run_ctl {
  view_app *a;
  const char *screenshot;
  bool bench;
  int rc;
  double t_first, t_last, deadline;
  long displayed;
  char why[1200];
  /* the record key (O): every drawn frame into weft_NNNN.mp4 at the scene's fps (cli/video.h) */
  double fps;
  wf_cli_video *video;
  uint8_t *rgba;
  int video_w, video_h, video_next;
  char video_path[600];
  int width, height; /* the window's (or headless picture's) size asked for */
  bool whole_window; /* --screenshot-window: the overlay and the panel too */
} run_ctl;

static void record_stop(run_ctl *c, char *msg, size_t n) {
  if (!c->video) return;
  bool ok = wf_cli_video_close(c->video, true) == 0;
  c->video = NULL;
  free(c->rgba), c->rgba = NULL;
  snprintf(msg, n, ok ? "saved %s" : "could not save %s (see the terminal)", c->video_path);
  fprintf(stderr, "weft view: %s\n", msg);
}

static void record(void *user, wf_viewer *v, char *msg, size_t n) {
  run_ctl *c = user;
  if (c->video) {
    record_stop(c, msg, n);
    return;
  }
  int w, h;
  wf_render_size(wf_viewer_renderer(v), &w, &h);
  for (;; c->video_next++) { /* the first free name: never overwrite an earlier video */
    snprintf(c->video_path, sizeof c->video_path, "weft_%04d.mp4", c->video_next);
    if (access(c->video_path, F_OK) != 0 || c->video_next >= 9999) break;
  }
  c->video_next++;
  c->rgba = malloc((size_t)w * (size_t)h * 4);
  if (!c->rgba || wf_cli_video_open("weft view", c->video_path, w, h, c->fps, &c->video) != 0) {
    free(c->rgba), c->rgba = NULL;
    snprintf(msg, n, "cannot record %s (see the terminal)", c->video_path);
    return;
  }
  c->video_w = w, c->video_h = h;
  snprintf(msg, n, "recording %s (O stops)", c->video_path);
}

/* A recording takes the 3-D view of each drawn frame (no overlay); a resized window ends it. */
static void record_frame(run_ctl *c, wf_viewer *v) {
  char msg[700];
  int w, h;
  wf_render *r = wf_viewer_renderer(v);
  wf_render_size(r, &w, &h);
  if (w != c->video_w || h != c->video_h) {
    record_stop(c, msg, sizeof msg);
    fputs("weft view: (the window was resized: the recording ended)\n", stderr);
    return;
  }
  if (wf_render_read_rgba(r, c->rgba, (size_t)w * (size_t)h * 4) != WF_OK ||
      wf_cli_video_frame(c->video, c->rgba) != 0)
    record_stop(c, msg, sizeof msg);
}

/* True once the simulation has stopped (target reached or failed) and its last frame is shown. */
static bool sim_finished_and_shown(view_app *a, bool *failed) {
  pthread_mutex_lock(&a->lock);
  bool done = a->sim_done, bad = a->sim_status != WF_OK;
  int64_t last = a->sim_f1;
  pthread_mutex_unlock(&a->lock);
  *failed = bad;
  return bad || (done && a->shown >= last);
}

static bool on_frame(void *user, wf_viewer *v, long frame) {
  run_ctl *c = user;
  double t = wf_cli_now_s();
  if (frame == 0) c->t_first = t;
  c->t_last = t;
  c->displayed = frame + 1;
  if (c->video) record_frame(c, v);
  pthread_mutex_lock(&c->a->lock);
  bool reload = c->a->reload;
  pthread_mutex_unlock(&c->a->lock);
  if (reload) return false; /* wf_cmd_view starts again from the scene file */
  if (c->bench) {
    wf_viewer_stats s;
    wf_viewer_stats_get(v, &s);
    wf_render_stats rs;
    wf_render_stats_get(wf_viewer_renderer(v), &rs);
    bench_add_draw(&c->a->b, s.render_ms, &rs, frame);
    c->a->drawn_points = rs.points, c->a->drawn_triangles = rs.triangles;
  }
  if (!c->screenshot && !c->bench) return true;
  bool failed;
  if (sim_finished_and_shown(c->a, &failed)) {
    if (failed) {
      c->rc = WF_EXIT_FAILURE;
      snprintf(c->why, sizeof c->why, "the simulation stopped: %s", c->a->sim_error);
      return false;
    }
    if (c->screenshot && (c->whole_window ? wf_viewer_screenshot_window(v, c->screenshot)
                                          : wf_viewer_screenshot(v, c->screenshot)) != WF_OK) {
      c->rc = WF_EXIT_FAILURE;
      snprintf(c->why, sizeof c->why, "writing the screenshot: %s", wf_render_last_error());
    }
    return false;
  }
  if (t > c->deadline) {
    c->rc = WF_EXIT_FAILURE;
    snprintf(c->why, sizeof c->why, "gave up after %.0f s: frame %lld of %ld shown",
             c->deadline - c->t_first, (long long)c->a->shown, c->a->target);
    return false;
  }
  return true;
}

/* Headless --bench: the window's loop without a window: take the newest frame, draw it, read the
 * pixels back (standing in for the presentation: asynchronously, the previous draw's pixels, as
 * a window's swap does not wait for the GPU either). */
static wf_status headless_loop(run_ctl *c, int width, int height) {
  wf_render *r;
  wf_status st = wf_render_headless_create(width, height, &r);
  if (st != WF_OK) return st;
  printf("weft view --bench: no display: rendering headless through EGL (%s)\n", wf_render_info(r));
  uint8_t *rgba = malloc((size_t)width * height * 4);
  if (!rgba) {
    wf_render_destroy(r);
    return WF_ERR_OUT_OF_MEMORY;
  }
  wf_render_scene held;
  bool holding = false;
  long draws = 0;
  c->t_first = wf_cli_now_s();
  for (long frame = 0;; frame++) {
    double t0 = wf_cli_now_s();
    wf_render_scene next;
    if (src_latest(c->a, &next)) {
      if (holding) src_release(c->a, &held);
      held = next, holding = true;
    }
    if (holding) {
      bool got;
      st = wf_render_draw(r, &held);
      if (st == WF_OK) st = wf_render_read_rgba_async(r, rgba, (size_t)width * height * 4, &got);
      if (st != WF_OK) break;
      wf_render_stats rs;
      wf_render_stats_get(r, &rs);
      c->a->drawn_points = rs.points, c->a->drawn_triangles = rs.triangles;
      bench_add_draw(&c->a->b, 1e3 * (wf_cli_now_s() - t0), &rs, draws++);
    }
    c->t_last = wf_cli_now_s();
    c->displayed = frame + 1;
    bool failed;
    if (sim_finished_and_shown(c->a, &failed)) {
      if (failed) c->rc = WF_EXIT_FAILURE;
      if (failed) snprintf(c->why, sizeof c->why, "the simulation stopped: %s", c->a->sim_error);
      break;
    }
    if (!holding) sleep_s(0.001);
  }
  if (holding) src_release(c->a, &held);
  free(rgba);
  wf_render_destroy(r);
  return st;
}

static void bench_print(const view_app *a, const run_ctl *c, bool headless) {
  const bench_sums *b = &a->b;
  wf_world_readback_stats rs;
  wf_world_readback_stats_get(a->rb, &rs);
  long frames = (long)(a->sim_f1 - a->sim_f0);
  double sim_wall = a->sim_t1 - a->sim_t0, disp_wall = c->t_last - c->t_first;
  double sim_ms = b->n_sim ? b->sim / b->n_sim : 0.0;
  double render_ms = b->n_render ? b->render / b->n_render : 0.0;
  /* a displayed frame is a new simulation frame on screen; the window redraws in between */
  double disp_ms = b->n_copy > 0 ? 1e3 * disp_wall / (double)b->n_copy : 0.0;
  printf("weft view --bench: %ld frames on %s, %s, %s\n", frames, a->devices,
         headless ? "headless EGL (no display)" : "window", a->paced ? "paced" : "running ahead");
  printf("  simulation   %8.3f ms/frame  (device events, mean of %d delivered frames)\n", sim_ms,
         b->n_sim);
  printf("               %8.3f ms/frame  (wall clock of the simulation thread, %ld frames)\n",
         frames > 0 ? 1e3 * sim_wall / (double)frames : 0.0, frames);
  printf("  render       %8.3f ms/frame  (%s, mean of %d after the first)\n", render_ms,
         headless ? "draw + asynchronous pixel readback" : "draw + present + overlay", b->n_render);
  printf("    of which   %8.3f ms on the CPU (submitting the draw, uploads), %.3f ms GL time "
         "(timestamps, mean of %d)\n",
         b->n_render ? b->draw / b->n_render : 0.0, b->n_gpu ? b->gpu / b->n_gpu : 0.0, b->n_gpu);
  if (b->n_render && b->n_gpu)
    printf("    CPU: shadow bounds %.3f ms, uploads %.3f ms; GL: uploads %.3f, shadow map %.3f, "
           "scene %.3f, grid and resolve %.3f ms\n",
           b->cpu_bounds / b->n_render, b->cpu_upload / b->n_render, b->gpu_phase[0] / b->n_gpu,
           b->gpu_phase[1] / b->n_gpu, b->gpu_phase[2] / b->n_gpu, b->gpu_phase[3] / b->n_gpu);
  printf("  displayed    %8.3f ms/frame  (%d new frames shown in %.3f s; %ld draws)\n", disp_ms,
         b->n_copy, disp_wall, c->displayed);
  /* the figure issue 30 asks for: the renderer's rate at this size with shadows as the scene
     says (the readback of the next frame overlaps: the solver streams never wait for it) */
  printf("  render rate  %8.1f frames/s  (%zu particles, %zu triangles, shadows %s, %d x %d)\n",
         render_ms > 0.0 ? 1e3 / render_ms : 0.0, a->drawn_points, a->drawn_triangles,
         a->shadows ? "on" : "off", c->width, c->height);
  printf("  max(sim, render) %8.3f ms, sim + render %8.3f ms: displayed / max = %.2f\n",
         fmax(sim_ms, render_ms), sim_ms + render_ms,
         fmax(sim_ms, render_ms) > 0.0 ? disp_ms / fmax(sim_ms, render_ms) : 0.0);
  printf("  event timings (device, per delivered frame):\n");
  printf("    solver streams idle between frames  %8.3f ms mean, %8.3f ms max (%d frames)\n",
         b->n_idle ? b->idle / b->n_idle : 0.0, b->idle_max, b->n_idle);
  printf("    readback copy                       %8.3f ms mean\n",
         b->n_copy ? b->copy / b->n_copy : 0.0);
  printf("    copy stream wait after frame end    %8.3f ms mean\n",
         b->n_copy ? b->copy_wait / b->n_copy : 0.0);
  printf("  the solver streams wait only for the previous frame's readback copy (never for the\n"
         "  render: no stream waits on the renderer); idle time above the copy time is the host\n"
         "  thread not keeping up.\n");
  printf("  readback ring: %llu pushed, %llu skipped (every slot held), %llu delivered, %llu "
         "stale\n",
         (unsigned long long)rs.pushed, (unsigned long long)rs.skipped,
         (unsigned long long)rs.delivered, (unsigned long long)rs.stale);
}

/* ---- the command ---------------------------------------------------------------------------- */

typedef struct view_opts {
  const char *shot;
  bool bench, ahead, display, panel, whole_window;
  int width, height;
} view_opts;

static int view_once(wf_cli_scene_args *sa, const view_opts *o, bool *reload);

static bool parse_size(const char *s, int *w, int *h) {
  char *end;
  long a = strtol(s, &end, 10);
  if (end == s || (*end != 'x' && *end != 'X')) return false;
  const char *t = end + 1;
  long b = strtol(t, &end, 10);
  if (end == t || *end || a < 16 || b < 16 || a > 16384 || b > 16384) return false;
  *w = (int)a, *h = (int)b;
  return true;
}

static void app_cleanup(view_app *a) {
  wf_cli_frames_destroy(a->frames);
  wf_world_readback_destroy(a->rb);
  wf_world_destroy(a->w);
  if (a->ckpt[0]) remove(a->ckpt);
  if (a->ckpt_dir[0]) rmdir(a->ckpt_dir);
  pthread_cond_destroy(&a->cond);
  pthread_mutex_destroy(&a->lock);
}

int wf_cmd_view(int argc, char **argv) {
  const char *shot = NULL;
  wf_cli_scene_args sa = {.cmd = "weft view", .usage = wf_cmd_view_usage, .takes_frames = true};
  int width = 1280, height = 800;
  bool bench = false, ahead = false, paced = false, panel = false, whole_window = false;
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    bool has_value = i + 1 < argc;
    int rc;
    if (strcmp(o, "--bench") == 0) {
      bench = true;
    } else if (strcmp(o, "--panel") == 0) {
      panel = true;
    } else if (strcmp(o, "--ahead") == 0) {
      ahead = true;
    } else if (strcmp(o, "--paced") == 0) {
      paced = true;
    } else if (strcmp(o, "--size") == 0 && has_value) {
      if (!parse_size(argv[++i], &width, &height)) {
        fprintf(stderr, "weft view: --size '%s': expected WxH, e.g. 1280x800 (16..16384 each)\n",
                argv[i]);
        return WF_EXIT_USAGE;
      }
    } else if (strcmp(o, "--screenshot") == 0 && has_value) {
      shot = argv[++i];
    } else if (strcmp(o, "--screenshot-window") == 0 && has_value) {
      shot = argv[++i], whole_window = true;
    } else if ((rc = wf_cli_common_arg(&sa, argc, argv, &i)) != WF_CLI_NEXT) {
      return rc;
    }
  }
  if (wf_cli_scene_args_done(&sa) != WF_EXIT_OK) return WF_EXIT_USAGE;
  if (ahead && paced) {
    fputs("weft view: --paced and --ahead exclude each other\n", stderr);
    return WF_EXIT_USAGE;
  }
  if (shot && bench) {
    fputs("weft view: --screenshot and --bench exclude each other\n", stderr);
    return WF_EXIT_USAGE;
  }
  if (shot && sa.frames == 0) {
    fputs("weft view: --screenshot PATH needs --frames N (the frame to take)\n", stderr);
    return WF_EXIT_USAGE;
  }
  if (bench && sa.frames == 0) sa.frames = 300;
  bool display = (getenv("DISPLAY") && *getenv("DISPLAY")) ||
                 (getenv("WAYLAND_DISPLAY") && *getenv("WAYLAND_DISPLAY"));
  if (!display && !bench) {
    fputs("weft view: no display (DISPLAY and WAYLAND_DISPLAY are unset), so no window can be "
          "opened. On a headless machine: `weft run SCENE --render` writes PNG frames, `weft view "
          "--bench SCENE` renders headless, or run under `xvfb-run -a weft view ...`\n",
          stderr);
    return WF_EXIT_FAILURE;
  }
  view_opts o = {.shot = shot,
                 .bench = bench,
                 .ahead = ahead,
                 .display = display,
                 .panel = panel,
                 .whole_window = whole_window,
                 .width = width,
                 .height = height};
  for (;;) { /* the panel's reload (or the scene file changed) starts again from the file */
    bool reload = false;
    int rc = view_once(&sa, &o, &reload);
    if (!reload || rc != WF_EXIT_OK) return rc;
    fprintf(stderr, "weft view: reloading %s\n", sa.path);
  }
}

/* One run of the scene file until the window closes; *reload: the panel asked to start again. */
static int view_once(wf_cli_scene_args *sa_in, const view_opts *o, bool *reload) {
  wf_cli_scene_args sa = *sa_in;
  const char *shot = o->shot, *scene_path = sa.path;
  bool bench = o->bench, ahead = o->ahead, display = o->display;
  int width = o->width, height = o->height;

  wf_init_desc init = {
      .log_level = WF_LOG_WARN, .log = wf_cli_log, .log_user = (void *)"weft view"};
  wf_scene *sc = NULL;
  view_app a = {.target = sa.frames,
                .paced = !ahead && !bench,
                .speed = 1.0,
                .energy = display && !bench && (!shot || o->panel)};
  int rc = wf_cli_start_world(&sa, &init, &sc, &a.w);
  if (rc != WF_EXIT_OK) return rc;
  wf_world_params_get(a.w, &a.params);
  a.n_mats = wf_world_particle_material_count(a.w);
  if (a.n_mats > WF_VIEWER_MAX_MATERIALS) a.n_mats = WF_VIEWER_MAX_MATERIALS;
  for (int m = 0; m < a.n_mats; m++) {
    wf_world_particle_material_get(a.w, m, &a.mats[m]);
    snprintf(a.mat_names[m], sizeof a.mat_names[m], "%s", wf_world_particle_material_name(a.w, m));
  }
  pthread_mutex_init(&a.lock, NULL);
  pthread_cond_init(&a.cond, NULL);
  wf_world_readback_desc rd = wf_world_readback_desc_default();
  /* up to 3 frames in flight (wait_frames(2) before a step, then its push), 2 held by the window
     while it swaps frames, one spare: the ring skips frames only when the window falls behind */
  rd.slots = 6;
  rd.velocities = true;
  const char *what = "creating the readback ring";
  a.dt = wf_world_frame_dt(a.w);
  wf_status st = wf_world_readback_create(a.w, &rd, &a.rb);
  if (st == WF_OK) {
    what = "preparing the pictures";
    st = wf_cli_frames_create(sc, a.w, rd.slots, &a.frames);
  }
  if (st == WF_OK) {
    /* the initial state, for reset */
    what = "saving the initial state";
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(a.ckpt_dir, sizeof a.ckpt_dir, "%s/weft-view-XXXXXX", tmp);
    if (!mkdtemp(a.ckpt_dir)) {
      fprintf(stderr, "weft view: cannot create a temporary directory in %s: %s\n", tmp,
              strerror(errno));
      a.ckpt_dir[0] = '\0';
      st = WF_ERR_IO;
    } else {
      snprintf(a.ckpt, sizeof a.ckpt, "%s/initial.wfck", a.ckpt_dir);
      st = wf_world_save(a.w, a.ckpt);
    }
  }
  bool shadows = sc->render.shadows;
  wf_scene_destroy(sc);
  if (st == WF_OK) what = "showing the initial state", st = wf_world_readback_push(a.rb);
  if (st < 0) {
    fprintf(stderr, "weft view: %s: %s\n", what, wf_last_error());
    app_cleanup(&a);
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }
  wf_device_info info;
  if (wf_device_info_get(wf_world_device(a.w), &info) == WF_OK) {
    if (wf_world_device_count(a.w) > 1) {
      /* the list, then the product as far as it fits */
      wf_cli_world_devices(a.w, a.devices, sizeof a.devices);
      size_t at = strlen(a.devices);
      if (at + 3 < sizeof a.devices)
        snprintf(a.devices + at, sizeof a.devices - at, ", %.*s", (int)(sizeof a.devices - at - 3),
                 info.product);
    } else {
      snprintf(a.devices, sizeof a.devices, "%s %s", info.name, info.product);
    }
  }

  pthread_t sim;
  if (pthread_create(&sim, NULL, sim_main, &a) != 0) {
    fputs("weft view: cannot start the simulation thread\n", stderr);
    app_cleanup(&a);
    wf_shutdown();
    return WF_EXIT_FAILURE;
  }
  a.shadows = shadows;
  run_ctl c = {.a = &a,
               .whole_window = o->whole_window,
               .width = width,
               .height = height,
               .screenshot = shot,
               .bench = bench,
               .deadline = wf_cli_now_s() + 600.0,
               .fps = 1.0 / wf_world_frame_dt(a.w)};
  if (display) {
    char title[600];
    snprintf(title, sizeof title, "weft view %s", scene_path);
    wf_render_camera cam = wf_cli_frames_camera(a.frames);
    wf_viewer_desc vd = {.title = title,
                         .width = width,
                         .height = height,
                         .no_vsync = bench,
                         .camera = &cam,
                         .on_frame = on_frame,
                         .on_frame_user = &c,
                         .record = record,
                         .record_user = &c,
                         .log = wf_cli_log,
                         .log_user = (void *)"weft view",
                         .show_panel = o->panel,
                         .watch_path = shot || bench ? NULL : scene_path};
    vd.source = (wf_viewer_source){.user = &a,
                                   .latest = src_latest,
                                   .release = src_release,
                                   .set_paused = src_paused,
                                   .step = src_step,
                                   .reset = src_reset,
                                   .set_speed = src_speed,
                                   .stats = src_stats,
                                   .params_get = src_params_get,
                                   .params_set = src_params_set,
                                   .drag = src_drag,
                                   .reload = src_reload};
    st = wf_viewer_run(&vd);
    if (st != WF_OK) {
      fprintf(stderr, "weft view: %s\n", wf_render_last_error());
      rc = WF_EXIT_FAILURE;
    }
  } else {
    st = headless_loop(&c, width, height);
    if (st != WF_OK) {
      fprintf(stderr, "weft view --bench: headless rendering: %s\n", wf_render_last_error());
      rc = WF_EXIT_FAILURE;
    }
  }
  char msg[700];
  record_stop(&c, msg, sizeof msg); /* a recording still on when the window closed */
  pthread_mutex_lock(&a.lock);
  a.quit = true;
  pthread_cond_broadcast(&a.cond);
  pthread_mutex_unlock(&a.lock);
  pthread_join(sim, NULL);
  if (c.rc != WF_EXIT_OK && rc == WF_EXIT_OK) {
    fprintf(stderr, "weft view: %s\n", c.why);
    rc = c.rc;
  }
  if (rc == WF_EXIT_OK && a.sim_status != WF_OK) {
    fprintf(stderr, "weft view: %s\n", a.sim_error);
    rc = WF_EXIT_FAILURE;
  }
  if (rc == WF_EXIT_OK && bench) bench_print(&a, &c, !display);
  if (rc == WF_EXIT_OK && shot)
    printf("weft view: frame %lld saved to %s\n", (long long)a.shown, shot);
  *reload = a.reload;
  app_cleanup(&a);
  wf_shutdown();
  return rc;
}

#endif /* WEFT_HAVE_VIEWER */
