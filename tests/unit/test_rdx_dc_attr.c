/*
 * test_rdx_dc_attr: what the DC transport decides without a device, with
 * the values asserted: the access key's default, the DCT's and DCI's
 * creation attributes, every state transition's attributes and mask (the
 * DCT's exactly what the kernel's mlx5_ib_modify_dct requires: it takes no
 * optional bit), the address handle a DCI builds from a token's LID and
 * GID, the 81-character token a client makes (byte for byte, and through
 * rdx_token_parse and rdx_token_check), where a chunk lands for the 81-
 * and 115-character forms, the mlx5 device picked and the refusal line,
 * and completion errors as errnos.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "rdma/rdx_dc_attr.h"
#include "rdma/rdx_token.h"
#include "rdma/rdx_transport.h"

/* 15.15.15.223 as a RoCE v2 GID, and an InfiniBand link-local GID */
#define G4 {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0f, 0x0f, 0x0f, 0xdf}
#define GIB {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55}

static const struct rdx_rc_port roce = {
    .port = 1, .gid_index = 3, .gid = G4, .lid = 0, .mtu = IBV_MTU_1024,
    .roce = true};
static const struct rdx_rc_port ib = {
    .port = 2, .gid_index = 0, .gid = GIB, .lid = 7, .mtu = IBV_MTU_4096,
    .roce = false};

static void assert_one_line(const char *s)
{
  assert_true(s[0] != '\0');
  assert_null(strchr(s, '\n'));
}

static void test_access_key(void **state)
{
  assert_int_equal(RDX_DC_ACCESS_KEY_DEFAULT, 0xffeeddccu);
  assert_int_equal(rdx_dc_access_key(0), 0xffeeddccu);
  assert_int_equal(rdx_dc_access_key(1), 1);
  assert_int_equal(rdx_dc_access_key(0x12345678), 0x12345678);
}

