/* The particle solver's API: bad input is refused with an error naming the object and field,
 * device flags report a particle that blew up, the emitter lattice and jitter are deterministic,
 * and device memory stays within 100 bytes per particle. */
#include "harness.h"
#include "weft/particles.h"

static wf_particles *make(uint32_t capacity) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "sand";
  d.capacity = capacity;
  wf_particles *ps = NULL;
  d.devices[0] = th_dev0;
  if (wf_particles_create(&d, &ps) != WF_OK) TH_FAIL("create: %s", wf_last_error());
  return ps;
}

TEST(bad_input_names_the_field) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "sand";
  wf_particles *ps = NULL;
  d.contact_model = 7;
  d.devices[0] = th_dev0;
  CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_INVALID, "'sand'", "contact_model");
  CHECK(ps == NULL);
  d.contact_model = WF_CONTACT_XPBD;
  d.relaxation = 0.0f;
  d.devices[0] = th_dev0;
  CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_INVALID, "'sand'", "relaxation");
  d.relaxation = 1.0f;
  d.capacity = 10;
  d.substeps = 0;
  d.devices[0] = th_dev0;
  CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_INVALID, "'sand'", "substeps");
  d.substeps = 4;
  d.gravity[1] = NAN;
  d.devices[0] = th_dev0;
  CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_INVALID, "gravity");
  d.gravity[1] = -9.81f;
  d.tuning.contact_min_blocks = 2; /* 3 to 8, or -1 */
  CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_INVALID, "'sand'",
              "tuning.contact_min_blocks 2 must be 3 to 8, or -1");
  CHECK(ps == NULL);
  d.tuning.contact_min_blocks = -1; /* no cap: valid (the CPU backend ignores it) */
  CHECK_OK(wf_particles_create(&d, &ps));
  wf_particles_destroy(ps);

  ps = make(10);
  REQUIRE(ps);
  float p[2][4] = {{0, 0, 0, 0.1f}, {1, 0, 0, -0.1f}};
  CHECK_ERROR(wf_particles_add(ps, 2, p, NULL, 0, NULL), WF_ERR_INVALID, "'sand'", "pos[1].w",
              "radius", "-0.1");
  p[1][3] = 0.1f;
  p[1][1] = NAN;
  CHECK_ERROR(wf_particles_add(ps, 2, p, NULL, 0, NULL), WF_ERR_INVALID, "pos[1]", "not finite");
  CHECK_ERROR(wf_particles_add(ps, 0, p, NULL, 0, NULL), WF_ERR_INVALID, "zero particles");
  CHECK_ERROR(wf_particles_add(ps, 1, p, NULL, 3, NULL), WF_ERR_INVALID, "material 3");
  CHECK(wf_particles_count(ps) == 0); /* nothing half-added */

  wf_particles_emitter e = wf_particles_emitter_default();
  e.name = "hopper";
  e.radius = 0.1f;
  e.spacing = 0.15f;
  CHECK_ERROR(wf_particles_emit(ps, &e, NULL, NULL), WF_ERR_INVALID, "emitter 'hopper'", "spacing",
              "overlap");
  e.spacing = 0.2f;
  e.radius = -1.0f;
  CHECK_ERROR(wf_particles_emit(ps, &e, NULL, NULL), WF_ERR_INVALID, "emitter 'hopper'", "radius");
  e.radius = 0.1f;
  e.center[2] = NAN;
  CHECK_ERROR(wf_particles_emit(ps, &e, NULL, NULL), WF_ERR_INVALID, "emitter 'hopper'", "center");
  e.center[2] = 0.0f;
  e.jitter = 0.1f;
  CHECK_ERROR(wf_particles_emit(ps, &e, NULL, NULL), WF_ERR_INVALID, "emitter 'hopper'", "jitter");
  e.jitter = 0.0f;
  e.half_extents[1] = 0.05f;
  CHECK_ERROR(wf_particles_emit(ps, &e, NULL, NULL), WF_ERR_INVALID, "emitter 'hopper'",
              "zero particles");
  e.half_extents[1] = 0.5f;

  wf_collider_desc c = wf_collider_desc_default();
  c.name = "floor";
  c.normal[1] = 0.0f;
  CHECK_ERROR(wf_particles_add_collider(ps, &c, NULL), WF_ERR_INVALID, "collider 'floor'",
              "normal");
  c = wf_collider_desc_default();
  c.name = "ball";
  c.type = WF_COLLIDER_SPHERE;
  c.radius = -2.0f;
  CHECK_ERROR(wf_particles_add_collider(ps, &c, NULL), WF_ERR_INVALID, "collider 'ball'", "radius");
  c.radius = 1.0f;
  c.restitution = 1.5f;
  CHECK_ERROR(wf_particles_add_collider(ps, &c, NULL), WF_ERR_INVALID, "collider 'ball'",
              "restitution");

  wf_particle_material m = wf_particle_material_default();
  m.friction = -1.0f;
  CHECK_ERROR(wf_particles_add_material(ps, &m, NULL), WF_ERR_INVALID, "material 1", "friction");
  wf_particles_params pp = wf_particles_params_get(ps);
  pp.frame_dt = 0.0f;
  CHECK_ERROR(wf_particles_params_set(ps, &pp), WF_ERR_INVALID, "'sand'", "frame_dt");
  wf_particles_destroy(ps);
}

