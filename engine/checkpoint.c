/* The checkpoint container: a writer that collects named opaque sections and lays them out in
 * the format described in weft/io.h, and a reader that validates untrusted bytes in full before
 * handing out a single section.
 *
 * Invariants
 *  - The reader reads an input byte only after checking its position against the length it was
 *    given; sizes and offsets from the input are compared in uint64_t without overflow, so no
 *    input (the fuzz target feeds it arbitrary bytes) can make it read outside the buffer.
 *  - An open reader has verified: magic, format version, file size (equal to the length), the
 *    header+table CRC, each name (terminated, printable, zero-padded, unique), each section's
 *    alignment and range (after the table, inside the file, not overlapping another), that every
 *    byte outside the sections is zero, and each section's CRC: so any change of a single byte
 *    is refused.
 *  - The writer holds its own copy of every section; the layout is computed from the sections
 *    alone, so _size, _save_memory and _save always agree byte for byte.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "weft/io.h"

enum {
  CK_HEADER = 40, /* bytes before the section table */
  CK_ENTRY = 56,  /* bytes per section table entry */
  CK_NAME = 32,   /* bytes of the name field */
  CK_ALIGN = 8,
};
/* A fuzzer cannot forge checksums: in fuzzing builds they are computed but not enforced, so that
 * the structural checks behind them are explored (the memory-safety invariant does not rely on
 * them). */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CK_FUZZING 1
#else
#define CK_FUZZING 0
#endif
static const char ck_magic[8] = {'W', 'E', 'F', 'T', 'C', 'K', 'P', 'T'};

/* ---- CRC-32 and little-endian fields ------------------------------------------------------ */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t wf_crc32(uint32_t crc, const void *data, size_t bytes) {
  pthread_once(&crc_once, crc_init);
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < bytes; i++)
    crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

static uint32_t rd_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd_u64(const unsigned char *p) {
  return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}
static void wr_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void wr_u64(unsigned char *p, uint64_t v) {
  wr_u32(p, (uint32_t)v);
  wr_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t align_up(uint64_t v) { return (v + (CK_ALIGN - 1)) & ~(uint64_t)(CK_ALIGN - 1); }

/* A valid name: 1..31 printable ASCII characters without spaces. */
static bool name_ok(const char *s, size_t n) {
  if (n == 0 || n > WF_CKPT_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7F) return false;
  return true;
}

/* ---- writer ----------------------------------------------------------------------------- */

typedef struct ck_wsection {
  char name[CK_NAME];
  unsigned char *data;
  size_t bytes;
  uint32_t crc;
} ck_wsection;

struct wf_ckpt_writer {
  ck_wsection *s;
  size_t count, cap;
};

wf_status wf_ckpt_writer_create(wf_ckpt_writer **out) {
  if (!out) return wf__error(WF_ERR_INVALID, __func__, "out is NULL");
  *out = calloc(1, sizeof **out);
  if (!*out) return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for a checkpoint writer");
  return WF_OK;
}

void wf_ckpt_writer_destroy(wf_ckpt_writer *w) {
  if (!w) return;
  for (size_t i = 0; i < w->count; i++)
    free(w->s[i].data);
  free(w->s);
  free(w);
}

wf_status wf_ckpt_writer_add(wf_ckpt_writer *w, const char *name, const void *data, size_t bytes) {
  if (!w || !name) return wf__error(WF_ERR_INVALID, __func__, "writer or name is NULL");
  if (!data && bytes)
    return wf__error(WF_ERR_INVALID, __func__, "section '%s': data is NULL but bytes is %zu", name,
                     bytes);
  size_t n = strnlen(name, WF_CKPT_NAME_MAX + 1);
  if (!name_ok(name, n))
    return wf__error(WF_ERR_INVALID, __func__,
                     "section name '%.40s%s' is not 1..%d printable ASCII characters without "
                     "spaces",
                     name, n > 40 ? "..." : "", WF_CKPT_NAME_MAX);
  for (size_t i = 0; i < w->count; i++)
    if (strcmp(w->s[i].name, name) == 0)
      return wf__error(WF_ERR_INVALID, __func__,
                       "section '%s' is already in this checkpoint (names are unique)", name);
  if (w->count == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 16;
    ck_wsection *s = realloc(w->s, cap * sizeof *s);
    if (!s) return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for section '%s'", name);
    w->s = s, w->cap = cap;
  }
  ck_wsection *s = &w->s[w->count];
  memset(s, 0, sizeof *s);
  memcpy(s->name, name, n);
  if (bytes) {
    s->data = malloc(bytes);
    if (!s->data)
      return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory to copy section '%s' (%zu bytes)",
                       name, bytes);
    memcpy(s->data, data, bytes);
  }
  s->bytes = bytes;
  s->crc = wf_crc32(0, s->data, bytes);
  w->count++;
  return WF_OK;
}

