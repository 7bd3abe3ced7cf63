/* fsx_etag: what an S3 ETag says about the bytes behind it (fsx_etag.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "common/slog.h"
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

int fsx_etag_upload_landed(struct s3_client *c, const char *bucket,
                           const char *key, const char *upload_id)
{
  struct s3_object_meta cur;
  struct s3_parts_result l;
  const char **v, *dash;
  unsigned long want;
  int rc = s3_head_object(c, bucket, key, &cur);

  if (rc == -ENOENT)
    return 0; /* no object: nothing the upload could be */
  if (rc)
    return rc;
  /* made of parts: of how many (a completion of the first n parts of
     those the upload holds, as a stream's is) */
  dash = strrchr(cur.etag, '-');
  want = dash ? strtoul(dash + 1, NULL, 10) : 0;
  if (!want || want > 10000) {
    s3_object_meta_cleanup(&cur);
    return 0;
  }
  if ((rc = s3_list_parts(c, bucket, key, upload_id, NULL, NULL, &l))) {
    s3_object_meta_cleanup(&cur);
    return rc;
  }
  v = l.n_parts >= want ? calloc(want, sizeof(*v)) : NULL;
  rc = v || l.n_parts < want ? 0 : -ENOMEM;
  for (size_t k = 0; v && k < want; k++) {
    if (l.parts[k].part_number != (int)k + 1)
      break; /* a gap: never a completion of parts 1..n */
    v[k] = l.parts[k].etag;
    if (k + 1 == want)
      rc = fsx_etag_is_multipart_of(cur.etag, v, want);
  }
  free(v);
  s3_parts_result_cleanup(&l);
  s3_object_meta_cleanup(&cur);
  return rc;
}

int fsx_etag_abort_upload(struct s3_client *c, const char *bucket,
                          const char *key, const char *upload_id,
                          bool completion_sent)
{
  int rc = completion_sent
               ? fsx_etag_upload_landed(c, bucket, key, upload_id)
               : 0;

  if (rc == 1) {
    log_notice("%s: upload %s of %s is the object now (its completion "
               "landed; the server still lists it): not aborted, which would "
               "delete the object's data", bucket, upload_id, key);
    return -ENOENT;
  }
  return rc ? rc : s3_abort_multipart(c, bucket, key, upload_id);
}
