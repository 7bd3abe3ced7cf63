/*
 * test_rdx_cma: the cma transport across processes. A forked child plays
 * the client: it maps a buffer with guard bytes before and after the range,
 * opens its own transport, makes a token for the range and sends it up a
 * pipe; this process plays the gateway and calls rdx_serve chunk by chunk;
 * the child then checks every byte of its mapping on request.
 *
 * The server runs every process_vm_* call in a helper process holding the
 * peer's uid and gid and no capabilities (rdx_helper.h), so the kernel's
 * ptrace rules decide: the child, of our uid and gid, is reachable; a
 * non-dumpable child, a thread id, another uid or gid are refused.
 * Buffers on the server's side come from rdx_server_buf_alloc.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdma/rdx_server.h"
#include "rdma/rdx_transport.h"

#define GUARD 4113                /* bytes before the range: not page-aligned */
#define AFTER 4096                /* bytes after it */
#define LEN (3 * 65536 + 1234)    /* the range */
#define BIG (32 * 1024 * 1024 + 5)
#define GUARD_BYTE 0xa5
#define WAIT_MS 20000

/* Where the fields of a cma token's text start (rdx_token.h). */
#define AT_OP 9
#define AT_PID 13
#define AT_START 22
#define AT_ADDR 39
#define AT_LEN 56

enum mode {
  M_GET,   /* range zero; the parent writes the pattern */
  M_PUT,   /* range holds the pattern; the parent reads it */
  M_HOLES, /* 3 pages, the middle one unmapped, a get token over all 3 */
  M_EXIT,  /* send a get token, then exit */
  M_NODUMP, /* as M_GET, but not dumpable (PR_SET_DUMPABLE 0) */
};

struct child {
  pid_t pid;            /* 0: none */
  bool reaped;
  int cmd, reply;       /* our ends of the pipes */
  char text[RDX_TOKEN_MAX];
  struct rdx_token tok;
};

static struct child kid;
static struct rdx_server *srv;

static uint8_t pat(uint64_t i)
{
  return (uint8_t)(i * 131 + 7 + (i >> 9));
}

/* ---- the child ---------------------------------------------------------- */

