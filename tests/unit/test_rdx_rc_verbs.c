/*
 * test_rdx_rc_verbs: what the RC transport decides without a device: device
 * specs, the GID chosen from a port's table, the port facts, the queue
 * pair's attributes at each step (the dialect's values), the checks on a
 * peer's token, PSNs; and that opening a device fails cleanly where there
 * is none (here: ibv_get_device_list returns NULL with ENOSYS, or an empty
 * list), or names what exists when the name is wrong (a soft-RoCE guest).
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

#include "rdma/rdx_rc_verbs.h"
#include "rdma/rdx_transport.h"

static void assert_one_line(const char *s)
{
  assert_true(s[0] != '\0');
  assert_null(strchr(s, '\n'));
}

static void test_spec(void **state)
{
  static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                 0, 0, 0xff, 0xff, 10, 0, 0, 5};
  struct rdx_rc_spec sp;

  assert_int_equal(rdx_rc_spec_parse("mlx5_0", &sp), 0);
  assert_false(sp.is_addr);
  assert_string_equal(sp.name, "mlx5_0");
  assert_int_equal(rdx_rc_spec_parse("rxe0", &sp), 0);
  assert_false(sp.is_addr);
  assert_int_equal(rdx_rc_spec_parse("10.0.0.5", &sp), 0);
  assert_true(sp.is_addr);
  assert_memory_equal(sp.gid, v4, 16);
  assert_int_equal(rdx_rc_spec_parse("fe80::1", &sp), 0);
  assert_true(sp.is_addr);
  assert_int_equal(sp.gid[0], 0xfe);
  assert_int_equal(sp.gid[1], 0x80);
  assert_int_equal(sp.gid[15], 1);

  assert_int_equal(rdx_rc_spec_parse("", &sp), -EINVAL);
  assert_int_equal(rdx_rc_spec_parse(NULL, &sp), -EINVAL);
  assert_int_equal(rdx_rc_spec_parse("mlx5 0", &sp), -EINVAL);
  assert_int_equal(rdx_rc_spec_parse("a/b", &sp), -EINVAL);
  assert_int_equal(rdx_rc_spec_parse(
                       "a123456789012345678901234567890123456789012345678901"
                       "234567890123",
                       &sp),
                   -EINVAL);
  assert_int_equal(rdx_rc_spec_parse("x", NULL), -EINVAL);
}

#define V1 IBV_GID_TYPE_ROCE_V1
#define V2 IBV_GID_TYPE_ROCE_V2
#define LL {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55}
#define M4 {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 5}
#define M4B {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 6}

static void test_gid_pick(void **state)
{
  /* the usual RoCE table: link-local v1, v2, then the IPv4 address v1, v2 */
  static const struct rdx_rc_gid_ent roce[] = {
      {true, V1, LL}, {true, V2, LL}, {true, V1, M4},
      {true, V2, M4}, {false, 0, {0}}, {true, V2, M4B},
  };
  static const struct rdx_rc_gid_ent v2only[] = {
      {false, 0, {0}}, {true, V1, LL}, {true, V2, LL},
  };
  static const struct rdx_rc_gid_ent ib[] = {
      {true, IBV_GID_TYPE_IB, LL},
  };
  static const struct rdx_rc_gid_ent none[] = {{false, 0, {0}}};
  static const uint8_t a5[16] = M4, a6[16] = M4B, a7[16] = {0, 0, 0, 0, 0, 0,
                                                           0, 0, 0, 0, 0xff,
                                                           0xff, 10, 0, 0, 7};
  char why[128];

  assert_true(rdx_rc_gid_v4mapped(a5));
  assert_false(rdx_rc_gid_v4mapped(roce[0].raw));

  /* default: the RoCE v2 IPv4-mapped entry (the first of them) */
  assert_int_equal(rdx_rc_gid_pick(roce, 6, -1, NULL, why, sizeof(why)), 3);
  /* no IPv4 address: the first v2; InfiniBand: the first valid */
  assert_int_equal(rdx_rc_gid_pick(v2only, 3, -1, NULL, why, sizeof(why)), 2);
  assert_int_equal(rdx_rc_gid_pick(ib, 1, -1, NULL, why, sizeof(why)), 0);
  assert_int_equal(rdx_rc_gid_pick(none, 1, -1, NULL, why, sizeof(why)),
                   -ENOENT);
  assert_non_null(strstr(why, "empty"));
  assert_int_equal(rdx_rc_gid_pick(roce, 0, -1, NULL, why, sizeof(why)),
                   -ENOENT);

  /* a configured index: taken if valid, whatever its type */
  assert_int_equal(rdx_rc_gid_pick(roce, 6, 1, NULL, why, sizeof(why)), 1);
  assert_int_equal(rdx_rc_gid_pick(roce, 6, 4, NULL, why, sizeof(why)),
                   -ENOENT);
  assert_int_equal(rdx_rc_gid_pick(roce, 6, 6, NULL, why, sizeof(why)),
                   -ENOENT);
  assert_non_null(strstr(why, "GID index 6"));

  /* an address: its entry, v2 before v1 */
  assert_int_equal(rdx_rc_gid_pick(roce, 6, -1, a5, why, sizeof(why)), 3);
  assert_int_equal(rdx_rc_gid_pick(roce, 3, -1, a5, why, sizeof(why)), 2);
  assert_int_equal(rdx_rc_gid_pick(roce, 6, -1, a6, why, sizeof(why)), 5);
  assert_int_equal(rdx_rc_gid_pick(roce, 6, -1, a7, why, sizeof(why)),
                   -ENOENT);
}

