/* Scene files: JSON text -> (overrides) -> validated wf_scene, and back to canonical JSON.
 *
 * Flow of wf_scene_parse: a strict syntax check (scene_text.c) that names what was expected at
 * which line:column; cJSON builds the tree; `--set` overrides edit the tree; then each section is
 * read by a small reader that checks every key against the keys valid at that place (unknown ones
 * get a did-you-mean), reads each value with its type and range, fills defaults, and finally the
 * cross-references (material names, collider names, pins against vertex counts) and unique names
 * are checked. Errors are collected (up to WF_SCENE_MAX_ERRORS) and reading goes on with defaults
 * so that one run reports as much as it can.
 *
 * Invariants: a returned wf_scene is complete (every field set, every index valid); on any error
 * nothing is returned and everything allocated is freed. Most plain keys are described once, in
 * the `field` tables below, which drive both reading and printing, so the canonical JSON of
 * wf_scene_to_json holds exactly what the reader reads: parse(to_json(s)) equals s. Numbers are
 * printed with the fewest digits that read back to the same double.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "emit.h"
#include "internal/error.h"
#include "scene_internal.h"
#include "weft/cloth.h"

static _Thread_local char tls_errors[WF_SCENE_MAX_ERRORS * (WFS_MSG_MAX + 1) + 64];

const char *wf_scene_errors(void) { return tls_errors; }

/* ---- field tables ------------------------------------------------------------------------------
 */

typedef enum fkind { F_NUM, F_INT, F_U53, F_BOOL, F_VEC2, F_VEC3, F_IVEC2 } fkind;
enum { LO_OPEN = 1, HI_OPEN = 2, NONZERO = 4 };
/* ranges: lo, hi, flags */
#define ANY     -INFINITY, INFINITY, 0
#define ANY_NZ  -INFINITY, INFINITY, NONZERO
#define GE0     0.0, INFINITY, 0
#define GT0     0.0, INFINITY, LO_OPEN
#define MAX_U53 9007199254740992.0

typedef struct field {
  const char *key;
  fkind kind;
  size_t off;
  double def[3]; /* NAN: computed after reading (e.g. spacing = 2 * radius) */
  double lo, hi;
  unsigned flags;
  unsigned only; /* bit (1 << type) of the shapes/types the key applies to; 0: all */
} field;

#define SIM(m) offsetof(wf_scene_simulation, m)
static const field sim_fields[] = {
    {"fps", F_NUM, SIM(fps), {60}, GT0, 0},
    {"substeps", F_INT, SIM(substeps), {64}, 1, 4096, 0, 0},
    {"frames", F_INT, SIM(frames), {240}, 1, 1e9, 0, 0},
    {"gravity", F_VEC3, SIM(gravity), {0, -9.81, 0}, ANY, 0},
    {"damping", F_NUM, SIM(damping), {0}, GE0, 0},
    {"deterministic", F_BOOL, SIM(deterministic), {0}, ANY, 0},
    {"seed", F_U53, SIM(seed), {0}, 0, MAX_U53, 0, 0},
    {"max_speed", F_NUM, SIM(max_speed), {0}, GE0, 0},
    {"max_penetration", F_NUM, SIM(max_penetration), {0}, GE0, 0},
    {"coupling", F_BOOL, SIM(coupling), {1}, ANY, 0},
    {"cloth_collision", F_BOOL, SIM(cloth_collision), {0}, ANY, 0},
};
#define MAT(m) offsetof(wf_scene_material, m)
static const field material_fields[] = {
    {"stiffness", F_NUM, MAT(stiffness), {1e4}, GT0, 0},
    {"damping", F_NUM, MAT(damping), {0}, GE0, 0},
    {"restitution", F_NUM, MAT(restitution), {0.5}, 0, 1, 0, 0},
    {"friction", F_NUM, MAT(friction), {0.5}, GE0, 0},
    {"tangential", F_NUM, MAT(tangential), {0}, GE0, 0},
    {"cohesion", F_NUM, MAT(cohesion), {0}, GE0, 0},
    {"static_friction", F_NUM, MAT(static_friction), {0}, GE0, 0},
    {"rolling_friction", F_NUM, MAT(rolling_friction), {0.01}, GE0, 0},
    {"young", F_NUM, MAT(young), {5e7}, GT0, 0},
    {"poisson", F_NUM, MAT(poisson), {0.25}, 0, 0.49, 0, 0},
    {"tangential_ratio", F_NUM, MAT(tangential_ratio), {0}, GE0, 0},
};
#define EMI(m)      offsetof(wf_scene_emitter, m)
#define BOX_ONLY    (1u << WF_SCENE_SHAPE_BOX)
#define SPHERE_ONLY (1u << WF_SCENE_SHAPE_SPHERE)
#define CYL_ONLY    (1u << WF_SCENE_SHAPE_CYLINDER)
#define REGIONS     (BOX_ONLY | SPHERE_ONLY | CYL_ONLY)
#define DISC_ONLY   (1u << WF_SCENE_SHAPE_DISC)
#define RECT_ONLY   (1u << WF_SCENE_SHAPE_RECTANGLE)
#define RING_ONLY   (1u << WF_SCENE_SHAPE_ANNULUS)
#define INLETS      (DISC_ONLY | RECT_ONLY | RING_ONLY)
static const field emitter_fields[] = {
    {"center", F_VEC3, EMI(center), {0, 1, 0}, ANY, REGIONS | INLETS},
    {"disc_radius", F_NUM, EMI(disc_radius), {0.1}, GT0, DISC_ONLY | RING_ONLY},
    {"inner_radius", F_NUM, EMI(inner_radius), {0.05}, GT0, RING_ONLY},
    {"inlet_size", F_VEC2, EMI(inlet_size), {0.2, 0.2}, GT0, RECT_ONLY},
    {"rate", F_NUM, EMI(rate), {100}, GT0, INLETS},
    {"start", F_NUM, EMI(start), {0}, GE0, INLETS},
    {"end", F_NUM, EMI(end), {1}, GT0, INLETS},
    {"half_extents", F_VEC3, EMI(half_extents), {0.5, 0.5, 0.5}, GT0, BOX_ONLY},
    {"sphere_radius", F_NUM, EMI(sphere_radius), {0.5}, GT0, SPHERE_ONLY},
    {"cylinder_radius", F_NUM, EMI(cylinder_radius), {0.5}, GT0, CYL_ONLY},
    {"height", F_NUM, EMI(height), {1}, GT0, CYL_ONLY},
    {"radius", F_NUM, EMI(radius), {0.05}, GT0, 0},
    {"seed", F_U53, EMI(seed), {0}, 0, MAX_U53, 0, REGIONS | INLETS},
    {"velocity", F_VEC3, EMI(velocity), {0}, ANY, 0},
    {"density", F_NUM, EMI(density), {1000}, GT0, 0},
    {"mass", F_NUM, EMI(mass), {0}, GE0, 0},
    {"kinematic", F_BOOL, EMI(kinematic), {0}, ANY, 0},
};
/* Keys of one packing (read with the packing as the type; a file emitter has none of them). */
static const field packing_fields[] = {
    {"spacing", F_NUM, EMI(spacing), {NAN}, GT0, 1u << WF_SCENE_PACK_LATTICE},
    {"jitter", F_NUM, EMI(jitter), {0}, GE0, 1u << WF_SCENE_PACK_LATTICE},
    {"packing_fraction",
     F_NUM,
     EMI(packing_fraction),
     {0.3},
     0,
     WF_SCENE_RANDOM_PACKING_MAX,
     LO_OPEN,
     1u << WF_SCENE_PACK_RANDOM},
};
/* Keys of a radius distribution (read with the distribution as the type). */
#define SPREAD ((1u << WF_SCENE_RADII_UNIFORM) | (1u << WF_SCENE_RADII_LOGNORMAL))
static const field radii_fields[] = {
    {"radius_min", F_NUM, EMI(radius_min), {NAN}, GT0, SPREAD},
    {"radius_max", F_NUM, EMI(radius_max), {NAN}, GT0, SPREAD},
    {"radius_sigma", F_NUM, EMI(radius_sigma), {0.1}, GT0, 1u << WF_SCENE_RADII_LOGNORMAL},
};
#define CLO(m) offsetof(wf_scene_cloth, m)
static const field cloth_fields[] = {
    {"center", F_VEC3, CLO(center), {0, 1, 0}, ANY, 0},
    {"rotation", F_VEC3, CLO(rotation), {0}, -3600, 3600, 0, 0},
    {"iterations", F_INT, CLO(iterations), {4}, 1, 1000, 0, 0},
    {"self_collision", F_BOOL, CLO(self_collision), {0}, ANY, 0},
    {"contact", F_BOOL, CLO(contact), {0}, ANY, 0},
    {"contact_static_friction", F_NUM, CLO(contact_static_friction), {0.5}, GE0, 0},
    {"contact_dynamic_friction", F_NUM, CLO(contact_dynamic_friction), {0.4}, GE0, 0},
};
static const field grid_fields[] = {
    {"size", F_VEC2, CLO(size), {1, 1}, GT0, 0},
    {"resolution", F_IVEC2, CLO(resolution), {32, 32}, 2, 4096, 0, 0},
};
#define CMAT(m) offsetof(wf_scene_cloth_material, m)
static const field cloth_material_fields[] = {
    {"density", F_NUM, CMAT(density), {NAN}, GT0, 0},
    {"mass", F_NUM, CMAT(mass), {0}, GE0, 0},
    {"thickness", F_NUM, CMAT(thickness), {0.005}, GE0, 0},
    {"stretch_modulus", F_NUM, CMAT(stretch_modulus), {NAN}, GE0, 0},
    {"shear_modulus", F_NUM, CMAT(shear_modulus), {NAN}, GE0, 0},
    {"bend_rigidity", F_NUM, CMAT(bend_rigidity), {NAN}, GE0, 0},
    {"damping_time", F_NUM, CMAT(damping_time), {NAN}, GE0, 0},
    {"friction", F_NUM, CMAT(friction), {NAN}, GE0, 0},
};
/* Keys of cloth materials before they were physical (per-spring stiffness or compliance, whose
 * meaning changed with the mesh): each is refused, naming its replacement. */
static const struct {
  const char *key, *use;
} cloth_material_removed[] = {
    {"stretch", "stretch_modulus (N/m)"},
    {"shear", "shear_modulus (N/m)"},
    {"bend", "bend_rigidity (N·m)"},
    {"damping", "damping_time (s)"},
};
#define COL(m)    offsetof(wf_scene_collider, m)
#define T_PLANE   (1u << WF_SCENE_PLANE)
#define T_SPHERE  (1u << WF_SCENE_SPHERE)
#define T_BOX     (1u << WF_SCENE_BOX)
#define T_CAPSULE (1u << WF_SCENE_CAPSULE)
#define T_MESH    (1u << WF_SCENE_MESH)
static const field collider_fields[] = {
    {"normal", F_VEC3, COL(normal), {0, 1, 0}, ANY_NZ, T_PLANE},
    {"offset", F_NUM, COL(offset), {0}, ANY, T_PLANE},
    {"center", F_VEC3, COL(center), {0, 0, 0}, ANY, T_SPHERE | T_BOX},
    {"radius", F_NUM, COL(radius), {0.5}, GT0, T_SPHERE | T_CAPSULE},
    {"half_extents", F_VEC3, COL(half_extents), {0.5, 0.5, 0.5}, GT0, T_BOX},
    {"p0", F_VEC3, COL(p0), {0, 0, 0}, ANY, T_CAPSULE},
    {"p1", F_VEC3, COL(p1), {0, 1, 0}, ANY, T_CAPSULE},
    {"velocity", F_VEC3, COL(velocity), {0}, ANY, 0},
    {"friction", F_NUM, COL(friction), {0.5}, GE0, 0},
    {"restitution", F_NUM, COL(restitution), {0.5}, 0, 1, 0, 0},
    {"stiffness", F_NUM, COL(stiffness), {0}, GE0, 0},
    {"scale", F_NUM, COL(scale), {1}, GT0, T_MESH},
    {"thickness", F_NUM, COL(thickness), {0}, GE0, T_MESH},
    {"pivot", F_VEC3, COL(pivot), {0, 0, 0}, ANY, 0},
    {"rotation_axis", F_VEC3, COL(rotation_axis), {0, 0, 1}, ANY_NZ, 0},
    {"rotation_rate", F_NUM, COL(rotation_rate), {0}, ANY, 0},
    {"active_from", F_NUM, COL(active_from), {0}, ANY, 0},
};
#define KEY(m) offsetof(scene_key, m)
typedef struct scene_key { /* a keyframe as read */
  double time, position[3], axis[3], angle;
} scene_key;
static const field key_fields[] = {
    {"time", F_NUM, KEY(time), {0}, ANY, 0},
    {"position", F_VEC3, KEY(position), {0, 0, 0}, ANY, 0},
    {"axis", F_VEC3, KEY(axis), {0, 0, 1}, ANY_NZ, 0},
    {"angle", F_NUM, KEY(angle), {0}, ANY, 0},
};
#define FOR(m) offsetof(wf_scene_forces, m)
static const field forces_fields[] = {
    {"drag", F_NUM, FOR(drag), {1}, GE0, 0},
    {"lift", F_NUM, FOR(lift), {0}, GE0, 0},
    {"air_density", F_NUM, FOR(air_density), {1.2}, GT0, 0},
};
static const field wind_fields[] = {
    {"velocity", F_VEC3, FOR(wind), {0}, ANY, 0},
    {"gust_amplitude", F_NUM, FOR(gust_amplitude), {0}, GE0, 0},
    {"gust_frequency", F_NUM, FOR(gust_frequency), {0}, GE0, 0},
};
#define OUT(m) offsetof(wf_scene_outputs, m)
static const field outputs_fields[] = {
    {"every", F_INT, OUT(every), {1}, 1, 1e9, 0, 0},
    {"checkpoint_every", F_INT, OUT(checkpoint_every), {0}, 0, 1e9, 0, 0},
};
#define CAM(m) offsetof(wf_scene_camera, m)
static const field camera_fields[] = {
    {"position", F_VEC3, CAM(position), {0, 1.5, 4}, ANY, 0},
    {"target", F_VEC3, CAM(target), {0, 0.5, 0}, ANY, 0},
    {"up", F_VEC3, CAM(up), {0, 1, 0}, ANY_NZ, 0},
    {"fov_deg", F_NUM, CAM(fov_deg), {45}, 0, 180, LO_OPEN | HI_OPEN, 0},
};
#define LIG(m) offsetof(wf_scene_light, m)
static const field light_fields[] = {
    {"color", F_VEC3, LIG(color), {1, 1, 1}, 0, 1, 0, 0},
    {"intensity", F_NUM, LIG(intensity), {1}, GE0, 0},
};
#define REN(m) offsetof(wf_scene_render, m)
static const field render_fields[] = {
    {"width", F_INT, REN(width), {1280}, 1, 16384, 0, 0},
    {"height", F_INT, REN(height), {720}, 1, 16384, 0, 0},
    {"background", F_VEC3, REN(background), {0.1, 0.1, 0.12}, 0, 1, 0, 0},
    {"speed_max", F_NUM, REN(speed_max), {0}, GE0, 0},
    {"strain_max", F_NUM, REN(strain_max), {0}, GE0, 0},
    {"force_max", F_NUM, REN(force_max), {0}, GE0, 0},
    {"shadows", F_BOOL, REN(shadows), {1}, ANY, 0},
};
#define NF(t) ((int)(sizeof(t) / sizeof((t)[0])))

