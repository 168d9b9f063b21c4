/* Every scene in the docs runs: each scene written in README.md or a docs/ page is extracted,
 * checked with `weft validate` and run for 3 frames with `weft run --device cpu` (the program named
 * by $WEFT_CLI), so a key renamed in the schema or a scene too stiff for its time step fails here
 * rather than in a reader's hands.
 *
 * The rule, for whoever writes docs:
 *   - a fenced code block whose language (the first word after the fence) is `json` is a whole
 *     scene: it must be a JSON object with a "simulation", "particles" or "cloths" key, and it
 *     must validate and run;
 *   - JSON that is not a whole scene (a fragment, or another file such as summary.json) is fenced
 *     as `jsonc`, which this test does not run;
 *   - conversely, a block with any other language that parses as a whole scene is an error: tag it
 *     `json` so that it is run.
 * Failures name the doc file and the line of the block's opening fence; weft's own messages name
 * the extracted file, whose line 1 is the line after that fence.
 *
 * Scenes are written to a temporary directory with `assets` linked to the source tree's, so a
 * mesh named as from the repository root or from scenes/ ("assets/meshes/disc.obj") is found. The
 * docs are read at test time, from WEFT_SOURCE_DIR, so editing them needs no rebuild.
 */
#include "harness.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>

#ifndef WEFT_SOURCE_DIR
#error "WEFT_SOURCE_DIR must name the source tree (README.md, docs/, assets/)"
#endif

#define DOC_FRAMES "3" /* enough to show a scene loads, steps and writes; not that it is pretty */
enum { MAX_DOCS = 64 };

static char tmp[512];
static const char *cli;
static int scenes_run;

