/*
 * rdx_rc_client: the RC transport's client half; see rdx_rc_client.h.
 *
 * DESIGN (threads): struct rc_client is immutable after open (its CQ is
 * only named by queue pairs: the client posts nothing). An endpoint's
 * sessions live in its rdx_rc_pool (the pool's mutex); a session taken
 * belongs to its taker, who alone connects it or makes its tokens.
 */
#include "rdma/rdx_rc_client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rdx_i.h"
#include "rdma/rdx_rc_pool.h"
#include "rdma/rdx_rc_verbs.h"
#include "rdma/rdx_reason.h"

#define CLIENT_CQE 16 /* the client posts nothing: a CQ only to name */

struct rc_client {
  struct rdx_transport base; /* first: the ops see a struct rdx_transport */
  struct rdx_rc_dev dev;
  struct ibv_cq *cq;         /* every session's send and receive CQ */
};

struct rdx_rc_endpoint {
  struct rc_client *c;
  struct rdx_rc_pool *pool;
};

struct rdx_rc_session {
  struct rdx_rc_endpoint *ep;
  struct ibv_qp *qp;
  uint32_t psn;                         /* ours, sent in the connect step */
  bool connected;
  uint8_t id[RDX_RC_SESSION_BYTES];     /* the server's, once connected */
};

/* ---- transport ---------------------------------------------------------- */

static int rc_reg(struct rdx_transport *t, struct rdx_seg *seg)
{
  struct rc_client *c = (struct rc_client *)t;

  return rdx_rc_reg_seg(&c->dev, seg);
}

static int rc_reg_dmabuf(struct rdx_transport *t, struct rdx_seg *seg)
{
  struct rc_client *c = (struct rc_client *)t;

  return rdx_rc_reg_dmabuf_seg(&c->dev, seg);
}

static void rc_unreg(struct rdx_transport *t, struct rdx_seg *seg)
{
  rdx_rc_unreg_seg(seg);
}

/* An RC token names a session: rdx_rc_token_for makes it. */
static int rc_token(struct rdx_transport *t, const struct rdx_seg *seg,
                    uint64_t addr, uint64_t len, enum rdx_op op,
                    struct rdx_token *tok)
{
  return -ENOTCONN;
}

static void rc_close(struct rdx_transport *t)
{
  struct rc_client *c = (struct rc_client *)t;

  ibv_destroy_cq(c->cq);
  rdx_rc_dev_close(&c->dev);
  free(c);
}

static const struct rdx_transport_ops rc_ops = {
    .reg = rc_reg,
    .reg_dmabuf = rc_reg_dmabuf,
    .unreg = rc_unreg,
    .token = rc_token,
    .close = rc_close,
};

int rdx_rc_transport_open(const struct rdx_rc_dev_cfg *cfg,
                          struct rdx_transport **out, char *err, size_t errlen)
{
  struct rc_client *c;
  int rc;

  rdx_reason(err, errlen, 0, "%s", "");
  if (!out)
    return rdx_reason(err, errlen, -EINVAL, "no place for the transport");
  *out = NULL;
  c = calloc(1, sizeof(*c));
  if (!c)
    return rdx_reason(err, errlen, -ENOMEM, "rc: out of memory");
  rc = rdx_rc_dev_open(cfg, "rc", &c->dev, err, errlen);
  if (rc)
    goto free_c;
  c->cq = ibv_create_cq(c->dev.ctx, CLIENT_CQE, NULL, NULL, 0);
  if (!c->cq) {
    rc = rdx_reason(err, errlen, -ENOMEM, "rc: %s: ibv_create_cq: %s",
                    c->dev.name, strerror(errno));
    goto close_dev;
  }
  c->base.ops = &rc_ops;
  c->base.kind = RDX_TRANSPORT_RC;
  *out = &c->base;
  return 0;

close_dev:
  rdx_rc_dev_close(&c->dev);
free_c:
  free(c);
  return rc;
}

