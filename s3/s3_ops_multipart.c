/*
 * s3_ops_multipart: multipart uploads (CreateMultipartUpload, UploadPart,
 * UploadPartCopy, Complete, Abort) and ListMultipartUploads. Like s3_ops.c:
 * a request per operation, the synchronous calls submit and wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/slog.h"
#include "s3/s3_i.h"

int s3_create_multipart(struct s3_client *c, const char *bucket,
                        const char *key, const struct s3_put_opts *o,
                        char **upload_id, unsigned *orphans)
{
  struct s3_req *r = s3_req_create(c, "POST", bucket, key);
  struct s3_mpu_result res = {0};
  int rc;

  if (orphans)
    *orphans = 0;
  if (!r)
    return -ENOMEM;
  *upload_id = NULL;
  s3_req_set_idempotent(r, true); /* a repeat makes another upload */
  rc = s3_req_add_query(r, "uploads", "");
  if (!rc)
    rc = s3_ops_add_put_opts(r, o);
  if (!rc) {
    s3_req_set_sink_xml(r, S3_XML_INITIATE_MPU, &res);
    rc = s3_ops_run(r);
  }
  if (!rc) {
    *upload_id = res.upload_id;
    res.upload_id = NULL;
  }
  if (orphans)
    *orphans = s3_req_resent(r);
  else if (s3_req_resent(r)) /* said here, as nobody else will */
    log_warn("%s/%s: CreateMultipartUpload repeated %u time(s) after an "
             "answer was lost: as many uploads it may have made are "
             "nobody's (the bucket's lifecycle rule, "
             "AbortIncompleteMultipartUpload, removes them)",
             bucket, key, s3_req_resent(r));
  s3_mpu_result_cleanup(&res);
  s3_req_destroy(r);
  return rc;
}

static int add_part_query(struct s3_req *r, const char *upload_id, int part)
{
  char num[16];
  int rc;

  if (part < 1 || part > 10000)
    return -EINVAL;
  snprintf(num, sizeof(num), "%d", part);
  rc = s3_req_add_query(r, "partNumber", num);
  if (!rc)
    rc = s3_req_add_query(r, "uploadId", upload_id);
  return rc;
}

struct s3_req *s3_upload_part_req(struct s3_client *c, const char *bucket,
                                  const char *key, const char *upload_id,
                                  int part, const void *buf, size_t len)
{
  struct s3_req *r = s3_req_create(c, "PUT", bucket, key);

  if (!r)
    return NULL;
  if (add_part_query(r, upload_id, part)) {
    s3_req_destroy(r);
    return NULL;
  }
  s3_req_set_body(r, buf, len, c->cfg.sign_payload);
  return r;
}

int s3_upload_part_result(const struct s3_req *r, char etag[S3_ETAG_MAX])
{
  if (r->rc)
    return r->rc;
  s3_ops_copy_etag(etag, s3_req_header(r, "etag"));
  return etag[0] ? 0 : -EBADMSG;
}

int s3_upload_part(struct s3_client *c, const char *bucket, const char *key,
                   const char *upload_id, int part, const void *buf,
                   size_t len, char etag[S3_ETAG_MAX])
{
  struct s3_req *r;
  int rc;

  if (part < 1 || part > 10000)
    return -EINVAL;
  r = s3_upload_part_req(c, bucket, key, upload_id, part, buf, len);
  if (!r)
    return -ENOMEM;
  s3_ops_run(r);
  rc = s3_upload_part_result(r, etag);
  s3_req_destroy(r);
  return rc;
}

/* "\"etag\"": an entity tag as HTTP conditions quote it. */
static int add_if_match(struct s3_req *r, const char *name, const char *etag)
{
  char v[S3_ETAG_MAX + 2];

  if (!*etag || strlen(etag) >= S3_ETAG_MAX)
    return -EINVAL;
  if (*etag == '"')
    snprintf(v, sizeof(v), "%s", etag);
  else
    snprintf(v, sizeof(v), "\"%s\"", etag);
  return s3_req_add_header(r, name, v);
}

