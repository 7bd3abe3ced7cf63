/* fsx_stage: staging directory and upload journal (see fsx_stage.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/slog.h"
#include "common/strbuf.h"
#include "fs/fsx_stage.h"
#include "s3/s3_client.h"

struct fsx_stage {
  char *root;                 /* cache.dir */
  char *dir;                  /* root/mount-PID-N */
  char *endpoint;
  int lock_fd;                /* flock held while we live */
  pthread_mutex_t lock;
  long next_id;               /* lock */
};

static char *path_join(const char *a, const char *b)
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
static int mkdirs(const char *path)
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

int fsx_stage_open(const char *cache_dir, const char *endpoint,
                   struct fsx_stage **out, char *err, size_t errlen)
{
  struct fsx_stage *s = calloc(1, sizeof(*s));
  char name[64], *lockp = NULL, *up = NULL;
  int rc = -ENOMEM;

  if (!s)
    goto fail;
  s->lock_fd = -1;
  s->root = strdup(cache_dir);
  s->endpoint = strdup(endpoint);
  if (!s->root || !s->endpoint)
    goto fail;
  rc = mkdirs(cache_dir);
  if (rc) {
    snprintf(err, errlen, "cache.dir %s: %s", cache_dir, strerror(-rc));
    goto fail;
  }
  /* a new directory of our own; a leftover one with our pid (a recycled
     pid) is a dead mount's, recovered like any other */
  for (unsigned n = 0;; n++) {
    snprintf(name, sizeof(name), "mount-%ld-%u", (long)getpid(), n);
    free(s->dir);
    s->dir = path_join(cache_dir, name);
    if (!s->dir)
      goto fail;
    if (!mkdir(s->dir, 0700))
      break;
    if (errno != EEXIST || n > 1000) {
      rc = -errno;
      snprintf(err, errlen, "cache.dir %s: %s", s->dir, strerror(errno));
      goto fail;
    }
  }
  lockp = path_join(s->dir, "lock");
  up = path_join(s->dir, "uploads");
  rc = -ENOMEM;
  if (!lockp || !up)
    goto remove_dir;
  s->lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) ||
      mkdir(up, 0700)) {
    rc = -errno;
    snprintf(err, errlen, "cache.dir %s: %s", s->dir, strerror(errno));
    goto remove_dir;
  }
  pthread_mutex_init(&s->lock, NULL);
  free(lockp);
  free(up);
  *out = s;
  return 0;

remove_dir:
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
  if (rc == -ENOMEM && err[0] == '\0')
    snprintf(err, errlen, "out of memory");
  return rc;
}

