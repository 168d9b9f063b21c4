/* Tests of weft/io.h: the checkpoint container and the output writers (PLY, VTP, PVD, CSV).
 *
 * Checkpoints are checked against an independent reading of the layout documented in io.h (a
 * bitwise CRC-32 written here, raw little-endian fields), for round trips of many sections, and
 * for refusal of every truncation and every single-byte change of a small checkpoint. Failed
 * writes (a file where a directory should be, a full disk through /dev/full, a file size limit)
 * must report the path and the OS error and leave no temporary file and no new final file.
 * Output files are parsed back by small readers here and compared exactly with what was written:
 * binary values bit for bit, ASCII floats through their 9-significant-digit text (which
 * round-trips float exactly) and CSV doubles through 17 digits (exact for double).
 */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "harness.h"
#include "tmp_root.h"
#include "weft/io.h"

/* ---- helpers ------------------------------------------------------------------------------ */

/* A fresh directory for one test, under the program's temporary root. */
static void test_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmp_root, name);
  rm_rf(out);
  mkdir(out, 0755);
}

/* Number of entries of dir whose name contains ".tmp." (left-over temporary files). */
static int count_tmp(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

static bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

/* The whole file, NUL-terminated (not counted in *len); NULL if unreadable. */
static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) free(b), b = NULL;
  fclose(f);
  if (b) b[n] = 0, *len = (size_t)n;
  return b;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f) fputs(text, f), fclose(f);
}

/* Bitwise CRC-32 (reflected, polynomial 0xEDB88320): the definition, not the library's table. */
static uint32_t ref_crc(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }
static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) { put32(p, (uint32_t)v), put32(p + 4, v >> 32); }

/* Recomputes the header+table checksum of a checkpoint edited by a test. */
static void reseal(unsigned char *p) {
  size_t table = 56 * (size_t)le32(p + 16);
  unsigned char *tmp = malloc(32 + table);
  memcpy(tmp, p, 32);
  memcpy(tmp + 32, p + 40, table);
  put32(p + 32, ref_crc(tmp, 32 + table));
  free(tmp);
}

static uint32_t rng_state = 12345u;
static uint32_t rng(void) { return rng_state = rng_state * 1664525u + 1013904223u; }
static float rng_float(void) { return (float)((int32_t)rng()) / 65536.0f; }

/* A small checkpoint of three sections (one empty), into a malloc'd buffer of exactly its size. */
static unsigned char *small_ckpt(size_t *len) {
  wf_ckpt_writer *w;
  if (wf_ckpt_writer_create(&w) != WF_OK) return NULL;
  const char meta[] = "frame=12 dt=0.001";
  const float pos[5] = {1.5f, -2.25f, 3.0f, 1e-7f, 42.0f};
  wf_ckpt_writer_add(w, "meta", meta, sizeof meta);
  wf_ckpt_writer_add(w, "particles/0/pos", pos, sizeof pos);
  wf_ckpt_writer_add(w, "empty", NULL, 0);
  *len = wf_ckpt_writer_size(w);
  unsigned char *b = malloc(*len);
  if (wf_ckpt_writer_save_memory(w, b, *len) != WF_OK) free(b), b = NULL;
  wf_ckpt_writer_destroy(w);
  return b;
}

/* ---- checkpoints -------------------------------------------------------------------------- */

