/*
 * gw_http_token: a token request's set-up on its first access call: the
 * token parsed and checked against what this gateway serves, its deadline
 * (x-amz-rdma-expires), the peer's identity for cma, the length it moves;
 * declined (x-amz-rdma-reply: 501) or refused with a logged reason.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include "common/clock.h"
#include "common/slog.h"
#include "gateway/gw_auth.h"
#include "gateway/gw_dcallow.h"
#include "gateway/gw_http_i.h"
#include "gateway/gw_parse.h"
#include "gateway/gw_peer.h"

#define EXPIRES_HEADER "x-amz-rdma-expires"

/* "bytes=A-B" -> its length; 0 when not of that form. */
static uint64_t range_len(const char *v)
{
  uint64_t off, len;

  return gw_range_parse(v, &off, &len) ? 0 : len;
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
  unsigned reply;

  gw_rdx_error(q->r.token.kind, rc, &status, &code, &reply);
  gw_stat_add(q->h->stats, refused, 1);
  log_warn("token %s %s %s refused: %s: %s", rdx_kind_name(q->r.token.kind),
           q->r.method, q->r.path, strerror(-rc), why);
  return gw_http_answer_error_ex(q, con, status, code, why, reply, NULL);
}

/*
 * Decline the token (x-amz-rdma-reply: 501): a GET goes on over HTTP, a
 * PUT is answered at once, 200 RDMANotSupported with nothing stored (the
 * client sends it again with its body).
 */
static enum MHD_Result decline(struct creq *q, struct MHD_Connection *con,
                               bool get, const char *why)
{
  gw_req_note_declined(&q->r, q->h->stats, why);
  if (!get)
    return gw_http_answer_error(q, con, GW_STATUS_DECLINED, GW_CODE_DECLINED,
                                why, true);
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
  const char *v = gw_http_hdr(q, EXPIRES_HEADER);
  uint64_t now;

  if (!v)
    return 0;
  errno = 0;
  if (!gw_auth_signed(r->hdrs, r->n_hdrs, EXPIRES_HEADER) ||
      gw_http_hdr_count(q, EXPIRES_HEADER) != 1 ||
      strspn(v, "0123456789") != strlen(v) ||
      !v[0] || strlen(v) > 19 ||
      (r->rdx.expires_ms = strtoull(v, NULL, 10)) == 0 || errno)
    return refuse_token(q, con, -EINVAL,
                        EXPIRES_HEADER " is not one signed count of "
                        "milliseconds") == MHD_YES ? 0 : -1;
  now = clock_wall_ms();
  if (now >= r->rdx.expires_ms) {
    gw_stat_add(q->h->stats, token_expired, 1);
    log_info("token %s %s %s: its deadline passed before it was served",
             rdx_kind_name(r->token.kind), r->method, r->path);
    return gw_http_answer_error(q, con, 400, "RequestTimeout",
                                "the token's deadline (" EXPIRES_HEADER
                                ") has passed", false) == MHD_YES ? 0 : -1;
  }
  return 0;
}

/*
 * A token request: returns MHD_YES with q->r.tok (or q->r.decline) set to
 * go on, or the queued refusal (phase 2).
 */
enum MHD_Result gw_http_setup_token(struct creq *q, struct MHD_Connection *con,
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
  /* a target the client may not name is refused, served here or not */
  if (r->token.kind == RDX_DC) {
    const union MHD_ConnectionInfo *ca =
        MHD_get_connection_info(con, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    rc = gw_dcallow_check(q->h->cfg->dc_targets, &r->token.dc,
                          ca ? ca->client_addr : NULL, why, sizeof(why));
    if (rc)
      return refuse_token(q, con, rc, why);
  }
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
    if (gw_http_client_gone(con)) {
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
    r->rdx.len = range_len(gw_http_hdr(q, "range"));
    r->range_known = r->rdx.len > 0;
    r->tok = GW_TOK_GET;
    if (!r->range_known)
      return MHD_YES; /* checked once upstream's length is known */
  } else {
    const char *dec = gw_http_hdr(q, "x-amz-decoded-content-length");
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
      return gw_http_answer_error(q, con, 400, "EntityTooLarge",
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
