/*
 * fsx_dirtimes: see fsx_dirtimes.h.
 *
 * DESIGN
 * - dt->lock protects the waiting directories (an array: a directory is
 *   in it once, with the time it is due and a reference on its inode, so
 *   the kernel forgetting it loses no time) and stop. The thread waits on
 *   dt->cond (CLOCK_MONOTONIC) for the earliest due, takes it out and
 *   stores it without the lock; a change meanwhile queues it again.
 * - A store refused because an operation on the directory's name is under
 *   way (a rename moving its marker) is tried again later, at most
 *   FSX_DIRTIMES_TRIES times (as is one while a directory rename holds
 *   the rename lock: a marker below it may be the one the rename just
 *   deleted, under its old key); one whose directory has no name any more
 *   (removed, replaced) is dropped. At stop the rest are stored at once,
 *   until one fails: a server that refuses or is gone costs the unmount
 *   one store's retries, not one per directory.
 */
#include "fs/ops/fsx_dirtimes.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/meta/fsx_inode.h"
#include "fs/mount/fsx_i.h"
#include "fs/mount/fsx_renlock.h"
#include "fs/ops/fsx_node.h"

#define FSX_DIRTIMES_TRIES 30 /* refusals (a rename under way) */
#define FSX_DIRTIMES_MAX_WAIT_MS 10000 /* a directory changed all along:
                                         stored this long after its
                                         first change at the latest */

struct pend {
  struct fsx_inode *in; /* a reference */
  uint64_t ino;
  uint64_t due_ms;      /* clock_mono_ms */
  uint64_t first_ms;    /* its first change since it was last stored */
  unsigned tries;
};

struct fsx_dirtimes {
  struct fsx_mount *m;  /* fixed */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;  /* lock: queued, or stop */
  struct pend *v;       /* lock: FSX_DIRTIMES_MAX of them */
  size_t n;             /* lock */
  bool stop;            /* lock */
  bool full_logged;     /* lock */
};

/*
 * in's times onto its marker, in order with its name's operations: 0
 * (stored, or nothing to store), -EAGAIN (refused while an operation on
 * the name is under way: to be tried again), or the store's -errno.
 */
static int store(struct fsx_mount *m, struct fsx_inode *in)
{
  struct fsx_inode_view v;
  struct fsx_wmeta mt;
  struct fsx_attr a;
  int rc = 0;

  /* not while a directory rename moves what is below it: its marker's
     key may be one the rename has just deleted (tried later) */
  if (!fsx_renlock_try_read(&m->rename_lock))
    return -EAGAIN;
  if (!fsx_inode_store_begin(m->tab, in)) {
    fsx_renlock_unlock(&m->rename_lock);
    fsx_inode_view(m->tab, in, &v);
    return v.named ? -EAGAIN : 0; /* no name: nothing to store, ever */
  }
  fsx_inode_view(m->tab, in, &v);
  fsx_attr_of(m, in, &a);
  /* a marker known: one this mount made, or a HEAD found (an implicit
     directory's HEAD found none: no time) */
  if (a.kind == FSX_DIR && v.attr.from_head && v.attr.mtime.tv_sec) {
    fsx_shown_meta(m, fsx_inode_ino(in), &a, &mt);
    mt.has_mtime = mt.has_ctime = true;
    mt.mtime = a.mtime;
    mt.ctime = a.ctime.tv_sec ? a.ctime : a.mtime;
    atomic_fetch_add(&m->st.dir_times_storing, 1);
    rc = fsx_store_meta(m, in, &a, &mt);
    if (rc) {
      atomic_fetch_add(&m->st.dir_times_failed, 1);
      log_info("%s: its times not stored on its marker: %s",
               fsx_inode_key(m->tab, in), strerror(-rc));
    } else {
      atomic_fetch_add(&m->st.dir_times_stored, 1);
    }
    atomic_fetch_sub(&m->st.dir_times_storing, 1);
  }
  fsx_inode_store_end(m->tab, in);
  fsx_renlock_unlock(&m->rename_lock);
  return rc;
}

/* Under dt->lock: p queued (its reference kept), or let go when full. */
static void enqueue(struct fsx_dirtimes *dt, const struct pend *p)
{
  for (size_t i = 0; i < dt->n; i++)
    if (dt->v[i].ino == p->ino) { /* (a change meanwhile: its own ref) */
      fsx_inode_put(dt->m->tab, p->in);
      return;
    }
  if (dt->n == FSX_DIRTIMES_MAX) {
    if (!dt->full_logged)
      log_notice("%u directories wait for their times to be stored: "
                 "those of more are kept in memory only",
                 FSX_DIRTIMES_MAX);
    dt->full_logged = true;
    fsx_inode_put(dt->m->tab, p->in);
    return;
  }
  dt->v[dt->n++] = *p;
  pthread_cond_signal(&dt->cond);
}

