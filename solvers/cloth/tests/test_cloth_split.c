/* One cloth split over several devices (wf_cloth): the state after N frames is bitwise the
 * single-device wf_cloth's for 1, 2, 3 and 4 partitions, with mass-spring and XPBD (several
 * iterations, so the multipliers count), on a grid and on an OBJ mesh, with wind (drag and lift),
 * colliders (static and moving, with an attachment), pinned regions, a partition boundary through
 * a pinned row, captured and uncaptured frames, parameters and material changed between frames,
 * and a checkpoint restored with set_state. Tolerance everywhere: none (memcmp of positions and
 * velocities).
 *
 * On CPU (CI) the partitions are cpu:0..3. With --device cuda they are cuda:0..3 where they exist;
 * with fewer GPUs a GPU holds several partitions (the halo copies are then copies within one
 * device). */
#include "harness.h"

#include "cloth_owners.h" /* where a vertex lives, through the public API */
#include "weft/cloth.h"
#include "weft/particles.h"

/* The METIS settings of a cloth over several devices (wf_cloth_desc.seed, .imbalance). */
typedef struct split_opts {
  int seed;
  float imbalance;
} split_opts;

static split_opts split_opts_default(void) { return (split_opts){1, 0.03f}; }

/* desc over the n devices devs (n may exceed WF_MAX_DEVICES: the solver refuses it). */
static wf_cloth_desc over(const wf_cloth_desc *d, wf_device *const *devs, int n,
                          const split_opts *o) {
  wf_cloth_desc dd = *d;
  dd.device_count = n;
  for (int i = 0; i < n && i < WF_MAX_DEVICES; i++)
    dd.devices[i] = devs[i];
  if (o) dd.seed = o->seed, dd.imbalance = o->imbalance;
  return dd;
}

static wf_status split_create_grid(wf_device *const *devs, int n, const split_opts *o,
                                   const wf_cloth_desc *d, const wf_cloth_grid *g, wf_cloth **out) {
  wf_cloth_desc dd = over(d, devs, n, o);
  return wf_cloth_create_grid(&dd, g, out);
}

static wf_status split_create_mesh(wf_device *const *devs, int n, const split_opts *o,
                                   const wf_cloth_desc *d, const wf_cloth_mesh_desc *m,
                                   wf_cloth **out) {
  wf_cloth_desc dd = over(d, devs, n, o);
  return wf_cloth_create_mesh(&dd, m, out);
}

/* A system under test: one cloth or a split one. */
typedef struct sys {
  wf_cloth *c;
  wf_cloth *cs;
} sys;

typedef struct opts {
  int integrator;
  bool no_graph;
  bool mesh;      /* disc.obj instead of a grid */
  bool pin_edges; /* pin the whole top row and left column (cut by any split) */
  int frames;     /* before the comparison */
} opts;

static wf_cloth_desc base_desc(const opts *o) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "split-test";
  d.integrator = o->integrator;
  d.substeps = 8;
  d.iterations = o->integrator == WF_CLOTH_XPBD ? 2 : 1;
  d.no_graph = o->no_graph;
  d.wind[0] = 3.0f, d.wind[2] = 1.0f;
  d.damping = 0.1f;
  d.material.drag = 1.0f;
  d.material.lift = 0.5f;
  d.material.thickness = 0.01f;
  if (o->mesh) d.material.particle_mass = 0.01f; /* disc.obj's small triangles: stable springs */
  return d;
}

static wf_collider_desc collider(int type, const char *name) {
  wf_collider_desc c;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.type = type;
  c.friction = 0.5f;
  return c;
}

/* The pieces of the scene that need a system: colliders, pins, an attachment. */
static wf_status sys_add_collider(sys *s, const wf_collider_desc *c, uint32_t *i) {
  return s->cs ? wf_cloth_add_collider(s->cs, c, i) : wf_cloth_add_collider(s->c, c, i);
}

static wf_status sys_pin_named(sys *s, const char *where) {
  return s->cs ? wf_cloth_pin_named(s->cs, where, NULL) : wf_cloth_pin_named(s->c, where, NULL);
}

static wf_status sys_pin_region(sys *s, const float lo[3], const float hi[3]) {
  return s->cs ? wf_cloth_pin_region(s->cs, lo, hi, NULL) : wf_cloth_pin_region(s->c, lo, hi, NULL);
}