static const char *const contact_names[] = {"dem", "xpbd", "hertz"};
static const char *const shape_names[] = {"box",  "sphere",    "cylinder", "file",
                                          "disc", "rectangle", "annulus"};
static const char *const packing_names[] = {"lattice", "random"};
static const char *const radii_names[] = {"fixed", "uniform", "lognormal"};
static const char *const integrator_names[] = {"xpbd", "spring"};
static const char *const collider_names[] = {"plane", "sphere", "box", "capsule", "mesh"};
static const char *const color_names[] = {"object", "speed", "strain", "contact_force"};
static const char *const format_names[] = {"ply", "vtk", "csv", "png", "checkpoint", "usd"};
static const char *const up_axis_names[] = {"y", "z"};
static const char *const pin_names[] = {"top-left", "top-right", "bottom-left", "bottom-right",
                                        "top",      "bottom",    "left",        "right"};
/* accepted spellings of the edges */
static const char *const pin_aliases[] = {"top-edge", "bottom-edge", "left-edge", "right-edge"};

static const char *const top_keys[] = {"description", "simulation", "materials", "particles",
                                       "cloths",      "colliders",  "forces",    "outputs",
                                       "camera",      "lights",     "render"};

/* ---- reading context ----------------------------------------------------------------------------
 */

typedef struct ctx {
  wfs_errors *err;
  const char *base_dir;
  wf_scene *scene;
  int oom;
} ctx;

/* dst = a + b + c, cut to fit (paths in messages may be shortened, never overflow). */
static void join3(char *dst, size_t n, const char *a, const char *b, const char *c) {
  const char *parts[3] = {a, b, c};
  size_t k = 0;
  for (int i = 0; i < 3; i++)
    for (const char *p = parts[i]; *p && k + 1 < n; p++)
      dst[k++] = *p;
  dst[k] = '\0';
}

static void path_key(char *dst, size_t n, const char *path, const char *key) {
  char q[48];
  wfs_quote(q, sizeof q, key);
  join3(dst, n, path, path[0] ? "." : "", q);
}
static void path_index(char *dst, size_t n, const char *path, int i) {
  char b[16];
  snprintf(b, sizeof b, "[%d]", i);
  join3(dst, n, path, b, "");
}

static void describe(const cJSON *v, char *b, size_t n) {
  char q[48];
  if (!v)
    snprintf(b, n, "nothing");
  else if (cJSON_IsNumber(v))
    snprintf(b, n, "%g", v->valuedouble);
  else if (cJSON_IsString(v))
    wfs_quote(q, sizeof q, v->valuestring), snprintf(b, n, "\"%s\"", q);
  else if (cJSON_IsTrue(v))
    snprintf(b, n, "true");
  else if (cJSON_IsFalse(v))
    snprintf(b, n, "false");
  else if (cJSON_IsNull(v))
    snprintf(b, n, "null");
  else if (cJSON_IsArray(v))
    snprintf(b, n, "an array");
  else
    snprintf(b, n, "an object");
}

static void type_error(ctx *c, const char *path, const char *expected, const cJSON *v) {
  char d[64];
  describe(v, d, sizeof d);
  wfs_error(c->err, path, "expected %s, got %s", expected, d);
}

/* Lists the candidate words "a, b, c" for messages. */
static void list_words(char *b, size_t n, const char *const *w, int count) {
  size_t used = 0;
  b[0] = '\0';
  for (int i = 0; i < count && used < n; i++) {
    int k = snprintf(b + used, n - used, "%s%s", i ? ", " : "", w[i]);
    if (k < 0) break;
    used += (size_t)k;
  }
}

/* Checks that obj has only the given keys (plus the table's), each at most once. */
static void check_keys(ctx *c, const cJSON *obj, const char *path, const char *const *extra,
                       int n_extra, const field *t, int nt) {
  const char *keys[40];
  int n = 0;
  for (int i = 0; i < n_extra && n < 40; i++)
    keys[n++] = extra[i];
  for (int i = 0; i < nt && n < 40; i++)
    keys[n++] = t[i].key;
  for (const cJSON *it = obj->child; it && !wfs_full(c->err); it = it->next) {
    const char *k = it->string ? it->string : "";
    char p[300];
    path_key(p, sizeof p, path, k);
    int known = 0;
    for (int i = 0; i < n && !known; i++)
      known = strcmp(k, keys[i]) == 0;
    if (!known) {
      const char *s = wfs_suggest(k, keys, n);
      char list[256];
      list_words(list, sizeof list, keys, n);
      if (s)
        wfs_error(c->err, p, "unknown key (did you mean '%s'?)", s);
      else
        wfs_error(c->err, p, "unknown key (valid keys here: %s)", list);
      continue;
    }
    for (const cJSON *prev = obj->child; prev != it; prev = prev->next)
      if (prev->string && strcmp(prev->string, k) == 0) {
        wfs_error(c->err, p, "the key is given twice");
        break;
      }
  }
}

static const cJSON *get(const cJSON *obj, const char *key) {
  return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

static int in_range(const field *f, double v) {
  if (f->flags & LO_OPEN ? !(v > f->lo) : !(v >= f->lo)) return 0;
  if (f->flags & HI_OPEN ? !(v < f->hi) : !(v <= f->hi)) return 0;
  return 1;
}

static void range_text(const field *f, int integer, char *b, size_t n) {
  const char *what = integer ? "an integer" : "a number";
  int lo = isfinite(f->lo), hi = isfinite(f->hi);
  if (lo && hi)
    snprintf(b, n, "%s in %c%g, %g%c", what, f->flags & LO_OPEN ? '(' : '[', f->lo, f->hi,
             f->flags & HI_OPEN ? ')' : ']');
  else if (lo)
    snprintf(b, n, "%s %s %g", what, f->flags & LO_OPEN ? ">" : ">=", f->lo);
  else
    snprintf(b, n, "%s", what);
}

/* Reads one number of a field (or one element of a vector field). */
static int read_number(ctx *c, const field *f, const cJSON *v, const char *path, int integer,
                       double *out) {
  char want[96];
  range_text(f, integer, want, sizeof want);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
    type_error(c, path, want, v);
    return 0;
  }
  double x = v->valuedouble;
  if (!in_range(f, x) || (integer && x != floor(x))) {
    type_error(c, path, want, v);
    return 0;
  }
  *out = x;
  return 1;
}

static void write_default(const field *f, void *base) {
  char *p = (char *)base + f->off;
  switch (f->kind) {
  case F_NUM: *(double *)p = f->def[0]; break;
  case F_INT: *(int *)p = (int)f->def[0]; break;
  case F_U53: *(uint64_t *)p = (uint64_t)f->def[0]; break;
  case F_BOOL: *(bool *)p = f->def[0] != 0; break;
  case F_VEC2: memcpy(p, f->def, 2 * sizeof(double)); break;
  case F_VEC3: memcpy(p, f->def, 3 * sizeof(double)); break;
  case F_IVEC2: ((int *)p)[0] = (int)f->def[0], ((int *)p)[1] = (int)f->def[1]; break;
  }
}

static void read_field(ctx *c, const cJSON *obj, const char *path, const field *f, void *base) {
  const cJSON *v = get(obj, f->key);
  char *p = (char *)base + f->off;
  char fp[300];
  write_default(f, base);
  if (!v) return;
  path_key(fp, sizeof fp, path, f->key);
  double x;
  switch (f->kind) {
  case F_NUM:
    if (read_number(c, f, v, fp, 0, &x)) *(double *)p = x;
    return;
  case F_INT:
    if (read_number(c, f, v, fp, 1, &x)) *(int *)p = (int)x;
    return;
  case F_U53:
    if (read_number(c, f, v, fp, 1, &x)) *(uint64_t *)p = (uint64_t)x;
    return;
  case F_BOOL:
    if (cJSON_IsBool(v))
      *(bool *)p = cJSON_IsTrue(v);
    else
      type_error(c, fp, "true or false", v);
    return;
  case F_VEC2:
  case F_VEC3:
  case F_IVEC2: {
    int n = f->kind == F_VEC3 ? 3 : 2, integer = f->kind == F_IVEC2;
    char want[64];
    snprintf(want, sizeof want, "an array of %d %s", n, integer ? "integers" : "numbers");
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n) {
      type_error(c, fp, want, v);
      return;
    }
    double vals[3] = {0, 0, 0};
    int ok = 1, i = 0;
    for (const cJSON *e = v->child; e && i < n; e = e->next, i++) {
      char ep[320];
      path_index(ep, sizeof ep, fp, i);
      ok &= read_number(c, f, e, ep, integer, &vals[i]);
    }
    if (!ok) return;
    if ((f->flags & NONZERO) && vals[0] == 0 && vals[1] == 0 && vals[2] == 0) {
      wfs_error(c->err, fp, "expected a non-zero vector, got [0, 0, 0]");
      return;
    }
    if (integer)
      ((int *)p)[0] = (int)vals[0], ((int *)p)[1] = (int)vals[1];
    else
      memcpy(p, vals, (size_t)n * sizeof(double));
    return;
  }
  }
}

/* Reads the fields of a table that apply to `type` (bit index; -1: all); present keys that do not
 * apply are errors. */
static void read_fields(ctx *c, const cJSON *obj, const char *path, const field *t, int n,
                        void *base, int type, const char *const *type_names, const char *what) {
  for (int i = 0; i < n; i++) {
    if (type >= 0 && t[i].only && !(t[i].only & (1u << type))) {
      write_default(&t[i], base);
      if (get(obj, t[i].key)) {
        char fp[300];
        path_key(fp, sizeof fp, path, t[i].key);
        wfs_error(c->err, fp, "does not apply to a %s %s", type_names[type], what);
      }
      continue;
    }
    read_field(c, obj, path, &t[i], base);
  }
}

/* A string out of a fixed set; returns its index, or def when absent or wrong. */
static int read_enum(ctx *c, const cJSON *obj, const char *path, const char *key,
                     const char *const *names, int n, int def) {
  const cJSON *v = get(obj, key);
  if (!v) return def;
  char fp[300], list[160], want[200];
  path_key(fp, sizeof fp, path, key);
  list_words(list, sizeof list, names, n);
  snprintf(want, sizeof want, "one of %s", list);
  if (!cJSON_IsString(v)) {
    type_error(c, fp, want, v);
    return def;
  }
  for (int i = 0; i < n; i++)
    if (strcmp(v->valuestring, names[i]) == 0) return i;
  const char *s = wfs_suggest(v->valuestring, names, n);
  char q[48];
  wfs_quote(q, sizeof q, v->valuestring);
  if (s)
    wfs_error(c->err, fp, "unknown value \"%s\" (did you mean '%s'?)", q, s);
  else
    wfs_error(c->err, fp, "expected %s, got \"%s\"", want, q);
  return def;
}

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= WF_SCENE_NAME_MAX || s[0] == '.') return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '-' || *s == '.'))
      return 0;
  return 1;
}

static void read_name(ctx *c, const cJSON *obj, const char *path, const char *prefix, int index,
                      char out[WF_SCENE_NAME_MAX]) {
  const cJSON *v = get(obj, "name");
  snprintf(out, WF_SCENE_NAME_MAX, "%s%d", prefix, index);
  if (!v) return;
  char fp[300];
  path_key(fp, sizeof fp, path, "name");
  if (!cJSON_IsString(v) || !valid_name(v->valuestring)) {
    type_error(c, fp, "a name of 1 to 63 characters from A-Z a-z 0-9 _ - . (not starting with '.')",
               v);
    return;
  }
  snprintf(out, WF_SCENE_NAME_MAX, "%s", v->valuestring);
}

