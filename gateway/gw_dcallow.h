/*
 * gw_dcallow: which DC targets a client may name. A dc token names the
 * client's DCT by number, LID/GID and the memory key; the gateway then
 * RDMA-writes and -reads wherever that names, so a key holder could point
 * it at any DCT of the fabric that takes the access key. The rule
 * (--rdma-dc-targets) binds the target to the client:
 *  - "peer" (the default): RoCE targets only: the token's GID must be the
 *    address the request came from (RoCE v2: the IPv4-mapped GID of an
 *    IPv4 address, the IPv6 address itself; from a loopback client, an
 *    address of this host), and its LID 0. A token without a GID or with
 *    a LID (InfiniBand, where the LID routes the RDMA whatever the GID
 *    says) is refused.
 *  - a list, comma-separated, of IPv4 or IPv6 prefixes ("10.0.0.0/24",
 *    "fd00::/64", an address alone is /32 or /128; host bits ignored) and
 *    "lid:N" or "lid:N-M" ranges (decimal or 0x hex): every address the
 *    token gives must be listed, its GID in a prefix and its LID (when
 *    not 0) in a range. For fabrics where clients speak HTTP from another
 *    network than their RDMA one, and for InfiniBand.
 *  - "any": every target (the fabric is trusted, as before); the gateway
 *    warns at start.
 * The gateway has one client key, so the rule holds for every client.
 *
 * Stateless after parsing; safe from any thread.
 */
#ifndef S3R_GW_DCALLOW_H
#define S3R_GW_DCALLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "rdma/rdx_token.h"

struct gw_dcallow;

/*
 * Parse spec (NULL: "peer"). Returns 0 and *out (free with
 * gw_dcallow_free), -EINVAL with a message naming the entry in err, or
 * -ENOMEM.
 */
int gw_dcallow_parse(const char *spec, struct gw_dcallow **out, char *err,
                     size_t errlen);
void gw_dcallow_free(struct gw_dcallow *a);

/* Is the rule "any"? */
bool gw_dcallow_is_any(const struct gw_dcallow *a);

/*
 * May the client at address client name dc's target? 0, or -EACCES with
 * the reason in why (naming the rule, not the addresses).
 */
int gw_dcallow_check(const struct gw_dcallow *a, const struct rdx_dc *dc,
                     const struct sockaddr *client, char *why, size_t whylen);

#endif
