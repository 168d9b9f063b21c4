/* One wf_particles over the ranks of an MPI job (wf_particles_desc.mpi_comm): every rank builds
 * the same system, holds only its block of the partitions, and exchanges halos with the other
 * ranks through MPI. The state after N frames must be bitwise that of one process with the same
 * partition count (and so of one device: test_particle_split). Tolerance everywhere: none
 * (memcmp); the halo bytes are moved, not recomputed, and every particle's sums keep their order.
 *
 * Run by ctest under `mpirun -np 2|3|4 --oversubscribe` (label mpi); each rank also runs the
 * one-process reference on its own CPU devices, so each rank checks every particle. Run alone
 * (one rank) it checks the MPI path with every partition on one rank. */
#include "mpi_harness.h" /* harness.h, rank_, ranks_, world_ */
#include "weft/particles.h"

typedef struct opts {
  int model;   /* WF_CONTACT_DEM / XPBD */
  int kind;    /* 0 column on the ground, 1 two blocks colliding along x */
  float skin;  /* 0 automatic */
  int parts;   /* partitions */
  bool ranked; /* over the MPI ranks */
  bool rank0;  /* ranked: only rank 0 turns the measuring of collider forces on */
  int halo;    /* wf_mpi_halo */
} opts;

static wf_status build(const opts *o, wf_particles **out) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = o->ranked ? "mpi" : "one-process";
  d.substeps = 16;
  d.contact_model = o->model;
  if (o->kind == 1) d.gravity[1] = 0.0f;
  for (int i = 0; i < o->parts; i++) {
    char name[16];
    snprintf(name, sizeof name, "%s:%d", th_kind, i % 4);
    if (wf_device_get(name, &d.devices[i]) != WF_OK) d.devices[i] = th_dev0; /* one GPU: shared */
  }
  d.device_count = o->parts;
  d.skin = o->skin;
  if (o->ranked) d.mpi_comm = &world_, d.mpi_halo = o->halo;
  wf_status st = wf_particles_create(&d, out);
  if (st != WF_OK) return st;
  wf_particles *ps = *out;
  bool measure = !(o->ranked && o->rank0) || rank_ == 0; /* compared */
  if (measure && (st = wf_particles_measure_collider_forces(ps, true)) != WF_OK) return st;
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1e4f, m.restitution = 0.4f, m.friction = 0.5f;
  uint32_t mi = 0;
  if ((st = wf_particles_add_material(ps, &m, &mi)) != WF_OK) return st;
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = 0.05f, e.spacing = 0.1f, e.jitter = 0.004f, e.seed = 7, e.material = mi;
  if (o->kind == 1) {
    e.name = "left";
    e.center[0] = -0.6f;
    e.half_extents[0] = 0.3f, e.half_extents[1] = 0.2f, e.half_extents[2] = 0.2f;
    e.velocity[0] = 2.0f;
    if ((st = wf_particles_emit(ps, &e, NULL, NULL)) != WF_OK) return st;
    e.name = "right", e.seed = 8, e.center[0] = 0.6f, e.velocity[0] = -2.0f;
    return wf_particles_emit(ps, &e, NULL, NULL);
  }
  e.name = "column";
  e.half_extents[0] = e.half_extents[2] = 0.3f;
  e.half_extents[1] = 0.8f;
  e.center[1] = 0.86f; /* the bottom layer 1 cm above contact: on the ground in 3 frames */
  if ((st = wf_particles_emit(ps, &e, NULL, NULL)) != WF_OK) return st;
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "ground";
  g.restitution = 0.3f;
  return wf_particles_add_collider(ps, &g, NULL);
}

/* pos then vel, 32 bytes a particle; NULL on failure (reported) */
static float *state_of(wf_particles *ps) {
  uint32_t n = wf_particles_count(ps);
  float *s = malloc((size_t)n * 32 + 32);
  if (wf_particles_download(ps, (float(*)[4])s, (float(*)[4])(s + 4 * n)) != WF_OK) {
    TH_FAIL("download: %s", wf_last_error());
    free(s);
    return NULL;
  }
  return s;
}

