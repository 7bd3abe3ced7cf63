/*
 * libs3rdmafs, GPU: reads into (and writes from) device memory, staged
 * through a pinned, registered host ring (API in s3rdmafs.h).
 *
 * DESIGN
 * - The CUDA driver is loaded at run time (s3rdmafs_cuda.h): no CUDA at
 *   build time, and without a driver or a device every GPU call returns
 *   -ENODEV at once, s3rdmafs_strerror saying why.
 * - Staged: each thread has a ring of NSLOTS slots of SLOT bytes, memory
 *   like s3rdmafs_buf_alloc's, registered with the daemon on the first
 *   read or write of each file (a slot is filled by read_direct with one
 *   copy in the daemon, or none with RDMA), pinned for the GPU
 *   (cuMemHostRegister). A read fills slot i while the copies of the
 *   slots before it to the device run on the ring's stream; a slot is
 *   filled again only after its copy's event has completed. A write runs
 *   the other way, by halves of the ring: one half copied from the device
 *   while the other is written (write_direct: its whole parts go to the
 *   server at once, from the slots themselves where RDMA is on; a daemon
 *   without WRITE: pwrite(2)).
 * - GPUDirect first (s3rdmafs_gdr.c): a dma-buf of the device range
 *   registered by the daemon with a verbs NIC (rc, dc), the server
 *   writing into device memory; where the driver or the daemon refuses
 *   (remembered there, per device or allocation and per mount), or for
 *   the rest of a
 *   read (write) it turned back, the staged ring. Each ring slot's READ
 *   and WRITE says it is staged (S3RDMAFS_READ_STAGED: the daemon's
 *   direct.staged_*). Writes by GPUDirect go as whole parts only (the
 *   dma-buf registered as a source the server reads).
 * - Threads: the ring is the calling thread's (made on first use, for the
 *   context of the device pointer; freed at thread exit); the driver
 *   table is set once (pthread_once).
 * - fork(): a child cannot use a CUDA driver its parent set up (the
 *   driver's rule): there every GPU call is -ENODEV, saying so; the
 *   forking thread's ring is forgotten in the child (its memory is
 *   dropped by s3rdmafs.c), never freed through the driver.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"
#include "libs3rdmafs/s3rdmafs_cuda.h"
#include "libs3rdmafs/s3rdmafs_gdr.h"
#include "libs3rdmafs/s3rdmafs_ioctl.h"

#define SLOT (8u << 20)
#define NSLOTS 4

/* ---- the driver ---- */

static struct s3r_cuda cuda;
static bool cuda_ok;
static char cuda_why[256];
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static pthread_key_t ring_key;
static bool ring_made; /* ring_key exists */

static void cuda_load(void)
{
  const char *lib = getenv("S3RDMAFS_CUDA_LIB");
  void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  const struct {
    const char *name;
    void **fn;
  } syms[] = {
      {"cuInit", (void **)&cuda.Init},
      {"cuDeviceGetCount", (void **)&cuda.DeviceGetCount},
      {"cuGetErrorString", (void **)&cuda.GetErrorString},
      {"cuPointerGetAttribute", (void **)&cuda.PointerGetAttribute},
      {"cuCtxPushCurrent_v2", (void **)&cuda.CtxPushCurrent},
      {"cuCtxPopCurrent_v2", (void **)&cuda.CtxPopCurrent},
      {"cuMemHostRegister_v2", (void **)&cuda.MemHostRegister},
      {"cuMemHostUnregister", (void **)&cuda.MemHostUnregister},
      {"cuStreamCreate", (void **)&cuda.StreamCreate},
      {"cuStreamDestroy_v2", (void **)&cuda.StreamDestroy},
      {"cuStreamSynchronize", (void **)&cuda.StreamSynchronize},
      {"cuEventCreate", (void **)&cuda.EventCreate},
      {"cuEventDestroy_v2", (void **)&cuda.EventDestroy},
      {"cuEventRecord", (void **)&cuda.EventRecord},
      {"cuEventSynchronize", (void **)&cuda.EventSynchronize},
      {"cuMemcpyHtoDAsync_v2", (void **)&cuda.MemcpyHtoDAsync},
      {"cuMemcpyDtoHAsync_v2", (void **)&cuda.MemcpyDtoHAsync},
      {"cuMemGetHandleForAddressRange",
       (void **)&cuda.MemGetHandleForAddressRange},
      {"cuCtxGetDevice", (void **)&cuda.CtxGetDevice},
      {"cuDeviceGetAttribute", (void **)&cuda.DeviceGetAttribute},
  };
  int n = 0;
  s3r_CUresult r;

  if (!h) {
    snprintf(cuda_why, sizeof(cuda_why), "no CUDA driver (%s)", dlerror());
    return;
  }
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
    if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
      snprintf(cuda_why, sizeof(cuda_why),
               "the CUDA driver lacks %s (too old?)", syms[i].name);
      return; /* (left loaded: a library may not be unloaded safely) */
    }
  *(void **)&cuda.FlushGPUDirectRDMAWrites =
      dlsym(h, "cuFlushGPUDirectRDMAWrites");
  if ((r = cuda.Init(0)) || (r = cuda.DeviceGetCount(&n)) || n < 1) {
    const char *s = NULL;
    if (r)
      cuda.GetErrorString(r, &s);
    snprintf(cuda_why, sizeof(cuda_why), "no GPU: %s",
             r ? (s ? s : "cuInit failed") : "the driver sees no device");
    return;
  }
  cuda_ok = true;
}

