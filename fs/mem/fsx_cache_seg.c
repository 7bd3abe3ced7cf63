/*
 * fsx_cache_seg: the page cache's segments (records in fsx_cache_i.h).
 *
 * DESIGN
 * - A segment is backed by the first get that claims one of its chunks
 *   (fsx_cache_seg_back: NONE -> BUSY -> LIVE, locked when asked, the
 *   hook told first: the RDMA plane registers it), outside c->mu. Locked
 *   as its pages are touched (MLOCK_ONFAULT): none is faulted in here, so
 *   a mount's first read waits for no segment's pages (64 MiB: some 20
 *   ms, a first byte's whole budget far away); a chunk's are faulted in
 *   by its filler while its request is on the wire
 *   (fsx_chunk_take_populate). Other
 *   gets claiming chunks of a BUSY segment go on without a hook (the bytes
 *   are right pinned or not), and wait for LIVE (seg_cv) with one (their
 *   tokens need the registration). A get finds a segment BUSY only while
 *   it is backed: one being given back has no chunk to claim.
 * - fsx_cache_release gives segments back: under c->mu it takes a LIVE
 *   segment none of whose chunks is referenced, moves it to BUSY and sets
 *   all its chunks aside (off the hash, the LRU and the free list: no get
 *   can claim or find them); then, without the mutex, tells the hook,
 *   unlocks and drops the pages (MADV_DONTNEED: they read as zeros and
 *   take no memory); then, with it again, puts the chunks at the free
 *   list's tail (the last to be claimed) and the segment to NONE.
 * - Segments are chosen least recently used first (seg_seq: the count of
 *   gets at the last of one of their chunks; seg_used: its time).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/mem/fsx_cache.h"
#include "fs/mem/fsx_cache_i.h"
#include "fs/mem/fsx_mlock.h"

/* segment s's chunks: the first and how many */
static size_t seg_span(const struct fsx_cache *c, size_t s, size_t *first)
{
  *first = s * c->seg_chunks;
  return *first + c->seg_chunks > c->nchunks ? c->nchunks - *first
                                             : c->seg_chunks;
}

static void say_refused(struct fsx_cache *c, size_t len, int err)
{
  struct rlimit rl = {0, 0};

  pthread_mutex_lock(&c->mu);
  c->st.pinned = false;
  pthread_mutex_unlock(&c->mu);
  if (atomic_exchange(&c->refused_logged, true))
    return;
  getrlimit(RLIMIT_MEMLOCK, &rl);
  log_warn("page cache: cannot pin %zu bytes more of the %zu-byte arena "
           "(%zu chunks of %zu bytes) with mlock: %s; RLIMIT_MEMLOCK is %llu "
           "bytes (raise it or run with CAP_IPC_LOCK); continuing unpinned",
           len, c->arena_len, c->nchunks, c->chunk_size, strerror(err),
           (unsigned long long)rl.rlim_cur);
}

void fsx_cache_seg_back(struct fsx_cache *c, uint32_t slot)
{
  size_t s = slot / c->seg_chunks, first, n = seg_span(c, s, &first);
  size_t len = n * c->chunk_size;
  unsigned char *base = c->arena + first * c->chunk_size;
  unsigned char none = SEG_NONE;
  int rc;

  if (!atomic_compare_exchange_strong(&c->seg[s], &none, SEG_BUSY)) {
    /* being backed by another get: with a hook, wait for it (a token
       for a chunk of it needs its registration) */
    if (c->hook && none == SEG_BUSY) {
      pthread_mutex_lock(&c->mu);
      while (atomic_load(&c->seg[s]) == SEG_BUSY)
        pthread_cond_wait(&c->seg_cv, &c->mu);
      pthread_mutex_unlock(&c->mu);
    }
    return;
  }
  if (c->hook)
    c->hook(c->hook_arg, first * c->chunk_size, len, true);
  c->seg_locked[s] = false;
  if (c->want_mlock) {
    if (!(rc = fsx_mlock_onfault(base, len))) {
      c->seg_locked[s] = true;
      atomic_fetch_add(&c->locked_bytes, len);
    } else {
      fsx_munlock(base, len); /* (undo a partial lock) */
      say_refused(c, len, -rc);
    }
  }
  atomic_fetch_add(&c->backed_bytes, len);
  atomic_fetch_add(&c->segs_added, 1);
  pthread_mutex_lock(&c->mu);
  atomic_store(&c->seg[s], SEG_LIVE);
  pthread_cond_broadcast(&c->seg_cv);
  pthread_mutex_unlock(&c->mu);
}