/* The UploadPartCopy request, or the reason there is none. */
static int part_copy_build(struct s3_client *c, const char *bucket,
                           const char *key, const char *upload_id, int part,
                           const char *src_bucket, const char *src_key,
                           uint64_t off, uint64_t len,
                           const char *src_if_match, struct s3_req **out)
{
  struct s3_req *r = s3_req_create(c, "PUT", bucket, key);
  char range[64];
  int rc;

  *out = NULL;
  if (!r)
    return -ENOMEM;
  rc = add_part_query(r, upload_id, part);
  if (!rc)
    rc = s3_ops_add_copy_source(r, src_bucket, src_key);
  if (!rc && len) {
    if (off > UINT64_MAX - len) {
      rc = -EINVAL;
    } else {
      snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64, off,
               off + len - 1);
      rc = s3_req_add_header(r, "x-amz-copy-source-range", range);
    }
  }
  if (!rc && src_if_match)
    rc = add_if_match(r, "x-amz-copy-source-if-match", src_if_match);
  if (rc) {
    s3_req_destroy(r);
    return rc;
  }
  /* the reply (CopyPartResult, or a 200 <Error>) lands in the request */
  s3_req_set_sink_xml(r, S3_XML_COPY_RESULT, &r->etag_res);
  *out = r;
  return 0;
}

struct s3_req *s3_upload_part_copy_req(struct s3_client *c,
                                       const char *bucket, const char *key,
                                       const char *upload_id, int part,
                                       const char *src_bucket,
                                       const char *src_key, uint64_t off,
                                       uint64_t len, const char *src_if_match)
{
  struct s3_req *r;

  (void)part_copy_build(c, bucket, key, upload_id, part, src_bucket, src_key,
                        off, len, src_if_match, &r);
  return r;
}

int s3_upload_part_copy_result(const struct s3_req *r,
                               char etag[S3_ETAG_MAX])
{
  etag[0] = '\0';
  if (r->rc)
    return r->rc;
  s3_ops_copy_etag(etag, r->etag_res.etag);
  return etag[0] ? 0 : -EBADMSG;
}

int s3_upload_part_copy(struct s3_client *c, const char *bucket,
                        const char *key, const char *upload_id, int part,
                        const char *src_bucket, const char *src_key,
                        uint64_t off, uint64_t len, char etag[S3_ETAG_MAX])
{
  struct s3_req *r;
  int rc = part_copy_build(c, bucket, key, upload_id, part, src_bucket,
                           src_key, off, len, NULL, &r);

  if (rc)
    return rc;
  s3_ops_run(r);
  rc = s3_upload_part_copy_result(r, etag);
  s3_req_destroy(r);
  return rc;
}

int s3_complete_multipart(struct s3_client *c, const char *bucket,
                          const char *key, const char *upload_id,
                          const struct s3_part_etag *parts, size_t n,
                          char etag[S3_ETAG_MAX])
{
  return s3_complete_multipart_if(c, bucket, key, upload_id, parts, n, NULL,
                                  etag);
}

int s3_complete_multipart_if(struct s3_client *c, const char *bucket,
                             const char *key, const char *upload_id,
                             const struct s3_part_etag *parts, size_t n,
                             const struct s3_kv *cond, char etag[S3_ETAG_MAX])
{
  struct s3_req *r = s3_req_create(c, "POST", bucket, key);
  struct s3_etag_result res = {0};
  char *body = NULL;
  size_t len;
  int rc;

  if (!r)
    return -ENOMEM;
  rc = s3_xml_build_complete(parts, n, &body, &len);
  if (!rc)
    rc = s3_req_add_query(r, "uploadId", upload_id);
  if (!rc && cond)
    rc = s3_req_add_header(r, cond->key, cond->val);
  if (!rc) {
    /* S3 documents Complete as safe to retry with the same parts */
    s3_req_set_idempotent(r, true);
    s3_req_set_body(r, body, len, true);
    s3_req_set_sink_xml(r, S3_XML_COMPLETE_MPU, &res);
    rc = s3_ops_run(r);
  }
  if (!rc && etag)
    s3_ops_copy_etag(etag, res.etag);
  free(body);
  s3_req_destroy(r);
  if (!rc && etag && !etag[0]) {
    /* some servers (Ceph RGW 16) answer with an empty ETag: ask for it */
    struct s3_object_meta m;
    if (s3_head_object(c, bucket, key, &m) == 0) {
      memcpy(etag, m.etag, S3_ETAG_MAX);
      s3_object_meta_cleanup(&m);
    }
  }
  return rc;
}

