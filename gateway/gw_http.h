/*
 * gw_http: the client side of s3rdma-gateway, a libmicrohttpd server. See
 * gw_http.c for the threading.
 */
#ifndef S3R_GW_HTTP_H
#define S3R_GW_HTTP_H

#include <stddef.h>

#include "gateway/gw_proxy.h"

struct gw_http;

/*
 * Bind cfg->listen now (so a busy port fails here, with the reason in err)
 * and start serving. cfg, stats, proxy and rdx are borrowed. Returns 0 and
 * *out, -EINVAL (bad --listen), -EADDRINUSE and other bind errors, -ENOMEM.
 */
int gw_http_start(const struct gw_config *cfg, struct gw_stats *stats,
                  struct gw_proxy *proxy, struct rdx_server *rdx,
                  struct gw_http **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The port actually bound (useful with port 0). */
unsigned gw_http_port(const struct gw_http *h);

/* Stop accepting, finish the requests in flight, free. */
void gw_http_stop(struct gw_http *h);

#endif
