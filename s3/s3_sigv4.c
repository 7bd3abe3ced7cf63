/*
 * s3_sigv4: AWS Signature Version 4 (see s3_sigv4.h).
 *
 * DESIGN: pure functions, no shared state, safe from any thread. Every
 * string is built in a small growable buffer (struct strbuf) that remembers an
 * allocation failure, so the builders append without checking each call and
 * test once at the end. HMAC and SHA-256 come from OpenSSL's libcrypto; the
 * derived keys are wiped with OPENSSL_cleanse before returning.
 *
 * Pipeline: canonical query -> canonical request (.creq) -> string to sign
 * (.sts) -> signing key -> signature -> Authorization (.authz) or presigned
 * query.
 */
#include "s3/s3_sigv4.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/strbuf.h"

#define ALGORITHM "AWS4-HMAC-SHA256"
#define PRESIGN_MAX_EXPIRES 604800u /* seven days */

/* ---- encoding ------------------------------------------------------------ */

static bool is_unreserved(unsigned char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
         c == '~';
}

static void sb_uri_encode(struct strbuf *sb, const char *s, size_t len,
                          bool keep_slash)
{
  static const char hex[] = "0123456789ABCDEF";

  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (is_unreserved(c) || (keep_slash && c == '/')) {
      strbuf_putc(sb, (char)c);
    } else {
      char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
      strbuf_put(sb, esc, 3);
    }
  }
}

char *s3_uri_encode(const char *s, size_t len, bool keep_slash)
{
  struct strbuf sb = {0};

  sb_uri_encode(&sb, s ? s : "", s ? len : 0, keep_slash);
  return strbuf_take(&sb);
}

/*
 * Percent-decode s[0..len) then re-encode it into sb. '+' is a literal plus
 * (it is not form encoding), so it comes out as %2B.
 */
static int sb_reencode(struct strbuf *sb, const char *s, size_t len)
{
  char *dec = malloc(len + 1);
  size_t n = 0;
  int rc = 0;

  if (!dec)
    return -ENOMEM;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '%') {
      dec[n++] = s[i];
      continue;
    }
    if (i + 2 >= len) {
      rc = -EINVAL;
      goto out;
    }
    int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
    if (hi < 0 || lo < 0) {
      rc = -EINVAL;
      goto out;
    }
    dec[n++] = (char)(hi << 4 | lo);
    i += 2;
  }
  sb_uri_encode(sb, dec, n, false);
out:
  free(dec);
  return rc;
}

/* ---- canonical query ----------------------------------------------------- */

struct qparam {
  char *name; /* encoded */
  char *val;  /* encoded */
};

static int qparam_cmp(const void *a, const void *b)
{
  const struct qparam *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->val, y->val);
}

int s3_sigv4_canonical_query(const char *query, char **out)
{
  struct qparam *params = NULL;
  size_t n = 0, max = 1;
  struct strbuf sb = {0};
  int rc = 0;

  *out = NULL;
  if (!query)
    query = "";
  for (const char *q = query; *q; q++)
    if (*q == '&')
      max++;
  params = calloc(max, sizeof(*params));
  if (!params)
    return -ENOMEM;

  for (const char *p = query; *p;) {
    const char *end = strchr(p, '&');
    size_t plen = end ? (size_t)(end - p) : strlen(p);
    const char *eq = memchr(p, '=', plen);
    size_t nlen = eq ? (size_t)(eq - p) : plen;
    struct strbuf nb = {0}, vb = {0};

    if (plen > 0) {
      rc = sb_reencode(&nb, p, nlen);
      if (!rc && eq)
        rc = sb_reencode(&vb, eq + 1, plen - nlen - 1);
      params[n].name = strbuf_take(&nb);
      params[n].val = strbuf_take(&vb);
      n++;
      if (rc)
        goto out;
      if (!params[n - 1].name || !params[n - 1].val) {
        rc = -ENOMEM;
        goto out;
      }
    }
    p += plen;
    if (*p == '&')
      p++;
  }

  qsort(params, n, sizeof(*params), qparam_cmp);
  for (size_t i = 0; i < n; i++) {
    if (i)
      strbuf_putc(&sb, '&');
    strbuf_puts(&sb, params[i].name);
    strbuf_putc(&sb, '=');
    strbuf_puts(&sb, params[i].val);
  }
  *out = strbuf_take(&sb);
  if (!*out)
    rc = -ENOMEM;
out:
  for (size_t i = 0; i < n; i++) {
    free(params[i].name);
    free(params[i].val);
  }
  free(params);
  free(sb.p);
  return rc;
}

/* ---- canonical path ------------------------------------------------------ */

