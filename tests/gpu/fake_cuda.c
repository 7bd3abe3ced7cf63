/*
 * fake_cuda: a stand-in for the CUDA driver (libcuda.so.1) for the gpu-sim
 * tests: libs3rdmafs loads it through $S3RDMAFS_CUDA_LIB. Everything it
 * does is simulated, and every result obtained with it is called so.
 *
 * - "Device memory" (cuMemAlloc) is host memory the fake keeps a table
 *   of: cuPointerGetAttribute knows its context, type and range, and
 *   refuses anything else, as the driver does for plain host memory.
 * - A stream is a worker thread running its copies and event records in
 *   order, each copy after $FAKECUDA_DELAY_US microseconds (default 30000,
 *   longer than filling a slot from RGW takes):
 *   a caller that reuses a host buffer before its copy's event completed
 *   copies the wrong bytes, as it would on a GPU.
 * - $FAKECUDA_DEVICES: how many devices cuDeviceGetCount reports (1).
 * - $FAKECUDA_FAIL=NAME:N: the Nth call of the function NAME (as exported,
 *   e.g. cuMemcpyHtoDAsync_v2) and every later one fail with
 *   CUDA_ERROR_UNKNOWN (999); for a copy, the failure also shows at the
 *   stream's next synchronization, as the driver reports async errors.
 * - dma-buf export (GPUDirect), chosen by $FAKECUDA_DMABUF:
 *     unset, "none"  the device says it cannot (cuDeviceGetAttribute
 *                    DMA_BUF_SUPPORTED 0); an export asked anyway is
 *                    refused (CUDA_ERROR_NOT_SUPPORTED)
 *     "refuse"       the device says it can, the export is refused
 *                    (CUDA_ERROR_NOT_SUPPORTED), as a driver without
 *                    the kernel's support does
 *     "fail"         the device says it can, the export fails
 *                    (CUDA_ERROR_UNKNOWN: not a refusal)
 *     "export"       the export succeeds: an fd of a memfd named
 *                    "fake-dmabuf" as long as the range. Not a dma-buf
 *                    (nothing here makes one of "device memory"): a daemon
 *                    with a verbs transport would reject its /proc name;
 *                    without one it refuses before looking at it.
 *   Allocations are page-aligned, as the driver's are, so that a range
 *   widened to pages stays inside its allocation.
 * - Synchronous copies (cuMemcpyHtoD, cuMemcpyDtoH) and the primary
 *   context, for gpu_check.c, the real-GPU check, run against it too.
 * - Counters for the tests: fake_cuda_stats(), fake_cuda_dmabuf_stats().
 * - fake_cuda_simulated: an exported string, by which a program (bench's
 *   gpu_bw) tells that it runs against this stand-in.
 *
 * The signatures are the driver API's; where the toolkit's cuda.h is
 * found at build time (FAKE_CUDA_HEADER), it is included, so the compiler
 * checks them against it.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FAKE_CUDA_HEADER
#include <cuda.h>
#else
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef int CUpointer_attribute;
typedef int CUmemRangeHandleType;
typedef int CUdevice;
typedef int CUdevice_attribute;
#define CUDAAPI
#endif

#define EXPORT __attribute__((visibility("default")))
#define OK 0
#define E_INVALID 1
#define E_NOMEM 2
#define E_NOT_SUPPORTED 801
#define E_UNKNOWN 999

/* ---- failure injection ---- */

static _Atomic unsigned long calls[32];

static int fail_now(int id, const char *name)
{
  const char *f = getenv("FAKECUDA_FAIL");
  unsigned long n = atomic_fetch_add(&calls[id], 1) + 1;
  size_t len = strlen(name);

  return f && !strncmp(f, name, len) && f[len] == ':' &&
         n >= strtoul(f + len + 1, NULL, 10);
}

/* ---- "device memory" ---- */

