/* Forces of particles on colliders (wf_particles_collider_force): a settled pile in a box rests
 * its weight on the colliders (DEM and XPBD); momentum balance over a frame (DEM: the particles'
 * momentum changes by (M g - sum of forces on colliders) T exactly but for rounding); the torque
 * of an off-centre load is r x F; a moving wall pushing grains takes the momentum it gives them;
 * 1..4 partitions give bitwise the same forces. */
#include "harness.h"
#include "weft/particles.h"

#define G 9.81

typedef struct pile_opts {
  int model;       /* WF_CONTACT_DEM / XPBD */
  float cx, cz;    /* the block's centre, m */
  bool walls;      /* four side walls around it */
  int devices;     /* partitions (0: th_dev0 only) */
  float gravity;   /* m/s² down */
  float push;      /* > 0: a wall at x = cx - 0.35 moving at this speed in +x */
  bool layer;      /* one layer of separate grains (0.12 m apart), not a block */
  float relax;     /* XPBD relaxation (0: the default) */
  bool unmeasured; /* leave wf_particles_measure_collider_forces off */
} pile_opts;

static wf_device *dev_of(int i) {
  char name[32];
  wf_device *d = NULL;
  snprintf(name, sizeof name, "%s:%d", th_kind, i);
  if (wf_device_get(name, &d) != WF_OK) d = th_dev0;
  wf_clear_error();
  return d;
}

static wf_collider_desc plane(const char *name, float nx, float ny, float nz, float off) {
  wf_collider_desc c = wf_collider_desc_default();
  c.name = name;
  c.normal[0] = nx, c.normal[1] = ny, c.normal[2] = nz;
  c.offset = off;
  c.restitution = 0.3f;
  return c;
}

/* A 5 x 6 x 5 block of 0.05 m grains (0.52 kg each), 1 cm above the floor y = 0; with walls,
 * in a 0.6 m box (colliders 1..4). Collider 0 is the floor. */
static wf_particles *pile(const pile_opts *o) {
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "pile";
  d.substeps = 16;
  d.contact_model = o->model;
  d.gravity[1] = -o->gravity;
  if (o->relax > 0.0f) d.relaxation = o->relax;
  if (o->devices > 0) {
    for (int i = 0; i < o->devices; i++)
      d.devices[i] = dev_of(i);
    d.device_count = o->devices;
  } else {
    d.devices[0] = th_dev0;
  }
  wf_particles *ps = NULL;
  if (wf_particles_create(&d, &ps) != WF_OK) {
    TH_FAIL("create: %s", wf_last_error());
    return NULL;
  }
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 1e4f, m.restitution = 0.3f, m.friction = 0.5f;
  uint32_t mi = 0;
  wf_status st = wf_particles_add_material(ps, &m, &mi);
  wf_particles_emitter e = wf_particles_emitter_default();
  e.radius = 0.05f, e.spacing = 0.1f, e.jitter = 0.004f, e.seed = 3, e.material = mi;
  e.center[0] = o->cx, e.center[1] = 0.31f, e.center[2] = o->cz;
  e.half_extents[0] = 0.25f, e.half_extents[1] = 0.3f, e.half_extents[2] = 0.25f;
  if (o->layer) e.spacing = 0.12f, e.center[1] = 0.06f, e.half_extents[1] = 0.06f;
  if (st == WF_OK) st = wf_particles_emit(ps, &e, NULL, NULL);
  wf_collider_desc c[5] = {plane("floor", 0, 1, 0, 0), plane("x-", 1, 0, 0, o->cx - 0.3f),
                           plane("x+", -1, 0, 0, -(o->cx + 0.3f)),
                           plane("z-", 0, 0, 1, o->cz - 0.3f),
                           plane("z+", 0, 0, -1, -(o->cz + 0.3f))};
  if (o->push > 0.0f) { /* one wall, moving into the grains */
    c[1].offset = o->cx - 0.36f;
    c[1].velocity[0] = o->push;
  }
  int n = o->walls ? 5 : o->push > 0.0f ? 2 : 1;
  for (int k = 0; k < n && st == WF_OK; k++)
    st = wf_particles_add_collider(ps, &c[k], NULL);
  if (st == WF_OK && !o->unmeasured) st = wf_particles_measure_collider_forces(ps, true);
  if (st != WF_OK) {
    TH_FAIL("setup: %s", wf_last_error());
    wf_particles_destroy(ps);
    return NULL;
  }
  return ps;
}