static wf_status sys_attach(sys *s, uint32_t v, uint32_t col) {
  return s->cs ? wf_cloth_attach(s->cs, v, col) : wf_cloth_attach(s->c, v, col);
}

static wf_status sys_step(sys *s, int frames) {
  return s->cs ? wf_cloth_step_frames(s->cs, frames) : wf_cloth_step_frames(s->c, frames);
}

static uint32_t sys_count(const sys *s) {
  if (s->cs) return wf_cloth_count(s->cs);
  wf_cloth_info in;
  return wf_cloth_info_get(s->c, &in) == WF_OK ? in.vertices : 0;
}

static void sys_free(sys *s) {
  wf_cloth_destroy(s->c);
  wf_cloth_destroy(s->cs);
  memset(s, 0, sizeof *s);
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

/* Builds the scene on one device (n == 0) or split over n devices. The grid is 12 x 10 falling
 * in wind onto a sphere, a box and a capsule above the ground, a corner attached to a moving box
 * and a region pinned; the mesh is disc.obj (257 vertices) held at its centre, falling onto a
 * sphere in wind. */
static wf_status build(const opts *o, int n, sys *s) {
  memset(s, 0, sizeof *s);
  wf_cloth_desc d = base_desc(o);
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 12, g.resolution[1] = 10;
  g.size[0] = 1.1f, g.size[1] = 0.9f;
  g.center[1] = 0.7f;
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = WEFT_ASSETS_DIR "/meshes/disc.obj";
  m.translate[1] = 0.8f;
  wf_status st;
  if (n) {
    wf_device *devs[4];
    pick_devices(n, devs);
    split_opts sd = split_opts_default();
    st = o->mesh ? split_create_mesh(devs, n, &sd, &d, &m, &s->cs)
                 : split_create_grid(devs, n, &sd, &d, &g, &s->cs);
  } else {
    d.devices[0] = th_dev0;
    st = o->mesh ? wf_cloth_create_mesh(&d, &m, &s->c) : wf_cloth_create_grid(&d, &g, &s->c);
  }
  if (st != WF_OK) return st;
  wf_collider_desc sphere = collider(WF_COLLIDER_SPHERE, "sphere");
  sphere.center[0] = 0.1f, sphere.center[1] = 0.2f, sphere.radius = 0.3f;
  if ((st = sys_add_collider(s, &sphere, NULL)) != WF_OK) return st;
  if (o->mesh) {
    float lo[3] = {-0.07f, 0.7f, -0.07f}, hi[3] = {0.07f, 0.9f, 0.07f};
    return sys_pin_region(s, lo, hi);
  }
  wf_collider_desc ground = collider(WF_COLLIDER_PLANE, "ground");
  ground.normal[1] = 1.0f, ground.offset = -0.4f;
  wf_collider_desc box = collider(WF_COLLIDER_BOX, "box");
  box.center[0] = -0.4f, box.center[1] = 0.1f;
  box.half_extents[0] = box.half_extents[1] = 0.1f, box.half_extents[2] = 0.3f;
  wf_collider_desc cap = collider(WF_COLLIDER_CAPSULE, "capsule");
  cap.radius = 0.05f, cap.friction = 0.8f;
  cap.p0[0] = cap.p1[0] = 0.3f, cap.p0[1] = cap.p1[1] = 0.3f, cap.p0[2] = -0.4f, cap.p1[2] = 0.4f;
  wf_collider_desc mover = collider(WF_COLLIDER_BOX, "mover");
  mover.center[1] = 3.0f, mover.half_extents[0] = mover.half_extents[1] = 0.05f;
  mover.half_extents[2] = 0.05f, mover.velocity[0] = 0.1f, mover.velocity[1] = 0.2f;
  uint32_t mi = 0;
  float lo[3] = {-0.2f, 0.6f, 0.3f}, hi[3] = {0.2f, 0.8f, 0.5f};
  if ((st = sys_add_collider(s, &ground, NULL)) != WF_OK ||
      (st = sys_add_collider(s, &box, NULL)) != WF_OK ||
      (st = sys_add_collider(s, &cap, NULL)) != WF_OK ||
      (st = sys_add_collider(s, &mover, &mi)) != WF_OK || (st = sys_attach(s, 11, mi)) != WF_OK ||
      (st = sys_pin_region(s, lo, hi)) != WF_OK)
    return st;
  if (o->pin_edges &&
      ((st = sys_pin_named(s, "top")) != WF_OK || (st = sys_pin_named(s, "left")) != WF_OK))
    return st;
  return WF_OK;
}

/* pos then vel, 32 bytes a vertex */
static float *sys_state(sys *s) {
  uint32_t n = sys_count(s);
  float *state = malloc((size_t)n * 32 + 32);
  wf_status st =
      s->cs ? wf_cloth_download_local(s->cs, (float(*)[4])state, (float(*)[4])(state + 4 * n))
            : wf_cloth_download_local(s->c, (float(*)[4])state, (float(*)[4])(state + 4 * n));
  if (st != WF_OK) {
    TH_FAIL("download: %s", wf_last_error());
    free(state);
    return NULL;
  }
  return state;
}

static bool same(const float *a, const float *b, uint32_t n, const char *what) {
  if (memcmp(a, b, (size_t)n * 32) == 0) return true;
  uint32_t diffs = 0, first = 0;
  for (uint32_t i = 0; i < 8 * n; i++)
    if (memcmp(&a[i], &b[i], 4) != 0 && diffs++ == 0) first = i;
  TH_FAIL("%s: %u floats differ; the first at float %u (vertex %u, %s): %.9g vs %.9g", what, diffs,
          first, (first / 4) % n, first < 4 * n ? "pos" : "vel", a[first], b[first]);
  return false;
}

/* Runs the reference and the split systems for o->frames and compares them bitwise on 1..4
 * partitions. */
static void compare_runs(const opts *o, const char *what) {
  sys ref;
  if (build(o, 0, &ref) != WF_OK) {
    TH_FAIL("%s: reference: %s", what, wf_last_error());
    sys_free(&ref);
    return;
  }
  float *want = NULL;
  if (sys_step(&ref, o->frames) == WF_OK) want = sys_state(&ref);
  if (!want) TH_FAIL("%s: reference run: %s", what, wf_last_error());
  uint32_t nv = sys_count(&ref);
  sys_free(&ref);
  if (!want) return;
  /* the scene must have moved: a state equal to the start would prove nothing */
  sys still;
  if (build(o, 0, &still) == WF_OK) {
    float *s0 = sys_state(&still);
    if (s0 && memcmp(s0, want, (size_t)nv * 16) == 0) TH_FAIL("%s: nothing moved", what);
    free(s0);
  }
  sys_free(&still);
  for (int n = 1; n <= 4; n++) {
    sys s;
    char label[96];
    snprintf(label, sizeof label, "%s, %d partition%s", what, n, n > 1 ? "s" : "");
    if (build(o, n, &s) != WF_OK) {
      TH_FAIL("%s: build: %s", label, wf_last_error());
      sys_free(&s);
      continue;
    }
    wf_cloth_info info;
    CHECK_OK(wf_cloth_info_get(s.cs, &info));
    CHECK_EQ_INT(info.partitions, n);
    uint32_t owned = 0;
    for (int p = 0; p < n; p++) {
      owned += info.owned[p];
      CHECK(info.owned[p] > 0);
      if (n > 1) CHECK(info.ghosts[p] > 0);
    }
    CHECK_EQ_INT(owned, nv);
    CHECK_EQ_INT(info.vertices, nv);
    if (n > 1) CHECK(info.halo_bytes_per_frame > 0 && info.exchanges_per_frame > 0);
    if (n == 1) CHECK(info.halo_bytes_per_frame == 0 && info.links == 0);
    /* two batches of frames, to cover the graph's replay and the state between launches */
    int first = o->frames / 2;
    if (sys_step(&s, first) != WF_OK || sys_step(&s, o->frames - first) != WF_OK) {
      TH_FAIL("%s: step: %s", label, wf_last_error());
      sys_free(&s);
      continue;
    }
    float *got = sys_state(&s);
    if (got) same(want, got, nv, label);
    free(got);
    sys_free(&s);
  }
  free(want);
}

TEST(springs_grid_captured) {
  opts o = {WF_CLOTH_SPRINGS, false, false, false, 12};
  compare_runs(&o, "springs, grid, captured");
}

TEST(springs_grid_uncaptured) {
  opts o = {WF_CLOTH_SPRINGS, true, false, false, 6};
  compare_runs(&o, "springs, grid, no graph");
}

TEST(springs_mesh) {
  opts o = {WF_CLOTH_SPRINGS, false, true, false, 8};
  compare_runs(&o, "springs, disc.obj");
}

TEST(xpbd_grid_captured) {
  opts o = {WF_CLOTH_XPBD, false, false, false, 8};
  compare_runs(&o, "xpbd, grid, captured");
}

TEST(xpbd_grid_uncaptured) {
  opts o = {WF_CLOTH_XPBD, true, false, false, 4};
  compare_runs(&o, "xpbd, grid, no graph");
}

TEST(xpbd_mesh) {
  opts o = {WF_CLOTH_XPBD, false, true, false, 4};
  compare_runs(&o, "xpbd, disc.obj");
}

/* The top row and the left column pinned: every cut of the sheet crosses one of them, so pinned
 * vertices are ghosts of a partition that does not own them (checked), and the result is still
 * bitwise the single cloth's. */
static void pinned_boundary(int integrator) {
  opts o = {integrator, false, false, true, 6};
  for (int n = 2; n <= 4; n++) {
    sys s;
    if (build(&o, n, &s) != WF_OK) {
      TH_FAIL("build: %s", wf_last_error());
      sys_free(&s);
      return;
    }
    int pinned_ghosts = 0, pinned_owners[4] = {0}, owner[120];
    uint32_t near[120];
    CHECK(sys_count(&s) == 120);
    if (!cloth_owners(s.cs, owner, near)) {
      TH_FAIL("%d partitions: the partitions' ids do not own every vertex once", n);
      sys_free(&s);
      return;
    }
    for (uint32_t k = 0; k < 21; k++) { /* the top row 0..11, then the left column below it */
      uint32_t v = k < 12 ? k : (k - 11) * 12;
      pinned_ghosts += near[v] != 0;
      pinned_owners[owner[v]] = 1;
    }
    if (!pinned_ghosts) TH_FAIL("%d partitions: no pinned vertex is a ghost anywhere", n);
    int owners = pinned_owners[0] + pinned_owners[1] + pinned_owners[2] + pinned_owners[3];
    if (owners < 2) TH_FAIL("%d partitions: the pinned edges lie in one partition", n);
    wf_cloth_info info;
    CHECK_OK(wf_cloth_info_get(s.cs, &info));
    CHECK(info.pinned >= 21); /* the row, the column (one shared), the region, the attachment */
    sys_free(&s);
  }
  compare_runs(&o, integrator == WF_CLOTH_XPBD ? "xpbd, pinned edges" : "springs, pinned edges");
}

TEST(springs_pinned_boundary) { pinned_boundary(WF_CLOTH_SPRINGS); }
TEST(xpbd_pinned_boundary) { pinned_boundary(WF_CLOTH_XPBD); }

/* Parameters (wind, gravity, damping) and the material changed between frames: the same changes
 * on both sides give the same bits, with no recapture. */
static void changes(int integrator) {
  opts o = {integrator, false, false, false, 0};
  sys ref, sp;
  if (build(&o, 0, &ref) != WF_OK || build(&o, 3, &sp) != WF_OK) {
    TH_FAIL("build: %s", wf_last_error());
    sys_free(&ref), sys_free(&sp);
    return;
  }
  wf_cloth_params p = wf_cloth_params_get(sp.cs);
  wf_cloth_params pr = wf_cloth_params_get(ref.c);
  CHECK(memcmp(&p, &pr, sizeof p) == 0);
  p.wind[0] = -4.0f, p.wind[1] = 1.0f, p.gravity[0] = 0.5f, p.damping = 0.3f;
  wf_cloth_material m = base_desc(&o).material;
  m.drag = 1.5f, m.lift = 0.0f, m.damping = 0.06f;
  m.stretch_modulus = 20.0f, m.shear_modulus = 4.0f, m.bend_rigidity = 1e-4f;
  wf_status st = WF_OK;
  for (int k = 0; k < 2 && st == WF_OK; k++) {
    sys *s = k ? &sp : &ref;
    if ((st = sys_step(s, 3)) != WF_OK) break;
    st = s->cs ? wf_cloth_params_set(s->cs, &p) : wf_cloth_params_set(s->c, &p);
    if (st == WF_OK) st = sys_step(s, 2);
    if (st == WF_OK)
      st = s->cs ? wf_cloth_set_material(s->cs, &m) : wf_cloth_set_material(s->c, &m);
    if (st == WF_OK) st = sys_step(s, 2);
  }
  if (st != WF_OK) TH_FAIL("stepping: %s", wf_last_error());
  CHECK(wf_cloth_params_get(sp.cs).wind[0] == -4.0f);
  float *a = st == WF_OK ? sys_state(&ref) : NULL, *b = st == WF_OK ? sys_state(&sp) : NULL;
  if (a && b) same(a, b, sys_count(&ref), "after parameter and material changes, 3 partitions");
  free(a), free(b);
  sys_free(&ref), sys_free(&sp);
}

TEST(springs_changes_between_frames) { changes(WF_CLOTH_SPRINGS); }
TEST(xpbd_changes_between_frames) { changes(WF_CLOTH_XPBD); }

/* Checkpoint restore: the state after 3 frames, given with its clock to a fresh split cloth of
 * another partition count, runs on bitwise as the single cloth's 3 + 3 frames. */
static void set_state_round_trip(int integrator) {
  opts o = {integrator, false, false, false, 0};
  sys ref, a, b;
  memset(&b, 0, sizeof b);
  if (build(&o, 0, &ref) != WF_OK || build(&o, 2, &a) != WF_OK || build(&o, 4, &b) != WF_OK) {
    TH_FAIL("build: %s", wf_last_error());
    sys_free(&ref), sys_free(&a), sys_free(&b);
    return;
  }
  uint32_t nv = sys_count(&ref);
  float *mid = NULL, *want = NULL, *got = NULL;
  double t = 0.0, tr = 0.0;
  uint64_t k = 0, kr = 0;
  if (sys_step(&ref, 6) != WF_OK || sys_step(&a, 3) != WF_OK) {
    TH_FAIL("step: %s", wf_last_error());
    goto out;
  }
  want = sys_state(&ref);
  mid = sys_state(&a);
  CHECK_OK(wf_cloth_time(a.cs, &t, &k));
  CHECK_EQ_INT(k, 3 * 8);
  if (!want || !mid) goto out;
  CHECK_OK(wf_cloth_set_state_local(b.cs, (const float(*)[4])mid, (const float(*)[4])(mid + 4 * nv),
                                    t, k));
  got = sys_state(&b); /* set_state then download gives back what was set */
  if (got) same(mid, got, nv, "download after set_state");
  free(got), got = NULL;
  CHECK_OK(sys_step(&b, 3));
  got = sys_state(&b);
  if (got) same(want, got, nv, "3 frames on 2 partitions, restored on 4, 3 more");
  CHECK_OK(wf_cloth_time(b.cs, &t, &k));
  CHECK_OK(wf_cloth_time(ref.c, &tr, &kr));
  CHECK_EQ_INT(k, kr);
  CHECK(t == tr);
out:
  free(mid), free(want), free(got);
  sys_free(&ref), sys_free(&a), sys_free(&b);
}

TEST(springs_set_state) { set_state_round_trip(WF_CLOTH_SPRINGS); }
TEST(xpbd_set_state) { set_state_round_trip(WF_CLOTH_XPBD); }

/* The partition accessor and the info agree with the single-device view. */
TEST(partitions_and_info) {
  opts o = {WF_CLOTH_XPBD, false, false, false, 0};
  sys s;
  if (build(&o, 3, &s) != WF_OK) {
    TH_FAIL("build: %s", wf_last_error());
    sys_free(&s);
    return;
  }
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(s.cs, &info));
  for (int p = 0; p < 3; p++) {
    wf_partition_view v;
    CHECK_OK(wf_cloth_partition_view(s.cs, p, &v));
    CHECK_EQ_INT(v.rows, info.owned[p]);
    CHECK(v.ids != NULL && v.pos != NULL && v.clock != NULL);
  }
  wf_partition_view none;
  CHECK(wf_cloth_partition_view(s.cs, 3, &none) == WF_ERR_INVALID);
  CHECK(wf_cloth_partition_view(s.cs, -1, &none) == WF_ERR_INVALID);
  /* every vertex has one owner (cloth_owners checks it); a ghost never sits in its owner; each
   * partition holds at least the ghosts its triangles reach */
  uint32_t nv = info.vertices, near_count[3] = {0};
  int *owner = malloc(nv * sizeof *owner);
  uint32_t *near = malloc(nv * sizeof *near);
  CHECK(owner && near && cloth_owners(s.cs, owner, near));
  for (uint32_t v = 0; owner && near && v < nv; v++) {
    CHECK(owner[v] >= 0 && owner[v] < 3);
    CHECK(!(near[v] & (1u << owner[v])));
    for (int p = 0; p < 3; p++)
      near_count[p] += (near[v] >> p) & 1u;
  }
  for (int p = 0; p < 3; p++)
    CHECK(near_count[p] > 0 && near_count[p] <= info.ghosts[p]);
  free(owner), free(near);
  CHECK(info.peer); /* CPU devices and one CUDA device reach each other */
  sys_free(&s);
}

