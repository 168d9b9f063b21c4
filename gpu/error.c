/* Status names, the thread-local last error and the log callback.
 *
 * The library never prints: failures are described in this thread's last-error text (what failed,
 * where, why, what to do) and messages go to the log callback given to wf_init, if any. */
#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"

static _Thread_local char tls_error[1024];

const char *wf_status_str(wf_status s) {
  switch (s) {
  case WF_OK: return "WF_OK";
  case WF_NOT_READY: return "WF_NOT_READY";
  case WF_ERR_INVALID: return "WF_ERR_INVALID";
  case WF_ERR_DEVICE: return "WF_ERR_DEVICE";
  case WF_ERR_OUT_OF_MEMORY: return "WF_ERR_OUT_OF_MEMORY";
  case WF_ERR_CAPTURE: return "WF_ERR_CAPTURE";
  case WF_ERR_BACKEND: return "WF_ERR_BACKEND";
  case WF_ERR_IO: return "WF_ERR_IO";
  case WF_ERR_PARSE: return "WF_ERR_PARSE";
  case WF_ERR_UNSUPPORTED: return "WF_ERR_UNSUPPORTED";
  }
  return "WF_ERR_UNKNOWN";
}

const char *wf_last_error(void) { return tls_error; }

void wf_clear_error(void) { tls_error[0] = '\0'; }

wf_status wf__error(wf_status st, const char *func, const char *fmt, ...) {
  int n = func ? snprintf(tls_error, sizeof tls_error, "%s: ", func) : 0;
  if (n < 0 || (size_t)n >= sizeof tls_error) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_error + n, sizeof tls_error - (size_t)n, fmt, ap);
  va_end(ap);
  wf__log(WF_LOG_DEBUG, "%s (%s)", tls_error, wf_status_str(st));
  return st;
}

void wf__log(int level, const char *fmt, ...) {
  const wf_init_desc *d = wf__init_desc();
  if (!d || !d->log || level > d->log_level) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  d->log(level, msg, d->log_user);
}
