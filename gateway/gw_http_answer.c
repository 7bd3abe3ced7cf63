/*
 * gw_http_answer: what a client is answered: S3 errors, the stats page, and
 * (the final access call) the worker's answer, waited for while the client
 * is watched; an HTTP body is pulled from the request's down pipe by MHD's
 * reader on the connection thread. See gw_http.c for the threading.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <poll.h>

#include "common/clock.h"
#include "common/slog.h"
#include "common/stats_prom.h"
#include "gateway/gw_http_i.h"
#include "gateway/gw_peer.h"
#include "gateway/gw_rc.h"

/* How often a connection waiting for the worker looks for its client. */
#define GONE_POLL_MS 200

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

enum MHD_Result gw_http_answer_error(struct creq *q, struct MHD_Connection *con,
                                     int status, const char *code,
                                     const char *msg, bool rdma_501)
{
  return gw_http_answer_error_ex(q, con, status, code, msg, rdma_501 ? 501 : 0,
                                 NULL);
}

enum MHD_Result gw_http_answer_error_ex(struct creq *q,
                                        struct MHD_Connection *con, int status,
                                        const char *code, const char *msg,
                                        unsigned reply, const char *allow)
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
  if (reply) {
    char num[16];
    snprintf(num, sizeof(num), "%u", reply);
    MHD_add_response_header(resp, "x-amz-rdma-reply", num);
  }
  if (allow)
    MHD_add_response_header(resp, "Allow", allow);
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
bool gw_http_client_gone(struct MHD_Connection *con)
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

  if (r->rdx.expires_ms) {
    now = clock_wall_ms();
    if (r->rdx.expires_ms > now && r->rdx.expires_ms - now + 1000 > left)
      left = r->rdx.expires_ms - now + 1000;
  }
  for (;;) {
    if (gw_http_client_gone(con))
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
enum MHD_Result gw_http_answer(struct creq *q, struct MHD_Connection *con)
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
    return gw_http_answer_error(q, con, 504, "GatewayTimeout",
                                "upstream did not answer in time", false);
  }
  /* ready: the worker no longer writes what is read below */
  if (r->mode == GW_MODE_ERROR)
    return gw_http_answer_error_ex(q, con, r->err_status, r->err_code,
                                   r->err_msg,
                                   r->decline ? 501 : r->err_reply, NULL);
  if (r->mode == GW_MODE_RDMA) {
    unsigned reply = r->tok == GW_TOK_GET ? (unsigned)r->status
                     : r->upload_part     ? 206
                                          : 200;
    resp = MHD_create_response_from_buffer(0, (void *)"",
                                           MHD_RESPMEM_PERSISTENT);
    if (!resp)
      return MHD_NO;
    copy_headers(resp, r, q->h->cfg->token_header);
    if (r->tok == GW_TOK_GET || !q->h->cfg->test_put_no_reply) {
      snprintf(num, sizeof(num), "%u", reply);
      MHD_add_response_header(resp, "x-amz-rdma-reply", num);
      snprintf(num, sizeof(num), "%" PRIu64, r->rdma_bytes);
      MHD_add_response_header(resp, "x-amz-rdma-bytes-transferred", num);
    }
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

/* The stats page's format=: 0 text, 1 prometheus, -1 another. */
static int stats_format(const char *query)
{
  int f = 0;

  for (const char *p = query; p && *p;) {
    const char *e = strchr(p, '&');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n > 7 && !strncmp(p, "format=", 7)) {
      if (n == 17 && !strncmp(p + 7, "prometheus", 10))
        f = 1;
      else if (n == 11 && !strncmp(p + 7, "text", 4))
        f = 0;
      else
        return -1;
    }
    p = e ? e + 1 : NULL;
  }
  return f;
}

enum MHD_Result gw_http_answer_stats(struct creq *q, struct MHD_Connection *con)
{
  static const char *const gauges[] = {"rc_sessions", "upstream_up", NULL};
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  int format = stats_format(q->r.query);
  struct MHD_Response *resp;
  /* (sized for 16 upstreams' rows) */
  char buf[8192], prom[32768];
  long pn = 0;
  size_t n;

  if (!ci || !gw_addr_is_loopback(ci->client_addr))
    return gw_http_answer_error(q, con, 403, "AccessDenied",
                                "stats are for loopback peers only", false);
  if (format < 0)
    return gw_http_answer_error(q, con, 400, "InvalidArgument",
                                "format is text or prometheus", false);
  atomic_store_explicit(&q->h->stats->rc_sessions,
                        rdx_rc_server_sessions(q->h->rdx),
                        memory_order_relaxed);
  n = gw_stats_format(q->h->stats, buf, sizeof(buf));
  if (format == 1 &&
      (pn = stats_prom(buf, "s3rdma_gateway", gauges, prom, sizeof(prom))) < 0)
    return gw_http_answer_error(q, con, 500, "InternalError",
                                "the stats do not fit", false);
  resp = format == 1 ? MHD_create_response_from_buffer(
                           (size_t)pn, prom, MHD_RESPMEM_MUST_COPY)
                     : MHD_create_response_from_buffer(n, buf,
                                                       MHD_RESPMEM_MUST_COPY);
  if (!resp)
    return MHD_NO;
  MHD_add_response_header(resp, "Content-Type",
                          format == 1 ? "text/plain; version=0.0.4"
                                      : "text/plain");
  q->phase = 2;
  return queue(con, 200, resp);
}

/* A request under /.s3rdma-rc/ (verified): gw_rc decides; an empty body
   but for the S3 errors (404, 405, 400 of ours), x-amz-rdma-* only on a
   connect's 200. */
enum MHD_Result gw_http_answer_rc(struct creq *q, struct MHD_Connection *con)
{
  const struct gw_rc_req rq = {q->r.method, q->r.path, q->r.query, q->r.hdrs,
                               q->r.n_hdrs, q->r.body_len,
                               q->h->cfg->serve_none};
  struct gw_rc_answer a;
  struct MHD_Response *resp;

  gw_rc_handle(q->h->rdx, q->h->stats, &rq, &a);
  if (a.code)
    return gw_http_answer_error_ex(q, con, a.status, a.code, a.why, 0,
                                   a.allow_post ? "POST" : NULL);
  q->phase = 2;
  resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!resp)
    return MHD_NO;
  if (a.status == 200) {
    if (MHD_add_response_header(resp, RDX_RC_HDR_SESSION, a.acc.session) !=
            MHD_YES ||
        MHD_add_response_header(resp, "x-amz-rdma-reply",
                                a.acc.reply) != MHD_YES ||
        MHD_add_response_header(resp, RDX_RC_HDR_PSN, a.acc.psn) != MHD_YES) {
      MHD_destroy_response(resp);
      return MHD_NO;
    }
  }
  return queue(con, (unsigned)a.status, resp);
}
