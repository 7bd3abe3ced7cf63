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
  assert_int_equal(
      s3_create_multipart(cl, bucket, "mpu/three", NULL, &uid, NULL),
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

  assert_int_equal(
      s3_create_multipart(cl, bucket, "mpu/aborted", NULL, &uid, NULL),
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
  assert_int_equal(
      s3_create_multipart(cl, bucket, "copy/dst.bin", NULL, &uid, NULL),
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

/* PutObject as requests: several in flight at once, each result read. */
static void test_put_object_req(void **state)
{
  static const struct s3_kv meta[] = {{"mode", "33188"}};
  struct s3_put_opts o = {.content_type = "text/x-async", .meta = meta,
                          .n_meta = 1};
  static const struct s3_kv bad_hdr[] = {{"x-bad", "a\r\nX-Injected: 1"}};
  struct s3_put_opts bad = {.headers = bad_hdr, .n_headers = 1};
  const size_t len = 300000;
  unsigned char *data[8];
  struct s3_req *r[8];
  char key[32], etag[S3_ETAG_MAX], buf[16];
  struct s3_object_meta m;
  unsigned char *back = malloc(len);
  size_t got;

  for (int i = 0; i < 8; i++) {
    data[i] = malloc(len);
    itest_fill(data[i], len, 100u + (unsigned)i);
    snprintf(key, sizeof(key), "aput/%d", i);
    r[i] = s3_put_object_req(cl, bucket, key, data[i], len, i ? &o : NULL);
    assert_non_null(r[i]);
    s3_req_submit(r[i], NULL, NULL);
  }
  for (int i = 0; i < 8; i++) {
    s3_req_wait(r[i]);
    assert_int_equal(s3_put_object_result(r[i], etag), 0);
    assert_int_equal(strlen(etag), 32);
    assert_int_equal(s3_put_object_result(r[i], NULL), 0);
    s3_req_destroy(r[i]);
    snprintf(key, sizeof(key), "aput/%d", i);
    assert_int_equal(s3_head_object(cl, bucket, key, &m), 0);
    assert_string_equal(m.etag, etag);
    assert_int_equal(m.size, len);
    if (i) {
      assert_string_equal(m.content_type, "text/x-async");
      assert_true(m.n_meta == 1 && !strcmp(m.meta[0].val, "33188"));
    }
    s3_object_meta_cleanup(&m);
    assert_int_equal(s3_get_object(cl, bucket, key, 0, len, back, &got), 0);
    assert_int_equal(got, len);
    assert_memory_equal(back, data[i], len);
    free(data[i]);
  }
  /* options that cannot be sent: no request, and the sync call says why */
  assert_null(s3_put_object_req(cl, bucket, "aput/bad", "x", 1, &bad));
  assert_int_equal(s3_put_object(cl, bucket, "aput/bad", "x", 1, &bad, NULL),
                   -EINVAL);
  /* a failed PUT: the result is the error, the ETag empty */
  r[0] = s3_put_object_req(cl, "s3r-no-such-bucket-x", "k", "x", 1, NULL);
  s3_req_submit(r[0], NULL, NULL);
  s3_req_wait(r[0]);
  strcpy(etag, "stale");
  assert_int_equal(s3_put_object_result(r[0], etag), -ENOENT);
  assert_string_equal(etag, "");
  s3_req_destroy(r[0]);
  assert_int_equal(s3_get_object(cl, bucket, "aput/bad", 0, sizeof(buf), buf,
                                 &got), -ENOENT);
  free(back);
}

/* UploadPartCopy as requests, in flight together, with the source's ETag. */
static void test_upload_part_copy_req(void **state)
{
  const size_t psz = 5 * MiB, src_len = 3 * psz + 1000;
  unsigned char *src, *back = malloc(src_len);
  char etags[4][S3_ETAG_MAX], src_etag[S3_ETAG_MAX], quoted[S3_ETAG_MAX + 2];
  struct s3_part_etag parts[4];
  struct s3_req *r[4];
  char *uid = NULL;
  size_t got;
  int rc;

  src = malloc(src_len);
  itest_fill(src, src_len, 77);
  assert_int_equal(s3_put_object(cl, bucket, "pcr/src", src, src_len, NULL,
                                 src_etag), 0);
  snprintf(quoted, sizeof(quoted), "\"%s\"", src_etag);
  assert_int_equal(
      s3_create_multipart(cl, bucket, "pcr/dst", NULL, &uid, NULL), 0);
  /* parts 1-3: the source's first three 5 MiB in reverse order; part 4:
     its short tail */
  for (int i = 0; i < 4; i++) {
    uint64_t off = i == 3 ? 3 * psz : (uint64_t)(2 - i) * psz;
    uint64_t len = i == 3 ? src_len - 3 * psz : psz;
    r[i] = s3_upload_part_copy_req(cl, bucket, "pcr/dst", uid, i + 1, bucket,
                                   "pcr/src", off, len,
                                   i % 2 ? src_etag : quoted);
    assert_non_null(r[i]);
    s3_req_submit(r[i], NULL, NULL);
  }
  for (int i = 0; i < 4; i++) {
    s3_req_wait(r[i]);
    rc = s3_upload_part_copy_result(r[i], etags[i]);
    if (rc)
      fail_msg("part %d: %d (%s)", i + 1, rc, s3_req_error(r[i])->code);
    s3_req_destroy(r[i]);
    parts[i] = (struct s3_part_etag){i + 1, etags[i]};
  }
  assert_int_equal(s3_complete_multipart(cl, bucket, "pcr/dst", uid, parts,
                                         4, NULL), 0);
  assert_int_equal(s3_get_object(cl, bucket, "pcr/dst", 0, src_len, back,
                                 &got), 0);
  assert_int_equal(got, src_len);
  assert_memory_equal(back, src + 2 * psz, psz);
  assert_memory_equal(back + psz, src + psz, psz);
  assert_memory_equal(back + 2 * psz, src, psz);
  assert_memory_equal(back + 3 * psz, src + 3 * psz, src_len - 3 * psz);
  free(uid);

  /* a source ETag that is not the object's: 412 -> ESTALE where the server
     honours x-amz-copy-source-if-match (AWS, MinIO); Ceph RGW 16 ignores it */
  assert_int_equal(
      s3_create_multipart(cl, bucket, "pcr/dst2", NULL, &uid, NULL), 0);
  r[0] = s3_upload_part_copy_req(cl, bucket, "pcr/dst2", uid, 1, bucket,
                                 "pcr/src", 0, 1000,
                                 "0123456789abcdef0123456789abcdef");
  s3_req_submit(r[0], NULL, NULL);
  s3_req_wait(r[0]);
  rc = s3_upload_part_copy_result(r[0], etags[0]);
  if (rc == 0)
    print_message("note: the server ignored x-amz-copy-source-if-match\n");
  else
    assert_int_equal(rc, -ESTALE);
  s3_req_destroy(r[0]);
  /* part numbers out of range: no request */
  assert_null(s3_upload_part_copy_req(cl, bucket, "pcr/dst2", uid, 0, bucket,
                                      "pcr/src", 0, 1, NULL));
  assert_null(s3_upload_part_copy_req(cl, bucket, "pcr/dst2", uid, 10001,
                                      bucket, "pcr/src", 0, 1, NULL));
  assert_int_equal(s3_upload_part_copy(cl, bucket, "pcr/dst2", uid, 0, bucket,
                                       "pcr/src", 0, 1, etags[0]), -EINVAL);
  /* a missing source, as a request */
  r[0] = s3_upload_part_copy_req(cl, bucket, "pcr/dst2", uid, 2, bucket,
                                 "pcr/none", 0, 0, NULL);
  s3_req_submit(r[0], NULL, NULL);
  s3_req_wait(r[0]);
  assert_int_equal(s3_upload_part_copy_result(r[0], etags[0]), -ENOENT);
  assert_string_equal(etags[0], "");
  s3_req_destroy(r[0]);
  assert_int_equal(s3_abort_multipart(cl, bucket, "pcr/dst2", uid), 0);
  free(uid);
  free(src);
  free(back);
}

/* No upload in progress under prefix in bkt. */
static void assert_no_uploads(const char *bkt, const char *prefix)
{
  struct s3_uploads_result u;

  assert_int_equal(s3_list_multipart_uploads(cl, bkt, prefix, NULL, NULL, &u),
                   0);
  if (u.n_uploads)
    fail_msg("%zu upload(s) left under %s, first %s", u.n_uploads, prefix,
             u.uploads[0].key);
  assert_false(u.truncated);
  s3_uploads_result_cleanup(&u);
}

static void check_copy(const char *key, const unsigned char *want, size_t len,
                       unsigned char *back)
{
  size_t got;

  memset(back, 0, len);
  assert_int_equal(s3_get_object(cl, bucket, key, 0, len + 1, back, &got), 0);
  assert_int_equal(got, len);
  assert_memory_equal(back, want, len);
}

/* Copies above the multipart threshold: UploadPartCopy parts, meta kept. */
static void test_copy_object_any(void **state)
{
  static const struct s3_kv meta1[] = {{"mode", "33188"}, {"uid", "1000"}};
  static const struct s3_kv meta2[] = {{"mode", "33261"}};
  static const struct s3_kv hdrs1[] = {{"cache-control", "max-age=60"}};
  struct s3_put_opts o1 = {.content_type = "application/x-orig",
                           .meta = meta1, .n_meta = 2, .headers = hdrs1,
                           .n_headers = 1};
  struct s3_put_opts o2 = {.content_type = "text/x-replaced", .meta = meta2,
                           .n_meta = 1};
  const size_t len = 12 * MiB + 4321, small = 3 * MiB;
  unsigned char *src = malloc(len), *back = malloc(len + 1);
  char etag[S3_ETAG_MAX];
  struct s3_object_meta m;

  itest_fill(src, len, 2024);
  assert_int_equal(s3_put_object(cl, bucket, "cpa/src", src, len, &o1, NULL),
                   0);
  /* COPY: 3 parts of 5, 5 and 2 MiB, content type, meta, cache-control */
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/src", bucket,
                                      "cpa/copy", false, &o2, len, 5 * MiB,
                                      5 * MiB, etag), 0);
  assert_non_null(strstr(etag, "-3"));
  check_copy("cpa/copy", src, len, back);
  assert_int_equal(s3_head_object(cl, bucket, "cpa/copy", &m), 0);
  assert_string_equal(m.etag, etag);
  assert_string_equal(m.content_type, "application/x-orig");
  assert_int_equal(m.n_meta, 2);
  assert_true(has_meta(&m, "mode", "33188"));
  assert_true(has_meta(&m, "uid", "1000"));
  s3_object_meta_cleanup(&m);
  {
    struct s3_req *r = s3_req_create(cl, "HEAD", bucket, "cpa/copy");

    s3_req_submit(r, NULL, NULL);
    assert_int_equal(s3_req_wait(r), 0);
    assert_non_null(s3_req_header(r, "cache-control"));
    assert_string_equal(s3_req_header(r, "cache-control"), "max-age=60");
    s3_req_destroy(r);
  }

  /* REPLACE, parts of 7 MiB (2 parts), into a key with spaces */
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/src", bucket,
                                      "cpa/re placed+", true, &o2, len,
                                      5 * MiB, 7 * MiB, NULL), 0);
  check_copy("cpa/re placed+", src, len, back);
  assert_int_equal(s3_head_object(cl, bucket, "cpa/re placed+", &m), 0);
  assert_non_null(strstr(m.etag, "-2"));
  assert_string_equal(m.content_type, "text/x-replaced");
  assert_int_equal(m.n_meta, 1);
  assert_true(has_meta(&m, "mode", "33261"));
  s3_object_meta_cleanup(&m);

  /* REPLACE without options: no metadata at all */
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/src", bucket,
                                      "cpa/bare", true, NULL, len, 5 * MiB,
                                      5 * MiB, NULL), 0);
  assert_int_equal(s3_head_object(cl, bucket, "cpa/bare", &m), 0);
  assert_int_equal(m.n_meta, 0);
  assert_int_equal(m.size, len);
  s3_object_meta_cleanup(&m);

  /* in place with REPLACE (chmod of a big file): same bytes, new meta */
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/bare", bucket,
                                      "cpa/bare", true, &o2, len, 5 * MiB,
                                      5 * MiB, etag), 0);
  check_copy("cpa/bare", src, len, back);
  assert_int_equal(s3_head_object(cl, bucket, "cpa/bare", &m), 0);
  assert_string_equal(m.etag, etag);
  assert_true(has_meta(&m, "mode", "33261"));
  s3_object_meta_cleanup(&m);

  /* at or below the threshold: one CopyObject (a plain ETag) */
  assert_int_equal(s3_put_object(cl, bucket, "cpa/small", src, small, &o1,
                                 NULL), 0);
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/small", bucket,
                                      "cpa/small2", false, NULL, small, small,
                                      5 * MiB, etag), 0);
  assert_null(strchr(etag, '-'));
  check_copy("cpa/small2", src, small, back);
  assert_int_equal(s3_head_object(cl, bucket, "cpa/small2", &m), 0);
  assert_true(has_meta(&m, "uid", "1000"));
  s3_object_meta_cleanup(&m);

  /* failures leave no upload behind */
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/src", bucket,
                                      "cpa/x", false, NULL, len, 5 * MiB,
                                      5 * MiB - 1, NULL), -EINVAL);
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/src", bucket,
                                      "cpa/x", false, NULL, len - 1, 5 * MiB,
                                      5 * MiB, NULL), -ESTALE);
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/none", bucket,
                                      "cpa/x", false, NULL, len, 5 * MiB,
                                      5 * MiB, NULL), -ENOENT);
  assert_int_equal(s3_copy_object_any(cl, bucket, "cpa/src",
                                      "s3r-no-such-bucket-x", "cpa/x", false,
                                      NULL, len, 5 * MiB, 5 * MiB, NULL),
                   -ENOENT);
  assert_int_equal(s3_head_object(cl, bucket, "cpa/x", &m), -ENOENT);
  assert_no_uploads(bucket, "cpa/");
  free(src);
  free(back);
}

