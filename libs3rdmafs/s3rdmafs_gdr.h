/*
 * s3rdmafs_gdr: GPUDirect reads and writes, inside libs3rdmafs
 * (s3rdmafs_gpu.c calls it before its staged ring): device memory
 * exported as a dma-buf and handed to the daemon, which registers it with
 * its verbs NIC, so that the S3 server writes into (reads from) the
 * device itself.
 */
#ifndef S3RDMAFS_GDR_H
#define S3RDMAFS_GDR_H

#include <stddef.h>
#include <sys/types.h>

#include "libs3rdmafs/s3rdmafs_cuda.h"

/*
 * size bytes of fd's file at off into device memory dev (inside an
 * allocation of the current context's device, size checked by the
 * caller). 0: read, *done bytes (fewer only at the end of the file);
 * -EOPNOTSUPP: not by GPUDirect, or only the first *done bytes: the
 * caller stages the rest; another -errno: the read failed after *done
 * bytes.
 */
S3R_HIDDEN int s3r_gdr_read(int fd, s3r_CUdeviceptr dev, size_t size,
                            off_t off, size_t *done);
/* The other way: size bytes of dev into fd's file at off. 0: all
   written; -EOPNOTSUPP: none by GPUDirect, or only the first *done bytes
   (whole parts): the caller stages the rest; another -errno: failed
   after *done bytes. */
S3R_HIDDEN int s3r_gdr_write(int fd, s3r_CUdeviceptr dev, size_t size,
                             off_t off, size_t *done);

#endif
