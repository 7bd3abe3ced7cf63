/*
 * fsx_wb_stream: a new or emptied file written in order (design in
 * fsx_wb.h): its bytes go into runs of the mount's part-buffer pool
 * (fsx_pool), one run per part, and each part is uploaded from its run as
 * soon as the writer has passed it; the run goes back to the pool once the
 * server has the part. Nothing is written to the staging file.
 *
 * Anything else (a write elsewhere than the end, a truncate, a second
 * writer, a read of bytes no run holds, a pool with no run to lend) leaves
 * the stream path for good (fsx_wb_unstream): the runs' bytes are written
 * into the staging file, and the parts the server already has are
 * completed as the object under the file's key, which becomes the file's
 * base: they are then copied on the server (UploadPartCopy) at commit,
 * never sent again. The cost, stated in docs/mounting.md: one completion and,
 * until the file is closed, that shorter version visible under its name.
 *
 * Called with wb->lock held (fsx_wb_write_parts, whole parts straight from
 * a caller's buffer, takes it itself); a run's bytes belong to the writer
 * until its
 * part goes on the wire, then to the upload until part_done (engine
 * thread, wb->plock) gives it back.
 */
#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/mem/fsx_pool.h"
#include "fs/write/fsx_wb_i.h"

/* The staging file's base name (what a run's header names). */
static const char *stage_name(const struct fsx_wb *wb)
{
  const char *s = strrchr(wb->path, '/');

  return s ? s + 1 : wb->path;
}

/* Part k is passed: on the wire from its run (the upload begun first). */
static void send_passed(struct fsx_mount *m, struct fsx_wb *wb, unsigned k)
{
  int rc = 0;

  if (wb->unlinked) /* its run keeps the bytes, for the open handles */
    return;
  if (!wb->upload_id)
    rc = fsx_wb_start_upload(m, wb);
  if (!rc && fsx_wb_part(wb, k).state == PART_NONE)
    rc = fsx_wb_send_part(m, wb, k); /* (records how far it is sent) */
  if (rc) /* its run keeps the bytes: the commit sends it again */
    log_warn("%s: part %u: %s", fsx_wb_key(wb), k + 1, strerror(-rc));
}

/*
 * Appending to a file streamed and committed before (its object is the
 * base): the part's bytes the base holds, fetched into its new run.
 */
static int base_into_run(struct fsx_mount *m, struct fsx_wb *wb, unsigned k,
                         uint64_t s, char *run)
{
  uint64_t n = wb->base_len - s;
  bool retired;
  int rc = fsx_wb_get_base(m, wb, s, (size_t)n, run, &retired);

  if (!rc) {
    fsx_pool_filled(m->pool, run, n);
    return 0;
  }
  /* the run holds nothing valid: given back, unless a server may yet
     write there (then never lent again) */
  pthread_mutex_lock(&wb->plock);
  if (!retired)
    fsx_pool_put(m->pool, run);
  wb->parts[k].run = NULL;
  pthread_mutex_unlock(&wb->plock);
  return rc;
}

