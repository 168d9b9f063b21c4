/* Mesh colliders and colliders that move: the mesh's signed distance against the analytic box and
 * sphere, mesh files (OBJ, STL, PLY, glTF through assimp), bad input, particles resting on a mesh
 * plane and a cloth draped on a mesh sphere against the analytic shapes, no tunnelling through a
 * thin moving mesh, keyframes and rotation rates against their closed forms, a gate removed at a
 * time, friction on a turning drum, a pose set between frames without recapture, and 1 vs 2
 * partitions bitwise with a mesh collider. Tolerances are stated and justified at each test. */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "meshes.h"
#include "solvers/collider/collider_math.h"
#include "solvers/collider/mesh_internal.h"
#include "weft/weft.h"

static const double PI = 3.14159265358979323846;

/* ---- the geometry alone ---------------------------------------------------------------------- */

/* wfx_sincos (our polynomial, bitwise equal on both backends) against the C library in double:
 * the reduction keeps ~1e-7 absolute up to |a| = 100 (k · the third part of pi/2 is below an ulp
 * of a), the polynomials are good to 1 ulp; tolerance 5e-7 = a few float ulps of 1. */
TEST(sincos_polynomial) {
  double worst = 0.0;
  for (int i = -20000; i <= 20000; i++) {
    float a = (float)i * 0.005f, s, c;
    wfx_sincos(a, &s, &c);
    worst = fmax(worst, fmax(fabs(s - sin((double)a)), fabs(c - cos((double)a))));
  }
  CHECK(worst < 5e-7);
  if (worst >= 5e-7) printf("  sincos worst error %.3g\n", worst);
}

static float box_sdf(const float c[3], const float h[3], const float x[3]) {
  double q[3], out = 0.0, in = -1e30;
  for (int k = 0; k < 3; k++) {
    q[k] = fabs((double)x[k] - c[k]) - h[k];
    out += fmax(q[k], 0.0) * fmax(q[k], 0.0);
    in = fmax(in, q[k]);
  }
  return (float)(in > 0.0 ? sqrt(out) : in);
}

static uint64_t rng_state = 88172645463325252ull;
static float urand(float lo, float hi) { /* xorshift64: the same points everywhere */
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return lo + (hi - lo) * (float)((rng_state >> 11) * (1.0 / 9007199254740992.0));
}

/* A closed box of 12 triangles against the analytic box, outside and inside (including the
 * points whose closest feature is an edge or a corner, where the sign comes from the tie rule):
 * the closest point of a triangle is exact up to float rounding of coordinates <= 2.5 m (ulp
 * 2.4e-7); tolerance 2e-6 m. Normals agree where the analytic one is unique. */
TEST(mesh_box_distance) {
  const float c[3] = {0.1f, -0.2f, 0.3f}, h[3] = {0.5f, 0.3f, 0.7f};
  tm_mesh b = tm_box(c, h);
  wf_collider_mesh *m;
  CHECK_OK(wf_collider_mesh_create("box", (const float(*)[3])b.v, b.nv, (const uint32_t(*)[3])b.t,
                                   b.nt, &m));
  wf_collider_mesh_info inf = wf_collider_mesh_info_get(m);
  CHECK_EQ_INT(inf.triangles, 12);
  CHECK_EQ_INT(inf.boundary_edges, 0);
  CHECK_EQ_INT(inf.degenerate, 0);
  double worst = 0.0;
  int bad_sign = 0;
  for (int i = 0; i < 4000; i++) {
    float x[3] = {urand(-1.5f, 1.5f), urand(-1.5f, 1.5f), urand(-1.5f, 1.5f)}, n[3];
    float want = box_sdf(c, h, x);
    float got = wf_collider_mesh_distance(m, 0.0f, x, n);
    worst = fmax(worst, fabs(got - want));
    bad_sign += (got < 0.0f) != (want < 0.0f) && fabsf(want) > 1e-5f;
  }
  CHECK(worst < 2e-6);
  CHECK_EQ_INT(bad_sign, 0);
  if (worst >= 2e-6) printf("  box worst %.3g\n", worst);
  /* a face's normal, outside and inside */
  float x1[3] = {c[0] + h[0] + 0.2f, c[1], c[2]}, n1[3];
  CHECK_NEAR(wf_collider_mesh_distance(m, 0.0f, x1, n1), 0.2, 1e-6);
  CHECK_NEAR(n1[0], 1.0, 1e-6);
  float x2[3] = {c[0], c[1] + h[1] - 0.05f, c[2]}, n2[3];
  CHECK_NEAR(wf_collider_mesh_distance(m, 0.0f, x2, n2), -0.05, 1e-6);
  CHECK_NEAR(n2[1], 1.0, 1e-6);
  /* as a shell 0.02 thick: |d| - 0.01 either side */
  CHECK_NEAR(wf_collider_mesh_distance(m, 0.02f, x2, n2), 0.04, 1e-6);
  CHECK_NEAR(n2[1], -1.0, 1e-6);
  wf_collider_mesh_destroy(m);
  tm_free(&b);
}

/* A latitude-longitude sphere (32 x 64: 4032 triangles) against the exact sphere: the mesh lies
 * inside it by at most its sagitta s = r (1 - cos(pi / 64) cos(pi / 64)) = 1.2 mm at r = 0.5, so
 * |phi_mesh - phi_sphere| <= s (+ 1e-6 rounding), and the sign is right wherever |phi| > s. */
TEST(mesh_sphere_distance) {
  const float c[3] = {0.0f, 0.5f, 0.0f}, r = 0.5f;
  tm_mesh s = tm_sphere(c, r, 32, 64);
  wf_collider_mesh *m;
  CHECK_OK(wf_collider_mesh_create("sphere", (const float(*)[3])s.v, s.nv,
                                   (const uint32_t(*)[3])s.t, s.nt, &m));
  CHECK_EQ_INT(wf_collider_mesh_info_get(m).boundary_edges, 0);
  double sag = r * (1.0 - cos(PI / 64) * cos(PI / 64)), worst = 0.0;
  int bad_sign = 0;
  for (int i = 0; i < 3000; i++) {
    float x[3] = {urand(-1.0f, 1.0f), urand(-0.5f, 1.5f), urand(-1.0f, 1.0f)}, n[3];
    double want = sqrt(x[0] * x[0] + (x[1] - c[1]) * (x[1] - c[1]) + x[2] * x[2]) - r;
    float got = wf_collider_mesh_distance(m, 0.0f, x, n);
    worst = fmax(worst, fabs(got - want));
    bad_sign += (got < 0.0f) != (want < 0.0) && fabs(want) > sag;
  }
  CHECK(worst <= sag + 1e-6);
  CHECK_EQ_INT(bad_sign, 0);
  printf("  sphere mesh: worst |phi - exact| %.3g m (sagitta %.3g m)\n", worst, sag);
  wf_collider_mesh_destroy(m);
  tm_free(&s);
}

