/*
 * fuzz_gw_parse: the gateway's checks of what a client sends
 * (gateway/gw_parse.h): gw_target_check and gw_target_split on the
 * request-target, gw_framing_check on Content-Length/Transfer-Encoding,
 * gw_range_parse on Range.
 *
 * Input: byte 0 flags (bit 0 Content-Length present, bit 1
 * Transfer-Encoding present, bits 2-3 extra Content-Length headers, bits
 * 4-5 extra Transfer-Encoding headers), byte 1 the reason buffer's size
 * (mod 128), then NUL-separated strings: the request-target, the
 * Content-Length value, the Transfer-Encoding value, the Range value.
 *
 * Properties (abort() on violation):
 *  - gw_target_check accepts only targets starting with '/' without a
 *    byte < 0x20, 0x7f, ' ', '#' or '\\'; and exactly the targets its
 *    comment describes: at most GW_TARGET_MAX bytes of letters, digits and
 *    "-._~!$&'()*+,;=:@/?%", every '%' followed by two hex digits;
 *    gw_target_split of an accepted target gives path + "?" + query back;
 *  - gw_framing_check accepts exactly what its comment allows (at most one
 *    of each header, not both, Content-Length 1..19 digits and at most
 *    INT64_MAX, Transfer-Encoding chunked or identity in any case), and
 *    reports the length and chunking it was given;
 *  - gw_range_parse: an accepted "bytes=A-B" has len >= 1, off + len - 1
 *    does not overflow, and "bytes=%llu-%llu" of off and off + len - 1
 *    gives back the input exactly (one text per range);
 *  - reasons stay inside the buffer given and are NUL-terminated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gateway/gw_parse.h"
#include "tests/fuzz/fuzz_common.h"

static bool hexdig(char c)
{
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
         (c >= 'A' && c <= 'F');
}

/* The rule of gw_parse.h (RFC 3986 characters), written out again. */
static bool target_ok(const char *t)
{
  static const char other[] = "-._~!$&'()*+,;=:@/?%";
  size_t n = strlen(t);

  if (t[0] != '/' || n > GW_TARGET_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)t[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9');
    if (!alnum && !memchr(other, c, sizeof(other) - 1))
      return false;
    if (c == '%' && !(hexdig(t[i + 1]) && hexdig(t[i + 2])))
      return false;
  }
  return true;
}

/* What the gateway must never forward, whatever the rule becomes. */
static bool target_forbidden(const char *t)
{
  if (t[0] != '/')
    return true;
  for (const unsigned char *p = (const unsigned char *)t; *p; p++)
    if (*p < 0x20 || *p == 0x7f || *p == ' ' || *p == '#' || *p == '\\')
      return true;
  return false;
}

static void check_target(const char *t, size_t whylen)
{
  char *why = fz_why_alloc(whylen), *path = NULL, *query = NULL;
  int rc;

  if (!why)
    return;
  rc = gw_target_check(t, why, whylen);
  FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "gw_target_check returned %d", rc);
  FUZZ_ASSERT(rc != 0 || !target_forbidden(t),
              "gw_target_check accepted a target with a forbidden byte");
  FUZZ_ASSERT((rc == 0) == target_ok(t), "gw_target_check %s a target the "
              "rule %s (%zu bytes)", rc ? "refused" : "accepted",
              rc ? "allows" : "forbids", strlen(t));
  if (rc) {
    FUZZ_ASSERT(fz_why_terminated(why, whylen), "reason not terminated");
    goto out;
  }
  rc = gw_target_split(t, &path, &query);
  if (FUZZ_OOM(rc))
    goto out;
  FUZZ_ASSERT(rc == 0 && path && query, "gw_target_split returned %d", rc);
  {
    size_t pl = strlen(path);
    bool has_q = t[pl] == '?';
    FUZZ_ASSERT(strncmp(t, path, pl) == 0 && !strchr(path, '?') &&
                    (has_q ? strcmp(t + pl + 1, query) == 0
                           : t[pl] == '\0' && query[0] == '\0'),
                "split does not give the target back");
  }
