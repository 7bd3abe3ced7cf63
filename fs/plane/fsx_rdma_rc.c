/*
 * fsx_rdma_rc: the mount's RC connect step (see fsx_rdma_rc.h).
 *
 * DESIGN (sessions): a pool per endpoint of the S3 client's list (an RC
 * session is made with one server); a request's session is taken in
 * fsx_rdma_rc_attach from the endpoint up with the fewest sessions taken
 * (s3_client_endpoint_next; ties in turn),
 * bound there (s3_req_set_endpoint: while that endpoint is down its
 * attempts go elsewhere without the token) and handed to the request as
 * its release argument (s3_req_set_rdma_release); release() runs exactly
 * once when the request finishes, or when it is
 * destroyed unsubmitted, and puts it back. rc->off is the only state
 * shared by every thread besides the pool (its own mutex): an atomic that
 * only ever turns true; and the count of replies 500 in a row (run_lock:
 * a leaf, taken only in release, on the engine thread).
 */
#include "fs/plane/fsx_rdma_rc.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/slog.h"
#include "common/stats_fmt.h"
#include "rdma/rdx_rc_client.h"
#include "s3/s3_client.h"
#include "s3/s3_rc.h"

struct fsx_rdma_rc {
  struct rdx_rc_endpoint **eps; /* fixed: one per S3 endpoint */
  unsigned n;                  /* fixed: how many */
  struct s3_client *s3;        /* fixed */
  _Atomic bool off;            /* the server does not speak the dialect */
  _Atomic bool stopping;       /* the client's stop hook ran */
  _Atomic bool told_fail;      /* a failed connect was logged */
  _Atomic unsigned local_fails; /* connects our side failed, in a row */
  pthread_mutex_t run_lock;
  unsigned failed_run;          /* replies 500 in a row; protected by
                                   run_lock */
  /* per endpoint: its sessions dropped after a reply 500, how many times
     (a session taken before the last drop is stale: its 500 is counted
     in no run and drops nothing more) */
  _Atomic unsigned flushes[S3_ENDPOINTS_MAX];
  _Atomic uint64_t connects, connect_fails, no_session, failed_replies,
      broken, disconnects;
};

enum fsx_rdma_rc_state fsx_rdma_rc_next(enum fsx_rdma_rc_state st, int err)
{
  if (err == -EPROTONOSUPPORT || err == -EBADMSG)
    return FSX_RC_OFF;
  return st;
}

bool fsx_rdma_rc_count_reply(unsigned *run, bool failed, bool moved)
{
  if (moved)
    *run = 0;
  else if (failed && *run < FSX_RDMA_RC_FAILED_REPLIES)
    ++*run;
  return *run >= FSX_RDMA_RC_FAILED_REPLIES;
}

bool fsx_rdma_rc_usable(const struct fsx_rdma_rc *rc)
{
  return rc && !atomic_load(&rc->off) && !atomic_load(&rc->stopping);
}

/* What a request holds: its session, and whose it is. */
struct taken {
  struct fsx_rdma_rc *rc;
  struct rdx_rc_session *s;
  unsigned i;     /* the endpoint it was made with */
  unsigned flush; /* that endpoint's flushes when it was taken */
};

/* The request has finished (engine thread, or the submitter's): give its
   session back. Never blocks. */
static void release(struct s3_req *r, void *arg)
{
  struct taken *tk = arg;
  struct fsx_rdma_rc *rc = tk->rc;
  struct rdx_rc_session *s = tk->s;
  unsigned i = tk->i;
  bool failed = s3_req_rdma_failed(r), doubt = s3_req_rdma_doubt(r);
  bool moved = s3_req_rdma_path(r) == S3_RDMA_DONE, give_up;
  /* taken before its endpoint's sessions were dropped (a gateway that
     restarted: every request then in flight fails): known dead, not news */
  bool stale = failed && tk->flush != atomic_load(&rc->flushes[i]);

  pthread_mutex_lock(&rc->run_lock);
  give_up = fsx_rdma_rc_count_reply(&rc->failed_run, failed && !stale,
                                    moved);
  pthread_mutex_unlock(&rc->run_lock);
  if (give_up && !atomic_exchange(&rc->off, true))
    log_notice("rdma: rc: %u token requests in a row answered 500 (the "
               "transfer failed): file data goes in HTTP bodies from now on",
               FSX_RDMA_RC_FAILED_REPLIES);
  if (failed)
    atomic_fetch_add(&rc->failed_replies, 1);
  if (failed || doubt)
    atomic_fetch_add(&rc->broken, 1);
  free(tk);
  rdx_rc_session_put(s, failed || doubt);
  if (failed && !stale) {
    /* unknown session (the server restarted or expired it) or a failed
       transfer (it dropped it): the idle ones are likely as dead; they
       reconnect lazily */
    log_info("rdma: rc: the server answered a token with reply 500: "
             "sessions dropped, the request resent over HTTP");
    rdx_rc_endpoint_flush(rc->eps[i]);
    atomic_fetch_add(&rc->flushes[i], 1); /* (after: a session taken
                                             before it is one flushed) */
  }
}

