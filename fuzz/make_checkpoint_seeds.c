/* Writes the seed corpus of fuzz_checkpoint into a directory: valid checkpoints (several
 * sections, none, an empty section, a large-ish one) and corrupt ones (magic, version,
 * truncation, a section checksum, overlapping and duplicate sections re-sealed with a correct
 * header checksum so that the structural checks are reached). Each file is under 64 KiB.
 *
 *   cc -Iinclude -Ibuild/include fuzz/make_checkpoint_seeds.c -Lbuild -lweft -o make_seeds
 *   LD_LIBRARY_PATH=build ./make_seeds fuzz/corpus/checkpoint
 *
 * Run once; the generated files are committed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/io.h"

static const char *out_dir;

static void put(const char *name, const unsigned char *b, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", out_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  printf("%-28s %6zu bytes\n", name, n);
}

/* The writer's bytes, in a malloc'd buffer. */
static unsigned char *image(wf_ckpt_writer *w, size_t *n) {
  *n = wf_ckpt_writer_size(w);
  unsigned char *b = malloc(*n);
  if (!b || wf_ckpt_writer_save_memory(w, b, *n) != WF_OK) {
    fprintf(stderr, "save_memory: %s\n", wf_last_error());
    exit(1);
  }
  wf_ckpt_writer_destroy(w);
  return b;
}

static void add(wf_ckpt_writer *w, const char *name, const void *data, size_t n) {
  if (wf_ckpt_writer_add(w, name, data, n) != WF_OK) {
    fprintf(stderr, "add %s: %s\n", name, wf_last_error());
    exit(1);
  }
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  put32(p, (uint32_t)v);
  put32(p + 4, (uint32_t)(v >> 32));
}
static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Recomputes the header+table checksum after an edit (layout in weft/io.h). */
static void reseal(unsigned char *b) {
  uint32_t crc = wf_crc32(0, b, 32);
  crc = wf_crc32(crc, b + 40, 56 * (size_t)get32(b + 16));
  put32(b + 32, crc);
}

static unsigned char *several(size_t *n) {
  wf_ckpt_writer *w;
  wf_ckpt_writer_create(&w);
  const char meta[] = "{\"frame\": 120, \"dt\": 0.0016666, \"scene\": \"cloth_drape.json\"}";
  float pos[3 * 64], vel[3 * 64];
  for (int i = 0; i < 3 * 64; i++)
    pos[i] = (float)i * 0.125f, vel[i] = -(float)i / 64.0f;
  uint32_t tri[3 * 16];
  for (int i = 0; i < 3 * 16; i++)
    tri[i] = (uint32_t)(i * 7 % 64);
  uint64_t step = 7200;
  add(w, "meta", meta, sizeof meta - 1);
  add(w, "particles/0/pos", pos, sizeof pos);
  add(w, "particles/0/vel", vel, sizeof vel);
  add(w, "cloth/0/tri", tri, sizeof tri);
  add(w, "state/step", &step, sizeof step);
  add(w, "odd", "abc", 3); /* needs padding after it */
  return image(w, n);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  out_dir = argv[1];
  wf_ckpt_writer *w;
  size_t n;
  unsigned char *b;

  b = several(&n);
  put("valid_sections.ckpt", b, n);
  free(b);

  wf_ckpt_writer_create(&w);
  b = image(w, &n);
  put("valid_no_sections.ckpt", b, n);
  free(b);

  wf_ckpt_writer_create(&w);
  add(w, "meta", "x", 1);
  add(w, "empty", NULL, 0);
  add(w, "after", "12345678", 8);
  b = image(w, &n);
  put("valid_empty_section.ckpt", b, n);
  free(b);

  wf_ckpt_writer_create(&w);
  static unsigned char big[15000];
  uint32_t x = 1;
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (unsigned char)((x = x * 1103515245u + 12345u) >> 24);
  add(w, "particles/0/pos", big, sizeof big);
  add(w, "particles/1/pos", big + 1, sizeof big - 1);
  add(w, "particles/2/pos", big + 2, sizeof big - 2);
  add(w, "particles/3/pos", big + 3, sizeof big - 3);
  b = image(w, &n);
  put("valid_large.ckpt", b, n);
  free(b);

  /* corrupt ones, from the several-sections checkpoint */
  b = several(&n);
  b[3] = 'X';
  put("bad_magic.ckpt", b, n);
  b[3] = 'T';
  put32(b + 8, 3);
  reseal(b);
  put("bad_version.ckpt", b, n);
  put32(b + 8, 1);
  reseal(b);
  put("truncated.ckpt", b, n / 2);
  put("truncated_header.ckpt", b, 20);
  size_t data0 = 40 + 56 * 6; /* the first section's data */
  b[data0 + 5] ^= 0x20;
  put("bad_section_crc.ckpt", b, n);
  b[data0 + 5] ^= 0x20;
  b[40 + 56 + 3] ^= 1; /* a name in the table, not resealed */
  put("bad_table_crc.ckpt", b, n);
  b[40 + 56 + 3] ^= 1;
  unsigned char *e1 = b + 40 + 56;
  uint64_t off0 = 0;
  for (int i = 0; i < 8; i++)
    off0 |= (uint64_t)b[40 + 32 + i] << (8 * i);
  put64(e1 + 32, off0 + 8); /* section 1 starts inside section 0 */
  reseal(b);
  put("overlap.ckpt", b, n);
  free(b);
  b = several(&n);
  memcpy(b + 40 + 56 * 2, "particles/0/pos", 16); /* section 2 takes section 1's name */
  reseal(b);
  put("duplicate_name.ckpt", b, n);
  put64(b + 40 + 56 * 2 + 40, UINT64_MAX - 3); /* a size that overflows */
  reseal(b);
  put("huge_section.ckpt", b, n);
  free(b);
  return 0;
}
