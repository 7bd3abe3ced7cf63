/*
 * s3_rdma: the client side of S3 over RDMA (docs/rdma.md, "Token
 * formats") in the
 * request engine: a request carries a token, and the reply says whether the
 * server moved the bytes (x-amz-rdma-reply 200/204/206), declined (501) or
 * ignored the token (no reply header). The rules are in s3_client.h at
 * s3_req_set_rdma. The transports that make tokens live in rdma/; this file
 * only carries an opaque token, so s3/ does not depend on rdma/.
 *
 * Runs on the engine thread (s3_rdma_attempt_end) or on the submitter's
 * before submit (s3_req_set_rdma); the client's counters and the ignored flag
 * are atomics.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "common/slog.h"
#include "s3/s3_i.h"

/* The MD5 of [p, p + n): 0, or -EIO. */
static int md5_of(const void *p, size_t n, unsigned char out[16])
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;

  if (!EVP_Digest(p, n, md, &mdlen, EVP_md5(), NULL) || mdlen != 16)
    return -EIO;
  memcpy(out, md, 16);
  return 0;
}

int s3_req_set_rdma(struct s3_req *r, const char *token, uint64_t len)
{
  char *t;

  if (!token || !*token || strpbrk(token, "\r\n") || !len)
    return -EINVAL;
  if (strcmp(r->method, "GET") != 0 && strcmp(r->method, "PUT") != 0)
    return -EINVAL;
  t = strdup(token);
  if (!t)
    return -ENOMEM;
  free(r->rdma_token);
  r->rdma_token = t;
  r->rdma_len = len;
  r->rdma_on = true;
  /* a server that omits the reply on PUTs it serves is answered by the
     ETag: hash the body here, on the submitter's thread, rather than on
     the engine's, where it would stall every transfer */
  r->rdma_md5_set = strcmp(r->method, "PUT") == 0 && r->body &&
                    !r->rdma_foreign &&
                    r->body_len == len &&
                    atomic_load(&r->client->rdma_put_quiet) &&
                    md5_of(r->body, r->body_len, r->rdma_md5) == 0;
  return 0;
}

void s3_req_set_rdma_only(struct s3_req *r)
{
  r->rdma_only = true;
  s3_req_set_rdma_foreign(r);
}

void s3_req_set_rdma_foreign(struct s3_req *r)
{
  r->rdma_foreign = true;
  r->rdma_md5_set = false;
}

enum s3_rdma_path s3_req_rdma_path(const struct s3_req *r)
{
  return r->rdma_path;
}

uint64_t s3_req_rdma_bytes(const struct s3_req *r)
{
  return r->rdma_bytes;
}

bool s3_req_rdma_carried(const struct s3_req *r)
{
  return r->rdma_token && r->rdma_on;
}

bool s3_req_rdma_failed(const struct s3_req *r)
{
  return r->rdma_failed;
}

void s3_req_set_rdma_release(struct s3_req *r, s3_req_release_fn fn,
                             void *arg)
{
  r->rdma_release = fn;
  r->rdma_release_arg = arg;
}

bool s3_req_rdma_doubt(const struct s3_req *r)
{
  return r->rdma_doubt;
}

void s3_req_rdma_deadline(const struct s3_req *r, uint64_t *mono_ms,
                          uint64_t *wall_ms)
{
  *mono_ms = r->rdma_doubt_ms;
  *wall_ms = r->rdma_doubt_wall_ms;
}

bool s3_client_rdma_usable(const struct s3_client *c)
{
  return !atomic_load(&c->rdma_ignored);
}

bool s3_client_rdma_known(const struct s3_client *c)
{
  return atomic_load(&c->rdma_seen);
}

/* A decimal byte count, digits only, no overflow. */
static bool parse_count(const char *s, uint64_t *out)
{
  uint64_t v = 0;

  if (!s || !*s || strlen(s) > 20)
    return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return true;
}

/* Is the reply's ETag the MD5 of the request's body, all of it (a PUT
   whose token was served without a reply header)? A multipart, encrypted
   or otherwise derived ETag is not: such a PUT is taken as ignored and
   sent again, which is always safe. */