/* Ghost copies over all partitions (the info's), checked against those the triangles reach. */
static uint64_t ghost_copies(wf_cloth *cs) {
  wf_cloth_info info;
  uint32_t nv = wf_cloth_count(cs);
  int *owner = malloc(nv * sizeof *owner);
  uint32_t *near = malloc(nv * sizeof *near);
  uint64_t n = 0, reached = 0;
  if (owner && near && cloth_owners(cs, owner, near) && wf_cloth_info_get(cs, &info) == WF_OK) {
    for (uint32_t p = 0; p < (uint32_t)info.partitions; p++)
      n += info.ghosts[p];
    for (uint32_t v = 0; v < nv; v++)
      for (uint32_t in = near[v]; in; in &= in - 1)
        reached++;
  }
  CHECK(reached > 0 && reached <= n);
  free(owner), free(near);
  return n;
}

/* wf_cloth_overlap_measure: sane numbers, and the state, the clock and the frames after it
 * bitwise those of a run without it (memcmp; the clock compared exactly). */
static void overlap_measure(int integrator, bool no_graph, int n) {
  opts o = {integrator, no_graph, false, false, 0};
  sys s, ref;
  memset(&ref, 0, sizeof ref);
  if (build(&o, n, &s) != WF_OK || build(&o, n, &ref) != WF_OK) {
    TH_FAIL("build: %s", wf_last_error());
    sys_free(&s), sys_free(&ref);
    return;
  }
  uint32_t nv = sys_count(&s);
  float *before = NULL, *after = NULL, *got = NULL, *want = NULL;
  CHECK_OK(sys_step(&s, 2));
  CHECK_OK(sys_step(&ref, 2));
  before = sys_state(&s);
  double t0 = 0.0, t1 = 0.0;
  uint64_t k0 = 0, k1 = 0;
  CHECK_OK(wf_cloth_time(s.cs, &t0, &k0));
  wf_overlap ov;
  memset(&ov, 0xff, sizeof ov);
  CHECK_OK(wf_cloth_overlap_measure(s.cs, 3, &ov));
  after = sys_state(&s);
  if (before && after) same(before, after, nv, "state after the measurement");
  CHECK_OK(wf_cloth_time(s.cs, &t1, &k1));
  CHECK(t1 == t0);
  CHECK_EQ_INT(k1, k0);
  /* the frames after it: the same bits as those of a split that was not measured */
  CHECK_OK(sys_step(&s, 3));
  CHECK_OK(sys_step(&ref, 3));
  got = sys_state(&s), want = sys_state(&ref);
  if (got && want) same(want, got, nv, "3 frames after the measurement");
  /* the numbers: times finite and positive, the fraction in [0, 1], the bytes counted */
  CHECK(ov.frame_ms > 0.0 && isfinite(ov.frame_ms));
  CHECK(ov.frame_no_halo_ms > 0.0 && isfinite(ov.frame_no_halo_ms));
  CHECK(ov.hidden_fraction >= 0.0 && ov.hidden_fraction <= 1.0);
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(s.cs, &info));
  CHECK_EQ_INT(ov.halo_bytes_per_frame, info.halo_bytes_per_frame);
  if (n == 1) {
    CHECK(ov.halo_ms == 0.0 && ov.hidden_fraction == 1.0 && ov.halo_bytes_per_frame == 0);
    CHECK(ov.frame_no_halo_ms == ov.frame_ms && ov.compute_ms == ov.frame_ms);
  } else {
    CHECK(ov.halo_ms > 0.0 && isfinite(ov.halo_ms));
    CHECK(ov.compute_ms > 0.0 && isfinite(ov.compute_ms));
    double h = 1.0 - (ov.frame_ms - ov.compute_ms) / ov.halo_ms;
    CHECK_NEAR(ov.hidden_fraction, h < 0.0 ? 0.0 : h > 1.0 ? 1.0 : h, 1e-12);
    /* mass-spring: every ghost gets its owner's position and velocity (32 bytes) per substep */
    if (integrator == WF_CLOTH_SPRINGS)
      CHECK_EQ_INT(ov.halo_bytes_per_frame,
                   ghost_copies(s.cs) * 32 * (uint64_t)base_desc(&o).substeps);
  }
  free(before), free(after), free(got), free(want);
  sys_free(&s), sys_free(&ref);
}

