/*
 * test_rdx_dc_open: the DC transport through its interfaces, both halves.
 *
 * Here (no mlx5 device): opening the client fails with -ENODEV and one
 * line ("no RDMA device", or "no mlx5 device (devices here: ...)" on a
 * host with another verbs device), through rdx_transport_open and directly;
 * a wrong name or a bad spec is refused the same way as rc's; a server
 * declines dc tokens (-EOPNOTSUPP, "dc tokens: ...") without moving a
 * byte; the server's configuration is checked.
 *
 * With an mlx5 device (never run yet: no such host at hand),
 * test_loopback runs both halves in this process: a DC transport's token
 * for a registered buffer (81 characters, its DCT number), then a GET
 * (RDMA WRITE into the client) and a PUT (RDMA READ out of it) through
 * rdx_serve, every byte checked. Without one it is skipped.
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
#include <sys/mman.h>

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "rdma/rdx_dc_client.h"
#include "rdma/rdx_dc_server.h"
#include "rdma/rdx_i.h"
#include "rdma/rdx_server.h"
#include "rdma/rdx_transport.h"

/* Verbs devices here, and whether one is mlx5. */
static int devices(bool *mlx5)
{
  int n = 0;
  struct ibv_device **l = ibv_get_device_list(&n);

  *mlx5 = false;
  for (int i = 0; l && i < n; i++)
    if (mlx5dv_is_supported(l[i]))
      *mlx5 = true;
  if (l)
    ibv_free_device_list(l);
  return l ? n : 0;
}

static void assert_one_line(const char *s)
{
  assert_true(s[0] != '\0');
  assert_null(strchr(s, '\n'));
}

static void test_client_refused(void **state)
{
  static const char *const wrong[] = {"no_such_dev9"};
  static const char *const bad[] = {"bad name"};
  struct rdx_rc_dev_cfg cfg = {wrong, 1, -1, 0};
  struct rdx_params p = {.devices = "no_such_dev9"};
  struct rdx_transport *t = (void *)1;
  char err[RDX_ERR_MAX];
  bool mlx5;
  int n = devices(&mlx5), rc;

  if (mlx5)
    skip();
  /* the generic open: sysfs first, so no provider is loaded without RDMA */
  rc = rdx_transport_open(RDX_TRANSPORT_DC, NULL, &t, err, sizeof(err));
  assert_int_equal(rc, -ENODEV);
  assert_null(t);
  assert_one_line(err);
  print_message("  rdx_transport_open(dc): %s\n", err);
  if (n == 0)
    assert_non_null(strstr(err, "no RDMA device"));
  else
    assert_non_null(strstr(err, "dc: no mlx5 device (devices here: "));

  /* directly: libibverbs' own answer */
  t = (void *)1;
  rc = rdx_dc_transport_open(NULL, 0, &t, err, sizeof(err));
  assert_int_equal(rc, -ENODEV);
  assert_null(t);
  assert_one_line(err);
  print_message("  rdx_dc_transport_open: %s\n", err);
  assert_non_null(strstr(err, n == 0 ? "dc: no RDMA device"
                                     : "dc: no mlx5 device (devices here: "));

  /* a name that matches nothing; a spec that is no name nor address */
  assert_int_equal(rdx_dc_transport_open(&cfg, 0, &t, err, sizeof(err)),
                   -ENODEV);
  assert_one_line(err);
  assert_int_equal(strncmp(err, "dc: ", 4), 0);
  assert_int_equal(rdx_dc_open(&p, &t, err, sizeof(err)), -ENODEV);
  assert_int_equal(strncmp(err, "dc: ", 4), 0);
  cfg.devices = bad;
  assert_int_equal(rdx_dc_transport_open(&cfg, 0, &t, err, sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "'bad name'"));
  assert_null(t);
  assert_int_equal(rdx_dc_transport_open(NULL, 0, NULL, err, sizeof(err)),
                   -EINVAL);
  assert_int_equal(rdx_dc_transport_dctn(NULL), 0);
}

static void test_server_declines(void **state)
{
  static const char dc[] = "000073967e5ff000:00001000:01f2e973:0000:007a03:1:"
                           "00000000000000000000ffff0f0f0fdf";
  struct rdx_req req = {.op = RDX_GET, .len = 4096, .peer_uid = -1,
                        .peer_gid = -1};
  struct rdx_server *s = NULL;
  struct rdx_token tok;
  char why[RDX_ERR_MAX];
  void *buf;
  bool mlx5;

  devices(&mlx5);
  if (mlx5)
    skip();
  assert_int_equal(rdx_server_create(&(struct rdx_server_cfg){65536, 2, 5},
                                     &s, why, sizeof(why)),
                   0);
  assert_int_equal(rdx_server_serves(s, RDX_DC, why, sizeof(why)),
                   -EOPNOTSUPP);
  assert_one_line(why);
  assert_int_equal(strncmp(why, "dc tokens: no ", 14), 0);
  print_message("  server: %s\n", why);
  assert_int_equal(rdx_token_parse(dc, sizeof(dc) - 1, &tok), 0);
  assert_int_equal(rdx_serve_check(s, &tok, &req, why, sizeof(why)),
                   -EOPNOTSUPP);
  buf = rdx_server_buf_alloc(s, 4096);
  assert_non_null(buf);
  memset(buf, 0x5a, 4096);
  assert_int_equal(rdx_serve(s, &tok, &req, 0, buf, 4096, why, sizeof(why)),
                   -EOPNOTSUPP);
  rdx_server_buf_free(s, buf);
  rdx_server_destroy(s);
}

