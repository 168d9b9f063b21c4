/* One wf_particles over several devices: the state after N frames is
 * bitwise the single-device solver's for 1, 2, 3 and 4 partitions — while particles cross slab
 * boundaries in both directions, while a partition empties, when the skin is too thin (the frames
 * are rerun), when particles are added after stepping began, with and without the captured frame,
 * with DEM and XPBD contacts. Tolerance everywhere: none (memcmp).
 *
 * On CPU (CI) the partitions are cpu:0..3. With --device cuda they are cuda:0..3 where they exist;
 * with fewer GPUs a GPU holds several partitions (the halo copies are then copies within one
 * device), so the test means something on one GPU and everything on four. */
#include "harness.h"
#include "weft/particles.h"

/* A system under test: one solver on th_dev0 (the reference) or over several devices. */
typedef struct sys {
  wf_particles *ps;
} sys;

typedef struct scene_opts {
  int model;       /* WF_CONTACT_DEM / XPBD */
  bool no_graph;   /* desc.no_graph */
  float skin;      /* split only: 0 automatic */
  float imbalance; /* split only: < 0: the default */
  int kind;        /* 0 column, 1 two blocks colliding along x, 2 high drop */
  int repartition; /* split only: frames between repartitions (0: every frame) */
  int balance;     /* split only: wf_particles_balance */
} scene_opts;

static wf_particles_desc base_desc(const scene_opts *o) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "split-test";
  d.substeps = 16;
  d.contact_model = o->model;
  d.no_graph = o->no_graph;
  if (o->kind == 1) d.gravity[1] = 0.0f;
  return d;
}

static wf_status sys_emit(sys *s, const wf_particles_emitter *e) {
  return wf_particles_emit(s->ps, e, NULL, NULL);
}

/* Builds the scene on one device (devs == NULL: th_dev0, the reference) or over devs[0..n). */
static wf_status build(const scene_opts *o, wf_device **devs, int n, sys *s) {
  memset(s, 0, sizeof *s);
  wf_particles_desc d = base_desc(o);
  if (devs) {
    for (int i = 0; i < n; i++)
      d.devices[i] = devs[i];
    d.device_count = n;
    d.skin = o->skin;
    d.repartition_frames = o->repartition > 0 ? o->repartition : 1;
    if (o->imbalance >= 0.0f) d.imbalance = o->imbalance;
    d.balance = (wf_particles_balance)o->balance;
  } else {
    d.devices[0] = th_dev0;
  }
  wf_status st = wf_particles_create(&d, &s->ps);
  if (st != WF_OK) return st;
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1e4f;
  m.restitution = 0.4f;
  m.friction = 0.5f;
  uint32_t mi = 0;
  st = wf_particles_add_material(s->ps, &m, &mi);
  if (st != WF_OK) return st;
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = 0.05f;
  e.spacing = 0.1f;
  e.jitter = 0.004f;
  e.seed = 7;
  e.material = mi;
  if (o->kind == 1) { /* two blocks flying at each other along x */
    e.name = "left";
    e.center[0] = -0.6f, e.center[1] = 0.0f;
    e.half_extents[0] = 0.3f, e.half_extents[1] = 0.2f, e.half_extents[2] = 0.2f;
    e.velocity[0] = 2.0f;
    if ((st = sys_emit(s, &e)) != WF_OK) return st;
    e.name = "right";
    e.seed = 8;
    e.center[0] = 0.6f;
    e.velocity[0] = -2.0f;
    return sys_emit(s, &e);
  }
  e.name = "column";
  e.half_extents[0] = e.half_extents[2] = 0.3f;
  e.half_extents[1] = 1.2f;
  e.center[1] = o->kind == 2 ? 4.0f : 1.4f;
  if ((st = sys_emit(s, &e)) != WF_OK) return st;
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "ground";
  g.restitution = 0.3f;
  return wf_particles_add_collider(s->ps, &g, NULL);
}

