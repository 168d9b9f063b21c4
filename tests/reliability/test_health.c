/* The world's device-side health check (weft/world.h, engine/health.c) on tests/scenes/blowup.json,
 * a scene that blows up on purpose: grains hit a floor of contact stiffness 1e9 N/m at 2 substeps
 * per frame (far beyond the stability limit), and a variant whose spring cloth diverges to NaN.
 *
 * Each verdict is checked against an independent recomputation on the host: a second world,
 * stepped to the reported frame with the watchdog limits off (they do not change the dynamics),
 * downloads its state, and the host finds the first point over the limit itself. The quantities
 * are computed in float with the same operations as the kernel, so index and value agree exactly
 * (the tolerances below are for the value's printing path only). A NaN state cannot be
 * downloaded (wf_world_object_download refuses it), so for the NaN cloth the frame before must be
 * finite and a second run must name the same vertex. The last-good checkpoint must
 * equal, bit for bit, the state of a world stepped to that frame, and continue identically.
 */
#include "harness.h"

#include "weft/weft.h"

static const char *scene_path = WEFT_SOURCE_DIR "/tests/scenes/blowup.json";

static wf_world *make_world(const char **sets, int n) {
  wf_scene_overrides ov = {sets, n};
  wf_scene *sc = NULL;
  if (wf_scene_load(scene_path, &ov, &sc) != WF_OK) {
    TH_FAIL("loading %s: %s", scene_path, wf_last_error());
    return NULL;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = th_kind;
  wf_world *w = NULL;
  if (wf_world_create(sc, &d, &w) != WF_OK) TH_FAIL("creating the world: %s", wf_last_error());
  wf_scene_destroy(sc);
  return w;
}

/* Steps frame by frame until the health check stops the world (at most 60 frames), then waits
 * for every record. Returns the health. */
static wf_world_health run_to_failure(wf_world *w) {
  wf_world_health h;
  memset(&h, 0, sizeof h);
  wf_status st = WF_OK;
  for (int f = 0; f < 60 && st == WF_OK; f++)
    st = wf_world_step(w, 1);
  if (st == WF_OK) st = wf_world_check(w);
  if (st != WF_ERR_INVALID)
    TH_FAIL("expected the health check to stop the world, got %s", wf_status_str(st));
  if (wf_world_health_get(w, true, &h) != WF_OK) TH_FAIL("health_get: %s", wf_last_error());
  return h;
}

/* Object i's state after `frames` frames of a world with the watchdogs off. */
static int state_at(const char **sets, int n, int64_t frames, int object, float (*pos)[4],
                    float (*vel)[4]) {
  wf_world *w = make_world(sets, n);
  if (!w) return 0;
  int ok = wf_world_step(w, (int)frames) == WF_OK;
  wf_world_object_download(w, object, pos, vel); /* may flag NaN: the data is copied anyway */
  wf_world_destroy(w);
  return ok;
}

static float speed2(const float *v) { return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]; }

TEST(speed_watchdog_names_the_first_particle) {
  wf_world *w = make_world(NULL, 0);
  REQUIRE(w);
  wf_world_health h = run_to_failure(w);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", h.message);
  wf_world_object obj;
  CHECK_OK(wf_world_object_get(w, 0, &obj));
  CHECK(strcmp(h.object_name, "grains") == 0); /* valid until the world's next call */
  wf_world_destroy(w);
  CHECK_EQ_INT(h.quantity, WF_HEALTH_SPEED);
  CHECK_EQ_INT(h.object, 0);
  CHECK_EQ_INT(h.last_good_frame, h.frame - 1);
  CHECK_NEAR(h.limit, 20.0, 0.0);
  CHECK(h.value > 20.0);
  char want[128];
  snprintf(want, sizeof want, "particles 'grains': particle %u (global id) moves at", h.index);
  CHECK(strstr(msg, want) != NULL);
  snprintf(want, sizeof want, "at frame %lld, faster than simulation.max_speed 20 m/s",
           (long long)h.frame);
  CHECK(strstr(msg, want) != NULL);
  /* the host's own search over the state at that frame, and the frame before it */
  const char *off[] = {"simulation.max_speed=0"};
  size_t n = obj.point_count;
  float(*pos)[4] = malloc(n * 16), (*vel)[4] = malloc(n * 16);
  REQUIRE(pos && vel);
  CHECK(state_at(off, 1, h.frame - 1, 0, pos, vel));
  for (size_t i = 0; i < n; i++)
    if (speed2(vel[i]) > 400.0f) {
      TH_FAIL("particle %zu is already too fast at frame %lld", i, (long long)h.frame - 1);
      break;
    }
  CHECK(state_at(off, 1, h.frame, 0, pos, vel));
  size_t first = n;
  for (size_t i = 0; i < n && first == n; i++)
    if (speed2(vel[i]) > 400.0f) first = i;
  CHECK_EQ_INT(h.index, obj.first + first);
  if (first < n) CHECK_NEAR(h.value, sqrtf(speed2(vel[first])), 1e-6 * h.value);
  free(pos), free(vel);
}

