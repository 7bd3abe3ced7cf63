/*
 * The S3 client with several endpoints (s3_eps), against two S3 servers in
 * the test's process (fake_s3) holding the same objects: requests spread
 * over both; one that stops answering (its port closed), or answers 500 in
 * a burst, is taken out and every request still succeeds on the other, at
 * once; it comes back into use after its down spell once it answers,
 * found by a probe of the client's own, never by an application request;
 * a list whose first URL never answered serves from the rest; a server
 * whose replies are not HTTP (RGW's chunked answer to HEAD / left on a
 * connection) is retried elsewhere and taken out; a request bound to an
 * endpoint (its RC session's) goes there, and while it is down goes
 * elsewhere without its token, or, bound strictly, fails; a new RC
 * session's endpoint is the one up with the least load, ties in turn; one
 * endpoint alone is never taken out; a request retried never goes back to
 * an endpoint that failed it while another is up. The counters per
 * endpoint, exactly.
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
#include "s3/s3_client.h"

#define BUCKET "eps"

static struct fake_s3 *fa, *fb;
static struct s3_client *c;

static struct s3_client *client_budget(const char *list, unsigned idle_s,
                                       unsigned budget_ms)
{
  struct s3_client_config cfg;
  struct s3_client *cl;
  char err[256] = "";

  s3_client_config_default(&cfg);
  cfg.endpoint = list;
  cfg.creds.access_key = "fake";
  cfg.creds.secret_key = "fake";
  cfg.creds.region = "us-east-1";
  cfg.creds.home = "/nonexistent";
  cfg.connect_timeout_ms = 1000;
  cfg.retry.max_attempts = 4;
  cfg.retry.budget_ms = budget_ms;
  if (idle_s)
    cfg.low_speed_time_s = idle_s;
  cl = s3_client_create(&cfg, err, sizeof(err));
  if (!cl)
    fail_msg("s3_client_create: %s", err);
  return cl;
}

static struct s3_client *client(const char *list)
{
  return client_budget(list, 0, 20000);
}

static int setup(void **state)
{
  char list[256];

  (void)state;
  fa = fake_s3_start(BUCKET);
  fb = fake_s3_start(BUCKET);
  if (!fa || !fb)
    return -1;
  fake_s3_put(fa, BUCKET, "k", "hello", 5);
  fake_s3_put(fb, BUCKET, "k", "hello", 5);
  snprintf(list, sizeof(list), "%s;%s", fake_s3_endpoint(fa),
           fake_s3_endpoint(fb));
  c = client(list);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  s3_client_destroy(c);
  if (fa)
    fake_s3_stop(fa);
  if (fb)
    fake_s3_stop(fb);
  fa = fb = NULL;
  return 0;
}

/* n HEADs of k: how many failed. */
static int heads(struct s3_client *cl, int n)
{
  struct s3_object_meta m;
  int failed = 0;

  for (int i = 0; i < n; i++) {
    if (s3_head_object(cl, BUCKET, "k", &m))
      failed++;
    else
      s3_object_meta_cleanup(&m);
  }
  return failed;
}

/* The value of stats row name in cl's endpoint rows (-1: none). */
static long long row(struct s3_client *cl, const char *name)
{
  char buf[4096], *p;
  size_t n = s3_client_endpoints_format(cl, buf, sizeof(buf) - 1, 0);

  buf[n] = '\0';
  p = strstr(buf, name);
  return p ? atoll(p + strlen(name) + 1) : -1;
}

static void test_spread(void **state)
{
  (void)state;
  fake_s3_reset_counts(fa);
  fake_s3_reset_counts(fb);
  assert_int_equal(heads(c, 40), 0);
  /* one at a time: every tie goes round */
  assert_int_equal(fake_s3_count(fa, FAKE_HEAD), 20);
  assert_int_equal(fake_s3_count(fb, FAKE_HEAD), 20);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 1);
  assert_int_equal(row(c, "s3.endpoint_attempts{endpoint=1}"), 20);
  assert_string_equal(s3_client_endpoint(c, 1), fake_s3_endpoint(fb));
  assert_null(s3_client_endpoint(c, 2));
}

