/*
 * libs3rdmafs under threads, fork(2) and a lying daemon, against a fake
 * daemon: this program's own ioctl(2) answers the library's REGISTER,
 * READ and UNREGISTER (the library's sources are linked in, so their
 * ioctl calls come here). Files are temporary files; a REGISTER maps the
 * caller's memfd (it is this process's) and a READ fills the buffer with
 * a pattern of (file, offset). The fake can hold a REGISTER or a READ
 * until the test lets it go, sleep inside a READ, and claim more bytes
 * than it was asked for; it counts UNREGISTERs of a handle a READ is
 * using. The mount check (s3rdmafs_mnt.c, tested in test_lib_mnt and on
 * real mounts) is stood in for by one that trusts every file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "libs3rdmafs/s3rdmafs.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"
#include "libs3rdmafs/s3rdmafs_mnt.h"

int s3r_mnt_trusted(int fd)
{
  (void)fd;
  return 0;
}

/* ---- the fake daemon ---- */

#define FREGS 4096

struct freg {
  uint64_t handle;
  int fd;
  pid_t pid;
  char *map;
  size_t len;
  ino_t memino;
  int inflight;
  bool gone;
};

static pthread_mutex_t flock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fcond = PTHREAD_COND_INITIALIZER;
static struct freg fregs[FREGS];     /* flock */
static unsigned nfregs;              /* flock */
static uint64_t next_handle = 1;     /* flock */
static atomic_int busy_unregistered; /* UNREGISTERs of a handle in use */
static size_t lie;                   /* bytes a READ claims past len */
static int honest_halves = -1;       /* flock: READs that answer half of
                                        what they are asked (then lie) */
static bool per_fd_handles;          /* handles numbered per file, as two
                                        mounts' daemons would (else one
                                        numbering for all) */
static unsigned read_sleep_us;
static bool hold_register, in_register; /* flock */
static int hold_read_fd = -1;           /* flock */
static bool read_held;                  /* flock */
static ino_t last_memino;               /* flock: the last REGISTER's */
static unsigned cap;                    /* live registrations of a process
                                           at most (0: no cap): ENOSPC */

static uint8_t pattern(int fd, uint64_t off)
{
  return (uint8_t)(((off * 2654435761u) >> 13) ^ (uint64_t)fd * 31u);
}

