/*
 * fsx_wb: the write-back state of one file (design in fsx_wb.h, the files
 * that make up the module listed there): creation and open, references
 * and the one teardown, the staging record, dirtiness, metadata and the
 * attributes getattr shows.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/mount/fsx_renlock.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_space.h"
#include "fs/write/fsx_wb_i.h"

/* ---- lifetime ---- */

/*
 * The one teardown of what wb_new made: the staging file and its map
 * (removed unless kept for the next mount), memory, locks. wb is off the
 * mount's list and the inode reference is the caller's to drop: also for
 * a state never attached (wb_new failing half-way, an open that lost).
 */
static void wb_destroy(struct fsx_mount *m, struct fsx_wb *wb)
{
  if (wb->upload_id) /* only at unmount after a failure: journal keeps it */
    log_warn("%s: upload %s left for the next mount",
             fsx_wb_key(wb), wb->upload_id);
  if (wb->stream)
    fsx_wb_stream_release(m, wb);
  if (wb->fd >= 0) {
    fsx_space_forget(m->space, wb->fd); /* before the fd can be reused */
    close(wb->fd);
  }
  if (wb->map_fd >= 0)
    close(wb->map_fd);
  if (wb->fd >= 0 && !wb->kept_in_place) /* else the next mount finds it */
    fsx_stage_remove(wb->path);
  free(wb->present);
  free(wb->parts);
  free(wb->upload_id);
  free(wb->upload_key);
  pthread_cond_destroy(&wb->pcond);
  pthread_mutex_destroy(&wb->plock);
  pthread_cond_destroy(&wb->cond);
  pthread_mutex_destroy(&wb->lock);
  free(wb);
}

/* On the mount's list (m->wbm->wbs), which the mount-wide side walks. */
static void wb_list(struct fsx_mount *m, struct fsx_wb *wb)
{
  pthread_mutex_lock(&m->wbm->lock);
  wb->next = m->wbm->wbs;
  if (m->wbm->wbs)
    m->wbm->wbs->prev = wb;
  m->wbm->wbs = wb;
  pthread_mutex_unlock(&m->wbm->lock);
}

/* The last reference went (detached already): off the list, torn down. */
static void wb_free(struct fsx_mount *m, struct fsx_wb *wb)
{
  struct fsx_inode *in = wb->in;

  pthread_mutex_lock(&m->wbm->lock);
  if (wb->prev)
    wb->prev->next = wb->next;
  else
    m->wbm->wbs = wb->next;
  if (wb->next)
    wb->next->prev = wb->prev;
  pthread_mutex_unlock(&m->wbm->lock);
  wb_destroy(m, wb);
  fsx_inode_put(m->tab, in);
}

struct fsx_wb *fsx_wb_get(struct fsx_mount *m, struct fsx_inode *in)
{
  return fsx_inode_wb_get(m->tab, in);
}

void fsx_wb_put(struct fsx_mount *m, struct fsx_wb *wb)
{
  if (wb && fsx_inode_wb_unref(m->tab, wb->in))
    wb_free(m, wb);
}

/* Being dirty holds a reference, taken once (lock held). */
static void hold_dirty_ref(struct fsx_wb *wb)
{
  if (!wb->dirty_ref) {
    wb->dirty_ref = true;
    fsx_inode_wb_ref(wb->m->tab, wb->in);
  }
}

/* ---- the staging record and dirtiness ---- */

int fsx_wb_journal(struct fsx_wb *wb, bool force)
{
  struct fsx_stage_rec r;
  int rc;

  if (!(wb->data_dirty || wb->meta_dirty) || wb->unlinked) {
    fsx_stage_rec_remove(wb->path); /* (also one a failed write left) */
    wb->rec_on_disk = false;
    return 0;
  }
  if (wb->rec_on_disk && !force)
    return 0;
  if ((rc = FP("wb.journal"))) {
    wb->rec_on_disk = false;
    return rc;
  }
  memset(&r, 0, sizeof(r));
  r.bucket = fsx_wb_bucket(wb);
  r.key = fsx_wb_key(wb);
  r.base_etag = wb->base_len || wb->on_server ? wb->base_etag : "";
  r.base_len = wb->base_len;
  r.part_size = wb->psize;
  r.mode = (unsigned)wb->meta.mode;
  r.uid = (unsigned)wb->meta.uid;
  r.gid = (unsigned)wb->meta.gid;
  r.has_mtime = wb->meta.has_mtime;
  r.mtime = (int64_t)wb->meta.mtime.tv_sec;
  r.mtime_ns = wb->meta.mtime.tv_nsec;
  r.has_ctime = wb->meta.has_ctime;
  r.ctime = (int64_t)wb->meta.ctime.tv_sec;
  r.ctime_ns = wb->meta.ctime.tv_nsec;
  r.has_atime = wb->meta.has_atime;
  r.atime = (int64_t)wb->meta.atime.tv_sec;
  r.atime_ns = wb->meta.atime.tv_nsec;
  r.partial = wb->unflushed;
  r.map_ok = !wb->map_bad;
  r.sent = wb->stream_sent;
  r.size = wb->size;
  rc = fsx_stage_rec_write(wb->m->stage, wb->path, &r);
  if (rc) /* the data is still staged; only a crash now would lose track */
    log_warn("%s: staging record for %s: %s", wb->path, r.key,
             strerror(-rc));
  wb->rec_on_disk = !rc;
  return rc;
}

