/* fsx_recover_thread: recovery in the background (see fsx_recover_thread.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/slog.h"
#include "fs/fsx_fuse.h"
#include "fs/fsx_i.h"
#include "fs/fsx_recover.h"
#include "fs/fsx_recover_thread.h"
#include "fs/fsx_stage.h"

struct fsx_recover_thread {
  struct fsx_mount *m;
  char *cache_dir;
  pthread_t thread;
  atomic_bool stop;
  pthread_mutex_t lock;
  pthread_cond_t cond;        /* a request waited for is done, or stop */
};

/* A request being waited for; done is protected by t->lock. */
struct waiter {
  struct fsx_recover_thread *t;
  bool done;
};

static void req_done(struct s3_req *q, void *arg)
{
  struct waiter *w = arg;
  struct fsx_recover_thread *t = w->t;

  (void)q;
  pthread_mutex_lock(&t->lock);
  w->done = true; /* w is the waiter's: not touched after this */
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->lock);
}

/* fsx_recover_io.run: q submitted, waited for, cancelled if we stop. */
static int run(void *arg, struct s3_req *q)
{
  struct fsx_recover_thread *t = arg;
  struct waiter w = {t, false};
  bool cancelled = false;

  if (atomic_load(&t->stop))
    return -ECANCELED;
  s3_req_submit(q, req_done, &w);
  pthread_mutex_lock(&t->lock);
  while (!w.done) {
    if (atomic_load(&t->stop) && !cancelled) {
      cancelled = true;
      pthread_mutex_unlock(&t->lock);
      s3_req_cancel(q); /* completes it soon, with -ECANCELED */
      pthread_mutex_lock(&t->lock);
      continue;
    }
    pthread_cond_wait(&t->cond, &t->lock);
  }
  pthread_mutex_unlock(&t->lock);
  return s3_req_result(q);
}

/* A file inode whose object was just replaced: its attributes anew, its
   chunks dropped, the kernel's attributes too (the next open sees the new
   ETag and drops the kernel's pages itself: a page invalidation from here
   could wait on a read no thread serves once the loop has ended). */
static void refresh_file(struct fsx_mount *m, struct fsx_inode *in,
                         const char *bucket, const char *key, bool stopping)
{
  struct fsx_attr a;

  fsx_cache_invalidate(m->cache, fsx_inode_ino(in));
  if (!fsx_ns_head_key(m, bucket, key, &a))
    fsx_inode_set_attr(m->tab, in, &a, true, m->o.attr_ttl_ms);
  if (m->se && !stopping)
    fuse_lowlevel_notify_inval_inode(m->se, fsx_inode_ino(in), -1, 0);
}

/*
 * bucket/key was uploaded: follow its names down from the root as far as
 * the inode table knows them. The last directory known forgets its
 * listing and the kernel its entry for the next name (perhaps a negative
 * one: "no such file", cached); the file itself, if known, is refreshed.
 */
static void forget_key(struct fsx_recover_thread *t, const char *bucket,
                       const char *key)
{
  struct fsx_mount *m = t->m;
  bool stopping = atomic_load(&t->stop);
  size_t pl = m->prefix ? strlen(m->prefix) : 0;
  struct fsx_inode *dir, *in;
  const char *rest = key;
  char name[NAME_MAX + 1];

  if (m->bucket) {
    if (strcmp(bucket, m->bucket) || (pl && strncmp(key, m->prefix, pl)))
      return; /* not under this mount */
    rest = key + pl;
    dir = fsx_inode_get(m->tab, FSX_ROOT_INO);
  } else {
    dir = fsx_inode_find(m->tab, FSX_ROOT_INO, bucket);
  }
  while (dir) {
    size_t n = strcspn(rest, "/");
    bool last = rest[n] == '\0', is_dir = false;
    if (n == 0 || n > NAME_MAX)
      break; /* "a//b": no name this mount shows */
    memcpy(name, rest, n);
    name[n] = '\0';
    in = fsx_inode_find(m->tab, fsx_inode_ino(dir), name);
    if (in) {
      struct fsx_inode_view v;
      fsx_inode_view(m->tab, in, &v);
      is_dir = v.attr.kind == FSX_DIR;
    }
    if (!last && is_dir) {
      fsx_inode_put(m->tab, dir);
      dir = in;
      rest += n + 1;
      continue;
    }
    fsx_dir_invalidate(m->tab, dir);
    if (in && last && !is_dir)
      refresh_file(m, in, bucket, key, stopping);
    else if (m->se && !stopping)
      fuse_lowlevel_notify_inval_entry(m->se, fsx_inode_ino(dir), name, n);
    fsx_inode_put(m->tab, in);
    break;
  }
  fsx_inode_put(m->tab, dir);
}

