/* fsx_stage_rec: the staging files' records and the upload journal, on
   disk (the format in fsx_stage.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "common/strbuf.h"
#include "fs/stage/fsx_stage_i.h"
#include "s3/s3_client.h"
#include "s3/s3_xml.h"

static void put_field(struct strbuf *sb, const char *name, const char *v)
{
  strbuf_puts(sb, name);
  strbuf_putc(sb, ' ');
  strbuf_put_hex(sb, v);
  strbuf_putc(sb, '\n');
}

/* A streamed file's "sent" line: last in the record, its number of fixed
   width, so that it is rewritten in place as parts go (once a part). */
#define SENT_KEY "sent "
#define SENT_DIGITS 20

static void put_num(struct strbuf *sb, const char *name, uint64_t v)
{
  char n[24];

  snprintf(n, sizeof(n), "%" PRIu64, v);
  strbuf_puts(sb, name);
  strbuf_putc(sb, ' ');
  strbuf_puts(sb, n);
  strbuf_putc(sb, '\n');
}

/* (fsx_stage_i.h) */
int fsx_stage_write_side(const char *path, const char *ext, char *text,
                         bool sync)
{
  char p[4200], tmp[4200], tx[16];
  int rc;

  if (!text)
    return -ENOMEM;
  snprintf(tx, sizeof(tx), "%s.tmp", ext);
  fsx_stage_side_path(p, sizeof(p), path, ext);
  fsx_stage_side_path(tmp, sizeof(tmp), path, tx);
  rc = fsx_stage_write_file(tmp, text, sync);
  /* between the new text and its rename into place */
  if (!rc && !strcmp(ext, "rec"))
    rc = FP("stage.rec");
  else if (!rc && !strcmp(ext, "parts"))
    rc = FP("stage.parts");
  if (!rc && rename(tmp, p))
    rc = -errno;
  if (rc)
    unlink(tmp);
  free(text);
  return rc;
}

int fsx_stage_rec_write(struct fsx_stage *s, const char *path,
                        const struct fsx_stage_rec *r)
{
  struct strbuf sb = {0};

  strbuf_puts(&sb, REC_MAGIC "\n");
  put_field(&sb, "endpoint", s->endpoint);
  put_field(&sb, "bucket", r->bucket);
  put_field(&sb, "key", r->key);
  put_field(&sb, "base", r->base_etag);
  put_num(&sb, "base_len", r->base_len);
  put_num(&sb, "part_size", r->part_size);
  put_num(&sb, "mode", r->mode);
  put_num(&sb, "uid", r->uid);
  put_num(&sb, "gid", r->gid);
  if (r->has_mtime)
    put_num(&sb, "mtime", (uint64_t)r->mtime);
  if (r->has_mtime && r->mtime_ns)
    put_num(&sb, "mtime_ns", (uint64_t)r->mtime_ns);
  if (r->has_ctime)
    put_num(&sb, "ctime", (uint64_t)r->ctime);
  if (r->has_ctime && r->ctime_ns)
    put_num(&sb, "ctime_ns", (uint64_t)r->ctime_ns);
  if (r->has_atime)
    put_num(&sb, "atime", (uint64_t)r->atime);
  if (r->has_atime && r->atime_ns)
    put_num(&sb, "atime_ns", (uint64_t)r->atime_ns);
  put_num(&sb, "partial", r->partial);
  put_num(&sb, "map_ok", r->map_ok);
  put_num(&sb, "size", r->size);
  if (r->sent) { /* last, fixed width: fsx_stage_rec_set_sent */
    char n[32];
    snprintf(n, sizeof(n), "%0*" PRIu64, SENT_DIGITS, r->sent);
    strbuf_puts(&sb, SENT_KEY);
    strbuf_puts(&sb, n);
    strbuf_putc(&sb, '\n');
  }
  return fsx_stage_write_side(path, "rec", strbuf_take(&sb), false);
}

