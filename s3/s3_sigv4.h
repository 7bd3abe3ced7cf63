/*
 * s3_sigv4: AWS Signature Version 4 over OpenSSL's libcrypto.
 * Pure functions, no I/O, no clock: the caller passes the timestamp, which is
 * what makes the AWS test-suite vectors usable with a fixed clock.
 *
 * Two canonicalisation modes:
 *  - S3 mode (generic == false): the path is taken as given (already
 *    URI-encoded once by s3_uri_encode, '/' kept), never normalised;
 *  - generic mode (generic == true, the AWS sig-v4 test suite's "service"):
 *    the path is normalised (RFC 3986 dot segments, repeated '/') and each
 *    segment is URI-encoded (again).
 */
#ifndef S3R_S3_SIGV4_H
#define S3R_S3_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#define S3_SHA256_HEX_LEN 64
#define S3_EMPTY_SHA256                                                        \
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define S3_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* A borrowed name/value pair. */
struct s3_kv {
  const char *key;
  const char *val;
};

struct s3_sigv4_input {
  const char *method;      /* "GET", "PUT", ... */
  const char *path;        /* request path as sent ("/bucket/a%20b") */
  const char *query;       /* raw query string without '?', may be NULL/"" */
  const struct s3_kv *headers; /* every header to sign, any case, any order;
                                  repeated names are joined with ',' in order */
  size_t n_headers;
  const char *payload_hash; /* lowercase hex SHA-256 or UNSIGNED-PAYLOAD;
                               NULL means the empty payload */
  const char *amz_date;     /* "YYYYMMDDTHHMMSSZ" */
  const char *region;       /* "us-east-1" */
  const char *service;      /* "s3" */
  const char *access_key;
  const char *secret_key;
  bool generic;             /* see the mode comment above */
};

/*
 * URI-encode per SigV4: unreserved (A-Z a-z 0-9 - _ . ~) kept, everything
 * else %XX uppercase; '/' kept when keep_slash. Returns a malloc'd string or
 * NULL on ENOMEM. Caller frees.
 */
char *s3_uri_encode(const char *s, size_t len, bool keep_slash);

/*
 * Canonical query string: parameters split on '&', each name and value
 * decoded then re-encoded with s3_uri_encode, sorted by name then value,
 * "name=value" joined with '&' (a parameter without '=' gets an empty value).
 * Returns 0 and a malloc'd *out, or -ENOMEM / -EINVAL (bad %-escape).
 */
int s3_sigv4_canonical_query(const char *query, char **out);

/*
 * The canonical request (the .creq of the AWS suite). malloc'd *out, and
 * when signed_headers_out is not NULL the malloc'd "host;x-amz-date" list.
 * -EINVAL when method, amz_date, region, service or the keys are missing or
 * a header name is empty.
 */
int s3_sigv4_canonical_request(const struct s3_sigv4_input *in, char **out,
                               char **signed_headers_out);

/* The string to sign (the .sts). malloc'd *out. Errors as above. */
int s3_sigv4_string_to_sign(const struct s3_sigv4_input *in, char **out);

/*
 * The Authorization header value (the .authz), e.g.
 * "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/service/aws4_request,
 *  SignedHeaders=host;x-amz-date, Signature=<64 hex>". malloc'd *out.
 * sig_hex (optional, 65 bytes) receives the bare signature.
 */
int s3_sigv4_authorization(const struct s3_sigv4_input *in, char **out,
                           char *sig_hex);

/* Lowercase hex SHA-256 of a buffer into out[65]. */
void s3_sha256_hex(const void *data, size_t len, char out[65]);

/*
 * Presign: the query string to append for a presigned URL (X-Amz-Algorithm,
 * X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and
 * X-Amz-Signature), signing in->headers (normally just host) with
 * UNSIGNED-PAYLOAD; in->query holds the request's other parameters
 * (X-Amz-Security-Token among them when a session token is in use).
 * in->payload_hash is ignored. Returns 0 and a malloc'd canonical query
 * string with "&X-Amz-Signature=<hex>" appended, or -EINVAL (expires_s not
 * in 1..604800, bad input), -ENOMEM.
 */
int s3_sigv4_presign_query(const struct s3_sigv4_input *in, unsigned expires_s,
                           char **out);

#endif
