/*
 * fuzz_xml: the streaming S3 reply parsers of s3/s3_xml.h (every kind:
 * ListObjectsV2, ListBuckets, the multipart replies, Copy, Delete, <Error>)
 * and the error table of s3/s3_err.h that an <Error>'s Code feeds.
 *
 * Input: byte 0 picks the kind (mod 8), bytes 1-2 a split point, the rest
 * is the reply body.
 *
 * Properties (abort() on violation):
 *  - the body parsed in one piece, fed in two pieces split at the chosen
 *    point, and (up to 2 KiB) fed one byte at a time gives the same return
 *    value, and the same result (rc 0) or the same <Error> fields (rc 1):
 *    the parser is fed chunk by chunk by curl;
 *  - the return value is 0, 1, -EBADMSG or -ENOMEM, never 0 for
 *    S3_XML_ERROR; s3_xml_finish called again returns the same value;
 *  - a result honours what s3_xml.h promises: keys non-empty, a truncated
 *    page carries its continuation token or markers, an <Error>'s fields
 *    are NUL-terminated within their arrays;
 *  - s3_err_from_http maps any status and code to a positive errno.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/slog.h"
#include "s3/s3_err.h"
#include "s3/s3_xml.h"
#include "tests/fuzz/fuzz_common.h"

#define BYTEWISE_MAX 2048

union any_result {
  struct s3_list_result list;
  struct s3_buckets_result buckets;
  struct s3_mpu_result mpu;
  struct s3_etag_result etag;
  struct s3_delete_result del;
  struct s3_uploads_result uploads;
  struct s3_parts_result parts;
};

static bool same_str(const char *a, const char *b)
{
  if (!a || !b)
    return a == b;
  return strcmp(a, b) == 0;
}

static bool terminated(const char *s, size_t size)
{
  return memchr(s, '\0', size) != NULL;
}

static bool same_list(const struct s3_list_result *a,
                      const struct s3_list_result *b)
{
  if (a->n_objects != b->n_objects || a->n_prefixes != b->n_prefixes ||
      a->truncated != b->truncated || a->key_count != b->key_count ||
      !same_str(a->next_token, b->next_token))
    return false;
  for (size_t i = 0; i < a->n_objects; i++) {
    const struct s3_object_info *x = &a->objects[i], *y = &b->objects[i];
    if (!same_str(x->key, y->key) || x->size != y->size ||
        strcmp(x->etag, y->etag) || x->mtime != y->mtime ||
        strcmp(x->storage_class, y->storage_class))
      return false;
  }
  for (size_t i = 0; i < a->n_prefixes; i++)
    if (!same_str(a->prefixes[i], b->prefixes[i]))
      return false;
  return true;
}

static bool same_result(enum s3_xml_kind kind, const union any_result *a,
                        const union any_result *b)
{
  switch (kind) {
  case S3_XML_ERROR:
    return true;
  case S3_XML_LIST_OBJECTS:
    return same_list(&a->list, &b->list);
  case S3_XML_LIST_BUCKETS:
    if (a->buckets.n_buckets != b->buckets.n_buckets)
      return false;
    for (size_t i = 0; i < a->buckets.n_buckets; i++)
      if (!same_str(a->buckets.buckets[i].name, b->buckets.buckets[i].name) ||
          a->buckets.buckets[i].created != b->buckets.buckets[i].created)
        return false;
    return true;
  case S3_XML_INITIATE_MPU:
    return same_str(a->mpu.upload_id, b->mpu.upload_id);
  case S3_XML_COMPLETE_MPU:
  case S3_XML_COPY_RESULT:
    return strcmp(a->etag.etag, b->etag.etag) == 0 &&
           a->etag.mtime == b->etag.mtime;
  case S3_XML_DELETE_RESULT:
    if (a->del.n_deleted != b->del.n_deleted ||
        a->del.n_errors != b->del.n_errors)
      return false;
    for (size_t i = 0; i < a->del.n_deleted; i++)
      if (!same_str(a->del.deleted[i], b->del.deleted[i]))
        return false;
    for (size_t i = 0; i < a->del.n_errors; i++) {
      const struct s3_delete_error *x = &a->del.errors[i],
                                   *y = &b->del.errors[i];
      if (!same_str(x->key, y->key) || strcmp(x->code, y->code) ||
          strcmp(x->message, y->message))
        return false;
    }
    return true;
  case S3_XML_LIST_UPLOADS:
    if (a->uploads.n_uploads != b->uploads.n_uploads ||
        a->uploads.truncated != b->uploads.truncated ||
        !same_str(a->uploads.next_key_marker, b->uploads.next_key_marker) ||
        !same_str(a->uploads.next_upload_id_marker,
                  b->uploads.next_upload_id_marker))
      return false;
    for (size_t i = 0; i < a->uploads.n_uploads; i++) {
      const struct s3_upload_info *x = &a->uploads.uploads[i],
                                  *y = &b->uploads.uploads[i];
      if (!same_str(x->key, y->key) || !same_str(x->upload_id, y->upload_id) ||
          x->initiated != y->initiated)
        return false;
    }
    return true;
  case S3_XML_LIST_PARTS:
    if (a->parts.n_parts != b->parts.n_parts ||
        a->parts.truncated != b->parts.truncated ||
        a->parts.next_marker != b->parts.next_marker)
      return false;
    for (size_t i = 0; i < a->parts.n_parts; i++) {
      const struct s3_part_info *x = &a->parts.parts[i],
                                *y = &b->parts.parts[i];
      if (x->part_number != y->part_number || x->size != y->size ||
          strcmp(x->etag, y->etag))
        return false;
    }
    return true;
  }
  return false;
}

static bool same_error(const struct s3_error_info *a,
                       const struct s3_error_info *b)
{
  return strcmp(a->code, b->code) == 0 && strcmp(a->message, b->message) == 0 &&
         strcmp(a->request_id, b->request_id) == 0 &&
         strcmp(a->resource, b->resource) == 0;
}

/* What s3_xml.h promises about a successful result. */
static void check_result(enum s3_xml_kind kind, const union any_result *r)
{
  switch (kind) {
  case S3_XML_LIST_OBJECTS:
    FUZZ_ASSERT(!r->list.truncated || r->list.next_token,
                "truncated listing without a continuation token");
    FUZZ_ASSERT(!r->list.next_token || r->list.next_token[0],
                "empty continuation token");
    for (size_t i = 0; i < r->list.n_objects; i++) {
      FUZZ_ASSERT(r->list.objects[i].key && r->list.objects[i].key[0],
                  "object %zu without a key", i);
      FUZZ_ASSERT(r->list.objects[i].size >= 0, "negative size");
      FUZZ_ASSERT(terminated(r->list.objects[i].etag,
                             sizeof(r->list.objects[i].etag)) &&
                      terminated(r->list.objects[i].storage_class,
                                 sizeof(r->list.objects[i].storage_class)),
                  "unterminated field");
    }
    for (size_t i = 0; i < r->list.n_prefixes; i++)
      FUZZ_ASSERT(r->list.prefixes[i] && r->list.prefixes[i][0],
                  "empty prefix %zu", i);
    break;
  case S3_XML_LIST_BUCKETS:
    for (size_t i = 0; i < r->buckets.n_buckets; i++)
      FUZZ_ASSERT(r->buckets.buckets[i].name && r->buckets.buckets[i].name[0],
                  "bucket %zu without a name", i);
    break;
  case S3_XML_INITIATE_MPU:
    FUZZ_ASSERT(r->mpu.upload_id && r->mpu.upload_id[0], "no UploadId");
    break;
  case S3_XML_COMPLETE_MPU:
  case S3_XML_COPY_RESULT:
    FUZZ_ASSERT(terminated(r->etag.etag, sizeof(r->etag.etag)),
                "unterminated ETag");
    break;
  case S3_XML_DELETE_RESULT:
    for (size_t i = 0; i < r->del.n_deleted; i++)
      FUZZ_ASSERT(r->del.deleted[i] && r->del.deleted[i][0], "empty Deleted");
    for (size_t i = 0; i < r->del.n_errors; i++)
      FUZZ_ASSERT(r->del.errors[i].key && r->del.errors[i].key[0] &&
                      terminated(r->del.errors[i].code,
                                 sizeof(r->del.errors[i].code)) &&
                      terminated(r->del.errors[i].message,
                                 sizeof(r->del.errors[i].message)),
                  "bad Error record %zu", i);
    break;
  case S3_XML_LIST_UPLOADS:
    FUZZ_ASSERT(!r->uploads.truncated || (r->uploads.next_key_marker &&
                                          r->uploads.next_upload_id_marker),
                "truncated uploads page without both markers");
    for (size_t i = 0; i < r->uploads.n_uploads; i++)
      FUZZ_ASSERT(r->uploads.uploads[i].key &&
                      r->uploads.uploads[i].key[0] &&
                      r->uploads.uploads[i].upload_id &&
                      r->uploads.uploads[i].upload_id[0],
                  "upload %zu without key or id", i);
    break;
  case S3_XML_LIST_PARTS:
    FUZZ_ASSERT(!r->parts.truncated || r->parts.next_marker,
                "truncated parts page without a marker");
    for (size_t i = 0; i < r->parts.n_parts; i++)
      FUZZ_ASSERT(r->parts.parts[i].part_number >= 1 &&
                      r->parts.parts[i].part_number <= 10000 &&
                      r->parts.parts[i].size >= 0 &&
                      r->parts.parts[i].etag[0] &&
                      terminated(r->parts.parts[i].etag,
                                 sizeof(r->parts.parts[i].etag)),
                  "bad part %zu", i);
    break;
  case S3_XML_ERROR:
    break;
  }
}

