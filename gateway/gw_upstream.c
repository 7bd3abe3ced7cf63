/*
 * gw_upstream: the upstream server and one request's exchange with it (see
 * gw_upstream.h).
 *
 * DESIGN (threads): everything here runs on the proxy worker that runs the
 * request; curl's callbacks too (curl_easy_perform). They are the only
 * writers of the request's worker-side fields and block on its pipes,
 * which its connection thread drains or fills. Shared fields change under
 * the request's mu (gw_req.c). struct gw_upstream is immutable once
 * created but for the test hook's counter (atomic).
 *
 * Time: a request the connection gives up (gw_req_cancel: its client has
 * gone, or was answered) is abandoned upstream by curl's progress callback
 * unless it is ready already; a token request also once the client's
 * deadline (x-amz-rdma-expires, in r->rdx.expires_ms) has passed, which
 * rdx_serve enforces for each chunk.
 */
#include "gateway/gw_upstream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/clock.h"
#include "common/endpoint.h"
#include "common/slog.h"
#include "gateway/gw_auth.h"
#include "gateway/gw_serve.h"
#include "gateway/gw_ups.h"
#include "s3/s3_curl.h"

#define RESP_HDR_MAX (64 * 1024)
#define UPSTREAM_BUFFER (128L * 1024)
#define UPSTREAM_CONNECT_MS 10000L

struct gw_upstream {
  const struct gw_config *cfg;
  struct gw_stats *stats;
  struct rdx_server *rdx;
  struct gw_ups *set;       /* the upstreams (gw_ups.h) */
  _Atomic unsigned delayed; /* token requests held by the test delay */
};

/* ---- curl callbacks ------------------------------------------------------ */

static void reset_resp_headers(struct gw_req *r)
{
  for (size_t i = 0; i < r->n_resp_hdrs; i++)
    free(r->resp_hdrs[i]);
  free(r->resp_hdrs);
  r->resp_hdrs = NULL;
  r->n_resp_hdrs = 0;
  r->resp_hdr_bytes = 0;
  r->resp_len = -1;
}

static int add_resp_header(struct gw_req *r, const char *line, size_t n)
{
  char **v;
  char *s;

  if (r->resp_hdr_bytes + n > RESP_HDR_MAX)
    return -E2BIG;
  v = realloc(r->resp_hdrs, (r->n_resp_hdrs + 1) * sizeof(*v));
  if (!v)
    return -ENOMEM;
  r->resp_hdrs = v;
  s = strndup(line, n);
  if (!s)
    return -ENOMEM;
  v[r->n_resp_hdrs++] = s;
  r->resp_hdr_bytes += n;
  if (n > 15 && strncasecmp(s, "content-length:", 15) == 0)
    r->resp_len = strtoll(s + 15, NULL, 10);
  return 0;
}

/* The upstream's headers are complete: decide how to answer. 0 or -1. */
static int on_headers(struct gw_run *w)
{
  struct gw_req *r = w->r;

  if (r->status >= 500)
    gw_stat_add(w->stats, upstream_5xx, 1);
  if (r->tok == GW_TOK_NONE || r->decline || r->status < 200 ||
      r->status >= 300) {
    gw_req_answer_http(r);
    return 0;
  }
  return gw_serve_start(w);
}

static size_t header_cb(char *buf, size_t size, size_t n, void *arg)
{
  struct gw_run *w = arg;
  struct gw_req *r = w->r;
  size_t len = size * n, l = len;

  if (w->hdrs_done)
    return len;
  while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
    l--;
  if (l >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
    const char *sp = memchr(buf, ' ', l);
    reset_resp_headers(r);
    r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    return len;
  }
  if (l == 0) {
    if (r->status < 200)
      return len; /* 1xx: another block follows */
    w->hdrs_done = true;
    return on_headers(w) ? 0 : len;
  }
  if (add_resp_header(r, buf, l)) {
    gw_req_set_error(r, 502, "BadGateway", "upstream's headers are too large");
    return 0;
  }
  return len;
}

static size_t write_cb(char *buf, size_t size, size_t n, void *arg)
{
  struct gw_run *w = arg;
  struct gw_req *r = w->r;
  size_t len = size * n, off = 0;

  if (r->mode == GW_MODE_ERROR)
    return 0;
  if (r->tok == GW_TOK_GET && r->mode == GW_MODE_RDMA) {
    if (gw_serve_get_write(w, buf, len, &off))
      return 0;
    if (off == len)
      return len;
    /* declined at the first chunk: the rest goes over HTTP */
  }
  if (r->mode == GW_MODE_RDMA)
    return len; /* a token PUT's reply body: dropped */
  if (gw_pipe_push(&r->down, buf + off, len - off))
    return 0;
  gw_stat_add(w->stats, http_bytes_out, len - off);
  return len;
}

