/* rdx_reason: see rdx_reason.h. */
#include "rdma/rdx_reason.h"

#include <stdarg.h>
#include <stdio.h>

int rdx_reason(char *why, size_t whylen, int rc, const char *fmt, ...)
{
  va_list ap;

  if (why && whylen > 0) {
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return rc;
}
