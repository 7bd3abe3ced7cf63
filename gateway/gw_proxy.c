/*
 * gw_proxy: upstream requests on a fixed worker pool (see gw_proxy.h).
 *
 * DESIGN (threads): --threads workers, each with its own curl easy handle
 * (curl_easy_reset between requests keeps its connection cache). The pool
 * queue (head/tail) is protected by pool->lock. A worker runs one request
 * at a time: curl's callbacks run on the worker and are the only writers
 * of the request's worker-side fields; they block on the request's pipes,
 * which the request's connection thread drains or fills. A worker waits
 * only on its own request's connection thread, which never waits on
 * another request, so the pool cannot deadlock; a request waits in the
 * queue while every worker is busy.
 *
 * Time: a request the connection gives up (gw_req_cancel: its client has
 * gone, or was answered) is abandoned upstream by curl's progress callback
 * unless it is ready already; a token request also once the client's
 * deadline (x-amz-rdma-expires, in r->rdx.expires_ms) has passed, which
 * rdx_serve enforces for each chunk.
 */
#include "gateway/gw_proxy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "common/slog.h"
#include "gateway/gw_auth.h"

#define RESP_HDR_MAX (64 * 1024)

struct gw_proxy {
  const struct gw_config *cfg;
  struct gw_stats *stats;
  struct rdx_server *rdx;
  CURLU *base;         /* upstream scheme, host and port (no path) */
  char hostport[256];  /* what we send (and sign) as Host */
  pthread_t *th;
  unsigned n_th;
  pthread_mutex_t lock;
  pthread_cond_t cv;
  struct gw_req *head, *tail; /* protected by lock */
  bool stop;                  /* protected by lock */
  _Atomic unsigned delayed;   /* token requests held by the test delay */
};

/* A worker's view of the request it runs. */
struct run {
  struct gw_proxy *p;
  struct gw_req *r;
  size_t chunk_pos;   /* PUT: bytes of chunk already given to curl */
  int64_t up_left;    /* HTTP body bytes still to hand curl */
  bool hdrs_done;     /* the final header block was seen: ignore trailers */
  const char *stopped; /* why progress_cb abandoned the upstream request */
};

void gw_rdx_error(int rc, int *status, const char **code)
{
  switch (rc) {
  case -EPERM:
  case -EACCES:
    *status = 403;
    *code = "AccessDenied";
    break;
  case -EINVAL:
  case -ESRCH:
  case -EFAULT:
    *status = 400;
    *code = "InvalidArgument";
    break;
  case -EOPNOTSUPP:
    *status = 501;
    *code = "NotImplemented";
    break;
  case -ETIMEDOUT: /* the client's deadline, or no answer from a helper */
    *status = 400;
    *code = "RequestTimeout";
    break;
  default:
    *status = 500;
    *code = "InternalError";
    break;
  }
}

/* ---- request state ------------------------------------------------------- */

static void set_ready_locked(struct gw_req *r)
{
  r->ready = true;
  pthread_cond_broadcast(&r->cv);
}

/* Fail the request (under mu): the HTTP side answers status/code. */
static void set_error_locked(struct gw_req *r, int status, const char *code,
                             const char *msg)
{
  if (r->mode != GW_MODE_ERROR) {
    r->mode = GW_MODE_ERROR;
    r->err_status = status;
    r->err_code = code;
    snprintf(r->err_msg, sizeof(r->err_msg), "%s", msg);
  }
  set_ready_locked(r);
}

static void set_error(struct gw_req *r, int status, const char *code,
                      const char *msg)
{
  pthread_mutex_lock(&r->mu);
  set_error_locked(r, status, code, msg);
  pthread_mutex_unlock(&r->mu);
}

/* now + ms on CLOCK_MONOTONIC (the clock of every cv here). */
static struct timespec after_ms(uint64_t ms)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += (time_t)(ms / 1000);
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

