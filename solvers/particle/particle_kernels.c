/* CPU side of the particle kernels: loops over [begin, end) calling the shared math, and the
 * wf_kernel objects. The CPU sort is an LSD radix sort (8-bit digits, stable), the same ordering
 * CUB's DeviceRadixSort produces on CUDA devices. Flags and the extent are merged with integer
 * atomics, so the loops stay correct if the backend ever splits a launch over threads. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "particle_kernels.h"

#ifdef WEFT_HAVE_CUDA
#define WFP_CUDA(f) f
#else
#define WFP_CUDA(f) NULL
#endif

static void atomic_min_u32(uint32_t *p, uint32_t v) {
  uint32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < cur &&
         !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void atomic_max_u32(uint32_t *p, uint32_t v) {
  uint32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > cur &&
         !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void atomic_min_i32(int32_t *p, int32_t v) {
  int32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < cur &&
         !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void atomic_max_i32(int32_t *p, int32_t v) {
  int32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v > cur &&
         !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void raise_flags(wfp_clock *c, uint32_t flags, uint32_t index) {
  __atomic_fetch_or(&c->flags, flags, __ATOMIC_RELAXED);
  atomic_min_u32(&c->first_bad, index);
}

/* A contact kernel's flags: the drift check's to the split's flag, the rest to the clock. */
static void raise_contact_flags(const wfp_collide_args *a, uint32_t flags, uint32_t index) {
  if (flags & WFP_FLAG_DRIFT) __atomic_store_n(&a->drift->flag, 1u, __ATOMIC_RELAXED);
  if (flags & ~WFP_FLAG_DRIFT) raise_flags(a->clock, flags & ~WFP_FLAG_DRIFT, index);
}

/* Particle i's key, value or count, flags, and its cell into the extent lo..hi. */
static void key_one(const wfp_keys_args *a, uint32_t i, int32_t lo[3], int32_t hi[3]) {
  int32_t c[3];
  uint32_t fl = wfp_key_elem(a->params, a->pos[i], &a->keys[i], c);
  a->vals[i] = a->count ? __atomic_fetch_add(&a->count[a->keys[i]], 1u, __ATOMIC_RELAXED) : i;
  if (fl) raise_flags(a->clock, fl, i);
  for (int k = 0; k < 3; k++) {
    lo[k] = c[k] < lo[k] ? c[k] : lo[k];
    hi[k] = c[k] > hi[k] ? c[k] : hi[k];
  }
}

static void extent_merge(const wfp_keys_args *a, const int32_t lo[3], const int32_t hi[3]) {
  for (int k = 0; k < 3 && lo[k] != INT32_MAX; k++) {
    atomic_min_i32(&a->clock->lo[k], lo[k]);
    atomic_max_i32(&a->clock->hi[k], hi[k]);
  }
}

static void keys_cpu(const void *args, size_t begin, size_t end) {
  const wfp_keys_args *a = args;
  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  end = wfp_live(&a->params->count, end);
  for (size_t i = begin; i < end; i++)
    if (!a->skip || !isnan(a->skip[i])) key_one(a, (uint32_t)i, lo, hi);
  extent_merge(a, lo, hi);
}

/* One element does the whole sort (n == 1): a serial LSD radix sort ping-ponging between the
 * input and output arrays, with a final copy when the pass count leaves the result in the input. */
static void sort_cpu(const void *args, size_t begin, size_t end) {
  const wfp_sort_args *a = args;
  if (begin > 0 || end == 0) return;
  uint32_t *ks = a->keys, *vs = a->vals, *kd = a->keys_out, *vd = a->vals_out;
  int passes = (a->bits + 7) / 8;
  for (int p = 0; p < passes; p++) {
    int shift = 8 * p;
    uint32_t count[257] = {0};
    for (uint32_t i = 0; i < a->n; i++)
      count[((ks[i] >> shift) & 255u) + 1]++;
    for (int d = 0; d < 256; d++)
      count[d + 1] += count[d];
    for (uint32_t i = 0; i < a->n; i++) {
      uint32_t o = count[(ks[i] >> shift) & 255u]++;
      kd[o] = ks[i];
      vd[o] = vs[i];
    }
    uint32_t *t = ks;
    ks = kd, kd = t;
    t = vs, vs = vd, vd = t;
  }
  if (ks != a->keys_out) {
    memcpy(a->keys_out, ks, a->n * sizeof *ks);
    memcpy(a->vals_out, vs, a->n * sizeof *vs);
  }
}