static bool same(const float *a, const float *b, uint32_t n, const char *what) {
  if (memcmp(a, b, (size_t)n * 32) == 0) return true;
  for (uint32_t i = 0; i < 8 * n; i++)
    if (memcmp(&a[i], &b[i], 4) != 0) {
      TH_FAIL("rank %d: %s: first difference at float %u (particle %u, %s): %.9g vs %.9g", rank_,
              what, i, (i / 4) % n, i < 4 * n ? "pos" : "vel", a[i], b[i]);
      break;
    }
  return false;
}

/* After a read of the state: the ids each rank owns (wf_particles_owned_ids) ascend, and over
 * the ranks every particle is owned exactly once. */
static void owned_cover(wf_particles *ps, uint32_t n) {
  uint32_t *ids = malloc((size_t)n * 4 + 4), m = 0;
  int *once = calloc((size_t)n + 1, sizeof *once);
  REQUIRE(ids && once);
  CHECK_OK(wf_particles_owned_ids(ps, ids, &m));
  for (uint32_t i = 0; i < m && i < n; i++) {
    if (i > 0 && ids[i] <= ids[i - 1]) TH_FAIL("rank %d: owned ids not ascending at %u", rank_, i);
    if (ids[i] < n) once[ids[i]]++;
  }
  MPI_Allreduce(MPI_IN_PLACE, once, (int)n, MPI_INT, MPI_SUM, world_);
  for (uint32_t g = 0; g < n; g++)
    if (once[g] != 1) {
      TH_FAIL("rank %d: particle %u is owned by %d ranks", rank_, g, once[g]);
      break;
    }
  free(ids), free(once);
}

/* The ranked system and the one-process one, `frames` frames in `steps` calls (a download
 * between calls), compared bitwise after each call; and their statistics and ground force. */
static void compare(opts o, int frames, int steps) {
  wf_particles *ref = NULL, *mpi = NULL;
  o.ranked = false;
  wf_status st = build(&o, &ref);
  o.ranked = true;
  if (st == WF_OK) st = build(&o, &mpi);
  if (st != WF_OK) {
    TH_FAIL("rank %d: build: %s", rank_, wf_last_error());
    wf_particles_destroy(ref), wf_particles_destroy(mpi);
    return;
  }
  uint32_t n = wf_particles_count(ref);
  CHECK_EQ_INT(wf_particles_count(mpi), n);
  for (int s = 0; s < steps && th_fails == 0; s++) {
    CHECK_OK(wf_particles_step_frames(ref, frames / steps));
    CHECK_OK(wf_particles_step_frames(mpi, frames / steps));
    float *a = state_of(ref), *b = state_of(mpi);
    if (a && b) same(a, b, n, "state");
    free(a), free(b);
  }
  owned_cover(mpi, n);
  wf_particles_stats sa, sb;
  CHECK_OK(wf_particles_stats_get(ref, &sa));
  CHECK_OK(wf_particles_stats_get(mpi, &sb));
  CHECK(sa.kinetic_energy == sb.kinetic_energy && sa.time == sb.time &&
        sa.substeps == sb.substeps && sa.potential_energy == sb.potential_energy);
  /* with o.rank0 two rounds: rank 0 alone reads the force, then one more frame (collectives a
   * rank still inside a force read would never join) and every rank reads it */
  for (int round = 0; o.kind == 0 && round < (o.rank0 ? 2 : 1) && th_fails == 0; round++) {
    if (round == 1) {
      CHECK_OK(wf_particles_step_frames(ref, 1));
      CHECK_OK(wf_particles_step_frames(mpi, 1));
      float *a = state_of(ref), *b = state_of(mpi);
      if (a && b) same(a, b, n, "state after the force read on rank 0 alone");
      free(a), free(b);
    }
    if (o.rank0 && round == 0 && rank_ != 0) continue;
    double fa[3], ta[3], fb[3], tb[3];
    CHECK_OK(wf_particles_collider_force(ref, 0, fa, ta));
    CHECK_OK(wf_particles_collider_force(mpi, 0, fb, tb));
    CHECK(memcmp(fa, fb, sizeof fa) == 0 && memcmp(ta, tb, sizeof ta) == 0);
    /* the pile pushes the ground down (force[1] < 0): the comparison above means something */
    CHECK(fa[1] < 0.0);
  }
  wf_particles_info info;
  CHECK_OK(wf_particles_info_get(mpi, &info));
  CHECK_EQ_INT(info.partitions, o.parts);
  /* CPU devices' memory is host memory: AUTO sends from and receives into it directly; on CUDA
   * devices AUTO goes direct only where MPI takes device memory (one partition has no halo and
   * no path) */
  int path = o.halo == WF_MPI_HALO_STAGED ? WF_MPI_HALO_STAGED : WF_MPI_HALO_DIRECT;
  if (th_is_cuda() && o.halo == WF_MPI_HALO_AUTO && info.mpi_halo == WF_MPI_HALO_STAGED)
    path = WF_MPI_HALO_STAGED;
  CHECK_EQ_INT(info.mpi_halo, o.parts > 1 ? path : 0);
  if (rank_ == 0 && o.parts > 1)
    printf("  %d partitions on %s: halos %s\n", o.parts, th_kind,
           info.mpi_halo == WF_MPI_HALO_DIRECT ? "direct" : "staged");
  wf_particles_destroy(ref);
  wf_particles_destroy(mpi);
}

