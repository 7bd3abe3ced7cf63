/*
 * rdx_transport: what every kind shares: choosing and opening a kind,
 * cutting a registration into segments, and checking a token's range
 * before the kind fills in its own fields. The kinds live in rdx_cma.c,
 * rdx_rc_client.c and rdx_dc_client.c behind struct rdx_transport_ops.
 */
#include "rdma/rdx_i.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rdx_reason.h"

#define IB_CLASS "/sys/class/infiniband"

/*
 * Is there an RDMA device? 0, or -ENODEV with the reason. Read from sysfs
 * so that this file needs no libibverbs: the verbs kinds will ask
 * ibv_get_device_list themselves (NULL with ENOSYS without the modules, an
 * empty list with modules but no device).
 */
static int rdma_device(char *err, size_t errlen)
{
  struct dirent *de;
  DIR *d;
  int n = 0;

  d = opendir(IB_CLASS);
  if (!d)
    return rdx_reason(err, errlen, -ENODEV,
                      "no RDMA device (" IB_CLASS " absent: no RDMA driver)");
  while ((de = readdir(d)) != NULL)
    if (de->d_name[0] != '.')
      n++;
  closedir(d);
  if (n == 0)
    return rdx_reason(err, errlen, -ENODEV,
                      "no RDMA device (" IB_CLASS " is empty)");
  return 0;
}

/* rc: sysfs first, so that a host without RDMA gets cma's kind of reason
   without loading libibverbs' providers; then the device itself. */
static int rc_open(const struct rdx_params *p, struct rdx_transport **out,
                   char *err, size_t errlen)
{
  int rc = rdma_device(err, errlen);

  if (rc)
    return rc;
  return rdx_rc_open(p, out, err, errlen);
}

/* dc: as rc (sysfs first), then an mlx5 device ("dc: no mlx5 device
   (devices here: rxe0)" when there is none). */
static int dc_open(const struct rdx_params *p, struct rdx_transport **out,
                   char *err, size_t errlen)
{
  int rc = rdma_device(err, errlen);

  if (rc)
    return rc;
  return rdx_dc_open(p, out, err, errlen);
}

/* auto: dc, then rc, then cma (an endpoint on this host only). On success
   err tells why the kinds before the one opened were passed over. */
static int auto_open(const struct rdx_params *p, struct rdx_transport **out,
                     char *err, size_t errlen)
{
  char dc_why[RDX_ERR_MAX], rc_why[RDX_ERR_MAX], cma_why[RDX_ERR_MAX];
  char verbs[2 * RDX_ERR_MAX + 16];
  int rc;

  rc = dc_open(p, out, dc_why, sizeof(dc_why));
  if (rc == 0 || rc == -ENOMEM)
    return rdx_reason(err, errlen, rc, "%s", rc ? dc_why : "");
  rc = rc_open(p, out, rc_why, sizeof(rc_why));
  if (rc == 0 || rc == -ENOMEM)
    return rdx_reason(err, errlen, rc, "%s", rc ? rc_why : dc_why);
  /* "no RDMA device" is said once for both verbs kinds */
  if (strcmp(dc_why, rc_why) == 0)
    snprintf(verbs, sizeof(verbs), "dc, rc: %s", dc_why);
  else
    snprintf(verbs, sizeof(verbs), "dc: %s; rc: %s", dc_why, rc_why);
  if (!(p && p->endpoint_local))
    snprintf(cma_why, sizeof(cma_why), "the endpoint is not on this host");
  else if ((rc = rdx_cma_open(p, out, cma_why, sizeof(cma_why))) == 0)
    return rdx_reason(err, errlen, 0, "%s", verbs);
  if (rc == -ENOMEM)
    return rdx_reason(err, errlen, rc, "%s", cma_why);
  return rdx_reason(err, errlen, -ENODEV,
                    "no rdma transport available: %s; cma: %s", verbs,
                    cma_why);
}

static int off_open(const struct rdx_params *p, struct rdx_transport **out,
                    char *err, size_t errlen)
{
  (void)p;
  (void)out;
  return rdx_reason(err, errlen, -ENODEV, "rdma transport is off");
}

static int cma_open(const struct rdx_params *p, struct rdx_transport **out,
                    char *err, size_t errlen)
{
  return rdx_cma_open(p, out, err, errlen);
}

