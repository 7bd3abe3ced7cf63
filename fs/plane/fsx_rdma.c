/*
 * fsx_rdma: the mount's RDMA data plane (see fsx_rdma.h). Memory a server
 * may still touch after its request ended is fsx_held's to keep.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/endpoint.h"
#include "common/slog.h"
#include "common/stats_fmt.h"
#include "fs/mount/fsx_i.h"
#include "fs/plane/fsx_held.h"
#include "fs/plane/fsx_rdma.h"
#include "fs/mem/fsx_pool.h"
#include "fs/plane/fsx_rdma_rc.h"
#include "rdma/rdx_transport.h"

/* rdma.transport's value is handed on as a transport kind: both enums are
   made from rdx_kinds.h's list, in its order */
#define X(name, up, low, tok)                                                  \
  _Static_assert((int)CFG_RDMA_##up == (int)RDX_TRANSPORT_##up,               \
                 "config and transport kinds agree: " name);
RDX_TRANSPORTS(X)
#undef X

struct fsx_rdma {
  struct rdx_transport *t;    /* fixed */
  struct rdx_region *arena;   /* fixed; NULL: GETs over HTTP */
  struct rdx_region *pool;    /* fixed; the write buffers (PUT sources),
                                 NULL: none, or registered per part */
  char *pool_base;            /* fixed */
  struct fsx_rdma_rc *rc;     /* fixed; the connect step, rc only */
  size_t chunk_size;          /* fixed */
  struct fsx_mount *m;        /* fixed */
  struct fsx_held *held;      /* fixed after open */
  _Atomic uint64_t get_tokens, put_tokens, no_token;
  /* buffers registered per request (fsx_rdma_buf): how many, and the
     microseconds spent registering and deregistering them */
  _Atomic uint64_t buf_regs, buf_reg_us, buf_dereg_us, buf_reg_fails;
  _Atomic bool told_reg;      /* the first failed registration was logged */
  _Atomic bool told_seg;      /* ... of a page cache segment */
};

/* The cache backs a segment (back) or gives it back: registered first,
   unregistered before its pages go (fsx_cache_set_hook). A segment that
   cannot be registered moves its bytes over HTTP (-ENXIO tokens). */
static void arena_hook(void *arg, size_t off, size_t len, bool back)
{
  struct fsx_rdma *d = arg;
  int rc = rdx_region_seg_set(d->arena, off, len, back);

  if (rc && !atomic_exchange(&d->told_seg, true))
    log_warn("rdma: cannot register %zu bytes of the page cache (%s): "
             "their reads go in HTTP bodies", len, strerror(-rc));
}

/* The host of every endpoint URL (a list: "URL;URL") is a loopback
   address? */
static bool endpoint_local(const char *list)
{
  bool local = list != NULL;
  const char *p = list, *at;
  char url[2048];
  size_t len;

  while (p && endpoint_list_next(&p, &at, &len)) {
    struct endpoint ep;
    const char *why;
    if (len < sizeof(url)) {
      memcpy(url, at, len);
      url[len] = '\0';
      local = local && !endpoint_parse(url, &ep, &why) &&
              endpoint_is_loopback(&ep);
    }
  }
  return local;
}

static struct rdx_params params_of(const struct cfg *c)
{
  const char *g = c->rdma.gid_index;

  return (struct rdx_params){
      .endpoint_local = endpoint_local(c->endpoint),
      .dc_access_key = c->rdma.dc_access_key,
      .devices = c->rdma.devices,
      .gid_given = g && strcmp(g, "auto") != 0,
      .gid_index = (uint8_t)(g && strcmp(g, "auto") ? atoi(g) : 0)};
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
  p.probe = true;
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
  enum rdx_transport_kind kind = (enum rdx_transport_kind)c->rdma.transport;
  struct fsx_rdma *d;
  char why[RDX_ERR_MAX], how[RDX_ERR_MAX + 16];
  void *base;
  size_t len;
  int rc;