TEST(column_dem_bitwise_4_partitions) {
  compare((opts){WF_CONTACT_DEM, 0, 0.0f, 4, true, false, WF_MPI_HALO_AUTO}, 6, 2);
}

TEST(column_dem_bitwise_one_partition_a_rank) {
  compare((opts){WF_CONTACT_DEM, 0, 0.0f, ranks_, true, false, WF_MPI_HALO_AUTO}, 6, 1);
}

TEST(column_xpbd_bitwise) {
  compare((opts){WF_CONTACT_XPBD, 0, 0.0f, 4, true, false, WF_MPI_HALO_AUTO}, 6, 1);
}

/* Two blocks fly through each other's slabs: particles migrate between ranks both ways. */
TEST(migration_both_directions_bitwise) {
  compare((opts){WF_CONTACT_DEM, 1, 0.0f, 4, true, false, WF_MPI_HALO_AUTO}, 8, 2);
}

/* A skin far too thin: a particle outruns it, every rank reruns its frames (the flag is agreed
 * over the ranks) with a wider one; still bitwise. */
TEST(thin_skin_reruns_bitwise) {
  compare((opts){WF_CONTACT_DEM, 1, 1e-4f, 4, true, false, WF_MPI_HALO_AUTO}, 4, 1);
}

/* Both ways of moving a halo between ranks (wf_mpi_halo): through host copies, and MPI reading
 * and writing the partitions' buffers (the default on CPU devices, asked for explicitly here). */
TEST(column_dem_staged_bitwise) {
  compare((opts){WF_CONTACT_DEM, 0, 0.0f, 4, true, false, WF_MPI_HALO_STAGED}, 6, 2);
}
TEST(migration_staged_bitwise) {
  compare((opts){WF_CONTACT_DEM, 1, 0.0f, 4, true, false, WF_MPI_HALO_STAGED}, 8, 2);
}
TEST(migration_direct_bitwise) {
  opts o = {WF_CONTACT_DEM, 1, 0.0f, 4, true, false, WF_MPI_HALO_DIRECT};
  if (!th_mpi_direct_ok()) { /* CUDA memory and an MPI that cannot take it: refused, saying so */
    wf_particles *ps = NULL;
    CHECK_ERROR(build(&o, &ps), WF_ERR_UNSUPPORTED, "needs a CUDA-aware MPI");
    wf_particles_destroy(ps);
    return;
  }
  compare(o, 8, 2);
}

