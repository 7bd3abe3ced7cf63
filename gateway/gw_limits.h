/*
 * gw_limits: what one peer may hold of the gateway at once. A peer is a
 * local user (a client on this host, known by its socket's uid: every
 * local client shares 127.0.0.1) or a remote address (IPv6: its /64).
 * Counted per peer:
 *  - strangers: connections that have not yet carried a verified request.
 *    A peer may hold at most strangers_per_peer of them (four times that
 *    while it holds a verified connection, unless its uid is unknown); all
 *    peers together at most strangers, where a newcomer whose peer holds
 *    fewer than the largest peer is admitted by evicting the largest
 *    peer's oldest stranger (so that no two peers can fill them and lock
 *    everyone else out);
 *  - connections of a remote address, verified or not: at most
 *    conns_per_addr (loopback peers are told apart by uid instead);
 *  - bodies streaming through an upstream worker: at most uploads_per_peer
 *    (a key holder trickling bodies must not hold more than its share of
 *    the --threads workers).
 *
 * DESIGN (threads): the counters are protected by the limits' mutex; every
 * function may run on any thread. A peer's entry exists while one of its
 * counters is non-zero.
 */
#ifndef S3R_GW_LIMITS_H
#define S3R_GW_LIMITS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct gw_limits;

/* Each 0 means no limit. */
struct gw_limits_cfg {
  unsigned conns_per_addr;     /* connections of one remote address */
  unsigned strangers;          /* unverified connections, all peers */
  unsigned strangers_per_peer; /* ... of a peer with no verified one */
  unsigned uploads_per_peer;   /* bodies streamed at once by one peer */
};

/* A peer's identity (a value: copy it freely). */
struct gw_peer_id {
  uint8_t kind; /* 0: unknown family, 4/6: a remote address, 'u': a uid */
  uint8_t b[16];
};

/*
 * The peer of a client at address a: for a client on this host (local),
 * the user uid (-1: unknown, one peer for all unknowns), else the address
 * (v4-mapped IPv6 as IPv4, IPv6 as its /64).
 */
struct gw_peer_id gw_peer_id_of(const struct sockaddr *a, bool local,
                                int64_t uid);

/* Why a connection is refused (0: it is not). */
enum gw_refusal {
  GW_ADMIT = 0,
  GW_REFUSE_ADDR,      /* its remote address holds conns_per_addr */
  GW_REFUSE_STRANGERS, /* strangers in all at the limit, its peer among
                          the largest */
  GW_REFUSE_PEER,      /* its peer holds its share of strangers */
  GW_REFUSE_GONE,      /* a local client whose socket is already gone */
};

/* Returns NULL when out of memory. */
struct gw_limits *gw_limits_create(const struct gw_limits_cfg *cfg);
void gw_limits_destroy(struct gw_limits *l);

/*
 * Before a connection from address a is accepted (its peer not yet known):
 * the checks a remote address alone decides (its connections, its
 * strangers); GW_ADMIT for any other.
 */
enum gw_refusal gw_limits_precheck(struct gw_limits *l,
                                   const struct sockaddr *a);

/*
 * A connection of peer p opens as a stranger: counted and GW_ADMIT, or
 * refused and not counted. *evicted: set when it was admitted over the
 * strangers in all, to the peer one of whose strangers must go (the
 * caller shuts it down; it stays counted until it closes). Every admitted
 * connection is closed with gw_limits_close (verified: whether
 * gw_limits_verified was called for it, when its first request was
 * verified).
 */
enum gw_refusal gw_limits_open(struct gw_limits *l, const struct gw_peer_id *p,
                               bool *evict, struct gw_peer_id *evicted);
void gw_limits_verified(struct gw_limits *l, const struct gw_peer_id *p);
void gw_limits_close(struct gw_limits *l, const struct gw_peer_id *p,
                     bool verified);

/* Strangers open now, all peers. */
unsigned gw_limits_strangers(struct gw_limits *l);

/*
 * Take one of p's upload slots: true, or false when p already streams
 * uploads_per_peer bodies (answer 503 SlowDown). Give it back with
 * gw_limits_upload_done.
 */
bool gw_limits_upload_take(struct gw_limits *l, const struct gw_peer_id *p);
void gw_limits_upload_done(struct gw_limits *l, const struct gw_peer_id *p);

#endif
