/*
 * gw_token_probe: the token paths of s3rdma-gateway, end to end over cma.
 * Run with S3R_ENDPOINT pointing at a gateway (test_gw_token.sh does it).
 * Prints "ok - ..." / "not ok - ..." lines; exit 0 when all pass, 77 when
 * cma is not available here (skip), 1 otherwise. --victim* and --attack:
 * a process presents the tokens of another it may not reach (see below).
 * --slow: against a gateway that waits SLOW_DELAY_MS before it moves a
 * token's bytes (--test-token-delay): time (a client with a 1 s low-speed
 * window), clients that give up or cancel, deadlines.
 *
 * The token requests are written by hand (token header, UNSIGNED-PAYLOAD,
 * x-amz-decoded-content-length) so the exact wire form is under test; the
 * last checks go through the client's own s3_req_set_rdma. A deadline
 * (x-amz-rdma-expires) the signature does not cover needs a request the
 * client cannot make: those are signed here and sent with libcurl.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "integration/itest.h"
#include "s3/s3_sigv4.h"
#include "rdma/rdx_i.h" /* rdx_stat_parse, for --victim-thread */
#include "rdma/rdx_transport.h"

#define PAGE 4096
#define TOKHDR "x-amz-rdma-token"
#define CANARY 0xa5

static int fails;
static struct s3_client *c;
static char bucket[64];
static struct rdx_transport *tr;
static unsigned char *mem;     /* PAGE canary + BUF + PAGE canary */
static unsigned char *buf;     /* mem + PAGE */
static size_t buf_len;
static struct rdx_region *reg;

static void check(bool ok, const char *name)
{
  printf("%s - %s\n", ok ? "ok" : "not ok", name);
  fflush(stdout);
  if (!ok)
    fails++;
}

static bool canaries_intact(void)
{
  for (size_t i = 0; i < PAGE; i++)
    if (mem[i] != CANARY || buf[buf_len + i] != CANARY)
      return false;
  return true;
}

static bool buf_is(unsigned char v, size_t off, size_t n)
{
  for (size_t i = off; i < off + n; i++)
    if (buf[i] != v)
      return false;
  return true;
}

struct reply {
  long status;
  int result;
  char rdma_reply[16];
  uint64_t moved;
  bool has_moved;
  size_t body;
  char code[64];
  char msg[256]; /* the error's Message */
  char etag[S3_ETAG_MAX];
};

/*
 * One hand-made token request. range_len 0: no Range. decoded < 0: no
 * x-amz-decoded-content-length. query: "partNumber=1&uploadId=..." or NULL.
 */
static struct reply token_req(const char *method, const char *key,
                              const char *token, uint64_t range_off,
                              uint64_t range_len, int64_t decoded,
                              const char *upload_id, int part)
{
  struct s3_req *r = s3_req_create(c, method, bucket, key);
  static char sink[64 * 1024];
  struct reply rep = {0};
  char num[32];
  const char *v;

  if (token && s3_req_add_header(r, TOKHDR, token))
    abort();
  if (decoded >= 0) {
    snprintf(num, sizeof(num), "%" PRId64, decoded);
    if (s3_req_add_header(r, "x-amz-decoded-content-length", num))
      abort();
  }
  if (upload_id) {
    snprintf(num, sizeof(num), "%d", part);
    if (s3_req_add_query(r, "partNumber", num) ||
        s3_req_add_query(r, "uploadId", upload_id))
      abort();
  }
  s3_req_set_body(r, NULL, 0, false); /* UNSIGNED-PAYLOAD, no body */
  if (range_len)
    s3_req_set_range(r, range_off, range_len);
  s3_req_set_sink_buf(r, sink, sizeof(sink));
  s3_req_submit(r, NULL, NULL);
  rep.result = s3_req_wait(r);
  rep.status = s3_req_status(r);
  rep.body = s3_req_received(r);
  v = s3_req_header(r, "x-amz-rdma-reply");
  snprintf(rep.rdma_reply, sizeof(rep.rdma_reply), "%s", v ? v : "");
  v = s3_req_header(r, "x-amz-rdma-bytes-transferred");
  if (v) {
    rep.has_moved = true;
    rep.moved = strtoull(v, NULL, 10);
  }
  v = s3_req_header(r, "etag");
  snprintf(rep.etag, sizeof(rep.etag), "%s", v ? v : "");
  snprintf(rep.code, sizeof(rep.code), "%s", s3_req_error(r)->code);
  snprintf(rep.msg, sizeof(rep.msg), "%s", s3_req_error(r)->message);
  if (!rep.code[0] && rep.body > 0 && rep.body < sizeof(sink)) {
    /* a 200 carrying an <Error> (a declined PUT): its code */
    char *c0, *c1;

    sink[rep.body] = '\0';
    if ((c0 = strstr((char *)sink, "<Code>")) &&
        (c1 = strstr(c0, "</Code>")))
      snprintf(rep.code, sizeof(rep.code), "%.*s", (int)(c1 - c0 - 6), c0 + 6);
  }
  s3_req_destroy(r);
  return rep;
}

static void token(uint64_t off, uint64_t len, enum rdx_op op, char *out)
{
  if (rdx_token_for(tr, reg, off, len, op, out, RDX_TOKEN_MAX) < 0)
    abort();
}

static void reset_buf(unsigned char v)
{
  memset(buf, v, buf_len);
}

static bool object_is(const char *key, const unsigned char *want, size_t n)
{
  unsigned char *got = malloc(n + 1);
  size_t g = 0;
  bool ok;

  ok = got && s3_get_object(c, bucket, key, 0, n + 1, got, &g) == 0 &&
       g == n && memcmp(got, want, n) == 0;
  free(got);
  return ok;
}

