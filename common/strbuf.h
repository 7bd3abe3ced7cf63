/*
 * strbuf: a growable NUL-terminated string for building requests and
 * bodies. Out of memory is sticky: later puts do nothing and strbuf_take
 * returns NULL, so builders check once at the end.
 */
#ifndef S3R_STRBUF_H
#define S3R_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

struct strbuf {
  char *p;          /* NUL-terminated once anything was put */
  size_t len, cap;
  bool oom;
};

void strbuf_put(struct strbuf *sb, const char *s, size_t n);
void strbuf_puts(struct strbuf *sb, const char *s);
void strbuf_putc(struct strbuf *sb, char c);
/* The string (malloc'd, "" when empty; the caller frees), or NULL after an
   allocation failed. The buffer is left empty either way. */
char *strbuf_take(struct strbuf *sb);

/* The value of a hex digit (either case), or -1. */
int hex_digit(char c);
/* s as lowercase hex, two digits a byte (a key in a line-based record). */
void strbuf_put_hex(struct strbuf *sb, const char *s);
/* Hex decoded in place; false (v unchanged or half done) when v is not
   hex or encodes a NUL byte. */
bool hex_decode_str(char *v);

#endif
