/*
 * fsx_wb_upload: the upload of a whole file at commit (write-back state,
 * see fsx_wb.h): one PutObject, or the rest of a multipart upload (the
 * session, its start, end and parts, is fsx_wb_part.c's) and its
 * completion.
 *
 * Every upload is conditional: a PUT carries If-Match with the ETag of the
 * object it replaces (If-None-Match: * where there was none), and so does
 * the completion of a multipart upload. A request that was given up (timed
 * out, its connection cut) but reaches the server later therefore fails
 * once anything newer was stored: it cannot bring back older bytes. A 412
 * is settled by looking: the object already holding our bytes (an earlier
 * attempt landed, its answer lost) is success; another writer's object is
 * replaced (the last close wins, as on a local disk), conditionally again.
 * Called with wb->lock held (the commit's caller).
 */
#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/meta/fsx_etag.h"
#include "fs/mem/fsx_pool.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb_i.h"

/* tries of a conditional write that keeps meeting another writer */
#define COND_TRIES 3
#define COMPLETE_SKEW_S 60 /* the clocks of server and client apart, at most */

/* May part k ([s, s+l)) be copied from the base on the server? */
static bool copyable(const struct fsx_wb *wb, uint64_t s, uint64_t l)
{
  if (!wb->base_etag[0] || s + l > wb->base_len)
    return false;
  for (uint64_t b = s / FSX_WB_BLOCK; b * FSX_WB_BLOCK < s + l; b++)
    if (b < wb->nblocks &&
        (wb->present[b / 8] & (1u << (b % 8))))
      return false;
  return true;
}

/*
 * PutObject of [buf, buf + len), with a token when the data plane is up
 * (over an existing object, only once the server has answered a token).
 * *keep is set to NULL when buf must stay mapped (a token outstanding).
 */
static int put_object(struct fsx_mount *m, const char *bucket,
                      const char *key, const void *buf, size_t len,
                      const struct s3_put_opts *o, bool existing,
                      char etag[S3_ETAG_MAX], void **keep)
{
  struct s3_req *r = s3_put_object_req(m->s3, bucket, key, buf, len, o);
  bool retired;
  int rc = 0;

  if (!r) /* says why */
    return s3_put_object(m->s3, bucket, key, buf, len, o, etag);
  if (existing && !s3_client_rdma_known(m->s3)) {
    /* no token until the server has shown it knows them: one that ignored
       it would store an empty object over this one until our resend */
    s3_req_submit(r, NULL, NULL);
    s3_req_wait(r);
    retired = false;
  } else {
    rc = fsx_rdma_run(m, r, false, (void *)(uintptr_t)buf, len, &retired);
  }
  if (!rc)
    rc = s3_put_object_result(r, etag);
  if (retired)
    *keep = NULL;
  s3_req_destroy(r);
  return rc;
}

/* The staging file mapped for reading (NULL for an empty file); private
   for RDMA registration, as a part's (fsx_wb_part.c). */
static int map_file(struct fsx_wb *wb, void **out)
{
  *out = NULL;
  if (!wb->size)
    return 0;
  *out = mmap(NULL, (size_t)wb->size, PROT_READ, MAP_PRIVATE, wb->fd, 0);
  if (*out == MAP_FAILED) {
    *out = NULL;
    return -errno;
  }
  return 0;
}

/*
 * The condition of a write that replaces what the HEAD in w found (or
 * creates the object where none was); base: the ETag of the object this
 * file stored, where no HEAD was asked. RGW compares If-Match on a PUT
 * unquoted and refuses the quoted form; S3 takes either.
 */
static struct s3_kv condition(const struct fsx_wopts *w, const char *base)
{
  if (w->have_cur)
    return (struct s3_kv){"If-Match", w->cur.etag};
  return base ? (struct s3_kv){"If-Match", base}
              : (struct s3_kv){"If-None-Match", "*"};
}

/*
 * A server that does not take conditions (501 NotImplemented, as S3 itself
 * did before 2024): once a write sent again without one has succeeded,
 * remembered for the mount and said once.
 */
static void note_no_cond(struct fsx_mount *m)
{
  if (!atomic_exchange(&m->no_cond, true))
    log_warn("the S3 server does not take conditional writes (If-Match, "
             "If-None-Match: 501): uploads go without them, so a write given "
             "up that reaches the server late can replace a newer one");
}

/* Does the object found hold this file already, bytes and metadata (an
   earlier attempt stored it and its answer was lost, say)? */
