/*
 * gw_proxy: the upstream side of s3rdma-gateway. A fixed pool of worker
 * threads, each owning one curl easy handle (its connections to upstream
 * are reused from request to request), executes requests handed over by
 * the HTTP side (gw_http.c): re-sign with the upstream keys, forward, and
 * either stream the bodies through the request's two bounded pipes or, for
 * a token request, move the object bytes with rdx_serve through a chunk
 * buffer (gw_upstream.c, gw_serve.c). A request and how its connection
 * thread and its worker share it: gw_req.h.
 */
#ifndef S3R_GW_PROXY_H
#define S3R_GW_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway/gw_req.h"
#include "gateway/gw_stats.h"
#include "rdma/rdx_server.h"

struct gw_dcallow;

struct gw_config {
  const char *listen;        /* "127.0.0.1:7481" */
  const char *upstream;      /* "http://127.0.0.1:7480" */
  const char *access_key, *secret_key;          /* the clients' keys */
  const char *up_access_key, *up_secret_key;    /* upstream's keys */
  const char *region;        /* NULL: the client's credential scope */
  const char *token_header;  /* "x-amz-rdma-token" */
  unsigned max_conns;        /* 64 */
  unsigned threads;          /* 16 */
  size_t chunk_size;         /* 1 MiB: rdma chunk buffer */
  size_t pipe_size;          /* 256 KiB: each body pipe */
  unsigned timeout_s;        /* 120: idle limit for every wait */
  unsigned auth_timeout_s;   /* 10: a connection's time in all until a
                                request of it is verified */
  unsigned conns_per_addr;   /* 16: connections from one non-loopback
                                address (0: no limit) */
  unsigned strangers;        /* max_conns / 2: unverified connections in
                                all (0: no limit) */
  unsigned strangers_per_peer; /* 16: ... of one peer (local uid, remote
                                address) holding no verified one */
  unsigned uploads_per_addr; /* threads / 2: bodies streamed upstream at
                                once for one peer (0: no limit) */
  uint64_t max_put;          /* 5 GiB */
  bool serve_none;           /* --serve none: decline every token (501) */
  const struct gw_dcallow *dc_targets; /* the DC targets clients may name */
  /* test hooks (0: off), hidden from --help's main list */
  unsigned test_token_delay_ms; /* a token request waits this long before
                                   it moves a byte */
  unsigned test_token_delay_n;  /* ... only the first n of them (0: all) */
  unsigned test_put_hold_ms;    /* a token PUT waits this long after reading
                                   the client's last bytes, before the last
                                   of them go upstream */
  bool test_put_no_reply;       /* a PUT served by rdma is answered without
                                   x-amz-rdma-reply (as some servers do) */
};

struct gw_proxy;

/*
 * Start the pool (cfg->threads workers). cfg, stats and rdx are borrowed
 * for the proxy's life. Returns 0 and *out, -EINVAL (bad upstream URL) or
 * -ENOMEM, with a reason in err.
 */
int gw_proxy_create(const struct gw_config *cfg, struct gw_stats *stats,
                    struct rdx_server *rdx, struct gw_proxy **out, char *err,
                    size_t errlen) __attribute__((warn_unused_result));
/* Stop the workers (after every request finished) and free. */
void gw_proxy_destroy(struct gw_proxy *p);

/* Queue r for a worker. The worker sets ready, then done (under r->mu). */
void gw_proxy_submit(struct gw_proxy *p, struct gw_req *r);

#endif