/* Where a per-server thing (an RC session's request) goes: the endpoint
   up with the least of the caller's load, ties in turn; never one down. */
static void test_next_by_load(void **state)
{
  unsigned even[2] = {3, 3}, more_on_0[2] = {5, 2}, n0 = 0;

  (void)state;
  for (int i = 0; i < 10; i++)
    n0 += s3_client_endpoint_next(c, even) == 0;
  assert_int_equal(n0, 5); /* ties: in turn */
  for (int i = 0; i < 10; i++)
    assert_int_equal(s3_client_endpoint_next(c, more_on_0), 1);
  n0 = 0;
  for (int i = 0; i < 10; i++)
    n0 += s3_client_endpoint_next(c, NULL) == 0;
  assert_int_equal(n0, 5); /* no load: in turn */
  fake_s3_stop(fb); /* endpoint 1 dies, and is taken out */
  fb = NULL;
  assert_int_equal(heads(c, 10), 0);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=1}"), 0);
  for (int i = 0; i < 10; i++)
    assert_int_equal(s3_client_endpoint_next(c, more_on_0), 0);
}

static void test_one_stops_answering(void **state)
{
  (void)state;
  fake_s3_stop(fa); /* its port refuses connections now */
  fa = NULL;
  fake_s3_reset_counts(fb);
  assert_int_equal(heads(c, 30), 0);
  /* three refusals in a row take it out; each request went on at once */
  assert_int_equal(row(c, "s3.endpoint_failures{endpoint=0}"), 3);
  assert_int_equal(row(c, "s3.endpoint_downs{endpoint=0}"), 1);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 0);
  assert_int_equal(fake_s3_count(fb, FAKE_HEAD), 30);
}

static void test_burst_of_500_then_back(void **state)
{
  (void)state;
  fake_s3_fault(fa, FAKE_HEAD, "k", 500, 3, 0);
  fake_s3_reset_counts(fa);
  assert_int_equal(heads(c, 12), 0);
  assert_int_equal(row(c, "s3.endpoint_downs{endpoint=0}"), 1);
  assert_int_equal(fake_s3_count(fa, FAKE_HEAD), 3); /* then none */
  assert_int_equal(fake_s3_refused(fa), 3);
  /* its spell over (1 s), it answers again: one probe, then in use */
  usleep(1100 * 1000);
  fake_s3_reset_counts(fa);
  assert_int_equal(heads(c, 10), 0);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 1);
  assert_in_range(fake_s3_count(fa, FAKE_HEAD), 4, 6);
}

/* The probe alone brings an endpoint back: no request of the test is out
   while its spell ends, and none went to it while it was down. */
static void test_probed_in_background(void **state)
{
  (void)state;
  fake_s3_fault(fa, FAKE_HEAD, "k", 500, 3, 0);
  assert_int_equal(heads(c, 12), 0);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 0);
  assert_int_equal(row(c, "s3.endpoint_attempts{endpoint=0}"), 3);
  for (int i = 0; i < 40 && row(c, "s3.endpoint_up{endpoint=0}") != 1; i++)
    usleep(100 * 1000);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 1);
  assert_int_equal(row(c, "s3.endpoint_probes{endpoint=0}"), 1);
  assert_int_equal(row(c, "s3.endpoint_attempts{endpoint=0}"), 3);
  assert_int_equal(row(c, "s3.endpoint_probes{endpoint=1}"), 0);
}

/* A dead endpoint gets probes at its spells' ends (1 s, then 2 s later),
   and not one application request after the three that took it out. */
