/*
 * rdx_dc_server: the DC transport's server half: its row of rdx_server.c's
 * kinds table (struct rdx_server_ops rdx_dc_server_ops); see
 * rdx_dc_server.h.
 *
 * DESIGN (threads): struct dc_server's device, PD, MR, span and key are
 * immutable from open to close. Its DCI pool (idle list, count) is
 * protected by mu; a thread waits on cv for a DCI when all cap exist and
 * are taken. A DCI taken (struct dci) belongs to that thread alone: it
 * posts on it, polls its CQ and keeps its cached address handle without
 * the mutex, then puts it back, or destroys it (outside the mutex) after
 * a failure and gives its place back. cfg_mu protects the configuration
 * (a leaf lock, never held with mu).
 */
#include "rdma/rdx_dc_server.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/slog.h"
#include "rdma/rdx_dc_attr.h"
#include "rdma/rdx_dc_verbs.h"
#include "rdma/rdx_helper.h"
#include "rdma/rdx_i.h"
#include "rdma/rdx_reason.h"

#define WHO "dc tokens"
#define DCI_WR 1        /* one chunk at a time per DCI */

/* ---- configuration ------------------------------------------------------ */

static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rdx_rc_cfg_copy cfg_saved = RDX_RC_CFG_COPY_INIT; /* protected
                                                                   by cfg_mu */
static uint32_t cfg_key;                    /* protected by cfg_mu */

int rdx_dc_server_set_cfg(const struct rdx_rc_dev_cfg *cfg, uint32_t access_key)
{
  int rc;

  pthread_mutex_lock(&cfg_mu);
  rc = rdx_rc_cfg_copy(&cfg_saved, cfg);
  if (!rc)
    cfg_key = access_key;
  pthread_mutex_unlock(&cfg_mu);
  return rc;
}

/* ---- the kind ----------------------------------------------------------- */

struct dci {
  struct rdx_dc_dci q;
  struct dci *next;        /* protected by the pool's mu while idle */
  uint64_t wr_id;          /* chunks posted */
  /* the address handle of the last client reached, and its address */
  struct ibv_ah *ah;
  struct ibv_ah_attr ah_attr;
};

struct dc_server {
  struct rdx_server_kind base; /* first: the ops see a struct rdx_server_kind */
  struct rdx_rc_dev dev;
  struct ibv_mr *mr;           /* the server's chunk buffers, all of them */
  uint64_t lo, hi;             /* [lo, hi): what mr covers */
  uint32_t key;                /* the clients' DCT access key */
  unsigned cap;                /* DCIs at most: one per chunk buffer */
  pthread_mutex_t mu;
  pthread_cond_t cv;           /* a DCI was put back or its place freed */
  struct dci *idle;            /* protected by mu */
  unsigned n;                  /* DCIs made, idle or taken; protected by mu */
};

static void dci_free(struct dci *d)
{
  /* the queue pair first: a work request still outstanding (a chunk that
     timed out) may name the address handle */
  rdx_dc_dci_destroy(&d->q);
  if (d->ah)
    ibv_destroy_ah(d->ah);
  free(d);
}

