/*
 * rdx_dc_verbs: the device-bound pieces both halves of the DC transport
 * share: opening an mlx5 device (by name or address, as rdx_rc_verbs
 * does, refusing any other), a DCT in RTR with its CQ and SRQ (the
 * client's), and a DCI in RTS with its CQ (the server's). The attributes
 * come from rdx_dc_attr.
 *
 * Without an mlx5 device every open fails with -ENODEV and one line:
 * "<who>: no RDMA device (...)" or "<who>: no mlx5 device (devices here:
 * rxe0)". mlx5dv_is_supported tells an mlx5 device from others.
 *
 * No global state; every function may run on any thread.
 */
#ifndef S3R_RDX_DC_VERBS_H
#define S3R_RDX_DC_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "rdma/rdx_rc_verbs.h" /* struct rdx_rc_dev, struct rdx_rc_dev_cfg */

/* A DCT and what it needs: its CQ and SRQ. */
struct rdx_dc_dct {
  struct ibv_cq *cq;
  struct ibv_srq *srq;
  struct ibv_qp *qp; /* in RTR; qp->qp_num is the DCT number */
};

/* A DCI and its CQ, with the ibv_wr_* handles for posting. */
struct rdx_dc_dci {
  struct ibv_cq *cq;
  struct ibv_qp *qp; /* in RTS */
  struct ibv_qp_ex *qpx;
  struct mlx5dv_qp_ex *mqpx;
};

/*
 * Open the mlx5 device cfg names (NULL or no names: the first mlx5 device
 * there is), as rdx_rc_dev_open: its port, GID and a PD. who prefixes
 * every reason ("dc", "dc tokens"). Returns 0, or -ENODEV (no verbs, no
 * device, no mlx5 device, a name or address that matches none, a device
 * named that is not mlx5, port down, no GID), -EINVAL (a bad spec) or
 * -ENOMEM, with one line in err; d is then zeroed.
 */
int rdx_dc_dev_open(const struct rdx_rc_dev_cfg *cfg, const char *who,
                    struct rdx_rc_dev *d, char *err, size_t errlen);

/*
 * A DCT on d with access key key (as given), moved to INIT and RTR. 0 and
 * *t, or a negative errno with why; t is then zeroed.
 */
int rdx_dc_dct_create(struct rdx_rc_dev *d, uint32_t key,
                      struct rdx_dc_dct *t, char *why, size_t whylen);
/* Destroy t's queue pair, SRQ and CQ (those there are); zeroes t. */
void rdx_dc_dct_destroy(struct rdx_dc_dct *t);

/*
 * A DCI on d with a CQ of its own, at most send_wr work requests (1 or
 * more), moved to INIT, RTR and RTS. 0 and *c, or a negative errno with
 * why; c is then zeroed.
 */
int rdx_dc_dci_create(struct rdx_rc_dev *d, uint32_t send_wr,
                      struct rdx_dc_dci *c, char *why, size_t whylen);
/* Destroy c's queue pair and CQ (those there are); zeroes c. */
void rdx_dc_dci_destroy(struct rdx_dc_dci *c);

#endif
