/*
 * share_check: libs3rdmafs as real applications use it, on a real mount,
 * for test_lib_share.sh.
 *
 *   share_check fork DIR REFDIR N
 *       reads 1 MiB of DIR/f0 with read_direct into plain memory (the
 *       calling thread's bounce buffer is made), then forks N children;
 *       child i reads all of DIR/f<i> with read_direct, 1 MiB at a time,
 *       into plain memory, and compares each piece with REFDIR/f<i> (a
 *       local copy). Then the parent reads f0 again.
 *   share_check threads DIR REFDIR N
 *       one registered buffer of N MiB; N threads, thread i reading all
 *       of DIR/f<i> 1 MiB at a time into its own MiB of the buffer, each
 *       piece compared with REFDIR/f<i>; every -EBADF counted.
 *   share_check liar FILE ERRNO
 *       a file of a FUSE file system that lies (liar_fs): read_direct
 *       into plain memory and into a registered buffer must fail with
 *       -ERRNO (EIO, or EACCES: the mount is another user's), and never
 *       write past the memory it was given (guard bytes checked).
 * Exit 0 when every check holds; failures are printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"

#define MiB (1u << 20)

static const char *dir, *refdir;

/* Read all of dir/f<i> into buf (MiB bytes) by read_direct, each piece
   compared with refdir/f<i>. Pieces wrong, or -1 when a file did not
   open; *ebadf: calls that returned -EBADF. */
static int read_compare(int i, char *buf, int *ebadf)
{
  char path[4096], *ref = malloc(MiB);
  int fd, rfd, bad = 0;
  off_t off = 0;

  snprintf(path, sizeof(path), "%s/f%d", dir, i);
  fd = open(path, O_RDONLY);
  snprintf(path, sizeof(path), "%s/f%d", refdir, i);
  rfd = open(path, O_RDONLY);
  if (fd < 0 || rfd < 0 || !ref) {
    fprintf(stderr, "f%d: cannot open\n", i);
    bad = -1;
    goto out;
  }
  for (;;) {
    ssize_t n = s3rdmafs_read_direct(fd, buf, MiB, off);
    ssize_t r = pread(rfd, ref, MiB, off);
    if (n == -EBADF)
      (*ebadf)++;
    if (n != r || (n > 0 && memcmp(buf, ref, (size_t)n))) {
      if (bad++ < 3)
        fprintf(stderr, "f%d at %lld: %zd bytes (%s), %zd expected%s\n", i,
                (long long)off, n, n < 0 ? s3rdmafs_strerror((int)n) : "ok",
                r, n == r ? ", other bytes" : "");
      if (n <= 0)
        break;
    }
    if (r <= 0)
      break;
    off += r;
  }
out:
  if (fd >= 0)
    close(fd);
  if (rfd >= 0)
    close(rfd);
  free(ref);
  return bad;
}

static int do_fork(int n)
{
  char *buf = malloc(MiB);
  int bad = 0, ebadf = 0, st;
  pid_t pid[64];

  if (!buf || n < 1 || n > 64)
    return 2;
  /* the bounce buffer made before the fork (f0's first MiB) */
  {
    char path[4096];
    snprintf(path, sizeof(path), "%s/f0", dir);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || s3rdmafs_read_direct(fd, buf, MiB, 0) != MiB) {
      fprintf(stderr, "fork: the parent's first read failed\n");
      return 1;
    }
    close(fd);
  }
  for (int i = 0; i < n; i++) {
    pid[i] = fork();
    if (!pid[i])
      _exit(read_compare(i, buf, &ebadf) ? 1 : 0);
    if (pid[i] < 0)
      return 2;
  }
  for (int i = 0; i < n; i++)
    if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
        WEXITSTATUS(st)) {
      fprintf(stderr, "fork: child %d read wrong bytes\n", i);
      bad++;
    }
  if (read_compare(0, buf, &ebadf)) {
    fprintf(stderr, "fork: the parent's read after the children's failed\n");
    bad++;
  }
  free(buf);
  printf("fork: %d children, %d wrong\n", n, bad);
  return bad ? 1 : 0;
}

