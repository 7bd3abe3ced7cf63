/*
 * s3rdmafs_ioctl.h: the ioctls of a file on an s3rdmafs mount, shared by
 * the daemon (fs/direct/fsx_direct.c) and libs3rdmafs. Use the library, not
 * these: they may change with the daemon (S3RDMAFS_IOC_VERSION says).
 *
 * FUSE passes an ioctl on a regular file as a restricted one: the kernel
 * copies exactly _IOC_SIZE(cmd) bytes in and out, so every argument is a
 * fixed-size struct of fixed-width fields, never a pointer, and data never
 * travels in an ioctl. It travels through a registered buffer instead:
 *
 *   REGISTER   the caller's memfd (its fd number; sealed against shrinking)
 *              is taken by the daemon (pidfd_getfd(2): allowed only when
 *              the daemon may ptrace the caller, else EPERM), mapped
 *              shared and registered with the data plane; a handle back.
 *              It lasts until UNREGISTER or until the open file (the one
 *              the ioctl was made on) is closed for good.
 *   REGISTER_DMABUF  the same for a dma-buf of device memory (GPUDirect;
 *              flags: S3RDMAFS_REG_SOURCE for WRITEs' buffers, else READs';
 *              the fd from cuMemGetHandleForAddressRange, len its length,
 *              a page multiple): registered with the data plane's NIC
 *              (ibv_reg_dmabuf_mr), never mapped by the daemon. Only where
 *              the transport registers dma-bufs (rc, dc); elsewhere
 *              EOPNOTSUPP before the fd is taken, as after a failed
 *              registration (soft-RoCE): the library then stages.
 *   READ       file bytes [file_off, file_off + len) of the open file, as
 *              the file was when opened (or as this mount wrote it), into
 *              the registered buffer at buf_off; the byte count back (less
 *              at the end of the file). flags say which of the
 *              library's paths the read serves (counted by the daemon:
 *              direct.host_*, direct.staged_*; a dma-buf's reads are
 *              direct.gpudirect_*); unknown flags, or STAGED on a dma-buf
 *              handle: EINVAL. On a dma-buf handle, a read the server
 *              cannot write into device memory (this mount's unflushed
 *              writes, no data plane now, a server ignoring the token)
 *              is EOPNOTSUPP, or the bytes written into it before that.
 *   WRITE      the registered buffer's bytes at buf_off into the file
 *              at file_off (the open file must be open for writing); the
 *              byte count back. Where the file is written in order from
 *              empty and file_off is its end, at a part's start, whole
 *              parts go to the server at once from the buffer itself
 *              (tokens naming it: the server reads it; zero copy), the
 *              call waiting for them. The rest of a host buffer is copied
 *              into the write-back as write(2) would (sent at close or
 *              fsync, or as the stream goes on). A dma-buf registered
 *              with S3RDMAFS_REG_SOURCE can only go as whole parts: the
 *              count is then what went so (fewer than len, or
 *              EOPNOTSUPP for none): the library stages the rest.
 *              flags: as READ's (direct.*_writes counters).
 *   UNREGISTER drops a handle.
 */
#ifndef S3RDMAFS_IOCTL_H
#define S3RDMAFS_IOCTL_H

#include <linux/ioctl.h>
#include <stdint.h>

#define S3RDMAFS_IOC_VERSION 1
#define S3RDMAFS_IOC_MAGIC 0xb3

/* How READ was served (s3rdmafs_ioc_read.path). */
enum s3rdmafs_path {
  S3RDMAFS_PATH_CACHE = 1,   /* copied from the daemon's page cache */
  S3RDMAFS_PATH_RDMA = 2,    /* written into the buffer by the server */
  S3RDMAFS_PATH_WRITTEN = 3, /* this mount's unflushed writes */
  S3RDMAFS_PATH_HTTP = 4,    /* one GET whose body went into the buffer */
};

/* READ's and WRITE's flags: the path the call serves, for the daemon's
   counters (none: a host buffer, s3rdmafs_read_direct/_write_direct). */
#define S3RDMAFS_READ_STAGED 1u /* a slot of the GPU staging ring */
#define S3RDMAFS_READ_FLAGS 1u  /* every flag there is */
#define S3RDMAFS_WRITE_STAGED S3RDMAFS_READ_STAGED
#define S3RDMAFS_WRITE_FLAGS S3RDMAFS_READ_FLAGS

/* REGISTER_DMABUF's flags (REGISTER's must be 0) */
#define S3RDMAFS_REG_SOURCE 1u  /* the source of WRITEs, never READ into:
                                   registered for remote read only (any
                                   open mode); without it, for READs only
                                   (remote write: opened for writing) */
#define S3RDMAFS_REG_FLAGS 1u   /* every flag there is */

/* REGISTER and REGISTER_DMABUF */
struct s3rdmafs_ioc_register {
  uint32_t version;         /* in: S3RDMAFS_IOC_VERSION */
  int32_t fd;               /* in: the caller's memfd, or dma-buf */
  uint64_t len;             /* in: bytes of it to use, from offset 0 */
  uint64_t handle;          /* out */
  uint32_t flags;           /* in: S3RDMAFS_REG_* */
  uint32_t reserved32;
  uint64_t reserved[4];
};

struct s3rdmafs_ioc_unregister {
  uint64_t handle;
  uint64_t reserved[3];
};

struct s3rdmafs_ioc_read {
  uint64_t handle;          /* in */
  uint64_t buf_off;         /* in: where in the buffer */
  uint64_t file_off;        /* in */
  uint64_t len;             /* in */
  uint64_t done;            /* out: bytes read */
  uint32_t path;            /* out: enum s3rdmafs_path */
  uint32_t flags;           /* in: S3RDMAFS_READ_* */
  uint64_t reserved[4];
};

struct s3rdmafs_ioc_write {
  uint64_t handle;          /* in */
  uint64_t buf_off;         /* in: where in the buffer */
  uint64_t file_off;        /* in (an O_APPEND open: the end, whatever) */
  uint64_t len;             /* in */
  uint64_t done;            /* out: bytes written */
  uint32_t path;            /* out: enum s3rdmafs_path (RDMA, HTTP: all
                               sent as parts, by the server or in HTTP
                               bodies; WRITTEN: some or all bytes went
                               into the write-back, sent at close or
                               fsync or as the stream goes on) */
  uint32_t flags;           /* in: S3RDMAFS_WRITE_* */
  uint64_t reserved[4];
};

#define S3RDMAFS_IOC_REGISTER                                                  \
  _IOWR(S3RDMAFS_IOC_MAGIC, 1, struct s3rdmafs_ioc_register)
#define S3RDMAFS_IOC_UNREGISTER                                                \
  _IOW(S3RDMAFS_IOC_MAGIC, 2, struct s3rdmafs_ioc_unregister)
#define S3RDMAFS_IOC_READ _IOWR(S3RDMAFS_IOC_MAGIC, 3, struct s3rdmafs_ioc_read)
#define S3RDMAFS_IOC_REGISTER_DMABUF                                           \
  _IOWR(S3RDMAFS_IOC_MAGIC, 4, struct s3rdmafs_ioc_register)
#define S3RDMAFS_IOC_WRITE                                                     \
  _IOWR(S3RDMAFS_IOC_MAGIC, 5, struct s3rdmafs_ioc_write)

#endif
