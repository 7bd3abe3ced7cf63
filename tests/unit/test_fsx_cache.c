/*
 * test_fsx_cache: the page cache. Sizes and rounding, hit/miss, a single fill
 * however many readers, waiters woken with the fill's result, LRU order,
 * referenced chunks never evicted, errors not cached, invalidation with and
 * without references, generations, a threaded stress run that checks every
 * byte it reads against its (file, gen, index), and the mlock path with and
 * without the right to pin (the latter in a forked child).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/mem/fsx_cache.h"

#define CS 4096 /* chunk size used by most tests */

static uint64_t pattern_seed(uint64_t file, uint64_t gen, uint64_t index)
{
  uint64_t h = (file + 1) * 0x9e3779b97f4a7c15ULL;

  h = (h ^ (gen + 0x51)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (index + 0x77)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

/* The bytes chunk (file, gen, index) holds: a word per 8 bytes. */
static void fill_pattern(void *data, size_t len, uint64_t file, uint64_t gen,
                         uint64_t index)
{
  uint64_t s = pattern_seed(file, gen, index), *w = data;

  for (size_t i = 0; i < len / 8; i++)
    w[i] = s + i;
}

static bool check_pattern(const void *data, size_t len, uint64_t file,
                          uint64_t gen, uint64_t index)
{
  uint64_t s = pattern_seed(file, gen, index);
  const uint64_t *w = data;

  for (size_t i = 0; i < len / 8; i++)
    if (w[i] != s + i)
      return false;
  return true;
}

static struct fsx_cache *make(size_t nchunks)
{
  char err[256] = "";
  struct fsx_cache *c = fsx_cache_create(nchunks * CS, CS, false, err,
                                         sizeof(err));

  assert_non_null(c);
  return c;
}

/* get + fill with the pattern + put: leaves (file, gen, index) READY. */
static void load(struct fsx_cache *c, uint64_t file, uint64_t gen,
                 uint64_t index)
{
  struct fsx_chunk *ch;
  bool fill;

  assert_int_equal(fsx_cache_get(c, file, gen, index, true, &ch, &fill), 0);
  assert_true(fill);
  fill_pattern(fsx_chunk_data(ch), CS, file, gen, index);
  fsx_chunk_fill_done(c, ch, 0, CS);
  fsx_cache_put(c, ch);
}

/* Is (file, gen, index) cached and ready? Checks its bytes if so. */
static bool cached(struct fsx_cache *c, uint64_t file, uint64_t gen,
                   uint64_t index)
{
  struct fsx_chunk *ch;
  bool fill;
  size_t valid;
  int rc = fsx_cache_get(c, file, gen, index, false, &ch, &fill);

  if (rc == -ENOENT)
    return false;
  assert_int_equal(rc, 0);
  assert_false(fill);
  assert_int_equal(fsx_chunk_wait(c, ch, &valid), 0);
  assert_int_equal(valid, CS);
  assert_true(check_pattern(fsx_chunk_data(ch), CS, file, gen, index));
  fsx_cache_put(c, ch);
  return true;
}

static uint64_t used(struct fsx_cache *c)
{
  struct fsx_cache_stats st;

  fsx_cache_stats(c, &st);
  return st.chunks_used;
}

static void test_create_sizes(void **state)
{
  char err[256];
  struct fsx_cache *c;
  struct fsx_cache_stats st;
  size_t len = 0;

  static const size_t bad_cs[] = {0, 3, 1000, CS + 1, 3 * CS};
  for (size_t i = 0; i < sizeof(bad_cs) / sizeof(bad_cs[0]); i++) {
    err[0] = '\0';
    assert_null(fsx_cache_create(64 * CS, bad_cs[i], false, err, sizeof(err)));
    assert_non_null(strstr(err, "power of two"));
  }
  /* fewer than two whole chunks */
  static const uint64_t small[] = {0, 1, CS, 2 * CS - 1};
  for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
    err[0] = '\0';
    assert_null(fsx_cache_create(small[i], CS, false, err, sizeof(err)));
    assert_true(strlen(err) > 0);
  }
  /* absurd size: refused, not overflowed */
  assert_null(fsx_cache_create(UINT64_MAX, CS, false, err, sizeof(err)));

  /* exactly two */
  c = fsx_cache_create(2 * CS, CS, false, err, sizeof(err));
  assert_non_null(c);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.chunks_total, 2);
  fsx_cache_destroy(c);

  /* rounded down to whole chunks */
  c = fsx_cache_create(10 * CS + 123, CS, false, err, sizeof(err));
  assert_non_null(c);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.chunks_total, 10);
  assert_int_equal(st.chunk_size, CS);
  assert_int_equal(st.chunks_used, 0);
  assert_false(st.pinned);
  assert_int_equal(fsx_cache_chunk_size(c), CS);
  assert_non_null(fsx_cache_arena(c, &len));
  assert_int_equal(len, 10 * CS);
  fsx_cache_destroy(c);

  /* chunks smaller than a page, and a large chunk */
  c = fsx_cache_create(5 * 512 + 7, 512, false, err, sizeof(err));
  assert_non_null(c);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.chunks_total, 5);
  fsx_cache_destroy(c);
  c = fsx_cache_create(3ULL << 22, 1 << 22, false, err, sizeof(err));
  assert_non_null(c);
  fsx_cache_destroy(c);

  fsx_cache_destroy(NULL);
}