static int dc_srv_open(struct rdx_helpers *h, struct rdx_server_kind **out,
                       char *why, size_t whylen)
{
  struct dc_server *k;
  size_t arena_len;
  void *arena;
  int rc;

  *out = NULL;
  k = calloc(1, sizeof(*k));
  if (!k)
    return rdx_reason(why, whylen, -ENOMEM, WHO ": out of memory");
  k->base.ops = &rdx_dc_server_ops;
  pthread_mutex_lock(&cfg_mu);
  k->key = rdx_dc_access_key(cfg_key);
  rc = rdx_dc_dev_open(&cfg_saved.cfg, WHO, &k->dev, why, whylen);
  pthread_mutex_unlock(&cfg_mu);
  if (rc) {
    rc = rc == -ENOMEM ? rc : -EOPNOTSUPP;
    goto free_k;
  }
  rdx_helpers_arena(h, &arena, &arena_len, &k->cap);
  k->lo = (uint64_t)(uintptr_t)arena;
  k->hi = k->lo + arena_len;
  if (k->cap == 0) {
    rc = rdx_reason(why, whylen, -ENOMEM, WHO ": cannot find the chunk "
                    "buffers");
    goto close_dev;
  }
  k->mr = rdx_rc_reg_local(&k->dev, (void *)(uintptr_t)k->lo,
                     (size_t)(k->hi - k->lo));
  if (!k->mr) {
    rc = rdx_reason(why, whylen, -EOPNOTSUPP,
                    WHO ": %s: cannot register the chunk buffers (%" PRIu64
                    " bytes): %s",
                    k->dev.name, k->hi - k->lo, strerror(errno));
    goto close_dev;
  }
  if ((rc = pthread_mutex_init(&k->mu, NULL)) != 0) {
    rc = rdx_reason(why, whylen, -ENOMEM, WHO ": pthread_mutex_init: %s",
                    strerror(rc));
    goto dereg;
  }
  /* a condition variable either way (on the wall clock only if
     CLOCK_MONOTONIC is refused, which Linux never does) */
  (void)clock_cond_init(&k->cv);
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

/* Every DCI is idle: the server's callers have finished. */
static void dc_srv_close(struct rdx_server_kind *base)
{
  struct dc_server *k = (struct dc_server *)base;

  while (k->idle) {
    struct dci *d = k->idle;

    k->idle = d->next;
    dci_free(d);
  }
  pthread_cond_destroy(&k->cv);
  pthread_mutex_destroy(&k->mu);
  ibv_dereg_mr(k->mr);
  rdx_rc_dev_close(&k->dev);
  free(k);
}

/* ---- the DCI pool ------------------------------------------------------- */

/* A DCI for one chunk, waiting until bound (CLOCK_MONOTONIC ms) when all
   cap are taken. 0 and *out, or a negative errno with why. */
static int dci_take(struct dc_server *k, uint64_t bound, struct dci **out,
                    char *why, size_t whylen)
{
  struct timespec at = clock_at(bound);
  char w[RDX_ERR_MAX];
  struct dci *d;
  int rc = 0;

  *out = NULL;
  pthread_mutex_lock(&k->mu);
  while (!k->idle && k->n >= k->cap && rc == 0)
    rc = pthread_cond_timedwait(&k->cv, &k->mu, &at);
  if (k->idle) {
    d = k->idle;
    k->idle = d->next;
    d->next = NULL;
    pthread_mutex_unlock(&k->mu);
    *out = d;
    return 0;
  }
  if (k->n >= k->cap) {
    pthread_mutex_unlock(&k->mu);
    return rdx_reason(why, whylen, -EAGAIN, "dc: all %u DCIs busy", k->cap);
  }
  k->n++; /* the place is ours: make the DCI without the mutex */
  pthread_mutex_unlock(&k->mu);
  d = calloc(1, sizeof(*d));
  rc = d ? rdx_dc_dci_create(&k->dev, DCI_WR, &d->q, w, sizeof(w)) : -ENOMEM;
  if (rc) {
    rdx_reason(why, whylen, rc, "dc: %s: cannot make a DCI: %s", k->dev.name,
               d ? w : "out of memory");
    free(d);
    pthread_mutex_lock(&k->mu);
    k->n--;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    return rc;
  }
  *out = d;
  return 0;
}

/* Give d back; broken: destroy it first (its work is cut off, so nothing
   touches the chunk buffer once this returns) and free its place. */
static void dci_put(struct dc_server *k, struct dci *d, bool broken)
{
  if (broken)
    dci_free(d);
  pthread_mutex_lock(&k->mu);
  if (broken) {
    k->n--;
  } else {
    d->next = k->idle;
    k->idle = d;
  }
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&k->mu);
}

/* d's address handle for attr: the cached one when it is the same client. */
static int dci_ah(struct dc_server *k, struct dci *d,
                  const struct ibv_ah_attr *attr, char *why, size_t whylen)
{
  if (d->ah && memcmp(&d->ah_attr, attr, sizeof(*attr)) == 0)
    return 0;
  if (d->ah)
    ibv_destroy_ah(d->ah);
  d->ah = ibv_create_ah(k->dev.pd, (struct ibv_ah_attr *)attr);
  if (!d->ah) {
    memset(&d->ah_attr, 0, sizeof(d->ah_attr));
    return rdx_reason(why, whylen, -EHOSTUNREACH,
                      "dc: no address handle for the client: %s",
                      strerror(errno));
  }
  memcpy(&d->ah_attr, attr, sizeof(d->ah_attr)); /* padding too: memcmp */
  return 0;
}