TEST(penetration_watchdog_names_the_collider) {
  const char *sets[] = {"simulation.max_speed=0", "simulation.max_penetration=0.001"};
  wf_world *w = make_world(sets, 2);
  REQUIRE(w);
  wf_world_health h = run_to_failure(w);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", h.message);
  wf_world_object obj;
  CHECK_OK(wf_world_object_get(w, 0, &obj));
  CHECK(strcmp(h.collider_name, "floor") == 0); /* valid until the world's next call */
  wf_world_destroy(w);
  CHECK_EQ_INT(h.quantity, WF_HEALTH_PENETRATION);
  CHECK_EQ_INT(h.collider, 0);
  CHECK(strstr(msg, "deep in collider 'floor'") != NULL);
  CHECK(strstr(msg, "simulation.max_penetration 0.001 m") != NULL);
  /* the floor is the plane y = 0: depth = radius - y, for dynamic particles */
  size_t n = obj.point_count;
  float(*pos)[4] = malloc(n * 16), (*vel)[4] = malloc(n * 16);
  REQUIRE(pos && vel);
  const char *off[] = {"simulation.max_speed=0"};
  CHECK(state_at(off, 1, h.frame, 0, pos, vel));
  size_t first = n;
  for (size_t i = 0; i < n && first == n; i++)
    if (vel[i][3] > 0.0f && pos[i][3] - pos[i][1] > 0.001f) first = i;
  CHECK_EQ_INT(h.index, obj.first + first);
  if (first < n) CHECK_NEAR(h.value, pos[first][3] - pos[first][1], 1e-7);
  CHECK(state_at(off, 1, h.frame - 1, 0, pos, vel));
  for (size_t i = 0; i < n; i++)
    CHECK(!(vel[i][3] > 0.0f && pos[i][3] - pos[i][1] > 0.001f));
  free(pos), free(vel);
}

static int finite4(const float *v) {
  return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]) && isfinite(v[3]);
}

TEST(nonfinite_cloth_vertex_is_reported) {
  /* springs far past the explicit step's limit (wf_cloth_stability): the cloth blows up */
  const char *sets[] = {"simulation.max_speed=0", "cloths[0].integrator=spring",
                        "cloths[0].material.stretch_modulus=1e6"};
  wf_world *w = make_world(sets, 3);
  REQUIRE(w);
  wf_world_health h = run_to_failure(w);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", h.message);
  wf_world_object obj;
  CHECK_OK(wf_world_object_get(w, 1, &obj));
  wf_world_destroy(w);
  CHECK(h.quantity == WF_HEALTH_POSITION_NONFINITE || h.quantity == WF_HEALTH_VELOCITY_NONFINITE);
  CHECK_EQ_INT(h.object, 1);
  CHECK(strstr(msg, "cloth 'sheet': vertex") != NULL);
  CHECK(strstr(msg, "non-finite") != NULL);
  CHECK(!isfinite(h.value));
  CHECK(h.index < obj.point_count);
  /* the world's download refuses a NaN state, so check the frame before instead: all finite,
   * so this frame is the first unhealthy one; and a second run reports the same point */
  size_t n = obj.point_count;
  float(*pos)[4] = malloc(n * 16), (*vel)[4] = malloc(n * 16);
  REQUIRE(pos && vel);
  CHECK(state_at(sets, 3, h.frame - 1, 1, pos, vel));
  for (size_t i = 0; i < n; i++)
    CHECK(finite4(pos[i]) && isfinite(vel[i][0]) && isfinite(vel[i][1]) && isfinite(vel[i][2]));
  free(pos), free(vel);
  wf_world *again = make_world(sets, 3);
  REQUIRE(again);
  wf_world_health h2 = run_to_failure(again);
  wf_world_destroy(again);
  CHECK_EQ_INT(h2.frame, h.frame);
  CHECK_EQ_INT(h2.index, h.index);
  CHECK_EQ_INT(h2.quantity, h.quantity);
}

static char *tmp_path(const char *name) {
  static char p[4][512];
  static int k;
  const char *t = getenv("TMPDIR");
  char *s = p[k++ % 4];
  snprintf(s, 512, "%s/weft_health_%d_%s", t && *t ? t : "/tmp", (int)getpid(), name);
  return s;
}

/* Every object's state as one byte string (positions then velocities per object). */
static unsigned char *world_bytes(wf_world *w, size_t *len) {
  size_t total = 0;
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    total += (size_t)o.point_count * 32;
  }
  unsigned char *b = malloc(total + 1), *at = b;
  for (int i = 0; b && i < wf_world_object_count(w); i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    wf_world_object_download(w, i, (float(*)[4])at, (float(*)[4])(at + (size_t)o.point_count * 16));
    at += (size_t)o.point_count * 32;
  }
  *len = total;
  return b;
}