static void check_error(const struct s3_error_info *e, long status)
{
  struct s3_err_map m;

  FUZZ_ASSERT(terminated(e->code, sizeof(e->code)) &&
                  terminated(e->message, sizeof(e->message)) &&
                  terminated(e->request_id, sizeof(e->request_id)) &&
                  terminated(e->resource, sizeof(e->resource)),
              "unterminated <Error> field");
  memset(&m, 0, sizeof(m));
  s3_err_from_http(status, e->code, &m);
  FUZZ_ASSERT(m.err > 0, "status %ld code '%s' maps to errno %d", status,
              e->code, m.err);
  FUZZ_ASSERT(m.cls > S3_EC_NONE && m.cls < S3_EC_COUNT, "class %d",
              (int)m.cls);
  FUZZ_ASSERT(s3_err_class_name(m.cls) != NULL, "no class name");
  (void)s3_err_hint(e->code, status);
}

/* Feed body in pieces of at most step bytes, or at split when step is 0. */
static int parse_fed(enum s3_xml_kind kind, const char *body, size_t n,
                     size_t split, size_t step, union any_result *res,
                     struct s3_error_info *err)
{
  struct s3_xml *x = s3_xml_create(kind, res, err);
  int rc, again;

  if (!x)
    return -ENOMEM;
  if (step == 0) {
    (void)s3_xml_feed(x, body, split);
    (void)s3_xml_feed(x, body + split, n - split);
  } else {
    for (size_t i = 0; i < n; i += step)
      if (s3_xml_feed(x, body + i, n - i < step ? n - i : step))
        break;
  }
  rc = s3_xml_finish(x);
  again = s3_xml_finish(x);
  FUZZ_ASSERT(rc == again, "finish returned %d, then %d", rc, again);
  s3_xml_destroy(x);
  return rc;
}

