/*
 * test_s3_err: s3_err's mapping of (HTTP status, S3 code) and of curl codes to
 * errno, class, retryable, before_send and log_hint, as a table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <errno.h>

#include "s3/s3_err.h"

#define R 1   /* retryable */
#define B 2   /* before_send */
#define H 4   /* log_hint */

static const struct http_case {
  long status;
  const char *code;
  int err;
  enum s3_err_class cls;
  int flags;
} http_cases[] = {
    /* not found */
    {404, "NoSuchKey", ENOENT, S3_EC_NOTFOUND, 0},
    {404, "NoSuchBucket", ENOENT, S3_EC_NOTFOUND, H},
    {404, "NoSuchUpload", ENOENT, S3_EC_NOTFOUND, 0},
    {404, "NoSuchVersion", ENOENT, S3_EC_NOTFOUND, 0},
    {404, NULL, ENOENT, S3_EC_NOTFOUND, 0},          /* HEAD: no body */
    {404, "", ENOENT, S3_EC_NOTFOUND, 0},
    {404, "NoSuchWebsiteConfiguration", ENOENT, S3_EC_NOTFOUND, 0},
    /* auth */
    {403, "AccessDenied", EACCES, S3_EC_AUTH, 0},
    {403, "AllAccessDisabled", EACCES, S3_EC_AUTH, H},
    {403, "InvalidAccessKeyId", EACCES, S3_EC_AUTH, H},
    {403, "SignatureDoesNotMatch", EACCES, S3_EC_AUTH, H},
    {403, "RequestTimeTooSkewed", EACCES, S3_EC_AUTH, H},
    {400, "ExpiredToken", EACCES, S3_EC_AUTH, H},
    {400, "InvalidToken", EACCES, S3_EC_AUTH, H},
    {400, "AuthorizationHeaderMalformed", EACCES, S3_EC_AUTH, H},
    {403, "UserSuspended", EACCES, S3_EC_AUTH, H},
    {403, NULL, EACCES, S3_EC_AUTH, 0},
    {401, NULL, EACCES, S3_EC_AUTH, 0},
    /* buckets */
    {409, "BucketNotEmpty", ENOTEMPTY, S3_EC_CLIENT, 0},
    {409, "BucketAlreadyExists", EEXIST, S3_EC_CLIENT, 0},
    {409, "BucketAlreadyOwnedByYou", EEXIST, S3_EC_CLIENT, 0},
    {400, "InvalidBucketName", EINVAL, S3_EC_CLIENT, 0},
    {409, "OperationAborted", EBUSY, S3_EC_CLIENT, R},
    {409, NULL, EBUSY, S3_EC_CLIENT, 0},
    /* ranges, conditions, sizes */
    {416, "InvalidRange", ERANGE, S3_EC_NOTFOUND, 0},
    {416, NULL, ERANGE, S3_EC_NOTFOUND, 0},
    {412, "PreconditionFailed", ESTALE, S3_EC_CLIENT, 0},
    {412, NULL, ESTALE, S3_EC_CLIENT, 0},
    {400, "EntityTooLarge", EFBIG, S3_EC_CLIENT, 0},
    {413, NULL, EFBIG, S3_EC_CLIENT, 0},
    {400, "EntityTooSmall", EINVAL, S3_EC_CLIENT, 0},
    {400, "InvalidPart", EINVAL, S3_EC_CLIENT, 0},
    {400, "InvalidPartOrder", EINVAL, S3_EC_CLIENT, 0},
    {400, "KeyTooLongError", ENAMETOOLONG, S3_EC_CLIENT, 0},
    {414, NULL, ENAMETOOLONG, S3_EC_CLIENT, 0},
    {400, "MetadataTooLarge", E2BIG, S3_EC_CLIENT, 0},
    {403, "QuotaExceeded", EDQUOT, S3_EC_CLIENT, 0},
    {400, "TooManyBuckets", EDQUOT, S3_EC_CLIENT, 0},
    {507, "XMinioStorageFull", ENOSPC, S3_EC_SERVER, 0},
    {507, NULL, ENOSPC, S3_EC_SERVER, 0},
    /* methods */
    {405, "MethodNotAllowed", EPERM, S3_EC_CLIENT, 0},
    {405, NULL, EPERM, S3_EC_CLIENT, 0},
    {501, "NotImplemented", EOPNOTSUPP, S3_EC_CLIENT, 0},
    {501, NULL, EOPNOTSUPP, S3_EC_CLIENT, 0},
    {400, "InvalidArgument", EINVAL, S3_EC_CLIENT, 0},
    /* NVIDIA's RDMA protocol for S3 */
    {400, "InvalidRDMAToken", EINVAL, S3_EC_CLIENT, H},
    {200, "RDMANotSupported", EOPNOTSUPP, S3_EC_CLIENT, 0},
    {500, "RDMATransferFailed", EIO, S3_EC_SERVER, R},
    {400, "MalformedXML", EINVAL, S3_EC_CLIENT, 0},
    {411, "MissingContentLength", EINVAL, S3_EC_CLIENT, 0},
    {403, "InvalidObjectState", EIO, S3_EC_CLIENT, H},
    {301, "PermanentRedirect", EIO, S3_EC_PROTOCOL, H},
    {307, "TemporaryRedirect", EIO, S3_EC_PROTOCOL, R},
    {301, NULL, EIO, S3_EC_PROTOCOL, 0},
    /* damaged in transit, timeouts */
    {400, "BadDigest", EIO, S3_EC_NETWORK, R},
    {400, "XAmzContentSHA256Mismatch", EIO, S3_EC_NETWORK, R},
    {400, "IncompleteBody", EIO, S3_EC_NETWORK, R},
    {400, "RequestTimeout", ETIMEDOUT, S3_EC_TIMEOUT, R},
    {408, NULL, ETIMEDOUT, S3_EC_TIMEOUT, R},
    /* throttling: safe to repeat anything */
    {503, "SlowDown", EAGAIN, S3_EC_THROTTLE, R | B},
    {503, NULL, EAGAIN, S3_EC_THROTTLE, R | B},
    {503, "ServiceUnavailable", EAGAIN, S3_EC_THROTTLE, R | B},
    {429, NULL, EAGAIN, S3_EC_THROTTLE, R | B},
    {429, "TooManyRequests", EAGAIN, S3_EC_THROTTLE, R | B},
    {503, "RequestLimitExceeded", EAGAIN, S3_EC_THROTTLE, R | B},
    {400, "ThrottlingException", EAGAIN, S3_EC_THROTTLE, R | B},
    {503, "XMinioServerNotInitialized", EAGAIN, S3_EC_THROTTLE, R | B},
    /* server failures: retryable, but the server may have acted */
    {500, "InternalError", EIO, S3_EC_SERVER, R},
    {500, NULL, EIO, S3_EC_SERVER, R},
    {502, NULL, EIO, S3_EC_SERVER, R},
    {504, NULL, EIO, S3_EC_SERVER, R},
    {200, "InternalError", EIO, S3_EC_SERVER, R},    /* 200 + <Error> */
    {200, "SomethingNew", EIO, S3_EC_SERVER, 0},
    /* an unknown code falls back to the status, then its class */
    {400, "SomethingNew", EINVAL, S3_EC_CLIENT, 0},
    {403, "SomethingNew", EACCES, S3_EC_AUTH, 0},
    {503, "SomethingNew", EAGAIN, S3_EC_THROTTLE, R | B},
    {418, NULL, EIO, S3_EC_CLIENT, 0},
    {451, "SomethingNew", EIO, S3_EC_CLIENT, 0},
    {599, NULL, EIO, S3_EC_SERVER, R},
    {505, "SomethingNew", EIO, S3_EC_SERVER, R},
    {399, NULL, EIO, S3_EC_PROTOCOL, 0},
    {304, NULL, EIO, S3_EC_PROTOCOL, 0},
    /* codes are case-sensitive */
    {404, "nosuchkey", ENOENT, S3_EC_NOTFOUND, 0},
    {500, "slowdown", EIO, S3_EC_SERVER, R},
    /* not HTTP at all */
    {0, NULL, EPROTO, S3_EC_PROTOCOL, 0},
    {700, NULL, EPROTO, S3_EC_PROTOCOL, 0},
    {-1, "", EPROTO, S3_EC_PROTOCOL, 0},
};

