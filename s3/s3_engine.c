/*
 * s3_engine: one thread owns the curl multi handle and drives every request.
 *
 * DESIGN
 * - Any thread submits (s3_req_submit): the request goes on eng.queue under
 *   eng.lock and curl_multi_wakeup() rouses the engine. Nothing but the
 *   engine thread ever touches the multi handle or an easy handle.
 * - The engine moves queued requests whose retry time has come onto the wire
 *   while fewer than max_inflight are active, each attempt made ready and
 *   signed afresh (s3_attempt.c, s3_req_sign.c: the engine never calls
 *   back into the client), and reuses idle easy handles (connections live
 *   in the multi handle's cache, so they are reused across requests).
 * - When an attempt ends, the reply is classified through s3_err.c's table;
 *   s3_retry.c decides whether to try again and after what delay; the request
 *   then waits on the queue with not_before set. A handle that saw a
 *   transport error or a 5xx is thrown away rather than reused.
 * - Completion: state DONE under eng.lock, then the done callback on this
 *   thread (outside the lock), or a signal to the s3_req_wait sleeper.
 * - Cancellation sets req->cancel under the lock and wakes the engine, which
 *   pulls the request off the queue or off the wire and completes it with
 *   -ECANCELED; a token attempt pulled off the wire is noted in doubt
 *   (s3_req_rdma_doubt) before that. Stopping cancels the same way, but
 *   for attempts carrying a token, which run to their end (bounded by
 *   their deadline) and are not tried again: the server is then known to
 *   be done with their memory.
 * - Time: an attempt has curl's low-speed abort (low_speed_time_s) and the
 *   request's timeout; one carrying an RDMA token has only its deadline,
 *   the one the server is given (s3_attempt_prepare).
 * Lock order: eng.lock only; it is never held while calling curl or a
 * callback.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/ep_health.h"
#include "common/slog.h"
#include "s3/s3_attempt.h"
#include "s3/s3_eps.h"
#include "s3/s3_i.h"

#define ENGINE_POLL_MS 1000

static void list_push(struct s3_req **head, struct s3_req **tail,
                      struct s3_req *r)
{
  r->next = NULL;
  r->prev = tail ? *tail : NULL;
  if (tail) {
    if (*tail)
      (*tail)->next = r;
    else
      *head = r;
    *tail = r;
  } else {
    r->next = *head;
    if (*head)
      (*head)->prev = r;
    *head = r;
  }
}

static void list_unlink(struct s3_req **head, struct s3_req **tail,
                        struct s3_req *r)
{
  if (r->prev)
    r->prev->next = r->next;
  else
    *head = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else if (tail)
    *tail = r->prev;
  r->next = r->prev = NULL;
}

/* r off the active list (e->lock held) */
static void active_del(struct s3_engine *e, struct s3_req *r)
{
  list_unlink(&e->active, NULL, r);
  e->n_active--;
  e->n_warm -= r->warm;
}

static uint32_t rng_next(struct s3_engine *e)
{
  uint64_t x = e->rng;

  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  e->rng = x;
  return (uint32_t)(x >> 16);
}

/* ---- attempts ---- */

static CURL *get_handle(struct s3_engine *e)
{
  CURL *h;

  if (e->n_pool) {
    h = e->pool[--e->n_pool];
    curl_easy_reset(h);
    return h;
  }
  return curl_easy_init();
}

static void put_handle(struct s3_client *c, CURL *h, bool discard)
{
  struct s3_engine *e = &c->eng;

  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL); /* (the request's) */
  if (!discard && e->n_pool < c->cfg.max_inflight) {
    e->pool[e->n_pool++] = h;
    return;
  }
  curl_easy_cleanup(h);
}