static void test_init_attrs(void **state)
{
  int pd_, cq_, srq_;
  struct ibv_pd *pd = (struct ibv_pd *)&pd_;
  struct ibv_cq *cq = (struct ibv_cq *)&cq_;
  struct ibv_srq *srq = (struct ibv_srq *)&srq_;
  struct ibv_qp_init_attr_ex ia;
  struct mlx5dv_qp_init_attr dv;

  memset(&ia, 0xa5, sizeof(ia)); /* every field written, none left over */
  memset(&dv, 0xa5, sizeof(dv));
  rdx_dc_dct_init_attr(pd, cq, srq, 0xffeeddcc, &ia, &dv);
  assert_int_equal(ia.qp_type, IBV_QPT_DRIVER);
  assert_ptr_equal(ia.pd, pd);
  assert_ptr_equal(ia.send_cq, cq);
  assert_ptr_equal(ia.recv_cq, cq);
  assert_ptr_equal(ia.srq, srq);
  assert_int_equal(ia.comp_mask, IBV_QP_INIT_ATTR_PD);
  assert_int_equal(ia.cap.max_send_wr, 0);
  assert_int_equal(ia.cap.max_recv_wr, 0);
  assert_int_equal(ia.send_ops_flags, 0);
  assert_int_equal(dv.comp_mask, MLX5DV_QP_INIT_ATTR_MASK_DC);
  assert_int_equal(dv.create_flags, 0);
  assert_int_equal(dv.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCT);
  assert_int_equal(dv.dc_init_attr.dct_access_key, 0xffeeddcc);

  memset(&ia, 0xa5, sizeof(ia));
  memset(&dv, 0xa5, sizeof(dv));
  rdx_dc_dci_init_attr(pd, cq, 4, &ia, &dv);
  assert_int_equal(ia.qp_type, IBV_QPT_DRIVER);
  assert_ptr_equal(ia.pd, pd);
  assert_ptr_equal(ia.send_cq, cq);
  assert_ptr_equal(ia.recv_cq, cq);
  assert_null(ia.srq);
  assert_int_equal(ia.sq_sig_all, 0);
  assert_int_equal(ia.cap.max_send_wr, 4);
  assert_int_equal(ia.cap.max_send_sge, 1);
  assert_int_equal(ia.cap.max_recv_wr, 0);
  assert_int_equal(ia.comp_mask,
                   IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
  assert_int_equal(ia.send_ops_flags,
                   IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ);
  assert_int_equal(dv.comp_mask, MLX5DV_QP_INIT_ATTR_MASK_DC);
  assert_int_equal(dv.dc_init_attr.dc_type, MLX5DV_DCTYPE_DCI);
  rdx_dc_dci_init_attr(pd, cq, 0, &ia, &dv);
  assert_int_equal(ia.cap.max_send_wr, 1);
}

static void test_dct_transitions(void **state)
{
  struct ibv_qp_attr a;
  int mask;

  memset(&a, 0xa5, sizeof(a));
  rdx_dc_attr_dct_init(&roce, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_INIT);
  assert_int_equal(a.pkey_index, 0);
  assert_int_equal(a.port_num, 1);
  assert_int_equal(a.qp_access_flags,
                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                             IBV_QP_ACCESS_FLAGS);

  memset(&a, 0xa5, sizeof(a));
  rdx_dc_attr_dct_rtr(&roce, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_RTR);
  assert_int_equal(a.path_mtu, IBV_MTU_1024);
  assert_int_equal(a.min_rnr_timer, 12);
  assert_int_equal(a.ah_attr.port_num, 1);
  assert_int_equal(a.ah_attr.is_global, 1);
  assert_int_equal(a.ah_attr.grh.sgid_index, 3);
  assert_int_equal(a.ah_attr.grh.hop_limit, 64);
  assert_int_equal(a.ah_attr.dlid, 0);
  assert_int_equal(a.dest_qp_num, 0); /* a target has no peer */
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER | IBV_QP_AV |
                             IBV_QP_PATH_MTU);

  rdx_dc_attr_dct_rtr(&ib, &a, &mask);
  assert_int_equal(a.path_mtu, IBV_MTU_4096);
  assert_int_equal(a.ah_attr.port_num, 2);
  assert_int_equal(a.ah_attr.grh.sgid_index, 0);
}

static void test_dci_transitions(void **state)
{
  struct ibv_qp_attr a;
  int mask;

  memset(&a, 0xa5, sizeof(a));
  rdx_dc_attr_dci_init(&ib, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_INIT);
  assert_int_equal(a.pkey_index, 0);
  assert_int_equal(a.port_num, 2);
  assert_int_equal(a.qp_access_flags, 0);
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);

  memset(&a, 0xa5, sizeof(a));
  rdx_dc_attr_dci_rtr(&roce, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_RTR);
  assert_int_equal(a.path_mtu, IBV_MTU_1024);
  assert_int_equal(a.ah_attr.port_num, 1);
  assert_int_equal(a.ah_attr.is_global, 1); /* RoCE: a GRH always */
  assert_int_equal(a.ah_attr.grh.sgid_index, 3);
  assert_int_equal(a.ah_attr.grh.hop_limit, 64);
  assert_int_equal(a.dest_qp_num, 0); /* the peer comes per work request */
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV);
  rdx_dc_attr_dci_rtr(&ib, &a, &mask);
  assert_int_equal(a.ah_attr.is_global, 0);
  assert_int_equal(a.ah_attr.port_num, 2);
  assert_int_equal(a.path_mtu, IBV_MTU_4096);

  memset(&a, 0xa5, sizeof(a));
  rdx_dc_attr_dci_rts(&a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_RTS);
  assert_int_equal(a.sq_psn, 0);
  assert_int_equal(a.timeout, 14);
  assert_int_equal(a.retry_cnt, 7);
  assert_int_equal(a.rnr_retry, 7);
  assert_int_equal(a.max_rd_atomic, 1);
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

