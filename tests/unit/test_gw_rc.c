/*
 * test_gw_rc: the RC connect step's decisions without a device (gw_rc):
 * routes, methods, bodies, queries, malformed or unsigned token and PSN
 * (400 before the device is asked), a well-formed connect (501: rc not
 * served), --serve none, disconnect (204), the counters; and the rdx
 * error mapping (gw_rdx_error): rc's transfer errors are HTTP 500 with
 * reply 500, cma's are unchanged.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/gw_rc.h"
#include "gateway/gw_req.h"

#define ZEROS "0000000000000000000000000000000000000000" \
              "0000000000000000000000000000000000000000000000"
#define QP "01" ZEROS /* a QP token: transport RC, 88 hex digits */
#define DC "00" ZEROS /* transport DC */
#define AUTH "AWS4-HMAC-SHA256 Credential=a/20260101/us-east-1/s3/aws4_request, " \
             "SignedHeaders=host;x-amz-rdma-psn;x-amz-rdma-session;" \
             "x-amz-rdma-token, Signature=00"

static struct rdx_server *srv;
static struct gw_stats stats;

static int setup(void **state)
{
  char err[256];

  (void)state;
  return rdx_server_create(NULL, &srv, err, sizeof(err));
}

static int teardown(void **state)
{
  (void)state;
  rdx_server_destroy(srv);
  return 0;
}

/* The status of method path with these headers (NULL: absent). */
static int run(const char *method, const char *path, const char *query,
               int64_t body, const char *tok, const char *psn,
               const char *auth, struct gw_rc_answer *a)
{
  struct s3_kv h[4];
  size_t n = 0;
  struct gw_rc_req rq;

  if (auth)
    h[n++] = (struct s3_kv){"Authorization", auth};
  if (tok)
    h[n++] = (struct s3_kv){"x-amz-rdma-token", tok};
  if (psn)
    h[n++] = (struct s3_kv){"X-Amz-Rdma-Psn", psn};
  rq = (struct gw_rc_req){method, path, query, h, n, body, false};
  gw_rc_handle(srv, &stats, &rq, a);
  return a->status;
}

static void test_routes(void **state)
{
  struct gw_rc_answer a;

  (void)state;
  assert_true(gw_rc_path("/.s3rdma-rc/connect"));
  assert_true(gw_rc_path("/.s3rdma-rc"));
  assert_true(gw_rc_path("/.s3rdma-rc/x/y"));
  assert_false(gw_rc_path("/.s3rdma-rcx/connect"));
  assert_false(gw_rc_path("/bucket/.s3rdma-rc/connect"));
  assert_int_equal(run("GET", "/.s3rdma-rc/connect", "", -1, QP, "1", AUTH, &a),
                   405);
  assert_true(a.allow_post);
  assert_int_equal(run("PUT", "/.s3rdma-rc/disconnect", "", -1, NULL, NULL,
                       AUTH, &a), 405);
  assert_int_equal(run("POST", "/.s3rdma-rc/connectx", "", -1, QP, "1", AUTH,
                       &a), 404);
  assert_int_equal(run("POST", "/.s3rdma-rc", "", -1, NULL, NULL, AUTH, &a),
                   404);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", 1, QP, "1", AUTH, &a),
                   400);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "a=b", -1, QP, "1", AUTH,
                       &a), 400);
}

