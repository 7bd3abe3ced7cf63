/*
 * test_gw_limits: per-peer counters. Peers: a local user by uid, else the
 * address (v4-mapped IPv6 as its IPv4, IPv6 by /64). Strangers are capped
 * per peer (more while it holds a verified connection, never for the
 * unknown uid) and in all, where a smaller peer's newcomer evicts the
 * largest's; remote addresses' connections are capped; upload slots per
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

static struct gw_peer_id local(int64_t uid)
{
  struct sockaddr_in lo = v4("127.0.0.1");

  return gw_peer_id_of(SA(lo), true, uid);
}

static struct gw_peer_id remote(const char *a)
{
  if (strchr(a, ':')) {
    struct sockaddr_in6 s = v6(a);
    return gw_peer_id_of(SA(s), false, -1);
  }
  struct sockaddr_in s = v4(a);
  return gw_peer_id_of(SA(s), false, -1);
}

/* gw_limits_open, no eviction expected. */
static enum gw_refusal open1(struct gw_limits *l, const struct gw_peer_id *p)
{
  struct gw_peer_id v;
  bool evict = true;
  enum gw_refusal why = gw_limits_open(l, p, &evict, &v);

  assert_false(evict);
  return why;
}

static void test_peer_ids(void **state)
{
  struct sockaddr_in a = v4("10.0.0.1"), lan = v4("192.168.7.7");
  struct sockaddr_in6 a6 = v6("::ffff:10.0.0.1");
  struct gw_peer_id p, q;

  (void)state;
  p = gw_peer_id_of(SA(a), false, 5), q = gw_peer_id_of(SA(a6), false, 7);
  assert_memory_equal(&p, &q, sizeof(p)); /* an address: the uid ignored */
  p = local(1000), q = gw_peer_id_of(SA(lan), true, 1000);
  assert_memory_equal(&p, &q, sizeof(p)); /* local: the uid, any address */
  q = local(1001);
  assert_memory_not_equal(&p, &q, sizeof(p));
  q = local(1000 + (1ll << 32)); /* all 64 bits count */
  assert_memory_not_equal(&p, &q, sizeof(p));
  /* IPv6: one peer per /64 (one host holds them all) */
  p = remote("2001:db8:1:2::1"), q = remote("2001:db8:1:2:ffff::9");
  assert_memory_equal(&p, &q, sizeof(p));
  q = remote("2001:db8:1:3::1");
  assert_memory_not_equal(&p, &q, sizeof(p));
  q = remote("10.0.0.1");
  assert_memory_not_equal(&p, &q, sizeof(p));
}

/* A remote address: its connections capped, verified or not. */
static void test_addr_conns(void **state)
{
  struct gw_limits *l = make(2, 0, 0, 0);
  struct sockaddr_in a = v4("10.0.0.1"), lo = v4("127.0.0.1");
  struct sockaddr_in6 a6 = v6("::ffff:10.0.0.1");
  struct gw_peer_id pa = remote("10.0.0.1"), pb = remote("10.0.0.2");

  (void)state;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(gw_limits_precheck(l, SA(a)), GW_ADMIT);
    assert_int_equal(open1(l, &pa), GW_ADMIT);
  }
  gw_limits_verified(l, &pa); /* verified ones count too */
  assert_int_equal(gw_limits_precheck(l, SA(a)), GW_REFUSE_ADDR);
  assert_int_equal(gw_limits_precheck(l, SA(a6)), GW_REFUSE_ADDR);
  assert_int_equal(gw_limits_precheck(l, SA(lo)), GW_ADMIT); /* later */
  assert_int_equal(open1(l, &pa), GW_REFUSE_ADDR);
  assert_int_equal(open1(l, &pb), GW_ADMIT);
  gw_limits_close(l, &pa, true);
  assert_int_equal(open1(l, &pa), GW_ADMIT);
  gw_limits_close(l, &pa, false);
  gw_limits_close(l, &pa, false);
  gw_limits_close(l, &pa, false); /* one too many: ignored */
  gw_limits_close(l, &pb, false);
  assert_int_equal(gw_limits_strangers(l), 0);
  gw_limits_destroy(l);
}

/* Strangers of one local user: its share, four times that while it holds
   a verified connection (never for the unknown uid); other users
   untouched; a local peer has no address cap. */
