/*
 * The request engine under load and under faults: 64 concurrent ranged GETs
 * byte-exact (from one thread and from many), 64 requests held in flight at
 * once by a server that never answers, per-request timeouts, cancellation,
 * retries against a closed port, shutdown with requests in flight.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "itest.h"

#define OBJ_LEN (16u * 1024 * 1024 + 333)
#define NREQ 64

static struct s3_client *cl;
static char bucket[64];
static unsigned char *ref;

static int setup(void **state)
{
  cl = itest_client(NULL);
  itest_bucket_name(bucket, sizeof(bucket), "eng");
  if (s3_create_bucket(cl, bucket))
    return -1;
  ref = malloc(OBJ_LEN);
  itest_fill(ref, OBJ_LEN, 1234);
  return s3_put_object(cl, bucket, "big.bin", ref, OBJ_LEN, NULL, NULL) ? -1
                                                                        : 0;
}

static int teardown(void **state)
{
  itest_drop_bucket(cl, bucket);
  s3_client_destroy(cl);
  free(ref);
  return 0;
}

/* Range i of n: scattered, different lengths, some crossing the end. */
static void range_of(unsigned i, uint64_t *off, size_t *len)
{
  *off = ((uint64_t)i * 2654435761u) % OBJ_LEN;
  *len = 4096 + (i * 7919u) % (700 * 1024);
}

static void check_range(struct s3_req *r, unsigned i, unsigned char *buf)
{
  uint64_t off;
  size_t len, got, want;

  range_of(i, &off, &len);
  want = OBJ_LEN - off < len ? OBJ_LEN - off : len;
  assert_int_equal(s3_get_object_result(r, &got), 0);
  assert_int_equal(got, want);
  assert_memory_equal(buf, ref + off, want);
}

static void test_64_concurrent_gets(void **state)
{
  struct s3_req *reqs[NREQ];
  unsigned char *bufs[NREQ];
  struct s3_stats st;

  for (unsigned i = 0; i < NREQ; i++) {
    uint64_t off;
    size_t len;
    range_of(i, &off, &len);
    bufs[i] = malloc(len);
    reqs[i] = s3_get_object_req(cl, bucket, "big.bin", off, len, bufs[i]);
    assert_non_null(reqs[i]);
  }
  for (unsigned i = 0; i < NREQ; i++)
    s3_req_submit(reqs[i], NULL, NULL);
  for (unsigned i = 0; i < NREQ; i++) {
    s3_req_wait(reqs[i]);
    check_range(reqs[i], i, bufs[i]);
    s3_req_destroy(reqs[i]);
    free(bufs[i]);
  }
  s3_client_stats(cl, &st);
  print_message("max in flight seen: %llu\n",
                (unsigned long long)st.max_inflight_seen);
  assert_true(st.max_inflight_seen >= 2);
}

struct worker {
  unsigned first, n;
  int failures;
};

static void *worker_main(void *arg)
{
  struct worker *w = arg;

  for (unsigned i = w->first; i < w->first + w->n; i++) {
    uint64_t off;
    size_t len, got, want;
    unsigned char *buf;
    range_of(i, &off, &len);
    buf = malloc(len);
    want = OBJ_LEN - off < len ? OBJ_LEN - off : len;
    if (s3_get_object(cl, bucket, "big.bin", off, len, buf, &got) ||
        got != want || memcmp(buf, ref + off, want))
      w->failures++;
    free(buf);
  }
  return NULL;
}

static void test_many_caller_threads(void **state)
{
  pthread_t th[16];
  struct worker w[16];

  for (unsigned t = 0; t < 16; t++) {
    w[t] = (struct worker){.first = 100 + t * 8, .n = 8};
    assert_int_equal(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
  }
  for (unsigned t = 0; t < 16; t++) {
    pthread_join(th[t], NULL);
    assert_int_equal(w[t].failures, 0);
  }
}

/* Completion callbacks on the engine thread. */
struct cb_state {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  unsigned done;
  int rcs[NREQ];
};

static void on_done(struct s3_req *r, void *arg)
{
  struct cb_state *s = arg;

  pthread_mutex_lock(&s->lock);
  s->rcs[s->done++] = s3_req_result(r);
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->lock);
}

static void test_callbacks(void **state)
{
  struct cb_state s = {.lock = PTHREAD_MUTEX_INITIALIZER,
                       .cv = PTHREAD_COND_INITIALIZER};
  struct s3_req *reqs[16];
  unsigned char *bufs[16];

  for (unsigned i = 0; i < 16; i++) {
    uint64_t off;
    size_t len;
    range_of(i, &off, &len);
    bufs[i] = malloc(len);
    reqs[i] = s3_get_object_req(cl, bucket, "big.bin", off, len, bufs[i]);
    s3_req_submit(reqs[i], on_done, &s);
  }
  pthread_mutex_lock(&s.lock);
  while (s.done < 16)
    pthread_cond_wait(&s.cv, &s.lock);
  pthread_mutex_unlock(&s.lock);
  for (unsigned i = 0; i < 16; i++) {
    assert_int_equal(s.rcs[i], 0);
    check_range(reqs[i], i, bufs[i]);
    s3_req_destroy(reqs[i]);
    free(bufs[i]);
  }
}

/* A TCP server that accepts connections and never answers. */
struct blackhole {
  int fd;
  int port;
  pthread_t th;
  int conns[256];
  int nconns;
};

