/*
 * gw_conns: the gateway's client connections as the admission rules see
 * them. Each connection opens as a stranger of its peer (gw_limits.h: a
 * local uid, or a remote address): counted against the peer's share and
 * all strangers' (refused at once over either), and given --auth-timeout
 * seconds in all, not idle, to carry a request whose signature verifies.
 * A stranger past that deadline is shut down (its socket: the connection's
 * thread then reads end of file and closes it), however slowly it kept
 * sending. Once verified, a connection leaves the strangers and is held
 * only to the server's idle limit.
 *
 * DESIGN (threads): MHD's connection notifications (gw_conns_open and
 * gw_conns_close: its listening thread and the connections' own threads)
 * and first access calls (gw_conns_verified) may run on any thread; one
 * watcher thread of the module's shuts strangers down at their deadline.
 * The list of strangers waiting for their deadline is protected by the
 * module's mutex; a record's socket is a duplicate of the connection's,
 * owned by the record, so it can be shut down by the watcher without
 * racing MHD's close of the original.
 */
#ifndef S3R_GW_CONNS_H
#define S3R_GW_CONNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/gw_limits.h"
#include "gateway/gw_stats.h"

struct gw_conns;
struct gw_conn;

/* deadline_ms: a stranger's time to be verified. Returns 0 or -errno. */
int gw_conns_create(struct gw_limits *limits, struct gw_stats *stats,
                    unsigned deadline_ms, struct gw_conns **out);
/* After the HTTP server has stopped (every connection closed). */
void gw_conns_destroy(struct gw_conns *c);

/*
 * A connection accepted on socket fd from client address a: its record,
 * or NULL when out of memory. Unless gw_conn_admitted, it was refused
 * (counted in stats; its socket shut down, so that the server closes it
 * at once): serve none of its requests. Either is closed with
 * gw_conns_close.
 */
struct gw_conn *gw_conns_open(struct gw_conns *c, int fd,
                              const struct sockaddr *a);
bool gw_conn_admitted(const struct gw_conn *k);
/* Its first verified request: no longer a stranger. */
void gw_conns_verified(struct gw_conns *c, struct gw_conn *k);
/* Closed by the server: the record freed. */
void gw_conns_close(struct gw_conns *c, struct gw_conn *k);

/* Count a refusal in stats (accept-time refusals too). */
void gw_conns_count_refusal(struct gw_stats *s, enum gw_refusal why);

/* Its peer (for upload slots). */
const struct gw_peer_id *gw_conn_peer(const struct gw_conn *k);

#endif