/* A particle given an absurd velocity leaves the grid's range (and then becomes inf); the device
 * flag is read back with the data and the message names the particle. */
TEST(blow_up_is_reported) {
  wf_particles *ps = make(4);
  REQUIRE(ps);
  float p[3][4] = {{0, 0, 0, 0.1f}, {1, 0, 0, 0.1f}, {2, 0, 0, 0.1f}};
  float v[3][4] = {{0, 0, 0, 1}, {0, 0, 0, 1}, {3e38f, 0, 0, 1}};
  CHECK_OK(wf_particles_add(ps, 3, p, v, 0, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 2));
  float out[3][4];
  CHECK_ERROR(wf_particles_download(ps, out, NULL), WF_ERR_INVALID, "particle 2");
  CHECK_ERROR(wf_particles_check(ps), WF_ERR_INVALID, "particle 2");
  CHECK(out[0][1] < 0.0f); /* the data still came back */
  wf_particles_destroy(ps);
}

/* The lattice: a 4 x 3 x 2 box at spacing 0.1 around (1, 2, 3); jitter within ±jitter per axis,
 * depending only on (seed, global id); the sphere keeps the points inside its radius. */
TEST(emitter_lattice) {
  wf_particles *ps = make(100);
  REQUIRE(ps);
  wf_particles_emitter e = wf_particles_emitter_default();
  e.center[0] = 1, e.center[1] = 2, e.center[2] = 3;
  e.half_extents[0] = 0.2f, e.half_extents[1] = 0.15f, e.half_extents[2] = 0.1f;
  e.radius = 0.04f;
  e.spacing = 0.1f;
  e.velocity[2] = -1.0f;
  uint32_t first, n;
  CHECK_OK(wf_particles_emit(ps, &e, &first, &n));
  CHECK(first == 0 && n == 24);
  float p[100][4], v[100][4];
  CHECK_OK(wf_particles_download(ps, p, v));
  CHECK_NEAR(p[0][0], 0.85, 1e-6);
  CHECK_NEAR(p[0][1], 1.9, 1e-6);
  CHECK_NEAR(p[0][2], 2.95, 1e-6);
  CHECK_NEAR(p[23][0], 1.15, 1e-6);
  CHECK_NEAR(p[23][2], 3.05, 1e-6);
  CHECK(p[5][3] == 0.04f && v[5][2] == -1.0f);
  CHECK_NEAR(1.0 / v[5][3], 1000.0 * 4.0 / 3.0 * 3.14159265358979 * 0.04 * 0.04 * 0.04, 1e-6);
  e.jitter = 0.02f;
  e.seed = 9;
  e.center[0] = 5;
  CHECK_OK(wf_particles_emit(ps, &e, &first, &n));
  CHECK(first == 24 && n == 24);
  CHECK_OK(wf_particles_download(ps, p, v));
  int moved = 0;
  for (int i = 0; i < 24; i++) {
    for (int k = 0; k < 3; k++) {
      float d = p[24 + i][k] - p[i][k] - (k == 0 ? 4.0f : 0.0f);
      CHECK(fabsf(d) <= 0.02f + 1e-5f);
      moved += fabsf(d) > 1e-4f;
    }
  }
  CHECK(moved > 60);
  e.shape = WF_EMIT_SPHERE;
  e.jitter = 0.0f;
  e.sphere_radius = 0.2f;
  CHECK_OK(wf_particles_emit(ps, &e, &first, &n));
  CHECK(n > 20 && n < 64); /* 4³ cells in the bounding cube, the corners cut away */
  wf_particles_destroy(ps);
}

/* Particles beyond the capacity grow every buffer and recapture the frame; the particles already
 * there keep their state, and the run equals one that had the room from the start, bit for bit. */
