/*
 * gw_req: one request of s3rdma-gateway as its connection thread
 * (gw_http.c) and its proxy worker (gw_proxy.c, gw_upstream.c, gw_serve.c)
 * share it, the state it goes through (ready, failed, given up, done) and
 * how a failed token is answered.
 *
 * DESIGN (threads): a struct gw_req is created and owned by the connection
 * thread (gw_http.c). Before gw_proxy_submit everything in it is written by
 * that thread only; after, the fields marked "immutable" are read-only, the
 * pipes synchronise themselves, and the fields marked "protected by mu" are
 * shared with the worker. The worker never touches the request after it has
 * set done (under mu), so the connection thread may free it once it has
 * seen done. mode, status and the response headers are written by the
 * worker only and read by the connection thread only once it has seen ready
 * (set under mu, after them). Lock order: pool lock, then a request's mu
 * (never both held by a worker while it transfers).
 */
#ifndef S3R_GW_REQ_H
#define S3R_GW_REQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gateway/gw_pipe.h"
#include "gateway/gw_stats.h"
#include "rdma/rdx_server.h"
#include "s3/s3_sigv4.h"

/* How the HTTP side must answer once the worker says ready. */
enum gw_mode {
  GW_MODE_HTTP = 0, /* stream status, headers and the body from down */
  GW_MODE_RDMA,     /* token served: status, headers, rdma headers, no body */
  GW_MODE_ERROR,    /* answer err_status / err_code */
};

enum gw_tok {
  GW_TOK_NONE = 0,
  GW_TOK_GET,
  GW_TOK_PUT,
};

struct gw_req {
  /* immutable after submit */
  char *method, *path, *query;  /* path and query raw, as received */
  struct s3_kv *hdrs;           /* every client header (copies) */
  size_t n_hdrs;
  char region[32];
  int64_t body_len;             /* client body bytes (-1: none expected) */
  enum gw_tok tok;              /* a token request served by rdma */
  bool decline;                 /* token declined: add x-amz-rdma-reply 501 */
  bool upload_part;             /* PUT ?partNumber&uploadId */
  bool range_known;             /* token GET: rdx.len fixed from Range */
  struct rdx_token token;
  struct rdx_req rdx;           /* rdx.len set by the worker when !range_known */
  bool has_up;                  /* up carries a body */
  struct gw_pipe up, down;      /* client -> upstream, upstream -> client */

  /* worker only, until done */
  uint64_t tok_off;             /* bytes moved by rdma so far */
  size_t chunk_fill;
  void *chunk;

  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool ready;                   /* protected by mu: mode and headers set */
  bool done;                    /* protected by mu: worker finished */
  enum gw_mode mode;            /* protected by mu */
  long status;                  /* protected by mu: upstream's status */
  char **resp_hdrs;             /* protected by mu: "Name: value" lines */
  size_t n_resp_hdrs, resp_hdr_bytes;
  int64_t resp_len;             /* protected by mu: Content-Length, -1 */
  int err_status;               /* protected by mu: GW_MODE_ERROR's */
  const char *err_code;         /* protected by mu */
  unsigned err_reply;           /* protected by mu: its x-amz-rdma-reply
                                   (0: none; an rc transfer's 500) */
  char err_msg[160];            /* protected by mu */
  uint64_t rdma_bytes;          /* protected by mu: when done, RDMA mode */
  bool cancel;                  /* protected by mu: the client was answered
                                   or left: its memory is not touched again,
                                   and a request not answered yet is
                                   abandoned upstream (a PUT not completed
                                   there is not completed later) */
  bool serving;                 /* protected by mu: inside rdx_serve */

  struct gw_req *next;          /* protected by the pool lock */
};

/* ---- the connection thread's side ---- */

/* Wait (bounded by timeout_ms) until r->ready. Returns 0 or -ETIMEDOUT. */
int gw_req_wait_ready(struct gw_req *r, unsigned timeout_ms);
/*
 * The connection gives r up (it answers without the worker, or the client
 * left): once this returns, the worker never touches the client's memory
 * for r again (a transfer in progress fails at its next chunk), and an
 * upstream request not yet answered is aborted.
 */
void gw_req_cancel(struct gw_req *r);
/* Wait until r->done (no bound: the worker's own timeouts end it). */
void gw_req_wait_done(struct gw_req *r);

/*
 * The RDMA error mapping: an rdx errno for a token of this kind to an HTTP
 * status, S3 code and x-amz-rdma-reply (0: none), with the codes of
 * NVIDIA's RDMA protocol for S3: a token that cannot be used is 400
 * InvalidRDMAToken (no reply), a transfer that failed 500
 * RDMATransferFailed, and a declined PUT 200 RDMANotSupported with reply
 * 501 (GW_*_DECLINED). Every 500 carries reply 500 (the gateway is done
 * with the token; the client sends the bytes again over HTTP). rc follows
 * its dialect (rdx_rc_server.h): -ENOTCONN, -EFAULT, -ECONNRESET, -EIO and
 * -ETIMEDOUT are 500 (its session is gone); for the other kinds -EFAULT
 * and -EINVAL are 400, -EPERM 403, -ETIMEDOUT 400 RequestTimeout.
 */
#define GW_CODE_BAD_TOKEN "InvalidRDMAToken"
#define GW_CODE_FAILED "RDMATransferFailed"
#define GW_STATUS_DECLINED 200
#define GW_CODE_DECLINED "RDMANotSupported"
void gw_rdx_error(enum rdx_kind kind, int rc, int *status, const char **code,
                  unsigned *reply);
/* r's token is declined (answered 501, x-amz-rdma-reply): count it and log
   one line (kind and reason, never the token). Either thread. */
void gw_req_note_declined(const struct gw_req *r, struct gw_stats *stats,
                          const char *why);

/* ---- the worker's side ---- */

/* Under mu: ready (mode and headers are set); wakes the connection. */
void gw_req_set_ready_locked(struct gw_req *r);
/* Fail r (under mu, or taking it): the HTTP side answers status and code;
   the first failure stands. Sets ready. */
void gw_req_set_error_locked(struct gw_req *r, int status, const char *code,
                             const char *msg);
void gw_req_set_error(struct gw_req *r, int status, const char *code,
                      const char *msg);
/* The same with an x-amz-rdma-reply value (0: none). */
void gw_req_set_error_reply(struct gw_req *r, int status, const char *code,
                            const char *msg, unsigned reply);
/* Answer over HTTP: status, headers and the body from down. Sets ready. */
void gw_req_answer_http(struct gw_req *r);
/* The worker is finished with r: down closed, ready, done. r may be freed
   by its connection thread once this returns. */
void gw_req_finish(struct gw_req *r);
/* Has the client's deadline for r's token passed? */
bool gw_req_expired(const struct gw_req *r);
/*
 * A test hook (--test-token-delay, --test-put-hold): wait ms, or less if
 * the connection gives the request up meanwhile. Returns false when it
 * did (the caller stops).
 */
bool gw_req_hold(struct gw_req *r, unsigned ms);

#endif
