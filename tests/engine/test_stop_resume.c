/* Stop rules, scene-checked resume and the health check of mesh and keyframed colliders
 * (weft/world.h):
 *  - simulation.stop_when: a damped particle's kinetic energy and speed rules fire at the frames
 *    the closed forms give; the time rule at its exact frame; the first rule met wins; the rule's
 *    count of consecutive frames survives a checkpoint; bad rules are refused naming the key path.
 *  - wf_world_load_checkpoint refuses a checkpoint whose scene differs in its physics (gravity, a
 *    material's friction, a collider's position, a mesh file's content), naming each difference
 *    and restoring nothing; what does not change the physics (frames, outputs, devices,
 *    watchdogs, names) is no difference; wf_world_load_checkpoint_with_changes accepts and records;
 * a checkpoint without the physics section is refused, or accepted as unchecked.
 *  - the health check flags a particle deep inside a closed mesh collider with the collider's
 *    name and the depth of the closed form, and evaluates a keyframed collider at the frame's time
 *    (no alarm where its rest pose would be, an alarm where its current pose is).
 * Runs on cpu:0; every case takes well under a second.
 */
#define _XOPEN_SOURCE 700 /* nftw (tmp_root.h) */
#include "harness.h"

#include <math.h>

#include "tmp_root.h"
#include "weft/io.h"
#include "weft/scene.h"
#include "weft/world.h"

/* ---- helpers ----------------------------------------------------------------------------------
 */

static wf_world *world_of(const char *text, const char *const *sets, int n) {
  wf_scene_overrides ov = {sets, n};
  wf_scene *sc = NULL;
  if (wf_scene_parse(text, strlen(text), "t.json", tmp_root, &ov, &sc) != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return NULL;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = "cpu";
  wf_world *w = NULL;
  if (wf_world_create(sc, &d, &w) != WF_OK) TH_FAIL("wf_world_create: %s", wf_last_error());
  wf_scene_destroy(sc);
  return w;
}

static void path_in_tmp(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmp_root, name);
}

/* ---- stop rules -------------------------------------------------------------------------------
 */

/* One particle of 0.1 kg at 1 m/s, no gravity, no collider: only the global damping c acts, which
 * the solver applies as v <- v / (1 + c h) every substep (h = 1 / (fps K)). So after frame f
 *     KE_f = KE_0 (1 + c h)^(-2 K f),
 * and "kinetic_energy_below E" first holds at the frame after f* = ln(KE_0 / E) / (2 K ln(1 + c
 * h)).
 */
static const char damped_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 1000, \"gravity\": [0, 0, 0],\n"
    "  \"damping\": 2, \"stop_when\": {\"kinetic_energy_below\": 1e-3, \"frames\": 3}},\n"
    " \"particles\": [{\"name\": \"ball\", \"center\": [0, 1, 0], \"half_extents\": [0.05, 0.05, "
    "0.05],\n"
    "   \"radius\": 0.05, \"spacing\": 0.1, \"mass\": 0.1, \"velocity\": [1, 0, 0]}]}\n";

static double damped_first_below(double e) {
  double ke0 = 0.5 * 0.1 * 1.0, h = 1.0 / (60.0 * 8.0);
  return log(ke0 / e) / (2.0 * 8.0 * log(1.0 + 2.0 * h));
}

