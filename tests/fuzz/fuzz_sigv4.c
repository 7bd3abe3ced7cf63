/*
 * fuzz_sigv4: SigV4 canonicalisation and signing in s3/s3_sigv4.h:
 * s3_uri_encode, s3_sigv4_canonical_query, s3_sigv4_canonical_request (S3
 * and generic mode), s3_sigv4_string_to_sign, s3_sigv4_authorization and
 * s3_sigv4_presign_query, with every input chosen by the fuzzer.
 *
 * Input: byte 0 flags (bit 0 generic mode, bit 1 keep '/' when encoding,
 * bit 2 no payload hash), byte 1 the number of headers (mod 9), byte 2
 * the presign expiry, then NUL-separated strings: method, path, query,
 * x-amz-date, region, service, access key, secret key, payload hash, and
 * the headers' names and values.
 *
 * Properties (abort() on violation):
 *  - s3_uri_encode writes only unreserved characters, '/' when kept, and
 *    %XX with uppercase hex, and decodes back to its input;
 *  - the canonical query is a fixed point (canonicalising it again gives
 *    it back), holds one encoded name=value per parameter given, joined by
 *    '&' in sorted order, and -EINVAL comes only from a bad %-escape;
 *  - the canonical request starts with the method and the path (S3 mode:
 *    as given; generic mode: no empty, "." or ".." segment), ends with the
 *    payload hash; SignedHeaders are lowercase, sorted, unique (names
 *    without ';');
 *  - the string to sign is the algorithm, date, scope and the SHA-256 of
 *    the canonical request; the Authorization header has the exact shape
 *    gateways parse, its signature the one returned;
 *  - a presigned query ends in &X-Amz-Signature=<64 hex> after a canonical
 *    query (a fixed point again).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_sigv4.h"
#include "tests/fuzz/fuzz_common.h"

#define MAX_HEADERS 8
#define N_FIELDS 9

static bool is_unreserved(unsigned char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
         c == '~';
}

static int upper_hex(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static int any_hex(char c)
{
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : upper_hex(c);
}

static bool is_lower_hex64(const char *s)
{
  if (strlen(s) != 64)
    return false;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* Is s (len bytes) a well-formed encoding? Decodes into dec when given. */
static bool well_encoded(const char *s, size_t len, bool keep_slash,
                         char *dec, size_t *declen)
{
  size_t n = 0;

  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= len)
        return false;
      int hi = upper_hex(s[i + 1]), lo = upper_hex(s[i + 2]);
      if (hi < 0 || lo < 0)
        return false;
      c = (unsigned char)(hi << 4 | lo);
      /* an escaped character that needed no escape is not canonical */
      if (is_unreserved(c) || (keep_slash && c == '/'))
        return false;
      i += 2;
    } else if (!is_unreserved(c) && !(keep_slash && c == '/')) {
      return false;
    }
    if (dec)
      dec[n] = (char)c;
    n++;
  }
  if (declen)
    *declen = n;
  return true;
}

static void check_uri_encode(const char *s, size_t len, bool keep_slash)
{
  char *enc = s3_uri_encode(s, len, keep_slash), *dec;
  size_t declen = 0;

  if (!enc)
    return;
  dec = malloc(strlen(enc) + 1);
  if (dec) {
    FUZZ_ASSERT(well_encoded(enc, strlen(enc), keep_slash, dec, &declen),
                "s3_uri_encode wrote '%s'", enc);
    FUZZ_ASSERT(declen == len && memcmp(dec, s, len) == 0,
                "'%s' does not decode to its input", enc);
  }
  free(dec);
  free(enc);
}

/* Does the raw query hold a '%' not followed by two hex digits? */
static bool bad_escape(const char *q)
{
  for (const char *p = q; *p; p++)
    if (*p == '%' && (any_hex(p[1]) < 0 || any_hex(p[2]) < 0))
      return true;
  return false;
}

