/*
 * rdx_rc_table: the RC server's session table; see rdx_rc_table.h.
 * Entries live in one array scanned by id: 1024 compares of 16 bytes per
 * lookup is little next to a chunk's transfer.
 *
 * DESIGN (threads): mu protects n and every entry; frees run after mu is
 * released (a queue pair's destruction waits for the device).
 */
#include "rdma/rdx_rc_table.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
  uint8_t id[RDX_RC_SESSION_BYTES];
  void *obj;          /* NULL: the entry is free */
  bool busy;          /* taken by acquire */
  bool doomed;        /* disconnected while busy: drop at release */
  uint64_t used;      /* connected or a transfer ended */
};

struct rdx_rc_table {
  pthread_mutex_t mu;
  rdx_rc_table_free_fn free_fn;
  void *arg;
  unsigned cap;
  uint64_t idle_ms;
  unsigned n;          /* protected by mu */
  struct entry e[];    /* protected by mu */
};

int rdx_rc_table_create(unsigned cap, uint64_t idle_ms,
                        rdx_rc_table_free_fn free_fn, void *arg,
                        struct rdx_rc_table **out)
{
  struct rdx_rc_table *t;

  if (out)
    *out = NULL;
  if (!out || !free_fn || cap == 0 || cap > 65536 || idle_ms == 0)
    return -EINVAL;
  t = calloc(1, sizeof(*t) + cap * sizeof(t->e[0]));
  if (!t)
    return -ENOMEM;
  if (pthread_mutex_init(&t->mu, NULL)) {
    free(t);
    return -ENOMEM;
  }
  t->free_fn = free_fn;
  t->arg = arg;
  t->cap = cap;
  t->idle_ms = idle_ms;
  *out = t;
  return 0;
}

void rdx_rc_table_destroy(struct rdx_rc_table *t)
{
  if (!t)
    return;
  for (unsigned i = 0; i < t->cap; i++)
    if (t->e[i].obj)
      t->free_fn(t->e[i].obj, t->arg);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

static struct entry *find(struct rdx_rc_table *t, const uint8_t *id)
{
  for (unsigned i = 0; i < t->cap; i++)
    if (t->e[i].obj && memcmp(t->e[i].id, id, RDX_RC_SESSION_BYTES) == 0)
      return &t->e[i];
  return NULL;
}

/* Detach e and hand back its object (to free once mu is released). */
static void *detach(struct rdx_rc_table *t, struct entry *e)
{
  void *obj = e->obj;

  memset(e, 0, sizeof(*e));
  t->n--;
  return obj;
}

/* Free one expired session per round, mu released around each free. */
static unsigned reap_locked(struct rdx_rc_table *t, uint64_t now)
{
  unsigned gone = 0;

  for (unsigned i = 0; i < t->cap; i++) {
    struct entry *e = &t->e[i];
    void *obj;

    if (!e->obj || e->busy || now < e->used || now - e->used < t->idle_ms)
      continue;
    obj = detach(t, e);
    pthread_mutex_unlock(&t->mu);
    t->free_fn(obj, t->arg);
    pthread_mutex_lock(&t->mu);
    gone++;
  }
  return gone;
}

unsigned rdx_rc_table_reap(struct rdx_rc_table *t, uint64_t now)
{
  unsigned gone;

  if (!t)
    return 0;
  pthread_mutex_lock(&t->mu);
  gone = reap_locked(t, now);
  pthread_mutex_unlock(&t->mu);
  return gone;
}

int rdx_rc_table_add(struct rdx_rc_table *t,
                     const uint8_t id[RDX_RC_SESSION_BYTES], void *obj,
                     uint64_t now)
{
  struct entry *slot = NULL;
  int rc = 0;

  if (!t || !id || !obj)
    return -EINVAL;
  pthread_mutex_lock(&t->mu);
  reap_locked(t, now);
  if (find(t, id)) {
    rc = -EEXIST;
    goto unlock;
  }
  for (unsigned i = 0; i < t->cap && !slot; i++)
    if (!t->e[i].obj)
      slot = &t->e[i];
  if (!slot) {
    rc = -ENOSPC;
    goto unlock;
  }
  memcpy(slot->id, id, RDX_RC_SESSION_BYTES);
  slot->obj = obj;
  slot->used = now;
  t->n++;
unlock:
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int rdx_rc_table_acquire(struct rdx_rc_table *t,
                         const uint8_t id[RDX_RC_SESSION_BYTES], void **obj)
{
  struct entry *e;
  int rc = -ENOTCONN;

  if (obj)
    *obj = NULL;
  if (!t || !id || !obj)
    return -EINVAL;
  pthread_mutex_lock(&t->mu);
  e = find(t, id);
  if (e && !e->busy && !e->doomed) {
    e->busy = true;
    *obj = e->obj;
    rc = 0;
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

void rdx_rc_table_release(struct rdx_rc_table *t,
                          const uint8_t id[RDX_RC_SESSION_BYTES], bool broken,
                          uint64_t now)
{
  struct entry *e;
  void *obj = NULL;

  if (!t || !id)
    return;
  pthread_mutex_lock(&t->mu);
  e = find(t, id);
  if (e && e->busy) {
    if (broken || e->doomed) {
      obj = detach(t, e);
    } else {
      e->busy = false;
      e->used = now;
    }
  }
  pthread_mutex_unlock(&t->mu);
  if (obj)
    t->free_fn(obj, t->arg);
}

int rdx_rc_table_remove(struct rdx_rc_table *t,
                        const uint8_t id[RDX_RC_SESSION_BYTES])
{
  struct entry *e;
  void *obj = NULL;
  int rc = -ENOENT;

  if (!t || !id)
    return -EINVAL;
  pthread_mutex_lock(&t->mu);
  e = find(t, id);
  if (e && e->busy) {
    e->doomed = true;
    rc = -EBUSY;
  } else if (e) {
    obj = detach(t, e);
    rc = 0;
  }
  pthread_mutex_unlock(&t->mu);
  if (obj)
    t->free_fn(obj, t->arg);
  return rc;
}

bool rdx_rc_table_has(struct rdx_rc_table *t,
                      const uint8_t id[RDX_RC_SESSION_BYTES])
{
  bool has;

  if (!t || !id)
    return false;
  pthread_mutex_lock(&t->mu);
  has = find(t, id) != NULL;
  pthread_mutex_unlock(&t->mu);
  return has;
}

unsigned rdx_rc_table_count(struct rdx_rc_table *t)
{
  unsigned n;

  if (!t)
    return 0;
  pthread_mutex_lock(&t->mu);
  n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}
