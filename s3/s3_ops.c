/*
 * s3_ops: the S3 operations, each built as a request (s3_req.c), run through
 * the engine and its reply decoded. The synchronous calls submit and wait.
 * Multipart uploads are in s3_ops_multipart.c, copies of any size in
 * s3_ops_copy.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/slog.h"
#include "s3/s3_i.h"

int s3_ops_run(struct s3_req *r)
{
  s3_req_submit(r, NULL, NULL);
  return s3_req_wait(r);
}

void s3_ops_copy_etag(char dst[S3_ETAG_MAX], const char *src)
{
  size_t n;

  dst[0] = '\0';
  if (!src)
    return;
  if (*src == '"')
    src++;
  n = strlen(src);
  if (n && src[n - 1] == '"')
    n--;
  if (n >= S3_ETAG_MAX)
    n = S3_ETAG_MAX - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

int s3_ops_add_put_opts(struct s3_req *r, const struct s3_put_opts *o)
{
  char name[256];
  int rc = 0;

  if (!o)
    return 0;
  if (o->content_type)
    rc = s3_req_add_header(r, "content-type", o->content_type);
  for (size_t i = 0; !rc && i < o->n_meta; i++) {
    if (snprintf(name, sizeof(name), "x-amz-meta-%s", o->meta[i].key) >=
        (int)sizeof(name))
      return -ENAMETOOLONG;
    rc = s3_req_add_header(r, name, o->meta[i].val);
  }
  for (size_t i = 0; !rc && i < o->n_headers; i++)
    rc = s3_req_add_header(r, o->headers[i].key, o->headers[i].val);
  return rc;
}

static int parse_u64(const char *s, uint64_t *out)
{
  char *end;
  unsigned long long v;

  if (!s || *s < '0' || *s > '9')
    return -EBADMSG;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || *end)
    return -EBADMSG;
  *out = v;
  return 0;
}

/* RFC 7231 IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". */
static int parse_http_date(const char *s, time_t *out)
{
  struct tm tm;
  const char *end;

  memset(&tm, 0, sizeof(tm));
  end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
  if (!end || *end)
    return -EBADMSG;
  *out = timegm(&tm);
  return 0;
}

int s3_list_buckets(struct s3_client *c, struct s3_buckets_result *out)
{
  struct s3_req *r = s3_req_create(c, "GET", NULL, NULL);
  int rc;

  if (!r)
    return -ENOMEM;
  memset(out, 0, sizeof(*out));
  s3_req_set_sink_xml(r, S3_XML_LIST_BUCKETS, out);
  rc = s3_ops_run(r);
  if (rc)
    s3_buckets_result_cleanup(out);
  s3_req_destroy(r);
  return rc;
}

int s3_create_bucket(struct s3_client *c, const char *bucket)
{
  struct s3_req *r = s3_req_create(c, "PUT", bucket, NULL);
  char body[256];
  int rc, n = 0;

  if (!r)
    return -ENOMEM;
  if (strcmp(c->creds.region, "us-east-1") != 0)
    n = snprintf(body, sizeof(body),
                 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/"
                 "doc/2006-03-01/\"><LocationConstraint>%s</LocationConstraint>"
                 "</CreateBucketConfiguration>",
                 c->creds.region);
  s3_req_set_body(r, body, (size_t)n, true);
  rc = s3_ops_run(r);
  s3_req_destroy(r);
  return rc;
}

/* A request with nothing to send or decode: DELETE of a bucket or key. */
static int run_simple(struct s3_client *c, const char *method,
                      const char *bucket, const char *key)
{
  struct s3_req *r = s3_req_create(c, method, bucket, key);
  int rc;

  if (!r)
    return -ENOMEM;
  rc = s3_ops_run(r);
  s3_req_destroy(r);
  return rc;
}

int s3_delete_bucket(struct s3_client *c, const char *bucket)
{
  return run_simple(c, "DELETE", bucket, NULL);
}

struct s3_req *s3_list_objects_req(struct s3_client *c, const char *bucket,
                                   const struct s3_list_params *p,
                                   struct s3_list_result *out)
{
  struct s3_req *r = s3_req_create(c, "GET", bucket, NULL);
  char num[16];
  int rc;

  if (!r)
    return NULL;
  memset(out, 0, sizeof(*out));
  rc = s3_req_add_query(r, "list-type", "2");
  if (!rc)
    rc = s3_req_add_query(r, "encoding-type", "url");
  if (!rc && p && p->prefix && *p->prefix)
    rc = s3_req_add_query(r, "prefix", p->prefix);
  if (!rc && p && p->delimiter && *p->delimiter)
    rc = s3_req_add_query(r, "delimiter", p->delimiter);
  if (!rc && p && p->continuation && *p->continuation)
    rc = s3_req_add_query(r, "continuation-token", p->continuation);
  if (!rc && p && p->start_after && *p->start_after)
    rc = s3_req_add_query(r, "start-after", p->start_after);
  if (!rc && p && p->max_keys) {
    snprintf(num, sizeof(num), "%u", p->max_keys);
    rc = s3_req_add_query(r, "max-keys", num);
  }
  if (rc) {
    s3_req_destroy(r);
    return NULL;
  }
  s3_req_set_sink_xml(r, S3_XML_LIST_OBJECTS, out);
  return r;
}

