/* The mass-spring fast path (solvers/cloth/cloth_fast.h): a frame in one launch, and grid cloths
 * without the adjacency list. Both must give bitwise the state of the general path (one launch
 * per substep over the CSR springs), which desc.tuning.one_launch = WF_CLOTH_TUNE_OFF selects.
 * Checked on a busy grid (wind with drag and lift, four colliders, an attachment, pins; not square,
 * so rows and columns cannot be swapped unnoticed), on a rotated grid with an odd number of
 * substeps per frame, and on an OBJ mesh (the one-launch frame over CSR springs).
 *
 * The one-launch frame has two modes (wf_cloth_info.frame_kernel): RESIDENT (a thread per
 * vertex, its state in registers; up to resident_max vertices) and STRIDE (above it, or with
 * tuning.resident = WF_CLOTH_TUNE_OFF). The small scenes run RESIDENT; the bench's setup at 32 x 32
 * runs all three paths; the boundary cases build the largest grid that runs RESIDENT (resident_max
 * vertices: 4096 on the CPU backend, the device's occupancy on CUDA) and the next one up (one more
 * row: STRIDE), each bitwise against the general path. The per-frame readback
 * (wf_cloth_set_frame_readback) must hold, after every frame, bitwise the positions the frame
 * left, on every path, with even and odd substeps. Tolerance: none (bitwise). */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

typedef wf_status (*builder)(wf_cloth **out);

/* The tuning every builder below gives its cloth (zero: automatic). */
static wf_cloth_tuning g_tune;

static wf_status build_busy(wf_cloth **out) {
  return scene_busy_tuned(th_dev0, WF_CLOTH_SPRINGS, false, &g_tune, out);
}

static wf_status build_rotated(wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "rotated";
  d.substeps = 31;
  d.wind[2] = 2.0f;
  d.material.drag = 0.8f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = 9, g.resolution[1] = 13;
  g.size[0] = 0.8f, g.size[1] = 1.2f;
  g.center[1] = 1.0f;
  g.u_axis[0] = 0.8f, g.u_axis[1] = 0.0f, g.u_axis[2] = 0.6f;
  g.v_axis[0] = 0.0f, g.v_axis[1] = 0.6f, g.v_axis[2] = 0.8f;
  d.devices[0] = th_dev0;
  d.tuning = g_tune;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top", NULL);
  return st;
}

static wf_status build_mesh(wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "sheet";
  /* 12, not fewer: at 6 the default material (a vertex of about 0.7 g on springs of 50 N/m) is
   * past the semi-implicit step's stability limit, and the sheet flies apart. */
  d.substeps = 12;
  wf_cloth_mesh_desc m = wf_cloth_mesh_desc_default();
  m.path = WEFT_ASSETS_DIR "/meshes/sheet_16x16.obj";
  m.translate[1] = 1.0f;
  d.devices[0] = th_dev0;
  d.tuning = g_tune;
  wf_status st = wf_cloth_create_mesh(&d, &m, out);
  if (st != WF_OK) return st;
  wf_collider_desc s = scene_sphere(0.0f, 0.4f, 0.0f, 0.3f);
  return wf_cloth_add_collider(*out, &s, NULL);
}

/* The bench's setup (bench/cloth_bench.c): an nu x nr grid, spacing 0.1, mass 0.1, springs of
 * stiffness 1000 and damping 10, the first row's corners pinned, 16 substeps; with wind, drag
 * and a sphere below so that aerodynamics and colliders run too. */
