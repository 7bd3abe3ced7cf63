/*
 * gw_auth: SigV4 verification (see gw_auth.h). Pure functions.
 */
#include "gateway/gw_auth.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#define ALGO "AWS4-HMAC-SHA256"
#define MAX_SIGNED 64

const char *gw_header_get(const struct s3_kv *h, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (h[i].key && strcasecmp(h[i].key, name) == 0)
      return h[i].val ? h[i].val : "";
  return NULL;
}

void gw_amz_date(time_t t, char buf[17])
{
  struct tm tm;

  gmtime_r(&t, &tm);
  strftime(buf, 17, "%Y%m%dT%H%M%SZ", &tm);
}

static int fail(struct gw_auth_result *res, int rc, int status,
                const char *code, const char *why)
{
  res->status = status;
  res->code = code;
  snprintf(res->why, sizeof(res->why), "%s", why);
  return rc;
}

#define MALFORMED(why)                                                         \
  fail(res, -EINVAL, 400, "AuthorizationHeaderMalformed", (why))
#define DENIED(code, why) fail(res, -EACCES, 403, (code), (why))

/* "YYYYMMDDTHHMMSSZ" -> time_t; -1 when malformed. */
static time_t parse_amz_date(const char *s)
{
  struct tm tm = {0};

  if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
    return -1;
  for (int i = 0; i < 15; i++)
    if (i != 8 && (s[i] < '0' || s[i] > '9'))
      return -1;
  tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 +
               (s[3] - '0') - 1900;
  tm.tm_mon = (s[4] - '0') * 10 + (s[5] - '0') - 1;
  tm.tm_mday = (s[6] - '0') * 10 + (s[7] - '0');
  tm.tm_hour = (s[9] - '0') * 10 + (s[10] - '0');
  tm.tm_min = (s[11] - '0') * 10 + (s[12] - '0');
  tm.tm_sec = (s[13] - '0') * 10 + (s[14] - '0');
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
      tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
    return -1;
  return timegm(&tm);
}

struct authz {
  char access_key[128];
  char date[9];
  char region[32];
  char signed_list[1024];
  char *signed_names[MAX_SIGNED];
  size_t n_signed;
  char sig[65];
};

/* Copy [s, s + n) into dst[cap]; false when it does not fit. */
static bool copy_n(char *dst, size_t cap, const char *s, size_t n)
{
  if (n >= cap)
    return false;
  memcpy(dst, s, n);
  dst[n] = '\0';
  return true;
}

