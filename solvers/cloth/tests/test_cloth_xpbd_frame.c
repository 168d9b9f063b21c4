/* The XPBD one-launch frame (solvers/cloth/cloth_xpbd_frame.h) against the staged XPBD frame
 * (a launch per stage; desc.tuning.one_launch = WF_CLOTH_TUNE_OFF): graph-coloured Gauss–Seidel
 * in the staged path's colour order, so the states must be bitwise equal, on both modes: RESIDENT
 * (one block; cloths up to 4096 vertices) and STRIDE (a grid-stride cooperative frame: above it,
 * or tuning.resident OFF). Checked on the busy scene (wind with drag and lift, four colliders and
 * a moving one with attachments, a pinned region; 3 iterations, so the multipliers count), the
 * bench's setup at 32 x 32 with 4 iterations at 16 and 15 substeps and with 1 iteration (no
 * multipliers), a sheet on a triangle-mesh collider and a sphere, an OBJ cloth, the first grid
 * above the resident limit, the per-frame readback (xyzw and packed xyz, after every frame),
 * the collider forces and the clock (bitwise), a checkpoint restored mid-run (the frames that
 * follow are bitwise those of the uninterrupted run), a split over 2 to 4 partitions (which run
 * the staged frame) against the one-partition fast frame, and the cloths that must fall back to
 * the staged frame. Tolerance: none (bitwise) everywhere; each compared run must have moved. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

enum { PATH_AUTO, PATH_STRIDE, PATH_STAGED };

typedef wf_status (*builder)(const wf_cloth_tuning *t, wf_cloth **out);

/* The one-launch frame's threads a block and barrier (tuning.block, tuning.grid_sync) the
 * builders ask for: small blocks make the grid-stride frame's bands many (a block of 32 threads
 * owns 32 vertices, so a 32 x 32 cloth has 32 bands, each waiting for the bands within a
 * constraint's reach: a hinge spans up to 2 rows and a vertex). */
static uint32_t g_block;
static int g_grid_sync, g_resident, g_smem;

static wf_cloth_tuning tuning_of(int path) {
  wf_cloth_tuning t;
  memset(&t, 0, sizeof t);
  /* ON: a CPU device runs the one-launch frame only when asked (cloth_xpbd_frame.h) */
  if (path != PATH_STAGED) t.one_launch = WF_CLOTH_TUNE_ON;
  if (path != PATH_STAGED) t.block = g_block, t.grid_sync = g_grid_sync, t.resident = g_resident;
  if (path != PATH_STAGED) t.smem = g_smem;
  if (path == PATH_STAGED) t.one_launch = WF_CLOTH_TUNE_OFF;
  if (path == PATH_STRIDE) t.resident = WF_CLOTH_TUNE_OFF;
  return t;
}

static wf_status build_busy(const wf_cloth_tuning *t, wf_cloth **out) {
  return scene_busy_tuned(th_dev0, WF_CLOTH_XPBD, false, t, out);
}

/* The bench's setup (bench/cloth_bench.c) as XPBD: an nu x nr grid, spacing 0.1 m, mass 0.1 kg,
 * compliance 1e-3 and damping 10, the first row's corners pinned, g_substeps substeps and
 * g_iterations iterations; a sphere below it so that a collider runs too. */
static int g_nu = 32, g_nr = 32, g_substeps = 16, g_iterations = 4;
static wf_status build_classic(const wf_cloth_tuning *t, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "classic";
  d.integrator = WF_CLOTH_XPBD;
  d.substeps = g_substeps;
  d.frame_dt = (float)g_substeps / 960.0f;
  d.iterations = g_iterations;
  d.material.particle_mass = 0.1f;
  d.material.coefficients = true;
  d.material.stretch_compliance = d.material.shear_compliance = 1e-3f;
  d.material.bend_compliance = 1e-3f;
  d.material.damping = 10.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g_nu, g.resolution[1] = g_nr;
  g.size[0] = 0.1f * (float)(g_nu - 1), g.size[1] = 0.1f * (float)(g_nr - 1);
  g.center[1] = 0.0f;
  d.devices[0] = th_dev0;
  d.tuning = *t;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-left", NULL);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-right", NULL);
  wf_collider_desc s = scene_sphere(0.0f, -0.3f, 0.0f, 0.25f);
  if (st == WF_OK) st = wf_cloth_add_collider(*out, &s, NULL);
  return st;
}

