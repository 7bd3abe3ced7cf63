/*
 * s3_client: configuration, endpoint and URL building, signing of each
 * attempt, stats. The engine (s3_engine.c) calls s3_client_prepare_attempt
 * on its own thread before every attempt, so every retry is signed afresh
 * with a new x-amz-date.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/slog.h"
#include "s3/s3_i.h"

void s3_client_config_default(struct s3_client_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->max_inflight = 128;
  cfg->connect_timeout_ms = 5000;
  cfg->low_speed_time_s = 30;
  cfg->rdma_timeout_ms = 30000;
  s3_retry_policy_default(&cfg->retry);
  cfg->retry_quota = 500;
}

static uint64_t clock_ms(clockid_t id)
{
  struct timespec ts;

  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t s3_now_ms(void)
{
  return clock_ms(CLOCK_MONOTONIC);
}

uint64_t s3_wall_ms(void)
{
  return clock_ms(CLOCK_REALTIME);
}

unsigned s3_rdma_attempt_ms(const struct s3_client *c, const struct s3_req *r)
{
  unsigned req = r->timeout_ms ? r->timeout_ms : c->cfg.request_timeout_ms;
  uint64_t ms = c->cfg.rdma_timeout_ms ? c->cfg.rdma_timeout_ms : 30000;

  ms += (r->rdma_len >> 23) * 1000; /* a second per 8 MiB */
  if (ms > UINT32_MAX / 2)
    ms = UINT32_MAX / 2;
  if (req && req < ms)
    ms = req;
  return (unsigned)ms;
}

/* Split "scheme://host[:port][/base]" into its parts. */
static int parse_endpoint(struct s3_client *c, const char *ep, char *err,
                          size_t errlen)
{
  const char *hs, *slash;
  size_t n = strlen(ep);

  while (n > 0 && ep[n - 1] == '/')
    n--;
  c->endpoint = strndup(ep, n);
  if (!c->endpoint)
    return -ENOMEM;
  if (strncasecmp(c->endpoint, "http://", 7) == 0)
    hs = c->endpoint + 7;
  else if (strncasecmp(c->endpoint, "https://", 8) == 0)
    hs = c->endpoint + 8;
  else {
    snprintf(err, errlen,
             "endpoint '%s': must start with http:// or https://", ep);
    return -EINVAL;
  }
  slash = strchr(hs, '/');
  c->host = slash ? strndup(hs, (size_t)(slash - hs)) : strdup(hs);
  c->base_path = strdup(slash ? slash : "");
  c->scheme_host = strndup(c->endpoint, (size_t)(hs - c->endpoint));
  if (!c->host || !c->base_path || !c->scheme_host)
    return -ENOMEM;
  if (!*c->host || strpbrk(c->host, " \t\r\n?#@")) {
    snprintf(err, errlen, "endpoint '%s': bad host", ep);
    return -EINVAL;
  }
  return 0;
}

/* The client's own strings, then the client. */
static void free_strings(struct s3_client *c)
{
  free(c->ca_bundle);
  free(c->rdma_header);
  free(c->endpoint);
  free(c->host);
  free(c->base_path);
  free(c->scheme_host);
  free(c);
}

struct s3_client *s3_client_create(const struct s3_client_config *cfg,
                                   char *err, size_t errlen)
{
  struct s3_client *c;
  const char *ca;
  int rc;

  if (!cfg->endpoint || !*cfg->endpoint) {
    snprintf(err, errlen, "endpoint: not set");
    return NULL;
  }
  c = calloc(1, sizeof(*c));
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  c->cfg = *cfg;
  if (!c->cfg.max_inflight)
    c->cfg.max_inflight = 128;
  if (!c->cfg.retry.max_attempts)
    s3_retry_policy_default(&c->cfg.retry);
  rc = parse_endpoint(c, cfg->endpoint, err, errlen);
  if (rc == -ENOMEM)
    snprintf(err, errlen, "out of memory");
  if (rc)
    goto free_endpoint;
  ca = cfg->ca_bundle ? cfg->ca_bundle : getenv("AWS_CA_BUNDLE");
  if (ca && *ca && !(c->ca_bundle = strdup(ca)))
    goto free_endpoint;
  c->rdma_header = strdup(cfg->rdma_header && *cfg->rdma_header
                              ? cfg->rdma_header
                              : "x-amz-rdma-token");
  if (!c->rdma_header)
    goto free_endpoint;
  for (char *p = c->rdma_header; *p; p++) {
    if (*p <= ' ' || *p >= 127 || *p == ':') {
      snprintf(err, errlen, "rdma token header '%s': not a header name",
               cfg->rdma_header);
      goto free_endpoint;
    }
    *p = (char)tolower((unsigned char)*p);
  }
  rc = s3_creds_resolve(&cfg->creds, &c->creds, err, errlen);
  if (rc)
    goto free_endpoint;
  s3_retry_quota_init(&c->quota, c->cfg.retry_quota ? c->cfg.retry_quota
                                                     : 500);
  rc = s3_engine_start(c);
  if (rc) {
    snprintf(err, errlen, "cannot start the request engine: %s",
             strerror(-rc));
    goto free_quota;
  }
  log_debug("s3 client: endpoint %s region %s credentials from %s",
            c->endpoint, c->creds.region, c->creds.source);
  return c;

free_quota:
  s3_retry_quota_cleanup(&c->quota);
  s3_creds_cleanup(&c->creds);
free_endpoint:
  free_strings(c);
  return NULL;
}

