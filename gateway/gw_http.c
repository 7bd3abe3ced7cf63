/*
 * gw_http: the client side of s3rdma-gateway over libmicrohttpd.
 *
 * DESIGN (threads): MHD_USE_THREAD_PER_CONNECTION: each client connection
 * has its own MHD thread (at most --max-conns), on which every callback
 * for its requests runs, and which may therefore block. Upstream transfers
 * run on gw_proxy's fixed worker pool (--threads). Per request:
 *  - uri_cb allocates the request context (struct creq) with the raw URI
 *    (MHD decodes the URL it hands the access handler; SigV4 needs it as
 *    sent);
 *  - the first access call verifies SigV4 and the token, answers errors at
 *    once (MHD then sends no 100 Continue), else submits the request to the
 *    pool;
 *  - upload-data calls push the body into the request's up pipe (blocking
 *    while the worker has not taken it: bounded memory);
 *  - the final call waits until the worker says ready, looking at the
 *    client's socket every GONE_POLL_MS meanwhile (a client that closed it
 *    has its request abandoned: gw_req_cancel, then the connection is
 *    dropped), then queues the answer: for HTTP mode a response whose
 *    reader pulls the body from the down pipe (blocking), for a token
 *    request an empty body;
 *  - completed_cb aborts both pipes, waits until the worker is done with
 *    the request, and frees it.
 * The connection thread and the worker share a request as gw_proxy.h says.
 * Nothing else is shared but the atomic stats and the per-address limits
 * (gw_limits, its own lock): MHD's accept policy and connection
 * notifications (its listening thread and connection threads) count
 * connections, start() and completed_cb upload slots.
 *
 * Strangers: until a request's SigV4 is verified its connection may idle
 * only --auth-timeout seconds (then --timeout); its request-target, header
 * count and sizes and framing are checked before the signature is.
 */
#include "gateway/gw_http.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "common/slog.h"
#include "gateway/gw_auth.h"
#include "gateway/gw_limits.h"
#include "gateway/gw_parse.h"
#include "gateway/gw_peer.h"

#define MAX_HEADERS 128
#define STATS_PATH "/_s3rdma/stats"
#define EXPIRES_HEADER "x-amz-rdma-expires"
/* How often a connection waiting for the worker looks for its client. */
#define GONE_POLL_MS 200

struct gw_http {
  const struct gw_config *cfg;
  struct gw_stats *stats;
  struct gw_proxy *proxy;
  struct rdx_server *rdx;
  struct gw_limits *limits;
  struct MHD_Daemon *d;
  int fd;
  unsigned port;
  bool listen_local;
};

/* One request: the proxy's part and the connection thread's. */
struct creq {
  struct gw_req r;
  struct gw_http *h;
  char *uri;
  int phase;          /* 0: headers next, 1: body/final next, 2: answered */
  bool sync_init;     /* r.mu, r.cv and the pipes initialised */
  bool submitted;
  bool up_failed;     /* the worker stopped taking the body: drop it */
  bool hdr_oom;       /* a header could not be copied: refuse */
  bool hdr_big;       /* a header value over GW_HEADER_VALUE_MAX: refuse */
  struct sockaddr_storage upload_from; /* the address holding an upload
                                          slot (ss_family 0: none) */
};

/* ---- answers ------------------------------------------------------------- */

static enum MHD_Result queue(struct MHD_Connection *con, unsigned status,
                             struct MHD_Response *resp)
{
  enum MHD_Result ret;

  if (!resp)
    return MHD_NO;
  ret = MHD_queue_response(con, status, resp);
  MHD_destroy_response(resp);
  return ret;
}

/* s with XML's five special characters escaped (malloc'd; NULL: ENOMEM). */
static char *xml_escape(const char *s)
{
  char *o = malloc(6 * strlen(s) + 1), *p = o;

  if (!o)
    return NULL;
  for (; *s; s++) {
    switch (*s) {
    case '<': p = stpcpy(p, "&lt;"); break;
    case '>': p = stpcpy(p, "&gt;"); break;
    case '&': p = stpcpy(p, "&amp;"); break;
    case '"': p = stpcpy(p, "&quot;"); break;
    case '\'': p = stpcpy(p, "&apos;"); break;
    default: *p++ = *s;
    }
  }
  *p = '\0';
  return o;
}