/* What the classic cloth of the current settings reports when built on `path`, into *info
 * (zeroed when it cannot be built: the check fails). */
static void classic_info(int path, wf_cloth_info *info) {
  memset(info, 0, sizeof *info);
  wf_cloth *probe = NULL;
  wf_cloth_tuning t = tuning_of(path);
  CHECK_OK(build_classic(&t, &probe));
  if (probe) CHECK_OK(wf_cloth_info_get(probe, info));
  wf_cloth_destroy(probe);
}

/* A 20 x 16 sheet pinned at one corner falling onto a triangle-mesh floor (an open square of 8
 * triangles given a thickness: a shell) and a sphere. */
static wf_status build_mesh_floor(const wf_cloth_tuning *t, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "on-mesh";
  d.integrator = WF_CLOTH_XPBD;
  d.substeps = 12;
  d.iterations = 2;
  d.devices[0] = th_dev0;
  d.tuning = *t;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 20, g.resolution[1] = 16;
  g.size[0] = 1.0f, g.size[1] = 0.8f;
  g.center[1] = 0.08f; /* on the floor after 8 frames */
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st != WF_OK) return st;
  float v[9][3];
  uint32_t tri[8][3];
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++)
      v[3 * r + c][0] = -1.0f + (float)c, v[3 * r + c][1] = 0.0f,
                v[3 * r + c][2] = -1.0f + (float)r;
  for (int r = 0, k = 0; r < 2; r++)
    for (int c = 0; c < 2; c++) {
      uint32_t a = (uint32_t)(3 * r + c);
      tri[k][0] = a, tri[k][1] = a + 3, tri[k][2] = a + 1, k++;
      tri[k][0] = a + 1, tri[k][1] = a + 3, tri[k][2] = a + 4, k++;
    }
  wf_collider_mesh *m = NULL;
  st = wf_collider_mesh_create("floor", (const float(*)[3])v, 9, (const uint32_t(*)[3])tri, 8, &m);
  wf_collider_desc floor = wf_collider_desc_default();
  floor.name = "floor", floor.type = WF_COLLIDER_MESH, floor.mesh = m, floor.thickness = 0.01f;
  floor.friction = 0.4f;
  wf_collider_desc s = scene_sphere(0.2f, 0.0f, 0.0f, 0.06f);
  if (st == WF_OK) st = wf_cloth_add_collider(*out, &floor, NULL);
  if (st == WF_OK) st = wf_cloth_add_collider(*out, &s, NULL);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-left", NULL);
  wf_collider_mesh_destroy(m);
  return st;
}

static wf_status build_obj(const wf_cloth_tuning *t, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  d.integrator = WF_CLOTH_XPBD;
  d.substeps = 10;
  d.iterations = 3;
  d.wind[2] = 1.5f;
  d.material.drag = 0.6f;
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = WEFT_ASSETS_DIR "/meshes/sheet_16x16.obj";
  m.translate[1] = 1.0f;
  d.devices[0] = th_dev0;
  d.tuning = *t;
  wf_status st = wf_cloth_create_mesh(&d, &m, out);
  if (st != WF_OK) return st;
  wf_collider_desc s = scene_sphere(0.0f, 0.4f, 0.0f, 0.3f);
  return wf_cloth_add_collider(*out, &s, NULL);
}

static uint32_t frame_kernel(wf_cloth *c) {
  wf_cloth_info i;
  return wf_cloth_info_get(c, &i) == WF_OK ? i.frame_kernel : 99u;
}

/* Every collider's force and torque of the last frame (up to 8 colliders, zero past the last). */
static void forces_of(wf_cloth *c, double f[8][6]) {
  memset(f, 0, 8 * sizeof f[0]);
  for (uint32_t k = 0; k < 8; k++)
    if (wf_cloth_collider_force(c, k, f[k], f[k] + 3) != WF_OK) break;
  wf_clear_error();
}

/* `frames` frames of the cloth built on `path` (PATH_AUTO or PATH_STRIDE) and on the staged
 * path: states, clocks and collider forces bitwise equal, the state moved, the fast frame is the
 * kernel `want` and its graph has fewer nodes. */
