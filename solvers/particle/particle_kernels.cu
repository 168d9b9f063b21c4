/* CUDA side of the particle kernels: __global__ kernels calling the shared math in
 * particle_math.h, and the launch wrappers wf_launch calls with the stream's cudaStream_t. One
 * thread per element, 256 a block. The sort is CUB's DeviceRadixSort (stable) on a DoubleBuffer,
 * with temporary storage allocated once by the solver for its capacity. Built with -fmad=false so
 * the results equal the CPU backend's bit for bit. */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda_runtime.h>
#include <stdlib.h>
#include <thrust/iterator/counting_iterator.h>

#include "particle_device.cuh"
#include "particle_kernels.h"

namespace {

using namespace wfp_device; /* kBlock, raise_flags, keys_block */

unsigned grid_for(size_t n) { return (unsigned)((n + kBlock - 1) / kBlock); }

__device__ size_t index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }

__global__ void keys_kernel(wfp_keys_args a, size_t n) {
  size_t i = index();
  keys_block(a, i < wfp_live(&a.params->count, n) && !(a.skip && isnan(a.skip[i])), (uint32_t)i);
}

__global__ void halo_unpack_keys_kernel(wfp_halo_keys_args a, size_t n) {
  size_t j = index();
  bool live = j < wfp_live(a.unpack.live, n);
  if (live) wfp_halo_unpack_elem(&a.unpack, (uint32_t)j);
  keys_block(a.keys, live, live ? a.unpack.idx[j] : 0u);
}

__global__ void cells_kernel(wfp_cells_args a, size_t n) {
  size_t s = index();
  if (s < n) wfp_cells_elem(&a, (uint32_t)s);
}

/* Thread 0 also advances the clock (nothing else in this kernel reads it). */
__global__ void scatter_kernel(wfp_scatter_args a, size_t n) {
  size_t i = index();
  if (i == 0 && a.clock) wfp_clock_advance(a.clock, a.params);
  if (i < wfp_live(a.live, n)) wfp_scatter_elem(&a, (uint32_t)i);
}

/* The launch's threads also clear the cell counts, striding over the table (the scan read them;
 * the placement reads the start table, never the counts). */
__global__ void place_kernel(wfp_place_args a, size_t n) {
  size_t s = index();
  if (a.count)
    for (size_t k = s; k < a.count_n; k += (size_t)gridDim.x * blockDim.x)
      a.count[k] = 0u;
  if (s < wfp_live(a.live, n)) wfp_place_elem(&a, (uint32_t)s);
}

/* One kernel per contact model (chosen on the host, fixed for a solver): each is compiled with
 * only its own path, which keeps the register count, and so the occupancy, of DEM's up. MINB:
 * the blocks a multiprocessor should hold at once (0: the compiler's choice), which caps the
 * registers; wfp_collide_args.min_blocks picks a variant (wf_particles_tuning.contact_min_blocks:
 * 6 blocks of 256 by default caps the contact kernels at 40 registers, with a few spills to L1;
 * the kernel waits on loads, and more resident warps hide them). */
template <int MINB>
__global__ void __launch_bounds__(kBlock, MINB) collide_dem_kernel(wfp_collide_args a, size_t n) {
  __shared__ uint32_t list[WFP_COLLIDE_SCRATCH * kBlock]; /* a thread's entries kBlock apart */
  size_t s = index();
  if (s >= wfp_live(&a.params->count, n)) return;
  uint32_t over = 0u;
  wfx_forces F = {a.forces, 0}; /* warp-aggregated atomics (collider_force.h) */
  uint32_t fl = wfp_collide_dem(&a, (uint32_t)s, list + threadIdx.x, kBlock, &over, &F);
  if (fl) raise_flags(a, fl, a.vals[s]);
  if (over) atomicAdd(&a.clock->overflows, over);
}

template <int MINB>
__global__ void __launch_bounds__(kBlock, MINB) collide_xpbd_kernel(wfp_collide_args a, size_t n) {
  __shared__ uint32_t list[WFP_CONTACT_LIST * kBlock];
  size_t s = index();
  if (s >= wfp_live(&a.params->count, n)) return;
  wfx_forces F = {a.forces, 0};
  uint32_t fl = wfp_collide_xpbd(&a, (uint32_t)s, list + threadIdx.x, kBlock, &F);
  if (fl) raise_flags(a, fl, a.vals[s]);
}

__global__ void frame_begin_kernel(wfp_frame_args a) {
  for (int k = 0; k < 3; k++)
    a.clock->lo[k] = INT32_MAX, a.clock->hi[k] = INT32_MIN;
}

__global__ void halo_pack_kernel(wfp_halo_args a, size_t n) {
  size_t j = index();
  if (j < wfp_live(a.live, n)) wfp_halo_pack_elem(&a, (uint32_t)j);
}

