/* A drag on a cloth vertex (wf_cloth_drag_set): a spring-damper towards a target, in the
 * parameter block the captured frame reads.
 *
 * - equilibrium: a 0.5 m square sheet of 2 x 2 vertices lies flat at y = 1, three corners
 *   pinned; the fourth (mass m = 0.01 kg) is pulled towards its own rest position t by k = 100
 *   N/m, c = 2 N·s/m (critical: 2 sqrt(k m)), gravity g = 9.81 m/s² along -y, the sheet's normal.
 *   At rest, k (t - x) + F_s(x) - m g ŷ = 0, with F_s the force of the vertex's three springs
 *   (stretch to its two neighbours, L = 0.5 m, shear to the diagonal, L √2), all at rest length at
 *   x = t and lying in the plane y = 1: to first order in δ = x - t, F_s = -Σ k_j d_j d_jᵀ δ has no
 *   y part, so δ = -(m g / k) ŷ = -0.981 mm. Second order: the springs stretch by δ²/(2L) and
 *   pull up by k_j δ³/(2 L²) in all, 2.4e-6 of the drag's pull (k_j = 50 N/m): 2.4e-9 m; they keep
 *   their length, so the vertex moves in by at most δ²/(2L) = 1e-6 m. Float positions near 1 m
 *   round to 6e-8 m. Tolerance 2e-6 m (0.2 % of δ), mass-spring and XPBD alike (an XPBD constraint
 *   with compliance 1/k_j is the same spring at rest, its hinge across the diagonal all but off;
 *   the drag there is a force in the prediction). Without the drag the vertex falls away: it must
 *   end more than 10 δ below t.
 * - the captured frame is not recaptured when the target moves (wf_cloth_info.captures stays 1
 *   over 20 frames with a new target each), and the replayed graph gives the moved result: bitwise
 *   the run enqueued stage by stage (desc.no_graph) with the same targets. The one-launch frames
 *   take the drag: bitwise the per-substep kernels (tuning.one_launch OFF), both integrators.
 * - over 2 and 3 CPU partitions a hanging sheet with a moving drag (a bottom corner, then a vertex
 * in the middle, which a cut passes near) is bitwise the one-partition result, both integrators.
 * - without an active drag nothing changes: a drag set and cleared before the frames, and a drag
 *   held on a pinned vertex (which does not move), give bitwise the state of a cloth that never
 *   had one, on every frame path.
 * - bad arguments are refused naming the cloth and the vertex.
 * Tolerances: none (memcmp) except the equilibrium's, derived above.
 */
#include "harness.h"

#include "cloth_scenes.h"
#include "weft/cloth.h"

/* ---- equilibrium -------------------------------------------------------------------------- */

static wf_status flat_sheet(int integrator, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "flat";
  d.integrator = integrator;
  d.substeps = 16;
  d.iterations = 4;
  d.material.particle_mass = 0.01f;
  d.material.coefficients = true;
  d.material.stretch_stiffness = d.material.shear_stiffness = 50.0f;
  d.material.bend_stiffness = 0.0f;
  d.material.stretch_compliance = d.material.shear_compliance = 1.0f / 50.0f;
  d.material.bend_compliance = 1e6f; /* XPBD's hinge on the diagonal: 0 would hold the sheet flat;
                                        1e-6 N·m/rad pulls with ~1e-8 N, 1e-7 of the drag's */
  d.devices[0] = th_dev0;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 2;
  g.size[0] = g.size[1] = 0.5f; /* lies flat (v_axis -z) at y = 1 */
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  for (uint32_t v = 0; v < 3 && st == WF_OK; v++)
    st = wf_cloth_pin(*out, v);
  return st;
}