static void compare(const char *what, builder build, int frames, int path, uint32_t want) {
  wf_cloth *fast = NULL, *slow = NULL;
  wf_cloth_tuning tf = tuning_of(path), ts = tuning_of(PATH_STAGED);
  CHECK_OK(build(&tf, &fast));
  CHECK_OK(build(&ts, &slow));
  REQUIRE(fast && slow);
  /* the forces on the colliders are compared too: measured from the first frame */
  CHECK_OK(wf_cloth_measure_collider_forces(fast, true));
  CHECK_OK(wf_cloth_measure_collider_forces(slow, true));
  CHECK_EQ_INT(frame_kernel(fast), want);
  CHECK_EQ_INT(frame_kernel(slow), WF_CLOTH_FRAME_PER_SUBSTEP);
  uint32_t n = 0, n2 = 0;
  float *s0 = scene_state(fast, &n);
  CHECK_OK(wf_cloth_step_frames(fast, frames));
  CHECK_OK(wf_cloth_step_frames(slow, frames));
  float *a = scene_state(fast, &n), *b = scene_state(slow, &n2);
  REQUIRE(s0 && a && b);
  CHECK_EQ_INT(n, n2);
  long d = scene_first_diff(a, b, (size_t)n * 8);
  if (d >= 0)
    TH_FAIL("%s: one-launch and staged XPBD differ at float %ld (vertex %ld): %.9g vs %.9g", what,
            d, (d % ((long)n * 4)) / 4, a[d], b[d]);
  CHECK(scene_first_diff(s0, a, (size_t)n * 4) >= 0); /* it moved */
  double ta = 0.0, tb = 1.0;
  uint64_t ka = 0, kb = 1;
  CHECK_OK(wf_cloth_time(fast, &ta, &ka));
  CHECK_OK(wf_cloth_time(slow, &tb, &kb));
  CHECK(memcmp(&ta, &tb, sizeof ta) == 0 && ka == kb);
  static double fa[8][6], fb[8][6];
  forces_of(fast, fa), forces_of(slow, fb);
  if (memcmp(fa, fb, sizeof fa) != 0) TH_FAIL("%s: the collider forces differ", what);
  wf_cloth_info ia, ib;
  CHECK_OK(wf_cloth_info_get(fast, &ia));
  CHECK_OK(wf_cloth_info_get(slow, &ib));
  if (!(ia.graph_nodes < ib.graph_nodes))
    TH_FAIL("%s: graph nodes %u (one launch) vs %u (staged)", what, (unsigned)ia.graph_nodes,
            (unsigned)ib.graph_nodes);
  if (want == WF_CLOTH_FRAME_RESIDENT) CHECK(ia.vertices <= ia.resident_max);
  free(s0), free(a), free(b);
  wf_cloth_destroy(fast), wf_cloth_destroy(slow);
}