static void test_http_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(http_cases) / sizeof(http_cases[0]); i++) {
    const struct http_case *c = &http_cases[i];
    struct s3_err_map m;

    memset(&m, 0xa5, sizeof(m));
    s3_err_from_http(c->status, c->code, &m);
    if (m.err != c->err || m.cls != c->cls ||
        m.retryable != !!(c->flags & R) ||
        m.before_send != !!(c->flags & B) || m.log_hint != !!(c->flags & H))
      fail_msg("%ld %s: got errno %d class %s r%d b%d h%d, want errno %d "
               "class %s flags %d",
               c->status, c->code ? c->code : "(null)", m.err,
               s3_err_class_name(m.cls), m.retryable, m.before_send,
               m.log_hint, c->err, s3_err_class_name(c->cls), c->flags);
    /* a hint exactly where log_hint is set */
    if ((s3_err_hint(c->code, c->status) != NULL) != m.log_hint &&
        c->code && *c->code)
      fail_msg("%ld %s: hint/log_hint disagree", c->status, c->code);
  }
}

static const struct curl_case {
  int code;
  int err;
  enum s3_err_class cls;
  int flags;
} curl_cases[] = {
    {CURLE_OK, 0, S3_EC_NONE, 0},
    {CURLE_COULDNT_RESOLVE_HOST, EHOSTUNREACH, S3_EC_NETWORK, R | B},
    {CURLE_COULDNT_RESOLVE_PROXY, EHOSTUNREACH, S3_EC_NETWORK, R | B},
    {CURLE_COULDNT_CONNECT, ECONNREFUSED, S3_EC_NETWORK, R | B},
    {CURLE_OPERATION_TIMEDOUT, ETIMEDOUT, S3_EC_TIMEOUT, R},
    {CURLE_SEND_ERROR, ECONNRESET, S3_EC_NETWORK, R},
    {CURLE_RECV_ERROR, ECONNRESET, S3_EC_NETWORK, R},
    {CURLE_GOT_NOTHING, ECONNRESET, S3_EC_NETWORK, R},
    {CURLE_PARTIAL_FILE, EIO, S3_EC_NETWORK, R},
    {CURLE_UPLOAD_FAILED, EIO, S3_EC_NETWORK, R},
    {CURLE_HTTP2_STREAM, ECONNRESET, S3_EC_NETWORK, R},
    {CURLE_SSL_CONNECT_ERROR, ECONNRESET, S3_EC_NETWORK, R | B},
    {CURLE_PEER_FAILED_VERIFICATION, EPROTO, S3_EC_NETWORK, B | H},
    {CURLE_SSL_CACERT_BADFILE, EPROTO, S3_EC_NETWORK, B | H},
    {CURLE_SSL_CERTPROBLEM, EPROTO, S3_EC_NETWORK, B | H},
    {CURLE_SSL_CIPHER, EPROTO, S3_EC_NETWORK, B | H},
    {CURLE_SSL_CLIENTCERT, EPROTO, S3_EC_NETWORK, B | H},
    {CURLE_WRITE_ERROR, EIO, S3_EC_PROTOCOL, 0},
    {CURLE_READ_ERROR, EIO, S3_EC_CLIENT, 0},
    {CURLE_ABORTED_BY_CALLBACK, ECANCELED, S3_EC_CLIENT, 0},
    {CURLE_OUT_OF_MEMORY, ENOMEM, S3_EC_CLIENT, 0},
    {CURLE_URL_MALFORMAT, EINVAL, S3_EC_CLIENT, B | H},
    {CURLE_UNSUPPORTED_PROTOCOL, EINVAL, S3_EC_CLIENT, B | H},
    {CURLE_TOO_MANY_REDIRECTS, ELOOP, S3_EC_PROTOCOL, H},
    {CURLE_WEIRD_SERVER_REPLY, EPROTO, S3_EC_PROTOCOL, R},
    {CURLE_BAD_CONTENT_ENCODING, EPROTO, S3_EC_PROTOCOL, 0},
    {CURLE_FILESIZE_EXCEEDED, EFBIG, S3_EC_PROTOCOL, 0},
    {CURLE_SEND_FAIL_REWIND, EIO, S3_EC_CLIENT, 0},
    {CURLE_AGAIN, EAGAIN, S3_EC_NETWORK, R},
    {CURLE_PROXY, EPROTO, S3_EC_NETWORK, B | H},
    /* unknown to the table */
    {9999, EIO, S3_EC_NETWORK, H},
    {-1, EIO, S3_EC_NETWORK, H},
};

