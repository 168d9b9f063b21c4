/* Replays fuzz inputs without libFuzzer: every regular file in the directories (or the files)
 * named on the command line goes once through LLVMFuzzerTestOneInput. Built with each
 * fuzz/fuzz_<name>.c into fuzz_<name>_replay, a ctest (label `fuzz`) over the committed corpus and
 * the regression inputs, so a crash found once stays fixed in every build, sanitizers included.
 *
 * Files whose names start with '.' or "README" are skipped. Exit status 0 when every input ran
 * (a crash aborts the program), 2 on a missing path or an unreadable file.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 0;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (len < cap) break;
    uint8_t *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb, cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    return 0;
  }
  /* an exact-size copy, so that ASan catches reads past the input's end */
  uint8_t *exact = malloc(len ? len : 1);
  if (!exact) {
    free(buf);
    return 0;
  }
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 1;
}

static int skip(const char *name) { return name[0] == '.' || strncmp(name, "README", 6) == 0; }

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  int ran = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      failed++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      run_file(argv[i]) ? ran++ : failed++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) {
      fprintf(stderr, "replay: cannot list %s\n", argv[i]);
      failed++;
      continue;
    }
    /* sorted, so that runs are reproducible */
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
      if (skip(e->d_name)) continue;
      if (n == cap) {
        char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
        if (!nn) break;
        names = nn;
      }
      names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp);
    for (size_t k = 0; k < n; k++) {
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], names[k] ? names[k] : "");
      if (names[k] && stat(path, &st) == 0 && S_ISREG(st.st_mode))
        run_file(path) ? ran++ : failed++;
      free(names[k]);
    }
    free(names);
  }
  printf("replay: %d inputs ran, %d failed to load\n", ran, failed);
  return failed ? 2 : 0;
}