static double total_mass(wf_particles *ps) {
  uint32_t n = wf_particles_count(ps);
  float(*x)[4] = malloc((size_t)n * sizeof *x), (*v)[4] = malloc((size_t)n * sizeof *v);
  double m = 0.0;
  if (x && v && wf_particles_download(ps, x, v) == WF_OK)
    for (uint32_t i = 0; i < n; i++)
      m += v[i][3] > 0.0f ? 1.0 / v[i][3] : 0.0;
  free(x), free(v);
  return m;
}

/* The sum over colliders 0..n of the force on them. */
static void force_sum(wf_particles *ps, int n, double f[3], double t[3]) {
  f[0] = f[1] = f[2] = t[0] = t[1] = t[2] = 0.0;
  for (int k = 0; k < n; k++) {
    double fk[3], tk[3];
    CHECK_OK(wf_particles_collider_force(ps, (uint32_t)k, fk, tk));
    for (int j = 0; j < 3; j++)
      f[j] += fk[j], t[j] += tk[j];
  }
}

/* After settling, the floor and walls carry the weight. Tolerance 0.5% of M g: the frame average
 * differs from M g by the rate of change of the pile's momentum, which the settled pile's
 * residual motion keeps below 1e-3 M g here (checked below as well); walls carry part of it by
 * friction (Janssen), so the sum over all colliders is what must balance. */
static void settled_pile_carries_weight(void) {
  pile_opts o = {.model = WF_CONTACT_DEM, .walls = true, .gravity = (float)G};
  wf_particles *ps = pile(&o);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 90));
  double M = total_mass(ps);
  double f[3], t[3];
  force_sum(ps, 5, f, t);
  double W = M * G;
  printf("  DEM pile %.2f kg: sum of fy / W = %.5f, fx / W = %.2e, fz / W = %.2e\n", M, f[1] / W,
         f[0] / W, f[2] / W);
  CHECK(M > 70.0);
  CHECK_NEAR(f[1] / W, -1.0, 5e-3);
  CHECK(fabs(f[0]) < 5e-3 * W && fabs(f[2]) < 5e-3 * W);
  double floor_f[3], floor_t[3];
  CHECK_OK(wf_particles_collider_force(ps, 0, floor_f, floor_t));
  CHECK(floor_f[1] < -0.5 * W); /* the floor carries most of it */
  wf_particles_destroy(ps);
}

TEST(dem_pile_weight) { settled_pile_carries_weight(); }

/* XPBD: each substep the prediction sinks a resting grain by h² g and the floor puts it back, an
 * impulse m h g: the force is the weight, to float rounding (tolerance 1e-5 W; a run of 1 s). A
 * deep XPBD pile is not tested against its weight: its Jacobi-averaged pair corrections
 * (relaxation / contacts) do not conserve momentum and it keeps creeping, so its colliders see
 * 1.06 to 2.1 times its weight over 0.5 to 3 s (6 layers; docs/scenes.md). */
