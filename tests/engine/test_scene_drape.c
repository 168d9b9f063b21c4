/* The bundled cloth scenes drape like cloth (issue 26): each is loaded from scenes/, run through a
 * world and the settled shape of its cloths checked against the geometry of the colliders under
 * them (read from the scene by name, so the thresholds follow the scene):
 *
 *  - cloth_drape.json: the sheet dropped on the ball wraps it: vertices below the ball's equator
 *    in every one of 12 sectors around it, the lowest far below the equator, none inside the ball,
 *    the top resting on the ball's top.
 *  - showcase.json: the round tablecloth lies on the table and its overhang hangs down: every
 *    vertex that started beyond the table's edge by an overhang d ends below the table top by most
 *    of d; the drape wraps its ball as above.
 *  - cloth_table.json: the same for a rectangular cloth on a mesh table, whose top carries the
 *    cloth's weight (stats.csv's table.fy).
 *
 * Each scene has a fast variant (CI: < 3 s a case here in RelWithDebInfo) and the full run of the
 * scene file as written (frames, substeps, particles) behind WEFT_TEST_SLOW=1 (about 10 s for
 * cloth_drape and 100 s for showcase on one CPU core). Why the fast variants still test the
 * scene's drape is said at each. Runs on `--device` (cpu by default).
 *
 * WEFT_SOURCE_DIR (a compile definition) locates scenes/ and assets/.
 */
#include "harness.h"

#include "weft/scene.h"
#include "weft/world.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

#define PI      3.14159265358979323846
#define SECTORS 12

static int slow_enabled(void) {
  const char *s = getenv("WEFT_TEST_SLOW");
  return s && strcmp(s, "1") == 0;
}

/* Scene `name` of scenes/ with the overrides; NULL (and a failure) when it does not load. */
static wf_scene *load(const char *name, const char *const *sets, int n) {
  char path[512];
  snprintf(path, sizeof path, "%s/scenes/%s", WEFT_SOURCE_DIR, name);
  wf_scene_overrides ov = {sets, n};
  wf_scene *sc = NULL;
  if (wf_scene_load(path, n ? &ov : NULL, &sc) != WF_OK) {
    TH_FAIL("%s: %s", path, wf_scene_errors());
    return NULL;
  }
  return sc;
}

static const wf_scene_collider *collider(const wf_scene *sc, const char *name) {
  for (int i = 0; i < sc->collider_count; i++)
    if (strcmp(sc->colliders[i].name, name) == 0) return &sc->colliders[i];
  return NULL;
}

/* The world object index of cloth `name`; -1 when the scene has none. */
static int cloth_object(const wf_scene *sc, const char *name) {
  for (int i = 0; i < sc->cloth_count; i++)
    if (strcmp(sc->cloths[i].name, name) == 0) return sc->emitter_count + i;
  return -1;
}

/* The positions of world object `obj` (point_count rows of xyz + inverse mass); malloc'd. */
static float (*positions(wf_world *w, int obj, uint32_t *n))[4] {
  wf_world_object o;
  if (wf_world_object_get(w, obj, &o) != WF_OK) return NULL;
  float(*p)[4] = malloc(sizeof *p * o.point_count);
  if (p && wf_world_object_download(w, obj, p, NULL) != WF_OK) {
    free(p);
    return NULL;
  }
  *n = o.point_count;
  return p;
}

/* Runs the scene for its wf_world_frames frames; the health check must pass (no NaN, the
 * scene's max_speed and max_penetration watchdogs). Returns the world or NULL. */
static wf_world *run(const wf_scene *sc, const char *what) {
  wf_world_desc d = wf_world_desc_default();
  d.device = th_kind;
  wf_world *w = NULL;
  if (wf_world_create(sc, &d, &w) != WF_OK) {
    TH_FAIL("%s: wf_world_create: %s", what, wf_last_error());
    return NULL;
  }
  if (wf_world_measure_collider_forces(w, true) != WF_OK) TH_FAIL("%s: %s", what, wf_last_error());
  return w;
}

static int step(wf_world *w, const char *what) {
  wf_status st = wf_world_step(w, wf_world_frames(w));
  if (st == WF_OK) st = wf_world_check(w);
  if (st != WF_OK) TH_FAIL("%s: %s", what, wf_last_error());
  return st == WF_OK;
}