/* Offset of section i's data; section 0 starts after the table, each next one 8-aligned. */
static uint64_t ck_layout(const wf_ckpt_writer *w, uint64_t *offsets) {
  uint64_t at = CK_HEADER + (uint64_t)CK_ENTRY * w->count;
  for (size_t i = 0; i < w->count; i++) {
    at = align_up(at);
    if (offsets) offsets[i] = at;
    at += w->s[i].bytes;
  }
  return at;
}

size_t wf_ckpt_writer_size(const wf_ckpt_writer *w) { return w ? (size_t)ck_layout(w, NULL) : 0; }

/* Header and table into `head` (CK_HEADER + CK_ENTRY*count bytes, zeroed by the caller). */
static void ck_head(const wf_ckpt_writer *w, const uint64_t *offsets, uint64_t total,
                    unsigned char *head) {
  memcpy(head, ck_magic, sizeof ck_magic);
  wr_u32(head + 8, WF_CKPT_FORMAT);
  wr_u32(head + 12, 0);
  wr_u32(head + 16, (uint32_t)w->count);
  wr_u64(head + 24, total);
  for (size_t i = 0; i < w->count; i++) {
    unsigned char *e = head + CK_HEADER + CK_ENTRY * i;
    memcpy(e, w->s[i].name, CK_NAME);
    wr_u64(e + 32, offsets[i]);
    wr_u64(e + 40, w->s[i].bytes);
    wr_u32(e + 48, w->s[i].crc);
  }
  size_t table = (size_t)CK_ENTRY * w->count;
  uint32_t crc = wf_crc32(0, head, 32);
  crc = wf_crc32(crc, head + CK_HEADER, table);
  wr_u32(head + 32, crc);
}

/* Header, table and offsets of a writer; NULL and an error when out of memory or too many. */
static unsigned char *ck_prepare(const wf_ckpt_writer *w, uint64_t **offsets, uint64_t *total,
                                 size_t *head_bytes, const char *func) {
  *offsets = NULL;
  if (w->count > UINT32_MAX) {
    wf__error(WF_ERR_INVALID, func, "%zu sections; a checkpoint holds at most %u", w->count,
              UINT32_MAX);
    return NULL;
  }
  *head_bytes = CK_HEADER + (size_t)CK_ENTRY * w->count;
  unsigned char *head = calloc(1, *head_bytes);
  *offsets = malloc((w->count ? w->count : 1) * sizeof **offsets);
  if (!head || !*offsets) {
    free(head), free(*offsets), *offsets = NULL;
    wf__error(WF_ERR_OUT_OF_MEMORY, func, "no memory for a checkpoint table of %zu sections",
              w->count);
    return NULL;
  }
  *total = ck_layout(w, *offsets);
  ck_head(w, *offsets, *total, head);
  return head;
}

wf_status wf_ckpt_writer_save_memory(const wf_ckpt_writer *w, void *dst, size_t capacity) {
  if (!w || !dst) return wf__error(WF_ERR_INVALID, __func__, "writer or dst is NULL");
  uint64_t *offsets, total;
  size_t head_bytes;
  unsigned char *head = ck_prepare(w, &offsets, &total, &head_bytes, __func__);
  if (!head) return offsets ? WF_ERR_OUT_OF_MEMORY : WF_ERR_INVALID;
  if (total > capacity) {
    free(head), free(offsets);
    return wf__error(WF_ERR_INVALID, __func__,
                     "the checkpoint is %llu bytes; dst has room for %zu (see "
                     "wf_ckpt_writer_size)",
                     (unsigned long long)total, capacity);
  }
  unsigned char *out = dst;
  memset(out, 0, (size_t)total);
  memcpy(out, head, head_bytes);
  for (size_t i = 0; i < w->count; i++)
    if (w->s[i].bytes) memcpy(out + offsets[i], w->s[i].data, w->s[i].bytes);
  free(head), free(offsets);
  return WF_OK;
}

