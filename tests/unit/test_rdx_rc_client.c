/*
 * test_rdx_rc_client: the RC transport through its interfaces, both halves.
 *
 * Here (no RDMA device): opening the client fails with -ENODEV and one
 * line, a server declines rc tokens and connects with -EOPNOTSUPP and the
 * reason, the generic token path refuses RC without a session, and the
 * region's segment lookup the RC token uses is checked with cma.
 *
 * With a device (the soft-RoCE guest, tests/rdma-vm/): test_loopback runs
 * both halves in this process on one device: the connect step by hand
 * (client token and PSN -> rdx_rc_server_connect -> rdx_rc_session_connect),
 * then a GET (RDMA WRITE into the client) and a PUT (RDMA READ out of it)
 * chunk by chunk through rdx_serve, every byte checked, then a bad rkey
 * dropping the session and a disconnect. Without a device it is skipped.
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

#include <infiniband/verbs.h>

#include "rdma/rdx_i.h"
#include "rdma/rdx_rc_client.h"
#include "rdma/rdx_rc_server.h"
#include "rdma/rdx_server.h"
#include "rdma/rdx_transport.h"

static bool have_device(void)
{
  int n = 0;
  struct ibv_device **l = ibv_get_device_list(&n);

  if (l)
    ibv_free_device_list(l);
  return l && n > 0;
}

static void assert_one_line(const char *s)
{
  assert_true(s[0] != '\0');
  assert_null(strchr(s, '\n'));
}

static void test_no_device(void **state)
{
  static const char *const names[] = {"rxe0"};
  struct rdx_rc_dev_cfg cfg = {names, 1, -1, 0};
  struct rdx_transport *t = (void *)1;
  struct rdx_rc_accept acc;
  struct rdx_server *s;
  char err[RDX_ERR_MAX];

  if (have_device())
    skip();
  assert_int_equal(rdx_rc_transport_open(NULL, &t, err, sizeof(err)), -ENODEV);
  assert_null(t);
  assert_one_line(err);
  assert_non_null(strstr(err, "rc: no RDMA device"));
  assert_int_equal(rdx_transport_open(RDX_TRANSPORT_RC, NULL, &t, err,
                                      sizeof(err)),
                   -ENODEV);
  assert_one_line(err);
  assert_int_equal(rdx_rc_transport_open(&cfg, &t, err, sizeof(err)), -ENODEV);
  assert_int_equal(rdx_rc_transport_open(&cfg, NULL, err, sizeof(err)),
                   -EINVAL);

  /* the server: rc declined with the reason, the connect step too */
  assert_int_equal(rdx_rc_server_set_cfg(&cfg), 0);
  assert_int_equal(rdx_server_create(NULL, &s, err, sizeof(err)), 0);
  assert_int_equal(rdx_server_serves(s, RDX_RC, err, sizeof(err)),
                   -EOPNOTSUPP);
  assert_one_line(err);
  assert_non_null(strstr(err, "rc tokens: no RDMA device"));
  print_message("  %s\n", err);
  assert_int_equal(rdx_rc_server_connect(s, "x", 1, "1", 1, &acc, err,
                                         sizeof(err)),
                   -EOPNOTSUPP);
  assert_non_null(strstr(err, "no RDMA device"));
  assert_int_equal(rdx_rc_server_disconnect(s, "x", 1), -EOPNOTSUPP);
  assert_int_equal(rdx_rc_server_sessions(s), 0);
  rdx_server_destroy(s);
  assert_int_equal(rdx_rc_server_set_cfg(NULL), 0);
}

