/*
 * Every S3 operation of the client against a real RGW: results checked
 * byte for byte, errors checked by errno.
 */
#include <errno.h>
#include <strings.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "itest.h"

static struct s3_client *cl;
static char bucket[64];

#define MiB (1024u * 1024u)

static int setup(void **state)
{
  cl = itest_client(NULL);
  itest_bucket_name(bucket, sizeof(bucket), "ops");
  return s3_create_bucket(cl, bucket) ? -1 : 0;
}

static int teardown(void **state)
{
  itest_drop_bucket(cl, bucket);
  s3_client_destroy(cl);
  return 0;
}

static void put_random(const char *key, size_t len, unsigned seed,
                       unsigned char **out)
{
  unsigned char *buf = malloc(len ? len : 1);

  assert_non_null(buf);
  itest_fill(buf, len, seed);
  assert_int_equal(s3_put_object(cl, bucket, key, buf, len, NULL, NULL), 0);
  if (out)
    *out = buf;
  else
    free(buf);
}

static void test_list_buckets(void **state)
{
  struct s3_buckets_result b;
  bool found = false;

  assert_int_equal(s3_list_buckets(cl, &b), 0);
  for (size_t i = 0; i < b.n_buckets; i++)
    if (!strcmp(b.buckets[i].name, bucket))
      found = b.buckets[i].created > 0;
  s3_buckets_result_cleanup(&b);
  assert_true(found);
}

static void test_put_head_get_meta(void **state)
{
  static const struct s3_kv meta[] = {{"mode", "33188"}, {"uid", "1000"},
                                      {"mtime", "1700000000"}};
  struct s3_put_opts o = {.content_type = "application/x-test",
                          .meta = meta, .n_meta = 3};
  const char *data = "hello, s3rdmafs\n";
  struct s3_object_meta m;
  char etag[S3_ETAG_MAX], buf[64];
  size_t got;

  assert_int_equal(s3_put_object(cl, bucket, "hello.txt", data, strlen(data),
                                 &o, etag), 0);
  assert_int_equal(strlen(etag), 32); /* MD5 of a single PUT */
  assert_int_equal(s3_head_object(cl, bucket, "hello.txt", &m), 0);
  assert_int_equal(m.size, strlen(data));
  assert_string_equal(m.etag, etag);
  assert_string_equal(m.content_type, "application/x-test");
  assert_true(m.mtime > 1600000000);
  assert_int_equal(m.n_meta, 3);
  for (size_t i = 0; i < 3; i++) {
    bool ok = false;
    for (size_t j = 0; j < m.n_meta; j++)
      ok |= !strcmp(m.meta[j].key, meta[i].key) &&
            !strcmp(m.meta[j].val, meta[i].val);
    assert_true(ok);
  }
  s3_object_meta_cleanup(&m);
  assert_int_equal(s3_get_object(cl, bucket, "hello.txt", 0, sizeof(buf), buf,
                                 &got), 0);
  assert_int_equal(got, strlen(data));
  assert_memory_equal(buf, data, got);
}

static void test_empty_object(void **state)
{
  struct s3_object_meta m;
  char buf[8];
  size_t got = 99;

  put_random("empty", 0, 1, NULL);
  assert_int_equal(s3_head_object(cl, bucket, "empty", &m), 0);
  assert_int_equal(m.size, 0);
  s3_object_meta_cleanup(&m);
  assert_int_equal(s3_get_object(cl, bucket, "empty", 0, sizeof(buf), buf,
                                 &got), 0);
  assert_int_equal(got, 0);
}

static void test_ranged_reads(void **state)
{
  const size_t len = 3 * MiB + 12345;
  unsigned char *ref, *buf = malloc(len);
  static const struct {
    uint64_t off;
    size_t len;
  } ranges[] = {
      {0, 1},          {0, 4096},        {1, 1},           {4095, 2},
      {1048575, 3},    {len - 1, 1},     {len - 100, 100}, {len - 100, 1000},
      {len, 10},       {len + 5000, 10}, {123457, 2 * MiB}, {0, len},
  };

  put_random("ranged.bin", len, 7, &ref);
  for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
    size_t got = 12345678, want;
    uint64_t off = ranges[i].off;
    memset(buf, 0xAA, len);
    assert_int_equal(s3_get_object(cl, bucket, "ranged.bin", off,
                                   ranges[i].len, buf, &got), 0);
    want = off >= len ? 0
                      : (len - off < ranges[i].len ? len - off : ranges[i].len);
    assert_int_equal(got, want);
    if (want)
      assert_memory_equal(buf, ref + off, want);
  }
  free(ref);
  free(buf);
}

