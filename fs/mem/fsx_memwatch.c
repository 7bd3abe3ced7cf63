/*
 * fsx_memwatch: see fsx_memwatch.h.
 *
 * DESIGN
 * - One thread, woken by a timed wait on w->cond (clock_cond_init) once a
 *   second or by fsx_memwatch_stop; w->lock protects stop and the
 *   counters. The cache and the pool have their own locks: the thread
 *   calls them without w->lock.
 */
#include "fs/mem/fsx_memwatch.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/clock.h"
#include "common/failpoint.h"
#include "common/slog.h"
#include "fs/mem/fsx_cache.h"
#include "fs/mem/fsx_memory.h"
#include "fs/mem/fsx_pool.h"

struct fsx_memwatch {
  struct fsx_memwatch_cfg cfg;   /* fixed */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;           /* lock: stop asked */
  bool stop;                     /* lock */
  uint64_t pressure_events;      /* lock */
  uint64_t pressure_released;    /* lock: bytes given back for it */
  uint64_t idle_released;        /* lock: bytes given back for age */
  double some;                   /* lock: the last reading, percent
                                    (-1: none) */
};

/* One round: idle segments and slots, then pressure. */
static void round_once(struct fsx_memwatch *w, uint64_t *cool_until)
{
  struct fsx_cache_stats cs;
  uint64_t idle = 0, pressed = 0;
  bool event = false;
  double some = fsx_memory_pressure(w->cfg.root);
  uint64_t now = clock_mono_ms();

  if (w->cfg.idle_ms) {
    idle = fsx_cache_release(w->cfg.cache, w->cfg.idle_ms, UINT64_MAX);
    if (w->cfg.pool)
      fsx_pool_release(w->cfg.pool, w->cfg.idle_ms);
  }
  fsx_cache_stats(w->cfg.cache, &cs); /* (what is backed after that) */
  /* (tests: the system's pressure simulated, once the cache holds some) */
  if (cs.backed_bytes && FP("mem.pressure"))
    some = 100.0;
  if (some >= FSX_MEMWATCH_SOME && now >= *cool_until) {
    event = true;
    *cool_until = now + FSX_MEMWATCH_COOL_S * 1000u;
    pressed = fsx_cache_release(w->cfg.cache, UINT64_MAX,
                                cs.backed_bytes / 2);
    if (w->cfg.pool)
      fsx_pool_release(w->cfg.pool, 0);
    if (pressed) /* (else every segment is in use: nothing to say) */
      log_notice("memory pressure (some avg10 %.1f%%): the page cache gave "
                 "back %" PRIu64 " MiB of its %" PRIu64 " MiB",
                 some, pressed >> 20, cs.backed_bytes >> 20);
  }
  pthread_mutex_lock(&w->lock);
  w->some = some;
  w->idle_released += idle;
  w->pressure_released += pressed;
  w->pressure_events += event;
  pthread_mutex_unlock(&w->lock);
}

static void *watch_main(void *arg)
{
  struct fsx_memwatch *w = arg;
  uint64_t cool_until = 0;
  struct timespec until;

  pthread_mutex_lock(&w->lock);
  while (!w->stop) {
    pthread_mutex_unlock(&w->lock);
    round_once(w, &cool_until);
    pthread_mutex_lock(&w->lock);
    until = clock_deadline(1000);
    while (!w->stop &&
           pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
      ;
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

int fsx_memwatch_start(const struct fsx_memwatch_cfg *cfg,
                       struct fsx_memwatch **out)
{
  struct fsx_memwatch *w = calloc(1, sizeof(*w));
  int rc;

  *out = NULL;
  if (!w)
    return -ENOMEM;
  w->cfg = *cfg;
  w->some = -1;
  pthread_mutex_init(&w->lock, NULL);
  clock_cond_init(&w->cond);
  rc = -pthread_create(&w->thread, NULL, watch_main, w);
  if (rc) {
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return rc;
  }
  *out = w;
  return 0;
}

void fsx_memwatch_stop(struct fsx_memwatch *w)
{
  if (!w)
    return;
  pthread_mutex_lock(&w->lock);
  w->stop = true;
  pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->lock);
  free(w);
}

/* VmRSS and VmLck of this process, bytes. */
static void vm_of_self(uint64_t *rss, uint64_t *lck)
{
  char line[256];
  unsigned long long kb;
  FILE *f = fopen("/proc/self/status", "re");

  *rss = *lck = 0;
  while (f && fgets(line, sizeof(line), f)) {
    if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
      *rss = (uint64_t)kb * 1024u;
    else if (sscanf(line, "VmLck: %llu kB", &kb) == 1)
      *lck = (uint64_t)kb * 1024u;
  }
  if (f)
    fclose(f);
}

size_t fsx_memwatch_stats(struct fsx_memwatch *w, char *buf, size_t len)
{
  uint64_t rss, lck;
  int n;

  vm_of_self(&rss, &lck);
  pthread_mutex_lock(&w->lock);
  n = snprintf(buf, len,
               "mem.resident_bytes %" PRIu64 "\nmem.locked_bytes %" PRIu64
               "\nmem.target_bytes %" PRIu64 "\nmem.pressure_events %" PRIu64
               "\nmem.pressure_released_bytes %" PRIu64
               "\nmem.idle_released_bytes %" PRIu64
               "\nmem.pressure_some_permille %" PRIu64 "\n",
               rss, lck, w->cfg.target, w->pressure_events,
               w->pressure_released, w->idle_released,
               (uint64_t)(w->some < 0 ? 0 : w->some * 10));
  pthread_mutex_unlock(&w->lock);
  return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len;
}
