/* CPU vs CUDA parity: the busy scene (wind, drag, lift, four colliders, attachments, pins), the
 * stacked sheets with self-collision, and a net coupled with falling particles, on cpu:0 and
 * cuda:0, give bitwise-identical states for both integrators (both backends are built without
 * FMA contraction and the math uses only correctly rounded operations; every vertex and particle
 * gathers its contacts in the grids' fixed order). Registered with `--device cuda`, so it exits
 * 77 (skipped) without a CUDA device. Tolerance: none. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

static float *run_on(wf_device *dev, int integrator, uint32_t *n) {
  wf_cloth *c;
  if (scene_busy(dev, integrator, false, &c) != WF_OK) {
    TH_FAIL("%s: %s", wf_device_name(dev), wf_last_error());
    return NULL;
  }
  float *s = NULL;
  if (wf_cloth_step_frames(c, 30) == WF_OK) s = scene_state(c, n);
  if (!s) TH_FAIL("%s: %s", wf_device_name(dev), wf_last_error());
  wf_cloth_destroy(c);
  return s;
}

TEST(cpu_cuda_bitwise) {
  CUDA_ONLY("compares cpu:0 with cuda:0");
  for (int integrator = 0; integrator < 2; integrator++) {
    uint32_t n1 = 0, n2 = 0;
    float *a = run_on(th_host, integrator, &n1), *b = run_on(th_dev0, integrator, &n2);
    REQUIRE(a && b && n1 == n2);
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

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(cpu_cuda_bitwise),
                                  TH_TEST(self_collision_cpu_cuda_bitwise),
                                  TH_TEST(coupled_cpu_cuda_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