static void test_hit_miss(void **state)
{
  struct fsx_cache *c = make(4);
  struct fsx_cache_stats st;
  struct fsx_chunk *ch, *ch2;
  size_t len, valid = 0;
  unsigned char *arena = fsx_cache_arena(c, &len);
  bool fill;

  assert_int_equal(fsx_cache_get(c, 7, 1, 3, false, &ch, &fill), -ENOENT);
  assert_null(ch);
  assert_int_equal(fsx_cache_get(c, 7, 1, 3, true, &ch, &fill), 0);
  assert_true(fill);
  assert_false(fsx_chunk_ready(c, ch));
  assert_ptr_equal(fsx_chunk_data(ch),
                   arena + fsx_chunk_arena_offset(c, ch));
  assert_int_equal(fsx_chunk_arena_offset(c, ch) % CS, 0);
  assert_true(fsx_chunk_arena_offset(c, ch) + CS <= len);
  fill_pattern(fsx_chunk_data(ch), CS, 7, 1, 3);
  fsx_chunk_fill_done(c, ch, 0, 1000); /* short: end of object */
  assert_true(fsx_chunk_ready(c, ch));
  fsx_cache_put(c, ch);

  assert_int_equal(fsx_cache_get(c, 7, 1, 3, false, &ch2, &fill), 0);
  assert_ptr_equal(ch2, ch);
  assert_false(fill);
  assert_true(fsx_chunk_ready(c, ch2));
  assert_int_equal(fsx_chunk_wait(c, ch2, &valid), 0);
  assert_int_equal(valid, 1000);
  assert_true(check_pattern(fsx_chunk_data(ch2), CS, 7, 1, 3));
  fsx_cache_put(c, ch2);

  /* neighbours are different chunks */
  assert_int_equal(fsx_cache_get(c, 7, 1, 4, false, &ch2, &fill), -ENOENT);
  assert_int_equal(fsx_cache_get(c, 8, 1, 3, false, &ch2, &fill), -ENOENT);
  assert_int_equal(fsx_cache_get(c, 7, 1, 4, true, &ch2, &fill), 0);
  assert_true(fill);
  assert_ptr_not_equal(ch2, ch);
  fsx_chunk_fill_done(c, ch2, 0, CS * 2); /* clamped to the chunk */
  assert_int_equal(fsx_chunk_wait(c, ch2, &valid), 0);
  assert_int_equal(valid, CS);
  fsx_cache_put(c, ch2);

  fsx_cache_stats(c, &st);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 2);
  assert_int_equal(st.chunks_used, 2);
  assert_int_equal(st.evictions, 0);
  fsx_cache_destroy(c);
}

static void test_must_fill_once(void **state)
{
  struct fsx_cache *c = make(4);
  struct fsx_chunk *ch[3];
  bool fill[3];
  size_t valid;

  for (int i = 0; i < 3; i++)
    assert_int_equal(fsx_cache_get(c, 1, 1, 0, true, &ch[i], &fill[i]), 0);
  assert_true(fill[0]);
  assert_false(fill[1]);
  assert_false(fill[2]);
  assert_ptr_equal(ch[1], ch[0]);
  assert_ptr_equal(ch[2], ch[0]);
  assert_false(fsx_chunk_ready(c, ch[1]));
  fill_pattern(fsx_chunk_data(ch[0]), CS, 1, 1, 0);
  fsx_chunk_fill_done(c, ch[0], 0, CS);
  for (int i = 0; i < 3; i++) {
    assert_true(fsx_chunk_ready(c, ch[i]));
    assert_int_equal(fsx_chunk_wait(c, ch[i], &valid), 0);
    assert_int_equal(valid, CS);
    fsx_cache_put(c, ch[i]);
  }
  assert_int_equal(used(c), 1);
  assert_true(cached(c, 1, 1, 0));
  fsx_cache_destroy(c);
}

/* 8 threads get one chunk at once: one fills (slowly), all see the result. */
#define NWAITERS 8

