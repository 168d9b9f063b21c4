/* Cloth contact (wf_cloth_desc.contact) on a cloth split over several devices: the state after
 * every frame is bitwise the single-device cloth's for 2, 3 and 4 partitions, with XPBD and
 * mass-spring, captured and stage by stage, and after a checkpoint restored into a new split
 * cloth; no intersecting triangle pair at any frame end (wf_cloth_intersections, exact); the
 * overlap measure leaves the state as it was.
 *
 * The scenes make contact cross the partition boundaries, and the tests check that it does (so
 * that an exchange left out changes the result): a long strip falling on the ground piles into
 * folds (METIS cuts it across its length, so its folds lay one partition's vertices onto
 * another's), and a mesh of two separate sheets falling onto each other (their pieces land in
 * different partitions). Each run counts, over its frame ends, the vertex pairs closer than the
 * contact reach (2.5 thickness) that are not mesh neighbours and whose owners differ
 * (cloth_owners.h): it must be > 0. Tolerance everywhere: none (memcmp of positions, velocities
 * and clocks).
 *
 * On CPU (CI) the partitions are cpu:0..3; with --device cuda, cuda:0..3 where they exist (a GPU
 * holds several partitions where there are fewer). */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

#include "cloth_owners.h"

enum { MAXV = 512, MAXT = 1024 };

#include "cloth_pieces.h" /* mesh, add_grid */

static const float X[3] = {1, 0, 0}, Y[3] = {0, 1, 0}, Z[3] = {0, 0, 1};
static const float TH = 0.005f; /* material.thickness */

enum { SCENE_FOLD, SCENE_SHEETS };

/* The fold: a 4 x 40 strip 2.4 cm apart (0.94 m), hanging with its low end 2 cm above the ground
 * and leaning 5 cm along z, falls and piles into folds on itself. The sheets: two 8 x 8 sheets
 * (spacing 2 cm) of one mesh, 4 cm apart, the upper one turned by a quarter of its spacing, fall
 * onto the ground and the upper onto the lower. */
static void scene_mesh(int scene, mesh *m) {
  m->nv = m->nt = 0;
  if (scene == SCENE_FOLD) {
    const float c[3] = {0.0f, 0.02f + 0.5f * 39 * 0.024f, 0.0f};
    add_grid(m, 4, 40, 0.024f, c, X, Y);
    for (uint32_t i = 0; i < m->nv; i++)
      m->v[i][2] += 0.05f * m->v[i][1];
    return;
  }
  const float lo[3] = {0.0f, 0.03f, 0.0f}, hi[3] = {0.005f, 0.07f, 0.003f};
  add_grid(m, 8, 8, 0.02f, lo, X, Z);
  add_grid(m, 8, 8, 0.02f, hi, X, Z);
}

typedef struct run_opts {
  int scene;
  int integrator;
  bool no_graph;
  int frames;
} run_opts;

static wf_cloth_desc contact_desc(const run_opts *o, wf_device *const *devs, int n) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "contact-split";
  d.no_graph = o->no_graph;
  d.integrator = o->integrator;
  d.iterations = o->integrator == WF_CLOTH_XPBD ? 4 : 1;
  d.substeps = o->integrator == WF_CLOTH_XPBD ? 16 : 32;
  d.contact = true;
  d.damping = 0.5f;
  /* a light cotton, 0.15 kg/m², stiff enough in mass-spring for the substep (test_cloth_layers) */
  d.material.density = 0.15f;
  d.material.thickness = TH;
  d.material.stretch_modulus = 30.0f;
  d.material.shear_modulus = 10.0f;
  d.material.bend_rigidity = 1e-5f;
  d.device_count = n;
  for (int i = 0; i < n; i++)
    d.devices[i] = devs[i];
  return d;
}

/* The first n devices of the test's kind; missing ones repeat the first. */
static void pick_devices(int n, wf_device **devs) {
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", th_kind, i);
    if (wf_device_get(name, &devs[i]) != WF_OK) devs[i] = th_dev0;
  }
  wf_clear_error();
}