__global__ void halo_unpack_kernel(wfp_halo_args a, size_t n) {
  size_t j = index();
  if (j < wfp_live(a.live, n)) wfp_halo_unpack_elem(&a, (uint32_t)j);
}

/* Counts per (owner, holder) in shared memory (integer atomics), merged into the global counts
 * once per block; the largest speed is reduced per warp on its float bits. */
__global__ void classify_kernel(wfp_classify_args a, size_t n) {
  __shared__ uint32_t cnt[WFP_SPLIT_MAXP * WFP_SPLIT_MAXP];
  __shared__ uint32_t vmax;
  int np = a.slabs.np;
  for (int k = threadIdx.x; k < np * np; k += blockDim.x)
    cnt[k] = 0;
  if (threadIdx.x == 0) vmax = 0;
  __syncthreads();
  size_t i = index();
  float sp = 0.0f, c = 0.0f;
  int o = -1;
  if (i < n) {
    o = wfp_classify_elem(&a, (uint32_t)i, &sp, &c);
    if (o >= 0) {
      uint32_t m = a.tag[i];
      for (int d = 0; d < np; d++)
        if (m & (1u << d)) atomicAdd(&cnt[o * np + d], 1u);
    }
  }
  if (a.hist) { /* neighbours in memory are neighbours in space: one add per bin and warp */
    uint32_t bin = o >= 0 ? wfp_hist_bin(&a, c) : 0xffffffffu;
    uint32_t same = __match_any_sync(0xffffffffu, bin);
    if (o >= 0 && (threadIdx.x & 31) == (unsigned)(__ffs(same) - 1))
      atomicAdd(&a.hist[bin], (uint32_t)__popc(same));
  }
  uint32_t bits = __reduce_max_sync(0xffffffffu, __float_as_uint(sp));
  if ((threadIdx.x & 31) == 0) atomicMax(&vmax, bits);
  __syncthreads();
  for (int k = threadIdx.x; k < np * np; k += blockDim.x)
    if (cnt[k]) atomicAdd(&a.counts[k], cnt[k]);
  if (threadIdx.x == 0 && vmax) atomicMax(&a.counts[np * np], vmax);
}

__global__ void stamp_kernel(wfp_stamp_args a) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *a.at = t;
}

struct HasBit {
  const uint32_t *tag;
  uint32_t bit;
  const float *anchor;
  __device__ bool operator()(uint32_t i) const {
    return anchor ? anchor[i] == anchor[i] : (tag[i] & bit) != 0u;
  }
};

__global__ void migrate_pack_kernel(wfp_migrate_pack_args a, size_t n) {
  size_t j = index();
  if (j < n) wfp_migrate_pack_elem(&a, (uint32_t)j);
}

__global__ void migrate_keys_kernel(wfp_migrate_keys_args a, size_t n) {
  size_t j = index();
  if (j < n) a.keys[j] = a.gid[j], a.vals[j] = (uint32_t)j;
}

__global__ void migrate_kernel(wfp_migrate_args a, size_t n) {
  size_t j = index();
  if (j < n) wfp_migrate_elem(&a, (uint32_t)j);
}

} // namespace

extern "C" void wfp_keys_cuda(const void *args, size_t n, void *stream) {
  keys_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_keys_args *)args, n);
}

extern "C" void wfp_cells_cuda(const void *args, size_t n, void *stream) {
  cells_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_cells_args *)args, n);
}

#define WFP_LAUNCH_COLLIDE(kernel)                                                                 \
  switch (a.min_blocks) {                                                                          \
  case 3: kernel<3><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                   \
  case 4: kernel<4><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                   \
  case 5: kernel<5><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                   \
  case 7: kernel<7><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                   \
  case 8: kernel<8><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                   \
  case 0: kernel<0><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                   \
  default: kernel<6><<<grid_for(n), kBlock, 0, s>>>(a, n); break;                                  \
  }

extern "C" void wfp_scatter_cuda(const void *args, size_t n, void *stream) {
  scatter_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_scatter_args *)args,
                                                                   n);
}

extern "C" void wfp_place_cuda(const void *args, size_t n, void *stream) {
  place_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_place_args *)args, n);
}

extern "C" void wfp_scan_cuda(const void *args, size_t n, void *stream) {
  (void)n;
  const wfp_scan_args *a = (const wfp_scan_args *)args;
  size_t bytes = a->temp_bytes;
  cub::DeviceScan::ExclusiveSum(a->temp, bytes, a->in, a->out, (int)a->n, (cudaStream_t)stream);
}