/* One ranged GET scattered over several buffers, as the page cache does. */
static void test_scatter_get(void **state)
{
  const size_t len = 2 * MiB + 100;
  unsigned char *ref, a[1000], b[MiB], c[MiB + 4096];
  struct iovec iov[3] = {{a, sizeof(a)}, {b, sizeof(b)}, {c, sizeof(c)}};
  struct s3_req *r;
  size_t got;

  put_random("scatter.bin", len, 11, &ref);
  r = s3_get_object_req(cl, bucket, "scatter.bin", 50, len - 50, a);
  assert_non_null(r);
  assert_int_equal(s3_req_set_sink_iov(r, iov, 3), 0);
  s3_req_submit(r, NULL, NULL);
  s3_req_wait(r);
  assert_int_equal(s3_get_object_result(r, &got), 0);
  assert_int_equal(got, len - 50);
  assert_memory_equal(a, ref + 50, sizeof(a));
  assert_memory_equal(b, ref + 50 + sizeof(a), sizeof(b));
  assert_memory_equal(c, ref + 50 + sizeof(a) + sizeof(b),
                      len - 50 - sizeof(a) - sizeof(b));
  assert_int_equal(s3_req_set_sink_iov(r, iov, 0), -EINVAL);
  assert_int_equal(s3_req_set_sink_iov(r, iov, S3_SINK_MAX_IOV + 1), -EINVAL);
  s3_req_destroy(r);
  free(ref);
}

static void test_missing(void **state)
{
  struct s3_object_meta m;
  char buf[16];
  size_t got;
  struct s3_list_result res;

  assert_int_equal(s3_head_object(cl, bucket, "no/such/key", &m), -ENOENT);
  assert_int_equal(s3_get_object(cl, bucket, "no/such/key", 0, 16, buf, &got),
                   -ENOENT);
  assert_int_equal(s3_head_object(cl, "s3r-no-such-bucket-x", "k", &m),
                   -ENOENT);
  assert_int_equal(s3_list_objects(cl, "s3r-no-such-bucket-x", NULL, &res),
                   -ENOENT);
  assert_int_equal(s3_delete_bucket(cl, "s3r-no-such-bucket-x"), -ENOENT);
}

static void test_wrong_secret(void **state)
{
  struct s3_client *bad = itest_client("definitely-not-the-secret");
  struct s3_object_meta m;
  struct s3_buckets_result b;
  char buf[8];
  size_t got;
  struct s3_stats st;

  assert_int_equal(s3_list_buckets(bad, &b), -EACCES);
  assert_int_equal(s3_get_object(bad, bucket, "hello.txt", 0, 8, buf, &got),
                   -EACCES);
  assert_int_equal(s3_put_object(bad, bucket, "x", "x", 1, NULL, NULL),
                   -EACCES);
  assert_int_equal(s3_head_object(bad, bucket, "hello.txt", &m), -EACCES);
  s3_client_stats(bad, &st);
  assert_int_equal(st.retries, 0); /* auth failures are not retried */
  assert_true(st.errors[S3_EC_AUTH] >= 3);
  s3_client_destroy(bad);
}

static void test_anonymous_denied(void **state)
{
  struct s3_client_config cfg;
  struct s3_client *anon;
  char err[256], buf[8];
  size_t got;

  s3_client_config_default(&cfg);
  cfg.endpoint = getenv("S3R_ENDPOINT");
  cfg.creds.anonymous = true;
  anon = s3_client_create(&cfg, err, sizeof(err));
  assert_non_null(anon);
  assert_int_equal(s3_get_object(anon, bucket, "hello.txt", 0, 8, buf, &got),
                   -EACCES);
  s3_client_destroy(anon);
}

