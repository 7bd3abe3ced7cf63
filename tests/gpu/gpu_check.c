/*
 * gpu_check: the real-GPU suite's checks (test_gpu.sh, label gpu, and
 * scripts/gpu-check.sh): the CUDA driver loaded as libs3rdmafs loads it
 * (libcuda.so.1, or $S3RDMAFS_CUDA_LIB: test_gpu_sim.sh and CI's run of
 * gpu-check.sh use the stand-in, and then it is simulated), device memory
 * from cuMemAlloc in the device's primary context, every byte checked by
 * copying it back to the host.
 *
 *   gpu_check FILE REF WFILE
 *       1. up to 1 GiB of FILE at offset 777 into a device buffer at
 *          offset 123, compared with REF (a local copy of FILE);
 *       2. 4 threads, each its quarter of FILE at unaligned offsets into
 *          its own allocation, compared;
 *       3. a round trip: 96 MiB + 5 of a device buffer written to WFILE
 *          (new) with gpu_write, read back with read(2), compared;
 *       4. the batch call: 8 unaligned ranges in one call, compared;
 *       5. refusals: a host pointer, freed device memory and a range past
 *          its allocation are -EINVAL, nothing read.
 *       One line per case ("ok - ..." or "not ok - ...").
 *   gpu_check probe
 *       what the driver says, as name=value lines: driver (real or
 *       simulated), driver_version, devices, name, memory_mib, dmabuf,
 *       gpudirect_rdma, and where dma-bufs are supported whether the
 *       export GPUDirect asks for is made (dmabuf_export).
 *   gpu_check local REF WFILE
 *       no mount needed: libs3rdmafs's staging ring on ordinary files
 *       (read by pread(2), written by pwrite(2)): case 1 with REF itself
 *       (up to 1 GiB), and case 3 with WFILE.
 * Exit 77 (skipped) with the reason when there is no driver or no device.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
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
static void *ctx, *lib;
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
  const char *path = getenv("S3RDMAFS_CUDA_LIB");
  void *h = dlopen(path && *path ? path : "libcuda.so.1",
                   RTLD_NOW | RTLD_LOCAL);
  int dev, rc;

  lib = h;
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

static void *sym(const char *name) /* optional: NULL when absent */
{
  return dlsym(lib, name);
}

/* ---- probe: what the driver says ---- */

static int probe(void)
{
  int (*version)(int *) = (int (*)(int *))sym("cuDriverGetVersion");
  int (*count)(int *) = (int (*)(int *))sym("cuDeviceGetCount");
  int (*name)(char *, int, int) = (int (*)(char *, int, int))sym(
      "cuDeviceGetName");
  int (*mem)(size_t *, int) = (int (*)(size_t *, int))sym(
      "cuDeviceTotalMem_v2");
  int (*attr)(int *, int, int) = (int (*)(int *, int, int))sym(
      "cuDeviceGetAttribute");
  int (*get_handle)(int *, unsigned long long, size_t, int,
                    unsigned long long) =
      (int (*)(int *, unsigned long long, size_t, int, unsigned long long))
          sym("cuMemGetHandleForAddressRange");
  unsigned long long dev = 0;
  int v = 0, n = 0, dmabuf = -1, gdr = -1;
  char nm[256] = "unknown";
  size_t bytes = 0;

  printf("driver=%s\n", sym("fake_cuda_simulated") ? "simulated" : "real");
  if (version && !version(&v))
    printf("driver_version=%d.%d\n", v / 1000, v % 1000 / 10);
  if (count && !count(&n))
    printf("devices=%d\n", n);
  if (name && !name(nm, (int)sizeof(nm), 0))
    printf("name=%s\n", nm);
  if (mem && !mem(&bytes, 0))
    printf("memory_mib=%zu\n", bytes >> 20);
  /* CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED (124), _GPU_DIRECT_RDMA_SUPPORTED
     (116) */
  if (attr && !attr(&dmabuf, 124, 0))
    printf("dmabuf=%s\n", dmabuf ? "yes" : "no");
  if (attr && !attr(&gdr, 116, 0))
    printf("gpudirect_rdma=%s\n", gdr ? "yes" : "no");
  if (dmabuf > 0 && get_handle && !cu_alloc(&dev, 2 << 20)) {
    /* (CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD: 1) the export GPUDirect asks */
    int fd = -1, rc = get_handle(&fd, dev, 2 << 20, 1, 0);
    if (rc)
      printf("dmabuf_export=refused (CUDA error %d)\n", rc);
    else
      printf("dmabuf_export=ok\n");
    if (fd >= 0)
      close(fd);
    cu_free(dev);
  }
  return 0;
}