/* An optional section that must be an object; NULL when absent or of the wrong type. */
static const cJSON *section(ctx *c, const cJSON *obj, const char *path, const char *key,
                            int want_array) {
  const cJSON *v = get(obj, key);
  if (!v) return NULL;
  if (want_array ? cJSON_IsArray(v) : cJSON_IsObject(v)) return v;
  char fp[300];
  path_key(fp, sizeof fp, path, key);
  type_error(c, fp, want_array ? "an array" : "an object", v);
  return NULL;
}

/* An array section: checks its length and allocates `size`-byte elements; NULL when empty. */
static void *list_alloc(ctx *c, const cJSON *arr, const char *key, size_t size, int *count) {
  int n = arr ? cJSON_GetArraySize(arr) : 0;
  *count = 0;
  if (n == 0) return NULL;
  if (n > WF_SCENE_MAX_OBJECTS) {
    wfs_error(c->err, key, "%d elements; at most %d are allowed", n, WF_SCENE_MAX_OBJECTS);
    return NULL;
  }
  void *p = calloc((size_t)n, size);
  if (!p) {
    c->oom = 1;
    return NULL;
  }
  *count = n;
  return p;
}

/* ---- sections
 * ------------------------------------------------------------------------------------ */

static int device_name_ok(const char *s) {
  const char *rest = NULL;
  if (strcmp(s, "cpu") == 0 || strcmp(s, "cuda") == 0 || strcmp(s, "all") == 0) return 1;
  if (strncmp(s, "cpu:", 4) == 0) rest = s + 4;
  if (strncmp(s, "cuda:", 5) == 0) rest = s + 5;
  if (!rest || !rest[0] || strlen(rest) > 2) return 0;
  for (const char *p = rest; *p; p++)
    if (*p < '0' || *p > '9') return 0;
  return rest[0] != '0' || rest[1] == '\0';
}

static void read_devices(ctx *c, const cJSON *sim, wf_scene_simulation *s) {
  const cJSON *v = get(sim, "devices");
  s->device_count = 0;
  if (!v) return;
  const char *fp = "simulation.devices";
  const char *want =
      "\"auto\", \"all\", \"cpu\", \"cpu:N\", \"cuda\", \"cuda:N\" or an array of these";
  if (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0) return;
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
  if (!cJSON_IsString(v) && !cJSON_IsArray(v)) {
    type_error(c, fp, want, v);
    return;
  }
  if (n == 0 || n > WF_SCENE_MAX_DEVICES) {
    wfs_error(c->err, fp, "expected 1 to %d devices, got %d", WF_SCENE_MAX_DEVICES, n);
    return;
  }
  int i = 0;
  for (const cJSON *e = cJSON_IsArray(v) ? v->child : v; e && i < n; e = e->next, i++) {
    char ep[64];
    if (cJSON_IsArray(v))
      path_index(ep, sizeof ep, fp, i);
    else
      snprintf(ep, sizeof ep, "%s", fp);
    if (!cJSON_IsString(e) || !device_name_ok(e->valuestring)) {
      type_error(c, ep, want, e);
      continue;
    }
    if (strcmp(e->valuestring, "all") == 0 && n > 1) {
      wfs_error(c->err, ep, "\"all\" cannot be combined with other devices");
      continue;
    }
    for (int k = 0; k < s->device_count; k++)
      if (strcmp(s->devices[k], e->valuestring) == 0) {
        wfs_error(c->err, ep, "device \"%s\" is listed twice", e->valuestring);
        break;
      }
    snprintf(s->devices[s->device_count++], sizeof s->devices[0], "%s", e->valuestring);
  }
}

/* simulation.stop_when: one rule {"time": s} | {"kinetic_energy_below": J, "frames": n} |
 * {"max_speed_below": m/s, "frames": n}, or a list of them (the first met stops the run). */
static const char *const stop_keys[] = {"time", "kinetic_energy_below", "max_speed_below"};
static void read_stop_rules(ctx *c, const cJSON *sim, wf_scene_simulation *s) {
  const cJSON *v = get(sim, "stop_when");
  s->stop_count = 0;
  if (!v) return;
  const char *fp = "simulation.stop_when";
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 1;
  if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) {
    type_error(c, fp,
               "a rule {\"time\" | \"kinetic_energy_below\" | \"max_speed_below\": ...} or "
               "an array of rules",
               v);
    return;
  }
  if (n > WF_SCENE_MAX_STOP_RULES) {
    wfs_error(c->err, fp, "expected at most %d rules, got %d", WF_SCENE_MAX_STOP_RULES, n);
    return;
  }
  static const field value_field = {"value", F_NUM, 0, {0}, GT0, 0};
  static const field frames_field = {"frames", F_INT, 0, {1}, 1, 1e9, 0, 0};
  int i = 0;
  for (const cJSON *e = cJSON_IsArray(v) ? v->child : v; e; e = e->next, i++) {
    char ep[64], kp[120];
    if (cJSON_IsArray(v))
      path_index(ep, sizeof ep, fp, i);
    else
      snprintf(ep, sizeof ep, "%s", fp);
    if (!cJSON_IsObject(e)) {
      type_error(c, ep, "a rule {\"time\" | \"kinetic_energy_below\" | \"max_speed_below\": ...}",
                 e);
      continue;
    }
    static const char *const extra[] = {"time", "kinetic_energy_below", "max_speed_below",
                                        "frames"};
    check_keys(c, e, ep, extra, NF(extra), NULL, 0);
    int kind = -1, found = 0;
    for (int k = 0; k < NF(stop_keys); k++)
      if (get(e, stop_keys[k])) kind = kind < 0 ? k : kind, found++;
    if (found != 1) {
      wfs_error(c->err, ep,
                "a rule needs exactly one of 'time', 'kinetic_energy_below', 'max_speed_below' "
                "(got %d); list several rules as an array",
                found);
      continue;
    }
    wf_scene_stop_rule *r = &s->stop_when[s->stop_count++];
    r->kind = (wf_scene_stop_kind)kind;
    r->frames = 1;
    double x;
    path_key(kp, sizeof kp, ep, stop_keys[kind]);
    if (read_number(c, &value_field, get(e, stop_keys[kind]), kp, 0, &x)) r->value = x;
    const cJSON *fr = get(e, "frames");
    path_key(kp, sizeof kp, ep, "frames");
    if (fr && kind == WF_SCENE_STOP_TIME)
      wfs_error(c->err, kp, "does not apply to a 'time' rule (it fires once, at that time)");
    else if (fr && read_number(c, &frames_field, fr, kp, 1, &x))
      r->frames = (int)x;
  }
}

static void read_simulation(ctx *c, const cJSON *root) {
  const cJSON *o = section(c, root, "", "simulation", 0);
  wf_scene_simulation *s = &c->scene->simulation;
  static const char *const extra[] = {"devices", "contact_model", "stop_when"};
  if (o) check_keys(c, o, "simulation", extra, NF(extra), sim_fields, NF(sim_fields));
  read_fields(c, o, "simulation", sim_fields, NF(sim_fields), s, -1, NULL, NULL);
  read_devices(c, o, s);
  s->contact_model = (wf_scene_contact_model)read_enum(c, o, "simulation", "contact_model",
                                                       contact_names, NF(contact_names), 0);
  read_stop_rules(c, o, s);
}

static void read_materials(ctx *c, const cJSON *root) {
  const cJSON *arr = section(c, root, "", "materials", 1);
  wf_scene *sc = c->scene;
  sc->materials = list_alloc(c, arr, "materials", sizeof *sc->materials, &sc->material_count);
  if (sc->material_count == 0) { /* the implicit default material */
    sc->materials = calloc(1, sizeof *sc->materials);
    if (!sc->materials) {
      c->oom = 1;
      return;
    }
    sc->material_count = 1;
    snprintf(sc->materials[0].name, WF_SCENE_NAME_MAX, "default");
    read_fields(c, NULL, "", material_fields, NF(material_fields), &sc->materials[0], -1, NULL,
                NULL);
    return;
  }
  static const char *const extra[] = {"name"};
  int i = 0;
  for (const cJSON *o = arr->child; o && i < sc->material_count; o = o->next, i++) {
    char p[64];
    path_index(p, sizeof p, "materials", i);
    wf_scene_material *m = &sc->materials[i];
    snprintf(m->name, sizeof m->name, "material%d", i);
    read_fields(c, NULL, p, material_fields, NF(material_fields), m, -1, NULL, NULL);
    if (!cJSON_IsObject(o)) {
      type_error(c, p, "an object", o);
      continue;
    }
    check_keys(c, o, p, extra, NF(extra), material_fields, NF(material_fields));
    read_name(c, o, p, "material", i, m->name);
    read_fields(c, o, p, material_fields, NF(material_fields), m, -1, NULL, NULL);
  }
}

static char *dup_str(ctx *c, const char *s);
static void resolve_asset(ctx *c, const char *m, char tried[2][2048], int *n_tried);

/* particles[i].file: found next to the scene (or in its parent directory), read, checked and
 * counted now, so that a bad row fails validation naming its line (engine/emit_file.c). */
static void read_particle_file(ctx *c, const cJSON *v, const char *p, wf_scene_emitter *e) {
  char fp[80];
  path_key(fp, sizeof fp, p, "file");
  if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > 1024) {
    type_error(c, fp, "a path to a .ply or .csv file", v);
    return;
  }
  char tried[2][2048], msg[700];
  int n_tried = 0, found = -1;
  resolve_asset(c, v->valuestring, tried, &n_tried);
  for (int i = 0; i < n_tried && found < 0; i++) {
    FILE *f = fopen(tried[i], "rb");
    if (f) fclose(f), found = i;
  }
  if (found < 0) {
    wfs_error(c->err, fp, "cannot read '%.200s'%s%.200s%s: %s", tried[0],
              n_tried == 2 ? " (nor '" : "", n_tried == 2 ? tried[1] : "", n_tried == 2 ? "')" : "",
              strerror(ENOENT));
    return;
  }
  uint64_t rows = 0;
  if (wfe_file_read(tried[found], NULL, &rows, msg, sizeof msg) != 0) {
    wfs_error(c->err, fp, "%s", msg);
    return;
  }
  e->file = dup_str(c, v->valuestring);
  e->file_path = dup_str(c, tried[found]);
  e->file_rows = rows;
}

/* A pour: dynamic particles entering through the inlet with a velocity across it, the window, an
 * inlet wider than the particles, and a feed (the particles per volume the inlet passes) sparse
 * enough to place its particles apart: at most 0.3 of the volume the inlet's centres sweep
 * (engine/emit.c's pour_fill places them). */
static void check_pour(ctx *c, const cJSON *o, const char *p, wf_scene_emitter *e, double rmax) {
  char kp[80];
  e->spacing = 2.0 * rmax; /* unused by a pour; set so the struct is complete */
  double speed = sqrt(e->velocity[0] * e->velocity[0] + e->velocity[1] * e->velocity[1] +
                      e->velocity[2] * e->velocity[2]);
  if (!(speed > 0)) {
    path_key(kp, sizeof kp, p, "velocity");
    wfs_error(c->err, kp,
              "an inlet pours through itself: give a non-zero velocity (m/s), "
              "perpendicular to the %s",
              shape_names[e->shape]);
    return;
  }
  if (e->kinematic) {
    path_key(kp, sizeof kp, p, "kinematic");
    wfs_error(c->err, kp, "a %s pours dynamic particles", shape_names[e->shape]);
    return;
  }
  if (!(e->end > e->start)) {
    path_key(kp, sizeof kp, p, "end");
    wfs_error(c->err, kp, "%g must be after start = %g (s)", e->end, e->start);
    return;
  }
  if (e->shape != WF_SCENE_SHAPE_RECTANGLE && !(e->disc_radius > rmax)) {
    path_key(kp, sizeof kp, p, "disc_radius");
    wfs_error(c->err, kp, "%g m is too small for particles of radius %g m", e->disc_radius, rmax);
    return;
  }
  if (e->shape == WF_SCENE_SHAPE_ANNULUS && !(e->disc_radius - e->inner_radius > 2.0 * rmax)) {
    path_key(kp, sizeof kp, p, "inner_radius");
    wfs_error(c->err, kp,
              "%g m leaves a ring of %g m up to disc_radius %g m: too narrow for particles of "
              "radius %g m (it must be wider than their diameter)",
              e->inner_radius, e->disc_radius - e->inner_radius, e->disc_radius, rmax);
    return;
  }
  if (e->shape == WF_SCENE_SHAPE_RECTANGLE &&
      !(e->inlet_size[0] > 2.0 * rmax && e->inlet_size[1] > 2.0 * rmax)) {
    path_key(kp, sizeof kp, p, "inlet_size");
    wfs_error(c->err, kp,
              "[%g, %g] m is too small for particles of radius %g m (each side must "
              "be wider than their diameter)",
              e->inlet_size[0], e->inlet_size[1], rmax);
    return;
  }
  uint64_t n = wf_scene_emitter_count(e);
  if (n == 0 || n > (1u << 30)) {
    path_key(kp, sizeof kp, p, "rate");
    wfs_error(c->err, kp, "rate x (end - start) = %g particles: a pour makes 1 to 2^30",
              e->rate * (e->end - e->start));
    return;
  }
  double r3 = rmax * rmax * rmax; /* the mean volume, from the moments of the distribution */
  if (e->radius_distribution == WF_SCENE_RADII_UNIFORM)
    r3 = (pow(e->radius_max, 4) - pow(e->radius_min, 4)) / (4.0 * (e->radius_max - e->radius_min));
  else if (e->radius_distribution == WF_SCENE_RADII_LOGNORMAL)
    r3 = pow(e->radius, 3) * exp(4.5 * e->radius_sigma * e->radius_sigma);
  else
    r3 = pow(e->radius, 3);
  double feed = e->rate * 4.0 / 3.0 * M_PI * r3 / (wfe_inlet_area(e, rmax) * speed);
  if (feed > 0.3) {
    path_key(kp, sizeof kp, p, "rate");
    wfs_error(c->err, kp,
              "%g particles/s through the %s at %g m/s fill %.2f of the volume it sweeps; at "
              "most 0.3 can be placed apart: lower rate, raise the speed or widen the %s",
              e->rate, shape_names[e->shape], speed, feed, shape_names[e->shape]);
  }
}

