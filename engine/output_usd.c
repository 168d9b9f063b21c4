/* The USD output of a run (output_usd.h): scene.usda, usd/static.usda, usd/manifest.usda and a
 * layer per written frame, as ASCII USD.
 *
 * Why value clips: USD resolves an attribute's time samples from its strongest layer alone, so
 * frames cannot be added as sublayers; one file holding every sample would have to be rewritten
 * whole (all frames so far) at each frame to stay valid when a run is interrupted. Clips keep each
 * frame in its own small layer, written once, and the stage file that lists them stays small
 * (tens of bytes per frame) and is replaced atomically after each frame.
 */
#define _POSIX_C_SOURCE 200809L
#include "output_usd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "health.h"
#include "internal/error.h"
#include "solvers/collider/mesh_internal.h"
#include "weft/collider.h"
#include "weft/io.h"
#include "weft/particles.h"

#define USD_NAME_MAX (WF_SCENE_NAME_MAX + 16)

struct wfo_usd {
  wf_world *w;
  const wf_scene *sc;
  char *dir;
  int every;
  wf_scene_up_axis up;
  int n_objects, n_colliders;
  char (*obj_name)[USD_NAME_MAX]; /* prim names, unique and valid */
  char (*col_name)[USD_NAME_MAX];
  wf_collider_desc *col; /* the scene's colliders, for their poses (keys: copies; no mesh) */
  int64_t *frames;       /* written frames listed in scene.usda, increasing */
  size_t n_frames, cap_frames;
  float (*pos)[4], (*vel)[4];
  float *xyz, *normal;
  char path[4096];
};

/* A USD prim name from s: [A-Za-z_][A-Za-z0-9_]*, made unique among names[0..n) with _<index>. */
static void prim_name(char *out, const char *s, char (*names)[USD_NAME_MAX], int n, int index) {
  size_t k = 0;
  if (!(*s >= 'A' && *s <= 'Z') && !(*s >= 'a' && *s <= 'z') && *s != '_') out[k++] = '_';
  for (; *s && k + 1 < WF_SCENE_NAME_MAX; s++) {
    char c = *s;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    out[k++] = ok ? c : '_';
  }
  out[k] = '\0';
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], out) == 0) {
      snprintf(out + k, USD_NAME_MAX - k, "_%d", index);
      break;
    }
}

static wf_status file_path(wfo_usd *u, const char *fmt, long long frame) {
  char name[64];
  snprintf(name, sizeof name, fmt, frame);
  int len = snprintf(u->path, sizeof u->path, "%s/%s", u->dir, name);
  if (len < 0 || (size_t)len >= sizeof u->path)
    return wf__error(WF_ERR_INVALID, NULL, "a path in '%s' is too long", u->dir);
  return WF_OK;
}

/* ---- the static layer and the manifest ---------------------------------------------------- */

static void put_vec3(wf_atomic_file *f, const char *type, const char *name, const float *v) {
  wf_atomic_file_printf(f, "            %s %s = (%.9g, %.9g, %.9g)\n", type, name, v[0], v[1],
                        v[2]);
}

