/* strbuf: see strbuf.h. */
#include "common/strbuf.h"

#include <stdlib.h>
#include <string.h>

void strbuf_put(struct strbuf *sb, const char *s, size_t n)
{
  if (sb->oom)
    return;
  if (sb->len + n + 1 > sb->cap) {
    size_t cap = sb->cap ? sb->cap : 256;
    char *p;
    while (cap < sb->len + n + 1)
      cap *= 2;
    p = realloc(sb->p, cap);
    if (!p) {
      sb->oom = true;
      return;
    }
    sb->p = p;
    sb->cap = cap;
  }
  memcpy(sb->p + sb->len, s, n);
  sb->len += n;
  sb->p[sb->len] = '\0';
}

void strbuf_puts(struct strbuf *sb, const char *s)
{
  strbuf_put(sb, s, strlen(s));
}

void strbuf_putc(struct strbuf *sb, char c)
{
  strbuf_put(sb, &c, 1);
}

char *strbuf_take(struct strbuf *sb)
{
  char *p;

  if (!sb->oom && !sb->p)
    strbuf_put(sb, "", 0);
  p = sb->oom ? NULL : sb->p;
  if (sb->oom)
    free(sb->p);
  sb->p = NULL;
  sb->len = sb->cap = 0;
  return p;
}

void strbuf_put_hex(struct strbuf *sb, const char *s)
{
  static const char hx[] = "0123456789abcdef";

  for (; *s; s++) {
    strbuf_putc(sb, hx[(unsigned char)*s >> 4]);
    strbuf_putc(sb, hx[(unsigned char)*s & 15]);
  }
}

bool hex_decode_str(char *v)
{
  size_t n = strlen(v), j = 0;

  if (n % 2)
    return false;
  for (size_t i = 0; i < n; i += 2) {
    int hi = hex_digit(v[i]), lo = hex_digit(v[i + 1]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
      return false;
    v[j++] = (char)(hi << 4 | lo);
  }
  v[j] = '\0';
  return true;
}

int hex_digit(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}
