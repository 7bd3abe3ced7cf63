/*
 * dwrite_check: libs3rdmafs's write_direct against a real mount, for
 * test_fs_direct.sh.
 *
 *   dwrite_check write FILE SIZE CHUNK KIND THREADS
 *       THREADS threads each write FILE.<t> (new, O_TRUNC) of SIZE bytes
 *       of a pattern with s3rdmafs_write_direct, CHUNK bytes per call
 *       (the last shorter), from a registered buffer (KIND reg: at an
 *       unaligned place in it after the first call) or from plain memory
 *       (KIND plain: through the bounce buffer), then close it and read
 *       every byte back through a fresh open with read(2).
 *   dwrite_check back FILE SIZE AT
 *       FILE written with write_direct in 16 MiB calls from a registered
 *       buffer, then 4099 bytes at AT rewritten with pwrite(2) (a part
 *       already sent, when AT is below what went: the move from streamed
 *       parts to the staging file), then 10 more bytes at the end with
 *       write_direct; fsync, close, read back.
 *   dwrite_check check FILE SIZE SEED
 *       FILE holds write's pattern for thread SEED (SIZE bytes): after a
 *       remount, what the server stored.
 *   dwrite_check user FILE
 *       one user registers through 10 opens of FILE until refused: exactly
 *       512 registrations (the daemon's per-user limit), then ENOSPC.
 *   dwrite_check hostile FILE
 *       WRITE ioctls refused: through a file opened only for reading, a
 *       READ through one opened only for writing, unknown flags, past
 *       the buffer, a flag on a memfd's registration, an unknown
 *       registration flag on a dma-buf.
 * Exit 0 when every check holds; failures are printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"

static const char *file, *kind;
static size_t fsize, chunk;

static char pat_at(size_t i, unsigned seed)
{
  return (char)(i * 131 + i / 4093 + seed * 17);
}

/* Every byte of path equals want[] (size bytes): 0, else 1 (said). */
static int read_back(const char *path, const char *want, size_t size)
{
  char *got = malloc(size + 1);
  int fd = open(path, O_RDONLY), rc = 1;
  size_t done = 0;

  if (!got || fd < 0) {
    fprintf(stderr, "%s: %s\n", path, strerror(errno));
    goto out;
  }
  while (done <= size) {
    ssize_t n = read(fd, got + done, size + 1 - done);
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  if (done != size)
    fprintf(stderr, "%s: %zu bytes read back, %zu written\n", path, done,
            size);
  else if (memcmp(got, want, size)) {
    size_t i = 0;
    while (got[i] == want[i])
      i++;
    fprintf(stderr, "%s: byte %zu differs\n", path, i);
  } else {
    rc = 0;
  }
out:
  if (fd >= 0)
    close(fd);
  free(got);
  return rc;
}

static void *write_thread(void *arg)
{
  unsigned t = (unsigned)(uintptr_t)arg;
  char path[4096], *pat = malloc(fsize), *src, *reg = NULL;
  int fd, rc = 1;
  size_t done = 0;

  snprintf(path, sizeof(path), "%s.%u", file, t);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!pat || fd < 0)
    return (void *)(uintptr_t)2;
  for (size_t i = 0; i < fsize; i++)
    pat[i] = pat_at(i, t);
  if (!strcmp(kind, "reg") && !(reg = s3rdmafs_buf_alloc(fd, chunk + 4096))) {
    fprintf(stderr, "%s: buf_alloc: %s\n", path, s3rdmafs_strerror(errno));
    goto out;
  }
  while (done < fsize) {
    size_t piece = fsize - done < chunk ? fsize - done : chunk;
    ssize_t n;
    /* the first call at the buffer's start (whole parts from a page),
       the rest at an unaligned place in it */
    src = reg ? reg + (done ? 333 : 0) : pat + done;
    if (reg)
      memcpy(src, pat + done, piece);
    n = s3rdmafs_write_direct(fd, src, piece, (off_t)done);
    if (n != (ssize_t)piece) {
      fprintf(stderr, "%s: write_direct at %zu: %zd (%s)\n", path, done, n,
              n < 0 ? s3rdmafs_strerror((int)n) : "short");
      goto out;
    }
    done += piece;
  }
  if (close(fd)) {
    fd = -1;
    fprintf(stderr, "%s: close: %s\n", path, strerror(errno));
    goto out;
  }
  fd = -1;
  rc = read_back(path, pat, fsize);
out:
  s3rdmafs_buf_free(reg);
  if (fd >= 0)
    close(fd);
  free(pat);
  return (void *)(uintptr_t)rc;
}

