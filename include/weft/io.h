/* weft I/O: checkpoints and the files `weft run` writes (PLY, VTK .vtp/.pvd, statistics CSV).
 *
 * Guide
 *  - A checkpoint is a versioned binary container of named, opaque sections ("meta",
 *    "particles/0/pos"). Build one with wf_ckpt_writer_create / _add / _save, read it back with
 *    wf_ckpt_open_file (or _memory) and wf_ckpt_section. Every section carries a CRC-32 and the
 *    header and section table carry one more, so a reader either gets exactly what was written or
 *    a WF_ERR_PARSE that says what is wrong (not a checkpoint, format version, truncated, which
 *    section is corrupt). The reader never reads outside the bytes it was given.
 *  - Every file is written whole to "<path>.tmp.<pid>" in the same directory, flushed, fsync'ed,
 *    closed and only then renamed over <path>. A failure (no such directory, disk full, …) returns
 *    WF_ERR_IO naming the path and the OS error, removes the temporary file and leaves whatever
 *    was under <path> before untouched. wf_atomic_file gives the same to other writers.
 *  - The statistics CSV is the exception that appends: its header is written atomically when it
 *    is opened, then each row is appended and flushed, and every failure is reported.
 *
 * Checkpoint layout (format 1; all integers little-endian):
 *
 *   offset  size  field
 *        0     8  magic "WEFTCKPT"
 *        8     4  format version (1)
 *       12     4  flags (0)
 *       16     4  section count N
 *       20     4  reserved (0)
 *       24     8  file size in bytes
 *       32     4  CRC-32 of bytes [0, 32) followed by the section table
 *       36     4  reserved (0)
 *       40  56*N  section table: name[32] (NUL-terminated, 1..31 printable ASCII characters, the
 *                 rest zero), offset u64, size u64, CRC-32 of the data u32, reserved u32 (0)
 *      ...        section data, each starting at a multiple of 8, zero padding between them
 *
 * Sections are in the order they were added, do not overlap and lie after the table.
 */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/export.h"
#include "weft/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The checkpoint format this weft writes and reads. */
#define WF_CKPT_FORMAT 1
/** Longest section name, in characters. */
#define WF_CKPT_NAME_MAX 31

/** CRC-32 (IEEE 802.3, reflected, as zlib's crc32): pass 0 to start, the previous result to
 *  continue over more bytes. */
WF_API uint32_t wf_crc32(uint32_t crc, const void *data, size_t bytes);

/* ---- checkpoint writer ------------------------------------------------------------------- */

/** A checkpoint under construction: copies of its sections, held until saved. */
typedef struct wf_ckpt_writer wf_ckpt_writer;

/** Creates an empty checkpoint under construction. */
WF_API wf_status wf_ckpt_writer_create(wf_ckpt_writer **out);
/** Frees the writer and the section copies it holds. NULL is ignored. */
WF_API void wf_ckpt_writer_destroy(wf_ckpt_writer *w);
/** Adds a section: `bytes` bytes at `data` (NULL allowed when bytes is 0) are copied. The name
 *  is 1..31 printable ASCII characters without spaces and must not be in the checkpoint yet;
 *  otherwise WF_ERR_INVALID. */
WF_API wf_status wf_ckpt_writer_add(wf_ckpt_writer *w, const char *name, const void *data,
                                    size_t bytes);
/** Size in bytes of the checkpoint as it stands (what _save writes). */
WF_API size_t wf_ckpt_writer_size(const wf_ckpt_writer *w);
/** Writes the checkpoint into dst, which has room for `capacity` bytes; WF_ERR_INVALID when that
 *  is less than wf_ckpt_writer_size(w). */
WF_API wf_status wf_ckpt_writer_save_memory(const wf_ckpt_writer *w, void *dst, size_t capacity);
/** Writes the checkpoint to `path` through a temporary file and rename (see the guide above).
 *  WF_ERR_IO with the path and the OS error on failure; then no file is left under `path`
 *  unless one was there before, which stays as it was. */
WF_API wf_status wf_ckpt_writer_save(const wf_ckpt_writer *w, const char *path);

/* ---- checkpoint reader ------------------------------------------------------------------- */

/** An open, fully checked checkpoint whose sections point into its bytes. */
typedef struct wf_ckpt_reader wf_ckpt_reader;

