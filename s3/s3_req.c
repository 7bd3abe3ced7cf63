/* s3_req: building a request and reading its results (see s3_client.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_i.h"

static void kv_free(struct s3_kv *kv, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    free((char *)kv[i].key);
    free((char *)kv[i].val);
  }
  free(kv);
}

static int kv_append(struct s3_kv **arr, size_t *n, const char *k,
                     const char *v)
{
  struct s3_kv *na = realloc(*arr, (*n + 1) * sizeof(**arr));
  char *kc, *vc;

  if (!na)
    return -ENOMEM;
  *arr = na;
  kc = strdup(k);
  vc = strdup(v ? v : "");
  if (!kc || !vc) {
    free(kc);
    free(vc);
    return -ENOMEM;
  }
  na[*n].key = kc;
  na[*n].val = vc;
  (*n)++;
  return 0;
}

struct s3_req *s3_req_create(struct s3_client *c, const char *method,
                             const char *bucket, const char *key)
{
  struct s3_req *r = calloc(1, sizeof(*r));

  if (!r)
    return NULL;
  r->client = c;
  snprintf(r->method, sizeof(r->method), "%s", method);
  r->bucket = bucket ? strdup(bucket) : NULL;
  r->key = strdup(key ? key : "");
  if ((bucket && !r->bucket) || !r->key)
    goto free_req;
  if (pthread_cond_init(&r->cv, NULL))
    goto free_req;
  strcpy(r->payload_hash, S3_EMPTY_SHA256);
  r->idempotent = strcmp(method, "POST") != 0;
  r->ep = r->ep_only = r->ep_pin = -1;
  return r;

free_req:
  free(r->bucket);
  free(r->key);
  free(r);
  return NULL;
}

static void resp_headers_clear(struct s3_req *r)
{
  for (size_t i = 0; i < r->n_resp_hdr * 2; i++) {
    free(r->resp_hdr[i]);
    r->resp_hdr[i] = NULL;
  }
  r->n_resp_hdr = 0;
  r->resp_hdr_bytes = 0;
}

void s3_req_destroy(struct s3_req *r)
{
  if (!r)
    return;
  s3_req_run_release(r); /* never submitted: nothing else ran it */
  kv_free(r->query, r->n_query);
  kv_free(r->headers, r->n_headers);
  resp_headers_clear(r);
  if (r->xml)
    s3_xml_destroy(r->xml);
  if (r->err_xml)
    s3_xml_destroy(r->err_xml);
  curl_slist_free_all(r->hdr_list);
  free(r->url);
  free(r->rdma_token);
  pthread_cond_destroy(&r->cv);
  free(r->bucket);
  free(r->key);
  free(r->path);
  free(r);
}

void s3_req_run_release(struct s3_req *r)
{
  s3_req_release_fn fn = r->rdma_release;

  r->rdma_release = NULL;
  if (fn)
    fn(r, r->rdma_release_arg);
}

int s3_req_add_query(struct s3_req *r, const char *name, const char *value)
{
  return kv_append(&r->query, &r->n_query, name, value);
}

/* An HTTP token (RFC 9110 5.6.2): what a header name may be made of. */
static bool is_token(const char *s)
{
  if (!*s)
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("!#$%&'*+-.^_`|~", *s))
      return false;
  return true;
}

int s3_req_add_header(struct s3_req *r, const char *name, const char *value)
{
  /* a bad name, or a CR/LF in a value, would split or corrupt the request */
  if (!is_token(name) || (value && strpbrk(value, "\r\n")))
    return -EINVAL;
  return kv_append(&r->headers, &r->n_headers, name, value);
}

int s3_req_recondition(struct s3_req *r, const char *etag)
{
  for (size_t i = 0; i < r->n_headers; i++) {
    struct s3_kv *h = &r->headers[i];
    char *k, *v;

    if (strcasecmp(h->key, "if-match") && strcasecmp(h->key, "if-none-match"))
      continue;
    k = strdup("if-match");
    v = strdup(etag);
    if (!k || !v) {
      free(k);
      free(v);
      return -ENOMEM;
    }
    free((char *)h->key);
    free((char *)h->val);
    h->key = k;
    h->val = v;
  }
  return 0;
}

void s3_req_set_body(struct s3_req *r, const void *buf, size_t len,
                     bool sign_payload)
{
  r->body = buf;
  r->body_len = len;
  if (sign_payload)
    s3_sha256_hex(buf, len, r->payload_hash);
  else
    strcpy(r->payload_hash, S3_UNSIGNED_PAYLOAD);
}

void s3_req_set_sink_buf(struct s3_req *r, void *buf, size_t cap)
{
  struct iovec v = {.iov_base = buf, .iov_len = cap};

  s3_req_set_sink_iov(r, &v, 1);
}