static enum MHD_Result answer_error(struct creq *q, struct MHD_Connection *con,
                                    int status, const char *code,
                                    const char *msg, bool rdma_501)
{
  struct MHD_Response *resp;
  char *xml = NULL, *emsg = xml_escape(msg);
  char *epath = xml_escape(q->r.path ? q->r.path : "");
  int n = -1;

  if (emsg && epath)
    n = asprintf(&xml,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<Error><Code>%s</Code><Message>%s</Message>"
                 "<Resource>%s</Resource></Error>\n",
                 code, emsg, epath);
  free(emsg);
  free(epath);
  if (n < 0)
    return MHD_NO;
  resp = MHD_create_response_from_buffer((size_t)n, xml,
                                         MHD_RESPMEM_MUST_FREE);
  if (!resp) {
    free(xml);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type", "application/xml");
  if (rdma_501)
    MHD_add_response_header(resp, "x-amz-rdma-reply", "501");
  q->phase = 2;
  return queue(con, (unsigned)status, resp);
}

static bool hop_by_hop(const char *line)
{
  static const char *const skip[] = {"content-length:", "transfer-encoding:",
                                     "connection:", "keep-alive:", "date:",
                                     NULL};
  for (int i = 0; skip[i]; i++)
    if (strncasecmp(line, skip[i], strlen(skip[i])) == 0)
      return true;
  return false;
}

/*
 * Upstream's headers onto resp ("Name: value" lines), but for hop-by-hop
 * ones and any x-amz-rdma-* or token header: only the gateway speaks for
 * its own transfers (an upstream that claims one would mislead the client).
 */
static void copy_headers(struct MHD_Response *resp, const struct gw_req *r,
                         const char *token_header)
{
  size_t tl = strlen(token_header);

  for (size_t i = 0; i < r->n_resp_hdrs; i++) {
    char *line = r->resp_hdrs[i], *colon = strchr(line, ':');
    const char *v;
    if (!colon || hop_by_hop(line) ||
        strncasecmp(line, "x-amz-rdma-", 11) == 0 ||
        ((size_t)(colon - line) == tl && strncasecmp(line, token_header, tl) == 0))
      continue;
    *colon = '\0';
    v = colon + 1;
    while (*v == ' ' || *v == '\t')
      v++;
    MHD_add_response_header(resp, line, v);
    *colon = ':';
  }
}

static ssize_t reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct creq *q = cls;
  long n = gw_pipe_pull(&q->r.down, buf, max);

  (void)pos;
  if (n > 0)
    return n;
  return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                : MHD_CONTENT_READER_END_WITH_ERROR;
}

/*
 * Has the client closed its connection (or shut down its sending side)?
 * Asked while its request waits for the worker: this thread owns the
 * connection then, and MHD reads nothing until the access call returns.
 */