/* An emitter's particle count as a real number, for messages about emitters too large to
 * count in 64 bits: floor(extent / spacing) cells per axis, times the shape's share of its box. */
static double emitter_estimate(const wf_scene_emitter *e) {
  double h[3] = {e->half_extents[0], e->half_extents[1], e->half_extents[2]}, share = 1.0;
  if (e->shape == WF_SCENE_SHAPE_SPHERE)
    h[0] = h[1] = h[2] = e->sphere_radius, share = 0.5235987755982988; /* pi / 6 */
  if (e->shape == WF_SCENE_SHAPE_CYLINDER)
    h[0] = h[2] = e->cylinder_radius, h[1] = 0.5 * e->height, share = 0.7853981633974483;
  double total = share;
  for (int k = 0; k < 3; k++)
    total *= floor(2.0 * h[k] / e->spacing + 1e-6);
  return total;
}

/* Cross-field checks of a region emitter's radii, packing and count. */
static void check_emitter(ctx *c, const cJSON *o, const char *p, wf_scene_emitter *e) {
  char kp[80];
  if (e->radius_distribution == WF_SCENE_RADII_FIXED) e->radius_min = e->radius_max = e->radius;
  if (e->radius_distribution != WF_SCENE_RADII_FIXED) {
    if (e->radius_distribution == WF_SCENE_RADII_UNIFORM) {
      if (get(o, "radius")) {
        path_key(kp, sizeof kp, p, "radius");
        wfs_error(c->err, kp,
                  "does not apply to a uniform radius distribution (radius_min and "
                  "radius_max give the range)");
      }
      if (isnan(e->radius_min) || isnan(e->radius_max)) {
        wfs_error(c->err, p, "a uniform radius distribution needs radius_min and radius_max (m)");
        return;
      }
      e->radius = 0.5 * (e->radius_min + e->radius_max);
    } else {
      if (isnan(e->radius_min)) e->radius_min = e->radius * exp(-3.0 * e->radius_sigma);
      if (isnan(e->radius_max)) e->radius_max = e->radius * exp(3.0 * e->radius_sigma);
      if (!(e->radius_min < e->radius && e->radius < e->radius_max)) {
        path_key(kp, sizeof kp, p, "radius_min");
        wfs_error(c->err, kp, "the truncation [%g, %g] must hold the median radius %g",
                  e->radius_min, e->radius_max, e->radius);
        return;
      }
    }
    if (!(e->radius_min <= e->radius_max)) {
      path_key(kp, sizeof kp, p, "radius_max");
      wfs_error(c->err, kp, "%g is less than radius_min = %g", e->radius_max, e->radius_min);
      return;
    }
    if (e->mass > 0) {
      path_key(kp, sizeof kp, p, "mass");
      wfs_error(c->err, kp,
                "gives every particle one mass; with a radius distribution give "
                "density (mass = density * 4/3 pi r^3)");
      return;
    }
  }
  double rmax = e->radius_distribution == WF_SCENE_RADII_FIXED ? e->radius : e->radius_max;
  if (wfe_pours(e)) {
    check_pour(c, o, p, e, rmax);
    return;
  }
  if (e->packing == WF_SCENE_PACK_LATTICE) {
    if (isnan(e->spacing)) e->spacing = 2.0 * rmax;
    if (get(o, "spacing") && e->spacing < 2.0 * rmax * (1.0 - 1e-12)) {
      path_key(kp, sizeof kp, p, "spacing");
      wfs_error(c->err, kp, "%g is less than 2 * %s = %g: particles would overlap", e->spacing,
                e->radius_distribution == WF_SCENE_RADII_FIXED ? "radius" : "radius_max",
                2.0 * rmax);
      return;
    }
    if (!(e->jitter < 0.5 * e->spacing)) {
      path_key(kp, sizeof kp, p, "jitter");
      wfs_error(c->err, kp, "%g must be less than spacing / 2 = %g", e->jitter, 0.5 * e->spacing);
      return;
    }
  } else {
    e->spacing = 2.0 * rmax; /* unused by a random packing; set so the struct is complete */
    double h[3] = {e->half_extents[0], e->half_extents[1], e->half_extents[2]};
    if (e->shape == WF_SCENE_SHAPE_SPHERE) h[0] = h[1] = h[2] = e->sphere_radius;
    if (e->shape == WF_SCENE_SHAPE_CYLINDER)
      h[0] = h[2] = e->cylinder_radius, h[1] = 0.5 * e->height;
    if (!(h[0] > rmax && h[1] > rmax && h[2] > rmax)) {
      wfs_error(c->err, p, "the %s is too small for particles of radius %g", shape_names[e->shape],
                rmax);
      return;
    }
  }
  uint64_t n = wf_scene_emitter_count(e);
  if (n == 0)
    wfs_error(c->err, p, "the %s holds no particle at spacing %g", shape_names[e->shape],
              e->spacing);
  else if (n > (1u << 30))
    wfs_error(c->err, p, "about %.3g particles: more than the 2^30 an emitter may make",
              n == UINT64_MAX ? emitter_estimate(e) : (double)n);
}

static void read_emitters(ctx *c, const cJSON *root) {
  const cJSON *arr = section(c, root, "", "particles", 1);
  wf_scene *sc = c->scene;
  sc->emitters = list_alloc(c, arr, "particles", sizeof *sc->emitters, &sc->emitter_count);
  static const char *const extra[] = {
      "name",    "shape",  "material",         "packing",    "radius_distribution", "file",
      "spacing", "jitter", "packing_fraction", "radius_min", "radius_max",          "radius_sigma"};
  int i = 0;
  for (const cJSON *o = arr ? arr->child : NULL; o && i < sc->emitter_count; o = o->next, i++) {
    char p[64];
    path_index(p, sizeof p, "particles", i);
    wf_scene_emitter *e = &sc->emitters[i];
    snprintf(e->name, sizeof e->name, "particles%d", i);
    read_fields(c, NULL, p, emitter_fields, NF(emitter_fields), e, -1, NULL, NULL);
    read_fields(c, NULL, p, packing_fields, NF(packing_fields), e, -1, NULL, NULL);
    read_fields(c, NULL, p, radii_fields, NF(radii_fields), e, -1, NULL, NULL);
    if (!cJSON_IsObject(o)) {
      type_error(c, p, "an object", o);
      continue;
    }
    check_keys(c, o, p, extra, NF(extra), emitter_fields, NF(emitter_fields));
    read_name(c, o, p, "particles", i, e->name);
    e->shape = (wf_scene_shape)read_enum(c, o, p, "shape", shape_names, NF(shape_names), 0);
    read_fields(c, o, p, emitter_fields, NF(emitter_fields), e, (int)e->shape, shape_names,
                "emitter");
    bool file = e->shape == WF_SCENE_SHAPE_FILE;
    if (file) { /* no packing, no distribution: the file says where and how large */
      static const char *const none[] = {"packing", "radius_distribution"};
      for (int k = 0; k < 2; k++)
        if (get(o, none[k])) {
          char kp[80];
          path_key(kp, sizeof kp, p, none[k]);
          wfs_error(c->err, kp, "does not apply to a file emitter");
        }
      read_fields(c, o, p, packing_fields, NF(packing_fields), e, WF_SCENE_SHAPE_FILE, shape_names,
                  "emitter");
      read_fields(c, o, p, radii_fields, NF(radii_fields), e, WF_SCENE_SHAPE_FILE, shape_names,
                  "emitter");
    } else if (wfe_pours(e)) { /* a pour: radii, but no packing */
      if (get(o, "packing")) {
        char kp[80];
        path_key(kp, sizeof kp, p, "packing");
        wfs_error(c->err, kp, "does not apply to a %s emitter (it pours)", shape_names[e->shape]);
      }
      read_fields(c, o, p, packing_fields, NF(packing_fields), e, (int)e->shape, shape_names,
                  "emitter");
      e->radius_distribution = (wf_scene_radii)read_enum(c, o, p, "radius_distribution",
                                                         radii_names, NF(radii_names), 0);
      read_fields(c, o, p, radii_fields, NF(radii_fields), e, (int)e->radius_distribution,
                  radii_names, "radius distribution");
    } else {
      e->packing =
          (wf_scene_packing)read_enum(c, o, p, "packing", packing_names, NF(packing_names), 0);
      e->radius_distribution = (wf_scene_radii)read_enum(c, o, p, "radius_distribution",
                                                         radii_names, NF(radii_names), 0);
      read_fields(c, o, p, packing_fields, NF(packing_fields), e, (int)e->packing, packing_names,
                  "packing");
      read_fields(c, o, p, radii_fields, NF(radii_fields), e, (int)e->radius_distribution,
                  radii_names, "radius distribution");
    }
    const cJSON *fv = get(o, "file");
    if (file && !fv) {
      wfs_error(c->err, p, "a file emitter needs \"file\": a .ply or .csv file of particles");
    } else if (fv && !file) {
      char kp[80];
      path_key(kp, sizeof kp, p, "file");
      wfs_error(c->err, kp, "does not apply to a %s emitter (use \"shape\": \"file\")",
                shape_names[e->shape]);
    } else if (file) {
      read_particle_file(c, fv, p, e);
    }
    /* the material: a name or an index */
    const cJSON *m = get(o, "material");
    char mp[80];
    path_key(mp, sizeof mp, p, "material");
    e->material = 0;
    if (cJSON_IsString(m)) {
      const char *names[WF_SCENE_MAX_OBJECTS];
      int found = -1;
      for (int k = 0; k < sc->material_count; k++) {
        names[k] = sc->materials[k].name;
        if (strcmp(names[k], m->valuestring) == 0) found = k;
      }
      if (found >= 0) {
        e->material = (uint32_t)found;
      } else {
        char q[48];
        wfs_quote(q, sizeof q, m->valuestring);
        const char *s = wfs_suggest(m->valuestring, names, sc->material_count);
        if (s)
          wfs_error(c->err, mp, "no material named '%s' (did you mean '%s'?)", q, s);
        else {
          char list[200];
          list_words(list, sizeof list, names, sc->material_count);
          wfs_error(c->err, mp, "no material named '%s' (materials: %s)", q, list);
        }
      }
    } else if (m) {
      field f = {"material", F_INT, 0, {0}, 0, (double)sc->material_count - 1, 0, 0};
      double x;
      char want[96];
      snprintf(want, sizeof want, "a material name or an index in [0, %d]", sc->material_count - 1);
      if (cJSON_IsNumber(m) && read_number(c, &f, m, mp, 1, &x))
        e->material = (uint32_t)x;
      else if (!cJSON_IsNumber(m))
        type_error(c, mp, want, m);
    }
    if (file) { /* complete the struct: what a file lacks, the emitter's radius gives */
      if (isnan(e->spacing)) e->spacing = 2.0 * e->radius;
      e->radius_min = e->radius_max = e->radius;
      continue;
    }
    check_emitter(c, o, p, e);
  }
}

/* ---- cloths
 * -------------------------------------------------------------------------------------- */

/* Parent of a directory, textually: "scenes" -> ".", "/a/b" -> "/a", "." -> "..". */
static void parent_dir(const char *dir, char *out, size_t n) {
  size_t len = strlen(dir);
  while (len > 1 && dir[len - 1] == '/')
    len--;
  size_t slash = len;
  while (slash > 0 && dir[slash - 1] != '/')
    slash--;
  const char *last = dir + slash;
  size_t last_len = len - slash;
  if (len == 0 || (last_len == 1 && last[0] == '.') ||
      (last_len == 2 && last[0] == '.' && last[1] == '.'))
    snprintf(out, n, "%.*s/..", (int)len, dir);
  else if (slash == 0)
    snprintf(out, n, ".");
  else
    snprintf(out, n, "%.*s", slash > 1 ? (int)slash - 1 : 1, dir);
}

/* Counts the vertices and faces of an OBJ file; 0 on success, else errno. */
static int obj_count(const char *path, uint32_t *verts, uint32_t *faces) {
  FILE *f = fopen(path, "rb");
  if (!f) return errno ? errno : ENOENT;
  char line[512];
  uint64_t v = 0, fc = 0;
  int bol = 1;
  while (fgets(line, sizeof line, f)) {
    if (bol) {
      if (line[0] == 'v' && (line[1] == ' ' || line[1] == '\t')) v++;
      if (line[0] == 'f' && (line[1] == ' ' || line[1] == '\t')) fc++;
    }
    bol = strchr(line, '\n') != NULL;
  }
  int bad = ferror(f);
  fclose(f);
  *verts = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  *faces = fc > UINT32_MAX ? UINT32_MAX : (uint32_t)fc;
  return bad ? EIO : 0;
}

static char *dup_str(ctx *c, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (!p)
    c->oom = 1;
  else
    memcpy(p, s, n);
  return p;
}

