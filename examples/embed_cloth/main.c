/* embed_cloth: weft embedded in a C program, built with find_package(weft) and weft::weft.
 *
 * It builds a small simulation in code (no scene file): a cloth grid with its two top corners
 * pinned, draping over a sphere, and a block of sand grains falling onto the same sphere and the
 * ground. The two solvers run on their own streams of one device ("auto": the first CUDA GPU, else
 * the CPU), stepped asynchronously while the host waits on nothing. Then it reads the state back,
 * checks it (finite, pins in place, nothing inside the sphere or below the ground), saves a
 * checkpoint (weft/io.h), restores it into a second, freshly built pair of solvers, and checks
 * that the restored state equals the saved one bit for bit and that both pairs stay bitwise equal
 * for further frames. It exits 0 only when every check passes.
 *
 *     embed_cloth [auto|cpu|cuda|cuda:N] [checkpoint path]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

enum { FRAMES = 30, MORE_FRAMES = 10, GRID = 24 };

static const float SPHERE_CENTER[3] = {0.0f, 0.55f, 0.0f};
static const float SPHERE_RADIUS = 0.3f;

/* The simulation: one cloth and one particle solver on the same device. */
typedef struct sim {
  wf_cloth *cloth;
  wf_particles *sand;
} sim;

/* Prints the failed call and weft's message, and returns 0 (for `if (!ok(...)) goto fail`). */
static int ok(wf_status st, const char *what) {
  if (st == WF_OK) return 1;
  fprintf(stderr, "embed_cloth: %s failed: %s: %s\n", what, wf_status_str(st), wf_last_error());
  return 0;
}

static wf_collider_desc sphere_collider(void) {
  wf_collider_desc c = wf_collider_desc_default();
  c.name = "ball";
  c.type = WF_COLLIDER_SPHERE;
  memcpy(c.center, SPHERE_CENTER, sizeof c.center);
  c.radius = SPHERE_RADIUS;
  c.friction = 0.4f;
  return c;
}

static void sim_destroy(sim *s) {
  wf_cloth_destroy(s->cloth);
  wf_particles_destroy(s->sand);
  s->cloth = NULL;
  s->sand = NULL;
}

/* Builds the scene on dev through the definition structs (defaults, then what differs). */
static int sim_create(wf_device *dev, sim *s) {
  memset(s, 0, sizeof *s);
  wf_collider_desc ball = sphere_collider();
  wf_collider_desc ground = wf_collider_desc_default(); /* the plane y = 0 */
  ground.name = "ground";

  wf_cloth_desc cd = wf_cloth_desc_default();
  cd.name = "sheet";
  cd.integrator = WF_CLOTH_XPBD;
  cd.iterations = 4;
  cd.material.thickness = 0.01f;
  wf_cloth_grid grid = wf_cloth_grid_default(); /* flat, its top row at -z */
  grid.size[0] = grid.size[1] = 1.0f;
  grid.resolution[0] = grid.resolution[1] = GRID;
  grid.center[0] = 0.0f, grid.center[1] = 1.0f, grid.center[2] = 0.0f;
  cd.devices[0] = dev;
  if (!ok(wf_cloth_create_grid(&cd, &grid, &s->cloth), "wf_cloth_create_grid")) goto fail;
  if (!ok(wf_cloth_pin_named(s->cloth, "top-left", NULL), "pinning top-left")) goto fail;
  if (!ok(wf_cloth_pin_named(s->cloth, "top-right", NULL), "pinning top-right")) goto fail;
  if (!ok(wf_cloth_add_collider(s->cloth, &ball, NULL), "wf_cloth_add_collider")) goto fail;
  if (!ok(wf_cloth_add_collider(s->cloth, &ground, NULL), "wf_cloth_add_collider")) goto fail;

  wf_particles_desc pd = wf_particles_desc_default(); /* DEM, 64 substeps per frame */
  pd.name = "sand";
  pd.devices[0] = dev;
  if (!ok(wf_particles_create(&pd, &s->sand), "wf_particles_create")) goto fail;
  wf_particles_emitter e = wf_particles_emitter_default();
  e.name = "pile";
  e.center[0] = 0.1f, e.center[1] = 1.3f, e.center[2] = 0.0f;
  e.half_extents[0] = e.half_extents[1] = e.half_extents[2] = 0.15f;
  e.radius = 0.02f;
  e.spacing = 0.045f;
  e.jitter = 0.005f;
  e.seed = 7;
  if (!ok(wf_particles_emit(s->sand, &e, NULL, NULL), "wf_particles_emit")) goto fail;
  if (!ok(wf_particles_add_collider(s->sand, &ball, NULL), "wf_particles_add_collider")) goto fail;
  if (!ok(wf_particles_add_collider(s->sand, &ground, NULL), "wf_particles_add_collider"))
    goto fail;
  return 1;
fail:
  sim_destroy(s);
  return 0;
}