static void test_server_cfg(void **state)
{
  static const char *const many[] = {"a", "b", "c", "d", "e", "f", "g",
                                     "h", "i"};
  static const char *const longname[] = {
      "a123456789012345678901234567890123456789012345678901234567890123"};
  static const char *const none[] = {NULL};
  struct rdx_rc_dev_cfg cfg = {many, 9, -1, 0};

  assert_int_equal(rdx_dc_server_set_cfg(&cfg, 0), -EINVAL);
  cfg = (struct rdx_rc_dev_cfg){longname, 1, -1, 0};
  assert_int_equal(rdx_dc_server_set_cfg(&cfg, 0), -EINVAL);
  cfg = (struct rdx_rc_dev_cfg){none, 1, -1, 0};
  assert_int_equal(rdx_dc_server_set_cfg(&cfg, 0), -EINVAL);
  cfg = (struct rdx_rc_dev_cfg){many, 2, 3, 1};
  assert_int_equal(rdx_dc_server_set_cfg(&cfg, 0x1234), 0);
  assert_int_equal(rdx_dc_server_set_cfg(NULL, 0), 0); /* the defaults */
}

/* ---- with an mlx5 device ------------------------------------------------ */

#define LEN (256 * 1024)
#define CHUNK (64 * 1024)

static void test_loopback(void **state)
{
  struct rdx_transport *t = NULL;
  struct rdx_server *s = NULL;
  struct rdx_region *r = NULL;
  struct rdx_token tok;
  struct rdx_req req = {.len = LEN, .peer_uid = -1, .peer_gid = -1};
  char err[RDX_ERR_MAX], text[RDX_TOKEN_MAX];
  uint8_t *client, *sbuf;
  bool mlx5;
  int n;

  devices(&mlx5);
  if (!mlx5)
    skip();
  client = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
  assert_true(client != MAP_FAILED);
  if (rdx_transport_open(RDX_TRANSPORT_DC, NULL, &t, err, sizeof(err)))
    fail_msg("dc open: %s", err);
  assert_int_equal(rdx_transport_kind(t), RDX_TRANSPORT_DC);
  assert_int_equal(rdx_register(t, client, LEN, 0, &r), 0);
  n = rdx_token_for(t, r, 0, LEN, RDX_GET, text, sizeof(text));
  assert_int_equal(n, RDX_DC_TOKEN_LEN);
  assert_int_equal(rdx_token_parse(text, (size_t)n, &tok), 0);
  assert_int_equal(tok.dc.dctn, rdx_dc_transport_dctn(t));
  assert_int_equal(tok.addr, (uint64_t)(uintptr_t)client);
  assert_int_equal(tok.len, LEN);

  if (rdx_server_create(&(struct rdx_server_cfg){CHUNK, 4, 30}, &s, err,
                        sizeof(err)))
    fail_msg("server: %s", err);
  if (rdx_server_serves(s, RDX_DC, err, sizeof(err)))
    fail_msg("server cannot serve dc: %s", err);
  sbuf = rdx_server_buf_alloc(s, CHUNK);
  assert_non_null(sbuf);

  /* GET: the server writes, chunk by chunk */
  memset(client, 0, LEN);
  req.op = RDX_GET;
  assert_int_equal(rdx_serve_check(s, &tok, &req, err, sizeof(err)), 0);
  for (size_t off = 0; off < LEN; off += CHUNK) {
    memset(sbuf, (int)(0x40 + off / CHUNK), CHUNK);
    if (rdx_serve(s, &tok, &req, off, sbuf, CHUNK, err, sizeof(err)))
      fail_msg("GET chunk at %zu: %s", off, err);
  }
  for (size_t i = 0; i < LEN; i++)
    assert_int_equal(client[i], 0x40 + i / CHUNK);

  /* PUT: the server reads */
  for (size_t i = 0; i < LEN; i++)
    client[i] = (uint8_t)(i * 7 + 1);
  req.op = RDX_PUT;
  for (size_t off = 0; off < LEN; off += CHUNK) {
    memset(sbuf, 0, CHUNK);
    if (rdx_serve(s, &tok, &req, off, sbuf, CHUNK, err, sizeof(err)))
      fail_msg("PUT chunk at %zu: %s", off, err);
    for (size_t i = 0; i < CHUNK; i++)
      assert_int_equal(sbuf[i], (uint8_t)((off + i) * 7 + 1));
  }

  /* a wrong rkey: refused by the client's HCA, the DCI replaced */
  tok.dc.rkey ^= 0x5a5a00;
  req.op = RDX_GET;
  assert_int_not_equal(rdx_serve(s, &tok, &req, 0, sbuf, CHUNK, err,
                                 sizeof(err)),
                       0);
  print_message("  wrong rkey: %s\n", err);
  tok.dc.rkey ^= 0x5a5a00;
  assert_int_equal(rdx_serve(s, &tok, &req, 0, sbuf, CHUNK, err, sizeof(err)),
                   0);

  rdx_server_buf_free(s, sbuf);
  rdx_server_destroy(s);
  rdx_unregister(r);
  rdx_transport_close(t);
  munmap(client, LEN);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_client_refused),
      cmocka_unit_test(test_server_declines),
      cmocka_unit_test(test_server_cfg),
      cmocka_unit_test(test_loopback),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
