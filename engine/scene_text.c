/* Text helpers of the scene loader: the error list, a strict JSON syntax check that says what was
 * expected where (cJSON only says where it stopped), line:column of a byte offset, the place of a
 * key path in the text (so semantic errors can point at their line) and did-you-mean suggestions.
 *
 * Everything here reads only text[0, len): the text need not be NUL-terminated and may hold any
 * bytes (the fuzzer feeds it arbitrary input). The syntax check is recursive with a depth limit.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene_internal.h"

/* ---- error list --------------------------------------------------------------------------------
 */

int wfs_full(const wfs_errors *e) { return e->count >= WF_SCENE_MAX_ERRORS; }

static void add(wfs_errors *e, const char *msg, long pos) {
  if (e->count >= WF_SCENE_MAX_ERRORS) {
    e->dropped++;
    return;
  }
  size_t n = strlen(msg);
  if (n >= WFS_MSG_MAX) n = WFS_MSG_MAX - 1;
  memcpy(e->msgs[e->count], msg, n);
  e->pos[e->count] = pos;
  e->msgs[e->count++][n] = '\0';
}

/* The override that set path (or one of its ancestors), if any. */
static const wfs_override_mark *find_mark(const wfs_errors *e, const char *path) {
  for (int i = 0; i < e->mark_count; i++) {
    size_t n = strlen(e->marks[i].path);
    if (strncmp(path, e->marks[i].path, n) == 0 &&
        (path[n] == '\0' || path[n] == '.' || path[n] == '['))
      return &e->marks[i];
  }
  return NULL;
}

void wfs_error(wfs_errors *e, const char *path, const char *fmt, ...) {
  if (wfs_full(e)) { /* no need to format (or locate) what will not be shown */
    e->dropped++;
    return;
  }
  char what[WFS_MSG_MAX], msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *name = e->name ? e->name : "scene";
  const wfs_override_mark *m = path && path[0] ? find_mark(e, path) : NULL;
  long at = (path && path[0] && !m && e->text) ? wfs_locate(e->text, e->len, path) : -1;
  if (m) {
    char q[48];
    wfs_quote(q, sizeof q, m->text);
    snprintf(msg, sizeof msg, "%s: %s: %s (from --set '%s')", name, path, what, q);
  } else if (at >= 0) {
    int line, col;
    wfs_line_col(e->text, e->len, (size_t)at, &line, &col);
    snprintf(msg, sizeof msg, "%s:%d:%d: %s: %s", name, line, col, path, what);
  } else if (path && path[0]) {
    snprintf(msg, sizeof msg, "%s: %s: %s", name, path, what);
  } else {
    snprintf(msg, sizeof msg, "%s: %s", name, what);
  }
  add(e, msg, at >= 0 ? at : LONG_MAX);
}

void wfs_error_at(wfs_errors *e, size_t offset, const char *fmt, ...) {
  char what[WFS_MSG_MAX], msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  int line = 1, col = 1;
  if (e->text) wfs_line_col(e->text, e->len, offset, &line, &col);
  snprintf(msg, sizeof msg, "%s:%d:%d: %s", e->name ? e->name : "scene", line, col, what);
  add(e, msg, (long)offset);
}

void wfs_sort(wfs_errors *e) {
  /* insertion sort of at most WF_SCENE_MAX_ERRORS entries */
  for (int i = 1; i < e->count; i++) {
    for (int j = i; j > 0 && e->pos[j - 1] > e->pos[j]; j--) {
      char tmp[WFS_MSG_MAX];
      long p = e->pos[j];
      memcpy(tmp, e->msgs[j], WFS_MSG_MAX);
      memcpy(e->msgs[j], e->msgs[j - 1], WFS_MSG_MAX);
      memcpy(e->msgs[j - 1], tmp, WFS_MSG_MAX);
      e->pos[j] = e->pos[j - 1], e->pos[j - 1] = p;
    }
  }
}

void wfs_quote(char *dst, size_t size, const char *s) {
  size_t n = 0;
  if (size == 0) return;
  for (; s && *s && n + 1 < size; s++) {
    if (n == 40) {
      if (n + 4 < size) memcpy(dst + n, "...", 3), n += 3;
      break;
    }
    unsigned char c = (unsigned char)*s;
    dst[n++] = (c < 0x20 || c == 0x7f || c == '\'') ? '?' : (char)c;
  }
  dst[n] = '\0';
}

