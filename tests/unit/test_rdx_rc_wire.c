/*
 * test_rdx_rc_wire: the RC connect step's header values.
 *
 * The QP token vector is built by hand from the layout elbencho documents
 * (tools/s3rdma/common/HipObjToken.h at 48264d19: transport u8, qpn u32,
 * gid[16], rkey u32, addr u64, len u64, port u8, lid u16, little-endian,
 * "%02x" per byte); the server's reply token carries transport 1, qpn, gid
 * and port only (RcTokenTransport.cpp handleConnect). Every parse reads a
 * heap copy of exactly n bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "rdma/rdx_rc_wire.h"

/* transport 1, qpn 0x00123456, IPv4-mapped GID ::ffff:10.0.0.5, rkey
   0xaabbccdd, addr 0x00007f3a5c000000, len 0x400000, port 1, lid 0x0102 */
#define QP_EX                                                                  \
  "01"                                 /* transport */                         \
  "56341200"                           /* qpn, little-endian */                \
  "00000000000000000000ffff0a000005"   /* gid */                               \
  "ddccbbaa"                           /* rkey */                              \
  "0000005c3a7f0000"                   /* addr */                              \
  "0000400000000000"                   /* len */                               \
  "01"                                 /* port */                              \
  "0201"                               /* lid */

static const struct rdx_rc_qp_token qp_ex = {
    .transport = 1,
    .qpn = 0x00123456,
    .gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 5},
    .rkey = 0xaabbccdd,
    .addr = 0x00007f3a5c000000ULL,
    .len = 0x400000,
    .port = 1,
    .lid = 0x0102,
};

static char *copy_n(const char *s, size_t n)
{
  char *c = malloc(n ? n : 1);

  assert_non_null(c);
  memcpy(c, s, n);
  return c;
}

static int qp_parse(const char *s, size_t n, struct rdx_rc_qp_token *t)
{
  char *c = copy_n(s, n);
  int rc = rdx_rc_qp_token_parse(c, n, t);

  free(c);
  return rc;
}

static void assert_qp_equal(const struct rdx_rc_qp_token *a,
                            const struct rdx_rc_qp_token *b)
{
  assert_int_equal(a->transport, b->transport);
  assert_int_equal(a->qpn, b->qpn);
  assert_memory_equal(a->gid, b->gid, 16);
  assert_int_equal(a->rkey, b->rkey);
  assert_true(a->addr == b->addr);
  assert_true(a->len == b->len);
  assert_int_equal(a->port, b->port);
  assert_int_equal(a->lid, b->lid);
}

static void assert_qp_zero(const struct rdx_rc_qp_token *t)
{
  static const struct rdx_rc_qp_token zero;

  assert_qp_equal(t, &zero);
}

static void test_qp_token(void **state)
{
  char buf[RDX_RC_QP_TOKEN_LEN + 1], up[RDX_RC_QP_TOKEN_LEN + 1];
  struct rdx_rc_qp_token t, max;

  (void)state;
  assert_int_equal(strlen(QP_EX), RDX_RC_QP_TOKEN_LEN);
  assert_int_equal(rdx_rc_qp_token_format(&qp_ex, buf, sizeof(buf)), 88);
  assert_string_equal(buf, QP_EX);
  assert_int_equal(qp_parse(QP_EX, 88, &t), 0);
  assert_qp_equal(&t, &qp_ex);
  /* elbencho's decoder is case-blind: so is ours */
  for (size_t i = 0; i <= 88; i++)
    up[i] = (char)(buf[i] >= 'a' && buf[i] <= 'f' ? buf[i] - 32 : buf[i]);
  assert_int_equal(qp_parse(up, 88, &t), 0);
  assert_qp_equal(&t, &qp_ex);
  /* every field at its maximum */
  memset(&max, 0xff, sizeof(max));
  assert_int_equal(rdx_rc_qp_token_format(&max, buf, sizeof(buf)), 88);
  for (size_t i = 0; i < 88; i++)
    assert_int_equal(buf[i], 'f');
  assert_int_equal(qp_parse(buf, 88, &t), 0);
  assert_qp_equal(&t, &max);
  /* transport 0 parses (the connect step refuses it, not the codec) */
  memcpy(buf, QP_EX, 88);
  buf[1] = '0';
  assert_int_equal(qp_parse(buf, 88, &t), 0);
  assert_int_equal(t.transport, RDX_RC_TRANSPORT_DC);
}