extern "C" size_t wfp_scan_temp_bytes_cuda(uint32_t n) {
  size_t bytes = 0;
  if (cub::DeviceScan::ExclusiveSum(nullptr, bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                                    (int)n) != cudaSuccess)
    return 0;
  return bytes;
}

extern "C" void wfp_collide_dem_cuda(const void *args, size_t n, void *stream) {
  const wfp_collide_args a = *(const wfp_collide_args *)args;
  cudaStream_t s = (cudaStream_t)stream;
  WFP_LAUNCH_COLLIDE(collide_dem_kernel)
}

extern "C" void wfp_collide_xpbd_cuda(const void *args, size_t n, void *stream) {
  const wfp_collide_args a = *(const wfp_collide_args *)args;
  cudaStream_t s = (cudaStream_t)stream;
  WFP_LAUNCH_COLLIDE(collide_xpbd_kernel)
}

extern "C" void wfp_frame_begin_cuda(const void *args, size_t n, void *stream) {
  frame_begin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*(const wfp_frame_args *)args);
}

/* The result lands in whichever half of the DoubleBuffer CUB chose; it is copied to the output
 * arrays when needed (the choice depends only on n and bits, so it is the same at every replay). */
extern "C" void wfp_sort_cuda(const void *args, size_t n, void *stream) {
  const wfp_sort_args *a = (const wfp_sort_args *)args;
  cudaStream_t s = (cudaStream_t)stream;
  cub::DoubleBuffer<uint32_t> keys(a->keys, a->keys_out), vals(a->vals, a->vals_out);
  size_t bytes = a->temp_bytes;
  cub::DeviceRadixSort::SortPairs(a->temp, bytes, keys, vals, (int)a->n, 0, a->bits, s);
  if (keys.Current() != a->keys_out)
    cudaMemcpyAsync(a->keys_out, keys.Current(), a->n * sizeof(uint32_t), cudaMemcpyDeviceToDevice,
                    s);
  if (vals.Current() != a->vals_out)
    cudaMemcpyAsync(a->vals_out, vals.Current(), a->n * sizeof(uint32_t), cudaMemcpyDeviceToDevice,
                    s);
}

extern "C" size_t wfp_sort_temp_bytes_cuda(uint32_t n, int bits) {
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), vals(nullptr, nullptr);
  size_t bytes = 0;
  if (cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, vals, (int)n, 0, bits) != cudaSuccess)
    return 0;
  return bytes;
}

extern "C" void wfp_stamp_cuda(const void *args, size_t n, void *stream) {
  if (n) stamp_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(*(const wfp_stamp_args *)args);
}

extern "C" void wfp_halo_pack_cuda(const void *args, size_t n, void *stream) {
  halo_pack_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_halo_args *)args,
                                                                     n);
}

extern "C" void wfp_halo_unpack_keys_cuda(const void *args, size_t n, void *stream) {
  halo_unpack_keys_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(
      *(const wfp_halo_keys_args *)args, n);
}

extern "C" void wfp_halo_unpack_cuda(const void *args, size_t n, void *stream) {
  halo_unpack_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_halo_args *)args,
                                                                       n);
}

extern "C" void wfp_classify_cuda(const void *args, size_t n, void *stream) {
  classify_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(
      *(const wfp_classify_args *)args, n);
}

extern "C" void wfp_select_cuda(const void *args, size_t n, void *stream) {
  (void)n;
  const wfp_select_args *a = (const wfp_select_args *)args;
  size_t bytes = a->temp_bytes;
  thrust::counting_iterator<uint32_t> in(0u);
  cub::DeviceSelect::If(a->temp, bytes, in, a->out, a->count, (int)a->n,
                        HasBit{a->tag, a->bit, a->anchor}, (cudaStream_t)stream);
}

extern "C" size_t wfp_select_temp_bytes_cuda(uint32_t n) {
  size_t bytes = 0;
  thrust::counting_iterator<uint32_t> in(0u);
  if (cub::DeviceSelect::If(nullptr, bytes, in, (uint32_t *)nullptr, (uint32_t *)nullptr, (int)n,
                            HasBit{nullptr, 0u, nullptr}) != cudaSuccess)
    return 0;
  return bytes;
}

extern "C" void wfp_migrate_pack_cuda(const void *args, size_t n, void *stream) {
  migrate_pack_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(
      *(const wfp_migrate_pack_args *)args, n);
}

extern "C" void wfp_migrate_keys_cuda(const void *args, size_t n, void *stream) {
  migrate_keys_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(
      *(const wfp_migrate_keys_args *)args, n);
}

extern "C" void wfp_migrate_cuda(const void *args, size_t n, void *stream) {
  migrate_kernel<<<grid_for(n), kBlock, 0, (cudaStream_t)stream>>>(*(const wfp_migrate_args *)args,
                                                                   n);
}
