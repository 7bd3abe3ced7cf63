/*
 * gpu_check: the real-GPU suite's checks (test_gpu.sh, label gpu): the CUDA
 * driver loaded as libs3rdmafs loads it (libcuda.so.1, or
 * $S3RDMAFS_CUDA_LIB: test_gpu_sim.sh runs it against the stand-in, and
 * then it is simulated), device memory from cuMemAlloc in the device's
 * primary context, every byte checked by copying it back to the host.
 *
 *   gpu_check FILE REF WFILE
 *       1. up to 1 GiB of FILE at offset 777 into a device buffer at
 *          offset 123, compared with REF (a local copy of FILE);
 *       2. 4 threads, each its quarter of FILE at unaligned offsets into
 *          its own allocation, compared;
 *       3. a round trip: 96 MiB + 5 of a device buffer written to WFILE
 *          (new) with gpu_write, read back with read(2), compared.
 * Exit 77 (skipped) with the reason when there is no driver or no device.
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
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"

typedef int (*init_fn)(unsigned);
typedef int (*get_fn)(int *, int);
typedef int (*retain_fn)(void **, int);
typedef int (*ctx_fn)(void *);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);
typedef int (*dtoh_fn)(void *, unsigned long long, size_t);
typedef int (*htod_fn)(unsigned long long, const void *, size_t);

static init_fn cu_init;
static get_fn cu_device_get;
static retain_fn cu_retain;
static ctx_fn cu_push;
static alloc_fn cu_alloc;
static free_fn cu_free;
static dtoh_fn cu_dtoh;
static htod_fn cu_htod;
static void *ctx;
static const char *file, *ref;
static off_t fsize;

#define PIECE (64u << 20)

/* Does device memory dev hold REF's bytes [off, off + len)? */
static int same(unsigned long long dev, off_t off, size_t len, int rfd)
{
  char *a = malloc(PIECE), *b = malloc(PIECE);
  int ok = a && b;

  for (size_t at = 0; ok && at < len; at += PIECE) {
    size_t n = len - at < PIECE ? len - at : PIECE;
    ok = !cu_dtoh(a, dev + at, n) &&
         pread(rfd, b, n, off + (off_t)at) == (ssize_t)n && !memcmp(a, b, n);
  }
  free(a);
  free(b);
  return ok;
}

static void *quarter(void *arg)
{
  int i = (int)(intptr_t)arg, fd = open(file, O_RDONLY), rfd = open(ref, O_RDONLY);
  off_t q = fsize / 4, off = q * i + 4093 * i;
  size_t len = (size_t)(q - 4093 * i - 11);
  unsigned long long dev = 0;
  ssize_t n;
  int ok;

  cu_push(ctx);
  if (fd < 0 || rfd < 0 || cu_alloc(&dev, len + 4096))
    return (void *)1;
  n = s3rdmafs_gpu_read(fd, (void *)(uintptr_t)(dev + 1001), len, off);
  ok = n == (ssize_t)len && same(dev + 1001, off, len, rfd);
  if (!ok)
    fprintf(stderr, "quarter %d: got %zd of %zu%s\n", i, n, len,
            n < 0 ? s3rdmafs_strerror((int)n) : "");
  cu_free(dev);
  close(fd);
  close(rfd);
  return ok ? NULL : (void *)1;
}

static int load(void)
{
  const char *lib = getenv("S3RDMAFS_CUDA_LIB");
  void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  int dev, rc;

  if (!h) {
    printf("skip: no CUDA driver (%s)\n", dlerror());
    return 77;
  }
  if (!(cu_init = (init_fn)dlsym(h, "cuInit")) ||
      !(cu_device_get = (get_fn)dlsym(h, "cuDeviceGet")) ||
      !(cu_retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain")) ||
      !(cu_push = (ctx_fn)dlsym(h, "cuCtxPushCurrent_v2")) ||
      !(cu_alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2")) ||
      !(cu_free = (free_fn)dlsym(h, "cuMemFree_v2")) ||
      !(cu_dtoh = (dtoh_fn)dlsym(h, "cuMemcpyDtoH_v2")) ||
      !(cu_htod = (htod_fn)dlsym(h, "cuMemcpyHtoD_v2"))) {
    printf("skip: the CUDA driver lacks a function this check needs\n");
    return 77;
  }
  if ((rc = cu_init(0)) || (rc = cu_device_get(&dev, 0))) {
    printf("skip: no GPU (CUDA error %d)\n", rc);
    return 77;
  }
  if (cu_retain(&ctx, dev) || cu_push(ctx)) {
    printf("gpu_check: no context on device 0\n");
    return 1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  int rc, fd, rfd, fails = 0;
  unsigned long long dev = 0;
  size_t len, wlen = (96u << 20) + 5;
  pthread_t t[4];
  struct stat st;
  char *host;
  ssize_t n;

  if (argc != 4)
    return 2;
  if ((rc = load()))
    return rc;
  file = argv[1];
  ref = argv[2];
  if (stat(ref, &st) || (fd = open(file, O_RDONLY)) < 0 ||
      (rfd = open(ref, O_RDONLY)) < 0)
    return 2;
  fsize = st.st_size;
  /* 1. one large read */
  len = fsize - 777 < (1 << 30) ? (size_t)(fsize - 777) : (size_t)1 << 30;
  if (cu_alloc(&dev, len + 4096))
    return 1;
  n = s3rdmafs_gpu_read(fd, (void *)(uintptr_t)(dev + 123), len, 777);
  rc = n == (ssize_t)len && same(dev + 123, 777, len, rfd);
  printf("%s - %zu bytes at 777 into device memory at +123\n",
         rc ? "ok" : "not ok", len);
  fails += !rc;
  cu_free(dev);
  /* 2. four threads */
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, quarter, (void *)(intptr_t)i);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    fails += r != NULL;
  }
  printf("%s - four threads, a quarter each at unaligned offsets\n",
         fails ? "not ok" : "ok");
  /* 3. a round trip from device memory */
  host = malloc(wlen);
  if (!host || cu_alloc(&dev, wlen))
    return 1;
  for (size_t i = 0; i < wlen; i++)
    host[i] = (char)(i * 7 + i / 99991);
  cu_htod(dev, host, wlen);
  close(fd);
  fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  n = fd >= 0 ? s3rdmafs_gpu_write(fd, (void *)(uintptr_t)dev, wlen, 0) : -EBADF;
  rc = n == (ssize_t)wlen && !close(fd);
  if (rc) {
    char *back = malloc(wlen);
    fd = open(argv[3], O_RDONLY);
    rc = back && fd >= 0 && pread(fd, back, wlen, 0) == (ssize_t)wlen &&
         !memcmp(back, host, wlen);
    free(back);
    close(fd);
  }
  printf("%s - %zu bytes written from device memory, read back\n",
         rc ? "ok" : "not ok", wlen);
  fails += !rc;
  cu_free(dev);
  free(host);
  return fails ? 1 : 0;
}