TEST(springs_overlap_measure) {
  overlap_measure(WF_CLOTH_SPRINGS, false, 3);
  overlap_measure(WF_CLOTH_SPRINGS, false, 1);
}
TEST(springs_overlap_measure_uncaptured) { overlap_measure(WF_CLOTH_SPRINGS, true, 2); }
/* uncaptured: captured, this case took 41 s on 4 H200s (past the harness's 30 s watchdog); the
 * captured measurement is covered by the springs cases */
TEST(xpbd_overlap_measure) { overlap_measure(WF_CLOTH_XPBD, true, 4); }

TEST(overlap_measure_errors) {
  wf_device *devs[2];
  pick_devices(2, devs);
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  wf_cloth_grid g = wf_cloth_grid_default();
  wf_cloth *cs = NULL;
  wf_overlap ov;
  CHECK_OK(split_create_grid(devs, 2, NULL, &d, &g, &cs));
  CHECK_ERROR(wf_cloth_overlap_measure(cs, 0, &ov), WF_ERR_INVALID, "sheet", "frames 0");
  CHECK_ERROR(wf_cloth_overlap_measure(cs, 1, NULL), WF_ERR_INVALID, "NULL");
  CHECK_ERROR(wf_cloth_overlap_measure(NULL, 1, &ov), WF_ERR_INVALID, "NULL");
  wf_cloth_destroy(cs);
}

