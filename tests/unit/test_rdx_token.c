/*
 * test_rdx_token: the token codec and the server half's checks.
 *
 * Sources of the DC vectors (never produced by this code):
 *  - noobaa/noobaa-core src/util/rdma_utils.js and versity/versitygw
 *    cumiddleware/cuobj.go: the documented example
 *    0102030405060708:01020304:01020304:0102:010203:1:0102030405060708090a0b0c0d0e0f10
 *  - versity/versitygw cumiddleware/cuobj_test.go: tokenWithBufSize(
 *    0x1122334455667788, 0x2000) and the boundary ffffffffffffffff:00000001:...
 *    which that server must accept;
 *  - minio/minio-cpp PR 244: a real descriptor from libcuobjclient 1.2.0 on
 *    mlx5, 000073967e5ff000:00400000:01f2e973:0000:007a03:1:...ffff0f0f0fdf,
 *    its GID elided in the PR; the elided part is exactly 20 digits, the ten
 *    zero bytes of the IPv4-mapped GID its tail shows, so completed with
 *    zeros (an inference, marked as such below);
 *  - by hand from the format: InfiniBand without GID, RoCE link-local GID,
 *    maxima and minima of every field.
 * The RC vectors are written by hand in the shape elbencho's client writes
 * (tools/s3rdma/cuobjclient-shim CuObjClientShim.cpp: "rc:" session ":"
 * %016llx ":" %08llx ":" %08x; elbencho's README gives no example value);
 * the lenient spellings are what elbencho's server parser takes
 * (RdmaToken.h, RcTokenTransport.cpp). The NIXL-form vectors are the
 * documented DC example with ":%016lx:%016lx" appended (minio-cpp rdma.h
 * writes that suffix). CMA vectors are written by hand from the grammar in
 * rdx_token.h.
 *
 * Every parse in this file reads from a heap copy of exactly n bytes, so an
 * over-read is an ASan error in the sanitizer build.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "rdma/rdx_token.h"

#define DC_EX                                                                  \
  "0102030405060708:01020304:01020304:0102:010203:1:"                          \
  "0102030405060708090a0b0c0d0e0f10"
#define CMA_EX                                                                 \
  "s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:0000000000100000"
#define RC_SESS "0123456789abcdef0123456789abcdef"
#define RC_SESS_B                                                              \
  {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,                             \
   0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
#define RC_EX "rc:" RC_SESS ":00007f3a5c000000:00400000:0001a2b3"
#define NIXL_EX DC_EX ":0102030405060708:0000000000001000"
#define GID_EX                                                                 \
  {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,                             \
   0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10}
#define TOP_ADDR 0xfffffb0000000000ULL /* 2^64 - RDX_LEN_MAX */

/* ---- helpers ------------------------------------------------------------ */

/* Parse from a heap copy of exactly n bytes (no NUL after them). */
static int parse_n(const char *s, size_t n, struct rdx_token *t)
{
  char *copy = malloc(n ? n : 1);
  int rc;

  assert_non_null(copy);
  memcpy(copy, s, n);
  rc = rdx_token_parse(copy, n, t);
  free(copy);
  return rc;
}

static void assert_zero_token(const struct rdx_token *t)
{
  static const struct rdx_token zero;

  assert_memory_equal(t, &zero, sizeof(zero));
}

static void assert_rejected(const char *s, size_t n)
{
  struct rdx_token t;

  memset(&t, 0xa5, sizeof(t));
  if (parse_n(s, n, &t) != -EINVAL)
    fail_msg("accepted (%zu bytes): %.*s", n, (int)n, s);
  assert_zero_token(&t);
}

static void assert_token_equal(const struct rdx_token *a,
                               const struct rdx_token *b)
{
  assert_int_equal(a->kind, b->kind);
  assert_int_equal(a->op, b->op);
  assert_true(a->addr == b->addr);
  assert_true(a->len == b->len);
  switch (a->kind) {
  case RDX_DC:
    assert_int_equal(a->dc.rkey, b->dc.rkey);
    assert_int_equal(a->dc.lid, b->dc.lid);
    assert_int_equal(a->dc.dctn, b->dc.dctn);
    assert_int_equal(a->dc.has_gid, b->dc.has_gid);
    assert_memory_equal(a->dc.gid, b->dc.gid, 16);
    assert_int_equal(a->dc.has_xfer, b->dc.has_xfer);
    assert_true(a->dc.xfer_addr == b->dc.xfer_addr);
    assert_true(a->dc.xfer_len == b->dc.xfer_len);
    break;
  case RDX_RC:
    assert_memory_equal(a->rc.session, b->rc.session, 16);
    assert_int_equal(a->rc.rkey, b->rc.rkey);
    break;
  case RDX_CMA:
    assert_int_equal(a->cma.pid, b->cma.pid);
    assert_true(a->cma.start_time == b->cma.start_time);
    break;
  default:
    fail_msg("kind %d", (int)a->kind);
  }
}

/* format(t) == text, parse(text) == t, and format of that == text again. */
static void round_trip(const struct rdx_token *t, const char *text)
{
  char buf[RDX_TOKEN_MAX];
  struct rdx_token back;
  int n;

  n = rdx_token_format(t, buf, sizeof(buf));
  if (n < 0)
    fail_msg("format %d for %s", n, text);
  assert_string_equal(buf, text);
  assert_int_equal((size_t)n, strlen(text));
  assert_int_equal(parse_n(text, strlen(text), &back), 0);
  assert_token_equal(&back, t);
  assert_int_equal(rdx_token_format(&back, buf, sizeof(buf)), n);
  assert_string_equal(buf, text);
}

/* ---- DC vectors --------------------------------------------------------- */