/* The candidate cache (mesh_query.h, wfm_distance_cached) answers bit for bit as the tree walk
 * (wfm_distance): 500 points near a 64 x 128 sphere mesh (a closed solid: its poles join 128
 * triangles, more than a list holds, so full lists occur) and a 64 x 64 shell plane (thickness
 * 1 cm, with the previous point as ref), each moving 40 steps of random length up to 0.3 (half
 * of them) or 2 skins (lists kept, made again, or outrun: the point walks) with a jump now and
 * then; half-way
 * the reach changes and then
 * the skin (every list is made again). Distances and normals are compared as bits. */
/* wfm_pick from a seed (a walking point's last answer) gives the unseeded walk's answer and key,
 * bit for bit, whatever the seed: the answer itself, a neighbour of it in the tree's order, a
 * random triangle, one beyond the limit; at the poles, where 128 triangles tie at the pole
 * vertex, the least index still wins. 20 000 points within 3 cm of the sphere. */
TEST(mesh_walk_seed_changes_nothing) {
  const float c[3] = {0.0f, 0.0f, 0.0f};
  tm_mesh sm = tm_sphere(c, 0.5f, 64, 128);
  wf_collider_mesh *m = NULL;
  CHECK_OK(wf_collider_mesh_create("sphere", (const float(*)[3])sm.v, sm.nv,
                                   (const uint32_t(*)[3])sm.t, sm.nt, &m));
  REQUIRE(m);
  const float lim = 0.03f * 0.03f;
  long differ = 0, seeded = 0;
  for (int i = 0; i < 20000; i++) {
    float u = urand(-1.0f, 1.0f), ph = urand(0.0f, 6.2831853f), sq = sqrtf(1.0f - u * u);
    if (i < 200) u = i % 2 ? 1.0f : -1.0f, sq = 0.0f; /* over the poles */
    float rr = 0.5f + urand(-0.03f, 0.03f);
    float x[3] = {rr * sq * cosf(ph), rr * u, rr * sq * sinf(ph)};
    float k0, k;
    int32_t b0 = wfm_pick(m->nodes, m->tris, x, lim, WFM_NO_SEED, &k0);
    uint32_t seeds[4] = {b0 >= 0 ? (uint32_t)b0 : 0u, b0 > 0 ? (uint32_t)b0 - 1u : 1u,
                         (uint32_t)urand(0.0f, (float)m->info.triangles - 1.0f), 0u};
    for (int s = 0; s < 4; s++) {
      int32_t b = wfm_pick(m->nodes, m->tris, x, lim, seeds[s], &k);
      differ += b != b0 || memcmp(&k, &k0, sizeof k) != 0;
      seeded += b0 >= 0;
    }
  }
  CHECK_EQ_INT(differ, 0);
  CHECK(seeded > 40000); /* most points had an answer to start from */
  wf_collider_mesh_destroy(m);
  tm_free(&sm);
}

TEST(mesh_cache_answers_as_the_tree) {
  const float c[3] = {0.0f, 0.0f, 0.0f};
  tm_mesh sm = tm_sphere(c, 0.5f, 64, 128), gm = tm_grid(0.6f, 0.0f, 64);
  wf_collider_mesh *m[2] = {NULL, NULL};
  CHECK_OK(wf_collider_mesh_create("sphere", (const float(*)[3])sm.v, sm.nv,
                                   (const uint32_t(*)[3])sm.t, sm.nt, &m[0]));
  CHECK_OK(wf_collider_mesh_create("plane", (const float(*)[3])gm.v, gm.nv,
                                   (const uint32_t(*)[3])gm.t, gm.nt, &m[1]));
  REQUIRE(m[0] && m[1]);
  enum { N = 500, STEPS = 40 };
  wfm_cache *cache = malloc(N * sizeof *cache);
  float(*x)[3] = malloc(N * sizeof *x), (*prev)[3] = malloc(N * sizeof *prev);
  REQUIRE(cache && x && prev);
  for (int k = 0; k < 2; k++) {
    float thick = k ? 0.01f : 0.0f, reach = 0.03f, skin = 0.002f;
    memset(cache, 0xff, N * sizeof *cache);
    for (int i = 0; i < N; i++) {
      if (k == 0) { /* 0 to 4 cm outside or inside the sphere, poles included */
        float u = urand(-1.0f, 1.0f), ph = urand(0.0f, 6.2831853f), sq = sqrtf(1.0f - u * u);
        float rr = 0.5f + urand(-0.04f, 0.04f);
        if (i < 40) u = i % 2 ? 1.0f : -1.0f, sq = 0.0f;
        x[i][0] = rr * sq * cosf(ph), x[i][1] = rr * u, x[i][2] = rr * sq * sinf(ph);
      } else { /* within 4 cm of the plane, on both sides */
        x[i][0] = urand(-0.55f, 0.55f), x[i][1] = urand(-0.04f, 0.04f),
        x[i][2] = urand(-0.55f, 0.55f);
      }
      memcpy(prev[i], x[i], sizeof x[i]);
    }
    long differ = 0, full = 0, walks = 0, listed = 0, queries = 0;
    for (int step = 0; step < STEPS; step++) {
      if (step == STEPS / 2) reach = 0.02f;
      if (step == 3 * STEPS / 4) skin = 0.001f;
      for (int i = 0; i < N; i++) {
        float na[3], nb[3];
        const float *ref = k ? prev[i] : NULL;
        float a = wfm_distance(m[k]->nodes, m[k]->tris, x[i], thick, reach * reach, ref, na);
        float b = wfm_distance_cached(m[k]->nodes, m[k]->tris, x[i], thick, reach * reach, ref,
                                      skin, &cache[i], nb);
        differ += memcmp(&a, &b, sizeof a) != 0 || memcmp(na, nb, sizeof na) != 0;
        full += cache[i].count == WFM_CACHE_FULL;
        walks += cache[i].count == WFM_CACHE_WALK;
        listed += cache[i].count < WFM_CACHE_WALK;
        queries++;
        memcpy(prev[i], x[i], sizeof x[i]);
        float len =
            urand(0.0f, (i % 2 ? 2.0f : 0.3f) * skin) * (i % 97 == step % 97 ? 10.0f : 1.0f);
        float d[3] = {urand(-1.0f, 1.0f), urand(-1.0f, 1.0f), urand(-1.0f, 1.0f)};
        float dl = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) + 1e-6f;
        for (int q = 0; q < 3; q++)
          x[i][q] += d[q] / dl * len;
      }
    }
    CHECK_EQ_INT(differ, 0);
    if (k == 0) CHECK(full > 0); /* the poles overflow a list: the fallback was exercised */
    CHECK(walks > 0);            /* and points that outran their lists walked */
    CHECK(listed > queries / 4); /* while the slow half mostly kept its lists */
    printf("  %s: %ld queries, %ld differ from the tree walk; %.1f%% listed, %.1f%% full, %.1f%% "
           "walking\n",
           k ? "shell plane" : "sphere", queries, differ, 100.0 * listed / queries,
           100.0 * full / queries, 100.0 * walks / queries);
  }
  free(cache), free(x), free(prev);
  wf_collider_mesh_destroy(m[0]), wf_collider_mesh_destroy(m[1]);
  tm_free(&sm), tm_free(&gm);
}

