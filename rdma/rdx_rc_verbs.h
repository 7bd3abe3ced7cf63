/*
 * rdx_rc_verbs: the verbs pieces both halves of the RC transport share:
 * opening a device (by name or by an address of its netdev), choosing its
 * GID, the queue pair's attributes at each step (INIT, RTR, RTS) as the RC
 * dialect wants them (docs/rdma.md, "RC dialect"), creating and
 * connecting an RC queue pair, and random PSNs and session ids.
 *
 * What needs no device is pure and unit-tested: rdx_rc_spec_parse,
 * rdx_rc_gid_pick, rdx_rc_port_from, rdx_rc_attr_*, rdx_rc_peer_check,
 * rdx_rc_names. The rest talks to libibverbs and fails cleanly without a
 * device: ibv_get_device_list returns NULL (ENOSYS: no ib_uverbs) or an
 * empty list, and both are -ENODEV with a reason.
 *
 * No global state; every function may run on any thread (a device's
 * context and PD are verbs objects, thread-safe in rdma-core).
 */
#ifndef S3R_RDX_RC_VERBS_H
#define S3R_RDX_RC_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "rdma/rdx_i.h"         /* struct rdx_seg */
#include "rdma/rdx_rc_client.h" /* struct rdx_rc_dev_cfg */
#include "rdma/rdx_rc_wire.h"

/* The dialect's QP attributes (elbencho's RcDevice createQueue/connectQueue). */
#define RDX_RC_PORT_DEFAULT 1
#define RDX_RC_HOP_LIMIT 64
#define RDX_RC_MIN_RNR_TIMER 12
#define RDX_RC_TIMEOUT 14  /* 4.096 us * 2^14: about 67 ms per try */
#define RDX_RC_RETRY_CNT 7
#define RDX_RC_RNR_RETRY 7
#define RDX_RC_RD_ATOMIC 1 /* max_rd_atomic and max_dest_rd_atomic */

/* One device spec: a verbs device's name, or an address as a GID. */
struct rdx_rc_spec {
  bool is_addr;
  char name[64];   /* the spec as given (for messages) */
  uint8_t gid[16]; /* is_addr: IPv4 as ::ffff:a.b.c.d, IPv6 as is */
};

/* One GID table entry as rdx_rc_gid_pick sees it. */
struct rdx_rc_gid_ent {
  bool valid;      /* the query succeeded and the GID is not all zero */
  int type;        /* IBV_GID_TYPE_IB, _ROCE_V1, _ROCE_V2 */
  uint8_t raw[16];
};

/* What the queue pairs of one device and port need to know. */
struct rdx_rc_port {
  uint8_t port;
  int gid_index;
  uint8_t gid[16];
  uint16_t lid;      /* 0 on RoCE */
  enum ibv_mtu mtu;  /* path MTU: the port's active MTU, at least 512 */
  bool roce;         /* link layer Ethernet */
};

/* An open device: context, protection domain, the port chosen. */
struct rdx_rc_dev {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct rdx_rc_port port;
  char name[64];
};

/* ---- pure --------------------------------------------------------------- */

/* A spec: an IPv4 or IPv6 address, else a device name (1..63 bytes of
   [A-Za-z0-9_.-]). 0, or -EINVAL. */
int rdx_rc_spec_parse(const char *s, struct rdx_rc_spec *out);

/* Is raw an IPv4-mapped GID (::ffff:a.b.c.d)? */
bool rdx_rc_gid_v4mapped(const uint8_t raw[16]);

/*
 * Choose a GID index from a port's table of n entries:
 *  - want >= 0: that index, if it is in the table and valid;
 *  - addr (not NULL): the entry equal to it, RoCE v2 before others;
 *  - else: the first RoCE v2 IPv4-mapped entry, then the first RoCE v2,
 *    then the first valid entry (InfiniBand: index 0).
 * Returns the index, or -ENOENT (none fits) with a reason in why.
 */
int rdx_rc_gid_pick(const struct rdx_rc_gid_ent *tab, int n, int want,
                    const uint8_t *addr, char *why, size_t whylen);

/* The port facts from a port's attributes and the GID chosen. */
void rdx_rc_port_from(const struct ibv_port_attr *pa, uint8_t port,
                      int gid_index, const uint8_t gid[16],
                      struct rdx_rc_port *out);

/* The attributes and mask of each transition of an RC queue pair. */
void rdx_rc_attr_init(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                      int *mask);
void rdx_rc_attr_rtr(const struct rdx_rc_port *p,
                     const struct rdx_rc_qp_token *peer, uint32_t peer_psn,
                     struct ibv_qp_attr *a, int *mask);
void rdx_rc_attr_rts(uint32_t psn, struct ibv_qp_attr *a, int *mask);

/* Can a queue pair connect to peer's? Transport RC, a 24-bit qpn not 0, a
   GID not all zero, PSN 1..0xffffff. 0, or -EINVAL with why. */
int rdx_rc_peer_check(const struct rdx_rc_qp_token *peer, uint32_t peer_psn,
                      char *why, size_t whylen);

/* "a, b, c" (or "none") into buf: for "devices here: ..." lines. */
void rdx_rc_names(const char *const *names, size_t n, char *buf, size_t len);