/* An mpi_halo that is no wf_mpi_halo is refused, naming the field. */
TEST(bad_halo_refused) {
  wf_particles *ps = NULL;
  CHECK_ERROR(build(&(opts){WF_CONTACT_DEM, 0, 0.0f, 4, true, false, 7}, &ps), WF_ERR_INVALID,
              "mpi_halo");
  wf_particles_destroy(ps);
}

/* Only rank 0 turns the measuring of the collider forces on (as `weft run`'s rank 0 does for
 * its stats.csv): the switch is agreed at the next step, so every rank measures, and a force
 * read is no collective: rank 0 reading alone leaves no rank waiting (ctest's timeout would
 * catch a hang), and every rank reads the one-process force, bitwise. */
TEST(measuring_on_rank_0_only) {
  opts o = {WF_CONTACT_DEM, 0, 0.0f, 4, true, true, WF_MPI_HALO_AUTO};
  compare(o, 6, 2);
}

/* Particles added after stepping began go back to the lead partition of every rank. */
TEST(add_after_stepping_bitwise) {
  opts o = {WF_CONTACT_DEM, 0, 0.0f, 4, false, false, WF_MPI_HALO_AUTO};
  wf_particles *ref = NULL, *mpi = NULL;
  REQUIRE(build(&o, &ref) == WF_OK);
  o.ranked = true;
  REQUIRE(build(&o, &mpi) == WF_OK);
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = 0.05f, e.spacing = 0.1f, e.seed = 3, e.name = "late";
  e.center[1] = 2.2f, e.half_extents[0] = e.half_extents[2] = 0.2f, e.half_extents[1] = 0.1f;
  wf_particles *both[2] = {ref, mpi};
  for (int i = 0; i < 2; i++) {
    CHECK_OK(wf_particles_step_frames(both[i], 2));
    CHECK_OK(wf_particles_emit(both[i], &e, NULL, NULL));
    CHECK_OK(wf_particles_step_frames(both[i], 2));
  }
  uint32_t n = wf_particles_count(ref);
  CHECK_EQ_INT(wf_particles_count(mpi), n);
  float *a = state_of(ref), *b = state_of(mpi);
  if (a && b) same(a, b, n, "state after adding");
  free(a), free(b);
  wf_particles_destroy(ref);
  wf_particles_destroy(mpi);
}

/* The host memory of a rank: the master copy of the whole state (306 bytes a particle: position,
 * velocity, omega, material, 256 bytes of contact history) is held from adding particles to the
 * first distribution, then freed; stepping and every read (download, statistics, energies, the
 * granular state, omega) leave a rank holding its record and its owned ids only. The claim
 * checked: after them a rank holds at most its record (before - 306 n) plus a 1/ranks share of
 * the rows, where before it held the whole system. */
TEST(host_bytes_a_share_of_the_system) {
  opts o = {WF_CONTACT_DEM, 0, 0.0f, 4, true, false, WF_MPI_HALO_AUTO};
  wf_particles *ps = NULL;
  REQUIRE(build(&o, &ps) == WF_OK);
  uint32_t n = wf_particles_count(ps);
  wf_particles_info info;
  CHECK_OK(wf_particles_info_get(ps, &info));
  uint64_t before = info.host_bytes, row = 306, record = before - row * n;
  CHECK(before >= row * n); /* the master copy, on every rank */
  uint64_t after[2] = {0, 0};
  for (int round = 0; round < 2 && th_fails == 0; round++) {
    CHECK_OK(wf_particles_step_frames(ps, 2));
    CHECK_OK(wf_particles_info_get(ps, &info));
    after[0] = info.host_bytes; /* after the first distribution and frames */
    wf_particles_stats stats;
    wf_particles_energy e;
    CHECK_OK(wf_particles_stats_get(ps, &stats));
    CHECK_OK(wf_particles_energy_get(ps, &e));
    float *s = state_of(ps);
    float(*w)[4] = malloc((size_t)n * 16 + 16);
    size_t gb = wf_particles_granular_state_bytes(ps);
    void *blob = malloc(gb);
    REQUIRE(s && w && blob);
    CHECK_OK(wf_particles_download_omega(ps, w));
    CHECK_OK(wf_particles_granular_state_get(ps, blob, gb));
    free(s), free(w), free(blob);
    CHECK_OK(wf_particles_info_get(ps, &info));
    after[1] = info.host_bytes; /* after every read */
  }
  uint64_t share = record + row * n / (uint64_t)ranks_;
  if (rank_ == 0 || th_fails)
    printf("rank %d of %d: %u particles (%llu bytes of rows): host bytes %llu before the first "
           "distribution, %llu after the frames, %llu after the reads (bound %llu)\n",
           rank_, ranks_, n, (unsigned long long)(row * n), (unsigned long long)before,
           (unsigned long long)after[0], (unsigned long long)after[1], (unsigned long long)share);
  CHECK(after[0] <= share && after[1] <= share);
  CHECK(after[1] < before - row * n / 2); /* the master copy is gone */
  wf_particles_destroy(ps);
}

