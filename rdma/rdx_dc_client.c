/*
 * rdx_dc_client: the DC transport's client half; see rdx_dc_client.h.
 *
 * DESIGN (threads): struct dc_client is immutable from open to close; reg
 * and unreg touch only their segment; token reads the port and the DCT
 * number. No lock.
 */
#include "rdma/rdx_dc_client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rdx_dc_attr.h"
#include "rdma/rdx_dc_verbs.h"
#include "rdma/rdx_i.h"
#include "rdma/rdx_reason.h"

struct dc_client {
  struct rdx_transport base; /* first: the ops see a struct rdx_transport */
  struct rdx_rc_dev dev;
  struct rdx_dc_dct dct;
  uint32_t key;              /* the DCT's access key */
};

static int dc_reg(struct rdx_transport *t, struct rdx_seg *seg)
{
  struct dc_client *c = (struct dc_client *)t;

  return rdx_rc_reg_seg(&c->dev, seg);
}

static int dc_reg_dmabuf(struct rdx_transport *t, struct rdx_seg *seg)
{
  struct dc_client *c = (struct dc_client *)t;

  return rdx_rc_reg_dmabuf_seg(&c->dev, seg);
}

static void dc_unreg(struct rdx_transport *t, struct rdx_seg *seg)
{
  rdx_rc_unreg_seg(seg);
}

/* op was checked by rdx_token_for; DC tokens carry none. */
static int dc_token(struct rdx_transport *t, const struct rdx_seg *seg,
                    uint64_t addr, uint64_t len, enum rdx_op op,
                    struct rdx_token *tok)
{
  struct dc_client *c = (struct dc_client *)t;
  const struct ibv_mr *mr = seg->priv;

  if (!mr)
    return -EINVAL;
  return rdx_dc_token_of(&c->dev.port, c->dct.qp->qp_num, mr->rkey, addr, len,
                         tok);
}

static void dc_close(struct rdx_transport *t)
{
  struct dc_client *c = (struct dc_client *)t;

  rdx_dc_dct_destroy(&c->dct);
  rdx_rc_dev_close(&c->dev);
  free(c);
}

static const struct rdx_transport_ops dc_ops = {
    .reg = dc_reg,
    .reg_dmabuf = dc_reg_dmabuf,
    .unreg = dc_unreg,
    .token = dc_token,
    .close = dc_close,
};

int rdx_dc_transport_open(const struct rdx_rc_dev_cfg *cfg, uint32_t access_key,
                          struct rdx_transport **out, char *err, size_t errlen)
{
  char why[RDX_ERR_MAX];
  struct dc_client *c;
  int rc;

  rdx_reason(err, errlen, 0, "%s", "");
  if (!out)
    return rdx_reason(err, errlen, -EINVAL, "no place for the transport");
  *out = NULL;
  c = calloc(1, sizeof(*c));
  if (!c)
    return rdx_reason(err, errlen, -ENOMEM, "dc: out of memory");
  c->key = rdx_dc_access_key(access_key);
  rc = rdx_dc_dev_open(cfg, "dc", &c->dev, err, errlen);
  if (rc)
    goto free_c;
  rc = rdx_dc_dct_create(&c->dev, c->key, &c->dct, why, sizeof(why));
  if (rc) {
    rdx_reason(err, errlen, rc, "dc: %s: cannot make the DCT: %s",
               c->dev.name, why);
    goto close_dev;
  }
  c->base.ops = &dc_ops;
  c->base.kind = RDX_TRANSPORT_DC;
  *out = &c->base;
  return 0;

close_dev:
  rdx_rc_dev_close(&c->dev);
free_c:
  free(c);
  return rc;
}

uint32_t rdx_dc_transport_dctn(const struct rdx_transport *t)
{
  if (!t || t->ops != &dc_ops)
    return 0;
  return ((const struct dc_client *)t)->dct.qp->qp_num;
}

int rdx_dc_open(const struct rdx_params *p, struct rdx_transport **out,
                char *err, size_t errlen)
{
  const struct rdx_rc_dev_cfg *cfg;
  struct rdx_rc_cfg_buf b;
  int rc = rdx_rc_cfg_of(p, &b, &cfg, err, errlen);

  return rc ? rc : rdx_dc_transport_open(cfg, p ? p->dc_access_key : 0, out,
                                         err, errlen);
}