int fsx_stage_rec_set_sent(const char *path, uint64_t sent)
{
  enum { TAIL = sizeof(SENT_KEY) - 1 + SENT_DIGITS + 1 };
  char p[4200], tail[TAIL + 1], n[SENT_DIGITS + 1];
  struct stat st;
  int fd, rc = 0;

  fsx_stage_side_path(p, sizeof(p), path, "rec");
  fd = fsx_stage_open_file(p, O_RDWR, 0);
  if (fd < 0)
    return fd;
  if (fstat(fd, &st) || st.st_size < TAIL ||
      pread(fd, tail, TAIL, st.st_size - TAIL) != TAIL) {
    rc = -ENODATA;
    goto close_fd;
  }
  tail[TAIL] = '\0';
  if (strncmp(tail, SENT_KEY, sizeof(SENT_KEY) - 1) || tail[TAIL - 1] != '\n' ||
      (st.st_size > TAIL && pread(fd, n, 1, st.st_size - TAIL - 1) == 1 &&
       n[0] != '\n')) {
    rc = -ENODATA; /* no sent line last: written whole instead */
    goto close_fd;
  }
  snprintf(n, sizeof(n), "%0*" PRIu64, SENT_DIGITS, sent);
  if ((rc = FP("stage.sent")))
    goto close_fd;
  /* one write of the digits, in place: a process killed any time leaves
     the old number or the new one */
  if (pwrite(fd, n, SENT_DIGITS, st.st_size - 1 - SENT_DIGITS) != SENT_DIGITS)
    rc = errno ? -errno : -EIO;
close_fd:
  close(fd);
  return rc;
}

void fsx_stage_rec_remove(const char *path)
{
  char p[4200];

  fsx_stage_side_path(p, sizeof(p), path, "rec");
  unlink(p);
}

int fsx_stage_read_text(const char *path, char **out)
{
  struct strbuf sb = {0};
  char buf[4096];
  ssize_t n;
  int fd = fsx_stage_open_file(path, O_RDONLY, 0);

  if (fd < 0)
    return fd;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && sb.len < (1u << 20))
    strbuf_put(&sb, buf, (size_t)n);
  close(fd);
  if (n < 0)
    return -EIO;
  *out = strbuf_take(&sb);
  return *out ? 0 : -ENOMEM;
}

static bool parse_num(const char *v, uint64_t *out)
{
  char *end;

  errno = 0;
  *out = strtoull(v, &end, 10);
  return !errno && end != v && !*end;
}

/* Parse the record beside path; -ENOENT when there is none. */
int fsx_stage_rec_read(const char *path, struct fsx_rec_text *rt)
{
  char p[4200], *line, *save = NULL;
  bool have[5] = {false};
  uint64_t v;
  int rc;

  memset(rt, 0, sizeof(*rt));
  fsx_stage_side_path(p, sizeof(p), path, "rec");
  if ((rc = fsx_stage_read_text(p, &rt->text)))
    return rc;
  line = strtok_r(rt->text, "\n", &save);
  if (!line || strcmp(line, REC_MAGIC))
    goto bad;
  while ((line = strtok_r(NULL, "\n", &save))) {
    char *val = strchr(line, ' ');
    if (!val)
      goto bad;
    *val++ = '\0';
    if (!strcmp(line, "endpoint") && hex_decode_str(val)) {
      rt->r.endpoint = val;
      have[0] = true;
    } else if (!strcmp(line, "bucket") && hex_decode_str(val) && *val) {
      rt->r.bucket = val;
      have[1] = true;
    } else if (!strcmp(line, "key") && hex_decode_str(val) && *val) {
      rt->r.key = val;
      have[2] = true;
    } else if (!strcmp(line, "base") && hex_decode_str(val)) {
      rt->r.base_etag = val;
      have[3] = true;
    } else if (parse_num(val, &v)) {
      if (!strcmp(line, "base_len"))
        rt->r.base_len = v;
      else if (!strcmp(line, "part_size"))
        have[4] = (rt->r.part_size = v) > 0;
      else if (!strcmp(line, "mode"))
        rt->r.mode = (unsigned)v;
      else if (!strcmp(line, "uid"))
        rt->r.uid = (unsigned)v;
      else if (!strcmp(line, "gid"))
        rt->r.gid = (unsigned)v;
      else if (!strcmp(line, "partial"))
        rt->r.partial = v != 0;
      else if (!strcmp(line, "map_ok"))
        rt->r.map_ok = v != 0;
      else if (!strcmp(line, "sent"))
        rt->r.sent = v;
      else if (!strcmp(line, "size")) {
        rt->r.has_size = true;
        rt->r.size = v;
      }
      else if (!strcmp(line, "mtime")) {
        rt->r.has_mtime = true;
        rt->r.mtime = (int64_t)v;
      } else if (!strcmp(line, "ctime")) {
        rt->r.has_ctime = true;
        rt->r.ctime = (int64_t)v;
      } else if (!strcmp(line, "atime")) {
        rt->r.has_atime = true;
        rt->r.atime = (int64_t)v;
      } else if (!strcmp(line, "mtime_ns") && v < 1000000000) {
        rt->r.mtime_ns = (long)v;
      } else if (!strcmp(line, "ctime_ns") && v < 1000000000) {
        rt->r.ctime_ns = (long)v;
      } else if (!strcmp(line, "atime_ns") && v < 1000000000) {
        rt->r.atime_ns = (long)v;
      }
    } else {
      goto bad;
    }
  }
  for (int i = 0; i < 5; i++)
    if (!have[i])
      goto bad;
  return 0;
bad:
  free(rt->text);
  rt->text = NULL;
  return -EBADMSG;
}