static int write_files(char **argv)
{
  int n = atoi(argv[6]), fails = 0;
  pthread_t th[16];

  file = argv[2];
  fsize = strtoull(argv[3], NULL, 10);
  chunk = strtoull(argv[4], NULL, 10);
  kind = argv[5];
  if (n < 1 || n > 16 || !fsize || !chunk)
    return 2;
  for (int t = 0; t < n; t++)
    pthread_create(&th[t], NULL, write_thread, (void *)(uintptr_t)t);
  for (int t = 0; t < n; t++) {
    void *r;
    pthread_join(th[t], &r);
    fails += r != NULL;
  }
  printf("write %s: %d file(s) of %zu bytes in %zu-byte calls from %s "
         "memory, %d failed\n", file, n, fsize, chunk, kind, fails);
  return fails ? 1 : 0;
}

static int back(char **argv)
{
  size_t size = strtoull(argv[3], NULL, 10), at = strtoull(argv[4], NULL, 10);
  size_t step = 16u << 20, done = 0;
  char *pat = malloc(size + 10), *reg;
  int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644), rc;

  if (!pat || fd < 0 || at + 4099 > size)
    return 2;
  for (size_t i = 0; i < size + 10; i++)
    pat[i] = pat_at(i, 99);
  if (!(reg = s3rdmafs_buf_alloc(fd, step)))
    return 1;
  while (done < size) {
    size_t piece = size - done < step ? size - done : step;
    memcpy(reg, pat + done, piece);
    if (s3rdmafs_write_direct(fd, reg, piece, (off_t)done) != (ssize_t)piece)
      return 1;
    done += piece;
  }
  memset(pat + at, 'B', 4099);
  if (pwrite(fd, pat + at, 4099, (off_t)at) != 4099)
    return 1;
  memcpy(reg, pat + size, 10);
  if (s3rdmafs_write_direct(fd, reg, 10, (off_t)size) != 10 || fsync(fd)) {
    fprintf(stderr, "back: the last write or fsync failed\n");
    return 1;
  }
  s3rdmafs_buf_free(reg);
  if (close(fd))
    return 1;
  rc = read_back(argv[2], pat, size + 10);
  printf("back %s: %s\n", argv[2], rc ? "FAILED" : "read back");
  free(pat);
  return rc;
}

static int expect(const char *what, int got, int want)
{
  printf("%s - hostile: %s: %s\n", got == want ? "ok" : "not ok", what,
         got ? strerror(got) : "accepted");
  return got != want;
}

static int memfd_reg(int fd, uint32_t flags, uint64_t *h)
{
  struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION,
                                    .len = 1 << 20, .flags = flags};
  int rc;

  a.fd = memfd_create("dwrite", MFD_ALLOW_SEALING);
  if (a.fd < 0 || ftruncate(a.fd, 1 << 20) ||
      fcntl(a.fd, F_ADD_SEALS, F_SEAL_SHRINK))
    return EIO;
  rc = ioctl(fd, S3RDMAFS_IOC_REGISTER, &a) ? errno : 0;
  close(a.fd);
  *h = a.handle;
  return rc;
}