/* A cloth dropped on a sphere collider (`ball`, resting on the ground) wraps it.
 *
 *  - every one of 12 sectors of azimuth around the ball's vertical axis holds vertices below the
 *    equator: it hangs all around, not slid off to one side (a sheet that slides off, or stays a
 *    flat plate, leaves most sectors empty);
 *  - the lowest vertex is below the equator by at least `min_drop` (the caller's, from how far
 *    the sheet's edge reaches past the quarter circle);
 *  - no vertex is inside the ball deeper than 1 cm (thickness keeps them ~thickness outside; 1 cm
 *    is the scene's max_penetration scale, far less than the radius);
 *  - the highest vertex rests on the ball's top: within [r - 2 cm, r + thickness + 2 cm] above
 *    its centre (2 cm: the sag of a cloth between the vertices on a 3-4 cm mesh, and contact
 *    slack). */
static void check_wraps(const float (*p)[4], uint32_t n, const wf_scene_collider *ball,
                        double thickness, double min_drop, const char *what) {
  const double *c = ball->center, r = ball->radius;
  int sector[SECTORS] = {0};
  double ymin = 1e30, ymax = -1e30, deepest = 0;
  for (uint32_t i = 0; i < n; i++) {
    double x = p[i][0] - c[0], y = p[i][1] - c[1], z = p[i][2] - c[2];
    ymin = fmin(ymin, y);
    ymax = fmax(ymax, y);
    deepest = fmax(deepest, r - sqrt(x * x + y * y + z * z));
    if (y < 0) {
      int s = (int)floor((atan2(z, x) + PI) / (2 * PI) * SECTORS);
      sector[s < 0 ? 0 : s >= SECTORS ? SECTORS - 1 : s]++;
    }
  }
  printf("  %s: lowest %.3f m below the ball's equator, top %.3f m above its centre, deepest %.4f "
         "m into it; below the equator by sector:",
         what, -ymin, ymax, deepest);
  for (int s = 0; s < SECTORS; s++)
    printf(" %d", sector[s]);
  printf("\n");
  for (int s = 0; s < SECTORS; s++)
    if (sector[s] == 0)
      TH_FAIL("%s: no vertex below the ball's equator in sector %d of %d", what, s, SECTORS);
  if (-ymin < min_drop)
    TH_FAIL("%s: the lowest vertex is %.3f m below the equator, want >= %.3f", what, -ymin,
            min_drop);
  if (deepest > 0.01) TH_FAIL("%s: a vertex is %.4f m inside the ball", what, deepest);
  if (ymax < r - 0.02 || ymax > r + thickness + 0.02)
    TH_FAIL("%s: the top is %.3f m above the ball's centre, want about r = %.3f", what, ymax, r);
}

/* ---- cloth_drape.json ------------------------------------------------------------------------ */

/* The 1.6 m sheet over the 1 m ball: its edges' midpoints are 0.8 m from the centre, past the
 * quarter circle (π r / 2 = 0.785 m), its corners 1.13 m, 0.35 m past it: so the corners must hang
 * at least ~0.3 m below the equator (0.25 m asked: folds take up some length). */
static void cloth_drape(const char *const *sets, int n) {
  wf_scene *sc = load("cloth_drape.json", sets, n);
  if (!sc) return;
  const wf_scene_collider *ball = collider(sc, "ball");
  int obj = cloth_object(sc, "sheet");
  REQUIRE(ball && obj >= 0);
  double thickness = sc->cloths[obj - sc->emitter_count].material.thickness;
  wf_world *w = run(sc, "cloth_drape");
  if (w && step(w, "cloth_drape")) {
    uint32_t nv = 0;
    float(*p)[4] = positions(w, obj, &nv);
    REQUIRE(p);
    check_wraps((const float(*)[4])p, nv, ball, thickness, 0.25, "cloth_drape sheet");
    free(p);
  }
  wf_world_destroy(w);
  wf_scene_destroy(sc);
}

/* Fast: 1 s (60 frames) of the 3 s scene at 6 substeps instead of 32. The sheet falls 0.4 m onto
 * the ball in 0.3 s and has wrapped it within 0.6 s (measured: the same sectors and lowest
 * vertex at 1 s as at 3 s); XPBD with 4 iterations is stable at any substep count, fewer only
 * make the cloth a little softer, not less of a drape. */