static int start_attempt(struct s3_client *c, struct s3_req *r)
{
  CURL *h;
  int rc;

  s3_req_reset_reply(r);
  rc = s3_attempt_prepare(c, r);
  if (!rc && !(h = get_handle(&c->eng)))
    rc = -ENOMEM;
  if (rc) {
    s3_eps_release(c, r);
    r->ep = -1;
    return rc;
  }
  s3_attempt_setup(c, r, h);
  if (r->attempts == 0)
    r->first_start_ms = clock_mono_ms();
  r->attempts++;
  if (!r->warm) /* (a warmer's or a probe's is counted apart) */
    atomic_fetch_add(&c->st_attempts, 1);
  if (curl_multi_add_handle(c->eng.multi, h) != CURLM_OK) {
    r->easy = NULL;
    put_handle(c, h, true);
    s3_eps_release(c, r);
    r->ep = -1;
    return -EIO;
  }
  return 0;
}

/*
 * An attempt carrying a token ends (completed, failed or pulled off the
 * wire) without the server's reply: it may still be moving the token's
 * bytes, unless not a byte of it was sent (the connection refused, say).
 * Noted before the request can finish, so that whoever sees it finished
 * sees the doubt too.
 */
static void note_rdma_doubt(struct s3_req *r, bool sent)
{
  if (!r->rdma_on || r->status || !sent)
    return;
  r->rdma_doubt = true;
  if (r->rdma_until_ms > r->rdma_doubt_ms)
    r->rdma_doubt_ms = r->rdma_until_ms;
  if (r->rdma_until_wall_ms > r->rdma_doubt_wall_ms)
    r->rdma_doubt_wall_ms = r->rdma_until_wall_ms;
}

/* Mark done and hand the request back. Called without eng.lock. */
static void finish(struct s3_client *c, struct s3_req *r, int rc,
                   enum s3_err_class cls)
{
  s3_req_done_fn done;
  void *arg;

  r->rc = rc;
  s3_req_run_release(r); /* before anyone sees r finished */
  if (r->warm) { /* (its outcome is nobody's; a probe's, the endpoint's) */
    if (r->ep_only < 0)
      atomic_fetch_add(&c->st_warm, 1);
  } else {
    atomic_fetch_add(&c->st_requests, 1);
    if (rc == -ECANCELED)
      atomic_fetch_add(&c->st_cancelled, 1);
    else if (rc)
      atomic_fetch_add(&c->st_errors[cls ? cls : S3_EC_CLIENT], 1);
  }
  pthread_mutex_lock(&c->eng.lock);
  r->state = S3_REQ_DONE;
  done = r->done;
  arg = r->done_arg;
  if (!done)
    pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&c->eng.lock);
  if (done)
    done(r, arg); /* may free r */
}

/* Back on the queue for another attempt, not before not_before_ms. */
static void requeue(struct s3_engine *e, struct s3_req *r,
                    uint64_t not_before_ms)
{
  r->not_before_ms = not_before_ms;
  pthread_mutex_lock(&e->lock);
  r->state = S3_REQ_QUEUED;
  list_push(&e->queue, &e->queue_tail, r);
  pthread_mutex_unlock(&e->lock);
}

const char *const s3_op_names[S3_OP_COUNT] = {
    "get", "put", "head", "list", "delete", "part", "copy", "multipart",
    "other"};

static bool has_query(const struct s3_req *r, const char *name)
{
  for (size_t i = 0; i < r->n_query; i++)
    if (!strcmp(r->query[i].key, name))
      return true;
  return false;
}

enum s3_op s3_op_of(const struct s3_req *r)
{
  bool copy = false;

  for (size_t i = 0; i < r->n_headers; i++)
    copy = copy || !strcasecmp(r->headers[i].key, "x-amz-copy-source");
  if (!strcmp(r->method, "HEAD"))
    return S3_OP_HEAD;
  if (!strcmp(r->method, "DELETE"))
    return has_query(r, "uploadId") ? S3_OP_MULTIPART
           : !r->key || !r->key[0]  ? S3_OP_OTHER
                                    : S3_OP_DELETE;
  if (!strcmp(r->method, "GET"))
    return !r->key || !r->key[0] || has_query(r, "list-type") ||
                   has_query(r, "uploads")
               ? S3_OP_LIST
               : S3_OP_GET;
  if (!strcmp(r->method, "PUT")) /* (a part copied: a copy) */
    return copy                         ? S3_OP_COPY
           : has_query(r, "partNumber") ? S3_OP_PART
           : !r->key || !r->key[0]      ? S3_OP_OTHER /* a bucket */
                                        : S3_OP_PUT;
  if (!strcmp(r->method, "POST"))
    return has_query(r, "delete") ? S3_OP_DELETE /* DeleteObjects */
           : has_query(r, "uploads") || has_query(r, "uploadId")
               ? S3_OP_MULTIPART
               : S3_OP_OTHER;
  return S3_OP_OTHER;
}