TEST(capacity_grows) {
  wf_particles *ps[2] = {make(10), make(4096)};
  REQUIRE(ps[0] && ps[1]);
  wf_collider_desc floor = wf_collider_desc_default();
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = 0.05f, e.spacing = 0.1f, e.jitter = 0.01f, e.seed = 3;
  for (int k = 0; k < 2; k++) {
    CHECK_OK(wf_particles_add_collider(ps[k], &floor, NULL));
    CHECK_OK(wf_particles_emit(ps[k], &e, NULL, NULL)); /* 1000 particles */
    CHECK_OK(wf_particles_step_frames(ps[k], 3));
    e.center[1] += 1.5f;
    CHECK_OK(wf_particles_emit(ps[k], &e, NULL, NULL)); /* 1000 more */
    e.center[1] -= 1.5f;
    CHECK_OK(wf_particles_step_frames(ps[k], 3));
  }
  CHECK(wf_particles_count(ps[0]) == 2000 && wf_particles_capacity(ps[0]) >= 2000);
  CHECK(wf_particles_capacity(ps[1]) == 4096);
  float(*a)[4] = malloc(2000 * 16), (*b)[4] = malloc(2000 * 16);
  CHECK_OK(wf_particles_download(ps[0], a, NULL));
  CHECK_OK(wf_particles_download(ps[1], b, NULL));
  CHECK(memcmp(a, b, 2000 * 16) == 0);
  CHECK(a[1999][1] > 1.5f && a[0][1] > 0.0f); /* the new block is still above the old one */
  free(a), free(b);
  wf_particles_destroy(ps[0]), wf_particles_destroy(ps[1]);
}

/* The grid's periodic box only changes speed, never the result: two clusters far apart (so
 * that a small cell table makes distant cells share keys) and a cluster flying out of the box
 * give the same state as with a table large enough for everything. */
TEST(grid_box_does_not_change_results) {
  float(*out[2])[4] = {malloc(1024 * 16), malloc(1024 * 16)};
  for (int k = 0; k < 2; k++) {
    wf_particles *ps = make(k == 0 ? 1024 : 1u << 20);
    REQUIRE(ps);
    wf_particles_params pp = wf_particles_params_get(ps);
    pp.gravity[1] = 0.0f;
    CHECK_OK(wf_particles_params_set(ps, &pp));
    wf_particles_emitter e = wf_particles_emitter_default();
    e.half_extents[0] = e.half_extents[1] = e.half_extents[2] = 0.4f; /* 8³ = 512 */
    e.radius = 0.05f, e.spacing = 0.1f, e.jitter = 0.02f, e.seed = 11;
    e.velocity[0] = 0.3f;
    CHECK_OK(wf_particles_emit(ps, &e, NULL, NULL));
    e.center[0] = 40.0f, e.velocity[0] = -0.3f, e.seed = 12;
    CHECK_OK(wf_particles_emit(ps, &e, NULL, NULL));
    CHECK_OK(wf_particles_step_frames(ps, 10));
    CHECK_OK(wf_particles_download(ps, out[k], NULL));
    wf_particles_destroy(ps);
  }
  CHECK(memcmp(out[0], out[1], 1024 * 16) == 0);
  free(out[0]), free(out[1]);
}

/* Device memory: the 96 bytes a particle of the grid and state plus the granular state (omega
 * and its sorted copy 32, the contact history WFP_HIST_SLOTS x 32 = 256): <= 385 bytes per
 * particle, everything included (part.c has the count), at a capacity where the fixed tables
 * (~24 KiB) are amortised. */
TEST(memory_budget) {
  wf_particles *ps = make(1u << 16);
  REQUIRE(ps);
  double per = (double)wf_particles_device_bytes(ps) / (double)(1u << 16);
  printf("  %.2f bytes per particle (capacity 65536)\n", per);
  CHECK(per <= 385.0);
  wf_particles_destroy(ps);
}

/* A communicator (wf_particles_desc.mpi_comm) where it cannot work is refused, saying why: a
 * libweft built without MPI says so (WF_ERR_UNSUPPORTED); one with MPI, in this program that never
 * called MPI_Init, says MPI is not initialized (WF_ERR_INVALID). Nothing is created either way. */
TEST(mpi_comm_refused_where_it_cannot_work) {
  wf_particles_desc d = wf_particles_desc_default();
  d.devices[0] = d.devices[1] = th_dev0;
  d.device_count = 2;
  long long not_a_comm = 0; /* never read: the refusal comes first */
  d.mpi_comm = &not_a_comm;
  wf_particles *ps = NULL;
  if (wf_mpi_available(NULL, NULL, 0))
    CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_INVALID, "MPI is not initialized");
  else
    CHECK_ERROR(wf_particles_create(&d, &ps), WF_ERR_UNSUPPORTED, "built without MPI");
  CHECK(ps == NULL);
  wf_particles_destroy(ps);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(bad_input_names_the_field),
                                  TH_TEST(blow_up_is_reported),
                                  TH_TEST(emitter_lattice),
                                  TH_TEST(capacity_grows),
                                  TH_TEST(grid_box_does_not_change_results),
                                  TH_TEST(memory_budget),
                                  TH_TEST(mpi_comm_refused_where_it_cannot_work)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
