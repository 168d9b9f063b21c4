/* The partition module on 1..4 devices: links over a ring of partitions move known data through
 * the peer transport, captured and stage by stage, with the same bits; the frame is captured
 * again only when its key changes; the gather puts rows in global-id order; the overlap measure
 * gives a hidden fraction in [0, 1] (1 without links); a bad link or segment fails with a message
 * naming it and leaves no capture open. Every value moved is a small integer in float, exact, so
 * every comparison is exact (memcmp or ==).
 *
 * The ring's partitions compute slowly (tk_slow_fill, 2 ms, before each substep's add): a
 * transfer that did not wait for its sender's work would move the state of the substep before. */
#include "harness.h"
#include "test_kernels.h"

#include "frame.h"
#include "gather.h"
#include "measure.h"
#include "partition.h"
#include "transport.h"

const char *wfpt_test_error(void); /* error_shim.c: the module's last message */

#define ROWS 64 /* rows each partition owns in the ring */
#define K    3  /* substeps per frame */

static wf_device *devs[4];

/* <kind>:0..3, or <kind>:0 again where there are fewer (partitions may share a device) */
static void pick_devices(void) {
  for (int i = 0; i < 4; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%d", th_kind, i);
    if (wf_device_get(name, &devs[i]) != WF_OK) devs[i] = th_dev0;
  }
  wf_clear_error();
}

typedef struct ring {
  int n;
  wfpt_set *set;
  wfpt_frame frame;
  wf_stream *stream[4];
  wf_buffer *state[4], *ghost[4], *ghost2[4], *scratch[4];
  uint64_t key_word; /* the solver's word of the graph key */
  wf_event *marks[4 * 2 * K];
  uint32_t mark_n[4];
  bool marking;
} ring;

static wf_status mark(ring *r, int p, int end) {
  if (!r->marking) return WF_OK;
  wf_status st = wf_event_record(r->marks[2 * (p * K + r->mark_n[p]) + end], r->stream[p]);
  r->mark_n[p] += (uint32_t)end;
  return st;
}

/* K substeps: every partition adds 1 to its state (slowly), then the state goes over slot 0
 * straight into the receiver's ghost (the cloth's kind of exchange) and over slot 1 through a
 * pack, the link's staging buffers and an unpack into ghost2 (the particles' kind). */
static wf_status ring_enqueue(void *ctx, wfpt_mode mode) {
  ring *r = ctx;
  wfpt_set *s = r->set;
  const bool work = mode != WFPT_COPIES;
  const size_t floats = ROWS * 4;
  wf_status st = wfpt_frame_start(s);
  memset(r->mark_n, 0, sizeof r->mark_n);
  r->marking = mode == WFPT_COMPUTE && r->marks[0];
  for (int k = 0; k < K && st == WF_OK; k++) {
    st = wfpt_send_reuse(s, -1, 0);
    for (int p = 0; p < r->n && st == WF_OK && work; p++) {
      tk_slow_fill_args sa = {wf_buffer_ptr(r->scratch[p]), (float)k, 2};
      tk_add_one_args aa = {wf_buffer_ptr(r->state[p])};
      if ((st = mark(r, p, 0)) == WF_OK &&
          (st = wf_launch(&tk_slow_fill, 1, &sa, sizeof sa, r->stream[p])) == WF_OK &&
          (st = wf_launch(&tk_add_one, floats, &aa, sizeof aa, r->stream[p])) == WF_OK)
        st = mark(r, p, 1);
    }
    if (st == WF_OK) st = wfpt_release(s, -1, 0);
    if (st == WF_OK) st = wfpt_send(s, 0);
    if (st == WF_OK) st = wfpt_recv_wait(s, -1, 0);
    if (st == WF_OK) st = wfpt_send_reuse(s, -1, 1);
    for (int l = 0; l < s->n_links && st == WF_OK && work; l++) {
      wfpt_link *lk = &s->links[l];
      tk_copy_args pa = {wf_buffer_ptr(lk->send), wf_buffer_ptr(r->state[lk->from])};
      st = wf_launch(&tk_copy, floats, &pa, sizeof pa, r->stream[lk->from]);
    }
    if (st == WF_OK) st = wfpt_send(s, 1);
    for (int p = 0; p < r->n && st == WF_OK; p++) {
      st = wfpt_recv_wait(s, p, 1);
      for (int l = 0; l < s->n_links && st == WF_OK && work; l++) {
        wfpt_link *lk = &s->links[l];
        if (lk->to != p) continue;
        tk_copy_args ua = {wf_buffer_ptr(r->ghost2[p]), wf_buffer_ptr(lk->recv)};
        st = wf_launch(&tk_copy, floats, &ua, sizeof ua, r->stream[p]);
      }
      if (st == WF_OK) st = wfpt_release(s, p, 1);
    }
  }
  r->marking = false;
  for (int p = 0; p < r->n && st == WF_OK; p++) /* the kernels' buffers */
    if ((st = wf_buffer_touch(r->state[p], r->stream[p])) == WF_OK &&
        (st = wf_buffer_touch(r->scratch[p], r->stream[p])) == WF_OK)
      st = wf_buffer_touch(r->ghost2[p], r->stream[p]);
  return st == WF_OK ? wfpt_frame_end(s) : st;
}

