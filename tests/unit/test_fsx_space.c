/*
 * The staging space limit (fsx_space): the arithmetic (default limit,
 * margin, room on the filesystem, what fits), then the module on real
 * sparse files in a temporary directory: what a write may allocate (the
 * holes of the 64 KiB blocks it touches), what it reserves, recounts from
 * st_blocks, -ENOSPC once
 * the wait is over, one log line per episode, a waiter let through when a
 * file is forgotten, truncates giving space back, and what statfs is told.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "common/slog.h"
#include "fs/write/fsx_space.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

/* ---- the arithmetic ---- */

static void test_default_and_margin(void **state)
{
  (void)state;
  assert_int_equal(fsx_space_default_max(0), 0);
  assert_int_equal(fsx_space_default_max(100 * GiB), 50 * GiB);
  assert_int_equal(fsx_space_default_max(3), 1);
  assert_int_equal(fsx_space_margin(0), 0);
  assert_int_equal(fsx_space_margin(100 * MiB), 1 * MiB);   /* 1% */
  assert_int_equal(fsx_space_margin(10 * GiB), 10 * GiB / 100);
  assert_int_equal(fsx_space_margin(250 * GiB), 256 * MiB); /* capped */
  assert_int_equal(fsx_space_margin(UINT64_MAX), 256 * MiB);
}

static void test_disk_room(void **state)
{
  (void)state;
  assert_int_equal(fsx_space_disk_room(10 * MiB, 1 * MiB, 2 * MiB), 7 * MiB);
  assert_int_equal(fsx_space_disk_room(3 * MiB, 1 * MiB, 2 * MiB), 0);
  assert_int_equal(fsx_space_disk_room(1 * MiB, 1 * MiB, 2 * MiB), 0);
  assert_int_equal(fsx_space_disk_room(0, 0, 0), 0);
}

static const struct fits_case {
  uint64_t limit, used, reserved, need, disk;
  bool fits;
} fits_cases[] = {
    {64 * MiB, 0, 0, 1 * MiB, GiB, true},
    {64 * MiB, 63 * MiB, 0, 1 * MiB, GiB, true},       /* exactly full */
    {64 * MiB, 63 * MiB, 1, 1 * MiB, GiB, false},      /* one byte over */
    {64 * MiB, 40 * MiB, 24 * MiB, 1, GiB, false},     /* reserved count */
    {64 * MiB, 70 * MiB, 0, 1, GiB, false},            /* over (fetches) */
    {1 * MiB, 0, 0, 2 * MiB, GiB, true},  /* a lone write larger than the
                                             limit still goes */
    {1 * MiB, 1, 0, 2 * MiB, GiB, false},
    {64 * MiB, 0, 0, 1 * MiB, 1 * MiB - 1, false},     /* the disk first */
    {64 * MiB, 0, 0, 1 * MiB, 1 * MiB, true},
    {UINT64_MAX, UINT64_MAX / 2, 0, 1, GiB, true},     /* no overflow */
};

static void test_fits(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(fits_cases) / sizeof(fits_cases[0]); i++) {
    const struct fits_case *t = &fits_cases[i];
    bool got = fsx_space_fits(t->limit, t->used, t->reserved, t->need,
                              t->disk);
    if (got != t->fits)
      fail_msg("case %zu: fits %d, want %d", i, got, t->fits);
  }
}

/* ---- the module on real files ---- */

struct env {
  char dir[64];
  char path[4][96];
  int fd[4];
  int err_fd;                 /* stderr, while the log goes to a file */
  char log[96];
};

