/*
 * rdx_rc_pool: a capped pool of sessions, one user each; see rdx_rc_pool.h.
 *
 * DESIGN (threads): mu protects every field below it; cv is signalled when
 * a slot turns idle or free. Frees run after mu is released.
 */
#include "rdma/rdx_rc_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "common/clock.h"

enum slot_state { SLOT_FREE = 0, SLOT_IDLE, SLOT_BUSY };

struct slot {
  void *obj;            /* NULL while free or reserved */
  enum slot_state state;
  uint64_t gen;         /* the pool's gen when taken or reserved */
  uint64_t stamp;       /* when last put idle: most recent first */
};

struct rdx_rc_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  rdx_rc_pool_free_fn free_fn;
  void *arg;
  unsigned cap;
  uint64_t gen;      /* protected by mu: bumped by flush */
  uint64_t stamp;    /* protected by mu */
  uint64_t made;     /* protected by mu */
  uint64_t dropped;  /* protected by mu */
  struct slot slot[]; /* protected by mu */
};

int rdx_rc_pool_create(unsigned cap, rdx_rc_pool_free_fn free_fn, void *arg,
                       struct rdx_rc_pool **out)
{
  struct rdx_rc_pool *p;

  if (out)
    *out = NULL;
  if (!out || !free_fn || cap == 0 || cap > RDX_RC_POOL_CAP_MAX)
    return -EINVAL;
  p = calloc(1, sizeof(*p) + cap * sizeof(p->slot[0]));
  if (!p)
    return -ENOMEM;
  if (pthread_mutex_init(&p->mu, NULL))
    goto free_p;
  if (clock_cond_init(&p->cv))
    goto destroy_mu;
  p->free_fn = free_fn;
  p->arg = arg;
  p->cap = cap;
  *out = p;
  return 0;

destroy_mu:
  pthread_mutex_destroy(&p->mu);
free_p:
  free(p);
  return -ENOMEM;
}

void rdx_rc_pool_destroy(struct rdx_rc_pool *p)
{
  if (!p)
    return;
  rdx_rc_pool_flush(p);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* An idle session (most recent) or a free slot, taken; NULL if none. */
static struct slot *take(struct rdx_rc_pool *p)
{
  struct slot *best = NULL, *free_slot = NULL;

  for (unsigned i = 0; i < p->cap; i++) {
    struct slot *s = &p->slot[i];

    if (s->state == SLOT_IDLE && (!best || s->stamp > best->stamp))
      best = s;
    else if (s->state == SLOT_FREE && !free_slot)
      free_slot = s;
  }
  if (!best)
    best = free_slot;
  if (best) {
    best->state = SLOT_BUSY;
    best->gen = p->gen;
  }
  return best;
}

int rdx_rc_pool_get(struct rdx_rc_pool *p, uint64_t until, void **obj)
{
  struct slot *s;
  int rc = 0;

  if (obj)
    *obj = NULL;
  if (!p || !obj)
    return -EINVAL;
  pthread_mutex_lock(&p->mu);
  while (!(s = take(p))) {
    if (until == 0) {
      rc = -EAGAIN;
      break;
    }
    if (clock_mono_ms() >= until) {
      rc = -ETIMEDOUT;
      break;
    }
    struct timespec ts = clock_at(until);
    pthread_cond_timedwait(&p->cv, &p->mu, &ts);
  }
  if (s)
    *obj = s->obj;
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* The busy slot holding obj (NULL: a reserved one), or NULL. */
static struct slot *find_busy(struct rdx_rc_pool *p, void *obj)
{
  for (unsigned i = 0; i < p->cap; i++)
    if (p->slot[i].state == SLOT_BUSY && p->slot[i].obj == obj)
      return &p->slot[i];
  return NULL;
}

void rdx_rc_pool_put(struct rdx_rc_pool *p, void *obj, bool broken)
{
  struct slot *s;
  bool drop = broken;

  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  s = find_busy(p, obj);
  if (!s && obj) {
    s = find_busy(p, NULL); /* a new session for a reserved slot */
    if (s)
      p->made++;
    else
      drop = true;
  }
  if (s) {
    if (s->gen != p->gen)
      drop = true;
    if (!obj || drop) {
      s->state = SLOT_FREE;
      s->obj = NULL;
    } else {
      s->state = SLOT_IDLE;
      s->obj = obj;
      s->stamp = ++p->stamp;
    }
  }
  if (obj && drop)
    p->dropped++;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  if (obj && drop)
    p->free_fn(obj, p->arg);
}

void rdx_rc_pool_flush(struct rdx_rc_pool *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->gen++;
  for (unsigned i = 0; i < p->cap; i++) {
    struct slot *s = &p->slot[i];
    void *obj = s->obj;

    if (s->state != SLOT_IDLE || s->gen == p->gen) /* put since: fresh */
      continue;
    s->obj = NULL;
    s->state = SLOT_FREE;
    p->dropped++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    p->free_fn(obj, p->arg);
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
}

void rdx_rc_pool_stats(struct rdx_rc_pool *p, struct rdx_rc_pool_stats *st)
{
  if (!st)
    return;
  *st = (struct rdx_rc_pool_stats){0};
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  st->cap = p->cap;
  for (unsigned i = 0; i < p->cap; i++) {
    if (p->slot[i].state == SLOT_IDLE)
      st->idle++;
    else if (p->slot[i].state == SLOT_BUSY)
      st->busy++;
  }
  st->made = p->made;
  st->dropped = p->dropped;
  pthread_mutex_unlock(&p->mu);
}
