/*
 * rdx_dc_verbs: mlx5 devices, DCTs and DCIs; see rdx_dc_verbs.h.
 */
#include "rdma/rdx_dc_verbs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rdma/rdx_dc_attr.h"
#include "rdma/rdx_reason.h"

#define NAMES_MAX 64 /* devices looked at for "devices here" */

/* ---- devices ------------------------------------------------------------ */

/* The first mlx5 device's name into name: 0, or -ENODEV with err. */
static int first_mlx5(const char *who, char *name, size_t namelen, char *err,
                      size_t errlen)
{
  const char *names[NAMES_MAX];
  bool mlx5[NAMES_MAX];
  struct ibv_device **list;
  int n = 0, idx;

  errno = 0;
  list = ibv_get_device_list(&n);
  if (!list)
    return rdx_reason(err, errlen, -ENODEV, "%s: no RDMA device (%s)", who,
                      errno == ENOSYS ? "no verbs in the kernel: ib_uverbs "
                                        "not loaded"
                                      : strerror(errno ? errno : ENODEV));
  if (n > NAMES_MAX)
    n = NAMES_MAX;
  for (int i = 0; i < n; i++) {
    names[i] = ibv_get_device_name(list[i]);
    mlx5[i] = mlx5dv_is_supported(list[i]);
  }
  idx = rdx_dc_pick(names, mlx5, n > 0 ? (size_t)n : 0, who, err, errlen);
  if (idx >= 0)
    snprintf(name, namelen, "%s", names[idx] ? names[idx] : "");
  ibv_free_device_list(list);
  return idx < 0 ? idx : 0;
}

int rdx_dc_dev_open(const struct rdx_rc_dev_cfg *cfg, const char *who,
                    struct rdx_rc_dev *d, char *err, size_t errlen)
{
  struct rdx_rc_dev_cfg one = {NULL, 0, -1, 0};
  char name[64];
  const char *names[1];
  int rc;

  memset(d, 0, sizeof(*d));
  if (!cfg || cfg->ndevices == 0) {
    /* no name: the first mlx5 device, not the first device */
    rc = first_mlx5(who, name, sizeof(name), err, errlen);
    if (rc)
      return rc;
    names[0] = name;
    if (cfg)
      one = *cfg;
    one.devices = names;
    one.ndevices = 1;
    cfg = &one;
  }
  rc = rdx_rc_dev_open(cfg, who, d, err, errlen);
  if (rc)
    return rc;
  if (!mlx5dv_is_supported(d->ctx->device)) {
    rc = rdx_reason(err, errlen, -ENODEV,
                    "%s: %s is not an mlx5 device (DC needs one)", who,
                    d->name);
    rdx_rc_dev_close(d);
    return rc;
  }
  return 0;
}

/* ---- DCT ---------------------------------------------------------------- */

int rdx_dc_dct_create(struct rdx_rc_dev *d, uint32_t key,
                      struct rdx_dc_dct *t, char *why, size_t whylen)
{
  struct ibv_srq_init_attr sa;
  struct ibv_qp_init_attr_ex ia;
  struct mlx5dv_qp_init_attr dv;
  struct ibv_qp_attr a;
  int mask, rc;

  memset(t, 0, sizeof(*t));
  t->cq = ibv_create_cq(d->ctx, RDX_DC_DCT_CQE, NULL, NULL, 0);
  if (!t->cq)
    return rdx_reason(why, whylen, errno ? -errno : -ENOMEM,
                      "ibv_create_cq: %s", strerror(errno));
  memset(&sa, 0, sizeof(sa));
  sa.attr.max_wr = RDX_DC_DCT_SRQ_WR;
  sa.attr.max_sge = 1;
  t->srq = ibv_create_srq(d->pd, &sa);
  if (!t->srq) {
    rc = rdx_reason(why, whylen, errno ? -errno : -ENOMEM,
                    "ibv_create_srq: %s", strerror(errno));
    goto destroy_cq;
  }
  rdx_dc_dct_init_attr(d->pd, t->cq, t->srq, key, &ia, &dv);
  t->qp = mlx5dv_create_qp(d->ctx, &ia, &dv);
  if (!t->qp) {
    rc = rdx_reason(why, whylen, errno ? -errno : -ENOMEM,
                    "mlx5dv_create_qp (DCT): %s", strerror(errno));
    goto destroy_srq;
  }
  rdx_dc_attr_dct_init(&d->port, &a, &mask);
  if ((rc = ibv_modify_qp(t->qp, &a, mask)) != 0) {
    rc = rdx_reason(why, whylen, -rc, "DCT to INIT: %s", strerror(rc));
    goto destroy_qp;
  }
  rdx_dc_attr_dct_rtr(&d->port, &a, &mask);
  if ((rc = ibv_modify_qp(t->qp, &a, mask)) != 0) {
    rc = rdx_reason(why, whylen, -rc, "DCT to RTR: %s", strerror(rc));
    goto destroy_qp;
  }
  if (t->qp->qp_num == 0 || t->qp->qp_num > 0xffffff) {
    rc = rdx_reason(why, whylen, -EIO, "DCT number 0x%x is not 24-bit",
                    (unsigned)t->qp->qp_num);
    goto destroy_qp;
  }
  return 0;

destroy_qp:
  ibv_destroy_qp(t->qp);
destroy_srq:
  ibv_destroy_srq(t->srq);
destroy_cq:
  ibv_destroy_cq(t->cq);
  memset(t, 0, sizeof(*t));
  return rc;
}