/* An upload's record: endpoint, bucket, key, upload id (or "?since=..."),
   and "completing" once a completion of it may have been sent. */
static int write_upload(struct fsx_stage *s, long id, const char *bucket,
                        const char *key, const char *upload_id,
                        bool completing)
{
  const char *v[5] = {s->endpoint, bucket, key, upload_id, "completing"};
  struct strbuf sb = {0};
  char path[4096], tmp[4200], *text;
  int rc;

  for (int i = 0; i < 4 + completing; i++) {
    strbuf_put_hex(&sb, v[i]);
    strbuf_putc(&sb, '\n');
  }
  text = strbuf_take(&sb);
  if (!text)
    return -ENOMEM;
  /* replaced whole (write, rename): a crash never leaves half a record */
  snprintf(path, sizeof(path), "%s/uploads/%ld", s->dir, id);
  snprintf(tmp, sizeof(tmp), "%s/uploads/.%ld.tmp", s->dir, id);
  rc = fsx_stage_write_file(tmp, text, true);
  if (!rc && rename(tmp, path))
    rc = -errno;
  if (rc)
    unlink(tmp);
  free(text);
  return rc;
}

long fsx_stage_note_create(struct fsx_stage *s, const char *bucket,
                           const char *key, time_t since)
{
  char v[40];

  snprintf(v, sizeof(v), "?since=%lld", (long long)since);
  return fsx_stage_note_upload(s, bucket, key, v);
}

int fsx_stage_set_upload(struct fsx_stage *s, long id, const char *bucket,
                         const char *key, const char *upload_id)
{
  return write_upload(s, id, bucket, key, upload_id, false);
}

int fsx_stage_mark_completing(struct fsx_stage *s, long id,
                              const char *bucket, const char *key,
                              const char *upload_id)
{
  return write_upload(s, id, bucket, key, upload_id, true);
}