static bool is_tchar(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

/* Expect "name=" at *p; advance past it. */
static bool take_key(const char **p, const char *name)
{
  size_t n = strlen(name);

  if (strncmp(*p, name, n) != 0 || (*p)[n] != '=')
    return false;
  *p += n + 1;
  return true;
}

/* Skip the separator between components: ',' then optional spaces. */
static bool take_sep(const char **p)
{
  if (**p != ',')
    return false;
  (*p)++;
  while (**p == ' ')
    (*p)++;
  return true;
}

static int parse_credential(const char **pp, struct authz *a,
                            struct gw_auth_result *res)
{
  const char *p = *pp, *end = strchr(p, ',');
  const char *f[5];
  size_t fl[5], nf = 0;

  if (!end)
    return MALFORMED("no ',' after Credential");
  for (const char *s = p; nf < 5;) {
    const char *slash = memchr(s, '/', (size_t)(end - s));
    const char *e = slash ? slash : end;
    f[nf] = s;
    fl[nf++] = (size_t)(e - s);
    if (!slash)
      break;
    s = slash + 1;
  }
  if (nf != 5 || memchr(f[4], '/', (size_t)(end - f[4])))
    return MALFORMED("Credential is not AK/DATE/REGION/s3/aws4_request");
  if (!fl[0] || !copy_n(a->access_key, sizeof(a->access_key), f[0], fl[0]))
    return MALFORMED("bad access key in Credential");
  if (fl[1] != 8 || !copy_n(a->date, sizeof(a->date), f[1], fl[1]))
    return MALFORMED("bad date in Credential");
  for (int i = 0; i < 8; i++)
    if (a->date[i] < '0' || a->date[i] > '9')
      return MALFORMED("bad date in Credential");
  if (!fl[2] || !copy_n(a->region, sizeof(a->region), f[2], fl[2]))
    return MALFORMED("bad region in Credential");
  for (const char *c = a->region; *c; c++)
    if (!is_tchar(*c))
      return MALFORMED("bad region in Credential");
  if (fl[3] != 2 || strncmp(f[3], "s3", 2) != 0)
    return MALFORMED("Credential's service is not s3");
  if (fl[4] != 12 || strncmp(f[4], "aws4_request", 12) != 0)
    return MALFORMED("Credential does not end in aws4_request");
  *pp = end;
  return 0;
}

static int parse_signed_headers(const char **pp, struct authz *a,
                                struct gw_auth_result *res)
{
  const char *p = *pp, *end = strchr(p, ',');

  if (!end || !copy_n(a->signed_list, sizeof(a->signed_list), p,
                      (size_t)(end - p)))
    return MALFORMED("bad SignedHeaders");
  a->n_signed = 0;
  for (char *s = a->signed_list;;) {
    char *semi = strchr(s, ';');
    if (semi)
      *semi = '\0';
    if (!*s || a->n_signed == MAX_SIGNED)
      return MALFORMED("bad SignedHeaders");
    for (char *c = s; *c; c++)
      if (!is_tchar(*c))
        return MALFORMED("bad character in SignedHeaders");
    if (a->n_signed && strcmp(a->signed_names[a->n_signed - 1], s) >= 0)
      return MALFORMED("SignedHeaders not sorted");
    a->signed_names[a->n_signed++] = s;
    if (!semi)
      break;
    s = semi + 1;
  }
  *pp = end;
  return 0;
}

static int parse_authorization(const char *v, struct authz *a,
                               struct gw_auth_result *res)
{
  const char *p = v;
  int rc;

  if (strncmp(p, ALGO " ", sizeof(ALGO)) != 0)
    return DENIED("AccessDenied", "not AWS4-HMAC-SHA256 header auth");
  p += sizeof(ALGO);
  while (*p == ' ')
    p++;
  if (!take_key(&p, "Credential"))
    return MALFORMED("no Credential");
  rc = parse_credential(&p, a, res);
  if (rc)
    return rc;
  if (!take_sep(&p) || !take_key(&p, "SignedHeaders"))
    return MALFORMED("no SignedHeaders");
  rc = parse_signed_headers(&p, a, res);
  if (rc)
    return rc;
  if (!take_sep(&p) || !take_key(&p, "Signature"))
    return MALFORMED("no Signature");
  if (strlen(p) != 64)
    return MALFORMED("Signature is not 64 hex digits");
  for (int i = 0; i < 64; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
      return MALFORMED("Signature is not 64 hex digits");
  memcpy(a->sig, p, 65);
  return 0;
}

static bool is_signed(const struct authz *a, const char *name)
{
  for (size_t i = 0; i < a->n_signed; i++)
    if (strcasecmp(a->signed_names[i], name) == 0)
      return true;
  return false;
}

/* Header names are compared trimmed and case-insensitively. */
static bool name_signed(const struct authz *a, const char *name)
{
  char buf[128];
  size_t n;

  while (*name == ' ' || *name == '\t')
    name++;
  n = strlen(name);
  while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
    n--;
  if (!copy_n(buf, sizeof(buf), name, n))
    return false;
  return is_signed(a, buf);
}

static int check_signature(const struct gw_auth_keys *keys,
                           const struct gw_auth_req *req,
                           const struct authz *a, const char *amz_date,
                           const char *payload, struct gw_auth_result *res)
{
  struct s3_kv *h = calloc(req->n_headers ? req->n_headers : 1, sizeof(*h));
  struct s3_sigv4_input in = {0};
  char *creq = NULL, *signed_list = NULL, sig[65] = "", *authz = NULL;
  size_t n = 0;
  int rc;

  if (!h)
    return -ENOMEM;
  for (size_t i = 0; i < req->n_headers; i++)
    if (req->headers[i].key && name_signed(a, req->headers[i].key))
      h[n++] = req->headers[i];
  in.method = req->method;
  in.path = req->path;
  in.query = req->query;
  in.headers = h;
  in.n_headers = n;
  in.payload_hash = payload;
  in.amz_date = amz_date;
  in.region = a->region;
  in.service = "s3";
  in.access_key = a->access_key;
  in.secret_key = keys->secret_key;
  rc = s3_sigv4_canonical_request(&in, &creq, &signed_list);
  if (rc == -EINVAL) {
    rc = fail(res, -EINVAL, 400, "InvalidRequest", "bad query string");
    goto out;
  }
  if (rc)
    goto out;
  /* Every name in SignedHeaders must have been present: the list built
     from the headers found equals the one signed (both sorted, unique). */
  {
    size_t want = 0;
    for (size_t i = 0; i < a->n_signed; i++)
      want += strlen(a->signed_names[i]) + (i ? 1 : 0);
    if (strlen(signed_list) != want) {
      rc = DENIED("SignatureDoesNotMatch", "a signed header is missing");
      goto out;
    }
  }
  rc = s3_sigv4_authorization(&in, &authz, sig);
  if (rc)
    goto out;
  if (CRYPTO_memcmp(sig, a->sig, 64) != 0) {
    rc = DENIED("SignatureDoesNotMatch", "signature does not match");
    goto out;
  }
out:
  OPENSSL_cleanse(sig, sizeof(sig));
  free(creq);
  free(signed_list);
  free(authz);
  free(h);
  return rc;
}

int gw_auth_verify(const struct gw_auth_keys *keys,
                   const struct gw_auth_req *req, time_t now,
                   struct gw_auth_result *res)
{
  struct authz a;
  const char *v, *amz_date, *payload;
  time_t t;
  int rc;

  memset(res, 0, sizeof(*res));
  res->code = "";
  memset(&a, 0, sizeof(a));
  if (!keys || !keys->access_key || !keys->secret_key || !req ||
      !req->method || !req->path)
    return fail(res, -EINVAL, 400, "InvalidRequest", "bad input");
  if (req->query && (strstr(req->query, "X-Amz-Signature=") ||
                     strstr(req->query, "X-Amz-Credential=")))
    return DENIED("AccessDenied", "presigned URLs are not accepted");
  v = gw_header_get(req->headers, req->n_headers, "authorization");
  if (!v)
    return DENIED("AccessDenied", "anonymous requests are not accepted");
  rc = parse_authorization(v, &a, res);
  if (rc)
    return rc;
  if (strcmp(a.access_key, keys->access_key) != 0)
    return DENIED("InvalidAccessKeyId", "unknown access key");
  amz_date = gw_header_get(req->headers, req->n_headers, "x-amz-date");
  if (!amz_date || (t = parse_amz_date(amz_date)) == (time_t)-1)
    return fail(res, -EACCES, 403, "AccessDenied",
                "missing or malformed x-amz-date");
  if (strncmp(amz_date, a.date, 8) != 0)
    return MALFORMED("Credential date differs from x-amz-date");
  if (t > now + GW_AUTH_MAX_SKEW_S || t < now - GW_AUTH_MAX_SKEW_S)
    return DENIED("RequestTimeTooSkewed", "x-amz-date too far from now");
  if (!is_signed(&a, "host"))
    return DENIED("AccessDenied", "host is not signed");
  if (!is_signed(&a, "x-amz-date"))
    return DENIED("AccessDenied", "x-amz-date is not signed");
  if (req->token_header &&
      gw_header_get(req->headers, req->n_headers, req->token_header) &&
      !is_signed(&a, req->token_header))
    return DENIED("AccessDenied", "the RDMA token header is not signed");
  payload = gw_header_get(req->headers, req->n_headers,
                          "x-amz-content-sha256");
  if (!payload)
    payload = req->default_payload;
  if (!payload || !payload[0])
    return fail(res, -EINVAL, 400, "InvalidRequest",
                "missing x-amz-content-sha256");
  rc = check_signature(keys, req, &a, amz_date, payload, res);
  if (rc)
    return rc;
  snprintf(res->region, sizeof(res->region), "%s", a.region);
  return 0;
}

bool gw_auth_signed(const struct s3_kv *h, size_t n, const char *name)
{
  const char *a = gw_header_get(h, n, "authorization");
  const char *p = a ? strstr(a, "SignedHeaders=") : NULL;
  size_t len = strlen(name);

  if (!p)
    return false;
  p += strlen("SignedHeaders=");
  while (*p && *p != ',' && *p != ' ') {
    size_t k = strcspn(p, ";, ");
    if (k == len && strncasecmp(p, name, len) == 0)
      return true;
    p += k;
    if (*p == ';')
      p++;
  }
  return false;
}
