/*
 * fsx_stage_safe: cache.dir trusted only when no one else controls it
 * (design in fsx_stage.h). The directory the mount opens, and every
 * directory above it up to /, must belong to the mount's user or root
 * and be writable by no one else (a sticky directory above is fine: no
 * one can move our entry in it away); a world-writable sticky cache.dir
 * (/tmp) gets a subdirectory of the user's own, s3rdmafs-<uid>, mode
 * 0700, which must be the user's when it exists already. The checks look
 * at the directories actually opened (fstat of descriptors, their ".."),
 * never at a path that could change meanwhile. Under a directory that
 * passes, only the mount's user (or root) can create names, so every file
 * the module opens by its predictable name is checked once more (a
 * regular file of ours with one link, never through a symlink) as a
 * second wall.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/stage/fsx_stage_i.h"

#define DEPTH_MAX 256

static bool owner_ok(const struct stat *st)
{
  return st->st_uid == geteuid() || st->st_uid == 0;
}

static void say(char *err, size_t errlen, const char *dir,
                const struct stat *st, const char *what)
{
  snprintf(err, errlen, "cache.dir %s: owned by uid %u with mode %04o, %s; "
           "it and every directory above it must belong to you (uid %u) or "
           "root and be writable by no one else (fix: chown and chmod go-w "
           "it, or choose another cache.dir)", dir, (unsigned)st->st_uid,
           (unsigned)(st->st_mode & 07777), what, (unsigned)geteuid());
}

/* Every directory above the one open as fd, up to /. */
static int check_above(int fd, const char *dir, char *err, size_t errlen)
{
  struct stat cur, up;
  int at = dup(fd), rc = 0;

  if (at < 0 || fstat(at, &cur)) {
    rc = -errno;
    snprintf(err, errlen, "cache.dir %s: %s", dir, strerror(-rc));
    goto close_at;
  }
  for (int depth = 0; depth < DEPTH_MAX; depth++) {
    int parent = openat(at, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0 || fstat(parent, &up)) {
      rc = -errno;
      snprintf(err, errlen, "cache.dir %s: a directory above it: %s", dir,
               strerror(-rc));
      if (parent >= 0)
        close(parent);
      goto close_at;
    }
    close(at);
    at = parent;
    if (up.st_dev == cur.st_dev && up.st_ino == cur.st_ino)
      goto close_at; /* / */
    if (!owner_ok(&up) ||
        ((up.st_mode & (S_IWGRP | S_IWOTH)) && !(up.st_mode & S_ISVTX))) {
      say(err, errlen, dir, &up, "above it: a directory another user "
          "controls");
      rc = -EPERM;
      goto close_at;
    }
    cur = up;
  }
  snprintf(err, errlen, "cache.dir %s: more than %d directories deep", dir,
           DEPTH_MAX);
  rc = -ELOOP;
close_at:
  if (at >= 0)
    close(at);
  return rc;
}

/* The user's own subdirectory of a sticky, world-writable fd. */
static int own_subdir(int fd, const char *dir, char **root, char *err,
                      size_t errlen)
{
  char name[32];
  struct stat st;
  int sub;

  snprintf(name, sizeof(name), "s3rdmafs-%u", (unsigned)geteuid());
  if (mkdirat(fd, name, 0700) && errno != EEXIST) {
    snprintf(err, errlen, "cache.dir %s/%s: %s", dir, name, strerror(errno));
    return -errno;
  }
  sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0 || fstat(sub, &st)) {
    int rc = -errno;
    snprintf(err, errlen, "cache.dir %s/%s: %s (not a directory of yours?)",
             dir, name, strerror(-rc));
    if (sub >= 0)
      close(sub);
    return rc;
  }
  close(sub);
  if (st.st_uid != geteuid() || (st.st_mode & 077)) {
    snprintf(err, errlen, "cache.dir %s is shared (sticky, writable by all) "
             "and its %s, where this mount keeps its files, is owned by uid "
             "%u with mode %04o: made by someone else first; remove it or "
             "choose another cache.dir", dir, name, (unsigned)st.st_uid,
             (unsigned)(st.st_mode & 07777));
    return -EPERM;
  }
  *root = fsx_stage_path_join(dir, name);
  return *root ? 0 : -ENOMEM;
}

/* The path of the directory open as fd, as it is (symlinks resolved),
   checked to be that very directory: what the files are opened under
   from now on, never the path as given, which may name another later. */
static char *path_of(int fd, const struct stat *st)
{
  char link[64], *p;
  struct stat now;

  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  p = realpath(link, NULL);
  if (p && (stat(p, &now) || now.st_dev != st->st_dev ||
            now.st_ino != st->st_ino)) {
    free(p);
    p = NULL;
  }
  return p;
}

int fsx_stage_safe_root(const char *cache_dir, char **root, char *err,
                        size_t errlen)
{
  struct stat st;
  char *real = NULL;
  int fd, rc;

  *root = NULL;
  rc = fsx_stage_mkdirs(cache_dir);
  if (rc) {
    snprintf(err, errlen, "cache.dir %s: %s", cache_dir, strerror(-rc));
    return rc;
  }
  fd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st)) {
    rc = -errno;
    snprintf(err, errlen, "cache.dir %s: %s", cache_dir, strerror(-rc));
    goto close_fd;
  }
  if ((rc = check_above(fd, cache_dir, err, errlen)))
    goto close_fd;
  if (!(real = path_of(fd, &st))) {
    snprintf(err, errlen, "cache.dir %s: its path changed while it was "
             "checked", cache_dir);
    rc = -ESTALE;
    goto close_fd;
  }
  if (!owner_ok(&st)) {
    say(err, errlen, cache_dir, &st, "another user's");
    rc = -EPERM;
  } else if ((st.st_mode & S_ISVTX) && (st.st_mode & S_IWOTH)) {
    rc = own_subdir(fd, real, root, err, errlen);
  } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    say(err, errlen, cache_dir, &st, "writable by others");
    rc = -EPERM;
  } else {
    *root = real;
    real = NULL;
  }
close_fd:
  free(real);
  if (fd >= 0)
    close(fd);
  return rc;
}

int fsx_stage_file_ok(int fd)
{
  struct stat st;

  if (fstat(fd, &st))
    return -errno;
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1)
    return -EPERM;
  return 0;
}

int fsx_stage_dir_ok(const char *dir)
{
  struct stat st;

  if (lstat(dir, &st))
    return -errno;
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)))
    return -EPERM;
  return 0;
}

int fsx_stage_open_file(const char *path, int flags, mode_t mode)
{
  /* (O_NONBLOCK: a FIFO at the name must not block us; a regular file's
     I/O ignores it) */
  int fd = open(path, (flags & ~O_TRUNC) | O_NOFOLLOW | O_NONBLOCK |
                          O_NOCTTY | O_CLOEXEC, mode),
      rc;

  if (fd < 0)
    return -errno;
  /* (truncated only once known ours) */
  if ((rc = fsx_stage_file_ok(fd)) ||
      ((flags & O_TRUNC) && ftruncate(fd, 0) && (rc = -errno))) {
    close(fd);
    return rc;
  }
  return fd;
}
