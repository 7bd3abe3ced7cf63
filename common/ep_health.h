/*
 * ep_health: the health of a set of servers that serve the same thing (the
 * S3 client's endpoints, s3_eps.c; the gateway's upstreams, gw_ups.c)
 * and the choice of one for each attempt. An attempt goes to the server
 * with the fewest attempts in flight among those up (ties in turn); a
 * server that fails EP_HEALTH_BURST attempts in a row (no connection, a
 * reset, a timeout, a 5xx but 501) is down for a spell (1 s, doubling to
 * 30 s); when its spell is over its owner probes it (a request of its own,
 * not an application's) and any answer but a 5xx brings it up; a probe
 * that fails starts the next spell, twice as long. Attempts that were on
 * their way when it died count as failures but start no spell. When
 * every server is down, attempts go to the one back soonest (and count as
 * probes for the spell). One server alone is never taken out.
 *
 * Threads: none of its own. The counters are atomics, read by anyone; the
 * rest belongs to the caller's lock (the S3 engine's thread; the gateway's
 * upstream mutex).
 */
#ifndef S3R_EP_HEALTH_H
#define S3R_EP_HEALTH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EP_HEALTH_BURST 3

/* How an attempt came to its server (ep_health_pick, ep_health_end). */
enum ep_try {
  EP_TRY_UP,    /* picked while the server was up */
  EP_TRY_DOWN,  /* picked while it was down (every server down) */
  EP_TRY_PROBE, /* a probe of the owner's: not counted as an attempt */
};

struct ep_health {
  const char *name;               /* fixed: said in the log (its URL) */
  unsigned inflight;              /* caller's lock: attempts on the wire */
  unsigned fails;                 /* caller's lock: failed in a row */
  unsigned backoff_ms;            /* caller's lock: the next down spell */
  uint64_t down_until_ms;         /* caller's lock: 0 when up */
  bool probing;                   /* caller's lock: a probe is out (or,
                                     every server down, an attempt) */
  _Atomic bool down;              /* for the stats */
  atomic_ullong attempts, failures, downs, probes, bytes; /* counters */
};

/* v[0..n): each up, named by names[i] (kept, not copied). */
void ep_health_init(struct ep_health *v, unsigned n, const char *const *names);

/* The server an attempt goes to (avoid: a bit per server to pass over
   while another is up, those that failed this request), counted in flight
   until ep_health_end; *turn moves the ties round; *how: EP_TRY_UP or
   EP_TRY_DOWN. n at most 32. */
unsigned ep_health_pick(struct ep_health *v, unsigned n, unsigned *turn,
                        uint32_t avoid, enum ep_try *how);
/* An attempt goes to h, chosen by its owner (a request bound to it):
   counted in flight until ep_health_end; *how as ep_health_pick's. */
void ep_health_use(struct ep_health *h, enum ep_try *how);
/* A probe of server h goes out: counted in flight until ep_health_end. */
void ep_health_take(struct ep_health *h);
/* An attempt picked (how) never went out: nothing learnt of the server. */
void ep_health_release(struct ep_health *h, enum ep_try how);
/* The attempt on v[i] (how it came there) ended: failed says the server
   failed it; bytes it moved. True when another server is up to take a
   retry at once. */
bool ep_health_end(struct ep_health *v, unsigned n, unsigned i,
                   enum ep_try how, bool failed, uint64_t bytes,
                   uint64_t now_ms);
/* Is a server up that is not in avoid (a bit per server)? */
bool ep_health_other_up(const struct ep_health *v, unsigned n,
                        uint32_t avoid);
/* Is h due a probe now (down, its spell over, none out)? If it is down
   with its spell running, *next_ms is lowered to the spell's end. */
bool ep_health_probe_due(const struct ep_health *h, uint64_t now_ms,
                         uint64_t *next_ms);

/* Rows "<prefix>_attempts{<label>=I}" ... _failures, _downs, _up, _probes,
   _bytes for each of v[0..n) (none when n is 1), appended to buf as
   stats_fmt_rows does. */
size_t ep_health_format(const struct ep_health *v, unsigned n,
                        const char *prefix, const char *label, char *buf,
                        size_t len, size_t off);

#endif