/* A round trip seen: into the current window's least (engine thread). */
static void note_rtt(struct s3_client *c, uint64_t us)
{
  uint64_t w = clock_mono_ms() / S3_RTT_WINDOW_MS;
  int slot = (int)(w % 2);

  if (c->rtt_window[slot] != w) { /* a new window: its first answer */
    c->rtt_window[slot] = w;
    atomic_store(&c->rtt_min_us[slot], us);
    if (c->rtt_window[!slot] != w - 1) /* the other: older than the last */
      atomic_store(&c->rtt_min_us[!slot], UINT64_MAX);
  } else if (us < atomic_load(&c->rtt_min_us[slot])) {
    atomic_store(&c->rtt_min_us[slot], us);
  }
}

/* An exchange the server answered: its times into the histograms. */
static void note_latency(struct s3_client *c, const struct s3_req *r)
{
  curl_off_t ttfb = 0, total = 0, pre = 0;
  enum s3_op op = s3_op_of(r);

  if (!r->status ||
      curl_easy_getinfo(r->easy, CURLINFO_STARTTRANSFER_TIME_T, &ttfb) !=
          CURLE_OK ||
      curl_easy_getinfo(r->easy, CURLINFO_TOTAL_TIME_T, &total) != CURLE_OK)
    return;
  if (!r->warm) { /* (a warmer's round trip counts, not its times) */
    stats_hist_add(&c->lat_ttfb[op], ttfb > 0 ? (uint64_t)ttfb : 0);
    stats_hist_add(&c->lat_total[op], total > 0 ? (uint64_t)total : 0);
  }
  /* from the request sent (connection made) to the answer's first byte */
  if (curl_easy_getinfo(r->easy, CURLINFO_PRETRANSFER_TIME_T, &pre) ==
          CURLE_OK && ttfb > pre)
    note_rtt(c, (uint64_t)(ttfb - pre));
}

