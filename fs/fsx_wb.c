/*
 * fsx_wb: write-back state and staging-file I/O (the design is in
 * fsx_wb.h; part uploads in fsx_wb_part.c; the commit and the retry thread
 * in fsx_wb_commit.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/slog.h"
#include "fs/fsx_stage.h"
#include "fs/fsx_rdma.h"
#include "fs/fsx_space.h"
#include "fs/fsx_wb_i.h"

#define FETCH_RUN_BLOCKS 128u /* 8 MiB per GET */

/* The largest file: what 10000 parts hold, and S3's 5 TiB. */
static uint64_t size_limit(const struct fsx_wb *wb)
{
  uint64_t geo = fsx_wb_max_size(wb->psize), s3 = 5ull << 40;

  return geo < s3 ? geo : s3;
}

/* ---- lifetime ---- */

static void wb_free(struct fsx_mount *m, struct fsx_wb *wb)
{
  pthread_mutex_lock(&m->wb_lock);
  if (wb->prev)
    wb->prev->next = wb->next;
  else
    m->wbs = wb->next;
  if (wb->next)
    wb->next->prev = wb->prev;
  pthread_mutex_unlock(&m->wb_lock);
  if (wb->upload_id) /* only at unmount after a failure: journal keeps it */
    log_warn("%s: upload %s left for the next mount to abort",
             wb->in->key, wb->upload_id);
  fsx_space_forget(m->space, wb->fd); /* before the fd can be reused */
  close(wb->fd);
  if (wb->map_fd >= 0)
    close(wb->map_fd);
  if (!wb->kept_in_place) /* else the next mount finds it, record and all */
    fsx_stage_remove(wb->path);
  free(wb->present);
  free(wb->parts);
  free(wb->upload_id);
  free(wb->upload_key);
  pthread_cond_destroy(&wb->pcond);
  pthread_mutex_destroy(&wb->plock);
  pthread_cond_destroy(&wb->cond);
  pthread_mutex_destroy(&wb->lock);
  fsx_inode_put(m->tab, wb->in);
  free(wb);
}

struct fsx_wb *fsx_wb_get(struct fsx_mount *m, struct fsx_inode *in)
{
  struct fsx_wb *wb;

  fsx_table_lock(m->tab);
  wb = in->wb;
  if (wb)
    wb->refs++;
  fsx_table_unlock(m->tab);
  return wb;
}

void fsx_wb_put(struct fsx_mount *m, struct fsx_wb *wb)
{
  bool last;

  if (!wb)
    return;
  fsx_table_lock(m->tab);
  last = --wb->refs == 0;
  if (last)
    wb->in->wb = NULL;
  fsx_table_unlock(m->tab);
  if (last)
    wb_free(m, wb);
}

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
  memset(&r, 0, sizeof(r));
  r.bucket = wb->in->bucket;
  r.key = fsx_inode_key(wb->m->tab, wb->in);
  r.base_etag = wb->base_len || wb->on_server ? wb->base_etag : "";
  r.base_len = wb->base_len;
  r.part_size = wb->psize;
  r.mode = (unsigned)wb->meta.mode;
  r.uid = (unsigned)wb->meta.uid;
  r.gid = (unsigned)wb->meta.gid;
  r.has_mtime = wb->meta.has_mtime;
  r.mtime = (int64_t)wb->meta.mtime.tv_sec;
  r.partial = wb->unflushed;
  r.map_ok = !wb->map_bad;
  rc = fsx_stage_rec_write(wb->m->stage, wb->path, &r);
  if (rc) /* the data is still staged; only a crash now would lose track */
    log_warn("%s: staging record for %s: %s", wb->path, r.key,
             strerror(-rc));
  wb->rec_on_disk = !rc;
  return rc;
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
  pthread_mutex_unlock(&wb->plock);
  fsx_wb_journal(wb, !was); /* rewritten as it becomes partial */
  if (!wb->dirty_ref) {
    wb->dirty_ref = true;
    fsx_table_lock(wb->m->tab);
    wb->refs++;
    fsx_table_unlock(wb->m->tab);
  }
}

