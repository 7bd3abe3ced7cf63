/*
 * test_s3_rdma: the client's reading of RDMA replies (s3_rdma.c), without a
 * server: each attempt's reply headers and body are set as the engine's
 * callbacks would leave them, then judged. Covers success, short GETs at the
 * end of an object, declined and ignored tokens (a PUT is resent), and
 * replies that must not be trusted. Then time: a token attempt's deadline
 * (s3_rdma_attempt_ms), the defaults, and the deadline sent
 * and signed as x-amz-rdma-expires (an attempt prepared, not sent).
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "s3/s3_attempt.h"
#include "s3/s3_i.h"

struct fixture {
  struct s3_client c;
  struct s3_req *r;
  char buf[64];
};

static struct fixture *fix(const char *method, uint64_t len)
{
  struct fixture *f = calloc(1, sizeof(*f));

  assert_non_null(f);
  f->c.rdma_header = (char *)"x-amz-rdma-token";
  f->r = s3_req_create(&f->c, method, "b", "k");
  assert_non_null(f->r);
  if (!strcmp(method, "GET"))
    s3_req_set_sink_buf(f->r, f->buf, sizeof(f->buf));
  else
    s3_req_set_body(f->r, f->buf, (size_t)len, false);
  assert_int_equal(s3_req_set_rdma(f->r, "tok", len), 0);
  return f;
}

static void done(struct fixture *f)
{
  s3_req_destroy(f->r);
  free(f);
}

/* A reply: its HTTP outcome, body bytes, headers ("name", "value", ...
   NULL). */
static enum s3_rdma_verdict judge(struct fixture *f, int *rc, size_t body,
                                  ...)
{
  struct s3_err_map m = {0};
  const char *name, *val;
  char line[256];
  va_list ap;

  s3_req_reset_reply(f->r);
  va_start(ap, body);
  while ((name = va_arg(ap, const char *))) {
    val = va_arg(ap, const char *);
    snprintf(line, sizeof(line), "%s: %s\r\n", name, val);
    assert_int_equal(s3_req_store_header(f->r, line, strlen(line)), 0);
  }
  va_end(ap);
  f->r->sink_len = body;
  return s3_rdma_attempt_end(&f->c, f->r, rc, &m);
}

#define REPLY "x-amz-rdma-reply"
#define BYTES "x-amz-rdma-bytes-transferred"
/* The MD5 of 32 bytes "a" (md5sum): the ETag of a body of them. */
static const char md5_32a[] = "5eca9bd3eb07c006cd43ae48dfde7fd3";

static void test_set_rdma_rules(void **state)
{
  struct s3_req *r = s3_req_create(NULL, "HEAD", "b", "k");

  (void)state;
  assert_int_equal(s3_req_set_rdma(r, "tok", 1), -EINVAL); /* not GET/PUT */
  s3_req_destroy(r);
  r = s3_req_create(NULL, "GET", "b", "k");
  assert_int_equal(s3_req_set_rdma(r, "", 1), -EINVAL);
  assert_int_equal(s3_req_set_rdma(r, "a\r\nb: c", 1), -EINVAL);
  assert_int_equal(s3_req_set_rdma(r, "tok", 0), -EINVAL);
  assert_false(s3_req_rdma_carried(r));
  assert_int_equal(s3_req_set_rdma(r, "tok", 5), 0);
  assert_true(s3_req_rdma_carried(r));
  s3_req_destroy(r);
}

static void test_get_done(void **state)
{
  struct fixture *f = fix("GET", 64);
  int rc = 0;

  (void)state;
  assert_false(s3_client_rdma_known(&f->c));
  assert_int_equal(judge(f, &rc, 0, REPLY, "206", BYTES, "64", NULL),
                   S3_RDMA_KEEP);
  assert_true(s3_client_rdma_known(&f->c));
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  assert_int_equal(s3_req_received(f->r), 64);
  /* the end of the object: fewer bytes than the token */
  rc = 0;
  judge(f, &rc, 0, REPLY, "200", BYTES, "10", NULL);
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_received(f->r), 10);
  assert_int_equal(atomic_load(&f->c.st_rdma_bytes), 74);
  done(f);
}