int s3_req_set_sink_iov(struct s3_req *r, const struct iovec *iov, int n)
{
  if (n < 1 || n > S3_SINK_MAX_IOV)
    return -EINVAL;
  r->sink = S3_SINK_BUF;
  r->sink_niov = n;
  r->sink_cap = 0;
  for (int i = 0; i < n; i++) {
    r->sink_iov[i] = iov[i];
    r->sink_cap += iov[i].iov_len;
  }
  return 0;
}

void s3_req_set_sink_xml(struct s3_req *r, enum s3_xml_kind kind,
                         void *result)
{
  r->sink = S3_SINK_XML;
  r->xml_kind = kind;
  r->xml_result = result;
}

void s3_req_set_range(struct s3_req *r, uint64_t off, uint64_t len)
{
  r->has_range = true;
  r->range_off = off;
  r->range_len = len;
}

void s3_req_set_range_only(struct s3_req *r)
{
  r->range_only = true;
}

void s3_req_set_timeout(struct s3_req *r, unsigned timeout_ms)
{
  r->timeout_ms = timeout_ms;
}

void s3_req_set_idempotent(struct s3_req *r, bool idempotent)
{
  r->idempotent = idempotent;
}

unsigned s3_req_resent(const struct s3_req *r)
{
  return r->resent;
}

int s3_req_result(const struct s3_req *r)
{
  return r->rc;
}

long s3_req_status(const struct s3_req *r)
{
  return r->status;
}

size_t s3_req_received(const struct s3_req *r)
{
  if (r->rdma_path == S3_RDMA_DONE)
    return (size_t)r->rdma_bytes;
  return r->sink_len;
}

unsigned s3_req_attempts(const struct s3_req *r)
{
  return r->attempts;
}

const struct s3_error_info *s3_req_error(const struct s3_req *r)
{
  return &r->err;
}

const char *s3_req_header(const struct s3_req *r, const char *name)
{
  for (size_t i = 0; i < r->n_resp_hdr; i++)
    if (strcasecmp(r->resp_hdr[2 * i], name) == 0)
      return r->resp_hdr[2 * i + 1];
  return NULL;
}

bool s3_req_header_at(const struct s3_req *r, size_t i, const char **name,
                      const char **value)
{
  if (i >= r->n_resp_hdr)
    return false;
  *name = r->resp_hdr[2 * i];
  *value = r->resp_hdr[2 * i + 1];
  return true;
}

/* Engine helper: forget the previous attempt's reply. */
void s3_req_reset_reply(struct s3_req *r)
{
  resp_headers_clear(r);
  r->status = 0;
  r->sink_len = 0;
  r->sink_seg = 0;
  r->sink_seg_off = 0;
  r->sink_skip = 0;
  r->body_off = 0;
  r->err_body_len = 0;
  r->body_overflow = false;
  r->bad_headers = false;
  memset(&r->err, 0, sizeof(r->err));
  if (r->xml) {
    s3_xml_destroy(r->xml);
    r->xml = NULL;
    /* the last attempt may have parsed part of a body (the connection then
       broke) or all of it (then the transfer failed): start clean, or the
       retry would append to it */
    s3_xml_result_reset(r->xml_kind, r->xml_result);
  }
  if (r->err_xml) {
    s3_xml_destroy(r->err_xml);
    r->err_xml = NULL;
  }
}

/* Engine helper: store one response header line ("Name: value\r\n"). */
int s3_req_store_header(struct s3_req *r, const char *line, size_t len)
{
  const char *colon, *v, *end = line + len;
  char *name, *val;

  while (end > line && (end[-1] == '\r' || end[-1] == '\n'))
    end--;
  if (end == line)
    return 0; /* blank line: end of headers */
  if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    /* a new status line (100 Continue, redirect): start over */
    resp_headers_clear(r);
    return 0;
  }
  colon = memchr(line, ':', (size_t)(end - line));
  if (!colon || colon == line)
    return -EBADMSG;
  if (r->n_resp_hdr >= S3_MAX_RESP_HEADERS ||
      r->resp_hdr_bytes + len > S3_MAX_RESP_HEADER_BYTES)
    return -EBADMSG;
  for (const char *p = line; p < colon; p++)
    if (*p <= ' ' || *p >= 127)
      return -EBADMSG;
  v = colon + 1;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  name = strndup(line, (size_t)(colon - line));
  val = strndup(v, (size_t)(end - v));
  if (!name || !val) {
    free(name);
    free(val);
    return -ENOMEM;
  }
  r->resp_hdr[2 * r->n_resp_hdr] = name;
  r->resp_hdr[2 * r->n_resp_hdr + 1] = val;
  r->n_resp_hdr++;
  r->resp_hdr_bytes += len;
  return 0;
}
