/* fsx_etag: what an S3 ETag says about the bytes behind it (fsx_etag.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "common/strbuf.h"
#include "fs/meta/fsx_etag.h"
#include "fs/write/fsx_wb_geo.h"

static bool md5_of(const void *p, size_t len, unsigned char out[16])
{
  unsigned int n = 0;

  return EVP_Digest(p, len, out, &n, EVP_md5(), NULL) && n == 16;
}

/* Compare digest d (and "-n" when n > 0) with etag, quotes ignored. */
static bool same(const char *etag, const unsigned char d[16], size_t n)
{
  char hex[64];
  size_t el;

  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", d[i]);
  if (n)
    snprintf(hex + 32, sizeof(hex) - 32, "-%zu", n);
  if (*etag == '"')
    etag++;
  el = strlen(etag);
  if (el && etag[el - 1] == '"')
    el--;
  return el == strlen(hex) && !strncasecmp(hex, etag, el);
}

bool fsx_etag_is_multipart_of(const char *etag, const char *const *parts,
                              size_t n)
{
  unsigned char *all, d[16];
  bool ok = false;

  if (!n || !strchr(etag, '-') || !(all = malloc(n * 16)))
    return false;
  for (size_t k = 0; k < n; k++) {
    const char *p = parts[k] + (parts[k][0] == '"');
    for (int i = 0; i < 16; i++) {
      int hi = hex_digit(p[2 * i]), lo = hi < 0 ? -1 : hex_digit(p[2 * i + 1]);
      if (hi < 0 || lo < 0)
        goto free_all;
      all[16 * k + i] = (unsigned char)(hi << 4 | lo);
    }
    if (p[32] && strcmp(p + 32, "\""))
      goto free_all; /* not an MD5 */
  }
  ok = md5_of(all, n * 16, d) && same(etag, d, n);
free_all:
  free(all);
  return ok;
}

bool fsx_etag_holds(const char *etag, const unsigned char *data, uint64_t size,
                    uint64_t psize)
{
  unsigned char d[16], *all;
  unsigned n;
  uint64_t s, l;
  bool ok = false;

  if (!strchr(etag, '-'))
    return md5_of(data, (size_t)size, d) && same(etag, d, 0);
  if (!size || !psize)
    return false;
  n = fsx_wb_part_of(psize, size - 1, &s, &l) + 1;
  if (!(all = malloc((size_t)n * 16)))
    return false;
  for (unsigned k = 0; k < n; k++) {
    fsx_wb_part_span(psize, k, &s, &l);
    if (s + l > size)
      l = size - s;
    if (!md5_of(data + s, (size_t)l, all + 16 * k))
      goto free_all;
  }
  ok = md5_of(all, (size_t)n * 16, d) && same(etag, d, n);
free_all:
  free(all);
  return ok;
}
