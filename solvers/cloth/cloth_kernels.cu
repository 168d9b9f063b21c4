/* CUDA side of the cloth kernels: __global__ kernels calling the shared math in cloth_math.h, and
 * the launch wrappers wf_launch calls with the stream's cudaStream_t. One thread per element, 256
 * a block. Built with -fmad=false so the results equal the CPU backend's bit for bit. */
#include <cuda_runtime.h>

#include "cloth_kernels.h"

namespace {

constexpr unsigned kBlock = 256;

unsigned grid_for(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

__device__ size_t index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }

__device__ void raise_flags(wfc_flags *f, uint32_t flags, uint32_t i) {
  atomicOr(&f->flags, flags);
  atomicMin(&f->first_bad, i);
}

__global__ void spring_kernel(wfc_spring_args a, size_t n) {
  size_t i = index();
  if (i >= n) return;
  wfx_forces F = {a.forces, 0};
  uint32_t fl = wfc_spring_elem(&a, (uint32_t)i, &F);
  if (fl) raise_flags(a.flags, fl, (uint32_t)i);
}

__global__ void predict_kernel(wfc_predict_args a, size_t n) {
  size_t i = index();
  if (i < n) wfc_predict_elem(&a, (uint32_t)i);
}

__global__ void solve_kernel(wfc_solve_args a, size_t n) {
  size_t s = index();
  if (s < n) wfc_solve_elem(&a, (uint32_t)s);
}

__global__ void finalize_kernel(wfc_finalize_args a, size_t n) {
  size_t i = index();
  if (i >= n) return;
  wfx_forces F = {a.forces, 0};
  uint32_t fl = wfc_finalize_elem(&a, (uint32_t)i, &F);
  if (fl) raise_flags(a.flags, fl, (uint32_t)i);
}

/* The per-vertex kernels over a range [begin, begin + n) (split.c's overlap). */
__global__ void spring_range_kernel(wfc_spring_range_args r, size_t n) {
  size_t j = index();
  if (j >= n) return;
  uint32_t i = r.begin + (uint32_t)j;
  wfx_forces F = {r.a.forces, 0};
  uint32_t fl = wfc_spring_elem(&r.a, i, &F);
  if (fl) raise_flags(r.a.flags, fl, i);
}

__global__ void predict_range_kernel(wfc_predict_range_args r, size_t n) {
  size_t j = index();
  if (j < n) wfc_predict_elem(&r.a, r.begin + (uint32_t)j);
}

__global__ void finalize_range_kernel(wfc_finalize_range_args r, size_t n) {
  size_t j = index();
  if (j >= n) return;
  uint32_t i = r.begin + (uint32_t)j;
  wfx_forces F = {r.a.forces, 0};
  uint32_t fl = wfc_finalize_elem(&r.a, i, &F);
  if (fl) raise_flags(r.a.flags, fl, i);
}

/* Kernels whose elements write only their own slot. */
#define WFC_KERNEL(name, args_t, elem)                                                             \
  __global__ void name(args_t a, size_t n) {                                                       \
    size_t i = index();                                                                            \
    if (i < n) elem(&a, (uint32_t)i);                                                              \
  }
WFC_KERNEL(q_kernel, wfc_q_args, wfc_q_elem)
WFC_KERNEL(keys_kernel, wfc_keys_args, wfc_keys_elem)
WFC_KERNEL(self_kernel, wfc_self_args, wfc_self_elem)
WFC_KERNEL(couple_cloth_kernel, wfc_couple_cloth_args, wfc_couple_cloth_elem)
WFC_KERNEL(couple_particles_kernel, wfc_couple_particle_args, wfc_couple_particle_elem)
WFC_KERNEL(apply_kernel, wfc_apply_args, wfc_apply_elem)
WFC_KERNEL(halo_pack_kernel, wfc_halo_args, wfc_halo_pack_elem)
WFC_KERNEL(halo_unpack_kernel, wfc_halo_args, wfc_halo_unpack_elem)
WFC_KERNEL(pack_xyz_kernel, wfc_xyz_args, wfc_xyz_elem)
#undef WFC_KERNEL

} // namespace

#define WFC_WRAPPER(name, kernel, args_t)                                                          \
  extern "C" void name(const void *args, size_t n, void *stream) {                                 \
    kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const args_t *)args, n);            \
  }
WFC_WRAPPER(wfc_grid_q_cuda, q_kernel, wfc_q_args)
WFC_WRAPPER(wfc_grid_keys_cuda, keys_kernel, wfc_keys_args)
WFC_WRAPPER(wfc_self_collide_cuda, self_kernel, wfc_self_args)
WFC_WRAPPER(wfc_couple_cloth_cuda, couple_cloth_kernel, wfc_couple_cloth_args)
WFC_WRAPPER(wfc_couple_particles_cuda, couple_particles_kernel, wfc_couple_particle_args)
WFC_WRAPPER(wfc_apply_cuda, apply_kernel, wfc_apply_args)
WFC_WRAPPER(wfc_halo_pack_cuda, halo_pack_kernel, wfc_halo_args)
WFC_WRAPPER(wfc_halo_unpack_cuda, halo_unpack_kernel, wfc_halo_args)
WFC_WRAPPER(wfc_pack_xyz_cuda, pack_xyz_kernel, wfc_xyz_args)
WFC_WRAPPER(wfc_spring_range_cuda, spring_range_kernel, wfc_spring_range_args)
WFC_WRAPPER(wfc_xpbd_predict_range_cuda, predict_range_kernel, wfc_predict_range_args)
WFC_WRAPPER(wfc_xpbd_finalize_range_cuda, finalize_range_kernel, wfc_finalize_range_args)
#undef WFC_WRAPPER

extern "C" void wfc_spring_step_cuda(const void *args, size_t n, void *stream) {
  spring_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfc_spring_args *)args,
                                                                  n);
}

extern "C" void wfc_xpbd_predict_cuda(const void *args, size_t n, void *stream) {
  predict_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfc_predict_args *)args,
                                                                   n);
}

extern "C" void wfc_xpbd_solve_cuda(const void *args, size_t n, void *stream) {
  solve_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfc_solve_args *)args, n);
}

extern "C" void wfc_xpbd_finalize_cuda(const void *args, size_t n, void *stream) {
  finalize_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(
      *(const wfc_finalize_args *)args, n);
}
