/*
 * fsx_stage_try: what recovery counts and says beside its walk
 * (fsx_stage_recover.c): each attempt at a file, in <file>.try, so that a
 * file whose recovery keeps killing the daemon is set aside; the filling
 * in of a file set aside with the old object's bytes it never read; and
 * uploads that may exist, nobody's provably (fsx_stage_unknown).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/slog.h"
#include "fs/stage/fsx_stage_i.h"

/* ---- attempts: a file whose recovery keeps killing the daemon ---- */

#define ATTEMPTS_MAX 3

/*
 * Before recovering path: one attempt more in <file>.try (written and
 * synced: the daemon may die in what follows), or false when ATTEMPTS_MAX
 * earlier ones never ended (each killed the daemon, or its machine):
 * the file is then set aside instead. fsx_stage_try_end after every
 * attempt that ended, whatever its result.
 */
bool fsx_stage_try_begin(const char *path, unsigned *n)
{
  char p[4200], *text = NULL, num[16];

  fsx_stage_side_path(p, sizeof(p), path, "try");
  *n = 0;
  if (!fsx_stage_read_text(p, &text))
    *n = (unsigned)strtoul(text, NULL, 10);
  free(text);
  if (*n >= ATTEMPTS_MAX)
    return false;
  snprintf(num, sizeof(num), "%u\n", *n + 1);
  /* replaced whole and made durable, directory too: a machine that dies
     in what follows counts as well */
  if (fsx_stage_write_side(path, "try", strdup(num), true) ||
      fsx_stage_sync_dir(path))
    log_warn("%s: could not count this recovery attempt", p);
  return true;
}

void fsx_stage_try_end(const char *path)
{
  char p[4200];

  fsx_stage_side_path(p, sizeof(p), path, "try");
  unlink(p);
}

/*
 * Before a file with a base (an old object it was written over) is set
 * aside: the old object's bytes it never read filled in by fn (in
 * keep_only mode), so that the file kept is whole; reason gets what reads
 * as zeros otherwise. -EAGAIN when the server could not say (the next
 * mount tries again), else 0.
 */
int fsx_stage_fill_kept(const char *path, struct fsx_stage_rec *r,
                        fsx_stage_recover_fn fn, void *arg, char *reason,
                        size_t reasonlen)
{
  char mp[4200], why[512] = "";
  unsigned tries;
  int fd, map_fd, rc;

  if (!r->base_etag[0] || !r->base_len)
    return 0;
  if (!fsx_stage_try_begin(path, &tries)) {
    snprintf(reason + strlen(reason), reasonlen - strlen(reason), "; the "
             "old object's bytes it never read are zeros (reading them was "
             "begun %u times and never ended)", tries);
    return 0;
  }
  fd = fsx_stage_open_file(path, O_RDWR, 0);
  fsx_stage_side_path(mp, sizeof(mp), path, "map");
  map_fd = fsx_stage_open_file(mp, O_RDONLY, 0);
  r->keep_only = true;
  rc = fd < 0 ? fd : fn(arg, r, path, fd, map_fd, why, sizeof(why));
  r->keep_only = false;
  if (fd >= 0)
    close(fd);
  if (map_fd >= 0)
    close(map_fd);
  fsx_stage_try_end(path);
  if (rc < 0 && rc != -EAGAIN)
    snprintf(reason + strlen(reason), reasonlen - strlen(reason), "; %s",
             why[0] ? why : "the old object's bytes it never read are zeros");
  if (rc == -EAGAIN)
    snprintf(reason, reasonlen, "%s", why);
  return rc == -EAGAIN ? rc : 0;
}

unsigned fsx_stage_unknown(const char *bucket, const char *key, time_t since,
                           int rc, unsigned resent)
{
  unsigned n = resent;
  char when[32];
  struct tm tm;

  switch (-rc) { /* the server answered the last attempt: it made nothing */
  case 0:
    n += !resent; /* (rc 0 without a repeat: the daemon died) */
    break;
  case EACCES: case EPERM: case ENOENT: case EINVAL:
  case ENAMETOOLONG: case EROFS: case EDQUOT: case ENOSPC:
    break;
  default:
    n++;
    break;
  }
  if (!n)
    return 0;
  gmtime_r(&since, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  log_warn("%s: %u multipart upload(s) of %s begun at %s may exist (%s): "
           "nothing proves them ours, so none is aborted; the bucket's "
           "lifecycle rule (AbortIncompleteMultipartUpload) removes them",
           bucket, n, key, when,
           resent ? "answers were lost, the request repeated"
           : rc   ? strerror(-rc)
                  : "the daemon died before its answer was recorded");
  return n;
}
