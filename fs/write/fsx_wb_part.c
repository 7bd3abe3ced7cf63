/*
 * fsx_wb_part: the upload session of a file's write-back state (design in
 * fsx_wb.h; its part geometry in fsx_wb_geo.c): the parts table; the
 * multipart upload's start and end, each journaled in cache.dir (an abort
 * that fails is left to the mount's leftover list, fsx_wb_mount.c; a
 * creation whose answer was lost is said and counted, never swept:
 * fsx_stage_unknown); and the part uploads, from the
 * staging file or copied from the base object on the server. The part
 * callbacks run on the S3 engine thread and take only wb->plock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/mem/fsx_pool.h"
#include "fs/meta/fsx_etag.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb_i.h"
#include "s3/s3_xml.h"

/* ---- the parts table ---- */

int fsx_wb_grow_parts(struct fsx_wb *wb, unsigned n)
{
  struct fsx_part *p;
  int rc = 0;

  pthread_mutex_lock(&wb->plock);
  if (n <= wb->nparts)
    goto out;
  if (n < wb->nparts * 2)
    n = wb->nparts * 2;
  if (n > FSX_WB_MAX_PARTS)
    n = FSX_WB_MAX_PARTS;
  p = realloc(wb->parts, n * sizeof(*p));
  if (!p) {
    rc = -ENOMEM;
    goto out;
  }
  memset(p + wb->nparts, 0, (n - wb->nparts) * sizeof(*p));
  wb->parts = p;
  wb->nparts = n;
out:
  pthread_mutex_unlock(&wb->plock);
  return rc;
}

void fsx_wb_wait_sent(struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->plock);
  while (wb->sending)
    pthread_cond_wait(&wb->pcond, &wb->plock);
  pthread_mutex_unlock(&wb->plock);
}

struct fsx_part fsx_wb_part(struct fsx_wb *wb, unsigned k)
{
  struct fsx_part p = {0};

  pthread_mutex_lock(&wb->plock);
  if (k < wb->nparts)
    p = wb->parts[k];
  pthread_mutex_unlock(&wb->plock);
  return p;
}

void fsx_wb_reset_parts(struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->plock);
  for (unsigned k = 0; k < wb->nparts; k++) /* a run stays its part's */
    wb->parts[k] = (struct fsx_part){.run = wb->parts[k].run};
  wb->part_err = 0;
  pthread_mutex_unlock(&wb->plock);
}

/* ---- the multipart upload (lock held) ---- */

int fsx_wb_start_upload(struct fsx_mount *m, struct fsx_wb *wb)
{
  const char *key = fsx_wb_key(wb);
  struct fsx_wopts w;
  struct fsx_wmeta mt;
  time_t since;
  unsigned orphans;
  long id;
  int rc;

  if (wb->unlinked) /* removed: no name of its own to upload under (the
                       one it had may be another file's by now) */
    return -ENOENT;
  fsx_wb_effective_meta(wb, &mt);
  rc = fsx_wopts_make(m, fsx_wb_bucket(wb), key, fsx_wb_must_look(m, wb),
                      &mt, &w);
  if (rc)
    return rc;
  wb->upload_plain = !w.have_cur;
  /* recorded before it is made: a lost answer (the upload made anyway)
     or a crash before the next record is said and counted, never hidden
     (nothing can prove such an upload ours: never aborted) */
  since = time(NULL);
  id = fsx_stage_note_create(m->stage, fsx_wb_bucket(wb), key, since);
  if (id < 0) {
    fsx_wopts_cleanup(&w);
    log_err("%s: could not record an upload in cache.dir: %s", key,
            strerror((int)-id));
    return (int)id;
  }
  rc = s3_create_multipart(m->s3, fsx_wb_bucket(wb), key, &w.o,
                           &wb->upload_id, &orphans);
  fsx_wopts_cleanup(&w);
  if (rc || orphans)
    atomic_fetch_add(&m->st.uploads_unknown,
                     fsx_stage_unknown(fsx_wb_bucket(wb), key, since, rc,
                                       orphans));
  if (rc) {
    fsx_stage_forget_upload(m->stage, id);
    return rc;
  }
  wb->sent_meta = mt;
  fsx_wb_reset_parts(wb);
  wb->upload_key = strdup(key);
  rc = wb->upload_key ? fsx_stage_set_upload(m->stage, id, fsx_wb_bucket(wb),
                                             key, wb->upload_id)
                      : -ENOMEM;
  if (rc) { /* unrecorded, a crash would leak it: not started at all */
    log_err("%s: could not record upload %s in cache.dir: %s", key,
            wb->upload_id, strerror(-rc));
    if (!s3_abort_multipart(m->s3, fsx_wb_bucket(wb), key, wb->upload_id))
      fsx_stage_forget_upload(m->stage, id);
    free(wb->upload_id);
    free(wb->upload_key);
    wb->upload_id = wb->upload_key = NULL;
    return rc;
  }
  wb->journal_id = id;
  wb->upload_since = since;
  fsx_stage_parts_remove(wb->path); /* (its parts are appended to a list
                                       begun by its first) */
  return 0;
}

