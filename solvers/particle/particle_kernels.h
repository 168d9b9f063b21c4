/* The particle solver's kernels (wf_kernel objects) and their CUDA launch wrappers. The math is in
 * particle_math.h; the CPU loops are in particle_kernels.c, the CUDA side in particle_kernels.cu
 * (the one-launch frame, wfp_frame, in particle_frame.cu; their shared device helpers in
 * particle_device.cuh). */
#ifndef WEFT_PARTICLE_KERNELS_H
#define WEFT_PARTICLE_KERNELS_H

#include "particle_math.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const wf_kernel wfp_keys;    /* n = count: cell keys, identity values or cell counts */
extern const wf_kernel wfp_sort;    /* n = 1: stable sort of (key, local index) pairs by key */
extern const wf_kernel wfp_cells;   /* n = count: cell start table (after a WFP_EMPTY memset) */
extern const wf_kernel wfp_scan;    /* n = 1: exclusive sum (the counting sort's start table) */
extern const wf_kernel wfp_scatter; /* n = count: particles to their cells; the clock advances */
extern const wf_kernel
    wfp_place; /* n = count: cells in local-index order; sorted copies; counts 0 */
extern const wf_kernel wfp_contacts_dem;  /* n = count: DEM contacts, colliders, integration */
extern const wf_kernel wfp_contacts_xpbd; /* n = count: the same with XPBD contacts */
extern const wf_kernel wfp_frame_begin;   /* n = 1: resets the frame's extent */
extern const wf_kernel wfp_frame; /* n = 1: a frame's substeps in one launch (wfp_frame_run_args) */
extern const wf_kernel wfp_stamp; /* n = 1: the device's clock (ns) to *at */
extern const wf_kernel wfp_halo_pack;        /* n = ghosts: gathers owned particles to send */
extern const wf_kernel wfp_halo_unpack;      /* n = ghosts: scatters received ones into ghosts */
extern const wf_kernel wfp_halo_unpack_keys; /* n = ghosts: the unpack, then the ghosts' keys */
extern const wf_kernel wfp_classify;         /* n = local particles: where each one goes */
extern const wf_kernel wfp_select;           /* n = 1: indices whose tag has a bit */
extern const wf_kernel wfp_migrate_pack;     /* n = particles sent */
extern const wf_kernel wfp_migrate_keys;     /* n = particles received */
extern const wf_kernel wfp_migrate;          /* n = particles received: the new local arrays */

/* CUB temporary storage on dev for sorting n pairs with `bits` key bits, and for selecting among
 * n indices (wfp_sort, wfp_select); 0 on CPU devices, and 0 on a CUDA device means failure. */
size_t wfp_sort_temp_bytes(wf_device *dev, uint32_t n, int bits);
size_t wfp_select_temp_bytes(wf_device *dev, uint32_t n);
/* CUB temporary storage on dev for the exclusive sum of n entries (wfp_scan); 0 on CPU devices,
 * and 0 on a CUDA device means failure. */
size_t wfp_scan_temp_bytes(wf_device *dev, uint32_t n);
/* The one-launch frame's blocks on dev (CUDA: multiprocessors x the blocks of 256 threads one
 * holds at once: the cooperative launch's most); 0 on CPU devices or on failure. */
uint32_t wfp_frame_blocks(wf_device *dev, bool xpbd);
#ifdef WEFT_HAVE_CUDA
void wfp_frame_cuda(const void *args, size_t n, void *stream);
uint32_t wfp_frame_blocks_cuda(int ordinal, int multiprocessors, int xpbd);
void wfp_keys_cuda(const void *args, size_t n, void *stream);
void wfp_sort_cuda(const void *args, size_t n, void *stream);
void wfp_cells_cuda(const void *args, size_t n, void *stream);
void wfp_scan_cuda(const void *args, size_t n, void *stream);
void wfp_scatter_cuda(const void *args, size_t n, void *stream);
void wfp_place_cuda(const void *args, size_t n, void *stream);
/* CUB temporary storage for the exclusive sum of n entries (0 on failure). */
size_t wfp_scan_temp_bytes_cuda(uint32_t n);
void wfp_collide_dem_cuda(const void *args, size_t n, void *stream);
void wfp_collide_xpbd_cuda(const void *args, size_t n, void *stream);
void wfp_frame_begin_cuda(const void *args, size_t n, void *stream);
void wfp_halo_pack_cuda(const void *args, size_t n, void *stream);
void wfp_halo_unpack_keys_cuda(const void *args, size_t n, void *stream);
void wfp_halo_unpack_cuda(const void *args, size_t n, void *stream);
void wfp_classify_cuda(const void *args, size_t n, void *stream);
void wfp_stamp_cuda(const void *args, size_t n, void *stream);
void wfp_select_cuda(const void *args, size_t n, void *stream);
void wfp_migrate_pack_cuda(const void *args, size_t n, void *stream);
void wfp_migrate_keys_cuda(const void *args, size_t n, void *stream);
void wfp_migrate_cuda(const void *args, size_t n, void *stream);
/* CUB temporary storage for selecting among n indices (0 on failure). */
size_t wfp_select_temp_bytes_cuda(uint32_t n);
/* CUB temporary storage for sorting n pairs with `bits` key bits (0 on failure). */
size_t wfp_sort_temp_bytes_cuda(uint32_t n, int bits);
#endif

#ifdef __cplusplus
}
#endif
#endif