/* The client's body: exactly Content-Length bytes, never more. */
static size_t read_cb(char *buf, size_t size, size_t n, void *arg)
{
  struct gw_run *w = arg;
  size_t max = size * n;
  long got;

  w->body_taken = true;
  if (w->r->tok == GW_TOK_PUT)
    return gw_serve_put_read(w, buf, max);
  if (w->up_left <= 0)
    return 0;
  if ((uint64_t)max > (uint64_t)w->up_left)
    max = (size_t)w->up_left;
  got = gw_pipe_pull(&w->r->up, buf, max);
  if (got < 0 || (got == 0 && w->up_left > 0))
    return CURL_READFUNC_ABORT; /* the client stopped short */
  w->up_left -= got;
  gw_stat_add(w->stats, http_bytes_in, got);
  return (size_t)got;
}

/*
 * Abandon the upstream request once nobody waits for its answer: the
 * connection gave it up (its client left) before it was ready, or a token
 * request's deadline passed. An upstream PUT cut off before its last byte
 * is not stored; one whose body upstream already has may still be (S3 has
 * no way to take it back).
 */
static int progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow,
                       curl_off_t ultotal, curl_off_t ulnow)
{
  struct gw_run *w = arg;
  struct gw_req *r = w->r;
  bool gone;

  (void)dltotal;
  (void)dlnow;
  (void)ultotal;
  (void)ulnow;
  pthread_mutex_lock(&r->mu);
  gone = r->cancel && !r->ready;
  pthread_mutex_unlock(&r->mu);
  if (gone)
    w->stopped = "its client has gone";
  else if (r->mode != GW_MODE_HTTP && gw_req_expired(r))
    w->stopped = "the token's deadline has passed";
  return w->stopped != NULL;
}

/* ---- forwarding ---------------------------------------------------------- */

/*
 * Does a client header go upstream? x-amz-* only when the client signed
 * it: we sign it upstream with our keys, so an unsigned one would be an
 * injection that the client's signature never covered.
 */
static bool forwarded(const struct gw_upstream *up, const struct gw_req *r,
                      const char *name)
{
  static const char *const plain[] = {
      "content-type", "content-md5", "content-encoding", "content-disposition",
      "content-language", "cache-control", "expires", "range", "if-match",
      "if-none-match", "if-modified-since", "if-unmodified-since", NULL};

  if (strcasecmp(name, up->cfg->token_header) == 0 ||
      strncasecmp(name, "x-amz-rdma-", 11) == 0)
    return false; /* ours, not upstream's */
  if (strncasecmp(name, "x-amz-", 6) == 0) {
    if (strcasecmp(name, "x-amz-date") == 0 ||
        strcasecmp(name, "x-amz-content-sha256") == 0 ||
        strcasecmp(name, "x-amz-security-token") == 0)
      return false;
    if (r->tok != GW_TOK_NONE &&
        strcasecmp(name, "x-amz-decoded-content-length") == 0)
      return false;
    return gw_auth_signed(r->hdrs, r->n_hdrs, name);
  }
  for (int i = 0; plain[i]; i++)
    if (strcasecmp(name, plain[i]) == 0)
      return r->tok != GW_TOK_PUT || strcasecmp(name, "range") != 0;
  return false;
}

static struct curl_slist *add_hdr(struct curl_slist *l, const char *name,
                                  const char *val, bool *oom)
{
  size_t n = strlen(name) + strlen(val) + 3;
  char *s = malloc(n);
  struct curl_slist *nl;

  if (!s) {
    *oom = true;
    return l;
  }
  /* "Name;" sends an empty value; "Name:" would remove the header. */
  if (val[0])
    snprintf(s, n, "%s: %s", name, val);
  else
    snprintf(s, n, "%s;", name);
  nl = curl_slist_append(l, s);
  free(s);
  if (!nl) {
    *oom = true;
    return l;
  }
  return nl;
}

/* The Authorization value over the n headers sign[] (sign[1]: the date,
   sign[2]: the payload's hash), with the upstream keys. */
