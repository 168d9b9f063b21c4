/* `weft bench colliders`: what a triangle-mesh collider costs against an analytic shape.
 *
 * 1. Particles: the column of `weft bench particles` (radius 0.1, spacing 0.2, DEM, 64 substeps
 *    at 60 frames/s) falling onto a floor whose top is y = 0, once a box and once a shell mesh of
 *    ~100k triangles (a 224 x 224 grid of two triangles a cell, thickness 2 cm, its top surface at
 *    y = 0: the same contact geometry). Reported: ms/frame of each and the ratio mesh / box (the
 *    target on an H200 at 2M particles is <= 1.25).
 * 2. Cloth: an N x N XPBD cloth (default 256²) dropped from 2 cm above onto a sphere of radius
 *    0.5, once the analytic sphere and once a ~100k-triangle mesh of it (a 224 x 224
 *    latitude-longitude sphere, its pole under the cloth's centre, where 224 sliver triangles
 *    meet: a worst case for the queries), and once a geodesic sphere of 100 820 near-uniform
 *    triangles (an icosahedron's faces cut 71 x 71: the representative mesh), each frame
 *    followed by a readback of the positions into host memory. The cloth touches the sphere from
 * the second frame on and drapes over it during the timed frames, so the mesh queries run where
 * they cost (near the surface), not only the rejection by the mesh's box (the cloth started 10 cm
 * above the sphere until 2026-11-27 and reached it only in the last timed frames). Reported:
 * ms/frame with readback of each (the target for the mesh on an H200 is <= 0.15 ms).
 *
 * Frames are timed on the host (launch to the end of the readback or of the frame), after two
 * warm-up frames; the median of --frames is reported. */
#define _POSIX_C_SOURCE 200809L

#include "collider_bench.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tuning_env.h"
#include "weft/weft.h"

#define MAX_ROWS    32
#define CHECK(call) BENCH_CHECK("colliders", call)

typedef struct cb_opts {
  const char *device, *csv, *machine;
  uint64_t particles;
  int cloth, frames, grid;
  bool quick;
} cb_opts;

static bench_row rows[MAX_ROWS];
static int n_rows;

static void fail_call(const char *what, wf_status st) { bench_fail("colliders", what, st); }

/* An n x n grid of the square [-s, s]² at height y, normals +y. */
static wf_status grid_mesh(int n, float s, float y, wf_collider_mesh **out) {
  uint32_t nv = (uint32_t)(n + 1) * (uint32_t)(n + 1), nt = 2u * (uint32_t)n * (uint32_t)n;
  float(*v)[3] = malloc(nv * sizeof *v);
  uint32_t(*t)[3] = malloc(nt * sizeof *t);
  wf_status st = WF_ERR_OUT_OF_MEMORY;
  if (v && t) {
    for (int j = 0; j <= n; j++)
      for (int i = 0; i <= n; i++) {
        float *p = v[j * (n + 1) + i];
        p[0] = -s + 2.0f * s * (float)i / (float)n, p[1] = y,
        p[2] = -s + 2.0f * s * (float)j / (float)n;
      }
    uint32_t k = 0;
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        uint32_t a = (uint32_t)(j * (n + 1) + i), b = a + 1, c = a + (uint32_t)n + 1, d = c + 1;
        t[k][0] = a, t[k][1] = c, t[k][2] = b, k++;
        t[k][0] = b, t[k][1] = c, t[k][2] = d, k++;
      }
    st = wf_collider_mesh_create("floor", (const float(*)[3])v, nv, (const uint32_t(*)[3])t, nt,
                                 out);
  }
  free(v);
  free(t);
  return st;
}

/* Turns every triangle of a sphere about the origin to face outward (its normal along its
 * centroid). */
static void wind_outward(const float (*v)[3], uint32_t (*t)[3], uint32_t nt) {
  for (uint32_t i = 0; i < nt; i++) {
    const float *a = v[t[i][0]], *b = v[t[i][1]], *c = v[t[i][2]];
    double e1[3], e2[3], g[3];
    for (int q = 0; q < 3; q++)
      e1[q] = b[q] - a[q], e2[q] = c[q] - a[q], g[q] = a[q] + b[q] + c[q];
    double nx = e1[1] * e2[2] - e1[2] * e2[1], ny = e1[2] * e2[0] - e1[0] * e2[2],
           nz = e1[0] * e2[1] - e1[1] * e2[0];
    if (nx * g[0] + ny * g[1] + nz * g[2] < 0.0) {
      uint32_t sw = t[i][1];
      t[i][1] = t[i][2], t[i][2] = sw;
    }
  }
}