static bool full_write(int fd, const void *p, size_t n)
{
  const char *c = p;

  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

/* First offset of the mapping that differs from what it should hold, or -1.
   want_pattern: the range holds the pattern (else it holds its initial
   contents); the guards always hold GUARD_BYTE. */
static int64_t check_map(const uint8_t *m, size_t map_len, size_t off,
                         size_t len, bool initial_pattern, bool want_pattern)
{
  for (size_t x = 0; x < map_len; x++) {
    uint8_t want;
    if (x < off || x >= off + len)
      want = GUARD_BYTE;
    else if (want_pattern || initial_pattern)
      want = pat(x - off);
    else
      want = 0;
    if (m[x] != want)
      return (int64_t)x;
  }
  return -1;
}

static void child_main(enum mode m, size_t len, int cmd, int reply)
{
  long page = sysconf(_SC_PAGESIZE);
  struct rdx_transport *t = NULL;
  struct rdx_region *r = NULL;
  char text[RDX_TOKEN_MAX], err[RDX_ERR_MAX];
  size_t map_len, off;
  uint8_t *mem;
  char c;

  if (m == M_HOLES) {
    off = 0;
    len = 3 * (size_t)page;
    map_len = len;
  } else {
    off = GUARD;
    map_len = (GUARD + len + AFTER + (size_t)page - 1) / (size_t)page *
              (size_t)page;
  }
  mem = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    _exit(10);
  if (m == M_HOLES) {
    if (munmap(mem + page, (size_t)page))
      _exit(11);
  } else {
    memset(mem, GUARD_BYTE, map_len);
    for (size_t i = 0; i < len; i++)
      mem[off + i] = m == M_PUT ? pat(i) : 0;
  }
  if (rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &t, err, sizeof(err)) ||
      rdx_register(t, mem, map_len, 0, &r))
    _exit(12);
  if (m == M_NODUMP && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
    _exit(16);
  memset(text, 0, sizeof(text));
  if (rdx_token_for(t, r, off, len, m == M_PUT ? RDX_PUT : RDX_GET, text,
                    sizeof(text)) != RDX_CMA_TOKEN_LEN)
    _exit(13);
  if (!full_write(reply, text, sizeof(text)))
    _exit(14);
  if (m == M_EXIT)
    _exit(0);
  /* commands: 'z' unchanged, 'p' range holds the pattern, 'h' holes */
  while (read(cmd, &c, 1) == 1) {
    int64_t bad = -1;

    if (c == 'q')
      break;
    if (c == 'h') {
      for (size_t x = 0; x < (size_t)page && bad < 0; x++)
        if (mem[x] != pat(x))
          bad = (int64_t)x;
      for (size_t x = 2 * (size_t)page; x < map_len && bad < 0; x++)
        if (mem[x] != pat(x))
          bad = (int64_t)x;
    } else {
      bad = check_map(mem, map_len, off, len, m == M_PUT, c == 'p');
    }
    if (!full_write(reply, &bad, sizeof(bad)))
      _exit(15);
  }
  rdx_unregister(r);
  rdx_transport_close(t);
  _exit(0);
}

/* ---- the parent's side of the child ------------------------------------- */

static void full_read(int fd, void *p, size_t n)
{
  char *c = p;

  while (n > 0) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    ssize_t r;

    if (poll(&pf, 1, WAIT_MS) != 1)
      fail_msg("the child did not answer in %d ms", WAIT_MS);
    r = read(fd, c, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      fail_msg("the child closed its pipe (it failed or exited)");
    c += r;
    n -= (size_t)r;
  }
}

static void child_start(enum mode m, size_t len)
{
  int to_child[2], to_parent[2];

  memset(&kid, 0, sizeof(kid));
  assert_int_equal(pipe(to_child), 0);
  assert_int_equal(pipe(to_parent), 0);
  kid.pid = fork();
  assert_true(kid.pid >= 0);
  if (kid.pid == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    child_main(m, len, to_child[0], to_parent[1]);
  }
  close(to_child[0]);
  close(to_parent[1]);
  kid.cmd = to_child[1];
  kid.reply = to_parent[0];
  full_read(kid.reply, kid.text, sizeof(kid.text));
  assert_int_equal(strlen(kid.text), RDX_CMA_TOKEN_LEN);
  assert_int_equal(rdx_token_parse(kid.text, strlen(kid.text), &kid.tok), 0);
  assert_int_equal(kid.tok.cma.pid, kid.pid);
}

/* Ask the child to check its mapping: the first bad offset, or -1. */
static int64_t child_check(char what)
{
  int64_t bad;

  assert_int_equal(write(kid.cmd, &what, 1), 1);
  full_read(kid.reply, &bad, sizeof(bad));
  return bad;
}

static void child_stop(void)
{
  int status;

  if (kid.pid <= 0)
    return;
  if (!kid.reaped) {
    char q = 'q';
    if (write(kid.cmd, &q, 1) != 1)
      kill(kid.pid, SIGKILL);
    if (waitpid(kid.pid, &status, 0) == kid.pid && WIFEXITED(status) &&
        WEXITSTATUS(status) != 0)
      print_error("child exited with %d\n", WEXITSTATUS(status));
  }
  close(kid.cmd);
  close(kid.reply);
  kid.pid = 0;
}

static int teardown(void **state)
{
  child_stop();
  return 0;
}

/* ---- serving ------------------------------------------------------------ */

static struct rdx_req req_for(enum rdx_op op, uint64_t len)
{
  struct rdx_req r = {.op = op, .len = len, .peer_local = true,
                      .peer_uid = getuid(), .peer_gid = getgid()};
  return r;
}

/* A serve that must succeed; a kernel refusal says why. */
static void serve_ok(const struct rdx_token *tok, const struct rdx_req *req,
                     uint64_t off, void *local, size_t len)
{
  char why[RDX_ERR_MAX] = "";
  int rc = rdx_serve(srv, tok, req, off, local, len, why, sizeof(why));

  if (rc == -EOPNOTSUPP || rc == -EACCES)
    fail_msg("the kernel refuses cross-memory attach here: %s (yama "
             "ptrace_scope must be 0 or 1)",
             why);
  if (rc)
    fail_msg("rdx_serve(%llu+%zu): %d %s", (unsigned long long)off, len, rc,
             why);
}

/* A serve that must be refused with want, saying why in one line that does
   not hold the token. */
static void refuse(const struct rdx_token *tok, const struct rdx_req *req,
                   uint64_t off, void *local, size_t len, int want)
{
  char why[RDX_ERR_MAX] = "";
  int rc = rdx_serve(srv, tok, req, off, local, len, why, sizeof(why));

  if (rc != want)
    fail_msg("rdx_serve(%llu+%zu) = %d (%s), want %d",
             (unsigned long long)off, len, rc, why, want);
  assert_true(why[0] != '\0');
  assert_null(strchr(why, '\n'));
  assert_null(strstr(why, "s3r1:")); /* never the token */
}

static void put_field(char *text, int at, int width, uint64_t v)
{
  for (int i = width - 1; i >= 0; i--, v >>= 4)
    text[at + i] = "0123456789abcdef"[v & 0xf];
}

/* The child's token with a hex field of its text replaced, parsed again. */
static struct rdx_token tampered(int at, int width, uint64_t v)
{
  char text[RDX_TOKEN_MAX];
  struct rdx_token t;

  memcpy(text, kid.text, sizeof(text));
  put_field(text, at, width, v);
  assert_int_equal(rdx_token_parse(text, strlen(text), &t), 0);
  return t;
}

/* ... with its range's address and length replaced. */
static struct rdx_token tampered_range(uint64_t addr, uint64_t len)
{
  char text[RDX_TOKEN_MAX];
  struct rdx_token t;

  memcpy(text, kid.text, sizeof(text));
  put_field(text, AT_ADDR, 16, addr);
  put_field(text, AT_LEN, 16, len);
  assert_int_equal(rdx_token_parse(text, strlen(text), &t), 0);
  return t;
}

static struct rdx_token op_flipped(void)
{
  char text[RDX_TOKEN_MAX];
  struct rdx_token t;

  memcpy(text, kid.text, sizeof(text));
  memcpy(text + AT_OP, kid.tok.op == RDX_GET ? "put" : "get", 3);
  assert_int_equal(rdx_token_parse(text, strlen(text), &t), 0);
  return t;
}

static uint8_t *pattern_buf(size_t len)
{
  uint8_t *p = malloc(len);

  assert_non_null(p);
  for (size_t i = 0; i < len; i++)
    p[i] = pat(i);
  return p;
}

/* A server buffer (the only memory rdx_serve takes) holding the pattern. */
static uint8_t *server_buf(size_t len, bool pattern)
{
  uint8_t *p = rdx_server_buf_alloc(srv, len);

  assert_non_null(p);
  for (size_t i = 0; i < len; i++)
    p[i] = pattern ? pat(i) : 0x5a;
  return p;
}

/* A pid that no process has: a reaped child's (until the pid space wraps). */
static pid_t dead_pid(void)
{
  pid_t pid = fork();

  assert_true(pid >= 0);
  if (pid == 0)
    _exit(0);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
  return pid;
}

/* ---- tests -------------------------------------------------------------- */

static void test_server_serves(void **state)
{
  char why[RDX_ERR_MAX];
  struct rdx_server *s2 = NULL;
  void *b, *b2;

  if (rdx_server_serves(srv, RDX_CMA, why, sizeof(why)))
    fail_msg("this server cannot serve cma: %s", why);
  assert_int_equal(rdx_server_serves(srv, RDX_RC, why, sizeof(why)),
                   -EOPNOTSUPP);
  assert_non_null(strstr(why, "rc tokens"));
  assert_int_equal(rdx_server_serves(srv, RDX_DC, why, sizeof(why)),
                   -EOPNOTSUPP);
  assert_non_null(strstr(why, "dc tokens")); /* no mlx5 device here */
  assert_int_equal(
      rdx_server_serves(srv, (enum rdx_kind)9, why, sizeof(why)), -EINVAL);
  assert_int_equal(rdx_server_serves(NULL, RDX_CMA, why, sizeof(why)),
                   -EINVAL);
  assert_int_equal(rdx_server_create(NULL, NULL, why, sizeof(why)), -EINVAL);
  assert_int_equal(rdx_server_create(&(struct rdx_server_cfg){100000, 2, 5},
                                     &s2, NULL, 0),
                   0);
  b = rdx_server_buf_alloc(s2, 100000);
  assert_non_null(b);
  assert_int_equal((uintptr_t)b % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
  memset(b, 1, 100000);
  b2 = rdx_server_buf_alloc(s2, 1);
  assert_non_null(b2);
  assert_null(rdx_server_buf_alloc(s2, 1)); /* both taken */
  rdx_server_buf_free(s2, b);
  assert_null(rdx_server_buf_alloc(s2, 200000)); /* larger than a buffer */
  assert_ptr_equal(rdx_server_buf_alloc(s2, 5), b);
  rdx_server_buf_free(s2, b);
  rdx_server_buf_free(s2, b2);
  rdx_server_buf_free(s2, NULL);
  assert_null(rdx_server_buf_alloc(s2, 0));
  rdx_server_destroy(s2);
  rdx_server_destroy(NULL);
}

/* GET: the pattern written in 3 chunks, out of order; guards untouched. */
static void test_get_round_trip(void **state)
{
  static const struct {
    uint64_t off;
    size_t len;
  } chunks[] = {{65536, 100000}, {0, 65536}, {165536, LEN - 165536}};
  struct rdx_req req = req_for(RDX_GET, LEN);
  uint8_t *src = server_buf(LEN, true);
  char why[RDX_ERR_MAX];
  int rc;

  child_start(M_GET, LEN);
  assert_true(kid.tok.len == LEN);
  rc = rdx_serve_check(srv, &kid.tok, &req, why, sizeof(why));
  if (rc)
    fail_msg("rdx_serve_check: %d %s", rc, why);
  assert_int_equal(child_check('z'), -1);
  serve_ok(&kid.tok, &req, chunks[0].off, src + chunks[0].off, chunks[0].len);
  /* the first chunk landed where it should, nothing else moved */
  for (size_t i = 1; i < 3; i++)
    serve_ok(&kid.tok, &req, chunks[i].off, src + chunks[i].off,
             chunks[i].len);
  assert_int_equal(child_check('p'), -1);
  rdx_server_buf_free(srv, src);
}

static uint64_t wall_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The client's deadline (rdx_req.expires_ms): before it the transfer goes
 * as usual; once passed, check and serve refuse (-ETIMEDOUT, saying so)
 * and not a byte moves, either way.
 */
static void test_deadline(void **state)
{
  struct rdx_req req = req_for(RDX_GET, LEN);
  uint8_t *src = server_buf(LEN, true);
  char why[RDX_ERR_MAX] = "";

  child_start(M_GET, LEN);
  req.expires_ms = wall_ms() + 60000;
  assert_int_equal(rdx_serve_check(srv, &kid.tok, &req, why, sizeof(why)), 0);
  serve_ok(&kid.tok, &req, 0, src, 4096);
  req.expires_ms = wall_ms() - 1;
  assert_int_equal(rdx_serve_check(srv, &kid.tok, &req, why, sizeof(why)),
                   -ETIMEDOUT);
  assert_non_null(strstr(why, "deadline"));
  refuse(&kid.tok, &req, 4096, src + 4096, LEN - 4096, -ETIMEDOUT);
  /* only the first 4096 bytes moved, before the deadline */
  assert_int_equal(child_check('p'), 4096 + GUARD);
  rdx_server_buf_free(srv, src);
}

/* PUT: the child's pattern read in 3 chunks; the child's memory unchanged. */
static void test_put_round_trip(void **state)
{
  struct rdx_req req = req_for(RDX_PUT, LEN);
  uint8_t *want = pattern_buf(LEN);
  uint8_t *dst = server_buf(LEN, false);

  child_start(M_PUT, LEN);
  assert_int_equal(kid.tok.op, RDX_PUT);
  serve_ok(&kid.tok, &req, 0, dst, 4096);
  serve_ok(&kid.tok, &req, 4096, dst + 4096, LEN - 4097);
  serve_ok(&kid.tok, &req, LEN - 1, dst + LEN - 1, 1);
  assert_memory_equal(dst, want, LEN);
  assert_int_equal(child_check('z'), -1);
  rdx_server_buf_free(srv, dst);
  free(want);
}

/* A chunk of 32 MiB in one call, then the 5-byte tail. */
static void test_get_big(void **state)
{
  struct rdx_req req = req_for(RDX_GET, BIG);
  uint8_t *src = server_buf(BIG, true);

  child_start(M_GET, BIG);
  serve_ok(&kid.tok, &req, 0, src, BIG - 5);
  serve_ok(&kid.tok, &req, BIG - 5, src + BIG - 5, 5);
  assert_int_equal(child_check('p'), -1);
  rdx_server_buf_free(srv, src);
}

/* Every tampered token or request is refused and nothing moves; then the
   genuine one works, so the refusals were not for want of access. */
static void test_get_tampered(void **state)
{
  struct rdx_req req = req_for(RDX_GET, LEN), r2;
  uint8_t *src = server_buf(LEN, true);
  uint8_t *copy = pattern_buf(LEN);
  struct rdx_token t, zero = {0};
  char why[RDX_ERR_MAX];
  uint64_t addr, start;
  pid_t gone = dead_pid();

  child_start(M_GET, LEN);
  addr = kid.tok.addr;
  start = kid.tok.cma.start_time;

  /* range widened by one byte at the end, and at the front */
  t = tampered(AT_LEN, 16, LEN + 1);
  refuse(&t, &req, 0, src, LEN, -EPERM);
  t = tampered_range(addr - 1, LEN + 1);
  refuse(&t, &req, 0, src, LEN, -EPERM);
  refuse(&t, &req, 1, src, LEN, -EPERM);
  /* narrowed: the request moves more than the token covers */
  t = tampered(AT_LEN, 16, LEN - 1);
  refuse(&t, &req, 0, src, LEN - 1, -EPERM);
  /* op flipped, on the token and on the request */
  t = op_flipped();
  refuse(&t, &req, 0, src, LEN, -EPERM);
  r2 = req_for(RDX_PUT, LEN);
  refuse(&kid.tok, &r2, 0, src, LEN, -EPERM);
  assert_memory_equal(src, copy, LEN); /* a refused PUT read nothing */
  /* the request's length differs from the token's */
  r2 = req_for(RDX_GET, LEN - 1);
  refuse(&kid.tok, &r2, 0, src, LEN - 1, -EPERM);
  r2 = req_for(RDX_GET, LEN + 1);
  refuse(&kid.tok, &r2, 0, src, LEN, -EPERM);
  /* pid of another process (init), of no process, and a wrong start time */
  t = tampered(AT_PID, 8, 1);
  refuse(&t, &req, 0, src, LEN, -ESRCH);
  t = tampered(AT_PID, 8, (uint64_t)gone);
  refuse(&t, &req, 0, src, LEN, -ESRCH);
  t = tampered(AT_START, 16, start + 1);
  refuse(&t, &req, 0, src, LEN, -ESRCH);
  t = tampered(AT_START, 16, start - 1);
  refuse(&t, &req, 0, src, LEN, -ESRCH);
  assert_int_equal(rdx_serve_check(srv, &t, &req, why, sizeof(why)), -ESRCH);
  assert_non_null(strstr(why, "reused"));
  assert_null(strstr(why, "started")); /* start times go to the log only */
  /* chunks outside the request's range */
  refuse(&kid.tok, &req, LEN, src, 1, -ERANGE);
  refuse(&kid.tok, &req, LEN - 10, src, 11, -ERANGE);
  refuse(&kid.tok, &req, 0, src, LEN + 1, -ERANGE);
  refuse(&kid.tok, &req, UINT64_MAX - 5, src, 10, -ERANGE);
  refuse(&kid.tok, &req, UINT64_MAX, src, 1, -ERANGE);
  /* the peer may not name this process */
  r2 = req;
  r2.peer_local = false;
  refuse(&kid.tok, &r2, 0, src, LEN, -EACCES);
  assert_int_equal(rdx_serve_check(srv, &kid.tok, &r2, why, sizeof(why)),
                   -EACCES);
  r2 = req;
  r2.peer_uid = (int64_t)getuid() + 1;
  refuse(&kid.tok, &r2, 0, src, LEN, -EACCES);
  assert_int_equal(rdx_serve_check(srv, &kid.tok, &r2, why, sizeof(why)),
                   -EACCES);
  assert_non_null(strstr(why, "kernel"));
  r2.peer_uid = -1; /* unknown: refused, not served */
  refuse(&kid.tok, &r2, 0, src, LEN, -EACCES);
  /* not a token, an unknown operation, nothing to move */
  refuse(&zero, &req, 0, src, LEN, -EINVAL);
  r2 = req_for(RDX_OP_NONE, LEN);
  refuse(&kid.tok, &r2, 0, src, LEN, -EINVAL);
  refuse(&kid.tok, &req, 0, NULL, LEN, -EINVAL);
  refuse(&kid.tok, &req, 0, src, 0, -EINVAL);
  assert_int_equal(rdx_serve(NULL, &kid.tok, &req, 0, src, 1, NULL, 0),
                   -EINVAL);
  assert_int_equal(rdx_serve(srv, NULL, &req, 0, src, 1, NULL, 0), -EINVAL);
  assert_int_equal(rdx_serve(srv, &kid.tok, NULL, 0, src, 1, NULL, 0),
                   -EINVAL);
  /* kinds this server does not serve: declined, not refused */
  t = (struct rdx_token){.kind = RDX_DC, .addr = addr, .len = LEN,
                         .dc = {.rkey = 1, .dctn = 2, .lid = 3}};
  refuse(&t, &req, 0, src, LEN, -EOPNOTSUPP);
  assert_int_equal(rdx_serve_check(srv, &t, &req, why, sizeof(why)),
                   -EOPNOTSUPP);

  assert_int_equal(child_check('z'), -1);
  serve_ok(&kid.tok, &req, 0, src, LEN);
  assert_int_equal(child_check('p'), -1);
  rdx_server_buf_free(srv, src);
  free(copy);
}

/* PUT tokens tampered: refused, our buffer and the child's untouched. */
static void test_put_tampered(void **state)
{
  struct rdx_req req = req_for(RDX_PUT, LEN), r2;
  uint8_t *dst = server_buf(LEN, false);
  struct rdx_token t;

  child_start(M_PUT, LEN);
  t = tampered(AT_LEN, 16, LEN + 1);
  refuse(&t, &req, 0, dst, LEN, -EPERM);
  t = op_flipped();
  refuse(&t, &req, 0, dst, LEN, -EPERM);
  r2 = req_for(RDX_GET, LEN);
  refuse(&kid.tok, &r2, 0, dst, LEN, -EPERM);
  refuse(&kid.tok, &req, LEN, dst, 1, -ERANGE);
  t = tampered(AT_START, 16, kid.tok.cma.start_time + 1);
  refuse(&t, &req, 0, dst, LEN, -ESRCH);
  for (size_t i = 0; i < LEN; i++)
    if (dst[i] != 0x5a)
      fail_msg("a refused PUT wrote our byte %zu", i);
  assert_int_equal(child_check('z'), -1);
  rdx_server_buf_free(srv, dst);
}

/* A token whose process exited: refused as a zombie and once reaped. */
static void test_exited(void **state)
{
  struct rdx_req req = req_for(RDX_GET, LEN);
  uint8_t *src = server_buf(LEN, true);
  char why[RDX_ERR_MAX];
  siginfo_t info;

  child_start(M_EXIT, LEN);
  memset(&info, 0, sizeof(info));
  assert_int_equal(waitid(P_PID, (id_t)kid.pid, &info, WEXITED | WNOWAIT), 0);
  assert_int_equal(info.si_pid, kid.pid);
  refuse(&kid.tok, &req, 0, src, LEN, -ESRCH);
  assert_int_equal(rdx_serve(srv, &kid.tok, &req, 0, src, LEN, why,
                             sizeof(why)),
                   -ESRCH);
  assert_non_null(strstr(why, "exited"));
  assert_int_equal(waitpid(kid.pid, NULL, 0), kid.pid);
  kid.reaped = true;
  refuse(&kid.tok, &req, 0, src, LEN, -ESRCH);
  assert_int_equal(rdx_serve_check(srv, &kid.tok, &req, why, sizeof(why)),
                   -ESRCH);
  assert_non_null(strstr(why, "gone"));
  rdx_server_buf_free(srv, src);
}

/* A hole in the client's range: the bytes before it move, then EFAULT. */
static void test_efault(void **state)
{
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  struct rdx_req req = req_for(RDX_GET, 3 * page);
  uint8_t *src = server_buf(3 * page, true);
  char why[RDX_ERR_MAX];

  child_start(M_HOLES, 0);
  assert_int_equal(rdx_serve(srv, &kid.tok, &req, 0, src, 3 * page, why,
                             sizeof(why)),
                   -EFAULT);
  assert_non_null(strstr(why, "not mapped"));
  assert_null(strstr(why, "0x")); /* addresses go to the log only */
  assert_int_equal(rdx_serve(srv, &kid.tok, &req, page + 100, src + page + 100,
                             10, why, sizeof(why)),
                   -EFAULT);
  serve_ok(&kid.tok, &req, 2 * page, src + 2 * page, page);
  assert_int_equal(child_check('h'), -1);
  rdx_server_buf_free(srv, src);
}

/* A token naming this process: what the peer's uid allows. */
static void test_peer_uid(void **state)
{
  struct rdx_transport *t = NULL;
  struct rdx_region *r = NULL;
  struct rdx_token tok;
  struct rdx_req req = req_for(RDX_GET, 1000);
  char text[RDX_TOKEN_MAX], err[RDX_ERR_MAX];
  uint8_t *mem = malloc(3000), *src = server_buf(1000, true);

  assert_non_null(mem);
  memset(mem, GUARD_BYTE, 3000);
  assert_int_equal(
      rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &t, err, sizeof(err)), 0);
  assert_int_equal(rdx_register(t, mem, 3000, 0, &r), 0);
  assert_int_equal(rdx_token_for(t, r, 1000, 1000, RDX_GET, text, sizeof(text)),
                   RDX_CMA_TOKEN_LEN);
  assert_int_equal(rdx_token_parse(text, strlen(text), &tok), 0);

  req.peer_uid = (int64_t)getuid() + 1;
  refuse(&tok, &req, 0, src, 1000, -EACCES);
  req.peer_uid = (int64_t)getuid();
  req.peer_gid = (int64_t)getgid() + 1; /* the kernel compares gids too */
  refuse(&tok, &req, 0, src, 1000, -EACCES);
  req.peer_gid = -1;
  refuse(&tok, &req, 0, src, 1000, -EACCES);
  for (size_t i = 0; i < 3000; i++)
    assert_int_equal(mem[i], GUARD_BYTE);
  req.peer_gid = (int64_t)getgid();
  serve_ok(&tok, &req, 0, src, 500);
  serve_ok(&tok, &req, 500, src + 500, 500);
  for (size_t i = 0; i < 3000; i++)
    assert_int_equal(mem[i], i >= 1000 && i < 2000 ? pat(i - 1000) : GUARD_BYTE);
  rdx_unregister(r);
  rdx_transport_close(t);
  free(mem);
  rdx_server_buf_free(srv, src);
}

/* A non-dumpable process of our own uid and gid: the kernel refuses a
   peer without CAP_SYS_PTRACE, root included; nothing moves. */
static void test_nodump(void **state)
{
  struct rdx_req req = req_for(RDX_GET, LEN);
  uint8_t *src = server_buf(LEN, true);
  char why[RDX_ERR_MAX];

  child_start(M_NODUMP, LEN);
  assert_int_equal(rdx_serve_check(srv, &kid.tok, &req, why, sizeof(why)),
                   -EACCES);
  refuse(&kid.tok, &req, 0, src, LEN, -EACCES);
  assert_int_equal(child_check('z'), -1);
  rdx_server_buf_free(srv, src);
}

static void *sleeper(void *arg)
{
  int *fd = arg;
  char c;

  return read(*fd, &c, 1) < 0 ? NULL : arg; /* until the pipe closes */
}

/* A token naming a thread's id (with the thread's own start time): not a
   process, refused before anything moves. */
static void test_thread_id(void **state)
{
  struct rdx_transport *t = NULL;
  struct rdx_region *r = NULL;
  struct rdx_token tok;
  struct rdx_req req = req_for(RDX_GET, 1000);
  char text[RDX_TOKEN_MAX], err[RDX_ERR_MAX], path[64], why[RDX_ERR_MAX];
  uint8_t *mem = malloc(3000), *src = server_buf(1000, true);
  uint64_t start = 0;
  pthread_t th;
  pid_t tid = 0;
  int pfd[2];
  FILE *f;

  assert_non_null(mem);
  memset(mem, GUARD_BYTE, 3000);
  assert_int_equal(pipe(pfd), 0);
  assert_int_equal(pthread_create(&th, NULL, sleeper, &pfd[0]), 0);
  /* the thread's id: the task in /proc/self/task that is not us */
  for (int i = 0; i < 200 && tid == 0; i++) {
    for (pid_t x = getpid() + 1; x < getpid() + 4096 && tid == 0; x++) {
      snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)x);
      if (access(path, R_OK) == 0)
        tid = x;
    }
    if (tid == 0)
      usleep(10000);
  }
  if (tid == 0)
    fail_msg("cannot find the thread's id");
  f = fopen(path, "r");
  assert_non_null(f);
  assert_true(fscanf(f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                        "%*u %*u %*u %*d %*d %*d %*d %*d %*d %" SCNu64,
                     &start) == 1);
  fclose(f);
  assert_int_equal(
      rdx_transport_open(RDX_TRANSPORT_CMA, NULL, &t, err, sizeof(err)), 0);
  assert_int_equal(rdx_register(t, mem, 3000, 0, &r), 0);
  assert_int_equal(rdx_token_for(t, r, 1000, 1000, RDX_GET, text, sizeof(text)),
                   RDX_CMA_TOKEN_LEN);
  put_field(text, AT_PID, 8, (uint64_t)tid);
  put_field(text, AT_START, 16, start);
  assert_int_equal(rdx_token_parse(text, strlen(text), &tok), 0);
  assert_int_equal(rdx_serve_check(srv, &tok, &req, why, sizeof(why)),
                   -EINVAL);
  assert_non_null(strstr(why, "thread"));
  refuse(&tok, &req, 0, src, 1000, -EINVAL);
  for (size_t i = 0; i < 3000; i++)
    assert_int_equal(mem[i], GUARD_BYTE);
  close(pfd[1]);
  pthread_join(th, NULL);
  close(pfd[0]);
  rdx_unregister(r);
  rdx_transport_close(t);
  free(mem);
  rdx_server_buf_free(srv, src);
}

static int group_setup(void **state)
{
  char err[RDX_ERR_MAX];

  signal(SIGPIPE, SIG_IGN);
  /* buffers for test_get_big's 32 MiB chunk, and two more */
  if (rdx_server_create(&(struct rdx_server_cfg){BIG, 3, 30}, &srv, err,
                        sizeof(err))) {
    print_error("rdx_server_create: %s\n", err);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state)
{
  rdx_server_destroy(srv);
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_server_serves, teardown),
      cmocka_unit_test_teardown(test_get_round_trip, teardown),
      cmocka_unit_test_teardown(test_put_round_trip, teardown),
      cmocka_unit_test_teardown(test_deadline, teardown),
      cmocka_unit_test_teardown(test_get_big, teardown),
      cmocka_unit_test_teardown(test_get_tampered, teardown),
      cmocka_unit_test_teardown(test_put_tampered, teardown),
      cmocka_unit_test_teardown(test_exited, teardown),
      cmocka_unit_test_teardown(test_efault, teardown),
      cmocka_unit_test_teardown(test_peer_uid, teardown),
      cmocka_unit_test_teardown(test_nodump, teardown),
      cmocka_unit_test_teardown(test_thread_id, teardown),
  };

  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
