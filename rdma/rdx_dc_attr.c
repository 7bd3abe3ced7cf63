/*
 * rdx_dc_attr: the DC transport's pure decisions; the rules are in
 * rdx_dc_attr.h.
 */
#include "rdma/rdx_dc_attr.h"

#include <errno.h>
#include <string.h>

#include "rdma/rdx_reason.h"
#include "rdma/rdx_transport.h" /* RDX_DC_ACCESS_KEY_DEFAULT */

static bool all_zero(const uint8_t *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

uint32_t rdx_dc_access_key(uint32_t key)
{
  return key ? key : RDX_DC_ACCESS_KEY_DEFAULT;
}

/* ---- creation ----------------------------------------------------------- */

void rdx_dc_dct_init_attr(struct ibv_pd *pd, struct ibv_cq *cq,
                          struct ibv_srq *srq, uint32_t key,
                          struct ibv_qp_init_attr_ex *ia,
                          struct mlx5dv_qp_init_attr *dv)
{
  memset(ia, 0, sizeof(*ia));
  ia->qp_type = IBV_QPT_DRIVER;
  ia->send_cq = cq;
  ia->recv_cq = cq;
  ia->srq = srq;
  ia->pd = pd;
  ia->comp_mask = IBV_QP_INIT_ATTR_PD;
  /* a target sends nothing and receives through the SRQ: no capacities */
  memset(dv, 0, sizeof(*dv));
  dv->comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv->dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
  dv->dc_init_attr.dct_access_key = key;
}

void rdx_dc_dci_init_attr(struct ibv_pd *pd, struct ibv_cq *cq,
                          uint32_t send_wr, struct ibv_qp_init_attr_ex *ia,
                          struct mlx5dv_qp_init_attr *dv)
{
  memset(ia, 0, sizeof(*ia));
  ia->qp_type = IBV_QPT_DRIVER;
  ia->send_cq = cq;
  ia->recv_cq = cq;
  ia->pd = pd;
  ia->sq_sig_all = 0;
  ia->cap.max_send_wr = send_wr ? send_wr : 1;
  ia->cap.max_send_sge = 1;
  ia->comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ia->send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
  memset(dv, 0, sizeof(*dv));
  dv->comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
  dv->dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
}

/* ---- transitions -------------------------------------------------------- */

/* The local half of an address vector: port, and on RoCE (or when asked)
   the GRH's source GID index and hop limit. */
static void av_local(const struct rdx_rc_port *p, bool global,
                     struct ibv_ah_attr *ah)
{
  ah->port_num = p->port;
  ah->sl = 0;
  ah->src_path_bits = 0;
  if (global) {
    ah->is_global = 1;
    ah->grh.sgid_index = (uint8_t)p->gid_index;
    ah->grh.hop_limit = RDX_DC_HOP_LIMIT;
  }
}

void rdx_dc_attr_dct_init(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                          int *mask)
{
  /* exactly an RC queue pair's INIT, which is also the kernel's required
     set for a DCT: port, pkey 0, remote read and write */
  rdx_rc_attr_init(p, a, mask);
}

void rdx_dc_attr_dct_rtr(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                         int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_RTR;
  a->path_mtu = p->mtu;
  a->min_rnr_timer = RDX_DC_MIN_RNR_TIMER;
  /* the DCT answers from this GID index (the kernel's my_addr_index) */
  av_local(p, true, &a->ah_attr);
  *mask = IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV | IBV_QP_PATH_MTU;
}

void rdx_dc_attr_dci_init(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                          int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_INIT;
  a->pkey_index = 0;
  a->port_num = p->port;
  *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
}

void rdx_dc_attr_dci_rtr(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                         int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_RTR;
  a->path_mtu = p->mtu;
  av_local(p, p->roce, &a->ah_attr);
  *mask = IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV;
}

void rdx_dc_attr_dci_rts(struct ibv_qp_attr *a, int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_RTS;
  a->sq_psn = 0;
  a->timeout = RDX_DC_TIMEOUT;
  a->retry_cnt = RDX_DC_RETRY_CNT;
  a->rnr_retry = RDX_DC_RNR_RETRY;
  a->max_rd_atomic = RDX_DC_RD_ATOMIC;
  *mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
          IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
}

/* ---- the peer ----------------------------------------------------------- */

int rdx_dc_ah_attr(const struct rdx_rc_port *p, const struct rdx_token *tok,
                   struct ibv_ah_attr *ah, char *why, size_t whylen)
{
  memset(ah, 0, sizeof(*ah));
  if (!tok || tok->kind != RDX_DC)
    return rdx_reason(why, whylen, -EINVAL, "dc: not a dc token");
  if (tok->dc.has_gid && all_zero(tok->dc.gid, sizeof(tok->dc.gid)))
    return rdx_reason(why, whylen, -EINVAL, "dc: the token's GID is zero");
  if (p->roce && !tok->dc.has_gid)
    return rdx_reason(why, whylen, -EINVAL,
                      "dc: the token has no GID, and this server's port is "
                      "RoCE (it routes by GID only)");
  if (!p->roce && tok->dc.lid == 0)
    return rdx_reason(why, whylen, -EINVAL,
                      "dc: the token has LID 0, and this server's port is "
                      "InfiniBand (it needs the client's LID)");
  av_local(p, tok->dc.has_gid, ah);
  if (tok->dc.has_gid)
    memcpy(ah->grh.dgid.raw, tok->dc.gid, 16);
  ah->dlid = p->roce ? 0 : tok->dc.lid;
  return 0;
}

int rdx_dc_token_of(const struct rdx_rc_port *p, uint32_t dctn, uint32_t rkey,
                    uint64_t addr, uint64_t len, struct rdx_token *tok)
{
  memset(tok, 0, sizeof(*tok));
  tok->kind = RDX_DC;
  tok->op = RDX_OP_NONE;
  tok->addr = addr;
  tok->len = len;
  tok->dc.rkey = rkey;
  tok->dc.lid = p->roce ? 0 : p->lid;
  tok->dc.dctn = dctn;
  tok->dc.has_gid = !all_zero(p->gid, sizeof(p->gid));
  memcpy(tok->dc.gid, p->gid, sizeof(tok->dc.gid));
  /* what rdx_token_check asks of a token before a server executes it */
  if (dctn == 0 || rdx_token_validate(tok, NULL, 0) != 0 ||
      (!tok->dc.has_gid && tok->dc.lid == 0)) {
    memset(tok, 0, sizeof(*tok));
    return -EINVAL;
  }
  return 0;
}

uint64_t rdx_dc_remote_addr(const struct rdx_token *tok, uint64_t token_off)
{
  return (tok->dc.has_xfer ? tok->dc.xfer_addr : tok->addr) + token_off;
}

/* ---- devices and completions -------------------------------------------- */

int rdx_dc_pick(const char *const *names, const bool *is_mlx5, size_t n,
                const char *who, char *err, size_t errlen)
{
  char have[256];

  if (n == 0)
    return rdx_reason(err, errlen, -ENODEV, "%s: no RDMA device", who);
  for (size_t i = 0; i < n; i++)
    if (is_mlx5[i])
      return (int)i;
  rdx_rc_names(names, n, have, sizeof(have));
  return rdx_reason(err, errlen, -ENODEV,
                    "%s: no mlx5 device (devices here: %s)", who, have);
}

int rdx_dc_wc_failed(enum ibv_wc_status st, char *why, size_t whylen)
{
  const char *s = ibv_wc_status_str(st);

  switch (st) {
  case IBV_WC_REM_ACCESS_ERR:
  case IBV_WC_REM_INV_REQ_ERR:
    return rdx_reason(why, whylen, -EFAULT,
                      "dc: the client refused its memory key or range (%s)",
                      s);
  case IBV_WC_RETRY_EXC_ERR:
  case IBV_WC_RNR_RETRY_EXC_ERR:
    return rdx_reason(why, whylen, -ECONNRESET,
                      "dc: the client's DCT does not answer (gone, or a wrong "
                      "DCT number or access key) (%s)",
                      s);
  case IBV_WC_WR_FLUSH_ERR:
    return rdx_reason(why, whylen, -EIO,
                      "dc: the transfer was flushed (the DCI is in error) "
                      "(%s)",
                      s);
  default:
    return rdx_reason(why, whylen, -EIO, "dc: transfer failed (%s)", s);
  }
}
