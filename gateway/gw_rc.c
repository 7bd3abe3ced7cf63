/* gw_rc: the RC dialect's connect step (see gw_rc.h). */
#include "gateway/gw_rc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/slog.h"
#include "gateway/gw_auth.h"

#define HDR_TOKEN "x-amz-rdma-token" /* the dialect's, whatever --token-header */

bool gw_rc_path(const char *path)
{
  size_t n = strlen(GW_RC_PREFIX);

  return strncmp(path, GW_RC_PREFIX, n) == 0 &&
         (path[n] == '\0' || path[n] == '/');
}

/* A refusal: status, code (NULL: no body), the reason into out. */
static void __attribute__((format(printf, 4, 5)))
refuse(struct gw_rc_answer *out, int status, const char *code,
       const char *fmt, ...)
{
  va_list ap;

  out->status = status;
  out->code = code;
  va_start(ap, fmt);
  vsnprintf(out->why, sizeof(out->why), fmt, ap);
  va_end(ap);
}

/* How often a header of this name came (case-insensitive). */
static unsigned hdr_count(const struct gw_rc_req *req, const char *name)
{
  unsigned n = 0;

  for (size_t i = 0; i < req->n_hdrs; i++)
    n += strcasecmp(req->hdrs[i].key, name) == 0;
  return n;
}

/*
 * The value of a header the step uses: NULL when absent; "" marked bad
 * (*bad) when repeated or not signed (a value slipped in unsigned would
 * name another queue pair or session than the signer's).
 */
static const char *signed_hdr(const struct gw_rc_req *req, const char *name,
                              const char **bad)
{
  const char *v = gw_header_get(req->hdrs, req->n_hdrs, name);

  if (!v)
    return NULL;
  if (hdr_count(req, name) != 1)
    *bad = "repeated";
  else if (!gw_auth_signed(req->hdrs, req->n_hdrs, name))
    *bad = "not signed";
  return v;
}

static void connect_step(struct rdx_server *rdx, struct gw_stats *stats,
                         const struct gw_rc_req *req, struct gw_rc_answer *out)
{
  const char *bad = NULL, *tok, *psn;
  struct rdx_rc_qp_token qt;
  uint32_t n;
  char why[128] = "";
  int rc;

  tok = signed_hdr(req, HDR_TOKEN, &bad);
  if (bad) {
    refuse(out, 400, NULL, HDR_TOKEN " is %s", bad);
    return;
  }
  psn = signed_hdr(req, RDX_RC_HDR_PSN, &bad);
  if (bad) {
    refuse(out, 400, NULL, RDX_RC_HDR_PSN " is %s", bad);
    return;
  }
  /* the syntax first, so that a malformed connect is a 400 whether or
     not rc is served (rdx_rc_server_connect checks it all again) */
  if (!tok || rdx_rc_qp_token_parse(tok, strlen(tok), &qt)) {
    refuse(out, 400, NULL, HDR_TOKEN " is %s", tok ? "not a queue pair "
           "token (88 hex digits)" : "missing");
    return;
  }
  if (qt.transport != RDX_RC_TRANSPORT_RC) {
    refuse(out, 400, NULL, HDR_TOKEN " names transport %u, not RC",
           (unsigned)qt.transport);
    return;
  }
  if (!psn || rdx_rc_psn_parse(psn, strlen(psn), &n)) {
    refuse(out, 400, NULL, RDX_RC_HDR_PSN " is %s",
           psn ? "malformed or 0" : "missing");
    return;
  }
  if (req->serve_none) {
    refuse(out, 501, NULL, "this gateway serves no tokens (--serve none)");
    return;
  }
  rc = rdx_rc_server_connect(rdx, tok, strlen(tok), psn, strlen(psn),
                             &out->acc, why, sizeof(why));
  switch (rc) {
  case 0:
    out->status = 200;
    gw_stat_add(stats, rc_connects, 1);
    log_info("rc connect: session %.8s... opened (%u open)",
             out->acc.session, rdx_rc_server_sessions(rdx));
    return;
  case -EINVAL: refuse(out, 400, NULL, "%s", why); break;
  case -ENOSPC: refuse(out, 503, NULL, "%s", why); break;
  case -EOPNOTSUPP: refuse(out, 501, NULL, "rc not served: %s", why); break;
  default:
    refuse(out, 500, NULL, "%s (%s)", why, strerror(-rc));
    break;
  }
  memset(&out->acc, 0, sizeof(out->acc)); /* nothing of it goes out */
}

static void disconnect_step(struct rdx_server *rdx, struct gw_stats *stats,
                            const struct gw_rc_req *req,
                            struct gw_rc_answer *out)
{
  const char *bad = NULL, *s = signed_hdr(req, RDX_RC_HDR_SESSION, &bad);
  int rc = -ENOENT;

  out->status = 204;
  gw_stat_add(stats, rc_disconnects, 1);
  if (s && !bad)
    rc = rdx_rc_server_disconnect(rdx, s, strlen(s));
  if (rc && rc != -ENOENT)
    log_info("rc disconnect: %s", strerror(-rc));
  else if (!s || bad)
    log_info("rc disconnect: " RDX_RC_HDR_SESSION " %s: nothing dropped",
             !s ? "missing" : bad);
}

void gw_rc_handle(struct rdx_server *rdx, struct gw_stats *stats,
                  const struct gw_rc_req *req, struct gw_rc_answer *out)
{
  bool con = strcmp(req->path, RDX_RC_CONNECT_PATH) == 0;
  bool dis = strcmp(req->path, RDX_RC_DISCONNECT_PATH) == 0;

  memset(out, 0, sizeof(*out));
  if (!con && !dis) {
    refuse(out, 404, "NoSuchKey", "no such RC endpoint");
  } else if (strcmp(req->method, "POST") != 0) {
    refuse(out, 405, "MethodNotAllowed", "only POST is allowed here");
    out->allow_post = true;
  } else if (req->body_len > 0) {
    refuse(out, 400, "InvalidRequest", "no body on POST " GW_RC_PREFIX "/");
  } else if (req->query && req->query[0]) {
    refuse(out, 400, "InvalidRequest", "no query on POST " GW_RC_PREFIX "/");
  } else if (con) {
    connect_step(rdx, stats, req, out);
  } else {
    disconnect_step(rdx, stats, req, out);
  }
  if (out->status >= 400) {
    const char *what = con ? "connect" : dis ? "disconnect" : "(unknown path)";
    if (con && out->status != 404)
      gw_stat_add(stats, rc_connect_refused, 1);
    else
      gw_stat_add(stats, bad_requests, 1);
    slog(out->status >= 500 && out->status != 501 ? LOG_WARNING : LOG_NOTICE,
         "rc %s refused %d: %s", what, out->status, out->why);
  }
  atomic_store_explicit(&stats->rc_sessions, rdx_rc_server_sessions(rdx),
                        memory_order_relaxed);
}
