/* The exact counter of intersecting triangle pairs (wf_cloth_intersections_count) on hand-made
 * configurations whose answer is known by construction, on the boundary cases (touching, exactly
 * coplanar, one float step off a plane) where an inexact test errs, and against itself: the count
 * of a random soup must not depend on the order of the triangles or of their corners (the broad
 * phase and the exact predicates), and must equal the sum of the pairs counted one by one.
 * Host-only: the --device flag is ignored. */
#define _POSIX_C_SOURCE 200809L /* before any system header: harness.h needs POSIX */

#include "cloth_scenes.h"
#include "harness.h"

/* The count of the triangles t (3 indices each) over vertices v (xyz each). */
static uint64_t count_of(const float (*v)[3], uint32_t nv, const uint32_t (*t)[3], uint32_t nt) {
  uint64_t n = 99;
  wf_status st = wf_cloth_intersections_count(&v[0][0], 3, nv, &t[0][0], nt, &n);
  if (st != WF_OK) TH_FAIL("count: %s", wf_last_error());
  return n;
}

/* Two triangles crossing like the links of a chain: each pierces the other. */
TEST(crossing_pair_counts_one) {
  const float v[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, 2, 0}, {0, 1, -1}, {0, 1, 1}, {0, -1, 0}};
  const uint32_t t[2][3] = {{0, 1, 2}, {3, 4, 5}};
  CHECK_EQ_INT(count_of(v, 6, t, 2), 1);
  /* the second moved 5 along x, clear of the first (which spans x in [-1, 1]) */
  const float w[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, 2, 0}, {5, 1, -1}, {5, 1, 1}, {5, -1, 0}};
  CHECK_EQ_INT(count_of(w, 6, t, 2), 0);
}

/* Parallel layers 1 mm apart do not intersect; a vertex exactly on the other triangle does
 * (touching counts), one float step above it does not, one step below does (it crosses). */
TEST(touching_and_one_float_step) {
  float v[6][3] = {{0.1f, 0.3f, 0.7f},   {0.9f, 0.3f, 0.2f}, {0.4f, 0.3f, -0.6f},
                   {0.4f, 0.301f, 0.1f}, {1.4f, 0.8f, 0.1f}, {0.4f, 0.9f, 1.1f}};
  const uint32_t t[2][3] = {{0, 1, 2}, {3, 4, 5}};
  CHECK_EQ_INT(count_of((const float(*)[3])v, 6, t, 2), 0);
  v[3][1] = 0.3f; /* on the plane y = 0.3 inside the first triangle */
  CHECK_EQ_INT(count_of((const float(*)[3])v, 6, t, 2), 1);
  v[3][1] = nextafterf(0.3f, 1.0f);
  CHECK_EQ_INT(count_of((const float(*)[3])v, 6, t, 2), 0);
  v[3][1] = nextafterf(0.3f, 0.0f);
  CHECK_EQ_INT(count_of((const float(*)[3])v, 6, t, 2), 1);
}

/* A tilted plane (not a coordinate plane): a corner of another triangle exactly on its edge
 * touches (the orientation is exactly 0, which the exact path decides), one float step off it, to
 * the side the other triangle stands on, does not. */
TEST(tilted_plane_exact) {
  const float a[3] = {0.125f, 0.375f, 0.0625f}, b[3] = {1.0f, 0.625f, 0.3125f},
              c[3] = {0.25f, 1.0f, 0.875f};
  float v[6][3];
  memcpy(v[0], a, sizeof a), memcpy(v[1], b, sizeof b), memcpy(v[2], c, sizeof c);
  /* the midpoint of bc (exact in float) lies on the triangle's edge bc */
  float m[3] = {(b[0] + c[0]) * 0.5f, (b[1] + c[1]) * 0.5f, (b[2] + c[2]) * 0.5f};
  /* the other triangle has m as a corner and reaches away from the plane on one side */
  memcpy(v[3], m, sizeof m);
  float nrm[3] = {(b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1]),
                  (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2]),
                  (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])};
  /* up the normal and along the plane: both on the normal's side */
  for (int k = 0; k < 3; k++)
    v[4][k] = m[k] + nrm[k] + 0.25f * (b[k] - a[k]),
    v[5][k] = m[k] + nrm[k] - 0.25f * (c[k] - a[k]);
  const uint32_t t[2][3] = {{0, 1, 2}, {3, 4, 5}};
  CHECK_EQ_INT(count_of((const float(*)[3])v, 6, t, 2), 1); /* touches the edge bc at m */
  /* m pushed one float step away from the triangle along the normal's largest component */
  float *p = &v[3][2];
  *p = nextafterf(*p, nrm[2] > 0 ? 10.0f : -10.0f);
  CHECK_EQ_INT(count_of((const float(*)[3])v, 6, t, 2), 0);
}

