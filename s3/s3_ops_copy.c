/*
 * s3_ops_copy: a server-side copy of any size (s3_copy_object_any).
 *
 * Up to the threshold it is one CopyObject. Above it: HEAD the source (its
 * size must be the caller's, its ETag pins the version copied, its headers
 * are the metadata to carry in COPY mode), CreateMultipartUpload, then the
 * UploadPartCopy requests, submitted without callbacks into a window of
 * COPY_INFLIGHT and retired oldest first (the parts are all of one size, so
 * the oldest is the first due), then Complete. The first failure cancels
 * what is in flight, waits for it, and aborts the upload. Everything runs on
 * the caller's thread; the engine does the I/O.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/slog.h"
#include "s3/s3_i.h"

#define COPY_INFLIGHT 16
#define PART_MIN (5ull << 20)      /* S3's smallest part but the last */
#define PART_MAX (5ull << 30)
#define PARTS_MAX 10000ull
#define OBJECT_MAX (5ull << 40)

/* What CopyObject's COPY directive carries besides x-amz-meta-*. */
static const char *const carried[] = {
    "content-type",     "cache-control",    "content-disposition",
    "content-encoding", "content-language", "expires",
};

/* Part size and count for size bytes; part_size grows past 10000 parts. */
static int plan_parts(uint64_t size, uint64_t *part_size, uint64_t *nparts)
{
  uint64_t ps = *part_size;

  if (ps < PART_MIN || ps > PART_MAX)
    return -EINVAL;
  if (size > OBJECT_MAX)
    return -EFBIG;
  if ((size + ps - 1) / ps > PARTS_MAX) {
    ps = (size + PARTS_MAX - 1) / PARTS_MAX;
    ps = (ps + (1u << 20) - 1) & ~((uint64_t)(1u << 20) - 1);
  }
  *part_size = ps;
  *nparts = (size + ps - 1) / ps;
  return 0;
}

/*
 * The source's metadata headers, as put options borrowing the strings of
 * the HEAD request (which must outlive them). kv has S3_MAX_RESP_HEADERS
 * rows.
 */
static void carry_headers(const struct s3_req *head, struct s3_kv *kv,
                          struct s3_put_opts *o)
{
  const char *name, *val;
  size_t n = 0;

  memset(o, 0, sizeof(*o));
  for (size_t i = 0; s3_req_header_at(head, i, &name, &val); i++) {
    bool carry = strncasecmp(name, "x-amz-meta-", 11) == 0;

    for (size_t j = 0; !carry && j < sizeof(carried) / sizeof(carried[0]); j++)
      carry = strcasecmp(name, carried[j]) == 0;
    if (carry && n < S3_MAX_RESP_HEADERS)
      kv[n++] = (struct s3_kv){.key = name, .val = val};
  }
  o->headers = kv;
  o->n_headers = n;
}

/* The window of UploadPartCopy requests; etags[i] is part i+1's. */
static int copy_parts(struct s3_client *c, const char *bucket,
                      const char *key, const char *upload_id,
                      const char *src_bucket, const char *src_key,
                      const char *if_match, uint64_t size, uint64_t part_size,
                      uint64_t nparts, char (*etags)[S3_ETAG_MAX])
{
  struct s3_req *win[COPY_INFLIGHT] = {NULL};
  uint64_t part_of[COPY_INFLIGHT] = {0};
  uint64_t next = 0;
  unsigned head = 0, busy = 0;
  int rc = 0;

  while (busy || (!rc && next < nparts)) {
    if (!rc && next < nparts && busy < COPY_INFLIGHT) {
      uint64_t off = next * part_size;
      uint64_t len = size - off < part_size ? size - off : part_size;
      unsigned slot = (head + busy) % COPY_INFLIGHT;
      struct s3_req *r = s3_upload_part_copy_req(
          c, bucket, key, upload_id, (int)(next + 1), src_bucket, src_key,
          off, len, if_match);

      if (!r) {
        rc = -ENOMEM;
        continue;
      }
      s3_req_submit(r, NULL, NULL);
      win[slot] = r;
      part_of[slot] = next++;
      busy++;
      continue;
    }
    s3_req_wait(win[head]);
    if (!rc) {
      rc = s3_upload_part_copy_result(win[head], etags[part_of[head]]);
      if (rc) {
        log_info("copy %s/%s to %s/%s: part %" PRIu64 " failed: %s",
                 src_bucket, src_key, bucket, key, part_of[head] + 1,
                 strerror(-rc));
        for (unsigned i = 1; i < busy; i++)
          s3_req_cancel(win[(head + i) % COPY_INFLIGHT]);
      }
    }
    s3_req_destroy(win[head]);
    win[head] = NULL;
    head = (head + 1) % COPY_INFLIGHT;
    busy--;
  }
  return rc;
}

