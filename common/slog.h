/*
 * slog: the one logging module. syslog levels, checked before formatting,
 * output to stderr (default) or syslog. Thread-safe: each message is one
 * write(2)/syslog(3) call. Never pass secrets or whole tokens to it.
 */
#ifndef S3R_SLOG_H
#define S3R_SLOG_H

#include <stdbool.h>
#include <syslog.h>

/* Current threshold (LOG_ERR..LOG_DEBUG); messages above it are dropped. */
extern int slog_level;

void slog_set_level(int level);
/* Parse "error|warn|warning|notice|info|debug"; returns the level or -EINVAL. */
int slog_parse_level(const char *name);
/* Route messages to syslog(3) with the given ident (after daemonising). */
void slog_use_syslog(const char *ident);
/* Are messages going to syslog? */
bool slog_is_syslog(void);

void slog_msg(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define slog(level, ...)                                                       \
  do {                                                                         \
    if ((level) <= slog_level)                                                 \
      slog_msg((level), __VA_ARGS__);                                          \
  } while (0)

#define log_err(...) slog(LOG_ERR, __VA_ARGS__)
#define log_warn(...) slog(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) slog(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) slog(LOG_INFO, __VA_ARGS__)
#define log_debug(...) slog(LOG_DEBUG, __VA_ARGS__)

#endif