void rdx_dc_dct_destroy(struct rdx_dc_dct *t)
{
  if (!t)
    return;
  if (t->qp)
    ibv_destroy_qp(t->qp);
  if (t->srq)
    ibv_destroy_srq(t->srq);
  if (t->cq)
    ibv_destroy_cq(t->cq);
  memset(t, 0, sizeof(*t));
}

/* ---- DCI ---------------------------------------------------------------- */

int rdx_dc_dci_create(struct rdx_rc_dev *d, uint32_t send_wr,
                      struct rdx_dc_dci *c, char *why, size_t whylen)
{
  struct ibv_qp_init_attr_ex ia;
  struct mlx5dv_qp_init_attr dv;
  struct ibv_qp_attr a;
  int mask, rc;

  memset(c, 0, sizeof(*c));
  c->cq = ibv_create_cq(d->ctx, (int)(send_wr ? send_wr : 1), NULL, NULL, 0);
  if (!c->cq)
    return rdx_reason(why, whylen, errno ? -errno : -ENOMEM,
                      "ibv_create_cq: %s", strerror(errno));
  rdx_dc_dci_init_attr(d->pd, c->cq, send_wr, &ia, &dv);
  c->qp = mlx5dv_create_qp(d->ctx, &ia, &dv);
  if (!c->qp) {
    rc = rdx_reason(why, whylen, errno ? -errno : -ENOMEM,
                    "mlx5dv_create_qp (DCI): %s", strerror(errno));
    goto destroy_cq;
  }
  rdx_dc_attr_dci_init(&d->port, &a, &mask);
  if ((rc = ibv_modify_qp(c->qp, &a, mask)) != 0) {
    rc = rdx_reason(why, whylen, -rc, "DCI to INIT: %s", strerror(rc));
    goto destroy_qp;
  }
  rdx_dc_attr_dci_rtr(&d->port, &a, &mask);
  if ((rc = ibv_modify_qp(c->qp, &a, mask)) != 0) {
    rc = rdx_reason(why, whylen, -rc, "DCI to RTR: %s", strerror(rc));
    goto destroy_qp;
  }
  rdx_dc_attr_dci_rts(&a, &mask);
  if ((rc = ibv_modify_qp(c->qp, &a, mask)) != 0) {
    rc = rdx_reason(why, whylen, -rc, "DCI to RTS: %s", strerror(rc));
    goto destroy_qp;
  }
  c->qpx = ibv_qp_to_qp_ex(c->qp);
  c->mqpx = c->qpx ? mlx5dv_qp_ex_from_ibv_qp_ex(c->qpx) : NULL;
  if (!c->mqpx) {
    rc = rdx_reason(why, whylen, -EOPNOTSUPP,
                    "the DCI has no ibv_wr_* interface");
    goto destroy_qp;
  }
  return 0;

destroy_qp:
  ibv_destroy_qp(c->qp);
destroy_cq:
  ibv_destroy_cq(c->cq);
  memset(c, 0, sizeof(*c));
  return rc;
}

void rdx_dc_dci_destroy(struct rdx_dc_dci *c)
{
  if (!c)
    return;
  if (c->qp)
    ibv_destroy_qp(c->qp);
  if (c->cq)
    ibv_destroy_cq(c->cq);
  memset(c, 0, sizeof(*c));
}