static void test_curl_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(curl_cases) / sizeof(curl_cases[0]); i++) {
    const struct curl_case *c = &curl_cases[i];
    struct s3_err_map m;

    memset(&m, 0xa5, sizeof(m));
    s3_err_from_curl(c->code, &m);
    if (m.err != c->err || m.cls != c->cls ||
        m.retryable != !!(c->flags & R) ||
        m.before_send != !!(c->flags & B) || m.log_hint != !!(c->flags & H))
      fail_msg("curl %d (%s): got errno %d class %s r%d b%d h%d", c->code,
               c->code >= 0 && c->code < CURL_LAST
                   ? curl_easy_strerror((CURLcode)c->code)
                   : "?",
               m.err, s3_err_class_name(m.cls), m.retryable, m.before_send,
               m.log_hint);
  }
}

/* Every curl code this libcurl knows maps to something consistent. */
static void test_curl_all_codes(void **state)
{
  (void)state;
  for (int code = 0; code < CURL_LAST; code++) {
    struct s3_err_map m;

    s3_err_from_curl(code, &m);
    if (code == CURLE_OK) {
      assert_int_equal(m.err, 0);
      continue;
    }
    assert_true(m.err > 0);
    assert_true(m.cls > S3_EC_NONE && m.cls < S3_EC_COUNT);
  }
}