static bool client_gone(struct MHD_Connection *con)
{
  const union MHD_ConnectionInfo *cf =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
  struct pollfd p;

  if (!cf)
    return false;
  p = (struct pollfd){.fd = cf->connect_fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Wait until the worker is ready (0), watching the client: -ETIMEDOUT
 * after --timeout (for a token request, after its deadline if later: the
 * worker stops there itself), -ECONNRESET when the client has gone.
 */
static int wait_ready(struct creq *q, struct MHD_Connection *con)
{
  struct gw_req *r = &q->r;
  uint64_t left = (uint64_t)q->h->cfg->timeout_s * 1000, now, step;
  struct timespec ts;

  if (r->rdx.expires_ms) {
    clock_gettime(CLOCK_REALTIME, &ts);
    now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (r->rdx.expires_ms > now && r->rdx.expires_ms - now + 1000 > left)
      left = r->rdx.expires_ms - now + 1000;
  }
  for (;;) {
    if (client_gone(con))
      return -ECONNRESET;
    step = left < GONE_POLL_MS ? left : GONE_POLL_MS;
    if (gw_req_wait_ready(r, (unsigned)step) == 0)
      return 0;
    left -= step;
    if (!left)
      return -ETIMEDOUT;
  }
}

/* The final access call: the worker's answer. */
static enum MHD_Result answer(struct creq *q, struct MHD_Connection *con)
{
  struct gw_req *r = &q->r;
  struct MHD_Response *resp;
  char num[32];
  int rc;

  q->phase = 2;
  rc = wait_ready(q, con);
  if (rc == -ECONNRESET) {
    /* nobody waits for this answer: stop the transfer (its memory is not
       touched again) and the upstream request (a PUT is not stored) */
    gw_stat_add(q->h->stats, clients_gone, 1);
    log_info("%s %s: the client has gone: abandoned", r->method, r->path);
    gw_req_cancel(r);
    return MHD_NO;
  }
  if (rc) {
    gw_req_cancel(r); /* a token's memory is not touched after our answer */
    return answer_error(q, con, 504, "GatewayTimeout",
                        "upstream did not answer in time", false);
  }
  /* ready: the worker no longer writes what is read below */
  if (r->mode == GW_MODE_ERROR)
    return answer_error(q, con, r->err_status, r->err_code, r->err_msg,
                        r->decline);
  if (r->mode == GW_MODE_RDMA) {
    unsigned reply = r->tok == GW_TOK_GET ? (unsigned)r->status
                     : r->upload_part     ? 206
                                          : 200;
    resp = MHD_create_response_from_buffer(0, (void *)"",
                                           MHD_RESPMEM_PERSISTENT);
    if (!resp)
      return MHD_NO;
    copy_headers(resp, r, q->h->cfg->token_header);
    snprintf(num, sizeof(num), "%u", reply);
    MHD_add_response_header(resp, "x-amz-rdma-reply", num);
    snprintf(num, sizeof(num), "%" PRIu64, r->rdma_bytes);
    MHD_add_response_header(resp, "x-amz-rdma-bytes-transferred", num);
    return queue(con, (unsigned)r->status, resp);
  }
  if (r->status == 204 || r->status == 304 ||
      (r->resp_len == 0 && strcmp(r->method, "HEAD") != 0))
    resp = MHD_create_response_from_buffer(0, (void *)"",
                                           MHD_RESPMEM_PERSISTENT);
  else
    resp = MHD_create_response_from_callback(
        r->resp_len >= 0 ? (uint64_t)r->resp_len : MHD_SIZE_UNKNOWN,
        64 * 1024, reader_cb, q, NULL);
  if (!resp)
    return MHD_NO;
  copy_headers(resp, r, q->h->cfg->token_header);
  if (r->decline)
    MHD_add_response_header(resp, "x-amz-rdma-reply", "501");
  return queue(con, (unsigned)r->status, resp);
}

/* ---- the first call ------------------------------------------------------ */

static enum MHD_Result header_iter(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value)
{
  struct creq *q = cls;
  struct s3_kv *kv;

  (void)kind;
  if (q->r.n_hdrs >= MAX_HEADERS)
    return MHD_NO;
  if (strlen(key) > GW_HEADER_VALUE_MAX ||
      (value && strlen(value) > GW_HEADER_VALUE_MAX)) {
    q->hdr_big = true;
    return MHD_NO;
  }
  kv = &q->r.hdrs[q->r.n_hdrs];
  kv->key = strdup(key);
  kv->val = strdup(value ? value : "");
  if (!kv->key || !kv->val) {
    free((char *)kv->key);
    free((char *)kv->val);
    kv->key = kv->val = NULL;
    q->hdr_oom = true; /* refused, not verified with a header missing */
    return MHD_NO;
  }
  q->r.n_hdrs++;
  return MHD_YES;
}

static const char *hdr(const struct creq *q, const char *name)
{
  return gw_header_get(q->r.hdrs, q->r.n_hdrs, name);
}

/* How often a header of this name came (case-insensitive). */
static unsigned hdr_count(const struct creq *q, const char *name)
{
  unsigned n = 0;

  for (size_t i = 0; i < q->r.n_hdrs; i++)
    n += strcasecmp(q->r.hdrs[i].key, name) == 0;
  return n;
}

/* "bytes=A-B" -> its length; 0 when not of that form. */
static uint64_t range_len(const char *v)
{
  uint64_t off, len;

  return gw_range_parse(v, &off, &len) ? 0 : len;
}

static enum MHD_Result answer_stats(struct creq *q, struct MHD_Connection *con)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  struct MHD_Response *resp;
  char buf[2048];
  size_t n;

  if (!ci || !gw_addr_is_loopback(ci->client_addr))
    return answer_error(q, con, 403, "AccessDenied",
                        "stats are for loopback peers only", false);
  n = gw_stats_format(q->h->stats, buf, sizeof(buf));
  resp = MHD_create_response_from_buffer(n, buf, MHD_RESPMEM_MUST_COPY);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", "text/plain");
  q->phase = 2;
  return queue(con, 200, resp);
}

/* Who sent it (for cma tokens). */
static void peer_identity(struct creq *q, struct MHD_Connection *con)
{
  const union MHD_ConnectionInfo *ca =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const union MHD_ConnectionInfo *cf =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
  struct sockaddr_storage local;
  socklen_t sl = sizeof(local);
  struct passwd pw, *pwp = NULL;
  char pwbuf[4096];

  q->r.rdx.peer_local = false;
  q->r.rdx.peer_uid = q->r.rdx.peer_gid = -1;
  if (!ca || !cf || !q->h->listen_local || !gw_addr_is_loopback(ca->client_addr))
    return;
  q->r.rdx.peer_local = true;
  if (getsockname(cf->connect_fd, (struct sockaddr *)&local, &sl) == 0)
    q->r.rdx.peer_uid = gw_peer_uid((struct sockaddr *)&local, ca->client_addr);
  /* TCP tells the socket's owner, not its group: the user's primary group
     (a process of that user running with another gid is refused by the
     kernel's check, which compares gids too) */
  if (q->r.rdx.peer_uid >= 0 &&
      getpwuid_r((uid_t)q->r.rdx.peer_uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 &&
      pwp)
    q->r.rdx.peer_gid = pwp->pw_gid;
}

static enum MHD_Result refuse_token(struct creq *q, struct MHD_Connection *con,
                                    int rc, const char *why)
{
  int status;
  const char *code;

  gw_rdx_error(rc, &status, &code);
  gw_stat_add(q->h->stats, refused, 1);
  log_warn("token %s %s %s refused: %s: %s", rdx_kind_name(q->r.token.kind),
           q->r.method, q->r.path, strerror(-rc), why);
  return answer_error(q, con, status, code, why, false);
}

/*
 * Decline the token (x-amz-rdma-reply: 501): a GET goes on over HTTP, a
 * PUT is answered 501 at once (the client sends it again with its body).
 */
static enum MHD_Result decline(struct creq *q, struct MHD_Connection *con,
                               bool get, const char *why)
{
  gw_stat_add(q->h->stats, declined, 1);
  log_notice("token %s %s %s declined: %s", rdx_kind_name(q->r.token.kind),
             q->r.method, q->r.path, why);
  if (!get)
    return answer_error(q, con, 501, "NotImplemented", why, true);
  q->r.decline = true;
  return MHD_YES;
}

/*
 * The client's deadline for its token (x-amz-rdma-expires: CLOCK_REALTIME
 * in ms, decimal) into r->rdx.expires_ms. It must be signed: a later one
 * slipped in would have the client's memory touched after the client took
 * it back. Returns 0 (phase 2 when refused, the refusal queued) or -1 when
 * the refusal could not be queued.
 */
static int expires(struct creq *q, struct MHD_Connection *con)
{
  struct gw_req *r = &q->r;
  const char *v = hdr(q, EXPIRES_HEADER);
  struct timespec ts;
  uint64_t now;

  if (!v)
    return 0;
  errno = 0;
  if (!gw_auth_signed(r->hdrs, r->n_hdrs, EXPIRES_HEADER) ||
      hdr_count(q, EXPIRES_HEADER) != 1 ||
      strspn(v, "0123456789") != strlen(v) ||
      !v[0] || strlen(v) > 19 ||
      (r->rdx.expires_ms = strtoull(v, NULL, 10)) == 0 || errno)
    return refuse_token(q, con, -EINVAL,
                        EXPIRES_HEADER " is not one signed count of "
                        "milliseconds") == MHD_YES ? 0 : -1;
  clock_gettime(CLOCK_REALTIME, &ts);
  now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
  if (now >= r->rdx.expires_ms) {
    gw_stat_add(q->h->stats, token_expired, 1);
    log_info("token %s %s %s: its deadline passed before it was served",
             rdx_kind_name(r->token.kind), r->method, r->path);
    return answer_error(q, con, 400, "RequestTimeout",
                        "the token's deadline (" EXPIRES_HEADER
                        ") has passed", false) == MHD_YES ? 0 : -1;
  }
  return 0;
}

/*
 * A token request: returns MHD_YES with q->r.tok (or q->r.decline) set to
 * go on, or the queued refusal (phase 2).
 */
static enum MHD_Result setup_token(struct creq *q, struct MHD_Connection *con,
                                   const char *tokv)
{
  struct gw_req *r = &q->r;
  bool get = strcmp(r->method, "GET") == 0;
  char why[256] = "";
  int rc;

  if (!get && (strcmp(r->method, "PUT") != 0 ||
               gw_auth_signed(r->hdrs, r->n_hdrs, "x-amz-copy-source")))
    return MHD_YES; /* no payload to move: the token is ignored (stripped) */
  if (rdx_token_parse(tokv, strlen(tokv), &r->token))
    return refuse_token(q, con, -EINVAL, "malformed RDMA token");
  if (r->body_len > 0)
    return refuse_token(q, con, -EINVAL, "a token request carries no body");
  if (q->h->cfg->serve_none)
    snprintf(why, sizeof(why), "this gateway serves no tokens (--serve none)");
  if (q->h->cfg->serve_none ||
      rdx_server_serves(q->h->rdx, r->token.kind, why, sizeof(why))) {
    return decline(q, con, get, why);
  }
  rc = expires(q, con);
  if (rc || q->phase == 2)
    return rc ? MHD_NO : MHD_YES;
  peer_identity(q, con);
  if (r->token.kind == RDX_CMA && r->rdx.peer_local &&
      (r->rdx.peer_uid < 0 || r->rdx.peer_gid < 0)) {
    if (client_gone(con)) {
      /* its socket is no longer a full one (it closed before we asked):
         nobody waits for an answer, and nothing was moved */
      gw_stat_add(q->h->stats, clients_gone, 1);
      log_info("%s %s: the client has gone before it was served", r->method,
               r->path);
      return MHD_NO;
    }
    /* fail closed: without the asker's uid any local user could name any
       process (rdx_server.h) */
    return refuse_token(q, con, -EACCES,
                        "cannot tell which user sent the request");
  }
  if (get) {
    r->rdx.op = RDX_GET;
    r->rdx.len = range_len(hdr(q, "range"));
    r->range_known = r->rdx.len > 0;
    r->tok = GW_TOK_GET;
    if (!r->range_known)
      return MHD_YES; /* checked once upstream's length is known */
  } else {
    const char *dec = hdr(q, "x-amz-decoded-content-length");
    if (dec && (strspn(dec, "0123456789") != strlen(dec) || !dec[0] ||
                strtoull(dec, NULL, 10) != r->token.len))
      return refuse_token(q, con, -EINVAL,
                          "x-amz-decoded-content-length differs from the token");
    r->rdx.op = RDX_PUT;
    r->rdx.len = r->token.len;
    r->tok = GW_TOK_PUT;
    r->upload_part = strstr(r->query, "partNumber=") &&
                     strstr(r->query, "uploadId=");
    if (r->rdx.len > q->h->cfg->max_put)
      return answer_error(q, con, 400, "EntityTooLarge",
                          "larger than the largest single PUT", false);
  }
  rc = rdx_serve_check(q->h->rdx, &r->token, &r->rdx, why, sizeof(why));
  if (rc == -EOPNOTSUPP) {
    r->tok = GW_TOK_NONE;
    return decline(q, con, get, why);
  }
  if (rc)
    return refuse_token(q, con, rc, why);
  return MHD_YES;
}

/* An IPv4 or IPv6 client address into d (anything else: family 0). */
static void copy_addr(struct sockaddr_storage *d, const struct sockaddr *a)
{
  memset(d, 0, sizeof(*d));
  if (a->sa_family == AF_INET)
    memcpy(d, a, sizeof(struct sockaddr_in));
  else if (a->sa_family == AF_INET6)
    memcpy(d, a, sizeof(struct sockaddr_in6));
}

/* A malformed request: 400, counted, one log line (the rule only: the
   target or headers may hold anything, control characters included). */
static enum MHD_Result refuse_request(struct creq *q, struct MHD_Connection *con,
                                      const char *code, const char *why)
{
  gw_stat_add(q->h->stats, bad_requests, 1);
  log_info("request refused: %s: %s", code, why);
  return answer_error(q, con, 400, code, why, false);
}

static enum MHD_Result start(struct creq *q, struct MHD_Connection *con,
                             const char *method)
{
  struct gw_http *h = q->h;
  struct gw_req *r = &q->r;
  struct gw_auth_keys keys = {h->cfg->access_key, h->cfg->secret_key};
  struct gw_auth_result res;
  struct gw_auth_req ar;
  const char *v, *tokv;
  char why[128];
  bool chunked;
  enum MHD_Result ret;

  r->method = strdup(method);
  r->hdrs = calloc(MAX_HEADERS, sizeof(*r->hdrs));
  if (!r->method || !r->hdrs)
    return MHD_NO;
  /* only origin-form targets: anything else would make the upstream URL
     point elsewhere (a target "@host:port/..." as userinfo, say) */
  if (gw_target_check(q->uri, why, sizeof(why)))
    return refuse_request(q, con, "InvalidURI", why);
  if (gw_target_split(q->uri, &r->path, &r->query))
    return MHD_NO;
  if (strcmp(r->path, STATS_PATH) == 0 && strcmp(method, "GET") == 0)
    return answer_stats(q, con);
  if (MHD_get_connection_values(con, MHD_HEADER_KIND, header_iter, q) < 0 ||
      q->hdr_oom)
    return MHD_NO; /* out of memory: drop the connection */
  if (q->hdr_big)
    return refuse_request(q, con, "InvalidRequest", "a header is too large");
  if (r->n_hdrs >= MAX_HEADERS)
    return refuse_request(q, con, "InvalidRequest", "too many headers");
  /* one framing only, so that what upstream gets is what was verified */
  if (gw_framing_check(hdr(q, "content-length"),
                       hdr_count(q, "content-length"),
                       hdr(q, "transfer-encoding"),
                       hdr_count(q, "transfer-encoding"), &r->body_len,
                       &chunked, why, sizeof(why)))
    return refuse_request(q, con, "InvalidRequest", why);
  if (chunked)
    return answer_error(q, con, 411, "MissingContentLength",
                        "chunked request bodies are not supported", false);

  ar = (struct gw_auth_req){r->method, r->path, r->query, r->hdrs, r->n_hdrs,
                            h->cfg->token_header, NULL};
  if (r->body_len <= 0)
    ar.default_payload = S3_EMPTY_SHA256; /* curl's --aws-sigv4 sends none */
  if (gw_auth_verify(&keys, &ar, time(NULL), &res)) {
    gw_stat_add(h->stats, auth_failures, 1);
    log_info("%s %s: %s %s: %s", r->method, r->path, res.code, "refused",
             res.why);
    return answer_error(q, con, res.status, res.code, res.why, false);
  }
  snprintf(r->region, sizeof(r->region), "%s", res.region);
  /* verified: the connection may now idle as long as any request */
  MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT,
                            h->cfg->timeout_s);

  v = hdr(q, "x-amz-content-sha256");
  if (v && strncmp(v, "STREAMING-", 10) == 0)
    return answer_error(q, con, 501, "NotImplemented",
                        "aws-chunked (streaming) payloads are not supported",
                        false);
  if (strcmp(method, "PUT") == 0 && r->body_len > 0 &&
      (uint64_t)r->body_len > h->cfg->max_put)
    return answer_error(q, con, 400, "EntityTooLarge",
                        "larger than the largest single PUT", false);

  tokv = hdr(q, h->cfg->token_header);
  if (tokv) {
    ret = setup_token(q, con, tokv);
    if (q->phase == 2)
      return ret;
  }

  if (r->body_len > 0 && r->tok == GW_TOK_NONE) {
    /* a body holds an upstream worker while it arrives: a share each */
    const union MHD_ConnectionInfo *ca =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ca || !gw_limits_upload_take(h->limits, ca->client_addr)) {
      gw_stat_add(h->stats, slowdowns, 1);
      return answer_error(q, con, 503, "SlowDown",
                          "too many uploads from this address at once", false);
    }
    copy_addr(&q->upload_from, ca->client_addr);
  }

  pthread_mutex_init(&r->mu, NULL);
  {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
  }
  q->sync_init = true;
  if (gw_pipe_init(&r->down, h->cfg->pipe_size, h->cfg->timeout_s))
    return MHD_NO;
  r->has_up = r->body_len > 0 && r->tok == GW_TOK_NONE;
  if (gw_pipe_init(&r->up, r->has_up ? h->cfg->pipe_size : 1,
                   h->cfg->timeout_s))
    return MHD_NO;
  q->submitted = true;
  gw_proxy_submit(h->proxy, r);
  return MHD_YES;
}