TEST(crc32_check_value) {
  /* The standard check value of CRC-32 over "123456789"; continuing equals one pass. */
  CHECK_EQ_INT(wf_crc32(0, "123456789", 9), 0xCBF43926u);
  CHECK_EQ_INT(wf_crc32(wf_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
  CHECK_EQ_INT(wf_crc32(0, NULL, 0), 0);
  unsigned char buf[1000];
  for (size_t i = 0; i < sizeof buf; i++)
    buf[i] = (unsigned char)rng();
  CHECK_EQ_INT(wf_crc32(0, buf, sizeof buf), ref_crc(buf, sizeof buf));
}

TEST(ckpt_round_trip_many_sections) {
  enum { N = 150 };
  static unsigned char *data[N];
  static size_t sizes[N];
  char names[N][32];
  wf_ckpt_writer *w;
  CHECK_OK(wf_ckpt_writer_create(&w));
  for (int i = 0; i < N; i++) {
    /* sizes around the alignment (0..17) and a few large ones */
    sizes[i] = i % 10 == 9 ? 5000 + (size_t)i * 37 : (size_t)(i % 18);
    data[i] = malloc(sizes[i] + 1);
    for (size_t k = 0; k < sizes[i]; k++)
      data[i][k] = (unsigned char)rng();
    snprintf(names[i], sizeof names[i], "particles/%d/v%d", i, i * 7);
    CHECK_OK(wf_ckpt_writer_add(w, names[i], data[i], sizes[i]));
  }
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "round_trip");
  snprintf(path, sizeof path, "%s/state.ckpt", dir);
  CHECK_OK(wf_ckpt_writer_save(w, path));
  CHECK_EQ_INT(count_tmp(dir), 0);
  size_t mem_len = wf_ckpt_writer_size(w);
  unsigned char *mem = malloc(mem_len);
  CHECK_OK(wf_ckpt_writer_save_memory(w, mem, mem_len));
  wf_ckpt_writer_destroy(w);

  /* the file and the memory image are the same bytes */
  size_t file_len = 0;
  unsigned char *file = slurp(path, &file_len);
  REQUIRE(file);
  CHECK_EQ_INT(file_len, mem_len);
  CHECK(memcmp(file, mem, mem_len) == 0);

  /* the layout, read independently of the library */
  CHECK(memcmp(mem, "WEFTCKPT", 8) == 0);
  CHECK_EQ_INT(le32(mem + 8), 1);
  CHECK_EQ_INT(le32(mem + 16), N);
  CHECK_EQ_INT(le64(mem + 24), mem_len);
  for (int i = 0; i < N; i++) {
    const unsigned char *e = mem + 40 + 56 * i;
    uint64_t off = le64(e + 32), n = le64(e + 40);
    CHECK(strcmp((const char *)e, names[i]) == 0);
    CHECK_EQ_INT(off % 8, 0);
    CHECK_EQ_INT(n, sizes[i]);
    CHECK(off + n <= mem_len);
    CHECK_EQ_INT(le32(e + 48), ref_crc(mem + off, (size_t)n));
    if (n) CHECK(memcmp(mem + off, data[i], (size_t)n) == 0);
  }

  wf_ckpt_reader *rf, *rm;
  CHECK_OK(wf_ckpt_open_file(path, &rf));
  CHECK_OK(wf_ckpt_open_memory(mem, mem_len, &rm));
  CHECK_EQ_INT(wf_ckpt_section_count(rf), N);
  CHECK_EQ_INT(wf_ckpt_section_count(rm), N);
  for (int i = 0; i < N; i++) {
    const char *name;
    const void *p;
    size_t n;
    CHECK_OK(wf_ckpt_section_at(rf, (size_t)i, &name, &p, &n));
    CHECK(strcmp(name, names[i]) == 0);
    CHECK_EQ_INT(n, sizes[i]);
    CHECK_EQ_INT((uintptr_t)p % 8, 0); /* file sections are 8-byte aligned in memory */
    if (n) CHECK(memcmp(p, data[i], n) == 0);
    /* lookup by name, in both readers */
    const void *q;
    size_t qn;
    CHECK_OK(wf_ckpt_section(rm, names[i], &q, &qn));
    CHECK_EQ_INT(qn, sizes[i]);
    if (qn) CHECK(memcmp(q, data[i], qn) == 0);
    CHECK_EQ_INT(wf_ckpt_find(rf, names[i]), i);
  }
  CHECK_EQ_INT(wf_ckpt_find(rf, "particles/0"), -1);
  const void *q;
  size_t qn;
  CHECK_STATUS(wf_ckpt_section(rf, "cloth/0/pos", &q, &qn), WF_ERR_INVALID);
  CHECK(th_contains(wf_last_error(), "no section 'cloth/0/pos'"));
  CHECK(th_contains(wf_last_error(), "particles/0/v0"));
  CHECK_STATUS(wf_ckpt_section_at(rf, N, NULL, NULL, NULL), WF_ERR_INVALID);

  /* saving again replaces the file atomically */
  CHECK_OK(wf_ckpt_writer_create(&w));
  CHECK_OK(wf_ckpt_writer_add(w, "only", "x", 1));
  CHECK_OK(wf_ckpt_writer_save(w, path));
  wf_ckpt_writer_destroy(w);
  wf_ckpt_reader *r2;
  CHECK_OK(wf_ckpt_open_file(path, &r2));
  CHECK_EQ_INT(wf_ckpt_section_count(r2), 1);
  wf_ckpt_close(r2);

  wf_ckpt_close(rf);
  wf_ckpt_close(rm);
  free(file);
  free(mem);
  for (int i = 0; i < N; i++)
    free(data[i]);
}

TEST(ckpt_empty_checkpoint) {
  wf_ckpt_writer *w;
  CHECK_OK(wf_ckpt_writer_create(&w));
  size_t n = wf_ckpt_writer_size(w);
  CHECK_EQ_INT(n, 40); /* the header alone */
  unsigned char *b = malloc(n);
  CHECK_OK(wf_ckpt_writer_save_memory(w, b, n));
  CHECK_STATUS(wf_ckpt_writer_save_memory(w, b, n - 1), WF_ERR_INVALID);
  wf_ckpt_writer_destroy(w);
  wf_ckpt_reader *r;
  CHECK_OK(wf_ckpt_open_memory(b, n, &r));
  CHECK_EQ_INT(wf_ckpt_section_count(r), 0);
  CHECK_STATUS(wf_ckpt_section(r, "meta", NULL, NULL), WF_ERR_INVALID);
  CHECK(th_contains(wf_last_error(), "it has none"));
  wf_ckpt_close(r);
  free(b);
}

TEST(ckpt_writer_rejects_bad_names) {
  wf_ckpt_writer *w;
  CHECK_OK(wf_ckpt_writer_create(&w));
  CHECK_STATUS(wf_ckpt_writer_add(w, "", "x", 1), WF_ERR_INVALID);
  CHECK_STATUS(wf_ckpt_writer_add(w, "has space", "x", 1), WF_ERR_INVALID);
  CHECK_STATUS(wf_ckpt_writer_add(w, "tab\there", "x", 1), WF_ERR_INVALID);
  CHECK_OK(wf_ckpt_writer_add(w, "abcdefghijklmnopqrstuvwxyz01234", "x", 1)); /* 31: fits */
  CHECK_STATUS(wf_ckpt_writer_add(w, "abcdefghijklmnopqrstuvwxyz012345", "x", 1),
               WF_ERR_INVALID); /* 32 */
  CHECK(th_contains(wf_last_error(), "1..31"));
  CHECK_OK(wf_ckpt_writer_add(w, "meta", "x", 1));
  CHECK_STATUS(wf_ckpt_writer_add(w, "meta", "y", 1), WF_ERR_INVALID);
  CHECK(th_contains(wf_last_error(), "'meta' is already"));
  CHECK_STATUS(wf_ckpt_writer_add(w, "nodata", NULL, 4), WF_ERR_INVALID);
  wf_ckpt_writer_destroy(w);
}

TEST(ckpt_every_truncation_is_refused) {
  size_t len;
  unsigned char *full = small_ckpt(&len);
  REQUIRE(full);
  wf_ckpt_reader *r;
  CHECK_OK(wf_ckpt_open_memory(full, len, &r));
  wf_ckpt_close(r);
  for (size_t n = 0; n < len; n++) {
    /* a buffer of exactly n bytes, so that a read past it is an ASan error */
    unsigned char *cut = malloc(n ? n : 1);
    memcpy(cut, full, n);
    r = (wf_ckpt_reader *)cut; /* must be reset to NULL on failure */
    wf_status st = wf_ckpt_open_memory(n ? cut : NULL, n, &r);
    if (st != WF_ERR_PARSE || r != NULL)
      TH_FAIL("truncated to %zu of %zu bytes: %s, reader %p", n, len, wf_status_str(st), (void *)r);
    if (n >= 40) {
      char want[96];
      snprintf(want, sizeof want, "is %zu bytes, its header says %zu", n, len);
      if (!th_contains(wf_last_error(), want))
        TH_FAIL("truncated to %zu: message '%s' lacks '%s'", n, wf_last_error(), want);
    } else if (!th_contains(wf_last_error(), n ? "truncated" : "empty")) {
      TH_FAIL("truncated to %zu: message '%s'", n, wf_last_error());
    }
    free(cut);
  }
  /* one byte too many is refused as well */
  unsigned char *longer = calloc(1, len + 1);
  memcpy(longer, full, len);
  CHECK_STATUS(wf_ckpt_open_memory(longer, len + 1, &r), WF_ERR_PARSE);
  free(longer);
  free(full);
}

TEST(ckpt_every_byte_change_is_detected) {
  size_t len;
  unsigned char *full = small_ckpt(&len);
  REQUIRE(full);
  static const unsigned char flips[] = {0x01, 0x80, 0xFF, 0x5A};
  int undetected = 0;
  for (size_t i = 0; i < len; i++) {
    for (size_t k = 0; k < sizeof flips; k++) {
      full[i] ^= flips[k];
      wf_ckpt_reader *r = NULL;
      wf_status st = wf_ckpt_open_memory(full, len, &r);
      if (st != WF_ERR_PARSE && undetected++ < 5)
        TH_FAIL("byte %zu ^ 0x%02x: %s", i, flips[k], wf_status_str(st));
      if (r) wf_ckpt_close(r);
      full[i] ^= flips[k];
    }
  }
  CHECK_EQ_INT(undetected, 0);
  /* a change in section data names the section */
  wf_ckpt_reader *r;
  CHECK_OK(wf_ckpt_open_memory(full, len, &r));
  const void *p;
  size_t n;
  CHECK_OK(wf_ckpt_section(r, "particles/0/pos", &p, &n));
  size_t at = (size_t)((const unsigned char *)p - full) + 7;
  wf_ckpt_close(r);
  full[at] ^= 0x10;
  CHECK_STATUS(wf_ckpt_open_memory(full, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "corrupt"));
  CHECK(th_contains(wf_last_error(), "checksum of section 'particles/0/pos'"));
  full[at] ^= 0x10;
  /* a change in the table is a header checksum failure */
  full[40 + 3] ^= 0x04;
  CHECK_STATUS(wf_ckpt_open_memory(full, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "checksum of its header"));
  free(full);
}

TEST(ckpt_wrong_magic_and_version) {
  size_t len;
  unsigned char *b = small_ckpt(&len);
  REQUIRE(b);
  wf_ckpt_reader *r;
  put32(b + 8, 3);
  reseal(b); /* a well-formed format-3 file */
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "checkpoint format 3, this weft reads format 1"));
  put32(b + 8, 1);
  reseal(b);
  CHECK_OK(wf_ckpt_open_memory(b, len, &r));
  wf_ckpt_close(r);
  b[0] = 'P';
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "not a weft checkpoint"));
  /* files: the message names the path */
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "magic");
  snprintf(path, sizeof path, "%s/scene.json", dir);
  write_text(path, "{\"particles\": []}\n");
  CHECK_STATUS(wf_ckpt_open_file(path, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), path));
  CHECK(th_contains(wf_last_error(), "not a weft checkpoint"));
  snprintf(path, sizeof path, "%s/missing.ckpt", dir);
  CHECK_STATUS(wf_ckpt_open_file(path, &r), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), path));
  CHECK(th_contains(wf_last_error(), strerror(ENOENT)));
  free(b);
}