/*
 * Generic mode: RFC 3986 dot-segment removal, empty segments (repeated '/')
 * dropped, each remaining segment URI-encoded. A trailing '/' is kept, and
 * a path ending in "." or ".." names a directory, so it ends in '/' too.
 */
static int sb_generic_path(struct strbuf *sb, const char *path)
{
  size_t nseg = 0, max = 1;
  const char **seg;
  size_t *seglen;
  bool trailing = false;

  for (const char *q = path; *q; q++)
    if (*q == '/')
      max++;
  seg = calloc(max, sizeof(*seg));
  seglen = calloc(max, sizeof(*seglen));
  if (!seg || !seglen) {
    free(seg);
    free(seglen);
    return -ENOMEM;
  }
  for (const char *p = path; *p;) {
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);

    trailing = end != NULL;
    if (len == 1 && p[0] == '.') {
      trailing = true;
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      if (nseg)
        nseg--;
      trailing = true;
    } else if (len > 0) {
      seg[nseg] = p;
      seglen[nseg++] = len;
    }
    p += len;
    if (*p == '/')
      p++;
  }
  for (size_t i = 0; i < nseg; i++) {
    strbuf_putc(sb, '/');
    sb_uri_encode(sb, seg[i], seglen[i], false);
  }
  if (!nseg || trailing)
    strbuf_putc(sb, '/');
  free(seg);
  free(seglen);
  return 0;
}

/* ---- canonical headers --------------------------------------------------- */

struct chdr {
  char *name; /* lowercased, trimmed */
  const char *val;
  size_t idx; /* input order: keeps repeated names in the order given */
};

static int chdr_cmp(const void *a, const void *b)
{
  const struct chdr *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c)
    return c;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bool is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
         c == '\f';
}

/* Value trimmed, each internal run of whitespace written as one space. */
static void sb_trimmed(struct strbuf *sb, const char *v)
{
  bool gap = false, any = false;

  for (; v && *v; v++) {
    if (is_space(*v)) {
      gap = true;
      continue;
    }
    if (gap && any)
      strbuf_putc(sb, ' ');
    strbuf_putc(sb, *v);
    gap = false;
    any = true;
  }
}

/* "name:value\n" lines into hdrs, "a;b;c" into signed_hdrs. */
static int canonical_headers(const struct s3_sigv4_input *in,
                             struct strbuf *hdrs, struct strbuf *signed_hdrs)
{
  struct chdr *h;
  size_t n = in->n_headers;
  int rc = 0;

  if (n && !in->headers)
    return -EINVAL;
  h = calloc(n ? n : 1, sizeof(*h));
  if (!h)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const char *k = in->headers[i].key ? in->headers[i].key : "";
    struct strbuf nb = {0};

    sb_trimmed(&nb, k);
    h[i].name = strbuf_take(&nb);
    if (!h[i].name) {
      rc = -ENOMEM;
      goto out;
    }
    for (char *c = h[i].name; *c; c++)
      if (*c >= 'A' && *c <= 'Z')
        *c = (char)(*c - 'A' + 'a');
    if (!h[i].name[0]) {
      rc = -EINVAL;
      goto out;
    }
    h[i].val = in->headers[i].val;
    h[i].idx = i;
  }
  qsort(h, n, sizeof(*h), chdr_cmp);
  for (size_t i = 0; i < n; i++) {
    bool same = i > 0 && strcmp(h[i].name, h[i - 1].name) == 0;
    if (same) {
      strbuf_putc(hdrs, ',');
    } else {
      if (i > 0) {
        strbuf_putc(hdrs, '\n');
        strbuf_putc(signed_hdrs, ';');
      }
      strbuf_puts(hdrs, h[i].name);
      strbuf_putc(hdrs, ':');
      strbuf_puts(signed_hdrs, h[i].name);
    }
    sb_trimmed(hdrs, h[i].val);
  }
  if (n)
    strbuf_putc(hdrs, '\n');
out:
  for (size_t i = 0; i < n; i++)
    free(h[i].name);
  free(h);
  return rc;
}

/* ---- canonical request --------------------------------------------------- */

static int check_input(const struct s3_sigv4_input *in)
{
  if (!in || !in->method || !in->method[0] || !in->amz_date ||
      strlen(in->amz_date) < 8 || !in->region || !in->service ||
      !in->access_key || !in->secret_key)
    return -EINVAL;
  return 0;
}

