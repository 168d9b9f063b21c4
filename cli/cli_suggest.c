/* The command line's forgiving side: `--opt=value` split into `--opt value` before any command
 * parses its arguments, and one-line "did you mean" messages for a mistyped command or option.
 *
 * A command's options are read from its own usage text (every `--word` in it), so the
 * suggestions never fall out of step with what --help lists. The nearest candidate by edit
 * distance (insertions, deletions, substitutions and swaps of neighbours each cost 1) is offered
 * when it is within a third of the word's length (at least 2), or when the word is the start of
 * exactly one candidate. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int wf_cli_split_equals(int argc, char **argv, char ***out) {
  int extra = 0;
  for (int i = 1; i < argc; i++)
    extra += strncmp(argv[i], "--", 2) == 0 && argv[i][2] && strchr(argv[i], '=') != NULL;
  *out = argv;
  if (extra == 0) return argc;
  char **v = calloc((size_t)(argc + extra + 1), sizeof *v);
  if (!v) return argc;
  int n = 0;
  for (int i = 0; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (i > 0 && strncmp(argv[i], "--", 2) == 0 && argv[i][2] && eq) {
      *eq = '\0'; /* argv's strings are ours to change (C11 5.1.2.2.1) */
      v[n++] = argv[i];
      v[n++] = eq + 1;
    } else {
      v[n++] = argv[i];
    }
  }
  v[n] = NULL;
  *out = v; /* the caller frees it (when it is not argv) */
  return n;
}

/* Optimal string alignment distance of a and b (at most 63 characters each; longer: far). */
static int distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  if (na > 63 || nb > 63) return 1000;
  int d[64][64];
  for (size_t i = 0; i <= na; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= nb; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= na; i++)
    for (size_t j = 1; j <= nb; j++) {
      int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
      int best = sub < del ? sub : del;
      best = ins < best ? ins : best;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[na][nb];
}

const char *wf_cli_closest(const char *word, const char *const *cands, int n) {
  const char *best = NULL, *prefix = NULL;
  int best_d = 1000, prefixes = 0;
  size_t len = strlen(word);
  for (int i = 0; i < n; i++) {
    int d = distance(word, cands[i]);
    if (d < best_d) best_d = d, best = cands[i];
    if (len > 2 && strncmp(cands[i], word, len) == 0) prefixes++, prefix = cands[i];
  }
  int limit = (int)len / 3 > 2 ? (int)len / 3 : 2;
  if (best && best_d > 0 && best_d <= limit) return best;
  return prefixes == 1 ? prefix : NULL;
}

/* The `--words` of a usage text, each once, into words (at most max, 47 characters each). */
static int options_of(void (*usage)(FILE *f), char words[][48], int max) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) return 0;
  usage(f);
  fclose(f);
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, "--")) != NULL;) {
    size_t len = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
    bool word_start = p == text || p[-1] == ' ' || p[-1] == '[' || p[-1] == '\n' || p[-1] == '(';
    if (word_start && len > 2 && len < 48 && n < max) {
      char w[48];
      memcpy(w, p, len);
      w[len] = '\0';
      bool seen = false;
      for (int i = 0; i < n && !seen; i++)
        seen = strcmp(words[i], w) == 0;
      if (!seen) memcpy(words[n++], w, len + 1);
    }
    p += len;
  }
  free(text);
  return n;
}

void wf_cli_unknown_option(const char *cmd, const char *arg, void (*usage)(FILE *f)) {
  char words[96][48];
  const char *cands[96];
  int n = usage ? options_of(usage, words, 96) : 0;
  for (int i = 0; i < n; i++) {
    cands[i] = words[i];
    if (strcmp(words[i], arg) == 0) { /* a known option at the end of the line */
      fprintf(stderr, "%s: %s needs a value (%s --help for more)\n", cmd, arg, cmd);
      return;
    }
  }
  const char *near = wf_cli_closest(arg, cands, n);
  if (near)
    fprintf(stderr, "%s: unknown option '%s'; did you mean '%s'? (%s --help for more)\n", cmd, arg,
            near, cmd);
  else
    fprintf(stderr, "%s: unknown option '%s' (%s --help lists the options)\n", cmd, arg, cmd);
}
