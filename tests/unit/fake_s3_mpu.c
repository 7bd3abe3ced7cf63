/* fake_s3_mpu: fake_s3's multipart uploads, multi-delete and bucket calls
   (see fake_s3.h). Called with the fake's lock held. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_s3_i.h"

#define PART_MIN (5u << 20) /* S3's and RGW's smallest part but the last */


static char *xml_text(const char *root, const char *body)
{
  size_t n = strlen(body) + 128;
  char *p = malloc(n);

  snprintf(p, n, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s>%s</%s>",
           root, body, root);
  return p;
}

static void answer(struct fake_resp *r, const char *root, const char *body)
{
  r->status = 200;
  r->body = xml_text(root, body);
  r->body_len = strlen(r->body);
}

static struct fake_upload *find_upload(struct fake_s3 *f, const char *id,
                                       struct fake_upload ***link)
{
  struct fake_upload **pp;

  for (pp = &f->uploads; *pp; pp = &(*pp)->next)
    if (!strcmp((*pp)->id, id ? id : "")) {
      if (link)
        *link = pp;
      return *pp;
    }
  return NULL;
}

static void initiate(struct fake_s3 *f, const struct fake_req *q,
                     struct fake_resp *r)
{
  struct fake_upload *u = calloc(1, sizeof(*u));
  char body[512];

  snprintf(u->id, sizeof(u->id), "up%u", ++f->next_upload);
  u->bucket = strdup(q->bucket);
  u->key = strdup(q->key);
  u->meta = fake_meta_of(q);
  u->next = f->uploads;
  f->uploads = u;
  snprintf(body, sizeof(body), "<Bucket>%s</Bucket><UploadId>%s</UploadId>",
           q->bucket, u->id);
  answer(r, "InitiateMultipartUploadResult", body);
}

static struct fake_part *part_slot(struct fake_upload *u, int num)
{
  struct fake_part *p;

  for (size_t i = 0; i < u->nparts; i++)
    if (u->parts[i].num == num) {
      free(u->parts[i].data);
      return &u->parts[i];
    }
  p = realloc(u->parts, (u->nparts + 1) * sizeof(*p));
  u->parts = p;
  p = &u->parts[u->nparts++];
  memset(p, 0, sizeof(*p));
  p->num = num;
  return p;
}

static void upload_part(struct fake_s3 *f, const struct fake_req *q,
                        struct fake_resp *r, bool copy)
{
  struct fake_upload *u = find_upload(f, q->arg(q, "uploadId"), NULL);
  const char *num = q->arg(q, "partNumber");
  struct fake_part *p;
  const char *data = q->body;
  size_t len = q->body_len;
  char *hdr;

  if (!u || !num || atoi(num) < 1) {
    fake_resp_error(r, 404, "NoSuchUpload");
    return;
  }
  if (copy) {
    struct fake_obj *src =
        fake_copy_source(f, q->header(q, "x-amz-copy-source"));
    const char *im = q->header(q, "x-amz-copy-source-if-match");
    const char *range = q->header(q, "x-amz-copy-source-range");
    unsigned long long a = 0, z = 0;
    char quoted[FAKE_ETAG_MAX + 2];
    if (!src) {
      fake_resp_error(r, 404, "NoSuchKey");
      return;
    }
    snprintf(quoted, sizeof(quoted), "\"%s\"", src->etag);
    if (im && strcmp(im, quoted) && strcmp(im, src->etag)) {
      fake_resp_error(r, 412, "PreconditionFailed");
      return;
    }
    z = src->len ? src->len - 1 : 0;
    if (range && (sscanf(range, "bytes=%llu-%llu", &a, &z) != 2 ||
                  z >= src->len || a > z)) {
      fake_resp_error(r, 400, "InvalidArgument");
      return;
    }
    data = src->data + a;
    len = src->len ? (size_t)(z - a + 1) : 0;
  }
  p = part_slot(u, atoi(num));
  p->data = malloc(len ? len : 1);
  memcpy(p->data, data, len);
  p->len = len;
  fake_text_md5(data, len, p->etag);
  if (copy) {
    fake_etag_result(r, "CopyPartResult", p->etag);
    return;
  }
  r->status = 200;
  hdr = malloc(FAKE_ETAG_MAX + 16);
  r->headers_len = (size_t)sprintf(hdr, "ETag: \"%s\"\r\n", p->etag);
  r->headers = hdr;
}

/* The next "<tag>text</tag>" after *at: text into out; false: none. */
static bool next_tag(const char **at, const char *tag, char *out, size_t n)
{
  char open[64], close[64];
  const char *a, *b;

  snprintf(open, sizeof(open), "<%s>", tag);
  snprintf(close, sizeof(close), "</%s>", tag);
  if (!(a = strstr(*at, open)) || !(b = strstr(a, close)))
    return false;
  a += strlen(open);
  snprintf(out, n, "%.*s", (int)(b - a), a);
  *at = b + strlen(close);
  return true;
}

