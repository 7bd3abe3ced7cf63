/*
 * fsx_wb_commit: committing a file's write-back state (its upload in
 * fsx_wb_upload.c, then the new base), unlink, and the background retry
 * thread (design in fsx_wb.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/slog.h"
#include "fs/fsx_cache.h"
#include "fs/fsx_stage.h"
#include "fs/fsx_wb_i.h"

/* ---- metadata ---- */

size_t fsx_wmeta_kv(const struct fsx_wmeta *mt, struct s3_kv kv[4],
                    char v[4][32])
{
  size_t n = 0;

  snprintf(v[0], 32, "%u", (unsigned)mt->mode);
  snprintf(v[1], 32, "%u", (unsigned)mt->uid);
  snprintf(v[2], 32, "%u", (unsigned)mt->gid);
  kv[n++] = (struct s3_kv){"mode", v[0]};
  kv[n++] = (struct s3_kv){"uid", v[1]};
  kv[n++] = (struct s3_kv){"gid", v[2]};
  if (mt->has_mtime) {
    snprintf(v[3], 32, "%lld", (long long)mt->mtime.tv_sec);
    kv[n++] = (struct s3_kv){"mtime", v[3]};
  }
  return n;
}

static bool ours(const char *key)
{
  return !strcasecmp(key, "mode") || !strcasecmp(key, "uid") ||
         !strcasecmp(key, "gid") || !strcasecmp(key, "mtime");
}

int fsx_wopts_make(struct fsx_mount *m, const char *bucket, const char *key,
                   bool keep, const struct fsx_wmeta *mt, struct fsx_wopts *w)
{
  size_t n;
  int rc;

  memset(w, 0, sizeof(*w));
  if (keep) {
    rc = s3_head_object(m->s3, bucket, key, &w->cur);
    if (rc && rc != -ENOENT)
      return rc;
    w->have_cur = !rc;
  }
  w->kv = calloc(4 + (w->have_cur ? w->cur.n_meta : 0), sizeof(*w->kv));
  if (!w->kv) {
    fsx_wopts_cleanup(w);
    return -ENOMEM;
  }
  n = fsx_wmeta_kv(mt, w->kv, w->v);
  for (size_t i = 0; w->have_cur && i < w->cur.n_meta; i++)
    if (!ours(w->cur.meta[i].key))
      w->kv[n++] = (struct s3_kv){w->cur.meta[i].key, w->cur.meta[i].val};
  w->o.meta = w->kv;
  w->o.n_meta = n;
  if (w->have_cur && w->cur.content_type[0])
    w->o.content_type = w->cur.content_type;
  return 0;
}

void fsx_wopts_cleanup(struct fsx_wopts *w)
{
  free(w->kv);
  w->kv = NULL;
  if (w->have_cur)
    s3_object_meta_cleanup(&w->cur);
  w->have_cur = false;
}

/* What the object should carry now: the mtime always (s3fs does), the
   last change's when none was set explicitly, in whole seconds. */
void fsx_wb_effective_meta(const struct fsx_wb *wb, struct fsx_wmeta *out)
{
  *out = wb->meta;
  if (!out->has_mtime) {
    out->has_mtime = true;
    out->mtime = wb->mtime;
  }
  out->mtime.tv_nsec = 0;
}

static bool same_meta(const struct fsx_wmeta *a, const struct fsx_wmeta *b)
{
  return a->mode == b->mode && a->uid == b->uid && a->gid == b->gid &&
         a->has_mtime == b->has_mtime &&
         (!a->has_mtime || a->mtime.tv_sec == b->mtime.tv_sec);
}