struct waiters {
  struct fsx_cache *c;
  pthread_barrier_t barrier;
  int fill_rc;
  int fillers;        /* atomics: counted by the threads */
  int ok;
};

static void *waiter_thread(void *arg)
{
  struct waiters *w = arg;
  struct fsx_chunk *ch;
  bool fill;
  size_t valid = 12345;
  int rc;

  pthread_barrier_wait(&w->barrier);
  if (fsx_cache_get(w->c, 5, 2, 9, true, &ch, &fill) != 0)
    return NULL;
  if (fill) {
    __atomic_add_fetch(&w->fillers, 1, __ATOMIC_SEQ_CST);
    usleep(50 * 1000); /* let the others reach the wait */
    fill_pattern(fsx_chunk_data(ch), CS, 5, 2, 9);
    fsx_chunk_fill_done(w->c, ch, w->fill_rc, w->fill_rc ? 0 : CS - 8);
  }
  rc = fsx_chunk_wait(w->c, ch, &valid);
  if (rc == w->fill_rc &&
      (rc ? valid == 0
          : valid == CS - 8 &&
                check_pattern(fsx_chunk_data(ch), CS, 5, 2, 9)))
    __atomic_add_fetch(&w->ok, 1, __ATOMIC_SEQ_CST);
  fsx_cache_put(w->c, ch);
  return NULL;
}

static void run_waiters(int fill_rc)
{
  struct waiters w = {.c = make(4), .fill_rc = fill_rc};
  pthread_t t[NWAITERS];
  struct fsx_cache_stats st;

  pthread_barrier_init(&w.barrier, NULL, NWAITERS);
  for (int i = 0; i < NWAITERS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, waiter_thread, &w), 0);
  for (int i = 0; i < NWAITERS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&w.barrier);
  assert_int_equal(w.fillers, 1);
  assert_int_equal(w.ok, NWAITERS);
  fsx_cache_stats(w.c, &st);
  assert_int_equal(st.misses, 1);
  assert_int_equal(st.hits, NWAITERS - 1);
  assert_int_equal(st.fill_errors, fill_rc ? 1 : 0);
  assert_int_equal(st.chunks_used, fill_rc ? 0 : 1);
  fsx_cache_destroy(w.c);
}

static void test_waiters_ok(void **state)
{
  run_waiters(0);
}

static void test_waiters_error(void **state)
{
  run_waiters(-EIO);
}

static void test_lru_order(void **state)
{
  struct fsx_cache *c = make(4);
  struct fsx_cache_stats st;
  struct fsx_chunk *ch;
  bool fill;

  for (uint64_t i = 0; i < 4; i++)
    load(c, 1, 1, i);
  assert_int_equal(used(c), 4);
  assert_true(cached(c, 1, 1, 0)); /* touch 0: now 1 is the oldest */
  load(c, 1, 1, 4);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.evictions, 1);
  assert_false(cached(c, 1, 1, 1));
  /* order now, oldest first: 2 3 0 4 */
  assert_true(cached(c, 1, 1, 2)); /* 3 0 4 2 */
  load(c, 1, 1, 5);                /* evicts 3 */
  assert_false(cached(c, 1, 1, 3));
  load(c, 1, 1, 6);                /* evicts 0 */
  assert_false(cached(c, 1, 1, 0));
  assert_true(cached(c, 1, 1, 4));
  assert_true(cached(c, 1, 1, 2));
  assert_true(cached(c, 1, 1, 5));
  assert_true(cached(c, 1, 1, 6));
  /* a hit while referenced does not let it be evicted */
  assert_int_equal(fsx_cache_get(c, 1, 1, 4, false, &ch, &fill), 0);
  load(c, 1, 1, 7); /* 4 is oldest but held: evicts 2 */
  assert_false(cached(c, 1, 1, 2));
  fsx_cache_put(c, ch);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.evictions, 4);
  assert_int_equal(st.chunks_used, 4);
  fsx_cache_destroy(c);
}

/* a chunk put cold (a lookup's speculative bytes) goes before any read */
static void test_put_cold(void **state)
{
  struct fsx_cache *c = make(4);
  struct fsx_chunk *ch;
  bool fill;

  (void)state;
  for (uint64_t i = 0; i < 3; i++)
    load(c, 1, 1, i);
  assert_int_equal(fsx_cache_get(c, 2, 1, 0, true, &ch, &fill), 0);
  fill_pattern(fsx_chunk_data(ch), CS, 2, 1, 0);
  fsx_chunk_fill_done(c, ch, 0, CS);
  fsx_cache_put_cold(c, ch); /* the newest, but cold */
  load(c, 1, 1, 3);          /* evicts it, not 0 (the oldest read) */
  assert_false(cached(c, 2, 1, 0));
  assert_true(cached(c, 1, 1, 0));
  /* once read, it is as any other */
  assert_int_equal(fsx_cache_get(c, 2, 1, 0, true, &ch, &fill), 0);
  fill_pattern(fsx_chunk_data(ch), CS, 2, 1, 0);
  fsx_chunk_fill_done(c, ch, 0, CS);
  fsx_cache_put_cold(c, ch); /* (evicted 1) */
  assert_true(cached(c, 2, 1, 0)); /* read: to the head */
  load(c, 1, 1, 4); /* evicts the oldest read, 2, not it */
  assert_true(cached(c, 2, 1, 0));
  fsx_cache_destroy(c);
}

