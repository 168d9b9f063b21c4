/* The world's readback ring (weft/world.h, engine/world_readback.c) on cpu:0, whose streams are
 * worker threads, so a missing wait between the solvers, the copy stream and the next frame shows
 * up as wrong data here.
 *
 * Checked: every delivered frame's positions (and particle velocities) equal, bit for bit, what
 * wf_world_object_download gives for that frame in a second world stepped from the same scene
 * (the solvers are deterministic); while the producer runs ahead without waiting, frames come out
 * in increasing order and no slot is handed out while it is held; with every slot held a push is
 * skipped and counted, and a release makes room again; fewer than 3 slots are refused; the timing
 * of a held frame is available and non-negative.
 */
#include "harness.h"

#include <pthread.h>

#include "weft/scene.h"
#include "weft/world.h"

/* Particles resting in contact (so frames differ and contacts are computed) and a falling XPBD
 * cloth: two solvers, so two solver streams feed the copy stream. */
static const char scene_text[] =
    "{\"simulation\": {\"fps\": 60, \"substeps\": 16, \"frames\": 40, \"devices\": \"cpu\"},"
    " \"particles\": [{\"name\": \"p\", \"center\": [0, 0.3, 0], \"half_extents\": [0.1, 0.1, "
    "0.1], \"radius\": 0.025, \"spacing\": 0.05, \"mass\": 0.05}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\"}],"
    " \"cloths\": [{\"name\": \"c\", \"grid\": {\"size\": [1, 1], \"resolution\": [8, 8]},"
    "  \"center\": [0, 1, 0], \"material\": {\"mass\": 0.01}}]}";

#define FRAMES 40

typedef struct reference {
  int objects;
  uint32_t count[8];
  float (*pos[FRAMES + 1][8])[4];
  float (*vel[FRAMES + 1][8])[4];
} reference;

static wf_status make_world(wf_world **w) {
  wf_scene *sc;
  wf_status st = wf_scene_parse(scene_text, strlen(scene_text), "t.json", NULL, NULL, &sc);
  if (st != WF_OK) return st;
  wf_world_desc wd = wf_world_desc_default();
  wd.device = "cpu:0";
  st = wf_world_create(sc, &wd, w);
  wf_scene_destroy(sc);
  return st;
}

/* Frames 1..FRAMES of a world stepped one frame at a time and downloaded after each. */
static wf_status reference_make(reference *r) {
  memset(r, 0, sizeof *r);
  wf_world *w;
  wf_status st = make_world(&w);
  if (st != WF_OK) return st;
  r->objects = wf_world_object_count(w);
  for (int i = 0; i < r->objects; i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    r->count[i] = o.point_count;
  }
  for (int f = 1; f <= FRAMES && st == WF_OK; f++) {
    st = wf_world_step(w, 1);
    for (int i = 0; i < r->objects && st == WF_OK; i++) {
      r->pos[f][i] = malloc((size_t)r->count[i] * 16);
      r->vel[f][i] = malloc((size_t)r->count[i] * 16);
      st = wf_world_object_download(w, i, r->pos[f][i], r->vel[f][i]);
    }
  }
  wf_world_destroy(w);
  return st;
}

static void reference_free(reference *r) {
  for (int f = 0; f <= FRAMES; f++)
    for (int i = 0; i < r->objects; i++)
      free(r->pos[f][i]), free(r->vel[f][i]);
}

/* The view equals the reference frame bit for bit; returns the number of mismatching rows. */
static int compare_view(const reference *r, const wf_world_frame_view *v, bool velocities) {
  int bad = 0;
  for (int i = 0; i < r->objects; i++) {
    const float(*ref)[4] = r->pos[v->frame][i];
    if (memcmp(v->pos[i], ref, (size_t)r->count[i] * 16) != 0) bad++;
    if (velocities && v->vel[i] && memcmp(v->vel[i], r->vel[v->frame][i], r->count[i] * 16) != 0)
      bad++;
  }
  return bad;
}

