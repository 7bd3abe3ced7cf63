/*
 * The part-buffer pool (fsx_pool): runs of adjacent slots lent and given
 * back; no run free and none on the wire is -EAGAIN at once (waiting could
 * last forever), while one on the wire is waited for; a killed daemon's
 * runs written back into the staging files their headers name, and only
 * those (a run given back is not), with names that leave the directory
 * refused. A pool in write.pool_dir (named by pool.at) is recovered the
 * same way, and only when it is a private plain file of ours named as we
 * name them; one gone with its tmpfs is said (-ENOENT). Its file's blocks
 * are taken as slots are first lent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/mem/fsx_pool.h"

#define SLOT (64u * 1024u)

static char dir[64], home[64];

static int setup(void **state)
{
  (void)state;
  snprintf(dir, sizeof(dir), "/tmp/test_fsx_pool.XXXXXX");
  snprintf(home, sizeof(home), "/tmp/test_fsx_pool_home.XXXXXX");
  return mkdtemp(dir) && mkdtemp(home) ? 0 : -1;
}

static int teardown(void **state)
{
  char cmd[192];

  (void)state;
  snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, home);
  return system(cmd) == 0 ? 0 : -1;
}

/* Where the pool file is kept while the pool "dies" (closing removes it). */
static const char *keep_path(void)
{
  static char p[96];

  snprintf(p, sizeof(p), "%s.keep", dir);
  return p;
}

static struct fsx_pool *open_in(const char *where, size_t slots)
{
  struct fsx_pool *p;
  char err[256];

  assert_int_equal(fsx_pool_open(dir, where, slots * SLOT, SLOT, &p, err,
                                 sizeof(err)), 0);
  return p;
}

static struct fsx_pool *open_pool(size_t slots)
{
  return open_in("", slots);
}

/* The daemon "dies": the mapping goes, the pool's file (and pool.at) stay. */
static void die(struct fsx_pool *p)
{
  char at[128], keep_at[128], file[4200];

  snprintf(at, sizeof(at), "%s/pool.at", dir);
  snprintf(keep_at, sizeof(keep_at), "%s.at", keep_path());
  snprintf(file, sizeof(file), "%s", fsx_pool_path(p));
  assert_int_equal(link(file, keep_path()), 0);
  if (strcmp(file + strlen(dir), "/pool"))
    assert_int_equal(link(at, keep_at), 0);
  fsx_pool_close(p);
  assert_int_equal(rename(keep_path(), file), 0);
  if (!access(keep_at, F_OK))
    assert_int_equal(rename(keep_at, at), 0);
}

static void test_runs(void **state)
{
  struct fsx_pool *p = open_pool(4);
  void *a, *b, *c, *d, *data;
  size_t len;

  (void)state;
  data = fsx_pool_data(p, &len);
  assert_int_equal(len, 4 * SLOT);
  assert_int_equal(fsx_pool_slot_size(p), SLOT);
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-1-1", 0, &a), 0);
  assert_ptr_equal(a, data);
  /* two slots for a part longer than one */
  assert_int_equal(fsx_pool_get(p, SLOT + 1, "ino-1-1", SLOT, &b), 0);
  assert_ptr_equal(b, (char *)data + SLOT);
  assert_int_equal(fsx_pool_get(p, 1, "ino-2-2", 0, &c), 0);
  assert_ptr_equal(c, (char *)data + 3 * SLOT);
  /* full, nothing on the wire: refused at once */
  assert_int_equal(fsx_pool_get(p, 1, "ino-3-3", 0, &d), -EAGAIN);
  /* a and c free, but not adjacent: no run of two */
  fsx_pool_put(p, a);
  fsx_pool_put(p, c);
  assert_int_equal(fsx_pool_get(p, 2 * SLOT, "ino-3-3", 0, &d), -EAGAIN);
  fsx_pool_put(p, b); /* now slots 0..2 are free */
  assert_int_equal(fsx_pool_get(p, 3 * SLOT, "ino-3-3", 0, &d), 0);
  assert_ptr_equal(d, data);
  /* more than the pool: never */
  assert_int_equal(fsx_pool_get(p, 5 * SLOT, "ino-3-3", 0, &a), -EINVAL);
  fsx_pool_put(p, d);
  fsx_pool_close(p);
}

