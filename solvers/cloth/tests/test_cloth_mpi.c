/* One wf_cloth over the ranks of an MPI job (wf_cloth_desc.mpi_comm): every rank builds the same
 * mesh and rank 0's cut, holds only its block of the partitions, and exchanges the halos with the
 * other ranks through MPI. The state after every step call must be bitwise that of one process
 * with the same partition count (and so of one device: test_cloth_split), as must the energy
 * and a collider's force. Tolerance everywhere: none (memcmp); the halo bytes are moved, not
 * recomputed, and every sum keeps its order. Since every exchange feeds the next substep, leaving
 * out any halo between ranks (a ghost slot, an XPBD colour's, the contact copies) changes the
 * state and fails the comparison.
 *
 * Run by ctest under `mpirun -np 2|3|4 --oversubscribe` (label mpi); each rank also runs the
 * one-process reference on its own CPU devices, so each rank checks every vertex. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "mpi_harness.h" /* harness.h, rank_, ranks_, world_ */

#include "cloth_owners.h"

typedef struct opts {
  int integrator;
  int parts;        /* partitions */
  bool contact;     /* the folding strip with desc.contact; else a pinned sheet over a sphere */
  bool rank0;       /* over ranks only rank 0 asks for the collider forces */
  int halo;         /* wf_mpi_halo */
  const void *comm; /* the communicator (NULL: one process) */
} opts;

enum { MAXV = 200, MAXT = 400 };

/* The fold of test_cloth_contact_split: a 4 x 40 strip, 2.4 cm apart, hanging with its low end
 * 2 cm above the ground and leaning along z, falls and piles into folds on itself. */
static wf_status make_fold(wf_cloth_desc *d, wf_cloth **out) {
  static float v[MAXV][3];
  static uint32_t t[MAXT][3];
  uint32_t nv = 0, nt = 0;
  const int nu = 4, nw = 40;
  for (int j = 0; j < nw; j++)
    for (int i = 0; i < nu; i++, nv++) {
      v[nv][0] = ((float)i - 1.5f) * 0.024f;
      v[nv][1] = 0.02f + (float)j * 0.024f;
      v[nv][2] = 0.05f * v[nv][1];
    }
  for (int j = 0; j + 1 < nw; j++)
    for (int i = 0; i + 1 < nu; i++) {
      uint32_t a = (uint32_t)(j * nu + i), b = a + 1, c = a + (uint32_t)nu, e = c + 1;
      t[nt][0] = a, t[nt][1] = c, t[nt][2] = b, nt++;
      t[nt][0] = b, t[nt][1] = c, t[nt][2] = e, nt++;
    }
  d->contact = true;
  d->damping = 0.5f;
  d->material.density = 0.15f;
  d->material.thickness = 0.005f;
  d->material.stretch_modulus = 30.0f;
  d->material.shear_modulus = 10.0f;
  d->material.bend_rigidity = 1e-5f;
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.vertices = (const float(*)[3])v;
  md.vertex_count = nv;
  md.triangles = (const uint32_t(*)[3])t;
  md.triangle_count = nt;
  wf_status st = wf_cloth_create_mesh(d, &md, out);
  wf_collider_desc g = scene_ground(0.0f);
  return st == WF_OK ? wf_cloth_add_collider(*out, &g, NULL) : st;
}

/* A 10 x 10 sheet, horizontal, pinned along its top edge, swinging down onto a sphere in wind. */
static wf_status make_sheet(wf_cloth_desc *d, wf_cloth **out) {
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 10;
  g.size[0] = g.size[1] = 0.5f;
  g.center[0] = 0.0f, g.center[1] = 0.6f, g.center[2] = 0.0f;
  g.v_axis[0] = 0.0f, g.v_axis[1] = 0.0f, g.v_axis[2] = 1.0f;
  d->wind[0] = 2.0f, d->wind[2] = 0.5f;
  wf_status st = wf_cloth_create_grid(d, &g, out);
  if (st == WF_OK) st = wf_cloth_pin_named(*out, "top", NULL);
  wf_collider_desc s = scene_sphere(0.0f, 0.45f, 0.05f, 0.14f); /* 1 cm below */
  return st == WF_OK ? wf_cloth_add_collider(*out, &s, NULL) : st;
}