/* Step and push FRAMES frames without ever waiting, while a consumer thread takes the newest
 * frame, checks it and releases it. */
typedef struct consumer {
  wf_world_readback *rb;
  const reference *ref;
  _Atomic int done;
  int delivered, mismatches, out_of_order, bad_frames, timing_fail;
  int64_t last_frame;
} consumer;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Runs until it has seen the last frame, or 30 s after the producer is done (a failure). */
static void *consume(void *arg) {
  consumer *c = arg;
  double give_up = 0.0;
  while (c->last_frame < FRAMES) {
    if (c->done && give_up == 0.0) give_up = now_s() + 30.0;
    if (give_up > 0.0 && now_s() > give_up) break;
    wf_world_frame_view v;
    if (wf_world_readback_latest(c->rb, &v) == WF_OK) {
      c->delivered++;
      if (v.frame < 1 || v.frame > FRAMES) {
        c->bad_frames++;
      } else {
        if (v.frame <= c->last_frame) c->out_of_order++;
        c->last_frame = v.frame;
        c->mismatches += compare_view(c->ref, &v, true);
      }
      wf_world_readback_timing t;
      if (wf_world_readback_timing_get(c->rb, v.slot, &t) != WF_OK || !t.has_sim || t.sim_ms < 0 ||
          t.copy_ms < 0 || t.copy_wait_ms < 0 || (t.has_idle && t.idle_ms < 0))
        c->timing_fail++;
      wf_world_readback_release(c->rb, v.slot);
    }
  }
  return NULL;
}

TEST(frames_match_download_bitwise) {
  reference ref;
  CHECK_OK(reference_make(&ref));
  wf_world *w;
  CHECK_OK(make_world(&w));
  wf_world_readback_desc d = wf_world_readback_desc_default();
  d.velocities = true;
  wf_world_readback *rb;
  CHECK_OK(wf_world_readback_create(w, &d, &rb));
  consumer c = {.rb = rb, .ref = &ref};
  pthread_t th;
  REQUIRE(pthread_create(&th, NULL, consume, &c) == 0);
  int skipped = 0, pushes = 0;
  wf_status st = WF_OK;
  for (int f = 1; f <= FRAMES; f++) {
    CHECK_OK(wf_world_readback_begin_frame(rb));
    CHECK_OK(wf_world_step(w, 1));
    st = wf_world_readback_push(rb);
    CHECK(st == WF_OK || st == WF_NOT_READY);
    skipped += st == WF_NOT_READY, pushes++;
  }
  /* the last frame must reach the consumer: push it again while it is skipped (the consumer
     keeps releasing, so a slot frees up) */
  for (int i = 0; i < 100000 && st == WF_NOT_READY; i++) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
    CHECK_OK(wf_world_readback_begin_frame(rb)); /* an empty frame, for the timing check */
    st = wf_world_readback_push(rb);
    skipped += st == WF_NOT_READY, pushes++;
  }
  CHECK_OK(st);
  c.done = 1;
  pthread_join(th, NULL);
  wf_world_frame_view v;
  /* everything finished was taken: nothing newer is left */
  CHECK_STATUS(wf_world_readback_latest(rb, &v), WF_NOT_READY);
  wf_world_readback_stats s;
  wf_world_readback_stats_get(rb, &s);
  CHECK_EQ_INT(s.pushed + s.skipped, pushes);
  CHECK_EQ_INT(s.skipped, skipped);
  CHECK_EQ_INT(s.delivered, c.delivered);
  CHECK(c.delivered >= 1);
  CHECK_EQ_INT(c.last_frame, FRAMES); /* the newest frame always comes out in the end */
  CHECK_EQ_INT(c.mismatches, 0);
  CHECK_EQ_INT(c.out_of_order, 0);
  CHECK_EQ_INT(c.bad_frames, 0);
  CHECK_EQ_INT(c.timing_fail, 0);
  printf("  %d frames: %llu pushed, %llu skipped, %d delivered, %llu stale\n", FRAMES,
         (unsigned long long)s.pushed, (unsigned long long)s.skipped, c.delivered,
         (unsigned long long)s.stale);
  wf_world_readback_destroy(rb);
  wf_world_destroy(w);
  reference_free(&ref);
}