void fsx_wb_end_upload(struct fsx_mount *m, struct fsx_wb *wb, bool abort)
{
  int rc = 0;

  if (!wb->upload_id)
    return;
  fsx_wb_wait_sent(wb);
  if (abort && !(rc = FP("abort")))
    rc = fsx_etag_abort_upload(m->s3, fsx_wb_bucket(wb), wb->upload_key,
                               wb->upload_id, wb->complete_sent);
  if (rc && rc != -ENOENT) {
    log_warn("%s: aborting upload %s: %s (tried again later)", fsx_wb_key(wb),
             wb->upload_id, strerror(-rc));
    fsx_wb_leftover(m, fsx_wb_bucket(wb), wb->upload_key, wb->upload_id,
                    wb->journal_id, wb->complete_sent);
  } else {
    fsx_stage_forget_upload(m->stage, wb->journal_id);
  }
  free(wb->upload_id);
  free(wb->upload_key);
  wb->upload_id = wb->upload_key = NULL;
  wb->journal_id = 0;
  wb->complete_sent = false;
  fsx_wb_reset_parts(wb);
  wb->eager_next = 0;
  pthread_mutex_lock(&wb->plock);
  wb->parts_kept = false;
  pthread_mutex_unlock(&wb->plock);
  fsx_stage_parts_remove(wb->path); /* nothing left to take up */
}

int fsx_wb_list_part(struct fsx_wb *wb, unsigned k, const char *etag)
{
  int rc = fsx_stage_parts_add(wb->path, wb->journal_id, wb->upload_id,
                               (int)k + 1, etag);

  if (rc && !wb->list_warned) {
    wb->list_warned = true;
    log_warn("%s: listing the parts its upload holds in %s: %s (their "
             "buffers are kept until it can be)", fsx_wb_key(wb), wb->path,
             strerror(-rc));
  }
  return rc;
}

int fsx_wb_keep_parts(struct fsx_wb *wb)
{
  struct s3_part_etag *pe;
  unsigned n = 0;
  int rc;

  if (!wb->upload_id || !wb->stream_sent)
    return 0;
  pthread_mutex_lock(&wb->plock);
  pe = calloc(wb->nparts ? wb->nparts : 1, sizeof(*pe));
  for (unsigned k = 0; pe && k < wb->nparts; k++)
    if (wb->parts[k].state == PART_DONE && !wb->parts[k].stale)
      pe[n++] = (struct s3_part_etag){(int)k + 1, wb->parts[k].etag};
  /* written under plock: the etags cannot change meanwhile */
  rc = pe ? fsx_stage_parts_write(wb->path, wb->journal_id, wb->upload_id,
                                  pe, n, true)
          : -ENOMEM;
  if (!rc) { /* recorded: their runs may go back */
    wb->parts_kept = true;
    for (unsigned k = 0; k < wb->nparts; k++) {
      uint64_t s, l;
      struct fsx_part *p = &wb->parts[k];
      fsx_wb_part_span(wb->psize, k, &s, &l);
      if (p->run && p->state == PART_DONE && !p->stale && p->len == l) {
        fsx_pool_put(wb->m->pool, p->run);
        p->run = NULL;
      }
    }
  }
  pthread_mutex_unlock(&wb->plock);
  free(pe);
  if (rc)
    log_err("%s: recording the parts its upload holds: %s", fsx_wb_key(wb),
            strerror(-rc));
  return rc;
}