int s3_list_objects(struct s3_client *c, const char *bucket,
                    const struct s3_list_params *p, struct s3_list_result *out)
{
  struct s3_req *r = s3_list_objects_req(c, bucket, p, out);
  int rc;

  if (!r)
    return -ENOMEM;
  rc = s3_ops_run(r);
  if (rc)
    s3_list_result_cleanup(out);
  s3_req_destroy(r);
  return rc;
}

void s3_object_meta_cleanup(struct s3_object_meta *m)
{
  if (!m)
    return;
  for (size_t i = 0; i < m->n_meta; i++) {
    free(m->meta[i].key);
    free(m->meta[i].val);
  }
  free(m->meta);
  m->meta = NULL;
  m->n_meta = 0;
}

static int meta_from_headers(const struct s3_req *r, struct s3_object_meta *m)
{
  const char *name, *val;
  struct s3_meta_kv *nm;
  int rc;

  rc = parse_u64(s3_req_header(r, "content-length"), &m->size);
  if (rc) {
    log_warn("HEAD %s: bad or missing Content-Length", r->key);
    return rc;
  }
  s3_ops_copy_etag(m->etag, s3_req_header(r, "etag"));
  if (s3_req_header(r, "last-modified") &&
      parse_http_date(s3_req_header(r, "last-modified"), &m->mtime))
    log_info("HEAD %s: unparsable Last-Modified '%s'", r->key,
             s3_req_header(r, "last-modified"));
  snprintf(m->content_type, sizeof(m->content_type), "%s",
           s3_req_header(r, "content-type") ? s3_req_header(r, "content-type")
                                            : "");
  for (size_t i = 0; s3_req_header_at(r, i, &name, &val); i++) {
    if (strncasecmp(name, "x-amz-meta-", 11) != 0)
      continue;
    nm = realloc(m->meta, (m->n_meta + 1) * sizeof(*nm));
    if (!nm)
      return -ENOMEM;
    m->meta = nm;
    nm[m->n_meta].key = strdup(name + 11);
    nm[m->n_meta].val = strdup(val);
    m->n_meta++;
    if (!nm[m->n_meta - 1].key || !nm[m->n_meta - 1].val)
      return -ENOMEM;
    for (char *p = nm[m->n_meta - 1].key; *p; p++)
      if (*p >= 'A' && *p <= 'Z')
        *p = (char)(*p - 'A' + 'a');
  }
  return 0;
}

int s3_head_object_result(const struct s3_req *r, struct s3_object_meta *out)
{
  int rc = r->rc;

  memset(out, 0, sizeof(*out));
  if (!rc)
    rc = meta_from_headers(r, out);
  if (rc)
    s3_object_meta_cleanup(out);
  return rc;
}

int s3_head_object(struct s3_client *c, const char *bucket, const char *key,
                   struct s3_object_meta *out)
{
  struct s3_req *r = s3_req_create(c, "HEAD", bucket, key);
  int rc;

  memset(out, 0, sizeof(*out));
  if (!r)
    return -ENOMEM;
  s3_ops_run(r);
  rc = s3_head_object_result(r, out);
  s3_req_destroy(r);
  return rc;
}

struct s3_req *s3_get_object_req(struct s3_client *c, const char *bucket,
                                 const char *key, uint64_t off, size_t len,
                                 void *buf)
{
  struct s3_req *r = s3_req_create(c, "GET", bucket, key);

  if (!r)
    return NULL;
  s3_req_set_sink_buf(r, buf, len);
  if (len)
    s3_req_set_range(r, off, len);
  return r;
}

int s3_get_meta_result(const struct s3_req *r, struct s3_object_meta *out)
{
  const char *cr = s3_req_header(r, "content-range");
  const char *slash = cr ? strrchr(cr, '/') : NULL;
  int rc = s3_head_object_result(r, out);

  /* a part of the object: its size is Content-Range's ("bytes A-B/SIZE") */
  if (!rc && r->status == 206 && (!slash || parse_u64(slash + 1, &out->size))) {
    log_warn("GET %s: bad or missing Content-Range", r->key);
    s3_object_meta_cleanup(out);
    rc = -EIO;
  }
  return rc;
}

int s3_get_object_result(const struct s3_req *r, size_t *got)
{
  *got = 0;
  if (r->status == 416)
    return 0; /* the range starts at or past the end of the object */
  if (r->rc)
    return r->rc;
  *got = s3_req_received(r);
  return 0;
}

int s3_get_object(struct s3_client *c, const char *bucket, const char *key,
                  uint64_t off, size_t len, void *buf, size_t *got)
{
  struct s3_req *r;
  int rc;

  *got = 0;
  if (!len)
    return 0;
  r = s3_get_object_req(c, bucket, key, off, len, buf);
  if (!r)
    return -ENOMEM;
  s3_ops_run(r);
  rc = s3_get_object_result(r, got);
  s3_req_destroy(r);
  return rc;
}

