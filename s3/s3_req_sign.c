/* s3_req_sign: an attempt's URL and signed headers (see s3_req_sign.h). */
#include "s3/s3_req_sign.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "s3/s3_i.h"

/* The query string as sent: name[=value] pairs, encoded, in given order. */
static int build_query(const struct s3_req *r, char **out)
{
  size_t cap = 1, len = 0;
  char *q, *enc_k = NULL, *enc_v = NULL;
  int rc = 0;

  for (size_t i = 0; i < r->n_query; i++)
    cap += 3 * (strlen(r->query[i].key) + strlen(r->query[i].val)) + 2;
  q = malloc(cap);
  if (!q)
    return -ENOMEM;
  q[0] = '\0';
  for (size_t i = 0; i < r->n_query; i++) {
    enc_k = s3_uri_encode(r->query[i].key, strlen(r->query[i].key), false);
    enc_v = s3_uri_encode(r->query[i].val, strlen(r->query[i].val), false);
    if (!enc_k || !enc_v) {
      rc = -ENOMEM;
      goto out;
    }
    len += (size_t)snprintf(q + len, cap - len, "%s%s%s%s", i ? "&" : "",
                            enc_k, *enc_v ? "=" : "", enc_v);
    free(enc_k);
    free(enc_v);
    enc_k = enc_v = NULL;
  }
out:
  free(enc_k);
  free(enc_v);
  if (rc)
    free(q);
  else
    *out = q;
  return rc;
}

static int slist_add(struct curl_slist **l, const char *name, const char *val)
{
  char line[8192];
  struct curl_slist *n;
  int len = snprintf(line, sizeof(line), "%s: %s", name, val);

  if (len < 0 || (size_t)len >= sizeof(line))
    return -E2BIG;
  n = curl_slist_append(*l, line);
  if (!n)
    return -ENOMEM;
  *l = n;
  return 0;
}

/* What one attempt sends: built, then signed, then freed together. */
struct attempt {
  char *host, *path, *query;
  char amz_date[20], range[64], declen[24], expires[24];
  const char *payload_hash;
  struct s3_kv *sh; /* the headers sent, every one signed */
  size_t nsh;
};

static void attempt_free(struct attempt *a)
{
  free(a->sh);
  free(a->query);
  free(a->path);
  free(a->host);
}

/*
 * Host, path and query of the attempt, and r->url from them. Path-style:
 * /bucket/key; virtual-host: bucket.host/key.
 */
static int build_url(struct s3_req *r, const struct s3_req_target *t,
                     struct attempt *a)
{
  char *enc_key = s3_uri_encode(r->key, strlen(r->key), true);
  size_t plen;
  int rc = build_query(r, &a->query);

  if (!enc_key || rc) {
    rc = -ENOMEM;
    goto free_key;
  }
  if (r->path) {
    a->host = strdup(t->host);
    a->path = malloc(strlen(t->base_path) + strlen(r->path) + 1);
    if (!a->host || !a->path) {
      rc = -ENOMEM;
      goto free_key;
    }
    sprintf(a->path, "%s%s", t->base_path, r->path);
    goto url;
  }
  if (r->bucket && t->virtual_host) {
    a->host = malloc(strlen(r->bucket) + strlen(t->host) + 2);
    if (a->host)
      sprintf(a->host, "%s.%s", r->bucket, t->host);
  } else {
    a->host = strdup(t->host);
  }
  plen = strlen(t->base_path) + (r->bucket ? strlen(r->bucket) : 0) +
         strlen(enc_key) + 4;
  a->path = malloc(plen);
  if (!a->host || !a->path) {
    rc = -ENOMEM;
    goto free_key;
  }
  if (!r->bucket)
    snprintf(a->path, plen, "%s/", t->base_path);
  else if (t->virtual_host)
    snprintf(a->path, plen, "%s/%s", t->base_path, enc_key);
  else
    snprintf(a->path, plen, "%s/%s%s%s", t->base_path, r->bucket,
             *enc_key ? "/" : "", enc_key);
url:
  r->url = malloc(strlen(t->scheme) + strlen(a->host) + strlen(a->path) +
                  strlen(a->query) + 2);
  if (!r->url) {
    rc = -ENOMEM;
    goto free_key;
  }
  sprintf(r->url, "%s%s%s%s%s", t->scheme, a->host, a->path,
          *a->query ? "?" : "", a->query);
free_key:
  free(enc_key);
  return rc;
}

