/* fsx_recover: a dead mount's staging file uploaded (see fsx_recover.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/meta/fsx_etag.h"
#include "fs/stage/fsx_recover.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb.h"
#include "s3/s3_client.h"
#include "s3/s3_xml.h"

/*
 * The map of the blocks of [0, base_len) held (*map_out) and how many bytes
 * it says were never read (*miss); -EBADMSG when the map cannot be read
 * whole: which blocks are ours is then unknown.
 */
static int missing_bytes(int map_fd, uint64_t base_len, uint8_t **map_out,
                         uint64_t *miss_out)
{
  uint64_t nb = (base_len + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK, miss = 0;
  uint8_t *map = calloc((size_t)(nb + 7) / 8 + 1, 1);

  *map_out = map;
  if (!map)
    return -ENOMEM;
  if (map_fd < 0 ||
      pread(map_fd, map, (size_t)(nb + 7) / 8, 0) != (ssize_t)((nb + 7) / 8))
    return -EBADMSG;
  for (uint64_t b = 0; b < nb; b++)
    if (!(map[b / 8] & (1u << (b % 8)))) {
      uint64_t e = (b + 1) * FSX_WB_BLOCK;
      miss += (e < base_len ? e : base_len) - b * FSX_WB_BLOCK;
    }
  *miss_out = miss;
  return 0;
}

/*
 * A request's failure that says nothing about the object: the server could
 * not be reached or asked us to come back, or this mount is stopping. The
 * file is then left for the next mount (-EAGAIN), not kept.
 */
static bool transient(int rc)
{
  switch (-rc) {
  case EAGAIN:
  case ECANCELED:
  case ECONNREFUSED:
  case ECONNRESET:
  case ECONNABORTED:
  case EHOSTUNREACH:
  case ENETUNREACH:
  case ENETDOWN:
  case ETIMEDOUT:
  case EPIPE:
    return true;
  default:
    return false;
  }
}

static void say_transient(int rc, const char *what, char *reason,
                          size_t reasonlen)
{
  if (rc == -ECANCELED)
    snprintf(reason, reasonlen, "%s: this mount stopped first", what);
  else
    snprintf(reason, reasonlen, "%s: the server could not be reached: %s",
             what, strerror(-rc));
}

static int head(const struct fsx_recover_io *t, const char *bucket,
                const char *key, struct s3_object_meta *out)
{
  struct s3_req *q;
  int rc;

  memset(out, 0, sizeof(*out));
  q = s3_req_create(t->m->s3, "HEAD", bucket, key);
  if (!q)
    return -ENOMEM;
  rc = t->run(t->arg, q);
  if (!rc)
    rc = s3_head_object_result(q, out);
  s3_req_destroy(q);
  return rc;
}

static int put_object(const struct fsx_recover_io *t, const char *bucket,
                      const char *key, const void *data, size_t size,
                      const struct s3_put_opts *o, char etag[S3_ETAG_MAX])
{
  struct fsx_mount *m = t->m;
  struct s3_req *q = s3_put_object_req(m->s3, bucket, key, data, size, o);
  int rc;

  /* NULL: no memory, or o cannot be sent; the blocking call says which
     (and sends nothing then) */
  if (!q)
    return s3_put_object(m->s3, bucket, key, data, size, o, etag);
  rc = t->run(t->arg, q);
  if (!rc)
    rc = s3_put_object_result(q, etag);
  s3_req_destroy(q);
  return rc;
}

static int upload_part(const struct fsx_recover_io *t, const char *bucket,
                       const char *key, const char *id, int part,
                       const void *data, size_t len, char etag[S3_ETAG_MAX])
{
  struct s3_req *q = s3_upload_part_req(t->m->s3,
                                        bucket, key, id, part, data, len);
  int rc;

  if (!q)
    return -ENOMEM;
  rc = t->run(t->arg, q);
  if (!rc)
    rc = s3_upload_part_result(q, etag);
  s3_req_destroy(q);
  return rc;
}

/* GET the blocks the map lacks, from exactly the base version. */
static int fetch_missing(const struct fsx_recover_io *t,
                         const struct fsx_stage_rec *r, int fd,
                         const uint8_t *map)
{
  struct s3_client *c = t->m->s3;
  uint64_t nb = (r->base_len + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
  char quoted[S3_ETAG_MAX + 2];
  int rc = 0;

  snprintf(quoted, sizeof(quoted), "\"%s\"", r->base_etag);
  for (uint64_t b = 0; b < nb && !rc;) {
    uint64_t e = b, off, len;
    struct s3_req *q;
    size_t got = 0;
    char *buf;
    if (map[b / 8] & (1u << (b % 8))) {
      b++;
      continue;
    }
    while (e < nb && e - b < 128 && !(map[e / 8] & (1u << (e % 8))))
      e++;
    off = b * FSX_WB_BLOCK;
    len = (e * FSX_WB_BLOCK < r->base_len ? e * FSX_WB_BLOCK : r->base_len) -
          off;
    buf = malloc((size_t)len);
    q = buf ? s3_get_object_req(c, r->bucket, r->key, off, (size_t)len, buf)
            : NULL;
    rc = q ? s3_req_add_header(q, "If-Match", quoted) : -ENOMEM;
    if (!rc && !(rc = t->run(t->arg, q)))
      rc = s3_get_object_result(q, &got);
    if (!rc && got != len)
      rc = -ESTALE;
    if (!rc && pwrite(fd, buf, (size_t)len, (off_t)off) != (ssize_t)len)
      rc = -EIO;
    if (q)
      s3_req_destroy(q);
    free(buf);
    b = e;
  }
  return rc;
}

/* Two ETags naming the same bytes: quotes aside, any case. */
static bool same_etag(const char *a, const char *b)
{
  size_t la, lb;

  a += *a == '"';
  b += *b == '"';
  la = strcspn(a, "\"");
  lb = strcspn(b, "\"");
  return la && la == lb && !strncasecmp(a, b, la);
}

static const struct s3_part_info *listed(const struct s3_parts_result *l,
                                         int part)
{
  for (size_t i = 0; i < l->n_parts; i++)
    if (l->parts[i].part_number == part)
      return &l->parts[i];
  return NULL;
}

/*
 * A streamed file's upload checked before anything completes it: each
 * part its record says the server acknowledged is listed with that ETag
 * and its length, and every other part of [0, size) is held whole by the
 * staging file (held bytes, no hole: a write buffer's bytes written back).
 * 0, or -ENOTRECOVERABLE with why: nothing is then completed or aborted.
 */
static int check_resume(const struct fsx_stage_rec *r, int fd, uint64_t held,
                        uint64_t size, unsigned n,
                        const struct s3_parts_result *l, char *reason,
                        size_t reasonlen)
{
  const struct fsx_stage_parts *pp = r->resume;
  uint8_t *acked = calloc(n, 1);
  int rc = -ENOTRECOVERABLE;
  uint64_t s, len;

  if (!acked)
    return -ENOMEM;
  for (unsigned i = 0; i < pp->n; i++) {
    int k = pp->pe[i].part_number;
    const struct s3_part_info *p = (unsigned)k <= n ? listed(l, k) : NULL;
    if ((unsigned)k > n) {
      snprintf(reason, reasonlen, "its record names part %d of a file of %u "
               "part(s)", k, n);
      goto free_acked;
    }
    fsx_wb_part_span(r->part_size, (unsigned)k - 1, &s, &len);
    len = s + len > size ? size - s : len;
    if (!p || !same_etag(p->etag, pp->pe[i].etag) ||
        (uint64_t)p->size != len) {
      snprintf(reason, reasonlen, "part %d, acknowledged by the server, is "
               "%s", k, !p ? "not listed in its upload any more"
                           : "listed with another ETag or length");
      goto free_acked;
    }
    acked[k - 1] = 1;
  }
  for (unsigned k = 0; k < n; k++) {
    off_t hole;
    if (acked[k])
      continue;
    fsx_wb_part_span(r->part_size, k, &s, &len);
    len = s + len > size ? size - s : len;
    hole = s < held ? lseek(fd, (off_t)s, SEEK_HOLE) : (off_t)s;
    if (s + len > held || (hole >= 0 && (uint64_t)hole < s + len)) {
      snprintf(reason, reasonlen, "part %u (bytes %" PRIu64 "-%" PRIu64 ") "
               "is neither acknowledged by the server nor in the staging "
               "file", k + 1, s, s + len - 1);
      goto free_acked;
    }
  }
  rc = 0;
free_acked:
  free(acked);
  return rc;
}

/*
 * A streamed file's upload taken up (r->resume names it): checked against
 * the server's listing, the parts it lacks sent from the staging file
 * (held bytes of it), then the completion, conditional as the file's.
 * Frees pe and etags.
 */
static int resume_parts(const struct fsx_recover_io *t,
                        const struct fsx_stage_rec *r, const char *path,
                        int fd,
                        const unsigned char *data, uint64_t held,
                        uint64_t size, const struct s3_put_opts *o,
                        struct s3_part_etag *pe, char (*etags)[S3_ETAG_MAX],
                        unsigned n, char *reason, size_t reasonlen)
{
  const struct fsx_stage_parts *pp = r->resume;
  struct s3_parts_result l;
  char etag[S3_ETAG_MAX];
  uint64_t s, len;
  int rc = s3_list_parts(t->m->s3, r->bucket, r->key, pp->upload_id, t->run,
                         t->arg, &l);

  if (rc == -ENOENT) {
    snprintf(reason, reasonlen, "its unfinished upload is gone from the "
             "server (bytes it held up to byte %" PRIu64 " are zeros here)",
             r->sent);
    rc = -EIDRM;
  } else if (!rc) {
    rc = check_resume(r, fd, held, size, n, &l, reason, reasonlen);
    s3_parts_result_cleanup(&l);
  }
  for (unsigned i = 0; !rc && i < pp->n; i++)
    pe[pp->pe[i].part_number - 1] = pp->pe[i];
  for (unsigned k = 0; k < n && !rc; k++) {
    if (pe[k].etag)
      continue;
    fsx_wb_part_span(r->part_size, k, &s, &len);
    if (s + len > size)
      len = size - s;
    rc = upload_part(t, r->bucket, r->key, pp->upload_id, (int)k + 1,
                     data + s, (size_t)len, etags[k]);
    pe[k] = (struct s3_part_etag){(int)k + 1, etags[k]};
  }
  /* every part listed before the completion: a crash after it finds the
     object made of them (completed_from), not a file to keep */
  if (!rc && fsx_stage_parts_write(path, pp->journal_id, pp->upload_id, pe,
                                   n, true)) {
    snprintf(reason, reasonlen, "the list of its parts could not be "
             "rewritten before the completion");
    rc = -EAGAIN; /* (the next mount tries again) */
  }
  if (!rc)
    rc = FP("recover.complete");
  if (!rc)
    rc = s3_complete_multipart_if(t->m->s3, r->bucket, r->key,
                                  pp->upload_id, pe, n,
                                  o->n_headers ? o->headers : NULL, etag);
  free(pe);
  free(etags);
  return rc;
}

static int put_parts(const struct fsx_recover_io *t,
                     const struct fsx_stage_rec *r, const char *path, int fd,
                     const unsigned char *data, uint64_t held, uint64_t size,
                     const struct s3_put_opts *o, char *reason,
                     size_t reasonlen)
{
  struct fsx_mount *m = t->m;
  struct s3_part_etag *pe = NULL;
  char (*etags)[S3_ETAG_MAX] = NULL, etag[S3_ETAG_MAX], *id = NULL;
  struct s3_put_opts co;
  uint64_t s, l;
  unsigned n = fsx_wb_part_of(r->part_size, size - 1, &s, &l) + 1;
  time_t since;
  bool sent = false;
  unsigned orphans;
  long jid;
  int rc, arc;

  pe = calloc(n, sizeof(*pe));
  etags = calloc(n, sizeof(*etags));
  if (!pe || !etags) {
    rc = -ENOMEM;
    goto free_lists;
  }
  if (r->resume) /* streamed: take up its upload (the caller ends it) */
    return resume_parts(t, r, path, fd, data, held, size, o, pe, etags, n,
                        reason, reasonlen);
  since = time(NULL);
  jid = fsx_stage_note_create(m->stage, r->bucket, r->key, since);
  if (jid < 0) {
    rc = (int)jid;
    goto free_lists;
  }
  co = *o; /* the condition goes on the completion */
  co.headers = NULL;
  co.n_headers = 0;
  rc = s3_create_multipart(m->s3, r->bucket, r->key, &co, &id, &orphans);
  if (rc || orphans)
    atomic_fetch_add(&m->st.uploads_unknown,
                     fsx_stage_unknown(r->bucket, r->key, since, rc,
                                       orphans));
  if (rc) {
    fsx_stage_forget_upload(m->stage, jid);
    goto free_lists;
  }
  if ((rc = fsx_stage_set_upload(m->stage, jid, r->bucket, r->key, id)))
    goto abort_upload;
  for (unsigned k = 0; k < n && !rc; k++) {
    fsx_wb_part_span(r->part_size, k, &s, &l);
    if (s + l > size)
      l = size - s;
    rc = upload_part(t, r->bucket, r->key, id, (int)k + 1, data + s,
                     (size_t)l, etags[k]);
    pe[k] = (struct s3_part_etag){(int)k + 1, etags[k]};
  }
  if (!rc)
    rc = FP("recover.complete");
  /* marked before the completion is sent (unmarked, none is: a crash
     after it would find an upload to abort without looking) */
  if (!rc)
    rc = fsx_stage_mark_completing(m->stage, jid, r->bucket, r->key, id);
  if (!rc) {
    sent = true;
    rc = s3_complete_multipart_if(m->s3, r->bucket, r->key, id, pe, n,
                                  o->n_headers ? o->headers : NULL, etag);
  }
  if (!rc) {
    fsx_stage_forget_upload(m->stage, jid);
    goto free_id;
  }
abort_upload:
  /* a completion sent may have landed (its answer lost, RGW killed as it
     completed): then the file is up, and the upload is the object; an
     error looking aborts nothing (the record stays) */
  arc = sent ? fsx_etag_upload_landed(m->s3, r->bucket, r->key, id) : 0;
  if (arc == 1) {
    log_notice("%s: %s: its completion landed (the answer said: %s)",
               r->bucket, r->key, strerror(-rc));
    fsx_stage_forget_upload(m->stage, jid);
    rc = 0;
    goto free_id;
  }
  if (!arc)
    arc = s3_abort_multipart(m->s3, r->bucket, r->key, id);
  if (!arc || arc == -ENOENT) /* (gone: nothing left to abort) */
    fsx_stage_forget_upload(m->stage, jid);
free_id:
  free(id);
free_lists:
  free(pe);
  free(etags);
  return rc;
}

/*
 * The size to upload: a streamed file's (r->sent) from its record, checked
 * against what else the record says (its staging file lacks what only the
 * upload holds); else the staging file's, which a record that says one
 * must agree with. -ENOTRECOVERABLE with why: the file is set aside.
 */
static int check_size(const struct fsx_stage_rec *r, uint64_t held,
                      uint64_t *size, char *reason, size_t reasonlen)
{
  uint64_t s, l;

  if (!r->sent) {
    if (!r->has_size || r->size == held)
      return 0;
    snprintf(reason, reasonlen, "its staging file holds %" PRIu64 " bytes, "
             "its record says %" PRIu64, held, r->size);
    return -ENOTRECOVERABLE;
  }
  if (!r->has_size) {
    snprintf(reason, reasonlen, "its record, of an older version, does not "
             "say the size of the file its upload began");
    return -ENOTRECOVERABLE;
  }
  if (!r->size || r->size < r->sent || held > r->size ||
      r->size > fsx_wb_max_size(r->part_size) ||
      fsx_wb_part_of(r->part_size, r->size - 1, &s, &l) >= FSX_WB_MAX_PARTS) {
    snprintf(reason, reasonlen, "its record says %" PRIu64 " bytes, %" PRIu64
             " of them sent, and its staging file holds %" PRIu64 ": not one "
             "file", r->size, r->sent, held);
    return -ENOTRECOVERABLE;
  }
  *size = r->size;
  return 0;
}

/* A streamed file's upload completed by the dead mount (its answer lost):
   the object's ETag is that of the parts its record lists, all of them. */
static bool completed_from(const struct fsx_stage_rec *r, uint64_t size,
                           const char *etag)
{
  const struct fsx_stage_parts *pp = r->resume;
  uint64_t s, l;
  unsigned n = fsx_wb_part_of(r->part_size, size - 1, &s, &l) + 1;
  const char **v;
  bool same = pp->n == n;

  v = same ? calloc(n, sizeof(*v)) : NULL;
  for (unsigned i = 0; v && same && i < n; i++) {
    same = pp->pe[i].part_number == (int)i + 1;
    v[i] = pp->pe[i].etag;
  }
  same = v && same && fsx_etag_is_multipart_of(etag, v, n);
  free(v);
  return same;
}

/*
 * A file set aside (r->keep_only): the old object's bytes it never read
 * filled in from exactly that version, so that the file kept is whole. 1
 * when they are (or none was missing), reason empty; -EAGAIN when the
 * server could not say (the next mount tries again); else a negative
 * errno, reason saying what reads as zeros. Never 0: nothing is uploaded.
 */
static int fill_base(const struct fsx_recover_io *t,
                     const struct fsx_stage_rec *r, int fd, int map_fd,
                     char *reason, size_t reasonlen)
{
  struct s3_object_meta cur;
  uint8_t *map = NULL;
  uint64_t miss = 0;
  int rc;

  reason[0] = '\0';
  if (!r->map_ok || (rc = missing_bytes(map_fd, r->base_len, &map, &miss))) {
    snprintf(reason, reasonlen, "its block map is unreliable: which bytes "
             "are the old object's is unknown, and those read as zeros");
    free(map);
    return -EBADMSG;
  }
  if (!miss) {
    free(map);
    return 1;
  }
  rc = head(t, r->bucket, r->key, &cur); /* (-ENOENT: deleted since) */
  if (!rc)
    rc = strcmp(cur.etag, r->base_etag) ? -ESTALE
                                        : fetch_missing(t, r, fd, map);
  s3_object_meta_cleanup(&cur);
  if (rc && rc != -ESTALE && rc != -ENOENT && transient(rc)) {
    say_transient(rc, "reading the rest of the old object", reason,
                  reasonlen);
    rc = -EAGAIN;
  } else if (rc) {
    snprintf(reason, reasonlen, "%" PRIu64 " bytes of the old object (ETag "
             "%s) it never read are zeros (%s)", miss, r->base_etag,
             rc == -ESTALE || rc == -ENOENT ? "the object changed since"
                                            : strerror(-rc));
  }
  free(map);
  return rc ? rc : 1;
}

int fsx_recover_file(const struct fsx_recover_io *t,
                     const struct fsx_stage_rec *r, const char *path, int fd,
                     int map_fd, char *reason, size_t reasonlen)
{
  struct fsx_mount *m = t->m;
  struct s3_object_meta cur;
  struct s3_kv cond;
  struct fsx_wopts w;
  struct fsx_wmeta mt;
  char etag[S3_ETAG_MAX];
  uint8_t *map = NULL;
  void *data = NULL;
  struct stat st;
  uint64_t size, held, miss = 0;
  bool exists = false, ok;
  int rc = 0;

  if (r->keep_only)
    return r->base_etag[0] && r->base_len
               ? fill_base(t, r, fd, map_fd, reason, reasonlen)
               : 1;
  if (fstat(fd, &st))
    return -errno;
  held = size = (uint64_t)st.st_size;
  if ((rc = check_size(r, held, &size, reason, reasonlen)))
    return rc;
  if (r->base_etag[0] && r->base_len &&
      (!r->map_ok || (rc = missing_bytes(map_fd, r->base_len, &map, &miss)))) {
    /* blocks not ours would be filled from the object over ours */
    snprintf(reason, reasonlen, "its block map is unreliable (which bytes "
             "are the old object's is unknown; those read as zeros)");
    rc = rc ? rc : -EBADMSG;
    goto free_map;
  }
  rc = head(t, r->bucket, r->key, &cur);
  if (rc && rc != -ENOENT) {
    if (rc == -ECANCELED)
      say_transient(rc, "not asked", reason, reasonlen);
    else
      snprintf(reason, reasonlen, "the server could not be asked: %s",
               strerror(-rc));
    rc = -EAGAIN; /* for the next mount: nothing is known yet */
    goto free_map;
  }
  exists = !rc;
  if (held && (data = mmap(NULL, (size_t)held, PROT_READ, MAP_SHARED, fd,
                           0)) == MAP_FAILED) {
    data = NULL;
    rc = -errno;
    snprintf(reason, reasonlen, "staging file: %s", strerror(-rc));
    goto free_meta;
  }
  ok = exists ? r->base_etag[0] && !strcmp(cur.etag, r->base_etag)
              : !r->base_etag[0];
  if (!ok) {
    /* the dead mount's own upload may have finished */
    if (exists && !miss && cur.size == size &&
        (r->resume ? completed_from(r, size, cur.etag)
                   : fsx_etag_holds(cur.etag, data, size, r->part_size))) {
      rc = 0;
      goto unmap;
    }
    rc = -ESTALE;
    if (exists)
      snprintf(reason, reasonlen, "the object changed on the server since "
               "(ETag %s, was %s)", cur.etag,
               r->base_etag[0] ? r->base_etag : "none");
    else
      snprintf(reason, reasonlen, "the object was deleted on the server");
    if (miss)
      snprintf(reason + strlen(reason), reasonlen - strlen(reason),
               "; %" PRIu64 " bytes of the old object were never read and "
               "are zeros", miss);
    goto unmap;
  }
  if (miss && (rc = fetch_missing(t, r, fd, map))) {
    if (transient(rc)) {
      say_transient(rc, "reading the rest of the old object", reason,
                    reasonlen);
      rc = -EAGAIN;
    } else {
      snprintf(reason, reasonlen, "reading the rest of the old object: %s",
               strerror(-rc));
    }
    goto unmap;
  }
  memset(&mt, 0, sizeof(mt));
  mt.mode = (mode_t)r->mode;
  mt.uid = (uid_t)r->uid;
  mt.gid = (gid_t)r->gid;
  mt.has_mtime = true;
  mt.mtime.tv_sec = r->has_mtime ? (time_t)r->mtime : st.st_mtime;
  mt.mtime.tv_nsec = r->has_mtime ? r->mtime_ns : 0;
  mt.has_ctime = true;
  mt.ctime = mt.mtime;
  if (r->has_ctime)
    mt.ctime = (struct timespec){(time_t)r->ctime, r->ctime_ns};
  mt.has_atime = r->has_atime;
  mt.atime.tv_sec = (time_t)r->atime;
  mt.atime.tv_nsec = r->atime_ns;
  if ((rc = fsx_wopts_make(m, r->bucket, r->key, exists, &mt, &w))) {
    snprintf(reason, reasonlen, "the server could not be asked: %s",
             strerror(-rc));
    rc = transient(rc) ? -EAGAIN : rc;
    goto unmap;
  }
  /* the PUT itself checks the version (RGW and S3 honour both; RGW
     compares If-Match on a PUT unquoted, and refuses the quoted form) */
  cond = exists ? (struct s3_kv){"If-Match", r->base_etag}
                : (struct s3_kv){"If-None-Match", "*"};
  w.o.headers = &cond;
  w.o.n_headers = 1;
  if ((rc = FP("recover.put"))) /* (as the server's failure) */
    ;
  else if (size <= r->part_size && !r->resume)
    rc = put_object(t, r->bucket, r->key, data, (size_t)size, &w.o, etag);
  else /* the completion carries the condition (RGW 16 ignores it there:
          the HEAD above was the check) */
    rc = put_parts(t, r, path, fd, data, held, size, &w.o, reason,
                   reasonlen);
  fsx_wopts_cleanup(&w);
  if (rc && transient(rc)) {
    /* the next mount asks again (and finds our bytes there, should this
       upload have landed after all) */
    say_transient(rc, "upload not finished", reason, reasonlen);
    rc = -EAGAIN;
  } else if (rc && rc != -ENOTRECOVERABLE && rc != -EIDRM) {
    snprintf(reason, reasonlen, "upload failed: %s",
             rc == -ESTALE || rc == -EBUSY ? "the object changed meanwhile"
                                           : strerror(-rc));
  }
unmap:
  if (data)
    munmap(data, (size_t)held);
free_meta:
  if (exists)
    s3_object_meta_cleanup(&cur);
free_map:
  free(map);
  return rc;
}
