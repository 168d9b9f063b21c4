/* The bundled heap of cloths (scenes/cloth_heap.json, simulation.cloth_collision): four separate
 * sheets fall one above the other onto a ball and pile up. At the end of every frame no two
 * triangles intersect, within a sheet or between sheets (wf_cloth_intersections_count over all
 * four as one set, exact); at the end the sheets lie on each other (some vertex of each upper
 * sheet within 3 thicknesses of the sheet under it: they did meet, so the count was tested);
 * and without cloth_collision the sheets fall through each other (so the check can fail); a
 * checkpoint of the heap resumes bitwise.
 *
 * The fast variant (CI, < 3 s a case) runs the scene with 10 x 10 sheets for 24 frames (0.4 s:
 * the lowest lands on the ball at ~0.13 s, the others on it one after the other); the scene as
 * written (16 x 16, 150 frames) with WEFT_TEST_SLOW=1 TH_WATCHDOG_S=0 (about 80 s of one CPU
 * core; measured: no intersecting pair at any of the 150 frame ends, the sheets 7.6 mm apart). Runs
 * on `--device` (cpu by default).
 */
#define _POSIX_C_SOURCE 200809L /* getpid */

#include <unistd.h>

#include "harness.h"

#include "weft/cloth.h"
#include "weft/scene.h"
#include "weft/world.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

enum { SHEETS = 4, MAXV = 4 * 16 * 16, MAXT = 4 * 2 * 15 * 15 };

static int slow_enabled(void) {
  const char *s = getenv("WEFT_TEST_SLOW");
  return s && strcmp(s, "1") == 0;
}

/* All the cloths' world positions (rows in object order) and their triangles, re-indexed. */
static int gather(wf_world *w, const wf_scene *sc, float (*p)[4], uint32_t *tris, uint32_t *nv,
                  uint32_t *nt, uint32_t first[SHEETS + 1]) {
  *nv = *nt = 0;
  for (int i = 0; i < sc->cloth_count; i++) {
    wf_world_object o;
    int obj = sc->emitter_count + i;
    if (wf_world_object_get(w, obj, &o) != WF_OK ||
        wf_world_object_download(w, obj, p + *nv, NULL) != WF_OK)
      return 0;
    for (uint32_t k = 0; k < 3 * o.triangle_count; k++)
      tris[3 * *nt + k] = o.triangles[k] + *nv;
    first[i] = *nv;
    *nv += o.point_count, *nt += o.triangle_count;
  }
  first[sc->cloth_count] = *nv;
  return 1;
}

/* Runs the heap; returns the most intersecting pairs at a frame end, and in *gap the largest
 * over the upper sheets of the least distance from a vertex of it to a vertex of the one below. */
static uint64_t heap(const char *const *sets, int n, double *gap, double *thickness) {
  char path[512];
  snprintf(path, sizeof path, "%s/scenes/cloth_heap.json", WEFT_SOURCE_DIR);
  wf_scene_overrides ov = {sets, n};
  wf_scene *sc = NULL;
  if (wf_scene_load(path, &ov, &sc) != WF_OK) {
    TH_FAIL("%s: %s", path, wf_scene_errors());
    return UINT64_MAX;
  }
  if (sc->cloth_count != SHEETS) {
    TH_FAIL("%s: %d cloths, the test expects %d", path, sc->cloth_count, SHEETS);
    wf_scene_destroy(sc);
    return UINT64_MAX;
  }
  *thickness = sc->cloths[0].material.thickness;
  wf_world_desc d = wf_world_desc_default();
  d.device = th_kind;
  wf_world *w = NULL;
  if (wf_world_create(sc, &d, &w) != WF_OK) {
    TH_FAIL("wf_world_create: %s", wf_last_error());
    wf_scene_destroy(sc);
    return UINT64_MAX;
  }
  static float p[MAXV][4];
  static uint32_t tris[3 * MAXT];
  uint32_t nv, nt, first[SHEETS + 1];
  uint64_t worst = 0;
  for (int f = 0; f < wf_world_frames(w); f++) {
    uint64_t c = 0;
    if (wf_world_step(w, 1) != WF_OK || !gather(w, sc, p, tris, &nv, &nt, first) ||
        wf_cloth_intersections_count(&p[0][0], 4, nv, tris, nt, &c) != WF_OK) {
      TH_FAIL("frame %d: %s", f, wf_last_error());
      break;
    }
    worst = c > worst ? c : worst;
  }
  *gap = 0.0;
  for (int s = 1; s < SHEETS; s++) {
    double best = 1e9;
    for (uint32_t i = first[s]; i < first[s + 1]; i++)
      for (uint32_t j = first[s - 1]; j < first[s]; j++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
          d2 += ((double)p[i][k] - p[j][k]) * ((double)p[i][k] - p[j][k]);
        best = fmin(best, sqrt(d2));
      }
    *gap = fmax(*gap, best);
  }
  wf_world_destroy(w);
  wf_scene_destroy(sc);
  return worst;
}