  if (kind == RDX_TRANSPORT_OFF)
    return 0;
  d = calloc(1, sizeof(*d));
  if (!d) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  rc = rdx_transport_open(kind, &p, &d->t, why, sizeof(why));
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
  d->m = m;
  /* the page cache a segment at a time, as the cache backs them (a
     verbs kind pins only what reads use); a segment's tokens need it */
  rc = rdx_register_lazy(d->t, base, len, fsx_cache_seg_bytes(m->cache),
                         &d->arena);
  if (rc) {
    snprintf(err, errlen, "rdma: cannot register the %zu-byte page cache: %s",
             len, strerror(-rc));
    goto close_transport;
  }
  fsx_cache_set_hook(m->cache, arena_hook, d);
  if (m->pool && rdx_transport_kind(d->t) != RDX_TRANSPORT_CMA)
    fsx_pool_fix(m->pool); /* (registered whole below: pinned, it stays) */
  if (m->pool) { /* once: a part's token then costs no registration */
    size_t plen;
    void *pbase = fsx_pool_data(m->pool, &plen);
    rc = rdx_register_src(d->t, pbase, plen, fsx_pool_slot_size(m->pool),
                          &d->pool);
    if (rc) {
      log_notice("rdma: cannot register the %zu-byte write buffers (%s): "
                 "each part is registered as it is sent", plen, strerror(-rc));
      d->pool = NULL;
    }
    d->pool_base = pbase;
  }
  if (rdx_transport_kind(d->t) == RDX_TRANSPORT_RC &&
      (rc = fsx_rdma_rc_create(d->t, m->s3, &d->rc))) {
    snprintf(err, errlen, "rdma: rc: cannot make the endpoint's sessions: %s",
             strerror(-rc));
    goto unregister;
  }
  rc = fsx_held_start(m, &d->held);
  if (rc) {
    snprintf(err, errlen, "rdma: cannot start its reclaim thread: %s",
             strerror(-rc));
    goto destroy_rc;
  }
  m->rdma = d;
  /* auto: why the kinds before this one were passed over, in the line */
  if (c->rdma.transport != CFG_RDMA_AUTO)
    how[0] = '\0';
  else
    snprintf(how, sizeof(how), " (auto%s%s)", why[0] ? "; " : "", why);
  log_notice("rdma: transport %s%s, header %s, page cache registered in "
             "%zu segment(s) as reads use them",
             rdx_transport_kind_name(rdx_transport_kind(d->t)), how,
             c->rdma.token_header, rdx_region_nseg(d->arena));
  return 0;

destroy_rc:
  if (d->rc) {
    s3_client_set_stop_hook(m->s3, NULL, NULL);
    fsx_rdma_rc_destroy(d->rc);
  }
unregister:
  fsx_cache_set_hook(m->cache, NULL, NULL);
  rdx_unregister(d->pool);
  rdx_unregister(d->arena);
close_transport:
  rdx_transport_close(d->t);
  free(d);
  if (c->rdma.transport == CFG_RDMA_AUTO && rc != -ENOMEM) {
    /* auto never refuses a mount: a kind that opened but cannot register
       (a low RLIMIT_MEMLOCK, say) is as good as none */
    log_notice("rdma: auto: %s; file data goes in HTTP bodies", err);
    if (errlen)
      err[0] = '\0';
    return 0;
  }
  return rc;
}

void fsx_rdma_close(struct fsx_mount *m)
{
  struct fsx_rdma *d = m->rdma;

  if (!d)
    return;
  fsx_held_stop(d->held);
  fsx_rdma_rc_destroy(d->rc); /* the client stopped: every session put */
  fsx_cache_set_hook(m->cache, NULL, NULL);
  rdx_unregister(d->pool);
  rdx_unregister(d->arena);
  rdx_transport_close(d->t);
  free(d);
  m->rdma = NULL;
}