/* The canonical request over an already canonical query string. */
static int build_creq(const struct s3_sigv4_input *in, const char *cquery,
                      const char *payload_hash, char **out,
                      char **signed_out)
{
  struct strbuf creq = {0}, hdrs = {0}, sig = {0};
  const char *path = in->path && in->path[0] ? in->path : "/";
  int rc;

  *out = NULL;
  if (signed_out)
    *signed_out = NULL;
  rc = canonical_headers(in, &hdrs, &sig);
  if (rc)
    goto out;
  strbuf_puts(&creq, in->method);
  strbuf_putc(&creq, '\n');
  if (in->generic) {
    rc = sb_generic_path(&creq, path);
    if (rc)
      goto out;
  } else {
    strbuf_puts(&creq, path);
  }
  strbuf_putc(&creq, '\n');
  strbuf_puts(&creq, cquery);
  strbuf_putc(&creq, '\n');
  if (hdrs.p)
    strbuf_puts(&creq, hdrs.p);
  strbuf_putc(&creq, '\n');
  if (sig.p)
    strbuf_puts(&creq, sig.p);
  strbuf_putc(&creq, '\n');
  strbuf_puts(&creq, payload_hash ? payload_hash : S3_EMPTY_SHA256);
  if (hdrs.oom || sig.oom) {
    rc = -ENOMEM;
    goto out;
  }
  *out = strbuf_take(&creq);
  if (!*out) {
    rc = -ENOMEM;
    goto out;
  }
  if (signed_out) {
    *signed_out = strbuf_take(&sig);
    if (!*signed_out) {
      free(*out);
      *out = NULL;
      rc = -ENOMEM;
    }
  }
out:
  free(creq.p);
  free(hdrs.p);
  free(sig.p);
  return rc;
}

int s3_sigv4_canonical_request(const struct s3_sigv4_input *in, char **out,
                               char **signed_headers_out)
{
  char *cquery = NULL;
  int rc;

  *out = NULL;
  if (signed_headers_out)
    *signed_headers_out = NULL;
  rc = check_input(in);
  if (rc)
    return rc;
  rc = s3_sigv4_canonical_query(in->query, &cquery);
  if (rc)
    return rc;
  rc = build_creq(in, cquery, in->payload_hash, out, signed_headers_out);
  free(cquery);
  return rc;
}

/* ---- string to sign and signature ---------------------------------------- */

static void hex_encode(const unsigned char *d, size_t n, char *out)
{
  static const char hex[] = "0123456789abcdef";

  for (size_t i = 0; i < n; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[2 * n] = '\0';
}

void s3_sha256_hex(const void *data, size_t len, char out[65])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;

  if (!EVP_Digest(data ? data : "", data ? len : 0, md, &mdlen, EVP_sha256(),
                  NULL) ||
      mdlen != 32) {
    out[0] = '\0'; /* cannot happen with a working libcrypto */
    return;
  }
  hex_encode(md, 32, out);
}

/* "YYYYMMDD/region/service/aws4_request" */
static void sb_scope(struct strbuf *sb, const struct s3_sigv4_input *in)
{
  strbuf_put(sb, in->amz_date, 8);
  strbuf_putc(sb, '/');
  strbuf_puts(sb, in->region);
  strbuf_putc(sb, '/');
  strbuf_puts(sb, in->service);
  strbuf_puts(sb, "/aws4_request");
}

static int sts_from_creq(const struct s3_sigv4_input *in, const char *creq,
                         char **out)
{
  struct strbuf sb = {0};
  char hash[65];

  s3_sha256_hex(creq, strlen(creq), hash);
  if (!hash[0])
    return -EIO;
  strbuf_puts(&sb, ALGORITHM "\n");
  strbuf_puts(&sb, in->amz_date);
  strbuf_putc(&sb, '\n');
  sb_scope(&sb, in);
  strbuf_putc(&sb, '\n');
  strbuf_puts(&sb, hash);
  *out = strbuf_take(&sb);
  return *out ? 0 : -ENOMEM;
}

int s3_sigv4_string_to_sign(const struct s3_sigv4_input *in, char **out)
{
  char *creq = NULL;
  int rc;

  *out = NULL;
  rc = s3_sigv4_canonical_request(in, &creq, NULL);
  if (rc)
    return rc;
  rc = sts_from_creq(in, creq, out);
  free(creq);
  return rc;
}

static int hmac(const void *key, size_t keylen, const void *msg, size_t len,
                unsigned char out[32])
{
  unsigned int outlen = 0;

  if (!HMAC(EVP_sha256(), key, (int)keylen, msg, len, out, &outlen) ||
      outlen != 32)
    return -EIO;
  return 0;
}