TEST(stop_kinetic_energy_closed_form) {
  wf_world *w = world_of(damped_scene, NULL, 0);
  REQUIRE(w);
  wf_world_object o;
  REQUIRE(wf_world_object_get(w, 0, &o) == WF_OK && o.point_count == 1);
  double fstar = damped_first_below(1e-3);
  /* The frame is only well defined away from a frame boundary: the float state's relative error
   * after ~500 substeps (~1e-4 in KE) moves f* by ~2e-3 frames, as KE falls 6.4 % a frame. */
  double frac = fstar - floor(fstar);
  REQUIRE(frac > 0.05 && frac < 0.95);
  int64_t first = (int64_t)floor(fstar) + 1, want = first + 3 - 1; /* 3 consecutive frames */
  CHECK_OK(wf_world_step(w, 1000));                                /* stops early */
  wf_world_stop s;
  CHECK(wf_world_stop_reason(w, &s));
  CHECK_EQ_INT(s.rule, 0);
  CHECK_EQ_INT(s.kind, WF_SCENE_STOP_KINETIC_ENERGY);
  CHECK_EQ_INT(s.frame, want);
  CHECK_EQ_INT(wf_world_frame(w), want);
  CHECK_EQ_INT(wf_world_last_frame(w), want);
  CHECK_NEAR(s.time, (double)want / 60.0, 1e-15);
  /* the measured value is the closed form's KE at that frame; 1e-3 relative covers the float
   * state (see above) */
  double ke = 0.05 * pow(1.0 + 2.0 / 480.0, -16.0 * (double)want);
  CHECK_NEAR(s.value / ke, 1.0, 1e-3);
  CHECK(s.value < 1e-3);
  CHECK(strstr(s.text, "simulation.stop_when[0]") && strstr(s.text, "kinetic_energy_below"));
  printf("  f* = %.3f: below from frame %lld, stopped after frame %lld (KE %.4g J)\n", fstar,
         (long long)first, (long long)s.frame, s.value);
  /* once stopped, stepping does nothing */
  CHECK_OK(wf_world_step(w, 5));
  CHECK_EQ_INT(wf_world_frame(w), want);
  wf_world_destroy(w);
}

/* "max_speed_below v": the speed falls as v_0 (1 + c h)^(-K f), so the rule first holds at the
 * frame after f* = ln(v_0 / v) / (K ln(1 + c h)); 0.04 m/s: f* = 96.77 (tolerance as above). */
TEST(stop_max_speed_closed_form) {
  const char *sets[] = {"simulation.stop_when={\"max_speed_below\": 0.04}"};
  wf_world *w = world_of(damped_scene, sets, 1);
  REQUIRE(w);
  double fstar = log(1.0 / 0.04) / (8.0 * log(1.0 + 2.0 / 480.0));
  double frac = fstar - floor(fstar);
  REQUIRE(frac > 0.05 && frac < 0.95);
  CHECK_OK(wf_world_step(w, 1000));
  wf_world_stop s;
  CHECK(wf_world_stop_reason(w, &s));
  CHECK_EQ_INT(s.kind, WF_SCENE_STOP_MAX_SPEED);
  CHECK_EQ_INT(s.frame, (int64_t)floor(fstar) + 1);
  CHECK_NEAR(s.value / pow(1.0 + 2.0 / 480.0, -8.0 * (double)s.frame), 1.0, 1e-3);
  wf_world_destroy(w);
}

/* "time": the first frame f with f / fps >= t: 0.25 s at 60 fps is frame 15 exactly, 0.26 s
 * frame 16 (15.6 rounded up). In a list the first rule met stops the run; of two met at the same
 * frame, the earlier in the list is named. */
TEST(stop_time_exact_and_first_rule) {
  const char *a[] = {"simulation.stop_when=[{\"max_speed_below\": 1e-9}, {\"time\": 0.25}]"};
  wf_world *w = world_of(damped_scene, a, 1);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 1000));
  wf_world_stop s;
  CHECK(wf_world_stop_reason(w, &s));
  CHECK_EQ_INT(s.rule, 1);
  CHECK_EQ_INT(s.kind, WF_SCENE_STOP_TIME);
  CHECK_EQ_INT(s.frame, 15);
  CHECK(s.value == 0.25);
  wf_world_destroy(w);

  const char *b[] = {"simulation.stop_when={\"time\": 0.26}"};
  w = world_of(damped_scene, b, 1);
  REQUIRE(w);
  for (int i = 0; i < 100; i++) /* one frame at a time, as `weft run` steps */
    CHECK_OK(wf_world_step(w, 1));
  CHECK_EQ_INT(wf_world_frame(w), 16);
  wf_world_destroy(w);

  const char *c[] = {"simulation.stop_when=[{\"kinetic_energy_below\": 1e9}, {\"time\": 0.01}]"};
  w = world_of(damped_scene, c, 1);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 10));
  CHECK(wf_world_stop_reason(w, &s) && s.rule == 0 && s.frame == 1);
  wf_world_destroy(w);

  /* no rule: the world runs to the end and names none */
  const char *d[] = {"simulation.stop_when=[]"};
  w = world_of(damped_scene, d, 1);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 3));
  CHECK(!wf_world_stop_reason(w, &s) && s.rule == -1);
  CHECK_EQ_INT(wf_world_last_frame(w), 1000);
  wf_world_destroy(w);
}

