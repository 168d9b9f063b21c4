/* The mass-spring integrator's fast path: a whole frame of substeps in one launch, and grid
 * cloths without an adjacency list.
 *
 * One launch per frame. `wfc_spring_frame` runs `substeps` substeps starting from half 0
 * (half 0 -> 1 -> 0 ...), every vertex of a substep before any vertex of the next one: on CUDA
 * devices a cooperative launch whose blocks are all resident and meet at a grid-wide barrier
 * between substeps; on the CPU backend a loop over substeps around the loop over vertices. The
 * per-vertex math is exactly that of `wfc_spring_step`, so a frame gives bitwise the state of
 * `substeps` separate launches. It replaces 16 kernel nodes (and their launch gaps) by one, which
 * is what small cloths pay for.
 *
 * Grid cloths. A grid's springs follow from the vertex's row and column: stretch to the 4
 * neighbours, shear to the 4 diagonals, bend to the vertices two apart. The CSR adjacency
 * (8 B per incident spring, ~100 B a vertex every substep) is replaced by six rest lengths per
 * vertex for the springs it starts (+x, +y, the diagonal (a, a+nu+1), the diagonal (a+1, a+nu),
 * +2x, +2y), 24 B. `wfc_grid_spring_elem` visits a vertex's springs in exactly the order of its
 * CSR list (the order cloth_mesh.c lists the springs: by starting vertex, then in the order
 * above) with the same rest lengths (copied from that list), so it too is bitwise equal to
 * `wfc_spring_elem`.
 */
#ifndef WEFT_CLOTH_FAST_H
#define WEFT_CLOTH_FAST_H

#include "cloth_math.h"
#include "cloth_mesh.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rest lengths a grid vertex stores (for the springs it starts). */
enum {
  WFC_R_X = 0,      /* stretch (a, a+1) */
  WFC_R_Y = 1,      /* stretch (a, a+nu) */
  WFC_R_DIAG = 2,   /* shear (a, a+nu+1) */
  WFC_R_ANTI = 3,   /* shear (a+1, a+nu) */
  WFC_R_BEND_X = 4, /* bend (a, a+2) */
  WFC_R_BEND_Y = 5, /* bend (a, a+2nu) */
  WFC_R_COUNT = 6
};

typedef struct wfc_frame_args {
  wfc_spring_args half[2]; /* [0]: half 0 -> 1, [1]: half 1 -> 0 */
  const float *rest6;      /* grid: WFC_R_COUNT per vertex; NULL: the CSR adjacency */
  uint32_t nu, nr;         /* grid columns and rows */
  uint32_t substeps;
} wfc_frame_args;

/* Spring force on the vertex at x (velocity v) from vertex j, added to f (wfc_spring_elem's). */
WF_HD static inline void wfc_link_force(const wfc_params *p, const wfp_f4 *pos, const wfp_f4 *vel,
                                        wfc_v3 x, wfc_v3 v, uint32_t j, uint32_t kind, float rest,
                                        wfc_v3 *f) {
  wfc_v3 d = wfc_sub(wfc_xyz(pos[j]), x);
  float len = wfc_len(d);
  if (!(len > 0.0f)) return;
  wfc_v3 dir = wfc_scale(d, 1.0f / len);
  float rel = wfc_dot(wfc_sub(wfc_xyz(vel[j]), v), dir);
  float fs = p->spring_k[kind] * (len - rest) + p->spring_c * rel;
  *f = wfc_add(*f, wfc_scale(dir, fs));
}