/* Neighbours in a mesh: a fan around a shared vertex does not count, nor a flat or creased
 * shared edge; a triangle folded back through its neighbour (sharing a vertex) counts, and so does
 * one folded flat onto the neighbour across their shared edge. */
TEST(neighbours) {
  /* two triangles sharing vertex 0 and edge 0-1 depending on the case */
  float v[5][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {1, 1, 1}};
  const uint32_t edge[2][3] = {{0, 1, 2}, {0, 1, 3}}; /* flat, apexes on opposite sides */
  CHECK_EQ_INT(count_of((const float(*)[3])v, 5, edge, 2), 0);
  v[3][1] = 0.0f, v[3][2] = 1.0f; /* creased 90 degrees */
  CHECK_EQ_INT(count_of((const float(*)[3])v, 5, edge, 2), 0);
  v[3][0] = 0.5f, v[3][1] = 0.5f, v[3][2] = 0.0f; /* folded flat onto the first */
  CHECK_EQ_INT(count_of((const float(*)[3])v, 5, edge, 2), 1);
  v[3][0] = 0.5f, v[3][1] = 0.5f, v[3][2] = 1e-6f; /* almost: 1 um above the first */
  CHECK_EQ_INT(count_of((const float(*)[3])v, 5, edge, 2), 0);
  /* sharing vertex 0 only: the second triangle (0, 3, 4) stands clear, then dips through */
  const uint32_t vert[2][3] = {{0, 1, 2}, {0, 3, 4}};
  float w[5][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {-1, 0, 1}, {0, -1, 1}};
  CHECK_EQ_INT(count_of((const float(*)[3])w, 5, vert, 2), 0);
  w[3][0] = 0.4f, w[3][1] = 0.4f, w[3][2] = -1.0f; /* its edge 3-4 passes under the first */
  w[4][0] = 0.4f, w[4][1] = 0.4f, w[4][2] = 1.0f;
  CHECK_EQ_INT(count_of((const float(*)[3])w, 5, vert, 2), 1);
}

/* A flat 8 x 8 grid has no intersecting pair; lifting one vertex through the layer folded over
 * it does. Built as two grids on top of each other (one mesh, two components). */
TEST(two_layers) {
  enum { N = 8, NV = 2 * N * N, NT = 4 * (N - 1) * (N - 1) };
  static float v[NV][3];
  static uint32_t t[NT][3];
  uint32_t nt = 0;
  for (int s = 0; s < 2; s++)
    for (int j = 0; j < N; j++)
      for (int i = 0; i < N; i++) {
        float *p = v[s * N * N + j * N + i];
        p[0] = (float)i * 0.1f, p[1] = s ? 0.01f : 0.0f, p[2] = (float)j * 0.1f;
        if (i + 1 < N && j + 1 < N) {
          uint32_t a = (uint32_t)(s * N * N + j * N + i);
          t[nt][0] = a, t[nt][1] = a + N, t[nt][2] = a + 1, nt++;
          t[nt][0] = a + 1, t[nt][1] = a + N, t[nt][2] = a + N + 1, nt++;
        }
      }
  CHECK_EQ_INT(count_of((const float(*)[3])v, NV, (const uint32_t(*)[3])t, nt), 0);
  /* the upper layer's vertex (3, 3) pushed 1 cm below the lower layer: its 6 triangles each
   * pierce the lower layer's triangles they pass through */
  v[N * N + 3 * N + 3][1] = -0.01f;
  uint64_t n = count_of((const float(*)[3])v, NV, (const uint32_t(*)[3])t, nt);
  /* each of the 6 triangles around the vertex crosses the lower plane y = 0 along a small loop
   * around (0.3, 0.3), a diamond of half-width 0.05 (half way to its neighbours): it meets the 6
   * lower triangles around the lower vertex (3, 3) that the diamond covers, at least 6 pairs */
  CHECK(n >= 6);
  CHECK(n <= 36);
}

/* Random soups: the same count whatever the order of triangles and corners, and equal to the
 * pairs counted one by one (which skip the broad phase). */
