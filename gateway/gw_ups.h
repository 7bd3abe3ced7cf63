/*
 * gw_ups: the upstream S3 servers of s3rdma-gateway (--upstream, one URL
 * or several serving the same buckets: "URL;URL", or the flag given again)
 * and their health (common/ep_health.h): each upstream request goes to the
 * one up with the fewest in flight; three failures in a row (no
 * connection, a reset, a timeout, a 5xx but 501) take one out for a spell
 * of 1 s, doubling to 30 s while it stays dead; when a spell is over the
 * prober thread sends it GET / unsigned (any answer but a 5xx brings it
 * back), so that no client's
 * request is the one to find it still dead. One upstream alone is used
 * whatever it answers, and nothing is probed.
 *
 * Threads: gw_ups_pick and gw_ups_end from any worker, under the set's
 * mutex; the prober thread (several upstreams only) under the same.
 */
#ifndef S3R_GW_UPS_H
#define S3R_GW_UPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "common/ep_health.h"

#define GW_UPS_MAX 16

struct gw_ups;

/* Parse list (http(s)://host[:port][/] each, separated by ';') and start
   the prober where it names several. 0 and *out, -EINVAL with the
   reason in err (naming --upstream and the URL), or -ENOMEM. */
int gw_ups_create(const char *list, struct gw_ups **out, char *err,
                  size_t errlen) __attribute__((warn_unused_result));
void gw_ups_destroy(struct gw_ups *s);

unsigned gw_ups_count(const struct gw_ups *s);
/* The upstream a request goes to (avoid: a bit per upstream that refused
   it already), in flight until gw_ups_end; *how: see ep_health_pick. */
unsigned gw_ups_pick(struct gw_ups *s, uint32_t avoid, enum ep_try *how);
/* A request picked for upstream i never went out. */
void gw_ups_release(struct gw_ups *s, unsigned i, enum ep_try how);
/* Upstream i's scheme, host and port (no path), and its Host header. */
CURLU *gw_ups_base(const struct gw_ups *s, unsigned i);
const char *gw_ups_hostport(const struct gw_ups *s, unsigned i);
const char *gw_ups_url(const struct gw_ups *s, unsigned i);
/* The request on upstream i ended: failed says upstream failed it; bytes
   it moved. True when another upstream is up to take it again. */
bool gw_ups_end(struct gw_ups *s, unsigned i, enum ep_try how, bool failed,
                uint64_t bytes);
/* Did this outcome fail the upstream (not the client, not us)? */
bool gw_ups_failed(CURLcode cc, long status);
/* gw_ups_end by an attempt's outcome (cc, and the status when it has
   one): a throttle (503, 429) of an upstream up asks it for less, and is
   neither a failure nor an answer (released; a balancer's 503 over a dead
   server must not reset its run of failures); of one out, it keeps it out
   (the spell goes on, as if failed). */
bool gw_ups_outcome(struct gw_ups *s, unsigned i, enum ep_try how,
                    CURLcode cc, long status, uint64_t bytes);

/* "upstream_attempts{upstream=I}" ... _failures, _downs, _up, _probes,
   _bytes per upstream (none with one), appended as stats_fmt_rows does. */
size_t gw_ups_format(const void *s, char *buf, size_t len, size_t off);

#endif
