/*
 * gw_http: the client side of s3rdma-gateway over libmicrohttpd. This file
 * holds the server (bind, start, stop) and MHD's callbacks; a request's
 * first access call is in gw_http_check.c (its token set-up in
 * gw_http_token.c), its answers in gw_http_answer.c; gw_http_i.h is what
 * they share.
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
 * Nothing else is shared but the atomic stats, the per-peer limits
 * (gw_limits) and the connections' records (gw_conns), each with its own
 * lock: MHD's accept policy and connection notifications (its listening
 * thread and connection threads) admit connections, gw_http_first_call()
 * and completed_cb take and give back upload slots.
 *
 * Strangers: until a request's SigV4 is verified a connection has
 * --auth-timeout seconds in all (gw_conns: a deadline, not an idle limit;
 * then --timeout idle); its request-target, header count and sizes and
 * framing are checked before the signature is.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/slog.h"
#include "gateway/gw_http_i.h"
#include "gateway/gw_limits.h"
#include "gateway/gw_peer.h"

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
    return gw_http_first_call(q, con, method);
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
  return gw_http_answer(q, con);
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
  if (q->upload_held)
    gw_limits_upload_done(h->limits, &q->upload_peer);
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

/* Refuse a connection its address alone rules out, before MHD takes it. */
static enum MHD_Result accept_cb(void *cls, const struct sockaddr *addr,
                                 socklen_t addrlen)
{
  struct gw_http *h = cls;
  enum gw_refusal why = gw_limits_precheck(h->limits, addr);

  (void)addrlen;
  if (why == GW_ADMIT)
    return MHD_YES;
  gw_conns_count_refusal(h->stats, why);
  return MHD_NO;
}

/* Admit the connection (socket_ctx: its gw_conn), or shut it down. */
static void conn_cb(void *cls, struct MHD_Connection *con, void **socket_ctx,
                    enum MHD_ConnectionNotificationCode toe)
{
  struct gw_http *h = cls;
  const union MHD_ConnectionInfo *ca, *cf;

  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    ca = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    cf = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (ca && cf)
      *socket_ctx = gw_conns_open(h->conns, cf->connect_fd, ca->client_addr);
  } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_ctx) {
    gw_conns_close(h->conns, *socket_ctx);
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
  h->limits = gw_limits_create(&(struct gw_limits_cfg){
      cfg->conns_per_addr, cfg->strangers, cfg->strangers_per_peer,
      cfg->uploads_per_addr});
  if (!h->limits) {
    rc = -ENOMEM;
    goto free_h;
  }
  rc = gw_conns_create(h->limits, stats, cfg->auth_timeout_s * 1000u,
                       &h->conns);
  if (rc)
    goto destroy_limits;
  rc = bind_listen(h, cfg->listen, err, errlen);
  if (rc < 0)
    goto destroy_conns;
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
destroy_conns:
  gw_conns_destroy(h->conns);
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
  gw_conns_destroy(h->conns);
  gw_limits_destroy(h->limits);
  free(h);
}
