/*
 * test_gw_auth: the gateway's SigV4 verification (gateway/gw_auth.c).
 * Requests are signed by s3_sigv4_authorization (the client's signer) with a
 * fixed clock, then verified, then tampered with one field at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <errno.h>

#include "gateway/gw_auth.h"

#define AK "AKIDGATEWAYTEST00001"
#define SK "gateway-secret-key-000000000000000000001"
#define DATE "20261121T101500Z"
#define NOW 1795256100 /* 2026-11-21T10:15:00Z */
#define TOKEN "s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:0000000000100000"
#define PAYLOAD S3_UNSIGNED_PAYLOAD

static const struct gw_auth_keys keys = {AK, SK};

/* A request as the gateway receives it; fields may be changed after signing. */
struct treq {
  char method[16], path[128], query[128];
  struct s3_kv h[8];
  size_t n;
  char authz[512];
  char hval[8][512]; /* header values (mutable copies) */
};

static void add(struct treq *t, const char *k, const char *v)
{
  snprintf(t->hval[t->n], sizeof(t->hval[0]), "%s", v);
  t->h[t->n].key = k;
  t->h[t->n].val = t->hval[t->n];
  t->n++;
}

/* Sign with the headers added so far (all of them but user-agent). */
static void sign(struct treq *t, bool with_token_signed)
{
  struct s3_kv sh[8];
  size_t n = 0;
  char *authz = NULL;

  for (size_t i = 0; i < t->n; i++) {
    if (strcmp(t->h[i].key, "User-Agent") == 0)
      continue;
    if (!with_token_signed && strcmp(t->h[i].key, "x-amz-rdma-token") == 0)
      continue;
    sh[n++] = t->h[i];
  }
  struct s3_sigv4_input in = {
      .method = t->method, .path = t->path, .query = t->query,
      .headers = sh, .n_headers = n, .payload_hash = PAYLOAD,
      .amz_date = DATE, .region = "us-east-1", .service = "s3",
      .access_key = AK, .secret_key = SK,
  };
  assert_int_equal(s3_sigv4_authorization(&in, &authz, NULL), 0);
  snprintf(t->authz, sizeof(t->authz), "%s", authz);
  free(authz);
  add(t, "Authorization", t->authz);
}

static void make(struct treq *t, bool token, bool token_signed)
{
  memset(t, 0, sizeof(*t));
  snprintf(t->method, sizeof(t->method), "GET");
  snprintf(t->path, sizeof(t->path), "/bucket/dir/a%%20b.bin");
  snprintf(t->query, sizeof(t->query), "versionId=3&partNumber=1");
  add(t, "Host", "127.0.0.1:7481");
  add(t, "x-amz-date", DATE);
  add(t, "x-amz-content-sha256", PAYLOAD);
  add(t, "Range", "bytes=0-1048575");
  if (token)
    add(t, "x-amz-rdma-token", TOKEN);
  add(t, "User-Agent", "test/1.0");
  sign(t, token_signed);
}

static int verify(struct treq *t, time_t now, struct gw_auth_result *res)
{
  struct gw_auth_req r = {t->method, t->path, t->query, t->h, t->n,
                          "x-amz-rdma-token", NULL};
  return gw_auth_verify(&keys, &r, now, res);
}

static char *hv(struct treq *t, const char *name)
{
  for (size_t i = 0; i < t->n; i++)
    if (strcasecmp(t->h[i].key, name) == 0)
      return t->hval[i];
  fail_msg("no header %s", name);
  return NULL;
}

static void test_valid(void **state)
{
  struct treq t;
  struct gw_auth_result res;

  (void)state;
  make(&t, true, true);
  assert_int_equal(verify(&t, NOW, &res), 0);
  assert_string_equal(res.region, "us-east-1");
  /* the unsigned User-Agent may change freely */
  snprintf(hv(&t, "User-Agent"), 512, "other");
  assert_int_equal(verify(&t, NOW, &res), 0);
  /* within the skew window */
  assert_int_equal(verify(&t, NOW + 14 * 60, &res), 0);
  assert_int_equal(verify(&t, NOW - 14 * 60, &res), 0);
  /* header names arrive in any case */
  t.h[0].key = "HOST";
  assert_int_equal(verify(&t, NOW, &res), 0);
  /* no token */
  make(&t, false, false);
  assert_int_equal(verify(&t, NOW, &res), 0);
}

static void expect_sig_mismatch(struct treq *t)
{
  struct gw_auth_result res;

  assert_int_equal(verify(t, NOW, &res), -EACCES);
  assert_int_equal(res.status, 403);
  assert_string_equal(res.code, "SignatureDoesNotMatch");
}

