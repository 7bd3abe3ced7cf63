/*
 * gw_req: a request's shared state (see gw_req.h). Every change of ready,
 * done, mode and the error is made under the request's mu and broadcast on
 * its cv (a CLOCK_MONOTONIC one, clock_cond_init), which both the
 * connection thread and the worker wait on.
 */
#include "gateway/gw_req.h"

#include <errno.h>
#include <stdio.h>

#include "common/clock.h"
#include "common/slog.h"

void gw_rdx_error(enum rdx_kind kind, int rc, int *status, const char **code,
                  unsigned *reply)
{
  *reply = 0;
  if (kind == RDX_RC) {
    switch (rc) {
    case -ENOTCONN:   /* unknown, expired, dropped or busy session */
    case -EFAULT:     /* the client's memory key or range refused */
    case -ECONNRESET: /* the client's queue pair does not answer */
    case -EIO:        /* another completion error */
    case -ETIMEDOUT:  /* a chunk's 30 s, or the client's deadline */
      *status = 500;
      *code = GW_CODE_FAILED;
      *reply = 500;
      return;
    }
  }
  switch (rc) {
  case -EPERM:
  case -EACCES:
    *status = 403;
    *code = "AccessDenied";
    break;
  case -EINVAL:
  case -ESRCH:
  case -EFAULT:
    *status = 400;
    *code = GW_CODE_BAD_TOKEN;
    break;
  case -EOPNOTSUPP:
    *status = 501;
    *code = "NotImplemented";
    break;
  case -ETIMEDOUT: /* the client's deadline, or no answer from a helper */
    *status = 400;
    *code = "RequestTimeout";
    break;
  default:
    *status = 500;
    *code = GW_CODE_FAILED;
    break;
  }
  if (*status == 500)
    *reply = 500; /* done with the token: the client resends over HTTP */
}

void gw_req_note_declined(const struct gw_req *r, struct gw_stats *stats,
                          const char *why)
{
  gw_stat_add(stats, declined, 1);
  log_notice("token %s %s %s declined: %s", rdx_kind_name(r->token.kind),
             r->method, r->path, why);
}

/* ---- the connection thread's side ---- */

int gw_req_wait_ready(struct gw_req *r, unsigned timeout_ms)
{
  struct timespec ts = clock_deadline(timeout_ms);
  int rc = 0;

  pthread_mutex_lock(&r->mu);
  while (!r->ready && rc == 0)
    if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) == ETIMEDOUT)
      rc = -ETIMEDOUT;
  if (r->ready)
    rc = 0;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void gw_req_cancel(struct gw_req *r)
{
  pthread_mutex_lock(&r->mu);
  r->cancel = true;
  pthread_cond_broadcast(&r->cv); /* a worker in gw_req_hold */
  while (r->serving)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

void gw_req_wait_done(struct gw_req *r)
{
  pthread_mutex_lock(&r->mu);
  while (!r->done)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

/* ---- the worker's side ---- */

void gw_req_set_ready_locked(struct gw_req *r)
{
  r->ready = true;
  pthread_cond_broadcast(&r->cv);
}

void gw_req_set_error_locked(struct gw_req *r, int status, const char *code,
                             const char *msg)
{
  if (r->mode != GW_MODE_ERROR) {
    r->mode = GW_MODE_ERROR;
    r->err_status = status;
    r->err_code = code;
    snprintf(r->err_msg, sizeof(r->err_msg), "%s", msg);
  }
  gw_req_set_ready_locked(r);
}

void gw_req_set_error(struct gw_req *r, int status, const char *code,
                      const char *msg)
{
  pthread_mutex_lock(&r->mu);
  gw_req_set_error_locked(r, status, code, msg);
  pthread_mutex_unlock(&r->mu);
}

void gw_req_set_error_reply(struct gw_req *r, int status, const char *code,
                            const char *msg, unsigned reply)
{
  pthread_mutex_lock(&r->mu);
  if (r->mode != GW_MODE_ERROR)
    r->err_reply = reply; /* the first failure stands, its reply too */
  gw_req_set_error_locked(r, status, code, msg);
  pthread_mutex_unlock(&r->mu);
}

void gw_req_answer_http(struct gw_req *r)
{
  pthread_mutex_lock(&r->mu);
  r->mode = GW_MODE_HTTP;
  gw_req_set_ready_locked(r);
  pthread_mutex_unlock(&r->mu);
}

void gw_req_finish(struct gw_req *r)
{
  if (r->mode == GW_MODE_HTTP)
    gw_pipe_close(&r->down);
  pthread_mutex_lock(&r->mu);
  if (!r->ready)
    gw_req_set_ready_locked(r);
  r->done = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu); /* r may be freed from here on */
}

bool gw_req_expired(const struct gw_req *r)
{
  return r->tok != GW_TOK_NONE && r->rdx.expires_ms &&
         clock_wall_ms() >= r->rdx.expires_ms;
}

bool gw_req_hold(struct gw_req *r, unsigned ms)
{
  struct timespec until = clock_deadline(ms);
  bool go;

  pthread_mutex_lock(&r->mu);
  while (!r->cancel)
    if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT)
      break;
  go = !r->cancel;
  pthread_mutex_unlock(&r->mu);
  return go;
}