wf_status wf_ckpt_writer_save(const wf_ckpt_writer *w, const char *path) {
  if (!w || !path) return wf__error(WF_ERR_INVALID, __func__, "writer or path is NULL");
  uint64_t *offsets, total;
  size_t head_bytes;
  unsigned char *head = ck_prepare(w, &offsets, &total, &head_bytes, __func__);
  if (!head) return offsets ? WF_ERR_OUT_OF_MEMORY : WF_ERR_INVALID;
  wf_atomic_file *f;
  wf_status st = wf_atomic_file_open(path, &f);
  if (st != WF_OK) {
    free(head), free(offsets);
    return st;
  }
  static const unsigned char pad[CK_ALIGN];
  wf_atomic_file_write(f, head, head_bytes);
  uint64_t at = head_bytes;
  for (size_t i = 0; i < w->count; i++) {
    wf_atomic_file_write(f, pad, (size_t)(offsets[i] - at)); /* padding to 8 bytes */
    wf_atomic_file_write(f, w->s[i].data, w->s[i].bytes);
    at = offsets[i] + w->s[i].bytes;
  }
  free(head), free(offsets);
  return wf_atomic_file_commit(f); /* reports the first failed write, if any */
}

/* ---- reader ----------------------------------------------------------------------------- */

typedef struct ck_rsection {
  char name[CK_NAME];
  uint64_t offset, bytes;
  uint32_t crc;
} ck_rsection;

struct wf_ckpt_reader {
  const unsigned char *data;
  size_t bytes;
  void *owned; /* the file's bytes (wf_ckpt_open_file), else NULL */
  ck_rsection *s;
  size_t count;
  char what[288]; /* "checkpoint 'path'" or "checkpoint in memory", for messages */
};

static int by_offset(const void *a, const void *b) {
  const ck_rsection *x = *(const ck_rsection *const *)a, *y = *(const ck_rsection *const *)b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes; /* empty ones first */
}
static int by_name(const void *a, const void *b) {
  return strcmp((*(const ck_rsection *const *)a)->name, (*(const ck_rsection *const *)b)->name);
}

/* True when bytes [from, to) of p are all zero (an empty or reversed range is). No checksum
 * covers the padding between sections, so it must be zero for every byte to be checked. */
static bool all_zero(const unsigned char *p, uint64_t from, uint64_t to) {
  for (uint64_t i = from; i < to; i++)
    if (p[i]) return false;
  return true;
}

static wf_status ck_padding_error(const char *what, uint64_t at, const char *func) {
  return wf__error(WF_ERR_PARSE, func,
                   "%s is corrupt: the padding after byte %llu is not zero (a byte outside every "
                   "section changed)",
                   what, (unsigned long long)at);
}