static void test_hints(void **state)
{
  (void)state;
  assert_string_equal(s3_err_hint("SignatureDoesNotMatch", 403),
                      "the secret key does not match the access key "
                      "(check credentials)");
  assert_string_equal(s3_err_hint("InvalidAccessKeyId", 403),
                      "the access key is unknown to the server");
  assert_string_equal(s3_err_hint("RequestTimeTooSkewed", 403),
                      "the clock differs from the server's by more than 15 "
                      "minutes");
  assert_non_null(s3_err_hint("PermanentRedirect", 301));
  assert_non_null(s3_err_hint("ExpiredToken", 400));
  assert_null(s3_err_hint("NoSuchKey", 404));
  assert_null(s3_err_hint("AccessDenied", 403));
  assert_null(s3_err_hint(NULL, 403));
  assert_null(s3_err_hint("", 500));
  assert_null(s3_err_hint("Whatever", 0));
}

static void test_class_names(void **state)
{
  static const char *const want[S3_EC_COUNT] = {
      "none",   "client",  "auth",    "notfound", "throttle",
      "server", "network", "timeout", "protocol",
  };

  (void)state;
  for (int c = 0; c < S3_EC_COUNT; c++)
    assert_string_equal(s3_err_class_name((enum s3_err_class)c), want[c]);
  assert_string_equal(s3_err_class_name(S3_EC_COUNT), "unknown");
  assert_string_equal(s3_err_class_name((enum s3_err_class)-1), "unknown");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_http_table),
      cmocka_unit_test(test_curl_table),
      cmocka_unit_test(test_curl_all_codes),
      cmocka_unit_test(test_hints),
      cmocka_unit_test(test_class_names),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
