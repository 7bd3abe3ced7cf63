/*
 * rdx_rc_client: the client half of the RC transport (elbencho's s3rdma
 * dialect, docs/rdma.md "RC dialect"): the device, memory
 * registration (through rdx_register, as every kind), and sessions: one RC
 * queue pair each, connected to the server's through the HTTP connect step
 * the caller makes, pooled per endpoint, one request at a time each.
 *
 * A request with an RC token, as the data plane (fs/plane/fsx_rdma.c) and the
 * S3 client's connect step will make it:
 *
 *   t = rdx_rc_transport_open(cfg)             once (or rdx_transport_open
 *   rdx_register(t, arena, ...)                 with RDX_TRANSPORT_RC)
 *   ep = rdx_rc_endpoint_create(t, cap)         once per S3 endpoint
 *   rdx_rc_session_get(ep, until, &s)           per request
 *   if (!rdx_rc_session_connected(s)) {         a new session:
 *     rdx_rc_session_connect_req(s, &req)         POST /.s3rdma-rc/connect
 *       x-amz-rdma-token: req.token, x-amz-rdma-psn: req.psn
 *     200? rdx_rc_session_connect(s, x-amz-rdma-session, x-amz-rdma-reply,
 *                                 x-amz-rdma-psn)
 *     else / error: rdx_rc_session_put(s, true) and use HTTP bodies
 *   }
 *   rdx_rc_token_for(s, region, off, len, op, buf)   x-amz-rdma-token
 *   ... the request ...
 *   rdx_rc_session_put(s, broken)   broken: a reply 500 (transfer failed,
 *     or the session unknown: the server restarted or expired it); then
 *     also rdx_rc_endpoint_flush(ep) when the server restarted
 *
 * The generic rdx_token_for() refuses RC with -ENOTCONN (an RC token names
 * a session), so a caller that knows nothing of sessions falls back to
 * HTTP bodies. The client never posts work requests: the server's RDMA
 * WRITE (GET) and READ (PUT) land in registered memory, so a client queue
 * pair never sees an error of its own; a session found broken is known
 * only from the server's replies. Memory named by a token must not be
 * reused until its request has ended (rdx_transport.h).
 *
 * DESIGN (threads): a transport is immutable once opened; an endpoint's
 * sessions are in an rdx_rc_pool (its mutex); a session belongs to the
 * thread that took it until it is put. Every function may run on any
 * thread.
 */
#ifndef S3R_RDX_RC_CLIENT_H
#define S3R_RDX_RC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma/rdx_rc_wire.h"
#include "rdma/rdx_transport.h"

/* Which device and GID, for both halves: names ("mlx5_0", "rxe0") or
   addresses of their netdevs ("10.0.0.5"), like cufile.json's
   rdma_dev_addr_list; every one must exist, the first is used. */
#define RDX_RC_DEVS_MAX 8 /* device specs at most */
struct rdx_rc_dev_cfg {
  const char *const *devices;
  size_t ndevices;  /* 0: the first device there is */
  int gid_index;    /* < 0: the RoCE v2 IPv4-mapped GID (or the address's) */
  uint8_t port;     /* 0: port 1 */
};

/* Device specs taken from rdx_params.devices (rdma.devices). */
#define RDX_RC_SPECS_MAX 16

/* Sessions per endpoint unless told. */
#define RDX_RC_SESSIONS_DEFAULT 16

struct rdx_rc_endpoint;
struct rdx_rc_session;

/*
 * Open an RC transport on cfg's device (NULL: the first device, port 1,
 * the default GID). Returns 0 and *out (rdx_transport_close), or with a
 * one-line reason in err: -ENODEV (no verbs, no device, a name or address
 * that matches none: the line names what was asked and what exists; port
 * down), -EINVAL (a bad device spec), -ENOMEM.
 */
int rdx_rc_transport_open(const struct rdx_rc_dev_cfg *cfg,
                          struct rdx_transport **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Sessions toward one endpoint, at most cap (0: RDX_RC_SESSIONS_DEFAULT).
   t must be an RC transport. 0 and *out, -EINVAL or -ENOMEM. */
int rdx_rc_endpoint_create(struct rdx_transport *t, unsigned cap,
                           struct rdx_rc_endpoint **out)
    __attribute__((warn_unused_result));

/* Free the endpoint and its idle sessions; every session must be put. Tell
   the server first (disconnect) if it should forget them now. Destroy every
   endpoint, and unregister every region, before rdx_transport_close. */
void rdx_rc_endpoint_destroy(struct rdx_rc_endpoint *ep);

/* The server restarted: drop every session (busy ones when put). */
void rdx_rc_endpoint_flush(struct rdx_rc_endpoint *ep);
/* How many of its sessions are taken now (slots reserved included). */
unsigned rdx_rc_endpoint_busy(struct rdx_rc_endpoint *ep);

/*
 * Take a session: a connected one, or a new queue pair (INIT) waiting for
 * the connect step. All busy: wait until until (CLOCK_MONOTONIC ms; 0: no
 * wait, -EAGAIN), then -ETIMEDOUT. Else 0 and *out, or -ENOMEM / a verbs
 * error with a reason in err.
 */
int rdx_rc_session_get(struct rdx_rc_endpoint *ep, uint64_t until,
                       struct rdx_rc_session **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

bool rdx_rc_session_connected(const struct rdx_rc_session *s);

/* The connect step's header values: x-amz-rdma-token and x-amz-rdma-psn. */
struct rdx_rc_connect_req {
  char token[RDX_RC_QP_TOKEN_LEN + 1];
  char psn[RDX_RC_PSN_LEN + 1];
};

/* Fill req for s (not connected). 0, or -EISCONN / -EINVAL. */
int rdx_rc_session_connect_req(const struct rdx_rc_session *s,
                               struct rdx_rc_connect_req *req)
    __attribute__((warn_unused_result));

/*
 * The connect step answered 200: its x-amz-rdma-session, x-amz-rdma-reply
 * and x-amz-rdma-psn values (n bytes each, not NUL-terminated). Moves the
 * queue pair to RTR and RTS toward the server's. 0, or -EBADMSG (a header
 * missing or malformed: the server is not speaking the dialect), -EISCONN,
 * or the verbs errno, with a reason in err; on error put s broken.
 */
int rdx_rc_session_connect(struct rdx_rc_session *s, const char *session,
                           size_t session_len, const char *reply,
                           size_t reply_len, const char *psn, size_t psn_len,
                           char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* s's id as 32 lowercase hex (for POST /.s3rdma-rc/disconnect): 32, or
   -ENOTCONN. */
int rdx_rc_session_id(const struct rdx_rc_session *s,
                      char buf[RDX_RC_SESSION_LEN + 1]);

/*
 * The "rc:" token for region offsets [off, off + len) through session s,
 * as rdx_token_for (same errors), and -ENOTCONN when s is not connected,
 * -EINVAL when r is not registered with s's transport. op is checked but
 * not written (RC tokens carry none).
 */
int rdx_rc_token_for(const struct rdx_rc_session *s, const struct rdx_region *r,
                     uint64_t off, uint64_t len, enum rdx_op op, char *buf,
                     size_t buflen) __attribute__((warn_unused_result));

/* Give s back; broken: destroy it (its server side is gone or failed). */
void rdx_rc_session_put(struct rdx_rc_session *s, bool broken);

#endif