/** Opens a checkpoint held in memory. The bytes are checked in full (magic, version, sizes,
 *  table, every checksum) and must stay valid and unchanged until wf_ckpt_close: sections point
 *  into them. WF_ERR_PARSE with the reason when they are not a valid checkpoint. */
WF_API wf_status wf_ckpt_open_memory(const void *data, size_t bytes, wf_ckpt_reader **out);
/** Reads the file at `path` into memory and opens it as wf_ckpt_open_memory does. WF_ERR_IO when
 *  it cannot be read, WF_ERR_PARSE (with the path) when it is not a valid checkpoint. Sections of
 *  a file are 8-byte aligned in memory. */
WF_API wf_status wf_ckpt_open_file(const char *path, wf_ckpt_reader **out);
/** Frees the reader. NULL is ignored. */
WF_API void wf_ckpt_close(wf_ckpt_reader *r);
/** Number of sections. */
WF_API size_t wf_ckpt_section_count(const wf_ckpt_reader *r);
/** Section `index` (in file order): its name, data and size. Any out-pointer may be NULL.
 *  WF_ERR_INVALID when index >= wf_ckpt_section_count(r). */
WF_API wf_status wf_ckpt_section_at(const wf_ckpt_reader *r, size_t index, const char **name,
                                    const void **data, size_t *bytes);
/** Index of the section called `name`, or -1 (no error is set: use it to test for presence). */
WF_API long wf_ckpt_find(const wf_ckpt_reader *r, const char *name);
/** The section called `name`. WF_ERR_INVALID naming it and listing the sections there are when
 *  the checkpoint has none of that name. */
WF_API wf_status wf_ckpt_section(const wf_ckpt_reader *r, const char *name, const void **data,
                                 size_t *bytes);

/* ---- files written whole ----------------------------------------------------------------- */

/** A file being written to a temporary name, renamed over its path on commit. */
typedef struct wf_atomic_file wf_atomic_file;

/** Starts writing `path`: creates "<path>.tmp.<pid>" next to it. WF_ERR_IO with the path and the
 *  OS error when it cannot be created (no such directory, permission, a file where a directory
 *  should be). One process must not write the same path from two threads at once. */
WF_API wf_status wf_atomic_file_open(const char *path, wf_atomic_file **out);
/** Appends bytes. Errors are sticky: after the first failure every call returns it, and
 *  wf_atomic_file_commit reports it. */
