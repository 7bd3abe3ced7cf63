/*
 * fsx_wb_io: a file's staging-file I/O (design in fsx_wb.h): base blocks
 * fetched on demand (a ranged GET with If-Match on the base's ETag) and
 * marked in the block map, writes (with the parts they make stale, and
 * the eager upload of parts a sequential writer has passed), reads and
 * truncates. wb->lock is held across all of it: taken by write, read,
 * truncate and fetch_all, held by the callers of fsx_wb_fetch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/write/fsx_space.h"
#include "fs/write/fsx_wb_i.h"

#define FETCH_RUN_BLOCKS 128u /* 8 MiB per GET */

/* The largest file: what 10000 parts hold, and S3's 5 TiB. */
static uint64_t size_limit(const struct fsx_wb *wb)
{
  uint64_t geo = fsx_wb_max_size(wb->psize), s3 = 5ull << 40;

  return geo < s3 ? geo : s3;
}

/* ---- base blocks ---- */

bool fsx_wb_block_present(const struct fsx_wb *wb, uint64_t b)
{
  return b >= wb->nblocks || b * FSX_WB_BLOCK >= wb->base_len ||
         (wb->present[b / 8] & (1u << (b % 8)));
}

/* Set the blocks [b0, b1) present, in the map file too (the data is
   written first: a block marked is a block held). */
static void mark_present(struct fsx_wb *wb, uint64_t b0, uint64_t b1)
{
  uint64_t lo = UINT64_MAX, hi = 0;

  for (uint64_t b = b0; b < b1 && b < wb->nblocks; b++) {
    uint8_t bit = (uint8_t)(1u << (b % 8));
    if (wb->present[b / 8] & bit)
      continue;
    wb->present[b / 8] |= bit;
    lo = lo < b / 8 ? lo : b / 8;
    hi = b / 8 + 1;
  }
  if (!hi || wb->map_bad)
    return;
  if (wb->map_fd < 0 ||
      pwrite(wb->map_fd, wb->present + lo, (size_t)(hi - lo), (off_t)lo) !=
          (ssize_t)(hi - lo)) {
    /* recovery will not trust the map: it keeps the file instead */
    log_warn("%s: block map: %s", wb->path,
             wb->map_fd < 0 ? "none" : strerror(errno));
    wb->map_bad = true;
    fsx_wb_journal(wb, true);
  }
}