static void test_multipart_3_parts(void **state)
{
  const size_t psz = 5 * MiB, last = 1234567, total = 2 * psz + last;
  unsigned char *ref = malloc(total), *back = malloc(total);
  char etags[3][S3_ETAG_MAX], final[S3_ETAG_MAX], *uid = NULL;
  struct s3_part_etag parts[3];
  struct s3_object_meta m;
  size_t got;

  itest_fill(ref, total, 42);
  assert_int_equal(s3_create_multipart(cl, bucket, "mpu/three", NULL, &uid),
                   0);
  assert_non_null(uid);
  /* parts uploaded out of order: the server orders them by number */
  assert_int_equal(s3_upload_part(cl, bucket, "mpu/three", uid, 3,
                                  ref + 2 * psz, last, etags[2]), 0);
  assert_int_equal(s3_upload_part(cl, bucket, "mpu/three", uid, 1, ref, psz,
                                  etags[0]), 0);
  assert_int_equal(s3_upload_part(cl, bucket, "mpu/three", uid, 2, ref + psz,
                                  psz, etags[1]), 0);
  for (int i = 0; i < 3; i++)
    parts[i] = (struct s3_part_etag){i + 1, etags[i]};
  assert_int_equal(s3_complete_multipart(cl, bucket, "mpu/three", uid, parts,
                                         3, final), 0);
  assert_non_null(strstr(final, "-3")); /* multipart ETag: md5-of-md5s-3 */
  assert_int_equal(s3_head_object(cl, bucket, "mpu/three", &m), 0);
  assert_int_equal(m.size, total);
  s3_object_meta_cleanup(&m);
  assert_int_equal(s3_get_object(cl, bucket, "mpu/three", 0, total, back,
                                 &got), 0);
  assert_int_equal(got, total);
  assert_memory_equal(back, ref, total);
  free(uid);
  free(ref);
  free(back);
}

static void test_multipart_abort(void **state)
{
  char *uid = NULL, etag[S3_ETAG_MAX];
  struct s3_object_meta m;

  assert_int_equal(s3_create_multipart(cl, bucket, "mpu/aborted", NULL, &uid),
                   0);
  assert_int_equal(s3_upload_part(cl, bucket, "mpu/aborted", uid, 1, "abc", 3,
                                  etag), 0);
  assert_int_equal(s3_abort_multipart(cl, bucket, "mpu/aborted", uid), 0);
  /* the upload is gone: a part for it is refused, no object appeared */
  assert_int_equal(s3_upload_part(cl, bucket, "mpu/aborted", uid, 2, "abc", 3,
                                  etag), -ENOENT);
  assert_int_equal(s3_head_object(cl, bucket, "mpu/aborted", &m), -ENOENT);
  assert_int_equal(s3_upload_part(cl, bucket, "mpu/aborted", uid, 0, "a", 1,
                                  etag), -EINVAL);
  free(uid);
}

static void test_upload_part_copy(void **state)
{
  const size_t src_len = 6 * MiB + 777, tail = 4096;
  unsigned char *src, *back = malloc(src_len + tail), extra[4096];
  char e1[S3_ETAG_MAX], e2[S3_ETAG_MAX], *uid = NULL;
  struct s3_part_etag parts[2];
  size_t got;

  put_random("copy/src.bin", src_len, 9, &src);
  itest_fill(extra, tail, 10);
  assert_int_equal(s3_create_multipart(cl, bucket, "copy/dst.bin", NULL, &uid),
                   0);
  /* part 1: bytes [1 MiB, 6 MiB + 777) of the source, copied server-side */
  assert_int_equal(s3_upload_part_copy(cl, bucket, "copy/dst.bin", uid, 1,
                                       bucket, "copy/src.bin", MiB,
                                       src_len - MiB, e1), 0);
  assert_true(strlen(e1) > 0);
  assert_int_equal(s3_upload_part(cl, bucket, "copy/dst.bin", uid, 2, extra,
                                  tail, e2), 0);
  parts[0] = (struct s3_part_etag){1, e1};
  parts[1] = (struct s3_part_etag){2, e2};
  assert_int_equal(s3_complete_multipart(cl, bucket, "copy/dst.bin", uid,
                                         parts, 2, NULL), 0);
  assert_int_equal(s3_get_object(cl, bucket, "copy/dst.bin", 0,
                                 src_len + tail, back, &got), 0);
  assert_int_equal(got, src_len - MiB + tail);
  assert_memory_equal(back, src + MiB, src_len - MiB);
  assert_memory_equal(back + src_len - MiB, extra, tail);
  /* copying from a source that does not exist */
  assert_int_equal(s3_upload_part_copy(cl, bucket, "copy/dst2", uid, 1,
                                       bucket, "copy/none", 0, 0, e1),
                   -ENOENT);
  free(uid);
  free(src);
  free(back);
}