/* &amp; &lt; &gt; &quot; &apos; undone in place */
static void unescape(char *s)
{
  static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"},
                                       {"&gt;", ">"},  {"&quot;", "\""},
                                       {"&apos;", "'"}};
  char *w = s;

  while (*s) {
    size_t i;
    for (i = 0; i < 5; i++)
      if (!strncmp(s, ent[i][0], strlen(ent[i][0])))
        break;
    if (i < 5) {
      *w++ = ent[i][1][0];
      s += strlen(ent[i][0]);
    } else {
      *w++ = *s++;
    }
  }
  *w = '\0';
}

static void complete(struct fake_s3 *f, const struct fake_req *q,
                     struct fake_resp *r)
{
  struct fake_upload **link = NULL;
  struct fake_upload *u = find_upload(f, q->arg(q, "uploadId"), &link);
  struct fake_bucket *b = fake_store_bucket(f, q->bucket, false);
  char *body = strndup(q->body ? q->body : "", q->body_len);
  const char *at = body;
  char num[32], etag[FAKE_ETAG_MAX + 8], final[64];
  unsigned char *sums;
  char *data = NULL;
  size_t len = 0, n = 0;
  int want = 1;

  if (!u || !b || strcmp(u->key, q->key)) {
    free(body);
    fake_resp_error(r, 404, "NoSuchUpload");
    return;
  }
  if (u->landed[0]) { /* RGW: its lock left by the killed completion */
    free(body);
    fake_resp_error(r, 500, "InternalError");
    return;
  }
  sums = malloc(16 * 10000);
  while (next_tag(&at, "PartNumber", num, sizeof(num)) &&
         next_tag(&at, "ETag", etag, sizeof(etag))) {
    struct fake_part *p = NULL;
    unescape(etag);
    for (size_t i = 0; i < u->nparts; i++)
      if (u->parts[i].num == atoi(num))
        p = &u->parts[i];
    if (atoi(num) != want++ || !p || !strstr(etag, p->etag)) {
      free(body);
      free(data);
      free(sums);
      fake_resp_error(r, 400, p ? "InvalidPartOrder" : "InvalidPart");
      return;
    }
    data = realloc(data, len + p->len + 1);
    memcpy(data + len, p->data, p->len);
    len += p->len;
    for (int i = 0; i < 16; i++) { /* S3's: the MD5 of the parts' MD5s */
      unsigned v;
      sscanf(p->etag + 2 * i, "%2x", &v);
      sums[16 * n + (size_t)i] = (unsigned char)v;
    }
    n++;
  }
  free(body);
  /* every part but the last at least PART_MIN */
  for (int k = 1; k < want - 1; k++)
    for (size_t i = 0; i < u->nparts; i++)
      if (u->parts[i].num == k && u->parts[i].len < PART_MIN) {
        free(data);
        free(sums);
        fake_resp_error(r, 400, "EntityTooSmall");
        return;
      }
  if (n == 0) {
    free(data);
    free(sums);
    fake_resp_error(r, 400, "MalformedXML");
    return;
  }
  {
    struct fake_obj *o = fake_store_find(b, q->key);
    const char *im = q->header(q, "if-match");
    const char *inm = q->header(q, "if-none-match");
    char quoted[FAKE_ETAG_MAX + 2] = "";
    if (o)
      snprintf(quoted, sizeof(quoted), "\"%s\"", o->etag);
    if ((im && (!o || (strcmp(im, quoted) && strcmp(im, o->etag)))) ||
        (inm && o)) {
      free(data);
      free(sums);
      fake_resp_error(r, o || !im ? 412 : 404,
                      o || !im ? "PreconditionFailed" : "NoSuchKey");
      return;
    }
  }
  fake_text_md5(sums, 16 * n, final);
  free(sums);
  snprintf(final + 32, sizeof(final) - 32, "-%zu", n);
  fake_store_put(b, q->key, data, len, u->meta, final);
  free(data);
  if (f->interrupted) {
    snprintf(u->landed, sizeof(u->landed), "%s", final);
  } else {
    *link = u->next;
    fake_upload_free(u);
  }
  fake_etag_result(r, "CompleteMultipartUploadResult", final);
}

static void abort_upload(struct fake_s3 *f, const struct fake_req *q,
                         struct fake_resp *r)
{
  struct fake_upload **link = NULL;
  struct fake_upload *u = find_upload(f, q->arg(q, "uploadId"), &link);

  if (!u) {
    fake_resp_error(r, 404, "NoSuchUpload");
    return;
  }
  if (u->landed[0]) { /* RGW deletes the parts: the object's data */
    struct fake_bucket *b = fake_store_bucket(f, u->bucket, false);
    struct fake_obj *o = b ? fake_store_find(b, u->key) : NULL;
    if (o && !strcmp(o->etag, u->landed))
      fake_obj_remove(b, u->key);
  }
  *link = u->next;
  fake_upload_free(u);
  r->status = 204;
}

