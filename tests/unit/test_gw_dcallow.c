/*
 * test_gw_dcallow: the DC target rule (--rdma-dc-targets). peer: the
 * token's GID is the client's own address (IPv4-mapped for IPv4; from
 * loopback an address of this host), no GID refused; a list: IPv4 and
 * IPv6 prefixes for GIDs, LID ranges for tokens without one; any: all.
 * Bad specs are refused with the entry named.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "gateway/gw_dcallow.h"

static struct sockaddr_storage client(const char *a)
{
  struct sockaddr_storage ss;

  memset(&ss, 0, sizeof(ss));
  if (strchr(a, ':')) {
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
    s->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, a, &s->sin6_addr), 1);
  } else {
    struct sockaddr_in *s = (struct sockaddr_in *)&ss;
    s->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, a, &s->sin_addr), 1);
  }
  return ss;
}

/* A DC target: gid an IPv6 text (an IPv4 one as its mapped form), or
   NULL: none, by LID. */
static struct rdx_dc target(const char *gid, uint16_t lid)
{
  struct rdx_dc dc = {.rkey = 7, .lid = lid, .dctn = 0x1234};
  char buf[64];

  if (gid) {
    snprintf(buf, sizeof(buf), "%s%s", strchr(gid, ':') ? "" : "::ffff:", gid);
    assert_int_equal(inet_pton(AF_INET6, buf, dc.gid), 1);
    dc.has_gid = true;
  }
  return dc;
}

static struct gw_dcallow *parse_ok(const char *spec)
{
  struct gw_dcallow *a = NULL;
  char err[256] = "";

  assert_int_equal(gw_dcallow_parse(spec, &a, err, sizeof(err)), 0);
  assert_non_null(a);
  return a;
}

static int check(const struct gw_dcallow *a, const char *from, const char *gid,
                 uint16_t lid)
{
  struct sockaddr_storage c = client(from);
  struct rdx_dc dc = target(gid, lid);
  char why[256] = "";
  int rc = gw_dcallow_check(a, &dc, (struct sockaddr *)&c, why, sizeof(why));

  if (rc) /* the refusal says which rule, never an address */
    assert_non_null(strstr(why, "dc"));
  if (rc)
    assert_null(strstr(why, from));
  return rc;
}

static void test_peer(void **state)
{
  struct gw_dcallow *a = parse_ok(NULL), *b = parse_ok("peer");

  (void)state;
  assert_false(gw_dcallow_is_any(a));
  for (int i = 0; i < 2; i++) {
    struct gw_dcallow *x = i ? b : a;
    assert_int_equal(check(x, "10.1.2.3", "10.1.2.3", 0), 0);
    assert_int_equal(check(x, "10.1.2.3", "10.1.2.4", 0), -EACCES);
    assert_int_equal(check(x, "10.1.2.3", "192.0.2.1", 0), -EACCES);
    assert_int_equal(check(x, "10.1.2.3", NULL, 5), -EACCES); /* no GID */
    /* InfiniBand: the LID routes the RDMA whatever the GID says */
    assert_int_equal(check(x, "10.1.2.3", "10.1.2.3", 5), -EACCES);
    assert_int_equal(check(x, "::ffff:10.1.2.3", "10.1.2.3", 0), 0);
    assert_int_equal(check(x, "2001:db8::5", "2001:db8::5", 0), 0);
    assert_int_equal(check(x, "2001:db8::5", "2001:db8::6", 0), -EACCES);
    /* from loopback: an address of this host (lo has 127.0.0.1), never
       one it does not have */
    assert_int_equal(check(x, "127.0.0.1", "127.0.0.1", 0), 0);
    assert_int_equal(check(x, "127.0.0.1", "192.0.2.77", 0), -EACCES);
    assert_int_equal(check(x, "::1", "192.0.2.77", 0), -EACCES);
  }
  gw_dcallow_free(a);
  gw_dcallow_free(b);
}