static void compare(enum s3_xml_kind kind, const char *how, int rc0,
                    const union any_result *r0,
                    const struct s3_error_info *e0, int rc1,
                    const union any_result *r1,
                    const struct s3_error_info *e1)
{
  if (FUZZ_OOM(rc0) || FUZZ_OOM(rc1))
    return;
  FUZZ_ASSERT(rc0 == rc1, "kind %d: whole body %d, %s %d", (int)kind, rc0,
              how, rc1);
  if (rc0 == 0)
    FUZZ_ASSERT(same_result(kind, r0, r1), "kind %d: result differs when %s",
                (int)kind, how);
  if (rc0 == 1)
    FUZZ_ASSERT(same_error(e0, e1), "kind %d: <Error> differs when %s",
                (int)kind, how);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  (void)argc, (void)argv;
  slog_set_level(LOG_ERR); /* the parser's rejections are debug lines */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  enum s3_xml_kind kind = (enum s3_xml_kind)(fz_u8(&f) % 9);
  uint16_t split_raw = fz_u16(&f);
  const char *body = (const char *)f.p;
  size_t n = f.n, split = n ? split_raw % (n + 1) : 0;
  long status = 300 + split_raw % 300;
  union any_result r0, r1, r2;
  struct s3_error_info e0, e1, e2;
  int rc0, rc1, rc2;

  memset(&r0, 0, sizeof(r0));
  memset(&r1, 0, sizeof(r1));
  memset(&r2, 0, sizeof(r2));
  memset(&e0, 0, sizeof(e0));
  memset(&e1, 0, sizeof(e1));
  memset(&e2, 0, sizeof(e2));

  rc0 = s3_xml_parse(kind, body, n, kind == S3_XML_ERROR ? NULL : &r0, &e0);
  FUZZ_ASSERT(rc0 == 0 || rc0 == 1 || rc0 == -EBADMSG || rc0 == -ENOMEM,
              "kind %d returned %d", (int)kind, rc0);
  FUZZ_ASSERT(!(kind == S3_XML_ERROR && rc0 == 0), "<Error> kind gave 0");
  if (rc0 == 0)
    check_result(kind, &r0);
  if (rc0 == 1)
    check_error(&e0, status);

  rc1 = parse_fed(kind, body, n, split, 0, kind == S3_XML_ERROR ? NULL : &r1,
                  &e1);
  compare(kind, "split in two", rc0, &r0, &e0, rc1, &r1, &e1);
  if (n <= BYTEWISE_MAX) {
    rc2 = parse_fed(kind, body, n, 0, 1, kind == S3_XML_ERROR ? NULL : &r2,
                    &e2);
    compare(kind, "fed byte by byte", rc0, &r0, &e0, rc2, &r2, &e2);
  }

  s3_xml_result_reset(kind, &r0);
  s3_xml_result_reset(kind, &r1);
  s3_xml_result_reset(kind, &r2);
  return 0;
}