static void *blackhole_main(void *arg)
{
  struct blackhole *b = arg;

  for (;;) {
    int c = accept(b->fd, NULL, NULL);
    if (c < 0)
      return NULL;
    if (b->nconns < 256)
      b->conns[b->nconns++] = c;
    else
      close(c);
  }
}

static void blackhole_start(struct blackhole *b)
{
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);

  memset(b, 0, sizeof(*b));
  b->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(b->fd >= 0);
  assert_int_equal(bind(b->fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(b->fd, 256), 0);
  getsockname(b->fd, (struct sockaddr *)&a, &al);
  b->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&b->th, NULL, blackhole_main, b), 0);
}

static void blackhole_stop(struct blackhole *b)
{
  shutdown(b->fd, SHUT_RDWR);
  close(b->fd);
  pthread_join(b->th, NULL);
  for (int i = 0; i < b->nconns; i++)
    close(b->conns[i]);
}

static struct s3_client *client_on_port(int port, unsigned attempts)
{
  struct s3_client_config cfg;
  char ep[64], err[256];
  struct s3_client *c;

  snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
  s3_client_config_default(&cfg);
  cfg.endpoint = ep;
  cfg.creds.access_key = "AKIDTEST";
  cfg.creds.secret_key = "secret";
  cfg.retry.max_attempts = attempts;
  cfg.retry.base_ms = 10;
  cfg.retry.max_backoff_ms = 50;
  cfg.retry.budget_ms = 5000;
  c = s3_client_create(&cfg, err, sizeof(err));
  assert_non_null(c);
  return c;
}

static void test_inflight_timeout_cancel(void **state)
{
  struct blackhole b;
  struct s3_client *c;
  struct s3_req *reqs[NREQ];
  char buf[16];
  struct s3_stats st;
  int timedout = 0, cancelled = 0;

  blackhole_start(&b);
  c = client_on_port(b.port, 1);
  for (unsigned i = 0; i < NREQ; i++) {
    reqs[i] = s3_get_object_req(c, "b", "k", 0, sizeof(buf), buf);
    s3_req_set_timeout(reqs[i], 1500);
    s3_req_submit(reqs[i], NULL, NULL);
  }
  /* all 64 on the wire at once, whatever the number of submitters */
  for (int i = 0; i < 100; i++) {
    s3_client_stats(c, &st);
    if (st.inflight == NREQ)
      break;
    usleep(10000);
  }
  assert_int_equal(st.inflight, NREQ);
  for (unsigned i = 0; i < NREQ; i += 2)
    s3_req_cancel(reqs[i]);
  for (unsigned i = 0; i < NREQ; i++) {
    int rc = s3_req_wait(reqs[i]);
    if (i % 2 == 0 && rc == -ECANCELED)
      cancelled++;
    if (i % 2 == 1 && rc == -ETIMEDOUT)
      timedout++;
    s3_req_destroy(reqs[i]);
  }
  assert_int_equal(cancelled, NREQ / 2);
  assert_int_equal(timedout, NREQ / 2);
  s3_client_stats(c, &st);
  assert_int_equal(st.max_inflight_seen, NREQ);
  assert_int_equal(st.cancelled, NREQ / 2);
  assert_int_equal(st.errors[S3_EC_TIMEOUT], NREQ / 2);
  assert_int_equal(st.inflight, 0);
  s3_client_destroy(c);
  blackhole_stop(&b);
}

static void test_destroy_with_inflight(void **state)
{
  struct blackhole b;
  struct s3_client *c;
  struct s3_req *reqs[8];
  char buf[16];

  blackhole_start(&b);
  c = client_on_port(b.port, 1);
  for (unsigned i = 0; i < 8; i++) {
    reqs[i] = s3_get_object_req(c, "b", "k", 0, sizeof(buf), buf);
    s3_req_submit(reqs[i], NULL, NULL);
  }
  usleep(100000);
  s3_client_destroy(c); /* cancels and waits: no request left hanging */
  for (unsigned i = 0; i < 8; i++) {
    assert_int_equal(s3_req_result(reqs[i]), -ECANCELED);
    s3_req_destroy(reqs[i]);
  }
  blackhole_stop(&b);
}

static void test_retry_refused(void **state)
{
  struct s3_client *c;
  struct s3_stats st;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;
  char buf[8];
  size_t got;

  /* a port that was free a moment ago: connections are refused */
  bind(fd, (struct sockaddr *)&a, sizeof(a));
  getsockname(fd, (struct sockaddr *)&a, &al);
  port = ntohs(a.sin_port);
  close(fd);
  c = client_on_port(port, 4);
  assert_int_equal(s3_get_object(c, "b", "k", 0, 8, buf, &got), -ECONNREFUSED);
  /* even a POST is retried when the request never left */
  {
    char *uid = NULL;
    assert_int_equal(s3_create_multipart(c, "b", "k", NULL, &uid),
                     -ECONNREFUSED);
  }
  s3_client_stats(c, &st);
  assert_int_equal(st.attempts, 8);
  assert_int_equal(st.retries, 6);
  assert_int_equal(st.errors[S3_EC_NETWORK], 2);
  s3_client_destroy(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_64_concurrent_gets),
      cmocka_unit_test(test_many_caller_threads),
      cmocka_unit_test(test_callbacks),
      cmocka_unit_test(test_inflight_timeout_cancel),
      cmocka_unit_test(test_destroy_with_inflight),
      cmocka_unit_test(test_retry_refused),
  };
  return cmocka_run_group_tests_name("s3_engine", tests, setup, teardown);
}