ssize_t fsx_wb_stream_write(struct fsx_mount *m, struct fsx_wb *wb,
                            uint64_t off, struct fsx_wsrc *src, size_t len)
{
  bool src_failed = false;
  size_t done = 0;
  int rc = 0;

  if (off != wb->size || off + len > fsx_wb_max_size(wb->psize) ||
      off + len > (5ull << 40))
    return fsx_wb_unstream(m, wb, true, NULL);
  if ((rc = fsx_wb_will_change(wb)))
    return rc;
  while (done < len) {
    uint64_t s, l, n;
    unsigned k = fsx_wb_part_of(wb->psize, off, &s, &l);
    char *run;
    /* the writer has gone past a part its run holds: sent (a part
       without a run is the base's, copied there at commit) */
    if (k && !fsx_wb_part(wb, k).run && fsx_wb_part(wb, k - 1).run &&
        fsx_wb_part(wb, k - 1).state == PART_NONE)
      send_passed(m, wb, k - 1);
    if ((rc = fsx_wb_grow_parts(wb, k + 1)))
      break;
    if (!(run = fsx_wb_part(wb, k).run)) {
      void *p;
      rc = fsx_pool_get(m->pool, (size_t)l, stage_name(wb), s, &p);
      if (rc) /* no run to lend: the rest through the staging file */
        break;
      run = p;
      pthread_mutex_lock(&wb->plock);
      wb->parts[k].run = run;
      pthread_mutex_unlock(&wb->plock);
      if (s < wb->base_len && (rc = base_into_run(m, wb, k, s, run)))
        break;
    }
    n = s + l - off < len - done ? s + l - off : len - done;
    /* a part sent before and written on (its last, after a commit that
       failed or an fsync): sent again from its run */
    pthread_mutex_lock(&wb->plock);
    if (wb->parts[k].state != PART_SENDING)
      wb->parts[k].state = PART_NONE;
    pthread_mutex_unlock(&wb->plock);
    if ((rc = src->to_mem(src, run + (off - s), (size_t)n))) {
      src_failed = true; /* where it stands is unknown: no going on */
      break;
    }
    fsx_pool_filled(m->pool, run, off - s + n);
    off += n;
    done += (size_t)n;
    pthread_mutex_lock(&wb->plock);
    wb->size = off;
    pthread_mutex_unlock(&wb->plock);
  }
  if (done) {
    atomic_fetch_add(&m->st.stream_bytes, done);
    fsx_wb_set_dirty(wb);
    wb->seq_end = off;
  }
  if (rc && !src_failed) { /* the rest through the staging file */
    if (rc == -EAGAIN)
      log_info("%s: no write buffer free: written through the staging "
               "file from byte %" PRIu64, fsx_wb_key(wb), off);
    else
      log_warn("%s: leaving the stream path at byte %" PRIu64 ": %s",
               fsx_wb_key(wb), off, strerror(-rc));
    rc = fsx_wb_unstream(m, wb, true, NULL);
  }
  /* (still streaming after a failed move: a short write, or the error) */
  if (rc && !done)
    return rc;
  return (ssize_t)done;
}

/* How many whole parts from part k (at its start) fit in len bytes, at
   most max, and their bytes. */
static unsigned whole_parts(const struct fsx_wb *wb, unsigned k, size_t len,
                            unsigned max, uint64_t *bytes)
{
  unsigned n = 0;
  uint64_t s, l;

  *bytes = 0;
  while (n < max && k + n < FSX_WB_MAX_PARTS) {
    fsx_wb_part_span(wb->psize, k + n, &s, &l);
    if (*bytes + l > len)
      break;
    *bytes += l;
    n++;
  }
  return n;
}

/* Parts k.. of one run of w: sent, and those the server took in order
   recorded as done. The bytes recorded, or -errno when none was. */
static ssize_t send_from(struct fsx_mount *m, struct fsx_wb *wb, unsigned k,
                         unsigned n, uint64_t at0, struct fsx_wparts *w,
                         const char *scratch)
{
  struct s3_req *r[FSX_WB_PARTS_AT_ONCE] = {NULL};
  uint64_t at[FSX_WB_PARTS_AT_ONCE], s, l, taken = 0;
  size_t len[FSX_WB_PARTS_AT_ONCE];
  int rc = 0;

  for (unsigned i = 0; i < n && !rc; i++) {
    fsx_wb_part_span(wb->psize, k + i, &s, &l);
    at[i] = at0 + (s - wb->size);
    len[i] = (size_t)l;
    r[i] = s3_upload_part_req(m->s3, fsx_wb_bucket(wb), wb->upload_key,
                              wb->upload_id, (int)(k + i) + 1,
                              w->body ? w->body + at[i] : scratch, len[i]);
    if (!r[i])
      rc = -ENOMEM;
  }
  if (!rc)
    rc = w->run(w, r, (int)n, at, len);
  for (unsigned i = 0; i < n; i++) {
    char etag[S3_ETAG_MAX];
    int prc = rc || !r[i] ? rc : s3_upload_part_result(r[i], etag);
    if (!prc && !w->body && s3_req_rdma_path(r[i]) != S3_RDMA_DONE)
      prc = -EOPNOTSUPP; /* (an rdma_only request fails before this) */
    if (!rc && prc) {
      rc = prc;
      log_info("%s: part %u from the caller's buffer: %s", fsx_wb_key(wb),
               k + i + 1, strerror(-prc));
    }
    if (!rc) { /* the server has it: only the upload holds its bytes, */
      pthread_mutex_lock(&wb->plock);
      /* listed first (else not taken: the caller writes it again) */
      rc = fsx_wb_list_part(wb, k + i, etag);
      if (!rc) {
        wb->parts[k + i] =
            (struct fsx_part){.state = PART_DONE, .len = len[i]};
        memcpy(wb->parts[k + i].etag, etag, sizeof(etag));
        wb->size += len[i];
      }
      pthread_mutex_unlock(&wb->plock);
    }
    if (!rc) {
      taken += len[i];
      atomic_fetch_add(&m->st.parts_sent, 1);
      atomic_fetch_add(&m->st.direct_write_parts, 1);
    }
    s3_req_destroy(r[i]);
  }
  return taken ? (ssize_t)taken : rc;
}

