/*
 * Unit tests for the recovery walk of fsx_stage_recover.c as the recovery
 * thread (fsx_recover_thread) drives it: what dead mounts left is counted
 * (fsx_stage_leftovers), and a walk told to stop (fsx_stage_recover_until)
 * touches nothing more, leaving the rest as it was for the next mount.
 * Real files in a temporary directory; the callback stands in for the S3
 * side (test_fs_crash runs the whole on a real mount).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fs/fsx_stage.h"

#define ENDPOINT "http://e"

static char root[256];

static int setup(void **state)
{
  (void)state;
  snprintf(root, sizeof(root), "/tmp/s3r-stage-rec-XXXXXX");
  assert_non_null(mkdtemp(root));
  return 0;
}

static int teardown(void **state)
{
  char cmd[300];

  (void)state;
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

/* A mount that dies with n staging files, each with its record (dirty). */
static void dead_mount(int n)
{
  struct fsx_stage *s;
  char err[256] = "", path[4096], key[32];

  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  for (int i = 0; i < n; i++) {
    struct fsx_stage_rec r = {.bucket = "bkt", .key = key, .base_etag = "",
                              .part_size = 5u << 20, .mode = 0100644,
                              .map_ok = true};
    int fd = fsx_stage_create(s, 10 + (uint64_t)i, path, sizeof(path));
    assert_true(fd >= 0);
    snprintf(key, sizeof(key), "file-%d", i);
    assert_int_equal(write(fd, "data", 4), 4);
    assert_int_equal(fsx_stage_rec_write(s, path, &r), 0);
    close(fd);
  }
  fsx_stage_close(s); /* its files keep the directory: "killed" */
}

/* The fake upload: counts, and tells the walk to stop after stop_after. */
struct fake {
  int calls, stop_after;
  atomic_bool stop;
};

static int fake_upload(void *arg, const struct fsx_stage_rec *r,
                       const char *path, int fd, int map_fd, char *reason,
                       size_t reasonlen)
{
  struct fake *f = arg;

  (void)r, (void)path, (void)fd, (void)map_fd, (void)reason, (void)reasonlen;
  if (++f->calls == f->stop_after)
    atomic_store(&f->stop, true); /* as fsx_recover_thread_stop does */
  return 0;
}

static void test_leftovers_counts_dead_mounts_only(void **state)
{
  struct fsx_stage *s;
  char err[256] = "", path[4096];
  int dirs = -1, fd;

  (void)state;
  dead_mount(2);
  dead_mount(3);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fd = fsx_stage_create(s, 99, path, sizeof(path)); /* ours: not counted */
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 5);
  assert_int_equal(dirs, 2);
  fsx_stage_remove(path);
  fsx_stage_close(s);
}

static void test_leftovers_none(void **state)
{
  struct fsx_stage *s;
  char err[256] = "";
  int dirs = -1;

  (void)state;
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 0);
  assert_int_equal(dirs, 0);
  fsx_stage_close(s);
}

static void test_stop_leaves_the_rest_in_place(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct fake f = {.stop_after = 1};
  char err[256] = "";
  int dirs;

  (void)state;
  atomic_init(&f.stop, false);
  dead_mount(3);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover_until(s, NULL, fake_upload, &f, &f.stop, &rv);
  assert_int_equal(f.calls, 1); /* told to stop: no other file touched */
  assert_int_equal(rv.uploaded, 1);
  assert_int_equal(rv.kept, 0);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 2);
  assert_int_equal(dirs, 1); /* the directory stays, for the next mount */
  /* the next walk (not stopped) does the rest */
  atomic_store(&f.stop, false);
  f.stop_after = 0;
  fsx_stage_recover_until(s, NULL, fake_upload, &f, &f.stop, &rv);
  assert_int_equal(f.calls, 3);
  assert_int_equal(rv.uploaded, 2);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 0);
  assert_int_equal(dirs, 0);
  fsx_stage_close(s);
}

static void test_stopped_before_it_starts(void **state)
{
  struct fsx_stage *s;
  struct fsx_recovery rv;
  struct fake f = {0};
  char err[256] = "";
  int dirs;

  (void)state;
  atomic_init(&f.stop, true);
  dead_mount(2);
  assert_int_equal(fsx_stage_open(root, ENDPOINT, &s, err, sizeof(err)), 0);
  fsx_stage_recover_until(s, NULL, fake_upload, &f, &f.stop, &rv);
  assert_int_equal(f.calls, 0);
  assert_int_equal(rv.uploaded + rv.kept + rv.left + rv.aborted, 0);
  assert_int_equal(fsx_stage_leftovers(s, &dirs), 2);
  assert_int_equal(dirs, 1);
  fsx_stage_close(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_leftovers_counts_dead_mounts_only,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_leftovers_none, setup, teardown),
    cmocka_unit_test_setup_teardown(test_stop_leaves_the_rest_in_place,
                                    setup, teardown),
    cmocka_unit_test_setup_teardown(test_stopped_before_it_starts, setup,
                                    teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