long fsx_stage_note_upload(struct fsx_stage *s, const char *bucket,
                           const char *key, const char *upload_id)
{
  char path[4096];
  long id;
  int rc;

  pthread_mutex_lock(&s->lock);
  id = ++s->next_id;
  pthread_mutex_unlock(&s->lock);
  rc = write_upload(s, id, bucket, key, upload_id, false);
  if (rc) {
    snprintf(path, sizeof(path), "%s/uploads/%ld", s->dir, id);
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

/* ---- the parts of an upload to take up (<file>.parts) ---- */

/* A part's line of <file>.parts: "N ETAG" (hex). */
static void put_part(struct strbuf *sb, int part, const char *etag)
{
  char num[24];

  snprintf(num, sizeof(num), "%d ", part);
  strbuf_puts(sb, num);
  strbuf_put_hex(sb, etag);
  strbuf_putc(sb, '\n');
}

int fsx_stage_parts_write(const char *path, long journal_id,
                          const char *upload_id,
                          const struct s3_part_etag *pe, unsigned n,
                          bool sync)
{
  struct strbuf sb = {0};
  char num[24];

  snprintf(num, sizeof(num), "%ld\n", journal_id);
  strbuf_puts(&sb, num);
  strbuf_put_hex(&sb, upload_id);
  strbuf_putc(&sb, '\n');
  for (unsigned i = 0; i < n; i++)
    put_part(&sb, pe[i].part_number, pe[i].etag);
  return fsx_stage_write_side(path, "parts", strbuf_take(&sb), sync);
}

/* A part listed again (sent again, its new ETag appended) counts once, as
   its last line says; the order kept. False when out of memory. */
static bool dedupe(struct fsx_stage_parts *pp)
{
  uint8_t *seen;
  unsigned j = pp->n;

  if (!pp->n) /* (no part: pe is NULL) */
    return true;
  if (!(seen = calloc(10001, 1)))
    return false;
  for (unsigned i = pp->n; i-- > 0;)
    if (!seen[pp->pe[i].part_number]++)
      pp->pe[--j] = pp->pe[i];
  memmove(pp->pe, pp->pe + j, (pp->n - j) * sizeof(*pp->pe));
  pp->n -= j;
  free(seen);
  return true;
}

int fsx_stage_parts_add(const char *path, long journal_id,
                        const char *upload_id, int part, const char *etag)
{
  struct strbuf sb = {0};
  char p[4200], *line;
  ssize_t len;
  int fd, rc = 0;

  fsx_stage_side_path(p, sizeof(p), path, "parts");
  fd = fsx_stage_open_file(p, O_WRONLY | O_APPEND, 0);
  if (fd == -ENOENT) { /* the first: written whole, its header first */
    struct s3_part_etag pe = {part, etag};
    return fsx_stage_parts_write(path, journal_id, upload_id, &pe, 1, false);
  }
  if (fd < 0)
    return fd;
  put_part(&sb, part, etag);
  line = strbuf_take(&sb);
  len = line ? (ssize_t)strlen(line) : 0;
  /* one write: a crash leaves the line whole or absent */
  if (!line)
    rc = -ENOMEM;
  else if (!(rc = FP("stage.parts_add")) &&
           write(fd, line, (size_t)len) != len)
    rc = -EIO;
  free(line);
  close(fd);
  return rc;
}

int fsx_stage_parts_read(const char *path, struct fsx_stage_parts *out)
{
  char p[4200], *save = NULL, *l, *end;
  unsigned cap = 0;
  int rc;

  memset(out, 0, sizeof(*out));
  fsx_stage_side_path(p, sizeof(p), path, "parts");
  if ((rc = fsx_stage_read_text(p, &out->text)))
    return rc == -ENOENT ? rc : -EBADMSG;
  l = strtok_r(out->text, "\n", &save);
  out->journal_id = l ? strtol(l, &end, 10) : 0;
  if (!l || *end || out->journal_id <= 0)
    goto bad;
  out->upload_id = strtok_r(NULL, "\n", &save);
  if (!out->upload_id || !hex_decode_str(out->upload_id) ||
      !*out->upload_id)
    goto bad;
  while ((l = strtok_r(NULL, "\n", &save))) {
    long k = strtol(l, &end, 10);
    if (k < 1 || k > 10000 || *end != ' ' || !hex_decode_str(end + 1))
      goto bad;
    if (out->n == cap) {
      struct s3_part_etag *v;
      cap = cap ? 2 * cap : 64;
      if (!(v = realloc(out->pe, cap * sizeof(*v))))
        goto bad;
      out->pe = v;
    }
    out->pe[out->n++] = (struct s3_part_etag){(int)k, end + 1};
  }
  return dedupe(out) ? 0 : -EBADMSG;
bad:
  fsx_stage_parts_free(out);
  return -EBADMSG;
}

void fsx_stage_parts_free(struct fsx_stage_parts *p)
{
  free(p->pe);
  free(p->text);
  memset(p, 0, sizeof(*p));
}

void fsx_stage_parts_remove(const char *path)
{
  char p[4200];

  fsx_stage_side_path(p, sizeof(p), path, "parts");
  unlink(p);
}
