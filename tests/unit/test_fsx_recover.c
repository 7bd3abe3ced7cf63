/*
 * Recovery's decisions (fsx_recover_file: a dead mount's staging file)
 * against an S3 server in the test's process (fake_s3): a closed new file
 * goes up when the key is still free; one whose key another client took
 * since is kept with the reason, the other object untouched; one the dead
 * mount had already uploaded counts as done with no request more; a
 * changed file of an object still at its base version goes up with the
 * blocks it never held read from that version; one whose base changed is
 * kept; a server that cannot be reached leaves the file for the next mount
 * (-EAGAIN), not kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_mount.h"
#include "fs/stage/fsx_recover.h"
#include "fs/stage/fsx_stage.h"
#include "fs/write/fsx_wb.h"
#include "s3/s3_client.h"

#define MiB (1024u * 1024u)

static struct fake_mount fm;
static char reason[512];

static int run(void *arg, struct s3_req *q)
{
  (void)arg;
  s3_req_submit(q, NULL, NULL);
  return s3_req_wait(q);
}

static struct fsx_recover_io io_of(void)
{
  return (struct fsx_recover_io){&fm.m, run, NULL};
}

/* The object key holds exactly p[0, n). */
static bool holds(const char *key, const void *p, size_t n)
{
  return fake_s3_holds(fm.s3, FAKE_BUCKET, key, p, n);
}

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

/* A staging file holding data[0, len) (a temporary file), its descriptor. */
static int staged(const char *data, size_t len)
{
  char path[96];
  int fd;

  snprintf(path, sizeof(path), "%s/staged.XXXXXX", fm.dir);
  fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  assert_int_equal(pwrite(fd, data, len, 0), (ssize_t)len);
  return fd;
}

/* The record of a closed file for key: base_etag "" for a new object. */
static struct fsx_stage_rec rec_of(const char *key, const char *base_etag,
                                   uint64_t base_len, uint64_t size)
{
  return (struct fsx_stage_rec){.bucket = FAKE_BUCKET,
                                .key = key,
                                .base_etag = base_etag,
                                .base_len = base_len,
                                .part_size = fm.m.o.part_size,
                                .mode = S_IFREG | 0644,
                                .map_ok = true,
                                .has_size = true,
                                .size = size};
}

static int recover(const struct fsx_stage_rec *r, int fd, int map_fd)
{
  struct fsx_recover_io io = io_of();

  reason[0] = '\0';
  return fsx_recover_file(&io, r, "staged", fd, map_fd, reason,
                          sizeof(reason));
}

static void test_new_file_goes_up(void **state)
{
  char data[5000];
  struct fsx_stage_rec r = rec_of("new.bin", "", 0, sizeof(data));
  int fd;

  (void)state;
  fake_fill(data, sizeof(data), 0, 1);
  fd = staged(data, sizeof(data));
  assert_int_equal(recover(&r, fd, -1), 0);
  assert_true(holds("new.bin", data, sizeof(data)));
  close(fd);
}

static void test_new_file_key_taken_kept(void **state)
{
  char data[5000], theirs[100];
  struct fsx_stage_rec r = rec_of("taken.bin", "", 0, sizeof(data));
  int fd, rc;

  (void)state;
  fake_fill(data, sizeof(data), 0, 2);
  fake_fill(theirs, sizeof(theirs), 0, 3);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "taken.bin", theirs,
                               sizeof(theirs)),
                   0);
  fd = staged(data, sizeof(data));
  fake_s3_reset_counts(fm.s3);
  rc = recover(&r, fd, -1);
  assert_true(rc < 0 && rc != -EAGAIN); /* kept, with its reason */
  assert_non_null(strstr(reason, "changed on the server"));
  assert_true(holds("taken.bin", theirs, sizeof(theirs))); /* untouched */
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 0);
  close(fd);
}

static void test_already_uploaded_is_done(void **state)
{
  char data[5000];
  struct fsx_stage_rec r = rec_of("done.bin", "", 0, sizeof(data));
  int fd;

  (void)state;
  fake_fill(data, sizeof(data), 0, 4);
  /* the dead mount's PUT had landed: the object holds the staged bytes */
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "done.bin", data,
                               sizeof(data)),
                   0);
  fd = staged(data, sizeof(data));
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(recover(&r, fd, -1), 0);
  assert_int_equal(fake_s3_count(fm.s3, FAKE_PUT), 0);
  close(fd);
}

