/*
 * rdx_helper: cma's process_vm_readv/writev run with the requesting peer's
 * credentials, so that the kernel's own check (ptrace_may_access with
 * PTRACE_MODE_ATTACH_REALCREDS: uids and gids, capabilities, dumpable,
 * Yama, an execve racing the call) decides at the moment of each call
 * whether the peer may reach the process its token names.
 *
 * How: helper processes forked from the server, each holding one peer's
 * credentials for good (real, effective and saved uid and gid set to the
 * peer's, no supplementary groups, no capabilities (a root peer: none of
 * CAP_SYS_PTRACE, the rest as the server has them, since the kernel lets a
 * process reach only one whose capabilities are a subset of its own),
 * no_new_privs, not dumpable). The server's chunk buffers live in one shared anonymous
 * mapping made before any helper exists, so a helper sees them at the same
 * addresses and moves bytes between them and the client without a copy.
 * A helper is a process, not a thread of the server: a thread holding the
 * peer's uid could be sent SIGSTOP or SIGKILL by that user, which would
 * stop or kill the whole server; a helper only takes itself down.
 *
 * Requests go over a SOCK_SEQPACKET socketpair, one at a time per helper,
 * and the reply is awaited for at most the configured timeout, or until
 * the request's deadline (a client range backed by a stalled FUSE file
 * cannot hold a worker, nor a transfer outlive the client's deadline: the
 * helper is killed and reaped). Helpers are reused per (uid, gid), at most
 * one per buffer, and stopped after a minute idle.
 *
 * DESIGN (threads): every function may run on any thread. The helper table
 * and the buffer bitmap are protected by the helpers' mutex; a helper in use
 * (busy) belongs to the thread that took it, which talks to it without the
 * mutex. The mutex is never held across a fork, a request or a wait.
 */
#ifndef S3R_RDX_HELPER_H
#define S3R_RDX_HELPER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdma/rdx_token.h"

struct rdx_helpers;

/*
 * An arena of nbuf buffers of buf_size bytes (page-rounded) and an empty
 * helper table; timeout_s bounds every wait for a helper. Returns 0 and
 * *out, or -ENOMEM / -EINVAL with a reason in err.
 */
int rdx_helpers_create(size_t buf_size, unsigned nbuf, unsigned timeout_s,
                       struct rdx_helpers **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Stop every helper (they are idle: callers have finished) and free. */
void rdx_helpers_destroy(struct rdx_helpers *h);

/* One buffer of at most buf_size bytes, or NULL (too large, or all taken). */
void *rdx_helpers_buf_alloc(struct rdx_helpers *h, size_t len);
/* Give a buffer back (NULL: nothing). */
void rdx_helpers_buf_free(struct rdx_helpers *h, void *buf);
/* The arena holding every buffer (fixed from create to destroy: the verbs
   kinds register it once) and how many buffers it is cut into. */
void rdx_helpers_arena(const struct rdx_helpers *h, void **base, size_t *len,
                       unsigned *nbuf);

/*
 * As (uid, gid): RDX_GET writes [local, local + len) into pid at raddr
 * (process_vm_writev), RDX_PUT reads it from there into local; len 0
 * probes: one byte read at raddr into the helper's own memory, moving
 * nothing. local must lie in one buffer of h. until: a deadline on
 * CLOCK_MONOTONIC in ms (0: none) past which nothing is started and every
 * wait is cut short, as by the timeout. *moved: the bytes moved before an
 * error. Returns 0, or the kernel's negative errno as the peer saw it
 * (-EPERM: the kernel refused the peer that process, or no helper could
 * take the peer's credentials; -EFAULT; -ESRCH), or -EIO (it died),
 * -ETIMEDOUT (no answer within the timeout or by until: the helper is
 * killed and reaped first, so nothing moves once this has returned),
 * -EINVAL (local outside the buffers), -EAGAIN (no helper free).
 */
int rdx_helpers_move(struct rdx_helpers *h, uid_t uid, gid_t gid,
                     enum rdx_op op, pid_t pid, uint64_t raddr, void *local,
                     size_t len, uint64_t until, size_t *moved)
    __attribute__((warn_unused_result));

#endif