static void test_get(const unsigned char *obj, size_t size)
{
  char tok[RDX_TOKEN_MAX];
  struct reply rep;
  uint64_t L = 2 * 1024 * 1024 + 5, off = 1000;

  reset_buf(0);
  token(0, L, RDX_GET, tok);
  rep = token_req("GET", "obj", tok, off, L, -1, NULL, 0);
  check(rep.result == 0 && rep.status == 206, "token GET of a range: 206");
  check(strcmp(rep.rdma_reply, "206") == 0, "token GET: x-amz-rdma-reply 206");
  check(rep.has_moved && rep.moved == L, "token GET: bytes-transferred");
  check(rep.body == 0, "token GET: empty body");
  check(memcmp(buf, obj + off, L) == 0, "token GET: the right bytes");
  check(buf_is(0, L, buf_len - L) && canaries_intact(),
        "token GET: nothing written past the range");

  /* the range runs past the end of the object: what upstream sent */
  reset_buf(0x11);
  token(0, 4096, RDX_GET, tok);
  rep = token_req("GET", "obj", tok, size - 100, 4096, -1, NULL, 0);
  check(rep.status == 206 && rep.moved == 100 &&
            memcmp(buf, obj + size - 100, 100) == 0 && buf_is(0x11, 100, 3996),
        "token GET past the end moves what exists");

  /* no Range: the whole object (length from upstream) */
  reset_buf(0);
  token(0, size, RDX_GET, tok);
  rep = token_req("GET", "obj", tok, 0, 0, -1, NULL, 0);
  check(rep.status == 200 && strcmp(rep.rdma_reply, "200") == 0 &&
            rep.moved == size && memcmp(buf, obj, size) == 0,
        "token GET of a whole object: 200");
  check(canaries_intact(), "canaries intact after GETs");
}

static void test_put(unsigned char *pat, size_t n)
{
  char tok[RDX_TOKEN_MAX], *upload = NULL;
  struct reply rep;
  struct s3_part_etag part = {0};

  itest_fill(pat, n, 7);
  memcpy(buf, pat, n);
  token(0, n, RDX_PUT, tok);
  rep = token_req("PUT", "put", tok, 0, 0, (int64_t)n, NULL, 0);
  check(rep.result == 0 && rep.status == 200 &&
            strcmp(rep.rdma_reply, "200") == 0 && rep.moved == n,
        "token PUT: 200, x-amz-rdma-reply 200, bytes-transferred");
  check(object_is("put", pat, n), "token PUT stored the buffer");

  /* UploadPart with a token, then Complete */
  if (s3_create_multipart(c, bucket, "mp", NULL, &upload, NULL) == 0) {
    rep = token_req("PUT", "mp", tok, 0, 0, (int64_t)n, upload, 1);
    check(rep.result == 0 && rep.status == 200 &&
              strcmp(rep.rdma_reply, "206") == 0 && rep.moved == n,
          "token UploadPart: x-amz-rdma-reply 206");
    part.part_number = 1;
    part.etag = rep.etag;
    check(s3_complete_multipart(c, bucket, "mp", upload, &part, 1, NULL) == 0 &&
              object_is("mp", pat, n),
          "token UploadPart + Complete stored the buffer");
    free(upload);
  } else {
    check(false, "create multipart upload");
  }
}

/* Tampered tokens: refused, nothing moved, nothing stored. */
static void test_refused(const unsigned char *obj, const unsigned char *pat,
                         size_t n)
{
  char tok[RDX_TOKEN_MAX], bad[RDX_TOKEN_MAX];
  struct reply rep;
  uint64_t L = 65536;

  reset_buf(0x5a);
  token(0, L, RDX_GET, tok);
  rep = token_req("GET", "obj", tok, 0, L + 1, -1, NULL, 0);
  check((rep.status == 403 || rep.status == 400) && rep.moved == 0 &&
            buf_is(0x5a, 0, buf_len) && canaries_intact(),
        "GET range widened by 1: refused, nothing written");

  token(0, L, RDX_PUT, tok);
  rep = token_req("GET", "obj", tok, 0, L, -1, NULL, 0);
  check(rep.status == 403 && buf_is(0x5a, 0, buf_len),
        "put token on a GET: 403, nothing written");

  token(0, L, RDX_GET, tok);
  snprintf(bad, sizeof(bad), "%s", tok);
  memcpy(bad + 13, "00000001", 8); /* s3r1:cma:get:PPPPPPPP: another pid */
  rep = token_req("GET", "obj", bad, 0, L, -1, NULL, 0);
  check((rep.status == 400 || rep.status == 403) && buf_is(0x5a, 0, buf_len),
        "GET with another pid: refused, nothing written");

  rep = token_req("GET", "obj", "s3r1:cma:get:garbage", 0, L, -1, NULL, 0);
  check(rep.status == 400, "malformed token: 400");

  /* PUTs: the object "put" must stay pat */
  memset(buf, 0x77, n);
  token(0, n, RDX_GET, tok);
  rep = token_req("PUT", "put", tok, 0, 0, (int64_t)n, NULL, 0);
  check(rep.status == 403, "get token on a PUT: 403");
  token(0, n - 1, RDX_PUT, tok);
  rep = token_req("PUT", "put", tok, 0, 0, (int64_t)n, NULL, 0);
  check(rep.status == 400, "PUT with decoded length != token length: 400");
  token(0, n, RDX_PUT, tok);
  snprintf(bad, sizeof(bad), "%s", tok);
  memcpy(bad + 13, "00000001", 8);
  rep = token_req("PUT", "put", bad, 0, 0, (int64_t)n, NULL, 0);
  check(rep.status == 400 || rep.status == 403, "PUT with another pid: refused");
  check(object_is("put", pat, n), "refused PUTs stored nothing");
  check(canaries_intact(), "canaries intact after refusals");
  (void)obj;
}

/* ---- requests signed by hand ---------------------------------------------- */

static uint64_t wall_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct raw_reply {
  long status;
  bool moved;        /* an x-amz-rdma-bytes-transferred header came back */
  char body[1024];   /* the start of the body (an error document) */
  size_t body_len;
};