static void check_canonical_query(const char *q)
{
  char *cq = NULL, *again = NULL, *copy = NULL, *prev = NULL;
  int rc;

  rc = s3_sigv4_canonical_query(q, &cq);
  if (FUZZ_OOM(rc))
    return;
  if (rc) {
    FUZZ_ASSERT(rc == -EINVAL && bad_escape(q),
                "canonical query of '%s' failed: %d", q, rc);
    FUZZ_ASSERT(!cq, "failure left *out set");
    return;
  }
  FUZZ_ASSERT(!bad_escape(q), "'%s' with a bad escape accepted", q);
  rc = s3_sigv4_canonical_query(cq, &again);
  FUZZ_ASSERT(rc == 0 || FUZZ_OOM(rc), "canonical query '%s' refused: %d", cq,
              rc);
  if (rc == 0)
    FUZZ_ASSERT(strcmp(cq, again) == 0, "not a fixed point: '%s' -> '%s'", cq,
                again);
  /* name=value pairs, each side well encoded, sorted, one per non-empty
     parameter of the input */
  copy = strdup(cq);
  if (copy) {
    char *save = NULL;
    size_t n_in = 0, n_out = 0;
    for (const char *p = q; *p; p++)
      if (*p != '&' && (p == q || p[-1] == '&'))
        n_in++;
    for (char *p = strtok_r(copy, "&", &save); p;
         p = strtok_r(NULL, "&", &save), n_out++) {
      char *eq = strchr(p, '=');
      FUZZ_ASSERT(eq, "parameter '%s' without '='", p);
      FUZZ_ASSERT(well_encoded(p, (size_t)(eq - p), false, NULL, NULL) &&
                      well_encoded(eq + 1, strlen(eq + 1), false, NULL, NULL),
                  "parameter '%s' not encoded", p);
      *eq = '\0';
      if (prev) {
        int c = strcmp(prev, p);
        FUZZ_ASSERT(c < 0 || (c == 0 && strcmp(prev + strlen(prev) + 1,
                                               eq + 1) <= 0),
                    "parameters out of order in '%s'", cq);
      }
      prev = p;
    }
    FUZZ_ASSERT(n_in == n_out, "%zu parameters in '%s', %zu in '%s'", n_in, q,
                n_out, cq);
  }
  free(copy);
  free(again);
  free(cq);
}

/* Generic mode path: starts with '/', no empty, "." or ".." segment. */
static void check_generic_path(const char *path, size_t n)
{
  FUZZ_ASSERT(n >= 1 && path[0] == '/', "generic path does not start '/'");
  for (size_t i = 0; i < n;) {
    size_t j = i + 1, len;
    while (j < n && path[j] != '/')
      j++;
    len = j - i - 1;
    FUZZ_ASSERT(!(len == 0 && j < n), "empty segment in generic path");
    FUZZ_ASSERT(!(len == 1 && path[i + 1] == '.') &&
                    !(len == 2 && path[i + 1] == '.' && path[i + 2] == '.'),
                "dot segment left in generic path");
    i = j;
  }
}

static void check_signed_list(const char *sl, size_t n_headers)
{
  char *copy = strdup(sl), *prev = NULL, *save = NULL;
  size_t count = 0;

  if (!copy)
    return;
  for (char *p = strtok_r(copy, ";", &save); p;
       p = strtok_r(NULL, ";", &save)) {
    for (char *c = p; *c; c++)
      FUZZ_ASSERT(!(*c >= 'A' && *c <= 'Z'), "uppercase in SignedHeaders");
    FUZZ_ASSERT(!prev || strcmp(prev, p) < 0, "SignedHeaders not sorted "
                "and unique: '%s'", sl);
    prev = p;
    count++;
  }
  FUZZ_ASSERT(count <= n_headers, "%zu signed names from %zu headers", count,
              n_headers);
  free(copy);
}

static void check_request(const struct s3_sigv4_input *in, bool valid_input)
{
  char *creq = NULL, *signed_list = NULL, *sts = NULL, *authz = NULL;
  char *want = NULL, hash[65], sig[65];
  const char *payload = in->payload_hash ? in->payload_hash : S3_EMPTY_SHA256;
  size_t mlen, plen, clen;
  int rc;

  rc = s3_sigv4_canonical_request(in, &creq, &signed_list);
  if (FUZZ_OOM(rc))
    goto out;
  if (rc) {
    FUZZ_ASSERT(rc == -EINVAL, "canonical request returned %d", rc);
    FUZZ_ASSERT(!valid_input, "valid input refused");
    goto out;
  }
  mlen = strlen(in->method);
  clen = strlen(creq);
  FUZZ_ASSERT(strncmp(creq, in->method, mlen) == 0 && creq[mlen] == '\n',
              "canonical request does not start with the method");
  if (in->generic) {
    const char *p = creq + mlen + 1, *nl = strchr(p, '\n');
    FUZZ_ASSERT(nl, "no line after the path");
    check_generic_path(p, (size_t)(nl - p));
  } else {
    const char *path = in->path && in->path[0] ? in->path : "/";
    plen = strlen(path);
    FUZZ_ASSERT(strncmp(creq + mlen + 1, path, plen) == 0 &&
                    creq[mlen + 1 + plen] == '\n',
                "S3 mode changed the path");
  }
  plen = strlen(payload);
  FUZZ_ASSERT(clen > plen && creq[clen - plen - 1] == '\n' &&
                  strcmp(creq + clen - plen, payload) == 0,
              "canonical request does not end with the payload hash");
  /* a ';' inside a name splits it in the list: the signer signs only
     names it chose, the gateway matches only token characters */
  {
    bool semi = false;
    for (size_t i = 0; i < in->n_headers; i++)
      semi |= strchr(in->headers[i].key, ';') != NULL;
    if (!semi)
      check_signed_list(signed_list, in->n_headers);
  }

  rc = s3_sigv4_string_to_sign(in, &sts);
  if (FUZZ_OOM(rc))
    goto out;
  FUZZ_ASSERT(rc == 0, "string to sign failed: %d", rc);
  s3_sha256_hex(creq, clen, hash);
  if (asprintf(&want, "AWS4-HMAC-SHA256\n%s\n%.8s/%s/%s/aws4_request\n%s",
               in->amz_date, in->amz_date, in->region, in->service,
               hash) < 0) {
    want = NULL;
    goto out;
  }
  FUZZ_ASSERT(strcmp(sts, want) == 0, "string to sign:\n%s\nexpected:\n%s",
              sts, want);
  free(want);
  want = NULL;

  rc = s3_sigv4_authorization(in, &authz, sig);
  if (FUZZ_OOM(rc))
    goto out;
  FUZZ_ASSERT(rc == 0, "authorization failed: %d", rc);
  FUZZ_ASSERT(is_lower_hex64(sig), "signature '%s'", sig);
  if (asprintf(&want,
               "AWS4-HMAC-SHA256 Credential=%s/%.8s/%s/%s/aws4_request, "
               "SignedHeaders=%s, Signature=%s",
               in->access_key, in->amz_date, in->region, in->service,
               signed_list, sig) < 0) {
    want = NULL;
    goto out;
  }
  FUZZ_ASSERT(strcmp(authz, want) == 0, "Authorization '%s', expected '%s'",
              authz, want);
out:
  free(creq);
  free(signed_list);
  free(sts);
  free(authz);
  free(want);
}

