/*
 * fuzz_token: the RDMA token codec of rdma/rdx_token.h (rdx_token_parse,
 * rdx_token_format, rdx_token_validate) and the server half's
 * rdx_token_check, with a fuzzer-chosen request operation and length.
 *
 * Input: byte 0 the request operation (mod 4: none, get, put, or 3, which
 * is no operation), bytes 1-8 the request length (big-endian), byte 9 the
 * size of the reason buffer (mod 200), the rest a token's text; the same
 * bytes are also read as the fields of a struct rdx_token.
 *
 * Properties (abort() on violation):
 *  - text: whatever parses as DC or CMA formats again to exactly the same
 *    bytes (one text per token); an RC token formats to its canonical text;
 *    either way that text parses to the same struct, byte for byte; a
 *    failed parse leaves the struct zeroed;
 *  - struct: whatever rdx_token_validate accepts, rdx_token_format writes
 *    (into RDX_TOKEN_MAX) and rdx_token_parse reads back to the same fields;
 *    what it refuses, format refuses too;
 *  - rdx_token_check accepts only what its comment allows: a valid token,
 *    op get or put, the token's op (CMA), len >= 1, and the token's length
 *    (DC with a transfer range: xfer_len) == len but for a DC or RC token
 *    on a GET, where it may be longer; an accepted DC token is executable
 *    (dctn, and a GID or a LID);
 *  - reasons stay inside the buffer given and are NUL-terminated.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rdma/rdx_token.h"
#include "tests/fuzz/fuzz_common.h"

static bool all_zero(const void *p, size_t n)
{
  const uint8_t *b = p;

  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

/* Same fields for the token's kind (the union's other bytes may differ). */
static bool same_token(const struct rdx_token *a, const struct rdx_token *b)
{
  if (a->kind != b->kind || a->op != b->op || a->addr != b->addr ||
      a->len != b->len)
    return false;
  switch (a->kind) {
  case RDX_DC:
    return a->dc.rkey == b->dc.rkey && a->dc.lid == b->dc.lid &&
           a->dc.dctn == b->dc.dctn && a->dc.has_gid == b->dc.has_gid &&
           memcmp(a->dc.gid, b->dc.gid, sizeof(a->dc.gid)) == 0 &&
           a->dc.has_xfer == b->dc.has_xfer &&
           (!a->dc.has_xfer || (a->dc.xfer_addr == b->dc.xfer_addr &&
                                a->dc.xfer_len == b->dc.xfer_len));
  case RDX_RC:
    return memcmp(a->rc.session, b->rc.session, sizeof(a->rc.session)) == 0 &&
           a->rc.rkey == b->rc.rkey;
  case RDX_CMA:
    return a->cma.pid == b->cma.pid &&
           a->cma.start_time == b->cma.start_time;
  }
  return false;
}

/* A token from raw bytes, every field of a legal type's value. */
static void token_from_bytes(struct fz *f, struct rdx_token *t)
{
  memset(t, 0, sizeof(*t));
  t->kind = (enum rdx_kind)(fz_u8(f) % 5);
  t->op = (enum rdx_op)(fz_u8(f) % 4);
  t->addr = fz_u64(f);
  t->len = fz_u64(f);
  switch (t->kind) {
  case RDX_DC:
    t->dc.rkey = (uint32_t)fz_u64(f);
    t->dc.lid = fz_u16(f);
    t->dc.dctn = (uint32_t)fz_u64(f);
    t->dc.has_gid = fz_u8(f) & 1;
    for (size_t i = 0; i < sizeof(t->dc.gid); i++)
      t->dc.gid[i] = fz_u8(f);
    t->dc.has_xfer = fz_u8(f) & 1;
    if (t->dc.has_xfer) {
      /* near the buffer, so that some are inside it */
      t->dc.xfer_addr = t->addr + (fz_u64(f) & 0xffff);
      t->dc.xfer_len = fz_u64(f) & 0x1ffff;
    }
    break;
  case RDX_RC:
    for (size_t i = 0; i < sizeof(t->rc.session); i++)
      t->rc.session[i] = fz_u8(f);
    t->rc.rkey = (uint32_t)fz_u64(f);
    break;
  case RDX_CMA:
    t->cma.pid = (int32_t)fz_u64(f);
    t->cma.start_time = fz_u64(f);
    break;
  default:
    break;
  }
}

static void check_text(const char *s, size_t n)
{
  struct rdx_token t, t2;
  char buf[RDX_TOKEN_MAX];
  int rc, len;

  memset(&t, 0xa5, sizeof(t));
  rc = rdx_token_parse(s, n, &t);
  if (rc) {
    FUZZ_ASSERT(rc == -EINVAL, "parse returned %d", rc);
    FUZZ_ASSERT(all_zero(&t, sizeof(t)), "failed parse left a non-zero token");
    return;
  }
  FUZZ_ASSERT(rdx_token_validate(&t, NULL, 0) == 0, "parsed token invalid");
  len = rdx_token_format(&t, buf, sizeof(buf));
  FUZZ_ASSERT(len > 0, "parsed token does not format: %d", len);
  FUZZ_ASSERT(t.kind == RDX_RC || ((size_t)len == n && memcmp(buf, s, n) == 0),
              "parse/format round trip: %zu bytes in, %d bytes out '%s'", n,
              len, buf);
  FUZZ_ASSERT(t.kind != RDX_DC ||
                  n == (t.dc.has_xfer ? RDX_DC_NIXL_TOKEN_LEN
                                      : RDX_DC_TOKEN_LEN),
              "DC of %zu bytes", n);
  FUZZ_ASSERT(t.kind != RDX_CMA || n == RDX_CMA_TOKEN_LEN, "CMA of %zu bytes",
              n);
  rc = rdx_token_parse(buf, (size_t)len, &t2);
  FUZZ_ASSERT(rc == 0 && memcmp(&t, &t2, sizeof(t)) == 0,
              "formatted text parses to another struct");
  /* one byte short never fits; the exact size does */
  FUZZ_ASSERT(rdx_token_format(&t, buf, (size_t)len) == -ENOSPC,
              "format into %d bytes did not say -ENOSPC", len);
  FUZZ_ASSERT(buf[0] == '\0', "failed format left text");
  FUZZ_ASSERT(rdx_token_format(&t, buf, (size_t)len + 1) == len,
              "format into exactly %d + 1 bytes failed", len);
}