static wf_status sys_step(sys *s, int frames) { return wf_particles_step_frames(s->ps, frames); }

static uint32_t sys_count(const sys *s) { return wf_particles_count(s->ps); }

/* pos then vel, 32 bytes a particle */
static float *sys_state(sys *s) {
  uint32_t n = sys_count(s);
  float *state = malloc((size_t)n * 32 + 32);
  wf_status st =
      wf_particles_download_local(s->ps, (float(*)[4])state, (float(*)[4])(state + 4 * n));
  if (st != WF_OK) {
    TH_FAIL("download: %s", wf_last_error());
    free(state);
    return NULL;
  }
  return state;
}

static void sys_free(sys *s) { wf_particles_destroy(s->ps); }

/* The first n devices of the test's kind; missing ones repeat the first. */
static void pick_devices(int n, wf_device **devs) {
  for (int i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", th_kind, i);
    if (wf_device_get(name, &devs[i]) != WF_OK) devs[i] = th_dev0;
  }
  wf_clear_error();
}

static bool same(const float *a, const float *b, uint32_t n, const char *what) {
  if (memcmp(a, b, (size_t)n * 32) == 0) return true;
  for (uint32_t i = 0; i < 8 * n; i++)
    if (memcmp(&a[i], &b[i], 4) != 0) {
      TH_FAIL("%s: first difference at float %u (particle %u, %s): %.9g vs %.9g", what, i,
              (i / 4) % n, i < 4 * n ? "pos" : "vel", a[i], b[i]);
      break;
    }
  return false;
}

/* Runs the reference and the split systems for `frames` and compares them bitwise; returns the
 * split's info (of the last partition count) in *info. */
static void compare_runs(const scene_opts *o, int frames, const int *counts, int n_counts,
                         wf_particles_info *info) {
  sys ref;
  if (build(o, NULL, 0, &ref) != WF_OK) {
    TH_FAIL("reference: %s", wf_last_error());
    sys_free(&ref);
    return;
  }
  CHECK_OK(sys_step(&ref, frames));
  float *want = sys_state(&ref);
  uint32_t n = sys_count(&ref);
  sys_free(&ref);
  if (!want) return;
  for (int c = 0; c < n_counts; c++) {
    wf_device *devs[4];
    pick_devices(counts[c], devs);
    sys s;
    wf_status st = build(o, devs, counts[c], &s);
    if (st == WF_OK) st = sys_step(&s, frames);
    if (st != WF_OK) {
      TH_FAIL("%d partitions: %s", counts[c], wf_last_error());
      sys_free(&s);
      continue;
    }
    float *got = sys_state(&s);
    char what[64];
    snprintf(what, sizeof what, "%d partitions vs one solver", counts[c]);
    CHECK(sys_count(&s) == n);
    if (got) same(want, got, n, what);
    if (info) wf_particles_info_get(s.ps, info);
    free(got);
    sys_free(&s);
  }
  free(want);
}

/* A column of 864 particles falls onto the ground, split along its height (the longest axis)
 * at first: particles migrate down through the slab boundaries every frame. With friction and
 * rolling resistance the column slumps into a pile wider than it is tall by frame 40, so the
 * last repartition may cut along x or z. */
TEST(column_bitwise_1_2_3_4_partitions) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1};
  int counts[] = {1, 2, 3, 4};
  wf_particles_info info;
  compare_runs(&o, 40, counts, 4, &info);
  CHECK_EQ_INT(info.partitions, 4);
  CHECK(info.axis >= 0 && info.axis <= 2);
  uint32_t owned = 0;
  for (int p = 0; p < 4; p++)
    owned += info.owned[p];
  CHECK_EQ_INT(owned, 864);
  CHECK(info.halo_bytes_per_frame > 0);
  CHECK(info.repartitions >= 40);
  printf("  4 partitions: owned %u %u %u %u, ghosts %u %u %u %u, halo %llu B/frame, skin %.3f m\n",
         info.owned[0], info.owned[1], info.owned[2], info.owned[3], info.ghosts[0], info.ghosts[1],
         info.ghosts[2], info.ghosts[3], (unsigned long long)info.halo_bytes_per_frame,
         (double)info.skin);
}