TEST(busy_scene_bitwise) {
  compare("busy, resident", build_busy, 15, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  compare("busy, stride", build_busy, 15, PATH_STRIDE, WF_CLOTH_FRAME_STRIDE);
  g_block = 32;
  compare("busy, stride in 4 bands", build_busy, 15, PATH_STRIDE, WF_CLOTH_FRAME_STRIDE);
  g_block = 0;
}

/* The grid-stride frame's bands and barriers: 32 bands of 32 vertices at 32 x 32 waiting for
 * their neighbours, the same with grid.sync() (tuning.grid_sync ON), and blocks of 64. */
TEST(bands_bitwise) {
  g_nu = 32, g_nr = 32, g_substeps = 16, g_iterations = 4;
  static const struct {
    uint32_t block;
    int grid_sync;
    uint32_t blocks_want, gs_want;
  } cases[] = {{32, WF_CLOTH_TUNE_AUTO, 32, 0},
               {32, WF_CLOTH_TUNE_ON, 32, 1},
               {64, WF_CLOTH_TUNE_AUTO, 16, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    g_block = cases[k].block, g_grid_sync = cases[k].grid_sync;
    wf_cloth_info info;
    classic_info(PATH_STRIDE, &info);
    CHECK_EQ_INT(info.frame_block, cases[k].block);
    CHECK_EQ_INT(info.frame_grid_sync, cases[k].gs_want);
    char what[64];
    snprintf(what, sizeof what, "classic 32x32, stride, blocks of %u%s", cases[k].block,
             cases[k].gs_want ? ", grid.sync" : "");
    compare(what, build_classic, 1, PATH_STRIDE, WF_CLOTH_FRAME_STRIDE);
  }
  g_block = 0, g_grid_sync = 0;
}

/* The bench's setup: 4 iterations at 16 substeps; at 15 (an odd count) and with 1 iteration (no
 * multipliers). */
TEST(classic_32_bitwise) {
  g_nu = 32, g_nr = 32, g_substeps = 16;
  compare("classic 32x32, resident", build_classic, 2, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  compare("classic 32x32, stride", build_classic, 2, PATH_STRIDE, WF_CLOTH_FRAME_STRIDE);
}

TEST(classic_32_odd_substeps_one_iteration_bitwise) {
  g_nu = 32, g_nr = 32, g_substeps = 15;
  compare("classic 32x32, 15 substeps", build_classic, 1, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  compare("classic 32x32, 15 substeps, stride", build_classic, 1, PATH_STRIDE,
          WF_CLOTH_FRAME_STRIDE);
  g_substeps = 16, g_iterations = 1;
  compare("classic 32x32, 1 iteration", build_classic, 2, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  g_iterations = 4;
}

TEST(mesh_collider_bitwise) {
  compare("sheet on a mesh floor", build_mesh_floor, 12, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  { /* the sheet lies on the mesh by then: it presses the floor down (the force the floor gets) */
    wf_cloth *c = NULL;
    wf_cloth_tuning t = tuning_of(PATH_AUTO);
    CHECK_OK(build_mesh_floor(&t, &c));
    REQUIRE(c);
    CHECK_OK(wf_cloth_measure_collider_forces(c, true));
    CHECK_OK(wf_cloth_step_frames(c, 12));
    double f[8][6];
    forces_of(c, f);
    if (!(f[0][1] < 0.0))
      TH_FAIL("the mesh floor gets %g N upwards: the sheet never reached it", f[0][1]);
    wf_cloth_destroy(c);
  }
}

TEST(mesh_collider_stride_bitwise) {
  compare("sheet on a mesh floor, stride", build_mesh_floor, 12, PATH_STRIDE,
          WF_CLOTH_FRAME_STRIDE);
}

TEST(obj_cloth_bitwise) { compare("OBJ sheet", build_obj, 6, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT); }

/* The largest grid of 64 columns the resident frame takes, and one row more (grid-stride; one
 * block with tuning.resident ON). */
TEST(resident_limit_bitwise) {
  g_nu = 8, g_nr = 8;
  wf_cloth_info info;
  classic_info(PATH_AUTO, &info);
  REQUIRE(info.resident_max % 64 == 0 && info.resident_max >= 64 * 8);
  g_nu = 64, g_nr = (int)(info.resident_max / 64), g_iterations = 2, g_substeps = 4;
  compare("largest resident grid", build_classic, 1, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  g_nr++;
  compare("one row more", build_classic, 1, PATH_AUTO, WF_CLOTH_FRAME_STRIDE);
  g_resident = WF_CLOTH_TUNE_ON; /* one block also above it, when asked */
  compare("one row more, resident asked", build_classic, 1, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  g_resident = 0;
  g_nu = 32, g_nr = 32, g_iterations = 4, g_substeps = 16;
}

/* The one block with its state in shared memory (CUDA; tuning.smem ON) and without (OFF), with
 * 1024, 512 (automatic) and 64 threads: a 32 x 32 cloth's largest colour (~500 constraints) is
 * one round of prefetched constraints a thread, one, and eight (four prefetched, the rest loaded
 * where solved). Then the busy scene and the mesh floor in shared memory. A CPU device has no
 * shared-memory variant (frame_smem 0) and takes at most 512 threads. */
TEST(shared_memory_block_bitwise) {
  g_nu = 32, g_nr = 32, g_substeps = 16, g_iterations = 4;
  static const uint32_t blocks[] = {1024, 0, 64};
  const bool cuda = th_is_cuda();
  for (int off = 0; off < 2; off++)
    for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++) {
      g_block = blocks[k], g_smem = off ? WF_CLOTH_TUNE_OFF : WF_CLOTH_TUNE_ON;
      wf_cloth_info info;
      classic_info(PATH_AUTO, &info);
      CHECK_EQ_INT(info.frame_smem, cuda && !off ? 1 : 0);
      /* 1024 only with shared memory: the plain block's launch bounds are 512 */
      CHECK_EQ_INT(info.frame_block,
                   blocks[k] == 0 || (blocks[k] == 1024 && !(cuda && !off)) ? 512 : blocks[k]);
      char what[64];
      snprintf(what, sizeof what, "classic 32x32, one block of %u%s", (unsigned)info.frame_block,
               info.frame_smem ? ", shared memory" : "");
      compare(what, build_classic, 2, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
    }
  g_block = 0, g_smem = WF_CLOTH_TUNE_ON;
  /* everything else the frame does, from shared memory: wind with drag and lift (predict reads
   * its neighbours' positions there), moving colliders and attachments; a mesh floor (the
   * finalize's candidate lists) */
  compare("busy, one block in shared memory", build_busy, 15, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  compare("sheet on a mesh floor, one block in shared memory", build_mesh_floor, 12, PATH_AUTO,
          WF_CLOTH_FRAME_RESIDENT);
  g_smem = 0;
  /* AUTO: from WFC_XPBD_SHARED_MIN (2048) vertices on: not at 32 x 32, at 48 x 48 */
  for (int big = 0; big < 2; big++) {
    g_nu = g_nr = big ? 48 : 32;
    wf_cloth_info info;
    classic_info(PATH_AUTO, &info);
    CHECK_EQ_INT(info.frame_smem, cuda && big ? 1 : 0);
  }
  g_nu = g_nr = 32;
}

/* After every frame the pinned readback buffer holds bitwise the positions the frame left (xyzw
 * at offset 32, packed xyz at 36), written by the frame kernel itself (frame_readback_direct). */
static void readback_case(const char *what, int path, wf_cloth_layout layout, size_t off) {
  g_nu = 12, g_nr = 9, g_substeps = 15;
  wf_cloth *c = NULL;
  wf_cloth_tuning t = tuning_of(path);
  CHECK_OK(build_classic(&t, &c));
  REQUIRE(c);
  const size_t k = layout == WF_CLOTH_XYZ ? 3 : 4, nv = 12 * 9, bytes = nv * 4 * k;
  const size_t total = off + bytes + 16;
  wf_buffer *rb = NULL;
  CHECK_OK(wf_buffer_create(th_host, total, WF_BUFFER_PINNED, NULL, &rb));
  REQUIRE(rb);
  CHECK_OK(wf_cloth_set_frame_readback_as(c, rb, off, layout));
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(c, &info));
  CHECK_EQ_INT(info.frame_readback_direct, path == PATH_STAGED ? 0u : 1u);
  float *pos = malloc(nv * 16);
  unsigned char *all = malloc(total), *ff = malloc(total);
  REQUIRE(pos && all && ff);
  memset(ff, 0xff, total);
  CHECK_OK(wf_upload(rb, 0, ff, total, NULL));
  for (int f = 0; f < 4; f++) {
    CHECK_OK(wf_cloth_step_frames(c, f == 2 ? 2 : 1));
    CHECK_OK(wf_stream_synchronize(wf_cloth_stream(c)));
    CHECK_OK(wf_cloth_download_local(c, (float(*)[4])pos, NULL));
    CHECK_OK(wf_download(all, rb, 0, total));
    const float *got = (const float *)(void *)(all + off);
    for (size_t i = 0; i < nv * k; i++)
      if (memcmp(&got[i], &pos[i / k * 4 + i % k], 4) != 0) {
        TH_FAIL("%s, frame %d: readback differs at float %zu: %.9g vs %.9g", what, f, i,
                (double)got[i], (double)pos[i / k * 4 + i % k]);
        break;
      }
    CHECK(memcmp(all, ff, off) == 0 && memcmp(all + off + bytes, ff, 16) == 0);
  }
  free(pos), free(all), free(ff);
  CHECK_OK(wf_cloth_set_frame_readback(c, NULL, 0));
  wf_buffer_destroy(rb, NULL);
  wf_cloth_destroy(c);
  g_nu = 32, g_nr = 32, g_substeps = 16;
}

TEST(frame_readback) {
  readback_case("resident", PATH_AUTO, WF_CLOTH_XYZW, 32);
  readback_case("resident, xyz", PATH_AUTO, WF_CLOTH_XYZ, 36);
  readback_case("stride", PATH_STRIDE, WF_CLOTH_XYZW, 32);
  readback_case("stride, xyz", PATH_STRIDE, WF_CLOTH_XYZ, 36);
  readback_case("staged", PATH_STAGED, WF_CLOTH_XYZW, 32);
}

/* A checkpoint: the state and clock after 7 frames restored into a new cloth (local positions,
 * bitwise); its next 9 frames equal frames 8..16 of the run that never stopped. */
static void resume_case(const char *what, int path) {
  wf_cloth *a = NULL, *b = NULL;
  wf_cloth_tuning t = tuning_of(path);
  CHECK_OK(build_busy(&t, &a));
  CHECK_OK(build_busy(&t, &b));
  REQUIRE(a && b);
  CHECK_OK(wf_cloth_step_frames(a, 7));
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(a, &info));
  const uint32_t nv = info.vertices;
  float(*p)[4] = malloc(nv * 16), (*v)[4] = malloc(nv * 16);
  REQUIRE(p && v);
  double time = 0.0;
  uint64_t subs = 0;
  CHECK_OK(wf_cloth_download_local(a, p, v));
  CHECK_OK(wf_cloth_time(a, &time, &subs));
  CHECK_OK(wf_cloth_set_state_local(b, (const float(*)[4])p, (const float(*)[4])v, time, subs));
  CHECK_OK(wf_cloth_step_frames(a, 9));
  CHECK_OK(wf_cloth_step_frames(b, 9));
  uint32_t n = 0;
  float *sa = scene_state(a, &n), *sb = scene_state(b, &n);
  REQUIRE(sa && sb);
  long d = scene_first_diff(sa, sb, (size_t)n * 8);
  if (d >= 0) TH_FAIL("%s: resumed run differs at float %ld", what, d);
  CHECK(scene_first_diff(sa, &p[0][0], (size_t)n * 4) >= 0); /* moved after the restore */
  free(p), free(v), free(sa), free(sb);
  wf_cloth_destroy(a), wf_cloth_destroy(b);
}

TEST(checkpoint_resume_bitwise) {
  resume_case("resident", PATH_AUTO);
  resume_case("stride", PATH_STRIDE);
}

/* Over 2, 3 and 4 partitions the frame is staged (each partition's stages meet the halo
 * exchange) and bitwise the one-partition cloth's, which runs the one-launch frame. */
TEST(partitions_bitwise_with_fast_frame) {
  wf_device *devs[4];
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", th_kind, i);
    if (wf_device_get(name, &devs[i]) != WF_OK) devs[i] = th_dev0;
  }
  wf_clear_error();
  wf_cloth_tuning t = tuning_of(PATH_AUTO);
  wf_cloth *one = NULL;
  CHECK_OK(build_busy(&t, &one));
  REQUIRE(one);
  CHECK_EQ_INT(frame_kernel(one), WF_CLOTH_FRAME_RESIDENT);
  CHECK_OK(wf_cloth_step_frames(one, 12));
  uint32_t n = 0;
  float *ref = scene_state(one, &n);
  REQUIRE(ref);
  for (int parts = 2; parts <= 4; parts++) {
    wf_cloth_desc d = wf_cloth_desc_default();
    d.name = "busy";
    d.integrator = WF_CLOTH_XPBD;
    d.substeps = 8;
    d.iterations = 3;
    d.wind[0] = 3.0f, d.wind[2] = 1.0f;
    d.damping = 0.1f;
    d.material.drag = 1.0f;
    d.material.lift = 0.5f;
    d.material.thickness = 0.01f;
    d.device_count = parts;
    for (int i = 0; i < parts; i++)
      d.devices[i] = devs[i];
    wf_cloth_grid g = wf_cloth_grid_default();
    g.resolution[0] = 12, g.resolution[1] = 10;
    g.size[0] = 1.1f, g.size[1] = 0.9f;
    g.center[1] = 0.7f;
    wf_cloth *c = NULL;
    CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
    REQUIRE(c);
    /* the busy scene's colliders, attachments and pins (cloth_scenes.h), in its order */
    wf_collider_desc s = scene_sphere(0.1f, 0.2f, 0.0f, 0.3f), ground = scene_ground(-0.4f);
    wf_collider_desc box, cap, mover;
    memset(&box, 0, sizeof box), memset(&cap, 0, sizeof cap), memset(&mover, 0, sizeof mover);
    box.name = "box", box.type = WF_COLLIDER_BOX, box.friction = 0.3f;
    box.center[0] = -0.4f, box.center[1] = 0.1f, box.half_extents[0] = box.half_extents[1] = 0.1f;
    box.half_extents[2] = 0.3f;
    cap.name = "capsule", cap.type = WF_COLLIDER_CAPSULE, cap.friction = 0.8f, cap.radius = 0.05f;
    cap.p0[0] = 0.3f, cap.p0[1] = 0.3f, cap.p0[2] = -0.4f, cap.p1[0] = 0.3f, cap.p1[1] = 0.3f;
    cap.p1[2] = 0.4f;
    mover.name = "mover", mover.type = WF_COLLIDER_BOX, mover.friction = 0.5f;
    mover.center[1] = 3.0f, mover.half_extents[0] = mover.half_extents[1] = 0.05f;
    mover.half_extents[2] = 0.05f, mover.velocity[1] = 0.2f, mover.velocity[0] = 0.1f;
    uint32_t mi = 0;
    float lo[3] = {-0.2f, 0.6f, 0.3f}, hi[3] = {0.2f, 0.8f, 0.5f};
    CHECK_OK(wf_cloth_add_collider(c, &s, NULL));
    CHECK_OK(wf_cloth_add_collider(c, &ground, NULL));
    CHECK_OK(wf_cloth_add_collider(c, &box, NULL));
    CHECK_OK(wf_cloth_add_collider(c, &cap, NULL));
    CHECK_OK(wf_cloth_add_collider(c, &mover, &mi));
    CHECK_OK(wf_cloth_attach(c, 0, mi));
    CHECK_OK(wf_cloth_attach(c, 11, mi));
    CHECK_OK(wf_cloth_pin_region(c, lo, hi, NULL));
    CHECK_EQ_INT(frame_kernel(c), WF_CLOTH_FRAME_PER_SUBSTEP);
    CHECK_OK(wf_cloth_step_frames(c, 12));
    uint32_t m = 0;
    float *got = scene_state(c, &m);
    REQUIRE(got && m == n);
    long diff = scene_first_diff(ref, got, (size_t)n * 8);
    if (diff >= 0)
      TH_FAIL("%d partitions differ from the one-launch frame at float %ld", parts, diff);
    free(got);
    wf_cloth_destroy(c);
  }
  free(ref);
  wf_cloth_destroy(one);
}

/* Cloths the one-launch frame does not take run the staged frame: self-collision, contact (even
 * with tuning.one_launch ON), and tuning.one_launch OFF. Automatic: one launch on a CUDA device,
 * the staged frame on a CPU device (its solve kernels split over the CPU worker pool); ON: one
 * launch on both. */
TEST(fallbacks_run_staged) {
  static const struct {
    const char *what;
    bool self, contact;
    int one_launch;
  } cases[] = {{"self-collision", true, false, WF_CLOTH_TUNE_ON},
               {"contact", false, true, WF_CLOTH_TUNE_ON},
               {"one_launch OFF", false, false, WF_CLOTH_TUNE_OFF},
               {"one_launch ON", false, false, WF_CLOTH_TUNE_ON},
               {"automatic", false, false, WF_CLOTH_TUNE_AUTO}};
  const bool cuda = wf_device_is_cuda(th_dev0);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    wf_cloth_desc d = wf_cloth_desc_default();
    d.name = "sheet";
    d.integrator = WF_CLOTH_XPBD;
    d.self_collision = cases[k].self;
    d.contact = cases[k].contact;
    d.tuning.one_launch = cases[k].one_launch;
    d.devices[0] = th_dev0;
    wf_cloth_grid g = wf_cloth_grid_default();
    g.resolution[0] = g.resolution[1] = 8;
    wf_cloth *c = NULL;
    CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
    REQUIRE(c);
    CHECK_OK(wf_cloth_step_frames(c, 1));
    uint32_t want =
        k == 3 || (k == 4 && cuda) ? WF_CLOTH_FRAME_RESIDENT : WF_CLOTH_FRAME_PER_SUBSTEP;
    if (frame_kernel(c) != want)
      TH_FAIL("%s: frame kernel %u, want %u", cases[k].what, frame_kernel(c), want);
    wf_cloth_destroy(c);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(busy_scene_bitwise),
                                  TH_TEST(classic_32_bitwise),
                                  TH_TEST(classic_32_odd_substeps_one_iteration_bitwise),
                                  TH_TEST(bands_bitwise),
                                  TH_TEST(mesh_collider_bitwise),
                                  TH_TEST(mesh_collider_stride_bitwise),
                                  TH_TEST(obj_cloth_bitwise),
                                  TH_TEST(resident_limit_bitwise),
                                  TH_TEST(shared_memory_block_bitwise),
                                  TH_TEST(frame_readback),
                                  TH_TEST(checkpoint_resume_bitwise),
                                  TH_TEST(partitions_bitwise_with_fast_frame),
                                  TH_TEST(fallbacks_run_staged)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