static struct rdx_token dc_tok(bool has_gid, const uint8_t gid[16],
                               uint16_t lid)
{
  struct rdx_token t = {.kind = RDX_DC, .addr = 0x1000, .len = 4096};

  t.dc.rkey = 0x11;
  t.dc.dctn = 0x7a03;
  t.dc.lid = lid;
  t.dc.has_gid = has_gid;
  if (gid)
    memcpy(t.dc.gid, gid, 16);
  return t;
}

static void test_ah_attr(void **state)
{
  static const uint8_t g4[16] = G4, gib[16] = GIB, zero[16] = {0};
  struct ibv_ah_attr ah;
  struct rdx_token t;
  char why[RDX_ERR_MAX];

  /* RoCE: a global route to the token's GID from our GID index, no LID */
  t = dc_tok(true, g4, 0x55);
  assert_int_equal(rdx_dc_ah_attr(&roce, &t, &ah, why, sizeof(why)), 0);
  assert_int_equal(ah.is_global, 1);
  assert_memory_equal(ah.grh.dgid.raw, g4, 16);
  assert_int_equal(ah.grh.sgid_index, 3);
  assert_int_equal(ah.grh.hop_limit, 64);
  assert_int_equal(ah.dlid, 0);
  assert_int_equal(ah.port_num, 1);
  assert_int_equal(ah.sl, 0);

  /* RoCE without a GID cannot be reached */
  t = dc_tok(false, g4, 0x55);
  assert_int_equal(rdx_dc_ah_attr(&roce, &t, &ah, why, sizeof(why)), -EINVAL);
  assert_one_line(why);
  assert_non_null(strstr(why, "no GID"));
  assert_int_equal(ah.is_global, 0); /* zeroed on error */

  /* InfiniBand: the LID alone, or the LID and a global route */
  t = dc_tok(false, NULL, 0x55);
  assert_int_equal(rdx_dc_ah_attr(&ib, &t, &ah, why, sizeof(why)), 0);
  assert_int_equal(ah.is_global, 0);
  assert_int_equal(ah.dlid, 0x55);
  assert_int_equal(ah.port_num, 2);
  t = dc_tok(true, gib, 0x55);
  assert_int_equal(rdx_dc_ah_attr(&ib, &t, &ah, why, sizeof(why)), 0);
  assert_int_equal(ah.is_global, 1);
  assert_int_equal(ah.dlid, 0x55);
  assert_memory_equal(ah.grh.dgid.raw, gib, 16);
  assert_int_equal(ah.grh.sgid_index, 0);
  t = dc_tok(true, gib, 0);
  assert_int_equal(rdx_dc_ah_attr(&ib, &t, &ah, why, sizeof(why)), -EINVAL);
  assert_non_null(strstr(why, "LID 0"));

  /* a zero GID, another kind */
  t = dc_tok(true, zero, 0x55);
  assert_int_equal(rdx_dc_ah_attr(&ib, &t, &ah, why, sizeof(why)), -EINVAL);
  t.kind = RDX_RC;
  assert_int_equal(rdx_dc_ah_attr(&ib, &t, &ah, why, sizeof(why)), -EINVAL);
  assert_int_equal(rdx_dc_ah_attr(&ib, NULL, &ah, NULL, 0), -EINVAL);
}

/* The token a client makes: 81 characters, byte for byte the cuObject
   layout (minio-cpp PR 244's descriptor, rdx_token.h), parsed back equal,
   and accepted by the server half's check. */
