/*
 * test_s3_rc: the RC connect step's HTTP half (s3_rc.c) without a server:
 * what a finished connect POST means (s3_rc_connect_outcome: connected,
 * a server that does not speak the dialect, try again later, no reply),
 * the request's fixed path with no bucket (path-style, virtual-host and a
 * base path alike, the Host the endpoint's), signed; and the hooks the
 * data plane hangs on a client and a request (release once, stop hook).
 */
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
#include "s3/s3_rc.h"

#define SESSION "0123456789abcdef0123456789abcdef"
#define REPLY200 "200:01" "0000000000000000000000000000000000000000000000" \
                 "00000000000000000000000000000000000000000000"

static void test_outcome_connected(void **state)
{
  struct s3_rc_reply out;

  (void)state;
  assert_int_equal(s3_rc_connect_outcome(0, 200, SESSION, REPLY200, "00abcd",
                                         &out),
                   0);
  assert_string_equal(out.session, SESSION);
  assert_string_equal(out.reply, REPLY200);
  assert_string_equal(out.psn, "00abcd");
}

static void test_outcome_table(void **state)
{
  static const struct {
    int rc;
    long status;
    const char *session, *reply, *psn;
    int want;
  } cases[] = {
      /* plain S3 (RGW: a bucket named .s3rdma-rc), refusals of the
         dialect's own: never again */
      {-ENOENT, 404, NULL, NULL, NULL, -EPROTONOSUPPORT},
      {-EOPNOTSUPP, 405, NULL, NULL, NULL, -EPROTONOSUPPORT},
      {-EINVAL, 400, NULL, NULL, NULL, -EPROTONOSUPPORT},
      {-EACCES, 403, NULL, NULL, NULL, -EPROTONOSUPPORT},
      {-EOPNOTSUPP, 501, NULL, NULL, NULL, -EPROTONOSUPPORT},
      {-EIO, 301, NULL, NULL, NULL, -EPROTONOSUPPORT},
      /* 200 without what the dialect answers, or another 2xx */
      {0, 200, NULL, REPLY200, "1", -EPROTONOSUPPORT},
      {0, 200, SESSION, NULL, "1", -EPROTONOSUPPORT},
      {0, 200, SESSION, REPLY200, NULL, -EPROTONOSUPPORT},
      {0, 200, SESSION, REPLY200, "", -EPROTONOSUPPORT},
      {0, 200, SESSION, REPLY200, "123456789012345678", -EPROTONOSUPPORT},
      {0, 204, SESSION, REPLY200, "1", -EPROTONOSUPPORT},
      /* later: the server is busy or failed */
      {-EIO, 500, NULL, NULL, NULL, -EAGAIN},
      {-EAGAIN, 503, NULL, NULL, NULL, -EAGAIN},
      {-ETIMEDOUT, 408, NULL, NULL, NULL, -EAGAIN},
      {-EAGAIN, 429, NULL, NULL, NULL, -EAGAIN},
      /* no HTTP reply: the request's own error */
      {-ETIMEDOUT, 0, NULL, NULL, NULL, -ETIMEDOUT},
      {-ECONNREFUSED, 0, NULL, NULL, NULL, -ECONNREFUSED},
      {-ECANCELED, 0, NULL, NULL, NULL, -ECANCELED},
      {-EBADMSG, 200, SESSION, REPLY200, "1", -EBADMSG},
  };
  struct s3_rc_reply out;

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    memset(&out, 'x', sizeof(out));
    int got = s3_rc_connect_outcome(cases[i].rc, cases[i].status,
                                    cases[i].session, cases[i].reply,
                                    cases[i].psn, &out);
    if (got != cases[i].want)
      fail_msg("case %zu: got %d, want %d", i, got, cases[i].want);
    assert_string_equal(out.session, ""); /* nothing kept on failure */
    assert_string_equal(out.psn, "");
  }
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

static struct s3_client *client(const char *endpoint, bool vhost)
{
  struct s3_client_config cfg;
  struct s3_client *c;
  char err[256];

  s3_client_config_default(&cfg);
  cfg.endpoint = endpoint;
  cfg.virtual_host = vhost;
  cfg.creds.access_key = "AKIDEXAMPLE";
  cfg.creds.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  cfg.creds.region = "us-east-1";
  c = s3_client_create(&cfg, err, sizeof(err));
  if (!c)
    fail_msg("client: %s", err);
  return c;
}

/* The connect POST goes to the fixed path, whatever the addressing. */
static void test_fixed_path(void **state)
{
  static const struct {
    const char *endpoint;
    bool vhost;
    const char *url, *host;
  } cases[] = {
      {"http://127.0.0.1:9", false, "http://127.0.0.1:9/.s3rdma-rc/connect",
       "127.0.0.1:9"},
      {"http://127.0.0.1:9", true, "http://127.0.0.1:9/.s3rdma-rc/connect",
       "127.0.0.1:9"},
      {"http://127.0.0.1:9/base", false,
       "http://127.0.0.1:9/base/.s3rdma-rc/connect", "127.0.0.1:9"},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    struct s3_client *c = client(cases[i].endpoint, cases[i].vhost);
    struct s3_req *r = s3_req_create(c, "POST", NULL, NULL);
    const char *auth;

    r->path = strdup("/.s3rdma-rc/connect");
    assert_int_equal(s3_req_add_header(r, "x-amz-rdma-token", "ab"), 0);
    assert_int_equal(s3_req_add_header(r, "x-amz-rdma-psn", "00abcd"), 0);
    assert_int_equal(s3_attempt_prepare(c, r), 0);
    assert_string_equal(r->url, cases[i].url);
    assert_string_equal(sent(r, "host"), cases[i].host);
    auth = sent(r, "Authorization");
    assert_non_null(auth);
    assert_non_null(strstr(auth, "x-amz-rdma-psn;x-amz-rdma-token"));
    assert_null(sent(r, "x-amz-rdma-expires")); /* not an object token */
    s3_req_destroy(r);
    s3_client_destroy(c);
  }
}

static int released;
static void on_release(struct s3_req *r, void *arg)
{
  (void)r;
  released += *(int *)arg;
}

/* Destroyed unsubmitted: released once; submitted to a stopping client:
   released before the waiter sees it finished, once. */
static void test_release_once(void **state)
{
  struct s3_client *c = client("http://127.0.0.1:9", false);
  struct s3_req *r = s3_req_create(c, "GET", "b", "k");
  int one = 1;

  (void)state;
  released = 0;
  s3_req_set_rdma_release(r, on_release, &one);
  s3_req_destroy(r);
  assert_int_equal(released, 1);
  s3_client_destroy(c);
}

static int stopped;
static void on_stop(void *arg)
{
  stopped += *(int *)arg;
}

static void test_stop_hook(void **state)
{
  struct s3_client *c = client("http://127.0.0.1:9", false);
  int one = 1;

  (void)state;
  stopped = 0;
  s3_client_set_stop_hook(c, on_stop, &one);
  s3_client_destroy(c);
  assert_int_equal(stopped, 1);
  c = client("http://127.0.0.1:9", false);
  s3_client_set_stop_hook(c, on_stop, &one);
  s3_client_set_stop_hook(c, NULL, NULL); /* cleared */
  s3_client_destroy(c);
  assert_int_equal(stopped, 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_outcome_connected),
      cmocka_unit_test(test_outcome_table),
      cmocka_unit_test(test_fixed_path),
      cmocka_unit_test(test_release_once),
      cmocka_unit_test(test_stop_hook),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