/* Bad meshes and bad colliders: each refused with a message naming what is wrong. Degenerate
 * triangles are skipped and counted (not refused): files often hold a few. */
TEST(mesh_bad_input) {
  const float c[3] = {0.0f, 0.0f, 0.0f}, h[3] = {0.5f, 0.5f, 0.5f};
  tm_mesh b = tm_box(c, h);
  uint32_t t[13][3];
  memcpy(t, b.t, sizeof(uint32_t[12][3]));
  t[12][0] = 0, t[12][1] = 1, t[12][2] = 1; /* a repeated vertex: zero area */
  wf_collider_mesh *m = NULL;
  CHECK_OK(wf_collider_mesh_create("box+1", (const float(*)[3])b.v, b.nv, t, 13, &m));
  CHECK_EQ_INT(wf_collider_mesh_info_get(m).degenerate, 1);
  CHECK_EQ_INT(wf_collider_mesh_info_get(m).triangles, 12);
  wf_collider_mesh_destroy(m);
  CHECK_ERROR(wf_collider_mesh_create("flat", (const float(*)[3])b.v, b.nv, t + 12, 1, &m),
              WF_ERR_INVALID, "flat", "degenerate");
  t[3][2] = 99;
  CHECK_ERROR(wf_collider_mesh_create("wrong", (const float(*)[3])b.v, b.nv, t, 12, &m),
              WF_ERR_INVALID, "wrong", "triangle 3 uses vertex 99");
  CHECK_ERROR(wf_collider_mesh_load("/nonexistent/hopper.stl", 1.0f, &m), WF_ERR_IO,
              "/nonexistent/hopper.stl");
  /* an open mesh needs a thickness */
  tm_mesh g = tm_grid(1.0f, 0.0f, 2);
  CHECK_OK(wf_collider_mesh_create("floor", (const float(*)[3])g.v, g.nv, (const uint32_t(*)[3])g.t,
                                   g.nt, &m));
  CHECK_EQ_INT(wf_collider_mesh_info_get(m).boundary_edges, 8);
  wf_particles_desc pd = wf_particles_desc_default();
  pd.devices[0] = th_dev0;
  wf_particles *ps;
  CHECK_OK(wf_particles_create(&pd, &ps));
  wf_collider_desc cd = wf_collider_desc_default();
  cd.name = "floor";
  cd.type = WF_COLLIDER_MESH;
  cd.mesh = m;
  CHECK_ERROR(wf_particles_add_collider(ps, &cd, NULL), WF_ERR_INVALID, "collider 'floor'",
              "is open (8 edges", "thickness");
  cd.thickness = 0.01f;
  CHECK_OK(wf_particles_add_collider(ps, &cd, NULL));
  /* keyframes out of order */
  wf_collider_key keys[2] = {{.time = 1.0f}, {.time = 0.5f}};
  cd = wf_collider_desc_default();
  cd.name = "gate";
  cd.keys = keys, cd.key_count = 2;
  CHECK_ERROR(wf_particles_add_collider(ps, &cd, NULL), WF_ERR_INVALID, "collider 'gate'",
              "keys[1].time 0.5 is not after keys[0].time 1");
  keys[1].time = 2.0f;
  keys[1].rotation[0] = NAN;
  CHECK_ERROR(wf_particles_add_collider(ps, &cd, NULL), WF_ERR_INVALID, "keys[1].rotation");
  wf_collider_pose pose = {.time = 0.0f, .rotation = {0, 0, 0, 0}};
  CHECK_ERROR(wf_particles_set_collider_pose(ps, 5, &pose), WF_ERR_INVALID, "collider 5");
  pose.velocity[1] = INFINITY;
  CHECK_ERROR(wf_particles_set_collider_pose(ps, 0, &pose), WF_ERR_INVALID, "finite");
  wf_particles_destroy(ps);
  wf_collider_mesh_destroy(m);
  tm_free(&g);
  tm_free(&b);
}

/* ---- mesh files --------------------------------------------------------------------------------
 */

static void b64(const unsigned char *in, size_t n, char *out) {
  static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0u) |
                 (i + 2 < n ? in[i + 2] : 0u);
    out[o++] = a[v >> 18 & 63], out[o++] = a[v >> 12 & 63];
    out[o++] = i + 1 < n ? a[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? a[v & 63] : '=';
  }
  out[o] = 0;
}

/* The unit box written as OBJ, ASCII STL (one triangle's own vertices each: joined on load), ASCII
 * PLY and glTF (an embedded buffer); each loads as 12 triangles, closed, with the analytic
 * distance (the same geometry: 1e-6 m). A malformed file is refused naming it. */
