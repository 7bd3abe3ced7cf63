/*
 * test_gw_parse: the gateway's request-target, framing and Range checks,
 * table-driven; each refused form is one an attacker sends (the SSRF
 * target "@host:port/...", absolute-form, CL with TE, repeated framing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "gateway/gw_parse.h"

static void test_target(void **state)
{
  static const struct {
    const char *t;
    int rc;
  } vecs[] = {
      {"/", 0},
      {"/bucket/key", 0},
      {"/bucket/a%20b%2Fc?x-id=1&list-type=2", 0},
      {"/bucket//double/../dots/./x", 0}, /* S3 keys: forwarded as they are */
      {"/b/k?uploads", 0},
      {"/b/%41%7e", 0},
      {"@127.0.0.1:9/bucket/x", -EINVAL},       /* userinfo: the SSRF */
      {"http://127.0.0.1:9/bucket/x", -EINVAL}, /* absolute-form */
      {"bucket/x", -EINVAL},
      {"*", -EINVAL},
      {"", -EINVAL},
      {"/a#frag", -EINVAL},
      {"/a\\b", -EINVAL},
      {"/a b", -EINVAL},
      {"/a\tb", -EINVAL},
      {"/a\rb", -EINVAL},
      {"/a\nb", -EINVAL},
      {"/a\x7f", -EINVAL},
      {"/a\x01", -EINVAL},
      {"/a%", -EINVAL},
      {"/a%4", -EINVAL},
      {"/a%zz", -EINVAL},
      {"/a%4g", -EINVAL},
      {"/a?x=%", -EINVAL},
      {"/caf\xc3\xa9", -EINVAL}, /* UTF-8 must be %-encoded */
      {"/a\"b", -EINVAL},
      {"/a<b>", -EINVAL},
      {"/a{b}", -EINVAL},
      {"/a|b", -EINVAL},
      {"/a^b", -EINVAL},
      {"/a`b", -EINVAL},
      {"/b/k-._~!$&'()*+,;=:@?list-type=2&prefix=a%2Fb", 0},
  };
  char why[128];

  for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
    int rc = gw_target_check(vecs[i].t, why, sizeof(why));
    if (rc != vecs[i].rc)
      fail_msg("target %zu '%s': %d, want %d", i, vecs[i].t, rc, vecs[i].rc);
    if (rc)
      assert_null(strstr(why, vecs[i].t[0] ? vecs[i].t : "\x01"));
  }
  assert_int_equal(gw_target_check(NULL, why, sizeof(why)), -EINVAL);
}

static void test_target_long(void **state)
{
  char *t = malloc(GW_TARGET_MAX + 2);
  char why[128];

  assert_non_null(t);
  memset(t, 'a', GW_TARGET_MAX + 1);
  t[0] = '/';
  t[GW_TARGET_MAX] = '\0';
  assert_int_equal(gw_target_check(t, why, sizeof(why)), 0);
  t[GW_TARGET_MAX] = 'a';
  t[GW_TARGET_MAX + 1] = '\0';
  assert_int_equal(gw_target_check(t, why, sizeof(why)), -EINVAL);
  assert_non_null(strstr(why, "too long"));
  free(t);
}

static void test_split(void **state)
{
  char *path = NULL, *query = NULL;

  assert_int_equal(gw_target_split("/b/k?a=1&b", &path, &query), 0);
  assert_string_equal(path, "/b/k");
  assert_string_equal(query, "a=1&b");
  free(path);
  free(query);
  assert_int_equal(gw_target_split("/b/k", &path, &query), 0);
  assert_string_equal(path, "/b/k");
  assert_string_equal(query, "");
  free(path);
  free(query);
  assert_int_equal(gw_target_split("/b?x?y", &path, &query), 0);
  assert_string_equal(path, "/b");
  assert_string_equal(query, "x?y");
  free(path);
  free(query);
}

