/*
 * gw_upstream: the upstream S3 server of s3rdma-gateway (--upstream) and
 * one request's HTTP exchange with it, on a proxy worker's curl easy
 * handle: the URL, the forwarded headers re-signed with the upstream keys,
 * the handle's options, the transfer (bodies through the request's pipes,
 * token bytes through gw_serve.c), and what its outcome means for the
 * client's answer.
 */
#ifndef S3R_GW_UPSTREAM_H
#define S3R_GW_UPSTREAM_H

#include <stddef.h>

#include <curl/curl.h>

#include "gateway/gw_proxy.h"

struct gw_upstream;

/*
 * Parse cfg->upstream (http(s)://host[:port][/], nothing else). cfg, stats
 * and rdx are borrowed for the upstream's life. Returns 0 and *out, -EINVAL
 * with a reason in err, or -ENOMEM.
 */
int gw_upstream_create(const struct gw_config *cfg, struct gw_stats *stats,
                       struct rdx_server *rdx, struct gw_upstream **out,
                       char *err, size_t errlen)
    __attribute__((warn_unused_result));
void gw_upstream_destroy(struct gw_upstream *up);

/*
 * Run r upstream on the worker's handle c (reset first; its connections
 * are kept). On return r is ready, its answer decided; the caller then
 * finishes it (gw_req_finish).
 */
void gw_upstream_run(struct gw_upstream *up, CURL *c, struct gw_req *r);

#endif
