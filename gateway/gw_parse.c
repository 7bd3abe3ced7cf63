/*
 * gw_parse: checks of the request-target, the framing headers and Range
 * (see gw_parse.h). Each accepts only the plain forms it names and refuses
 * the rest, so what is forwarded upstream is what was verified.
 */
#include "gateway/gw_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int reason(char *why, size_t whylen, const char *msg)
{
  if (why && whylen)
    snprintf(why, whylen, "%s", msg);
  return -EINVAL;
}

/* May c stand unescaped in an origin-form target (RFC 3986: unreserved,
   sub-delims, ':', '@', '/', '?', and '%' starting an escape)? */
static bool target_char(unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || (c && strchr("-._~!$&'()*+,;=:@/?%", c));
}

static bool is_hex(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

int gw_target_check(const char *target, char *why, size_t whylen)
{
  size_t n;

  if (!target || target[0] != '/')
    return reason(why, whylen,
                  "the request-target must be a path starting with '/'");
  n = strnlen(target, GW_TARGET_MAX + 1);
  if (n > GW_TARGET_MAX)
    return reason(why, whylen, "the request-target is too long");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)target[i];
    if (c < 0x20 || c == 0x7f || c == ' ')
      return reason(why, whylen,
                    "the request-target holds a control character or space");
    if (c == '#' || c == '\\')
      return reason(why, whylen, "the request-target holds '#' or '\\'");
    if (!target_char(c))
      return reason(why, whylen,
                    "the request-target holds a byte that must be "
                    "%-encoded");
    if (c == '%' && (i + 2 >= n || !is_hex(target[i + 1]) ||
                     !is_hex(target[i + 2])))
      return reason(why, whylen, "the request-target holds a bad %-escape");
  }
  return 0;
}

/* 1..19 decimal digits, nothing else: 0 and *v, or -EINVAL. */
static int plain_decimal(const char *s, size_t n, uint64_t *v)
{
  uint64_t x = 0;

  if (n == 0 || n > 19)
    return -EINVAL;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -EINVAL;
    x = x * 10 + (uint64_t)(s[i] - '0'); /* 19 digits fit in 64 bits */
  }
  *v = x;
  return 0;
}

int gw_framing_check(const char *content_length, unsigned count_cl,
                     const char *transfer_encoding, unsigned count_te,
                     int64_t *body_len, bool *chunked, char *why,
                     size_t whylen)
{
  uint64_t v;

  *body_len = -1;
  *chunked = false;
  if (count_cl > 1 || count_te > 1)
    return reason(why, whylen,
                  "Content-Length or Transfer-Encoding given twice");
  if ((content_length || count_cl) && (transfer_encoding || count_te))
    return reason(why, whylen,
                  "both Content-Length and Transfer-Encoding given");
  if (content_length) {
    if (plain_decimal(content_length, strlen(content_length), &v) ||
        v > INT64_MAX)
      return reason(why, whylen, "bad Content-Length");
    *body_len = (int64_t)v;
  } else if (transfer_encoding) {
    if (strcasecmp(transfer_encoding, "chunked") == 0)
      *chunked = true;
    else if (strcasecmp(transfer_encoding, "identity") != 0)
      return reason(why, whylen, "unsupported Transfer-Encoding");
  }
  return 0;
}

int gw_range_parse(const char *v, uint64_t *off, uint64_t *len)
{
  const char *dash;
  uint64_t a, b;

  if (!v || strncmp(v, "bytes=", 6) != 0)
    return -EINVAL;
  v += 6;
  dash = strchr(v, '-');
  /* one text per range: no leading zeros ("bytes=02-2" is refused) */
  if (!dash || (v[0] == '0' && dash - v > 1) ||
      (dash[1] == '0' && dash[2] != '\0') ||
      plain_decimal(v, (size_t)(dash - v), &a) ||
      plain_decimal(dash + 1, strlen(dash + 1), &b) || b < a ||
      b == UINT64_MAX)
    return -EINVAL;
  *off = a;
  *len = b - a + 1;
  return 0;
}

int gw_target_split(const char *target, char **path, char **query)
{
  const char *qm = strchr(target, '?');
  size_t n = qm ? (size_t)(qm - target) : strlen(target);

  *path = strndup(target, n);
  *query = strdup(qm ? qm + 1 : "");
  if (!*path || !*query) {
    free(*path);
    free(*query);
    *path = *query = NULL;
    return -ENOMEM;
  }
  return 0;
}