TEST(column_xpbd_bitwise) {
  scene_opts o = {.model = WF_CONTACT_XPBD, .imbalance = -1};
  int counts[] = {2, 4};
  compare_runs(&o, 30, counts, 2, NULL);
}

/* Repartitions every third frame: the frame graph is replayed between them, and the automatic
 * skin covers three frames of motion. */
TEST(repartition_every_third_frame_bitwise) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1, .repartition = 3};
  int counts[] = {2, 4};
  wf_particles_info info;
  compare_runs(&o, 30, counts, 2, &info);
  CHECK(info.repartitions >= 10 && info.repartitions <= 12);
  printf("  repartitions %llu captures %llu reruns %llu\n", (unsigned long long)info.repartitions,
         (unsigned long long)info.captures, (unsigned long long)info.reruns);
  CHECK(info.captures * 2 <= 30); /* replayed between repartitions */
}

/* The frame graph outlives the repartitions: once the column has settled, a repartition every
 * frame still moves particles and ghosts between the partitions (counts change by a few), but
 * the frames replay the graph captured before (its kernels cover launch sizes with slack and
 * read the counts on the device) instead of capturing it again. Bitwise the single solver's. */
TEST(settled_column_keeps_its_frame_graph) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1};
  const int settle = 90, more = 30;
  sys ref;
  if (build(&o, NULL, 0, &ref) != WF_OK) {
    TH_FAIL("reference: %s", wf_last_error());
    sys_free(&ref);
    return;
  }
  CHECK_OK(sys_step(&ref, settle + more));
  float *want = sys_state(&ref);
  uint32_t n = sys_count(&ref);
  sys_free(&ref);
  wf_device *devs[4];
  pick_devices(3, devs);
  sys s;
  wf_particles_info a, b;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
  wf_status st = build(&o, devs, 3, &s);
  if (st == WF_OK) st = sys_step(&s, settle);
  if (st == WF_OK) st = wf_particles_info_get(s.ps, &a);
  if (st == WF_OK) st = sys_step(&s, more);
  if (st == WF_OK) st = wf_particles_info_get(s.ps, &b);
  if (st != WF_OK) TH_FAIL("split: %s", wf_last_error());
  float *got = st == WF_OK ? sys_state(&s) : NULL;
  if (got && want) same(want, got, n, "3 partitions vs one solver");
  printf("  frames %d..%d: repartitions %llu, captures %llu (before: %llu captures)\n", settle,
         settle + more, (unsigned long long)(b.repartitions - a.repartitions),
         (unsigned long long)(b.captures - a.captures), (unsigned long long)a.captures);
  CHECK(b.repartitions - a.repartitions >= (uint64_t)more);
  CHECK(b.captures - a.captures <= 2);
  free(got), free(want);
  sys_free(&s);
}

/* The default imbalance (0.01) keeps the slabs even while the column falls and spreads: the
 * cuts come from the classification's histograms (no particle read back), so every repartition
 * may rebalance. Over 40 frames of 4 partitions: many rebalances, and after every repartition
 * the largest partition within 4% of the mean (216 particles each: a 1.2 m column of lattice
 * layers 0.1 m apart, 36 particles a layer, jittered by 4 mm; a histogram bin is about 1 mm). */
