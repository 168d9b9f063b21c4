/* A cloth mesh of several pieces (flat grids), as the contact tests build them: one wf_cloth of
 * several pieces is how separate sheets collide, and a strip folds onto itself as one piece.
 * The including test defines the capacities first (enum constants or macros MAXV and MAXT), so
 * each keeps its arrays as small as its scenes need. */
#ifndef WEFT_CLOTH_TEST_PIECES_H
#define WEFT_CLOTH_TEST_PIECES_H

#include <stdint.h>

#include "weft/cloth.h"

typedef struct mesh {
  float v[MAXV][3];
  uint32_t t[MAXT][3];
  uint32_t nv, nt;
} mesh;

/* Adds an nu x nw grid of spacing h centred at c in the plane spanned by u and w (its vertex
 * (i, j) is the piece's j * nu + i), two triangles a quad, wound alike. */
static inline void add_grid(mesh *m, int nu, int nw, float h, const float c[3], const float u[3],
                            const float w[3]) {
  uint32_t base = m->nv;
  for (int j = 0; j < nw; j++)
    for (int i = 0; i < nu; i++) {
      float a = ((float)i - 0.5f * (float)(nu - 1)) * h,
            b = ((float)j - 0.5f * (float)(nw - 1)) * h;
      for (int k = 0; k < 3; k++)
        m->v[m->nv][k] = c[k] + a * u[k] + b * w[k];
      m->nv++;
    }
  for (int j = 0; j + 1 < nw; j++)
    for (int i = 0; i + 1 < nu; i++) {
      uint32_t a = base + (uint32_t)(j * nu + i), b = a + 1, cc = a + (uint32_t)nu, d = cc + 1;
      m->t[m->nt][0] = a, m->t[m->nt][1] = cc, m->t[m->nt][2] = b, m->nt++;
      m->t[m->nt][0] = b, m->t[m->nt][1] = cc, m->t[m->nt][2] = d, m->nt++;
    }
}

/* The contact tests' cloth: a light cotton (0.15 kg/m², 5 mm thick), stiff enough for a
 * mass-spring substep of 1/60/32 s. */
static inline void pieces_cotton(wf_cloth_material *m) {
  m->density = 0.15f;
  m->thickness = 0.005f;
  m->stretch_modulus = 30.0f;
  m->shear_modulus = 10.0f;
  m->bend_rigidity = 1e-5f;
}

/* A cloth of m's pieces. */
static inline wf_status pieces_create(const wf_cloth_desc *d, const mesh *m, wf_cloth **c) {
  wf_cloth_mesh_desc md = wf_cloth_mesh_desc_default();
  md.vertices = (const float(*)[3])m->v;
  md.vertex_count = m->nv;
  md.triangles = (const uint32_t(*)[3])m->t;
  md.triangle_count = m->nt;
  return wf_cloth_create_mesh(d, &md, c);
}

#endif