/* One element does the whole scan (n == 1). */
static void scan_cpu(const void *args, size_t begin, size_t end) {
  const wfp_scan_args *a = args;
  if (begin > 0 || end == 0) return;
  uint32_t sum = 0;
  for (uint32_t k = 0; k < a->n; k++) {
    uint32_t c = a->in[k];
    a->out[k] = sum;
    sum += c;
  }
}

static void scatter_cpu(const void *args, size_t begin, size_t end) {
  const wfp_scatter_args *a = args;
  if (begin == 0 && end > 0 && a->clock) wfp_clock_advance(a->clock, a->params);
  end = wfp_live(a->live, end);
  for (size_t i = begin; i < end; i++)
    wfp_scatter_elem(a, (uint32_t)i);
}

/* (The counts are cleared by the piece that starts the launch: one memset.) */
static void place_cpu(const void *args, size_t begin, size_t end) {
  const wfp_place_args *a = args;
  if (begin == 0 && end > 0 && a->count) memset(a->count, 0, (size_t)a->count_n * 4);
  end = wfp_live(a->live, end);
  for (size_t s = begin; s < end; s++)
    wfp_place_elem(a, (uint32_t)s);
}

static void cells_cpu(const void *args, size_t begin, size_t end) {
  const wfp_cells_args *a = args;
  for (size_t s = begin; s < end; s++)
    wfp_cells_elem(a, (uint32_t)s);
}

/* The contact kernels sum their collider impulses into a table of their own, added to the
 * solver's at the end of the call (collider_force.h). */
static void collide_dem_cpu(const void *args, size_t begin, size_t end) {
  const wfp_collide_args *a = args;
  uint32_t list[WFP_COLLIDE_SCRATCH] = {0};
  unsigned long long table[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS];
  wfx_forces F = {a->forces ? table : NULL, 0};
  end = wfp_live(&a->params->count, end);
  uint32_t over = 0u;
  for (size_t s = begin; s < end; s++) {
    uint32_t o = 0u;
    uint32_t fl = wfp_collide_dem(a, (uint32_t)s, list, 1u, &o, &F);
    if (fl) raise_contact_flags(a, fl, a->vals[s]);
    over += o;
  }
  if (over) __atomic_fetch_add(&a->clock->overflows, over, __ATOMIC_RELAXED);
  wfx_forces_flush(&F, a->forces);
}

static void collide_xpbd_cpu(const void *args, size_t begin, size_t end) {
  const wfp_collide_args *a = args;
  uint32_t list[WFP_CONTACT_LIST] = {0};
  unsigned long long table[WFX_MAX_COLLIDERS * WFX_FORCE_WORDS];
  wfx_forces F = {a->forces ? table : NULL, 0};
  end = wfp_live(&a->params->count, end);
  for (size_t s = begin; s < end; s++) {
    uint32_t fl = wfp_collide_xpbd(a, (uint32_t)s, list, 1u, &F);
    if (fl) raise_contact_flags(a, fl, a->vals[s]);
  }
  wfx_forces_flush(&F, a->forces);
}

/* The one-launch frame (n == 1): the stages' loops in order, substep after substep, on the
 * stream's thread (the loops are those of the stage kernels: the same bits). */
static void frame_cpu(const void *args, size_t begin, size_t end) {
  const wfp_frame_run_args *a = args;
  if (begin > 0 || end == 0) return;
  for (uint32_t k = 0; k < a->substeps; k++) {
    keys_cpu(&a->keys, 0, a->launch);
    scan_cpu(&a->scan, 0, 1);
    scatter_cpu(&a->scatter, 0, a->launch);
    place_cpu(&a->place, 0, a->launch);
    if (a->xpbd)
      collide_xpbd_cpu(&a->collide, 0, a->launch);
    else
      collide_dem_cpu(&a->collide, 0, a->launch);
  }
}