static void test_plumbing(void **state)
{
  static const char *const many[RDX_RC_DEVS_MAX + 1] = {"a"};
  static char longname[80];
  const char *one[] = {longname};
  struct rdx_rc_dev_cfg cfg = {many, RDX_RC_DEVS_MAX + 1, -1, 0};
  struct rdx_transport *cma;
  struct rdx_rc_endpoint *ep = (void *)1;
  struct rdx_rc_session *sess = (void *)1;
  struct rdx_rc_connect_req req;
  const struct rdx_seg *seg;
  struct rdx_region *r;
  char err[RDX_ERR_MAX], buf[RDX_TOKEN_MAX];
  size_t len = 3 * 4096;
  void *mem;

  assert_int_equal(rdx_rc_server_set_cfg(&cfg), -EINVAL);
  memset(longname, 'x', sizeof(longname) - 1);
  cfg.devices = one;
  cfg.ndevices = 1;
  assert_int_equal(rdx_rc_server_set_cfg(&cfg), -EINVAL);

  /* endpoints want an RC transport; sessions want an endpoint */
  assert_int_equal(rdx_rc_endpoint_create(NULL, 0, &ep), -EINVAL);
  assert_null(ep);
  assert_int_equal(rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &cma, err,
                                      sizeof(err)),
                   0);
  assert_int_equal(rdx_rc_endpoint_create(cma, 0, &ep), -EINVAL);
  assert_int_equal(rdx_rc_session_get(NULL, 0, &sess, err, sizeof(err)),
                   -EINVAL);
  assert_null(sess);
  assert_false(rdx_rc_session_connected(NULL));
  assert_int_equal(rdx_rc_session_connect_req(NULL, &req), -EINVAL);
  assert_int_equal(rdx_rc_session_connect(NULL, "", 0, "", 0, "", 0, err,
                                          sizeof(err)),
                   -EINVAL);
  assert_int_equal(rdx_rc_session_id(NULL, buf), -ENOTCONN);
  assert_int_equal(rdx_rc_token_for(NULL, NULL, 0, 1, RDX_GET, buf,
                                    sizeof(buf)),
                   -EINVAL);
  rdx_rc_session_put(NULL, true);
  rdx_rc_endpoint_destroy(NULL);
  rdx_rc_endpoint_flush(NULL);

  /* the segment lookup rdx_rc_token_for shares with rdx_token_for */
  mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
  assert_true(mem != MAP_FAILED);
  assert_int_equal(rdx_register(cma, mem, len, 4096, &r), 0);
  assert_int_equal(rdx_region_seg_of(r, 0, len, &seg), 0);
  assert_ptr_equal(seg, &r->seg[0]);
  assert_int_equal(rdx_region_seg_of(r, 1, len, &seg), -ERANGE);
  assert_null(seg);
  assert_int_equal(rdx_region_seg_of(r, len, 1, &seg), -ERANGE);
  assert_int_equal(rdx_region_seg_of(r, 0, 0, &seg), -EINVAL);
  rdx_unregister(r);
  munmap(mem, len);
  rdx_transport_close(cma);
}

/* ---- with a device ------------------------------------------------------ */

#define LB_LEN (3 * 65536 + 4000) /* not a multiple of the chunk */
#define LB_CHUNK 65536

static void fill(uint8_t *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(i * 131 + seed);
}

/* Every chunk of [0, LB_LEN) through rdx_serve. */
static int serve_all(struct rdx_server *s, const struct rdx_token *tok,
                     enum rdx_op op, uint8_t *src_or_dst, char *why,
                     size_t whylen)
{
  struct rdx_req req = {.op = op, .len = LB_LEN, .peer_uid = -1,
                        .peer_gid = -1};
  void *b = rdx_server_buf_alloc(s, LB_CHUNK);
  int rc = 0;

  assert_non_null(b);
  for (uint64_t off = 0; off < LB_LEN && !rc; off += LB_CHUNK) {
    size_t n = LB_LEN - off < LB_CHUNK ? (size_t)(LB_LEN - off) : LB_CHUNK;

    if (op == RDX_GET)
      memcpy(b, src_or_dst + off, n);
    rc = rdx_serve(s, tok, &req, off, b, n, why, whylen);
    if (!rc && op == RDX_PUT)
      memcpy(src_or_dst + off, b, n);
  }
  rdx_server_buf_free(s, b);
  return rc;
}

