/* gw_serve: a token request's bytes by rdx_serve (see gw_serve.h). */
#include "gateway/gw_serve.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "common/slog.h"

/*
 * rdx_serve for the request's token, unless the connection has given the
 * request up (gw_req_cancel): then -ECANCELED, nothing touched.
 */
static int serve(struct gw_run *w, size_t len, char *why, size_t whylen)
{
  struct gw_req *r = w->r;
  int rc;

  pthread_mutex_lock(&r->mu);
  if (r->cancel) {
    pthread_mutex_unlock(&r->mu);
    snprintf(why, whylen, "the client was answered or has left");
    return -ECANCELED;
  }
  r->serving = true;
  pthread_mutex_unlock(&r->mu);
  rc = rdx_serve(w->rdx, &r->token, &r->rdx, r->tok_off, r->chunk, len, why,
                 whylen);
  pthread_mutex_lock(&r->mu);
  r->serving = false;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  return rc;
}

/* A token refused or failed: log one line (kind and reason, no token). */
void gw_serve_fail(struct gw_run *w, int rc, const char *why, bool midway)
{
  struct gw_req *r = w->r;
  int status;
  const char *code;
  unsigned reply;

  gw_rdx_error(r->token.kind, rc, &status, &code, &reply);
  if (rc == -ETIMEDOUT && gw_req_expired(r)) {
    gw_stat_add(w->stats, token_expired, 1);
  } else if (rc == -ECANCELED) {
    /* the client left: counted once, by the connection */
  } else if (midway) {
    gw_stat_add(w->stats, token_failures, 1);
  } else {
    gw_stat_add(w->stats, refused, 1);
  }
  if (rc == -ECANCELED)
    log_info("token %s %s %s abandoned: %s", rdx_kind_name(r->token.kind),
             r->method, r->path, why);
  else
    log_warn("token %s %s %s %s: %s: %s", rdx_kind_name(r->token.kind),
             r->method, r->path, midway ? "failed" : "refused", strerror(-rc),
             why);
  gw_req_set_error_reply(r, status, code, why, reply);
}

/* GET: the token's kind cannot be served: send the bytes over HTTP. */
static void fallback_http(struct gw_run *w, const char *why)
{
  struct gw_req *r = w->r;

  gw_req_note_declined(r, w->stats, why);
  pthread_mutex_lock(&r->mu);
  r->mode = GW_MODE_HTTP;
  r->decline = true;
  gw_req_set_ready_locked(r);
  pthread_mutex_unlock(&r->mu);
}

int gw_serve_start(struct gw_run *w)
{
  struct gw_req *r = w->r;
  char why[256] = "";
  int rc;

  if (r->tok == GW_TOK_GET && !r->range_known) {
    if (r->resp_len <= 0) {
      fallback_http(w, "upstream sent no Content-Length");
      return 0;
    }
    r->rdx.len = (uint64_t)r->resp_len;
    rc = rdx_serve_check(w->rdx, &r->token, &r->rdx, why, sizeof(why));
    if (rc == -EOPNOTSUPP) {
      fallback_http(w, why);
      return 0;
    }
    if (rc) {
      gw_serve_fail(w, rc, why, false);
      return -1;
    }
  }
  r->mode = GW_MODE_RDMA; /* the HTTP side looks only once ready */
  return 0;
}

int gw_serve_get_flush(struct gw_run *w)
{
  struct gw_req *r = w->r;
  char why[256] = "";
  int rc;

  if (!r->chunk_fill)
    return 0;
  rc = serve(w, r->chunk_fill, why, sizeof(why));
  if (rc == -EOPNOTSUPP && r->tok_off == 0) {
    fallback_http(w, why);
    rc = gw_pipe_push(&r->down, r->chunk, r->chunk_fill);
    if (rc)
      return -1;
    gw_stat_add(w->stats, http_bytes_out, r->chunk_fill);
    r->chunk_fill = 0;
    return 0;
  }
  if (rc) {
    gw_serve_fail(w, rc, why, r->tok_off > 0);
    return -1;
  }
  r->tok_off += r->chunk_fill;
  gw_stat_add(w->stats, rdma_bytes_get, r->chunk_fill);
  r->chunk_fill = 0;
  return 0;
}

int gw_serve_get_write(struct gw_run *w, const char *buf, size_t len,
                       size_t *used)
{
  struct gw_req *r = w->r;
  size_t off = 0;

  while (off < len && r->mode == GW_MODE_RDMA) {
    size_t k = w->cfg->chunk_size - r->chunk_fill;
    if (k > len - off)
      k = len - off;
    if (r->tok_off + r->chunk_fill + k > r->rdx.len) {
      gw_serve_fail(w, -EIO, "upstream sent more than the range", true);
      return -1;
    }
    memcpy((char *)r->chunk + r->chunk_fill, buf + off, k);
    r->chunk_fill += k;
    off += k;
    if (r->chunk_fill == w->cfg->chunk_size && gw_serve_get_flush(w))
      return -1;
  }
  *used = off;
  return 0;
}

/* PUT: the next chunk from the client's memory. 0, or -1 (aborts). */
static int put_fill(struct gw_run *w)
{
  struct gw_req *r = w->r;
  uint64_t left = r->rdx.len - r->tok_off;
  size_t k = w->cfg->chunk_size;
  char why[256] = "";
  int rc;

  if (k > left)
    k = (size_t)left;
  rc = serve(w, k, why, sizeof(why));
  if (rc == -EOPNOTSUPP && r->tok_off == 0) {
    gw_req_note_declined(r, w->stats, why);
    pthread_mutex_lock(&r->mu);
    r->decline = true;
    gw_req_set_error_locked(r, GW_STATUS_DECLINED, GW_CODE_DECLINED, why);
    pthread_mutex_unlock(&r->mu);
    return -1;
  }
  if (rc) {
    gw_serve_fail(w, rc, why, r->tok_off > 0);
    return -1;
  }
  r->tok_off += k;
  gw_stat_add(w->stats, rdma_bytes_put, k);
  r->chunk_fill = k;
  w->chunk_pos = 0;
  if (r->tok_off == r->rdx.len && w->cfg->test_put_hold_ms &&
      !gw_req_hold(r, w->cfg->test_put_hold_ms)) {
    w->stopped = "its client has gone";
    return -1; /* cut short upstream: not stored */
  }
  return 0;
}

size_t gw_serve_put_read(struct gw_run *w, char *buf, size_t max)
{
  struct gw_req *r = w->r;
  size_t k;

  if (w->chunk_pos == r->chunk_fill) {
    if (r->rdx.len == r->tok_off)
      return 0;
    if (put_fill(w))
      return CURL_READFUNC_ABORT;
  }
  k = r->chunk_fill - w->chunk_pos;
  if (k > max)
    k = max;
  memcpy(buf, (char *)r->chunk + w->chunk_pos, k);
  w->chunk_pos += k;
  return k;
}