/* Enqueues frames on both solvers; neither call waits, and the two streams run concurrently. */
static int sim_step(sim *s, int frames) {
  return ok(wf_cloth_step_frames(s->cloth, frames), "wf_cloth_step_frames") &&
         ok(wf_particles_step_frames(s->sand, frames), "wf_particles_step_frames");
}

/* The state of both solvers on the host. */
typedef struct state {
  uint32_t nv, np;
  float (*cpos)[4], (*cvel)[4], (*ppos)[4], (*pvel)[4];
  float (*clocal)[4]; /* the cloth's positions relative to its origin (wf_cloth_download_local):
                         what a checkpoint stores, for a bitwise resume */
  float (*plocal)[4]; /* the grains' likewise (wf_particles_download_local) */
  void *granular; /* the grains' rotation and contact history (wf_particles_granular_state_get) */
  size_t gbytes;
  double ctime, ptime;
  uint64_t csub, psub;
} state;

static void state_free(state *st) {
  free(st->cpos), free(st->cvel), free(st->ppos), free(st->pvel), free(st->clocal);
  free(st->plocal), free(st->granular);
  memset(st, 0, sizeof *st);
}

static int state_alloc(state *st, uint32_t nv, uint32_t np) {
  memset(st, 0, sizeof *st);
  st->nv = nv, st->np = np;
  st->cpos = calloc(nv, sizeof *st->cpos), st->cvel = calloc(nv, sizeof *st->cvel);
  st->ppos = calloc(np, sizeof *st->ppos), st->pvel = calloc(np, sizeof *st->pvel);
  st->clocal = calloc(nv, sizeof *st->clocal), st->plocal = calloc(np, sizeof *st->plocal);
  if (st->cpos && st->cvel && st->ppos && st->pvel && st->clocal && st->plocal) return 1;
  state_free(st);
  fprintf(stderr, "embed_cloth: out of host memory\n");
  return 0;
}

/* Waits for both solvers and downloads their state and clocks. */
static int sim_download(sim *s, state *st) {
  wf_cloth_info info;
  if (!ok(wf_cloth_info_get(s->cloth, &info), "wf_cloth_info_get")) return 0;
  if (!state_alloc(st, info.vertices, wf_particles_count(s->sand))) return 0;
  st->gbytes = wf_particles_granular_state_bytes(s->sand);
  st->granular = malloc(st->gbytes ? st->gbytes : 1);
  if (!st->granular) {
    state_free(st);
    fprintf(stderr, "embed_cloth: out of host memory\n");
    return 0;
  }
  wf_particles_stats ps;
  if (ok(wf_cloth_download(s->cloth, st->cpos, st->cvel), "wf_cloth_download") &&
      ok(wf_cloth_download_local(s->cloth, st->clocal, NULL), "wf_cloth_download_local") &&
      ok(wf_cloth_time(s->cloth, &st->ctime, &st->csub), "wf_cloth_time") &&
      ok(wf_particles_download(s->sand, st->ppos, st->pvel), "wf_particles_download") &&
      ok(wf_particles_download_local(s->sand, st->plocal, NULL), "wf_particles_download_local") &&
      ok(wf_particles_granular_state_get(s->sand, st->granular, st->gbytes),
         "wf_particles_granular_state_get") &&
      ok(wf_particles_stats_get(s->sand, &ps), "wf_particles_stats_get")) {
    st->ptime = ps.time, st->psub = ps.substeps;
    return 1;
  }
  state_free(st);
  return 0;
}

static int states_equal(const state *a, const state *b) {
  return a->nv == b->nv && a->np == b->np && a->csub == b->csub && a->psub == b->psub &&
         memcmp(&a->ctime, &b->ctime, sizeof a->ctime) == 0 &&
         memcmp(&a->ptime, &b->ptime, sizeof a->ptime) == 0 &&
         memcmp(a->cpos, b->cpos, a->nv * sizeof *a->cpos) == 0 &&
         memcmp(a->cvel, b->cvel, a->nv * sizeof *a->cvel) == 0 &&
         memcmp(a->ppos, b->ppos, a->np * sizeof *a->ppos) == 0 &&
         memcmp(a->pvel, b->pvel, a->np * sizeof *a->pvel) == 0 && a->gbytes == b->gbytes &&
         memcmp(a->granular, b->granular, a->gbytes) == 0;
}

