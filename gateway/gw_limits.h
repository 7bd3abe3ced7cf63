/*
 * gw_limits: what one client address may hold of the gateway at once: its
 * connections (non-loopback addresses only: every local client shares
 * 127.0.0.1, and local users are told apart by uid where it matters) and
 * its requests that stream a body through an upstream worker (every
 * address: a client trickling bodies must not hold more than its share of
 * the --threads workers).
 *
 * DESIGN (threads): the counters are protected by the limits' mutex; every
 * function may run on any thread. An address's entry exists while one of
 * its counters is non-zero (at most one entry per open connection).
 */
#ifndef S3R_GW_LIMITS_H
#define S3R_GW_LIMITS_H

#include <stdbool.h>
#include <sys/socket.h>

struct gw_limits;

/* 0 means no limit. Returns NULL when out of memory. */
struct gw_limits *gw_limits_create(unsigned conns_per_addr,
                                   unsigned uploads_per_addr);
void gw_limits_destroy(struct gw_limits *l);

/* May a connection from a be accepted (fewer than conns_per_addr open)? */
bool gw_limits_conn_ok(struct gw_limits *l, const struct sockaddr *a);
/* A connection from a opened / closed (count it; loopback not counted). */
void gw_limits_conn_open(struct gw_limits *l, const struct sockaddr *a);
void gw_limits_conn_close(struct gw_limits *l, const struct sockaddr *a);

/*
 * Take one of a's upload slots: true, or false when a already streams
 * uploads_per_addr bodies (answer 503 SlowDown). Give it back with
 * gw_limits_upload_done.
 */
bool gw_limits_upload_take(struct gw_limits *l, const struct sockaddr *a);
void gw_limits_upload_done(struct gw_limits *l, const struct sockaddr *a);

#endif