static void test_peer_strangers(void **state)
{
  struct gw_limits *l = make(1, 0, 3, 0);
  struct gw_peer_id evil = local(65534), good = local(0), unknown = local(-1);

  (void)state;
  for (int i = 0; i < 3; i++)
    assert_int_equal(open1(l, &evil), GW_ADMIT);
  assert_int_equal(open1(l, &evil), GW_REFUSE_PEER);
  for (int i = 0; i < 3; i++)
    assert_int_equal(open1(l, &good), GW_ADMIT);
  assert_int_equal(open1(l, &good), GW_REFUSE_PEER);
  /* a peer that proved its key: a pool opening at once, still bounded */
  gw_limits_verified(l, &good);
  for (int i = 0; i < 10; i++)
    assert_int_equal(open1(l, &good), GW_ADMIT);
  assert_int_equal(open1(l, &good), GW_REFUSE_PEER); /* 12 strangers */
  assert_int_equal(open1(l, &evil), GW_REFUSE_PEER);
  /* the unknown uid is one peer for all, never exempt */
  for (int i = 0; i < 3; i++)
    assert_int_equal(open1(l, &unknown), GW_ADMIT);
  gw_limits_verified(l, &unknown);
  assert_int_equal(open1(l, &unknown), GW_ADMIT);
  assert_int_equal(open1(l, &unknown), GW_REFUSE_PEER);
  /* a stranger that closes makes room for one */
  gw_limits_close(l, &evil, false);
  assert_int_equal(open1(l, &evil), GW_ADMIT);
  assert_int_equal(open1(l, &evil), GW_REFUSE_PEER);
  assert_int_equal(gw_limits_strangers(l), 3 + 2 + 10 + 3);
  /* the verified connection closes: good's share is 3 again */
  gw_limits_close(l, &good, true);
  assert_int_equal(open1(l, &good), GW_REFUSE_PEER);
  gw_limits_destroy(l); /* frees entries still counted */
}

/* Strangers in all: full, a newcomer whose peer holds fewer than the
   largest peer is admitted by evicting one of the largest's; peers at
   the largest's count are refused; verified connections do not count. */
static void test_all_strangers(void **state)
{
  struct gw_limits *l = make(0, 4, 0, 0);
  struct gw_peer_id a = local(100), b = local(101), c = remote("10.0.0.9"),
                    v;
  bool evict;

  (void)state;
  for (int i = 0; i < 3; i++)
    assert_int_equal(open1(l, &a), GW_ADMIT);
  assert_int_equal(open1(l, &b), GW_ADMIT);
  /* full (a 3, b 1): a newcomer of a evicts nobody, it is refused */
  assert_int_equal(open1(l, &a), GW_REFUSE_STRANGERS);
  /* c (0) is admitted at a's expense */
  assert_int_equal(gw_limits_open(l, &c, &evict, &v), GW_ADMIT);
  assert_true(evict);
  assert_memory_equal(&v, &a, sizeof(v));
  gw_limits_close(l, &a, false); /* the evicted one goes */
  /* a 2, b 1, c 1: b's second (2) is not fewer than a's 2: refused */
  assert_int_equal(open1(l, &b), GW_REFUSE_STRANGERS);
  assert_int_equal(open1(l, &c), GW_REFUSE_STRANGERS);
  /* a verified connection leaves the strangers: room for one */
  gw_limits_verified(l, &b);
  assert_int_equal(gw_limits_strangers(l), 3);
  assert_int_equal(open1(l, &b), GW_ADMIT);
  /* a fresh peer still gets in (a holds 2 > 1) */
  v = local(102);
  {
    struct gw_peer_id d = v, w;
    assert_int_equal(gw_limits_open(l, &d, &evict, &w), GW_ADMIT);
    assert_true(evict);
    assert_memory_equal(&w, &a, sizeof(w));
    gw_limits_close(l, &d, false);
  }
  gw_limits_close(l, &a, false);
  gw_limits_close(l, &a, false);
  gw_limits_close(l, &b, true);
  gw_limits_close(l, &b, false);
  gw_limits_close(l, &c, false);
  assert_int_equal(gw_limits_strangers(l), 0);
  gw_limits_destroy(l);
}

static void test_uploads(void **state)
{
  struct gw_limits *l = make(0, 0, 0, 3);
  struct gw_peer_id pa = remote("10.0.0.1"), u1 = local(1000),
                    u2 = local(1001);

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