static size_t raw_header(char *p, size_t size, size_t n, void *arg)
{
  static const char name[] = "x-amz-rdma-bytes-transferred:";
  struct raw_reply *rr = arg;

  if (size * n >= sizeof(name) - 1 &&
      strncasecmp(p, name, sizeof(name) - 1) == 0)
    rr->moved = true;
  return size * n;
}

static size_t raw_body(char *p, size_t size, size_t n, void *arg)
{
  struct raw_reply *rr = arg;
  size_t room = sizeof(rr->body) - 1 - rr->body_len, k = size * n;

  memcpy(rr->body + rr->body_len, p, k < room ? k : room);
  rr->body_len += k < room ? k : room;
  rr->body[rr->body_len] = 0;
  return size * n;
}

static size_t raw_no_body(char *p, size_t size, size_t n, void *arg)
{
  (void)p, (void)size, (void)n, (void)arg;
  return 0;
}

/*
 * A token request on bucket/key signed here with the environment's keys:
 * GET of [0, len) or PUT of len bytes (no body), carrying
 * x-amz-rdma-expires: expires, inside the signature when sign_expires,
 * else outside it (sent, not in SignedHeaders). Returns the reply;
 * status 0 when the request could not be made.
 */
static struct raw_reply raw_token_req(const char *method, const char *key,
                                      const char *token, uint64_t len,
                                      uint64_t expires, bool sign_expires)
{
  const char *ep = getenv("S3R_ENDPOINT"), *hs;
  char host[256], path[256], url[512], date[32], range[64], decl[32],
      exp[32], line[1024], *auth = NULL;
  struct s3_kv h[8];
  struct raw_reply rr = {0};
  struct curl_slist *l = NULL;
  time_t now = time(NULL);
  size_t nh = 0;
  struct tm tm;
  CURL *e;

  if (!ep || !(hs = strstr(ep, "://")))
    return rr;
  snprintf(host, sizeof(host), "%.*s", (int)strcspn(hs + 3, "/"), hs + 3);
  snprintf(path, sizeof(path), "/%s/%s", bucket, key);
  snprintf(url, sizeof(url), "%.*s%s", (int)(hs + 3 - ep), ep, host);
  snprintf(url + strlen(url), sizeof(url) - strlen(url), "%s", path);
  gmtime_r(&now, &tm);
  strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
  snprintf(range, sizeof(range), "bytes=0-%" PRIu64, len - 1);
  snprintf(decl, sizeof(decl), "%" PRIu64, len);
  snprintf(exp, sizeof(exp), "%" PRIu64, expires);
  h[nh++] = (struct s3_kv){"host", host};
  h[nh++] = (struct s3_kv){"x-amz-date", date};
  h[nh++] = (struct s3_kv){"x-amz-content-sha256", S3_UNSIGNED_PAYLOAD};
  h[nh++] = (struct s3_kv){TOKHDR, token};
  if (strcmp(method, "GET") == 0)
    h[nh++] = (struct s3_kv){"range", range};
  else
    h[nh++] = (struct s3_kv){"x-amz-decoded-content-length", decl};
  if (sign_expires)
    h[nh++] = (struct s3_kv){"x-amz-rdma-expires", exp};
  {
    struct s3_sigv4_input in = {
        .method = method,
        .path = path,
        .query = "",
        .headers = h,
        .n_headers = nh,
        .payload_hash = S3_UNSIGNED_PAYLOAD,
        .amz_date = date,
        .region = s3_client_region(c),
        .service = "s3",
        .access_key = getenv("AWS_ACCESS_KEY_ID"),
        .secret_key = getenv("AWS_SECRET_ACCESS_KEY"),
        .generic = false,
    };
    if (!in.access_key || !in.secret_key ||
        s3_sigv4_authorization(&in, &auth, NULL))
      return rr;
  }
  for (size_t i = 0; i < nh; i++) {
    snprintf(line, sizeof(line), "%s: %s", h[i].key, h[i].val);
    l = curl_slist_append(l, line);
  }
  if (!sign_expires) { /* sent, but not in SignedHeaders */
    snprintf(line, sizeof(line), "x-amz-rdma-expires: %s", exp);
    l = curl_slist_append(l, line);
  }
  snprintf(line, sizeof(line), "Authorization: %s", auth);
  l = curl_slist_append(l, line);
  l = curl_slist_append(l, "Expect:");
  l = curl_slist_append(l, "Accept:");
  e = curl_easy_init();
  if (!e || !l)
    abort();
  curl_easy_setopt(e, CURLOPT_URL, url);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, l);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, raw_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &rr);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, raw_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &rr);
  curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
  if (strcmp(method, "PUT") == 0) {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)0);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, raw_no_body);
  }
  if (curl_easy_perform(e) == CURLE_OK)
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &rr.status);
  {
    const char *why = strstr(rr.body, "<Code>");
    printf("# hand-signed %s %s, x-amz-rdma-expires %s: HTTP %ld%s %.*s\n",
           method, key, sign_expires ? "signed" : "NOT signed", rr.status,
           rr.moved ? " (bytes moved)" : "",
           why ? (int)strcspn(why, "\n") : 0, why ? why : "");
  }
  curl_easy_cleanup(e);
  curl_slist_free_all(l);
  free(auth);
  return rr;
}

/*
 * x-amz-rdma-expires outside the signature: anyone on the path could move
 * a client's deadline later, and the gateway would then touch its memory
 * after the client took it back. Refused (400), nothing moved, nothing
 * stored. The same requests with the header signed succeed, so what is
 * refused is the unsigned deadline, not the hand-made signature.
 */
