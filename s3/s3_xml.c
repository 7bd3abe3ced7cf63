/*
 * s3_xml: the parsers of s3_xml.h (the builders and ISO 8601 dates are in
 * s3_xml_build.c; the results' decoding and cleanup in s3_xml_result.c).
 *
 * DESIGN. One expat parser per response, created with a namespace separator
 * so that every element is matched on its local name whatever xmlns S3, RGW
 * or MinIO put on it. The parser keeps a stack of contexts (root, Contents,
 * Bucket, ...); a static table maps (parent context, local name) to either a
 * child context (a record: Contents, CommonPrefixes, Bucket, Deleted, Error,
 * Upload)
 * or a leaf field whose text is collected. Elements not in the table are
 * skipped with their whole subtree. Leaf text goes into one fixed buffer of
 * XML_TEXT_MAX bytes (character data arrives in any number of pieces) and is
 * converted when the element closes; a record is checked for its required
 * fields and appended to the result when it closes.
 *
 * Hostile input: a DOCTYPE (and so any entity declaration) aborts the parse,
 * which rules out entity expansion bombs; the body, the nesting depth, every
 * text field and every array are bounded (limits below), so memory stays
 * proportional to a legitimate page. Not thread-safe: one parser, one thread.
 *
 * Field length policy: identifying fields (Key, Prefix, ETag, UploadId, Code,
 * token, numbers, dates) longer than their limit make the document -EBADMSG;
 * descriptive ones (Message, Resource, RequestId, StorageClass) are truncated
 * at a UTF-8 character boundary.
 */
#include "s3/s3_xml.h"

#include "common/slog.h"
#include "common/strbuf.h"
#include "s3/s3_xml_i.h"

#include <errno.h>
#include <expat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Longest accepted text per field. trunc: text past the buffer is dropped
 * and the copy into the fixed-size destination cuts at a UTF-8 boundary.
 */
static const struct {
  unsigned short max;
  bool trunc;
} field_spec[F_COUNT] = {
    [F_ERR_CODE] = {63, false},   [F_ERR_MSG] = {XML_TEXT_MAX, true},
    [F_ERR_RID] = {XML_TEXT_MAX, true}, [F_ERR_RES] = {XML_TEXT_MAX, true},
    [F_TRUNC] = {5, false},       [F_NEXT] = {XML_TEXT_MAX, false},
    [F_KEYCOUNT] = {20, false},   [F_ENCTYPE] = {16, false},
    [F_OBJ_KEY] = {XML_TEXT_MAX, false}, [F_OBJ_SIZE] = {20, false},
    [F_OBJ_ETAG] = {81, false},   [F_OBJ_MTIME] = {64, false},
    [F_OBJ_CLASS] = {XML_TEXT_MAX, true},   [F_PREFIX] = {XML_TEXT_MAX, false},
    [F_BKT_NAME] = {255, false},  [F_BKT_DATE] = {64, false},
    [F_UPLOAD_ID] = {XML_TEXT_MAX, false},
    [F_ETAG] = {81, false},       [F_MTIME] = {64, false},
    [F_DEL_KEY] = {XML_TEXT_MAX, false},
    [F_DERR_KEY] = {XML_TEXT_MAX, false}, [F_DERR_CODE] = {63, false},
    [F_DERR_MSG] = {XML_TEXT_MAX, true},
    [F_UP_KEY] = {XML_TEXT_MAX, false}, [F_UP_ID] = {XML_TEXT_MAX, false},
    [F_UP_INIT] = {64, false},    [F_NEXT_KEY] = {XML_TEXT_MAX, false},
    [F_NEXT_UPID] = {XML_TEXT_MAX, false},
    [F_PT_NUM] = {5, false},      [F_NEXT_PTM] = {5, false},
};