void s3_client_destroy(struct s3_client *c)
{
  if (!c)
    return;
  s3_engine_stop(c);
  s3_retry_quota_cleanup(&c->quota);
  s3_creds_cleanup(&c->creds);
  free_strings(c);
}

const char *s3_client_region(const struct s3_client *c)
{
  return c->creds.region;
}

const char *s3_client_creds_source(const struct s3_client *c)
{
  return c->creds.source;
}

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

int s3_client_prepare_attempt(struct s3_client *c, struct s3_req *r)
{
  char *enc_key = NULL, *query = NULL, *path = NULL, *host = NULL;
  char *auth = NULL, range[64], amz_date[20], declen[24], expires[24];
  /* a token request sends no body (docs/ARCHITECTURE.md, RDMA tokens) */
  const char *payload_hash = r->rdma_on ? S3_UNSIGNED_PAYLOAD
                                        : r->payload_hash;
  struct s3_kv *sh = NULL;
  size_t nsh = 0, plen;
  struct tm tm;
  time_t now;
  int rc;

  curl_slist_free_all(r->hdr_list);
  r->hdr_list = NULL;
  free(r->url);
  r->url = NULL;

  enc_key = s3_uri_encode(r->key, strlen(r->key), true);
  rc = build_query(r, &query);
  if (!enc_key || rc) {
    rc = -ENOMEM;
    goto out;
  }
  /* path-style: /bucket/key; virtual-host: bucket.host/key */
  if (r->bucket && c->cfg.virtual_host) {
    host = malloc(strlen(r->bucket) + strlen(c->host) + 2);
    if (host)
      sprintf(host, "%s.%s", r->bucket, c->host);
  } else {
    host = strdup(c->host);
  }
  plen = strlen(c->base_path) + (r->bucket ? strlen(r->bucket) : 0) +
         strlen(enc_key) + 4;
  path = malloc(plen);
  if (!host || !path) {
    rc = -ENOMEM;
    goto out;
  }
  if (!r->bucket)
    snprintf(path, plen, "%s/", c->base_path);
  else if (c->cfg.virtual_host)
    snprintf(path, plen, "%s/%s", c->base_path, enc_key);
  else
    snprintf(path, plen, "%s/%s%s%s", c->base_path, r->bucket,
             *enc_key ? "/" : "", enc_key);
  r->url = malloc(strlen(c->scheme_host) + strlen(host) + strlen(path) +
                  strlen(query) + 2);
  if (!r->url) {
    rc = -ENOMEM;
    goto out;
  }
  sprintf(r->url, "%s%s%s%s%s", c->scheme_host, host, path, *query ? "?" : "",
          query);

  /* every header we send is signed, the Host included */
  sh = calloc(r->n_headers + 10, sizeof(*sh));
  if (!sh) {
    rc = -ENOMEM;
    goto out;
  }
  now = time(NULL);
  gmtime_r(&now, &tm);
  strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
  sh[nsh++] = (struct s3_kv){"host", host};
  if (!c->creds.anonymous) {
    sh[nsh++] = (struct s3_kv){"x-amz-date", amz_date};
    sh[nsh++] = (struct s3_kv){"x-amz-content-sha256", payload_hash};
    if (c->creds.session_token)
      sh[nsh++] = (struct s3_kv){"x-amz-security-token",
                                 c->creds.session_token};
  }
  if (r->has_range) {
    snprintf(range, sizeof(range), "bytes=%llu-%llu",
             (unsigned long long)r->range_off,
             (unsigned long long)(r->range_off + r->range_len - 1));
    sh[nsh++] = (struct s3_kv){"range", range};
  }
  if (r->rdma_on) {
    /* the deadline of this attempt, for both sides (s3_req_set_rdma) */
    r->rdma_attempt_ms = s3_rdma_attempt_ms(c, r);
    r->rdma_until_ms = s3_now_ms() + r->rdma_attempt_ms;
    r->rdma_until_wall_ms = s3_wall_ms() + r->rdma_attempt_ms;
    snprintf(expires, sizeof(expires), "%llu",
             (unsigned long long)r->rdma_until_wall_ms);
    sh[nsh++] = (struct s3_kv){"x-amz-rdma-expires", expires};
    sh[nsh++] = (struct s3_kv){c->rdma_header, r->rdma_token};
    if (!strcmp(r->method, "PUT")) {
      snprintf(declen, sizeof(declen), "%llu",
               (unsigned long long)r->rdma_len);
      sh[nsh++] = (struct s3_kv){"x-amz-decoded-content-length", declen};
    }
  }
  for (size_t i = 0; i < r->n_headers; i++)
    sh[nsh++] = r->headers[i];
  for (size_t i = 0; i < nsh; i++) {
    rc = slist_add(&r->hdr_list, sh[i].key, sh[i].val);
    if (rc)
      goto out;
  }
  if (!c->creds.anonymous) {
    struct s3_sigv4_input in = {
        .method = r->method,
        .path = path,
        .query = query,
        .headers = sh,
        .n_headers = nsh,
        .payload_hash = payload_hash,
        .amz_date = amz_date,
        .region = c->creds.region,
        .service = "s3",
        .access_key = c->creds.access_key,
        .secret_key = c->creds.secret_key,
        .generic = false,
    };
    rc = s3_sigv4_authorization(&in, &auth, NULL);
    if (rc)
      goto out;
    rc = slist_add(&r->hdr_list, "Authorization", auth);
    if (rc)
      goto out;
  }
  /* no 100-continue round trip before bodies; no curl Accept header */
  rc = slist_add(&r->hdr_list, "Expect", "");
  if (!rc)
    rc = slist_add(&r->hdr_list, "Accept", "");
out:
  free(auth);
  free(sh);
  free(enc_key);
  free(query);
  free(path);
  free(host);
  return rc;
}