static const struct dc_vec {
  const char *name, *text;
  uint64_t addr, len;
  uint32_t rkey;
  uint16_t lid;
  uint32_t dctn;
  bool has_gid;
  uint8_t gid[16];
} dc_vecs[] = {
    {"noobaa/versitygw documented example", DC_EX, 0x0102030405060708ULL,
     0x01020304, 0x01020304, 0x0102, 0x010203, true, GID_EX},
    /* real, GID completed by inference (see the file's comment) */
    {"minio-cpp PR 244, libcuobjclient 1.2.0",
     "000073967e5ff000:00400000:01f2e973:0000:007a03:1:"
     "00000000000000000000ffff0f0f0fdf",
     0x000073967e5ff000ULL, 0x00400000, 0x01f2e973, 0, 0x007a03, true,
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0f, 0x0f, 0x0f, 0xdf}},
    {"versitygw boundary: top address, size 1",
     "ffffffffffffffff:00000001:01020304:0102:010203:1:"
     "0102030405060708090a0b0c0d0e0f10",
     UINT64_MAX, 1, 0x01020304, 0x0102, 0x010203, true, GID_EX},
    {"versitygw tokenWithBufSize",
     "1122334455667788:00002000:01020304:0102:010203:1:"
     "0102030405060708090a0b0c0d0e0f10",
     0x1122334455667788ULL, 0x2000, 0x01020304, 0x0102, 0x010203, true,
     GID_EX},
    {"InfiniBand, no GID, maxima",
     "00007f0000001000:ffff0000:ffffffff:ffff:ffffff:0:"
     "00000000000000000000000000000000",
     0x00007f0000001000ULL, RDX_DC_LEN_MAX, 0xffffffff, 0xffff, 0xffffff,
     false, {0}},
    {"RoCE link-local GID, minima",
     "0000000000000000:00000001:00000000:0000:000000:1:"
     "fe800000000000000202c9fffe000001",
     0, 1, 0, 0, 0, true,
     {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x02, 0xc9, 0xff, 0xfe, 0, 0, 0x01}},
    {"largest size at the top of memory",
     "ffffffff00010000:ffff0000:00000001:0001:000001:0:"
     "ffffffffffffffffffffffffffffffff",
     0xffffffff00010000ULL, RDX_DC_LEN_MAX, 1, 1, 1, false,
     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff}},
};

static void dc_token(const struct dc_vec *v, struct rdx_token *t)
{
  memset(t, 0, sizeof(*t));
  t->kind = RDX_DC;
  t->addr = v->addr;
  t->len = v->len;
  t->dc.rkey = v->rkey;
  t->dc.lid = v->lid;
  t->dc.dctn = v->dctn;
  t->dc.has_gid = v->has_gid;
  memcpy(t->dc.gid, v->gid, 16);
}

static void test_dc_vectors(void **state)
{
  struct rdx_token t;

  (void)state;
  for (size_t i = 0; i < sizeof(dc_vecs) / sizeof(dc_vecs[0]); i++) {
    dc_token(&dc_vecs[i], &t);
    assert_int_equal(strlen(dc_vecs[i].text), RDX_DC_TOKEN_LEN);
    round_trip(&t, dc_vecs[i].text);
  }
}

/* The NIXL form: the 81 characters and this transfer's range. */
static const struct nixl_vec {
  const char *text;
  uint64_t xaddr, xlen;
} nixl_vecs[] = {
    {NIXL_EX, 0x0102030405060708ULL, 0x1000},
    /* the whole buffer */
    {DC_EX ":0102030405060708:0000000001020304", 0x0102030405060708ULL,
     0x01020304},
    /* its last byte */
    {DC_EX ":0102030406080a0b:0000000000000001", 0x0102030406080a0bULL, 1},
};

static void nixl_token(const struct nixl_vec *v, struct rdx_token *t)
{
  dc_token(&dc_vecs[0], t);
  t->dc.has_xfer = true;
  t->dc.xfer_addr = v->xaddr;
  t->dc.xfer_len = v->xlen;
}

static void test_dc_nixl_vectors(void **state)
{
  struct rdx_token t;
  char buf[RDX_TOKEN_MAX];

  (void)state;
  for (size_t i = 0; i < sizeof(nixl_vecs) / sizeof(nixl_vecs[0]); i++) {
    nixl_token(&nixl_vecs[i], &t);
    assert_int_equal(strlen(nixl_vecs[i].text), RDX_DC_NIXL_TOKEN_LEN);
    round_trip(&t, nixl_vecs[i].text);
  }
  /* our client's tokens never carry it: the same token without has_xfer is
     the 81 characters */
  nixl_token(&nixl_vecs[0], &t);
  t.dc.has_xfer = false;
  t.dc.xfer_addr = t.dc.xfer_len = 0;
  assert_int_equal(rdx_token_format(&t, buf, sizeof(buf)), RDX_DC_TOKEN_LEN);
  assert_string_equal(buf, DC_EX);
}

/* ---- CMA vectors -------------------------------------------------------- */

static const struct cma_vec {
  const char *text;
  enum rdx_op op;
  int32_t pid;
  uint64_t start, addr, len;
} cma_vecs[] = {
    {CMA_EX, RDX_GET, 8080, 0xa3c1f, 0x00007f3a5c000000ULL, 1 << 20},
    {"s3r1:cma:put:00000001:0000000000000000:0000000000000000:"
     "0000000000000001",
     RDX_PUT, 1, 0, 0, 1},
    {"s3r1:cma:get:7fffffff:ffffffffffffffff:fffffb0000000000:"
     "0000050000000000",
     RDX_GET, RDX_PID_MAX, UINT64_MAX, TOP_ADDR, RDX_LEN_MAX},
    {"s3r1:cma:put:00000002:0000000000000001:ffffffffffffffff:"
     "0000000000000001",
     RDX_PUT, 2, 1, UINT64_MAX, 1},
};

static void cma_token(const struct cma_vec *v, struct rdx_token *t)
{
  memset(t, 0, sizeof(*t));
  t->kind = RDX_CMA;
  t->op = v->op;
  t->cma.pid = v->pid;
  t->cma.start_time = v->start;
  t->addr = v->addr;
  t->len = v->len;
}

static void test_cma_vectors(void **state)
{
  struct rdx_token t;

  (void)state;
  for (size_t i = 0; i < sizeof(cma_vecs) / sizeof(cma_vecs[0]); i++) {
    cma_token(&cma_vecs[i], &t);
    assert_int_equal(strlen(cma_vecs[i].text), RDX_CMA_TOKEN_LEN);
    round_trip(&t, cma_vecs[i].text);
  }
}

/* ---- RC vectors --------------------------------------------------------- */