static float dist_to_sphere_center(const float p[4]) {
  float dx = p[0] - SPHERE_CENTER[0], dy = p[1] - SPHERE_CENTER[1], dz = p[2] - SPHERE_CENTER[2];
  return sqrtf(dx * dx + dy * dy + dz * dz);
}

/* Physical plausibility of the state after FRAMES frames. Tolerances: the solvers push points out
 * of colliders at the end of every substep, so what is left is round-off (1e-4 m); the DEM grains
 * may overlap a collider by a fraction of their radius while a contact force builds up (the
 * spring is 1e4 N/m: a grain of 34 g resting on the ground sinks 34e-3 * 9.81 / 1e4 = 3e-5 m, a
 * falling one a few millimetres at most, so 0.5 radius is generous and still catches tunnelling).
 */
static int check_state(const state *st, const state *initial) {
  int good = 1;
  uint32_t pinned = 0;
  float lowest = INFINITY;
  for (uint32_t i = 0; i < st->nv; i++) {
    const float *p = st->cpos[i];
    if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2])) {
      fprintf(stderr, "embed_cloth: cloth vertex %u is not finite\n", i);
      return 0;
    }
    if (p[3] == 0.0f) { /* pinned: exactly where it started */
      pinned++;
      if (memcmp(p, initial->cpos[i], sizeof initial->cpos[i]) != 0)
        fprintf(stderr, "embed_cloth: pinned vertex %u moved\n", i), good = 0;
    }
    if (dist_to_sphere_center(p) < SPHERE_RADIUS - 1e-4f)
      fprintf(stderr, "embed_cloth: cloth vertex %u is inside the sphere\n", i), good = 0;
    if (p[1] < lowest) lowest = p[1];
  }
  if (pinned != 2)
    fprintf(stderr, "embed_cloth: %u pinned vertices, expected 2\n", pinned), good = 0;
  /* the free corners fell: the cloth hangs below where it started (y = 1) */
  if (!(lowest < 0.9f)) fprintf(stderr, "embed_cloth: the cloth did not fall\n"), good = 0;
  for (uint32_t i = 0; i < st->np; i++) {
    const float *p = st->ppos[i];
    if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2])) {
      fprintf(stderr, "embed_cloth: particle %u is not finite\n", i);
      return 0;
    }
    float r = p[3];
    if (p[1] < r * 0.5f)
      fprintf(stderr, "embed_cloth: particle %u is below the ground\n", i), good = 0;
    if (dist_to_sphere_center(p) < SPHERE_RADIUS + r * 0.5f)
      fprintf(stderr, "embed_cloth: particle %u is inside the sphere\n", i), good = 0;
  }
  printf("cloth: %u vertices, %u pinned, lowest y %.3f m; sand: %u grains\n", st->nv, pinned,
         (double)lowest, st->np);
  return good;
}

/* Writes the state as named sections of a weft checkpoint (atomically: temporary file + rename). */
static int save_checkpoint(const state *st, const char *path) {
  wf_ckpt_writer *w = NULL;
  if (!ok(wf_ckpt_writer_create(&w), "wf_ckpt_writer_create")) return 0;
  const double clocks[2] = {st->ctime, st->ptime};
  const uint64_t substeps[2] = {st->csub, st->psub};
  int good =
      ok(wf_ckpt_writer_add(w, "cloth/pos", st->clocal, st->nv * sizeof *st->clocal), "add") &&
      ok(wf_ckpt_writer_add(w, "cloth/vel", st->cvel, st->nv * sizeof *st->cvel), "add") &&
      ok(wf_ckpt_writer_add(w, "sand/pos", st->plocal, st->np * sizeof *st->plocal), "add") &&
      ok(wf_ckpt_writer_add(w, "sand/vel", st->pvel, st->np * sizeof *st->pvel), "add") &&
      ok(wf_ckpt_writer_add(w, "sand/granular", st->granular, st->gbytes), "add") &&
      ok(wf_ckpt_writer_add(w, "clocks", clocks, sizeof clocks), "add") &&
      ok(wf_ckpt_writer_add(w, "substeps", substeps, sizeof substeps), "add") &&
      ok(wf_ckpt_writer_save(w, path), "wf_ckpt_writer_save");
  wf_ckpt_writer_destroy(w);
  return good;
}

/* A section that must have exactly `bytes` bytes. */
static const void *section(wf_ckpt_reader *r, const char *name, size_t bytes) {
  const void *data = NULL;
  size_t size = 0;
  if (!ok(wf_ckpt_section(r, name, &data, &size), "wf_ckpt_section")) return NULL;
  if (size != bytes) {
    fprintf(stderr, "embed_cloth: checkpoint section %s has %zu bytes, expected %zu\n", name, size,
            bytes);
    return NULL;
  }
  return data;
}