static int authorization(const struct gw_upstream *up, const struct gw_req *r,
                         const struct s3_kv *sign, size_t n, char **authz)
{
  const struct s3_sigv4_input in = {
      .method = r->method,
      .path = r->path,
      .query = r->query,
      .headers = sign,
      .n_headers = n,
      .payload_hash = sign[2].val,
      .amz_date = sign[1].val,
      .region = up->cfg->region ? up->cfg->region : r->region,
      .service = "s3",
      .access_key = up->cfg->up_access_key,
      .secret_key = up->cfg->up_secret_key,
  };

  return s3_sigv4_authorization(&in, authz, NULL);
}

/* Headers for upstream (Host hostport), signed with the upstream keys. */
static int build_headers(struct gw_upstream *up, struct gw_req *r,
                         const char *hostport, struct curl_slist **out)
{
  const char *payload = r->tok == GW_TOK_PUT
                            ? S3_UNSIGNED_PAYLOAD
                            : gw_header_get(r->hdrs, r->n_hdrs,
                                            "x-amz-content-sha256");
  struct s3_kv *sign = calloc(r->n_hdrs + 3, sizeof(*sign));
  struct curl_slist *l = NULL;
  char date[17], *authz = NULL;
  size_t n = 0;
  bool oom = false;
  int rc;

  if (!sign)
    return -ENOMEM;
  if (!payload) /* verified: no body, signed with the empty payload's hash */
    payload = S3_EMPTY_SHA256;
  gw_amz_date(time(NULL), date);
  sign[n++] = (struct s3_kv){"host", hostport};
  sign[n++] = (struct s3_kv){"x-amz-date", date};
  sign[n++] = (struct s3_kv){"x-amz-content-sha256", payload};
  for (size_t i = 0; i < r->n_hdrs; i++)
    if (forwarded(up, r, r->hdrs[i].key))
      sign[n++] = r->hdrs[i];
  rc = authorization(up, r, sign, n, &authz);
  if (rc)
    goto out;
  for (size_t i = 0; i < n; i++)
    l = add_hdr(l, i == 0 ? "Host" : sign[i].key, sign[i].val, &oom);
  l = add_hdr(l, "Authorization", authz, &oom);
  l = curl_slist_append(l, "Expect:");
  l = curl_slist_append(l, "Accept:");
  if (oom || !l) {
    rc = -ENOMEM;
    goto out;
  }
  *out = l;
  l = NULL;
out:
  curl_slist_free_all(l);
  free(authz);
  free(sign);
  return rc;
}

/*
 * The upstream URL for r: the upstream's scheme, host and port, with the
 * client's path and query set as parts (libcurl's URL API), never pasted
 * into a string that libcurl would parse again. NULL: out of memory or a
 * part refused.
 */
static CURLU *build_url(CURLU *base, const struct gw_req *r)
{
  CURLU *u = curl_url_dup(base);

  if (!u)
    return NULL;
  if (curl_url_set(u, CURLUPART_PATH, r->path, 0) != CURLUE_OK ||
      curl_url_set(u, CURLUPART_QUERY, r->query[0] ? r->query : NULL, 0) !=
          CURLUE_OK) {
    curl_url_cleanup(u);
    return NULL;
  }
  return u;
}

/* ---- one exchange -------------------------------------------------------- */

/*
 * A token request, before it goes upstream: the test delay
 * (--test-token-delay), then its chunk buffer. 0, or -1 with r failed.
 */
static int token_begin(struct gw_upstream *up, struct gw_req *r)
{
  const struct gw_config *cfg = up->cfg;

  if (cfg->test_token_delay_ms &&
      (!cfg->test_token_delay_n ||
       atomic_fetch_add(&up->delayed, 1) < cfg->test_token_delay_n) &&
      !gw_req_hold(r, cfg->test_token_delay_ms)) {
    gw_req_set_error(r, 400, "RequestTimeout", "the client has gone");
    return -1;
  }
  r->chunk = rdx_server_buf_alloc(up->rdx, cfg->chunk_size);
  if (!r->chunk) {
    gw_req_set_error(r, 500, "InternalError", "out of memory");
    return -1;
  }
  return 0;
}

/* The method and the request body curl sends. */
static void setup_method(CURL *c, struct gw_run *w)
{
  struct gw_req *r = w->r;
  bool upload = r->tok == GW_TOK_PUT || r->body_len > 0 ||
                strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0;

  if (strcmp(r->method, "HEAD") == 0) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    /* RGW answers HEAD / with a chunked body, which would be read as the
       next reply's start on a kept connection */
    if (strcmp(r->path, "/") == 0)
      curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
  } else if (upload) {
    curl_off_t len = r->tok == GW_TOK_PUT ? (curl_off_t)r->rdx.len
                     : r->body_len > 0    ? (curl_off_t)r->body_len
                                          : 0;
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, len);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, w);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (strcmp(r->method, "GET") != 0)
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  }
}