/* ---- MHD callbacks ------------------------------------------------------- */

static void *uri_cb(void *cls, const char *uri, struct MHD_Connection *con)
{
  struct creq *q = calloc(1, sizeof(*q));

  (void)con;
  if (q) {
    q->h = cls;
    q->uri = strdup(uri ? uri : "/");
  }
  return q;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *con,
                                 const char *url, const char *method,
                                 const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
  struct creq *q = *con_cls;

  (void)cls;
  (void)url;
  (void)version;
  if (!q || !q->uri)
    return MHD_NO;
  if (q->phase == 0) {
    q->phase = 1;
    return start(q, con, method);
  }
  if (*upload_data_size) {
    if (q->phase == 1 && q->r.has_up && !q->up_failed &&
        gw_pipe_push(&q->r.up, upload_data, *upload_data_size))
      q->up_failed = true;
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (q->phase != 1)
    return MHD_YES;
  if (q->r.has_up)
    gw_pipe_close(&q->r.up);
  return answer(q, con);
}

static void completed_cb(void *cls, struct MHD_Connection *con, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct gw_http *h = cls;
  struct creq *q = *con_cls;
  struct gw_req *r;

  (void)con;
  if (!q)
    return;
  r = &q->r;
  gw_stat_add(h->stats, requests, 1);
  if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
    log_debug("%s %s: connection ended early (%d)",
              r->method ? r->method : "?", r->path ? r->path : "?", (int)toe);
  if (q->submitted) {
    gw_req_cancel(r); /* the client may have gone: leave its memory alone */
    gw_pipe_abort(&r->up, -ECONNRESET);
    gw_pipe_abort(&r->down, -ECONNRESET);
    gw_req_wait_done(r);
  }
  if (q->upload_from.ss_family)
    gw_limits_upload_done(h->limits, (struct sockaddr *)&q->upload_from);
  if (q->sync_init) {
    gw_pipe_cleanup(&r->up);
    gw_pipe_cleanup(&r->down);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
  }
  for (size_t i = 0; i < r->n_resp_hdrs; i++)
    free(r->resp_hdrs[i]);
  free(r->resp_hdrs);
  for (size_t i = 0; i < r->n_hdrs; i++) {
    free((char *)r->hdrs[i].key);
    free((char *)r->hdrs[i].val);
  }
  free(r->hdrs);
  free(r->method);
  free(r->path);
  free(r->query);
  free(q->uri);
  free(q);
  *con_cls = NULL;
}

/* Refuse a connection from an address that holds its share already. */
static enum MHD_Result accept_cb(void *cls, const struct sockaddr *addr,
                                 socklen_t addrlen)
{
  struct gw_http *h = cls;

  (void)addrlen;
  if (gw_limits_conn_ok(h->limits, addr))
    return MHD_YES;
  gw_stat_add(h->stats, refused_conns, 1);
  return MHD_NO;
}

/* Count connections per address (socket_context: the address's copy). */
static void conn_cb(void *cls, struct MHD_Connection *con, void **socket_ctx,
                    enum MHD_ConnectionNotificationCode toe)
{
  struct gw_http *h = cls;
  const union MHD_ConnectionInfo *ca;
  struct sockaddr_storage *a;

  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    ca = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    a = ca ? calloc(1, sizeof(*a)) : NULL;
    if (!a)
      return;
    copy_addr(a, ca->client_addr);
    gw_limits_conn_open(h->limits, (struct sockaddr *)a);
    *socket_ctx = a;
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_ctx) {
    gw_limits_conn_close(h->limits, (struct sockaddr *)*socket_ctx);
    free(*socket_ctx);
    *socket_ctx = NULL;
  }
}