/* The places an asset path may be: itself when absolute, else the scene's directory, then its
 * parent. */
static void resolve_asset(ctx *c, const char *m, char tried[2][2048], int *n_tried) {
  char parent[1100];
  const char *base = c->base_dir && c->base_dir[0] ? c->base_dir : ".";
  *n_tried = 1;
  if (m[0] == '/') {
    snprintf(tried[0], 2048, "%s", m);
    return;
  }
  snprintf(tried[0], 2048, "%s%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/", m);
  parent_dir(base, parent, sizeof parent);
  snprintf(tried[1], 2048, "%s%s%s", parent, parent[strlen(parent) - 1] == '/' ? "" : "/", m);
  *n_tried = 2;
}

static void read_mesh(ctx *c, const cJSON *v, const char *p, wf_scene_cloth *cl) {
  char fp[80];
  path_key(fp, sizeof fp, p, "mesh");
  if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > 1024) {
    type_error(c, fp, "a path to an OBJ file", v);
    return;
  }
  const char *m = v->valuestring;
  char tried[2][2048];
  int n_tried = 1, err = 0;
  resolve_asset(c, m, tried, &n_tried);
  uint32_t verts = 0, faces = 0;
  int found = -1;
  for (int i = 0; i < n_tried && found < 0; i++) {
    int e = obj_count(tried[i], &verts, &faces);
    if (e == 0)
      found = i;
    else if (i == 0 || err == ENOENT)
      err = e;
  }
  char q[48];
  wfs_quote(q, sizeof q, m);
  if (found < 0) {
    if (n_tried == 2)
      wfs_error(c->err, fp, "cannot read mesh '%s' (tried '%.200s' and '%.200s': %s)", q, tried[0],
                tried[1], strerror(err));
    else
      wfs_error(c->err, fp, "cannot read mesh '%.200s': %s", tried[0], strerror(err));
    return;
  }
  if (verts < 3 || faces == 0) {
    wfs_error(c->err, fp, "mesh '%.200s' has %u vertices and %u faces: not a triangle mesh",
              tried[found], verts, faces);
    return;
  }
  cl->mesh = dup_str(c, m);
  cl->mesh_path = dup_str(c, tried[found]);
  cl->mesh_vertices = verts;
}

static uint32_t cloth_vertices(const wf_scene_cloth *cl) {
  return cl->is_mesh ? cl->mesh_vertices
                     : (uint32_t)cl->resolution[0] * (uint32_t)cl->resolution[1];
}

/* A list of pins: vertex indices, corner/edge names, or {"box": {"min": [], "max": []}}. */
static wf_scene_pin *read_pins(ctx *c, const cJSON *v, const char *fp, const wf_scene_cloth *cl,
                               int *count) {
  *count = 0;
  if (!cJSON_IsArray(v)) {
    type_error(c, fp, "an array of pins (vertex indices, corner/edge names or {\"box\": ...})", v);
    return NULL;
  }
  int n = cJSON_GetArraySize(v);
  if (n == 0) return NULL;
  wf_scene_pin *pins = calloc((size_t)n, sizeof *pins);
  if (!pins) {
    c->oom = 1;
    return NULL;
  }
  uint32_t nv = cloth_vertices(cl);
  int i = 0;
  for (const cJSON *e = v->child; e && i < n; e = e->next, i++) {
    char ep[320];
    path_index(ep, sizeof ep, fp, i);
    wf_scene_pin *pin = &pins[i];
    if (cJSON_IsNumber(e)) {
      pin->kind = WF_SCENE_PIN_VERTEX;
      char want[96];
      snprintf(want, sizeof want, "a vertex index in [0, %u]", nv ? nv - 1 : 0);
      if (nv == 0) continue; /* the mesh could not be read: already reported */
      double x = e->valuedouble;
      if (isfinite(x) && x >= 0 && x < (double)nv && x == floor(x))
        pin->vertex = (uint32_t)x;
      else
        type_error(c, ep, want, e);
    } else if (cJSON_IsString(e)) {
      pin->kind = WF_SCENE_PIN_NAMED;
      int k = -1;
      for (int j = 0; j < NF(pin_names); j++)
        if (strcmp(e->valuestring, pin_names[j]) == 0) k = j;
      for (int j = 0; j < NF(pin_aliases); j++)
        if (strcmp(e->valuestring, pin_aliases[j]) == 0) k = WF_SCENE_PIN_TOP + j;
      if (k < 0) {
        const char *s = wfs_suggest(e->valuestring, pin_names, NF(pin_names));
        char q[48], list[160];
        wfs_quote(q, sizeof q, e->valuestring);
        list_words(list, sizeof list, pin_names, NF(pin_names));
        if (s)
          wfs_error(c->err, ep, "unknown pin \"%s\" (did you mean '%s'?)", q, s);
        else
          wfs_error(c->err, ep, "unknown pin \"%s\" (expected one of %s)", q, list);
        continue;
      }
      pin->name = (wf_scene_pin_name)k;
      if (cl->is_mesh)
        wfs_error(c->err, ep,
                  "corner and edge names apply to grid cloths; a mesh cloth pins "
                  "vertex indices or regions");
    } else if (cJSON_IsObject(e)) {
      static const char *const pin_keys[] = {"box"};
      static const char *const box_keys[] = {"min", "max"};
      pin->kind = WF_SCENE_PIN_REGION;
      check_keys(c, e, ep, pin_keys, 1, NULL, 0);
      const cJSON *box = get(e, "box");
      char bp[340];
      path_key(bp, sizeof bp, ep, "box");
      if (!cJSON_IsObject(box)) {
        type_error(c, bp, "an object {\"min\": [x, y, z], \"max\": [x, y, z]}", box);
        continue;
      }
      check_keys(c, box, bp, box_keys, 2, NULL, 0);
      field fmin = {"min", F_VEC3, offsetof(wf_scene_pin, min), {0}, ANY, 0};
      field fmax = {"max", F_VEC3, offsetof(wf_scene_pin, max), {0}, ANY, 0};
      if (!get(box, "min") || !get(box, "max")) {
        wfs_error(c->err, bp, "a region needs both 'min' and 'max'");
        continue;
      }
      read_field(c, box, bp, &fmin, pin);
      read_field(c, box, bp, &fmax, pin);
      for (int k = 0; k < 3; k++)
        if (pin->min[k] > pin->max[k]) {
          wfs_error(c->err, bp, "min[%d] = %g is greater than max[%d] = %g", k, pin->min[k], k,
                    pin->max[k]);
          break;
        }
    } else {
      type_error(c, ep, "a vertex index, a corner/edge name or {\"box\": ...}", e);
    }
  }
  *count = n;
  return pins;
}

static void read_attachments(ctx *c, const cJSON *v, const char *fp, wf_scene_cloth *cl) {
  if (!cJSON_IsArray(v)) {
    type_error(c, fp, "an array of {\"collider\": name, \"pins\": [...]}", v);
    return;
  }
  int n = cJSON_GetArraySize(v);
  if (n == 0) return;
  cl->attachments = calloc((size_t)n, sizeof *cl->attachments);
  if (!cl->attachments) {
    c->oom = 1;
    return;
  }
  cl->attachment_count = n;
  const wf_scene *sc = c->scene;
  static const char *const keys[] = {"collider", "pins"};
  int i = 0;
  for (const cJSON *e = v->child; e && i < n; e = e->next, i++) {
    char ep[320], cp[340], pp[340];
    path_index(ep, sizeof ep, fp, i);
    wf_scene_attachment *a = &cl->attachments[i];
    if (!cJSON_IsObject(e)) {
      type_error(c, ep, "an object {\"collider\": name, \"pins\": [...]}", e);
      continue;
    }
    check_keys(c, e, ep, keys, 2, NULL, 0);
    const cJSON *col = get(e, "collider"), *pins = get(e, "pins");
    path_key(cp, sizeof cp, ep, "collider");
    path_key(pp, sizeof pp, ep, "pins");
    if (!cJSON_IsString(col)) {
      type_error(c, col ? cp : ep, "the name of a collider", col);
    } else {
      const char *names[WF_SCENE_MAX_OBJECTS];
      int found = -1;
      for (int k = 0; k < sc->collider_count; k++) {
        names[k] = sc->colliders[k].name;
        if (strcmp(names[k], col->valuestring) == 0) found = k;
      }
      char q[48];
      wfs_quote(q, sizeof q, col->valuestring);
      const char *s = wfs_suggest(col->valuestring, names, sc->collider_count);
      if (found >= 0)
        a->collider = (uint32_t)found;
      else if (s)
        wfs_error(c->err, cp, "no collider named '%s' (did you mean '%s'?)", q, s);
      else if (sc->collider_count == 0)
        wfs_error(c->err, cp, "no collider named '%s' (the scene has no colliders)", q);
      else {
        char list[200];
        list_words(list, sizeof list, names, sc->collider_count);
        wfs_error(c->err, cp, "no collider named '%s' (colliders: %s)", q, list);
      }
    }
    if (!pins) {
      wfs_error(c->err, ep, "an attachment needs 'pins'");
      continue;
    }
    a->pins = read_pins(c, pins, pp, cl, &a->pin_count);
    if (cJSON_IsArray(pins) && a->pin_count == 0)
      wfs_error(c->err, pp, "an attachment needs at least one pin");
  }
}

/* What the material does not give comes from its preset (wf_cloth_material_preset). */
static void cloth_material_defaults(wf_scene_cloth *cl) {
  wf_scene_cloth_material *m = &cl->material;
  if (!m->preset[0]) snprintf(m->preset, sizeof m->preset, "default");
  wf_cloth_material p;
  if (wf_cloth_material_preset(m->preset, &p) != WF_OK) p = wf_cloth_material_default();
  if (isnan(m->density)) m->density = p.density;
  if (isnan(m->stretch_modulus)) m->stretch_modulus = p.stretch_modulus;
  if (isnan(m->shear_modulus)) m->shear_modulus = p.shear_modulus;
  if (isnan(m->bend_rigidity)) m->bend_rigidity = p.bend_rigidity;
  if (isnan(m->damping_time)) m->damping_time = p.damping_time;
  if (isnan(m->friction)) m->friction = p.friction;
}

/* `material.preset`: one of wf_cloth_material_preset's names. */
static void read_cloth_preset(ctx *c, const cJSON *mat, const char *mp,
                              wf_scene_cloth_material *m) {
  const char *names[16];
  int n = 0;
  while (n < 16 && (names[n] = wf_cloth_material_preset_name(n)))
    n++;
  int k = read_enum(c, mat, mp, "preset", names, n, 0);
  snprintf(m->preset, sizeof m->preset, "%s", names[k]);
}

static void read_cloths(ctx *c, const cJSON *root) {
  const cJSON *arr = section(c, root, "", "cloths", 1);
  wf_scene *sc = c->scene;
  sc->cloths = list_alloc(c, arr, "cloths", sizeof *sc->cloths, &sc->cloth_count);
  static const char *const extra[] = {"name",     "grid", "mesh",       "integrator",
                                      "material", "pins", "attachments"};
  int i = 0;
  for (const cJSON *o = arr ? arr->child : NULL; o && i < sc->cloth_count; o = o->next, i++) {
    char p[64], gp[80], mp[80];
    path_index(p, sizeof p, "cloths", i);
    wf_scene_cloth *cl = &sc->cloths[i];
    snprintf(cl->name, sizeof cl->name, "cloth%d", i);
    read_fields(c, NULL, p, cloth_fields, NF(cloth_fields), cl, -1, NULL, NULL);
    read_fields(c, NULL, p, grid_fields, NF(grid_fields), cl, -1, NULL, NULL);
    read_fields(c, NULL, p, cloth_material_fields, NF(cloth_material_fields), &cl->material, -1,
                NULL, NULL);
    if (!cJSON_IsObject(o)) {
      cloth_material_defaults(cl);
      type_error(c, p, "an object", o);
      continue;
    }
    check_keys(c, o, p, extra, NF(extra), cloth_fields, NF(cloth_fields));
    read_name(c, o, p, "cloth", i, cl->name);
    read_fields(c, o, p, cloth_fields, NF(cloth_fields), cl, -1, NULL, NULL);
    cl->integrator = (wf_scene_integrator)read_enum(c, o, p, "integrator", integrator_names,
                                                    NF(integrator_names), 0);
    const cJSON *grid = get(o, "grid"), *mesh = get(o, "mesh");
    path_key(gp, sizeof gp, p, "grid");
    if (grid && mesh) {
      wfs_error(c->err, p, "a cloth is either a 'grid' or a 'mesh', not both");
    } else if (mesh) {
      cl->is_mesh = true;
      read_mesh(c, mesh, p, cl);
    } else if (grid && !cJSON_IsObject(grid)) {
      type_error(c, gp, "an object {\"size\": [w, h], \"resolution\": [nx, ny]}", grid);
    } else if (grid) {
      check_keys(c, grid, gp, NULL, 0, grid_fields, NF(grid_fields));
      read_fields(c, grid, gp, grid_fields, NF(grid_fields), cl, -1, NULL, NULL);
    }
    const cJSON *mat = get(o, "material");
    path_key(mp, sizeof mp, p, "material");
    if (mat && !cJSON_IsObject(mat)) {
      type_error(c, mp, "an object", mat);
    } else if (mat) {
      static const char *const mextra[] = {"preset", "stretch", "shear", "bend", "damping"};
      for (int r = 0; r < NF(cloth_material_removed); r++) {
        if (!get(mat, cloth_material_removed[r].key)) continue;
        char kp[120];
        path_key(kp, sizeof kp, mp, cloth_material_removed[r].key);
        wfs_error(c->err, kp,
                  "this key was removed: cloth materials are physical now; use %s, or a "
                  "'preset' (docs/scenes.md, cloth materials)",
                  cloth_material_removed[r].use);
      }
      check_keys(c, mat, mp, mextra, NF(mextra), cloth_material_fields, NF(cloth_material_fields));
      read_cloth_preset(c, mat, mp, &cl->material);
      read_fields(c, mat, mp, cloth_material_fields, NF(cloth_material_fields), &cl->material, -1,
                  NULL, NULL);
    }
    cloth_material_defaults(cl); /* after the integrator is known */
    const cJSON *pins = get(o, "pins"), *att = get(o, "attachments");
    char pp[80];
    if (pins) {
      path_key(pp, sizeof pp, p, "pins");
      cl->pins = read_pins(c, pins, pp, cl, &cl->pin_count);
    }
    if (att) {
      path_key(pp, sizeof pp, p, "attachments");
      read_attachments(c, att, pp, cl);
    }
  }
}

