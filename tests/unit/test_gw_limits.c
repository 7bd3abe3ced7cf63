/*
 * test_gw_limits: per-peer counters. Peers: a local user by uid for a
 * loopback address, else the address (v4-mapped IPv6 as its IPv4).
 * Strangers are capped per peer while it holds no verified connection
 * and in all; remote addresses' connections are capped; upload slots per
 * peer; closes balance opens, a close of an unknown peer is ignored.
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

static struct gw_limits *make(unsigned addr, unsigned all, unsigned peer,
                              unsigned uploads)
{
  struct gw_limits *l =
      gw_limits_create(&(struct gw_limits_cfg){addr, all, peer, uploads});

  assert_non_null(l);
  return l;
}

static void test_peer_ids(void **state)
{
  struct sockaddr_in a = v4("10.0.0.1"), lo = v4("127.0.0.1"),
                     lo2 = v4("127.1.2.3");
  struct sockaddr_in6 a6 = v6("::ffff:10.0.0.1"), lo6 = v6("::1"),
                      c6 = v6("2001:db8::1");
  struct gw_peer_id p, q;

  (void)state;
  p = gw_peer_id_of(SA(a), 5), q = gw_peer_id_of(SA(a6), 7);
  assert_memory_equal(&p, &q, sizeof(p)); /* an address: the uid ignored */
  p = gw_peer_id_of(SA(lo), 1000), q = gw_peer_id_of(SA(lo6), 1000);
  assert_memory_equal(&p, &q, sizeof(p)); /* loopback: the uid only */
  q = gw_peer_id_of(SA(lo2), 1000);
  assert_memory_equal(&p, &q, sizeof(p));
  q = gw_peer_id_of(SA(lo), 1001);
  assert_memory_not_equal(&p, &q, sizeof(p));
  q = gw_peer_id_of(SA(lo), 1000 + (1ll << 32)); /* all 64 bits count */
  assert_memory_not_equal(&p, &q, sizeof(p));
  p = gw_peer_id_of(SA(c6), -1), q = gw_peer_id_of(SA(a), -1);
  assert_memory_not_equal(&p, &q, sizeof(p));
}

/* A remote address: its connections capped, verified or not. */
static void test_addr_conns(void **state)
{
  struct gw_limits *l = make(2, 0, 0, 0);
  struct sockaddr_in a = v4("10.0.0.1"), b = v4("10.0.0.2");
  struct sockaddr_in6 a6 = v6("::ffff:10.0.0.1");
  struct gw_peer_id pa = gw_peer_id_of(SA(a), -1),
                    pb = gw_peer_id_of(SA(b), -1);

  (void)state;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(gw_limits_precheck(l, SA(a)), GW_ADMIT);
    assert_int_equal(gw_limits_open(l, &pa), GW_ADMIT);
  }
  gw_limits_verified(l, &pa); /* verified ones count too */
  assert_int_equal(gw_limits_precheck(l, SA(a)), GW_REFUSE_ADDR);
  assert_int_equal(gw_limits_precheck(l, SA(a6)), GW_REFUSE_ADDR);
  assert_int_equal(gw_limits_open(l, &pa), GW_REFUSE_ADDR);
  assert_int_equal(gw_limits_open(l, &pb), GW_ADMIT);
  gw_limits_close(l, &pa, true);
  assert_int_equal(gw_limits_open(l, &pa), GW_ADMIT);
  gw_limits_close(l, &pa, false);
  gw_limits_close(l, &pa, false);
  gw_limits_close(l, &pa, false); /* one too many: ignored */
  gw_limits_close(l, &pb, false);
  assert_int_equal(gw_limits_strangers(l), 0);
  gw_limits_destroy(l);
}

/* Strangers of one local user: capped while it holds no verified
   connection; other users untouched; loopback has no address cap. */
