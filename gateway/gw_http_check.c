/*
 * gw_http_check: a request's first access call: its request-target, header
 * count and sizes and framing checked, its SigV4 verified, its token set
 * up (gw_http_token.c), an upload slot taken for a body, then the request
 * submitted to the proxy's pool; any refusal is answered at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "gateway/gw_auth.h"
#include "gateway/gw_http_i.h"
#include "gateway/gw_limits.h"
#include "gateway/gw_parse.h"
#include "gateway/gw_rc.h"

#define MAX_HEADERS 128
#define STATS_PATH "/_s3rdma/stats"

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

const char *gw_http_hdr(const struct creq *q, const char *name)
{
  return gw_header_get(q->r.hdrs, q->r.n_hdrs, name);
}

/* How often a header of this name came (case-insensitive). */
unsigned gw_http_hdr_count(const struct creq *q, const char *name)
{
  unsigned n = 0;

  for (size_t i = 0; i < q->r.n_hdrs; i++)
    n += strcasecmp(q->r.hdrs[i].key, name) == 0;
  return n;
}

/* A malformed request: 400, counted, one log line (the rule only: the
   target or headers may hold anything, control characters included). */
static enum MHD_Result refuse_request(struct creq *q, struct MHD_Connection *con,
                                      const char *code, const char *why)
{
  gw_stat_add(q->h->stats, bad_requests, 1);
  log_info("request refused: %s: %s", code, why);
  return gw_http_answer_error(q, con, 400, code, why, false);
}

enum MHD_Result gw_http_first_call(struct creq *q, struct MHD_Connection *con,
                                   const char *method)
{
  struct gw_http *h = q->h;
  struct gw_req *r = &q->r;
  struct gw_auth_keys keys = {h->cfg->access_key, h->cfg->secret_key};
  struct gw_auth_result res;
  struct gw_auth_req ar;
  const union MHD_ConnectionInfo *sc;
  struct gw_conn *k;
  const char *v, *tokv;
  char why[128];
  bool chunked;
  enum MHD_Result ret;

  sc = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  k = sc ? sc->socket_context : NULL;
  if (!gw_conn_admitted(k))
    return MHD_NO; /* refused when it opened: serve nothing it sent */
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
    return gw_http_answer_stats(q, con);
  if (MHD_get_connection_values(con, MHD_HEADER_KIND, header_iter, q) < 0 ||
      q->hdr_oom)
    return MHD_NO; /* out of memory: drop the connection */
  if (q->hdr_big)
    return refuse_request(q, con, "InvalidRequest", "a header is too large");
  if (r->n_hdrs >= MAX_HEADERS)
    return refuse_request(q, con, "InvalidRequest", "too many headers");
  /* one framing only, so that what upstream gets is what was verified */
  if (gw_framing_check(gw_http_hdr(q, "content-length"),
                       gw_http_hdr_count(q, "content-length"),
                       gw_http_hdr(q, "transfer-encoding"),
                       gw_http_hdr_count(q, "transfer-encoding"), &r->body_len,
                       &chunked, why, sizeof(why)))
    return refuse_request(q, con, "InvalidRequest", why);
  if (chunked)
    return gw_http_answer_error(q, con, 411, "MissingContentLength",
                                "chunked request bodies are not supported",
                                false);

  ar = (struct gw_auth_req){r->method, r->path, r->query, r->hdrs, r->n_hdrs,
                            h->cfg->token_header, NULL};
  if (r->body_len <= 0)
    ar.default_payload = S3_EMPTY_SHA256; /* curl's --aws-sigv4 sends none */
  if (gw_auth_verify(&keys, &ar, time(NULL), &res)) {
    gw_stat_add(h->stats, auth_failures, 1);
    log_info("%s %s: %s %s: %s", r->method, r->path, res.code, "refused",
             res.why);
    return gw_http_answer_error(q, con, res.status, res.code, res.why, false);
  }
  snprintf(r->region, sizeof(r->region), "%s", res.region);
  /* verified: no longer a stranger, and the connection may now idle as
     long as any request */
  gw_conns_verified(h->conns, k);
  MHD_set_connection_option(con, MHD_CONNECTION_OPTION_TIMEOUT,
                            h->cfg->timeout_s);

  /* the RC dialect's connect step is ours, never upstream's */
  if (gw_rc_path(r->path))
    return gw_http_answer_rc(q, con);

  v = gw_http_hdr(q, "x-amz-content-sha256");
  if (v && strncmp(v, "STREAMING-", 10) == 0)
    return gw_http_answer_error(
        q, con, 501, "NotImplemented",
        "aws-chunked (streaming) payloads are not supported", false);
  if (strcmp(method, "PUT") == 0 && r->body_len > 0 &&
      (uint64_t)r->body_len > h->cfg->max_put)
    return gw_http_answer_error(q, con, 400, "EntityTooLarge",
                                "larger than the largest single PUT", false);

  tokv = gw_http_hdr(q, h->cfg->token_header);
  if (tokv) {
    ret = gw_http_setup_token(q, con, tokv);
    if (q->phase == 2)
      return ret;
  }

  if (r->body_len > 0 && r->tok == GW_TOK_NONE) {
    /* a body holds an upstream worker while it arrives: a share each */
    if (!gw_limits_upload_take(h->limits, gw_conn_peer(k))) {
      gw_stat_add(h->stats, slowdowns, 1);
      return gw_http_answer_error(q, con, 503, "SlowDown",
                                  "too many uploads from this client at once",
                                  false);
    }
    q->upload_peer = *gw_conn_peer(k);
    q->upload_held = true;
  }

  pthread_mutex_init(&r->mu, NULL);
  clock_cond_init(&r->cv);
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