/* A collider's mesh file: resolved like a cloth's (the scene's directory, then its parent), read
 * and checked here, so that `weft validate` reports a missing or malformed file. */
static void read_collider_mesh(ctx *c, const cJSON *o, const char *p, wf_scene_collider *k) {
  char fp[80];
  path_key(fp, sizeof fp, p, "mesh");
  const cJSON *v = get(o, "mesh");
  if (!v) {
    wfs_error(c->err, p, "a mesh collider needs a 'mesh' (an OBJ, STL, PLY or glTF file)");
    return;
  }
  if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) > 1024) {
    type_error(c, fp, "a path to a mesh file (OBJ, STL, PLY or glTF)", v);
    return;
  }
  const char *m = v->valuestring;
  char tried[2][2048], parent[1100];
  const char *base = c->base_dir && c->base_dir[0] ? c->base_dir : ".";
  int n_tried = 1, found = -1;
  if (m[0] == '/') {
    snprintf(tried[0], sizeof tried[0], "%s", m);
  } else {
    snprintf(tried[0], sizeof tried[0], "%s%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/",
             m);
    parent_dir(base, parent, sizeof parent);
    snprintf(tried[1], sizeof tried[1], "%s%s%s", parent,
             parent[strlen(parent) - 1] == '/' ? "" : "/", m);
    n_tried = 2;
  }
  for (int i = 0; i < n_tried && found < 0; i++) {
    FILE *f = fopen(tried[i], "rb");
    if (f) fclose(f), found = i;
  }
  k->mesh = dup_str(c, m);
  if (found < 0) {
    char q[48];
    wfs_quote(q, sizeof q, m);
    if (n_tried == 2)
      wfs_error(c->err, fp, "cannot open mesh '%s' (tried '%.200s' and '%.200s')", q, tried[0],
                tried[1]);
    else
      wfs_error(c->err, fp, "cannot open mesh '%.200s'", tried[0]);
    return;
  }
  k->mesh_path = dup_str(c, tried[found]);
  if (wf_collider_mesh_load(tried[found], (float)k->scale, &k->mesh_data) != WF_OK) {
    const char *e = wf_last_error(), *colon = strstr(e, ": ");
    wfs_error(c->err, fp, "%s", colon && strncmp(e, "wf_", 3) == 0 ? colon + 2 : e);
    return;
  }
  wf_collider_mesh_info inf = wf_collider_mesh_info_get(k->mesh_data);
  if (k->thickness == 0.0 && inf.boundary_edges > 0) {
    char tp[80];
    path_key(tp, sizeof tp, p, "thickness");
    wfs_error(c->err, tp,
              "mesh '%.200s' is open (%u edges with one triangle): give a thickness > 0 (a shell) "
              "or close the mesh",
              tried[found], inf.boundary_edges);
  }
}

/* `keyframes`: [{"time": s, "position": [m], "axis": [..], "angle": degrees}, ...] in increasing
 * time; a key's rotation is `angle` degrees about `axis` (default: none). */
static void read_keyframes(ctx *c, const cJSON *v, const char *p, wf_scene_collider *k) {
  char fp[80];
  path_key(fp, sizeof fp, p, "keyframes");
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
  if (n < 1 || n > 100000) {
    type_error(c, fp,
               "an array of 1 to 100000 keyframes {\"time\", \"position\", \"axis\", \"angle\"}",
               v);
    return;
  }
  k->keys = calloc((size_t)n, sizeof *k->keys);
  if (!k->keys) {
    c->oom = 1;
    return;
  }
  k->key_count = n;
  int i = 0;
  double prev = -INFINITY;
  for (const cJSON *e = v->child; e; e = e->next, i++) {
    char ep[100];
    path_index(ep, sizeof ep, fp, i);
    if (!cJSON_IsObject(e)) {
      type_error(c, ep, "a keyframe {\"time\", \"position\", \"axis\", \"angle\"}", e);
      continue;
    }
    check_keys(c, e, ep, NULL, 0, key_fields, NF(key_fields));
    if (!get(e, "time")) wfs_error(c->err, ep, "a keyframe needs a 'time'");
    scene_key sk;
    read_fields(c, e, ep, key_fields, NF(key_fields), &sk, -1, NULL, NULL);
    if (get(e, "time") && !(sk.time > prev)) {
      char tp[120];
      path_key(tp, sizeof tp, ep, "time");
      wfs_error(c->err, tp,
                "%g is not after keyframes[%d].time %g (keyframes must be in "
                "increasing time)",
                sk.time, i - 1, prev);
    }
    prev = sk.time;
    double l = sqrt(sk.axis[0] * sk.axis[0] + sk.axis[1] * sk.axis[1] + sk.axis[2] * sk.axis[2]);
    if (!(l > 0.0)) l = 1.0;
    double h = sk.angle * 3.14159265358979323846 / 360.0; /* half the angle, radians */
    wf_collider_key *o = &k->keys[i];
    o->time = (float)sk.time;
    for (int a = 0; a < 3; a++) {
      o->position[a] = (float)sk.position[a];
      o->rotation[a] = (float)(sk.axis[a] / l * sin(h));
    }
    o->rotation[3] = (float)cos(h);
  }
}

static void read_colliders(ctx *c, const cJSON *root) {
  const cJSON *arr = section(c, root, "", "colliders", 1);
  wf_scene *sc = c->scene;
  sc->colliders = list_alloc(c, arr, "colliders", sizeof *sc->colliders, &sc->collider_count);
  static const char *const extra[] = {"name", "type", "mesh", "keyframes", "active_until"};
  int i = 0;
  for (const cJSON *o = arr ? arr->child : NULL; o && i < sc->collider_count; o = o->next, i++) {
    char p[64];
    path_index(p, sizeof p, "colliders", i);
    wf_scene_collider *k = &sc->colliders[i];
    snprintf(k->name, sizeof k->name, "collider%d", i);
    read_fields(c, NULL, p, collider_fields, NF(collider_fields), k, -1, NULL, NULL);
    if (!cJSON_IsObject(o)) {
      type_error(c, p, "an object", o);
      continue;
    }
    check_keys(c, o, p, extra, NF(extra), collider_fields, NF(collider_fields));
    read_name(c, o, p, "collider", i, k->name);
    if (!get(o, "type")) {
      wfs_error(c->err, p, "a collider needs a 'type' (plane, sphere, box, capsule or mesh)");
      continue;
    }
    k->type =
        (wf_scene_collider_type)read_enum(c, o, p, "type", collider_names, NF(collider_names), 0);
    read_fields(c, o, p, collider_fields, NF(collider_fields), k, (int)k->type, collider_names,
                "collider");
    char kp[80];
    if (k->type == WF_SCENE_MESH) {
      read_collider_mesh(c, o, p, k);
    } else if (get(o, "mesh")) {
      path_key(kp, sizeof kp, p, "mesh");
      wfs_error(c->err, kp, "does not apply to a %s collider", collider_names[k->type]);
    }
    const cJSON *keys = get(o, "keyframes");
    if (keys) {
      read_keyframes(c, keys, p, k);
      if (k->velocity[0] != 0 || k->velocity[1] != 0 || k->velocity[2] != 0 ||
          k->rotation_rate != 0) {
        path_key(kp, sizeof kp, p, "keyframes");
        wfs_error(c->err, kp,
                  "keyframes replace velocity and rotation_rate: give one or the "
                  "other");
      }
    }
    k->active_until = INFINITY;
    const cJSON *until = get(o, "active_until");
    if (until) {
      path_key(kp, sizeof kp, p, "active_until");
      if (!cJSON_IsNumber(until) || !isfinite(until->valuedouble))
        type_error(c, kp, "a number of seconds", until);
      else if (!(until->valuedouble > k->active_from))
        wfs_error(c->err, kp, "%g must be after active_from %g", until->valuedouble,
                  k->active_from);
      else
        k->active_until = until->valuedouble;
    }
  }
}

static void read_forces(ctx *c, const cJSON *root) {
  const cJSON *o = section(c, root, "", "forces", 0);
  wf_scene_forces *f = &c->scene->forces;
  static const char *const extra[] = {"wind"};
  if (o) check_keys(c, o, "forces", extra, 1, forces_fields, NF(forces_fields));
  read_fields(c, o, "forces", forces_fields, NF(forces_fields), f, -1, NULL, NULL);
  read_fields(c, NULL, "forces.wind", wind_fields, NF(wind_fields), f, -1, NULL, NULL);
  const cJSON *w = get(o, "wind");
  if (cJSON_IsArray(w)) { /* the shorthand: just the velocity */
    static const field wind_vec = {"wind", F_VEC3, FOR(wind), {0}, ANY, 0};
    read_field(c, o, "forces", &wind_vec, f);
  } else if (cJSON_IsObject(w)) {
    check_keys(c, w, "forces.wind", NULL, 0, wind_fields, NF(wind_fields));
    read_fields(c, w, "forces.wind", wind_fields, NF(wind_fields), f, -1, NULL, NULL);
  } else if (w) {
    type_error(c, "forces.wind", "a velocity [x, y, z] or an object {\"velocity\": ...}", w);
  }
}

static void read_outputs(ctx *c, const cJSON *root) {
  const cJSON *o = section(c, root, "", "outputs", 0);
  wf_scene_outputs *out = &c->scene->outputs;
  static const char *const extra[] = {"dir", "formats", "up_axis"};
  if (o) check_keys(c, o, "outputs", extra, NF(extra), outputs_fields, NF(outputs_fields));
  read_fields(c, o, "outputs", outputs_fields, NF(outputs_fields), out, -1, NULL, NULL);
  out->up_axis = (wf_scene_up_axis)read_enum(c, o, "outputs", "up_axis", up_axis_names,
                                             NF(up_axis_names), WF_SCENE_UP_Y);
  const cJSON *d = get(o, "dir");
  if (d && (!cJSON_IsString(d) || !d->valuestring[0] || strlen(d->valuestring) > 1024)) {
    type_error(c, "outputs.dir", "a directory path", d);
    d = NULL;
  }
  out->dir = dup_str(c, d ? d->valuestring : "out");
  const cJSON *f = get(o, "formats");
  out->formats = WF_SCENE_OUT_VTK | WF_SCENE_OUT_CSV;
  if (!f) return;
  if (!cJSON_IsArray(f)) {
    type_error(c, "outputs.formats",
               "an array of \"ply\", \"vtk\", \"csv\", \"png\", \"checkpoint\"", f);
    return;
  }
  out->formats = 0;
  int i = 0;
  for (const cJSON *e = f->child; e && !wfs_full(c->err); e = e->next, i++) {
    char ep[64], list[160], q[48];
    path_index(ep, sizeof ep, "outputs.formats", i);
    list_words(list, sizeof list, format_names, NF(format_names));
    int k = -1;
    for (int j = 0; j < NF(format_names) && cJSON_IsString(e); j++)
      if (strcmp(e->valuestring, format_names[j]) == 0) k = j;
    if (k < 0) {
      const char *s =
          cJSON_IsString(e) ? wfs_suggest(e->valuestring, format_names, NF(format_names)) : NULL;
      if (s) {
        wfs_quote(q, sizeof q, e->valuestring);
        wfs_error(c->err, ep, "unknown format \"%s\" (did you mean '%s'?)", q, s);
      } else {
        char want[200];
        snprintf(want, sizeof want, "one of %s", list);
        type_error(c, ep, want, e);
      }
      continue;
    }
    if (out->formats & (1u << k))
      wfs_error(c->err, ep, "format \"%s\" is listed twice", format_names[k]);
    out->formats |= 1u << k;
  }
}

