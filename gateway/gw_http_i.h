/*
 * gw_http_i.h: inside the gw_http module only (gw_http.c, gw_http_check.c,
 * gw_http_token.c, gw_http_answer.c): the server, one request's context,
 * and the steps one of these files calls in another. See gw_http.c for the
 * threading.
 */
#ifndef S3R_GW_HTTP_I_H
#define S3R_GW_HTTP_I_H

#include <stdbool.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "gateway/gw_conns.h"
#include "gateway/gw_http.h"
#include "gateway/gw_limits.h"

/* Set by gw_http_start, read-only after (limits and conns have their own
   locks). */
struct gw_http {
  const struct gw_config *cfg;
  struct gw_stats *stats;
  struct gw_proxy *proxy;
  struct rdx_server *rdx;
  struct gw_limits *limits;
  struct gw_conns *conns;
  struct MHD_Daemon *d;
  int fd;
  unsigned port;
  bool listen_local;
};

/* One request: the proxy's part and the connection thread's. */
struct creq {
  struct gw_req r;
  struct gw_http *h;
  char *uri;
  int phase;          /* 0: headers next, 1: body/final next, 2: answered */
  bool sync_init;     /* r.mu, r.cv and the pipes initialised */
  bool submitted;
  bool up_failed;     /* the worker stopped taking the body: drop it */
  bool hdr_oom;       /* a header could not be copied: refuse */
  bool hdr_big;       /* a header value over GW_HEADER_VALUE_MAX: refuse */
  bool upload_held;   /* upload_peer holds an upload slot for it */
  struct gw_peer_id upload_peer;
};

/* ---- gw_http_check.c: the first access call ------------------------------ */

/*
 * Check the request, verify its SigV4, set up its token, and submit it to
 * the proxy (MHD_YES), or queue the refusal (phase 2); MHD_NO drops the
 * connection.
 */
enum MHD_Result gw_http_first_call(struct creq *q, struct MHD_Connection *con,
                                   const char *method);

/* The value of the request's header name (case-insensitive), first
   occurrence, or NULL. */
const char *gw_http_hdr(const struct creq *q, const char *name);

/* How often a header of this name came (case-insensitive). */
unsigned gw_http_hdr_count(const struct creq *q, const char *name);

/* ---- gw_http_token.c: a token request's set-up --------------------------- */

enum MHD_Result gw_http_setup_token(struct creq *q, struct MHD_Connection *con,
                                    const char *tokv);

/* ---- gw_http_answer.c: answers ------------------------------------------- */

/*
 * Queue an S3 error (XML; x-amz-rdma-reply: 501 when rdma_501) and mark the
 * request answered (phase 2).
 */
enum MHD_Result gw_http_answer_error(struct creq *q, struct MHD_Connection *con,
                                     int status, const char *code,
                                     const char *msg, bool rdma_501);

/* The same with any x-amz-rdma-reply value (0: none) and an Allow header
   (NULL: none). */
enum MHD_Result gw_http_answer_error_ex(struct creq *q,
                                        struct MHD_Connection *con, int status,
                                        const char *code, const char *msg,
                                        unsigned reply, const char *allow);

/* Has the client closed its connection (or shut down its sending side)? */
bool gw_http_client_gone(struct MHD_Connection *con);

/* The final access call: wait for the worker, queue its answer. */
enum MHD_Result gw_http_answer(struct creq *q, struct MHD_Connection *con);

/* A request under /.s3rdma-rc/ (gw_rc_path), verified: the RC dialect's
   connect step (gw_rc.h) answered. */
enum MHD_Result gw_http_answer_rc(struct creq *q, struct MHD_Connection *con);

/* GET /_s3rdma/stats: the counters, to loopback peers only. */
enum MHD_Result gw_http_answer_stats(struct creq *q, struct MHD_Connection *con);

#endif