static void test_referenced_never_evicted(void **state)
{
  struct fsx_cache *c = make(3);
  struct fsx_cache_stats st;
  struct fsx_chunk *ch[3], *x;
  bool fill;

  /* two READY and held, one still FILLING */
  for (uint64_t i = 0; i < 2; i++) {
    load(c, 1, 1, i);
    assert_int_equal(fsx_cache_get(c, 1, 1, i, false, &ch[i], &fill), 0);
  }
  assert_int_equal(fsx_cache_get(c, 1, 1, 2, true, &ch[2], &fill), 0);
  assert_true(fill);
  assert_int_equal(fsx_cache_get(c, 2, 1, 0, true, &x, &fill), -ENOBUFS);
  assert_null(x);
  assert_int_equal(fsx_cache_get(c, 2, 1, 1, true, &x, &fill), -ENOBUFS);
  /* lookups of what is there still work */
  assert_int_equal(fsx_cache_get(c, 1, 1, 2, true, &x, &fill), 0);
  assert_false(fill);
  fsx_cache_put(c, x);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.nobufs, 2);
  assert_int_equal(st.evictions, 0);

  fill_pattern(fsx_chunk_data(ch[2]), CS, 1, 1, 2);
  fsx_chunk_fill_done(c, ch[2], 0, CS);
  fsx_cache_put(c, ch[1]); /* only 1 is evictable */
  assert_int_equal(fsx_cache_get(c, 2, 1, 0, true, &x, &fill), 0);
  assert_true(fill);
  assert_ptr_equal(x, ch[1]);
  assert_int_equal(fsx_cache_get(c, 2, 1, 1, true, &ch[1], &fill), -ENOBUFS);
  fsx_chunk_fill_done(c, x, 0, 0);
  fsx_cache_put(c, x);
  fsx_cache_put(c, ch[0]);
  fsx_cache_put(c, ch[2]);
  assert_true(cached(c, 1, 1, 0));
  assert_false(cached(c, 1, 1, 1));
  assert_true(cached(c, 1, 1, 2));
  fsx_cache_destroy(c);
}

/*
 * A chunk still referenced when the cache goes (memory the RDMA data plane
 * holds for a server that may still write there) keeps the arena mapped:
 * unmapped, its range could be mapped again for something else.
 */
static void test_destroy_referenced(void **state)
{
  struct fsx_cache *c = make(2);
  struct fsx_chunk *ch;
  long page = sysconf(_SC_PAGESIZE);
  void *data;
  bool fill;

  (void)state;
  assert_int_equal(fsx_cache_get(c, 1, 1, 0, true, &ch, &fill), 0);
  data = fsx_chunk_data(ch);
  fsx_cache_destroy(c);
  /* msync fails with ENOMEM on an unmapped range */
  assert_int_equal(msync((void *)((uintptr_t)data & ~(uintptr_t)(page - 1)),
                         (size_t)page, MS_ASYNC),
                   0);
  memset(data, 0x5a, CS); /* still ours to write */
}

