/*
 * gpu_sim_check: libs3rdmafs's GPU calls against the stand-in driver
 * (fake_cuda.c, loaded through $S3RDMAFS_CUDA_LIB, which this program
 * loads too, to make "device memory"), on a real mount, for
 * test_gpu_sim.sh. Simulated: no GPU takes part.
 *
 *   gpu_sim_check read FILE REF THREADS ITERS SEED
 *       THREADS threads each gpu_read ITERS random ranges of FILE
 *       (unaligned, up to 6.5 ring slots: the ring wraps, last slots
 *       partial, some past the end) to unaligned places of a device
 *       allocation, and the batch form, compared with REF
 *   gpu_sim_check fail FILE WANT
 *       one gpu_read of 40 MiB must fail with -WANT (errno number) and a
 *       reason naming the failed call ($FAKECUDA_FAIL set by the caller)
 *   gpu_sim_check nodev FILE
 *       gpu_read and gpu_write return -ENODEV, the reason said
 *   gpu_sim_check hostmem FILE
 *       a host pointer is not device memory: -EINVAL; past the end of an
 *       allocation: -EINVAL
 *   gpu_sim_check dmabuf FILE REF N ASKED EXPORTED [two]
 *       N gpu_reads of random unaligned ranges of FILE (up to 3 ring
 *       slots), compared with REF; then the stand-in's dma-buf counters
 *       must be exactly ASKED exports asked for and EXPORTED made
 *       ($FAKECUDA_DMABUF set by the caller): a refusal remembered is
 *       asked once, whatever N. With "two": into two allocations alive
 *       together, half of the reads each
 *   gpu_sim_check host FILE REF N
 *       N s3rdmafs_read_direct of random unaligned ranges into host
 *       memory, compared with REF (the daemon counts them as host reads)
 *   gpu_sim_check fork FILE REF
 *       gpu_read of the first MiB in the parent (its driver and ring
 *       set up), then fork: the child's gpu_read is -ENODEV, the reason
 *       naming fork (a child cannot use its parent's CUDA), its
 *       read_direct into host memory right; the parent's gpu_read right
 *       after the child has exited
 *   gpu_sim_check write FILE SIZE
 *       gpu_write of SIZE pattern bytes from device memory into a new
 *       FILE, closed, read back with read(2) and compared
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"

typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);
static alloc_fn dev_alloc;
static free_fn dev_free;

static const char *file, *ref;
static int iters;
static unsigned seed0;
static off_t fsize;

static char *dalloc(size_t len)
{
  unsigned long long p = 0;

  return dev_alloc(&p, len) ? NULL : (char *)(uintptr_t)p;
}

static void *read_thread(void *arg)
{
  unsigned seed = seed0 + (unsigned)(uintptr_t)arg * 104729u;
  size_t maxlen = (size_t)(6.5 * 8 * 1048576); /* the ring (4 slots) wraps */
  int fd = open(file, O_RDONLY), rfd = open(ref, O_RDONLY);
  char *dev = dalloc(maxlen + 4096), *want = malloc(maxlen);
  long bad = 0;

  if (fd < 0 || rfd < 0 || !dev || !want)
    return (void *)1;
  for (int i = 0; i < iters && bad < 3; i++) {
    size_t len = (size_t)rand_r(&seed) % maxlen + 1;
    off_t off = (off_t)((uint64_t)rand_r(&seed) * 8191u % (uint64_t)(fsize + 4096));
    char *dst = dev + rand_r(&seed) % 4096;
    ssize_t n, w;

    if (i % 5 == 4) { /* the batch form: two ranges */
      struct s3rdmafs_gpu_io io[2] = {{dst, len / 2, off, 0},
                                      {dst + len / 2, len - len / 2,
                                       off + (off_t)(len / 2), 0}};
      n = s3rdmafs_gpu_read_batch(fd, io, 2);
      if (n >= 0 && io[0].result != (ssize_t)(len / 2) && io[1].result > 0)
        n = -999; /* a short first range followed by a second: wrong */
    } else {
      n = s3rdmafs_gpu_read(fd, dst, len, off);
    }
    w = pread(rfd, want, len, off);
    if (w < 0)
      w = 0;
    if (n != w || memcmp(dst, want, (size_t)w)) {
      fprintf(stderr, "read: off %lld len %zu: got %zd (%s), want %zd\n",
              (long long)off, len, n, n < 0 ? s3rdmafs_strerror((int)n) : "",
              w);
      bad++;
    }
  }
  dev_free((unsigned long long)(uintptr_t)dev);
  free(want);
  close(fd);
  close(rfd);
  return (void *)(uintptr_t)(bad != 0);
}