static int g_nu = 32, g_nr = 32, g_substeps = 16;
static wf_status build_classic(wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "classic";
  d.substeps = g_substeps;
  d.wind[0] = 1.0f;
  d.material.drag = 0.5f;
  d.material.particle_mass = 0.1f;
  d.material.coefficients = true;
  d.material.stretch_stiffness = d.material.shear_stiffness = d.material.bend_stiffness = 1000.0f;
  d.material.damping = 10.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g_nu, g.resolution[1] = g_nr;
  g.size[0] = 0.1f * (float)(g_nu - 1), g.size[1] = 0.1f * (float)(g_nr - 1);
  g.center[1] = 0.0f;
  d.devices[0] = th_dev0;
  d.tuning = g_tune;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-left", NULL);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-right", NULL);
  wf_collider_desc s = scene_sphere(0.0f, -0.3f, 0.0f, 0.25f);
  if (st == WF_OK) st = wf_cloth_add_collider(*out, &s, NULL);
  return st;
}

/* The frame paths a test asks for (wf_cloth_tuning.one_launch and .resident). */
enum { PATH_AUTO, PATH_STRIDE, PATH_GENERAL };

/* Builds a cloth on `path`, with the rest of g_tune as it is. */
static wf_status build_with(builder build, int path, wf_cloth **out) {
  wf_cloth_tuning keep = g_tune;
  g_tune.one_launch = path == PATH_GENERAL ? WF_CLOTH_TUNE_OFF : WF_CLOTH_TUNE_AUTO;
  g_tune.resident = path == PATH_STRIDE ? WF_CLOTH_TUNE_OFF : WF_CLOTH_TUNE_AUTO;
  wf_status st = build(out);
  g_tune = keep;
  return st;
}

/* The facts of a cloth `build` makes (built and destroyed here); false if that failed. */
static bool probe_info(builder build, wf_cloth_info *info) {
  wf_cloth *probe = NULL;
  memset(info, 0, sizeof *info);
  wf_status st = build(&probe);
  if (st == WF_OK && probe) st = wf_cloth_info_get(probe, info);
  if (st != WF_OK || !probe) TH_FAIL("building a probe cloth: %s", wf_last_error());
  wf_cloth_destroy(probe);
  return st == WF_OK && probe;
}

static uint32_t frame_kernel(wf_cloth *c) {
  wf_cloth_info i;
  return wf_cloth_info_get(c, &i) == WF_OK ? i.frame_kernel : 99u;
}

/* Runs `frames` frames of the cloth built with the fast path on `path` (PATH_AUTO or
 * PATH_STRIDE) and on the general path; the states must be bitwise equal, and must have moved;
 * the fast cloth's frame must be the kernel `want`. */
static void compare_mode(const char *what, builder build, int frames, int path, uint32_t want) {
  wf_cloth *fast_c = NULL, *slow = NULL;
  CHECK_OK(build_with(build, path, &fast_c));
  CHECK_OK(build_with(build, PATH_GENERAL, &slow));
  REQUIRE(fast_c && slow);
  CHECK_EQ_INT(frame_kernel(fast_c), want);
  CHECK_EQ_INT(frame_kernel(slow), WF_CLOTH_FRAME_PER_SUBSTEP);
  wf_cloth *fast = fast_c;
  uint32_t n = 0, n2 = 0;
  float *s0 = scene_state(fast, &n);
  CHECK_OK(wf_cloth_step_frames(fast, frames));
  CHECK_OK(wf_cloth_step_frames(slow, frames));
  float *a = scene_state(fast, &n), *b = scene_state(slow, &n2);
  REQUIRE(s0 && a && b);
  CHECK_EQ_INT(n, n2);
  long d = scene_first_diff(a, b, (size_t)n * 8);
  if (d >= 0)
    TH_FAIL("%s: fast and general paths differ at float %ld (vertex %ld): %.9g vs %.9g", what, d,
            (d % ((long)n * 4)) / 4, a[d], b[d]);
  CHECK(scene_first_diff(s0, a, (size_t)n * 4) >= 0); /* it moved */
  double ta = 0.0, tb = 1.0;
  uint64_t ka = 0, kb = 1;
  CHECK_OK(wf_cloth_time(fast, &ta, &ka));
  CHECK_OK(wf_cloth_time(slow, &tb, &kb));
  CHECK(memcmp(&ta, &tb, sizeof ta) == 0 && ka == kb); /* the clock, bitwise */
  wf_cloth_info ia, ib;
  CHECK_OK(wf_cloth_info_get(fast, &ia));
  CHECK_OK(wf_cloth_info_get(slow, &ib));
  CHECK(ia.graph_nodes < ib.graph_nodes); /* one launch instead of one per substep */
  free(s0), free(a), free(b);
  wf_cloth_destroy(fast), wf_cloth_destroy(slow);
}