/* fsx_stage_recover's callback: fsx_recover_file, then the mount told. */
static int recover_one(void *arg, const struct fsx_stage_rec *r,
                       const char *path, int fd, int map_fd, char *reason,
                       size_t reasonlen)
{
  struct fsx_recover_thread *t = arg;
  struct fsx_recover_io io = {t->m, run, t};
  int rc = fsx_recover_file(&io, r, path, fd, map_fd, reason, reasonlen);

  if (!rc) {
    atomic_fetch_add(&t->m->st.recovery_uploaded, 1);
    forget_key(t, r->bucket, r->key);
  }
  return rc;
}

static void *recover_main(void *arg)
{
  struct fsx_recover_thread *t = arg;
  struct fsx_mount *m = t->m;
  struct fsx_recovery rv;

  fsx_stage_recover_until(m->stage, m->s3, recover_one, t, &t->stop, &rv);
  atomic_store(&m->st.recovery_uploaded, (uint64_t)rv.uploaded);
  atomic_store(&m->st.recovery_kept, (uint64_t)rv.kept);
  atomic_fetch_add(&m->st.uploads_unknown, (uint64_t)rv.unknown);
  log_notice("earlier mounts' leftovers: %d unfinished uploads aborted, "
             "%d files uploaded, %d kept in %s/unsaved, %d left in place, "
             "%d unknown uploads left", rv.aborted, rv.uploaded, rv.kept,
             t->cache_dir, rv.left, rv.unknown);
  if (atomic_load(&t->stop))
    log_notice("recovery stopped by the unmount: what it had not done "
               "is left in place for the next mount");
  atomic_store(&m->st.recovery_running, 0);
  return NULL;
}

int fsx_recover_thread_start(struct fsx_mount *m, const char *cache_dir,
                             struct fsx_recover_thread **out)
{
  struct fsx_recover_thread *t;
  int dirs = 0, files = fsx_stage_leftovers(m->stage, &dirs), rc;

  *out = NULL;
  if (!dirs)
    return 0;
  t = calloc(1, sizeof(*t));
  if (!t)
    return -ENOMEM;
  t->m = m;
  atomic_init(&t->stop, false);
  t->cache_dir = strdup(cache_dir);
  if (!t->cache_dir) {
    rc = -ENOMEM;
    goto free_t;
  }
  if ((rc = -pthread_mutex_init(&t->lock, NULL)))
    goto free_dir;
  if ((rc = -pthread_cond_init(&t->cond, NULL)))
    goto destroy_lock;
  log_notice("recovering %d staging file(s) left by %d dead mount(s) in %s, "
             "in the background", files, dirs, cache_dir);
  atomic_store(&m->st.recovery_running, 1);
  if ((rc = -pthread_create(&t->thread, NULL, recover_main, t))) {
    atomic_store(&m->st.recovery_running, 0);
    goto destroy_cond;
  }
  *out = t;
  return 0;

destroy_cond:
  pthread_cond_destroy(&t->cond);
destroy_lock:
  pthread_mutex_destroy(&t->lock);
free_dir:
  free(t->cache_dir);
free_t:
  free(t);
  return rc;
}

void fsx_recover_thread_stop(struct fsx_recover_thread *t)
{
  if (!t)
    return;
  atomic_store(&t->stop, true);
  pthread_mutex_lock(&t->lock);
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->lock);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->lock);
  free(t->cache_dir);
  free(t);
}