/* The transports of rdx_kinds.h, by kind. */
static const struct {
  const char *name;
  int token_kind;             /* enum rdx_kind, 0: none */
  int (*open)(const struct rdx_params *p, struct rdx_transport **out,
              char *err, size_t errlen);
} kinds[] = {
#define X(name, up, low, tok) [RDX_TRANSPORT_##up] = {name, tok, low##_open},
    RDX_TRANSPORTS(X)
#undef X
};
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == RDX_TRANSPORT_KINDS,
               "a row of rdx_kinds.h for every kind");

const char *rdx_transport_kind_name(enum rdx_transport_kind kind)
{
  return (unsigned)kind < RDX_TRANSPORT_KINDS ? kinds[kind].name : "?";
}

int rdx_transport_token_kind(enum rdx_transport_kind kind)
{
  return (unsigned)kind < RDX_TRANSPORT_KINDS ? kinds[kind].token_kind : 0;
}

int rdx_transport_open(enum rdx_transport_kind kind,
                       const struct rdx_params *p, struct rdx_transport **out,
                       char *err, size_t errlen)
{
  rdx_reason(err, errlen, 0, "%s", "");
  if (!out)
    return rdx_reason(err, errlen, -EINVAL, "no place for the transport");
  *out = NULL;
  if ((unsigned)kind >= RDX_TRANSPORT_KINDS)
    return rdx_reason(err, errlen, -EINVAL, "rdma transport kind %d unknown",
                      (int)kind);
  return kinds[kind].open(p, out, err, errlen);
}

enum rdx_transport_kind rdx_transport_kind(const struct rdx_transport *t)
{
  return t ? t->kind : RDX_TRANSPORT_OFF;
}

void rdx_transport_close(struct rdx_transport *t)
{
  if (t)
    t->ops->close(t);
}

/* Register segment s (live once done): 0 or a negative errno. */
static int seg_reg(struct rdx_transport *t, struct rdx_seg *s)
{
  int rc = s->dmabuf ? t->ops->reg_dmabuf(t, s) : t->ops->reg(t, s);

  if (!rc)
    atomic_store(&s->live, true);
  return rc;
}

/* fd >= 0: a dma-buf, base the I/O virtual address its tokens name;
   lazy: the segments made, none registered (rdx_register_lazy) */
static int reg(struct rdx_transport *t, void *base, size_t len, size_t unit,
               bool src, int fd, bool lazy, struct rdx_region **out)
{
  struct rdx_region *r;
  uint64_t b = (uint64_t)(uintptr_t)base;
  uint64_t seg_len;
  size_t nseg, i;
  int rc;

  if (out)
    *out = NULL;
  if (!t || !base || !out || len == 0 || unit > RDX_SEG_MAX)
    return -EINVAL;
  if ((uint64_t)len - 1 > UINT64_MAX - b)
    return -EINVAL;
  seg_len = unit <= 1 ? RDX_SEG_MAX : RDX_SEG_MAX / unit * unit;
  if (lazy)
    seg_len = unit;
  nseg = (size_t)(((uint64_t)len - 1) / seg_len + 1);
  r = calloc(1, sizeof(*r) + nseg * sizeof(r->seg[0]));
  if (!r)
    return -ENOMEM;
  r->t = t;
  r->src = src;
  r->dst = fd >= 0 && !src; /* (registered without remote read) */
  r->base = b;
  r->len = len;
  r->seg_len = seg_len;
  for (i = 0; i < nseg; i++) {
    struct rdx_seg *s = &r->seg[i];
    uint64_t off = (uint64_t)i * seg_len;

    s->addr = b + off;
    s->len = len - off < seg_len ? len - off : seg_len;
    s->src = src;
    s->dmabuf = fd >= 0;
    s->fd = fd;
    s->fd_off = off;
    r->nseg = i + 1;
    if (!lazy && (rc = seg_reg(t, s)))
      goto clean_segs;
  }
  *out = r;
  return 0;

clean_segs:
  rdx_unregister(r);
  return rc;
}

int rdx_register(struct rdx_transport *t, void *base, size_t len, size_t unit,
                 struct rdx_region **out)
{
  return reg(t, base, len, unit, false, -1, false, out);
}