ssize_t fsx_wb_write_parts(struct fsx_mount *m, struct fsx_wb *wb,
                           uint64_t off, size_t len, struct fsx_wparts *w)
{
  size_t scratch_len = 0;
  char *scratch = NULL;
  uint64_t s, l, bytes;
  struct fsx_part pk;
  ssize_t done = 0, n;
  unsigned k, nk;
  bool kept;
  int rc = 0;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing)
    pthread_cond_wait(&wb->cond, &wb->lock);
  pthread_mutex_lock(&wb->plock);
  kept = wb->parts_kept; /* (a run goes back only once listed) */
  pthread_mutex_unlock(&wb->plock);
  k = fsx_wb_part_of(wb->psize, off, &s, &l);
  nk = whole_parts(wb, k, len, FSX_WB_MAX_PARTS, &bytes);
  pk = fsx_wb_part(wb, k);
  /* streamed, at the end and a part's start, the file longer than one
     part afterwards (a file of one part is one PUT, from its run), the
     part not sent before */
  if (!wb->stream || kept || wb->unlinked || off != wb->size || s != off ||
      !nk || off + bytes <= wb->psize || off + bytes > (5ull << 40) ||
      pk.state != PART_NONE || pk.run)
    goto unlock;
  /* the part the writer filled before this one goes first, from its run */
  if (k && fsx_wb_part(wb, k - 1).run &&
      fsx_wb_part(wb, k - 1).state == PART_NONE)
    send_passed(m, wb, k - 1);
  if ((!wb->upload_id && (rc = fsx_wb_start_upload(m, wb))) ||
      (rc = fsx_wb_will_change(wb)) || (rc = fsx_wb_grow_parts(wb, k + nk)))
    goto unlock;
  if (!w->body) { /* a body for the request, never read (rdma_only) */
    scratch_len = FSX_WB_MAX_PART; /* (address space only) */
    scratch = mmap(NULL, scratch_len, PROT_READ,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (scratch == MAP_FAILED) {
      rc = -ENOMEM;
      goto unlock;
    }
  }
  /* recorded before they are sent, as a run's part (start_part) */
  if (off + bytes > wb->stream_sent) {
    wb->stream_sent = off + bytes;
    fsx_wb_journal_sent(wb);
  }
  while ((uint64_t)done < bytes) {
    uint64_t b;
    k = fsx_wb_part_of(wb->psize, wb->size, &s, &l);
    nk = whole_parts(wb, k, (size_t)(bytes - (uint64_t)done),
                     FSX_WB_PARTS_AT_ONCE, &b);
    n = send_from(m, wb, k, nk, (uint64_t)done, w, scratch);
    if (n <= 0) {
      rc = (int)n;
      break;
    }
    done += n;
    if ((uint64_t)n < b)
      break; /* a part the server did not take: the caller's to send */
  }
  if (scratch)
    munmap(scratch, scratch_len);
  if (done) {
    fsx_wb_set_dirty(wb);
    wb->seq_end = wb->size;
    atomic_fetch_add(&m->st.write_bytes, (uint64_t)done);
  }
unlock:
  pthread_mutex_unlock(&wb->lock);
  return done ? done : rc;
}

bool fsx_wb_stream_read(struct fsx_wb *wb, uint64_t off, void *buf,
                        size_t len, ssize_t *n)
{
  size_t done = 0;

  if (off >= wb->size) {
    *n = 0;
    return true;
  }
  if (len > wb->size - off)
    len = (size_t)(wb->size - off);
  /* under plock: part_done may give a run back meanwhile */
  pthread_mutex_lock(&wb->plock);
  while (done < len) {
    uint64_t s, l, k;
    char *run;
    k = fsx_wb_part_of(wb->psize, off + done, &s, &l);
    if (k >= wb->nparts || !(run = wb->parts[k].run))
      break;
    k = s + l - (off + done) < len - done ? s + l - (off + done) : len - done;
    memcpy((char *)buf + done, run + (off + done - s), (size_t)k);
    done += (size_t)k;
  }
  pthread_mutex_unlock(&wb->plock);
  *n = (ssize_t)done;
  return done == len;
}

/*
 * The parts below the last one the server has (gone: done, run given
 * back) made whole on the server: those still holding their run (failed,
 * or never sent) sent again, then the first *n completed as the object.
 */