/* The worker's handle, reset, set up for w's request to url with hdrs. */
static void setup_handle(struct gw_upstream *up, CURL *c, struct gw_run *w,
                         CURLU *url, struct curl_slist *hdrs, char *errbuf)
{
  curl_easy_reset(c);
  /* the S3 client's options (s3_curl.h); the idle limit is --timeout */
  s3_curl_setup(c, &(struct s3_curl_opts){
                       .buffer_size = UPSTREAM_BUFFER,
                       .connect_timeout_ms = UPSTREAM_CONNECT_MS,
                       .low_speed_time_s = (long)up->cfg->timeout_s,
                   });
  curl_easy_setopt(c, CURLOPT_CURLU, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, w);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  setup_method(c, w);
}

/* The transfer, then a token GET's last chunk. */
static CURLcode perform(CURL *c, struct gw_run *w)
{
  struct gw_req *r = w->r;
  CURLcode cc = curl_easy_perform(c);

  if (cc == CURLE_OK && r->tok == GW_TOK_GET && r->mode == GW_MODE_RDMA &&
      gw_serve_get_flush(w))
    cc = CURLE_WRITE_ERROR;
  return cc;
}

/* Under r->mu: the transfer failed (cc): count, log, and answer or cut. */
static void classify_failure_locked(struct gw_run *w, CURLcode cc,
                                    const char *errbuf)
{
  struct gw_req *r = w->r;
  const char *what = errbuf[0] ? errbuf : curl_easy_strerror(cc);
  bool timedout = cc == CURLE_OPERATION_TIMEDOUT;

  if (r->mode == GW_MODE_ERROR) {
    /* our callbacks failed it and said why */
  } else if (w->stopped) {
    gw_stat_add(w->stats, upstream_abandoned, 1);
    if (gw_req_expired(r))
      gw_stat_add(w->stats, token_expired, 1);
    log_info("upstream %s %s abandoned: %s", r->method, r->path, w->stopped);
    if (r->ready && r->mode == GW_MODE_HTTP)
      gw_pipe_abort(&r->down, -EIO);
    else
      gw_req_set_error_locked(r, 400, "RequestTimeout", w->stopped);
  } else if (r->ready && r->mode == GW_MODE_HTTP) {
    gw_stat_add(w->stats, upstream_errors, 1);
    log_warn("upstream %s %s broke off: %s", r->method, r->path, what);
    gw_pipe_abort(&r->down, -EIO);
  } else {
    gw_stat_add(w->stats, upstream_errors, 1);
    log_warn("upstream %s %s failed: %s", r->method, r->path, what);
    if (r->tok != GW_TOK_NONE && r->tok_off > 0)
      gw_stat_add(w->stats, token_failures, 1);
    gw_req_set_error_locked(r, timedout ? 504 : 502,
                            timedout ? "GatewayTimeout" : "BadGateway",
                            "upstream request failed");
  }
}

/* What the transfer's outcome means for the client's answer. */
static void classify(struct gw_run *w, CURLcode cc, const char *errbuf)
{
  struct gw_req *r = w->r;

  pthread_mutex_lock(&r->mu);
  if (cc != CURLE_OK) {
    classify_failure_locked(w, cc, errbuf);
  } else if (!r->ready) {
    if (r->mode == GW_MODE_RDMA) {
      r->rdma_bytes = r->tok_off;
      gw_stat_add(w->stats, token_gets, r->tok == GW_TOK_GET);
      gw_stat_add(w->stats, token_puts, r->tok == GW_TOK_PUT);
    }
    gw_req_set_ready_locked(r);
  }
  if (r->mode == GW_MODE_HTTP)
    gw_pipe_close(&r->down);
  pthread_mutex_unlock(&r->mu);
  log_debug("%s %s -> %ld (%s)", r->method, r->path, r->status,
            cc == CURLE_OK ? "ok" : curl_easy_strerror(cc));
}

/* A request without a body abandoned (its client gone, its token's
   deadline passed) with no answer after this long says the upstream
   hangs: a failure of it. Sooner, or with a body (its time may have gone
   in sending it), it says nothing of the upstream. */
