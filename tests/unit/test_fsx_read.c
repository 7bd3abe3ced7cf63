/*
 * The read path (fsx_read: open handles, the page cache's fills, ranged
 * GETs If-Match the open version) against an S3 server in the test's
 * process (fake_s3), request by request: a file read in order costs a few
 * GETs, growing with the readahead window, and a second read none; a
 * read never mixes versions (the object changed since the open: ESTALE);
 * a GET the server fails is tried again and the read gets its bytes; one
 * that keeps failing is an error, not wrong bytes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "fake_mount.h"
#include "fs/meta/fsx_inode.h"
#include "fs/read/fsx_read.h"

#define MiB (1024u * 1024u)

static struct fake_mount fm;

static int setup(void **state)
{
  (void)state;
  return fake_mount_up(&fm, NULL);
}

static int teardown(void **state)
{
  (void)state;
  fake_mount_down(&fm);
  return 0;
}

/* A handle on name (an object of the fake), as an open makes it. */
static struct fsx_fh *open_fh(const char *name)
{
  struct fsx_inode *in = fake_mount_file(&fm, name);
  struct fsx_inode_view v;
  struct fsx_fh *fh;

  assert_non_null(in);
  fsx_inode_view(fm.m.tab, in, &v);
  fh = fsx_fh_create(&fm.m, in, &v.attr); /* (takes its own reference) */
  fsx_inode_put(fm.m.tab, in);
  assert_non_null(fh);
  fsx_fh_set_open(fh, NULL, FSX_FH_READABLE);
  return fh;
}

/* Read [off, off + len) through fh into out: bytes read, or -errno. */
static ssize_t read_at(struct fsx_fh *fh, uint64_t off, size_t len,
                       char *out)
{
  struct fsx_read_ctx *ctx = NULL;
  struct iovec *iov = NULL;
  int niov = 0, rc;
  size_t n = 0;

  rc = fsx_read(&fm.m, fh, off, len, &iov, &niov, &ctx);
  for (int i = 0; !rc && i < niov; i++) {
    memcpy(out + n, iov[i].iov_base, iov[i].iov_len);
    n += iov[i].iov_len;
  }
  fsx_read_done(&fm.m, ctx);
  return rc ? rc : (ssize_t)n;
}

static char *object(const char *name, size_t size, uint64_t seed)
{
  char *p = malloc(size);

  fake_fill(p, size, 0, seed);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, name, p, size), 0);
  return p;
}

static void test_in_order_few_gets_then_none(void **state)
{
  size_t size = 8 * MiB, step = 128 * 1024;
  char *want = object("seq.bin", size, 1), *got = malloc(size);
  struct fsx_fh *fh = open_fh("seq.bin");
  unsigned first;

  (void)state;
  fake_s3_reset_counts(fm.s3);
  for (size_t off = 0; off < size; off += step)
    assert_int_equal(read_at(fh, off, step, got + off), (ssize_t)step);
  assert_memory_equal(got, want, size);
  assert_true(fake_s3_quiet(fm.s3, 200)); /* (readahead sent late, in) */
  /* 8 chunks of 1 MiB, read ahead in growing windows: far fewer GETs
     than reads (64), and nothing but GETs */
  first = fake_s3_count(fm.s3, FAKE_GET);
  assert_in_range(first, 1, 6);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), first);
  /* again: all from the page cache */
  for (size_t off = 0; off < size; off += step)
    assert_int_equal(read_at(fh, off, step, got + off), (ssize_t)step);
  assert_memory_equal(got, want, size);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), first);
  /* past the end: nothing, and no request */
  assert_int_equal(read_at(fh, size, step, got), 0);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_ANY), first);
  fsx_fh_release(&fm.m, fh);
  free(want);
  free(got);
}

static void test_changed_object_never_mixed(void **state)
{
  size_t size = 4 * MiB;
  char *old = object("chg.bin", size, 2), *got = malloc(size), *new;
  struct fsx_fh *fh = open_fh("chg.bin");

  (void)state;
  assert_int_equal(read_at(fh, 0, 4096, got), 4096);
  assert_memory_equal(got, old, 4096);
  /* another writer replaces the object: the rest of the old version is
     no longer there, and the handle says so rather than mixing in the
     new bytes */
  new = object("chg.bin", size, 3);
  assert_int_equal(read_at(fh, 3 * MiB, 4096, got), -ESTALE);
  fsx_fh_release(&fm.m, fh);
  /* a new open reads the new version */
  fh = open_fh("chg.bin");
  assert_int_equal(read_at(fh, 3 * MiB, 4096, got), 4096);
  assert_memory_equal(got, new + 3 * MiB, 4096);
  fsx_fh_release(&fm.m, fh);
  free(old);
  free(new);
  free(got);
}

static void test_server_errors_retried(void **state)
{
  size_t size = 2 * MiB;
  char *want = object("flaky.bin", size, 4), *got = malloc(size);
  struct fsx_fh *fh = open_fh("flaky.bin");

  (void)state;
  /* the first two GETs refused (the read's, or its readahead's): the
     read still gets its bytes, and both refusals were met */
  fake_s3_fault(fm.s3, FAKE_GET, "flaky.bin", 503, 2, 0);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(read_at(fh, 0, 65536, got), 65536);
  assert_memory_equal(got, want, 65536);
  assert_true(fake_s3_quiet(fm.s3, 200));
  assert_int_equal(fake_s3_refused(fm.s3), 2);
  assert_int_equal(read_at(fh, 65536, 65536, got), 65536);
  assert_memory_equal(got, want + 65536, 65536);
  fsx_fh_release(&fm.m, fh);
  free(want);
  free(got);
}

static void test_server_down_is_an_error(void **state)
{
  size_t size = 2 * MiB;
  char *want = object("down.bin", size, 5), *got = malloc(size);
  struct fsx_fh *fh = open_fh("down.bin");

  (void)state;
  /* every attempt refused */
  fake_s3_fault(fm.s3, FAKE_GET, "down.bin", 500, 1000, 0);
  assert_int_equal(read_at(fh, 0, 65536, got), -EIO);
  /* back: the same handle reads */
  fake_s3_clear(fm.s3);
  assert_int_equal(read_at(fh, 0, 65536, got), 65536);
  assert_memory_equal(got, want, 65536);
  fsx_fh_release(&fm.m, fh);
  free(want);
  free(got);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_in_order_few_gets_then_none, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_changed_object_never_mixed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_server_errors_retried, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_server_down_is_an_error, setup,
                                      teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