const struct s3r_cuda *s3r_cuda_get(void)
{
  pthread_once(&cuda_once, cuda_load);
  return cuda_ok ? &cuda : NULL;
}

const char *s3r_cuda_reason(void)
{
  pthread_once(&cuda_once, cuda_load);
  return cuda_ok ? "" : cuda_why;
}

/* ---- the calling thread's ring ---- */

struct ring {
  char *mem;                    /* NSLOTS * SLOT, registered and pinned */
  s3r_CUcontext ctx;
  s3r_CUstream stream;
  s3r_CUevent ev[NSLOTS];
  bool pending[NSLOTS];         /* a copy of the slot may still run */
};

static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static __thread char last_cuda[160]; /* the last CUDA failure, said */

int s3r_cuda_fail(const char *call, s3r_CUresult r)
{
  const char *s = NULL;

  cuda.GetErrorString(r, &s);
  snprintf(last_cuda, sizeof(last_cuda), "%s: %s", call, s ? s : "error");
  return r == S3R_CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}

const char *s3r_gpu_last_error(void)
{
  return last_cuda;
}

void s3r_gpu_clear_error(void)
{
  last_cuda[0] = '\0';
}

static void ring_free(void *p)
{
  struct ring *g = p;

  if (!g)
    return;
  if (!cuda.CtxPushCurrent(g->ctx)) {
    cuda.StreamSynchronize(g->stream);
    for (int i = 0; i < NSLOTS; i++)
      cuda.EventDestroy(g->ev[i]);
    cuda.StreamDestroy(g->stream);
    cuda.MemHostUnregister(g->mem);
    cuda.CtxPopCurrent(&g->ctx);
  }
  s3rdmafs_buf_free(g->mem);
  free(g);
}

static void ring_key_make(void)
{
  ring_made = !pthread_key_create(&ring_key, ring_free);
}

/* The child of a fork: the parent's driver and this thread's ring are not
   its own. */
static void gpu_fork_child(void)
{
  if (ring_made)
    pthread_setspecific(ring_key, NULL);
  if (cuda_ok) {
    cuda_ok = false;
    snprintf(cuda_why, sizeof(cuda_why),
             "CUDA was set up by the parent before fork(): a forked child "
             "cannot use it (the driver's rule; use the GPU from the parent, "
             "or from a process started by exec)");
  }
}

__attribute__((constructor)) static void gpu_init(void)
{
  pthread_atfork(NULL, NULL, gpu_fork_child);
}

/* The thread's ring for context ctx (current): made, or remade for
   another context. -errno. */