TEST(mesh_files) {
  if (!wf_collider_mesh_can_load()) SKIP("built without assimp (libassimp-dev)");
  const float c[3] = {0.0f, 0.0f, 0.0f}, h[3] = {0.5f, 0.5f, 0.5f};
  tm_mesh b = tm_box(c, h);
  char dir[] = "/tmp/weft_meshes_XXXXXX";
  REQUIRE(mkdtemp(dir));
  char path[5][320], buf[16384];
  const char *ext[5] = {"obj", "stl", "ply", "gltf", "bad.ply"};
  for (int f = 0; f < 5; f++)
    snprintf(path[f], sizeof path[f], "%s/box.%s", dir, ext[f]);
  size_t o = 0;
  for (uint32_t i = 0; i < b.nv; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "v %g %g %g\n", b.v[i][0], b.v[i][1], b.v[i][2]);
  for (uint32_t i = 0; i < b.nt; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "f %u %u %u\n", b.t[i][0] + 1, b.t[i][1] + 1,
                          b.t[i][2] + 1);
  REQUIRE(th_write_file(path[0], buf));
  o = (size_t)snprintf(buf, sizeof buf, "solid box\n");
  for (uint32_t i = 0; i < b.nt; i++) {
    o += (size_t)snprintf(buf + o, sizeof buf - o, "facet normal 0 0 0\nouter loop\n");
    for (int k = 0; k < 3; k++)
      o += (size_t)snprintf(buf + o, sizeof buf - o, "vertex %g %g %g\n", b.v[b.t[i][k]][0],
                            b.v[b.t[i][k]][1], b.v[b.t[i][k]][2]);
    o += (size_t)snprintf(buf + o, sizeof buf - o, "endloop\nendfacet\n");
  }
  snprintf(buf + o, sizeof buf - o, "endsolid box\n");
  REQUIRE(th_write_file(path[1], buf));
  o = (size_t)snprintf(buf, sizeof buf,
                       "ply\nformat ascii 1.0\nelement vertex %u\nproperty float x\nproperty float "
                       "y\nproperty float z\nelement face %u\nproperty list uchar int "
                       "vertex_indices\nend_header\n",
                       b.nv, b.nt);
  for (uint32_t i = 0; i < b.nv; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "%g %g %g\n", b.v[i][0], b.v[i][1], b.v[i][2]);
  for (uint32_t i = 0; i < b.nt; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, "3 %u %u %u\n", b.t[i][0], b.t[i][1], b.t[i][2]);
  REQUIRE(th_write_file(path[2], buf));
  unsigned char bin[8 * 12 + 36 * 2];
  memcpy(bin, b.v, 8 * 12);
  for (uint32_t i = 0; i < 36; i++) {
    uint16_t ix = (uint16_t)b.t[i / 3][i % 3];
    memcpy(bin + 96 + 2 * i, &ix, 2);
  }
  char enc[256];
  b64(bin, sizeof bin, enc);
  snprintf(buf, sizeof buf,
           "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],"
           "\"nodes\":[{\"mesh\":0}],\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0},"
           "\"indices\":1}]}],\"buffers\":[{\"byteLength\":168,\"uri\":\"data:application/"
           "octet-stream;base64,%s\"}],\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,"
           "\"byteLength\":96},{\"buffer\":0,\"byteOffset\":96,\"byteLength\":72}],"
           "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":8,\"type\":\"VEC3\","
           "\"min\":[-0.5,-0.5,-0.5],\"max\":[0.5,0.5,0.5]},{\"bufferView\":1,\"componentType\":"
           "5123,\"count\":36,\"type\":\"SCALAR\"}]}",
           enc);
  REQUIRE(th_write_file(path[3], buf));
  REQUIRE(th_write_file(path[4], "ply\nformat ascii 1.0\nelement vertex 3\nend_header\n1 2\n"));
  for (int f = 0; f < 4; f++) {
    wf_collider_mesh *m = NULL;
    wf_status st = wf_collider_mesh_load(path[f], 2.0f, &m);
    if (st != WF_OK) {
      TH_FAIL("%s: %s", ext[f], wf_last_error());
      continue;
    }
    wf_collider_mesh_info inf = wf_collider_mesh_info_get(m);
    if (inf.triangles != 12 || inf.boundary_edges != 0)
      TH_FAIL("%s: %u triangles, %u boundary edges", ext[f], inf.triangles, inf.boundary_edges);
    float x[3] = {1.5f, 0.2f, 0.1f}; /* scaled 2: the box is [-1, 1]^3 */
    CHECK_NEAR(wf_collider_mesh_distance(m, 0.0f, x, NULL), 0.5, 1e-6);
    wf_collider_mesh_destroy(m);
  }
  wf_collider_mesh *m = NULL;
  CHECK_ERROR(wf_collider_mesh_load(path[4], 1.0f, &m), WF_ERR_PARSE, path[4]);
  CHECK_ERROR(wf_collider_mesh_load(path[0], 0.0f, &m), WF_ERR_INVALID, "scale");
  for (int f = 0; f < 5; f++)
    remove(path[f]);
  rmdir(dir);
  tm_free(&b);
}

/* ---- particles and cloth against the analytic shapes ------------------------------------------
 */

static wf_particles *particles(int model, int n, const float (*p)[4], const float (*v)[4]) {
  wf_particles_desc d = wf_particles_desc_default();
  d.devices[0] = th_dev0;
  d.contact_model = model;
  d.substeps = 32;
  wf_particles *ps = NULL;
  if (wf_particles_create(&d, &ps) != WF_OK) return NULL;
  if (wf_particles_add(ps, (uint32_t)n, p, v, 0, NULL) != WF_OK) {
    wf_particles_destroy(ps);
    return NULL;
  }
  return ps;
}

static wf_collider_mesh *mesh_of(const char *name, tm_mesh *t) {
  wf_collider_mesh *m = NULL;
  wf_status st = wf_collider_mesh_create(name, (const float(*)[3])t->v, t->nv,
                                         (const uint32_t(*)[3])t->t, t->nt, &m);
  tm_free(t);
  if (st != WF_OK) fprintf(stderr, "  %s\n", wf_last_error());
  return m;
}

/* Four particles dropped onto (a) the analytic plane y = 0.005, (b) an open 2 x 2 m mesh plane at
 * y = 0 with thickness 0.01 (its surface is y = 0.005), (c) the analytic plane y = 0 and (d) a
 * closed mesh slab whose top is y = 0, in DEM and XPBD. On a face the mesh's distance is the
 * plane's up to the rounding of the closest point's x and z (1e-8 m), so after 1 s the heights
 * and speeds agree within 1e-6 m and 1e-5 m/s. */
TEST(particle_rests_on_mesh_plane) {
  for (int model = 0; model < 2; model++) {
    float y[4];
    for (int k = 0; k < 4; k++) {
      float p[1][4] = {{0.013f, 0.2f, -0.021f, 0.05f}}, v[1][4] = {{0.3f, 0.0f, 0.0f, 2.0f}};
      wf_particles *ps = particles(model, 1, p, v);
      REQUIRE(ps);
      wf_collider_desc cd = wf_collider_desc_default();
      wf_collider_mesh *m = NULL;
      if (k == 0) cd.offset = 0.005f;
      if (k == 1) {
        tm_mesh g = tm_grid(1.0f, 0.0f, 4);
        m = mesh_of("plane", &g);
        cd.type = WF_COLLIDER_MESH, cd.mesh = m, cd.thickness = 0.01f;
      }
      if (k == 3) {
        const float c[3] = {0.0f, -0.5f, 0.0f}, h[3] = {1.0f, 0.5f, 1.0f};
        tm_mesh b = tm_box(c, h);
        m = mesh_of("slab", &b);
        cd.type = WF_COLLIDER_MESH, cd.mesh = m;
      }
      CHECK_OK(wf_particles_add_collider(ps, &cd, NULL));
      wf_collider_mesh_destroy(m);
      CHECK_OK(wf_particles_step_frames(ps, 60));
      float q[1][4], w[1][4];
      CHECK_OK(wf_particles_download(ps, q, w));
      y[k] = q[0][1];
      CHECK(fabsf(w[0][1]) < 1e-2f);
      wf_particles_destroy(ps);
    }
    CHECK_NEAR(y[1], y[0], 1e-6);
    CHECK_NEAR(y[3], y[2], 1e-6);
    CHECK_NEAR(y[2], 0.05, 1e-3); /* resting: r less the spring's sag mg/k = 1e-3 m at most */
  }
}

/* A 0.8 m cloth (13 x 13, XPBD) dropped on a sphere r = 0.4: the analytic sphere vs a 24 x 48
 * latitude-longitude mesh of it (sagitta s = r (1 - cos(pi/48)²) = 1.7 mm). After 0.5 s: every
 * vertex that touches (within 1 mm of r + thickness) sits at r + thickness from the
 * centre, within [-s - 0.5 mm, +0.5 mm] on the mesh (it lies inside the sphere by up to s) and
 * ±0.5 mm on the sphere (the solver's own slack); the top vertex, 2 cm from the mesh's pole,
 * agrees within s + 0.5 mm (the pole's fan of flat triangles is 0.85 mm below the sphere there);
 * and as many vertices touch (±10%). The rest of
 * the drape hangs free and folds chaotically, so it is not compared vertex by vertex. */