static void equilibrium(int integrator, const char *what) {
  const float k = 100.0f, c = 2.0f, g = 9.81f;
  wf_cloth *cl = NULL, *free_fall = NULL;
  CHECK_OK(flat_sheet(integrator, &cl));
  CHECK_OK(flat_sheet(integrator, &free_fall));
  float pos[4][4];
  CHECK_OK(wf_cloth_download(cl, pos, NULL));
  const double t[3] = {pos[3][0], pos[3][1], pos[3][2]};
  const double w = pos[3][3], delta = g / (w * k);
  REQUIRE(w > 0.0);
  CHECK_OK(wf_cloth_drag_set(cl, 3, t, k, c));
  CHECK_OK(wf_cloth_step_frames(cl, 90)); /* 1.5 s: the vertical mode decays as e^{-100 t} */
  CHECK_OK(wf_cloth_step_frames(free_fall, 90));
  float vel[4][4], ff[4][4];
  CHECK_OK(wf_cloth_download(cl, pos, vel));
  CHECK_OK(wf_cloth_download(free_fall, ff, NULL));
  double dy = (double)pos[3][1] - (t[1] - delta);
  double dxz = hypot((double)pos[3][0] - t[0], (double)pos[3][2] - t[2]);
  printf("  %s: δ = %.4g m expected; x - t = (%.3g %.3g %.3g) m, |v| %.2g m/s; undragged sag "
         "%.3g m\n",
         what, -delta, pos[3][0] - t[0], pos[3][1] - t[1], pos[3][2] - t[2],
         hypot(hypot(vel[3][0], vel[3][1]), vel[3][2]), ff[3][1] - t[1]);
  CHECK_NEAR(dy, 0.0, 2e-6);
  CHECK_NEAR(dxz, 0.0, 2e-6);
  CHECK((double)ff[3][1] < t[1] - 10.0 * delta);
  wf_cloth_destroy(cl);
  wf_cloth_destroy(free_fall);
}

TEST(equilibrium_springs) { equilibrium(WF_CLOTH_SPRINGS, "mass-spring"); }
TEST(equilibrium_xpbd) { equilibrium(WF_CLOTH_XPBD, "XPBD"); }

/* ---- a hanging sheet with a moving drag ------------------------------------------------------ */

typedef struct hang_opts {
  int integrator;
  bool no_graph;
  int one_launch; /* wf_cloth_tuning.one_launch */
  int devices;    /* partitions (CPU devices of the test's kind) */
  bool no_drag;   /* run_script without the drag */
} hang_opts;

/* A 12 x 10 sheet hanging in the x-y plane from its pinned top row, in wind, origin away from the
 * world's (so that the targets are converted into the cloth's frame). */
static wf_status hanging(const hang_opts *o, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "hang";
  d.integrator = o->integrator;
  d.substeps = 8;
  d.iterations = o->integrator == WF_CLOTH_XPBD ? 3 : 1;
  d.no_graph = o->no_graph;
  d.tuning.one_launch = o->one_launch;
  d.wind[2] = 2.0f;
  d.material.drag = 0.8f;
  d.device_count = o->devices;
  for (int i = 0; i < o->devices; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", th_kind, i);
    if (wf_device_get(name, &d.devices[i]) != WF_OK) d.devices[i] = th_dev0;
  }
  wf_clear_error();
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 12, g.resolution[1] = 10;
  g.size[0] = 1.1f, g.size[1] = 0.9f;
  g.center[0] = 100.0f, g.center[1] = 1.0f, g.center[2] = -50.0f;
  g.v_axis[0] = 0.0f, g.v_axis[1] = 1.0f, g.v_axis[2] = 0.0f;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  return st == WF_OK ? wf_cloth_pin_named(*out, "top", NULL) : st;
}

/* Frames of the drag script: vertex 108 (the bottom-left corner; row 0 is the top) pulled out of
 * the sheet's plane towards a target that moves every frame, then vertex 55 (the middle), then
 * none. */
#define SCRIPT_FRAMES 24
static wf_status drag_script(wf_cloth *cl, int frame) {
  double s = 0.02 * frame;
  if (frame < 10) {
    const double t[3] = {99.5 + s, 0.4 + s, -49.7};
    return wf_cloth_drag_set(cl, 108, t, 5.0f, 0.05f);
  }
  if (frame < 20) {
    const double t[3] = {100.0, 0.9 - s, -49.6 + s};
    return wf_cloth_drag_set(cl, 55, t, 20.0f, 0.0f); /* stiff: capped by the solver */
  }
  return wf_cloth_drag_clear(cl);
}

/* Runs the script; the state (positions and velocities, 8 floats a vertex) in *state. */
static void run_script(const hang_opts *o, float **state, uint32_t *n, uint64_t *captures) {
  *state = NULL;
  wf_cloth *cl = NULL;
  CHECK_OK(hanging(o, &cl));
  for (int f = 0; f < SCRIPT_FRAMES; f++) {
    if (!o->no_drag) CHECK_OK(drag_script(cl, f));
    CHECK_OK(wf_cloth_step_frames(cl, 1));
  }
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(cl, &info));
  if (captures) *captures = info.captures;
  *state = scene_state(cl, n);
  CHECK(*state != NULL);
  wf_cloth_destroy(cl);
}

