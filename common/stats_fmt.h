/*
 * stats_fmt: the one format of every stats text, a "name value\n" line per
 * counter. A caller lists its counters as rows, in the order they are
 * printed (scripts and tests grep the names), and appends them to its
 * buffer.
 */
#ifndef S3R_STATS_FMT_H
#define S3R_STATS_FMT_H

#include <stddef.h>
#include <stdint.h>

struct stats_row {
  const char *name;
  uint64_t value;
};

#define STATS_NROWS(rows) (sizeof(rows) / sizeof((rows)[0]))

/* Append "<prefix><name> <value>\n" for each of the n rows to buf (len
   bytes, kept NUL-terminated) at offset off; prefix may be NULL. Returns
   the new length, at most len - 1: what does not fit is cut off. */
size_t stats_fmt_rows(char *buf, size_t len, size_t off, const char *prefix,
                      const struct stats_row *rows, size_t n);
/* A line of any form (printf), appended the same way. */
size_t stats_fmt_line(char *buf, size_t len, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same for one line whose value is text: "<name> <text>\n". */
size_t stats_fmt_text(char *buf, size_t len, size_t off, const char *name,
                      const char *text);

#endif