static void *dirtimes_main(void *arg)
{
  struct fsx_dirtimes *dt = arg;
  bool give_up = false; /* (the thread's own) */
  int rc;

  pthread_mutex_lock(&dt->lock);
  for (;;) {
    uint64_t now = clock_mono_ms();
    size_t first = 0;
    struct pend p;
    bool stopping;

    if (!dt->n) {
      if (dt->stop)
        break;
      pthread_cond_wait(&dt->cond, &dt->lock);
      continue;
    }
    for (size_t i = 1; i < dt->n; i++)
      if (dt->v[i].due_ms < dt->v[first].due_ms)
        first = i;
    if (!dt->stop && dt->v[first].due_ms > now) {
      struct timespec at = clock_at(dt->v[first].due_ms);
      pthread_cond_timedwait(&dt->cond, &dt->lock, &at);
      continue;
    }
    p = dt->v[first];
    dt->v[first] = dt->v[--dt->n];
    stopping = dt->stop;
    pthread_mutex_unlock(&dt->lock);
    rc = give_up ? 0 : store(dt->m, p.in);
    if (rc == -EAGAIN && !stopping && ++p.tries < FSX_DIRTIMES_TRIES) {
      p.due_ms = clock_mono_ms() + FSX_DIRTIMES_DELAY_MS;
      pthread_mutex_lock(&dt->lock);
      enqueue(dt, &p);
      continue;
    }
    /* at unmount, a server that fails one store gets no more (each would
       spend its retries: the unmount waits for none) */
    if (rc && rc != -EAGAIN && stopping && !give_up) {
      give_up = true;
      log_notice("unmount: directory times not stored on their markers "
                 "from here on (%s)", strerror(-rc));
    }
    fsx_inode_put(dt->m->tab, p.in);
    pthread_mutex_lock(&dt->lock);
  }
  pthread_mutex_unlock(&dt->lock);
  return NULL;
}

int fsx_dirtimes_start(struct fsx_mount *m, struct fsx_dirtimes **out)
{
  struct fsx_dirtimes *dt = calloc(1, sizeof(*dt));
  int rc = -ENOMEM;

  *out = NULL;
  if (!dt)
    return -ENOMEM;
  dt->m = m;
  if (!(dt->v = calloc(FSX_DIRTIMES_MAX, sizeof(*dt->v))))
    goto free_dt;
  pthread_mutex_init(&dt->lock, NULL);
  if ((rc = -clock_cond_init(&dt->cond)))
    goto destroy_lock;
  if ((rc = -pthread_create(&dt->thread, NULL, dirtimes_main, dt)))
    goto destroy_cond;
  *out = dt;
  return 0;

destroy_cond:
  pthread_cond_destroy(&dt->cond);
destroy_lock:
  pthread_mutex_destroy(&dt->lock);
  free(dt->v);
free_dt:
  free(dt);
  return rc;
}

void fsx_dirtimes_stop(struct fsx_dirtimes *dt)
{
  if (!dt)
    return;
  pthread_mutex_lock(&dt->lock);
  dt->stop = true;
  pthread_cond_signal(&dt->cond);
  pthread_mutex_unlock(&dt->lock);
  pthread_join(dt->thread, NULL);
  pthread_cond_destroy(&dt->cond);
  pthread_mutex_destroy(&dt->lock);
  free(dt->v);
  free(dt);
}

void fsx_dir_changed(struct fsx_mount *m, struct fsx_inode *dir)
{
  struct fsx_dirtimes *dt = m->dirtimes;
  struct pend p;

  fsx_inode_dir_touch(m->tab, dir);
  if (!dt)
    return;
  p.ino = fsx_inode_ino(dir);
  if (!(p.in = fsx_inode_get(m->tab, p.ino)))
    return;
  p.first_ms = clock_mono_ms();
  p.due_ms = p.first_ms + FSX_DIRTIMES_DELAY_MS;
  p.tries = 0;
  pthread_mutex_lock(&dt->lock);
  for (size_t i = 0; i < dt->n; i++)
    if (dt->v[i].ino == p.ino) /* a burst: one store after it */
      dt->v[i].due_ms =
          p.due_ms < dt->v[i].first_ms + FSX_DIRTIMES_MAX_WAIT_MS
              ? p.due_ms
              : dt->v[i].first_ms + FSX_DIRTIMES_MAX_WAIT_MS;
  enqueue(dt, &p);
  pthread_mutex_unlock(&dt->lock);
}