static bool same_state(const float *a, const float *b, uint32_t n, const char *what) {
  if (!a || !b) return false;
  long d = scene_first_diff(a, b, (size_t)n * 8);
  if (d >= 0)
    TH_FAIL("%s: float %ld differs (vertex %ld): %.9g vs %.9g", what, d, d / 4 % (long)n,
            (double)a[d], (double)b[d]);
  return d < 0;
}

/* The drag moved the sheet: vertex 108 ends elsewhere than in the undragged run. */
static void check_moved(const hang_opts *o, const float *dragged, uint32_t n, const char *what) {
  hang_opts u = *o;
  u.no_drag = true;
  float *plain = NULL;
  uint32_t m = 0;
  run_script(&u, &plain, &m, NULL);
  if (!plain || !dragged) {
    free(plain);
    return;
  }
  double d0 = 0.0;
  for (int k = 0; k < 3; k++) {
    double e = (double)dragged[108 * 4 + k] - plain[108 * 4 + k];
    d0 += e * e;
  }
  printf("  %s: the drag moved vertex 108 by %.3f m\n", what, sqrt(d0));
  CHECK(sqrt(d0) > 0.05);
  free(plain);
}

static void replay_and_paths(int integrator, const char *what) {
  hang_opts o = {integrator, false, WF_CLOTH_TUNE_AUTO, 1, false};
  float *graph = NULL, *staged = NULL, *per_substep = NULL, *one = NULL;
  uint32_t n = 0;
  uint64_t captures = 0;
  run_script(&o, &graph, &n, &captures);
  printf("  %s: %llu capture(s) over %d frames, a new target each\n", what,
         (unsigned long long)captures, SCRIPT_FRAMES);
  CHECK_EQ_INT(captures, 1);
  o.no_graph = true;
  run_script(&o, &staged, &n, NULL);
  CHECK(same_state(graph, staged, n, "replayed graph vs enqueued frames"));
  o.no_graph = false, o.one_launch = WF_CLOTH_TUNE_OFF;
  run_script(&o, &per_substep, &n, NULL);
  CHECK(same_state(graph, per_substep, n, "automatic frame vs kernels per substep"));
  if (integrator == WF_CLOTH_XPBD) { /* the XPBD one-launch frame runs on the CPU only when ON */
    o.one_launch = WF_CLOTH_TUNE_ON;
    run_script(&o, &one, &n, NULL);
    CHECK(same_state(graph, one, n, "XPBD one-launch frame vs kernels per substep"));
  }
  o.one_launch = WF_CLOTH_TUNE_AUTO;
  check_moved(&o, graph, n, what);
  free(graph), free(staged), free(per_substep), free(one);
}

TEST(moving_target_no_recapture_springs) { replay_and_paths(WF_CLOTH_SPRINGS, "mass-spring"); }
TEST(moving_target_no_recapture_xpbd) { replay_and_paths(WF_CLOTH_XPBD, "XPBD"); }

static void partitions(int integrator, const char *what) {
  float *ref = NULL;
  uint32_t n = 0, m = 0;
  hang_opts o = {integrator, false, WF_CLOTH_TUNE_AUTO, 1, false};
  run_script(&o, &ref, &n, NULL);
  for (int np = 2; np <= 3 && ref; np++) {
    float *got = NULL;
    uint64_t captures = 0;
    o.devices = np;
    run_script(&o, &got, &m, &captures);
    char label[64];
    snprintf(label, sizeof label, "%s: %d partitions vs 1", what, np);
    CHECK_EQ_INT(m, n);
    if (got && same_state(ref, got, n, label))
      printf("  %s: bitwise equal (%llu capture)\n", label, (unsigned long long)captures);
    CHECK_EQ_INT(captures, 1);
    free(got);
  }
  free(ref);
}

TEST(partitions_bitwise_springs) { partitions(WF_CLOTH_SPRINGS, "mass-spring"); }
TEST(partitions_bitwise_xpbd) { partitions(WF_CLOTH_XPBD, "XPBD"); }

/* ---- nothing changes without an active drag -------------------------------------------------- */

