/*
 * libs3rdmafs, GPUDirect (s3rdmafs_gdr.h; the daemon's side:
 * fs/direct/fsx_direct.c,
 * fs/direct/fsx_direct_write.c and fsx_rdma_reg_dmabuf).
 *
 * DESIGN
 * - Per call: the device range, widened to whole pages (within its
 *   allocation's pages), exported as a dma-buf by the driver
 *   (cuMemGetHandleForAddressRange, DMA_BUF_FD), where the device says it
 *   can (cuDeviceGetAttribute DMA_BUF_SUPPORTED); its fd handed to the
 *   daemon (REGISTER_DMABUF: taken with pidfd_getfd as a memfd is, and
 *   registered with ibv_reg_dmabuf_mr: for a write, as a source the
 *   server only reads), READs (WRITEs) on that handle, then UNREGISTER
 *   and our fd closed. A WRITE takes whole parts at the end of a file
 *   written in order only; what it does not take is staged. Nothing is
 *   kept across calls: an allocation freed and another made at its
 *   address would leave a registration naming the old memory (the cost:
 *   a registration per call and per GiB, which a caller amortises with
 *   large reads).
 * - Refusals are remembered so that they are not asked again by any
 *   thread: the driver's per device (the attribute says no) or per
 *   allocation (the export answers NOT_SUPPORTED: that allocation cannot,
 *   others may), the daemon's per mount (its st_dev: EOPNOTSUPP,
 *   the data plane cannot register device memory; ENOTTY, a daemon older
 *   than this ioctl). Anything else (a failed export, EPERM, ENOSPC, a
 *   READ turned back for this mount's unflushed writes or a server that
 *   ignored the token, a WRITE not at a part's start) stages that call
 *   only: it may not last.
 * - Never proven on hardware here: exercised only against the tests'
 *   stand-in driver, where the daemon refuses (no verbs NIC).
 * - Threads: any; one mutex (lock) protects the two tables (held over
 *   fork(2), so that a child's copy is whole and unlocked).
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
#include "libs3rdmafs/s3rdmafs_mnt.h"

#define MAX_DEVS 64   /* devices whose answer is remembered */
#define MAX_KEYS 64   /* refusals a table remembers (then the oldest is
                         forgotten: asked once more) */
#define CHUNK ((size_t)1 << 30) /* bytes one registration covers at most */

