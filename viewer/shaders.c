/* Shader loading. The GLSL sources live in assets/shaders (one .glsl file each) and are read at run
 * time from a directory (the caller's, $WEFT_SHADER_DIR, or one beside the executable), so they can
 * be edited without rebuilding; the build also embeds copies (shaders_embedded.c), used when no
 * directory holds them, so an installed `weft` needs no asset files. A directory is used only if it
 * holds every file, so one program never mixes two versions. The files carry no #version line: it
 * is prepended here, and lit fragment shaders get lighting.glsl in front, the sphere-bound shaders
 * sphere_bounds.glsl (with #line so compiler messages point at the right file and line). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viewer_internal.h"

static const char *const k_files[] = {
    "lighting.glsl",   "sphere.vert.glsl",  "sphere.frag.glsl", "sphere_point.vert.glsl",
    "mesh.vert.glsl",  "mesh.frag.glsl",    "grid.vert.glsl",   "grid.frag.glsl",
    "text.vert.glsl",  "text.frag.glsl",    "splat.comp.glsl",  "splat.vert.glsl",
    "splat.frag.glsl", "sphere_bounds.glsl"};
enum { FILE_COUNT = sizeof k_files / sizeof k_files[0] };

static const char k_builtin[] = "built-in";

static bool dir_has_all(const char *dir, const char **missing) {
  char path[PATH_MAX];
  for (int i = 0; i < FILE_COUNT; i++) {
    int n = snprintf(path, sizeof path, "%s/%s", dir, k_files[i]);
    if (n < 0 || (size_t)n >= sizeof path || access(path, R_OK) != 0) {
      if (missing) *missing = k_files[i];
      return false;
    }
  }
  return true;
}

wf_status wf__shaders_locate(const char *dir, char *origin, size_t origin_size) {
  const char *missing = NULL;
  if (dir) {
    if (!dir_has_all(dir, &missing))
      return wf__render_error(WF_ERR_IO, __func__,
                              "shader directory '%s' has no readable '%s' (it needs all of "
                              "assets/shaders/*.glsl)",
                              dir, missing);
    snprintf(origin, origin_size, "%s", dir);
    return WF_OK;
  }
  const char *env = getenv("WEFT_SHADER_DIR");
  if (env && *env) {
    if (!dir_has_all(env, &missing))
      return wf__render_error(WF_ERR_IO, __func__,
                              "WEFT_SHADER_DIR='%s' has no readable '%s'; unset it to use the "
                              "built-in shaders",
                              env, missing);
    snprintf(origin, origin_size, "%s", env);
    return WF_OK;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    static const char *const rel[] = {"../share/weft/shaders", "assets/shaders"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
      char cand[PATH_MAX];
      int m = snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
      if (m > 0 && (size_t)m < sizeof cand && dir_has_all(cand, NULL)) {
        snprintf(origin, origin_size, "%s", cand);
        return WF_OK;
      }
    }
  }
  snprintf(origin, origin_size, "%s", k_builtin);
  return WF_OK;
}

/* The text of one file (malloc'd, NUL-terminated) from origin. */
static wf_status read_source(const char *origin, const char *name, char **out) {
  if (strcmp(origin, k_builtin) == 0) {
    for (size_t i = 0; i < wf__embedded_shader_count; i++) {
      if (strcmp(wf__embedded_shaders[i].name, name) != 0) continue;
      char *s = malloc(wf__embedded_shaders[i].size + 1);
      if (!s) return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "shader '%s'", name);
      memcpy(s, wf__embedded_shaders[i].data, wf__embedded_shaders[i].size);
      s[wf__embedded_shaders[i].size] = '\0';
      *out = s;
      return WF_OK;
    }
    return wf__render_error(WF_ERR_IO, __func__, "no built-in shader '%s'", name);
  }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", origin, name);
  FILE *f = fopen(path, "rb");
  if (!f) return wf__render_error(WF_ERR_IO, __func__, "cannot open shader '%s'", path);
  char *s = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (s = malloc((size_t)len + 1)) != NULL &&
      fread(s, 1, (size_t)len, f) == (size_t)len) {
    s[len] = '\0';
    fclose(f);
    *out = s;
    return WF_OK;
  }
  free(s);
  fclose(f);
  return wf__render_error(WF_ERR_IO, __func__, "cannot read shader '%s'", path);
}