static bool listed(const struct s3_uploads_result *u, const char *key,
                   const char *id)
{
  for (size_t i = 0; i < u->n_uploads; i++)
    if (!strcmp(u->uploads[i].key, key) &&
        !strcmp(u->uploads[i].upload_id, id))
      return true;
  return false;
}

static void test_list_multipart_uploads(void **state)
{
  char ub[64], *id[4] = {NULL};
  static const char *const keys[] = {"up/a", "up/b c+d/é", "other/x",
                                     "up/a"};
  struct s3_uploads_result u;
  time_t now = time(NULL);

  itest_bucket_name(ub, sizeof(ub), "upl");
  assert_int_equal(s3_create_bucket(cl, ub), 0);
  assert_no_uploads(ub, NULL);
  for (int i = 0; i < 4; i++)
    assert_int_equal(
        s3_create_multipart(cl, ub, keys[i], NULL, &id[i], NULL), 0);

  assert_int_equal(s3_list_multipart_uploads(cl, ub, NULL, NULL, NULL, &u), 0);
  assert_int_equal(u.n_uploads, 4);
  assert_false(u.truncated);
  for (int i = 0; i < 4; i++)
    assert_true(listed(&u, keys[i], id[i]));
  /* key order: other/x, up/a, up/a, up/b c+d/é */
  assert_string_equal(u.uploads[0].key, "other/x");
  assert_string_equal(u.uploads[3].key, "up/b c+d/é");
  for (size_t i = 0; i < u.n_uploads; i++)
    assert_true(u.uploads[i].initiated > now - 3600 &&
                u.uploads[i].initiated < now + 3600);
  s3_uploads_result_cleanup(&u);

  assert_int_equal(s3_list_multipart_uploads(cl, ub, "up/", "", "", &u), 0);
  assert_int_equal(u.n_uploads, 3);
  assert_false(listed(&u, keys[2], id[2]));
  s3_uploads_result_cleanup(&u);
  assert_int_equal(s3_list_multipart_uploads(cl, ub, "up/b", NULL, NULL, &u),
                   0);
  assert_int_equal(u.n_uploads, 1);
  assert_string_equal(u.uploads[0].upload_id, id[1]);
  s3_uploads_result_cleanup(&u);

  /* after a marker: the uploads listed after it, in the same order */
  {
    struct s3_uploads_result all, after;

    assert_int_equal(s3_list_multipart_uploads(cl, ub, "up/", NULL, NULL,
                                               &all), 0);
    assert_int_equal(s3_list_multipart_uploads(
                         cl, ub, "up/", all.uploads[0].key,
                         all.uploads[0].upload_id, &after), 0);
    assert_int_equal(after.n_uploads, 2);
    assert_string_equal(after.uploads[0].upload_id, all.uploads[1].upload_id);
    assert_string_equal(after.uploads[1].upload_id, all.uploads[2].upload_id);
    s3_uploads_result_cleanup(&after);
    /* a key marker alone: S3 lists only greater keys, Ceph RGW 16 lists
       the marker key's uploads too */
    assert_int_equal(s3_list_multipart_uploads(cl, ub, NULL, "up/a", NULL,
                                               &after), 0);
    assert_false(listed(&after, keys[2], id[2]));
    assert_true(listed(&after, keys[1], id[1]));
    if (after.n_uploads == 3)
      print_message("note: the server lists the key marker's own uploads\n");
    else
      assert_int_equal(after.n_uploads, 1);
    s3_uploads_result_cleanup(&after);
    s3_uploads_result_cleanup(&all);
  }

  for (int i = 0; i < 4; i++) {
    assert_int_equal(s3_abort_multipart(cl, ub, keys[i], id[i]), 0);
    free(id[i]);
  }
  assert_no_uploads(ub, NULL);
  assert_int_equal(s3_list_multipart_uploads(cl, "s3r-no-such-bucket-x", NULL,
                                             NULL, NULL, &u), -ENOENT);
  assert_null(u.uploads);
  assert_int_equal(s3_delete_bucket(cl, ub), 0);
}