static void attempt_done(struct s3_client *c, struct s3_req *r, CURLcode cc)
{
  struct s3_engine *e = &c->eng;
  struct s3_err_map m;
  struct s3_retry_ctx ctx;
  unsigned delay = 0;
  bool cancel, sent, ep_failed, throttled, elsewhere = false;
  int rc, ep = r->ep;
  curl_off_t up = 0, down = 0;

  curl_multi_remove_handle(e->multi, r->easy);
  s3_attempt_classify(r, cc, &m, &rc);
  note_latency(c, r);
  curl_easy_getinfo(r->easy, CURLINFO_SIZE_UPLOAD_T, &up);
  curl_easy_getinfo(r->easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
  sent = s3_attempt_sent(r->easy);
  put_handle(c, r->easy, cc != CURLE_OK || r->status >= 500);
  r->easy = NULL;

  pthread_mutex_lock(&e->lock);
  active_del(e, r);
  atomic_store(&c->st_inflight, e->n_active);
  cancel = r->cancel;
  pthread_mutex_unlock(&e->lock);

  /* the endpoint failed it: no connection, a reset, a timeout, a reply
     that is not HTTP, a 5xx (a 501 is a refusal of the request, not a
     failure of the server; an answer in the RDMA dialect, reply 500 with
     it, is a failed transfer, resent over HTTP, of a server that works) */
  throttled = m.cls == S3_EC_THROTTLE;
  ep_failed = !cancel && (m.cls == S3_EC_NETWORK || m.cls == S3_EC_TIMEOUT ||
                          m.err == EPROTO ||
                          (r->status >= 500 && r->status != 501 &&
                           !throttled &&
                           !(r->rdma_on &&
                             s3_req_header(r, "x-amz-rdma-reply"))));
  /* a throttle (503 SlowDown, 429) asks a working server for less, with
     its backoff: neither a failure nor an answer of the endpoint (a probe
     so answered: the spell goes on, as if failed) */
  if (cancel || (throttled && r->ep_try == EP_TRY_UP))
    s3_eps_release(c, r); /* (pulled off or throttled: says nothing) */
  else
    elsewhere = s3_eps_end(c, r, ep, ep_failed || throttled,
                           (uint64_t)(up + down), clock_mono_ms());
  r->ep = -1;
  /* its retry goes elsewhere while another is up: after a failure at
     once, after a throttle backed off (the load off the busy one, and off
     a balancer answering 503 for a dead server) */
  if ((ep_failed || throttled) && ep >= 0)
    r->ep_avoid |= 1u << ep;
  if (ep_failed && ep >= 0)
    r->ep_failed |= 1u << ep;
  note_rdma_doubt(r, sent); /* the server may still be serving that token */
  if (cancel) {
    finish(c, r, -ECANCELED, S3_EC_NONE);
    return;
  }
  if (r->rdma_on && s3_rdma_attempt_end(c, r, &rc, &m) == S3_RDMA_RESEND) {
    /* a PUT the server declined or ignored, or a transfer that failed
       (reply 500): the bytes over HTTP, now */
    log_debug("%s %s/%s: RDMA %s, resending over HTTP", r->method,
              r->bucket ? r->bucket : "", r->key,
              r->rdma_path == S3_RDMA_IGNORED  ? "ignored"
              : r->rdma_path == S3_RDMA_FAILED ? "failed"
                                               : "declined");
    requeue(e, r, 0);
    return;
  }
  if (rc == 0 || r->warm) { /* (a warmer's answer is its whole use) */
    if (!rc)
      s3_retry_quota_success(&c->quota);
    finish(c, r, rc, rc ? m.cls : S3_EC_NONE);
    return;
  }
  if (m.log_hint)
    log_warn("%s %s/%s: %s (%s)", r->method, r->bucket ? r->bucket : "",
             r->key, r->err.code[0] ? r->err.code : "error",
             s3_err_hint(r->err.code, r->status)
                 ? s3_err_hint(r->err.code, r->status)
             : r->curl_err[0] ? r->curl_err
                              : strerror(m.err));
  ctx = (struct s3_retry_ctx){
      .attempt = r->attempts,
      .elapsed_ms = clock_mono_ms() - r->first_start_ms,
      .idempotent = r->idempotent,
      .retryable = m.retryable,
      .before_send = m.before_send,
      .throttled = throttled,
      .timeout = m.cls == S3_EC_TIMEOUT,
      .failover = ep_failed && elsewhere, /* there, at once */
  };
  if (s3_retry_decide(&c->cfg.retry, &c->quota, &ctx, rng_next(e), &delay) ==
      S3_RETRY_YES) {
    log_info("%s %s/%s: %s (HTTP %ld %s), retry %u in %u ms", r->method,
             r->bucket ? r->bucket : "", r->key, strerror(m.err), r->status,
             r->err.code, r->attempts, delay);
    atomic_fetch_add(&c->st_retries, 1);
    r->resent += sent && !m.before_send;
    requeue(e, r, clock_mono_ms() + delay);
    return;
  }
  log_debug("%s %s/%s: failed: %s (HTTP %ld %s) after %u attempt(s)",
            r->method, r->bucket ? r->bucket : "", r->key, strerror(m.err),
            r->status, r->err.code, r->attempts);
  finish(c, r, rc, m.cls);
}

/*
 * Under eng.lock: take the queued requests that may start now (up to
 * max_inflight) and every cancelled one; returns the ms until the next
 * retry is due.
 */
static unsigned schedule(struct s3_client *c, struct s3_req **start,
                         struct s3_req **cancelled)
{
  struct s3_engine *e = &c->eng;
  uint64_t now = clock_mono_ms(), next = now + ENGINE_POLL_MS;
  struct s3_req *r, *nx;

  for (r = e->n_cancel ? e->active : NULL; r; r = nx) {
    nx = r->next;
    if (r->cancel) {
      active_del(e, r);
      r->link = *cancelled;
      *cancelled = r;
    }
  }
  for (r = e->queue; r; r = nx) {
    nx = r->next;
    if (r->cancel) {
      list_unlink(&e->queue, &e->queue_tail, r);
      r->link = *cancelled;
      *cancelled = r;
      continue;
    }
    if (r->not_before_ms > now) {
      if (r->not_before_ms < next)
        next = r->not_before_ms;
      continue;
    }
    if (e->n_active >= c->cfg.max_inflight) {
      if (!e->n_cancel)
        break; /* a completion will wake us up to start more */
      continue;
    }
    list_unlink(&e->queue, &e->queue_tail, r);
    list_push(&e->active, NULL, r);
    r->state = S3_REQ_ACTIVE;
    e->n_active++;
    e->n_warm += r->warm;
    r->link = *start;
    *start = r;
  }
  e->n_cancel = 0;
  atomic_store(&c->st_inflight, e->n_active);
  if (e->n_active - e->n_warm > atomic_load(&c->st_max_inflight))
    atomic_store(&c->st_max_inflight, e->n_active - e->n_warm);
  return (unsigned)(next - now);
}

static void *engine_main(void *arg)
{
  struct s3_client *c = arg;
  struct s3_engine *e = &c->eng;
  struct s3_req *start, *cancelled, *r;
  CURLMsg *msg;
  unsigned wait_ms, done, draining = 0;
  int running, left, rc;
  bool stop, sent, drained = false;

  for (;;) {
    start = cancelled = NULL;
    pthread_mutex_lock(&e->lock);
    stop = e->stop;
    if (stop) {
      /* cancel everything queued and every attempt without a token; an
         attempt carrying one runs to its end (its deadline at the latest),
         so that its memory is not left in doubt */
      draining = 0;
      for (r = e->queue; r; r = r->next)
        r->cancel = true;
      for (r = e->active; r; r = r->next) {
        if (r->rdma_on)
          draining++;
        else
          r->cancel = true;
      }
      e->n_cancel++;
    }
    wait_ms = schedule(c, &start, &cancelled);
    drained = stop && !e->active;
    pthread_mutex_unlock(&e->lock);
    if (!stop) { /* down endpoints whose spell is over: probed */
      uint64_t now = clock_mono_ms(), next = now + wait_ms;
      s3_eps_probe(c, now, &next);
      wait_ms = (unsigned)(next - now);
    }

    while ((r = cancelled)) {
      cancelled = r->link;
      if (r->easy) {
        curl_multi_remove_handle(e->multi, r->easy);
        sent = s3_attempt_sent(r->easy);
        put_handle(c, r->easy, true);
        r->easy = NULL;
        note_rdma_doubt(r, sent); /* pulled off the wire before a reply */
        s3_eps_release(c, r);
        r->ep = -1;
      }
      finish(c, r, -ECANCELED, S3_EC_NONE);
    }
    if (drained)
      break;
    if (stop && draining && !atomic_exchange(&c->draining_logged, true))
      log_notice("s3: waiting for %u RDMA transfer(s) in flight (at most "
                 "until their deadline)",
                 draining);
    while ((r = start)) {
      start = r->link;
      rc = start_attempt(c, r);
      if (rc) {
        pthread_mutex_lock(&e->lock);
        active_del(e, r);
        pthread_mutex_unlock(&e->lock);
        finish(c, r, rc, S3_EC_CLIENT);
      }
    }
    curl_multi_perform(e->multi, &running);
    done = 0;
    while ((msg = curl_multi_info_read(e->multi, &left))) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
      attempt_done(c, r, msg->data.result);
      done++;
    }
    /* completions free slots and queue retries: schedule again at once */
    if (!done)
      curl_multi_poll(e->multi, NULL, 0, wait_ms ? (int)wait_ms : 1, NULL);
  }
  return NULL;
}

