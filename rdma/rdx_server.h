/*
 * rdx_server: the server half, what s3rdma-gateway calls to execute a
 * client's token. The gateway streams an object through a small buffer and
 * moves it chunk by chunk: for a GET it fills its buffer from upstream and
 * rdx_serve() writes it into the client at the token's address + token_off;
 * for a PUT rdx_serve() reads the next chunk from the client into its
 * buffer, which it then sends upstream.
 *
 * Every call checks everything again (the token against the request with
 * rdx_token_check(), the chunk against the request's range, the client
 * process's identity) before it touches client memory, and never touches
 * client memory outside [tok->addr, tok->addr + req->len), which lies within
 * the token's range.
 *
 * Kinds served: cma (process_vm_writev/readv), rc (RDMA WRITE/READ on
 * a session made by rdx_rc_server_connect, rdx_rc_server.h) and dc (RDMA
 * WRITE/READ from a DCI to the client's DCT, rdx_dc_server.h; on an mlx5
 * device only, else -EOPNOTSUPP: decline with 501). Each kind is one file implementing
 * struct rdx_server_ops (rdx_i.h) and one row of the kinds table in
 * rdx_server.c, which checks what every kind shares and dispatches by
 * tok->kind; nothing else here names a kind, so adding rc or dc changes
 * no caller.
 *
 * cma and who may name which process: a cma token names a pid on this
 * host, and the gateway usually runs as root, so a token could name any
 * process. rdx_serve refuses cma unless the request came over a same-host
 * connection (req->peer_local) from a known user (req->peer_uid and
 * peer_gid: SO_PEERCRED on a unix socket; for loopback TCP the socket's
 * owner from NETLINK_SOCK_DIAG and that user's primary group), unless the
 * pid names a whole process (not a thread) that is still the token's
 * (start time), and runs every process_vm_* call in a helper process that
 * holds exactly the peer's uid and gid, no groups and no capabilities
 * (rdx_helper.h): the kernel's ptrace_may_access decides, at each call,
 * whether that user may reach that process (uids and gids, dumpable,
 * Yama, a setuid execve in between), as for the user's own ptrace.
 *
 * The pid is checked against the token's start time through a pidfd held
 * across the transfer; a process that exits during a transfer makes the
 * call fail. A pid recycled by another process between the check and a
 * process_vm_* call is possible in principle (the pid space would have to
 * wrap in between), and the kernel's check then still applies to it.
 *
 * Refusals say which rule was broken (why); pids, uids, start times and
 * addresses go to the log at info level only.
 *
 * DESIGN (threads): a server's settings are immutable after
 * rdx_server_create; its chunk buffers and cma helpers are shared under
 * their own lock (rdx_helper.h). Every function may run on any thread
 * concurrently.
 */
#ifndef S3R_RDX_SERVER_H
#define S3R_RDX_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma/rdx_token.h"

/* What the gateway knows about the request a token came with. */
struct rdx_req {
  enum rdx_op op;     /* RDX_GET (GetObject) or RDX_PUT (PutObject, UploadPart) */
  uint64_t len;       /* the bytes the whole request moves (see rdx_token_check) */
  bool peer_local;    /* it came over a same-host connection */
  int64_t peer_uid;   /* the requesting process's uid, -1 when unknown */
  int64_t peer_gid;   /* and its gid, -1 when unknown */
  uint64_t expires_ms; /* the client's deadline for the token (its
                          x-amz-rdma-expires), CLOCK_REALTIME in ms; 0:
                          none. No byte moves after it (see rdx_serve). */
};

/* Sizes of a server's chunk buffers (rdx_server_buf_alloc). */
struct rdx_server_cfg {
  size_t buf_size;    /* largest buffer (1 MiB) */
  unsigned nbuf;      /* buffers at once (16): one per transfer in flight */
  unsigned timeout_s; /* bound of every wait for a transfer (120) */
};

struct rdx_server;

/*
 * Create a server context (cfg NULL: the defaults above): notes which kinds
 * this process can serve (cma: process_vm_readv exists, Yama and
 * fs.suid_dumpable allow it) and maps the chunk buffers. Returns 0 and *out
 * (free with rdx_server_destroy), -EINVAL (out NULL, bad sizes) or -ENOMEM,
 * with a one-line reason in err.
 */
int rdx_server_create(const struct rdx_server_cfg *cfg,
                      struct rdx_server **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

void rdx_server_destroy(struct rdx_server *s);

/*
 * Can s serve tokens of this kind? 0, or -EOPNOTSUPP with the reason in why
 * (decline with 501 before fetching anything from upstream).
 */
int rdx_server_serves(const struct rdx_server *s, enum rdx_kind kind,
                      char *why, size_t whylen)
    __attribute__((warn_unused_result));

/*
 * Buffers for rdx_serve's local side (rdx_serve takes no other memory):
 * at most cfg->buf_size bytes each, cfg->nbuf at once, page-aligned,
 * uninitialised, shared with the cma helpers (verbs kinds will register
 * them). NULL when too large or all taken. Free with rdx_server_buf_free
 * (NULL does nothing).
 */
void *rdx_server_buf_alloc(struct rdx_server *s, size_t len);
void rdx_server_buf_free(struct rdx_server *s, void *buf);

/*
 * Would rdx_serve execute tok for req? Everything rdx_serve checks before
 * moving a byte, without moving one (the deadline included): call it once
 * the request's length is known (for a GET, from upstream's
 * Content-Length) and before streaming. Returns 0, or as rdx_serve.
 */
int rdx_serve_check(const struct rdx_server *s, const struct rdx_token *tok,
                    const struct rdx_req *req, char *why, size_t whylen)
    __attribute__((warn_unused_result));

/*
 * Move one chunk: for RDX_GET write len bytes from local into the client at
 * tok->addr + token_off; for RDX_PUT read them from there into local.
 * [token_off, token_off + len) must lie within [0, req->len) (which
 * rdx_token_check has matched to the token). Partial transfers are
 * continued until len bytes moved or an error.
 * Returns 0 when all len bytes moved, or (why: one line, never the token):
 *   -EINVAL      the token is not valid or executable, req->op unknown, s,
 *                tok, req or local NULL, len 0         (refuse: 400)
 *   -EPERM       the token does not match the request: operation, or
 *                length (rdx_token_check)              (refuse: 403)
 *   -ERANGE      the chunk is not within [0, req->len)  (a gateway bug)
 *   -EACCES      cma: the peer may not name that process (not local, user
 *                unknown, or the kernel refused it the process)  (403)
 *   -ESRCH       cma: the named process is gone, is another process
 *                (start time differs), or exited during the transfer
 *   -EINVAL      cma: the pid is a thread's, not a process's  (400)
 *   -EFAULT      the client's range is not mapped (writable, for a GET);
 *                bytes before the hole may have been moved, within range
 *   -ETIMEDOUT   req->expires_ms has passed (checked before the chunk; a
 *                chunk still moving at that moment is cut off there: its
 *                helper is killed and reaped before this returns), or cma:
 *                no answer within the server's timeout
 *   -EAGAIN      cma: every helper busy
 *   -EOPNOTSUPP  this server cannot serve the kind: dc with no mlx5
 *                device, rc with no device, or cma not possible on this host (decline:
 *                501)
 *   -ENOMEM, or another negative errno from the kernel.
 */
int rdx_serve(const struct rdx_server *s, const struct rdx_token *tok,
              const struct rdx_req *req, uint64_t token_off, void *local,
              size_t len, char *why, size_t whylen)
    __attribute__((warn_unused_result));

#endif
