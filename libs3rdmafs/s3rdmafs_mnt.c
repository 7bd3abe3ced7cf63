/*
 * libs3rdmafs: which daemons are handed memory (s3rdmafs_mnt.h).
 *
 * DESIGN
 * - A file's mount is found by the kernel's own words: the mount id of the
 *   open file (/proc/self/fdinfo/FD, mnt_id), then that mount's line of
 *   /proc/self/mountinfo. A descriptor from another mount namespace has no
 *   line here: not trusted.
 * - Its owner is the user_id FUSE's superblock records: fusermount3 sets
 *   it to the uid of whoever mounts, and only a privileged process can
 *   name another (the kernel checks). Trusted: root's mounts and the
 *   caller's own (its effective uid; a daemon of the same user could
 *   read its memory anyway). Another user's mount, even one that says it
 *   is s3rdmafs, gets no buffer: its daemon could fake any answer.
 * - In a user namespace whose uid map is not the identity, user_id is
 *   printed in the FUSE connection's namespace, which may not be ours: a
 *   number equal to our euid proves nothing, so only root's mounts are
 *   trusted there.
 * - /proc unreadable (not mounted, another pid namespace's): nothing can
 *   be verified, so nothing is trusted.
 * - Asked at each registration (a buffer's first use on an open file, a
 *   GPUDirect call's): an open file stays on its mount, and mount ids and
 *   device numbers are reused after an unmount, so no answer is cached.
 *   (A registration the library keeps is reused for the same descriptor,
 *   device and inode; should all three come back on another mount, that
 *   mount's daemon gets no memory: the buffer was handed over when it was
 *   registered, to the trusted one, and every count is checked.)
 * - Threads: any; nothing shared.
 */
#include "libs3rdmafs/s3rdmafs_mnt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The mount id of fd's open file: >= 0, or -errno. */
static long mnt_id_of(int fd)
{
  char path[64], line[256];
  long id = -ENOTTY;
  FILE *f;

  snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  if (!(f = fopen(path, "re")))
    return -errno;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "mnt_id:", 7)) {
      id = strtol(line + 7, NULL, 10);
      break;
    }
  fclose(f);
  return id;
}

/* The n-th (from 0) space-separated field of s, its length in *len. */
static const char *field(const char *s, int n, size_t *len)
{
  while (n-- > 0) {
    s = strchr(s, ' ');
    if (!s)
      return NULL;
    s++;
  }
  *len = strcspn(s, " \n");
  return s;
}

int s3r_mnt_line(const char *line, long mnt_id, uid_t *owner, bool *s3rdmafs)
{
  const char *sep = strstr(line, " - "), *type, *src, *opts, *u;
  size_t tlen, slen, olen;
  char *end;
  long id;

  id = strtol(line, &end, 10);
  if (end == line || *end != ' ' || !sep)
    return -EINVAL;
  if (id != mnt_id)
    return 0;
  /* after " - ": type, source, superblock options */
  if (!(type = field(sep + 3, 0, &tlen)) || !(src = field(sep + 3, 1, &slen)) ||
      !(opts = field(sep + 3, 2, &olen)))
    return -EINVAL;
  *s3rdmafs = (tlen == 13 && !strncmp(type, "fuse.s3rdmafs", 13)) ||
              (slen == 8 && !strncmp(src, "s3rdmafs", 8));
  *owner = (uid_t)-1;
  for (u = opts; u < opts + olen; u += strcspn(u, ", \n") + 1)
    if (!strncmp(u, "user_id=", 8)) {
      unsigned long v = strtoul(u + 8, &end, 10);
      if (end != u + 8 && (*end == ',' || *end == ' ' || *end == '\n' ||
                           !*end))
        *owner = (uid_t)v;
      break;
    }
  return 1;
}

/* Is this process's uid map the identity (no user namespace of its own)? */
static bool uids_are_hosts(void)
{
  unsigned long in, out, count;
  bool id = false;
  FILE *f = fopen("/proc/self/uid_map", "re");

  if (!f)
    return false;
  id = fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3 && in == 0 &&
       out == 0 && count == 4294967295ul && fgetc(f) == '\n' &&
       fgetc(f) == EOF;
  fclose(f);
  return id;
}

int s3r_mnt_trusted(int fd)
{
  long id;
  char *line = NULL;
  size_t cap = 0;
  uid_t owner = (uid_t)-1;
  bool ours = false, self;
  int rc = -ENOTTY, found = 0;
  FILE *f;

  if (fcntl(fd, F_GETFD) < 0)
    return -errno; /* not an open descriptor */
  if ((id = mnt_id_of(fd)) < 0 ||
      !(f = fopen("/proc/self/mountinfo", "re")))
    return -EACCES; /* /proc cannot tell: nothing is trusted */
  while (!found && getline(&line, &cap, f) > 0)
    found = s3r_mnt_line(line, id, &owner, &ours) > 0;
  free(line);
  fclose(f);
  self = owner == geteuid() && uids_are_hosts();
  if (found && ours)
    rc = owner == 0 || self ? 0 : -EACCES;
  else if (found && owner != (uid_t)-1 && owner && !self)
    rc = -EACCES; /* another user's FUSE mount, whatever it calls itself */
  return rc;
}