/* The shape of collider k in its rest frame, as the child "shape" of its Xform. */
static void static_shape(wfo_usd *u, wf_atomic_file *f, int k) {
  const wf_collider_desc *d = &u->col[k];
  switch (d->type) {
  case WF_COLLIDER_SPHERE:
    wf_atomic_file_printf(f, "        def Sphere \"shape\"\n        {\n");
    wf_atomic_file_printf(f, "            double radius = %.9g\n", d->radius);
    put_vec3(f, "double3", "xformOp:translate", d->center);
    wf_atomic_file_printf(f,
                          "            uniform token[] xformOpOrder = [\"xformOp:translate\"]\n");
    break;
  case WF_COLLIDER_BOX: /* a Cube of size 2 spans [-1, 1]: scaled by the half extents */
    wf_atomic_file_printf(f, "        def Cube \"shape\"\n        {\n");
    wf_atomic_file_printf(f, "            double size = 2\n");
    put_vec3(f, "double3", "xformOp:translate", d->center);
    put_vec3(f, "float3", "xformOp:scale", d->half_extents);
    wf_atomic_file_printf(f, "            uniform token[] xformOpOrder = [\"xformOp:translate\", "
                             "\"xformOp:scale\"]\n");
    break;
  case WF_COLLIDER_CAPSULE: { /* a Capsule along y, turned onto p1 - p0, at the midpoint */
    float a[3], m[3], len = 0.0f;
    for (int i = 0; i < 3; i++)
      a[i] = d->p1[i] - d->p0[i], m[i] = 0.5f * (d->p0[i] + d->p1[i]), len += a[i] * a[i];
    len = sqrtf(len);
    float q[4] = {1.0f, 0.0f, 0.0f, 0.0f}; /* w, x, y, z: +y onto a */
    if (len > 0.0f) {
      float c = a[1] / len;
      if (c < -0.999999f) {
        q[0] = 0.0f, q[1] = 1.0f;
      } else {
        float s = sqrtf(2.0f * (1.0f + c));
        q[0] = 0.5f * s, q[1] = a[2] / len / s, q[3] = -a[0] / len / s;
      }
    }
    wf_atomic_file_printf(f, "        def Capsule \"shape\"\n        {\n");
    wf_atomic_file_printf(f, "            uniform token axis = \"Y\"\n");
    wf_atomic_file_printf(f, "            double height = %.9g\n", len);
    wf_atomic_file_printf(f, "            double radius = %.9g\n", d->radius);
    put_vec3(f, "double3", "xformOp:translate", m);
    wf_atomic_file_printf(f, "            quatf xformOp:orient = (%.9g, %.9g, %.9g, %.9g)\n", q[0],
                          q[1], q[2], q[3]);
    wf_atomic_file_printf(f, "            uniform token[] xformOpOrder = [\"xformOp:translate\", "
                             "\"xformOp:orient\"]\n");
    break;
  }
  case WF_COLLIDER_PLANE: { /* a quad 2 km across (readers lack an infinite plane) */
    const float *n = d->normal, H = 1000.0f;
    float t[3] = {n[1], -n[0], 0.0f};
    if (fabsf(n[2]) > 0.9f) t[0] = 0.0f, t[1] = n[2], t[2] = -n[1];
    float tl = sqrtf(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
    float b[3] = {n[1] * t[2] - n[2] * t[1], n[2] * t[0] - n[0] * t[2], n[0] * t[1] - n[1] * t[0]};
    float bl = sqrtf(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    static const float corner[4][2] = {{-1, -1}, {1, -1}, {1, 1}, {-1, 1}};
    wf_atomic_file_printf(f, "        def Mesh \"shape\"\n        {\n");
    wf_atomic_file_printf(f, "            int[] faceVertexCounts = [4]\n");
    wf_atomic_file_printf(f, "            int[] faceVertexIndices = [0, 1, 2, 3]\n");
    wf_atomic_file_printf(f, "            point3f[] points = [");
    for (int c = 0; c < 4; c++) {
      float p[3];
      for (int i = 0; i < 3; i++)
        p[i] = n[i] * d->offset + H * (corner[c][0] * t[i] / tl + corner[c][1] * b[i] / bl);
      wf_atomic_file_printf(f, "%s(%.9g, %.9g, %.9g)", c ? ", " : "", p[0], p[1], p[2]);
    }
    wf_atomic_file_printf(f, "]\n");
    wf_atomic_file_printf(f, "            uniform token subdivisionScheme = \"none\"\n");
    break;
  }
  case WF_COLLIDER_MESH: { /* its triangles at rest, as the solvers hold them */
    const wf_collider_mesh *m = d->mesh;
    uint32_t nt = m ? m->info.triangles : 0;
    wf_atomic_file_printf(f, "        def Mesh \"shape\"\n        {\n");
    wf_atomic_file_printf(f, "            int[] faceVertexCounts = [");
    for (uint32_t t = 0; t < nt; t++)
      wf_atomic_file_printf(f, t ? ", 3" : "3");
    wf_atomic_file_printf(f, "]\n            int[] faceVertexIndices = [");
    for (uint32_t i = 0; i < 3 * nt; i++)
      wf_atomic_file_printf(f, i ? ", %u" : "%u", i);
    wf_atomic_file_printf(f, "]\n            point3f[] points = [");
    for (uint32_t t = 0; t < nt; t++) {
      const wfm_v4 *v[3] = {&m->tris[t].a, &m->tris[t].b, &m->tris[t].c};
      for (int j = 0; j < 3; j++)
        wf_atomic_file_printf(f, "%s(%.9g, %.9g, %.9g)", t || j ? ", " : "", v[j]->x, v[j]->y,
                              v[j]->z);
    }
    wf_atomic_file_printf(f, "]\n            uniform token subdivisionScheme = \"none\"\n");
    break;
  }
  default: wf_atomic_file_printf(f, "        def Xform \"shape\"\n        {\n"); break;
  }
  wf_atomic_file_printf(f, "        }\n");
}

/* Texture coordinates of a grid cloth of nx x ny vertices: u along the columns, v = 1 on row 0
 * (the top edge). */
static void grid_st(wf_atomic_file *f, int nx, int ny) {
  wf_atomic_file_printf(f, "        texCoord2f[] primvars:st = [");
  for (int r = 0; r < ny; r++)
    for (int c = 0; c < nx; c++)
      wf_atomic_file_printf(f, "%s(%.9g, %.9g)", r || c ? ", " : "", (double)c / (nx - 1),
                            1.0 - (double)r / (ny - 1));
  wf_atomic_file_printf(f, "] (\n            interpolation = \"vertex\"\n        )\n");
}

static wf_status write_static(wfo_usd *u) {
  wf_atomic_file *f = NULL;
  wf_status st = file_path(u, "usd/static.usda", 0);
  if (st == WF_OK) st = wf_atomic_file_open(u->path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f, "#usda 1.0\n(\n    doc = \"weft: the prims of scene.usda\"\n)\n\n");
  wf_atomic_file_printf(f, "def Xform \"World\" (\n    kind = \"assembly\"\n)\n{\n");
  if (u->up == WF_SCENE_UP_Z) /* (x, y, z) -> (x, -z, y): the files' z-up axes */
    wf_atomic_file_printf(f, "    float xformOp:rotateX = 90\n"
                             "    uniform token[] xformOpOrder = [\"xformOp:rotateX\"]\n\n");
  wf_atomic_file_printf(f, "    def Scope \"objects\"\n    {\n");
  int cloth = 0;
  for (int i = 0; i < u->n_objects; i++) {
    wf_world_object o;
    wf_world_object_get(u->w, i, &o);
    if (o.kind != WF_WORLD_CLOTH) {
      wf_atomic_file_printf(f, "    def Points \"%s\"\n    {\n    }\n", u->obj_name[i]);
      continue;
    }
    wf_atomic_file_printf(f, "    def Mesh \"%s\"\n    {\n", u->obj_name[i]);
    wf_atomic_file_printf(f, "        uniform bool doubleSided = 1\n");
    wf_atomic_file_printf(f, "        uniform token subdivisionScheme = \"none\"\n");
    wf_atomic_file_printf(f, "        int[] faceVertexCounts = [");
    for (uint32_t t = 0; t < o.triangle_count; t++)
      wf_atomic_file_printf(f, t ? ", 3" : "3");
    wf_atomic_file_printf(f, "]\n        int[] faceVertexIndices = [");
    for (uint32_t t = 0; t < 3 * o.triangle_count; t++)
      wf_atomic_file_printf(f, t ? ", %u" : "%u", o.triangles[t]);
    wf_atomic_file_printf(f, "]\n");
    const wf_scene_cloth *c = u->sc && cloth < u->sc->cloth_count ? &u->sc->cloths[cloth] : NULL;
    if (c && !c->is_mesh &&
        (uint32_t)c->resolution[0] * (uint32_t)c->resolution[1] == o.point_count)
      grid_st(f, c->resolution[0], c->resolution[1]);
    wf_atomic_file_printf(f, "    }\n");
    cloth++;
  }
  wf_atomic_file_printf(f, "    }\n\n    def Scope \"colliders\"\n    {\n");
  for (int k = 0; k < u->n_colliders; k++) {
    const float *p = u->col[k].pivot;
    wf_atomic_file_printf(f, "    def Xform \"%s\"\n    {\n", u->col_name[k]);
    wf_atomic_file_printf(f, "        double3 xformOp:translate:pivot = (%.9g, %.9g, %.9g)\n",
                          -(double)p[0], -(double)p[1], -(double)p[2]);
    wf_atomic_file_printf(f, "        uniform token[] xformOpOrder = [\"xformOp:translate\", "
                             "\"xformOp:orient\", \"xformOp:translate:pivot\"]\n");
    static_shape(u, f, k);
    wf_atomic_file_printf(f, "    }\n");
  }
  wf_atomic_file_printf(f, "    }\n}\n");
  return wf_atomic_file_commit(f);
}

static wf_status write_manifest(wfo_usd *u) {
  wf_atomic_file *f = NULL;
  wf_status st = file_path(u, "usd/manifest.usda", 0);
  if (st == WF_OK) st = wf_atomic_file_open(u->path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f, "#usda 1.0\n\nover \"World\"\n{\n    over \"objects\"\n    {\n");
  for (int i = 0; i < u->n_objects; i++) {
    wf_world_object o;
    wf_world_object_get(u->w, i, &o);
    wf_atomic_file_printf(f, "        over \"%s\"\n        {\n", u->obj_name[i]);
    wf_atomic_file_printf(f, "            point3f[] points\n            vector3f[] velocities\n"
                             "            float3[] extent\n");
    wf_atomic_file_printf(f, o.kind == WF_WORLD_CLOTH ? "            normal3f[] normals\n"
                                                      : "            float[] widths\n");
    wf_atomic_file_printf(f, "        }\n");
  }
  wf_atomic_file_printf(f, "    }\n    over \"colliders\"\n    {\n");
  for (int k = 0; k < u->n_colliders; k++)
    wf_atomic_file_printf(f,
                          "        over \"%s\"\n        {\n            double3 xformOp:translate\n"
                          "            quatf xformOp:orient\n            token visibility\n"
                          "        }\n",
                          u->col_name[k]);
  wf_atomic_file_printf(f, "    }\n}\n");
  return wf_atomic_file_commit(f);
}

/* ---- frames ------------------------------------------------------------------------------- */

static void put_array3(wf_atomic_file *f, const char *type, const char *attr, long long frame,
                       const float *v, size_t n) {
  wf_atomic_file_printf(f, "            %s %s.timeSamples = {\n                %lld: [", type, attr,
                        frame);
  for (size_t j = 0; j < n; j++)
    wf_atomic_file_printf(f, "%s(%.9g, %.9g, %.9g)", j ? ", " : "", v[3 * j], v[3 * j + 1],
                          v[3 * j + 2]);
  wf_atomic_file_printf(f, "],\n            }\n");
}

static wf_status write_frame_layer(wfo_usd *u, int64_t frame) {
  long long fr = (long long)frame;
  wf_atomic_file *f = NULL;
  wf_status st = file_path(u, "usd/frame_%06lld.usda", fr);
  if (st == WF_OK) st = wf_atomic_file_open(u->path, &f);
  if (st != WF_OK) return st;
  wf_atomic_file_printf(f, "#usda 1.0\n(\n    doc = \"weft: frame %lld of scene.usda\"\n)\n\n", fr);
  wf_atomic_file_printf(f, "over \"World\"\n{\n    over \"objects\"\n    {\n");
  for (int i = 0; i < u->n_objects && st == WF_OK; i++) {
    wf_world_object o;
    st = wf_world_object_get(u->w, i, &o);
    if (st == WF_OK) st = wf_world_object_download(u->w, i, u->pos, u->vel);
    if (st != WF_OK) break;
    size_t n = o.point_count;
    for (size_t j = 0; j < n; j++)
      for (int k = 0; k < 3; k++)
        u->xyz[3 * j + k] = u->pos[j][k];
    wf_atomic_file_printf(f, "        over \"%s\"\n        {\n", u->obj_name[i]);
    put_array3(f, "point3f[]", "points", fr, u->xyz, n);
    /* extent: the bounds of the points (grown by each particle's radius) */
    float lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (size_t j = 0; j < n; j++)
      for (int k = 0; k < 3; k++) {
        float r = o.kind == WF_WORLD_CLOTH ? 0.0f : u->pos[j][3];
        float a = u->pos[j][k] - r, b = u->pos[j][k] + r;
        lo[k] = j == 0 || a < lo[k] ? a : lo[k];
        hi[k] = j == 0 || b > hi[k] ? b : hi[k];
      }
    wf_atomic_file_printf(f,
                          "            float3[] extent.timeSamples = {\n                %lld: "
                          "[(%.9g, %.9g, %.9g), (%.9g, %.9g, %.9g)],\n            }\n",
                          fr, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
    for (size_t j = 0; j < n; j++)
      for (int k = 0; k < 3; k++)
        u->xyz[3 * j + k] = u->vel[j][k];
    put_array3(f, "vector3f[]", "velocities", fr, u->xyz, n);
    if (o.kind == WF_WORLD_CLOTH) {
      for (size_t j = 0; j < n; j++)
        for (int k = 0; k < 3; k++)
          u->xyz[3 * j + k] = u->pos[j][k];
      wfo_vertex_normals(u->xyz, n, o.triangles, o.triangle_count, u->normal);
      put_array3(f, "normal3f[]", "normals", fr, u->normal, n);
    } else {
      wf_atomic_file_printf(
          f, "            float[] widths.timeSamples = {\n                %lld: [", fr);
      for (size_t j = 0; j < n; j++)
        wf_atomic_file_printf(f, j ? ", %.9g" : "%.9g", 2.0f * u->pos[j][3]);
      wf_atomic_file_printf(f, "],\n            }\n");
    }
    wf_atomic_file_printf(f, "        }\n");
  }
  wf_atomic_file_printf(f, "    }\n    over \"colliders\"\n    {\n");
  double t = (double)frame * wf_world_frame_dt(u->w);
  for (int k = 0; k < u->n_colliders && st == WF_OK; k++) {
    wf_collider_pose p;
    st = wf_collider_pose_at(&u->col[k], (float)t, &p);
    if (st != WF_OK) break;
    float *q = p.rotation; /* x, y, z, w; all zero: no rotation */
    if (!q[0] && !q[1] && !q[2] && !q[3]) q[3] = 1.0f;
    bool on = t >= u->col[k].active_from &&
              (u->col[k].active_until == 0.0f || t < u->col[k].active_until);
    wf_atomic_file_printf(f, "        over \"%s\"\n        {\n", u->col_name[k]);
    wf_atomic_file_printf(f,
                          "            double3 xformOp:translate.timeSamples = {\n"
                          "                %lld: (%.9g, %.9g, %.9g),\n            }\n",
                          fr, p.position[0], p.position[1], p.position[2]);
    wf_atomic_file_printf(f,
                          "            quatf xformOp:orient.timeSamples = {\n"
                          "                %lld: (%.9g, %.9g, %.9g, %.9g),\n            }\n",
                          fr, q[3], q[0], q[1], q[2]);
    wf_atomic_file_printf(f,
                          "            token visibility.timeSamples = {\n"
                          "                %lld: \"%s\",\n            }\n        }\n",
                          fr, on ? "inherited" : "invisible");
  }
  wf_atomic_file_printf(f, "    }\n}\n");
  if (st != WF_OK) {
    wf_atomic_file_abort(f);
    return st;
  }
  return wf_atomic_file_commit(f);
}

/* scene.usda: the stage over the frames listed in u->frames. */
static wf_status write_stage(wfo_usd *u) {
  wf_atomic_file *f = NULL;
  wf_status st = file_path(u, "scene.usda", 0);
  if (st == WF_OK) st = wf_atomic_file_open(u->path, &f);
  if (st != WF_OK) return st;
  double fps = 1.0 / wf_world_frame_dt(u->w);
  long long first = u->n_frames ? (long long)u->frames[0] : 0;
  long long last = u->n_frames ? (long long)u->frames[u->n_frames - 1] : 0;
  wf_atomic_file_printf(f,
                        "#usda 1.0\n(\n    defaultPrim = \"World\"\n"
                        "    doc = \"weft run: %zu frames; time code = frame\"\n"
                        "    startTimeCode = %lld\n    endTimeCode = %lld\n"
                        "    timeCodesPerSecond = %.17g\n    framesPerSecond = %.17g\n"
                        "    metersPerUnit = 1\n    upAxis = \"%s\"\n"
                        "    subLayers = [\n        @./usd/static.usda@\n    ]\n)\n\n",
                        u->n_frames, first, last, fps, fps, u->up == WF_SCENE_UP_Z ? "Z" : "Y");
  wf_atomic_file_printf(f, "over \"World\" (\n    clips = {\n        dictionary default = {\n");
  wf_atomic_file_printf(f, "            double2[] active = [");
  for (size_t i = 0; i < u->n_frames; i++)
    wf_atomic_file_printf(f, "%s(%lld, %zu)", i ? ", " : "", (long long)u->frames[i], i);
  wf_atomic_file_printf(f, "]\n            asset[] assetPaths = [");
  for (size_t i = 0; i < u->n_frames; i++)
    wf_atomic_file_printf(f, "%s@./usd/frame_%06lld.usda@", i ? ", " : "", (long long)u->frames[i]);
  wf_atomic_file_printf(f, "]\n            asset manifestAssetPath = @./usd/manifest.usda@\n");
  wf_atomic_file_printf(f, "            string primPath = \"/World\"\n");
  wf_atomic_file_printf(f, "            double2[] times = [");
  for (size_t i = 0; i < u->n_frames; i++)
    wf_atomic_file_printf(f, "%s(%lld, %lld)", i ? ", " : "", (long long)u->frames[i],
                          (long long)u->frames[i]);
  wf_atomic_file_printf(f, "]\n        }\n    }\n)\n{\n}\n");
  return wf_atomic_file_commit(f);
}

static wf_status add_frame(wfo_usd *u, int64_t frame) {
  while (u->n_frames && u->frames[u->n_frames - 1] >= frame) /* written again: replaced */
    u->n_frames--;
  if (u->n_frames == u->cap_frames) {
    size_t cap = u->cap_frames ? 2 * u->cap_frames : 64;
    int64_t *p = realloc(u->frames, cap * sizeof *p);
    if (!p) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "no memory for the list of USD frames");
    u->frames = p, u->cap_frames = cap;
  }
  u->frames[u->n_frames++] = frame;
  return WF_OK;
}

/* ---- the object --------------------------------------------------------------------------- */

wf_status wfo_usd_create(wf_world *w, const wf_scene *sc, const char *dir, int every,
                         wf_scene_up_axis up, int64_t resume, wfo_usd **out) {
  *out = NULL;
  wfo_usd *u = calloc(1, sizeof *u);
  if (!u) return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_create", "no memory for USD");
  u->w = w, u->sc = sc, u->every = every > 0 ? every : 1, u->up = up;
  u->dir = strdup(dir);
  u->n_objects = wf_world_object_count(w);
  u->n_colliders = sc ? sc->collider_count : 0;
  uint32_t most = 1;
  for (int i = 0; i < u->n_objects; i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    if (o.point_count > most) most = o.point_count;
  }
  u->obj_name = calloc((size_t)u->n_objects + 1, sizeof *u->obj_name);
  u->col_name = calloc((size_t)u->n_colliders + 1, sizeof *u->col_name);
  u->col = calloc((size_t)u->n_colliders + 1, sizeof *u->col);
  u->pos = malloc((size_t)most * sizeof *u->pos);
  u->vel = malloc((size_t)most * sizeof *u->vel);
  u->xyz = malloc((size_t)most * 3 * sizeof *u->xyz);
  u->normal = malloc((size_t)most * 3 * sizeof *u->normal);
  if (!u->dir || !u->obj_name || !u->col_name || !u->col || !u->pos || !u->vel || !u->xyz ||
      !u->normal) {
    wfo_usd_destroy(u);
    return wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_create",
                     "no memory for the USD output (%u points)", most);
  }
  for (int i = 0; i < u->n_objects; i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    prim_name(u->obj_name[i], o.name, u->obj_name, i, i);
  }
  wf_status st = WF_OK;
  for (int k = 0; k < u->n_colliders && st == WF_OK; k++) {
    u->col[k] = wfw_collider_of(&sc->colliders[k]);
    u->col[k].name = NULL;
    prim_name(u->col_name[k], sc->colliders[k].name, u->col_name, k, k);
    if (u->col[k].key_count) { /* the scene need not outlive create */
      wf_collider_key *keys = malloc(u->col[k].key_count * sizeof *keys);
      if (keys)
        memcpy(keys, u->col[k].keys, u->col[k].key_count * sizeof *keys);
      else
        st = wf__error(WF_ERR_OUT_OF_MEMORY, "wf_run_outputs_create", "no memory for keyframes");
      u->col[k].keys = keys;
      if (!keys) u->col[k].key_count = 0;
    }
  }
  if (st == WF_OK) st = file_path(u, "usd", 0);
  if (st == WF_OK) st = wf_dir_create(u->path);
  if (st == WF_OK) st = write_static(u);
  if (st == WF_OK) st = write_manifest(u);
  for (int k = 0; k < u->n_colliders; k++)
    if (u->col[k].type == WF_COLLIDER_MESH) { /* the mesh is the scene's and is in static.usda:
                                                 the pose needs only the motion */
      u->col[k].type = WF_COLLIDER_SPHERE, u->col[k].radius = 1.0f, u->col[k].mesh = NULL;
    }
  /* frames 0, every, 2 every, ... and the resume frame itself, as far as their layers are there */
  for (int64_t f = 0; st == WF_OK && resume > 0 && f <= resume;
       f = f < resume && f + u->every > resume ? resume : f + u->every) {
    if ((st = file_path(u, "usd/frame_%06lld.usda", (long long)f)) == WF_OK &&
        access(u->path, R_OK) == 0)
      st = add_frame(u, f);
  }
  if (st == WF_OK && resume > 0) st = write_stage(u);
  if (st != WF_OK) {
    wfo_usd_destroy(u);
    return st;
  }
  *out = u;
  return WF_OK;
}

wf_status wfo_usd_write_frame(wfo_usd *u, int64_t frame) {
  wf_status st = write_frame_layer(u, frame);
  if (st == WF_OK) st = add_frame(u, frame);
  return st == WF_OK ? write_stage(u) : st;
}

void wfo_usd_destroy(wfo_usd *u) {
  if (!u) return;
  for (int k = 0; u->col && k < u->n_colliders; k++)
    free((void *)u->col[k].keys);
  free(u->dir), free(u->obj_name), free(u->col_name), free(u->col), free(u->frames);
  free(u->pos), free(u->vel), free(u->xyz), free(u->normal), free(u);
}