/* ---- part uploads ---- */

struct part_ctx {
  struct fsx_wb *wb;
  unsigned k;
  bool copy;                  /* UploadPartCopy (no data of ours) */
  void *map;
  char *run;                  /* streaming: the pool run sent from */
  uint64_t span;              /* the part's whole length (part_len: sent) */
  size_t len;                 /* bytes counted against write.max_memory */
  uint64_t part_len;
  void *rdma_reg;             /* the map registered for a token */
};

static void part_done(struct s3_req *r, void *arg)
{
  struct part_ctx *pc = arg;
  struct fsx_wb *wb = pc->wb;
  struct fsx_mount *m = wb->m;
  struct fsx_part *p;
  char etag[S3_ETAG_MAX];
  int rc = pc->copy ? s3_upload_part_copy_result(r, etag)
                    : s3_upload_part_result(r, etag);

  /* the server has the part; nothing here knows yet */
  if (!rc)
    rc = FP("part.acked");
  fsx_rdma_buf_done(m, pc->rdma_reg);
  /* a token still outstanding: the server may yet read the map, which
     the data plane unmaps once it cannot */
  if (pc->map && !fsx_rdma_hold_buf(m, r, pc->map, pc->len, true))
    munmap(pc->map, pc->len);
  /* memory first: a writer may wait for it holding wb->lock */
  pthread_mutex_lock(&m->wbm->lock);
  m->wbm->mem -= pc->len;
  pthread_cond_broadcast(&m->wbm->cond);
  pthread_mutex_unlock(&m->wbm->lock);
  pthread_mutex_lock(&wb->plock);
  p = &wb->parts[pc->k];
  if (rc) {
    p->state = PART_FAILED;
    if (!wb->part_err)
      wb->part_err = rc;
    log_warn("%s: part %u: %s", fsx_wb_key(wb), pc->k + 1, strerror(-rc));
  } else {
    p->state = PART_DONE;
    memcpy(p->etag, etag, sizeof(p->etag));
    /* the server has the part: its run is lent again, once nothing
       but the upload needs its bytes (a whole part, no record of the
       parts to keep up to date first), the upload holding it is listed
       beside the staging file (a crash with the file still open then
       finds the upload the only copy of those bytes: kept, never
       aborted; written, not synced, as the runs outlive a crash of the
       daemon only) and no earlier attempt's token is in doubt (then the
       data plane gives it back after the deadline) */
    if (pc->run && p->run == pc->run && pc->part_len == pc->span &&
        !wb->parts_kept && !fsx_wb_list_part(wb, pc->k, etag)) {
      if (!fsx_rdma_hold_run(m, r, p->run))
        fsx_pool_put(m->pool, p->run);
      p->run = NULL;
    }
    atomic_fetch_add(pc->copy ? &m->st.parts_copied : &m->st.parts_sent, 1);
  }
  wb->sending--;
  pthread_cond_broadcast(&wb->pcond);
  pthread_mutex_unlock(&wb->plock);
  if (pc->run) /* after the put: a writer waiting for a run finds it */
    fsx_pool_sending(m->pool, pc->run, false);
  s3_req_destroy(r);
  free(pc);
  fsx_wb_put(m, wb);
}

/*
 * Upload part k: from the staging file (mapped), or with copy from the
 * same range of the base object on the server. Lock held; waits, unlocked,
 * while the file or the mount has too much on the wire.
 */