/* A geodesic sphere: each face of an icosahedron cut into f x f triangles, every vertex pushed
 * out to the radius r (20 f² triangles, 10 f² + 2 vertices; f = 71: 100 820). Edge vertices are
 * computed from the edge's endpoints in index order, so the faces that share an edge share its
 * vertices' bits, and are merged by those bits: a closed mesh, outward winding, its triangles
 * near uniform (at most 6 a vertex but at the 12 corners' 5), as a modelled or scanned surface. */
static wf_status geodesic_mesh(int f, float r, wf_collider_mesh **out) {
  static const double g = 1.61803398874989484820;
  static const double ico_v[12][3] = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0},
                                      {0, -1, g}, {0, 1, g}, {0, -1, -g}, {0, 1, -g},
                                      {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
  static const int ico_f[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                   {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                   {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                   {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
  const uint32_t per = (uint32_t)((f + 1) * (f + 2) / 2), nt = 20u * (uint32_t)(f * f);
  float(*v)[3] = malloc(20u * per * sizeof *v);
  uint32_t(*t)[3] = malloc(nt * sizeof *t), *id = malloc(20u * per * sizeof *id);
  uint32_t *bnd = malloc(20u * 3u * ((uint32_t)f + 1u) * sizeof *bnd); /* edge vertices so far */
  wf_status st = WF_ERR_OUT_OF_MEMORY;
  if (!v || !t || !id || !bnd) goto done;
  uint32_t nv = 0, k = 0, nb = 0;
  for (int q = 0; q < 20; q++) {
    const int *c = ico_f[q];
    uint32_t base = (uint32_t)q * per;
    for (int i = 0; i <= f; i++) /* row i from corner 0: points c0 + (i - j)/f (c1 - c0) + ... */
      for (int j = 0; j <= i; j++) {
        /* barycentric weights (f - i, i - j, j) / f over c0, c1, c2; on an edge (one weight 0)
         * the point is interpolated from the lower-index corner of that edge */
        int w[3] = {f - i, i - j, j};
        double p[3] = {0, 0, 0};
        int zero = w[0] == 0 ? 0 : w[1] == 0 ? 1 : w[2] == 0 ? 2 : -1;
        if (zero >= 0 && w[(zero + 1) % 3] && w[(zero + 2) % 3]) {
          int a = c[(zero + 1) % 3], b = c[(zero + 2) % 3];
          double wa = w[(zero + 1) % 3], wb = w[(zero + 2) % 3];
          if (a > b) { /* in index order */
            int s2 = a;
            a = b, b = s2;
            double sw = wa;
            wa = wb, wb = sw;
          }
          for (int d = 0; d < 3; d++)
            p[d] = (wa * ico_v[a][d] + wb * ico_v[b][d]) / f;
        } else {
          for (int d = 0; d < 3; d++)
            p[d] = (w[0] * ico_v[c[0]][d] + w[1] * ico_v[c[1]][d] + w[2] * ico_v[c[2]][d]) / f;
        }
        double len = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        float x[3] = {(float)(r * p[0] / len), (float)(r * p[1] / len), (float)(r * p[2] / len)};
        uint32_t m = nv; /* merge with an equal vertex of an earlier face (edges and corners) */
        const bool edge = i == f || j == 0 || j == i;
        for (uint32_t e = 0; edge && e < nb; e++)
          if (!memcmp(v[bnd[e]], x, sizeof x)) {
            m = bnd[e];
            break;
          }
        if (m == nv) {
          memcpy(v[nv++], x, sizeof x);
          if (edge) bnd[nb++] = m;
        }
        id[base + (uint32_t)(i * (i + 1) / 2 + j)] = m;
      }
    for (int i = 0; i < f; i++)
      for (int j = 0; j <= i; j++) {
        uint32_t a = id[base + (uint32_t)(i * (i + 1) / 2 + j)];
        uint32_t b = id[base + (uint32_t)((i + 1) * (i + 2) / 2 + j)];
        uint32_t d = id[base + (uint32_t)((i + 1) * (i + 2) / 2 + j + 1)];
        t[k][0] = a, t[k][1] = b, t[k][2] = d, k++;
        if (j < i) {
          uint32_t e = id[base + (uint32_t)(i * (i + 1) / 2 + j + 1)];
          t[k][0] = a, t[k][1] = d, t[k][2] = e, k++;
        }
      }
  }
  wind_outward(v, t, nt);
  st = wf_collider_mesh_create("geodesic ball", (const float(*)[3])v, nv, (const uint32_t(*)[3])t,
                               nt, out);
done:
  free(v), free(t), free(id), free(bnd);
  return st;
}

/* A latitude-longitude sphere: n rings of n vertices and the poles (on the y axis), outward
 * winding. */
static wf_status sphere_mesh(int n, float r, wf_collider_mesh **out) {
  uint32_t rings = (uint32_t)n - 1, nl = (uint32_t)n;
  uint32_t nv = 2 + rings * nl, nt = 2 * nl * rings;
  float(*v)[3] = malloc(nv * sizeof *v);
  uint32_t(*t)[3] = malloc(nt * sizeof *t);
  wf_status st = WF_ERR_OUT_OF_MEMORY;
  if (v && t) {
    const double pi = 3.14159265358979323846;
    v[0][0] = 0, v[0][1] = r, v[0][2] = 0, v[1][0] = 0, v[1][1] = -r, v[1][2] = 0;
    for (uint32_t i = 0; i < rings; i++)
      for (uint32_t j = 0; j < nl; j++) {
        double th = pi * (i + 1) / nl, ph = 2.0 * pi * j / nl;
        float *p = v[2 + i * nl + j];
        p[0] = (float)(r * sin(th) * cos(ph)), p[1] = (float)(r * cos(th));
        p[2] = (float)(r * sin(th) * sin(ph));
      }
    uint32_t k = 0, last = 2 + (rings - 1) * nl;
    for (uint32_t j = 0; j < nl; j++) {
      uint32_t j1 = (j + 1) % nl;
      t[k][0] = 0, t[k][1] = 2 + j1, t[k][2] = 2 + j, k++;
      t[k][0] = 1, t[k][1] = last + j, t[k][2] = last + j1, k++;
    }
    for (uint32_t i = 0; i + 1 < rings; i++)
      for (uint32_t j = 0; j < nl; j++) {
        uint32_t j1 = (j + 1) % nl;
        uint32_t a = 2 + i * nl + j, b = 2 + i * nl + j1, d = a + nl, e = b + nl;
        t[k][0] = a, t[k][1] = d, t[k][2] = b, k++;
        t[k][0] = b, t[k][1] = d, t[k][2] = e, k++;
      }
    wind_outward(v, t, nt);
    st =
        wf_collider_mesh_create("ball", (const float(*)[3])v, nv, (const uint32_t(*)[3])t, nt, out);
  }
  free(v);
  free(t);
  return st;
}

static wf_status add_column(void *ps, uint32_t n, const float (*p)[4], const float (*v)[4]) {
  wf_status st = wf_particles_add(ps, n, p, v, 0, NULL);
  if (st != WF_OK) fail_call("adding the column", st);
  return st;
}

/* ms/frame of the column on a box floor (mesh NULL) or on the mesh floor. */
static int particles_run(const cb_opts *o, wf_device *dev, const wf_collider_mesh *mesh,
                         double *out_ms) {
  int rc = 1;
  wf_particles *ps = NULL;
  double *ms = calloc((size_t)o->frames, sizeof *ms);
  wf_particles_desc d = wf_particles_desc_default();
  d.name = "column";
  d.capacity = (uint32_t)o->particles;
  d.devices[0] = dev;
  CHECK(wf_particles_create(&d, &ps));
  wf_particle_material m = wf_particle_material_default();
  m.stiffness = 8000.0f, m.damping = 2.0f, m.friction = 1.0f, m.restitution = 0.0f;
  CHECK(wf_particles_set_material(ps, 0, &m));
  float w = 0.2f * (float)cbrt((double)o->particles) + 1.0f; /* beyond the column's footprint */
  wf_collider_desc g = wf_collider_desc_default();
  g.name = "floor";
  g.friction = 1.0f;
  if (mesh) {
    g.type = WF_COLLIDER_MESH, g.mesh = mesh, g.thickness = 0.02f;
  } else {
    g.type = WF_COLLIDER_BOX;
    g.center[1] = -0.5f, g.half_extents[0] = g.half_extents[2] = w, g.half_extents[1] = 0.5f;
  }
  CHECK(wf_particles_add_collider(ps, &g, NULL));
  if (bench_column("colliders", o->particles, add_column, ps) != WF_OK) goto done;
  CHECK(wf_particles_step_frames(ps, 2));
  CHECK(wf_particles_check(ps));
  for (int f = 0; f < o->frames; f++) {
    double t0 = bench_now_s();
    CHECK(wf_particles_step_frames(ps, 1));
    CHECK(wf_stream_synchronize(wf_particles_stream(ps)));
    ms[f] = (bench_now_s() - t0) * 1e3;
  }
  CHECK(wf_particles_check(ps));
  *out_ms = bench_median(ms, o->frames);
  rc = 0;
done:
  wf_particles_destroy(ps);
  free(ms);
  return rc;
}

/* ms/frame with readback of the cloth on the analytic sphere (mesh NULL) or on the mesh. */
static int cloth_run(const cb_opts *o, wf_device *dev, const wf_collider_mesh *mesh,
                     double *out_ms) {
  int rc = 1;
  wf_cloth *cl = NULL;
  double *ms = calloc((size_t)o->frames, sizeof *ms);
  float(*pos)[4] = malloc((size_t)o->cloth * (size_t)o->cloth * sizeof *pos);
  wf_cloth_desc d = wf_cloth_desc_default();
  d.integrator = WF_CLOTH_XPBD;
  d.devices[0] = dev, d.device_count = 1;
  if (bench_cloth_tuning_env("colliders", &d.tuning)) {
    rc = 2;
    goto done;
  }
  wf_cloth_grid gr = wf_cloth_grid_default();
  gr.size[0] = gr.size[1] = 1.5f;
  gr.resolution[0] = gr.resolution[1] = o->cloth;
  gr.center[1] = 0.52f; /* 1.5 cm above the top: in contact from the first frames on */
  CHECK(wf_cloth_create_grid(&d, &gr, &cl));
  wf_collider_desc s = wf_collider_desc_default();
  s.name = "ball";
  if (mesh)
    s.type = WF_COLLIDER_MESH, s.mesh = mesh;
  else
    s.type = WF_COLLIDER_SPHERE, s.radius = 0.5f;
  CHECK(wf_cloth_add_collider(cl, &s, NULL));
  CHECK(wf_cloth_step_frames(cl, 2));
  for (int f = 0; f < o->frames; f++) {
    double t0 = bench_now_s();
    CHECK(wf_cloth_step_frames(cl, 1));
    CHECK(wf_cloth_download(cl, pos, NULL));
    ms[f] = (bench_now_s() - t0) * 1e3;
  }
  *out_ms = bench_median(ms, o->frames);
  rc = 0;
done:
  wf_cloth_destroy(cl);
  free(ms);
  free(pos);
  return rc;
}

void wf_bench_colliders_usage(FILE *f) {
  fputs("usage: weft bench colliders [--device NAME] [--particles N] [--cloth N] [--frames N]\n"
        "                            [--csv FILE] [--machine NAME] [--quick]\n"
        "\n"
        "A ~100k-triangle mesh collider against an analytic shape: the particle column of\n"
        "'weft bench particles' on a box floor and on a mesh floor (ms/frame, ratio), and an\n"
        "N x N XPBD cloth on a sphere and on two mesh spheres, latitude-longitude and geodesic\n"
        "(ms/frame with readback).\n"
        "\n"
        "options:\n"
        "  --device NAME    cpu, cpu:N, cuda, cuda:N (default: cuda:0 if usable, else cpu:0)\n"
        "  --particles N    particles (default 2097152; --quick: 4096)\n"
        "  --cloth N        cloth vertices per side (default 256; --quick: 32)\n"
        "  --frames N       timed frames (default 10; --quick 3)\n"
        "  --csv FILE       append results as machine,date,benchmark,metric,value,unit rows\n"
        "  --machine NAME   machine name for the CSV (default: hostname and device product)\n"
        "  --quick          small and short (for CI; the meshes keep ~100k triangles)\n"
        "  -h, --help       show this help\n",
        f);
}

static int parse_count(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "weft bench colliders: %s '%s': expected an integer in [%llu, %llu]\n", opt, s,
            (unsigned long long)lo, (unsigned long long)hi);
    return 2;
  }
  *out = v;
  return 0;
}

/* The options of this benchmark beyond bench_parse_common's. */
static int option(void *user, const char *opt, const char *val) {
  cb_opts *o = user;
  uint64_t v;
  if (strcmp(opt, "--particles") && strcmp(opt, "--cloth")) return BENCH_OPT_UNKNOWN;
  if (!val) return BENCH_OPT_VALUE;
  if (!strcmp(opt, "--particles"))
    return parse_count(opt, val, 1, 1ull << 30, &o->particles) ? BENCH_OPT_BAD : BENCH_OPT_VALUE;
  if (parse_count(opt, val, 2, 4096, &v)) return BENCH_OPT_BAD;
  o->cloth = (int)v;
  return BENCH_OPT_VALUE;
}

static int parse(int argc, char **argv, cb_opts *o, FILE *out) {
  bench_common c = {0};
  int rc =
      bench_parse_common("colliders", argc, argv, &c, wf_bench_colliders_usage, out, option, o);
  o->device = c.device, o->csv = c.csv, o->machine = c.machine;
  o->frames = c.frames, o->quick = c.quick;
  return rc;
}

int wf_bench_colliders(int argc, char **argv, FILE *out) {
  cb_opts o = {.grid = 224};
  n_rows = 0;
  int rc = parse(argc, argv, &o, out);
  if (rc >= 0) return rc;
  rc = 1;
  if (!o.particles) o.particles = o.quick ? 4096 : 2097152;
  if (!o.cloth) o.cloth = o.quick ? 32 : 256;
  if (!o.frames) o.frames = o.quick ? 3 : 10;
  wf_device *dev = NULL;
  wf_collider_mesh *floor = NULL, *ball = NULL, *geo = NULL;
  if (bench_start("colliders", o.device, &dev)) return 1;
  char machine[512];
  if (o.machine)
    snprintf(machine, sizeof machine, "%s", o.machine);
  else
    bench_machine_name(dev, machine, sizeof machine);
  double t0 = bench_now_s();
  float w = 0.2f * (float)cbrt((double)o.particles) + 1.0f;
  CHECK(grid_mesh(o.grid, w, -0.01f, &floor));
  CHECK(sphere_mesh(o.grid, 0.5f, &ball));
  double build_ms = (bench_now_s() - t0) * 1e3 / 2.0;
  CHECK(geodesic_mesh(71, 0.5f, &geo));
  wf_collider_mesh_info fi = wf_collider_mesh_info_get(floor), si = wf_collider_mesh_info_get(ball);
  wf_collider_mesh_info gi = wf_collider_mesh_info_get(geo);
  fprintf(out, "weft %s bench colliders on %s\n", WF_VERSION_STRING, wf_device_name(dev));
  fprintf(out,
          "meshes: floor %u triangles, ball %u triangles, %.0f ms to build each (host); geodesic "
          "ball %u triangles (tree depth %u; latitude-longitude ball %u)\n\n",
          fi.triangles, si.triangles, build_ms, gi.triangles, gi.depth, si.depth);
  double box_ms = 0, mesh_ms = 0, sph_ms = 0, msph_ms = 0, geo_ms = 0;
  if (particles_run(&o, dev, NULL, &box_ms) || particles_run(&o, dev, floor, &mesh_ms)) goto done;
  fprintf(out,
          "particles %llu, DEM, 64 substeps: box floor %.3f ms/frame, mesh floor %.3f "
          "ms/frame, mesh / box %.3f (target on an H200 at 2M: <= 1.25)\n",
          (unsigned long long)o.particles, box_ms, mesh_ms, mesh_ms / box_ms);
  if (cloth_run(&o, dev, NULL, &sph_ms) || cloth_run(&o, dev, ball, &msph_ms) ||
      cloth_run(&o, dev, geo, &geo_ms))
    goto done;
  fprintf(out,
          "cloth %d^2, XPBD, with readback: sphere %.3f ms/frame; mesh spheres of ~100k "
          "triangles: latitude-longitude (its pole's %d-triangle fan under the cloth) %.3f "
          "ms/frame, geodesic %.3f ms/frame (target on an H200 at 256^2: <= 0.15)\n",
          o.cloth, sph_ms, o.grid, msph_ms, geo_ms);
  char metric[64];
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", "mesh_build_100k_ms", build_ms, "ms");
  snprintf(metric, sizeof metric, "dem_n%llu_box_ms_per_frame", (unsigned long long)o.particles);
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", metric, box_ms, "ms");
  snprintf(metric, sizeof metric, "dem_n%llu_mesh_ms_per_frame", (unsigned long long)o.particles);
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", metric, mesh_ms, "ms");
  snprintf(metric, sizeof metric, "dem_n%llu_mesh_over_box", (unsigned long long)o.particles);
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", metric, mesh_ms / box_ms, "1");
  snprintf(metric, sizeof metric, "cloth%d_sphere_ms_per_frame", o.cloth);
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", metric, sph_ms, "ms");
  snprintf(metric, sizeof metric, "cloth%d_mesh_ms_per_frame", o.cloth);
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", metric, msph_ms, "ms");
  snprintf(metric, sizeof metric, "cloth%d_geodesic_ms_per_frame", o.cloth);
  bench_row_add(rows, &n_rows, MAX_ROWS, "colliders", metric, geo_ms, "ms");
  if (o.csv && bench_csv_append(o.csv, machine, rows, n_rows, out)) goto done;
  rc = 0;
done:
  wf_collider_mesh_destroy(floor);
  wf_collider_mesh_destroy(ball);
  wf_collider_mesh_destroy(geo);
  fflush(out);
  wf_shutdown();
  return rc;
}