static bool has_meta(const struct s3_object_meta *m, const char *k,
                     const char *v)
{
  for (size_t i = 0; i < m->n_meta; i++)
    if (!strcmp(m->meta[i].key, k))
      return v && !strcmp(m->meta[i].val, v);
  return false;
}

static void test_copy_object(void **state)
{
  static const struct s3_kv meta1[] = {{"mode", "33188"}};
  static const struct s3_kv meta2[] = {{"mode", "33261"}, {"gid", "7"}};
  struct s3_put_opts o1 = {.meta = meta1, .n_meta = 1};
  struct s3_put_opts o2 = {.meta = meta2, .n_meta = 2,
                           .content_type = "text/x-replaced"};
  struct s3_object_meta m;
  char buf[32], etag[S3_ETAG_MAX];
  size_t got;

  assert_int_equal(s3_put_object(cl, bucket, "cp/a", "copy me", 7, &o1, NULL),
                   0);
  assert_int_equal(s3_copy_object(cl, bucket, "cp/a", bucket, "cp/b", false,
                                  NULL, etag), 0);
  assert_true(strlen(etag) > 0);
  assert_int_equal(s3_head_object(cl, bucket, "cp/b", &m), 0);
  assert_true(has_meta(&m, "mode", "33188"));
  s3_object_meta_cleanup(&m);
  assert_int_equal(s3_copy_object(cl, bucket, "cp/a", bucket, "cp/c", true,
                                  &o2, NULL), 0);
  assert_int_equal(s3_head_object(cl, bucket, "cp/c", &m), 0);
  assert_true(has_meta(&m, "mode", "33261"));
  assert_true(has_meta(&m, "gid", "7"));
  assert_string_equal(m.content_type, "text/x-replaced");
  s3_object_meta_cleanup(&m);
  assert_int_equal(s3_get_object(cl, bucket, "cp/c", 0, sizeof(buf), buf,
                                 &got), 0);
  assert_int_equal(got, 7);
  assert_memory_equal(buf, "copy me", 7);
  /* in place with REPLACE: how chmod will update metadata */
  assert_int_equal(s3_copy_object(cl, bucket, "cp/c", bucket, "cp/c", true,
                                  &o1, NULL), 0);
  assert_int_equal(s3_head_object(cl, bucket, "cp/c", &m), 0);
  assert_true(has_meta(&m, "mode", "33188"));
  assert_false(has_meta(&m, "gid", "7"));
  s3_object_meta_cleanup(&m);
  assert_int_equal(s3_copy_object(cl, bucket, "cp/none", bucket, "cp/d",
                                  false, NULL, NULL), -ENOENT);
}

static void test_delete(void **state)
{
  const char *keys[] = {"del/1", "del/2", "del/3", "del/never-existed"};
  struct s3_delete_result dr;
  struct s3_object_meta m;

  for (int i = 0; i < 3; i++)
    put_random(keys[i], 10, (unsigned)i, NULL);
  assert_int_equal(s3_delete_object(cl, bucket, "del/1"), 0);
  assert_int_equal(s3_head_object(cl, bucket, "del/1", &m), -ENOENT);
  /* deleting what is not there succeeds, as S3 does */
  assert_int_equal(s3_delete_object(cl, bucket, "del/1"), 0);
  assert_int_equal(s3_delete_objects(cl, bucket, keys + 1, 3, &dr), 0);
  assert_int_equal(dr.n_errors, 0);
  assert_int_equal(dr.n_deleted, 3);
  s3_delete_result_cleanup(&dr);
  assert_int_equal(s3_head_object(cl, bucket, "del/2", &m), -ENOENT);
  assert_int_equal(s3_head_object(cl, bucket, "del/3", &m), -ENOENT);
}

