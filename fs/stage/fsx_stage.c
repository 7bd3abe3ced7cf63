/* fsx_stage: the staging directory and its files (design in fsx_stage.h;
   records and the upload journal in fsx_stage_rec.c, recovery and
   unsaved/ in fsx_stage_recover.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/slog.h"
#include "common/strbuf.h"
#include "fs/stage/fsx_stage_i.h"

char *fsx_stage_path_join(const char *a, const char *b)
{
  size_t la = strlen(a), lb = strlen(b);
  char *p = malloc(la + lb + 2);

  if (p) {
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
  }
  return p;
}

/* mkdir -p for an absolute path, mode 0700 for what it creates. */
int fsx_stage_mkdirs(const char *path)
{
  char *p = strdup(path);
  int rc = 0;

  if (!p)
    return -ENOMEM;
  for (char *q = p + 1;; q++) {
    bool end = *q == '\0';
    if (*q != '/' && !end)
      continue;
    *q = '\0';
    if (mkdir(p, 0700) && errno != EEXIST) {
      rc = -errno;
      break;
    }
    if (end)
      break;
    *q = '/';
  }
  free(p);
  return rc;
}

int fsx_stage_write_file(const char *path, const char *text, bool sync)
{
  int fd = fsx_stage_open_file(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  size_t len = strlen(text), off = 0;
  int rc = 0;

  if (fd < 0)
    return fd;
  while (off < len && !rc) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno != EINTR)
      rc = -errno;
    else if (n > 0)
      off += (size_t)n;
  }
  if (!rc && sync && fsync(fd))
    rc = -errno;
  if (close(fd) && !rc)
    rc = -errno;
  return rc;
}

static void new_mount_id(char id[17])
{
  uint64_t v = 0;

  if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
        ((uint64_t)getpid() << 40);
  }
  snprintf(id, 17, "%016" PRIx64, v);
}

/* Rename from into a free "mount-<pid>-<n>" under root; *dir is its path. */
static int take_mount_name(const char *root, const char *from, char **dir)
{
  char name[64];

  /* a leftover one with our pid (a recycled pid) is a dead mount's,
     recovered like any other: never replaced */
  for (unsigned n = 0; n <= 1000; n++) {
    snprintf(name, sizeof(name), "mount-%ld-%u", (long)getpid(), n);
    free(*dir);
    *dir = fsx_stage_path_join(root, name);
    if (!*dir)
      return -ENOMEM;
    if (!renameat2(AT_FDCWD, from, AT_FDCWD, *dir, RENAME_NOREPLACE))
      return 0;
    if (errno == EINVAL || errno == ENOSYS) {
      /* no RENAME_NOREPLACE here (NFS): the name reserved by an empty
         directory (recovery passes over one without a lock file), then
         replaced by ours */
      if (!mkdir(*dir, 0700)) {
        int rc = rename(from, *dir) ? -errno : 0;
        if (rc)
          rmdir(*dir);
        return rc;
      }
    }
    if (errno != EEXIST)
      return -errno;
  }
  return -EEXIST;
}

int fsx_stage_open(const char *cache_dir, const char *endpoint,
                   struct fsx_stage **out, char *err, size_t errlen)
{
  struct fsx_stage *s = calloc(1, sizeof(*s));
  char name[64], *lockp = NULL, *up = NULL, *fmt = NULL;
  int rc = -ENOMEM;

  if (!s)
    goto fail;
  s->lock_fd = -1;
  new_mount_id(s->mount_id);
  s->endpoint = strdup(endpoint);
  if (!s->endpoint)
    goto fail;
  /* a directory no one else controls: the root of all that follows */
  if ((rc = fsx_stage_safe_root(cache_dir, &s->root, err, errlen)))
    goto fail;
  cache_dir = s->root;
  /* made whole (locked, its format written) under a name recovery never
     looks at, then renamed into place: another mount's recovery never
     sees it half-made, unlocked, and takes it for a dead mount's */
  snprintf(name, sizeof(name), "new-%s", s->mount_id);
  s->dir = fsx_stage_path_join(cache_dir, name);
  if (!s->dir)
    goto fail;
  if (mkdir(s->dir, 0700)) {
    rc = -errno;
    snprintf(err, errlen, "cache.dir %s: %s", s->dir, strerror(errno));
    goto fail;
  }
  lockp = fsx_stage_path_join(s->dir, "lock");
  up = fsx_stage_path_join(s->dir, "uploads");
  fmt = fsx_stage_path_join(s->dir, "format");
  rc = -ENOMEM;
  if (!lockp || !up || !fmt)
    goto remove_dir;
  s->lock_fd = open(lockp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
  if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) ||
      mkdir(up, 0700) || (rc = fsx_stage_write_file(fmt, FORMAT, false))) {
    if (rc == -ENOMEM || !rc)
      rc = -errno;
    snprintf(err, errlen, "cache.dir %s: %s", s->dir, strerror(-rc));
    goto remove_dir;
  }
  {
    char *made = s->dir;
    s->dir = NULL;
    rc = take_mount_name(cache_dir, made, &s->dir);
    if (rc) {
      snprintf(err, errlen, "cache.dir %s: renaming %s: %s", cache_dir, made,
               strerror(-rc));
      free(s->dir);
      s->dir = made;
      goto remove_dir;
    }
    free(made);
  }
  pthread_mutex_init(&s->lock, NULL);
  free(lockp);
  free(up);
  free(fmt);
  *out = s;
  return 0;

remove_dir:
  if (fmt)
    unlink(fmt);
  if (up)
    rmdir(up);
  if (lockp)
    unlink(lockp);
  rmdir(s->dir);