static void test_errors_not_cached(void **state)
{
  struct fsx_cache *c = make(2);
  struct fsx_cache_stats st;
  struct fsx_chunk *a, *b, *n;
  bool fill;
  size_t valid = 99;

  assert_int_equal(fsx_cache_get(c, 3, 1, 0, true, &a, &fill), 0);
  assert_true(fill);
  assert_int_equal(fsx_cache_get(c, 3, 1, 0, true, &b, &fill), 0);
  assert_false(fill);
  fsx_chunk_fill_done(c, a, -EIO, 77);
  assert_true(fsx_chunk_ready(c, b));
  assert_int_equal(fsx_chunk_wait(c, b, &valid), -EIO);
  assert_int_equal(valid, 0);
  fsx_cache_put(c, a);
  /* still referenced by b, but a new reader fetches again */
  assert_int_equal(fsx_cache_get(c, 3, 1, 0, false, &n, &fill), -ENOENT);
  assert_int_equal(fsx_cache_get(c, 3, 1, 0, true, &n, &fill), 0);
  assert_true(fill);
  assert_ptr_not_equal(n, a);
  assert_int_equal(used(c), 2);
  fsx_cache_put(c, b); /* last ref of the failed chunk: freed */
  assert_int_equal(used(c), 1);
  fill_pattern(fsx_chunk_data(n), CS, 3, 1, 0);
  fsx_chunk_fill_done(c, n, 0, CS);
  fsx_cache_put(c, n);
  assert_true(cached(c, 3, 1, 0));

  /* a failure with no one else holding it frees at once */
  assert_int_equal(fsx_cache_get(c, 3, 1, 1, true, &a, &fill), 0);
  fsx_chunk_fill_done(c, a, -ETIMEDOUT, 0);
  assert_int_equal(fsx_chunk_wait(c, a, NULL), -ETIMEDOUT);
  fsx_cache_put(c, a);
  assert_false(cached(c, 3, 1, 1));
  fsx_cache_stats(c, &st);
  assert_int_equal(st.fill_errors, 2);
  assert_int_equal(st.chunks_used, 1);
  fsx_cache_destroy(c);
}

static void test_invalidate_unreferenced(void **state)
{
  struct fsx_cache *c = make(8);
  struct fsx_cache_stats st;

  for (uint64_t i = 0; i < 3; i++)
    load(c, 1, 1, i);
  load(c, 1, 2, 0); /* another generation of the same file */
  load(c, 2, 1, 0);
  assert_int_equal(used(c), 5);
  fsx_cache_invalidate(c, 1);
  assert_int_equal(used(c), 1);
  for (uint64_t i = 0; i < 3; i++)
    assert_false(cached(c, 1, 1, i));
  assert_false(cached(c, 1, 2, 0));
  assert_true(cached(c, 2, 1, 0));
  fsx_cache_invalidate(c, 99); /* nothing there */
  fsx_cache_stats(c, &st);
  assert_int_equal(st.invalidated, 4);
  /* the freed chunks are reused before anything is evicted */
  for (uint64_t i = 0; i < 7; i++)
    load(c, 3, 1, i);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.evictions, 0);
  assert_true(cached(c, 2, 1, 0));
  fsx_cache_destroy(c);
}

static void test_invalidate_referenced(void **state)
{
  struct fsx_cache *c = make(4);
  struct fsx_chunk *old, *nw, *filling, *w;
  bool fill;
  size_t valid;

  load(c, 1, 1, 0);
  assert_int_equal(fsx_cache_get(c, 1, 1, 0, false, &old, &fill), 0);
  /* one being filled, with a waiter */
  assert_int_equal(fsx_cache_get(c, 1, 1, 1, true, &filling, &fill), 0);
  assert_true(fill);
  assert_int_equal(fsx_cache_get(c, 1, 1, 1, true, &w, &fill), 0);
  assert_false(fill);
  assert_int_equal(used(c), 2);

  fsx_cache_invalidate(c, 1);
  assert_int_equal(used(c), 2); /* both still referenced */
  assert_int_equal(fsx_cache_get(c, 1, 1, 0, false, &nw, &fill), -ENOENT);
  assert_int_equal(fsx_cache_get(c, 1, 1, 0, true, &nw, &fill), 0);
  assert_true(fill);
  assert_ptr_not_equal(nw, old);
  /* the old one is still readable and intact */
  assert_int_equal(fsx_chunk_wait(c, old, &valid), 0);
  assert_true(check_pattern(fsx_chunk_data(old), CS, 1, 1, 0));
  fill_pattern(fsx_chunk_data(nw), CS, 1, 1, 0);
  fsx_chunk_fill_done(c, nw, 0, CS);
  fsx_cache_put(c, nw);
  assert_true(check_pattern(fsx_chunk_data(old), CS, 1, 1, 0));
  fsx_cache_put(c, old); /* freed now */
  assert_int_equal(used(c), 2);

  /* the fill in flight completes for those who wait on it ... */
  fill_pattern(fsx_chunk_data(filling), CS, 1, 1, 1);
  fsx_chunk_fill_done(c, filling, 0, CS);
  assert_int_equal(fsx_chunk_wait(c, w, &valid), 0);
  assert_true(check_pattern(fsx_chunk_data(w), CS, 1, 1, 1));
  /* ... but is not found by a new reader, and is freed at its last put */
  assert_int_equal(fsx_cache_get(c, 1, 1, 1, false, &nw, &fill), -ENOENT);
  fsx_cache_put(c, filling);
  fsx_cache_put(c, w);
  assert_int_equal(used(c), 1);
  assert_true(cached(c, 1, 1, 0));
  assert_false(cached(c, 1, 1, 1));
  fsx_cache_destroy(c);
}

