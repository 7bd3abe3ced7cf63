/*
 * s3_rc: the HTTP half of the RC dialect's connect step (elbencho's
 * s3rdma, docs/rdma.md "RC dialect"): two signed POSTs to fixed
 * paths with no bucket, headers in and headers out. s3/ knows nothing of
 * queue pairs: the values are opaque strings the data plane
 * (fs/plane/fsx_rdma_rc.c, rdma/rdx_rc_client.h) makes and checks.
 *
 *   POST /.s3rdma-rc/connect     x-amz-rdma-token: <88 hex>, x-amz-rdma-psn
 *     200: x-amz-rdma-session, x-amz-rdma-reply "200:<88 hex>",
 *          x-amz-rdma-psn
 *   POST /.s3rdma-rc/disconnect  x-amz-rdma-session: always 204
 *
 * Synchronous (submit and wait): call them where the caller may block,
 * never on the engine thread. Not retried (POST); each bounded by its
 * timeout. Thread-safe as every request is.
 */
#ifndef S3R_S3_RC_H
#define S3R_S3_RC_H

#include <stddef.h>

struct s3_client;

#define S3_RC_SESSION_MAX 64 /* header values kept, NUL included */
#define S3_RC_REPLY_MAX 128
#define S3_RC_PSN_MAX 16

/* What a connect step answered: the three header values, as sent. */
struct s3_rc_reply {
  char session[S3_RC_SESSION_MAX];
  char reply[S3_RC_REPLY_MAX];
  char psn[S3_RC_PSN_MAX];
};

/*
 * The outcome of a finished connect POST, pure (unit-tested): rc is the
 * request's result, status its HTTP status, the others its header values
 * (NULL: absent). Returns
 *   0            200 with all three headers, copied into *out
 *   -EPROTONOSUPPORT  the server does not speak the dialect: a 4xx but
 *                408 and 429 (400 Bad token/PSN, 403, 404, 405 from plain
 *                S3), 501 (s3rdma-gateway serving no rc), 505, a 2xx
 *                without the three headers or with one too long, or a
 *                3xx: never ask it again
 *   -EAGAIN      it may, but not now: another 5xx (500 no queue pair,
 *                503 too many sessions), 408, 429
 *   rc           the request failed without an HTTP status (timeout,
 *                refused, reset, cancelled)
 */
int s3_rc_connect_outcome(int rc, long status, const char *session,
                          const char *reply, const char *psn,
                          struct s3_rc_reply *out);

/*
 * POST /.s3rdma-rc/connect to endpoint ep of the client's list (its
 * session lives there; -1: any) with the client's QP token and PSN, within
 * timeout_ms (0: the client's request timeout). The outcome as
 * s3_rc_connect_outcome, or -ENOMEM / -EINVAL (a value with CR/LF).
 */
int s3_rc_connect(struct s3_client *c, int ep, const char *token,
                  const char *psn, unsigned timeout_ms,
                  struct s3_rc_reply *out);

/* POST /.s3rdma-rc/disconnect for a session id to endpoint ep (-1: any),
   within timeout_ms. 0 on a 2xx, else -EPROTO, or the request's error. */
int s3_rc_disconnect(struct s3_client *c, int ep, const char *session,
                     unsigned timeout_ms);

#endif
