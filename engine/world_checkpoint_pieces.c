/* A world's checkpoint over MPI ranks as pieces and a manifest (weft/world.h, wf_world_save).
 *
 * When the particles run over more than one rank, rank r writes the particles its partitions own
 * as one piece, and rank 0 writes the manifest: the one-file checkpoint without the particles'
 * rows, plus a section naming the pieces. Both are checkpoint containers (weft/io.h).
 *
 *   <stem>.wfck        the manifest: "meta", "scene", "physics", "stop", "particles/clock",
 *                      "particles/origin", every cloth's sections (as a one-file checkpoint), and
 *                      "pieces": u64 format (1), piece count P, particle count, frame; then P
 *                      entries of 256 bytes: the piece's file name (240 bytes, NUL-padded, no
 *                      directory: it lies beside the manifest), u64 rows, u32 CRC-32 of its rows
 *                      (the data of its five row sections in order), u32 0
 *   <stem>.p<r>.wfck   piece r: "piece" (u64 format 1, frame, r, P, rows, particle count), then
 *                      the rows in ascending global id: "particles/ids" (u32), "particles/pos"
 *                      (xyz + radius relative to the origin, 16 bytes), "particles/vel" (16),
 *                      "particles/omega" (16) and "particles/history" (8 slots, 256 bytes): the
 *                      rows of wf_particles_download_owned_local
 *
 * (<stem> is the path less its ".wfck"; a path without that ending gets ".p<r>.wfck" appended.)
 * Rank 0's path is the one used: every rank's piece lies beside rank 0's manifest. A world over
 * ranks without particles has no pieces: rank 0 writes the one file, and every rank returns its
 * verdict (wfw_ckpt_finish).
 *
 * Invariants
 *  - Saving: a rank holds its own rows only (308 bytes a particle it owns, and the container's
 *    copy of them), never the system's. The order is: every piece written atomically; the ranks
 *    agree (an all-gather of each rank's status, rows and CRC); rank 0 writes the manifest
 *    atomically; rank 0's result is broadcast. A failure anywhere leaves no new manifest, and
 *    each rank removes the piece it wrote. A manifest already at the path stays as it was; a
 *    piece replaced under it no longer matches its CRC and is refused.
 *  - Loading reads every piece on every rank (the whole state, as a one-file checkpoint: the
 *    restore takes whole arrays) and refuses, naming the piece file, a piece that is missing, is
 *    no valid container, belongs to another checkpoint (frame, index, count, rows, CRC), holds an
 *    id out of range or one another piece holds; the rows then lie by id where the one-file
 *    checkpoint holds them, so the restore is the same bits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "weft/io.h"
#include "weft/particles.h"

#include "solvers/partition/ranks.h"
#include "world_internal.h"

enum {
  PIECES_FORMAT = 1,
  PIECE_FILE = 240,                   /* bytes of an entry's file name */
  ROW_BYTES = 4 + 16 + 16 + 16 + 256, /* id, pos, vel, omega, history */
  MAX_PIECES = 1 << 20,               /* a sanity bound on a manifest's count */
};

typedef struct pieces_head {
  uint64_t format, pieces, particles, frame;
} pieces_head;

typedef struct piece_entry {
  char file[PIECE_FILE];
  uint64_t rows;
  uint32_t crc, reserved;
} piece_entry;
_Static_assert(sizeof(piece_entry) == 256, "a manifest's entry is 256 bytes");

/* Section "piece" of a piece file. */
typedef struct piece_head {
  uint64_t format, frame, index, count, rows, particles;
} piece_head;

/* What each rank reports after writing its piece. */
typedef struct piece_report {
  int64_t failed;
  uint64_t rows;
  uint32_t crc, reserved;
} piece_report;

static const char *const row_sections[5] = {"particles/ids", "particles/pos", "particles/vel",
                                            "particles/omega", "particles/history"};
static const size_t row_width[5] = {4, 16, 16, 16, 256};

wf_status wfw_piece_path(char *buf, size_t n, const char *manifest, int r) {
  size_t len = strlen(manifest), stem = len;
  if (len >= 5 && strcmp(manifest + len - 5, ".wfck") == 0) stem = len - 5;
  int k = snprintf(buf, n, "%.*s.p%d.wfck", (int)stem, manifest, r);
  if (k < 0 || (size_t)k >= n)
    return wf__error(WF_ERR_INVALID, NULL, "checkpoint '%s': the path of piece %d is too long",
                     manifest, r);
  return WF_OK;
}

