/* CPU vs CUDA parity: the busy scene (wind, drag, lift, four colliders, attachments, pins), the
 * stacked sheets with self-collision, and a net coupled with falling particles, on cpu:0 and
 * cuda:0, give bitwise-identical states (and the busy scene's forces on its colliders) for both
 * integrators (both backends are built without
 * FMA contraction and the math uses only correctly rounded operations; every vertex and particle
 * gathers its contacts in the grids' fixed order). Registered with `--device cuda`, so it exits
 * 77 (skipped) without a CUDA device. The mass-spring one-launch frame is compared too at the
 * sizes where CUDA runs it resident (a thread per vertex, state in registers): the bench's setup
 * at 64 x 64, at the largest resident grid of the device and one row above (grid-stride), with
 * the positions the CUDA frame wrote straight into pinned host memory (per-frame readback)
 * compared as well; and the XPBD one-launch frame (one block, grid-stride) likewise; and a vertex
 * dragged towards a moving target (wf_cloth_drag_set) on each of those frame paths. Tolerance:
 * none. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

/* The state after 30 frames (8 floats a vertex) and the last frame's force and torque on each
 * collider (forces[64][6], zero past the last). */
static float *run_on(wf_device *dev, int integrator, uint32_t *n, double forces[64][6]) {
  wf_cloth *c;
  if (scene_busy(dev, integrator, false, &c) != WF_OK) {
    TH_FAIL("%s: %s", wf_device_name(dev), wf_last_error());
    return NULL;
  }
  float *s = NULL;
  if (wf_cloth_measure_collider_forces(c, true) == WF_OK && wf_cloth_step_frames(c, 30) == WF_OK)
    s = scene_state(c, n);
  if (!s) TH_FAIL("%s: %s", wf_device_name(dev), wf_last_error());
  memset(forces, 0, 64 * sizeof forces[0]);
  for (uint32_t k = 0; s && k < 64; k++)
    if (wf_cloth_collider_force(c, k, forces[k], forces[k] + 3) != WF_OK) break; /* past the last */
  wf_clear_error();
  wf_cloth_destroy(c);
  return s;
}

TEST(cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  for (int integrator = 0; integrator < 2; integrator++) {
    uint32_t n1 = 0, n2 = 0;
    static double fa[64][6], fb[64][6];
    float *a = run_on(th_host, integrator, &n1, fa), *b = run_on(th_dev0, integrator, &n2, fb);
    REQUIRE(a && b && n1 == n2);
    if (memcmp(fa, fb, sizeof fa) != 0)
      TH_FAIL("%s: the forces on the colliders differ", integrator ? "xpbd" : "springs");
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < (size_t)n1 * 8; i++)
      if (memcmp(&a[i], &b[i], 4) != 0 && diff++ == 0) first = i;
    const char *name = integrator ? "xpbd" : "springs";
    if (diff)
      TH_FAIL("%s: %zu of %u floats differ; first at %zu: cpu %.9g, cuda %.9g", name, diff, n1 * 8,
              first, a[first], b[first]);
    else
      printf("  %s: %u vertices, bitwise equal after 30 frames\n", name, n1);
    free(a), free(b);
  }
}

static int compare(const char *what, const float *a, const float *b, size_t n) {
  size_t diff = 0, first = 0;
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], 4) != 0 && diff++ == 0) first = i;
  if (diff)
    TH_FAIL("%s: %zu of %zu floats differ; first at %zu: cpu %.9g, cuda %.9g", what, diff, n, first,
            a[first], b[first]);
  else
    printf("  %s: %zu floats bitwise equal\n", what, n);
  return diff == 0;
}