int rdx_rc_open(const struct rdx_params *p, struct rdx_transport **out,
                char *err, size_t errlen)
{
  const struct rdx_rc_dev_cfg *cfg;
  struct rdx_rc_cfg_buf b;
  int rc = rdx_rc_cfg_of(p, &b, &cfg, err, errlen);

  return rc ? rc : rdx_rc_transport_open(cfg, out, err, errlen);
}

/* ---- endpoints and sessions --------------------------------------------- */

static void session_free(void *obj, void *arg)
{
  struct rdx_rc_session *s = obj;

  if (s->qp)
    ibv_destroy_qp(s->qp);
  free(s);
}

int rdx_rc_endpoint_create(struct rdx_transport *t, unsigned cap,
                           struct rdx_rc_endpoint **out)
{
  struct rdx_rc_endpoint *ep;
  int rc;

  if (out)
    *out = NULL;
  if (!t || !out || t->ops != &rc_ops)
    return -EINVAL;
  ep = calloc(1, sizeof(*ep));
  if (!ep)
    return -ENOMEM;
  ep->c = (struct rc_client *)t;
  rc = rdx_rc_pool_create(cap ? cap : RDX_RC_SESSIONS_DEFAULT, session_free,
                          ep, &ep->pool);
  if (rc) {
    free(ep);
    return rc;
  }
  *out = ep;
  return 0;
}

void rdx_rc_endpoint_destroy(struct rdx_rc_endpoint *ep)
{
  if (!ep)
    return;
  rdx_rc_pool_destroy(ep->pool);
  free(ep);
}

void rdx_rc_endpoint_flush(struct rdx_rc_endpoint *ep)
{
  if (ep)
    rdx_rc_pool_flush(ep->pool);
}

unsigned rdx_rc_endpoint_busy(struct rdx_rc_endpoint *ep)
{
  struct rdx_rc_pool_stats st;

  rdx_rc_pool_stats(ep->pool, &st);
  return st.busy;
}

/* A new session: a queue pair in INIT and our PSN. */
static int session_new(struct rdx_rc_endpoint *ep, struct rdx_rc_session **out,
                       char *err, size_t errlen)
{
  struct rdx_rc_session *s;
  int rc;

  s = calloc(1, sizeof(*s));
  if (!s)
    return rdx_reason(err, errlen, -ENOMEM, "rc: out of memory");
  s->ep = ep;
  s->psn = rdx_rc_psn_random();
  if (s->psn == 0) {
    rc = rdx_reason(err, errlen, -EAGAIN, "rc: no randomness for a PSN");
    goto free_s;
  }
  rc = rdx_rc_qp_create(&ep->c->dev, ep->c->cq, 1, &s->qp);
  if (rc) {
    rdx_reason(err, errlen, rc, "rc: %s: cannot create a queue pair: %s",
               ep->c->dev.name, strerror(-rc));
    goto free_s;
  }
  *out = s;
  return 0;

free_s:
  free(s);
  return rc;
}

int rdx_rc_session_get(struct rdx_rc_endpoint *ep, uint64_t until,
                       struct rdx_rc_session **out, char *err, size_t errlen)
{
  void *obj;
  int rc;

  rdx_reason(err, errlen, 0, "%s", "");
  if (out)
    *out = NULL;
  if (!ep || !out)
    return rdx_reason(err, errlen, -EINVAL, "rc: no endpoint");
  rc = rdx_rc_pool_get(ep->pool, until, &obj);
  if (rc)
    return rdx_reason(err, errlen, rc, "rc: every session to the endpoint "
                      "is busy");
  if (obj) {
    *out = obj;
    return 0;
  }
  rc = session_new(ep, out, err, errlen);
  if (rc)
    rdx_rc_pool_put(ep->pool, NULL, true); /* the reserved slot */
  return rc;
}

bool rdx_rc_session_connected(const struct rdx_rc_session *s)
{
  return s && s->connected;
}

int rdx_rc_session_connect_req(const struct rdx_rc_session *s,
                               struct rdx_rc_connect_req *req)
{
  struct rdx_rc_qp_token t;