static int setup(void **state)
{
  struct env *e = calloc(1, sizeof(*e));

  if (!e)
    return -1;
  snprintf(e->dir, sizeof(e->dir), "/tmp/test_fsx_space.XXXXXX");
  if (!mkdtemp(e->dir))
    return -1;
  for (int i = 0; i < 4; i++) {
    snprintf(e->path[i], sizeof(e->path[i]), "%s/f%d", e->dir, i);
    e->fd[i] = open(e->path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (e->fd[i] < 0)
      return -1;
  }
  /* the log (warnings and info) into a file, to count its lines */
  snprintf(e->log, sizeof(e->log), "%s/log", e->dir);
  e->err_fd = dup(2);
  int lf = open(e->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (e->err_fd < 0 || lf < 0 || dup2(lf, 2) < 0)
    return -1;
  close(lf);
  slog_set_level(LOG_INFO);
  *state = e;
  return 0;
}

static int teardown(void **state)
{
  struct env *e = *state;
  char line[1024];
  FILE *f;

  /* stderr back, and what went to it meanwhile shown (cmocka's too) */
  fflush(stderr);
  dup2(e->err_fd, 2);
  close(e->err_fd);
  if ((f = fopen(e->log, "r"))) {
    while (fgets(line, sizeof(line), f))
      fprintf(stderr, "# %s", line);
    fclose(f);
  }
  for (int i = 0; i < 4; i++) {
    close(e->fd[i]);
    unlink(e->path[i]);
  }
  unlink(e->log);
  rmdir(e->dir);
  free(e);
  return 0;
}

/* Lines of the log holding s. */
static int log_lines(const struct env *e, const char *s)
{
  char line[1024];
  FILE *f = fopen(e->log, "r");
  int n = 0;

  assert_non_null(f);
  while (fgets(line, sizeof(line), f))
    n += strstr(line, s) != NULL;
  fclose(f);
  return n;
}

static uint64_t blocks_of(int fd)
{
  struct stat st;

  assert_int_equal(fstat(fd, &st), 0);
  return (uint64_t)st.st_blocks * 512u;
}

/* A write as fsx_wb_write does it: reserve, pwrite, settle. */
static int do_write(struct fsx_space *sp, int fd, uint64_t off, size_t len,
                    uint64_t *held)
{
  static char buf[1 << 20];
  uint64_t h;
  int rc;

  assert_true(len <= sizeof(buf));
  memset(buf, 'x', len);
  rc = fsx_space_reserve(sp, fd, off, len, false, &h);
  if (held)
    *held = h;
  if (rc)
    return rc;
  assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
  fsx_space_settle(sp, fd, h);
  return 0;
}

static void info(struct fsx_space *sp, struct fsx_space_info *si)
{
  fsx_space_info(sp, si);
}

/* What a write may allocate: the holes of the 64 KiB blocks it touches. */
static void test_estimate(void **state)
{
  struct env *e = *state;
  static char buf[1 << 20];
  int fd = e->fd[0];

  /* a new file: all of it a hole */
  assert_int_equal(fsx_space_estimate(fd, 0, 1 << 20, false), 1 * MiB);
  assert_int_equal(fsx_space_estimate(fd, 10, 100, false), 64 * KiB);
  assert_int_equal(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
  /* an overwrite of what is there: nothing */
  assert_int_equal(fsx_space_estimate(fd, 4096, 65536, false), 0);
  assert_int_equal(fsx_space_estimate(fd, 0, 1 << 20, false), 0);
  /* a few bytes past the end: the whole 64 KiB block they fall in */
  assert_int_equal(fsx_space_estimate(fd, 1 * MiB + 10, 100, false),
                   64 * KiB);
  /* straddling the end: the block past it */
  assert_int_equal(fsx_space_estimate(fd, 1 * MiB - 10, 20, false), 64 * KiB);
  /* straddling two blocks far past the end: both */
  assert_int_equal(fsx_space_estimate(fd, 8 * MiB - 10, 20, false),
                   128 * KiB);
  /* a hole inside the file (sparse, as a staging file with base blocks
     not fetched): counted */
  assert_int_equal(pwrite(fd, "x", 1, 4 * MiB), 1);
  assert_int_equal(fsx_space_estimate(fd, 2 * MiB, 1 << 20, false),
                   1 * MiB);
  /* append: at the end (4 MiB + 1), in the block already begun: that
     block's holes only */
  uint64_t h = fsx_space_estimate(fd, 0, 100, true);
  assert_true(h > 0 && h < 64 * KiB);
}

/* Far from the limit a write reserves the blocks it spans, with no system
   call; the recount then makes the count what the file holds. */
static void test_reserve_and_count(void **state)
{
  struct env *e = *state;
  struct fsx_space *sp;
  struct fsx_space_info si;
  uint64_t held;
  char err[256];

  assert_int_equal(fsx_space_create(e->dir, 64 * MiB, 0, &sp, err,
                                    sizeof(err)), 0);
  assert_int_equal(do_write(sp, e->fd[0], 0, 1 << 20, &held), 0);
  assert_int_equal(held, 1 * MiB);
  info(sp, &si);
  assert_int_equal(si.used, blocks_of(e->fd[0]));
  assert_true(si.used >= 1 * MiB);
  assert_int_equal(si.reserved, 0);
  assert_int_equal(do_write(sp, e->fd[0], 4096, 65536, &held), 0);
  assert_int_equal(held, 128 * KiB); /* [0, 128K): the span, as it is */
  assert_int_equal(fsx_space_reserve(sp, e->fd[0], 0, 100, true, &held), 0);
  assert_int_equal(held, 100 + 128 * KiB);
  info(sp, &si);
  assert_int_equal(si.reserved, held);
  fsx_space_settle(sp, e->fd[0], held);
  assert_int_equal(do_write(sp, e->fd[1], 8 * MiB - 10, 20, &held), 0);
  assert_int_equal(held, 128 * KiB);
  /* nothing counted twice: the count is what the files hold */
  info(sp, &si);
  assert_int_equal(si.used, blocks_of(e->fd[0]) + blocks_of(e->fd[1]));
  assert_int_equal(si.reserved, 0);
  /* len 0, and no space module at all: nothing */
  assert_int_equal(fsx_space_reserve(sp, e->fd[1], 0, 0, false, &held), 0);
  assert_int_equal(held, 0);
  assert_int_equal(fsx_space_reserve(NULL, e->fd[1], 0, 4096, false, &held),
                   0);
  assert_int_equal(held, 0);
  fsx_space_forget(sp, e->fd[0]);
  fsx_space_forget(sp, e->fd[1]);
  info(sp, &si);
  assert_int_equal(si.used, 0);
  fsx_space_destroy(sp);
}

/* At the limit: -ENOSPC once the wait (0 here) is over, logged once per
   episode; forgetting a file and truncating give space back. */
static void test_limit_and_episode(void **state)
{
  struct env *e = *state;
  struct fsx_space *sp;
  struct fsx_space_info si;
  uint64_t held;
  char err[256];

  /* 4 MiB and a little slack (for the filesystem's own blocks), less than
     the 64 KiB the smallest new write reserves */
  const uint64_t lim = 4 * MiB + 32 * KiB;

  assert_int_equal(fsx_space_create(e->dir, lim, 0, &sp, err, sizeof(err)),
                   0);
  info(sp, &si);
  assert_int_equal(si.limit, lim);
  assert_int_equal(si.cap, lim);
  assert_int_equal(si.room, lim);
  for (int i = 0; i < 4; i++)
    assert_int_equal(do_write(sp, e->fd[0], (uint64_t)i * MiB, 1 << 20,
                              NULL), 0);
  info(sp, &si);
  assert_int_equal(si.used, blocks_of(e->fd[0]));
  assert_int_equal(si.room, si.used >= lim ? 0 : lim - si.used);
  /* full: two writes of another file refused, one line */
  assert_int_equal(do_write(sp, e->fd[1], 0, 4096, NULL), -ENOSPC);
  assert_int_equal(do_write(sp, e->fd[1], 1 * MiB, 1 << 20, NULL), -ENOSPC);
  info(sp, &si);
  assert_int_equal(si.enospc, 2);
  assert_int_equal(si.reserved, 0);
  assert_int_equal(log_lines(e, "staging full"), 1);
  /* an overwrite still goes (it allocates nothing) */
  assert_int_equal(do_write(sp, e->fd[0], 0, 1 << 20, &held), 0);
  assert_int_equal(held, 0);
  /* a truncate gives back: 3 MiB cut, then 1 MiB written fits again */
  assert_int_equal(ftruncate(e->fd[0], 1 * MiB), 0);
  fsx_space_settle(sp, e->fd[0], 0);
  info(sp, &si);
  assert_int_equal(si.used, blocks_of(e->fd[0]));
  assert_true(si.used < 2 * MiB);
  assert_int_equal(do_write(sp, e->fd[1], 0, 1 << 20, NULL), 0);
  /* that was room again (more than 1/8 of the limit): the episode is over,
     and the next one is logged */
  assert_int_equal(log_lines(e, "staging space available again"), 1);
  assert_int_equal(do_write(sp, e->fd[2], 0, 1 << 20, NULL), 0);
  assert_int_equal(do_write(sp, e->fd[2], 1 * MiB, 1 << 20, NULL), 0);
  assert_int_equal(do_write(sp, e->fd[3], 0, 1 << 20, NULL), -ENOSPC);
  assert_int_equal(log_lines(e, "staging full"), 2);
  /* forgetting every file: nothing counted */
  for (int i = 0; i < 4; i++)
    fsx_space_forget(sp, e->fd[i]);
  info(sp, &si);
  assert_int_equal(si.used, 0);
  assert_int_equal(si.room, lim);
  fsx_space_destroy(sp);
}

struct waiter {
  struct fsx_space *sp;
  int fd;
  int rc;
};

static void *wait_main(void *arg)
{
  struct waiter *w = arg;
  uint64_t held;

  w->rc = fsx_space_reserve(w->sp, w->fd, 0, 1 << 20, false, &held);
  if (!w->rc)
    fsx_space_settle(w->sp, w->fd, held);
  return NULL;
}

/* Until n writes wait (bounded: up to 10 s for them to start waiting). */
static void wait_waiting(struct fsx_space *sp, unsigned n)
{
  struct fsx_space_info si;

  for (int i = 0; i < 1000; i++) {
    info(sp, &si);
    if (si.waiting == n)
      break;
    usleep(10000);
  }
  assert_int_equal(si.waiting, n);
}

/* A writer waiting for space goes on as soon as another file is dropped. */
static void test_waiter_woken(void **state)
{
  struct env *e = *state;
  struct fsx_space *sp;
  struct fsx_space_info si;
  struct waiter w;
  pthread_t t;
  char err[256];

  /* a wait far longer than the test: only the wake-up ends it */
  assert_int_equal(fsx_space_create(e->dir, 2 * MiB + 32 * KiB, 3600 * 1000,
                                    &sp, err, sizeof(err)), 0);
  assert_int_equal(do_write(sp, e->fd[0], 0, 1 << 20, NULL), 0);
  assert_int_equal(do_write(sp, e->fd[0], 1 * MiB, 1 << 20, NULL), 0);
  w = (struct waiter){sp, e->fd[1], 1};
  assert_int_equal(pthread_create(&t, NULL, wait_main, &w), 0);
  wait_waiting(sp, 1);
  assert_int_equal(w.rc, 1); /* still waiting */
  fsx_space_forget(sp, e->fd[0]);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(w.rc, 0);
  info(sp, &si);
  assert_int_equal(si.waiting, 0);
  assert_int_equal(si.enospc, 0);
  assert_int_equal(si.reserved, 0);
  fsx_space_forget(sp, e->fd[1]);
  fsx_space_destroy(sp);
}

/* At most FSX_SPACE_MAX_WAITERS writes wait; one more fails at once. */
static void test_waiters_bounded(void **state)
{
  struct env *e = *state;
  struct fsx_space *sp;
  struct fsx_space_info si;
  struct waiter w[FSX_SPACE_MAX_WAITERS], extra;
  pthread_t t[FSX_SPACE_MAX_WAITERS];
  uint64_t held;
  char err[256];
  int i;

  assert_int_equal(fsx_space_create(e->dir, 2 * MiB + 32 * KiB, 3600 * 1000,
                                    &sp, err, sizeof(err)), 0);
  assert_int_equal(do_write(sp, e->fd[0], 0, 1 << 20, NULL), 0);
  assert_int_equal(do_write(sp, e->fd[0], 1 * MiB, 1 << 20, NULL), 0);
  for (i = 0; i < FSX_SPACE_MAX_WAITERS; i++) {
    w[i] = (struct waiter){sp, e->fd[1], 1};
    assert_int_equal(pthread_create(&t[i], NULL, wait_main, &w[i]), 0);
  }
  wait_waiting(sp, FSX_SPACE_MAX_WAITERS);
  /* one more: refused without waiting (the wait is an hour) */
  extra = (struct waiter){sp, e->fd[2], 1};
  extra.rc = fsx_space_reserve(sp, e->fd[2], 0, 1 << 20, false, &held);
  assert_int_equal(extra.rc, -ENOSPC);
  info(sp, &si);
  assert_int_equal(si.waiting, FSX_SPACE_MAX_WAITERS);
  assert_int_equal(si.enospc, 1);
  for (i = 0; i < FSX_SPACE_MAX_WAITERS; i++)
    assert_int_equal(w[i].rc, 1); /* still waiting */
  fsx_space_forget(sp, e->fd[0]);
  for (i = 0; i < FSX_SPACE_MAX_WAITERS; i++) {
    assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(w[i].rc, 0);
  }
  info(sp, &si);
  assert_int_equal(si.waiting, 0);
  assert_int_equal(si.reserved, 0);
  fsx_space_forget(sp, e->fd[1]);
  fsx_space_forget(sp, e->fd[2]);
  fsx_space_destroy(sp);
}

/* A fetch never waits for the limit; it is counted after the fact. */
static void test_fetch_counted(void **state)
{
  struct env *e = *state;
  struct fsx_space *sp;
  struct fsx_space_info si;
  static char buf[1 << 20];
  char err[256];

  assert_int_equal(fsx_space_create(e->dir, 1 * MiB, 0, &sp, err,
                                    sizeof(err)), 0);
  assert_int_equal(do_write(sp, e->fd[0], 0, 1 << 20, NULL), 0);
  /* over the limit but the filesystem has room: allowed */
  assert_int_equal(fsx_space_fetch(sp, 1 << 20), 0);
  assert_int_equal(pwrite(e->fd[1], buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
  fsx_space_settle(sp, e->fd[1], 0);
  info(sp, &si);
  assert_int_equal(si.used, blocks_of(e->fd[0]) + blocks_of(e->fd[1]));
  assert_int_equal(si.room, 0);
  /* more than the filesystem could ever hold: refused */
  assert_int_equal(fsx_space_fetch(sp, UINT64_MAX / 2), -ENOSPC);
  assert_int_equal(log_lines(e, "filesystem is nearly full"), 1);
  assert_int_equal(fsx_space_fetch(NULL, UINT64_MAX / 2), 0);
  fsx_space_forget(sp, e->fd[0]);
  fsx_space_forget(sp, e->fd[1]);
  fsx_space_destroy(sp);
}

/* The default limit: half of the free space, and a missing directory. */
static void test_create(void **state)
{
  struct env *e = *state;
  struct fsx_space *sp = NULL;
  struct fsx_space_info si;
  char err[256];

  assert_int_equal(fsx_space_create(e->dir, 0, 0, &sp, err, sizeof(err)), 0);
  info(sp, &si);
  assert_true(si.limit > 0);
  assert_true(si.cap <= si.limit);
  fsx_space_destroy(sp);
  fsx_space_destroy(NULL);
  assert_int_equal(fsx_space_create("/nonexistent/s3r", 0, 0, &sp, err,
                                    sizeof(err)), -ENOENT);
  assert_non_null(strstr(err, "/nonexistent/s3r"));
  fsx_space_info(NULL, &si);
  assert_int_equal(si.limit, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_default_and_margin),
      cmocka_unit_test(test_disk_room),
      cmocka_unit_test(test_fits),
      cmocka_unit_test_setup_teardown(test_estimate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reserve_and_count, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_limit_and_episode, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_waiter_woken, setup, teardown),
      cmocka_unit_test_setup_teardown(test_waiters_bounded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fetch_counted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_create, setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