static void test_dead_only_probed(void **state)
{
  (void)state;
  fake_s3_stop(fa);
  fa = NULL;
  fake_s3_reset_counts(fb);
  assert_int_equal(heads(c, 10), 0);
  usleep(3500 * 1000);
  assert_int_equal(heads(c, 10), 0);
  assert_int_equal(row(c, "s3.endpoint_attempts{endpoint=0}"), 3);
  assert_int_equal(row(c, "s3.endpoint_probes{endpoint=0}"), 2);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 0);
  assert_int_equal(row(c, "s3.endpoint_downs{endpoint=0}"), 1);
  assert_int_equal(fake_s3_count(fb, FAKE_HEAD), 20);
}

/* Bytes per endpoint: the bodies each moved. */
static void test_bytes(void **state)
{
  char buf[16];
  size_t got = 0;

  (void)state;
  assert_int_equal(heads(c, 2), 0); /* no body */
  assert_int_equal(row(c, "s3.endpoint_bytes{endpoint=0}") +
                       row(c, "s3.endpoint_bytes{endpoint=1}"), 0);
  assert_int_equal(s3_get_object(c, BUCKET, "k", 0, sizeof(buf), buf, &got),
                   0);
  assert_int_equal(got, 5);
  assert_int_equal(row(c, "s3.endpoint_bytes{endpoint=0}") +
                       row(c, "s3.endpoint_bytes{endpoint=1}"), 5);
}

/* A server on 127.0.0.1 that answers every connection with bytes that are
   not HTTP ("0\r\n\r\n": what RGW leaves after its reply to HEAD /). */
struct garbage {
  int lfd;
  unsigned port;
  pthread_t th;
};

static void *garbage_main(void *arg)
{
  struct garbage *g = arg;
  char buf[4096];
  int fd;

  while ((fd = accept(g->lfd, NULL, NULL)) >= 0) {
    if (recv(fd, buf, sizeof(buf), 0) > 0 &&
        send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL) < 0)
      fprintf(stderr, "garbage: send failed\n");
    close(fd);
  }
  return NULL;
}

static void garbage_start(struct garbage *g)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);

  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g->lfd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(g->lfd >= 0);
  assert_int_equal(bind(g->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(g->lfd, 16), 0);
  assert_int_equal(getsockname(g->lfd, (struct sockaddr *)&a, &len), 0);
  g->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&g->th, NULL, garbage_main, g), 0);
}

static void garbage_stop(struct garbage *g)
{
  shutdown(g->lfd, SHUT_RDWR); /* accept returns */
  pthread_join(g->th, NULL);
  close(g->lfd);
}

static void test_not_http_elsewhere(void **state)
{
  struct garbage g;
  struct s3_client *cl;
  char list[256];

  (void)state;
  garbage_start(&g);
  snprintf(list, sizeof(list), "http://127.0.0.1:%u;%s", g.port,
           fake_s3_endpoint(fb));
  cl = client(list);
  fake_s3_reset_counts(fb);
  assert_int_equal(heads(cl, 10), 0);
  assert_int_equal(row(cl, "s3.endpoint_downs{endpoint=0}"), 1);
  assert_int_equal(row(cl, "s3.endpoint_failures{endpoint=0}"), 3);
  assert_int_equal(fake_s3_count(fb, FAKE_HEAD), 10);
  s3_client_destroy(cl);
  garbage_stop(&g);
}

/* A GET of k bound to endpoint ep (strict or not), with a token when tok:
   0 with the 5 bytes, or the request's error. */
static int bound_get(struct s3_client *cl, int ep, bool strict, bool tok)
{
  struct s3_req *r = s3_req_create(cl, "GET", BUCKET, "k");
  char buf[16];
  size_t got = 0;
  int rc;

  assert_non_null(r);
  s3_req_set_sink_buf(r, buf, sizeof(buf));
  if (tok)
    assert_int_equal(s3_req_set_rdma(r, "cma:1:2:3", 5), 0);
  s3_req_set_endpoint(r, ep, strict);
  s3_req_submit(r, NULL, NULL);
  rc = s3_req_wait(r);
  if (!rc)
    rc = s3_get_object_result(r, &got);
  if (!rc && (got != 5 || memcmp(buf, "hello", 5)))
    rc = -EIO;
  s3_req_destroy(r);
  return rc;
}