/* how 0: never a drag; 1: set and cleared before the frames; 2: held on a pinned vertex. */
static float *inactive_run(const hang_opts *o, int how, uint32_t *n) {
  wf_cloth *cl = NULL;
  if (hanging(o, &cl) != WF_OK) {
    TH_FAIL("hanging: %s", wf_last_error());
    return NULL;
  }
  const double t[3] = {99.0, 0.0, -49.0};
  wf_status st = WF_OK;
  if (how == 1 && (st = wf_cloth_drag_set(cl, 5, t, 50.0f, 1.0f)) == WF_OK)
    st = wf_cloth_drag_clear(cl);
  if (how == 2) st = wf_cloth_drag_set(cl, 5, t, 50.0f, 1.0f); /* top row (row 0): pinned */
  if (st == WF_OK) st = wf_cloth_step_frames(cl, 12);
  float *s = st == WF_OK ? scene_state(cl, n) : NULL;
  if (st != WF_OK) TH_FAIL("inactive run %d: %s", how, wf_last_error());
  wf_cloth_destroy(cl);
  return s;
}

TEST(inactive_drag_changes_nothing) {
  static const int integrators[2] = {WF_CLOTH_SPRINGS, WF_CLOTH_XPBD};
  static const int paths[3] = {WF_CLOTH_TUNE_AUTO, WF_CLOTH_TUNE_OFF, WF_CLOTH_TUNE_ON};
  for (int i = 0; i < 2; i++)
    for (int p = 0; p < 3; p++)
      for (int np = 1; np <= 2; np++) {
        hang_opts o = {integrators[i], false, paths[p], np, false};
        uint32_t n = 0;
        float *never = inactive_run(&o, 0, &n);
        float *cleared = inactive_run(&o, 1, &n), *pinned = inactive_run(&o, 2, &n);
        char label[96];
        snprintf(label, sizeof label, "%s, one_launch %d, %d partition(s)",
                 i ? "XPBD" : "mass-spring", paths[p], np);
        CHECK(same_state(never, cleared, n, label));
        CHECK(same_state(never, pinned, n, label));
        if (pinned) CHECK(pinned[5 * 4 + 3] == 0.0f); /* the dragged vertex 5 is pinned */
        free(never), free(cleared), free(pinned);
      }
}

TEST(errors_name_the_cloth_and_vertex) {
  hang_opts o = {WF_CLOTH_SPRINGS, false, WF_CLOTH_TUNE_AUTO, 1, false};
  wf_cloth *cl = NULL;
  CHECK_OK(hanging(&o, &cl));
  double t[3] = {100.0, 1.0, -50.0};
  CHECK_ERROR(wf_cloth_drag_set(cl, 120, t, 1.0f, 0.0f), WF_ERR_INVALID, "'hang'", "vertex 120",
              "120 vertices");
  CHECK_ERROR(wf_cloth_drag_set(cl, 7, t, -1.0f, 0.0f), WF_ERR_INVALID, "'hang'", "vertex 7",
              "stiffness");
  CHECK_ERROR(wf_cloth_drag_set(cl, 7, t, 1.0f, NAN), WF_ERR_INVALID, "'hang'", "vertex 7",
              "damping");
  t[1] = INFINITY;
  CHECK_ERROR(wf_cloth_drag_set(cl, 7, t, 1.0f, 0.0f), WF_ERR_INVALID, "'hang'", "vertex 7",
              "target[1]");
  CHECK_ERROR(wf_cloth_drag_set(cl, 7, NULL, 1.0f, 0.0f), WF_ERR_INVALID, "'hang'", "vertex 7");
  CHECK_STATUS(wf_cloth_drag_set(NULL, 7, t, 1.0f, 0.0f), WF_ERR_INVALID);
  CHECK_STATUS(wf_cloth_drag_clear(NULL), WF_ERR_INVALID);
  CHECK_OK(wf_cloth_drag_clear(cl)); /* none set: a no-op */
  wf_cloth_destroy(cl);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(equilibrium_springs),
                                  TH_TEST(equilibrium_xpbd),
                                  TH_TEST(moving_target_no_recapture_springs),
                                  TH_TEST(moving_target_no_recapture_xpbd),
                                  TH_TEST(partitions_bitwise_springs),
                                  TH_TEST(partitions_bitwise_xpbd),
                                  TH_TEST(inactive_drag_changes_nothing),
                                  TH_TEST(errors_name_the_cloth_and_vertex)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
