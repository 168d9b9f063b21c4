/* The solvers' tuning knobs from the environment (tuning_env.h). */
#include "tuning_env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The variable's value, or NULL when it is unset or empty. */
static const char *env(const char *var) {
  const char *v = getenv(var);
  return v && *v ? v : NULL;
}

static int bad(const char *bench, const char *var, const char *v, const char *want) {
  fprintf(stderr, "weft bench %s: %s='%s' is not %s\n", bench, var, v, want);
  return 2;
}

/* A whole decimal number (the sign allowed) into *out. */
static int number(const char *v, long *out) {
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < INT_MIN || n > INT_MAX) return 0;
  *out = n;
  return 1;
}

/* A uint32_t field from a number (a negative one becomes UINT32_MAX: out of every range). */
static uint32_t as_u32(long n) { return n < 0 ? UINT32_MAX : (uint32_t)n; }

/* "0" -> OFF, "1" -> ON (a WF_CLOTH_TUNE_* switch); else 2 after printing why. */
static int on_off(const char *bench, const char *var, int *field) {
  const char *v = env(var);
  if (!v) return 0;
  if (strcmp(v, "0") && strcmp(v, "1")) return bad(bench, var, v, "0 or 1");
  *field = v[0] == '1' ? WF_CLOTH_TUNE_ON : WF_CLOTH_TUNE_OFF;
  return 0;
}

/* A numeric field; else 2 after printing why. */
static int count(const char *bench, const char *var, uint32_t *field) {
  const char *v = env(var);
  long n;
  if (!v) return 0;
  if (!number(v, &n)) return bad(bench, var, v, "a number");
  *field = as_u32(n);
  return 0;
}

int bench_cloth_tuning_env(const char *bench, wf_cloth_tuning *t) {
  const char *v;
  if ((v = env("WEFT_CLOTH_FAST"))) {
    if (strcmp(v, "0") && strcmp(v, "1")) return bad(bench, "WEFT_CLOTH_FAST", v, "0 or 1");
    if (v[0] == '0') t->one_launch = WF_CLOTH_TUNE_OFF;
    if (v[0] == '1') t->resident = WF_CLOTH_TUNE_OFF;
  }
  if ((v = env("WEFT_CLOTH_BARRIER"))) {
    if (strcmp(v, "grid")) return bad(bench, "WEFT_CLOTH_BARRIER", v, "grid");
    t->grid_sync = WF_CLOTH_TUNE_ON;
  }
  if ((v = env("WEFT_CLOTH_TILE"))) {
    unsigned w = 0, h = 0;
    char tail = 0;
    if (!strcmp(v, "0"))
      t->tiles = WF_CLOTH_TUNE_OFF;
    else if (sscanf(v, "%ux%u%c", &w, &h, &tail) == 2)
      t->tiles = WF_CLOTH_TUNE_ON, t->tile[0] = w, t->tile[1] = h;
    else
      return bad(bench, "WEFT_CLOTH_TILE", v, "0 or <columns>x<rows>");
  }
  int rc = on_off(bench, "WEFT_CLOTH_SMEM", &t->smem);
  if (!rc) rc = count(bench, "WEFT_CLOTH_BLOCK", &t->block);
  if (!rc) rc = count(bench, "WEFT_CLOTH_LANES", &t->lanes);
  if (!rc) rc = count(bench, "WEFT_CLOTH_TILE_STEPS", &t->tile_steps);
  return rc;
}

int bench_particles_tuning_env(const char *bench, wf_particles_tuning *t) {
  const char *o = env("WEFT_PARTICLE_ONE_LAUNCH");
  if (o) {
    if (strcmp(o, "0") && strcmp(o, "1"))
      return bad(bench, "WEFT_PARTICLE_ONE_LAUNCH", o, "0 or 1");
    t->one_launch = o[0] == '1' ? 1 : -1;
  }
  const char *v = env("WEFT_PARTICLE_MINBLOCKS");
  long n;
  if (!v) return 0;
  if (!number(v, &n)) return bad(bench, "WEFT_PARTICLE_MINBLOCKS", v, "a number");
  t->contact_min_blocks = n == 0 ? -1 : (int)n;
  return 0;
}

int bench_mpi_halo_of(const char *name) {
  static const char *const names[] = {"auto", "staged", "direct"};
  for (int i = 0; name && i < 3; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

int bench_mpi_halo_env(const char *bench, int *halo) {
  const char *v = env("WEFT_MPI_HALO");
  if (!v) return 0;
  int h = bench_mpi_halo_of(v);
  if (h < 0) return bad(bench, "WEFT_MPI_HALO", v, "auto, staged or direct");
  *halo = h;
  return 0;
}