bool fsx_rdma_active(struct fsx_mount *m)
{
  return m->rdma && s3_client_rdma_usable(m->s3) &&
         (!m->rdma->rc || fsx_rdma_rc_usable(m->rdma->rc));
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
  if (rc == 1) {
    /* rc: no session, no connect: this one goes over HTTP */
    atomic_fetch_add(&d->no_token, 1);
    return 0;
  }
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
  if (d->rc) {
    /* may block: a session, its connect step (fsx_rdma_rc.h) */
    rc = fsx_rdma_rc_attach(d->rc, r, d->arena,
                            fsx_chunk_arena_offset(m->cache, first), len,
                            RDX_GET);
    if (rc == 0)
      atomic_fetch_add(&d->get_tokens, 1);
    return rc < 0 ? rc : attach(d, r, rc, NULL, 0);
  }
  rc = rdx_token_for(d->t, d->arena, fsx_chunk_arena_offset(m->cache, first),
                     len, RDX_GET, tok, sizeof(tok));
  if (rc >= 0)
    atomic_fetch_add(&d->get_tokens, 1);
  return attach(d, r, rc, tok, len);
}

/*
 * A PUT from the write buffers, registered once: its token from that
 * region. 0 attached (or declined for good: HTTP), 1 when the range is
 * not one the region can name (the caller registers it), -ENOMEM.
 */
static int pool_token(struct fsx_rdma *d, struct s3_req *r, const char *buf,
                      size_t len)
{
  char tok[RDX_TOKEN_MAX];
  uint64_t off;
  int rc;

  if (!d->pool || buf < d->pool_base ||
      (size_t)(buf - d->pool_base) + len > rdx_region_len(d->pool))
    return 1;
  off = (uint64_t)(buf - d->pool_base);
  if (d->rc) { /* the token attached, or 1: none */
    rc = fsx_rdma_rc_attach(d->rc, r, d->pool, off, len, RDX_PUT);
    if (rc == 1)
      return attach(d, r, 1, NULL, 0);
  } else {
    rc = rdx_token_for(d->t, d->pool, off, len, RDX_PUT, tok, sizeof(tok));
    if (rc == -EXDEV) /* across two segments: registered on its own */
      return 1;
    rc = rc < 0 ? attach(d, r, rc, NULL, 0) : attach(d, r, rc, tok, len);
  }
  if (!rc)
    atomic_fetch_add(&d->put_tokens, 1);
  return rc;
}

int fsx_rdma_buf(struct fsx_mount *m, struct s3_req *r, bool get, void *buf,
                 size_t len, void **reg)
{
  struct fsx_rdma *d = m->rdma;
  struct rdx_region *region;
  char tok[RDX_TOKEN_MAX];
  uint64_t t0;
  int rc;

  *reg = NULL;
  if (!fsx_rdma_active(m) || !len || len > RDX_SEG_MAX)
    return 0;
  if (!get && (rc = pool_token(d, r, buf, len)) != 1)
    return rc;
  /* a PUT's source is often a read-only mapping of its staging file */
  t0 = clock_mono_us();
  rc = get ? rdx_register(d->t, buf, len, 0, &region)
           : rdx_register_src(d->t, buf, len, 0, &region);
  atomic_fetch_add(&d->buf_reg_us, clock_mono_us() - t0);
  if (rc) {
    atomic_fetch_add(&d->buf_reg_fails, 1);
    if (!atomic_exchange(&d->told_reg, true))
      log_notice("rdma: cannot register a %zu-byte %s buffer (%s): such "
                 "requests go in HTTP bodies (logged once)",
                 len, get ? "GET" : "PUT", strerror(-rc));
    return attach(d, r, rc, NULL, 0);
  }
  atomic_fetch_add(&d->buf_regs, 1);
  if (d->rc) /* the token attached, or 1: none */
    rc = fsx_rdma_rc_attach(d->rc, r, region, 0, len,
                            get ? RDX_GET : RDX_PUT);
  else
    rc = rdx_token_for(d->t, region, 0, len, get ? RDX_GET : RDX_PUT, tok,
                       sizeof(tok));
  if (rc < 0 || rc == 1) {
    rdx_unregister(region);
    return rc == -ENOMEM ? rc : attach(d, r, rc, NULL, 0);
  }
  if (!d->rc)
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
  uint64_t t0;

  if (!reg)
    return;
  t0 = clock_mono_us();
  rdx_unregister(reg);
  atomic_fetch_add(&m->rdma->buf_dereg_us, clock_mono_us() - t0);
}

/* After n requests finished: wait out each one's memory in doubt (see
   fsx_rdma_run). */