/* Validates r->data[0, r->bytes) and fills r->s / r->count. */
static wf_status ck_parse(wf_ckpt_reader *r, const char *func) {
  const unsigned char *p = r->data;
  size_t len = r->bytes;
  const char *what = r->what;
  if (len == 0) return wf__error(WF_ERR_PARSE, func, "%s is empty (0 bytes)", what);
  size_t m = len < sizeof ck_magic ? len : sizeof ck_magic;
  if (memcmp(p, ck_magic, m) != 0)
    return wf__error(WF_ERR_PARSE, func,
                     "%s is not a weft checkpoint (it does not start with "
                     "\"WEFTCKPT\")",
                     what);
  if (len < 12)
    return wf__error(WF_ERR_PARSE, func, "%s is truncated: %zu bytes, too short for a header", what,
                     len);
  uint32_t version = rd_u32(p + 8);
  if (version != WF_CKPT_FORMAT)
    return wf__error(WF_ERR_PARSE, func, "%s is checkpoint format %u, this weft reads format %d",
                     what, version, WF_CKPT_FORMAT);
  if (len < CK_HEADER)
    return wf__error(WF_ERR_PARSE, func,
                     "%s is truncated: %zu bytes, a checkpoint header is %d bytes", what, len,
                     CK_HEADER);
  uint32_t count = rd_u32(p + 16);
  uint64_t table_end = CK_HEADER + (uint64_t)CK_ENTRY * count; /* < 2^38: no overflow */
  uint64_t size = rd_u64(p + 24);
  if (table_end > len && size > len)
    return wf__error(WF_ERR_PARSE, func, "%s is truncated: it is %zu bytes, its header says %llu",
                     what, len, (unsigned long long)size);
  if (table_end > len)
    return wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: its %u sections need a table ending at byte %llu, past its "
                     "end (%zu bytes)",
                     what, count, (unsigned long long)table_end, len);
  /* The header and table are in range: trust nothing in them before their checksum. */
  uint32_t crc = wf_crc32(0, p, 32);
  crc = wf_crc32(crc, p + CK_HEADER, (size_t)(table_end - CK_HEADER));
  if (crc != rd_u32(p + 32) && !CK_FUZZING)
    return wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: the checksum of its header and section table does not "
                     "match (stored %08x, computed %08x)",
                     what, rd_u32(p + 32), crc);
  if (size > len)
    return wf__error(WF_ERR_PARSE, func, "%s is truncated: it is %zu bytes, its header says %llu",
                     what, len, (unsigned long long)size);
  if (size < len)
    return wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: it is %zu bytes, its header says %llu (extra bytes at the "
                     "end)",
                     what, len, (unsigned long long)size);
  if (size < table_end)
    return wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: its size %llu ends inside its own section table", what,
                     (unsigned long long)size);
  if (rd_u32(p + 12) != 0 || rd_u32(p + 20) != 0 || rd_u32(p + 36) != 0)
    return wf__error(WF_ERR_PARSE, func,
                     "%s uses flags or reserved header fields (flags %08x) that format %d does "
                     "not define",
                     what, rd_u32(p + 12), WF_CKPT_FORMAT);

  r->s = calloc(count ? count : 1, sizeof *r->s);
  const ck_rsection **order = malloc((count ? count : 1) * sizeof *order);
  if (!r->s || !order) {
    free(order);
    return wf__error(WF_ERR_OUT_OF_MEMORY, func, "no memory for %u sections of %s", count, what);
  }
  wf_status st = WF_OK;
  for (uint32_t i = 0; i < count && st == WF_OK; i++) {
    const unsigned char *e = p + CK_HEADER + (size_t)CK_ENTRY * i;
    ck_rsection *s = &r->s[i];
    size_t n = strnlen((const char *)e, CK_NAME);
    bool padded = n < CK_NAME;
    for (size_t k = n; k < CK_NAME && padded; k++)
      padded = e[k] == 0;
    if (!padded || !name_ok((const char *)e, n)) {
      st = wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: section %u has no valid name (1..%d printable characters, "
                     "zero-padded)",
                     what, i, WF_CKPT_NAME_MAX);
      break;
    }
    memcpy(s->name, e, n);
    s->offset = rd_u64(e + 32);
    s->bytes = rd_u64(e + 40);
    s->crc = rd_u32(e + 48);
    if (rd_u32(e + 52) != 0)
      st = wf__error(WF_ERR_PARSE, func, "%s: section '%s' uses a reserved field", what, s->name);
    else if (s->offset % CK_ALIGN != 0)
      st = wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: section '%s' starts at byte %llu, not a multiple of %d", what,
                     s->name, (unsigned long long)s->offset, CK_ALIGN);
    else if (s->offset < table_end || s->offset > size || s->bytes > size - s->offset)
      st = wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: section '%s' (%llu bytes at %llu) lies outside the data "
                     "area %llu..%llu",
                     what, s->name, (unsigned long long)s->bytes, (unsigned long long)s->offset,
                     (unsigned long long)table_end, (unsigned long long)size);
    order[i] = s;
  }
  if (st == WF_OK) {
    /* Sorted by start (empty sections first on ties), a section overlaps an earlier one iff it
     * starts before the furthest end so far. The bytes between sections are padding that no
     * checksum covers: they must be zero, so that every byte of the file is checked. */
    qsort(order, count, sizeof *order, by_offset);
    uint64_t end = table_end;
    const ck_rsection *last = NULL;
    for (uint32_t i = 0; i < count && st == WF_OK; i++) {
      const ck_rsection *s = order[i];
      if (last && s->offset < end)
        st = wf__error(WF_ERR_PARSE, func,
                       "%s is corrupt: sections '%s' (bytes %llu..%llu) and '%s' (from %llu) "
                       "overlap",
                       what, last->name, (unsigned long long)last->offset, (unsigned long long)end,
                       s->name, (unsigned long long)s->offset);
      else if (!all_zero(p, end, s->offset))
        st = ck_padding_error(what, end, func);
      if (s->offset + s->bytes > end) end = s->offset + s->bytes, last = s;
    }
    if (st == WF_OK && !all_zero(p, end, size)) st = ck_padding_error(what, end, func);
    qsort(order, count, sizeof *order, by_name);
    for (uint32_t i = 1; i < count && st == WF_OK; i++)
      if (strcmp(order[i - 1]->name, order[i]->name) == 0)
        st = wf__error(WF_ERR_PARSE, func, "%s is corrupt: two sections are named '%s'", what,
                       order[i]->name);
  }
  free(order);
  /* Checksums last: once sections are known not to overlap, this reads each byte once. */
  for (uint32_t i = 0; i < count && st == WF_OK; i++) {
    const ck_rsection *s = &r->s[i];
    if (wf_crc32(0, p + s->offset, (size_t)s->bytes) != s->crc && !CK_FUZZING)
      st = wf__error(WF_ERR_PARSE, func,
                     "%s is corrupt: the checksum of section '%s' (%llu bytes at %llu) does not "
                     "match",
                     what, s->name, (unsigned long long)s->bytes, (unsigned long long)s->offset);
  }
  if (st != WF_OK) return st;
  r->count = count;
  return WF_OK;
}

