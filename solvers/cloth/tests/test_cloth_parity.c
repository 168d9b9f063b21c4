/* CPU vs CUDA parity: the busy scene (wind, drag, lift, four colliders, attachments, pins) on
 * cpu:0 and cuda:0 gives bitwise-identical states for both integrators (both backends are built
 * without FMA contraction and the math uses only correctly rounded operations). Registered with
 * `--device cuda`, so it exits 77 (skipped) without a CUDA device. Tolerance: none. */
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

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(cpu_cuda_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