/* Self-collision: the stacked sheets, 40 frames (the upper one lands at ~10). */
TEST(self_collision_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  for (int integrator = 0; integrator < 2; integrator++) {
    float *s[2] = {NULL, NULL};
    uint32_t n[2] = {0, 0};
    wf_device *devs[2] = {th_host, th_dev0};
    for (int k = 0; k < 2; k++) {
      wf_cloth *c;
      if (scene_stacked(devs[k], integrator, true, false, &c) != WF_OK) {
        TH_FAIL("%s: %s", wf_device_name(devs[k]), wf_last_error());
        continue;
      }
      if (wf_cloth_step_frames(c, 40) == WF_OK) s[k] = scene_state(c, &n[k]);
      if (!s[k]) TH_FAIL("%s: %s", wf_device_name(devs[k]), wf_last_error());
      wf_cloth_destroy(c);
    }
    if (s[0] && s[1] && n[0] == n[1])
      compare(integrator ? "self-collision xpbd" : "self-collision springs", s[0], s[1],
              (size_t)n[0] * 8);
    free(s[0]), free(s[1]);
  }
}

/* Coupling: three particles falling onto a pinned net, 40 frames; cloth and particle states. */
TEST(coupled_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  const float pos[3][3] = {{0.01f, 0.7f, -0.02f}, {0.2f, 0.8f, 0.1f}, {-0.25f, 0.65f, 0.2f}};
  const float vel[3][3] = {{0.0f, 0.0f, 0.0f}, {0.0f, -1.0f, 0.0f}, {0.3f, 0.0f, 0.0f}};
  for (int integrator = 0; integrator < 2; integrator++) {
    static float cs[2][289 * 8], pst[2][3 * 8];
    wf_device *devs[2] = {th_host, th_dev0};
    int ok = 1;
    for (int k = 0; k < 2 && ok; k++) {
      wf_stream *s = NULL;
      wf_cloth *c = NULL;
      wf_particles *ps = NULL;
      ok = scene_coupled(devs[k], integrator, true, false, -9.81f, 3, pos, vel, 0.3f, &s, &c,
                         &ps) == WF_OK &&
           wf_particles_step_frames(ps, 40) == WF_OK &&
           wf_cloth_download(c, (float(*)[4])cs[k], (float(*)[4])(cs[k] + 289 * 4)) == WF_OK &&
           wf_particles_download(ps, (float(*)[4])pst[k], (float(*)[4])(pst[k] + 3 * 4)) == WF_OK;
      if (!ok) TH_FAIL("%s: %s", wf_device_name(devs[k]), wf_last_error());
      wf_particles_destroy(ps);
      wf_cloth_destroy(c);
      if (s) wf_stream_destroy(s);
    }
    if (!ok) continue;
    compare(integrator ? "coupled xpbd: cloth" : "coupled springs: cloth", cs[0], cs[1], 289 * 8);
    compare(integrator ? "coupled xpbd: particles" : "coupled springs: particles", pst[0], pst[1],
            3 * 8);
  }
}

/* The integrator and tuning of classic() (the mass-spring setup unless a test changes them), and
 * whether classic_case drags a vertex (wf_cloth_drag_set) with a target that moves every frame. */
static int g_integrator = WF_CLOTH_SPRINGS;
static wf_cloth_tuning g_tune;
static bool g_drag;

/* classic_case's drag before frame f of an nu x nr grid: the middle vertex (on a corner of the
 * tiled frame's tiles at 256 x 256), then one inside a tile, then none; stiff (capped). */
static wf_status classic_drag(wf_cloth *c, int nu, int nr, int f, int frames) {
  if (f >= frames - 1 && frames > 2) return wf_cloth_drag_clear(c);
  uint32_t v = (uint32_t)(nr / 2) * (uint32_t)nu + (uint32_t)(nu / 2);
  if (f >= frames / 2) v += 3u * (uint32_t)nu + 5u;
  const double t[3] = {0.1 + 0.05 * f, 0.3, 0.2 - 0.03 * f};
  return wf_cloth_drag_set(c, v, t, f & 1 ? 500.0f : 5e6f, 2.0f);
}

/* The bench's setup (bench/cloth_bench.c) on an nu x nr grid, with wind, drag and a sphere
 * (XPBD: compliance 1e-3, 4 iterations). */