static wf_status build(const opts *o, wf_cloth **out) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.name = o->comm ? "ranked" : "one-process";
  d.integrator = o->integrator;
  d.iterations = o->integrator == WF_CLOTH_XPBD && !o->contact ? 2 : 1;
  d.substeps = o->contact && o->integrator == WF_CLOTH_SPRINGS ? 16 : 8;
  for (int i = 0; i < o->parts; i++) {
    char name[16];
    snprintf(name, sizeof name, "%s:%d", th_kind, i % 4);
    if (wf_device_get(name, &d.devices[i]) != WF_OK) d.devices[i] = th_dev0; /* one GPU: shared */
  }
  d.device_count = o->parts;
  d.mpi_comm = o->comm, d.mpi_halo = o->halo;
  wf_status st = o->contact ? make_fold(&d, out) : make_sheet(&d, out);
  if (st != WF_OK) return st;
  bool measure = !(o->comm && o->rank0) || rank_ == 0;
  return measure ? wf_cloth_measure_collider_forces(*out, true) : WF_OK;
}

/* The rank that holds partition p of n (blocks, as the library assigns them). */
static int rank_of(int p, int n) { return (int)((long long)p * ranks_ / n); }

typedef struct state {
  float pos[MAXV][4], vel[MAXV][4];
  double time;
  uint64_t substeps;
} state;

/* The whole state (a collective over the ranks); false after a reported failure. */
static bool state_of(wf_cloth *c, state *s) {
  memset(s, 0, sizeof *s);
  if (wf_cloth_download_local(c, s->pos, s->vel) != WF_OK ||
      wf_cloth_time(c, &s->time, &s->substeps) != WF_OK) {
    TH_FAIL("rank %d: download: %s", rank_, wf_last_error());
    return false;
  }
  return true;
}

static bool same(const state *a, const state *b, uint32_t nv, const char *what) {
  if (!memcmp(a->pos, b->pos, (size_t)nv * 16) && !memcmp(a->vel, b->vel, (size_t)nv * 16) &&
      a->time == b->time && a->substeps == b->substeps)
    return true;
  for (uint32_t i = 0; i < nv; i++)
    if (memcmp(a->pos[i], b->pos[i], 16) || memcmp(a->vel[i], b->vel[i], 16)) {
      TH_FAIL("rank %d: %s: first difference at vertex %u: pos y %.9g vs %.9g", rank_, what, i,
              (double)a->pos[i][1], (double)b->pos[i][1]);
      return false;
    }
  TH_FAIL("rank %d: %s: clocks differ", rank_, what);
  return false;
}

/* Vertex pairs within contact reach at a frame end, not mesh neighbours (apart at rest), whose
 * owners are on different ranks: contact crossed the ranks, so its exchange mattered. */
static uint32_t cross_rank_pairs(const state *s, const float (*rest)[4], const int *owner,
                                 uint32_t nv, int parts) {
  uint32_t n = 0;
  double reach = 2.5 * 0.005, skip = 2.0 * 0.005;
  for (uint32_t i = 0; i < nv; i++)
    for (uint32_t j = i + 1; j < nv; j++) {
      if (rank_of(owner[i], parts) == rank_of(owner[j], parts)) continue;
      double d = 0.0, r = 0.0;
      for (int k = 0; k < 3; k++) {
        d += (s->pos[i][k] - (double)s->pos[j][k]) * (s->pos[i][k] - (double)s->pos[j][k]);
        r += (rest[i][k] - (double)rest[j][k]) * (rest[i][k] - (double)rest[j][k]);
      }
      n += d < reach * reach && r > skip * skip;
    }
  return n;
}

/* Rank 0's `bytes` at buf to every rank (the reference runs on rank 0 only: on 2 shared cores
 * every rank running it would take most of the test's time). */
static void from_rank0(void *buf, size_t bytes) { MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, world_); }

/* The reference's state on rank 0, given to every rank. */
static void ref_state(wf_cloth *ref, state *s) {
  if (rank_ == 0) state_of(ref, s);
  from_rank0(s, sizeof *s);
}

/* The ranked cloth and the one-process one (on rank 0), `steps` step calls of `frames` frames
 * (the wind changed between calls: parameters set on every rank alike), compared bitwise after
 * each call; then their energy and the collider's force. The loops do not stop at a failure:
 * a rank that left them would leave the others waiting in a collective. */