/* Complete with parts 1..nparts. */
static int complete(struct s3_client *c, const char *bucket, const char *key,
                    const char *upload_id, uint64_t nparts,
                    char (*etags)[S3_ETAG_MAX], char etag[S3_ETAG_MAX])
{
  struct s3_part_etag *parts = calloc(nparts, sizeof(*parts));
  int rc;

  if (!parts)
    return -ENOMEM;
  for (uint64_t i = 0; i < nparts; i++)
    parts[i] = (struct s3_part_etag){(int)(i + 1), etags[i]};
  rc = s3_complete_multipart(c, bucket, key, upload_id, parts, nparts, etag);
  free(parts);
  return rc;
}

static int copy_multipart(struct s3_client *c, const char *src_bucket,
                          const char *src_key, const char *dst_bucket,
                          const char *dst_key, bool replace_meta,
                          const struct s3_put_opts *o, uint64_t size,
                          uint64_t part_size, char etag[S3_ETAG_MAX])
{
  struct s3_kv kv[S3_MAX_RESP_HEADERS];
  struct s3_put_opts src_opts;
  struct s3_object_meta m = {0};
  char (*etags)[S3_ETAG_MAX] = NULL;
  struct s3_req *head = NULL;
  char *upload_id = NULL;
  uint64_t nparts = 0;
  int rc, arc;

  rc = plan_parts(size, &part_size, &nparts);
  if (rc)
    return rc;
  head = s3_req_create(c, "HEAD", src_bucket, src_key);
  if (!head)
    return -ENOMEM;
  s3_ops_run(head);
  rc = s3_head_object_result(head, &m);
  if (rc)
    goto out;
  if (m.size != size) {
    log_info("copy %s/%s: the source is %" PRIu64 " bytes, not %" PRIu64,
             src_bucket, src_key, m.size, size);
    rc = -ESTALE;
    goto out;
  }
  if (!replace_meta) {
    carry_headers(head, kv, &src_opts);
    o = &src_opts;
  }
  etags = calloc(nparts, sizeof(*etags));
  if (!etags) {
    rc = -ENOMEM;
    goto out;
  }
  rc = s3_create_multipart(c, dst_bucket, dst_key, o, &upload_id, NULL);
  if (rc)
    goto out;
  rc = copy_parts(c, dst_bucket, dst_key, upload_id, src_bucket, src_key,
                  m.etag[0] ? m.etag : NULL, size, part_size, nparts, etags);
  if (!rc)
    rc = complete(c, dst_bucket, dst_key, upload_id, nparts, etags, etag);
  if (rc) {
    arc = s3_abort_multipart(c, dst_bucket, dst_key, upload_id);
    if (arc && arc != -ENOENT)
      log_warn("copy to %s/%s: aborting upload %s failed (%s); it is left "
               "for a lifecycle rule or 's3rdma-cli abort'",
               dst_bucket, dst_key, upload_id, strerror(-arc));
  }

out:
  free(upload_id);
  free(etags);
  s3_object_meta_cleanup(&m);
  s3_req_destroy(head);
  return rc;
}

int s3_copy_object_any(struct s3_client *c, const char *src_bucket,
                       const char *src_key, const char *dst_bucket,
                       const char *dst_key, bool replace_meta,
                       const struct s3_put_opts *o, uint64_t size,
                       uint64_t multipart_threshold, uint64_t part_size,
                       char etag[S3_ETAG_MAX])
{
  if (size <= multipart_threshold)
    return s3_copy_object(c, src_bucket, src_key, dst_bucket, dst_key,
                          replace_meta, o, etag);
  return copy_multipart(c, src_bucket, src_key, dst_bucket, dst_key,
                        replace_meta, o, size, part_size, etag);
}
