/*
 * gw_peer: who is on the other end of a client's TCP connection, for the
 * cma transport's checks (rdx_req.peer_local, rdx_req.peer_uid).
 * Stateless; safe from any thread.
 */
#ifndef S3R_GW_PEER_H
#define S3R_GW_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Is a a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104)? */
bool gw_addr_is_loopback(const struct sockaddr *a);

/* gw_peer_uid's answer when NETLINK_SOCK_DIAG knows no such full socket
   (the peer closed it, or it is not on this host). */
#define GW_PEER_GONE (-2)

/*
 * The uid owning the peer's socket of the TCP connection whose local end is
 * local and remote end is remote (as the gateway sees them: the peer's
 * socket has them swapped). Only meaningful for a peer on this host.
 * Looks the exact 4-tuple up with NETLINK_SOCK_DIAG; only where netlink
 * cannot be asked at all, in /proc/net/tcp(6) (a scan whose length other
 * users control: never for a socket netlink did not find). Returns the
 * uid, GW_PEER_GONE, or -1 when unknown.
 */
int64_t gw_peer_uid(const struct sockaddr *local, const struct sockaddr *remote);

/* The same through NETLINK_SOCK_DIAG only (-1: netlink unavailable). */
int64_t gw_peer_uid_netlink(const struct sockaddr *local,
                            const struct sockaddr *remote);

/* The same through /proc/net/tcp(6) only (exported for the unit test). */
int64_t gw_peer_uid_proc(const struct sockaddr *local,
                         const struct sockaddr *remote);

#endif