fail:
  if (s) {
    if (s->lock_fd >= 0)
      close(s->lock_fd);
    free(s->root);
    free(s->dir);
    free(s->endpoint);
    free(s);
  }
  free(lockp);
  free(up);
  free(fmt);
  if (rc == -ENOMEM && err[0] == '\0')
    snprintf(err, errlen, "out of memory");
  return rc;
}

/* Does dir hold anything but "." and ".."? */
static bool has_entries(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  bool any = false;

  while (d && !any && (e = readdir(d)))
    any = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d)
    closedir(d);
  return any;
}

/*
 * Remove a mount directory holding only what a finished mount leaves: the
 * lock, the format file, an empty uploads/. Anything else (a staging file
 * still kept there, an upload record) keeps it: false.
 */
bool fsx_stage_remove_finished(const char *dir)
{
  char *up = fsx_stage_path_join(dir, "uploads"), *p;
  bool only_known = true;
  struct dirent *e;
  DIR *d;

  if (!up)
    return false;
  /* look first: a directory still holding something keeps its lock and
     format files, so that the next mount recovers it */
  d = opendir(dir);
  while (d && only_known && (e = readdir(d)))
    only_known = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                 !strcmp(e->d_name, "lock") ||
                 !strcmp(e->d_name, "format") ||
                 (!strcmp(e->d_name, "uploads") && !has_entries(up));
  if (d)
    closedir(d);
  if (!d || !only_known) {
    free(up);
    return !d && errno == ENOENT;
  }
  rmdir(up);
  free(up);
  if ((p = fsx_stage_path_join(dir, "format"))) {
    unlink(p);
    free(p);
  }
  if ((p = fsx_stage_path_join(dir, "lock"))) {
    unlink(p);
    free(p);
  }
  return !rmdir(dir) || errno == ENOENT;
}

void fsx_stage_close(struct fsx_stage *s)
{
  if (!s)
    return;
  /* uploads this mount could not abort stay recorded, and files it could
     not keep in unsaved/ stay here, for the next mount (unlocked below,
     the directory reads as a dead mount's) */
  if (!fsx_stage_remove_finished(s->dir))
    log_warn("%s: left for the next mount to finish (unfinished uploads "
             "or files not yet kept)", s->dir);
  close(s->lock_fd);
  pthread_mutex_destroy(&s->lock);
  free(s->root);
  free(s->dir);
  free(s->endpoint);
  free(s);
}

const char *fsx_stage_dir(const struct fsx_stage *s)
{
  return s->dir;
}

const char *fsx_stage_root(const struct fsx_stage *s)
{
  return s->root;
}

int fsx_stage_create(struct fsx_stage *s, uint64_t ino, char *path,
                     size_t pathlen)
{
  int fd;

  pthread_mutex_lock(&s->lock);
  snprintf(path, pathlen, "%s/ino-%llu-%ld", s->dir, (unsigned long long)ino,
           ++s->next_id);
  pthread_mutex_unlock(&s->lock);
  fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  return fd < 0 ? -errno : fd;
}

void fsx_stage_side_path(char *out, size_t len, const char *path,
                      const char *ext)
{
  snprintf(out, len, "%s.%s", path, ext);
}

int fsx_stage_map_open(const char *path, uint64_t nbytes)
{
  char p[4200];
  int fd, rc;

  fsx_stage_side_path(p, sizeof(p), path, "map");
  fd = fsx_stage_open_file(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return fd;
  /* allocated now: setting a bit later never needs disk space (where
     the file system cannot, a sparse map) */
  rc = nbytes ? posix_fallocate(fd, 0, (off_t)nbytes) : 0;
  if (rc == EOPNOTSUPP || rc == EINVAL)
    rc = ftruncate(fd, (off_t)nbytes) ? errno : 0;
  if (rc) {
    close(fd);
    unlink(p);
    return -rc;
  }
  return fd;
}

/* ---- records: "name hex-value" lines (keys and ETags may hold any
   byte but NUL) ---- */

void fsx_stage_remove(const char *path)
{
  char p[4200];

  unlink(path);
  fsx_stage_side_path(p, sizeof(p), path, "map");
  unlink(p);
  fsx_stage_rec_remove(path);
  fsx_stage_parts_remove(path);
  fsx_stage_side_path(p, sizeof(p), path, "try");
  unlink(p);
}

static int sync_path(const char *path, int flags)
{
  int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC), rc = 0;

  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  if (fsync(fd))
    rc = -errno;
  close(fd);
  return rc;
}

int fsx_stage_sync_dir(const char *path)
{
  char p[4200], *slash;

  snprintf(p, sizeof(p), "%s", path);
  slash = strrchr(p, '/');
  if (slash)
    *slash = '\0';
  return sync_path(p, O_RDONLY | O_DIRECTORY);
}

int fsx_stage_sync(const char *path, int fd, int map_fd)
{
  char p[4200], *slash;
  int rc = 0;

  if (fsync(fd))
    rc = -errno;
  if (map_fd >= 0 && fsync(map_fd) && !rc)
    rc = -errno;
  fsx_stage_side_path(p, sizeof(p), path, "rec");
  if (!rc)
    rc = sync_path(p, O_RDONLY);
  snprintf(p, sizeof(p), "%s", path);
  slash = strrchr(p, '/');
  if (slash)
    *slash = '\0';
  if (!rc)
    rc = sync_path(p, O_RDONLY | O_DIRECTORY);
  return rc;
}


/* ---- the multipart upload journal: uploads/<id>, four hex lines ---- */

