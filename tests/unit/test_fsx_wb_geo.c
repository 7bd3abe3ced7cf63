/*
 * The multipart part geometry of the write-back (fsx_wb_part_of,
 * fsx_wb_part_span, fsx_wb_max_size): parts 1..1000 of the base size
 * rounded up to 64 KiB, each next thousand twice the size, capped at 5 GiB,
 * 10000 parts at most; spans contiguous, the offset -> part mapping its
 * inverse, and everything past the largest file in the last part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fs/write/fsx_wb.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

/* The base sizes checked: 5000000 is not a multiple of 64 KiB. */
static const uint64_t bases[] = {5 * MiB, 8 * MiB, 5000000, GiB, 5 * GiB};
#define N_BASES (sizeof(bases) / sizeof(bases[0]))

static uint64_t round_block(uint64_t v)
{
  return (v + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK * FSX_WB_BLOCK;
}

/* The length of a part of group g as the header describes it. */
static uint64_t expect_len(uint64_t base, unsigned g)
{
  uint64_t l = round_block(base) << g;

  return l < FSX_WB_MAX_PART ? l : FSX_WB_MAX_PART / FSX_WB_BLOCK *
                                        FSX_WB_BLOCK;
}

/* part_of(off) holds off, and agrees with part_span of its index. */
static unsigned check_off(uint64_t base, uint64_t off)
{
  uint64_t s, l, ss, sl;
  unsigned k = fsx_wb_part_of(base, off, &s, &l);

  assert_true(k < FSX_WB_MAX_PARTS);
  fsx_wb_part_span(base, k, &ss, &sl);
  assert_int_equal(s, ss);
  assert_int_equal(l, sl);
  if (off < fsx_wb_max_size(base)) {
    assert_true(s <= off);
    assert_true(off < s + l);
  }
  return k;
}

static void test_group_zero(void **state)
{
  for (size_t b = 0; b < N_BASES; b++) {
    uint64_t base = bases[b], pl = expect_len(base, 0), s, l;

    fsx_wb_part_span(base, 0, &s, &l);
    assert_int_equal(s, 0);
    assert_int_equal(l, pl);
    assert_int_equal(l % FSX_WB_BLOCK, 0);
    assert_true(l >= base);
    assert_int_equal(check_off(base, 0), 0);
    assert_int_equal(check_off(base, pl - 1), 0);
    assert_int_equal(check_off(base, pl), 1);
    /* the last part of group 0 */
    fsx_wb_part_span(base, 999, &s, &l);
    assert_int_equal(s, 999 * pl);
    assert_int_equal(l, pl);
    assert_int_equal(check_off(base, 999 * pl), 999);
    assert_int_equal(check_off(base, 1000 * pl - 1), 999);
  }
}

static void test_group_boundary(void **state)
{
  for (size_t b = 0; b < N_BASES; b++) {
    uint64_t base = bases[b], pl = expect_len(base, 0), s, l;

    /* part index 1000 starts at 1000 * base with twice the length (capped) */
    fsx_wb_part_span(base, 1000, &s, &l);
    assert_int_equal(s, 1000 * pl);
    assert_int_equal(l, expect_len(base, 1));
    if (2 * pl <= FSX_WB_MAX_PART)
      assert_int_equal(l, 2 * pl);
    assert_int_equal(check_off(base, 1000 * pl), 1000);
    assert_int_equal(check_off(base, 1000 * pl + l - 1), 1000);
    assert_int_equal(check_off(base, 1000 * pl + l), 1001);
    /* group 1's last part, then group 2 */
    assert_int_equal(check_off(base, 1000 * pl + 1000 * l - 1), 1999);
    assert_int_equal(check_off(base, 1000 * pl + 1000 * l), 2000);
  }
}

static void test_contiguous_and_bounded(void **state)
{
  for (size_t b = 0; b < N_BASES; b++) {
    uint64_t base = bases[b], s, l, ns, nl, prev_len = 0;

    fsx_wb_part_span(base, 0, &s, &l);
    assert_int_equal(s, 0);
    for (unsigned k = 0; k < FSX_WB_MAX_PARTS; k++) {
      fsx_wb_part_span(base, k, &s, &l);
      assert_int_equal(l, expect_len(base, k / 1000));
      assert_true(l <= FSX_WB_MAX_PART);
      assert_true(l >= round_block(base));
      assert_true(l >= prev_len); /* never shrinks */
      assert_int_equal(l % FSX_WB_BLOCK, 0);
      assert_int_equal(s % FSX_WB_BLOCK, 0);
      /* S3's minimum part size holds for every valid base (>= 5 MiB) */
      if (base >= 5 * MiB)
        assert_true(l >= 5 * MiB);
      prev_len = l;
      if (k + 1 < FSX_WB_MAX_PARTS) {
        fsx_wb_part_span(base, k + 1, &ns, &nl);
        assert_int_equal(s + l, ns);
      } else {
        assert_int_equal(s + l, fsx_wb_max_size(base));
      }
    }
  }
}

static void test_each_part_start_and_end(void **state)
{
  for (size_t b = 0; b < N_BASES; b++) {
    uint64_t base = bases[b], s, l;

    for (unsigned k = 0; k < FSX_WB_MAX_PARTS; k++) {
      fsx_wb_part_span(base, k, &s, &l);
      assert_int_equal(check_off(base, s), k);
      assert_int_equal(check_off(base, s + l - 1), k);
    }
  }
}

static void test_max_size(void **state)
{
  uint64_t s, l;

  assert_true(fsx_wb_max_size(5 * MiB) >= 5000000000000ull);
  assert_true(fsx_wb_max_size(8 * MiB) >= 5000000000000ull);
  /* 5 GiB parts throughout: 10000 * 5 GiB */
  assert_int_equal(fsx_wb_max_size(5 * GiB), 10000ull * 5 * GiB);
  /* 1 GiB: 1, 2, 4 GiB, then capped at 5 GiB for the 7 other groups */
  assert_int_equal(fsx_wb_max_size(GiB),
                   1000ull * (GiB + 2 * GiB + 4 * GiB + 7 * 5 * GiB));
  /* 5 MiB: 5 MiB << 9 = 2.5 GiB stays under the cap: 1023 * 5 GB */
  assert_int_equal(fsx_wb_max_size(5 * MiB), 1000ull * 1023 * 5 * MiB);
  for (size_t b = 0; b < N_BASES; b++) {
    uint64_t base = bases[b], max = fsx_wb_max_size(base);

    fsx_wb_part_span(base, FSX_WB_MAX_PARTS - 1, &s, &l);
    assert_int_equal(max, s + l);
    /* the last byte is in the last part; past it, still the last part */
    assert_int_equal(check_off(base, max - 1), FSX_WB_MAX_PARTS - 1);
    assert_int_equal(check_off(base, max), FSX_WB_MAX_PARTS - 1);
    assert_int_equal(check_off(base, max + 1), FSX_WB_MAX_PARTS - 1);
    assert_int_equal(check_off(base, max + 12345 * GiB),
                     FSX_WB_MAX_PARTS - 1);
    assert_int_equal(check_off(base, 2 * max), FSX_WB_MAX_PARTS - 1);
    assert_int_equal(check_off(base, UINT64_MAX), FSX_WB_MAX_PARTS - 1);
  }
}

/* xorshift64*, fixed seed */
static uint64_t rnd(uint64_t *x)
{
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 2685821657736338717ull;
}

static void test_random_round_trip(void **state)
{
  uint64_t seed = 0x5eed1234abcdull;

  for (size_t b = 0; b < N_BASES; b++) {
    uint64_t base = bases[b], max = fsx_wb_max_size(base);

    for (int i = 0; i < 20000; i++) {
      uint64_t r = rnd(&seed), off, s, l;
      unsigned k;
      /* half uniform over the file, half in the first few groups */
      off = (i & 1) ? r % max : r % (3000 * round_block(base) * 2);
      k = check_off(base, off);
      fsx_wb_part_span(base, k, &s, &l);
      assert_true(s <= off && off < s + l);
      /* neighbours disagree */
      if (k > 0)
        assert_int_equal(check_off(base, s - 1), k - 1);
      if (k + 1 < FSX_WB_MAX_PARTS)
        assert_int_equal(check_off(base, s + l), k + 1);
    }
  }
}

/* A base already on the block gives the same geometry as one just under
   it that rounds up to it (the write-back rounds before calling too). */
static void test_rounding_is_idempotent(void **state)
{
  uint64_t rb = round_block(5000000), s1, l1, s2, l2;

  assert_int_equal(rb, 77 * FSX_WB_BLOCK);
  for (unsigned k = 0; k < FSX_WB_MAX_PARTS; k += 37) {
    fsx_wb_part_span(5000000, k, &s1, &l1);
    fsx_wb_part_span(rb, k, &s2, &l2);
    assert_int_equal(s1, s2);
    assert_int_equal(l1, l2);
  }
  assert_int_equal(fsx_wb_max_size(5000000), fsx_wb_max_size(rb));
  /* a base of one byte: one block */
  fsx_wb_part_span(1, 0, &s1, &l1);
  assert_int_equal(l1, FSX_WB_BLOCK);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_group_zero),
      cmocka_unit_test(test_group_boundary),
      cmocka_unit_test(test_contiguous_and_bounded),
      cmocka_unit_test(test_each_part_start_and_end),
      cmocka_unit_test(test_max_size),
      cmocka_unit_test(test_random_round_trip),
      cmocka_unit_test(test_rounding_is_idempotent),
  };
  return cmocka_run_group_tests_name("fsx_wb", tests, NULL, NULL);
}