/* Two 16-byte sections "a" and "b"; the test edits the table and reseals the header checksum, so
 * that only the structural checks can refuse it. */
static unsigned char *two_sections(size_t *len) {
  wf_ckpt_writer *w;
  if (wf_ckpt_writer_create(&w) != WF_OK) return NULL;
  unsigned char z[16] = {0};
  wf_ckpt_writer_add(w, "a", z, 16);
  wf_ckpt_writer_add(w, "b", z, 16);
  *len = wf_ckpt_writer_size(w);
  unsigned char *b = malloc(*len);
  wf_ckpt_writer_save_memory(w, b, *len);
  wf_ckpt_writer_destroy(w);
  return b;
}

TEST(ckpt_structural_errors) {
  size_t len;
  wf_ckpt_reader *r;
  unsigned char *b = two_sections(&len);
  REQUIRE(b);
  unsigned char *ea = b + 40, *eb = b + 96;
  CHECK_EQ_INT(le64(ea + 32), 152); /* 40 + 2*56, already aligned */
  CHECK_EQ_INT(le64(eb + 32), 168);
  CHECK_OK(wf_ckpt_open_memory(b, len, &r));
  wf_ckpt_close(r);

  put64(eb + 32, 160); /* b starts inside a */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "overlap"));

  put64(eb + 32, 164); /* misaligned */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "multiple of 8"));

  put64(eb + 32, 176); /* runs past the end */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "outside"));

  put64(eb + 32, 168);
  put64(eb + 40, UINT64_MAX - 7); /* offset + size overflows */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "outside"));

  put64(eb + 40, 16);
  put64(ea + 32, 96); /* inside the table */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "outside"));

  put64(ea + 32, 152);
  eb[0] = 'a'; /* two sections named "a" */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "two sections are named 'a'"));

  memset(eb, 'x', 32); /* a name with no terminator */
  reseal(b);
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "no valid name"));

  memset(eb, 0, 32);
  eb[0] = 'b';
  put32(b + 16, 1000000); /* a section count whose table cannot fit (checked before the CRC) */
  CHECK_STATUS(wf_ckpt_open_memory(b, len, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "1000000 sections"));
  put32(b + 16, 2);
  reseal(b);
  CHECK_OK(wf_ckpt_open_memory(b, len, &r));
  wf_ckpt_close(r);

  /* bytes after the last section that the size includes: zeros pass, anything else is refused
   * (no checksum covers them) */
  unsigned char *longer = calloc(1, len + 8);
  memcpy(longer, b, len);
  put64(longer + 24, len + 8);
  reseal(longer);
  CHECK_OK(wf_ckpt_open_memory(longer, len + 8, &r));
  wf_ckpt_close(r);
  longer[len + 5] = 1;
  CHECK_STATUS(wf_ckpt_open_memory(longer, len + 8, &r), WF_ERR_PARSE);
  CHECK(th_contains(wf_last_error(), "padding"));
  free(longer);
  free(b);
}

/* ---- failed writes ------------------------------------------------------------------------ */