/* A connect step that failed with err (why: the reason): the endpoint's
   state, and one log line. */
static void connect_failed(struct fsx_rdma_rc *rc, int err, const char *why,
                           bool local)
{
  atomic_fetch_add(&rc->connect_fails, 1);
  if (local && atomic_fetch_add(&rc->local_fails, 1) + 1 >=
                   FSX_RDMA_RC_LOCAL_FAILS) {
    if (!atomic_exchange(&rc->off, true))
      log_notice("rdma: rc: %u connect steps in a row failed on this side "
                 "(%s): file data goes in HTTP bodies from now on",
                 FSX_RDMA_RC_LOCAL_FAILS, why);
    return;
  }
  if (fsx_rdma_rc_next(FSX_RC_TRYING, err) == FSX_RC_OFF) {
    if (!atomic_exchange(&rc->off, true))
      log_notice("rdma: rc: the S3 server does not speak the RC dialect "
                 "(%s): file data goes in HTTP bodies from now on", why);
    return;
  }
  if (!atomic_exchange(&rc->told_fail, true))
    log_notice("rdma: rc: a connect step failed (%s): that request goes in "
               "HTTP bodies; later ones connect again (logged once)", why);
  else
    log_debug("rdma: rc: a connect step failed (%s)", why);
}

/* Connect s (new) with endpoint i: the POST, then its queue pair. 0 or a
   negative errno (already logged and counted). */
static int connect_session(struct fsx_rdma_rc *rc, unsigned i,
                           struct rdx_rc_session *s)
{
  struct rdx_rc_connect_req req;
  struct s3_rc_reply rep;
  char why[RDX_ERR_MAX];
  int err;

  err = rdx_rc_session_connect_req(s, &req);
  if (err) {
    connect_failed(rc, err, "no connect request for the queue pair", true);
    return err;
  }
  err = s3_rc_connect(rc->s3, rc->n > 1 ? (int)i : -1, req.token, req.psn,
                      FSX_RDMA_RC_CONNECT_MS, &rep);
  if (err) {
    connect_failed(rc, err,
                   err == -EPROTONOSUPPORT
                       ? "POST " RDX_RC_CONNECT_PATH " refused"
                       : strerror(-err),
                   false);
    return err;
  }
  err = rdx_rc_session_connect(s, rep.session, strlen(rep.session),
                               rep.reply, strlen(rep.reply), rep.psn,
                               strlen(rep.psn), why, sizeof(why));
  if (err) {
    /* the server made a session we cannot use: let it go now */
    if (strlen(rep.session) == RDX_RC_SESSION_LEN)
      (void)s3_rc_disconnect(rc->s3, rc->n > 1 ? (int)i : -1, rep.session,
                             FSX_RDMA_RC_CONNECT_MS);
    connect_failed(rc, err, why, err != -EBADMSG);
    return err;
  }
  atomic_store(&rc->local_fails, 0);
  atomic_fetch_add(&rc->connects, 1);
  return 0;
}

int fsx_rdma_rc_attach(struct fsx_rdma_rc *rc, struct s3_req *r,
                       const struct rdx_region *region, uint64_t off,
                       uint64_t len, enum rdx_op op)
{
  unsigned busy[S3_ENDPOINTS_MAX], i = 0, flush;
  struct rdx_rc_session *s;
  char tok[RDX_TOKEN_MAX], why[RDX_ERR_MAX];
  struct taken *tk;
  int err;

  if (!fsx_rdma_rc_usable(rc))
    return 1;
  if (rc->n > 1) { /* (n <= S3_ENDPOINTS_MAX: the client's own list) */
    for (unsigned k = 0; k < rc->n; k++)
      busy[k] = rdx_rc_endpoint_busy(rc->eps[k]);
    i = s3_client_endpoint_next(rc->s3, busy);
  }
  flush = atomic_load(&rc->flushes[i]); /* (before: a drop after it makes
                                            this session stale) */
  err = rdx_rc_session_get(rc->eps[i], clock_mono_ms() + FSX_RDMA_RC_WAIT_MS,
                           &s, why, sizeof(why));
  if (err) {
    atomic_fetch_add(&rc->no_session, 1);
    log_debug("rdma: rc: no session (%s): HTTP body", why);
    return 1;
  }
  if (!rdx_rc_session_connected(s) && connect_session(rc, i, s)) {
    rdx_rc_session_put(s, true);
    return 1;
  }
  err = rdx_rc_token_for(s, region, off, len, op, tok, sizeof(tok));
  if (err < 0) {
    rdx_rc_session_put(s, false);
    log_debug("rdma: rc: no token (%s): HTTP body", strerror(-err));
    return 1;
  }
  tk = malloc(sizeof(*tk));
  err = tk ? s3_req_set_rdma(r, tok, len) : -ENOMEM;
  if (err) {
    free(tk);
    rdx_rc_session_put(s, false);
    return err == -ENOMEM ? err : 1;
  }
  *tk = (struct taken){.rc = rc, .s = s, .i = i, .flush = flush};
  s3_req_set_rdma_release(r, release, tk);
  if (rc->n > 1)
    s3_req_set_endpoint(r, (int)i, false);
  return 0;
}