TEST(cloth_drape_fast) {
  const char *sets[] = {"simulation.frames=60", "simulation.substeps=6"};
  cloth_drape(sets, 2);
}

TEST(cloth_drape_full) {
  if (!slow_enabled()) SKIP("the whole scene (~10 s on a CPU): set WEFT_TEST_SLOW=1");
  cloth_drape(NULL, 0);
}

/* ---- showcase.json --------------------------------------------------------------------------- */

/* The tablecloth on the box `table`. With o(v) the horizontal distance by which vertex v started
 * beyond the table top's edge (0 over the table) and drop(v) how far below the top it ends:
 *  - vertices over the table lie on it: within [-1 cm, thickness + 2 cm] of the top;
 *  - beside a side (beyond one edge only), every vertex that started 10 cm or more out has
 *    drop >= 0.85 o − h, h = 4.25 cm the mesh's spacing. Hanging straight down it would drop o
 *    (more with stretch); the scene's 1 m/s wind tilts a hanging cotton flap by ~20° (drag
 *    ~0.5 N/m² against a weight of 1.5 N/m²: cos 20° = 0.94), and the cloth rounds the table's
 *    edge over about a mesh spacing instead of folding sharply there. Measured (full scene):
 *    drop >= 0.9 o − 3.8 cm at every o;
 *  - past a corner (beyond both edges), drop >= 0.5 o − h: a round cloth has more cloth around a
 *    square corner than room, so it gathers into flutes that keep their hems higher, as real
 *    tablecloths do. Measured: drop >= 0.9 o − 11 cm, at o <= 0.3 m;
 *  - the lowest vertex is below the top by at least 0.8 of the overhang at the middle of a side
 *    (radius − half width; measured 0.98).
 * A cloth that lies flat (drop 0) or sticks out fails the second and third for every o >= 10 cm. */
static void check_tablecloth(const float (*rest)[4], const float (*p)[4], uint32_t n,
                             const wf_scene_collider *table, double thickness) {
  const double *c = table->center, *he = table->half_extents, h = 0.0425;
  double top = c[1] + he[1], lowest = 1e30, rmax = 0, side_min = 1e30, corner_min = 1e30;
  int over = 0, sides = 0, corners = 0, bad_on = 0;
  for (uint32_t i = 0; i < n; i++) {
    double dx = fmax(fabs(rest[i][0] - c[0]) - he[0], 0);
    double dz = fmax(fabs(rest[i][2] - c[2]) - he[2], 0);
    double o = sqrt(dx * dx + dz * dz), drop = top - p[i][1];
    rmax = fmax(rmax, hypot(rest[i][0] - c[0], rest[i][2] - c[2]));
    lowest = fmin(lowest, -drop);
    if (o == 0) {
      over++;
      /* within one mesh spacing of an edge a vertex may ride the fold over it */
      int inner = fabs(rest[i][0] - c[0]) < he[0] - h && fabs(rest[i][2] - c[2]) < he[2] - h;
      if (inner && (drop > 0.01 || -drop > thickness + 0.02)) bad_on++;
    } else if (o >= 0.1 && (dx == 0 || dz == 0)) {
      sides++;
      side_min = fmin(side_min, drop - (0.85 * o - h)); /* >= 0 */
    } else if (o >= 0.1) {
      corners++;
      corner_min = fmin(corner_min, drop - (0.5 * o - h)); /* >= 0 */
    }
  }
  double side = rmax - fmin(he[0], he[2]);
  printf("  showcase tablecloth: %d vertices over the table; off it by >= 10 cm: drop − (0.85 o − "
         "h) >= %.3f m beside the sides (%d), drop − (0.5 o − h) >= %.3f m past the corners (%d); "
         "lowest %.3f m below the top (side overhang %.3f m)\n",
         over, side_min, sides, corner_min, corners, -lowest, side);
  REQUIRE(over > 0 && sides > 0 && corners > 0);
  if (bad_on) TH_FAIL("showcase tablecloth: %d vertices over the table are not on its top", bad_on);
  if (side_min < 0)
    TH_FAIL("showcase tablecloth: beside a side a vertex hangs %.3f m short of 0.85 o − h",
            -side_min);
  if (corner_min < 0)
    TH_FAIL("showcase tablecloth: past a corner a vertex hangs %.3f m short of 0.5 o − h",
            -corner_min);
  if (-lowest < 0.8 * side)
    TH_FAIL("showcase tablecloth: lowest %.3f m below the top, want >= %.3f", -lowest, 0.8 * side);
}