static bool etag_is_body(const struct s3_req *r)
{
  const char *e = s3_req_header(r, "etag");
  unsigned char own[16];
  const unsigned char *md = r->rdma_md5;
  char hex[33];
  size_t el;

  if (!e || !r->body || r->body_len != r->rdma_len || r->rdma_foreign)
    return false;
  el = strlen(e);
  if (el >= 2 && e[0] == '"' && e[el - 1] == '"') {
    e++;
    el -= 2;
  }
  if (el != 32)
    return false;
  /* not hashed before submit (the first such reply): hash here, once */
  if (!r->rdma_md5_set) {
    if (md5_of(r->body, r->body_len, own))
      return false;
    md = own;
  }
  for (unsigned int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", md[i]);
  return strncasecmp(e, hex, 32) == 0;
}

/* The MD5 of nothing, and an ETag (quoted or not) that is it. */
#define EMPTY_MD5 "d41d8cd98f00b204e9800998ecf8427e"
static bool etag_is_empty(const char *e)
{
  size_t el = e ? strlen(e) : 0;

  if (el >= 2 && e[0] == '"' && e[el - 1] == '"') {
    e++;
    el -= 2;
  }
  return el == 32 && strncasecmp(e, EMPTY_MD5, 32) == 0;
}

/* The bytes over HTTP, now; or, when the token's memory is not ours to
   read (rdma_only), the request fails (EOPNOTSUPP, never retried). */
static enum s3_rdma_verdict resend(struct s3_client *c, struct s3_req *r,
                                   int *rc, struct s3_err_map *m)
{
  if (r->rdma_only) {
    *rc = -EOPNOTSUPP;
    *m = (struct s3_err_map){.err = EOPNOTSUPP, .cls = S3_EC_CLIENT};
    return S3_RDMA_KEEP;
  }
  r->rdma_on = false;
  atomic_fetch_add(&c->st_rdma_resent, 1);
  return S3_RDMA_RESEND;
}

static void malformed(struct s3_req *r, int *rc, struct s3_err_map *m,
                      const char *what)
{
  log_warn("%s %s/%s: malformed RDMA reply (%s): failing the request",
           r->method, r->bucket ? r->bucket : "", r->key, what);
  *m = (struct s3_err_map){.err = EBADMSG, .cls = S3_EC_PROTOCOL};
  *rc = -EBADMSG;
}

enum s3_rdma_verdict s3_rdma_attempt_end(struct s3_client *c, struct s3_req *r,
                                         int *rc, struct s3_err_map *m)
{
  const char *v = s3_req_header(r, "x-amz-rdma-reply");
  bool put = strcmp(r->method, "PUT") == 0;
  uint64_t n;

  r->rdma_path = S3_RDMA_NONE;
  r->rdma_bytes = 0;
  atomic_fetch_add(&c->st_rdma_requests, 1);
  if (!v) {
    if (*rc)
      return S3_RDMA_KEEP; /* an error reply: retried or failed as usual */
    if (put && etag_is_body(r)) {
      /* some servers omit the reply on a PUT they served: the ETag (the
         body's MD5) shows the bytes they stored are ours */
      atomic_store(&c->rdma_seen, true);
      atomic_store(&c->rdma_put_quiet, true);
      atomic_fetch_add(&c->st_rdma_put_etag, 1);
      r->rdma_path = S3_RDMA_DONE;
      r->rdma_bytes = r->rdma_len;
      atomic_fetch_add(&c->st_rdma_bytes, r->rdma_len);
      return S3_RDMA_KEEP;
    }
    atomic_fetch_add(&c->st_rdma_ignored, 1);
    /* (memory another process may change under the transfer proves
       nothing of the server, this request only; but a PUT that stored the
       empty body read no memory at all: the server ignores tokens) */
    if ((!r->rdma_foreign ||
         (put && etag_is_empty(s3_req_header(r, "etag")))) &&
        !atomic_exchange(&c->rdma_ignored, true))
      log_notice("the S3 server ignores %s (no x-amz-rdma-reply): file data "
               "goes in HTTP bodies from now on",
               c->rdma_header);
    r->rdma_path = S3_RDMA_IGNORED;
    if (!put)
      return S3_RDMA_KEEP;
    /* it stored the empty body in place of the object the PUT's condition
       named (or of none): the resend replaces exactly that, not another
       writer's object, and is not refused for it */
    if (etag_is_empty(s3_req_header(r, "etag")))
      s3_req_recondition(r, EMPTY_MD5); /* unquoted: RGW refuses quotes */
    return resend(c, r, rc, m);
  }
  atomic_store(&c->rdma_seen, true);
  if (strcmp(v, "501") == 0) {
    atomic_fetch_add(&c->st_rdma_declined, 1);
    if (put)
      return resend(c, r, rc, m); /* nothing was stored: send the body */
    if (!*rc)
      r->rdma_path = S3_RDMA_DECLINED; /* the bytes came in the body */
    return S3_RDMA_KEEP;
  }
  if (strcmp(v, "500") == 0) {
    /* the transfer failed (RC: the session is gone); the server answered,
       so it is done with the token: the bytes over HTTP, now */
    r->rdma_failed = true;
    r->rdma_path = S3_RDMA_FAILED;
    *rc = 0;
    return resend(c, r, rc, m);
  }
  if (strcmp(v, "200") != 0 && strcmp(v, "204") != 0 &&
      strcmp(v, "206") != 0) {
    malformed(r, rc, m, "x-amz-rdma-reply is not 200, 204, 206 or 501");
    return S3_RDMA_KEEP;
  }
  if (*rc)
    return S3_RDMA_KEEP;
  if (!parse_count(s3_req_header(r, "x-amz-rdma-bytes-transferred"), &n)) {
    malformed(r, rc, m, "x-amz-rdma-bytes-transferred missing or not a count");
    return S3_RDMA_KEEP;
  }
  if (put ? n != r->rdma_len : n > r->rdma_len) {
    malformed(r, rc, m, "x-amz-rdma-bytes-transferred does not match the token");
    return S3_RDMA_KEEP;
  }
  if (r->sink_len) {
    malformed(r, rc, m, "a body came with the RDMA transfer");
    return S3_RDMA_KEEP;
  }
  r->rdma_path = S3_RDMA_DONE;
  r->rdma_bytes = n;
  atomic_fetch_add(&c->st_rdma_bytes, n);
  return S3_RDMA_KEEP;
}
