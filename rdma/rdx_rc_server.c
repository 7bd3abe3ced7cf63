/*
 * rdx_rc_server: the RC transport's server half: its row of rdx_server.c's
 * kinds table (struct rdx_server_ops rdx_rc_server_ops) and the connect
 * step's entry points; see rdx_rc_server.h.
 *
 * DESIGN (threads): struct rc_server is immutable from open to close but
 * for its session table (rdx_rc_table: own mutex). A session acquired for
 * a chunk (busy) belongs to the thread moving that chunk, which posts on
 * its queue pair and polls its CQ alone, then releases it; one that failed
 * is released broken, which destroys its queue pair. cfg_mu protects the
 * configuration set by rdx_rc_server_set_cfg (a leaf lock).
 */
#include "rdma/rdx_rc_server.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "rdma/rdx_helper.h"
#include "rdma/rdx_i.h"
#include "rdma/rdx_rc_table.h"
#include "rdma/rdx_rc_verbs.h"
#include "rdma/rdx_reason.h"

#define WHO "rc tokens"
#define SESS_CQE 4
#define ID_TRIES 4        /* random ids drawn before giving up */

/* ---- configuration ------------------------------------------------------ */

static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rdx_rc_cfg_copy cfg_saved = RDX_RC_CFG_COPY_INIT; /* protected
                                                                   by cfg_mu */

int rdx_rc_server_set_cfg(const struct rdx_rc_dev_cfg *cfg)
{
  int rc;

  pthread_mutex_lock(&cfg_mu);
  rc = rdx_rc_cfg_copy(&cfg_saved, cfg);
  pthread_mutex_unlock(&cfg_mu);
  return rc;
}

/* ---- the kind ----------------------------------------------------------- */

struct rc_server {
  struct rdx_server_kind base; /* first: the ops see a struct rdx_server_kind */
  struct rdx_rc_dev dev;
  struct ibv_mr *mr;           /* the server's chunk buffers, all of them */
  uint64_t lo, hi;             /* [lo, hi): what mr covers */
  struct rdx_rc_table *tab;    /* sessions (its own mutex) */
};

struct rc_sess {
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  uint64_t wr_id;              /* the chunk count, for the work request */
};

static void sess_free(void *obj, void *arg)
{
  struct rc_sess *ss = obj;

  if (ss->qp)
    ibv_destroy_qp(ss->qp);
  if (ss->cq)
    ibv_destroy_cq(ss->cq);
  free(ss);
}

static int rc_srv_open(struct rdx_helpers *h, struct rdx_server_kind **out,
                       char *why, size_t whylen)
{
  struct rc_server *k;
  size_t arena_len;
  unsigned nbuf;
  void *arena;
  int rc;

  *out = NULL;
  k = calloc(1, sizeof(*k));
  if (!k)
    return rdx_reason(why, whylen, -ENOMEM, WHO ": out of memory");
  k->base.ops = &rdx_rc_server_ops;
  pthread_mutex_lock(&cfg_mu);
  rc = rdx_rc_dev_open(&cfg_saved.cfg, WHO, &k->dev, why, whylen);
  pthread_mutex_unlock(&cfg_mu);
  if (rc) {
    rc = rc == -ENOMEM ? rc : -EOPNOTSUPP;
    goto free_k;
  }
  rdx_helpers_arena(h, &arena, &arena_len, &nbuf);
  k->lo = (uint64_t)(uintptr_t)arena;
  k->hi = k->lo + arena_len;
  k->mr = rdx_rc_reg_local(&k->dev, (void *)(uintptr_t)k->lo,
                           (size_t)(k->hi - k->lo));
  if (!k->mr) {
    rc = rdx_reason(why, whylen, -EOPNOTSUPP,
                    WHO ": %s: cannot register the chunk buffers (%" PRIu64
                    " bytes): %s",
                    k->dev.name, k->hi - k->lo, strerror(errno));
    goto close_dev;
  }
  rc = rdx_rc_table_create(RDX_RC_TABLE_CAP, RDX_RC_IDLE_MS, sess_free, k,
                           &k->tab);
  if (rc) {
    rdx_reason(why, whylen, rc, WHO ": out of memory");
    goto dereg;
  }
  *out = &k->base;
  return 0;

dereg:
  ibv_dereg_mr(k->mr);
close_dev:
  rdx_rc_dev_close(&k->dev);
free_k:
  free(k);
  return rc;
}

static void rc_srv_close(struct rdx_server_kind *base)
{
  struct rc_server *k = (struct rc_server *)base;

  rdx_rc_table_destroy(k->tab);
  ibv_dereg_mr(k->mr);
  rdx_rc_dev_close(&k->dev);
  free(k);
}