/* wf_particles_download_owned: each rank's own rows, ascending, are the whole download's rows of
 * those ids, byte for byte, and over the ranks every particle is read once. */
TEST(download_owned_is_the_download_of_the_owned) {
  opts o = {WF_CONTACT_DEM, 1, 0.0f, 4, true, false, WF_MPI_HALO_AUTO};
  wf_particles *ps = NULL;
  REQUIRE(build(&o, &ps) == WF_OK);
  uint32_t n = wf_particles_count(ps);
  uint32_t *ids = malloc((size_t)n * 4 + 4), m = 0;
  float(*pos)[4] = malloc((size_t)n * 16 + 16), (*vel)[4] = malloc((size_t)n * 16 + 16);
  REQUIRE(ids && pos && vel);
  for (int round = 0; round < 3 && th_fails == 0; round++) {
    if (round > 0) CHECK_OK(wf_particles_step_frames(ps, 2)); /* round 0: not distributed */
    CHECK_OK(wf_particles_download_owned(ps, ids, pos, vel, &m));
    owned_cover(ps, n);
    float *s = state_of(ps);
    REQUIRE(s);
    for (uint32_t i = 0; i < m; i++) {
      if (ids[i] >= n || (i > 0 && ids[i] <= ids[i - 1])) {
        TH_FAIL("rank %d: owned id %u at %u: not ascending below %u", rank_, ids[i], i, n);
        break;
      }
      if (memcmp(pos[i], s + 4 * ids[i], 16) != 0 || memcmp(vel[i], s + 4 * (n + ids[i]), 16)) {
        TH_FAIL("rank %d, round %d: particle %u differs from the download", rank_, round, ids[i]);
        break;
      }
    }
    free(s);
  }
  free(ids), free(pos), free(vel);
  wf_particles_destroy(ps);
}

/* wf_particles_download_owned_local, a checkpoint's piece: in one process and over the ranks, a
 * rank's rows (room for wf_particles_owned_count of them, not the system) are, byte for byte,
 * wf_particles_download_local's and the granular blob's (angular velocity, history slots) rows of
 * their ids; over the ranks every particle is in one rank's rows; less room is refused on a rank
 * that owns any (the others still enter the collective). */
