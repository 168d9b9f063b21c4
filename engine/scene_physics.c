/* What of a scene changes the physics, and how two scenes differ in it (checkpoint resume,
 * weft/world.h: wf_world_checkpoint_changes).
 *
 * The physics of a scene is its canonical JSON (wf_scene_to_json: every default filled in) less
 * what only decides how a run is watched or written: `description`, `outputs`, `camera`, `lights`,
 * `render`, and in `simulation` the run's length (`frames`), the devices (a state resumes bitwise
 * on any devices), the watchdogs (`max_speed`, `max_penetration`: they stop a run, they do not
 * change a frame) and the stop rules; and the names of materials, emitters, cloths and colliders
 * (objects are matched by their place in the lists: a reference by name becomes the index it
 * names). A mesh's file path is replaced by the content of the file it names (`mesh_content`: its
 * size and a 64-bit FNV-1a hash), so a moved file is the same physics and an edited one is not.
 * Everything else is physics: gravity, damping, substeps, fps, determinism, seed, the contact
 * model, coupling, materials, emitters, cloths, colliders with their poses, motion and keyframes,
 * forces.
 *
 * The diff walks two such trees together: objects key by key, arrays element by element; a leaf
 * (or a subtree present on one side only) that differs is one change named by its key path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "world_internal.h"

static void drop(cJSON *o, const char *key) { cJSON_DeleteItemFromObjectCaseSensitive(o, key); }

/* "N bytes, fnv1a64 HEX" of the file at path, or "unreadable: PATH". */
static void content_of(const char *path, char *out, size_t n) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f) {
    snprintf(out, n, "unreadable: %s", path ? path : "(no path)");
    return;
  }
  uint64_t h = 1469598103934665603ull, bytes = 0;
  unsigned char buf[1 << 15];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    for (size_t i = 0; i < got; i++)
      h = (h ^ buf[i]) * 1099511628211ull;
    bytes += got;
  }
  fclose(f);
  snprintf(out, n, "%llu bytes, fnv1a64 %016llx", (unsigned long long)bytes, (unsigned long long)h);
}

static void mesh_content(cJSON *o, const char *path) {
  char c[300];
  if (!o || !cJSON_GetObjectItemCaseSensitive(o, "mesh")) return;
  content_of(path, c, sizeof c);
  drop(o, "mesh");
  cJSON_AddStringToObject(o, "mesh_content", c);
}

char *wfw_scene_physics_json(const wf_scene *sc) {
  char *full = wf_scene_to_json(sc);
  cJSON *root = full ? cJSON_Parse(full) : NULL;
  free(full);
  if (!root) return NULL;
  static const char *const top[] = {"description", "outputs", "camera", "lights", "render"};
  for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
    drop(root, top[i]);
  cJSON *sim = cJSON_GetObjectItemCaseSensitive(root, "simulation");
  static const char *const run[] = {"frames", "devices", "max_speed", "max_penetration",
                                    "stop_when"};
  for (size_t i = 0; sim && i < sizeof run / sizeof run[0]; i++)
    drop(sim, run[i]);
  /* cloth_collision off is the physics of scenes written before the key existed: recorded only
   * when on, so their checkpoints still resume */
  cJSON *cc = sim ? cJSON_GetObjectItemCaseSensitive(sim, "cloth_collision") : NULL;
  if (cc && cJSON_IsFalse(cc)) drop(sim, "cloth_collision");
  /* names are not physics (objects are matched by their place in the lists): references by name
   * become the index they name */
  static const char *const lists[] = {"materials", "particles", "cloths", "colliders"};
  for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
    for (cJSON *o = cJSON_GetObjectItemCaseSensitive(root, lists[l])
                        ? cJSON_GetObjectItemCaseSensitive(root, lists[l])->child
                        : NULL;
         o; o = o->next)
      drop(o, "name");
  cJSON *parts = cJSON_GetObjectItemCaseSensitive(root, "particles");
  for (int i = 0; i < sc->emitter_count; i++) {
    cJSON *o = cJSON_GetArrayItem(parts, i);
    if (o)
      cJSON_ReplaceItemInObjectCaseSensitive(o, "material",
                                             cJSON_CreateNumber(sc->emitters[i].material));
  }
  cJSON *cls = cJSON_GetObjectItemCaseSensitive(root, "cloths");
  for (int i = 0; i < sc->cloth_count; i++) {
    cJSON *att = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cls, i), "attachments");
    for (int j = 0; j < sc->cloths[i].attachment_count; j++) {
      cJSON *a = cJSON_GetArrayItem(att, j);
      if (a)
        cJSON_ReplaceItemInObjectCaseSensitive(
            a, "collider", cJSON_CreateNumber(sc->cloths[i].attachments[j].collider));
    }
  }
  cJSON *cols = cJSON_GetObjectItemCaseSensitive(root, "colliders");
  for (int i = 0; i < sc->collider_count; i++)
    if (sc->colliders[i].type == WF_SCENE_MESH)
      mesh_content(cJSON_GetArrayItem(cols, i), sc->colliders[i].mesh_path);
  cJSON *cloths = cJSON_GetObjectItemCaseSensitive(root, "cloths");
  for (int i = 0; i < sc->cloth_count; i++)
    if (sc->cloths[i].is_mesh) mesh_content(cJSON_GetArrayItem(cloths, i), sc->cloths[i].mesh_path);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  if (!text) return NULL;
  char *res = strdup(text); /* freed with free(), not cJSON_free */
  cJSON_free(text);
  return res;
}