out:
  free(path);
  free(query);
  free(why);
}

/* 1..19 decimal digits and at most INT64_MAX. */
static bool cl_ok(const char *s, int64_t *v)
{
  size_t n = strlen(s);
  uint64_t x = 0;

  if (n < 1 || n > 19 || strspn(s, "0123456789") != n)
    return false;
  for (size_t i = 0; i < n; i++)
    x = x * 10 + (uint64_t)(s[i] - '0');
  if (x > INT64_MAX)
    return false;
  *v = (int64_t)x;
  return true;
}

static void check_framing(uint8_t flags, const char *cl, const char *te,
                          size_t whylen)
{
  const char *cl_v = flags & 1 ? cl : NULL, *te_v = flags & 2 ? te : NULL;
  unsigned n_cl = cl_v ? 1 + ((flags >> 2) & 3) : 0;
  unsigned n_te = te_v ? 1 + ((flags >> 4) & 3) : 0;
  char *why = fz_why_alloc(whylen);
  int64_t body_len = 42, want_len = -1;
  bool chunked = true, want_chunked = false, ok = true;
  int rc;

  if (!why)
    return;
  if (n_cl > 1 || n_te > 1 || (cl_v && te_v))
    ok = false;
  else if (cl_v)
    ok = cl_ok(cl_v, &want_len);
  else if (te_v && !strcasecmp(te_v, "chunked"))
    want_chunked = true;
  else if (te_v)
    ok = strcasecmp(te_v, "identity") == 0;
  rc = gw_framing_check(cl_v, n_cl, te_v, n_te, &body_len, &chunked, why,
                        whylen);
  FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "gw_framing_check returned %d", rc);
  FUZZ_ASSERT((rc == 0) == ok, "gw_framing_check %s CL %s x%u, TE %s x%u",
              rc ? "refused" : "accepted", cl_v ? "given" : "absent", n_cl,
              te_v ? "given" : "absent", n_te);
  if (rc == 0)
    FUZZ_ASSERT(body_len == want_len && chunked == want_chunked,
                "framing gave length %" PRId64 " chunked %d, not %" PRId64
                " %d", body_len, chunked, want_len, want_chunked);
  else
    FUZZ_ASSERT(fz_why_terminated(why, whylen), "reason not terminated");
  free(why);
}

static void check_range(const char *v)
{
  uint64_t off = 7, len = 7;
  char again[64];
  int rc = gw_range_parse(v, &off, &len);

  FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "gw_range_parse returned %d", rc);
  if (rc)
    return;
  FUZZ_ASSERT(len >= 1, "accepted range of length 0");
  FUZZ_ASSERT(len - 1 <= UINT64_MAX - off, "off %" PRIu64 " + len %" PRIu64
              " - 1 overflows", off, len);
  snprintf(again, sizeof(again), "bytes=%" PRIu64 "-%" PRIu64, off,
           off + len - 1);
  FUZZ_ASSERT(strcmp(again, v) == 0, "accepted '%s', which reads as '%s'", v,
              again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  uint8_t flags = fz_u8(&f);
  size_t whylen = fz_u8(&f) % 128;
  char *target = fz_str_until(&f, '\0', NULL);
  char *cl = fz_str_until(&f, '\0', NULL);
  char *te = fz_str_until(&f, '\0', NULL);
  char *range = fz_str_until(&f, '\0', NULL);

  if (target && cl && te && range) {
    check_target(target, whylen);
    check_framing(flags, cl, te, whylen);
    check_range(range);
    (void)gw_range_parse(NULL, &(uint64_t){0}, &(uint64_t){0});
  }
  free(target);
  free(cl);
  free(te);
  free(range);
  return 0;
}