int rdx_register_lazy(struct rdx_transport *t, void *base, size_t len,
                      size_t seg_len, struct rdx_region **out)
{
  if (out)
    *out = NULL;
  if (seg_len == 0)
    return -EINVAL;
  return reg(t, base, len, seg_len, false, -1, true, out);
}

int rdx_region_seg_set(struct rdx_region *r, uint64_t off, uint64_t len,
                       bool on)
{
  uint64_t first, last;
  int rc = 0;

  if (!r || len == 0 || off % r->seg_len || off >= r->len ||
      len > r->len - off || (len % r->seg_len && off + len != r->len))
    return -EINVAL;
  first = off / r->seg_len;
  last = (off + len - 1) / r->seg_len;
  for (uint64_t i = first; i <= last && !rc; i++) {
    struct rdx_seg *s = &r->seg[i];

    if (on && !atomic_load(&s->live)) {
      rc = seg_reg(r->t, s);
    } else if (!on && atomic_exchange(&s->live, false)) {
      r->t->ops->unreg(r->t, s);
    }
  }
  return rc;
}

uint64_t rdx_region_live_bytes(const struct rdx_region *r)
{
  uint64_t n = 0;

  for (size_t i = 0; r && i < r->nseg; i++)
    if (atomic_load(&r->seg[i].live))
      n += r->seg[i].len;
  return n;
}

int rdx_register_src(struct rdx_transport *t, const void *base, size_t len,
                     size_t unit, struct rdx_region **out)
{
  /* never written through: the kinds register it for remote read only */
  return reg(t, (void *)(uintptr_t)base, len, unit, true, -1, false, out);
}

int rdx_register_dmabuf(struct rdx_transport *t, int fd, uint64_t iova,
                        size_t len, bool src, struct rdx_region **out)
{
  if (out)
    *out = NULL;
  if (!t || !t->ops->reg_dmabuf)
    return -EOPNOTSUPP;
  if (fd < 0 || !iova)
    return -EINVAL;
  return reg(t, (void *)(uintptr_t)iova, len, 0, src, fd, false, out);
}

bool rdx_transport_dmabuf(const struct rdx_transport *t)
{
  return t && t->ops->reg_dmabuf;
}

void rdx_unregister(struct rdx_region *r)
{
  if (!r)
    return;
  for (size_t i = r->nseg; i-- > 0;)
    if (atomic_exchange(&r->seg[i].live, false))
      r->t->ops->unreg(r->t, &r->seg[i]);
  free(r);
}

size_t rdx_region_len(const struct rdx_region *r)
{
  return r ? (size_t)r->len : 0;
}

size_t rdx_region_seg_len(const struct rdx_region *r)
{
  return r ? (size_t)r->seg_len : 0;
}

size_t rdx_region_nseg(const struct rdx_region *r)
{
  return r ? r->nseg : 0;
}

int rdx_region_seg_of(const struct rdx_region *r, uint64_t off, uint64_t len,
                      const struct rdx_seg **seg)
{
  uint64_t first, last;

  *seg = NULL;
  if (len == 0)
    return -EINVAL;
  if (off >= r->len || len > r->len - off)
    return -ERANGE;
  first = off / r->seg_len;
  last = (off + len - 1) / r->seg_len;
  if (first != last)
    return -EXDEV;
  if (!atomic_load(&r->seg[first].live))
    return -ENXIO;
  *seg = &r->seg[first];
  return 0;
}

int rdx_token_for(struct rdx_transport *t, const struct rdx_region *r,
                  uint64_t off, uint64_t len, enum rdx_op op, char *buf,
                  size_t buflen)
{
  struct rdx_token tok;
  const struct rdx_seg *seg;
  int rc;

  if (buf && buflen > 0)
    buf[0] = '\0';
  if (!t || !r || r->t != t || len == 0 || (op != RDX_GET && op != RDX_PUT))
    return -EINVAL;
  if ((r->src && op != RDX_PUT) || (r->dst && op != RDX_GET))
    return -EACCES;
  rc = rdx_region_seg_of(r, off, len, &seg);
  if (rc)
    return rc;
  memset(&tok, 0, sizeof(tok));
  rc = t->ops->token(t, seg, r->base + off, len, op, &tok);
  if (rc)
    return rc;
  return rdx_token_format(&tok, buf, buflen);
}
