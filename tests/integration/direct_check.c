/*
 * direct_check: libs3rdmafs's read_direct and buf_alloc against a real
 * mount, for test_fs_direct.sh.
 *
 *   direct_check verify FILE REF THREADS ITERS SEED [MAX_MiB]
 *       THREADS threads each read ITERS random ranges of FILE (unaligned
 *       offsets and lengths up to MAX_MiB, 3 by default, some past the
 *       end) into registered buffers
 *       (at unaligned places in them) and into plain memory (through the
 *       bounce buffer), and compare every byte with REF, a local copy.
 *   direct_check written FILE SIZE
 *       writes SIZE bytes of a pattern into FILE (new), reads them back
 *       with read_direct before close (this mount's unflushed writes),
 *       then closes.
 *   direct_check perm FILE
 *       buf_alloc must fail with EPERM (the daemon may not take our fd).
 *   direct_check hostile FILE
 *       raw ioctls a hostile caller could make, each refused: a plain
 *       file's fd, a memfd not sealed against shrinking, one sealed
 *       against writing, a length past the memfd, a read past the
 *       buffer, another process's handle (a forked child's), an unknown
 *       handle, an unknown version, a read with unknown flags, a
 *       staged read into a dma-buf's handle; a dma-buf (here a memfd:
 *       the daemon must refuse before looking) on a mount whose data
 *       plane cannot register device memory, one not whole pages.
 *   direct_check nodmabuf FILE
 *       a dma-buf registration (a memfd standing in) is refused with
 *       EOPNOTSUPP: the mount's data plane cannot register device memory
 *   direct_check many FILE N
 *       one registered buffer read through N opens of FILE in turn, twice
 *       over: the handles it stops remembering are given back (no ENOSPC
 *       from the daemon's limits)
 *   direct_check hold FILE N SECS
 *       N registered buffers on FILE, each read into, then held for SECS
 *       seconds with FILE open (the test reads the daemon's counters).
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"

static size_t maxlen = 3u << 20;
static const char *file, *ref;
static int iters;
static unsigned seed0;
static off_t fsize;

static void *verify_thread(void *arg)
{
  unsigned seed = seed0 + (unsigned)(uintptr_t)arg * 7919u;
  int fd = open(file, O_RDONLY), rfd = open(ref, O_RDONLY);
  char *reg = NULL, *plain = malloc(maxlen + 64), *want = malloc(maxlen);
  long bad = 0;

  if (fd < 0 || rfd < 0 || !plain || !want) {
    perror("verify: open");
    return (void *)1;
  }
  reg = s3rdmafs_buf_alloc(fd, maxlen + 4096);
  if (!reg) {
    fprintf(stderr, "buf_alloc: %s\n", s3rdmafs_strerror(errno));
    return (void *)1;
  }
  for (int i = 0; i < iters && bad < 5; i++) {
    size_t len = (size_t)rand_r(&seed) % maxlen + 1;
    off_t off = (off_t)((uint64_t)rand_r(&seed) * 4099u % (uint64_t)(fsize + 1000));
    bool in_reg = rand_r(&seed) % 3 != 0;
    char *dst = in_reg ? reg + rand_r(&seed) % 4096 : plain + rand_r(&seed) % 64;
    ssize_t n = s3rdmafs_read_direct(fd, dst, len, off);
    ssize_t w = pread(rfd, want, len, off);

    if (w < 0)
      w = 0;
    if (n != w || memcmp(dst, want, (size_t)w)) {
      fprintf(stderr, "verify: %s off %lld len %zu (%s): got %zd%s, want %zd\n",
              file, (long long)off, len, in_reg ? "registered" : "plain", n,
              n < 0 ? s3rdmafs_strerror((int)n) : "", w);
      bad++;
    }
  }
  s3rdmafs_buf_free(reg);
  free(plain);
  free(want);
  close(fd);
  close(rfd);
  return (void *)(uintptr_t)(bad != 0);
}

static int verify(int argc, char **argv)
{
  int n = argc > 5 ? atoi(argv[4]) : 0, fails = 0;
  pthread_t t[64];
  struct stat st;

  if ((argc != 7 && argc != 8) || n < 1 || n > 64)
    return 2;
  if (argc == 8 && atoi(argv[7]) > 0)
    maxlen = (size_t)atoi(argv[7]) << 20;
  file = argv[2];
  ref = argv[3];
  iters = atoi(argv[5]);
  seed0 = (unsigned)atoi(argv[6]);
  if (stat(ref, &st))
    return 2;
  fsize = st.st_size;
  for (int i = 0; i < n; i++)
    pthread_create(&t[i], NULL, verify_thread, (void *)(uintptr_t)i);
  for (int i = 0; i < n; i++) {
    void *rc;
    pthread_join(t[i], &rc);
    fails += rc != NULL;
  }
  printf("verify %s: %d threads x %d reads, %d failed\n", file, n, iters,
         fails);
  return fails ? 1 : 0;
}

static int written(int argc, char **argv)
{
  size_t size = argc == 4 ? strtoull(argv[3], NULL, 10) : 0;
  char *pat = malloc(size ? size : 1), *buf;
  int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644), ok;
  ssize_t n;

  if (!size || !pat || fd < 0)
    return 2;
  for (size_t i = 0; i < size; i++)
    pat[i] = (char)(i * 31 + i / 4093);
  if (write(fd, pat, size) != (ssize_t)size)
    return 2;
  buf = s3rdmafs_buf_alloc(fd, size);
  if (!buf) {
    fprintf(stderr, "written: buf_alloc: %s\n", s3rdmafs_strerror(errno));
    return 1;
  }
  n = s3rdmafs_read_direct(fd, buf + 1, size - 1, 1);
  ok = n == (ssize_t)size - 1 && !memcmp(buf + 1, pat + 1, size - 1);
  if (!ok)
    fprintf(stderr, "written: got %zd of %zu bytes%s\n", n, size - 1,
            n > 0 ? " (differing)" : "");
  s3rdmafs_buf_free(buf);
  free(pat);
  if (close(fd))
    return 1;
  printf("written %s: %s\n", argv[2], ok ? "read back before close" : "FAILED");
  return ok ? 0 : 1;
}

static int perm(char **argv)
{
  int fd = open(argv[2], O_RDONLY);
  void *b;

  if (fd < 0) {
    perror(argv[2]);
    return 2;
  }
  b = s3rdmafs_buf_alloc(fd, 1 << 20);
  if (b) {
    fprintf(stderr, "perm: buf_alloc succeeded; EPERM wanted\n");
    return 1;
  }
  printf("perm: %s (%s)\n", strerror(errno), s3rdmafs_strerror(errno));
  return errno == EPERM ? 0 : 1;
}

static int memfd_of(size_t size, unsigned seals)
{
  int fd = memfd_create("hostile", MFD_ALLOW_SEALING);

  if (fd < 0 || ftruncate(fd, (off_t)size) ||
      (seals && fcntl(fd, F_ADD_SEALS, seals)))
    return -1;
  return fd;
}

static int reg_raw(int fd, int memfd, uint64_t len, uint32_t version,
                   uint64_t *h)
{
  struct s3rdmafs_ioc_register a = {.version = version, .fd = memfd,
                                    .len = len};
  int rc = ioctl(fd, S3RDMAFS_IOC_REGISTER, &a) ? errno : 0;

  *h = a.handle;
  return rc;
}

static int read_flags(int fd, uint64_t h, uint64_t buf_off, uint64_t len,
                      uint32_t flags)
{
  struct s3rdmafs_ioc_read a = {.handle = h, .buf_off = buf_off, .len = len,
                                .flags = flags};

  return ioctl(fd, S3RDMAFS_IOC_READ, &a) ? errno : 0;
}

static int read_raw(int fd, uint64_t h, uint64_t buf_off, uint64_t len)
{
  return read_flags(fd, h, buf_off, len, 0);
}

static int reg_dmabuf(int fd, int dbuf, uint64_t len)
{
  struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION,
                                    .fd = dbuf, .len = len};

  return ioctl(fd, S3RDMAFS_IOC_REGISTER_DMABUF, &a) ? errno : 0;
}

/* Each request with a reserved word set: refused (EINVAL). */
static int reserved_set(int fd, uint64_t h)
{
  struct s3rdmafs_ioc_register g = {.version = S3RDMAFS_IOC_VERSION,
                                    .fd = memfd_of(1 << 20, F_SEAL_SHRINK),
                                    .len = 1 << 20, .reserved = {0, 0, 7}};
  struct s3rdmafs_ioc_read r = {.handle = h, .len = 10, .reserved = {0, 1}};
  struct s3rdmafs_ioc_unregister u = {.handle = h, .reserved = {1}};
  int e1 = ioctl(fd, S3RDMAFS_IOC_REGISTER, &g) ? errno : 0;
  int e2 = ioctl(fd, S3RDMAFS_IOC_READ, &r) ? errno : 0;
  int e3 = ioctl(fd, S3RDMAFS_IOC_UNREGISTER, &u) ? errno : 0;

  close(g.fd);
  return e1 == EINVAL && e2 == EINVAL && e3 == EINVAL ? EINVAL
         : e1 ? e1 : e2 ? e2 : e3;
}

