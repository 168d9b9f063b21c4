/* CPU vs CUDA parity: the same scenes on cpu:0 and cuda:0 give bitwise-identical states and
 * forces on colliders (both backends are built without FMA contraction, the math uses only
 * correctly rounded operations, and the forces are integer sums). Needs a CUDA device; exits 77
 * (skipped) without one. Tolerance: none. */
#include "harness.h"
#include "scenes.h"
#include "weft/particles.h"

/* State after `frames` frames: pos, vel, omega (48 bytes a particle), then the last frame's
 * force and torque on each collider (6 doubles each, up to 64: zero past the last). Scenes: the
 * pile and the colliders with the default (linear, history, rolling) model, the pile with Hertz
 * contacts. */
#define FORCE_BYTES (64 * 6 * sizeof(double))
static float *run_on(const char *device, int which, int frames, uint32_t *count) {
  wf_device *dev;
  if (wf_device_get(device, &dev) != WF_OK) return NULL;
  wf_particles *ps;
  scene_contact_model = which == 2 ? WF_CONTACT_HERTZ : WF_CONTACT_DEM;
  wf_status st = which != 1 ? scene_pile(dev, 4, 4, false, &ps) : scene_colliders(dev, false, &ps);
  if (st == WF_OK && which == 2) { /* a softer modulus: 0.52 kg beads at 32 substeps a frame */
    wf_particle_material m = wf_particle_material_default();
    m.young = 1e6f, m.restitution = 0.3f, m.rolling_friction = 0.05f;
    st = wf_particles_set_material(ps, 0, &m);
  }
  if (st != WF_OK) {
    TH_FAIL("%s: %s", device, wf_last_error());
    return NULL;
  }
  uint32_t n = wf_particles_count(ps);
  float *s = calloc(1, (size_t)n * 48 + FORCE_BYTES);
  st = wf_particles_step_frames(ps, frames);
  if (st == WF_OK) st = wf_particles_download(ps, (float(*)[4])s, (float(*)[4])(s + 4 * n));
  if (st == WF_OK) st = wf_particles_download_omega(ps, (float(*)[4])(s + 8 * n));
  double *f = (double *)(s + 12 * (size_t)n);
  for (uint32_t k = 0; st == WF_OK && k < 64; k++, f += 6)
    if (wf_particles_collider_force(ps, k, f, f + 3) != WF_OK) break; /* past the last */
  wf_clear_error();
  if (st != WF_OK) TH_FAIL("%s: %s", device, wf_last_error());
  wf_particles_destroy(ps);
  *count = n;
  return s;
}

TEST(cpu_cuda_bitwise) {
  const char *names[] = {"pile", "colliders", "pile (Hertz)"};
  for (int k = 0; k < 3; k++) {
    uint32_t n1 = 0, n2 = 0;
    float *a = run_on("cpu:0", k, 30, &n1), *b = run_on("cuda:0", k, 30, &n2);
    REQUIRE(a && b && n1 == n2);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < (size_t)n1 * 12; i++)
      if (memcmp(&a[i], &b[i], 4) != 0 && diff++ == 0) first = i;
    if (diff)
      TH_FAIL("%s: %zu of %u floats differ; first at %zu: cpu %.9g, cuda %.9g", names[k], diff,
              n1 * 12, first, a[first], b[first]);
    else
      printf("  %s: %u particles, bitwise equal after 30 frames\n", names[k], n1);
    if (memcmp(a + 12 * (size_t)n1, b + 12 * (size_t)n1, FORCE_BYTES) != 0)
      TH_FAIL("%s: the forces on the colliders differ", names[k]);
    free(a), free(b);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(cpu_cuda_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