TEST(last_good_checkpoint_resumes_bitwise) {
  wf_world *w = make_world(NULL, 0);
  REQUIRE(w);
  wf_world_health h = run_to_failure(w);
  const char *path = tmp_path("last_good.wfck");
  int64_t good = -1;
  CHECK_OK(wf_world_save_last_good(w, path, &good));
  wf_world_destroy(w);
  CHECK_EQ_INT(good, h.frame - 1);
  REQUIRE(good > 0);
  /* restored vs stepped to the same frame: the same bits, and the same next frame */
  wf_world *a = make_world(NULL, 0), *b = make_world(NULL, 0);
  REQUIRE(a && b);
  CHECK_OK(wf_world_load_checkpoint(a, path));
  CHECK_EQ_INT(wf_world_frame(a), good);
  CHECK_OK(wf_world_step(b, (int)good));
  CHECK_OK(wf_world_check(b));
  size_t la, lb;
  unsigned char *sa = world_bytes(a, &la), *sb = world_bytes(b, &lb);
  REQUIRE(sa && sb && la == lb);
  CHECK(memcmp(sa, sb, la) == 0);
  const float *f = (const float *)sa;
  for (size_t i = 0; i < la / 4; i++)
    if (!isfinite(f[i])) {
      TH_FAIL("the last-good state has a non-finite value at float %zu", i);
      break;
    }
  free(sa), free(sb);
  /* the next frame is the unhealthy one in both */
  CHECK_STATUS(wf_world_step(a, 1) == WF_OK ? wf_world_check(a) : WF_ERR_INVALID, WF_ERR_INVALID);
  CHECK_STATUS(wf_world_step(b, 1) == WF_OK ? wf_world_check(b) : WF_ERR_INVALID, WF_ERR_INVALID);
  sa = world_bytes(a, &la), sb = world_bytes(b, &lb);
  REQUIRE(sa && sb && la == lb);
  CHECK(memcmp(sa, sb, la) == 0);
  free(sa), free(sb);
  wf_world_destroy(a), wf_world_destroy(b);
  remove(path);
}

TEST(healthy_world_reads_every_frame) {
  const char *sets[] = {"simulation.max_speed=0"};
  wf_world *w = make_world(sets, 1);
  REQUIRE(w);
  wf_world_health h;
  CHECK_OK(wf_world_health_get(w, false, &h));
  CHECK_EQ_INT(h.last_good_frame, 0);
  CHECK_OK(wf_world_step(w, 9)); /* more frames than WF_WORLD_HEALTH_DEPTH slots */
  CHECK_OK(wf_world_check(w));
  CHECK_OK(wf_world_health_get(w, true, &h));
  CHECK_EQ_INT(h.quantity, WF_HEALTH_OK);
  CHECK_EQ_INT(h.frame, -1);
  CHECK_EQ_INT(h.checked_frame, 9);
  CHECK_EQ_INT(h.last_good_frame, 9);
  CHECK(strcmp(h.message, "") == 0);
  /* the last-good state of a healthy world is the current one */
  const char *p1 = tmp_path("a.wfck"), *p2 = tmp_path("b.wfck");
  int64_t good = -1;
  CHECK_OK(wf_world_save_last_good(w, p1, &good));
  CHECK_EQ_INT(good, 9);
  CHECK_OK(wf_world_save(w, p2));
  /* every section of the last-good checkpoint is in the current one with the same bytes; the
   * current one adds the particles' rotation and contact history ("particles/granular"), which a
   * last-good snapshot does not keep */
  wf_ckpt_reader *r1 = NULL, *r2 = NULL;
  CHECK_OK(wf_ckpt_open_file(p1, &r1));
  CHECK_OK(wf_ckpt_open_file(p2, &r2));
  REQUIRE(r1 && r2);
  CHECK(wf_ckpt_section_count(r2) == wf_ckpt_section_count(r1) + 1);
  CHECK(wf_ckpt_find(r1, "particles/granular") < 0 && wf_ckpt_find(r2, "particles/granular") >= 0);
  for (size_t k = 0; k < wf_ckpt_section_count(r1); k++) {
    const char *name;
    const void *d1, *d2;
    size_t b1, b2;
    CHECK_OK(wf_ckpt_section_at(r1, k, &name, &d1, &b1));
    CHECK_OK(wf_ckpt_section(r2, name, &d2, &b2));
    CHECK(b1 == b2 && memcmp(d1, d2, b1) == 0);
  }
  wf_ckpt_close(r1), wf_ckpt_close(r2);
  remove(p1), remove(p2);
  wf_world_destroy(w);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(speed_watchdog_names_the_first_particle),
      TH_TEST(penetration_watchdog_names_the_collider), TH_TEST(nonfinite_cloth_vertex_is_reported),
      TH_TEST(last_good_checkpoint_resumes_bitwise), TH_TEST(healthy_world_reads_every_frame)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
