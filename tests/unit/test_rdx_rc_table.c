/*
 * test_rdx_rc_table: the RC server's session table with plain objects and
 * a clock given by hand: the cap, duplicate ids, one transfer at a time,
 * idle expiry (busy sessions never expire), a failed transfer dropping its
 * session, disconnect of an idle and of a busy session.
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

#include "rdma/rdx_rc_table.h"

static int freed[8];
static int objs[8] = {0, 1, 2, 3, 4, 5, 6, 7};

static void free_obj(void *obj, void *arg)
{
  freed[*(int *)obj]++;
}

static void id_of(uint8_t id[RDX_RC_SESSION_BYTES], int n)
{
  memset(id, 0xa5, RDX_RC_SESSION_BYTES);
  id[0] = (uint8_t)n;
}

static void test_create(void **state)
{
  struct rdx_rc_table *t = (void *)1;

  assert_int_equal(rdx_rc_table_create(0, 1000, free_obj, NULL, &t), -EINVAL);
  assert_null(t);
  assert_int_equal(rdx_rc_table_create(2, 0, free_obj, NULL, &t), -EINVAL);
  assert_int_equal(rdx_rc_table_create(2, 1000, NULL, NULL, &t), -EINVAL);
  assert_int_equal(rdx_rc_table_create(70000, 1000, free_obj, NULL, &t),
                   -EINVAL);
  rdx_rc_table_destroy(NULL);
  assert_int_equal(rdx_rc_table_count(NULL), 0);
  assert_false(rdx_rc_table_has(NULL, NULL));
}

static void test_sessions(void **state)
{
  uint8_t id1[16], id2[16], id3[16];
  struct rdx_rc_table *t;
  void *o;

  memset(freed, 0, sizeof(freed));
  id_of(id1, 1);
  id_of(id2, 2);
  id_of(id3, 3);
  assert_int_equal(rdx_rc_table_create(2, 1000, free_obj, NULL, &t), 0);
  assert_int_equal(rdx_rc_table_add(t, id1, &objs[1], 100), 0);
  assert_int_equal(rdx_rc_table_add(t, id1, &objs[4], 100), -EEXIST);
  assert_int_equal(rdx_rc_table_add(t, id2, &objs[2], 100), 0);
  assert_int_equal(rdx_rc_table_add(t, id3, &objs[3], 100), -ENOSPC);
  assert_int_equal(rdx_rc_table_add(t, id3, NULL, 100), -EINVAL);
  assert_int_equal(rdx_rc_table_count(t), 2);
  assert_true(rdx_rc_table_has(t, id1));
  assert_false(rdx_rc_table_has(t, id3));

  /* one transfer at a time; unknown: ENOTCONN too */
  assert_int_equal(rdx_rc_table_acquire(t, id1, &o), 0);
  assert_ptr_equal(o, &objs[1]);
  assert_int_equal(rdx_rc_table_acquire(t, id1, &o), -ENOTCONN);
  assert_null(o);
  assert_int_equal(rdx_rc_table_acquire(t, id3, &o), -ENOTCONN);
  rdx_rc_table_release(t, id1, false, 900);

  /* expiry: id2 used at 100, id1 at 900; idle 1000 */
  assert_int_equal(rdx_rc_table_reap(t, 1099), 0);
  assert_int_equal(rdx_rc_table_reap(t, 1100), 1);
  assert_int_equal(freed[2], 1);
  assert_false(rdx_rc_table_has(t, id2));
  /* a busy session never expires */
  assert_int_equal(rdx_rc_table_acquire(t, id1, &o), 0);
  assert_int_equal(rdx_rc_table_reap(t, 100000), 0);
  /* a failed transfer drops it */
  rdx_rc_table_release(t, id1, true, 100000);
  assert_int_equal(freed[1], 1);
  assert_int_equal(rdx_rc_table_count(t), 0);
  assert_int_equal(rdx_rc_table_acquire(t, id1, &o), -ENOTCONN);

  /* add reaps first: a full table of expired sessions takes a new one */
  assert_int_equal(rdx_rc_table_add(t, id1, &objs[4], 0), 0);
  assert_int_equal(rdx_rc_table_add(t, id2, &objs[5], 0), 0);
  assert_int_equal(rdx_rc_table_add(t, id3, &objs[6], 5000), 0);
  assert_int_equal(freed[4] + freed[5], 2);
  assert_int_equal(rdx_rc_table_count(t), 1);

  /* disconnect: idle dropped; busy dropped when its transfer ends */
  assert_int_equal(rdx_rc_table_remove(t, id1), -ENOENT);
  assert_int_equal(rdx_rc_table_add(t, id1, &objs[7], 5000), 0);
  assert_int_equal(rdx_rc_table_acquire(t, id3, &o), 0);
  assert_int_equal(rdx_rc_table_remove(t, id3), -EBUSY);
  assert_int_equal(freed[6], 0);
  assert_int_equal(rdx_rc_table_acquire(t, id3, &o), -ENOTCONN);
  rdx_rc_table_release(t, id3, false, 5001);
  assert_int_equal(freed[6], 1);
  assert_int_equal(rdx_rc_table_remove(t, id1), 0);
  assert_int_equal(freed[7], 1);
  assert_int_equal(rdx_rc_table_count(t), 0);

  /* release of what is not busy: nothing */
  assert_int_equal(rdx_rc_table_add(t, id2, &objs[3], 6000), 0);
  rdx_rc_table_release(t, id2, true, 6000);
  assert_int_equal(freed[3], 0);
  rdx_rc_table_destroy(t);
  assert_int_equal(freed[3], 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create),
      cmocka_unit_test(test_sessions),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
