/*
 * gw_stats: counters as text (see gw_stats.h).
 */
#include "gateway/gw_stats.h"

#include <stdio.h>

size_t gw_stats_format(struct gw_stats *s, char *buf, size_t len)
{
  const struct {
    const char *name;
    _Atomic uint64_t *v;
  } rows[] = {
      {"requests", &s->requests},
      {"auth_failures", &s->auth_failures},
      {"token_gets", &s->token_gets},
      {"token_puts", &s->token_puts},
      {"rdma_bytes_get", &s->rdma_bytes_get},
      {"rdma_bytes_put", &s->rdma_bytes_put},
      {"http_bytes_in", &s->http_bytes_in},
      {"http_bytes_out", &s->http_bytes_out},
      {"declined", &s->declined},
      {"refused", &s->refused},
      {"token_failures", &s->token_failures},
      {"upstream_errors", &s->upstream_errors},
      {"upstream_5xx", &s->upstream_5xx},
      {"bad_requests", &s->bad_requests},
      {"refused_conns", &s->refused_conns},
      {"slowdowns", &s->slowdowns},
      {"clients_gone", &s->clients_gone},
      {"token_expired", &s->token_expired},
      {"upstream_abandoned", &s->upstream_abandoned},
  };
  size_t off = 0;

  if (len)
    buf[0] = '\0';
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]) && off < len; i++) {
    int n = snprintf(buf + off, len - off, "%s %llu\n", rows[i].name,
                     (unsigned long long)atomic_load_explicit(
                         rows[i].v, memory_order_relaxed));
    if (n < 0)
      break;
    off += (size_t)n;
  }
  return off < len ? off : (len ? len - 1 : 0);
}