/* (parent, local name) -> child context and, for X_LEAF, the field. */
static const struct {
  enum ctx parent;
  const char *name;
  enum ctx child;
  enum field field;
} elems[] = {
    {X_ERROR, "Code", X_LEAF, F_ERR_CODE},
    {X_ERROR, "Message", X_LEAF, F_ERR_MSG},
    {X_ERROR, "RequestId", X_LEAF, F_ERR_RID},
    {X_ERROR, "Resource", X_LEAF, F_ERR_RES},
    {X_LIST, "Contents", X_CONTENTS, F_NONE},
    {X_LIST, "CommonPrefixes", X_CPREFIX, F_NONE},
    {X_LIST, "IsTruncated", X_LEAF, F_TRUNC},
    {X_LIST, "NextContinuationToken", X_LEAF, F_NEXT},
    {X_LIST, "KeyCount", X_LEAF, F_KEYCOUNT},
    {X_LIST, "EncodingType", X_LEAF, F_ENCTYPE},
    {X_CONTENTS, "Key", X_LEAF, F_OBJ_KEY},
    {X_CONTENTS, "Size", X_LEAF, F_OBJ_SIZE},
    {X_CONTENTS, "ETag", X_LEAF, F_OBJ_ETAG},
    {X_CONTENTS, "LastModified", X_LEAF, F_OBJ_MTIME},
    {X_CONTENTS, "StorageClass", X_LEAF, F_OBJ_CLASS},
    {X_CPREFIX, "Prefix", X_LEAF, F_PREFIX},
    {X_ALLBUCKETS, "Buckets", X_BUCKETS, F_NONE},
    {X_BUCKETS, "Bucket", X_BUCKET, F_NONE},
    {X_BUCKET, "Name", X_LEAF, F_BKT_NAME},
    {X_BUCKET, "CreationDate", X_LEAF, F_BKT_DATE},
    {X_MPU, "UploadId", X_LEAF, F_UPLOAD_ID},
    {X_ETAGRES, "ETag", X_LEAF, F_ETAG},
    {X_ETAGRES, "LastModified", X_LEAF, F_MTIME},
    {X_DELETE, "Deleted", X_DELETED, F_NONE},
    {X_DELETE, "Error", X_DELERR, F_NONE},
    {X_DELETED, "Key", X_LEAF, F_DEL_KEY},
    {X_DELERR, "Key", X_LEAF, F_DERR_KEY},
    {X_DELERR, "Code", X_LEAF, F_DERR_CODE},
    {X_DELERR, "Message", X_LEAF, F_DERR_MSG},
    {X_UPLOADS, "Upload", X_UPLOAD, F_NONE},
    {X_UPLOADS, "IsTruncated", X_LEAF, F_TRUNC},
    {X_UPLOADS, "NextKeyMarker", X_LEAF, F_NEXT_KEY},
    {X_UPLOADS, "NextUploadIdMarker", X_LEAF, F_NEXT_UPID},
    {X_UPLOADS, "EncodingType", X_LEAF, F_ENCTYPE},
    {X_UPLOAD, "Key", X_LEAF, F_UP_KEY},
    {X_UPLOAD, "UploadId", X_LEAF, F_UP_ID},
    {X_UPLOAD, "Initiated", X_LEAF, F_UP_INIT},
    {X_PARTS, "Part", X_PART, F_NONE},
    {X_PARTS, "IsTruncated", X_LEAF, F_TRUNC},
    {X_PARTS, "NextPartNumberMarker", X_LEAF, F_NEXT_PTM},
    {X_PART, "PartNumber", X_LEAF, F_PT_NUM},
    {X_PART, "ETag", X_LEAF, F_OBJ_ETAG},
    {X_PART, "Size", X_LEAF, F_OBJ_SIZE},
};