static int do_read(char **argv)
{
  int n = atoi(argv[4]), fails = 0;
  pthread_t t[16];
  struct stat st;

  file = argv[2];
  ref = argv[3];
  iters = atoi(argv[5]);
  seed0 = (unsigned)atoi(argv[6]);
  if (n < 1 || n > 16 || stat(ref, &st))
    return 2;
  fsize = st.st_size;
  for (int i = 0; i < n; i++)
    pthread_create(&t[i], NULL, read_thread, (void *)(uintptr_t)i);
  for (int i = 0; i < n; i++) {
    void *rc;
    pthread_join(t[i], &rc);
    fails += rc != NULL;
  }
  printf("gpu read (simulated) %s: %d threads x %d, %d failed\n", file, n,
         iters, fails);
  return fails ? 1 : 0;
}

static int do_fail(char **argv)
{
  int fd = open(argv[2], O_RDONLY), want = atoi(argv[3]);
  char *dev = dalloc(40u << 20);
  ssize_t n;

  if (fd < 0 || !dev)
    return 2;
  n = s3rdmafs_gpu_read(fd, dev, 40u << 20, 0);
  printf("fail: %zd: %s\n", n, n < 0 ? s3rdmafs_strerror((int)n) : "");
  dev_free((unsigned long long)(uintptr_t)dev);
  close(fd);
  return n == -want && strstr(s3rdmafs_strerror((int)n), "simulated") ? 0 : 1;
}

static int do_nodev(char **argv)
{
  int fd = open(argv[2], O_RDONLY);
  char host[64];
  ssize_t r, w;

  if (fd < 0)
    return 2;
  r = s3rdmafs_gpu_read(fd, host, sizeof(host), 0);
  w = s3rdmafs_gpu_write(fd, host, sizeof(host), 0);
  printf("nodev: read %zd, write %zd: %s\n", r, w, s3rdmafs_strerror(-ENODEV));
  return r == -ENODEV && w == -ENODEV ? 0 : 1;
}

static int do_hostmem(char **argv)
{
  int fd = open(argv[2], O_RDONLY);
  char host[64], *dev = dalloc(1 << 20);
  ssize_t a, b;

  if (fd < 0 || !dev)
    return 2;
  a = s3rdmafs_gpu_read(fd, host, sizeof(host), 0);
  b = s3rdmafs_gpu_read(fd, dev + 4096, 1 << 20, 0);
  printf("hostmem: host pointer %zd, past the allocation %zd\n", a, b);
  dev_free((unsigned long long)(uintptr_t)dev);
  close(fd);
  return a == -EINVAL && b == -EINVAL ? 0 : 1;
}

typedef void (*dstats_fn)(unsigned long *, unsigned long *, unsigned long *);
static dstats_fn dmabuf_stats;

/* n reads of random ranges of file, into device memory (gpu) or host
   memory, compared with ref: how many differed, or -1. */
#define READS_MAX (3u * 8 * 1048576 + 12345)

/* n random reads of f into device (gpu) or host memory, compared with r;
   into dst0 when given (READS_MAX + 4096 bytes of device memory). */