static int materialize(struct fsx_mount *m, struct fsx_wb *wb, unsigned n,
                       char etag[S3_ETAG_MAX])
{
  int rc = 0;

  for (unsigned k = 0; k < n && !rc; k++) {
    struct fsx_part p = fsx_wb_part(wb, k);
    if (p.state == PART_DONE)
      continue;
    /* held by a run (failed or not yet sent), else in the base (a part
       below where the stream took the file up again) */
    rc = p.run ? fsx_wb_send_part(m, wb, k) : fsx_wb_copy_part(m, wb, k);
  }
  fsx_wb_wait_sent(wb);
  for (unsigned k = 0; k < n && !rc; k++)
    if (fsx_wb_part(wb, k).state != PART_DONE)
      rc = -EIO;
  if (!rc)
    rc = fsx_wb_complete_parts(m, wb, fsx_wb_key(wb), n, etag);
  return rc;
}

/* The object of the first n parts is the base now: [0, len) of it. */
static int become_base(struct fsx_mount *m, struct fsx_wb *wb, uint64_t len,
                       const char *etag)
{
  uint64_t nb = (len + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
  uint8_t *np = calloc((size_t)(nb + 7) / 8, 1);

  if (!np)
    return -ENOMEM;
  fsx_wb_end_upload(m, wb, false); /* completed: nothing to abort */
  free(wb->present);
  wb->present = np;
  wb->nblocks = nb;
  wb->base_len = len;
  fsx_wb_map_rewrite(wb);
  pthread_mutex_lock(&wb->plock);
  snprintf(wb->base_etag, sizeof(wb->base_etag), "%s", etag);
  wb->on_server = true;
  wb->base_plain = wb->upload_plain;
  pthread_mutex_unlock(&wb->plock);
  return 0;
}

int fsx_wb_unstream(struct fsx_mount *m, struct fsx_wb *wb, bool materialize_,
                    uint64_t *lost)
{
  char etag[S3_ETAG_MAX] = "";
  unsigned gone = 0;
  uint64_t s, l;
  int rc;

  if (lost)
    *lost = 0;
  if (!wb->stream)
    return 0;
  fsx_wb_wait_sent(wb); /* no callback runs from here on */
  pthread_mutex_lock(&wb->plock);
  for (unsigned k = 0; k < wb->nparts; k++)
    if (wb->parts[k].state == PART_DONE && !wb->parts[k].run)
      gone = k + 1;
  pthread_mutex_unlock(&wb->plock);
  fsx_wb_part_span(wb->psize, gone, &s, &l); /* s: where they end */
  if (gone && materialize_) {
    if ((rc = materialize(m, wb, gone, etag))) {
      log_err("%s: leaving the stream path: completing its first %u "
              "part(s): %s", fsx_wb_key(wb), gone, strerror(-rc));
      return rc;
    }
  } else if (gone && lost) {
    *lost = s;
  }
  /* the bytes the runs hold into the staging file, at their places */
  if ((rc = FP("unstream")))
    return rc;
  if (ftruncate(wb->fd, (off_t)wb->size))
    return -errno;
  for (unsigned k = 0; k < wb->nparts; k++) { /* (failed ones below too) */
    uint64_t ps, pl;
    char *run = fsx_wb_part(wb, k).run;
    fsx_wb_part_span(wb->psize, k, &ps, &pl);
    if (!run || ps >= wb->size)
      continue;
    if (ps + pl > wb->size)
      pl = wb->size - ps;
    if ((rc = fsx_wb_pwrite_all(wb->fd, run, (size_t)pl, ps)))
      return rc;
  }
  fsx_wb_stream_release(m, wb);
  wb->stream = false;
  if (gone && materialize_ && (rc = become_base(m, wb, s, etag)))
    return rc;
  if (materialize_) /* every byte is in the staging file or the base */
    wb->stream_sent = 0;
  fsx_wb_journal(wb, true);
  atomic_fetch_add(&m->st.unstreams, 1);
  log_info("%s: left the stream path at byte %" PRIu64 " (%u part(s) "
           "completed on the server first)", fsx_wb_key(wb), wb->size,
           materialize_ ? gone : 0);
  return 0;
}

void fsx_wb_stream_release(struct fsx_mount *m, struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->plock);
  for (unsigned k = 0; k < wb->nparts; k++)
    if (wb->parts[k].run) {
      fsx_pool_put(m->pool, wb->parts[k].run);
      wb->parts[k].run = NULL;
    }
  pthread_mutex_unlock(&wb->plock);
}