/* Accepted root per kind; <Error> is accepted for every kind. */
static const struct {
  enum s3_xml_kind kind;
  const char *name;
  enum ctx ctx;
} roots[] = {
    {S3_XML_LIST_OBJECTS, "ListBucketResult", X_LIST},
    {S3_XML_LIST_BUCKETS, "ListAllMyBucketsResult", X_ALLBUCKETS},
    {S3_XML_INITIATE_MPU, "InitiateMultipartUploadResult", X_MPU},
    {S3_XML_COMPLETE_MPU, "CompleteMultipartUploadResult", X_ETAGRES},
    {S3_XML_COPY_RESULT, "CopyObjectResult", X_ETAGRES},
    {S3_XML_COPY_RESULT, "CopyPartResult", X_ETAGRES},
    {S3_XML_DELETE_RESULT, "DeleteResult", X_DELETE},
    {S3_XML_LIST_UPLOADS, "ListMultipartUploadsResult", X_UPLOADS},
    {S3_XML_LIST_PARTS, "ListPartsResult", X_PARTS},
};

static void fail(struct s3_xml *x, int rc)
{
  if (!x->rc)
    x->rc = rc;
  XML_StopParser(x->p, XML_FALSE);
}

static const char *local_name(const char *name)
{
  const char *s = strrchr(name, XML_NS_SEP);

  return s ? s + 1 : name;
}

/* Copy at most size-1 bytes, not cutting a UTF-8 sequence in two. */
static void copy_trunc(char *dst, size_t size, const char *src, size_t len)
{
  if (len >= size) {
    len = size - 1;
    while (len > 0 && ((unsigned char)src[len] & 0xC0) == 0x80)
      len--;
  }
  memcpy(dst, src, len);
  dst[len] = '\0';
}

static int copy_exact(char *dst, size_t size, const char *src, size_t len)
{
  if (len >= size)
    return -EBADMSG;
  memcpy(dst, src, len);
  dst[len] = '\0';
  return 0;
}

/* Strict unsigned decimal: digits only, no sign or space, <= max. */
static int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
  uint64_t v = 0;

  if (len == 0)
    return -EBADMSG;
  for (size_t i = 0; i < len; i++) {
    unsigned d = (unsigned char)s[i] - '0';

    if (d > 9 || v > (max - d) / 10)
      return -EBADMSG;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

/* ETag without its surrounding quotes, into a char[80]. */
static int copy_etag(char *dst, size_t size, const char *s, size_t len)
{
  if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
    s++;
    len -= 2;
  }
  if (len == 0)
    return -EBADMSG;
  return copy_exact(dst, size, s, len);
}

static int parse_date(const char *s, time_t *out)
{
  return s3_parse_iso8601(s, out) ? -EBADMSG : 0;
}

static int dup_nonempty(const char *s, size_t len, char **out)
{
  if (len == 0)
    return -EBADMSG;
  *out = strndup(s, len);
  return *out ? 0 : -ENOMEM;
}

