/* wf__error for the partition module's test build (CMakeLists.txt says why): the message goes to
 * this thread's buffer, read by wfpt_test_error. */
#include <stdarg.h>
#include <stdio.h>

#include "internal/error.h"

const char *wfpt_test_error(void);

static _Thread_local char msg[1024];

wf_status wf__error(wf_status st, const char *func, const char *fmt, ...) {
  int n = func ? snprintf(msg, sizeof msg, "%s: ", func) : 0;
  if (n < 0 || (size_t)n >= sizeof msg) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  return st;
}

const char *wfpt_test_error(void) { return msg; }
