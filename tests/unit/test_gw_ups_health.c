/*
 * test_gw_ups_health: what a request the gateway abandons upstream (its
 * client gone, its token's deadline passed) tells the upstream's health
 * (gw_upstream.c, try_upstream). Abandoned at once, nothing: the upstream's
 * run of failures goes on (it was once reset as by an answer, so a failing
 * upstream behind impatient clients was never taken out). Abandoned after
 * HUNG_MS (5 s) with no answer: a failure (the upstream hangs). Against
 * upstreams that accept connections and never answer (a listening socket
 * never accepted from). A throttle (503, 429) of an upstream up is neither
 * a failure nor an answer (against two fake S3 servers): answered only
 * 503s, an upstream stays in; a 503 between failures does not reset their
 * run; a probe answered 429 keeps one out. And a list naming one server
 * twice is refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake_s3.h"
#include "gateway/gw_proxy.h"
#include "gateway/gw_req.h"
#include "gateway/gw_stats.h"
#include "gateway/gw_ups.h"
#include "gateway/gw_upstream.h"

static int hung_fd[2];
static unsigned hung_port[2];
static struct gw_stats st;
static struct gw_upstream *up;
static struct gw_ups *set;
static CURL *c;
static struct fake_s3 *fk[2];

static int hung(unsigned *port)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
      listen(fd, 64) || getsockname(fd, (struct sockaddr *)&a, &len))
    return -1;
  *port = ntohs(a.sin_port);
  return fd;
}

/* The gateway's upstream half in front of the upstreams of list (kept). */
static int start(const char *list)
{
  static struct gw_config cfg;
  char err[256] = "";

  memset(&st, 0, sizeof(st));
  memset(&cfg, 0, sizeof(cfg));
  cfg.upstream = list;
  cfg.token_header = "x-amz-rdma-token";
  cfg.up_access_key = "ak";
  cfg.up_secret_key = "sk";
  cfg.timeout_s = 120;
  if (gw_upstream_create(&cfg, &st, NULL, &up, err, sizeof(err)))
    return -1;
  set = (struct gw_ups *)st.more_arg;
  c = curl_easy_init();
  return c ? 0 : -1;
}

/* start's undone. */
static void stop(void)
{
  gw_upstream_destroy(up);
  curl_easy_cleanup(c);
}

static int setup(void **state)
{
  static char list[128];

  (void)state;
  for (int i = 0; i < 2; i++)
    if ((hung_fd[i] = hung(&hung_port[i])) < 0)
      return -1;
  snprintf(list, sizeof(list), "http://127.0.0.1:%u;http://127.0.0.1:%u",
           hung_port[0], hung_port[1]);
  return start(list);
}

static int teardown(void **state)
{
  (void)state;
  stop();
  for (int i = 0; i < 2; i++)
    close(hung_fd[i]);
  return 0;
}

static int setup_fake(void **state)
{
  static char list[128];

  (void)state;
  for (int i = 0; i < 2; i++) {
    fk[i] = fake_s3_start("b");
    if (!fk[i] || fake_s3_put(fk[i], "b", "k", "hello", 5))
      return -1;
  }
  snprintf(list, sizeof(list), "%s;%s", fake_s3_endpoint(fk[0]),
           fake_s3_endpoint(fk[1]));
  return start(list);
}

static int teardown_fake(void **state)
{
  (void)state;
  stop();
  for (int i = 0; i < 2; i++)
    fake_s3_stop(fk[i]);
  return 0;
}

static long long row(const char *name)
{
  char buf[4096], *p;
  size_t n = st.more(st.more_arg, buf, sizeof(buf) - 1, 0);

  buf[n] = '\0';
  p = strstr(buf, name);
  return p ? atoll(p + strlen(name) + 1) : -1;
}

/* Upstream 0 fails one attempt (a timeout, say). */
static void fail_once(void)
{
  enum ep_try how;
  unsigned i = gw_ups_pick(set, 1u << 1, &how);

  assert_int_equal(i, 0);
  gw_ups_end(set, i, how, true, 0);
}

struct leave {
  struct gw_req *r;
  unsigned after_ms;
};

static void *client_leaves(void *arg)
{
  struct leave *l = arg;

  usleep(l->after_ms * 1000u);
  pthread_mutex_lock(&l->r->mu);
  l->r->cancel = true;
  pthread_mutex_unlock(&l->r->mu);
  return NULL;
}

#define STAYS UINT32_MAX /* (after_ms: the client waits for the answer) */

/* One request on the worker (a GET, or a PUT of 1 KiB sent whole) whose
   client leaves after after_ms; its status. */
static long abandoned(bool put, unsigned after_ms)
{
  static const char body[1024];
  struct gw_req r;
  struct leave l = {&r, after_ms};
  pthread_t t;

  memset(&r, 0, sizeof(r));
  r.method = put ? "PUT" : "GET";
  r.path = "/b/k";
  r.query = "";
  snprintf(r.region, sizeof(r.region), "us-east-1");
  r.body_len = put ? (int64_t)sizeof(body) : -1;
  r.has_up = put;
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  assert_int_equal(gw_pipe_init(&r.up, 4096, 5), 0);
  assert_int_equal(gw_pipe_init(&r.down, 4096, 5), 0);
  if (put) {
    assert_int_equal(gw_pipe_push(&r.up, body, sizeof(body)), 0);
    gw_pipe_close(&r.up);
  }
  r.cancel = after_ms == 0;
  if (after_ms != STAYS)
    assert_int_equal(pthread_create(&t, NULL, client_leaves, &l), 0);
  gw_upstream_run(up, c, &r);
  if (after_ms != STAYS)
    pthread_join(t, NULL);
  for (size_t i = 0; i < r.n_resp_hdrs; i++)
    free(r.resp_hdrs[i]);
  free(r.resp_hdrs);
  gw_pipe_cleanup(&r.up);
  gw_pipe_cleanup(&r.down);
  pthread_cond_destroy(&r.cv);
  pthread_mutex_destroy(&r.mu);
  return r.status;
}

