/* fsx_kstore: see fsx_kstore.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/slog.h"
#include "fs/mem/fsx_bufs.h"
#include "fs/mount/fsx_fuse.h"
#include "fs/mount/fsx_i.h"
#include "fs/meta/fsx_inode.h"
#include "fs/read/fsx_kstore.h"

struct item {
  struct item *next;
  uint64_t ino, gen, commits, off, skip_off;
  void *buf;
  size_t len, skip_len;
  void (*done)(void *arg, bool stored); /* NULL: buf to m->bufs */
  void *arg;
};

struct fsx_kstore {
  struct fsx_mount *m;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;        /* lock: queued, or stopping */
  struct item *head, *tail;   /* lock */
  size_t bytes;               /* lock: queued */
  size_t max;                 /* fixed: bytes queued at most */
  _Atomic bool stop;          /* set under lock; read anywhere */
};

/* it is over, stored or not: its buffer back, or its owner told */
static void item_free(struct fsx_kstore *ks, struct item *it, bool stored)
{
  if (it->done)
    it->done(it->arg, stored);
  else
    fsx_bufs_put(ks->m->bufs, it->buf);
  free(it);
}

/* How long a stop waits for a store blocked on a page lock. */
#define STOP_WAIT_S 10

/* [off, off + len) of buf into the kernel's pages of ino. */
static void store(struct fsx_kstore *ks, uint64_t ino, uint64_t off,
                  void *buf, size_t len)
{
  struct fsx_mount *m = ks->m;
  struct fuse_bufvec bv = FUSE_BUFVEC_INIT(len);
  int rc;

  if (!len || atomic_load(&ks->stop) || fuse_session_exited(m->se))
    return;
  bv.buf[0].mem = buf;
  rc = fuse_lowlevel_notify_store(m->se, ino, (off_t)off, &bv, 0);
  if (rc && rc != -ENOENT) /* ENOENT: the kernel forgot the inode */
    log_debug("inode %llu: storing %zu bytes in the kernel's cache: %s",
              (unsigned long long)ino, len, strerror(-rc));
  else if (!rc)
    atomic_fetch_add(&m->st.kstore_bytes, len);
}

/*
 * One item: checked (fsx_inode_kernel_store), stored around what the read
 * answered and never past the object's end (a store grows the kernel's
 * size), then checked again: a drop, a writer or an upload in between may
 * have met our older bytes in the kernel's pages, which are then dropped
 * again (and left unsure for the next open).
 */
static bool run(struct fsx_kstore *ks, struct item *it)
{
  struct fsx_mount *m = ks->m;
  struct fsx_inode *in = fsx_inode_get(m->tab, it->ino);
  size_t head = (size_t)(it->skip_off - it->off);
  size_t tail_off = head + it->skip_len, len = it->len;
  uint64_t epoch, size;
  bool stored = true;

  if (!in || !fsx_inode_kernel_store(m->tab, in, it->gen, it->commits,
                                     &epoch, &size)) {
    atomic_fetch_add(&m->st.kstore_dropped, 1);
    if (in)
      fsx_inode_put(m->tab, in);
    return false;
  }
  if (it->off >= size)
    len = 0;
  else if (len > size - it->off)
    len = (size_t)(size - it->off);
  store(ks, it->ino, it->off, it->buf, head < len ? head : len);
  if (tail_off < len)
    store(ks, it->ino, it->off + tail_off, (char *)it->buf + tail_off,
          len - tail_off);
  /* (asked always: a writer's open waits for it) */
  if (!fsx_inode_kernel_stored(m->tab, in, epoch) &&
      !atomic_load(&ks->stop) && len && !fuse_session_exited(m->se)) {
    atomic_fetch_add(&m->st.kstore_undone, 1);
    fuse_lowlevel_notify_inval_inode(m->se, it->ino, (off_t)it->off,
                                     (off_t)len);
    stored = false;
  }
  fsx_inode_put(m->tab, in);
  return stored; /* (a stop meanwhile: main_loop gives it back) */
}