static bool already_there(const struct fsx_wopts *w, const void *map,
                          uint64_t size, const struct fsx_wmeta *mt)
{
  return w->have_cur && w->cur.size == size && fsx_meta_matches(&w->cur, mt) &&
         fsx_etag_holds(w->cur.etag, map, size, size + 1);
}

/* One line when the object is not the one this file was based on. */
static void note_replaced(const struct fsx_wb *wb, const char *key,
                          const struct fsx_wopts *w)
{
  if (w->have_cur && strcmp(w->cur.etag, wb->base_etag))
    log_notice("%s: changed on the server since it was opened (ETag %s, "
               "was %s): replaced by this file (the last close wins)",
               key, w->cur.etag, wb->base_etag[0] ? wb->base_etag : "none");
}

bool fsx_wb_must_look(struct fsx_mount *m, const struct fsx_wb *wb)
{
  return wb->on_server && (!wb->base_plain || !wb->base_etag[0] ||
                           atomic_load(&m->no_cond));
}

int fsx_wb_put_single(struct fsx_mount *m, struct fsx_wb *wb, const char *key,
                      char etag[S3_ETAG_MAX])
{
  struct fsx_wopts w;
  struct fsx_wmeta mt;
  struct s3_kv cond;
  bool look = fsx_wb_must_look(m, wb), carried = false;
  void *run0 = NULL;
  bool plain = atomic_load(&m->no_cond), was_plain = plain;
  void *map = NULL;
  int rc = FP("commit.put");

  if (rc)
    return rc;

  /* streamed, but the first part's run does not hold it all (the base
     does): through the staging file */
  if (wb->stream && wb->size && !fsx_wb_part(wb, 0).run &&
      (rc = fsx_wb_unstream(m, wb, true, NULL)))
    return rc;
  if ((rc = fsx_wb_fetch(m, wb, 0, wb->size)))
    return rc;
  /* a stream cut back to one part: its upload goes first, so that a
     completion given up earlier cannot land over this PUT */
  fsx_wb_end_upload(m, wb, true);
  fsx_wb_effective_meta(wb, &mt);
  if (wb->stream) /* the whole file is in its first run */
    run0 = map = wb->size ? fsx_wb_part(wb, 0).run : NULL;
  for (int t = 0; t < COND_TRIES; t++) {
    if (!map && !wb->stream && (rc = map_file(wb, &map)))
      break;
    if ((rc = fsx_wopts_make(m, fsx_wb_bucket(wb), key, look, &mt, &w)))
      break;
    if (already_there(&w, map, wb->size, &mt)) {
      snprintf(etag, S3_ETAG_MAX, "%s", w.cur.etag);
      carried = true; /* (its Content-Type and all) */
      fsx_wopts_cleanup(&w);
      break;
    }
    note_replaced(wb, key, &w);
    cond = condition(&w, !look && wb->on_server ? wb->base_etag : NULL);
    w.o.headers = &cond;
    w.o.n_headers = plain ? 0 : 1;
    log_debug("%s: PUT of %" PRIu64 " bytes, %s: %s", key, wb->size,
              plain ? "no condition" : cond.key, cond.val);
    rc = put_object(m, fsx_wb_bucket(wb), key, map, (size_t)wb->size, &w.o,
                    w.have_cur || (wb->on_server && !look), etag, &map);
    carried = w.have_cur;
    fsx_wopts_cleanup(&w);
    if (rc == -EOPNOTSUPP && !plain) {
      plain = true; /* 501: again without the condition */
      continue;
    }
    /* 412 (-ESTALE), 404 (If-Match on a key deleted meanwhile) or 409
       (ConditionalRequestConflict): something else is there now, look */
    if (rc != -ESTALE && rc != -ENOENT && rc != -EBUSY)
      break;
    look = true;
  }
  if (run0 && !map) {
    /* a token still outstanding: the run is never lent again (a server
       only reads it), its bytes kept in the staging file for the retry */
    if (!fsx_wb_pwrite_all(wb->fd, run0, (size_t)wb->size, 0)) {
      pthread_mutex_lock(&wb->plock);
      wb->parts[0].run = NULL;
      pthread_mutex_unlock(&wb->plock);
      fsx_pool_retire(m->pool, run0);
      fsx_wb_stream_release(m, wb);
      wb->stream = false;
    } /* else the run stays the part's: sent again from it */
  } else if (map && !wb->stream) {
    munmap(map, (size_t)wb->size);
  }
  if (!rc && plain && !was_plain)
    note_no_cond(m);
  if (!rc)
    wb->base_plain = !carried;
  return rc;
}