/* A checkpoint written inside the rule's window of 3 frames carries its count: the resumed world
 * stops at the uninterrupted one's frame (without the count it would stop 1 or 2 frames later). */
TEST(stop_count_survives_a_checkpoint) {
  int64_t first = (int64_t)floor(damped_first_below(1e-3)) + 1;
  char path[400];
  path_in_tmp(path, sizeof path, "stop.wfck");
  wf_world *a = world_of(damped_scene, NULL, 0), *b = world_of(damped_scene, NULL, 0);
  REQUIRE(a && b);
  CHECK_OK(wf_world_step(a, 1000));
  CHECK_OK(wf_world_step(b, (int)first + 1)); /* 2 frames below so far */
  CHECK(!wf_world_stop_reason(b, NULL));
  CHECK_OK(wf_world_save(b, path));
  wf_world *c = world_of(damped_scene, NULL, 0);
  REQUIRE(c);
  CHECK_OK(wf_world_load_checkpoint(c, path));
  CHECK_OK(wf_world_step(c, 1000));
  CHECK_EQ_INT(wf_world_frame(c), wf_world_frame(a));
  CHECK_EQ_INT(wf_world_frame(c), first + 2);
  wf_world_destroy(a), wf_world_destroy(b), wf_world_destroy(c);
}

static void expect_scene_error(const char *set, const char *path, const char *what) {
  const char *sets[] = {set};
  wf_scene_overrides ov = {sets, 1};
  wf_scene *sc = NULL;
  wf_status st = wf_scene_parse(damped_scene, strlen(damped_scene), "t.json", NULL, &ov, &sc);
  if (st == WF_OK) TH_FAIL("--set %s was accepted", set);
  if (!strstr(wf_scene_errors(), path) || !strstr(wf_scene_errors(), what))
    TH_FAIL("--set %s: \"%s\" lacks \"%s\" or \"%s\"", set, wf_scene_errors(), path, what);
  wf_scene_destroy(sc);
}

TEST(stop_rules_bad_input) {
  expect_scene_error("simulation.stop_when={\"kinetic_energy_below\": -1}",
                     "simulation.stop_when.kinetic_energy_below", "a number > 0");
  expect_scene_error("simulation.stop_when=[{\"time\": 1, \"frames\": 3}]",
                     "simulation.stop_when[0].frames", "does not apply");
  expect_scene_error("simulation.stop_when=[{\"time\": 1}, {\"time\": 1, \"max_speed_below\": 1}]",
                     "simulation.stop_when[1]", "exactly one");
  expect_scene_error("simulation.stop_when=[{\"tme\": 1}]", "simulation.stop_when[0].tme",
                     "did you mean 'time'");
  expect_scene_error("simulation.stop_when=[{\"max_speed_below\": 1, \"frames\": 0.5}]",
                     "simulation.stop_when[0].frames", "an integer");
  expect_scene_error("simulation.stop_when=5", "simulation.stop_when", "an array of rules");
  /* the canonical JSON lists the rules and reads back the same */
  wf_scene *sc = NULL;
  const char *sets[] = {"simulation.stop_when=[{\"time\": 2}, {\"max_speed_below\": 0.01, "
                        "\"frames\": 4}]"};
  wf_scene_overrides ov = {sets, 1};
  REQUIRE(wf_scene_parse(damped_scene, strlen(damped_scene), "t.json", NULL, &ov, &sc) == WF_OK);
  CHECK_EQ_INT(sc->simulation.stop_count, 2);
  CHECK(sc->simulation.stop_when[1].kind == WF_SCENE_STOP_MAX_SPEED &&
        sc->simulation.stop_when[1].frames == 4 && sc->simulation.stop_when[1].value == 0.01);
  char *js = wf_scene_to_json(sc);
  wf_scene *back = NULL;
  CHECK(js && wf_scene_parse(js, strlen(js), "c.json", NULL, NULL, &back) == WF_OK);
  char *js2 = back ? wf_scene_to_json(back) : NULL;
  CHECK(js2 && strcmp(js, js2) == 0);
  CHECK(js && strstr(js, "\"max_speed_below\": 0.01"));
  free(js), free(js2);
  wf_scene_destroy(back), wf_scene_destroy(sc);
}