/* The leaf element `f` closed: convert x->text into its destination. */
static int commit_field(struct s3_xml *x, enum field f)
{
  const char *t = x->text;
  size_t n = x->text_len;
  struct s3_list_result *lr = x->result;
  struct s3_etag_result *er = x->result;
  struct s3_uploads_result *ur = x->result;
  struct s3_parts_result *pr = x->result;
  uint64_t v = 0;
  int rc = 0;

  x->text[n] = '\0';
  switch (f) {
  case F_ERR_CODE:
    rc = copy_exact(x->err->code, sizeof(x->err->code), t, n);
    break;
  case F_ERR_MSG:
    copy_trunc(x->err->message, sizeof(x->err->message), t, n);
    break;
  case F_ERR_RID:
    copy_trunc(x->err->request_id, sizeof(x->err->request_id), t, n);
    break;
  case F_ERR_RES:
    copy_trunc(x->err->resource, sizeof(x->err->resource), t, n);
    break;
  case F_TRUNC:
    if (strcmp(t, "true") && strcmp(t, "false"))
      rc = -EBADMSG;
    else if (x->kind == S3_XML_LIST_UPLOADS)
      ur->truncated = t[0] == 't';
    else if (x->kind == S3_XML_LIST_PARTS)
      pr->truncated = t[0] == 't';
    else
      lr->truncated = t[0] == 't';
    break;
  case F_NEXT:
    if (n)
      rc = dup_nonempty(t, n, &lr->next_token);
    break;
  case F_KEYCOUNT:
    rc = parse_u64(t, n, UINT_MAX, &v);
    lr->key_count = (unsigned)v;
    break;
  case F_ENCTYPE:
    if (strcasecmp(t, "url"))
      rc = -EBADMSG;    /* an encoding we cannot undo */
    x->url_encoded = true;
    break;
  case F_OBJ_KEY:
    rc = dup_nonempty(t, n, &x->obj.key);
    break;
  case F_OBJ_SIZE:
    rc = parse_u64(t, n, INT64_MAX, &v);
    x->obj.size = (int64_t)v;
    break;
  case F_OBJ_ETAG:
    rc = copy_etag(x->obj.etag, sizeof(x->obj.etag), t, n);
    break;
  case F_OBJ_MTIME:
    rc = parse_date(t, &x->obj.mtime);
    break;
  case F_OBJ_CLASS:
    copy_trunc(x->obj.storage_class, sizeof(x->obj.storage_class), t, n);
    break;
  case F_PREFIX:
  case F_DEL_KEY:
    rc = dup_nonempty(t, n, &x->str);
    break;
  case F_BKT_NAME:
    rc = dup_nonempty(t, n, &x->bkt.name);
    break;
  case F_BKT_DATE:
    rc = parse_date(t, &x->bkt.created);
    break;
  case F_UPLOAD_ID:
    rc = dup_nonempty(t, n, &((struct s3_mpu_result *)x->result)->upload_id);
    break;
  case F_ETAG:
    /* Ceph RGW 16 answers Complete with an empty <ETag></ETag>: accept
       that there (the object's ETag is then known from a HEAD) */
    if (x->kind == S3_XML_COMPLETE_MPU && (n == 0 || (n == 2 && t[0] == '"' &&
                                                      t[1] == '"')))
      rc = 0;
    else
      rc = copy_etag(er->etag, sizeof(er->etag), t, n);
    break;
  case F_MTIME:
    rc = parse_date(t, &er->mtime);
    break;
  case F_DERR_KEY:
    rc = dup_nonempty(t, n, &x->derr.key);
    break;
  case F_DERR_CODE:
    rc = copy_exact(x->derr.code, sizeof(x->derr.code), t, n);
    break;
  case F_DERR_MSG:
    copy_trunc(x->derr.message, sizeof(x->derr.message), t, n);
    break;
  case F_UP_KEY:
    rc = dup_nonempty(t, n, &x->up.key);
    break;
  case F_UP_ID:
    rc = dup_nonempty(t, n, &x->up.upload_id);
    break;
  case F_UP_INIT:
    rc = parse_date(t, &x->up.initiated);
    break;
  case F_NEXT_KEY:      /* RGW sends them empty on the last page */
    if (n)
      rc = dup_nonempty(t, n, &ur->next_key_marker);
    break;
  case F_NEXT_UPID:
    if (n)
      rc = dup_nonempty(t, n, &ur->next_upload_id_marker);
    break;
  case F_PT_NUM:
    rc = parse_u64(t, n, 10000, &v);
    x->part_number = (int)v;
    if (!rc && !v)
      rc = -EBADMSG;
    break;
  case F_NEXT_PTM:
    rc = parse_u64(t, n, 10000, &v);
    pr->next_marker = (int)v;
    break;
  case F_NONE:
  case F_COUNT:
    break;
  }
  return rc;
}

static void open_record(struct s3_xml *x)
{
  x->seen &= ~REC_FIELDS;
  memset(&x->obj, 0, sizeof(x->obj));
  memset(&x->bkt, 0, sizeof(x->bkt));
  memset(&x->derr, 0, sizeof(x->derr));
  memset(&x->up, 0, sizeof(x->up));
  x->part_number = 0;
  x->str = NULL;
}

