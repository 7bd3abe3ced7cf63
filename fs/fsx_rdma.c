/* fsx_rdma: the mount's RDMA data plane (see fsx_rdma.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/slog.h"
#include "fs/fsx_i.h"
#include "fs/fsx_rdma.h"
#include "rdma/rdx_transport.h"

struct fsx_rdma {
  struct rdx_transport *t;    /* fixed */
  struct rdx_region *arena;   /* fixed; NULL: GETs over HTTP */
  size_t chunk_size;          /* fixed */
  _Atomic uint64_t get_tokens, put_tokens, retired_chunks, no_token;
};

/* The host of "scheme://host[:port][/...]" is a loopback address? */
static bool endpoint_local(const char *ep)
{
  char host[256];
  const char *h = strstr(ep, "://"), *end;
  struct in6_addr a6;
  struct in_addr a4;
  size_t n;

  if (!h)
    return false;
  h += 3;
  if (*h == '[') { /* [v6]:port */
    end = strchr(++h, ']');
  } else {
    end = h + strcspn(h, ":/");
  }
  if (!end || (n = (size_t)(end - h)) == 0 || n >= sizeof(host))
    return false;
  memcpy(host, h, n);
  host[n] = '\0';
  if (!strcasecmp(host, "localhost"))
    return true;
  if (inet_pton(AF_INET, host, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static struct rdx_params params_of(const struct cfg *c)
{
  return (struct rdx_params){.endpoint_local = endpoint_local(c->endpoint),
                             .dc_access_key = c->rdma.dc_access_key};
}

int fsx_rdma_probe(const struct cfg *c, char *err, size_t errlen)
{
  enum rdx_transport_kind kind = (enum rdx_transport_kind)c->rdma.transport;
  struct rdx_params p = params_of(c);
  struct rdx_transport *t;
  char why[RDX_ERR_MAX];
  int rc;

  if (kind == RDX_TRANSPORT_OFF || kind == RDX_TRANSPORT_AUTO)
    return 0;
  rc = rdx_transport_open(kind, &p, &t, why, sizeof(why));
  if (rc) {
    snprintf(err, errlen, "rdma.transport %s: %s",
             rdx_transport_kind_name(kind), why);
    return rc;
  }
  rdx_transport_close(t);
  return 0;
}

int fsx_rdma_open(struct fsx_mount *m, const struct cfg *c, char *err,
                  size_t errlen)
{
  struct rdx_params p = params_of(c);
  struct fsx_rdma *d;
  char why[RDX_ERR_MAX];
  void *base;
  size_t len;
  int rc;

  if (c->rdma.transport == CFG_RDMA_OFF)
    return 0;
  d = calloc(1, sizeof(*d));
  if (!d) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  rc = rdx_transport_open((enum rdx_transport_kind)c->rdma.transport, &p,
                          &d->t, why, sizeof(why));
  if (rc) {
    free(d);
    if (c->rdma.transport == CFG_RDMA_AUTO) {
      log_notice("rdma: auto: %s; file data goes in HTTP bodies", why);
      return 0;
    }
    snprintf(err, errlen, "rdma.transport %s: %s",
             rdx_transport_kind_name((enum rdx_transport_kind)
                                         c->rdma.transport),
             why);
    return rc;
  }
  base = fsx_cache_arena(m->cache, &len);
  d->chunk_size = fsx_cache_chunk_size(m->cache);
  rc = rdx_register(d->t, base, len, d->chunk_size, &d->arena);
  if (rc) {
    snprintf(err, errlen, "rdma: cannot register the %zu-byte page cache: %s",
             len, strerror(-rc));
    rdx_transport_close(d->t);
    free(d);
    return rc;
  }
  m->rdma = d;
  log_notice("rdma: transport %s, header %s, page cache registered in %zu "
             "segment(s)",
             rdx_transport_kind_name(rdx_transport_kind(d->t)),
             c->rdma.token_header, rdx_region_nseg(d->arena));
  return 0;
}

void fsx_rdma_close(struct fsx_mount *m)
{
  struct fsx_rdma *d = m->rdma;

  if (!d)
    return;
  rdx_unregister(d->arena);
  rdx_transport_close(d->t);
  free(d);
  m->rdma = NULL;
}

bool fsx_rdma_active(struct fsx_mount *m)
{
  return m->rdma && s3_client_rdma_usable(m->s3);
}

bool fsx_rdma_adjacent(struct fsx_mount *m, struct fsx_chunk *a,
                       struct fsx_chunk *b)
{
  size_t oa = fsx_chunk_arena_offset(m->cache, a);
  size_t ob = fsx_chunk_arena_offset(m->cache, b);
  size_t seg = rdx_region_seg_len(m->rdma->arena);

  return ob == oa + m->rdma->chunk_size && ob / seg == oa / seg;
}

/* Attach a token made by rdx_token_for's rc (>= 0: its length). */
static int attach(struct fsx_rdma *d, struct s3_req *r, int rc,
                  const char *tok, size_t len)
{
  if (rc < 0) {
    /* a range the transport cannot name: this one goes over HTTP */
    atomic_fetch_add(&d->no_token, 1);
    log_debug("rdma: no token (%s): HTTP body", strerror(-rc));
    return 0;
  }
  rc = s3_req_set_rdma(r, tok, len);
  return rc == -ENOMEM ? rc : 0;
}

int fsx_rdma_get(struct fsx_mount *m, struct s3_req *r,
                 struct fsx_chunk *first, size_t len)
{
  struct fsx_rdma *d = m->rdma;
  char tok[RDX_TOKEN_MAX];
  int rc;

  if (!fsx_rdma_active(m) || !len)
    return 0;
  rc = rdx_token_for(d->t, d->arena, fsx_chunk_arena_offset(m->cache, first),
                     len, RDX_GET, tok, sizeof(tok));
  if (rc >= 0)
    atomic_fetch_add(&d->get_tokens, 1);
  return attach(d, r, rc, tok, len);
}

int fsx_rdma_buf(struct fsx_mount *m, struct s3_req *r, bool get, void *buf,
                 size_t len, void **reg)
{
  struct fsx_rdma *d = m->rdma;
  struct rdx_region *region;
  char tok[RDX_TOKEN_MAX];
  int rc;

  *reg = NULL;
  if (!fsx_rdma_active(m) || !len || len > RDX_SEG_MAX)
    return 0;
  rc = rdx_register(d->t, buf, len, 0, &region);
  if (rc)
    return attach(d, r, rc, NULL, 0);
  rc = rdx_token_for(d->t, region, 0, len, get ? RDX_GET : RDX_PUT, tok,
                     sizeof(tok));
  if (rc < 0) {
    rdx_unregister(region);
    return attach(d, r, rc, NULL, 0);
  }
  rc = attach(d, r, rc, tok, len);
  if (rc) {
    rdx_unregister(region);
    return rc;
  }
  atomic_fetch_add(get ? &d->get_tokens : &d->put_tokens, 1);
  *reg = region;
  return 0;
}

void fsx_rdma_buf_done(struct fsx_mount *m, void *reg)
{
  rdx_unregister(reg);
}

int fsx_rdma_run(struct fsx_mount *m, struct s3_req *r, bool get, void *buf,
                 size_t len, bool *retired)
{
  void *reg = NULL;
  int rc = fsx_rdma_buf(m, r, get, buf, len, &reg);

  *retired = false;
  if (rc)
    return rc;
  s3_req_submit(r, NULL, NULL);
  s3_req_wait(r);
  fsx_rdma_buf_done(m, reg);
  *retired = fsx_rdma_must_retire(m, r, 1);
  return 0;
}

bool fsx_rdma_must_retire(struct fsx_mount *m, const struct s3_req *r,
                          int nchunks)
{
  /* an HTTP reply (any status) means the server was done with the token;
     an attempt without one leaves it in doubt, even if a retry succeeded */
  if (!m->rdma || !s3_req_rdma_doubt(r))
    return false;
  if (atomic_fetch_add(&m->rdma->retired_chunks, (uint64_t)nchunks) == 0)
    log_warn("rdma: a GET failed with its token outstanding; its page-cache "
             "memory is retired, not reused (see rdma.retired_chunks)");
  return true;
}

size_t fsx_rdma_stats(struct fsx_mount *m, char *buf, size_t len)
{
  struct fsx_rdma *d = m->rdma;
  int n;

  n = snprintf(buf, len,
               "rdma.transport %s\nrdma.active %d\nrdma.get_tokens %llu\n"
               "rdma.put_tokens %llu\nrdma.no_token %llu\n"
               "rdma.retired_chunks %llu\n",
               d ? rdx_transport_kind_name(rdx_transport_kind(d->t)) : "off",
               fsx_rdma_active(m) ? 1 : 0,
               (unsigned long long)(d ? d->get_tokens : 0),
               (unsigned long long)(d ? d->put_tokens : 0),
               (unsigned long long)(d ? d->no_token : 0),
               (unsigned long long)(d ? d->retired_chunks : 0));
  return n < 0 ? 0 : ((size_t)n < len ? (size_t)n : (len ? len - 1 : 0));
}