/* Runs `frames` frames of the cloth built with the fast path on and with it off; the states
 * must be bitwise equal, and must have moved. */
static void compare(const char *what, builder build, int frames) {
  wf_cloth *fast = NULL, *slow = NULL;
  CHECK_OK(build_with(build, PATH_AUTO, &fast));
  CHECK_OK(build_with(build, PATH_GENERAL, &slow));
  REQUIRE(fast && slow);
  uint32_t n = 0, n2 = 0;
  float *s0 = scene_state(fast, &n);
  CHECK_OK(wf_cloth_step_frames(fast, frames));
  CHECK_OK(wf_cloth_step_frames(slow, frames));
  float *a = scene_state(fast, &n), *b = scene_state(slow, &n2);
  REQUIRE(s0 && a && b);
  CHECK_EQ_INT(n, n2);
  long d = scene_first_diff(a, b, (size_t)n * 8);
  if (d >= 0)
    TH_FAIL("%s: fast and general paths differ at float %ld (vertex %ld): %.9g vs %.9g", what, d,
            (d % ((long)n * 4)) / 4, a[d], b[d]);
  CHECK(scene_first_diff(s0, a, (size_t)n * 4) >= 0); /* it moved */
  wf_cloth_info ia, ib;
  CHECK_OK(wf_cloth_info_get(fast, &ia));
  CHECK_OK(wf_cloth_info_get(slow, &ib));
  CHECK(ia.graph_nodes < ib.graph_nodes); /* one launch instead of one per substep */
  free(s0), free(a), free(b);
  wf_cloth_destroy(fast), wf_cloth_destroy(slow);
}