static int fake_register(int fd, struct s3rdmafs_ioc_register *a)
{
  struct stat st;
  char *map;

  if (a->version != S3RDMAFS_IOC_VERSION || fstat(a->fd, &st))
    return -EINVAL;
  map = mmap(NULL, a->len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
  if (map == MAP_FAILED)
    return -errno;
  pthread_mutex_lock(&flock);
  if (hold_register) { /* held until the test lets it go */
    in_register = true;
    pthread_cond_broadcast(&fcond);
    while (hold_register)
      pthread_cond_wait(&fcond, &flock);
  }
  if (cap) {
    unsigned live = 0;
    for (unsigned i = 0; i < nfregs; i++)
      live += fregs[i].pid == getpid() && !fregs[i].gone;
    if (live >= cap) {
      pthread_mutex_unlock(&flock);
      munmap(map, a->len);
      return -ENOSPC;
    }
  }
  assert_true(nfregs < FREGS);
  if (per_fd_handles) {
    uint64_t n = 1;
    for (unsigned i = 0; i < nfregs; i++)
      n += fregs[i].fd == fd && !fregs[i].gone;
    fregs[nfregs] = (struct freg){n, fd, getpid(), map, a->len, st.st_ino,
                                  0, false};
  } else {
    fregs[nfregs] = (struct freg){next_handle++, fd, getpid(), map, a->len,
                                  st.st_ino, 0, false};
  }
  a->handle = fregs[nfregs++].handle;
  last_memino = st.st_ino;
  pthread_mutex_unlock(&flock);
  return 0;
}

/* this process's live registration h on fd (flock held) */
static struct freg *fake_find(int fd, uint64_t h)
{
  for (unsigned i = 0; i < nfregs; i++)
    if (fregs[i].handle == h && fregs[i].fd == fd &&
        fregs[i].pid == getpid() && !fregs[i].gone)
      return &fregs[i];
  return NULL;
}

static int fake_read(int fd, struct s3rdmafs_ioc_read *a)
{
  uint64_t fill = a->len, said;
  struct freg *r;

  pthread_mutex_lock(&flock);
  if (!(r = fake_find(fd, a->handle))) {
    pthread_mutex_unlock(&flock);
    return -EBADF;
  }
  if (a->buf_off > r->len || a->len > r->len - a->buf_off) {
    pthread_mutex_unlock(&flock);
    return -EINVAL;
  }
  r->inflight++;
  said = a->len + lie;
  if (honest_halves > 0) { /* half, truly */
    honest_halves--;
    fill = said = a->len > 1 ? a->len / 2 : a->len;
  } else if (!honest_halves) {
    said = a->len + 4096; /* then more than asked */
  }
  if (fd == hold_read_fd) {
    read_held = true;
    pthread_cond_broadcast(&fcond);
    while (hold_read_fd == fd)
      pthread_cond_wait(&fcond, &flock);
  }
  pthread_mutex_unlock(&flock);
  for (uint64_t i = 0; i < fill; i++)
    r->map[a->buf_off + i] = (char)pattern(fd, a->file_off + i);
  if (read_sleep_us)
    usleep(read_sleep_us);
  pthread_mutex_lock(&flock);
  r->inflight--;
  pthread_mutex_unlock(&flock);
  a->done = said;
  a->path = S3RDMAFS_PATH_CACHE;
  return 0;
}

static int fake_unregister(int fd, struct s3rdmafs_ioc_unregister *a)
{
  struct freg *r;

  pthread_mutex_lock(&flock);
  r = fake_find(fd, a->handle);
  if (r) {
    if (r->inflight)
      atomic_fetch_add(&busy_unregistered, 1);
    r->gone = true;
  }
  pthread_mutex_unlock(&flock);
  return r ? 0 : -EBADF;
}

int ioctl(int fd, unsigned long cmd, ...)
{
  va_list ap;
  void *arg;
  int rc;

  va_start(ap, cmd);
  arg = va_arg(ap, void *);
  va_end(ap);
  switch (cmd) {
  case S3RDMAFS_IOC_REGISTER:
    rc = fake_register(fd, arg);
    break;
  case S3RDMAFS_IOC_READ:
    rc = fake_read(fd, arg);
    break;
  case S3RDMAFS_IOC_UNREGISTER:
    rc = fake_unregister(fd, arg);
    break;
  default:
    rc = -ENOTTY;
  }
  if (rc) {
    errno = -rc;
    return -1;
  }
  return 0;
}

/* ---- helpers ---- */

static int tmpfile_fd(void)
{
  char path[] = "/tmp/test_lib_direct.XXXXXX";
  int fd = mkstemp(path);

  assert_true(fd >= 0);
  unlink(path);
  return fd;
}

/* n bytes at p: fd's file at off? */
static bool same(int fd, const char *p, size_t n, uint64_t off)
{
  for (size_t i = 0; i < n; i++)
    if ((uint8_t)p[i] != pattern(fd, off + i))
      return false;
  return true;
}

static void fake_reset(void)
{
  pthread_mutex_lock(&flock);
  lie = 0;
  read_sleep_us = 0;
  hold_register = false;
  hold_read_fd = -1;
  read_held = in_register = false;
  cap = 0;
  honest_halves = -1;
  per_fd_handles = false;
  for (unsigned i = 0; i < nfregs; i++) /* the last test's files closed */
    fregs[i].gone = true;
  pthread_mutex_unlock(&flock);
  atomic_store(&busy_unregistered, 0);
}

/* ---- a daemon that claims more than it was asked ---- */

static void test_count_past_request(void **state)
{
  int fd = tmpfile_fd();
  char *plain = malloc(8192), *reg = s3rdmafs_buf_alloc(fd, 8192);

  (void)state;
  fake_reset();
  assert_non_null(plain);
  assert_non_null(reg);
  lie = 4096;
  /* through the bounce buffer: never copied past plain's 8192 bytes */
  assert_int_equal(s3rdmafs_read_direct(fd, plain, 8192, 0), -EIO);
  /* a registered buffer: the count is not believed either */
  assert_int_equal(s3rdmafs_read_direct(fd, reg, 8192, 0), -EIO);
  lie = 0;
  /* honest for a part, then more than asked: the call fails, not short */
  pthread_mutex_lock(&flock);
  honest_halves = 1;
  pthread_mutex_unlock(&flock);
  assert_int_equal(s3rdmafs_read_direct(fd, plain, 8192, 0), -EIO);
  pthread_mutex_lock(&flock);
  honest_halves = -1;
  pthread_mutex_unlock(&flock);
  assert_int_equal(s3rdmafs_read_direct(fd, plain, 8192, 0), 8192);
  assert_true(same(fd, plain, 8192, 0));
  s3rdmafs_buf_free(reg);
  free(plain);
  close(fd);
}

/* ---- a handle in use is never given up ---- */

struct held {
  int fd;
  char *buf;
  ssize_t n;
};

static void *read_held_fd(void *p)
{
  struct held *h = p;

  h->n = s3rdmafs_read_direct(h->fd, h->buf, 4096, 0);
  return NULL;
}

static void busy_handle_kept(bool per_fd)
{
  enum { OTHERS = 80 }; /* more files than a buffer holds handles for */
  int fd, others[OTHERS];
  struct held h;
  char *buf;
  pthread_t t;

  fake_reset();
  per_fd_handles = per_fd;
  fd = tmpfile_fd();
  buf = s3rdmafs_buf_alloc(fd, 1 << 20);
  h = (struct held){fd, buf, 0};
  assert_non_null(buf);
  pthread_mutex_lock(&flock);
  hold_read_fd = fd;
  pthread_mutex_unlock(&flock);
  assert_int_equal(pthread_create(&t, NULL, read_held_fd, &h), 0);
  pthread_mutex_lock(&flock);
  while (!read_held)
    pthread_cond_wait(&fcond, &flock);
  pthread_mutex_unlock(&flock);
  /* meanwhile, the same buffer on many other files (its other half) */
  for (int i = 0; i < OTHERS; i++) {
    others[i] = tmpfile_fd();
    assert_int_equal(s3rdmafs_read_direct(others[i], buf + 4096, 4096, 7),
                     4096);
    assert_true(same(others[i], buf + 4096, 4096, 7));
  }
  pthread_mutex_lock(&flock);
  hold_read_fd = -1;
  pthread_cond_broadcast(&fcond);
  pthread_mutex_unlock(&flock);
  pthread_join(t, NULL);
  assert_int_equal(h.n, 4096);
  assert_true(same(fd, buf, 4096, 0));
  assert_int_equal(atomic_load(&busy_unregistered), 0);
  s3rdmafs_buf_free(buf);
  for (int i = 0; i < OTHERS; i++)
    close(others[i]);
  close(fd);
}

static void test_busy_handle_kept(void **state)
{
  (void)state;
  busy_handle_kept(false);
}

/* the same handle number from two files (two mounts' daemons number their
   own): each call's end counts on its own registration only */
static void test_busy_handle_kept_equal_numbers(void **state)
{
  (void)state;
  busy_handle_kept(true);
}

/* a file not open for reading: EBADF at once, nothing registered */
static void test_write_only(void **state)
{
  char path[] = "/tmp/test_lib_direct.XXXXXX";
  int fd = mkstemp(path), wfd = open(path, O_WRONLY);
  unsigned n0, n1;
  char buf[4096];

  (void)state;
  fake_reset();
  unlink(path);
  assert_true(fd >= 0 && wfd >= 0);
  pthread_mutex_lock(&flock);
  n0 = nfregs;
  pthread_mutex_unlock(&flock);
  for (int i = 0; i < 10; i++)
    assert_int_equal(s3rdmafs_read_direct(wfd, buf, sizeof(buf), 0), -EBADF);
  pthread_mutex_lock(&flock);
  n1 = nfregs;
  pthread_mutex_unlock(&flock);
  assert_int_equal(n1, n0);
  close(wfd);
  close(fd);
}

/* ---- many threads, one buffer, a file each ---- */

#define SLICE (64 << 10)

struct worker {
  int fd;
  char *slice;
  int bad, ebadf;
};

static void *work(void *p)
{
  struct worker *w = p;

  for (int i = 0; i < 40; i++) {
    uint64_t off = (uint64_t)i * 4093;
    ssize_t n = s3rdmafs_read_direct(w->fd, w->slice, SLICE, (off_t)off);
    if (n == -EBADF)
      w->ebadf++;
    else if (n != SLICE || !same(w->fd, w->slice, SLICE, off))
      w->bad++;
  }
  return NULL;
}

static void threads_on_one_buffer(int nthreads)
{
  struct worker *w = calloc((size_t)nthreads, sizeof(*w));
  pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
  int fd0 = tmpfile_fd();
  char *buf = s3rdmafs_buf_alloc(fd0, (size_t)nthreads * SLICE);

  fake_reset();
  assert_non_null(buf);
  read_sleep_us = 200; /* calls overlap */
  for (int i = 0; i < nthreads; i++) {
    w[i] = (struct worker){tmpfile_fd(), buf + (size_t)i * SLICE, 0, 0};
    assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < nthreads; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(w[i].ebadf, 0);
    assert_int_equal(w[i].bad, 0);
    close(w[i].fd);
  }
  assert_int_equal(atomic_load(&busy_unregistered), 0);
  s3rdmafs_buf_free(buf);
  close(fd0);
  free(w);
  free(t);
}

static void test_24_threads(void **state)
{
  (void)state;
  threads_on_one_buffer(24);
}

/* more threads than a buffer holds handles for: the rest wait their turn */
static void test_more_threads_than_handles(void **state)
{
  (void)state;
  threads_on_one_buffer(80);
}

/* the daemon's cap on registrations: idle ones given up to make room */
static void test_daemon_cap(void **state)
{
  int fds[20];
  char *a, *b;

  (void)state;
  fake_reset();
  for (int i = 0; i < 20; i++)
    fds[i] = tmpfile_fd();
  a = s3rdmafs_buf_alloc(fds[0], 1 << 16);
  b = s3rdmafs_buf_alloc(fds[0], 1 << 16);
  assert_non_null(a);
  assert_non_null(b);
  pthread_mutex_lock(&flock);
  cap = 8;
  pthread_mutex_unlock(&flock);
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 20; i++) {
      assert_int_equal(s3rdmafs_read_direct(fds[i], a, 4096, i), 4096);
      assert_true(same(fds[i], a, 4096, (uint64_t)i));
      assert_int_equal(s3rdmafs_read_direct(fds[i], b, 4096, i + 1), 4096);
      assert_true(same(fds[i], b, 4096, (uint64_t)i + 1));
    }
  s3rdmafs_buf_free(a);
  s3rdmafs_buf_free(b);
  for (int i = 0; i < 20; i++)
    close(fds[i]);
}