TEST(xpbd_layer_weight) {
  pile_opts o = {.model = WF_CONTACT_XPBD, .walls = true, .gravity = (float)G, .layer = true};
  wf_particles *ps = pile(&o);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 60));
  double M = total_mass(ps), f[3], t[3];
  force_sum(ps, 5, f, t);
  CHECK(M > 5.0); /* 16 grains */
  printf("  XPBD layer %.3f kg: fy / W = %.8f\n", M, f[1] / (M * G));
  CHECK_NEAR(f[1] / (M * G), -1.0, 1e-5);
  CHECK(fabs(f[0]) < 1e-5 * M * G && fabs(f[2]) < 1e-5 * M * G);
  wf_particles_destroy(ps);
}
/* DEM conserves momentum in pairs (each side computes the other's force negated) and has no
 * damping here, so over one frame of an impact Δ(Σ m v) = (M g - Σ F_colliders) T. Tolerance
 * 1e-4 M g T: the float state's rounding (~1e-7 of each velocity, 750 particles). */
TEST(dem_momentum_balance_in_impact) {
  pile_opts o = {.model = WF_CONTACT_DEM, .walls = true, .gravity = (float)G};
  wf_particles *ps = pile(&o);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 10)); /* falling onto the floor */
  double M = total_mass(ps), T = 1.0 / 60.0;
  for (int frame = 0; frame < 3; frame++) {
    wf_particles_stats a, b;
    CHECK_OK(wf_particles_stats_get(ps, &a));
    CHECK_OK(wf_particles_step_frames(ps, 1));
    CHECK_OK(wf_particles_stats_get(ps, &b));
    double f[3], t[3];
    force_sum(ps, 5, f, t);
    double want = (-M * G - f[1]) * T, got = b.momentum[1] - a.momentum[1];
    printf("  frame %d: Δp_y %.6f, (−M g − fy) T %.6f kg m/s (fy = %.1f N, M g = %.1f N)\n", frame,
           got, want, f[1], M * G);
    CHECK_NEAR(got, want, 1e-4 * M * G * T);
    CHECK(fabs(f[1]) > 0.1 * M * G); /* an impact, not free fall */
  }
  wf_particles_destroy(ps);
}

/* An off-centre load on the floor (pivot at the origin): torque = r x F with r the pile's centre
 * of mass (the contacts spread symmetrically about it; the weight's line of action passes
 * through it). Tolerance 2% of |r| M g: the contact forces' centre differs from the centre of
 * mass by the settled pile's asymmetry. */
TEST(off_centre_load_torque) {
  pile_opts o = {
      .model = WF_CONTACT_DEM, .cx = 1.5f, .cz = -0.8f, .walls = true, .gravity = (float)G};
  wf_particles *ps = pile(&o);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 90));
  double f[3], t[3];
  force_sum(ps, 5, f, t);
  uint32_t n = wf_particles_count(ps);
  float(*x)[4] = malloc((size_t)n * sizeof *x), (*v)[4] = malloc((size_t)n * sizeof *v);
  REQUIRE(x && v);
  CHECK_OK(wf_particles_download(ps, x, v));
  double m = 0, c[3] = {0, 0, 0};
  for (uint32_t i = 0; i < n; i++) {
    double mi = 1.0 / v[i][3];
    m += mi;
    for (int j = 0; j < 3; j++)
      c[j] += mi * x[i][j];
  }
  for (int j = 0; j < 3; j++)
    c[j] /= m;
  double W = m * G;
  /* r x (0, -W, 0) = (c_z W, 0, -c_x W) */
  double scale = W * sqrt(c[0] * c[0] + c[2] * c[2]);
  printf("  torque (%.4f, %.4f, %.4f) N m vs r x F (%.4f, 0, %.4f)\n", t[0], t[1], t[2], c[2] * W,
         -c[0] * W);
  CHECK_NEAR(t[0], c[2] * W, 0.02 * scale);
  CHECK_NEAR(t[2], -c[0] * W, 0.02 * scale);
  CHECK(fabs(t[1]) < 0.02 * scale);
  free(x), free(v);
  wf_particles_destroy(ps);
}

/* A wall moving at 0.5 m/s through grains on a frictionless floor (no gravity, so the floor
 * carries nothing): the grains' momentum grows by exactly what the wall loses, -F_wall T (DEM,
 * no damping). Tolerance 1e-4 of the momentum pushed per frame, or 1e-6 kg m/s. */