/* A map file saying blocks [0, held) of base_len are held. */
static int map_of(uint64_t base_len, uint64_t held)
{
  uint64_t nb = (base_len + FSX_WB_BLOCK - 1) / FSX_WB_BLOCK;
  uint8_t *bits = calloc((size_t)(nb + 7) / 8, 1);
  char path[96];
  int fd;

  for (uint64_t b = 0; b < held; b++)
    bits[b / 8] |= (uint8_t)(1u << (b % 8));
  snprintf(path, sizeof(path), "%s/map.XXXXXX", fm.dir);
  fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  assert_int_equal(pwrite(fd, bits, (size_t)(nb + 7) / 8, 0),
                   (ssize_t)((nb + 7) / 8));
  free(bits);
  return fd;
}

static void test_changed_file_of_its_base(void **state)
{
  size_t size = 3 * MiB;
  char *base = malloc(size), *want = malloc(size), *stage = calloc(1, size);
  char etag[64];
  void *p;
  size_t n;
  struct fsx_stage_rec r;
  int fd, map;

  (void)state;
  fake_fill(base, size, 0, 5);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "chg.bin", base, size), 0);
  assert_int_equal(fake_s3_get(fm.s3, FAKE_BUCKET, "chg.bin", &p, &n, etag),
                   0);
  free(p);
  /* the dead mount held (and changed) only the first block: the rest is
     the base's, read from exactly that version */
  memcpy(want, base, size);
  fake_fill(want, FSX_WB_BLOCK, 0, 6);
  memcpy(stage, want, FSX_WB_BLOCK);
  fd = staged(stage, size);
  map = map_of(size, 1);
  r = rec_of("chg.bin", etag, size, size);
  fake_s3_reset_counts(fm.s3);
  assert_int_equal(recover(&r, fd, map), 0);
  assert_true(holds("chg.bin", want, size));
  assert_true(fake_s3_count(fm.s3, FAKE_GET) >= 1);
  close(fd);
  close(map);
  free(base);
  free(want);
  free(stage);
}

static void test_base_changed_kept(void **state)
{
  size_t size = 64 * 1024;
  char *base = malloc(size), *theirs = malloc(size);
  char etag[64];
  void *p;
  size_t n;
  struct fsx_stage_rec r;
  int fd, map, rc;

  (void)state;
  fake_fill(base, size, 0, 7);
  fake_fill(theirs, size, 0, 8);
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "moved.bin", base, size),
                   0);
  assert_int_equal(fake_s3_get(fm.s3, FAKE_BUCKET, "moved.bin", &p, &n,
                               etag),
                   0);
  free(p);
  fd = staged(base, size);
  map = map_of(size, 1);
  r = rec_of("moved.bin", etag, size, size);
  /* another client replaced it since the dead mount opened it */
  assert_int_equal(fake_s3_put(fm.s3, FAKE_BUCKET, "moved.bin", theirs, size),
                   0);
  rc = recover(&r, fd, map);
  assert_true(rc < 0 && rc != -EAGAIN);
  assert_true(holds("moved.bin", theirs, size));
  close(fd);
  close(map);
  free(base);
  free(theirs);
}

static void test_server_away_left_for_next_mount(void **state)
{
  char data[5000];
  struct fsx_stage_rec r = rec_of("away.bin", "", 0, sizeof(data));
  int fd;

  (void)state;
  fake_fill(data, sizeof(data), 0, 9);
  fd = staged(data, sizeof(data));
  fake_s3_fault(fm.s3, FAKE_ANY, "away.bin", 503, 1000, 0);
  assert_int_equal(recover(&r, fd, -1), -EAGAIN);
  assert_false(fake_s3_has(fm.s3, FAKE_BUCKET, "away.bin"));
  fake_s3_clear(fm.s3);
  assert_int_equal(recover(&r, fd, -1), 0); /* the next mount's try */
  assert_true(holds("away.bin", data, sizeof(data)));
  close(fd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_new_file_goes_up, setup, teardown),
      cmocka_unit_test_setup_teardown(test_new_file_key_taken_kept, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_already_uploaded_is_done, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_changed_file_of_its_base, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_base_changed_kept, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_server_away_left_for_next_mount,
                                      setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