static void list_uploads(struct fake_s3 *f, const struct fake_req *q,
                         struct fake_resp *r)
{
  const char *prefix = q->arg(q, "prefix");
  size_t cap = 4096, len = 0;
  char *body = malloc(cap);

  body[0] = '\0';
  for (struct fake_upload *u = f->uploads; u; u = u->next) {
    if (strcmp(u->bucket, q->bucket) ||
        (prefix && strncmp(u->key, prefix, strlen(prefix))))
      continue;
    if (len + strlen(u->key) + 256 > cap)
      body = realloc(body, cap = 2 * cap + strlen(u->key) + 256);
    len += (size_t)sprintf(body + len, "<Upload><Key>%s</Key><UploadId>%s"
                                        "</UploadId><Initiated>"
                                        "2026-01-01T00:00:00.000Z</Initiated>"
                                        "</Upload>",
                           u->key, u->id);
  }
  body = realloc(body, len + 64);
  strcat(body, "<IsTruncated>false</IsTruncated>");
  answer(r, "ListMultipartUploadsResult", body);
  free(body);
}

static void list_parts(struct fake_s3 *f, const struct fake_req *q,
                       struct fake_resp *r)
{
  struct fake_upload *u = find_upload(f, q->arg(q, "uploadId"), NULL);
  char *body;
  size_t len = 0;

  if (!u) {
    fake_resp_error(r, 404, "NoSuchUpload");
    return;
  }
  body = malloc(128 * (u->nparts + 1) + 64);
  body[0] = '\0';
  for (int k = 1; k <= 10000; k++)
    for (size_t i = 0; i < u->nparts; i++)
      if (u->parts[i].num == k)
        len += (size_t)sprintf(body + len, "<Part><PartNumber>%d</PartNumber>"
                                            "<ETag>\"%s\"</ETag><Size>%zu"
                                            "</Size></Part>",
                               k, u->parts[i].etag, u->parts[i].len);
  strcat(body, "<IsTruncated>false</IsTruncated>");
  answer(r, "ListPartsResult", body);
  free(body);
}

static void delete_multi(struct fake_s3 *f, const struct fake_req *q,
                         struct fake_resp *r)
{
  struct fake_bucket *b = fake_store_bucket(f, q->bucket, false);
  char *body = strndup(q->body ? q->body : "", q->body_len), key[2048];
  const char *at = body;
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);

  out[0] = '\0';
  while (next_tag(&at, "Key", key, sizeof(key))) {
    unescape(key);
    if (b)
      fake_obj_remove(b, key);
    if (len + strlen(key) + 64 > cap)
      out = realloc(out, cap = 2 * cap + strlen(key) + 64);
    len += (size_t)sprintf(out + len, "<Deleted><Key>%s</Key></Deleted>", key);
  }
  free(body);
  answer(r, "DeleteResult", out);
  free(out);
}

static void bucket_call(struct fake_s3 *f, const struct fake_req *q,
                        struct fake_resp *r)
{
  struct fake_bucket *b = q->bucket ? fake_store_bucket(f, q->bucket, false)
                                    : NULL;

  if (!q->bucket) { /* ListBuckets */
    size_t cap = 256 + 128 * f->nbuckets, len = 0;
    char *body = malloc(cap);
    len += (size_t)sprintf(body, "<Buckets>");
    for (size_t i = 0; i < f->nbuckets; i++)
      len += (size_t)sprintf(body + len, "<Bucket><Name>%s</Name>"
                                          "<CreationDate>2026-01-01T00:00:00."
                                          "000Z</CreationDate></Bucket>",
                             f->buckets[i].name);
    strcat(body, "</Buckets>");
    answer(r, "ListAllMyBucketsResult", body);
    free(body);
    return;
  }
  if (!strcmp(q->method, "PUT")) {
    fake_store_bucket(f, q->bucket, true);
    r->status = 200;
  } else if (!b) {
    fake_resp_error(r, 404, "NoSuchBucket");
  } else if (!strcmp(q->method, "DELETE")) {
    fake_resp_error(r, 409, "BucketNotEmpty"); /* (never removed here) */
  } else {
    r->status = 200;
  }
}

void fake_mpu_serve(struct fake_s3 *f, const struct fake_req *q,
                    struct fake_resp *r, enum fake_op op)
{
  switch (op) {
  case FAKE_INITIATE:
    initiate(f, q, r);
    return;
  case FAKE_PART:
  case FAKE_PART_COPY:
    upload_part(f, q, r, op == FAKE_PART_COPY);
    return;
  case FAKE_COMPLETE:
    complete(f, q, r);
    return;
  case FAKE_ABORT:
    abort_upload(f, q, r);
    return;
  case FAKE_LIST_UPLOADS:
    list_uploads(f, q, r);
    return;
  case FAKE_LIST_PARTS:
    list_parts(f, q, r);
    return;
  case FAKE_DELETE_MULTI:
    delete_multi(f, q, r);
    return;
  case FAKE_BUCKET:
    bucket_call(f, q, r);
    return;
  default:
    fake_resp_error(r, 405, "MethodNotAllowed");
  }
}
