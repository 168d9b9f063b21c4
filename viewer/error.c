/* The viewer's error text: one thread-local message per thread, like wf_last_error() of the GPU
 * layer (which the viewer, a separate library, cannot write into). Every failing function of
 * viewer.h sets it and returns the status; nothing is printed. */
#include <stdio.h>

#include "viewer_internal.h"

static _Thread_local char tls_error[2048];

const char *wf_render_last_error(void) { return tls_error; }

wf_status wf__render_error(wf_status st, const char *func, const char *fmt, ...) {
  int n = snprintf(tls_error, sizeof tls_error, "%s: ", func);
  if (n < 0 || (size_t)n >= sizeof tls_error) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_error + n, sizeof tls_error - (size_t)n, fmt, ap);
  va_end(ap);
  return st;
}

const char *wf__gl_error_name(GLenum e) {
  switch (e) {
  case GL_NO_ERROR: return "GL_NO_ERROR";
  case GL_INVALID_ENUM: return "GL_INVALID_ENUM";
  case GL_INVALID_VALUE: return "GL_INVALID_VALUE";
  case GL_INVALID_OPERATION: return "GL_INVALID_OPERATION";
  case GL_INVALID_FRAMEBUFFER_OPERATION: return "GL_INVALID_FRAMEBUFFER_OPERATION";
  case GL_OUT_OF_MEMORY: return "GL_OUT_OF_MEMORY";
  default: return "unknown GL error";
  }
}