static void test_bound(void **state)
{
  struct s3_stats st;

  (void)state;
  fake_s3_reset_counts(fa);
  fake_s3_reset_counts(fb);
  for (int i = 0; i < 6; i++)
    assert_int_equal(bound_get(c, 1, false, false), 0);
  assert_int_equal(fake_s3_count(fb, FAKE_GET), 6); /* all there */
  assert_int_equal(fake_s3_count(fa, FAKE_GET), 0);
  /* the token goes where the request is bound (the fake ignores it) */
  assert_int_equal(bound_get(c, 1, false, true), 0);
  s3_client_stats(c, &st);
  assert_int_equal(st.rdma_requests, 1);
  fake_s3_stop(fa); /* endpoint 0 dies */
  fa = NULL;
  assert_int_not_equal(bound_get(c, 0, true, false), 0); /* strict: no */
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 0);
  /* bound to the dead one, not strictly: served by the other, and the
     token (a session on the dead one) not sent */
  assert_int_equal(bound_get(c, 0, false, true), 0);
  s3_client_stats(c, &st);
  assert_int_equal(st.rdma_requests, 1);
  assert_int_equal(st.rdma_resent, 1);
}

static void test_first_never_answered(void **state)
{
  struct s3_client *cl;
  char list[256];

  (void)state;
  snprintf(list, sizeof(list), "http://127.0.0.1:1;%s", fake_s3_endpoint(fb));
  cl = client(list);
  assert_int_equal(heads(cl, 10), 0);
  assert_int_equal(row(cl, "s3.endpoint_downs{endpoint=0}"), 1);
  s3_client_destroy(cl);
}

/* A reply 500 in the RDMA dialect (x-amz-rdma-reply: 500: the transfer
   failed, say on an RC session the gateway forgot when it restarted) is
   an answer: resent over HTTP, never a failure of the endpoint (three took
   a gateway just back out again). */
static void test_rdma_failed_not_down(void **state)
{
  struct s3_stats st;

  (void)state;
  for (int i = 0; i < 3; i++) { /* (each one's token attempt) */
    fake_s3_fault(fb, FAKE_GET, "k", FAKE_RDMA_FAILED, 1, 0);
    assert_int_equal(bound_get(c, 1, false, true), 0);
  }
  assert_int_equal(fake_s3_refused(fb), 3);
  s3_client_stats(c, &st);
  assert_int_equal(st.rdma_resent, 3);
  assert_int_equal(row(c, "s3.endpoint_failures{endpoint=1}"), 0);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=1}"), 1);
}

/* 503 SlowDown asks for less: backed off and retried, never a failure of
   the endpoint (three in a row used to take a working server out). */
static void test_slowdown_not_down(void **state)
{
  (void)state;
  fake_s3_fault(fa, FAKE_HEAD, "k", 503, 3, 0);
  assert_int_equal(heads(c, 6), 0);
  assert_int_equal(fake_s3_refused(fa), 3);
  assert_int_equal(row(c, "s3.endpoint_failures{endpoint=0}"), 0);
  assert_int_equal(row(c, "s3.endpoint_downs{endpoint=0}"), 0);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 1);
}

/* Nor is a throttle an answer: a server behind a balancer whose backend
   is dead answers 502, 502, 503 (no S3 code) over and over: taken out all
   the same (each 503 used to reset its run of failures). */
static void test_throttle_no_answer(void **state)
{
  (void)state;
  for (int i = 0; i < 10; i++) {
    fake_s3_fault(fa, FAKE_HEAD, "k", 502, 2, 0);
    fake_s3_fault(fa, FAKE_HEAD, "k", 503, 1, 0);
  }
  assert_int_equal(heads(c, 30), 0);
  assert_int_equal(row(c, "s3.endpoint_downs{endpoint=0}"), 1);
}

