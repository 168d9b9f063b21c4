/* Strain and contact force for the pictures' colours (render_values.h). */
#include "render_values.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct obj_info {
  wf_world_object o;
  float *rest;     /* cloth: 3 rest lengths a triangle */
  double k, young; /* particles: the emitter material's stiffness (N/m) and E* part */
  double poisson;
} obj_info;

struct wf_cli_values {
  int n;
  obj_info *obj;
  bool hertz;
  double force_scale;
  /* the grid, reused between frames */
  uint32_t *head, *next, *owner; /* bucket heads, chain, object of each particle */
  uint32_t *index;               /* index within its object */
  const float **p;               /* each particle's xyzr */
  size_t cap, buckets;
};

static double dist3(const float *a, const float *b) {
  double d[3] = {(double)a[0] - b[0], (double)a[1] - b[1], (double)a[2] - b[2]};
  return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
}

wf_status wf_cli_values_create(const wf_scene *sc, wf_world *w, const float (*const *pos)[4],
                               wf_cli_values **out) {
  *out = NULL;
  wf_cli_values *v = calloc(1, sizeof *v);
  if (!v) return WF_ERR_OUT_OF_MEMORY;
  v->n = wf_world_object_count(w);
  v->obj = calloc((size_t)v->n + 1, sizeof *v->obj);
  v->hertz = sc->simulation.contact_model == WF_SCENE_CONTACT_HERTZ;
  if (!v->obj) {
    wf_cli_values_destroy(v);
    return WF_ERR_OUT_OF_MEMORY;
  }
  double heaviest = 0.0;
  int emitter = 0;
  for (int i = 0; i < v->n; i++) {
    obj_info *oi = &v->obj[i];
    wf_world_object_get(w, i, &oi->o);
    if (oi->o.kind == WF_WORLD_CLOTH) {
      oi->rest = malloc((size_t)oi->o.triangle_count * 3 * sizeof(float) + 4);
      if (!oi->rest) {
        wf_cli_values_destroy(v);
        return WF_ERR_OUT_OF_MEMORY;
      }
      for (uint32_t t = 0; t < oi->o.triangle_count; t++)
        for (int e = 0; e < 3; e++) {
          uint32_t a = oi->o.triangles[3 * t + e], b = oi->o.triangles[3 * t + (e + 1) % 3];
          oi->rest[3 * t + e] = (float)dist3(pos[i][a], pos[i][b]);
        }
      continue;
    }
    const wf_scene_material *m = NULL;
    if (emitter < sc->emitter_count && (int)sc->emitters[emitter].material < sc->material_count)
      m = &sc->materials[sc->emitters[emitter].material];
    emitter++;
    oi->k = m ? m->stiffness : 1e4;
    oi->young = m ? m->young : 5e7;
    oi->poisson = m ? m->poisson : 0.25;
    /* the heaviest particle: inverse mass in vel.w, not in the positions: use the radius and
       the emitter's mass through a download of one velocity */
    float(*vel)[4] = malloc((size_t)oi->o.point_count * 16 + 16);
    if (vel && wf_world_object_download(w, i, NULL, vel) == WF_OK)
      for (uint32_t j = 0; j < oi->o.point_count; j++)
        if (vel[j][3] > 0.0f) heaviest = fmax(heaviest, 1.0 / vel[j][3]);
    free(vel);
  }
  double g = sqrt(sc->simulation.gravity[0] * sc->simulation.gravity[0] +
                  sc->simulation.gravity[1] * sc->simulation.gravity[1] +
                  sc->simulation.gravity[2] * sc->simulation.gravity[2]);
  v->force_scale = heaviest > 0.0 && g > 0.0 ? 10.0 * heaviest * g : 1.0;
  *out = v;
  return WF_OK;
}

void wf_cli_values_destroy(wf_cli_values *v) {
  if (!v) return;
  for (int i = 0; v->obj && i < v->n; i++)
    free(v->obj[i].rest);
  free(v->obj), free(v->head), free(v->next), free(v->owner), free(v->index), free(v->p);
  free(v);
}

double wf_cli_values_force_scale(const wf_cli_values *v) { return v ? v->force_scale : 1.0; }

void wf_cli_values_strain(const wf_cli_values *v, int i, const float (*pos)[4], float *out) {
  const obj_info *oi = &v->obj[i];
  memset(out, 0, (size_t)oi->o.point_count * sizeof *out);
  for (uint32_t t = 0; t < oi->o.triangle_count; t++)
    for (int e = 0; e < 3; e++) {
      uint32_t a = oi->o.triangles[3 * t + e], b = oi->o.triangles[3 * t + (e + 1) % 3];
      float L = oi->rest[3 * t + e];
      if (!(L > 0.0f)) continue;
      float s = (float)fabs(dist3(pos[a], pos[b]) - L) / L;
      if (s > out[a]) out[a] = s;
      if (s > out[b]) out[b] = s;
    }
}