static bool is_record(enum ctx c)
{
  return c == X_CONTENTS || c == X_CPREFIX || c == X_BUCKET ||
         c == X_DELETED || c == X_DELERR || c == X_UPLOAD || c == X_PART;
}

static enum ctx root_ctx(struct s3_xml *x, const char *local)
{
  if (!strcmp(local, "Error")) {
    x->is_error = true;
    return X_ERROR;
  }
  for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
    if (roots[i].kind == x->kind && !strcmp(roots[i].name, local))
      return roots[i].ctx;
  return X_NONE;
}

static void XMLCALL on_start(void *ud, const XML_Char *name,
                             const XML_Char **atts)
{
  struct s3_xml *x = ud;
  const char *local = local_name(name);
  enum ctx parent, child = X_IGNORE;
  enum field f = F_NONE;

  (void)atts;
  if (x->rc)
    return;
  if (x->depth >= XML_DEPTH_MAX) {
    fail(x, -EBADMSG);
    return;
  }
  parent = x->depth ? x->stack[x->depth - 1] : X_NONE;
  if (x->depth == 0) {
    child = root_ctx(x, local);
    x->root_seen = true;
  } else if (parent == X_LEAF) {
    child = X_NONE;       /* markup inside a text field */
  } else if (parent != X_IGNORE) {
    for (size_t i = 0; i < sizeof(elems) / sizeof(elems[0]); i++) {
      if (elems[i].parent == parent && !strcmp(elems[i].name, local)) {
        child = elems[i].child;
        f = elems[i].field;
        break;
      }
    }
  }
  if (child == X_NONE) {
    fail(x, -EBADMSG);
    return;
  }
  if (child == X_LEAF) {
    if (x->seen & BIT(f)) {
      fail(x, -EBADMSG);  /* a field given twice */
      return;
    }
    x->seen |= BIT(f);
    x->leaf = f;
    x->text_len = 0;
  } else if (is_record(child)) {
    open_record(x);
  }
  x->stack[x->depth++] = child;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
  struct s3_xml *x = ud;
  enum ctx c;
  int rc = 0;

  (void)name;
  if (x->rc || x->depth == 0)
    return;
  c = x->stack[--x->depth];
  if (c == X_LEAF) {
    rc = commit_field(x, x->leaf);
    x->leaf = F_NONE;
  } else if (is_record(c)) {
    rc = s3_xml_close_record(x, c);
  }
  if (rc)
    fail(x, rc);
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
  struct s3_xml *x = ud;
  size_t max, n = (size_t)len;

  if (x->rc || x->depth == 0 || x->stack[x->depth - 1] != X_LEAF)
    return;             /* whitespace between elements, or skipped text */
  max = field_spec[x->leaf].max;
  if (x->text_len + n > max) {
    if (!field_spec[x->leaf].trunc) {
      fail(x, -EBADMSG);
      return;
    }
    n = max - x->text_len;
  }
  memcpy(x->text + x->text_len, s, n);
  x->text_len += n;
}