struct later {
  struct fsx_pool *p;
  void *buf;
};

static void *give_back(void *arg)
{
  struct later *l = arg;

  usleep(100 * 1000);
  /* as the write-back does (fsx_wb_part.c): put first, so that a waiter
     woken with nothing on the wire finds the run free, not -EAGAIN */
  fsx_pool_put(l->p, l->buf);
  fsx_pool_sending(l->p, l->buf, false);
  return NULL;
}

/* Bytes of the pool's file that hold blocks (st_blocks). */
static long long held(struct fsx_pool *p)
{
  struct stat st;

  assert_int_equal(stat(fsx_pool_path(p), &st), 0);
  return (long long)st.st_blocks * 512;
}

/*
 * The pool takes memory as it is used: at open its file holds the headers'
 * blocks only; a run's slots get theirs when first lent, and keep them.
 */
static void test_blocks_follow_use(void **state)
{
  struct fsx_pool *p = open_pool(16);
  long long at_open = held(p);
  void *a, *b;
  char line[4096];

  (void)state;
  assert_true(at_open < (long long)SLOT);
  assert_int_equal(fsx_pool_get(p, 2 * SLOT, "ino-1-1", 0, &a), 0);
  assert_true(held(p) >= at_open + 2 * (long long)SLOT);
  assert_true(held(p) < at_open + 3 * (long long)SLOT);
  memset(a, 0x5a, 2 * SLOT);
  fsx_pool_put(p, a);
  /* the same slots again: nothing more */
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-1-1", 0, &b), 0);
  assert_ptr_equal(a, b);
  assert_true(held(p) < at_open + 3 * (long long)SLOT);
  fsx_pool_stats(p, line, sizeof(line));
  assert_non_null(strstr(line, "write.pool_slots_ready 2\n"));
  fsx_pool_put(p, b);
  fsx_pool_close(p);
}

/*
 * Idle slots go back: their blocks punched out of the file, the slot made
 * ready again by its next lend; a lent slot stays; a fixed pool (a verbs
 * registration) gives nothing back.
 */
static void test_release_idle(void **state)
{
  struct fsx_pool *p = open_pool(16);
  long long at_open = held(p);
  void *a, *b, *c;
  char line[4096];

  (void)state;
  assert_int_equal(fsx_pool_get(p, 2 * SLOT, "ino-1-1", 0, &a), 0);
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-2-1", 0, &b), 0);
  memset(a, 0x5a, 2 * SLOT);
  memset(b, 0x5b, SLOT);
  fsx_pool_put(p, a);
  assert_int_equal(fsx_pool_release(p, 60000), 0); /* not idle long enough */
  assert_int_equal(fsx_pool_release(p, 0), 2);     /* b is still lent */
  assert_true(held(p) < at_open + 2 * (long long)SLOT);
  fsx_pool_stats(p, line, sizeof(line));
  assert_non_null(strstr(line, "write.pool_slots_ready 1\n"));
  assert_non_null(strstr(line, "write.pool_slots_released 2\n"));
  assert_int_equal(((unsigned char *)b)[SLOT - 1], 0x5b);
  /* lent again: ready again, zeros where the bytes were */
  assert_int_equal(fsx_pool_get(p, 2 * SLOT, "ino-1-2", 0, &c), 0);
  assert_ptr_equal(a, c);
  assert_int_equal(((unsigned char *)c)[0], 0);
  assert_true(held(p) >= at_open + 3 * (long long)SLOT);
  fsx_pool_put(p, c);
  fsx_pool_put(p, b);
  fsx_pool_fix(p);
  assert_int_equal(fsx_pool_release(p, 0), 0);
  fsx_pool_close(p);
}

