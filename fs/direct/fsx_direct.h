/*
 * fsx_direct: reads into (and writes from, fsx_direct_write.c) a caller's
 * registered buffer, through ioctls on an open file (the protocol:
 * libs3rdmafs/s3rdmafs_ioctl.h; the caller's side: libs3rdmafs). One
 * copy where read(2) through FUSE makes two (page cache to the reply, the
 * reply to the reader), and none when the data plane is active: the
 * server writes into the caller's memory itself.
 *
 * DESIGN
 * - Who may: REGISTER takes the caller's memfd with pidfd_getfd(2). The
 *   kernel allows that only when the daemon may ptrace the caller
 *   (PTRACE_MODE_ATTACH_REALCREDS: the same user, or CAP_SYS_PTRACE), and
 *   its EPERM goes back to the caller as it is: no other way in exists.
 *   pidfd_getfd runs on a thread of its own (fsx_fdtake), started
 *   before the data plane opens: cma makes the daemon give up
 *   CAP_SYS_PTRACE (so that the gateway may reach it), and capabilities
 *   are per thread, so that thread keeps what the daemon was given (a
 *   root daemon may then take a root caller's fd; without CAP_SYS_PTRACE
 *   the kernel refuses a caller with capabilities the daemon lacks).
 *   The descriptor must name a memfd before it is taken (its /proc link:
 *   closing anything else could block in a flush; one swapped meanwhile
 *   is closed on a thread of its own), be on tmpfs (not hugetlbfs, whose
 *   pages a punched hole takes away), and be sealed against shrinking
 *   (a caller's truncate would otherwise turn the daemon's next write
 *   into its mapping into SIGBUS) and not against writing, and as long as
 *   the length asked.
 * - GPUDirect: REGISTER_DMABUF hands over a dma-buf of device memory.
 *   The data plane is asked first (fsx_rdma_dmabuf_ok: rc or dc, active):
 *   anything else is EOPNOTSUPP before any descriptor is taken (cma, off,
 *   a server ignoring tokens), as is a failed ibv_reg_dmabuf_mr
 *   (soft-RoCE); counted in direct.gpudirect_refused, said once in the
 *   log. The fd must be a dma-buf, before and after it is taken: its
 *   /proc link, which anyone can fake with a file system mounted at
 *   "/dmabuf:..." in a namespace of theirs, and its fdinfo's exp_name,
 *   which only the kernel's dma-buf code prints (fsx_fdtake_is); and, for
 *   READs, open for reading and writing (the server writes into it; the
 *   NIC's registration would not ask): registered for local and remote
 *   write only; for WRITEs (S3RDMAFS_REG_SOURCE), open for reading:
 *   registered for remote read only (fsx_rdma_reg_dmabuf). Never mapped,
 *   and closed at once (the registration holds the dma-buf). WRITEs:
 *   fsx_direct_write.c. Its READs are GETs whose
 *   tokens name the registration, sent only when every one has its token
 *   (-EAGAIN: no rc session now); a body (a server that ignored the
 *   token) lands in scratch memory that is touched only then, and turns
 *   the read back (EOPNOTSUPP, or the bytes before it), as do this
 *   mount's unflushed writes: the library stages those. A transfer whose
 *   deadline cannot be waited out drops the registration at once
 *   (deregistering revokes the server's access).
 *   Never exercised against a verbs NIC that registers dma-bufs: none is
 *   here, and soft-RoCE has no dma-buf registration.
 * - READ's flags name the library's path (S3RDMAFS_READ_STAGED: a GPU
 *   staging slot, none: a host buffer): counted per path with the
 *   dma-buf reads (direct.host_*, direct.staged_*, direct.gpudirect_*).
 * - A file opened only for writing reads nothing, one opened only for
 *   reading writes nothing (EBADF): ioctls are not checked against the
 *   open's mode by the kernel. Either may register buffers.
 * - A registration belongs to the open file it was made on (kept here per
 *   open file, under this module's lock; at most FSX_DIRECT_REGS,
 *   FSX_DIRECT_USER_REGS
 *   per user, FSX_DIRECT_MOUNT_REGS on the mount) and to the process that
 *   made it (its pid and start
 *   time: only it may use it); it goes with UNREGISTER or with the
 *   open file's release (or the unmount, for open files never released:
 *   a session ended with them open). The FUSE operation is fsx_op_ioctl
 *   (fsx_fops.c). A mapping a server may still
 *   write into (fsx_rdma_run: retired) is never unmapped.
 * - READ serves the file as the open file sees it: this mount's unflushed
 *   writes from the write-back (fsx_wb_read); else, with the data plane
 *   active, one ranged GET, If-Match the open version, whose token names
 *   the buffer; else through the page cache (fsx_read), copied.
 * - Threads: any FUSE thread. A registration in use by a READ is counted
 *   (busy, under this module's lock); UNREGISTER unlinks it at once and the
 *   last user unmaps it.
 */
#ifndef S3R_FSX_DIRECT_H
#define S3R_FSX_DIRECT_H

#include <stdbool.h>
#include <sys/types.h>

struct fsx_mount;
struct fsx_fh;

/* Registrations (memfds and dma-bufs alike) per open file and per mount
   at most, and the longest. */
#define FSX_DIRECT_REGS 64
#define FSX_DIRECT_MOUNT_REGS 4096
/* per user (the caller's uid): an eighth of the mount's, so that one
   user cannot take them all */
#define FSX_DIRECT_USER_REGS 512
#define FSX_DIRECT_LEN_MAX (64ull << 30)

/* Is cmd one of the ioctls (libs3rdmafs/s3rdmafs_ioctl.h)? */
bool fsx_direct_cmd(unsigned int cmd);
/*
 * Run ioctl cmd for thread tid of user uid (the FUSE request's caller)
 * on open file fh, its argument struct in arg (_IOC_SIZE(cmd) bytes, read
 * and written). 0, or -errno as the caller should see it.
 */
int fsx_direct_ioctl(struct fsx_mount *m, struct fsx_fh *fh, pid_t tid,
                     uid_t uid, unsigned int cmd, void *arg);

/* The taker thread (before fsx_rdma_open: it keeps the capabilities the
   daemon has then), and its end. 0 or -errno. */
int fsx_direct_start(struct fsx_mount *m);
void fsx_direct_stop(struct fsx_mount *m);
/* Every open file's registrations released (the session ended with them
   open: a lazy unmount, an abort), before the data plane closes (a
   dma-buf's must be deregistered first); fsx_direct_stop does it too. */
void fsx_direct_release_all(struct fsx_mount *m);

/* The open file is released: its registrations unmapped. */
void fsx_direct_release(struct fsx_mount *m, const struct fsx_fh *fh);

#endif