static void test_get_untrusted(void **state)
{
  static const char *bad_counts[] = {"65", "-1", "", "1x", "1 2", "0x10", "+5",
                                     "99999999999999999999999"};
  struct fixture *f = fix("GET", 64);
  int rc;

  (void)state;
  for (size_t i = 0; i < sizeof(bad_counts) / sizeof(*bad_counts); i++) {
    rc = 0;
    judge(f, &rc, 0, REPLY, "206", BYTES, bad_counts[i], NULL);
    assert_int_equal(rc, -EBADMSG);
    assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_NONE);
  }
  rc = 0; /* no count at all */
  judge(f, &rc, 0, REPLY, "206", NULL);
  assert_int_equal(rc, -EBADMSG);
  rc = 0; /* an unknown reply code */
  judge(f, &rc, 0, REPLY, "302", BYTES, "64", NULL);
  assert_int_equal(rc, -EBADMSG);
  rc = 0; /* a body came as well: it went where the token points */
  judge(f, &rc, 3, REPLY, "206", BYTES, "64", NULL);
  assert_int_equal(rc, -EBADMSG);
  done(f);
}

static void test_get_declined_ignored(void **state)
{
  struct fixture *f = fix("GET", 64);
  int rc = 0;

  (void)state;
  judge(f, &rc, 64, REPLY, "501", NULL); /* the body brought the bytes */
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DECLINED);
  assert_int_equal(s3_req_received(f->r), 64);
  assert_true(s3_client_rdma_usable(&f->c));
  rc = 0;
  assert_true(s3_client_rdma_known(&f->c)); /* a 501 is an answer too */
  assert_int_equal(judge(f, &rc, 0, "etag", "\"x\"", NULL), S3_RDMA_KEEP);
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_IGNORED);
  assert_false(s3_client_rdma_usable(&f->c));
  /* an error reply without the header says nothing about tokens */
  done(f);
  f = fix("GET", 64);
  rc = -ENOENT;
  judge(f, &rc, 0, NULL);
  assert_int_equal(rc, -ENOENT);
  assert_true(s3_client_rdma_usable(&f->c));
  done(f);
}

/* Reply 500 (RDMATransferFailed; RC: the session is gone): the server
   answered, so nothing is in doubt; GET and PUT alike are sent again over
   HTTP at once, and the request remembers it (the session is dropped). */
static void test_failed_resent(void **state)
{
  static const char *methods[] = {"GET", "PUT"};

  (void)state;
  for (int i = 0; i < 2; i++) {
    struct fixture *f = fix(methods[i], 64);
    int rc = -EIO; /* HTTP 500 InternalError */

    assert_false(s3_req_rdma_failed(f->r));
    assert_int_equal(judge(f, &rc, 0, REPLY, "500", NULL), S3_RDMA_RESEND);
    assert_int_equal(rc, 0);
    assert_true(s3_req_rdma_failed(f->r));
    assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_FAILED);
    assert_false(s3_req_rdma_carried(f->r)); /* the resend has no token */
    assert_false(s3_req_rdma_doubt(f->r));
    assert_true(s3_client_rdma_usable(&f->c));
    done(f);
  }
}