static void compare(opts o, int steps, int frames) {
  static state a, b;
  static float rest[MAXV][4];
  static int owner[MAXV];
  wf_cloth *ref = NULL, *mpi = NULL;
  const void *comm = o.comm;
  o.comm = NULL;
  int bad = rank_ == 0 && build(&o, &ref) != WF_OK;
  if (bad) TH_FAIL("rank 0: the reference: %s", wf_last_error());
  o.comm = comm;
  if (build(&o, &mpi) != WF_OK) {
    TH_FAIL("rank %d: build: %s", rank_, wf_last_error());
    bad = 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, world_);
  if (bad) {
    wf_cloth_destroy(ref), wf_cloth_destroy(mpi);
    if (!th_fails) TH_FAIL("rank %d: another rank failed to build", rank_);
    return;
  }
  uint32_t nv = wf_cloth_count(mpi), cross = 0;
  uint64_t worst = 0;
  CHECK_EQ_INT(wf_cloth_partition_count(mpi), o.parts);
  for (int p = 0; p < o.parts; p++)
    CHECK(wf_cloth_partition_is_local(mpi, p) == (rank_of(p, o.parts) == rank_));
  if (rank_ == 0) {
    CHECK_EQ_INT(wf_cloth_count(ref), nv);
    CHECK(cloth_owners(ref, owner, NULL));
    CHECK_OK(wf_cloth_download_local(ref, rest, NULL));
  }
  from_rank0(owner, sizeof owner), from_rank0(rest, sizeof rest);
  /* the vertices this rank owns (wf_cloth_owned_ids) are its partitions', ascending; the ranks'
   * sets together are the cloth; one process owns every vertex */
  static uint32_t ids[MAXV];
  uint32_t m = 0, at = 0, total = 0;
  bool mine_ok = wf_cloth_owned_ids(mpi, ids, &m) == WF_OK;
  for (uint32_t v = 0; v < nv && mine_ok; v++)
    if (rank_of(owner[v], o.parts) == rank_) mine_ok = at < m && ids[at++] == v;
  if (!mine_ok || at != m) TH_FAIL("rank %d: owned ids: %u of %u as expected", rank_, at, m);
  MPI_Allreduce(&m, &total, 1, MPI_UINT32_T, MPI_SUM, world_);
  CHECK_EQ_INT(total, nv);
  if (ref) {
    CHECK_OK(wf_cloth_owned_ids(ref, NULL, &m));
    CHECK_EQ_INT(m, nv);
  }
  for (int s = 0; s < steps; s++) {
    if (s > 0) { /* a gust, set on every rank */
      wf_cloth_params pa = wf_cloth_params_get(mpi);
      pa.wind[0] += 1.5f, pa.wind[1] = 0.25f;
      if (ref) CHECK_OK(wf_cloth_params_set(ref, &pa));
      CHECK_OK(wf_cloth_params_set(mpi, &pa));
    }
    if (ref) CHECK_OK(wf_cloth_step_frames(ref, frames));
    CHECK_OK(wf_cloth_step_frames(mpi, frames));
    ref_state(ref, &a);
    if (state_of(mpi, &b)) same(&a, &b, nv, "state");
    if (o.contact) {
      uint64_t k = 0;
      CHECK_OK(wf_cloth_intersections(mpi, &k));
      if (k > worst) worst = k;
      cross += cross_rank_pairs(&b, (const float(*)[4])rest, owner, nv, o.parts);
    }
  }
  if (o.contact) {
    CHECK_EQ_INT(worst, 0);
    /* with one rank no pair crosses ranks; else contact crossed them, so its exchange mattered */
    if (ranks_ > 1) CHECK(cross > 0);
  }
  wf_cloth_energy ea, eb;
  memset(&ea, 0, sizeof ea);
  if (ref) CHECK_OK(wf_cloth_energy_get(ref, &ea));
  from_rank0(&ea, sizeof ea);
  CHECK_OK(wf_cloth_energy_get(mpi, &eb));
  CHECK(memcmp(&ea, &eb, sizeof ea) == 0);
  CHECK(ea.kinetic > 0.0);
  /* with o.rank0 two rounds: rank 0 alone reads the force, then one more frame (collectives a
   * rank still inside a force read would never join) and every rank reads it */
  for (int round = 0; round < (o.rank0 ? 2 : 1); round++) {
    if (round == 1) {
      if (ref) CHECK_OK(wf_cloth_step_frames(ref, 1));
      CHECK_OK(wf_cloth_step_frames(mpi, 1));
      ref_state(ref, &a);
      if (state_of(mpi, &b)) same(&a, &b, nv, "state after a read on rank 0");
    }
    bool alone = o.rank0 && round == 0;
    if (alone && rank_ != 0) continue;
    double f[2][6] = {{0}}; /* the reference's force and torque, the ranked one's */
    if (ref) CHECK_OK(wf_cloth_collider_force(ref, 0, f[0], f[0] + 3));
    if (!alone) from_rank0(f[0], sizeof f[0]);
    CHECK_OK(wf_cloth_collider_force(mpi, 0, f[1], f[1] + 3));
    CHECK(memcmp(f[0], f[1], sizeof f[0]) == 0);
    CHECK(f[0][1] < 0.0); /* the cloth presses on the collider: the comparison means something */
  }
  wf_cloth_info info;
  CHECK_OK(wf_cloth_info_get(mpi, &info));
  CHECK_EQ_INT(info.partitions, o.parts);
  /* CPU devices' memory is host memory: AUTO lets MPI take it directly; on CUDA devices only
   * where MPI takes device memory */
  int path = o.halo == WF_MPI_HALO_STAGED ? WF_MPI_HALO_STAGED : WF_MPI_HALO_DIRECT;
  if (th_is_cuda() && o.halo == WF_MPI_HALO_AUTO && info.mpi_halo == WF_MPI_HALO_STAGED)
    path = WF_MPI_HALO_STAGED;
  CHECK_EQ_INT(info.mpi_halo, path);
  printf("  rank %d/%d on %s (halos %s), %s%s, %d partitions: bitwise one process's over %d "
         "frames%s\n",
         rank_, ranks_, th_kind, info.mpi_halo == WF_MPI_HALO_DIRECT ? "direct" : "staged",
         o.integrator == WF_CLOTH_XPBD ? "xpbd" : "springs", o.contact ? " contact" : "", o.parts,
         steps * frames, o.contact && cross ? " (contact across ranks)" : "");
  wf_cloth_destroy(ref);
  wf_cloth_destroy(mpi);
}