static void test_list(void **state)
{
  struct gw_dcallow *a =
      parse_ok("10.0.0.0/24,fd00:1::/64,lid:0x10-0x20,192.0.2.9,lid:7");

  (void)state;
  assert_int_equal(check(a, "198.51.100.1", "10.0.0.200", 0), 0);
  assert_int_equal(check(a, "198.51.100.1", "10.0.1.1", 0), -EACCES);
  assert_int_equal(check(a, "198.51.100.1", "fd00:1::abcd", 0), 0);
  assert_int_equal(check(a, "198.51.100.1", "fd00:2::1", 0), -EACCES);
  assert_int_equal(check(a, "198.51.100.1", "192.0.2.9", 0), 0);
  assert_int_equal(check(a, "198.51.100.1", "192.0.2.10", 0), -EACCES);
  assert_int_equal(check(a, "198.51.100.1", NULL, 0x10), 0);
  assert_int_equal(check(a, "198.51.100.1", NULL, 0x20), 0);
  assert_int_equal(check(a, "198.51.100.1", NULL, 0x21), -EACCES);
  assert_int_equal(check(a, "198.51.100.1", NULL, 7), 0);
  assert_int_equal(check(a, "198.51.100.1", NULL, 8), -EACCES);
  /* every address the token gives must be listed: its GID and its LID */
  assert_int_equal(check(a, "198.51.100.1", "192.0.2.200", 7), -EACCES);
  assert_int_equal(check(a, "198.51.100.1", "10.0.0.5", 99), -EACCES);
  assert_int_equal(check(a, "198.51.100.1", "10.0.0.5", 7), 0);
  /* the client's own address counts for nothing under a list */
  assert_int_equal(check(a, "203.0.113.5", "203.0.113.5", 0), -EACCES);
  gw_dcallow_free(a);

  /* prefixes of odd lengths; an IPv4 /0 is every IPv4 GID only */
  a = parse_ok("10.0.0.128/25,0.0.0.0/0");
  assert_int_equal(check(a, "198.51.100.1", "1.2.3.4", 0), 0);
  assert_int_equal(check(a, "198.51.100.1", "2001:db8::1", 0), -EACCES);
  gw_dcallow_free(a);
  a = parse_ok("10.0.0.128/25");
  assert_int_equal(check(a, "198.51.100.1", "10.0.0.129", 0), 0);
  assert_int_equal(check(a, "198.51.100.1", "10.0.0.127", 0), -EACCES);
  gw_dcallow_free(a);
  a = parse_ok("10.0.0.77/24"); /* host bits ignored */
  assert_int_equal(check(a, "198.51.100.1", "10.0.0.3", 0), 0);
  gw_dcallow_free(a);
}

static void test_any(void **state)
{
  struct gw_dcallow *a = parse_ok("any");

  (void)state;
  assert_true(gw_dcallow_is_any(a));
  assert_int_equal(check(a, "10.1.2.3", "192.0.2.1", 0), 0);
  assert_int_equal(check(a, "10.1.2.3", NULL, 3), 0);
  gw_dcallow_free(a);
}

static void test_bad(void **state)
{
  static const struct {
    const char *spec, *named;
  } bad[] = {
      {"", "''"},
      {",", "','"},
      {"10.0.0.0/33", "'33'"},
      {"10.0.0.0/", "''"},
      {"fd00::/129", "'129'"},
      {"10.0.0.0/-1", "'-1'"},
      {"10.0.0.0/-0", "'-0'"},
      {"10.0.0.0/+8", "'+8'"},
      {"10.0.0.0/ 8", "' 8'"},
      {"10.0.0.0/0x8", "'0x8'"},
      {"lid: 5", "'lid: 5'"},
      {"lid:+5", "'lid:+5'"},
      {"lid:0", "'lid:0'"},
      {"lid:5-3", "'lid:5'"},
      {"lid:0x10000", "'lid:0x10000'"},
      {"lid:", "'lid:'"},
      {"lid:-4", "'lid:'"},
      {"10.0.0.0/24,host.example", "'host.example'"},
      {"peer,10.0.0.1", "'peer'"},
      {"300.1.1.1", "'300.1.1.1'"},
  };
  char spec[2048] = "";

  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct gw_dcallow *a = (struct gw_dcallow *)1;
    char err[256] = "";
    assert_int_equal(gw_dcallow_parse(bad[i].spec, &a, err, sizeof(err)),
                     -EINVAL);
    assert_null(a);
    if (!strstr(err, "--rdma-dc-targets") || !strstr(err, bad[i].named))
      fail_msg("'%s': message '%s' does not name %s", bad[i].spec, err,
               bad[i].named);
  }
  for (int i = 0; i < 65; i++) /* 65 entries: one too many */
    snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%s10.0.%d.0/24",
             i ? "," : "", i);
  {
    struct gw_dcallow *a = NULL;
    char err[256] = "";
    assert_int_equal(gw_dcallow_parse(spec, &a, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "64"));
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_peer),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_any),
      cmocka_unit_test(test_bad),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