/* Waits (a bounded spin) until the readback delivers a frame. */
static wf_status latest_wait(wf_world_readback *rb, wf_world_frame_view *v) {
  for (int i = 0; i < 20000; i++) {
    wf_status st = wf_world_readback_latest(rb, v);
    if (st != WF_NOT_READY) return st;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  return WF_NOT_READY;
}

TEST(skips_when_every_slot_is_held) {
  reference ref;
  CHECK_OK(reference_make(&ref));
  wf_world *w;
  CHECK_OK(make_world(&w));
  wf_world_readback *rb;
  CHECK_OK(wf_world_readback_create(w, NULL, &rb)); /* 3 slots, positions only */
  wf_world_frame_view held[3];
  for (int k = 0; k < 3; k++) {
    CHECK_OK(wf_world_step(w, 1));
    CHECK_OK(wf_world_readback_push(rb));
    CHECK_OK(latest_wait(rb, &held[k]));
    CHECK_EQ_INT(held[k].frame, k + 1);
    CHECK_EQ_INT(compare_view(&ref, &held[k], false), 0);
    CHECK(held[k].vel[0] == NULL); /* velocities were not asked for */
    for (int j = 0; j < k; j++)
      CHECK(held[k].slot != held[j].slot); /* a held slot is never handed out again */
  }
  /* every slot is held: the frame is skipped, the producer does not wait */
  CHECK_OK(wf_world_step(w, 1));
  CHECK_STATUS(wf_world_readback_push(rb), WF_NOT_READY);
  wf_world_frame_view v;
  CHECK_STATUS(wf_world_readback_latest(rb, &v), WF_NOT_READY);
  wf_world_readback_stats s;
  wf_world_readback_stats_get(rb, &s);
  CHECK_EQ_INT(s.skipped, 1);
  CHECK_EQ_INT(s.pushed, 3);
  /* the held frames are still intact after the skipped frame ran */
  for (int k = 0; k < 3; k++)
    CHECK_EQ_INT(compare_view(&ref, &held[k], false), 0);
  /* one release makes room: frame 5 goes into the freed slot */
  wf_world_readback_release(rb, held[1].slot);
  CHECK_OK(wf_world_step(w, 1));
  CHECK_OK(wf_world_readback_push(rb));
  CHECK_OK(latest_wait(rb, &v));
  CHECK_EQ_INT(v.frame, 5);
  CHECK_EQ_INT(v.slot, held[1].slot);
  CHECK_EQ_INT(compare_view(&ref, &v, false), 0);
  /* a slot that is not held has no timing; one that is has (no begin_frame: no sim figures) */
  wf_world_readback_timing t;
  CHECK_OK(wf_world_readback_timing_get(rb, v.slot, &t));
  CHECK(!t.has_sim);
  CHECK(t.copy_ms >= 0.0);
  wf_world_readback_release(rb, v.slot);
  CHECK_STATUS(wf_world_readback_timing_get(rb, v.slot, &t), WF_ERR_INVALID);
  wf_world_readback_release(rb, held[0].slot);
  wf_world_readback_release(rb, held[2].slot);
  wf_world_readback_destroy(rb);
  wf_world_destroy(w);
  reference_free(&ref);
}

TEST(needs_three_slots) {
  wf_world *w;
  CHECK_OK(make_world(&w));
  wf_world_readback_desc d = wf_world_readback_desc_default();
  d.slots = 2;
  wf_world_readback *rb = (wf_world_readback *)1;
  CHECK_ERROR(wf_world_readback_create(w, &d, &rb), WF_ERR_INVALID, "slots = 2", "3 to 64");
  CHECK(rb == NULL);
  wf_world_destroy(w);
}

int main(int argc, char **argv) {
  th_test tests[] = {TH_TEST(frames_match_download_bitwise), TH_TEST(skips_when_every_slot_is_held),
                     TH_TEST(needs_three_slots)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