static void test_unsigned_expires(const unsigned char *obj,
                                  const unsigned char *pat, size_t n)
{
  char tok[RDX_TOKEN_MAX];
  struct raw_reply rr;
  uint64_t L = 65536, later = wall_ms() + 3600 * 1000;

  reset_buf(0x6b);
  token(0, L, RDX_GET, tok);
  rr = raw_token_req("GET", "obj", tok, L, later, true);
  check(rr.status == 206 && rr.moved && memcmp(buf, obj, L) == 0,
        "hand-signed token GET, x-amz-rdma-expires signed: served");
  reset_buf(0x6b);
  rr = raw_token_req("GET", "obj", tok, L, later, false);
  check((rr.status == 400 || rr.status == 403) && !rr.moved &&
            buf_is(0x6b, 0, buf_len) && canaries_intact(),
        "token GET with x-amz-rdma-expires not signed: refused, nothing "
        "written");

  memset(buf, 0x6c, n); /* what the refused PUT would store */
  token(0, n, RDX_PUT, tok);
  rr = raw_token_req("PUT", "put", tok, n, later, false);
  check((rr.status == 400 || rr.status == 403) && !rr.moved,
        "token PUT with x-amz-rdma-expires not signed: refused");
  check(object_is("put", pat, n), "  ... and nothing stored");
  rr = raw_token_req("PUT", "put-signed", tok, n, later, true);
  check(rr.status == 200 && rr.moved && object_is("put-signed", buf, n),
        "hand-signed token PUT, x-amz-rdma-expires signed: stored");
}

/* A kind the gateway cannot serve (DC): declined with 501. Its target is
   at 127.0.0.1, an address of this host: the only kind of target the
   gateway's default --rdma-dc-targets (peer) lets a loopback client name
   (another is refused, 403: test_gw_hostile). */
static void test_declined(const unsigned char *obj, const unsigned char *pat,
                          size_t n)
{
  static const char dc[] = "000073967e5ff000:00001000:01f2e973:0000:007a03:1:"
                           "00000000000000000000ffff7f000001";
  struct reply rep;
  struct s3_req *r;
  static unsigned char body[4096];

  r = s3_req_create(c, "GET", bucket, "obj");
  if (s3_req_add_header(r, TOKHDR, dc))
    abort();
  s3_req_set_body(r, NULL, 0, false);
  s3_req_set_range(r, 500, sizeof(body));
  s3_req_set_sink_buf(r, body, sizeof(body));
  s3_req_submit(r, NULL, NULL);
  check(s3_req_wait(r) == 0 && s3_req_status(r) == 206 &&
            s3_req_header(r, "x-amz-rdma-reply") &&
            strcmp(s3_req_header(r, "x-amz-rdma-reply"), "501") == 0 &&
            s3_req_received(r) == sizeof(body) &&
            memcmp(body, obj + 500, sizeof(body)) == 0,
        "dc token GET declined: 501 and the bytes in the body");
  s3_req_destroy(r);

  rep = token_req("PUT", "put", dc, 0, 0, 4096, NULL, 0);
  check(rep.status == 200 && strcmp(rep.rdma_reply, "501") == 0 &&
            strcmp(rep.code, "RDMANotSupported") == 0,
        "dc token PUT declined: 200, reply 501, RDMANotSupported");
  check(object_is("put", pat, n), "declined PUT stored nothing");
}

/* The client's own token support (s3_req_set_rdma) against the gateway. */
static void test_client(const unsigned char *obj, unsigned char *pat, size_t n)
{
  char tok[RDX_TOKEN_MAX];
  struct s3_req *r;
  uint64_t L = 300000;
  int rc;

  reset_buf(0);
  token(0, L, RDX_GET, tok);
  r = s3_req_create(c, "GET", bucket, "obj");
  s3_req_set_range(r, 12345, L);
  s3_req_set_sink_buf(r, buf, L);
  rc = s3_req_set_rdma(r, tok, L);
  s3_req_submit(r, NULL, NULL);
  rc = rc ? rc : s3_req_wait(r);
  check(rc == 0 && s3_req_rdma_path(r) == S3_RDMA_DONE &&
            s3_req_rdma_bytes(r) == L && memcmp(buf, obj + 12345, L) == 0,
        "client s3_req_set_rdma GET through the gateway");
  s3_req_destroy(r);

  itest_fill(pat, n, 9);
  memcpy(buf, pat, n);
  token(0, n, RDX_PUT, tok);
  r = s3_req_create(c, "PUT", bucket, "put2");
  s3_req_set_body(r, buf, n, false);
  rc = s3_req_set_rdma(r, tok, n);
  s3_req_submit(r, NULL, NULL);
  rc = rc ? rc : s3_req_wait(r);
  check(rc == 0 && s3_req_rdma_path(r) == S3_RDMA_DONE &&
            object_is("put2", pat, n),
        "client s3_req_set_rdma PUT through the gateway");
  s3_req_destroy(r);
}

/* ---- --slow: against a gateway started with --test-token-delay ---------- */

/* The gateway's delay before it moves a token's bytes (test_gw_token.sh). */
#define SLOW_DELAY_MS 3000