static void settle(struct fsx_mount *m, struct s3_req *const *r, int n,
                   const size_t *len, bool *retired)
{
  /* an HTTP reply (any status) means the server was done with the token;
     an attempt without one leaves it in doubt, even if a retry succeeded */
  for (int i = 0; i < n; i++) {
    if (!m->rdma || !s3_req_rdma_doubt(r[i]))
      continue;
    if (!fsx_held_wait(m->rdma->held, r[i])) {
      log_warn("rdma: the wall clock is far behind a token's deadline: a "
               "%zu-byte buffer is never reused", len[i]);
      *retired = true;
    }
  }
}

int fsx_rdma_run_n(struct fsx_mount *m, struct s3_req **r, int n, bool get,
                   void *const *buf, const size_t *len, bool *retired)
{
  void *reg[FSX_RDMA_RUN_MAX] = {NULL};
  int rc = 0, i;

  *retired = false;
  if (n < 1 || n > FSX_RDMA_RUN_MAX)
    return -EINVAL;
  for (i = 0; i < n && !rc; i++)
    rc = fsx_rdma_buf(m, r[i], get, buf[i], len[i], &reg[i]);
  if (rc) { /* none submitted */
    while (i-- > 0)
      fsx_rdma_buf_done(m, reg[i]);
    return rc;
  }
  for (i = 0; i < n; i++)
    s3_req_submit(r[i], NULL, NULL);
  for (i = 0; i < n; i++) {
    s3_req_wait(r[i]);
    fsx_rdma_buf_done(m, reg[i]);
  }
  settle(m, r, n, len, retired);
  return 0;
}

/* ---- dma-bufs (GPUDirect) ---- */

/* The I/O virtual address a dma-buf's tokens name (any nonzero one: the
   NIC translates it; no memory of ours is there). */
#define DMABUF_IOVA (1ull << 32)

int fsx_rdma_dmabuf_ok(struct fsx_mount *m, char *why, size_t whylen)
{
  struct fsx_rdma *d = m->rdma;

  if (!d)
    snprintf(why, whylen, "no data plane (rdma.transport off or none found)");
  else if (!rdx_transport_dmabuf(d->t))
    snprintf(why, whylen, "rdma.transport %s cannot register device memory "
             "(rc and dc can)",
             rdx_transport_kind_name(rdx_transport_kind(d->t)));
  else if (!fsx_rdma_active(m))
    snprintf(why, whylen, "the server takes no tokens now");
  else
    return 0;
  return -EOPNOTSUPP;
}

int fsx_rdma_reg_dmabuf(struct fsx_mount *m, int fd, size_t len, bool src,
                        void **reg, char *why, size_t whylen)
{
  struct rdx_region *region = NULL;
  int rc = fsx_rdma_dmabuf_ok(m, why, whylen);

  *reg = NULL;
  if (rc)
    return rc;
  rc = rdx_register_dmabuf(m->rdma->t, fd, DMABUF_IOVA, len, src, &region);
  if (rc) {
    snprintf(why, whylen, "ibv_reg_dmabuf_mr of %zu bytes: %s", len,
             strerror(-rc));
    /* the provider cannot at all (soft-RoCE): for good (the library
       remembers it for the mount); anything else may be this buffer's or
       this moment's: that call only */
    return rc == -EOPNOTSUPP || rc == -ENOSYS || rc == -EPROTONOSUPPORT
               ? -EOPNOTSUPP
           : rc == -ENOMEM ? rc
                           : -EAGAIN;
  }
  *reg = region;
  return 0;
}

void fsx_rdma_unreg_dmabuf(struct fsx_mount *m, void *reg)
{
  (void)m;
  rdx_unregister(reg);
}

size_t fsx_rdma_dmabuf_seg(const void *reg)
{
  return rdx_region_seg_len(reg);
}