static void test_put(void **state)
{
  struct fixture *f = fix("PUT", 32);
  int rc = 0;

  (void)state;
  judge(f, &rc, 0, REPLY, "200", BYTES, "32", "etag", "\"e\"", NULL);
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  rc = 0; /* a PUT moves exactly the token's bytes */
  judge(f, &rc, 0, REPLY, "200", BYTES, "31", NULL);
  assert_int_equal(rc, -EBADMSG);
  /* declined, whatever the HTTP status: resent over HTTP, token dropped */
  rc = -ENOSYS;
  assert_int_equal(judge(f, &rc, 0, REPLY, "501", NULL), S3_RDMA_RESEND);
  assert_false(s3_req_rdma_carried(f->r));
  assert_int_equal(atomic_load(&f->c.st_rdma_resent), 1);
  done(f);
  /* NVIDIA's form: HTTP 200 with reply 501 and an RDMANotSupported body
     (nothing stored): resent over HTTP too, never taken as stored */
  f = fix("PUT", 32);
  rc = 0;
  assert_int_equal(judge(f, &rc, 180, REPLY, "501", NULL), S3_RDMA_RESEND);
  assert_int_not_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  assert_int_equal(atomic_load(&f->c.st_rdma_resent), 1);
  done(f);
  /* ignored: the server stored an empty object; resent, and no more tokens */
  f = fix("PUT", 32);
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", "\"empty\"", NULL), S3_RDMA_RESEND);
  assert_false(s3_client_rdma_usable(&f->c));
  done(f);
}

/* A PUT served without a reply header: its ETag (the body's MD5) shows our
   bytes were stored; anything else is taken as ignored and resent. */
static void test_put_no_reply(void **state)
{
  struct fixture *f = fix("PUT", 32);
  int rc = 0;
  char up[40];

  (void)state;
  memset(f->buf, 'a', 32);
  /* the empty body's MD5: the server stored nothing of ours */
  assert_int_equal(judge(f, &rc, 0, "etag",
                         "\"d41d8cd98f00b204e9800998ecf8427e\"", NULL),
                   S3_RDMA_RESEND);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_IGNORED);
  assert_false(s3_client_rdma_known(&f->c));
  done(f);

  f = fix("PUT", 32);
  memset(f->buf, 'a', 32);
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", md5_32a, NULL), S3_RDMA_KEEP);
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  assert_int_equal(s3_req_rdma_bytes(f->r), 32);
  assert_true(s3_client_rdma_known(&f->c));
  assert_true(s3_client_rdma_usable(&f->c));
  assert_int_equal(atomic_load(&f->c.st_rdma_put_etag), 1);
  /* quoted (as servers send it): the same */
  snprintf(up, sizeof(up), "\"%s\"", md5_32a);
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", up, NULL), S3_RDMA_KEEP);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  /* in capitals: the same */
  for (size_t i = 0; i < 32; i++)
    up[i] = (char)toupper((unsigned char)md5_32a[i]);
  up[32] = '\0';
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", up, NULL), S3_RDMA_KEEP);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  /* a multipart-style or truncated ETag is not the body's */
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag",
                         "\"5eca9bd3eb07c006cd43ae48dfde7fd3-1\"", NULL),
                   S3_RDMA_RESEND);
  /* the server has served a PUT without a reply: later PUT bodies are
     hashed when the token is set (the submitter's thread), and the reply
     checked against that hash */
  assert_true(atomic_load(&f->c.rdma_put_quiet));
  f->r->rdma_md5_set = false;
  assert_int_equal(s3_req_set_rdma(f->r, "tok", 32), 0);
  assert_true(f->r->rdma_md5_set);
  f->buf[0] = 'z'; /* changed after the hash: the hash is what counts */
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", md5_32a, NULL), S3_RDMA_KEEP);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
  done(f);
  /* one byte different: not ours */
  f = fix("PUT", 32);
  memset(f->buf, 'a', 32);
  f->buf[31] = 'b';
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", md5_32a, NULL), S3_RDMA_RESEND);
  assert_false(s3_client_rdma_usable(&f->c));
  done(f);
}

/* A PUT whose token names memory the client cannot read (device memory):
   never resent over HTTP nor taken as stored by its ETag; it fails with
   EOPNOTSUPP, not retried. */
