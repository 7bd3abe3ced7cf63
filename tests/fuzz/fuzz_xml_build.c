/*
 * fuzz_xml_build: the XML bodies we send (s3/s3_xml.h builders):
 * s3_xml_build_delete (DeleteObjects) and s3_xml_build_complete
 * (CompleteMultipartUpload), checked by reading the body back with expat,
 * the parser S3 servers would use in effect.
 *
 * Input: byte 0 flags (bit 0 complete instead of delete, bit 1 quiet),
 * then the items: for delete, NUL-separated keys; for complete, each part
 * a 2-byte part number (big-endian, mod 10002) and a NUL-terminated ETag.
 *
 * Properties (abort() on violation):
 *  - an accepted body is well-formed XML whose <Key> texts are exactly the
 *    keys given, in order (with <Quiet>true</Quiet> iff quiet), or whose
 *    <PartNumber>/<ETag> texts are the numbers in decimal and the ETags
 *    quoted exactly once: escaping loses and adds nothing (no injection of
 *    elements through a key);
 *  - the length returned is the body's strlen;
 *  - a refused input breaks a documented rule: no items, over the limit,
 *    an empty key or ETag, part numbers not ascending in 1..10000, a '"'
 *    inside an ETag, or text XML 1.0 cannot carry (expat refuses it too,
 *    escaped the same way);
 *  - on refusal *out is untouched.
 */
#include <errno.h>
#include <expat.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "s3/s3_xml.h"
#include "tests/fuzz/fuzz_common.h"

#define MAX_ITEMS 1001
#define XML_NS_SEP ' '

/* The texts of the elements we look for, in document order. */
struct collect {
  const char *want;          /* local names, '|'-separated and -ended */
  char *names[2 * MAX_ITEMS + 1];
  struct strbuf text[2 * MAX_ITEMS + 1];
  size_t n;
  bool in;                   /* inside a wanted element */
  bool overflow;             /* more elements than could be wanted */
  bool oom;
};

static const char *local(const char *name)
{
  const char *s = strrchr(name, XML_NS_SEP);

  return s ? s + 1 : name;
}

static void XMLCALL on_start(void *ud, const XML_Char *name,
                             const XML_Char **atts)
{
  struct collect *c = ud;
  char pat[64];

  (void)atts;
  snprintf(pat, sizeof(pat), "|%s|", local(name));
  if (!strstr(c->want, pat))
    return;
  if (c->n == sizeof(c->names) / sizeof(c->names[0])) {
    c->overflow = true;
    return;
  }
  c->names[c->n] = strdup(local(name));
  if (!c->names[c->n]) {
    c->oom = true;
    return;
  }
  c->n++;
  c->in = true;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
  (void)name;
  ((struct collect *)ud)->in = false;
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
  struct collect *c = ud;

  if (c->in && c->n)
    strbuf_put(&c->text[c->n - 1], s, (size_t)len);
}

static void collect_free(struct collect *c)
{
  for (size_t i = 0; i < c->n; i++) {
    free(c->names[i]);
    free(c->text[i].p);
  }
}

/* Parse body with expat; false when it is not well-formed. */
static bool parse(const char *body, size_t len, struct collect *c)
{
  XML_Parser p = XML_ParserCreateNS("UTF-8", XML_NS_SEP);
  bool ok;

  if (!p)
    return false;
  XML_SetUserData(p, c);
  XML_SetElementHandler(p, on_start, on_end);
  XML_SetCharacterDataHandler(p, on_text);
  ok = XML_Parse(p, body, (int)len, XML_TRUE) == XML_STATUS_OK;
  XML_ParserFree(p);
  return ok;
}

static const char *text_of(const struct collect *c, size_t i)
{
  return c->text[i].p ? c->text[i].p : "";
}

static void XMLCALL on_any_text(void *ud, const XML_Char *s, int len)
{
  strbuf_put(ud, s, (size_t)len);
}

/*
 * Could XML carry s at all? s escaped as the builder documents (& < > and
 * CR as &#13;) in <k>...</k>, asked of expat: well-formed, and its text is
 * exactly s. (s holds no NUL: it is a C string.)
 */
static bool xml_can_carry(const char *s, size_t len)
{
  struct strbuf b = {0}, text = {0};
  XML_Parser p;
  bool ok;

  strbuf_puts(&b, "<k>");
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '&')
      strbuf_puts(&b, "&amp;");
    else if (s[i] == '<')
      strbuf_puts(&b, "&lt;");
    else if (s[i] == '>')
      strbuf_puts(&b, "&gt;");
    else if (s[i] == '\r')
      strbuf_puts(&b, "&#13;");
    else
      strbuf_putc(&b, s[i]);
  }
  strbuf_puts(&b, "</k>");
  p = XML_ParserCreate("UTF-8");
  if (b.oom || !p) {
    if (p)
      XML_ParserFree(p);
    free(b.p);
    return true; /* no memory: no verdict */
  }
  XML_SetUserData(p, &text);
  XML_SetCharacterDataHandler(p, on_any_text);
  ok = XML_Parse(p, b.p, (int)b.len, XML_TRUE) == XML_STATUS_OK &&
       text.len == len && (len == 0 || memcmp(text.p, s, len) == 0);
  XML_ParserFree(p);
  free(text.p);
  free(b.p);
  return ok;
}

