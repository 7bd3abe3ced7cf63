/*
 * fsx_held: memory held for a server (see fsx_held.h).
 *
 * DESIGN: an entry goes on h->held (protected by h->lock) with the time it
 * is due back: the deadline of its request's attempt in doubt plus
 * FSX_HELD_MARGIN_MS, on the monotonic clock and on the wall clock (the
 * server's clock, on which the deadline was given). The thread sleeps on
 * h->cv until the earliest is due, takes what is due off the list, and
 * gives it back without the lock (chunks: fsx_cache_put; buffers: the
 * pool, munmap or free). At stop it runs until the list is empty, each
 * entry bounded by its monotonic due time: one whose wall clock is still
 * behind then (the clock was set back) is left as it is, never reused.
 */
#include "fs/plane/fsx_held.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/mem/fsx_cache.h"
#include "fs/mem/fsx_pool.h"
#include "fs/mount/fsx_i.h"
#include "s3/s3_client.h"

/* How far the wall clock may lag the monotonic one before a synchronous
   caller stops waiting for it (the buffer is then never reused). */
#define WALL_LAG_MAX_MS (10 * 60 * 1000)

/* Memory held for a server: a buffer, or n page-cache chunks. */
struct entry {
  struct entry *next;
  uint64_t due, due_wall;     /* ms, CLOCK_MONOTONIC and CLOCK_REALTIME */
  void *buf;                  /* n == 0: a buffer of len bytes */
  size_t len;
  bool unmap;                 /* munmap it, else free it */
  bool run;                   /* a pool run: given back to the pool */
  int n;
  struct fsx_chunk *chunks[]; /* references, dropped when due */
};

struct fsx_held {
  struct fsx_mount *m;        /* fixed */
  pthread_mutex_t lock;
  pthread_cond_t cv;          /* with lock: memory held, or stopping */
  struct entry *held;         /* protected by lock */
  bool stopping;              /* protected by lock */
  pthread_t thread;
  _Atomic uint64_t retired_chunks, reclaimed_chunks, retired_bufs,
      reclaimed_bufs;
  _Atomic bool told;          /* the first doubt was logged */
};

/* When r's memory in doubt is due back, on both clocks. */
static void due_of(const struct s3_req *r, uint64_t *due, uint64_t *due_wall)
{
  uint64_t mono, wall;

  s3_req_rdma_deadline(r, &mono, &wall);
  *due = mono + FSX_HELD_MARGIN_MS;
  *due_wall = wall + FSX_HELD_MARGIN_MS;
}

static bool is_due(uint64_t due, uint64_t due_wall)
{
  return clock_mono_ms() >= due && clock_wall_ms() >= due_wall;
}

static void tell(struct fsx_held *h)
{
  if (!atomic_exchange(&h->told, true))
    log_notice("rdma: a request ended with its token outstanding: its "
               "memory is held, not reused, until its deadline has passed "
               "(rdma.held_chunks, rdma.retired_bufs)");
}

/* Give e's memory back and free e (no lock held). */
static void give_back(struct fsx_held *h, struct entry *e)
{
  if (e->n) {
    for (int i = 0; i < e->n; i++)
      fsx_cache_put(h->m->cache, e->chunks[i]);
    atomic_fetch_add(&h->reclaimed_chunks, (uint64_t)e->n);
  } else {
    if (e->run)
      fsx_pool_put(h->m->pool, e->buf);
    else if (e->unmap)
      munmap(e->buf, e->len);
    else
      free(e->buf);
    atomic_fetch_add(&h->reclaimed_bufs, 1);
  }
  free(e);
}

static void *held_main(void *arg)
{
  struct fsx_held *h = arg;
  struct entry *ready, *e, **pp;
  uint64_t now, wall, next;
  struct timespec ts;
  size_t left;

  pthread_mutex_lock(&h->lock);
  for (;;) {
    now = clock_mono_ms();
    wall = clock_wall_ms();
    next = now + 60000;
    ready = NULL;
    left = 0;
    for (pp = &h->held; (e = *pp);) {
      if (now >= e->due && wall >= e->due_wall) {
        *pp = e->next;
        e->next = ready;
        ready = e;
        continue;
      }
      if (h->stopping && now >= e->due) {
        /* the wall clock was set back: the server may think the deadline
           still ahead; never reused (the arena stays mapped) */
        *pp = e->next;
        log_warn("rdma: %d chunk(s) or a buffer left held at close: the "
                 "wall clock is %llu ms behind their deadline",
                 e->n ? e->n : 1, (unsigned long long)(e->due_wall - wall));
        free(e);
        continue;
      }
      left++;
      if (now < e->due && e->due < next)
        next = e->due;
      else if (now >= e->due && now + 1000 < next)
        next = now + 1000; /* only the wall clock to wait for */
      pp = &e->next;
    }
    if (ready) {
      pthread_mutex_unlock(&h->lock);
      while ((e = ready)) {
        ready = e->next;
        give_back(h, e);
      }
      pthread_mutex_lock(&h->lock);
      continue;
    }
    if (h->stopping && !left)
      break;
    ts = clock_at(next);
    pthread_cond_timedwait(&h->cv, &h->lock, &ts);
  }
  pthread_mutex_unlock(&h->lock);
  return NULL;
}