/* Restores a checkpoint into a freshly built simulation (same construction, so same counts). */
static int load_checkpoint(sim *s, const char *path) {
  wf_ckpt_reader *r = NULL;
  if (!ok(wf_ckpt_open_file(path, &r), "wf_ckpt_open_file")) return 0;
  wf_cloth_info info;
  int good = ok(wf_cloth_info_get(s->cloth, &info), "wf_cloth_info_get");
  uint32_t nv = info.vertices, np = wf_particles_count(s->sand);
  const float(*cpos)[4] = section(r, "cloth/pos", nv * sizeof *cpos);
  const float(*cvel)[4] = section(r, "cloth/vel", nv * sizeof *cvel);
  const float(*ppos)[4] = section(r, "sand/pos", np * sizeof *ppos);
  const float(*pvel)[4] = section(r, "sand/vel", np * sizeof *pvel);
  size_t gbytes = wf_particles_granular_state_bytes(s->sand);
  const void *granular = section(r, "sand/granular", gbytes);
  const double *clocks = section(r, "clocks", 2 * sizeof(double));
  const uint64_t *substeps = section(r, "substeps", 2 * sizeof(uint64_t));
  good = good && cpos && cvel && ppos && pvel && granular && clocks && substeps &&
         ok(wf_cloth_set_state_local(s->cloth, cpos, cvel, clocks[0], substeps[0]),
            "wf_cloth_set_state_local") &&
         ok(wf_particles_set_state_local(s->sand, ppos, pvel, clocks[1], substeps[1]),
            "wf_particles_set_state_local") &&
         /* after set_state, which starts rotation and contact history at zero */
         ok(wf_particles_granular_state_set(s->sand, granular, gbytes),
            "wf_particles_granular_state_set");
  wf_ckpt_close(r);
  return good;
}

int main(int argc, char **argv) {
  const char *device = argc > 1 ? argv[1] : "auto";
  const char *path = argc > 2 ? argv[2] : "embed_cloth.wfck";
  printf("weft %s\n", WF_VERSION_STRING);
  if (!ok(wf_init(NULL), "wf_init")) return 1;
  wf_device *dev = NULL;
  if (strcmp(device, "auto") == 0)
    dev = wf_device_default(); /* cuda:0 when a usable GPU exists, else cpu:0 */
  else if (!ok(wf_device_get(device, &dev), "wf_device_get"))
    return wf_shutdown(), 1;
  printf("device: %s\n", wf_device_name(dev));

  int passed = 0;
  sim a = {0}, b = {0};
  state initial = {0}, saved = {0}, restored = {0}, end_a = {0}, end_b = {0};
  if (!sim_create(dev, &a) || !sim_download(&a, &initial)) goto done;

  /* asynchronous: both calls return at once; the host is free until it asks for data */
  if (!sim_step(&a, FRAMES)) goto done;
  int running = wf_stream_query(wf_cloth_stream(a.cloth)) == WF_NOT_READY;
  /* ... a real program does its own work here; the downloads below wait for the solvers */
  if (!sim_download(&a, &saved) || !check_state(&saved, &initial)) goto done;
  printf("stepped %d frames, %.3f s simulated (%s when the step calls returned)\n", FRAMES,
         saved.ctime, running ? "still running" : "already done");

  if (!save_checkpoint(&saved, path)) goto done;
  if (!sim_create(dev, &b) || !load_checkpoint(&b, path) || !sim_download(&b, &restored)) goto done;
  if (!states_equal(&saved, &restored)) {
    fprintf(stderr, "embed_cloth: the restored state differs from the saved one\n");
    goto done;
  }
  printf("checkpoint %s restored into a second simulation: states equal\n", path);

  /* both continue identically: the solvers are deterministic and the clocks were restored */
  if (!sim_step(&a, MORE_FRAMES) || !sim_step(&b, MORE_FRAMES)) goto done;
  if (!sim_download(&a, &end_a) || !sim_download(&b, &end_b)) goto done;
  if (!states_equal(&end_a, &end_b)) {
    fprintf(stderr, "embed_cloth: after %d more frames the restored run differs\n", MORE_FRAMES);
    goto done;
  }
  printf("%d more frames on both: bitwise equal\n", MORE_FRAMES);
  passed = 1;

done:
  state_free(&initial), state_free(&saved), state_free(&restored);
  state_free(&end_a), state_free(&end_b);
  sim_destroy(&a), sim_destroy(&b);
  if (argc <= 2) remove(path); /* the default checkpoint is only for this check */
  wf_shutdown();
  printf("%s\n", passed ? "embed_cloth: OK" : "embed_cloth: FAILED");
  return passed ? 0 : 1;
}
