/* Helpers shared by the world-split tests (test_world_split.c, test_world_cloth_split.c): a world
 * from scene text with overrides on a device list, the whole state of its objects, a bitwise
 * comparison naming the first difference, and stepping in two calls. The including file defines
 * WORLD_SCENE_NAME (the scene's file name in messages) and includes harness.h, weft/scene.h and
 * weft/world.h first. */
#ifndef WEFT_TESTS_WORLD_SPLIT_UTIL_H
#define WEFT_TESTS_WORLD_SPLIT_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

static inline wf_status make_world(const char *text, const char *const *sets, int n_sets,
                                   const char *device, wf_world **out) {
  wf_scene_overrides ov = {sets, n_sets};
  wf_scene *sc = NULL;
  wf_status st =
      wf_scene_parse(text, strlen(text), WORLD_SCENE_NAME, WEFT_SOURCE_DIR "/scenes", &ov, &sc);
  if (st != WF_OK) {
    TH_FAIL("scene: %s", wf_scene_errors());
    return st;
  }
  wf_world_desc d = wf_world_desc_default();
  d.device = device;
  st = wf_world_create(sc, &d, out);
  wf_scene_destroy(sc);
  if (st != WF_OK) TH_FAIL("wf_world_create(%s): %s", device ? device : "scene", wf_last_error());
  return st;
}

/* Every object's positions then velocities, one after the other; *bytes receives the size. */
static inline float *world_state(wf_world *w, size_t *bytes) {
  size_t n = 0;
  for (int i = 0; i < wf_world_object_count(w); i++) {
    wf_world_object o;
    if (wf_world_object_get(w, i, &o) != WF_OK) return NULL;
    n += o.point_count;
  }
  float *s = malloc(n * 32 + 32), *at = s;
  for (int i = 0; s && i < wf_world_object_count(w); i++) {
    wf_world_object o;
    wf_world_object_get(w, i, &o);
    if (wf_world_object_download(w, i, (float(*)[4])at, (float(*)[4])(at + 4 * o.point_count)) !=
        WF_OK) {
      TH_FAIL("download of object %d: %s", i, wf_last_error());
      free(s);
      return NULL;
    }
    at += 8 * o.point_count;
  }
  *bytes = n * 32;
  return s;
}

static inline bool same_state(const float *a, const float *b, size_t bytes, const char *what) {
  if (memcmp(a, b, bytes) == 0) return true;
  for (size_t i = 0; i < bytes / 4; i++)
    if (memcmp(&a[i], &b[i], 4) != 0) {
      TH_FAIL("%s: first difference at float %zu (point %zu): %.9g vs %.9g", what, i, i / 4, a[i],
              b[i]);
      break;
    }
  return false;
}

/* Steps frames in two calls (several frames per call and one at a time both occur). */
static inline wf_status step(wf_world *w, int frames) {
  wf_status st = wf_world_step(w, frames / 2);
  for (int f = frames / 2; f < frames && st == WF_OK; f++)
    st = wf_world_step(w, 1);
  if (st == WF_OK) st = wf_world_check(w);
  if (st != WF_OK) TH_FAIL("stepping: %s", wf_last_error());
  return st;
}

#endif