static void sleep_ms(unsigned ms)
{
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

/*
 * A client for the time tests: low_speed_s its low-speed window (0: none),
 * once: each request tried once (else retried as usual).
 */
static struct s3_client *client_with(unsigned low_speed_s, bool once)
{
  struct s3_client_config cfg;
  char err[512];
  struct s3_client *cl;

  s3_client_config_default(&cfg);
  cfg.endpoint = getenv("S3R_ENDPOINT");
  cfg.low_speed_time_s = low_speed_s;
  if (once)
    cfg.retry.max_attempts = 1;
  cl = s3_client_create(&cfg, err, sizeof(err));
  if (!cl) {
    fprintf(stderr, "client: %s\n", err);
    abort();
  }
  return cl;
}

/*
 * A hand-made token request on client cl, giving up after timeout_ms;
 * expires: an x-amz-rdma-expires value to send (0: none). Returns the
 * request's result; *status its HTTP status.
 */
static int slow_req(struct s3_client *cl, const char *method, const char *key,
                    const char *token, uint64_t len, uint64_t expires,
                    unsigned timeout_ms, long *status)
{
  struct s3_req *r = s3_req_create(cl, method, bucket, key);
  static char sink[64 * 1024];
  char num[32];
  int rc;

  if (s3_req_add_header(r, TOKHDR, token))
    abort();
  if (!strcmp(method, "PUT")) {
    snprintf(num, sizeof(num), "%" PRIu64, len);
    if (s3_req_add_header(r, "x-amz-decoded-content-length", num))
      abort();
  } else {
    s3_req_set_range(r, 0, len);
  }
  if (expires) {
    snprintf(num, sizeof(num), "%" PRIu64, expires);
    if (s3_req_add_header(r, "x-amz-rdma-expires", num))
      abort();
  }
  s3_req_set_body(r, NULL, 0, false);
  s3_req_set_sink_buf(r, sink, sizeof(sink));
  s3_req_set_timeout(r, timeout_ms);
  s3_req_submit(r, NULL, NULL);
  rc = s3_req_wait(r);
  *status = s3_req_status(r);
  printf("# %s %s: %s, HTTP %ld, %u attempt(s)\n", method, key,
         rc ? strerror(-rc) : "ok", *status, s3_req_attempts(r));
  s3_req_destroy(r);
  return rc;
}

/*
 * The client's own token requests (s3_req_set_rdma) while the server
 * takes longer than the client's low-speed window (1 s here): one attempt
 * each, not aborted, the bytes right.
 */
static void test_slow_client(const unsigned char *obj, unsigned char *pat,
                             size_t n)
{
  struct s3_client *cs = client_with(1, false);
  char tok[RDX_TOKEN_MAX];
  struct s3_req *r;
  uint64_t L = 300000;
  int rc;

  reset_buf(0);
  token(0, L, RDX_GET, tok);
  r = s3_req_create(cs, "GET", bucket, "obj");
  s3_req_set_range(r, 777, L);
  s3_req_set_sink_buf(r, buf, L);
  rc = s3_req_set_rdma(r, tok, L);
  s3_req_submit(r, NULL, NULL);
  rc = rc ? rc : s3_req_wait(r);
  printf("# slow GET: %s, %u attempt(s)\n", rc ? strerror(-rc) : "ok",
         s3_req_attempts(r));
  check(rc == 0 && s3_req_attempts(r) == 1 &&
            s3_req_rdma_path(r) == S3_RDMA_DONE &&
            memcmp(buf, obj + 777, L) == 0 && buf_is(0, L, buf_len - L),
        "a slow server's token GET: one attempt, not cut by the low-speed "
        "window, the right bytes");
  check(!s3_req_rdma_doubt(r), "  ... and its memory not in doubt");
  s3_req_destroy(r);

  itest_fill(pat, n, 11);
  memcpy(buf, pat, n);
  token(0, n, RDX_PUT, tok);
  r = s3_req_create(cs, "PUT", bucket, "slowput");
  s3_req_set_body(r, buf, n, false);
  rc = s3_req_set_rdma(r, tok, n);
  s3_req_submit(r, NULL, NULL);
  rc = rc ? rc : s3_req_wait(r);
  printf("# slow PUT: %s, %u attempt(s)\n", rc ? strerror(-rc) : "ok",
         s3_req_attempts(r));
  check(rc == 0 && s3_req_attempts(r) == 1 &&
            s3_req_rdma_path(r) == S3_RDMA_DONE &&
            object_is("slowput", pat, n),
        "a slow server's token PUT: one attempt, stored");
  s3_req_destroy(r);
  s3_client_destroy(cs);
}

/*
 * A client that gives up (its connection closed) before the gateway has
 * moved a byte: the gateway must leave its memory alone (the client may
 * reuse it) and must not store its PUT later, over what the client wrote
 * since.
 */
static void test_client_gone(unsigned char *pat, size_t n)
{
  struct s3_client *c1 = client_with(30, true);
  unsigned char *newer = malloc(n);
  char tok[RDX_TOKEN_MAX];
  uint64_t L = 65536;
  long status;
  int rc;

  if (!newer)
    abort();
  reset_buf(0x3c);
  token(0, L, RDX_GET, tok);
  rc = slow_req(c1, "GET", "obj", tok, L, 0, 1000, &status);
  check(rc != 0 && status == 0, "a token GET given up after 1 s: no reply");

  itest_fill(pat, n, 13);
  memcpy(buf + L, pat, n);
  token(L, n, RDX_PUT, tok);
  rc = slow_req(c1, "PUT", "gone", tok, n, 0, 1000, &status);
  check(rc != 0 && status == 0, "a token PUT given up after 1 s: no reply");
  itest_fill(newer, n, 17);
  check(s3_put_object(c, bucket, "gone", newer, n, NULL, NULL) == 0,
        "  ... a newer version stored over HTTP");
  sleep_ms(SLOW_DELAY_MS + 2000); /* the gateway's delay is over */
  check(buf_is(0x3c, 0, L) && canaries_intact(),
        "the gateway did not write into the memory of a client gone");
  check(object_is("gone", newer, n),
        "the PUT given up was not stored over the newer version");
  s3_client_destroy(c1);
  free(newer);
}

/* What a cancelled request looked like when it was handed back. */
struct seen {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done, doubt;
  int rc;
  uint64_t deadline;
};

static void seen_done(struct s3_req *r, void *arg)
{
  struct seen *sn = arg;
  uint64_t wall;

  pthread_mutex_lock(&sn->mu);
  sn->rc = s3_req_result(r);
  sn->doubt = s3_req_rdma_doubt(r);
  s3_req_rdma_deadline(r, &sn->deadline, &wall);
  sn->done = true;
  pthread_cond_broadcast(&sn->cv);
  pthread_mutex_unlock(&sn->mu);
}

/*
 * A token GET cancelled while the server works: handed back (-ECANCELED)
 * already marked in doubt, with its deadline (the memory must not be
 * reused before it); the gateway, seeing the connection closed, writes
 * nothing into it.
 */
static void test_cancel(void)
{
  struct seen sn = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                    false, false, 0, 0};
  char tok[RDX_TOKEN_MAX];
  struct s3_stats st;
  struct s3_req *r;
  uint64_t L = 65536;
  int i;

  reset_buf(0x3e);
  token(0, L, RDX_GET, tok);
  r = s3_req_create(c, "GET", bucket, "obj");
  s3_req_set_range(r, 0, L);
  s3_req_set_sink_buf(r, buf, L);
  if (s3_req_set_rdma(r, tok, L))
    abort();
  s3_req_submit(r, seen_done, &sn);
  for (i = 0; i < 500; i++) { /* on the wire: its attempt has started */
    s3_client_stats(c, &st);
    if (st.inflight)
      break;
    sleep_ms(10);
  }
  s3_req_cancel(r);
  pthread_mutex_lock(&sn.mu);
  for (i = 0; i < 100 && !sn.done; i++) {
    pthread_mutex_unlock(&sn.mu);
    sleep_ms(100);
    pthread_mutex_lock(&sn.mu);
  }
  pthread_mutex_unlock(&sn.mu);
  check(sn.done && sn.rc == -ECANCELED, "a token GET cancelled on the wire");
  check(sn.doubt && sn.deadline != 0,
        "  ... handed back already in doubt, with its deadline");
  s3_req_destroy(r);
  sleep_ms(SLOW_DELAY_MS + 2000); /* the gateway's delay is over */
  check(buf_is(0x3e, 0, buf_len) && canaries_intact(),
        "  ... and nothing written into its memory");
}