static void test_connect(void **state)
{
  struct gw_rc_answer a;
  struct gw_rc_req rq;
  struct s3_kv h[3] = {{"authorization", AUTH}, {"x-amz-rdma-token", QP},
                       {"x-amz-rdma-psn", "abcdef"}};
  uint64_t refused = stats.rc_connect_refused;

  (void)state;
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, QP, "abcdef",
                       AUTH, &a), 501);
  assert_null(a.code); /* no body, no x-amz-rdma-* */
  assert_string_equal(a.acc.session, "");
  assert_string_equal(a.acc.reply, "");
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", 0, QP "0", "1", AUTH,
                       &a), 400);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1,
                       DC, "1", AUTH, &a), 400); /* DC */
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, NULL, "1", AUTH,
                       &a), 400);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, QP, NULL, AUTH,
                       &a), 400);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, QP, "0", AUTH,
                       &a), 400);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, QP, "1000000",
                       AUTH, &a), 400);
  /* the token and PSN must be signed */
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, QP, "1",
                       "AWS4-HMAC-SHA256 SignedHeaders=host;x-amz-rdma-psn, "
                       "Signature=00", &a), 400);
  assert_int_equal(run("POST", "/.s3rdma-rc/connect", "", -1, QP, "1",
                       "AWS4-HMAC-SHA256 SignedHeaders=host;x-amz-rdma-token, "
                       "Signature=00", &a), 400);
  assert_int_equal(stats.rc_connect_refused, refused + 9);
  assert_int_equal(stats.rc_connects, 0);
  /* --serve none: 501 */
  rq = (struct gw_rc_req){"POST", "/.s3rdma-rc/connect", "", h, 3, -1, true};
  gw_rc_handle(srv, &stats, &rq, &a);
  assert_int_equal(a.status, 501);
  /* a repeated token */
  h[2] = (struct s3_kv){"x-amz-rdma-token", QP};
  rq.serve_none = false;
  gw_rc_handle(srv, &stats, &rq, &a);
  assert_int_equal(a.status, 400);
}

static void test_disconnect(void **state)
{
  struct gw_rc_answer a;
  struct s3_kv h[2] = {{"authorization", AUTH},
                       {"x-amz-rdma-session", "0123456789abcdef0123456789abcdef"}};
  struct gw_rc_req rq = {"POST", "/.s3rdma-rc/disconnect", "", h, 2, -1, false};
  uint64_t n = stats.rc_disconnects;

  (void)state;
  gw_rc_handle(srv, &stats, &rq, &a);
  assert_int_equal(a.status, 204);
  rq.n_hdrs = 1;
  gw_rc_handle(srv, &stats, &rq, &a);
  assert_int_equal(a.status, 204);
  assert_int_equal(stats.rc_disconnects, n + 2);
  assert_int_equal(stats.rc_sessions, 0);
}

static void test_rdx_error(void **state)
{
  static const int rc_500[] = {-ENOTCONN, -EFAULT, -ECONNRESET, -EIO,
                               -ETIMEDOUT, -ENOMEM};
  const char *code;
  unsigned reply;
  int status;

  (void)state;
  for (size_t i = 0; i < sizeof(rc_500) / sizeof(rc_500[0]); i++) {
    gw_rdx_error(RDX_RC, rc_500[i], &status, &code, &reply);
    assert_int_equal(status, 500);
    assert_string_equal(code, "RDMATransferFailed");
    assert_int_equal(reply, 500);
  }
  gw_rdx_error(RDX_RC, -EINVAL, &status, &code, &reply);
  assert_int_equal(status, 400);
  assert_string_equal(code, "InvalidRDMAToken");
  assert_int_equal(reply, 0);
  gw_rdx_error(RDX_RC, -EPERM, &status, &code, &reply);
  assert_int_equal(status, 403);
  assert_int_equal(reply, 0);
  /* cma: a bad address is the token's fault (no reply); a transfer that
     failed is 500 RDMATransferFailed with reply 500, as for rc */
  gw_rdx_error(RDX_CMA, -EFAULT, &status, &code, &reply);
  assert_int_equal(status, 400);
  assert_string_equal(code, "InvalidRDMAToken");
  assert_int_equal(reply, 0);
  gw_rdx_error(RDX_CMA, -ETIMEDOUT, &status, &code, &reply);
  assert_int_equal(status, 400);
  assert_string_equal(code, "RequestTimeout");
  gw_rdx_error(RDX_CMA, -EIO, &status, &code, &reply);
  assert_int_equal(status, 500);
  assert_string_equal(code, "RDMATransferFailed");
  assert_int_equal(reply, 500);
  gw_rdx_error(RDX_CMA, -EOPNOTSUPP, &status, &code, &reply);
  assert_int_equal(status, 501);
  assert_int_equal(reply, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_routes),
      cmocka_unit_test(test_connect),
      cmocka_unit_test(test_disconnect),
      cmocka_unit_test(test_rdx_error),
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