int s3_engine_start(struct s3_client *c)
{
  struct s3_engine *e = &c->eng;
  int rc;

  curl_global_init(CURL_GLOBAL_DEFAULT);
  e->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^
           (uint64_t)(uintptr_t)c;
  if (!e->rng)
    e->rng = 88172645463325252ull;
  e->pool = calloc(c->cfg.max_inflight, sizeof(*e->pool));
  if (!e->pool)
    return -ENOMEM;
  e->multi = curl_multi_init();
  if (!e->multi) {
    rc = -ENOMEM;
    goto free_pool;
  }
  curl_multi_setopt(e->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                    (long)c->cfg.max_inflight);
  curl_multi_setopt(e->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                    (long)c->cfg.max_inflight);
  curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, (long)c->cfg.max_inflight);
  rc = -pthread_mutex_init(&e->lock, NULL);
  if (rc)
    goto clean_multi;
  rc = -pthread_create(&e->thread, NULL, engine_main, c);
  if (rc)
    goto destroy_lock;
  e->started = true;
  return 0;

destroy_lock:
  pthread_mutex_destroy(&e->lock);
clean_multi:
  curl_multi_cleanup(e->multi);
free_pool:
  free(e->pool);
  return rc;
}

void s3_engine_stop(struct s3_client *c)
{
  struct s3_engine *e = &c->eng;

  if (!e->started)
    return;
  pthread_mutex_lock(&e->lock);
  e->stop = true;
  pthread_mutex_unlock(&e->lock);
  curl_multi_wakeup(e->multi);
  pthread_join(e->thread, NULL);
  while (e->n_pool)
    curl_easy_cleanup(e->pool[--e->n_pool]);
  free(e->pool);
  e->pool = NULL;
  curl_multi_cleanup(e->multi);
  e->multi = NULL;
  e->started = false;
  e->stopped = true;
}