static void ring_key(void *ctx, wfpt_key *key) { wfpt_key_put(key, ((ring *)ctx)->key_word); }

static void ring_destroy(ring *r) {
  wfpt_frame_release(&r->frame);
  wfpt_set_destroy(r->set);
  for (int p = 0; p < r->n; p++) {
    wf_buffer *b[] = {r->state[p], r->ghost[p], r->ghost2[p], r->scratch[p]};
    for (int i = 0; i < 4; i++)
      if (b[i]) wf_buffer_destroy(b[i], r->stream[p]);
    if (r->stream[p]) wf_stream_destroy(r->stream[p]);
  }
  wfpt_events_destroy(r->marks, sizeof r->marks / sizeof r->marks[0]);
}

/* n partitions on devs[0..n), links p -> p + 1 around the ring (none for one partition). */
static wf_status ring_create(ring *r, int n, bool no_graph) {
  memset(r, 0, sizeof *r);
  r->n = n;
  wf_status st = WF_OK;
  for (int p = 0; p < n && st == WF_OK; p++) {
    wf_device *d = devs[p];
    const size_t bytes = ROWS * 16;
    if ((st = wf_stream_create(d, 0, &r->stream[p])) != WF_OK) break;
    wf_stream *s = r->stream[p];
    if ((st = wf_buffer_create(d, bytes, 0, s, &r->state[p])) != WF_OK ||
        (st = wf_buffer_create(d, bytes, WF_BUFFER_ZERO, s, &r->ghost[p])) != WF_OK ||
        (st = wf_buffer_create(d, bytes, WF_BUFFER_ZERO, s, &r->ghost2[p])) != WF_OK ||
        (st = wf_buffer_create(d, 16, WF_BUFFER_ZERO, s, &r->scratch[p])) != WF_OK)
      break;
    tk_iota_args ia = {wf_buffer_ptr(r->state[p]), (float)(1000 * p), 1.0f};
    if ((st = wf_launch(&tk_iota, ROWS * 4, &ia, sizeof ia, s)) == WF_OK)
      st = wf_buffer_touch(r->state[p], s);
  }
  if (st != WF_OK) return st;
  wfpt_set_desc d = {.what = "ring", .n = n, .devices = devs, .streams = r->stream};
  if ((st = wfpt_set_create(&d, &r->set)) != WF_OK) return st;
  for (int p = 0; p < n && n > 1 && st == WF_OK; p++) {
    int to = (p + 1) % n;
    wfpt_link *k = NULL;
    if (n == 2 && p == 1) to = 0;
    st = wfpt_link_add(r->set, p, to, 2, &k);
    if (st == WF_OK) st = wfpt_link_reserve(r->set, k, ROWS * 16);
    if (st == WF_OK) st = wfpt_slot_add(r->set, k, 0, r->ghost[to], 0, r->state[p], 0, ROWS * 16);
    if (st == WF_OK) st = wfpt_slot_add(r->set, k, 1, k->recv, 0, k->send, 0, ROWS * 16);
  }
  wfpt_frame_ops ops = {.ctx = r, .enqueue = ring_enqueue, .key = ring_key};
  wfpt_frame_init(&r->frame, r->set, &ops, no_graph);
  return st;
}