int fsx_wb_journal_sent(struct fsx_wb *wb)
{
  if (wb->rec_on_disk && (wb->data_dirty || wb->meta_dirty) &&
      !wb->unlinked && !fsx_stage_rec_set_sent(wb->path, wb->stream_sent))
    return 0;
  return fsx_wb_journal(wb, true);
}

int fsx_wb_will_change(struct fsx_wb *wb)
{
  bool dirty = wb->data_dirty, unflushed = wb->unflushed;
  int rc;

  if (wb->unlinked || (wb->rec_on_disk && wb->unflushed))
    return 0;
  wb->data_dirty = wb->unflushed = true;
  rc = fsx_wb_journal(wb, true);
  if (rc) { /* refused: nothing is changed that a crash could not undo */
    wb->data_dirty = dirty;
    wb->unflushed = unflushed;
  }
  return rc;
}

void fsx_wb_map_rewrite(struct fsx_wb *wb)
{
  size_t n = (size_t)(wb->nblocks + 7) / 8;
  int fd;

  if (!wb->present && wb->map_fd < 0)
    return; /* no base bytes to miss, and no map saying otherwise */
  if (!wb->present) /* an empty map */
    n = 0;
  fd = fsx_stage_map_open(wb->path, n);
  if (fd >= 0 && n && pwrite(fd, wb->present, n, 0) != (ssize_t)n) {
    close(fd);
    fd = -EIO;
  }
  if (fd < 0) /* recovery will not trust it: it keeps the file instead */
    log_warn("%s: block map: %s", wb->path, strerror(-fd));
  if (wb->map_fd >= 0)
    close(wb->map_fd);
  wb->map_fd = fd < 0 ? -1 : fd;
  wb->map_bad = fd < 0;
}

void fsx_wb_set_dirty(struct fsx_wb *wb)
{
  bool was = wb->unflushed;

  if (wb->unlinked)
    return;
  wb->data_dirty = true;
  wb->unflushed = true;
  pthread_mutex_lock(&wb->plock);
  clock_gettime(CLOCK_REALTIME, &wb->mtime);
  wb->mtime.tv_nsec = 0; /* stored in whole seconds: shown as stored */
  wb->meta.has_mtime = false;
  wb->meta.has_ctime = false; /* a data change: the ctime is the mtime */
  pthread_mutex_unlock(&wb->plock);
  fsx_wb_journal(wb, !was); /* rewritten as it becomes partial */
  hold_dirty_ref(wb);
}

/* ---- creation and open ---- */