TEST(rebalance_keeps_slabs_even) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1};
  wf_device *devs[4];
  pick_devices(4, devs);
  sys s;
  CHECK_OK(build(&o, devs, 4, &s));
  double worst = 0.0;
  wf_particles_info info;
  memset(&info, 0, sizeof info);
  for (int f = 0; f < 40; f++) {
    CHECK_OK(sys_step(&s, 1));
    CHECK_OK(wf_particles_info_get(s.ps, &info));
    uint32_t most = 0, total = 0;
    for (int p = 0; p < 4; p++)
      most = info.owned[p] > most ? info.owned[p] : most, total += info.owned[p];
    double over = (double)most * 4 / total - 1.0;
    worst = over > worst ? over : worst;
  }
  printf("  rebalances %llu in %llu repartitions; largest partition at most %.1f%% over the mean\n",
         (unsigned long long)info.rebalances, (unsigned long long)info.repartitions, worst * 100);
  CHECK(info.rebalances >= 5);
  CHECK(worst <= 0.04);
  sys_free(&s);
}

/* Balance by time (WF_BALANCE_TIME): every frame times each partition's substeps on its device
 * and the slabs follow the time per particle. The column stays bitwise the single solver's for
 * 2 and 4 partitions, each partition's compute of the last frame is reported (> 0), and the
 * slabs were moved after the first distribution. */
TEST(balance_by_time_bitwise) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1, .balance = WF_BALANCE_TIME};
  int counts[] = {2, 4};
  wf_particles_info info;
  memset(&info, 0, sizeof info);
  compare_runs(&o, 30, counts, 2, &info);
  printf("  4 partitions: compute %.3f %.3f %.3f %.3f ms, owned %u %u %u %u, rebalances %llu\n",
         info.compute_ms[0], info.compute_ms[1], info.compute_ms[2], info.compute_ms[3],
         info.owned[0], info.owned[1], info.owned[2], info.owned[3],
         (unsigned long long)info.rebalances);
  for (int p = 0; p < 4; p++)
    CHECK(info.compute_ms[p] > 0.0 && isfinite(info.compute_ms[p]));
  CHECK(info.rebalances >= 2);
}

TEST(uncaptured_frames_bitwise) {
  scene_opts o = {.model = WF_CONTACT_DEM, .no_graph = true, .imbalance = -1};
  int counts[] = {3};
  compare_runs(&o, 20, counts, 1, NULL);
}

/* Two blocks collide along x (no gravity) over 4 fixed slabs (no re-balancing): particles cross
 * slab boundaries to the right and to the left, and the state stays bitwise. */
TEST(migration_both_directions) {
  scene_opts o = {.model = WF_CONTACT_DEM, .kind = 1, .imbalance = 1e9f};
  wf_device *devs[4];
  pick_devices(4, devs);
  sys s;
  CHECK_OK(build(&o, devs, 4, &s));
  CHECK_OK(sys_step(&s, 1));
  wf_particles_info info;
  CHECK_OK(wf_particles_info_get(s.ps, &info));
  CHECK_EQ_INT(info.axis, 0);
  uint32_t n = sys_count(&s);
  float *a = sys_state(&s);
  CHECK_OK(sys_step(&s, 29));
  float *b = sys_state(&s);
  REQUIRE(a && b);
  int right = 0, left = 0;
  double org[3]; /* the states are local, the slabs in the world */
  CHECK_OK(wf_particles_origin(s.ps, org));
  for (uint32_t i = 0; i < n; i++) {
    int pa = 0, pb = 0;
    while (pa < 3 && (double)a[4 * i] + org[0] >= info.slab_hi[pa])
      pa++;
    while (pb < 3 && (double)b[4 * i] + org[0] >= info.slab_hi[pb])
      pb++;
    right += pb > pa, left += pb < pa;
  }
  printf("  %d particles moved to a slab on the right, %d to one on the left\n", right, left);
  CHECK(right > 0 && left > 0);
  free(a), free(b);
  sys_free(&s);
  int counts[] = {4};
  compare_runs(&o, 30, counts, 1, NULL);
}

/* Slabs fixed at the start over a column dropped from 4 m: it falls out of the upper slabs,
 * which end up empty, and the state stays bitwise. */