/* The file name of a path (after its last '/'). */
static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

wf_status wfw_ckpt_path_agree(wf_world *w, const char *path, char *out, size_t n) {
  uint64_t len = strlen(path);
  int size = 1, rank = 0;
  wfpt_comm_size(w->mpi_comm, &size, &rank);
  wf_status st = wfpt_comm_bcast(w->mpi_comm, "wf_world_save", &len, sizeof len, 0);
  if (st == WF_OK && len >= n)
    st = wf__error(WF_ERR_INVALID, "wf_world_save",
                   "checkpoint path of rank 0 is %llu characters, this weft takes %zu",
                   (unsigned long long)len, n - 1);
  if (st != WF_OK) return st;
  if (rank == 0) memcpy(out, path, (size_t)len);
  st = wfpt_comm_bcast(w->mpi_comm, "wf_world_save", out, (size_t)len, 0);
  out[len] = '\0';
  return st;
}

/* Over the ranks: a status every rank agrees on; a rank that failed keeps its own message
 * (prefixed with its rank), the others name the lowest rank that failed. */
static wf_status agree(wf_world *w, wf_status st, const char *path, const char *doing) {
  int failed = -1, size = 1, rank = 0;
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", st != WF_OK ? wf_last_error() : "");
  wf_status st2 = wfpt_comm_agree(w->mpi_comm, st != WF_OK, &failed);
  wfpt_comm_size(w->mpi_comm, &size, &rank);
  if (st != WF_OK) return wf__error(st, NULL, "MPI rank %d of %d: %s", rank, size, mine);
  if (st2 != WF_OK) return st2;
  if (failed >= 0)
    return wf__error(WF_ERR_IO, NULL, "checkpoint '%s': MPI rank %d failed %s (see its message)",
                     path, failed, doing);
  return WF_OK;
}

/* This rank's piece of the particles: its owned rows read and written to `file` (NULL: read
 * only); *crc over the rows' sections, *rows of them. Every rank calls it (the read is a
 * collective). */
static wf_status write_piece(wf_world *w, const char *file, int64_t frame, int rank, int size,
                             uint64_t *rows, uint32_t *crc) {
  wf_status st = wf_particles_check(w->ps); /* the frames made exact: the owned rows are known */
  if (st != WF_OK) return st;
  uint32_t room = wf_particles_owned_count(w->ps), n = 0;
  unsigned char *buf = malloc((size_t)(room ? room : 1) * ROW_BYTES);
  unsigned char *col[5] = {NULL};
  if (buf) {
    col[0] = buf;
    for (int k = 1; k < 5; k++)
      col[k] = col[k - 1] + (size_t)room * row_width[k - 1];
  }
  /* every rank enters the read, also one out of memory (no arrays: only the collective) */
  st = wf_particles_download_owned_local(w->ps, buf ? room : UINT32_MAX, (uint32_t *)col[0],
                                         (float(*)[4])col[1], (float(*)[4])col[2],
                                         (float(*)[4])col[3], col[4], &n);
  if (st == WF_OK && !buf)
    st = wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "no memory for the %u particles this rank owns",
                   room);
  wf_ckpt_writer *ck = NULL;
  if (st == WF_OK && !file) st = WF_ERR_INVALID; /* (the caller has the message) */
  if (st == WF_OK) st = wf_ckpt_writer_create(&ck);
  piece_head h = {PIECES_FORMAT, (uint64_t)frame, (uint64_t)rank, (uint64_t)size, n,
                  w->n_particles};
  if (st == WF_OK) st = wf_ckpt_writer_add(ck, "piece", &h, sizeof h);
  *crc = 0;
  for (int k = 0; k < 5 && st == WF_OK; k++) {
    size_t bytes = (size_t)n * row_width[k];
    st = wf_ckpt_writer_add(ck, row_sections[k], col[k], bytes);
    *crc = wf_crc32(*crc, col[k], bytes);
  }
  if (st == WF_OK) st = wf_ckpt_writer_save(ck, file);
  wf_ckpt_writer_destroy(ck);
  free(buf);
  *rows = n;
  return st;
}