static void test_put_rdma_only(void **state)
{
  struct {
    const char *h1, *v1, *h2, *v2;
  } replies[] = {
      {REPLY, "501", NULL, NULL},          /* declined */
      {REPLY, "500", NULL, NULL},          /* the transfer failed */
      {"etag", "\"empty\"", NULL, NULL},   /* ignored */
      {"etag", md5_32a, NULL, NULL},       /* the body's MD5: not ours */
  };

  (void)state;
  for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
    struct fixture *f = fix("PUT", 32);
    struct s3_err_map m = {0};
    int rc = 0;

    memset(f->buf, 'a', 32);
    atomic_store(&f->c.rdma_put_quiet, true);
    s3_req_set_rdma_only(f->r);
    assert_false(f->r->rdma_md5_set);
    assert_int_equal(judge(f, &rc, 0, replies[i].h1, replies[i].v1, NULL),
                     S3_RDMA_KEEP);
    assert_int_equal(rc, -EOPNOTSUPP);
    assert_int_not_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
    assert_int_equal(atomic_load(&f->c.st_rdma_resent), 0);
    assert_true(s3_client_rdma_usable(&f->c)); /* this request only */
    /* the map the engine decides retries with: not retryable */
    rc = 0;
    s3_req_reset_reply(f->r);
    assert_int_equal(s3_rdma_attempt_end(&f->c, f->r, &rc, &m), S3_RDMA_KEEP);
    assert_false(m.retryable);
    done(f);
  }
  /* served: as any PUT */
  {
    struct fixture *f = fix("PUT", 32);
    int rc = 0;

    s3_req_set_rdma_only(f->r);
    judge(f, &rc, 0, REPLY, "200", BYTES, "32", NULL);
    assert_int_equal(rc, 0);
    assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_DONE);
    done(f);
  }
}

/* A PUT from another process's memory (a caller's registered buffer): a
   reply without the header is not taken as served by its ETag (the owner
   may have changed the bytes), is resent over HTTP, and turns tokens off
   for the client only when the server stored the empty body (it read no
   memory at all). */
static void test_put_foreign(void **state)
{
  struct fixture *f = fix("PUT", 32);
  int rc = 0;

  (void)state;
  memset(f->buf, 'a', 32);
  atomic_store(&f->c.rdma_put_quiet, true);
  s3_req_set_rdma_foreign(f->r);
  assert_int_equal(s3_req_set_rdma(f->r, "tok", 32), 0);
  assert_false(f->r->rdma_md5_set); /* not hashed: it would prove nothing */
  assert_int_equal(judge(f, &rc, 0, "etag", md5_32a, NULL), S3_RDMA_RESEND);
  assert_int_equal(rc, 0);
  assert_int_equal(s3_req_rdma_path(f->r), S3_RDMA_IGNORED);
  assert_true(s3_client_rdma_usable(&f->c));
  /* the empty body stored: the token was ignored, whoever's memory */
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag",
                         "\"d41d8cd98f00b204e9800998ecf8427e\"", NULL),
                   S3_RDMA_RESEND);
  assert_false(s3_client_rdma_usable(&f->c));
  done(f);
  /* the same reply to a request of our own memory turns tokens off */
  f = fix("PUT", 32);
  memset(f->buf, 'b', 32);
  rc = 0;
  assert_int_equal(judge(f, &rc, 0, "etag", md5_32a, NULL), S3_RDMA_RESEND);
  assert_false(s3_client_rdma_usable(&f->c));
  done(f);
}

/* A token attempt's deadline: the client's, a second per 8 MiB, or the
   request's own timeout when shorter. */
static void test_attempt_ms(void **state)
{
  struct fixture *f = fix("GET", 64);

  (void)state;
  f->c.cfg.rdma_timeout_ms = 120000;
  assert_int_equal(s3_rdma_attempt_ms(&f->c, f->r), 120000);
  f->r->rdma_len = 64ull << 20;
  assert_int_equal(s3_rdma_attempt_ms(&f->c, f->r), 128000);
  f->c.cfg.request_timeout_ms = 3000;
  assert_int_equal(s3_rdma_attempt_ms(&f->c, f->r), 3000);
  s3_req_set_timeout(f->r, 2000);
  assert_int_equal(s3_rdma_attempt_ms(&f->c, f->r), 2000);
  s3_req_set_timeout(f->r, 900000);
  assert_int_equal(s3_rdma_attempt_ms(&f->c, f->r), 128000);
  done(f);
}