struct worker {
  int i;
  char *slice;
  int bad, ebadf;
};

static void *work(void *p)
{
  struct worker *w = p;

  w->bad = read_compare(w->i, w->slice, &w->ebadf);
  return NULL;
}

static int do_threads(int n)
{
  struct worker w[64];
  pthread_t t[64];
  char path[4096];
  int fd, bad = 0, ebadf = 0;
  char *buf;

  if (n < 1 || n > 64)
    return 2;
  snprintf(path, sizeof(path), "%s/f0", dir);
  if ((fd = open(path, O_RDONLY)) < 0 ||
      !(buf = s3rdmafs_buf_alloc(fd, (size_t)n * MiB))) {
    fprintf(stderr, "threads: no buffer: %s\n", strerror(errno));
    return 1;
  }
  for (int i = 0; i < n; i++) {
    w[i] = (struct worker){i, buf + (size_t)i * MiB, 0, 0};
    if (pthread_create(&t[i], NULL, work, &w[i]))
      return 2;
  }
  for (int i = 0; i < n; i++) {
    pthread_join(t[i], NULL);
    bad += w[i].bad != 0;
    ebadf += w[i].ebadf;
  }
  s3rdmafs_buf_free(buf);
  close(fd);
  printf("threads: %d on one buffer, %d files wrong, %d EBADF\n", n, bad,
         ebadf);
  return bad || ebadf ? 1 : 0;
}

#define GUARD 4096

/* p's GUARD bytes after len untouched? */
static bool guard_ok(const char *p, size_t len)
{
  for (size_t i = 0; i < GUARD; i++)
    if ((unsigned char)p[len + i] != 0xa5)
      return false;
  return true;
}

static int do_liar(const char *file, int err)
{
  size_t len = 64 << 10;
  char *plain = malloc(len + GUARD), *reg;
  int fd = open(file, O_RDONLY), bad = 0;
  ssize_t n;

  if (fd < 0 || !plain)
    return 2;
  memset(plain, 0xa5, len + GUARD);
  n = s3rdmafs_read_direct(fd, plain, len, 0);
  if (n != -err || !guard_ok(plain, len)) {
    fprintf(stderr, "liar: plain memory: %zd (%s), guard %s\n", n,
            n < 0 ? s3rdmafs_strerror((int)n) : "bytes",
            guard_ok(plain, len) ? "whole" : "overwritten");
    bad++;
  }
  reg = s3rdmafs_buf_alloc(fd, len);
  if (err == EACCES) {
    if (reg || errno != EACCES) {
      fprintf(stderr, "liar: buf_alloc: %s\n", reg ? "made" : strerror(errno));
      bad++;
    }
  } else if (!reg || (n = s3rdmafs_read_direct(fd, reg, len, 0)) != -err) {
    fprintf(stderr, "liar: registered buffer: %s %zd\n",
            reg ? "read" : strerror(errno), n);
    bad++;
  }
  s3rdmafs_buf_free(reg);
  free(plain);
  close(fd);
  printf("liar: %s (%s)\n", bad ? "FAILED" : "refused",
         s3rdmafs_strerror(-err));
  return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
  if (argc == 5 && !strcmp(argv[1], "fork")) {
    dir = argv[2], refdir = argv[3];
    return do_fork(atoi(argv[4]));
  }
  if (argc == 5 && !strcmp(argv[1], "threads")) {
    dir = argv[2], refdir = argv[3];
    return do_threads(atoi(argv[4]));
  }
  if (argc == 4 && !strcmp(argv[1], "liar"))
    return do_liar(argv[2], atoi(argv[3]));
  fprintf(stderr, "usage: share_check fork|threads DIR REFDIR N | "
                  "liar FILE ERRNO\n");
  return 2;
}