static int ring_get(s3r_CUcontext ctx, struct ring **out)
{
  struct ring *g;
  s3r_CUresult r;
  int i;

  pthread_once(&ring_once, ring_key_make);
  if (!ring_made)
    return -ENOMEM; /* (no thread-specific key could be made) */
  g = pthread_getspecific(ring_key);
  if (g && g->ctx == ctx) {
    *out = g;
    return 0;
  }
  if (g) { /* another context: its ring goes */
    pthread_setspecific(ring_key, NULL);
    ring_free(g);
  }
  if (!(g = calloc(1, sizeof(*g))))
    return -ENOMEM;
  g->ctx = ctx;
  if (!(g->mem = s3r_buf_alloc_lazy((size_t)NSLOTS * SLOT))) {
    int rc = -errno;
    free(g);
    return rc;
  }
  if ((r = cuda.MemHostRegister(g->mem, (size_t)NSLOTS * SLOT,
                                S3R_CU_MEMHOSTREGISTER_PORTABLE))) {
    s3rdmafs_buf_free(g->mem);
    free(g);
    return s3r_cuda_fail("cuMemHostRegister", r);
  }
  if ((r = cuda.StreamCreate(&g->stream, 0)))
    goto unregister;
  for (i = 0; i < NSLOTS; i++)
    if ((r = cuda.EventCreate(&g->ev[i], 0)))
      break;
  if (i == NSLOTS) {
    pthread_setspecific(ring_key, g);
    *out = g;
    return 0;
  }
  while (i-- > 0)
    cuda.EventDestroy(g->ev[i]);
  cuda.StreamDestroy(g->stream);
unregister:
  cuda.MemHostUnregister(g->mem);
  s3rdmafs_buf_free(g->mem);
  free(g);
  return s3r_cuda_fail("cuStreamCreate/cuEventCreate", r);
}

