/*
 * s3rdmafs_cuda: the part of the CUDA driver API libs3rdmafs uses, loaded
 * at run time (dlopen of libcuda.so.1, or of $S3RDMAFS_CUDA_LIB: the
 * tests' stand-in), so that neither the library nor the daemon needs CUDA
 * to build or run. The types and values are the driver API's own (its
 * documented ABI); the functions are looked up by the names libcuda.so.1
 * exports (the _v2 ones where the API renamed them).
 */
#ifndef S3RDMAFS_CUDA_H
#define S3RDMAFS_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int s3r_CUresult;
typedef unsigned long long s3r_CUdeviceptr;
typedef struct s3r_CUctx *s3r_CUcontext;
typedef struct s3r_CUstream *s3r_CUstream;
typedef struct s3r_CUevent *s3r_CUevent;
typedef int s3r_CUdevice;

enum {
  S3R_CUDA_SUCCESS = 0,
  S3R_CUDA_ERROR_OUT_OF_MEMORY = 2,
  S3R_CUDA_ERROR_NO_DEVICE = 100,
  S3R_CUDA_ERROR_NOT_SUPPORTED = 801,
  S3R_CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  S3R_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  S3R_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  S3R_CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
  S3R_CU_MEMORYTYPE_DEVICE = 2,
  S3R_CU_MEMHOSTREGISTER_PORTABLE = 1,
  S3R_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
  S3R_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
};

struct s3r_cuda {
  s3r_CUresult (*Init)(unsigned);
  s3r_CUresult (*DeviceGetCount)(int *);
  s3r_CUresult (*GetErrorString)(s3r_CUresult, const char **);
  s3r_CUresult (*PointerGetAttribute)(void *, int, s3r_CUdeviceptr);
  s3r_CUresult (*CtxPushCurrent)(s3r_CUcontext);
  s3r_CUresult (*CtxPopCurrent)(s3r_CUcontext *);
  s3r_CUresult (*MemHostRegister)(void *, size_t, unsigned);
  s3r_CUresult (*MemHostUnregister)(void *);
  s3r_CUresult (*StreamCreate)(s3r_CUstream *, unsigned);
  s3r_CUresult (*StreamDestroy)(s3r_CUstream);
  s3r_CUresult (*StreamSynchronize)(s3r_CUstream);
  s3r_CUresult (*EventCreate)(s3r_CUevent *, unsigned);
  s3r_CUresult (*EventDestroy)(s3r_CUevent);
  s3r_CUresult (*EventRecord)(s3r_CUevent, s3r_CUstream);
  s3r_CUresult (*EventSynchronize)(s3r_CUevent);
  s3r_CUresult (*MemcpyHtoDAsync)(s3r_CUdeviceptr, const void *, size_t,
                                  s3r_CUstream);
  s3r_CUresult (*MemcpyDtoHAsync)(void *, s3r_CUdeviceptr, size_t,
                                  s3r_CUstream);
  s3r_CUresult (*MemGetHandleForAddressRange)(void *, s3r_CUdeviceptr, size_t,
                                              int, unsigned long long);
  s3r_CUresult (*CtxGetDevice)(s3r_CUdevice *);
  s3r_CUresult (*DeviceGetAttribute)(int *, int, s3r_CUdevice);
  /* optional (NULL where the driver lacks it): target, scope */
  s3r_CUresult (*FlushGPUDirectRDMAWrites)(int, int);
};
/* cuFlushGPUDirectRDMAWrites: the current context, visible to its owner */
#define S3R_CU_FLUSH_TARGET_CURRENT_CTX 0
#define S3R_CU_FLUSH_TO_OWNER 100

/* The driver, loaded and initialised once (any thread): NULL with the
   reason in s3r_cuda_reason() when there is none or it has no device. */
#define S3R_HIDDEN __attribute__((visibility("hidden")))
S3R_HIDDEN const struct s3r_cuda *s3r_cuda_get(void);
S3R_HIDDEN const char *s3r_cuda_reason(void);
/* The calling thread's last failed CUDA call ("" if none). */
S3R_HIDDEN const char *s3r_gpu_last_error(void);
/* Forget it (each call starts afresh: an EIO of a later call is its own). */
S3R_HIDDEN void s3r_gpu_clear_error(void);
/* The CUDA call failed: said for this thread (s3r_gpu_last_error);
   -ENOMEM or -EIO. */
S3R_HIDDEN int s3r_cuda_fail(const char *call, s3r_CUresult r);
/* s3rdmafs_read_direct with READ flags (S3RDMAFS_READ_*: the path served,
   for the daemon's counters). */
S3R_HIDDEN ssize_t s3r_read_flags(int fd, void *buf, size_t size, off_t off,
                                  uint32_t flags);
/* READs (WRITEs, with write) of len bytes between fd's file at off and
   buffer handle h at buf_off: 0 (*done: fewer only at the end of the
   file), or -errno after *done bytes. */
S3R_HIDDEN int s3r_io(int fd, uint64_t h, size_t buf_off, size_t len,
                      off_t off, uint32_t flags, bool write, size_t *done);
/* s3rdmafs_write_direct with WRITE flags. */
S3R_HIDDEN ssize_t s3r_write_flags(int fd, const void *buf, size_t size,
                                   off_t off, uint32_t flags);
/* Memory as s3rdmafs_buf_alloc gives, registered with no file yet: each
   read or write with it registers it on its file (the GPU ring, made
   before it is known which files it will serve). */
S3R_HIDDEN void *s3r_buf_alloc_lazy(size_t size);

#endif