void wfs_line_col(const char *text, size_t len, size_t offset, int *line, int *col) {
  int l = 1, c = 1;
  if (offset > len) offset = len;
  for (size_t i = 0; i < offset; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch == '\n') {
      l++, c = 1;
    } else if ((ch & 0xC0) != 0x80) { /* count characters, not UTF-8 continuation bytes */
      c++;
    }
  }
  *line = l, *col = c;
}

/* ---- strict syntax check ----------------------------------------------------------------------
 */

typedef struct scan {
  const char *s;
  size_t n, i;
  int depth;
  int failed;
  size_t at;
  char *msg;
  size_t msg_size;
} scan;

static int fail(scan *sc, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(scan *sc, size_t at, const char *fmt, ...) {
  if (sc->failed) return 1;
  sc->failed = 1, sc->at = at;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sc->msg, sc->msg_size, fmt, ap);
  va_end(ap);
  return 1;
}

static int peek(const scan *sc) { return sc->i < sc->n ? (unsigned char)sc->s[sc->i] : -1; }

/* Describes the character at the cursor for "got ..." in messages. */
static const char *got(const scan *sc, char *buf, size_t size) {
  int c = peek(sc);
  if (c < 0) return "the end of the file";
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, size, "'%c'", c);
  else
    snprintf(buf, size, "byte 0x%02x", c);
  return buf;
}

static int skip_ws(scan *sc) {
  while (sc->i < sc->n) {
    char c = sc->s[sc->i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      sc->i++;
    } else if (c == '/' && sc->i + 1 < sc->n &&
               (sc->s[sc->i + 1] == '/' || sc->s[sc->i + 1] == '*')) {
      return fail(sc, sc->i, "comments are not allowed in JSON (use a \"description\" key)");
    } else {
      break;
    }
  }
  return 0;
}

static int hex4(const scan *sc, size_t at, unsigned *out) {
  if (at + 4 > sc->n) return 0;
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    int c = (unsigned char)sc->s[at + (size_t)k];
    int d = isdigit(c)               ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return 0;
    v = v * 16 + (unsigned)d;
  }
  *out = v;
  return 1;
}