TEST(partition_becomes_empty) {
  scene_opts o = {.model = WF_CONTACT_DEM, .kind = 2, .imbalance = 1e9f};
  int counts[] = {4};
  wf_particles_info info;
  compare_runs(&o, 70, counts, 1, &info);
  printf("  owned at the end: %u %u %u %u\n", info.owned[0], info.owned[1], info.owned[2],
         info.owned[3]);
  CHECK(info.owned[3] == 0 && info.owned[2] == 0);
  CHECK_EQ_INT(info.rebalances, 1);
}

/* A skin far too thin for the falling particles: the drift check catches every violation and the
 * frames are rerun with a wider skin; the state is still bitwise. */
TEST(thin_skin_reruns_bitwise) {
  scene_opts o = {.model = WF_CONTACT_DEM, .skin = 1e-4f, .imbalance = -1};
  int counts[] = {3};
  wf_particles_info info;
  compare_runs(&o, 25, counts, 1, &info);
  printf("  reruns %llu, skin now %.4f m\n", (unsigned long long)info.reruns, (double)info.skin);
  CHECK(info.reruns > 0);
}

/* Particles added after stepping began (gathered, then distributed again). */
TEST(add_after_stepping_bitwise) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1};
  sys ref, sp;
  wf_device *devs[4];
  pick_devices(4, devs);
  CHECK_OK(build(&o, NULL, 0, &ref));
  CHECK_OK(build(&o, devs, 4, &sp));
  wf_particles_emitter e = wf_particles_emitter_default();
  e.name = "late";
  e.radius = 0.08f; /* larger than the others: the cell size grows */
  e.spacing = 0.17f;
  e.center[1] = 3.5f;
  e.half_extents[0] = e.half_extents[1] = e.half_extents[2] = 0.25f;
  sys *both[2] = {&ref, &sp};
  for (int k = 0; k < 2; k++) {
    CHECK_OK(sys_step(both[k], 5));
    CHECK_OK(sys_emit(both[k], &e));
    CHECK_OK(sys_step(both[k], 15));
  }
  CHECK(sys_count(&ref) == sys_count(&sp) && sys_count(&ref) > 864);
  float *a = sys_state(&ref), *b = sys_state(&sp);
  if (a && b) same(a, b, sys_count(&ref), "late emitter, 4 partitions");
  wf_particles_stats s1, s2;
  CHECK_OK(wf_particles_stats_get(ref.ps, &s1));
  CHECK_OK(wf_particles_stats_get(sp.ps, &s2));
  CHECK(s1.time == s2.time && s1.substeps == s2.substeps && s1.count == s2.count);
  CHECK(s1.kinetic_energy == s2.kinetic_energy);
  free(a), free(b);
  sys_free(&ref);
  sys_free(&sp);
}

/* The overlap measure in the middle of a run: it reports sane times and gives the state back, so
 * the frames after it are bitwise those of the single solver (captured and uncaptured frames, 1
 * and 3 partitions). */
