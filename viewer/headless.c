/* The headless OpenGL context: EGL without a window system.
 *
 * Displays are tried in this order, the first that gives a GL 3.3 core context wins:
 *  1. an EGL device that is not a software renderer (EGL_EXT_platform_device: a GPU on a server,
 *     NVIDIA's or Mesa's driver), or the device $WEFT_EGL_DEVICE (an index) if set;
 *  2. Mesa's surfaceless platform (EGL_MESA_platform_surfaceless: llvmpipe where there is no GPU,
 *     which is what CI has);
 *  3. any remaining (software) EGL device;
 *  4. the default display, with a 1x1 pbuffer.
 * The context draws into the renderer's framebuffer objects only, so it needs no surface where
 * EGL_KHR_surfaceless_context exists. eglInitialize is not reference counted, so displays are
 * counted here and terminated when their last renderer goes. Nothing here prints; when every
 * display fails, the error lists why each one did. */
#include <epoxy/egl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viewer_internal.h"

struct wf__headless {
  EGLDisplay dpy;
  EGLContext ctx;
  EGLSurface surf; /* EGL_NO_SURFACE when surfaceless */
};

/* initialised displays and how many contexts use each */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  EGLDisplay dpy;
  int refs;
} g_dpys[8];

static bool display_ref(EGLDisplay d) {
  /* under the lock throughout, so two threads cannot both count a display as new */
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < 8; i++)
    if (g_dpys[i].dpy == d && g_dpys[i].refs > 0) {
      g_dpys[i].refs++;
      pthread_mutex_unlock(&g_lock);
      return true;
    }
  EGLint major, minor;
  bool ok = eglInitialize(d, &major, &minor);
  for (int i = 0; ok && i < 8; i++)
    if (g_dpys[i].refs == 0) {
      g_dpys[i].dpy = d, g_dpys[i].refs = 1;
      break;
    }
  pthread_mutex_unlock(&g_lock);
  return ok;
}

static void display_unref(EGLDisplay d) {
  bool last = false;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < 8; i++)
    if (g_dpys[i].dpy == d && g_dpys[i].refs > 0) {
      last = --g_dpys[i].refs == 0;
      break;
    }
  pthread_mutex_unlock(&g_lock);
  if (last) eglTerminate(d);
}

