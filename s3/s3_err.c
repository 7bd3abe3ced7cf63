/*
 * s3_err: see s3_err.h. Two static tables, read top to bottom:
 *  - s3_codes: an S3 error code (the <Code> of an <Error> body) decides,
 *    whatever the status, unless the row names a status;
 *  - s3_status: a status without a known code (HEAD replies have no body,
 *    proxies send none), then the class of the status (3xx, 4xx, 5xx).
 * The rows are the documentation: each says why it maps where it does.
 *
 * Columns: errno, class, retryable (R), before_send (B: the server did not
 * act, so even a POST may be repeated), log_hint (H: worth one explanatory
 * log line, text in the last column).
 *
 * Choices worth knowing:
 *  - 416 InvalidRange -> ERANGE, not EINVAL: a read past the end (the object
 *    shrank under us), or a cold lookup's GET of an empty object's first
 *    bytes, is the only way we get it, and a distinct errno lets the read
 *    path turn it into EOF without catching real EINVALs. Counted with the
 *    not-found class: what was asked for is not there, as with a lookup's
 *    404, nothing a client did wrong.
 *  - 412 PreconditionFailed -> ESTALE: the If-Match ETag we hold is stale.
 *  - 405 MethodNotAllowed -> EPERM: this resource refuses the operation
 *    (e.g. a GET of a delete marker), the server does not lack it.
 *  - 501 NotImplemented -> EOPNOTSUPP, not ENOSYS: FUSE takes ENOSYS from
 *    create, flush, fsync, the xattr ops, ... as "this filesystem never
 *    implements this op" and stops calling it for the rest of the mount.
 *  - Throttles (SlowDown, 503, 429, ...) are before_send: the server refused
 *    the request before acting on it, as S3 documents for SlowDown.
 *  - 304 is not an error: callers of conditional GETs handle it first.
 */
#include "s3/s3_err.h"

#include <curl/curl.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

struct err_row {
  long status;          /* 0: any status */
  const char *code;     /* NULL: status-only row */
  int err;
  enum s3_err_class cls;
  bool retryable, before_send, log_hint;
  const char *hint;     /* for log_hint rows */
};

/* Flag columns: R retryable, B before_send, H log_hint, N none of them. */
#define R true
#define B true
#define H true
#define N false