static int scan_string(scan *sc) {
  size_t start = sc->i++;
  while (sc->i < sc->n) {
    unsigned char c = (unsigned char)sc->s[sc->i];
    if (c == '"') {
      sc->i++;
      return 0;
    }
    if (c < 0x20)
      return fail(sc, sc->i,
                  "control character 0x%02x in a string (write it as an escape such as \\n)", c);
    if (c != '\\') {
      sc->i++;
      continue;
    }
    if (sc->i + 1 >= sc->n) break;
    char e = sc->s[sc->i + 1];
    if (strchr("\"\\/bfnrt", e) && e != '\0') {
      sc->i += 2;
      continue;
    }
    if (e != 'u')
      return fail(sc, sc->i, "invalid escape '\\%c' in a string", e >= 0x20 && e < 0x7f ? e : '?');
    unsigned u;
    if (!hex4(sc, sc->i + 2, &u)) return fail(sc, sc->i, "\\u must be followed by four hex digits");
    sc->i += 6;
    if (u >= 0xDC00 && u <= 0xDFFF)
      return fail(sc, sc->i - 6, "lone UTF-16 low surrogate \\u%04X in a string", u);
    if (u >= 0xD800 && u <= 0xDBFF) {
      unsigned lo;
      if (sc->i + 1 < sc->n && sc->s[sc->i] == '\\' && sc->s[sc->i + 1] == 'u' &&
          hex4(sc, sc->i + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
        sc->i += 6;
        continue;
      }
      return fail(sc, sc->i - 6, "UTF-16 high surrogate \\u%04X is not followed by a low one", u);
    }
  }
  int line, col;
  wfs_line_col(sc->s, sc->n, start, &line, &col);
  return fail(sc, sc->n, "unterminated string (it starts at %d:%d)", line, col);
}

static int digits(scan *sc) {
  size_t s = sc->i;
  while (sc->i < sc->n && isdigit((unsigned char)sc->s[sc->i]))
    sc->i++;
  return sc->i > s;
}

static int scan_number(scan *sc) {
  size_t start = sc->i;
  if (peek(sc) == '-') sc->i++;
  if (peek(sc) == '0') {
    sc->i++;
    if (isdigit(peek(sc))) return fail(sc, start, "numbers must not have leading zeros");
  } else if (!digits(sc)) {
    return fail(sc, start, "invalid number: expected a digit after '-'");
  }
  if (peek(sc) == '.') {
    sc->i++;
    if (!digits(sc)) return fail(sc, start, "invalid number: expected a digit after '.'");
  }
  if (peek(sc) == 'e' || peek(sc) == 'E') {
    sc->i++;
    if (peek(sc) == '+' || peek(sc) == '-') sc->i++;
    if (!digits(sc)) return fail(sc, start, "invalid number: expected a digit in the exponent");
  }
  int c = peek(sc);
  if (c >= 0 && (isalnum(c) || c == '.')) return fail(sc, start, "invalid number");
  return 0;
}

static int scan_value(scan *sc);

static int scan_container(scan *sc, int is_object) {
  char close = is_object ? '}' : ']';
  char buf[24];
  if (++sc->depth > WFS_MAX_DEPTH)
    return fail(sc, sc->i, "nesting deeper than %d levels", WFS_MAX_DEPTH);
  sc->i++; /* the opening bracket */
  if (skip_ws(sc)) return 1;
  if (peek(sc) == close) {
    sc->i++;
    sc->depth--;
    return 0;
  }
  for (;;) {
    if (is_object) {
      if (peek(sc) == '\'')
        return fail(sc, sc->i, "keys must be in double quotes, not single quotes");
      if (peek(sc) != '"')
        return fail(sc, sc->i, "expected a key in double quotes, got %s", got(sc, buf, sizeof buf));
      if (scan_string(sc) || skip_ws(sc)) return 1;
      if (peek(sc) != ':')
        return fail(sc, sc->i, "expected ':' after the key, got %s", got(sc, buf, sizeof buf));
      sc->i++;
      if (skip_ws(sc)) return 1;
    }
    if (scan_value(sc) || skip_ws(sc)) return 1;
    if (peek(sc) == close) {
      sc->i++;
      sc->depth--;
      return 0;
    }
    if (peek(sc) != ',')
      return fail(sc, sc->i, "expected ',' or '%c' after %s, got %s", close,
                  is_object ? "an object member" : "an array element", got(sc, buf, sizeof buf));
    size_t comma = sc->i++;
    if (skip_ws(sc)) return 1;
    if (peek(sc) == close)
      return fail(sc, comma, "trailing comma before '%c' (JSON does not allow one)", close);
  }
}

static int scan_literal(scan *sc, const char *word) {
  size_t n = strlen(word);
  if (sc->n - sc->i >= n && memcmp(sc->s + sc->i, word, n) == 0) {
    sc->i += n;
    int c = peek(sc);
    if (c < 0 || !isalnum(c)) return 0;
  }
  return fail(sc, sc->i, "expected a value (a number, a string, true, false, null, [ or {)");
}

static int scan_value(scan *sc) {
  int c = peek(sc);
  char buf[24];
  switch (c) {
  case '{': return scan_container(sc, 1);
  case '[': return scan_container(sc, 0);
  case '"': return scan_string(sc);
  case 't': return scan_literal(sc, "true");
  case 'f': return scan_literal(sc, "false");
  case 'n': return scan_literal(sc, "null");
  case '\'': return fail(sc, sc->i, "strings must be in double quotes, not single quotes");
  default:
    if (c == '-' || (c >= '0' && c <= '9')) return scan_number(sc);
    if (c < 0) return fail(sc, sc->i, "unexpected end of the file: expected a value");
    return fail(sc, sc->i,
                "expected a value (a number, a string, true, false, null, [ or {), got %s",
                got(sc, buf, sizeof buf));
  }
}

int wfs_syntax_check(const char *text, size_t len, size_t *offset, char *msg, size_t msg_size) {
  scan sc = {.s = text, .n = len, .msg = msg, .msg_size = msg_size};
  char buf[24];
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) sc.i = 3; /* a UTF-8 byte order mark */
  if (!skip_ws(&sc)) {
    if (peek(&sc) < 0)
      fail(&sc, sc.i, "the file is empty: expected a JSON object");
    else if (peek(&sc) != '{')
      fail(&sc, sc.i, "expected '{' (a scene is a JSON object), got %s", got(&sc, buf, sizeof buf));
    else if (!scan_value(&sc) && !skip_ws(&sc) && peek(&sc) >= 0)
      fail(&sc, sc.i, "unexpected %s after the end of the scene object", got(&sc, buf, sizeof buf));
  }
  if (sc.failed) *offset = sc.at;
  return sc.failed;
}