/* ---- resume -----------------------------------------------------------------------------------
 */

/* A tetrahedron with outward faces: the solid x, y, z >= 0, x + y + z <= 1. */
static const char tet_obj[] = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
                              "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

static const char resume_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 10},\n"
    " \"materials\": [{\"name\": \"sand\", \"friction\": 0.5}, {\"name\": \"clay\", "
    "\"friction\": 0.8}],\n"
    " \"particles\": [{\"name\": \"grains\", \"center\": [0, 0.5, 0], \"half_extents\": [0.1, "
    "0.1, 0.1],\n"
    "   \"radius\": 0.03, \"spacing\": 0.1, \"material\": \"sand\"}],\n"
    " \"colliders\": [{\"name\": \"floor\", \"type\": \"box\", \"center\": [0, -0.5, 0],\n"
    "   \"half_extents\": [2, 0.5, 2]},\n"
    "  {\"name\": \"tet\", \"type\": \"mesh\", \"mesh\": \"tet.obj\", \"scale\": 0.2}]}\n";

/* The changes between the checkpoint at path and a world of resume_scene with sets: exactly the
 * key paths in want (n of them), each named; the plain load refuses naming them and restores
 * nothing (frame 0, the positions as created). */
static void expect_changes(const char *path, const char *const *sets, int n_sets,
                           const char *const *want, int n) {
  wf_world *w = world_of(resume_scene, sets, n_sets);
  if (!w) return;
  wf_scene_change ch[8];
  int count = -1;
  bool checked = false;
  CHECK_OK(wf_world_checkpoint_changes(w, path, ch, 8, &count, &checked));
  CHECK(checked);
  if (count != n) TH_FAIL("%s...: %d changes, expected %d", n_sets ? sets[0] : "", count, n);
  for (int i = 0; i < n && i < count; i++) {
    bool found = false;
    for (int k = 0; k < count && k < 8; k++)
      found |= strcmp(ch[k].path, want[i]) == 0;
    if (!found) TH_FAIL("no change named %s (first: %s)", want[i], count ? ch[0].path : "none");
  }
  wf_status st = wf_world_load_checkpoint(w, path);
  if (n == 0) {
    CHECK_OK(st);
    CHECK_EQ_INT(wf_world_frame(w), 2);
  } else {
    CHECK_EQ_INT(st, WF_ERR_INVALID);
    for (int i = 0; i < n; i++)
      if (!strstr(wf_last_error(), want[i])) TH_FAIL("\"%s\" lacks %s", wf_last_error(), want[i]);
    CHECK(strstr(wf_last_error(), "nothing was restored"));
    CHECK_EQ_INT(wf_world_frame(w), 0);
  }
  wf_world_destroy(w);
}

