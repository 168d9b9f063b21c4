/* Device helpers the particle solver's CUDA files share (particle_kernels.cu, particle_frame.cu):
 * raising the error flags, and the keys of a block of particles with the extent's reduction.
 * Include after particle_math.h's configuration (WFP_PLAIN_LOADS) is settled. */
#ifndef WEFT_PARTICLE_DEVICE_CUH
#define WEFT_PARTICLE_DEVICE_CUH

#include "particle_math.h"

/* (a named namespace of static functions: nvcc's stubs cannot tell two anonymous namespaces
 * apart once one is brought into the other's scope) */
namespace wfp_device {

static constexpr unsigned kBlock = 256;

static __device__ void raise_flags(wfp_clock *c, uint32_t flags, uint32_t i) {
  atomicOr(&c->flags, flags);
  atomicMin(&c->first_bad, i);
}

/* A contact kernel's flags: the drift check's to the split's flag (every thread that sees one
 * stores the same 1), the rest to the clock. */
static __device__ void raise_flags(const wfp_collide_args &a, uint32_t flags, uint32_t i) {
  if (flags & WFP_FLAG_DRIFT) a.drift->flag = 1u;
  if (flags & ~WFP_FLAG_DRIFT) raise_flags(a.clock, flags & ~WFP_FLAG_DRIFT, i);
}

/* The key of particle i where `live` (every thread of the block calls it), plus the extent of
 * the cells: reduced per warp (__reduce_*_sync), then per block in shared memory, then one
 * global integer atomic per block and axis. */
static __device__ void keys_block(const wfp_keys_args &a, bool live, uint32_t i) {
  __shared__ int32_t lo[3], hi[3];
  if (threadIdx.x < 3) lo[threadIdx.x] = INT32_MAX, hi[threadIdx.x] = INT32_MIN;
  __syncthreads();
  int32_t c[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, d[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  if (live) {
    uint32_t fl = wfp_key_elem(a.params, a.pos[i], &a.keys[i], c);
    a.vals[i] = a.count ? atomicAdd(&a.count[a.keys[i]], 1u) : (uint32_t)i;
    if (fl) raise_flags(a.clock, fl, i);
    d[0] = c[0], d[1] = c[1], d[2] = c[2];
  }
  for (int k = 0; k < 3; k++) {
    int32_t l = __reduce_min_sync(0xffffffffu, c[k]), h = __reduce_max_sync(0xffffffffu, d[k]);
    if ((threadIdx.x & 31) == 0) atomicMin(&lo[k], l), atomicMax(&hi[k], h);
  }
  __syncthreads();
  if (threadIdx.x < 3 && lo[threadIdx.x] != INT32_MAX) {
    atomicMin(&a.clock->lo[threadIdx.x], lo[threadIdx.x]);
    atomicMax(&a.clock->hi[threadIdx.x], hi[threadIdx.x]);
  }
}

} // namespace wfp_device
#endif