TEST(cloth_on_mesh_sphere) {
  const float r = 0.4f, c[3] = {0.0f, 0.0f, 0.0f};
  float pos[2][169][4];
  double sag = r * (1.0 - cos(PI / 48) * cos(PI / 48));
  for (int k = 0; k < 2; k++) {
    wf_cloth_desc d = wf_cloth_desc_default();
    d.devices[0] = th_dev0, d.device_count = 1;
    d.integrator = WF_CLOTH_XPBD;
    wf_cloth_grid g = wf_cloth_grid_default();
    g.size[0] = g.size[1] = 0.8f;
    g.resolution[0] = g.resolution[1] = 13;
    g.center[0] = 0.01f, g.center[1] = 0.45f, g.center[2] = 0.02f;
    wf_cloth *cl;
    CHECK_OK(wf_cloth_create_grid(&d, &g, &cl));
    wf_collider_desc cd = wf_collider_desc_default();
    wf_collider_mesh *m = NULL;
    if (k == 0) {
      cd.type = WF_COLLIDER_SPHERE, cd.radius = r;
    } else {
      tm_mesh s = tm_sphere(c, r, 24, 48);
      m = mesh_of("ball", &s);
      cd.type = WF_COLLIDER_MESH, cd.mesh = m;
    }
    cd.friction = 0.8f;
    CHECK_OK(wf_cloth_add_collider(cl, &cd, NULL));
    wf_collider_mesh_destroy(m);
    CHECK_OK(wf_cloth_step_frames(cl, 30));
    CHECK_OK(wf_cloth_download(cl, pos[k], NULL));
    wf_cloth_destroy(cl);
  }
  const float thick = wf_cloth_material_default().thickness;
  int touching[2] = {0, 0};
  double lo[2] = {1e9, 1e9}, hi[2] = {-1e9, -1e9};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 169; i++) {
      double rr = sqrt(pos[k][i][0] * pos[k][i][0] + pos[k][i][1] * pos[k][i][1] +
                       pos[k][i][2] * pos[k][i][2]);
      if (rr - r - thick > 1e-3) continue; /* hangs free */
      touching[k]++;
      lo[k] = fmin(lo[k], rr - r - thick), hi[k] = fmax(hi[k], rr - r - thick);
    }
  printf("  cloth drape: touching %d / %d vertices; offsets sphere [%.3g, %.3g] mesh [%.3g, %.3g] "
         "m (sagitta %.3g m)\n",
         touching[0], touching[1], lo[0], hi[0], lo[1], hi[1], sag);
  CHECK(touching[0] > 0 && touching[1] > 0);
  CHECK(abs(touching[1] - touching[0]) <= touching[0] / 10 + 1);
  CHECK(lo[0] >= -5e-4);
  CHECK(lo[1] >= -sag - 5e-4);
  int top = 6 * 13 + 6;
  for (int a = 0; a < 3; a++)
    CHECK_NEAR(pos[1][top][a], pos[0][top][a], sag + 5e-4);
}

/* A thin open plane (thickness 0.01 m) rising at 1 m/s and 16 particles (r = 0.025 m) falling
 * onto it at 20 m/s: relative speed 21 m/s, 11 mm a substep (dt = 1/1920 s), below r + t/2 =
 * 30 mm, the range within which the contact and the projection act. No centre ever gets below the
 * plane's mid-surface, in DEM and in XPBD; after the impact they ride up on it. */
TEST(no_tunnelling_thin_moving_mesh) {
  for (int model = 0; model < 2; model++) {
    float p[16][4], v[16][4];
    for (int i = 0; i < 16; i++) {
      p[i][0] = -0.3f + 0.04f * (float)i, p[i][1] = 0.3f + 0.01f * (float)(i % 3), p[i][2] = 0.0f;
      p[i][3] = 0.025f;
      v[i][0] = v[i][2] = 0.0f, v[i][1] = -20.0f, v[i][3] = 1.0f / 0.065f;
    }
    wf_particles *ps = particles(model, 16, p, v);
    REQUIRE(ps);
    tm_mesh g = tm_grid(1.0f, 0.0f, 8);
    wf_collider_mesh *m = mesh_of("sheet", &g);
    wf_collider_desc cd = wf_collider_desc_default();
    cd.type = WF_COLLIDER_MESH, cd.mesh = m, cd.thickness = 0.01f;
    cd.velocity[1] = 1.0f;
    CHECK_OK(wf_particles_add_collider(ps, &cd, NULL));
    wf_collider_mesh_destroy(m);
    int crossed = 0;
    for (int f = 1; f <= 12; f++) {
      CHECK_OK(wf_particles_step_frames(ps, 1));
      float q[16][4];
      CHECK_OK(wf_particles_download(ps, q, NULL));
      float plane = 1.0f * (float)f / 60.0f;
      for (int i = 0; i < 16; i++)
        crossed += q[i][1] < plane;
    }
    CHECK_EQ_INT(crossed, 0);
    wf_particles_destroy(ps);
  }
}

/* ---- motion
 * -------------------------------------------------------------------------------------- */

static void quat_axis(double ax, double ay, double az, double angle, double *q) {
  double l = sqrt(ax * ax + ay * ay + az * az);
  q[0] = ax / l * sin(angle / 2), q[1] = ay / l * sin(angle / 2), q[2] = az / l * sin(angle / 2);
  q[3] = cos(angle / 2);
}

static void qmul_d(const double *a, const double *b, double *r) {
  r[0] = a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1];
  r[1] = a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0];
  r[2] = a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3];
  r[3] = a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2];
}

/* Keys at 0.5 s (origin, no turn), 1.5 s ((1, 2, 0), 90° about z) and 2.5 s ((1, 2, 3), then 90°
 * about the body's x too): the pose at sample times against linear interpolation and the slerp
 * written as q0 exp(s log(q0⁻¹ q1)) about the segment's fixed axis, held before the first and
 * after the last key with zero velocity; a drum turning at 3 rad/s about z through (1, 0, 0)
 * against the rotation by 3t. Float evaluation of angles <= pi: tolerance 2e-6 (quaternions),
 * 1e-5 (positions, velocities). */