/* Taken out by three 500s, its probes answered 503: still out. */
static void test_throttled_probe_keeps_out(void **state)
{
  (void)state;
  fake_s3_fault(fa, FAKE_HEAD, "k", 500, 3, 0);
  fake_s3_fault(fa, FAKE_ANY, NULL, 503, 100, 0);
  assert_int_equal(heads(c, 12), 0);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 0);
  /* a second probe starts only once the first has failed (spells of 1 s,
     then 2 s; bounded: 10 s); back in use, it would have none */
  for (int i = 0; i < 100 && row(c, "s3.endpoint_probes{endpoint=0}") < 2 &&
                  row(c, "s3.endpoint_up{endpoint=0}") == 0;
       i++)
    usleep(100 * 1000);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 0);
  assert_true(row(c, "s3.endpoint_probes{endpoint=0}") >= 2);
}

/* A server that takes connections and never answers (a listening socket
   never accepted from): each attempt there ends idle, its time spent, and
   the request goes on elsewhere all the same, past its budget. */
static void test_hung_fails_over(void **state)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t alen = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct s3_client *cl;
  char list[256];

  (void)state;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_true(fd >= 0);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(fd, 64), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
  snprintf(list, sizeof(list), "http://127.0.0.1:%u;%s", ntohs(a.sin_port),
           fake_s3_endpoint(fb));
  cl = client_budget(list, 1, 1000); /* idle 1 s: the budget spent */
  assert_int_equal(heads(cl, 6), 0);
  assert_in_range(row(cl, "s3.endpoint_failures{endpoint=0}"), 1, 3);
  s3_client_destroy(cl);
  close(fd);
}

struct held_get {
  struct s3_client *cl;
  int ep, rc;
};

static void *held_get_main(void *arg)
{
  struct held_get *h = arg;

  h->rc = bound_get(h->cl, h->ep, true, false);
  return NULL;
}

/* Three endpoints, two of them failing (500, below the burst that takes
   them out), the third busy (a GET held there): a HEAD goes first to the
   idle ones, then to the busy one, never back to one that failed it (it
   used to avoid only the last that failed: A, B, A, B, and the request
   failed after its four attempts). */
static void test_retry_avoids_all_failed(void **state)
{
  struct fake_s3 *fc = fake_s3_start(BUCKET);
  struct held_get h = {.ep = 2};
  struct s3_object_meta m;
  char list[256];
  pthread_t t;

  (void)state;
  assert_non_null(fc);
  fake_s3_put(fc, BUCKET, "k", "hello", 5);
  snprintf(list, sizeof(list), "%s;%s;%s", fake_s3_endpoint(fa),
           fake_s3_endpoint(fb), fake_s3_endpoint(fc));
  h.cl = client(list);
  fake_s3_hold(fc, FAKE_GET, "k");
  assert_int_equal(pthread_create(&t, NULL, held_get_main, &h), 0);
  assert_true(fake_s3_wait_held(fc, 1, 5000));
  fake_s3_fault(fa, FAKE_HEAD, "k", 500, 2, 0);
  fake_s3_fault(fb, FAKE_HEAD, "k", 500, 2, 0);
  assert_int_equal(s3_head_object(h.cl, BUCKET, "k", &m), 0);
  s3_object_meta_cleanup(&m);
  assert_int_equal(fake_s3_refused(fa) + fake_s3_refused(fb), 2);
  assert_int_equal(fake_s3_count(fc, FAKE_HEAD), 1);
  fake_s3_release(fc);
  pthread_join(t, NULL);
  assert_int_equal(h.rc, 0);
  s3_client_destroy(h.cl);
  fake_s3_stop(fc);
}

/* Every endpoint up has failed the request: its next retry is no
   failover (free, at once, past the budget) but an ordinary one, backed
   off within the budget and charged to the quota. With a budget already
   spent, that is none (it used to go round again, free). */