TEST(save_into_unwritable_place) {
  char dir[300], path[512], blocker[440];
  test_dir(dir, sizeof dir, "unwritable");
  snprintf(blocker, sizeof blocker, "%s/a_file", dir);
  write_text(blocker, "not a directory\n");
  wf_ckpt_writer *w;
  CHECK_OK(wf_ckpt_writer_create(&w));
  CHECK_OK(wf_ckpt_writer_add(w, "meta", "abc", 3));

  snprintf(path, sizeof path, "%s/x.ckpt", blocker); /* a path under a file */
  CHECK_STATUS(wf_ckpt_writer_save(w, path), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), path));
  CHECK(th_contains(wf_last_error(), strerror(ENOTDIR)));
  CHECK(!exists(path));

  snprintf(path, sizeof path, "%s/no/such/dir/x.ckpt", dir);
  CHECK_STATUS(wf_ckpt_writer_save(w, path), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), path));
  CHECK(th_contains(wf_last_error(), strerror(ENOENT)));
  CHECK(!exists(path));

  /* the output writers report the same way */
  snprintf(path, sizeof path, "%s/x.ply", blocker);
  float pos[3] = {1, 2, 3};
  CHECK_STATUS(wf_ply_write_points(path, &(wf_ply_points){.count = 1, .pos = pos}), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), path));
  snprintf(path, sizeof path, "%s/x.vtp", blocker);
  CHECK_STATUS(wf_vtp_write(path, &(wf_vtp_desc){.point_count = 1, .points = pos}), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), strerror(ENOTDIR)));
  snprintf(path, sizeof path, "%s/x.csv", blocker);
  const char *cols[] = {"t"};
  wf_csv *c = NULL;
  CHECK_STATUS(wf_csv_open(path, cols, 1, &c), WF_ERR_IO);
  CHECK(c == NULL);
  snprintf(path, sizeof path, "%s/x.pvd", blocker);
  wf_pvd *p = NULL;
  CHECK_STATUS(wf_pvd_create(path, &p), WF_ERR_IO);
  CHECK(p == NULL);
  CHECK_EQ_INT(count_tmp(dir), 0);
  wf_ckpt_writer_destroy(w);
}

TEST(save_into_read_only_directory) {
  if (geteuid() == 0) SKIP("running as root: permissions do not stop root");
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "read_only");
  chmod(dir, 0555);
  snprintf(path, sizeof path, "%s/x.ckpt", dir);
  wf_ckpt_writer *w;
  CHECK_OK(wf_ckpt_writer_create(&w));
  CHECK_STATUS(wf_ckpt_writer_save(w, path), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), strerror(EACCES)));
  CHECK(!exists(path));
  CHECK_EQ_INT(count_tmp(dir), 0);
  chmod(dir, 0755);
  wf_ckpt_writer_destroy(w);
}

/* Points the writer's temporary file at /dev/full, so that its writes fail with ENOSPC like a
 * full disk: "<path>.tmp.<pid>" is a symbolic link to /dev/full when the writer opens it. */
static bool plant_full_disk(const char *path) {
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  return symlink("/dev/full", tmp) == 0;
}

static void check_disk_full(const char *dir, const char *path, wf_status st, const char *old) {
  CHECK_STATUS(st, WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), path));
  CHECK(th_contains(wf_last_error(), strerror(ENOSPC)));
  CHECK_EQ_INT(count_tmp(dir), 0); /* the temporary file (here the link) is gone */
  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  if (old) {
    CHECK(b && strcmp((const char *)b, old) == 0); /* the older file is intact */
  } else {
    CHECK(b == NULL);
  }
  free(b);
}

TEST(disk_full_is_reported) {
  struct stat sb;
  if (stat("/dev/full", &sb) != 0 || !S_ISCHR(sb.st_mode)) SKIP("no /dev/full here");
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "disk_full");
  snprintf(path, sizeof path, "%s/state.ckpt", dir);
  write_text(path, "older checkpoint");
  wf_ckpt_writer *w;
  CHECK_OK(wf_ckpt_writer_create(&w));
  CHECK_OK(wf_ckpt_writer_add(w, "meta", "abc", 3));

  /* small: everything fits in stdio's buffer, so the flush at the end fails */
  REQUIRE(plant_full_disk(path));
  wf_status st = wf_ckpt_writer_save(w, path);
  check_disk_full(dir, path, st, "older checkpoint");
  CHECK(th_contains(wf_last_error(), "cannot write"));

  /* large: fwrite itself fails */
  size_t big = 1 << 20;
  unsigned char *data = calloc(1, big);
  CHECK_OK(wf_ckpt_writer_add(w, "big", data, big));
  free(data);
  REQUIRE(plant_full_disk(path));
  st = wf_ckpt_writer_save(w, path);
  check_disk_full(dir, path, st, "older checkpoint");
  wf_ckpt_writer_destroy(w);

  /* no older file: nothing is left under the name */
  snprintf(path, sizeof path, "%s/fresh.ckpt", dir);
  CHECK_OK(wf_ckpt_writer_create(&w));
  REQUIRE(plant_full_disk(path));
  st = wf_ckpt_writer_save(w, path);
  check_disk_full(dir, path, st, NULL);
  wf_ckpt_writer_destroy(w);

  /* the output writers too */
  enum { N = 10000 };
  float *pos = calloc(3 * N, sizeof *pos);
  snprintf(path, sizeof path, "%s/frame.ply", dir);
  REQUIRE(plant_full_disk(path));
  st = wf_ply_write_points(path, &(wf_ply_points){.count = N, .pos = pos});
  check_disk_full(dir, path, st, NULL);
  snprintf(path, sizeof path, "%s/frame.vtp", dir);
  REQUIRE(plant_full_disk(path));
  st = wf_vtp_write(path, &(wf_vtp_desc){.point_count = N, .points = pos, .binary = true});
  check_disk_full(dir, path, st, NULL);
  free(pos);

  /* a .pvd whose rewrite fails keeps its old content and entry count */
  snprintf(path, sizeof path, "%s/series.pvd", dir);
  wf_pvd *p;
  CHECK_OK(wf_pvd_create(path, &p));
  CHECK_OK(wf_pvd_add(p, 0.0, 0, "f0.vtp"));
  size_t n0 = 0;
  char *before = (char *)slurp(path, &n0);
  REQUIRE(plant_full_disk(path));
  st = wf_pvd_add(p, 0.5, 0, "f1.vtp");
  check_disk_full(dir, path, st, before);
  CHECK_EQ_INT(wf_pvd_count(p), 1);
  CHECK_OK(wf_pvd_add(p, 0.5, 0, "f1.vtp"));
  CHECK_EQ_INT(wf_pvd_count(p), 2);
  wf_pvd_destroy(p);
  free(before);
}