/* The headers to send (a->sh), every one of them signed, the Host first. */
static int collect_headers(struct s3_req *r, const struct s3_req_target *t,
                           struct attempt *a)
{
  const struct s3_creds *cr = t->creds;
  struct s3_kv *sh = calloc(r->n_headers + 10, sizeof(*sh));
  size_t n = 0;
  struct tm tm;
  time_t now = time(NULL);

  if (!sh)
    return -ENOMEM;
  a->sh = sh;
  gmtime_r(&now, &tm);
  strftime(a->amz_date, sizeof(a->amz_date), "%Y%m%dT%H%M%SZ", &tm);
  sh[n++] = (struct s3_kv){"host", a->host};
  if (!cr->anonymous) {
    sh[n++] = (struct s3_kv){"x-amz-date", a->amz_date};
    sh[n++] = (struct s3_kv){"x-amz-content-sha256", a->payload_hash};
    if (cr->session_token)
      sh[n++] = (struct s3_kv){"x-amz-security-token", cr->session_token};
  }
  if (r->has_range) {
    snprintf(a->range, sizeof(a->range), "bytes=%llu-%llu",
             (unsigned long long)r->range_off,
             (unsigned long long)(r->range_off + r->range_len - 1));
    sh[n++] = (struct s3_kv){"range", a->range};
  }
  if (r->rdma_on) {
    /* the deadline of this attempt, for both sides (s3_req_set_rdma) */
    snprintf(a->expires, sizeof(a->expires), "%llu",
             (unsigned long long)r->rdma_until_wall_ms);
    sh[n++] = (struct s3_kv){"x-amz-rdma-expires", a->expires};
    sh[n++] = (struct s3_kv){t->rdma_header, r->rdma_token};
    if (!strcmp(r->method, "PUT")) {
      snprintf(a->declen, sizeof(a->declen), "%llu",
               (unsigned long long)r->rdma_len);
      sh[n++] = (struct s3_kv){"x-amz-decoded-content-length", a->declen};
    }
  }
  for (size_t i = 0; i < r->n_headers; i++)
    sh[n++] = r->headers[i];
  a->nsh = n;
  return 0;
}

/* The Authorization header over a's headers (not for anonymous keys). */
static int add_authorization(struct s3_req *r, const struct s3_req_target *t,
                             const struct attempt *a)
{
  const struct s3_sigv4_input in = {
      .method = r->method,
      .path = a->path,
      .query = a->query,
      .headers = a->sh,
      .n_headers = a->nsh,
      .payload_hash = a->payload_hash,
      .amz_date = a->amz_date,
      .region = t->creds->region,
      .service = "s3",
      .access_key = t->creds->access_key,
      .secret_key = t->creds->secret_key,
      .generic = false,
  };
  char *auth = NULL;
  int rc = s3_sigv4_authorization(&in, &auth, NULL);

  if (!rc)
    rc = slist_add(&r->hdr_list, "Authorization", auth);
  free(auth);
  return rc;
}

int s3_req_sign_attempt(struct s3_req *r, const struct s3_req_target *t)
{
  /* a token request sends no body (docs/rdma.md, token formats) */
  struct attempt a = {
      .payload_hash = r->rdma_on ? S3_UNSIGNED_PAYLOAD : r->payload_hash,
  };
  int rc;

  curl_slist_free_all(r->hdr_list);
  r->hdr_list = NULL;
  free(r->url);
  r->url = NULL;

  rc = build_url(r, t, &a);
  if (!rc)
    rc = collect_headers(r, t, &a);
  for (size_t i = 0; !rc && i < a.nsh; i++)
    rc = slist_add(&r->hdr_list, a.sh[i].key, a.sh[i].val);
  if (!rc && !t->creds->anonymous)
    rc = add_authorization(r, t, &a);
  /* no 100-continue round trip before bodies; no curl Accept header */
  if (!rc)
    rc = slist_add(&r->hdr_list, "Expect", "");
  if (!rc)
    rc = slist_add(&r->hdr_list, "Accept", "");
  attempt_free(&a);
  return rc;
}