TEST(resume_refuses_each_physics_change) {
  char obj[400], moved[400], ck[400];
  path_in_tmp(obj, sizeof obj, "tet.obj");
  path_in_tmp(moved, sizeof moved, "tet_copy.obj");
  path_in_tmp(ck, sizeof ck, "resume.wfck");
  REQUIRE(th_write_file(obj, tet_obj) && th_write_file(moved, tet_obj));
  wf_world *w = world_of(resume_scene, NULL, 0);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 2));
  CHECK_OK(wf_world_save(w, ck));
  wf_world_destroy(w);

  /* each change alone, named by its key path */
  const char *g[] = {"simulation.gravity=[0, -5, 0]"}, *gw[] = {"simulation.gravity[1]"};
  expect_changes(ck, g, 1, gw, 1);
  const char *f[] = {"materials[0].friction=0.9"}, *fw[] = {"materials[0].friction"};
  expect_changes(ck, f, 1, fw, 1);
  const char *p[] = {"colliders[0].center=[0.1, -0.5, 0]"}, *pw[] = {"colliders[0].center[0]"};
  expect_changes(ck, p, 1, pw, 1);
  const char *s[] = {"simulation.substeps=16"}, *sw[] = {"simulation.substeps"};
  expect_changes(ck, s, 1, sw, 1);
  const char *m[] = {"particles[0].material=clay"}, *mw0[] = {"particles[0].material"};
  expect_changes(ck, m, 1, mw0, 1);
  /* several at once: each one */
  const char *all[] = {"simulation.gravity=[0, -5, 0]", "materials[0].friction=0.9",
                       "colliders[0].center=[0.1, -0.5, 0]"};
  expect_changes(ck, all, 3, (const char *const[]){gw[0], fw[0], pw[0]}, 3);
  /* what does not change the physics is no difference: run length, outputs, devices, watchdogs,
   * stop rules, and the mesh file's name (the same content elsewhere) */
  const char *none[] = {"simulation.frames=99",
                        "outputs.every=3",
                        "simulation.devices=cpu",
                        "simulation.max_speed=100",
                        "simulation.stop_when={\"time\": 1}",
                        "colliders[1].mesh=tet_copy.obj",
                        "render.width=64",
                        "colliders[0].name=ground",
                        "materials[0].name=gravel",
                        "particles[0].material=gravel"};
  expect_changes(ck, none, 10, NULL, 0);
  /* the mesh file's content changed (one vertex moved) under the same name */
  REQUIRE(th_write_file(obj, "v 0 0 0\nv 1.5 0 0\nv 0 1 0\nv 0 0 1\n"
                             "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"));
  const char *mw[] = {"colliders[1].mesh_content"};
  expect_changes(ck, NULL, 0, mw, 1);

  /* accepted: restored, and the changes are recorded */
  w = world_of(resume_scene, g, 1);
  REQUIRE(w);
  CHECK_OK(wf_world_load_checkpoint_with_changes(w, ck));
  CHECK_EQ_INT(wf_world_frame(w), 2);
  wf_world_resume r;
  wf_world_resume_get(w, &r);
  CHECK(r.resumed && r.scene_checked && r.frame == 2);
  CHECK_EQ_INT(r.change_count, 2); /* gravity and the edited mesh */
  bool grav = false;
  for (int i = 0; i < r.change_count; i++)
    grav |= strcmp(r.changes[i].path, "simulation.gravity[1]") == 0 &&
            strcmp(r.changes[i].checkpoint, "-9.81") == 0 && strcmp(r.changes[i].scene, "-5") == 0;
  CHECK(grav);
  CHECK_OK(wf_world_step(w, 1));
  wf_world_destroy(w);
  REQUIRE(th_write_file(obj, tet_obj));
}

/* A checkpoint without the physics section (as written before it existed): refused, saying why;
 * accepted with the changes, as unchecked. */
TEST(resume_unchecked_checkpoint) {
  char obj[400], ck[400], old[400];
  path_in_tmp(obj, sizeof obj, "tet.obj");
  path_in_tmp(ck, sizeof ck, "new.wfck");
  path_in_tmp(old, sizeof old, "old.wfck");
  REQUIRE(th_write_file(obj, tet_obj));
  wf_world *w = world_of(resume_scene, NULL, 0);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 2));
  CHECK_OK(wf_world_save(w, ck));
  wf_world_destroy(w);
  wf_ckpt_reader *r;
  wf_ckpt_writer *wr;
  REQUIRE(wf_ckpt_open_file(ck, &r) == WF_OK);
  REQUIRE(wf_ckpt_writer_create(&wr) == WF_OK);
  for (size_t i = 0; i < wf_ckpt_section_count(r); i++) {
    const char *name;
    const void *data;
    size_t bytes;
    CHECK_OK(wf_ckpt_section_at(r, i, &name, &data, &bytes));
    if (strcmp(name, "physics") != 0) CHECK_OK(wf_ckpt_writer_add(wr, name, data, bytes));
  }
  CHECK_OK(wf_ckpt_writer_save(wr, old));
  wf_ckpt_writer_destroy(wr);
  wf_ckpt_close(r);

  w = world_of(resume_scene, NULL, 0);
  REQUIRE(w);
  int count = -1;
  bool checked = true;
  CHECK_OK(wf_world_checkpoint_changes(w, old, NULL, 0, &count, &checked));
  CHECK(!checked && count == 0);
  CHECK_ERROR(wf_world_load_checkpoint(w, old), WF_ERR_INVALID, "cannot be checked",
              "--resume-with-changes");
  CHECK_EQ_INT(wf_world_frame(w), 0);
  CHECK_OK(wf_world_load_checkpoint_with_changes(w, old));
  wf_world_resume res;
  wf_world_resume_get(w, &res);
  CHECK(res.resumed && !res.scene_checked && res.frame == 2);
  wf_world_destroy(w);
}

