/* embed_pkgconfig: weft embedded in a C program built by a plain Makefile with pkg-config.
 *
 * Loads a scene file (weft/scene.h), maps it onto the solvers of the CPU device (weft/world.h),
 * steps a few frames and prints the energies after each batch. Exits 0 when the scene loads and
 * steps, the state stays finite (wf_world_check) and, in a scene that nothing feeds energy into,
 * the mechanical energy does not grow; 1 otherwise (with weft's message), 2 on bad usage.
 *
 *     embed_pkgconfig scenes/cloth_drape.json [frames]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft/scene.h>
#include <weft/world.h>

/* weft never prints: its warnings come here when asked for through wf_init. */
static void log_to_stderr(int level, const char *message, void *user) {
  (void)user;
  fprintf(stderr, "weft[%d]: %s\n", level, message);
}

/* True when nothing in the scene feeds energy in: no wind, no moving colliders, no kinematic
 * particles. Then gravity is conservative and damping, friction, contacts and elastic energy
 * (which starts at zero in the scene's rest state) only take mechanical energy away. */
static int energy_is_bounded(const wf_scene *sc) {
  const wf_scene_forces *f = &sc->forces;
  if (f->wind[0] != 0 || f->wind[1] != 0 || f->wind[2] != 0 || f->gust_amplitude != 0) return 0;
  for (int i = 0; i < sc->collider_count; i++) {
    const double *v = sc->colliders[i].velocity;
    if (v[0] != 0 || v[1] != 0 || v[2] != 0) return 0;
  }
  for (int i = 0; i < sc->emitter_count; i++)
    if (sc->emitters[i].kinematic) return 0;
  return 1;
}

static int fail(const char *what, wf_status st) {
  fprintf(stderr, "embed_pkgconfig: %s: %s: %s\n", what, wf_status_str(st), wf_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s SCENE.json [frames]\n", argv[0]);
    return 2;
  }
  int frames = argc > 2 ? atoi(argv[2]) : 20;
  if (frames < 1) {
    fprintf(stderr, "embed_pkgconfig: frames must be >= 1\n");
    return 2;
  }
  wf_init_desc init = {.log = log_to_stderr, .log_level = WF_LOG_WARN};
  wf_status st = wf_init(&init);
  if (st != WF_OK) return fail("wf_init", st);

  wf_scene *scene = NULL;
  if ((st = wf_scene_load(argv[1], NULL, &scene)) != WF_OK) {
    const char *all = wf_scene_errors(); /* every message of a parse, with file:line:col */
    fprintf(stderr, "embed_pkgconfig: %s\n", *all ? all : wf_last_error());
    wf_shutdown();
    return 1;
  }
  wf_world_desc desc = wf_world_desc_default();
  desc.device = "cpu";
  wf_world *world = NULL;
  const int bounded = energy_is_bounded(scene);
  st = wf_world_create(scene, &desc, &world);
  wf_scene_destroy(scene); /* the world keeps what it needs */
  if (st != WF_OK) {
    fail("wf_world_create", st);
    wf_shutdown();
    return 1;
  }

  int code = 1;
  wf_world_stats s;
  if ((st = wf_world_stats_get(world, &s)) != WF_OK) {
    fail("wf_world_stats_get", st);
    goto done;
  }
  const double e0 = s.kinetic_energy + s.potential_energy;
  printf("%s on %s: %d objects, %llu particles, %llu cloth vertices\n", argv[1],
         wf_device_name(wf_world_device(world)), s.object_count,
         (unsigned long long)s.particle_count, (unsigned long long)s.vertex_count);
  printf("%6s %8s %14s %14s %14s\n", "frame", "time s", "kinetic J", "potential J", "total J");
  printf("%6lld %8.4f %14.6g %14.6g %14.6g\n", (long long)s.frame, s.time, s.kinetic_energy,
         s.potential_energy, e0);

  double worst_gain = 0;
  for (int done_frames = 0; done_frames < frames;) {
    int batch = frames - done_frames < 5 ? frames - done_frames : 5;
    if ((st = wf_world_step(world, batch)) != WF_OK) { /* asynchronous */
      fail("wf_world_step", st);
      goto done;
    }
    done_frames += batch;
    if ((st = wf_world_check(world)) != WF_OK) { /* waits; non-finite state, speed limit */
      fail("wf_world_check", st);
      goto done;
    }
    if ((st = wf_world_stats_get(world, &s)) != WF_OK) {
      fail("wf_world_stats_get", st);
      goto done;
    }
    double e = s.kinetic_energy + s.potential_energy;
    printf("%6lld %8.4f %14.6g %14.6g %14.6g\n", (long long)s.frame, s.time, s.kinetic_energy,
           s.potential_energy, e);
    if (!isfinite(e)) {
      fprintf(stderr, "embed_pkgconfig: the energy is not finite\n");
      goto done;
    }
    if (e - e0 > worst_gain) worst_gain = e - e0;
  }
  /* In a closed scene the mechanical energy may not grow; 1% of its magnitude is left for the
   * integrators' discretisation error. */
  double allowed = 0.01 * fabs(e0) + 1e-9;
  if (bounded && worst_gain > allowed) {
    fprintf(stderr, "embed_pkgconfig: the energy grew by %g J (more than %g J)\n", worst_gain,
            allowed);
    goto done;
  }
  printf("embed_pkgconfig: OK (%d frames, %s)\n", frames,
         bounded ? "energy did not grow" : "energy fed in by wind or moving objects: not checked");
  code = 0;

done:
  wf_world_destroy(world);
  wf_shutdown();
  return code;
}