/* Endpoint i's idle connected sessions disconnected, until until. How
   many were taken. */
static int goodbye_one(struct fsx_rdma_rc *rc, unsigned i, uint64_t until)
{
  struct rdx_rc_session *taken[FSX_RDMA_RC_SESSIONS], *s;
  char id[RDX_RC_SESSION_LEN + 1], why[RDX_ERR_MAX];
  uint64_t now;
  int n = 0;

  while (n < FSX_RDMA_RC_SESSIONS &&
         !rdx_rc_session_get(rc->eps[i], 0, &s, why, sizeof(why))) {
    if (!rdx_rc_session_connected(s)) {
      rdx_rc_session_put(s, true); /* a new one: none idle is left */
      break;
    }
    taken[n++] = s;
  }
  for (int k = 0; k < n; k++) {
    now = clock_mono_ms();
    if (now < until && rdx_rc_session_id(taken[k], id) > 0 &&
        !s3_rc_disconnect(rc->s3, rc->n > 1 ? (int)i : -1, id,
                          (unsigned)(until - now)))
      atomic_fetch_add(&rc->disconnects, 1);
    rdx_rc_session_put(taken[k], true); /* the server forgot it, or will
                                           when it expires */
  }
  return n;
}

/* The client stops (its engine still sends): disconnect the idle
   connected sessions, within FSX_RDMA_RC_BYE_MS in all. */
static void say_goodbye(void *arg)
{
  struct fsx_rdma_rc *rc = arg;
  uint64_t until = clock_mono_ms() + FSX_RDMA_RC_BYE_MS;
  int n = 0;

  atomic_store(&rc->stopping, true);
  if (!atomic_load(&rc->connects))
    return; /* no session was ever connected */
  for (unsigned i = 0; i < rc->n; i++)
    n += goodbye_one(rc, i, until);
  if (n)
    log_info("rdma: rc: %llu of %d session(s) disconnected",
             (unsigned long long)atomic_load(&rc->disconnects), n);
}

static void free_eps(struct fsx_rdma_rc *rc)
{
  for (unsigned i = 0; rc->eps && i < rc->n; i++)
    rdx_rc_endpoint_destroy(rc->eps[i]);
  free(rc->eps);
}

int fsx_rdma_rc_create(struct rdx_transport *t, struct s3_client *s3,
                       struct fsx_rdma_rc **out)
{
  struct fsx_rdma_rc *rc = calloc(1, sizeof(*rc));
  int err = 0;

  *out = NULL;
  if (!rc)
    return -ENOMEM;
  rc->n = s3_client_endpoints(s3);
  rc->eps = calloc(rc->n, sizeof(*rc->eps));
  if (!rc->eps)
    err = -ENOMEM;
  for (unsigned i = 0; !err && i < rc->n; i++)
    err = rdx_rc_endpoint_create(t, FSX_RDMA_RC_SESSIONS, &rc->eps[i]);
  if (err) {
    free_eps(rc);
    free(rc);
    return err;
  }
  pthread_mutex_init(&rc->run_lock, NULL);
  rc->s3 = s3;
  s3_client_set_stop_hook(s3, say_goodbye, rc);
  *out = rc;
  return 0;
}

void fsx_rdma_rc_destroy(struct fsx_rdma_rc *rc)
{
  if (!rc)
    return;
  free_eps(rc);
  pthread_mutex_destroy(&rc->run_lock);
  free(rc);
}

size_t fsx_rdma_rc_stats(const struct fsx_rdma_rc *rc, char *buf, size_t len,
                         size_t n)
{
  const struct stats_row rows[] = {
      {"usable", fsx_rdma_rc_usable(rc)},
      {"connects", rc->connects},
      {"connect_fails", rc->connect_fails},
      {"no_session", rc->no_session},
      {"failed_replies", rc->failed_replies},
      {"broken", rc->broken},
      {"disconnects", rc->disconnects},
  };

  return stats_fmt_rows(buf, len, n, "rdma.rc_", rows, STATS_NROWS(rows));
}
