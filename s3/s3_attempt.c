/*
 * s3_attempt: one attempt on a curl easy handle (see s3_attempt.h). Engine
 * thread only: the callbacks run inside curl_multi_perform.
 */
#include "s3/s3_attempt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/clock.h"
#include "common/slog.h"
#include "s3/s3_curl.h"
#include "s3/s3_eps.h"
#include "s3/s3_i.h"
#include "s3/s3_req_sign.h"

#define ERROR_BODY_MAX (64 * 1024)

/* ---- curl callbacks ---- */

static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
  struct s3_req *r = ud;
  size_t n = size * nmemb;
  const char *cr;
  unsigned long long start;

  if (s3_req_store_header(r, ptr, n)) {
    r->bad_headers = true;
    return 0;
  }
  if (n > 2 || (n >= 1 && ptr[0] != '\r' && ptr[0] != '\n'))
    return n;
  /* end of a header block: look at the status */
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
  if (!r->has_range || r->sink != S3_SINK_BUF)
    return n;
  if (r->status == 200) {
    r->sink_skip = r->range_off; /* the server sent the whole object */
  } else if (r->status == 206) {
    cr = s3_req_header(r, "content-range");
    if (!cr || sscanf(cr, "bytes %llu-", &start) != 1 ||
        start != r->range_off) {
      log_warn("GET %s: Content-Range '%s' does not match the request",
               r->key, cr ? cr : "(none)");
      r->bad_headers = true;
      return 0;
    }
  }
  return n;
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
  struct s3_req *r = ud;
  size_t n = size * nmemb, skip, room;

  atomic_fetch_add(&r->client->st_recv, n);
  if (!r->status)
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
  if (r->status >= 300) {
    /* error document: parse it as it streams, ignore past a sane size */
    if (r->err_body_len + n <= ERROR_BODY_MAX) {
      if (!r->err_xml)
        r->err_xml = s3_xml_create(S3_XML_ERROR, NULL, &r->err);
      if (r->err_xml)
        s3_xml_feed(r->err_xml, ptr, n);
    }
    r->err_body_len += n;
    return n;
  }
  switch (r->sink) {
  case S3_SINK_BUF:
    skip = r->sink_skip < n ? (size_t)r->sink_skip : n;
    r->sink_skip -= skip;
    ptr += skip;
    n -= skip;
    room = r->sink_cap - r->sink_len;
    if (n > room) {
      if (!r->has_range || r->status != 200 || r->range_only) {
        r->body_overflow = true;
        return 0;
      }
      n = room; /* whole object for a range: keep ours, drop the rest */
    }
    r->sink_len += n;
    while (n) {
      struct iovec *v = &r->sink_iov[r->sink_seg];
      size_t take = v->iov_len - r->sink_seg_off;
      if (take > n)
        take = n;
      memcpy((unsigned char *)v->iov_base + r->sink_seg_off, ptr, take);
      ptr += take;
      n -= take;
      r->sink_seg_off += take;
      if (r->sink_seg_off == v->iov_len && r->sink_seg + 1 < r->sink_niov) {
        r->sink_seg++;
        r->sink_seg_off = 0;
      }
    }
    break;
  case S3_SINK_XML:
    if (!r->xml) {
      r->xml = s3_xml_create(r->xml_kind, r->xml_result, &r->err);
      if (!r->xml)
        return 0;
    }
    if (s3_xml_feed(r->xml, ptr, n)) {
      r->body_overflow = true; /* reported as a malformed reply */
      return 0;
    }
    break;
  case S3_SINK_NONE:
    break;
  }
  return size * nmemb;
}

static size_t read_cb(char *buf, size_t size, size_t nmemb, void *ud)
{
  struct s3_req *r = ud;
  size_t n = size * nmemb;
  size_t left = r->rdma_on ? 0 : r->body_len - r->body_off; /* RDMA: none */

  if (n > left)
    n = left;
  memcpy(buf, r->body + r->body_off, n);
  r->body_off += n;
  atomic_fetch_add(&r->client->st_sent, n);
  return n;
}

static int seek_cb(void *ud, curl_off_t off, int origin)
{
  struct s3_req *r = ud;

  if (origin != SEEK_SET || off < 0 || (size_t)off > r->body_len)
    return CURL_SEEKFUNC_CANTSEEK;
  r->body_off = (size_t)off;
  return CURL_SEEKFUNC_OK;
}

/* ---- the attempt ---- */

unsigned s3_rdma_attempt_ms(const struct s3_client *c, const struct s3_req *r)
{
  unsigned req = r->timeout_ms ? r->timeout_ms : c->cfg.request_timeout_ms;
  uint64_t ms = c->cfg.rdma_timeout_ms ? c->cfg.rdma_timeout_ms : 30000;

  ms += (r->rdma_len >> 23) * 1000; /* a second per 8 MiB */
  if (ms > UINT32_MAX / 2)
    ms = UINT32_MAX / 2;
  if (req && req < ms)
    ms = req;
  return (unsigned)ms;
}

static bool has_header(const struct s3_req *r, const char *name)
{
  for (size_t i = 0; i < r->n_headers; i++)
    if (strcasecmp(r->headers[i].key, name) == 0)
      return true;
  return false;
}