/* Signing key chain, then the hex HMAC of the string to sign. */
static int sign_sts(const struct s3_sigv4_input *in, const char *sts,
                    char sig_hex[65])
{
  size_t slen = strlen(in->secret_key);
  unsigned char k[32], mac[32];
  char *secret = malloc(slen + 5);
  int rc;

  if (!secret)
    return -ENOMEM;
  memcpy(secret, "AWS4", 4);
  memcpy(secret + 4, in->secret_key, slen + 1);
  rc = hmac(secret, slen + 4, in->amz_date, 8, k);
  if (!rc)
    rc = hmac(k, 32, in->region, strlen(in->region), k);
  if (!rc)
    rc = hmac(k, 32, in->service, strlen(in->service), k);
  if (!rc)
    rc = hmac(k, 32, "aws4_request", 12, k);
  if (!rc)
    rc = hmac(k, 32, sts, strlen(sts), mac);
  if (!rc)
    hex_encode(mac, 32, sig_hex);
  OPENSSL_cleanse(secret, slen + 4);
  OPENSSL_cleanse(k, sizeof(k));
  free(secret);
  return rc;
}

int s3_sigv4_authorization(const struct s3_sigv4_input *in, char **out,
                           char *sig_hex)
{
  char *creq = NULL, *signed_hdrs = NULL, *sts = NULL;
  struct strbuf sb = {0};
  char sig[65];
  int rc;

  *out = NULL;
  rc = s3_sigv4_canonical_request(in, &creq, &signed_hdrs);
  if (rc)
    goto out;
  rc = sts_from_creq(in, creq, &sts);
  if (rc)
    goto out;
  rc = sign_sts(in, sts, sig);
  if (rc)
    goto out;
  strbuf_puts(&sb, ALGORITHM " Credential=");
  strbuf_puts(&sb, in->access_key);
  strbuf_putc(&sb, '/');
  sb_scope(&sb, in);
  strbuf_puts(&sb, ", SignedHeaders=");
  strbuf_puts(&sb, signed_hdrs);
  strbuf_puts(&sb, ", Signature=");
  strbuf_puts(&sb, sig);
  *out = strbuf_take(&sb);
  if (!*out) {
    rc = -ENOMEM;
    goto out;
  }
  if (sig_hex)
    memcpy(sig_hex, sig, 65);
out:
  free(creq);
  free(signed_hdrs);
  free(sts);
  return rc;
}

/* ---- presigned URL ------------------------------------------------------- */

int s3_sigv4_presign_query(const struct s3_sigv4_input *in, unsigned expires_s,
                           char **out)
{
  struct strbuf raw = {0}, cred = {0}, res = {0};
  struct strbuf hdrs = {0}, signed_hdrs = {0};
  char *cquery = NULL, *creq = NULL, *sts = NULL;
  char num[16], sig[65];
  int rc;

  *out = NULL;
  rc = check_input(in);
  if (rc)
    return rc;
  if (expires_s < 1 || expires_s > PRESIGN_MAX_EXPIRES)
    return -EINVAL;
  rc = canonical_headers(in, &hdrs, &signed_hdrs);
  if (rc)
    goto out;

  /* The request's own parameters plus the X-Amz-* ones, then canonicalised. */
  strbuf_puts(&cred, in->access_key);
  strbuf_putc(&cred, '/');
  sb_scope(&cred, in);
  snprintf(num, sizeof(num), "%u", expires_s);
  if (in->query && in->query[0]) {
    strbuf_puts(&raw, in->query);
    strbuf_putc(&raw, '&');
  }
  strbuf_puts(&raw, "X-Amz-Algorithm=" ALGORITHM "&X-Amz-Credential=");
  if (cred.p)
    sb_uri_encode(&raw, cred.p, cred.len, false);
  strbuf_puts(&raw, "&X-Amz-Date=");
  strbuf_puts(&raw, in->amz_date);
  strbuf_puts(&raw, "&X-Amz-Expires=");
  strbuf_puts(&raw, num);
  strbuf_puts(&raw, "&X-Amz-SignedHeaders=");
  if (signed_hdrs.p)
    sb_uri_encode(&raw, signed_hdrs.p, signed_hdrs.len, false);
  if (raw.oom || cred.oom || hdrs.oom || signed_hdrs.oom) {
    rc = -ENOMEM;
    goto out;
  }
  rc = s3_sigv4_canonical_query(raw.p, &cquery);
  if (rc)
    goto out;
  rc = build_creq(in, cquery, S3_UNSIGNED_PAYLOAD, &creq, NULL);
  if (rc)
    goto out;
  rc = sts_from_creq(in, creq, &sts);
  if (rc)
    goto out;
  rc = sign_sts(in, sts, sig);
  if (rc)
    goto out;
  strbuf_puts(&res, cquery);
  strbuf_puts(&res, "&X-Amz-Signature=");
  strbuf_puts(&res, sig);
  *out = strbuf_take(&res);
  if (!*out)
    rc = -ENOMEM;
out:
  free(raw.p);
  free(cred.p);
  free(res.p);
  free(hdrs.p);
  free(signed_hdrs.p);
  free(cquery);
  free(creq);
  free(sts);
  return rc;
}
