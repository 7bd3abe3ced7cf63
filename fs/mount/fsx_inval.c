/*
 * fsx_inval: see fsx_inval.h.
 *
 * DESIGN
 * - iv->lock protects the queue (a singly linked list) and stop; the
 *   thread waits on iv->cond and calls the notification without the lock
 *   (it may wait for the directory's lock in the kernel, until the
 *   operation that queued it is answered).
 */
#include "fs/mount/fsx_inval.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fs/mount/fsx_fuse.h"
#include "fs/mount/fsx_i.h"

struct name {
  struct name *next;
  uint64_t parent;
  char name[];
};

struct fsx_inval {
  struct fsx_mount *m;           /* fixed */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;           /* lock: queued, or stop */
  struct name *head, *tail;      /* lock */
  unsigned n;                    /* lock */
  bool stop;                     /* lock */
};

static void *inval_main(void *arg)
{
  struct fsx_inval *iv = arg;

  pthread_mutex_lock(&iv->lock);
  for (;;) {
    struct name *e = iv->head;

    if (!e) {
      if (iv->stop)
        break;
      pthread_cond_wait(&iv->cond, &iv->lock);
      continue;
    }
    iv->head = e->next;
    if (!iv->head)
      iv->tail = NULL;
    iv->n--;
    pthread_mutex_unlock(&iv->lock);
    /* (ENOENT: the kernel had no such entry; nothing else to do) */
    fuse_lowlevel_notify_inval_entry(iv->m->se, e->parent, e->name,
                                     strlen(e->name));
    free(e);
    pthread_mutex_lock(&iv->lock);
  }
  pthread_mutex_unlock(&iv->lock);
  return NULL;
}

int fsx_inval_start(struct fsx_mount *m, struct fsx_inval **out)
{
  struct fsx_inval *iv = calloc(1, sizeof(*iv));
  int rc;

  *out = NULL;
  if (!iv)
    return -ENOMEM;
  iv->m = m;
  pthread_mutex_init(&iv->lock, NULL);
  pthread_cond_init(&iv->cond, NULL);
  rc = -pthread_create(&iv->thread, NULL, inval_main, iv);
  if (rc) {
    pthread_cond_destroy(&iv->cond);
    pthread_mutex_destroy(&iv->lock);
    free(iv);
    return rc;
  }
  *out = iv;
  return 0;
}

void fsx_inval_stop(struct fsx_inval *iv)
{
  if (!iv)
    return;
  pthread_mutex_lock(&iv->lock);
  iv->stop = true;
  pthread_cond_signal(&iv->cond);
  pthread_mutex_unlock(&iv->lock);
  pthread_join(iv->thread, NULL);
  pthread_cond_destroy(&iv->cond);
  pthread_mutex_destroy(&iv->lock);
  free(iv);
}

void fsx_inval_entry(struct fsx_inval *iv, uint64_t parent, const char *name)
{
  size_t len = strlen(name);
  struct name *e;

  if (!iv || !(e = malloc(sizeof(*e) + len + 1)))
    return; /* (the entry ages out by its timeout) */
  e->next = NULL;
  e->parent = parent;
  memcpy(e->name, name, len + 1);
  pthread_mutex_lock(&iv->lock);
  if (iv->n >= FSX_INVAL_MAX || iv->stop) {
    pthread_mutex_unlock(&iv->lock);
    free(e);
    return;
  }
  if (iv->tail)
    iv->tail->next = e;
  else
    iv->head = e;
  iv->tail = e;
  iv->n++;
  pthread_cond_signal(&iv->cond);
  pthread_mutex_unlock(&iv->lock);
}