  if (!s || !req)
    return -EINVAL;
  if (s->connected)
    return -EISCONN;
  rdx_rc_qp_token_of(&s->ep->c->dev, s->qp, &t);
  if (rdx_rc_qp_token_format(&t, req->token, sizeof(req->token)) < 0 ||
      rdx_rc_psn_format(s->psn, req->psn, sizeof(req->psn)) < 0)
    return -EINVAL;
  return 0;
}

int rdx_rc_session_connect(struct rdx_rc_session *s, const char *session,
                           size_t session_len, const char *reply,
                           size_t reply_len, const char *psn, size_t psn_len,
                           char *err, size_t errlen)
{
  struct rdx_rc_qp_token peer;
  uint32_t peer_psn;
  char why[RDX_ERR_MAX];
  int rc;

  rdx_reason(err, errlen, 0, "%s", "");
  if (!s)
    return rdx_reason(err, errlen, -EINVAL, "rc: no session");
  if (s->connected)
    return rdx_reason(err, errlen, -EISCONN, "rc: session connected already");
  if (!session || rdx_rc_session_parse(session, session_len, s->id))
    return rdx_reason(err, errlen, -EBADMSG,
                      "rc: the connect reply's x-amz-rdma-session is not 32 "
                      "lowercase hex digits");
  if (!reply || rdx_rc_reply_parse(reply, reply_len, &peer))
    return rdx_reason(err, errlen, -EBADMSG,
                      "rc: the connect reply's x-amz-rdma-reply is not "
                      "\"200:\" and a queue pair token");
  if (!psn || rdx_rc_psn_parse(psn, psn_len, &peer_psn))
    return rdx_reason(err, errlen, -EBADMSG,
                      "rc: the connect reply's x-amz-rdma-psn is not a PSN");
  rc = rdx_rc_peer_check(&peer, peer_psn, why, sizeof(why));
  if (rc)
    return rdx_reason(err, errlen, -EBADMSG, "rc: the server's %s", why);
  rc = rdx_rc_qp_connect(&s->ep->c->dev, s->qp, &peer, peer_psn, s->psn, why,
                         sizeof(why));
  if (rc)
    return rdx_reason(err, errlen, rc, "rc: %s: %s", s->ep->c->dev.name, why);
  s->connected = true;
  return 0;
}

int rdx_rc_session_id(const struct rdx_rc_session *s,
                      char buf[RDX_RC_SESSION_LEN + 1])
{
  if (buf)
    buf[0] = '\0';
  if (!s || !buf || !s->connected)
    return -ENOTCONN;
  return rdx_rc_session_format(s->id, buf, RDX_RC_SESSION_LEN + 1);
}

int rdx_rc_token_for(const struct rdx_rc_session *s, const struct rdx_region *r,
                     uint64_t off, uint64_t len, enum rdx_op op, char *buf,
                     size_t buflen)
{
  const struct rdx_seg *seg;
  struct rdx_token tok;
  struct ibv_mr *mr;
  int rc;

  if (buf && buflen > 0)
    buf[0] = '\0';
  if (!s || !r || r->t != &s->ep->c->base || len == 0 ||
      (op != RDX_GET && op != RDX_PUT))
    return -EINVAL;
  if ((r->src && op != RDX_PUT) || (r->dst && op != RDX_GET))
    return -EACCES;
  if (!s->connected)
    return -ENOTCONN;
  rc = rdx_region_seg_of(r, off, len, &seg);
  if (rc)
    return rc;
  mr = seg->priv;
  memset(&tok, 0, sizeof(tok));
  tok.kind = RDX_RC;
  tok.op = RDX_OP_NONE;
  tok.addr = r->base + off;
  tok.len = len;
  memcpy(tok.rc.session, s->id, sizeof(s->id));
  tok.rc.rkey = mr->rkey;
  return rdx_token_format(&tok, buf, buflen);
}

void rdx_rc_session_put(struct rdx_rc_session *s, bool broken)
{
  if (s)
    rdx_rc_pool_put(s->ep->pool, s, broken || !s->connected);
}