static void test_abandoned_at_once(void **state)
{
  (void)state;
  fail_once();
  fail_once();
  abandoned(false, 0); /* to upstream 0 (ties in turn) */
  assert_int_equal(row("upstream_attempts{upstream=0}"), 3);
  assert_int_equal(row("upstream_failures{upstream=0}"), 2);
  fail_once(); /* the third in a row: out */
  assert_int_equal(row("upstream_downs{upstream=0}"), 1);
  assert_int_equal(row("upstream_up{upstream=0}"), 0);
}

static void test_abandoned_hung(void **state)
{
  (void)state;
  fail_once();
  fail_once();
  abandoned(false, 5200); /* waited past HUNG_MS for an answer: failed */
  assert_int_equal(row("upstream_failures{upstream=0}"), 3);
  assert_int_equal(row("upstream_downs{upstream=0}"), 1);
}

/* A request with a body abandoned after as long says nothing (its time
   may have gone in sending the body): the run goes on. */
static void test_abandoned_put(void **state)
{
  (void)state;
  fail_once();
  fail_once();
  abandoned(true, 5200);
  assert_int_equal(row("upstream_attempts{upstream=0}"), 3);
  assert_int_equal(row("upstream_failures{upstream=0}"), 2);
  assert_int_equal(row("upstream_downs{upstream=0}"), 0);
  fail_once();
  assert_int_equal(row("upstream_downs{upstream=0}"), 1);
}

/* n GETs, one at a time (ties go in turn: half to each upstream). */
static void gets(int n)
{
  for (int k = 0; k < n; k++)
    abandoned(false, STAYS);
}

static void test_throttle_not_down(void **state)
{
  (void)state;
  fake_s3_fault(fk[0], FAKE_GET, "k", 503, 4, 0);
  fake_s3_fault(fk[1], FAKE_GET, "k", 429, 4, 0);
  gets(8);
  for (int i = 0; i < 2; i++)
    assert_int_equal(fake_s3_refused(fk[i]), 4);
  assert_int_equal(row("upstream_failures{upstream=0}"), 0);
  assert_int_equal(row("upstream_failures{upstream=1}"), 0);
  assert_int_equal(row("upstream_downs{upstream=0}"), 0);
  assert_int_equal(row("upstream_up{upstream=0}"), 1);
  assert_int_equal(row("upstream_up{upstream=1}"), 1);
  assert_int_equal(abandoned(false, STAYS), 200);
}

/* 502, 503, 502, 502 from upstream 0: the throttle is not an answer, so
   the failures around it are three in a row (out); the 503 is passed on
   as it was, and is no failure. */
static void test_throttle_no_answer(void **state)
{
  static const int burst[] = {502, 503, 502, 502};

  (void)state;
  for (int k = 0; k < 4; k++)
    fake_s3_fault(fk[0], FAKE_GET, "k", burst[k], 1, 0);
  gets(8); /* 4 to each: upstream 0 answers the burst */
  assert_int_equal(fake_s3_refused(fk[0]), 4);
  assert_int_equal(row("upstream_failures{upstream=0}"), 3);
  assert_int_equal(row("upstream_downs{upstream=0}"), 1);
  assert_int_equal(row("upstream_up{upstream=0}"), 0);
}

/* Taken out by three 500s, its probes answered 429: still out (a probe
   so answered used to bring it back). */
static void test_throttled_probe_keeps_out(void **state)
{
  (void)state;
  fake_s3_fault(fk[0], FAKE_GET, "k", 500, 3, 0);
  fake_s3_fault(fk[0], FAKE_ANY, NULL, 429, 1000, 0);
  gets(6);
  assert_int_equal(row("upstream_up{upstream=0}"), 0);
  /* a second probe starts only once the first has failed (spells of 1 s,
     then 2 s; bounded: 10 s); back in use, it would have none */
  for (int i = 0; i < 100 && row("upstream_probes{upstream=0}") < 2 &&
                  row("upstream_up{upstream=0}") == 0;
       i++)
    usleep(100 * 1000);
  assert_int_equal(row("upstream_up{upstream=0}"), 0);
  assert_true(row("upstream_probes{upstream=0}") >= 2);
}

static void test_same_server_twice(void **state)
{
  struct gw_ups *s = NULL;
  char err[256] = "";

  (void)state;
  assert_int_equal(gw_ups_create("http://h:1;http://g:1;HTTP://H:1/", &s, err,
                                 sizeof(err)),
                   -EINVAL);
  assert_null(s);
  assert_non_null(strstr(err, "is the same server as 'http://h:1'"));
  assert_int_equal(gw_ups_create("http://h:1;http://h:2", &s, err,
                                 sizeof(err)),
                   0);
  gw_ups_destroy(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_server_twice),
      cmocka_unit_test_setup_teardown(test_abandoned_at_once, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_abandoned_hung, setup, teardown),
      cmocka_unit_test_setup_teardown(test_abandoned_put, setup, teardown),
      cmocka_unit_test_setup_teardown(test_throttle_not_down, setup_fake,
                                      teardown_fake),
      cmocka_unit_test_setup_teardown(test_throttle_no_answer, setup_fake,
                                      teardown_fake),
      cmocka_unit_test_setup_teardown(test_throttled_probe_keeps_out,
                                      setup_fake, teardown_fake),
  };

  curl_global_init(CURL_GLOBAL_DEFAULT);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