static uint64_t wall_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int gw_req_wait_ready(struct gw_req *r, unsigned timeout_ms)
{
  struct timespec ts = after_ms(timeout_ms);
  int rc = 0;

  pthread_mutex_lock(&r->mu);
  while (!r->ready && rc == 0)
    if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) == ETIMEDOUT)
      rc = -ETIMEDOUT;
  if (r->ready)
    rc = 0;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void gw_req_cancel(struct gw_req *r)
{
  pthread_mutex_lock(&r->mu);
  r->cancel = true;
  pthread_cond_broadcast(&r->cv); /* a worker in hold() */
  while (r->serving)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

void gw_req_wait_done(struct gw_req *r)
{
  pthread_mutex_lock(&r->mu);
  while (!r->done)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

/* ---- rdma ---------------------------------------------------------------- */

/* Has the client's deadline for the token passed? */
static bool expired(const struct gw_req *r)
{
  return r->tok != GW_TOK_NONE && r->rdx.expires_ms &&
         wall_ms() >= r->rdx.expires_ms;
}

/*
 * A test hook (--test-token-delay, --test-put-hold): wait ms, or less if
 * the connection gives the request up meanwhile. Returns false when it
 * did (the caller stops).
 */
static bool hold(struct gw_req *r, unsigned ms)
{
  struct timespec until = after_ms(ms);
  bool go;

  pthread_mutex_lock(&r->mu);
  while (!r->cancel)
    if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
      break;
  go = !r->cancel;
  pthread_mutex_unlock(&r->mu);
  return go;
}

/*
 * rdx_serve for the request's token, unless the connection has given the
 * request up (gw_req_cancel): then -ECANCELED, nothing touched.
 */
static int serve(struct run *w, size_t len, char *why, size_t whylen)
{
  struct gw_req *r = w->r;
  int rc;

  pthread_mutex_lock(&r->mu);
  if (r->cancel) {
    pthread_mutex_unlock(&r->mu);
    snprintf(why, whylen, "the client was answered or has left");
    return -ECANCELED;
  }
  r->serving = true;
  pthread_mutex_unlock(&r->mu);
  rc = rdx_serve(w->p->rdx, &r->token, &r->rdx, r->tok_off, r->chunk, len,
                 why, whylen);
  pthread_mutex_lock(&r->mu);
  r->serving = false;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return rc;
}

/* A token refused or failed: log one line (kind and reason, no token). */
static void token_fail(struct run *w, int rc, const char *why, bool midway)
{
  struct gw_req *r = w->r;
  int status;
  const char *code;

  gw_rdx_error(rc, &status, &code);
  if (rc == -ETIMEDOUT && expired(r)) {
    gw_stat_add(w->p->stats, token_expired, 1);
  } else if (rc == -ECANCELED) {
    /* the client left: counted once, by the connection */
  } else if (midway) {
    gw_stat_add(w->p->stats, token_failures, 1);
    if (status == 500)
      status = 502;
  } else {
    gw_stat_add(w->p->stats, refused, 1);
  }
  if (rc == -ECANCELED)
    log_info("token %s %s %s abandoned: %s", rdx_kind_name(r->token.kind),
             r->method, r->path, why);
  else
    log_warn("token %s %s %s %s: %s: %s", rdx_kind_name(r->token.kind),
             r->method, r->path, midway ? "failed" : "refused", strerror(-rc),
             why);
  set_error(r, status, code, why);
}

/* GET: the token's kind cannot be served: send the bytes over HTTP. */
static void fallback_http(struct run *w, const char *why)
{
  struct gw_req *r = w->r;

  gw_stat_add(w->p->stats, declined, 1);
  log_notice("token %s %s %s declined: %s", rdx_kind_name(r->token.kind),
             r->method, r->path, why);
  pthread_mutex_lock(&r->mu);
  r->mode = GW_MODE_HTTP;
  r->decline = true;
  set_ready_locked(r);
  pthread_mutex_unlock(&r->mu);
}

/* GET: move the chunk to the client. Returns 0 or -1 (transfer aborts). */
static int serve_chunk(struct run *w)
{
  struct gw_req *r = w->r;
  char why[256] = "";
  int rc;

  if (!r->chunk_fill)
    return 0;
  rc = serve(w, r->chunk_fill, why, sizeof(why));
  if (rc == -EOPNOTSUPP && r->tok_off == 0) {
    fallback_http(w, why);
    rc = gw_pipe_push(&r->down, r->chunk, r->chunk_fill);
    if (rc)
      return -1;
    gw_stat_add(w->p->stats, http_bytes_out, r->chunk_fill);
    r->chunk_fill = 0;
    return 0;
  }
  if (rc) {
    token_fail(w, rc, why, r->tok_off > 0);
    return -1;
  }
  r->tok_off += r->chunk_fill;
  gw_stat_add(w->p->stats, rdma_bytes_get, r->chunk_fill);
  r->chunk_fill = 0;
  return 0;
}

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
static int on_headers(struct run *w)
{
  struct gw_req *r = w->r;
  bool ok = r->status >= 200 && r->status < 300;
  char why[256] = "";
  int rc;

  if (r->status >= 500)
    gw_stat_add(w->p->stats, upstream_5xx, 1);
  if (r->tok == GW_TOK_NONE || r->decline || !ok) {
    pthread_mutex_lock(&r->mu);
    r->mode = GW_MODE_HTTP;
    set_ready_locked(r);
    pthread_mutex_unlock(&r->mu);
    return 0;
  }
  if (r->tok == GW_TOK_GET && !r->range_known) {
    if (r->resp_len <= 0) {
      fallback_http(w, "upstream sent no Content-Length");
      return 0;
    }
    r->rdx.len = (uint64_t)r->resp_len;
    rc = rdx_serve_check(w->p->rdx, &r->token, &r->rdx, why, sizeof(why));
    if (rc == -EOPNOTSUPP) {
      fallback_http(w, why);
      return 0;
    }
    if (rc) {
      token_fail(w, rc, why, false);
      return -1;
    }
  }
  r->mode = GW_MODE_RDMA; /* the HTTP side looks only once ready */
  return 0;
}

static size_t header_cb(char *buf, size_t size, size_t n, void *arg)
{
  struct run *w = arg;
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
    set_error(r, 502, "BadGateway", "upstream's headers are too large");
    return 0;
  }
  return len;
}

static size_t write_cb(char *buf, size_t size, size_t n, void *arg)
{
  struct run *w = arg;
  struct gw_req *r = w->r;
  size_t len = size * n, off = 0;

  if (r->mode == GW_MODE_ERROR)
    return 0;
  if (r->tok == GW_TOK_GET && r->mode == GW_MODE_RDMA) {
    while (off < len && r->mode == GW_MODE_RDMA) {
      size_t k = w->p->cfg->chunk_size - r->chunk_fill;
      if (k > len - off)
        k = len - off;
      if (r->tok_off + r->chunk_fill + k > r->rdx.len) {
        token_fail(w, -EIO, "upstream sent more than the range", true);
        return 0;
      }
      memcpy((char *)r->chunk + r->chunk_fill, buf + off, k);
      r->chunk_fill += k;
      off += k;
      if (r->chunk_fill == w->p->cfg->chunk_size && serve_chunk(w))
        return 0;
    }
    if (off == len)
      return len;
    /* declined at the first chunk: the rest goes over HTTP */
  }
  if (r->mode == GW_MODE_RDMA)
    return len; /* a token PUT's reply body: dropped */
  if (gw_pipe_push(&r->down, buf + off, len - off))
    return 0;
  gw_stat_add(w->p->stats, http_bytes_out, len - off);
  return len;
}

/* Token PUT: the next bytes come from the client's memory. */
static size_t read_tok(struct run *w, char *buf, size_t max)
{
  struct gw_req *r = w->r;
  char why[256] = "";
  int rc;

  if (w->chunk_pos == r->chunk_fill) {
    uint64_t left = r->rdx.len - r->tok_off;
    size_t k = w->p->cfg->chunk_size;
    if (left == 0)
      return 0;
    if (k > left)
      k = (size_t)left;
    rc = serve(w, k, why, sizeof(why));
    if (rc == -EOPNOTSUPP && r->tok_off == 0) {
      gw_stat_add(w->p->stats, declined, 1);
      log_notice("token %s %s %s declined: %s", rdx_kind_name(r->token.kind),
                 r->method, r->path, why);
      pthread_mutex_lock(&r->mu);
      r->decline = true;
      set_error_locked(r, 501, "NotImplemented", why);
      pthread_mutex_unlock(&r->mu);
      return CURL_READFUNC_ABORT;
    }
    if (rc) {
      token_fail(w, rc, why, r->tok_off > 0);
      return CURL_READFUNC_ABORT;
    }
    r->tok_off += k;
    gw_stat_add(w->p->stats, rdma_bytes_put, k);
    r->chunk_fill = k;
    w->chunk_pos = 0;
    if (r->tok_off == r->rdx.len && w->p->cfg->test_put_hold_ms &&
        !hold(r, w->p->cfg->test_put_hold_ms)) {
      w->stopped = "its client has gone";
      return CURL_READFUNC_ABORT; /* cut short upstream: not stored */
    }
  }
  size_t k = r->chunk_fill - w->chunk_pos;
  if (k > max)
    k = max;
  memcpy(buf, (char *)r->chunk + w->chunk_pos, k);
  w->chunk_pos += k;
  return k;
}

/* The client's body: exactly Content-Length bytes, never more. */
static size_t read_cb(char *buf, size_t size, size_t n, void *arg)
{
  struct run *w = arg;
  size_t max = size * n;
  long got;

  if (w->r->tok == GW_TOK_PUT)
    return read_tok(w, buf, max);
  if (w->up_left <= 0)
    return 0;
  if ((uint64_t)max > (uint64_t)w->up_left)
    max = (size_t)w->up_left;
  got = gw_pipe_pull(&w->r->up, buf, max);
  if (got < 0 || (got == 0 && w->up_left > 0))
    return CURL_READFUNC_ABORT; /* the client stopped short */
  w->up_left -= got;
  gw_stat_add(w->p->stats, http_bytes_in, got);
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
  struct run *w = arg;
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
  else if (r->mode != GW_MODE_HTTP && expired(r))
    w->stopped = "the token's deadline has passed";
  return w->stopped != NULL;
}

/* ---- forwarding ---------------------------------------------------------- */

/*
 * Does a client header go upstream? x-amz-* only when the client signed
 * it: we sign it upstream with our keys, so an unsigned one would be an
 * injection that the client's signature never covered.
 */
static bool forwarded(const struct gw_proxy *p, const struct gw_req *r,
                      const char *name)
{
  static const char *const plain[] = {
      "content-type", "content-md5", "content-encoding", "content-disposition",
      "content-language", "cache-control", "expires", "range", "if-match",
      "if-none-match", "if-modified-since", "if-unmodified-since", NULL};

  if (strcasecmp(name, p->cfg->token_header) == 0 ||
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

/* Headers for upstream, signed with the upstream keys. */
static int build_headers(struct gw_proxy *p, struct gw_req *r,
                         struct curl_slist **out)
{
  const char *payload = r->tok == GW_TOK_PUT
                            ? S3_UNSIGNED_PAYLOAD
                            : gw_header_get(r->hdrs, r->n_hdrs,
                                            "x-amz-content-sha256");
  struct s3_kv *sign = calloc(r->n_hdrs + 3, sizeof(*sign));
  struct s3_sigv4_input in = {0};
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
  sign[n++] = (struct s3_kv){"host", p->hostport};
  sign[n++] = (struct s3_kv){"x-amz-date", date};
  sign[n++] = (struct s3_kv){"x-amz-content-sha256", payload};
  for (size_t i = 0; i < r->n_hdrs; i++)
    if (forwarded(p, r, r->hdrs[i].key))
      sign[n++] = r->hdrs[i];
  in.method = r->method;
  in.path = r->path;
  in.query = r->query;
  in.headers = sign;
  in.n_headers = n;
  in.payload_hash = payload;
  in.amz_date = date;
  in.region = p->cfg->region ? p->cfg->region : r->region;
  in.service = "s3";
  in.access_key = p->cfg->up_access_key;
  in.secret_key = p->cfg->up_secret_key;
  rc = s3_sigv4_authorization(&in, &authz, NULL);
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
 * The upstream URL for r: the configured scheme, host and port, with the
 * client's path and query set as parts (libcurl's URL API), never pasted
 * into a string that libcurl would parse again. NULL: out of memory or a
 * part refused.
 */
static CURLU *build_url(struct gw_proxy *p, const struct gw_req *r)
{
  CURLU *u = curl_url_dup(p->base);

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

static void run_request(struct gw_proxy *p, CURL *c, struct gw_req *r)
{
  struct run w = {.p = p, .r = r, .up_left = r->has_up ? r->body_len : 0};
  struct curl_slist *hdrs = NULL;
  CURLU *url = build_url(p, r);
  char errbuf[CURL_ERROR_SIZE] = "";
  bool upload = r->tok == GW_TOK_PUT || r->body_len > 0 ||
                strcmp(r->method, "PUT") == 0 || strcmp(r->method, "POST") == 0;
  CURLcode cc;

  r->resp_len = -1;
  if (!url || build_headers(p, r, &hdrs)) {
    set_error(r, 500, "InternalError", "out of memory");
    goto out;
  }
  if (r->tok != GW_TOK_NONE) {
    if (p->cfg->test_token_delay_ms &&
        (!p->cfg->test_token_delay_n ||
         atomic_fetch_add(&p->delayed, 1) < p->cfg->test_token_delay_n) &&
        !hold(r, p->cfg->test_token_delay_ms)) {
      set_error(r, 400, "RequestTimeout", "the client has gone");
      goto out;
    }
    r->chunk = rdx_server_buf_alloc(p->rdx, p->cfg->chunk_size);
    if (!r->chunk) {
      set_error(r, 500, "InternalError", "out of memory");
      goto out;
    }
  }
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_CURLU, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)p->cfg->timeout_s);
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 128L * 1024);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &w);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &w);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  if (strcmp(r->method, "HEAD") == 0) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (upload) {
    curl_off_t len = r->tok == GW_TOK_PUT ? (curl_off_t)r->rdx.len
                     : r->body_len > 0    ? (curl_off_t)r->body_len
                                          : 0;
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, len);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &w);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 128L * 1024);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (strcmp(r->method, "GET") != 0)
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
  }

  cc = curl_easy_perform(c);
  if (r->has_up)
    gw_pipe_abort(&r->up, -EPIPE); /* the client's leftover body is dropped */
  if (cc == CURLE_OK && r->tok == GW_TOK_GET && r->mode == GW_MODE_RDMA &&
      serve_chunk(&w))
    cc = CURLE_WRITE_ERROR;
  pthread_mutex_lock(&r->mu);
  if (cc != CURLE_OK) {
    if (r->mode == GW_MODE_ERROR) {
      /* our callbacks failed it and said why */
    } else if (w.stopped) {
      gw_stat_add(p->stats, upstream_abandoned, 1);
      if (expired(r))
        gw_stat_add(p->stats, token_expired, 1);
      log_info("upstream %s %s abandoned: %s", r->method, r->path, w.stopped);
      if (r->ready && r->mode == GW_MODE_HTTP)
        gw_pipe_abort(&r->down, -EIO);
      else
        set_error_locked(r, 400, "RequestTimeout", w.stopped);
    } else if (r->ready && r->mode == GW_MODE_HTTP) {
      gw_stat_add(p->stats, upstream_errors, 1);
      log_warn("upstream %s %s broke off: %s", r->method, r->path,
               errbuf[0] ? errbuf : curl_easy_strerror(cc));
      gw_pipe_abort(&r->down, -EIO);
    } else {
      gw_stat_add(p->stats, upstream_errors, 1);
      log_warn("upstream %s %s failed: %s", r->method, r->path,
               errbuf[0] ? errbuf : curl_easy_strerror(cc));
      if (r->tok != GW_TOK_NONE && r->tok_off > 0)
        gw_stat_add(p->stats, token_failures, 1);
      set_error_locked(r, cc == CURLE_OPERATION_TIMEDOUT ? 504 : 502,
                       cc == CURLE_OPERATION_TIMEDOUT ? "GatewayTimeout"
                                                      : "BadGateway",
                       "upstream request failed");
    }
  } else if (!r->ready) {
    if (r->mode == GW_MODE_RDMA) {
      r->rdma_bytes = r->tok_off;
      gw_stat_add(p->stats, token_gets, r->tok == GW_TOK_GET);
      gw_stat_add(p->stats, token_puts, r->tok == GW_TOK_PUT);
    }
    set_ready_locked(r);
  }
  if (r->mode == GW_MODE_HTTP)
    gw_pipe_close(&r->down);
  pthread_mutex_unlock(&r->mu);
  log_debug("%s %s -> %ld (%s)", r->method, r->path, r->status,
            cc == CURLE_OK ? "ok" : curl_easy_strerror(cc));