static void test_loopback(void **state)
{
  struct rdx_server_cfg scfg = {LB_CHUNK, 4, 30};
  struct rdx_rc_connect_req req;
  struct rdx_rc_accept acc;
  struct rdx_rc_endpoint *ep;
  struct rdx_rc_session *sess;
  struct rdx_transport *t;
  struct rdx_region *r;
  struct rdx_server *s;
  struct rdx_token tok;
  char err[RDX_ERR_MAX], buf[RDX_TOKEN_MAX], id[RDX_RC_SESSION_LEN + 1];
  uint8_t *mem, *want;
  int rc;

  if (!have_device())
    skip();
  assert_int_equal(rdx_server_create(&scfg, &s, err, sizeof(err)), 0);
  if (rdx_server_serves(s, RDX_RC, err, sizeof(err)))
    fail_msg("the server does not serve rc: %s", err);
  rc = rdx_rc_transport_open(NULL, &t, err, sizeof(err));
  if (rc)
    fail_msg("rc client: %s", err);
  mem = malloc(LB_LEN);
  want = malloc(LB_LEN);
  assert_non_null(mem);
  assert_non_null(want);
  memset(mem, 0, LB_LEN);
  assert_int_equal(rdx_register(t, mem, LB_LEN, 0, &r), 0);
  assert_int_equal(rdx_rc_endpoint_create(t, 2, &ep), 0);

  /* the connect step, as the gateway and the S3 client will make it */
  assert_int_equal(rdx_rc_session_get(ep, 0, &sess, err, sizeof(err)), 0);
  assert_false(rdx_rc_session_connected(sess));
  assert_int_equal(rdx_token_for(t, r, 0, LB_LEN, RDX_GET, buf, sizeof(buf)),
                   -ENOTCONN);
  assert_int_equal(rdx_rc_token_for(sess, r, 0, LB_LEN, RDX_GET, buf,
                                    sizeof(buf)),
                   -ENOTCONN);
  assert_int_equal(rdx_rc_session_connect_req(sess, &req), 0);
  rc = rdx_rc_server_connect(s, req.token, strlen(req.token), req.psn,
                             strlen(req.psn), &acc, err, sizeof(err));
  if (rc)
    fail_msg("connect: %s", err);
  assert_int_equal(rdx_rc_server_sessions(s), 1);
  rc = rdx_rc_session_connect(sess, acc.session, strlen(acc.session),
                              acc.reply, strlen(acc.reply), acc.psn,
                              strlen(acc.psn), err, sizeof(err));
  if (rc)
    fail_msg("client connect: %s", err);
  assert_int_equal(rdx_rc_session_id(sess, id), RDX_RC_SESSION_LEN);
  assert_string_equal(id, acc.session);

  /* GET: the server writes */
  rc = rdx_rc_token_for(sess, r, 0, LB_LEN, RDX_GET, buf, sizeof(buf));
  assert_true(rc > 0);
  assert_int_equal(rdx_token_parse(buf, (size_t)rc, &tok), 0);
  assert_int_equal(tok.kind, RDX_RC);
  fill(want, LB_LEN, 7);
  rc = serve_all(s, &tok, RDX_GET, want, err, sizeof(err));
  if (rc)
    fail_msg("GET: %s", err);
  assert_memory_equal(mem, want, LB_LEN);

  /* PUT: the server reads */
  fill(mem, LB_LEN, 99);
  memset(want, 0, LB_LEN);
  rc = rdx_rc_token_for(sess, r, 0, LB_LEN, RDX_PUT, buf, sizeof(buf));
  assert_int_equal(rdx_token_parse(buf, (size_t)rc, &tok), 0);
  rc = serve_all(s, &tok, RDX_PUT, want, err, sizeof(err));
  if (rc)
    fail_msg("PUT: %s", err);
  assert_memory_equal(mem, want, LB_LEN);

  /* a wrong rkey: the chunk fails and the session is dropped */
  tok.rc.rkey ^= 0x5a5a;
  rc = serve_all(s, &tok, RDX_PUT, want, err, sizeof(err));
  assert_true(rc < 0);
  print_message("  bad rkey: %s\n", err);
  assert_int_equal(rdx_rc_server_sessions(s), 0);
  tok.rc.rkey ^= 0x5a5a;
  assert_int_equal(serve_all(s, &tok, RDX_PUT, want, err, sizeof(err)),
                   -ENOTCONN);
  assert_int_equal(rdx_rc_server_disconnect(s, acc.session,
                                            strlen(acc.session)),
                   -ENOENT);
  rdx_rc_session_put(sess, true);

  /* a second session, disconnected */
  assert_int_equal(rdx_rc_session_get(ep, 0, &sess, err, sizeof(err)), 0);
  assert_int_equal(rdx_rc_session_connect_req(sess, &req), 0);
  assert_int_equal(rdx_rc_server_connect(s, req.token, strlen(req.token),
                                         req.psn, strlen(req.psn), &acc, err,
                                         sizeof(err)),
                   0);
  assert_int_equal(rdx_rc_server_disconnect(s, acc.session,
                                            strlen(acc.session)),
                   0);
  rdx_rc_session_put(sess, true);
  /* a bad client token: 400 */
  assert_int_equal(rdx_rc_server_connect(s, "00", 2, "1", 1, &acc, err,
                                         sizeof(err)),
                   -EINVAL);

  rdx_rc_endpoint_destroy(ep);
  rdx_unregister(r);
  rdx_transport_close(t);
  rdx_server_destroy(s);
  free(mem);
  free(want);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_device),
      cmocka_unit_test(test_plumbing),
      cmocka_unit_test(test_loopback),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