/* The normal force of an overlap delta between particles of stiffness ka, kb (linear) or of
 * radii ra, rb and materials a, b (Hertz). */
static double pair_force(const wf_cli_values *v, const obj_info *a, const obj_info *b, double ra,
                         double rb, double delta) {
  if (!v->hertz) return 0.5 * (a->k + b->k) * delta;
  double es = rb > 0.0 ? 1.0 / ((1.0 - a->poisson * a->poisson) / a->young +
                                (1.0 - b->poisson * b->poisson) / b->young)
                       : a->young / (1.0 - a->poisson * a->poisson); /* a rigid plane */
  double rs = rb > 0.0 ? ra * rb / (ra + rb) : ra; /* a plane: R* = the particle's radius */
  return 4.0 / 3.0 * es * sqrt(rs) * pow(delta, 1.5);
}

static uint64_t cell_hash(int64_t x, int64_t y, int64_t z) {
  return ((uint64_t)x * 73856093u) ^ ((uint64_t)y * 19349663u) ^ ((uint64_t)z * 83492791u);
}

wf_status wf_cli_values_force(wf_cli_values *v, const float (*const *pos)[4], const float *planes,
                              int plane_count, float *const *out) {
  size_t n = 0;
  float rmax = 0.0f;
  for (int i = 0; i < v->n; i++)
    if (v->obj[i].o.kind == WF_WORLD_PARTICLES) {
      n += v->obj[i].o.point_count;
      for (uint32_t j = 0; j < v->obj[i].o.point_count; j++)
        rmax = fmaxf(rmax, pos[i][j][3]);
    }
  if (n == 0) return WF_OK;
  if (n > v->cap) {
    size_t b = 1;
    while (b < 2 * n)
      b <<= 1;
    uint32_t *head = malloc(b * sizeof *head), *next = malloc(n * sizeof *next);
    uint32_t *owner = malloc(n * sizeof *owner), *index = malloc(n * sizeof *index);
    const float **p = malloc(n * sizeof *p);
    if (!head || !next || !owner || !index || !p) {
      free(head), free(next), free(owner), free(index), free(p);
      return WF_ERR_OUT_OF_MEMORY;
    }
    free(v->head), free(v->next), free(v->owner), free(v->index), free(v->p);
    v->head = head, v->next = next, v->owner = owner, v->index = index, v->p = p;
    v->cap = n, v->buckets = b;
  }
  double cell = 2.0 * (rmax > 0.0f ? rmax : 1.0f);
  memset(v->head, 0xff, v->buckets * sizeof *v->head);
  size_t k = 0;
  for (int i = 0; i < v->n; i++) {
    if (v->obj[i].o.kind != WF_WORLD_PARTICLES) continue;
    for (uint32_t j = 0; j < v->obj[i].o.point_count; j++, k++) {
      const float *q = pos[i][j];
      v->p[k] = q, v->owner[k] = (uint32_t)i, v->index[k] = j;
      uint64_t h = cell_hash((int64_t)floor(q[0] / cell), (int64_t)floor(q[1] / cell),
                             (int64_t)floor(q[2] / cell)) &
                   (v->buckets - 1);
      v->next[k] = v->head[h];
      v->head[h] = (uint32_t)k;
    }
  }
  for (size_t a = 0; a < n; a++) {
    const float *q = v->p[a];
    const obj_info *oa = &v->obj[v->owner[a]];
    double f = 0.0;
    int64_t c[3] = {(int64_t)floor(q[0] / cell), (int64_t)floor(q[1] / cell),
                    (int64_t)floor(q[2] / cell)};
    for (int dx = -1; dx <= 1; dx++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dz = -1; dz <= 1; dz++) {
          uint64_t h = cell_hash(c[0] + dx, c[1] + dy, c[2] + dz) & (v->buckets - 1);
          for (uint32_t b = v->head[h]; b != UINT32_MAX; b = v->next[b]) {
            if (b == a) continue;
            const float *s = v->p[b];
            /* only the cell asked for: another cell hashed to the same bucket is skipped */
            if ((int64_t)floor(s[0] / cell) != c[0] + dx ||
                (int64_t)floor(s[1] / cell) != c[1] + dy ||
                (int64_t)floor(s[2] / cell) != c[2] + dz)
              continue;
            double delta = (double)q[3] + s[3] - dist3(q, s);
            if (delta > 0.0) f += pair_force(v, oa, &v->obj[v->owner[b]], q[3], s[3], delta);
          }
        }
    for (int pl = 0; pl < plane_count; pl++) {
      const float *P = planes + 4 * pl;
      double delta =
          (double)q[3] - ((double)P[0] * q[0] + (double)P[1] * q[1] + (double)P[2] * q[2] - P[3]);
      if (delta > 0.0) f += pair_force(v, oa, oa, q[3], 0.0, delta);
    }
    out[v->owner[a]][v->index[a]] = (float)f;
  }
  return WF_OK;
}