int fsx_wb_pwrite_all(int fd, const char *p, size_t len, uint64_t off)
{
  while (len) {
    ssize_t n = pwrite(fd, p, len, (off_t)off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? -errno : -EIO;
    p += n;
    len -= (size_t)n;
    off += (uint64_t)n;
  }
  return 0;
}

int fsx_wb_get_base(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                    size_t len, void *buf, bool *retired)
{
  char quoted[FSX_ETAG_MAX + 2];
  struct s3_req *r;
  size_t got = 0;
  int rc;

  *retired = false;
  r = s3_get_object_req(m->s3, fsx_wb_bucket(wb), fsx_wb_key(wb),
                        off, len, buf);
  if (!r)
    return -ENOMEM;
  snprintf(quoted, sizeof(quoted), "\"%s\"", wb->base_etag);
  rc = s3_req_add_header(r, "If-Match", quoted);
  if (!rc && !(rc = fsx_rdma_run(m, r, true, buf, len, retired)))
    rc = s3_get_object_result(r, &got);
  s3_req_destroy(r);
  if (!rc && got != len)
    rc = -ESTALE; /* shorter than it was */
  atomic_fetch_add(&m->st.base_fetches, 1);
  atomic_fetch_add(&m->st.base_fetch_bytes, got);
  return rc;
}

int fsx_wb_fetch(struct fsx_mount *m, struct fsx_wb *wb, uint64_t from,
                 uint64_t to)
{
  uint64_t b = from / FSX_WB_BLOCK;
  uint64_t e = (to + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
  int rc;

  if (e > wb->nblocks)
    e = wb->nblocks;
  while (b < e) {
    uint64_t r = b, off, end;
    bool retired;
    char *buf;
    if (fsx_wb_block_present(wb, b)) {
      b++;
      continue;
    }
    while (r < e && r - b < FETCH_RUN_BLOCKS && !fsx_wb_block_present(wb, r))
      r++;
    off = b * FSX_WB_BLOCK;
    end = r * FSX_WB_BLOCK < wb->base_len ? r * FSX_WB_BLOCK : wb->base_len;
    if ((rc = fsx_space_fetch(m->space, end - off)))
      return rc;
    buf = malloc((size_t)(end - off));
    if (!buf)
      return -ENOMEM;
    rc = fsx_wb_get_base(m, wb, off, (size_t)(end - off), buf, &retired);
    if (!rc)
      rc = fsx_wb_pwrite_all(wb->fd, buf, (size_t)(end - off), off);
    if (!retired)
      free(buf);
    if (rc) {
      log_err("%s: fetching bytes %llu-%llu of the object being changed: %s",
              fsx_wb_key(wb), (unsigned long long)off,
              (unsigned long long)end, strerror(-rc));
      return rc;
    }
    mark_present(wb, b, r);
    fsx_space_settle(m->space, wb->fd, 0);
    b = r;
  }
  return 0;
}

/* Fetch the blocks that [off, off+len) covers only in part. */
static int fetch_edges(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                       uint64_t len)
{
  uint64_t end = off + len, first = off / FSX_WB_BLOCK;
  uint64_t last = (end - 1) / FSX_WB_BLOCK;
  int rc = 0;

  if (off % FSX_WB_BLOCK || end < (first + 1) * FSX_WB_BLOCK)
    rc = fsx_wb_fetch(m, wb, off, off + 1);
  if (!rc && last != first && end % FSX_WB_BLOCK)
    rc = fsx_wb_fetch(m, wb, end - 1, end);
  return rc;
}

/* ---- writes, reads, truncates ---- */

/* Parts a write into [off, off+len) changes: sent again at commit. */
static void mark_stale(struct fsx_wb *wb, uint64_t off, uint64_t len)
{
  uint64_t s, l;
  unsigned k = fsx_wb_part_of(wb->psize, off, &s, &l);

  pthread_mutex_lock(&wb->plock);
  for (; k < wb->nparts && s < off + len; k++) {
    if (wb->parts[k].state != PART_NONE)
      wb->parts[k].stale = true;
    fsx_wb_part_span(wb->psize, k + 1, &s, &l);
  }
  pthread_mutex_unlock(&wb->plock);
}

/* A sequential writer of a file with no base has passed whole parts: send
   them now, while it goes on (lock held). */
static int send_eager(struct fsx_mount *m, struct fsx_wb *wb)
{
  uint64_t s, l;
  int rc;

  for (;;) {
    if (wb->committing || wb->unlinked || wb->base_len)
      return 0;
    fsx_wb_part_span(wb->psize, wb->eager_next, &s, &l);
    if (s + l > wb->size || wb->eager_next + 1 >= FSX_WB_MAX_PARTS)
      return 0;
    if ((rc = fsx_wb_grow_parts(wb, wb->eager_next + 1)))
      return rc;
    if (!wb->upload_id && (rc = fsx_wb_start_upload(m, wb)))
      return rc;
    if (fsx_wb_part(wb, wb->eager_next).state == PART_NONE &&
        (rc = fsx_wb_send_part(m, wb, wb->eager_next)))
      return rc;
    wb->eager_next++;
  }
}

ssize_t fsx_wb_write(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                     struct fsx_wsrc *src, size_t len, bool append)
{
  uint64_t b0, b1, held;
  ssize_t done = 0;
  int rc = 0;

  if (!len)
    return 0;
  if ((rc = FP("wb.write")))
    return rc;
  pthread_mutex_lock(&wb->lock);
  while (wb->committing)
    pthread_cond_wait(&wb->cond, &wb->lock);
  if (wb->stream) { /* in order into pool runs, while it stays so */
    done = fsx_wb_stream_write(m, wb, append ? wb->size : off, src, len);
    if (done > 0) {
      atomic_fetch_add(&m->st.writes, 1);
      atomic_fetch_add(&m->st.write_bytes, (uint64_t)done);
    }
    if (done < 0 || (size_t)done == len || wb->stream) {
      pthread_mutex_unlock(&wb->lock); /* (a short write: not moved) */
      return done;
    }
    /* the rest through the staging file: stream is off now */
    off = (append ? wb->size : off + (uint64_t)done);
    len -= (size_t)done; /* src goes on where it stopped */
    append = false;
  }
  pthread_mutex_unlock(&wb->lock);
  /* before the lock: a wait for space must not hold up the file's commit */
  if ((rc = fsx_space_reserve(m->space, wb->fd, off, len, append, &held)))
    return rc;
  pthread_mutex_lock(&wb->lock);
  while (wb->committing)
    pthread_cond_wait(&wb->cond, &wb->lock);
  if (append)
    off = wb->size;
  if (off + len > size_limit(wb)) {
    rc = -EFBIG;
    goto out;
  }
  if ((rc = fetch_edges(m, wb, off, len)) ||
      (rc = fsx_wb_will_change(wb)) ||
      (rc = src->to_fd(src, wb->fd, off, len)))
    goto out;
  b0 = (off + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
  b1 = (off + len) / FSX_WB_BLOCK;
  mark_present(wb, b0, b1);
  if (off + len > wb->size) {
    pthread_mutex_lock(&wb->plock);
    wb->size = off + len;
    pthread_mutex_unlock(&wb->plock);
  }
  fsx_wb_set_dirty(wb);
  mark_stale(wb, off, len);
  if (off == wb->seq_end && !wb->base_len)
    rc = send_eager(m, wb);
  wb->seq_end = off + len;
  if (rc) /* the data is staged: the commit sends it again */
    log_warn("%s: early part upload: %s", fsx_wb_key(wb), strerror(-rc));
  rc = 0;
out:
  fsx_space_settle(m->space, wb->fd, held);
  pthread_mutex_unlock(&wb->lock);
  if (!rc) {
    atomic_fetch_add(&m->st.writes, !done);
    atomic_fetch_add(&m->st.write_bytes, len);
  }
  if (rc)
    return done ? done : rc;
  return done + (ssize_t)len;
}

ssize_t fsx_wb_read(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                    void *buf, size_t len)
{
  ssize_t n = 0;
  int rc;

  pthread_mutex_lock(&wb->lock);
  if (wb->stream && fsx_wb_stream_read(wb, off, buf, len, &n))
    goto out;
  if ((rc = fsx_wb_unstream(m, wb, true, NULL))) {
    n = -EIO;
    goto out;
  }
  if (off >= wb->size)
    goto out;
  if (len > wb->size - off)
    len = (size_t)(wb->size - off);
  rc = fsx_wb_fetch(m, wb, off, off + len);
  if (rc) {
    n = rc == -ESTALE ? -ESTALE : -EIO;
    goto out;
  }
  while ((size_t)n < len) {
    ssize_t k = pread(wb->fd, (char *)buf + n, len - (size_t)n,
                      (off_t)(off + (uint64_t)n));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) { /* a hole at the end reads as zeros */
      if (k < 0) {
        n = -errno;
        goto out;
      }
      memset((char *)buf + n, 0, len - (size_t)n);
      n = (ssize_t)len;
      break;
    }
    n += k;
  }
out:
  pthread_mutex_unlock(&wb->lock);
  return n;
}

int fsx_wb_truncate(struct fsx_mount *m, struct fsx_wb *wb, uint64_t size)
{
  int rc = 0;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing)
    pthread_cond_wait(&wb->cond, &wb->lock);
  if (size > size_limit(wb)) {
    rc = -EFBIG;
    goto out;
  }
  if (wb->stream && !size) { /* emptied: streams anew from nothing */
    fsx_wb_end_upload(m, wb, true);
    fsx_wb_stream_release(m, wb);
    wb->stream_sent = 0;
  } else if (wb->stream && size != wb->size &&
             (rc = fsx_wb_unstream(m, wb, true, NULL))) {
    goto out;
  }
  fsx_wb_wait_sent(wb); /* parts are mapped: never shrink under them */
  if (size < wb->base_len && size % FSX_WB_BLOCK &&
      (rc = fsx_wb_fetch(m, wb, size, size + 1)))
    goto out;
  if ((rc = fsx_wb_will_change(wb))) /* recorded as partial first */
    goto out;
  if (size < wb->base_len) {
    wb->base_len = size;
    fsx_wb_journal(wb, true);
  }
  if (size != wb->size && ftruncate(wb->fd, (off_t)size)) {
    rc = -errno;
    goto out;
  }
  if (size < wb->size)
    mark_stale(wb, size, wb->size - size);
  else if (size > wb->size)
    mark_stale(wb, wb->size, size - wb->size);
  pthread_mutex_lock(&wb->plock);
  wb->size = size;
  pthread_mutex_unlock(&wb->plock);
  if (wb->seq_end > size)
    wb->seq_end = size;
  fsx_wb_set_dirty(wb);
out:
  if (!rc && !size && m->pool && !wb->stream && !wb->unlinked) {
    /* emptied: written in order from here, it streams (fsx_wb_stream.c);
       a removed file never uploads, its bytes stay in the staging file */
    fsx_wb_end_upload(m, wb, true);
    wb->stream = true;
  }
  fsx_space_settle(m->space, wb->fd, 0); /* a cut frees space */
  pthread_mutex_unlock(&wb->lock);
  return rc;
}

int fsx_wb_fetch_all(struct fsx_mount *m, struct fsx_wb *wb, bool held)
{
  int rc;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing && !held)
    pthread_cond_wait(&wb->cond, &wb->lock);
  rc = fsx_wb_unstream(m, wb, true, NULL);
  if (!rc)
    rc = fsx_wb_fetch(m, wb, 0, wb->base_len);
  pthread_mutex_unlock(&wb->lock);
  return rc;
}