static wf_status make(const run_opts *o, int n, wf_cloth **out) {
  static mesh m;
  scene_mesh(o->scene, &m);
  wf_device *devs[4];
  pick_devices(n, devs);
  wf_cloth_desc d = contact_desc(o, devs, n);
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.vertices = (const float(*)[3])m.v;
  md.vertex_count = m.nv;
  md.triangles = (const uint32_t(*)[3])m.t;
  md.triangle_count = m.nt;
  wf_status st = wf_cloth_create_mesh(&d, &md, out);
  wf_collider_desc g = scene_ground(0.0f);
  if (st == WF_OK) st = wf_cloth_add_collider(*out, &g, NULL);
  return st;
}

/* The state of a frame end, as the solver holds it. */
typedef struct frame_state {
  float pos[MAXV][4], vel[MAXV][4];
  double time;
  uint64_t substeps;
} frame_state;

static bool get_state(wf_cloth *c, frame_state *s) {
  return wf_cloth_download_local(c, s->pos, s->vel) == WF_OK &&
         wf_cloth_time(c, &s->time, &s->substeps) == WF_OK;
}

static bool same_state(const frame_state *a, const frame_state *b, uint32_t nv) {
  return memcmp(a->pos, b->pos, nv * sizeof a->pos[0]) == 0 &&
         memcmp(a->vel, b->vel, nv * sizeof a->vel[0]) == 0 &&
         memcmp(&a->time, &b->time, sizeof a->time) == 0 && a->substeps == b->substeps;
}

/* Vertex pairs within the contact reach (2.5 thickness) that are no mesh neighbours (rest apart
 * by more than 2 thickness, the stage's rest_skip) and are owned by different partitions. */
static uint32_t cross_pairs(const float (*p)[4], const float (*rest)[4], const int *owner,
                            uint32_t nv) {
  uint32_t n = 0;
  double reach = 2.5 * TH, skip = 2.0 * TH;
  for (uint32_t i = 0; i < nv; i++)
    for (uint32_t j = i + 1; j < nv; j++) {
      if (owner[i] == owner[j]) continue;
      double d = 0.0, r = 0.0;
      for (int k = 0; k < 3; k++) {
        d += (p[i][k] - (double)p[j][k]) * (p[i][k] - (double)p[j][k]);
        r += (rest[i][k] - (double)rest[j][k]) * (rest[i][k] - (double)rest[j][k]);
      }
      n += d < reach * reach && r > skip * skip;
    }
  return n;
}

/* Runs o->frames frames of the scene on one device (want NULL: records every frame end into
 * got) or split over n (compares every frame end with want); the largest count of intersecting
 * triangle pairs over the frame ends into *worst, the cross-partition pairs summed into *cross. */