#define HUNG_MS 5000

/*
 * One try of r on upstream i. 1: the upstream refused the connection, so
 * nothing of r moved, and another upstream is up to take it (not on the
 * last try); else 0, r's answer decided.
 */
static int try_upstream(struct gw_upstream *up, CURL *c, struct gw_req *r,
                        unsigned i, enum ep_try how, bool last)
{
  struct gw_run w = {.cfg = up->cfg,
                     .stats = up->stats,
                     .rdx = up->rdx,
                     .r = r,
                     .up_left = r->has_up ? r->body_len : 0};
  struct curl_slist *hdrs = NULL;
  CURLU *url = build_url(gw_ups_base(up->set, i), r);
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_off_t sent = 0, got = 0;
  uint64_t t0 = clock_mono_ms();
  CURLcode cc;
  bool elsewhere = false;
  int again = 0;

  r->resp_len = -1;
  if (!url || build_headers(up, r, gw_ups_hostport(up->set, i), &hdrs)) {
    gw_ups_release(up->set, i, how);
    gw_req_set_error(r, 500, "InternalError", "out of memory");
    goto free_try;
  }
  setup_handle(up, c, &w, url, hdrs, errbuf);
  cc = perform(c, &w);
  curl_easy_getinfo(c, CURLINFO_SIZE_UPLOAD_T, &sent);
  curl_easy_getinfo(c, CURLINFO_SIZE_DOWNLOAD_T, &got);
  /* (r->status: written by this thread's header callback) */
  if (!w.stopped)
    elsewhere = gw_ups_outcome(up->set, i, how, cc, r->status,
                               (uint64_t)(sent + got));
  else if (r->status) /* answered before it was abandoned */
    gw_ups_outcome(up->set, i, how, CURLE_OK, r->status,
                   (uint64_t)(sent + got));
  else if (!r->has_up && r->tok != GW_TOK_PUT &&
           clock_mono_ms() - t0 >= HUNG_MS)
    gw_ups_end(up->set, i, how, true, (uint64_t)(sent + got));
  else /* abandoned early: nothing learnt of the upstream */
    gw_ups_release(up->set, i, how);
  /* refused, and not a byte of the body taken: curl may report a refused
     reconnect after it sent the body on a connection that died */
  if (cc == CURLE_COULDNT_CONNECT && !w.body_taken && elsewhere && !last) {
    log_info("upstream %s refused %s %s: another takes it",
             gw_ups_url(up->set, i), r->method, r->path);
    again = 1;
  } else {
    if (r->has_up) /* the client's leftover body is dropped */
      gw_pipe_abort(&r->up, -EPIPE);
    classify(&w, cc, errbuf);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
  curl_easy_setopt(c, CURLOPT_CURLU, NULL);
free_try:
  curl_slist_free_all(hdrs);
  curl_url_cleanup(url);
  return again;
}

void gw_upstream_run(struct gw_upstream *up, CURL *c, struct gw_req *r)
{
  unsigned n = gw_ups_count(up->set);
  uint32_t tried = 0; /* those that refused it */

  if (r->tok == GW_TOK_NONE || !token_begin(up, r))
    for (unsigned k = 0; k < n; k++) {
      enum ep_try how;
      unsigned i = gw_ups_pick(up->set, tried, &how);
      if (!try_upstream(up, c, r, i, how, k + 1 == n))
        break;
      tried |= 1u << i;
    }
  rdx_server_buf_free(up->rdx, r->chunk);
  r->chunk = NULL;
}

/* ---- the upstream -------------------------------------------------------- */

int gw_upstream_create(const struct gw_config *cfg, struct gw_stats *stats,
                       struct rdx_server *rdx, struct gw_upstream **out,
                       char *err, size_t errlen)
{
  struct gw_upstream *up = calloc(1, sizeof(*up));
  int rc;

  *out = NULL;
  if (!up)
    return -ENOMEM;
  *up = (struct gw_upstream){.cfg = cfg, .stats = stats, .rdx = rdx};
  rc = gw_ups_create(cfg->upstream, &up->set, err, errlen);
  if (rc) {
    free(up);
    return rc;
  }
  stats->more = gw_ups_format;
  stats->more_arg = up->set;
  *out = up;
  return 0;
}

void gw_upstream_destroy(struct gw_upstream *up)
{
  if (!up)
    return;
  if (up->stats->more_arg == up->set)
    up->stats->more = NULL;
  gw_ups_destroy(up->set);
  free(up);
}