static int rc_srv_check(struct rdx_server_kind *base,
                        const struct rdx_token *tok, const struct rdx_req *req,
                        uint64_t until, char *why, size_t whylen)
{
  struct rc_server *k = (struct rc_server *)base;

  if (!rdx_rc_table_has(k->tab, tok->rc.session))
    return rdx_reason(why, whylen, -ENOTCONN,
                      "rc: no such session (expired, disconnected, failed, "
                      "or the server restarted): connect again");
  return 0;
}

/* A failed completion as rdx_serve's errno and reason. */
static int wc_failed(const struct ibv_wc *wc, char *why, size_t whylen)
{
  const char *st = ibv_wc_status_str(wc->status);

  switch (wc->status) {
  case IBV_WC_REM_ACCESS_ERR:
    return rdx_reason(why, whylen, -EFAULT,
                      "rc: the client refused its memory key or range (%s)",
                      st);
  case IBV_WC_RETRY_EXC_ERR:
  case IBV_WC_RNR_RETRY_EXC_ERR:
    return rdx_reason(why, whylen, -ECONNRESET,
                      "rc: the client's queue pair does not answer (%s)", st);
  default:
    return rdx_reason(why, whylen, -EIO, "rc: transfer failed (%s)", st);
  }
}

static int rc_srv_move(struct rdx_server_kind *base,
                       const struct rdx_token *tok, const struct rdx_req *req,
                       uint64_t token_off, void *local, size_t len,
                       uint64_t until, char *why, size_t whylen)
{
  struct rc_server *k = (struct rc_server *)base;
  uint64_t l = (uint64_t)(uintptr_t)local, bound;
  struct ibv_send_wr wr, *bad = NULL;
  struct ibv_sge sge;
  struct ibv_wc wc;
  struct rc_sess *ss;
  void *obj;
  int rc;

  if (l < k->lo || l >= k->hi || len > k->hi - l || len > UINT32_MAX)
    return rdx_reason(why, whylen, -EINVAL,
                      "rc: the local side is not in the server's chunk "
                      "buffers");
  rc = rdx_rc_table_acquire(k->tab, tok->rc.session, &obj);
  if (rc)
    return rdx_reason(why, whylen, -ENOTCONN,
                      "rc: no such session, or it is busy with another "
                      "transfer");
  ss = obj;
  memset(&sge, 0, sizeof(sge));
  sge.addr = l;
  sge.length = (uint32_t)len;
  sge.lkey = k->mr->lkey;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = ++ss->wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = req->op == RDX_GET ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = tok->addr + token_off;
  wr.wr.rdma.rkey = tok->rc.rkey;
  bound = clock_mono_ms() + RDX_RC_CHUNK_MS;
  if (until && until < bound)
    bound = until;
  rc = ibv_post_send(ss->qp, &wr, &bad);
  if (rc) {
    rc = rdx_reason(why, whylen, -EIO, "rc: cannot post the transfer: %s",
                    strerror(rc));
    goto release;
  }
  rc = rdx_rc_wait_wc(ss->cq, bound, &wc);
  if (rc == -ETIMEDOUT)
    rdx_reason(why, whylen, rc,
               "rc: the transfer did not finish in time (30 s a chunk, or "
               "the token's deadline)");
  else if (rc)
    rdx_reason(why, whylen, rc, "rc: polling the completion queue failed");
  else if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr.wr_id)
    rc = wc_failed(&wc, why, whylen);
release:
  if (rc)
    log_info("rc: session dropped after a failed %s of %zu bytes: %s",
             req->op == RDX_GET ? "write" : "read", len, why ? why : "");
  /* broken: the queue pair is destroyed here, so nothing touches local
     once this returns */
  rdx_rc_table_release(k->tab, tok->rc.session, rc != 0, clock_mono_ms());
  return rc;
}

const struct rdx_server_ops rdx_rc_server_ops = {
    .kind = RDX_RC,
    .open = rc_srv_open,
    .check = rc_srv_check,
    .move = rc_srv_move,
    .close = rc_srv_close,
};

/* ---- the connect step --------------------------------------------------- */

/* s's rc kind, or NULL with -EOPNOTSUPP and the reason. */
static struct rc_server *rc_of(const struct rdx_server *s, char *why,
                               size_t whylen)
{
  return (struct rc_server *)rdx_server_kind_of(s, RDX_RC, why, whylen);
}

