/* Cloths split over several devices inside a world (weft/world.h: on several devices every cloth
 * is a wf_cloth over all of them, except one with self-collision, which stays whole on the
 * first). Through the world API the state after N frames is bitwise (memcmp) that of the same
 * scene on cpu:0, for 1, 2, 3 and 4 partitions: a scene of cloths only (XPBD and mass-spring,
 * pins, a region pin, an attachment to a moving collider, gusty wind), the bundled mixed scene
 * scenes/split_mixed.json, and a cloth whose partition boundary passes through its pinned and
 * attached vertices for 2 and 4 partitions (asserted from the partitions' ids, not assumed).
 * Also: checkpoints of a split cloth saved on 3 devices are the bytes a 1-device run saves and
 * resume bitwise on 1 and on 3; the health check names the same vertex, frame and value; the
 * readback ring delivers what the downloads return; a self-colliding cloth stays whole and says so
 * in the placement report; a cloth with contact splits (bitwise, no intersecting triangle pair at
 * any frame end) while a contact group stays whole. Tolerance everywhere: none (memcmp): the split
 * cloth solver computes every vertex from the same bits in the same order as one solver.
 *
 * CPU devices only (cpu:0..3 of the harness), so it runs in CI. WEFT_SOURCE_DIR locates scenes/.
 */
#include "harness.h"

#include "cloth_owners.h"

#include "weft/cloth.h"
#include "weft/io.h"
#include "weft/scene.h"
#include "weft/world.h"

#define WORLD_SCENE_NAME "cloth_split.json"
#include "world_split_util.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

/* An XPBD sheet hung by its top corners with a region pin in the middle of its bottom edge, and a
 * spring flag held by a moving hand and pinned at one corner, in gusty wind above a ground and
 * past a sweeping sphere. */
static const char cloths_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 12, \"frames\": 12, \"devices\": \"cpu\","
    "  \"deterministic\": true},"
    " \"forces\": {\"wind\": {\"velocity\": [1.5, 0, 0.5], \"gust_amplitude\": 1,"
    "  \"gust_frequency\": 2}, \"drag\": 0.6},"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"},"
    "  {\"name\": \"ball\", \"type\": \"sphere\", \"center\": [-0.3, 0.4, -0.2], \"radius\": 0.1,"
    "   \"velocity\": [0.8, 0, 0]},"
    "  {\"name\": \"hand\", \"type\": \"sphere\", \"center\": [0.45, 0.75, 0], \"radius\": 0.02,"
    "   \"velocity\": [0, 0.2, 0.4]}],"
    " \"cloths\": ["
    "  {\"name\": \"sheet\", \"grid\": {\"size\": [0.5, 0.4], \"resolution\": [20, 16]},"
    "   \"center\": [-0.2, 0.5, -0.2], \"integrator\": \"xpbd\", \"iterations\": 2,"
    "   \"pins\": [\"top-left\", \"top-right\","
    "    {\"box\": {\"min\": [-0.22, 0.29, -0.3], \"max\": [-0.18, 0.31, -0.1]}}]},"
    "  {\"name\": \"flag\", \"grid\": {\"size\": [0.3, 0.2], \"resolution\": [15, 10]},"
    "   \"center\": [0.6, 0.6, 0], \"integrator\": \"spring\","
    "   \"material\": {\"mass\": 0.01, \"stretch_modulus\": 200, \"shear_modulus\": 60,"
    "    \"bend_rigidity\": 1e-3},"
    "   \"pins\": [\"bottom-left\"],"
    "   \"attachments\": [{\"collider\": \"hand\", \"pins\": [\"top-left\"]}]}]}";

/* The cloths of w and their triangle lists (the whole cloth's, whatever the split). */
static void same_triangles(wf_world *a, wf_world *b) {
  for (int i = 0; i < wf_world_object_count(a); i++) {
    wf_world_object oa, ob;
    CHECK_OK(wf_world_object_get(a, i, &oa));
    CHECK_OK(wf_world_object_get(b, i, &ob));
    if (oa.kind != WF_WORLD_CLOTH) continue;
    CHECK(oa.triangles && ob.triangles);
    CHECK_EQ_INT(oa.triangle_count, ob.triangle_count);
    if (oa.triangles && ob.triangles && oa.triangle_count == ob.triangle_count)
      CHECK(memcmp(oa.triangles, ob.triangles, (size_t)oa.triangle_count * 12) == 0);
  }
}

