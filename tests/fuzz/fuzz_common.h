/*
 * fuzz_common.h: what every libFuzzer target under tests/fuzz/ shares: a
 * cursor that takes typed values and strings off the fuzzer's input, and
 * FUZZ_ASSERT, which reports a broken property and abort()s (libFuzzer then
 * saves the input as a crash).
 *
 * Every helper is static inline: each target is one translation unit, and
 * nothing here keeps state between inputs (targets must be deterministic).
 */
#ifndef S3R_FUZZ_COMMON_H
#define S3R_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The libFuzzer entry points (declared here for -Wmissing-prototypes). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_ASSERT(cond, ...)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__, __LINE__,   \
              #cond);                                                          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* An out-of-memory result is not a finding; anything else must hold. */
#define FUZZ_OOM(rc) ((rc) == -ENOMEM)

/* The input, consumed from the front. */
struct fz {
  const uint8_t *p;
  size_t n;
};

static inline uint8_t fz_u8(struct fz *f)
{
  uint8_t v = 0;

  if (f->n) {
    v = f->p[0];
    f->p++;
    f->n--;
  }
  return v;
}

static inline uint16_t fz_u16(struct fz *f)
{
  uint16_t hi = fz_u8(f);

  return (uint16_t)(hi << 8 | fz_u8(f));
}

static inline uint64_t fz_u64(struct fz *f)
{
  uint64_t v = 0;

  for (int i = 0; i < 8; i++)
    v = v << 8 | fz_u8(f);
  return v;
}

/*
 * The bytes up to the next sep (or the end), as a malloc'd NUL-terminated
 * copy; the separator is consumed. NULL only when malloc fails. A NUL
 * inside the piece ends the C string early, as it would for the code under
 * test.
 */
static inline char *fz_str_until(struct fz *f, uint8_t sep, size_t *lenp)
{
  const uint8_t *e = memchr(f->p, sep, f->n);
  size_t n = e ? (size_t)(e - f->p) : f->n;
  char *s = malloc(n + 1);

  if (!s)
    return NULL;
  memcpy(s, f->p, n);
  s[n] = '\0';
  if (lenp)
    *lenp = n;
  f->p += n;
  f->n -= n;
  if (e) {
    f->p++;
    f->n--;
  }
  return s;
}

/* The rest of the input, as a malloc'd NUL-terminated copy. */
static inline char *fz_rest(struct fz *f, size_t *lenp)
{
  char *s = malloc(f->n + 1);

  if (!s)
    return NULL;
  memcpy(s, f->p, f->n);
  s[f->n] = '\0';
  if (lenp)
    *lenp = f->n;
  f->p += f->n;
  f->n = 0;
  return s;
}

/*
 * A "why"/"err" buffer of exactly len bytes (len may be 0: then a 1-byte
 * allocation that must stay untouched), so that ASan sees any write past
 * the length the callee was given. fz_why_check: NUL-terminated within len.
 */
static inline char *fz_why_alloc(size_t len)
{
  char *b = malloc(len ? len : 1);

  if (b)
    memset(b, 'W', len ? len : 1);
  return b;
}

static inline bool fz_why_terminated(const char *b, size_t len)
{
  return len == 0 ? b[0] == 'W' : memchr(b, '\0', len) != NULL;
}

#endif
