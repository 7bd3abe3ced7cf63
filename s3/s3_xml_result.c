/*
 * s3_xml_result: what the parser (s3_xml.c) puts in a result: each record
 * checked and appended as it closes, the whole checked once the document
 * is complete (keys listed with encoding-type=url decoded then), and each
 * result's reset and cleanup.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "s3/s3_xml.h"
#include "s3/s3_xml_i.h"

/* Undo encoding-type=url in place: %XX, and '+' for space (see below). */
static int url_decode(char *s)
{
  char *w = s;

  for (const char *r = s; *r; r++) {
    if (*r == '%') {
      int hi = hex_digit(r[1]), lo = hi < 0 ? -1 : hex_digit(r[2]);

      if (lo < 0)
        return -EBADMSG;
      if (hi == 0 && lo == 0)
        return -EBADMSG;     /* a NUL cannot live in a C string key */
      *w++ = (char)(hi << 4 | lo);
      r += 2;
    } else if (*r == '+') {
      *w++ = ' ';
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
  return 0;
}

/*
 * encoding-type=url: AWS S3 and MinIO encode like a query string (space as
 * '+', a literal '+' as %2B; the AWS SDKs decode with unquote_plus /
 * URLDecoder), RGW encodes space as %20. Decoding '+' as a space is right for
 * all of them because none leaves a literal '+' in an encoded key.
 */
static int list_decode(struct s3_list_result *lr)
{
  int rc;

  for (size_t i = 0; i < lr->n_objects; i++) {
    rc = url_decode(lr->objects[i].key);
    if (rc)
      return rc;
  }
  for (size_t i = 0; i < lr->n_prefixes; i++) {
    rc = url_decode(lr->prefixes[i]);
    if (rc)
      return rc;
  }
  return 0;
}

/* The same for a ListMultipartUploads page (AWS encodes NextKeyMarker too). */
static int uploads_decode(struct s3_uploads_result *ur)
{
  int rc = 0;

  for (size_t i = 0; !rc && i < ur->n_uploads; i++)
    rc = url_decode(ur->uploads[i].key);
  if (!rc && ur->next_key_marker)
    rc = url_decode(ur->next_key_marker);
  return rc;
}

/* Required top-level elements, once the document is complete. */
int s3_xml_check_result(struct s3_xml *x)
{
  struct s3_list_result *lr = x->result;
  struct s3_uploads_result *ur = x->result;
  struct s3_parts_result *pr = x->result;

  switch (x->kind) {
  case S3_XML_ERROR:
    return -EBADMSG;            /* only <Error> was acceptable */
  case S3_XML_LIST_OBJECTS:
    if (lr->truncated && !lr->next_token)
      return -EBADMSG;          /* we could never get the next page */
    return x->url_encoded ? list_decode(lr) : 0;
  case S3_XML_INITIATE_MPU:
    return x->seen & BIT(F_UPLOAD_ID) ? 0 : -EBADMSG;
  case S3_XML_COMPLETE_MPU:
  case S3_XML_COPY_RESULT:
    return x->seen & BIT(F_ETAG) ? 0 : -EBADMSG;
  case S3_XML_LIST_UPLOADS:
    /* both markers are needed to ask for the next page */
    if (ur->truncated &&
        (!ur->next_key_marker || !ur->next_upload_id_marker))
      return -EBADMSG;
    return x->url_encoded ? uploads_decode(ur) : 0;
  case S3_XML_LIST_PARTS: /* the marker is needed for the next page */
    return pr->truncated && !pr->next_marker ? -EBADMSG : 0;
  case S3_XML_LIST_BUCKETS:
  case S3_XML_DELETE_RESULT:
    return 0;
  }
  return -EBADMSG;
}

/*
 * Make room for index n in arr (*cap items of elem bytes). Returns the array
 * (maybe moved) or NULL with *rc set; arr is left alone on failure.
 */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem, int *rc)
{
  size_t ncap;
  void *p;

  if (n >= XML_ENTRIES_MAX) {
    *rc = -EBADMSG;
    return NULL;
  }
  if (n < *cap)
    return arr;
  ncap = *cap ? *cap * 2 : 16;
  if (ncap > XML_ENTRIES_MAX)
    ncap = XML_ENTRIES_MAX;
  p = realloc(arr, ncap * elem);
  if (!p) {
    *rc = -ENOMEM;
    return NULL;
  }
  *cap = ncap;
  return p;
}

/* A record closed: check its required fields and append it. */
int s3_xml_close_record(struct s3_xml *x, enum ctx c)
{
  struct s3_list_result *lr = x->result;
  struct s3_buckets_result *br = x->result;
  struct s3_delete_result *dr = x->result;
  struct s3_uploads_result *ur = x->result;
  struct s3_parts_result *pr = x->result;
  void *p = NULL;
  int rc = -EBADMSG;

  switch (c) {
  case X_CONTENTS:
    if (!x->obj.key || !(x->seen & BIT(F_OBJ_SIZE)))
      return -EBADMSG;
    p = grow(lr->objects, &x->cap, lr->n_objects, sizeof(x->obj), &rc);
    if (!p)
      return rc;
    lr->objects = p;
    lr->objects[lr->n_objects++] = x->obj;
    x->obj.key = NULL;
    return 0;
  case X_CPREFIX:
    if (!x->str)
      return -EBADMSG;
    p = grow(lr->prefixes, &x->cap2, lr->n_prefixes, sizeof(char *), &rc);
    if (!p)
      return rc;
    lr->prefixes = p;
    lr->prefixes[lr->n_prefixes++] = x->str;
    x->str = NULL;
    return 0;
  case X_BUCKET:
    if (!x->bkt.name)
      return -EBADMSG;
    p = grow(br->buckets, &x->cap, br->n_buckets, sizeof(x->bkt), &rc);
    if (!p)
      return rc;
    br->buckets = p;
    br->buckets[br->n_buckets++] = x->bkt;
    x->bkt.name = NULL;
    return 0;
  case X_DELETED:
    if (!x->str)
      return -EBADMSG;
    p = grow(dr->deleted, &x->cap, dr->n_deleted, sizeof(char *), &rc);
    if (!p)
      return rc;
    dr->deleted = p;
    dr->deleted[dr->n_deleted++] = x->str;
    x->str = NULL;
    return 0;
  case X_DELERR:
    if (!x->derr.key)
      return -EBADMSG;
    p = grow(dr->errors, &x->cap2, dr->n_errors, sizeof(x->derr), &rc);
    if (!p)
      return rc;
    dr->errors = p;
    dr->errors[dr->n_errors++] = x->derr;
    x->derr.key = NULL;
    return 0;
  case X_UPLOAD:
    if (!x->up.key || !x->up.upload_id)
      return -EBADMSG;
    p = grow(ur->uploads, &x->cap, ur->n_uploads, sizeof(x->up), &rc);
    if (!p)
      return rc;
    ur->uploads = p;
    ur->uploads[ur->n_uploads++] = x->up;
    x->up.key = NULL;
    x->up.upload_id = NULL;
    return 0;
  case X_PART:
    if (!x->part_number || !(x->seen & BIT(F_OBJ_SIZE)) || !x->obj.etag[0])
      return -EBADMSG;
    p = grow(pr->parts, &x->cap, pr->n_parts, sizeof(*pr->parts), &rc);
    if (!p)
      return rc;
    pr->parts = p;
    pr->parts[pr->n_parts].part_number = x->part_number;
    pr->parts[pr->n_parts].size = x->obj.size;
    memcpy(pr->parts[pr->n_parts].etag, x->obj.etag, sizeof(x->obj.etag));
    pr->n_parts++;
    return 0;
  default:
    return 0;
  }
}

void s3_xml_result_reset(enum s3_xml_kind kind, void *result)
{
  if (!result)
    return;
  switch (kind) {
  case S3_XML_LIST_OBJECTS:
    s3_list_result_cleanup(result);
    memset(result, 0, sizeof(struct s3_list_result));
    break;
  case S3_XML_LIST_BUCKETS:
    s3_buckets_result_cleanup(result);
    memset(result, 0, sizeof(struct s3_buckets_result));
    break;
  case S3_XML_INITIATE_MPU:
    s3_mpu_result_cleanup(result);
    break;
  case S3_XML_COMPLETE_MPU:
  case S3_XML_COPY_RESULT:
    memset(result, 0, sizeof(struct s3_etag_result));
    break;
  case S3_XML_DELETE_RESULT:
    s3_delete_result_cleanup(result);
    memset(result, 0, sizeof(struct s3_delete_result));
    break;
  case S3_XML_LIST_UPLOADS:
    s3_uploads_result_cleanup(result);
    memset(result, 0, sizeof(struct s3_uploads_result));
    break;
  case S3_XML_LIST_PARTS:
    s3_parts_result_cleanup(result);
    memset(result, 0, sizeof(struct s3_parts_result));
    break;
  case S3_XML_ERROR:
    break;
  }
}

void s3_list_result_cleanup(struct s3_list_result *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < r->n_objects; i++)
    free(r->objects[i].key);
  free(r->objects);
  for (size_t i = 0; i < r->n_prefixes; i++)
    free(r->prefixes[i]);
  free(r->prefixes);
  free(r->next_token);
  r->objects = NULL;
  r->prefixes = NULL;
  r->next_token = NULL;
  r->n_objects = r->n_prefixes = 0;
}