/* Runs text for `frames` frames on cpu:0 and on each device list; every run's state equals the
 * cpu:0 run's bit for bit, and every cloth is split: each device owns vertices of every cloth and
 * holds ghosts, the owned counts add up to the cloths' vertices, and no cloth is whole. */
static void split_equals_one_device(const char *text, const char *const *sets, int n_sets,
                                    int frames) {
  wf_world *ref = NULL;
  if (make_world(text, sets, n_sets, "cpu:0", &ref) != WF_OK) return;
  size_t bytes = 0, nb = 0;
  float *start = world_state(ref, &bytes);
  float *s = step(ref, frames) == WF_OK ? world_state(ref, &bytes) : NULL;
  wf_world_stats rs;
  CHECK_OK(wf_world_stats_get(ref, &rs));
  REQUIRE(s && start);
  CHECK(memcmp(s, start, bytes) != 0); /* not vacuous: things moved */
  free(start);
  int n_cloths = 0;
  for (int i = 0; i < wf_world_object_count(ref); i++) {
    wf_world_object o;
    CHECK_OK(wf_world_object_get(ref, i, &o));
    n_cloths += o.kind == WF_WORLD_CLOTH;
  }
  CHECK(n_cloths > 0);
  const char *lists[] = {"cpu:0,cpu:1", "cpu:0,cpu:1,cpu:2", "all"};
  for (int k = 0; k < 3; k++) {
    wf_world *w = NULL;
    if (make_world(text, sets, n_sets, lists[k], &w) != WF_OK) continue;
    int n_dev = wf_world_device_count(w);
    CHECK_EQ_INT(n_dev, k + 2);
    same_triangles(ref, w);
    if (step(w, frames) == WF_OK) {
      float *t = world_state(w, &nb);
      CHECK_EQ_INT(nb, bytes);
      if (t && nb == bytes) same_state(s, t, bytes, lists[k]);
      free(t);
      wf_world_stats ws;
      CHECK_OK(wf_world_stats_get(w, &ws));
      CHECK(memcmp(&ws.kinetic_energy, &rs.kinetic_energy, sizeof(double)) == 0);
      uint64_t vertices = 0;
      for (int i = 0; i < n_dev; i++) {
        wf_world_placement p;
        CHECK_OK(wf_world_placement_get(w, i, &p));
        CHECK_EQ_INT(p.cloths, n_cloths);
        CHECK_EQ_INT(p.whole_cloths, 0);
        CHECK(p.vertices > 0 && p.cloth_ghosts > 0 && p.cloth_bytes > 0);
        vertices += p.vertices;
      }
      CHECK_EQ_INT(vertices, rs.vertex_count);
    }
    wf_world_destroy(w);
  }
  wf_world_destroy(ref);
  free(s);
}

/* Cloths alone (XPBD and mass-spring, pins, a region pin, an attachment) on 1, 2, 3, 4 devices. */
TEST(cloths_split_is_bitwise) { split_equals_one_device(cloths_text, NULL, 0, 12); }

/* The bundled mixed scene (particles and two cloths), 5 frames, on 1, 2, 3 and 4 devices; and as
 * the scene has it (three devices). */
TEST(bundled_mixed_scene_is_bitwise) {
  char *text = th_read_file(WEFT_SOURCE_DIR "/scenes/split_mixed.json", NULL);
  REQUIRE(text);
  /* a third of the scene's grains, to stay fast in the sanitizer builds */
  const char *sets[] = {"particles[0].half_extents=[0.15, 0.06, 0.08]"};
  split_equals_one_device(text, sets, 1, 5);
  wf_world *w = NULL;
  if (make_world(text, sets, 1, NULL, &w) == WF_OK) {
    CHECK_EQ_INT(wf_world_device_count(w), 3);
    CHECK_OK(wf_world_step(w, 1)); /* the particles are distributed by the first frame */
    wf_world_placement p;
    CHECK_OK(wf_world_placement_get(w, 2, &p));
    CHECK(p.split && p.particles > 0 && p.cloths == 2 && p.vertices > 0);
  }
  wf_world_destroy(w);
  free(text);
}

/* Where global vertex v of a res[0] x res[1] grid cloth lives when split over n CPU devices with
 * the world's defaults (the partition depends on the topology, the integrator and the METIS
 * seed only). */