/* Any DOCTYPE: no entity declarations, no external subset, no bombs. */
static void XMLCALL on_doctype(void *ud, const XML_Char *name,
                               const XML_Char *sysid, const XML_Char *pubid,
                               int has_internal_subset)
{
  (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
  fail(ud, -EBADMSG);
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param,
                              const XML_Char *value, int value_len,
                              const XML_Char *base, const XML_Char *sysid,
                              const XML_Char *pubid, const XML_Char *notation)
{
  (void)name, (void)is_param, (void)value, (void)value_len, (void)base;
  (void)sysid, (void)pubid, (void)notation;
  fail(ud, -EBADMSG);
}

struct s3_xml *s3_xml_create(enum s3_xml_kind kind, void *result,
                             struct s3_error_info *err)
{
  struct s3_xml *x;

  if (!result && kind != S3_XML_ERROR)
    return NULL;
  x = calloc(1, sizeof(*x));
  if (!x)
    return NULL;
  x->p = XML_ParserCreateNS(NULL, XML_NS_SEP);
  if (!x->p) {
    free(x);
    return NULL;
  }
  x->kind = kind;
  x->result = result;
  x->err = err ? err : &x->err_local;
  XML_SetUserData(x->p, x);
  XML_SetElementHandler(x->p, on_start, on_end);
  XML_SetCharacterDataHandler(x->p, on_text);
  XML_SetStartDoctypeDeclHandler(x->p, on_doctype);
  XML_SetEntityDeclHandler(x->p, on_entity);
  XML_SetParamEntityParsing(x->p, XML_PARAM_ENTITY_PARSING_NEVER);
  return x;
}

/* expat refused the document: only its running out of memory is not ours. */
static int parse_error(struct s3_xml *x)
{
  x->xerr = XML_GetErrorCode(x->p);
  return x->xerr == XML_ERROR_NO_MEMORY ? -ENOMEM : -EBADMSG;
}

int s3_xml_feed(struct s3_xml *x, const char *buf, size_t len)
{
  if (x->rc || x->finished)
    return x->rc ? x->rc : -EBADMSG;
  if (len > XML_BODY_MAX - x->fed) {
    x->rc = -EBADMSG;
    return x->rc;
  }
  x->fed += len;
  /*
   * S3 and MinIO may send whitespace ahead of a slow CompleteMultipartUpload
   * or CopyObject reply to keep the connection alive, before the XML
   * declaration, which expat would reject: drop it.
   */
  while (!x->started && len &&
         (*buf == ' ' || *buf == '\t' || *buf == '\r' || *buf == '\n')) {
    buf++;
    len--;
  }
  if (len)
    x->started = true;
  while (len) {
    int n = len > XML_CHUNK_MAX ? XML_CHUNK_MAX : (int)len;

    if (XML_Parse(x->p, buf, n, XML_FALSE) != XML_STATUS_OK) {
      if (!x->rc)
        x->rc = parse_error(x);
      return x->rc;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

int s3_xml_finish(struct s3_xml *x)
{
  if (x->finished)
    return x->rc ? x->rc : x->is_error;
  x->finished = true;
  if (!x->rc && XML_Parse(x->p, "", 0, XML_TRUE) != XML_STATUS_OK)
    x->rc = parse_error(x);
  if (!x->rc && !x->root_seen)
    x->rc = -EBADMSG;
  if (!x->rc && !x->is_error)
    x->rc = s3_xml_check_result(x);
  if (x->rc) {
    log_debug("s3_xml: reply body (kind %d) rejected near line %lu column "
              "%lu: %s",
              (int)x->kind, (unsigned long)XML_GetCurrentLineNumber(x->p),
              (unsigned long)XML_GetCurrentColumnNumber(x->p),
              x->xerr && x->xerr != XML_ERROR_ABORTED
                  ? XML_ErrorString(x->xerr)
                  : "content not as S3 documents it (or over a limit)");
    if (x->result)
      s3_xml_result_reset(x->kind, x->result);
    return x->rc;
  }
  return x->is_error ? 1 : 0;
}

void s3_xml_destroy(struct s3_xml *x)
{
  if (!x)
    return;
  free(x->obj.key);
  free(x->bkt.name);
  free(x->derr.key);
  free(x->up.key);
  free(x->up.upload_id);
  free(x->str);
  XML_ParserFree(x->p);
  free(x);
}

int s3_xml_parse(enum s3_xml_kind kind, const char *buf, size_t len,
                 void *result, struct s3_error_info *err)
{
  struct s3_xml *x = s3_xml_create(kind, result, err);
  int rc;

  if (!x)
    return result || kind == S3_XML_ERROR ? -ENOMEM : -EINVAL;
  (void)s3_xml_feed(x, buf, len); /* a failure sticks: finish returns it */
  rc = s3_xml_finish(x);
  s3_xml_destroy(x);
  return rc;
}
