/*
 * fsx_fdtake: a caller's descriptor made one of ours (pidfd_getfd), for
 * fsx_direct's registrations (a memfd, a dma-buf).
 *
 * Threads: the kernel lets us take another process's descriptor only if
 * we may ptrace it, and the daemon gives up CAP_SYS_PTRACE once its data
 * plane is open (fsx_rdma_open); so the descriptors are taken on a thread
 * of their own, started before that, which keeps the capabilities the
 * daemon had then (a root daemon serves root callers). One job at a time:
 * a caller posts it under the taker's lock and waits for its answer.
 * What the caller's /proc link names is checked before the descriptor is
 * taken (closing a taken descriptor of anything else, a FUSE file's, could
 * block in its flush); descriptors turned down after that are closed on
 * short-lived threads of their own (fsx_fdtake_close_later).
 */
#ifndef FSX_FDTAKE_H
#define FSX_FDTAKE_H

#include <sys/types.h>

/* What a descriptor's /proc link starts with: a memfd's, a dma-buf's. */
#define FSX_FD_MEMFD "/memfd:"
#define FSX_FD_DMABUF "/dmabuf:"

struct fsx_fdtake;

/* The taker thread, into *out: 0, -ENOMEM or -EAGAIN. */
int fsx_fdtake_start(struct fsx_fdtake **out);
/* Its end, once every job posted is answered; NULL does nothing. */
void fsx_fdtake_stop(struct fsx_fdtake *t);

/*
 * Process tgid's descriptor fd as a new one of ours, if its /proc link
 * starts with kind (FSX_FD_*), taken on t's thread (t NULL: on this
 * one): the descriptor, or -EBADF (no such descriptor), -EINVAL (another
 * kind), -EPERM (the kernel says we may not), -ESHUTDOWN (stopping), or
 * pidfd_open's or pidfd_getfd's errno.
 */
int fsx_fdtake(struct fsx_fdtake *t, pid_t tgid, int fd, const char *kind);

/* Is process tgid's fd number of kind (its /proc link; a dma-buf's fdinfo
   too, which no file system can fake)? 0: yes; -EBADF: no such
   descriptor; -EPERM: we may not look; -EINVAL: another kind. */
int fsx_fdtake_is(pid_t tgid, int fd, const char *kind);

/* Close fd on a thread of its own (at most 8 at once; past that it stays
   open and a warning says so: a leak, never a blocked FUSE thread). */
void fsx_fdtake_close_later(int fd);

#endif