static wf_cloth *probe_split(int n, int integrator, const int res[2]) {
  static const char *names[] = {"cpu:0", "cpu:1", "cpu:2", "cpu:3"};
  wf_device *devs[4];
  for (int i = 0; i < n; i++)
    if (wf_device_get(names[i], &devs[i]) != WF_OK) return NULL;
  wf_cloth_desc d = wf_cloth_desc_default();
  d.integrator = integrator;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = res[0], g.resolution[1] = res[1];
  wf_cloth *cs = NULL;
  d.device_count = n;
  for (int i = 0; i < n; i++)
    d.devices[i] = devs[i];
  if (wf_cloth_create_grid(&d, &g, &cs) != WF_OK) TH_FAIL("probe split: %s", wf_last_error());
  return cs;
}

/* The vertices on a partition boundary: owned by one partition and a ghost in another (one
 * that owns a vertex of a triangle of theirs: cloth_owners.h). NULL after an error. */
static bool *boundary_of(wf_cloth *cs) {
  uint32_t nv = wf_cloth_count(cs);
  int *owner = malloc(nv * sizeof *owner);
  uint32_t *near = malloc(nv * sizeof *near);
  bool *on = calloc(nv, sizeof *on);
  bool ok = owner && near && on && cloth_owners(cs, owner, near);
  for (uint32_t v = 0; ok && v < nv; v++)
    on[v] = near[v] != 0;
  free(owner), free(near);
  if (!ok) free(on);
  return ok ? on : NULL;
}

/* A cloth whose partition boundary passes through its pinned vertices and through a vertex
 * attached to a moving collider, for 2 and for 4 partitions: chosen from the partitions the world
 * will make (checked: the world's per-device vertex counts are the probe's), then run on 1, 2 and
 * 4 devices and compared bit for bit; the pinned vertices have not moved. */
TEST(pins_on_the_partition_boundary) {
  const int res[2] = {16, 12};
  wf_cloth *cs2 = probe_split(2, WF_CLOTH_XPBD, res), *cs4 = probe_split(4, WF_CLOTH_XPBD, res);
  if (!cs2 || !cs4) {
    wf_cloth_destroy(cs2), wf_cloth_destroy(cs4);
    return;
  }
  /* solver ids (row 0 at the top) on both boundaries; pins from the top rows, the attached vertex
     from lower down */
  uint32_t picks[3], n_picks = 0, nv = (uint32_t)(res[0] * res[1]);
  bool *on2 = boundary_of(cs2), *on4 = boundary_of(cs4);
  for (uint32_t v = 0; on2 && on4 && v < nv && n_picks < 2; v++)
    if (on2[v] && on4[v]) picks[n_picks++] = v;
  for (uint32_t v = nv / 2; on2 && on4 && v < nv && n_picks < 3; v++)
    if (on2[v] && on4[v] && v != picks[0] && v != picks[1]) picks[n_picks++] = v;
  free(on2), free(on4);
  REQUIRE(n_picks == 3);
  wf_cloth_info i2, i4;
  CHECK_OK(wf_cloth_info_get(cs2, &i2));
  CHECK_OK(wf_cloth_info_get(cs4, &i4));
  wf_cloth_destroy(cs2), wf_cloth_destroy(cs4);
  /* the scene numbers vertices as the solver does (docs/scenes.md, "Vertex order") */
  uint32_t scene_id[3] = {picks[0], picks[1], picks[2]};
  char text[2048];
  snprintf(text, sizeof text,
           "{\"simulation\": {\"fps\": 60, \"substeps\": 12, \"frames\": 10, \"devices\": \"cpu\"},"
           " \"forces\": {\"wind\": [1, 0, 0.5], \"drag\": 0.5},"
           " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"},"
           "  {\"name\": \"hand\", \"type\": \"sphere\", \"center\": [2, 2, 2], \"radius\": 0.01,"
           "   \"velocity\": [0.3, 0.2, -0.4]}],"
           " \"cloths\": [{\"name\": \"sheet\", \"grid\": {\"size\": [0.6, 0.45], \"resolution\":"
           "  [%d, %d]}, \"center\": [0, 0.8, 0], \"integrator\": \"xpbd\", \"pins\": [%u, %u],"
           "  \"attachments\": [{\"collider\": \"hand\", \"pins\": [%u]}]}]}",
           res[0], res[1], scene_id[0], scene_id[1], scene_id[2]);
  wf_world *ref = NULL;
  if (make_world(text, NULL, 0, "cpu:0", &ref) != WF_OK) return;
  size_t bytes = 0, nb = 0;
  float *start = world_state(ref, &bytes);
  float *s = step(ref, 10) == WF_OK ? world_state(ref, &bytes) : NULL;
  wf_world_destroy(ref);
  REQUIRE(s && start);
  for (int k = 0; k < 3; k++) {
    const float *a = start + 4 * picks[k], *b = s + 4 * picks[k];
    CHECK(a[3] == 0.0f && b[3] == 0.0f); /* inverse mass 0: pinned */
    if (k < 2)
      CHECK(memcmp(a, b, 12) == 0);
    else
      CHECK(memcmp(a, b, 12) != 0); /* the attached vertex moved with the hand */
  }
  const char *lists[] = {"cpu:0,cpu:1", "all"};
  const wf_cloth_info *probe[] = {&i2, &i4};
  for (int k = 0; k < 2; k++) {
    wf_world *w = NULL;
    if (make_world(text, NULL, 0, lists[k], &w) != WF_OK) continue;
    for (int i = 0; i < wf_world_device_count(w); i++) {
      wf_world_placement p;
      CHECK_OK(wf_world_placement_get(w, i, &p));
      CHECK_EQ_INT(p.vertices, probe[k]->owned[i]);
      CHECK_EQ_INT(p.cloth_ghosts, probe[k]->ghosts[i]);
    }
    if (step(w, 10) == WF_OK) {
      float *t = world_state(w, &nb);
      CHECK(t && nb == bytes && same_state(s, t, bytes, lists[k]));
      free(t);
    }
    wf_world_destroy(w);
  }
  free(s), free(start);
}