static int reads(const char *f, const char *r, int n, int gpu, unsigned seed,
                 char *dst0)
{
  size_t maxlen = READS_MAX;
  int fd = open(f, O_RDONLY), rfd = open(r, O_RDONLY), bad = 0;
  char *dst = dst0    ? dst0
              : gpu ? dalloc(maxlen + 4096)
                    : malloc(maxlen + 4096);
  char *want = malloc(maxlen), *back = malloc(maxlen);
  struct stat st;

  if (fd < 0 || rfd < 0 || !dst || !want || !back || fstat(rfd, &st))
    return -1;
  for (int i = 0; i < n; i++) {
    size_t len = (size_t)rand_r(&seed) % maxlen + 1, at = rand_r(&seed) % 4096;
    off_t off = (off_t)((uint64_t)rand_r(&seed) * 8191u %
                        (uint64_t)(st.st_size + 4096));
    ssize_t got = gpu ? s3rdmafs_gpu_read(fd, dst + at, len, off)
                      : s3rdmafs_read_direct(fd, dst + at, len, off);
    ssize_t w = pread(rfd, want, len, off);
    if (w < 0)
      w = 0;
    /* (the stand-in's device memory is host memory: read it back as is) */
    if (got > 0)
      memcpy(back, dst + at, (size_t)got);
    if (got != w || memcmp(back, want, (size_t)w)) {
      fprintf(stderr, "%s: off %lld len %zu: got %zd (%s), want %zd\n",
              gpu ? "dmabuf" : "host", (long long)off, len, got,
              got < 0 ? s3rdmafs_strerror((int)got) : "", w);
      bad++;
    }
  }
  if (gpu && !dst0)
    dev_free((unsigned long long)(uintptr_t)dst);
  else if (!dst0)
    free(dst);
  free(want);
  free(back);
  close(fd);
  close(rfd);
  return bad;
}

static int do_dmabuf(char **argv)
{
  int n = atoi(argv[4]), bad;
  unsigned long asked, exported, refused;

  if (n < 1 || !dmabuf_stats)
    return 2;
  if (argv[7]) { /* into two allocations, both alive: each asked */
    char *d1 = dalloc(READS_MAX + 4096), *d2 = dalloc(READS_MAX + 4096);
    if (!d1 || !d2)
      return 2;
    bad = reads(argv[2], argv[3], n / 2, 1, (unsigned)getpid(), d1) +
          reads(argv[2], argv[3], n - n / 2, 1, (unsigned)getpid(), d2);
    dev_free((unsigned long long)(uintptr_t)d1);
    dev_free((unsigned long long)(uintptr_t)d2);
  } else {
    bad = reads(argv[2], argv[3], n, 1, (unsigned)getpid(), NULL);
  }
  dmabuf_stats(&asked, &exported, &refused);
  printf("dmabuf (simulated, FAKECUDA_DMABUF=%s): %d reads, %d differed; "
         "exports asked %lu (want %s), made %lu (want %s), refused %lu\n",
         getenv("FAKECUDA_DMABUF") ? getenv("FAKECUDA_DMABUF") : "", n, bad,
         asked, argv[5], exported, argv[6], refused);
  return bad || asked != strtoul(argv[5], NULL, 10) ||
                 exported != strtoul(argv[6], NULL, 10);
}

static int do_host(char **argv)
{
  int n = atoi(argv[4]);
  int bad = n < 1 ? -1 : reads(argv[2], argv[3], n, 0, 7, NULL);

  printf("host: %d reads, %d differed\n", n, bad);
  return bad != 0;
}

static int do_write(char **argv)
{
  size_t size = strtoull(argv[3], NULL, 10);
  char *dev = dalloc(size), *back = malloc(size);
  int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644), ok;
  ssize_t n;

  if (!dev || !back || fd < 0)
    return 2;
  for (size_t i = 0; i < size; i++)
    dev[i] = (char)(i * 13 + i / 65521);
  n = s3rdmafs_gpu_write(fd, dev, size, 0);
  if (close(fd) || n != (ssize_t)size) {
    fprintf(stderr, "write: %zd: %s\n", n,
            n < 0 ? s3rdmafs_strerror((int)n) : "short");
    dev_free((unsigned long long)(uintptr_t)dev);
    free(back);
    return 1;
  }
  fd = open(argv[2], O_RDONLY);
  ok = fd >= 0 && pread(fd, back, size, 0) == (ssize_t)size &&
       !memcmp(back, dev, size);
  printf("write (simulated) %s: %zu bytes %s\n", argv[2], size,
         ok ? "read back equal" : "DIFFER");
  if (fd >= 0)
    close(fd);
  dev_free((unsigned long long)(uintptr_t)dev);
  free(back);
  return ok ? 0 : 1;
}

