/* CPU side of the cloth kernels: loops over [begin, end) calling the shared math in cloth_math.h,
 * and the wf_kernel objects. Flags are raised with integer atomics, so the loops stay correct if
 * the backend ever splits a launch over threads. */
#include "cloth_kernels.h"

#include <stdbool.h>

#ifdef WEFT_HAVE_CUDA
#define WFC_CUDA(f) f
#else
#define WFC_CUDA(f) NULL
#endif

static void raise_flags(wfc_flags *f, uint32_t flags, uint32_t index) {
  __atomic_fetch_or(&f->flags, flags, __ATOMIC_RELAXED);
  uint32_t cur = __atomic_load_n(&f->first_bad, __ATOMIC_RELAXED);
  while (index < cur && !__atomic_compare_exchange_n(&f->first_bad, &cur, index, true,
                                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* The collider impulses of a call go into a table of its own, added to the cloth's at its end
 * (collider_force.h). */
#define WFC_FORCES(dst)                                                                            \
  unsigned long long table_[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS];                                  \
  wfx_forces F = {(dst) ? table_ : NULL, 0}

static void spring_cpu(const void *args, size_t begin, size_t end) {
  const wfc_spring_args *a = args;
  WFC_FORCES(a->forces);
  for (size_t i = begin; i < end; i++) {
    uint32_t fl = wfc_spring_elem(a, (uint32_t)i, &F);
    if (fl) raise_flags(a->flags, fl, (uint32_t)i);
  }
  wfx_forces_flush(&F, a->forces);
}

static void predict_cpu(const void *args, size_t begin, size_t end) {
  const wfc_predict_args *a = args;
  for (size_t i = begin; i < end; i++)
    wfc_predict_elem(a, (uint32_t)i);
}

static void solve_cpu(const void *args, size_t begin, size_t end) {
  const wfc_solve_args *a = args;
  for (size_t s = begin; s < end; s++)
    wfc_solve_elem(a, (uint32_t)s);
}

static void finalize_cpu(const void *args, size_t begin, size_t end) {
  const wfc_finalize_args *a = args;
  WFC_FORCES(a->forces);
  for (size_t i = begin; i < end; i++) {
    uint32_t fl = wfc_finalize_elem(a, (uint32_t)i, &F);
    if (fl) raise_flags(a->flags, fl, (uint32_t)i);
  }
  wfx_forces_flush(&F, a->forces);
}

const wf_kernel wfc_spring_step = {"cloth_spring_step", spring_cpu, WFC_CUDA(wfc_spring_step_cuda),
                                   WF_GRAIN_HEAVY};
const wf_kernel wfc_xpbd_predict = {"cloth_xpbd_predict", predict_cpu,
                                    WFC_CUDA(wfc_xpbd_predict_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfc_xpbd_solve = {"cloth_xpbd_solve", solve_cpu, WFC_CUDA(wfc_xpbd_solve_cuda),
                                  WF_GRAIN_HEAVY};
const wf_kernel wfc_xpbd_finalize = {"cloth_xpbd_finalize", finalize_cpu,
                                     WFC_CUDA(wfc_xpbd_finalize_cuda), WF_GRAIN_LIGHT};

/* Per-element loops of the kernels whose elements write only their own slot. */
#define WFC_LOOP(name, args_t, elem)                                                               \
  static void name(const void *args, size_t begin, size_t end) {                                   \
    const args_t *a = args;                                                                        \
    for (size_t i = begin; i < end; i++)                                                           \
      elem(a, (uint32_t)i);                                                                        \
  }
WFC_LOOP(q_cpu, wfc_q_args, wfc_q_elem)
WFC_LOOP(keys_cpu, wfc_keys_args, wfc_keys_elem)
WFC_LOOP(self_cpu, wfc_self_args, wfc_self_elem)
WFC_LOOP(couple_cloth_cpu, wfc_couple_cloth_args, wfc_couple_cloth_elem)
WFC_LOOP(couple_particles_cpu, wfc_couple_particle_args, wfc_couple_particle_elem)
WFC_LOOP(apply_cpu, wfc_apply_args, wfc_apply_elem)
WFC_LOOP(halo_pack_cpu, wfc_halo_args, wfc_halo_pack_elem)
WFC_LOOP(halo_unpack_cpu, wfc_halo_args, wfc_halo_unpack_elem)
WFC_LOOP(pack_xyz_cpu, wfc_xyz_args, wfc_xyz_elem)
#undef WFC_LOOP

const wf_kernel wfc_grid_q = {"cloth_grid_q", q_cpu, WFC_CUDA(wfc_grid_q_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfc_grid_keys = {"cloth_grid_keys", keys_cpu, WFC_CUDA(wfc_grid_keys_cuda),
                                 WF_GRAIN_LIGHT};
const wf_kernel wfc_self_collide = {"cloth_self_collide", self_cpu, WFC_CUDA(wfc_self_collide_cuda),
                                    WF_GRAIN_HEAVY};
const wf_kernel wfc_couple_cloth = {"cloth_couple_cloth", couple_cloth_cpu,
                                    WFC_CUDA(wfc_couple_cloth_cuda), WF_GRAIN_HEAVY};
const wf_kernel wfc_couple_particles = {"cloth_couple_particles", couple_particles_cpu,
                                        WFC_CUDA(wfc_couple_particles_cuda), WF_GRAIN_HEAVY};
const wf_kernel wfc_apply = {"cloth_apply", apply_cpu, WFC_CUDA(wfc_apply_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfc_halo_pack = {"cloth_halo_pack", halo_pack_cpu, WFC_CUDA(wfc_halo_pack_cuda),
                                 WF_GRAIN_LIGHT};
const wf_kernel wfc_halo_unpack = {"cloth_halo_unpack", halo_unpack_cpu,
                                   WFC_CUDA(wfc_halo_unpack_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfc_pack_xyz = {"cloth_pack_xyz", pack_xyz_cpu, WFC_CUDA(wfc_pack_xyz_cuda),
                                WF_GRAIN_LIGHT};

/* The per-vertex kernels over a range [begin, begin + n): element j is vertex begin + j, and the
 * flags name that vertex. */
static void spring_range_cpu(const void *args, size_t begin, size_t end) {
  const wfc_spring_range_args *r = args;
  WFC_FORCES(r->a.forces);
  for (size_t j = begin; j < end; j++) {
    uint32_t i = r->begin + (uint32_t)j;
    uint32_t fl = wfc_spring_elem(&r->a, i, &F);
    if (fl) raise_flags(r->a.flags, fl, i);
  }
  wfx_forces_flush(&F, r->a.forces);
}

static void predict_range_cpu(const void *args, size_t begin, size_t end) {
  const wfc_predict_range_args *r = args;
  for (size_t j = begin; j < end; j++)
    wfc_predict_elem(&r->a, r->begin + (uint32_t)j);
}

static void finalize_range_cpu(const void *args, size_t begin, size_t end) {
  const wfc_finalize_range_args *r = args;
  WFC_FORCES(r->a.forces);
  for (size_t j = begin; j < end; j++) {
    uint32_t i = r->begin + (uint32_t)j;
    uint32_t fl = wfc_finalize_elem(&r->a, i, &F);
    if (fl) raise_flags(r->a.flags, fl, i);
  }
  wfx_forces_flush(&F, r->a.forces);
}

const wf_kernel wfc_spring_range = {"cloth_spring_range", spring_range_cpu,
                                    WFC_CUDA(wfc_spring_range_cuda), WF_GRAIN_HEAVY};
const wf_kernel wfc_xpbd_predict_range = {"cloth_xpbd_predict_range", predict_range_cpu,
                                          WFC_CUDA(wfc_xpbd_predict_range_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfc_xpbd_finalize_range = {"cloth_xpbd_finalize_range", finalize_range_cpu,
                                           WFC_CUDA(wfc_xpbd_finalize_range_cuda), WF_GRAIN_LIGHT};