TEST(keyframes_and_drum_closed_form) {
  double q90z[4], q90x[4], q2[4];
  quat_axis(0, 0, 1, PI / 2, q90z);
  quat_axis(1, 0, 0, PI / 2, q90x);
  qmul_d(q90z, q90x, q2);
  wf_collider_key keys[3] = {
      {.time = 0.5f, .position = {0, 0, 0}, .rotation = {0, 0, 0, 1}},
      {.time = 1.5f,
       .position = {1, 2, 0},
       .rotation = {(float)q90z[0], (float)q90z[1], (float)q90z[2], (float)q90z[3]}},
      {.time = 2.5f,
       .position = {1, 2, 3},
       .rotation = {(float)q2[0], (float)q2[1], (float)q2[2], (float)q2[3]}}};
  wf_collider_desc d = wf_collider_desc_default();
  d.type = WF_COLLIDER_SPHERE, d.radius = 0.1f;
  d.keys = keys, d.key_count = 3;
  const float ts[] = {0.0f, 0.5f, 0.75f, 1.0f, 1.5f, 1.9f, 2.5f, 4.0f};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
    double t = ts[i], p[3] = {0, 0, 0}, q[4] = {0, 0, 0, 1}, v[3] = {0, 0, 0}, w[3] = {0, 0, 0};
    if (t >= 2.5) {
      p[0] = 1, p[1] = 2, p[2] = 3;
      memcpy(q, q2, sizeof q);
    } else if (t > 1.5) {
      double s = (t - 1.5), dq[4];
      p[0] = 1, p[1] = 2, p[2] = 3 * s, v[2] = 3;
      quat_axis(1, 0, 0, PI / 2 * s, dq);
      qmul_d(q90z, dq, q);
      /* world angular velocity: R(q90z) x̂ · pi/2 = ŷ pi/2 */
      w[1] = PI / 2;
    } else if (t > 0.5) {
      double s = t - 0.5;
      p[0] = s, p[1] = 2 * s, v[0] = 1, v[1] = 2, w[2] = PI / 2;
      quat_axis(0, 0, 1, PI / 2 * s, q);
    }
    if (t == 1.5) { /* exactly on a key: the segment after it starts */
      p[0] = 1, p[1] = 2, p[2] = 0, v[0] = 0, v[1] = 0, v[2] = 3, w[2] = 0, w[1] = PI / 2;
      memcpy(q, q90z, sizeof q);
    }
    wf_collider_pose P;
    CHECK_OK(wf_collider_pose_at(&d, (float)t, &P));
    for (int k = 0; k < 3; k++) {
      CHECK_NEAR(P.position[k], p[k], 1e-5);
      CHECK_NEAR(P.velocity[k], v[k], 1e-5);
      CHECK_NEAR(P.angular_velocity[k], w[k], 1e-5);
    }
    for (int k = 0; k < 4; k++)
      CHECK_NEAR(P.rotation[k], q[k], 2e-6);
  }
  wf_collider_desc drum = wf_collider_desc_default();
  drum.type = WF_COLLIDER_CAPSULE, drum.radius = 0.2f;
  drum.pivot[0] = 1.0f;
  drum.angular_velocity[2] = 3.0f;
  for (float t = 0.0f; t < 3.0f; t += 0.37f) {
    wf_collider_pose P;
    CHECK_OK(wf_collider_pose_at(&drum, t, &P));
    double q[4];
    quat_axis(0, 0, 1, 3.0 * t, q);
    if (q[3] * P.rotation[3] < 0) /* q and -q are one rotation */
      for (int k = 0; k < 4; k++)
        q[k] = -q[k];
    for (int k = 0; k < 4; k++)
      CHECK_NEAR(P.rotation[k], q[k], 2e-6);
    CHECK_NEAR(P.position[0], 1.0, 0.0);
    CHECK_NEAR(P.angular_velocity[2], 3.0, 0.0);
  }
}

/* A particle resting on a box gate that exists until 0.25 s: it rests there (within the
 * spring's sag, 1 mm), then falls freely: at 0.5 s it is ½ g (0.25 s)² = 0.3066 m lower, within
 * semi-implicit Euler's ½ g dt t (2e-4 m) and the gate's end falling between substeps (g · 0.25 s
 * · dt = 1.3e-3 m): tolerance 2e-3 m. A second gate, keyframed to rise by 0.1 m between 0.05 and
 * 0.45 s (0.25 m/s), carries its particle: half way up at 0.25 s, and 0.1 m up at 0.8 s, after
 * the small hop the stop gives it (v²/2g = 3 mm, damped by restitution 0.5); tolerance 2e-3 m. */
TEST(gate_removed_and_keyframed_lift) {
  float p[2][4] = {{0.0f, 0.05f, 0.0f, 0.05f}, {3.0f, 0.05f, 0.0f, 0.05f}},
        v[2][4] = {{0, 0, 0, 2.0f}, {0, 0, 0, 2.0f}};
  wf_particles *ps = particles(WF_CONTACT_DEM, 2, p, v);
  REQUIRE(ps);
  wf_collider_desc gate = wf_collider_desc_default();
  gate.type = WF_COLLIDER_BOX;
  gate.center[1] = -0.5f, gate.half_extents[0] = gate.half_extents[2] = 1.0f;
  gate.half_extents[1] = 0.5f;
  gate.active_until = 0.25f;
  CHECK_OK(wf_particles_add_collider(ps, &gate, NULL));
  wf_collider_key keys[2] = {
      {.time = 0.05f, .rotation = {0, 0, 0, 1}},
      {.time = 0.45f, .position = {0.0f, 0.1f, 0.0f}, .rotation = {0, 0, 0, 1}}};
  wf_collider_desc lift = gate;
  lift.center[0] = 3.0f;
  lift.active_until = 0.0f;
  lift.keys = keys, lift.key_count = 2;
  CHECK_OK(wf_particles_add_collider(ps, &lift, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 15)); /* 0.25 s: the gate goes */
  float q[2][4];
  CHECK_OK(wf_particles_download(ps, q, NULL));
  float rest = q[0][1];
  CHECK_NEAR(rest, 0.05, 1e-3);
  CHECK_NEAR(q[1][1], rest + 0.05, 2e-3);
  CHECK_OK(wf_particles_step_frames(ps, 15)); /* 0.5 s */
  CHECK_OK(wf_particles_download(ps, q, NULL));
  CHECK_NEAR(q[0][1], rest - 0.5 * 9.81 * 0.25 * 0.25, 2e-3);
  CHECK_OK(wf_particles_step_frames(ps, 18)); /* 0.8 s */
  CHECK_OK(wf_particles_download(ps, q, NULL));
  CHECK_NEAR(q[1][1], rest + 0.1, 2e-3);
  wf_particles_destroy(ps);
}

/* A particle on top of a capsule drum (r = 0.5 m, axis x) turning at ±4 rad/s: the surface under
 * it moves at ω r = 2 m/s along ∓z... (w x r = (ω, 0, 0) x (0, r, 0) = (0, 0, ω r)). Coulomb
 * friction (μ = 0.5, far above the viscous range kt v < μ m g) accelerates it at μ g: after
 * 0.05 s, v_z = ±0.245 m/s. The particle has moved 6 mm round the drum by then, where gravity's
 * tangential pull is < 1% of μ g; tolerance 4%. A drum that does not turn leaves it at rest. */