/* A checkpoint saved at frame 5 on 3 devices is the very file a 1-device run saves at frame 5,
 * and resumes bitwise on 3 devices and on 1. */
TEST(checkpoint_of_split_cloths) {
  char path3[600], path1[600];
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path3, sizeof path3, "%s/weft_cloth_split_%d_3.wfck", base, (int)getpid());
  snprintf(path1, sizeof path1, "%s/weft_cloth_split_%d_1.wfck", base, (int)getpid());
  const char *three = "cpu:0,cpu:1,cpu:2";
  wf_world *full = NULL, *a = NULL, *one = NULL;
  if (make_world(cloths_text, NULL, 0, "cpu:0", &full) != WF_OK) return;
  size_t bytes = 0, nb = 0;
  float *ref = step(full, 12) == WF_OK ? world_state(full, &bytes) : NULL;
  wf_world_destroy(full);
  REQUIRE(ref);
  if (make_world(cloths_text, NULL, 0, three, &a) == WF_OK && step(a, 5) == WF_OK)
    CHECK_OK(wf_world_save(a, path3));
  if (make_world(cloths_text, NULL, 0, "cpu:0", &one) == WF_OK && step(one, 5) == WF_OK)
    CHECK_OK(wf_world_save(one, path1));
  wf_world_destroy(one);
  size_t n3 = 0, n1 = 0;
  char *f3 = th_read_file(path3, &n3), *f1 = th_read_file(path1, &n1);
  CHECK(f3 && f1 && n3 == n1 && n3 > 0 && memcmp(f3, f1, n3) == 0);
  free(f3), free(f1);
  if (a && step(a, 7) == WF_OK) {
    float *s = world_state(a, &nb);
    CHECK(s && nb == bytes && same_state(ref, s, bytes, "3 devices, saved at 5 and going on"));
    free(s);
  }
  wf_world_destroy(a);
  const char *who[] = {three, "cpu:0"};
  for (int k = 0; k < 2; k++) {
    wf_world *b = NULL;
    if (make_world(cloths_text, NULL, 0, who[k], &b) != WF_OK) continue;
    CHECK(step(b, 3) == WF_OK); /* somewhere else first: the load must replace it all */
    CHECK_OK(wf_world_load_checkpoint(b, path3));
    CHECK_EQ_INT(wf_world_frame(b), 5);
    if (step(b, 7) == WF_OK) {
      float *s = world_state(b, &nb);
      char what[96];
      snprintf(what, sizeof what, "resumed at 5 on %s", who[k]);
      CHECK(s && nb == bytes && same_state(ref, s, bytes, what));
      free(s);
    }
    wf_world_destroy(b);
  }
  free(ref);
  remove(path3), remove(path1);
}