/* Device memory? Its context in *ctx. 0, -ENODEV, -EINVAL. */
static int device_ctx(const void *dev_ptr, size_t size, s3r_CUcontext *ctx)
{
  s3r_CUdeviceptr p = (s3r_CUdeviceptr)(uintptr_t)dev_ptr, start = 0;
  unsigned type = 0;
  size_t range = 0;

  if (!s3r_cuda_get())
    return -ENODEV;
  if (!dev_ptr ||
      cuda.PointerGetAttribute(&type, S3R_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ||
      type != S3R_CU_MEMORYTYPE_DEVICE ||
      cuda.PointerGetAttribute(ctx, S3R_CU_POINTER_ATTRIBUTE_CONTEXT, p) ||
      cuda.PointerGetAttribute(&start, S3R_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               p) ||
      cuda.PointerGetAttribute(&range, S3R_CU_POINTER_ATTRIBUTE_RANGE_SIZE, p))
    return -EINVAL; /* not a device allocation */
  if (p - start > range || size > range - (p - start))
    return -EINVAL; /* past the end of its allocation */
  return 0;
}

/* Wait for slot s's copy, if any. */
static int slot_wait(struct ring *g, int s)
{
  s3r_CUresult r;

  if (!g->pending[s])
    return 0;
  g->pending[s] = false;
  r = cuda.EventSynchronize(g->ev[s]);
  return r ? s3r_cuda_fail("cuEventSynchronize", r) : 0;
}

static int ring_drain(struct ring *g)
{
  s3r_CUresult r = cuda.StreamSynchronize(g->stream);

  for (int s = 0; s < NSLOTS; s++)
    g->pending[s] = false;
  return r ? s3r_cuda_fail("cuStreamSynchronize", r) : 0;
}

/* len bytes of fd at off into slot: read_direct, or pread(2) (*plain set
   for the rest of the call) where the daemon does not read for us:
   ENOTTY (not a file on an s3rdmafs mount), EACCES or EPERM (a mount not
   trusted with our memory, or that cannot take our descriptor); then the
   kernel's read, with its own checks. Fewer bytes only at the end of the
   file; -errno. */
static ssize_t read_slot(int fd, char *slot, size_t len, off_t off,
                         bool *plain)
{
  size_t got = 0;
  ssize_t n;

  if (!*plain) {
    n = s3r_read_flags(fd, slot, len, off, S3RDMAFS_READ_STAGED);
    if (n != -ENOTTY && n != -EACCES && n != -EPERM)
      return n;
    *plain = true;
  }
  while (got < len) {
    n = pread(fd, slot + got, len - got, off + (off_t)got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return got ? (ssize_t)got : -errno;
    if (!n)
      break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

/* Staged: slots filled by read_slot, copied to dev on the ring's stream.
   Bytes read (fewer at the end of the file, or before a failed read), or
   -errno; a failed CUDA call fails the whole read (what reached the device
   is not known). */
static ssize_t gpu_read_in(int fd, struct ring *g, s3r_CUdeviceptr dev,
                           size_t size, off_t off)
{
  size_t queued = 0;
  bool cuda_err = false, plain = false;
  int rc = 0, s = 0;

  while (queued < size) {
    size_t piece = size - queued < SLOT ? size - queued : SLOT;
    char *slot = g->mem + (size_t)s * SLOT;
    ssize_t n;
    s3r_CUresult r;

    if ((rc = slot_wait(g, s))) {
      cuda_err = true;
      break;
    }
    n = read_slot(fd, slot, piece, off + (off_t)queued, &plain);
    if (n <= 0) {
      rc = (int)n;
      break;
    }
    if ((r = cuda.MemcpyHtoDAsync(dev + queued, slot, (size_t)n, g->stream)) ||
        (r = cuda.EventRecord(g->ev[s], g->stream))) {
      rc = s3r_cuda_fail("cuMemcpyHtoDAsync", r);
      cuda_err = true;
      break;
    }
    g->pending[s] = true;
    queued += (size_t)n;
    s = (s + 1) % NSLOTS;
    if ((size_t)n < piece)
      break; /* the end of the file */
  }
  /* what was queued has arrived once the stream is drained */
  if (ring_drain(g)) {
    cuda_err = true;
    rc = rc ? rc : -EIO;
  }
  if (cuda_err)
    return rc;
  if (rc < 0 && !queued)
    return rc;
  return (ssize_t)queued;
}

/* The common start of a GPU call: dev_ptr's context pushed and the
   thread's ring for it in *g. 0; 1: nothing to do (size 0); -errno. */
static int enter(const void *dev_ptr, size_t size, off_t off,
                 struct ring **g)
{
  s3r_CUcontext ctx, prev;
  int rc;

  s3r_gpu_clear_error();
  if (off < 0)
    return -EINVAL;
  if ((rc = device_ctx(dev_ptr, size, &ctx)))
    return rc;
  if (!size)
    return 1;
  if (cuda.CtxPushCurrent(ctx))
    return -EIO;
  if ((rc = ring_get(ctx, g)))
    cuda.CtxPopCurrent(&prev);
  return rc;
}

static void leave(void)
{
  s3r_CUcontext prev;

  cuda.CtxPopCurrent(&prev);
}

ssize_t s3rdmafs_gpu_read_batch(int fd, struct s3rdmafs_gpu_io *ios, int n)
{
  ssize_t total = 0;
  int failed = 0;

  if (n < 0 || (n && !ios))
    return -EINVAL;
  for (int i = 0; i < n; i++) {
    ios[i].result = s3rdmafs_gpu_read(fd, ios[i].dev_ptr, ios[i].size,
                                      ios[i].off);
    if (ios[i].result < 0)
      failed = failed ? failed : (int)ios[i].result;
    else
      total += ios[i].result;
  }
  return failed ? failed : total;
}

/* Queue the copy of len bytes at dev into slot s, and its event. */
static int queue_dtoh(struct ring *g, int s, s3r_CUdeviceptr dev, size_t len)
{
  s3r_CUresult r = cuda.MemcpyDtoHAsync(g->mem + (size_t)s * SLOT, dev, len,
                                        g->stream);

  if (!r)
    r = cuda.EventRecord(g->ev[s], g->stream);
  g->pending[s] = !r;
  return r ? s3r_cuda_fail("cuMemcpyDtoHAsync", r) : 0;
}

/* The ring's two halves: one is written while the other is copied into. */
#define HALF_SLOTS (NSLOTS / 2)
#define HALF ((size_t)HALF_SLOTS * SLOT)

/* Queue the copies of len (at most HALF) bytes at dev into half h. */
static int queue_half(struct ring *g, int h, s3r_CUdeviceptr dev, size_t len)
{
  int rc = 0;

  for (int i = 0; i < HALF_SLOTS && len && !rc; i++) {
    size_t piece = len < SLOT ? len : SLOT;
    rc = queue_dtoh(g, h * HALF_SLOTS + i, dev, piece);
    dev += piece;
    len -= piece;
  }
  return rc;
}

static int half_wait(struct ring *g, int h)
{
  int rc = 0;

  for (int i = 0; i < HALF_SLOTS && !rc; i++)
    rc = slot_wait(g, h * HALF_SLOTS + i);
  return rc;
}

/* len bytes of p into fd at off: write_direct, or pwrite(2) where the
   daemon does not write for us (ENOTTY: off a mount, or a daemon that
   predates WRITE; EBADF: it will not register buffers on a file open only
   for writing; EACCES, EPERM: as read_slot). Bytes written, or -errno. */
static ssize_t write_slot(int fd, const char *p, size_t len, off_t off)
{
  ssize_t n = s3r_write_flags(fd, p, len, off, S3RDMAFS_WRITE_STAGED);
  size_t w = 0;

  if (n != -ENOTTY && n != -EBADF && n != -EACCES && n != -EPERM)
    return n;
  while (w < len) {
    ssize_t k = pwrite(fd, p + w, len - w, off + (off_t)w);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return w ? (ssize_t)w : k < 0 ? -errno : -EIO;
    w += (size_t)k;
  }
  return (ssize_t)w;
}

/* Staged: half the ring (two parts' worth: they go to the server at once)
   written while the other half is filled from dev. Bytes written, or
   -errno; a failed CUDA call fails the write. */
static ssize_t gpu_write_out(int fd, struct ring *g, s3r_CUdeviceptr dev,
                             size_t size, off_t off)
{
  size_t copied = 0, written = 0;
  int h = 0, rc;

  rc = queue_half(g, 0, dev, size < HALF ? size : HALF);
  copied = size < HALF ? size : HALF;
  while (written < size && !rc) {
    size_t piece = size - written < HALF ? size - written : HALF;
    ssize_t n;
    if ((rc = half_wait(g, h)))
      break;
    if (copied < size) { /* the other half fills meanwhile */
      size_t next = size - copied < HALF ? size - copied : HALF;
      if ((rc = queue_half(g, 1 - h, dev + copied, next)))
        break;
      copied += next;
    }
    n = write_slot(fd, g->mem + (size_t)h * HALF, piece, off + (off_t)written);
    if (n < 0) {
      rc = (int)n;
      break;
    }
    written += (size_t)n;
    if ((size_t)n < piece)
      rc = -EIO; /* (a host buffer's WRITE takes all, or fails) */
    h = 1 - h;
  }
  if (ring_drain(g) && !rc)
    rc = -EIO;
  return rc && (!written || s3r_gpu_last_error()[0]) ? rc
                                                     : (ssize_t)written;
}

/* gpu_read, or with write gpu_write. */
static ssize_t gpu_io(int fd, const void *dev_ptr, size_t size, off_t off,
                      bool write)
{
  s3r_CUdeviceptr dev = (s3r_CUdeviceptr)(uintptr_t)dev_ptr;
  struct ring *g = NULL;
  size_t done = 0;
  ssize_t n;
  int rc = enter(dev_ptr, size, off, &g);

  if (rc)
    return rc > 0 ? 0 : rc;
  /* GPUDirect where it can (a write: whole parts); the rest (or all)
     staged */
  rc = write ? s3r_gdr_write(fd, dev, size, off, &done)
             : s3r_gdr_read(fd, dev, size, off, &done);
  if (rc != -EOPNOTSUPP) {
    leave();
    return rc && !done ? rc : (ssize_t)done;
  }
  n = write ? gpu_write_out(fd, g, dev + done, size - done, off + (off_t)done)
            : gpu_read_in(fd, g, dev + done, size - done, off + (off_t)done);
  leave();
  if (n < 0) /* a CUDA failure fails the call; a file's, after bytes, not */
    return done && !s3r_gpu_last_error()[0] ? (ssize_t)done : n;
  return (ssize_t)(done + (size_t)n);
}

ssize_t s3rdmafs_gpu_read(int fd, void *dev_ptr, size_t size, off_t off)
{
  return gpu_io(fd, dev_ptr, size, off, false);
}

ssize_t s3rdmafs_gpu_write(int fd, const void *dev_ptr, size_t size,
                           off_t off)
{
  return gpu_io(fd, dev_ptr, size, off, true);
}

int s3rdmafs_gpu_stream_wait(const void *dev_ptr, unsigned long stream)
{
  s3r_CUcontext ctx, prev;
  s3r_CUresult r;
  int rc;

  s3r_gpu_clear_error();
  if (!stream)
    return 0;
  if ((rc = device_ctx(dev_ptr, 0, &ctx)))
    return rc;
  if (cuda.CtxPushCurrent(ctx))
    return -EIO;
  r = cuda.StreamSynchronize((s3r_CUstream)(uintptr_t)stream);
  cuda.CtxPopCurrent(&prev);
  return r ? s3r_cuda_fail("cuStreamSynchronize", r) : 0;
}