static void frame_begin_cpu(const void *args, size_t begin, size_t end) {
  const wfp_frame_args *a = args;
  if (begin > 0 || end == 0) return;
  for (int k = 0; k < 3; k++)
    a->clock->lo[k] = INT32_MAX, a->clock->hi[k] = INT32_MIN;
}

static void halo_pack_cpu(const void *args, size_t begin, size_t end) {
  end = wfp_live(((const wfp_halo_args *)args)->live, end);
  for (size_t j = begin; j < end; j++)
    wfp_halo_pack_elem(args, (uint32_t)j);
}

static void halo_unpack_cpu(const void *args, size_t begin, size_t end) {
  end = wfp_live(((const wfp_halo_args *)args)->live, end);
  for (size_t j = begin; j < end; j++)
    wfp_halo_unpack_elem(args, (uint32_t)j);
}

static void halo_unpack_keys_cpu(const void *args, size_t begin, size_t end) {
  const wfp_halo_keys_args *a = args;
  int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  end = wfp_live(a->unpack.live, end);
  for (size_t j = begin; j < end; j++) {
    wfp_halo_unpack_elem(&a->unpack, (uint32_t)j);
    key_one(&a->keys, a->unpack.idx[j], lo, hi);
  }
  extent_merge(&a->keys, lo, hi);
}

static void stamp_cpu(const void *args, size_t begin, size_t end) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  if (begin < end)
    *((const wfp_stamp_args *)args)->at = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Counts per (owner, holder), the histogram and the largest speed, merged once per call. */
static void classify_cpu(const void *args, size_t begin, size_t end) {
  const wfp_classify_args *a = args;
  int np = a->slabs.np;
  uint32_t cnt[WFP_SPLIT_MAXP * WFP_SPLIT_MAXP] = {0};
  uint32_t hist[WFP_HIST_BINS];
  if (a->hist) memset(hist, 0, sizeof hist);
  float vmax = 0.0f;
  for (size_t i = begin; i < end; i++) {
    float sp = 0.0f, c = 0.0f;
    int o = wfp_classify_elem(a, (uint32_t)i, &sp, &c);
    if (o < 0) continue;
    vmax = sp > vmax ? sp : vmax;
    uint32_t m = a->tag[i];
    for (int d = 0; d < np; d++)
      if (m & (1u << d)) cnt[o * np + d]++;
    if (a->hist) hist[wfp_hist_bin(a, c)]++;
  }
  for (int k = 0; k < np * np; k++)
    if (cnt[k]) __atomic_fetch_add(&a->counts[k], cnt[k], __ATOMIC_RELAXED);
  for (int k = 0; a->hist && k < WFP_HIST_BINS; k++)
    if (hist[k]) __atomic_fetch_add(&a->hist[k], hist[k], __ATOMIC_RELAXED);
  uint32_t bits;
  memcpy(&bits, &vmax, 4);
  atomic_max_u32(&a->counts[np * np], bits);
}

static void select_cpu(const void *args, size_t begin, size_t end) {
  const wfp_select_args *a = args;
  if (begin > 0 || end == 0) return;
  uint32_t k = 0;
  for (uint32_t i = 0; i < a->n; i++)
    if (a->anchor ? a->anchor[i] == a->anchor[i] : (a->tag[i] & a->bit) != 0u) a->out[k++] = i;
  *a->count = k;
}

static void migrate_pack_cpu(const void *args, size_t begin, size_t end) {
  for (size_t j = begin; j < end; j++)
    wfp_migrate_pack_elem(args, (uint32_t)j);
}

static void migrate_keys_cpu(const void *args, size_t begin, size_t end) {
  const wfp_migrate_keys_args *a = args;
  for (size_t j = begin; j < end; j++)
    a->keys[j] = a->gid[j], a->vals[j] = (uint32_t)j;
}

static void migrate_cpu(const void *args, size_t begin, size_t end) {
  for (size_t j = begin; j < end; j++)
    wfp_migrate_elem(args, (uint32_t)j);
}

