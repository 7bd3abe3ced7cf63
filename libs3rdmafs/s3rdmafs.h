/*
 * libs3rdmafs: reads from a file on an s3rdmafs mount straight into the
 * caller's memory, and writes from it, skipping the copies of read(2) and
 * write(2) through FUSE.
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
 * Device memory (s3rdmafs_gpu_read, _write) goes through a pinned host
 * ring, or, where the driver exports dma-bufs and the daemon's data plane
 * (rc, dc) registers them, straight between the server and the device
 * (GPUDirect; unproven on hardware); the CUDA driver is loaded at run
 * time (libcuda.so.1, or the file $S3RDMAFS_CUDA_LIB names).
 *
 * Every call returns bytes (or 0) or a negative errno; s3rdmafs_strerror
 * says what it means here. The daemon must be allowed to take the
 * caller's file descriptor (pidfd_getfd(2): it runs as the same user, or
 * as root): else -EPERM.
 *
 * Trust: memory is handed only to the daemon of an s3rdmafs mount made
 * by root or by the caller's own user (the kernel's record of the
 * mount's owner; in a user namespace of its own, root's mounts only);
 * another user's FUSE mount gets none (-EACCES), whatever it calls
 * itself. A daemon that answers a byte count past what was asked fails
 * the call (-EIO): nothing it said is copied.
 *
 * Threads: every call is thread-safe. The bounce buffer and the GPU ring
 * are the calling thread's (made on first use, freed when it exits). A
 * registered buffer may be used by any number of threads at once, over
 * any number of files: it holds the daemon's handle for up to 64 open
 * files at a time (the least recently used idle one is given up for
 * another; a call finding all 64 in use waits for one), and gives up
 * idle handles of the process when the daemon's cap (512 per user) is
 * reached. The daemon also holds at most 64 registrations per open file
 * (forked children sharing the descriptor count too): past that, -ENOSPC.
 * A buffer must not be freed while a call uses it. No call is a
 * cancellation point.
 *
 * fork(): a child may use every call. Its bounce buffers are its own,
 * made on first use (never the parent's). A buffer from
 * s3rdmafs_buf_alloc made before the fork is shared memory, by design:
 * parent and child see the same bytes (as the daemon does), so a read
 * into it by one lands in the other's view too; the child may use it (it
 * is registered anew for the child), but give each process its own
 * buffer (s3rdmafs_buf_alloc in the child) unless the sharing is wanted.
 * A child of a process that has loaded the CUDA driver (any GPU call, or
 * s3rdmafs_strerror(-ENODEV)) cannot use the GPU calls (CUDA's rule:
 * -ENODEV, s3rdmafs_strerror says so); its host calls work.
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

/*
 * size bytes of buf into fd's file (open for writing) at off, as
 * pwrite(2) would. A new file written in order sends each whole part
 * (write.part_size) straight from registered memory: with an RDMA data
 * plane the S3 server reads the caller's pages itself, and the call
 * returns once the server has the part (so buf may be reused at once).
 * The rest is copied into the daemon's write-back (sent at close, fsync,
 * or as the file goes on), as write(2) would be, one copy instead of
 * two. Bytes written, or a negative errno; upload failures are reported
 * by close() or fsync(), as for write(2).
 */
ssize_t s3rdmafs_write_direct(int fd, const void *buf, size_t size,
                              off_t off);

/*
 * GPU memory (any pointer inside a cuMemAlloc/cudaMalloc allocation, of
 * the calling thread's device): the same as s3rdmafs_read_direct, by
 * GPUDirect where the driver and the daemon can (a refusal is remembered
 * per device or allocation, and per mount), else staged through a pinned
 * host ring registered with the daemon (the bytes of one slot copied to
 * the device while the next is read). The CUDA driver is loaded at run
 * time: without one, or without a device, -ENODEV at once
 * (s3rdmafs_strerror(-ENODEV) says why). A failed CUDA call fails the
 * read with -EIO (or -ENOMEM); a failed file read after some bytes
 * returns those bytes, as read(2) does. A file the daemon does not read
 * for the caller (not on an s3rdmafs mount; a mount not trusted with the
 * caller's memory) is staged through the same ring by pread(2), the
 * kernel's checks applying, as gpu_write falls back to pwrite(2).
 */
ssize_t s3rdmafs_gpu_read(int fd, void *dev_ptr, size_t size, off_t off);

/* Many ranges: each io's result is what s3rdmafs_gpu_read returned for
   it; the call returns the sum, or the first failure. */
struct s3rdmafs_gpu_io {
  void *dev_ptr;
  size_t size;
  off_t off;
  ssize_t result;
};
ssize_t s3rdmafs_gpu_read_batch(int fd, struct s3rdmafs_gpu_io *ios, int n);

/* size bytes of device memory into fd's file at off (a checkpoint: a new
   file written in order takes the streamed upload path): whole parts by
   GPUDirect where the driver and the daemon can (the server reads the
   device's memory), the rest (or all) staged through the same ring and
   written as s3rdmafs_write_direct does; bytes written or a negative
   errno. */
ssize_t s3rdmafs_gpu_write(int fd, const void *dev_ptr, size_t size,
                           off_t off);

/* Wait until the work queued on stream (a CUstream, or 1: the legacy
   default stream, 2: the per-thread one; 0: none, nothing to wait for)
   is done, in the context of the device that dev_ptr's memory is on:
   what __cuda_array_interface__'s "stream" asks of a consumer before it
   touches the memory. 0 or a negative errno (-ENODEV, -EINVAL as
   s3rdmafs_gpu_read; -EIO, the failed call said). */
int s3rdmafs_gpu_stream_wait(const void *dev_ptr, unsigned long stream);

/* What a negative return (or errno) of this library means. */
const char *s3rdmafs_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