static void test_framing(void **state)
{
  static const struct {
    const char *cl;
    unsigned ncl;
    const char *te;
    unsigned nte;
    int rc;
    int64_t len;
    bool chunked;
  } vecs[] = {
      {NULL, 0, NULL, 0, 0, -1, false},
      {"0", 1, NULL, 0, 0, 0, false},
      {"12345", 1, NULL, 0, 0, 12345, false},
      {"9223372036854775807", 1, NULL, 0, 0, INT64_MAX, false},
      {"9223372036854775808", 1, NULL, 0, -EINVAL, -1, false},
      {"99999999999999999999", 1, NULL, 0, -EINVAL, -1, false},
      {NULL, 0, "chunked", 1, 0, -1, true},
      {NULL, 0, "Chunked", 1, 0, -1, true},
      {NULL, 0, "identity", 1, 0, -1, false},
      {NULL, 0, "gzip, chunked", 1, -EINVAL, -1, false},
      {"5", 1, "chunked", 1, -EINVAL, -1, false},  /* smuggling */
      {"5", 1, "identity", 1, -EINVAL, -1, false},
      {"5", 2, NULL, 0, -EINVAL, -1, false},       /* twice, even equal */
      {NULL, 0, "chunked", 2, -EINVAL, -1, false},
      {"", 1, NULL, 0, -EINVAL, -1, false},
      {"+5", 1, NULL, 0, -EINVAL, -1, false},
      {"-1", 1, NULL, 0, -EINVAL, -1, false},
      {" 5", 1, NULL, 0, -EINVAL, -1, false},
      {"5 ", 1, NULL, 0, -EINVAL, -1, false},
      {"0x10", 1, NULL, 0, -EINVAL, -1, false},
      {"5,5", 1, NULL, 0, -EINVAL, -1, false},
  };
  char why[128];

  for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
    int64_t len = 7;
    bool chunked = true;
    int rc = gw_framing_check(vecs[i].cl, vecs[i].ncl, vecs[i].te,
                              vecs[i].nte, &len, &chunked, why, sizeof(why));
    if (rc != vecs[i].rc)
      fail_msg("framing %zu: %d (%s), want %d", i, rc, why, vecs[i].rc);
    if (rc == 0) {
      assert_true(len == vecs[i].len);
      assert_int_equal(chunked, vecs[i].chunked);
    }
  }
}

static void test_range(void **state)
{
  static const struct {
    const char *v;
    int rc;
    uint64_t off, len;
  } vecs[] = {
      {"bytes=0-0", 0, 0, 1},
      {"bytes=0-1048575", 0, 0, 1048576},
      {"bytes=100-199", 0, 100, 100},
      {"bytes=0-18446744073709551614", -EINVAL, 0, 0}, /* 20 digits */
      {"bytes=0-9999999999999999999", 0, 0, 10000000000000000000ULL},
      {"bytes=5-4", -EINVAL, 0, 0},
      {"bytes=-5", -EINVAL, 0, 0},
      {"bytes=5-", -EINVAL, 0, 0},
      {"bytes=0-1,3-4", -EINVAL, 0, 0},
      {"bytes= 0-1", -EINVAL, 0, 0},
      {"bytes=+0-1", -EINVAL, 0, 0},
      {"bytes=0-+1", -EINVAL, 0, 0},
      {"bytes=0--1", -EINVAL, 0, 0},
      {"Bytes=0-1", -EINVAL, 0, 0},
      {"items=0-1", -EINVAL, 0, 0},
      {"bytes=0-1 ", -EINVAL, 0, 0},
      {"bytes=02-2", -EINVAL, 0, 0}, /* leading zeros: one text per range */
      {"bytes=2-02", -EINVAL, 0, 0},
      {"bytes=00-0", -EINVAL, 0, 0},
      {"bytes=10-20", 0, 10, 11},
      {"", -EINVAL, 0, 0},
  };

  for (size_t i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
    uint64_t off = 1, len = 1;
    int rc = gw_range_parse(vecs[i].v, &off, &len);
    if (rc != vecs[i].rc)
      fail_msg("range %zu '%s': %d, want %d", i, vecs[i].v, rc, vecs[i].rc);
    if (rc == 0) {
      assert_true(off == vecs[i].off);
      assert_true(len == vecs[i].len);
    }
  }
  assert_int_equal(gw_range_parse(NULL, NULL, NULL), -EINVAL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_target),
      cmocka_unit_test(test_target_long),
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_framing),
      cmocka_unit_test(test_range),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