size_t wfp_sort_temp_bytes(wf_device *dev, uint32_t n, int bits) {
#ifdef WEFT_HAVE_CUDA
  if (wf_device_is_cuda(dev)) return wfp_sort_temp_bytes_cuda(n, bits);
#endif
  (void)dev, (void)n, (void)bits;
  return 0;
}

size_t wfp_select_temp_bytes(wf_device *dev, uint32_t n) {
#ifdef WEFT_HAVE_CUDA
  if (wf_device_is_cuda(dev)) return wfp_select_temp_bytes_cuda(n);
#endif
  (void)dev, (void)n;
  return 0;
}

const wf_kernel wfp_keys = {"particle_keys", keys_cpu, WFP_CUDA(wfp_keys_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_sort = {"particle_sort", sort_cpu, WFP_CUDA(wfp_sort_cuda), 0};
const wf_kernel wfp_cells = {"particle_cells", cells_cpu, WFP_CUDA(wfp_cells_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_scan = {"particle_scan", scan_cpu, WFP_CUDA(wfp_scan_cuda), 0};
const wf_kernel wfp_scatter = {"particle_scatter", scatter_cpu, WFP_CUDA(wfp_scatter_cuda),
                               WF_GRAIN_LIGHT};
const wf_kernel wfp_place = {"particle_place", place_cpu, WFP_CUDA(wfp_place_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_contacts_dem = {"particle_collide_dem", collide_dem_cpu,
                                    WFP_CUDA(wfp_collide_dem_cuda), WF_GRAIN_HEAVY};
const wf_kernel wfp_contacts_xpbd = {"particle_collide_xpbd", collide_xpbd_cpu,
                                     WFP_CUDA(wfp_collide_xpbd_cuda), WF_GRAIN_HEAVY};
const wf_kernel wfp_frame = {"particle_frame", frame_cpu, WFP_CUDA(wfp_frame_cuda), 0};
const wf_kernel wfp_frame_begin = {"particle_frame_begin", frame_begin_cpu,
                                   WFP_CUDA(wfp_frame_begin_cuda), 0};
const wf_kernel wfp_stamp = {"particle_stamp", stamp_cpu, WFP_CUDA(wfp_stamp_cuda), 0};
const wf_kernel wfp_halo_pack = {"particle_halo_pack", halo_pack_cpu, WFP_CUDA(wfp_halo_pack_cuda),
                                 WF_GRAIN_LIGHT};
const wf_kernel wfp_halo_unpack = {"particle_halo_unpack", halo_unpack_cpu,
                                   WFP_CUDA(wfp_halo_unpack_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_halo_unpack_keys = {"particle_halo_unpack_keys", halo_unpack_keys_cpu,
                                        WFP_CUDA(wfp_halo_unpack_keys_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_classify = {"particle_classify", classify_cpu, WFP_CUDA(wfp_classify_cuda),
                                WF_GRAIN_LIGHT};
const wf_kernel wfp_select = {"particle_select", select_cpu, WFP_CUDA(wfp_select_cuda), 0};
const wf_kernel wfp_migrate_pack = {"particle_migrate_pack", migrate_pack_cpu,
                                    WFP_CUDA(wfp_migrate_pack_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_migrate_keys = {"particle_migrate_keys", migrate_keys_cpu,
                                    WFP_CUDA(wfp_migrate_keys_cuda), WF_GRAIN_LIGHT};
const wf_kernel wfp_migrate = {"particle_migrate", migrate_cpu, WFP_CUDA(wfp_migrate_cuda),
                               WF_GRAIN_LIGHT};

uint32_t wfp_frame_blocks(wf_device *dev, bool xpbd) {
#ifdef WEFT_HAVE_CUDA
  wf_device_info info;
  if (wf_device_is_cuda(dev) && wf_device_info_get(dev, &info) == WF_OK)
    return wfp_frame_blocks_cuda(info.ordinal, info.multiprocessors, xpbd ? 1 : 0);
#endif
  (void)dev, (void)xpbd;
  return 0;
}

size_t wfp_scan_temp_bytes(wf_device *dev, uint32_t n) {
#ifdef WEFT_HAVE_CUDA
  if (wf_device_is_cuda(dev)) return wfp_scan_temp_bytes_cuda(n);
#endif
  (void)dev, (void)n;
  return 0;
}