void s3_client_stats(const struct s3_client *c, struct s3_stats *out)
{
  memset(out, 0, sizeof(*out));
  out->requests = atomic_load(&c->st_requests);
  out->attempts = atomic_load(&c->st_attempts);
  out->retries = atomic_load(&c->st_retries);
  out->bytes_sent = atomic_load(&c->st_sent);
  out->bytes_received = atomic_load(&c->st_recv);
  out->cancelled = atomic_load(&c->st_cancelled);
  out->inflight = atomic_load(&c->st_inflight);
  out->max_inflight_seen = atomic_load(&c->st_max_inflight);
  out->rdma_requests = atomic_load(&c->st_rdma_requests);
  out->rdma_bytes = atomic_load(&c->st_rdma_bytes);
  out->rdma_declined = atomic_load(&c->st_rdma_declined);
  out->rdma_ignored = atomic_load(&c->st_rdma_ignored);
  out->rdma_resent = atomic_load(&c->st_rdma_resent);
  for (int i = 0; i < S3_EC_COUNT && i < 16; i++)
    out->errors[i] = atomic_load(&c->st_errors[i]);
}

size_t s3_stats_format(const struct s3_stats *s, char *buf, size_t len)
{
  size_t n = 0;

#define EMIT(...)                                                              \
  do {                                                                         \
    int w_ = snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__);            \
    if (w_ > 0)                                                                \
      n += (size_t)w_;                                                         \
  } while (0)
  EMIT("s3.requests %llu\n", (unsigned long long)s->requests);
  EMIT("s3.attempts %llu\n", (unsigned long long)s->attempts);
  EMIT("s3.retries %llu\n", (unsigned long long)s->retries);
  EMIT("s3.bytes_sent %llu\n", (unsigned long long)s->bytes_sent);
  EMIT("s3.bytes_received %llu\n", (unsigned long long)s->bytes_received);
  EMIT("s3.cancelled %llu\n", (unsigned long long)s->cancelled);
  EMIT("s3.inflight %llu\n", (unsigned long long)s->inflight);
  EMIT("s3.max_inflight_seen %llu\n",
       (unsigned long long)s->max_inflight_seen);
  EMIT("s3.rdma_requests %llu\n", (unsigned long long)s->rdma_requests);
  EMIT("s3.rdma_bytes %llu\n", (unsigned long long)s->rdma_bytes);
  EMIT("s3.rdma_declined %llu\n", (unsigned long long)s->rdma_declined);
  EMIT("s3.rdma_ignored %llu\n", (unsigned long long)s->rdma_ignored);
  EMIT("s3.rdma_resent %llu\n", (unsigned long long)s->rdma_resent);
  for (int i = 1; i < S3_EC_COUNT; i++)
    EMIT("s3.errors.%s %llu\n", s3_err_class_name((enum s3_err_class)i),
         (unsigned long long)s->errors[i]);
#undef EMIT
  return n < len ? n : (len ? len - 1 : 0);
}