/* clang-format off */
static const struct err_row s3_codes[] = {
  /* Not found: the object, bucket, upload or version is gone. */
  {0, "NoSuchKey",        ENOENT, S3_EC_NOTFOUND, N, N, N, NULL},
  {0, "NoSuchBucket",     ENOENT, S3_EC_NOTFOUND, N, N, H,
   "the bucket does not exist (check the bucket name and endpoint)"},
  {0, "NoSuchUpload",     ENOENT, S3_EC_NOTFOUND, N, N, N, NULL},
  {0, "NoSuchVersion",    ENOENT, S3_EC_NOTFOUND, N, N, N, NULL},

  /* Credentials and permissions. */
  {0, "AccessDenied",     EACCES, S3_EC_AUTH, N, N, N, NULL},
  {0, "AllAccessDisabled", EACCES, S3_EC_AUTH, N, N, H,
   "all access to this bucket has been disabled by the provider"},
  {0, "AccountProblem",   EACCES, S3_EC_AUTH, N, N, H,
   "the account has a problem that prevents the operation (contact the "
   "provider)"},
  {0, "UserSuspended",    EACCES, S3_EC_AUTH, N, N, H,
   "the user is suspended on the server (RGW)"},
  {0, "InvalidAccessKeyId", EACCES, S3_EC_AUTH, N, N, H,
   "the access key is unknown to the server"},
  {0, "SignatureDoesNotMatch", EACCES, S3_EC_AUTH, N, N, H,
   "the secret key does not match the access key (check credentials)"},
  {0, "RequestTimeTooSkewed", EACCES, S3_EC_AUTH, N, N, H,
   "the clock differs from the server's by more than 15 minutes"},
  {0, "AuthorizationHeaderMalformed", EACCES, S3_EC_AUTH, N, N, H,
   "the request was signed for another region (check the region setting)"},
  {0, "ExpiredToken",     EACCES, S3_EC_AUTH, N, N, H,
   "the session token has expired (refresh the credentials)"},
  {0, "InvalidToken",     EACCES, S3_EC_AUTH, N, N, H,
   "the session token is malformed or invalid"},
  {0, "TokenRefreshRequired", EACCES, S3_EC_AUTH, N, N, H,
   "the session token must be refreshed"},

  /* Bucket life cycle. */
  {0, "BucketNotEmpty",   ENOTEMPTY, S3_EC_CLIENT, N, N, N, NULL},
  {0, "BucketAlreadyExists", EEXIST, S3_EC_CLIENT, N, N, N, NULL},
  {0, "BucketAlreadyOwnedByYou", EEXIST, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidBucketName", EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "TooManyBuckets",   EDQUOT, S3_EC_CLIENT, N, N, N, NULL},
  /* Another operation on the same resource is in flight: try again. */
  {0, "OperationAborted", EBUSY,  S3_EC_CLIENT, R, N, N, NULL},

  /* Ranges and conditions (see the top comment). */
  {0, "InvalidRange",     ERANGE, S3_EC_NOTFOUND, N, N, N, NULL},
  {0, "PreconditionFailed", ESTALE, S3_EC_CLIENT, N, N, N, NULL},

  /* Sizes and names. */
  {0, "EntityTooLarge",   EFBIG,  S3_EC_CLIENT, N, N, N, NULL},
  /* A non-last multipart part under 5 MiB: our bug, not the user's. */
  {0, "EntityTooSmall",   EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "KeyTooLongError",  ENAMETOOLONG, S3_EC_CLIENT, N, N, N, NULL},
  {0, "MetadataTooLarge", E2BIG,  S3_EC_CLIENT, N, N, N, NULL},
  {0, "QuotaExceeded",    EDQUOT, S3_EC_CLIENT, N, N, N, NULL},
  {0, "XMinioStorageFull", ENOSPC, S3_EC_SERVER, N, N, N, NULL},

  /* Requests we built wrong. */
  {0, "InvalidPart",      EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidPartOrder", EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidPartNumber", EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidArgument",  EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidRequest",   EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidURI",       EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "InvalidDigest",    EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "MalformedXML",     EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "MissingContentLength", EINVAL, S3_EC_CLIENT, N, N, N, NULL},
  {0, "MethodNotAllowed", EPERM,  S3_EC_CLIENT, N, N, N, NULL},
  {0, "NotImplemented",   EOPNOTSUPP, S3_EC_CLIENT, N, N, N, NULL},
  /* NVIDIA's RDMA protocol for S3 (x-amz-rdma-reply decides first, see
     s3_rdma.c: a declined PUT or a failed transfer is sent again over HTTP
     before its status is judged here) */
  {0, "InvalidRDMAToken", EINVAL, S3_EC_CLIENT, N, N, H,
   "the server refused the RDMA token (rdma.transport)"},
  {0, "RDMANotSupported", EOPNOTSUPP, S3_EC_CLIENT, N, N, N, NULL},
  {0, "RDMATransferFailed", EIO,  S3_EC_SERVER, R, N, N, NULL},
  {0, "InvalidObjectState", EIO,  S3_EC_CLIENT, N, N, H,
   "the object is archived (restore it before reading)"},
  /* Not where we asked: we do not follow redirects across regions. */
  {0, "PermanentRedirect", EIO,   S3_EC_PROTOCOL, N, N, H,
   "the bucket lives at another endpoint or region (check the settings)"},
  {0, "TemporaryRedirect", EIO,   S3_EC_PROTOCOL, R, N, N, NULL},

  /* Body damaged on the way (checksum mismatch, short body): resend. */
  {0, "BadDigest",        EIO,    S3_EC_NETWORK, R, N, N, NULL},
  {0, "XAmzContentSHA256Mismatch", EIO, S3_EC_NETWORK, R, N, N, NULL},
  {0, "IncompleteBody",   EIO,    S3_EC_NETWORK, R, N, N, NULL},
  /* The server gave up reading our request (400). */
  {0, "RequestTimeout",   ETIMEDOUT, S3_EC_TIMEOUT, R, N, N, NULL},

  /* Throttling: refused before acting, safe to repeat after a pause. */
  {0, "SlowDown",         EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},
  {0, "ServiceUnavailable", EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},
  {0, "TooManyRequests",  EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},
  {0, "RequestLimitExceeded", EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},
  {0, "Throttling",       EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},
  {0, "ThrottlingException", EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},
  {0, "XMinioServerNotInitialized", EAGAIN, S3_EC_THROTTLE, R, B, N, NULL},

  /* The server failed, perhaps after acting: only idempotent retries. */
  {0, "InternalError",    EIO,    S3_EC_SERVER, R, N, N, NULL},
};

static const struct err_row s3_status[] = {
  {400, NULL, EINVAL,    S3_EC_CLIENT,   N, N, N, NULL},
  {401, NULL, EACCES,    S3_EC_AUTH,     N, N, N, NULL},
  {403, NULL, EACCES,    S3_EC_AUTH,     N, N, N, NULL},
  {404, NULL, ENOENT,    S3_EC_NOTFOUND, N, N, N, NULL},
  {405, NULL, EPERM,     S3_EC_CLIENT,   N, N, N, NULL},
  {408, NULL, ETIMEDOUT, S3_EC_TIMEOUT,  R, N, N, NULL},
  {409, NULL, EBUSY,     S3_EC_CLIENT,   N, N, N, NULL},
  {411, NULL, EINVAL,    S3_EC_CLIENT,   N, N, N, NULL},
  {412, NULL, ESTALE,    S3_EC_CLIENT,   N, N, N, NULL},
  {413, NULL, EFBIG,     S3_EC_CLIENT,   N, N, N, NULL},
  {414, NULL, ENAMETOOLONG, S3_EC_CLIENT, N, N, N, NULL},
  {416, NULL, ERANGE,    S3_EC_NOTFOUND, N, N, N, NULL},
  {429, NULL, EAGAIN,    S3_EC_THROTTLE, R, B, N, NULL},
  {500, NULL, EIO,       S3_EC_SERVER,   R, N, N, NULL},
  {501, NULL, EOPNOTSUPP, S3_EC_CLIENT,  N, N, N, NULL},
  {502, NULL, EIO,       S3_EC_SERVER,   R, N, N, NULL},
  {503, NULL, EAGAIN,    S3_EC_THROTTLE, R, B, N, NULL},
  {504, NULL, EIO,       S3_EC_SERVER,   R, N, N, NULL},
  {507, NULL, ENOSPC,    S3_EC_SERVER,   N, N, N, NULL},
  /* Classes, by status / 100 (kept in the status column). */
  {3,   NULL, EIO,       S3_EC_PROTOCOL, N, N, N, NULL}, /* redirect we do
                                                            not follow */
  {4,   NULL, EIO,       S3_EC_CLIENT,   N, N, N, NULL},
  {5,   NULL, EIO,       S3_EC_SERVER,   R, N, N, NULL},
  /* 200 with an <Error> body (Complete, Copy) and a code we do not know:
     the server failed after accepting the request. */
  {2,   NULL, EIO,       S3_EC_SERVER,   N, N, N, NULL},
};
/* clang-format on */

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void fill(const struct err_row *r, struct s3_err_map *out)
{
  out->err = r->err;
  out->cls = r->cls;
  out->retryable = r->retryable;
  out->before_send = r->before_send;
  out->log_hint = r->log_hint;
}

static const struct err_row *lookup(long status, const char *code)
{
  if (code && *code) {
    for (size_t i = 0; i < NELEM(s3_codes); i++)
      if ((!s3_codes[i].status || s3_codes[i].status == status) &&
          !strcmp(s3_codes[i].code, code))
        return &s3_codes[i];
  }
  for (size_t i = 0; i < NELEM(s3_status); i++)
    if (s3_status[i].status >= 100 && s3_status[i].status == status)
      return &s3_status[i];
  for (size_t i = 0; i < NELEM(s3_status); i++)
    if (s3_status[i].status < 100 && s3_status[i].status == status / 100)
      return &s3_status[i];
  return NULL;
}

void s3_err_from_http(long status, const char *code, struct s3_err_map *out)
{
  /* Outside 3xx-5xx: the server speaks something other than HTTP/S3. */
  static const struct err_row odd = {0, NULL, EPROTO, S3_EC_PROTOCOL,
                                     false, false, false, NULL};
  const struct err_row *r = lookup(status, code);

  fill(r ? r : &odd, out);
}

const char *s3_err_hint(const char *code, long status)
{
  const struct err_row *r = lookup(status, code);

  return r && r->log_hint ? r->hint : NULL;
}

const char *s3_err_class_name(enum s3_err_class cls)
{
  static const char *const names[S3_EC_COUNT] = {
      [S3_EC_NONE] = "none",         [S3_EC_CLIENT] = "client",
      [S3_EC_AUTH] = "auth",         [S3_EC_NOTFOUND] = "notfound",
      [S3_EC_THROTTLE] = "throttle", [S3_EC_SERVER] = "server",
      [S3_EC_NETWORK] = "network",   [S3_EC_TIMEOUT] = "timeout",
      [S3_EC_PROTOCOL] = "protocol",
  };

  if ((unsigned)cls >= S3_EC_COUNT)
    return "unknown";
  return names[cls];
}

/*
 * curl transport failures. log_hint marks the ones a person must fix (TLS
 * trust, proxy): log curl's error buffer once.
 */
struct curl_row {
  int code;
  int err;
  enum s3_err_class cls;
  bool retryable, before_send, log_hint;
};

/* clang-format off */
static const struct curl_row curl_codes[] = {
  {CURLE_OK,                    0,            S3_EC_NONE,     N, N, N},
  /* Configuration or our own misuse of curl: retrying cannot help. */
  {CURLE_UNSUPPORTED_PROTOCOL,  EINVAL,       S3_EC_CLIENT,   N, B, H},
  {CURLE_FAILED_INIT,           EIO,          S3_EC_CLIENT,   N, B, N},
  {CURLE_URL_MALFORMAT,         EINVAL,       S3_EC_CLIENT,   N, B, H},
  {CURLE_NOT_BUILT_IN,          EOPNOTSUPP,   S3_EC_CLIENT,   N, B, H},
  {CURLE_BAD_FUNCTION_ARGUMENT, EINVAL,       S3_EC_CLIENT,   N, B, N},
  {CURLE_UNKNOWN_OPTION,        EINVAL,       S3_EC_CLIENT,   N, B, N},
  {CURLE_OUT_OF_MEMORY,         ENOMEM,       S3_EC_CLIENT,   N, N, N},
  /* Never reached the server: safe to repeat anything. */
  {CURLE_COULDNT_RESOLVE_PROXY, EHOSTUNREACH, S3_EC_NETWORK,  R, B, N},
  {CURLE_COULDNT_RESOLVE_HOST,  EHOSTUNREACH, S3_EC_NETWORK,  R, B, N},
  {CURLE_COULDNT_CONNECT,       ECONNREFUSED, S3_EC_NETWORK,  R, B, N},
  {CURLE_INTERFACE_FAILED,      EADDRNOTAVAIL, S3_EC_NETWORK, N, B, H},
  /* Handshake failed (often a reset under load); no request was sent. */
  {CURLE_SSL_CONNECT_ERROR,     ECONNRESET,   S3_EC_NETWORK,  R, B, N},
  /* TLS trust and setup: a person must fix the certificates. */
  {CURLE_PEER_FAILED_VERIFICATION, EPROTO,    S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_CERTPROBLEM,       EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_CIPHER,            EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_CACERT_BADFILE,    EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_CRL_BADFILE,       EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_ISSUER_ERROR,      EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_ENGINE_NOTFOUND,   EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_ENGINE_SETFAILED,  EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_SSL_ENGINE_INITFAILED, EPROTO,       S3_EC_NETWORK,  N, B, H},
  {CURLE_USE_SSL_FAILED,        EPROTO,       S3_EC_NETWORK,  N, B, H},
#if LIBCURL_VERSION_NUM >= 0x074d00 /* 7.77.0 */
  {CURLE_SSL_CLIENTCERT,        EPROTO,       S3_EC_NETWORK,  N, B, H},
#endif
#if LIBCURL_VERSION_NUM >= 0x074900 /* 7.73.0 */
  {CURLE_PROXY,                 EPROTO,       S3_EC_NETWORK,  N, B, H},
#endif
  {CURLE_SSL_SHUTDOWN_FAILED,   EIO,          S3_EC_NETWORK,  R, N, N},
  /* Time ran out: the server may have acted. */
  {CURLE_OPERATION_TIMEDOUT,    ETIMEDOUT,    S3_EC_TIMEOUT,  R, N, N},
  /* Connection lost mid-request: the server may have acted. */
  {CURLE_SEND_ERROR,            ECONNRESET,   S3_EC_NETWORK,  R, N, N},
  {CURLE_RECV_ERROR,            ECONNRESET,   S3_EC_NETWORK,  R, N, N},
  {CURLE_GOT_NOTHING,           ECONNRESET,   S3_EC_NETWORK,  R, N, N},
  {CURLE_PARTIAL_FILE,          EIO,          S3_EC_NETWORK,  R, N, N},
  {CURLE_UPLOAD_FAILED,         EIO,          S3_EC_NETWORK,  R, N, N},
  {CURLE_HTTP2,                 ECONNRESET,   S3_EC_NETWORK,  R, N, N},
  {CURLE_HTTP2_STREAM,          ECONNRESET,   S3_EC_NETWORK,  R, N, N},
  {CURLE_HTTP3,                 ECONNRESET,   S3_EC_NETWORK,  R, N, N},
  {CURLE_QUIC_CONNECT_ERROR,    ECONNRESET,   S3_EC_NETWORK,  R, B, N},
  {CURLE_AGAIN,                 EAGAIN,       S3_EC_NETWORK,  R, N, N},
  /* The server answered something that is not sane HTTP. */
  {CURLE_WEIRD_SERVER_REPLY,    EPROTO,       S3_EC_PROTOCOL, R, N, N},
  {CURLE_BAD_CONTENT_ENCODING,  EPROTO,       S3_EC_PROTOCOL, N, N, N},
  {CURLE_RANGE_ERROR,           EPROTO,       S3_EC_PROTOCOL, N, N, N},
  {CURLE_TOO_MANY_REDIRECTS,    ELOOP,        S3_EC_PROTOCOL, N, N, H},
  {CURLE_HTTP_RETURNED_ERROR,   EIO,          S3_EC_PROTOCOL, N, N, N},
  {CURLE_FILESIZE_EXCEEDED,     EFBIG,        S3_EC_PROTOCOL, N, N, N},
  /*
   * Our write callback took less than it was given: it refused the body
   * (too long for the buffer, XML the parser rejected). The callback has
   * recorded the real reason, which the caller should prefer; this is the
   * fallback.
   */
  {CURLE_WRITE_ERROR,           EIO,          S3_EC_PROTOCOL, N, N, N},
  /* Our read callback failed (local source) or could not rewind. */
  {CURLE_READ_ERROR,            EIO,          S3_EC_CLIENT,   N, N, N},
  {CURLE_SEND_FAIL_REWIND,      EIO,          S3_EC_CLIENT,   N, N, N},
  /* We cancelled (shutdown, abandoned request). */
  {CURLE_ABORTED_BY_CALLBACK,   ECANCELED,    S3_EC_CLIENT,   N, N, N},
  {CURLE_LOGIN_DENIED,          EACCES,       S3_EC_AUTH,     N, N, H},
  {CURLE_REMOTE_ACCESS_DENIED,  EACCES,       S3_EC_AUTH,     N, N, N},
#if LIBCURL_VERSION_NUM >= 0x075400 /* 7.84.0 */
  {CURLE_UNRECOVERABLE_POLL,    EIO,          S3_EC_CLIENT,   N, N, N},
#endif
};
/* clang-format on */

#undef R
#undef B
#undef H
#undef N

void s3_err_from_curl(int curl_code, struct s3_err_map *out)
{
  for (size_t i = 0; i < NELEM(curl_codes); i++) {
    const struct curl_row *r = &curl_codes[i];

    if (r->code == curl_code) {
      out->err = r->err;
      out->cls = r->cls;
      out->retryable = r->retryable;
      out->before_send = r->before_send;
      out->log_hint = r->log_hint;
      return;
    }
  }
  /* A code newer than this table: a transport failure, not repeated. */
  out->err = EIO;
  out->cls = S3_EC_NETWORK;
  out->retryable = false;
  out->before_send = false;
  out->log_hint = true;
}