TEST(atomic_file_abort_and_sticky_errors) {
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "atomic");
  snprintf(path, sizeof path, "%s/out.txt", dir);
  wf_atomic_file *f;
  CHECK_OK(wf_atomic_file_open(path, &f));
  CHECK_OK(wf_atomic_file_printf(f, "hello %d\n", 42));
  CHECK_EQ_INT(count_tmp(dir), 1); /* being written: only the temporary exists */
  CHECK(!exists(path));
  wf_atomic_file_abort(f);
  CHECK_EQ_INT(count_tmp(dir), 0);
  CHECK(!exists(path));
  CHECK_OK(wf_atomic_file_open(path, &f));
  CHECK_OK(wf_atomic_file_write(f, "abc", 3));
  CHECK_OK(wf_atomic_file_commit(f));
  size_t n = 0;
  unsigned char *b = slurp(path, &n);
  CHECK(b && n == 3 && memcmp(b, "abc", 3) == 0);
  free(b);
  /* after a failed write, later writes report the same failure and the commit removes all */
  struct stat sb;
  if (stat("/dev/full", &sb) != 0) return;
  REQUIRE(plant_full_disk(path));
  CHECK_OK(wf_atomic_file_open(path, &f));
  static char big[1 << 17];
  CHECK_STATUS(wf_atomic_file_write(f, big, sizeof big), WF_ERR_IO);
  CHECK_STATUS(wf_atomic_file_write(f, "x", 1), WF_ERR_IO);
  CHECK_STATUS(wf_atomic_file_commit(f), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), strerror(ENOSPC)));
  CHECK_EQ_INT(count_tmp(dir), 0);
  b = slurp(path, &n);
  CHECK(b && n == 3);
  free(b);
}

/* ---- PLY ---------------------------------------------------------------------------------- */

/* Splits a PLY file into its header text and binary body; NULL when the header is malformed. */
static const unsigned char *ply_body(const unsigned char *file, size_t len, char *header,
                                     size_t cap) {
  const char *end = strstr((const char *)file, "end_header\n");
  if (!end) return NULL;
  size_t n = (size_t)(end - (const char *)file) + strlen("end_header\n");
  if (n >= cap || n > len) return NULL;
  memcpy(header, file, n);
  header[n] = 0;
  return file + n;
}

/* The bits of a float: PLY bodies are compared bit for bit. */
static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float lef(const unsigned char *p) {
  uint32_t u = le32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

TEST(ply_points_round_trip) {
  enum { N = 1000 };
  float *pos = malloc(3 * N * sizeof *pos), *vel = malloc(3 * N * sizeof *vel);
  float *rad = malloc(N * sizeof *rad);
  uint32_t *id = malloc(N * sizeof *id);
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < 3; k++)
      pos[3 * i + k] = rng_float(), vel[3 * i + k] = rng_float();
    rad[i] = 0.01f + (float)i * 1e-5f;
    id[i] = rng();
  }
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "ply");
  snprintf(path, sizeof path, "%s/points.ply", dir);
  CHECK_OK(wf_ply_write_points(
      path, &(wf_ply_points){.count = N, .pos = pos, .radius = rad, .vel = vel, .id = id}));
  CHECK_EQ_INT(count_tmp(dir), 0);
  size_t len = 0;
  unsigned char *file = slurp(path, &len);
  REQUIRE(file);
  char header[1024];
  const unsigned char *body = ply_body(file, len, header, sizeof header);
  REQUIRE(body);
  CHECK(strncmp(header, "ply\nformat binary_little_endian 1.0\n", 36) == 0);
  CHECK(strstr(header, "element vertex 1000\nproperty float x\nproperty float y\n"
                       "property float z\nproperty float radius\nproperty float vx\n"
                       "property float vy\nproperty float vz\nproperty uint id\nend_header\n"));
  const size_t rec = 4 * 8; /* x y z radius vx vy vz id */
  CHECK_EQ_INT(len - (size_t)(body - file), rec * N);
  int bad = 0;
  for (int i = 0; i < N && (size_t)(body - file) + rec * N <= len; i++) {
    const unsigned char *p = body + rec * i;
    for (int k = 0; k < 3; k++) {
      bad += le32(p + 4 * k) != fbits(pos[3 * i + k]);
      bad += le32(p + 16 + 4 * k) != fbits(vel[3 * i + k]);
    }
    bad += le32(p + 12) != fbits(rad[i]);
    bad += le32(p + 28) != id[i];
  }
  CHECK_EQ_INT(bad, 0);
  free(file);

  /* without the optional properties: x y z only */
  CHECK_OK(wf_ply_write_points(path, &(wf_ply_points){.count = N, .pos = pos}));
  file = slurp(path, &len);
  REQUIRE(file);
  body = ply_body(file, len, header, sizeof header);
  REQUIRE(body);
  CHECK(strstr(header, "property float z\nend_header\n"));
  CHECK(!strstr(header, "radius"));
  CHECK_EQ_INT(len - (size_t)(body - file), 12 * N);
  for (int i = 0; i < 3 * N; i++)
    bad += le32(body + 4 * i) != fbits(pos[i]);
  CHECK_EQ_INT(bad, 0);
  free(file);
  free(pos), free(vel), free(rad), free(id);
}