wf_status wfw_pieces_write(wf_world *w, const char *path, int64_t frame, wf_status st, void **table,
                           size_t *table_bytes) {
  int size = 1, rank = 0;
  wfpt_comm_size(w->mpi_comm, &size, &rank);
  *table = NULL, *table_bytes = 0;
  /* what came before (the clocks, the cloths) agreed first: every rank reads its rows or none */
  if ((st = agree(w, st, path, "reading the state for a checkpoint")) != WF_OK) return st;
  char file[4200];
  piece_report mine = {0, 0, 0, 0};
  st = wfw_piece_path(file, sizeof file, path, rank);
  if (st == WF_OK && strlen(base_name(file)) >= PIECE_FILE)
    st = wf__error(WF_ERR_INVALID, NULL, "the file name '%s' is longer than %d characters",
                   base_name(file), PIECE_FILE - 1);
  /* (a rank whose path failed still enters the read: it is a collective) */
  wf_status rd =
      write_piece(w, st == WF_OK ? file : NULL, frame, rank, size, &mine.rows, &mine.crc);
  if (st == WF_OK) st = rd;
  char msg[1024];
  if (st != WF_OK) {
    snprintf(msg, sizeof msg, "%s", wf_last_error());
    mine.failed = 1;
  }
  void *all = NULL;
  size_t total = 0;
  wf_status st2 =
      wfpt_comm_allgather(w->mpi_comm, "wf_world_save", &mine, sizeof mine, &all, &total);
  if (st != WF_OK) { /* (a failed save leaves nothing of its own: weft/io.h) */
    free(all);
    return wf__error(st, NULL, "checkpoint '%s': MPI rank %d of %d: piece '%s': %s", path, rank,
                     size, file, msg);
  }
  if (st2 != WF_OK || total != (size_t)size * sizeof mine) {
    free(all);
    return st2 != WF_OK ? st2
                        : wf__error(WF_ERR_INVALID, NULL, "checkpoint '%s': gathered %zu bytes",
                                    path, total);
  }
  const piece_report *rep = all;
  uint64_t sum = 0;
  for (int r = 0; r < size; r++) {
    if (rep[r].failed) {
      char other[4200];
      wfw_piece_path(other, sizeof other, path, r);
      free(all);
      remove(file); /* no new checkpoint: this rank's piece goes too */
      return wf__error(WF_ERR_IO, NULL,
                       "checkpoint '%s': MPI rank %d failed to write its piece '%s' (see its "
                       "message); no manifest was written",
                       path, r, other);
    }
    sum += rep[r].rows;
  }
  if (sum != w->n_particles) {
    free(all);
    remove(file);
    return wf__error(WF_ERR_INVALID, NULL,
                     "checkpoint '%s': the ranks' pieces hold %llu particles, the world %u: no "
                     "manifest was written",
                     path, (unsigned long long)sum, w->n_particles);
  }
  /* the manifest's "pieces" section, made on every rank alike */
  size_t bytes = sizeof(pieces_head) + (size_t)size * sizeof(piece_entry);
  unsigned char *t = calloc(1, bytes);
  if (!t) {
    free(all);
    return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "checkpoint '%s': out of host memory", path);
  }
  pieces_head ph = {PIECES_FORMAT, (uint64_t)size, w->n_particles, (uint64_t)frame};
  memcpy(t, &ph, sizeof ph);
  for (int r = 0; r < size; r++) {
    piece_entry e;
    char other[4200];
    memset(&e, 0, sizeof e);
    wfw_piece_path(other, sizeof other, path, r);
    const char *name = base_name(other); /* (its length checked on its rank) */
    memcpy(e.file, name, strnlen(name, sizeof e.file - 1));
    e.rows = rep[r].rows, e.crc = rep[r].crc;
    memcpy(t + sizeof ph + (size_t)r * sizeof e, &e, sizeof e);
  }
  free(all);
  *table = t, *table_bytes = bytes;
  return WF_OK;
}