static void test_qp_token_bad(void **state)
{
  char buf[RDX_RC_QP_TOKEN_LEN + 2];
  struct rdx_rc_qp_token t;
  static const char bad[] = {'g', 'G', ':', ' ', '\0', '-', 'x', '\xff'};

  (void)state;
  /* every length but 88, including elbencho's ":<addr>:<size>" suffix */
  for (size_t n = 0; n <= sizeof(buf); n++) {
    if (n == 88)
      continue;
    memset(buf, '0', sizeof(buf));
    memset(&t, 0xa5, sizeof(t));
    assert_int_equal(qp_parse(buf, n, &t), -EINVAL);
    assert_qp_zero(&t);
  }
  assert_int_equal(qp_parse(QP_EX ":1", 90, &t), -EINVAL);
  /* a bad character at every position */
  for (size_t pos = 0; pos < 88; pos++)
    for (size_t k = 0; k < sizeof(bad); k++) {
      memcpy(buf, QP_EX, 88);
      buf[pos] = bad[k];
      memset(&t, 0xa5, sizeof(t));
      assert_int_equal(qp_parse(buf, 88, &t), -EINVAL);
      assert_qp_zero(&t);
    }
  assert_int_equal(rdx_rc_qp_token_parse(NULL, 88, &t), -EINVAL);
  assert_int_equal(rdx_rc_qp_token_parse(QP_EX, 88, NULL), -EINVAL);
  /* format: too small a buffer */
  for (size_t len = 0; len <= 88; len++) {
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(rdx_rc_qp_token_format(&qp_ex, buf, len), -ENOSPC);
    if (len)
      assert_int_equal(buf[0], '\0');
  }
  assert_int_equal(rdx_rc_qp_token_format(NULL, buf, sizeof(buf)), -EINVAL);
}

static void test_reply(void **state)
{
  char buf[RDX_RC_REPLY_LEN + 1];
  struct rdx_rc_qp_token t;
  char *c;

  (void)state;
  assert_int_equal(rdx_rc_reply_format(&qp_ex, buf, sizeof(buf)), 92);
  assert_string_equal(buf, "200:" QP_EX);
  c = copy_n(buf, 92);
  assert_int_equal(rdx_rc_reply_parse(c, 92, &t), 0);
  free(c);
  assert_qp_equal(&t, &qp_ex);
  static const char *const bad[] = {
      "200", "200:", "200 " QP_EX, "201:" QP_EX, "200:" QP_EX ":",
      "200:" QP_EX "0", " 200:" QP_EX, "200::" QP_EX, "501",
      "200:" QP_EX ":0000000000000000:0000000000000000", QP_EX,
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    size_t n = strlen(bad[i]);
    c = copy_n(bad[i], n);
    memset(&t, 0xa5, sizeof(t));
    if (rdx_rc_reply_parse(c, n, &t) != -EINVAL)
      fail_msg("accepted reply %s", bad[i]);
    assert_qp_zero(&t);
    free(c);
  }
  assert_int_equal(rdx_rc_reply_format(&qp_ex, buf, 92), -ENOSPC);
  assert_string_equal(buf, "");
}