/* The device configuration rdx_params gives (rc and dc alike): its
   devices, names or addresses separated by ';', ',' or blanks (the first
   RDX_RC_SPECS_MAX), and its GID index; the strings live in b. */
struct rdx_rc_cfg_buf {
  struct rdx_rc_dev_cfg cfg;
  const char *specs[RDX_RC_SPECS_MAX];
  char text[RDX_RC_SPECS_MAX * 64];
};
/* 0 and *cfg (NULL when p is NULL: every default), or -EINVAL with the
   reason in err (rdma.devices too long). */
int rdx_rc_cfg_of(const struct rdx_params *p, struct rdx_rc_cfg_buf *b,
                  const struct rdx_rc_dev_cfg **cfg, char *err, size_t errlen);

/* A device configuration kept by value (a server's, set before it opens):
   cfg.devices points into names. */
struct rdx_rc_cfg_copy {
  struct rdx_rc_dev_cfg cfg;
  const char *ptrs[RDX_RC_DEVS_MAX];
  char names[RDX_RC_DEVS_MAX][64];
};
#define RDX_RC_CFG_COPY_INIT {.cfg = {.gid_index = -1}}
/* Copy src (NULL: the defaults) into dst: 0, or -EINVAL (more than
   RDX_RC_DEVS_MAX devices, a NULL name, a name of 64 bytes or more), dst
   then unchanged. */
int rdx_rc_cfg_copy(struct rdx_rc_cfg_copy *dst,
                    const struct rdx_rc_dev_cfg *src);

/* ---- with a device ------------------------------------------------------ */

/*
 * Open the device cfg names (NULL: the first one), query its port, choose
 * the GID, allocate a PD. who prefixes every reason ("rc", "rc server").
 * Returns 0, or -ENODEV (no verbs, no device, a name or address that
 * matches none: the line names what was asked and what exists; the port
 * not active; no GID fits), -EINVAL (a bad spec) or -ENOMEM; d is then
 * zeroed.
 */
int rdx_rc_dev_open(const struct rdx_rc_dev_cfg *cfg, const char *who,
                    struct rdx_rc_dev *d, char *err, size_t errlen);
void rdx_rc_dev_close(struct rdx_rc_dev *d);

/* A client's segment (rdx_transport_ops.reg, rc and dc alike): for local
   write and remote read and write, or remote read only for a PUT source
   (seg->src). Fills seg->priv with the MR: 0 or a negative errno. */
int rdx_rc_reg_seg(struct rdx_rc_dev *d, struct rdx_seg *seg);
/* A client's dma-buf segment (seg->dmabuf: ibv_reg_dmabuf_mr of seg->fd
   at seg->fd_off, I/O virtual address seg->addr), for local and remote
   write (a server writes into it; none may read it), or with seg->src for
   remote read only (a PUT's source): 0 or a negative errno (a provider
   without dma-buf registration, soft-RoCE's: -EOPNOTSUPP or its own). */
int rdx_rc_reg_dmabuf_seg(struct rdx_rc_dev *d, struct rdx_seg *seg);
/* Undo rdx_rc_reg_seg or _dmabuf_seg (nothing when seg->priv is NULL). */
void rdx_rc_unreg_seg(struct rdx_seg *seg);
/* A server's chunk buffers: local write only (the server's own work
   requests read and write them; no peer may): the MR, or NULL with
   errno. */
struct ibv_mr *rdx_rc_reg_local(struct rdx_rc_dev *d, void *addr, size_t len);

/*
 * An RC queue pair on cq (send and receive), moved to INIT: max_send_wr
 * send_wr (1 or more), no receives. 0 and *out, or a negative errno.
 */
int rdx_rc_qp_create(struct rdx_rc_dev *d, struct ibv_cq *cq,
                     uint32_t send_wr, struct ibv_qp **out);

/* Move qp from INIT to RTR toward peer (its PSN peer_psn), then to RTS
   sending from psn. 0, or a negative errno with why. */
int rdx_rc_qp_connect(struct rdx_rc_dev *d, struct ibv_qp *qp,
                      const struct rdx_rc_qp_token *peer, uint32_t peer_psn,
                      uint32_t psn, char *why, size_t whylen);

/* The connect step's token for qp: transport RC, qpn, GID, port, lid;
   rkey, addr and len 0. */
void rdx_rc_qp_token_of(const struct rdx_rc_dev *d, const struct ibv_qp *qp,
                        struct rdx_rc_qp_token *t);

/* One work completion from cq by until (CLOCK_MONOTONIC ms): polls
   RDX_RC_SPINS times, then naps RDX_RC_NAP_NS between polls. 0, -EIO (the
   poll failed) or -ETIMEDOUT. For the servers, which post and wait. */
#define RDX_RC_SPINS 1024
#define RDX_RC_NAP_NS 20000L
int rdx_rc_wait_wc(struct ibv_cq *cq, uint64_t until, struct ibv_wc *wc);

/* n random bytes (getrandom): 0 or a negative errno. */
int rdx_rc_random(void *buf, size_t n);
/* A random PSN in 1..0xfffffe, or 0 when the kernel gives no randomness. */
uint32_t rdx_rc_psn_random(void);

#endif