/* A free-falling cloth goes faster than simulation.max_speed: on 3 devices the health check names
 * the same cloth, vertex, frame and value as on one, and the last-good checkpoints are the same
 * bytes (the snapshot is taken per partition and assembled in global order when written). */
TEST(health_names_the_vertex_on_split) {
  static const char text[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"devices\": \"cpu\", \"max_speed\": 1.5},"
      " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],"
      " \"cloths\": [{\"name\": \"held\", \"grid\": {\"size\": [0.3, 0.3], \"resolution\": [8, 8]},"
      "  \"center\": [-1, 1, 0], \"pins\": [\"top\"]},"
      "  {\"name\": \"falling\", \"grid\": {\"size\": [0.3, 0.3], \"resolution\": [10, 9]},"
      "  \"center\": [1, 2, 0]}]}";
  const char *devs[] = {"cpu:0", "cpu:0,cpu:1,cpu:2"};
  wf_world_health h[2];
  char msg[2][1024], path[2][600];
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  for (int k = 0; k < 2; k++) {
    snprintf(path[k], sizeof path[k], "%s/weft_cloth_good_%d_%d.wfck", base, (int)getpid(), k);
    wf_world *w = NULL;
    if (make_world(text, NULL, 0, devs[k], &w) != WF_OK) return;
    wf_status st = WF_OK;
    for (int f = 0; f < 60 && st == WF_OK; f++)
      st = wf_world_step(w, 1);
    if (st == WF_OK) st = wf_world_check(w);
    CHECK_ERROR(st, WF_ERR_INVALID, "cloth 'falling'", "max_speed");
    CHECK_OK(wf_world_health_get(w, true, &h[k]));
    snprintf(msg[k], sizeof msg[k], "%s", h[k].message);
    h[k].message = msg[k];
    CHECK_EQ_INT(h[k].quantity, WF_HEALTH_SPEED);
    CHECK_EQ_INT(h[k].object, 1);
    CHECK(h[k].value > 1.5);
    int64_t good = -1;
    CHECK_OK(wf_world_save_last_good(w, path[k], &good));
    CHECK_EQ_INT(good, h[k].frame - 1);
    wf_world_destroy(w);
  }
  CHECK_EQ_INT(h[1].frame, h[0].frame);
  CHECK_EQ_INT(h[1].index, h[0].index);
  CHECK(h[0].frame > 1);
  CHECK(memcmp(&h[1].value, &h[0].value, sizeof(double)) == 0);
  if (strcmp(msg[0], msg[1]) != 0) TH_FAIL("messages differ:\n  %s\n  %s", msg[0], msg[1]);
  size_t n0 = 0, n1 = 0;
  char *f0 = th_read_file(path[0], &n0), *f1 = th_read_file(path[1], &n1);
  CHECK(f0 && f1 && n0 == n1 && n0 > 0 && memcmp(f0, f1, n0) == 0);
  free(f0), free(f1);
  remove(path[0]), remove(path[1]);
}

/* The readback ring of a 3-device world of split cloths delivers, frame after frame, the
 * positions the downloads return. */
TEST(readback_of_split_cloths) {
  wf_world *w = NULL;
  if (make_world(cloths_text, NULL, 0, "cpu:0,cpu:1,cpu:2", &w) != WF_OK) return;
  wf_world_readback *rb = NULL;
  CHECK_OK(wf_world_readback_create(w, NULL, &rb));
  int n = wf_world_object_count(w);
  for (int f = 1; rb && f <= 4; f++) {
    CHECK_OK(wf_world_readback_begin_frame(rb));
    CHECK_OK(wf_world_step(w, 1));
    CHECK_OK(wf_world_readback_push(rb));
    CHECK_OK(wf_world_readback_wait_frames(rb, 0));
    wf_world_frame_view v;
    wf_status st = WF_NOT_READY;
    for (int tries = 0; tries < 2000 && st == WF_NOT_READY; tries++) {
      st = wf_world_readback_latest(rb, &v);
      if (st == WF_NOT_READY) th_sleep_ms(1);
    }
    CHECK_OK(st);
    if (st != WF_OK) break;
    CHECK_EQ_INT(v.frame, f);
    for (int i = 0; i < n; i++) {
      wf_world_object o;
      CHECK_OK(wf_world_object_get(w, i, &o));
      float(*pos)[4] = malloc((size_t)o.point_count * 16 + 16);
      CHECK_OK(wf_world_object_download(w, i, pos, NULL));
      char what[64];
      snprintf(what, sizeof what, "frame %d, cloth %d positions", f, i);
      same_state((const float *)pos, (const float *)v.pos[i], (size_t)o.point_count * 16, what);
      free(pos);
    }
    wf_world_readback_release(rb, v.slot);
  }
  wf_world_readback_destroy(rb);
  wf_world_destroy(w);
}

/* A cloth with self-collision cannot be split: on 3 devices it stays whole on the first (and the
 * placement report says so) while the other cloth splits; the result is still cpu:0's. */
TEST(self_colliding_cloth_stays_whole) {
  static const char text[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 8, \"frames\": 6, \"devices\": \"cpu\"},"
      " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],"
      " \"cloths\": [{\"name\": \"folded\", \"grid\": {\"size\": [0.3, 0.3], \"resolution\":"
      "  [10, 10]}, \"center\": [0, 0.3, 0], \"rotation\": [-90, 0, 0], \"self_collision\": true,"
      "  \"material\": {\"thickness\": 0.03}},"
      "  {\"name\": \"flag\", \"grid\": {\"size\": [0.3, 0.2], \"resolution\": [12, 8]},"
      "   \"center\": [1, 1, 0], \"pins\": [\"left\"]}]}";
  wf_world *ref = NULL, *w = NULL;
  if (make_world(text, NULL, 0, "cpu:0", &ref) != WF_OK) return;
  if (make_world(text, NULL, 0, "cpu:0,cpu:1,cpu:2", &w) != WF_OK) {
    wf_world_destroy(ref);
    return;
  }
  uint64_t vertices = 0;
  for (int i = 0; i < 3; i++) {
    wf_world_placement p;
    CHECK_OK(wf_world_placement_get(w, i, &p));
    CHECK_EQ_INT(p.whole_cloths, i == 0 ? 1 : 0);
    CHECK_EQ_INT(p.cloths, i == 0 ? 2 : 1);
    vertices += p.vertices;
  }
  CHECK_EQ_INT(vertices, 100 + 96);
  size_t ba = 0, bb = 0;
  float *a = step(ref, 6) == WF_OK ? world_state(ref, &ba) : NULL;
  float *b = step(w, 6) == WF_OK ? world_state(w, &bb) : NULL;
  CHECK(a && b && ba == bb && same_state(a, b, ba, "self-collision whole + a split cloth"));
  free(a), free(b);
  wf_world_destroy(w), wf_world_destroy(ref);
}

/* A strip with cloth contact falling on the ground piles into folds on itself. On several
 * devices it is split like any cloth (each partition sees every vertex's positions in the
 * contact stage, cloth_parts.h), and every frame end is bitwise cpu:0's with no intersecting
 * triangle pair (wf_cloth_intersections_count on the downloaded positions). */
static const char contact_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 24, \"devices\": \"cpu\","
    "  \"deterministic\": true},"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],"
    " \"cloths\": [{\"name\": \"strip\", \"grid\": {\"size\": [0.072, 0.936], \"resolution\":"
    "  [4, 40]}, \"center\": [0, 0.49, 0], \"rotation\": [5, 0, 0], \"integrator\": \"xpbd\","
    "  \"iterations\": 4, \"contact\": true,"
    "  \"material\": {\"preset\": \"cotton\", \"thickness\": 0.005}}]}";

enum { CONTACT_FRAMES = 24, CONTACT_NV = 160 };

/* Steps w frame by frame into states[f] (CONTACT_NV positions, then velocities); 0 intersecting
 * pairs at every frame end. */
static void contact_frames(wf_world *w, float (*states)[2 * CONTACT_NV][4], const char *what) {
  wf_world_object o;
  CHECK_OK(wf_world_object_get(w, 0, &o));
  REQUIRE(o.kind == WF_WORLD_CLOTH && o.point_count == CONTACT_NV);
  for (int f = 0; f < CONTACT_FRAMES; f++) {
    uint64_t n = 1;
    CHECK_OK(wf_world_step(w, 1));
    CHECK_OK(wf_world_object_download(w, 0, states[f], states[f] + CONTACT_NV));
    CHECK_OK(wf_cloth_intersections_count(&states[f][0][0], 4, CONTACT_NV, o.triangles,
                                          o.triangle_count, &n));
    if (n) TH_FAIL("%s: %llu intersecting pairs at frame %d", what, (unsigned long long)n, f + 1);
  }
}

TEST(contact_cloth_splits_bitwise) {
  static float want[CONTACT_FRAMES][2 * CONTACT_NV][4], got[CONTACT_FRAMES][2 * CONTACT_NV][4];
  wf_world *ref = NULL;
  if (make_world(contact_text, NULL, 0, "cpu:0", &ref) != WF_OK) return;
  contact_frames(ref, want, "cpu:0");
  wf_world_destroy(ref);
  /* it did fall and pile: the top end ends below a third of its height (0.96 m) */
  CHECK(want[CONTACT_FRAMES - 1][CONTACT_NV - 1][1] < 0.32f);
  const char *lists[] = {"cpu:0,cpu:1", "cpu:0,cpu:1,cpu:2", "all"};
  for (int k = 0; k < 3; k++) {
    wf_world *w = NULL;
    if (make_world(contact_text, NULL, 0, lists[k], &w) != WF_OK) continue;
    for (int i = 0; i < k + 2; i++) {
      wf_world_placement p;
      CHECK_OK(wf_world_placement_get(w, i, &p));
      CHECK_EQ_INT(p.cloths, 1);
      CHECK_EQ_INT(p.whole_cloths, 0);
      CHECK(p.vertices > 0 && p.vertices < CONTACT_NV);
    }
    contact_frames(w, got, lists[k]);
    for (int f = 0; f < CONTACT_FRAMES; f++)
      if (!same_state(&want[f][0][0], &got[f][0][0], sizeof want[f], lists[k])) {
        TH_FAIL("%s: frame %d differs from cpu:0", lists[k], f + 1);
        break;
      }
    wf_world_destroy(w);
  }
}

/* The cloths of a contact group (simulation.cloth_collision) run on one device: on 3 devices
 * they stay whole on the first, and the result is cpu:0's. */
TEST(contact_group_stays_whole) {
  static const char text[] =
      "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 6, \"devices\": \"cpu\","
      "  \"cloth_collision\": true},"
      " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],"
      " \"cloths\": [{\"name\": \"lower\", \"grid\": {\"size\": [0.3, 0.3], \"resolution\":"
      "  [8, 8]}, \"center\": [0, 0.05, 0], \"rotation\": [-90, 0, 0], \"contact\": true,"
      "  \"integrator\": \"xpbd\", \"material\": {\"thickness\": 0.005}},"
      "  {\"name\": \"upper\", \"grid\": {\"size\": [0.3, 0.3], \"resolution\": [8, 8]},"
      "   \"center\": [0.01, 0.1, 0], \"rotation\": [-90, 0, 0], \"contact\": true,"
      "   \"integrator\": \"xpbd\", \"material\": {\"thickness\": 0.005}}]}";
  wf_world *ref = NULL, *w = NULL;
  if (make_world(text, NULL, 0, "cpu:0", &ref) != WF_OK) return;
  if (make_world(text, NULL, 0, "cpu:0,cpu:1,cpu:2", &w) != WF_OK) {
    wf_world_destroy(ref);
    return;
  }
  for (int i = 0; i < 3; i++) {
    wf_world_placement p;
    CHECK_OK(wf_world_placement_get(w, i, &p));
    CHECK_EQ_INT(p.whole_cloths, i == 0 ? 2 : 0);
  }
  size_t ba = 0, bb = 0;
  float *a = step(ref, 6) == WF_OK ? world_state(ref, &ba) : NULL;
  float *b = step(w, 6) == WF_OK ? world_state(w, &bb) : NULL;
  CHECK(a && b && ba == bb && same_state(a, b, ba, "a contact group kept whole"));
  free(a), free(b);
  wf_world_destroy(w), wf_world_destroy(ref);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(cloths_split_is_bitwise),          TH_TEST(bundled_mixed_scene_is_bitwise),
      TH_TEST(pins_on_the_partition_boundary),   TH_TEST(checkpoint_of_split_cloths),
      TH_TEST(health_names_the_vertex_on_split), TH_TEST(readback_of_split_cloths),
      TH_TEST(self_colliding_cloth_stays_whole), TH_TEST(contact_cloth_splits_bitwise),
      TH_TEST(contact_group_stays_whole)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