TEST(moving_wall_pushes_particles) {
  pile_opts o = {.model = WF_CONTACT_DEM, .gravity = 0.0f, .push = 0.5f};
  wf_particles *ps = pile(&o);
  REQUIRE(ps);
  CHECK_OK(wf_particles_step_frames(ps, 6)); /* the wall reaches the grains */
  double T = 1.0 / 60.0, pushed = 0.0;
  for (int frame = 0; frame < 6; frame++) {
    wf_particles_stats a, b;
    CHECK_OK(wf_particles_stats_get(ps, &a));
    CHECK_OK(wf_particles_step_frames(ps, 1));
    CHECK_OK(wf_particles_stats_get(ps, &b));
    double f[3], t[3], wall[3];
    force_sum(ps, 2, f, t); /* the floor's friction too */
    CHECK_OK(wf_particles_collider_force(ps, 1, wall, t));
    double dp = b.momentum[0] - a.momentum[0];
    CHECK_NEAR(dp, -f[0] * T, 1e-4 * fabs(dp) + 1e-6);
    printf("  frame %d: Δp_x %.6f, −fx T %.6f kg m/s (wall fx %.2f N)\n", frame, dp, -f[0] * T,
           wall[0]);
    CHECK(wall[0] <= 0.0); /* grains push back against the wall's motion */
    pushed += dp;
  }
  CHECK(pushed > 1.0); /* the wall did push: 75 kg brought towards 0.5 m/s */
  wf_particles_destroy(ps);
}

/* The integer sums do not depend on the partitioning: 1, 2, 3, 4 partitions, memcmp. */
static void partitions_bitwise(int model) {
  double want[2][5][6];
  for (int np = 1; np <= 4; np++) {
    pile_opts o = {.model = model, .walls = true, .gravity = (float)G, .devices = np};
    wf_particles *ps = pile(&o);
    REQUIRE(ps);
    CHECK_OK(wf_particles_step_frames(ps, 12));
    /* then 5 substeps one by one (a split solver runs them in partition 0 alone) */
    double got[2][5][6];
    for (int r = 0; r < 2; r++) {
      if (r == 1) CHECK_OK(wf_particles_step_substeps(ps, 5));
      for (int k = 0; k < 5; k++)
        CHECK_OK(wf_particles_collider_force(ps, (uint32_t)k, got[r][k], got[r][k] + 3));
    }
    if (np == 1) {
      memcpy(want, got, sizeof want);
      CHECK(fabs(want[0][0][1]) > 1.0 && fabs(want[1][0][1]) > 1.0); /* there were contacts */
    } else if (memcmp(want, got, sizeof want) != 0) {
      TH_FAIL("%d partitions: floor force %.17g vs %.17g (frame), %.17g vs %.17g (substeps)", np,
              got[0][0][1], want[0][0][1], got[1][0][1], want[1][0][1]);
    }
    wf_particles_destroy(ps);
  }
}

TEST(dem_forces_bitwise_1_to_4_partitions) { partitions_bitwise(WF_CONTACT_DEM); }
TEST(xpbd_forces_bitwise_1_to_4_partitions) { partitions_bitwise(WF_CONTACT_XPBD); }

/* Positions and velocities (8 floats a particle) of ps. */
static float *state_of(wf_particles *ps, uint32_t *n) {
  *n = wf_particles_count(ps);
  float *s = calloc((size_t)*n * 8 + 1, sizeof *s);
  if (s && wf_particles_download(ps, (float(*)[4])s, (float(*)[4])(s + 4 * *n)) != WF_OK) {
    TH_FAIL("download: %s", wf_last_error());
    free(s);
    s = NULL;
  }
  return s;
}

/* The sums are made only when measured (wf_particles_measure_collider_forces), and measuring does
 * not change the motion: a pile that never measured them moves bitwise as one that did (1 and 2
 * partitions, DEM and XPBD); its first read is zero and turns the measuring on, after which the
 * next frame's forces are bitwise those of the pile that measured all along; turning it off again
 * keeps the motion. */
