/*
 * test_endpoint: the one endpoint parser: every part of good URLs (scheme in
 * any case, IPv6, default and given ports, paths with trailing '/'), the
 * reason given for each kind of bad URL, and the loopback test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "common/endpoint.h"

struct good {
  const char *url;
  bool https, ipv6, port_given;
  unsigned port;
  const char *host, *authority, *path;
};

static void test_good(void **state)
{
  static const struct good t[] = {
      {"http://127.0.0.1:7480", false, false, true, 7480, "127.0.0.1",
       "127.0.0.1:7480", ""},
      {"https://s3.example.com", true, false, false, 443, "s3.example.com",
       "s3.example.com", ""},
      {"http://s3.example.com/", false, false, false, 80, "s3.example.com",
       "s3.example.com", ""},
      {"HTTPS://S3.Example.com:9000", true, false, true, 9000,
       "S3.Example.com", "S3.Example.com:9000", ""},
      {"HttP://h", false, false, false, 80, "h", "h", ""},
      {"http://h:1/base", false, false, true, 1, "h", "h:1", "/base"},
      {"http://h:65535/a/b//", false, false, true, 65535, "h", "h:65535",
       "/a/b"},
      {"http://[::1]:7480", false, true, true, 7480, "::1", "[::1]:7480", ""},
      {"https://[2001:db8::5]/p", true, true, false, 443, "2001:db8::5",
       "[2001:db8::5]", "/p"},
      {"http://localhost:8000/", false, false, true, 8000, "localhost",
       "localhost:8000", ""},
      /* an empty port is the scheme's (as curl has it); a zone is kept */
      {"http://h:", false, false, false, 80, "h", "h:", ""},
      {"https://h:/p", true, false, false, 443, "h", "h:", "/p"},
      {"http://[fe80::1%25eth0]:9000", false, true, true, 9000,
       "fe80::1%25eth0", "[fe80::1%25eth0]:9000", ""},
  };
  struct endpoint ep;
  const char *why;

  (void)state;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    why = "unset";
    assert_int_equal(endpoint_parse(t[i].url, &ep, &why), 0);
    assert_null(why);
    assert_int_equal(ep.https, t[i].https);
    assert_int_equal(ep.ipv6, t[i].ipv6);
    assert_int_equal(ep.port_given, t[i].port_given);
    assert_int_equal(ep.port, t[i].port);
    assert_string_equal(ep.host, t[i].host);
    assert_int_equal(ep.authority_len, strlen(t[i].authority));
    assert_memory_equal(ep.authority, t[i].authority, ep.authority_len);
    assert_int_equal(ep.path_len, strlen(t[i].path));
    assert_memory_equal(ep.path, t[i].path, ep.path_len);
    assert_true(ep.path >= t[i].url && ep.authority > t[i].url);
  }
}

static void test_bad(void **state)
{
  static const struct {
    const char *url, *why;
  } t[] = {
      {"ftp://x", "is not an http:// or https:// URL"},
      {"10.0.0.5:7480", "is not an http:// or https:// URL"},
      {"http:/x", "is not an http:// or https:// URL"},
      {"", "is not an http:// or https:// URL"},
      {"http://", "has no host name"},
      {"http:///x", "has no host name"},
      {"https://?q", "has no host name"},
      {"http://:80", "has no host name"},
      {"http://a b", "contains spaces or control characters"},
      {"http://a\nb", "contains spaces or control characters"},
      {"http://h/a b", "contains spaces or control characters"},
      {"http://[::1", "has an IPv6 host without its closing ']'"},
      {"http://[]:80", "has no host name"},
      {"http://[not-v6]", "has a bad host name"},
      {"http://[::1]x", "has a bad host name"},
      {"http://h]", "has a bad host name"},
      {"http://u:p@h", "has a user name (user@host)"},
      {"http://u@h", "has a user name (user@host)"},
      {"http://h:x", "has a bad port (1 to 65535)"},
      {"http://[fe80::g%25eth0]", "has a bad host name"},
      {"http://h:0", "has a bad port (1 to 65535)"},
      {"http://h:65536", "has a bad port (1 to 65535)"},
      {"http://h:123456", "has a bad port (1 to 65535)"},
      {"http://h:80x", "has a bad host name"},
      {"http://h:80:81", "has a bad host name"},
      {"http://h?x=1", "has a query or fragment (? or #)"},
      {"http://h#f", "has a query or fragment (? or #)"},
      {"http://h/p?x", "has a query or fragment (? or #)"},
  };
  struct endpoint ep;
  const char *why;

  (void)state;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    why = NULL;
    assert_int_equal(endpoint_parse(t[i].url, &ep, &why), -EINVAL);
    assert_non_null(why);
    if (strcmp(why, t[i].why) != 0)
      fail_msg("'%s': got '%s', want '%s'", t[i].url, why, t[i].why);
  }
  assert_int_equal(endpoint_parse(NULL, &ep, &why), -EINVAL);
  assert_non_null(why);
}

