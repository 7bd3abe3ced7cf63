/*
 * gpu_bw: s3rdmafs_gpu_read against the driver's own host-to-device copy,
 * in one run, for bench/gpu_bw.sh. The CUDA driver is loaded as
 * libs3rdmafs loads it (libcuda.so.1, or $S3RDMAFS_CUDA_LIB); when it is
 * the tests' stand-in (it exports fake_cuda_simulated) every figure is
 * simulated, and said so.
 *
 *   gpu_bw FILE CHUNK_MiB REPS
 *
 * One warm-up pass of gpu_read over FILE (the daemon's page cache filled),
 * then REPS times: a pass of s3rdmafs_gpu_read over FILE in CHUNK_MiB
 * reads into one device buffer, and as many bytes copied by cuMemcpyHtoD
 * from pinned host memory (cuMemAllocHost) to the same buffer. One line
 * per rep:
 *   driver=real|simulated rep=I bytes=N gpu_read_s=S htod_s=S
 * Exit 77 (skipped) with the reason when there is no driver or device.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"

typedef int (*init_fn)(unsigned);
typedef int (*get_fn)(int *, int);
typedef int (*retain_fn)(void **, int);
typedef int (*ctx_fn)(void *);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*free_fn)(unsigned long long);
typedef int (*halloc_fn)(void **, size_t);
typedef int (*hfree_fn)(void *);
typedef int (*htod_fn)(unsigned long long, const void *, size_t);

static double now(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One gpu_read pass over fd into dev, chunk bytes at a time: the bytes,
   or -1 (said). */
static long long pass(int fd, void *dev, size_t chunk)
{
  long long total = 0;

  for (;;) {
    ssize_t n = s3rdmafs_gpu_read(fd, dev, chunk, (off_t)total);
    if (n < 0) {
      fprintf(stderr, "gpu_bw: gpu_read at %lld: %s\n", total,
              s3rdmafs_strerror((int)n));
      return -1;
    }
    total += n;
    if ((size_t)n < chunk)
      return total;
  }
}

int main(int argc, char **argv)
{
  const char *lib = getenv("S3RDMAFS_CUDA_LIB");
  size_t chunk = argc == 4 ? (size_t)atoi(argv[2]) << 20 : 0;
  int reps = argc == 4 ? atoi(argv[3]) : 0, fd, dev_no = 0;
  unsigned long long dev = 0;
  void *h, *ctx = NULL, *host = NULL;
  const char *driver;
  init_fn cu_init;
  get_fn cu_device_get;
  retain_fn cu_retain;
  ctx_fn cu_push;
  alloc_fn cu_alloc;
  free_fn cu_free;
  halloc_fn cu_halloc;
  hfree_fn cu_hfree;
  htod_fn cu_htod;

  if (!chunk || reps < 1) {
    fprintf(stderr, "usage: gpu_bw FILE CHUNK_MiB REPS\n");
    return 2;
  }
  h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("gpu_bw: skipped: no CUDA driver (%s)\n", dlerror());
    return 77;
  }
  driver = dlsym(h, "fake_cuda_simulated") ? "simulated" : "real";
  cu_init = (init_fn)dlsym(h, "cuInit");
  cu_device_get = (get_fn)dlsym(h, "cuDeviceGet");
  cu_retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
  cu_push = (ctx_fn)dlsym(h, "cuCtxPushCurrent_v2");
  cu_alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
  cu_free = (free_fn)dlsym(h, "cuMemFree_v2");
  cu_halloc = (halloc_fn)dlsym(h, "cuMemAllocHost_v2");
  cu_hfree = (hfree_fn)dlsym(h, "cuMemFreeHost");
  cu_htod = (htod_fn)dlsym(h, "cuMemcpyHtoD_v2");
  if (!cu_init || !cu_device_get || !cu_retain || !cu_push || !cu_alloc ||
      !cu_free || !cu_halloc || !cu_hfree || !cu_htod) {
    printf("gpu_bw: skipped: the driver lacks a function it needs\n");
    return 77;
  }
  if (cu_init(0) || cu_device_get(&dev_no, 0) || cu_retain(&ctx, dev_no) ||
      cu_push(ctx)) {
    printf("gpu_bw: skipped: no GPU device\n");
    return 77;
  }
  fd = open(argv[1], O_RDONLY);
  if (fd < 0 || cu_alloc(&dev, chunk) || cu_halloc(&host, chunk)) {
    fprintf(stderr, "gpu_bw: cannot open %s or allocate %zu bytes\n",
            argv[1], chunk);
    return 1;
  }
  memset(host, 0x5a, chunk);
  if (pass(fd, (void *)(uintptr_t)dev, chunk) < 0) /* the cache warmed */
    return 1;
  for (int rep = 1; rep <= reps; rep++) {
    double t0 = now(), t1, t2;
    long long bytes = pass(fd, (void *)(uintptr_t)dev, chunk), left;
    if (bytes < 0)
      return 1;
    t1 = now();
    for (left = bytes; left > 0; left -= (long long)chunk)
      if (cu_htod(dev, host, left < (long long)chunk ? (size_t)left : chunk)) {
        fprintf(stderr, "gpu_bw: cuMemcpyHtoD failed\n");
        return 1;
      }
    t2 = now();
    printf("driver=%s rep=%d bytes=%lld gpu_read_s=%.4f htod_s=%.4f\n",
           driver, rep, bytes, t1 - t0, t2 - t1);
  }
  cu_hfree(host);
  cu_free(dev);
  close(fd);
  return 0;
}