int fsx_rdma_run_dmabuf(struct fsx_mount *m, struct s3_req **r, int n,
                        bool get, void *reg, const uint64_t *off,
                        const size_t *len, bool *retired)
{
  struct fsx_rdma *d = m->rdma;
  enum rdx_op dir = get ? RDX_GET : RDX_PUT;
  char tok[RDX_TOKEN_MAX];
  int rc = 0, i;

  *retired = false;
  if (n < 1 || n > FSX_RDMA_RUN_MAX || !d)
    return -EINVAL;
  for (i = 0; i < n && !rc; i++) {
    if (!get) /* never resent from its body (no hash of it made) */
      s3_req_set_rdma_only(r[i]);
    /* the token attached, or none: nothing is sent (a body would be of
       no use: the bytes belong in, or come from, device memory) */
    if (d->rc) {
      rc = fsx_rdma_rc_attach(d->rc, r[i], reg, off[i], len[i], dir);
      if (rc == 1)
        rc = -EAGAIN; /* no session now */
    } else {
      rc = rdx_token_for(d->t, reg, off[i], len[i], dir, tok, sizeof(tok));
      rc = rc < 0 ? rc : attach(d, r[i], rc, tok, len[i]);
    }
    if (!rc)
      atomic_fetch_add(get ? &d->get_tokens : &d->put_tokens, 1);
  }
  if (rc) /* none submitted */
    return rc;
  for (i = 0; i < n; i++)
    s3_req_submit(r[i], NULL, NULL);
  for (i = 0; i < n; i++)
    s3_req_wait(r[i]);
  settle(m, r, n, len, retired);
  return 0;
}

int fsx_rdma_run(struct fsx_mount *m, struct s3_req *r, bool get, void *buf,
                 size_t len, bool *retired)
{
  return fsx_rdma_run_n(m, &r, 1, get, &buf, &len, retired);
}

bool fsx_rdma_hold_chunks(struct fsx_mount *m, const struct s3_req *r,
                          struct fsx_chunk *const *chunks, int n)
{
  if (!m->rdma || !s3_req_rdma_doubt(r))
    return false;
  fsx_held_chunks(m->rdma->held, r, chunks, n);
  return true;
}

static bool hold_mem(struct fsx_mount *m, const struct s3_req *r, void *buf,
                     size_t len, bool unmap, bool run)
{
  if (!m->rdma || !s3_req_rdma_doubt(r))
    return false;
  fsx_held_mem(m->rdma->held, r, buf, len, unmap, run);
  return true;
}

bool fsx_rdma_hold_buf(struct fsx_mount *m, const struct s3_req *r,
                       void *buf, size_t len, bool unmap)
{
  return hold_mem(m, r, buf, len, unmap, false);
}

bool fsx_rdma_hold_run(struct fsx_mount *m, const struct s3_req *r,
                       void *run)
{
  return hold_mem(m, r, run, 0, false, true);
}

size_t fsx_rdma_stats(struct fsx_mount *m, char *buf, size_t len)
{
  struct fsx_rdma *d = m->rdma;
  struct fsx_held_counts hc;

  fsx_held_counts(d ? d->held : NULL, &hc);
  const struct stats_row rows[] = {
      {"active", fsx_rdma_active(m)},
      {"get_tokens", d ? d->get_tokens : 0},
      {"put_tokens", d ? d->put_tokens : 0},
      {"no_token", d ? d->no_token : 0},
      {"retired_chunks", hc.retired_chunks},
      {"reclaimed_chunks", hc.reclaimed_chunks},
      {"held_chunks", hc.retired_chunks - hc.reclaimed_chunks},
      {"retired_bufs", hc.retired_bufs},
      {"reclaimed_bufs", hc.reclaimed_bufs},
      {"buf_regs", d ? d->buf_regs : 0},
      {"buf_reg_fails", d ? d->buf_reg_fails : 0},
      {"buf_reg_us", d ? d->buf_reg_us : 0},
      {"buf_dereg_us", d ? d->buf_dereg_us : 0},
      /* the page cache's segments in use and the write buffers */
      {"registered_bytes", d ? rdx_region_live_bytes(d->arena) +
                                   rdx_region_live_bytes(d->pool)
                             : 0},
  };
  size_t n = stats_fmt_text(
      buf, len, 0, "rdma.transport",
      d ? rdx_transport_kind_name(rdx_transport_kind(d->t)) : "off");

  n = stats_fmt_rows(buf, len, n, "rdma.", rows, STATS_NROWS(rows));
  return d && d->rc ? fsx_rdma_rc_stats(d->rc, buf, len, n) : n;
}
