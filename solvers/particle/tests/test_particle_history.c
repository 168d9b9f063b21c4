/* The contact history's slots (particle_math.h, wfp_slot): each particle's held contacts are kept
 * packed in its first slots, so a search reads only them and one free slot; the slot a contact
 * sits in changes nothing else. Checked through the granular blob (header, 16-byte omega rows,
 * then WFP_HIST_SLOTS wfp_hist a particle), on a pile that settles (contacts start and end). */
#include "harness.h"
#include "scenes.h"
#include "solvers/particle/particle_math.h"
#include "weft/particles.h"

#define HEADER 16 /* the blob's header: magic, count, slots */

static wfp_hist *blob_hist(unsigned char *blob, uint32_t n) {
  return (wfp_hist *)(blob + HEADER + (size_t)n * 16);
}

/* Every particle's held contacts (non-empty keys) are slots 0 .. m - 1, distinct, and the free
 * slots after them are all zeros; returns the contacts held in all. */
static uint64_t check_packed(const wfp_hist *h, uint32_t n) {
  uint64_t held = 0;
  for (uint32_t i = 0; i < n; i++) {
    const wfp_hist *s = &h[(size_t)i * WFP_HIST_SLOTS];
    int m = 0;
    while (m < WFP_HIST_SLOTS && s[m].key != WFP_HIST_EMPTY)
      m++;
    held += (uint64_t)m;
    for (int k = 0; k < m; k++)
      for (int q = k + 1; q < m; q++)
        if (s[k].key == s[q].key)
          TH_FAIL("particle %u: key %u in slots %d and %d", i, s[k].key, k, q);
    for (int k = m; k < WFP_HIST_SLOTS; k++) {
      const wfp_hist e = {0.0f, 0.0f, 0.0f, WFP_HIST_EMPTY, 0.0f, 0.0f, 0.0f, 0.0f};
      if (memcmp(&s[k], &e, sizeof e) != 0) {
        TH_FAIL("particle %u: slot %d after %d held ones is not free", i, k, m);
        return held;
      }
    }
  }
  return held;
}

/* Moves each particle's slots around: reversed, so the held ones end up in the last slots, in the
 * opposite order. */
static void scatter_slots(wfp_hist *h, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    wfp_hist *s = &h[(size_t)i * WFP_HIST_SLOTS], tmp[WFP_HIST_SLOTS];
    memset(tmp, 0, sizeof tmp);
    for (int k = 0; k < WFP_HIST_SLOTS; k++)
      tmp[WFP_HIST_SLOTS - 1 - k] = s[k];
    memcpy(s, tmp, sizeof tmp);
  }
}

/* Particle by particle, the same contacts held with the same bits, in whatever slots. */
static void same_history(const wfp_hist *a, const wfp_hist *b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    for (int k = 0; k < WFP_HIST_SLOTS; k++) {
      const wfp_hist *x = &a[(size_t)i * WFP_HIST_SLOTS + k];
      if (x->key == WFP_HIST_EMPTY) continue;
      int q = 0;
      while (q < WFP_HIST_SLOTS && b[(size_t)i * WFP_HIST_SLOTS + q].key != x->key)
        q++;
      if (q == WFP_HIST_SLOTS || memcmp(x, &b[(size_t)i * WFP_HIST_SLOTS + q], sizeof *x) != 0) {
        TH_FAIL("particle %u: contact %u not held alike", i, x->key);
        return;
      }
    }
}

/* The pile settles over 12 frames of 32 substeps: after every frame the slots are packed. A twin
 * run has its history read and written back with the slots reversed after every frame (the blob
 * may place them anywhere: it is packed as it is set); both runs stay bitwise equal (positions,
 * velocities, angular velocities: no tolerance) and hold the same contacts with the same bits. */
static void packed_and_placement_free(int model) {
  scene_contact_model = model;
  wf_particles *a, *b;
  REQUIRE(scene_pile(th_dev0, 6, 4, false, &a) == WF_OK);
  REQUIRE(scene_pile(th_dev0, 6, 4, false, &b) == WF_OK);
  scene_contact_model = WF_CONTACT_DEM;
  uint32_t n = wf_particles_count(a);
  size_t gb = wf_particles_granular_state_bytes(a);
  unsigned char *ga = malloc(gb), *gb2 = malloc(gb);
  float *sa = malloc((size_t)n * 48), *sb = malloc((size_t)n * 48);
  REQUIRE(ga && gb2 && sa && sb);
  uint64_t most = 0;
  for (int f = 0; f < 12; f++) {
    CHECK_OK(wf_particles_step_frames(a, 1));
    CHECK_OK(wf_particles_step_frames(b, 1));
    CHECK_OK(wf_particles_granular_state_get(a, ga, gb));
    CHECK_OK(wf_particles_granular_state_get(b, gb2, gb));
    uint64_t held = check_packed(blob_hist(ga, n), n);
    most = held > most ? held : most;
    check_packed(blob_hist(gb2, n), n);
    same_history(blob_hist(ga, n), blob_hist(gb2, n), n);
    same_history(blob_hist(gb2, n), blob_hist(ga, n), n);
    scatter_slots(blob_hist(gb2, n), n);
    CHECK_OK(wf_particles_granular_state_set(b, gb2, gb));
    CHECK_OK(wf_particles_download(a, (float(*)[4])sa, (float(*)[4])(sa + 4 * n)));
    CHECK_OK(wf_particles_download(b, (float(*)[4])sb, (float(*)[4])(sb + 4 * n)));
    CHECK(memcmp(sa, sb, (size_t)n * 32) == 0);
    CHECK(memcmp(ga + HEADER, gb2 + HEADER, (size_t)n * 16) == 0); /* omega */
  }
  /* the pile touches: the check saw contacts held (else it proved nothing) */
  CHECK(most > n);
  CHECK_OK(wf_particles_granular_state_get(b, gb2, gb));
  check_packed(blob_hist(gb2, n), n);
  free(ga), free(gb2), free(sa), free(sb);
  wf_particles_destroy(a);
  wf_particles_destroy(b);
}

TEST(slots_packed_and_placement_free_linear) { packed_and_placement_free(WF_CONTACT_DEM); }
TEST(slots_packed_and_placement_free_hertz) { packed_and_placement_free(WF_CONTACT_HERTZ); }

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(slots_packed_and_placement_free_linear),
      TH_TEST(slots_packed_and_placement_free_hertz),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