/* A failure at a place in a doc: "  docs/x.md:12: message". */
static void doc_fail(const char *doc, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  th_fails++;
  fprintf(stderr, "  %s:%d: ", doc, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Runs `weft ARGS...` (NULL-terminated) in tmp with stdout and stderr into log; its exit code, or
 * -1 when it died by a signal or ran past 60 s (a 3-frame run takes well under a second). */
static int weft(const char *log, const char *const *args) {
  const char *argv[16];
  int n = 0;
  argv[n++] = cli;
  for (int i = 0; args[i] && n < 15; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int in = open("/dev/null", O_RDONLY);
    if (o < 0 || in < 0 || chdir(tmp) != 0) _exit(126);
    dup2(in, 0), dup2(o, 1), dup2(o, 2);
    execv(cli, (char *const *)argv);
    _exit(127);
  }
  if (pid < 0) return -1;
  for (double t0 = th_now_ms();;) {
    int ws;
    pid_t r = waitpid(pid, &ws, WNOHANG);
    if (r == pid) return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    if (r < 0) return -1;
    if (th_now_ms() - t0 > 60e3) {
      kill(pid, SIGKILL);
      waitpid(pid, &ws, 0);
      return -1;
    }
    th_sleep_ms(5);
  }
}

#define WEFT(log, ...) weft(log, (const char *const[]){__VA_ARGS__, NULL})

/* 1 when text is a JSON object with one of the keys that make a whole scene. */
static int is_whole_scene(const char *text) {
  cJSON *j = cJSON_ParseWithOpts(text, NULL, 1);
  int whole = cJSON_IsObject(j) &&
              (cJSON_HasObjectItem(j, "simulation") || cJSON_HasObjectItem(j, "particles") ||
               cJSON_HasObjectItem(j, "cloths"));
  cJSON_Delete(j);
  return whole;
}

/* Validates and runs one ```json block (text) that opens at doc:line. */
static void check_scene(const char *doc, int line, const char *text) {
  cJSON *j = cJSON_ParseWithOpts(text, NULL, 1);
  int parses = j != NULL;
  cJSON_Delete(j);
  /* a block that is not JSON at all is left to `weft validate`, which says where it breaks */
  if (parses && !is_whole_scene(text)) {
    doc_fail(doc, line,
             "a ```json block that is not a whole scene (an object with \"simulation\", "
             "\"particles\" or \"cloths\"): fence a fragment or other JSON as ```jsonc");
    return;
  }
  /* docs/scenes.md:10 -> docs_scenes_md_10.json, so weft's messages point back at the doc */
  char base[256], path[800], log[800], out[800];
  snprintf(base, sizeof base, "%s_%d", doc, line);
  for (char *c = base; *c; c++)
    if (*c == '/' || *c == '.') *c = '_';
  snprintf(path, sizeof path, "%s/%s.json", tmp, base);
  snprintf(log, sizeof log, "%s/%s.log", tmp, base);
  snprintf(out, sizeof out, "%s/%s_out", tmp, base);
  if (!th_write_file(path, text)) {
    doc_fail(doc, line, "cannot write %s", path);
    return;
  }
  scenes_run++;
  const char *step = "weft validate";
  int rc = WEFT(log, "validate", path);
  if (rc == 0) {
    step = "weft run --frames " DOC_FRAMES " --device cpu";
    rc = WEFT(log, "run", path, "--frames", DOC_FRAMES, "--device", "cpu", "--out", out, "--quiet");
  }
  if (rc != 0) {
    char *said = th_read_file(log, NULL);
    doc_fail(doc, line, "the scene fails %s (exit %d; its line 1 is %s:%d):\n%s", step, rc, doc,
             line + 1, said ? said : "");
    free(said);
  }
}

/* Finds the fenced blocks of one doc (rel: its path under the source tree) and checks each. */
static void check_doc(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", WEFT_SOURCE_DIR, rel);
  char *md = th_read_file(path, NULL);
  if (!md) {
    doc_fail(rel, 0, "cannot read %s", path);
    return;
  }
  /* CommonMark fences: a run of >= 3 backticks or tildes after any indentation (list items
   * indent them), closed by a run of the same character at least as long and nothing else */
  int line = 0, open_line = 0;
  char fence = 0, lang[32] = "";
  size_t fence_len = 0, body_len = 0, body_cap = 0;
  char *body = NULL;
  for (char *p = md; *p;) {
    char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char *next = eol ? eol + 1 : p + len;
    line++;
    const char *s = p;
    while (s < p + len && (*s == ' ' || *s == '\t'))
      s++;
    size_t run = 0;
    while (s + run < p + len && (s[run] == '`' || s[run] == '~') && s[run] == *s)
      run++;
    if (!fence && run >= 3) {
      fence = *s, fence_len = run, open_line = line, body_len = 0;
      const char *info = s + run;
      while (info < p + len && (*info == ' ' || *info == '\t'))
        info++;
      size_t w = 0;
      while (info + w < p + len && info[w] != ' ' && info[w] != '\t' && info[w] != '\r' &&
             w + 1 < sizeof lang)
        w++;
      memcpy(lang, info, w);
      lang[w] = '\0';
    } else if (fence && run >= fence_len && *s == fence) {
      const char *rest = s + run;
      while (rest < p + len && (*rest == ' ' || *rest == '\t' || *rest == '\r'))
        rest++;
      if (rest == p + len) {
        body = body ? body : malloc(1);
        body[body_len] = '\0';
        if (strcasecmp(lang, "json") == 0)
          check_scene(rel, open_line, body);
        else if (is_whole_scene(body))
          doc_fail(rel, open_line,
                   "a whole scene fenced as ```%s: fence it ```json so that it is run", lang);
        fence = 0;
      }
    }
    if (fence && line > open_line) {
      if (body_len + len + 2 > body_cap) {
        body_cap = (body_len + len + 2) * 2;
        body = realloc(body, body_cap);
      }
      memcpy(body + body_len, p, len);
      body_len += len;
      body[body_len++] = '\n';
    }
    p = next;
  }
  if (fence) doc_fail(rel, open_line, "a code fence that is never closed");
  free(body);
  free(md);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

TEST(doc_scenes) {
  char assets[700], link[700];
  snprintf(assets, sizeof assets, "%s/assets", WEFT_SOURCE_DIR);
  snprintf(link, sizeof link, "%s/assets", tmp);
  REQUIRE(symlink(assets, link) == 0);

  char *docs[MAX_DOCS];
  int n = 0;
  docs[n++] = strdup("README.md");
  char dir[700];
  snprintf(dir, sizeof dir, "%s/docs", WEFT_SOURCE_DIR);
  DIR *d = opendir(dir);
  REQUIRE(d);
  for (struct dirent *e; (e = readdir(d)) && n < MAX_DOCS;) {
    size_t l = strlen(e->d_name);
    if (l > 3 && strcmp(e->d_name + l - 3, ".md") == 0) {
      char rel[300];
      snprintf(rel, sizeof rel, "docs/%s", e->d_name);
      docs[n++] = strdup(rel);
    }
  }
  closedir(d);
  qsort(docs + 1, (size_t)n - 1, sizeof *docs, by_name);
  for (int i = 0; i < n; i++) {
    check_doc(docs[i]);
    free(docs[i]);
  }
  /* docs/scenes.md opens with a whole scene: finding none means the extraction broke */
  printf("%d scenes found in %d docs (validated, then run for %s frames)\n", scenes_run, n,
         DOC_FRAMES);
  CHECK(scenes_run >= 1);
}

int main(int argc, char **argv) {
  cli = getenv("WEFT_CLI");
  if (!cli || !*cli) {
    printf("SKIP: WEFT_CLI is not set (ctest sets it to the weft program)\n");
    return 77;
  }
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(tmp, sizeof tmp, "%s/weft_test_doc_scenes_XXXXXX", base);
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  static const th_test tests[] = {TH_TEST(doc_scenes)};
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
  return rc;
}
