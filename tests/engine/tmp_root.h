/* A temporary root directory for a test program that writes files (test_io.c,
 * test_run_outputs.c): made under $TMPDIR (or /tmp) at the start, removed with everything in it at
 * the end. The including file defines _XOPEN_SOURCE 700 (for nftw) before any include. */
#ifndef WEFT_TESTS_TMP_ROOT_H
#define WEFT_TESTS_TMP_ROOT_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char tmp_root[256];

static inline int tmp_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}
/* rm -r dir (no error when it is not there). */
static inline void rm_rf(const char *dir) { nftw(dir, tmp_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Makes tmp_root as "<$TMPDIR or /tmp>/<prefix>_XXXXXX"; false (after perror) on failure. */
static inline int tmp_root_make(const char *prefix) {
  const char *base = getenv("TMPDIR");
  snprintf(tmp_root, sizeof tmp_root, "%s/%s_XXXXXX", base && *base ? base : "/tmp", prefix);
  if (mkdtemp(tmp_root)) return 1;
  perror("mkdtemp");
  return 0;
}

#endif