static void test_token_of(void **state)
{
  static const char want[] = "000073967e5ff000:00400000:01f2e973:0000:007a03:1:"
                             "00000000000000000000ffff0f0f0fdf";
  struct rdx_token t, back;
  char buf[RDX_TOKEN_MAX], why[RDX_ERR_MAX];
  struct ibv_ah_attr ah;
  int n;

  assert_int_equal(sizeof(want) - 1, RDX_DC_TOKEN_LEN);
  assert_int_equal(rdx_dc_token_of(&roce, 0x7a03, 0x01f2e973,
                                   0x000073967e5ff000ull, 0x400000, &t),
                   0);
  assert_int_equal(t.kind, RDX_DC);
  assert_int_equal(t.op, RDX_OP_NONE);
  assert_false(t.dc.has_xfer);
  n = rdx_token_format(&t, buf, sizeof(buf));
  assert_int_equal(n, 81);
  assert_string_equal(buf, want);
  assert_int_equal(rdx_token_parse(buf, (size_t)n, &back), 0);
  assert_memory_equal(&back, &t, sizeof(t));
  assert_int_equal(rdx_token_check(&back, RDX_GET, 0x400000, why, sizeof(why)),
                   0);
  assert_int_equal(rdx_token_check(&back, RDX_PUT, 0x400000, why, sizeof(why)),
                   0);
  /* and the server's DCI reaches exactly this client from its own port */
  assert_int_equal(rdx_dc_ah_attr(&roce, &back, &ah, why, sizeof(why)), 0);
  assert_memory_equal(ah.grh.dgid.raw, roce.gid, 16);

  /* InfiniBand: the port's LID is in the token */
  assert_int_equal(rdx_dc_token_of(&ib, 0xffffff, 1, 0x1000, RDX_DC_LEN_MAX,
                                   &t),
                   0);
  n = rdx_token_format(&t, buf, sizeof(buf));
  assert_int_equal(n, 81);
  assert_string_equal(buf, "0000000000001000:ffff0000:00000001:0007:ffffff:1:"
                           "fe800000000000000211" "22fffe334455");
  assert_int_equal(rdx_token_parse(buf, (size_t)n, &back), 0);
  assert_int_equal(back.dc.lid, 7);
  assert_int_equal(back.dc.dctn, 0xffffff);
  assert_int_equal(back.len, RDX_DC_LEN_MAX);

  /* an InfiniBand port with no GID: has_gid 0, reached by LID */
  {
    struct rdx_rc_port p = ib;

    memset(p.gid, 0, 16);
    assert_int_equal(rdx_dc_token_of(&p, 5, 1, 0x1000, 10, &t), 0);
    assert_false(t.dc.has_gid);
    n = rdx_token_format(&t, buf, sizeof(buf));
    assert_int_equal(n, 81);
    assert_int_equal(buf[47], '0'); /* has_gid */
    /* and a RoCE port with no GID cannot be reached at all */
    p.roce = true;
    assert_int_equal(rdx_dc_token_of(&p, 5, 1, 0x1000, 10, &t), -EINVAL);
    assert_int_equal(t.kind, 0);
  }

  /* refused: no DCT number, over 24 bits, empty, too long, wrapping */
  assert_int_equal(rdx_dc_token_of(&roce, 0, 1, 0x1000, 10, &t), -EINVAL);
  assert_int_equal(rdx_dc_token_of(&roce, 0x1000000, 1, 0x1000, 10, &t),
                   -EINVAL);
  assert_int_equal(rdx_dc_token_of(&roce, 1, 1, 0x1000, 0, &t), -EINVAL);
  assert_int_equal(rdx_dc_token_of(&roce, 1, 1, 0x1000, RDX_DC_LEN_MAX + 1,
                                   &t),
                   -EINVAL);
  assert_int_equal(rdx_dc_token_of(&roce, 1, 1, UINT64_MAX - 5, 10, &t),
                   -EINVAL);
  assert_int_equal(t.kind, 0);
}