TEST(sheet_springs_bitwise_4_partitions) {
  compare((opts){WF_CLOTH_SPRINGS, 4, false, false, WF_MPI_HALO_AUTO, &world_}, 3, 3);
}
TEST(sheet_xpbd_bitwise_4_partitions) {
  compare((opts){WF_CLOTH_XPBD, 4, false, false, WF_MPI_HALO_AUTO, &world_}, 3, 3);
}
TEST(sheet_xpbd_one_partition_a_rank) {
  if (ranks_ < 2) SKIP("one rank");
  compare((opts){WF_CLOTH_XPBD, ranks_, false, false, WF_MPI_HALO_AUTO, &world_}, 2, 3);
}
/* Both ways of moving a halo between ranks: host copies, and MPI on the buffers themselves. */
TEST(sheet_springs_staged) {
  compare((opts){WF_CLOTH_SPRINGS, 4, false, false, WF_MPI_HALO_STAGED, &world_}, 2, 3);
}
TEST(sheet_xpbd_direct) {
  opts o = {WF_CLOTH_XPBD, 4, false, false, WF_MPI_HALO_DIRECT, &world_};
  if (!th_mpi_direct_ok()) { /* CUDA memory and an MPI that cannot take it: refused, saying so */
    wf_cloth *c = NULL;
    CHECK_ERROR(build(&o, &c), WF_ERR_UNSUPPORTED, "needs a CUDA-aware MPI");
    wf_cloth_destroy(c);
    return;
  }
  compare(o, 2, 3);
}
/* Only rank 0 asks for the collider forces: agreed at the next step, read without a collective. */
TEST(forces_on_rank_0_only) {
  compare((opts){WF_CLOTH_SPRINGS, 4, false, true, WF_MPI_HALO_AUTO, &world_}, 2, 3);
}
/* The folding strip with contact: every partition's owned positions to every other each
 * substep (slots CC0/CC1), across the ranks; no intersecting triangle pair. */
TEST(fold_xpbd_contact) {
  compare((opts){WF_CLOTH_XPBD, 4, true, false, WF_MPI_HALO_AUTO, &world_}, 4, 6);
}
TEST(fold_springs_contact) {
  compare((opts){WF_CLOTH_SPRINGS, 4, true, false, WF_MPI_HALO_AUTO, &world_}, 4, 6);
}

/* A checkpoint: the state after 4 frames over 3 ranks (3 partitions), downloaded whole, set into
 * a cloth over 2 ranks (4 partitions) and stepped 4 more: bitwise the one-process run of 8. The
 * ranks outside each communicator wait. */