static int start_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k,
                      bool copy)
{
  char quoted[FSX_ETAG_MAX + 2];
  const char *key = fsx_wb_key(wb);
  struct part_ctx *pc;
  struct s3_req *r;
  char *run = copy ? NULL : fsx_wb_part(wb, k).run;
  const void *src;
  uint64_t s, l, mem;
  int rc;

  fsx_wb_part_span(wb->psize, k, &s, &l);
  if (s + l > wb->size)
    l = wb->size - s;
  if ((rc = FP("part.send")))
    return rc;
  mem = copy || run ? 0 : l; /* a run is the pool's, not counted here */
  pthread_mutex_lock(&wb->plock);
  while (wb->sending >= m->o.max_parts_inflight)
    pthread_cond_wait(&wb->pcond, &wb->plock);
  pthread_mutex_unlock(&wb->plock);
  pthread_mutex_lock(&m->wbm->lock);
  while (mem && m->wbm->mem && m->wbm->mem + mem > m->o.max_memory)
    pthread_cond_wait(&m->wbm->cond, &m->wbm->lock);
  m->wbm->mem += mem;
  pthread_mutex_unlock(&m->wbm->lock);
  rc = -ENOMEM;
  pc = calloc(1, sizeof(*pc));
  if (!pc)
    goto unaccount;
  pc->wb = wb;
  pc->k = k;
  pc->copy = copy;
  pc->len = (size_t)mem;
  if (mem) {
    /* private: read as the file is, but registrable for RDMA on kernels
       before 6.2, whose memory registration pins even a read-only range
       for writing (FOLL_FORCE: a copy on write, refused on a shared
       read-only mapping with EFAULT). A part changed while it is sent is
       sent again (stale) either way. */
    pc->map = mmap(NULL, (size_t)l, PROT_READ, MAP_PRIVATE, wb->fd, (off_t)s);
    if (pc->map == MAP_FAILED) {
      rc = -errno;
      pc->map = NULL;
      goto free_ctx;
    }
  }
  pc->run = run;
  pc->part_len = l;
  fsx_wb_part_span(wb->psize, k, &s, &pc->span);
  src = run ? run : pc->map;
  if (run && s + l > wb->stream_sent) {
    /* recorded before the run can go back to the pool: a crash then
       says which bytes only the upload holds */
    wb->stream_sent = s + l;
    fsx_wb_journal_sent(wb);
  }
  snprintf(quoted, sizeof(quoted), "\"%s\"", wb->base_etag);
  /* into the upload's key; a copy from the base, where it is now */
  r = copy ? s3_upload_part_copy_req(m->s3, fsx_wb_bucket(wb), wb->upload_key,
                                     wb->upload_id, (int)k + 1,
                                     fsx_wb_bucket(wb), key, s, l, quoted)
           : s3_upload_part_req(m->s3, fsx_wb_bucket(wb), wb->upload_key,
                                wb->upload_id, (int)k + 1, src,
                                (size_t)l);
  if (!r)
    goto unmap;
  if (!copy && fsx_rdma_buf(m, r, false, (void *)(uintptr_t)src, (size_t)l,
                            &pc->rdma_reg)) {
    s3_req_destroy(r);
    goto unmap;
  }
  pthread_mutex_lock(&wb->plock);
  wb->parts[k].state = PART_SENDING;
  wb->parts[k].stale = false;
  wb->parts[k].len = l;
  wb->sending++;
  pthread_mutex_unlock(&wb->plock);
  fsx_inode_wb_ref(m->tab, wb->in); /* the upload's reference */
  if (run)
    fsx_pool_sending(m->pool, run, true);
  s3_req_submit(r, part_done, pc);
  return 0;

unmap:
  if (pc->map)
    munmap(pc->map, (size_t)l);
free_ctx:
  free(pc);
unaccount:
  pthread_mutex_lock(&m->wbm->lock);
  m->wbm->mem -= mem;
  pthread_cond_broadcast(&m->wbm->cond);
  pthread_mutex_unlock(&m->wbm->lock);
  return rc;
}

int fsx_wb_send_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k)
{
  return start_part(m, wb, k, false);
}

int fsx_wb_copy_part(struct fsx_mount *m, struct fsx_wb *wb, unsigned k)
{
  return start_part(m, wb, k, true);
}