int s3_abort_multipart(struct s3_client *c, const char *bucket,
                       const char *key, const char *upload_id)
{
  struct s3_req *r = s3_req_create(c, "DELETE", bucket, key);
  int rc;

  if (!r)
    return -ENOMEM;
  rc = s3_req_add_query(r, "uploadId", upload_id);
  if (!rc)
    rc = s3_ops_run(r);
  s3_req_destroy(r);
  return rc;
}

#define LIST_PARTS_PAGES 11 /* 10,000 parts, 1,000 a page */

int s3_list_parts(struct s3_client *c, const char *bucket, const char *key,
                  const char *upload_id, int (*run)(void *, struct s3_req *),
                  void *arg, struct s3_parts_result *out)
{
  int marker = 0, rc = 0;
  bool more = true;

  memset(out, 0, sizeof(*out));
  for (int page = 0; page < LIST_PARTS_PAGES && more && !rc; page++) {
    struct s3_parts_result pr = {0};
    struct s3_req *q = s3_req_create(c, "GET", bucket, key);
    struct s3_part_info *v;
    char num[16];

    snprintf(num, sizeof(num), "%d", marker);
    rc = q ? s3_req_add_query(q, "uploadId", upload_id) : -ENOMEM;
    if (!rc && marker)
      rc = s3_req_add_query(q, "part-number-marker", num);
    if (!rc) {
      s3_req_set_sink_xml(q, S3_XML_LIST_PARTS, &pr);
      rc = run ? run(arg, q) : s3_ops_run(q);
    }
    if (q)
      s3_req_destroy(q);
    if (!rc && pr.n_parts) {
      v = realloc(out->parts, (out->n_parts + pr.n_parts) * sizeof(*v));
      if (v) {
        memcpy(v + out->n_parts, pr.parts, pr.n_parts * sizeof(*v));
        out->parts = v;
        out->n_parts += pr.n_parts;
      } else {
        rc = -ENOMEM;
      }
    }
    more = pr.truncated && pr.next_marker > marker;
    marker = pr.next_marker;
    s3_parts_result_cleanup(&pr);
  }
  if (rc)
    s3_parts_result_cleanup(out);
  return rc;
}

int s3_list_multipart_uploads(struct s3_client *c, const char *bucket,
                              const char *prefix, const char *key_marker,
                              const char *upload_id_marker,
                              struct s3_uploads_result *out)
{
  struct s3_req *r = s3_req_create(c, "GET", bucket, NULL);
  int rc;

  memset(out, 0, sizeof(*out));
  if (!r)
    return -ENOMEM;
  /*
   * No encoding-type=url: Ceph RGW 16 then URL-encodes each Key but sends
   * no <EncodingType> and leaves NextKeyMarker raw, so the reply cannot be
   * decoded right. Keys come back as XML text instead.
   */
  rc = s3_req_add_query(r, "uploads", "");
  if (!rc && prefix && *prefix)
    rc = s3_req_add_query(r, "prefix", prefix);
  if (!rc && key_marker && *key_marker) {
    rc = s3_req_add_query(r, "key-marker", key_marker);
    /* S3 ignores upload-id-marker without key-marker */
    if (!rc && upload_id_marker && *upload_id_marker)
      rc = s3_req_add_query(r, "upload-id-marker", upload_id_marker);
  }
  if (!rc) {
    s3_req_set_sink_xml(r, S3_XML_LIST_UPLOADS, out);
    rc = s3_ops_run(r);
  }
  if (rc)
    s3_uploads_result_cleanup(out);
  s3_req_destroy(r);
  return rc;
}