wf_status wfw_ckpt_finish(wf_world *w, const char *path, wf_status st, bool wrote_piece) {
  int size = 1, rank = 0;
  wfpt_comm_size(w->mpi_comm, &size, &rank);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", st != WF_OK ? wf_last_error() : "");
  int64_t result = st; /* rank 0's: the manifest's */
  wf_status st2 = wfpt_comm_bcast(w->mpi_comm, "wf_world_save", &result, sizeof result, 0);
  if (wrote_piece && (result != WF_OK || st2 != WF_OK)) { /* no manifest: no piece stays */
    char file[4200];
    if (wfw_piece_path(file, sizeof file, path, rank) == WF_OK) remove(file);
  }
  if (st != WF_OK) return wf__error(st, NULL, "%s", msg);
  if (st2 != WF_OK) return st2;
  if (result != WF_OK)
    return wf__error((wf_status)result, NULL,
                     "checkpoint '%s': MPI rank 0 could not write it (see its message)", path);
  return WF_OK;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* Piece p's file beside the manifest: the manifest's directory and the entry's name. */
static wf_status piece_file(char *buf, size_t n, const char *manifest, const char *name) {
  const char *slash = strrchr(manifest, '/');
  int k = slash ? snprintf(buf, n, "%.*s/%s", (int)(slash - manifest), manifest, name)
                : snprintf(buf, n, "%s", name);
  if (k < 0 || (size_t)k >= n)
    return wf__error(WF_ERR_INVALID, NULL, "checkpoint '%s': the path of piece '%s' is too long",
                     manifest, name);
  return WF_OK;
}

/* One piece read and checked against its manifest entry, its rows placed by id. */
static wf_status read_piece(const wf_world *w, const char *path, int p, uint64_t count,
                            uint64_t frame, const piece_entry *e, unsigned char *seen,
                            float (*pos)[4], float (*vel)[4], unsigned char *omega,
                            unsigned char *hist) {
  char file[4200];
  wf_status st = piece_file(file, sizeof file, path, e->file);
  if (st != WF_OK) return st;
  wf_ckpt_reader *r = NULL;
  if ((st = wf_ckpt_open_file(file, &r)) != WF_OK) {
    char inner[1024];
    snprintf(inner, sizeof inner, "%s", wf_last_error());
    return wf__error(st, NULL, "checkpoint '%s': piece %d of %llu: %s", path, p,
                     (unsigned long long)count, inner);
  }
  const void *d[6] = {NULL};
  size_t bytes = 0;
  piece_head h;
  memset(&h, 0, sizeof h);
  st = wf_ckpt_section(r, "piece", &d[5], &bytes);
  if (st == WF_OK && bytes != sizeof h)
    st = wf__error(WF_ERR_PARSE, NULL, "section 'piece' holds %zu bytes, not %zu", bytes, sizeof h);
  if (st == WF_OK) memcpy(&h, d[5], sizeof h);
  if (st == WF_OK && (h.format != PIECES_FORMAT || h.frame != frame || h.index != (uint64_t)p ||
                      h.count != count || h.rows != e->rows || h.particles != w->n_particles))
    st = wf__error(WF_ERR_PARSE, NULL,
                   "it is not piece %d of this checkpoint (it says: format %llu, frame %llu, "
                   "piece %llu of %llu, %llu rows of %llu particles; the manifest: frame %llu, "
                   "%llu pieces, %llu rows, %u particles)",
                   p, (unsigned long long)h.format, (unsigned long long)h.frame,
                   (unsigned long long)h.index, (unsigned long long)h.count,
                   (unsigned long long)h.rows, (unsigned long long)h.particles,
                   (unsigned long long)frame, (unsigned long long)count,
                   (unsigned long long)e->rows, w->n_particles);
  uint32_t crc = 0;
  for (int k = 0; k < 5 && st == WF_OK; k++) {
    st = wf_ckpt_section(r, row_sections[k], &d[k], &bytes);
    if (st == WF_OK && bytes != e->rows * row_width[k])
      st = wf__error(WF_ERR_PARSE, NULL, "section '%s' holds %zu bytes, %llu rows need %llu",
                     row_sections[k], bytes, (unsigned long long)e->rows,
                     (unsigned long long)(e->rows * row_width[k]));
    if (st == WF_OK) crc = wf_crc32(crc, d[k], bytes);
  }
  if (st == WF_OK && crc != e->crc)
    st = wf__error(WF_ERR_PARSE, NULL,
                   "its rows are not those the manifest was written with (CRC-32 %08x, the "
                   "manifest's %08x): a piece of another checkpoint",
                   crc, e->crc);
  for (uint64_t i = 0; i < e->rows && st == WF_OK; i++) {
    uint32_t id;
    memcpy(&id, (const unsigned char *)d[0] + i * 4, 4);
    if (id >= w->n_particles)
      st = wf__error(WF_ERR_PARSE, NULL, "row %llu holds particle id %u, there are %u",
                     (unsigned long long)i, id, w->n_particles);
    else if (seen[id / 8] & (1u << (id % 8)))
      st = wf__error(WF_ERR_PARSE, NULL, "particle id %u (row %llu) is in an earlier piece too", id,
                     (unsigned long long)i);
    if (st != WF_OK) break;
    seen[id / 8] |= (unsigned char)(1u << (id % 8));
    memcpy(pos[id], (const unsigned char *)d[1] + i * 16, 16);
    memcpy(vel[id], (const unsigned char *)d[2] + i * 16, 16);
    memcpy(omega + (size_t)id * 16, (const unsigned char *)d[3] + i * 16, 16);
    memcpy(hist + (size_t)id * 256, (const unsigned char *)d[4] + i * 256, 256);
  }
  wf_ckpt_close(r);
  if (st != WF_OK && st != WF_ERR_IO && st != WF_ERR_OUT_OF_MEMORY) {
    char inner[1024];
    snprintf(inner, sizeof inner, "%s", wf_last_error());
    return wf__error(WF_ERR_PARSE, NULL, "checkpoint '%s': piece %d of %llu '%s': %s", path, p,
                     (unsigned long long)count, file, inner);
  }
  return st;
}

wf_status wfw_pieces_read(wf_world *w, const wf_ckpt_reader *r, const char *path, uint64_t frame,
                          float (*pos)[4], float (*vel)[4], void *granular, size_t gb) {
  const void *d = NULL;
  size_t bytes = 0;
  wf_status st = wf_ckpt_section(r, "pieces", &d, &bytes);
  if (st != WF_OK) return st;
  pieces_head h;
  if (bytes < sizeof h)
    return wf__error(WF_ERR_PARSE, NULL, "%s: section 'pieces' holds %zu bytes, too few", path,
                     bytes);
  memcpy(&h, d, sizeof h);
  if (h.format != PIECES_FORMAT)
    return wf__error(WF_ERR_PARSE, NULL, "%s: pieces format %llu, this weft reads %d", path,
                     (unsigned long long)h.format, PIECES_FORMAT);
  if (h.pieces < 1 || h.pieces > MAX_PIECES ||
      bytes != sizeof h + (size_t)h.pieces * sizeof(piece_entry))
    return wf__error(WF_ERR_PARSE, NULL,
                     "%s: section 'pieces' is corrupt: %llu pieces in %zu bytes", path,
                     (unsigned long long)h.pieces, bytes);
  if (h.particles != w->n_particles || h.frame != frame)
    return wf__error(WF_ERR_PARSE, NULL,
                     "%s: section 'pieces' is of %llu particles at frame %llu, the checkpoint of "
                     "%u at frame %llu",
                     path, (unsigned long long)h.particles, (unsigned long long)h.frame,
                     w->n_particles, (unsigned long long)frame);
  size_t n = w->n_particles;
  if (gb < n * (16 + 256))
    return wf__error(WF_ERR_INVALID, NULL, "%s: a granular state of %zu bytes for %zu particles",
                     path, gb, n);
  unsigned char *omega = (unsigned char *)granular + gb - n * (16 + 256);
  unsigned char *hist = (unsigned char *)granular + gb - n * 256;
  const piece_entry *e = (const piece_entry *)((const unsigned char *)d + sizeof h);
  /* the entries first: names within this directory, rows that sum to the particles */
  uint64_t sum = 0;
  for (uint64_t p = 0; p < h.pieces; p++) {
    piece_entry x;
    memcpy(&x, &e[p], sizeof x);
    size_t len = strnlen(x.file, sizeof x.file);
    if (len == 0 || len == sizeof x.file || strchr(x.file, '/') || x.reserved != 0 || x.rows > n)
      return wf__error(WF_ERR_PARSE, NULL,
                       "%s: section 'pieces' is corrupt: entry %llu has no valid file name or "
                       "row count",
                       path, (unsigned long long)p);
    sum += x.rows;
  }
  if (sum != n)
    return wf__error(WF_ERR_PARSE, NULL,
                     "%s: the pieces hold %llu rows together, the checkpoint %zu particles", path,
                     (unsigned long long)sum, n);
  unsigned char *seen = calloc(n / 8 + 1, 1);
  if (!seen) return wf__error(WF_ERR_OUT_OF_MEMORY, NULL, "%s: out of host memory", path);
  for (uint64_t p = 0; p < h.pieces && st == WF_OK; p++) {
    piece_entry x;
    memcpy(&x, &e[p], sizeof x);
    st = read_piece(w, path, (int)p, h.pieces, frame, &x, seen, pos, vel, omega, hist);
  }
  free(seen); /* (rows summing to n, none twice: every id is there once) */
  return st;
}

wf_status wfw_ckpt_agree_load(wf_world *w, wf_status st, const char *path) {
  if (!w->mpi_comm) return st;
  return agree(w, st, path, "to read it");
}