static const struct rc_vec {
  const char *text;
  uint8_t session[16];
  uint32_t rkey;
  uint64_t addr, len;
} rc_vecs[] = {
    {RC_EX, RC_SESS_B, 0x0001a2b3, 0x00007f3a5c000000ULL, 4 << 20},
    {"rc:00000000000000000000000000000000:0000000000000000:00000001:"
     "00000000",
     {0}, 0, 0, 1},
    /* sizes past 4 GiB take more digits, as "%08llx" writes them */
    {"rc:ffffffffffffffffffffffffffffffff:fffffb0000000000:50000000000:"
     "ffffffff",
     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
      0xff, 0xff, 0xff, 0xff},
     0xffffffff, TOP_ADDR, RDX_LEN_MAX},
    {"rc:" RC_SESS ":0000000000001000:100000000:00000001", RC_SESS_B, 1,
     0x1000, 1ULL << 32},
    {"rc:" RC_SESS ":ffffffffffffffff:00000001:00000001", RC_SESS_B, 1,
     UINT64_MAX, 1},
};

static void rc_token(const struct rc_vec *v, struct rdx_token *t)
{
  memset(t, 0, sizeof(*t));
  t->kind = RDX_RC;
  memcpy(t->rc.session, v->session, 16);
  t->rc.rkey = v->rkey;
  t->addr = v->addr;
  t->len = v->len;
}

static void test_rc_vectors(void **state)
{
  struct rdx_token t;

  (void)state;
  for (size_t i = 0; i < sizeof(rc_vecs) / sizeof(rc_vecs[0]); i++) {
    rc_token(&rc_vecs[i], &t);
    assert_true(strlen(rc_vecs[i].text) < RDX_TOKEN_MAX);
    round_trip(&t, rc_vecs[i].text);
  }
  /* the shape elbencho's client writes: 70 characters up to 4 GiB */
  assert_int_equal(strlen(RC_EX), 70);
}

/* What elbencho's server takes besides: fewer digits, uppercase. */
static const struct rc_lenient {
  const char *text, *canon;
} rc_lenient[] = {
    {"rc:" RC_SESS ":7f3a5c000000:400000:1a2b3", RC_EX},
    {"rc:" RC_SESS ":00007F3A5C000000:00400000:0001A2B3", RC_EX},
    {"rc:" RC_SESS ":00007f3a5c000000:0000000000400000:0001a2b3", RC_EX},
    {"rc:" RC_SESS ":0:1:0",
     "rc:" RC_SESS ":0000000000000000:00000001:00000000"},
    {"rc:" RC_SESS ":FFFFFFFFFFFFFFFF:1:FFFFFFFF",
     "rc:" RC_SESS ":ffffffffffffffff:00000001:ffffffff"},
};

static void test_rc_lenient(void **state)
{
  struct rdx_token t, back;
  char buf[RDX_TOKEN_MAX];

  (void)state;
  for (size_t i = 0; i < sizeof(rc_lenient) / sizeof(rc_lenient[0]); i++) {
    const struct rc_lenient *v = &rc_lenient[i];
    if (parse_n(v->text, strlen(v->text), &t) != 0)
      fail_msg("rejected: %s", v->text);
    assert_int_equal(t.kind, RDX_RC);
    assert_int_equal(t.op, RDX_OP_NONE);
    assert_int_equal(rdx_token_format(&t, buf, sizeof(buf)),
                     (int)strlen(v->canon));
    assert_string_equal(buf, v->canon);
    assert_int_equal(parse_n(buf, strlen(buf), &back), 0);
    assert_token_equal(&back, &t);
  }
}

/* Every valid vector's text, for the generic hostile-input tests. */
static size_t all_valid(const char **out, size_t max)
{
  size_t n = 0;

  for (size_t i = 0; i < sizeof(dc_vecs) / sizeof(dc_vecs[0]); i++)
    out[n++] = dc_vecs[i].text;
  for (size_t i = 0; i < sizeof(cma_vecs) / sizeof(cma_vecs[0]); i++)
    out[n++] = cma_vecs[i].text;
  for (size_t i = 0; i < sizeof(rc_vecs) / sizeof(rc_vecs[0]); i++)
    out[n++] = rc_vecs[i].text;
  for (size_t i = 0; i < sizeof(nixl_vecs) / sizeof(nixl_vecs[0]); i++)
    out[n++] = nixl_vecs[i].text;
  assert_true(n <= max);
  return n;
}

/* ---- hostile inputs ----------------------------------------------------- */

#define S(lit) {lit, sizeof(lit) - 1}