size_t fsx_cache_seg_bytes(const struct fsx_cache *c)
{
  return c->seg_chunks * c->chunk_size;
}

void fsx_cache_set_hook(struct fsx_cache *c,
                        void (*hook)(void *arg, size_t off, size_t len,
                                     bool back),
                        void *arg)
{
  c->hook = hook;
  c->hook_arg = arg;
}

/* Under c->mu: can segment s go (LIVE, no chunk referenced)? */
static bool seg_idle(struct fsx_cache *c, size_t s)
{
  return atomic_load(&c->seg[s]) == SEG_LIVE && !c->seg_refs[s];
}

/* Under c->mu: segment s (seg_idle) to BUSY, its chunks set aside. */
static void seg_take(struct fsx_cache *c, size_t s)
{
  size_t first, n = seg_span(c, s, &first);

  atomic_store(&c->seg[s], SEG_BUSY);
  for (size_t i = first; i < first + n; i++) {
    struct fsx_chunk *ch = &c->chunks[i];

    if (ch->state != CH_FREE) { /* READY on the LRU */
      fsx_cache_hash_del(ch);
      ch->state = CH_FREE;
      ch->valid = 0;
      ch->rc = 0;
      c->nused--;
      c->st.evictions++;
    }
    fsx_cache_list_del(ch);
  }
}

/* Without c->mu: segment s's pages given back; then its chunks freed. */
static void seg_drop(struct fsx_cache *c, size_t s)
{
  size_t first, n = seg_span(c, s, &first);
  size_t len = n * c->chunk_size;
  unsigned char *base = c->arena + first * c->chunk_size;

  if (c->hook)
    c->hook(c->hook_arg, first * c->chunk_size, len, false);
  if (c->seg_locked[s]) {
    fsx_munlock(base, len);
    atomic_fetch_sub(&c->locked_bytes, len);
  }
  /* (cannot fail on a private anonymous mapping of ours, unlocked) */
  madvise(base, len, MADV_DONTNEED);
  atomic_fetch_sub(&c->backed_bytes, len);
  atomic_fetch_add(&c->segs_released, 1);
  pthread_mutex_lock(&c->mu);
  for (size_t i = first; i < first + n; i++) {
    c->chunks[i].populated = false;
    fsx_cache_list_add_tail(&c->freel, &c->chunks[i]);
  }
  atomic_store(&c->seg[s], SEG_NONE);
  pthread_mutex_unlock(&c->mu);
}

/* Under c->mu: the least recently used segment that may go, with age at
   least idle_ms (UINT64_MAX: none), or any when over: -1 if none. */
static ssize_t pick(struct fsx_cache *c, uint64_t now, uint64_t idle_ms,
                    bool over)
{
  ssize_t best = -1;

  for (size_t s = 0; s < c->nsegs; s++) {
    uint64_t age = now - c->seg_used[s];

    if (!seg_idle(c, s) || (!over && (idle_ms == UINT64_MAX || age < idle_ms)))
      continue;
    if (best < 0 || c->seg_seq[s] < c->seg_seq[best])
      best = (ssize_t)s;
  }
  return best;
}

uint64_t fsx_cache_release(struct fsx_cache *c, uint64_t idle_ms,
                           uint64_t keep)
{
  uint64_t freed = 0;

  for (size_t k = 0; k < c->nsegs; k++) { /* bounded: each goes once */
    bool over = atomic_load(&c->backed_bytes) > keep;
    ssize_t s;

    pthread_mutex_lock(&c->mu);
    s = pick(c, clock_mono_ms(), idle_ms, over);
    if (s >= 0)
      seg_take(c, (size_t)s);
    pthread_mutex_unlock(&c->mu);
    if (s < 0)
      break;
    seg_drop(c, (size_t)s);
    freed += seg_span(c, (size_t)s, &(size_t){0}) * c->chunk_size;
  }
  return freed;
}