/* A session: CQ, queue pair connected to peer. 0 and *out, or -errno. */
static int sess_make(struct rc_server *k, const struct rdx_rc_qp_token *peer,
                     uint32_t peer_psn, uint32_t psn, struct rc_sess **out,
                     char *why, size_t whylen)
{
  struct rc_sess *ss;
  char w[RDX_ERR_MAX];
  int rc;

  *out = NULL;
  ss = calloc(1, sizeof(*ss));
  if (!ss)
    return rdx_reason(why, whylen, -ENOMEM, "rc: out of memory");
  ss->cq = ibv_create_cq(k->dev.ctx, SESS_CQE, NULL, NULL, 0);
  if (!ss->cq) {
    rc = rdx_reason(why, whylen, -EIO, "rc: %s: ibv_create_cq: %s",
                    k->dev.name, strerror(errno));
    goto free_ss;
  }
  rc = rdx_rc_qp_create(&k->dev, ss->cq, 2, &ss->qp);
  if (rc) {
    rdx_reason(why, whylen, rc, "rc: %s: cannot create a queue pair: %s",
               k->dev.name, strerror(-rc));
    goto free_ss;
  }
  rc = rdx_rc_qp_connect(&k->dev, ss->qp, peer, peer_psn, psn, w, sizeof(w));
  if (rc) {
    rdx_reason(why, whylen, rc, "rc: %s: %s", k->dev.name, w);
    goto free_ss;
  }
  *out = ss;
  return 0;

free_ss:
  sess_free(ss, k);
  return rc;
}

int rdx_rc_server_connect(struct rdx_server *s, const char *token,
                          size_t token_len, const char *psn, size_t psn_len,
                          struct rdx_rc_accept *out, char *why, size_t whylen)
{
  struct rdx_rc_qp_token peer, mine;
  uint8_t id[RDX_RC_SESSION_BYTES];
  uint32_t peer_psn, my_psn;
  struct rc_server *k;
  struct rc_sess *ss;
  int rc = -EEXIST;

  rdx_reason(why, whylen, 0, "%s", "");
  if (!out)
    return rdx_reason(why, whylen, -EINVAL, "rc: no place for the answer");
  memset(out, 0, sizeof(*out));
  if (!s)
    return rdx_reason(why, whylen, -EINVAL, "rc: no server");
  k = rc_of(s, why, whylen);
  if (!k)
    return -EOPNOTSUPP;
  if (!token || rdx_rc_qp_token_parse(token, token_len, &peer))
    return rdx_reason(why, whylen, -EINVAL,
                      "rc: x-amz-rdma-token is not a queue pair token (88 hex "
                      "digits)");
  if (!psn || rdx_rc_psn_parse(psn, psn_len, &peer_psn))
    return rdx_reason(why, whylen, -EINVAL,
                      "rc: x-amz-rdma-psn is missing, malformed or 0");
  rc = rdx_rc_peer_check(&peer, peer_psn, why, whylen);
  if (rc)
    return rc;
  my_psn = rdx_rc_psn_random();
  if (my_psn == 0)
    return rdx_reason(why, whylen, -EAGAIN, "rc: no randomness for a PSN");
  rc = sess_make(k, &peer, peer_psn, my_psn, &ss, why, whylen);
  if (rc)
    return rc == -EINVAL ? -EIO : rc; /* ours, not the client's, to blame */
  rc = -EEXIST;
  for (int i = 0; i < ID_TRIES && rc == -EEXIST; i++) {
    rc = rdx_rc_random(id, sizeof(id));
    if (!rc)
      rc = rdx_rc_table_add(k->tab, id, ss, clock_mono_ms());
  }
  if (rc) {
    sess_free(ss, k);
    if (rc == -ENOSPC)
      return rdx_reason(why, whylen, -ENOSPC, "rc: all %u sessions taken",
                        RDX_RC_TABLE_CAP);
    return rdx_reason(why, whylen, -EIO, "rc: no session id: %s",
                      strerror(-rc));
  }
  rdx_rc_qp_token_of(&k->dev, ss->qp, &mine);
  /* the table has ss now: nothing below fails for buffers of these sizes */
  if (rdx_rc_session_format(id, out->session, sizeof(out->session)) < 0 ||
      rdx_rc_reply_format(&mine, out->reply, sizeof(out->reply)) < 0 ||
      rdx_rc_psn_format(my_psn, out->psn, sizeof(out->psn)) < 0) {
    rdx_rc_table_remove(k->tab, id);
    return rdx_reason(why, whylen, -EIO, "rc: cannot write the answer");
  }
  return 0;
}

int rdx_rc_server_disconnect(struct rdx_server *s, const char *session,
                             size_t len)
{
  uint8_t id[RDX_RC_SESSION_BYTES];
  struct rc_server *k = rc_of(s, NULL, 0);

  if (!k)
    return -EOPNOTSUPP;
  if (!session || rdx_rc_session_parse(session, len, id))
    return -ENOENT;
  return rdx_rc_table_remove(k->tab, id);
}

unsigned rdx_rc_server_sessions(const struct rdx_server *s)
{
  struct rc_server *k = rc_of(s, NULL, 0);

  return k ? rdx_rc_table_count(k->tab) : 0;
}