/* ---- fork(2) ---- */

/* Run f in a child (alarm: a hang is a failure); its exit status. */
static int in_child(int (*f)(void *), void *arg)
{
  int st;
  pid_t pid = fork();

  if (!pid) {
    alarm(20);
    _exit(f(arg));
  }
  assert_true(pid > 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (WIFSIGNALED(st))
    return 128 + WTERMSIG(st);
  return WEXITSTATUS(st);
}

struct alloc_arg {
  int fd;
  void *buf;
};

static void *alloc_thread(void *p)
{
  struct alloc_arg *a = p;

  a->buf = s3rdmafs_buf_alloc(a->fd, 1 << 20);
  return NULL;
}

static int child_reads(void *p)
{
  int fd = *(int *)p;
  char buf[4096];

  return s3rdmafs_read_direct(fd, buf, sizeof(buf), 0) == sizeof(buf) &&
                 same(fd, buf, sizeof(buf), 0)
             ? 0
             : 1;
}

/* a fork while another thread is inside REGISTER: the child's first call
   returns (no lock of the library is left held in it) */
static void test_fork_during_register(void **state)
{
  int fd = tmpfile_fd();
  struct alloc_arg a = {fd, NULL};
  pthread_t t;

  (void)state;
  fake_reset();
  pthread_mutex_lock(&flock);
  hold_register = true;
  pthread_mutex_unlock(&flock);
  assert_int_equal(pthread_create(&t, NULL, alloc_thread, &a), 0);
  pthread_mutex_lock(&flock);
  while (!in_register)
    pthread_cond_wait(&fcond, &flock);
  hold_register = false; /* (the child's REGISTERs are not held) */
  pthread_mutex_unlock(&flock);
  assert_int_equal(in_child(child_reads, &fd), 0);
  pthread_mutex_lock(&flock);
  pthread_cond_broadcast(&fcond);
  pthread_mutex_unlock(&flock);
  pthread_join(t, NULL);
  assert_non_null(a.buf);
  s3rdmafs_buf_free(a.buf);
  close(fd);
}

struct fork_arg {
  int fd;
  ino_t parent_bounce;
};

/* a child's reads through its own bounce buffer, never the parent's */
static int child_bounce(void *p)
{
  struct fork_arg *f = p;
  char *buf = malloc(SLICE);
  int bad = 0;

  for (int i = 0; i < 50 && buf; i++) {
    uint64_t off = (uint64_t)i * SLICE;
    if (s3rdmafs_read_direct(f->fd, buf, SLICE, (off_t)off) != SLICE ||
        !same(f->fd, buf, SLICE, off))
      bad |= 1;
  }
  pthread_mutex_lock(&flock);
  if (last_memino == f->parent_bounce)
    bad |= 2; /* registered the parent's memory */
  pthread_mutex_unlock(&flock);
  free(buf);
  return bad;
}

static void test_fork_bounce(void **state)
{
  struct fork_arg f[4];
  pid_t pid[4];
  char buf[4096];
  int fd0 = tmpfile_fd(), st;

  (void)state;
  fake_reset();
  read_sleep_us = 300; /* each child's copy-out races the others' fills */
  /* the parent's bounce buffer made before the fork */
  assert_int_equal(s3rdmafs_read_direct(fd0, buf, sizeof(buf), 0),
                   sizeof(buf));
  for (int i = 0; i < 4; i++) {
    f[i] = (struct fork_arg){tmpfile_fd(), last_memino};
    pid[i] = fork();
    if (!pid[i]) {
      alarm(60);
      _exit(child_bounce(&f[i]));
    }
    assert_true(pid[i] > 0);
  }
  for (int i = 0; i < 4; i++) {
    assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(f[i].fd);
  }
  /* the parent's own bounce buffer is still its own, and works */
  assert_int_equal(s3rdmafs_read_direct(fd0, buf, sizeof(buf), 9),
                   sizeof(buf));
  assert_true(same(fd0, buf, sizeof(buf), 9));
  close(fd0);
}

/* a buffer made before the fork: the child registers it for itself */
static int child_prefork_buf(void *p)
{
  struct alloc_arg *a = p;

  return s3rdmafs_read_direct(a->fd, a->buf, 4096, 5) == 4096 &&
                 same(a->fd, a->buf, 4096, 5)
             ? 0
             : 1;
}

static void test_fork_registered_buffer(void **state)
{
  int fd = tmpfile_fd();
  struct alloc_arg a = {fd, s3rdmafs_buf_alloc(fd, 1 << 16)};

  (void)state;
  fake_reset();
  assert_non_null(a.buf);
  assert_int_equal(s3rdmafs_read_direct(fd, a.buf, 4096, 0), 4096);
  assert_int_equal(in_child(child_prefork_buf, &a), 0);
  /* shared memory, as the header says: the child's bytes are here too */
  assert_true(same(fd, a.buf, 4096, 5));
  assert_int_equal(s3rdmafs_read_direct(fd, a.buf, 4096, 0), 4096);
  assert_true(same(fd, a.buf, 4096, 0));
  s3rdmafs_buf_free(a.buf);
  close(fd);
}

/* argv[1]: only the tests it names (a cmocka filter) */
int main(int argc, char **argv)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_past_request),
      cmocka_unit_test(test_busy_handle_kept),
      cmocka_unit_test(test_busy_handle_kept_equal_numbers),
      cmocka_unit_test(test_write_only),
      cmocka_unit_test(test_24_threads),
      cmocka_unit_test(test_more_threads_than_handles),
      cmocka_unit_test(test_daemon_cap),
      cmocka_unit_test(test_fork_during_register),
      cmocka_unit_test(test_fork_bounce),
      cmocka_unit_test(test_fork_registered_buffer),
  };

  signal(SIGPIPE, SIG_IGN);
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