struct alloc {
  char *p;
  size_t len;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc allocs[256];          /* lock */
static int ctx_token;                     /* the one context's address */
static __thread int pushed;               /* contexts pushed, this thread */
static _Atomic unsigned long host_registered, copies, dmabuf_refused,
    dmabuf_asked, dmabuf_exported;

static const struct alloc *find(CUdeviceptr p)
{
  for (int i = 0; i < 256; i++)
    if (allocs[i].p && p >= (CUdeviceptr)(uintptr_t)allocs[i].p &&
        p < (CUdeviceptr)(uintptr_t)allocs[i].p + allocs[i].len)
      return &allocs[i];
  return NULL;
}

EXPORT CUresult CUDAAPI cuInit(unsigned int flags)
{
  (void)flags;
  return fail_now(0, "cuInit") ? E_UNKNOWN : OK;
}

EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count)
{
  const char *d = getenv("FAKECUDA_DEVICES");

  *count = d ? atoi(d) : 1;
  return OK;
}

EXPORT CUresult CUDAAPI cuGetErrorString(CUresult e, const char **s)
{
  *s = e == E_UNKNOWN ? "unknown error (simulated)"
       : e == E_NOT_SUPPORTED ? "operation not supported (simulated)"
       : e == E_NOMEM ? "out of memory (simulated)"
       : e == E_INVALID ? "invalid argument (simulated)"
                        : "error (simulated)";
  return OK;
}

EXPORT CUresult CUDAAPI cuDeviceGet(int *dev, int ordinal)
{
  int n;

  cuDeviceGetCount(&n);
  if (ordinal < 0 || ordinal >= n)
    return E_INVALID;
  *dev = ordinal;
  return OK;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, int dev)
{
  (void)dev;
  *ctx = (CUcontext)(void *)&ctx_token;
  return OK;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(int dev)
{
  (void)dev;
  return OK;
}

/* synchronous copies (no stream: at once) */
EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                        size_t len)
{
  memcpy((void *)(uintptr_t)dst, src, len);
  return OK;
}

EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len)
{
  memcpy(dst, (const void *)(uintptr_t)src, len);
  return OK;
}

EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t len)
{
  char *p = aligned_alloc(4096, (len + 4095) / 4096 * 4096 + 4096 * !len);

  if (!p)
    return E_NOMEM;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 256; i++)
    if (!allocs[i].p) {
      allocs[i] = (struct alloc){p, len};
      pthread_mutex_unlock(&lock);
      *dptr = (CUdeviceptr)(uintptr_t)p;
      return OK;
    }
  pthread_mutex_unlock(&lock);
  free(p);
  return E_NOMEM;
}

EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 256; i++)
    if (allocs[i].p && (CUdeviceptr)(uintptr_t)allocs[i].p == dptr) {
      free(allocs[i].p);
      allocs[i].p = NULL;
      pthread_mutex_unlock(&lock);
      return OK;
    }
  pthread_mutex_unlock(&lock);
  return E_INVALID;
}

EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data,
                                              CUpointer_attribute attr,
                                              CUdeviceptr ptr)
{
  const struct alloc *a;
  CUresult rc = OK;

  pthread_mutex_lock(&lock);
  a = find(ptr);
  if (!a)
    rc = E_INVALID;
  else if (attr == 1) /* CONTEXT */
    *(CUcontext *)data = (CUcontext)(void *)&ctx_token;
  else if (attr == 2) /* MEMORY_TYPE: DEVICE */
    *(unsigned *)data = 2;
  else if (attr == 11) /* RANGE_START_ADDR */
    *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)a->p;
  else if (attr == 12) /* RANGE_SIZE */
    *(size_t *)data = a->len;
  else
    rc = E_INVALID;
  pthread_mutex_unlock(&lock);
  return rc;
}

EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
  if (ctx != (CUcontext)(void *)&ctx_token)
    return E_INVALID;
  pushed++;
  return OK;
}

EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *ctx)
{
  if (!pushed)
    return E_INVALID;
  pushed--;
  if (ctx)
    *ctx = (CUcontext)(void *)&ctx_token;
  return OK;
}