static void test_wait(void **state)
{
  struct fsx_pool *p = open_pool(1);
  struct later l = {p, NULL};
  char stats[512];
  pthread_t t;
  void *b;

  (void)state;
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-1-1", 0, &l.buf), 0);
  fsx_pool_sending(p, l.buf, true);
  assert_int_equal(pthread_create(&t, NULL, give_back, &l), 0);
  /* on the wire: it comes back, so this waits for it */
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-2-2", 0, &b), 0);
  assert_ptr_equal(b, l.buf);
  pthread_join(t, NULL);
  fsx_pool_stats(p, stats, sizeof(stats));
  assert_non_null(strstr(stats, "write.pool_waits 1\n"));
  assert_non_null(strstr(stats, "write.pool_slots_used 1\n"));
  fsx_pool_put(p, b);
  fsx_pool_close(p);
}

static void make_file(const char *name)
{
  char path[256];
  int fd;

  snprintf(path, sizeof(path), "%s/%s", dir, name);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  close(fd);
}

static void read_file(const char *name, char *buf, size_t len, off_t off,
                      struct stat *st)
{
  char path[256];
  int fd;

  snprintf(path, sizeof(path), "%s/%s", dir, name);
  fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(fstat(fd, st), 0);
  assert_int_equal(pread(fd, buf, len, off), (ssize_t)len);
  close(fd);
}

static void recover(const char *where)
{
  struct fsx_pool *p = open_in(where, 4);
  char got[SLOT], path[256];
  void *a, *b, *c;
  struct stat st;

  make_file("ino-5-1");
  make_file("ino-6-2");
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-5-1", 3 * SLOT, &a), 0);
  memset(a, 'a', 1000);
  fsx_pool_filled(p, a, 1000);
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-6-2", 0, &b), 0);
  memset(b, 'b', SLOT);
  fsx_pool_filled(p, b, SLOT);
  assert_int_equal(fsx_pool_get(p, SLOT, "ino-6-2", SLOT, &c), 0);
  memset(c, 'c', SLOT);
  fsx_pool_filled(p, c, SLOT);
  fsx_pool_put(p, c); /* given back: not this file's bytes any more */
  snprintf(path, sizeof(path), "%s", fsx_pool_path(p));
  die(p);
  assert_int_equal(fsx_pool_recover(dir), 2);
  assert_int_equal(access(path, F_OK), -1); /* the pool is removed */
  read_file("ino-5-1", got, 1000, 3 * SLOT, &st);
  assert_int_equal(st.st_size, 3 * SLOT + 1000);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(got[i], 'a');
  read_file("ino-6-2", got, SLOT, 0, &st);
  assert_int_equal(st.st_size, SLOT);
  for (int i = 0; i < (int)SLOT; i++)
    assert_int_equal(got[i], 'b');
  /* no pool: nothing to do */
  assert_int_equal(fsx_pool_recover(dir), 0);
}

static void test_recover(void **state)
{
  (void)state;
  recover("");
}

/* In write.pool_dir: a file named as ours, pool.at in the directory. */
static void test_recover_home(void **state)
{
  struct fsx_pool *p = open_in(home, 1);
  char at[128];

  (void)state;
  assert_int_equal(strncmp(fsx_pool_path(p), home, strlen(home)), 0);
  assert_non_null(strstr(fsx_pool_path(p), "/s3rdmafs-pool-"));
  snprintf(at, sizeof(at), "%s/pool.at", dir);
  assert_int_equal(access(at, F_OK), 0);
  fsx_pool_close(p); /* both removed */
  assert_int_equal(access(at, F_OK), -1);
  recover(home);
  assert_int_equal(access(at, F_OK), -1);
  /* no room there (or no such directory): in the mount's directory */
  p = open_in("/nonexistent-pool-dir", 1);
  assert_int_equal(strcmp(fsx_pool_path(p) + strlen(dir), "/pool"), 0);
  fsx_pool_close(p);
}

/* pool.at names what the next mount opens as root: only a private plain
   file of ours named as we name them; a pool gone with its tmpfs says so. */
