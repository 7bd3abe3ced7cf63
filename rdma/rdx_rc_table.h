/*
 * rdx_rc_table: the RC server's sessions: a table of opaque objects (queue
 * pairs, for rdx_rc_server.c) under their 16-byte session ids, with a cap,
 * idle expiry and a busy flag (one transfer at a time per session). Knows
 * nothing of verbs and takes the time as an argument, so it is unit-tested
 * without a device or a clock.
 *
 * The dialect's rules (docs/rdma.md, "RC dialect"): at most 1024
 * sessions (a connect beyond: 503); a session unused for 300 s ("used":
 * connected or a transfer ended) is dropped, lazily, at the next connect;
 * a busy or unknown session fails a transfer with ENOTCONN; a failed
 * transfer drops its session; disconnect drops an idle session (a busy one
 * here is dropped when its transfer ends).
 *
 * DESIGN (threads): every function may run on any thread. Entries are
 * protected by the table's mutex; an object taken busy (acquire) belongs
 * to its taker until release, who uses it without the mutex. Objects are
 * freed (the free callback) with the mutex released.
 */
#ifndef S3R_RDX_RC_TABLE_H
#define S3R_RDX_RC_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "rdma/rdx_token.h"

#define RDX_RC_TABLE_CAP 1024           /* elbencho's limit */
#define RDX_RC_IDLE_MS (300u * 1000u)   /* elbencho's IDLE_TIMEOUT */

struct rdx_rc_table;

typedef void (*rdx_rc_table_free_fn)(void *obj, void *arg);

/* A table of at most cap (1..65536) sessions, idle_ms (> 0) before
   expiry. 0 and *out, -EINVAL or -ENOMEM. */
int rdx_rc_table_create(unsigned cap, uint64_t idle_ms,
                        rdx_rc_table_free_fn free_fn, void *arg,
                        struct rdx_rc_table **out)
    __attribute__((warn_unused_result));

/* Free every session and the table; NULL does nothing. None may be busy. */
void rdx_rc_table_destroy(struct rdx_rc_table *t);

/*
 * Drop the sessions idle since now - idle_ms, then add obj under id (used
 * now). 0, or -ENOSPC (full: 503), -EEXIST (id taken: draw another),
 * -EINVAL. On error obj is not the table's.
 */
int rdx_rc_table_add(struct rdx_rc_table *t, const uint8_t id[RDX_RC_SESSION_BYTES],
                     void *obj, uint64_t now)
    __attribute__((warn_unused_result));

/* Take session id for one transfer: 0 and *obj, or -ENOTCONN (unknown,
   busy, or being dropped). */
int rdx_rc_table_acquire(struct rdx_rc_table *t,
                         const uint8_t id[RDX_RC_SESSION_BYTES], void **obj)
    __attribute__((warn_unused_result));

/* The transfer on id ended: broken (or disconnected meanwhile): the
   session is dropped and freed; else it is idle again, used now. */
void rdx_rc_table_release(struct rdx_rc_table *t,
                          const uint8_t id[RDX_RC_SESSION_BYTES], bool broken,
                          uint64_t now);

/* Disconnect: drop id. 0 (dropped), -ENOENT (unknown), -EBUSY (busy: it
   is dropped when its transfer ends). */
int rdx_rc_table_remove(struct rdx_rc_table *t,
                        const uint8_t id[RDX_RC_SESSION_BYTES]);

/* Is id a session (busy or not)? */
bool rdx_rc_table_has(struct rdx_rc_table *t,
                      const uint8_t id[RDX_RC_SESSION_BYTES]);

/* Drop the sessions idle since now - idle_ms: how many. */
unsigned rdx_rc_table_reap(struct rdx_rc_table *t, uint64_t now);

/* Sessions in the table. */
unsigned rdx_rc_table_count(struct rdx_rc_table *t);

#endif
