/*
 * rdx_rc_wire: the RC connect step's header values. The layout and the
 * rules are in rdx_rc_wire.h; where they come from, in docs/rdma.md
 * ("RC dialect").
 */
#include "rdma/rdx_rc_wire.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define REPLY_OK "200:"
#define REPLY_OK_LEN 4

static const char hexdig[] = "0123456789abcdef";

_Static_assert(RDX_RC_QP_TOKEN_LEN == 2 * RDX_RC_QP_TOKEN_BYTES,
               "two digits a byte");
_Static_assert(RDX_RC_SESSION_LEN == 2 * RDX_RC_SESSION_BYTES,
               "two digits a byte");

/* ---- shared ------------------------------------------------------------- */

/* lower: lowercase only; else either case. -1 for anything else. */
static int hexval(char ch, bool lower)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (!lower && ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

static void put_bytes(char *p, const uint8_t *b, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    *p++ = hexdig[b[i] >> 4];
    *p++ = hexdig[b[i] & 0xf];
  }
}

/* Exactly 2 * n digits at s into n bytes. */
static bool get_bytes(const char *s, uint8_t *b, size_t n, bool lower)
{
  for (size_t i = 0; i < n; i++) {
    int hi = hexval(s[2 * i], lower), lo = hexval(s[2 * i + 1], lower);
    if (hi < 0 || lo < 0)
      return false;
    b[i] = (uint8_t)(hi << 4 | lo);
  }
  return true;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
  uint64_t v = 0;

  for (int i = 0; i < n; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* n characters from tmp into buf and a NUL, or -ENOSPC ("" in buf). */
static int emit(const char *tmp, size_t n, char *buf, size_t len)
{
  if (!buf || n >= len) {
    if (buf && len > 0)
      buf[0] = '\0';
    return -ENOSPC;
  }
  memcpy(buf, tmp, n);
  buf[n] = '\0';
  return (int)n;
}

/* ---- QP token ----------------------------------------------------------- */

static void qp_encode(const struct rdx_rc_qp_token *t, char *p)
{
  uint8_t b[RDX_RC_QP_TOKEN_BYTES];

  b[0] = t->transport;
  put_le(b + 1, t->qpn, 4);
  memcpy(b + 5, t->gid, 16);
  put_le(b + 21, t->rkey, 4);
  put_le(b + 25, t->addr, 8);
  put_le(b + 33, t->len, 8);
  b[41] = t->port;
  put_le(b + 42, t->lid, 2);
  put_bytes(p, b, sizeof(b));
}

static bool qp_decode(const char *s, struct rdx_rc_qp_token *t)
{
  uint8_t b[RDX_RC_QP_TOKEN_BYTES];

  if (!get_bytes(s, b, sizeof(b), false))
    return false;
  t->transport = b[0];
  t->qpn = (uint32_t)get_le(b + 1, 4);
  memcpy(t->gid, b + 5, 16);
  t->rkey = (uint32_t)get_le(b + 21, 4);
  t->addr = get_le(b + 25, 8);
  t->len = get_le(b + 33, 8);
  t->port = b[41];
  t->lid = (uint16_t)get_le(b + 42, 2);
  return true;
}

int rdx_rc_qp_token_format(const struct rdx_rc_qp_token *t, char *buf,
                           size_t len)
{
  char tmp[RDX_RC_QP_TOKEN_LEN];

  if (!t) {
    if (buf && len > 0)
      buf[0] = '\0';
    return -EINVAL;
  }
  qp_encode(t, tmp);
  return emit(tmp, sizeof(tmp), buf, len);
}

int rdx_rc_qp_token_parse(const char *s, size_t n, struct rdx_rc_qp_token *out)
{
  if (!out)
    return -EINVAL;
  memset(out, 0, sizeof(*out));
  if (!s || n != RDX_RC_QP_TOKEN_LEN || !qp_decode(s, out)) {
    memset(out, 0, sizeof(*out));
    return -EINVAL;
  }
  return 0;
}

int rdx_rc_reply_format(const struct rdx_rc_qp_token *t, char *buf,
                        size_t len)
{
  char tmp[RDX_RC_REPLY_LEN];

  if (!t) {
    if (buf && len > 0)
      buf[0] = '\0';
    return -EINVAL;
  }
  memcpy(tmp, REPLY_OK, REPLY_OK_LEN);
  qp_encode(t, tmp + REPLY_OK_LEN);
  return emit(tmp, sizeof(tmp), buf, len);
}

int rdx_rc_reply_parse(const char *s, size_t n, struct rdx_rc_qp_token *out)
{
  if (!out)
    return -EINVAL;
  memset(out, 0, sizeof(*out));
  if (!s || n != RDX_RC_REPLY_LEN || memcmp(s, REPLY_OK, REPLY_OK_LEN) != 0)
    return -EINVAL;
  return rdx_rc_qp_token_parse(s + REPLY_OK_LEN, n - REPLY_OK_LEN, out);
}

/* ---- PSN ---------------------------------------------------------------- */

int rdx_rc_psn_format(uint32_t psn, char *buf, size_t len)
{
  char tmp[RDX_RC_PSN_LEN];

  if (psn == 0 || psn > RDX_RC_PSN_MAX) {
    if (buf && len > 0)
      buf[0] = '\0';
    return -EINVAL;
  }
  for (int i = RDX_RC_PSN_LEN - 1; i >= 0; i--, psn >>= 4)
    tmp[i] = hexdig[psn & 0xf];
  return emit(tmp, sizeof(tmp), buf, len);
}

int rdx_rc_psn_parse(const char *s, size_t n, uint32_t *out)
{
  uint32_t v = 0;

  if (!out)
    return -EINVAL;
  *out = 0;
  if (!s || n == 0 || n > RDX_RC_PSN_LEN)
    return -EINVAL;
  for (size_t i = 0; i < n; i++) {
    int d = hexval(s[i], false);
    if (d < 0)
      return -EINVAL;
    v = v << 4 | (uint32_t)d;
  }
  if (v == 0)
    return -EINVAL;
  *out = v;
  return 0;
}

/* ---- session ------------------------------------------------------------ */

int rdx_rc_session_format(const uint8_t id[RDX_RC_SESSION_BYTES], char *buf,
                          size_t len)
{
  char tmp[RDX_RC_SESSION_LEN];

  if (!id) {
    if (buf && len > 0)
      buf[0] = '\0';
    return -EINVAL;
  }
  put_bytes(tmp, id, RDX_RC_SESSION_BYTES);
  return emit(tmp, sizeof(tmp), buf, len);
}

int rdx_rc_session_parse(const char *s, size_t n,
                         uint8_t id[RDX_RC_SESSION_BYTES])
{
  if (!id)
    return -EINVAL;
  memset(id, 0, RDX_RC_SESSION_BYTES);
  if (!s || n != RDX_RC_SESSION_LEN ||
      !get_bytes(s, id, RDX_RC_SESSION_BYTES, true)) {
    memset(id, 0, RDX_RC_SESSION_BYTES);
    return -EINVAL;
  }
  return 0;
}