static void test_recover_home_hostile(void **state)
{
  char at[128], file[4200], other[200];
  struct fsx_pool *p;
  void *a;
  int fd;

  (void)state;
  snprintf(at, sizeof(at), "%s/pool.at", dir);
  p = open_in(home, 1);
  assert_int_equal(fsx_pool_get(p, 10, "ino-7-1", 0, &a), 0);
  fsx_pool_filled(p, a, 10);
  snprintf(file, sizeof(file), "%s", fsx_pool_path(p));
  die(p);
  /* readable by others: refused, left in place */
  assert_int_equal(chmod(file, 0644), 0);
  assert_int_equal(fsx_pool_recover(dir), -EPERM);
  assert_int_equal(chmod(file, 0600), 0);
  /* a second name for it: refused */
  snprintf(other, sizeof(other), "%s/s3rdmafs-pool-other", home);
  assert_int_equal(link(file, other), 0);
  assert_int_equal(fsx_pool_recover(dir), -EPERM);
  unlink(other);
  /* a symlink named as ours: not followed */
  assert_int_equal(symlink(file, other), 0);
  fd = open(at, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  dprintf(fd, "%s\n", other);
  close(fd);
  assert_int_equal(fsx_pool_recover(dir), -ELOOP);
  unlink(other);
  /* a FIFO named as ours: refused at once, never waited on */
  assert_int_equal(mkfifo(other, 0600), 0);
  fd = open(at, O_WRONLY | O_TRUNC);
  dprintf(fd, "%s\n", other);
  close(fd);
  assert_int_equal(fsx_pool_recover(dir), -EPERM);
  unlink(other);
  fd = open(at, O_WRONLY | O_TRUNC);
  dprintf(fd, "%s\n", file);
  close(fd);
  /* not named as ours */
  snprintf(other, sizeof(other), "%s/lock", home);
  assert_int_equal(rename(file, other), 0);
  fd = open(at, O_WRONLY | O_TRUNC);
  dprintf(fd, "%s\n", other);
  close(fd);
  assert_int_equal(fsx_pool_recover(dir), -EINVAL);
  assert_int_equal(rename(other, file), 0);
  /* gone (its tmpfs emptied): said, and pool.at removed */
  fd = open(at, O_WRONLY | O_TRUNC);
  dprintf(fd, "%s\n", file);
  close(fd);
  unlink(file);
  assert_int_equal(fsx_pool_recover(dir), -ENOENT);
  assert_int_equal(access(at, F_OK), -1);
  /* cut short before any run was lent: removed */
  fd = open(at, O_WRONLY | O_CREAT, 0600);
  assert_int_equal(write(fd, "/dev/shm/s3rd", 13), 13);
  close(fd);
  assert_int_equal(fsx_pool_recover(dir), 0);
  assert_int_equal(access(at, F_OK), -1);
}

static void test_recover_hostile(void **state)
{
  static const char *bad[] = {"../escape", "format", "lock", "ino-7-1.rec",
                              "ino-7-1/x", "ino--1", "ino-7-", ".ino-7-1"};
  char path[256];

  (void)state;
  snprintf(path, sizeof(path), "%s/pool", dir);
  /* a header naming anything but a staging file of the directory is not
     followed: the pool is left in place */
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct fsx_pool *p = open_pool(2);
    void *a;
    int fd;
    assert_int_equal(fsx_pool_get(p, 10, "ino-7-1", 0, &a), 0);
    fsx_pool_filled(p, a, 10);
    die(p);
    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    /* run 0's header: the name at offset 24 of the second 128 bytes */
    assert_int_equal(pwrite(fd, bad[i], strlen(bad[i]) + 1, 128 + 24),
                     (ssize_t)strlen(bad[i]) + 1);
    close(fd);
    assert_int_equal(fsx_pool_recover(dir), -EINVAL);
    assert_int_equal(access(path, F_OK), 0);
    unlink(path);
  }
  /* not a pool at all */
  make_file("pool");
  assert_int_equal(fsx_pool_recover(dir), -EINVAL);
  unlink(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_runs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_blocks_follow_use, setup, teardown),
      cmocka_unit_test_setup_teardown(test_release_idle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover_hostile, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover_home, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover_home_hostile, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