TEST(drum_friction) {
  for (int sgn = -1; sgn <= 1; sgn++) {
    const float w = 4.0f * (float)sgn;
    float p[1][4] = {{0.0f, 0.5f + 0.05f - 5e-4f, 0.0f, 0.05f}},
          v[1][4] = {{0, 0, 0, 1.0f / 0.5236f}};
    wf_particles *ps = particles(WF_CONTACT_DEM, 1, p, v);
    REQUIRE(ps);
    wf_collider_desc drum = wf_collider_desc_default();
    drum.type = WF_COLLIDER_CAPSULE;
    drum.radius = 0.5f;
    drum.p0[0] = -1.0f, drum.p1[0] = 1.0f, drum.p1[1] = 0.0f;
    drum.angular_velocity[0] = w;
    drum.friction = 0.5f;
    CHECK_OK(wf_particles_add_collider(ps, &drum, NULL));
    CHECK_OK(wf_particles_step_frames(ps, 3)); /* 0.05 s */
    float q[1][4], u[1][4];
    CHECK_OK(wf_particles_download(ps, q, u));
    double want = 0.5 * 9.81 * 0.05 * (double)sgn;
    if (sgn == 0)
      CHECK(fabsf(u[0][2]) < 1e-6f);
    else
      CHECK_NEAR(u[0][2] / want, 1.0, 0.04);
    wf_particles_destroy(ps);
  }
}

/* Poses set between frames move the collider without a new capture (the frame reads the collider
 * table on the device): a box under a resting particle is set moving up at 0.25 m/s at 0.1 s and
 * stopped 0.1 m higher at 0.5 s; the particle rides up with it (0.05 m at 0.3 s) and rests 0.1 m
 * higher at 1 s (after the stop's 3 mm hop). The solver's capture count does not change.
 * Tolerance: 2e-3 m (the spring's sag and the hop's remains). */
TEST(set_pose_without_recapture) {
  NEED_TWO_DEVICES(); /* two partitions: each has its table; and the split counts captures */
  float p[2][4] = {{0.0f, 0.05f, 0.0f, 0.05f}, {0.5f, 0.05f, 0.0f, 0.05f}},
        v[2][4] = {{0, 0, 0, 2.0f}, {0, 0, 0, 2.0f}};
  wf_particles_desc d = wf_particles_desc_default();
  d.substeps = 32;
  d.devices[0] = th_dev0, d.devices[1] = th_dev1, d.device_count = 2;
  wf_particles *ps;
  CHECK_OK(wf_particles_create(&d, &ps));
  CHECK_OK(wf_particles_add(ps, 2, p, v, 0, NULL));
  wf_collider_desc box = wf_collider_desc_default();
  box.type = WF_COLLIDER_BOX;
  box.center[1] = -0.5f, box.half_extents[0] = box.half_extents[2] = 1.0f;
  box.half_extents[1] = 0.5f;
  uint32_t k;
  CHECK_OK(wf_particles_add_collider(ps, &box, &k));
  CHECK_OK(wf_particles_step_frames(ps, 6));
  wf_particles_info i0, i1;
  CHECK_OK(wf_particles_download(ps, NULL, NULL));
  CHECK_OK(wf_particles_info_get(ps, &i0));
  wf_collider_pose pose = {.time = 0.1f, .rotation = {0, 0, 0, 1}, .velocity = {0, 0.25f, 0}};
  CHECK_OK(wf_particles_set_collider_pose(ps, k, &pose));
  CHECK_OK(wf_particles_step_frames(ps, 12)); /* 0.3 s */
  float q[2][4];
  CHECK_OK(wf_particles_download(ps, q, NULL));
  CHECK_NEAR(q[0][1], 0.1, 2e-3);
  CHECK_NEAR(q[1][1], 0.1, 2e-3);
  CHECK_OK(wf_particles_step_frames(ps, 12)); /* 0.5 s */
  wf_collider_pose stop = {.time = 0.5f, .position = {0.0f, 0.1f, 0.0f}, .rotation = {0, 0, 0, 1}};
  CHECK_OK(wf_particles_set_collider_pose(ps, k, &stop));
  CHECK_OK(wf_particles_step_frames(ps, 30)); /* 1 s */
  CHECK_OK(wf_particles_download(ps, q, NULL));
  CHECK_OK(wf_particles_info_get(ps, &i1));
  CHECK_NEAR(q[0][1], 0.15, 2e-3);
  CHECK_NEAR(q[1][1], 0.15, 2e-3);
  CHECK(i0.captures > 0);
  printf("  captures before %llu, after %llu\n", (unsigned long long)i0.captures,
         (unsigned long long)i1.captures);
  CHECK_EQ_INT(i1.captures, i0.captures);
  wf_particles_destroy(ps);
}

/* The cloth's pose API: a small cloth resting on a box mesh (closed, 12 triangles) is carried up
 * 0.1 m by poses set between frames (0.25 m/s for 0.4 s, then stopped), without recapture; its
 * centre vertex ends 0.1 m higher than it rested (tolerance 2 mm: the hop at the stop). */
TEST(cloth_set_pose) {
  wf_cloth_desc d = wf_cloth_desc_default();
  d.devices[0] = th_dev0, d.device_count = 1;
  d.integrator = WF_CLOTH_XPBD;
  wf_cloth_grid g = wf_cloth_grid_default();
  g.size[0] = g.size[1] = 0.3f;
  g.resolution[0] = g.resolution[1] = 5;
  g.center[1] = 0.01f;
  wf_cloth *cl;
  CHECK_OK(wf_cloth_create_grid(&d, &g, &cl));
  const float c[3] = {0.0f, -0.5f, 0.0f}, h[3] = {1.0f, 0.5f, 1.0f};
  tm_mesh b = tm_box(c, h);
  wf_collider_mesh *m = mesh_of("table", &b);
  wf_collider_desc cd = wf_collider_desc_default();
  cd.type = WF_COLLIDER_MESH, cd.mesh = m, cd.friction = 1.0f;
  uint32_t k;
  CHECK_OK(wf_cloth_add_collider(cl, &cd, &k));
  wf_collider_mesh_destroy(m);
  float pos[25][4];
  CHECK_OK(wf_cloth_step_frames(cl, 6)); /* 0.1 s */
  CHECK_OK(wf_cloth_download(cl, pos, NULL));
  float rest = pos[12][1];
  wf_collider_pose up = {.time = 0.1f, .rotation = {0, 0, 0, 1}, .velocity = {0, 0.25f, 0}};
  CHECK_OK(wf_cloth_set_collider_pose(cl, k, &up));
  CHECK_OK(wf_cloth_step_frames(cl, 24)); /* 0.5 s */
  wf_collider_pose stop = {.time = 0.5f, .position = {0, 0.1f, 0}, .rotation = {0, 0, 0, 1}};
  CHECK_OK(wf_cloth_set_collider_pose(cl, k, &stop));
  CHECK_OK(wf_cloth_step_frames(cl, 30)); /* 1 s */
  CHECK_OK(wf_cloth_download(cl, pos, NULL));
  CHECK_NEAR(pos[12][1], rest + 0.1, 2e-3);
  wf_collider_pose bad = stop;
  bad.rotation[3] = NAN;
  CHECK_ERROR(wf_cloth_set_collider_pose(cl, k, &bad), WF_ERR_INVALID, "rotation");
  CHECK_ERROR(wf_cloth_set_collider_pose(cl, 7, &stop), WF_ERR_INVALID, "collider 7");
  wf_cloth_destroy(cl);
}