int fsx_held_start(struct fsx_mount *m, struct fsx_held **out)
{
  struct fsx_held *h = calloc(1, sizeof(*h));
  int rc;

  if (!h)
    return -ENOMEM;
  h->m = m;
  rc = -pthread_mutex_init(&h->lock, NULL);
  if (rc)
    goto free_h;
  rc = -clock_cond_init(&h->cv);
  if (rc)
    goto destroy_lock;
  rc = -pthread_create(&h->thread, NULL, held_main, h);
  if (rc)
    goto destroy_cv;
  *out = h;
  return 0;

destroy_cv:
  pthread_cond_destroy(&h->cv);
destroy_lock:
  pthread_mutex_destroy(&h->lock);
free_h:
  free(h);
  return rc;
}

void fsx_held_stop(struct fsx_held *h)
{
  uint64_t last = 0, now = clock_mono_ms();

  if (!h)
    return;
  pthread_mutex_lock(&h->lock);
  for (struct entry *e = h->held; e; e = e->next)
    if (e->due > last)
      last = e->due;
  h->stopping = true;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->lock);
  if (last > now)
    log_notice("rdma: waiting up to %llu ms for memory a server may still "
               "touch (its token's deadline)",
               (unsigned long long)(last - now));
  pthread_join(h->thread, NULL);
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

/* Hold e (its due times set) until the thread gives it back. */
static void hold(struct fsx_held *h, struct entry *e)
{
  pthread_mutex_lock(&h->lock);
  e->next = h->held;
  h->held = e;
  pthread_cond_broadcast(&h->cv);
  pthread_mutex_unlock(&h->lock);
}

void fsx_held_chunks(struct fsx_held *h, const struct s3_req *r,
                     struct fsx_chunk *const *chunks, int n)
{
  struct entry *e;

  tell(h);
  atomic_fetch_add(&h->retired_chunks, (uint64_t)n);
  e = calloc(1, sizeof(*e) + (size_t)n * sizeof(e->chunks[0]));
  if (!e) {
    log_warn("rdma: out of memory: %d page-cache chunk(s) are never reused",
             n);
    return; /* the references stay taken: never reused */
  }
  due_of(r, &e->due, &e->due_wall);
  e->n = n;
  memcpy(e->chunks, chunks, (size_t)n * sizeof(e->chunks[0]));
  hold(h, e);
}

void fsx_held_mem(struct fsx_held *h, const struct s3_req *r, void *buf,
                  size_t len, bool unmap, bool run)
{
  struct entry *e;

  tell(h);
  atomic_fetch_add(&h->retired_bufs, 1);
  e = calloc(1, sizeof(*e));
  if (!e) {
    log_warn("rdma: out of memory: a %zu-byte buffer is never reused", len);
    return;
  }
  due_of(r, &e->due, &e->due_wall);
  e->buf = buf;
  e->len = len;
  e->unmap = unmap;
  e->run = run;
  hold(h, e);
}

bool fsx_held_wait(struct fsx_held *h, const struct s3_req *r)
{
  uint64_t due, due_wall, now;

  tell(h);
  atomic_fetch_add(&h->retired_bufs, 1);
  due_of(r, &due, &due_wall);
  while (!is_due(due, due_wall)) {
    uint64_t ms = 1000;
    struct timespec ts;
    now = clock_mono_ms();
    if (now >= due + WALL_LAG_MAX_MS)
      return false;
    if (due > now && due - now < ms)
      ms = due - now;
    ts = clock_at(now + ms);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
  }
  atomic_fetch_add(&h->reclaimed_bufs, 1);
  return true;
}

void fsx_held_counts(const struct fsx_held *h, struct fsx_held_counts *c)
{
  memset(c, 0, sizeof(*c));
  if (!h)
    return;
  c->retired_chunks = h->retired_chunks;
  c->reclaimed_chunks = h->reclaimed_chunks;
  c->retired_bufs = h->retired_bufs;
  c->reclaimed_bufs = h->reclaimed_bufs;
}