TEST(overlap_measure_gives_the_state_back) {
  for (int ng = 0; ng < 2; ng++) {
    scene_opts o = {.model = WF_CONTACT_DEM, .no_graph = ng == 1, .imbalance = -1};
    sys ref;
    if (build(&o, NULL, 0, &ref) != WF_OK) {
      TH_FAIL("reference: %s", wf_last_error());
      sys_free(&ref);
      return;
    }
    CHECK_OK(sys_step(&ref, 12));
    float *want = sys_state(&ref);
    uint32_t n = sys_count(&ref);
    sys_free(&ref);
    if (!want) return;
    int counts[] = {1, 3};
    for (int c = 0; c < 2; c++) {
      wf_device *devs[4];
      pick_devices(counts[c], devs);
      sys s;
      wf_overlap ov;
      memset(&ov, 0xff, sizeof ov);
      wf_status st = build(&o, devs, counts[c], &s);
      if (st == WF_OK) st = sys_step(&s, 5);
      /* the quietest of up to 3 measures (the compute check below says why) */
      for (int m = 0; m < 3 && st == WF_OK; m++)
        if ((st = wf_particles_overlap_measure(s.ps, 5, &ov)) == WF_OK &&
            ov.compute_ms <= 1.05 * ov.frame_ms)
          break;
      if (st == WF_OK) st = sys_step(&s, 7);
      if (st != WF_OK) {
        TH_FAIL("%d partitions%s: %s", counts[c], ng ? " (no graph)" : "", wf_last_error());
        sys_free(&s);
        continue;
      }
      CHECK(ov.frame_ms > 0.0 && ov.frame_no_halo_ms > 0.0 && ov.compute_ms > 0.0);
      CHECK(ov.hidden_fraction >= 0.0 && ov.hidden_fraction <= 1.0);
      if (counts[c] == 1) {
        CHECK(ov.halo_ms == 0.0 && ov.hidden_fraction == 1.0 && ov.halo_bytes_per_frame == 0);
        CHECK(ov.compute_ms == ov.frame_ms);
      } else {
        CHECK(ov.halo_ms > 0.0 && ov.halo_bytes_per_frame > 0);
        /* The compute is a path through one stamped frame's substeps, inside that frame's wall
         * time, but it is compared with the median of other frames: beyond the noise between
         * frames it cannot be longer (on GPUs, stage-by-stage frames came out 1-1.5% longer:
         * 5%). On CPU devices the stamps are the host's clock, read by worker threads, and stage
         * by stage the workers also wait for the host to enqueue; on a machine the tests share
         * (ctest -j beside other builds, a load of 4 or 5 per core) a frame whose threads were
         * descheduled is longer by that time, and 5 frames' medians still landed on such frames
         * in about one measure of ten, the compute up to 3 times the frame. No factor bounds
         * that; the check takes the quietest of 3 measures (each gives the state back, which the
         * comparison after checks) and keeps 5%. */
        CHECK(ov.compute_ms <= 1.05 * ov.frame_ms);
        double h = 1.0 - (ov.frame_ms - ov.compute_ms) / ov.halo_ms;
        CHECK_NEAR(ov.hidden_fraction, h < 0.0 ? 0.0 : h > 1.0 ? 1.0 : h, 1e-12);
      }
      printf("  %d partitions%s: frame %.3f ms, without copies %.3f ms, compute %.3f ms, copies "
             "%.3f ms, hidden %.2f\n",
             counts[c], ng ? " (no graph)" : "", ov.frame_ms, ov.frame_no_halo_ms, ov.compute_ms,
             ov.halo_ms, ov.hidden_fraction);
      float *got = sys_state(&s);
      char what[80];
      snprintf(what, sizeof what, "%d partitions, measured after frame 5, vs one solver",
               counts[c]);
      if (got) same(want, got, n, what);
      free(got);
      CHECK_ERROR(wf_particles_overlap_measure(s.ps, 0, &ov), WF_ERR_INVALID, "frames 0");
      CHECK_ERROR(wf_particles_overlap_measure(s.ps, 1, NULL), WF_ERR_INVALID, "NULL");
      sys_free(&s);
    }
    free(want);
  }
}

/* A desc over devs[0..n). */
static wf_particles_desc desc_on(wf_device **devs, int n) {
  wf_particles_desc d = wf_particles_desc_default();
  for (int i = 0; i < n && i < WF_MAX_DEVICES; i++)
    d.devices[i] = devs[i];
  d.device_count = n;
  return d;
}

