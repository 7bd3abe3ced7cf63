/* slog: see slog.h. */
#include "common/slog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

int slog_level = LOG_NOTICE;
static bool use_syslog;

static const struct {
  const char *name;
  int level;
} level_names[] = {
    {"error", LOG_ERR},   {"err", LOG_ERR},       {"warn", LOG_WARNING},
    {"warning", LOG_WARNING}, {"notice", LOG_NOTICE}, {"info", LOG_INFO},
    {"debug", LOG_DEBUG},
};

void slog_set_level(int level)
{
  if (level < LOG_EMERG)
    level = LOG_EMERG;
  if (level > LOG_DEBUG)
    level = LOG_DEBUG;
  slog_level = level;
}

int slog_parse_level(const char *name)
{
  for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
    if (strcasecmp(name, level_names[i].name) == 0)
      return level_names[i].level;
  return -EINVAL;
}

bool slog_is_syslog(void)
{
  return use_syslog;
}

void slog_use_syslog(const char *ident)
{
  openlog(ident, LOG_PID, LOG_DAEMON);
  use_syslog = true;
}

static const char *level_tag(int level)
{
  switch (level) {
  case LOG_EMERG:
  case LOG_ALERT:
  case LOG_CRIT:
  case LOG_ERR:
    return "error";
  case LOG_WARNING:
    return "warning";
  case LOG_NOTICE:
    return "notice";
  case LOG_INFO:
    return "info";
  default:
    return "debug";
  }
}

void slog_msg(int level, const char *fmt, ...)
{
  char line[2048];
  va_list ap;
  int n;

  va_start(ap, fmt);
  if (use_syslog) {
    vsyslog(level, fmt, ap);
    va_end(ap);
    return;
  }
  n = snprintf(line, sizeof(line), "s3rdmafs: %s: ", level_tag(level));
  if (n < 0)
    n = 0;
  n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof(line) - 1)
    n = (int)sizeof(line) - 2;
  line[n++] = '\n';
  (void)!write(STDERR_FILENO, line, (size_t)n);
}