/* ---- locating a key path ------------------------------------------------------------------------
 */

/* Skips one value of valid JSON; returns 0 when the text ends first. */
static int skip_value(scan *sc) {
  int depth = 0;
  do {
    skip_ws(sc);
    int c = peek(sc);
    if (c < 0) return 0;
    if (c == '"') {
      sc->i++;
      while (sc->i < sc->n && sc->s[sc->i] != '"')
        sc->i += sc->s[sc->i] == '\\' ? 2 : 1;
      sc->i++;
    } else if (c == '{' || c == '[') {
      depth++, sc->i++;
    } else if (c == '}' || c == ']') {
      depth--, sc->i++;
    } else if (c == ',' || c == ':') {
      sc->i++;
    } else {
      while (sc->i < sc->n && !strchr(",:]} \t\r\n", sc->s[sc->i]))
        sc->i++;
    }
  } while (depth > 0 && sc->i < sc->n);
  return depth == 0;
}

long wfs_locate(const char *text, size_t len, const char *path) {
  scan sc = {.s = text, .n = len};
  char dummy[8];
  sc.msg = dummy, sc.msg_size = sizeof dummy;
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) sc.i = 3;
  const char *p = path;
  while (*p) {
    skip_ws(&sc);
    if (*p == '[') {
      char *end;
      unsigned long idx = strtoul(p + 1, &end, 10);
      if (*end != ']' || peek(&sc) != '[') return -1;
      p = end + 1;
      sc.i++;
      for (unsigned long k = 0; k < idx; k++) {
        skip_ws(&sc);
        if (peek(&sc) == ']' || !skip_value(&sc)) return -1;
        skip_ws(&sc);
        if (peek(&sc) != ',') return -1;
        sc.i++;
      }
      skip_ws(&sc);
      if (peek(&sc) == ']' || peek(&sc) < 0) return -1;
      if (!*p) return (long)sc.i;
      continue;
    }
    if (*p == '.') p++;
    size_t klen = strcspn(p, ".[");
    if (peek(&sc) != '{') return -1;
    sc.i++;
    for (;;) {
      skip_ws(&sc);
      if (peek(&sc) != '"') return -1;
      size_t key_at = sc.i, ks = sc.i + 1;
      sc.i++;
      while (sc.i < sc.n && sc.s[sc.i] != '"')
        sc.i += sc.s[sc.i] == '\\' ? 2 : 1;
      if (sc.i >= sc.n) return -1;
      size_t ke = sc.i++;
      skip_ws(&sc);
      if (peek(&sc) != ':') return -1;
      sc.i++;
      skip_ws(&sc);
      if (ke - ks == klen && memcmp(sc.s + ks, p, klen) == 0) {
        p += klen;
        if (!*p) return (long)key_at;
        break;
      }
      if (!skip_value(&sc)) return -1;
      skip_ws(&sc);
      if (peek(&sc) != ',') return -1;
      sc.i++;
    }
  }
  return -1;
}

/* ---- did you mean -------------------------------------------------------------------------------
 */

int wfs_distance(const char *a, const char *b, int max) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 64 || m > 64) return max + 1;
  if ((n > m ? n - m : m - n) > (size_t)max) return max + 1;
  int d[65][65];
  for (size_t i = 0; i <= n; i++)
    d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++)
    d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    for (size_t j = 1; j <= m; j++) {
      int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
      int v = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) &&
          d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1; /* a transposition */
      d[i][j] = v;
    }
  }
  return d[n][m];
}

const char *wfs_suggest(const char *word, const char *const *candidates, int n) {
  /* a likely typo: 1 edit in short words, 2 in words up to 9 characters, else 3 */
  int len = (int)strlen(word), max = len <= 4 ? 1 : len <= 9 ? 2 : 3, best = max + 1;
  const char *pick = NULL;
  for (int i = 0; i < n; i++) {
    int d = wfs_distance(word, candidates[i], max);
    if (d < best) best = d, pick = candidates[i];
  }
  return pick;
}
