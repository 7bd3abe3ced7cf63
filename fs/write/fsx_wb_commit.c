/*
 * fsx_wb_commit: committing a file's write-back state (design in
 * fsx_wb.h): its upload (fsx_wb_upload.c), then the new object made the
 * base; gates and holds (renames), and discard (unlink). Commits of one
 * file are serialised by wb->committing under wb->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/clock.h"
#include "common/slog.h"
#include "fs/mem/fsx_cache.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb_i.h"

/* What the object should carry now: the mtime and ctime always (s3fs
   does), the last change's in whole seconds when none was set
   explicitly (a set one as it was set). */
void fsx_wb_effective_meta(const struct fsx_wb *wb, struct fsx_wmeta *out)
{
  *out = wb->meta;
  if (!out->has_mtime) {
    out->has_mtime = true;
    out->mtime = wb->mtime;
    out->mtime.tv_nsec = 0;
  }
  if (!out->has_ctime) {
    out->has_ctime = true;
    out->ctime = wb->mtime;
    out->ctime.tv_nsec = 0;
  }
}

/* After an upload: the server's object is now the file. */
static void committed(struct fsx_mount *m, struct fsx_wb *wb,
                      const char *etag)
{
  struct fsx_attr a;
  uint8_t *np = NULL;
  uint64_t nb = (wb->size + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;

  /* streamed: the staging file holds nothing; the object is the file */
  bool streamed = wb->stream;

  /* the record goes first, before the staging file changes (a streamed
     one's is cut to the file's size below, holes): a crash from here on
     finds a staging file without a record, which holds nothing the server
     lacks and is removed, never a record that calls those holes the file */
  wb->data_dirty = wb->meta_dirty = wb->failed = false;
  wb->stream_sent = 0;
  fsx_wb_journal(wb, false); /* clean: the record goes */
  if (streamed) { /* and goes on streaming: appends take up the base */
    fsx_wb_stream_release(m, wb);
    if (ftruncate(wb->fd, (off_t)wb->size))
      log_warn("%s: %s: %s", fsx_wb_key(wb), wb->path, strerror(errno));
  }
  /* the new object is the new base: every block the staging file holds
     (fetched, written, or past the old base) is present in it */
  if (nb && (np = calloc((size_t)(nb + 7) / 8, 1)))
    for (uint64_t b = 0; b < nb && !streamed; b++)
      if (fsx_wb_block_present(wb, b))
        np[b / 8] |= (uint8_t)(1u << (b % 8));
  if (nb && !np && !streamed) {
    /* no memory for a new map: the old one is still true (a block it lacks
       was in a part copied unchanged into the new object) */
  } else if (nb && !np) { /* nothing held, nothing to say so: unlinked */
    log_err("%s: no memory for its block map: reads of it fail",
            fsx_wb_key(wb));
    pthread_mutex_lock(&wb->plock);
    wb->unlinked = true;
    pthread_mutex_unlock(&wb->plock);
  } else {
    free(wb->present);
    wb->present = np;
    wb->nblocks = nb;
    wb->base_len = wb->size;
    fsx_wb_map_rewrite(wb);
  }
  pthread_mutex_lock(&wb->plock);
  snprintf(wb->base_etag, sizeof(wb->base_etag), "%s", etag);
  wb->on_server = true;
  pthread_mutex_unlock(&wb->plock);
  wb->seq_end = wb->size;
  memset(&a, 0, sizeof(a));
  a.kind = FSX_FILE;
  a.size = wb->size;
  a.mtime = wb->mtime; /* unless the metadata sets one */
  a.mtime.tv_nsec = 0;
  fsx_meta_to_attr(&a, &wb->meta);
  snprintf(a.etag, sizeof(a.etag), "%s", etag);
  a.from_head = true;
  a.as_of_ms = clock_mono_ms();
  fsx_inode_set_attr_force(m->tab, wb->in, &a, m->o.attr_ttl_ms);
  /* the kernel's pages hold what we wrote: they stay valid */
  fsx_inode_kernel_wrote(m->tab, wb->in, etag);
  fsx_cache_invalidate(m->cache, fsx_inode_ino(wb->in));
  fsx_inode_note_entry(m->tab, wb->in);
}

static int do_commit(struct fsx_mount *m, struct fsx_wb *wb)
{
  const char *key = fsx_wb_key(wb);
  char etag[S3_ETAG_MAX] = "";
  struct fsx_wmeta mt;
  int rc;

  fsx_wb_wait_sent(wb);
  if ((rc = FP("commit.begin")))
    return rc;
  if (!wb->data_dirty && wb->on_server) { /* metadata only: copy onto itself */
    fsx_wb_effective_meta(wb, &mt);
    rc = fsx_copy_meta(m, fsx_wb_bucket(wb), key, &mt, etag);
    wb->base_plain = false; /* (what the copy kept, unknown here) */
  } else if (wb->size <= wb->psize) {
    rc = fsx_wb_put_single(m, wb, key, etag);
  } else {
    rc = fsx_wb_put_multipart(m, wb, key, etag);
    wb->base_plain = !rc && wb->upload_plain;
    /* an upload started early carries the time it started: that is the
       file's mtime, unless one was set since (then it is stored anew) */
    if (!rc && !wb->meta.has_mtime) {
      pthread_mutex_lock(&wb->plock);
      wb->mtime = wb->sent_meta.mtime;
      pthread_mutex_unlock(&wb->plock);
    }
    fsx_wb_effective_meta(wb, &mt);
    if (!rc && !fsx_meta_same(&mt, &wb->sent_meta)) {
      int mrc = fsx_copy_meta(m, fsx_wb_bucket(wb), key, &mt, etag);

      wb->base_plain = false;
      if (mrc) { /* the bytes are up: only the metadata is left to do */
        committed(m, wb, etag);
        wb->meta_dirty = true;
        fsx_wb_journal(wb, true);
        log_err("%s: storing its metadata failed: %s", key, strerror(-mrc));
        return mrc;
      }
    }
  }
  /* the server holds the file; its record still says otherwise */
  if (!rc)
    rc = FP("commit.done");
  if (rc) {
    log_err("%s: upload of %" PRIu64 " bytes failed: %s", key, wb->size,
            strerror(-rc));
    return rc;
  }
  committed(m, wb, etag);
  return 0;
}

/* Commit; with gate, leave committing set on success (see fsx_wb_gate). */
static int commit(struct fsx_mount *m, struct fsx_wb *wb, bool gate)
{
  bool put_ref = false;
  int rc = 0;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing)
    pthread_cond_wait(&wb->cond, &wb->lock);
  wb->committing = true;
  if ((wb->data_dirty || wb->meta_dirty) && !wb->unlinked) {
    atomic_fetch_add(&m->st.commits, 1);
    if (wb->unflushed) { /* closed or synced: whole as it is now */
      wb->unflushed = false;
      fsx_wb_journal(wb, true);
    }
    /* streamed: a crash during the commit finds the parts the server
       holds listed, and the rest in runs (kept until then) */
    fsx_wb_keep_parts(wb);
    rc = do_commit(m, wb);
    if (rc) {
      int src;
      wb->failed = true;
      atomic_fetch_add(&m->st.commit_errors, 1);
      /* the data is promised kept: make it survive a power loss too (and
         a streamed file's parts on the server, a crash) */
      fsx_wb_keep_parts(wb);
      fsx_wb_journal(wb, true);
      if ((src = fsx_stage_sync(wb->path, wb->fd, wb->map_fd)))
        log_err("%s: syncing its staging file %s: %s", fsx_wb_key(wb),
                wb->path, strerror(-src));
    } else if (wb->dirty_ref) {
      wb->dirty_ref = false;
      put_ref = true;
    }
  }
  wb->committing = gate && !rc;
  pthread_cond_broadcast(&wb->cond);
  pthread_mutex_unlock(&wb->lock);
  if (put_ref)
    fsx_wb_put(m, wb);
  return rc ? -EIO : 0;
}

