/* PNG output through stb_image_write (the one place its implementation is compiled, static so it
 * cannot clash with another copy). A PNG is written to "<path>.tmp" and renamed over path, so a
 * reader never sees half a file; failures name the path and the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer_internal.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

wf_status wf_png_write_rgba(const char *path, int width, int height, const uint8_t *rgba) {
  if (!path || !*path || !rgba || width <= 0 || height <= 0)
    return wf__render_error(WF_ERR_INVALID, __func__, "path '%s', %d x %d pixels, data %p",
                            path ? path : "(null)", width, height, (const void *)rgba);
  size_t n = strlen(path) + 5;
  char *tmp = malloc(n);
  if (!tmp) return wf__render_error(WF_ERR_OUT_OF_MEMORY, __func__, "'%s'", path);
  snprintf(tmp, n, "%s.tmp", path);
  errno = 0;
  if (!stbi_write_png(tmp, width, height, 4, rgba, width * 4)) {
    int e = errno;
    remove(tmp);
    free(tmp);
    return wf__render_error(WF_ERR_IO, __func__, "cannot write PNG '%s': %s", path,
                            e ? strerror(e) : "encoder failed");
  }
  if (rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    free(tmp);
    return wf__render_error(WF_ERR_IO, __func__, "cannot rename the finished PNG to '%s': %s", path,
                            strerror(e));
  }
  free(tmp);
  return WF_OK;
}
