/*
 * The request engine under load and under faults: 64 concurrent ranged GETs
 * byte-exact (from one thread and from many), 64 requests held in flight at
 * once by a server that never answers, per-request timeouts, cancellation,
 * retries against a closed port, shutdown with requests in flight.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <strings.h>
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
    s3_req_set_timeout(reqs[i], 5000);
    s3_req_submit(reqs[i], NULL, NULL);
  }
  /* all 64 on the wire at once, whatever the number of submitters (3 s
     at most, well within their timeout) */
  for (int i = 0; i < 300; i++) {
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
    struct s3_req *r = s3_req_create(c, "POST", "b", "k");
    assert_non_null(r);
    s3_req_submit(r, NULL, NULL);
    assert_int_equal(s3_req_wait(r), -ECONNREFUSED);
    assert_false(s3_req_resent(r)); /* (it never reached a server) */
    s3_req_destroy(r);
  }
  s3_client_stats(c, &st);
  assert_int_equal(st.attempts, 8);
  assert_int_equal(st.retries, 6);
  assert_int_equal(st.errors[S3_EC_NETWORK], 2);
  s3_client_destroy(c);
}

/*
 * A fault-injecting front for the real RGW: the first fail_first
 * connections get one canned S3 error reply (after the request has been read
 * whole) and are closed; later connections are relayed to RGW byte for byte.
 */
struct flaky {
  int fd, port, upstream_port;
  int fail_first;
  const char *status_line; /* "503 Slow Down" */
  const char *code;        /* "SlowDown" */
  int conns;               /* accept thread only */
  pthread_t th;
};

struct relay {
  int a, b;
};

static void *relay_main(void *arg)
{
  struct relay *rl = arg;
  struct pollfd p[2] = {{rl->a, POLLIN, 0}, {rl->b, POLLIN, 0}};
  char buf[65536];

  while (poll(p, 2, 10000) > 0) {
    for (int i = 0; i < 2; i++) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = read(p[i].fd, buf, sizeof(buf));
      if (n <= 0)
        goto out;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = write(p[1 - i].fd, buf + off, (size_t)(n - off));
        if (w <= 0)
          goto out;
        off += w;
      }
    }
  }
out:
  close(rl->a);
  close(rl->b);
  free(rl);
  return NULL;
}

static void fail_one(struct flaky *f, int c)
{
  char req[65536], reply[1024], body[512];
  size_t len = 0, clen = 0;
  char *end = NULL, *hdr;

  while (len < sizeof(req) - 1 && !end) {
    ssize_t n = read(c, req + len, sizeof(req) - 1 - len);
    if (n <= 0)
      return;
    len += (size_t)n;
    req[len] = '\0';
    end = strstr(req, "\r\n\r\n");
  }
  if (!end)
    return;
  hdr = strcasestr(req, "\ncontent-length:");
  if (hdr && hdr < end)
    clen = strtoul(hdr + 16, NULL, 10);
  for (size_t have = len - (size_t)(end + 4 - req); have < clen;) {
    ssize_t n = read(c, req, sizeof(req));
    if (n <= 0)
      return;
    have += (size_t)n;
  }
  snprintf(body, sizeof(body),
           "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
           "<Message>injected</Message><RequestId>t</RequestId></Error>",
           f->code);
  snprintf(reply, sizeof(reply),
           "HTTP/1.1 %s\r\nContent-Type: application/xml\r\n"
           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
           f->status_line, strlen(body), body);
  (void)!write(c, reply, strlen(reply));
}

static void *flaky_main(void *arg)
{
  struct flaky *f = arg;

  for (;;) {
    int c = accept(f->fd, NULL, NULL);
    if (c < 0)
      return NULL;
    if (f->conns++ < f->fail_first) {
      fail_one(f, c);
      close(c);
      continue;
    }
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)f->upstream_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int u = socket(AF_INET, SOCK_STREAM, 0);
    struct relay *rl = malloc(sizeof(*rl));
    pthread_t th;
    if (connect(u, (struct sockaddr *)&a, sizeof(a))) {
      close(u);
      close(c);
      free(rl);
      continue;
    }
    *rl = (struct relay){c, u};
    pthread_create(&th, NULL, relay_main, rl);
    pthread_detach(th);
  }
}

static void flaky_start(struct flaky *f, int fail_first,
                        const char *status_line, const char *code)
{
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  const char *ep = getenv("S3R_ENDPOINT"), *colon = strrchr(ep, ':');

  memset(f, 0, sizeof(*f));
  f->fail_first = fail_first;
  f->status_line = status_line;
  f->code = code;
  f->upstream_port = atoi(colon + 1);
  f->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(f->fd, 64), 0);
  getsockname(f->fd, (struct sockaddr *)&a, &al);
  f->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&f->th, NULL, flaky_main, f), 0);
}

static void flaky_stop(struct flaky *f)
{
  shutdown(f->fd, SHUT_RDWR);
  close(f->fd);
  pthread_join(f->th, NULL);
}