static void measured_on_demand(int model) {
  for (int np = 1; np <= 2; np++) {
    pile_opts a = {.model = model, .walls = true, .gravity = (float)G, .devices = np};
    pile_opts b = a;
    b.unmeasured = true;
    wf_particles *pa = pile(&a), *pb = pile(&b);
    REQUIRE(pa && pb);
    CHECK_OK(wf_particles_step_frames(pa, 10));
    CHECK_OK(wf_particles_step_frames(pb, 10));
    uint32_t na, nb;
    float *sa = state_of(pa, &na), *sb = state_of(pb, &nb);
    REQUIRE(sa && sb && na == nb);
    if (memcmp(sa, sb, (size_t)na * 8 * sizeof *sa) != 0)
      TH_FAIL("%d partitions: measuring the forces changed the motion", np);
    double fa[6], fb[6] = {1, 1, 1, 1, 1, 1};
    CHECK_OK(wf_particles_collider_force(pb, 0, fb, fb + 3)); /* not measured: zero, and on */
    CHECK(fb[0] == 0.0 && fb[1] == 0.0 && fb[5] == 0.0);
    CHECK_OK(wf_particles_step_frames(pa, 1));
    CHECK_OK(wf_particles_step_frames(pb, 1));
    CHECK_OK(wf_particles_collider_force(pa, 0, fa, fa + 3));
    CHECK_OK(wf_particles_collider_force(pb, 0, fb, fb + 3));
    CHECK(fa[1] < -1.0); /* the pile pushes the floor down: not a comparison of zeros */
    if (memcmp(fa, fb, sizeof fa) != 0)
      TH_FAIL("%d partitions: floor fy %.17g measured from the start, %.17g from frame 10", np,
              fa[1], fb[1]);
    CHECK_OK(wf_particles_measure_collider_forces(pa, false));
    CHECK_OK(wf_particles_step_frames(pa, 2));
    CHECK_OK(wf_particles_step_frames(pb, 2));
    free(sa), free(sb);
    sa = state_of(pa, &na), sb = state_of(pb, &nb);
    REQUIRE(sa && sb);
    if (memcmp(sa, sb, (size_t)na * 8 * sizeof *sa) != 0)
      TH_FAIL("%d partitions: turning the measuring off changed the motion", np);
    free(sa), free(sb);
    wf_particles_destroy(pa);
    wf_particles_destroy(pb);
  }
}

TEST(dem_measured_on_demand) { measured_on_demand(WF_CONTACT_DEM); }
TEST(xpbd_measured_on_demand) { measured_on_demand(WF_CONTACT_XPBD); }

TEST(bad_arguments) {
  pile_opts o = {.model = WF_CONTACT_DEM, .gravity = (float)G};
  wf_particles *ps = pile(&o);
  REQUIRE(ps);
  double f[3], t[3];
  CHECK_OK(wf_particles_collider_force(ps, 0, f, t)); /* before any frame: zero */
  CHECK(f[0] == 0.0 && f[1] == 0.0 && t[2] == 0.0);
  CHECK_ERROR(wf_particles_collider_force(ps, 1, f, t), WF_ERR_INVALID, "collider 1");
  CHECK_STATUS(wf_particles_collider_force(NULL, 0, f, t), WF_ERR_INVALID);
  wf_particles_destroy(ps);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(dem_pile_weight),
      TH_TEST(dem_measured_on_demand),
      TH_TEST(xpbd_measured_on_demand),
      TH_TEST(xpbd_layer_weight),
      TH_TEST(dem_momentum_balance_in_impact),
      TH_TEST(off_centre_load_torque),
      TH_TEST(moving_wall_pushes_particles),
      TH_TEST(dem_forces_bitwise_1_to_4_partitions),
      TH_TEST(xpbd_forces_bitwise_1_to_4_partitions),
      TH_TEST(bad_arguments),
  };
  return th_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
