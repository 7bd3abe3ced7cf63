/*
 * test_gw_limits: per-address connection and upload counters: limits hold
 * per address, loopback is exempt from the connection limit only, closes
 * balance opens, v4-mapped IPv6 counts as its IPv4 address.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "gateway/gw_limits.h"

static struct sockaddr_in v4(const char *a)
{
  struct sockaddr_in s = {.sin_family = AF_INET};

  assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
  return s;
}

static struct sockaddr_in6 v6(const char *a)
{
  struct sockaddr_in6 s = {.sin6_family = AF_INET6};

  assert_int_equal(inet_pton(AF_INET6, a, &s.sin6_addr), 1);
  return s;
}

#define SA(x) ((const struct sockaddr *)&(x))

static void test_conns(void **state)
{
  struct gw_limits *l = gw_limits_create(2, 0);
  struct sockaddr_in a = v4("10.0.0.1"), b = v4("10.0.0.2"),
                     lo = v4("127.0.0.1");
  struct sockaddr_in6 a6 = v6("::ffff:10.0.0.1"), c6 = v6("2001:db8::1");

  assert_non_null(l);
  for (int i = 0; i < 2; i++) {
    assert_true(gw_limits_conn_ok(l, SA(a)));
    gw_limits_conn_open(l, SA(a));
  }
  assert_false(gw_limits_conn_ok(l, SA(a)));
  assert_false(gw_limits_conn_ok(l, SA(a6))); /* the same address */
  assert_true(gw_limits_conn_ok(l, SA(b)));
  assert_true(gw_limits_conn_ok(l, SA(c6)));
  for (int i = 0; i < 10; i++) { /* loopback: not limited */
    assert_true(gw_limits_conn_ok(l, SA(lo)));
    gw_limits_conn_open(l, SA(lo));
  }
  gw_limits_conn_close(l, SA(a6));
  assert_true(gw_limits_conn_ok(l, SA(a)));
  gw_limits_conn_close(l, SA(a));
  gw_limits_conn_close(l, SA(a)); /* one too many: ignored */
  gw_limits_conn_close(l, SA(b));
  assert_true(gw_limits_conn_ok(l, SA(a)));
  gw_limits_destroy(l);
}

static void test_uploads(void **state)
{
  struct gw_limits *l = gw_limits_create(0, 3);
  struct sockaddr_in a = v4("10.0.0.1"), lo = v4("127.0.0.1");

  assert_non_null(l);
  for (int i = 0; i < 3; i++) {
    assert_true(gw_limits_upload_take(l, SA(a)));
    assert_true(gw_limits_upload_take(l, SA(lo)));
  }
  assert_false(gw_limits_upload_take(l, SA(a)));
  assert_false(gw_limits_upload_take(l, SA(lo))); /* loopback too */
  gw_limits_upload_done(l, SA(a));
  assert_true(gw_limits_upload_take(l, SA(a)));
  assert_false(gw_limits_upload_take(l, SA(a)));
  for (int i = 0; i < 3; i++)
    gw_limits_upload_done(l, SA(a));
  gw_limits_destroy(l); /* frees the loopback entry still counted */

  l = gw_limits_create(0, 0); /* no limits */
  for (int i = 0; i < 100; i++)
    assert_true(gw_limits_upload_take(l, SA(a)));
  gw_limits_destroy(l);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conns),
      cmocka_unit_test(test_uploads),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
