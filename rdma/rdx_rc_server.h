/*
 * rdx_rc_server: the server half of the RC transport's connect step, for
 * the gateway's routes under /.s3rdma-rc/ (elbencho's s3rdma dialect,
 * docs/rdma.md "RC dialect"). The object requests' "rc:" tokens
 * then go through the generic path like every kind: rdx_serve_check and
 * rdx_serve (rdx_server.h) find the session, RDMA-WRITE a GET's chunk into
 * the client or RDMA-READ a PUT's chunk out of it, from and into the
 * server's chunk buffers (registered once), each chunk bounded by 30 s and
 * the token's deadline; a chunk that fails or times out drops its session
 * (its queue pair is destroyed before rdx_serve returns, so nothing
 * touches the buffer after).
 *
 * The gateway, for POST /.s3rdma-rc/connect (empty body):
 *
 *   rc = rdx_rc_server_connect(srv, token, token_len, psn, psn_len, &acc,
 *                              why, sizeof(why));
 *   0            200, x-amz-rdma-session: acc.session,
 *                x-amz-rdma-reply: acc.reply, x-amz-rdma-psn: acc.psn
 *   -EINVAL      400 (token or PSN missing or malformed, transport not RC)
 *   -ENOSPC      503 (every session taken)
 *   -EOPNOTSUPP  rc is not served here (no device): 501, as RC off
 *   else         500 (no queue pair could be made or connected)
 *   (no body and no x-amz-rdma-* headers on the errors)
 *
 * and for POST /.s3rdma-rc/disconnect: rdx_rc_server_disconnect(srv,
 * session, len), then 204 whatever it returns.
 *
 * rdx_serve's errors for an rc token, beyond rdx_server.h's: -ENOTCONN
 * (unknown session: expired, disconnected, dropped by a failed chunk or a
 * server restart; or busy with another transfer), -EFAULT (the client's
 * memory key or range refused), -ECONNRESET (the client's queue pair does
 * not answer), -EIO (another completion error), -ETIMEDOUT. The dialect
 * answers all of them HTTP 500 InternalError, reply 500.
 *
 * Devices: rdx_rc_server_set_cfg before rdx_server_create picks the device
 * (default: the first one, port 1, the default GID); without one, rc tokens
 * and connects are declined (-EOPNOTSUPP, with the reason).
 *
 * DESIGN (threads): the session table (rdx_rc_table) has its own mutex; a
 * session taken for a chunk belongs to that thread until the chunk ends.
 * The device, its protection domain and the chunk buffers' registration
 * are immutable from open to close. The configuration set by
 * rdx_rc_server_set_cfg is protected by a mutex of this module. Every
 * function may run on any thread.
 */
#ifndef S3R_RDX_RC_SERVER_H
#define S3R_RDX_RC_SERVER_H

#include <stddef.h>

#include "rdma/rdx_rc_client.h" /* struct rdx_rc_dev_cfg */
#include "rdma/rdx_rc_wire.h"
#include "rdma/rdx_server.h"

#define RDX_RC_CHUNK_MS 30000u /* one chunk's bound (elbencho's 30 s) */

/* The connect step's answer: the three header values, NUL-terminated. */
struct rdx_rc_accept {
  char session[RDX_RC_SESSION_LEN + 1];
  char reply[RDX_RC_REPLY_LEN + 1];
  char psn[RDX_RC_PSN_LEN + 1];
};

/* The device every server created after this uses (copied; NULL: the
   defaults). 0, or -EINVAL (more than RDX_RC_DEVS_MAX, a name too long). */
int rdx_rc_server_set_cfg(const struct rdx_rc_dev_cfg *cfg)
    __attribute__((warn_unused_result));

/*
 * Accept a client's connect: its x-amz-rdma-token and x-amz-rdma-psn
 * values (n bytes each, not NUL-terminated). Drops idle sessions past
 * their 300 s, makes a queue pair, connects it to the client's (RTR, RTS)
 * and files it under a new random session id. Returns 0 and *out, or as
 * listed above with a one-line reason in why.
 */
int rdx_rc_server_connect(struct rdx_server *s, const char *token,
                          size_t token_len, const char *psn, size_t psn_len,
                          struct rdx_rc_accept *out, char *why, size_t whylen)
    __attribute__((warn_unused_result));

/* Forget a session (its x-amz-rdma-session value). 0 (dropped), -ENOENT
   (unknown or malformed), -EBUSY (a transfer is running: dropped when it
   ends), -EOPNOTSUPP. Answer 204 whatever it returns. */
int rdx_rc_server_disconnect(struct rdx_server *s, const char *session,
                             size_t len);

/* Sessions open now (0 when rc is not served). */
unsigned rdx_rc_server_sessions(const struct rdx_server *s);

#endif