TEST(busy_grid_bitwise) {
  compare("busy grid", build_busy, 25);
  compare_mode("busy grid, resident", build_busy, 25, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  compare_mode("busy grid, stride", build_busy, 25, PATH_STRIDE, WF_CLOTH_FRAME_STRIDE);
}

/* The bench's setup at 32 x 32, 16 and 15 substeps, all three paths. */
TEST(classic_32_all_paths_bitwise) {
  g_nu = 32, g_nr = 32;
  for (g_substeps = 16; g_substeps >= 15; g_substeps--) {
    compare_mode("classic 32x32, resident", build_classic, 6, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
    compare_mode("classic 32x32, stride", build_classic, 6, PATH_STRIDE, WF_CLOTH_FRAME_STRIDE);
  }
  g_substeps = 16;
}

/* The largest grid of `nu` columns that runs resident, and one row more (grid-stride). */
TEST(resident_boundary_bitwise) {
  g_nu = 4, g_nr = 4, g_substeps = 16;
  wf_cloth_info info;
  REQUIRE(probe_info(build_classic, &info));
  uint32_t max = info.resident_max;
  REQUIRE(max >= 64);
  g_nu = max % 256 == 0 && max >= 256 * 4 ? 256 : 16;
  REQUIRE(max % (uint32_t)g_nu == 0);
  g_nr = (int)(max / (uint32_t)g_nu);
  printf("  resident_max %u: %dx%d resident, %dx%d grid-stride\n", max, g_nu, g_nr, g_nu, g_nr + 1);
  compare_mode("largest resident grid", build_classic, 2, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  g_nr++;
  compare_mode("one row above", build_classic, 2, PATH_AUTO, WF_CLOTH_FRAME_STRIDE);
  g_nu = 32, g_nr = 32;
}

/* After every frame the readback buffer holds bitwise the positions the frame left, in the
 * layout asked, at byte offset off, and nothing around them changes. dev: where the buffer lives
 * (NULL: pinned host memory); tile: columns x rows of tiles asked for (0 x 0: the automatic
 * plan). */
static void readback_case(const char *what, int path, const uint32_t tile[2], int substeps,
                          uint32_t direct, wf_cloth_layout layout, wf_device *dev, size_t off) {
  g_nu = 12, g_nr = 9, g_substeps = substeps;
  wf_cloth *c = NULL;
  wf_cloth_tuning keep = g_tune;
  if (tile[0]) g_tune.tiles = WF_CLOTH_TUNE_ON, g_tune.tile[0] = tile[0], g_tune.tile[1] = tile[1];
  CHECK_OK(build_with(build_classic, path, &c));
  g_tune = keep;
  REQUIRE(c);
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(c, &info));
  const bool xyz = layout == WF_CLOTH_XYZ;
  const size_t k = xyz ? 3 : 4, nv = info.vertices, bytes = nv * 4 * k;
  const size_t total = off + bytes + 16;
  wf_buffer *rb = NULL, *small = NULL;
  CHECK_OK(wf_buffer_create(dev ? dev : th_host, total, dev ? 0 : WF_BUFFER_PINNED, NULL, &rb));
  CHECK_OK(wf_buffer_create(th_host, bytes - 4, WF_BUFFER_PINNED, NULL, &small));
  REQUIRE(rb && small);
  CHECK_ERROR(wf_cloth_set_frame_readback_as(c, small, 0, layout), WF_ERR_INVALID,
              "positions need");
  if (xyz) /* floats; xyzw at any offset is copied */
    CHECK_ERROR(wf_cloth_set_frame_readback_as(c, rb, 2, layout), WF_ERR_INVALID, "offset 2");
  CHECK_ERROR(wf_cloth_set_frame_readback_as(c, rb, off, (wf_cloth_layout)7), WF_ERR_INVALID,
              "layout 7");
  CHECK_OK(wf_cloth_set_frame_readback_as(c, rb, off, layout));
  CHECK_OK(wf_cloth_info_get(c, &info));
  CHECK_EQ_INT(info.frame_readback_direct, direct);
  float *pos = malloc(nv * 16);
  unsigned char *all = malloc(total), *ff = malloc(total);
  REQUIRE(pos && all && ff);
  memset(ff, 0xff, total);
  CHECK_OK(wf_upload(rb, 0, ff, total, NULL));
  for (int f = 0; f < 5; f++) {
    if (f == 4) CHECK_OK(wf_cloth_set_frame_readback_as(c, NULL, 0, layout)); /* stops it */
    CHECK_OK(wf_cloth_step_frames(c, f == 3 ? 3 : 1));
    CHECK_OK(wf_stream_synchronize(wf_cloth_stream(c)));
    if (f < 4) CHECK_OK(wf_cloth_download_local(c, (float(*)[4])pos, NULL));
    CHECK_OK(wf_download(all, rb, 0, total));
    const float *got = (const float *)(void *)(all + off);
    for (size_t i = 0; i < nv * k; i++)
      if (memcmp(&got[i], &pos[i / k * 4 + i % k], 4) != 0) {
        TH_FAIL("%s, frame %d: readback differs at float %zu: %.9g vs %.9g", what, f, i,
                (double)got[i], (double)pos[i / k * 4 + i % k]);
        break;
      }
    CHECK(memcmp(all, ff, off) == 0 && memcmp(all + off + bytes, ff, 16) == 0); /* around it */
  }
  free(pos), free(all), free(ff);
  wf_buffer_destroy(rb, NULL), wf_buffer_destroy(small, NULL);
  wf_cloth_destroy(c);
  g_nu = 32, g_nr = 32, g_substeps = 16;
}

/* Every path in both layouts (xyzw at offset 32; packed xyz at offset 36, 4-byte aligned only):
 * the one-launch frames (resident, grid-stride, tiled on a GPU) write pinned host memory from
 * their last substep; the per-substep path copies (xyzw) or packs (xyz) after the frame, as every
 * path does into a buffer on the device. At a 16-byte aligned offset (48) the GPU kernels write
 * packed xyz 16 bytes a store: the tiled frames (stages of two and of one) in rows where the tile
 * width allows it (8 x 4 tiles of the 12-wide grid, not 5 x 3), the resident frame by warps whose
 * vertices all exist (not the last, partial one); at offset 36, none of them. 15 substeps: the
 * frame ends in the other half and is copied back. */
TEST(frame_readback_every_path) {
  const uint32_t dev_direct = wf_device_is_cuda(th_dev0) ? 0 : 1; /* a CPU's is host memory */
  static const uint32_t no[2] = {0, 0}, t84[2] = {8, 4}, t53[2] = {5, 3};
  for (int sub = 16; sub >= 15; sub--)
    for (int l = 0; l < 2; l++) {
      wf_cloth_layout L = l ? WF_CLOTH_XYZ : WF_CLOTH_XYZW;
      size_t off = l ? 36 : 32;
      readback_case(l ? "resident, xyz" : "resident", PATH_AUTO, no, sub, 1, L, NULL, off);
      readback_case(l ? "stride, xyz" : "stride", PATH_STRIDE, no, sub, 1, L, NULL, off);
      readback_case(l ? "per substep, xyz" : "per substep", PATH_GENERAL, no, sub, 0, L, NULL, off);
      readback_case(l ? "resident, xyz on the device" : "resident, on the device", PATH_AUTO, no,
                    sub, dev_direct, L, th_dev0, off);
      readback_case(l ? "8x4 tiles, xyz" : "8x4 tiles", PATH_AUTO, t84, sub, 1, L, NULL, off);
      readback_case(l ? "5x3 tiles, xyz" : "5x3 tiles", PATH_AUTO, t53, sub, 1, L, NULL, off);
    }
  for (int sub = 16; sub >= 15; sub--) {
    readback_case("8x4 tiles, xyz rows", PATH_AUTO, t84, sub, 1, WF_CLOTH_XYZ, NULL, 48);
    readback_case("5x3 tiles, xyz at 48", PATH_AUTO, t53, sub, 1, WF_CLOTH_XYZ, NULL, 48);
    readback_case("resident, xyz by warps", PATH_AUTO, no, sub, 1, WF_CLOTH_XYZ, NULL, 48);
    readback_case("stride, xyz at 48", PATH_STRIDE, no, sub, 1, WF_CLOTH_XYZ, NULL, 48);
    g_tune.tile_steps = 1;
    readback_case("8x4 tiles in stages of one, xyz rows", PATH_AUTO, t84, sub, 1, WF_CLOTH_XYZ,
                  NULL, 48);
    g_tune.tile_steps = 0;
  }
}
/* The resident grid frame's variants (cloth_fast.h): 1, 2 and 4 threads a vertex, with and
 * without the neighbourhood staged in shared memory, and small blocks (tuning.block 32: a
 * block of 8 vertices at 4 lanes, so the staging and the barrier span many blocks), each bitwise
 * against the per-substep path, on the bench's setup (32 x 32) and the busy grid (not square,
 * colliders, wind). The knobs must give the asked variant (wf_cloth_info). The automatic choice:
 * 4 lanes at 32 x 32 (4 x 1024 threads fit the CPU backend's 4096), 1 lane staged at 48 x 48
 * on the CPU backend; a GPU's choice at 48 x 48 depends on its size (want_l 0: not checked). */
static void variant(const char *what, builder build, int frames, uint32_t lanes, int smem,
                    uint32_t block, uint32_t want_l, uint32_t want_s) {
  g_tune.lanes = lanes, g_tune.smem = smem, g_tune.block = block;
  wf_cloth_info info;
  REQUIRE(probe_info(build, &info));
  if (want_l && (info.frame_lanes != want_l || info.frame_smem != want_s))
    TH_FAIL("%s (lanes %u, smem %d): got %u lanes, smem %u, want %u, %u", what, lanes, smem,
            info.frame_lanes, info.frame_smem, want_l, want_s);
  if (block && !wf_device_is_cuda(th_dev0)) CHECK_EQ_INT(info.frame_block, block);
  compare_mode(what, build, frames, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  memset(&g_tune, 0, sizeof g_tune);
}

TEST(lanes_and_staging_bitwise) {
  static const uint32_t ls[] = {1, 2, 4};
  static const int ss[] = {WF_CLOTH_TUNE_OFF, WF_CLOTH_TUNE_ON};
  g_nu = 32, g_nr = 32, g_substeps = 16;
  for (int l = 0; l < 3; l++)
    for (int s = 0; s < 2; s++) {
      uint32_t L = ls[l], S = ss[s] == WF_CLOTH_TUNE_ON;
      variant("classic 32x32", build_classic, 3, L, ss[s], 0, L, S);
      variant("classic 32x32, blocks of 32", build_classic, 3, L, ss[s], 32, L, S);
      variant("busy grid", build_busy, 10, L, ss[s], 0, L, S);
    }
  /* automatic */
  variant("classic 32x32, automatic", build_classic, 3, 0, WF_CLOTH_TUNE_AUTO, 0, 4, 0);
  g_nu = 48, g_nr = 48;
  bool cpu = !wf_device_is_cuda(th_dev0);
  variant("classic 48x48, automatic", build_classic, 2, 0, WF_CLOTH_TUNE_AUTO, 0, cpu ? 1 : 0, 1);
  variant("classic 48x48, 4 lanes asked", build_classic, 2, 4, WF_CLOTH_TUNE_OFF, 0, cpu ? 1 : 0,
          0);
  g_nu = 32, g_nr = 32;
}

/* The tiled resident frame (cloth_fast.h: TILED; CUDA devices): tiles asked with tuning.tiles ON
 * and tuning.tile, in stages of one substep and of two (tuning.tile_steps), each bitwise
 * against the per-substep path: small tiles so that one cloth has many of them, tiles that do
 * not divide the grid (a last column or row of tiles 1 or 2 wide), 2 x 2 tiles (every vertex on
 * a boundary; in stages of two, a tile's box reaches the tiles two away), a tile as wide as the
 * grid (no neighbours left and right); the bench's setup, the busy grid (colliders, wind with
 * drag and lift, not square: stages of two run one substep a stage with aerodynamics) and the
 * rotated grid (31 substeps: an odd count, so stages of one come first); 15 and 14 substeps (7
 * pairs: an odd count of stages of two). And the automatic choice at 256 x 256 on a GPU of at
 * least 128 SMs: 32 x 16 tiles in stages of two. The CPU backend has no tiled plan: it reports
 * none. */
static void tiled(const char *what, builder build, int frames, int tiles, uint32_t tw, uint32_t th,
                  uint32_t steps) {
  const bool cuda = wf_device_is_cuda(th_dev0);
  g_tune.tiles = tiles, g_tune.tile_steps = steps;
  if (tiles == WF_CLOTH_TUNE_ON) g_tune.tile[0] = tw, g_tune.tile[1] = th;
  uint32_t want_steps = cuda ? (steps ? steps : 2u) : 0u;
  wf_cloth_info info;
  REQUIRE(probe_info(build, &info));
  if (info.frame_tile[0] != (cuda ? tw : 0) || info.frame_tile[1] != (cuda ? th : 0) ||
      info.frame_tile_steps != want_steps)
    TH_FAIL("%s (tiles %d: %ux%u, steps %u): tiles %ux%u in stages of %u, want %ux%u in %u", what,
            tiles, tw, th, steps, info.frame_tile[0], info.frame_tile[1], info.frame_tile_steps,
            cuda ? tw : 0, cuda ? th : 0, want_steps);
  compare_mode(what, build, frames, PATH_AUTO, WF_CLOTH_FRAME_RESIDENT);
  memset(&g_tune, 0, sizeof g_tune);
}

TEST(tiles_bitwise) {
  static const struct { uint32_t w, h; } ts[] = {{8, 4}, {5, 3}, {7, 6}, {2, 2}, {32, 8}};
  const int on = WF_CLOTH_TUNE_ON;
  for (uint32_t st = 1; st <= 2; st++) {
    g_nu = 32, g_nr = 32, g_substeps = 16;
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
      tiled("classic 32x32", build_classic, 3, on, ts[k].w, ts[k].h, st);
      tiled("busy grid", build_busy, 10, on, ts[k].w, ts[k].h, st);
    }
    tiled("rotated grid", build_rotated, 4, on, 4, 4, st);
    tiled("rotated grid", build_rotated, 4, on, 3, 5, st);
    g_substeps = 15;
    tiled("classic 32x32, 15 substeps", build_classic, 3, on, 8, 8, st);
    g_substeps = 14;
    tiled("classic 32x32, 14 substeps", build_classic, 3, on, 8, 4, st);
    g_substeps = 16;
  }
  wf_device_info di;
  CHECK_OK(wf_device_info_get(th_dev0, &di));
  if (di.is_cuda && di.multiprocessors >= 128) { /* 8 x 16 tiles of 32 x 16, one a SM */
    g_nu = 256, g_nr = 256;
    tiled("classic 256x256, automatic", build_classic, 2, WF_CLOTH_TUNE_AUTO, 32, 16, 0);
  }
  g_nu = 32, g_nr = 32;
}

/* A tuning value out of range fails creation with WF_ERR_INVALID, naming the field and what it
 * may be; nothing is created. */
TEST(tuning_checked) {
  static const struct {
    wf_cloth_tuning t;
    const char *says;
  } bad[] = {{{.lanes = 3}, "tuning.lanes 3 must be 1, 2 or 4"},
             {{.block = 2048}, "tuning.block 2048 must be 1 to 1024"},
             {{.smem = 7}, "tuning.smem 7 must be WF_CLOTH_TUNE_AUTO"},
             {{.one_launch = -1}, "tuning.one_launch -1"},
             {{.tile_steps = 3}, "tuning.tile_steps 3 must be 1 or 2"},
             {{.tile = {8, 4}}, "tuning.tiles is not WF_CLOTH_TUNE_ON"},
             {{.tiles = WF_CLOTH_TUNE_ON, .tile = {1, 4}}, "must each be >= 2"}};
  g_nu = 12, g_nr = 9;
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    wf_cloth *c = NULL;
    g_tune = bad[k].t;
    CHECK_ERROR(build_classic(&c), WF_ERR_INVALID, "cloth 'classic'", bad[k].says);
    CHECK(c == NULL);
  }
  memset(&g_tune, 0, sizeof g_tune);
  g_nu = 32, g_nr = 32;
}

TEST(rotated_grid_odd_substeps_bitwise) { compare("rotated grid", build_rotated, 20); }
TEST(mesh_one_launch_bitwise) { compare("OBJ mesh", build_mesh, 20); }

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(busy_grid_bitwise),
                                  TH_TEST(classic_32_all_paths_bitwise),
                                  TH_TEST(resident_boundary_bitwise),
                                  TH_TEST(frame_readback_every_path),
                                  TH_TEST(rotated_grid_odd_substeps_bitwise),
                                  TH_TEST(mesh_one_launch_bitwise),
                                  TH_TEST(lanes_and_staging_bitwise),
                                  TH_TEST(tiles_bitwise),
                                  TH_TEST(tuning_checked)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