out:
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
  curl_easy_setopt(c, CURLOPT_CURLU, NULL);
  curl_slist_free_all(hdrs);
  curl_url_cleanup(url);
  rdx_server_buf_free(p->rdx, r->chunk);
  r->chunk = NULL;
}

/* ---- the pool ------------------------------------------------------------ */

static void *worker_main(void *arg)
{
  struct gw_proxy *p = arg;
  CURL *c = curl_easy_init();

  for (;;) {
    struct gw_req *r;

    pthread_mutex_lock(&p->lock);
    while (!p->head && !p->stop)
      pthread_cond_wait(&p->cv, &p->lock);
    r = p->head;
    if (r) {
      p->head = r->next;
      if (!p->head)
        p->tail = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    if (!r)
      break;
    if (c)
      run_request(p, c, r);
    else
      set_error(r, 500, "InternalError", "no curl handle");
    if (r->mode == GW_MODE_HTTP)
      gw_pipe_close(&r->down);
    pthread_mutex_lock(&r->mu);
    if (!r->ready)
      set_ready_locked(r);
    r->done = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu); /* r may be freed from here on */
  }
  curl_easy_cleanup(c);
  return NULL;
}

void gw_proxy_submit(struct gw_proxy *p, struct gw_req *r)
{
  r->next = NULL;
  pthread_mutex_lock(&p->lock);
  if (p->tail)
    p->tail->next = r;
  else
    p->head = r;
  p->tail = r;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->lock);
}