static void check_delete(char **keys, size_t n, bool quiet)
{
  char *out = (char *)"untouched";
  size_t len = 0;
  struct collect c = {.want = "|Key|Quiet|Delete|"};
  bool any_bad = false;
  int rc;

  rc = s3_xml_build_delete((const char *const *)keys, n, quiet, &out, &len);
  if (FUZZ_OOM(rc))
    return;
  if (rc) {
    FUZZ_ASSERT(rc == -EINVAL, "build_delete returned %d", rc);
    FUZZ_ASSERT(strcmp(out, "untouched") == 0, "refusal touched *out");
    for (size_t i = 0; i < n && !any_bad; i++)
      if (!keys[i][0] || !xml_can_carry(keys[i], strlen(keys[i])))
        any_bad = true;
    FUZZ_ASSERT(n == 0 || n > 1000 || any_bad,
                "build_delete refused %zu keys XML can carry", n);
    return;
  }
  FUZZ_ASSERT(n >= 1 && n <= 1000, "accepted %zu keys", n);
  FUZZ_ASSERT(len == strlen(out), "length %zu for %zu bytes", len,
              strlen(out));
  if (!parse(out, len, &c) || c.oom) {
    FUZZ_ASSERT(c.oom, "Delete body is not well-formed XML");
    goto out;
  }
  FUZZ_ASSERT(!c.overflow, "Delete body with too many elements");
  {
    size_t k = 0, i = 0;
    FUZZ_ASSERT(c.n >= 1 && !strcmp(c.names[0], "Delete"), "no <Delete>");
    i = 1;
    if (quiet) {
      FUZZ_ASSERT(i < c.n && !strcmp(c.names[i], "Quiet") &&
                      !strcmp(text_of(&c, i), "true"),
                  "quiet body without <Quiet>true</Quiet>");
      i++;
    }
    for (; i < c.n; i++, k++) {
      FUZZ_ASSERT(!strcmp(c.names[i], "Key"), "<%s> in the body", c.names[i]);
      FUZZ_ASSERT(k < n && strcmp(text_of(&c, i), keys[k]) == 0 &&
                      c.text[i].len == strlen(keys[k]),
                  "key %zu reads back differently", k);
    }
    FUZZ_ASSERT(k == n, "%zu keys read back of %zu", k, n);
  }
out:
  collect_free(&c);
  free(out);
}

static void check_complete(const struct s3_part_etag *parts, size_t n)
{
  char *out = (char *)"untouched";
  size_t len = 0;
  struct collect c = {.want = "|PartNumber|ETag|"};
  int rc;

  rc = s3_xml_build_complete(parts, n, &out, &len);
  if (FUZZ_OOM(rc))
    return;
  if (rc) {
    bool rule = n == 0 || n > 10000;
    int prev = 0;
    FUZZ_ASSERT(rc == -EINVAL, "build_complete returned %d", rc);
    FUZZ_ASSERT(strcmp(out, "untouched") == 0, "refusal touched *out");
    for (size_t i = 0; i < n && !rule; i++) {
      const char *e = parts[i].etag;
      size_t el = strlen(e);
      if (el >= 2 && e[0] == '"' && e[el - 1] == '"')
        e++, el -= 2;
      rule = parts[i].part_number <= prev || parts[i].part_number > 10000 ||
             el == 0 || memchr(e, '"', el) || !xml_can_carry(e, el);
      prev = parts[i].part_number;
    }
    FUZZ_ASSERT(rule, "build_complete refused %zu valid parts", n);
    return;
  }
  FUZZ_ASSERT(len == strlen(out), "length %zu for %zu bytes", len,
              strlen(out));
  if (!parse(out, len, &c) || c.oom) {
    FUZZ_ASSERT(c.oom, "CompleteMultipartUpload body is not well-formed XML");
    goto out;
  }
  FUZZ_ASSERT(!c.overflow, "CompleteMultipartUpload body with too many "
              "elements");
  FUZZ_ASSERT(c.n == 2 * n, "%zu elements for %zu parts", c.n, n);
  for (size_t i = 0; i < n; i++) {
    const char *e = parts[i].etag;
    size_t el = strlen(e);
    char num[16];
    if (el >= 2 && e[0] == '"' && e[el - 1] == '"')
      e++, el -= 2;
    snprintf(num, sizeof(num), "%d", parts[i].part_number);
    FUZZ_ASSERT(!strcmp(c.names[2 * i], "PartNumber") &&
                    !strcmp(text_of(&c, 2 * i), num),
                "part %zu: PartNumber reads back as '%s'", i,
                text_of(&c, 2 * i));
    FUZZ_ASSERT(!strcmp(c.names[2 * i + 1], "ETag") &&
                    c.text[2 * i + 1].len == el + 2 &&
                    text_of(&c, 2 * i + 1)[0] == '"' &&
                    !memcmp(text_of(&c, 2 * i + 1) + 1, e, el) &&
                    text_of(&c, 2 * i + 1)[el + 1] == '"',
                "part %zu: ETag reads back differently", i);
  }
out:
  collect_free(&c);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct fz f = {data, size};
  uint8_t flags = fz_u8(&f);
  char *item[MAX_ITEMS];
  struct s3_part_etag parts[MAX_ITEMS];
  size_t n = 0;

  while (f.n && n < MAX_ITEMS) {
    if (flags & 1)
      parts[n].part_number = fz_u16(&f) % 10002;
    if (!(item[n] = fz_str_until(&f, '\0', NULL)))
      break;
    parts[n].etag = item[n];
    n++;
  }
  if (flags & 1)
    check_complete(parts, n);
  else
    check_delete(item, n, flags & 2);
  for (size_t i = 0; i < n; i++)
    free(item[i]);
  return 0;
}