/* The drape: a 1.2 m sheet over the 0.6 m ball: the edges' midpoints reach 0.6 − π 0.3 / 2 =
 * 0.13 m past the quarter circle, the corners 0.38 m; the ball's equator is 0.3 m above the ground,
 * so the corners reach the ground: the lowest vertex is at least 0.25 m below the equator. */
static void showcase(const char *const *sets, int n) {
  wf_scene *sc = load("showcase.json", sets, n);
  if (!sc) return;
  const wf_scene_collider *table = collider(sc, "table"), *ball = collider(sc, "ball");
  int tc = cloth_object(sc, "tablecloth"), dr = cloth_object(sc, "drape");
  REQUIRE(table && ball && table->type == WF_SCENE_BOX && tc >= 0 && dr >= 0);
  double tc_thick = sc->cloths[tc - sc->emitter_count].material.thickness;
  double dr_thick = sc->cloths[dr - sc->emitter_count].material.thickness;
  wf_world *w = run(sc, "showcase");
  uint32_t n0 = 0, n1 = 0, n2 = 0;
  float(*rest)[4] = w ? positions(w, tc, &n0) : NULL;
  if (w && rest && step(w, "showcase")) {
    float(*p)[4] = positions(w, tc, &n1);
    float(*q)[4] = positions(w, dr, &n2);
    REQUIRE(p && q && n0 == n1);
    check_tablecloth((const float(*)[4])rest, (const float(*)[4])p, n1, table, tc_thick);
    check_wraps((const float(*)[4])q, n2, ball, dr_thick, 0.25, "showcase drape");
    free(p);
    free(q);
  }
  free(rest);
  wf_world_destroy(w);
  wf_scene_destroy(sc);
}

/* Fast: 0.75 s (45 frames) of the 4 s scene at 6 substeps instead of 48, without the particle
 * emitters, and with the banner (a mass-spring cloth, whose explicit step needs the 48 substeps)
 * on XPBD. The emitters fall 1 m and more away from the tablecloth and the drape, and the banner
 * hangs 1 m behind the table, so neither touches them. Both cloths fall 0.1 to 0.15 m and have
 * settled within 0.75 s (the measured shape then is that at 4 s); XPBD is stable at any substep
 * count, fewer only make the cloth a little softer (it hangs a little lower). */
TEST(showcase_fast) {
  const char *sets[] = {"simulation.frames=45", "simulation.substeps=6", "particles=[]",
                        "cloths[2].integrator=xpbd"};
  showcase(sets, 4);
}

TEST(showcase_full) {
  if (!slow_enabled()) SKIP("the whole scene (~100 s on a CPU): set WEFT_TEST_SLOW=1");
  showcase(NULL, 0);
}

/* ---- cloth_table.json ------------------------------------------------------------------------ */

/* The 1.6 x 1.3 m tablecloth on the mesh table (assets/meshes/table.obj, scripts/make_colliders.py:
 * top 1.0 x 0.7 m, upper face at y = 0.775 m, centred on the y axis) overhangs it by 0.3 m on every
 * side. With o(v) how far vertex v started beyond the top's edge and drop(v) how far below the top
 * it ends, as for the showcase's tablecloth (h = 3.4 cm, the grid's spacing):
 *  - vertices over the table, more than h from its edges, lie on it: within [-1 cm, thickness +
 *    2 cm] of the top;
 *  - beside a side, every vertex that started 10 cm or more out has drop >= 0.85 o − h (hanging
 *    straight down it drops o; the cloth rounds the edge over about a spacing);
 *  - past a corner, drop >= 0.5 o − h (the corners gather into folds);
 *  - the table carries the cloth's weight: table.fy = −m g to `tol` (the frame's average includes
 *    the rate of change of the cloth's momentum, whose flaps still swing: measured 3.9% at 0.75 s
 *    in the fast run, within 2% after 1.4 s of the full one).
 * A cloth that stays flat (drop 0) fails the second and third for every o >= 10 cm. */
