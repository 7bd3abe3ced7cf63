/*
 * s3_err: the one table that turns an HTTP status + S3 error code, or a curl
 * transport failure, into an errno, an error class for the stats, and
 * whether the failure may be retried.
 */
#ifndef S3R_S3_ERR_H
#define S3R_S3_ERR_H

#include <stdbool.h>

enum s3_err_class {
  S3_EC_NONE = 0,
  S3_EC_CLIENT,     /* 4xx we caused: bad request, precondition, range */
  S3_EC_AUTH,       /* 401/403: credentials, signature, clock skew */
  S3_EC_NOTFOUND,   /* 404 */
  S3_EC_THROTTLE,   /* 503 SlowDown, 429, 503 */
  S3_EC_SERVER,     /* other 5xx */
  S3_EC_NETWORK,    /* connect/DNS/reset/TLS */
  S3_EC_TIMEOUT,    /* request or connect timeout */
  S3_EC_PROTOCOL,   /* malformed reply: XML, headers */
  S3_EC_COUNT
};

struct s3_err_map {
  int err;                 /* positive errno: ENOENT, EACCES, ... */
  enum s3_err_class cls;
  bool retryable;          /* transient: may succeed if tried again */
  bool before_send;        /* failed before the server could act (connect,
                              DNS, 503 SlowDown): safe to retry even a
                              non-idempotent request */
  bool log_hint;           /* deserves one explanatory log line (e.g. a
                              SignatureDoesNotMatch: "check the secret key") */
};

/*
 * Map an HTTP status (>= 300) and S3 error code (may be NULL or "") to an
 * errno. A known code wins over the status (404 NoSuchKey and NoSuchBucket ->
 * ENOENT, 403 AccessDenied -> EACCES, SignatureDoesNotMatch and
 * InvalidAccessKeyId -> EACCES with log_hint, 409 BucketNotEmpty ->
 * ENOTEMPTY, 503 SlowDown -> EAGAIN retryable, ...); an unknown code falls
 * back to the status class. The table in s3_err.c is the documentation.
 */
void s3_err_from_http(long status, const char *code, struct s3_err_map *out);

/* Map a CURLcode (as int so this header does not need curl.h). */
void s3_err_from_curl(int curl_code, struct s3_err_map *out);

/* "client", "auth", ... for stats output. */
const char *s3_err_class_name(enum s3_err_class cls);

/* A one-line hint for log_hint errors (static string), or NULL. */
const char *s3_err_hint(const char *code, long status);

#endif
