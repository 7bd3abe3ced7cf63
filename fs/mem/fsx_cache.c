/*
 * fsx_cache: the page cache. See fsx_cache.h for the life of a chunk.
 *
 * DESIGN
 * - One mutex, c->mu, protects everything that changes: every chunk
 *   descriptor's fields except data (fixed at create), the hash table, the
 *   LRU and free lists, and the stats. No other lock is taken under it, and
 *   nothing slow (no I/O, no allocation) runs while it is held. The chunk
 *   bytes are not protected by it: the filler owns them until
 *   fsx_chunk_fill_done(); the mutex taken there and in fsx_chunk_wait()/
 *   fsx_cache_get() orders the writes before any reader's loads, and a READY
 *   chunk is read-only while anyone holds a reference.
 * - Waiters sleep on one of NCV condition variables chosen by the chunk's
 *   slot (slot % NCV), always with c->mu. fill_done broadcasts that cv; a
 *   waiter on another chunk sharing it rechecks its own state and sleeps
 *   again. This keeps memory independent of the chunk count (a per-chunk cv
 *   is 48 bytes, 12 MiB at 256k chunks) at the price of rare spurious
 *   wake-ups; fills complete far less often than gets hit.
 * - A chunk is in exactly one of: the free list (FREE, refs 0, not hashed);
 *   the LRU (READY, refs 0, hashed); or no list (refs > 0, or set aside by
 *   a segment's release). A chunk hashed is findable by get; invalidation
 *   and fill errors unhash at once and the last put frees. Eviction takes
 *   the free list first, then the LRU tail. The filler calls fill_done
 *   before its own put (a fill abandoned by its last reference is freed,
 *   but waiters on it would sleep on) and never waits on a chunk it must
 *   fill. invalidate scans the descriptors: it is rare, and a per-file
 *   index would cost every get.
 * - The arena is mmap'ed whole (address space only: untouched pages take
 *   no memory) and used in segments (1/16 of it, at most SEG_MAX): the
 *   first get that claims a chunk of a segment not backed backs it
 *   (locked when asked, as its pages are touched) in fsx_cache_seg.c;
 *   the filler of a chunk's first claim faults in its pages while its
 *   request is on the wire (fsx_chunk_take_populate: in its own thread,
 *   not in the event loop whose copy fills the chunk, and not before the
 *   request goes). fsx_cache_seg.c also gives idle segments back
 *   (fsx_cache_release). The free list gives chunks lowest first and
 *   those of segments given back last, so a mount that reads little
 *   holds little.
 */
#include "fs/mem/fsx_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/slog.h"
#include "fs/mem/fsx_cache_i.h"

