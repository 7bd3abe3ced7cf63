/*
 * rdx_rc_verbs: devices, GIDs, queue pair attributes and transitions for
 * the RC transport. The rules are in rdx_rc_verbs.h; the attributes' values
 * come from the RC dialect (docs/rdma.md).
 */
#include "rdma/rdx_rc_verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/clock.h"
#include "rdma/rdx_reason.h"

#define GID_TBL_MAX 256 /* entries scanned at most */

/* ---- pure --------------------------------------------------------------- */

int rdx_rc_spec_parse(const char *s, struct rdx_rc_spec *out)
{
  struct in_addr a4;
  size_t n;

  if (!out)
    return -EINVAL;
  memset(out, 0, sizeof(*out));
  if (!s || (n = strlen(s)) == 0 || n >= sizeof(out->name))
    return -EINVAL;
  memcpy(out->name, s, n + 1);
  if (inet_pton(AF_INET, s, &a4) == 1) {
    out->is_addr = true;
    out->gid[10] = out->gid[11] = 0xff;
    memcpy(out->gid + 12, &a4, 4);
    return 0;
  }
  if (inet_pton(AF_INET6, s, out->gid) == 1) {
    out->is_addr = true;
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
        !(s[i] >= '0' && s[i] <= '9') && s[i] != '_' && s[i] != '.' &&
        s[i] != '-') {
      memset(out, 0, sizeof(*out));
      return -EINVAL;
    }
  return 0;
}

bool rdx_rc_gid_v4mapped(const uint8_t raw[16])
{
  static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

  return memcmp(raw, pfx, sizeof(pfx)) == 0;
}

int rdx_rc_gid_pick(const struct rdx_rc_gid_ent *tab, int n, int want,
                    const uint8_t *addr, char *why, size_t whylen)
{
  int v2 = -1, any = -1, match = -1;

  if (want >= 0) {
    if (want < n && tab[want].valid)
      return want;
    return rdx_reason(why, whylen, -ENOENT,
                      "GID index %d is not in the port's table (%d entries) "
                      "or empty",
                      want, n);
  }
  for (int i = 0; i < n; i++) {
    const struct rdx_rc_gid_ent *e = &tab[i];
    bool is_v2 = e->type == IBV_GID_TYPE_ROCE_V2;

    if (!e->valid)
      continue;
    if (addr) {
      if (memcmp(e->raw, addr, 16) == 0 &&
          (match < 0 || (is_v2 && tab[match].type != IBV_GID_TYPE_ROCE_V2)))
        match = i;
      continue;
    }
    if (is_v2 && rdx_rc_gid_v4mapped(e->raw))
      return i;
    if (is_v2 && v2 < 0)
      v2 = i;
    if (any < 0)
      any = i;
  }
  if (addr) {
    if (match >= 0)
      return match;
    return rdx_reason(why, whylen, -ENOENT, "no GID holds that address");
  }
  if (v2 >= 0)
    return v2;
  if (any >= 0)
    return any;
  return rdx_reason(why, whylen, -ENOENT, "the port's GID table is empty");
}

void rdx_rc_port_from(const struct ibv_port_attr *pa, uint8_t port,
                      int gid_index, const uint8_t gid[16],
                      struct rdx_rc_port *out)
{
  memset(out, 0, sizeof(*out));
  out->port = port;
  out->gid_index = gid_index;
  memcpy(out->gid, gid, 16);
  out->roce = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
  out->lid = out->roce ? 0 : pa->lid;
  /* the dialect: the port's active MTU, at least 512 */
  out->mtu = pa->active_mtu >= IBV_MTU_512 && pa->active_mtu <= IBV_MTU_4096
                 ? pa->active_mtu
                 : IBV_MTU_512;
}

