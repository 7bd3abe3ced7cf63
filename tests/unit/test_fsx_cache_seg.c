/*
 * Unit tests for the page cache's segments (fs/mem/fsx_cache_seg.c):
 * backed as reads first claim their chunks, given back when idle or over
 * a bound (fsx_cache_release), pages dropped and unlocked, the hook told,
 * a referenced segment kept, and the cache as good as before afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fs/mem/fsx_cache.h"
#include "fs/mem/fsx_mlock.h"

#define CS (64u << 10) /* chunk: 16 pages */
#define NCH 64u        /* 16 segments of 4 chunks */
#define SEG (4 * CS)

static void load(struct fsx_cache *c, uint64_t index, unsigned char v)
{
  struct fsx_chunk *ch;
  bool fill;

  assert_int_equal(fsx_cache_get(c, 1, 1, index, true, &ch, &fill), 0);
  assert_true(fill);
  memset(fsx_chunk_data(ch), v, CS);
  fsx_chunk_fill_done(c, ch, 0, CS);
  fsx_cache_put(c, ch);
}

/* Is chunk index still cached with byte v throughout? */
static bool cached(struct fsx_cache *c, uint64_t index, unsigned char v)
{
  struct fsx_chunk *ch;
  bool fill, ok = true;
  const unsigned char *d;

  if (fsx_cache_get(c, 1, 1, index, false, &ch, &fill))
    return false;
  d = fsx_chunk_data(ch);
  for (size_t i = 0; i < CS; i++)
    ok = ok && d[i] == v;
  fsx_cache_put(c, ch);
  return ok;
}

/* pages of [p, p + len) resident (mincore) */
static size_t resident_pages(const void *p, size_t len)
{
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = len / pg, in = 0;
  unsigned char *v = calloc(n, 1);

  assert_non_null(v);
  assert_int_equal(mincore((void *)p, len, v), 0);
  for (size_t i = 0; i < n; i++)
    in += v[i] & 1;
  free(v);
  return in;
}

struct hook_log {
  size_t backs, drops;
  size_t last_off, last_len;
};

static void hook(void *arg, size_t off, size_t len, bool back)
{
  struct hook_log *h = arg;

  *(back ? &h->backs : &h->drops) += 1;
  h->last_off = off;
  h->last_len = len;
}

/* Nothing lost, nothing counted twice: with every segment given back,
   nothing is backed, locked or used, and every chunk can be claimed. */
static void drained(struct fsx_cache *c)
{
  struct fsx_cache_stats st;
  struct fsx_chunk *ch[NCH];
  bool fill;

  fsx_cache_release(c, 0, 0);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.backed_bytes, 0);
  assert_int_equal(st.locked_bytes, 0);
  assert_int_equal(st.chunks_used, 0);
  for (unsigned i = 0; i < NCH; i++)
    assert_int_equal(fsx_cache_get(c, 77, 1, i, true, &ch[i], &fill), 0);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.backed_bytes, NCH * CS);
  for (unsigned i = 0; i < NCH; i++) {
    fsx_chunk_fill_done(c, ch[i], 0, CS);
    fsx_cache_put(c, ch[i]);
  }
}

static struct fsx_cache *make(bool mlock)
{
  char err[256];
  struct fsx_cache *c = fsx_cache_create(NCH * CS, CS, mlock, err,
                                         sizeof(err));

  assert_non_null(c);
  return c;
}

/* Idle segments go: their bytes forgotten, pages dropped, hook told; the
   cache then backs and fills them again. */
static void test_release_idle(void **state)
{
  struct fsx_cache *c = make(false);
  struct fsx_cache_stats st;
  struct hook_log h = {0};
  size_t arena_len;
  unsigned char *arena = fsx_cache_arena(c, &arena_len);

  (void)state;
  fsx_cache_set_hook(c, hook, &h);
  for (uint64_t i = 0; i < 8; i++) /* two segments */
    load(c, i, (unsigned char)(i + 1));
  fsx_cache_stats(c, &st);
  assert_int_equal(st.backed_bytes, 2 * SEG);
  assert_int_equal(st.segments_added, 2);
  assert_int_equal(h.backs, 2);
  assert_true(resident_pages(arena, 2 * SEG) == 2 * SEG / 4096);
  /* not idle long enough: nothing goes */
  assert_int_equal(fsx_cache_release(c, 60000, UINT64_MAX), 0);
  assert_true(cached(c, 0, 1));
  assert_int_equal(fsx_cache_release(c, 0, UINT64_MAX), 2 * SEG);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.backed_bytes, 0);
  assert_int_equal(st.segments_released, 2);
  assert_int_equal(st.chunks_used, 0);
  assert_int_equal(h.drops, 2);
  assert_int_equal(resident_pages(arena, 2 * SEG), 0);
  for (uint64_t i = 0; i < 8; i++) { /* forgotten, not merely zeroed */
    struct fsx_chunk *ch;
    bool fill;

    assert_int_equal(fsx_cache_get(c, 1, 1, i, false, &ch, &fill), -ENOENT);
  }
  /* used again: backed again, lowest first, bytes right */
  for (uint64_t i = 0; i < 8; i++)
    load(c, 100 + i, (unsigned char)(0x40 + i));
  for (uint64_t i = 0; i < 8; i++)
    assert_true(cached(c, 100 + i, (unsigned char)(0x40 + i)));
  fsx_cache_stats(c, &st);
  assert_int_equal(st.backed_bytes, 2 * SEG);
  assert_int_equal(st.segments_added, 4);
  drained(c);
  fsx_cache_destroy(c);
}

