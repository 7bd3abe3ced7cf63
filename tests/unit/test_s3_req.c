/*
 * test_s3_req: a request's reply state between attempts (s3_req.c), without
 * a server: what one attempt's XML parser left in the caller's result must
 * be gone when the engine starts the next attempt, or a retried listing
 * would return its entries twice; a resend's precondition rewritten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "s3/s3_i.h"

#define LBR "<ListBucketResult>"
#define OBJ(k) "<Contents><Key>" k "</Key><Size>1</Size></Contents>"
#define LMU "<ListMultipartUploadsResult>"
#define UPL(k, u) "<Upload><Key>" k "</Key><UploadId>" u "</UploadId></Upload>"

static bool all_zero(const void *p, size_t n)
{
  const unsigned char *b = p;

  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

/* One attempt's parser fed doc, as the engine's write callback does. */
static void attempt(struct s3_req *r, const char *doc)
{
  r->xml = s3_xml_create(r->xml_kind, r->xml_result, &r->err);
  assert_non_null(r->xml);
  assert_int_equal(s3_xml_feed(r->xml, doc, strlen(doc)), 0);
}

static void test_partial_list_dropped(void **state)
{
  struct s3_list_result res = {0};
  struct s3_req *r = s3_req_create(NULL, "GET", "b", NULL);

  (void)state;
  assert_non_null(r);
  s3_req_set_sink_xml(r, S3_XML_LIST_OBJECTS, &res);
  /* the connection broke after two entries */
  attempt(r, LBR OBJ("a") OBJ("b") "<Contents><Key>c");
  assert_int_equal(res.n_objects, 2);
  s3_req_reset_reply(r);
  assert_null(r->xml);
  assert_true(all_zero(&res, sizeof(res)));
  /* the retry gets the whole page: each entry once */
  attempt(r, LBR OBJ("a") OBJ("b") OBJ("c") "</ListBucketResult>");
  assert_int_equal(s3_xml_finish(r->xml), 0);
  assert_int_equal(res.n_objects, 3);
  assert_string_equal(res.objects[2].key, "c");
  s3_req_destroy(r);            /* the result stays the caller's */
  assert_int_equal(res.n_objects, 3);
  s3_list_result_cleanup(&res);
}

static void test_whole_uploads_page_dropped(void **state)
{
  struct s3_uploads_result res = {0};
  struct s3_req *r = s3_req_create(NULL, "GET", "b", NULL);

  (void)state;
  assert_non_null(r);
  s3_req_set_sink_xml(r, S3_XML_LIST_UPLOADS, &res);
  /* the whole body arrived, then the transfer failed */
  attempt(r, LMU "<IsTruncated>true</IsTruncated><NextKeyMarker>k"
             "</NextKeyMarker><NextUploadIdMarker>u</NextUploadIdMarker>"
             UPL("k", "u") "</ListMultipartUploadsResult>");
  assert_int_equal(res.n_uploads, 1);
  assert_non_null(res.next_key_marker);
  s3_req_reset_reply(r);
  assert_true(all_zero(&res, sizeof(res)));
  s3_req_destroy(r);
}

static void test_first_attempt_leaves_result_alone(void **state)
{
  struct s3_etag_result res = {.etag = "caller's", .mtime = 7};
  struct s3_req *r = s3_req_create(NULL, "PUT", "b", "k");

  (void)state;
  assert_non_null(r);
  s3_req_set_sink_xml(r, S3_XML_COPY_RESULT, &res);
  s3_req_reset_reply(r);        /* no attempt yet: nothing parsed */
  assert_string_equal(res.etag, "caller's");
  /* the request's own result (UploadPartCopy) is cleared the same way */
  s3_req_set_sink_xml(r, S3_XML_COPY_RESULT, &r->etag_res);
  attempt(r, "<CopyPartResult><ETag>\"e1\"</ETag></CopyPartResult>");
  assert_int_equal(s3_xml_finish(r->xml), 0);
  assert_string_equal(r->etag_res.etag, "e1");
  s3_req_reset_reply(r);
  assert_string_equal(r->etag_res.etag, "");
  s3_req_destroy(r);
}

/* A resend's precondition rewritten (a PUT whose token the server ignored,
   storing the empty body): If-None-Match or If-Match becomes If-Match on
   what was stored; other headers and a request without one untouched. */
static void test_recondition(void **state)
{
  struct s3_req *r = s3_req_create(NULL, "PUT", "b", "k");
  struct s3_req *plain = s3_req_create(NULL, "PUT", "b", "k");
  const char *e = "\"d41d8cd98f00b204e9800998ecf8427e\"";
  int n = 0;

  (void)state;
  assert_non_null(r);
  assert_non_null(plain);
  assert_int_equal(s3_req_add_header(r, "content-type", "x/y"), 0);
  assert_int_equal(s3_req_add_header(r, "If-None-Match", "*"), 0);
  assert_int_equal(s3_req_recondition(r, e), 0);
  for (size_t i = 0; i < r->n_headers; i++) {
    if (!strcmp(r->headers[i].key, "if-match")) {
      assert_string_equal(r->headers[i].val, e);
      n++;
    } else {
      assert_string_equal(r->headers[i].key, "content-type");
      assert_string_equal(r->headers[i].val, "x/y");
    }
  }
  assert_int_equal(n, 1);
  assert_int_equal(r->n_headers, 2);
  assert_int_equal(s3_req_recondition(plain, e), 0);
  assert_int_equal(plain->n_headers, 0);
  s3_req_destroy(r);
  s3_req_destroy(plain);
}

int main(void)
{
  static const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partial_list_dropped),
      cmocka_unit_test(test_whole_uploads_page_dropped),
      cmocka_unit_test(test_first_attempt_leaves_result_alone),
      cmocka_unit_test(test_recondition),
  };

  return cmocka_run_group_tests_name("s3_req", tests, NULL, NULL);
}