static void test_list_objects(void **state)
{
  static const char *const keys[] = {"ls/a", "ls/b", "ls/c", "ls/d/1",
                                     "ls/d/2", "ls/e/x/y", "ls/f"};
  struct s3_list_params p = {.prefix = "ls/", .delimiter = "/"};
  struct s3_list_result res;
  char *token = NULL;
  size_t nobj = 0, npre = 0;
  int pages = 0;

  for (size_t i = 0; i < 7; i++)
    put_random(keys[i], i, (unsigned)i, NULL);
  assert_int_equal(s3_list_objects(cl, bucket, &p, &res), 0);
  assert_int_equal(res.n_objects, 4);
  assert_int_equal(res.n_prefixes, 2);
  assert_string_equal(res.objects[0].key, "ls/a");
  assert_int_equal(res.objects[1].size, 1);
  assert_int_equal(strlen(res.objects[0].etag), 32);
  assert_string_equal(res.prefixes[0], "ls/d/");
  assert_string_equal(res.prefixes[1], "ls/e/");
  assert_false(res.truncated);
  s3_list_result_cleanup(&res);

  /* paging with continuation tokens, two entries a page */
  p.max_keys = 2;
  do {
    p.continuation = token;
    assert_int_equal(s3_list_objects(cl, bucket, &p, &res), 0);
    free(token);
    token = res.truncated ? strdup(res.next_token) : NULL;
    nobj += res.n_objects;
    npre += res.n_prefixes;
    assert_true(res.n_objects + res.n_prefixes <= 2);
    s3_list_result_cleanup(&res);
    pages++;
  } while (token && pages < 20);
  assert_int_equal(nobj, 4);
  assert_int_equal(npre, 2);
  assert_int_equal(pages, 3);

  /* start-after, no delimiter */
  p = (struct s3_list_params){.prefix = "ls/", .start_after = "ls/d/1"};
  assert_int_equal(s3_list_objects(cl, bucket, &p, &res), 0);
  assert_int_equal(res.n_objects, 3);
  assert_string_equal(res.objects[0].key, "ls/d/2");
  assert_string_equal(res.objects[2].key, "ls/f");
  s3_list_result_cleanup(&res);
}