static void check_struct(const struct rdx_token *t)
{
  struct rdx_token back;
  char buf[RDX_TOKEN_MAX];
  int v, len, rc;

  v = rdx_token_validate(t, NULL, 0);
  len = rdx_token_format(t, buf, sizeof(buf));
  if (v) {
    FUZZ_ASSERT(v == -EINVAL, "validate returned %d", v);
    FUZZ_ASSERT(len == -EINVAL, "invalid token formatted: %d", len);
    FUZZ_ASSERT(buf[0] == '\0', "failed format left text");
    return;
  }
  FUZZ_ASSERT(len > 0 && (size_t)len < sizeof(buf) &&
                  strlen(buf) == (size_t)len,
              "valid token of kind %d does not format: %d", (int)t->kind, len);
  rc = rdx_token_parse(buf, (size_t)len, &back);
  FUZZ_ASSERT(rc == 0, "formatted kind %d token '%s' does not parse: %d",
              (int)t->kind, buf, rc);
  FUZZ_ASSERT(same_token(t, &back), "'%s' parses to other fields", buf);
}

static void check_check(const struct rdx_token *t, enum rdx_op op,
                        uint64_t len, size_t whylen)
{
  char *why = fz_why_alloc(whylen);
  uint64_t tlen;
  int rc;

  if (!why)
    return;
  rc = rdx_token_check(t, op, len, why, whylen);
  if (rc) {
    FUZZ_ASSERT(rc == -EINVAL || rc == -EPERM, "check returned %d", rc);
    FUZZ_ASSERT(fz_why_terminated(why, whylen), "reason not terminated");
    free(why);
    return;
  }
  free(why);
  FUZZ_ASSERT(rdx_token_validate(t, NULL, 0) == 0, "accepted an invalid token");
  FUZZ_ASSERT(op == RDX_GET || op == RDX_PUT, "accepted op %d", (int)op);
  FUZZ_ASSERT(len >= 1, "accepted a request of 0 bytes");
  FUZZ_ASSERT(t->kind != RDX_CMA || t->op == op,
              "accepted a %s token for a %s request", rdx_op_name(t->op),
              rdx_op_name(op));
  tlen = t->kind == RDX_DC && t->dc.has_xfer ? t->dc.xfer_len : t->len;
  FUZZ_ASSERT(tlen == len ||
                  (t->kind != RDX_CMA && op == RDX_GET && tlen > len),
              "accepted a %s token of %llu bytes for %llu",
              rdx_kind_name(t->kind), (unsigned long long)tlen,
              (unsigned long long)len);
  switch (t->kind) {
  case RDX_DC:
    FUZZ_ASSERT(t->dc.dctn != 0, "accepted DCT number 0");
    FUZZ_ASSERT(t->dc.has_gid ? !all_zero(t->dc.gid, sizeof(t->dc.gid))
                              : t->dc.lid != 0,
                "accepted a DC token with no way to reach the client");
    break;
  case RDX_RC:
    FUZZ_ASSERT(t->op == RDX_OP_NONE, "accepted an RC token with an op");
    break;
  case RDX_CMA:
    FUZZ_ASSERT(t->cma.pid >= 1, "accepted pid %d", (int)t->cma.pid);
    break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  enum rdx_op op = (enum rdx_op)(fz_u8(&f) % 4);
  uint64_t len = fz_u64(&f);
  size_t whylen = fz_u8(&f) % 200;
  struct fz raw = f;
  struct rdx_token t;
  char *why;

  /* the text (parse never reads past n: no copy, ASan guards the edge) */
  check_text((const char *)f.p, f.n);
  memset(&t, 0, sizeof(t));
  if (rdx_token_parse((const char *)f.p, f.n, &t) == 0) {
    /* a real token, near-miss request lengths */
    check_check(&t, op, len, whylen);
    check_check(&t, op, t.len, whylen);
    check_check(&t, op, t.len - (len & 0xff), whylen);
    check_check(&t, RDX_GET, t.len, whylen);
    check_check(&t, RDX_PUT, t.len, whylen);
  }

  /* the same bytes as a struct */
  token_from_bytes(&raw, &t);
  check_struct(&t);
  check_check(&t, op, len, whylen);
  check_check(&t, op, t.len, whylen);
  why = fz_why_alloc(whylen);
  if (why) {
    if (rdx_token_validate(&t, why, whylen))
      FUZZ_ASSERT(fz_why_terminated(why, whylen), "reason not terminated");
    free(why);
  }
  (void)rdx_kind_name(t.kind);
  (void)rdx_op_name(t.op);
  return 0;
}