static void test_generation_change(void **state)
{
  struct fsx_cache *c = make(4);
  struct fsx_chunk *ch;
  bool fill;

  load(c, 1, 1, 0);
  assert_int_equal(fsx_cache_get(c, 1, 2, 0, false, &ch, &fill), -ENOENT);
  assert_int_equal(fsx_cache_get(c, 1, 2, 0, true, &ch, &fill), 0);
  assert_true(fill);
  fill_pattern(fsx_chunk_data(ch), CS, 1, 2, 0);
  fsx_chunk_fill_done(c, ch, 0, CS);
  fsx_cache_put(c, ch);
  assert_true(cached(c, 1, 1, 0));
  assert_true(cached(c, 1, 2, 0));
  assert_int_equal(used(c), 2);
  fsx_cache_destroy(c);
}

/*
 * Stress: threads get/fill/wait/put/invalidate on 8 chunks over 4 files x 3
 * generations x 6 indexes, each holding up to two references, some fills
 * failing. Every READY chunk read must hold its own key's pattern.
 */
#define ST_THREADS 6
#define ST_CHUNKS 8
#define ST_SECONDS 2.0

struct stress {
  struct fsx_cache *c;
  struct timespec start;
  int bad, nobufs, reads, fills, waits; /* atomics */
};

struct held {
  struct fsx_chunk *ch;
  uint64_t f, g, i;
  bool fill;
};

static double since(const struct timespec *t0)
{
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

static size_t stress_valid(uint64_t f, uint64_t g, uint64_t i)
{
  return CS - 8 * ((f * 7 + g * 3 + i) % 16);
}

/*
 * Fill a chunk we own at once (as the real fetch completes on its own: a
 * filler that blocked on another chunk could deadlock against its filler),
 * yielding first so that others find it FILLING and wait.
 */
static void stress_fill(struct stress *s, struct held *h, unsigned *seed)
{
  sched_yield();
  if (rand_r(seed) % 10 == 0) {
    fsx_chunk_fill_done(s->c, h->ch, -EIO, 0);
  } else {
    fill_pattern(fsx_chunk_data(h->ch), CS, h->f, h->g, h->i);
    fsx_chunk_fill_done(s->c, h->ch, 0, stress_valid(h->f, h->g, h->i));
  }
  __atomic_add_fetch(&s->fills, 1, __ATOMIC_RELAXED);
}

/* Finish with a held chunk: wait, check its bytes, put. */
static void stress_release(struct stress *s, struct held *h)
{
  size_t valid = 1;
  int rc;

  if (!fsx_chunk_ready(s->c, h->ch))
    __atomic_add_fetch(&s->waits, 1, __ATOMIC_RELAXED);
  rc = fsx_chunk_wait(s->c, h->ch, &valid);

  if (rc == 0) {
    if (valid != stress_valid(h->f, h->g, h->i) ||
        !check_pattern(fsx_chunk_data(h->ch), valid, h->f, h->g, h->i))
      __atomic_add_fetch(&s->bad, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&s->reads, 1, __ATOMIC_RELAXED);
  } else if (rc != -EIO || valid != 0) {
    __atomic_add_fetch(&s->bad, 1, __ATOMIC_SEQ_CST);
  }
  fsx_cache_put(s->c, h->ch);
  h->ch = NULL;
}

struct stress_arg {
  struct stress *s;
  unsigned seed;
};

static void *stress_thread(void *arg)
{
  struct stress *s = ((struct stress_arg *)arg)->s;
  unsigned seed = ((struct stress_arg *)arg)->seed;
  struct held h[2] = {{0}};
  int rc;

  for (long n = 0;; n++) {
    unsigned r = (unsigned)rand_r(&seed);
    struct held *slot = &h[r & 1];

    if ((n & 255) == 0 && since(&s->start) > ST_SECONDS)
      break;
    if (slot->ch) {
      stress_release(s, slot);
      continue;
    }
    slot->f = (r >> 1) % 4;
    slot->g = (r >> 3) % 3;
    slot->i = (r >> 5) % 6;
    if ((r >> 8) % 50 == 0) {
      fsx_cache_invalidate(s->c, slot->f);
      continue;
    }
    rc = fsx_cache_get(s->c, slot->f, slot->g, slot->i, (r >> 14) % 8 != 0,
                       &slot->ch, &slot->fill);
    if (rc == -ENOBUFS)
      __atomic_add_fetch(&s->nobufs, 1, __ATOMIC_RELAXED);
    else if (rc != 0 && rc != -ENOENT)
      __atomic_add_fetch(&s->bad, 1, __ATOMIC_SEQ_CST);
    if (rc != 0)
      continue;
    if (slot->fill)
      stress_fill(s, slot, &seed);
    if ((r >> 20) % 4 == 0)
      stress_release(s, slot); /* short-lived reference */
  }
  for (int k = 0; k < 2; k++)
    if (h[k].ch)
      stress_release(s, &h[k]);
  return NULL;
}

static void test_stress(void **state)
{
  struct stress s = {.c = make(ST_CHUNKS)};
  pthread_t t[ST_THREADS];
  struct stress_arg a[ST_THREADS];
  struct fsx_cache_stats st;

  clock_gettime(CLOCK_MONOTONIC, &s.start);
  for (int i = 0; i < ST_THREADS; i++) {
    a[i] = (struct stress_arg){&s, 0x5eed0000u + (unsigned)i}; /* fixed */
    assert_int_equal(pthread_create(&t[i], NULL, stress_thread, &a[i]), 0);
  }
  for (int i = 0; i < ST_THREADS; i++)
    pthread_join(t[i], NULL);
  fsx_cache_stats(s.c, &st);
  print_message("stress: %d reads, %d fills, %d waits, %d nobufs, %llu hits, "
                "%llu misses, %llu evictions, %llu fill errors, %llu "
                "invalidated\n",
                s.reads, s.fills, s.waits, s.nobufs, (unsigned long long)st.hits,
                (unsigned long long)st.misses,
                (unsigned long long)st.evictions,
                (unsigned long long)st.fill_errors,
                (unsigned long long)st.invalidated);
  assert_int_equal(s.bad, 0);
  assert_true(s.reads > 1000);
  assert_true(s.waits > 0);
  assert_true(st.evictions > 0);
  assert_true(st.fill_errors > 0);
  assert_true(st.invalidated > 0);
  assert_true(st.chunks_used <= ST_CHUNKS);
  /* everything was put back: every chunk is evictable, and each that
   * remains cached holds its own pattern */
  for (uint64_t f = 0; f < 4; f++)
    for (uint64_t g = 0; g < 3; g++)
      for (uint64_t i = 0; i < 6; i++) {
        struct fsx_chunk *ch;
        bool fill;
        size_t valid;

        if (fsx_cache_get(s.c, f, g, i, false, &ch, &fill) != 0)
          continue;
        assert_int_equal(fsx_chunk_wait(s.c, ch, &valid), 0);
        assert_true(check_pattern(fsx_chunk_data(ch), valid, f, g, i));
        fsx_cache_put(s.c, ch);
      }
  for (uint64_t i = 0; i < ST_CHUNKS; i++)
    load(s.c, 100, 0, i);
  assert_int_equal(used(s.c), ST_CHUNKS);
  fsx_cache_destroy(s.c);
}

/* Does this process hold CAP_IPC_LOCK in its effective set? */
static int cap_ipc_lock(bool drop)
{
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2];

  if (syscall(SYS_capget, &hdr, d) != 0)
    return -errno;
  if (!drop)
    return (d[0].effective >> CAP_IPC_LOCK) & 1;
  d[0].effective &= ~(1U << CAP_IPC_LOCK);
  d[0].permitted &= ~(1U << CAP_IPC_LOCK);
  if (syscall(SYS_capset, &hdr, d) != 0)
    return -errno;
  return 0;
}