/* the first MiB of fd into dev, compared with want: 0 when right */
static int gpu_mib(int fd, char *dev, const char *want)
{
  ssize_t n = s3rdmafs_gpu_read(fd, dev, 1 << 20, 0);

  if (n != 1 << 20 || memcmp(dev, want, 1 << 20)) {
    fprintf(stderr, "fork: gpu_read: %zd (%s)\n", n,
            n < 0 ? s3rdmafs_strerror((int)n) : "bytes");
    return 1;
  }
  return 0;
}

static int child_after_fork(int fd, char *dev, const char *want)
{
  char *host = malloc(1 << 20);
  ssize_t n = s3rdmafs_gpu_read(fd, dev, 1 << 20, 0);

  if (n != -ENODEV || !strstr(s3rdmafs_strerror((int)n), "fork")) {
    fprintf(stderr, "fork: the child's gpu_read: %zd (%s)\n", n,
            n < 0 ? s3rdmafs_strerror((int)n) : "bytes");
    return 1;
  }
  n = host ? s3rdmafs_read_direct(fd, host, 1 << 20, 0) : -ENOMEM;
  if (n != 1 << 20 || memcmp(host, want, 1 << 20)) {
    fprintf(stderr, "fork: the child's read_direct: %zd\n", n);
    return 1;
  }
  free(host);
  return 0;
}

static int do_fork(char **argv)
{
  int fd = open(argv[2], O_RDONLY), rfd = open(argv[3], O_RDONLY), st = 0;
  char *dev = dalloc(1 << 20), *want = malloc(1 << 20);
  pid_t pid;

  if (fd < 0 || rfd < 0 || !dev || !want ||
      pread(rfd, want, 1 << 20, 0) != 1 << 20)
    return 2;
  if (gpu_mib(fd, dev, want))
    return 1;
  pid = fork();
  if (!pid) {
    alarm(30); /* (the parent's driver used here would hang in it) */
    _exit(child_after_fork(fd, dev, want));
  }
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
      WEXITSTATUS(st))
    return 1;
  memset(dev, 0, 1 << 20);
  if (gpu_mib(fd, dev, want))
    return 1;
  printf("fork (simulated): the child refused, the parent served\n");
  dev_free((unsigned long long)(uintptr_t)dev);
  free(want);
  close(fd);
  close(rfd);
  return 0;
}

int main(int argc, char **argv)
{
  const char *lib = getenv("S3RDMAFS_CUDA_LIB");
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;

  if (argc >= 3 && !strcmp(argv[1], "nodev"))
    return do_nodev(argv);
  if (!h || !(dev_alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2")) ||
      !(dev_free = (free_fn)dlsym(h, "cuMemFree_v2"))) {
    fprintf(stderr, "gpu_sim_check: S3RDMAFS_CUDA_LIB must name the stand-in\n");
    return 2;
  }
  dmabuf_stats = (dstats_fn)dlsym(h, "fake_cuda_dmabuf_stats");
  if (argc == 7 && !strcmp(argv[1], "read"))
    return do_read(argv);
  if ((argc == 7 || argc == 8) && !strcmp(argv[1], "dmabuf"))
    return do_dmabuf(argv);
  if (argc == 5 && !strcmp(argv[1], "host"))
    return do_host(argv);
  if (argc == 4 && !strcmp(argv[1], "fail"))
    return do_fail(argv);
  if (argc == 3 && !strcmp(argv[1], "hostmem"))
    return do_hostmem(argv);
  if (argc == 4 && !strcmp(argv[1], "write"))
    return do_write(argv);
  if (argc == 4 && !strcmp(argv[1], "fork"))
    return do_fork(argv);
  fprintf(stderr, "usage: see gpu_sim_check.c\n");
  return 2;
}