/* Where a chunk lands: the buffer, or the NIXL form's transfer range. */
static void test_remote_addr(void **state)
{
  static const char nixl[] =
      "0000000000100000:00100000:00000011:0000:007a03:1:"
      "00000000000000000000ffff0f0f0fdf"
      ":0000000000140000:0000000000001000";
  struct rdx_token t;

  assert_int_equal(sizeof(nixl) - 1, RDX_DC_NIXL_TOKEN_LEN);
  assert_int_equal(rdx_token_parse(nixl, sizeof(nixl) - 1, &t), 0);
  assert_true(t.dc.has_xfer);
  assert_int_equal(rdx_dc_remote_addr(&t, 0), 0x140000);
  assert_int_equal(rdx_dc_remote_addr(&t, 0x800), 0x140800);
  assert_int_equal(rdx_token_parse(nixl, 81, &t), 0);
  assert_false(t.dc.has_xfer);
  assert_int_equal(rdx_dc_remote_addr(&t, 0), 0x100000);
  assert_int_equal(rdx_dc_remote_addr(&t, 0x800), 0x100800);
}

static void test_pick(void **state)
{
  static const char *const one[] = {"rxe0"};
  static const char *const two[] = {"rxe0", "siw0"};
  static const char *const mixed[] = {"rxe0", "mlx5_1", "mlx5_2"};
  static const bool no[] = {false, false};
  static const bool yes[] = {false, true, true};
  char err[RDX_ERR_MAX];

  assert_int_equal(rdx_dc_pick(one, no, 0, "dc", err, sizeof(err)), -ENODEV);
  assert_string_equal(err, "dc: no RDMA device");
  assert_int_equal(rdx_dc_pick(one, no, 1, "dc", err, sizeof(err)), -ENODEV);
  assert_string_equal(err, "dc: no mlx5 device (devices here: rxe0)");
  assert_int_equal(rdx_dc_pick(two, no, 2, "dc tokens", err, sizeof(err)),
                   -ENODEV);
  assert_string_equal(err,
                      "dc tokens: no mlx5 device (devices here: rxe0, siw0)");
  assert_int_equal(rdx_dc_pick(mixed, yes, 3, "dc", err, sizeof(err)), 1);
  assert_int_equal(rdx_dc_pick(mixed, yes + 1, 2, "dc", err, sizeof(err)), 0);
}

static void test_wc_failed(void **state)
{
  char why[RDX_ERR_MAX];

  assert_int_equal(rdx_dc_wc_failed(IBV_WC_REM_ACCESS_ERR, why, sizeof(why)),
                   -EFAULT);
  assert_one_line(why);
  assert_non_null(strstr(why, "memory key"));
  assert_int_equal(rdx_dc_wc_failed(IBV_WC_REM_INV_REQ_ERR, why, sizeof(why)),
                   -EFAULT);
  assert_int_equal(rdx_dc_wc_failed(IBV_WC_RETRY_EXC_ERR, why, sizeof(why)),
                   -ECONNRESET);
  assert_non_null(strstr(why, "access key"));
  assert_int_equal(
      rdx_dc_wc_failed(IBV_WC_RNR_RETRY_EXC_ERR, why, sizeof(why)),
      -ECONNRESET);
  assert_int_equal(rdx_dc_wc_failed(IBV_WC_WR_FLUSH_ERR, why, sizeof(why)),
                   -EIO);
  assert_non_null(strstr(why, "flushed"));
  assert_int_equal(rdx_dc_wc_failed(IBV_WC_LOC_PROT_ERR, why, sizeof(why)),
                   -EIO);
  assert_one_line(why);
  assert_int_equal(strncmp(why, "dc: ", 4), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_access_key),
      cmocka_unit_test(test_init_attrs),
      cmocka_unit_test(test_dct_transitions),
      cmocka_unit_test(test_dci_transitions),
      cmocka_unit_test(test_ah_attr),
      cmocka_unit_test(test_token_of),
      cmocka_unit_test(test_remote_addr),
      cmocka_unit_test(test_pick),
      cmocka_unit_test(test_wc_failed),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