/* Remove a directory and the plain files in it (one level, plus uploads/). */
static void remove_tree(const char *dir)
{
  DIR *d = opendir(dir);
  struct dirent *e;
  struct stat st;

  if (!d)
    return;
  while ((e = readdir(d))) {
    char *p;
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    p = path_join(dir, e->d_name);
    if (!p)
      continue;
    if (!lstat(p, &st) && S_ISDIR(st.st_mode))
      remove_tree(p);
    else
      unlink(p);
    free(p);
  }
  closedir(d);
  rmdir(dir);
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

void fsx_stage_close(struct fsx_stage *s)
{
  char *up;

  if (!s)
    return;
  /* uploads this mount could not abort stay recorded, for the next mount
     to abort (unlocked below, the directory reads as a dead mount's) */
  up = path_join(s->dir, "uploads");
  if (up && has_entries(up))
    log_warn("%s: unfinished uploads left for the next mount to abort",
             s->dir);
  else
    remove_tree(s->dir);
  free(up);
  close(s->lock_fd);
  pthread_mutex_destroy(&s->lock);
  free(s->root);
  free(s->dir);
  free(s->endpoint);
  free(s);
}

int fsx_stage_create(struct fsx_stage *s, uint64_t ino, char *path,
                     size_t pathlen)
{
  int fd;

  pthread_mutex_lock(&s->lock);
  snprintf(path, pathlen, "%s/ino-%llu-%ld", s->dir, (unsigned long long)ino,
           ++s->next_id);
  pthread_mutex_unlock(&s->lock);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  return fd < 0 ? -errno : fd;
}

/* One journal line: the field hex-encoded (keys may hold any byte). */
static void put_hex_line(struct strbuf *sb, const char *v)
{
  static const char hx[] = "0123456789abcdef";

  for (; *v; v++) {
    strbuf_putc(sb, hx[(unsigned char)*v >> 4]);
    strbuf_putc(sb, hx[(unsigned char)*v & 15]);
  }
  strbuf_putc(sb, '\n');
}

long fsx_stage_note_upload(struct fsx_stage *s, const char *bucket,
                           const char *key, const char *upload_id)
{
  struct strbuf sb = {0};
  char path[4096], *text;
  long id;
  FILE *f;
  int rc = 0;

  put_hex_line(&sb, s->endpoint);
  put_hex_line(&sb, bucket);
  put_hex_line(&sb, key);
  put_hex_line(&sb, upload_id);
  text = strbuf_take(&sb);
  if (!text)
    return -ENOMEM;
  pthread_mutex_lock(&s->lock);
  id = ++s->next_id;
  pthread_mutex_unlock(&s->lock);
  snprintf(path, sizeof(path), "%s/uploads/%ld", s->dir, id);
  f = fopen(path, "we");
  if (!f || fputs(text, f) < 0 || fflush(f) || fsync(fileno(f)))
    rc = -errno;
  if (f && fclose(f) && !rc)
    rc = -errno;
  free(text);
  if (rc) {
    unlink(path);
    return rc;
  }
  return id;
}

void fsx_stage_forget_upload(struct fsx_stage *s, long id)
{
  char path[4096];

  if (id <= 0)
    return;
  snprintf(path, sizeof(path), "%s/uploads/%ld", s->dir, id);
  unlink(path);
}

/* Decode one hex line in place; false if it is not one. */
static bool unhex_line(char *line)
{
  size_t n = strcspn(line, "\n"), j = 0;

  if (n % 2)
    return false;
  for (size_t i = 0; i < n; i += 2) {
    int hi = hex_digit(line[i]), lo = hex_digit(line[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    line[j++] = (char)(hi << 4 | lo);
  }
  line[j] = '\0';
  return j > 0;
}

/* Abort the upload in one record; true when it is gone (or not ours). */
static bool recover_record(struct fsx_stage *s, struct s3_client *c,
                           const char *path, int *aborted)
{
  char f[4][2048];
  FILE *fp = fopen(path, "re");
  int n = 0, rc;

  if (!fp)
    return true;
  while (n < 4 && fgets(f[n], sizeof(f[n]), fp) && unhex_line(f[n]))
    n++;
  fclose(fp);
  if (n < 4) {
    log_warn("%s: not an upload record, removed", path);
    return true;
  }
  if (strcmp(f[0], s->endpoint))
    return false; /* another endpoint's: for a mount of that one */
  rc = s3_abort_multipart(c, f[1], f[2], f[3]);
  if (rc && rc != -ENOENT) {
    log_warn("%s: could not abort the unfinished upload of %s: %s", f[1],
             f[2], strerror(-rc));
    return false;
  }
  log_info("%s: aborted the unfinished upload of %s left by a dead mount",
           f[1], f[2]);
  if (!rc)
    (*aborted)++;
  return true;
}

/* Recover one dead mount's directory; removed if nothing is left in it. */
static void recover_dir(struct fsx_stage *s, struct s3_client *c,
                        const char *dir, int *aborted)
{
  char *up = path_join(dir, "uploads");
  bool all = true;
  struct dirent *e;
  DIR *d;

  d = up ? opendir(up) : NULL;
  while (d && (e = readdir(d))) {
    char *p;
    if (e->d_name[0] == '.')
      continue;
    p = path_join(up, e->d_name);
    if (p && recover_record(s, c, p, aborted))
      unlink(p);
    else
      all = false;
    free(p);
  }
  if (d)
    closedir(d);
  free(up);
  if (all)
    remove_tree(dir);
}

int fsx_stage_recover(struct fsx_stage *s, struct s3_client *c)
{
  DIR *d = opendir(s->root);
  struct dirent *e;
  int aborted = 0;

  while (d && (e = readdir(d))) {
    char *dir, *lockp;
    int fd;
    if (strncmp(e->d_name, "mount-", 6))
      continue;
    dir = path_join(s->root, e->d_name);
    if (!dir || !strcmp(dir, s->dir)) {
      free(dir);
      continue;
    }
    lockp = path_join(dir, "lock");
    fd = lockp ? open(lockp, O_RDWR | O_CLOEXEC) : -1;
    /* locked: a live mount's; no lock file: half-made, or not ours */
    if (fd >= 0 && !flock(fd, LOCK_EX | LOCK_NB))
      recover_dir(s, c, dir, &aborted);
    if (fd >= 0)
      close(fd);
    free(lockp);
    free(dir);
  }
  if (d)
    closedir(d);
  return aborted;
}

void fsx_stage_keep(struct fsx_stage *s, const char *path, const char *bucket,
                    const char *key)
{
  char dst[4096];
  int rc;

  snprintf(dst, sizeof(dst), "%s/unsaved", s->root);
  rc = mkdirs(dst);
  snprintf(dst, sizeof(dst), "%s/unsaved/%ld-%s", s->root, (long)time(NULL),
           strrchr(path, '/') + 1);
  if (!rc && rename(path, dst))
    rc = -errno;
  if (rc)
    log_err("%s: %s was not uploaded; its data is in %s", bucket, key, path);
  else
    log_err("%s: %s was not uploaded; its data is kept in %s", bucket, key,
            dst);
}