/* A token whose deadline (x-amz-rdma-expires) passes while the gateway
   waits, its client still connected: refused then, nothing moved, nothing
   stored. */
static void test_expired(unsigned char *pat, size_t n)
{
  struct s3_client *c1 = client_with(0, true);
  char tok[RDX_TOKEN_MAX];
  struct s3_object_meta m = {0};
  uint64_t L = 65536;
  long status;
  int rc;

  reset_buf(0x3d);
  token(0, L, RDX_GET, tok);
  rc = slow_req(c1, "GET", "obj", tok, L, wall_ms() + 1000,
                SLOW_DELAY_MS + 10000, &status);
  check(rc != 0 && status == 400 && buf_is(0x3d, 0, buf_len) &&
            canaries_intact(),
        "a token GET past its deadline: 400, nothing written");

  itest_fill(pat, n, 19);
  memcpy(buf, pat, n);
  token(0, n, RDX_PUT, tok);
  rc = slow_req(c1, "PUT", "late", tok, n, wall_ms() + 1000,
                SLOW_DELAY_MS + 10000, &status);
  check(rc != 0 && status == 400, "a token PUT past its deadline: 400");
  check(s3_head_object(c, bucket, "late", &m) == -ENOENT,
        "  ... and not stored");
  s3_object_meta_cleanup(&m);

  token(0, L, RDX_GET, tok);
  rc = slow_req(c1, "GET", "obj", tok, L, wall_ms() - 1, 10000, &status);
  check(rc != 0 && status == 400, "a token already past its deadline: 400");
  s3_client_destroy(c1);
}

static int slow(void)
{
  char err[RDX_ERR_MAX];
  size_t size = 1024 * 1024 + 99, n = 512 * 1024 + 3;
  unsigned char *obj = malloc(size), *pat = malloc(n);
  bool ready;

  if (rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &tr, err, sizeof(err))) {
    printf("skip: cma transport: %s\n", err);
    free(obj);
    free(pat);
    return 77;
  }
  c = itest_client(NULL);
  itest_bucket_name(bucket, sizeof(bucket), "gwslow");
  buf_len = size + PAGE;
  mem = aligned_alloc(PAGE, (buf_len + 3 * PAGE - 1) / PAGE * PAGE);
  ready = obj && pat && mem;
  if (ready) {
    memset(mem, CANARY, buf_len + 2 * PAGE);
    buf = mem + PAGE;
    itest_fill(obj, size, 5);
    ready = rdx_register(tr, buf, buf_len, 0, &reg) == 0;
  }
  check(ready && s3_create_bucket(c, bucket) == 0 &&
            s3_put_object(c, bucket, "obj", obj, size, NULL, NULL) == 0,
        "set up: a bucket and an object");
  if (!fails) {
    test_slow_client(obj, pat, n);
    test_client_gone(pat, n);
    test_cancel();
    test_expired(pat, n);
  }
  itest_drop_bucket(c, bucket);
  rdx_unregister(reg);
  rdx_transport_close(tr);
  s3_client_destroy(c);
  free(mem);
  free(obj);
  free(pat);
  printf("%d failed\n", fails);
  return fails ? 1 : 0;
}

/*
 * Victims: a process whose memory another process presents tokens for.
 * Its buffer is a page of VICTIM_FILL between two canary pages (CANARY);
 * it writes a GET and a PUT token for the middle page to FILE (FILE.tmp,
 * then renamed: a reader never sees half a file), waits for stdin to
 * close, then exits 0 only if all three pages are untouched (1 if not, 2
 * on a setup error, 77 when cma is not available here).
 *   --victim FILE               its own tokens
 *   --victim-nondumpable FILE   the same after prctl(PR_SET_DUMPABLE, 0)
 *   --victim-thread FILE        tokens naming a thread it started: the
 *                               thread's tid as the pid and the thread's
 *                               own start time (/proc/self/task/TID/stat)
 * (test_gw_hostile.sh's setgid victim is gw_victim: gw_victim.c says why.)
 */
#define VICTIM_FILL 0x3c

enum victim_kind { V_PLAIN, V_NONDUMPABLE, V_THREAD };

struct vthread {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pid_t tid;
  bool stop;
};

