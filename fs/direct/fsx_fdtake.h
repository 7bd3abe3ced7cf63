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
 * What the descriptor is, is asked of the kernel before it is taken (closing
 * a taken descriptor of anything else, a FUSE file's, could block in its
 * flush): a memfd by its fdinfo's mnt_id (the kernel's internal shmem
 * mount, as a memfd of our own shows it), a dma-buf by its fdinfo's
 * exp_name; never by the text of its /proc link, which a FUSE file system
 * mounted at /memfd:x in a user namespace fakes. It asks again of the
 * descriptor taken (the number may have been swapped meanwhile); one
 * turned down, there or by the caller, is closed on a short-lived thread
 * of its own (fsx_fdtake_close_later), counted until closed: at most
 * FSX_FDTAKE_CLOSING_UID per user and FSX_FDTAKE_CLOSING_MAX in all, a
 * user at the bound refused (-EAGAIN) before anything is taken. The
 * room is asked, and a refusal counted, on the one taker thread, so
 * callers at once cannot pass the bounds together.
 */
#ifndef FSX_FDTAKE_H
#define FSX_FDTAKE_H

#include <sys/types.h>

/* The kinds: a memfd's, a dma-buf's (what its /proc link starts with). */
#define FSX_FD_MEMFD "/memfd:"
#define FSX_FD_DMABUF "/dmabuf:"

/* Refused descriptors closing at once, per user and in all. */
#define FSX_FDTAKE_CLOSING_UID 4
#define FSX_FDTAKE_CLOSING_MAX 32

struct fsx_fdtake;

/* The taker thread, into *out: 0, -ENOMEM or -EAGAIN. */
int fsx_fdtake_start(struct fsx_fdtake **out);
/* Its end, once every job posted is answered; NULL does nothing. */
void fsx_fdtake_stop(struct fsx_fdtake *t);

/*
 * Process tgid's descriptor fd as a new one of ours, if it is of kind
 * (FSX_FD_*), taken on t's thread (t NULL: on this one) for user uid: the
 * descriptor, or -EAGAIN (uid's refused descriptors still closing are at
 * the bound, or all are), -EBADF (no such descriptor), -EINVAL (another
 * kind), -EPERM (the kernel says we may not), -ESHUTDOWN (stopping), or
 * pidfd_open's or pidfd_getfd's errno.
 */
int fsx_fdtake(struct fsx_fdtake *t, pid_t tgid, uid_t uid, int fd,
               const char *kind);

/* Is process tgid's fd number of kind (its fdinfo, which no file system
   can fake)? 0: yes; -EBADF: no such descriptor; -EPERM: we may not look;
   -EINVAL: another kind. */
int fsx_fdtake_is(pid_t tgid, int fd, const char *kind);

/* A descriptor taken for uid and turned down, closed on a thread of its
   own and counted until it is (never left open, never a blocked FUSE
   thread). */
void fsx_fdtake_close_later(uid_t uid, int fd);
/* Refused descriptors not yet closed, in all. */
unsigned fsx_fdtake_closing(void);

#endif
