/*
 * rename(2) (fs/ops/fsx_wns_rename.c) against an S3 server in the test's
 * process (fake_s3), request by request: a file is one copy and one
 * delete; over an existing file it replaces it; RENAME_NOREPLACE, a
 * directory onto a file or a file onto a directory, a directory into
 * itself or onto one that is not empty are refused before anything is
 * copied; a directory is every object below it copied, then deleted;
 * past write.rename_dir_max it is EXDEV with nothing copied; a copy that
 * fails half way is undone (the copies made removed, the originals all
 * there).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/fs.h>

#include "fake_mount.h"
#include "fs/meta/fsx_inode.h"
#include "fs/ops/fsx_wns.h"
#include "fs/ops/fsx_wns_i.h"

static struct fake_mount fm;

static void tune(struct cfg *c)
{
  char err[256];

  cfg_set(c, "write.rename_dir_max", "4", err, sizeof(err));
}

static int setup(void **state)
{
  (void)state;
  return fake_mount_up(&fm, tune);
}

static int teardown(void **state)
{
  (void)state;
  fake_mount_down(&fm);
  return 0;
}

/* key on the server with its own name as its bytes */
static void put(const char *key)
{
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, key, key, strlen(key)),
                   0);
}

/* key on the server, holding what put(was) stored */
static bool holds(const char *key, const char *was)
{
  return fake_s3_holds(fm.s3, FAKE_BUCKET, key, was, strlen(was));
}

static bool has(const char *key)
{
  return fake_s3_has(fm.s3, FAKE_BUCKET, key);
}

/* Directory name at the root, as a lookup makes it (held: a kernel's
   lookup count would keep it; fsx_inode_put after). */
static struct fsx_inode *dir_of(const char *name)
{
  struct fsx_inode *root = fsx_inode_get(fm.m.tab, FSX_ROOT_INO), *in;
  struct fsx_attr a;

  assert_int_equal(fsx_wns_resolve(&fm.m, root, name, &in, &a), 0);
  assert_int_equal(a.kind, FSX_DIR);
  fsx_inode_put(fm.m.tab, root);
  return in;
}

static int ren(fuse_ino_t p, const char *name, fuse_ino_t np,
               const char *newname, unsigned flags)
{
  return fsx_wns_rename(&fm.m, p, name, np, newname, flags);
}

static void test_file(void **state)
{
  (void)state;
  put("a");
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(ren(FSX_ROOT_INO, "a", FSX_ROOT_INO, "b", 0), 0);
  assert_true(holds("b", "a"));
  assert_false(has("a"));
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COPY), 1);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_DELETE), 1);
  /* the old name is gone for this mount too */
  assert_int_equal(ren(FSX_ROOT_INO, "a", FSX_ROOT_INO, "c", 0), -ENOENT);
}

static void test_over_file(void **state)
{
  (void)state;
  put("c");
  put("d");
  assert_int_equal(ren(FSX_ROOT_INO, "c", FSX_ROOT_INO, "d",
                       RENAME_NOREPLACE), -EEXIST);
  assert_true(holds("c", "c") && holds("d", "d"));
  assert_int_equal(ren(FSX_ROOT_INO, "c", FSX_ROOT_INO, "d", 0), 0);
  assert_true(holds("d", "c"));
  assert_false(has("c"));
}

/* Refused before anything is copied or deleted. */
static void test_refused(void **state)
{
  (void)state;
  put("f");
  put("e/");
  put("e/x");
  put("g/");
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(ren(FSX_ROOT_INO, "f", FSX_ROOT_INO, "e", 0), -EISDIR);
  assert_int_equal(ren(FSX_ROOT_INO, "e", FSX_ROOT_INO, "f", 0), -ENOTDIR);
  assert_int_equal(ren(FSX_ROOT_INO, "g", FSX_ROOT_INO, "e", 0),
                   -ENOTEMPTY);
  struct fsx_inode *e = dir_of("e");
  assert_int_equal(ren(FSX_ROOT_INO, "e", fsx_inode_ino(e), "in", 0),
                   -EINVAL);
  fsx_inode_put(fm.m.tab, e);
  assert_int_equal(ren(FSX_ROOT_INO, "f", FSX_ROOT_INO, "f", 0x8), -EINVAL);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COPY), 0);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_DELETE) +
                       fake_s3_count(fm.s3, FAKE_DELETE_MULTI),
                   0);
  assert_true(holds("f", "f") && holds("e/x", "e/x") && has("g/"));
}

static void test_dir(void **state)
{
  (void)state;
  put("d1/");
  put("d1/x");
  put("d1/sub/y");
  put("d1x"); /* a name that starts the same: not below d1/ */
  assert_int_equal(ren(FSX_ROOT_INO, "d1", FSX_ROOT_INO, "d2", 0), 0);
  assert_true(has("d2/"));
  assert_true(holds("d2/x", "d1/x"));
  assert_true(holds("d2/sub/y", "d1/sub/y"));
  assert_false(has("d1/") || has("d1/x") || has("d1/sub/y"));
  assert_true(holds("d1x", "d1x"));
  /* and into another directory */
  put("p/");
  struct fsx_inode *p = dir_of("p");
  assert_int_equal(ren(FSX_ROOT_INO, "d2", fsx_inode_ino(p), "d3", 0), 0);
  fsx_inode_put(fm.m.tab, p);
  assert_true(holds("p/d3/sub/y", "d1/sub/y"));
  assert_false(has("d2/x"));
}

/* More than write.rename_dir_max objects: EXDEV, nothing copied (mv then
   copies by itself). */
static void test_dir_too_big(void **state)
{
  (void)state;
  put("big/");
  for (char c = 'a'; c <= 'e'; c++) {
    char key[8] = {'b', 'i', 'g', '/', c, '\0'};
    put(key);
  }
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(ren(FSX_ROOT_INO, "big", FSX_ROOT_INO, "big2", 0),
                   -EXDEV);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_COPY), 0);
  assert_true(holds("big/e", "big/e"));
  assert_false(has("big2/a"));
}

/* A copy refused half way: the copies made are removed, the originals
   all kept, the error said. */
static void test_dir_copy_fails(void **state)
{
  (void)state;
  put("h/");
  put("h/a");
  put("h/b");
  put("h/c");
  fake_s3_fault(fm.s3, FAKE_COPY, "h2/b", 500, 100, 0);
  assert_int_equal(ren(FSX_ROOT_INO, "h", FSX_ROOT_INO, "h2", 0), -EIO);
  fake_s3_clear(fm.s3);
  assert_true(holds("h/a", "h/a") && holds("h/b", "h/b") &&
              holds("h/c", "h/c") && has("h/"));
  assert_false(has("h2/") || has("h2/a") || has("h2/b") || has("h2/c"));
  /* and it can be done after */
  assert_int_equal(ren(FSX_ROOT_INO, "h", FSX_ROOT_INO, "h2", 0), 0);
  assert_true(holds("h2/c", "h/c"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_over_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dir, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dir_too_big, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dir_copy_fails, setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