static struct fsx_wb *wb_new(struct fsx_mount *m, struct fsx_inode *in,
                             const struct fsx_attr *base, bool trunc,
                             const struct fsx_wmeta *meta, int *rc)
{
  struct fsx_wb *wb = calloc(1, sizeof(*wb));

  *rc = -ENOMEM;
  if (!wb)
    return NULL;
  wb->m = m;
  wb->in = in;
  wb->map_fd = -1;
  wb->psize = (m->o.part_size + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK * FSX_WB_BLOCK;
  wb->meta = *meta;
  clock_gettime(CLOCK_REALTIME, &wb->mtime);
  wb->mtime.tv_nsec = 0;
  wb->fd = fsx_stage_create(m->stage, in->ino, wb->path, sizeof(wb->path));
  if (wb->fd < 0) {
    *rc = wb->fd;
    log_err("staging file %s: %s", wb->path, strerror(-*rc));
    free(wb);
    return NULL;
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
    wb->mtime = base->mtime;
  }
  if (base && !trunc && base->size) {
    wb->size = wb->base_len = base->size;
    wb->nblocks = (base->size + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
    wb->present = calloc((size_t)(wb->nblocks + 7) / 8, 1);
    if (!wb->present || ftruncate(wb->fd, (off_t)base->size)) {
      *rc = wb->present ? -errno : -ENOMEM;
      goto close_file;
    }
    wb->map_fd = fsx_stage_map_open(wb->path, (wb->nblocks + 7) / 8);
    if (wb->map_fd < 0) {
      *rc = wb->map_fd;
      goto close_file;
    }
  }
  pthread_mutex_init(&wb->lock, NULL);
  pthread_cond_init(&wb->cond, NULL);
  pthread_mutex_init(&wb->plock, NULL);
  pthread_cond_init(&wb->pcond, NULL);
  *rc = 0;
  return wb;

close_file:
  close(wb->fd);
  fsx_stage_remove(wb->path);
  free(wb->present);
  free(wb);
  return NULL;
}

static int wb_open(struct fsx_mount *m, struct fsx_inode *in,
                   const struct fsx_attr *base, bool trunc,
                   const struct fsx_wmeta *meta, struct fsx_wb **out);

int fsx_wb_open(struct fsx_mount *m, struct fsx_inode *in,
                const struct fsx_attr *base, bool trunc,
                const struct fsx_wmeta *meta, struct fsx_wb **out)
{
  int rc;

  /* not while a directory rename holds what is below it */
  pthread_rwlock_rdlock(&m->rename_lock);
  rc = wb_open(m, in, base, trunc, meta, out);
  pthread_rwlock_unlock(&m->rename_lock);
  return rc;
}

static int wb_open(struct fsx_mount *m, struct fsx_inode *in,
                   const struct fsx_attr *base, bool trunc,
                   const struct fsx_wmeta *meta, struct fsx_wb **out)
{
  struct fsx_wb *wb = fsx_wb_get(m, in), *mine;
  int rc;

  if (!wb) {
    mine = wb_new(m, in, base, trunc, meta, &rc);
    if (!mine)
      return rc;
    fsx_table_lock(m->tab);
    wb = in->wb;
    if (wb) { /* another open made one first: use that */
      wb->refs++;
    } else {
      in->wb = mine;
      in->refs++;
      mine->refs = 1;
    }
    fsx_table_unlock(m->tab);
    if (wb) {
      close(mine->fd);
      if (mine->map_fd >= 0)
        close(mine->map_fd);
      fsx_stage_remove(mine->path);
      free(mine->present);
      pthread_cond_destroy(&mine->pcond);
      pthread_mutex_destroy(&mine->plock);
      pthread_cond_destroy(&mine->cond);
      pthread_mutex_destroy(&mine->lock);
      free(mine);
    } else {
      wb = mine;
      pthread_mutex_lock(&m->wb_lock);
      wb->next = m->wbs;
      if (m->wbs)
        m->wbs->prev = wb;
      m->wbs = wb;
      pthread_mutex_unlock(&m->wb_lock);
      pthread_mutex_lock(&wb->lock);
      if (!base || trunc) /* a new object, or emptied: that is a change */
        fsx_wb_set_dirty(wb);
      pthread_mutex_unlock(&wb->lock);
      *out = wb;
      return 0;
    }
  }
  if (trunc && (rc = fsx_wb_truncate(m, wb, 0))) {
    fsx_wb_put(m, wb);
    return rc;
  }
  *out = wb;
  return 0;
}

/* ---- staging I/O and base fetches ---- */

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

static int pwrite_all(int fd, const char *p, size_t len, uint64_t off)
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

/* GET [off, off+len) of the base (exactly that object) into buf; with
   *retired, buf must not be freed (fsx_rdma_run). */
static int get_base(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                    size_t len, void *buf, bool *retired)
{
  char quoted[FSX_ETAG_MAX + 2];
  struct s3_req *r;
  size_t got = 0;
  int rc;

  *retired = false;
  r = s3_get_object_req(m->s3, wb->in->bucket, fsx_inode_key(m->tab, wb->in),
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
    rc = get_base(m, wb, off, (size_t)(end - off), buf, &retired);
    if (!rc)
      rc = pwrite_all(wb->fd, buf, (size_t)(end - off), off);
    if (!retired)
      free(buf);
    if (rc) {
      log_err("%s: fetching bytes %llu-%llu of the object being changed: %s",
              wb->in->key, (unsigned long long)off,
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
                     const void *buf, size_t len, bool append)
{
  uint64_t b0, b1, held;
  int rc = 0;

  if (!len)
    return 0;
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
      (rc = pwrite_all(wb->fd, buf, len, off)))
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
    log_warn("%s: early part upload: %s", wb->in->key, strerror(-rc));
  rc = 0;
out:
  fsx_space_settle(m->space, wb->fd, held);
  pthread_mutex_unlock(&wb->lock);
  if (!rc) {
    atomic_fetch_add(&m->st.writes, 1);
    atomic_fetch_add(&m->st.write_bytes, len);
  }
  return rc ? rc : (ssize_t)len;
}

ssize_t fsx_wb_read(struct fsx_mount *m, struct fsx_wb *wb, uint64_t off,
                    void *buf, size_t len)
{
  ssize_t n = 0;
  int rc;

  pthread_mutex_lock(&wb->lock);
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
  fsx_space_settle(m->space, wb->fd, 0); /* a cut frees space */
  pthread_mutex_unlock(&wb->lock);
  return rc;
}

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
    if (!wb->dirty_ref) {
      wb->dirty_ref = true;
      fsx_table_lock(wb->m->tab);
      wb->refs++;
      fsx_table_unlock(wb->m->tab);
    }
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
  a->mtime = wb->meta.has_mtime ? wb->meta.mtime : wb->mtime;
  snprintf(a->etag, sizeof(a->etag), "%s", wb->base_etag);
  a->has_mode = a->has_uid = a->has_gid = true;
  a->mode = wb->meta.mode;
  a->uid = wb->meta.uid;
  a->gid = wb->meta.gid;
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