TEST(ply_mesh_round_trip) {
  /* an n x n grid of vertices, two triangles per cell */
  enum { G = 20, V = G * G, T = 2 * (G - 1) * (G - 1) };
  float pos[3 * V], nrm[3 * V];
  uint32_t tri[3 * T];
  for (int i = 0; i < V; i++) {
    pos[3 * i] = (float)(i % G) * 0.1f, pos[3 * i + 1] = (float)(i / G) * 0.1f;
    pos[3 * i + 2] = rng_float();
    nrm[3 * i] = 0, nrm[3 * i + 1] = 0, nrm[3 * i + 2] = 1;
  }
  int t = 0;
  for (uint32_t y = 0; y + 1 < G; y++)
    for (uint32_t x = 0; x + 1 < G; x++) {
      uint32_t a = y * G + x, b = a + 1, c = a + G, d = c + 1;
      tri[3 * t] = a, tri[3 * t + 1] = b, tri[3 * t + 2] = d, t++;
      tri[3 * t] = a, tri[3 * t + 1] = d, tri[3 * t + 2] = c, t++;
    }
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "ply_mesh");
  snprintf(path, sizeof path, "%s/cloth.ply", dir);
  wf_ply_mesh m = {.vertex_count = V, .pos = pos, .normal = nrm, .tri_count = T, .tri = tri};
  CHECK_OK(wf_ply_write_mesh(path, &m));
  size_t len = 0;
  unsigned char *file = slurp(path, &len);
  REQUIRE(file);
  char header[1024];
  const unsigned char *body = ply_body(file, len, header, sizeof header);
  REQUIRE(body);
  char want[128];
  snprintf(want, sizeof want, "element face %d\nproperty list uchar int vertex_indices\n", T);
  CHECK(strstr(header, "element vertex 400\n"));
  CHECK(strstr(header, "property float nz\n"));
  CHECK(strstr(header, want));
  CHECK_EQ_INT(len - (size_t)(body - file), 24 * V + 13 * T);
  int bad = 0;
  if (len - (size_t)(body - file) == 24 * V + 13 * T) {
    for (int i = 0; i < V; i++)
      for (int k = 0; k < 3; k++) {
        bad += le32(body + 24 * i + 4 * k) != fbits(pos[3 * i + k]);
        bad += le32(body + 24 * i + 12 + 4 * k) != fbits(nrm[3 * i + k]);
      }
    const unsigned char *f = body + 24 * V;
    for (int i = 0; i < T; i++, f += 13) {
      bad += f[0] != 3;
      for (int k = 0; k < 3; k++)
        bad += (int32_t)le32(f + 1 + 4 * k) != (int32_t)tri[3 * i + k];
    }
  }
  CHECK_EQ_INT(bad, 0);
  free(file);

  /* velocities: vx vy vz after the normals, 36 bytes a vertex */
  snprintf(path, sizeof path, "%s/cloth_vel.ply", dir);
  m.vel = nrm; /* any 3 floats a vertex */
  m.normal = pos;
  CHECK_OK(wf_ply_write_mesh(path, &m));
  file = slurp(path, &len);
  REQUIRE(file);
  body = ply_body(file, len, header, sizeof header);
  REQUIRE(body);
  CHECK(strstr(header, "property float nz\nproperty float vx\nproperty float vy\n"
                       "property float vz\nelement face"));
  CHECK_EQ_INT(len - (size_t)(body - file), 36 * V + 13 * T);
  if (len - (size_t)(body - file) == 36 * V + 13 * T)
    for (int i = 0; i < V; i++)
      for (int k = 0; k < 3; k++)
        bad += le32(body + 36 * i + 24 + 4 * k) != fbits(nrm[3 * i + k]);
  CHECK_EQ_INT(bad, 0);
  free(file);
  m.vel = NULL, m.normal = nrm;

  /* an index out of range is refused before anything is written */
  snprintf(path, sizeof path, "%s/bad.ply", dir);
  tri[3 * 7 + 1] = V;
  CHECK_STATUS(wf_ply_write_mesh(path, &m), WF_ERR_INVALID);
  CHECK(th_contains(wf_last_error(), "triangle 7"));
  CHECK(!exists(path));
  CHECK_EQ_INT(count_tmp(dir), 0);
}

/* ---- VTP / PVD ----------------------------------------------------------------------------- */

/* One parsed <DataArray>: its attributes and its values decoded to bytes (binary) or to the
 * raw text (ascii). */
typedef struct vtk_arr {
  char type[16], name[64], format[16];
  int comps;
  const char *text; /* start of the content */
  size_t text_len;
} vtk_arr;

/* Value of attribute `key` in the tag starting at tag (up to '>'), into out; 0 if absent. */
static int attr(const char *tag, const char *key, char *out, size_t cap) {
  const char *end = strchr(tag, '>');
  char pat[64];
  snprintf(pat, sizeof pat, " %s=\"", key);
  const char *a = strstr(tag, pat);
  if (!a || (end && a > end)) return 0;
  a += strlen(pat);
  const char *q = strchr(a, '"');
  if (!q || (size_t)(q - a) >= cap) return 0;
  memcpy(out, a, (size_t)(q - a));
  out[q - a] = 0;
  return 1;
}

/* The arrays of a .vtp, in file order; returns how many (at most cap). */
static int vtk_arrays(const char *xml, vtk_arr *out, int cap) {
  int n = 0;
  for (const char *p = xml; n < cap && (p = strstr(p, "<DataArray")); n++) {
    vtk_arr *a = &out[n];
    memset(a, 0, sizeof *a);
    attr(p, "type", a->type, sizeof a->type);
    attr(p, "Name", a->name, sizeof a->name);
    attr(p, "format", a->format, sizeof a->format);
    char c[16] = "1";
    attr(p, "NumberOfComponents", c, sizeof c);
    a->comps = atoi(c);
    a->text = strchr(p, '>') + 1;
    const char *e = strstr(a->text, "</DataArray>");
    a->text_len = e ? (size_t)(e - a->text) : 0;
    p = a->text;
  }
  return n;
}

static int b64_val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes base64 text (whitespace skipped, '=' padding); returns the byte count. */
static size_t b64_decode(const char *s, size_t n, unsigned char *out) {
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64_val(s[i]);
    if (v < 0) continue;
    acc = (acc << 6) | (uint32_t)v, bits += 6;
    if (bits >= 8) bits -= 8, out[o++] = (unsigned char)(acc >> bits);
  }
  return o;
}

/* The values of an array as doubles (exact for Float32, UInt32 and the Int64 values used). The
 * binary form must start with its UInt64 byte count. Returns the value count, or -1. */
static long vtk_values(const vtk_arr *a, double *out, long cap) {
  bool f32 = strcmp(a->type, "Float32") == 0, u32 = strcmp(a->type, "UInt32") == 0;
  bool i64 = strcmp(a->type, "Int64") == 0;
  if (!f32 && !u32 && !i64) return -1;
  long n = 0;
  if (strcmp(a->format, "ascii") == 0) {
    char *end;
    const char *p = a->text;
    for (;;) {
      double v = f32 ? (double)strtof(p, &end) : strtod(p, &end);
      if (end == p || end > a->text + a->text_len) break;
      if (n < cap) out[n] = v;
      n++, p = end;
    }
    return n;
  }
  if (strcmp(a->format, "binary") != 0) return -1;
  unsigned char *raw = malloc(a->text_len);
  size_t len = b64_decode(a->text, a->text_len, raw);
  size_t size = i64 ? 8 : 4;
  if (len < 8 || le64(raw) != len - 8 || (len - 8) % size) {
    free(raw);
    return -1;
  }
  for (size_t i = 0; i < (len - 8) / size; i++, n++) {
    const unsigned char *p = raw + 8 + size * i;
    double v = f32 ? (double)lef(p) : u32 ? (double)le32(p) : (double)(int64_t)le64(p);
    if (n < cap) out[n] = v;
  }
  free(raw);
  return n;
}

