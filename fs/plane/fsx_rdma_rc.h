/*
 * fsx_rdma_rc: the mount's side of the RC transport's connect step
 * (docs/rdma.md "RC dialect"), under fsx_rdma. One rdx_rc endpoint
 * per S3 endpoint of the client's list, FSX_RDMA_RC_SESSIONS sessions at
 * most each. Per request carrying a token: take a session from the next
 * endpoint up (waiting at most FSX_RDMA_RC_WAIT_MS), bind the request to
 * that endpoint (s3_req_set_endpoint: sent elsewhere while it is down, it
 * goes without the token), connect a new session with s3_rc_connect
 * (signed POST /.s3rdma-rc/connect to that endpoint)
 * and rdx_rc_session_connect, attach its "rc:" token, and give the session
 * back when the request finishes (s3_req_set_rdma_release): broken after a
 * reply 500 (the endpoint is flushed too: the server restarted or dropped
 * the session; the request was resent over HTTP) or an attempt left in
 * doubt. Whatever fails sends that request's bytes in the HTTP body; a
 * server that does not speak the dialect (4xx or 501 to the connect, a
 * malformed 200: fsx_rdma_rc_next), or FSX_RDMA_RC_LOCAL_FAILS connects in
 * a row that our queue pair cannot complete (the server's session is
 * disconnected at once), or FSX_RDMA_RC_FAILED_REPLIES token requests in
 * a row answered 500, turn rc off for the mount (fsx_rdma_rc_usable),
 * logged once; other failures (5xx, 408, 429, no reply) cost that one
 * request its token, logged once, then at debug level. At
 * the client's stop (s3_client_set_stop_hook) each idle connected session
 * is disconnected, bounded by FSX_RDMA_RC_BYE_MS in all.
 *
 * Where it blocks: fsx_rdma_rc_attach waits for a session and makes the
 * connect request on the caller's thread, before the request is
 * submitted: fsx_rdma_get from fetch_start (a FUSE thread, no lock held:
 * the chunks are claimed, the cache's lock is not), fsx_rdma_buf from
 * start_part and fsx_rdma_run (wb->lock, which is held across requests
 * anyway). Never on the engine thread: the release runs there and does
 * not block (a pool put; a broken session's queue pair destroyed).
 *
 * DESIGN (threads): fixed after create but for `off` and the counters
 * (atomics); sessions belong to their pool (rdx_rc_client.h), a session
 * taken to its request until released.
 */
#ifndef S3R_FSX_RDMA_RC_H
#define S3R_FSX_RDMA_RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma/rdx_transport.h"

struct s3_client;
struct s3_req;
struct fsx_rdma_rc;

/* Sessions toward the endpoint at most: the page-cache fills and part
   uploads in flight at once with tokens (more wait, then go over HTTP);
   the server allows 1024 in all. */
#define FSX_RDMA_RC_SESSIONS 64
/* How long a request waits for a session before it goes over HTTP. */
#define FSX_RDMA_RC_WAIT_MS 2000
/* One connect request's timeout. */
#define FSX_RDMA_RC_CONNECT_MS 5000
/* Connect steps in a row that fail on this side (verbs: the queue pair
   cannot reach the server's) before rc is turned off for the mount. */
#define FSX_RDMA_RC_LOCAL_FAILS 8
/* Token requests in a row answered 500 (transfer failed, or the session
   unknown) before rc is turned off for the mount: each costs a connect
   step and a resend, so a server that fails every transfer must not be
   asked forever. A request moved by rc in between starts the count
   again. */
#define FSX_RDMA_RC_FAILED_REPLIES 8
/* All disconnects at the client's stop. */
#define FSX_RDMA_RC_BYE_MS 5000

/* The outcome of a connect step, as the endpoint's state changes. */
enum fsx_rdma_rc_state {
  FSX_RC_TRYING = 0, /* nothing known yet, or sessions connect */
  FSX_RC_OFF,        /* the server does not speak the dialect */
};

/*
 * What a connect error (s3_rc_connect's, or -EBADMSG from
 * rdx_rc_session_connect: a malformed 200) does to the endpoint, pure:
 * FSX_RC_OFF for -EPROTONOSUPPORT and -EBADMSG, the state unchanged
 * otherwise (the request goes over HTTP, the next one tries again).
 */
enum fsx_rdma_rc_state fsx_rdma_rc_next(enum fsx_rdma_rc_state st, int err);

/*
 * A token request has finished, pure: run counts the replies 500 in a
 * row; failed: this one was answered 500; moved: the server moved its
 * bytes. True when rc should be turned off (FSX_RDMA_RC_FAILED_REPLIES
 * in a row). Requests that did neither (declined, in doubt, an error)
 * leave the count as it is.
 */
bool fsx_rdma_rc_count_reply(unsigned *run, bool failed, bool moved);

/* t is an RC transport; s3 the mount's client (its stop hook is taken).
   0 and *out, or -ENOMEM / -EINVAL. */
int fsx_rdma_rc_create(struct rdx_transport *t, struct s3_client *s3,
                       struct fsx_rdma_rc **out);
/* After the client is destroyed (every request released). NULL: nothing. */
void fsx_rdma_rc_destroy(struct fsx_rdma_rc *rc);

/* Not turned off by a server that does not speak the dialect. */
bool fsx_rdma_rc_usable(const struct fsx_rdma_rc *rc);

/*
 * Attach an "rc:" token for region offsets [off, off + len) to r (not yet
 * submitted), taking and connecting a session (may block, see above).
 * 0: attached; 1: not attached (no session, connect failed, rc off, a
 * range the token cannot name): r goes over HTTP; -ENOMEM.
 */
int fsx_rdma_rc_attach(struct fsx_rdma_rc *rc, struct s3_req *r,
                       const struct rdx_region *region, uint64_t off,
                       uint64_t len, enum rdx_op op);

/* "rdma.rc_* name value" rows for the stats file; returns the length. */
size_t fsx_rdma_rc_stats(const struct fsx_rdma_rc *rc, char *buf, size_t len,
                         size_t n);

#endif