int fsx_wb_commit(struct fsx_mount *m, struct fsx_wb *wb)
{
  return commit(m, wb, false);
}

int fsx_wb_gate(struct fsx_mount *m, struct fsx_wb *wb)
{
  return commit(m, wb, true);
}

void fsx_wb_hold(struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->lock);
  while (wb->committing)
    pthread_cond_wait(&wb->cond, &wb->lock);
  wb->committing = true;
  pthread_mutex_unlock(&wb->lock);
}

void fsx_wb_ungate(struct fsx_wb *wb)
{
  pthread_mutex_lock(&wb->lock);
  fsx_wb_journal(wb, true); /* its key may have changed meanwhile */
  wb->committing = false;
  pthread_cond_broadcast(&wb->cond);
  pthread_mutex_unlock(&wb->lock);
}

void fsx_wb_discard(struct fsx_mount *m, struct fsx_wb *wb, bool held)
{
  bool put_ref;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing && !held)
    pthread_cond_wait(&wb->cond, &wb->lock);
  wb->committing = false; /* a hold ends here */
  pthread_cond_broadcast(&wb->cond);
  fsx_wb_end_upload(m, wb, true);
  fsx_wb_stream_release(m, wb);
  pthread_mutex_lock(&wb->plock);
  wb->unlinked = true;
  pthread_mutex_unlock(&wb->plock);
  wb->data_dirty = wb->meta_dirty = wb->failed = false;
  fsx_wb_journal(wb, false);
  put_ref = wb->dirty_ref;
  wb->dirty_ref = false;
  pthread_mutex_unlock(&wb->lock);
  if (put_ref)
    fsx_wb_put(m, wb);
}