static void test_tampered(void **state)
{
  struct treq t;
  struct gw_auth_result res;

  (void)state;
  make(&t, true, true);
  snprintf(t.method, sizeof(t.method), "PUT");
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(t.path, sizeof(t.path), "/bucket/dir/a%%20c.bin");
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(t.path, sizeof(t.path), "/bucket/dir/a b.bin"); /* decoded */
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(t.query, sizeof(t.query), "versionId=4&partNumber=1");
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(t.query, sizeof(t.query), "versionId=3");
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(hv(&t, "Range"), 512, "bytes=0-1048576");
  expect_sig_mismatch(&t);

  make(&t, true, true);
  hv(&t, "x-amz-rdma-token")[13] = 'f'; /* pid changed */
  expect_sig_mismatch(&t);

  make(&t, true, true);
  memcpy(hv(&t, "x-amz-rdma-token") + 9, "put", 3); /* op flipped */
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(hv(&t, "Host"), 512, "127.0.0.1:7480");
  expect_sig_mismatch(&t);

  make(&t, true, true);
  snprintf(hv(&t, "x-amz-content-sha256"), 512, "%s", S3_EMPTY_SHA256);
  expect_sig_mismatch(&t);

  /* date changed within the same day: signature differs */
  make(&t, true, true);
  snprintf(hv(&t, "x-amz-date"), 512, "20261121T101501Z");
  expect_sig_mismatch(&t);

  /* signature's last digit changed */
  make(&t, true, true);
  {
    char *a = hv(&t, "Authorization");
    size_t n = strlen(a);
    a[n - 1] = a[n - 1] == '0' ? '1' : '0';
  }
  expect_sig_mismatch(&t);

  /* a signed header removed */
  make(&t, true, true);
  t.h[3].key = "X-Other";
  expect_sig_mismatch(&t);

  /* the wrong secret */
  make(&t, true, true);
  {
    struct gw_auth_keys other = {AK, "another-secret"};
    struct gw_auth_req r = {t.method, t.path, t.query, t.h, t.n,
                            "x-amz-rdma-token", NULL};
    assert_int_equal(gw_auth_verify(&other, &r, NOW, &res), -EACCES);
    assert_string_equal(res.code, "SignatureDoesNotMatch");
  }
}

static void test_skew_and_key(void **state)
{
  struct treq t;
  struct gw_auth_result res;

  (void)state;
  make(&t, false, false);
  assert_int_equal(verify(&t, NOW + 16 * 60, &res), -EACCES);
  assert_string_equal(res.code, "RequestTimeTooSkewed");
  assert_int_equal(verify(&t, NOW - 16 * 60, &res), -EACCES);
  assert_string_equal(res.code, "RequestTimeTooSkewed");

  {
    struct gw_auth_keys other = {"AKIDSOMEONEELSE", SK};
    struct gw_auth_req r = {t.method, t.path, t.query, t.h, t.n, NULL, NULL};
    assert_int_equal(gw_auth_verify(&other, &r, NOW, &res), -EACCES);
    assert_string_equal(res.code, "InvalidAccessKeyId");
  }
  /* x-amz-date malformed or missing */
  make(&t, false, false);
  snprintf(hv(&t, "x-amz-date"), 512, "2026-11-21T10:15:00Z");
  assert_int_equal(verify(&t, NOW, &res), -EACCES);
  make(&t, false, false);
  t.h[1].key = "x-not-date";
  assert_int_not_equal(verify(&t, NOW, &res), 0);
}

static void test_unsigned_token(void **state)
{
  struct treq t;
  struct gw_auth_result res;

  (void)state;
  make(&t, true, false);
  assert_int_equal(verify(&t, NOW, &res), -EACCES);
  assert_int_equal(res.status, 403);
  assert_string_equal(res.code, "AccessDenied");
  assert_non_null(strstr(res.why, "token"));
}

static void test_anonymous_presigned(void **state)
{
  struct treq t;
  struct gw_auth_result res;

  (void)state;
  make(&t, false, false);
  t.n--; /* drop Authorization */
  assert_int_equal(verify(&t, NOW, &res), -EACCES);
  assert_string_equal(res.code, "AccessDenied");

  make(&t, false, false);
  snprintf(t.query, sizeof(t.query),
           "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00");
  assert_int_equal(verify(&t, NOW, &res), -EACCES);
  assert_string_equal(res.code, "AccessDenied");
}