static void read_view(ctx *c, const cJSON *root) {
  wf_scene *sc = c->scene;
  const cJSON *o = section(c, root, "", "camera", 0);
  if (o) check_keys(c, o, "camera", NULL, 0, camera_fields, NF(camera_fields));
  read_fields(c, o, "camera", camera_fields, NF(camera_fields), &sc->camera, -1, NULL, NULL);
  if (memcmp(sc->camera.position, sc->camera.target, sizeof sc->camera.target) == 0)
    wfs_error(c->err, "camera.target", "the target is the camera position: no view direction");

  o = section(c, root, "", "render", 0);
  static const char *const rextra[] = {"color_by"};
  if (o) check_keys(c, o, "render", rextra, 1, render_fields, NF(render_fields));
  read_fields(c, o, "render", render_fields, NF(render_fields), &sc->render, -1, NULL, NULL);
  sc->render.color_by =
      (wf_scene_color_by)read_enum(c, o, "render", "color_by", color_names, NF(color_names), 0);

  const cJSON *arr = get(root, "lights");
  static const field dir_field = {"direction", F_VEC3, LIG(vector), {0}, ANY_NZ, 0};
  static const field pos_field = {"position", F_VEC3, LIG(vector), {0}, ANY, 0};
  if (!arr) { /* one light from above, a little to the side */
    sc->lights = calloc(1, sizeof *sc->lights);
    if (!sc->lights) {
      c->oom = 1;
      return;
    }
    sc->light_count = 1;
    read_fields(c, NULL, "", light_fields, NF(light_fields), &sc->lights[0], -1, NULL, NULL);
    sc->lights[0].vector[0] = -0.4, sc->lights[0].vector[1] = -1, sc->lights[0].vector[2] = -0.3;
    return;
  }
  arr = section(c, root, "", "lights", 1);
  sc->lights = list_alloc(c, arr, "lights", sizeof *sc->lights, &sc->light_count);
  static const char *const lextra[] = {"direction", "position"};
  int i = 0;
  for (const cJSON *l = arr ? arr->child : NULL; l && i < sc->light_count; l = l->next, i++) {
    char p[64];
    path_index(p, sizeof p, "lights", i);
    wf_scene_light *L = &sc->lights[i];
    read_fields(c, NULL, p, light_fields, NF(light_fields), L, -1, NULL, NULL);
    L->vector[1] = -1;
    if (!cJSON_IsObject(l)) {
      type_error(c, p, "an object", l);
      continue;
    }
    check_keys(c, l, p, lextra, 2, light_fields, NF(light_fields));
    read_fields(c, l, p, light_fields, NF(light_fields), L, -1, NULL, NULL);
    const cJSON *d = get(l, "direction"), *pos = get(l, "position");
    if (!d == !pos) {
      wfs_error(c->err, p,
                "a light has either a 'direction' (directional) or a 'position' "
                "(point light)");
      continue;
    }
    L->is_point = pos != NULL;
    read_field(c, l, p, pos ? &pos_field : &dir_field, L);
  }
}

/* Names of particle emitters, cloths and colliders are unique among all of them (outputs are named
 * after them); material names among the materials. */
static void check_names(ctx *c) {
  const wf_scene *sc = c->scene;
  int total = sc->emitter_count + sc->cloth_count + sc->collider_count;
  for (int i = 0; i < total && !wfs_full(c->err); i++) {
    const char *ni, *pi;
    int ii;
    if (i < sc->emitter_count)
      ni = sc->emitters[i].name, pi = "particles", ii = i;
    else if (i < sc->emitter_count + sc->cloth_count)
      ni = sc->cloths[i - sc->emitter_count].name, pi = "cloths", ii = i - sc->emitter_count;
    else
      ni = sc->colliders[i - sc->emitter_count - sc->cloth_count].name, pi = "colliders",
      ii = i - sc->emitter_count - sc->cloth_count;
    if (i < sc->emitter_count + sc->cloth_count && strcmp(ni, "scene") == 0) {
      char p[80];
      snprintf(p, sizeof p, "%s[%d].name", pi, ii);
      wfs_error(c->err, p,
                "the name 'scene' is reserved: the outputs' scene.pvd collects every object");
      continue;
    }
    for (int j = 0; j < i; j++) {
      const char *nj, *pj;
      int jj;
      if (j < sc->emitter_count)
        nj = sc->emitters[j].name, pj = "particles", jj = j;
      else if (j < sc->emitter_count + sc->cloth_count)
        nj = sc->cloths[j - sc->emitter_count].name, pj = "cloths", jj = j - sc->emitter_count;
      else
        nj = sc->colliders[j - sc->emitter_count - sc->cloth_count].name, pj = "colliders",
        jj = j - sc->emitter_count - sc->cloth_count;
      if (strcmp(ni, nj) == 0) {
        char p[80];
        snprintf(p, sizeof p, "%s[%d].name", pi, ii);
        wfs_error(c->err, p, "the name '%s' is already used by %s[%d]", ni, pj, jj);
        break;
      }
    }
  }
  for (int i = 0; i < sc->material_count && !wfs_full(c->err); i++)
    for (int j = 0; j < i; j++)
      if (strcmp(sc->materials[i].name, sc->materials[j].name) == 0) {
        char p[80];
        snprintf(p, sizeof p, "materials[%d].name", i);
        wfs_error(c->err, p, "the name '%s' is already used by materials[%d]",
                  sc->materials[i].name, j);
        break;
      }
}

/* ---- overrides
 * -------------------------------------------------------------------------------------- */

typedef struct comp {
  int is_index;
  int index;
  char key[64];
} comp;

/* Splits "a.b[2].c" into components; 0 on a malformed path. */
static int split_path(const char *s, size_t len, comp *out, int max, int *n) {
  size_t i = 0;
  *n = 0;
  while (i < len) {
    if (*n == max) return 0;
    comp *c = &out[*n];
    memset(c, 0, sizeof *c);
    if (s[i] == '[') {
      size_t j = i + 1;
      long v = 0;
      while (j < len && s[j] >= '0' && s[j] <= '9' && v < 100000000)
        v = v * 10 + (s[j++] - '0');
      if (j == i + 1 || j >= len || s[j] != ']') return 0;
      c->is_index = 1, c->index = (int)v;
      i = j + 1;
    } else {
      if (s[i] == '.') {
        if (*n == 0) return 0;
        i++;
      }
      size_t j = i;
      while (j < len && s[j] != '.' && s[j] != '[' && s[j] != ']')
        j++;
      if (j == i || j - i >= sizeof c->key) return 0;
      memcpy(c->key, s + i, j - i);
      i = j;
    }
    (*n)++;
  }
  return *n > 0 && !out[0].is_index;
}

static void apply_override(ctx *c, cJSON *root, const char *text, wfs_override_mark *mark) {
  char q[48];
  wfs_quote(q, sizeof q, text);
  const char *eq = strchr(text, '=');
  comp comps[16];
  int n;
  if (!eq || !split_path(text, (size_t)(eq - text), comps, 16, &n)) {
    wfs_error(c->err, NULL, "--set '%s': expected key.path=value (e.g. simulation.substeps=32)", q);
    return;
  }
  /* the value: JSON when it parses as JSON, else a string */
  const char *vs = eq + 1;
  cJSON *val = cJSON_ParseWithOpts(vs, NULL, 1);
  if (!val) val = cJSON_CreateString(vs);
  if (!val) {
    c->oom = 1;
    return;
  }
  char path[256] = "";
  cJSON *cur = root;
  for (int i = 0; i < n; i++) {
    const comp *k = &comps[i];
    char prev[256];
    snprintf(prev, sizeof prev, "%s", path[0] ? path : "the scene");
    if (k->is_index)
      path_index(path, sizeof path, prev, k->index);
    else
      path_key(path, sizeof path, i == 0 ? "" : prev, k->key);
    int last = i == n - 1;
    cJSON *next = NULL;
    if (k->is_index) {
      if (!cJSON_IsArray(cur)) {
        wfs_error(c->err, NULL, "--set '%s': %s is not an array", q, prev);
        break;
      }
      int size = cJSON_GetArraySize(cur);
      if (k->index >= size) {
        wfs_error(c->err, NULL, "--set '%s': %s: index out of range (%s has %d element%s)", q, path,
                  prev, size, size == 1 ? "" : "s");
        break;
      }
      if (last) {
        cJSON_ReplaceItemInArray(cur, k->index, val);
        val = NULL;
        break;
      }
      next = cJSON_GetArrayItem(cur, k->index);
    } else {
      if (!cJSON_IsObject(cur)) {
        wfs_error(c->err, NULL, "--set '%s': %s is not an object", q, prev);
        break;
      }
      next = cJSON_GetObjectItemCaseSensitive(cur, k->key);
      if (last) {
        if (next)
          cJSON_ReplaceItemInObjectCaseSensitive(cur, k->key, val);
        else
          cJSON_AddItemToObject(cur, k->key, val);
        val = NULL;
        break;
      }
      if (!next && comps[i + 1].is_index) {
        /* an array that is not there: suggest one that is */
        const char *keys[64];
        int nk = 0;
        for (const cJSON *it = cur->child; it && nk < 64; it = it->next)
          if (cJSON_IsArray(it) && it->string) keys[nk++] = it->string;
        const char *s = wfs_suggest(k->key, keys, nk);
        if (s)
          wfs_error(c->err, NULL,
                    "--set '%s': %s: the scene has no array '%s' (did you mean '%s'?)", q, path,
                    k->key, s);
        else
          wfs_error(c->err, NULL, "--set '%s': %s: the scene has no array '%s'", q, path, k->key);
        break;
      }
      if (!next) { /* a section that is not written yet */
        next = cJSON_AddObjectToObject(cur, k->key);
        if (!next) {
          c->oom = 1;
          break;
        }
      }
    }
    cur = next;
  }
  if (val) {
    cJSON_Delete(val);
    return;
  }
  snprintf(mark->path, sizeof mark->path, "%s", path);
  mark->text = text;
}

/* ---- printing
 * ------------------------------------------------------------------------------------- */

static cJSON *num(double v) {
  char b[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, v);
    if (strtod(b, NULL) == v) break;
  }
  return cJSON_CreateRaw(b);
}

/* A float value (keyframes are kept as the solver's floats) in its shortest exact decimal. */
static double shortest_float(float f) {
  char b[40];
  for (int prec = 6; prec <= 9; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, (double)f);
    if ((float)strtod(b, NULL) == f) break;
  }
  return strtod(b, NULL);
}

static cJSON *vec(const double *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++)
    cJSON_AddItemToArray(a, num(v[i]));
  return a;
}

static void print_fields(cJSON *o, const field *t, int n, const void *base, int type) {
  for (int i = 0; i < n; i++) {
    const field *f = &t[i];
    if (type >= 0 && f->only && !(f->only & (1u << type))) continue;
    const char *p = (const char *)base + f->off;
    cJSON *v = NULL;
    char b[32];
    switch (f->kind) {
    case F_NUM: v = num(*(const double *)p); break;
    case F_INT: v = cJSON_CreateNumber(*(const int *)p); break;
    case F_U53:
      snprintf(b, sizeof b, "%llu", (unsigned long long)*(const uint64_t *)p);
      v = cJSON_CreateRaw(b);
      break;
    case F_BOOL: v = cJSON_CreateBool(*(const bool *)p); break;
    case F_VEC2: v = vec((const double *)p, 2); break;
    case F_VEC3: v = vec((const double *)p, 3); break;
    case F_IVEC2: v = cJSON_CreateIntArray((const int *)p, 2); break;
    }
    cJSON_AddItemToObject(o, f->key, v);
  }
}

static cJSON *pins_json(const wf_scene_pin *pins, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < n; i++) {
    const wf_scene_pin *p = &pins[i];
    if (p->kind == WF_SCENE_PIN_VERTEX) {
      cJSON_AddItemToArray(a, cJSON_CreateNumber(p->vertex));
    } else if (p->kind == WF_SCENE_PIN_NAMED) {
      cJSON_AddItemToArray(a, cJSON_CreateString(pin_names[p->name]));
    } else {
      cJSON *o = cJSON_CreateObject(), *box = cJSON_AddObjectToObject(o, "box");
      cJSON_AddItemToObject(box, "min", vec(p->min, 3));
      cJSON_AddItemToObject(box, "max", vec(p->max, 3));
      cJSON_AddItemToArray(a, o);
    }
  }
  return a;
}