static void run(const run_opts *o, int n, frame_state *want, frame_state *got, uint64_t *worst,
                uint32_t *cross) {
  wf_cloth *c = NULL;
  *worst = 0, *cross = 0;
  wf_status st = make(o, n, &c);
  if (st != WF_OK) {
    TH_FAIL("%d device(s): %s", n, wf_last_error());
    return;
  }
  uint32_t nv = wf_cloth_count(c);
  static int owner[MAXV];
  static float rest[MAXV][4];
  bool split = wf_cloth_partition_count(c) > 1;
  CHECK_EQ_INT(wf_cloth_partition_count(c), n);
  if (split) CHECK(cloth_owners(c, owner, NULL));
  CHECK_OK(wf_cloth_download_local(c, rest, NULL));
  int fails = th_fails;
  for (int f = 0; f < o->frames && th_fails == fails; f++) {
    uint64_t k = 0;
    frame_state *s = want ? got : &got[f];
    CHECK_OK(wf_cloth_step_frames(c, 1));
    CHECK_OK(wf_cloth_intersections(c, &k));
    CHECK(get_state(c, s));
    if (k > *worst) *worst = k;
    if (split) *cross += cross_pairs((const float(*)[4])s->pos, (const float(*)[4])rest, owner, nv);
    if (want && !same_state(&want[f], s, nv)) {
      TH_FAIL("%d partitions, %s: frame %d differs from one device", n,
              o->integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", f + 1);
      break;
    }
  }
  wf_cloth_destroy(c);
}

/* One device, then 2, 3 and 4 partitions, every frame end compared. */
static void split_equals_one(const run_opts *o) {
  static frame_state want[32], got;
  uint64_t worst;
  uint32_t cross;
  REQUIRE(o->frames <= 32);
  run(o, 1, NULL, want, &worst, &cross);
  CHECK_EQ_INT(worst, 0);
  int step = 1;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  step = 2; /* ~10x slower there: 2 and 4 partitions (3 in the other builds) */
#endif
  for (int n = 2; n <= 4 && !th_fails; n += step) {
    run(o, n, want, &got, &worst, &cross);
    printf("  %s, %s%s, %d partitions: bitwise one device's over %d frames; %u cross-partition "
           "pairs within reach at frame ends; worst intersecting pairs %llu\n",
           o->scene == SCENE_FOLD ? "fold" : "sheets",
           o->integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", o->no_graph ? " staged" : "", n,
           o->frames, cross, (unsigned long long)worst);
    CHECK_EQ_INT(worst, 0);
    CHECK(cross > 0); /* contact did cross the boundaries: the exchange mattered */
  }
}

TEST(fold_xpbd) { split_equals_one(&(run_opts){SCENE_FOLD, WF_CLOTH_XPBD, false, 24}); }
TEST(fold_springs) { split_equals_one(&(run_opts){SCENE_FOLD, WF_CLOTH_SPRINGS, false, 24}); }
TEST(sheets_xpbd) { split_equals_one(&(run_opts){SCENE_SHEETS, WF_CLOTH_XPBD, false, 12}); }
TEST(sheets_springs) { split_equals_one(&(run_opts){SCENE_SHEETS, WF_CLOTH_SPRINGS, false, 12}); }
/* stage by stage (desc.no_graph): the sheets, whose contact crosses the partitions early */
TEST(sheets_xpbd_staged) { split_equals_one(&(run_opts){SCENE_SHEETS, WF_CLOTH_XPBD, true, 12}); }
TEST(sheets_springs_staged) {
  split_equals_one(&(run_opts){SCENE_SHEETS, WF_CLOTH_SPRINGS, true, 12});
}

/* A checkpoint: the state of a 3-partition run after 10 frames, restored into a new cloth of 4
 * partitions and of 1, continues bitwise as the original for 6 frames (contact keeps no state
 * of its own between substeps). */
static void checkpoint(int integrator) {
  run_opts o = {SCENE_FOLD, integrator, false, 0};
  static frame_state saved, a, b;
  wf_cloth *c = NULL;
  CHECK_OK(make(&o, 3, &c));
  CHECK_OK(wf_cloth_step_frames(c, 10));
  CHECK(get_state(c, &saved));
  CHECK_OK(wf_cloth_step_frames(c, 6));
  CHECK(get_state(c, &a));
  uint32_t nv = wf_cloth_count(c);
  wf_cloth_destroy(c);
  for (int n = 4; n >= 1; n -= 3) {
    CHECK_OK(make(&o, n, &c));
    CHECK_OK(wf_cloth_set_state_local(c, (const float(*)[4])saved.pos, (const float(*)[4])saved.vel,
                                      saved.time, saved.substeps));
    CHECK_OK(wf_cloth_step_frames(c, 6));
    CHECK(get_state(c, &b));
    wf_cloth_destroy(c);
    if (!same_state(&a, &b, nv)) TH_FAIL("restored on %d device(s): differs", n);
  }
}

TEST(checkpoint_xpbd) { checkpoint(WF_CLOTH_XPBD); }
TEST(checkpoint_springs) { checkpoint(WF_CLOTH_SPRINGS); }

/* wf_cloth_overlap_measure on a split cloth with contact (its frames of every kind, the contact
 * exchange and stage among them): the state, the clock and the frames after it are bitwise
 * those of a run without it, and the bytes it reports count the contact copies (32 bytes a
 * vertex a partition does not own, a substep). */
TEST(overlap_measure) {
  /* On CUDA this case takes ~85 s on an H200 (0.9 s on the CPU): backtraces put the time in
   * capturing and instantiating the measure's extra frames, those without copies and without
   * kernels (bench/results/nvidia-h200-wave3.txt). Not fixed yet. */
  if (th_is_cuda()) th_allow_seconds(200);
  run_opts o = {SCENE_FOLD, WF_CLOTH_XPBD, false, 0};
  static frame_state a, b;
  wf_cloth *c = NULL;
  wf_overlap ov;
  wf_cloth_info info;
  CHECK_OK(make(&o, 3, &c));
  CHECK_OK(wf_cloth_step_frames(c, 8));
  CHECK_OK(wf_cloth_overlap_measure(c, 2, &ov));
  CHECK_OK(wf_cloth_step_frames(c, 4));
  CHECK(get_state(c, &a));
  CHECK_OK(wf_cloth_info_get(c, &info));
  uint32_t nv = wf_cloth_count(c);
  wf_cloth_destroy(c);
  CHECK(ov.frame_ms > 0.0 && ov.hidden_fraction >= 0.0 && ov.hidden_fraction <= 1.0);
  uint64_t contact = (uint64_t)2 * nv * 32 * 16; /* (3 - 1) x nv x 32 bytes, 16 substeps */
  CHECK(info.halo_bytes_per_frame > contact);
  CHECK_OK(make(&o, 3, &c));
  CHECK_OK(wf_cloth_step_frames(c, 12));
  CHECK(get_state(c, &b));
  wf_cloth_destroy(c);
  CHECK(same_state(&a, &b, nv));
}

/* What stays refused: self-collision over several devices, and a contact group of a split cloth
 * (errors name the cloth and say what to do). */
TEST(refusals) {
  run_opts o = {SCENE_SHEETS, WF_CLOTH_XPBD, false, 0};
  static mesh m;
  scene_mesh(SCENE_SHEETS, &m);
  wf_device *devs[2];
  pick_devices(2, devs);
  wf_cloth_desc d = contact_desc(&o, devs, 2);
  d.self_collision = true;
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.vertices = (const float(*)[3])m.v;
  md.vertex_count = m.nv;
  md.triangles = (const uint32_t(*)[3])m.t;
  md.triangle_count = m.nt;
  wf_cloth *c = NULL, *c1 = NULL;
  CHECK_ERROR(wf_cloth_create_mesh(&d, &md, &c), WF_ERR_UNSUPPORTED,
              "cloth 'contact-split': self_collision is not supported across devices");
  CHECK_OK(make(&o, 2, &c));
  CHECK_OK(make(&o, 1, &c1));
  wf_cloth *both[2] = {c1, c};
  wf_cloth_group *g = NULL;
  CHECK_ERROR(wf_cloth_group_create(both, 2, NULL, &g), WF_ERR_UNSUPPORTED,
              "cloth 'contact-split' runs over 2 devices: a contact group needs every cloth on "
              "one device");
  wf_cloth_destroy(c);
  wf_cloth_destroy(c1);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(fold_xpbd),          TH_TEST(fold_springs),
                                  TH_TEST(sheets_xpbd),        TH_TEST(sheets_springs),
                                  TH_TEST(sheets_xpbd_staged), TH_TEST(sheets_springs_staged),
                                  TH_TEST(checkpoint_xpbd),    TH_TEST(checkpoint_springs),
                                  TH_TEST(overlap_measure),    TH_TEST(refusals)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
