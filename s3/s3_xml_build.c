/*
 * s3_xml_build: the XML bodies we send (CompleteMultipartUpload, Delete),
 * every value escaped and checked, and the ISO 8601 dates S3 sends back.
 * The parsers are in s3_xml.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"
#include "s3/s3_xml.h"

/* ---- ISO 8601 ---------------------------------------------------------- */

/* n decimal digits at s, or -1. */
static int digits(const char *s, int n)
{
  int v = 0;

  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
  int64_t era;
  unsigned yoe, doy, doe;

  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = (unsigned)(y - era * 400);
  doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static int days_in_month(int y, int m)
{
  static const unsigned char dim[12] = {31, 28, 31, 30, 31, 30,
                                        31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

  return m == 2 && leap ? 29 : dim[m - 1];
}

/*
 * "YYYY-MM-DDTHH:MM:SS[.fraction]" then "Z", "+HH:MM", "-HH:MM" or nothing
 * (taken as UTC: the CopyObject documentation shows such a LastModified);
 * the fraction (1-9 digits) is dropped; a leap second (:60) rolls over.
 */
int s3_parse_iso8601(const char *s, time_t *out)
{
  int y, mo, d, h, mi, sec, off = 0;
  const char *p;

  if (!s || !out || strlen(s) < 19)
    return -EINVAL;
  y = digits(s, 4);
  mo = digits(s + 5, 2);
  d = digits(s + 8, 2);
  h = digits(s + 11, 2);
  mi = digits(s + 14, 2);
  sec = digits(s + 17, 2);
  if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || y < 0 || mo < 1 || mo > 12 || d < 1 ||
      d > days_in_month(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      sec < 0 || sec > 60)
    return -EINVAL;
  p = s + 19;
  if (*p == '.') {
    int n = 0;

    while (p[1 + n] >= '0' && p[1 + n] <= '9')
      n++;
    if (n < 1 || n > 9)
      return -EINVAL;
    p += 1 + n;
  }
  if ((p[0] == 'Z' && p[1] == '\0') || p[0] == '\0') {
    off = 0;            /* no designator: S3 means UTC (CopyObject docs) */
  } else if ((p[0] == '+' || p[0] == '-') && strlen(p) == 6 && p[3] == ':') {
    int oh = digits(p + 1, 2), om = digits(p + 4, 2);

    if (oh < 0 || oh > 23 || om < 0 || om > 59)
      return -EINVAL;
    off = (oh * 60 + om) * 60 * (p[0] == '-' ? -1 : 1);
  } else {
    return -EINVAL;
  }
  *out = (time_t)(days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
                  h * 3600 + mi * 60 + sec - off);
  return 0;
}

/* ---- builders ---------------------------------------------------------- */

#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* Length of the valid UTF-8 sequence at s (avail bytes there), or 0. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
  uint32_t cp;
  size_t n;

  if (s[0] < 0x80)
    return 1;
  if (s[0] >= 0xC2 && s[0] <= 0xDF)
    n = 2, cp = s[0] & 0x1F;
  else if (s[0] >= 0xE0 && s[0] <= 0xEF)
    n = 3, cp = s[0] & 0x0F;
  else if (s[0] >= 0xF0 && s[0] <= 0xF4)
    n = 4, cp = s[0] & 0x07;
  else
    return 0;
  if (n > avail)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
    return 0;         /* overlong, surrogate, out of range, non-character */
  return n;
}

/*
 * Append s as element content: & < > escaped, CR as &#13; (a parser would
 * turn a literal CR into LF). -EINVAL for what XML 1.0 cannot carry at all
 * (control characters other than TAB, LF, CR) and for invalid UTF-8.
 */
static int sb_escape(struct strbuf *b, const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *)s, *end = u + len;

  while (u < end) {
    size_t n = utf8_len(u, (size_t)(end - u));

    if (n == 0 || (*u < 0x20 && *u != '\t' && *u != '\n' && *u != '\r'))
      return -EINVAL;
    if (*u == '&')
      strbuf_puts(b, "&amp;");
    else if (*u == '<')
      strbuf_puts(b, "&lt;");
    else if (*u == '>')
      strbuf_puts(b, "&gt;");
    else if (*u == '\r')
      strbuf_puts(b, "&#13;");
    else
      strbuf_put(b, (const char *)u, n);
    u += n;
  }
  return 0;
}

static int sb_finish(struct strbuf *b, int rc, char **out, size_t *len)
{
  size_t n = b->len;
  char *s = strbuf_take(b);

  if (!rc && !s)
    rc = -ENOMEM;
  if (rc) {
    free(s);
    return rc;
  }
  *out = s;
  *len = n;
  return 0;
}

/*
 * <CompleteMultipartUpload><Part><PartNumber>1</PartNumber>
 * <ETag>"..."</ETag></Part>...: ETags always sent quoted, as S3 returns them.
 */
int s3_xml_build_complete(const struct s3_part_etag *parts, size_t n,
                          char **out, size_t *len)
{
  struct strbuf b = {0};
  int rc = 0, prev = 0;

  if (!parts || !out || !len || n == 0 || n > 10000)
    return -EINVAL;
  strbuf_puts(&b, XML_DECL "<CompleteMultipartUpload xmlns=\"" S3_XMLNS "\">");
  for (size_t i = 0; i < n && !rc; i++) {
    const char *etag = parts[i].etag;
    size_t elen = etag ? strlen(etag) : 0;
    char num[32];

    if (elen >= 2 && etag[0] == '"' && etag[elen - 1] == '"') {
      etag++;
      elen -= 2;
    }
    if (parts[i].part_number <= prev || parts[i].part_number > 10000 ||
        elen == 0 || memchr(etag, '"', elen)) {
      rc = -EINVAL;
      break;
    }
    prev = parts[i].part_number;
    snprintf(num, sizeof(num), "%d", prev);
    strbuf_puts(&b, "<Part><PartNumber>");
    strbuf_puts(&b, num);
    strbuf_puts(&b, "</PartNumber><ETag>\"");
    rc = sb_escape(&b, etag, elen);
    strbuf_puts(&b, "\"</ETag></Part>");
  }
  strbuf_puts(&b, "</CompleteMultipartUpload>");
  return sb_finish(&b, rc, out, len);
}

/* <Delete><Quiet>true</Quiet><Object><Key>...</Key></Object>...</Delete> */
int s3_xml_build_delete(const char *const *keys, size_t n, bool quiet,
                        char **out, size_t *len)
{
  struct strbuf b = {0};
  int rc = 0;

  if (!keys || !out || !len || n == 0 || n > 1000)
    return -EINVAL;
  strbuf_puts(&b, XML_DECL "<Delete xmlns=\"" S3_XMLNS "\">");
  if (quiet)
    strbuf_puts(&b, "<Quiet>true</Quiet>");
  for (size_t i = 0; i < n && !rc; i++) {
    if (!keys[i] || !keys[i][0]) {
      rc = -EINVAL;
      break;
    }
    strbuf_puts(&b, "<Object><Key>");
    rc = sb_escape(&b, keys[i], strlen(keys[i]));
    strbuf_puts(&b, "</Key></Object>");
  }
  strbuf_puts(&b, "</Delete>");
  return sb_finish(&b, rc, out, len);
}