TEST(bad_arguments) {
  wf_particles *sp = NULL;
  wf_device *devs[2] = {th_dev0, NULL};
  wf_particles_desc d = desc_on(devs, 1);
  d.device_count = 17;
  CHECK_ERROR(wf_particles_create(&d, &sp), WF_ERR_INVALID, "device_count 17");
  d = desc_on(devs, 2);
  CHECK_ERROR(wf_particles_create(&d, &sp), WF_ERR_INVALID, "devices[1] is NULL");
  d = desc_on(devs, 1);
  d.skin = -1.0f;
  CHECK_ERROR(wf_particles_create(&d, &sp), WF_ERR_INVALID, "skin");
  d = desc_on(devs, 1);
  d.repartition_frames = -1;
  CHECK_ERROR(wf_particles_create(&d, &sp), WF_ERR_INVALID, "repartition_frames");
  d = desc_on(devs, 1);
  d.balance = (wf_particles_balance)7;
  CHECK_ERROR(wf_particles_create(&d, &sp), WF_ERR_INVALID, "balance 7");
  CHECK(sp == NULL);
  if (th_is_cuda()) {
    devs[1] = th_host;
    d = desc_on(devs, 2);
    CHECK_ERROR(wf_particles_create(&d, &sp), WF_ERR_INVALID, "different kinds");
  }
  devs[1] = th_dev0;
  d = desc_on(devs, 2);
  CHECK_OK(wf_particles_create(&d, &sp));
  CHECK_EQ_INT(wf_particles_partition_count(sp), 2);
  wf_partition_view v;
  CHECK_ERROR(wf_particles_partition_view(sp, 2, &v), WF_ERR_INVALID, "partition 2");
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = -0.1f;
  CHECK_ERROR(wf_particles_emit(sp, &e, NULL, NULL), WF_ERR_INVALID, "radius");
  CHECK_EQ_INT(wf_particles_count(sp), 0);
  CHECK_OK(wf_particles_step_frames(sp, 2)); /* nothing to simulate: fine */
  CHECK_ERROR(wf_particles_step_frames(sp, -1), WF_ERR_INVALID, "frames -1");
  wf_particles_destroy(sp);
}

/* The scene of o over `parts` devices, stepped `frames` frames into *s; false (the case failed,
 * *s freed) when that fails. */
static bool built_and_stepped(const scene_opts *o, int parts, int frames, sys *s) {
  wf_device *devs[4];
  pick_devices(parts, devs);
  wf_status st = build(o, devs, parts, s);
  if (st == WF_OK) st = sys_step(s, frames);
  if (st == WF_OK) return true;
  TH_FAIL("%d partitions: %s", parts, wf_last_error());
  sys_free(s);
  return false;
}

/* The partition views and the gather on the device (wf_particles_copy_state) of 1 and 3
 * partitions after some frames: every global id appears once across the views, each view's rows
 * are its partition's owned particles in global-id order, and the gathered state equals the
 * download bit for bit. */
TEST(partition_views_and_device_gather) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1};
  int counts[] = {1, 3};
  for (int c = 0; c < 2; c++) {
    sys s;
    if (!built_and_stepped(&o, counts[c], 6, &s)) continue;
    uint32_t n = sys_count(&s);
    uint8_t *seen = calloc(n, 1);
    uint32_t rows = 0;
    for (int p = 0; p < wf_particles_partition_count(s.ps); p++) {
      wf_partition_view v;
      CHECK_OK(wf_particles_partition_view(s.ps, p, &v));
      CHECK_OK(wf_stream_synchronize(v.stream));
      uint32_t *ids = malloc((size_t)v.rows * 4 + 4);
      if (v.ids && v.rows) CHECK_OK(wf_download(ids, v.ids, 0, (size_t)v.rows * 4));
      for (uint32_t k = 0; k < v.rows; k++) {
        uint32_t g = v.ids ? ids[k] : v.first + k;
        CHECK(g < n && !seen[g]);
        if (k > 0 && v.ids) CHECK(ids[k] > ids[k - 1]);
        if (g < n) seen[g] = 1;
      }
      rows += v.rows;
      free(ids);
    }
    CHECK_EQ_INT(rows, n);
    wf_buffer *dst = NULL;
    CHECK_OK(wf_buffer_create(th_dev0, (size_t)n * 32, WF_BUFFER_ZERO, NULL, &dst));
    float *got = malloc((size_t)n * 32), *want = sys_state(&s);
    CHECK_OK(wf_particles_copy_state(s.ps, dst, 0, dst, (size_t)n * 16, NULL));
    CHECK_OK(wf_particles_copy_state(s.ps, dst, 0, dst, (size_t)n * 16, wf_particles_stream(s.ps)));
    CHECK_OK(wf_stream_synchronize(wf_particles_stream(s.ps)));
    CHECK_OK(wf_download(got, dst, 0, (size_t)n * 32));
    char what[64];
    snprintf(what, sizeof what, "%d partitions: gathered vs downloaded", counts[c]);
    if (want) same(want, got, n, what);
    free(got), free(want), free(seen);
    wf_buffer_destroy(dst, NULL);
    sys_free(&s);
  }
}

