/* Triangle meshes the collider tests and the benchmark generate: a box, a square grid in a plane
 * and a latitude-longitude sphere, each as vertices and triangles (outward counter-clockwise for
 * the closed ones). Free with tm_free. */
#ifndef WEFT_COLLIDER_TESTS_MESHES_H
#define WEFT_COLLIDER_TESTS_MESHES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct tm_mesh {
  float (*v)[3];
  uint32_t (*t)[3];
  uint32_t nv, nt;
} tm_mesh;

static inline void tm_free(tm_mesh *m) {
  free(m->v);
  free(m->t);
  m->v = NULL, m->t = NULL;
}

/* Turns every triangle to face away from centre c (meshes that are star-shaped about c). */
static inline void tm_orient(tm_mesh *m, const float c[3]) {
  for (uint32_t i = 0; i < m->nt; i++) {
    const float *a = m->v[m->t[i][0]], *b = m->v[m->t[i][1]], *d = m->v[m->t[i][2]];
    double e1[3], e2[3], g[3];
    for (int k = 0; k < 3; k++)
      e1[k] = b[k] - a[k], e2[k] = d[k] - a[k], g[k] = (a[k] + b[k] + d[k]) / 3.0 - c[k];
    double n[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                   e1[0] * e2[1] - e1[1] * e2[0]};
    if (n[0] * g[0] + n[1] * g[1] + n[2] * g[2] < 0.0) {
      uint32_t s = m->t[i][1];
      m->t[i][1] = m->t[i][2], m->t[i][2] = s;
    }
  }
}

/* The box centre c, half extents h: 8 vertices, 12 triangles, closed. */
static inline tm_mesh tm_box(const float c[3], const float h[3]) {
  tm_mesh m = {malloc(8 * sizeof *m.v), malloc(12 * sizeof *m.t), 8, 12};
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 3; k++)
      m.v[i][k] = c[k] + ((i >> k) & 1 ? h[k] : -h[k]);
  static const uint32_t f[12][3] = {{0, 1, 3}, {0, 3, 2}, {4, 5, 7}, {4, 7, 6},
                                    {0, 1, 5}, {0, 5, 4}, {2, 3, 7}, {2, 7, 6},
                                    {0, 2, 6}, {0, 6, 4}, {1, 3, 7}, {1, 7, 5}};
  for (int i = 0; i < 12; i++)
    for (int k = 0; k < 3; k++)
      m.t[i][k] = f[i][k];
  tm_orient(&m, c);
  return m;
}

/* The square [-s, s]² of the plane y = y0, n x n cells of two triangles, normals +y. Open. */
static inline tm_mesh tm_grid(float s, float y0, uint32_t n) {
  tm_mesh m = {malloc((size_t)(n + 1) * (n + 1) * sizeof *m.v),
               malloc((size_t)2 * n * n * sizeof *m.t), (n + 1) * (n + 1), 2 * n * n};
  for (uint32_t j = 0; j <= n; j++)
    for (uint32_t i = 0; i <= n; i++) {
      float *p = m.v[j * (n + 1) + i];
      p[0] = -s + 2.0f * s * (float)i / (float)n, p[1] = y0,
      p[2] = -s + 2.0f * s * (float)j / (float)n;
    }
  for (uint32_t j = 0, k = 0; j < n; j++)
    for (uint32_t i = 0; i < n; i++) {
      uint32_t a = j * (n + 1) + i, b = a + 1, c = a + n + 1, d = c + 1;
      /* (c - a) x (b - a) = +y for z along j and x along i */
      m.t[k][0] = a, m.t[k][1] = c, m.t[k][2] = b, k++;
      m.t[k][0] = b, m.t[k][1] = c, m.t[k][2] = d, k++;
    }
  return m;
}

/* The sphere centre c, radius r: nlat rings of nlon vertices and the two poles, closed;
 * 2 nlon (nlat - 1) + ... = 2 nlon nlat triangles. Vertices lie on the sphere: the mesh is
 * inside it, at most r (1 - cos(pi / (2 nlat)) cos(pi / nlon)) below it. */
static inline tm_mesh tm_sphere(const float c[3], float r, uint32_t nlat, uint32_t nlon) {
  uint32_t rings = nlat - 1; /* rings between the poles */
  tm_mesh m;
  m.nv = 2 + rings * nlon;
  m.nt = 2 * nlon + 2 * nlon * (rings - 1);
  m.v = malloc((size_t)m.nv * sizeof *m.v);
  m.t = malloc((size_t)m.nt * sizeof *m.t);
  const double pi = 3.14159265358979323846;
  m.v[0][0] = c[0], m.v[0][1] = c[1] + r, m.v[0][2] = c[2];
  m.v[1][0] = c[0], m.v[1][1] = c[1] - r, m.v[1][2] = c[2];
  for (uint32_t i = 0; i < rings; i++)
    for (uint32_t j = 0; j < nlon; j++) {
      double th = pi * (i + 1) / nlat, ph = 2.0 * pi * j / nlon;
      float *p = m.v[2 + i * nlon + j];
      p[0] = c[0] + (float)(r * sin(th) * cos(ph));
      p[1] = c[1] + (float)(r * cos(th));
      p[2] = c[2] + (float)(r * sin(th) * sin(ph));
    }
  uint32_t k = 0;
  for (uint32_t j = 0; j < nlon; j++) {
    uint32_t j1 = (j + 1) % nlon;
    m.t[k][0] = 0, m.t[k][1] = 2 + j, m.t[k][2] = 2 + j1, k++;
    uint32_t b = 2 + (rings - 1) * nlon;
    m.t[k][0] = 1, m.t[k][1] = b + j, m.t[k][2] = b + j1, k++;
  }
  for (uint32_t i = 0; i + 1 < rings; i++)
    for (uint32_t j = 0; j < nlon; j++) {
      uint32_t j1 = (j + 1) % nlon;
      uint32_t a = 2 + i * nlon + j, b = 2 + i * nlon + j1, d = a + nlon, e = b + nlon;
      m.t[k][0] = a, m.t[k][1] = b, m.t[k][2] = d, k++;
      m.t[k][0] = b, m.t[k][1] = e, m.t[k][2] = d, k++;
    }
  tm_orient(&m, c);
  return m;
}

#endif