static void test_mlock_allowed(void **state)
{
  char err[256];
  struct fsx_cache *c;
  struct fsx_cache_stats st;
  struct rlimit rl;
  size_t len = 16 * CS;

  assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
  c = fsx_cache_create(len, CS, true, err, sizeof(err));
  assert_non_null(c);
  load(c, 1, 1, 0);
  assert_true(cached(c, 1, 1, 0));
  fsx_cache_stats(c, &st);
  /* with the capability, or room under the limit, pinning must succeed */
  if (cap_ipc_lock(false) == 1 || rl.rlim_cur == RLIM_INFINITY)
    assert_true(st.pinned);
  print_message("mlock of %zu bytes: %s\n", len,
                st.pinned ? "pinned" : "not pinned");
  fsx_cache_destroy(c);
}

/* VmLck of this process, in kB (-1: not found). */
static long vm_locked_kb(void)
{
  char line[256];
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");

  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

/*
 * The arena is pinned as it is used: nothing at create, one segment (a
 * sixteenth) when its first chunk is claimed, the next only when a chunk
 * of it is; chunks are claimed lowest first.
 */
static void test_mlock_follows_use(void **state)
{
  char err[256];
  struct fsx_cache *c;
  struct fsx_cache_stats st;
  struct rlimit rl;
  const size_t len = 64 * CS, seg = 4 * CS; /* 16 segments of 4 chunks */
  long before;

  assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
  if (cap_ipc_lock(false) != 1 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < 2 * len) {
    print_message("skipped: mlock not allowed for %zu bytes\n", len);
    return;
  }
  before = vm_locked_kb();
  c = fsx_cache_create(len, CS, true, err, sizeof(err));
  assert_non_null(c);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, 0);
  assert_int_equal(vm_locked_kb(), before);
  for (uint64_t i = 0; i < 4; i++) /* the first segment's chunks */
    load(c, 1, 1, i);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, seg);
  assert_int_equal(vm_locked_kb(), before + (long)(seg / 1024));
  load(c, 1, 1, 4); /* one of the second */
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, 2 * seg);
  assert_true(st.pinned);
  fsx_cache_destroy(c);
  assert_int_equal(vm_locked_kb(), before);
}

