/* fake_s3_store: fake_s3's buckets, objects and uploads, and its answers
   (see fake_s3.h). Called with the fake's lock held. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fake_s3_i.h"

/* ---- text ---- */

struct text {
  char *p;
  size_t len, cap;
};

static void add(struct text *t, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (t->len + (size_t)n + 1 > t->cap) {
    t->cap = (t->len + (size_t)n + 1) * 2;
    t->p = realloc(t->p, t->cap);
    if (!t->p)
      abort(); /* a test's memory */
  }
  va_start(ap, fmt);
  vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

/* s escaped for XML text */
static void add_xml(struct text *t, const char *s)
{
  for (; *s; s++) {
    if (*s == '&')
      add(t, "&amp;");
    else if (*s == '<')
      add(t, "&lt;");
    else if (*s == '>')
      add(t, "&gt;");
    else
      add(t, "%c", *s);
  }
}

void fake_text_md5(const void *p, size_t n, char out[FAKE_ETAG_MAX])
{
  unsigned char md[16];
  unsigned len = 0;

  EVP_Digest(p, n, md, &len, EVP_md5(), NULL);
  for (unsigned i = 0; i < 16; i++)
    sprintf(out + 2 * i, "%02x", md[i]);
}

static void http_date(time_t t, char *out, size_t n)
{
  struct tm tm;

  gmtime_r(&t, &tm);
  strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void iso_date(time_t t, char *out, size_t n)
{
  struct tm tm;

  gmtime_r(&t, &tm);
  strftime(out, n, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
}

static void set_body(struct fake_resp *r, struct text *t)
{
  r->body = t->p;
  r->body_len = t->len;
}

void fake_resp_error(struct fake_resp *r, int status, const char *code)
{
  struct text t = {0};

  r->status = status;
  add(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
          "<Message>fake_s3</Message><RequestId>0</RequestId></Error>",
      code);
  set_body(r, &t);
}

/* ---- the store ---- */

struct fake_bucket *fake_store_bucket(struct fake_s3 *f, const char *name,
                                      bool make)
{
  struct fake_bucket *b;

  for (size_t i = 0; i < f->nbuckets; i++)
    if (!strcmp(f->buckets[i].name, name))
      return &f->buckets[i];
  if (!make)
    return NULL;
  b = realloc(f->buckets, (f->nbuckets + 1) * sizeof(*b));
  if (!b)
    return NULL;
  f->buckets = b;
  b = &f->buckets[f->nbuckets++];
  memset(b, 0, sizeof(*b));
  b->name = strdup(name);
  return b;
}

/* The index of key in b's sorted objects, or where it would go. */
static size_t find_at(const struct fake_bucket *b, const char *key, bool *hit)
{
  size_t lo = 0, hi = b->nobjs;

  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(b->objs[mid].key, key);
    if (!c) {
      *hit = true;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *hit = false;
  return lo;
}

struct fake_obj *fake_store_find(struct fake_bucket *b, const char *key)
{
  bool hit;
  size_t i = b ? find_at(b, key, &hit) : 0;

  return b && hit ? &b->objs[i] : NULL;
}

int fake_store_put(struct fake_bucket *b, const char *key, const char *data,
                   size_t len, const char *meta, const char *etag)
{
  bool hit;
  size_t i = find_at(b, key, &hit);
  struct fake_obj *o;

  if (!hit) {
    o = realloc(b->objs, (b->nobjs + 1) * sizeof(*o));
    if (!o)
      return -ENOMEM;
    b->objs = o;
    memmove(&b->objs[i + 1], &b->objs[i], (b->nobjs - i) * sizeof(*o));
    b->nobjs++;
    o = &b->objs[i];
    memset(o, 0, sizeof(*o));
    o->key = strdup(key);
  }
  o = &b->objs[i];
  free(o->data);
  free(o->meta);
  o->data = malloc(len ? len : 1);
  if (len)
    memcpy(o->data, data, len);
  o->len = len;
  o->meta = strdup(meta ? meta : "");
  if (etag)
    snprintf(o->etag, sizeof(o->etag), "%s", etag);
  else
    fake_text_md5(data, len, o->etag);
  o->mtime = time(NULL);
  return 0;
}

static void obj_free(struct fake_obj *o)
{
  free(o->key);
  free(o->data);
  free(o->meta);
}

void fake_obj_remove(struct fake_bucket *b, const char *key)
{
  bool hit;
  size_t i = find_at(b, key, &hit);

  if (!hit)
    return;
  obj_free(&b->objs[i]);
  memmove(&b->objs[i], &b->objs[i + 1], (b->nobjs - i - 1) * sizeof(*b->objs));
  b->nobjs--;
}

void fake_upload_free(struct fake_upload *u)
{
  for (size_t i = 0; i < u->nparts; i++)
    free(u->parts[i].data);
  free(u->parts);
  free(u->bucket);
  free(u->key);
  free(u->meta);
  free(u);
}

void fake_store_free(struct fake_s3 *f)
{
  for (size_t i = 0; i < f->nbuckets; i++) {
    for (size_t j = 0; j < f->buckets[i].nobjs; j++)
      obj_free(&f->buckets[i].objs[j]);
    free(f->buckets[i].objs);
    free(f->buckets[i].name);
  }
  free(f->buckets);
  while (f->uploads) {
    struct fake_upload *u = f->uploads;
    f->uploads = u->next;
    fake_upload_free(u);
  }
}

/* ---- requests ---- */

enum fake_op fake_op_of(const struct fake_req *q)
{
  const char *m = q->method;

  if (!q->bucket || !q->key) {
    if (!strcmp(m, "GET") && q->bucket && q->has_arg(q, "uploads"))
      return FAKE_LIST_UPLOADS;
    if (!strcmp(m, "GET") && q->bucket)
      return FAKE_LIST;
    if (!strcmp(m, "POST") && q->has_arg(q, "delete"))
      return FAKE_DELETE_MULTI;
    return FAKE_BUCKET;
  }
  if (!strcmp(m, "GET"))
    return q->has_arg(q, "uploadId") ? FAKE_LIST_PARTS : FAKE_GET;
  if (!strcmp(m, "HEAD"))
    return FAKE_HEAD;
  if (!strcmp(m, "PUT") && q->has_arg(q, "partNumber"))
    return q->header(q, "x-amz-copy-source") ? FAKE_PART_COPY : FAKE_PART;
  if (!strcmp(m, "PUT"))
    return q->header(q, "x-amz-copy-source") ? FAKE_COPY : FAKE_PUT;
  if (!strcmp(m, "POST"))
    return q->has_arg(q, "uploads") ? FAKE_INITIATE : FAKE_COMPLETE;
  if (!strcmp(m, "DELETE"))
    return q->has_arg(q, "uploadId") ? FAKE_ABORT : FAKE_DELETE;
  return FAKE_ANY;
}

/* The metadata headers a client may send (the fs's and s3fs's). */
static const char *const meta_names[] = {
    "content-type",       "x-amz-meta-mode",  "x-amz-meta-uid",
    "x-amz-meta-gid",     "x-amz-meta-mtime", "x-amz-meta-ctime",
    "x-amz-meta-atime",   "x-amz-meta-rdev",  "x-amz-meta-color",
    NULL};

/* Those of a PUT's headers, as meta lines. */
char *fake_meta_of(const struct fake_req *q)
{
  struct text t = {0};

  add(&t, "%s", "");
  for (const char *const *n = meta_names; *n; n++) {
    const char *v = q->header(q, *n);
    if (v)
      add(&t, "%s: %s\n", *n, v);
  }
  return t.p;
}

static void obj_headers(struct text *h, const struct fake_obj *o)
{
  char date[64];
  const char *m = o->meta;

  http_date(o->mtime, date, sizeof(date));
  add(h, "ETag: \"%s\"\r\nLast-Modified: %s\r\n", o->etag, date);
  while (m && *m) { /* "name: value\n" */
    const char *nl = strchr(m, '\n');
    add(h, "%.*s\r\n", (int)(nl ? nl - m : (ptrdiff_t)strlen(m)), m);
    m = nl ? nl + 1 : "";
  }
  if (!strstr(o->meta, "content-type:"))
    add(h, "Content-Type: binary/octet-stream\r\n");
}

/* If-Match / If-None-Match against o (NULL: none): 0 or the status. */
static int conditions(const struct fake_req *q, const struct fake_obj *o,
                      const char *match_name, const char *none_name)
{
  const char *im = q->header(q, match_name);
  const char *inm = none_name ? q->header(q, none_name) : NULL;
  char quoted[FAKE_ETAG_MAX + 2];

  if (o)
    snprintf(quoted, sizeof(quoted), "\"%s\"", o->etag);
  if (im && (!o || (strcmp(im, quoted) && strcmp(im, o->etag) &&
                    strcmp(im, "*"))))
    return o ? 412 : 404;
  if (inm && o && (!strcmp(inm, "*") || !strcmp(inm, quoted)))
    return 412;
  return 0;
}

static void serve_get(struct fake_s3 *f, const struct fake_req *q,
                      struct fake_resp *r, bool head)
{
  struct fake_obj *o = fake_store_find(fake_store_bucket(f, q->bucket, false),
                                       q->key);
  const char *range = q->header(q, "range");
  unsigned long long a = 0, z = 0;
  struct text h = {0};
  int st;

  if (!o) {
    fake_resp_error(r, 404, "NoSuchKey");
    return;
  }
  if ((st = conditions(q, o, "if-match", "if-none-match"))) {
    fake_resp_error(r, st == 412 && q->header(q, "if-none-match") ? 304 : st,
                    st == 412 ? "PreconditionFailed" : "NoSuchKey");
    return;
  }
  obj_headers(&h, o);
  r->status = 200;
  a = 0;
  z = o->len ? o->len - 1 : 0;
  if (range && !head) {
    int n = sscanf(range, "bytes=%llu-%llu", &a, &z);
    if (n < 1 || a >= o->len) {
      free(h.p);
      fake_resp_error(r, 416, "InvalidRange");
      return;
    }
    if (n < 2 || z >= o->len)
      z = o->len - 1;
    if (z < a) {
      free(h.p);
      fake_resp_error(r, 416, "InvalidRange");
      return;
    }
    r->status = 206;
    add(&h, "Content-Range: bytes %llu-%llu/%zu\r\n", a, z, o->len);
  }
  if (!head && o->len) {
    r->body_len = (size_t)(z - a + 1);
    r->body = malloc(r->body_len);
    memcpy(r->body, o->data + a, r->body_len);
  } else if (head) {
    add(&h, "X-Fake-Length: %zu\r\n", o->len); /* (Content-Length: below) */
  }
  r->headers = h.p;
  r->headers_len = h.len;
}

/* x-amz-copy-source: "/bucket/key" or "bucket/key", url-encoded. */
struct fake_obj *fake_copy_source(struct fake_s3 *f, const char *src)
{
  char buf[2048], *w = buf, *slash;

  if (*src == '/')
    src++;
  for (; *src && w < buf + sizeof(buf) - 1; src++) {
    unsigned v;
    if (*src == '%' && sscanf(src + 1, "%2x", &v) == 1) {
      *w++ = (char)v;
      src += 2;
    } else {
      *w++ = *src;
    }
  }
  *w = '\0';
  if (!(slash = strchr(buf, '/')))
    return NULL;
  *slash = '\0';
  return fake_store_find(fake_store_bucket(f, buf, false), slash + 1);
}

void fake_etag_result(struct fake_resp *r, const char *root,
                        const char *etag)
{
  struct text t = {0};
  char date[64];

  iso_date(time(NULL), date, sizeof(date));
  add(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s><LastModified>%s"
          "</LastModified><ETag>\"%s\"</ETag></%s>",
      root, date, etag, root);
  r->status = 200;
  set_body(r, &t);
}

static void serve_put(struct fake_s3 *f, const struct fake_req *q,
                      struct fake_resp *r, bool copy)
{
  struct fake_bucket *b = fake_store_bucket(f, q->bucket, false);
  struct fake_obj *o = fake_store_find(b, q->key), *src = NULL;
  char *meta = NULL, etag[FAKE_ETAG_MAX];
  const char *dir = q->header(q, "x-amz-metadata-directive");
  struct text h = {0};
  int st;

  if (!b) {
    fake_resp_error(r, 404, "NoSuchBucket");
    return;
  }
  if ((st = conditions(q, o, "if-match", "if-none-match"))) {
    fake_resp_error(r, st, st == 412 ? "PreconditionFailed" : "NoSuchKey");
    return;
  }
  if (copy) {
    src = fake_copy_source(f, q->header(q, "x-amz-copy-source"));
    if (!src) {
      fake_resp_error(r, 404, "NoSuchKey");
      return;
    }
    if ((st = conditions(q, src, "x-amz-copy-source-if-match", NULL))) {
      fake_resp_error(r, 412, "PreconditionFailed");
      return;
    }
    meta = dir && !strcasecmp(dir, "REPLACE") ? fake_meta_of(q)
                                               : strdup(src->meta);
    /* (src may move when the store grows: copied first) */
    char *data = malloc(src->len ? src->len : 1);
    size_t len = src->len;
    memcpy(data, src->data, len);
    fake_store_put(b, q->key, data, len, meta, NULL);
    free(data);
  } else {
    meta = fake_meta_of(q);
    fake_store_put(b, q->key, q->body, q->body_len, meta, NULL);
  }
  free(meta);
  snprintf(etag, sizeof(etag), "%s", fake_store_find(b, q->key)->etag);
  if (copy) {
    fake_etag_result(r, "CopyObjectResult", etag);
    return;
  }
  add(&h, "ETag: \"%s\"\r\n", etag);
  r->status = 200;
  r->headers = h.p;
  r->headers_len = h.len;
}

/* ListObjectsV2: prefix, delimiter, max-keys, continuation-token (the
   last key of the page before), start-after. */
static void serve_list(struct fake_s3 *f, const struct fake_req *q,
                       struct fake_resp *r)
{
  struct fake_bucket *b = fake_store_bucket(f, q->bucket, false);
  const char *prefix = q->arg(q, "prefix"), *delim = q->arg(q, "delimiter");
  const char *token = q->arg(q, "continuation-token");
  const char *after = q->arg(q, "start-after");
  const char *mk = q->arg(q, "max-keys");
  unsigned max = mk ? (unsigned)atoi(mk) : 1000, n = 0;
  struct text t = {0};
  char last[2048] = "", date[64];
  size_t plen = prefix ? strlen(prefix) : 0;
  bool trunc = false;

  if (!b) {
    fake_resp_error(r, 404, "NoSuchBucket");
    return;
  }
  if (!max)
    max = 1000;
  add(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>"
          "<Name>%s</Name>",
      b->name);
  for (size_t i = 0; i < b->nobjs; i++) {
    const struct fake_obj *o = &b->objs[i];
    const char *rest, *d;
    if (prefix && strncmp(o->key, prefix, plen))
      continue;
    if ((token && strcmp(o->key, token) <= 0) ||
        (after && strcmp(o->key, after) <= 0))
      continue;
    rest = o->key + plen;
    d = delim && *delim ? strstr(rest, delim) : NULL;
    if (d) { /* a common prefix: once, the key up to the delimiter */
      size_t cl = (size_t)(d - o->key) + strlen(delim);
      if (last[0] && !strncmp(last, o->key, cl) && strlen(last) == cl)
        continue;
      if (n == max) {
        trunc = true;
        break;
      }
      snprintf(last, sizeof(last), "%.*s", (int)cl, o->key);
      add(&t, "<CommonPrefixes><Prefix>");
      add_xml(&t, last);
      add(&t, "</Prefix></CommonPrefixes>");
      /* the token after a prefix: the last key under it */
      while (i + 1 < b->nobjs && !strncmp(b->objs[i + 1].key, last, cl))
        i++;
      snprintf(last, sizeof(last), "%.*s", (int)cl, o->key);
      n++;
      continue;
    }
    if (n == max) {
      trunc = true;
      break;
    }
    iso_date(o->mtime, date, sizeof(date));
    add(&t, "<Contents><Key>");
    add_xml(&t, o->key);
    add(&t, "</Key><LastModified>%s</LastModified><ETag>\"%s\"</ETag>"
            "<Size>%zu</Size><StorageClass>STANDARD</StorageClass>"
            "</Contents>",
        date, o->etag, o->len);
    snprintf(last, sizeof(last), "%s", o->key);
    n++;
  }
  add(&t, "<KeyCount>%u</KeyCount><MaxKeys>%u</MaxKeys><IsTruncated>%s"
          "</IsTruncated>",
      n, max, trunc ? "true" : "false");
  if (trunc) {
    /* a prefix's token: past every key under it */
    add(&t, "<NextContinuationToken>");
    add_xml(&t, last);
    if (delim && *delim && strlen(last) && strstr(last + plen, delim))
      add(&t, "\xef\xbf\xbf"); /* (U+FFFF sorts after every key byte) */
    add(&t, "</NextContinuationToken>");
  }
  add(&t, "</ListBucketResult>");
  r->status = 200;
  set_body(r, &t);
}

void fake_store_serve(struct fake_s3 *f, const struct fake_req *q,
                      struct fake_resp *r)
{
  enum fake_op op = fake_op_of(q);

  switch (op) {
  case FAKE_GET:
  case FAKE_HEAD:
    serve_get(f, q, r, op == FAKE_HEAD);
    return;
  case FAKE_PUT:
  case FAKE_COPY:
    serve_put(f, q, r, op == FAKE_COPY);
    return;
  case FAKE_DELETE:
    if (fake_store_bucket(f, q->bucket, false))
      fake_obj_remove(fake_store_bucket(f, q->bucket, false), q->key);
    r->status = 204;
    return;
  case FAKE_LIST:
    serve_list(f, q, r);
    return;
  default:
    fake_mpu_serve(f, q, r, op);
  }
}