void s3_engine_free(struct s3_client *c)
{
  if (c->eng.stopped)
    pthread_mutex_destroy(&c->eng.lock);
  c->eng.stopped = false;
}

/* ---- the submitter's side ---- */

void s3_req_submit(struct s3_req *r, s3_req_done_fn done, void *arg)
{
  struct s3_engine *e = &r->client->eng;
  bool stopped;

  r->done = done;
  r->done_arg = arg;
  r->attempts = 0;
  r->ep_avoid = r->ep_failed = 0;
  r->rc = 0;
  r->not_before_ms = 0;
  pthread_mutex_lock(&e->lock);
  stopped = e->stop;
  r->cancel = stopped;
  r->state = S3_REQ_QUEUED;
  if (!stopped)
    list_push(&e->queue, &e->queue_tail, r);
  pthread_mutex_unlock(&e->lock);
  if (stopped)
    finish(r->client, r, -ECANCELED, S3_EC_NONE);
  else
    curl_multi_wakeup(e->multi);
}

int s3_req_wait(struct s3_req *r)
{
  struct s3_engine *e = &r->client->eng;

  pthread_mutex_lock(&e->lock);
  while (r->state != S3_REQ_DONE)
    pthread_cond_wait(&r->cv, &e->lock);
  pthread_mutex_unlock(&e->lock);
  return r->rc;
}

void s3_req_cancel(struct s3_req *r)
{
  struct s3_engine *e = &r->client->eng;
  bool wake;

  pthread_mutex_lock(&e->lock);
  wake = r->state == S3_REQ_QUEUED || r->state == S3_REQ_ACTIVE;
  if (wake) {
    r->cancel = true;
    e->n_cancel++;
  }
  pthread_mutex_unlock(&e->lock);
  if (wake)
    curl_multi_wakeup(e->multi);
}