TEST(download_owned_local_is_the_checkpoint_rows) {
  for (int ranked = 0; ranked < 2 && th_fails == 0; ranked++) {
    opts o = {WF_CONTACT_DEM, 1, 0.0f, 4, ranked != 0, false, WF_MPI_HALO_AUTO};
    wf_particles *ps = NULL;
    REQUIRE(build(&o, &ps) == WF_OK);
    uint32_t n = wf_particles_count(ps);
    size_t gb = wf_particles_granular_state_bytes(ps);
    unsigned char *blob = malloc(gb), *hist = NULL;
    float(*lp)[4] = malloc((size_t)n * 32 + 32), (*lv)[4] = lp + n;
    int *once = calloc((size_t)n + 1, sizeof *once);
    REQUIRE(blob && lp && once);
    for (int round = 0; round < 3 && th_fails == 0; round++) {
      if (round > 0) CHECK_OK(wf_particles_step_frames(ps, 2)); /* round 0: not distributed */
      CHECK_OK(wf_particles_check(ps));
      uint32_t room = wf_particles_owned_count(ps), m = 0;
      uint32_t *ids = malloc((size_t)room * 4 + 4);
      float(*pos)[4] = malloc((size_t)room * 48 + 48), (*vel)[4] = pos + room,
      (*omega)[4] = pos + 2 * (size_t)room;
      hist = malloc((size_t)room * 256 + 256);
      REQUIRE(ids && pos && hist);
      CHECK_STATUS(wf_particles_download_owned_local(ps, room ? room - 1 : 0, ids, pos, vel, omega,
                                                     hist, &m),
                   room ? WF_ERR_INVALID : WF_OK);
      CHECK_OK(wf_particles_download_owned_local(ps, room, ids, pos, vel, omega, hist, &m));
      CHECK_EQ_INT(m, room);
      if (!ranked) CHECK_EQ_INT(m, n);
      CHECK_OK(wf_particles_download_local(ps, lp, lv));
      CHECK_OK(wf_particles_granular_state_get(ps, blob, gb));
      const unsigned char *bw = blob + gb - (size_t)n * 272, *bh = blob + gb - (size_t)n * 256;
      memset(once, 0, ((size_t)n + 1) * sizeof *once);
      for (uint32_t i = 0; i < m; i++) {
        uint32_t g = ids[i];
        if (g >= n || (i > 0 && g <= ids[i - 1])) {
          TH_FAIL("rank %d: owned id %u at %u: not ascending below %u", rank_, g, i, n);
          break;
        }
        once[g]++;
        if (memcmp(pos[i], lp[g], 16) || memcmp(vel[i], lv[g], 16) ||
            memcmp(omega[i], bw + (size_t)g * 16, 16) ||
            memcmp(hist + (size_t)i * 256, bh + (size_t)g * 256, 256)) {
          TH_FAIL("rank %d, %s, round %d: particle %u differs from the whole state's", rank_,
                  ranked ? "ranked" : "one process", round, g);
          break;
        }
      }
      if (ranked) MPI_Allreduce(MPI_IN_PLACE, once, (int)n, MPI_INT, MPI_SUM, world_);
      for (uint32_t g = 0; g < n && th_fails == 0; g++)
        if (once[g] != 1) TH_FAIL("rank %d: particle %u is in %d ranks' rows", rank_, g, once[g]);
      free(ids), free(pos), free(hist);
    }
    free(blob), free(lp), free(once);
    wf_particles_destroy(ps);
  }
}

/* More ranks than partitions is refused, naming the counts. */
TEST(too_few_partitions_refused) {
  if (ranks_ < 2) SKIP("one rank");
  opts o = {WF_CONTACT_DEM, 0, 0.0f, 1, true, false, WF_MPI_HALO_AUTO};
  o.parts = ranks_ - 1 > 1 ? ranks_ - 1 : 2;
  if (o.parts >= ranks_) SKIP("needs 3 or more ranks");
  wf_particles *ps = NULL;
  CHECK_ERROR(build(&o, &ps), WF_ERR_INVALID, "MPI ranks");
  wf_particles_destroy(ps);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(column_dem_bitwise_4_partitions),
      TH_TEST(column_dem_bitwise_one_partition_a_rank),
      TH_TEST(column_xpbd_bitwise),
      TH_TEST(migration_both_directions_bitwise),
      TH_TEST(thin_skin_reruns_bitwise),
      TH_TEST(measuring_on_rank_0_only),
      TH_TEST(add_after_stepping_bitwise),
      TH_TEST(too_few_partitions_refused),
      TH_TEST(column_dem_staged_bitwise),
      TH_TEST(migration_staged_bitwise),
      TH_TEST(migration_direct_bitwise),
      TH_TEST(bad_halo_refused),
      TH_TEST(host_bytes_a_share_of_the_system),
      TH_TEST(download_owned_is_the_download_of_the_owned),
      TH_TEST(download_owned_local_is_the_checkpoint_rows),
  };
  return th_mpi_main(argc, argv, tests, TH_COUNT(tests));
}
