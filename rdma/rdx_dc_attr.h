/*
 * rdx_dc_attr: what the DC transport (mlx5 Dynamically Connected, the
 * cuObject protocol) decides without a device, as pure functions, so that
 * its state transitions and its wire format are unit-tested on a host
 * with no mlx5: the creation attributes of a DCT (the client's target) and
 * a DCI (the server's initiator), the attributes and mask of each
 * transition (DCT: INIT, RTR; DCI: INIT, RTR, RTS), the address handle a
 * DCI reaches a client by (from its token's LID and GID), the cuObject
 * token a client makes for a registered range, where a chunk lands in the
 * client, which device is the mlx5 one, and what a failed completion means.
 *
 * The device, port and GID facts come from rdx_rc_verbs (struct
 * rdx_rc_port), the verbs layer both verbs kinds share.
 *
 * Facts taken from rdma-core (mlx5dv.h, mlx5dv_create_qp(3)) and the
 * kernel's mlx5_ib_modify_dct: a DCT is created with an SRQ and its access
 * key; INIT takes exactly state, pkey index, port and access flags; RTR
 * exactly state, min RNR timer, address vector (its GRH gives the source
 * GID index and hop limit) and path MTU; the DCT number exists only after
 * RTR (the provider then sets qp_num to it). A DCI needs no peer at any
 * transition: the destination (address handle, DCT number, access key) is
 * set per work request with mlx5dv_wr_set_dc_addr.
 *
 * No I/O, no allocation, no global state; thread-safe.
 */
#ifndef S3R_RDX_DC_ATTR_H
#define S3R_RDX_DC_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "rdma/rdx_rc_verbs.h" /* struct rdx_rc_port */
#include "rdma/rdx_token.h"

/* Values of the DC queue pairs (as the RC dialect's, rdx_rc_verbs.h). */
#define RDX_DC_HOP_LIMIT 64
#define RDX_DC_MIN_RNR_TIMER 12
#define RDX_DC_TIMEOUT 14  /* 4.096 us * 2^14: about 67 ms per try */
#define RDX_DC_RETRY_CNT 7
#define RDX_DC_RNR_RETRY 7
#define RDX_DC_RD_ATOMIC 1 /* a DCI's RDMA READs in flight: one WR at a time */
#define RDX_DC_DCT_CQE 16  /* the DCT's CQ and SRQ: nothing is received */
#define RDX_DC_DCT_SRQ_WR 16

/* The access key a DCT is made with and a DCI sends: key, or
   RDX_DC_ACCESS_KEY_DEFAULT (rdx_transport.h) when key is 0. */
uint32_t rdx_dc_access_key(uint32_t key);

/*
 * Creation attributes for mlx5dv_create_qp: a DCT on cq (send and
 * receive) and srq with access key key (as given: pass it through
 * rdx_dc_access_key first); a DCI on cq sending up to send_wr (1 or more)
 * work requests of one SGE, with the ibv_wr_* RDMA WRITE and READ.
 */
void rdx_dc_dct_init_attr(struct ibv_pd *pd, struct ibv_cq *cq,
                          struct ibv_srq *srq, uint32_t key,
                          struct ibv_qp_init_attr_ex *ia,
                          struct mlx5dv_qp_init_attr *dv);
void rdx_dc_dci_init_attr(struct ibv_pd *pd, struct ibv_cq *cq,
                          uint32_t send_wr, struct ibv_qp_init_attr_ex *ia,
                          struct mlx5dv_qp_init_attr *dv);

/* The attributes and mask of each transition of a DCT on port p: INIT
   (remote read and write), RTR (p's MTU, GID index, hop limit). */
void rdx_dc_attr_dct_init(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                          int *mask);
void rdx_dc_attr_dct_rtr(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                         int *mask);

/* ... and of a DCI on port p: INIT, RTR (p's MTU; on RoCE a GRH from p's
   GID index), RTS (timeouts, retries, one read in flight, PSN 0). */
void rdx_dc_attr_dci_init(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                          int *mask);
void rdx_dc_attr_dci_rtr(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                         int *mask);
void rdx_dc_attr_dci_rts(struct ibv_qp_attr *a, int *mask);

/*
 * The address handle attributes a DCI on port p reaches the client of DC
 * token tok by: with a GID (has_gid) a global route to it from p's GID
 * index, plus the token's LID on InfiniBand; without, the LID alone. 0, or
 * -EINVAL with why: tok not DC, or the client unreachable from p (RoCE
 * routes by GID only; InfiniBand needs a LID).
 */
int rdx_dc_ah_attr(const struct rdx_rc_port *p, const struct rdx_token *tok,
                   struct ibv_ah_attr *ah, char *why, size_t whylen);

/*
 * The cuObject token a client whose DCT number is dctn (on port p) makes
 * for [addr, addr + len) of a registration with rkey: 81 characters once
 * formatted (no NIXL suffix, no operation), the port's LID (0 on RoCE),
 * has_gid when the port's GID is not all zero. 0, or -EINVAL (dctn 0 or
 * over 24 bits, len 0 or over RDX_DC_LEN_MAX, the range wraps, or the
 * client unreachable: neither GID nor LID); *tok is then zeroed.
 */
int rdx_dc_token_of(const struct rdx_rc_port *p, uint32_t dctn, uint32_t rkey,
                    uint64_t addr, uint64_t len, struct rdx_token *tok);

/* Where the chunk at token_off of a request lands in the client: the
   transfer's address (the NIXL form's xaddr) when the token has one, else
   the buffer's, plus token_off. */
uint64_t rdx_dc_remote_addr(const struct rdx_token *tok, uint64_t token_off);

/*
 * The first mlx5 device among n (names[i], is_mlx5[i]): its index, or
 * -ENODEV with err "<who>: no RDMA device" (n 0) or "<who>: no mlx5 device
 * (devices here: a, b)".
 */
int rdx_dc_pick(const char *const *names, const bool *is_mlx5, size_t n,
                const char *who, char *err, size_t errlen);

/*
 * A failed DCI completion as rdx_serve's errno and reason (why, prefixed
 * "dc: "): -EFAULT (the client refused the key or range), -ECONNRESET (no
 * answer from the client's DCT: gone, wrong DCT number or access key),
 * -EIO (flushed, or another error).
 */
int rdx_dc_wc_failed(enum ibv_wc_status st, char *why, size_t whylen);

#endif