static void test_too_long(void **state)
{
  char url[ENDPOINT_HOST_MAX + 32] = "http://";
  struct endpoint ep;
  const char *why;

  (void)state;
  memset(url + 7, 'a', ENDPOINT_HOST_MAX);
  url[7 + ENDPOINT_HOST_MAX] = '\0';
  assert_int_equal(endpoint_parse(url, &ep, &why), -EINVAL);
  assert_string_equal(why, "has a host name that is too long");
  url[7 + ENDPOINT_HOST_MAX - 1] = '\0';
  assert_int_equal(endpoint_parse(url, &ep, &why), 0);
}

static void test_loopback(void **state)
{
  static const struct {
    const char *url;
    bool local;
  } t[] = {
      {"http://127.0.0.1:7480", true}, {"http://127.9.8.7", true},
      {"HTTP://LocalHost/", true},     {"http://[::1]:7480", true},
      {"https://10.0.0.5", false},     {"http://128.0.0.1", false},
      {"http://[2001:db8::1]", false}, {"http://s3.example.com", false},
      {"http://localhost.example", false},
  };
  struct endpoint ep;
  const char *why;

  (void)state;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    assert_int_equal(endpoint_parse(t[i].url, &ep, &why), 0);
    if (endpoint_is_loopback(&ep) != t[i].local)
      fail_msg("'%s': loopback should be %d", t[i].url, t[i].local);
  }
}

/* a list: its URLs in order, empty items skipped, then the end */
static void test_list(void **state)
{
  const char *p = ";;http://a:1;;https://b/x;", *url;
  size_t len;

  (void)state;
  assert_true(endpoint_list_next(&p, &url, &len));
  assert_int_equal(len, strlen("http://a:1"));
  assert_memory_equal(url, "http://a:1", len);
  assert_true(endpoint_list_next(&p, &url, &len));
  assert_int_equal(len, strlen("https://b/x"));
  assert_memory_equal(url, "https://b/x", len);
  assert_false(endpoint_list_next(&p, &url, &len));
  assert_false(endpoint_list_next(&p, &url, &len));
  p = "";
  assert_false(endpoint_list_next(&p, &url, &len));
}

/* Lists of one service's servers meet in a URL: reordered, one taken out
   or added, the same service. */
static void test_lists_meet(void **state)
{
  (void)state;
  assert_true(endpoint_lists_meet("http://a:1", "http://a:1"));
  assert_true(endpoint_lists_meet("http://a:1;http://b:1",
                                  "http://b:1;http://a:1"));
  assert_true(endpoint_lists_meet("http://a:1;http://b:1", "http://b:1"));
  assert_true(endpoint_lists_meet("http://b:1/", "HTTP://B:1;http://c:1"));
  assert_true(endpoint_lists_meet("http://h", "http://h:80"));
  assert_false(endpoint_lists_meet("http://h/A", "http://h/a"));
  assert_false(endpoint_lists_meet("http://h", "https://h:80"));
  assert_false(endpoint_lists_meet("http://a:1;http://b:1", "http://c:1"));
  assert_false(endpoint_lists_meet("http://a:1", "http://a:10"));
  assert_false(endpoint_lists_meet("", "http://a:1"));
  assert_false(endpoint_lists_meet(NULL, "http://a:1"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_good),
      cmocka_unit_test(test_bad),
      cmocka_unit_test(test_too_long),
      cmocka_unit_test(test_loopback),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_lists_meet),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
