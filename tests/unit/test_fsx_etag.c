/*
 * fsx_etag: does an ETag name these bytes? The expected values are ones
 * Ceph RGW 16 answered for the same bytes (a PutObject of "hello\n"; a
 * two-part upload of 5 MiB of i*7 % 251 and "tail-bytes"; a one-part
 * upload of "hello\n").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fs/meta/fsx_etag.h"

#define MiB (1024u * 1024u)

static unsigned char *two_part_data(size_t *len)
{
  size_t n = 5 * MiB + 10;
  unsigned char *d = malloc(n);

  assert_non_null(d);
  for (size_t i = 0; i < 5 * MiB; i++)
    d[i] = (unsigned char)(i * 7 % 251);
  memcpy(d + 5 * MiB, "tail-bytes", 10);
  *len = n;
  return d;
}

static void test_single(void **state)
{
  const unsigned char *h = (const unsigned char *)"hello\n";

  (void)state;
  assert_true(fsx_etag_holds("b1946ac92492d2347c6235b4d2611184", h, 6, 5 * MiB));
  assert_true(fsx_etag_holds("\"B1946AC92492D2347C6235B4D2611184\"", h, 6, 5 * MiB));
  assert_false(fsx_etag_holds("b1946ac92492d2347c6235b4d2611185", h, 6, 5 * MiB));
  assert_false(fsx_etag_holds("b1946ac92492d2347c6235b4d2611184", h, 5, 5 * MiB));
  assert_false(fsx_etag_holds("b1946ac92492d2347c6235b4d26111", h, 6, 5 * MiB));
  assert_false(fsx_etag_holds("", h, 6, 5 * MiB));
  /* the empty object */
  assert_true(fsx_etag_holds("d41d8cd98f00b204e9800998ecf8427e", NULL, 0, 5 * MiB));
}

static void test_multipart_data(void **state)
{
  size_t n;
  unsigned char *d = two_part_data(&n);

  (void)state;
  assert_true(fsx_etag_holds("47607058b37074689be195ba4035f118-2", d, n, 5 * MiB));
  /* another geometry, another count, other bytes: no */
  assert_false(fsx_etag_holds("47607058b37074689be195ba4035f118-2", d, n, 6 * MiB));
  assert_false(fsx_etag_holds("47607058b37074689be195ba4035f118-3", d, n, 5 * MiB));
  d[n - 1] ^= 1;
  assert_false(fsx_etag_holds("47607058b37074689be195ba4035f118-2", d, n, 5 * MiB));
  assert_false(fsx_etag_holds("47607058b37074689be195ba4035f118-1", d, 0, 5 * MiB));
  free(d);
}

static void test_multipart_of_parts(void **state)
{
  const char *two[] = {"\"68953f9d6e87a778354f95be476850ca\"",
                       "f8219c7d0b101213162ef9566b81b4b5"};
  const char *one[] = {"b1946ac92492d2347c6235b4d2611184"};
  const char *bad[] = {"68953f9d6e87a778354f95be476850ca", "f8219c7d0b10121"};
  const char *nothex[] = {"68953f9d6e87a778354f95be476850ca",
                          "x8219c7d0b101213162ef9566b81b4b5"};
  const char *longer[] = {"68953f9d6e87a778354f95be476850ca",
                          "f8219c7d0b101213162ef9566b81b4b5-1"};

  (void)state;
  assert_true(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-2", two, 2));
  assert_true(fsx_etag_is_multipart_of("6a6d8d4533507d490ab007dfe8314ab7-1", one, 1));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-1", two, 2));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118", two, 2));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-2", two, 1));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-2", bad, 2));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-2", nothex, 2));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-2", longer, 2));
  assert_false(fsx_etag_is_multipart_of("47607058b37074689be195ba4035f118-2", two, 0));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single),
      cmocka_unit_test(test_multipart_data),
      cmocka_unit_test(test_multipart_of_parts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