static void *main_loop(void *arg)
{
  struct fsx_kstore *ks = arg;
  struct item *it;
  bool stored;

  pthread_mutex_lock(&ks->lock);
  while (!ks->stop) {
    if (!(it = ks->head)) {
      pthread_cond_wait(&ks->cond, &ks->lock);
      continue;
    }
    ks->head = it->next;
    if (!ks->head)
      ks->tail = NULL;
    pthread_mutex_unlock(&ks->lock);
    stored = run(ks, it);
    pthread_mutex_lock(&ks->lock);
    if (ks->stop) { /* fsx_kstore_destroy calls it back, if it can */
      it->next = ks->head;
      ks->head = it;
      if (!ks->tail)
        ks->tail = it;
      break;
    }
    ks->bytes -= it->len;
    pthread_mutex_unlock(&ks->lock);
    item_free(ks, it, stored);
    pthread_mutex_lock(&ks->lock);
  }
  pthread_mutex_unlock(&ks->lock);
  return NULL;
}

struct fsx_kstore *fsx_kstore_create(struct fsx_mount *m, size_t max)
{
  struct fsx_kstore *ks = calloc(1, sizeof(*ks));

  if (!ks)
    return NULL;
  ks->m = m;
  ks->max = max;
  pthread_mutex_init(&ks->lock, NULL);
  pthread_cond_init(&ks->cond, NULL);
  if (pthread_create(&ks->thread, NULL, main_loop, ks)) {
    pthread_cond_destroy(&ks->cond);
    pthread_mutex_destroy(&ks->lock);
    free(ks);
    return NULL;
  }
  return ks;
}

bool fsx_kstore_destroy(struct fsx_kstore *ks)
{
  struct timespec until;
  struct item *it;

  if (!ks)
    return true;
  pthread_mutex_lock(&ks->lock);
  ks->stop = true;
  pthread_cond_signal(&ks->cond);
  pthread_mutex_unlock(&ks->lock);
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += STOP_WAIT_S;
  if (pthread_timedjoin_np(ks->thread, NULL, &until)) {
    log_err("the kernel store thread is still waiting for a page lock "
            "after %d s (reads left unanswered): left to the exit",
            STOP_WAIT_S);
    return false;
  }
  while ((it = ks->head)) {
    ks->head = it->next;
    item_free(ks, it, false);
  }
  pthread_cond_destroy(&ks->cond);
  pthread_mutex_destroy(&ks->lock);
  free(ks);
  return true;
}

size_t fsx_kstore_limit(const struct fsx_kstore *ks)
{
  return ks ? ks->max : 0;
}

void fsx_kstore_queue(struct fsx_kstore *ks, uint64_t ino, uint64_t gen,
                      uint64_t commits, uint64_t off, void *buf, size_t len,
                      uint64_t skip_off, size_t skip_len,
                      void (*done)(void *arg, bool stored), void *arg)
{
  struct item *it = malloc(sizeof(*it));

  if (it && skip_off >= off && skip_off - off <= len &&
      skip_len <= len - (size_t)(skip_off - off)) {
    *it = (struct item){.ino = ino, .gen = gen, .commits = commits,
                        .off = off, .skip_off = skip_off, .buf = buf,
                        .len = len, .skip_len = skip_len, .done = done,
                        .arg = arg};
    pthread_mutex_lock(&ks->lock);
    if (!ks->stop && ks->bytes + len <= ks->max) {
      ks->bytes += len;
      if (ks->tail)
        ks->tail->next = it;
      else
        ks->head = it;
      ks->tail = it;
      pthread_cond_signal(&ks->cond);
      pthread_mutex_unlock(&ks->lock);
      return;
    }
    pthread_mutex_unlock(&ks->lock);
  }
  atomic_fetch_add(&ks->m->st.kstore_dropped, 1);
  free(it);
  if (done)
    done(arg, false);
  else
    fsx_bufs_put(ks->m->bufs, buf);
}
