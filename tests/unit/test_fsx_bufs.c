/*
 * The reused read buffers (fsx_bufs): a buffer given back comes back for
 * the next one of its rounded size (and only of that size), page-aligned
 * and whole; what is kept stays under its bound (the oldest dropped
 * first, a buffer larger than the bound never kept); the counters say
 * which buffers were reused and which were mapped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/mem/fsx_bufs.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

static unsigned long stat_of(struct fsx_bufs *b, const char *name)
{
  char s[512], want[64], *p;

  fsx_bufs_stats(b, s, sizeof(s));
  snprintf(want, sizeof(want), "%s ", name);
  p = strstr(s, want);
  assert_non_null(p);
  return strtoul(p + strlen(want), NULL, 10);
}

static void test_reuse(void **state)
{
  struct fsx_bufs *b = fsx_bufs_create(64 * MiB);
  char *a, *c, *d;

  (void)state;
  assert_null(fsx_bufs_get(b, 0));
  a = fsx_bufs_get(b, 8 * MiB);
  assert_non_null(a);
  assert_int_equal((uintptr_t)a % 4096, 0);
  memset(a, 'a', 8 * MiB); /* all of it is ours */
  fsx_bufs_put(b, a);
  assert_int_equal(stat_of(b, "read.bufs_kept"), 8 * MiB);
  /* the same rounded size: the same buffer, its pages still there */
  c = fsx_bufs_get(b, 8 * MiB - 100);
  assert_ptr_equal(c, a);
  assert_int_equal(c[8 * MiB - 1], 'a');
  assert_int_equal(stat_of(b, "read.bufs_reused"), 1);
  assert_int_equal(stat_of(b, "read.bufs_kept"), 0);
  /* another size: a new one */
  d = fsx_bufs_get(b, 256 * KiB + 1);
  assert_non_null(d);
  assert_ptr_not_equal(d, a);
  memset(d, 'd', 256 * KiB + 1);
  assert_int_equal(stat_of(b, "read.bufs_mapped"), 2);
  fsx_bufs_put(b, c);
  fsx_bufs_put(b, d);
  fsx_bufs_put(b, NULL);
  assert_int_equal(stat_of(b, "read.bufs_kept"), 8 * MiB + 320 * KiB);
  fsx_bufs_destroy(b);
}

static void test_bound(void **state)
{
  struct fsx_bufs *b = fsx_bufs_create(3 * MiB);
  void *x[4], *y;

  (void)state;
  for (int i = 0; i < 4; i++)
    x[i] = fsx_bufs_get(b, MiB);
  for (int i = 0; i < 4; i++)
    fsx_bufs_put(b, x[i]);
  /* three kept: the first given back was dropped */
  assert_int_equal(stat_of(b, "read.bufs_kept"), 3 * MiB);
  for (int i = 3; i >= 1; i--) {
    y = fsx_bufs_get(b, MiB);
    assert_ptr_equal(y, x[i]); /* the latest first */
  }
  assert_int_equal(stat_of(b, "read.bufs_kept"), 0);
  for (int i = 1; i < 4; i++)
    fsx_bufs_put(b, x[i]);
  /* larger than the bound: never kept; room made for a bigger one */
  y = fsx_bufs_get(b, 4 * MiB);
  fsx_bufs_put(b, y);
  assert_int_equal(stat_of(b, "read.bufs_kept"), 3 * MiB);
  y = fsx_bufs_get(b, 2 * MiB);
  fsx_bufs_put(b, y);
  assert_int_equal(stat_of(b, "read.bufs_kept"), 3 * MiB); /* 2 + 1 */
  fsx_bufs_destroy(b);
}

static void *churn(void *arg)
{
  struct fsx_bufs *b = arg;

  for (int i = 0; i < 2000; i++) {
    size_t len = (size_t)(i % 5 + 1) * 64 * KiB;
    unsigned char *p = fsx_bufs_get(b, len);
    if (!p)
      return (void *)1;
    p[0] = p[len - 1] = (unsigned char)i;
    fsx_bufs_put(b, p);
  }
  return NULL;
}

/* Four threads getting and putting at once: nothing lost or doubled (the
   sanitizer builds see any buffer used after it went back). */
static void test_threads(void **state)
{
  struct fsx_bufs *b = fsx_bufs_create(1 * MiB);
  pthread_t t[4];
  void *rc;

  (void)state;
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&t[i], NULL, churn, b), 0);
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], &rc);
    assert_null(rc);
  }
  assert_true(stat_of(b, "read.bufs_kept") <= 1 * MiB);
  assert_true(stat_of(b, "read.bufs_reused") > 0);
  fsx_bufs_destroy(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reuse),
      cmocka_unit_test(test_bound),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