#define SMALL                                                                                      \
  "cloths[0].grid.resolution=[10,10]", "cloths[1].grid.resolution=[10,10]",                        \
      "cloths[2].grid.resolution=[10,10]", "cloths[3].grid.resolution=[10,10]"

TEST(heap_holds) {
  const char *sets[] = {SMALL, "simulation.frames=24"};
  double gap, th;
  uint64_t worst = heap(sets, 5, &gap, &th);
  printf("  heap (10 x 10, 24 frames): worst %llu intersecting pairs, sheets %.4f m apart "
         "(thickness %.4f)\n",
         (unsigned long long)worst, gap, th);
  CHECK_EQ_INT(worst, 0);
  CHECK(gap < 3.0 * th);
}

TEST(heap_without_cloth_collision_intersects) {
  const char *sets[] = {SMALL, "simulation.frames=24", "simulation.cloth_collision=false"};
  double gap, th;
  uint64_t worst = heap(sets, 6, &gap, &th);
  printf("  without cloth_collision: worst %llu intersecting pairs\n", (unsigned long long)worst);
  CHECK(worst > 0);
}

/* A checkpoint of the heap (each cloth's state; the group holds none) resumed into a new world
 * continues bitwise as the uninterrupted run: 16 frames against 10 + save + load + 6 (the sheets
 * meet from about frame 10 on: the resumed frames hold contact between cloths). */
TEST(heap_checkpoint_resume_bitwise) {
  const char *sets[] = {SMALL};
  char scene[512], path[256];
  snprintf(scene, sizeof scene, "%s/scenes/cloth_heap.json", WEFT_SOURCE_DIR);
  snprintf(path, sizeof path, "%s/weft_test_heap_%d.wfck",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
  wf_scene_overrides ov = {sets, 4};
  wf_scene *sc = NULL;
  if (wf_scene_load(scene, &ov, &sc) != WF_OK) {
    TH_FAIL("%s: %s", scene, wf_scene_errors());
    return;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = th_kind;
  wf_world *full = NULL, *half = NULL, *resumed = NULL;
  CHECK_OK(wf_world_create(sc, &d, &full));
  CHECK_OK(wf_world_create(sc, &d, &half));
  CHECK_OK(wf_world_create(sc, &d, &resumed));
  int first = sc->emitter_count;
  wf_scene_destroy(sc);
  if (!full || !half || !resumed) {
    wf_world_destroy(full), wf_world_destroy(half), wf_world_destroy(resumed);
    return;
  }
  CHECK_OK(wf_world_step(full, 16));
  CHECK_OK(wf_world_step(half, 10));
  CHECK_OK(wf_world_save(half, path));
  CHECK_OK(wf_world_load_checkpoint(resumed, path));
  CHECK_OK(wf_world_step(resumed, 6));
  static float a[MAXV][4], b[MAXV][4];
  for (int i = 0; i < SHEETS; i++) {
    wf_world_object o;
    CHECK_OK(wf_world_object_get(full, first + i, &o));
    CHECK_OK(wf_world_object_download(full, first + i, a, NULL));
    CHECK_OK(wf_world_object_download(resumed, first + i, b, NULL));
    CHECK(memcmp(a, b, sizeof(float[4]) * o.point_count) == 0);
  }
  /* the heap's physics includes cloth_collision: a world without it refuses the checkpoint,
   * naming the key */
  const char *off[] = {SMALL, "simulation.cloth_collision=false"};
  wf_scene_overrides ov2 = {off, 5};
  wf_world *other = NULL;
  if (wf_scene_load(scene, &ov2, &sc) == WF_OK) {
    CHECK_OK(wf_world_create(sc, &d, &other));
    wf_scene_destroy(sc);
    if (other)
      CHECK_ERROR(wf_world_load_checkpoint(other, path), WF_ERR_INVALID,
                  "simulation.cloth_collision");
    wf_world_destroy(other);
  } else {
    TH_FAIL("%s", wf_scene_errors());
  }
  remove(path);
  wf_world_destroy(full), wf_world_destroy(half), wf_world_destroy(resumed);
}

TEST(heap_full_scene) {
  if (!slow_enabled()) SKIP("the scene as written: WEFT_TEST_SLOW=1");
  double gap, th;
  uint64_t worst = heap(NULL, 0, &gap, &th);
  printf("  heap (as written): worst %llu, sheets %.4f m apart\n", (unsigned long long)worst, gap);
  CHECK_EQ_INT(worst, 0);
  CHECK(gap < 3.0 * th);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(heap_holds), TH_TEST(heap_without_cloth_collision_intersects),
      TH_TEST(heap_checkpoint_resume_bitwise), TH_TEST(heap_full_scene)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