/* Does the object now hold the n parts pe (our completion landed)? Made
   at not_before or later too, when not 0 (an object of the same parts
   stored earlier is not this upload's completion). */
static bool completed_ours(struct fsx_mount *m, const char *bucket,
                           const char *key, const struct s3_part_etag *pe,
                           unsigned n, time_t not_before,
                           char etag[S3_ETAG_MAX])
{
  struct s3_object_meta cur;
  const char **v = calloc(n, sizeof(*v));
  bool ours = false;

  if (v && s3_head_object(m->s3, bucket, key, &cur) == 0) {
    for (unsigned k = 0; k < n; k++)
      v[k] = pe[k].etag;
    ours = fsx_etag_is_multipart_of(cur.etag, v, n) &&
           (!not_before || cur.mtime >= not_before);
    if (ours)
      snprintf(etag, S3_ETAG_MAX, "%s", cur.etag);
    s3_object_meta_cleanup(&cur);
  }
  free(v);
  return ours;
}

/*
 * CompleteMultipartUpload, conditional on the object the upload replaces
 * (its base, or none). A 412, 404 or 409 is settled by looking: our parts
 * already there (an earlier attempt landed) is success; another writer's
 * object is replaced, conditionally on it; a key deleted meanwhile (an
 * If-Match answered 404) is made anew. -ENOENT: the upload is gone
 * (NoSuchUpload, or a 409 that ended it: begin anew).
 */
static int complete(struct fsx_mount *m, struct fsx_wb *wb, const char *key,
                    const struct s3_part_etag *pe, unsigned n,
                    char etag[S3_ETAG_MAX])
{
  const char *bucket = fsx_wb_bucket(wb);
  struct s3_object_meta cur;
  char want[S3_ETAG_MAX];
  bool plain = atomic_load(&m->no_cond), was_plain = plain;
  struct s3_kv cond = wb->on_server && wb->base_etag[0]
                          ? (struct s3_kv){"If-Match", wb->base_etag}
                          : (struct s3_kv){"If-None-Match", "*"};
  int rc = -ESTALE, hrc;

  if (!wb->complete_sent) { /* (marked in cache.dir too: a later mount's
                               recovery looks before it aborts; unmarked,
                               none is sent: the commit fails, kept) */
    if ((hrc = fsx_stage_mark_completing(m->stage, wb->journal_id, bucket,
                                         wb->upload_key, wb->upload_id))) {
      log_err("%s: marking upload %s completing in cache.dir: %s", key,
              wb->upload_id, strerror(-hrc));
      return -EIO; /* (never -ENOENT: that would say the upload is gone) */
    }
    wb->complete_sent = true;
  }
  for (int t = 0; t < COND_TRIES && rc == -ESTALE; t++) {
    rc = s3_complete_multipart_if(m->s3, bucket, key, wb->upload_id, pe, n,
                                  plain ? NULL : &cond, etag);
    if (rc == -EOPNOTSUPP && !plain) {
      plain = true; /* 501: again without the condition */
      rc = -ESTALE;
      continue;
    }
    if (rc && rc != -ESTALE && rc != -ENOENT && rc != -EBUSY &&
        completed_ours(m, bucket, key, pe, n,
                       wb->upload_since - COMPLETE_SKEW_S, etag)) {
      /* the answer lost, or (RGW killed as it completed) the upload left
         "in progress", answered 500 for minutes: the object is ours (made
         since the upload began, the servers' clocks a minute apart at
         most: the same parts stored before are another's completion) */
      log_notice("%s: its upload's completion landed (the answer said: "
                 "%s)", key, strerror(-rc));
      return 0;
    }
    if (rc != -ESTALE && rc != -ENOENT && rc != -EBUSY)
      break;
    if (completed_ours(m, bucket, key, pe, n, 0, etag))
      return 0;
    if (rc == -EBUSY) /* S3: the upload is gone; begin anew */
      return -ENOENT;
    hrc = s3_head_object(m->s3, bucket, key, &cur);
    if (hrc && hrc != -ENOENT)
      return hrc;
    if (hrc) { /* no object: If-Match answered 404, or NoSuchUpload */
      if (rc == -ENOENT && (plain || !strcmp(cond.key, "If-None-Match")))
        return -ENOENT; /* nothing to be conditional on: the upload */
      cond = (struct s3_kv){"If-None-Match", "*"};
      rc = -ESTALE;
      continue;
    }
    snprintf(want, sizeof(want), "%s", cur.etag);
    s3_object_meta_cleanup(&cur);
    if (rc == -ENOENT)
      return -ENOENT; /* the object is there: the upload is what is gone */
    log_notice("%s: changed on the server since it was opened (ETag %s, "
               "was %s): replaced by this file (the last close wins)",
               key, want, wb->base_etag[0] ? wb->base_etag : "none");
    cond = (struct s3_kv){"If-Match", want};
  }
  if (!rc && plain && !was_plain)
    note_no_cond(m);
  return rc;
}