static void check_vtp(const char *path, bool binary, bool mesh) {
  enum { N = 300, T = 200 };
  static float pos[3 * N], vel[3 * N];
  static uint32_t id[N], tri[3 * T];
  for (int i = 0; i < 3 * N; i++)
    pos[i] = rng_float(), vel[i] = rng_float() * 1e-3f;
  for (int i = 0; i < N; i++)
    id[i] = rng();
  for (int i = 0; i < 3 * T; i++)
    tri[i] = rng() % N;
  wf_vtk_array arrays[2] = {{"velocity <m/s> & more", WF_VTK_FLOAT32, 3, vel},
                            {"id", WF_VTK_UINT32, 1, id}};
  wf_vtp_desc d = {.point_count = N,
                   .points = pos,
                   .tri_count = mesh ? T : 0,
                   .tri = mesh ? tri : NULL,
                   .arrays = arrays,
                   .array_count = 2,
                   .binary = binary};
  CHECK_OK(wf_vtp_write(path, &d));
  size_t len = 0;
  char *xml = (char *)slurp(path, &len);
  REQUIRE(xml);
  CHECK(strstr(xml, "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" "
                    "header_type=\"UInt64\">"));
  char want[160];
  snprintf(want, sizeof want, "NumberOfPoints=\"%d\" NumberOfVerts=\"%d\"", N, mesh ? 0 : N);
  CHECK(strstr(xml, want));
  snprintf(want, sizeof want, "NumberOfPolys=\"%d\"", mesh ? T : 0);
  CHECK(strstr(xml, want));
  CHECK(strstr(xml, mesh ? "<Polys>" : "<Verts>"));
  CHECK(strstr(xml, "</VTKFile>\n"));
  vtk_arr a[8];
  int na = vtk_arrays(xml, a, 8);
  REQUIRE(na == 5);
  /* PointData (velocity, id), Points, then connectivity and offsets */
  CHECK(strcmp(a[0].name, "velocity &lt;m/s&gt; &amp; more") == 0);
  CHECK(a[0].comps == 3 && strcmp(a[0].type, "Float32") == 0);
  CHECK(strcmp(a[1].name, "id") == 0 && strcmp(a[1].type, "UInt32") == 0);
  CHECK(a[2].comps == 3 && a[2].name[0] == 0);
  CHECK(strcmp(a[3].name, "connectivity") == 0 && strcmp(a[4].name, "offsets") == 0);
  for (int i = 0; i < na; i++)
    CHECK(strcmp(a[i].format, binary ? "binary" : "ascii") == 0);
  static double v[4 * N];
  int bad = 0;
  CHECK_EQ_INT(vtk_values(&a[0], v, 4 * N), 3 * N);
  for (int i = 0; i < 3 * N; i++)
    bad += (float)v[i] != vel[i];
  CHECK_EQ_INT(vtk_values(&a[1], v, 4 * N), N);
  for (int i = 0; i < N; i++)
    bad += v[i] != (double)id[i];
  CHECK_EQ_INT(vtk_values(&a[2], v, 4 * N), 3 * N);
  for (int i = 0; i < 3 * N; i++)
    bad += (float)v[i] != pos[i];
  int cells = mesh ? T : N, per = mesh ? 3 : 1;
  CHECK_EQ_INT(vtk_values(&a[3], v, 4 * N), cells * per);
  for (int i = 0; i < cells * per; i++)
    bad += v[i] != (mesh ? (double)tri[i] : (double)i);
  CHECK_EQ_INT(vtk_values(&a[4], v, 4 * N), cells);
  for (int i = 0; i < cells; i++)
    bad += v[i] != (double)((i + 1) * per);
  CHECK_EQ_INT(bad, 0);
  free(xml);
}

TEST(vtp_round_trip) {
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "vtp");
  const bool modes[4][2] = {{false, false}, {true, false}, {false, true}, {true, true}};
  for (int m = 0; m < 4; m++) {
    snprintf(path, sizeof path, "%s/f%d.vtp", dir, m);
    check_vtp(path, modes[m][0], modes[m][1]);
  }
  CHECK_EQ_INT(count_tmp(dir), 0);
  /* a triangle index out of range is refused */
  float pos[9] = {0};
  uint32_t tri[3] = {0, 1, 3};
  snprintf(path, sizeof path, "%s/bad.vtp", dir);
  CHECK_STATUS(
      wf_vtp_write(path,
                   &(wf_vtp_desc){.point_count = 3, .points = pos, .tri_count = 1, .tri = tri}),
      WF_ERR_INVALID);
  CHECK(!exists(path));
}

TEST(base64_lengths) {
  /* Every length mod 3 of binary data: 1..7 floats after the 8-byte count. */
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "b64");
  for (int n = 1; n <= 7; n++) {
    float pos[21], w[7];
    for (int i = 0; i < 3 * n; i++)
      pos[i] = rng_float();
    for (int i = 0; i < n; i++)
      w[i] = rng_float();
    wf_vtk_array arr = {"w", WF_VTK_FLOAT32, 1, w};
    snprintf(path, sizeof path, "%s/n%d.vtp", dir, n);
    CHECK_OK(wf_vtp_write(path, &(wf_vtp_desc){.point_count = (size_t)n,
                                               .points = pos,
                                               .arrays = &arr,
                                               .array_count = 1,
                                               .binary = true}));
    size_t len;
    char *xml = (char *)slurp(path, &len);
    REQUIRE(xml);
    vtk_arr a[5];
    REQUIRE(vtk_arrays(xml, a, 5) == 4);
    double v[8];
    CHECK_EQ_INT(vtk_values(&a[0], v, 8), n);
    for (int i = 0; i < n; i++)
      CHECK((float)v[i] == w[i]);
    free(xml);
  }
}