/* The PUT request, or the reason there is none. */
static int put_build(struct s3_client *c, const char *bucket, const char *key,
                     const void *buf, size_t len, const struct s3_put_opts *o,
                     struct s3_req **out)
{
  struct s3_req *r = s3_req_create(c, "PUT", bucket, key);
  int rc;

  *out = NULL;
  if (!r)
    return -ENOMEM;
  rc = s3_ops_add_put_opts(r, o);
  if (rc) {
    s3_req_destroy(r);
    return rc;
  }
  s3_req_set_body(r, buf, len, c->cfg.sign_payload);
  *out = r;
  return 0;
}

struct s3_req *s3_put_object_req(struct s3_client *c, const char *bucket,
                                 const char *key, const void *buf, size_t len,
                                 const struct s3_put_opts *o)
{
  struct s3_req *r;

  (void)put_build(c, bucket, key, buf, len, o, &r);
  return r;
}

int s3_put_object_result(const struct s3_req *r, char etag[S3_ETAG_MAX])
{
  if (etag)
    etag[0] = '\0';
  if (r->rc)
    return r->rc;
  if (etag)
    s3_ops_copy_etag(etag, s3_req_header(r, "etag"));
  return 0;
}

int s3_put_object(struct s3_client *c, const char *bucket, const char *key,
                  const void *buf, size_t len, const struct s3_put_opts *o,
                  char etag[S3_ETAG_MAX])
{
  struct s3_req *r;
  int rc = put_build(c, bucket, key, buf, len, o, &r);

  if (rc)
    return rc;
  s3_ops_run(r);
  rc = s3_put_object_result(r, etag);
  s3_req_destroy(r);
  return rc;
}

int s3_ops_add_copy_source(struct s3_req *r, const char *bucket,
                           const char *key)
{
  char *enc = s3_uri_encode(key, strlen(key), true), *v;
  int rc;

  if (!enc)
    return -ENOMEM;
  v = malloc(strlen(bucket) + strlen(enc) + 2);
  if (!v) {
    free(enc);
    return -ENOMEM;
  }
  sprintf(v, "%s/%s", bucket, enc);
  rc = s3_req_add_header(r, "x-amz-copy-source", v);
  free(v);
  free(enc);
  return rc;
}

int s3_copy_object(struct s3_client *c, const char *src_bucket,
                   const char *src_key, const char *dst_bucket,
                   const char *dst_key, bool replace_meta,
                   const struct s3_put_opts *o, char etag[S3_ETAG_MAX])
{
  struct s3_req *r = s3_req_create(c, "PUT", dst_bucket, dst_key);
  struct s3_etag_result res = {0};
  int rc;

  if (!r)
    return -ENOMEM;
  rc = s3_ops_add_copy_source(r, src_bucket, src_key);
  if (!rc)
    rc = s3_req_add_header(r, "x-amz-metadata-directive",
                           replace_meta ? "REPLACE" : "COPY");
  if (!rc && replace_meta)
    rc = s3_ops_add_put_opts(r, o);
  if (!rc) {
    s3_req_set_sink_xml(r, S3_XML_COPY_RESULT, &res);
    rc = s3_ops_run(r);
  }
  if (!rc && etag)
    s3_ops_copy_etag(etag, res.etag);
  s3_req_destroy(r);
  return rc;
}

int s3_delete_object(struct s3_client *c, const char *bucket, const char *key)
{
  return run_simple(c, "DELETE", bucket, key);
}

int s3_delete_objects(struct s3_client *c, const char *bucket,
                      const char *const *keys, size_t n,
                      struct s3_delete_result *out)
{
  struct s3_req *r = s3_req_create(c, "POST", bucket, NULL);
  unsigned char md5[EVP_MAX_MD_SIZE];
  unsigned int md5_len = 0;
  char md5_b64[64], *body = NULL;
  size_t len;
  int rc;

  if (!r)
    return -ENOMEM;
  memset(out, 0, sizeof(*out));
  rc = s3_xml_build_delete(keys, n, false, &body, &len);
  if (!rc && !EVP_Digest(body, len, md5, &md5_len, EVP_md5(), NULL))
    rc = -EIO;
  if (!rc) {
    EVP_EncodeBlock((unsigned char *)md5_b64, md5, (int)md5_len);
    rc = s3_req_add_query(r, "delete", "");
  }
  if (!rc)
    rc = s3_req_add_header(r, "content-md5", md5_b64);
  if (!rc) {
    s3_req_set_idempotent(r, true); /* deleting twice deletes once */
    s3_req_set_body(r, body, len, true);
    s3_req_set_sink_xml(r, S3_XML_DELETE_RESULT, out);
    rc = s3_ops_run(r);
  }
  if (rc)
    s3_delete_result_cleanup(out);
  free(body);
  s3_req_destroy(r);
  return rc;
}
