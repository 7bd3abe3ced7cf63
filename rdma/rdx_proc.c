/*
 * rdx_proc: the /proc readers cma needs on both sides: a process's start
 * time and state (/proc/PID/stat) and fields of /proc/PID/status. The
 * parsers take a byte count and never read past it.
 */
#include "rdma/rdx_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Larger than any stat line (52 fields of at most 20 digits, a 64-byte
   comm) and than the head of status up to its Uid and Gid lines. */
#define PROC_BUF 4096
/* Field 22 (starttime) is the 20th field after comm, state being the 1st. */
#define STAT_START_INDEX 19

/* Decimal digits at [p, end) up to a delimiter in delims or end: 0 or -EINVAL. */
static int decimal(const char *p, const char *end, const char *delims,
                   uint64_t *v, const char **next)
{
  uint64_t x = 0;
  const char *q = p;

  while (q < end && *q >= '0' && *q <= '9') {
    unsigned d = (unsigned)(*q - '0');
    if (x > (UINT64_MAX - d) / 10)
      return -EINVAL;
    x = x * 10 + d;
    q++;
  }
  if (q == p || (q < end && !strchr(delims, *q)) || (q < end && *q == '\0'))
    return -EINVAL;
  *v = x;
  *next = q;
  return 0;
}

int rdx_stat_parse(const char *buf, size_t n, char *state, uint64_t *start)
{
  const char *end = buf + n;
  const char *open, *close, *p;
  uint64_t v;

  if (!buf || n == 0)
    return -EINVAL;
  open = memchr(buf, '(', n);
  close = memrchr(buf, ')', n);
  if (!open || !close || close < open)
    return -EINVAL;
  p = close + 1;
  /* ") S " then fields separated by single spaces */
  if (end - p < 3 || p[0] != ' ' || p[1] == ' ' || p[2] != ' ')
    return -EINVAL;
  if (state)
    *state = p[1];
  p += 1;
  for (int i = 0; i < STAT_START_INDEX; i++) {
    p = memchr(p, ' ', (size_t)(end - p));
    if (!p)
      return -EINVAL;
    p++;
  }
  if (decimal(p, end, " \n", &v, &p))
    return -EINVAL;
  if (start)
    *start = v;
  return 0;
}

int rdx_status_field(const char *buf, size_t n, const char *name,
                     uint64_t *vals, int count)
{
  const char *end = buf + n;
  const char *p = buf;
  size_t nl = name ? strlen(name) : 0;
  uint64_t v[RDX_STATUS_MAX];

  if (!buf || nl == 0 || count < 1 || count > RDX_STATUS_MAX)
    return -EINVAL;
  for (;;) {
    if ((size_t)(end - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == ':')
      break;
    p = memchr(p, '\n', (size_t)(end - p));
    if (!p)
      return -EINVAL;
    p++;
  }
  p += nl + 1;
  for (int i = 0; i < count; i++) {
    if (p == end || (*p != '\t' && *p != ' '))
      return -EINVAL;
    while (p < end && (*p == '\t' || *p == ' '))
      p++;
    if (decimal(p, end, i < count - 1 ? "\t " : "\n", &v[i], &p))
      return -EINVAL;
  }
  memcpy(vals, v, sizeof(*vals) * (size_t)count);
  return 0;
}

/* Read /proc/PID/NAME (pid 0: self) into buf: its length or -errno. */
static ssize_t slurp(pid_t pid, const char *name, char *buf, size_t cap)
{
  char path[64];
  size_t n = 0;
  int fd;

  if (pid)
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
  else
    snprintf(path, sizeof(path), "/proc/self/%s", name);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  while (n < cap) {
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int rc = errno == ENOENT ? -ESRCH : -errno;
      close(fd);
      return rc;
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  return (ssize_t)n;
}

int rdx_proc_stat(pid_t pid, char *state, uint64_t *start)
{
  char buf[PROC_BUF];
  ssize_t n;

  if (pid < 0)
    return -EINVAL;
  n = slurp(pid, "stat", buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  if (n == 0)
    return -ESRCH; /* an exiting task reads empty */
  return rdx_stat_parse(buf, (size_t)n, state, start);
}

int rdx_proc_status(pid_t pid, const char *name, uint64_t *vals, int count)
{
  char buf[PROC_BUF];
  ssize_t n;

  if (pid < 0)
    return -EINVAL;
  n = slurp(pid, "status", buf, sizeof(buf));
  if (n < 0)
    return (int)n;
  if (n == 0)
    return -ESRCH;
  return rdx_status_field(buf, (size_t)n, name, vals, count);
}
