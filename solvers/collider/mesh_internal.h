/* The host-side triangle mesh of a mesh collider (wf_collider_mesh, weft/collider.h): the tree
 * and the triangles in the layout the kernels read (mesh_query.h), built by mesh.c from vertices
 * and triangles (from memory or from mesh_load.c). Internal to libweft. */
#ifndef WEFT_COLLIDER_MESH_INTERNAL_H
#define WEFT_COLLIDER_MESH_INTERNAL_H

#include "solvers/collider/mesh_query.h"
#include "weft/collider.h"

struct wf_collider_mesh {
  char name[256]; /* the file, or the name given: for messages */
  wfm_node *nodes;
  wfm_tri *tris;
  wf_collider_mesh_info info;
};

/* Builds the mesh (see wf_collider_mesh_create); `fn` names the public function for messages. */
wf_status wfm_build(const char *fn, const char *name, const float (*vertices)[3], uint32_t nv,
                    const uint32_t (*triangles)[3], uint32_t nt, wf_collider_mesh **out);

#endif
