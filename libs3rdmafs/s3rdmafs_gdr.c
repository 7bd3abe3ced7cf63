/*
 * libs3rdmafs, GPUDirect (s3rdmafs_gdr.h; the daemon's side: fs/fsx_direct.c
 * and fsx_rdma_reg_dmabuf).
 *
 * DESIGN
 * - Per call: the device range, widened to whole pages (within its
 *   allocation's pages), exported as a dma-buf by the driver
 *   (cuMemGetHandleForAddressRange, DMA_BUF_FD), where the device says it
 *   can (cuDeviceGetAttribute DMA_BUF_SUPPORTED); its fd handed to the
 *   daemon (REGISTER_DMABUF: taken with pidfd_getfd as a memfd is, and
 *   registered with ibv_reg_dmabuf_mr), READs on that handle, then
 *   UNREGISTER and our fd closed. Nothing is kept across calls: an
 *   allocation freed and another made at its address would leave a
 *   registration naming the old memory (the cost: a registration per
 *   call, which a caller amortises with large reads).
 * - Refusals are remembered so that they are not asked again by any
 *   thread: the driver's per device (the attribute says no, or the export
 *   answers NOT_SUPPORTED), the daemon's per mount (its st_dev: EOPNOTSUPP,
 *   the data plane cannot register device memory; ENOTTY, a daemon older
 *   than this ioctl). Anything else (a failed export, EPERM, ENOSPC, a
 *   READ turned back for this mount's unflushed writes or a server that
 *   ignored the token) stages that call only: it may not last.
 * - Never proven on hardware here: exercised only against the tests'
 *   stand-in driver, where the daemon refuses (no verbs NIC).
 * - Threads: any; one mutex (lock) protects the two tables.
 */
#include "libs3rdmafs/s3rdmafs_gdr.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs_ioctl.h"

#define MAX_DEVS 64   /* devices whose answer is remembered */
#define MAX_MOUNTS 64 /* mounts whose refusal is remembered (then the oldest
                         is forgotten: asked once more) */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static signed char dev_can[MAX_DEVS]; /* lock: 0 not asked, 1 yes, -1 no */
static dev_t refused[MAX_MOUNTS];     /* lock: mounts whose daemon refused */
static unsigned nrefused;             /* lock: entries ever added */

static void remember_device(s3r_CUdevice d, bool can)
{
  pthread_mutex_lock(&lock);
  dev_can[d] = can ? 1 : -1;
  pthread_mutex_unlock(&lock);
}

/* May device d export dma-bufs? The driver is asked once. */
static bool device_can(const struct s3r_cuda *cu, s3r_CUdevice d)
{
  signed char k;
  int v = 0;

  if (d < 0 || d >= MAX_DEVS)
    return false;
  pthread_mutex_lock(&lock);
  k = dev_can[d];
  pthread_mutex_unlock(&lock);
  if (k)
    return k > 0;
  if (cu->DeviceGetAttribute(&v, S3R_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
                             d))
    v = 0;
  remember_device(d, v != 0);
  return v != 0;
}

static bool mount_refused(dev_t mnt)
{
  bool found = false;

  pthread_mutex_lock(&lock);
  for (unsigned i = 0; i < nrefused && i < MAX_MOUNTS && !found; i++)
    found = refused[i] == mnt;
  pthread_mutex_unlock(&lock);
  return found;
}

static void remember_mount(dev_t mnt)
{
  pthread_mutex_lock(&lock);
  refused[nrefused++ % MAX_MOUNTS] = mnt;
  pthread_mutex_unlock(&lock);
}

/* The dma-buf of [dev, dev + size) widened to pages: *fd, its length, and
   dev's offset in it. 0, or -EOPNOTSUPP (the driver or the range cannot). */
static int export(const struct s3r_cuda *cu, s3r_CUdevice d,
                  s3r_CUdeviceptr dev, size_t size, int *fd, size_t *len,
                  size_t *at)
{
  s3r_CUdeviceptr page = (s3r_CUdeviceptr)sysconf(_SC_PAGESIZE), start = 0;
  s3r_CUdeviceptr a0, a1, end;
  size_t range = 0;
  s3r_CUresult r;

  if (cu->PointerGetAttribute(&start, S3R_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                              dev) ||
      cu->PointerGetAttribute(&range, S3R_CU_POINTER_ATTRIBUTE_RANGE_SIZE, dev))
    return -EOPNOTSUPP;
  a0 = dev / page * page;
  a1 = (dev + size + page - 1) / page * page;
  end = (start + range + page - 1) / page * page;
  if (a0 < start / page * page || a1 > end)
    return -EOPNOTSUPP; /* not whole pages of its allocation */
  r = cu->MemGetHandleForAddressRange(fd, a0, (size_t)(a1 - a0),
                                      S3R_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                      0);
  if (r == S3R_CUDA_ERROR_NOT_SUPPORTED)
    remember_device(d, false);
  if (r)
    return -EOPNOTSUPP;
  *len = (size_t)(a1 - a0);
  *at = (size_t)(dev - a0);
  return 0;
}

/* READs into handle h from buf_off: 0 (*done: fewer at the end of the
   file) or -errno after *done bytes. */
static int read_all(int fd, uint64_t h, size_t buf_off, size_t size,
                    off_t off, size_t *done)
{
  while (*done < size) {
    struct s3rdmafs_ioc_read a = {.handle = h, .buf_off = buf_off + *done,
                                  .file_off = (uint64_t)off + *done,
                                  .len = size - *done};
    if (ioctl(fd, S3RDMAFS_IOC_READ, &a))
      return errno == EINTR ? -EINTR : -errno;
    if (!a.done)
      break; /* the end of the file */
    *done += a.done;
  }
  return 0;
}

int s3r_gdr_read(int fd, s3r_CUdeviceptr dev, size_t size, off_t off,
                 size_t *done)
{
  const struct s3r_cuda *cu = s3r_cuda_get();
  struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION};
  struct s3rdmafs_ioc_unregister u = {0};
  size_t len, at;
  s3r_CUdevice d;
  struct stat st;
  int dbuf = -1, rc;

  *done = 0;
  if (!cu || fstat(fd, &st) || mount_refused(st.st_dev) ||
      cu->CtxGetDevice(&d) || !device_can(cu, d) ||
      export(cu, d, dev, size, &dbuf, &len, &at))
    return -EOPNOTSUPP;
  a.fd = dbuf;
  a.len = len;
  rc = ioctl(fd, S3RDMAFS_IOC_REGISTER_DMABUF, &a) ? -errno : 0;
  close(dbuf); /* the daemon took its own (the registration holds it) */
  if (rc == -EOPNOTSUPP || rc == -ENOTTY)
    remember_mount(st.st_dev);
  if (rc)
    return -EOPNOTSUPP;
  rc = read_all(fd, a.handle, at, size, off, done);
  u.handle = a.handle;
  ioctl(fd, S3RDMAFS_IOC_UNREGISTER, &u);
  /* the NIC's writes made visible to the device's later work, where the
     driver can say so (else the device orders them itself) */
  if (*done && cu->FlushGPUDirectRDMAWrites &&
      cu->FlushGPUDirectRDMAWrites(S3R_CU_FLUSH_TARGET_CURRENT_CTX,
                                   S3R_CU_FLUSH_TO_OWNER))
    return rc ? rc : -EIO;
  return rc;
}