/* --upstream: http(s)://host[:port][/], nothing else. */
static int parse_upstream(struct gw_proxy *p, const char *url, char *err,
                          size_t errlen)
{
  char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *x = NULL;
  int rc = -EINVAL;

  p->base = curl_url();
  if (!p->base)
    return -ENOMEM;
  if (curl_url_set(p->base, CURLUPART_URL, url, 0) != CURLUE_OK ||
      curl_url_get(p->base, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
      (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
      curl_url_get(p->base, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
      curl_url_get(p->base, CURLUPART_PATH, &path, 0) != CURLUE_OK ||
      strcmp(path, "/") != 0 ||
      curl_url_get(p->base, CURLUPART_USER, &x, 0) != CURLUE_NO_USER ||
      curl_url_get(p->base, CURLUPART_QUERY, &x, 0) != CURLUE_NO_QUERY ||
      curl_url_get(p->base, CURLUPART_FRAGMENT, &x, 0) != CURLUE_NO_FRAGMENT ||
      strchr(url + strlen(scheme) + 3, '@'))
    goto bad;
  if (curl_url_get(p->base, CURLUPART_PORT, &port, 0) == CURLUE_OK)
    rc = snprintf(p->hostport, sizeof(p->hostport), "%s:%s", host, port);
  else
    rc = snprintf(p->hostport, sizeof(p->hostport), "%s", host);
  rc = rc > 0 && (size_t)rc < sizeof(p->hostport) ? 0 : -EINVAL;
  if (rc == 0)
    goto out;
bad:
  snprintf(err, errlen,
           "--upstream: '%s' is not http(s)://host[:port] (path-style, no path)",
           url);
  rc = -EINVAL;
  curl_url_cleanup(p->base);
  p->base = NULL;
out:
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(path);
  curl_free(x);
  return rc;
}

int gw_proxy_create(const struct gw_config *cfg, struct gw_stats *stats,
                    struct rdx_server *rdx, struct gw_proxy **out, char *err,
                    size_t errlen)
{
  struct gw_proxy *p = calloc(1, sizeof(*p));
  int rc;

  *out = NULL;
  if (!p)
    return -ENOMEM;
  p->cfg = cfg;
  p->stats = stats;
  p->rdx = rdx;
  rc = parse_upstream(p, cfg->upstream, err, errlen);
  if (rc)
    goto free_p;
  p->th = calloc(cfg->threads, sizeof(*p->th));
  if (!p->th) {
    rc = -ENOMEM;
    goto free_base;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cv, NULL);
  for (; p->n_th < cfg->threads; p->n_th++) {
    rc = -pthread_create(&p->th[p->n_th], NULL, worker_main, p);
    if (rc) {
      snprintf(err, errlen, "cannot start worker threads: %s", strerror(-rc));
      goto stop_threads;
    }
  }
  *out = p;
  return 0;

stop_threads:
  gw_proxy_destroy(p); /* joins the workers started so far */
  return rc;
free_base:
  curl_url_cleanup(p->base);
free_p:
  free(p);
  return rc;
}

void gw_proxy_destroy(struct gw_proxy *p)
{
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  p->stop = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->lock);
  for (unsigned i = 0; i < p->n_th; i++)
    pthread_join(p->th[i], NULL);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cv);
  free(p->th);
  curl_url_cleanup(p->base);
  free(p);
}