static void cloth_table(const char *const *sets, int n, double tol) {
  wf_scene *sc = load("cloth_table.json", sets, n);
  if (!sc) return;
  int obj = cloth_object(sc, "tablecloth");
  const wf_scene_collider *table = collider(sc, "table");
  REQUIRE(obj >= 0 && table && table->type == WF_SCENE_MESH);
  double thickness = sc->cloths[obj - sc->emitter_count].material.thickness;
  const double top = 0.775, hx = 0.5, hz = 0.35, h = 1.6 / 47.0;
  wf_world *w = run(sc, "cloth_table");
  uint32_t n0 = 0, n1 = 0;
  float(*rest)[4] = w ? positions(w, obj, &n0) : NULL;
  if (w && rest && step(w, "cloth_table")) {
    float(*p)[4] = positions(w, obj, &n1);
    REQUIRE(p && n0 == n1);
    double side_min = 1e30, corner_min = 1e30, lowest = 1e30, mass = 0;
    int over = 0, sides = 0, corners = 0, bad_on = 0;
    for (uint32_t i = 0; i < n1; i++) {
      double dx = fmax(fabs(rest[i][0]) - hx, 0), dz = fmax(fabs(rest[i][2]) - hz, 0);
      double o = sqrt(dx * dx + dz * dz), drop = top - p[i][1];
      mass += p[i][3] > 0.0f ? 1.0 / p[i][3] : 0.0;
      lowest = fmin(lowest, -drop);
      if (o == 0) {
        over++;
        int inner = fabs(rest[i][0]) < hx - h && fabs(rest[i][2]) < hz - h;
        if (inner && (drop > 0.01 || -drop > thickness + 0.02)) bad_on++;
      } else if (o >= 0.1 && (dx == 0 || dz == 0)) {
        sides++;
        side_min = fmin(side_min, drop - (0.85 * o - h));
      } else if (o >= 0.1) {
        corners++;
        corner_min = fmin(corner_min, drop - (0.5 * o - h));
      }
    }
    double f[3], t[3];
    int k = -1;
    for (int j = 0; j < wf_world_collider_count(w); j++)
      if (strcmp(wf_world_collider_name(w, j), "table") == 0) k = j;
    REQUIRE(k >= 0);
    CHECK_OK(wf_world_collider_force(w, k, f, t));
    double W = mass * 9.81;
    printf("  cloth_table: %d vertices over the table; off it by >= 10 cm: drop − (0.85 o − h) >= "
           "%.3f m beside the sides (%d), drop − (0.5 o − h) >= %.3f m past the corners (%d); "
           "lowest %.3f m below the top; table.fy %.3f N, weight %.3f N\n",
           over, side_min, sides, corner_min, corners, -lowest, f[1], W);
    REQUIRE(over > 0 && sides > 0 && corners > 0);
    if (bad_on) TH_FAIL("cloth_table: %d vertices over the table are not on its top", bad_on);
    if (side_min < 0)
      TH_FAIL("cloth_table: beside a side a vertex hangs %.3f m short of 0.85 o − h", -side_min);
    if (corner_min < 0)
      TH_FAIL("cloth_table: past a corner a vertex hangs %.3f m short of 0.5 o − h", -corner_min);
    CHECK_NEAR(f[1] / W, -1.0, tol);
    free(p);
  }
  free(rest);
  wf_world_destroy(w);
  wf_scene_destroy(sc);
}

/* Fast: 0.75 s (45 frames) of the 3 s scene at 6 substeps instead of 32: the cloth falls 6 cm and
 * has draped within 0.5 s; XPBD is stable at any substep count, fewer only make the cloth a little
 * softer (it hangs a little lower). */
TEST(cloth_table_fast) {
  const char *sets[] = {"simulation.frames=45", "simulation.substeps=6"};
  cloth_table(sets, 2, 0.06);
}

TEST(cloth_table_full) {
  if (!slow_enabled()) SKIP("the whole scene (~60 s on a CPU): set WEFT_TEST_SLOW=1");
  cloth_table(NULL, 0, 0.02);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(cloth_drape_fast), TH_TEST(cloth_drape_full),
                                  TH_TEST(showcase_fast),    TH_TEST(showcase_full),
                                  TH_TEST(cloth_table_fast), TH_TEST(cloth_table_full)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