static void check_presign(const struct s3_sigv4_input *in, unsigned expires)
{
  static const char tag[] = "&X-Amz-Signature=";
  char *q = NULL, *cq = NULL;
  size_t n, t = sizeof(tag) - 1;
  int rc;

  rc = s3_sigv4_presign_query(in, expires, &q);
  if (rc) {
    FUZZ_ASSERT(rc == -EINVAL || FUZZ_OOM(rc), "presign returned %d", rc);
    /* X-Amz-Date goes into the query as given: only a real date (any
       unreserved text) is sure to survive canonicalisation */
    FUZZ_ASSERT(rc != -EINVAL || expires < 1 || expires > 604800 ||
                    bad_escape(in->query ? in->query : "") ||
                    !well_encoded(in->amz_date, strlen(in->amz_date), false,
                                  NULL, NULL) ||
                    s3_sigv4_canonical_request(in, &cq, NULL) != 0,
                "presign refused valid input");
    free(cq);
    return;
  }
  n = strlen(q);
  FUZZ_ASSERT(n > t + 64 && memcmp(q + n - 64 - t, tag, t) == 0 &&
                  is_lower_hex64(q + n - 64),
              "presigned query does not end in a signature: '%s'", q);
  q[n - 64 - t] = '\0';
  rc = s3_sigv4_canonical_query(q, &cq);
  if (rc == 0)
    FUZZ_ASSERT(strcmp(q, cq) == 0, "presigned query not canonical: '%s'", q);
  free(cq);
  free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  uint8_t flags = fz_u8(&f);
  size_t n_headers = fz_u8(&f) % (MAX_HEADERS + 1);
  unsigned expires = (unsigned)fz_u8(&f) * 2500u;
  char *field[N_FIELDS] = {0}, *hk[MAX_HEADERS] = {0}, *hv[MAX_HEADERS] = {0};
  struct s3_kv headers[MAX_HEADERS];
  struct s3_sigv4_input in;
  size_t path_len = 0;
  bool valid = true;

  for (size_t i = 0; i < N_FIELDS; i++)
    if (!(field[i] = fz_str_until(&f, '\0', i == 1 ? &path_len : NULL)))
      goto out;
  for (size_t i = 0; i < n_headers; i++) {
    if (!(hk[i] = fz_str_until(&f, '\0', NULL)) ||
        !(hv[i] = fz_str_until(&f, '\0', NULL)))
      goto out;
    headers[i].key = hk[i];
    headers[i].val = hv[i];
    /* a name that is only whitespace is the one refusal left */
    if (!hk[i][strspn(hk[i], " \t\r\n\v\f")])
      valid = false;
  }

  check_uri_encode(field[1], path_len, flags & 2);
  check_canonical_query(field[2]);

  memset(&in, 0, sizeof(in));
  in.method = field[0];
  in.path = field[1];
  in.query = field[2];
  in.amz_date = field[3];
  in.region = field[4];
  in.service = field[5];
  in.access_key = field[6];
  in.secret_key = field[7];
  in.payload_hash = flags & 4 ? NULL : field[8];
  in.headers = headers;
  in.n_headers = n_headers;
  in.generic = flags & 1;
  if (!in.method[0] || strlen(in.amz_date) < 8 || bad_escape(in.query))
    valid = false;
  check_request(&in, valid);
  check_presign(&in, expires);
out:
  for (size_t i = 0; i < N_FIELDS; i++)
    free(field[i]);
  for (size_t i = 0; i < MAX_HEADERS; i++) {
    free(hk[i]);
    free(hv[i]);
  }
  return 0;
}