static void checkpoint(int integrator) {
  static state saved, a, b;
  if (ranks_ < 3) SKIP("needs 3 ranks");
  MPI_Comm three, two;
  MPI_Comm_split(world_, rank_ < 3 ? 0 : MPI_UNDEFINED, rank_, &three);
  MPI_Comm_split(world_, rank_ < 2 ? 0 : MPI_UNDEFINED, rank_, &two);
  wf_cloth *ref = NULL, *c = NULL;
  if (rank_ == 0) {
    CHECK_OK(build(&(opts){integrator, 3, false, false, 0, NULL}, &ref));
    CHECK_OK(wf_cloth_step_frames(ref, 8));
  }
  ref_state(ref, &a);
  uint32_t nv = 100; /* the sheet's 10 x 10 */
  int ok = 1;
  if (three != MPI_COMM_NULL) {
    CHECK_OK(build(&(opts){integrator, 3, false, false, 0, &three}, &c));
    CHECK_OK(wf_cloth_step_frames(c, 4));
    ok = c && state_of(c, &saved);
    wf_cloth_destroy(c);
    c = NULL;
  }
  MPI_Bcast(&saved, (int)sizeof saved, MPI_BYTE, 0, world_); /* (the file, read on every rank) */
  if (two != MPI_COMM_NULL && ok) {
    CHECK_OK(build(&(opts){integrator, 4, false, false, 0, &two}, &c));
    CHECK_OK(wf_cloth_set_state_local(c, (const float(*)[4])saved.pos, (const float(*)[4])saved.vel,
                                      saved.time, saved.substeps));
    CHECK_OK(wf_cloth_step_frames(c, 4));
    if (state_of(c, &b)) same(&a, &b, nv, "resumed on 2 ranks");
    wf_cloth_destroy(c);
  }
  if (three != MPI_COMM_NULL) MPI_Comm_free(&three);
  if (two != MPI_COMM_NULL) MPI_Comm_free(&two);
  wf_cloth_destroy(ref);
}
TEST(checkpoint_3_ranks_to_2_springs) { checkpoint(WF_CLOTH_SPRINGS); }
TEST(checkpoint_3_ranks_to_2_xpbd) { checkpoint(WF_CLOTH_XPBD); }

/* What a cloth over ranks does not do is refused, naming the cloth and what to do. */
TEST(refusals_name_the_cloth) {
  if (ranks_ < 2) SKIP("one rank");
  wf_cloth *c = NULL;
  REQUIRE(build(&(opts){WF_CLOTH_SPRINGS, 4, false, false, 0, &world_}, &c) == WF_OK);
  wf_overlap ov;
  CHECK_ERROR(wf_cloth_overlap_measure(c, 1, &ov), WF_ERR_UNSUPPORTED, "ranked", "MPI rank");
  wf_cloth_group *g = NULL;
  wf_cloth_group_desc gd = wf_cloth_group_desc_default();
  wf_cloth *one[1] = {c};
  CHECK_ERROR(wf_cloth_group_create(one, 1, &gd, &g), WF_ERR_UNSUPPORTED, "ranked", "MPI ranks");
  wf_cloth_group_destroy(g);
  wf_buffer *buf = NULL;
  CHECK_OK(wf_buffer_create(th_host, (size_t)wf_cloth_count(c) * 16, 0, NULL, &buf));
  CHECK_ERROR(wf_cloth_copy_positions(c, buf, 0), WF_ERR_UNSUPPORTED, "ranked", "mpi_comm");
  wf_buffer_destroy(buf, NULL);
  wf_partition_view v;
  int other = rank_of(0, 4) == rank_ ? 3 : 0;
  CHECK_ERROR(wf_cloth_partition_view(c, other, &v), WF_ERR_INVALID, "ranked", "rank");
  wf_cloth_destroy(c);
  /* more ranks than partitions */
  if (ranks_ >= 3) {
    CHECK_ERROR(build(&(opts){WF_CLOTH_SPRINGS, 2, false, false, 0, &world_}, &c), WF_ERR_INVALID,
                "ranked", "MPI ranks");
    wf_cloth_destroy(c);
  }
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(sheet_springs_bitwise_4_partitions),
      TH_TEST(sheet_xpbd_bitwise_4_partitions),
      TH_TEST(sheet_xpbd_one_partition_a_rank),
      TH_TEST(sheet_springs_staged),
      TH_TEST(sheet_xpbd_direct),
      TH_TEST(forces_on_rank_0_only),
      TH_TEST(fold_xpbd_contact),
      TH_TEST(fold_springs_contact),
      TH_TEST(checkpoint_3_ranks_to_2_springs),
      TH_TEST(checkpoint_3_ranks_to_2_xpbd),
      TH_TEST(refusals_name_the_cloth),
  };
  return th_mpi_main(argc, argv, tests, TH_COUNT(tests));
}