/* ---- 4. the batch call; 5. refusals ---- */

static int batch(int fd, int rfd)
{
  struct s3rdmafs_gpu_io io[8];
  unsigned long long dev = 0;
  size_t len = (size_t)(fsize / 16), want = 0;
  ssize_t n;
  int ok;

  if (cu_alloc(&dev, 8 * (len + 4096)))
    return 0;
  for (int i = 0; i < 8; i++) {
    io[i] = (struct s3rdmafs_gpu_io){
        (void *)(uintptr_t)(dev + (size_t)i * (len + 4096) + 17 * i),
        len - 31 * (size_t)i, (off_t)(fsize / 8) * i + 4093 * i, 0};
    want += io[i].size;
  }
  n = s3rdmafs_gpu_read_batch(fd, io, 8);
  ok = n == (ssize_t)want;
  for (int i = 0; ok && i < 8; i++)
    ok = io[i].result == (ssize_t)io[i].size &&
         same((uintptr_t)io[i].dev_ptr, io[i].off, io[i].size, rfd);
  cu_free(dev);
  return ok;
}

static int refusals(int fd)
{
  unsigned long long dev = 0;
  char host[4096];
  int ok;

  ok = s3rdmafs_gpu_read(fd, host, sizeof(host), 0) == -EINVAL;
  if (cu_alloc(&dev, 1 << 20))
    return 0;
  ok = ok && s3rdmafs_gpu_read(fd, (void *)(uintptr_t)(dev + 4096),
                               1 << 20, 0) == -EINVAL; /* past its end */
  cu_free(dev);
  return ok && s3rdmafs_gpu_read(fd, (void *)(uintptr_t)dev, 4096, 0) ==
                   -EINVAL; /* freed */
}

static int round_trip(const char *wfile)
{
  size_t wlen = (96u << 20) + 5;
  char *host = malloc(wlen), *back = malloc(wlen);
  unsigned long long dev = 0;
  int fd, ok;
  ssize_t n;

  if (!host || !back || cu_alloc(&dev, wlen))
    return 0;
  for (size_t i = 0; i < wlen; i++)
    host[i] = (char)(i * 7 + i / 99991);
  cu_htod(dev, host, wlen);
  fd = open(wfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  n = fd >= 0 ? s3rdmafs_gpu_write(fd, (void *)(uintptr_t)dev, wlen, 0)
              : -EBADF;
  ok = n == (ssize_t)wlen && !close(fd);
  if (ok) {
    fd = open(wfile, O_RDONLY);
    ok = fd >= 0 && pread(fd, back, wlen, 0) == (ssize_t)wlen &&
         !memcmp(back, host, wlen);
    close(fd);
  }
  cu_free(dev);
  free(host);
  free(back);
  return ok;
}

static int say(int ok, const char *what)
{
  printf("%s - %s\n", ok ? "ok" : "not ok", what);
  return !ok;
}

int main(int argc, char **argv)
{
  int rc, fd, rfd, fails = 0, quarters = 0;
  bool local;
  unsigned long long dev = 0;
  pthread_t t[4];
  struct stat st;
  char what[128];
  size_t len;
  ssize_t n;

  if (argc == 2 && !strcmp(argv[1], "probe"))
    return (rc = load()) ? rc : probe();
  if (argc != 4)
    return 2;
  if ((rc = load()))
    return rc;
  local = !strcmp(argv[1], "local");
  file = local ? argv[2] : argv[1];
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
  snprintf(what, sizeof(what), "%.1f MiB at 777 into device memory at +123",
           (double)len / (1 << 20));
  fails += say(n == (ssize_t)len && same(dev + 123, 777, len, rfd), what);
  cu_free(dev);
  if (local) {
    fails += say(round_trip(argv[3]),
                 "96 MiB + 5 from device memory, read back");
    return fails ? 1 : 0;
  }
  /* 2. four threads */
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, quarter, (void *)(intptr_t)i);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    quarters += r != NULL;
  }
  fails += say(!quarters, "4 threads, a quarter each, unaligned");
  /* 3. a round trip from device memory */
  fails += say(round_trip(argv[3]),
               "96 MiB + 5 from device memory, read back");
  fails += say(batch(fd, rfd), "the batch call: 8 unaligned ranges");
  fails += say(refusals(fd), "host pointer, freed memory, past the end: "
                             "EINVAL");
  close(fd);
  close(rfd);
  return fails ? 1 : 0;
}
