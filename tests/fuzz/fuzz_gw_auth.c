/*
 * fuzz_gw_auth: the gateway's SigV4 verification, gw_auth_verify
 * (gateway/gw_auth.h), with fuzzer-chosen method, path, query, headers and
 * clock, in two modes:
 *
 *  - raw (flags bit 0 clear): every header, the Authorization and
 *    x-amz-date values included, comes from the input: the parser of
 *    Authorization (Credential, SignedHeaders, Signature) and the checks
 *    before the signature see anything;
 *  - signed (bit 0 set): the request is signed by our client's signer
 *    (s3_sigv4_authorization) with the gateway's keys, a fuzzer-chosen
 *    region, x-amz-date and clock skew, plus fuzzer-chosen extra headers
 *    (names from the token alphabet, any values).
 *
 * Input: byte 0 flags (bit 0 signed mode; signed mode: bit 1 the skew is
 * within the allowed 15 minutes, bit 2 no x-amz-content-sha256 but the
 * default payload; raw mode: bit 1 a default payload, bit 2 no query,
 * bit 3 the token header is named), byte 1
 * the number of extra headers (mod 9), bytes 2-3 the time, bytes 4-5 the
 * skew, bytes 6-8 mutation positions, then NUL-separated strings: method,
 * path, query, then the region and the x-amz-content-sha256 value (signed
 * mode) or the x-amz-date and Authorization values (raw mode), then the
 * extra headers' names and values.
 *
 * Properties (abort() on violation):
 *  - any input: 0 with status 0 and code ""; -EINVAL with 400; -EACCES
 *    with 403; a code and a NUL-terminated reason; never another value;
 *  - signed mode: a request our signer signed verifies (0, the region
 *    echoed) when x-amz-date is within the skew, and is refused
 *    RequestTimeTooSkewed otherwise; every header signed is reported so by
 *    gw_auth_signed; changing one byte of the method, the path or the
 *    signature makes it SignatureDoesNotMatch.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gateway/gw_auth.h"
#include "tests/fuzz/fuzz_common.h"

#define MAX_EXTRA 8
#define N_OURS 3 /* host, x-amz-date, x-amz-content-sha256 */
#define AK "AKIDFUZZ"
#define SK "fuzz/secret+key"
#define T0 1700000000

static const struct gw_auth_keys keys = {AK, SK};

static void check_result(int rc, const struct gw_auth_result *res)
{
  FUZZ_ASSERT(res->code != NULL, "no code");
  FUZZ_ASSERT(memchr(res->why, '\0', sizeof(res->why)), "why unterminated");
  FUZZ_ASSERT(memchr(res->region, '\0', sizeof(res->region)),
              "region unterminated");
  switch (rc) {
  case 0:
    FUZZ_ASSERT(res->status == 0 && res->code[0] == '\0',
                "success with status %d code %s", res->status, res->code);
    break;
  case -EINVAL:
    FUZZ_ASSERT(res->status == 400 && res->code[0], "-EINVAL with %d %s",
                res->status, res->code);
    break;
  case -EACCES:
    FUZZ_ASSERT(res->status == 403 && res->code[0], "-EACCES with %d %s",
                res->status, res->code);
    break;
  case -ENOMEM:
    break;
  default:
    FUZZ_ASSERT(0, "gw_auth_verify returned %d", rc);
  }
}

/*
 * src mapped to the token alphabet (a header name or a region) into
 * dst[max + 1]: at most max characters, at least one.
 */
static void to_token(char *dst, size_t max, const char *src, bool upper_too)
{
  static const char alpha[] = "abcdefghijklmnopqrstuvwxyz0123456789-_."
                              "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  size_t n = upper_too ? sizeof(alpha) - 1 : sizeof(alpha) - 1 - 26;
  size_t i;

  for (i = 0; src[i] && i < max; i++)
    dst[i] = alpha[(unsigned char)src[i] % n];
  if (i == 0)
    dst[i++] = 'x';
  dst[i] = '\0';
}

static bool presign_param(const char *q)
{
  return strstr(q, "X-Amz-Signature=") || strstr(q, "X-Amz-Credential=");
}

static void expect_mismatch(const struct gw_auth_req *req, time_t now,
                            const char *what)
{
  struct gw_auth_result res;
  int rc = gw_auth_verify(&keys, req, now, &res);

  check_result(rc, &res);
  if (FUZZ_OOM(rc))
    return;
  FUZZ_ASSERT(rc == -EACCES && strcmp(res.code, "SignatureDoesNotMatch") == 0,
              "changed %s: %d %s (%s)", what, rc, res.code, res.why);
}