/* Refusals remembered by key, the oldest forgotten first. */
struct refusals {
  uint64_t key[MAX_KEYS];
  unsigned n;                 /* entries ever added */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static signed char dev_can[MAX_DEVS]; /* lock: 0 not asked, 1 yes, -1 no */
static struct refusals mounts;        /* lock: mounts (st_dev) whose daemon
                                         refused */
/* lock: allocations (their start) the driver would not export: one
   allocated without dma-buf support (managed memory, a VMM allocation
   without the flag) says nothing of others */
static struct refusals allocs;

static void fork_prepare(void)
{
  pthread_mutex_lock(&lock);
}

static void fork_done(void)
{
  pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void gdr_init(void)
{
  pthread_atfork(fork_prepare, fork_done, fork_done);
}

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

/* Is key in t (with remember, it is from now on)? */
static bool refused(struct refusals *t, uint64_t key, bool remember)
{
  bool found = false;

  pthread_mutex_lock(&lock);
  for (unsigned i = 0; i < t->n && i < MAX_KEYS && !found; i++)
    found = t->key[i] == key;
  if (remember && !found)
    t->key[t->n++ % MAX_KEYS] = key;
  pthread_mutex_unlock(&lock);
  return found;
}

/* The dma-buf of [dev, dev + size) widened to pages: *fd, its length, and
   dev's offset in it. 0, or -EOPNOTSUPP (the driver, this allocation or
   the range cannot). */
static int export(const struct s3r_cuda *cu, s3r_CUdeviceptr dev,
                  size_t size, int *fd, size_t *len, size_t *at)
{
  s3r_CUdeviceptr page = (s3r_CUdeviceptr)sysconf(_SC_PAGESIZE), start = 0;
  s3r_CUdeviceptr a0, a1, end;
  size_t range = 0;
  s3r_CUresult r;

  if (cu->PointerGetAttribute(&start, S3R_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                              dev) ||
      cu->PointerGetAttribute(&range, S3R_CU_POINTER_ATTRIBUTE_RANGE_SIZE, dev))
    return -EOPNOTSUPP;
  if (refused(&allocs, start, false))
    return -EOPNOTSUPP; /* refused before: not asked again */
  a0 = dev / page * page;
  a1 = (dev + size + page - 1) / page * page;
  end = (start + range + page - 1) / page * page;
  if (a0 < start / page * page || a1 > end)
    return -EOPNOTSUPP; /* not whole pages of its allocation */
  r = cu->MemGetHandleForAddressRange(fd, a0, (size_t)(a1 - a0),
                                      S3R_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                      0);
  if (r == S3R_CUDA_ERROR_NOT_SUPPORTED)
    refused(&allocs, start, true);
  if (r)
    return -EOPNOTSUPP;
  *len = (size_t)(a1 - a0);
  *at = (size_t)(dev - a0);
  return 0;
}

/* One registration's worth of gdr_io (at most CHUNK bytes). */
static int gdr_chunk(int fd, s3r_CUdeviceptr dev, size_t size, off_t off,
                     size_t *done, bool write)
{
  const struct s3r_cuda *cu = s3r_cuda_get();
  struct s3rdmafs_ioc_register a = {.version = S3RDMAFS_IOC_VERSION};
  struct s3rdmafs_ioc_unregister u = {0};
  size_t len, at;
  s3r_CUdevice d;
  struct stat st;
  int dbuf = -1, rc;

  *done = 0;
  if (!cu || fstat(fd, &st) || refused(&mounts, st.st_dev, false) ||
      cu->CtxGetDevice(&d) || !device_can(cu, d))
    return -EOPNOTSUPP;
  if (s3r_mnt_trusted(fd))
    return -EOPNOTSUPP; /* no device memory for a daemon not trusted with
                           any, nor off a mount: staged (by pread(2)) */
  if (export(cu, dev, size, &dbuf, &len, &at))
    return -EOPNOTSUPP;
  a.fd = dbuf;
  a.len = len;
  a.flags = write ? S3RDMAFS_REG_SOURCE : 0;
  rc = ioctl(fd, S3RDMAFS_IOC_REGISTER_DMABUF, &a) ? -errno : 0;
  close(dbuf); /* the daemon took its own (the registration holds it) */
  if (rc == -EOPNOTSUPP || rc == -ENOTTY)
    refused(&mounts, st.st_dev, true);
  if (rc)
    return -EOPNOTSUPP;
  rc = s3r_io(fd, a.handle, at, size, off, 0, write, done);
  u.handle = a.handle;
  ioctl(fd, S3RDMAFS_IOC_UNREGISTER, &u);
  /* the NIC's writes made visible to the device's later work, where the
     driver can say so (else the device orders them itself) */
  if (!write && *done && cu->FlushGPUDirectRDMAWrites &&
      cu->FlushGPUDirectRDMAWrites(S3R_CU_FLUSH_TARGET_CURRENT_CTX,
                                   S3R_CU_FLUSH_TO_OWNER))
    return rc ? rc : -EIO;
  return rc;
}

/* s3r_gdr_read, or with write s3r_gdr_write: a registration per CHUNK
   bytes, so that a token's range never crosses a registration's segments
   (about 4 GiB) and the daemon's registrations stay small. */
static int gdr_io(int fd, s3r_CUdeviceptr dev, size_t size, off_t off,
                  size_t *done, bool write)
{
  int rc = 0;

  *done = 0;
  while (*done < size && !rc) {
    size_t piece = size - *done < CHUNK ? size - *done : CHUNK, got = 0;
    rc = gdr_chunk(fd, dev + *done, piece, off + (off_t)*done, &got, write);
    *done += got;
    if (!rc && got < piece)
      break; /* the end of the file */
  }
  return rc;
}

int s3r_gdr_read(int fd, s3r_CUdeviceptr dev, size_t size, off_t off,
                 size_t *done)
{
  return gdr_io(fd, dev, size, off, done, false);
}

int s3r_gdr_write(int fd, s3r_CUdeviceptr dev, size_t size, off_t off,
                  size_t *done)
{
  return gdr_io(fd, dev, size, off, done, true);
}
