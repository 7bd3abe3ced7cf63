/*
 * The readahead policy (fsx_read_plan): sequential detection with some
 * tolerance for the kernel's reordering, a window that starts small and
 * doubles up to its cap (higher far from the server: fsx_read_cap), a reset
 * on a seek (the kernel's readahead, several reads in any order, is none),
 * top-ups in half-window batches, and nothing past the end of the object.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs/read/fsx_read.h"
#include "fs/read/fsx_read_i.h" /* white-box: the handle's read state */

#define MiB (1024u * 1024u)

static struct fsx_mount m;
static struct fsx_fh *fh;

static int setup(void **state)
{
  char err[128];
  struct fsx_attr a = {.kind = FSX_FILE, .size = 1024ull * MiB};

  m.o.max_read = MiB;
  m.o.readahead_min = MiB;
  m.o.readahead_max = 8 * MiB;
  m.o.readahead_far = 16 * MiB;
  m.cache = fsx_cache_create(64 * MiB, MiB, false, err, sizeof(err));
  fh = fsx_fh_create(&m, NULL, &a);
  return m.cache && fh ? 0 : -1;
}

static int teardown(void **state)
{
  fsx_fh_destroy(&m, fh);
  fsx_cache_destroy(m.cache);
  return 0;
}

/* A fresh open file of the given size. */
static void reset(uint64_t size)
{
  fh->next_off = 0;
  fh->window = 0;
  fh->ra_end = 0;
  fh->size = size;
}

static void test_window_grows_and_caps(void **state)
{
  static const uint64_t want[] = {1, 2, 4, 8, 8, 8};
  uint64_t from, to;

  reset(1024ull * MiB);
  for (int i = 0; i < 6; i++) {
    uint64_t w = fsx_read_plan(&m, fh, (uint64_t)i * MiB, MiB, &from, &to);
    assert_int_equal(w, want[i] * MiB);
  }
}

static void test_first_read_and_topups(void **state)
{
  uint64_t from, to;

  reset(1024ull * MiB);
  /* read 0: window 1 MiB, chunk 1 is read ahead */
  fsx_read_plan(&m, fh, 0, MiB, &from, &to);
  assert_int_equal(from, 1);
  assert_int_equal(to, 2);
  fh->ra_end = to; /* what fsx_read records once issued */
  /* read 1: window 2 MiB, [2, 4) ahead */
  fsx_read_plan(&m, fh, MiB, MiB, &from, &to);
  assert_int_equal(from, 2);
  assert_int_equal(to, 4);
  fh->ra_end = to;
  /* read 2: window 4 MiB: chunks 3 is still ahead (1 < 4/2): [4, 7) */
  fsx_read_plan(&m, fh, 2 * MiB, MiB, &from, &to);
  assert_int_equal(from, 4);
  assert_int_equal(to, 7);
  fh->ra_end = to;
  /* read 3: window 8 MiB, 3 chunks ahead of 8: less than half, top up */
  fsx_read_plan(&m, fh, 3 * MiB, MiB, &from, &to);
  assert_int_equal(from, 7);
  assert_int_equal(to, 12);
  fh->ra_end = to;
  /* read 4: 7 chunks ahead of an 8 MiB window: no top-up yet */
  fsx_read_plan(&m, fh, 4 * MiB, MiB, &from, &to);
  assert_int_equal(from, 0);
  assert_int_equal(to, 0);
}

static void test_seek_resets(void **state)
{
  uint64_t from, to, w;

  reset(1024ull * MiB);
  for (int i = 0; i < 4; i++)
    fsx_read_plan(&m, fh, (uint64_t)i * MiB, MiB, &from, &to);
  assert_int_equal(fh->window, 8 * MiB);
  w = fsx_read_plan(&m, fh, 500 * MiB, 4096, &from, &to);
  assert_int_equal(w, 0); /* random: read just what is asked */
  assert_int_equal(from, 0);
  assert_int_equal(to, 0);
  assert_int_equal(fh->ra_end, 0);
  /* reading on from there is sequential again, from the smallest window */
  w = fsx_read_plan(&m, fh, 500 * MiB + 4096, MiB, &from, &to);
  assert_int_equal(w, MiB);
}

static void test_reordered_reads_stay_sequential(void **state)
{
  uint64_t from, to;

  /* a file's first read past twice max_read from its start is random */
  reset(1024ull * MiB);
  assert_int_equal(fsx_read_plan(&m, fh, 4 * MiB, 16384, &from, &to), 0);
  reset(1024ull * MiB);
  fsx_read_plan(&m, fh, 0, MiB, &from, &to);
  fsx_read_plan(&m, fh, 2 * MiB, MiB, &from, &to); /* the kernel's async */
  fsx_read_plan(&m, fh, MiB, MiB, &from, &to);     /* readahead, reordered */
  assert_true(fh->window >= 2 * MiB);
  assert_int_equal(fh->next_off, 3 * MiB);
  /* reads the kernel's readahead sent at once arrive in any order: one
     from the far end of it, then the ones before */
  fsx_read_plan(&m, fh, 7 * MiB, MiB, &from, &to);
  fsx_read_plan(&m, fh, 3 * MiB, MiB, &from, &to);
  assert_true(fh->window >= 8 * MiB);
  assert_int_equal(fh->next_off, 8 * MiB);
  /* beyond the tolerance of a run (the kernel's readahead and one read
     more) it is a seek */
  assert_int_equal(fsx_read_plan(&m, fh, 13 * MiB + 1, MiB, &from, &to), 0);
}

/* The cap follows the server's distance: four round trips of the reader's
   bytes, between read.readahead_max and readahead_far. */
static void test_cap_from_round_trip(void **state)
{
  const uint64_t max = 64 * MiB, far = 256 * MiB, rate = 400000000;

  /* near (a LAN, 0.5 ms): the configured cap */
  assert_int_equal(fsx_read_cap(max, far, 500, rate), max);
  /* nothing measured yet: the configured cap */
  assert_int_equal(fsx_read_cap(max, far, 0, rate), max);
  assert_int_equal(fsx_read_cap(max, far, 50000, 0), max);
  /* 50 ms away at 400 MB/s: 20 MB in flight a round trip, 80 MB */
  assert_int_equal(fsx_read_cap(max, far, 50000, rate), 80000000);
  /* 500 ms away: no more than readahead_far */
  assert_int_equal(fsx_read_cap(max, far, 500000, rate), far);
}

static void test_end_of_object(void **state)
{
  uint64_t from, to;

  reset(3 * MiB + 100); /* chunks 0..3, the last one short */
  for (int i = 0; i < 3; i++) {
    fsx_read_plan(&m, fh, (uint64_t)i * MiB, MiB, &from, &to);
    assert_true(to <= 4);
    if (to)
      fh->ra_end = to;
  }
  fsx_read_plan(&m, fh, 3 * MiB, 100, &from, &to);
  assert_int_equal(from, 0); /* nothing past the last chunk */
  assert_int_equal(to, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_window_grows_and_caps),
      cmocka_unit_test(test_first_read_and_topups),
      cmocka_unit_test(test_seek_resets),
      cmocka_unit_test(test_reordered_reads_stay_sequential),
      cmocka_unit_test(test_cap_from_round_trip),
      cmocka_unit_test(test_end_of_object),
  };
  return cmocka_run_group_tests_name("fsx_readahead", tests, setup, teardown);
}