static void test_special_keys(void **state)
{
  static const char *const keys[] = {
      "sp/with space", "sp/plus+sign", "sp/unicodé ✓ 日本",
      "sp/deep/a/b/c",  "sp/percent%20x", "sp/q?uery&amp=1#frag",
      "sp/tilde~*'()!$,;=:@", "sp/trailing space ",
  };
  const size_t n = sizeof(keys) / sizeof(keys[0]);
  struct s3_list_params p = {.prefix = "sp/"};
  struct s3_list_result res;
  char buf[64];
  size_t got, found = 0;

  for (size_t i = 0; i < n; i++) {
    assert_int_equal(s3_put_object(cl, bucket, keys[i], keys[i],
                                   strlen(keys[i]), NULL, NULL), 0);
    assert_int_equal(s3_get_object(cl, bucket, keys[i], 0, sizeof(buf), buf,
                                   &got), 0);
    assert_int_equal(got, strlen(keys[i]));
    assert_memory_equal(buf, keys[i], got);
  }
  assert_int_equal(s3_list_objects(cl, bucket, &p, &res), 0);
  assert_int_equal(res.n_objects, n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < res.n_objects; j++)
      found += !strcmp(keys[i], res.objects[j].key);
  assert_int_equal(found, n);
  s3_list_result_cleanup(&res);
  assert_int_equal(s3_copy_object(cl, bucket, keys[2], bucket, "sp/copy ✓+",
                                  false, NULL, NULL), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(s3_delete_object(cl, bucket, keys[i]), 0);
  assert_int_equal(s3_delete_object(cl, bucket, "sp/copy ✓+"), 0);
}

/* The generic request: extra signed headers out, reply headers back. */
static void test_extra_headers(void **state)
{
  struct s3_req *r = s3_req_create(cl, "PUT", bucket, "hdr/obj");
  struct s3_object_meta m;
  const char *name, *val;
  bool saw_etag = false;

  assert_non_null(r);
  assert_int_equal(s3_req_add_header(r, "x-amz-meta-token", "abc:def"), 0);
  assert_int_equal(s3_req_add_header(r, "x-bad", "a\r\nX-Injected: 1"),
                   -EINVAL);
  assert_int_equal(s3_req_add_header(r, "bad name", "v"), -EINVAL);
  s3_req_set_body(r, "payload", 7, true); /* signed payload this time */
  s3_req_submit(r, NULL, NULL);
  assert_int_equal(s3_req_wait(r), 0);
  assert_int_equal(s3_req_status(r), 200);
  assert_non_null(s3_req_header(r, "X-Amz-Request-Id"));
  for (size_t i = 0; s3_req_header_at(r, i, &name, &val); i++)
    saw_etag |= !strcasecmp(name, "etag") && strlen(val) == 34;
  assert_true(saw_etag);
  assert_int_equal(s3_req_attempts(r), 1);
  s3_req_destroy(r);
  assert_int_equal(s3_head_object(cl, bucket, "hdr/obj", &m), 0);
  assert_true(has_meta(&m, "token", "abc:def"));
  assert_int_equal(m.size, 7);
  s3_object_meta_cleanup(&m);
}

/* Virtual-host style: http://BUCKET.localhost:PORT/KEY (RGW's dns name). */
static void test_virtual_host(void **state)
{
  const char *ep = getenv("S3R_ENDPOINT"), *colon = strrchr(ep, ':');
  struct s3_client_config cfg;
  struct s3_list_params p = {.prefix = "vh/"};
  struct s3_list_result res;
  struct s3_client *vh;
  char url[128], err[256], buf[32];
  size_t got;

  snprintf(url, sizeof(url), "http://localhost%s", colon);
  s3_client_config_default(&cfg);
  cfg.endpoint = url;
  cfg.virtual_host = true;
  vh = s3_client_create(&cfg, err, sizeof(err));
  assert_non_null(vh);
  assert_int_equal(s3_put_object(vh, bucket, "vh/a key+1", "vhost", 5, NULL,
                                 NULL), 0);
  /* what the virtual-host client wrote, the path-style one reads */
  assert_int_equal(s3_get_object(cl, bucket, "vh/a key+1", 0, sizeof(buf),
                                 buf, &got), 0);
  assert_int_equal(got, 5);
  assert_memory_equal(buf, "vhost", 5);
  assert_int_equal(s3_list_objects(vh, bucket, &p, &res), 0);
  assert_int_equal(res.n_objects, 1);
  assert_string_equal(res.objects[0].key, "vh/a key+1");
  s3_list_result_cleanup(&res);
  assert_int_equal(s3_delete_object(vh, bucket, "vh/a key+1"), 0);
  s3_client_destroy(vh);
}

/* https, the CA from $AWS_CA_BUNDLE; refused without it. */
static void test_https(void **state)
{
  const char *ep = getenv("S3R_ENDPOINT_TLS"), *ca = getenv("S3R_CA_BUNDLE");
  struct s3_client_config cfg;
  struct s3_client *tls;
  char err[256], buf[16];
  size_t got;

  if (!ep || !ca)
    skip();
  s3_client_config_default(&cfg);
  cfg.endpoint = ep;
  setenv("AWS_CA_BUNDLE", ca, 1);
  tls = s3_client_create(&cfg, err, sizeof(err));
  unsetenv("AWS_CA_BUNDLE");
  assert_non_null(tls);
  assert_int_equal(s3_put_object(tls, bucket, "tls/obj", "secure", 6, NULL,
                                 NULL), 0);
  assert_int_equal(s3_get_object(tls, bucket, "tls/obj", 0, sizeof(buf), buf,
                                 &got), 0);
  assert_int_equal(got, 6);
  assert_memory_equal(buf, "secure", 6);
  s3_client_destroy(tls);

  /* the same server without its CA: the certificate is not trusted */
  tls = s3_client_create(&cfg, err, sizeof(err));
  assert_non_null(tls);
  assert_int_equal(s3_get_object(tls, bucket, "tls/obj", 0, sizeof(buf), buf,
                                 &got), -EPROTO);
  s3_client_destroy(tls);
  assert_int_equal(s3_delete_object(cl, bucket, "tls/obj"), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_buckets),
      cmocka_unit_test(test_put_head_get_meta),
      cmocka_unit_test(test_empty_object),
      cmocka_unit_test(test_ranged_reads),
      cmocka_unit_test(test_scatter_get),
      cmocka_unit_test(test_missing),
      cmocka_unit_test(test_wrong_secret),
      cmocka_unit_test(test_anonymous_denied),
      cmocka_unit_test(test_multipart_3_parts),
      cmocka_unit_test(test_multipart_abort),
      cmocka_unit_test(test_upload_part_copy),
      cmocka_unit_test(test_copy_object),
      cmocka_unit_test(test_delete),
      cmocka_unit_test(test_list_objects),
      cmocka_unit_test(test_special_keys),
      cmocka_unit_test(test_extra_headers),
      cmocka_unit_test(test_virtual_host),
      cmocka_unit_test(test_https),
  };
  return cmocka_run_group_tests_name("s3_ops", tests, setup, teardown);
}