/* A segment with a chunk referenced stays; over the bound, the least
   recently used go first. */
static void test_release_keeps_referenced_and_recent(void **state)
{
  struct fsx_cache *c = make(false);
  struct fsx_cache_stats st;
  struct fsx_chunk *held;
  bool fill;

  (void)state;
  for (uint64_t i = 0; i < 12; i++) /* three segments: 0-3, 4-7, 8-11 */
    load(c, i, (unsigned char)(i + 1));
  assert_int_equal(fsx_cache_get(c, 1, 1, 5, false, &held, &fill), 0);
  assert_true(cached(c, 0, 1)); /* segment 0 the most recent */
  assert_int_equal(fsx_cache_release(c, UINT64_MAX, UINT64_MAX), 0);
  /* at most two segments' bytes: segment 2 goes (the least recently
     used; 1 is held, 0 was got last) */
  assert_int_equal(fsx_cache_release(c, UINT64_MAX, 2 * SEG), SEG);
  assert_false(cached(c, 8, 9));
  assert_true(cached(c, 0, 1));
  assert_true(cached(c, 6, 7));
  assert_int_equal(fsx_cache_release(c, UINT64_MAX, 0), SEG); /* 0 only */
  assert_false(cached(c, 0, 1));
  assert_true(cached(c, 5, 6));
  fsx_cache_put(c, held);
  assert_int_equal(fsx_cache_release(c, 0, UINT64_MAX), SEG);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.backed_bytes, 0);
  drained(c);
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

/* May this process lock four segments? (else the test is skipped) */
static bool lock_allowed(void)
{
  struct rlimit rl;

  assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4 * SEG &&
      geteuid() != 0) {
    print_message("skipped: mlock not allowed for %u bytes\n", 4 * SEG);
    return false;
  }
  return true;
}

/* A pinned segment given back is unlocked (VmLck, locked_bytes). */
static void test_release_unlocks(void **state)
{
  struct fsx_cache *c;
  struct fsx_cache_stats st;
  long before = vm_locked_kb();

  (void)state;
  if (!lock_allowed())
    return;
  c = make(true);
  for (uint64_t i = 0; i < 8; i++)
    load(c, i, 7);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, 2 * SEG);
  assert_int_equal(vm_locked_kb(), before + (long)(2 * SEG / 1024));
  assert_int_equal(fsx_cache_release(c, 0, UINT64_MAX), 2 * SEG);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, 0);
  assert_int_equal(vm_locked_kb(), before);
  load(c, 50, 9); /* backed and locked again */
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, SEG);
  assert_true(cached(c, 50, 9));
  drained(c);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, NCH * CS);
  fsx_cache_destroy(c);
}

/* A locked segment's first claim faults in no page (a first read waits
   for no segment's pages); its filler is told, once per backing, to fault
   in its chunk's (fsx_chunk_take_populate), and doing so makes that chunk
   alone resident; the segment's locked range is all of it. */
static void test_first_claim_faults_nothing(void **state)
{
  struct fsx_cache *c;
  struct fsx_cache_stats st;
  struct fsx_chunk *ch;
  unsigned char *base;
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  bool fill;

  (void)state;
  if (!lock_allowed())
    return;
  c = make(true);
  assert_int_equal(fsx_cache_get(c, 1, 1, 0, true, &ch, &fill), 0);
  assert_true(fill);
  base = fsx_chunk_data(ch); /* chunk 0: the first of segment 0 */
  assert_int_equal(resident_pages(base, SEG), 0);
  fsx_cache_stats(c, &st);
  assert_int_equal(st.locked_bytes, SEG);
  assert_true(fsx_chunk_take_populate(c, ch));
  assert_false(fsx_chunk_take_populate(c, ch)); /* once */
  fsx_populate(base, CS);
  assert_int_equal(resident_pages(base, CS), CS / pg);
  assert_int_equal(resident_pages(base + CS, SEG - CS), 0);
  fsx_chunk_fill_done(c, ch, 0, CS);
  fsx_cache_put(c, ch);
  /* given back, claimed again: to be faulted in anew */
  assert_int_equal(fsx_cache_release(c, 0, UINT64_MAX), SEG);
  assert_int_equal(resident_pages(base, SEG), 0);
  assert_int_equal(fsx_cache_get(c, 1, 1, 5, true, &ch, &fill), 0);
  assert_true(fill);
  assert_true(fsx_chunk_take_populate(c, ch));
  fsx_chunk_fill_done(c, ch, -EIO, 0);
  fsx_cache_put(c, ch);
  drained(c);
  fsx_cache_destroy(c);
}

/* a hook slow to register: a segment is "registered" only when it ends */
static _Atomic bool seg_reg[NCH / 4];