int s3_attempt_prepare(struct s3_client *c, struct s3_req *r)
{
  const struct s3_ep *e =
      &c->eps[r->ep = s3_eps_pick(c, r)];
  const struct s3_req_target t = {
      .scheme = e->scheme_host,
      .host = e->host,
      .base_path = e->base_path,
      .virtual_host = c->cfg.virtual_host,
      .creds = &c->creds,
      .rdma_header = c->rdma_header,
  };
  int rc;

  if (r->rdma_on && r->ep_pin >= 0 && r->ep != r->ep_pin) {
    /* its token names a session on the endpoint it is bound to, which is
       down: this attempt, and the rest, carry the bytes in HTTP bodies */
    r->rdma_on = false;
    atomic_fetch_add(&c->st_rdma_resent, 1);
  }
  if (r->rdma_on) {
    /* the deadline of this attempt, for both sides (s3_req_set_rdma) */
    r->rdma_attempt_ms = s3_rdma_attempt_ms(c, r);
    r->rdma_until_ms = clock_mono_ms() + r->rdma_attempt_ms;
    r->rdma_until_wall_ms = clock_wall_ms() + r->rdma_attempt_ms;
  }
  rc = s3_req_sign_attempt(r, &t);
  if (rc)
    return rc;
  if (!strcmp(r->method, "POST") && !has_header(r, "content-type")) {
    struct curl_slist *n = curl_slist_append(r->hdr_list, "Content-Type:");
    if (!n)
      return -ENOMEM;
    r->hdr_list = n;
  }
  return 0;
}

void s3_attempt_setup(struct s3_client *c, struct s3_req *r, CURL *h)
{
  unsigned timeout = r->timeout_ms ? r->timeout_ms : c->cfg.request_timeout_ms;

  r->easy = h;
  curl_easy_setopt(h, CURLOPT_URL, r->url);
  r->curl_err[0] = '\0';
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->curl_err);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, r->hdr_list);
  curl_easy_setopt(h, CURLOPT_PRIVATE, r);
  /* a token attempt: the server moves the bytes while this exchange is
     idle: no low-speed abort, but the deadline the server was given */
  s3_curl_setup(h, &(struct s3_curl_opts){
                       .buffer_size = 512L * 1024,
                       .connect_timeout_ms = (long)c->cfg.connect_timeout_ms,
                       .low_speed_time_s =
                           r->rdma_on ? 0 : (long)c->cfg.low_speed_time_s,
                   });
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                   (long)(r->rdma_on ? r->rdma_attempt_ms : timeout));
  if (c->ca_bundle)
    curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_bundle);
  if (c->cfg.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
  if (!strcmp(r->method, "GET")) {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (!strcmp(r->method, "HEAD")) {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else if (!strcmp(r->method, "PUT")) {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
                     (curl_off_t)(r->rdma_on ? 0 : r->body_len));
    curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(h, CURLOPT_READDATA, r);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_cb);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
  } else if (!strcmp(r->method, "POST")) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(h, CURLOPT_READDATA, r);
    curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_cb);
    curl_easy_setopt(h, CURLOPT_SEEKDATA, r);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
  }
}

bool s3_attempt_sent(CURL *easy)
{
  curl_off_t pre = 1;
  long sent = 1;

  curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &sent);
  curl_easy_getinfo(easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
  return sent != 0 || pre != 0;
}

void s3_attempt_classify(struct s3_req *r, CURLcode cc, struct s3_err_map *m,
                         int *rc)
{
  int xr;

  memset(m, 0, sizeof(*m));
  *rc = 0;
  if (r->bad_headers || r->body_overflow) {
    *m = (struct s3_err_map){.err = EBADMSG, .cls = S3_EC_PROTOCOL};
    *rc = -EBADMSG;
    return;
  }
  /* not a scheme we lack (the URL was checked): a reply that is not HTTP
     ("Received HTTP/0.9"), as a weird reply is */
  if (cc == CURLE_UNSUPPORTED_PROTOCOL && s3_attempt_sent(r->easy))
    cc = CURLE_WEIRD_SERVER_REPLY;
  if (cc != CURLE_OK) {
    s3_err_from_curl((int)cc, m);
    *rc = -m->err;
    return;
  }
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
  if (r->status >= 300 || r->status < 100) {
    if (r->err_xml && s3_xml_finish(r->err_xml) != 1)
      r->err.code[0] = '\0';
    s3_err_from_http(r->status, r->err.code, m);
    *rc = -m->err;
    return;
  }
  if (r->sink == S3_SINK_XML) {
    if (!r->xml)
      r->xml = s3_xml_create(r->xml_kind, r->xml_result, &r->err);
    xr = r->xml ? s3_xml_finish(r->xml) : -ENOMEM;
    if (xr == 1) {
      /* 200 with an <Error> document: judged by its code, as a 5xx */
      s3_err_from_http(500, r->err.code, m);
      *rc = -m->err;
    } else if (xr < 0) {
      *m = (struct s3_err_map){.err = EBADMSG, .cls = S3_EC_PROTOCOL};
      *rc = xr == -ENOMEM ? -ENOMEM : -EBADMSG;
    }
  }
}