typedef struct diff_ctx {
  wf_scene_change *out;
  int max, count;
} diff_ctx;

/* A value as compact JSON, cut to fit with "..." (NULL: "absent"). */
static void value_text(const cJSON *v, char *out, size_t n) {
  if (!v) {
    snprintf(out, n, "absent");
    return;
  }
  char *t = cJSON_PrintUnformatted(v);
  if (!t) {
    snprintf(out, n, "?");
    return;
  }
  if (strlen(t) >= n && n > 4)
    snprintf(out, n, "%.*s...", (int)(n - 4), t);
  else
    snprintf(out, n, "%s", t);
  cJSON_free(t);
}

static void change(diff_ctx *d, const char *path, const cJSON *a, const cJSON *b) {
  if (d->count < d->max) {
    wf_scene_change *c = &d->out[d->count];
    snprintf(c->path, sizeof c->path, "%s", path);
    value_text(a, c->checkpoint, sizeof c->checkpoint);
    value_text(b, c->scene, sizeof c->scene);
  }
  d->count++;
}

static bool same_leaf(const cJSON *a, const cJSON *b) {
  char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
  bool same = ta && tb && strcmp(ta, tb) == 0;
  cJSON_free(ta), cJSON_free(tb);
  return same;
}

static void walk(diff_ctx *d, const char *path, const cJSON *a, const cJSON *b) {
  char p[sizeof d->out->path];
  if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
    for (const cJSON *e = b->child; e; e = e->next) {
      snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", e->string);
      walk(d, p, cJSON_GetObjectItemCaseSensitive(a, e->string), e);
    }
    for (const cJSON *e = a->child; e; e = e->next)
      if (!cJSON_GetObjectItemCaseSensitive(b, e->string)) {
        snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", e->string);
        change(d, p, e, NULL);
      }
    return;
  }
  if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
    int na = cJSON_GetArraySize(a), nb = cJSON_GetArraySize(b);
    for (int i = 0; i < (na > nb ? na : nb); i++) {
      snprintf(p, sizeof p, "%s[%d]", path, i);
      walk(d, p, cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(b, i));
    }
    return;
  }
  if (!a || !b || !same_leaf(a, b)) change(d, path, a, b);
}

int wfw_scene_physics_diff(const char *old_json, const char *new_json, wf_scene_change *out,
                           int max) {
  cJSON *a = cJSON_Parse(old_json), *b = cJSON_Parse(new_json);
  int n = -1;
  if (a && b) {
    diff_ctx d = {out, out ? max : 0, 0};
    walk(&d, "", a, b);
    n = d.count;
  }
  cJSON_Delete(a), cJSON_Delete(b);
  return n;
}