/* wfc_spring_elem for vertex i = row * nu + col of a grid cloth. */
WF_HD static inline uint32_t wfc_grid_spring_elem(const wfc_spring_args *a, const float *r,
                                                  uint32_t nu, uint32_t nr, uint32_t i) {
  const wfc_params *p = a->params;
  wfp_f4 x4 = a->pos_in[i], v4 = a->vel_in[i];
  wfc_v3 x = wfc_xyz(x4), v = wfc_xyz(v4);
  float w = x4.w, dt = p->dt;
  float t_end = (float)(a->clock_in->time + (double)dt);
  if (i == 0) {
    wfc_clock c = *a->clock_in;
    c.time += (double)dt;
    c.substeps++;
    *a->clock_out = c;
  }
  if (w > 0.0f) {
    wfc_v3 f = wfc_v(0.0f, 0.0f, 0.0f);
    uint32_t col = i % nu, row = i / nu;
    const wfp_f4 *P = a->pos_in, *V = a->vel_in;
    const int S = WFC_STRETCH, H = WFC_SHEAR, B = WFC_BEND;
    /* springs started by earlier vertices, then by this one (the CSR order) */
    if (row >= 2) wfc_link_force(p, P, V, x, v, i - 2 * nu, B, r[(i - 2 * nu) * 6 + 5], &f);
    if (row >= 1 && col >= 1)
      wfc_link_force(p, P, V, x, v, i - nu - 1, H, r[(i - nu - 1) * 6 + 2], &f);
    if (row >= 1) {
      wfc_link_force(p, P, V, x, v, i - nu, S, r[(i - nu) * 6 + 1], &f);
      if (col + 1 < nu) wfc_link_force(p, P, V, x, v, i - nu + 1, H, r[(i - nu) * 6 + 3], &f);
    }
    if (col >= 2) wfc_link_force(p, P, V, x, v, i - 2, B, r[(i - 2) * 6 + 4], &f);
    if (col >= 1) {
      wfc_link_force(p, P, V, x, v, i - 1, S, r[(i - 1) * 6 + 0], &f);
      if (row + 1 < nr) wfc_link_force(p, P, V, x, v, i + nu - 1, H, r[(i - 1) * 6 + 3], &f);
    }
    if (col + 1 < nu) wfc_link_force(p, P, V, x, v, i + 1, S, r[i * 6 + 0], &f);
    if (row + 1 < nr) wfc_link_force(p, P, V, x, v, i + nu, S, r[i * 6 + 1], &f);
    if (col + 1 < nu && row + 1 < nr)
      wfc_link_force(p, P, V, x, v, i + nu + 1, H, r[i * 6 + 2], &f);
    if (col + 2 < nu) wfc_link_force(p, P, V, x, v, i + 2, B, r[i * 6 + 4], &f);
    if (row + 2 < nr) wfc_link_force(p, P, V, x, v, i + 2 * nu, B, r[i * 6 + 5], &f);
    if (p->aero) f = wfc_add(f, wfc_aero(p, &a->mesh, a->pos_in, a->vel_in, i));
    wfc_v3 acc = wfc_add(wfc_xyz(p->gravity), wfc_scale(f, w));
    v = wfc_scale(wfc_add(v, wfc_scale(acc, dt)), p->damp);
    x = wfc_add(x, wfc_scale(v, dt));
    wfc_collide(p, a->colliders, t_end, &x, &v);
  } else {
    x = wfc_add(x, wfc_scale(v, dt)); /* pinned: moves with its (attachment's) velocity */
  }
  wfp_f4 xo = {x.x, x.y, x.z, w}, vo = {v.x, v.y, v.z, 0.0f};
  a->pos_out[i] = xo;
  a->vel_out[i] = vo;
  return wfc_finite3(x) && wfc_finite3(v) ? 0u : WFC_FLAG_NONFINITE;
}

/* One vertex of one substep on whichever path the frame uses. */
WF_HD static inline uint32_t wfc_frame_elem(const wfc_frame_args *a, uint32_t s, uint32_t i) {
  const wfc_spring_args *h = &a->half[s & 1u];
  return a->rest6 ? wfc_grid_spring_elem(h, a->rest6, a->nu, a->nr, i) : wfc_spring_elem(h, i);
}

/* n = vertices: args->substeps mass-spring substeps from half 0 (see above). */
extern const wf_kernel wfc_spring_frame;

/* The grid rest table (WFC_R_COUNT floats per vertex, 0 where a spring does not exist) from a
 * grid topology's CSR springs; malloc'd into *out. WF_ERR_INVALID when t is not a grid or the
 * springs are not the grid's (then use the CSR path). */
wf_status wfc_grid_rest_build(const wfc_topology *t, const wfc_springs *sp, float **out);

#ifdef WEFT_HAVE_CUDA
void wfc_spring_frame_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
