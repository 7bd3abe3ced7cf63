/*
 * gw_auth: SigV4 verification of a client's request to the gateway. Pure
 * functions (input: method, path, query, headers, now; no I/O, no clock, no
 * global state), safe from any thread.
 *
 * Only header auth (Authorization: AWS4-HMAC-SHA256 ...) is accepted.
 * Presigned query auth (X-Amz-Signature in the query) and anonymous requests
 * are refused with 403 AccessDenied: the gateway serves its own clients,
 * which always sign.
 *
 * The canonical request is rebuilt with s3_sigv4 in S3 mode: the path exactly
 * as received (still %-encoded), the raw query as received (s3_sigv4
 * canonicalises it), the values of the SignedHeaders as received (several
 * headers of one name joined with ','), and x-amz-content-sha256's value as
 * the payload hash. Signatures compare in constant time.
 */
#ifndef S3R_GW_AUTH_H
#define S3R_GW_AUTH_H

#include <stddef.h>
#include <time.h>

#include "s3/s3_sigv4.h"

/* Largest clock skew accepted between x-amz-date and now. */
#define GW_AUTH_MAX_SKEW_S (15 * 60)

struct gw_auth_keys {
  const char *access_key;
  const char *secret_key;
};

/* A request as received; every pointer borrowed. */
struct gw_auth_req {
  const char *method;
  const char *path;             /* as received, %-encoded, without query */
  const char *query;            /* raw, without '?'; NULL or "" for none */
  const struct s3_kv *headers;  /* every header received, in order */
  size_t n_headers;
  const char *token_header;     /* e.g. "x-amz-rdma-token"; NULL: none */
  const char *default_payload;  /* the payload hash when x-amz-content-sha256
                                   is absent (S3_EMPTY_SHA256 for a request
                                   without a body); NULL: it is required */
};

/* Why a request failed: the HTTP status and S3 error code to answer with. */
struct gw_auth_result {
  int status;         /* 0 on success, else 400 or 403 */
  const char *code;   /* "SignatureDoesNotMatch", ...; "" on success */
  char region[32];    /* the credential scope's region (on success) */
  char why[160];      /* one line for the log (never a secret) */
};

/*
 * Verify req against keys at time now. Returns 0 (res->region set), or:
 *   -EINVAL  malformed Authorization or missing x-amz-date / content hash
 *            (400 AuthorizationHeaderMalformed / InvalidRequest)
 *   -EACCES  no or unsupported auth, unknown access key, clock skew, host or
 *            the token header not signed, bad signature (403 ...)
 *   -ENOMEM
 * res->status/code/why say which.
 */
int gw_auth_verify(const struct gw_auth_keys *keys,
                   const struct gw_auth_req *req, time_t now,
                   struct gw_auth_result *res)
    __attribute__((warn_unused_result));

/*
 * Is name among the SignedHeaders of the Authorization header in h? (Only
 * meaningful after gw_auth_verify accepted the request.)
 */
bool gw_auth_signed(const struct s3_kv *h, size_t n, const char *name);

/* The value of header name (case-insensitive), first occurrence, or NULL. */
const char *gw_header_get(const struct s3_kv *h, size_t n, const char *name);

/* Format t as "YYYYMMDDTHHMMSSZ" (UTC) into buf[17]. */
void gw_amz_date(time_t t, char buf[17]);

#endif
