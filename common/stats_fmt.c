/* stats_fmt: see stats_fmt.h. */
#include "common/stats_fmt.h"

#include <stdarg.h>
#include <stdio.h>

/* printf at off; the new length, at most len - 1. */
size_t stats_fmt_line(char *buf, size_t len, size_t off, const char *fmt, ...)
{
  va_list ap;
  int w;

  if (!len)
    return 0;
  if (off >= len)
    return len - 1;
  va_start(ap, fmt);
  w = vsnprintf(buf + off, len - off, fmt, ap);
  va_end(ap);
  if (w > 0)
    off += (size_t)w;
  return off < len ? off : len - 1;
}

size_t stats_fmt_rows(char *buf, size_t len, size_t off, const char *prefix,
                      const struct stats_row *rows, size_t n)
{
  if (off < len)
    buf[off] = '\0'; /* terminated even with no rows */
  for (size_t i = 0; i < n; i++)
    off = stats_fmt_line(buf, len, off, "%s%s %llu\n", prefix ? prefix : "",
                 rows[i].name, (unsigned long long)rows[i].value);
  return off < len ? off : (len ? len - 1 : 0);
}

size_t stats_fmt_text(char *buf, size_t len, size_t off, const char *name,
                      const char *text)
{
  return stats_fmt_line(buf, len, off, "%s %s\n", name, text);
}