static wf_status classic(wf_device *dev, int nu, int nr, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = "classic";
  d.integrator = g_integrator;
  d.iterations = 4;
  d.tuning = g_tune;
  d.material.stretch_compliance = d.material.shear_compliance = 1e-3f;
  d.material.bend_compliance = 1e-3f;
  d.wind[0] = 1.0f;
  d.material.drag = 0.5f;
  d.material.particle_mass = 0.1f;
  d.material.coefficients = true;
  d.material.stretch_stiffness = d.material.shear_stiffness = d.material.bend_stiffness = 1000.0f;
  d.material.damping = 10.0f;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = nu, g.resolution[1] = nr;
  g.size[0] = 0.1f * (float)(nu - 1), g.size[1] = 0.1f * (float)(nr - 1);
  g.center[1] = 0.0f;
  d.devices[0] = dev;
  wf_status st = wf_cloth_create_grid(&d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-left", NULL);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top-right", NULL);
  wf_collider_desc s = scene_sphere(0.0f, -0.3f, 0.0f, 0.25f);
  if (st == WF_OK) st = wf_cloth_add_collider(*out, &s, NULL);
  return st;
}

/* frames of the classic grid on cpu:0 and cuda:0, the CUDA one reading back every frame into
 * pinned memory; state and readback compared bitwise; want: the CUDA frame kernel. */
static void classic_case(int nu, int nr, int frames, uint32_t want) {
  float *s[2] = {NULL, NULL};
  uint32_t n[2] = {0, 0};
  wf_device *devs[2] = {th_host, th_dev0};
  wf_buffer *rb = NULL;
  char what[96];
  snprintf(what, sizeof what, "classic %dx%d %s", nu, nr, g_integrator ? "xpbd" : "springs");
  for (int k = 0; k < 2; k++) {
    wf_cloth *c = NULL;
    wf_status st = classic(devs[k], nu, nr, &c);
    if (st == WF_OK && k == 1) {
      wf_cloth_info info;
      st = wf_cloth_info_get(c, &info);
      if (st == WF_OK) CHECK_EQ_INT(info.frame_kernel, want);
      if (st == WF_OK)
        st = wf_buffer_create(th_host, (size_t)nu * nr * 16, WF_BUFFER_PINNED, NULL, &rb);
      if (st == WF_OK) st = wf_cloth_set_frame_readback(c, rb, 0);
      if (st == WF_OK) st = wf_cloth_info_get(c, &info);
      if (st == WF_OK) /* the one-launch frames write it themselves; other frames copy it */
        CHECK_EQ_INT(info.frame_readback_direct, want != WF_CLOTH_FRAME_PER_SUBSTEP);
    }
    for (int f = 0; f < frames && st == WF_OK; f++) {
      if (g_drag) st = classic_drag(c, nu, nr, f, frames);
      if (st == WF_OK) st = wf_cloth_step_frames(c, 1);
    }
    if (st == WF_OK) s[k] = scene_state(c, &n[k]);
    if (!s[k]) TH_FAIL("%s: %s", wf_device_name(devs[k]), wf_last_error());
    wf_cloth_destroy(c);
  }
  if (s[0] && s[1] && n[0] == n[1]) {
    compare(what, s[0], s[1], (size_t)n[0] * 8);
    if (rb) compare("  its per-frame readback", s[0], wf_buffer_ptr(rb), (size_t)n[0] * 4);
  }
  if (rb) wf_buffer_destroy(rb, NULL);
  free(s[0]), free(s[1]);
}

TEST(one_launch_frames_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  classic_case(64, 64, 10, WF_CLOTH_FRAME_RESIDENT);
  wf_cloth *probe = NULL;
  wf_cloth_info info;
  CHECK_OK(classic(th_dev0, 4, 4, &probe));
  REQUIRE(probe);
  CHECK_OK(wf_cloth_info_get(probe, &info));
  wf_cloth_destroy(probe);
  uint32_t max = info.resident_max;
  REQUIRE(max >= 256 && max % 256 == 0);
  printf("  cuda resident_max %u: 256x%u resident, 256x%u grid-stride\n", max, max / 256,
         max / 256 + 1);
  classic_case(256, (int)(max / 256), 2, WF_CLOTH_FRAME_RESIDENT);
  classic_case(256, (int)(max / 256) + 1, 2, WF_CLOTH_FRAME_STRIDE);
}

