/* The cloth solver's kernels (wf_kernel objects) and their CUDA launch wrappers. The math is in
 * cloth_math.h; the CPU loops are in cloth_kernels.c, the CUDA side in cloth_kernels.cu. */
#ifndef WEFT_CLOTH_KERNELS_H
#define WEFT_CLOTH_KERNELS_H

#include "cloth_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const wf_kernel wfc_spring_step;  /* n = vertices: one mass-spring substep, half in -> out */
extern const wf_kernel wfc_xpbd_predict; /* n = vertices: predicted positions */
extern const wf_kernel wfc_xpbd_solve;   /* n = constraints of one colour */
extern const wf_kernel wfc_xpbd_finalize;    /* n = vertices: colliders, velocities, positions */
extern const wf_kernel wfc_grid_q;           /* n = vertices: springs' end-of-substep guess */
extern const wf_kernel wfc_grid_keys;        /* n = vertices: cell keys of the grid points */
extern const wf_kernel wfc_self_collide;     /* n = vertices: self-collision corrections */
extern const wf_kernel wfc_couple_cloth;     /* n = vertices: corrections from particles */
extern const wf_kernel wfc_couple_particles; /* n = particles: impulses from the cloth */
extern const wf_kernel wfc_apply;            /* n = vertices: apply the corrections */
extern const wf_kernel wfc_halo_pack;        /* n = ghosts: gathers owned vertices to send */
extern const wf_kernel wfc_halo_unpack;      /* n = ghosts: scatters received ones into ghosts */
extern const wf_kernel wfc_pack_xyz;         /* n = vertices: positions as packed xyz */
/* n = vertices of a range [begin, begin + n) (halo.c's overlap): the kernels above, on a range */
extern const wf_kernel wfc_spring_range;
extern const wf_kernel wfc_xpbd_predict_range;
extern const wf_kernel wfc_xpbd_finalize_range;

#ifdef WEFT_HAVE_CUDA
void wfc_spring_step_cuda(const void *args, size_t n, void *stream);
void wfc_xpbd_predict_cuda(const void *args, size_t n, void *stream);
void wfc_xpbd_solve_cuda(const void *args, size_t n, void *stream);
void wfc_xpbd_finalize_cuda(const void *args, size_t n, void *stream);
void wfc_grid_q_cuda(const void *args, size_t n, void *stream);
void wfc_grid_keys_cuda(const void *args, size_t n, void *stream);
void wfc_self_collide_cuda(const void *args, size_t n, void *stream);
void wfc_couple_cloth_cuda(const void *args, size_t n, void *stream);
void wfc_couple_particles_cuda(const void *args, size_t n, void *stream);
void wfc_apply_cuda(const void *args, size_t n, void *stream);
void wfc_halo_pack_cuda(const void *args, size_t n, void *stream);
void wfc_halo_unpack_cuda(const void *args, size_t n, void *stream);
void wfc_pack_xyz_cuda(const void *args, size_t n, void *stream);
void wfc_spring_range_cuda(const void *args, size_t n, void *stream);
void wfc_xpbd_predict_range_cuda(const void *args, size_t n, void *stream);
void wfc_xpbd_finalize_range_cuda(const void *args, size_t n, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