static void test_all_failed_backs_off(void **state)
{
  char list[256];
  struct s3_client *cl;

  (void)state;
  snprintf(list, sizeof(list), "%s;%s", fake_s3_endpoint(fa),
           fake_s3_endpoint(fb));
  cl = client_budget(list, 0, 1); /* a budget of 1 ms */
  fake_s3_fault(fa, FAKE_HEAD, "k", 500, 1, 0);
  fake_s3_fault(fb, FAKE_HEAD, "k", 500, 1, 0);
  assert_int_equal(heads(cl, 1), 1); /* A, then B at once, then no more */
  assert_int_equal(fake_s3_refused(fa) + fake_s3_refused(fb), 2);
  s3_client_destroy(cl);
  fake_s3_fault(fa, FAKE_HEAD, "k", 500, 1, 0);
  fake_s3_fault(fb, FAKE_HEAD, "k", 500, 1, 0);
  assert_int_equal(heads(c, 1), 0); /* backed off, then served */
  assert_int_equal(fake_s3_refused(fa) + fake_s3_refused(fb), 4);
}

/* A retry after a throttle goes elsewhere too (backed off): endpoint 0
   answers every HEAD 503 (a balancer over a dead server, say), endpoint 1
   busy (a GET held there) and so never the pick of a first attempt; each
   HEAD is served by 1 on its second attempt (it used to go back to the
   idle 0, four times, and fail). */
static void test_throttled_retry_elsewhere(void **state)
{
  struct held_get h = {.cl = c, .ep = 1};
  pthread_t t;
  int failed;

  (void)state;
  fake_s3_hold(fb, FAKE_GET, "k");
  assert_int_equal(pthread_create(&t, NULL, held_get_main, &h), 0);
  assert_true(fake_s3_wait_held(fb, 1, 5000));
  fake_s3_fault(fa, FAKE_HEAD, "k", 503, 100, 0);
  fake_s3_reset_counts(fb);
  failed = heads(c, 3);
  fake_s3_release(fb); /* (the GET done before any check can fail) */
  pthread_join(t, NULL);
  assert_int_equal(failed, 0);
  assert_int_equal(fake_s3_refused(fa), 3);
  assert_int_equal(fake_s3_count(fb, FAKE_HEAD), 3);
  assert_int_equal(row(c, "s3.endpoint_up{endpoint=0}"), 1);
  assert_int_equal(h.rc, 0);
}

/* A request bound to an endpoint (its RC session's) and throttled there
   is retried there, its token with it: only a failure moves it. */
static void test_bound_throttled_stays(void **state)
{
  struct s3_stats st;

  (void)state;
  fake_s3_reset_counts(fa);
  fake_s3_reset_counts(fb);
  fake_s3_fault(fb, FAKE_GET, "k", 503, 1, 0);
  assert_int_equal(bound_get(c, 1, false, true), 0);
  assert_int_equal(fake_s3_count(fb, FAKE_GET), 2);
  assert_int_equal(fake_s3_count(fa, FAKE_GET), 0);
  s3_client_stats(c, &st);
  assert_int_equal(st.rdma_resent, 0);
}

static void test_alone_never_out(void **state)
{
  struct s3_client *cl = client(fake_s3_endpoint(fb));

  (void)state;
  fake_s3_fault(fb, FAKE_HEAD, "k", 500, 8, 0);
  assert_int_equal(heads(cl, 2), 2); /* 4 attempts each, all 500 */
  assert_int_equal(heads(cl, 1), 0); /* still tried: nowhere else */
  assert_int_equal(row(cl, "s3.endpoint_up{endpoint=0}"), -1); /* no rows */
  s3_client_destroy(cl);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_spread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_next_by_load, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_stops_answering, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_burst_of_500_then_back, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_probed_in_background, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_dead_only_probed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bytes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_http_elsewhere, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
      cmocka_unit_test_setup_teardown(test_first_never_answered, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_slowdown_not_down, setup, teardown),
      cmocka_unit_test_setup_teardown(test_throttle_no_answer, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_throttled_probe_keeps_out, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_rdma_failed_not_down, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_hung_fails_over, setup, teardown),
      cmocka_unit_test_setup_teardown(test_retry_avoids_all_failed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_all_failed_backs_off, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_throttled_retry_elsewhere, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_bound_throttled_stays, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_alone_never_out, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