int fsx_wb_complete_parts(struct fsx_mount *m, struct fsx_wb *wb,
                          const char *key, unsigned n,
                          char etag[S3_ETAG_MAX])
{
  struct s3_part_etag *pe = calloc(n, sizeof(*pe));
  int rc = pe ? 0 : -ENOMEM;

  pthread_mutex_lock(&wb->plock);
  for (unsigned k = 0; !rc && k < n; k++) {
    if (k >= wb->nparts || wb->parts[k].state != PART_DONE ||
        wb->parts[k].stale)
      rc = -EIO;
    else
      pe[k] = (struct s3_part_etag){(int)k + 1, wb->parts[k].etag};
    /* (stable: nothing is on the wire) */
  }
  pthread_mutex_unlock(&wb->plock);
  if (!rc)
    rc = FP("commit.complete");
  if (!rc)
    rc = complete(m, wb, key, pe, n, etag);
  free(pe);
  return rc;
}

int fsx_wb_put_multipart(struct fsx_mount *m, struct fsx_wb *wb,
                         const char *key, char etag[S3_ETAG_MAX])
{
  bool past = false;
  uint64_t s, l;
  unsigned n;
  int rc;

  n = fsx_wb_part_of(wb->psize, wb->size - 1, &s, &l) + 1;
  /* parts sent past the end (the file was cut since): some servers (RGW)
     refuse to complete an upload without all of its parts, so start over */
  fsx_wb_wait_sent(wb);
  pthread_mutex_lock(&wb->plock);
  for (unsigned k = n; k < wb->nparts && !past; k++)
    past = wb->parts[k].state != PART_NONE;
  pthread_mutex_unlock(&wb->plock);
  /* begun under another name (renamed since): aborted there, begun anew
     here; never completed into a name the file no longer has */
  if (past || (wb->upload_id && strcmp(wb->upload_key, key))) {
    if (wb->stream) { /* its parts sent are only in that upload */
      log_err("%s: streamed upload begun as %s cannot be restarted",
              key, wb->upload_key);
      return -EIO;
    }
    fsx_wb_end_upload(m, wb, true);
  }
  if (!wb->upload_id && (rc = fsx_wb_start_upload(m, wb)))
    return rc;
  if ((rc = fsx_wb_grow_parts(wb, n)))
    return rc;
  pthread_mutex_lock(&wb->plock);
  wb->part_err = 0;
  pthread_mutex_unlock(&wb->plock);
  for (unsigned k = 0; k < n && !rc; k++) {
    struct fsx_part p = fsx_wb_part(wb, k);
    fsx_wb_part_span(wb->psize, k, &s, &l);
    if (s + l > wb->size)
      l = wb->size - s;
    if (p.state == PART_DONE && !p.stale && p.len == l)
      continue;
    if (copyable(wb, s, l)) {
      rc = fsx_wb_copy_part(m, wb, k);
    } else if (p.run || !(rc = fsx_wb_fetch(m, wb, s, s + l))) {
      rc = fsx_wb_send_part(m, wb, k); /* from its run, or staged */
    }
  }
  fsx_wb_wait_sent(wb);
  pthread_mutex_lock(&wb->plock);
  if (!rc)
    rc = wb->part_err;
  pthread_mutex_unlock(&wb->plock);
  if (!rc)
    rc = fsx_wb_complete_parts(m, wb, key, n, etag);
  if (wb->stream && rc) /* its first parts are only in this upload */
    return rc == -ENOENT || rc == -EINVAL ? -EIO : rc;
  if (!rc)
    fsx_wb_end_upload(m, wb, false);
  else if (rc == -ENOENT) /* the upload is gone (NoSuchUpload) */
    fsx_wb_end_upload(m, wb, false);
  else if (rc == -EINVAL) /* refused as it is (InvalidPart...): anew */
    fsx_wb_end_upload(m, wb, true);
  return rc;
}