TEST(order_independent_random) {
  enum { NT = 60, NV = 3 * NT };
  static float v[NV][3];
  static uint32_t t[NT][3], u[NT][3], pair[2][3];
  uint32_t seed = 12345u;
  for (int i = 0; i < NV; i++)
    for (int k = 0; k < 3; k++) {
      seed = seed * 1664525u + 1013904223u;
      v[i][k] = (float)(seed >> 8) / 16777216.0f; /* in [0, 1): 24-bit dyadic */
    }
  for (int i = 0; i < NT; i++)
    t[i][0] = 3u * i, t[i][1] = 3u * i + 1, t[i][2] = 3u * i + 2;
  uint64_t all = count_of((const float(*)[3])v, NV, (const uint32_t(*)[3])t, NT), sum = 0;
  for (int i = 0; i < NT; i++)
    for (int j = i + 1; j < NT; j++) {
      memcpy(pair[0], t[i], sizeof pair[0]), memcpy(pair[1], t[j], sizeof pair[1]);
      sum += count_of((const float(*)[3])v, NV, (const uint32_t(*)[3])pair, 2);
    }
  CHECK_EQ_INT(all, sum);
  CHECK(all > 0);                /* 60 random triangles in a unit box do cross */
  for (int i = 0; i < NT; i++) { /* reversed order, corners rotated and flipped */
    const uint32_t *s = t[NT - 1 - i];
    u[i][0] = s[2], u[i][1] = s[1], u[i][2] = s[0];
  }
  CHECK_EQ_INT(count_of((const float(*)[3])v, NV, (const uint32_t(*)[3])u, NT), all);
}

/* A cloth's own state: a flat grid is free of intersections; bad input is named. */
TEST(cloth_state_and_errors) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.devices[0] = th_dev0;
  wf_cloth_grid g = wf_cloth_grid_default();
  wf_cloth *c;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &c));
  uint64_t n = 99;
  CHECK_OK(wf_cloth_intersections(c, &n));
  CHECK_EQ_INT(n, 0);
  wf_cloth_destroy(c);
  const float v[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  const uint32_t t[1][3] = {{0, 1, 3}};
  CHECK_ERROR(wf_cloth_intersections_count(&v[0][0], 3, 3, &t[0][0], 1, &n), WF_ERR_INVALID,
              "vertex 3 >= vertex_count 3");
  CHECK_ERROR(wf_cloth_intersections_count(&v[0][0], 2, 3, &t[0][0], 1, &n), WF_ERR_INVALID,
              "stride 2");
}

/* The count of a cloth over two devices is that of one device (the state is gathered by global
 * id): a grid crumpled by hand through itself, set on both. */
TEST(split_cloth_same_count) {
  NEED_TWO_DEVICES();
  wf_cloth_desc d = wf_cloth_desc_default();
  wf_cloth_grid g = wf_cloth_grid_default();
  g.resolution[0] = g.resolution[1] = 8;
  wf_cloth *one, *two;
  d.devices[0] = th_dev0;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &one));
  d.devices[1] = th_dev1, d.device_count = 2;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &two));
  static float p[64][4], v[64][4];
  CHECK_OK(wf_cloth_download(one, p, v));
  for (int i = 0; i < 64; i++) /* a fold: rows 4.. turned back under rows 0..3, through them */
    if (i / 8 >= 4) p[i][1] += (i / 8 == 4 ? -0.02f : 0.02f) * (float)(i % 3), p[i][2] -= 0.4f;
  CHECK_OK(wf_cloth_set_state(one, (const float(*)[4])p, (const float(*)[4])v, 0.0, 0));
  CHECK_OK(wf_cloth_set_state(two, (const float(*)[4])p, (const float(*)[4])v, 0.0, 0));
  uint64_t a = 0, b = 1;
  CHECK_OK(wf_cloth_intersections(one, &a));
  CHECK_OK(wf_cloth_intersections(two, &b));
  CHECK_EQ_INT(a, b);
  CHECK(a > 0); /* the hand-made fold does cross */
  wf_cloth_destroy(one);
  wf_cloth_destroy(two);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(crossing_pair_counts_one),
                                  TH_TEST(touching_and_one_float_step),
                                  TH_TEST(tilted_plane_exact),
                                  TH_TEST(neighbours),
                                  TH_TEST(two_layers),
                                  TH_TEST(order_independent_random),
                                  TH_TEST(cloth_state_and_errors),
                                  TH_TEST(split_cloth_same_count)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