TEST(errors) {
  wf_device *devs[17];
  pick_devices(4, devs);
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  wf_cloth_grid g = wf_cloth_grid_default();
  wf_cloth *cs = NULL;
  for (int i = 0; i < 17; i++)
    devs[i] = th_dev0;
  CHECK_ERROR(split_create_grid(devs, 17, NULL, &d, &g, &cs), WF_ERR_INVALID, "sheet",
              "device_count 17");
  wf_device *with_null[2] = {th_dev0, NULL};
  CHECK_ERROR(split_create_grid(with_null, 2, NULL, &d, &g, &cs), WF_ERR_INVALID,
              "device 1 is NULL");
  CHECK_ERROR(split_create_grid(devs, 2, NULL, &d, NULL, &cs), WF_ERR_INVALID, "grid");
  CHECK_ERROR(split_create_mesh(devs, 2, NULL, &d, NULL, &cs), WF_ERR_INVALID, "mesh");
  CHECK_ERROR(split_create_grid(devs, 2, NULL, &d, &g, NULL), WF_ERR_INVALID, "out");
  wf_cloth_desc self = d;
  self.self_collision = true;
  CHECK_ERROR(split_create_grid(devs, 2, NULL, &self, &g, &cs), WF_ERR_UNSUPPORTED, "sheet",
              "self_collision");
  wf_cloth_desc bad = d;
  bad.substeps = 0;
  CHECK_ERROR(split_create_grid(devs, 2, NULL, &bad, &g, &cs), WF_ERR_INVALID,
              "wf_cloth_create_grid", "sheet", "substeps");
  split_opts sd = split_opts_default();
  sd.imbalance = -1.0f;
  CHECK_ERROR(split_create_grid(devs, 2, &sd, &d, &g, &cs), WF_ERR_INVALID, "imbalance");
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = WEFT_ASSETS_DIR "/meshes/no_such_file.obj";
  CHECK_ERROR(split_create_mesh(devs, 2, NULL, &d, &m, &cs), WF_ERR_IO, "no_such_file.obj");
  /* two vertices cannot make four partitions */
  wf_cloth_grid tiny = wf_cloth_grid_default();
  tiny.resolution[0] = 2, tiny.resolution[1] = 1;
  wf_cloth_desc chain = d;
  chain.material.particle_mass = 0.1f; /* no triangles: no mass from the density */
  CHECK_ERROR(split_create_grid(devs, 4, NULL, &chain, &tiny, &cs), WF_ERR_INVALID, "sheet",
              "too few");
  CHECK(cs == NULL);

  pick_devices(2, devs);
  CHECK_OK(split_create_grid(devs, 2, NULL, &d, &g, &cs));
  uint32_t nv = wf_cloth_count(cs);
  CHECK_EQ_INT(nv, 256);
  CHECK_ERROR(wf_cloth_pin(cs, nv), WF_ERR_INVALID, "sheet", "256", "out of range");
  CHECK_ERROR(wf_cloth_pin_named(cs, "middle", NULL), WF_ERR_INVALID, "sheet", "middle");
  float lo[3] = {5, 5, 5}, hi[3] = {6, 6, 6};
  CHECK_ERROR(wf_cloth_pin_region(cs, lo, hi, NULL), WF_ERR_INVALID, "holds no vertex");
  CHECK_ERROR(wf_cloth_attach(cs, 0, 3), WF_ERR_INVALID, "collider 3");
  CHECK_ERROR(wf_cloth_step_frames(cs, -1), WF_ERR_INVALID, "sheet", "-1");
  wf_cloth_material mat = wf_cloth_material_default();
  mat.damping = -1.0f;
  CHECK_ERROR(wf_cloth_set_material(cs, &mat), WF_ERR_INVALID, "sheet", "damping");
  wf_cloth_params p = wf_cloth_params_get(cs);
  p.frame_dt = 0.0f;
  CHECK_ERROR(wf_cloth_params_set(cs, &p), WF_ERR_INVALID, "sheet", "frame_dt");
  CHECK_ERROR(wf_cloth_set_state(cs, NULL, NULL, 0.0, 0), WF_ERR_INVALID, "pos or vel");
  wf_cloth_destroy(cs);

  /* named pins need a grid */
  CHECK_OK(split_create_mesh(
      devs, 2, NULL, &d,
      &(wf_cloth_mesh_desc){.path = WEFT_ASSETS_DIR "/meshes/sheet_16x16.obj", .scale = 1.0f},
      &cs));
  CHECK_ERROR(wf_cloth_pin_named(cs, "top", NULL), WF_ERR_INVALID, "sheet", "grid");
  wf_cloth_destroy(cs);

  CHECK_ERROR(wf_cloth_step_frames(NULL, 1), WF_ERR_INVALID, "NULL");
  CHECK_ERROR(wf_cloth_download(NULL, NULL, NULL), WF_ERR_INVALID, "NULL");
  CHECK_EQ_INT(wf_cloth_count(NULL), 0);
  wf_cloth_destroy(NULL);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(springs_grid_captured),
      TH_TEST(springs_grid_uncaptured),
      TH_TEST(springs_mesh),
      TH_TEST(xpbd_grid_captured),
      TH_TEST(xpbd_grid_uncaptured),
      TH_TEST(xpbd_mesh),
      TH_TEST(springs_pinned_boundary),
      TH_TEST(xpbd_pinned_boundary),
      TH_TEST(springs_changes_between_frames),
      TH_TEST(xpbd_changes_between_frames),
      TH_TEST(springs_set_state),
      TH_TEST(xpbd_set_state),
      TH_TEST(partitions_and_info),
      TH_TEST(springs_overlap_measure),
      TH_TEST(springs_overlap_measure_uncaptured),
      TH_TEST(xpbd_overlap_measure),
      TH_TEST(overlap_measure_errors),
      TH_TEST(errors),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
