/*
 * fsx_wb_mount: the mount-wide side of write-back (design in fsx_wb.h):
 * the states of the mount (m->wbm->wbs) found by what they are (dirty,
 * failed, below a prefix, children of a directory) for directory renames,
 * listings and rmdir; the retry thread, which wakes every
 * write.retry_interval to commit failed files no handle holds open and to
 * try again the multipart uploads whose abort failed (the leftover
 * list); and stop at unmount: last commits, what still fails
 * kept in cache.dir/unsaved/. Threads: the retry thread; any FUSE thread
 * (finding); the unmounting main thread (stop). m->wbm->lock protects the
 * list of states and the leftover list, and ranks after wb->lock: a
 * state's own lock is never taken under it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/failpoint.h"
#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_etag.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb_i.h"

/* ---- uploads left over: an abort that failed ---- */

struct fsx_leftover {
  struct fsx_leftover *next;
  char *bucket, *key;
  char *upload_id;
  long journal_id;            /* its record in cache.dir */
  bool completion_sent;       /* it may be the object: aborted with care */
};

void fsx_wb_leftover(struct fsx_mount *m, const char *bucket, const char *key,
                     const char *upload_id, long journal_id,
                     bool completion_sent)
{
  struct fsx_leftover *l = calloc(1, sizeof(*l));

  if (l) {
    l->bucket = strdup(bucket);
    l->key = strdup(key);
    l->upload_id = strdup(upload_id);
  }
  if (!l || !l->bucket || !l->key || !l->upload_id) {
    if (l) {
      free(l->bucket);
      free(l->key);
      free(l->upload_id);
      free(l);
    }
    return; /* out of memory: the next mount finds its record */
  }
  l->journal_id = journal_id;
  l->completion_sent = completion_sent;
  pthread_mutex_lock(&m->wbm->lock);
  l->next = m->wbm->leftovers;
  m->wbm->leftovers = l;
  pthread_mutex_unlock(&m->wbm->lock);
}

/* Tried again (m->wbm->lock not held): how many are still left. forget: the
   last try, at unmount (their records stay in cache.dir for the next
   mount). */
static size_t retry_leftovers(struct fsx_mount *m, bool forget)
{
  struct fsx_leftover *l, *next, *keep = NULL;
  size_t left = 0;

  pthread_mutex_lock(&m->wbm->lock);
  l = m->wbm->leftovers;
  m->wbm->leftovers = NULL;
  pthread_mutex_unlock(&m->wbm->lock);
  for (; l; l = next) {
    int rc = FP("leftover");
    if (!rc)
      rc = fsx_etag_abort_upload(m->s3, l->bucket, l->key, l->upload_id,
                                 l->completion_sent);
    next = l->next;
    if (!rc || rc == -ENOENT) {
      log_notice("%s: upload %s of %s aborted on retry", l->bucket,
                 l->upload_id, l->key);
      fsx_stage_forget_upload(m->stage, l->journal_id);
    } else if (!forget) {
      l->next = keep;
      keep = l;
      left++;
      continue;
    } else {
      left++; /* its record stays: the next mount */
    }
    free(l->bucket);
    free(l->key);
    free(l->upload_id);
    free(l);
  }
  if (keep) {
    pthread_mutex_lock(&m->wbm->lock);
    for (l = keep; l->next; l = l->next)
      ;
    l->next = m->wbm->leftovers;
    m->wbm->leftovers = keep;
    pthread_mutex_unlock(&m->wbm->lock);
  }
  return left;
}

/* ---- finding states: directory renames, listings, rmdir ---- */

/*
 * References to the write-back states matching want. Taken for all under
 * m->wbm->lock, filtered after it (want takes wb->lock, which ranks first).
 */