static void signed_mode(struct fz *f, uint8_t flags, char **str, size_t n_extra,
                        const uint8_t *mut)
{
  struct s3_kv h[N_OURS + MAX_EXTRA];
  struct s3_sigv4_input in;
  struct gw_auth_req req;
  struct gw_auth_result res;
  char date[17], *authz = NULL, region[32], names[MAX_EXTRA][41], sig[65];
  const char *payload;
  size_t n = 0;
  time_t t = T0 + (time_t)fz_u16(f) * 37, now;
  int16_t skew_raw = (int16_t)fz_u16(f);
  long skew;
  int rc;

  if (!str[0][0] || presign_param(str[2]))
    return; /* refused before any signature: raw mode covers it */
  if (flags & 2)
    skew = skew_raw % (GW_AUTH_MAX_SKEW_S + 1);
  else
    skew = (skew_raw >= 0 ? 1 : -1) *
           (GW_AUTH_MAX_SKEW_S + 1 + labs((long)skew_raw));
  now = t - skew;
  to_token(region, sizeof(region) - 1, str[3], false);
  gw_amz_date(t, date);
  payload = flags & 4 ? S3_EMPTY_SHA256 : str[4];
  if (!payload[0])
    return; /* an empty hash is "missing": raw mode covers it */

  h[n++] = (struct s3_kv){"Host", "gw.example:7490"};
  h[n++] = (struct s3_kv){"X-Amz-Date", date};
  if (!(flags & 4))
    h[n++] = (struct s3_kv){"x-amz-content-sha256", payload};
  for (size_t i = 0; i < n_extra; i++) {
    char *k = names[i];
    to_token(k, sizeof(names[i]) - 1, str[5 + 2 * i], true);
    /* not a second Authorization, nor a hash the signer did not use */
    if (strcasecmp(k, "authorization") == 0 ||
        strcasecmp(k, "x-amz-content-sha256") == 0)
      k[0] = 'b';
    h[n++] = (struct s3_kv){k, str[6 + 2 * i]};
  }

  memset(&in, 0, sizeof(in));
  in.method = str[0];
  in.path = str[1];
  in.query = str[2];
  in.headers = h;
  in.n_headers = n;
  in.payload_hash = payload;
  in.amz_date = date;
  in.region = region;
  in.service = "s3";
  in.access_key = AK;
  in.secret_key = SK;
  rc = s3_sigv4_authorization(&in, &authz, sig);
  if (rc)
    return; /* -EINVAL: a bad %-escape in the query; raw mode covers it */

  {
    struct s3_kv all[N_OURS + MAX_EXTRA + 1];
    memcpy(all, h, n * sizeof(*h));
    all[n] = (struct s3_kv){"Authorization", authz};
    memset(&req, 0, sizeof(req));
    req.method = str[0];
    req.path = str[1];
    req.query = str[2];
    req.headers = all;
    req.n_headers = n + 1;
    req.token_header = "x-amz-rdma-token";
    req.default_payload = flags & 4 ? S3_EMPTY_SHA256 : NULL;

    rc = gw_auth_verify(&keys, &req, now, &res);
    check_result(rc, &res);
    if (FUZZ_OOM(rc))
      goto out;
    if (!(flags & 2)) {
      FUZZ_ASSERT(rc == -EACCES && !strcmp(res.code, "RequestTimeTooSkewed"),
                  "skew %ld s: %d %s (%s)", skew, rc, res.code, res.why);
      goto out;
    }
    FUZZ_ASSERT(rc == 0, "a request we signed is refused: %d %s (%s)", rc,
                res.code, res.why);
    FUZZ_ASSERT(strcmp(res.region, region) == 0, "region '%s' for '%s'",
                res.region, region);
    for (size_t i = 0; i < n; i++)
      FUZZ_ASSERT(gw_auth_signed(all, n + 1, h[i].key),
                  "gw_auth_signed: '%s' not signed", h[i].key);

    /* one byte changed: the signature must no longer match */
    {
      char *sigp = strstr(authz, "Signature=") + 10;
      size_t pos = mut[0] % 64;
      char old = sigp[pos];
      sigp[pos] = old == '0' ? '1' : '0';
      expect_mismatch(&req, now, "the signature");
      sigp[pos] = old;
    }
    {
      size_t len = strlen(str[0]), pos = mut[1] % len;
      char old = str[0][pos];
      str[0][pos] = (char)(old == 'A' ? 'B' : 'A');
      expect_mismatch(&req, now, "the method");
      str[0][pos] = old;
    }
    if (str[1][0]) {
      size_t len = strlen(str[1]), pos = mut[2] % len;
      char old = str[1][pos];
      str[1][pos] = (char)(old == '/' ? 'a' : '/');
      expect_mismatch(&req, now, "the path");
      str[1][pos] = old;
    }
  }
out:
  free(authz);
}

static void raw_mode(struct fz *f, uint8_t flags, char **str, size_t n_extra)
{
  struct s3_kv h[2 + MAX_EXTRA];
  struct gw_auth_req req;
  struct gw_auth_result res;
  time_t now = T0 + (time_t)(int16_t)fz_u16(f) * 60;
  size_t n = 0;
  int rc;

  h[n++] = (struct s3_kv){"x-amz-date", str[3]};
  h[n++] = (struct s3_kv){"Authorization", str[4]};
  for (size_t i = 0; i < n_extra; i++)
    h[n++] = (struct s3_kv){str[5 + 2 * i], str[6 + 2 * i]};
  memset(&req, 0, sizeof(req));
  req.method = str[0];
  req.path = str[1];
  req.query = flags & 4 ? NULL : str[2];
  req.headers = h;
  req.n_headers = n;
  req.token_header = flags & 8 ? "x-amz-rdma-token" : NULL;
  req.default_payload = flags & 2 ? S3_EMPTY_SHA256 : NULL;
  rc = gw_auth_verify(&keys, &req, now, &res);
  check_result(rc, &res);
  (void)gw_auth_signed(h, n, str[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  uint8_t flags = fz_u8(&f), mut[3];
  size_t n_extra = fz_u8(&f) % (MAX_EXTRA + 1), n_str = 5 + 2 * n_extra;
  struct fz clock = f;
  char *str[5 + 2 * MAX_EXTRA] = {0};

  fz_u16(&f), fz_u16(&f);
  mut[0] = fz_u8(&f), mut[1] = fz_u8(&f), mut[2] = fz_u8(&f);
  for (size_t i = 0; i < n_str; i++)
    if (!(str[i] = fz_str_until(&f, '\0', NULL)))
      goto out;
  if (flags & 1)
    signed_mode(&clock, flags, str, n_extra, mut);
  else
    raw_mode(&clock, flags, str, n_extra);
out:
  for (size_t i = 0; i < n_str; i++)
    free(str[i]);
  return 0;
}