static void test_psn(void **state)
{
  static const struct {
    const char *s;
    uint32_t v;
  } good[] = {
      {"000001", 1}, {"ffffff", 0xffffff}, {"FFFFFF", 0xffffff},
      {"1", 1},      {"abc", 0xabc},       {"00a0B0", 0xa0b0},
  };
  static const char *const bad[] = {
      "", "0", "000000", "1000000", "0000001", "-1", "+1", " 1", "1 ",
      "0x1", "g", "12345z", "1:",
  };
  char buf[8];
  uint32_t v;

  (void)state;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    char *c = copy_n(good[i].s, strlen(good[i].s));
    assert_int_equal(rdx_rc_psn_parse(c, strlen(good[i].s), &v), 0);
    assert_int_equal(v, good[i].v);
    free(c);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *c = copy_n(bad[i], strlen(bad[i]));
    v = 7;
    if (rdx_rc_psn_parse(c, strlen(bad[i]), &v) != -EINVAL)
      fail_msg("accepted PSN '%s'", bad[i]);
    assert_int_equal(v, 0);
    free(c);
  }
  assert_int_equal(rdx_rc_psn_format(1, buf, sizeof(buf)), 6);
  assert_string_equal(buf, "000001");
  assert_int_equal(rdx_rc_psn_format(0xabcdef, buf, sizeof(buf)), 6);
  assert_string_equal(buf, "abcdef");
  assert_int_equal(rdx_rc_psn_format(0, buf, sizeof(buf)), -EINVAL);
  assert_int_equal(rdx_rc_psn_format(0x1000000, buf, sizeof(buf)), -EINVAL);
  assert_string_equal(buf, "");
  assert_int_equal(rdx_rc_psn_format(1, buf, 6), -ENOSPC);
  /* every PSN round-trips */
  for (uint32_t p = 1; p <= RDX_RC_PSN_MAX; p += 4093) {
    assert_int_equal(rdx_rc_psn_format(p, buf, sizeof(buf)), 6);
    assert_int_equal(rdx_rc_psn_parse(buf, 6, &v), 0);
    assert_int_equal(v, p);
  }
}

static void test_session(void **state)
{
  static const uint8_t id[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
                                 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98,
                                 0x76, 0x54, 0x32, 0x10};
  static const char text[] = "0123456789abcdeffedcba9876543210";
  static const char *const bad[] = {
      "", "0123456789abcdeffedcba987654321",
      "0123456789abcdeffedcba98765432100",
      "0123456789ABCDEFFEDCBA9876543210", /* elbencho's ids are lowercase */
      "0123456789abcdeffedcba987654321g",
      " 123456789abcdeffedcba9876543210",
  };
  char buf[RDX_RC_SESSION_LEN + 1];
  uint8_t out[16];

  (void)state;
  assert_int_equal(rdx_rc_session_format(id, buf, sizeof(buf)), 32);
  assert_string_equal(buf, text);
  assert_int_equal(rdx_rc_session_parse(text, 32, out), 0);
  assert_memory_equal(out, id, 16);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *c = copy_n(bad[i], strlen(bad[i]));
    memset(out, 0xa5, sizeof(out));
    if (rdx_rc_session_parse(c, strlen(bad[i]), out) != -EINVAL)
      fail_msg("accepted session '%s'", bad[i]);
    for (size_t k = 0; k < 16; k++)
      assert_int_equal(out[k], 0);
    free(c);
  }
  assert_int_equal(rdx_rc_session_format(id, buf, 32), -ENOSPC);
  assert_int_equal(rdx_rc_session_format(NULL, buf, sizeof(buf)), -EINVAL);
}

/* The session in an object token is the header's, byte for byte. */
static void test_session_in_token(void **state)
{
  static const char tok[] =
      "rc:0123456789abcdeffedcba9876543210:00007f3a5c000000:00400000:"
      "0001a2b3";
  struct rdx_token t;
  uint8_t id[16];

  (void)state;
  assert_int_equal(rdx_token_parse(tok, strlen(tok), &t), 0);
  assert_int_equal(rdx_rc_session_parse(tok + 3, 32, id), 0);
  assert_memory_equal(t.rc.session, id, 16);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qp_token),   cmocka_unit_test(test_qp_token_bad),
      cmocka_unit_test(test_reply),      cmocka_unit_test(test_psn),
      cmocka_unit_test(test_session),    cmocka_unit_test(test_session_in_token),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
