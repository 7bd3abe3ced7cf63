/*
 * libs3rdmafs: reads from a file on an s3rdmafs mount straight into the
 * caller's memory, skipping the copies of read(2) through FUSE.
 *
 *   int fd = open("/mnt/bucket/data.bin", O_RDONLY);
 *   void *buf = s3rdmafs_buf_alloc(fd, 64 << 20);
 *   ssize_t n = s3rdmafs_read_direct(fd, buf, 64 << 20, 0);
 *   if (n < 0) fprintf(stderr, "%s\n", s3rdmafs_strerror((int)n));
 *   s3rdmafs_buf_free(buf);
 *
 * Memory from s3rdmafs_buf_alloc is registered with the mount's daemon
 * (shared memory the daemon maps; with an RDMA data plane the S3 server
 * writes into it itself): a read into it costs the daemon one copy, or
 * none. Any other buffer works too, through a registered bounce buffer.
 *
 * Every call returns bytes (or 0) or a negative errno; s3rdmafs_strerror
 * says what it means here. Thread-safe. The daemon must be allowed to
 * take the caller's file descriptor (pidfd_getfd(2): it runs as the same
 * user, or as root): else -EPERM.
 */
#ifndef S3RDMAFS_H
#define S3RDMAFS_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* size bytes of registered memory for the mount fd's file is on (size
   rounded up to a page; zeroed). NULL with errno set: ENOTTY (not a file
   on an s3rdmafs mount), EPERM (the daemon may not take our descriptor),
   ENOMEM, EINVAL. */
void *s3rdmafs_buf_alloc(int fd, size_t size);
/* Free what s3rdmafs_buf_alloc returned (NULL: nothing). */
void s3rdmafs_buf_free(void *buf);

/* Up to size bytes of fd's file at off into buf, as the open file sees
   it (the version it opened, or this mount's writes); fewer only at the
   end of the file. Bytes read, or a negative errno. */
ssize_t s3rdmafs_read_direct(int fd, void *buf, size_t size, off_t off);

/* What a negative return (or errno) of this library means. */
const char *s3rdmafs_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