static void __attribute__((format(printf, 2, 0)))
mhd_log(void *cls, const char *fmt, va_list ap)
{
  char buf[512];
  size_t n;

  (void)cls;
  vsnprintf(buf, sizeof(buf), fmt, ap);
  n = strlen(buf);
  while (n && buf[n - 1] == '\n')
    buf[--n] = '\0';
  log_info("microhttpd: %s", buf);
}

/* ---- start and stop ------------------------------------------------------ */

static int bind_listen(struct gw_http *h, const char *spec, char *err,
                       size_t errlen)
{
  char host[256];
  const char *port, *colon = strrchr(spec, ':');
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  int one = 1, rc, family;

  if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host))
    goto bad;
  memcpy(host, spec, (size_t)(colon - spec));
  host[colon - spec] = '\0';
  port = colon + 1;
  if (host[0] == '[') {
    size_t n = strlen(host);
    if (n < 3 || host[n - 1] != ']')
      goto bad;
    memmove(host, host + 1, n - 2);
    host[n - 2] = '\0';
  }
  if (!port[0] || strspn(port, "0123456789") != strlen(port) ||
      getaddrinfo(host, port, &hints, &ai) || !ai)
    goto bad;
  h->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (h->fd < 0) {
    rc = -errno;
    goto fail;
  }
  setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(h->fd, ai->ai_addr, ai->ai_addrlen) || listen(h->fd, 128)) {
    rc = -errno;
    close(h->fd);
    h->fd = -1;
    goto fail;
  }
  h->listen_local = gw_addr_is_loopback(ai->ai_addr);
  if (getsockname(h->fd, (struct sockaddr *)&ss, &sl) == 0)
    h->port = ntohs(ss.ss_family == AF_INET
                        ? ((struct sockaddr_in *)&ss)->sin_port
                        : ((struct sockaddr_in6 *)&ss)->sin6_port);
  family = ai->ai_family;
  freeaddrinfo(ai);
  return family == AF_INET6 ? 6 : 4;