static wf_status ck_open(wf_ckpt_reader *r, wf_ckpt_reader **out, const char *func) {
  wf_status st = ck_parse(r, func);
  if (st != WF_OK) {
    wf_ckpt_close(r);
    return st;
  }
  *out = r;
  return WF_OK;
}

wf_status wf_ckpt_open_memory(const void *data, size_t bytes, wf_ckpt_reader **out) {
  if (!out || (!data && bytes))
    return wf__error(WF_ERR_INVALID, __func__, "out is NULL, or data is NULL with %zu bytes",
                     bytes);
  *out = NULL;
  wf_ckpt_reader *r = calloc(1, sizeof *r);
  if (!r) return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for a checkpoint reader");
  static const unsigned char empty[1];
  r->data = data ? data : empty;
  r->bytes = bytes;
  snprintf(r->what, sizeof r->what, "checkpoint in memory");
  return ck_open(r, out, __func__);
}

wf_status wf_ckpt_open_file(const char *path, wf_ckpt_reader **out) {
  if (!out || !path) return wf__error(WF_ERR_INVALID, __func__, "out or path is NULL");
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return wf__error(WF_ERR_IO, __func__, "cannot open checkpoint '%s': %s", path, strerror(errno));
  /* Read in growing chunks rather than trusting a size from fseek: works for pipes too. */
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  wf_status st =
      buf ? WF_OK : wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory to read '%s'", path);
  while (st == WF_OK) {
    if (len == cap) {
      unsigned char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        st = wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory to read '%s' (over %zu bytes)",
                       path, len);
        break;
      }
      buf = nb, cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f))
        st = wf__error(WF_ERR_IO, __func__, "cannot read checkpoint '%s': %s", path,
                       strerror(errno));
      break;
    }
  }
  fclose(f);
  if (st != WF_OK) {
    free(buf);
    return st;
  }
  wf_ckpt_reader *r = calloc(1, sizeof *r);
  if (!r) {
    free(buf);
    return wf__error(WF_ERR_OUT_OF_MEMORY, __func__, "no memory for a checkpoint reader");
  }
  r->data = r->owned = buf;
  r->bytes = len;
  snprintf(r->what, sizeof r->what, "checkpoint '%.256s'", path);
  return ck_open(r, out, __func__);
}

void wf_ckpt_close(wf_ckpt_reader *r) {
  if (!r) return;
  free(r->owned);
  free(r->s);
  free(r);
}

size_t wf_ckpt_section_count(const wf_ckpt_reader *r) { return r ? r->count : 0; }

wf_status wf_ckpt_section_at(const wf_ckpt_reader *r, size_t index, const char **name,
                             const void **data, size_t *bytes) {
  if (!r) return wf__error(WF_ERR_INVALID, __func__, "reader is NULL");
  if (index >= r->count)
    return wf__error(WF_ERR_INVALID, __func__, "section %zu of %s does not exist (it has %zu)",
                     index, r->what, r->count);
  const ck_rsection *s = &r->s[index];
  if (name) *name = s->name;
  if (data) *data = r->data + s->offset;
  if (bytes) *bytes = (size_t)s->bytes;
  return WF_OK;
}

long wf_ckpt_find(const wf_ckpt_reader *r, const char *name) {
  if (!r || !name) return -1;
  for (size_t i = 0; i < r->count; i++)
    if (strcmp(r->s[i].name, name) == 0) return (long)i;
  return -1;
}

wf_status wf_ckpt_section(const wf_ckpt_reader *r, const char *name, const void **data,
                          size_t *bytes) {
  if (!r || !name) return wf__error(WF_ERR_INVALID, __func__, "reader or name is NULL");
  long i = wf_ckpt_find(r, name);
  if (i >= 0) return wf_ckpt_section_at(r, (size_t)i, NULL, data, bytes);
  char list[512];
  size_t at = 0;
  list[0] = '\0';
  for (size_t k = 0; k < r->count && at < sizeof list; k++) {
    int n = snprintf(list + at, sizeof list - at, "%s'%s'", k ? ", " : "", r->s[k].name);
    if (n < 0) break;
    at += (size_t)n;
  }
  if (at >= sizeof list) memcpy(list + sizeof list - 4, "...", 4);
  return wf__error(WF_ERR_INVALID, __func__, "%s has no section '%s' (it has %s)", r->what, name,
                   r->count ? list : "none");
}