static int expect(const char *what, int got, int want)
{
  printf("%s - hostile: %s: %s\n", got == want ? "ok" : "not ok", what,
         got ? strerror(got) : "accepted");
  return got != want;
}

static int hostile(char **argv)
{
  int fd = open(argv[2], O_RDONLY), bad = 0, st;
  char tmpl[] = "/tmp/direct_check.XXXXXX";
  int plain = mkstemp(tmpl);
  uint64_t h, good;
  pid_t pid;

  if (fd < 0 || plain < 0)
    return 2;
  unlink(tmpl);
  if (ftruncate(plain, 1 << 20))
    return 2;
  bad += expect("a plain file's fd", reg_raw(fd, plain, 1 << 20,
                                             S3RDMAFS_IOC_VERSION, &h), EINVAL);
  bad += expect("a memfd that may shrink",
                reg_raw(fd, memfd_of(1 << 20, 0), 1 << 20,
                        S3RDMAFS_IOC_VERSION, &h), EINVAL);
  bad += expect("a memfd sealed against writing",
                reg_raw(fd, memfd_of(1 << 20, F_SEAL_SHRINK | F_SEAL_WRITE),
                        1 << 20, S3RDMAFS_IOC_VERSION, &h), EINVAL);
  bad += expect("a length past the memfd",
                reg_raw(fd, memfd_of(1 << 20, F_SEAL_SHRINK), 2 << 20,
                        S3RDMAFS_IOC_VERSION, &h), EINVAL);
  {
    int same = open(argv[2], O_RDONLY), wr = open(argv[2], O_WRONLY);
    int huge = memfd_create("hostile-huge", MFD_HUGETLB | MFD_ALLOW_SEALING);
    /* a file of this very mount: never taken (its close would flush) */
    bad += expect("a file of the mount itself",
                  reg_raw(fd, same, 4096, S3RDMAFS_IOC_VERSION, &h), EINVAL);
    /* opened to write only: registered (for writes), nothing read */
    int e = reg_raw(wr, memfd_of(1 << 20, F_SEAL_SHRINK), 1 << 20,
                    S3RDMAFS_IOC_VERSION, &h);
    bad += expect("a read through a file opened only for writing",
                  e ? e : read_raw(wr, h, 0, 10), EBADF);
    if (huge >= 0 && !ftruncate(huge, 2 << 20) &&
        !fcntl(huge, F_ADD_SEALS, F_SEAL_SHRINK))
      bad += expect("a hugetlbfs memfd",
                    reg_raw(fd, huge, 2 << 20, S3RDMAFS_IOC_VERSION, &h),
                    EINVAL);
    else
      printf("# hostile: no huge pages here: the hugetlbfs case skipped\n");
    close(same);
    close(wr);
    if (huge >= 0)
      close(huge);
  }
  bad += expect("an fd number that is not open",
                reg_raw(fd, 987, 4096, S3RDMAFS_IOC_VERSION, &h), EBADF);
  bad += expect("another version", reg_raw(fd, memfd_of(1 << 20, F_SEAL_SHRINK),
                                           1 << 20, 99, &h), EOPNOTSUPP);
  bad += expect("a good one", reg_raw(fd, memfd_of(1 << 20, F_SEAL_SHRINK),
                                      1 << 20, S3RDMAFS_IOC_VERSION, &good), 0);
  bad += expect("a read past the buffer", read_raw(fd, good, 4096, 1 << 20),
                EINVAL);
  bad += expect("a read at an offset past it", read_raw(fd, good, 2 << 20, 1),
                EINVAL);
  bad += expect("an unknown handle", read_raw(fd, good + 1000, 0, 10), EBADF);
  bad += expect("a good read", read_raw(fd, good, 0, 10), 0);
  bad += expect("a staged read (a known flag)",
                read_flags(fd, good, 0, 10, S3RDMAFS_READ_STAGED), 0);
  bad += expect("a read with an unknown flag",
                read_flags(fd, good, 0, 10, 2), EINVAL);
  bad += expect("a reserved word set (register, read, unregister)",
                reserved_set(fd, good), EINVAL);
  bad += expect("a dma-buf of a length not whole pages",
                reg_dmabuf(fd, memfd_of(1 << 20, 0), 4097), EINVAL);
  bad += expect("a dma-buf on a mount that cannot register one",
                reg_dmabuf(fd, memfd_of(1 << 20, 0), 1 << 20), EOPNOTSUPP);
  pid = fork();
  if (pid == 0) /* the same open file, another process: not its handle */
    _exit(read_raw(fd, good, 0, 10) == EBADF ? 0 : 1);
  waitpid(pid, &st, 0);
  bad += expect("another process's handle",
                WIFEXITED(st) && WEXITSTATUS(st) == 0 ? EBADF : 0, EBADF);
  close(fd);
  return bad ? 1 : 0;
}

