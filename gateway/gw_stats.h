/*
 * gw_stats: the gateway's counters. Each counter is atomic (relaxed):
 * any thread adds, GET /_s3rdma/stats and exit print them.
 */
#ifndef S3R_GW_STATS_H
#define S3R_GW_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct gw_stats {
  _Atomic uint64_t requests;       /* requests answered (any outcome) */
  _Atomic uint64_t auth_failures;  /* refused by SigV4 verification */
  _Atomic uint64_t token_gets;     /* token GETs served by rdma */
  _Atomic uint64_t token_puts;     /* token PUTs served by rdma */
  _Atomic uint64_t rdma_bytes_get; /* bytes written into clients */
  _Atomic uint64_t rdma_bytes_put; /* bytes read from clients */
  _Atomic uint64_t http_bytes_in;  /* request bodies, client -> upstream */
  _Atomic uint64_t http_bytes_out; /* response bodies, upstream -> client */
  _Atomic uint64_t declined;       /* tokens answered 501 */
  _Atomic uint64_t refused;        /* tokens refused 400/403 */
  _Atomic uint64_t token_failures; /* token transfers failed midway */
  _Atomic uint64_t upstream_errors; /* transport errors talking upstream */
  _Atomic uint64_t upstream_5xx;   /* 5xx statuses from upstream */
  _Atomic uint64_t bad_requests;   /* malformed targets, framing, headers */
  _Atomic uint64_t refused_conns;  /* connections over --max-conns-per-addr */
  _Atomic uint64_t refused_strangers; /* connections refused: unverified
                                      ones in all at --max-strangers */
  _Atomic uint64_t refused_peer_strangers; /* ... their peer (a local uid,
                                      a remote address) at
                                      --max-strangers-per-peer */
  _Atomic uint64_t head_timeouts;  /* connections closed at --auth-timeout
                                      without a verified request */
  _Atomic uint64_t evicted_strangers; /* ... closed to make room for a
                                      smaller peer's (strangers in all full) */
  _Atomic uint64_t refused_gone;   /* local clients whose socket had gone
                                      when they were looked up */
  _Atomic uint64_t slowdowns;      /* bodies over --max-uploads-per-addr */
  _Atomic uint64_t clients_gone;   /* connections closed by their client
                                      before the answer: request abandoned */
  _Atomic uint64_t token_expired;  /* token transfers stopped by the
                                      client's deadline (x-amz-rdma-expires) */
  _Atomic uint64_t upstream_abandoned; /* upstream requests aborted because
                                      their client left or their deadline
                                      passed */
  _Atomic uint64_t rc_connects;    /* RC connect steps accepted (200) */
  _Atomic uint64_t rc_connect_refused; /* RC connect steps refused
                                      (400, 405, 500, 501, 503) */
  _Atomic uint64_t rc_disconnects; /* RC disconnects answered (204) */
  _Atomic uint64_t rc_sessions;    /* gauge: RC sessions open, as of the
                                      last connect step or stats page */
  /* more rows after these (the upstreams', gw_ups_format): set before
     the first request, cleared after the last */
  size_t (*more)(const void *arg, char *buf, size_t len, size_t off);
  const void *more_arg;
};

#define gw_stat_add(s, field, n)                                               \
  atomic_fetch_add_explicit(&(s)->field, (uint64_t)(n), memory_order_relaxed)

/* "name value\n" lines into buf (NUL-terminated); returns the length. */
size_t gw_stats_format(struct gw_stats *s, char *buf, size_t len);

#endif
