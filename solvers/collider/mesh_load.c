/* Reading a mesh collider from a file (wf_collider_mesh_load) through assimp's C API: OBJ, STL,
 * PLY, glTF and the rest of what assimp reads. Host only. Built when CMake found assimp
 * (WEFT_HAVE_ASSIMP); without it, loading says how to get it and meshes from memory still work.
 *
 * Every mesh of the file, with its node's transform applied (glTF scenes place meshes by
 * transforms), triangulated; points and lines are ignored. Identical vertices are joined so that
 * edges are shared and a closed surface is seen as closed (STL stores each triangle's own
 * vertices). Degenerate triangles are left for the builder to count (mesh.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/error.h"
#include "mesh_internal.h"

#ifdef WEFT_HAVE_ASSIMP
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#endif

static const char fn[] = "wf_collider_mesh_load";

bool wf_collider_mesh_can_load(void) {
#ifdef WEFT_HAVE_ASSIMP
  return true;
#else
  return false;
#endif
}

#ifdef WEFT_HAVE_ASSIMP
/* The scene's triangles into (v, nv) and (t, nt), scaled. */
static wf_status gather(const char *path, const struct aiScene *sc, float scale, float (**v)[3],
                        uint32_t *nv, uint32_t (**t)[3], uint32_t *nt) {
  size_t verts = 0, tris = 0;
  for (unsigned i = 0; i < sc->mNumMeshes; i++) {
    const struct aiMesh *m = sc->mMeshes[i];
    verts += m->mNumVertices;
    for (unsigned f = 0; f < m->mNumFaces; f++)
      tris += m->mFaces[f].mNumIndices == 3;
  }
  if (tris == 0)
    return wf__error(WF_ERR_INVALID, fn, "mesh file '%s': no triangles (%zu vertices)", path,
                     verts);
  if (verts > 0xffffffffu || tris > 0x3fffffffu)
    return wf__error(WF_ERR_INVALID, fn, "mesh file '%s': too large (%zu vertices, %zu triangles)",
                     path, verts, tris);
  *v = malloc(verts * sizeof **v);
  *t = malloc(tris * sizeof **t);
  if (!*v || !*t) return wf__error(WF_ERR_OUT_OF_MEMORY, fn, "mesh file '%s': out of memory", path);
  uint32_t base = 0, k = 0;
  for (unsigned i = 0; i < sc->mNumMeshes; i++) {
    const struct aiMesh *m = sc->mMeshes[i];
    for (unsigned j = 0; j < m->mNumVertices; j++) {
      (*v)[base + j][0] = m->mVertices[j].x * scale;
      (*v)[base + j][1] = m->mVertices[j].y * scale;
      (*v)[base + j][2] = m->mVertices[j].z * scale;
    }
    for (unsigned f = 0; f < m->mNumFaces; f++) {
      const struct aiFace *face = &m->mFaces[f];
      if (face->mNumIndices != 3) continue;
      for (int c = 0; c < 3; c++)
        (*t)[k][c] = base + face->mIndices[c];
      k++;
    }
    base += m->mNumVertices;
  }
  *nv = base, *nt = k;
  return WF_OK;
}
#endif

wf_status wf_collider_mesh_load(const char *path, float scale, wf_collider_mesh **out) {
  if (!path || !out) return wf__error(WF_ERR_INVALID, fn, "path or out is NULL");
  *out = NULL;
  if (!(scale > 0.0f) || !isfinite(scale))
    return wf__error(WF_ERR_INVALID, fn, "mesh file '%s': scale %g must be > 0", path,
                     (double)scale);
  FILE *f = fopen(path, "rb");
  if (!f) return wf__error(WF_ERR_IO, fn, "cannot open mesh file '%s': %s", path, strerror(errno));
  fclose(f);
#ifndef WEFT_HAVE_ASSIMP
  return wf__error(WF_ERR_UNSUPPORTED, fn,
                   "cannot read mesh file '%s': weft was built without assimp; install "
                   "libassimp-dev (scripts/deps.sh) and configure again, or build the mesh with "
                   "wf_collider_mesh_create",
                   path);
#else
  const struct aiScene *sc =
      aiImportFile(path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices |
                             aiProcess_PreTransformVertices);
  if (!sc)
    return wf__error(WF_ERR_PARSE, fn, "cannot read mesh file '%s': %s", path, aiGetErrorString());
  float(*v)[3] = NULL;
  uint32_t(*t)[3] = NULL;
  uint32_t nv = 0, nt = 0;
  wf_status st = gather(path, sc, scale, &v, &nv, &t, &nt);
  aiReleaseImport(sc);
  if (st == WF_OK)
    st = wfm_build(fn, path, (const float(*)[3])v, nv, (const uint32_t(*)[3])t, nt, out);
  free(v);
  free(t);
  return st;
#endif
}