static void test_port_and_attrs(void **state)
{
  static const struct rdx_rc_qp_token peer = {
      .transport = 1,
      .qpn = 0x123456,
      .gid = M4B,
      .port = 1,
      .lid = 0x0102,
  };
  struct ibv_port_attr pa;
  struct rdx_rc_port p;
  struct ibv_qp_attr a;
  uint8_t gid[16] = M4;
  int mask;

  memset(&pa, 0, sizeof(pa));
  pa.link_layer = IBV_LINK_LAYER_ETHERNET;
  pa.active_mtu = IBV_MTU_1024;
  pa.lid = 7;
  rdx_rc_port_from(&pa, 1, 3, gid, &p);
  assert_true(p.roce);
  assert_int_equal(p.lid, 0);
  assert_int_equal(p.mtu, IBV_MTU_1024);
  assert_int_equal(p.gid_index, 3);
  assert_memory_equal(p.gid, gid, 16);
  pa.active_mtu = IBV_MTU_256; /* the dialect: at least 512 */
  rdx_rc_port_from(&pa, 1, 3, gid, &p);
  assert_int_equal(p.mtu, IBV_MTU_512);
  pa.link_layer = IBV_LINK_LAYER_INFINIBAND;
  pa.active_mtu = IBV_MTU_4096;
  rdx_rc_port_from(&pa, 2, 0, gid, &p);
  assert_false(p.roce);
  assert_int_equal(p.lid, 7);
  assert_int_equal(p.mtu, IBV_MTU_4096);
  assert_int_equal(p.port, 2);

  pa.link_layer = IBV_LINK_LAYER_ETHERNET;
  pa.active_mtu = IBV_MTU_1024;
  rdx_rc_port_from(&pa, 1, 3, gid, &p);

  rdx_rc_attr_init(&p, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_INIT);
  assert_int_equal(a.port_num, 1);
  assert_int_equal(a.qp_access_flags,
                   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                             IBV_QP_ACCESS_FLAGS);

  rdx_rc_attr_rtr(&p, &peer, 0xabcdef, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_RTR);
  assert_int_equal(a.path_mtu, IBV_MTU_1024);
  assert_int_equal(a.dest_qp_num, 0x123456);
  assert_int_equal(a.rq_psn, 0xabcdef);
  assert_int_equal(a.max_dest_rd_atomic, 1);
  assert_int_equal(a.min_rnr_timer, 12);
  assert_int_equal(a.ah_attr.is_global, 1);
  assert_memory_equal(a.ah_attr.grh.dgid.raw, peer.gid, 16);
  assert_int_equal(a.ah_attr.grh.sgid_index, 3);
  assert_int_equal(a.ah_attr.grh.hop_limit, 64);
  assert_int_equal(a.ah_attr.dlid, 0); /* RoCE: no LID */
  assert_int_equal(a.ah_attr.port_num, 1);
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                             IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                             IBV_QP_MAX_DEST_RD_ATOMIC |
                             IBV_QP_MIN_RNR_TIMER);
  p.roce = false;
  rdx_rc_attr_rtr(&p, &peer, 1, &a, &mask);
  assert_int_equal(a.ah_attr.dlid, 0x0102);

  rdx_rc_attr_rts(0x000042, &a, &mask);
  assert_int_equal(a.qp_state, IBV_QPS_RTS);
  assert_int_equal(a.sq_psn, 0x42);
  assert_int_equal(a.timeout, 14);
  assert_int_equal(a.retry_cnt, 7);
  assert_int_equal(a.rnr_retry, 7);
  assert_int_equal(a.max_rd_atomic, 1);
  assert_int_equal(mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                             IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

static void test_peer_check(void **state)
{
  struct rdx_rc_qp_token t = {.transport = 1, .qpn = 0x11, .gid = M4};
  char why[128];

  assert_int_equal(rdx_rc_peer_check(&t, 1, why, sizeof(why)), 0);
  assert_int_equal(rdx_rc_peer_check(&t, 0xffffff, why, sizeof(why)), 0);
  assert_int_equal(rdx_rc_peer_check(&t, 0, why, sizeof(why)), -EINVAL);
  assert_int_equal(rdx_rc_peer_check(&t, 0x1000000, why, sizeof(why)),
                   -EINVAL);
  assert_int_equal(rdx_rc_peer_check(NULL, 1, why, sizeof(why)), -EINVAL);
  t.transport = 0;
  assert_int_equal(rdx_rc_peer_check(&t, 1, why, sizeof(why)), -EINVAL);
  assert_non_null(strstr(why, "not RC"));
  t.transport = 1;
  t.qpn = 0;
  assert_int_equal(rdx_rc_peer_check(&t, 1, why, sizeof(why)), -EINVAL);
  t.qpn = 0x1000000;
  assert_int_equal(rdx_rc_peer_check(&t, 1, why, sizeof(why)), -EINVAL);
  t.qpn = 5;
  memset(t.gid, 0, 16);
  assert_int_equal(rdx_rc_peer_check(&t, 1, why, sizeof(why)), -EINVAL);
  assert_non_null(strstr(why, "GID"));
}

static void test_names_and_random(void **state)
{
  static const char *const names[] = {"mlx5_0", "rxe0"};
  uint8_t a[16] = {0}, b[16] = {0};
  char buf[64];

  rdx_rc_names(names, 2, buf, sizeof(buf));
  assert_string_equal(buf, "mlx5_0, rxe0");
  rdx_rc_names(NULL, 0, buf, sizeof(buf));
  assert_string_equal(buf, "none");
  rdx_rc_names(names, 2, buf, 5); /* truncated, terminated */
  assert_int_equal(strlen(buf), 4);

  for (int i = 0; i < 10000; i++) {
    uint32_t psn = rdx_rc_psn_random();
    assert_true(psn >= 1 && psn <= 0xfffffe);
  }
  assert_int_equal(rdx_rc_random(a, sizeof(a)), 0);
  assert_int_equal(rdx_rc_random(b, sizeof(b)), 0);
  assert_memory_not_equal(a, b, 16);
}

/* No device here (NULL list or an empty one): -ENODEV and one line. With
   a device (the soft-RoCE guest): a wrong name names what exists. */
static void test_dev_open(void **state)
{
  static const char *const wrong[] = {"no_such_dev9"};
  static const char *const bad[] = {"bad name"};
  static const char *const many[] = {"a", "b", "c", "d", "e", "f", "g",
                                     "h", "i"};
  struct rdx_rc_dev_cfg cfg = {wrong, 1, -1, 0};
  struct rdx_rc_dev d;
  char err[RDX_ERR_MAX];
  int n = 0, rc;
  struct ibv_device **list = ibv_get_device_list(&n);
  bool devices = list && n > 0;

  if (list)
    ibv_free_device_list(list);
  rc = rdx_rc_dev_open(&cfg, "rc", &d, err, sizeof(err));
  assert_int_equal(rc, -ENODEV);
  assert_null(d.ctx);
  assert_one_line(err);
  print_message("  %s\n", err);
  if (devices)
    assert_non_null(strstr(err, "devices here: "));
  else
    assert_non_null(strstr(err, "rc: no RDMA device"));

  cfg.devices = bad;
  assert_int_equal(rdx_rc_dev_open(&cfg, "rc", &d, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "'bad name'"));
  cfg.devices = many;
  cfg.ndevices = 9;
  assert_int_equal(rdx_rc_dev_open(&cfg, "rc", &d, err, sizeof(err)), -EINVAL);

  if (!devices) {
    rc = rdx_rc_dev_open(NULL, "rc", &d, err, sizeof(err));
    assert_int_equal(rc, -ENODEV);
    assert_one_line(err);
    print_message("  %s\n", err);
  }
  rdx_rc_dev_close(&d); /* a zeroed device: nothing */
  rdx_rc_dev_close(NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec),           cmocka_unit_test(test_gid_pick),
      cmocka_unit_test(test_port_and_attrs), cmocka_unit_test(test_peer_check),
      cmocka_unit_test(test_names_and_random), cmocka_unit_test(test_dev_open),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