/* One process owns every particle: wf_particles_download_owned gives ids 0..n-1 and the
 * download's rows byte for byte, for 1 and 3 partitions. wf_particles_info.host_bytes: one
 * partition keeps no master copy (under 306 bytes a particle), several keep theirs (at least
 * 306 bytes a particle: position, velocity, omega, material and the 256-byte history). */
TEST(download_owned_in_one_process) {
  scene_opts o = {.model = WF_CONTACT_DEM, .imbalance = -1};
  int counts[] = {1, 3};
  for (int c = 0; c < 2; c++) {
    sys s;
    if (!built_and_stepped(&o, counts[c], 3, &s)) continue;
    uint32_t n = sys_count(&s), m = 0;
    uint32_t *ids = malloc((size_t)n * 4 + 4);
    float *got = malloc((size_t)n * 32 + 32), *want = malloc((size_t)n * 32 + 32);
    REQUIRE(ids && got && want);
    /* in the world, as wf_particles_download (sys_state reads the solver's own positions) */
    CHECK_OK(wf_particles_download(s.ps, (float(*)[4])want, (float(*)[4])(want + 4 * (size_t)n)));
    CHECK_OK(wf_particles_download_owned(s.ps, ids, (float(*)[4])got,
                                         (float(*)[4])(got + 4 * (size_t)n), &m));
    CHECK_EQ_INT(m, n);
    for (uint32_t i = 0; i < m && i < n; i++)
      if (ids[i] != i) {
        TH_FAIL("%d partitions: owned id %u at %u", counts[c], ids[i], i);
        break;
      }
    char what[64];
    snprintf(what, sizeof what, "%d partitions: owned rows vs downloaded", counts[c]);
    same(want, got, n, what);
    wf_particles_info info;
    CHECK_OK(wf_particles_info_get(s.ps, &info));
    if (counts[c] == 1) CHECK(info.host_bytes > 0 && info.host_bytes < 306ull * n);
    if (counts[c] > 1) CHECK(info.host_bytes >= 306ull * n);
    free(ids), free(got), free(want);
    sys_free(&s);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(column_bitwise_1_2_3_4_partitions),
      TH_TEST(partition_views_and_device_gather),
      TH_TEST(download_owned_in_one_process),
      TH_TEST(column_xpbd_bitwise),
      TH_TEST(rebalance_keeps_slabs_even),
      TH_TEST(balance_by_time_bitwise),
      TH_TEST(uncaptured_frames_bitwise),
      TH_TEST(repartition_every_third_frame_bitwise),
      TH_TEST(settled_column_keeps_its_frame_graph),
      TH_TEST(migration_both_directions),
      TH_TEST(partition_becomes_empty),
      TH_TEST(thin_skin_reruns_bitwise),
      TH_TEST(add_after_stepping_bitwise),
      TH_TEST(overlap_measure_gives_the_state_back),
      TH_TEST(bad_arguments),
  };
  return th_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
