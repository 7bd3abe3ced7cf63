/*
 * Random-read density (fsx_density): blocks sized from the setting, the
 * chunk and the file; a block fetched whole on its third missed read and
 * counting again after; reads spanning blocks; the end of the file; off.
 * And the claim in fsx_density.h: a dense reader fetches about 1.25 bytes
 * per byte delivered, a sparse one (1 in 16) about 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fs/read/fsx_density.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static void test_init(void **state)
{
  struct fsx_density d;

  (void)state;
  fsx_density_init(&d, GiB, 2 * MiB, MiB);
  assert_int_equal(d.block, 2 * MiB);
  assert_int_equal(d.nblocks, 512);
  /* rounded up to the chunk */
  fsx_density_init(&d, GiB, 3 * MiB / 2, MiB);
  assert_int_equal(d.block, 2 * MiB);
  /* a huge file: grown so that at most FSX_DENSITY_BLOCKS_MAX counters */
  fsx_density_init(&d, 1024 * GiB, 2 * MiB, MiB);
  assert_true(d.nblocks <= FSX_DENSITY_BLOCKS_MAX);
  assert_int_equal(d.block, 16 * MiB);
  /* off: no block, nothing noted */
  fsx_density_init(&d, GiB, 0, MiB);
  assert_int_equal(d.block, 0);
  fsx_density_init(&d, 0, 2 * MiB, MiB);
  assert_int_equal(d.block, 0);
}

static void test_third_touch(void **state)
{
  struct fsx_density d;
  uint64_t from, to;

  (void)state;
  fsx_density_init(&d, GiB, 2 * MiB, MiB);
  /* two exact reads in block 5, the third fetches it whole */
  assert_false(fsx_density_note(&d, GiB, 10 * MiB, 256 * KiB, &from, &to));
  assert_false(fsx_density_note(&d, GiB, 11 * MiB, 256 * KiB, &from, &to));
  assert_true(fsx_density_note(&d, GiB, 10 * MiB + 512 * KiB, 256 * KiB,
                               &from, &to));
  assert_int_equal(from, 10 * MiB);
  assert_int_equal(to, 12 * MiB);
  /* missed again (a hole in the kernel's copy, or evicted): exact reads,
     fetched whole again on the third such miss */
  assert_false(fsx_density_note(&d, GiB, 10 * MiB, 4 * KiB, &from, &to));
  assert_int_equal(from, 0);
  assert_int_equal(to, 0);
  assert_false(fsx_density_note(&d, GiB, 10 * MiB, 4 * KiB, &from, &to));
  assert_true(fsx_density_note(&d, GiB, 10 * MiB, 4 * KiB, &from, &to));
  assert_int_equal(d.touched, 1);
  assert_int_equal(d.whole, 2);
  assert_int_equal(d.again, 1);
  /* other blocks are their own */
  assert_false(fsx_density_note(&d, GiB, 20 * MiB, 4 * KiB, &from, &to));
  fsx_density_free(&d);
  assert_null(d.touches);
}

static void test_span_and_end(void **state)
{
  struct fsx_density d;
  uint64_t size = 5 * MiB + 7, from, to;

  (void)state;
  fsx_density_init(&d, size, 2 * MiB, MiB);
  assert_int_equal(d.nblocks, 3);
  /* a read over blocks 0 and 1, three times: both fetched */
  for (int i = 0; i < 2; i++)
    assert_false(fsx_density_note(&d, size, 2 * MiB - 10, 20, &from, &to));
  assert_true(fsx_density_note(&d, size, 2 * MiB - 10, 20, &from, &to));
  assert_int_equal(from, 0);
  assert_int_equal(to, 4 * MiB);
  /* the last block ends at the end of the file */
  for (int i = 0; i < 2; i++)
    assert_false(fsx_density_note(&d, size, 5 * MiB, 7, &from, &to));
  assert_true(fsx_density_note(&d, size, 5 * MiB, 100, &from, &to));
  assert_int_equal(from, 4 * MiB);
  assert_int_equal(to, size);
  /* past the end, empty, or off: nothing */
  assert_false(fsx_density_note(&d, size, size, 10, &from, &to));
  assert_false(fsx_density_note(&d, size, 0, 0, &from, &to));
  fsx_density_free(&d);
  assert_false(fsx_density_note(&d, size, 0, 10, &from, &to));
}

/* Bytes fetched per byte delivered by 256 KiB reads at random places of a
   1 GiB file, every read missing the cache until its block is fetched
   (then hitting it): n reads. */