static struct fsx_wb *wb_new(struct fsx_mount *m, struct fsx_inode *in,
                             const struct fsx_attr *base, bool trunc,
                             const struct fsx_wmeta *meta, int *rc)
{
  struct fsx_wb *wb = calloc(1, sizeof(*wb));

  *rc = -ENOMEM;
  if (!wb)
    return NULL;
  pthread_mutex_init(&wb->lock, NULL);
  pthread_cond_init(&wb->cond, NULL);
  pthread_mutex_init(&wb->plock, NULL);
  pthread_cond_init(&wb->pcond, NULL);
  wb->m = m;
  wb->in = in;
  wb->map_fd = -1;
  wb->psize = (m->o.part_size + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK * FSX_WB_BLOCK;
  wb->meta = *meta;
  clock_gettime(CLOCK_REALTIME, &wb->mtime);
  wb->mtime.tv_nsec = 0;
  wb->fd =
      fsx_stage_create(m->stage, fsx_inode_ino(in), wb->path, sizeof(wb->path));
  if (wb->fd < 0) {
    *rc = wb->fd;
    log_err("staging file %s: %s", wb->path, strerror(-*rc));
    goto destroy;
  }
  if (base) {
    wb->on_server = true;
    snprintf(wb->base_etag, sizeof(wb->base_etag), "%s", base->etag);
    if (base->has_mode)
      wb->meta.mode = (wb->meta.mode & S_IFMT) | (base->mode & 07777);
    if (base->has_uid)
      wb->meta.uid = base->uid;
    if (base->has_gid)
      wb->meta.gid = base->gid;
    if (base->has_ctime && !wb->meta.has_ctime) { /* until a write */
      wb->meta.has_ctime = true;
      wb->meta.ctime = base->ctime;
    }
    if (base->has_atime && !wb->meta.has_atime) {
      wb->meta.has_atime = true;
      wb->meta.atime = base->atime;
    }
    wb->mtime = base->mtime;
  }
  if (base && !trunc && base->size) {
    wb->size = wb->base_len = base->size;
    wb->nblocks = (base->size + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
    wb->present = calloc((size_t)(wb->nblocks + 7) / 8, 1);
    if (!wb->present || ftruncate(wb->fd, (off_t)base->size)) {
      *rc = wb->present ? -errno : -ENOMEM;
      goto destroy;
    }
    wb->map_fd = fsx_stage_map_open(wb->path, (wb->nblocks + 7) / 8);
    if (wb->map_fd < 0) {
      *rc = wb->map_fd;
      goto destroy;
    }
  }
  /* a new or emptied file starts on the stream path (fsx_wb_stream.c) */
  wb->stream = m->pool && (!base || trunc);
  *rc = 0;
  return wb;

destroy:
  wb_destroy(m, wb);
  return NULL;
}

static int wb_open(struct fsx_mount *m, struct fsx_inode *in,
                   const struct fsx_attr *base, bool trunc,
                   const struct fsx_wmeta *meta, struct fsx_wb **out)
{
  struct fsx_wb *wb = fsx_wb_get(m, in), *mine;
  bool removed;
  int rc;

  if (!wb && !m->wbm) /* no write-back: a read-only mount */
    return -EROFS;
  if (!wb) {
    mine = wb_new(m, in, base, trunc, meta, &rc);
    if (!mine)
      return rc;
    wb = fsx_inode_wb_attach(m->tab, in, mine, &removed);
    if (wb == mine) {
      wb_list(m, wb);
      pthread_mutex_lock(&wb->lock);
      if (removed) { /* unlinked as it was opened: the handles' alone */
        pthread_mutex_lock(&wb->plock);
        wb->unlinked = true;
        pthread_mutex_unlock(&wb->plock);
        wb->stream = false; /* its bytes in the staging file */
      }
      if (!base || trunc) /* a new object, or emptied: that is a change */
        fsx_wb_set_dirty(wb);
      pthread_mutex_unlock(&wb->lock);
      *out = wb;
      return 0;
    }
    wb_destroy(m, mine); /* another open made one first: use that */
  }
  if (trunc && (rc = fsx_wb_truncate(m, wb, 0))) {
    fsx_wb_put(m, wb);
    return rc;
  }
  *out = wb;
  return 0;
}

int fsx_wb_open(struct fsx_mount *m, struct fsx_inode *in,
                const struct fsx_attr *base, bool trunc,
                const struct fsx_wmeta *meta, struct fsx_wb **out)
{
  int rc;

  /* not while a directory rename holds what is below it */
  fsx_renlock_read(&m->rename_lock);
  rc = wb_open(m, in, base, trunc, meta, out);
  fsx_renlock_unlock(&m->rename_lock);
  return rc;
}

int fsx_wb_open_held(struct fsx_mount *m, struct fsx_inode *in,
                     const struct fsx_attr *base, bool trunc,
                     const struct fsx_wmeta *meta, struct fsx_wb **out)
{
  assert(fsx_renlock_held());
  return wb_open(m, in, base, trunc, meta, out);
}

/* ---- metadata and attributes ---- */

bool fsx_wb_set_meta(struct fsx_mount *m, struct fsx_wb *wb,
                     const struct fsx_wmeta *meta)
{
  bool pending;

  (void)m;
  pthread_mutex_lock(&wb->lock);
  pthread_mutex_lock(&wb->plock);
  wb->meta = *meta;
  pthread_mutex_unlock(&wb->plock);
  if (!wb->unlinked) {
    wb->meta_dirty = true;
    fsx_wb_journal(wb, true);
    hold_dirty_ref(wb);
  }
  pending = wb->data_dirty || !wb->on_server;
  pthread_mutex_unlock(&wb->lock);
  return pending;
}

void fsx_wb_attr(struct fsx_wb *wb, struct fsx_attr *a)
{
  /* plock, not lock: a getattr never waits for an upload */
  pthread_mutex_lock(&wb->plock);
  a->kind = FSX_FILE;
  a->size = wb->size;
  a->mtime = wb->mtime; /* unless the metadata sets one */
  snprintf(a->etag, sizeof(a->etag), "%s", wb->base_etag);
  fsx_meta_to_attr(a, &wb->meta);
  pthread_mutex_unlock(&wb->plock);
}

bool fsx_wb_dirty(struct fsx_wb *wb)
{
  bool d;

  pthread_mutex_lock(&wb->lock);
  d = wb->data_dirty || wb->meta_dirty;
  pthread_mutex_unlock(&wb->lock);
  return d;
}

bool fsx_wb_unflushed(struct fsx_wb *wb)
{
  bool u;

  pthread_mutex_lock(&wb->lock);
  u = (wb->data_dirty || wb->meta_dirty) && !wb->failed;
  pthread_mutex_unlock(&wb->lock);
  return u;
}

void fsx_wb_renamed(struct fsx_wb *wb, const char *new_etag)
{
  pthread_mutex_lock(&wb->lock);
  pthread_mutex_lock(&wb->plock);
  if (wb->base_etag[0])
    snprintf(wb->base_etag, sizeof(wb->base_etag), "%s", new_etag);
  pthread_mutex_unlock(&wb->plock);
  fsx_wb_journal(wb, true); /* the key and base changed */
  pthread_mutex_unlock(&wb->lock);
}