static void *vthread_main(void *arg)
{
  struct vthread *t = arg;

  pthread_mutex_lock(&t->mu);
  t->tid = gettid();
  pthread_cond_broadcast(&t->cv);
  while (!t->stop)
    pthread_cond_wait(&t->cv, &t->mu);
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

/* A cma token naming thread tid of this process, with its start time. */
static int thread_token(pid_t tid, uint64_t addr, uint64_t len, enum rdx_op op,
                        char *out)
{
  char path[64], line[1024], state;
  struct rdx_token t = {0};
  uint64_t start;
  ssize_t n;
  int fd;

  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  n = read(fd, line, sizeof(line));
  close(fd);
  if (n <= 0 || rdx_stat_parse(line, (size_t)n, &state, &start))
    return -1;
  t.kind = RDX_CMA;
  t.op = op;
  t.addr = addr;
  t.len = len;
  t.cma.pid = (int32_t)tid;
  t.cma.start_time = start;
  return rdx_token_format(&t, out, RDX_TOKEN_MAX) < 0 ? -1 : 0;
}

static int victim(const char *path, enum victim_kind kind)
{
  char err[RDX_ERR_MAX], get[RDX_TOKEN_MAX], put[RDX_TOKEN_MAX], tmp[4096];
  unsigned char *pages = aligned_alloc(PAGE, 3 * PAGE), *page;
  struct vthread th = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0,
                       false};
  pthread_t thread;
  bool started = false;
  struct rdx_region *r;
  int bad = 0;
  FILE *f;

  if (!pages)
    return 2;
  page = pages + PAGE;
  memset(pages, CANARY, 3 * PAGE);
  memset(page, VICTIM_FILL, PAGE);
  if (kind == V_NONDUMPABLE && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
    return 2;
  if (rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &tr, err, sizeof(err))) {
    fprintf(stderr, "skip: cma transport: %s\n", err);
    return 77;
  }
  if (rdx_register(tr, page, PAGE, 0, &r))
    return 2;
  if (kind == V_THREAD) {
    if (pthread_create(&thread, NULL, vthread_main, &th))
      return 2;
    started = true;
    pthread_mutex_lock(&th.mu);
    while (!th.tid)
      pthread_cond_wait(&th.cv, &th.mu);
    pthread_mutex_unlock(&th.mu);
    if (th.tid == getpid() ||
        thread_token(th.tid, (uintptr_t)page, PAGE, RDX_GET, get) ||
        thread_token(th.tid, (uintptr_t)page, PAGE, RDX_PUT, put))
      return 2;
  } else if (rdx_token_for(tr, r, 0, PAGE, RDX_GET, get, sizeof(get)) < 0 ||
             rdx_token_for(tr, r, 0, PAGE, RDX_PUT, put, sizeof(put)) < 0) {
    return 2;
  }
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  f = fopen(tmp, "w");
  if (!f || fprintf(f, "%s\n%s\n", get, put) < 0 || fclose(f) ||
      rename(tmp, path))
    return 2;
  while (getchar() != EOF)
    ;
  for (size_t i = 0; i < 3 * PAGE; i++)
    if (pages[i] != (i >= PAGE && i < 2 * PAGE ? VICTIM_FILL : CANARY))
      bad++;
  if (bad)
    fprintf(stderr, "victim: %d bytes of the buffer or its canaries changed\n",
            bad);
  if (started) {
    pthread_mutex_lock(&th.mu);
    th.stop = true;
    pthread_cond_broadcast(&th.cv);
    pthread_mutex_unlock(&th.mu);
    pthread_join(thread, NULL);
  }
  rdx_unregister(r);
  rdx_transport_close(tr);
  free(pages);
  return bad ? 1 : 0;
}

/*
 * Does the gateway's error message s disclose what only the victim knows:
 * its uids, its start time, its buffer's address? A uid is "uid" followed
 * by a number ("uid 0", "uid=0/0/0"; "the same uid and gid" is no leak).
 * The pid is the attacker's own input: blanked first, so that a start
 * time that happens to be a substring of it is not mistaken for a leak;
 * the Resource (the path the attacker sent) is not looked at. Numbers
 * shorter than 5 digits are not looked for (too likely by chance).
 * Returns what leaked, or NULL.
 */
static const char *leak(const char *s, const struct rdx_token *t)
{
  static char what[64];
  char txt[512], pid[16], num[4][24];
  const char *name[4] = {"start time", "start time (hex)", "address (hex)",
                         "address"};
  char *p;

  snprintf(txt, sizeof(txt), "%s", s);
  snprintf(pid, sizeof(pid), "%d", (int)t->cma.pid);
  while ((p = strstr(txt, pid)))
    memset(p, '#', strlen(pid));
  p = txt;
  while ((p = strcasestr(p, "uid"))) {
    p += 3;
    p += strspn(p, " =:s"); /* "uid 0", "uid=0", "uids: 0" */
    if (*p >= '0' && *p <= '9')
      return "a uid";
  }
  snprintf(num[0], sizeof(num[0]), "%" PRIu64, t->cma.start_time);
  snprintf(num[1], sizeof(num[1]), "%" PRIx64, t->cma.start_time);
  snprintf(num[2], sizeof(num[2]), "%" PRIx64, t->addr);
  snprintf(num[3], sizeof(num[3]), "%" PRIu64, t->addr);
  for (int i = 0; i < 4; i++)
    if (strlen(num[i]) >= 5 && strcasestr(txt, num[i])) {
      snprintf(what, sizeof(what), "the victim's %s", name[i]);
      return what;
    }
  return NULL;
}

