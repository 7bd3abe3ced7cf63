/*
 * Directories' times stored on their markers in the background
 * (fs/ops/fsx_dirtimes.c), against an S3 server in the test's process
 * (fake_s3): a burst of changes makes one PUT of the marker, none on the
 * change's path; a directory with no marker gets none made; a store under
 * way holds off a rename of a directory above it, so the marker it writes
 * is moved with the rest and none comes back under the old name.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_mount.h"
#include "fs/meta/fsx_inode.h"
#include "fs/mount/fsx_i.h"
#include "fs/ops/fsx_dirtimes.h"
#include "fs/ops/fsx_wns.h"
#include "fs/ops/fsx_wns_i.h"

static struct fake_mount fm;

static int setup(void **state)
{
  (void)state;
  if (fake_mount_up(&fm, NULL))
    return -1;
  return fsx_dirtimes_start(&fm.m, &fm.m.dirtimes);
}

static int teardown(void **state)
{
  (void)state;
  fsx_dirtimes_stop(fm.m.dirtimes);
  fm.m.dirtimes = NULL;
  fake_mount_down(&fm);
  return 0;
}

static void put(const char *key)
{
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, key, "", 0), 0);
}

static bool has(const char *key)
{
  return fake_s3_has(fm.s3, FAKE_BUCKET, key);
}

/* name in dir (a reference, as a lookup makes it) */
static struct fsx_inode *child(struct fsx_inode *dir, const char *name)
{
  struct fsx_inode *in;
  struct fsx_attr a;

  assert_int_equal(fsx_wns_resolve(&fm.m, dir, name, &in, &a), 0);
  return in;
}

static struct fsx_inode *root(void)
{
  return fsx_inode_get(fm.m.tab, FSX_ROOT_INO);
}

/* wait (at most 10 s) until n stores are counted */
static bool stored(uint64_t n)
{
  for (int i = 0; i < 1000; i++) {
    if (atomic_load(&fm.m.st.dir_times_stored) >= n)
      return true;
    usleep(10000);
  }
  return false;
}

static void test_burst_one_put(void **state)
{
  struct fsx_inode *r = root(), *d;

  (void)state;
  put("d/");
  d = child(r, "d");
  fake_s3_reset_counts(fm.s3);
  for (int i = 0; i < 5; i++)
    fsx_dir_changed(&fm.m, d); /* (the changes send nothing) */
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), 0);
  assert_true(stored(1));
  usleep(300000);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 1);
  assert_int_equal(atomic_load(&fm.m.st.dir_times_stored), 1);
  /* an implicit directory (keys below it, no marker): none made */
  put("imp/x");
  struct fsx_inode *imp = child(r, "imp");
  fsx_dir_changed(&fm.m, imp);
  fsx_dir_changed(&fm.m, d); /* (stored after imp's turn) */
  assert_true(stored(2));
  assert_false(has("imp/"));
  fsx_inode_put(fm.m.tab, imp);
  fsx_inode_put(fm.m.tab, d);
  fsx_inode_put(fm.m.tab, r);
}

struct renamer {
  pthread_t t;
  int rc;
};

static void *do_rename(void *arg)
{
  struct renamer *rn = arg;

  rn->rc = fsx_wns_rename(&fm.m, FSX_ROOT_INO, "mv", FSX_ROOT_INO, "mv2", 0);
  return NULL;
}

static void test_store_holds_off_a_rename_above(void **state)
{
  struct fsx_inode *r = root(), *mv, *c;
  struct renamer rn = {.rc = -1};

  (void)state;
  put("mv/");
  put("mv/c/");
  put("mv/c/f");
  mv = child(r, "mv");
  c = child(mv, "c");
  /* c's store on its way: its PUT held by the server */
  fake_s3_hold(fm.s3, FAKE_PUT, "mv/c/");
  fsx_dir_changed(&fm.m, c);
  assert_true(fake_s3_wait_held(fm.s3, 1, 10000));
  /* mv renamed meanwhile: it waits for the store (else it deletes mv/c/
     and the store's PUT, landing after, makes it again) */
  assert_int_equal(pthread_create(&rn.t, NULL, do_rename, &rn), 0);
  usleep(500000);
  fake_s3_release(fm.s3);
  assert_int_equal(pthread_join(rn.t, NULL), 0);
  assert_int_equal(rn.rc, 0);
  assert_true(stored(1)); /* (the held PUT answered) */
  assert_true(has("mv2/c/") && has("mv2/c/f"));
  assert_false(has("mv/c/") || has("mv/") || has("mv/c/f"));
  fsx_inode_put(fm.m.tab, c);
  fsx_inode_put(fm.m.tab, mv);
  fsx_inode_put(fm.m.tab, r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_burst_one_put, setup, teardown),
      cmocka_unit_test_setup_teardown(test_store_holds_off_a_rename_above,
                                      setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