static int write_raw(int fd, uint64_t h, uint64_t buf_off, uint64_t len,
                     uint32_t flags)
{
  struct s3rdmafs_ioc_write a = {.handle = h, .buf_off = buf_off,
                                 .len = len, .flags = flags};

  return ioctl(fd, S3RDMAFS_IOC_WRITE, &a) ? errno : 0;
}

static int hostile(char **argv)
{
  int wr = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644), rd, bad = 0;
  struct s3rdmafs_ioc_register d = {.version = S3RDMAFS_IOC_VERSION,
                                    .len = 1 << 20, .flags = 2};
  struct s3rdmafs_ioc_read r = {.len = 10};
  uint64_t hr, hw, h2;

  rd = open(argv[2], O_RDONLY);
  if (wr < 0 || rd < 0)
    return 2;
  bad += expect("a registration on a file opened to read",
                memfd_reg(rd, 0, &hr), 0);
  bad += expect("a registration on a file opened to write",
                memfd_reg(wr, 0, &hw), 0);
  bad += expect("a write through a file opened only to read",
                write_raw(rd, hr, 0, 10, 0), EBADF);
  r.handle = hw;
  bad += expect("a read through a file opened only to write",
                ioctl(wr, S3RDMAFS_IOC_READ, &r) ? errno : 0, EBADF);
  bad += expect("a write with an unknown flag", write_raw(wr, hw, 0, 10, 2),
                EINVAL);
  bad += expect("a write past the buffer", write_raw(wr, hw, 4096, 1 << 20, 0),
                EINVAL);
  bad += expect("a write of another open file's handle",
                write_raw(wr, hr, 0, 10, 0), EBADF);
  bad += expect("a memfd registered with a flag", memfd_reg(wr, 1, &h2),
                EINVAL);
  d.fd = memfd_create("dwrite", 0);
  bad += expect("a dma-buf with an unknown flag",
                ioctl(wr, S3RDMAFS_IOC_REGISTER_DMABUF, &d) ? errno : 0,
                EINVAL);
  close(d.fd);
  bad += expect("a good write", write_raw(wr, hw, 0, 10, 0), 0);
  close(rd);
  if (close(wr))
    bad++;
  return bad ? 1 : 0;
}

static int check(char **argv)
{
  size_t size = strtoull(argv[3], NULL, 10);
  unsigned seed = (unsigned)atoi(argv[4]);
  char *pat = malloc(size ? size : 1);
  int rc;

  if (!pat)
    return 2;
  for (size_t i = 0; i < size; i++)
    pat[i] = pat_at(i, seed);
  rc = read_back(argv[2], pat, size);
  free(pat);
  printf("check %s: %s\n", argv[2], rc ? "FAILED" : "as written");
  return rc;
}

static int user(char **argv)
{
  int fds[10], ok = 0, rc = 0;
  uint64_t h;

  for (int i = 0; i < 10; i++)
    if ((fds[i] = open(argv[2], O_RDONLY)) < 0)
      return 2;
  for (int i = 0; i < 10 && !rc; i++)
    for (int k = 0; k < 64 && !rc; k++)
      if (!(rc = memfd_reg(fds[i], 0, &h)))
        ok++;
  for (int i = 0; i < 10; i++)
    close(fds[i]);
  printf("user: %d registrations, then %s\n", ok,
         rc ? strerror(rc) : "none refused");
  return ok == 512 && rc == ENOSPC ? 0 : 1;
}

int main(int argc, char **argv)
{
  if (argc == 3 && !strcmp(argv[1], "user"))
    return user(argv);
  if (argc == 5 && !strcmp(argv[1], "check"))
    return check(argv);
  if (argc == 7 && !strcmp(argv[1], "write"))
    return write_files(argv);
  if (argc == 5 && !strcmp(argv[1], "back"))
    return back(argv);
  if (argc == 3 && !strcmp(argv[1], "hostile"))
    return hostile(argv);
  fprintf(stderr, "usage: see dwrite_check.c\n");
  return 2;
}