WF_API wf_status wf_atomic_file_write(wf_atomic_file *f, const void *data, size_t bytes);
/** Appends formatted text, as printf. */
WF_API wf_status wf_atomic_file_printf(wf_atomic_file *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** Flushes, fsyncs and closes the temporary file and renames it to the final path, then frees f.
 *  On any failure (including an earlier write's) the temporary file is removed, the final path is
 *  left as it was, and WF_ERR_IO says which step failed, on which path, and the OS error. */
WF_API wf_status wf_atomic_file_commit(wf_atomic_file *f);
/** Gives up: closes and removes the temporary file and frees f. NULL is ignored. */
WF_API void wf_atomic_file_abort(wf_atomic_file *f);

/* ---- PLY ----------------------------------------------------------------------------------- */

/** A point cloud for wf_ply_write_points. Optional arrays are NULL when absent. */
typedef struct wf_ply_points {
  size_t count;        /* points */
  const float *pos;    /* 3*count: x y z */
  const float *radius; /* count, or NULL: no radius property */
  const float *vel;    /* 3*count, or NULL: no vx vy vz properties */
  const uint32_t *id;  /* count, or NULL: no id property */
  const float *omega;  /* 3*count, or NULL: no wx wy wz properties (angular velocity, rad/s) */
} wf_ply_points;

/** Writes a binary little-endian PLY point cloud: element vertex with float x y z, then float
 *  radius, float vx vy vz, float wx wy wz and uint id when given, in that order. */
WF_API wf_status wf_ply_write_points(const char *path, const wf_ply_points *p);

/** A triangle mesh for wf_ply_write_mesh. */
typedef struct wf_ply_mesh {
  size_t vertex_count; /* vertices */
  const float *pos;    /* 3*vertex_count */
  const float *normal; /* 3*vertex_count, or NULL: no nx ny nz properties */
  size_t tri_count;    /* triangles */
  const uint32_t *tri; /* 3*tri_count vertex indices, each < vertex_count */
  const float *vel;    /* 3*vertex_count, or NULL: no vx vy vz properties */
} wf_ply_mesh;

/** Writes a binary little-endian PLY mesh: element vertex (float x y z [nx ny nz] [vx vy vz]) and
 *  element face (property list uchar int vertex_indices). WF_ERR_INVALID naming the triangle when
 * an index is out of range. */
WF_API wf_status wf_ply_write_mesh(const char *path, const wf_ply_mesh *m);

/* ---- VTK XML PolyData (.vtp) and collections (.pvd) ------------------------------------------ */

/** Element type of a point-data array. */
typedef enum wf_vtk_type { WF_VTK_FLOAT32 = 0, WF_VTK_UINT32 = 1 } wf_vtk_type;

/** A point-data array: `components` values per point, point-major. */
typedef struct wf_vtk_array {
  const char *name; /* written as the array's Name; XML special characters are escaped */
  wf_vtk_type type;
  int components;   /* 1..9 */
  const void *data; /* float or uint32_t, components * point_count values */
} wf_vtk_array;

/** A PolyData piece for wf_vtp_write. With tri_count == 0 every point becomes a vertex cell
 *  (Verts), so ParaView draws the points; otherwise the triangles are written as Polys. */
typedef struct wf_vtp_desc {
  size_t point_count;         /* points */
  const float *points;        /* 3*point_count */
  size_t tri_count;           /* triangles; 0: the points are written as vertex cells */
  const uint32_t *tri;        /* 3*tri_count vertex indices, each < point_count */
  const wf_vtk_array *arrays; /* point-data arrays, array_count of them (may be NULL when 0) */
  int array_count;
  bool binary; /* false: ASCII (floats with 9 significant digits, exact); true: inline base64
                  binary, each array prefixed by its UInt64 byte count (VTK format 1.0) */
} wf_vtp_desc;

/** Writes a VTK XML PolyData file that ParaView opens. */
WF_API wf_status wf_vtp_write(const char *path, const wf_vtp_desc *d);

/** A ParaView collection (.pvd) being written, rewritten whole at every entry. */
typedef struct wf_pvd wf_pvd;

/** Starts a ParaView collection (.pvd) at `path` and writes it with no entries. */
WF_API wf_status wf_pvd_create(const char *path, wf_pvd **out);
/** Adds the entry (time, part, file) and rewrites the whole collection atomically. `file` is
 *  written as given (normally relative to the .pvd's directory). On failure the entry is not
 *  kept and the previous collection file stays. */
WF_API wf_status wf_pvd_add(wf_pvd *p, double time, int part, const char *file);

/** One entry of a collection: a data set at a time. Entries of one time with different parts
 *  are read by ParaView as the blocks of one multiblock data set, each named `name`. */
typedef struct wf_pvd_entry {
  double time;      /* the timestep attribute, s */
  int part;         /* the part attribute */
  const char *name; /* the name attribute (the block's name), or NULL: none */
  const char *file; /* as wf_pvd_add's */
} wf_pvd_entry;

/** Adds n entries at once and rewrites the collection once; on failure none is kept and the
 *  previous collection file stays. */
WF_API wf_status wf_pvd_add_entries(wf_pvd *p, const wf_pvd_entry *entries, size_t n);
/** Number of entries. */
WF_API size_t wf_pvd_count(const wf_pvd *p);
/** Frees the collection (the file stays). NULL is ignored. */
WF_API void wf_pvd_destroy(wf_pvd *p);

/* ---- statistics CSV ---------------------------------------------------------------------- */

/** A statistics CSV open for appending rows. */
typedef struct wf_csv wf_csv;

/** Creates `path` holding the header line (column names, quoted where they contain a comma,
 *  quote or line break) and keeps it open for rows. The header is written atomically. */
WF_API wf_status wf_csv_open(const char *path, const char *const *columns, int column_count,
                             wf_csv **out);
/** Appends one row of column_count values, printed with 17 significant digits (exact round
 *  trip), and flushes it. WF_ERR_IO with the path, the row number and the OS error on failure. */
WF_API wf_status wf_csv_append(wf_csv *c, const double *values);
/** Flushes, fsyncs and closes the file and frees c; reports a failure of any of these. */
WF_API wf_status wf_csv_close(wf_csv *c);

#ifdef __cplusplus
}
#endif
#endif
