/* For sanitizer builds of the viewer tests: keeps the GL driver modules that Mesa loads (its DRI
 * driver, which holds llvmpipe, and LLVM) in memory until the process ends.
 *
 * Mesa dlclose()s its driver when a display or window system connection goes away. Allocations it
 * keeps until then are reported by LeakSanitizer at exit with a stack in "<unknown module>",
 * which no suppression can name. Marked RTLD_NODELETE, the modules stay mapped and the reports
 * name them, so lsan_mesa.supp can suppress exactly Mesa's and nothing of ours. Called after a
 * context exists (the driver is loaded then). */
#ifndef WEFT_VIEWER_GL_PIN_H
#define WEFT_VIEWER_GL_PIN_H

#include <dlfcn.h>
#include <link.h>
#include <string.h>

static int vt_pin_module(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  const char *p = info->dlpi_name;
  if (p && (strstr(p, "/dri/") || strstr(p, "libLLVM") || strstr(p, "libgallium"))) {
    void *h = dlopen(p, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    (void)h; /* the extra reference is kept on purpose */
  }
  return 0;
}

static inline void vt_pin_gl_drivers(void) { dl_iterate_phdr(vt_pin_module, NULL); }

#endif