void s3_buckets_result_cleanup(struct s3_buckets_result *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < r->n_buckets; i++)
    free(r->buckets[i].name);
  free(r->buckets);
  r->buckets = NULL;
  r->n_buckets = 0;
}

void s3_mpu_result_cleanup(struct s3_mpu_result *r)
{
  if (!r)
    return;
  free(r->upload_id);
  r->upload_id = NULL;
}

void s3_delete_result_cleanup(struct s3_delete_result *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < r->n_deleted; i++)
    free(r->deleted[i]);
  free(r->deleted);
  for (size_t i = 0; i < r->n_errors; i++)
    free(r->errors[i].key);
  free(r->errors);
  r->deleted = NULL;
  r->errors = NULL;
  r->n_deleted = r->n_errors = 0;
}

void s3_uploads_result_cleanup(struct s3_uploads_result *r)
{
  if (!r)
    return;
  for (size_t i = 0; i < r->n_uploads; i++) {
    free(r->uploads[i].key);
    free(r->uploads[i].upload_id);
  }
  free(r->uploads);
  free(r->next_key_marker);
  free(r->next_upload_id_marker);
  r->uploads = NULL;
  r->next_key_marker = NULL;
  r->next_upload_id_marker = NULL;
  r->n_uploads = 0;
}

void s3_parts_result_cleanup(struct s3_parts_result *r)
{
  if (!r)
    return;
  free(r->parts);
  r->parts = NULL;
  r->n_parts = 0;
}