TEST(pvd_collection) {
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "pvd");
  snprintf(path, sizeof path, "%s/series.pvd", dir);
  wf_pvd *p;
  CHECK_OK(wf_pvd_create(path, &p));
  size_t len;
  char *xml = (char *)slurp(path, &len);
  REQUIRE(xml);
  CHECK(strstr(xml, "<VTKFile type=\"Collection\""));
  CHECK(strstr(xml, "<Collection>\n  </Collection>"));
  free(xml);
  const double times[3] = {0.0, 1.0 / 60.0, 0.1 + 0.2};
  const char *files[3] = {"frames/f0000.vtp", "frames/f0001.vtp", "frames/a&b\"c.vtp"};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(wf_pvd_add(p, times[i], i == 2 ? 1 : 0, files[i]));
    CHECK_EQ_INT(wf_pvd_count(p), i + 1);
    xml = (char *)slurp(path, &len);
    REQUIRE(xml);
    /* every rewrite lists all entries so far, and only those */
    int n = 0;
    for (const char *s = xml; (s = strstr(s, "<DataSet")); s++, n++) {
      char t[64], part[16], file[128];
      REQUIRE(attr(s, "timestep", t, sizeof t) && attr(s, "part", part, sizeof part) &&
              attr(s, "file", file, sizeof file));
      CHECK(strtod(t, NULL) == times[n]); /* %.17g round-trips */
      CHECK_EQ_INT(atoi(part), n == 2 ? 1 : 0);
      CHECK(strcmp(file, n == 2 ? "frames/a&amp;b&quot;c.vtp" : files[n]) == 0);
    }
    CHECK_EQ_INT(n, i + 1);
    free(xml);
  }
  CHECK_EQ_INT(count_tmp(dir), 0);
  /* a failed rewrite (the directory is gone) is reported and the entry is not kept */
  remove(path);
  rmdir(dir);
  CHECK_STATUS(wf_pvd_add(p, 1.0, 0, "x.vtp"), WF_ERR_IO);
  CHECK(th_contains(wf_last_error(), path));
  CHECK(th_contains(wf_last_error(), strerror(ENOENT)));
  CHECK_EQ_INT(wf_pvd_count(p), 3);
  wf_pvd_destroy(p);
}

/* ---- CSV ---------------------------------------------------------------------------------- */

TEST(csv_round_trip) {
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "csv");
  snprintf(path, sizeof path, "%s/stats.csv", dir);
  const char *cols[4] = {"frame", "time", "energy, kinetic", "say \"hi\""};
  wf_csv *c;
  CHECK_OK(wf_csv_open(path, cols, 4, &c));
  enum { ROWS = 50 };
  double rows[ROWS][4];
  for (int r = 0; r < ROWS; r++) {
    rows[r][0] = r;
    rows[r][1] = r / 60.0;
    rows[r][2] = (double)rng_float() * 1e-300;
    rows[r][3] = -0.1 * (double)rng();
    CHECK_OK(wf_csv_append(c, rows[r]));
    /* each row is on disk once append returns: the file ends with a line break */
    size_t n = 0;
    char *now = (char *)slurp(path, &n);
    REQUIRE(now);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
      lines += now[i] == '\n';
    CHECK_EQ_INT(lines, r + 2);
    CHECK(n > 0 && now[n - 1] == '\n');
    free(now);
  }
  CHECK_OK(wf_csv_close(c));
  CHECK_EQ_INT(count_tmp(dir), 0);
  size_t len;
  char *text = (char *)slurp(path, &len);
  REQUIRE(text);
  const char *header = "frame,time,\"energy, kinetic\",\"say \"\"hi\"\"\"\n";
  REQUIRE(strncmp(text, header, strlen(header)) == 0);
  char *p = text + strlen(header);
  int bad = 0, lines = 0;
  for (int r = 0; r < ROWS && *p; r++, lines++) {
    for (int k = 0; k < 4; k++) {
      char *end;
      double v = strtod(p, &end);
      bad += end == p || v != rows[r][k];
      bad += *end != (k < 3 ? ',' : '\n');
      p = end + 1;
    }
  }
  CHECK_EQ_INT(lines, ROWS);
  CHECK_EQ_INT(bad, 0);
  CHECK(*p == 0);
  free(text);
}

TEST(csv_append_failure_is_reported) {
  /* A file size limit makes appends fail with EFBIG, as a full disk would with ENOSPC. */
  char dir[300], path[512];
  test_dir(dir, sizeof dir, "csv_full");
  snprintf(path, sizeof path, "%s/stats.csv", dir);
  const char *cols[2] = {"a", "b"};
  wf_csv *c;
  CHECK_OK(wf_csv_open(path, cols, 2, &c));
  struct rlimit old;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = {4096, old.rlim_max};
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  wf_status st = WF_OK;
  int rows = 0;
  double v[2] = {1.0 / 3.0, -2.0 / 7.0};
  while (rows < 1000 && (st = wf_csv_append(c, v)) == WF_OK)
    rows++;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", wf_last_error());
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  CHECK_STATUS(st, WF_ERR_IO);
  CHECK(rows > 10 && rows < 200); /* ~40 bytes a row under a 4 KiB limit */
  CHECK(th_contains(msg, path));
  CHECK(th_contains(msg, strerror(EFBIG)));
  char want[32];
  snprintf(want, sizeof want, "row %d", rows + 1);
  CHECK(th_contains(msg, want));
  wf_csv_close(c); /* may report the unflushed tail again; either way it frees */
}

int main(int argc, char **argv) {
  if (!tmp_root_make("weft_test_io")) return 1;
  static const th_test tests[] = {
      TH_TEST(crc32_check_value),
      TH_TEST(ckpt_round_trip_many_sections),
      TH_TEST(ckpt_empty_checkpoint),
      TH_TEST(ckpt_writer_rejects_bad_names),
      TH_TEST(ckpt_every_truncation_is_refused),
      TH_TEST(ckpt_every_byte_change_is_detected),
      TH_TEST(ckpt_wrong_magic_and_version),
      TH_TEST(ckpt_structural_errors),
      TH_TEST(save_into_unwritable_place),
      TH_TEST(save_into_read_only_directory),
      TH_TEST(disk_full_is_reported),
      TH_TEST(atomic_file_abort_and_sticky_errors),
      TH_TEST(ply_points_round_trip),
      TH_TEST(ply_mesh_round_trip),
      TH_TEST(vtp_round_trip),
      TH_TEST(base64_lengths),
      TH_TEST(pvd_collection),
      TH_TEST(csv_round_trip),
      TH_TEST(csv_append_failure_is_reported),
  };
  int rc = th_main(argc, argv, tests, TH_COUNT(tests));
  rm_rf(tmp_root);
  return rc;
}