char *wf_scene_to_json(const wf_scene *sc) {
  if (!sc) return NULL;
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  if (sc->description && sc->description[0])
    cJSON_AddStringToObject(root, "description", sc->description);

  const wf_scene_simulation *s = &sc->simulation;
  cJSON *sim = cJSON_AddObjectToObject(root, "simulation");
  print_fields(sim, sim_fields, NF(sim_fields), s, -1);
  if (s->device_count == 0) {
    cJSON_AddStringToObject(sim, "devices", "auto");
  } else if (s->device_count == 1) {
    cJSON_AddStringToObject(sim, "devices", s->devices[0]);
  } else {
    cJSON *d = cJSON_AddArrayToObject(sim, "devices");
    for (int i = 0; i < s->device_count; i++)
      cJSON_AddItemToArray(d, cJSON_CreateString(s->devices[i]));
  }
  cJSON_AddStringToObject(sim, "contact_model", contact_names[s->contact_model]);
  if (s->stop_count > 0) {
    cJSON *rules = cJSON_AddArrayToObject(sim, "stop_when");
    for (int i = 0; i < s->stop_count; i++) {
      cJSON *r = cJSON_CreateObject();
      cJSON_AddItemToObject(r, stop_keys[s->stop_when[i].kind], num(s->stop_when[i].value));
      if (s->stop_when[i].kind != WF_SCENE_STOP_TIME)
        cJSON_AddNumberToObject(r, "frames", s->stop_when[i].frames);
      cJSON_AddItemToArray(rules, r);
    }
  }

  cJSON *mats = cJSON_AddArrayToObject(root, "materials");
  for (int i = 0; i < sc->material_count; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", sc->materials[i].name);
    print_fields(o, material_fields, NF(material_fields), &sc->materials[i], -1);
    cJSON_AddItemToArray(mats, o);
  }
  cJSON *parts = cJSON_AddArrayToObject(root, "particles");
  for (int i = 0; i < sc->emitter_count; i++) {
    const wf_scene_emitter *e = &sc->emitters[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", e->name);
    cJSON_AddStringToObject(o, "shape", shape_names[e->shape]);
    print_fields(o, emitter_fields, NF(emitter_fields), e, (int)e->shape);
    if (e->shape == WF_SCENE_SHAPE_FILE) {
      cJSON_AddStringToObject(o, "file", e->file ? e->file : "");
    } else if (wfe_pours(e)) {
      cJSON_AddStringToObject(o, "radius_distribution", radii_names[e->radius_distribution]);
      print_fields(o, radii_fields, NF(radii_fields), e, (int)e->radius_distribution);
      if (e->radius_distribution == WF_SCENE_RADII_UNIFORM) cJSON_DeleteItemFromObject(o, "radius");
    } else {
      cJSON_AddStringToObject(o, "packing", packing_names[e->packing]);
      print_fields(o, packing_fields, NF(packing_fields), e, (int)e->packing);
      cJSON_AddStringToObject(o, "radius_distribution", radii_names[e->radius_distribution]);
      print_fields(o, radii_fields, NF(radii_fields), e, (int)e->radius_distribution);
      if (e->radius_distribution == WF_SCENE_RADII_UNIFORM) cJSON_DeleteItemFromObject(o, "radius");
    }
    cJSON_AddStringToObject(o, "material", sc->materials[e->material].name);
    cJSON_AddItemToArray(parts, o);
  }
  cJSON *cols = cJSON_AddArrayToObject(root, "colliders");
  for (int i = 0; i < sc->collider_count; i++) {
    const wf_scene_collider *k = &sc->colliders[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", k->name);
    cJSON_AddStringToObject(o, "type", collider_names[k->type]);
    if (k->type == WF_SCENE_MESH) cJSON_AddStringToObject(o, "mesh", k->mesh ? k->mesh : "");
    print_fields(o, collider_fields, NF(collider_fields), k, (int)k->type);
    if (isfinite(k->active_until)) cJSON_AddItemToObject(o, "active_until", num(k->active_until));
    if (k->key_count > 0) {
      cJSON *ka = cJSON_AddArrayToObject(o, "keyframes");
      for (int j = 0; j < k->key_count; j++) {
        const wf_collider_key *q = &k->keys[j];
        double sn =
            sqrt((double)q->rotation[0] * q->rotation[0] + (double)q->rotation[1] * q->rotation[1] +
                 (double)q->rotation[2] * q->rotation[2]);
        scene_key sk = {.time = shortest_float(q->time), .axis = {0, 0, 1}};
        for (int a = 0; a < 3; a++)
          sk.position[a] = shortest_float(q->position[a]);
        if (sn > 0.0) {
          for (int a = 0; a < 3; a++)
            sk.axis[a] = shortest_float((float)(q->rotation[a] / sn));
          sk.angle = shortest_float(
              (float)(2.0 * atan2(sn, (double)q->rotation[3]) * 180.0 / 3.14159265358979323846));
        }
        cJSON *kj = cJSON_CreateObject();
        print_fields(kj, key_fields, NF(key_fields), &sk, -1);
        cJSON_AddItemToArray(ka, kj);
      }
    }
    cJSON_AddItemToArray(cols, o);
  }
  cJSON *cloths = cJSON_AddArrayToObject(root, "cloths");
  for (int i = 0; i < sc->cloth_count; i++) {
    const wf_scene_cloth *cl = &sc->cloths[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", cl->name);
    if (cl->is_mesh) {
      cJSON_AddStringToObject(o, "mesh", cl->mesh ? cl->mesh : "");
    } else {
      cJSON *g = cJSON_AddObjectToObject(o, "grid");
      print_fields(g, grid_fields, NF(grid_fields), cl, -1);
    }
    print_fields(o, cloth_fields, NF(cloth_fields), cl, -1);
    cJSON_AddStringToObject(o, "integrator", integrator_names[cl->integrator]);
    cJSON *m = cJSON_AddObjectToObject(o, "material");
    cJSON_AddStringToObject(m, "preset", cl->material.preset);
    print_fields(m, cloth_material_fields, NF(cloth_material_fields), &cl->material, -1);
    cJSON_AddItemToObject(o, "pins", pins_json(cl->pins, cl->pin_count));
    cJSON *att = cJSON_AddArrayToObject(o, "attachments");
    for (int j = 0; j < cl->attachment_count; j++) {
      cJSON *a = cJSON_CreateObject();
      cJSON_AddStringToObject(a, "collider", sc->colliders[cl->attachments[j].collider].name);
      cJSON_AddItemToObject(a, "pins",
                            pins_json(cl->attachments[j].pins, cl->attachments[j].pin_count));
      cJSON_AddItemToArray(att, a);
    }
    cJSON_AddItemToArray(cloths, o);
  }
  cJSON *forces = cJSON_AddObjectToObject(root, "forces");
  cJSON *wind = cJSON_AddObjectToObject(forces, "wind");
  print_fields(wind, wind_fields, NF(wind_fields), &sc->forces, -1);
  print_fields(forces, forces_fields, NF(forces_fields), &sc->forces, -1);

  cJSON *out = cJSON_AddObjectToObject(root, "outputs");
  cJSON_AddStringToObject(out, "dir", sc->outputs.dir ? sc->outputs.dir : "out");
  print_fields(out, outputs_fields, NF(outputs_fields), &sc->outputs, -1);
  cJSON_AddStringToObject(out, "up_axis", up_axis_names[sc->outputs.up_axis]);
  cJSON *fmts = cJSON_AddArrayToObject(out, "formats");
  for (int k = 0; k < NF(format_names); k++)
    if (sc->outputs.formats & (1u << k))
      cJSON_AddItemToArray(fmts, cJSON_CreateString(format_names[k]));

  print_fields(cJSON_AddObjectToObject(root, "camera"), camera_fields, NF(camera_fields),
               &sc->camera, -1);
  cJSON *lights = cJSON_AddArrayToObject(root, "lights");
  for (int i = 0; i < sc->light_count; i++) {
    const wf_scene_light *L = &sc->lights[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, L->is_point ? "position" : "direction", vec(L->vector, 3));
    print_fields(o, light_fields, NF(light_fields), L, -1);
    cJSON_AddItemToArray(lights, o);
  }
  cJSON *ren = cJSON_AddObjectToObject(root, "render");
  print_fields(ren, render_fields, NF(render_fields), &sc->render, -1);
  cJSON_AddStringToObject(ren, "color_by", color_names[sc->render.color_by]);

  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return NULL;
  /* cJSON indents with tabs (tabs inside strings are escaped): make them two spaces */
  size_t tabs = 0, n = 0;
  for (; text[n]; n++)
    tabs += text[n] == '\t';
  char *res = malloc(n + tabs + 2);
  if (res) {
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
      if (text[i] == '\t' && i > 0 && text[i - 1] == ':')
        res[j++] = ' '; /* "key": value */
      else if (text[i] == '\t')
        res[j++] = ' ', res[j++] = ' ';
      else
        res[j++] = text[i];
    }
    res[j++] = '\n';
    res[j] = '\0';
  }
  cJSON_free(text);
  return res;
}

/* ---- entry points
 * ------------------------------------------------------------------------------------ */

void wf_scene_destroy(wf_scene *sc) {
  if (!sc) return;
  free(sc->description);
  free(sc->materials);
  for (int i = 0; i < sc->emitter_count; i++)
    free(sc->emitters[i].file), free(sc->emitters[i].file_path);
  free(sc->emitters);
  for (int i = 0; i < sc->cloth_count; i++) {
    wf_scene_cloth *cl = &sc->cloths[i];
    free(cl->mesh);
    free(cl->mesh_path);
    free(cl->pins);
    for (int j = 0; j < cl->attachment_count; j++)
      free(cl->attachments[j].pins);
    free(cl->attachments);
  }
  free(sc->cloths);
  for (int i = 0; i < sc->collider_count; i++) {
    free(sc->colliders[i].mesh);
    free(sc->colliders[i].mesh_path);
    free(sc->colliders[i].keys);
    wf_collider_mesh_destroy(sc->colliders[i].mesh_data);
  }
  free(sc->colliders);
  free(sc->outputs.dir);
  free(sc->lights);
  free(sc);
}

/* Publishes the collected errors: all of them in wf_scene_errors(), as many as fit in
 * wf_last_error(). */
static wf_status report(wfs_errors *e, const char *func) {
  size_t used = 0;
  wfs_sort(e);
  tls_errors[0] = '\0';
  for (int i = 0; i < e->count; i++) {
    int k =
        snprintf(tls_errors + used, sizeof tls_errors - used, "%s%s", i ? "\n" : "", e->msgs[i]);
    if (k < 0 || (size_t)k >= sizeof tls_errors - used) break;
    used += (size_t)k;
  }
  if (e->count >= WF_SCENE_MAX_ERRORS && used < sizeof tls_errors)
    snprintf(tls_errors + used, sizeof tls_errors - used, "\n(stopped after %d errors)",
             WF_SCENE_MAX_ERRORS);
  return wf__error(WF_ERR_PARSE, func, "%s", tls_errors);
}

static wf_status parse(const char *text, size_t len, const char *name, const char *base_dir,
                       const wf_scene_overrides *ov, wf_scene **out, const char *func) {
  if (!out) return wf__error(WF_ERR_INVALID, func, "out is NULL");
  *out = NULL;
  tls_errors[0] = '\0';
  if (!text && len) return wf__error(WF_ERR_INVALID, func, "text is NULL");
  if (ov && ov->count > 0 && !ov->set)
    return wf__error(WF_ERR_INVALID, func, "overrides: count %d but set is NULL", ov->count);
  wfs_errors *err = calloc(1, sizeof *err);
  if (!err) return wf__error(WF_ERR_OUT_OF_MEMORY, func, "out of host memory");
  err->name = name ? name : "scene";
  err->text = text ? text : "";
  err->len = len;

  size_t at;
  char msg[WFS_MSG_MAX];
  if (wfs_syntax_check(err->text, len, &at, msg, sizeof msg)) {
    wfs_error_at(err, at, "%s", msg);
    wf_status st = report(err, func);
    free(err);
    return st;
  }
  size_t skip = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text + skip, len - skip, &end, 0);
  if (!root) {
    /* the strict check passed, so this is cJSON's own limit (or memory) */
    size_t off = end ? (size_t)(end - text) : 0;
    wfs_error_at(err, off, "this JSON could not be read (out of memory or beyond cJSON's limits)");
    wf_status st = report(err, func);
    free(err);
    return st;
  }

  wf_scene *sc = calloc(1, sizeof *sc);
  wfs_override_mark *marks = NULL;
  int n_ov = ov ? ov->count : 0;
  if (n_ov > 0) marks = calloc((size_t)n_ov, sizeof *marks);
  ctx c = {.err = err, .base_dir = base_dir, .scene = sc, .oom = !sc || (n_ov > 0 && !marks)};
  if (!c.oom) {
    for (int i = 0; i < n_ov; i++) {
      if (!ov->set[i]) {
        wfs_error(err, NULL, "--set #%d is NULL", i);
        continue;
      }
      apply_override(&c, root, ov->set[i], &marks[err->mark_count]);
      if (marks[err->mark_count].text) err->mark_count++;
    }
    err->marks = marks;
  }
  if (!c.oom) {
    check_keys(&c, root, "", top_keys, NF(top_keys), NULL, 0);
    const cJSON *d = get(root, "description");
    if (d && !cJSON_IsString(d)) type_error(&c, "description", "a string", d);
    sc->description = dup_str(&c, cJSON_IsString(d) ? d->valuestring : "");
    read_simulation(&c, root);
    read_materials(&c, root);
    read_colliders(&c, root);
    read_emitters(&c, root);
    read_cloths(&c, root);
    read_forces(&c, root);
    read_outputs(&c, root);
    read_view(&c, root);
    check_names(&c);
  }
  cJSON_Delete(root);
  wf_status st = WF_OK;
  if (c.oom) {
    st = wf__error(WF_ERR_OUT_OF_MEMORY, func, "%s: out of host memory", err->name);
  } else if (err->count) {
    st = report(err, func);
  }
  free(marks);
  free(err);
  if (st != WF_OK) {
    wf_scene_destroy(sc);
    return st;
  }
  *out = sc;
  return WF_OK;
}

wf_status wf_scene_parse(const char *text, size_t len, const char *name_for_messages,
                         const char *base_dir, const wf_scene_overrides *ov, wf_scene **out) {
  return parse(text, len, name_for_messages, base_dir, ov, out, __func__);
}

wf_status wf_scene_load(const char *path, const wf_scene_overrides *ov, wf_scene **out) {
  if (!out) return wf__error(WF_ERR_INVALID, __func__, "out is NULL");
  *out = NULL;
  tls_errors[0] = '\0';
  if (!path) return wf__error(WF_ERR_INVALID, __func__, "path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f)
    return wf__error(WF_ERR_IO, __func__, "cannot open scene '%s': %s", path, strerror(errno));
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      if (cap >= ((size_t)64 << 20)) {
        free(buf);
        fclose(f);
        return wf__error(WF_ERR_IO, __func__, "scene '%s' is larger than 64 MiB", path);
      }
      size_t ncap = cap ? cap * 2 : 1 << 16;
      char *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        fclose(f);
        return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "reading '%s': out of host memory", path);
      }
      buf = nb, cap = ncap;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  int saved = errno;
  fclose(f);
  if (bad) {
    free(buf);
    return wf__error(WF_ERR_IO, __func__, "cannot read scene '%s': %s", path, strerror(saved));
  }
  /* the directory of the scene resolves its asset paths */
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  wf_status st = parse(buf, len, path, dir, ov, out, __func__);
  free(buf);
  return st;
}
