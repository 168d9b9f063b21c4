/* CPU vs CUDA parity: the same scenes on cpu:0 and cuda:0 give bitwise-identical states and
 * energies (wf_particles_energy_get: its grid and rows computed on the device) and forces on
 * colliders (both backends are built without FMA contraction, the math uses only correctly
 * rounded operations, and the forces are integer sums). Needs a CUDA device; exits 77 (skipped)
 * without one. Tolerance: none. */
#include "harness.h"
#include "scenes.h"
#include "weft/particles.h"

/* State after `frames` frames: pos, vel, omega (48 bytes a particle), then the last frame's
 * force and torque on each collider (6 doubles each, up to 64: zero past the last). Scenes: the
 * pile and the colliders with the default (linear, history, rolling) model, the pile with Hertz
 * contacts, the pile and the colliders with XPBD contacts (rotation, friction and rolling
 * resistance on velocities), and the pile with particles born during the run
 * (wf_particles_add_timed) falling onto it. */
#define FORCE_BYTES (64 * 6 * sizeof(double))
static float *run_on(const char *device, int which, int frames, uint32_t *count,
                     wf_particles_energy *e) {
  wf_device *dev;
  if (wf_device_get(device, &dev) != WF_OK) return NULL;
  wf_particles *ps;
  scene_contact_model = which == 2                 ? WF_CONTACT_HERTZ
                        : which == 3 || which == 4 ? WF_CONTACT_XPBD
                                                   : WF_CONTACT_DEM;
  wf_status st = which != 1 && which != 4 ? scene_pile(dev, 4, 4, false, &ps)
                                          : scene_colliders(dev, false, &ps);
  scene_contact_model = WF_CONTACT_DEM;
  if (st == WF_OK && which == 2) { /* a softer modulus: 0.52 kg beads at 32 substeps a frame */
    wf_particle_material m = wf_particle_material_default();
    m.young = 1e6f, m.restitution = 0.3f, m.rolling_friction = 0.05f;
    st = wf_particles_set_material(ps, 0, &m);
  }
  if (st == WF_OK && which == 5) { /* a pour: 4 layers of 3 x 3 born at 0.1, 0.18, ... s */
    float pos[36][4], vel[36][4], birth[36];
    for (int i = 0; i < 36; i++) {
      int l = i / 9;
      birth[i] = 0.1f + 0.08f * (float)l;
      pos[i][0] = 0.12f * (float)(i % 3 - 1), pos[i][2] = 0.12f * (float)(i / 3 % 3 - 1);
      pos[i][1] = 0.8f + 1.5f * birth[i], pos[i][3] = 0.04f; /* the feed line above y = 0.8 */
      vel[i][0] = vel[i][2] = 0.0f, vel[i][1] = -1.5f, vel[i][3] = 3.0f;
    }
    st = wf_particles_add_timed(ps, 36, (const float(*)[4])pos, (const float(*)[4])vel, birth, 0,
                                NULL);
  }
  if (st != WF_OK) {
    TH_FAIL("%s: %s", device, wf_last_error());
    return NULL;
  }
  uint32_t n = wf_particles_count(ps);
  float *s = calloc(1, (size_t)n * 48 + FORCE_BYTES);
  st = wf_particles_measure_collider_forces(ps, true);
  if (st == WF_OK) st = wf_particles_step_frames(ps, frames);
  if (st == WF_OK) st = wf_particles_download(ps, (float(*)[4])s, (float(*)[4])(s + 4 * n));
  if (st == WF_OK) st = wf_particles_download_omega(ps, (float(*)[4])(s + 8 * n));
  if (st == WF_OK) st = wf_particles_energy_get(ps, e);
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
  const char *names[] = {"pile",        "colliders",        "pile (Hertz)",
                         "pile (XPBD)", "colliders (XPBD)", "pile and a pour"};
  for (int k = 0; k < 6; k++) {
    uint32_t n1 = 0, n2 = 0;
    wf_particles_energy ea, eb;
    float *a = run_on("cpu:0", k, 30, &n1, &ea), *b = run_on("cuda:0", k, 30, &n2, &eb);
    REQUIRE(a && b && n1 == n2);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < (size_t)n1 * 12; i++)
      if (memcmp(&a[i], &b[i], 4) != 0 && diff++ == 0) first = i;
    if (diff)
      TH_FAIL("%s: %zu of %u floats differ; first at %zu: cpu %.9g, cuda %.9g", names[k], diff,
              n1 * 12, first, a[first], b[first]);
    else
      printf("  %s: %u particles, bitwise equal after 30 frames\n", names[k], n1);
    if (memcmp(&ea, &eb, sizeof ea) != 0)
      TH_FAIL("%s: energies differ: cpu total %.17g elastic %.17g shear %.17g, cuda %.17g %.17g "
              "%.17g",
              names[k], ea.total, ea.elastic, ea.shear, eb.total, eb.elastic, eb.shear);
    if (memcmp(a + 12 * (size_t)n1, b + 12 * (size_t)n1, FORCE_BYTES) != 0)
      TH_FAIL("%s: the forces on the colliders differ", names[k]);
    free(a), free(b);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(cpu_cuda_bitwise)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