static const struct bad {
  const char *s;
  size_t n;
} bad[] = {
    S(""),
    S("0"),
    S(":"),
    S("s3r1:"),
    S("s3r1:cma:"),
    S("s3r1:rc:"),
    /* DC: case, digits, colons */
    S("0102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090A0B0C0D0E0F10"),
    S("01020304050607A8:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("010203040506070g:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0x02030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0102030405060708:01020304:01020304:0102:0102031:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* no ':' */
    S("0102030405060708::01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* extra */
    S("010203040506070:801020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* moved */
    S("0102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f1:"),
    S("0102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10:"),
    S("00102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* 17 digits */
    S("0102030405060708:001020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0102030405060708:01020304:01020304:0102:0010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0102030405060708:01020304:01020304:0102:010203:01:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f1000"),
    S("0102030405060708:01020304:01020304:0102:010203:2:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* has_gid */
    S("0102030405060708:01020304:01020304:0102:010203:f:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0102030405060708:00000000:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* size 0 */
    S("0102030405060708:ffff0001:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* > limit */
    S("0102030405060708:ffffffff:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("ffffffffffffffff:00000002:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* wraps */
    S("ffffffff00010001:ffff0000:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("+102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("-102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S("0102030405060708:+1020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S(" 102030405060708:01020304:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),
    S(" " DC_EX),
    S(DC_EX " "),
    S(DC_EX "\r\n"),
    S(DC_EX "\0"),
    S("0102030405060708:0102030\0:01020304:0102:010203:1:"
      "0102030405060708090a0b0c0d0e0f10"),                        /* NUL */
    S("0102030405060708 01020304 01020304 0102 010203 1 "
      "0102030405060708090a0b0c0d0e0f10"),
    /* one form dressed as another */
    S("s3r1:" DC_EX),
    S("s3r1:dc:" DC_EX),
    S("s3r1:cma:" DC_EX),
    S("s3r1:rc:" DC_EX),
    S("53r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("S3R1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r2:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:CMA:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:GET:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:got:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get:00000000:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),                                        /* pid 0 */
    S("s3r1:cma:get:80000000:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get:ffffffff:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get:8080:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get:0001f90:000000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000000000"),                                        /* len 0 */
    S("s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000050000000001"),                                        /* > limit */
    S("s3r1:cma:get:00001f90:00000000000a3c1f:ffffffffffffffff:"
      "0000000000000002"),                                        /* wraps */
    S("s3r1:cma:get:00001f90:00000000000a3c1f:fffffb0000000001:"
      "0000050000000000"),
    S("s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "00000000001000000"),
    S("s3r1:cma:get:00001F90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000"),
    S("s3r1:cma:get:00001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000:"),
    S("s3r1:cma:get:-0001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    S("s3r1:cma:get: 0001f90:00000000000a3c1f:00007f3a5c000000:"
      "0000000000100000"),
    /* RC: session */
    S("rc:0123456789ABCDEF0123456789abcdef:00007f3a5c000000:00400000:"
      "0001a2b3"),                                          /* uppercase */
    S("rc:0123456789abcdef0123456789abcde:00007f3a5c000000:00400000:"
      "0001a2b3"),                                          /* 31 digits */
    S("rc:0123456789abcdef0123456789abcdef0:00007f3a5c000000:00400000:"
      "0001a2b3"),
    S("rc:0123456789abcdef0123456789abcdeg:00007f3a5c000000:00400000:"
      "0001a2b3"),
    S("rc::00007f3a5c000000:00400000:0001a2b3"),
    S("rc:" RC_SESS),
    S("rc:" RC_SESS ":"),
    /* RC: addr, size, rkey */
    S("rc:" RC_SESS "::00400000:0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000::0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000"),
    S("rc:" RC_SESS ":000007f3a5c000000:00400000:0001a2b3"), /* 17 */
    S("rc:" RC_SESS ":00007f3a5c000000:00000000000400000:0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:00001a2b3"),  /* 9 */
    S("rc:" RC_SESS ":0x7f3a5c000000:00400000:0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:0x400000:0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:0x01a2b3"),
    S("rc:" RC_SESS ":+7f3a5c000000:00400000:0001a2b3"),
    S("rc:" RC_SESS ":-1:00400000:0001a2b3"),
    S("rc:" RC_SESS ": 7f3a5c000000:00400000:0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000: 001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:0001a2b3 "),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:0001a2b3\r\n"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:0001a2b3:"),
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:0:0001a2b3"), /* 5 fields */
    S("rc:" RC_SESS ":00007f3a5c000000:00400000:0001a2b\0"),
    S("rc:" RC_SESS ":00007f3a5c000000:0040000g:0001a2b3"),
    S("rc:" RC_SESS ":00007f3a5c000000:00000000:0001a2b3"),   /* size 0 */
    S("rc:" RC_SESS ":0000000000000000:50000000001:0001a2b3"), /* > 5 TiB */
    S("rc:" RC_SESS ":ffffffffffffffff:2:0001a2b3"),          /* wraps */
    S("rc:" RC_SESS ":fffffb0000000001:50000000000:0001a2b3"),
    S("rc:" RC_SESS ":ffffffffffffffff:ffffffffffffffff:0001a2b3"),
    /* RC: the prefix, and our old form */
    S("RC:" RC_SESS ":00007f3a5c000000:00400000:0001a2b3"),
    S("rc" RC_SESS ":00007f3a5c000000:00400000:0001a2b3"),
    S("rc::" RC_SESS ":00007f3a5c000000:00400000:0001a2b3"),
    S("rc:get:" RC_SESS ":00007f3a5c000000:00400000:0001a2b3"),
    S("rc:" DC_EX),
    S("s3r1:rc:put:ip4/192.168.1.10/18515:"
      "5eed0123456789ab:0001a2b3:00007f3a5c000000:0000000000400000"),
    S("s3r1:" RC_EX),
    /* DC, the NIXL form */
    S(DC_EX ":0102030405060708:0000000000001000;"),     /* minio-cpp's ';' */
    S(DC_EX ":0102030405060708"),
    S(DC_EX ":0102030405060708:"),
    S(DC_EX ":0102030405060708:000000000001000"),
    S(DC_EX ":0102030405060708:00000000000010000"),
    S(DC_EX ":102030405060708:0000000000001000"),
    S(DC_EX ":0102030405060708:0000000000001000:"),
    S(DC_EX ":0102030405060708:000000000000100A"),
    S(DC_EX ":0102030405060708:0000000000000000"),       /* length 0 */
    S(DC_EX ":0102030405060707:0000000000001000"),       /* before */
    S(DC_EX ":0102030406080a0c:0000000000000001"),       /* after */
    S(DC_EX ":0102030405060708:0000000001020305"),       /* past the end */
    S(DC_EX ":ffffffffffffffff:ffffffffffffffff"),
    S(DC_EX "::0102030405060708:0000000000001000"),
};

static void test_hostile_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_rejected(bad[i].s, bad[i].n);
}

static void test_huge_inputs(void **state)
{
  enum { BIG = 10 * 1024 };
  char *big = malloc(BIG);
  const char fills[] = {'a', '0', ':', '\0', 'f', '/'};

  (void)state;
  assert_non_null(big);
  for (size_t i = 0; i < sizeof(fills); i++) {
    memset(big, fills[i], BIG);
    assert_rejected(big, BIG);
  }
  /* a valid token then 10 KB of anything */
  memset(big, '0', BIG);
  memcpy(big, DC_EX, strlen(DC_EX));
  assert_rejected(big, BIG);
  memcpy(big, CMA_EX, strlen(CMA_EX));
  assert_rejected(big, BIG);
  memcpy(big, RC_EX, strlen(RC_EX));
  assert_rejected(big, BIG);
  memcpy(big, NIXL_EX, strlen(NIXL_EX));
  assert_rejected(big, BIG);
  /* an endless RC field, and endless colons */
  memset(big, '1', BIG);
  memcpy(big, "rc:" RC_SESS ":", 36);
  assert_rejected(big, BIG);
  memset(big, ':', BIG);
  memcpy(big, "rc:" RC_SESS ":1:1:1", 41);
  assert_rejected(big, BIG);
  /* every length up to the limit and past it, of hex digits */
  for (size_t n = 0; n <= RDX_TOKEN_MAX + 1; n++)
    assert_rejected(big + BIG - n, n);
  free(big);
}

/*
 * The NIXL form holds a shorter valid form (the 81 characters): a cut or
 * grown text is rejected or parses to another token than orig.
 */
static void assert_rejected_or_other(const struct rdx_token *orig,
                                     const char *s, size_t n)
{
  struct rdx_token t;

  memset(&t, 0xa5, sizeof(t));
  if (parse_n(s, n, &t) != 0) {
    assert_zero_token(&t);
    return;
  }
  if (t.kind == orig->kind && t.addr == orig->addr && t.len == orig->len &&
      t.dc.has_xfer == orig->dc.has_xfer)
    fail_msg("%.*s parses to the token it was cut from", (int)n, s);
}

static size_t mutant(const char *m, size_t n);

/* RC: a cut may drop only leading zeros (the same token); see mutant(). */
static void check_cut(const struct rdx_token *orig, const char *s, size_t n)
{
  if (orig->kind == RDX_RC)
    (void)mutant(s, n);
  else if (orig->kind == RDX_DC && orig->dc.has_xfer)
    assert_rejected_or_other(orig, s, n);
  else
    assert_rejected(s, n);
}

static void test_truncated_and_longer(void **state)
{
  struct rdx_token orig;
  const char *v[32];
  const char extra[] = {'0', '1', 'a', 'f', ':', '/', ' ', '\n', '\0',
                        'g', 'F', '\xff'};
  char buf[RDX_TOKEN_MAX + 2];
  size_t nv = all_valid(v, 32);

  (void)state;
  for (size_t i = 0; i < nv; i++) {
    size_t n = strlen(v[i]);
    assert_int_equal(parse_n(v[i], n, &orig), 0);
    for (size_t k = 0; k < n; k++)
      check_cut(&orig, v[i], k);
    memcpy(buf, v[i], n);
    for (size_t e = 0; e < sizeof(extra); e++) {
      buf[n] = extra[e];
      check_cut(&orig, buf, n + 1);
      /* and the extra byte in front */
      memmove(buf + 1, v[i], n);
      buf[0] = extra[e];
      assert_rejected(buf, n + 1);
      memcpy(buf, v[i], n);
    }
  }
}

/*
 * A mutated text is rejected or parses to a token whose text is exactly the
 * mutation: since each DC or CMA token has one text, the token differs from
 * the original's. An RC token (many spellings) formats to its canonical
 * text, which parses back to it. Byte substitutions (all 255 others at
 * every position), single deletions, and single insertions.
 */
static size_t mutant(const char *m, size_t n)
{
  struct rdx_token t, back;
  char out[RDX_TOKEN_MAX];
  int len;

  if (parse_n(m, n, &t) != 0) {
    assert_zero_token(&t);
    return 0;
  }
  len = rdx_token_format(&t, out, sizeof(out));
  if (t.kind == RDX_RC) {
    assert_true(len > 0);
    assert_int_equal(parse_n(out, (size_t)len, &back), 0);
    assert_token_equal(&back, &t);
    return 1;
  }
  if (len != (int)n || memcmp(out, m, n) != 0)
    fail_msg("mutant %.*s parsed to %s", (int)n, m, out);
  return 1;
}

static void test_mutations(void **state)
{
  static const char ins[] = {'0', '9', 'a', 'f', ':', '/', '.', '-', '\0', 'x'};
  const char *v[32];
  char m[RDX_TOKEN_MAX + 1];
  size_t nv = all_valid(v, 32);
  size_t tried = 0, accepted = 0;

  (void)state;
  for (size_t i = 0; i < nv; i++) {
    size_t n = strlen(v[i]);
    for (size_t pos = 0; pos < n; pos++) {
      for (int b = 0; b < 256; b++) {
        if ((char)b == v[i][pos])
          continue;
        memcpy(m, v[i], n);
        m[pos] = (char)b;
        accepted += mutant(m, n);
        tried++;
      }
      /* deletion */
      memcpy(m, v[i], pos);
      memcpy(m + pos, v[i] + pos + 1, n - pos - 1);
      accepted += mutant(m, n - 1);
      tried++;
      /* insertion */
      for (size_t k = 0; k < sizeof(ins); k++) {
        memcpy(m, v[i], pos);
        m[pos] = ins[k];
        memcpy(m + pos + 1, v[i] + pos, n - pos);
        accepted += mutant(m, n + 1);
        tried++;
      }
    }
  }
  print_message("mutations: %zu tried, %zu parsed (each to another token)\n",
                tried, accepted);
  /* hex digit changes are mostly valid tokens: the test saw some */
  assert_true(accepted > 1000);
  assert_true(accepted < tried / 4);
}

static void test_parse_args(void **state)
{
  struct rdx_token t;

  (void)state;
  assert_int_equal(rdx_token_parse(DC_EX, strlen(DC_EX), NULL), -EINVAL);
  memset(&t, 1, sizeof(t));
  assert_int_equal(rdx_token_parse(NULL, 81, &t), -EINVAL);
  assert_zero_token(&t);
  /* n counts exactly the token: the NUL after it is not read */
  assert_int_equal(rdx_token_parse(DC_EX, strlen(DC_EX), &t), 0);
  assert_int_equal(t.kind, RDX_DC);
  assert_int_equal(t.op, RDX_OP_NONE);
  assert_int_equal(rdx_token_parse(DC_EX, strlen(DC_EX) + 1, &t), -EINVAL);
}

/* ---- format ------------------------------------------------------------- */

static void test_format_buffer(void **state)
{
  const char *v[32];
  char buf[RDX_TOKEN_MAX];
  struct rdx_token t;
  size_t nv = all_valid(v, 32);

  (void)state;
  for (size_t i = 0; i < nv; i++) {
    size_t n = strlen(v[i]);
    assert_int_equal(parse_n(v[i], n, &t), 0);
    for (size_t len = 0; len <= n; len++) {
      char *small = malloc(len ? len : 1);
      assert_non_null(small);
      memset(small, 'x', len ? len : 1);
      assert_int_equal(rdx_token_format(&t, small, len), -ENOSPC);
      if (len > 0)
        assert_int_equal(small[0], '\0');
      free(small);
    }
    assert_int_equal(rdx_token_format(&t, NULL, 0), -ENOSPC);
    assert_int_equal(rdx_token_format(&t, buf, n + 1), (int)n);
    assert_string_equal(buf, v[i]);
  }
}

/* ---- validity of built tokens ------------------------------------------- */

enum build {
  B_DC,
  B_CMA,
  B_RC,
};

static void build(enum build b, struct rdx_token *t)
{
  switch (b) {
  case B_DC:
    dc_token(&dc_vecs[0], t);
    break;
  case B_CMA:
    cma_token(&cma_vecs[0], t);
    break;
  case B_RC:
    rc_token(&rc_vecs[0], t);
    break;
  }
}

static void f_none(struct rdx_token *t) { (void)t; }
static void f_kind0(struct rdx_token *t) { t->kind = 0; }
static void f_kind9(struct rdx_token *t) { t->kind = 9; }
static void f_op_get(struct rdx_token *t) { t->op = RDX_GET; }
static void f_op_none(struct rdx_token *t) { t->op = RDX_OP_NONE; }
static void f_op7(struct rdx_token *t) { t->op = 7; }
static void f_len0(struct rdx_token *t) { t->len = 0; }
static void f_len_dcmax1(struct rdx_token *t) { t->len = RDX_DC_LEN_MAX + 1; }
static void f_len_max1(struct rdx_token *t) { t->len = RDX_LEN_MAX + 1; }
static void f_len_huge(struct rdx_token *t) { t->len = UINT64_MAX; }
static void f_wrap(struct rdx_token *t)
{
  t->addr = UINT64_MAX;
  t->len = 2;
}
static void f_top1(struct rdx_token *t)
{
  t->addr = UINT64_MAX;
  t->len = 1;
}
static void f_dctn25(struct rdx_token *t) { t->dc.dctn = 0x1000000; }
static void f_pid0(struct rdx_token *t) { t->cma.pid = 0; }
static void f_pidneg(struct rdx_token *t) { t->cma.pid = -1; }
static void f_xfer(struct rdx_token *t)
{
  t->dc.has_xfer = true;
  t->dc.xfer_addr = t->addr + 0x10;
  t->dc.xfer_len = 0x20;
}
static void f_xfer0(struct rdx_token *t)
{
  f_xfer(t);
  t->dc.xfer_len = 0;
}
static void f_xfer_before(struct rdx_token *t)
{
  f_xfer(t);
  t->dc.xfer_addr = t->addr - 1;
}
static void f_xfer_past(struct rdx_token *t)
{
  f_xfer(t);
  t->dc.xfer_addr = t->addr + t->len - 1;
  t->dc.xfer_len = 2;
}
static void f_xfer_whole(struct rdx_token *t)
{
  f_xfer(t);
  t->dc.xfer_addr = t->addr;
  t->dc.xfer_len = t->len;
}
static void f_xfer_huge(struct rdx_token *t)
{
  f_xfer(t);
  t->dc.xfer_len = UINT64_MAX;
}

static const struct valid_case {
  const char *name;
  enum build b;
  void (*fix)(struct rdx_token *t);
  int rc;
  const char *why; /* a substring of the reason */
} valid_cases[] = {
    {"dc ok", B_DC, f_none, 0, ""},
    {"cma ok", B_CMA, f_none, 0, ""},
    {"rc ok", B_RC, f_none, 0, ""},
    {"kind 0", B_CMA, f_kind0, -EINVAL, "kind 0 unknown"},
    {"kind 9", B_RC, f_kind9, -EINVAL, "kind 9 unknown"},
    {"dc with op", B_DC, f_op_get, -EINVAL, "dc token with an operation"},
    {"cma without op", B_CMA, f_op_none, -EINVAL, "operation 0 unknown"},
    {"cma op 7", B_CMA, f_op7, -EINVAL, "operation 7 unknown"},
    {"rc with op", B_RC, f_op_get, -EINVAL, "rc token with an operation"},
    {"rc op 7", B_RC, f_op7, -EINVAL, "rc token with an operation"},
    {"dc len 0", B_DC, f_len0, -EINVAL, "length 0"},
    {"cma len 0", B_CMA, f_len0, -EINVAL, "length 0"},
    {"rc len 0", B_RC, f_len0, -EINVAL, "length 0"},
    {"dc over 4 GiB - 64 KiB", B_DC, f_len_dcmax1, -EINVAL, "over the limit"},
    {"dc 4 GiB - 64 KiB is fine in cma", B_CMA, f_len_dcmax1, 0, ""},
    {"cma over 5 TiB", B_CMA, f_len_max1, -EINVAL, "over the limit"},
    {"rc over 5 TiB", B_RC, f_len_max1, -EINVAL, "over the limit"},
    {"rc 2^64-1", B_RC, f_len_huge, -EINVAL, "over the limit"},
    {"dc wraps", B_DC, f_wrap, -EINVAL, "wraps past 2^64"},
    {"cma wraps", B_CMA, f_wrap, -EINVAL, "wraps past 2^64"},
    {"rc wraps", B_RC, f_wrap, -EINVAL, "wraps past 2^64"},
    {"cma last byte at the top", B_CMA, f_top1, 0, ""},
    {"dc dctn over 24 bits", B_DC, f_dctn25, -EINVAL, "over 24 bits"},
    {"cma pid 0", B_CMA, f_pid0, -EINVAL, "pid 0 not positive"},
    {"cma pid -1", B_CMA, f_pidneg, -EINVAL, "pid -1 not positive"},
    {"rc last byte at the top", B_RC, f_top1, 0, ""},
    {"dc transfer range", B_DC, f_xfer, 0, ""},
    {"dc transfer, the whole buffer", B_DC, f_xfer_whole, 0, ""},
    {"dc transfer of 0 bytes", B_DC, f_xfer0, -EINVAL, "transfer length 0"},
    {"dc transfer before the buffer", B_DC, f_xfer_before, -EINVAL,
     "outside the buffer"},
    {"dc transfer past the buffer", B_DC, f_xfer_past, -EINVAL,
     "outside the buffer"},
    {"dc transfer of 2^64-1 bytes", B_DC, f_xfer_huge, -EINVAL,
     "outside the buffer"},
};

static void test_validate_table(void **state)
{
  char why[128], buf[RDX_TOKEN_MAX];
  struct rdx_token t;

  (void)state;
  for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
    const struct valid_case *c = &valid_cases[i];
    build(c->b, &t);
    c->fix(&t);
    why[0] = '\0';
    if (rdx_token_validate(&t, why, sizeof(why)) != c->rc)
      fail_msg("%s: want %d, reason \"%s\"", c->name, c->rc, why);
    if (!strstr(why, c->why))
      fail_msg("%s: reason \"%s\" lacks \"%s\"", c->name, why, c->why);
    /* format refuses exactly what validate refuses */
    memset(buf, 'x', sizeof(buf));
    if (c->rc) {
      assert_int_equal(rdx_token_format(&t, buf, sizeof(buf)), c->rc);
      assert_string_equal(buf, "");
    } else {
      assert_true(rdx_token_format(&t, buf, sizeof(buf)) > 0);
    }
  }
  assert_int_equal(rdx_token_validate(NULL, why, sizeof(why)), -EINVAL);
  assert_string_equal(why, "no token");
  assert_int_equal(rdx_token_format(NULL, buf, sizeof(buf)), -EINVAL);
}

/* ---- the server half's checks ------------------------------------------- */

static void f_dctn0(struct rdx_token *t) { t->dc.dctn = 0; }
static void f_gid0(struct rdx_token *t) { memset(t->dc.gid, 0, 16); }
static void f_nogid_lid0(struct rdx_token *t)
{
  t->dc.has_gid = false;
  t->dc.lid = 0;
}
static void f_nogid_lid5(struct rdx_token *t)
{
  t->dc.has_gid = false;
  t->dc.lid = 5;
}
static void f_put(struct rdx_token *t) { t->op = RDX_PUT; }

#define DCL 0x01020304ULL  /* dc_vecs[0].len */
#define CMAL (1ULL << 20)  /* cma_vecs[0] */
#define RCL (4ULL << 20)   /* rc_vecs[0] */

static const struct check_case {
  const char *name;
  enum build b;
  void (*fix)(struct rdx_token *t);
  enum rdx_op op;
  uint64_t len;
  int rc;
  const char *why;
} check_cases[] = {
    /* exact scope */
    {"cma get", B_CMA, f_none, RDX_GET, CMAL, 0, ""},
    {"cma put", B_CMA, f_put, RDX_PUT, CMAL, 0, ""},
    {"rc put", B_RC, f_none, RDX_PUT, RCL, 0, ""},
    {"rc get", B_RC, f_none, RDX_GET, RCL, 0, ""},
    {"dc get", B_DC, f_none, RDX_GET, DCL, 0, ""},
    {"dc put", B_DC, f_none, RDX_PUT, DCL, 0, ""},
    /* operation */
    {"cma get token, PUT request", B_CMA, f_none, RDX_PUT, CMAL, -EPERM,
     "cma token for get on a put request"},
    {"cma put token, GET request", B_CMA, f_put, RDX_GET, CMAL, -EPERM,
     "cma token for put on a get request"},
    {"rc with an op", B_RC, f_op_get, RDX_GET, RCL, -EINVAL,
     "rc token with an operation"},
    {"request op none", B_CMA, f_none, RDX_OP_NONE, CMAL, -EINVAL,
     "request operation 0 unknown"},
    {"request op 7", B_DC, f_none, 7, DCL, -EINVAL,
     "request operation 7 unknown"},
    /* length */
    {"cma token short", B_CMA, f_none, RDX_GET, CMAL + 1, -EPERM,
     "cma token covers 1048576 bytes, get request moves 1048577"},
    {"cma token long", B_CMA, f_none, RDX_GET, CMAL - 1, -EPERM,
     "moves only 1048575"},
    {"rc token short", B_RC, f_none, RDX_PUT, RCL + 1, -EPERM,
     "rc token covers 4194304 bytes, put request moves 4194305"},
    {"rc token long", B_RC, f_none, RDX_PUT, 1, -EPERM, "moves only 1"},
    {"cma request of 0 bytes", B_CMA, f_none, RDX_GET, 0, -EPERM,
     "get request moves no bytes"},
    {"dc request of 0 bytes", B_DC, f_none, RDX_GET, 0, -EPERM,
     "get request moves no bytes"},
    {"dc get, buffer larger than the object", B_DC, f_none, RDX_GET, 1, 0,
     ""},
    {"rc get, buffer larger than the object", B_RC, f_none, RDX_GET, 1, 0,
     ""},
    {"rc get, object larger than the buffer", B_RC, f_none, RDX_GET, RCL + 1,
     -EPERM, "rc token covers 4194304 bytes, get request moves 4194305"},
    {"dc transfer range, exact", B_DC, f_xfer, RDX_PUT, 0x20, 0, ""},
    {"dc transfer range, not rsize", B_DC, f_xfer, RDX_PUT, DCL, -EPERM,
     "dc token covers 32 bytes, put request moves 16909060"},
    {"dc transfer range, get of less", B_DC, f_xfer, RDX_GET, 0x1f, 0, ""},
    {"dc transfer range, put of less", B_DC, f_xfer, RDX_PUT, 0x1f, -EPERM,
     "moves only 31"},
    {"dc get, object larger than the buffer", B_DC, f_none, RDX_GET, DCL + 1,
     -EPERM, "dc token covers 16909060 bytes, get request moves 16909061"},
    {"dc put, token long", B_DC, f_none, RDX_PUT, DCL - 1, -EPERM,
     "moves only"},
    {"dc put, token short", B_DC, f_none, RDX_PUT, DCL + 1, -EPERM,
     "put request moves 16909061"},
    {"request over any limit", B_CMA, f_none, RDX_GET, UINT64_MAX, -EPERM,
     "moves 18446744073709551615"},
    /* invalid or unusable tokens */
    {"cma pid 0", B_CMA, f_pid0, RDX_GET, CMAL, -EINVAL, "pid 0"},
    {"cma wraps", B_CMA, f_wrap, RDX_GET, 2, -EINVAL, "wraps"},
    {"rc wraps", B_RC, f_wrap, RDX_PUT, 2, -EINVAL, "wraps"},
    {"dc wraps", B_DC, f_wrap, RDX_GET, 2, -EINVAL, "wraps"},
    {"dc over 4 GiB - 64 KiB", B_DC, f_len_dcmax1, RDX_GET,
     RDX_DC_LEN_MAX + 1, -EINVAL, "over the limit"},
    {"cma over 5 TiB", B_CMA, f_len_max1, RDX_GET, RDX_LEN_MAX + 1, -EINVAL,
     "over the limit"},
    {"token of 0 bytes", B_RC, f_len0, RDX_PUT, 0, -EINVAL, "length 0"},
    {"dc with op", B_DC, f_op_get, RDX_GET, DCL, -EINVAL, "with an operation"},
    {"dc dctn 0", B_DC, f_dctn0, RDX_GET, DCL, -EINVAL, "DCT number 0"},
    {"dc zero GID", B_DC, f_gid0, RDX_GET, DCL, -EINVAL, "GID is zero"},
    {"dc neither GID nor LID", B_DC, f_nogid_lid0, RDX_GET, DCL, -EINVAL,
     "neither GID nor LID"},
    {"dc LID only", B_DC, f_nogid_lid5, RDX_GET, DCL, 0, ""},
    {"dc transfer outside", B_DC, f_xfer_past, RDX_GET, 2, -EINVAL,
     "outside the buffer"},
    {"kind 0", B_RC, f_kind0, RDX_PUT, RCL, -EINVAL, "kind 0"},
};

static void test_check_table(void **state)
{
  char why[160];
  struct rdx_token t;

  (void)state;
  for (size_t i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
    const struct check_case *c = &check_cases[i];
    int rc;
    build(c->b, &t);
    c->fix(&t);
    memset(why, 'x', sizeof(why));
    why[sizeof(why) - 1] = '\0';
    if (c->rc == 0)
      why[0] = '\0';
    rc = rdx_token_check(&t, c->op, c->len, why, sizeof(why));
    if (rc != c->rc)
      fail_msg("%s: want %d got %d, reason \"%s\"", c->name, c->rc, rc, why);
    if (!strstr(why, c->why))
      fail_msg("%s: reason \"%s\" lacks \"%s\"", c->name, why, c->why);
    assert_null(strchr(why, '\n'));
    /* without a reason buffer, the same answer */
    assert_int_equal(rdx_token_check(&t, c->op, c->len, NULL, 0), c->rc);
  }
}

static void test_check_reason_buffer(void **state)
{
  char why[8];
  struct rdx_token t;

  (void)state;
  build(B_CMA, &t);
  memset(why, 'x', sizeof(why));
  assert_int_equal(rdx_token_check(&t, RDX_PUT, CMAL, why, sizeof(why)),
                   -EPERM);
  assert_string_equal(why, "cma tok"); /* truncated, terminated */
  memset(why, 'x', sizeof(why));
  assert_int_equal(rdx_token_check(&t, RDX_PUT, CMAL, why, 0), -EPERM);
  assert_int_equal(why[0], 'x'); /* whylen 0: untouched */
  assert_int_equal(rdx_token_check(NULL, RDX_GET, 1, why, sizeof(why)),
                   -EINVAL);
  assert_string_equal(why, "no toke");
}

/* Parsed tokens of every vector pass the check for their own scope. */
static void test_check_parsed(void **state)
{
  const char *v[32];
  struct rdx_token t;
  size_t nv = all_valid(v, 32);
  char why[160];

  (void)state;
  for (size_t i = 0; i < nv; i++) {
    enum rdx_op op;
    int want = 0;
    assert_int_equal(parse_n(v[i], strlen(v[i]), &t), 0);
    op = t.kind == RDX_CMA ? t.op : RDX_PUT;
    /* the vectors with zero DCT numbers, by design */
    if (t.kind == RDX_DC && t.dc.dctn == 0)
      want = -EINVAL;
    why[0] = '\0';
    if (rdx_token_check(&t, op, t.dc.has_xfer ? t.dc.xfer_len : t.len, why,
                        sizeof(why)) != want)
      fail_msg("%s: reason \"%s\"", v[i], why);
    if (want == 0 && t.kind == RDX_CMA)
      assert_int_equal(rdx_token_check(&t, op == RDX_GET ? RDX_PUT : RDX_GET,
                                       t.len, NULL, 0),
                       -EPERM);
  }
}

static void test_names(void **state)
{
  (void)state;
  assert_string_equal(rdx_kind_name(RDX_DC), "dc");
  assert_string_equal(rdx_kind_name(RDX_RC), "rc");
  assert_string_equal(rdx_kind_name(RDX_CMA), "cma");
  assert_string_equal(rdx_kind_name(0), "?");
  assert_string_equal(rdx_op_name(RDX_GET), "get");
  assert_string_equal(rdx_op_name(RDX_PUT), "put");
  assert_string_equal(rdx_op_name(RDX_OP_NONE), "none");
  assert_string_equal(rdx_op_name(9), "?");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dc_vectors),
      cmocka_unit_test(test_cma_vectors),
      cmocka_unit_test(test_dc_nixl_vectors),
      cmocka_unit_test(test_rc_vectors),
      cmocka_unit_test(test_rc_lenient),
      cmocka_unit_test(test_hostile_table),
      cmocka_unit_test(test_huge_inputs),
      cmocka_unit_test(test_truncated_and_longer),
      cmocka_unit_test(test_mutations),
      cmocka_unit_test(test_parse_args),
      cmocka_unit_test(test_format_buffer),
      cmocka_unit_test(test_validate_table),
      cmocka_unit_test(test_check_table),
      cmocka_unit_test(test_check_reason_buffer),
      cmocka_unit_test(test_check_parsed),
      cmocka_unit_test(test_names),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