static bool has_ext(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && (p = strstr(p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

/* Creates a GL 4.5 (else 3.3) core context on d; on failure appends the reason to why. */
static bool try_display(EGLDisplay d, const char *label, bool debug, wf__headless *h, char *why,
                        size_t why_size) {
  size_t used = strlen(why);
#define WHY(...) snprintf(why + used, why_size - used, __VA_ARGS__)
  if (d == EGL_NO_DISPLAY) {
    WHY("%s: no display; ", label);
    return false;
  }
  if (!display_ref(d)) {
    WHY("%s: eglInitialize failed (0x%x); ", label, (unsigned)eglGetError());
    return false;
  }
  const char *ext = eglQueryString(d, EGL_EXTENSIONS);
  bool surfaceless = has_ext(ext, "EGL_KHR_surfaceless_context");
  bool no_config = has_ext(ext, "EGL_KHR_no_config_context") && surfaceless;
  if (!eglBindAPI(EGL_OPENGL_API)) {
    WHY("%s: no desktop OpenGL (eglBindAPI 0x%x); ", label, (unsigned)eglGetError());
    display_unref(d);
    return false;
  }
  EGLConfig cfg = (EGLConfig)0;
  EGLint n = 0;
  if (!no_config) {
    const EGLint want[] = {EGL_SURFACE_TYPE,
                           surfaceless ? 0 : EGL_PBUFFER_BIT,
                           EGL_RENDERABLE_TYPE,
                           EGL_OPENGL_BIT,
                           EGL_RED_SIZE,
                           8,
                           EGL_GREEN_SIZE,
                           8,
                           EGL_BLUE_SIZE,
                           8,
                           EGL_NONE};
    if (!eglChooseConfig(d, want, &cfg, 1, &n) || n < 1) {
      WHY("%s: no EGL config for desktop OpenGL; ", label);
      display_unref(d);
      return false;
    }
  }
  /* EGL_CONTEXT_OPENGL_DEBUG is EGL 1.5: only asked for when wanted */
  /* 4.5 core where the driver has it (the compute path of render_splat.c; some drivers give
     exactly the version asked for), else 3.3 core, which everything else needs */
  EGLContext ctx = EGL_NO_CONTEXT;
  static const EGLint versions[2][2] = {{4, 5}, {3, 3}};
  for (int v = 0; v < 2 && ctx == EGL_NO_CONTEXT; v++) {
    EGLint attrs[16] = {EGL_CONTEXT_MAJOR_VERSION,       versions[v][0],
                        EGL_CONTEXT_MINOR_VERSION,       versions[v][1],
                        EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT};
    int na = 6;
    if (debug) attrs[na++] = EGL_CONTEXT_OPENGL_DEBUG, attrs[na++] = EGL_TRUE;
    attrs[na] = EGL_NONE;
    ctx = eglCreateContext(d, no_config ? EGL_NO_CONFIG_KHR : cfg, EGL_NO_CONTEXT, attrs);
  }
  if (ctx == EGL_NO_CONTEXT) {
    WHY("%s: no OpenGL 3.3 core context (eglCreateContext 0x%x); ", label, (unsigned)eglGetError());
    display_unref(d);
    return false;
  }
  EGLSurface surf = EGL_NO_SURFACE;
  if (!surfaceless) {
    const EGLint pb[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    surf = eglCreatePbufferSurface(d, cfg, pb);
    if (surf == EGL_NO_SURFACE) {
      WHY("%s: no pbuffer (0x%x); ", label, (unsigned)eglGetError());
      eglDestroyContext(d, ctx);
      display_unref(d);
      return false;
    }
  }
  if (!eglMakeCurrent(d, surf, surf, ctx)) {
    WHY("%s: eglMakeCurrent failed (0x%x); ", label, (unsigned)eglGetError());
    if (surf != EGL_NO_SURFACE) eglDestroySurface(d, surf);
    eglDestroyContext(d, ctx);
    display_unref(d);
    return false;
  }
#undef WHY
  wfv_pin_gl_drivers();
  h->dpy = d, h->ctx = ctx, h->surf = surf;
  return true;
}

wf_status wf__headless_open(bool debug, wf__headless **out, char *info, size_t info_size) {
  wf__headless *h = calloc(1, sizeof *h);
  if (!h) return wf__render_error(WF_ERR_OUT_OF_MEMORY, "wf_render_headless_create", "context");
  char why[1024] = "";
  const char *client = eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS); /* NULL: EGL < 1.5 */
  bool platform = has_ext(client, "EGL_EXT_platform_base");
  bool devices = platform && has_ext(client, "EGL_EXT_platform_device") &&
                 has_ext(client, "EGL_EXT_device_enumeration") &&
                 has_ext(client, "EGL_EXT_device_query");
  EGLDeviceEXT devs[16];
  EGLint ndev = 0;
  if (devices && !eglQueryDevicesEXT(16, devs, &ndev)) ndev = 0;
  bool software[16] = {false};
  for (EGLint i = 0; i < ndev; i++)
    software[i] =
        has_ext(eglQueryDeviceStringEXT(devs[i], EGL_EXTENSIONS), "EGL_MESA_device_software");
  const char *pick = getenv("WEFT_EGL_DEVICE");
  char label[64];
  bool ok = false;
  if (pick && *pick) {
    int i = atoi(pick);
    if (i < 0 || i >= ndev) {
      free(h);
      return wf__render_error(WF_ERR_DEVICE, "wf_render_headless_create",
                              "WEFT_EGL_DEVICE=%s: there are %d EGL devices (0..%d)", pick,
                              (int)ndev, (int)ndev - 1);
    }
    snprintf(label, sizeof label, "EGL device %d%s", i, software[i] ? " (software)" : "");
    ok = try_display(eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL), label, debug,
                     h, why, sizeof why);
  }
  for (EGLint i = 0; !ok && !(pick && *pick) && i < ndev; i++) {
    if (software[i]) continue;
    snprintf(label, sizeof label, "EGL device %d", (int)i);
    ok = try_display(eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL), label, debug,
                     h, why, sizeof why);
  }
  if (!ok && !(pick && *pick) && platform && has_ext(client, "EGL_MESA_platform_surfaceless")) {
    snprintf(label, sizeof label, "EGL surfaceless");
    ok = try_display(
        eglGetPlatformDisplayEXT(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL), label,
        debug, h, why, sizeof why);
  }
  for (EGLint i = 0; !ok && !(pick && *pick) && i < ndev; i++) {
    if (!software[i]) continue;
    snprintf(label, sizeof label, "EGL device %d (software)", (int)i);
    ok = try_display(eglGetPlatformDisplayEXT(EGL_PLATFORM_DEVICE_EXT, devs[i], NULL), label, debug,
                     h, why, sizeof why);
  }
  if (!ok && !(pick && *pick)) {
    snprintf(label, sizeof label, "EGL default display");
    ok = try_display(eglGetDisplay(EGL_DEFAULT_DISPLAY), label, debug, h, why, sizeof why);
  }
  if (!ok) {
    free(h);
    return wf__render_error(WF_ERR_UNSUPPORTED, "wf_render_headless_create",
                            "no headless OpenGL 3.3 context: %s(install Mesa's libegl-mesa0 and "
                            "libgl1-mesa-dri for software rendering, or a GPU driver with EGL)",
                            why);
  }
  snprintf(info, info_size, "%s", label);
  *out = h;
  return WF_OK;
}

wf_status wf__headless_make_current(wf__headless *h) {
  eglBindAPI(EGL_OPENGL_API); /* per thread: the current context is looked up per API */
  if (eglGetCurrentContext() == h->ctx) return WF_OK;
  if (!eglMakeCurrent(h->dpy, h->surf, h->surf, h->ctx))
    return wf__render_error(WF_ERR_BACKEND, "wf_render",
                            "eglMakeCurrent failed (0x%x): the headless context may be current "
                            "on another thread",
                            (unsigned)eglGetError());
  return WF_OK;
}

void wf__headless_close(wf__headless *h) {
  if (!h) return;
  eglBindAPI(EGL_OPENGL_API);
  if (eglGetCurrentContext() == h->ctx)
    eglMakeCurrent(h->dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (h->surf != EGL_NO_SURFACE) eglDestroySurface(h->dpy, h->surf);
  eglDestroyContext(h->dpy, h->ctx);
  display_unref(h->dpy);
  free(h);
}