/*
 * The defaults, 30 s each; the configuration is the one way to change them
 * (s3.low_speed_time, rdma.timeout): the variables that used to override
 * them are not read any more.
 */
static void test_defaults(void **state)
{
  struct s3_client_config cfg;

  (void)state;
  setenv("S3R_LOW_SPEED_TIME_S", "2", 1);
  setenv("S3R_RDMA_TIMEOUT_MS", "1500", 1);
  s3_client_config_default(&cfg);
  assert_int_equal(cfg.low_speed_time_s, 30);
  assert_int_equal(cfg.rdma_timeout_ms, 30000);
  unsetenv("S3R_LOW_SPEED_TIME_S");
  unsetenv("S3R_RDMA_TIMEOUT_MS");
}

/* The value of header name in an attempt's list, or NULL. */
static const char *sent(const struct s3_req *r, const char *name)
{
  size_t n = strlen(name);

  for (const struct curl_slist *l = r->hdr_list; l; l = l->next)
    if (!strncasecmp(l->data, name, n) && l->data[n] == ':')
      return l->data + n + 2;
  return NULL;
}

/*
 * A token attempt sends its deadline, signed, as wall-clock ms: the
 * server's limit and the client's own (the attempt's timeout) are one.
 * An attempt without a token sends none.
 */
static void test_deadline_sent(void **state)
{
  struct s3_client_config cfg;
  struct s3_client *c;
  struct s3_req *r;
  char err[256], buf[16];
  const char *v, *auth;
  uint64_t before, after, exp;

  (void)state;
  s3_client_config_default(&cfg);
  cfg.endpoint = "http://127.0.0.1:9";
  cfg.creds.access_key = "AKIDEXAMPLE";
  cfg.creds.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  cfg.creds.region = "us-east-1";
  cfg.rdma_timeout_ms = 7000;
  c = s3_client_create(&cfg, err, sizeof(err));
  if (!c)
    fail_msg("client: %s", err);
  r = s3_req_create(c, "GET", "b", "k");
  s3_req_set_sink_buf(r, buf, sizeof(buf));
  s3_req_set_range(r, 0, sizeof(buf));
  assert_int_equal(s3_attempt_prepare(c, r), 0);
  assert_null(sent(r, "x-amz-rdma-expires"));
  assert_int_equal(s3_req_set_rdma(r, "tok", sizeof(buf)), 0);
  before = s3_wall_ms();
  assert_int_equal(s3_attempt_prepare(c, r), 0);
  after = s3_wall_ms();
  v = sent(r, "x-amz-rdma-expires");
  assert_non_null(v);
  exp = strtoull(v, NULL, 10);
  assert_true(exp >= before + 7000 && exp <= after + 7000);
  assert_int_equal(r->rdma_attempt_ms, 7000);
  auth = sent(r, "Authorization");
  assert_non_null(auth);
  assert_non_null(strstr(auth, "x-amz-rdma-expires"));
  assert_false(s3_req_rdma_doubt(r)); /* nothing in doubt yet */
  {
    uint64_t mono, wall;
    s3_req_rdma_deadline(r, &mono, &wall);
    assert_true(mono == 0 && wall == 0);
  }
  s3_req_destroy(r);
  s3_client_destroy(c);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attempt_ms),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_deadline_sent),
      cmocka_unit_test(test_set_rdma_rules),
      cmocka_unit_test(test_get_done),
      cmocka_unit_test(test_get_untrusted),
      cmocka_unit_test(test_failed_resent),
      cmocka_unit_test(test_get_declined_ignored),
      cmocka_unit_test(test_put),
      cmocka_unit_test(test_put_no_reply),
      cmocka_unit_test(test_put_rdma_only),
      cmocka_unit_test(test_put_foreign),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