/* After an upload: the server's object is now the file. */
static void committed(struct fsx_mount *m, struct fsx_wb *wb,
                      const char *etag)
{
  struct fsx_attr a;
  uint8_t *np = NULL;
  uint64_t nb = (wb->size + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;

  /* the new object is the new base: every block the staging file holds
     (fetched, written, or past the old base) is present in it */
  if (nb && (np = calloc((size_t)(nb + 7) / 8, 1)))
    for (uint64_t b = 0; b < nb; b++)
      if (fsx_wb_block_present(wb, b))
        np[b / 8] |= (uint8_t)(1u << (b % 8));
  if (nb && !np) {
    /* no memory for a new map: the old one is still true (a block it lacks
       was in a part copied unchanged into the new object) */
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
  wb->data_dirty = wb->meta_dirty = wb->failed = false;
  fsx_wb_journal(wb, false); /* clean: the record goes */
  wb->seq_end = wb->size;
  memset(&a, 0, sizeof(a));
  a.kind = FSX_FILE;
  a.size = wb->size;
  a.mtime = wb->meta.has_mtime ? wb->meta.mtime : wb->mtime;
  a.mtime.tv_nsec = 0;
  snprintf(a.etag, sizeof(a.etag), "%s", etag);
  a.from_head = true;
  a.as_of_ms = fsx_now_ms();
  a.has_mode = a.has_uid = a.has_gid = true;
  a.mode = wb->meta.mode;
  a.uid = wb->meta.uid;
  a.gid = wb->meta.gid;
  fsx_inode_set_attr_force(m->tab, wb->in, &a, m->o.attr_ttl_ms);
  fsx_table_lock(m->tab);
  /* the kernel's pages hold what we wrote: they stay valid */
  snprintf(wb->in->kernel_etag, sizeof(wb->in->kernel_etag), "%s", etag);
  fsx_table_unlock(m->tab);
  fsx_cache_invalidate(m->cache, wb->in->ino);
  fsx_ns_note_entry(m, wb->in);
}

int fsx_copy_meta(struct fsx_mount *m, const char *bucket, const char *key,
                  const struct fsx_wmeta *mt, char etag[S3_ETAG_MAX])
{
  struct fsx_wopts w;
  int rc = fsx_wopts_make(m, bucket, key, true, mt, &w);

  /* CopyObject stops at 5 GiB: a multipart copy beyond */
  if (!rc && w.have_cur && w.cur.size > (5ull << 30))
    rc = s3_copy_object_any(m->s3, bucket, key, bucket, key, true, &w.o,
                            w.cur.size, 5ull << 30, 256ull << 20, etag);
  else if (!rc)
    rc = s3_copy_object(m->s3, bucket, key, bucket, key, true, &w.o, etag);
  fsx_wopts_cleanup(&w);
  return rc;
}

static int do_commit(struct fsx_mount *m, struct fsx_wb *wb)
{
  const char *key = fsx_inode_key(m->tab, wb->in);
  char etag[S3_ETAG_MAX] = "";
  struct fsx_wmeta mt;
  int rc;

  fsx_wb_wait_sent(wb);
  if (!wb->data_dirty && wb->on_server) { /* metadata only: copy onto itself */
    fsx_wb_effective_meta(wb, &mt);
    rc = fsx_copy_meta(m, wb->in->bucket, key, &mt, etag);
  } else if (wb->size <= wb->psize) {
    rc = fsx_wb_put_single(m, wb, key, etag);
  } else {
    rc = fsx_wb_put_multipart(m, wb, key, etag);
    /* an upload started early carries the time it started: that is the
       file's mtime, unless one was set since (then it is stored anew) */
    if (!rc && !wb->meta.has_mtime) {
      pthread_mutex_lock(&wb->plock);
      wb->mtime = wb->sent_meta.mtime;
      pthread_mutex_unlock(&wb->plock);
    }
    fsx_wb_effective_meta(wb, &mt);
    if (!rc && !same_meta(&mt, &wb->sent_meta)) {
      int mrc = fsx_copy_meta(m, wb->in->bucket, key, &mt, etag);
      if (mrc) { /* the bytes are up: only the metadata is left to do */
        committed(m, wb, etag);
        wb->meta_dirty = true;
        fsx_wb_journal(wb, true);
        log_err("%s: storing its metadata failed: %s", key, strerror(-mrc));
        return mrc;
      }
    }
  }
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
    rc = do_commit(m, wb);
    if (rc) {
      int src;
      wb->failed = true;
      atomic_fetch_add(&m->st.commit_errors, 1);
      /* the data is promised kept: make it survive a power loss too */
      fsx_wb_journal(wb, true);
      if ((src = fsx_stage_sync(wb->path, wb->fd, wb->map_fd)))
        log_err("%s: syncing its staging file %s: %s", wb->in->key,
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

int fsx_wb_fetch_all(struct fsx_mount *m, struct fsx_wb *wb, bool held)
{
  int rc;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing && !held)
    pthread_cond_wait(&wb->cond, &wb->lock);
  rc = fsx_wb_fetch(m, wb, 0, wb->base_len);
  pthread_mutex_unlock(&wb->lock);
  return rc;
}

void fsx_wb_discard(struct fsx_mount *m, struct fsx_wb *wb, bool held)
{
  bool put_ref;

  pthread_mutex_lock(&wb->lock);
  while (wb->committing && !held)
    pthread_cond_wait(&wb->cond, &wb->lock);
  wb->committing = false; /* a hold ends here */
  pthread_cond_broadcast(&wb->cond);
  fsx_wb_drop_upload(m, wb);
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

bool fsx_wb_make_orphan(struct fsx_mount *m, struct fsx_inode *in,
                        struct fsx_wb *wb)
{
  bool kept = false;

  fsx_table_lock(m->tab);
  if (in->opens && !in->orphan_wb) {
    in->orphan_wb = wb;
    wb->refs++; /* the orphan's own, taken under the same lock */
    kept = true;
  }
  fsx_table_unlock(m->tab);
  return kept;
}

/* ---- the mount's write-back: retries, directory operations, unmount ---- */

/*
 * References to the write-back states matching want. Taken for all under
 * m->wb_lock, filtered after it (want takes wb->lock, which ranks first).
 */
static size_t collect(struct fsx_mount *m, struct fsx_wb ***out,
                      bool (*want)(struct fsx_wb *, const void *),
                      const void *arg)
{
  struct fsx_wb **v = NULL, *wb;
  size_t n = 0, cap = 0, kept = 0;

  pthread_mutex_lock(&m->wb_lock);
  for (wb = m->wbs; wb; wb = wb->next)
    cap++;
  v = cap ? malloc(cap * sizeof(*v)) : NULL;
  for (wb = m->wbs; v && wb; wb = wb->next) {
    fsx_table_lock(m->tab);
    if (wb->refs) { /* none: being freed, waits for wb_lock to unlist it */
      wb->refs++;
      v[n++] = wb;
    }
    fsx_table_unlock(m->tab);
  }
  pthread_mutex_unlock(&m->wb_lock);
  for (size_t i = 0; i < n; i++) {
    if (want(v[i], arg))
      v[kept++] = v[i];
    else
      fsx_wb_put(m, v[i]);
  }
  *out = v;
  return kept;
}

/* Failed, and closed: an open file is retried by its own close or fsync,
   never uploaded half-written from here. */
static bool want_failed(struct fsx_wb *wb, const void *arg)
{
  bool f, open;

  (void)arg;
  fsx_table_lock(wb->m->tab);
  open = wb->in->opens > 0;
  fsx_table_unlock(wb->m->tab);
  if (open)
    return false;
  pthread_mutex_lock(&wb->lock);
  f = wb->failed && !wb->committing;
  pthread_mutex_unlock(&wb->lock);
  return f;
}

static bool want_dirty(struct fsx_wb *wb, const void *arg)
{
  (void)arg;
  return fsx_wb_dirty(wb);
}

struct below {
  const char *bucket, *prefix;
};

static bool want_below(struct fsx_wb *wb, const void *arg)
{
  const struct below *b = arg;
  const char *key = fsx_inode_key(wb->m->tab, wb->in);

  return !strcmp(wb->in->bucket, b->bucket) &&
         !strncmp(key, b->prefix, strlen(b->prefix)) && fsx_wb_dirty(wb);
}

int fsx_wb_commit_below(struct fsx_mount *m, const char *bucket,
                        const char *prefix)
{
  struct below b = {bucket, prefix};
  struct fsx_wb **v;
  size_t n = collect(m, &v, want_below, &b);
  int rc = 0;

  for (size_t i = 0; i < n; i++) {
    int r = fsx_wb_commit(m, v[i]);
    if (r && !rc)
      rc = r;
    fsx_wb_put(m, v[i]);
  }
  free(v);
  return rc;
}

static bool want_below_any(struct fsx_wb *wb, const void *arg)
{
  const struct below *b = arg;
  const char *key = fsx_inode_key(wb->m->tab, wb->in);

  return !strcmp(wb->in->bucket, b->bucket) &&
         !strncmp(key, b->prefix, strlen(b->prefix));
}

int fsx_wb_gate_below(struct fsx_mount *m, const char *bucket,
                      const char *prefix, struct fsx_wb ***out, size_t *nout)
{
  struct below b = {bucket, prefix};
  struct fsx_wb **v;
  size_t n = collect(m, &v, want_below_any, &b), k = 0;
  int rc = 0;

  for (; k < n; k++)
    if ((rc = fsx_wb_gate(m, v[k])))
      break;
  if (rc) { /* v[0..k) gated; v[k] failed its commit, not gated */
    for (size_t i = k; i < n; i++)
      fsx_wb_put(m, v[i]);
    fsx_wb_ungate_all(m, v, k);
    return rc;
  }
  *out = v;
  *nout = n;
  return 0;
}

void fsx_wb_ungate_all(struct fsx_mount *m, struct fsx_wb **v, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    fsx_wb_ungate(v[i]);
    fsx_wb_put(m, v[i]);
  }
  free(v);
}

struct fsx_wb *fsx_wb_find(struct fsx_mount *m, struct fsx_wb **v, size_t n,
                           const char *key)
{
  for (size_t i = 0; i < n; i++)
    if (!strcmp(fsx_inode_key(m->tab, v[i]->in), key))
      return v[i];
  return NULL;
}

bool fsx_wb_pending_below(struct fsx_mount *m, const char *bucket,
                          const char *prefix)
{
  struct below b = {bucket, prefix};
  struct fsx_wb **v;
  size_t n = collect(m, &v, want_below, &b);
  bool any = false;

  for (size_t i = 0; i < n; i++) {
    pthread_mutex_lock(&v[i]->plock);
    any = any || (!v[i]->on_server && !v[i]->unlinked);
    pthread_mutex_unlock(&v[i]->plock);
    fsx_wb_put(m, v[i]);
  }
  free(v);
  return any;
}

static bool want_child(struct fsx_wb *wb, const void *arg)
{
  const struct fsx_inode *dir = arg;
  bool child;

  fsx_table_lock(wb->m->tab);
  child = wb->in->parent == dir->ino && wb->in->name;
  fsx_table_unlock(wb->m->tab);
  return child;
}

void fsx_wb_list_pending(struct fsx_mount *m, struct fsx_inode *dir)
{
  struct fsx_wb **v;
  size_t n = collect(m, &v, want_child, dir);

  for (size_t i = 0; i < n; i++) {
    bool pending;
    pthread_mutex_lock(&v[i]->plock);
    pending = !v[i]->on_server && !v[i]->unlinked;
    pthread_mutex_unlock(&v[i]->plock);
    if (pending)
      fsx_ns_note_entry(m, v[i]->in);
    fsx_wb_put(m, v[i]);
  }
  free(v);
}

static void *retry_main(void *arg)
{
  struct fsx_mount *m = arg;

  pthread_mutex_lock(&m->wb_lock);
  while (!m->wb_stopping) {
    struct timespec ts;
    struct fsx_wb **v;
    size_t n;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(m->o.retry_interval_ms / 1000);
    ts.tv_nsec += (long)(m->o.retry_interval_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    /* wb_cond is also broadcast as part uploads end: wait out the time */
    while (!m->wb_stopping &&
           pthread_cond_timedwait(&m->wb_cond, &m->wb_lock, &ts) != ETIMEDOUT)
      ;
    if (m->wb_stopping)
      break;
    pthread_mutex_unlock(&m->wb_lock);
    n = collect(m, &v, want_failed, NULL);
    for (size_t i = 0; i < n; i++) {
      if (!fsx_wb_commit(m, v[i]))
        log_info("%s: uploaded on retry", v[i]->in->key);
      fsx_wb_put(m, v[i]);
    }
    free(v);
    fsx_wb_leftovers(m, false);
    pthread_mutex_lock(&m->wb_lock);
  }
  pthread_mutex_unlock(&m->wb_lock);
  return NULL;
}

int fsx_wb_start(struct fsx_mount *m)
{
  int rc = pthread_create(&m->wb_thread, NULL, retry_main, m);

  if (rc)
    return -rc;
  m->wb_started = true;
  return 0;
}

void fsx_wb_stop(struct fsx_mount *m)
{
  struct fsx_wb **v;
  size_t n;

  if (m->wb_started) {
    pthread_mutex_lock(&m->wb_lock);
    m->wb_stopping = true;
    pthread_cond_broadcast(&m->wb_cond);
    pthread_mutex_unlock(&m->wb_lock);
    pthread_join(m->wb_thread, NULL);
    m->wb_started = false;
  }
  /* a last try for every dirty file; what still fails is kept on disk */
  n = collect(m, &v, want_dirty, NULL);
  for (size_t i = 0; i < n; i++) {
    struct fsx_wb *wb = v[i];
    if (fsx_wb_commit(m, wb)) {
      const char *key = fsx_inode_key(m->tab, wb->in);
      char reason[256] = "the upload failed at unmount";
      pthread_mutex_lock(&wb->lock);
      fsx_wb_drop_upload(m, wb);
      /* the kept file must be the whole file: what only the base held,
         fetched if the server still answers, else said */
      if (fsx_wb_fetch(m, wb, 0, wb->base_len)) {
        snprintf(reason, sizeof(reason), "the upload failed at unmount; "
                 "bytes of the old object (ETag %s) not held read as zeros",
                 wb->base_etag);
        log_err("%s: bytes of %s not fetched from the object (ETag %s) "
                "read as zeros in the kept file", wb->in->bucket, key,
                wb->base_etag);
      }
      if (fsx_stage_keep(m->stage, wb->path, wb->in->bucket, key, reason))
        wb->kept_in_place = true;
      pthread_mutex_unlock(&wb->lock);
    }
    fsx_wb_put(m, wb);
  }
  free(v);
  n = fsx_wb_leftovers(m, true);
  if (n)
    log_warn("%zu multipart upload(s) could not be aborted: the next mount "
             "with this cache.dir tries again", n);
  /* the kernel is gone: drop every handle's and dirty state's reference */
  while (m->wbs) {
    struct fsx_wb *wb = m->wbs;
    fsx_table_lock(m->tab);
    wb->refs = 1;
    fsx_table_unlock(m->tab);
    fsx_wb_put(m, wb);
  }
}
