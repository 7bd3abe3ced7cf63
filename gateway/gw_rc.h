/*
 * gw_rc: the RC dialect's connect step (elbencho's s3rdma,
 * docs/rdma.md "RC dialect"): POST /.s3rdma-rc/connect and POST
 * /.s3rdma-rc/disconnect, decided here and answered by gw_http. Pure
 * routing and mapping around rdx_rc_server (rdma/rdx_rc_server.h); no
 * MHD, no I/O but that module's.
 *
 * Authentication: the dialect's notes say nothing of it, so these requests
 * are verified like any other (SigV4, before gw_rc_handle is called), and
 * the x-amz-rdma-* headers used here must be among the signed ones.
 *
 *   connect     200 and its three headers; 400 (token or PSN missing,
 *               repeated, malformed or unsigned; a body; a query), 501 (rc
 *               not served: no device, --serve none), 503 (every session
 *               taken), 500 (no queue pair)
 *   disconnect  204 always, but 400 for a body or a query
 *   otherwise   405 (another method on those two paths), 404 (another
 *               path under /.s3rdma-rc/)
 *
 * Every refusal is logged with its reason and counted (gw_stats rc_*).
 *
 * DESIGN (threads): stateless; runs on the MHD connection thread of the
 * request; rdx_rc_server and gw_stats are safe on any thread.
 */
#ifndef S3R_GW_RC_H
#define S3R_GW_RC_H

#include <stdbool.h>
#include <stdint.h>

#include "gateway/gw_stats.h"
#include "rdma/rdx_rc_server.h"
#include "s3/s3_sigv4.h"

#define GW_RC_PREFIX "/.s3rdma-rc"

/* What gw_rc_handle needs of a verified request. */
struct gw_rc_req {
  const char *method, *path, *query; /* path and query raw */
  const struct s3_kv *hdrs;
  size_t n_hdrs;
  int64_t body_len;                  /* -1 or 0: none */
  bool serve_none;                   /* --serve none */
};

/* The answer: status; on 200 the three header values (acc); on an error
   an S3 code and a reason, no x-amz-rdma-* header. */
struct gw_rc_answer {
  int status;
  const char *code;     /* NULL: no body (the dialect's connect errors) */
  char why[160];
  bool allow_post;      /* 405: add Allow: POST */
  struct rdx_rc_accept acc;
};

/* Is path (raw) one of ours: /.s3rdma-rc or under /.s3rdma-rc/? */
bool gw_rc_path(const char *path);

/* Decide a request whose path gw_rc_path took (see above); never fails. */
void gw_rc_handle(struct rdx_server *rdx, struct gw_stats *stats,
                  const struct gw_rc_req *req, struct gw_rc_answer *out);

#endif
