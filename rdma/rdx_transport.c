/*
 * rdx_transport: what every kind shares: choosing and opening a kind,
 * cutting a registration into segments, and checking a token's range
 * before the kind fills in its own fields. The kinds live in rdx_cma.c
 * and rdx_rc_client.c (next, dc) behind struct rdx_transport_ops.
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

const char *rdx_transport_kind_name(enum rdx_transport_kind kind)
{
  switch (kind) {
  case RDX_TRANSPORT_OFF:
    return "off";
  case RDX_TRANSPORT_AUTO:
    return "auto";
  case RDX_TRANSPORT_CMA:
    return "cma";
  case RDX_TRANSPORT_RC:
    return "rc";
  case RDX_TRANSPORT_DC:
    return "dc";
  }
  return "?";
}

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

static int verbs_open(enum rdx_transport_kind kind, char *err, size_t errlen)
{
  int rc = rdma_device(err, errlen);

  if (rc)
    return rc;
  return rdx_reason(err, errlen, -ENOSYS,
                    "rdma transport %s is not built yet (an RDMA device is "
                    "present)",
                    rdx_transport_kind_name(kind));
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

int rdx_transport_open(enum rdx_transport_kind kind,
                       const struct rdx_params *p, struct rdx_transport **out,
                       char *err, size_t errlen)
{
  char dc_why[RDX_ERR_MAX], cma_why[RDX_ERR_MAX];
  bool local = p && p->endpoint_local;
  int rc;

  rdx_reason(err, errlen, 0, "%s", "");
  if (!out)
    return rdx_reason(err, errlen, -EINVAL, "no place for the transport");
  *out = NULL;
  switch (kind) {
  case RDX_TRANSPORT_OFF:
    return rdx_reason(err, errlen, -ENODEV, "rdma transport is off");
  case RDX_TRANSPORT_CMA:
    return rdx_cma_open(out, err, errlen);
  case RDX_TRANSPORT_RC:
    return rc_open(p, out, err, errlen);
  case RDX_TRANSPORT_DC:
    return verbs_open(kind, err, errlen);
  case RDX_TRANSPORT_AUTO:
    /* rc joins auto (dc, rc, cma) once the client makes the connect step:
       until then an rc transport makes no token (rdx_token_for: -ENOTCONN)
       and would only displace cma */
    rc = verbs_open(RDX_TRANSPORT_DC, dc_why, sizeof(dc_why));
    if (!local)
      snprintf(cma_why, sizeof(cma_why), "the endpoint is not on this host");
    else if ((rc = rdx_cma_open(out, cma_why, sizeof(cma_why))) == 0)
      return 0;
    if (rc == -ENOMEM)
      return rdx_reason(err, errlen, rc, "%s", cma_why);
    return rdx_reason(err, errlen, -ENODEV,
                      "no rdma transport available: dc, rc: %s; cma: %s",
                      dc_why, cma_why);
  }
  return rdx_reason(err, errlen, -EINVAL, "rdma transport kind %d unknown",
                    (int)kind);
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

int rdx_register(struct rdx_transport *t, void *base, size_t len, size_t unit,
                 struct rdx_region **out)
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
  nseg = (size_t)(((uint64_t)len - 1) / seg_len + 1);
  r = calloc(1, sizeof(*r) + nseg * sizeof(r->seg[0]));
  if (!r)
    return -ENOMEM;
  r->t = t;
  r->base = b;
  r->len = len;
  r->seg_len = seg_len;
  for (i = 0; i < nseg; i++) {
    struct rdx_seg *s = &r->seg[i];
    uint64_t off = (uint64_t)i * seg_len;

    s->addr = b + off;
    s->len = len - off < seg_len ? len - off : seg_len;
    rc = t->ops->reg(t, s);
    if (rc)
      goto clean_segs;
    r->nseg = i + 1;
  }
  *out = r;
  return 0;

clean_segs:
  rdx_unregister(r);
  return rc;
}

void rdx_unregister(struct rdx_region *r)
{
  if (!r)
    return;
  for (size_t i = r->nseg; i-- > 0;)
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
  rc = rdx_region_seg_of(r, off, len, &seg);
  if (rc)
    return rc;
  memset(&tok, 0, sizeof(tok));
  rc = t->ops->token(t, seg, r->base + off, len, op, &tok);
  if (rc)
    return rc;
  return rdx_token_format(&tok, buf, buflen);
}