static int nodmabuf(char **argv)
{
  int fd = open(argv[2], O_RDONLY), rc;

  if (fd < 0)
    return 2;
  rc = expect("a dma-buf on this mount",
              reg_dmabuf(fd, memfd_of(1 << 20, 0), 1 << 20), EOPNOTSUPP);
  close(fd);
  return rc;
}

static int many(char **argv)
{
  int n = atoi(argv[3]), fds[128];
  char *b;

  if (n < 1 || n > 128)
    return 2;
  for (int i = 0; i < n; i++)
    if ((fds[i] = open(argv[2], O_RDONLY)) < 0)
      return 2;
  if (!(b = s3rdmafs_buf_alloc(fds[0], 1 << 20)))
    return 1;
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < n; i++) {
      ssize_t r = s3rdmafs_read_direct(fds[i], b, 4096, i);
      if (r < 0) {
        fprintf(stderr, "many: open %d: %s\n", i, s3rdmafs_strerror((int)r));
        return 1;
      }
    }
  s3rdmafs_buf_free(b);
  printf("many: %d opens, twice each\n", n);
  return 0;
}

static int hold(char **argv)
{
  int fd = open(argv[2], O_RDONLY), n = atoi(argv[3]);
  void *b[64];

  if (fd < 0 || n < 1 || n > 64)
    return 2;
  for (int i = 0; i < n; i++) {
    if (!(b[i] = s3rdmafs_buf_alloc(fd, 1 << 20)) ||
        s3rdmafs_read_direct(fd, b[i], 4096, 0) < 0) {
      fprintf(stderr, "hold: %s\n", s3rdmafs_strerror(errno));
      return 1;
    }
  }
  printf("hold: %d buffers registered\n", n);
  fflush(stdout);
  sleep((unsigned)atoi(argv[4]));
  return 0; /* exit: the kernel closes fd, the daemon drops them */
}

int main(int argc, char **argv)
{
  int rc = 2;

  if (argc >= 3 && !strcmp(argv[1], "verify"))
    rc = verify(argc, argv);
  else if (argc >= 3 && !strcmp(argv[1], "written"))
    rc = written(argc, argv);
  else if (argc == 3 && !strcmp(argv[1], "perm"))
    rc = perm(argv);
  else if (argc == 3 && !strcmp(argv[1], "hostile"))
    rc = hostile(argv);
  else if (argc == 3 && !strcmp(argv[1], "nodmabuf"))
    rc = nodmabuf(argv);
  else if (argc == 4 && !strcmp(argv[1], "many"))
    rc = many(argv);
  else if (argc == 5 && !strcmp(argv[1], "hold"))
    rc = hold(argv);
  if (rc == 2)
    fprintf(stderr, "usage: see direct_check.c\n");
  return rc;
}