/* Every partition's state, ghost and ghost2, ROWS * 4 floats each, [p][3][ROWS * 4]. */
static wf_status ring_read(ring *r, float (*out)[3][ROWS * 4]) {
  for (int p = 0; p < r->n; p++) {
    wf_status st = wf_stream_synchronize(r->stream[p]);
    if (st == WF_OK) st = wf_download(out[p][0], r->state[p], 0, ROWS * 16);
    if (st == WF_OK) st = wf_download(out[p][1], r->ghost[p], 0, ROWS * 16);
    if (st == WF_OK) st = wf_download(out[p][2], r->ghost2[p], 0, ROWS * 16);
    if (st != WF_OK) return st;
  }
  return WF_OK;
}

#define ERR() wfpt_test_error()
#define CHECK_OK_MSG(e)                                                                            \
  do {                                                                                             \
    wf_status st_ = (e);                                                                           \
    if (st_ != WF_OK) {                                                                            \
      TH_FAIL("%s -> %s: %s | %s", #e, wf_status_str(st_), ERR(), wf_last_error());                \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

/* 1..4 partitions, 2 frames captured and 2 stage by stage: the same bits, and the values known:
 * partition p's row element i is 1000 p + i + 2 K after the frames, and its ghosts (both slots)
 * hold its sender's state. */
TEST(ring_moves_known_data) {
  pick_devices();
  static float got[2][4][3][ROWS * 4];
  for (int n = 1; n <= 4; n++) {
    for (int mode = 0; mode < 2; mode++) {
      ring r;
      wf_status st = ring_create(&r, n, mode == 1);
      if (st == WF_OK) st = wfpt_run_frames(&r.frame, 2, WFPT_FULL, NULL);
      if (st == WF_OK) st = ring_read(&r, got[mode]);
      if (st == WF_OK && mode == 0) CHECK_EQ_INT(r.frame.captures, 1);
      ring_destroy(&r);
      CHECK_OK_MSG(st);
    }
    CHECK(memcmp(got[0], got[1], (size_t)n * sizeof got[0][0]) == 0);
    for (int p = 0; p < n; p++) {
      int from = (p + n - 1) % n;
      for (int i = 0; i < ROWS * 4; i++)
        if (got[0][p][0][i] != (float)(1000 * p + i + 2 * K)) {
          TH_FAIL("%d partitions: partition %d element %d = %g", n, p, i, got[0][p][0][i]);
          break;
        }
      if (n > 1) {
        CHECK(memcmp(got[0][p][1], got[0][from][0], ROWS * 16) == 0);
        CHECK(memcmp(got[0][p][2], got[0][from][0], ROWS * 16) == 0);
      }
    }
  }
}

/* The frame is captured once, again when the solver's key word changes (in place: the same
 * shape), and again after wfpt_frame_stale; the results stay the same. */
TEST(graph_key_decides_recapture) {
  pick_devices();
  ring r;
  wf_status st = ring_create(&r, 3, false);
  if (st == WF_OK) st = wfpt_run_frames(&r.frame, 1, WFPT_FULL, NULL);
  if (st == WF_OK) st = wfpt_run_frames(&r.frame, 1, WFPT_FULL, NULL);
  uint64_t c1 = r.frame.captures;
  r.key_word = 7;
  if (st == WF_OK) st = wfpt_run_frames(&r.frame, 1, WFPT_FULL, NULL);
  uint64_t c2 = r.frame.captures;
  wfpt_frame_stale(&r.frame);
  if (st == WF_OK) st = wfpt_run_frames(&r.frame, 1, WFPT_FULL, NULL);
  uint64_t c3 = r.frame.captures;
  static float got[4][3][ROWS * 4];
  if (st == WF_OK) st = ring_read(&r, got);
  ring_destroy(&r);
  CHECK_OK_MSG(st);
  CHECK_EQ_INT(c1, 1);
  CHECK_EQ_INT(c2, 2);
  CHECK_EQ_INT(c3, 3);
  CHECK(got[2][0][5] == (float)(2000 + 5 + 4 * K));
  CHECK(memcmp(got[0][1], got[2][0], ROWS * 16) == 0);
}

/* Partition 0 owns ids [0, m0) in order (ids NULL), the others the rest in a scrambled order with
 * their ids; the gather onto device 0 puts row g at g. */
TEST(gather_puts_rows_in_global_order) {
  pick_devices();
  enum { N = 300 };
  for (int n = 1; n <= 4; n++) {
    wf_partition_view v[4];
    memset(v, 0, sizeof v);
    static float rows[4][N][4], vrows[4][N][4];
    static uint32_t ids[4][N];
    uint32_t m0 = N / (uint32_t)(n + 1);
    if (n == 1) m0 = N;
    for (uint32_t g = 0; g < N; g++) {
      int p = g < m0 ? 0 : 1 + (int)((N - 1 - g) % (uint32_t)(n - 1 ? n - 1 : 1));
      uint32_t i = v[p].rows++;
      float r[4] = {(float)g, (float)g + 0.5f, -(float)g, (float)p};
      memcpy(rows[p][i], r, 16);
      for (int c = 0; c < 4; c++)
        vrows[p][i][c] = 2.0f * r[c];
      ids[p][i] = g;
    }
    wf_status st = WF_OK;
    for (int p = 0; p < n && st == WF_OK; p++) {
      v[p].device = devs[p];
      v[p].first = 0;
      if ((st = wf_stream_create(devs[p], 0, &v[p].stream)) != WF_OK) break;
      size_t b = (size_t)(v[p].rows ? v[p].rows : 1) * 16;
      if ((st = wf_buffer_create(devs[p], b, 0, v[p].stream, &v[p].pos)) == WF_OK &&
          (st = wf_buffer_create(devs[p], b, 0, v[p].stream, &v[p].vel)) == WF_OK)
        st = wf_upload(v[p].pos, 0, rows[p], (size_t)v[p].rows * 16, v[p].stream);
      if (st == WF_OK) st = wf_upload(v[p].vel, 0, vrows[p], (size_t)v[p].rows * 16, v[p].stream);
      if (st == WF_OK && p > 0 && v[p].rows &&
          (st = wf_buffer_create(devs[p], (size_t)v[p].rows * 4, 0, v[p].stream, &v[p].ids)) ==
              WF_OK)
        st = wf_upload(v[p].ids, 0, ids[p], (size_t)v[p].rows * 4, v[p].stream);
    }
    wf_stream *s = NULL;
    wf_buffer *pos = NULL, *vel = NULL;
    wfpt_gather *g = NULL;
    static float out[N][4], vout[N][4];
    if (st == WF_OK) st = wf_stream_create(devs[0], 0, &s);
    if (st == WF_OK) st = wf_buffer_create(devs[0], N * 16, WF_BUFFER_ZERO, s, &pos);
    if (st == WF_OK) st = wf_buffer_create(devs[0], N * 16, WF_BUFFER_ZERO, s, &vel);
    if (st == WF_OK) st = wfpt_gather_create(devs[0], s, N, &g);
    if (st == WF_OK) st = wfpt_gather_enqueue(g, v, n, pos, vel, N);
    if (st == WF_OK) st = wf_stream_synchronize(s);
    if (st == WF_OK) st = wf_download(out, pos, 0, N * 16);
    if (st == WF_OK) st = wf_download(vout, vel, 0, N * 16);
    if (st == WF_OK) { /* too few staging rows: refused, naming the partition */
      wfpt_gather *small = NULL;
      if (wfpt_gather_create(devs[0], s, N - 1, &small) == WF_OK) {
        CHECK_STATUS(wfpt_gather_enqueue(small, v, n, pos, vel, N), WF_ERR_INVALID);
        CHECK(strstr(ERR(), "partition") != NULL);
        wfpt_gather_destroy(small);
      }
    }
    wfpt_gather_destroy(g);
    if (pos) wf_buffer_destroy(pos, s);
    if (vel) wf_buffer_destroy(vel, s);
    if (s) wf_stream_destroy(s);
    for (int p = 0; p < n; p++) {
      wf_buffer *b[] = {v[p].pos, v[p].vel, v[p].ids};
      for (int i = 0; i < 3; i++)
        if (b[i]) wf_buffer_destroy(b[i], v[p].stream);
      if (v[p].stream) wf_stream_destroy(v[p].stream);
    }
    CHECK_OK_MSG(st);
    int bad = 0;
    for (uint32_t gi = 0; gi < N && bad < 3; gi++)
      if (out[gi][0] != (float)gi || out[gi][2] != -(float)gi || vout[gi][1] != 2.0f * gi + 1.0f) {
        TH_FAIL("%d partitions: row %u = (%g %g %g %g)", n, gi, out[gi][0], out[gi][1], out[gi][2],
                out[gi][3]);
        bad++;
      }
  }
}

static wf_status ring_compute(void *ctx, double *ms) {
  ring *r = ctx;
  return wfpt_longest(r->marks, r->n, K, r->mark_n, ms);
}

/* On the ring: times >= 0 and a hidden fraction in [0, 1]; one partition (no links): 1. */
TEST(measure_gives_hidden_fraction) {
  pick_devices();
  for (int n = 1; n <= 3; n += 2) {
    ring r;
    wf_overlap o;
    wf_status st = ring_create(&r, n, false);
    wf_device *ed[4] = {devs[0], devs[1], devs[2], devs[3]};
    if (st == WF_OK) st = wfpt_events_create(ed, 2 * K, (size_t)n * 2 * K, r.marks);
    wfpt_measure_ops mo = {.ctx = &r, .compute_ms = ring_compute, .compute_captured = false};
    if (st == WF_OK) st = wfpt_overlap_measure(&r.frame, &mo, 3, wfpt_slot_bytes(r.set, -1), &o);
    ring_destroy(&r);
    CHECK_OK_MSG(st);
    CHECK(o.frame_ms > 0.0);
    CHECK(o.hidden_fraction >= 0.0 && o.hidden_fraction <= 1.0);
    if (n == 1) CHECK(o.hidden_fraction == 1.0 && o.halo_ms == 0.0 && o.halo_bytes_per_frame == 0);
    if (n == 3) {
      CHECK(o.halo_ms >= 0.0 && o.compute_ms > 0.0);
      CHECK_EQ_INT(o.halo_bytes_per_frame, 3 * 2 * ROWS * 16);
    }
  }
}

/* The critical path through substeps with jitter: unlinked, the longest sum (6); linked both
 * ways, each substep waits for the slower neighbour (8). */
TEST(critical_path_of_substeps) {
  const uint8_t none[4] = {0, 0, 0, 0}, both[4] = {0, 1, 1, 0};
  double a[8] = {2, 1, 2, 1, 1, 2, 1, 2}, b[8];
  memcpy(b, a, sizeof a);
  CHECK(wfpt_critical_path(NULL, a, 2, 4, none) == 6.0);
  CHECK(wfpt_critical_path(NULL, b, 2, 4, both) == 8.0);
  double v[4] = {3, 1, 2, 4};
  CHECK(wfpt_median(v, 4) == 2.5);
  CHECK(wfpt_hidden_fraction(10, 8, 4) == 0.5);
  CHECK(wfpt_hidden_fraction(10, 8, 0) == 1.0);
  CHECK(wfpt_hidden_fraction(20, 8, 4) == 0.0);
}

/* The particles' overlap measure's compute (wfpt_critical_path) on known substep times: the
 * longest path through the substeps, where a partition's substep waits for its own substep before
 * and for those of the partitions it takes ghosts from. The times are small integers, so every sum
 * is exact; the bounds on random times hold exactly too (rounding is monotone, and the path adds
 * each partition's times in the order its own sum does). */
TEST(critical_path_of_the_particles_substeps) {
  /* one partition: its sum */
  double one[4] = {1, 2, 3, 4};
  uint8_t adj1[1] = {0};
  CHECK(wfpt_critical_path(NULL, one, 1, 4, adj1) == 10.0);
  /* two partitions with opposite jitter, each summing to 8 */
  const double jitter[8] = {3, 1, 3, 1, 1, 3, 1, 3};
  double t[8];
  uint8_t none[4] = {0}, both[4] = {0, 1, 1, 0}, right[4] = {0, 1, 0, 0};
  memcpy(t, jitter, sizeof t);
  CHECK(wfpt_critical_path(NULL, t, 2, 4, none) == 8.0); /* unlinked: the longest sum */
  memcpy(t, jitter, sizeof t);
  /* linked both ways: 3, max(3, 1) + 3, max(4, 6) + 3, max(9, 7) + 3 */
  CHECK(wfpt_critical_path(NULL, t, 2, 4, both) == 12.0);
  CHECK(t[3] == 10.0 && t[7] == 12.0); /* the longest path to each last substep */
  memcpy(t, jitter, sizeof t);
  CHECK(wfpt_critical_path(NULL, t, 2, 4, right) == 10.0); /* 1 waits for 0, 0 for nobody */
  /* a part of each substep before the ghosts are needed (the own particles' keys) overlaps the
   * wait for them: p0 takes 1 + 3, p1 0 + 1; then p0 waits for nobody (4 + 2 + 1), p1 for its own
   * 1 + 5 against p0's 4 (6 + 3). Counted after the ghosts instead, the same times give 12. */
  const double pre[4] = {1, 2, 0, 5}, post[4] = {3, 1, 1, 3};
  double a2[4];
  memcpy(a2, post, sizeof a2);
  CHECK(wfpt_critical_path(pre, a2, 2, 2, both) == 9.0);
  CHECK(a2[0] == 4.0 && a2[1] == 7.0 && a2[2] == 1.0 && a2[3] == 9.0);
  for (int i = 0; i < 4; i++)
    a2[i] = pre[i] + post[i];
  CHECK(wfpt_critical_path(NULL, a2, 2, 2, both) == 12.0);
  /* random times on 4 partitions in a chain (the slabs): at least the longest sum, at most the
   * sum of each substep's slowest partition */
  uint8_t chain[16] = {0};
  for (int p = 0; p + 1 < 4; p++)
    chain[p * 4 + p + 1] = chain[(p + 1) * 4 + p] = 1;
  uint32_t seed = 12345u;
  for (int trial = 0; trial < 100; trial++) {
    enum { NP = 4, KS = 16 };
    double r[NP * KS], longest = 0.0, slowest = 0.0;
    for (int i = 0; i < NP * KS; i++) {
      seed = seed * 1664525u + 1013904223u;
      r[i] = 0.5 + (double)(seed >> 8) / (double)(1u << 24);
    }
    for (int p = 0; p < NP; p++) {
      double sum = 0.0;
      for (int k = 0; k < KS; k++)
        sum += r[p * KS + k];
      longest = sum > longest ? sum : longest;
    }
    for (int k = 0; k < KS; k++) {
      double m = 0.0;
      for (int p = 0; p < NP; p++)
        m = r[p * KS + k] > m ? r[p * KS + k] : m;
      slowest += m;
    }
    double c = wfpt_critical_path(NULL, r, NP, KS, chain);
    CHECK(c >= longest && c <= slowest);
  }
}

/* A link to a partition that does not exist, and a segment whose source is on another device than
 * its sender's: refused with messages naming the link; the failed capture leaves partition 0's
 * stream usable, and the frame runs once the segment is right. */
TEST(bad_links_are_named) {
  pick_devices();
  ring r;
  wf_status st = ring_create(&r, 2, false);
  wfpt_link *k = NULL;
  if (st == WF_OK) {
    CHECK_STATUS(wfpt_link_add(r.set, 0, 7, 1, &k), WF_ERR_INVALID);
    CHECK(strstr(ERR(), "link 0 -> 7") != NULL);
    CHECK(k == NULL);
  }
  /* a source on a device that is not the sender's: th_host with CUDA, else cpu:3 */
  wf_device *other = th_is_cuda() ? th_host : devs[3];
  wf_buffer *alien = NULL;
  if (st == WF_OK && other != devs[0]) {
    st = wf_buffer_create(other, ROWS * 16, WF_BUFFER_ZERO, NULL, &alien);
    wfpt_seg *seg = &r.set->links[0].slot[0].seg[0];
    wf_buffer *good = seg->src;
    for (int graphed = 0; graphed < 2 && st == WF_OK; graphed++) {
      r.frame.no_graph = !graphed;
      seg->src = alien;
      CHECK_STATUS(wfpt_run_frames(&r.frame, 1, WFPT_FULL, NULL), WF_ERR_INVALID);
      CHECK(strstr(ERR(), "link 0 -> 1 (slot 0)") != NULL);
      CHECK(!wf_stream_is_capturing(r.stream[0]));
      seg->src = good;
      for (int p = 0; p < 2; p++) /* (the staged attempt left part of a frame queued) */
        wf_stream_synchronize(r.stream[p]);
      st = wfpt_run_frames(&r.frame, 1, WFPT_FULL, NULL);
    }
  }
  if (alien) wf_buffer_destroy(alien, NULL);
  ring_destroy(&r);
  CHECK_OK_MSG(st);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {
      TH_TEST(ring_moves_known_data),
      TH_TEST(graph_key_decides_recapture),
      TH_TEST(gather_puts_rows_in_global_order),
      TH_TEST(measure_gives_hidden_fraction),
      TH_TEST(critical_path_of_substeps),
      TH_TEST(critical_path_of_the_particles_substeps),
      TH_TEST(bad_links_are_named),
  };
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