/* Without x-amz-content-sha256 (curl --aws-sigv4): only with a default. */
static void test_no_payload_header(void **state)
{
  struct treq t;
  struct gw_auth_result res;
  struct s3_kv sh[2];
  char *authz = NULL;

  (void)state;
  memset(&t, 0, sizeof(t));
  snprintf(t.method, sizeof(t.method), "GET");
  snprintf(t.path, sizeof(t.path), "/bucket/key");
  add(&t, "host", "127.0.0.1:7481");
  add(&t, "x-amz-date", DATE);
  sh[0] = t.h[0];
  sh[1] = t.h[1];
  struct s3_sigv4_input in = {
      .method = "GET", .path = t.path, .query = "", .headers = sh,
      .n_headers = 2, .payload_hash = S3_EMPTY_SHA256, .amz_date = DATE,
      .region = "us-east-1", .service = "s3", .access_key = AK,
      .secret_key = SK,
  };
  assert_int_equal(s3_sigv4_authorization(&in, &authz, NULL), 0);
  add(&t, "Authorization", authz);
  free(authz);
  struct gw_auth_req r = {t.method, t.path, t.query, t.h, t.n, NULL, NULL};
  assert_int_equal(gw_auth_verify(&keys, &r, NOW, &res), -EINVAL);
  assert_int_equal(res.status, 400);
  r.default_payload = S3_EMPTY_SHA256;
  assert_int_equal(gw_auth_verify(&keys, &r, NOW, &res), 0);
  r.default_payload = S3_UNSIGNED_PAYLOAD;
  assert_int_equal(gw_auth_verify(&keys, &r, NOW, &res), -EACCES);
}

static void test_signed_list(void **state)
{
  const struct s3_kv h[] = {
      {"Host", "x"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-rdma-token, "
       "Signature=00"},
  };

  (void)state;
  assert_true(gw_auth_signed(h, 2, "host"));
  assert_true(gw_auth_signed(h, 2, "X-Amz-Date"));
  assert_true(gw_auth_signed(h, 2, "x-amz-rdma-token"));
  assert_false(gw_auth_signed(h, 2, "x-amz-copy-source"));
  assert_false(gw_auth_signed(h, 2, "x-amz")); /* a prefix is not a name */
  assert_false(gw_auth_signed(h, 2, "signature"));
  assert_false(gw_auth_signed(h, 1, "host")); /* no Authorization */
}

static void test_malformed(void **state)
{
  static const struct {
    const char *authz;
    int rc;
  } cases[] = {
      {"AWS4-HMAC-SHA256", -EACCES},
      {"AWS AKID:sig", -EACCES},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3, "
       "SignedHeaders=host;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/ec2/aws4_request, "
       "SignedHeaders=host;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/2026112/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request/x, "
       "SignedHeaders=host;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "SignedHeaders=x-amz-date;host, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-date, Signature=00",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-date, Signature=" "000000000000000000000000000000000000000000000000000000000000000G",
       -EINVAL},
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      {"AWS4-HMAC-SHA256 SignedHeaders=host;x-amz-date, Credential=" AK
       "/20261121/us-east-1/s3/aws4_request, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      /* the credential's date is not x-amz-date's */
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261120/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EINVAL},
      /* well-formed, host not signed */
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "SignedHeaders=x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EACCES},
      /* well-formed, wrong signature */
      {"AWS4-HMAC-SHA256 Credential=" AK "/20261121/us-east-1/s3/aws4_request, "
       "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" "0000000000000000000000000000000000000000000000000000000000000000",
       -EACCES},
  };
  struct treq t;
  struct gw_auth_result res;

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    make(&t, false, false);
    snprintf(hv(&t, "Authorization"), 512, "%s", cases[i].authz);
    t.h[t.n - 1].val = cases[i].authz; /* may be longer than 160 */
    int rc = verify(&t, NOW, &res);
    if (rc != cases[i].rc)
      fail_msg("case %zu: rc %d, want %d (%s: %s)", i, rc, cases[i].rc,
               res.code, res.why);
    if (rc == -EINVAL)
      assert_int_equal(res.status, 400);
    else
      assert_int_equal(res.status, 403);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),
      cmocka_unit_test(test_tampered),
      cmocka_unit_test(test_skew_and_key),
      cmocka_unit_test(test_unsigned_token),
      cmocka_unit_test(test_anonymous_presigned),
      cmocka_unit_test(test_no_payload_header),
      cmocka_unit_test(test_signed_list),
      cmocka_unit_test(test_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