static void slow_hook(void *arg, size_t off, size_t len, bool back)
{
  (void)arg;
  (void)len;
  if (back)
    usleep(20000);
  atomic_store(&seg_reg[off / SEG], back);
}

struct claimer {
  struct fsx_cache *c;
  uint64_t index;
  bool saw_registered;
};

static void *claim(void *arg)
{
  struct claimer *k = arg;
  struct fsx_chunk *ch;
  bool fill;

  assert_int_equal(fsx_cache_get(k->c, 9, 1, k->index, true, &ch, &fill), 0);
  k->saw_registered = atomic_load(&seg_reg[fsx_chunk_arena_offset(k->c, ch) /
                                           SEG]);
  fsx_chunk_fill_done(k->c, ch, 0, CS);
  fsx_cache_put(k->c, ch);
  return NULL;
}

/* With a hook, every get that claims a chunk of a segment being backed
   returns only once the hook has done (its token needs the registration);
   the hook is told before the pages go. */
static void test_hook_before_use(void **state)
{
  struct fsx_cache *c = make(false);
  struct claimer k[4];
  pthread_t th[4];

  (void)state;
  fsx_cache_set_hook(c, slow_hook, NULL);
  for (unsigned i = 0; i < 4; i++) { /* the four chunks of segment 0 */
    k[i] = (struct claimer){c, i, false};
    assert_int_equal(pthread_create(&th[i], NULL, claim, &k[i]), 0);
  }
  for (unsigned i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_true(k[i].saw_registered);
  }
  assert_int_equal(fsx_cache_release(c, 0, UINT64_MAX), SEG);
  assert_false(atomic_load(&seg_reg[0]));
  fsx_cache_destroy(c);
}

struct stress {
  struct fsx_cache *c;
  unsigned id;
  _Atomic unsigned *done;          /* readers finished */
  unsigned long bad, hits, fills;
};

/* Does d hold byte v in every one of its CS bytes? */
static bool all_of(const unsigned char *d, unsigned char v)
{
  for (size_t i = 0; i < CS; i++)
    if (d[i] != v)
      return false;
  return true;
}

/* chunk i of reader id holds byte (id * 31 + i) throughout */
static void *reader(void *arg)
{
  struct stress *t = arg;
  unsigned seed = t->id;

  for (unsigned n = 0; n < 20000; n++) {
    uint64_t i = (uint64_t)(rand_r(&seed) % 40); /* 160 keys, 64 chunks */
    unsigned char v = (unsigned char)(t->id * 31 + i);
    struct fsx_chunk *ch;
    bool fill;
    size_t valid;
    const unsigned char *d;

    if (fsx_cache_get(t->c, t->id, 1, i, true, &ch, &fill))
      continue; /* (every chunk referenced: nothing to claim) */
    d = fsx_chunk_data(ch);
    if (fill) {
      memset(fsx_chunk_data(ch), v, CS);
      sched_yield(); /* (a release may run now: the bytes must stay) */
      t->bad += !all_of(d, v);
      fsx_chunk_fill_done(t->c, ch, 0, CS);
      t->fills++;
    } else if (fsx_chunk_wait(t->c, ch, &valid) == 0) {
      t->hits++;
      t->bad += !all_of(d, v);
    }
    fsx_cache_put(t->c, ch);
  }
  atomic_fetch_add(t->done, 1);
  return NULL;
}

/* Readers hit and fill while segments are given back all the while: no
   byte read is ever another chunk's or a dropped page's zero. */
static void test_release_under_readers(void **state)
{
  struct fsx_cache *c = make(false);
  struct fsx_cache_stats st;
  struct stress t[4];
  pthread_t th[4];
  _Atomic unsigned done = 0;
  unsigned long rounds = 0, hits = 0, fills = 0;

  (void)state;
  for (unsigned k = 0; k < 4; k++) {
    t[k] = (struct stress){c, k + 1, &done, 0, 0, 0};
    assert_int_equal(pthread_create(&th[k], NULL, reader, &t[k]), 0);
  }
  /* until the last reader is done (bounded: the readers' loops are) */
  while (atomic_load(&done) < 4) {
    fsx_cache_release(c, 0, (rounds & 1) ? UINT64_MAX : 4 * SEG);
    rounds++;
  }
  for (unsigned k = 0; k < 4; k++) {
    pthread_join(th[k], NULL);
    assert_int_equal(t[k].bad, 0);
    hits += t[k].hits;
    fills += t[k].fills;
  }
  fsx_cache_stats(c, &st);
  print_message("%lu release rounds, %lu hits, %lu fills, %llu segments "
                "released\n", rounds, hits, fills,
                (unsigned long long)st.segments_released);
  assert_true(hits > 1000 && fills > 1000);
  assert_true(st.segments_released > 100);
  drained(c);
  fsx_cache_destroy(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_release_idle),
      cmocka_unit_test(test_release_keeps_referenced_and_recent),
      cmocka_unit_test(test_release_unlocks),
      cmocka_unit_test(test_first_claim_faults_nothing),
      cmocka_unit_test(test_release_under_readers),
      cmocka_unit_test(test_hook_before_use),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
