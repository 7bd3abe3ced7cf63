/*
 * test_rdx_rc_pool: the client's session pool with plain objects standing
 * for sessions: reserve and fill a slot, reuse the most recent idle one,
 * the cap (no wait, a bounded wait, a waiter woken by a put), broken
 * sessions freed, a flush freeing idle ones at once and busy ones when put.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "common/clock.h"
#include "rdma/rdx_rc_pool.h"

static int freed[8];

static void free_obj(void *obj, void *arg)
{
  assert_ptr_equal(arg, freed);
  freed[*(int *)obj]++;
}

static int objs[8] = {0, 1, 2, 3, 4, 5, 6, 7};

static void reset(void)
{
  memset(freed, 0, sizeof(freed));
}

static void test_create(void **state)
{
  struct rdx_rc_pool *p = (void *)1;

  assert_int_equal(rdx_rc_pool_create(0, free_obj, freed, &p), -EINVAL);
  assert_null(p);
  assert_int_equal(rdx_rc_pool_create(RDX_RC_POOL_CAP_MAX + 1, free_obj,
                                      freed, &p),
                   -EINVAL);
  assert_int_equal(rdx_rc_pool_create(1, NULL, freed, &p), -EINVAL);
  assert_int_equal(rdx_rc_pool_create(1, free_obj, freed, NULL), -EINVAL);
  rdx_rc_pool_destroy(NULL);
  rdx_rc_pool_put(NULL, objs, false);
  rdx_rc_pool_flush(NULL);
}

static void test_get_put(void **state)
{
  struct rdx_rc_pool_stats st;
  struct rdx_rc_pool *p;
  void *a, *b, *c;

  reset();
  assert_int_equal(rdx_rc_pool_create(2, free_obj, freed, &p), 0);
  assert_int_equal(rdx_rc_pool_get(p, 0, NULL), -EINVAL);
  /* empty: a reserved slot each time, up to the cap */
  assert_int_equal(rdx_rc_pool_get(p, 0, &a), 0);
  assert_null(a);
  assert_int_equal(rdx_rc_pool_get(p, 0, &b), 0);
  assert_null(b);
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), -EAGAIN);
  assert_int_equal(rdx_rc_pool_get(p, clock_mono_ms() + 30, &c), -ETIMEDOUT);
  rdx_rc_pool_stats(p, &st);
  assert_int_equal(st.busy, 2);
  assert_int_equal(st.idle, 0);

  /* fill them: new sessions 1 and 2 */
  rdx_rc_pool_put(p, &objs[1], false);
  rdx_rc_pool_put(p, &objs[2], false);
  rdx_rc_pool_stats(p, &st);
  assert_int_equal(st.idle, 2);
  assert_int_equal(st.busy, 0);
  assert_int_equal(st.made, 2);

  /* the most recently put first */
  assert_int_equal(rdx_rc_pool_get(p, 0, &a), 0);
  assert_ptr_equal(a, &objs[2]);
  assert_int_equal(rdx_rc_pool_get(p, 0, &b), 0);
  assert_ptr_equal(b, &objs[1]);
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), -EAGAIN);
  rdx_rc_pool_put(p, b, false);
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), 0);
  assert_ptr_equal(c, &objs[1]);

  /* broken: freed, its slot free for a new one */
  rdx_rc_pool_put(p, c, true);
  assert_int_equal(freed[1], 1);
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), 0);
  assert_null(c);
  /* making it failed: give the slot up */
  rdx_rc_pool_put(p, NULL, true);
  rdx_rc_pool_stats(p, &st);
  assert_int_equal(st.busy, 1);
  assert_int_equal(st.dropped, 1);
  rdx_rc_pool_put(p, a, false);

  /* an object with no reserved slot: freed, never kept beyond the cap */
  rdx_rc_pool_put(p, &objs[5], false);
  assert_int_equal(freed[5], 1);

  rdx_rc_pool_destroy(p);
  assert_int_equal(freed[2], 1);
}

static void test_flush(void **state)
{
  struct rdx_rc_pool_stats st;
  struct rdx_rc_pool *p;
  void *a, *b, *c;

  reset();
  assert_int_equal(rdx_rc_pool_create(3, free_obj, freed, &p), 0);
  for (int i = 1; i <= 3; i++) {
    assert_int_equal(rdx_rc_pool_get(p, 0, &a), 0);
    assert_null(a);
  }
  for (int i = 1; i <= 3; i++)
    rdx_rc_pool_put(p, &objs[i], false);
  assert_int_equal(rdx_rc_pool_get(p, 0, &a), 0); /* 3, busy */
  assert_int_equal(rdx_rc_pool_get(p, 0, &b), 0); /* 2, busy */
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), 0); /* 1, busy */
  rdx_rc_pool_put(p, c, false);                   /* 1 idle */
  rdx_rc_pool_flush(p);
  assert_int_equal(freed[1], 1); /* idle: at once */
  assert_int_equal(freed[2] + freed[3], 0);
  rdx_rc_pool_put(p, a, false); /* taken before the flush: freed */
  assert_int_equal(freed[3], 1);
  /* a session made after the flush is kept */
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), 0);
  assert_null(c);
  rdx_rc_pool_put(p, &objs[4], false);
  rdx_rc_pool_flush(p); /* 4 idle: freed; 2 busy, from before */
  assert_int_equal(freed[4], 1);
  assert_int_equal(rdx_rc_pool_get(p, 0, &c), 0);
  assert_null(c);
  rdx_rc_pool_put(p, &objs[6], false);
  rdx_rc_pool_put(p, b, false);
  assert_int_equal(freed[2], 1);
  rdx_rc_pool_stats(p, &st);
  assert_int_equal(st.idle, 1);
  assert_int_equal(st.busy, 0);
  rdx_rc_pool_destroy(p);
  assert_int_equal(freed[6], 1);
}

struct waiter {
  struct rdx_rc_pool *p;
  void *got;
  int rc;
};

static void *wait_one(void *arg)
{
  struct waiter *w = arg;

  w->rc = rdx_rc_pool_get(w->p, clock_mono_ms() + 10000, &w->got);
  return NULL;
}

static void test_wait(void **state)
{
  struct waiter w = {0};
  struct rdx_rc_pool *p;
  pthread_t th;
  void *a;

  reset();
  assert_int_equal(rdx_rc_pool_create(1, free_obj, freed, &p), 0);
  assert_int_equal(rdx_rc_pool_get(p, 0, &a), 0);
  w.p = p;
  assert_int_equal(pthread_create(&th, NULL, wait_one, &w), 0);
  usleep(20000);
  rdx_rc_pool_put(p, &objs[7], false);
  assert_int_equal(pthread_join(th, NULL), 0);
  assert_int_equal(w.rc, 0);
  assert_ptr_equal(w.got, &objs[7]);
  rdx_rc_pool_put(p, w.got, false);
  rdx_rc_pool_destroy(p);
  assert_int_equal(freed[7], 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create),
      cmocka_unit_test(test_get_put),
      cmocka_unit_test(test_flush),
      cmocka_unit_test(test_wait),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