void rdx_rc_attr_init(const struct rdx_rc_port *p, struct ibv_qp_attr *a,
                      int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_INIT;
  a->pkey_index = 0;
  a->port_num = p->port;
  a->qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

void rdx_rc_attr_rtr(const struct rdx_rc_port *p,
                     const struct rdx_rc_qp_token *peer, uint32_t peer_psn,
                     struct ibv_qp_attr *a, int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_RTR;
  a->path_mtu = p->mtu;
  a->dest_qp_num = peer->qpn;
  a->rq_psn = peer_psn;
  a->max_dest_rd_atomic = RDX_RC_RD_ATOMIC;
  a->min_rnr_timer = RDX_RC_MIN_RNR_TIMER;
  a->ah_attr.is_global = 1;
  memcpy(a->ah_attr.grh.dgid.raw, peer->gid, 16);
  a->ah_attr.grh.sgid_index = (uint8_t)p->gid_index;
  a->ah_attr.grh.hop_limit = RDX_RC_HOP_LIMIT;
  a->ah_attr.dlid = p->roce ? 0 : peer->lid;
  a->ah_attr.sl = 0;
  a->ah_attr.src_path_bits = 0;
  a->ah_attr.port_num = p->port;
  *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
          IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

void rdx_rc_attr_rts(uint32_t psn, struct ibv_qp_attr *a, int *mask)
{
  memset(a, 0, sizeof(*a));
  a->qp_state = IBV_QPS_RTS;
  a->sq_psn = psn;
  a->timeout = RDX_RC_TIMEOUT;
  a->retry_cnt = RDX_RC_RETRY_CNT;
  a->rnr_retry = RDX_RC_RNR_RETRY;
  a->max_rd_atomic = RDX_RC_RD_ATOMIC;
  *mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

int rdx_rc_peer_check(const struct rdx_rc_qp_token *peer, uint32_t peer_psn,
                      char *why, size_t whylen)
{
  static const uint8_t zero[16];

  if (!peer)
    return rdx_reason(why, whylen, -EINVAL, "no queue pair token");
  if (peer->transport != RDX_RC_TRANSPORT_RC)
    return rdx_reason(why, whylen, -EINVAL,
                      "queue pair token of transport %u, not RC (1)",
                      (unsigned)peer->transport);
  if (peer->qpn == 0 || peer->qpn > 0xffffff)
    return rdx_reason(why, whylen, -EINVAL,
                      "queue pair number 0x%x is not a 24-bit number above 0",
                      (unsigned)peer->qpn);
  if (memcmp(peer->gid, zero, 16) == 0)
    return rdx_reason(why, whylen, -EINVAL,
                      "queue pair token without a GID (global routing needs "
                      "one)");
  if (peer_psn == 0 || peer_psn > RDX_RC_PSN_MAX)
    return rdx_reason(why, whylen, -EINVAL, "PSN 0x%x out of 1..0xffffff",
                      (unsigned)peer_psn);
  return 0;
}

void rdx_rc_names(const char *const *names, size_t n, char *buf, size_t len)
{
  size_t used = 0;

  if (!buf || len == 0)
    return;
  buf[0] = '\0';
  if (n == 0) {
    snprintf(buf, len, "none");
    return;
  }
  for (size_t i = 0; i < n && used < len; i++) {
    int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                     names[i] ? names[i] : "?");
    if (w < 0)
      break;
    used += (size_t)w;
  }
}

/* ---- devices ------------------------------------------------------------ */

/* The GID table of ctx's port: *n entries in *out (free it), or -errno. */
static int gid_table(struct ibv_context *ctx, uint8_t port,
                     const struct ibv_port_attr *pa,
                     struct rdx_rc_gid_ent **out, int *n)
{
  static const uint8_t zero[16];
  int len = pa->gid_tbl_len < GID_TBL_MAX ? pa->gid_tbl_len : GID_TBL_MAX;
  struct rdx_rc_gid_ent *tab;

  *out = NULL;
  *n = 0;
  tab = calloc(len > 0 ? (size_t)len : 1, sizeof(*tab));
  if (!tab)
    return -ENOMEM;
  for (int i = 0; i < len; i++) {
    struct ibv_gid_entry e;

    if (ibv_query_gid_ex(ctx, port, (uint32_t)i, &e, 0))
      continue; /* an empty slot answers ENODATA */
    memcpy(tab[i].raw, e.gid.raw, 16);
    tab[i].type = (int)e.gid_type;
    tab[i].valid = memcmp(e.gid.raw, zero, 16) != 0;
  }
  *out = tab;
  *n = len;
  return 0;
}

/*
 * Open dev, query port, pick the GID (want, or addr's): 0 and d filled
 * but the PD, -ENOENT when addr is not among its GIDs, or another error
 * with err.
 */
static int open_one(struct ibv_device *dev, const struct rdx_rc_dev_cfg *cfg,
                    const uint8_t *addr, const char *who, struct rdx_rc_dev *d,
                    char *err, size_t errlen)
{
  uint8_t port = cfg->port ? cfg->port : RDX_RC_PORT_DEFAULT;
  const char *name = ibv_get_device_name(dev);
  struct ibv_port_attr pa;
  struct rdx_rc_gid_ent *tab;
  char why[128];
  int n, idx, rc;

  snprintf(d->name, sizeof(d->name), "%s", name ? name : "?");
  d->ctx = ibv_open_device(dev);
  if (!d->ctx)
    return rdx_reason(err, errlen, -ENODEV, "%s: cannot open %s: %s", who,
                      d->name, strerror(errno));
  if ((rc = ibv_query_port(d->ctx, port, &pa)) != 0) {
    rc = rdx_reason(err, errlen, -ENODEV, "%s: %s has no port %u: %s", who,
                    d->name, (unsigned)port, strerror(rc));
    goto close_ctx;
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    rc = rdx_reason(err, errlen, -ENODEV,
                    "%s: %s port %u is not active (%s)", who, d->name,
                    (unsigned)port, ibv_port_state_str(pa.state));
    goto close_ctx;
  }
  rc = gid_table(d->ctx, port, &pa, &tab, &n);
  if (rc) {
    rdx_reason(err, errlen, rc, "%s: out of memory", who);
    goto close_ctx;
  }
  idx = rdx_rc_gid_pick(tab, n, addr ? -1 : cfg->gid_index, addr, why,
                        sizeof(why));
  if (idx >= 0 && addr && cfg->gid_index >= 0)
    idx = rdx_rc_gid_pick(tab, n, cfg->gid_index, NULL, why, sizeof(why));
  if (idx < 0) {
    rc = addr ? -ENOENT
              : rdx_reason(err, errlen, -ENODEV, "%s: %s port %u: %s", who,
                           d->name, (unsigned)port, why);
    goto free_tab;
  }
  rdx_rc_port_from(&pa, port, idx, tab[idx].raw, &d->port);
  free(tab);
  return 0;

free_tab:
  free(tab);
close_ctx:
  ibv_close_device(d->ctx);
  d->ctx = NULL;
  return rc;
}

/* The device spec names among list[0..n): 0 with d open, or -errno. */
static int open_spec(struct ibv_device **list, int n,
                     const struct rdx_rc_spec *sp,
                     const struct rdx_rc_dev_cfg *cfg, const char *who,
                     struct rdx_rc_dev *d, char *err, size_t errlen)
{
  const char *names[64];
  char have[256];
  int nn = n < 64 ? n : 64;

  for (int i = 0; i < n; i++) {
    const char *name = ibv_get_device_name(list[i]);

    if (sp->is_addr) {
      /* a device that cannot serve (port down) is not the one either */
      if (open_one(list[i], cfg, sp->gid, who, d, err, errlen) == 0)
        return 0;
    } else if (name && strcmp(name, sp->name) == 0) {
      return open_one(list[i], cfg, NULL, who, d, err, errlen);
    }
  }
  for (int i = 0; i < nn; i++)
    names[i] = ibv_get_device_name(list[i]);
  rdx_rc_names(names, (size_t)nn, have, sizeof(have));
  return rdx_reason(err, errlen, -ENODEV, "%s: no RDMA device %s %s (devices "
                    "here: %s)",
                    who, sp->is_addr ? "has the address" : "is named",
                    sp->name, have);
}

int rdx_rc_dev_open(const struct rdx_rc_dev_cfg *cfg, const char *who,
                    struct rdx_rc_dev *d, char *err, size_t errlen)
{
  static const struct rdx_rc_dev_cfg defaults = {NULL, 0, -1, 0};
  struct rdx_rc_spec sp[RDX_RC_DEVS_MAX];
  struct ibv_device **list;
  int n = 0, rc;

  memset(d, 0, sizeof(*d));
  if (!cfg)
    cfg = &defaults;
  if (cfg->ndevices > RDX_RC_DEVS_MAX)
    return rdx_reason(err, errlen, -EINVAL, "%s: more than %d devices given",
                      who, RDX_RC_DEVS_MAX);
  for (size_t i = 0; i < cfg->ndevices; i++)
    if (rdx_rc_spec_parse(cfg->devices[i], &sp[i]))
      return rdx_reason(err, errlen, -EINVAL,
                        "%s: device '%s' is neither a device name nor an "
                        "address",
                        who, cfg->devices[i] ? cfg->devices[i] : "");
  errno = 0;
  list = ibv_get_device_list(&n);
  if (!list)
    return rdx_reason(err, errlen, -ENODEV, "%s: no RDMA device (%s)", who,
                      errno == ENOSYS ? "no verbs in the kernel: ib_uverbs "
                                        "not loaded"
                                      : strerror(errno ? errno : ENODEV));
  if (n <= 0) {
    rc = rdx_reason(err, errlen, -ENODEV,
                    "%s: no RDMA device (ibv_get_device_list found none)", who);
    goto free_list;
  }
  /* every spec must name a device; the first is the one used */
  for (size_t i = cfg->ndevices; i-- > 0;) {
    if (d->ctx)
      ibv_close_device(d->ctx);
    memset(d, 0, sizeof(*d));
    rc = open_spec(list, n, &sp[i], cfg, who, d, err, errlen);
    if (rc)
      goto free_list;
  }
  if (cfg->ndevices == 0 &&
      (rc = open_one(list[0], cfg, NULL, who, d, err, errlen)) != 0)
    goto free_list;
  d->pd = ibv_alloc_pd(d->ctx);
  if (!d->pd) {
    rc = rdx_reason(err, errlen, -ENOMEM, "%s: %s: ibv_alloc_pd: %s", who,
                    d->name, strerror(errno));
    goto close_ctx;
  }
  ibv_free_device_list(list);
  return 0;

close_ctx:
  ibv_close_device(d->ctx);
free_list:
  memset(d, 0, sizeof(*d));
  ibv_free_device_list(list);
  return rc;
}

void rdx_rc_dev_close(struct rdx_rc_dev *d)
{
  if (!d)
    return;
  if (d->pd)
    ibv_dealloc_pd(d->pd);
  if (d->ctx)
    ibv_close_device(d->ctx);
  memset(d, 0, sizeof(*d));
}

int rdx_rc_reg_seg(struct rdx_rc_dev *d, struct rdx_seg *seg)
{
  /* a PUT source is never written, and may be a read-only mapping */
  int access = seg->src ? IBV_ACCESS_REMOTE_READ
                        : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
                              IBV_ACCESS_REMOTE_WRITE;
  struct ibv_mr *mr;

  errno = 0;
  mr = ibv_reg_mr(d->pd, (void *)(uintptr_t)seg->addr, (size_t)seg->len,
                  access);
  if (!mr)
    return errno ? -errno : -ENOMEM;
  seg->priv = mr;
  return 0;
}

int rdx_rc_reg_dmabuf_seg(struct rdx_rc_dev *d, struct rdx_seg *seg)
{
  /* device memory a server writes into (GETs: no remote read), or reads
     from (a PUT's source: remote read only) */
  int access = seg->src ? IBV_ACCESS_REMOTE_READ
                        : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  struct ibv_mr *mr;

  errno = 0;
  mr = ibv_reg_dmabuf_mr(d->pd, seg->fd_off, (size_t)seg->len, seg->addr,
                         seg->fd, access);
  if (!mr)
    return errno ? -errno : -EOPNOTSUPP;
  seg->priv = mr;
  return 0;
}

int rdx_rc_wait_wc(struct ibv_cq *cq, uint64_t until, struct ibv_wc *wc)
{
  struct timespec nap = {0, RDX_RC_NAP_NS};

  for (unsigned spins = 0;; spins++) {
    int n = ibv_poll_cq(cq, 1, wc);

    if (n < 0)
      return -EIO;
    if (n == 1)
      return 0;
    if (spins < RDX_RC_SPINS)
      continue;
    if (clock_mono_ms() >= until)
      return -ETIMEDOUT;
    nanosleep(&nap, NULL);
  }
}

void rdx_rc_unreg_seg(struct rdx_seg *seg)
{
  if (seg->priv)
    ibv_dereg_mr(seg->priv);
  seg->priv = NULL;
}

struct ibv_mr *rdx_rc_reg_local(struct rdx_rc_dev *d, void *addr, size_t len)
{
  return ibv_reg_mr(d->pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
}

int rdx_rc_cfg_of(const struct rdx_params *p, struct rdx_rc_cfg_buf *b,
                  const struct rdx_rc_dev_cfg **cfg, char *err, size_t errlen)
{
  char *save = NULL, *s;

  *cfg = NULL;
  if (!p)
    return 0;
  b->cfg = (struct rdx_rc_dev_cfg){
      .gid_index = p->gid_given ? (int)p->gid_index : -1};
  *cfg = &b->cfg;
  if (!p->devices)
    return 0;
  if (strlen(p->devices) >= sizeof(b->text))
    return rdx_reason(err, errlen, -EINVAL, "rdma.devices is too long");
  strcpy(b->text, p->devices);
  for (s = strtok_r(b->text, ";, \t", &save);
       s && b->cfg.ndevices < RDX_RC_SPECS_MAX;
       s = strtok_r(NULL, ";, \t", &save))
    b->specs[b->cfg.ndevices++] = s;
  b->cfg.devices = b->specs;
  return 0;
}

int rdx_rc_cfg_copy(struct rdx_rc_cfg_copy *dst,
                    const struct rdx_rc_dev_cfg *src)
{
  size_t n = src ? src->ndevices : 0;

  if (n > RDX_RC_DEVS_MAX)
    return -EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!src->devices[i] || strlen(src->devices[i]) >= sizeof(dst->names[0]))
      return -EINVAL;
  for (size_t i = 0; i < n; i++) {
    snprintf(dst->names[i], sizeof(dst->names[i]), "%s", src->devices[i]);
    dst->ptrs[i] = dst->names[i];
  }
  dst->cfg = (struct rdx_rc_dev_cfg){.devices = dst->ptrs,
                                     .ndevices = n,
                                     .gid_index = src ? src->gid_index : -1,
                                     .port = src ? src->port : 0};
  return 0;
}

/* ---- queue pairs -------------------------------------------------------- */

int rdx_rc_qp_create(struct rdx_rc_dev *d, struct ibv_cq *cq,
                     uint32_t send_wr, struct ibv_qp **out)
{
  struct ibv_qp_init_attr ia;
  struct ibv_qp_attr a;
  struct ibv_qp *qp;
  int mask, rc;

  *out = NULL;
  memset(&ia, 0, sizeof(ia));
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 0;
  ia.cap.max_send_wr = send_wr ? send_wr : 1;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  qp = ibv_create_qp(d->pd, &ia);
  if (!qp)
    return errno ? -errno : -ENOMEM;
  rdx_rc_attr_init(&d->port, &a, &mask);
  rc = ibv_modify_qp(qp, &a, mask);
  if (rc) {
    ibv_destroy_qp(qp);
    return -rc;
  }
  *out = qp;
  return 0;
}

int rdx_rc_qp_connect(struct rdx_rc_dev *d, struct ibv_qp *qp,
                      const struct rdx_rc_qp_token *peer, uint32_t peer_psn,
                      uint32_t psn, char *why, size_t whylen)
{
  struct ibv_qp_attr a;
  int mask, rc;

  rc = rdx_rc_peer_check(peer, peer_psn, why, whylen);
  if (rc)
    return rc;
  rdx_rc_attr_rtr(&d->port, peer, peer_psn, &a, &mask);
  rc = ibv_modify_qp(qp, &a, mask);
  if (rc)
    return rdx_reason(why, whylen, -rc, "queue pair to RTR: %s",
                      strerror(rc));
  rdx_rc_attr_rts(psn, &a, &mask);
  rc = ibv_modify_qp(qp, &a, mask);
  if (rc)
    return rdx_reason(why, whylen, -rc, "queue pair to RTS: %s",
                      strerror(rc));
  return 0;
}

void rdx_rc_qp_token_of(const struct rdx_rc_dev *d, const struct ibv_qp *qp,
                        struct rdx_rc_qp_token *t)
{
  memset(t, 0, sizeof(*t));
  t->transport = RDX_RC_TRANSPORT_RC;
  t->qpn = qp->qp_num;
  memcpy(t->gid, d->port.gid, 16);
  t->port = d->port.port;
  t->lid = d->port.lid;
}

/* ---- randomness --------------------------------------------------------- */

int rdx_rc_random(void *buf, size_t n)
{
  uint8_t *p = buf;

  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);

    if (got < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

uint32_t rdx_rc_psn_random(void)
{
  uint32_t v;

  if (rdx_rc_random(&v, sizeof(v)))
    return 0;
  return v % 0xfffffeu + 1; /* 1..0xfffffe, as elbencho's randomPsn */
}