/*
 * In a child without CAP_IPC_LOCK and with RLIMIT_MEMLOCK at 64 KiB: 32 KiB
 * pins, 1 MiB does not (its first 64 KiB segment does, the second not) and
 * still works, with one warning naming the limit. The child reports by
 * exit code (cmocka's asserts belong to the parent).
 */
static int mlock_child(void)
{
  char err[256];
  struct rlimit rl = {64 << 10, 64 << 10};
  struct fsx_cache *c;
  struct fsx_cache_stats st;
  struct fsx_chunk *ch;
  bool fill;
  size_t valid;

  if (cap_ipc_lock(true) != 0 || cap_ipc_lock(false) != 0)
    return 10;
  if (setrlimit(RLIMIT_MEMLOCK, &rl) != 0)
    return 11;
  c = fsx_cache_create(32 << 10, CS, true, err, sizeof(err));
  if (!c)
    return 12;
  for (uint64_t i = 0; i < 8; i++) { /* all of it */
    if (fsx_cache_get(c, 1, 1, i, true, &ch, &fill) != 0 || !fill)
      return 13;
    fsx_chunk_fill_done(c, ch, 0, CS);
    fsx_cache_put(c, ch);
  }
  fsx_cache_stats(c, &st);
  if (!st.pinned || st.locked_bytes != 32 << 10)
    return 13;
  fsx_cache_destroy(c);

  c = fsx_cache_create(1 << 20, CS, true, err, sizeof(err));
  if (!c)
    return 14;
  fsx_cache_stats(c, &st);
  if (!st.pinned || st.locked_bytes || st.chunks_total != 256)
    return 15;
  for (uint64_t i = 0; i < 32; i++) { /* two segments of 64 KiB */
    if (fsx_cache_get(c, 1, 1, i, true, &ch, &fill) != 0 || !fill)
      return 16;
    memset(fsx_chunk_data(ch), 0xab, CS);
    fsx_chunk_fill_done(c, ch, 0, CS);
    if (fsx_chunk_wait(c, ch, &valid) != 0 || valid != CS)
      return 17;
    fsx_cache_put(c, ch);
  }
  fsx_cache_stats(c, &st);
  if (st.pinned || st.locked_bytes != 64 << 10)
    return 18;
  fsx_cache_destroy(c);
  return 0;
}

static void test_mlock_refused(void **state)
{
  FILE *log = tmpfile();
  char buf[4096];
  size_t n;
  pid_t pid;
  int status, warnings = 0;

  assert_non_null(log);
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fileno(log), STDERR_FILENO);
    _exit(mlock_child());
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  rewind(log);
  n = fread(buf, 1, sizeof(buf) - 1, log);
  buf[n] = '\0';
  fclose(log);
  print_message("child logged: %s", buf);
  for (char *p = buf; (p = strstr(p, "warning:")); p++)
    warnings++;
  assert_int_equal(warnings, 1);
  assert_non_null(strstr(buf, "RLIMIT_MEMLOCK"));
  assert_non_null(strstr(buf, "1048576")); /* the arena size */
  assert_non_null(strstr(buf, "RLIMIT_MEMLOCK is 65536")); /* the limit */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_sizes),
      cmocka_unit_test(test_hit_miss),
      cmocka_unit_test(test_must_fill_once),
      cmocka_unit_test(test_waiters_ok),
      cmocka_unit_test(test_waiters_error),
      cmocka_unit_test(test_lru_order),
      cmocka_unit_test(test_put_cold),
      cmocka_unit_test(test_referenced_never_evicted),
      cmocka_unit_test(test_errors_not_cached),
      cmocka_unit_test(test_destroy_referenced),
      cmocka_unit_test(test_invalidate_unreferenced),
      cmocka_unit_test(test_invalidate_referenced),
      cmocka_unit_test(test_generation_change),
      cmocka_unit_test(test_stress),
      cmocka_unit_test(test_mlock_follows_use),
      cmocka_unit_test(test_mlock_allowed),
      cmocka_unit_test(test_mlock_refused),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