/* One attack request's outcome, printed; true when refused as expected. */
static bool refused_as(const char *what, const struct reply *rep,
                       bool strict, long want_status, const char *want_code,
                       const struct rdx_token *victim_tok)
{
  const char *msg = rep->msg, *l = strict ? leak(msg, victim_tok) : NULL;
  bool ok;

  printf("# %s: %ld %s%s%s\n", what, rep->status,
         rep->code[0] ? rep->code : "(no S3 error)", msg[0] ? ": " : "", msg);
  ok = !rep->has_moved && rep->status >= 400 && rep->status < 500;
  if (want_status)
    ok = ok && rep->status == want_status && strcmp(rep->code, want_code) == 0;
  if (l)
    printf("# %s: the error discloses %s\n", what, l);
  return ok && !l;
}

/*
 * --attack FILE [--expect STATUS CODE]: as another process (another user,
 * or the same user without the right to reach the victim), present the
 * victim's tokens (its own, valid ones) to the gateway: both must be
 * refused, no byte written into the victim (it checks that itself), none
 * of its bytes stored. Without --expect: refused with 403. With --expect:
 * refused with exactly STATUS and S3 error CODE, the refusals disclose
 * nothing of the victim's (leak()), and a GET token with the victim's
 * start time changed (a reused pid) is refused (a 4xx) without disclosing
 * the real one. Prints what each request got.
 */
static int attack(const char *path, long want_status, const char *want_code)
{
  char get[RDX_TOKEN_MAX], put[RDX_TOKEN_MAX], other[RDX_TOKEN_MAX];
  unsigned char obj[PAGE];
  struct rdx_token vt;
  struct reply rep;
  bool strict = want_status != 0;
  FILE *f = fopen(path, "r");

  if (!f || !fgets(get, sizeof(get), f) || !fgets(put, sizeof(put), f))
    return 2;
  fclose(f);
  get[strcspn(get, "\n")] = '\0';
  put[strcspn(put, "\n")] = '\0';
  if (rdx_token_parse(get, strlen(get), &vt))
    return 2;
  if (!strict) {
    want_status = 403;
    want_code = "AccessDenied";
  }
  c = itest_client(NULL);
  itest_bucket_name(bucket, sizeof(bucket), "gwatk");
  memset(obj, 0x11, sizeof(obj));
  if (s3_create_bucket(c, bucket) ||
      s3_put_object(c, bucket, "obj", obj, sizeof(obj), NULL, NULL))
    return 2;
  rep = token_req("GET", "obj", get, 0, PAGE, -1, NULL, 0);
  check(refused_as("GET token", &rep, strict, want_status, want_code, &vt),
        "the victim's GET token: refused");
  rep = token_req("PUT", "stolen", put, 0, 0, PAGE, NULL, 0);
  check(refused_as("PUT token", &rep, strict, want_status, want_code, &vt),
        "the victim's PUT token: refused");
  if (strict) {
    struct rdx_token t = vt;
    t.cma.start_time++;
    if (rdx_token_format(&t, other, sizeof(other)) < 0)
      return 2;
    rep = token_req("GET", "obj", other, 0, PAGE, -1, NULL, 0);
    check(refused_as("GET token, start time + 1", &rep, true, 0, NULL, &vt),
          "the victim's GET token with another start time: refused, "
          "its start time not disclosed");
  }
  {
    struct s3_object_meta m = {0};
    check(s3_head_object(c, bucket, "stolen", &m) == -ENOENT,
          "nothing of the victim's stored");
    s3_object_meta_cleanup(&m);
  }
  itest_drop_bucket(c, bucket);
  s3_client_destroy(c);
  return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
  char err[RDX_ERR_MAX];
  size_t size = 3 * 1024 * 1024 + 123, n = 1536 * 1024 + 7;
  unsigned char *obj, *pat;
  int rc;

  if (argc == 2 && strcmp(argv[1], "--slow") == 0)
    return slow();
  if (argc == 3 && strcmp(argv[1], "--victim") == 0)
    return victim(argv[2], V_PLAIN);
  if (argc == 3 && strcmp(argv[1], "--victim-nondumpable") == 0)
    return victim(argv[2], V_NONDUMPABLE);
  if (argc == 3 && strcmp(argv[1], "--victim-thread") == 0)
    return victim(argv[2], V_THREAD);
  if (argc == 3 && strcmp(argv[1], "--attack") == 0)
    return attack(argv[2], 0, NULL);
  if (argc == 6 && strcmp(argv[1], "--attack") == 0 &&
      strcmp(argv[3], "--expect") == 0 && atol(argv[4]) > 0)
    return attack(argv[2], atol(argv[4]), argv[5]);
  obj = malloc(size);
  pat = malloc(n);
  rc = rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &tr, err, sizeof(err));
  if (rc) {
    printf("skip: cma transport: %s\n", err);
    return 77;
  }
  c = itest_client(NULL);
  itest_bucket_name(bucket, sizeof(bucket), "gwtok");
  buf_len = size + PAGE;
  mem = aligned_alloc(PAGE, (buf_len + 3 * PAGE - 1) / PAGE * PAGE);
  if (!obj || !pat || !mem)
    return 1;
  memset(mem, CANARY, buf_len + 2 * PAGE);
  buf = mem + PAGE;
  if (rdx_register(tr, buf, buf_len, 0, &reg))
    return 1;
  if (s3_create_bucket(c, bucket)) {
    printf("not ok - create bucket %s\n", bucket);
    return 1;
  }
  itest_fill(obj, size, 3);
  if (s3_put_object(c, bucket, "obj", obj, size, NULL, NULL)) {
    printf("not ok - put the test object\n");
    return 1;
  }
  test_get(obj, size);
  test_put(pat, n);
  test_refused(obj, pat, n);
  test_unsigned_expires(obj, pat, n);
  test_declined(obj, pat, n);
  if (!getenv("GW_PROBE_NO_CLIENT"))
    test_client(obj, pat, n);

  itest_drop_bucket(c, bucket);
  rdx_unregister(reg);
  rdx_transport_close(tr);
  s3_client_destroy(c);
  free(mem);
  free(obj);
  free(pat);
  printf("%d failed\n", fails);
  return fails ? 1 : 0;
}