fail:
  snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(-rc));
  freeaddrinfo(ai);
  return rc;
bad:
  if (ai)
    freeaddrinfo(ai);
  snprintf(err, errlen, "--listen: '%s' is not ADDRESS:PORT (numeric)", spec);
  return -EINVAL;
}

int gw_http_start(const struct gw_config *cfg, struct gw_stats *stats,
                  struct gw_proxy *proxy, struct rdx_server *rdx,
                  struct gw_http **out, char *err, size_t errlen)
{
  struct gw_http *h = calloc(1, sizeof(*h));
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  int rc;

  *out = NULL;
  if (!h)
    return -ENOMEM;
  h->cfg = cfg;
  h->stats = stats;
  h->proxy = proxy;
  h->rdx = rdx;
  h->fd = -1;
  h->limits = gw_limits_create(cfg->conns_per_addr, cfg->uploads_per_addr);
  if (!h->limits) {
    rc = -ENOMEM;
    goto free_h;
  }
  rc = bind_listen(h, cfg->listen, err, errlen);
  if (rc < 0)
    goto destroy_limits;
  if (rc == 6)
    flags |= MHD_USE_IPv6;
  h->d = MHD_start_daemon(
      flags, 0, accept_cb, h, access_cb, h, MHD_OPTION_EXTERNAL_LOGGER,
      mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, h->fd,
      MHD_OPTION_CONNECTION_LIMIT, cfg->max_conns,
      /* short until a request is verified (start raises it) */
      MHD_OPTION_CONNECTION_TIMEOUT, cfg->auth_timeout_s,
      MHD_OPTION_NOTIFY_CONNECTION, conn_cb, h,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
      MHD_OPTION_URI_LOG_CALLBACK, uri_cb, h, MHD_OPTION_NOTIFY_COMPLETED,
      completed_cb, h, MHD_OPTION_END);
  if (!h->d) {
    snprintf(err, errlen, "cannot start the HTTP server on %s", cfg->listen);
    rc = -EIO;
    goto close_fd;
  }
  *out = h;
  return 0;

close_fd:
  close(h->fd);
destroy_limits:
  gw_limits_destroy(h->limits);
free_h:
  free(h);
  return rc;
}

unsigned gw_http_port(const struct gw_http *h)
{
  return h->port;
}

void gw_http_stop(struct gw_http *h)
{
  if (!h)
    return;
  MHD_stop_daemon(h->d); /* closes the listening socket too */
  gw_limits_destroy(h->limits);
  free(h);
}