/* 1 vs 2 partitions with a mesh collider (a sphere of 2048 triangles) and a mesh floor: a column
 * of 300 particles falls onto them; every partition walks its own device's copy of the tree, and
 * the states are bitwise equal. */
TEST(split_bitwise_with_mesh) {
  NEED_TWO_DEVICES();
  static float st[2][1000][4], sv[2][1000][4];
  for (int np = 1; np <= 2; np++) {
    wf_particles_desc d = wf_particles_desc_default();
    d.substeps = 16;
    d.devices[0] = th_dev0, d.devices[1] = th_dev1;
    d.device_count = np;
    wf_particles *ps;
    CHECK_OK(wf_particles_create(&d, &ps));
    wf_particles_emitter e = wf_particles_emitter_default();
    e.center[1] = 1.2f, e.half_extents[0] = 0.25f, e.half_extents[1] = 0.6f;
    e.half_extents[2] = 0.25f, e.radius = 0.04f, e.spacing = 0.1f, e.jitter = 0.005f, e.seed = 3;
    uint32_t n;
    CHECK_OK(wf_particles_emit(ps, &e, NULL, &n));
    REQUIRE(n <= 1000);
    const float c[3] = {0.05f, 0.3f, 0.0f};
    tm_mesh s = tm_sphere(c, 0.3f, 16, 64);
    wf_collider_mesh *m = mesh_of("ball", &s);
    tm_mesh g = tm_grid(2.0f, 0.0f, 4);
    wf_collider_mesh *f = mesh_of("floor", &g);
    wf_collider_desc cd = wf_collider_desc_default();
    cd.type = WF_COLLIDER_MESH, cd.mesh = m;
    CHECK_OK(wf_particles_add_collider(ps, &cd, NULL));
    cd.mesh = f, cd.thickness = 0.02f;
    CHECK_OK(wf_particles_add_collider(ps, &cd, NULL));
    wf_collider_mesh_destroy(m);
    wf_collider_mesh_destroy(f);
    CHECK_OK(wf_particles_step_frames(ps, 40)); /* the column lands on the ball and the floor */
    CHECK_OK(wf_particles_download(ps, st[np - 1], sv[np - 1]));
    wf_particles_destroy(ps);
    if (np == 2) {
      CHECK(memcmp(st[0], st[1], n * sizeof st[0][0]) == 0);
      CHECK(memcmp(sv[0], sv[1], n * sizeof sv[0][0]) == 0);
    }
  }
}

/* The loader's tree and the query at 10^6 triangles (a 708 x 708 sphere): built within 10 s
 * here, the distances within the sagitta of the exact sphere. Slow (WEFT_TEST_SLOW=1); CI runs
 * the same at 20 000 triangles. */
static void big_sphere(uint32_t nlat) {
  const float c[3] = {0.0f, 0.0f, 0.0f}, r = 1.0f;
  tm_mesh s = tm_sphere(c, r, nlat, nlat);
  double t0 = th_now_ms();
  wf_collider_mesh *m;
  CHECK_OK(wf_collider_mesh_create("big", (const float(*)[3])s.v, s.nv, (const uint32_t(*)[3])s.t,
                                   s.nt, &m));
  double t1 = th_now_ms();
  wf_collider_mesh_info inf = wf_collider_mesh_info_get(m);
  double sag = r * (1.0 - cos(PI / nlat) * cos(PI / nlat)), worst = 0.0;
  for (int i = 0; i < 2000; i++) {
    float x[3] = {urand(-1.5f, 1.5f), urand(-1.5f, 1.5f), urand(-1.5f, 1.5f)};
    double want = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) - r;
    worst = fmax(worst, fabs(wf_collider_mesh_distance(m, 0.0f, x, NULL) - want));
  }
  double t2 = th_now_ms();
  printf("  %u triangles: built in %.0f ms (depth %u, %u nodes), 2000 queries in %.1f ms, worst "
         "%.3g m (sagitta %.3g m)\n",
         inf.triangles, t1 - t0, inf.depth, inf.nodes, t2 - t1, worst, sag);
  CHECK_EQ_INT(inf.boundary_edges, 0);
  CHECK(worst <= sag + 2e-6);
  /* and a particle resting on it, through a solver */
  float p[1][4] = {{0.0f, 1.1f, 0.0f, 0.05f}}, v[1][4] = {{0, 0, 0, 2.0f}};
  wf_particles *ps = particles(WF_CONTACT_DEM, 1, p, v);
  REQUIRE(ps);
  wf_collider_desc cd = wf_collider_desc_default();
  cd.type = WF_COLLIDER_MESH, cd.mesh = m;
  CHECK_OK(wf_particles_add_collider(ps, &cd, NULL));
  CHECK_OK(wf_particles_step_frames(ps, 30));
  float q[1][4];
  CHECK_OK(wf_particles_download(ps, q, NULL));
  CHECK_NEAR(q[0][1], 1.05, 1.5e-3);
  wf_particles_destroy(ps);
  wf_collider_mesh_destroy(m);
  tm_free(&s);
}

TEST(mesh_20k_triangles) { big_sphere(100); }

TEST(mesh_1m_triangles) {
  const char *slow = getenv("WEFT_TEST_SLOW");
  if (!slow || strcmp(slow, "1") != 0) SKIP("10^6 triangles: set WEFT_TEST_SLOW=1");
  big_sphere(708);
}

int main(int argc, char **argv) {
  static const th_test tests[] = {TH_TEST(sincos_polynomial),
                                  TH_TEST(mesh_box_distance),
                                  TH_TEST(mesh_sphere_distance),
                                  TH_TEST(mesh_cache_answers_as_the_tree),
                                  TH_TEST(mesh_walk_seed_changes_nothing),
                                  TH_TEST(mesh_bad_input),
                                  TH_TEST(mesh_files),
                                  TH_TEST(particle_rests_on_mesh_plane),
                                  TH_TEST(cloth_on_mesh_sphere),
                                  TH_TEST(no_tunnelling_thin_moving_mesh),
                                  TH_TEST(keyframes_and_drum_closed_form),
                                  TH_TEST(gate_removed_and_keyframed_lift),
                                  TH_TEST(drum_friction),
                                  TH_TEST(set_pose_without_recapture),
                                  TH_TEST(cloth_set_pose),
                                  TH_TEST(split_bitwise_with_mesh),
                                  TH_TEST(mesh_20k_triangles),
                                  TH_TEST(mesh_1m_triangles)};
  return th_main(argc, argv, tests, TH_COUNT(tests));
}
