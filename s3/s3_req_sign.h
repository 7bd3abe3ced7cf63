/*
 * s3_req_sign: one attempt of a request made ready to send: its URL and its
 * header list, signed with SigV4 (every header we send, the Host included).
 * The engine (s3_engine.c) calls it on its own thread before every attempt,
 * so every retry is signed afresh with a new x-amz-date; it is given where
 * to send and as whom (struct s3_req_target) and knows nothing of the
 * client.
 */
#ifndef S3R_S3_REQ_SIGN_H
#define S3R_S3_REQ_SIGN_H

#include <stdbool.h>

#include "s3/s3_creds.h"

struct s3_req;

/* Where an attempt goes and whose keys sign it (all borrowed). */
struct s3_req_target {
  const char *scheme;            /* "http://" or "https://", as configured */
  const char *host;              /* "host[:port]": the Host header */
  const char *base_path;         /* "" or "/base", no trailing '/' */
  bool virtual_host;             /* bucket.host/key, not host/bucket/key */
  const struct s3_creds *creds;  /* anonymous: nothing is signed */
  const char *rdma_header;       /* the token's header name, lowercase */
};

/*
 * Build r->url and r->hdr_list (replacing the previous attempt's) for one
 * attempt to t. A token attempt (r->rdma_on) sends its deadline,
 * r->rdma_until_wall_ms, which the caller has set. 0, -ENOMEM, or -E2BIG
 * for a header line too long.
 */
int s3_req_sign_attempt(struct s3_req *r, const struct s3_req_target *t)
    __attribute__((warn_unused_result));

#endif