static void test_peer_strangers(void **state)
{
  struct gw_limits *l = make(1, 0, 3, 0);
  struct sockaddr_in lo = v4("127.0.0.1");
  struct gw_peer_id evil = gw_peer_id_of(SA(lo), 65534),
                    good = gw_peer_id_of(SA(lo), 0),
                    unknown = gw_peer_id_of(SA(lo), -1);

  (void)state;
  for (int i = 0; i < 3; i++)
    assert_int_equal(gw_limits_open(l, &evil), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &evil), GW_REFUSE_PEER);
  assert_int_equal(gw_limits_precheck(l, SA(lo)), GW_ADMIT);
  for (int i = 0; i < 3; i++)
    assert_int_equal(gw_limits_open(l, &good), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &good), GW_REFUSE_PEER);
  /* a peer that proved its key may open more (all strangers permitting) */
  gw_limits_verified(l, &good);
  for (int i = 0; i < 10; i++)
    assert_int_equal(gw_limits_open(l, &good), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &evil), GW_REFUSE_PEER);
  for (int i = 0; i < 3; i++)
    assert_int_equal(gw_limits_open(l, &unknown), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &unknown), GW_REFUSE_PEER);
  /* a stranger that closes makes room for one */
  gw_limits_close(l, &evil, false);
  assert_int_equal(gw_limits_open(l, &evil), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &evil), GW_REFUSE_PEER);
  assert_int_equal(gw_limits_strangers(l), 3 + 2 + 10 + 3);
  /* the verified connection closes: good is a stranger peer again */
  gw_limits_close(l, &good, true);
  assert_int_equal(gw_limits_open(l, &good), GW_REFUSE_PEER);
  gw_limits_destroy(l); /* frees entries still counted */
}

/* Strangers in all: at the cap everyone's new connection is refused,
   from the address alone too; verified connections do not count. */
static void test_all_strangers(void **state)
{
  struct gw_limits *l = make(0, 4, 0, 0);
  struct sockaddr_in lo = v4("127.0.0.1"), a = v4("10.0.0.9");
  struct gw_peer_id p[4];

  (void)state;
  for (int i = 0; i < 4; i++) {
    p[i] = gw_peer_id_of(SA(lo), 100 + i);
    assert_int_equal(gw_limits_open(l, &p[i]), GW_ADMIT);
  }
  assert_int_equal(gw_limits_precheck(l, SA(lo)), GW_REFUSE_STRANGERS);
  assert_int_equal(gw_limits_precheck(l, SA(a)), GW_REFUSE_STRANGERS);
  assert_int_equal(gw_limits_open(l, &p[0]), GW_REFUSE_STRANGERS);
  gw_limits_verified(l, &p[1]);
  gw_limits_verified(l, &p[1]); /* no stranger left of p[1]: ignored */
  assert_int_equal(gw_limits_strangers(l), 3);
  assert_int_equal(gw_limits_precheck(l, SA(a)), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &p[0]), GW_ADMIT);
  assert_int_equal(gw_limits_open(l, &p[2]), GW_REFUSE_STRANGERS);
  for (int i = 0; i < 4; i++)
    gw_limits_close(l, &p[i], i == 1);
  gw_limits_close(l, &p[0], false);
  assert_int_equal(gw_limits_strangers(l), 0);
  gw_limits_destroy(l);
}

static void test_uploads(void **state)
{
  struct gw_limits *l = make(0, 0, 0, 3);
  struct sockaddr_in a = v4("10.0.0.1"), lo = v4("127.0.0.1");
  struct gw_peer_id pa = gw_peer_id_of(SA(a), -1),
                    u1 = gw_peer_id_of(SA(lo), 1000),
                    u2 = gw_peer_id_of(SA(lo), 1001);

  (void)state;
  for (int i = 0; i < 3; i++) {
    assert_true(gw_limits_upload_take(l, &pa));
    assert_true(gw_limits_upload_take(l, &u1));
  }
  assert_false(gw_limits_upload_take(l, &pa));
  assert_false(gw_limits_upload_take(l, &u1));
  assert_true(gw_limits_upload_take(l, &u2)); /* another local user */
  gw_limits_upload_done(l, &pa);
  assert_true(gw_limits_upload_take(l, &pa));
  assert_false(gw_limits_upload_take(l, &pa));
  for (int i = 0; i < 3; i++)
    gw_limits_upload_done(l, &pa);
  gw_limits_destroy(l); /* frees the entries still counted */

  l = make(0, 0, 0, 0); /* no limits */
  for (int i = 0; i < 100; i++)
    assert_true(gw_limits_upload_take(l, &pa));
  gw_limits_destroy(l);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_peer_ids),
      cmocka_unit_test(test_addr_conns),
      cmocka_unit_test(test_peer_strangers),
      cmocka_unit_test(test_all_strangers),
      cmocka_unit_test(test_uploads),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
