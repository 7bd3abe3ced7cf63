/*
 * gw_stats: counters as text (see gw_stats.h).
 */
#include "gateway/gw_stats.h"

#include "common/stats_fmt.h"

size_t gw_stats_format(struct gw_stats *s, char *buf, size_t len)
{
#define ROW(field)                                                             \
  {#field, atomic_load_explicit(&s->field, memory_order_relaxed)}
  const struct stats_row rows[] = {
      ROW(requests),        ROW(auth_failures),   ROW(token_gets),
      ROW(token_puts),      ROW(rdma_bytes_get),  ROW(rdma_bytes_put),
      ROW(http_bytes_in),   ROW(http_bytes_out),  ROW(declined),
      ROW(refused),         ROW(token_failures),  ROW(upstream_errors),
      ROW(upstream_5xx),    ROW(bad_requests),    ROW(refused_conns),
      ROW(slowdowns),       ROW(clients_gone),    ROW(token_expired),
      ROW(upstream_abandoned), ROW(rc_connects),     ROW(rc_connect_refused),
      ROW(rc_disconnects),  ROW(rc_sessions),       ROW(refused_strangers),
      ROW(refused_peer_strangers), ROW(head_timeouts), ROW(evicted_strangers),
      ROW(refused_gone),
  };
#undef ROW

  size_t off = stats_fmt_rows(buf, len, 0, NULL, rows, STATS_NROWS(rows));

  return s->more ? s->more(s->more_arg, buf, len, off) : off;
}
