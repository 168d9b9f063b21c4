/* Keeps the GL driver modules that Mesa loads (its DRI driver, which holds llvmpipe, and LLVM) in
 * memory until the process ends.
 *
 * Mesa dlclose()s its driver when a display or window-system connection goes away. Allocations it
 * keeps until then are then reported by LeakSanitizer at exit with a stack in "<unknown module>",
 * which no suppression can name. Marked RTLD_NODELETE, the modules stay mapped and what they hold
 * stays reachable, so sanitizer builds of weft (the `weft` program's view and --render, the viewer
 * tests) report leaks of ours only. Called once a context exists (the driver is loaded then);
 * harmless elsewhere: a driver that stays loaded until exit. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "viewer_internal.h"

static int pin_module(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size, (void)data;
  const char *p = info->dlpi_name;
  if (p && (strstr(p, "/dri/") || strstr(p, "libLLVM") || strstr(p, "libgallium"))) {
    void *h = dlopen(p, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    (void)h; /* the extra reference is kept on purpose */
  }
  return 0;
}

void wfv_pin_gl_drivers(void) { dl_iterate_phdr(pin_module, NULL); }
