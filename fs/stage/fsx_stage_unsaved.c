/*
 * fsx_stage_unsaved: unsaved/, where a file that could not be uploaded is
 * kept under a name unique across mounts and hosts, with its MANIFEST line
 * (the design is in fsx_stage.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/slog.h"
#include "common/strbuf.h"
#include "fs/stage/fsx_stage_i.h"

/* A manifest field: control bytes, '%' and DEL as %XX. */
static void put_escaped(struct strbuf *sb, const char *v)
{
  for (; *v; v++) {
    unsigned char c = (unsigned char)*v;
    if (c < 0x20 || c == 0x7f || c == '%') {
      char e[4];
      snprintf(e, sizeof(e), "%%%02X", c);
      strbuf_puts(sb, e);
    } else {
      strbuf_putc(sb, (char)c);
    }
  }
}

static int manifest_add(const char *udir, const char *name, uint64_t size,
                        const char *bucket, const char *key,
                        const char *reason)
{
  struct strbuf sb = {0};
  char when[32], num[24], *line, *p;
  time_t now = time(NULL);
  struct tm tm;
  int fd, rc = 0;

  gmtime_r(&now, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  snprintf(num, sizeof(num), "%" PRIu64, size);
  strbuf_puts(&sb, when);
  strbuf_putc(&sb, '\t');
  strbuf_puts(&sb, name);
  strbuf_putc(&sb, '\t');
  strbuf_puts(&sb, num);
  strbuf_putc(&sb, '\t');
  put_escaped(&sb, bucket);
  strbuf_putc(&sb, '\t');
  put_escaped(&sb, key);
  strbuf_putc(&sb, '\t');
  put_escaped(&sb, reason);
  strbuf_putc(&sb, '\n');
  line = strbuf_take(&sb);
  p = fsx_stage_path_join(udir, "MANIFEST");
  if (!line || !p) {
    free(line);
    free(p);
    return -ENOMEM;
  }
  /* one write with O_APPEND: lines of concurrent mounts do not mix */
  fd = fsx_stage_open_file(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
  if (fd < 0)
    rc = fd;
  else if (write(fd, line, strlen(line)) != (ssize_t)strlen(line) ||
           fsync(fd))
    rc = -errno;
  if (fd >= 0)
    close(fd);
  free(line);
  free(p);
  return rc;
}

/* The last part of key, as a file name: [A-Za-z0-9._-], at most 80. */
static void name_of(const char *key, char *out, size_t len)
{
  const char *base = strrchr(key, '/');
  size_t j = 0;

  base = base && base[1] ? base + 1 : key;
  for (; *base && j + 1 < len && j < 80; base++) {
    char c = *base;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out[j++] = ok ? c : '_';
  }
  if (j == 0 || out[0] == '.')
    out[j ? 0 : j++] = '_';
  out[j] = '\0';
}

/* A new name in udir, claimed (an empty file made there, never over
   another's): the kept file is renamed over it once its MANIFEST line is
   in. */
static int claim_unique(struct fsx_stage *s, const char *udir,
                        const char *key, char *dst, size_t dstlen)
{
  char base[96];
  int rc = -EEXIST;

  name_of(key, base, sizeof(base));
  for (int tries = 0; tries < 100 && rc == -EEXIST; tries++) {
    unsigned long n;
    int fd;
    pthread_mutex_lock(&s->lock);
    n = ++s->next_kept;
    pthread_mutex_unlock(&s->lock);
    snprintf(dst, dstlen, "%s/%s-%lu-%s", udir, s->mount_id, n, base);
    fd = fsx_stage_open_file(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
    rc = fd < 0 ? fd : 0;
    if (fd >= 0)
      close(fd);
  }
  return rc;
}

int fsx_stage_keep_file(struct fsx_stage *s, const char *path, const char *bucket,
                     const char *key, const char *reason, const char *upload)
{
  char udir[4096], dst[4300], pp[4300], pd[4400], why[1024];
  struct stat st;
  uint64_t size = 0;
  bool has_parts;
  int rc;

  if (!lstat(path, &st))
    size = (uint64_t)st.st_size;
  snprintf(udir, sizeof(udir), "%s/unsaved", s->root);
  rc = fsx_stage_mkdirs(udir);
  if (!rc) /* ours alone: no one else may read or replace what it keeps */
    rc = fsx_stage_dir_ok(udir);
  if (!rc)
    rc = claim_unique(s, udir, key, dst, sizeof(dst));
  if (rc) {
    log_err("%s: %s was not uploaded (%s); its data stays in %s (not moved "
            "to %s: %s)", bucket, key, reason, path, udir, strerror(-rc));
    return rc;
  }
  snprintf(why, sizeof(why), "%s", reason);
  fsx_stage_side_path(pp, sizeof(pp), path, "parts");
  fsx_stage_side_path(pd, sizeof(pd), dst, "parts");
  has_parts = !lstat(pp, &st);
  if (upload)
    snprintf(why + strlen(why), sizeof(why) - strlen(why), "; multipart "
             "upload %s of the key holds the parts the server acknowledged: "
             "kept, not aborted (%s)", upload,
             has_parts ? "its parts are listed in the file's .parts beside it"
                       : "its list of parts could not be kept");
  else if (has_parts) /* a list of parts not read (unreadable, or its
                         record was): it goes with the file, so that no
                         later recovery aborts what it names */
    snprintf(why + strlen(why), sizeof(why) - strlen(why), "; a list of "
             "the parts of a multipart upload (not read) is kept beside it "
             "as its .parts: that upload is not aborted");
  /* In this order, so that a crash anywhere leaves what says where the
     bytes are: the line (naming the claimed name), then the list of parts
     (in unsaved/, it keeps its upload from any abort), then the file, then
     its record. Cut short, the next mount keeps the file again, under
     another name and line; the first line's name is then empty. */
  if (manifest_add(udir, strrchr(dst, '/') + 1, size, bucket, key, why))
    log_warn("%s/MANIFEST: could not add %s", udir, strrchr(dst, '/') + 1);
  if (has_parts && renameat2(AT_FDCWD, pp, AT_FDCWD, pd, RENAME_NOREPLACE))
    log_err("%s: its list of parts stays in %s (not moved beside %s: %s)",
            key, pp, dst, strerror(errno));
  if (rename(path, dst)) {
    rc = -errno;
    log_err("%s: %s was not uploaded (%s); its data stays in %s (not moved "
            "to %s: %s)", bucket, key, reason, path, dst, strerror(-rc));
    if (has_parts) /* (its list goes back with it, for the next mount) */
      renameat2(AT_FDCWD, pd, AT_FDCWD, pp, RENAME_NOREPLACE);
    unlink(dst);
    return rc;
  }
  fsx_stage_remove(path);
  log_err("%s: %s was not uploaded (%s); its %" PRIu64 " bytes are kept in "
          "%s", bucket, key, why, size, dst);
  return 0;
}

int fsx_stage_keep(struct fsx_stage *s, const char *path, const char *bucket,
                   const char *key, const char *reason)
{
  return fsx_stage_keep_file(s, path, bucket, key, reason, NULL);
}