/* Compiles file `name`, with file `prefix` (NULL: none) in front of it after the #version line. */
static wf_status compile(GLenum type, const char *origin, const char *name, const char *prefix,
                         GLuint *out) {
  char *body = NULL, *pre = NULL;
  wf_status st = read_source(origin, name, &body);
  if (st == WF_OK && prefix) st = read_source(origin, prefix, &pre);
  if (st != WF_OK) {
    free(body);
    return st;
  }
  /* #line N S: messages say "S:N": 1 is the shader's own file, 2 is the prefix */
  /* conservative depth (GL 4.2, an extension before): the sphere impostors promise to write depths
     no nearer than their quad's, so the depth test may run before their fragment shader */
  const char *parts[5] = {type == GL_COMPUTE_SHADER ? "#version 450 core\n"
                          : type == GL_FRAGMENT_SHADER
                              ? "#version 330 core\n#extension GL_ARB_conservative_depth : enable\n"
                              : "#version 330 core\n"};
  int count = 1;
  if (prefix) {
    parts[count++] = "#line 1 2\n";
    parts[count++] = pre;
  }
  parts[count++] = "\n#line 1 1\n";
  parts[count++] = body;
  GLuint sh = glCreateShader(type);
  glShaderSource(sh, count, parts, NULL);
  glCompileShader(sh);
  free(body);
  free(pre);
  GLint ok = 0;
  glGetShaderiv(sh, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[1200] = "";
    glGetShaderInfoLog(sh, sizeof log, NULL, log);
    glDeleteShader(sh);
    return wf__render_error(WF_ERR_BACKEND, __func__,
                            "%s/%s does not compile (in the log, 1: is this file%s%s): %s", origin,
                            name, prefix ? ", 2: is " : "", prefix ? prefix : "", log);
  }
  *out = sh;
  return WF_OK;
}

/* Links p (its shaders attached) into *out; on failure deletes it and names the files. */
static wf_status link_program(GLuint p, const char *origin, const char *files, GLuint *out) {
  glLinkProgram(p);
  GLint ok = 0;
  glGetProgramiv(p, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[1200] = "";
    glGetProgramInfoLog(p, sizeof log, NULL, log);
    glDeleteProgram(p);
    return wf__render_error(WF_ERR_BACKEND, "wf__program_build", "%s/%s do not link: %s", origin,
                            files, log);
  }
  *out = p;
  return WF_OK;
}

/* A compute program (GL 4.5: "#version 450 core" is prepended). */
wf_status wf__compute_build(const char *origin, const char *cs, unsigned with, GLuint *out) {
  GLuint c = 0;
  const char *prefix = with & WF__SHADER_SPHERE_BOUNDS ? "sphere_bounds.glsl" : NULL;
  wf_status st = compile(GL_COMPUTE_SHADER, origin, cs, prefix, &c);
  if (st != WF_OK) return st;
  GLuint p = glCreateProgram();
  glAttachShader(p, c);
  glDeleteShader(c); /* freed with the program */
  return link_program(p, origin, cs, out);
}

wf_status wf__program_build(const char *origin, const char *vs, const char *fs, unsigned with,
                            GLuint *out) {
  GLuint v = 0, f = 0;
  wf_status st = compile(GL_VERTEX_SHADER, origin, vs,
                         with & WF__SHADER_SPHERE_BOUNDS ? "sphere_bounds.glsl" : NULL, &v);
  if (st == WF_OK)
    st = compile(GL_FRAGMENT_SHADER, origin, fs,
                 with & WF__SHADER_LIGHTING ? "lighting.glsl" : NULL, &f);
  if (st != WF_OK) {
    if (v) glDeleteShader(v);
    return st;
  }
  GLuint p = glCreateProgram();
  glAttachShader(p, v);
  glAttachShader(p, f);
  glBindFragDataLocation(p, 0, "o_color");
  glDeleteShader(v); /* freed with the program */
  glDeleteShader(f);
  char files[300];
  snprintf(files, sizeof files, "%s + %s", vs, fs);
  return link_program(p, origin, files, out);
}
