/* The per-point values the pictures can be coloured by besides speed (cli/render_frames.c):
 * strain of cloth vertices and contact force of particles, computed on the host from the
 * positions of the frame drawn (the solvers do not export them).
 *
 * - strain of a cloth vertex: the largest |l - L| / L over the triangle edges that meet at it,
 *   l the edge's length now and L at wf_cli_values_create (the scene's initial state: a grid
 *   or mesh cloth starts at rest length). Dimensionless (0.05: 5% stretched or compressed).
 * - contact force of a particle: the sum of the magnitudes of the normal spring forces of its
 *   contacts, with the other particles (every emitter's) and with the scene's plane colliders,
 *   from the overlaps δ: linear k δ (k the mean of the two materials' stiffness, the particle's
 *   own against a plane) or, with simulation.contact_model "hertz", 4/3 E* sqrt(R*) δ^(3/2);
 *   the dashpots and the tangential springs are left out (they depend on the contact history).
 *   Newtons. Neighbours are found through a hashed grid of cells two largest radii wide: O(n).
 */
#ifndef WEFT_CLI_RENDER_VALUES_H
#define WEFT_CLI_RENDER_VALUES_H

#include <stdint.h>

#include "weft/scene.h"
#include "weft/world.h"

typedef struct wf_cli_values wf_cli_values;

/* pos[i]: object i's current positions (world objects' order); the cloths' give rest lengths. */
wf_status wf_cli_values_create(const wf_scene *sc, wf_world *w, const float (*const *pos)[4],
                               wf_cli_values **out);
void wf_cli_values_destroy(wf_cli_values *v);
/* Strain of cloth object i's vertices into out (point_count values). */
void wf_cli_values_strain(const wf_cli_values *v, int object, const float (*pos)[4], float *out);
/* Contact force of every particle object's particles: out[i] for particle object i (point_count
 * values; entries of cloth objects are not touched). planes: count x (normal xyz, offset) with
 * unit normals. Returns WF_ERR_OUT_OF_MEMORY (out untouched) when the grid cannot be made. */
wf_status wf_cli_values_force(wf_cli_values *v, const float (*const *pos)[4], const float *planes,
                              int plane_count, float *const *out);
/* A fixed top of the force ramp: 10 times the weight of the heaviest particle (a column of ten
 * grains resting on one), N; 1 when the scene has no particles. */
double wf_cli_values_force_scale(const wf_cli_values *v);

#endif
