/* Emitters' particles made on the host (engine/emit.c): the shapes, packings, radius
 * distributions and files a scene's `particles[i]` can ask for, beside the solver's own cubic
 * lattice of one radius in a box or a sphere (wf_particles_emit), which the world keeps using for
 * those. The scene reader calls the file reader to validate and count a file's rows; the world
 * calls wf_scene_emitter_points (weft/scene.h) for the rest. Not a public header.
 */
#ifndef WEFT_ENGINE_EMIT_H
#define WEFT_ENGINE_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/scene.h"

/* A particle file's rows: x y z, then the radius and velocity columns where it has them. */
typedef struct wfe_rows {
  uint64_t count;
  double (*xyz)[3]; /* as the file gives them (a CSV's decimals, a PLY's float or double) */
  float *radius;    /* NULL: no radius column */
  float (*vel)[3];  /* NULL: no velocity columns */
} wfe_rows;

/* Reads a PLY (binary little-endian or ASCII; element vertex with float or double x y z and
 * optional radius, vx vy vz) or CSV file (a header naming the columns x, y, z and optionally
 * radius, vx, vy, vz, id; '#' lines and blank lines skipped); the kind follows the extension
 * (.ply, .csv). With rows NULL only validates and counts (*count). Returns 0, or fills msg with
 * "path:line: what" (the line of the header or row at fault; binary PLY data: the vertex index)
 * and returns -1. */
int wfe_file_read(const char *path, wfe_rows *rows, uint64_t *count, char *msg, size_t size);
void wfe_rows_free(wfe_rows *rows);

/* wf_scene_emitter_points with the positions relative to a point of the world (the particles'
 * origin, docs/precision.md) instead of the world's origin: each is the emitter's centre minus
 * `origin` plus the particle's offset from the centre (a file: its row minus `origin`), in
 * double, rounded to float once, so a scene moved by whole metres, with its origin, gives the
 * same bits. origin NULL: the origin the particle solver would pick for these particles as its
 * first (its centre, a file: the centre of its rows' box, rounded to whole metres), written to
 * picked. */
wf_status wfe_points_at(const wf_scene_emitter *e, uint32_t first_id, const double *origin,
                        double picked[3], float (*pos)[4], float (*vel)[4], float *birth,
                        uint64_t count);

/* True when the solver's lattice (wf_particles_emit) makes this emitter's particles: a box or a
 * sphere, lattice packing, one radius. */
bool wfe_solver_lattice(const wf_scene_emitter *e);

/* True for an inlet that pours (a disc, a rectangle, an annulus). */
bool wfe_pours(const wf_scene_emitter *e);
/* The area of an inlet that the centres of particles of radius rmax can cross (the inlet shrunk
 * by rmax at every edge), m². */
double wfe_inlet_area(const wf_scene_emitter *e, double rmax);

/* An inlet's pour: its particle count, and particle k's birth time (s). */
uint64_t wfe_pour_count(const wf_scene_emitter *e);
double wfe_pour_birth(const wf_scene_emitter *e, uint64_t k);

/* Volume of the emitter's region, m³ (0 for a file). */
double wfe_region_volume(const wf_scene_emitter *e);

#endif
