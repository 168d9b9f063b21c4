/* libFuzzer target: scene files from memory.
 *
 * The input is scene text; the bytes after a first NUL, if any, are `--set` overrides, one per
 * line. Asset paths resolve against a directory that does not exist, so mesh cloths fail cleanly.
 * Beyond "no crash, no leak, no undefined behaviour", it checks the loader's contracts: a failed
 * parse returns no scene and a message; a scene that parses prints canonical JSON that parses again
 * to a scene printing the very same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_OVERRIDES = 8 };
static const char *const base_dir = "/nonexistent-weft-fuzz-base";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  const uint8_t *nul = memchr(data, 0, size);
  size_t len = nul ? (size_t)(nul - data) : size;

  /* overrides: NUL-terminated copies of the lines after the NUL */
  char *ov_buf = NULL;
  const char *set[MAX_OVERRIDES];
  int n_set = 0;
  if (nul) {
    size_t rest = size - len - 1;
    ov_buf = malloc(rest + 1);
    if (!ov_buf) return 0;
    memcpy(ov_buf, nul + 1, rest);
    ov_buf[rest] = '\0';
    for (char *line = ov_buf; line && *line && n_set < MAX_OVERRIDES;) {
      char *nl = strchr(line, '\n');
      if (nl) *nl = '\0';
      set[n_set++] = line;
      line = nl ? nl + 1 : NULL;
    }
  }
  wf_scene_overrides ov = {set, n_set};

  wf_scene *s = (wf_scene *)&ov; /* must come back NULL on failure */
  wf_status st = wf_scene_parse(text, len, "fuzz.json", base_dir, &ov, &s);
  if (st != WF_OK) {
    if (s != NULL) abort();
    if (st == WF_ERR_PARSE && wf_scene_errors()[0] == '\0') abort(); /* a parse error says why */
    free(ov_buf);
    return 0;
  }
  char *json = wf_scene_to_json(s);
  if (!json) abort();
  wf_scene *t = NULL;
  if (wf_scene_parse(json, strlen(json), "canonical.json", base_dir, NULL, &t) != WF_OK) abort();
  char *again = wf_scene_to_json(t);
  if (!again || strcmp(json, again) != 0) abort();
  free(again);
  free(json);
  wf_scene_destroy(t);
  wf_scene_destroy(s);
  free(ov_buf);
  return 0;
}