static double fetch_ratio(unsigned n, unsigned seed, bool *file_dense)
{
  struct fsx_density d;
  uint64_t fetched = 0, delivered = 0, from, to;
  unsigned char *cached;
  uint32_t *order;
  const uint64_t rs = 256 * KiB, slots = GiB / rs;

  fsx_density_init(&d, GiB, 2 * MiB, MiB);
  cached = calloc(d.nblocks, 1);
  order = malloc(slots * sizeof(*order));
  assert_non_null(cached);
  assert_non_null(order);
  /* every slot once, in random order (fio's random map) */
  for (uint32_t i = 0; i < slots; i++)
    order[i] = i;
  srand(seed);
  for (uint32_t i = slots - 1; i > 0; i--) {
    uint32_t j = (uint32_t)rand() % (i + 1), t = order[i];

    order[i] = order[j];
    order[j] = t;
  }
  for (unsigned i = 0; i < n; i++) {
    uint64_t off = (uint64_t)order[i] * rs;
    uint64_t b = off / d.block;

    delivered += rs;
    if (cached[b])
      continue;
    if (fsx_density_note(&d, GiB, off, rs, &from, &to)) {
      fetched += to - from;
      for (uint64_t k = from / d.block; k * d.block < to; k++)
        cached[k] = 1;
    } else {
      fetched += rs;
    }
  }
  *file_dense = d.dense;
  free(order);
  free(cached);
  fsx_density_free(&d);
  return (double)fetched / (double)delivered;
}

static void test_dense_and_sparse(void **state)
{
  bool dense_file, sparse_file;
  double dense = fetch_ratio(4096, 1, &dense_file);
  double sparse = fetch_ratio(256, 2, &sparse_file);

  (void)state;
  print_message("  fetched per delivered: dense %.2f, sparse %.2f\n", dense,
                sparse);
  assert_true(dense_file);     /* known dense: the first miss fetches */
  assert_true(dense < 1.2);    /* exact reads until known dense */
  assert_false(sparse_file);
  assert_true(sparse < 1.3);   /* and nearly every read exact */
  assert_true(sparse >= 1.0);
}

/* A dense file: the first miss fetches its group of blocks, less those
   already fetched. */
static void test_group(void **state)
{
  struct fsx_density d;
  uint64_t from, to;

  (void)state;
  fsx_density_init(&d, GiB, 2 * MiB, MiB);
  assert_false(fsx_density_note(&d, GiB, 0, 1, &from, &to)); /* allocates */
  d.dense = true;
  /* block 5: its group is blocks 4 to 7 */
  assert_true(fsx_density_note(&d, GiB, 10 * MiB, 256 * KiB, &from, &to));
  assert_int_equal(from, 8 * MiB);
  assert_int_equal(to, 16 * MiB);
  /* block 6 missed again (a hole, or evicted): even in a dense file read
     exactly twice, then fetched alone (its neighbours are fetched) */
  assert_false(fsx_density_note(&d, GiB, 12 * MiB, 4 * KiB, &from, &to));
  assert_false(fsx_density_note(&d, GiB, 12 * MiB, 4 * KiB, &from, &to));
  assert_true(fsx_density_note(&d, GiB, 12 * MiB, 256 * KiB, &from, &to));
  assert_int_equal(from, 12 * MiB);
  assert_int_equal(to, 14 * MiB);
  /* a block missed again is not one to fetch ahead: not fetched yet are
     blocks 8 on (group 2) */
  assert_false(fsx_density_note(&d, GiB, 14 * MiB, 4 * KiB, &from, &to));
  assert_true(fsx_density_ahead(&d, GiB, 8 * MiB, &from, &to));
  assert_int_equal(from, 16 * MiB);
  assert_int_equal(to, 24 * MiB);
  /* that group never reached the kernel: forgotten, so in a dense file
     its next miss fetches its block again, and it is fetched ahead again */
  fsx_density_forget(&d, 16 * MiB, 24 * MiB);
  assert_true(fsx_density_note(&d, GiB, 18 * MiB, 4 * KiB, &from, &to));
  assert_int_equal(from, 16 * MiB);
  assert_int_equal(to, 24 * MiB);
  fsx_density_forget(&d, 16 * MiB, 24 * MiB);
  assert_true(fsx_density_ahead(&d, GiB, 8 * MiB, &from, &to));
  assert_int_equal(from, 16 * MiB);
  assert_int_equal(to, 24 * MiB);
  /* the last group of a file stops at its end */
  assert_true(fsx_density_note(&d, GiB, GiB - 1, 1, &from, &to));
  assert_int_equal(from, GiB - 8 * MiB);
  assert_int_equal(to, GiB);
  fsx_density_free(&d);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_third_touch),
      cmocka_unit_test(test_span_and_end),
      cmocka_unit_test(test_dense_and_sparse),
      cmocka_unit_test(test_group),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