/* A client through the flaky front, with RGW's real keys. */
static struct s3_client *flaky_client(struct flaky *f, unsigned attempts)
{
  struct s3_client_config cfg;
  char ep[64], err[256];
  struct s3_client *c;

  snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", f->port);
  s3_client_config_default(&cfg);
  cfg.endpoint = ep;
  cfg.retry.max_attempts = attempts;
  cfg.retry.base_ms = 10;
  cfg.retry.max_backoff_ms = 50;
  c = s3_client_create(&cfg, err, sizeof(err));
  assert_non_null(c);
  return c;
}

static void test_slowdown_retried(void **state)
{
  struct flaky f;
  struct s3_client *c;
  struct s3_stats st;
  unsigned char *buf = malloc(1 << 20);
  size_t got;

  flaky_start(&f, 2, "503 Slow Down", "SlowDown");
  c = flaky_client(&f, 5);
  assert_int_equal(s3_get_object(c, bucket, "big.bin", 4096, 1 << 20, buf,
                                 &got), 0);
  assert_int_equal(got, 1 << 20);
  assert_memory_equal(buf, ref + 4096, got);
  s3_client_stats(c, &st);
  assert_int_equal(st.attempts, 3);
  assert_int_equal(st.retries, 2);
  assert_int_equal(st.errors[S3_EC_THROTTLE], 0);
  /* a PUT, its body resent on every attempt; a fresh client, so that it
     opens fresh connections and meets the failures again */
  s3_client_destroy(c);
  f.conns = 0;
  c = flaky_client(&f, 5);
  assert_int_equal(s3_put_object(c, bucket, "flaky-put", ref, 300000, NULL,
                                 NULL), 0);
  s3_client_stats(c, &st);
  assert_int_equal(st.retries, 2);
  assert_int_equal(s3_get_object(c, bucket, "flaky-put", 0, 300000, buf,
                                 &got), 0);
  assert_int_equal(got, 300000);
  assert_memory_equal(buf, ref, got);
  s3_client_destroy(c);
  flaky_stop(&f);
  free(buf);
}

static void test_slowdown_exhausted(void **state)
{
  struct flaky f;
  struct s3_client *c;
  struct s3_stats st;
  char buf[16];
  size_t got;

  flaky_start(&f, 1000, "503 Slow Down", "SlowDown");
  c = flaky_client(&f, 3);
  assert_int_equal(s3_get_object(c, bucket, "big.bin", 0, 16, buf, &got),
                   -EAGAIN);
  s3_client_stats(c, &st);
  assert_int_equal(st.attempts, 3);
  assert_int_equal(st.errors[S3_EC_THROTTLE], 1);
  s3_client_destroy(c);
  flaky_stop(&f);
}

static void test_internal_error_only_safe_retries(void **state)
{
  struct flaky f;
  struct s3_client *c;
  struct s3_stats st;
  struct s3_req *r;
  char *uid = NULL;
  unsigned orphans = 0;

  /* 500 after the server may have acted: a PUT is retried... */
  flaky_start(&f, 1, "500 Internal Server Error", "InternalError");
  c = flaky_client(&f, 4);
  assert_int_equal(s3_put_object(c, bucket, "flaky-500", "x", 1, NULL, NULL),
                   0);
  s3_client_stats(c, &st);
  assert_int_equal(st.retries, 1);
  /* ...a POST is not (it may have acted)... */
  s3_client_destroy(c);
  f.conns = 0;
  c = flaky_client(&f, 4);
  r = s3_req_create(c, "POST", bucket, "flaky-post");
  assert_non_null(r);
  s3_req_submit(r, NULL, NULL);
  assert_int_equal(s3_req_wait(r), -EIO);
  assert_false(s3_req_resent(r));
  s3_req_destroy(r);
  s3_client_stats(c, &st);
  assert_int_equal(st.retries, 0);
  assert_int_equal(st.attempts, 1);
  assert_int_equal(st.errors[S3_EC_SERVER], 1);
  /* ...but a CreateMultipartUpload is, as AWS's SDKs do: the upload the
     first attempt may have made is said to be nobody's */
  s3_client_destroy(c);
  f.conns = 0;
  c = flaky_client(&f, 4);
  assert_int_equal(
      s3_create_multipart(c, bucket, "flaky-mpu", NULL, &uid, &orphans), 0);
  assert_int_equal(orphans, 1);
  s3_client_stats(c, &st);
  assert_int_equal(st.retries, 1);
  assert_int_equal(st.attempts, 2);
  assert_int_equal(s3_abort_multipart(c, bucket, "flaky-mpu", uid), 0);
  free(uid);
  s3_client_destroy(c);
  flaky_stop(&f);
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
      cmocka_unit_test(test_slowdown_retried),
      cmocka_unit_test(test_slowdown_exhausted),
      cmocka_unit_test(test_internal_error_only_safe_retries),
  };
  return cmocka_run_group_tests_name("s3_engine", tests, setup, teardown);
}