static uint64_t key_hash(uint64_t file, uint64_t gen, uint64_t index)
{
  uint64_t h = file * 0x9e3779b97f4a7c15ULL;

  h ^= gen + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
  h ^= index + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

static void list_init(struct fsx_chunk *head)
{
  head->prev = head->next = head;
}

void fsx_cache_list_del(struct fsx_chunk *ch)
{
  ch->prev->next = ch->next;
  ch->next->prev = ch->prev;
  ch->prev = ch->next = NULL;
}

static void list_add_head(struct fsx_chunk *head, struct fsx_chunk *ch)
{
  ch->next = head->next;
  ch->prev = head;
  head->next->prev = ch;
  head->next = ch;
}

/* ch next to go (the tail: the least recently used end) */
void fsx_cache_list_add_tail(struct fsx_chunk *head, struct fsx_chunk *ch)
{
  ch->prev = head->prev;
  ch->next = head;
  head->prev->next = ch;
  head->prev = ch;
}

static void hash_add(struct fsx_cache *c, struct fsx_chunk *ch)
{
  struct fsx_chunk **b =
      &c->buckets[key_hash(ch->file, ch->gen, ch->index) & c->bucket_mask];

  ch->hnext = *b;
  if (*b)
    (*b)->hpprev = &ch->hnext;
  ch->hpprev = b;
  *b = ch;
}

void fsx_cache_hash_del(struct fsx_chunk *ch)
{
  if (!ch->hpprev)
    return;
  *ch->hpprev = ch->hnext;
  if (ch->hnext)
    ch->hnext->hpprev = ch->hpprev;
  ch->hnext = NULL;
  ch->hpprev = NULL;
}

/* Back to the free list: refs 0 and not on any list. */
static void chunk_free(struct fsx_cache *c, struct fsx_chunk *ch)
{
  fsx_cache_hash_del(ch);
  ch->state = CH_FREE;
  ch->valid = 0;
  ch->rc = 0;
  c->nused--;
  list_add_head(&c->freel, ch);
}

struct fsx_cache *fsx_cache_create(uint64_t total_bytes, size_t chunk_size,
                                   bool want_mlock, char *err, size_t errlen)
{
  struct fsx_cache *c;
  uint64_t n;
  size_t nb = 1;
  int rc;

  if (chunk_size == 0 || (chunk_size & (chunk_size - 1)) != 0) {
    snprintf(err, errlen, "cache chunk size %zu is not a power of two",
             chunk_size);
    return NULL;
  }
  n = total_bytes / chunk_size;
  if (n < 2) {
    snprintf(err, errlen,
             "cache size %llu holds fewer than 2 chunks of %zu bytes",
             (unsigned long long)total_bytes, chunk_size);
    return NULL;
  }
  if (n > UINT32_MAX || n > SIZE_MAX / chunk_size ||
      n > SIZE_MAX / sizeof(struct fsx_chunk)) {
    snprintf(err, errlen, "cache size %llu is too large",
             (unsigned long long)total_bytes);
    return NULL;
  }
  while (nb < n)
    nb <<= 1;

  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(err, errlen, "out of memory creating the cache");
    return NULL;
  }
  c->nchunks = (size_t)n;
  c->chunk_size = chunk_size;
  c->arena_len = c->nchunks * chunk_size;
  c->bucket_mask = nb - 1;
  c->chunks = calloc(c->nchunks, sizeof(*c->chunks));
  c->buckets = calloc(nb, sizeof(*c->buckets));
  if (!c->chunks || !c->buckets) {
    snprintf(err, errlen, "out of memory for %zu cache chunks", c->nchunks);
    goto free_tables;
  }
  c->arena = mmap(NULL, c->arena_len, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (c->arena == MAP_FAILED) {
    rc = errno;
    snprintf(err, errlen, "cannot map a %zu-byte cache arena: %s",
             c->arena_len, strerror(rc));
    goto free_tables;
  }
  c->want_mlock = want_mlock;
  c->st.pinned = want_mlock; /* until a segment is refused */
  c->seg_chunks = c->nchunks / 16;
  if (c->seg_chunks * chunk_size > SEG_MAX)
    c->seg_chunks = SEG_MAX / chunk_size;
  if (!c->seg_chunks)
    c->seg_chunks = 1;
  c->nsegs = (c->nchunks + c->seg_chunks - 1) / c->seg_chunks;
  c->seg = calloc(c->nsegs, sizeof(*c->seg));
  c->seg_locked = calloc(c->nsegs, sizeof(*c->seg_locked));
  c->seg_used = calloc(c->nsegs, sizeof(*c->seg_used));
  c->seg_seq = calloc(c->nsegs, sizeof(*c->seg_seq));
  c->seg_refs = calloc(c->nsegs, sizeof(*c->seg_refs));
  if (!c->seg || !c->seg_locked || !c->seg_used || !c->seg_seq ||
      !c->seg_refs) {
    snprintf(err, errlen, "out of memory for %zu cache segments", c->nsegs);
    goto unmap_arena;
  }
  rc = pthread_mutex_init(&c->mu, NULL);
  if (rc) {
    snprintf(err, errlen, "cache mutex: %s", strerror(rc));
    goto unmap_arena;
  }
  for (int i = 0; i < NCV; i++)
    pthread_cond_init(&c->cv[i], NULL); /* cannot fail with NULL attrs */
  pthread_cond_init(&c->seg_cv, NULL);

  list_init(&c->lru);
  list_init(&c->freel);
  for (size_t i = c->nchunks; i-- > 0;) {
    struct fsx_chunk *ch = &c->chunks[i];

    ch->data = c->arena + i * chunk_size;
    ch->slot = (uint32_t)i;
    list_add_head(&c->freel, ch); /* chunk 0 first */
  }
  c->st.chunks_total = c->nchunks;
  c->st.chunk_size = chunk_size;
  return c;

unmap_arena:
  free(c->seg_refs);
  free(c->seg_seq);
  free(c->seg_used);
  free(c->seg_locked);
  free(c->seg);
  munmap(c->arena, c->arena_len);
free_tables:
  free(c->buckets);
  free(c->chunks);
  free(c);
  return NULL;
}

void fsx_cache_destroy(struct fsx_cache *c)
{
  size_t busy = 0;

  if (!c)
    return;
  for (size_t i = 0; i < c->nchunks; i++)
    busy += c->chunks[i].refs != 0;
  if (busy)
    log_warn("page cache destroyed with %zu chunks still referenced: its "
             "arena stays mapped (a server may still write there)", busy);
  for (int i = 0; i < NCV; i++)
    pthread_cond_destroy(&c->cv[i]);
  pthread_cond_destroy(&c->seg_cv);
  pthread_mutex_destroy(&c->mu);
  /* a reference left is memory a server may still touch (fsx_rdma held
     it past close): unmapped, the range could be mapped again for
     something else; left mapped, it goes with the process */
  if (!busy)
    munmap(c->arena, c->arena_len);
  free(c->seg_refs);
  free(c->seg_seq);
  free(c->seg_used);
  free(c->seg_locked);
  free(c->seg);
  free(c->buckets);
  free(c->chunks);
  free(c);
}

void *fsx_cache_arena(struct fsx_cache *c, size_t *len)
{
  if (len)
    *len = c->arena_len;
  return c->arena;
}

size_t fsx_cache_chunk_size(const struct fsx_cache *c)
{
  return c->chunk_size;
}

int fsx_cache_get(struct fsx_cache *c, uint64_t file, uint64_t gen,
                  uint64_t index, bool create, struct fsx_chunk **out,
                  bool *must_fill)
{
  struct fsx_chunk *ch;
  int rc = 0;

  *out = NULL;
  *must_fill = false;
  pthread_mutex_lock(&c->mu);
  for (ch = c->buckets[key_hash(file, gen, index) & c->bucket_mask]; ch;
       ch = ch->hnext)
    if (ch->index == index && ch->file == file && ch->gen == gen)
      break;
  if (ch) {
    if (ch->refs++ == 0) {
      c->seg_refs[ch->slot / c->seg_chunks]++;
      if (ch->state == CH_READY)
        fsx_cache_list_del(ch); /* off the LRU while referenced */
    }
    c->st.hits++;
    *out = ch;
    goto out;
  }
  if (!create) {
    rc = -ENOENT;
    goto out;
  }
  if (c->freel.next != &c->freel) {
    ch = c->freel.next;
    c->nused++;
  } else if (c->lru.prev != &c->lru) {
    ch = c->lru.prev; /* least recently used */
    fsx_cache_hash_del(ch);
    c->st.evictions++;
  } else {
    c->st.nobufs++;
    rc = -ENOBUFS;
    goto out;
  }
  fsx_cache_list_del(ch);
  ch->file = file;
  ch->gen = gen;
  ch->index = index;
  ch->state = CH_FILLING;
  ch->valid = 0;
  ch->rc = 0;
  ch->refs = 1;
  c->seg_refs[ch->slot / c->seg_chunks]++;
  hash_add(c, ch);
  c->st.misses++;
  *out = ch;
  *must_fill = true;
out:
  if (*out) {
    c->seg_used[(*out)->slot / c->seg_chunks] = clock_mono_ms();
    c->seg_seq[(*out)->slot / c->seg_chunks] = ++c->gets;
  }
  pthread_mutex_unlock(&c->mu);
  if (*must_fill &&
      atomic_load(&c->seg[ch->slot / c->seg_chunks]) != SEG_LIVE)
    fsx_cache_seg_back(c, ch->slot);
  return rc;
}

void *fsx_chunk_data(struct fsx_chunk *ch)
{
  return ch->data;
}

bool fsx_chunk_take_populate(struct fsx_cache *c, struct fsx_chunk *ch)
{
  (void)c;
  if (ch->populated)
    return false;
  ch->populated = true;
  return true;
}

size_t fsx_chunk_arena_offset(const struct fsx_cache *c,
                              const struct fsx_chunk *ch)
{
  return (size_t)(ch->data - c->arena);
}

void fsx_chunk_fill_done(struct fsx_cache *c, struct fsx_chunk *ch, int rc,
                         size_t valid)
{
  pthread_mutex_lock(&c->mu);
  if (rc < 0) {
    ch->state = CH_ERROR;
    ch->rc = rc;
    ch->valid = 0;
    fsx_cache_hash_del(ch); /* not cached: the next get fetches again */
    c->st.fill_errors++;
  } else {
    ch->state = CH_READY;
    ch->rc = 0;
    ch->valid = valid < c->chunk_size ? valid : c->chunk_size;
  }
  pthread_cond_broadcast(&c->cv[ch->slot & (NCV - 1)]);
  pthread_mutex_unlock(&c->mu);
}

bool fsx_chunk_ready(struct fsx_cache *c, struct fsx_chunk *ch)
{
  bool ready;

  pthread_mutex_lock(&c->mu);
  ready = ch->state != CH_FILLING;
  pthread_mutex_unlock(&c->mu);
  return ready;
}

int fsx_chunk_wait(struct fsx_cache *c, struct fsx_chunk *ch, size_t *valid)
{
  int rc;

  pthread_mutex_lock(&c->mu);
  while (ch->state == CH_FILLING)
    pthread_cond_wait(&c->cv[ch->slot & (NCV - 1)], &c->mu);
  rc = ch->rc;
  if (valid)
    *valid = ch->valid;
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void fsx_chunk_hold(struct fsx_cache *c, struct fsx_chunk *ch)
{
  pthread_mutex_lock(&c->mu);
  ch->refs++; /* held already, so it is on no list */
  pthread_mutex_unlock(&c->mu);
}

static void put(struct fsx_cache *c, struct fsx_chunk *ch, bool cold)
{
  bool unreferenced = false;

  pthread_mutex_lock(&c->mu);
  if (ch->refs == 0) {
    unreferenced = true;
  } else if (--ch->refs == 0) {
    c->seg_refs[ch->slot / c->seg_chunks]--;
    /* READY and still named: keep it for reuse. Anything else (a failed or
     * abandoned fill, an invalidated chunk) goes back to the free list. */
    if (ch->state != CH_READY || !ch->hpprev)
      chunk_free(c, ch);
    else if (cold)
      fsx_cache_list_add_tail(&c->lru, ch);
    else
      list_add_head(&c->lru, ch);
  }
  pthread_mutex_unlock(&c->mu);
  if (unreferenced)
    log_err("page cache: put of unreferenced chunk %u", (unsigned)ch->slot);
}

void fsx_cache_put(struct fsx_cache *c, struct fsx_chunk *ch)
{
  put(c, ch, false);
}

void fsx_cache_put_cold(struct fsx_cache *c, struct fsx_chunk *ch)
{
  put(c, ch, true);
}

void fsx_cache_invalidate(struct fsx_cache *c, uint64_t file)
{
  /* A scan of the descriptors (about 80 bytes each): invalidation is rare
   * next to lookups, and this keeps the hot path free of a per-file index. */
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < c->nchunks; i++) {
    struct fsx_chunk *ch = &c->chunks[i];

    if (!ch->hpprev || ch->file != file)
      continue;
    fsx_cache_hash_del(ch);
    c->st.invalidated++;
    if (ch->refs == 0) { /* READY on the LRU */
      fsx_cache_list_del(ch);
      chunk_free(c, ch);
    }
  }
  pthread_mutex_unlock(&c->mu);
}

void fsx_cache_stats(struct fsx_cache *c, struct fsx_cache_stats *out)
{
  pthread_mutex_lock(&c->mu);
  *out = c->st;
  out->chunks_used = c->nused;
  out->locked_bytes = atomic_load(&c->locked_bytes);
  out->backed_bytes = atomic_load(&c->backed_bytes);
  out->segments_added = atomic_load(&c->segs_added);
  out->segments_released = atomic_load(&c->segs_released);
  pthread_mutex_unlock(&c->mu);
}