/* More uploads than a page holds (1000): every one seen once, in order. */
static void test_list_uploads_pages(void **state)
{
  enum { N = 1003, WIN = 32 };
  char ub[64], key[32];
  char **ids = calloc(N, sizeof(*ids));
  struct s3_mpu_result res[WIN];
  struct s3_req *win[WIN];
  struct s3_uploads_result u;
  char *km = NULL, *im = NULL;
  unsigned seen = 0;
  int pages = 0;

  itest_bucket_name(ub, sizeof(ub), "upg");
  assert_int_equal(s3_create_bucket(cl, ub), 0);
  /* CreateMultipartUpload WIN at a time, as plain requests */
  for (int base = 0; base < N; base += WIN) {
    int n = N - base < WIN ? N - base : WIN;

    for (int i = 0; i < n; i++) {
      snprintf(key, sizeof(key), "pg/%05d", base + i);
      memset(&res[i], 0, sizeof(res[i]));
      win[i] = s3_req_create(cl, "POST", ub, key);
      assert_int_equal(s3_req_add_query(win[i], "uploads", ""), 0);
      s3_req_set_sink_xml(win[i], S3_XML_INITIATE_MPU, &res[i]);
      s3_req_submit(win[i], NULL, NULL);
    }
    for (int i = 0; i < n; i++) {
      assert_int_equal(s3_req_wait(win[i]), 0);
      ids[base + i] = res[i].upload_id;
      s3_req_destroy(win[i]);
    }
  }
  do {
    assert_int_equal(s3_list_multipart_uploads(cl, ub, "pg/", km, im, &u), 0);
    free(km);
    free(im);
    km = im = NULL;
    for (size_t i = 0; i < u.n_uploads; i++, seen++) {
      snprintf(key, sizeof(key), "pg/%05u", seen);
      assert_true(seen < N);
      assert_string_equal(u.uploads[i].key, key);
      assert_string_equal(u.uploads[i].upload_id, ids[seen]);
    }
    if (u.truncated) {
      km = strdup(u.next_key_marker);
      im = strdup(u.next_upload_id_marker);
    }
    s3_uploads_result_cleanup(&u);
    pages++;
  } while (km && pages < 10);
  assert_int_equal(seen, N);
  assert_int_equal(pages, 2);
  /* abort them all, WIN at a time */
  for (int base = 0; base < N; base += WIN) {
    int n = N - base < WIN ? N - base : WIN;

    for (int i = 0; i < n; i++) {
      snprintf(key, sizeof(key), "pg/%05d", base + i);
      win[i] = s3_req_create(cl, "DELETE", ub, key);
      assert_int_equal(s3_req_add_query(win[i], "uploadId", ids[base + i]),
                       0);
      s3_req_submit(win[i], NULL, NULL);
    }
    for (int i = 0; i < n; i++) {
      assert_int_equal(s3_req_wait(win[i]), 0);
      s3_req_destroy(win[i]);
      free(ids[base + i]);
    }
  }
  free(ids);
  assert_no_uploads(ub, NULL);
  assert_int_equal(s3_delete_bucket(cl, ub), 0);
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
      cmocka_unit_test(test_put_object_req),
      cmocka_unit_test(test_upload_part_copy_req),
      cmocka_unit_test(test_copy_object_any),
      cmocka_unit_test(test_list_multipart_uploads),
      cmocka_unit_test(test_list_uploads_pages),
      cmocka_unit_test(test_delete),
      cmocka_unit_test(test_list_objects),
      cmocka_unit_test(test_special_keys),
      cmocka_unit_test(test_extra_headers),
      cmocka_unit_test(test_virtual_host),
      cmocka_unit_test(test_https),
  };
  return cmocka_run_group_tests_name("s3_ops", tests, setup, teardown);
}