/* ---- health of mesh and keyframed colliders ---------------------------------------------------
 */

/* One heavy particle (1e6 kg: contacts cannot move it in a few frames) at rest without gravity,
 * and the tetrahedron as a closed solid; the watchdog at 5 cm. */
static const char health_scene[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 4, \"frames\": 10, \"gravity\": [0, 0, 0],\n"
    "  \"max_penetration\": 0.05},\n"
    " \"particles\": [{\"name\": \"p\", \"center\": [0.2, 0.25, 0.3], \"half_extents\": [0.01, "
    "0.01, 0.01],\n"
    "   \"radius\": 0.01, \"spacing\": 0.02, \"mass\": 1e6}],\n"
    " \"colliders\": [{\"name\": \"tet\", \"type\": \"mesh\", \"mesh\": \"tet.obj\"}]}\n";

/* The particle at (0.2, 0.25, 0.3) is inside the solid; its nearest face is x + y + z = 1, at
 * (1 - 0.75) / sqrt(3) = 0.1443 m, so its depth is r + 0.1443 = 0.1543 m (float distances: 1e-5).
 */
TEST(health_flags_a_particle_inside_a_mesh) {
  char obj[400];
  path_in_tmp(obj, sizeof obj, "tet.obj");
  REQUIRE(th_write_file(obj, tet_obj));
  wf_world *w = world_of(health_scene, NULL, 0);
  REQUIRE(w);
  wf_world_object o;
  REQUIRE(wf_world_object_count(w) == 1 && wf_world_object_get(w, 0, &o) == WF_OK);
  REQUIRE(o.point_count == 1);
  float pos[1][4];
  CHECK_OK(wf_world_object_download(w, 0, pos, NULL));
  CHECK(pos[0][0] == 0.2f && pos[0][1] == 0.25f && pos[0][2] == 0.3f);
  wf_status st = wf_world_step(w, 1);
  if (st == WF_OK) st = wf_world_check(w);
  CHECK_EQ_INT(st, WF_ERR_INVALID);
  CHECK(strstr(wf_last_error(), "'tet'"));
  wf_world_health h;
  CHECK_OK(wf_world_health_get(w, true, &h));
  CHECK_EQ_INT(h.quantity, WF_HEALTH_PENETRATION);
  CHECK_EQ_INT(h.frame, 1);
  CHECK_EQ_INT(h.collider, 0);
  CHECK(strcmp(h.collider_name, "tet") == 0);
  CHECK_NEAR(h.value, 0.01 + 0.25 / sqrt(3.0), 1e-5);
  wf_world_destroy(w);
}

/* Keyframes hold the tetrahedron's pivot at (5, 0, 0) until t = 1/30 s, then move it at 120 m/s
 * to (9, 0, 0) at t = 1/30 + 1/30. A particle where the rest pose is stays healthy (a stale
 * pose would flag it at frame 1); a particle at (9.2, 0.25, 0.3) is inside only once the pose has
 * arrived: frames 1 to 3 are healthy (t <= 0.05: the pivot at most at 7), frame 4 is not. */
TEST(health_follows_keyframed_pose) {
  char obj[400];
  path_in_tmp(obj, sizeof obj, "tet.obj");
  REQUIRE(th_write_file(obj, tet_obj));
  const char *keys = "colliders[0].keyframes=[{\"time\": 0.0333333333, \"position\": [5, 0, 0]}, "
                     "{\"time\": 0.0666666667, \"position\": [9, 0, 0]}]";
  const char *rest[] = {keys};
  wf_world *w = world_of(health_scene, rest, 1);
  REQUIRE(w);
  CHECK_OK(wf_world_step(w, 6));
  CHECK_OK(wf_world_check(w));
  wf_world_destroy(w);

  const char *there[] = {keys, "particles[0].center=[9.2, 0.25, 0.3]"};
  w = world_of(health_scene, there, 2);
  REQUIRE(w);
  wf_status st = WF_OK;
  for (int f = 0; f < 6 && st == WF_OK; f++)
    st = wf_world_step(w, 1);
  if (st == WF_OK) st = wf_world_check(w);
  CHECK_EQ_INT(st, WF_ERR_INVALID);
  wf_world_health h;
  CHECK_OK(wf_world_health_get(w, true, &h));
  CHECK_EQ_INT(h.quantity, WF_HEALTH_PENETRATION);
  CHECK_EQ_INT(h.frame, 4);
  CHECK(strcmp(h.collider_name, "tet") == 0);
  CHECK_NEAR(h.value, 0.01 + 0.25 / sqrt(3.0), 1e-4); /* float positions near x = 9 */
  wf_world_destroy(w);
}

/* Particles and a cloth on one device share the check's copy of the mesh; the cloth's positions
 * are relative to its origin (its centre), so its part sees the keyframed pose moved into that
 * frame. The tetrahedron is held at pivot (5, 0, 0) by one key: the particle where the rest pose
 * is stays healthy, the 2 x 2 sheet centred at (5.2, 0.25, 0.3) is inside. Its vertex 0 (top
 * left, (5.19, 0.26, 0.3)) has x + y + z = 0.75 in the mesh's frame: depth = thickness (5 mm) +
 * 0.25 / sqrt(3). */
TEST(health_mesh_in_a_cloths_frame) {
  char obj[400];
  path_in_tmp(obj, sizeof obj, "tet.obj");
  REQUIRE(th_write_file(obj, tet_obj));
  const char *sets[] = {
      "colliders[0].keyframes=[{\"time\": 0, \"position\": [5, 0, 0]}]",
      "cloths=[{\"name\": \"sheet\", \"grid\": {\"size\": [0.02, 0.02], \"resolution\": [2, 2]}, "
      "\"center\": [5.2, 0.25, 0.3], \"material\": {\"thickness\": 0.005}}]",
      "simulation.coupling=false"};
  wf_world *w = world_of(health_scene, sets, 3);
  REQUIRE(w);
  wf_status st = wf_world_step(w, 1);
  if (st == WF_OK) st = wf_world_check(w);
  CHECK_EQ_INT(st, WF_ERR_INVALID);
  wf_world_health h;
  CHECK_OK(wf_world_health_get(w, true, &h));
  CHECK_EQ_INT(h.quantity, WF_HEALTH_PENETRATION);
  CHECK(strcmp(h.object_name, "sheet") == 0 && strcmp(h.collider_name, "tet") == 0);
  CHECK_EQ_INT(h.index, 0);
  CHECK_NEAR(h.value, 0.005 + 0.25 / sqrt(3.0), 1e-4); /* float positions near x = 5 */
  wf_world_destroy(w);
}

int main(int argc, char **argv) {
  if (!tmp_root_make("weft_stop_resume")) return 1;
  static const th_test tests[] = {TH_TEST(stop_kinetic_energy_closed_form),
                                  TH_TEST(stop_max_speed_closed_form),
                                  TH_TEST(stop_time_exact_and_first_rule),
                                  TH_TEST(stop_count_survives_a_checkpoint),
                                  TH_TEST(stop_rules_bad_input),
                                  TH_TEST(resume_refuses_each_physics_change),
                                  TH_TEST(resume_unchecked_checkpoint),
                                  TH_TEST(health_flags_a_particle_inside_a_mesh),
                                  TH_TEST(health_follows_keyframed_pose),
                                  TH_TEST(health_mesh_in_a_cloths_frame)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