EXPORT CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t len,
                                             unsigned int flags)
{
  (void)p;
  (void)len;
  (void)flags;
  if (fail_now(1, "cuMemHostRegister_v2"))
    return E_UNKNOWN;
  atomic_fetch_add(&host_registered, 1);
  return OK;
}

EXPORT CUresult CUDAAPI cuMemHostUnregister(void *p)
{
  (void)p;
  atomic_fetch_sub(&host_registered, 1);
  return OK;
}

/* ---- streams: a worker thread each ---- */

struct op {
  struct op *next;
  void *dst;
  const void *src;
  size_t len;
  bool fail;
  unsigned long seq;            /* an event record: its number */
};

struct CUstream_st {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  struct op *head, *tail;       /* mu */
  unsigned long queued, done;   /* mu: ops */
  bool stop, failed;            /* mu */
};

struct CUevent_st {
  CUstream stream;
  unsigned long at;             /* the op count it waits for */
};

static void *worker(void *arg)
{
  struct CUstream_st *s = arg;
  const char *d = getenv("FAKECUDA_DELAY_US");
  unsigned delay = d ? (unsigned)atoi(d) : 30000;

  pthread_mutex_lock(&s->mu);
  for (;;) {
    struct op *o = s->head;
    if (!o) {
      if (s->stop)
        break;
      pthread_cond_wait(&s->cond, &s->mu);
      continue;
    }
    pthread_mutex_unlock(&s->mu);
    if (o->len) {
      usleep(delay);
      if (!o->fail)
        memcpy(o->dst, o->src, o->len);
      atomic_fetch_add(&copies, 1);
    }
    pthread_mutex_lock(&s->mu);
    s->head = o->next;
    if (!s->head)
      s->tail = NULL;
    s->failed |= o->fail;
    s->done++;
    free(o);
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *out, unsigned int flags)
{
  struct CUstream_st *s = calloc(1, sizeof(*s));

  (void)flags;
  if (!s)
    return E_NOMEM;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->thread, NULL, worker, s)) {
    free(s);
    return E_NOMEM;
  }
  *out = s;
  return OK;
}

static unsigned long enqueue(CUstream s, void *dst, const void *src,
                             size_t len, bool fail)
{
  struct op *o = calloc(1, sizeof(*o));
  unsigned long at;

  if (!o)
    return 0;
  *o = (struct op){NULL, dst, src, len, fail, 0};
  pthread_mutex_lock(&s->mu);
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  at = ++s->queued;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->mu);
  return at;
}

/* Wait until op number at is done; its stream's sticky failure. */
static CUresult wait_for(CUstream s, unsigned long at)
{
  CUresult rc;

  pthread_mutex_lock(&s->mu);
  while (s->done < at)
    pthread_cond_wait(&s->cond, &s->mu);
  rc = s->failed ? E_UNKNOWN : OK;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
  unsigned long at;

  if ((uintptr_t)s <= 2)
    return OK; /* the default streams (legacy, per-thread): none queued */
  pthread_mutex_lock(&s->mu);
  at = s->queued;
  pthread_mutex_unlock(&s->mu);
  return wait_for(s, at);
}

EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream s)
{
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mu);
  free(s);
  return OK;
}

EXPORT CUresult CUDAAPI cuEventCreate(CUevent *out, unsigned int flags)
{
  (void)flags;
  *out = calloc(1, sizeof(**out));
  return *out ? OK : E_NOMEM;
}

EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent e)
{
  free(e);
  return OK;
}

EXPORT CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
  e->stream = s;
  e->at = enqueue(s, NULL, NULL, 0, false);
  return e->at ? OK : E_NOMEM;
}

EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
  return e->stream ? wait_for(e->stream, e->at) : OK;
}

static CUresult copy(int id, const char *name, void *dst, const void *src,
                     size_t len, CUstream s)
{
  bool f = fail_now(id, name);

  if (!enqueue(s, dst, src, len, f))
    return E_NOMEM;
  return OK; /* a failure shows at the next synchronization */
}

EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                             size_t len, CUstream s)
{
  return copy(2, "cuMemcpyHtoDAsync_v2", (void *)(uintptr_t)dst, src, len, s);
}

EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src,
                                             size_t len, CUstream s)
{
  return copy(3, "cuMemcpyDtoHAsync_v2", dst, (const void *)(uintptr_t)src,
              len, s);
}

/* $FAKECUDA_DMABUF, or "none" */
static const char *dmabuf_mode(void)
{
  const char *m = getenv("FAKECUDA_DMABUF");

  return m && *m ? m : "none";
}

EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute attr,
                                             CUdevice dev)
{
  (void)dev;
  if (attr == 124) /* DMA_BUF_SUPPORTED */
    *v = strcmp(dmabuf_mode(), "none") != 0;
  else
    *v = 0;
  return OK;
}

EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *dev)
{
  if (!pushed)
    return 201; /* CUDA_ERROR_INVALID_CONTEXT */
  *dev = 0;
  return OK;
}

EXPORT CUresult CUDAAPI cuMemGetHandleForAddressRange(
    void *handle, CUdeviceptr dptr, size_t size,
    CUmemRangeHandleType type, unsigned long long flags)
{
  const char *mode = dmabuf_mode();
  const struct alloc *a;
  int fd;

  atomic_fetch_add(&dmabuf_asked, 1);
  pthread_mutex_lock(&lock);
  a = find(dptr);
  pthread_mutex_unlock(&lock);
  if (!a || type != 1 || flags || dptr % 4096 || size % 4096 || !size)
    return E_INVALID;
  if (!strcmp(mode, "fail"))
    return E_UNKNOWN;
  if (strcmp(mode, "export")) {
    atomic_fetch_add(&dmabuf_refused, 1);
    return E_NOT_SUPPORTED;
  }
  fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)size)) {
    if (fd >= 0)
      close(fd);
    return E_NOMEM;
  }
  *(int *)handle = fd;
  atomic_fetch_add(&dmabuf_exported, 1);
  return OK;
}

/* For the tests: dma-buf exports asked for, made, refused. */
EXPORT void fake_cuda_dmabuf_stats(unsigned long *asked,
                                   unsigned long *exported,
                                   unsigned long *refused);
EXPORT void fake_cuda_dmabuf_stats(unsigned long *asked,
                                   unsigned long *exported,
                                   unsigned long *refused)
{
  *asked = dmabuf_asked;
  *exported = dmabuf_exported;
  *refused = dmabuf_refused;
}

/* pinned host memory, for gpu_bw's reference copy */
EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t len)
{
  *pp = aligned_alloc(4096, (len + 4095) / 4096 * 4096 + 4096 * !len);
  return *pp ? OK : E_NOMEM;
}

EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
  free(p);
  return OK;
}

/* what gpu_check probe reports */
EXPORT CUresult CUDAAPI cuDriverGetVersion(int *v)
{
  *v = 12040;
  return OK;
}

EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
  (void)dev;
  snprintf(name, (size_t)len, "stand-in device (simulated)");
  return OK;
}

EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
  (void)dev;
  *bytes = (size_t)16 << 30;
  return OK;
}

/* The marker of the stand-in: a real libcuda.so.1 has no such symbol. */
EXPORT const char fake_cuda_simulated[] =
    "s3rdmafs's stand-in CUDA driver (tests/gpu/fake_cuda.c): simulated";

/* For the tests: host buffers pinned now, copies run, dma-bufs refused. */
EXPORT void fake_cuda_stats(unsigned long *pinned, unsigned long *ncopies,
                            unsigned long *refused);
EXPORT void fake_cuda_stats(unsigned long *pinned, unsigned long *ncopies,
                            unsigned long *refused)
{
  *pinned = host_registered;
  *ncopies = copies;
  *refused = dmabuf_refused;
}
