/* secret: see secret.h. */
#include "common/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not regular";
}

int secret_check_fd(int fd, char *why, size_t whylen)
{
  unsigned mode;
  uid_t me = geteuid();
  struct stat st;

  if (fstat(fd, &st)) {
    int rc = -errno;
    snprintf(why, whylen, "cannot stat: %s", strerror(-rc));
    return rc;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, whylen, "not a regular file (%s)", file_kind(st.st_mode));
    return -EINVAL;
  }
  if (st.st_uid != me && st.st_uid != 0) {
    if (me == 0)
      snprintf(why, whylen, "owned by uid %u, not by root; chown it",
               (unsigned)st.st_uid);
    else
      snprintf(why, whylen, "owned by uid %u, not by you (uid %u) or root; "
               "chown it", (unsigned)st.st_uid, (unsigned)me);
    return -EACCES;
  }
  mode = (unsigned)st.st_mode & 07777;
  if (mode & 077) {
    snprintf(why, whylen, "%s by group or others (mode %04o); chmod 600 it",
             mode & 044 ? "readable" : mode & 022 ? "writable" : "accessible",
             mode);
    return -EACCES;
  }
  return 0;
}

/* Everything up to EOF into buf; returns the length, len + 1 when the file
   is longer than len, or -errno. */
static ssize_t read_all(int fd, char *buf, size_t len)
{
  size_t got = 0;
  ssize_t n;

  while (got <= len) {
    n = read(fd, buf + got, len + 1 - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -errno;
    if (n == 0)
      break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

int secret_read_file(const char *path, char **out, char *why, size_t whylen)
{
  char buf[SECRET_FILE_MAX + 1];
  ssize_t n = 0;
  int fd, rc;

  *out = NULL;
  /* O_NONBLOCK: a FIFO must not hang us before the check refuses it */
  fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    rc = -errno;
    snprintf(why, whylen, "cannot open: %s", strerror(-rc));
    return rc;
  }
  rc = secret_check_fd(fd, why, whylen);
  if (rc)
    goto out;
  n = read_all(fd, buf, SECRET_FILE_MAX);
  if (n < 0) {
    rc = (int)n;
    snprintf(why, whylen, "cannot read: %s", strerror(-rc));
    goto out;
  }
  rc = -EINVAL;
  if (n > SECRET_FILE_MAX) {
    snprintf(why, whylen, "larger than %d bytes: not a key file",
             SECRET_FILE_MAX);
    goto out;
  }
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    n--;
  buf[n] = '\0';
  if (n == 0)
    snprintf(why, whylen, "empty: no key in it");
  else if (memchr(buf, '\0', (size_t)n))
    snprintf(why, whylen, "holds a NUL byte: not a key file");
  else if (strpbrk(buf, "\r\n"))
    snprintf(why, whylen, "holds more than one line: the key alone expected");
  else
    rc = (*out = strdup(buf)) ? 0 : -ENOMEM;
  if (rc == -ENOMEM)
    snprintf(why, whylen, "out of memory");
out:
  explicit_bzero(buf, sizeof(buf));
  close(fd);
  return rc;
}

void secret_free(char *s)
{
  if (s) {
    explicit_bzero(s, strlen(s));
    free(s);
  }
}

void secret_scrub_arg(char *arg)
{
  if (arg)
    memset(arg, 'x', strlen(arg));
}