static size_t collect(struct fsx_mount *m, struct fsx_wb ***out,
                      bool (*want)(struct fsx_wb *, const void *),
                      const void *arg)
{
  struct fsx_wb **v = NULL, *wb;
  size_t n = 0, cap = 0, kept = 0;

  *out = NULL;
  if (!m->wbm) /* read-only: no state */
    return 0;
  pthread_mutex_lock(&m->wbm->lock);
  for (wb = m->wbm->wbs; wb; wb = wb->next)
    cap++;
  v = cap ? malloc(cap * sizeof(*v)) : NULL;
  /* a count of 0: being freed, waits for m->wbm->lock to unlist it */
  for (wb = m->wbm->wbs; v && wb; wb = wb->next)
    if (fsx_inode_wb_ref_live(m->tab, wb->in, wb))
      v[n++] = wb;
  pthread_mutex_unlock(&m->wbm->lock);
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
  bool f;

  (void)arg;
  if (fsx_inode_in_use(wb->m->tab, wb->in))
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

/* Unlinked or replaced: the open handles' alone, its key nobody's. */
static bool removed(struct fsx_wb *wb)
{
  bool r;

  pthread_mutex_lock(&wb->plock);
  r = wb->unlinked;
  pthread_mutex_unlock(&wb->plock);
  return r;
}

/* Below the prefix, a file of that name (not one removed). */
static bool want_below_any(struct fsx_wb *wb, const void *arg)
{
  const struct below *b = arg;
  const char *key = fsx_wb_key(wb);

  return !strcmp(fsx_wb_bucket(wb), b->bucket) &&
         !strncmp(key, b->prefix, strlen(b->prefix)) && !removed(wb);
}

/* Below the prefix, and dirty. */
static bool want_below(struct fsx_wb *wb, const void *arg)
{
  return want_below_any(wb, arg) && fsx_wb_dirty(wb);
}

/* Not uploaded yet, nor to be: its first upload is still to come. */
static bool pending(struct fsx_wb *wb)
{
  bool p;

  pthread_mutex_lock(&wb->plock);
  p = !wb->on_server && !wb->unlinked;
  pthread_mutex_unlock(&wb->plock);
  return p;
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
    if (!strcmp(fsx_wb_key(v[i]), key))
      return v[i];
  return NULL;
}

static bool want_pending_below(struct fsx_wb *wb, const void *arg)
{
  return want_below(wb, arg) && pending(wb);
}

bool fsx_wb_pending_below(struct fsx_mount *m, const char *bucket,
                          const char *prefix)
{
  struct below b = {bucket, prefix};
  struct fsx_wb **v;
  size_t n = collect(m, &v, want_pending_below, &b);

  for (size_t i = 0; i < n; i++)
    fsx_wb_put(m, v[i]);
  free(v);
  return n > 0;
}

static bool want_child(struct fsx_wb *wb, const void *arg)
{
  const struct fsx_inode *dir = arg;
  struct fsx_inode_view v;

  fsx_inode_view(wb->m->tab, wb->in, &v);
  return v.named && v.parent == fsx_inode_ino(dir);
}

void fsx_wb_list_pending(struct fsx_mount *m, struct fsx_inode *dir)
{
  struct fsx_wb **v;
  size_t n = collect(m, &v, want_child, dir);

  for (size_t i = 0; i < n; i++) {
    if (pending(v[i]))
      fsx_inode_note_entry(m->tab, v[i]->in);
    fsx_wb_put(m, v[i]);
  }
  free(v);
}

/* ---- the retry thread, and stop ---- */

static void *retry_main(void *arg)
{
  struct fsx_mount *m = arg;

  pthread_mutex_lock(&m->wbm->lock);
  while (!m->wbm->stopping) {
    struct timespec ts = clock_deadline(m->o.retry_interval_ms);
    struct fsx_wb **v;
    size_t n;
    /* m->wbm->cond is also broadcast as part uploads end: wait out the time */
    while (!m->wbm->stopping &&
           pthread_cond_timedwait(&m->wbm->cond, &m->wbm->lock, &ts) !=
               ETIMEDOUT)
      ;
    if (m->wbm->stopping)
      break;
    pthread_mutex_unlock(&m->wbm->lock);
    n = collect(m, &v, want_failed, NULL);
    for (size_t i = 0; i < n; i++) {
      if (!fsx_wb_commit(m, v[i]))
        log_info("%s: uploaded on retry", fsx_wb_key(v[i]));
      fsx_wb_put(m, v[i]);
    }
    free(v);
    retry_leftovers(m, false);
    pthread_mutex_lock(&m->wbm->lock);
  }
  pthread_mutex_unlock(&m->wbm->lock);
  return NULL;
}

int fsx_wb_start(struct fsx_mount *m)
{
  struct fsx_wbm *w = calloc(1, sizeof(*w));
  int rc;

  if (!w)
    return -ENOMEM;
  rc = -pthread_mutex_init(&w->lock, NULL);
  if (rc)
    goto free_w;
  rc = -clock_cond_init(&w->cond);
  if (rc)
    goto destroy_lock;
  m->wbm = w; /* (before the thread, which reads it) */
  rc = -pthread_create(&w->thread, NULL, retry_main, m);
  if (rc)
    goto destroy_cond;
  return 0;

destroy_cond:
  m->wbm = NULL;
  pthread_cond_destroy(&w->cond);
destroy_lock:
  pthread_mutex_destroy(&w->lock);
free_w:
  free(w);
  return rc;
}

/* Does <file>.parts list the parts of its upload, none of them sent
   again since (a part changed after it went: its old ETag may be the
   one listed)? */
static bool parts_listed(struct fsx_wb *wb)
{
  struct fsx_stage_parts pp;
  bool ok;

  if (fsx_stage_parts_read(wb->path, &pp))
    return false;
  ok = wb->upload_id && !strcmp(pp.upload_id, wb->upload_id) &&
       pp.journal_id == wb->journal_id;
  fsx_stage_parts_free(&pp);
  pthread_mutex_lock(&wb->plock);
  for (unsigned k = 0; ok && k < wb->nparts; k++)
    ok = !wb->parts[k].stale;
  pthread_mutex_unlock(&wb->plock);
  return ok;
}

void fsx_wb_stop(struct fsx_mount *m)
{
  struct fsx_wb **v;
  size_t n;

  if (!m->wbm) /* never started: no state was made */
    return;
  pthread_mutex_lock(&m->wbm->lock);
  m->wbm->stopping = true;
  pthread_cond_broadcast(&m->wbm->cond);
  pthread_mutex_unlock(&m->wbm->lock);
  pthread_join(m->wbm->thread, NULL);
  /* a last try for every dirty file; what still fails is kept on disk */
  (void)FP("unmount"); /* (kill only: an error here means nothing) */
  n = collect(m, &v, want_dirty, NULL);
  for (size_t i = 0; i < n; i++) {
    struct fsx_wb *wb = v[i];
    if (fsx_wb_commit(m, wb)) {
      const char *key = fsx_wb_key(wb);
      char reason[256] = "the upload failed at unmount";
      uint64_t lost = 0;
      pthread_mutex_lock(&wb->lock);
      /* streamed: the runs' bytes into the staging file; parts the server
         has are in an upload that cannot be completed now */
      if (fsx_wb_unstream(m, wb, false, &lost))
        log_err("%s: its write buffers could not be kept", key);
      /* (a list that cannot be rewritten now: the one written as parts
         were acknowledged names every part whose buffer went back) */
      if (lost && (!fsx_wb_keep_parts(wb) || parts_listed(wb))) {
        /* left in place for the next mount, which takes the upload up */
        fsx_wb_journal(wb, true);
        fsx_stage_sync(wb->path, wb->fd, wb->map_fd);
        wb->kept_in_place = true;
        log_err("%s: the upload failed at unmount: left in %s with its "
                "unfinished upload %s, for the next mount with this "
                "cache.dir to finish", key, wb->path, wb->upload_id);
        pthread_mutex_unlock(&wb->lock);
        fsx_wb_put(m, wb);
        continue;
      }
      fsx_wb_end_upload(m, wb, true);
      /* the kept file must be the whole file: what only the base held,
         fetched if the server still answers, else said */
      if (fsx_wb_fetch(m, wb, 0, wb->base_len)) {
        snprintf(reason, sizeof(reason), "the upload failed at unmount; "
                 "bytes of the old object (ETag %s) not held read as zeros",
                 wb->base_etag);
        log_err("%s: bytes of %s not fetched from the object (ETag %s) "
                "read as zeros in the kept file", fsx_wb_bucket(wb), key,
                wb->base_etag);
      }
      if (lost) {
        snprintf(reason, sizeof(reason), "the upload failed at unmount; "
                 "bytes 0-%llu had been uploaded as parts of an upload never "
                 "completed and read as zeros", (unsigned long long)lost);
        log_err("%s: bytes 0-%llu were only in its unfinished upload: read "
                "as zeros in the kept file", key, (unsigned long long)lost);
      }
      if (fsx_stage_keep(m->stage, wb->path, fsx_wb_bucket(wb), key, reason))
        wb->kept_in_place = true;
      pthread_mutex_unlock(&wb->lock);
    }
    fsx_wb_put(m, wb);
  }
  free(v);
  n = retry_leftovers(m, true);
  if (n)
    log_warn("%zu multipart upload(s) could not be aborted: the next mount "
             "with this cache.dir tries again", n);
  /* the kernel is gone: drop every handle's and dirty state's reference */
  while (m->wbm->wbs) {
    struct fsx_wb *wb = m->wbm->wbs;
    fsx_inode_wb_reset(m->tab, wb->in, wb);
    fsx_wb_put(m, wb);
  }
  pthread_cond_destroy(&m->wbm->cond);
  pthread_mutex_destroy(&m->wbm->lock);
  free(m->wbm);
  m->wbm = NULL;
}