/* ---- check and move ----------------------------------------------------- */

static int dc_srv_check(struct rdx_server_kind *base,
                        const struct rdx_token *tok, const struct rdx_req *req,
                        uint64_t until, char *why, size_t whylen)
{
  struct dc_server *k = (struct dc_server *)base;
  struct ibv_ah_attr ah;

  /* can this port reach the client the token names? no verbs call */
  return rdx_dc_ah_attr(&k->dev.port, tok, &ah, why, whylen);
}

static int dc_srv_move(struct rdx_server_kind *base,
                       const struct rdx_token *tok, const struct rdx_req *req,
                       uint64_t token_off, void *local, size_t len,
                       uint64_t until, char *why, size_t whylen)
{
  struct dc_server *k = (struct dc_server *)base;
  uint64_t l = (uint64_t)(uintptr_t)local, bound;
  struct ibv_ah_attr attr;
  struct ibv_wc wc;
  struct dci *d;
  int rc;

  if (l < k->lo || l >= k->hi || len > k->hi - l || len > UINT32_MAX)
    return rdx_reason(why, whylen, -EINVAL,
                      "dc: the local side is not in the server's chunk "
                      "buffers");
  rc = rdx_dc_ah_attr(&k->dev.port, tok, &attr, why, whylen);
  if (rc)
    return rc;
  bound = clock_mono_ms() + RDX_DC_CHUNK_MS;
  if (until && until < bound)
    bound = until;
  rc = dci_take(k, bound, &d, why, whylen);
  if (rc)
    return rc;
  rc = dci_ah(k, d, &attr, why, whylen);
  if (rc) {
    dci_put(k, d, false);
    return rc;
  }
  ibv_wr_start(d->q.qpx);
  d->q.qpx->wr_id = ++d->wr_id;
  d->q.qpx->wr_flags = IBV_SEND_SIGNALED;
  if (req->op == RDX_GET)
    ibv_wr_rdma_write(d->q.qpx, tok->dc.rkey, rdx_dc_remote_addr(tok, token_off));
  else
    ibv_wr_rdma_read(d->q.qpx, tok->dc.rkey, rdx_dc_remote_addr(tok, token_off));
  mlx5dv_wr_set_dc_addr(d->q.mqpx, d->ah, tok->dc.dctn, k->key);
  ibv_wr_set_sge(d->q.qpx, k->mr->lkey, l, (uint32_t)len);
  rc = ibv_wr_complete(d->q.qpx);
  if (rc) {
    rc = rdx_reason(why, whylen, -EIO, "dc: cannot post the transfer: %s",
                    strerror(rc));
    goto release;
  }
  rc = rdx_rc_wait_wc(d->q.cq, bound, &wc);
  if (rc == -ETIMEDOUT)
    rdx_reason(why, whylen, rc,
               "dc: the transfer did not finish in time (30 s a chunk, or "
               "the token's deadline)");
  else if (rc)
    rdx_reason(why, whylen, rc, "dc: polling the completion queue failed");
  else if (wc.status != IBV_WC_SUCCESS)
    rc = rdx_dc_wc_failed(wc.status, why, whylen);
  else if (wc.wr_id != d->wr_id)
    rc = rdx_reason(why, whylen, -EIO, "dc: a completion for another chunk");
release:
  if (rc)
    log_info("dc: DCI dropped after a failed %s of %zu bytes: %s",
             req->op == RDX_GET ? "write" : "read", len, why ? why : "");
  dci_put(k, d, rc != 0);
  return rc;
}

const struct rdx_server_ops rdx_dc_server_ops = {
    .kind = RDX_DC,
    .open = dc_srv_open,
    .check = dc_srv_check,
    .move = dc_srv_move,
    .close = dc_srv_close,
};
