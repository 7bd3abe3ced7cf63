/*
 * rdx_rc_pool: the client's sessions toward one endpoint, as a pool of
 * opaque objects: a cap on how many exist, one user at a time each
 * (checkout, return), and dropping those found broken. Knows nothing of
 * verbs (rdx_rc_client.c keeps queue pairs in it), so it is unit-tested
 * without a device.
 *
 * An RC session serves one request at a time (the dialect): a request
 * takes a session with rdx_rc_pool_get and gives it back with
 * rdx_rc_pool_put when its reply is in. When every session is busy and the
 * cap is not reached, get reserves a slot instead and the caller makes
 * (connects) a new session, then puts it, or puts NULL if that failed.
 * A session whose transfer failed (a flush error, the server's 500, an
 * unknown session after a server restart) is put back broken and freed;
 * rdx_rc_pool_flush also frees every idle one and every busy one when it
 * comes back (a server restart breaks them all), so the next get
 * reconnects.
 *
 * DESIGN (threads): every function may run on any thread. The slots and
 * counters are protected by the pool's mutex; a waiter sleeps on its
 * condition variable (CLOCK_MONOTONIC). Objects are freed (the free
 * callback) with the mutex released.
 */
#ifndef S3R_RDX_RC_POOL_H
#define S3R_RDX_RC_POOL_H

#include <stdbool.h>
#include <stdint.h>

#define RDX_RC_POOL_CAP_MAX 1024

struct rdx_rc_pool;

/* Frees one session (the pool's owner decides how). */
typedef void (*rdx_rc_pool_free_fn)(void *obj, void *arg);

struct rdx_rc_pool_stats {
  unsigned cap, idle, busy; /* busy: taken, reserved slots included */
  uint64_t made;            /* sessions put for a reserved slot */
  uint64_t dropped;         /* sessions freed as broken or flushed */
};

/* A pool of at most cap (1..RDX_RC_POOL_CAP_MAX) sessions. 0 and *out,
   -EINVAL or -ENOMEM. */
int rdx_rc_pool_create(unsigned cap, rdx_rc_pool_free_fn free_fn, void *arg,
                       struct rdx_rc_pool **out)
    __attribute__((warn_unused_result));

/* Free every idle session and the pool; NULL does nothing. Every session
   taken must have been put first. */
void rdx_rc_pool_destroy(struct rdx_rc_pool *p);

/*
 * Take a session: 0 and *obj an idle one (the most recently used), or 0
 * and *obj NULL: a slot is reserved for a new one the caller makes and
 * puts (or puts NULL). When all cap are busy: wait for one until until
 * (CLOCK_MONOTONIC ms, clock_mono_ms) and then -ETIMEDOUT; until 0: do not
 * wait, -EAGAIN. -EINVAL: p or obj NULL.
 */
int rdx_rc_pool_get(struct rdx_rc_pool *p, uint64_t until, void **obj)
    __attribute__((warn_unused_result));

/*
 * Give back what get returned. obj NULL: give up a reserved slot. broken,
 * or a flush since it was taken: obj is freed. An obj the pool does not
 * know fills a reserved slot (a new session); with no slot reserved it is
 * freed.
 */
void rdx_rc_pool_put(struct rdx_rc_pool *p, void *obj, bool broken);

/* Free every idle session now and every busy one when it is put. */
void rdx_rc_pool_flush(struct rdx_rc_pool *p);

void rdx_rc_pool_stats(struct rdx_rc_pool *p, struct rdx_rc_pool_stats *st);

#endif