/* The XPBD one-launch frame (cloth_xpbd_frame.h), 4 iterations: one block at 32 x 32 and at
 * the resident limit (48 x 48, its state in shared memory on CUDA), grid-stride one row above
 * it, at 128 x 128 and with
 * tuning.resident OFF at 48 x 48 (in blocks of 256 and of 32 threads: 9 and 72 bands), each
 * against the CPU backend's one-launch frame with the per-frame readback. */
TEST(xpbd_frames_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  g_integrator = WF_CLOTH_XPBD;
  g_tune.one_launch = WF_CLOTH_TUNE_ON; /* the CPU backend's one-launch frame too */
  classic_case(32, 32, 6, WF_CLOTH_FRAME_RESIDENT);
  classic_case(48, 48, 3, WF_CLOTH_FRAME_RESIDENT);
  classic_case(48, 49, 3, WF_CLOTH_FRAME_STRIDE);
  classic_case(128, 128, 2, WF_CLOTH_FRAME_STRIDE);
  g_tune.resident = WF_CLOTH_TUNE_OFF;
  classic_case(48, 48, 3, WF_CLOTH_FRAME_STRIDE);
  g_tune.block = 32; /* 72 bands of 32 vertices, neighbour barriers */
  classic_case(48, 48, 3, WF_CLOTH_FRAME_STRIDE);
  memset(&g_tune, 0, sizeof g_tune);
  g_integrator = WF_CLOTH_SPRINGS;
}

/* A dragged vertex (wf_cloth_drag_set) with a target moving every frame, on every CUDA frame
 * path: mass-spring resident (lanes), tiled (256 x 256, the vertex on a tile corner) and
 * grid-stride, XPBD's one block and grid-stride, and the kernels per substep; the busy scene's
 * per-substep frame is covered by one_launch OFF. */
TEST(drag_cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  g_drag = true;
  classic_case(64, 64, 6, WF_CLOTH_FRAME_RESIDENT);
  classic_case(256, 256, 2, WF_CLOTH_FRAME_RESIDENT);
  wf_cloth *probe = NULL;
  wf_cloth_info info;
  CHECK_OK(classic(th_dev0, 4, 4, &probe));
  REQUIRE(probe);
  CHECK_OK(wf_cloth_info_get(probe, &info));
  wf_cloth_destroy(probe);
  classic_case(256, (int)(info.resident_max / 256) + 1, 2, WF_CLOTH_FRAME_STRIDE);
  g_tune.one_launch = WF_CLOTH_TUNE_OFF;
  classic_case(48, 48, 6, WF_CLOTH_FRAME_PER_SUBSTEP);
  g_integrator = WF_CLOTH_XPBD;
  classic_case(48, 48, 6, WF_CLOTH_FRAME_PER_SUBSTEP);
  g_tune.one_launch = WF_CLOTH_TUNE_ON;
  classic_case(32, 32, 6, WF_CLOTH_FRAME_RESIDENT);
  classic_case(64, 65, 4, WF_CLOTH_FRAME_STRIDE);
  memset(&g_tune, 0, sizeof g_tune);
  g_integrator = WF_CLOTH_SPRINGS;
  g_drag = false;
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(cpu_cuda_bitwise),
                                  TH_TEST(self_collision_cpu_cuda_bitwise),
                                  TH_TEST(coupled_cpu_cuda_bitwise),
                                  TH_TEST(one_launch_frames_cpu_cuda_bitwise),
                                  TH_TEST(xpbd_frames_cpu_cuda_bitwise),
                                  TH_TEST(drag_cpu_cuda_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
